/* stats — see stats.h.
 *
 * Fisher and the binomial test share one routine, exact_tails(), over a unimodal
 * discrete distribution described by the log of the ratio of successive
 * probabilities. The log-probabilities are accumulated outward from the mode, so
 * the terms near the mode (the ones that carry the mass) are exact to a few ulps
 * however large the counts, and sums are taken relative to the largest term of
 * each region so nothing overflows or underflows before the final exp(). A walk
 * stops where the terms fall below e^-800 of both the mode and the observed
 * outcome (they cannot change any sum; see exact_tails), so it costs O(sd)
 * steps: tens of thousands for counts in the billions. An observed outcome more than WALK_MAX steps from
 * the mode is placed with lgamma instead (its p-value is then below 1e-300 for
 * any count this program accepts, and lgamma's ~1e-16 x n error is immaterial). */
#include "stats/stats.h"
#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- exact tails of a unimodal discrete distribution ---- */

#define WALK_MAX 2000000
#define NEGLIGIBLE 800.0 /* e^-800 is below the smallest double */

struct dist {
	int64_t lo, hi, mode; /* support [lo, hi] */
	/* log(P(x+1) / P(x)) for lo <= x < hi */
	double (*log_ratio)(const struct dist *d, int64_t x);
	/* log P(x) up to a constant (lgamma; only for outcomes far from the mode) */
	double (*log_pmf)(const struct dist *d, int64_t x);
	double r1, r2, c1; /* hypergeometric margins */
	double n, lodds;   /* binomial: trials, log(p / (1 - p)) */
};

static double hyper_log_ratio(const struct dist *d, int64_t x)
{
	double xd = (double)x;
	return log((d->r1 - xd) * (d->c1 - xd)) - log((xd + 1) * (d->r2 - d->c1 + xd + 1));
}

static double binom_log_ratio(const struct dist *d, int64_t x)
{
	double xd = (double)x;
	return log((d->n - xd) / (xd + 1)) + d->lodds;
}

static double lnchoose(double n, double k) { return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1); }

static double hyper_log_pmf(const struct dist *d, int64_t x)
{
	return lnchoose(d->r1, (double)x) + lnchoose(d->r2, d->c1 - (double)x);
}

static double binom_log_pmf(const struct dist *d, int64_t x)
{
	return lnchoose(d->n, (double)x) + (double)x * d->lodds; /* the n*log(1-p) factor is a constant */
}

/* log P(obs) - log P(mode), walking from the mode. */
static double log_rel(const struct dist *d, int64_t obs)
{
	if (obs - d->mode > WALK_MAX || d->mode - obs > WALK_MAX)
		return d->log_pmf(d, obs) - d->log_pmf(d, d->mode);
	double l = 0;
	for (int64_t x = d->mode; x < obs; x++)
		l += d->log_ratio(d, x);
	for (int64_t x = d->mode; x > obs; x--)
		l -= d->log_ratio(d, x - 1);
	return l;
}

struct tails {
	double l_obs, tie; /* log P(obs) relative to the mode; inclusion bound */
	double total;      /* sum over support of exp(l) */
	double incl;       /* sum of exp(l - l_obs) over terms with l <= tie */
	double le, ge;     /* sums over x <= obs, x >= obs, relative to their region's largest term */
	double ref_le, ref_ge;
	int64_t obs;
};

static void tails_add(struct tails *t, int64_t x, double l)
{
	t->total += exp(l);
	if (l <= t->tie)
		t->incl += exp(l - t->l_obs);
	if (x <= t->obs)
		t->le += exp(l - t->ref_le);
	if (x >= t->obs)
		t->ge += exp(l - t->ref_ge);
}

struct exact {
	double two, less, greater; /* as in struct stats_binom */
	double pmf;                /* P(X = obs) */
};

static void exact_tails(const struct dist *d, int64_t obs, struct exact *e)
{
	struct tails t = { .obs = obs };
	t.l_obs = log_rel(d, obs);
	t.tie = t.l_obs + log1p(STATS_TIE_RELERR);
	/* unimodal: the largest term at or below obs is obs itself when obs <= mode, else the mode */
	t.ref_le = obs <= d->mode ? t.l_obs : 0;
	t.ref_ge = obs >= d->mode ? t.l_obs : 0;
	/* Terms below the cutoff cannot move any sum: they are e^-800 below the mode and
	 * below obs. When obs itself is more than e^-800 below the mode every sum
	 * relative to it underflows to 0 anyway, so the walk never goes past e^-1600. */
	double cutoff = fmax(fmin(t.l_obs, 0), -NEGLIGIBLE) - NEGLIGIBLE, l = 0;
	tails_add(&t, d->mode, 0);
	for (int64_t x = d->mode; x < d->hi && l >= cutoff; x++) {
		l += d->log_ratio(d, x);
		tails_add(&t, x + 1, l);
	}
	l = 0;
	for (int64_t x = d->mode; x > d->lo && l >= cutoff; x--) {
		l -= d->log_ratio(d, x - 1);
		tails_add(&t, x - 1, l);
	}
	double lt = log(t.total);
	e->two = fmin(1.0, exp(t.l_obs + log(t.incl) - lt));
	e->less = fmin(1.0, exp(t.ref_le + log(t.le) - lt));
	e->greater = fmin(1.0, exp(t.ref_ge + log(t.ge) - lt));
	e->pmf = exp(t.l_obs - lt);
}

/* ---- Fisher ---- */

int stats_fisher_exact(int64_t a, int64_t b, int64_t c, int64_t d, struct stats_fisher *out)
{
	if (a < 0 || b < 0 || c < 0 || d < 0)
		return -EINVAL;
	double ad = (double)a * (double)d, bc = (double)b * (double)c;
	struct stats_fisher f;
	f.odds_ratio = bc > 0 ? ad / bc : ad > 0 ? INFINITY : NAN;
	int64_t r1 = a + b, r2 = c + d, c1 = a + c, c2 = b + d;
	if (r1 == 0 || r2 == 0 || c1 == 0 || c2 == 0) {
		f.p_two_sided = f.p_less = f.p_greater = 1.0;
		*out = f;
		return 0;
	}
	struct dist h = { .log_ratio = hyper_log_ratio, .log_pmf = hyper_log_pmf, .r1 = (double)r1, .r2 = (double)r2, .c1 = (double)c1 };
	h.lo = c1 - r2 > 0 ? c1 - r2 : 0;
	h.hi = r1 < c1 ? r1 : c1;
	h.mode = (int64_t)floor(((double)r1 + 1) * ((double)c1 + 1) / ((double)(r1 + r2) + 2));
	h.mode = h.mode < h.lo ? h.lo : h.mode > h.hi ? h.hi : h.mode;
	struct exact e;
	exact_tails(&h, a, &e);
	f.p_two_sided = e.two;
	f.p_less = e.less;
	f.p_greater = e.greater;
	*out = f;
	return 0;
}

/* ---- binomial, McNemar, sign ---- */

/* Arguments already checked: 0 <= k <= n, n > 0, 0 < p < 1. */
static void binom_exact(int64_t k, int64_t n, double p, struct exact *e)
{
	struct dist bd = { .log_ratio = binom_log_ratio, .log_pmf = binom_log_pmf, .lo = 0, .hi = n, .n = (double)n,
			   .lodds = log(p) - log1p(-p) };
	bd.mode = (int64_t)floor(((double)n + 1) * p);
	bd.mode = bd.mode > n ? n : bd.mode;
	exact_tails(&bd, k, e);
}

int stats_binom_test(int64_t k, int64_t n, double p, struct stats_binom *out)
{
	if (k < 0 || n < 0 || k > n)
		return -EINVAL;
	if (!(p > 0 && p < 1))
		return -EDOM;
	struct exact e = { 1.0, 1.0, 1.0, 1.0 };
	if (n > 0)
		binom_exact(k, n, p, &e);
	out->p_two_sided = e.two;
	out->p_less = e.less;
	out->p_greater = e.greater;
	return 0;
}

int stats_mcnemar_exact(int64_t b, int64_t c, struct stats_mcnemar *out)
{
	if (b < 0 || c < 0)
		return -EINVAL;
	struct stats_mcnemar m;
	int64_t n = b + c, lo = b < c ? b : c;
	if (n == 0) {
		m.p_two_sided = m.p_one_sided = m.p_mid_two_sided = m.p_mid_one_sided = 1.0;
		*out = m;
		return 0;
	}
	struct exact at_lo, at_b;
	binom_exact(lo, n, 0.5, &at_lo);
	binom_exact(b, n, 0.5, &at_b);
	m.p_two_sided = fmin(1.0, 2 * at_lo.less);
	m.p_one_sided = at_b.greater;
	m.p_mid_two_sided = fmin(1.0, 2 * (at_lo.less - 0.5 * at_lo.pmf));
	m.p_mid_one_sided = at_b.greater - 0.5 * at_b.pmf;
	*out = m;
	return 0;
}

int stats_sign_counts(int64_t pos, int64_t neg, struct stats_sign *out)
{
	if (pos < 0 || neg < 0)
		return -EINVAL;
	struct stats_sign s = { .pos = pos, .neg = neg, .p_two_sided = 1.0 };
	if (pos + neg > 0) {
		struct exact e;
		binom_exact(pos < neg ? pos : neg, pos + neg, 0.5, &e);
		s.p_two_sided = e.two;
	}
	*out = s;
	return 0;
}

int stats_sign_test(const double *diff, size_t n, struct stats_sign *out)
{
	int64_t pos = 0, neg = 0, ties = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(diff[i]))
			return -EDOM;
		pos += diff[i] > 0;
		neg += diff[i] < 0;
		ties += diff[i] == 0;
	}
	int rc = stats_sign_counts(pos, neg, out);
	out->ties = ties;
	return rc;
}

/* ---- intervals ---- */

int stats_wilson(int64_t k, int64_t n, double confidence, double *low, double *high)
{
	if (n <= 0 || k < 0 || k > n)
		return -EINVAL;
	if (!(confidence > 0 && confidence < 1))
		return -EDOM;
	double z = gsl_cdf_ugaussian_Pinv(1 - (1 - confidence) / 2), z2 = z * z, nd = (double)n;
	double q = (double)k / nd;
	double denom = 1 + z2 / nd;
	double center = (q + z2 / (2 * nd)) / denom;
	double half = z * sqrt(q * (1 - q) / nd + z2 / (4 * nd * nd)) / denom;
	/* at the edges the formula gives 0 and 1 only up to rounding (2.8e-17) */
	*low = k == 0 ? 0.0 : center - half;
	*high = k == n ? 1.0 : center + half;
	return 0;
}

/* ---- means, Welch ---- */

int stats_mean_sd(const double *x, size_t n, double *mean, double *sd)
{
	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return -EDOM;
	*mean = gsl_stats_mean(x, 1, n);
	*sd = n < 2 ? NAN : gsl_stats_sd_m(x, 1, n, *mean);
	return 0;
}

int stats_welch(const double *a, size_t na, const double *b, size_t nb, struct stats_welch *out)
{
	if (na < 2 || nb < 2)
		return -EINVAL;
	struct stats_welch w;
	int rc = stats_mean_sd(a, na, &w.mean_a, &w.sd_a);
	if (rc == 0)
		rc = stats_mean_sd(b, nb, &w.mean_b, &w.sd_b);
	if (rc)
		return rc;
	double va = w.sd_a * w.sd_a / (double)na, vb = w.sd_b * w.sd_b / (double)nb;
	if (va + vb == 0)
		return -EDOM;
	w.t = (w.mean_a - w.mean_b) / sqrt(va + vb);
	w.df = (va + vb) * (va + vb) / (va * va / (double)(na - 1) + vb * vb / (double)(nb - 1));
	w.p_two_sided = fmin(1.0, 2 * gsl_cdf_tdist_Q(fabs(w.t), w.df));
	*out = w;
	return 0;
}

/* ---- multiple comparisons ---- */

static int cmp_by_p(const void *x, const void *y, void *ctx)
{
	const double *p = ctx;
	double a = p[*(const size_t *)x], b = p[*(const size_t *)y];
	return a < b ? -1 : a > b;
}

int stats_holm(const double *p, size_t n, double *adjusted)
{
	for (size_t i = 0; i < n; i++)
		if (!(p[i] >= 0 && p[i] <= 1))
			return -EDOM;
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof *order, cmp_by_p, (void *)p);
	double run = 0; /* step-down: adjusted values never decrease along the sorted order */
	for (size_t i = 0; i < n; i++) {
		double v = fmin(1.0, (double)(n - i) * p[order[i]]);
		run = v > run ? v : run;
		adjusted[order[i]] = run;
	}
	free(order);
	return 0;
}

/* ---- pass@k, unions, power ---- */

int stats_pass_at_k(int64_t n, int64_t c, int64_t k, double *out)
{
	if (n <= 0 || c < 0 || c > n || k <= 0 || k > n)
		return -EINVAL;
	if (n - c < k) {
		*out = 1.0;
		return 0;
	}
	/* C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i): no huge binomials */
	double miss = 1.0;
	for (int64_t i = n - c + 1; i <= n; i++)
		miss *= 1.0 - (double)k / (double)i;
	*out = 1.0 - miss;
	return 0;
}

int stats_union_expected(const int64_t *c, size_t items, int64_t n, int64_t k, double *out)
{
	double sum = 0;
	for (size_t i = 0; i < items; i++) {
		double v;
		int rc = stats_pass_at_k(n, c[i], k, &v);
		if (rc)
			return rc;
		sum += v;
	}
	*out = sum;
	return 0;
}

int stats_power_two_prop(double p1, double p2, double alpha, double power, bool two_sided,
			 struct stats_power *out)
{
	if (!(p1 > 0 && p1 < 1 && p2 > 0 && p2 < 1 && alpha > 0 && alpha < 1 && power > 0 && power < 1))
		return -EDOM;
	if (p1 == p2)
		return -EINVAL;
	double za = gsl_cdf_ugaussian_Qinv(two_sided ? alpha / 2 : alpha);
	double zb = gsl_cdf_ugaussian_Pinv(power);
	double pbar = (p1 + p2) / 2, d = fabs(p1 - p2);
	double s = za * sqrt(2 * pbar * (1 - pbar)) + zb * sqrt(p1 * (1 - p1) + p2 * (1 - p2));
	double n = s * s / (d * d);
	double cc = 1 + sqrt(1 + 4 / (n * d));
	out->n_per_group = n;
	out->n_per_group_cc = n / 4 * cc * cc;
	return 0;
}
