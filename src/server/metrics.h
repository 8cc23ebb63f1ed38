/* metrics — the server's counters and histograms, rendered as Prometheus text.
 * Counters are atomics (written from the scheduler's threads and the HTTP
 * loop); histograms take a mutex. Does not: label series (one model, one
 * server per process), compute quantiles (fixed buckets; Prometheus derives
 * them), or reset anything while the process lives. struct metrics is embedded by the server;
 * fields are written only through the functions and macros here. */
#ifndef SIXI_SERVER_METRICS_H
#define SIXI_SERVER_METRICS_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct buf;

#define METRICS_BUCKETS 16

struct metrics_hist {
	const double *bounds; /* (n_bounds) upper bounds, ascending; +Inf is implicit */
	int n_bounds;
	uint64_t counts[METRICS_BUCKETS + 1];
	double sum;
	uint64_t count;
};

struct metrics {
	pthread_mutex_t lock; /* histograms */
	_Atomic uint64_t requests;            /* generation requests accepted */
	_Atomic uint64_t requests_rejected;   /* answered with a 4xx */
	_Atomic uint64_t requests_cancelled;  /* client gone or shutdown */
	_Atomic uint64_t prompt_tokens;
	_Atomic uint64_t cached_tokens;
	_Atomic uint64_t completion_tokens;
	_Atomic uint64_t passes;
	_Atomic uint64_t rows;
	_Atomic uint64_t decode_rows;
	_Atomic uint64_t prefill_rows;
	_Atomic uint64_t prefill_chunks;      /* passes that carried prompt rows of a sequence */
	_Atomic uint64_t straggler_waits;
	_Atomic uint64_t split_passes;        /* passes that ran while a decoding sequence was not ready */
	_Atomic uint64_t unknown_fields;      /* request fields ignored */
	_Atomic uint64_t pass_errors;         /* forward passes that failed */
	_Atomic uint64_t spec_steps;          /* speculative verification passes (one sequence each) */
	_Atomic uint64_t spec_drafted;        /* drafted tokens verified */
	_Atomic uint64_t spec_accepted;       /* drafted tokens kept */
	_Atomic uint64_t state_forks;         /* prompt states copied into a vote's other samples */
	_Atomic uint64_t votes;               /* vote requests accepted */
	_Atomic uint64_t vote_samples_cancelled; /* samples stopped once their vote was decided */
	_Atomic uint64_t vote_tokens_saved;   /* max_tokens budget those samples left unspent */
	_Atomic uint64_t vote_ties;           /* votes that ended without a majority */
	_Atomic int64_t prefill_budget_ns;    /* the pass budget in force (prefill.h), device ns */
	_Atomic int64_t cost_base_ns;         /* the pass-cost model's current fit, device ns */
	_Atomic int64_t cost_decode_row_ns;
	_Atomic int64_t cost_prompt_row_ns;
	_Atomic int last_pass_failed;         /* 1 while the latest pass failed: /health says so */
	struct metrics_hist rows_per_pass;
	struct metrics_hist pass_seconds;
	struct metrics_hist queue_seconds;
	struct metrics_hist straggler_wait_seconds;
	struct metrics_hist prefill_wait_short;  /* arrival to first token, <= 256 prompt rows to prefill */
	struct metrics_hist prefill_wait_long;   /* the same, longer prompts */
	struct metrics_hist prefill_chunk_rows;  /* one sequence's prompt rows in one pass */
	struct metrics_hist pass_prompt_rows;    /* prompt rows of each pass */
};

void metrics_init(struct metrics *m);
void metrics_finish(struct metrics *m);
void metrics_observe(struct metrics *m, struct metrics_hist *h, double v);
#define metrics_set(m, field, v) atomic_store_explicit(&(m)->field, (v), memory_order_relaxed)
#define metrics_add(m, field, n) atomic_fetch_add_explicit(&(m)->field, (uint64_t)(n), memory_order_relaxed)

/* Gauges the server knows at render time. */
struct metrics_gauges {
	int64_t active_sequences;
	int64_t waiting_requests;
	int64_t connections;
	int64_t state_copies;
	int ready;
	int64_t mem_kv, mem_gdn_state, mem_conv, mem_rollback, mem_snapshot_ring; /* engine.h */
};
/* Appends the Prometheus text exposition. 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int metrics_render(struct metrics *m, const struct metrics_gauges *g,
							 struct buf *out);
#endif
