/* stream — see stream.h. */
#include "net/stream.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(struct oai_stream *s, const char *cls, const char *fmt, const char *arg)
{
	if (s->fail_class)
		return;
	s->fail_class = cls;
	snprintf(s->error_detail, sizeof s->error_detail, fmt, arg);
}

static int take_chunk(struct oai_stream *s, const char *json, size_t n, int64_t t_ns)
{
	struct openai_chunk c;
	int rc = openai_chunk_parse_shaped(&s->shape, &c, json, n);
	if (rc) {
		fail(s, "parse", "%.200s", c.error_message);
		openai_chunk_finish(&c);
		return -1;
	}
	if (c.is_error) {
		fail(s, "server", "server error in stream: %.200s", c.error_message);
		openai_chunk_finish(&c);
		return -1;
	}
	if (c.has_token) {
		if (!s->t_first_token)
			s->t_first_token = t_ns;
		s->t_last_token = t_ns;
		s->token_events++;
		if (s->opt.keep_event_times) {
			if (s->n_event_t == s->cap_event_t) {
				size_t cap = s->cap_event_t ? s->cap_event_t * 2 : 256;
				int64_t *p = realloc(s->event_t, cap * sizeof *p);
				if (!p) {
					s->failed_alloc = true;
				} else {
					s->event_t = p;
					s->cap_event_t = cap;
				}
			}
			if (s->n_event_t < s->cap_event_t)
				s->event_t[s->n_event_t++] = t_ns;
		}
		if (s->opt.keep_text) {
			if ((c.content && buf_append(&s->content, c.content, c.content_len)) ||
			    (c.reasoning && buf_append(&s->reasoning, c.reasoning, c.reasoning_len)))
				s->failed_alloc = true;
		}
	}
	if (c.finish_reason[0])
		snprintf(s->finish_reason, sizeof s->finish_reason, "%s", c.finish_reason);
	if (c.has_usage) {
		s->completion_tokens = c.completion_tokens;
		if (c.prompt_tokens >= 0)
			s->prompt_tokens = c.prompt_tokens;
		if (c.cached_tokens >= 0)
			s->cached_tokens = c.cached_tokens;
	}
	int stop = 0;
	if (c.has_token && s->opt.on_token)
		stop = s->opt.on_token(s, &c, s->opt.ud);
	openai_chunk_finish(&c);
	if (stop) {
		s->stopped_early = true;
		return -1;
	}
	return 0;
}

static int on_event(void *ud, const char *event, const char *data, size_t n)
{
	struct oai_stream *s = ud;
	s->sse_events++;
	if (event[0] == 'e' && strcmp(event, "error") == 0) {
		fail(s, "server", "error event: %.200s", data);
		return -1;
	}
	if (n == 6 && memcmp(data, "[DONE]", 6) == 0) {
		s->done_marker = true;
		return 0;
	}
	/* the time of the bytes that completed this event */
	return take_chunk(s, data, n, s->now_ns);
}

static int on_data(void *ud, const char *p, size_t n, int64_t t_ns)
{
	struct oai_stream *s = ud;
	s->now_ns = t_ns;
	if (!s->t_first_byte)
		s->t_first_byte = t_ns;
	if (!s->opt.stream) {
		if (s->raw.len + n > (16u << 20)) {
			fail(s, "size", "%s", "response body over 16 MiB");
			return -1;
		}
		return buf_append(&s->raw, p, n) ? -1 : 0;
	}
	int rc = sse_parser_feed(&s->sse, p, n);
	if (rc == -EMSGSIZE) {
		fail(s, "size", "%s", "an SSE event exceeded the size limit (1 MiB by default)");
		return -1;
	}
	if (rc == -ENOMEM) {
		fail(s, "client", "%s", "out of memory");
		return -1;
	}
	/* keep the first bytes of a non-SSE body for error messages */
	if (s->raw.len < 512 && buf_append(&s->raw, p, n < 512 ? n : 512))
		return -1;
	return rc ? -1 : 0;
}

static void on_http_done(void *ud, const struct http_result *r)
{
	struct oai_stream *s = ud;
	s->t_send = r->t_send_ns;
	s->t_done = r->t_done_ns;
	s->http_status = r->http_status;
	if (!s->fail_class && !s->stopped_early && !r->error && s->opt.stream) {
		int rc = sse_parser_end(&s->sse);
		if (rc == -EMSGSIZE)
			fail(s, "size", "%s", "an SSE event exceeded the size limit");
	}
	if (s->stopped_early) {
		s->error = NULL;
	} else if (r->error && strcmp(r->error, "aborted") != 0) {
		s->error = r->error;
		snprintf(s->error_detail, sizeof s->error_detail, "%s", r->detail);
		if (strcmp(r->error, "http") == 0 && s->raw.len)
			snprintf(s->error_detail, sizeof s->error_detail, "HTTP %d: %.200s", r->http_status, s->raw.data);
	} else if (s->fail_class) {
		s->error = s->fail_class;
	} else if (!s->opt.stream) {
		take_chunk(s, s->raw.data ? s->raw.data : "", s->raw.len, r->t_done_ns);
		s->error = s->fail_class;
	} else if (s->sse_events == 0) {
		s->error = "parse";
		snprintf(s->error_detail, sizeof s->error_detail, "no SSE events in a streamed response: %.120s",
			 s->raw.data ? s->raw.data : "");
	} else if (!s->done_marker && !s->finish_reason[0]) {
		s->error = "reset";
		snprintf(s->error_detail, sizeof s->error_detail,
			 "stream ended without a finish_reason or [DONE] (%lld events)", (long long)s->sse_events);
	}
	if (!s->error && s->failed_alloc) {
		s->error = "client";
		snprintf(s->error_detail, sizeof s->error_detail, "out of memory while recording the stream");
	}
	if (s->opt.on_done)
		s->opt.on_done(s, s->opt.ud);
}

int oai_stream_start(struct http_client *c, struct oai_stream *s, const struct oai_stream_opts *o)
{
	memset(s, 0, sizeof *s);
	s->opt = *o;
	s->prompt_tokens = s->cached_tokens = s->completion_tokens = -1;
	buf_init(&s->content);
	buf_init(&s->reasoning);
	buf_init(&s->raw);
	sse_parser_init(&s->sse, o->max_event_bytes, on_event, s);
	struct http_xfer x = {
		.url = o->url,
		.body = o->body,
		.body_len = o->body_len,
		.connect_timeout_ms = o->connect_timeout_ms,
		.first_byte_timeout_ms = o->first_byte_timeout_ms,
		.stall_timeout_ms = o->stall_timeout_ms,
		.total_timeout_ms = o->total_timeout_ms,
		.on_data = on_data,
		.on_done = on_http_done,
		.ud = s,
	};
	int rc = http_client_start(c, &x);
	if (rc)
		oai_stream_finish(s);
	return rc;
}

void oai_stream_finish(struct oai_stream *s)
{
	if (!s)
		return;
	buf_finish(&s->content);
	buf_finish(&s->reasoning);
	buf_finish(&s->raw);
	sse_parser_finish(&s->sse);
	free(s->event_t);
	s->event_t = NULL;
	s->n_event_t = s->cap_event_t = 0;
}
