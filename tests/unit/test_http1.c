/* test_http1 — the HTTP/1.1 response parser (net/http1): status line, header
 * fields, Content-Length, chunked bodies (extensions, trailers) fed whole, byte by
 * byte and split at every position, close-delimited bodies, keep-alive, interim
 * responses, and malformed responses, each refused with a sentence. */
#include "test.h"
#include "net/http1.h"

struct out {
	char body[8192];
	size_t len;
	int stop_after; /* non-zero: on_body asks to stop once len reaches it */
};

static int on_body(void *ud, const char *p, size_t n)
{
	struct out *o = ud;
	if (o->len + n > sizeof o->body)
		abort();
	memcpy(o->body + o->len, p, n);
	o->len += n;
	return o->stop_after && o->len >= (size_t)o->stop_after;
}

/* Feeds text in pieces: split 0 = whole; otherwise first `split` bytes, then the rest
 * byte by byte when bytewise, else in one piece. Returns the last feed's rc (or the
 * total consumed), and whether eof was needed (eof_rc when eof is true). */
static long feed(struct http1_parser *p, const char *text, size_t n, size_t split, bool bytewise, struct out *o)
{
	long total = 0;
	size_t i = 0;
	if (split) {
		long rc = http1_parser_feed(p, text, split, on_body, o);
		if (rc < 0)
			return rc;
		total += rc;
		i = split;
		if (p->done)
			return total;
	}
	while (i < n) {
		size_t step = bytewise ? 1 : n - i;
		long rc = http1_parser_feed(p, text + i, step, on_body, o);
		if (rc < 0)
			return rc;
		total += rc;
		i += step;
		if (p->done)
			break;
	}
	return total;
}

/* The same response parsed whole, byte by byte, and split at every position. */
static void check_all_splits(const char *text, int status, const char *body, bool keep_alive, bool need_eof,
			     size_t consumed)
{
	size_t n = strlen(text);
	for (size_t split = 0; split <= n; split++) {
		for (int bw = 0; bw < 2; bw++) {
			struct http1_parser p;
			struct out o = { .len = 0 };
			http1_parser_init(&p, 0);
			long rc = feed(&p, text, n, split, bw, &o);
			bool ok = rc >= 0;
			if (need_eof && ok)
				ok = http1_parser_eof(&p) == 0;
			ok = ok && p.done && p.status == status && o.len == strlen(body) && memcmp(o.body, body, o.len) == 0 &&
			     p.keep_alive == keep_alive && (need_eof || (size_t)rc == consumed);
			if (!CHECK(ok)) {
				fprintf(stderr, "  split %zu bytewise %d: rc %ld status %d body '%.*s' error '%s'\n", split, bw, rc,
					p.status, (int)o.len, o.body, p.error);
				http1_parser_finish(&p);
				return;
			}
			http1_parser_finish(&p);
		}
	}
}

static void check_bad(const char *text, long want_rc, const char *want_in_error)
{
	struct http1_parser p;
	struct out o = { .len = 0 };
	http1_parser_init(&p, 256);
	long rc = http1_parser_feed(&p, text, strlen(text), on_body, &o);
	if (rc >= 0 && !p.done)
		rc = http1_parser_eof(&p) == 0 ? rc : -EPIPE;
	if (!CHECK(rc == want_rc && strstr(p.error, want_in_error)))
		fprintf(stderr, "  input %.40s...: rc %ld error '%s'\n", text, rc, p.error);
	/* the parser stays failed */
	CHECK(http1_parser_feed(&p, "x", 1, on_body, &o) < 0);
	http1_parser_finish(&p);
}

int main(void)
{
	/* Content-Length, with a second response pipelined behind it (not consumed) */
	static const char cl[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\ncontent-length: 11\r\n\r\n"
				 "hello worldHTTP/1.1 200 OK\r\n";
	check_all_splits(cl, 200, "hello world", true, false, strlen(cl) - strlen("HTTP/1.1 200 OK\r\n"));

	/* chunked, with extensions, bare-LF and CRLF line ends, upper-case hex and trailers */
	static const char ch[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nServer: x\r\n\r\n"
				 "5;name=\"va;l\"\r\ndata:\r\n1A\r\n{\"choices\":[],\"usage\":{}}\n\r\n"
				 "0003\r\n\n\n\n\r\n0;last\r\nX-Trailer: 1\r\nX-Other: two\r\n\r\n";
	check_all_splits(ch, 200, "data:{\"choices\":[],\"usage\":{}}\n\n\n\n", true, false, strlen(ch));
	/* chunked without trailers, HTTP/1.0 with keep-alive */
	static const char ch10[] = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "3\r\nabc\r\n0\r\n\r\n";
	check_all_splits(ch10, 200, "abc", true, false, strlen(ch10));

	/* body until the connection closes; Connection: close; obsolete folding dropped */
	static const char cl_close[] = "HTTP/1.1 500 Internal Server Error\r\nX-A: 1\r\n  folded\r\n\r\n{\"error\":\"boom\"}";
	check_all_splits(cl_close, 500, "{\"error\":\"boom\"}", false, true, 0);
	static const char conn_close[] = "HTTP/1.1 404 Not Found\nConnection: close\nContent-Length: 3\n\nabc";
	check_all_splits(conn_close, 404, "abc", false, false, strlen(conn_close));

	/* interim 100 Continue and 103 Early Hints are skipped; 204 has no body */
	static const char interim[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
				      "HTTP/1.1 204 No Content\r\n\r\n";
	check_all_splits(interim, 204, "", true, false, strlen(interim));
	/* Content-Length 0, and a repeated identical value */
	check_all_splits("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", true, false, 38);
	check_all_splits("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok", 200, "ok", true, false,
			 62);

	/* a response cut short: clear errors from eof */
	{
		struct http1_parser p;
		struct out o = { .len = 0 };
		http1_parser_init(&p, 0);
		const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
		CHECK(http1_parser_feed(&p, t, strlen(t), on_body, &o) == (long)strlen(t));
		CHECK(http1_parser_eof(&p) == -EPIPE);
		CHECK(strstr(p.error, "after 3 of 10 body bytes") != NULL);
		http1_parser_reset(&p);
		CHECK(http1_parser_eof(&p) == -EPIPE && strstr(p.error, "before any response byte"));
		http1_parser_reset(&p);
		t = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab";
		CHECK(http1_parser_feed(&p, t, strlen(t), on_body, &o) == (long)strlen(t));
		CHECK(http1_parser_eof(&p) == -EPIPE && strstr(p.error, "inside a chunked body"));
		http1_parser_reset(&p);
		CHECK(http1_parser_feed(&p, "HTTP/1.1 200", 12, on_body, &o) == 12);
		CHECK(http1_parser_eof(&p) == -EPIPE && strstr(p.error, "inside the response headers"));
		/* reset makes the parser usable for the next response on the connection */
		http1_parser_reset(&p);
		o.len = 0;
		t = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
		CHECK(http1_parser_feed(&p, t, strlen(t), on_body, &o) == (long)strlen(t) && p.done && o.len == 2);
		http1_parser_finish(&p);
	}

	/* the body callback stops the transfer */
	{
		struct http1_parser p;
		struct out o = { .len = 0, .stop_after = 2 };
		http1_parser_init(&p, 0);
		const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcde";
		CHECK(http1_parser_feed(&p, t, strlen(t), on_body, &o) == -ECANCELED);
		http1_parser_finish(&p);
	}

	/* malformed responses: one sentence each, never a crash */
	check_bad("HTTP/2 200 OK\r\n\r\n", -EBADMSG, "bad status line");
	check_bad("ICY 200 OK\r\n\r\n", -EBADMSG, "bad status line");
	check_bad("HTTP/1.1 20 OK\r\n\r\n", -EBADMSG, "bad status line");
	check_bad("HTTP/1.1 200OK\r\n\r\n", -EBADMSG, "bad status line");
	check_bad("HTTP/1.1 101 Switching Protocols\r\n\r\n", -EBADMSG, "101");
	check_bad("HTTP/1.1 200 OK\r\nNoColonHere\r\n\r\n", -EBADMSG, "without a field name");
	check_bad("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", -EBADMSG, "bad header field name");
	check_bad("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", -EBADMSG, "bad Content-Length");
	check_bad("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", -EBADMSG, "bad Content-Length");
	check_bad("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -EBADMSG, "conflicting");
	check_bad("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", -EBADMSG, "too large");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", -EBADMSG, "bad chunk size");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", -EBADMSG, "bad chunk size");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n", -EBADMSG, "too large");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", -EBADMSG, "longer than its size");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\rX", -EBADMSG, "not ended by CRLF");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\rX", -EBADMSG, "not ended by CRLF");
	check_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\rX", -EBADMSG, "bad end of chunked body");
	/* header and trailer blocks are bounded (256 bytes in check_bad) */
	{
		char big[600];
		snprintf(big, sizeof big, "HTTP/1.1 200 OK\r\nX-Big: %0400d\r\n\r\n", 7);
		check_bad(big, -EMSGSIZE, "headers over 256 bytes");
		snprintf(big, sizeof big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: %0400d\r\n\r\n", 7);
		check_bad(big, -EMSGSIZE, "trailer fields over");
	}
	/* framing facts */
	{
		struct http1_parser p;
		http1_parser_init(&p, 0);
		const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n";
		CHECK(http1_parser_feed(&p, t, strlen(t), NULL, NULL) == (long)strlen(t));
		/* both framings: chunked wins, and the connection is not reused */
		CHECK(p.head_done && p.framing == HTTP1_CHUNKED && !p.keep_alive);
		http1_parser_finish(&p);
	}
	return test_done();
}
