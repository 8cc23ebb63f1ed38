/* fuzz_http — libFuzzer target for the server's HTTP request parser
 * (src/server/http_parse.c), fed the way the epoll loop feeds it: bytes arrive
 * in pieces, each piece appended to the connection's input, the header block
 * looked for, parsed, the body waited for and consumed, the next pipelined
 * request parsed from what is left. The first byte of the input picks the
 * split points. Invariant beyond "no crash": the requests framed from the
 * pieces are exactly those framed from the whole input at once (framing may
 * not depend on how TCP split the bytes), and each parsed head is sane. */
#include "server/http_parse.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADER 2048
#define MAX_BODY 4096
#define MAX_EVENTS 64

struct event {
	int status; /* 0: a request; else the error answered (the connection closes) */
	char method[16];
	char path[1024];
	size_t body_len;
	uint64_t body_hash;
	int keep_alive;
};

struct framing {
	struct event ev[MAX_EVENTS];
	int n;
	int closed;
};

static void check(int ok, const char *why, const uint8_t *data, size_t size)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_http: %s (input of %zu bytes)\n", why, size);
	abort();
}

/* What the loop does with c->in after each read. */
static void frame(struct framing *f, char *in, size_t *len, const uint8_t *data, size_t size)
{
	while (!f->closed && f->n < MAX_EVENTS && *len > 0) {
		size_t hl = http_head_end(in, *len);
		check(hl <= *len, "header end beyond the input", data, size);
		if (hl == 0) {
			if (*len > MAX_HEADER) {
				f->ev[f->n++].status = 431;
				f->closed = 1;
			}
			return;
		}
		check(hl >= 2 && in[hl - 1] == '\n' && (in[hl - 2] == '\n' || (hl >= 4 && !memcmp(in + hl - 4, "\r\n\r\n", 4))),
		      "header block does not end in a blank line", data, size);
		if (hl > MAX_HEADER) {
			f->ev[f->n++].status = 431;
			f->closed = 1;
			return;
		}
		struct http_head h;
		const char *why = NULL;
		int st = http_head_parse(in, hl, MAX_BODY, &h, &why);
		struct event *e = &f->ev[f->n];
		if (st) {
			check(why && *why && (st == 400 || st == 411 || st == 413 || st == 431), "bad error status", data, size);
			e->status = st;
			f->n++;
			f->closed = 1;
			return;
		}
		check(memchr(h.method, 0, sizeof h.method) && memchr(h.path, 0, sizeof h.path), "unterminated field", data,
		      size);
		/* the fields end where the request line said: no NUL, space or control byte inside */
		check(h.method[0] && !strchr(h.path, '?') && h.hdr_bytes == hl && h.body_bytes <= MAX_BODY,
		      "parsed head out of range", data, size);
		const char *sp = memchr(in, ' ', hl);
		check(sp && (size_t)(sp - in) == strlen(h.method) && !memcmp(in, h.method, strlen(h.method)),
		      "the method is not the request line's first word", data, size);
		for (const char *q = h.path; *q; q++)
			check((unsigned char)*q > 0x20 && *q != 0x7f, "a control byte in the path", data, size);
		check(!memcmp(sp + 1, h.path, strlen(h.path)), "the path is not the request line's target", data, size);
		if (*len < hl + h.body_bytes)
			return; /* wait for the body */
		memcpy(e->method, h.method, sizeof e->method);
		memcpy(e->path, h.path, sizeof e->path);
		e->body_len = h.body_bytes;
		e->keep_alive = h.keep_alive;
		uint64_t x = 1469598103934665603ULL;
		for (size_t i = 0; i < h.body_bytes; i++)
			x = (x ^ (uint8_t)in[hl + i]) * 1099511628211ULL;
		e->body_hash = x;
		f->n++;
		memmove(in, in + hl + h.body_bytes, *len - hl - h.body_bytes);
		*len -= hl + h.body_bytes;
		if (!h.keep_alive)
			f->closed = 1;
	}
}

static void run(struct framing *f, const uint8_t *p, size_t n, unsigned split, const uint8_t *data, size_t size)
{
	char *in = malloc(n ? n : 1); /* exactly n: ASan sees any read past the bytes received */
	size_t len = 0, at = 0;
	memset(f, 0, sizeof *f);
	uint32_t s = split * 2654435761u + 1;
	while (at < n && !f->closed) {
		size_t piece = n - at;
		if (split) {
			s = s * 1103515245u + 12345u;
			piece = 1 + (s >> 16) % (split % 64 + 1);
			if (piece > n - at)
				piece = n - at;
		}
		memcpy(in + len, p + at, piece); /* exactly the bytes received; no terminator */
		len += piece;
		at += piece;
		frame(f, in, &len, data, size);
	}
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	unsigned split = data[0];
	static struct framing whole, pieces;
	run(&whole, data + 1, size - 1, 0, data, size);
	run(&pieces, data + 1, size - 1, split ? split : 1, data, size);
	/* An error answered at a point the whole input had not reached yet is
	 * fine only if it is the same error; requests must match one for one. */
	check(whole.n == pieces.n, "split input framed a different number of requests", data, size);
	for (int i = 0; i < whole.n; i++) {
		const struct event *a = &whole.ev[i], *b = &pieces.ev[i];
		check(a->status == b->status && !strcmp(a->method, b->method) && !strcmp(a->path, b->path) &&
			      a->body_len == b->body_len && a->body_hash == b->body_hash && a->keep_alive == b->keep_alive,
		      "split input framed a different request", data, size);
	}
	return 0;
}
