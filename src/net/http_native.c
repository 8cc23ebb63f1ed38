/* http_native — see http_native.h.
 *
 * Why it exists: against a local server streaming as fast as it can, libcurl's
 * per-transfer setup (a fresh easy handle and receive buffer per request), its
 * header machinery and its copies were about a fifth of the load generator's
 * work per SSE event. This engine keeps what a benchmark needs and nothing else:
 *  - level-triggered epoll over every connection of one client (one thread);
 *  - one receive buffer per client (256 KiB): a ready socket is read once per
 *    wake, and the body bytes go from that buffer through net/http1 to on_data
 *    without a copy;
 *  - keep-alive connections pooled per host:port; a request sent on a reused
 *    connection that the server had already closed (no response byte yet) is
 *    retried once on a fresh connection, as other clients do;
 *  - deadlines (connect, first byte, stall, total) checked at most every 10 ms,
 *    so the scan stays O(active) per 10 ms, not per wake.
 * Error classes and details match the libcurl engine: connect (refused, bad URL,
 * unresolvable host), timeout (nothing received in time), stall (bytes stopped),
 * reset (closed or reset mid-response, malformed response), http (status >= 400,
 * after the body), aborted (on_data said stop), client (shutdown).
 * Not here: TLS (https:// goes through libcurl), proxies, redirects, auth,
 * compression, HTTP/2, pipelining. Names are resolved with getaddrinfo, blocking,
 * once per new connection (numeric addresses cost nothing; the last answer is kept). */
#include "net/http_native.h"
#include "net/http1.h"
#include "core/clock.h"
#include "core/fault.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define RECV_BYTES (256u << 10)
#define SCAN_EVERY_NS 10000000LL
#define KEY_MAX 300

struct nconn {
	int fd;
	char key[KEY_MAX];      /* "host:port" this connection goes to */
	bool connecting;        /* non-blocking connect in progress */
	bool want_out;          /* registered for EPOLLOUT */
	bool dead;              /* closed; freed after the current batch of events */
	bool in_idle;           /* in the idle pool */
	struct nxfer *x;        /* the transfer using it; NULL while idle */
	struct nconn *next;     /* idle pool or graveyard */
};

struct nxfer {
	struct http_xfer opt;
	struct http_result res;
	struct http_native *n;
	char key[KEY_MAX];
	char host[256];
	char port[8];
	char *req;              /* the whole request: head and body */
	size_t req_len, req_off;
	struct http1_parser hp;
	struct nconn *conn;
	int64_t last_byte_ns;   /* last byte of any kind received */
	int64_t connect_ns;     /* when the current connection attempt began */
	bool reused;            /* conn came from the idle pool */
	bool retried;
	bool got_bytes;         /* any response byte on the current connection */
	const char *doom;       /* set: ends with this class at the next run */
	char doom_detail[200];
	struct nxfer *prev, *next;
};

struct http_native {
	int ep;
	struct nxfer *head;
	size_t active;
	struct nconn *idle;
	struct nconn *grave;
	char *rbuf;
	int64_t next_scan_ns;
	size_t n_doomed;
	uint64_t ended;         /* transfers ended so far */
	/* the last name resolved */
	char rkey[KEY_MAX];
	struct sockaddr_storage raddr;
	socklen_t rlen;
};

struct http_native *http_native_create(void)
{
	struct http_native *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->rbuf = malloc(RECV_BYTES);
	n->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!n->rbuf || n->ep < 0) {
		int e = n->rbuf ? errno : ENOMEM;
		if (n->ep >= 0)
			close(n->ep);
		free(n->rbuf);
		free(n);
		errno = e;
		return NULL;
	}
	return n;
}

int http_native_fd(const struct http_native *n) { return n->ep; }
size_t http_native_active(const struct http_native *n) { return n->active; }

static void conn_close(struct http_native *n, struct nconn *c)
{
	if (c->dead)
		return;
	if (c->in_idle) {
		struct nconn **pp = &n->idle;
		while (*pp && *pp != c)
			pp = &(*pp)->next;
		if (*pp)
			*pp = c->next;
		c->in_idle = false;
	}
	epoll_ctl(n->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	c->x = NULL;
	c->next = n->grave;
	n->grave = c;
}

static void bury(struct http_native *n)
{
	while (n->grave) {
		struct nconn *c = n->grave;
		n->grave = c->next;
		free(c);
	}
}

static void doom(struct nxfer *x, const char *cls, const char *fmt, const char *arg)
{
	if (x->doom)
		return;
	x->doom = cls;
	snprintf(x->doom_detail, sizeof x->doom_detail, fmt, arg);
	x->n->n_doomed++;
}

/* Splits an http:// URL. 0, or -EINVAL with detail set. */
static int url_split(struct nxfer *x, const char *url, const char **path)
{
	const char *a = url + 7; /* after "http://" */
	size_t alen = strcspn(a, "/?#");
	const char *at = memchr(a, '@', alen);
	if (at) {
		doom(x, "connect", "%s: credentials in the URL are not supported by the native HTTP engine (use --http curl)",
		     url);
		return -EINVAL;
	}
	const char *h = a, *he, *pp = NULL;
	if (alen && *a == '[') {
		const char *rb = memchr(a, ']', alen);
		if (!rb) {
			doom(x, "connect", "%s: malformed URL (unclosed '[')", url);
			return -EINVAL;
		}
		h = a + 1;
		he = rb;
		if (rb + 1 < a + alen) {
			if (rb[1] != ':') {
				doom(x, "connect", "%s: malformed URL", url);
				return -EINVAL;
			}
			pp = rb + 2;
		}
	} else {
		const char *colon = memchr(a, ':', alen);
		he = colon ? colon : a + alen;
		if (colon)
			pp = colon + 1;
	}
	size_t hl = (size_t)(he - h);
	if (hl == 0 || hl >= sizeof x->host) {
		doom(x, "connect", "%s: malformed URL (no host)", url);
		return -EINVAL;
	}
	memcpy(x->host, h, hl);
	x->host[hl] = 0;
	long port = 80;
	if (pp) {
		const char *pe = a + alen;
		if (pp == pe || pe - pp > 5) {
			doom(x, "connect", "%s: malformed URL (bad port)", url);
			return -EINVAL;
		}
		port = 0;
		for (const char *q = pp; q < pe; q++) {
			if (*q < '0' || *q > '9') {
				doom(x, "connect", "%s: malformed URL (bad port)", url);
				return -EINVAL;
			}
			port = port * 10 + (*q - '0');
		}
		if (port < 1 || port > 65535) {
			doom(x, "connect", "%s: malformed URL (port out of range)", url);
			return -EINVAL;
		}
	}
	snprintf(x->port, sizeof x->port, "%ld", port);
	snprintf(x->key, sizeof x->key, "%s:%ld", x->host, port);
	*path = a + alen;
	return 0;
}

/* Resolves x's host (the last answer is cached). 0, or -1 with x doomed. */
static int resolve(struct http_native *n, struct nxfer *x)
{
	if (n->rlen && strcmp(n->rkey, x->key) == 0)
		return 0;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	int rc = getaddrinfo(x->host, x->port, &hints, &res);
	if (rc != 0 || !res) {
		char d[200];
		snprintf(d, sizeof d, "Could not resolve host: %.80s (%.80s)", x->host, gai_strerror(rc));
		doom(x, "connect", "%s", d);
		return -1;
	}
	memcpy(&n->raddr, res->ai_addr, res->ai_addrlen);
	n->rlen = res->ai_addrlen;
	snprintf(n->rkey, sizeof n->rkey, "%s", x->key);
	freeaddrinfo(res);
	return 0;
}

static void conn_watch(struct http_native *n, struct nconn *c, bool out)
{
	if (c->want_out == out)
		return;
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c };
	epoll_ctl(n->ep, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_out = out;
}

/* A new connection for x. 0, or -1 with x doomed. */
static int conn_open(struct http_native *n, struct nxfer *x)
{
	if (resolve(n, x))
		return -1;
	struct nconn *c = calloc(1, sizeof *c);
	if (!c) {
		doom(x, "client", "%s", "out of memory");
		return -1;
	}
	c->fd = socket(n->raddr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		doom(x, "connect", "cannot create a socket: %s", strerror(errno));
		free(c);
		return -1;
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	snprintf(c->key, sizeof c->key, "%s", x->key);
	x->connect_ns = clock_now_ns();
	if (connect(c->fd, (struct sockaddr *)&n->raddr, n->rlen) != 0) {
		if (errno != EINPROGRESS) {
			char d[200];
			snprintf(d, sizeof d, "Failed to connect to %.100s port %s: %s", x->host, x->port, strerror(errno));
			doom(x, "connect", "%s", d);
			close(c->fd);
			free(c);
			return -1;
		}
		c->connecting = true;
	}
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
	if (epoll_ctl(n->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
		doom(x, "client", "epoll: %s", strerror(errno));
		close(c->fd);
		free(c);
		return -1;
	}
	c->want_out = true;
	c->x = x;
	x->conn = c;
	x->reused = false;
	x->got_bytes = false;
	return 0;
}

static void xfer_free(struct nxfer *x)
{
	http1_parser_finish(&x->hp);
	free(x->req);
	free(x);
}

/* Ends x: on_done, then frees it. keep: the connection may serve another request. */
static void xfer_end(struct http_native *n, struct nxfer *x, const char *error, const char *detail, bool keep)
{
	struct http_result *r = &x->res;
	r->http_status = x->hp.status;
	r->error = error;
	r->detail[0] = 0;
	if (detail)
		snprintf(r->detail, sizeof r->detail, "%s", detail);
	if (!error && r->http_status >= 400) {
		r->error = "http";
		snprintf(r->detail, sizeof r->detail, "HTTP status %d", r->http_status);
	}
	r->t_done_ns = clock_now_ns();
	if (x->doom)
		n->n_doomed--;
	if (x->conn) {
		struct nconn *c = x->conn;
		x->conn = NULL;
		c->x = NULL;
		if (keep && !c->dead) {
			conn_watch(n, c, false);
			c->next = n->idle;
			c->in_idle = true;
			n->idle = c;
		} else {
			conn_close(n, c);
		}
	}
	if (x->prev)
		x->prev->next = x->next;
	else
		n->head = x->next;
	if (x->next)
		x->next->prev = x->prev;
	n->active--;
	n->ended++;
	if (x->opt.on_done)
		x->opt.on_done(x->opt.ud, r);
	xfer_free(x);
}

/* Sends what the socket takes. 0, or -errno of a failed send. */
static int xfer_send(struct http_native *n, struct nxfer *x)
{
	struct nconn *c = x->conn;
	while (x->req_off < x->req_len) {
		ssize_t w = send(c->fd, x->req + x->req_off, x->req_len - x->req_off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				conn_watch(n, c, true);
				return 0;
			}
			return -errno;
		}
		x->req_off += (size_t)w;
	}
	conn_watch(n, c, false);
	return 0;
}

/* The connection of x failed before a response byte: on a reused connection the
 * server may simply have closed it while idle, so try once more on a new one. */
static bool xfer_retry(struct http_native *n, struct nxfer *x)
{
	if (!x->reused || x->retried || x->got_bytes)
		return false;
	conn_close(n, x->conn);
	x->conn = NULL;
	x->retried = true;
	x->req_off = 0;
	http1_parser_reset(&x->hp);
	conn_open(n, x); /* on failure x is doomed and ends at the next run */
	return true;
}

static void xfer_fail_io(struct http_native *n, struct nxfer *x, int err, const char *what)
{
	if (xfer_retry(n, x))
		return;
	char d[200];
	snprintf(d, sizeof d, "%s: %s", what, strerror(err));
	xfer_end(n, x, "reset", d, false);
}

int http_native_start(struct http_native *n, const struct http_xfer *opt)
{
	struct nxfer *x = calloc(1, sizeof *x);
	if (!x)
		return -ENOMEM;
	x->opt = *opt;
	x->n = n;
	http1_parser_init(&x->hp, 0);
	const char *path = "";
	int bad = url_split(x, opt->url, &path);
	if (!bad) {
		size_t plen = strcspn(path, "#");
		char lenhdr[64] = "";
		if (opt->body)
			snprintf(lenhdr, sizeof lenhdr, "Content-Length: %zu\r\n", opt->body_len);
		bool std_port = strcmp(x->port, "80") == 0;
		bool v6 = strchr(x->host, ':') != NULL;
		size_t cap = plen + strlen(x->host) + 256 + (opt->body ? opt->body_len : 0);
		x->req = malloc(cap);
		if (!x->req) {
			xfer_free(x);
			return -ENOMEM;
		}
		int hl = snprintf(x->req, cap,
				  "%s %s%.*s HTTP/1.1\r\nHost: %s%s%s%s%s\r\nAccept: text/event-stream, application/json\r\n"
				  "Content-Type: application/json\r\n%s\r\n",
				  opt->body ? "POST" : "GET", plen && path[0] == '/' ? "" : "/", (int)plen, path, v6 ? "[" : "",
				  x->host, v6 ? "]" : "", std_port ? "" : ":", std_port ? "" : x->port, lenhdr);
		if (hl < 0 || (size_t)hl >= cap) {
			xfer_free(x);
			return -ENOMEM;
		}
		if (opt->body)
			memcpy(x->req + hl, opt->body, opt->body_len);
		x->req_len = (size_t)hl + (opt->body ? opt->body_len : 0);
	}
	x->res.t_send_ns = clock_now_ns();
	x->last_byte_ns = x->res.t_send_ns;
	x->next = n->head;
	if (n->head)
		n->head->prev = x;
	n->head = x;
	n->active++;
	if (bad)
		return 0;
	/* a pooled connection to the same place, else a new one */
	struct nconn **pp = &n->idle;
	while (*pp && strcmp((*pp)->key, x->key) != 0)
		pp = &(*pp)->next;
	if (*pp) {
		struct nconn *c = *pp;
		*pp = c->next;
		c->next = NULL;
		c->in_idle = false;
		c->x = x;
		x->conn = c;
		x->reused = true;
		x->connect_ns = x->res.t_send_ns;
		int rc = xfer_send(n, x);
		if (rc && !xfer_retry(n, x))
			doom(x, "reset", "sending the request: %s", strerror(-rc));
		return 0;
	}
	if (conn_open(n, x) == 0 && !x->conn->connecting) {
		int rc = xfer_send(n, x);
		if (rc)
			doom(x, "reset", "sending the request: %s", strerror(-rc));
	}
	return 0;
}

/* Body bytes from http1: first-byte time, fault injection, the caller's on_data. */
static int on_body(void *ud, const char *p, size_t len)
{
	struct nxfer *x = ud;
	if (!len)
		return 0;
	int64_t now = x->last_byte_ns;
	if (!x->res.t_first_byte_ns)
		x->res.t_first_byte_ns = now;
	x->res.body_bytes += len;
	if (fault_hit(FAULT_READ)) /* fault injection (tests only: SIXI_FAULT, core/fault.h) */
		return 1;
	if (x->opt.on_data && x->opt.on_data(x->opt.ud, p, len, now) != 0)
		return 1;
	return 0;
}

static void conn_readable(struct http_native *n, struct nconn *c)
{
	struct nxfer *x = c->x;
	for (;;) {
		ssize_t r = recv(c->fd, n->rbuf, RECV_BYTES, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (!x) {
			/* idle: the server closed it, or sent what nobody asked for */
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || r > 0)
				conn_close(n, c);
			return;
		}
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			xfer_fail_io(n, x, errno, "receiving the response");
			return;
		}
		if (r == 0) {
			if (xfer_retry(n, x))
				return;
			if (http1_parser_eof(&x->hp) == 0)
				xfer_end(n, x, NULL, NULL, false);
			else
				xfer_end(n, x, "reset", x->hp.error, false);
			return;
		}
		x->last_byte_ns = clock_now_ns();
		x->got_bytes = true;
		long used = http1_parser_feed(&x->hp, n->rbuf, (size_t)r, on_body, x);
		if (used < 0) {
			if (used == -ECANCELED)
				xfer_end(n, x, "aborted", "the body callback stopped the transfer", false);
			else if (used == -ENOMEM)
				xfer_end(n, x, "client", "out of memory", false);
			else
				xfer_end(n, x, "reset", x->hp.error, false);
			return;
		}
		if (x->hp.done) {
			/* bytes beyond the response: the connection is out of step; do not reuse it */
			xfer_end(n, x, NULL, NULL, x->hp.keep_alive && (size_t)used == (size_t)r);
			return;
		}
		if ((size_t)r < RECV_BYTES)
			return; /* drained: level-triggered epoll says when there is more */
	}
}

static void conn_writable(struct http_native *n, struct nconn *c)
{
	struct nxfer *x = c->x;
	if (!x) {
		conn_watch(n, c, false);
		return;
	}
	if (c->connecting) {
		int err = 0;
		socklen_t el = sizeof err;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			err = errno;
		if (err == EINPROGRESS || err == EALREADY)
			return;
		if (err) {
			char d[200];
			snprintf(d, sizeof d, "Failed to connect to %.100s port %s: %s", x->host, x->port, strerror(err));
			xfer_end(n, x, "connect", d, false);
			return;
		}
		c->connecting = false;
	}
	int rc = xfer_send(n, x);
	if (rc)
		xfer_fail_io(n, x, -rc, "sending the request");
}

static void scan_deadlines(struct http_native *n, int64_t now)
{
	struct nxfer *x = n->head;
	while (x) {
		struct nxfer *next = x->next;
		const struct http_xfer *o = &x->opt;
		char d[128];
		const char *cls = NULL;
		int64_t ct = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
		if (x->doom) {
			xfer_end(n, x, x->doom, x->doom_detail, false);
			x = next;
			continue;
		}
		if (x->conn && x->conn->connecting && now - x->connect_ns > ct * 1000000LL) {
			cls = "timeout";
			snprintf(d, sizeof d, "Connection timed out after %lld milliseconds", (long long)ct);
		} else if (!x->res.t_first_byte_ns && o->first_byte_timeout_ms > 0 &&
			   now - x->res.t_send_ns > o->first_byte_timeout_ms * 1000000LL) {
			cls = "timeout";
			snprintf(d, sizeof d, "no response byte within %lld ms", (long long)o->first_byte_timeout_ms);
		} else if (x->res.t_first_byte_ns && o->stall_timeout_ms > 0 &&
			   now - x->last_byte_ns > o->stall_timeout_ms * 1000000LL) {
			cls = "stall";
			snprintf(d, sizeof d, "stream stalled: no byte for %lld ms", (long long)o->stall_timeout_ms);
		} else if (o->total_timeout_ms > 0 && now - x->res.t_send_ns > o->total_timeout_ms * 1000000LL) {
			cls = x->res.t_first_byte_ns ? "stall" : "timeout";
			snprintf(d, sizeof d, "Operation timed out after %lld milliseconds", (long long)o->total_timeout_ms);
		}
		if (cls)
			xfer_end(n, x, cls, d, false);
		x = next;
	}
}

static size_t end_doomed(struct http_native *n)
{
	size_t done = 0;
	struct nxfer *x = n->head;
	while (x && n->n_doomed) {
		struct nxfer *next = x->next;
		if (x->doom) {
			xfer_end(n, x, x->doom, x->doom_detail, false);
			done++;
		}
		x = next;
	}
	return done;
}

size_t http_native_run(struct http_native *n, int64_t timeout_ns)
{
	uint64_t ended0 = n->ended;
	size_t done = n->n_doomed ? end_doomed(n) : 0;
	int wait_ms = done ? 0 : (int)((timeout_ns + 999999) / 1000000LL);
	if (wait_ms > 50)
		wait_ms = 50; /* wake often enough for the deadlines */
	if (wait_ms < 0)
		wait_ms = 0;
	struct epoll_event evs[256];
	int k = n->active || n->idle ? epoll_wait(n->ep, evs, 256, wait_ms) : 0;
	for (int i = 0; i < k; i++) {
		struct nconn *c = evs[i].data.ptr;
		if (c->dead)
			continue;
		if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
			if (c->connecting || (c->want_out && c->x))
				conn_writable(n, c);
			if (c->dead)
				continue;
		}
		if (!c->connecting && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
			conn_readable(n, c);
	}
	bury(n);
	int64_t now = clock_now_ns();
	if (now >= n->next_scan_ns || n->n_doomed) {
		scan_deadlines(n, now);
		n->next_scan_ns = now + SCAN_EVERY_NS;
		bury(n);
	}
	return (size_t)(n->ended - ended0);
}

void http_native_destroy(struct http_native *n)
{
	if (!n)
		return;
	while (n->head) {
		struct nxfer *x = n->head;
		xfer_end(n, x, "client", "client shut down", false);
	}
	while (n->idle) {
		struct nconn *c = n->idle;
		n->idle = c->next;
		conn_close(n, c);
	}
	bury(n);
	close(n->ep);
	free(n->rbuf);
	free(n);
}
