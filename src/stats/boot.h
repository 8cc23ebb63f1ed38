/* boot — a small seeded PRNG and the paired bootstrap over tasks.
 *
 * The generator is xoshiro256** seeded through splitmix64 (Blackman and Vigna's
 * published algorithms), so a seed recorded in a report reproduces every
 * interval bit for bit on any platform. The bootstrap resamples tasks, not
 * attempts: a task's repeats stay together, which is what makes the interval
 * honest when each task was run several times (a cluster bootstrap).
 * Not for cryptography. struct stats_rng is embedded by callers; touch it only
 * through the API. Arguments are borrowed. */
#ifndef SIXI_STATS_BOOT_H
#define SIXI_STATS_BOOT_H
#include <stddef.h>
#include <stdint.h>

struct stats_rng {
	uint64_t s[4]; /* xoshiro256** state, never all zero */
};
void stats_rng_seed(struct stats_rng *r, uint64_t seed);
uint64_t stats_rng_next(struct stats_rng *r);
/* Uniform in [0, bound), bound > 0, without modulo bias (Lemire's method). */
uint64_t stats_rng_below(struct stats_rng *r, uint64_t bound);

/* One task of a paired comparison: passes and attempts under A and under B. */
struct stats_boot_task {
	int64_t pass_a, n_a;
	int64_t pass_b, n_b;
};

struct stats_boot {
	double estimate;            /* pooled rate A minus pooled rate B over all tasks */
	double pct_low, pct_high;   /* percentile interval */
	double bca_low, bca_high;   /* bias-corrected and accelerated interval (NaN when undefined) */
	double z0, accel;           /* BCa's bias correction and acceleration */
	uint64_t seed;
	size_t resamples;
};
/* Paired bootstrap of the difference in pass rates. Each resample draws the
 * tasks with replacement and recomputes sum(pass_a)/sum(n_a) - sum(pass_b)/sum(n_b);
 * resamples whose attempts sum to 0 on a side cannot occur when every task has
 * n_a, n_b > 0, which is required (-EINVAL otherwise, as is passes > attempts).
 * Quantiles are linearly interpolated (numpy's default). -ENOMEM on OOM. */
__attribute__((warn_unused_result)) int stats_boot_paired(const struct stats_boot_task *t, size_t ntasks,
							  size_t resamples, double confidence, uint64_t seed,
							  struct stats_boot *out);
#endif
