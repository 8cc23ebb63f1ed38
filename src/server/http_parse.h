/* http_parse — the request side of the server's HTTP/1.1 front, without
 * sockets: finds the end of a header block and parses the request line and the
 * headers the server acts on (Content-Length, Transfer-Encoding, Connection,
 * Expect). Pure functions over a byte buffer, so they can be fed arbitrary
 * bytes (tests/fuzz/fuzz_http.c). What it does not do: read the body, decode
 * percent-escapes, keep any state between calls. */
#ifndef SIXI_SERVER_HTTP_PARSE_H
#define SIXI_SERVER_HTTP_PARSE_H
#include <stdbool.h>
#include <stddef.h>

struct http_head {
	char method[16];   /* "GET", "POST", ... NUL-terminated */
	char path[1024];   /* request target without the query string */
	size_t hdr_bytes;  /* header block length including the blank line */
	size_t body_bytes; /* Content-Length, 0 when absent */
	bool keep_alive;
	bool expect_continue;
};

/* Length of the header block at the start of data[0..len) (through "\r\n\r\n"
 * or "\n\n"), or 0 when it has not fully arrived. */
size_t http_head_end(const char *data, size_t len);

/* Parses the header block data[0..hdr_bytes) (hdr_bytes from http_head_end).
 * Returns 0 with h filled, or the HTTP status to answer (400, 411, 413, 431)
 * with *why set to a static message. data need not be NUL-terminated. */
int http_head_parse(const char *data, size_t hdr_bytes, size_t max_body_bytes, struct http_head *h,
		    const char **why);
#endif
