/* Unit tests for src/bench/slo: the --slo grammar (units required, percentile
 * forms, one message naming the term), the per-request verdict from a sample's
 * timestamps, attainment with the Wilson interval of src/stats, goodput, and the
 * level's percentile terms. */
#include "test.h"
#include "bench/slo.h"
#include "stats/stats.h"
#include <gsl/gsl_errno.h>

static void test_parse(void)
{
	struct slo s;
	char err[512];
	CHECK(slo_parse("ttft=500ms,itl=50ms,e2e=10s", &s, err, sizeof err) == 0);
	CHECK_EQ_INT(s.n, 3);
	CHECK(s.t[0].metric == SLO_TTFT && s.t[0].limit_ms == 500 && s.t[0].pct == 0);
	CHECK(s.t[1].metric == SLO_ITL && s.t[1].limit_ms == 50);
	CHECK(s.t[2].metric == SLO_E2E && s.t[2].limit_ms == 10000);
	CHECK(slo_parse("ttft_p99=2s,tpot_p90=250us", &s, err, sizeof err) == 0);
	CHECK(s.t[0].pct == 99 && s.t[0].limit_ms == 2000 && s.t[1].metric == SLO_TPOT && s.t[1].pct == 90 &&
	      fabs(s.t[1].limit_ms - 0.25) < 1e-12);
	err[0] = 0;
	CHECK(slo_parse("ttft=500ms,e2e=10", &s, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "term 2 'e2e=10' has no unit") && strstr(err, "us, ms or s"));
	CHECK(slo_parse("ttft=5min", &s, err, sizeof err) == -EINVAL && strstr(err, "not us, ms or s"));
	CHECK(slo_parse("latency=5s", &s, err, sizeof err) == -EINVAL && strstr(err, "names no metric"));
	CHECK(slo_parse("ttft", &s, err, sizeof err) == -EINVAL && strstr(err, "has no '='"));
	CHECK(slo_parse("ttft_p101=1s", &s, err, sizeof err) == -EINVAL && strstr(err, "percentile"));
	CHECK(slo_parse("ttft=-1s", &s, err, sizeof err) == -EINVAL && strstr(err, "positive number"));
	CHECK(slo_parse("", &s, err, sizeof err) == -EINVAL);
}

/* A sample: sent at 0 (intended at -lag), first token at ttft, n tokens one per event gap ms apart. */
static struct bench_sample sample(double ttft_ms, int64_t n, double gap_ms, double lag_ms, double *gaps)
{
	struct bench_sample x;
	memset(&x, 0, sizeof x);
	x.phase = "measure";
	x.level = 1;
	x.t_send = 1000000000;
	x.t_intended = x.t_send - (int64_t)(lag_ms * 1e6);
	x.t_first_token = x.t_send + (int64_t)(ttft_ms * 1e6);
	x.t_last = x.t_first_token + (int64_t)((double)(n - 1) * gap_ms * 1e6);
	x.t_done = x.t_last + 1000000;
	x.completion_tokens = n;
	x.token_events = n;
	for (int64_t i = 0; i + 1 < n; i++)
		gaps[i] = gap_ms;
	x.gaps_ms = gaps;
	x.n_gaps = n > 1 ? (size_t)(n - 1) : 0;
	return x;
}

static void test_requests(void)
{
	struct slo s;
	char err[256];
	CHECK(slo_parse("ttft=100ms,itl=20ms,e2e=1s", &s, err, sizeof err) == 0);
	double g[64];
	struct bench_sample x = sample(50, 10, 10, 0, g);
	struct slo_request r;
	slo_request_of(&x, &r);
	CHECK(r.ok && fabs(r.ttft_ms - 50) < 1e-9 && fabs(r.tpot_ms - 10) < 1e-9 && fabs(r.itl_max_ms - 10) < 1e-9 &&
	      fabs(r.e2e_ms - 141) < 1e-9);
	CHECK(slo_request_meets(&s, &r));
	/* latency counts from the intended send time: 60 ms of lag makes TTFT 110 ms */
	x = sample(50, 10, 10, 60, g);
	slo_request_of(&x, &r);
	CHECK(fabs(r.ttft_ms - 110) < 1e-9 && !slo_request_meets(&s, &r));
	/* one long gap fails itl */
	x = sample(50, 10, 10, 0, g);
	g[4] = 30;
	slo_request_of(&x, &r);
	CHECK(fabs(r.itl_max_ms - 30) < 1e-9 && !slo_request_meets(&s, &r));
	/* two tokens per event: an event gap of 30 ms is 15 ms per token */
	x = sample(50, 10, 30, 0, g);
	x.token_events = 5;
	x.n_gaps = 4;
	slo_request_of(&x, &r);
	CHECK(fabs(r.itl_max_ms - 15) < 1e-9 && slo_request_meets(&s, &r));
	/* a one-token reply has no tpot/itl: those terms do not apply */
	x = sample(50, 1, 0, 0, g);
	slo_request_of(&x, &r);
	CHECK(isnan(r.tpot_ms) && isnan(r.itl_max_ms) && slo_request_meets(&s, &r));
	/* a failed request never meets */
	x = sample(50, 10, 10, 0, g);
	x.error = "stall";
	slo_request_of(&x, &r);
	CHECK(!r.ok && !slo_request_meets(&s, &r));
}

static void test_level(void)
{
	struct slo s;
	char err[256];
	CHECK(slo_parse("ttft=100ms,ttft_p90=80ms", &s, err, sizeof err) == 0);
	struct slo_request r[20];
	for (int i = 0; i < 20; i++)
		r[i] = (struct slo_request){ .ok = i != 19, .ttft_ms = i < 15 ? 10.0 * (i % 5) : 150, .tpot_ms = NAN,
					    .itl_max_ms = NAN, .e2e_ms = 200 };
	struct slo_level L;
	CHECK(slo_level_eval(&s, r, 20, 4.0, &L) == 0);
	CHECK_EQ_INT(L.good, 15);
	CHECK_EQ_INT(L.scheduled, 20);
	double lo, hi;
	CHECK(stats_wilson(15, 20, 0.95, &lo, &hi) == 0);
	CHECK_NEAR(L.low, lo, 1e-12);
	CHECK_NEAR(L.high, hi, 1e-12);
	CHECK_NEAR(L.low, 0.531299, 1e-5); /* Wilson 15/20 by hand: [0.531299, 0.888138] */
	CHECK_NEAR(L.high, 0.888138, 1e-5);
	CHECK_NEAR(L.goodput_rps, 15.0 / 4.0, 1e-12);
	/* p90 over the 19 successful: 150 ms > 80 ms */
	CHECK(!L.level_terms_met && strstr(L.failed, "ttft_p90"));
	CHECK(slo_level_eval(&s, r, 0, 1, &L) == -EINVAL);
}

int main(void)
{
	gsl_set_error_handler_off();
	test_parse();
	test_requests();
	test_level();
	return test_done();
}
