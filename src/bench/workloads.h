/* workloads — the measured scenarios of sixi-bench, each on struct bench:
 *   sweep:   closed loop at each concurrency level (C streams x rounds requests)
 *   prefill: one cache-cold request per prompt length, alone, TTFT and prefill rate
 *   agents:  N agents each load a unique long document, then ask follow-ups while
 *            the others are still loading; each follow-up's wait vs the same
 *            follow-up measured alone
 *   rate:    open-loop Poisson arrivals at R requests/s for S seconds, latency
 *            from the intended send time
 * Each prints a table (or JSON) and stores rows and level summaries. 0 or -errno;
 * err says what went wrong. */
#ifndef SIXI_BENCH_WORKLOADS_H
#define SIXI_BENCH_WORKLOADS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bench/bench.h"

struct sweep_params { const int64_t *levels; size_t n_levels; };
struct prefill_params { const int64_t *lengths; size_t n_lengths; int64_t repeats; };
struct agents_params {
	int64_t agents, doc_tokens, followups, followup_tokens, answer_tokens;
	double stagger_s;        /* agent i starts at i x stagger_s (0: all at once) */
};
struct rate_params { double rps; double duration_s; };

int workload_sweep(struct bench *b, const struct sweep_params *p, FILE *out, char *err, size_t errlen);
int workload_prefill(struct bench *b, const struct prefill_params *p, FILE *out, char *err, size_t errlen);
int workload_agents(struct bench *b, const struct agents_params *p, FILE *out, char *err, size_t errlen);
int workload_rate(struct bench *b, const struct rate_params *p, FILE *out, char *err, size_t errlen);
#endif
