/* boot — see boot.h.
 *
 * Cost: resamples x tasks random draws (2000 x 50,000 = 1e8 draws, about 0.3 s);
 * the jackknife for BCa's acceleration is O(tasks) from running totals.
 * Memory: one double per resample. */
#include "stats/boot.h"
#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void stats_rng_seed(struct stats_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t stats_rng_next(struct stats_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

__extension__ typedef unsigned __int128 u128; /* GCC and clang; the product of two 64-bit values */

uint64_t stats_rng_below(struct stats_rng *r, uint64_t bound)
{
	/* multiply-shift; reject the few low products that would bias small outputs */
	u128 m = (u128)stats_rng_next(r) * bound;
	uint64_t low = (uint64_t)m;
	if (low < bound) {
		uint64_t threshold = -bound % bound;
		while (low < threshold) {
			m = (u128)stats_rng_next(r) * bound;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

static double diff_of(double pa, double na, double pb, double nb) { return pa / na - pb / nb; }

int stats_boot_paired(const struct stats_boot_task *t, size_t ntasks, size_t resamples, double confidence,
		      uint64_t seed, struct stats_boot *out)
{
	if (ntasks == 0 || resamples < 2 || !(confidence > 0 && confidence < 1))
		return -EINVAL;
	double pa = 0, na = 0, pb = 0, nb = 0;
	for (size_t i = 0; i < ntasks; i++) {
		if (t[i].n_a <= 0 || t[i].n_b <= 0 || t[i].pass_a < 0 || t[i].pass_b < 0 || t[i].pass_a > t[i].n_a ||
		    t[i].pass_b > t[i].n_b)
			return -EINVAL;
		pa += (double)t[i].pass_a;
		na += (double)t[i].n_a;
		pb += (double)t[i].pass_b;
		nb += (double)t[i].n_b;
	}
	double *theta = malloc(resamples * sizeof *theta);
	if (!theta)
		return -ENOMEM;
	struct stats_boot b = { .estimate = diff_of(pa, na, pb, nb), .seed = seed, .resamples = resamples };
	struct stats_rng rng;
	stats_rng_seed(&rng, seed);
	size_t below = 0;
	for (size_t r = 0; r < resamples; r++) {
		int64_t spa = 0, sna = 0, spb = 0, snb = 0;
		for (size_t i = 0; i < ntasks; i++) {
			const struct stats_boot_task *x = &t[stats_rng_below(&rng, ntasks)];
			spa += x->pass_a;
			sna += x->n_a;
			spb += x->pass_b;
			snb += x->n_b;
		}
		theta[r] = diff_of((double)spa, (double)sna, (double)spb, (double)snb);
		below += theta[r] < b.estimate;
	}
	gsl_sort(theta, 1, resamples);
	double alpha = (1 - confidence) / 2;
	b.pct_low = gsl_stats_quantile_from_sorted_data(theta, 1, resamples, alpha);
	b.pct_high = gsl_stats_quantile_from_sorted_data(theta, 1, resamples, 1 - alpha);

	/* BCa (Efron 1987): z0 from the share of resamples below the estimate, the
	 * acceleration from the jackknife (leave one task out) skewness */
	double jmean = 0, num = 0, den = 0;
	double *jack = malloc(ntasks * sizeof *jack);
	if (!jack) {
		free(theta);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ntasks; i++) {
		double ra = na - (double)t[i].n_a, rb = nb - (double)t[i].n_b;
		jack[i] = ra > 0 && rb > 0 ? diff_of(pa - (double)t[i].pass_a, ra, pb - (double)t[i].pass_b, rb) : NAN;
		jmean += jack[i];
	}
	jmean /= (double)ntasks;
	for (size_t i = 0; i < ntasks; i++) {
		double u = jmean - jack[i];
		num += u * u * u;
		den += u * u;
	}
	free(jack);
	b.z0 = gsl_cdf_ugaussian_Pinv((double)below / (double)resamples);
	b.accel = den > 0 ? num / (6 * pow(den, 1.5)) : 0;
	b.bca_low = b.bca_high = NAN;
	if (isfinite(b.z0) && isfinite(b.accel)) {
		double zl = gsl_cdf_ugaussian_Pinv(alpha), zh = gsl_cdf_ugaussian_Pinv(1 - alpha);
		double al = gsl_cdf_ugaussian_P(b.z0 + (b.z0 + zl) / (1 - b.accel * (b.z0 + zl)));
		double ah = gsl_cdf_ugaussian_P(b.z0 + (b.z0 + zh) / (1 - b.accel * (b.z0 + zh)));
		if (isfinite(al) && isfinite(ah)) {
			b.bca_low = gsl_stats_quantile_from_sorted_data(theta, 1, resamples, al);
			b.bca_high = gsl_stats_quantile_from_sorted_data(theta, 1, resamples, ah);
		}
	}
	free(theta);
	*out = b;
	return 0;
}
