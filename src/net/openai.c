/* openai — see openai.h. cJSON builds request bodies; streamed chunks go through
 * the validating scanner below, which knows only the fields that matter. Chat and
 * completions chunks share one interpretation: text is choices[0].text
 * (completions) or choices[0].delta.content / message.content (chat). */
#include "net/openai.h"
#include "core/json.h"
#include <cjson/cJSON.h>
#include <errno.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *openai_api_path(enum openai_api api)
{
	return api == OPENAI_CHAT ? "/v1/chat/completions" : "/v1/completions";
}

int openai_request_body(const struct openai_request *req, struct buf *out)
{
	int rc = -ENOMEM;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	if (req->model)
		cJSON_AddStringToObject(o, "model", req->model);
	if (req->api == OPENAI_CHAT) {
		cJSON *msgs = NULL;
		if (req->messages_json) {
			msgs = cJSON_Parse(req->messages_json);
			if (!cJSON_IsArray(msgs)) {
				cJSON_Delete(msgs);
				rc = -EINVAL;
				goto out;
			}
		} else {
			msgs = cJSON_CreateArray();
			cJSON *m = cJSON_CreateObject();
			cJSON_AddStringToObject(m, "role", "user");
			cJSON_AddStringToObject(m, "content", req->prompt ? req->prompt : "");
			cJSON_AddItemToArray(msgs, m);
		}
		cJSON_AddItemToObject(o, "messages", msgs);
	} else if (req->prompt_ids) {
		cJSON *arr = cJSON_CreateArray();
		for (size_t i = 0; i < req->n_prompt_ids; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(req->prompt_ids[i]));
		cJSON_AddItemToObject(o, "prompt", arr);
	} else {
		cJSON_AddStringToObject(o, "prompt", req->prompt ? req->prompt : "");
	}
	if (req->max_tokens > 0)
		cJSON_AddNumberToObject(o, "max_tokens", (double)req->max_tokens);
	if (req->temperature >= 0)
		cJSON_AddNumberToObject(o, "temperature", req->temperature);
	if (req->top_p >= 0)
		cJSON_AddNumberToObject(o, "top_p", req->top_p);
	if (req->top_k >= 0)
		cJSON_AddNumberToObject(o, "top_k", (double)req->top_k);
	if (req->seed >= 0)
		cJSON_AddNumberToObject(o, "seed", (double)req->seed);
	if (req->ignore_eos)
		cJSON_AddTrueToObject(o, "ignore_eos");
	if (req->stop) {
		cJSON *arr = cJSON_CreateArray();
		for (const char *const *s = req->stop; *s; s++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(*s));
		cJSON_AddItemToObject(o, "stop", arr);
	}
	cJSON_AddBoolToObject(o, "stream", req->stream);
	if (req->stream && req->include_usage) {
		cJSON *so = cJSON_CreateObject();
		cJSON_AddTrueToObject(so, "include_usage");
		cJSON_AddItemToObject(o, "stream_options", so);
	}
	if (req->extra_json) {
		cJSON *extra = cJSON_Parse(req->extra_json);
		if (!cJSON_IsObject(extra)) {
			cJSON_Delete(extra);
			rc = -EINVAL;
			goto out;
		}
		cJSON *it = extra->child;
		while (it) {
			cJSON *next = it->next;
			cJSON_DetachItemViaPointer(extra, it);
			cJSON_DeleteItemFromObjectCaseSensitive(o, it->string);
			cJSON_AddItemToObject(o, it->string, it);
			it = next;
		}
		cJSON_Delete(extra);
	}
	char *s = cJSON_PrintUnformatted(o);
	if (!s)
		goto out;
	rc = buf_puts(out, s);
	cJSON_free(s);
out:
	cJSON_Delete(o);
	return rc;
}

/* ---- the chunk scanner ----
 * One pass over RFC 8259 JSON that validates every byte and keeps only the fields
 * sixi reads, tracking where each value sits in the OpenAI chunk schema. It runs
 * once per SSE event, the hottest code of the load generator, so it is shaped for
 * the common compact chunk:
 *  - strings are skipped 16 bytes at a time (SSE2, part of the x86-64 baseline;
 *    a byte loop elsewhere); escapes and control characters leave the fast path
 *    for an out-of-line validator;
 *  - keys are looked up only under the objects whose keys matter (root, error,
 *    choices[0], delta/message, usage, prompt_tokens_details), by length first and
 *    then as whole words, never through memcmp calls;
 *  - integers that nobody reads are skipped by a digit loop; the full number
 *    grammar runs only for fractions, exponents and the usage counts;
 *  - nothing is cleared in bulk: openai_chunk_parse sets each result field once.
 * Callgrind over sixi-bench selftest (256-event responses): about 1,500
 * instructions per event before these changes, about 400 after. Depth is bounded. */

enum loc {
	L_OTHER, L_ROOT, L_ERROR, L_ERRMSG, L_CHOICES, L_CHOICE0, L_DELTA, L_TEXT, L_CONTENT, L_REASONING,
	L_REASONING2, L_TOOLCALLS, L_FINISH, L_USAGE, L_CT, L_PT, L_PTD, L_CACHED,
};

struct span {
	const char *p;
	size_t n;
	bool escaped;
};

struct scan {
	const char *s, *end;
	const char *why;
	struct span text, content, reasoning, reasoning2, finish, errmsg;
	bool has_usage, is_error, tool_calls;
	int64_t ct, pt, cached;
};

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static bool bad_at(struct scan *c, const char *p, const char *why)
{
	c->s = p;
	if (!c->why)
		c->why = why;
	return false;
}

/* 1 for bytes that end the fast path of a string: '"', '\\' and control characters. */
#ifndef __SSE2__
static const unsigned char str_stop[256] = {
	[0] = 1, [1] = 1, [2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [7] = 1, [8] = 1, [9] = 1, [10] = 1,
	[11] = 1, [12] = 1, [13] = 1, [14] = 1, [15] = 1, [16] = 1, [17] = 1, [18] = 1, [19] = 1, [20] = 1,
	[21] = 1, [22] = 1, [23] = 1, [24] = 1, [25] = 1, [26] = 1, [27] = 1, [28] = 1, [29] = 1, [30] = 1,
	[31] = 1, ['"'] = 1, ['\\'] = 1,
};
#endif

static bool is_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
}

/* Advances p to the first byte that str_stop marks. The text is padded with NUL
 * bytes (a stop byte) past its end, so the loop needs no bounds test and may read
 * up to 15 bytes beyond the byte it stops at. */
static inline const char *skip_plain(const char *p)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
	for (;;) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		/* control characters: min(v, 0x1f) == v as unsigned bytes */
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
					   _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
		unsigned mask = (unsigned)_mm_movemask_epi8(hit);
		if (mask)
			return p + __builtin_ctz(mask);
		p += 16;
	}
#else
	while (!str_stop[(unsigned char)*p])
		p++;
	return p;
#endif
}

/* The slow part of a string: p is on a backslash or a control character (or at end).
 * Validates escapes up to the closing quote and returns it, or NULL with c->why set. */
static const char *string_rest(struct scan *c, const char *p, const char *end)
{
	for (;;) {
		if (p >= end) {
			bad_at(c, p, "unterminated string");
			return NULL;
		}
		unsigned char ch = (unsigned char)*p;
		if (ch == '"')
			return p;
		if (ch < 0x20) {
			bad_at(c, p, "control character in a string");
			return NULL;
		}
		/* a backslash */
		if (++p >= end) {
			bad_at(c, p, "unterminated string");
			return NULL;
		}
		if (*p == 'u') {
			if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4])) {
				bad_at(c, p, "bad \\u escape");
				return NULL;
			}
			p += 5;
		} else if (*p == '"' || *p == '\\' || *p == '/' || *p == 'b' || *p == 'f' || *p == 'n' || *p == 'r' ||
			   *p == 't') {
			p++;
		} else {
			bad_at(c, p, "bad escape in a string");
			return NULL;
		}
		p = skip_plain(p);
	}
}

/* The string whose opening quote is at p: its span in *out; returns the byte after
 * the closing quote, or NULL. */
static inline const char *scan_str(struct scan *c, const char *p, const char *end, struct span *out)
{
	const char *s = p + 1;
	const char *q = skip_plain(s);
	bool esc = false;
	if (UNLIKELY(*q != '"' || q >= end)) {
		esc = true;
		q = string_rest(c, q, end);
		if (!q)
			return NULL;
	}
	out->p = s;
	out->n = (size_t)(q - s);
	out->escaped = esc;
	return q + 1;
}

/* Scans a number at *pp; when want, stores it if it is an integer (else -1). */
static bool scan_number(struct scan *c, const char **pp, bool want, int64_t *out)
{
	const char *p = *pp, *end = c->end, *st = p;
	bool neg = false;
	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= end)
		return bad_at(c, p, "bad number");
	int64_t v = 0;
	bool integral = true, overflow = false;
	if (*p == '0') {
		p++;
	} else if (*p >= '1' && *p <= '9') {
		while (p < end && *p >= '0' && *p <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				overflow = true;
			else
				v = v * 10 + (*p - '0');
			p++;
		}
	} else {
		return bad_at(c, p, "unexpected character");
	}
	if (p < end && *p == '.') {
		integral = false;
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return bad_at(c, p, "bad number");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		integral = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return bad_at(c, p, "bad number");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (want) {
		if (integral && !overflow) {
			*out = neg ? -v : v;
		} else {
			/* 64.0 or 6.4e1: exact integers written as floats still count. The text
			 * is the scanner's NUL-padded copy and the number is followed by a byte
			 * strtod stops at, so it reads exactly the validated number, however long. */
			char *stop = NULL;
			double d = strtod(st, &stop);
			if (stop != p)
				d = -1;
			*out = d >= 0 && d < 9.0e15 && d == (double)(int64_t)d ? (int64_t)d : -1;
		}
	}
	*pp = p;
	return true;
}

/* Byte-equality of n bytes, as whole words: with a literal and a constant n the
 * compiler folds the literal's words into immediates. */
static inline bool eqn(const char *p, const char *lit, size_t n)
{
	while (n >= 8) {
		uint64_t a, b;
		memcpy(&a, p, 8);
		memcpy(&b, lit, 8);
		if (a != b)
			return false;
		p += 8, lit += 8, n -= 8;
	}
	if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, p, 4);
		memcpy(&b, lit, 4);
		if (a != b)
			return false;
		p += 4, lit += 4, n -= 4;
	}
	while (n) {
		if (*p != *lit)
			return false;
		p++, lit++, n--;
	}
	return true;
}

static enum loc child(enum loc parent, const char *k, size_t n)
{
#define KEY(lit) (n == sizeof(lit) - 1 && eqn(k, lit, sizeof(lit) - 1))
	switch (parent) {
	case L_ROOT:
		return KEY("choices") ? L_CHOICES : KEY("usage") ? L_USAGE : KEY("error") ? L_ERROR : L_OTHER;
	case L_ERROR:
		return KEY("message") ? L_ERRMSG : L_OTHER;
	case L_CHOICE0:
		switch (n) {
		case 4: return eqn(k, "text", 4) ? L_TEXT : L_OTHER;
		case 5: return eqn(k, "delta", 5) ? L_DELTA : L_OTHER;
		case 7: return eqn(k, "message", 7) ? L_DELTA : L_OTHER;
		case 13: return eqn(k, "finish_reason", 13) ? L_FINISH : L_OTHER;
		default: return L_OTHER;
		}
	case L_DELTA:
		return KEY("content")             ? L_CONTENT
		       : KEY("reasoning_content") ? L_REASONING
		       : KEY("reasoning")         ? L_REASONING2
		       : KEY("tool_calls")        ? L_TOOLCALLS
						  : L_OTHER;
	case L_USAGE:
		return KEY("completion_tokens")       ? L_CT
		       : KEY("prompt_tokens")         ? L_PT
		       : KEY("prompt_tokens_details") ? L_PTD
						      : L_OTHER;
	case L_PTD:
		return KEY("cached_tokens") ? L_CACHED : L_OTHER;
	default:
		return L_OTHER;
	}
#undef KEY
}

/* The NUL padding past the end is not whitespace: no bounds test. */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
		p++;
	return p;
}

#define SCAN_MAX_DEPTH 64
#define SCAN_SMALL 4096 /* chunks up to this size are copied to the stack */
#define SCAN_PAD 32     /* NUL bytes after the copy */
/* compact JSON has no whitespace: one test decides */
#define SKIP_WS()                                        \
	do {                                             \
		if ((unsigned char)*p <= ' ')            \
			p = skip_ws(p);                  \
	} while (0)

/* The whole document, iteratively: an explicit stack of containers (close[d] is the
 * byte that ends container d), and `at`, the schema location of the value about to
 * be read. */
static bool scan_doc(struct scan *c)
{
	const char *p = c->s, *end = c->end;
	char close[SCAN_MAX_DEPTH];
	enum loc where[SCAN_MAX_DEPTH];
	int d = -1;
	enum loc at = L_ROOT;
	struct span sp;
value:
	if (LIKELY(*p == '"'))
		goto string;
	SKIP_WS();
	switch (*p) {
	case 0:
		return bad_at(c, p, p >= end ? "unexpected end" : "unexpected character");
	case '"':
	string:
		p = scan_str(c, p, end, &sp);
		if (UNLIKELY(!p))
			return false;
		if (at != L_OTHER) {
			switch (at) {
			case L_TEXT: c->text = sp; break;
			case L_CONTENT: c->content = sp; break;
			case L_REASONING: c->reasoning = sp; break;
			case L_REASONING2: c->reasoning2 = sp; break;
			case L_FINISH: c->finish = sp; break;
			case L_ERRMSG: c->errmsg = sp; break;
			case L_ERROR: c->is_error = true; c->errmsg = sp; break;
			default: break;
			}
		}
		goto after;
	case '{':
		if (UNLIKELY(d + 1 >= SCAN_MAX_DEPTH))
			return bad_at(c, p, "nested too deeply");
		if (at == L_ERROR)
			c->is_error = true;
		close[++d] = '}';
		where[d] = at;
		p++;
		SKIP_WS();
		if (*p == '}') {
			p++;
			goto closed;
		}
		goto key;
	case '[':
		if (UNLIKELY(d + 1 >= SCAN_MAX_DEPTH))
			return bad_at(c, p, "nested too deeply");
		close[++d] = ']';
		where[d] = at;
		p++;
		SKIP_WS();
		if (*p == ']') {
			p++;
			goto closed;
		}
		if (at == L_TOOLCALLS)
			c->tool_calls = true;
		at = at == L_CHOICES ? L_CHOICE0 : L_OTHER;
		goto value;
	case 't':
		if (!eqn(p, "true", 4)) /* the padding makes 4 bytes readable */
			return bad_at(c, p, "unexpected character");
		p += 4;
		if (at == L_ERROR)
			c->is_error = true;
		goto after;
	case 'f':
		if (!eqn(p, "false", 5))
			return bad_at(c, p, "unexpected character");
		p += 5;
		goto after;
	case 'n':
		if (!eqn(p, "null", 4))
			return bad_at(c, p, "unexpected character");
		p += 4;
		goto after;
	default:
		if (at == L_OTHER) {
			/* an integer nobody reads: digits only; anything else takes the full grammar */
			const char *q = p + (*p == '-');
			if (*q >= '0' && *q <= '9') {
				if (*q == '0') {
					q++;
				} else {
					do
						q++;
					while (*q >= '0' && *q <= '9');
				}
				if (*q != '.' && *q != 'e' && *q != 'E') {
					p = q;
					goto after;
				}
			}
		}
		{
			int64_t v = -1;
			bool want = at == L_CT || at == L_PT || at == L_CACHED;
			if (!scan_number(c, &p, want, &v))
				return false;
			if (at == L_CT) {
				c->ct = v;
				c->has_usage = v >= 0;
			} else if (at == L_PT) {
				c->pt = v;
			} else if (at == L_CACHED) {
				c->cached = v;
			} else if (at == L_ERROR) {
				c->is_error = true;
			}
		}
		goto after;
	}
key:
	/* whitespace is tested for only where the expected byte is not found */
	if (UNLIKELY(*p != '"')) {
		SKIP_WS();
		if (*p != '"')
			return bad_at(c, p, "expected a string");
	}
	p = scan_str(c, p, end, &sp);
	if (UNLIKELY(!p))
		return false;
	if (UNLIKELY(*p != ':')) {
		SKIP_WS();
		if (*p != ':')
			return bad_at(c, p, "expected ':'");
	}
	p++;
	at = where[d] == L_OTHER ? L_OTHER : child(where[d], sp.p, sp.n);
	goto value;
closed: /* container d just ended; the root's end ends the document */
	if (UNLIKELY(--d < 0)) {
		c->s = p;
		return true;
	}
after: /* a value inside container d was read (the caller made the root an object) */
	if (*p == ',') {
	comma:
		p++;
		if (close[d] == '}')
			goto key;
		at = L_OTHER; /* only element 0 of choices is read */
		goto value;
	}
	if (*p == close[d]) {
		p++;
		goto closed;
	}
	if ((unsigned char)*p <= ' ') {
		p = skip_ws(p);
		if (*p == ',')
			goto comma;
		if (*p == close[d]) {
			p++;
			goto closed;
		}
	}
	return bad_at(c, p, close[d] == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

static void put_utf8(char **o, uint32_t cp)
{
	unsigned char *u = (unsigned char *)*o;
	if (cp < 0x80) {
		*u++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*u++ = (unsigned char)(0xC0 | cp >> 6);
		*u++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*u++ = (unsigned char)(0xE0 | cp >> 12);
		*u++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		*u++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else {
		*u++ = (unsigned char)(0xF0 | cp >> 18);
		*u++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
		*u++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		*u++ = (unsigned char)(0x80 | (cp & 0x3F));
	}
	*o = (char *)u;
}

static uint32_t hex4(const char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		char ch = p[i];
		v = v * 16 + (uint32_t)(ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10);
	}
	return v;
}

/* Unescapes a validated string span into o (room for sp->n bytes suffices:
 * no escape expands). Returns the end. Lone surrogates become U+FFFD. */
static char *unescape(const struct span *sp, char *o)
{
	const char *p = sp->p, *end = sp->p + sp->n;
	while (p < end) {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		p++;
		char e = *p++;
		switch (e) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			uint32_t cp = hex4(p);
			p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
				uint32_t lo = hex4(p + 2);
				if (lo >= 0xDC00 && lo <= 0xDFFF) {
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					p += 6;
				} else {
					cp = 0xFFFD;
				}
			} else if (cp >= 0xD800 && cp <= 0xDFFF) {
				cp = 0xFFFD;
			}
			put_utf8(&o, cp);
			break;
		}
		default: *o++ = e; break;
		}
	}
	return o;
}

/* The full scan. When sh is given and the chunk can serve as a shape (see
 * openai.h), it is kept there. */
static int parse_full(struct openai_shape *sh, struct openai_chunk *c, const char *json, size_t n)
{
	/* every field is set once below: no bulk clearing of the strings' storage */
	c->has_token = c->has_content = c->has_reasoning = c->has_tool_call = c->has_usage = c->is_error = false;
	c->prompt_tokens = c->completion_tokens = c->cached_tokens = -1;
	c->finish_reason[0] = 0;
	c->error_message[0] = 0;
	c->content = c->reasoning = NULL;
	c->content_len = c->reasoning_len = 0;
	c->unescaped_ = NULL;
	/* the scanner reads a copy followed by NUL padding, which ends every loop
	 * without a bounds test (see skip_plain); spans are mapped back to json below */
	char small[SCAN_SMALL + SCAN_PAD];
	char *copy = n <= SCAN_SMALL ? small : malloc(n + SCAN_PAD);
	if (!copy) {
		snprintf(c->error_message, sizeof c->error_message, "out of memory");
		return -EBADMSG;
	}
	if (n)
		memcpy(copy, json, n);
	memset(copy + n, 0, SCAN_PAD);
	struct scan sc;
	sc.s = copy;
	sc.end = copy + n;
	sc.why = NULL;
	sc.text.n = sc.content.n = sc.reasoning.n = sc.reasoning2.n = sc.finish.n = sc.errmsg.n = 0;
	sc.text.escaped = sc.content.escaped = sc.reasoning.escaped = sc.reasoning2.escaped = sc.finish.escaped =
		sc.errmsg.escaped = false;
	sc.has_usage = sc.is_error = sc.tool_calls = false;
	sc.ct = sc.pt = sc.cached = -1;
	sc.s = skip_ws(sc.s);
	bool ok = *sc.s == '{' && sc.s < sc.end && scan_doc(&sc);
	if (ok) {
		sc.s = skip_ws(sc.s);
		if (sc.s != sc.end)
			ok = false, sc.why = "text after the JSON object";
	}
	if (!ok) {
		/* the input is not NUL-terminated: print at most its first 80 bytes */
		snprintf(c->error_message, sizeof c->error_message, "chunk is not a JSON object (%s at byte %zu): %.*s",
			 sc.why ? sc.why : "not an object", (size_t)(sc.s - copy), (int)(n < 80 ? n : 80), json);
		if (copy != small)
			free(copy);
		return -EBADMSG;
	}
	/* text fields: the first present, non-empty one of each kind */
	const struct span *content = sc.content.n ? &sc.content : sc.text.n ? &sc.text : NULL;
	const struct span *reasoning = sc.reasoning.n ? &sc.reasoning : sc.reasoning2.n ? &sc.reasoning2 : NULL;
	size_t need = (content && content->escaped ? content->n : 0) + (reasoning && reasoning->escaped ? reasoning->n : 0) +
		      (sc.errmsg.escaped ? sc.errmsg.n : 0);
	char *o = NULL;
	if (need) {
		c->unescaped_ = malloc(need + 3);
		if (!c->unescaped_) {
			snprintf(c->error_message, sizeof c->error_message, "out of memory");
			if (copy != small)
				free(copy);
			return -EBADMSG;
		}
		o = c->unescaped_;
	}
	if (content) {
		if (content->escaped) {
			c->content = o;
			o = unescape(content, o);
			c->content_len = (size_t)(o - c->content);
		} else {
			c->content = json + (content->p - copy);
			c->content_len = content->n;
		}
	}
	if (reasoning) {
		if (reasoning->escaped) {
			c->reasoning = o;
			o = unescape(reasoning, o);
			c->reasoning_len = (size_t)(o - c->reasoning);
		} else {
			c->reasoning = json + (reasoning->p - copy);
			c->reasoning_len = reasoning->n;
		}
	}
	/* from locals: reading the flags back just after storing them stalls the load */
	bool has_content = c->content != NULL, has_reasoning = c->reasoning != NULL, has_tool = sc.tool_calls;
	c->has_content = has_content;
	c->has_reasoning = has_reasoning;
	c->has_tool_call = has_tool;
	c->has_token = has_content || has_reasoning || has_tool;
	if (sc.finish.n) {
		size_t k = sc.finish.n < sizeof c->finish_reason - 1 ? sc.finish.n : sizeof c->finish_reason - 1;
		memcpy(c->finish_reason, sc.finish.p, k);
		c->finish_reason[k] = 0;
	}
	c->has_usage = sc.has_usage;
	c->completion_tokens = sc.ct;
	c->prompt_tokens = sc.pt;
	c->cached_tokens = sc.cached;
	if (sc.is_error) {
		c->is_error = true;
		if (sc.errmsg.n) {
			if (sc.errmsg.escaped) {
				char *m = o;
				o = unescape(&sc.errmsg, o);
				snprintf(c->error_message, sizeof c->error_message, "%.*s", (int)(o - m), m);
			} else {
				snprintf(c->error_message, sizeof c->error_message, "%.*s", (int)sc.errmsg.n, sc.errmsg.p);
			}
		} else {
			snprintf(c->error_message, sizeof c->error_message, "server sent an error object");
		}
	}
	/* a shape: no error, exactly one text (its source free of escapes), small enough */
	if (sh && !sc.is_error && n <= sizeof sh->bytes && (content != NULL) != (reasoning != NULL)) {
		const struct span *t = content ? content : reasoning;
		if (!t->escaped) {
			sh->valid = true;
			sh->reasoning = content == NULL;
			sh->has_tool_call = has_tool;
			sh->has_usage = sc.has_usage;
			sh->prompt_tokens = sc.pt;
			sh->completion_tokens = sc.ct;
			sh->cached_tokens = sc.cached;
			memcpy(sh->finish_reason, c->finish_reason, sizeof sh->finish_reason);
			sh->n = n;
			sh->a = (size_t)(t->p - copy);
			sh->b = sh->a + t->n;
			memcpy(sh->bytes, json, n);
		}
	}
	if (copy != small)
		free(copy);
	return 0;
}

int openai_chunk_parse(struct openai_chunk *c, const char *json, size_t n)
{
	return parse_full(NULL, c, json, n);
}

/* 1 for the bytes a string body without escapes cannot hold: '"', '\\', controls. */
static const unsigned char body_stop[256] = {
	[0] = 1, [1] = 1, [2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [7] = 1, [8] = 1, [9] = 1, [10] = 1,
	[11] = 1, [12] = 1, [13] = 1, [14] = 1, [15] = 1, [16] = 1, [17] = 1, [18] = 1, [19] = 1, [20] = 1,
	[21] = 1, [22] = 1, [23] = 1, [24] = 1, [25] = 1, [26] = 1, [27] = 1, [28] = 1, [29] = 1, [30] = 1,
	[31] = 1, ['"'] = 1, ['\\'] = 1,
};

int openai_chunk_parse_shaped(struct openai_shape *sh, struct openai_chunk *c, const char *json, size_t n)
{
	size_t tail = sh->n - sh->b;
	if (sh->valid && n > sh->a + tail && memcmp(json, sh->bytes, sh->a) == 0) {
		/* the text: from where the kept one starts to the first byte that would end
		 * or escape a string; it must end exactly where the kept tail begins */
		const char *p = json + sh->a, *lim = json + n - tail;
		while (p < lim && !body_stop[(unsigned char)*p])
			p++;
		if (p == lim && memcmp(lim, sh->bytes + sh->b, tail) == 0) {
			c->has_token = true;
			c->has_content = !sh->reasoning;
			c->has_reasoning = sh->reasoning;
			c->has_tool_call = sh->has_tool_call;
			c->has_usage = sh->has_usage;
			c->prompt_tokens = sh->prompt_tokens;
			c->completion_tokens = sh->completion_tokens;
			c->cached_tokens = sh->cached_tokens;
			memcpy(c->finish_reason, sh->finish_reason, sizeof c->finish_reason);
			c->is_error = false;
			c->error_message[0] = 0;
			c->unescaped_ = NULL;
			const char *text = json + sh->a;
			size_t len = (size_t)(lim - text);
			c->content = sh->reasoning ? NULL : text;
			c->content_len = sh->reasoning ? 0 : len;
			c->reasoning = sh->reasoning ? text : NULL;
			c->reasoning_len = sh->reasoning ? len : 0;
			sh->shortcuts++;
			return 0;
		}
	}
	return parse_full(sh, c, json, n);
}

void openai_chunk_finish(struct openai_chunk *c)
{
	if (!c)
		return;
	free(c->unescaped_);
	c->unescaped_ = NULL;
}
