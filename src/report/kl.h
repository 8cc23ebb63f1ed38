/* kl — `sixi-report kl`: the KL-divergence runs of sixi-eval kl side by side, every figure
 * computed from their kl_rows at render time with stats/kl.h (the definition sixi-eval's live
 * summary uses): candidate, reference, positions, mean and p99 KL, top-1 agreement, the
 * perplexity ratio.
 *
 * With speeds (each kl run paired with a sixi-bench run of the server that served that file),
 * it applies the file-choice rule: a file closer to the reference wins when it costs less than
 * max_cost of the speed. A file's cost is its largest shortfall against the fastest file at the
 * levels (concurrencies, rates) that every paired bench run measured validly; aggregate tok/s
 * per level comes from stats/level.h, the definition sixi-bench and sixi-report bench use. The
 * winner is the file of lowest mean KL whose cost is below max_cost (on a tie, the cheaper).
 * Arguments are borrowed. */
#ifndef SIXI_REPORT_KL_H
#define SIXI_REPORT_KL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct store;

/* A kl run and the bench run that measured the same file's speed. */
struct report_kl_speed {
	int64_t kl_run, bench_run;
};

struct report_kl_opts {
	const int64_t *runs; /* the kl runs; NULL/0: every kl run of the DB (those paired when speed is given) */
	size_t n_runs;
	const struct report_kl_speed *speed; /* NULL/0: no rule, the table alone */
	size_t n_speed;
	double max_cost; /* fraction of the speed a better file may cost (0.10 when 0) */
	bool json;
};

/* The runs as a Markdown table or (json) a JSON array on out; with speeds, per-level tok/s,
 * each file's cost and the rule's verdict (a 'rule' field per run, and one line per file
 * saying why). -ENOENT / -EINVAL with a message naming the run when one is missing, not a kl
 * (or bench) run, has no rows; when some shown runs have a speed and others not; when the kl
 * runs to be judged have other references or texts; when the bench runs share no valid level.
 * Nothing is printed on error. */
__attribute__((warn_unused_result)) int report_kl(struct store *s, const struct report_kl_opts *o, FILE *out,
						  char *err, size_t errlen);
#endif
