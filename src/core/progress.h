/* progress — a one-line progress bar on a TTY, one summary line otherwise.
 * Redraws at most every 100 ms so that it never costs measurable time. */
#ifndef SIXI_CORE_PROGRESS_H
#define SIXI_CORE_PROGRESS_H
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>

struct progress {
	FILE *out;            /* borrowed */
	bool tty;             /* redraw in place only on a terminal */
	char label[64];
	int64_t total;
	int64_t done;
	int64_t errors;
	int64_t start_ns;
	int64_t last_draw_ns;
};
void progress_init(struct progress *p, FILE *out, const char *label, int64_t total);
void progress_step(struct progress *p, int64_t done_delta, int64_t error_delta);
/* Final line: on a TTY replaces the bar; otherwise the only line printed. */
void progress_finish(struct progress *p);
#endif
