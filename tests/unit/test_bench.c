/* Unit tests for src/bench: prompts are unique from the first word and
 * deterministic; percentiles interpolate; level summaries count tokens from usage,
 * not events, and invalidate points that lack usage or hit a cache. */
#include "test.h"
#include "bench/bench.h"
#include "bench/prompt.h"
#include <unistd.h>

static void test_prompts(void)
{
	char *a = prompt_make(1, 0, 0, 50), *b = prompt_make(1, 1, 0, 50), *c = prompt_make(1, 0, 1, 50),
	     *a2 = prompt_make(1, 0, 0, 50);
	CHECK(strcmp(a, a2) == 0);
	CHECK(strncmp(a, b, 10) != 0);
	CHECK(strncmp(a, c, 10) != 0);
	int words = 1;
	for (char *p = a; *p; p++)
		words += *p == ' ';
	CHECK_EQ_INT(words, 50);
	CHECK_EQ_INT(prompt_words_for(100, 2.0), 50);
	CHECK_EQ_INT(prompt_words_for(1, 5.0), 1);
	free(a);
	free(b);
	free(c);
	free(a2);
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static void test_percentile(void)
{
	double v[] = { 5, 1, 4, 2, 3 };
	CHECK_NEAR(bench_percentile(v, 5, 50), 3, 1e-12);
	CHECK_NEAR(bench_percentile(v, 5, 90), 4.6, 1e-12);
	CHECK_NEAR(bench_percentile(v, 5, 0), 1, 1e-12);
	CHECK_NEAR(bench_percentile(v, 5, 100), 5, 1e-12);
	CHECK(isnan(bench_percentile(v, 0, 50)));
	/* large arrays take the radix sort: same order as qsort, negatives and zeros included */
	size_t n = 5000;
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	CHECK(a && b);
	uint64_t s = 12345;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		double x = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
		a[i] = b[i] = (i % 3 == 0 ? -x * 1e3 : i % 3 == 1 ? x * 1e-6 : x * 1e12) * (i % 7 == 0 ? 0 : 1);
	}
	bench_percentile(a, n, 50);
	qsort(b, n, sizeof *b, cmp_d);
	size_t diff = 0;
	for (size_t i = 0; i < n; i++)
		diff += a[i] != b[i];
	CHECK(diff == 0);
	CHECK(a[0] < 0 && a[n - 1] > 1e9);
	free(a);
	free(b);
}

static struct bench_sample mk(int64_t level, int64_t ct, int64_t events, int64_t cached, int64_t t0, int64_t t_first,
			      int64_t t_last)
{
	struct bench_sample s = { .level = level, .phase = "measure", .prompt_tokens = 100, .cached_tokens = cached,
				  .completion_tokens = ct, .requested_tokens = ct, .sse_events = events + 2,
				  .token_events = events, .t_send = t0, .t_first_token = t_first, .t_last = t_last,
				  .t_done = t_last + 1000 };
	return s;
}

static void test_summary(void)
{
	char path[] = "/tmp/sixi-test-bench-XXXXXX";
	close(mkstemp(path));
	unlink(path);
	struct bench_cfg cfg;
	bench_cfg_defaults(&cfg);
	cfg.db_path = path;
	cfg.url = "http://127.0.0.1:1";
	char err[256];
	struct bench *b = bench_create(&cfg, "sweep", "{}", err, sizeof err);
	CHECK(b != NULL);
	if (!b)
		return;
	/* two requests of 64 tokens in 16 events each (4 tokens per event), 1 s apart */
	struct bench_sample s[3];
	s[0] = mk(4, 64, 16, 0, 0, 100000000, 1000000000);
	s[1] = mk(4, 64, 16, 0, 0, 200000000, 1000000000);
	s[2] = mk(8, 64, 16, 0, 0, 1, 2); /* another level: ignored */
	struct bench_level L;
	CHECK(bench_level_summarise(b, s, 3, 4, &L) == 0);
	CHECK_EQ_INT(L.requests, 2);
	CHECK(L.valid);
	CHECK_NEAR(L.tokens_per_event, 4.0, 1e-12);
	/* 128 tokens over the wall from send (0) to the last done (1 s + 1 us) */
	CHECK_NEAR(L.agg_tok_s, 128.0 / 1.000001, 1e-9);
	CHECK_NEAR(L.ttft_p50_ms, 150.0, 1e-9);
	CHECK_NEAR(L.prefill_tok_s, (1000.0 + 500.0) / 2, 1e-9); /* median of 100/0.1 and 100/0.2 */
	/* missing usage invalidates */
	s[1].completion_tokens = -1;
	CHECK(bench_level_summarise(b, s, 2, 4, &L) == 0);
	CHECK(!L.valid);
	CHECK(strstr(L.invalid_reason, "usage") != NULL);
	/* a cached prefix on a unique prompt invalidates */
	s[1] = mk(4, 64, 16, 32, 0, 100000000, 1000000000);
	CHECK(bench_level_summarise(b, s, 2, 4, &L) == 0);
	CHECK(!L.valid);
	CHECK(strstr(L.invalid_reason, "cached") != NULL);
	/* errors are counted by class and excluded from token sums */
	s[1].error = "stall";
	CHECK(bench_level_summarise(b, s, 2, 4, &L) == 0);
	CHECK(L.valid);
	CHECK_EQ_INT(L.errors, 1);
	CHECK(strstr(L.error_classes, "stall:1") != NULL);
	/* ignore_eos streams that end short are flagged */
	s[0].completion_tokens = 10;
	CHECK(bench_level_summarise(b, s, 1, 4, &L) == 0);
	CHECK_EQ_INT(L.short_streams, 1);
	bench_destroy(b, "done");
	unlink(path);
}

int main(void)
{
	test_prompts();
	test_percentile();
	test_summary();
	return test_done();
}
