/* kl — `sixi-report kl`: the KL-divergence runs of sixi-eval kl side by side, every figure
 * computed from their kl_rows at render time with stats/kl.h (the definition sixi-eval's live
 * summary uses): candidate, reference, positions, mean and p99 KL, top-1 agreement, the
 * perplexity ratio.
 * Does not: apply the "cheaper file wins" rule or join bench speed (not yet).
 * Arguments are borrowed. */
#ifndef SIXI_REPORT_KL_H
#define SIXI_REPORT_KL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct store;

/* The runs given (n_runs > 0), or every kl run of the DB (n_runs == 0), in id order, as a
 * Markdown table or (json) a JSON array on out. -ENOENT / -EINVAL with a message naming the run
 * when one is missing, not a kl run, or has no rows. */
__attribute__((warn_unused_result)) int report_kl(struct store *s, const int64_t *runs, size_t n_runs, bool json,
						  FILE *out, char *err, size_t errlen);
#endif
