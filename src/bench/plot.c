/* plot — see plot.h. */
#include "bench/plot.h"
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool have_gnuplot(void)
{
	return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

static void plot_dir(struct bench *b, char *out, size_t n)
{
	const struct bench_cfg *c = bench_config(b);
	if (c->plot_dir) {
		snprintf(out, n, "%s", c->plot_dir);
	} else {
		char tmp[1024];
		snprintf(tmp, sizeof tmp, "%s", c->db_path);
		snprintf(out, n, "%s/plots", dirname(tmp));
	}
	mkdir(out, 0755);
}

static int run_gnuplot(const char *script)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int render(struct bench *b, const char *name, const char *title, const char *xlabel, const char *y1label,
		  const char *y2label, const struct bench_level *l, size_t n, double (*x)(const struct bench_level *),
		  double (*y1)(const struct bench_level *), double (*y2)(const struct bench_level *), bool logx, FILE *msg)
{
	if (!have_gnuplot()) {
		fprintf(msg, "plots skipped: gnuplot is not installed (apt-get install gnuplot-nox)\n");
		return -ENOENT;
	}
	char dir[1024], base[1200], dat[1300], gp[1300];
	plot_dir(b, dir, sizeof dir);
	snprintf(base, sizeof base, "%s/run%lld-%s", dir, (long long)bench_run_id(b), name);
	snprintf(dat, sizeof dat, "%s.dat", base);
	snprintf(gp, sizeof gp, "%s.gp", base);
	FILE *f = fopen(dat, "w");
	if (!f)
		return -errno;
	fprintf(f, "# x y1 y2 valid\n");
	for (size_t i = 0; i < n; i++) {
		double a = y1(&l[i]), c = y2(&l[i]);
		fprintf(f, "%g %g %g %d\n", x(&l[i]), isfinite(a) ? a : 0, isfinite(c) ? c : 0, l[i].valid ? 1 : 0);
	}
	fclose(f);
	f = fopen(gp, "w");
	if (!f)
		return -errno;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0)
			fprintf(f, "set terminal pngcairo size 900,540 noenhanced\nset output '%s.png'\n", base);
		else
			fprintf(f, "set terminal svg size 900,540 noenhanced\nset output '%s.svg'\n", base);
		fprintf(f, "set title '%s (run %lld)'\nset xlabel '%s'\nset ylabel '%s'\nset y2label '%s'\n"
			   "set ytics nomirror\nset y2tics\nset grid\nset key top left\n%s"
			   "plot '%s' using 1:2 with linespoints lw 2 title '%s' axes x1y1, \\\n"
			   "     '' using 1:3 with linespoints lw 2 title '%s' axes x1y2, \\\n"
			   "     '' using 1:($4 == 0 ? $2 : 1/0) with points pt 2 ps 2 lc rgb 'red' title 'invalid point'\n",
			title, (long long)bench_run_id(b), xlabel, y1label, y2label, logx ? "set logscale x 2\n" : "", dat,
			y1label, y2label);
	}
	fclose(f);
	int rc = run_gnuplot(gp);
	if (rc == 0)
		fprintf(msg, "plots: %s.png %s.svg\n", base, base);
	else
		fprintf(msg, "plots failed: gnuplot could not run %s\n", gp);
	return rc;
}

static double x_level(const struct bench_level *l) { return (double)l->level; }
static double x_prompt(const struct bench_level *l) { return l->prompt_tokens_mean ? (double)l->prompt_tokens_mean : (double)l->level; }
static double y_agg(const struct bench_level *l) { return l->agg_tok_s; }
static double y_stream(const struct bench_level *l) { return l->stream_tok_s_mean; }
static double y_ttft(const struct bench_level *l) { return l->ttft_p50_ms; }
static double y_prefill(const struct bench_level *l) { return l->prefill_tok_s; }

int plot_sweep(struct bench *b, const struct bench_level *l, size_t n, FILE *msg)
{
	return render(b, "sweep", "Throughput vs concurrency", "concurrent streams", "aggregate tok/s",
		      "per-stream tok/s", l, n, x_level, y_agg, y_stream, true, msg);
}

int plot_prefill(struct bench *b, const struct bench_level *l, size_t n, FILE *msg)
{
	return render(b, "prefill", "TTFT vs prompt length", "prompt tokens", "TTFT p50 ms", "prefill tok/s", l,
		      n, x_prompt, y_ttft, y_prefill, true, msg);
}
