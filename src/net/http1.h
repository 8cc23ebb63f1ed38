/* http1 — an incremental parser for one HTTP/1.1 response (RFC 9112): status
 * line, header fields, and the body framed by Content-Length, by chunked
 * transfer coding (chunk extensions ignored, trailer fields read and dropped), or
 * by the connection closing.
 *
 * Bytes are fed exactly as they arrive, split anywhere (inside "\r\n", inside a
 * chunk-size line). The header block is collected into a bounded buffer of its
 * own; body bytes are handed to on_body as pointers into the caller's bytes
 * (zero-copy), one call per contiguous piece. Interim 1xx responses are skipped.
 * It reads only what a client needs: the status, the framing, and whether the
 * connection can be reused; all other fields are checked for shape and dropped.
 *
 * Does not: send anything, know about sockets or time, decode other transfer
 * codings (gzip: the client never asks for them), or accept HTTP/0.9 or HTTP/2.
 * A malformed response makes feed fail with -EBADMSG and a sentence in `error`;
 * the parser then stays failed. */
#ifndef SIXI_NET_HTTP1_H
#define SIXI_NET_HTTP1_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"

/* Body bytes; return non-zero to stop (feed then returns -ECANCELED). */
typedef int (*http1_body_fn)(void *ud, const char *p, size_t n);

enum http1_framing { HTTP1_NONE, HTTP1_LENGTH, HTTP1_CHUNKED, HTTP1_CLOSE };

struct http1_parser {
	int state;                  /* internal */
	int status;                 /* 0 until the final status line is read */
	enum http1_framing framing; /* known once the header block is complete */
	bool head_done;             /* the final header block is complete */
	bool done;                  /* the whole response has been read */
	bool keep_alive;            /* the connection may carry another request */
	uint64_t content_length;    /* bytes, when framing is HTTP1_LENGTH */
	uint64_t left;              /* bytes left in the body or the current chunk */
	uint64_t body_bytes;        /* body bytes delivered so far */
	size_t max_head;            /* bytes allowed for one header block */
	struct buf head;            /* the header block being collected */
	size_t line_start;          /* internal: offset in head of the line being collected */
	char error[160];            /* why feed failed */
};

/* max_head: 0 means 64 KiB. */
void http1_parser_init(struct http1_parser *p, size_t max_head);
/* Ready for the next response on the same connection (keeps memory). */
void http1_parser_reset(struct http1_parser *p);
void http1_parser_finish(struct http1_parser *p);
/* Parses bytes. Returns how many were consumed (all of them, unless the response
 * ended inside them: then the rest belongs to whatever follows), -EBADMSG for a
 * malformed response, -EMSGSIZE for a header block over max_head (error set in
 * both cases), -ENOMEM, or -ECANCELED when on_body asked to stop. */
__attribute__((warn_unused_result)) long http1_parser_feed(struct http1_parser *p, const char *b, size_t n,
							   http1_body_fn on_body, void *ud);
/* The connection closed. 0 when that completes the response (a close-delimited
 * body, or a response already done); -EPIPE with `error` set when it was cut short. */
__attribute__((warn_unused_result)) int http1_parser_eof(struct http1_parser *p);
#endif
