/* http_parse — see http_parse.h. Every read stays inside data[0..hdr_bytes):
 * the request line and each header line are bounded by the '\n' that ends
 * them, never by a terminating NUL. */
#include "server/http_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t http_head_end(const char *data, size_t len)
{
	const char *crlf = memmem(data, len, "\r\n\r\n", 4);
	const char *lf = memmem(data, crlf ? (size_t)(crlf - data) + 4 : len, "\n\n", 2);
	if (lf && (!crlf || lf + 2 <= crlf + 4))
		return (size_t)(lf - data) + 2;
	return crlf ? (size_t)(crlf - data) + 4 : 0;
}

/* RFC 9110 token characters (methods, header names). */
static bool is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool all(const char *p, const char *end, bool (*ok)(unsigned char))
{
	for (; p < end; p++)
		if (!ok((unsigned char)*p))
			return false;
	return true;
}

/* Visible characters: a request target has no space, control byte or NUL. */
static bool is_vchar(unsigned char ch)
{
	return ch > 0x20 && ch != 0x7f;
}

/* Does the value v[0..vl) start with word (case-insensitive)? */
static bool starts_with(const char *v, size_t vl, const char *word)
{
	size_t n = strlen(word);
	return vl >= n && strncasecmp(v, word, n) == 0;
}

int http_head_parse(const char *data, size_t hdr_bytes, size_t max_body_bytes, struct http_head *h,
		    const char **why)
{
	const char *p = data;
	const char *end = p + hdr_bytes;
	const char *eol = memchr(p, '\n', hdr_bytes);
	memset(h, 0, sizeof *h);
	h->hdr_bytes = hdr_bytes;
	*why = "malformed request line";
	if (!eol)
		return 400;
	const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (!sp1 || sp1 - p >= (long)sizeof h->method || sp1 == p)
		return 400;
	const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || sp2 - sp1 - 1 >= (long)sizeof h->path || sp2 == sp1 + 1)
		return sp2 ? (*why = "request target too long", 431) : 400;
	if (!all(p, sp1, is_tchar))
		return 400; /* a NUL or control byte would be cut off or passed on unseen */
	if (!all(sp1 + 1, sp2, is_vchar)) {
		*why = "request target has a control character";
		return 400;
	}
	memcpy(h->method, p, (size_t)(sp1 - p));
	memcpy(h->path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	char *q = memchr(h->path, '?', (size_t)(sp2 - sp1 - 1));
	if (q)
		*q = 0;
	if (eol - (sp2 + 1) < 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp2[8] < '0' || sp2[8] > '9') {
		*why = "not an HTTP/1.x request";
		return 400;
	}
	h->keep_alive = sp2[8] == '1'; /* HTTP/1.1 keeps alive by default, 1.0 does not */
	for (const char *line = eol + 1; line < end;) {
		const char *le = memchr(line, '\n', (size_t)(end - line));
		if (!le)
			break;
		size_t ll = (size_t)(le - line);
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			break;
		const char *colon = memchr(line, ':', ll);
		if (!colon) {
			*why = "malformed header line";
			return 400;
		}
		size_t nl = (size_t)(colon - line);
		const char *v = colon + 1;
		while (v < line + ll && (*v == ' ' || *v == '\t'))
			v++;
		size_t vl = (size_t)(line + ll - v);
		if (nl == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
			char tmp[32];
			if (vl == 0 || vl >= sizeof tmp) {
				*why = "bad Content-Length";
				return 400;
			}
			memcpy(tmp, v, vl);
			tmp[vl] = 0;
			char *e;
			errno = 0;
			unsigned long long n = strtoull(tmp, &e, 10);
			if (*e || errno || tmp[0] < '0' || tmp[0] > '9') {
				*why = "bad Content-Length";
				return 400;
			}
			if (n > max_body_bytes) {
				*why = "request body too large";
				return 413;
			}
			h->body_bytes = (size_t)n;
		} else if (nl == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
			*why = "chunked request bodies are not supported; send Content-Length";
			return 411;
		} else if (nl == 10 && strncasecmp(line, "Connection", 10) == 0) {
			if (starts_with(v, vl, "close"))
				h->keep_alive = false;
			else if (starts_with(v, vl, "keep-alive"))
				h->keep_alive = true;
		} else if (nl == 6 && strncasecmp(line, "Expect", 6) == 0) {
			h->expect_continue = starts_with(v, vl, "100-continue");
		}
		line = le + 1;
	}
	return 0;
}
