/* bench — `sixi-report bench`: throughput, per-stream rate, TTFT and prefill rate
 * per level (concurrency, prompt length, ...) of one or more bench runs, from
 * bench_requests.
 *
 * Warm-up and readiness requests (phase 'warmup', 'ready') are never counted.
 * A level with an invalid request — no usage (completion_tokens NULL), an error,
 * or cached_tokens > 0 where the workload promised unique prompts — is shown as
 * invalid with the reason and its numbers are left out, never averaged in.
 * Tokens are usage.completion_tokens; SSE events are shown beside as a ratio.
 * Reads the DB only. Arguments are borrowed. */
#ifndef SIXI_REPORT_BENCH_H
#define SIXI_REPORT_BENCH_H
#include <stddef.h>
#include <stdint.h>

struct report_doc;

#define REPORT_BENCH_MAX_RUNS 16

struct report_bench_opts {
	const char *db;
	int64_t runs[REPORT_BENCH_MAX_RUNS];
	size_t nruns;
};

__attribute__((warn_unused_result)) int report_bench_args(int argc, char **argv, struct report_bench_opts *o,
							  char *err, size_t errlen);
__attribute__((warn_unused_result)) int report_bench_build(const struct report_bench_opts *o, struct report_doc *doc,
							   char *err, size_t errlen);
#endif
