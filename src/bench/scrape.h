/* scrape — a server's own Prometheus metrics (/metrics, text format 0.0.4) before
 * and after a level, and what changed: counters as deltas, gauges as the value
 * after, plus the ratios a benchmark wants when their counters are there
 * (speculative acceptance = accepted / drafted tokens; prefix cache hit rate).
 * Only the families of the servers it knows are kept: vllm:*, sglang:*,
 * llamacpp:* and sixi_* (histogram buckets are dropped; their _sum and _count
 * are counters). A server without /metrics gives an empty scrape, not an error:
 * the level is measured the same. Arguments are borrowed; struct scrape is the
 * caller's (scrape_finish frees its samples). */
#ifndef SIXI_BENCH_SCRAPE_H
#define SIXI_BENCH_SCRAPE_H
#include <stdbool.h>
#include <stddef.h>

struct cJSON;

struct scrape_sample {
	char key[192];           /* name and labels as the server wrote them */
	double value;
	bool counter;            /* TYPE counter, a _total name, or a histogram's _sum/_count */
};

struct scrape {
	struct scrape_sample *v; /* (n) */
	size_t n, cap;
	bool ok;                 /* the server answered 200 with metrics */
};

/* Parses exposition text. 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int scrape_parse(const char *text, size_t len, struct scrape *out);
/* GET base_url/metrics (5 s) and parse; out->ok says whether it answered. 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int scrape_fetch(const char *base_url, struct scrape *out);
void scrape_finish(struct scrape *s);
/* {"counters": {key: delta}, "gauges": {key: after}, "spec_acceptance": r, ...};
 * NULL when after holds nothing. Caller deletes. */
struct cJSON *scrape_delta(const struct scrape *before, const struct scrape *after);
#endif
