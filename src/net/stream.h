/* stream — one OpenAI-compatible generation request, streamed or not, on an
 * http_client: SSE framing, chunk interpretation, timestamps and counts.
 *
 * Records what a benchmark or an eval needs and nothing it would have to guess:
 * t_send, first byte, first token (content, reasoning or tool call), last token,
 * done; SSE events and token-bearing events; usage as the server reported it
 * (-1 when absent — never filled in from the event count); the finish reason; and
 * an error class when the request failed:
 *   connect | timeout | stall | reset | http | parse | size | server | client
 * The caller owns struct oai_stream (embed it) and must keep it alive until on_done. */
#ifndef SIXI_NET_STREAM_H
#define SIXI_NET_STREAM_H
#include <stdbool.h>
#include <stdint.h>
#include "core/buf.h"
#include "net/http.h"
#include "net/openai.h"
#include "net/sse.h"

struct oai_stream;
typedef void (*oai_stream_done_fn)(struct oai_stream *s, void *ud);
/* Called on each token-bearing chunk; return non-zero to close the stream early
 * (the caller then records why, e.g. a loop guard; error stays NULL, stopped_early = true). */
typedef int (*oai_stream_token_fn)(struct oai_stream *s, const struct openai_chunk *c, void *ud);

struct oai_stream_opts {
	const char *url;               /* full URL incl. path */
	const char *body;              /* request JSON */
	size_t body_len;
	bool stream;                   /* the body asked for stream: true */
	bool keep_text;                /* accumulate content and reasoning */
	bool keep_event_times;         /* keep the time of every token-bearing event */
	size_t max_event_bytes;        /* 0: 1 MiB */
	int64_t connect_timeout_ms, first_byte_timeout_ms, stall_timeout_ms, total_timeout_ms;
	oai_stream_token_fn on_token;  /* optional */
	oai_stream_done_fn on_done;
	void *ud;
};

struct oai_stream {
	struct oai_stream_opts opt;
	/* results, valid in on_done */
	int64_t t_send, t_first_byte, t_first_token, t_last_token, t_done; /* ns, 0 = never */
	int64_t prompt_tokens, cached_tokens, completion_tokens;          /* -1 = not reported */
	int64_t sse_events, token_events;
	bool done_marker;              /* [DONE] seen */
	bool stopped_early;            /* on_token asked to stop */
	char finish_reason[32];
	const char *error;             /* NULL on success */
	char error_detail[256];
	int http_status;
	struct buf content, reasoning; /* when keep_text */
	int64_t *event_t;              /* token-bearing event times (keep_event_times) */
	size_t n_event_t, cap_event_t;
	/* internal */
	struct sse_parser sse;
	struct openai_shape shape;     /* the stream's chunk shape (openai.h) */
	struct buf raw;                /* non-streamed body, or the start of an error body */
	const char *fail_class;
	int64_t now_ns;                /* arrival time of the bytes being parsed */
	bool failed_alloc;
};

/* Starts the request. 0 or -errno (then on_done is not called). */
__attribute__((warn_unused_result)) int oai_stream_start(struct http_client *c, struct oai_stream *s,
							 const struct oai_stream_opts *o);
/* Frees buffers (content, reasoning, event times). Safe on a zeroed struct. */
void oai_stream_finish(struct oai_stream *s);
#endif
