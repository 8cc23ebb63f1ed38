/* sse — see sse.h. Line-oriented: bytes accumulate until CR, LF or CRLF; a blank
 * line dispatches the event. Work per byte is O(1) (memchr finds line ends), so
 * the parser is never the bottleneck of a load generator. */
#include "net/sse.h"
#include <errno.h>
#include <string.h>

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
	strcpy(p->event, "message");
	return rc;
}

/* s may point into the caller's bytes (borrowable) or into p->line (not). */
static int process_line(struct sse_parser *p, const char *s, size_t n, int borrowable)
{
	if (n == 0)
		return dispatch(p);
	if (s[0] == ':') {
		p->comments++;
		return 0;
	}
	const char *colon = memchr(s, ':', n);
	size_t name_len = colon ? (size_t)(colon - s) : n;
	const char *val = colon ? colon + 1 : s + n;
	size_t val_len = colon ? n - name_len - 1 : 0;
	if (val_len && *val == ' ') {
		val++;
		val_len--;
	}
	if (name_len == 4 && memcmp(s, "data", 4) == 0) {
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
	} else if (name_len == 5 && memcmp(s, "event", 5) == 0) {
		size_t k = val_len < sizeof p->event - 1 ? val_len : sizeof p->event - 1;
		memcpy(p->event, val, k);
		p->event[k] = 0;
	}
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
		/* find the first CR or LF */
		const char *lf = memchr(start, '\n', left);
		const char *cr = memchr(start, '\r', lf ? (size_t)(lf - start) : left);
		const char *end = cr ? cr : lf;
		if (!end) {
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
		if (end == cr) {
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
