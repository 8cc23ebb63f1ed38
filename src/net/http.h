/* http — an HTTP client loop (our own HTTP/1.1 engine for http://, libcurl's
 * multi interface for https:// or on request): one struct
 * http_client per thread drives any number of concurrent transfers (wrk's model:
 * one loop per core, nothing shared on the hot path).
 *
 * Each transfer gets explicit timeouts: connect, first byte, stall (no byte for
 * that long) and total. Bytes are handed to on_data as they arrive, stamped with
 * clock_now_ns() at the moment the write callback runs. A transfer ends exactly
 * once, in on_done, with an error class (NULL on success) — never silently.
 * curl's codes are translated here and never leak upward.
 * Options and callbacks are borrowed for the transfer's lifetime; the body is copied. */
#ifndef SIXI_NET_HTTP_H
#define SIXI_NET_HTTP_H
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"

struct http_client;

struct http_result {
	int http_status;        /* 0 when no response line arrived */
	const char *error;      /* NULL, or: connect | timeout | stall | reset | http | aborted | client */
	char detail[256];       /* human-readable cause */
	int64_t t_send_ns;      /* when the transfer was handed to curl */
	int64_t t_first_byte_ns;/* first body byte, 0 if none */
	int64_t t_done_ns;
	uint64_t body_bytes;
};

struct http_xfer {
	const char *url;
	const char *body;            /* POST when non-NULL, else GET */
	size_t body_len;
	int64_t connect_timeout_ms;  /* 0: 10 s */
	int64_t first_byte_timeout_ms; /* 0: none */
	int64_t stall_timeout_ms;    /* 0: none */
	int64_t total_timeout_ms;    /* 0: none */
	/* Body bytes as they arrive; return non-zero to abort: the transfer then ends with
	 * error "aborted", and the caller, which knows why it aborted, records its own class. */
	int (*on_data)(void *ud, const char *p, size_t n, int64_t t_ns);
	void (*on_done)(void *ud, const struct http_result *r);
	void *ud;
};

/* NULL with errno on failure. */
struct http_client *http_client_create(void);
/* Aborts every transfer still running (on_done is called for each with error "client"). */
void http_client_destroy(struct http_client *c);
/* Starts a transfer; 0 or -errno. On failure on_done is not called. */
__attribute__((warn_unused_result)) int http_client_start(struct http_client *c, const struct http_xfer *x);
/* Runs the loop until something completes or timeout_ns passes; returns transfers still active. */
size_t http_client_run(struct http_client *c, int64_t timeout_ns);
size_t http_client_active(const struct http_client *c);
/* Blocking one-shot request for small bodies (fingerprints, probes). Returns 0 when a
 * response arrived (any status, in *status), else -errno with err set. */
__attribute__((warn_unused_result)) int http_fetch(const char *url, const char *post_body, int64_t timeout_ms,
						   struct buf *out, int *status, char *err, size_t errlen);
/* The same for a body of up to max_bytes (http_fetch: 16 MiB); a longer one is an error that
 * says so. */
__attribute__((warn_unused_result)) int http_fetch_max(const char *url, const char *post_body, int64_t timeout_ms,
						       size_t max_bytes, struct buf *out, int *status, char *err,
						       size_t errlen);

/* Which engine serves http:// URLs from now on: "native" (the default: our own
 * HTTP/1.1 client, net/http_native) or "curl". https:// always goes to libcurl.
 * 0, or -EINVAL for another name. Call before starting transfers. */
int http_set_engine(const char *name);
const char *http_engine(void);

/* Global init/cleanup, once per process from main. Init also reads SIXI_HTTP
 * (native or curl) as the engine's default; -EINVAL when it names neither. */
int http_global_init(void);
void http_global_cleanup(void);
#endif
