/* Unit tests for src/bench/scrape: Prometheus text is parsed into the known
 * families only (buckets dropped), counters are told from gauges by TYPE or name,
 * and a level's delta holds counter differences, gauges after, and the speculative
 * acceptance and prefix-cache ratios of sixi and vLLM names. */
#include "test.h"
#include "bench/scrape.h"
#include <cjson/cJSON.h>

static const char before[] =
	"# HELP sixi_requests_total Requests.\n# TYPE sixi_requests_total counter\nsixi_requests_total 10\n"
	"sixi_spec_drafted_total 100\nsixi_spec_accepted_total 40\nsixi_waiting_requests 3\n"
	"# TYPE vllm:spec_decode_num_draft_tokens counter\nvllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} 0\n"
	"# TYPE sixi_pass_seconds histogram\nsixi_pass_seconds_bucket{le=\"0.1\"} 4\nsixi_pass_seconds_sum 1.5\n"
	"sixi_pass_seconds_count 4\nprocess_cpu_seconds_total 99\ngo_goroutines 7\n";
static const char after[] =
	"sixi_requests_total 18\r\nsixi_spec_drafted_total 300\nsixi_spec_accepted_total 190\nsixi_waiting_requests 0\n"
	"# TYPE sixi_pass_seconds histogram\nsixi_pass_seconds_bucket{le=\"0.1\"} 9\nsixi_pass_seconds_sum 2.5\n"
	"sixi_pass_seconds_count 9 1700000000\nsixi_new_gauge 5\nsixi_bad notanumber\n";

int main(void)
{
	struct scrape b = { 0 }, a = { 0 };
	CHECK(scrape_parse(before, strlen(before), &b) == 0);
	CHECK(scrape_parse(after, strlen(after), &a) == 0);
	CHECK_EQ_INT(b.n, 7); /* 4 sixi + 1 vllm + sum + count; no bucket, no process_, go_ */
	CHECK_EQ_INT(a.n, 7);
	for (size_t i = 0; i < b.n; i++) {
		CHECK(strstr(b.v[i].key, "_bucket") == NULL && strncmp(b.v[i].key, "process", 7) != 0);
		if (!strcmp(b.v[i].key, "sixi_waiting_requests"))
			CHECK(!b.v[i].counter);
		if (!strcmp(b.v[i].key, "sixi_pass_seconds_sum") || !strcmp(b.v[i].key, "sixi_requests_total"))
			CHECK(b.v[i].counter);
		if (!strncmp(b.v[i].key, "vllm:", 5))
			CHECK(b.v[i].counter && !strcmp(b.v[i].key, "vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"}"));
	}
	a.ok = true;
	cJSON *d = scrape_delta(&b, &a);
	CHECK(d != NULL);
	const cJSON *c = cJSON_GetObjectItem(d, "counters"), *g = cJSON_GetObjectItem(d, "gauges");
	CHECK_NEAR(cJSON_GetObjectItem(c, "sixi_requests_total")->valuedouble, 8, 1e-12);
	CHECK_NEAR(cJSON_GetObjectItem(c, "sixi_pass_seconds_count")->valuedouble, 5, 1e-12);
	CHECK_NEAR(cJSON_GetObjectItem(c, "sixi_pass_seconds_sum")->valuedouble, 1.0, 1e-12);
	CHECK_NEAR(cJSON_GetObjectItem(g, "sixi_waiting_requests")->valuedouble, 0, 1e-12);
	CHECK_NEAR(cJSON_GetObjectItem(g, "sixi_new_gauge")->valuedouble, 5, 1e-12);
	CHECK_NEAR(cJSON_GetObjectItem(d, "spec_acceptance")->valuedouble, 150.0 / 200.0, 1e-12);
	cJSON_Delete(d);
	/* llama.cpp's names (its server's metrics endpoint with --metrics) */
	static const char lb[] = "llamacpp:spec_decode_num_draft_tokens_total 10\nllamacpp:spec_decode_num_accepted_tokens_total 2\n"
				 "llamacpp:prompt_tokens_total 100\nllamacpp:prompt_tokens_cached_total 0\nllamacpp:requests_deferred 1\n";
	static const char la[] = "llamacpp:spec_decode_num_draft_tokens_total 50\nllamacpp:spec_decode_num_accepted_tokens_total 32\n"
				 "llamacpp:prompt_tokens_total 300\nllamacpp:prompt_tokens_cached_total 50\nllamacpp:requests_deferred 0\n";
	struct scrape x = { 0 }, y = { 0 };
	CHECK(scrape_parse(lb, strlen(lb), &x) == 0 && scrape_parse(la, strlen(la), &y) == 0);
	y.ok = true;
	d = scrape_delta(&x, &y);
	CHECK(d && fabs(cJSON_GetObjectItem(d, "spec_acceptance")->valuedouble - 30.0 / 40.0) < 1e-12);
	CHECK(d && fabs(cJSON_GetObjectItem(d, "prefix_cache_hit_rate")->valuedouble - 50.0 / 200.0) < 1e-12);
	CHECK(d && cJSON_GetObjectItem(cJSON_GetObjectItem(d, "gauges"), "llamacpp:requests_deferred")->valuedouble == 0);
	cJSON_Delete(d);
	scrape_finish(&x);
	scrape_finish(&y);
	/* a server that did not answer gives nothing, not an error */
	struct scrape none = { 0 };
	CHECK(scrape_delta(&b, &none) == NULL);
	scrape_finish(&a);
	scrape_finish(&b);
	return test_done();
}
