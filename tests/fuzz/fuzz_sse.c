/* fuzz_sse — libFuzzer target for the SSE parser, with a differential oracle:
 * the same bytes fed in one piece, byte by byte, and split at a point taken from
 * the input must dispatch the same events (or fail the same way). Any difference
 * or crash is a bug. With -DFUZZ_STANDALONE it is its own bounded driver over
 * seeded random streams built from SSE fragments. */
#include "net/sse.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct log {
	char *s;
	size_t len, cap;
};

static int on_event(void *ud, const char *event, const char *data, size_t n)
{
	struct log *l = ud;
	size_t need = l->len + strlen(event) + n + 4;
	if (need > l->cap) {
		l->cap = need * 2;
		l->s = realloc(l->s, l->cap);
		if (!l->s)
			abort();
	}
	l->len += (size_t)sprintf(l->s + l->len, "%s|", event);
	memcpy(l->s + l->len, data, n);
	l->len += n;
	l->s[l->len++] = '\n';
	return 0;
}

/* Feeds data in pieces of `step` bytes (0: one piece), returns the final rc. */
static int feed(const uint8_t *data, size_t size, size_t step, size_t split, struct log *l)
{
	struct sse_parser p;
	sse_parser_init(&p, 4096, on_event, l);
	int rc = 0;
	if (split) {
		rc = sse_parser_feed(&p, (const char *)data, split);
		if (!rc)
			rc = sse_parser_feed(&p, (const char *)data + split, size - split);
	} else if (step == 0) {
		rc = sse_parser_feed(&p, (const char *)data, size);
	} else {
		for (size_t i = 0; i < size && !rc; i += step)
			rc = sse_parser_feed(&p, (const char *)data + i, size - i < step ? size - i : step);
	}
	if (!rc)
		rc = sse_parser_end(&p);
	sse_parser_finish(&p);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct log a = { 0 }, b = { 0 }, c = { 0 };
	int ra = feed(data, size, 0, 0, &a);
	int rb = feed(data, size, 1, 0, &b);
	size_t split = size ? data[0] % (size + 1) : 0;
	int rc = feed(data, size, 0, split ? split : 0, &c);
	if (ra != rb || ra != rc)
		abort();
	/* events before a failure may differ by where the failure was noticed; compare on success */
	if (ra == 0 && (a.len != b.len || a.len != c.len || memcmp(a.s, b.s, a.len) || memcmp(a.s, c.s, a.len)))
		abort();
	free(a.s);
	free(b.s);
	free(c.s);
	return 0;
}

#ifdef FUZZ_STANDALONE
int main(int argc, char **argv)
{
	static const char *frags[] = { "data: ", "data:", "{\"a\":1}", "\r\n", "\n", "\r", ": ping", "event: error",
				       "[DONE]", "id: 3", "retry: 1", "x", "", "dat", "a: y" };
	long iters = argc > 1 ? atol(argv[1]) : 20000;
	uint64_t s = 0x5eed;
	uint8_t buf[2048];
	for (long it = 0; it < iters; it++) {
		size_t len = 0;
		int pieces = 1 + (int)(s % 40);
		for (int k = 0; k < pieces; k++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			const char *f = frags[(s >> 33) % (sizeof frags / sizeof frags[0])];
			size_t fl = strlen(f);
			if (len + fl >= sizeof buf)
				break;
			memcpy(buf + len, f, fl);
			len += fl;
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("fuzz_sse: %ld streams, no divergence\n", iters);
	return 0;
}
#endif
