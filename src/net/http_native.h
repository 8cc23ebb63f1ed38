/* http_native — the plain-HTTP engine behind http_client for http:// URLs:
 * non-blocking sockets on one epoll set per client, HTTP/1.1 with keep-alive,
 * responses read by net/http1 straight out of one receive buffer per client.
 * Internal to net/ (http.c is its only user); see http.h for the contract it
 * keeps: the same timeouts, the same error classes and details, on_data with
 * the arrival time of the bytes, and exactly one on_done per started transfer. */
#ifndef SIXI_NET_HTTP_NATIVE_H
#define SIXI_NET_HTTP_NATIVE_H
#include <stddef.h>
#include <stdint.h>
#include "net/http.h"

struct http_native;

/* NULL with errno on failure. */
struct http_native *http_native_create(void);
/* Ends every transfer still running with error "client", closes every connection. */
void http_native_destroy(struct http_native *n);
/* Starts a transfer of an http:// URL. 0 or -ENOMEM; any other failure (a bad
 * URL, a refused connection) is reported through on_done from http_native_run. */
__attribute__((warn_unused_result)) int http_native_start(struct http_native *n, const struct http_xfer *x);
/* Waits up to timeout_ns for socket activity (0: does not wait), handles it and
 * the deadlines; returns how many transfers ended. */
size_t http_native_run(struct http_native *n, int64_t timeout_ns);
size_t http_native_active(const struct http_native *n);
/* The epoll descriptor: readable when http_native_run has work. */
int http_native_fd(const struct http_native *n);
#endif
