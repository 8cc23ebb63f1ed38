/* progress — see progress.h. */
#include "core/progress.h"
#include "core/clock.h"
#include <string.h>
#include <unistd.h>

void progress_init(struct progress *p, FILE *out, const char *label, int64_t total)
{
	memset(p, 0, sizeof *p);
	p->out = out;
	p->tty = out && isatty(fileno(out));
	snprintf(p->label, sizeof p->label, "%s", label);
	p->total = total;
	p->start_ns = clock_now_ns();
}

static void draw(struct progress *p)
{
	int width = 30;
	int fill = p->total > 0 ? (int)(width * p->done / p->total) : 0;
	if (fill > width)
		fill = width;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = 0;
	double s = (double)(clock_now_ns() - p->start_ns) / 1e9;
	fprintf(p->out, "\r%s [%s] %lld/%lld  errors %lld  %.1fs", p->label, bar, (long long)p->done,
		(long long)p->total, (long long)p->errors, s);
	fflush(p->out);
}

void progress_step(struct progress *p, int64_t done_delta, int64_t error_delta)
{
	p->done += done_delta;
	p->errors += error_delta;
	if (!p->tty)
		return;
	int64_t now = clock_now_ns();
	if (now - p->last_draw_ns < 100000000LL && p->done < p->total)
		return;
	p->last_draw_ns = now;
	draw(p);
}

void progress_finish(struct progress *p)
{
	if (!p->out)
		return;
	double s = (double)(clock_now_ns() - p->start_ns) / 1e9;
	if (p->tty)
		fprintf(p->out, "\r\033[K");
	fprintf(p->out, "%s: %lld/%lld done, %lld errors, %.1fs\n", p->label, (long long)p->done,
		(long long)p->total, (long long)p->errors, s);
	fflush(p->out);
}
