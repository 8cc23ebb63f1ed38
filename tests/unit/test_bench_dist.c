/* Unit tests for src/bench/dist: the four forms parse and bad ones are refused
 * with the accepted forms named; draws are seeded (same seed, same lengths), stay
 * >= 1 and in range, and their sample moments match the distribution's. */
#include "test.h"
#include "bench/dist.h"
#include <gsl/gsl_errno.h>
#include <stdbool.h>

static gsl_rng *rng(unsigned long seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, seed);
	return r;
}

static void test_parse(void)
{
	struct dist d;
	char err[512];
	CHECK(dist_parse("--input-len", "128", &d, err, sizeof err) == 0 && d.kind == DIST_FIXED && d.a == 128);
	CHECK(dist_parse("--input-len", "fixed:7", &d, err, sizeof err) == 0 && d.kind == DIST_FIXED && d.a == 7);
	CHECK(dist_parse("--input-len", "uniform:10,20", &d, err, sizeof err) == 0 && d.kind == DIST_UNIFORM);
	CHECK(dist_parse("--input-len", "normal:100,15", &d, err, sizeof err) == 0 && d.kind == DIST_NORMAL);
	CHECK(dist_parse("--input-len", "lognormal:200,0.5", &d, err, sizeof err) == 0 && d.kind == DIST_LOGNORMAL);
	char back[64];
	dist_format(&d, back, sizeof back);
	CHECK_EQ_STR(back, "lognormal:200,0.5");
	static const char *bad[] = { "", "zipf:1", "uniform:20,10", "uniform:5", "normal:100", "fixed:0",
				     "fixed:1.5", "normal:100,-1", "lognormal:x,1", "uniform:1,2,3", "128tok" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		CHECK(dist_parse("--input-len", bad[i], &d, err, sizeof err) == -EINVAL);
		CHECK(strstr(err, "--input-len") && strstr(err, "uniform:LO,HI"));
	}
}

static void test_draws(void)
{
	struct dist d;
	char err[256];
	enum { N = 20000 };
	gsl_rng *a = rng(42), *b = rng(42);
	CHECK(dist_parse("x", "uniform:10,20", &d, err, sizeof err) == 0);
	int seen[11] = { 0 };
	bool same = true;
	for (int i = 0; i < N; i++) {
		int64_t v = dist_draw(&d, a);
		same &= v == dist_draw(&d, b);
		CHECK(v >= 10 && v <= 20);
		if (v >= 10 && v <= 20)
			seen[v - 10]++;
	}
	CHECK(same);
	for (int i = 0; i < 11; i++) /* each of 11 values ~1818 times; 5 sigma ~ 200 */
		CHECK(seen[i] > 1600 && seen[i] < 2050);
	CHECK(dist_parse("x", "normal:500,50", &d, err, sizeof err) == 0);
	double sum = 0, ss = 0;
	for (int i = 0; i < N; i++) {
		double v = (double)dist_draw(&d, a);
		sum += v;
		ss += v * v;
	}
	double mean = sum / N, sd = sqrt(ss / N - mean * mean);
	CHECK(fabs(mean - 500) < 2);  /* standard error 0.35 */
	CHECK(fabs(sd - 50) < 1.5);
	/* lognormal: the median is MEDIAN */
	CHECK(dist_parse("x", "lognormal:200,0.8", &d, err, sizeof err) == 0);
	int below = 0;
	for (int i = 0; i < N; i++)
		below += dist_draw(&d, a) < 200;
	CHECK(below > N / 2 - 400 && below < N / 2 + 100); /* rounding puts 200 itself above */
	/* clipped at 1 */
	CHECK(dist_parse("x", "normal:1,100", &d, err, sizeof err) == 0);
	for (int i = 0; i < 1000; i++)
		CHECK(dist_draw(&d, a) >= 1);
	gsl_rng_free(a);
	gsl_rng_free(b);
}

int main(void)
{
	gsl_set_error_handler_off();
	test_parse();
	test_draws();
	return test_done();
}
