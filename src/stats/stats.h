/* stats — exact tests, intervals and small formulas for comparing pass/fail runs.
 *
 * Everything here is a pure function of its arguments: no I/O, no global state,
 * no allocation except the scratch of stats_holm(). Counts are int64_t and must be
 * >= 0 with every "k of n" having k <= n; a violation returns -EINVAL (or -EDOM for
 * a value outside a probability range) and leaves the outputs untouched.
 * Precision: p-values are exact sums computed in log space relative to the largest
 * term, so tables with millions of observations keep ~1e-12 relative accuracy; the
 * tail sums of the binomial use GSL's incomplete beta. Two-sided exact tests use
 * the R/scipy rule "sum of the probabilities of every outcome no more likely than
 * the observed one", with a relative tolerance of 1e-7 for ties (R's relErr).
 * Callers must have called gsl_set_error_handler_off() (every main does).
 * Arguments are borrowed; nothing returned needs freeing. */
#ifndef SIXI_STATS_STATS_H
#define SIXI_STATS_STATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Relative tolerance for "no more likely than the observed outcome". */
#define STATS_TIE_RELERR 1e-7

struct stats_fisher {
	double p_two_sided;
	double p_less;     /* P(X <= a): the odds ratio is below 1 */
	double p_greater;  /* P(X >= a) */
	double odds_ratio; /* sample odds ratio a*d/(b*c); +inf when b*c = 0 < a*d, NaN when both are 0 */
};
/* Fisher's exact test on the table [[a, b], [c, d]]; p = 1 when a margin is 0. */
__attribute__((warn_unused_result)) int stats_fisher_exact(int64_t a, int64_t b, int64_t c, int64_t d,
							   struct stats_fisher *out);

struct stats_binom {
	double p_two_sided;
	double p_less;    /* P(X <= k) */
	double p_greater; /* P(X >= k) */
};
/* Exact binomial test of k successes in n trials against success probability p. */
__attribute__((warn_unused_result)) int stats_binom_test(int64_t k, int64_t n, double p, struct stats_binom *out);

struct stats_mcnemar {
	double p_two_sided;     /* min(1, 2 * P(X <= min(b, c))), X ~ Bin(b + c, 1/2) */
	double p_one_sided;     /* P(X >= b): evidence that b > c */
	double p_mid_two_sided; /* mid-p versions: half the probability of the observed outcome removed */
	double p_mid_one_sided;
};
/* Exact McNemar test on the discordant counts b (only A passed) and c (only B passed). */
__attribute__((warn_unused_result)) int stats_mcnemar_exact(int64_t b, int64_t c, struct stats_mcnemar *out);

/* Wilson score interval for k of n at the given confidence (0.95); low is exactly 0
 * when k = 0 and high exactly 1 when k = n. n = 0 is -EINVAL. */
__attribute__((warn_unused_result)) int stats_wilson(int64_t k, int64_t n, double confidence, double *low,
						     double *high);

struct stats_sign {
	int64_t pos, neg, ties;
	double p_two_sided; /* exact binomial on pos vs neg, ties dropped; 1 when pos + neg = 0 */
};
/* Sign test over per-item differences (e.g. per-task pass counts A minus B). NaN is -EDOM. */
__attribute__((warn_unused_result)) int stats_sign_test(const double *diff, size_t n, struct stats_sign *out);
/* The same from counts of positive and negative differences. */
__attribute__((warn_unused_result)) int stats_sign_counts(int64_t pos, int64_t neg, struct stats_sign *out);

/* Mean and sample standard deviation (n - 1); sd is NaN when n < 2. n = 0 or NaN is -EINVAL/-EDOM. */
__attribute__((warn_unused_result)) int stats_mean_sd(const double *x, size_t n, double *mean, double *sd);

struct stats_welch {
	double mean_a, sd_a, mean_b, sd_b;
	double t;           /* (mean_a - mean_b) / sqrt(var_a/na + var_b/nb) */
	double df;          /* Welch-Satterthwaite, fractional */
	double p_two_sided; /* 2 * P(T_df >= |t|) */
};
/* Welch's unequal-variance t-test. Needs >= 2 values per group (-EINVAL) and some
 * spread in at least one group (-EDOM: t is undefined). */
__attribute__((warn_unused_result)) int stats_welch(const double *a, size_t na, const double *b, size_t nb,
						    struct stats_welch *out);

/* Holm step-down adjusted p-values (same order as p). Each p in [0, 1]. */
__attribute__((warn_unused_result)) int stats_holm(const double *p, size_t n, double *adjusted);

/* Unbiased pass@k from n samples with c correct: 1 - C(n-c, k) / C(n, k). Needs k <= n. */
__attribute__((warn_unused_result)) int stats_pass_at_k(int64_t n, int64_t c, int64_t k, double *out);

/* Expected number of items solved at least once by k runs drawn without replacement
 * from n runs, where item i was solved by c[i] of the n runs: the sum of pass@k. */
__attribute__((warn_unused_result)) int stats_union_expected(const int64_t *c, size_t items, int64_t n, int64_t k,
							     double *out);

/* Attempts per group needed to detect p1 vs p2 with a two-proportion z-test
 * (normal approximation, pooled variance under the null, no continuity
 * correction — Fleiss, Statistical Methods for Rates and Proportions, eq. 4.14
 * without the correction): n = (z_a*sqrt(2*pbar*qbar) + z_b*sqrt(p1q1+p2q2))^2/(p1-p2)^2,
 * z_a for alpha/2 when two_sided. n_cc is the same with Fleiss' continuity correction. */
struct stats_power {
	double n_per_group;    /* not rounded */
	double n_per_group_cc; /* with continuity correction, not rounded */
};
__attribute__((warn_unused_result)) int stats_power_two_prop(double p1, double p2, double alpha, double power,
							     bool two_sided, struct stats_power *out);
#endif
