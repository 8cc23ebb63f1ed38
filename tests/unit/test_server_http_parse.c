/* Unit tests for src/server/http_parse.c: the request line and header block
 * parser that the epoll loop feeds, including the inputs its fuzzer found
 * (a NUL inside the method, a header end the whole input and its pieces
 * disagreed on). */
#include "server/http_parse.h"
#include "test.h"
#include <string.h>

static int parse(const char *s, size_t n, struct http_head *h, const char **why)
{
	size_t hl = http_head_end(s, n);
	if (hl == 0)
		return -1;
	return http_head_parse(s, hl, 1000, h, why);
}

#define P(lit, h, why) parse(lit, sizeof lit - 1, h, why)

int main(void)
{
	struct http_head h;
	const char *why;
	CHECK_EQ_INT(P("POST /v1/completions?x=1 HTTP/1.1\r\nContent-Length: 12\r\nExpect: 100-continue\r\n\r\n", &h, &why), 0);
	CHECK_EQ_STR(h.method, "POST");
	CHECK_EQ_STR(h.path, "/v1/completions");
	CHECK_EQ_INT(h.body_bytes, 12);
	CHECK(h.keep_alive && h.expect_continue);
	CHECK_EQ_INT(P("GET / HTTP/1.0\r\n\r\n", &h, &why), 0);
	CHECK(!h.keep_alive);
	CHECK_EQ_INT(P("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &h, &why), 0);
	CHECK(!h.keep_alive);
	/* the header block ends at the first blank line, LF or CRLF, whichever comes first */
	static const char lf[] = "GET /a HTTP/1.1\nX: y\n\nbody\r\n\r\n";
	CHECK_EQ_INT(http_head_end(lf, sizeof lf - 1), strstr(lf, "body") - lf);
	CHECK_EQ_INT(http_head_end("GET / HTTP/1.1\r\n\r", 17), 0);
	/* refused, with the status the server answers */
	CHECK_EQ_INT(P("GET / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", &h, &why), 413);
	CHECK_EQ_INT(P("GET / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", &h, &why), 400);
	CHECK_EQ_INT(P("GET / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", &h, &why), 400);
	CHECK_EQ_INT(P("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &h, &why), 411);
	CHECK_EQ_INT(P("GET / HTTP/2.0\r\n\r\n", &h, &why), 400);
	CHECK_EQ_INT(P("GET / HTTP/1.\r\n\r\n", &h, &why), 400);
	CHECK_EQ_INT(P("GET / HTTP/1.1\r\nno colon\r\n\r\n", &h, &why), 400);
	CHECK_EQ_INT(P("GET\t/ HTTP/1.1\r\n\r\n", &h, &why), 400);
	static const char nul_method[] = "\0\0POST / HTTP/1.1\r\n\r\n";
	CHECK_EQ_INT(parse(nul_method, sizeof nul_method - 1, &h, &why), 400);
	static const char nul_path[] = "GET /v1/models\0x HTTP/1.1\r\n\r\n";
	CHECK_EQ_INT(parse(nul_path, sizeof nul_path - 1, &h, &why), 400);
	CHECK(strstr(why, "control character") != NULL);
	char longpath[1200 + 32];
	memcpy(longpath, "GET /", 5);
	memset(longpath + 5, 'a', 1100);
	memcpy(longpath + 1105, " HTTP/1.1\r\n\r\n", 14);
	CHECK_EQ_INT(parse(longpath, 1105 + 13, &h, &why), 431);
	return test_done();
}
