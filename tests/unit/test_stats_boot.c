/* Unit tests for src/stats/boot: the PRNG's range and uniformity, and the paired
 * bootstrap's reproducibility, width and behaviour on degenerate data. Reference
 * implementations draw different random numbers, so the interval is checked
 * against the normal approximation it must approach, not against golden values. */
#include "test.h"
#include "stats/boot.h"
#include "stats/stats.h"
#include <errno.h>
#include <gsl/gsl_errno.h>

static void rng(void)
{
	struct stats_rng a, b;
	stats_rng_seed(&a, 42);
	stats_rng_seed(&b, 42);
	int same = 1;
	for (int i = 0; i < 100; i++)
		same &= stats_rng_next(&a) == stats_rng_next(&b);
	CHECK(same);
	stats_rng_seed(&b, 43);
	CHECK(stats_rng_next(&a) != stats_rng_next(&b));
	/* chi-square over 10 cells, 100k draws: 9 df, 0.999 quantile is 27.9 */
	int64_t cell[10] = { 0 };
	int in_range = 1;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = stats_rng_below(&a, 10);
		in_range &= v < 10;
		cell[v < 10 ? v : 0]++;
	}
	CHECK(in_range);
	double chi = 0;
	for (int i = 0; i < 10; i++)
		chi += (double)((cell[i] - 10000) * (cell[i] - 10000)) / 10000.0;
	CHECK(chi < 27.9);
	CHECK_EQ_INT(stats_rng_below(&a, 1), 0);
}

static void boot(void)
{
	/* 400 tasks, 4 repeats each: B loses a pass on every third task, gains one on every seventh */
	enum { T = 400 };
	struct stats_boot_task t[T];
	double d[T];
	for (int i = 0; i < T; i++) {
		int64_t a = i % 5 == 4 ? 4 : i % 4, b = a;
		if (i % 7 == 0 && a < 4)
			b = a + 1;
		else if (i % 3 == 0 && a > 0)
			b = a - 1;
		t[i] = (struct stats_boot_task){ .pass_a = a, .n_a = 4, .pass_b = b, .n_b = 4 };
		d[i] = (double)(t[i].pass_a - t[i].pass_b) / 4.0;
	}
	struct stats_boot r1, r2, r3;
	CHECK(stats_boot_paired(t, T, 4000, 0.95, 7, &r1) == 0);
	CHECK(stats_boot_paired(t, T, 4000, 0.95, 7, &r2) == 0);
	CHECK(stats_boot_paired(t, T, 4000, 0.95, 8, &r3) == 0);
	CHECK(r1.pct_low == r2.pct_low && r1.pct_high == r2.pct_high && r1.bca_low == r2.bca_low);
	CHECK(r1.pct_low != r3.pct_low || r1.pct_high != r3.pct_high);
	double mean, sd;
	CHECK(stats_mean_sd(d, T, &mean, &sd) == 0);
	CHECK(fabs(r1.estimate - mean) < 1e-12);
	CHECK(mean > 0.02);
	CHECK(r1.pct_low < r1.estimate && r1.estimate < r1.pct_high);
	CHECK(r1.bca_low < r1.estimate && r1.estimate < r1.bca_high);
	double half = 1.959964 * sd / sqrt((double)T);
	CHECK_NEAR((r1.pct_high - r1.pct_low) / 2, half, 0.1);
	CHECK_NEAR((r1.bca_high - r1.bca_low) / 2, half, 0.1);
	CHECK(fabs(r1.z0) < 0.1);
	CHECK(fabs(r1.accel) < 0.05);
	/* a 99 % interval is wider than a 95 % one */
	struct stats_boot w;
	CHECK(stats_boot_paired(t, T, 4000, 0.99, 7, &w) == 0);
	CHECK(w.pct_high - w.pct_low > r1.pct_high - r1.pct_low);
	/* no spread: every resample equals the estimate; BCa is undefined, percentile is a point */
	struct stats_boot_task flat[3] = { { 1, 2, 0, 2 }, { 1, 2, 0, 2 }, { 1, 2, 0, 2 } };
	CHECK(stats_boot_paired(flat, 3, 100, 0.95, 1, &w) == 0);
	CHECK_NEAR(w.pct_low, 0.5, 1e-12);
	CHECK_NEAR(w.pct_high, 0.5, 1e-12);
	CHECK(isnan(w.bca_low));
	/* bad input */
	struct stats_boot_task bad = { 3, 2, 0, 2 };
	CHECK(stats_boot_paired(&bad, 1, 100, 0.95, 1, &w) == -EINVAL);
	CHECK(stats_boot_paired(t, 0, 100, 0.95, 1, &w) == -EINVAL);
	CHECK(stats_boot_paired(t, T, 100, 1.5, 1, &w) == -EINVAL);
}

int main(void)
{
	gsl_set_error_handler_off();
	rng();
	boot();
	return test_done();
}
