/* bench — `sixi-report bench`: throughput, per-stream rate, TTFT and prefill rate
 * per level (concurrency, prompt length, ...) of one or more bench runs, from
 * bench_requests.
 *
 * Warm-up and readiness requests (phase 'warmup', 'ready') are never counted.
 * A level with an invalid request — no usage (completion_tokens NULL), an error,
 * or cached_tokens > 0 where the workload promised unique prompts — is shown as
 * invalid with the reason and its numbers are left out, never averaged in.
 * Tokens are usage.completion_tokens; SSE events are shown beside as a ratio.
 * A sweep run with --repeats shows each run of a level on its own row, then each
 * figure across the runs (mean, Student-t interval, CV: stats/level.h's
 * level_spread, the live summary's definition); requests of different runs are
 * never pooled into one percentile. Plots: the four curves per level, throughput
 * against latency with the Pareto front, and each run's request timeline.
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

/* bench_requests.itl_json (a JSON array of ns, or NULL) as gaps in ms: *gaps_ms is the
 * caller's to free (NULL when there are none). 0, -EINVAL (not an array of
 * non-negative numbers) or -ENOMEM. */
__attribute__((warn_unused_result)) int report_bench_gaps(const char *itl_json, double **gaps_ms, size_t *n);

__attribute__((warn_unused_result)) int report_bench_args(int argc, char **argv, struct report_bench_opts *o,
							  char *err, size_t errlen);
__attribute__((warn_unused_result)) int report_bench_build(const struct report_bench_opts *o, struct report_doc *doc,
							   char *err, size_t errlen);
#endif
