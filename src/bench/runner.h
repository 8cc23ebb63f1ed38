/* runner — drives measured requests over T threads, each with its own
 * http_client loop (nothing shared on the hot path but the result sink).
 *
 * Work is a set of streams; a stream is an ordered list of requests sent one
 * after another (closed loop). A request with t_intended_ns > 0 is not sent
 * before that time (open loop: one request per stream, Poisson schedule), and
 * its latency is reported from the intended time, so a slow server cannot hide
 * queueing (no coordinated omission). Every request ends in exactly one call of
 * the sink, under a mutex, successful or not. Bodies are serialised before the
 * timed phase, unless a build hook makes them when they are next (multi-turn
 * replay: a turn carries the replies before it). The whole run is bounded by deadline_ns: requests not started by
 * then end as error "deadline" without being sent. */
#ifndef SIXI_BENCH_RUNNER_H
#define SIXI_BENCH_RUNNER_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "net/stream.h"

struct runner_req {
	char *body;              /* owned by the caller */
	size_t body_len;
	int64_t level, stream, seq;
	int64_t requested_tokens;
	int64_t t_intended_ns;   /* 0: as soon as the previous request of the stream ended */
	const char *phase;       /* "measure" | "warmup" | ... (borrowed) */
	const char *tag;         /* borrowed */
	void *user;              /* anything the workload wants back in the sink */
};

struct runner_stream {
	struct runner_req *reqs; /* borrowed */
	size_t n;
};

struct runner_opts {
	const char *url;         /* full URL incl. API path */
	bool stream;             /* requests ask for SSE */
	int threads;             /* >= 1 */
	int64_t deadline_ns;     /* absolute CLOCK_MONOTONIC; 0: none */
	int64_t connect_timeout_ms, first_byte_timeout_ms, stall_timeout_ms, total_timeout_ms;
	bool keep_event_times;
	bool keep_text;
	/* Called once per request (any thread, serialised by the runner). The stream's
	 * fields are valid during the call only. */
	void (*sink)(void *ud, const struct runner_req *rq, const struct oai_stream *s);
	void *ud;
	/* Optional: builds the body of a request whose body is NULL when it is next in
	 * its stream (after the previous one ended), on the stream's thread; it sets
	 * rq->body and rq->body_len (owned by the caller like any body) and may set
	 * rq->t_intended_ns (a think time). Requests of one stream are built and
	 * delivered in order on one thread. Non-zero: the request ends unsent as
	 * error "client". */
	int (*build)(void *ud, struct runner_req *rq, int64_t now_ns);
	/* Optional: once *stop is set, requests not yet sent end unsent as error
	 * "stopped" and transfers in flight are ended (the level was cut short). */
	const _Atomic bool *stop;
};

/* Runs all streams to completion or deadline. 0, or -errno when the run could not
 * start (e.g. threads). */
__attribute__((warn_unused_result)) int runner_run(const struct runner_opts *o, struct runner_stream *streams,
						   size_t n_streams);
#endif
