/* server_harness.h — what the sixi-server integration tests share: start a real
 * sixi-server process on 127.0.0.1 with a free port (--port 0 --port-file), wait
 * until /health says ok, stop it by PID, and a small blocking HTTP/1.1 client
 * (one connection per request) that understands SSE streams. Every wait is
 * bounded. Header-only: each test program includes it once. */
#ifndef SIXI_TEST_SERVER_HARNESS_H
#define SIXI_TEST_SERVER_HARNESS_H
#include "core/buf.h"
#include "core/clock.h"
#include "core/json.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct harness_srv {
	pid_t pid;
	int port;
	char dir[256];      /* temporary directory for the port, pid and log files */
	char log_path[300];
};

static inline void harness_raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static const char *harness_server_path(void);

/* Common start of every test program: fd limit raised, SIGPIPE ignored; returns 77
 * (after saying why) when the server is not built, else 0. */
static inline int harness_init(void)
{
	harness_raise_fd_limit();
	signal(SIGPIPE, SIG_IGN);
	if (access(harness_server_path(), X_OK) != 0) {
		printf("SKIP: sixi-server not built (SIXI_BUILD_ROOT unset?)\n");
		return 77;
	}
	return 0;
}

/* Runs a shell command, its stdout and stderr together into out (NUL-terminated,
 * truncated to cap - 1 bytes), followed by a line "exit N". */
static inline void harness_run_capture(const char *cmd, char *out, size_t cap)
{
	char full[8192];
	snprintf(full, sizeof full, "%s 2>&1; echo \"exit $?\"", cmd);
	FILE *p = popen(full, "r");
	size_t n = p ? fread(out, 1, cap - 1, p) : 0;
	if (p)
		pclose(p);
	out[n] = 0;
}

static const char *harness_server_path(void)
{
	static char path[4096];
	const char *b = getenv("SIXI_BUILD_ROOT");
	snprintf(path, sizeof path, "%s/src/sixi-server", b ? b : ".");
	return path;
}

/* Connects to 127.0.0.1:port with receive/send timeouts; -1 on failure. */
static inline int harness_connect(int port, int timeout_ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int harness_send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct harness_resp {
	int status;            /* 0 when no status line arrived */
	struct buf body;       /* de-chunked */
	int64_t t_send_ns;
	int64_t t_first_data_ns; /* first "data: " byte of an SSE stream, 0 if none */
	int64_t t_done_ns;
	bool complete;         /* the response ended cleanly (length reached or final chunk) */
};

static inline void harness_resp_finish(struct harness_resp *r) { buf_finish(&r->body); }

/* De-chunks raw[0..n) into out; returns true if the terminating chunk was seen. */
static inline bool harness_dechunk(const char *raw, size_t n, struct buf *out)
{
	size_t i = 0;
	while (i < n) {
		char *e;
		unsigned long len = strtoul(raw + i, &e, 16);
		const char *crlf = memmem(raw + i, n - i, "\r\n", 2);
		if (!crlf || e > crlf)
			return false;
		i = (size_t)(crlf - raw) + 2;
		if (len == 0)
			return true;
		if (i + len > n)
			return false;
		if (buf_append(out, raw + i, len) != 0)
			return false;
		i += len + 2;
	}
	return false;
}

/* Sends a request (Connection: close) and reads the whole response. extra_headers
 * may be NULL. Returns 0 when a response arrived (any status), -1 otherwise. */
static inline int harness_request(int port, const char *method, const char *path, const char *body,
			   const char *extra_headers, struct harness_resp *r, int timeout_ms)
{
	memset(r, 0, sizeof *r);
	buf_init(&r->body);
	int fd = harness_connect(port, timeout_ms);
	if (fd < 0)
		return -1;
	struct buf req, raw;
	buf_init(&req);
	buf_init(&raw);
	size_t blen = body ? strlen(body) : 0;
	int rc = buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s", method, path,
			    extra_headers ? extra_headers : "");
	if (body)
		rc |= buf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n", blen);
	rc |= buf_puts(&req, "\r\n");
	if (body)
		rc |= buf_append(&req, body, blen);
	r->t_send_ns = clock_now_ns();
	if (rc != 0 || harness_send_all(fd, req.data, req.len) != 0) {
		close(fd);
		buf_finish(&req);
		return -1;
	}
	size_t hdr = 0;
	int64_t deadline = clock_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		if (buf_reserve(&raw, 65536) != 0)
			break;
		ssize_t n = recv(fd, raw.data + raw.len, raw.cap - raw.len - 1, 0);
		if (n <= 0 || clock_now_ns() > deadline)
			break;
		raw.len += (size_t)n;
		raw.data[raw.len] = 0;
		if (!hdr) {
			char *e = memmem(raw.data, raw.len, "\r\n\r\n", 4);
			if (e)
				hdr = (size_t)(e - raw.data) + 4;
		}
		if (hdr && !r->t_first_data_ns && memmem(raw.data + hdr, raw.len - hdr, "data: ", 6))
			r->t_first_data_ns = clock_now_ns();
	}
	r->t_done_ns = clock_now_ns();
	close(fd);
	buf_finish(&req);
	if (!raw.data || raw.len < 12 || strncmp(raw.data, "HTTP/1.", 7) != 0) {
		buf_finish(&raw);
		return -1;
	}
	r->status = atoi(raw.data + 9);
	if (hdr && raw.data) {
		bool chunked = memmem(raw.data, hdr, "Transfer-Encoding: chunked", 26) != NULL;
		if (chunked) {
			r->complete = harness_dechunk(raw.data + hdr, raw.len - hdr, &r->body);
		} else {
			const char *cl = memmem(raw.data, hdr, "Content-Length: ", 16);
			size_t want = cl ? (size_t)strtoul(cl + 16, NULL, 10) : raw.len - hdr;
			r->complete = raw.len - hdr >= want;
			if (buf_append(&r->body, raw.data + hdr, raw.len - hdr < want ? raw.len - hdr : want) != 0)
				r->complete = false;
		}
	}
	buf_finish(&raw);
	return 0;
}

/* What a completion said, streamed or not. */
struct harness_gen {
	int status;
	bool ok;               /* 200, complete, no error event, usage present */
	bool error_event;
	int events;            /* SSE data events (excluding [DONE]) */
	bool done_marker;
	int64_t prompt_tokens, completion_tokens, cached_tokens;
	char finish[16];
	struct buf text;       /* choice 0 */
	int64_t t_send_ns, t_first_ns, t_done_ns;
};

static inline void harness_gen_finish(struct harness_gen *g) { buf_finish(&g->text); }

static inline void harness_take_choice(struct harness_gen *g, const cJSON *o)
{
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "choices");
	const cJSON *c0 = cJSON_IsArray(ch) ? ch->child : NULL;
	if (c0) {
		const char *t = json_get_str(c0, "text");
		if (!t)
			t = json_get_str(c0, "delta.content");
		if (!t)
			t = json_get_str(c0, "message.content");
		if (t && buf_puts(&g->text, t) != 0)
			g->ok = false;
		const char *f = json_get_str(c0, "finish_reason");
		if (f)
			snprintf(g->finish, sizeof g->finish, "%s", f);
	}
	if (json_get_i64(o, "usage.completion_tokens", &g->completion_tokens)) {
		json_get_i64(o, "usage.prompt_tokens", &g->prompt_tokens);
		json_get_i64(o, "usage.prompt_tokens_details.cached_tokens", &g->cached_tokens);
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "error"))
		g->error_event = true;
}

/* POSTs a completion body and interprets the answer. Returns 0 if a response arrived. */
static inline int harness_generate(int port, const char *path, const char *body, struct harness_gen *g, int timeout_ms)
{
	memset(g, 0, sizeof *g);
	buf_init(&g->text);
	g->completion_tokens = -1;
	struct harness_resp r;
	if (harness_request(port, "POST", path, body, NULL, &r, timeout_ms) != 0) {
		harness_resp_finish(&r);
		return -1;
	}
	g->status = r.status;
	g->t_send_ns = r.t_send_ns;
	g->t_first_ns = r.t_first_data_ns ? r.t_first_data_ns : r.t_done_ns;
	g->t_done_ns = r.t_done_ns;
	const char *b = r.body.data ? r.body.data : "";
	if (strncmp(b, "data: ", 6) == 0) {
		for (const char *line = b; line && *line;) {
			const char *eol = strchr(line, '\n');
			size_t ll = eol ? (size_t)(eol - line) : strlen(line);
			if (ll > 6 && strncmp(line, "data: ", 6) == 0) {
				if (ll == 12 && strncmp(line + 6, "[DONE]", 6) == 0) {
					g->done_marker = true;
				} else {
					char perr[128];
					cJSON *o = json_parse_n(line + 6, ll - 6, perr, sizeof perr);
					if (o) {
						g->events++;
						harness_take_choice(g, o);
						cJSON_Delete(o);
					}
				}
			}
			line = eol ? eol + 1 : NULL;
		}
		g->ok = r.status == 200 && r.complete && !g->error_event && g->done_marker;
	} else {
		char perr[128];
		cJSON *o = json_parse_n(b, r.body.len, perr, sizeof perr);
		if (o) {
			harness_take_choice(g, o);
			cJSON_Delete(o);
		}
		g->ok = r.status == 200 && r.complete && !g->error_event;
	}
	g->ok = g->ok && g->completion_tokens >= 0;
	harness_resp_finish(&r);
	return 0;
}

/* Value of a metric line "name value" in /metrics; -1 if absent. */
static inline double harness_metric(int port, const char *name)
{
	struct harness_resp r;
	double v = -1;
	if (harness_request(port, "GET", "/metrics", NULL, NULL, &r, 5000) == 0 && r.body.data) {
		size_t nl = strlen(name);
		for (const char *p = r.body.data; (p = strstr(p, name)) != NULL; p += nl)
			if ((p == r.body.data || p[-1] == '\n') && p[nl] == ' ') {
				v = atof(p + nl + 1);
				break;
			}
	}
	harness_resp_finish(&r);
	return v;
}

/* Starts sixi-server with args (NULL-terminated) plus --port 0 --port-file
 * --pid-file and waits up to 15 s for the port file (s->port); /health is not
 * consulted. 0 on success. */
static inline int harness_spawn(struct harness_srv *s, const char *const *args)
{
	memset(s, 0, sizeof *s);
	snprintf(s->dir, sizeof s->dir, "/tmp/sixi-server-test-XXXXXX");
	if (!mkdtemp(s->dir))
		return -1;
	char port_file[300], pid_file[300];
	snprintf(port_file, sizeof port_file, "%s/port", s->dir);
	snprintf(pid_file, sizeof pid_file, "%s/pid", s->dir);
	snprintf(s->log_path, sizeof s->log_path, "%s/log", s->dir);
	const char *argv[64];
	int n = 0;
	/* SIXI_SERVER_WRAP="valgrind --error-exitcode=86 ...": the server runs under that
	 * command (space-separated words); an error report then fails the clean-exit checks */
	static char wrap[512];
	const char *w = getenv("SIXI_SERVER_WRAP");
	snprintf(wrap, sizeof wrap, "%s", w ? w : "");
	for (char *save = NULL, *tok = strtok_r(wrap, " ", &save); tok && n < 8; tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	argv[n++] = harness_server_path();
	for (int i = 0; args[i] && n < 54; i++)
		argv[n++] = args[i];
	/* SIXI_SERVER_ARGS="--device cuda": more options for a server on the real model (the same
	 * tests against another engine); a simulated server takes none */
	static char extra[512];
	const char *x = getenv("SIXI_SERVER_ARGS");
	snprintf(extra, sizeof extra, "%s", x && strcmp(args[0], "--simulate") != 0 ? x : "");
	for (char *save = NULL, *tok = strtok_r(extra, " ", &save); tok && n < 54; tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	argv[n++] = "--host";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--port-file";
	argv[n++] = port_file;
	argv[n++] = "--pid-file";
	argv[n++] = pid_file;
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int lf = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (lf >= 0) {
			dup2(lf, 2);
			dup2(lf, 1);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	s->pid = pid;
	int64_t deadline = clock_now_ns() + 15000000000LL;
	while (clock_now_ns() < deadline) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			s->pid = 0;
			return -1;
		}
		FILE *f = fopen(port_file, "r");
		if (f) {
			if (fscanf(f, "%d", &s->port) != 1)
				s->port = 0;
			fclose(f);
		}
		if (s->port > 0)
			return 0;
		clock_sleep_ns(5000000);
	}
	return -1;
}

/* GET /health: the status code, 0 when there was no answer. */
static inline int harness_health(int port)
{
	struct harness_resp r;
	int st = harness_request(port, "GET", "/health", NULL, NULL, &r, 2000) == 0 ? r.status : 0;
	harness_resp_finish(&r);
	return st;
}

/* harness_spawn, then waits (up to 15 s) for /health = 200. 0 on success. */
static inline int harness_start(struct harness_srv *s, const char *const *args)
{
	if (harness_spawn(s, args) != 0)
		return -1;
	int64_t deadline = clock_now_ns() + 15000000000LL;
	while (clock_now_ns() < deadline) {
		if (harness_health(s->port) == 200)
			return 0;
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->pid = 0;
			return -1;
		}
		clock_sleep_ns(20000000);
	}
	return -1;
}

/* Sends sig (SIGTERM) and waits up to 10 s; returns the exit status, or -1
 * if it had to be killed. Removes the temporary directory. */
static inline int harness_stop(struct harness_srv *s, int sig)
{
	int status = -1;
	if (s->pid > 0) {
		kill(s->pid, sig);
		int64_t deadline = clock_now_ns() + 10000000000LL;
		int st = 0;
		pid_t w = 0;
		while ((w = waitpid(s->pid, &st, WNOHANG)) == 0 && clock_now_ns() < deadline)
			clock_sleep_ns(10000000);
		if (w == s->pid) {
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		} else {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
		}
		s->pid = 0;
	}
	char cmd[600];
	snprintf(cmd, sizeof cmd, "%s/port", s->dir);
	unlink(cmd);
	snprintf(cmd, sizeof cmd, "%s/pid", s->dir);
	unlink(cmd);
	return status;
}

/* Prints the server log (on failure) and removes it with the directory. */
static inline void harness_cleanup(struct harness_srv *s, bool show_log)
{
	if (show_log) {
		FILE *f = fopen(s->log_path, "r");
		char line[1024];
		int n = 0;
		while (f && fgets(line, sizeof line, f) && n++ < 200)
			fprintf(stderr, "server: %s", line);
		if (f)
			fclose(f);
	}
	unlink(s->log_path);
	rmdir(s->dir);
}
#endif
