/* test_http_native — both HTTP engines behind http_client against a scripted
 * server on 127.0.0.1 (a thread of this test, port 0): keep-alive reuse, a pooled
 * connection the server closed while idle (retried once on a new one), a chunked
 * body written a few bytes at a time, and the error classes it must share with the
 * libcurl engine: connect (refused), timeout (no first byte), stall (bytes stop),
 * http (500, body delivered), reset (malformed response, connection cut mid-body).
 * The classes are checked for libcurl too (the details, worded by each engine, and
 * the connection counts only for the native one). */
#include "test.h"
#include "core/clock.h"
#include "net/http.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_fd;
static int port;
static volatile int accepted;

static void put(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Reads one request head (and its Content-Length body); returns the path or "" at EOF. */
static bool read_request(int fd, char *path, size_t cap)
{
	char buf[8192];
	size_t len = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
		if (r <= 0)
			return false;
		len += (size_t)r;
		buf[len] = 0;
		char *end = strstr(buf, "\r\n\r\n");
		if (end) {
			const char *cl = strstr(buf, "Content-Length: ");
			size_t body = cl ? (size_t)atol(cl + 16) : 0;
			while (len < (size_t)(end - buf) + 4 + body) {
				r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
				if (r <= 0)
					return false;
				len += (size_t)r;
			}
			break;
		}
	}
	sscanf(buf, "%*s %255s", path);
	(void)cap;
	return true;
}

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char path[256];
	while (read_request(fd, path, sizeof path)) {
		if (strcmp(path, "/ok") == 0) {
			put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
		} else if (strcmp(path, "/ok-then-close") == 0) {
			/* keep-alive promised, then the server drops the idle connection */
			put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
			usleep(100000);
			break;
		} else if (strcmp(path, "/chunked") == 0) {
			static const char *parts[] = { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "7;x=1\r\nda",
						       "ta: 1", "\r\n", "1\r\n\n\r", "\n0\r\nT: 1\r\n\r", "\n" };
			for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
				put(fd, parts[i]);
				usleep(2000);
			}
		} else if (strcmp(path, "/500") == 0) {
			put(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 14\r\n\r\n{\"error\":\"x\"}\n");
		} else if (strcmp(path, "/bad") == 0) {
			put(fd, "HTTP/1.1 2xx OK\r\n\r\n");
			break;
		} else if (strcmp(path, "/cut") == 0) {
			put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
			break;
		} else if (strcmp(path, "/stall") == 0) {
			put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome bytes");
			usleep(600000);
			break;
		} else if (strcmp(path, "/silent") == 0) {
			usleep(600000);
			break;
		}
	}
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		if (fd < 0)
			return NULL;
		accepted++;
		pthread_t t;
		if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
}

struct got {
	bool done;
	struct http_result r;
	char body[256];
	size_t len;
};

static int on_data(void *ud, const char *p, size_t n, int64_t t)
{
	struct got *g = ud;
	(void)t;
	size_t k = n < sizeof g->body - 1 - g->len ? n : sizeof g->body - 1 - g->len;
	memcpy(g->body + g->len, p, k);
	g->len += k;
	g->body[g->len] = 0;
	return 0;
}

static void on_done(void *ud, const struct http_result *r)
{
	struct got *g = ud;
	g->r = *r;
	g->done = true;
}

/* Runs one GET (or POST with body) to path with the given stall/first-byte limits. */
static struct got fetch(struct http_client *c, const char *path, const char *body, int64_t first_byte_ms,
			int64_t stall_ms)
{
	struct got g;
	memset(&g, 0, sizeof g);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	struct http_xfer x = { .url = url, .body = body, .body_len = body ? strlen(body) : 0,
			       .first_byte_timeout_ms = first_byte_ms, .stall_timeout_ms = stall_ms,
			       .on_data = on_data, .on_done = on_done, .ud = &g };
	if (!CHECK(http_client_start(c, &x) == 0))
		return g;
	int64_t deadline = clock_now_ns() + 5000000000LL;
	while (!g.done && clock_now_ns() < deadline)
		http_client_run(c, 20000000LL);
	CHECK(g.done);
	return g;
}

static void run_engine(const char *engine)
{
	CHECK(http_set_engine(engine) == 0);
	CHECK_EQ_STR(http_engine(), engine);
	bool native = strcmp(engine, "native") == 0;
	accepted = 0;
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (!CHECK(bind(listen_fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(listen_fd, 64) == 0))
		return;
	getsockname(listen_fd, (struct sockaddr *)&a, &al);
	port = ntohs(a.sin_port);
	pthread_t th;
	pthread_create(&th, NULL, acceptor, NULL);

	struct http_client *c = http_client_create();
	/* keep-alive: three requests, one connection */
	for (int i = 0; i < 3; i++) {
		struct got g = fetch(c, "/ok", i == 1 ? "{\"x\":1}" : NULL, 0, 0);
		CHECK(g.r.error == NULL && g.r.http_status == 200 && strcmp(g.body, "hello") == 0);
		CHECK(g.r.t_first_byte_ns >= g.r.t_send_ns && g.r.t_done_ns >= g.r.t_first_byte_ns);
	}
	CHECK(!native || accepted == 1);
	/* the server closes the pooled connection while idle: the next request is retried on a new one */
	struct got g = fetch(c, "/ok-then-close", NULL, 0, 0);
	CHECK(g.r.error == NULL && strcmp(g.body, "hi") == 0);
	usleep(300000);
	g = fetch(c, "/ok", NULL, 0, 0);
	CHECK(g.r.error == NULL && strcmp(g.body, "hello") == 0);
	CHECK(!native || accepted == 2);
	/* a chunked body written a few bytes at a time, extensions and a trailer */
	g = fetch(c, "/chunked", NULL, 0, 0);
	CHECK(g.r.error == NULL && strcmp(g.body, "data: 1\n") == 0 && g.r.body_bytes == 8);
	/* error classes */
	g = fetch(c, "/500", NULL, 0, 0);
	CHECK(g.r.error && strcmp(g.r.error, "http") == 0 && g.r.http_status == 500 && strstr(g.body, "error"));
	g = fetch(c, "/bad", NULL, 0, 0);
	/* libcurl reads an unparseable status line as an unsupported protocol (its class
	 * then says connect); the native engine says what was wrong with the response */
	CHECK(g.r.error && (!native || (strcmp(g.r.error, "reset") == 0 && strstr(g.r.detail, "bad status line"))));
	g = fetch(c, "/cut", NULL, 0, 0);
	CHECK(g.r.error && strcmp(g.r.error, "reset") == 0 && (!native || strstr(g.r.detail, "after 7 of 100 body bytes")));
	g = fetch(c, "/stall", NULL, 0, 200);
	CHECK(g.r.error && strcmp(g.r.error, "stall") == 0 && strcmp(g.body, "some bytes") == 0);
	g = fetch(c, "/silent", NULL, 200, 0);
	CHECK(g.r.error && strcmp(g.r.error, "timeout") == 0 && g.r.t_first_byte_ns == 0);
	http_client_destroy(c);

	/* a port nobody listens on */
	c = http_client_create();
	int dead = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t bl = sizeof b;
	bind(dead, (struct sockaddr *)&b, sizeof b);
	getsockname(dead, (struct sockaddr *)&b, &bl);
	int saved = port;
	port = ntohs(b.sin_port);
	close(dead);
	g = fetch(c, "/ok", NULL, 0, 0);
	CHECK(g.r.error && strcmp(g.r.error, "connect") == 0 && (!native || strstr(g.r.detail, "refused")));
	port = saved;
	/* malformed URLs end as connect errors through on_done, never at start */
	struct got h;
	memset(&h, 0, sizeof h);
	struct http_xfer x = { .url = "http://127.0.0.1:99999/x", .on_done = on_done, .ud = &h };
	CHECK(http_client_start(c, &x) == 0);
	for (int i = 0; i < 10 && !h.done; i++)
		http_client_run(c, 10000000LL);
	CHECK(h.done && h.r.error && strcmp(h.r.error, "connect") == 0 && (!native || strstr(h.r.detail, "port")));
	/* destroy ends a running transfer with class client */
	memset(&h, 0, sizeof h);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/silent", port);
	x.url = url;
	CHECK(http_client_start(c, &x) == 0);
	http_client_run(c, 10000000LL);
	http_client_destroy(c);
	CHECK(h.done && h.r.error && strcmp(h.r.error, "client") == 0);
	shutdown(listen_fd, SHUT_RDWR);
	close(listen_fd);
	pthread_join(th, NULL);
}

int main(void)
{
	CHECK(http_global_init() == 0);
	CHECK(http_set_engine("gopher") == -EINVAL);
	run_engine("native");
	run_engine("curl");
	http_set_engine("native");
	http_global_cleanup();
	return test_done();
}
