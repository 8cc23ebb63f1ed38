/* test_server_load — concurrency scaling and agent waits against a real
 * sixi-server process on the simulated Thor preset, run faster than real time
 * with --time-scale (every simulated cost and scheduler clamp is divided by
 * the scale, so ratios hold). Modes:
 *   scaling: aggregate tok/s at 32 streams >= 1.25 x at 16 with the straggler
 *            wait on; with it off and arrivals jittered, /metrics shows split
 *            passes and the 32-stream aggregate drops.
 *   agents:  16 agents x 17.8k-token documents x 2 follow-ups, arriving 8 s
 *            apart so that follow-ups meet other agents' loads: median
 *            follow-up wait (send to first token, simulated seconds) < 3 s with
 *            interleaving, >= 10 x longer without.
 * The throughput and wait figures come from wall time, so they are claims only
 * with `claims` as the second argument (the perf suite: `meson test --benchmark
 * --suite perf perf_server_scaling perf_server_agents`); the default run checks what
 * holds on any machine (every request answered with its tokens, no state copies,
 * no straggler wait when it is off, the prefix cache's reuse). The scheduling
 * rules behind the figures are checked in passes, not seconds, in
 * test_server_sched. Every loop is bounded in requests and in time. */
#include "test.h"
#include "server_harness.h"

#include <pthread.h>

#define SCALING_SCALE "10"
#define AGENTS_SCALE "100"
#define AGENTS 16
#define DOC_TOKENS 17800
#define AGENT_GAP_S 8.0

static bool claims; /* assert the wall-time figures too (a benchmark, not a test) */

/* ---- scaling ---- */

struct stream {
	int port;
	int id;
	int requests;
	int max_tokens;
	int64_t jitter_ns;     /* uniform wait before each request, real time */
	int64_t tokens;
	int errors;
	uint64_t rng;
};

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *stream_main(void *arg)
{
	struct stream *st = arg;
	for (int r = 0; r < st->requests; r++) {
		if (st->jitter_ns > 0)
			clock_sleep_ns((int64_t)(rnd(&st->rng) % (uint64_t)st->jitter_ns));
		/* 32 token ids unique to this stream and request: nothing to share. */
		struct buf body;
		buf_init(&body);
		int rc = buf_puts(&body, "{\"prompt\":[");
		for (int i = 0; i < 32; i++)
			rc |= buf_printf(&body, "%s%d", i ? "," : "", 1000 + st->id * 4096 + r * 64 + i);
		rc |= buf_printf(&body, "],\"max_tokens\":%d,\"temperature\":0.7,\"ignore_eos\":true,\"stream\":true,"
					"\"stream_options\":{\"include_usage\":true}}", st->max_tokens);
		struct harness_gen g;
		if (rc == 0 && harness_generate(st->port, "/v1/completions", body.data, &g, 60000) == 0 && g.ok &&
		    g.completion_tokens == st->max_tokens)
			st->tokens += g.completion_tokens;
		else
			st->errors++;
		harness_gen_finish(&g);
		buf_finish(&body);
	}
	return NULL;
}

/* Aggregate completion tokens per simulated second over n streams. */
static double run_streams(int port, int n, int requests, int max_tokens, int64_t jitter_ns, double scale, int *errors)
{
	struct stream st[64];
	pthread_t th[64];
	int64_t t0 = clock_now_ns();
	for (int i = 0; i < n; i++) {
		st[i] = (struct stream){ .port = port, .id = i, .requests = requests, .max_tokens = max_tokens,
					 .jitter_ns = jitter_ns, .rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1) };
		pthread_create(&th[i], NULL, stream_main, &st[i]);
	}
	int64_t tokens = 0;
	*errors = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		tokens += st[i].tokens;
		*errors += st[i].errors;
	}
	double sim_s = (double)(clock_now_ns() - t0) / 1e9 * scale;
	return (double)tokens / sim_s;
}

static int test_scaling(void)
{
	double scale = atof(SCALING_SCALE);
	struct harness_srv s;
	const char *on[] = { "--simulate", "thor", "--time-scale", SCALING_SCALE, NULL };
	if (!CHECK(harness_start(&s, on) == 0)) {
		harness_cleanup(&s, true);
		return 1;
	}
	int e16, e32;
	double tps16 = run_streams(s.port, 16, 3, 32, 0, scale, &e16);
	double tps32 = run_streams(s.port, 32, 3, 32, 0, scale, &e32);
	double splits_on = harness_metric(s.port, "sixi_split_passes_total");
	double passes_on = harness_metric(s.port, "sixi_passes_total");
	double copies = harness_metric(s.port, "sixi_state_copies_total");
	printf("straggler wait on: 16 streams %.1f tok/s, 32 streams %.1f tok/s (%.2fx); split passes %.0f of %.0f\n",
	       tps16, tps32, tps32 / tps16, splits_on, passes_on);
	CHECK_EQ_INT(e16 + e32, 0);
	CHECK(!claims || tps32 >= 1.25 * tps16);
	CHECK_EQ_INT((int)copies, 0);
	CHECK_EQ_INT(harness_stop(&s, SIGTERM), 0);
	harness_cleanup(&s, test_failures > 0);

	const char *off[] = { "--simulate", "thor", "--time-scale", SCALING_SCALE, "--straggler-wait", "off", NULL };
	if (!CHECK(harness_start(&s, off) == 0)) {
		harness_cleanup(&s, true);
		return 1;
	}
	int eoff;
	/* Arrivals jittered by up to 40 simulated ms. */
	double tps_off = run_streams(s.port, 32, 3, 32, (int64_t)(40e6 / scale), scale, &eoff);
	double splits = harness_metric(s.port, "sixi_split_passes_total");
	double passes = harness_metric(s.port, "sixi_passes_total");
	double waits = harness_metric(s.port, "sixi_straggler_waits_total");
	printf("straggler wait off, jittered arrivals: 32 streams %.1f tok/s (%.2fx the wait-on figure); "
	       "split passes %.0f of %.0f\n", tps_off, tps_off / tps32, splits, passes);
	CHECK_EQ_INT(eoff, 0);
	CHECK(!claims || splits > 0.2 * passes);
	CHECK(waits == 0);
	CHECK(!claims || tps_off < 0.9 * tps32);
	CHECK_EQ_INT(harness_stop(&s, SIGTERM), 0);
	harness_cleanup(&s, test_failures > 0);
	return 0;
}

/* ---- agents ---- */

struct agent {
	int port;
	int id;
	double scale;
	double wait_s[2];      /* simulated seconds from send to first token */
	int64_t cached[2];
	int errors;
};

static int agent_turn(struct agent *a, struct buf *conv, const char *question, int turn)
{
	if (buf_puts(conv, question) != 0)
		return -1;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "prompt", conv->data);
	cJSON_AddNumberToObject(o, "max_tokens", 32);
	cJSON_AddNumberToObject(o, "temperature", 0);
	cJSON_AddTrueToObject(o, "stream");
	cJSON *so = cJSON_AddObjectToObject(o, "stream_options");
	cJSON_AddTrueToObject(so, "include_usage");
	char *body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	struct harness_gen g;
	int rc = body ? harness_generate(a->port, "/v1/completions", body, &g, 120000) : -1;
	free(body);
	if (rc != 0 || !g.ok || g.completion_tokens != 32) {
		a->errors++;
		harness_gen_finish(&g);
		return -1;
	}
	if (turn > 0) {
		a->wait_s[turn - 1] = (double)(g.t_first_ns - g.t_send_ns) / 1e9 * a->scale;
		a->cached[turn - 1] = g.cached_tokens;
	}
	rc = buf_append(conv, g.text.data, g.text.len);
	harness_gen_finish(&g);
	return rc;
}

static void *agent_main(void *arg)
{
	struct agent *a = arg;
	/* Agents arrive 8 simulated seconds apart (a document takes ~14 s to load), so
	 * follow-ups come while later agents are still loading their documents. */
	clock_sleep_ns((int64_t)(a->id * AGENT_GAP_S * 1e9 / a->scale));
	struct buf conv;
	buf_init(&conv);
	uint64_t x = 0x2545F4914F6CDD1DULL * (uint64_t)(a->id + 1);
	int rc = 0;
	/* A document of DOC_TOKENS bytes (one simulated token each), unique per agent. */
	while (conv.len < DOC_TOKENS && rc == 0) {
		char w[12];
		int wl = 2 + (int)(rnd(&x) % 8);
		for (int i = 0; i < wl; i++)
			w[i] = (char)('a' + rnd(&x) % 26);
		w[wl] = ' ';
		rc = buf_append(&conv, w, (size_t)wl + 1);
	}
	static const char *const q[] = { "\nQ: What is this document about?\nA:", "\nQ: Which part matters most?\nA:",
					 "\nQ: What should happen next?\nA:" };
	for (int t = 0; t < 3 && rc == 0; t++)
		rc = agent_turn(a, &conv, q[t], t);
	buf_finish(&conv);
	return NULL;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* Median follow-up wait in simulated seconds; -1 on errors. */
static double run_agents(const char *const *args, double scale, double *worst, int64_t *min_cached)
{
	struct harness_srv s;
	if (!CHECK(harness_start(&s, args) == 0)) {
		harness_cleanup(&s, true);
		return -1;
	}
	struct agent ag[AGENTS];
	pthread_t th[AGENTS];
	for (int i = 0; i < AGENTS; i++) {
		ag[i] = (struct agent){ .port = s.port, .id = i, .scale = scale };
		pthread_create(&th[i], NULL, agent_main, &ag[i]);
	}
	double waits[2 * AGENTS];
	int errors = 0;
	*min_cached = INT64_MAX;
	for (int i = 0; i < AGENTS; i++) {
		pthread_join(th[i], NULL);
		errors += ag[i].errors;
		waits[2 * i] = ag[i].wait_s[0];
		waits[2 * i + 1] = ag[i].wait_s[1];
		for (int t = 0; t < 2; t++)
			*min_cached = ag[i].cached[t] < *min_cached ? ag[i].cached[t] : *min_cached;
	}
	CHECK_EQ_INT(errors, 0);
	CHECK_EQ_INT((int)harness_metric(s.port, "sixi_state_copies_total"), 0);
	CHECK_EQ_INT(harness_stop(&s, SIGTERM), 0);
	harness_cleanup(&s, test_failures > 0);
	qsort(waits, 2 * AGENTS, sizeof waits[0], cmp_double);
	*worst = waits[2 * AGENTS - 1];
	return errors ? -1 : (waits[AGENTS - 1] + waits[AGENTS]) / 2;
}

static int test_agents(void)
{
	double scale = atof(AGENTS_SCALE);
	const char *with[] = { "--simulate", "thor", "--time-scale", AGENTS_SCALE, "--prefix-cache", NULL };
	const char *without[] = { "--simulate", "thor", "--time-scale", AGENTS_SCALE, "--prefix-cache",
				  "--no-interleave", NULL };
	double worst_i, worst_n;
	int64_t cached_i, cached_n;
	double med_i = run_agents(with, scale, &worst_i, &cached_i);
	double med_n = run_agents(without, scale, &worst_n, &cached_n);
	printf("agents (16 x %d-token documents x 2 follow-ups, simulated Thor): median follow-up wait %.2f s "
	       "(worst %.2f s) with interleaving, %.1f s (worst %.1f s) without: %.0fx\n",
	       DOC_TOKENS, med_i, worst_i, med_n, worst_n, med_n / med_i);
	CHECK(med_i > 0 && med_n > 0);
	CHECK(!claims || med_i < 3.0);
	CHECK(!claims || med_n >= 10 * med_i);
	/* Follow-ups extend their conversation: the prefix cache must say so. */
	CHECK(cached_i >= DOC_TOKENS);
	CHECK(cached_n >= DOC_TOKENS);
	return 0;
}

int main(int argc, char **argv)
{
	if (harness_init() != 0)
		return 77;
	claims = argc > 2 && strcmp(argv[2], "claims") == 0;
	if (argc > 1 && strcmp(argv[1], "agents") == 0)
		test_agents();
	else
		test_scaling();
	return test_done();
}
