/* emitter — see emitter.h. A request is complete at "\r\n\r\n" plus its
 * Content-Length; the reply is the prebuilt block. Output that the socket does not
 * take at once waits for EPOLLOUT. */
#include "bench/emitter.h"
#include "core/err.h"
#include "core/buf.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

struct conn {
	int fd;
	struct buf in;
	size_t out_off;     /* bytes of the reply already written; SIZE_MAX when idle */
	int pending;        /* complete requests waiting for the reply */
	struct conn *prev, *next;
};

struct emitter {
	int listen_fd, ep, stop_fd, port;
	char *reply;        /* prebuilt HTTP response (headers + SSE body) */
	size_t reply_len;
	pthread_t thread;
	struct conn *conns; /* every open connection, for teardown */
	atomic_uint_fast64_t requests;
};

static int build_reply(struct emitter *e, int64_t events, int64_t tpe)
{
	struct buf body, all;
	buf_init(&body);
	buf_init(&all);
	int rc = 0;
	for (int64_t i = 0; i < events && !rc; i++)
		rc = buf_puts(&body, "data: {\"id\":\"e\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
				     "\"text\":\" tok\",\"finish_reason\":null}]}\n\n");
	if (!rc)
		rc = buf_puts(&body, "data: {\"id\":\"e\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n");
	if (!rc)
		rc = buf_printf(&body,
				"data: {\"id\":\"e\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%lld,"
				"\"total_tokens\":%lld,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\ndata: [DONE]\n\n",
				(long long)(events * tpe), (long long)(events * tpe + 8));
	if (!rc)
		rc = buf_printf(&all, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %zu\r\n\r\n",
				body.len);
	if (!rc)
		rc = buf_append(&all, body.data, body.len);
	buf_finish(&body);
	e->reply_len = all.len;
	e->reply = buf_steal(&all);
	return rc ? rc : (e->reply ? 0 : -ENOMEM);
}

/* Number of complete requests at the start of c->in; consumes them. */
static int take_requests(struct conn *c)
{
	int n = 0;
	for (;;) {
		char *end = c->in.len ? memmem(c->in.data, c->in.len, "\r\n\r\n", 4) : NULL;
		if (!end)
			return n;
		size_t head = (size_t)(end - c->in.data) + 4;
		size_t body = 0;
		for (char *p = c->in.data; p < end; p++) {
			if ((p == c->in.data || p[-1] == '\n') && strncasecmp(p, "content-length:", 15) == 0) {
				body = (size_t)strtoull(p + 15, NULL, 10);
				break;
			}
		}
		if (c->in.len < head + body)
			return n;
		buf_consume(&c->in, head + body);
		n++;
	}
}

static void close_conn(struct emitter *e, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		e->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	epoll_ctl(e->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	buf_finish(&c->in);
	free(c);
}

/* Writes replies while the socket takes them; returns -1 when the connection died. */
static int flush(struct emitter *e, struct conn *c)
{
	while (c->pending > 0) {
		ssize_t w = write(c->fd, e->reply + c->out_off, e->reply_len - c->out_off);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
				epoll_ctl(e->ep, EPOLL_CTL_MOD, c->fd, &ev);
				return 0;
			}
			return -1;
		}
		c->out_off += (size_t)w;
		if (c->out_off == e->reply_len) {
			c->out_off = 0;
			c->pending--;
			atomic_fetch_add(&e->requests, 1);
		}
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	epoll_ctl(e->ep, EPOLL_CTL_MOD, c->fd, &ev);
	return 0;
}

static void *loop(void *arg)
{
	struct emitter *e = arg;
	struct epoll_event evs[256];
	char tmp[65536];
	for (;;) {
		int n = epoll_wait(e->ep, evs, 256, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;
			if (ptr == &e->stop_fd)
				return NULL;
			if (ptr == &e->listen_fd) {
				for (;;) {
					int fd = accept4(e->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
					if (fd < 0)
						break;
					int one = 1;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					struct conn *c = calloc(1, sizeof *c);
					if (!c) {
						close(fd);
						continue;
					}
					c->fd = fd;
					buf_init(&c->in);
					c->next = e->conns;
					if (e->conns)
						e->conns->prev = c;
					e->conns = c;
					struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
					epoll_ctl(e->ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			struct conn *c = ptr;
			bool dead = false;
			if (evs[i].events & EPOLLIN) {
				for (;;) {
					ssize_t r = read(c->fd, tmp, sizeof tmp);
					if (r > 0) {
						if (buf_append(&c->in, tmp, (size_t)r)) {
							dead = true;
							break;
						}
						continue;
					}
					if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
						dead = true;
					break;
				}
				c->pending += take_requests(c);
			}
			if (!dead && flush(e, c) < 0)
				dead = true;
			if (dead || (evs[i].events & (EPOLLHUP | EPOLLERR)))
				close_conn(e, c);
		}
	}
	return NULL;
}

struct emitter *emitter_start(int port, int64_t events, int64_t tokens_per_event, char *err, size_t errlen)
{
	struct emitter *e = calloc(1, sizeof *e);
	if (!e) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	e->listen_fd = e->ep = e->stop_fd = -1;
	if (build_reply(e, events, tokens_per_event)) {
		err_set(err, errlen, "out of memory building the reply");
		goto fail;
	}
	e->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(e->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (bind(e->listen_fd, (struct sockaddr *)&a, sizeof a) || listen(e->listen_fd, 4096)) {
		err_set(err, errlen, "emitter: cannot listen on 127.0.0.1:%d: %s", port, strerror(errno));
		goto fail;
	}
	socklen_t al = sizeof a;
	getsockname(e->listen_fd, (struct sockaddr *)&a, &al);
	e->port = ntohs(a.sin_port);
	e->ep = epoll_create1(EPOLL_CLOEXEC);
	e->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &e->listen_fd };
	epoll_ctl(e->ep, EPOLL_CTL_ADD, e->listen_fd, &ev);
	struct epoll_event sv = { .events = EPOLLIN, .data.ptr = &e->stop_fd };
	epoll_ctl(e->ep, EPOLL_CTL_ADD, e->stop_fd, &sv);
	if (pthread_create(&e->thread, NULL, loop, e) != 0) {
		err_set(err, errlen, "emitter: cannot start its thread");
		goto fail;
	}
	return e;
fail:
	if (e->listen_fd >= 0)
		close(e->listen_fd);
	if (e->ep >= 0)
		close(e->ep);
	if (e->stop_fd >= 0)
		close(e->stop_fd);
	free(e->reply);
	free(e);
	return NULL;
}

int emitter_port(const struct emitter *e) { return e->port; }
uint64_t emitter_requests(const struct emitter *e) { return atomic_load(&((struct emitter *)e)->requests); }

void emitter_stop(struct emitter *e)
{
	if (!e)
		return;
	uint64_t one = 1;
	if (write(e->stop_fd, &one, sizeof one) < 0) {
		/* the thread would then block forever; nothing else to do than detach */
	}
	pthread_join(e->thread, NULL);
	while (e->conns)
		close_conn(e, e->conns);
	close(e->listen_fd);
	close(e->ep);
	close(e->stop_fd);
	free(e->reply);
	free(e);
}
