/* test_server_metrics — Prometheus text: counters, gauges, cumulative histogram buckets. */
#include "test.h"
#include "core/buf.h"
#include "server/metrics.h"

static double value(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atof(p + n + 1);
	return -1;
}

int main(void)
{
	struct metrics m;
	metrics_init(&m);
	metrics_add(&m, passes, 3);
	metrics_add(&m, split_passes, 1);
	metrics_add(&m, completion_tokens, 40);
	metrics_observe(&m, &m.rows_per_pass, 1);
	metrics_observe(&m, &m.rows_per_pass, 20);
	metrics_observe(&m, &m.rows_per_pass, 5000);
	metrics_observe(&m, &m.straggler_wait_seconds, 0.003);
	metrics_observe(&m, &m.prefill_wait_short, 0.2);
	metrics_observe(&m, &m.prefill_wait_long, 40);
	metrics_observe(&m, &m.prefill_wait_long, 50);
	metrics_observe(&m, &m.prefill_chunk_rows, 86);
	metrics_set(&m, prefill_budget_ns, 517000000);
	metrics_set(&m, cost_prompt_row_ns, 750000);
	struct metrics_gauges g = { .active_sequences = 7, .waiting_requests = 2, .connections = 9, .ready = 1 };
	struct buf b;
	buf_init(&b);
	CHECK_EQ_INT(metrics_render(&m, &g, &b), 0);
	CHECK_EQ_INT((int)value(b.data, "sixi_passes_total"), 3);
	CHECK_EQ_INT((int)value(b.data, "sixi_split_passes_total"), 1);
	CHECK_EQ_INT((int)value(b.data, "sixi_completion_tokens_total"), 40);
	CHECK_EQ_INT((int)value(b.data, "sixi_state_copies_total"), 0);
	CHECK_EQ_INT((int)value(b.data, "sixi_active_sequences"), 7);
	CHECK_EQ_INT((int)value(b.data, "sixi_ready"), 1);
	/* Buckets are cumulative; +Inf holds everything; sum and count agree. */
	CHECK_EQ_INT((int)value(b.data, "sixi_rows_per_pass_bucket{le=\"1\"}"), 1);
	CHECK_EQ_INT((int)value(b.data, "sixi_rows_per_pass_bucket{le=\"16\"}"), 1);
	CHECK_EQ_INT((int)value(b.data, "sixi_rows_per_pass_bucket{le=\"24\"}"), 2);
	CHECK_EQ_INT((int)value(b.data, "sixi_rows_per_pass_bucket{le=\"2048\"}"), 2);
	CHECK_EQ_INT((int)value(b.data, "sixi_rows_per_pass_bucket{le=\"+Inf\"}"), 3);
	CHECK_NEAR(value(b.data, "sixi_rows_per_pass_sum"), 5021, 1e-12);
	CHECK_EQ_INT((int)value(b.data, "sixi_rows_per_pass_count"), 3);
	CHECK_EQ_INT((int)value(b.data, "sixi_straggler_wait_seconds_bucket{le=\"0.002\"}"), 0);
	CHECK_EQ_INT((int)value(b.data, "sixi_straggler_wait_seconds_bucket{le=\"0.004\"}"), 1);
	/* One histogram in two labelled series, its HELP and TYPE once. */
	CHECK_EQ_INT((int)value(b.data, "sixi_prefill_wait_seconds_bucket{kind=\"short\",le=\"0.25\"}"), 1);
	CHECK_EQ_INT((int)value(b.data, "sixi_prefill_wait_seconds_bucket{kind=\"long\",le=\"30\"}"), 0);
	CHECK_EQ_INT((int)value(b.data, "sixi_prefill_wait_seconds_bucket{kind=\"long\",le=\"60\"}"), 2);
	CHECK_NEAR(value(b.data, "sixi_prefill_wait_seconds_sum{kind=\"long\"}"), 90, 1e-12);
	CHECK_EQ_INT((int)value(b.data, "sixi_prefill_wait_seconds_count{kind=\"short\"}"), 1);
	const char *t = strstr(b.data, "# TYPE sixi_prefill_wait_seconds histogram\n");
	CHECK(t && !strstr(t + 1, "# TYPE sixi_prefill_wait_seconds "));
	CHECK_EQ_INT((int)value(b.data, "sixi_prefill_chunk_rows_bucket{le=\"128\"}"), 1);
	CHECK_NEAR(value(b.data, "sixi_prefill_budget_seconds"), 0.517, 1e-12);
	CHECK_NEAR(value(b.data, "sixi_pass_cost_prompt_row_seconds"), 0.00075, 1e-12);
	/* Every metric has HELP and TYPE lines. */
	CHECK(strstr(b.data, "# TYPE sixi_pass_seconds histogram\n") != NULL);
	CHECK(strstr(b.data, "# TYPE sixi_requests_total counter\n") != NULL);
	CHECK(strstr(b.data, "# TYPE sixi_connections gauge\n") != NULL);
	buf_finish(&b);
	metrics_finish(&m);
	return test_done();
}
