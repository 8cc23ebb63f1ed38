/* bench — what every workload of sixi-bench shares: the endpoint, readiness by
 * real generation, the server's fingerprint, prompt calibration, warm-up, the run
 * row, the per-request sink that writes one row per finished request, and the
 * per-level summary with its validity verdict.
 *
 * Measurement rules enforced here (DESIGN.md):
 *  1. tokens are usage.completion_tokens; SSE events are counted beside them;
 *  2. readiness is a generation that returns tokens, not /v1/models;
 *  3. warm-up requests are stored with phase 'warmup' and excluded;
 *  4. prompts are unique from the first word; cached_tokens > 0 invalidates a point;
 *  5. the fingerprint is taken per level; a level whose fingerprint differs from
 *     the run's first is never merged with it (it is marked invalid).
 * struct bench is opaque; arguments are borrowed. */
#ifndef SIXI_BENCH_BENCH_H
#define SIXI_BENCH_BENCH_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "net/openai.h"
#include "bench/runner.h"

struct store;

struct bench_cfg {
	const char *url;             /* base URL, e.g. http://127.0.0.1:8080 */
	const char *model;
	enum openai_api api;
	int64_t max_tokens;
	int64_t prompt_tokens;
	double temperature;          /* default 0.7 */
	bool ignore_eos;             /* default true */
	bool stream;                 /* default true */
	int threads;                 /* default: cores */
	int64_t rounds;              /* requests per stream per level (closed loop) */
	int64_t warmup;              /* warm-up requests (default 2) */
	int64_t ready_timeout_ms;
	int64_t connect_timeout_ms, first_byte_timeout_ms, stall_timeout_ms, total_timeout_ms;
	int64_t run_timeout_ms;      /* bound on each level */
	uint64_t seed;
	const char *db_path;
	const char *plot_dir;        /* NULL: beside the DB */
	bool json;
	bool no_plots;
	bool quiet;
	bool unique_prompts;         /* default true: a cached token invalidates the point */
	const char *extra_json;      /* merged into every request body */
};

void bench_cfg_defaults(struct bench_cfg *c);

struct bench;

/* Opens the DB and begins a run of the given workload (protocol_json is stored). */
struct bench *bench_create(const struct bench_cfg *cfg, const char *workload, const char *protocol_json,
			   char *err, size_t errlen);
/* Marks the run finished (status "done", "failed" or "interrupted") and frees. */
void bench_destroy(struct bench *b, const char *status);
int64_t bench_run_id(const struct bench *b);
/* Rows of this run that could not be stored (a write failed): non-zero means incomplete. */
int bench_store_errors(struct bench *b);
const struct bench_cfg *bench_config(const struct bench *b);
struct store *bench_store(struct bench *b);

/* Readiness, the fingerprint and warm-up are session/'s, the same as sixi-eval's. */
/* Sends real generation requests until one returns tokens, or the ready timeout
 * passes (then err says what the server last answered). Stores them as phase 'ready'. */
__attribute__((warn_unused_result)) int bench_wait_ready(struct bench *b, char *err, size_t errlen);
/* Takes the server's fingerprint (session_fingerprint); the run keeps the first.
 * *changed (may be NULL): it differs from the first one taken in this run.
 * 0, or -errno with err (out of memory, or the run could not keep it). */
__attribute__((warn_unused_result)) int bench_fingerprint(struct bench *b, bool *changed, char *err, size_t errlen);
const char *bench_fingerprint_hash(const struct bench *b);
/* Measures tokens per word from the server's usage.prompt_tokens. */
__attribute__((warn_unused_result)) int bench_calibrate(struct bench *b, char *err, size_t errlen);
double bench_tokens_per_word(const struct bench *b);
/* Builds a request body for a unique prompt of ~prompt_tokens; caller frees *body. */
__attribute__((warn_unused_result)) int bench_body(struct bench *b, int64_t stream, int64_t seq, int64_t prompt_tokens,
						   int64_t max_tokens, char **body, size_t *len);
/* Runs warm-up requests (stored, excluded). */
__attribute__((warn_unused_result)) int bench_warmup(struct bench *b, char *err, size_t errlen);

/* One finished request as the summaries need it. */
struct bench_sample {
	int64_t level, stream, seq;
	const char *phase;
	const char *tag;
	int64_t prompt_tokens, cached_tokens, completion_tokens, requested_tokens;
	int64_t sse_events, token_events;
	int64_t t_intended, t_send, t_first_token, t_last, t_done;
	const char *error;           /* static string or NULL */
	int http_status;
	double *gaps_ms;             /* inter-event gaps of token-bearing events (owned) */
	size_t n_gaps;
};

/* Runs streams and records every request (DB row + in-memory sample). Samples of this
 * call are appended to *samples / *n (caller frees with bench_samples_free). */
__attribute__((warn_unused_result)) int bench_run_streams(struct bench *b, struct runner_stream *streams,
							  size_t n_streams, struct bench_sample **samples, size_t *n);
void bench_samples_free(struct bench_sample *s, size_t n);

/* What a workload may add to a run of streams. All optional. */
struct bench_hooks {
	/* runner_opts.build: makes a body when its request is next (multi-turn). */
	int (*build)(void *ud, struct runner_req *rq, int64_t now_ns);
	/* Called for each finished request with the reply's text (content only; NULL
	 * when it failed), serialised, before the request's row is queued. */
	void (*on_reply)(void *ud, const struct runner_req *rq, const char *text, size_t len);
	/* Called after each sample is kept (serialised); x is valid during the call. */
	void (*on_sample)(void *ud, const struct bench_sample *x);
	void *ud;
	const _Atomic bool *stop;   /* runner_opts.stop */
};
/* bench_run_streams with hooks (h may be NULL). */
__attribute__((warn_unused_result)) int bench_run_streams_with(struct bench *b, struct runner_stream *streams,
							       size_t n_streams, const struct bench_hooks *h,
							       struct bench_sample **samples, size_t *n);
/* A request body for a given text prompt (completions) or messages array (chat,
 * messages_json non-NULL); max_tokens as given. Caller frees *body. */
__attribute__((warn_unused_result)) int bench_body_text(struct bench *b, const char *prompt,
							const char *messages_json, int64_t max_tokens, char **body,
							size_t *len);

/* Summary of one level (the measured samples of that level). */
struct bench_level {
	int64_t level;
	int64_t requests, ok, errors;
	char error_classes[256];       /* "stall:2 reset:1" */
	double wall_s;
	double agg_tok_s;              /* Σ completion_tokens / wall */
	double stream_tok_s_mean, stream_tok_s_p50;  /* per request: (ct-1)/(t_last-t_first_token) */
	double ttft_p50_ms, ttft_p90_ms, ttft_p99_ms;
	double tpot_ms_mean;
	double itl_p50_ms, itl_p99_ms;   /* per token: event gap / tokens per event */
	double gap_p50_ms, gap_p99_ms;   /* per event */
	double tokens_per_event;
	double prefill_tok_s;            /* (prompt - cached) / TTFT, median */
	int64_t prompt_tokens_mean;
	int64_t short_streams;           /* ended before requested_tokens under ignore_eos */
	int64_t missing_usage, cached_hits;
	double events_per_s;
	double headroom;                 /* client ceiling events/s ÷ events/s here; 0 unknown */
	bool valid;
	char invalid_reason[256];
	char fingerprint[65];
	/* with --slo (slo.h): per-request goodput and attainment, Wilson 95 % */
	bool has_slo;
	int64_t slo_scheduled, slo_good;
	double slo_attainment, slo_low, slo_high, goodput_rps;
	bool slo_level_met;            /* every percentile term holds */
	char slo_failed[192];
	int64_t repeat;                /* 1.. with --repeats, else 0 */
	struct cJSON *server_metrics;  /* with --metrics (scrape.h): owned by the workload, which deletes it */
};

/* 0, or -ENOMEM (the level is then marked invalid and must not be stored). */
__attribute__((warn_unused_result)) int bench_level_summarise(const struct bench *b, const struct bench_sample *s,
							      size_t n, int64_t level, struct bench_level *out);
/* The level as a JSON object (caller deletes). */
struct cJSON *bench_level_json(const struct bench_level *l);
/* Stores the level summary into runs.summary_json.levels[]. */
void bench_level_store(struct bench *b, const struct bench_level *l);
/* Percentile (0..100) of v[0..n) with linear interpolation; sorts v. NAN when n == 0. */
double bench_percentile(double *v, size_t n, double pct);
/* The same over an array already sorted ascending (no sort). */
double bench_percentile_sorted(const double *v, size_t n, double pct);
/* The client's ceiling (events/s) from the newest selftest in the DB; 0 if none. */
double bench_client_ceiling(struct bench *b);
#endif
