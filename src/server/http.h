/* http — the server's HTTP/1.1 front: one epoll loop on one thread.
 * Arguments are borrowed; the server owns its connections. Every function here
 * except http_server_wake runs on the loop thread (inside
 * http_server_run or a callback it makes). */
#ifndef SIXI_SERVER_HTTP_H
#define SIXI_SERVER_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_server;
struct http_conn;

struct http_request {
	const char *method;      /* "GET", "POST", ... */
	const char *path;        /* without the query string */
	const char *body;        /* NUL-terminated copy, body_len bytes */
	size_t body_len;
};

struct http_config {
	const char *host;            /* address to bind; "127.0.0.1" unless told otherwise */
	int port;                    /* 0 picks a free port */
	size_t max_body_bytes;       /* larger bodies get 413 */
	size_t max_header_bytes;     /* larger header blocks get 431 */
	int64_t header_timeout_ns;   /* the whole header block must arrive within this: 408 */
	int64_t body_timeout_ns;     /* and the body within this after the headers */
	int64_t idle_timeout_ns;     /* keep-alive connections idle longer are closed */
	int max_conns;               /* beyond this, new connections get 503 and are closed */
	size_t max_out_bytes;        /* a client this far behind on reading is dropped */
};

/* Called once per complete request; the handler must eventually answer it with
 * http_respond or http_stream_begin/..._end (now or from a later callback). */
typedef void (*http_handler_fn)(void *ctx, struct http_conn *c, const struct http_request *req);

struct http_server *http_server_create(const struct http_config *cfg, http_handler_fn handler, void *ctx,
				       char *err, size_t errlen);
void http_server_destroy(struct http_server *s);
/* The port actually bound (useful with port 0). */
int http_server_port(const struct http_server *s);
/* Callback run on the loop thread after http_server_wake (wakes coalesce). */
void http_server_set_wake(struct http_server *s, void (*fn)(void *arg), void *arg);
/* Watches fd (e.g. a signalfd); fn runs on the loop thread when it is readable. */
__attribute__((warn_unused_result)) int http_server_watch_fd(struct http_server *s, int fd, void (*fn)(void *arg),
							       void *arg);
/* Runs until http_server_shutdown has drained; 0 or -errno. */
__attribute__((warn_unused_result)) int http_server_run(struct http_server *s);
/* Thread-safe. */
void http_server_wake(struct http_server *s);
/* Stop accepting, close idle connections, let pending output drain for at most
 * drain_ns, then return from http_server_run. Loop thread only. */
void http_server_shutdown(struct http_server *s, int64_t drain_ns);

/* Whole response with Content-Length. */
void http_respond(struct http_conn *c, int status, const char *content_type, const char *body, size_t len);
/* Chunked response: begin, any number of writes, end. */
void http_stream_begin(struct http_conn *c, int status, const char *content_type);
void http_stream_write(struct http_conn *c, const char *data, size_t len);
void http_stream_end(struct http_conn *c);
/* Attach per-request state; on_close(user) runs if the connection closes before
 * the response is complete (client gone, timeout, shutdown). Cleared by any
 * complete response. */
void http_conn_set_user(struct http_conn *c, void *user, void (*on_close)(void *user));
/* Number of open connections (for /metrics). */
int http_server_conn_count(const struct http_server *s);
#endif
