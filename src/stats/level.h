/* level — the figures of one level of a serving benchmark (one point of a curve:
 * a concurrency, a prompt length, a rate), defined once. sixi-bench's live summary
 * and sixi-report's tables both compute them here, from the same requests, so the
 * two print the same numbers. What each figure means is in sixi(7), SERVING FIGURES.
 *
 * Percentiles are linear interpolations between order statistics (numpy's default).
 * Arguments are borrowed; nothing is kept after a call. */
#ifndef SIXI_STATS_LEVEL_H
#define SIXI_STATS_LEVEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One measured request of a level. Times are ns of one monotonic clock, 0 when the
 * moment did not happen. */
struct level_request {
	int64_t stream;
	int64_t prompt_tokens, cached_tokens, completion_tokens; /* -1: the server did not say */
	int64_t requested_tokens;                                /* max_tokens; 0 unknown */
	int64_t sse_events, token_events;                        /* all events, those with content */
	int64_t t_intended;    /* open-loop runs: when it was meant to start; 0 otherwise */
	int64_t t_send, t_first_token, t_last, t_done;
	const char *error;     /* error class, NULL on success */
	bool followup;         /* an agent's follow-up (its TTFT is also the follow-up wait) */
	const double *gaps_ms; /* gaps between token-bearing events, or NULL */
	size_t n_gaps;
};

/* What the run promised, which decides validity. */
struct level_rules {
	bool unique_prompts; /* a cached prompt token makes the level invalid */
	bool ignore_eos;     /* a stream short of max_tokens is counted */
};

struct level_figures {
	int64_t requests, ok, errors;
	char error_classes[256];         /* "stall:2 reset:1" */
	int64_t streams;                 /* distinct streams */
	double wall_s;                   /* first start to last t_done of the successful requests */
	double agg_tok_s;                /* sum of completion_tokens / wall */
	double stream_tok_s_mean, stream_tok_s_p50; /* per request: (ct-1)/(t_last-t_first_token) */
	double ttft_p50_ms, ttft_p90_ms, ttft_p99_ms; /* start to first token */
	double followup_ttft_p50_ms;     /* the same over follow-ups only; NAN when none */
	double tpot_ms_mean;
	double itl_p50_ms, itl_p99_ms;   /* per token: event gap / tokens per event */
	double gap_p50_ms, gap_p99_ms;   /* per event */
	double tokens_per_event;         /* completion_tokens / token-bearing events */
	double sse_events_per_token;     /* all SSE events / completion_tokens */
	double prefill_tok_s;            /* (prompt - cached) / TTFT, median */
	int64_t prompt_tokens_mean;
	int64_t short_streams;           /* ended before requested_tokens under ignore_eos */
	int64_t missing_usage, cached_hits;
	double events_per_s;
	bool valid;
	char invalid_reason[256];
};

/* A request's start: its intended time in an open-loop run, else its send time. */
int64_t level_request_start(const struct level_request *r);
/* The figures of requests r[0..n). 0, or -ENOMEM (out is then invalid, with the reason). */
__attribute__((warn_unused_result)) int level_figures_compute(const struct level_request *r, size_t n,
							     const struct level_rules *rules,
							     struct level_figures *out);

/* A figure across repeated runs of one level: each run's own value (a run's p99 is
 * that run's p99; requests are never pooled across runs into one percentile). */
struct level_spread {
	size_t n;          /* runs with a value */
	double mean, sd;   /* sd: sample (n - 1); NAN when n < 2 */
	double low, high;  /* Student-t 95 % interval of the mean; NAN when n < 2 */
	double cv;         /* sd / |mean|; NAN when n < 2 or mean == 0 */
	bool unstable;     /* cv > LEVEL_CV_UNSTABLE */
};
#define LEVEL_CV_UNSTABLE 0.20
/* The spread of v[0..n) (non-finite values must be left out by the caller). */
void level_spread_compute(const double *v, size_t n, struct level_spread *out);

/* Percentile (0..100) of v[0..n) with linear interpolation; sorts v. NAN when n == 0. */
double stats_percentile(double *v, size_t n, double pct);
/* The same over an array already sorted ascending (no sort). */
double stats_percentile_sorted(const double *v, size_t n, double pct);
#endif
