/* Unit tests for src/net/sse: every split point of a stream gives the same events;
 * CRLF / CR / LF line ends; comments; multi-line data; oversized events; end of stream. */
#include "test.h"
#include "net/sse.h"

struct rec {
	char log[4096];
	int n;
	int stop_at;
};

static int on_event(void *ud, const char *event, const char *data, size_t n)
{
	struct rec *r = ud;
	size_t len = strlen(r->log);
	snprintf(r->log + len, sizeof r->log - len, "[%s|%.*s]", event, (int)n, data);
	r->n++;
	return r->stop_at && r->n == r->stop_at ? 42 : 0;
}

static void run_all_splits(const char *stream, const char *expect, int expect_n)
{
	size_t len = strlen(stream);
	for (size_t a = 0; a <= len; a++) {
		for (size_t b = a; b <= len; b += 3) {
			struct rec r = { .log = "", .n = 0 };
			struct sse_parser p;
			sse_parser_init(&p, 1 << 20, on_event, &r);
			CHECK(sse_parser_feed(&p, stream, a) == 0);
			CHECK(sse_parser_feed(&p, stream + a, b - a) == 0);
			CHECK(sse_parser_feed(&p, stream + b, len - b) == 0);
			CHECK(sse_parser_end(&p) == 0);
			if (!CHECK_EQ_STR(r.log, expect) || !CHECK_EQ_INT(r.n, expect_n)) {
				fprintf(stderr, "  split at %zu,%zu\n", a, b);
				sse_parser_finish(&p);
				return;
			}
			sse_parser_finish(&p);
		}
	}
}

int main(void)
{
	/* OpenAI-style stream with CRLF, a comment ping, a usage-only chunk and [DONE] */
	run_all_splits("data: {\"a\":1}\r\n\r\n: ping\r\n\r\ndata: {\"b\":2}\r\n\r\n"
		       "data: {\"choices\":[],\"usage\":{}}\r\n\r\ndata: [DONE]\r\n\r\n",
		       "[message|{\"a\":1}][message|{\"b\":2}][message|{\"choices\":[],\"usage\":{}}][message|[DONE]]", 4);
	/* LF only, multi-line data, named event, no space after colon */
	run_all_splits("event: error\ndata: line1\ndata:line2\n\nid: 7\nretry: 10\ndata: x\n\n",
		       "[error|line1\nline2][message|x]", 2);
	/* bare CR line ends */
	run_all_splits("data: a\r\rdata: b\r\r", "[message|a][message|b]", 2);
	/* final event without its blank line is dispatched at end */
	run_all_splits("data: tail", "[message|tail]", 1);
	/* empty data field still makes an event; field without colon */
	run_all_splits("data\n\ndata:\n\n", "[message|][message|]", 2);

	/* an event over the limit fails, and stays failed */
	struct rec r = { .log = "" };
	struct sse_parser p;
	sse_parser_init(&p, 100, on_event, &r);
	char big[300];
	memset(big, 'x', sizeof big);
	CHECK(sse_parser_feed(&p, "data: ", 6) == 0);
	CHECK(sse_parser_feed(&p, big, sizeof big) == -EMSGSIZE);
	CHECK(sse_parser_feed(&p, "\n\n", 2) == -EMSGSIZE);
	CHECK_EQ_INT(r.n, 0);
	sse_parser_finish(&p);
	/* many data lines adding up past the limit also fail */
	sse_parser_init(&p, 100, on_event, &r);
	int rc = 0;
	for (int i = 0; i < 50 && rc == 0; i++)
		rc = sse_parser_feed(&p, "data: 0123456789\n", 17);
	CHECK(rc == -EMSGSIZE);
	sse_parser_finish(&p);

	/* a callback's non-zero return stops feeding and is propagated */
	struct rec r2 = { .log = "", .stop_at = 1 };
	sse_parser_init(&p, 0, on_event, &r2);
	CHECK(sse_parser_feed(&p, "data: 1\n\ndata: 2\n\n", 18) == 42);
	CHECK_EQ_INT(r2.n, 1);
	CHECK_EQ_INT(p.events, 1);
	sse_parser_finish(&p);

	/* reset makes a parser reusable */
	struct rec r3 = { .log = "" };
	sse_parser_init(&p, 0, on_event, &r3);
	CHECK(sse_parser_feed(&p, "data: half", 10) == 0);
	sse_parser_reset(&p);
	CHECK(sse_parser_feed(&p, "data: new\n\n", 11) == 0);
	CHECK_EQ_STR(r3.log, "[message|new]");
	sse_parser_finish(&p);
	return test_done();
}
