/* http1 — see http1.h. The header block is collected line by line (memchr to
 * each LF), so body bytes that arrive in the same read are never copied; the
 * chunked framing is a byte-level state machine, so a split at any byte position
 * needs no buffering; chunk data and Content-Length bodies go to on_body in
 * place. Line ends are CRLF; a bare LF is accepted as well (as most clients do). */
#include "net/http1.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum {
	S_HEAD,       /* collecting the header block */
	S_LEN,        /* Content-Length body */
	S_CLOSE,      /* body until the connection closes */
	S_CH_SIZE0,   /* chunk size: first hex digit */
	S_CH_SIZE,    /* chunk size: more hex digits, ';', CR or LF */
	S_CH_EXT,     /* chunk extension: skipped to the line end */
	S_CH_SIZE_LF, /* CR seen after the size line: LF next */
	S_CH_DATA,    /* chunk data */
	S_CH_DATA_CR, /* after chunk data: CR or LF */
	S_CH_DATA_LF, /* after chunk data and CR: LF */
	S_TR_START,   /* start of a trailer line, or the final blank line */
	S_TR_LINE,    /* inside a trailer line */
	S_TR_END_LF,  /* CR at the start of a line: the final LF next */
	S_DONE,
	S_FAILED,
};

#define MAX_SIZE_DIGITS 15 /* chunk sizes below 2^60 */

void http1_parser_init(struct http1_parser *p, size_t max_head)
{
	memset(p, 0, sizeof *p);
	buf_init(&p->head);
	p->max_head = max_head ? max_head : 64u << 10;
}

void http1_parser_reset(struct http1_parser *p)
{
	size_t max_head = p->max_head;
	struct buf head = p->head;
	memset(p, 0, sizeof *p);
	p->head = head;
	buf_reset(&p->head);
	p->max_head = max_head;
}

void http1_parser_finish(struct http1_parser *p)
{
	if (p)
		buf_finish(&p->head);
}

__attribute__((format(printf, 3, 4))) static long fail(struct http1_parser *p, long rc, const char *fmt, ...)
{
	p->state = S_FAILED;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->error, sizeof p->error, fmt, ap);
	va_end(ap);
	return rc;
}

/* One header field line (no line end). 0 or -EBADMSG. */
static long field(struct http1_parser *p, const char *s, size_t n, int64_t *clen, bool *te_seen, bool *te_chunked)
{
	const char *colon = memchr(s, ':', n);
	if (!colon || colon == s)
		return fail(p, -EBADMSG, "malformed HTTP response: a header line without a field name: %.*s",
			    (int)(n < 60 ? n : 60), s);
	size_t nl = (size_t)(colon - s);
	for (size_t i = 0; i < nl; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return fail(p, -EBADMSG, "malformed HTTP response: bad header field name: %.*s",
				    (int)(n < 60 ? n : 60), s);
	const char *v = colon + 1, *ve = s + n;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	if (nl == 14 && strncasecmp(s, "content-length", 14) == 0) {
		/* digits, or a list of one repeated value ("5, 5") */
		int64_t val = -1;
		const char *q = v;
		while (q < ve) {
			int64_t x = 0;
			const char *st = q;
			while (q < ve && *q >= '0' && *q <= '9') {
				if (x > (INT64_MAX - 9) / 10)
					return fail(p, -EBADMSG, "malformed HTTP response: Content-Length too large");
				x = x * 10 + (*q++ - '0');
			}
			if (q == st)
				return fail(p, -EBADMSG, "malformed HTTP response: bad Content-Length");
			if (val >= 0 && x != val)
				return fail(p, -EBADMSG, "malformed HTTP response: conflicting Content-Length values");
			val = x;
			while (q < ve && (*q == ' ' || *q == '\t'))
				q++;
			if (q < ve && *q != ',')
				return fail(p, -EBADMSG, "malformed HTTP response: bad Content-Length");
			if (q < ve)
				q++;
			while (q < ve && (*q == ' ' || *q == '\t'))
				q++;
		}
		if (val < 0)
			return fail(p, -EBADMSG, "malformed HTTP response: empty Content-Length");
		if (*clen >= 0 && *clen != val)
			return fail(p, -EBADMSG, "malformed HTTP response: conflicting Content-Length values");
		*clen = val;
	} else if (nl == 17 && strncasecmp(s, "transfer-encoding", 17) == 0) {
		/* the last coding decides: chunked, or the body runs to the close */
		*te_seen = true;
		const char *last = v;
		for (const char *q = v; q < ve; q++)
			if (*q == ',')
				last = q + 1;
		while (last < ve && (*last == ' ' || *last == '\t'))
			last++;
		*te_chunked = (size_t)(ve - last) == 7 && strncasecmp(last, "chunked", 7) == 0;
	} else if (nl == 10 && strncasecmp(s, "connection", 10) == 0) {
		for (const char *q = v; q < ve;) {
			while (q < ve && (*q == ' ' || *q == '\t' || *q == ','))
				q++;
			const char *t = q;
			while (q < ve && *q != ',' && *q != ' ' && *q != '\t')
				q++;
			if (q - t == 5 && strncasecmp(t, "close", 5) == 0)
				p->keep_alive = false;
			else if (q - t == 10 && strncasecmp(t, "keep-alive", 10) == 0)
				p->keep_alive = true;
		}
	}
	return 0;
}

/* The complete header block head[0, n) (its final blank line excluded). 0, 1 for an
 * interim 1xx response (skip it), or -EBADMSG. */
static long head_parse(struct http1_parser *p, const char *h, size_t n)
{
	const char *e = h + n;
	const char *lf = memchr(h, '\n', n);
	const char *le = lf ? lf : e;
	size_t sl = (size_t)(le - h);
	if (sl && h[sl - 1] == '\r')
		sl--;
	/* HTTP/1.x SP 3DIGIT [SP reason] */
	if (sl < 12 || memcmp(h, "HTTP/1.", 7) != 0 || (h[7] != '0' && h[7] != '1') || h[8] != ' ' || h[9] < '1' ||
	    h[9] > '5' || h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9' || (sl > 12 && h[12] != ' '))
		return fail(p, -EBADMSG, "malformed HTTP response: bad status line: %.*s", (int)(sl < 60 ? sl : 60), h);
	int status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
	p->keep_alive = h[7] == '1';
	int64_t clen = -1;
	bool te_seen = false, te_chunked = false;
	const char *s = lf ? lf + 1 : e;
	while (s < e) {
		const char *l = memchr(s, '\n', (size_t)(e - s));
		const char *le2 = l ? l : e;
		size_t ln = (size_t)(le2 - s);
		if (ln && s[ln - 1] == '\r')
			ln--;
		if (ln && (s[0] == ' ' || s[0] == '\t')) {
			/* obsolete line folding: continues the previous field's value; dropped */
		} else if (ln) {
			long rc = field(p, s, ln, &clen, &te_seen, &te_chunked);
			if (rc)
				return rc;
		}
		s = l ? l + 1 : e;
	}
	if (status == 101)
		return fail(p, -EBADMSG, "unexpected HTTP response: 101 Switching Protocols");
	if (status < 200)
		return 1;
	p->status = status;
	p->head_done = true;
	if (status == 204 || status == 304) {
		p->framing = HTTP1_NONE;
		p->state = S_DONE;
		p->done = true;
	} else if (te_seen) {
		if (te_chunked) {
			p->framing = HTTP1_CHUNKED;
			p->state = S_CH_SIZE0;
		} else {
			p->framing = HTTP1_CLOSE;
			p->state = S_CLOSE;
			p->keep_alive = false;
		}
		if (clen >= 0)
			p->keep_alive = false; /* both framings sent: the connection is not trusted again */
	} else if (clen >= 0) {
		p->framing = HTTP1_LENGTH;
		p->content_length = p->left = (uint64_t)clen;
		p->state = S_LEN;
		if (clen == 0) {
			p->state = S_DONE;
			p->done = true;
		}
	} else {
		p->framing = HTTP1_CLOSE;
		p->state = S_CLOSE;
		p->keep_alive = false;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void finish_ok(struct http1_parser *p)
{
	p->state = S_DONE;
	p->done = true;
}

/* Passes up to p->left of the n body bytes at b to on_body (a Content-Length body or one
 * chunk's data). Returns the bytes taken, or a negative errno once the callback stops. */
static long body_take(struct http1_parser *p, const char *b, size_t n, http1_body_fn on_body, void *ud)
{
	size_t take = n < p->left ? n : (size_t)p->left;
	p->left -= take;
	p->body_bytes += take;
	if (on_body && on_body(ud, b, take))
		return fail(p, -ECANCELED, "stopped by the body callback");
	return (long)take;
}

long http1_parser_feed(struct http1_parser *p, const char *b, size_t n, http1_body_fn on_body, void *ud)
{
	if (p->state == S_FAILED)
		return -EBADMSG;
	size_t i = 0;
	while (i < n) {
		switch (p->state) {
		case S_DONE:
			return (long)i;
		case S_HEAD: {
			const char *lf = memchr(b + i, '\n', n - i);
			size_t take = lf ? (size_t)(lf - (b + i)) + 1 : n - i;
			if (p->head.len + take > p->max_head)
				return fail(p, -EMSGSIZE, "HTTP response headers over %zu bytes", p->max_head);
			size_t line_start = p->line_start;
			if (buf_append(&p->head, b + i, take))
				return fail(p, -ENOMEM, "out of memory");
			i += take;
			if (!lf)
				break;
			size_t ll = p->head.len - line_start;
			bool blank = ll == 1 || (ll == 2 && p->head.data[line_start] == '\r');
			p->line_start = p->head.len;
			if (!blank)
				break;
			p->line_start = 0;
			if (line_start == 0) { /* blank lines before the status line are ignored */
				buf_reset(&p->head);
				break;
			}
			long rc = head_parse(p, p->head.data, line_start);
			buf_reset(&p->head);
			if (rc < 0)
				return rc;
			/* rc == 1: an interim response; the next header block follows */
			break;
		}
		case S_LEN: {
			long take = body_take(p, b + i, n - i, on_body, ud);
			if (take < 0)
				return take;
			i += (size_t)take;
			if (p->left == 0)
				finish_ok(p);
			break;
		}
		case S_CLOSE:
			p->body_bytes += n - i;
			if (on_body && on_body(ud, b + i, n - i))
				return fail(p, -ECANCELED, "stopped by the body callback");
			i = n;
			break;
		case S_CH_SIZE0:
		case S_CH_SIZE: {
			char c = b[i];
			int h = hexval(c);
			if (h >= 0) {
				if (p->state == S_CH_SIZE && p->left >> (4 * (MAX_SIZE_DIGITS - 1)))
					return fail(p, -EBADMSG, "malformed HTTP response: chunk size too large");
				p->left = p->left * 16 + (uint64_t)h;
				p->state = S_CH_SIZE;
			} else if (p->state == S_CH_SIZE0) {
				return fail(p, -EBADMSG, "malformed HTTP response: bad chunk size line");
			} else if (c == ';' || c == ' ' || c == '\t') {
				p->state = S_CH_EXT;
			} else if (c == '\r') {
				p->state = S_CH_SIZE_LF;
			} else if (c == '\n') {
				p->state = p->left ? S_CH_DATA : S_TR_START;
			} else {
				return fail(p, -EBADMSG, "malformed HTTP response: bad chunk size line");
			}
			i++;
			break;
		}
		case S_CH_EXT: {
			/* extensions are skipped up to the line end; a bare CR inside is refused */
			const char *lf = memchr(b + i, '\n', n - i);
			const char *cr = memchr(b + i, '\r', lf ? (size_t)(lf - (b + i)) : n - i);
			if (cr) {
				i = (size_t)(cr - b) + 1;
				p->state = S_CH_SIZE_LF;
			} else if (lf) {
				i = (size_t)(lf - b) + 1;
				p->state = p->left ? S_CH_DATA : S_TR_START;
			} else {
				i = n;
			}
			break;
		}
		case S_CH_SIZE_LF:
			if (b[i] != '\n')
				return fail(p, -EBADMSG, "malformed HTTP response: chunk size line not ended by CRLF");
			i++;
			p->state = p->left ? S_CH_DATA : S_TR_START;
			break;
		case S_CH_DATA: {
			long take = body_take(p, b + i, n - i, on_body, ud);
			if (take < 0)
				return take;
			i += (size_t)take;
			if (p->left == 0)
				p->state = S_CH_DATA_CR;
			break;
		}
		case S_CH_DATA_CR:
			if (b[i] == '\r')
				p->state = S_CH_DATA_LF;
			else if (b[i] == '\n')
				p->state = S_CH_SIZE0;
			else
				return fail(p, -EBADMSG, "malformed HTTP response: chunk data longer than its size");
			i++;
			break;
		case S_CH_DATA_LF:
			if (b[i] != '\n')
				return fail(p, -EBADMSG, "malformed HTTP response: chunk data not ended by CRLF");
			i++;
			p->state = S_CH_SIZE0;
			break;
		case S_TR_START:
			if (b[i] == '\r') {
				p->state = S_TR_END_LF;
			} else if (b[i] == '\n') {
				i++;
				finish_ok(p);
				return (long)i;
			} else {
				p->state = S_TR_LINE;
				continue; /* the byte belongs to the trailer line */
			}
			i++;
			break;
		case S_TR_END_LF:
			if (b[i] != '\n')
				return fail(p, -EBADMSG, "malformed HTTP response: bad end of chunked body");
			i++;
			finish_ok(p);
			return (long)i;
		case S_TR_LINE: {
			/* trailer fields are read and dropped, bounded like the header block */
			const char *lf = memchr(b + i, '\n', n - i);
			size_t take = lf ? (size_t)(lf - (b + i)) + 1 : n - i;
			p->left += take; /* bytes of trailer so far */
			if (p->left > p->max_head)
				return fail(p, -EMSGSIZE, "HTTP trailer fields over the header limit");
			i += take;
			if (lf)
				p->state = S_TR_START;
			break;
		}
		default:
			return -EBADMSG;
		}
	}
	return (long)i;
}

int http1_parser_eof(struct http1_parser *p)
{
	switch (p->state) {
	case S_DONE:
		return 0;
	case S_CLOSE:
		finish_ok(p);
		return 0;
	case S_FAILED:
		return -EPIPE;
	case S_HEAD:
		if (p->head.len == 0)
			snprintf(p->error, sizeof p->error, "connection closed before any response byte");
		else
			snprintf(p->error, sizeof p->error, "connection closed inside the response headers");
		break;
	case S_LEN:
		snprintf(p->error, sizeof p->error, "connection closed after %llu of %llu body bytes",
			 (unsigned long long)(p->content_length - p->left), (unsigned long long)p->content_length);
		break;
	default:
		snprintf(p->error, sizeof p->error, "connection closed inside a chunked body (%llu bytes read)",
			 (unsigned long long)p->body_bytes);
		break;
	}
	p->state = S_FAILED;
	return -EPIPE;
}
