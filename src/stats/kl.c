/* kl — see kl.h. Sums in double, in row order. */
#include "stats/kl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int kl_figures_compute(const struct kl_point *p, size_t n, struct kl_figures *out)
{
	if (n == 0)
		return -EINVAL;
	double *v = malloc(sizeof(double) * n);
	if (!v)
		return -ENOMEM;
	double skl = 0, sref = 0, scand = 0;
	size_t agree = 0;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(p[i].kl >= -1e-6) || isnan(p[i].logp_ref) || isnan(p[i].logp_cand)) {
			rc = -EINVAL;
			goto out;
		}
		v[i] = p[i].kl;
		skl += p[i].kl;
		sref += p[i].logp_ref;
		scand += p[i].logp_cand;
		agree += p[i].top1_same != 0;
	}
	qsort(v, n, sizeof(double), cmp_double);
	size_t rank = (size_t)ceil(0.99 * (double)n); /* nearest rank, 1-based */
	if (rank < 1)
		rank = 1;
	out->n = (int64_t)n;
	out->kl_mean = skl / (double)n;
	out->kl_p99 = v[rank - 1];
	out->kl_max = v[n - 1];
	out->top1 = (double)agree / (double)n;
	out->ppl_ref = exp(-sref / (double)n);
	out->ppl_cand = exp(-scand / (double)n);
	out->ppl_ratio = out->ppl_cand / out->ppl_ref;
out:
	free(v);
	return rc;
}

void kl_figures_named(const struct kl_figures *f, const char *names[KL_FIGURES_N], double values[KL_FIGURES_N])
{
	static const char *const n[KL_FIGURES_N] = {"positions", "kl_mean", "kl_p99", "kl_max",
						    "top1", "ppl_ref", "ppl_cand", "ppl_ratio"};
	const double v[KL_FIGURES_N] = {(double)f->n, f->kl_mean, f->kl_p99, f->kl_max,
					f->top1, f->ppl_ref, f->ppl_cand, f->ppl_ratio};
	for (int i = 0; i < KL_FIGURES_N; i++) {
		names[i] = n[i];
		values[i] = v[i];
	}
}
