/* http — see http.h.
 *
 * Two engines behind one client: http:// URLs go to net/http_native (our own
 * epoll HTTP/1.1 client, the default: see http_native.c for why), https:// URLs,
 * and every URL when http_set_engine("curl") was called, go to libcurl's multi
 * interface. A client running transfers on both waits on curl's poll with the
 * native epoll descriptor added to it.
 *
 * curl_multi_poll waits for socket activity; after each wake the loop checks the
 * per-transfer deadlines (first byte, stall) itself, because curl's low-speed
 * options work in whole seconds and cannot express "no byte for 1.5 s". The
 * deadline scan is O(active) per wake, which stays far below the cost of the
 * bytes themselves at the stream counts a local server can take. */
#include "net/http.h"
#include "core/err.h"
#include "net/http_native.h"
#include "core/fault.h"
#include "core/clock.h"
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct xfer {
	struct http_xfer opt;
	struct http_client *client;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	struct http_result res;
	int64_t last_byte_ns;
	const char *forced_error;    /* set by the deadline scan */
	char forced_detail[128];
	struct xfer *prev, *next;
};

struct http_client {
	CURLM *multi;
	struct xfer *head;
	size_t active;              /* curl transfers */
	struct http_native *native; /* created on the first http:// transfer */
};

static bool use_native = true;
static size_t curl_run(struct http_client *c, int64_t timeout_ns);

int http_set_engine(const char *name)
{
	if (strcmp(name, "native") == 0)
		use_native = true;
	else if (strcmp(name, "curl") == 0)
		use_native = false;
	else
		return -EINVAL;
	return 0;
}

const char *http_engine(void) { return use_native ? "native" : "curl"; }

int http_global_init(void)
{
	const char *e = getenv("SIXI_HTTP");
	if (e && *e && http_set_engine(e) != 0) {
		fprintf(stderr, "sixi: SIXI_HTTP='%s' is not an HTTP engine (native or curl)\n", e);
		return -EINVAL;
	}
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}
void http_global_cleanup(void) { curl_global_cleanup(); }

struct http_client *http_client_create(void)
{
	struct http_client *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->multi = curl_multi_init();
	if (!c->multi) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 100000L);
	return c;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	int64_t now = clock_now_ns();
	if (!x->res.t_first_byte_ns)
		x->res.t_first_byte_ns = now;
	x->last_byte_ns = now;
	x->res.body_bytes += n;
	if (fault_hit(FAULT_READ)) /* fault injection (tests only: SIXI_FAULT, core/fault.h) */
		return 0;
	if (x->opt.on_data && x->opt.on_data(x->opt.ud, p, n, now) != 0)
		return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
	return n;
}

static void unlink_xfer(struct http_client *c, struct xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		c->head = x->next;
	if (x->next)
		x->next->prev = x->prev;
	c->active--;
}

static void free_xfer(struct xfer *x)
{
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	free(x->body);
	free(x);
}

int http_client_start(struct http_client *c, const struct http_xfer *opt)
{
	if (use_native && strncasecmp(opt->url, "http://", 7) == 0) {
		if (!c->native && !(c->native = http_native_create()))
			return -ENOMEM;
		return http_native_start(c->native, opt);
	}
	struct xfer *x = calloc(1, sizeof *x);
	if (!x)
		return -ENOMEM;
	x->opt = *opt;
	x->client = c;
	x->easy = curl_easy_init();
	if (!x->easy) {
		free(x);
		return -ENOMEM;
	}
	CURL *e = x->easy;
	curl_easy_setopt(e, CURLOPT_URL, opt->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 10000L);
	if (opt->total_timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)opt->total_timeout_ms);
	x->headers = curl_slist_append(NULL, "Content-Type: application/json");
	x->headers = curl_slist_append(x->headers, "Accept: text/event-stream, application/json");
	x->headers = curl_slist_append(x->headers, "Expect:");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	if (opt->body) {
		x->body = malloc(opt->body_len + 1);
		if (!x->body) {
			free_xfer(x);
			return -ENOMEM;
		}
		memcpy(x->body, opt->body, opt->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)opt->body_len);
	}
	x->res.t_send_ns = clock_now_ns();
	x->last_byte_ns = x->res.t_send_ns;
	if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
		free_xfer(x);
		return -EIO;
	}
	x->next = c->head;
	if (c->head)
		c->head->prev = x;
	c->head = x;
	c->active++;
	return 0;
}

static void classify(struct xfer *x, CURLcode code)
{
	struct http_result *r = &x->res;
	long status = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	r->http_status = (int)status;
	if (x->forced_error) {
		r->error = x->forced_error;
		snprintf(r->detail, sizeof r->detail, "%s", x->forced_detail);
		return;
	}
	switch (code) {
	case CURLE_OK:
		if (status >= 400) {
			r->error = "http";
			snprintf(r->detail, sizeof r->detail, "HTTP status %ld", status);
		}
		return;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		r->error = "connect";
		break;
	case CURLE_OPERATION_TIMEDOUT:
		r->error = r->t_first_byte_ns ? "stall" : "timeout";
		break;
	case CURLE_WRITE_ERROR:
		r->error = "aborted";
		break;
	default:
		r->error = "reset";
		break;
	}
	snprintf(r->detail, sizeof r->detail, "%s", curl_easy_strerror(code));
}

static void finish(struct http_client *c, struct xfer *x, CURLcode code)
{
	classify(x, code);
	x->res.t_done_ns = clock_now_ns();
	curl_multi_remove_handle(c->multi, x->easy);
	unlink_xfer(c, x);
	if (x->opt.on_done)
		x->opt.on_done(x->opt.ud, &x->res);
	free_xfer(x);
}

static void scan_deadlines(struct http_client *c, int64_t now)
{
	struct xfer *x = c->head;
	while (x) {
		struct xfer *next = x->next;
		const struct http_xfer *o = &x->opt;
		if (!x->res.t_first_byte_ns && o->first_byte_timeout_ms > 0 &&
		    now - x->res.t_send_ns > o->first_byte_timeout_ms * 1000000LL) {
			x->forced_error = "timeout";
			snprintf(x->forced_detail, sizeof x->forced_detail, "no response byte within %lld ms",
				 (long long)o->first_byte_timeout_ms);
		} else if (x->res.t_first_byte_ns && o->stall_timeout_ms > 0 &&
			   now - x->last_byte_ns > o->stall_timeout_ms * 1000000LL) {
			x->forced_error = "stall";
			snprintf(x->forced_detail, sizeof x->forced_detail, "stream stalled: no byte for %lld ms",
				 (long long)o->stall_timeout_ms);
		}
		if (x->forced_error)
			finish(c, x, CURLE_OPERATION_TIMEDOUT);
		x = next;
	}
}

size_t http_client_run(struct http_client *c, int64_t timeout_ns)
{
	size_t nat = c->native ? http_native_active(c->native) : 0;
	if (nat && !c->active) {
		http_native_run(c->native, timeout_ns);
		return http_client_active(c);
	}
	if (nat) {
		/* both engines busy: curl's poll also wakes for the native descriptor */
		size_t done = http_native_run(c->native, 0);
		if (done)
			timeout_ns = 0;
	}
	size_t curl_left = curl_run(c, timeout_ns);
	if (c->native && http_native_active(c->native))
		http_native_run(c->native, 0);
	(void)curl_left;
	return http_client_active(c);
}

static size_t curl_run(struct http_client *c, int64_t timeout_ns)
{
	int running = 0;
	curl_multi_perform(c->multi, &running);
	CURLMsg *m;
	int left;
	int completed = 0;
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct xfer *x = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		finish(c, x, m->data.result);
		completed++;
	}
	scan_deadlines(c, clock_now_ns());
	if (completed || !c->active)
		return c->active;
	int wait_ms = (int)(timeout_ns / 1000000LL);
	if (wait_ms > 50)
		wait_ms = 50; /* wake often enough for the deadline scan */
	if (wait_ms < 0)
		wait_ms = 0;
	struct curl_waitfd wfd = { .fd = c->native ? http_native_fd(c->native) : -1, .events = CURL_WAIT_POLLIN };
	curl_multi_poll(c->multi, wfd.fd >= 0 && http_native_active(c->native) ? &wfd : NULL,
			wfd.fd >= 0 && http_native_active(c->native) ? 1 : 0, wait_ms, NULL);
	curl_multi_perform(c->multi, &running);
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct xfer *x = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		finish(c, x, m->data.result);
	}
	return c->active;
}

size_t http_client_active(const struct http_client *c)
{
	return c->active + (c->native ? http_native_active(c->native) : 0);
}

void http_client_destroy(struct http_client *c)
{
	if (!c)
		return;
	while (c->head) {
		struct xfer *x = c->head;
		x->forced_error = "client";
		snprintf(x->forced_detail, sizeof x->forced_detail, "client shut down");
		finish(c, x, CURLE_ABORTED_BY_CALLBACK);
	}
	http_native_destroy(c->native);
	curl_multi_cleanup(c->multi);
	free(c);
}

struct fetch_sink {
	struct buf *b;
	size_t max;
	bool over;
};

static size_t fetch_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct fetch_sink *k = ud;
	size_t n = size * nmemb;
	if (k->b->len + n > k->max) {
		k->over = true;
		return 0;
	}
	return buf_append(k->b, p, n) ? 0 : n;
}

int http_fetch(const char *url, const char *post_body, int64_t timeout_ms, struct buf *out, int *status, char *err,
	       size_t errlen)
{
	return http_fetch_max(url, post_body, timeout_ms, 16u << 20, out, status, err, errlen); /* small probes */
}

int http_fetch_max(const char *url, const char *post_body, int64_t timeout_ms, size_t max_bytes, struct buf *out,
		   int *status, char *err, size_t errlen)
{
	CURL *e = curl_easy_init();
	if (!e) {
		err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct fetch_sink sink = { .b = out, .max = max_bytes };
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fetch_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 10000));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms > 0 && timeout_ms < 10000 ? timeout_ms : 10000));
	if (post_body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, post_body);
	CURLcode rc = curl_easy_perform(e);
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	*status = (int)code;
	if (rc != CURLE_OK && sink.over)
		err_set(err, errlen, "%s: the answer is longer than %zu bytes", url, max_bytes);
	else if (rc != CURLE_OK)
		err_set(err, errlen, "%s: %s", url, curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	return rc == CURLE_OK ? 0 : -EIO;
}
