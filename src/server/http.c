/* http — HTTP/1.1 server on our own epoll loop.
 *
 * Why our own loop and not libmicrohttpd: it adds no dependency, and the server
 * needs full control of two things a library hides. Streaming writes: tokens
 * are produced on other threads and pushed to the socket the moment they exist,
 * with one eventfd wake-up per batch of tokens instead of a library's polling of
 * a content callback. Slow and hostile clients: a header block must arrive
 * within a deadline (a client sending one byte a second gets 408), bodies are
 * capped before they are read (413), output is buffered per connection and a
 * client that stops reading is dropped once it is too far behind, and idle
 * keep-alive connections cost one small struct each (1,000 of them are fine).
 *
 * What it does: request line + headers, Content-Length bodies, Expect:
 * 100-continue, keep-alive and pipelining (one request at a time per
 * connection), chunked responses. What it does not do: TLS, chunked request
 * bodies (411), HTTP/2, multiple threads. Workload assumption: tens of busy
 * streaming connections and up to a few thousand idle ones; timeouts are
 * checked by a scan every 50 ms, which is cheap at that size. */
#include "server/http.h"
#include "core/err.h"
#include "server/http_parse.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum conn_state { CS_HEADERS, CS_BODY, CS_BUSY, CS_CLOSING };

struct http_conn {
	struct http_server *srv;
	int fd;
	enum conn_state state;
	struct buf in;            /* bytes received, not yet consumed */
	struct buf out;           /* bytes to send */
	int64_t deadline_ns;      /* for the current state; 0 = none */
	size_t hdr_bytes;         /* length of the header block incl. the blank line */
	size_t body_bytes;        /* Content-Length of the current request */
	bool keep_alive;
	bool streaming;           /* chunked response in progress */
	bool dead;                /* close at the next sweep */
	bool in_process;
	bool want_out;            /* EPOLLOUT registered */
	bool lingering;           /* response sent, write side shut, discarding input until EOF */
	char method[16];
	char path[1024];
	void *user;
	void (*on_close)(void *user);
	struct http_conn *prev, *next;
};

struct watch {
	int fd;
	void (*fn)(void *arg);
	void *arg;
};

struct http_server {
	struct http_config cfg;
	http_handler_fn handler;
	void *ctx;
	int listen_fd;
	int epoll_fd;
	int wake_fd;
	int port;
	void (*wake_fn)(void *arg);
	void *wake_arg;
	struct watch watches[4];
	int n_watches;
	struct http_conn *conns; /* doubly linked list */
	int n_conns;
	bool stopping;
	int64_t drain_deadline_ns;
	int64_t last_scan_ns;
};

/* epoll user data: small integers tag the server's own fds, pointers are conns. */
enum { TAG_LISTEN = 1, TAG_WAKE = 2, TAG_WATCH0 = 8 };

static const char *status_text(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

static void conn_update_events(struct http_conn *c)
{
	bool want = c->out.len > 0;
	if (want == c->want_out || c->dead)
		return;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0), .data.ptr = c };
	if (epoll_ctl(c->srv->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->want_out = want;
}

static void conn_flush(struct http_conn *c)
{
	while (c->out.len > 0 && !c->dead) {
		ssize_t w = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
		if (w > 0) {
			buf_consume(&c->out, (size_t)w);
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			break;
		} else {
			c->dead = true; /* peer gone */
		}
	}
	if (!c->dead && c->out.len > c->srv->cfg.max_out_bytes) {
		log_warn("dropping a client %zu bytes behind on reading", c->out.len);
		c->dead = true;
	}
	if (!c->dead && c->state == CS_CLOSING && c->out.len == 0 && !c->lingering) {
		/* Lingering close: stop sending, but read and discard what the client
		 * still sends (say the rest of a rejected 10 MB body) until it closes, so
		 * that our close does not reset the connection before it reads the answer. */
		shutdown(c->fd, SHUT_WR);
		c->lingering = true;
		c->deadline_ns = clock_now_ns() + 2000000000LL;
	}
	conn_update_events(c);
}

static void conn_put(struct http_conn *c, const char *p, size_t n)
{
	if (c->dead)
		return;
	if (buf_append(&c->out, p, n) != 0) {
		c->dead = true;
		return;
	}
}

static void conn_close_now(struct http_conn *c)
{
	struct http_server *s = c->srv;
	if (c->on_close) {
		void (*fn)(void *) = c->on_close;
		c->on_close = NULL;
		fn(c->user);
	}
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	buf_finish(&c->in);
	buf_finish(&c->out);
	free(c);
}

static void sweep_dead(struct http_server *s)
{
	struct http_conn *c = s->conns;
	while (c) {
		struct http_conn *next = c->next;
		if (c->dead)
			conn_close_now(c);
		c = next;
	}
}

static void process_input(struct http_conn *c);

/* A response finished: next request on this connection, or close. */
static void conn_response_done(struct http_conn *c)
{
	c->user = NULL;
	c->on_close = NULL;
	c->streaming = false;
	if (!c->keep_alive || c->srv->stopping) {
		c->state = CS_CLOSING;
		conn_flush(c);
		return;
	}
	c->state = CS_HEADERS;
	c->deadline_ns = clock_now_ns() + (c->in.len ? c->srv->cfg.header_timeout_ns : c->srv->cfg.idle_timeout_ns);
	conn_flush(c);
	if (!c->in_process && !c->dead)
		process_input(c);
}

static void put_head(struct http_conn *c, int status, const char *content_type, const char *extra)
{
	char head[512];
	int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nConnection: %s\r\n%s", status,
			 status_text(status), content_type, c->keep_alive && !c->srv->stopping ? "keep-alive" : "close",
			 extra);
	conn_put(c, head, (size_t)n);
}

void http_respond(struct http_conn *c, int status, const char *content_type, const char *body, size_t len)
{
	if (c->state == CS_CLOSING)
		return;
	if (status >= 400 && status != 404 && status != 405 && c->state != CS_BUSY)
		c->keep_alive = false; /* protocol-level errors: the input stream can't be trusted */
	char extra[64];
	snprintf(extra, sizeof extra, "Content-Length: %zu\r\n\r\n", len);
	put_head(c, status, content_type, extra);
	conn_put(c, body, len);
	conn_response_done(c);
}

void http_stream_begin(struct http_conn *c, int status, const char *content_type)
{
	put_head(c, status, content_type, "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
	c->streaming = true;
	conn_flush(c);
}

void http_stream_write(struct http_conn *c, const char *data, size_t len)
{
	if (!c->streaming || len == 0)
		return;
	char hex[24];
	int n = snprintf(hex, sizeof hex, "%zx\r\n", len);
	conn_put(c, hex, (size_t)n);
	conn_put(c, data, len);
	conn_put(c, "\r\n", 2);
	conn_flush(c);
}

void http_stream_end(struct http_conn *c)
{
	if (!c->streaming)
		return;
	conn_put(c, "0\r\n\r\n", 5);
	conn_response_done(c);
}

void http_conn_set_user(struct http_conn *c, void *user, void (*on_close)(void *user))
{
	c->user = user;
	c->on_close = on_close;
}

static void fail(struct http_conn *c, int status, const char *msg)
{
	char body[512];
	int n = snprintf(body, sizeof body, "{\"error\":{\"message\":\"%s\",\"type\":\"invalid_request_error\"}}", msg);
	c->keep_alive = false;
	c->state = CS_HEADERS; /* not busy: allow the response */
	http_respond(c, status, "application/json", body, (size_t)n);
}

static void process_input(struct http_conn *c)
{
	struct http_server *s = c->srv;
	c->in_process = true;
	while (!c->dead) {
		if (c->state == CS_HEADERS) {
			if (c->in.len == 0)
				break;
			if (c->deadline_ns == 0 || s->cfg.header_timeout_ns == 0 ||
			    c->deadline_ns > clock_now_ns() + s->cfg.header_timeout_ns)
				c->deadline_ns = clock_now_ns() + s->cfg.header_timeout_ns; /* first byte starts the clock */
			size_t hl = http_head_end(c->in.data, c->in.len);
			if (hl == 0) {
				if (c->in.len > s->cfg.max_header_bytes)
					fail(c, 431, "header block too large");
				break;
			}
			if (hl > s->cfg.max_header_bytes) {
				fail(c, 431, "header block too large");
				break;
			}
			struct http_head h;
			const char *why = NULL;
			int st = http_head_parse(c->in.data, hl, s->cfg.max_body_bytes, &h, &why);
			if (st) {
				char msg[160];
				if (st == 413)
					snprintf(msg, sizeof msg, "request body too large: the limit is %zu bytes (--max-body)",
						 s->cfg.max_body_bytes);
				else
					snprintf(msg, sizeof msg, "%s", why);
				log_info("rejecting request: %s", msg);
				fail(c, st, msg);
				break;
			}
			memcpy(c->method, h.method, sizeof c->method);
			memcpy(c->path, h.path, sizeof c->path);
			c->hdr_bytes = h.hdr_bytes;
			c->body_bytes = h.body_bytes;
			c->keep_alive = h.keep_alive;
			c->state = CS_BODY;
			c->deadline_ns = clock_now_ns() + s->cfg.body_timeout_ns;
			if (h.expect_continue && c->in.len < c->hdr_bytes + c->body_bytes) {
				static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
				conn_put(c, cont, sizeof cont - 1);
				conn_flush(c);
			}
		}
		if (c->state == CS_BODY) {
			if (c->in.len < c->hdr_bytes + c->body_bytes)
				break;
			char *body = malloc(c->body_bytes + 1);
			if (!body) {
				fail(c, 500, "out of memory");
				break;
			}
			memcpy(body, c->in.data + c->hdr_bytes, c->body_bytes);
			body[c->body_bytes] = 0;
			struct http_request req = { .method = c->method, .path = c->path, .body = body,
						    .body_len = c->body_bytes };
			buf_consume(&c->in, c->hdr_bytes + c->body_bytes);
			c->state = CS_BUSY;
			c->deadline_ns = 0;
			s->handler(s->ctx, c, &req);
			free(body);
			continue; /* a synchronous response put us back in CS_HEADERS */
		}
		break; /* CS_BUSY or CS_CLOSING: leave input buffered */
	}
	c->in_process = false;
}

static void conn_read(struct http_conn *c)
{
	struct http_server *s = c->srv;
	size_t cap = s->cfg.max_header_bytes + s->cfg.max_body_bytes + 65536;
	for (;;) {
		if (c->lingering)
			c->in.len = 0; /* discard */
		if (c->in.len >= cap) {
			if (c->state == CS_BUSY || c->state == CS_CLOSING) {
				c->dead = true; /* pipelining megabytes while we answer: drop it */
				return;
			}
			fail(c, 413, "request too large");
			return;
		}
		if (buf_reserve(&c->in, 16384) != 0) {
			c->dead = true;
			return;
		}
		ssize_t r = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1, 0);
		if (r > 0) {
			c->in.len += (size_t)r;
			c->in.data[c->in.len] = 0;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r == 0 && !c->lingering) {
			/* EOF: answer what already arrived if that can be done at once (a
			 * client may half-close after its request), then close; a generation
			 * still running for this client is cancelled by the close. */
			process_input(c);
			conn_flush(c);
		}
		c->dead = true;
		return;
	}
	if (!c->lingering)
		process_input(c);
}

static void do_accept(struct http_server *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		if (s->n_conns >= s->cfg.max_conns || s->stopping) {
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
						   "Connection: close\r\n\r\n";
			ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL);
			(void)w;
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct http_conn *c = calloc(1, sizeof *c);
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = s;
		c->fd = fd;
		c->state = CS_HEADERS;
		c->deadline_ns = clock_now_ns() + s->cfg.idle_timeout_ns;
		buf_init(&c->in);
		buf_init(&c->out);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
		if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			free(c);
			continue;
		}
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
	}
}

static void scan_timeouts(struct http_server *s, int64_t now)
{
	for (struct http_conn *c = s->conns; c; c = c->next) {
		if (c->dead || c->deadline_ns == 0 || now < c->deadline_ns)
			continue;
		if (c->state == CS_HEADERS && c->in.len == 0) {
			c->dead = true; /* idle keep-alive connection */
		} else if (c->state == CS_HEADERS || c->state == CS_BODY) {
			log_info("closing a connection: %s did not arrive in time",
				 c->state == CS_HEADERS ? "the header block" : "the body");
			fail(c, 408, c->state == CS_HEADERS ? "header block not received in time"
							    : "body not received in time");
			c->deadline_ns = now + 1000000000LL; /* give the 408 a second to drain */
			c->state = CS_CLOSING;
		} else if (c->state == CS_CLOSING) {
			c->dead = true;
		}
	}
}

struct http_server *http_server_create(const struct http_config *cfg, http_handler_fn handler, void *ctx,
				       char *err, size_t errlen)
{
	struct http_server *s = calloc(1, sizeof *s);
	if (!s) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->handler = handler;
	s->ctx = ctx;
	s->listen_fd = s->epoll_fd = s->wake_fd = -1;
	struct sockaddr_in6 a6 = { 0 };
	struct sockaddr_in a4 = { 0 };
	int family = AF_INET;
	if (inet_pton(AF_INET, cfg->host, &a4.sin_addr) == 1) {
		a4.sin_family = AF_INET;
		a4.sin_port = htons((uint16_t)cfg->port);
	} else if (inet_pton(AF_INET6, cfg->host, &a6.sin6_addr) == 1) {
		family = AF_INET6;
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons((uint16_t)cfg->port);
	} else {
		err_set(err, errlen, "--host %s: not a numeric IPv4 or IPv6 address (e.g. 127.0.0.1)", cfg->host);
		goto fail;
	}
	s->listen_fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0) {
		err_set(err, errlen, "socket: %s", strerror(errno));
		goto fail;
	}
	int one = 1;
	setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	int rc = family == AF_INET ? bind(s->listen_fd, (struct sockaddr *)&a4, sizeof a4)
				   : bind(s->listen_fd, (struct sockaddr *)&a6, sizeof a6);
	if (rc != 0 || listen(s->listen_fd, 1024) != 0) {
		err_set(err, errlen, "cannot listen on %s port %d: %s (pick another --port, or 0 for a free one)",
			 cfg->host, cfg->port, strerror(errno));
		goto fail;
	}
	struct sockaddr_storage got;
	socklen_t gl = sizeof got;
	getsockname(s->listen_fd, (struct sockaddr *)&got, &gl);
	s->port = got.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&got)->sin_port)
					   : ntohs(((struct sockaddr_in6 *)&got)->sin6_port);
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epoll_fd < 0 || s->wake_fd < 0) {
		err_set(err, errlen, "epoll/eventfd: %s", strerror(errno));
		goto fail;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_LISTEN };
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &ev);
	ev.data.u64 = TAG_WAKE;
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &ev);
	return s;
fail:
	http_server_destroy(s);
	return NULL;
}

void http_server_destroy(struct http_server *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_close_now(s->conns);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s);
}

int http_server_port(const struct http_server *s) { return s->port; }
int http_server_conn_count(const struct http_server *s) { return s->n_conns; }

void http_server_set_wake(struct http_server *s, void (*fn)(void *arg), void *arg)
{
	s->wake_fn = fn;
	s->wake_arg = arg;
}

int http_server_watch_fd(struct http_server *s, int fd, void (*fn)(void *arg), void *arg)
{
	if (s->n_watches >= 4)
		return -ENOSPC;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)(TAG_WATCH0 + s->n_watches) };
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return -errno;
	s->watches[s->n_watches++] = (struct watch){ fd, fn, arg };
	return 0;
}

void http_server_wake(struct http_server *s)
{
	uint64_t one = 1;
	ssize_t w = write(s->wake_fd, &one, sizeof one);
	(void)w; /* EAGAIN means a wake is already pending */
}

void http_server_shutdown(struct http_server *s, int64_t drain_ns)
{
	if (s->stopping)
		return;
	s->stopping = true;
	s->drain_deadline_ns = clock_now_ns() + drain_ns;
	if (s->listen_fd >= 0) {
		epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	for (struct http_conn *c = s->conns; c; c = c->next)
		if (c->state == CS_HEADERS || c->state == CS_BODY)
			c->dead = true;
}

static bool drained(struct http_server *s)
{
	if (clock_now_ns() > s->drain_deadline_ns)
		return true;
	for (struct http_conn *c = s->conns; c; c = c->next)
		if (!c->dead && (c->out.len > 0 || c->state == CS_BUSY))
			return false;
	return true;
}

int http_server_run(struct http_server *s)
{
	struct epoll_event evs[64];
	for (;;) {
		if (s->stopping && drained(s))
			break;
		int n = epoll_wait(s->epoll_fd, evs, 64, 50);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			if (tag == TAG_LISTEN) {
				do_accept(s);
			} else if (tag == TAG_WAKE) {
				uint64_t v;
				ssize_t r = read(s->wake_fd, &v, sizeof v);
				(void)r;
				if (s->wake_fn)
					s->wake_fn(s->wake_arg);
			} else if (tag >= TAG_WATCH0 && tag < TAG_WATCH0 + 4) {
				struct watch *w = &s->watches[tag - TAG_WATCH0];
				w->fn(w->arg);
			} else {
				struct http_conn *c = evs[i].data.ptr;
				if (c->dead)
					continue;
				if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
					conn_read(c);
				if (!c->dead && (evs[i].events & EPOLLOUT))
					conn_flush(c);
			}
		}
		int64_t now = clock_now_ns();
		if (now - s->last_scan_ns >= 50000000LL) {
			s->last_scan_ns = now;
			scan_timeouts(s, now);
		}
		sweep_dead(s);
	}
	return 0;
}
