/* jinja_lex — the Jinja lexer: template source to tokens, as jinja2's lexer cuts
 * it, with lstrip_blocks and trim_blocks applied while lexing; raw blocks and
 * whitespace control ({%- -%}) handled here so the parser sees only tokens.
 * Tokens and decoded strings live in the template's arena (the token array is
 * malloc'd and freed by jinja_parse). Syntax errors unwind through jp_err. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "text/jinja_int.h"

/* ---- lexer ---- */

__attribute__((noreturn, format(printf, 4, 5))) void jp_err(struct parser *p, int line, int col, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "template syntax error at line %d:%d: %s", line, col, msg);
	longjmp(p->jb, 1);
}

static void linecol(struct parser *p, size_t pos, int *line, int *col)
{
	if (pos < p->lc_pos) { /* tokens arrive in order; restart only if not */
		p->lc_pos = p->lc_start = 0;
		p->lc_line = 1;
	}
	for (; p->lc_pos < pos; p->lc_pos++)
		if (p->src[p->lc_pos] == '\n') {
			p->lc_line++;
			p->lc_start = p->lc_pos + 1;
		}
	*line = p->lc_line;
	*col = (int)ju_len(p->src + p->lc_start, pos - p->lc_start) + 1;
}

void *jp_alloc(struct parser *p, size_t n)
{
	void *m = arena_alloc(p->a, n);
	if (!m) {
		if (p->err && p->errlen)
			snprintf(p->err, p->errlen, "out of memory while parsing the template");
		errno = ENOMEM;
		longjmp(p->jb, 2);
	}
	return m;
}

static struct tok *tok_push(struct parser *p, int t, size_t pos, const char *s, size_t n)
{
	if (p->ntok == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct tok *nt = realloc(p->toks, cap * sizeof *nt);
		if (!nt) {
			if (p->err && p->errlen)
				snprintf(p->err, p->errlen, "out of memory while parsing the template");
			longjmp(p->jb, 2);
		}
		p->toks = nt;
		p->cap = cap;
	}
	struct tok *k = &p->toks[p->ntok++];
	memset(k, 0, sizeof *k);
	k->t = t;
	linecol(p, pos, &k->line, &k->col);
	char *c = jp_alloc(p, n + 1);
	if (n)
		memcpy(c, s, n);
	k->s = c;
	k->n = n;
	return k;
}

static void push_data(struct parser *p, size_t pos, const char *s, size_t n)
{
	if (n)
		tok_push(p, TK_DATA, pos, s, n);
}

/* jinja2's lstrip_blocks: drop spaces between the last newline (or the start of
 * a line) and a block or comment tag. */
static size_t lstrip_text(const char *s, size_t n, bool line_starting)
{
	size_t l = n;
	while (l > 0 && s[l - 1] != '\n')
		l--;
	if (l == 0 && !line_starting)
		return n;
	if (l == n)
		return n;
	for (size_t i = l, k; i < n; i += k)
		if (!(k = ju_ws_at(s, n, i)))
			return n;
	return l;
}

static size_t rstrip_len(const char *s, size_t n)
{
	size_t k;
	while ((k = ju_ws_before(s, n)))
		n -= k;
	return n;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	size_t k;
	while (i < n && (k = ju_ws_at(s, n, i)))
		i += k;
	return i;
}

/* Matches "{%[-+]?\s*WORD\s*(-%}\s*|+%}|%}\n?)" at i; returns the end or 0.
 * *sign gets the opening modifier. trim: whether %} may eat one newline. */
static size_t match_word_tag(const char *s, size_t n, size_t i, const char *word, char *sign, bool trim, bool plus_end)
{
	if (i + 2 > n || s[i] != '{' || s[i + 1] != '%')
		return 0;
	i += 2;
	*sign = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		*sign = s[i++];
	i = skip_ws(s, n, i);
	size_t wl = strlen(word);
	if (i + wl > n || memcmp(s + i, word, wl) != 0)
		return 0;
	i = skip_ws(s, n, i + wl);
	if (i + 3 <= n && s[i] == '-' && s[i + 1] == '%' && s[i + 2] == '}')
		return skip_ws(s, n, i + 3);
	if (plus_end && i + 3 <= n && s[i] == '+' && s[i + 1] == '%' && s[i + 2] == '}')
		return i + 3;
	if (i + 2 <= n && s[i] == '%' && s[i + 1] == '}') {
		i += 2;
		if (trim && i < n && s[i] == '\n')
			i++;
		return i;
	}
	return 0;
}

static void lex_string(struct parser *p, size_t *ip)
{
	const char *s = p->src;
	size_t i = *ip, start = i;
	char q = s[i++];
	/* decoded text is never longer than the literal */
	size_t cap = 0;
	while (i + cap < p->n && s[i + cap] != q) {
		if (s[i + cap] == '\\' && i + cap + 1 < p->n)
			cap++;
		cap++;
	}
	if (i + cap >= p->n) {
		int line, col;
		linecol(p, start, &line, &col);
		jp_err(p, line, col, "unexpected char %c (a string that is never closed)", q);
	}
	char *o = jp_alloc(p, cap * 2 + 4);
	size_t on = 0, end = i + cap;
	while (i < end) {
		char c = s[i++];
		if (c != '\\') {
			o[on++] = c;
			continue;
		}
		char e = s[i++];
		uint32_t cp;
		int nd = 0;
		switch (e) {
		case '\n': break;
		case '\\': o[on++] = '\\'; break;
		case '\'': o[on++] = '\''; break;
		case '"': o[on++] = '"'; break;
		case 'a': o[on++] = '\a'; break;
		case 'b': o[on++] = '\b'; break;
		case 'f': o[on++] = '\f'; break;
		case 'n': o[on++] = '\n'; break;
		case 'r': o[on++] = '\r'; break;
		case 't': o[on++] = '\t'; break;
		case 'v': o[on++] = '\v'; break;
		case 'x': nd = 2; goto hex;
		case 'u': nd = 4; goto hex;
		case 'U': nd = 8;
		hex:
			cp = 0;
			for (int k = 0; k < nd; k++) {
				char h = i < end ? s[i] : 0;
				if (!isxdigit((unsigned char)h)) {
					int line, col;
					linecol(p, start, &line, &col);
					jp_err(p, line, col, "truncated \\%c escape in a string literal", e);
				}
				cp = cp * 16 + (uint32_t)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
				i++;
			}
			if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
				int line, col;
				linecol(p, start, &line, &col);
				jp_err(p, line, col, "escape \\%c in a string literal is not a valid code point", e);
			}
			on += (size_t)ju_put(o + on, cp);
			break;
		default:
			if (e >= '0' && e <= '7') {
				cp = (uint32_t)(e - '0');
				for (int k = 0; k < 2 && i < end && s[i] >= '0' && s[i] <= '7'; k++)
					cp = cp * 8 + (uint32_t)(s[i++] - '0');
				on += (size_t)ju_put(o + on, cp);
			} else {
				o[on++] = '\\';
				o[on++] = e;
			}
		}
	}
	tok_push(p, TK_STR, start, o, on);
	*ip = end + 1;
}

static void lex_number(struct parser *p, size_t *ip)
{
	const char *s = p->src;
	size_t i = *ip, start = i, n = p->n;
	char buf[512];
	size_t bn = 0;
	bool isf = false;
	if (s[i] == '0' && i + 1 < n && strchr("xXoObB", s[i + 1])) {
		int base = strchr("xX", s[i + 1]) ? 16 : strchr("oO", s[i + 1]) ? 8 : 2;
		i += 2;
		while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_')) {
			if (s[i] != '_' && bn < sizeof buf - 1)
				buf[bn++] = s[i];
			i++;
		}
		buf[bn] = 0;
		char *e;
		errno = 0;
		long long v = strtoll(buf, &e, base);
		if (!bn || *e || errno) {
			int line, col;
			linecol(p, start, &line, &col);
			jp_err(p, line, col, "invalid integer literal");
		}
		struct tok *k = tok_push(p, TK_INT, start, s + start, i - start);
		k->i = v;
		*ip = i;
		return;
	}
	while (i < n && (isdigit((unsigned char)s[i]) || (s[i] == '_' && i + 1 < n && isdigit((unsigned char)s[i + 1])))) {
		if (s[i] != '_' && bn < sizeof buf - 1)
			buf[bn++] = s[i];
		i++;
	}
	bool float_ok = !(start > 0 && s[start - 1] == '.');
	if (float_ok && i + 1 < n && s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
		isf = true;
		if (bn < sizeof buf - 1)
			buf[bn++] = s[i];
		i++;
		while (i < n && (isdigit((unsigned char)s[i]) || (s[i] == '_' && i + 1 < n && isdigit((unsigned char)s[i + 1])))) {
			if (s[i] != '_' && bn < sizeof buf - 1)
				buf[bn++] = s[i];
			i++;
		}
	}
	if (float_ok && i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (j < n && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < n && isdigit((unsigned char)s[j])) {
			isf = true;
			for (size_t q = i; q < j; q++)
				if (bn < sizeof buf - 1)
					buf[bn++] = s[q];
			i = j;
			while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '_')) {
				if (s[i] != '_' && bn < sizeof buf - 1)
					buf[bn++] = s[i];
				i++;
			}
		}
	}
	buf[bn] = 0;
	if (bn >= sizeof buf - 1) {
		int line, col;
		linecol(p, start, &line, &col);
		jp_err(p, line, col, "numeric literal longer than %zu digits", sizeof buf - 2);
	}
	struct tok *k = tok_push(p, isf ? TK_FLOAT : TK_INT, start, s + start, i - start);
	if (isf) {
		k->f = strtod(buf, NULL);
	} else {
		errno = 0;
		k->i = strtoll(buf, NULL, 10);
		if (errno) {
			int line, col;
			linecol(p, start, &line, &col);
			jp_err(p, line, col, "integer literal %s is larger than 64 bits", buf);
		}
	}
	*ip = i;
}

/* Tokens of one {{ }} or {% %} tag, starting after the opener. Returns the
 * position after the closer (with trim_blocks' newline and -'s whitespace). */
static size_t lex_tag(struct parser *p, size_t i, bool block)
{
	const char *s = p->src;
	size_t n = p->n;
	char stack[64];
	int depth = 0;
	for (;;) {
		if (i >= n) {
			int line, col;
			linecol(p, n, &line, &col);
			jp_err(p, line, col, "unexpected end of template, expected '%s'", block ? "%}" : "}}");
		}
		if (depth == 0) {
			if (block) {
				if (i + 3 <= n && s[i] == '+' && s[i + 1] == '%' && s[i + 2] == '}') {
					tok_push(p, TK_BEND, i, "%}", 2);
					return i + 3;
				}
				if (i + 3 <= n && s[i] == '-' && s[i + 1] == '%' && s[i + 2] == '}') {
					tok_push(p, TK_BEND, i, "%}", 2);
					return skip_ws(s, n, i + 3);
				}
				if (i + 2 <= n && s[i] == '%' && s[i + 1] == '}') {
					tok_push(p, TK_BEND, i, "%}", 2);
					return i + 2 < n && s[i + 2] == '\n' ? i + 3 : i + 2;
				}
			} else {
				if (i + 3 <= n && s[i] == '-' && s[i + 1] == '}' && s[i + 2] == '}') {
					tok_push(p, TK_VEND, i, "}}", 2);
					return skip_ws(s, n, i + 3);
				}
				if (i + 2 <= n && s[i] == '}' && s[i + 1] == '}') {
					tok_push(p, TK_VEND, i, "}}", 2);
					return i + 2;
				}
			}
		}
		unsigned char c = (unsigned char)s[i];
		size_t wl = ju_ws_at(s, n, i);
		if (wl) {
			i += wl;
		} else if (isdigit(c)) {
			lex_number(p, &i);
		} else if (isalpha(c) || c == '_') {
			size_t st = i;
			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_'))
				i++;
			tok_push(p, TK_NAME, st, s + st, i - st);
		} else if (c == '\'' || c == '"') {
			lex_string(p, &i);
		} else {
			static const char *const two[] = {"**", "//", "==", "!=", ">=", "<="};
			size_t len = 0;
			for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
				if (i + 2 <= n && memcmp(s + i, two[k], 2) == 0)
					len = 2;
			if (!len && strchr("+-/*%~[](){}><=.:|,;", c) && c)
				len = 1;
			if (!len) {
				int line, col;
				linecol(p, i, &line, &col);
				if (c >= 0x80)
					jp_err(p, line, col, "unexpected character (non-ASCII names are not supported)");
				jp_err(p, line, col, "unexpected char '%c'", c);
			}
			if (len == 1 && (c == '(' || c == '[' || c == '{')) {
				if (depth == (int)sizeof stack) {
					int line, col;
					linecol(p, i, &line, &col);
					jp_err(p, line, col, "brackets nested too deeply");
				}
				stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
			} else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
				int line, col;
				if (depth == 0) {
					linecol(p, i, &line, &col);
					jp_err(p, line, col, "unexpected '%c'", c);
				}
				if (stack[--depth] != c) {
					linecol(p, i, &line, &col);
					jp_err(p, line, col, "unexpected '%c', expected '%c'", c, stack[depth]);
				}
			}
			tok_push(p, TK_OP, i, s + i, len);
			i += len;
		}
	}
}

void jl_lex(struct parser *p)
{
	const char *s = p->src;
	size_t n = p->n, pos = 0;
	bool line_starting = true;
	while (pos < n) {
		size_t q = pos;
		while (q + 1 < n && !(s[q] == '{' && (s[q + 1] == '{' || s[q + 1] == '%' || s[q + 1] == '#')))
			q++;
		if (q + 1 >= n) {
			push_data(p, pos, s + pos, n - pos);
			break;
		}
		char kind = s[q + 1], sign = 0;
		size_t after = q + 2;
		if (after < n && (s[after] == '-' || s[after] == '+'))
			sign = s[after++];
		size_t tl = q - pos;
		if (sign == '-')
			tl = rstrip_len(s + pos, tl);
		else if (sign != '+' && kind != '{')
			tl = lstrip_text(s + pos, tl, line_starting);
		push_data(p, pos, s + pos, tl);
		if (kind == '#') {
			size_t i = after;
			for (;;) {
				if (i + 1 >= n) {
					int line, col;
					linecol(p, q, &line, &col);
					jp_err(p, line, col, "missing end of comment tag");
				}
				if (s[i] == '+' && i + 2 < n && s[i + 1] == '#' && s[i + 2] == '}') {
					i += 3;
					break;
				}
				if (s[i] == '-' && i + 2 < n && s[i + 1] == '#' && s[i + 2] == '}') {
					i = skip_ws(s, n, i + 3);
					break;
				}
				if (s[i] == '#' && s[i + 1] == '}') {
					i += 2;
					if (i < n && s[i] == '\n')
						i++;
					break;
				}
				i++;
			}
			line_starting = s[i - 1] == '\n';
			pos = i;
			continue;
		}
		char rsign;
		size_t rend = kind == '%' ? match_word_tag(s, n, q, "raw", &rsign, false, false) : 0;
		if (rend) {
			/* raw: the text up to the first {% endraw %} is data */
			bool ls = s[rend - 1] == '\n';
			size_t j = rend, eend = 0;
			char esign = 0;
			for (; j + 1 < n; j++)
				if (s[j] == '{' && s[j + 1] == '%' && (eend = match_word_tag(s, n, j, "endraw", &esign, true, true)))
					break;
			if (!eend) {
				int line, col;
				linecol(p, q, &line, &col);
				jp_err(p, line, col, "missing end of raw directive");
			}
			size_t cl = j - rend;
			if (esign == '-')
				cl = rstrip_len(s + rend, cl);
			else if (esign != '+')
				cl = lstrip_text(s + rend, cl, ls);
			push_data(p, rend, s + rend, cl);
			line_starting = s[eend - 1] == '\n';
			pos = eend;
			continue;
		}
		tok_push(p, kind == '%' ? TK_BBEGIN : TK_VBEGIN, q, s + q, 2);
		pos = lex_tag(p, after, kind == '%');
		line_starting = s[pos - 1] == '\n';
	}
	tok_push(p, TK_EOF, n, "", 0);
}
