/* Unit tests for src/stats: every golden vector from scipy/statsmodels
 * (tests/fixtures/stats/golden.txt, made by make_golden.py beside it) to 1e-9
 * relative, the figures published in the reference essays, and bad input. */
#include "test.h"
#include "stats/level.h"
#include "stats/stats.h"
#include <errno.h>
#include <gsl/gsl_errno.h>

#define REL 1e-9
#define MAXV 64

/* Splits "test in... = out..." into numbers; returns the test name (in line). */
static char *parse(char *line, double *in, int *nin, double *outv, int *nout)
{
	char *save, *tok = strtok_r(line, " \n", &save);
	char *name = tok;
	int side = 0;
	*nin = *nout = 0;
	while ((tok = strtok_r(NULL, " \n", &save))) {
		if (strcmp(tok, "=") == 0) {
			side = 1;
			continue;
		}
		double v = strtod(tok, NULL);
		if (!side && *nin < MAXV)
			in[(*nin)++] = v;
		else if (side && *nout < MAXV)
			outv[(*nout)++] = v;
	}
	return name;
}

static int near(double got, double want)
{
	double scale = fmax(fabs(got), fabs(want));
	return got == want || (isnan(got) && isnan(want)) || fabs(got - want) <= REL * scale;
}

static int cases_failed;

static void expect(const char *what, int line, double got, double want)
{
	test_checks++;
	if (!near(got, want)) {
		test_failures++;
		if (cases_failed++ < 40)
			fprintf(stderr, "golden.txt:%d %s: got %.17g want %.17g\n", line, what, got, want);
	}
}

static void golden(void)
{
	FILE *f = fopen(test_src_path("tests/fixtures/stats/golden.txt"), "r");
	if (!CHECK(f != NULL))
		return;
	char line[8192];
	double in[MAXV], o[MAXV];
	int nin, nout, lineno = 0, per[10] = { 0 };
	const char *names[10] = { "fisher", "binom", "mcnemar", "wilson", "sign",
				  "welch", "holm", "passk", "union", "power" };
	while (fgets(line, sizeof line, f)) {
		lineno++;
		char *name = parse(line, in, &nin, o, &nout);
		for (int i = 0; i < 10; i++)
			if (strcmp(name, names[i]) == 0)
				per[i]++;
		if (strcmp(name, "fisher") == 0) {
			struct stats_fisher r;
			CHECK(stats_fisher_exact((int64_t)in[0], (int64_t)in[1], (int64_t)in[2], (int64_t)in[3], &r) == 0);
			expect("fisher two", lineno, r.p_two_sided, o[0]);
			expect("fisher less", lineno, r.p_less, o[1]);
			expect("fisher greater", lineno, r.p_greater, o[2]);
			expect("fisher odds", lineno, r.odds_ratio, o[3]);
		} else if (strcmp(name, "binom") == 0) {
			struct stats_binom r;
			CHECK(stats_binom_test((int64_t)in[0], (int64_t)in[1], in[2], &r) == 0);
			expect("binom two", lineno, r.p_two_sided, o[0]);
			expect("binom less", lineno, r.p_less, o[1]);
			expect("binom greater", lineno, r.p_greater, o[2]);
		} else if (strcmp(name, "mcnemar") == 0) {
			struct stats_mcnemar r;
			CHECK(stats_mcnemar_exact((int64_t)in[0], (int64_t)in[1], &r) == 0);
			expect("mcnemar two", lineno, r.p_two_sided, o[0]);
			expect("mcnemar one", lineno, r.p_one_sided, o[1]);
			expect("mcnemar mid two", lineno, r.p_mid_two_sided, o[2]);
			expect("mcnemar mid one", lineno, r.p_mid_one_sided, o[3]);
		} else if (strcmp(name, "wilson") == 0) {
			double lo, hi;
			CHECK(stats_wilson((int64_t)in[0], (int64_t)in[1], in[2], &lo, &hi) == 0);
			expect("wilson low", lineno, lo, o[0]);
			expect("wilson high", lineno, hi, o[1]);
		} else if (strcmp(name, "sign") == 0) {
			/* through the per-item entry point: pos +1s, neg -1s, ties zeros */
			int64_t pos = (int64_t)in[0], neg = (int64_t)in[1], ties = (int64_t)in[2];
			size_t n = (size_t)(pos + neg + ties);
			double *d = calloc(n ? n : 1, sizeof *d);
			for (int64_t i = 0; i < pos + neg; i++)
				d[i] = i < pos ? 1.5 : -0.5;
			struct stats_sign r;
			CHECK(stats_sign_test(d, n, &r) == 0);
			CHECK_EQ_INT(r.ties, ties);
			expect("sign", lineno, r.p_two_sided, o[0]);
			free(d);
		} else if (strcmp(name, "welch") == 0) {
			int na = (int)in[0], nb = (int)in[1 + na];
			struct stats_welch r;
			int rc = stats_welch(in + 1, (size_t)na, in + 2 + na, (size_t)nb, &r);
			CHECK(rc == 0);
			if (rc == 0) {
				expect("welch t", lineno, r.t, o[0]);
				expect("welch df", lineno, r.df, o[1]);
				expect("welch p", lineno, r.p_two_sided, o[2]);
			}
		} else if (strcmp(name, "holm") == 0) {
			int m = (int)in[0];
			double adj[MAXV];
			CHECK(stats_holm(in + 1, (size_t)m, adj) == 0);
			for (int i = 0; i < m; i++)
				expect("holm", lineno, adj[i], o[i]);
		} else if (strcmp(name, "passk") == 0) {
			double v;
			CHECK(stats_pass_at_k((int64_t)in[0], (int64_t)in[1], (int64_t)in[2], &v) == 0);
			expect("passk", lineno, v, o[0]);
		} else if (strcmp(name, "union") == 0) {
			int64_t c[MAXV];
			int items = (int)in[2];
			for (int i = 0; i < items; i++)
				c[i] = (int64_t)in[3 + i];
			double v;
			CHECK(stats_union_expected(c, (size_t)items, (int64_t)in[0], (int64_t)in[1], &v) == 0);
			expect("union", lineno, v, o[0]);
		} else if (strcmp(name, "power") == 0) {
			struct stats_power r;
			CHECK(stats_power_two_prop(in[0], in[1], in[2], in[3], in[4] != 0, &r) == 0);
			expect("power n", lineno, r.n_per_group, o[0]);
			expect("power n_cc", lineno, r.n_per_group_cc, o[1]);
		} else {
			CHECK(!"unknown test in golden.txt");
		}
	}
	fclose(f);
	for (int i = 0; i < 10; i++)
		if (!CHECK(per[i] >= 200))
			fprintf(stderr, "golden.txt: only %d cases of %s\n", per[i], names[i]);
}

static double fisher_two(int64_t a, int64_t n1, int64_t c, int64_t n2)
{
	struct stats_fisher r = { 0 };
	CHECK(stats_fisher_exact(a, n1 - a, c, n2 - c, &r) == 0);
	return r.p_two_sided;
}

/* The figures as printed (rounded) in the essays, recomputed from their counts. */
static void essays(void)
{
	CHECK_NEAR(round(fisher_two(11, 25, 7, 25) * 1000) / 1000, 0.377, 1e-12);
	CHECK_NEAR(round(fisher_two(56, 200, 36, 200) * 1000) / 1000, 0.024, 1e-12);
	CHECK_NEAR(round(fisher_two(21, 25, 14, 25) * 1000) / 1000, 0.062, 1e-12);
	CHECK_NEAR(round(fisher_two(41, 50, 29, 50) * 1000) / 1000, 0.016, 1e-12);
	CHECK_NEAR(round(fisher_two(155, 164, 156, 164) * 1000) / 1000, 1.000, 1e-12);
	double lo, hi;
	CHECK(stats_wilson(11, 25, 0.95, &lo, &hi) == 0);
	CHECK_NEAR(round(lo * 1000) / 10, 26.7, 1e-12);
	CHECK_NEAR(round(hi * 1000) / 10, 62.9, 1e-12);
	CHECK(stats_wilson(7, 25, 0.95, &lo, &hi) == 0);
	CHECK_NEAR(round(lo * 1000) / 10, 14.3, 1e-12);
	CHECK_NEAR(round(hi * 1000) / 10, 47.6, 1e-12);
	struct stats_mcnemar m;
	CHECK(stats_mcnemar_exact(6, 0, &m) == 0);
	CHECK_NEAR(round(m.p_one_sided * 10000) / 10000, 0.0156, 1e-12);
	CHECK(stats_mcnemar_exact(8, 0, &m) == 0);
	CHECK_NEAR(round(m.p_one_sided * 10000) / 10000, 0.0039, 1e-12);
	CHECK(stats_mcnemar_exact(4, 0, &m) == 0);
	CHECK_NEAR(round(m.p_one_sided * 10000) / 10000, 0.0625, 1e-12);
	CHECK(stats_mcnemar_exact(1, 4, &m) == 0);
	CHECK_NEAR(round(m.p_two_sided * 1000) / 1000, 0.375, 1e-12);
	CHECK(stats_mcnemar_exact(5, 0, &m) == 0);
	CHECK_NEAR(round(m.p_one_sided * 1000) / 1000, 0.031, 1e-12);
	struct stats_sign s;
	CHECK(stats_sign_counts(13, 3, &s) == 0);
	CHECK_NEAR(round(s.p_two_sided * 1000) / 1000, 0.021, 1e-12);
	double a[] = { 28, 32, 22, 30 }, b[] = { 14, 20, 20, 18 };
	struct stats_welch w;
	CHECK(stats_welch(a, 4, b, 4, &w) == 0);
	CHECK_NEAR(round(w.t * 100) / 100, 3.87, 1e-12);
	/* per-run rates 14,16,11,15 of 50 -> 28.0 % +- 4.3; 7,10,10,9 -> 18.0 % +- 2.8 */
	double ra[] = { 28, 32, 22, 30 }, mean, sd;
	CHECK(stats_mean_sd(ra, 4, &mean, &sd) == 0);
	CHECK_NEAR(mean, 28.0, 1e-12);
	CHECK_NEAR(round(sd * 10) / 10, 4.3, 1e-12);
	CHECK(stats_mean_sd(b, 4, &mean, &sd) == 0);
	CHECK_NEAR(round(sd * 10) / 10, 2.8, 1e-12);
	/* the expected union of 1, 2, 3, 4 runs drawn from four is 11.5, 14.3, 15.5 and
	 * 16.0 statements (reference essay on teams): 46 proofs of 16 statements, which
	 * those four figures pin down to 6 statements proved by all four runs, 4 by
	 * three, 4 by two and 2 by one */
	int64_t c[16] = { 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1 };
	const double want[4] = { 11.5, 14.3, 15.5, 16.0 };
	for (int k = 1; k <= 4; k++) {
		double u;
		CHECK(stats_union_expected(c, 16, 4, k, &u) == 0);
		CHECK_NEAR(round(u * 10) / 10, want[k - 1], 1e-12);
	}
}

static void bad_input(void)
{
	struct stats_fisher f;
	CHECK(stats_fisher_exact(-1, 2, 3, 4, &f) == -EINVAL);
	struct stats_binom b;
	CHECK(stats_binom_test(5, 4, 0.5, &b) == -EINVAL);
	CHECK(stats_binom_test(1, 4, NAN, &b) == -EDOM);
	double lo = 7, hi = 7;
	CHECK(stats_wilson(3, 0, 0.95, &lo, &hi) == -EINVAL);
	CHECK(stats_wilson(4, 3, 0.95, &lo, &hi) == -EINVAL);
	CHECK(lo == 7 && hi == 7);
	double one[] = { 1 }, same[] = { 2, 2 }, nanv[] = { 1, NAN };
	struct stats_welch w;
	CHECK(stats_welch(one, 1, same, 2, &w) == -EINVAL);
	CHECK(stats_welch(same, 2, same, 2, &w) == -EDOM);
	CHECK(stats_welch(nanv, 2, same, 2, &w) == -EDOM);
	struct stats_sign s;
	CHECK(stats_sign_test(nanv, 2, &s) == -EDOM);
	double p[] = { 0.5, 1.5 }, adj[2];
	CHECK(stats_holm(p, 2, adj) == -EDOM);
	double v;
	CHECK(stats_pass_at_k(10, 11, 1, &v) == -EINVAL);
	CHECK(stats_pass_at_k(10, 1, 11, &v) == -EINVAL);
	struct stats_power pw;
	CHECK(stats_power_two_prop(0.2, 0.2, 0.05, 0.8, true, &pw) == -EINVAL);
	CHECK(stats_power_two_prop(0.2, 1.2, 0.05, 0.8, true, &pw) == -EDOM);
}

/* level_spread: the figures across repeated runs (sixi-bench --repeats, sixi-report
 * bench). Expected: Python's statistics.stdev and the t quantiles t(0.975, 3) =
 * 3.182446305284263 and t(0.975, 1) = 12.706204736174698 (tables; scipy agrees). */
static void spread(void)
{
	struct level_spread s;
	double a[] = { 10, 12, 11, 15 };
	level_spread_compute(a, 4, &s);
	CHECK(s.n == 4);
	CHECK_NEAR(s.mean, 12.0, 1e-12);
	CHECK_NEAR(s.sd, 2.160246899469287, 1e-12);
	CHECK_NEAR(s.low, 8.562565118141091, 1e-9);
	CHECK_NEAR(s.high, 15.437434881858909, 1e-9);
	CHECK_NEAR(s.cv, 0.18002057495577392, 1e-12);
	CHECK(!s.unstable); /* 18 % */
	double b[] = { 100, 50 };
	level_spread_compute(b, 2, &s);
	CHECK_NEAR(s.low, -242.65511840436744, 1e-8);
	CHECK_NEAR(s.high, 392.65511840436744, 1e-8);
	CHECK(s.unstable); /* 47 % */
	double c[] = { 7 };
	level_spread_compute(c, 1, &s); /* one run: a mean, no spread */
	CHECK(s.mean == 7 && isnan(s.sd) && isnan(s.low) && isnan(s.cv) && !s.unstable);
	level_spread_compute(c, 0, &s);
	CHECK(s.n == 0 && isnan(s.mean) && !s.unstable);
}

int main(void)
{
	gsl_set_error_handler_off();
	golden();
	essays();
	bad_input();
	spread();
	return test_done();
}
