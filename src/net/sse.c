/* sse — see sse.h. Line-oriented: bytes accumulate until CR, LF or CRLF; a blank
 * line dispatches the event. Work per byte is O(1): one SSE2 pass (16 bytes per
 * step, the x86-64 baseline; a byte loop elsewhere) finds the first CR or LF,
 * "data:" lines are recognised before any generic field parsing, and the event
 * name is only rewritten when an event field changed it, so the common event
 * (one data line, no name) costs the scan of its bytes and a few branches. */
#include "net/sse.h"
#include <errno.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <string.h>

/* The first CR or LF in [p, end), or end. */
static inline const char *find_eol(const char *p, const char *end)
{
#ifdef __SSE2__
	const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf)));
		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
#endif
	while (p < end && *p != '\r' && *p != '\n')
		p++;
	return p;
}

void sse_parser_init(struct sse_parser *p, size_t max_event_bytes, sse_event_fn fn, void *ud)
{
	memset(p, 0, sizeof *p);
	buf_init(&p->line);
	buf_init(&p->data);
	p->max_event_bytes = max_event_bytes ? max_event_bytes : 1u << 20;
	p->on_event = fn;
	p->ud = ud;
	strcpy(p->event, "message");
}

void sse_parser_finish(struct sse_parser *p)
{
	if (!p)
		return;
	buf_finish(&p->line);
	buf_finish(&p->data);
}

void sse_parser_reset(struct sse_parser *p)
{
	buf_reset(&p->line);
	buf_reset(&p->data);
	strcpy(p->event, "message");
	p->borrowed = NULL;
	p->borrowed_len = 0;
	p->has_data = 0;
	p->last_cr = 0;
	p->failed = 0;
	p->event_set = 0;
}

/* Moves a borrowed data line into the parser's own buffer (before more lines are
 * appended, or before the caller's bytes go away). */
static int own_data(struct sse_parser *p)
{
	if (!p->borrowed)
		return 0;
	int rc = buf_append(&p->data, p->borrowed, p->borrowed_len) ? -ENOMEM : 0;
	p->borrowed = NULL;
	p->borrowed_len = 0;
	return rc;
}

static int dispatch(struct sse_parser *p)
{
	int rc = 0;
	if (p->has_data) {
		p->events++;
		if (p->borrowed)
			rc = p->on_event(p->ud, p->event, p->borrowed, p->borrowed_len);
		else
			rc = p->on_event(p->ud, p->event, p->data.data ? p->data.data : "", p->data.len);
	}
	p->borrowed = NULL;
	p->borrowed_len = 0;
	buf_reset(&p->data);
	p->has_data = 0;
	if (p->event_set) {
		strcpy(p->event, "message");
		p->event_set = 0;
	}
	return rc;
}

static int data_line(struct sse_parser *p, const char *val, size_t val_len, int borrowable);

/* s may point into the caller's bytes (borrowable) or into p->line (not). */
static int process_line(struct sse_parser *p, const char *s, size_t n, int borrowable)
{
	if (n == 0)
		return dispatch(p);
	if (s[0] == ':') {
		p->comments++;
		return 0;
	}
	const char *val;
	size_t val_len;
	if (n >= 5 && s[0] == 'd' && s[1] == 'a' && s[2] == 't' && s[3] == 'a' && s[4] == ':') {
		val = s + 5;
		val_len = n - 5;
		if (val_len && *val == ' ') {
			val++;
			val_len--;
		}
		return data_line(p, val, val_len, borrowable);
	}
	const char *colon = memchr(s, ':', n);
	size_t name_len = colon ? (size_t)(colon - s) : n;
	val = colon ? colon + 1 : s + n;
	val_len = colon ? n - name_len - 1 : 0;
	if (val_len && *val == ' ') {
		val++;
		val_len--;
	}
	if (name_len == 4 && memcmp(s, "data", 4) == 0) {
		return data_line(p, val, val_len, borrowable);
	} else if (name_len == 5 && memcmp(s, "event", 5) == 0) {
		size_t k = val_len < sizeof p->event - 1 ? val_len : sizeof p->event - 1;
		memcpy(p->event, val, k);
		p->event[k] = 0;
		p->event_set = 1;
	}
	return 0;
}

/* One data field's value. */
static int data_line(struct sse_parser *p, const char *val, size_t val_len, int borrowable)
{
	if (p->data.len + p->borrowed_len + val_len + 1 > p->max_event_bytes)
		return -EMSGSIZE;
	if (!p->has_data && borrowable) {
		/* the common case: one data line, dispatched before this feed returns */
		p->borrowed = val;
		p->borrowed_len = val_len;
		p->has_data = 1;
		return 0;
	}
	if (own_data(p))
		return -ENOMEM;
	if (p->has_data && buf_append(&p->data, "\n", 1))
		return -ENOMEM;
	if (buf_append(&p->data, val, val_len))
		return -ENOMEM;
	p->has_data = 1;
	return 0;
}

int sse_parser_feed(struct sse_parser *p, const char *bytes, size_t n)
{
	if (p->failed)
		return p->failed;
	size_t i = 0;
	if (p->last_cr && n > 0) {
		if (bytes[0] == '\n')
			i = 1;
		p->last_cr = 0;
	}
	int rc = 0;
	while (i < n) {
		const char *start = bytes + i;
		size_t left = n - i;
		const char *end = find_eol(start, start + left);
		if (end == start + left) {
			if (p->line.len + left > p->max_event_bytes + 64) {
				rc = -EMSGSIZE;
				goto out;
			}
			if (buf_append(&p->line, start, left)) {
				rc = -ENOMEM;
				goto out;
			}
			break;
		}
		size_t seg = (size_t)(end - start);
		if (p->line.len) {
			if (buf_append(&p->line, start, seg)) {
				rc = -ENOMEM;
				goto out;
			}
			rc = process_line(p, p->line.data, p->line.len, 0);
			buf_reset(&p->line);
		} else {
			rc = process_line(p, start, seg, 1);
		}
		if (rc)
			goto out;
		i += seg + 1;
		if (*end == '\r') {
			if (i < n) {
				if (bytes[i] == '\n')
					i++;
			} else {
				p->last_cr = 1;
			}
		}
	}
out:
	/* an event still open keeps its data past this call: copy what was borrowed */
	if (!rc && own_data(p))
		rc = -ENOMEM;
	if (rc)
		p->failed = rc;
	return rc;
}

int sse_parser_end(struct sse_parser *p)
{
	if (p->failed)
		return p->failed;
	int rc = 0;
	if (p->line.len) {
		rc = process_line(p, p->line.data, p->line.len, 0);
		buf_reset(&p->line);
	}
	if (!rc && p->has_data)
		rc = dispatch(p);
	return rc;
}
