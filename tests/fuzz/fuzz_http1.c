/* fuzz_http1 — libFuzzer target for the HTTP/1.1 response parser and its chunked
 * decoder (net/http1), with a differential oracle: the same bytes fed in one
 * piece, byte by byte, and split at a point taken from the input must give the
 * same outcome (done or not, failed or not, status, framing, keep-alive) and,
 * when nothing failed, the same body bytes. Any difference or crash is a bug.
 * With -DFUZZ_STANDALONE it is its own bounded driver over seeded mutations of
 * real responses (Content-Length, chunked with extensions and trailers, close). */
#include "net/http1.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct res {
	char *body;
	size_t len, cap;
	long rc;      /* bytes consumed in total, or the failing rc */
	int done, status, framing, keep_alive, eof_rc;
};

static int on_body(void *ud, const char *p, size_t n)
{
	struct res *r = ud;
	if (r->len + n > r->cap) {
		r->cap = (r->len + n) * 2;
		r->body = realloc(r->body, r->cap);
		if (!r->body)
			abort();
	}
	memcpy(r->body + r->len, p, n);
	r->len += n;
	return 0;
}

/* step 0: one piece; split > 0: two pieces; else pieces of `step` bytes. */
static void run(const uint8_t *data, size_t size, size_t step, size_t split, struct res *r)
{
	struct http1_parser p;
	http1_parser_init(&p, 512);
	long total = 0, rc = 0;
	size_t i = 0;
	while (i < size && rc >= 0 && !p.done) {
		size_t n = split ? (i == 0 ? split : size - i) : step ? step : size;
		if (n > size - i)
			n = size - i;
		rc = http1_parser_feed(&p, (const char *)data + i, n, on_body, r);
		if (rc >= 0) {
			if ((size_t)rc > n)
				abort(); /* consumed more than it was given */
			total += rc;
			if (!p.done && (size_t)rc != n)
				abort(); /* stopped early without finishing */
		}
		i += n;
	}
	r->rc = rc < 0 ? rc : total;
	r->eof_rc = rc < 0 ? 1 : http1_parser_eof(&p);
	r->done = p.done;
	r->status = p.status;
	r->framing = p.framing;
	r->keep_alive = p.keep_alive;
	if (p.state != 0 && rc < 0 && !p.error[0])
		abort(); /* a failure always says why */
	http1_parser_finish(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct res a = { 0 }, b = { 0 }, c = { 0 };
	run(data, size, 0, 0, &a);
	run(data, size, 1, 0, &b);
	size_t split = size ? data[size - 1] % size : 0;
	run(data, size, 0, split, &c);
	const struct res *o[2] = { &b, &c };
	for (int k = 0; k < 2; k++) {
		/* failures may be noticed at different byte counts; the rest must agree */
		if ((a.rc < 0) != (o[k]->rc < 0) || a.done != o[k]->done || a.eof_rc != o[k]->eof_rc)
			abort();
		if (a.rc >= 0 && (a.rc != o[k]->rc || a.status != o[k]->status || a.framing != o[k]->framing ||
				  a.keep_alive != o[k]->keep_alive || a.len != o[k]->len ||
				  (a.len && memcmp(a.body, o[k]->body, a.len) != 0)))
			abort();
	}
	free(a.body);
	free(b.body);
	free(c.body);
	return 0;
}

#ifdef FUZZ_STANDALONE
#include "fuzz_mutate.h"

int main(int argc, char **argv)
{
	static const char *seeds[] = {
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 24\r\n\r\ndata: {\"a\":1}\n\ndata: [DO",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7;x=\"y\"\r\ndata: {\r\nA\r\n\"a\":1}\n\n\r\n\r\n"
		"0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 500 Oops\r\nConnection: keep-alive\r\n\r\n{\"error\":\"x\"}",
		"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\nTransfer-Encoding: gzip, chunked\nContent-Length: 3\n\n3\nabc\n0\n\n",
	};
	long iters = argc > 1 ? atol(argv[1]) : 20000;
	uint64_t s = 0x4177;
	long runs = fuzz_mutate_seeds(LLVMFuzzerTestOneInput, seeds, sizeof seeds / sizeof seeds[0], (int)(iters / 5),
				      "\r\n0123456789abcdefABCDEF;: ,\t", &s);
	printf("fuzz_http1: %ld responses, no divergence\n", runs);
	return 0;
}
#endif
