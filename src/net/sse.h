/* sse — incremental parser for text/event-stream (the WHATWG "server-sent events"
 * format as OpenAI-compatible servers use it).
 *
 * Feed it bytes exactly as they arrive (any split, even inside "\r\n"); it calls
 * on_event once per complete event with the event name ("message" when absent)
 * and the data lines joined by '\n'. Comment lines (": ping") and unknown fields
 * are skipped; "id" and "retry" are ignored. An event whose data exceeds
 * max_event_bytes makes sse_parser_feed fail with -EMSGSIZE and the parser stays
 * failed: a benchmark must not buffer unbounded server output.
 * The parser owns its buffers; callback arguments are valid only during the call. */
#ifndef SIXI_NET_SSE_H
#define SIXI_NET_SSE_H
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"

/* Return 0 to continue, non-zero to stop feeding (propagated by sse_parser_feed). */
typedef int (*sse_event_fn)(void *ud, const char *event, const char *data, size_t data_len);

struct sse_parser {
	struct buf line;        /* bytes of the current, incomplete line */
	struct buf data;        /* data lines of the current event */
	const char *borrowed;   /* the event's only data line, still in the caller's bytes (no copy) */
	size_t borrowed_len;
	char event[64];         /* event field of the current event */
	int event_set;          /* event differs from "message" */
	int has_data;           /* a data field was seen (even empty) */
	int last_cr;            /* previous chunk ended in '\r': skip a leading '\n' */
	int failed;             /* sticky error */
	size_t max_event_bytes;
	uint64_t events;        /* events dispatched */
	uint64_t comments;      /* comment lines seen */
	sse_event_fn on_event;
	void *ud;
};

void sse_parser_init(struct sse_parser *p, size_t max_event_bytes, sse_event_fn fn, void *ud);
void sse_parser_finish(struct sse_parser *p);
void sse_parser_reset(struct sse_parser *p);
/* 0, -EMSGSIZE (event too large), -ENOMEM, or the callback's non-zero value. */
__attribute__((warn_unused_result)) int sse_parser_feed(struct sse_parser *p, const char *bytes, size_t n);
/* At end of stream: dispatches a final event that lacked its blank line. */
__attribute__((warn_unused_result)) int sse_parser_end(struct sse_parser *p);
#endif
