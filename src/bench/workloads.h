/* workloads — the measured scenarios of sixi-bench, each on struct bench:
 *   sweep:   closed loop at each concurrency level (C streams x rounds requests)
 *   prefill: one cache-cold request per prompt length, alone, TTFT and prefill rate
 *   agents:  N agents each load a unique long document, then ask follow-ups while
 *            the others are still loading; each follow-up's wait vs the same
 *            follow-up measured alone
 *   rate:    open-loop arrivals (Poisson, gamma, constant, ramp, or a trace) at R
 *            requests/s for S seconds, latency from the intended send time
 *   replay:  multi-turn conversations from a prompt file
 *   prefix:  groups sharing a long prefix, the server's cached_tokens reported
 *   search:  bisection for the highest load that meets an SLO
 * Each prints a table (or JSON) and stores rows and level summaries. 0 or -errno;
 * err says what went wrong. */
#ifndef SIXI_BENCH_WORKLOADS_H
#define SIXI_BENCH_WORKLOADS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bench/arrival.h"
#include "bench/bench.h"

struct source;
struct dist;
struct slo;
struct arrival_trace;

/* Where prompts and lengths come from, and the SLO; every field optional. */
struct workload_inputs {
	const struct source *src;       /* prompts from a file (first user turn, cycled) */
	const struct dist *input_len;   /* synthetic prompt length (else --prompt-tokens) */
	const struct dist *output_len;  /* max_tokens per request (else --max-tokens) */
	const struct slo *slo;          /* goodput and attainment per level */
	bool metrics;                   /* scrape the server's /metrics before and after each level */
};

struct sweep_params {
	const int64_t *levels; size_t n_levels;
	int64_t repeats;                /* runs of every level, interleaved; summary across runs */
	const struct workload_inputs *in;
};
struct prefill_params { const int64_t *lengths; size_t n_lengths; int64_t repeats; };
struct agents_params {
	int64_t agents, doc_tokens, followups, followup_tokens, answer_tokens;
	double stagger_s;        /* agent i starts at i x stagger_s (0: all at once) */
};
struct rate_params {
	double rps; double duration_s;
	struct arrival arrival;
	const struct arrival_trace *trace; /* due times and lengths from a trace instead */
	const struct workload_inputs *in;
};
/* replay: conversations turn by turn, each turn sent with the whole history and the
 * model's own replies; `conversations` of them in flight at once */
struct replay_params {
	int64_t conversations, limit, max_turns;
	double think_s;                  /* wait after a reply before the next turn */
	const struct workload_inputs *in;
};
/* prefix: G groups, each a shared prefix of L tokens sent alone once (the prime),
 * then R requests of prefix + a unique question; cached_tokens reported */
struct prefix_params {
	int64_t groups, prefix_tokens, requests, question_tokens;
	const struct workload_inputs *in;
};
/* search: the highest rate (open loop) or concurrency (closed loop) whose SLO
 * attainment's lower 95 % bound meets target, by bisection */
struct search_params {
	bool concurrency;
	double lo, hi, target, tolerance;
	int64_t repeats, requests, max_probes;
	struct arrival arrival;
	const struct workload_inputs *in;
};

int workload_sweep(struct bench *b, const struct sweep_params *p, FILE *out, char *err, size_t errlen);
int workload_prefill(struct bench *b, const struct prefill_params *p, FILE *out, char *err, size_t errlen);
int workload_agents(struct bench *b, const struct agents_params *p, FILE *out, char *err, size_t errlen);
int workload_rate(struct bench *b, const struct rate_params *p, FILE *out, char *err, size_t errlen);
int workload_replay(struct bench *b, const struct replay_params *p, FILE *out, char *err, size_t errlen);
int workload_prefix(struct bench *b, const struct prefix_params *p, FILE *out, char *err, size_t errlen);
int workload_search(struct bench *b, const struct search_params *p, FILE *out, char *err, size_t errlen);
#endif
