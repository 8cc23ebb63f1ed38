/* kl — the figures of a KL-divergence run (sixi-eval kl), defined once: the live summary of
 * sixi-eval and sixi-report both compute them from the per-position rows with this function.
 *
 * A row holds, for one position of a text, KL(reference || candidate) of the two next-token
 * distributions (nats), whether their most probable tokens agree, and the log-probability
 * each gives the text's actual next token. From n rows:
 *   kl_mean  = mean of kl;   kl_p99 = the nearest-rank 99th percentile (the ceil(0.99 n)-th
 *   smallest);   kl_max;   top1 = fraction of rows whose top tokens agree;
 *   ppl_ref = exp(-mean logp_ref), ppl_cand = exp(-mean logp_cand), ppl_ratio = ppl_cand / ppl_ref.
 * Does not: read the DB or run models. Pure; allocates a sorted copy of the kl values.
 * Arguments are borrowed. */
#ifndef SIXI_STATS_KL_H
#define SIXI_STATS_KL_H
#include <stddef.h>
#include <stdint.h>

struct kl_point {
	double kl;
	int top1_same;
	double logp_ref, logp_cand;
};

struct kl_figures {
	int64_t n;
	double kl_mean, kl_p99, kl_max;
	double top1;
	double ppl_ref, ppl_cand, ppl_ratio;
};

/* 0, -EINVAL for n == 0 or a NaN/negative kl beyond rounding (< -1e-6), -ENOMEM. */
__attribute__((warn_unused_result)) int kl_figures_compute(const struct kl_point *p, size_t n, struct kl_figures *out);

/* The figures under the names every JSON output gives them, in this order: positions (n),
 * kl_mean, kl_p99, kl_max, top1, ppl_ref, ppl_cand, ppl_ratio. names are static strings. */
#define KL_FIGURES_N 8
void kl_figures_named(const struct kl_figures *f, const char *names[KL_FIGURES_N], double values[KL_FIGURES_N]);
#endif
