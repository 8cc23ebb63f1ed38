/* jinja — lexer, parser and tree-walking evaluator for the Jinja2 subset that
 * chat templates use (see jinja.h for the contract and what is left out).
 *
 * Shape: the source is normalised (\r\n and \r become \n, one trailing newline
 * dropped), cut into tokens the way jinja2's lexer does (lstrip_blocks and
 * trim_blocks applied while lexing), parsed into a tree in the template's arena,
 * and evaluated per render with every value in a per-render arena freed in one
 * go. Errors inside the parser and the evaluator unwind with longjmp to the
 * public entry point; this is safe because nothing between holds memory outside
 * the arenas.
 *
 * Values follow Python: str is UTF-8 counted in code points, int is 64-bit
 * (overflow is an error rather than a big integer), float prints as repr(),
 * tuples print with parentheses, Undefined prints empty and fails on attribute
 * access, strings marked safe (Markup) escape the other operand of +.
 * Workload: templates of a few hundred lines, conversations of a few hundred
 * messages; lookups are linear scans, which is the fast choice at that size.
 * Limits keep hostile templates bounded: ranges of at most 100000 items (as the
 * jinja2 sandbox), 20M evaluation steps, 256 MiB per render, nesting depth 200. */
#include "text/jinja.h"

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

#define MAX_RANGE 100000
#define MAX_STEPS 20000000
#define MAX_RENDER_BYTES ((size_t)256 << 20)
#define MAX_DEPTH 200
#define MAX_ARGS 16

/* ---- values ---- */

enum vtype { T_UNDEF, T_NONE, T_BOOL, T_INT, T_FLOAT, T_STR, T_LIST, T_DICT, T_NS, T_MACRO, T_FUNC, T_LOOP };
/* F_GEN: a one-pass iterator as select/map/items/unique/reverse return in jinja2:
 * always true, no len(), not printable or serialisable, not subscriptable */
enum { F_MARKUP = 1, F_TUPLE = 2, F_GEN = 4 };

struct jstr {
	size_t n; /* bytes, excluding the NUL */
	char p[]; /* UTF-8, NUL-terminated */
};
struct jlist;
struct jdict;
struct macro;
struct func;
struct loopv;

struct jv {
	unsigned char t;     /* enum vtype */
	unsigned char flags; /* F_MARKUP on strings, F_TUPLE on lists */
	union {
		bool b;
		int64_t i;
		double f;
		struct jstr *s;
		struct jlist *l;
		struct jdict *d; /* dicts and namespaces */
		struct macro *m;
		struct func *fn;
		struct loopv *loop;
		const char *hint; /* undefined: the message jinja2 raises when it is used */
	} u;
};

struct jlist {
	size_t n, cap;
	struct jv *v; /* (cap) */
};
struct jdict {
	size_t n, cap;
	struct jv *k, *v; /* (cap) each, insertion order */
};

/* ---- nodes ---- */

enum nkind {
	/* statements */
	N_DATA, N_OUTPUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK, N_FILTERBLOCK, N_WITH, N_BREAK, N_CONTINUE,
	/* expressions */
	E_LIT, E_NAME, E_LIST, E_TUPLE, E_DICT, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_NOT, E_NEG, E_POS,
	E_BIN, E_AND, E_OR, E_COND, E_BODYVAL
};
enum binop { B_ADD, B_SUB, B_MUL, B_DIV, B_FDIV, B_MOD, B_POW, B_CAT, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_IN, B_NOTIN };

struct nvec {
	struct node **v;
	size_t n, cap;
};

struct node {
	int kind;
	int op;          /* enum binop; negated test; for: has filter */
	int line, col;
	const char *name; /* names, attributes, filters, tests, macros */
	struct jv lit;
	struct node *a, *b, *c; /* operands; for: target, iter, cond; slice: start, stop, step */
	struct nvec kids;       /* list items, dict k/v pairs, call args, for target names */
	const char **kwnames;   /* per kid in calls/macros: keyword name or NULL */
	struct nvec body, orelse;
};

struct macro {
	struct node *def;     /* N_MACRO: name, kids = params (defaults in b...), body */
	struct scope *closure;
};

/* builtin callables and bound methods */
struct func {
	const char *name;
	struct jv self; /* T_UNDEF for globals */
	bool unsafe;    /* a mutator the immutable sandbox refuses */
};

struct loopv {
	struct jlist *items;
	size_t i;
	int depth;
	struct jv changed_last;
	bool changed_seen;
};

struct scope {
	struct scope *parent;
	size_t n, cap;
	const char **names; /* (cap) */
	struct jv *vals;    /* (cap) */
};

struct jinja_template {
	struct arena a;
	struct nvec body;
};

/* ---- UTF-8 helpers ---- */

static size_t utf8_len(const char *s, size_t n) /* code points */
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			c++;
	return c;
}

/* Byte offset of code point k (clamped to n). */
static size_t utf8_off(const char *s, size_t n, size_t k)
{
	size_t i = 0;
	while (i < n && k > 0) {
		i++;
		while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
		k--;
	}
	return i;
}

static bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		unsigned c = p[i];
		size_t k;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			k = 1;
			cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			k = 2;
			cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			k = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n || (p[i + j] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3F);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += k + 1;
	}
	return true;
}

static int utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	} else if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	} else if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Python's str.isspace for the ASCII range. */
static bool is_pyspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* Bytes of the Python whitespace character starting at s[i], 0 if none:
 * ASCII as above, U+0085, U+00A0, U+1680, U+2000..200A, U+2028, U+2029,
 * U+202F, U+205F, U+3000 (str.isspace and the regex \s agree on these). */
static size_t ws_at(const char *s, size_t n, size_t i)
{
	const unsigned char *p = (const unsigned char *)s + i;
	size_t left = n - i;
	if (p[0] < 0x80)
		return is_pyspace(p[0]);
	if (left >= 2 && p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0))
		return 2;
	if (left < 3)
		return 0;
	if ((p[0] == 0xE1 && p[1] == 0x9A && p[2] == 0x80) || (p[0] == 0xE3 && p[1] == 0x80 && p[2] == 0x80) ||
	    (p[0] == 0xE2 && p[1] == 0x81 && p[2] == 0x9F) ||
	    (p[0] == 0xE2 && p[1] == 0x80 && (p[2] <= 0x8A || p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF)))
		return 3;
	return 0;
}

/* Bytes of the whitespace character ending just before s[i], 0 if none. */
static size_t ws_before(const char *s, size_t i)
{
	if (i >= 1 && (unsigned char)s[i - 1] < 0x80)
		return is_pyspace((unsigned char)s[i - 1]);
	for (size_t k = 2; k <= 3 && k <= i; k++)
		if (ws_at(s, i, i - k) == k)
			return k;
	return 0;
}

/* ---- lexer ---- */

enum tk { TK_EOF, TK_DATA, TK_VBEGIN, TK_VEND, TK_BBEGIN, TK_BEND, TK_NAME, TK_STR, TK_INT, TK_FLOAT, TK_OP };

struct tok {
	int t;         /* enum tk */
	int line, col; /* 1-based; col counts code points */
	const char *s; /* data, name, operator or decoded string (arena, NUL-terminated) */
	size_t n;      /* bytes of s */
	int64_t i;
	double f;
};

struct parser {
	struct arena *a;
	const char *src; /* normalised source */
	size_t n;
	struct tok *toks; /* (cap), malloc'd; freed by the entry point */
	size_t ntok, cap, pos;
	size_t lc_pos, lc_start; /* line/column tracking: position, start of its line */
	int lc_line;
	int loop_depth, depth;
	jmp_buf jb;
	char *err;
	size_t errlen;
};

__attribute__((noreturn, format(printf, 4, 5))) static void perr(struct parser *p, int line, int col, const char *fmt, ...)
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
	*col = (int)utf8_len(p->src + p->lc_start, pos - p->lc_start) + 1;
}

static void *palloc(struct parser *p, size_t n)
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
	char *c = palloc(p, n + 1);
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
		if (!(k = ws_at(s, n, i)))
			return n;
	return l;
}

static size_t rstrip_len(const char *s, size_t n)
{
	size_t k;
	while ((k = ws_before(s, n)))
		n -= k;
	return n;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	size_t k;
	while (i < n && (k = ws_at(s, n, i)))
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
		perr(p, line, col, "unexpected char %c (a string that is never closed)", q);
	}
	char *o = palloc(p, cap * 2 + 4);
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
					perr(p, line, col, "truncated \\%c escape in a string literal", e);
				}
				cp = cp * 16 + (uint32_t)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
				i++;
			}
			if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
				int line, col;
				linecol(p, start, &line, &col);
				perr(p, line, col, "escape \\%c in a string literal is not a valid code point", e);
			}
			on += (size_t)utf8_put(o + on, cp);
			break;
		default:
			if (e >= '0' && e <= '7') {
				cp = (uint32_t)(e - '0');
				for (int k = 0; k < 2 && i < end && s[i] >= '0' && s[i] <= '7'; k++)
					cp = cp * 8 + (uint32_t)(s[i++] - '0');
				on += (size_t)utf8_put(o + on, cp);
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
			perr(p, line, col, "invalid integer literal");
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
		perr(p, line, col, "numeric literal longer than %zu digits", sizeof buf - 2);
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
			perr(p, line, col, "integer literal %s is larger than 64 bits", buf);
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
			perr(p, line, col, "unexpected end of template, expected '%s'", block ? "%}" : "}}");
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
		size_t wl = ws_at(s, n, i);
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
					perr(p, line, col, "unexpected character (non-ASCII names are not supported)");
				perr(p, line, col, "unexpected char '%c'", c);
			}
			if (len == 1 && (c == '(' || c == '[' || c == '{')) {
				if (depth == (int)sizeof stack) {
					int line, col;
					linecol(p, i, &line, &col);
					perr(p, line, col, "brackets nested too deeply");
				}
				stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
			} else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
				int line, col;
				if (depth == 0) {
					linecol(p, i, &line, &col);
					perr(p, line, col, "unexpected '%c'", c);
				}
				if (stack[--depth] != c) {
					linecol(p, i, &line, &col);
					perr(p, line, col, "unexpected '%c', expected '%c'", c, stack[depth]);
				}
			}
			tok_push(p, TK_OP, i, s + i, len);
			i += len;
		}
	}
}

static void lex(struct parser *p)
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
					perr(p, line, col, "missing end of comment tag");
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
				perr(p, line, col, "missing end of raw directive");
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

/* ---- parser ---- */

static struct tok *cur(struct parser *p)
{
	return &p->toks[p->pos];
}

static struct tok *peek(struct parser *p, size_t k)
{
	size_t i = p->pos + k;
	return &p->toks[i < p->ntok ? i : p->ntok - 1];
}

static bool is_op(const struct tok *k, const char *op)
{
	return k->t == TK_OP && k->n == strlen(op) && memcmp(k->s, op, k->n) == 0;
}

static bool is_name(const struct tok *k, const char *name)
{
	return k->t == TK_NAME && strcmp(k->s, name) == 0;
}

static const char *tok_desc(const struct tok *k)
{
	switch (k->t) {
	case TK_EOF: return "end of template";
	case TK_DATA: return "template data";
	case TK_VBEGIN: return "begin of print statement";
	case TK_VEND: return "end of print statement";
	case TK_BBEGIN: return "begin of statement block";
	case TK_BEND: return "end of statement block";
	case TK_STR: return "string";
	case TK_INT: return "integer";
	case TK_FLOAT: return "float";
	default: return k->s;
	}
}

__attribute__((noreturn)) static void unexpected(struct parser *p, const char *want)
{
	struct tok *k = cur(p);
	perr(p, k->line, k->col, "expected %s, got '%s'", want, tok_desc(k));
}

static void expect_op(struct parser *p, const char *op)
{
	if (!is_op(cur(p), op)) {
		char w[16];
		snprintf(w, sizeof w, "'%s'", op);
		unexpected(p, w);
	}
	p->pos++;
}

static void expect_t(struct parser *p, int t, const char *want)
{
	if (cur(p)->t != t)
		unexpected(p, want);
	p->pos++;
}

static struct node *mk(struct parser *p, int kind, const struct tok *at)
{
	struct node *x = palloc(p, sizeof *x);
	x->kind = kind;
	x->line = at->line;
	x->col = at->col;
	return x;
}

static void nvec_push(struct parser *p, struct nvec *v, struct node *x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4;
		struct node **nv = palloc(p, cap * sizeof *nv);
		if (v->n)
			memcpy(nv, v->v, v->n * sizeof *nv);
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = x;
}

static struct jv str_lit(struct parser *p, const char *s, size_t n)
{
	struct jstr *j = palloc(p, sizeof *j + n + 1);
	memcpy(j->p, s, n);
	j->n = n;
	struct jv v = {.t = T_STR};
	v.u.s = j;
	return v;
}

static struct node *parse_expr(struct parser *p, bool condexpr);
static struct node *parse_unary(struct parser *p, bool with_filter);
static struct node *parse_primary(struct parser *p);

static void enter(struct parser *p)
{
	if (++p->depth > MAX_DEPTH)
		perr(p, cur(p)->line, cur(p)->col, "template nested too deeply");
}

/* Arguments of a call, filter or test: positional then name=value. */
static void parse_call_args(struct parser *p, struct node *x)
{
	expect_op(p, "(");
	const char *kw[MAX_ARGS];
	while (!is_op(cur(p), ")")) {
		if (x->kids.n)
			expect_op(p, ",");
		if (is_op(cur(p), ")"))
			break;
		if (x->kids.n == MAX_ARGS)
			perr(p, cur(p)->line, cur(p)->col, "more than %d arguments", MAX_ARGS);
		if (is_op(cur(p), "*") || is_op(cur(p), "**"))
			perr(p, cur(p)->line, cur(p)->col, "*args and **kwargs in calls are not supported");
		const char *name = NULL;
		if (cur(p)->t == TK_NAME && is_op(peek(p, 1), "=")) {
			name = cur(p)->s;
			p->pos += 2;
		} else if (x->kids.n && kw[x->kids.n - 1]) {
			perr(p, cur(p)->line, cur(p)->col, "positional argument follows keyword argument");
		}
		kw[x->kids.n] = name;
		nvec_push(p, &x->kids, parse_expr(p, true));
	}
	p->pos++;
	x->kwnames = palloc(p, (x->kids.n + 1) * sizeof *x->kwnames);
	memcpy(x->kwnames, kw, x->kids.n * sizeof *kw);
}

static const char *parse_dotted_name(struct parser *p)
{
	if (cur(p)->t != TK_NAME)
		unexpected(p, "a name");
	const char *s = cur(p)->s;
	p->pos++;
	while (is_op(cur(p), ".") && peek(p, 1)->t == TK_NAME) {
		size_t a = strlen(s), b = peek(p, 1)->n;
		char *j = palloc(p, a + b + 2);
		memcpy(j, s, a);
		j[a] = '.';
		memcpy(j + a + 1, peek(p, 1)->s, b);
		s = j;
		p->pos += 2;
	}
	return s;
}

static struct node *parse_filter(struct parser *p, struct node *in)
{
	while (is_op(cur(p), "|")) {
		struct tok *at = cur(p);
		p->pos++;
		struct node *f = mk(p, E_FILTER, at);
		f->name = parse_dotted_name(p);
		f->a = in;
		if (is_op(cur(p), "("))
			parse_call_args(p, f);
		in = f;
	}
	return in;
}

static struct node *parse_postfix(struct parser *p, struct node *x)
{
	for (;;) {
		struct tok *at = cur(p);
		if (is_op(at, ".")) {
			p->pos++;
			struct tok *k = cur(p);
			if (k->t == TK_NAME) {
				struct node *y = mk(p, E_ATTR, at);
				y->a = x;
				y->name = k->s;
				x = y;
			} else if (k->t == TK_INT) {
				struct node *y = mk(p, E_ITEM, at);
				y->a = x;
				y->b = mk(p, E_LIT, k);
				y->b->lit.t = T_INT;
				y->b->lit.u.i = k->i;
				x = y;
			} else {
				unexpected(p, "a name after '.'");
			}
			p->pos++;
		} else if (is_op(at, "[")) {
			p->pos++;
			struct node *idx[3] = {0};
			bool slice = false;
			for (int k = 0; k < 3; k++) {
				if (!is_op(cur(p), ":") && !is_op(cur(p), "]"))
					idx[k] = parse_expr(p, true);
				if (k < 2 && is_op(cur(p), ":")) {
					slice = true;
					p->pos++;
					continue;
				}
				break;
			}
			if (!slice && !idx[0])
				unexpected(p, "an index");
			if (!slice && is_op(cur(p), ","))
				perr(p, cur(p)->line, cur(p)->col, "tuple subscripts are not supported");
			expect_op(p, "]");
			struct node *y = mk(p, slice ? E_SLICE : E_ITEM, at);
			y->a = x;
			if (slice) {
				y->b = idx[0];
				y->c = idx[1];
				nvec_push(p, &y->kids, idx[2]);
			} else {
				y->b = idx[0];
			}
			x = y;
		} else if (is_op(at, "(")) {
			struct node *y = mk(p, E_CALL, at);
			y->a = x;
			parse_call_args(p, y);
			x = y;
		} else {
			return x;
		}
	}
}

static struct node *parse_test(struct parser *p, struct node *in)
{
	struct tok *at = cur(p);
	p->pos++; /* is */
	bool neg = false;
	if (is_name(cur(p), "not")) {
		neg = true;
		p->pos++;
	}
	struct node *t = mk(p, E_TEST, at);
	t->name = parse_dotted_name(p);
	t->a = in;
	t->op = neg;
	struct tok *k = cur(p);
	if (is_op(k, "(")) {
		parse_call_args(p, t);
	} else if ((k->t == TK_NAME || k->t == TK_STR || k->t == TK_INT || k->t == TK_FLOAT || is_op(k, "(") ||
		    is_op(k, "[") || is_op(k, "{")) &&
		   !is_name(k, "else") && !is_name(k, "or") && !is_name(k, "and")) {
		if (is_name(k, "is"))
			perr(p, k->line, k->col, "you cannot chain multiple tests with is");
		struct node *arg = parse_postfix(p, parse_primary(p));
		nvec_push(p, &t->kids, arg);
		t->kwnames = palloc(p, sizeof *t->kwnames);
	}
	return t;
}

static struct node *parse_filter_expr(struct parser *p, struct node *x)
{
	for (;;) {
		if (is_op(cur(p), "|"))
			x = parse_filter(p, x);
		else if (is_name(cur(p), "is"))
			x = parse_test(p, x);
		else if (is_op(cur(p), "("))
			x = parse_postfix(p, x);
		else
			return x;
	}
}

static struct node *parse_primary(struct parser *p)
{
	struct tok *k = cur(p);
	struct node *x;
	enter(p);
	if (k->t == TK_NAME) {
		p->pos++;
		x = mk(p, E_LIT, k);
		if (!strcmp(k->s, "true") || !strcmp(k->s, "True")) {
			x->lit.t = T_BOOL;
			x->lit.u.b = true;
		} else if (!strcmp(k->s, "false") || !strcmp(k->s, "False")) {
			x->lit.t = T_BOOL;
		} else if (!strcmp(k->s, "none") || !strcmp(k->s, "None")) {
			x->lit.t = T_NONE;
		} else {
			x->kind = E_NAME;
			x->name = k->s;
		}
	} else if (k->t == TK_STR) {
		/* adjacent literals concatenate, as in Python */
		size_t total = 0, i = p->pos;
		while (p->toks[i].t == TK_STR)
			total += p->toks[i++].n;
		char *buf = palloc(p, total + 1);
		size_t o = 0;
		for (; cur(p)->t == TK_STR; p->pos++) {
			memcpy(buf + o, cur(p)->s, cur(p)->n);
			o += cur(p)->n;
		}
		x = mk(p, E_LIT, k);
		x->lit = str_lit(p, buf, total);
	} else if (k->t == TK_INT || k->t == TK_FLOAT) {
		p->pos++;
		x = mk(p, E_LIT, k);
		if (k->t == TK_INT) {
			x->lit.t = T_INT;
			x->lit.u.i = k->i;
		} else {
			x->lit.t = T_FLOAT;
			x->lit.u.f = k->f;
		}
	} else if (is_op(k, "(")) {
		p->pos++;
		if (is_op(cur(p), ")")) {
			p->pos++;
			x = mk(p, E_TUPLE, k);
		} else {
			struct node *first = parse_expr(p, true);
			if (is_op(cur(p), ",")) {
				x = mk(p, E_TUPLE, k);
				nvec_push(p, &x->kids, first);
				while (is_op(cur(p), ",")) {
					p->pos++;
					if (is_op(cur(p), ")"))
						break;
					nvec_push(p, &x->kids, parse_expr(p, true));
				}
			} else {
				x = first;
			}
			expect_op(p, ")");
		}
	} else if (is_op(k, "[")) {
		p->pos++;
		x = mk(p, E_LIST, k);
		while (!is_op(cur(p), "]")) {
			if (x->kids.n)
				expect_op(p, ",");
			if (is_op(cur(p), "]"))
				break;
			nvec_push(p, &x->kids, parse_expr(p, true));
		}
		p->pos++;
	} else if (is_op(k, "{")) {
		p->pos++;
		x = mk(p, E_DICT, k);
		while (!is_op(cur(p), "}")) {
			if (x->kids.n)
				expect_op(p, ",");
			if (is_op(cur(p), "}"))
				break;
			nvec_push(p, &x->kids, parse_expr(p, true));
			expect_op(p, ":");
			nvec_push(p, &x->kids, parse_expr(p, true));
		}
		p->pos++;
	} else {
		unexpected(p, "an expression");
	}
	p->depth--;
	return x;
}

static struct node *parse_unary(struct parser *p, bool with_filter)
{
	struct tok *k = cur(p);
	struct node *x;
	enter(p);
	if (is_op(k, "-") || is_op(k, "+")) {
		p->pos++;
		x = mk(p, is_op(k, "-") ? E_NEG : E_POS, k);
		x->a = parse_unary(p, false);
	} else {
		x = parse_primary(p);
	}
	x = parse_postfix(p, x);
	if (with_filter)
		x = parse_filter_expr(p, x);
	p->depth--;
	return x;
}

static struct node *mkbin(struct parser *p, const struct tok *at, int op, struct node *l, struct node *r)
{
	struct node *x = mk(p, E_BIN, at);
	x->op = op;
	x->a = l;
	x->b = r;
	return x;
}

/* binary operators from loosest to tightest: + -, then ~, then * / // %, then ** */
static const struct {
	const char *ops[4];
	int codes[4];
} arith_levels[] = {
	{{"+", "-"}, {B_ADD, B_SUB}},
	{{"~"}, {B_CAT}},
	{{"*", "/", "//", "%"}, {B_MUL, B_DIV, B_FDIV, B_MOD}},
	{{"**"}, {B_POW}},
};

static struct node *parse_arith(struct parser *p, size_t level)
{
	if (level == sizeof arith_levels / sizeof arith_levels[0])
		return parse_unary(p, true);
	struct node *x = parse_arith(p, level + 1);
	for (;;) {
		struct tok *at = cur(p);
		int op = -1;
		for (int k = 0; k < 4 && arith_levels[level].ops[k]; k++)
			if (is_op(at, arith_levels[level].ops[k]))
				op = arith_levels[level].codes[k];
		if (op < 0)
			return x;
		p->pos++;
		x = mkbin(p, at, op, x, parse_arith(p, level + 1));
	}
}

static struct node *parse_compare(struct parser *p)
{
	struct node *x = parse_arith(p, 0);
	for (;;) {
		struct tok *at = cur(p);
		int op = is_op(at, "==") ? B_EQ : is_op(at, "!=") ? B_NE : is_op(at, "<") ? B_LT : is_op(at, "<=") ? B_LE
			: is_op(at, ">") ? B_GT : is_op(at, ">=") ? B_GE : is_name(at, "in") ? B_IN : -1;
		if (op < 0 && is_name(at, "not") && is_name(peek(p, 1), "in")) {
			op = B_NOTIN;
			p->pos++;
		}
		if (op < 0)
			return x;
		p->pos++;
		/* a < b < c chains are rare in templates; they evaluate left to right here */
		x = mkbin(p, at, op, x, parse_arith(p, 0));
	}
}

static struct node *parse_not(struct parser *p)
{
	if (is_name(cur(p), "not")) {
		struct tok *at = cur(p);
		p->pos++;
		enter(p);
		struct node *x = mk(p, E_NOT, at);
		x->a = parse_not(p);
		p->depth--;
		return x;
	}
	return parse_compare(p);
}

static struct node *parse_logic(struct parser *p, bool is_or)
{
	struct node *x = is_or ? parse_logic(p, false) : parse_not(p);
	while (is_name(cur(p), is_or ? "or" : "and")) {
		struct tok *at = cur(p);
		p->pos++;
		struct node *y = mk(p, is_or ? E_OR : E_AND, at);
		y->a = x;
		y->b = is_or ? parse_logic(p, false) : parse_not(p);
		x = y;
	}
	return x;
}

static struct node *parse_expr(struct parser *p, bool condexpr)
{
	enter(p);
	struct node *x = parse_logic(p, true);
	while (condexpr && is_name(cur(p), "if")) {
		struct tok *at = cur(p);
		p->pos++;
		struct node *y = mk(p, E_COND, at);
		y->a = parse_logic(p, true); /* condition */
		y->b = x;           /* then */
		if (is_name(cur(p), "else")) {
			p->pos++;
			y->c = parse_expr(p, true);
		}
		x = y;
	}
	p->depth--;
	return x;
}

/* expr or an implicit tuple "a, b" */
static struct node *parse_tuple(struct parser *p, bool condexpr)
{
	struct tok *at = cur(p);
	struct node *x = parse_expr(p, condexpr);
	if (!is_op(cur(p), ","))
		return x;
	struct node *t = mk(p, E_TUPLE, at);
	nvec_push(p, &t->kids, x);
	while (is_op(cur(p), ",")) {
		p->pos++;
		if (cur(p)->t == TK_VEND || cur(p)->t == TK_BEND || is_name(cur(p), "in") || is_name(cur(p), "if"))
			break;
		nvec_push(p, &t->kids, parse_expr(p, condexpr));
	}
	return t;
}

/* Assignment target: a name, "ns.attr" (set only) or names "a, b". */
static struct node *parse_target(struct parser *p, bool allow_attr)
{
	struct tok *at = cur(p);
	bool paren = is_op(at, "(");
	if (paren)
		p->pos++;
	struct node *t = mk(p, E_TUPLE, at);
	for (;;) {
		struct tok *k = cur(p);
		if (k->t != TK_NAME)
			unexpected(p, "a name to assign to");
		p->pos++;
		struct node *x = mk(p, E_NAME, k);
		x->name = k->s;
		if (allow_attr && is_op(cur(p), ".") && peek(p, 1)->t == TK_NAME) {
			struct node *y = mk(p, E_ATTR, cur(p));
			y->a = x;
			y->name = peek(p, 1)->s;
			p->pos += 2;
			x = y;
		}
		nvec_push(p, &t->kids, x);
		if (!is_op(cur(p), ","))
			break;
		p->pos++;
	}
	if (paren)
		expect_op(p, ")");
	return t->kids.n == 1 && !paren ? t->kids.v[0] : t;
}

static const char *const *parse_body(struct parser *p, struct nvec *body, const char *const *ends, const char *opener,
				     int line, int col);

static void end_block(struct parser *p)
{
	expect_t(p, TK_BEND, "end of statement block");
}

static const char *const if_ends[] = {"elif", "else", "endif", NULL};
static const char *const endif_only[] = {"endif", NULL};
static const char *const for_ends[] = {"else", "endfor", NULL};
static const char *const endfor_only[] = {"endfor", NULL};

static struct node *parse_if(struct parser *p, struct tok *at)
{
	struct node *x = mk(p, N_IF, at);
	x->a = parse_tuple(p, true);
	end_block(p);
	const char *const *e = parse_body(p, &x->body, if_ends, "if", at->line, at->col);
	struct tok *k = cur(p);
	p->pos++;
	if (!strcmp(*e, "elif")) {
		nvec_push(p, &x->orelse, parse_if(p, k));
		return x;
	}
	if (!strcmp(*e, "else")) {
		end_block(p);
		parse_body(p, &x->orelse, endif_only, "if", at->line, at->col);
		p->pos++;
	}
	end_block(p);
	return x;
}

static struct node *parse_for(struct parser *p, struct tok *at)
{
	struct node *x = mk(p, N_FOR, at);
	x->a = parse_target(p, false);
	if (!is_name(cur(p), "in"))
		unexpected(p, "'in'");
	p->pos++;
	x->b = parse_tuple(p, false);
	if (is_name(cur(p), "if")) {
		p->pos++;
		x->c = parse_expr(p, true);
	}
	if (is_name(cur(p), "recursive"))
		perr(p, cur(p)->line, cur(p)->col, "recursive for loops are not supported");
	end_block(p);
	p->loop_depth++;
	const char *const *e = parse_body(p, &x->body, for_ends, "for", at->line, at->col);
	p->loop_depth--;
	p->pos++;
	if (!strcmp(*e, "else")) {
		end_block(p);
		parse_body(p, &x->orelse, endfor_only, "for", at->line, at->col);
		p->pos++;
	}
	end_block(p);
	return x;
}

static struct node *parse_macro_params(struct parser *p, struct node *x)
{
	expect_op(p, "(");
	const char *names[MAX_ARGS];
	while (!is_op(cur(p), ")")) {
		if (x->kids.n)
			expect_op(p, ",");
		if (is_op(cur(p), ")"))
			break;
		if (x->kids.n == MAX_ARGS)
			perr(p, cur(p)->line, cur(p)->col, "more than %d parameters", MAX_ARGS);
		struct tok *k = cur(p);
		if (k->t != TK_NAME)
			unexpected(p, "a parameter name");
		p->pos++;
		names[x->kids.n] = k->s;
		struct node *def = NULL;
		if (is_op(cur(p), "=")) {
			p->pos++;
			def = parse_expr(p, true);
		}
		nvec_push(p, &x->kids, def); /* default or NULL */
	}
	p->pos++;
	x->kwnames = palloc(p, (x->kids.n + 1) * sizeof *x->kwnames);
	memcpy(x->kwnames, names, x->kids.n * sizeof *names);
	return x;
}

static const char *const endmacro_only[] = {"endmacro", NULL};
static const char *const endcall_only[] = {"endcall", NULL};
static const char *const endset_only[] = {"endset", NULL};
static const char *const endfilter_only[] = {"endfilter", NULL};
static const char *const endgen_only[] = {"endgeneration", NULL};
static const char *const endwith_only[] = {"endwith", NULL};

static void parse_statement(struct parser *p, struct nvec *body)
{
	struct tok *at = cur(p);
	if (at->t != TK_NAME)
		unexpected(p, "a statement name");
	p->pos++;
	const char *w = at->s;
	struct node *x = NULL;
	enter(p);
	if (!strcmp(w, "if")) {
		x = parse_if(p, at);
	} else if (!strcmp(w, "for")) {
		x = parse_for(p, at);
	} else if (!strcmp(w, "set")) {
		struct node *target = parse_target(p, true);
		if (is_op(cur(p), "=")) {
			p->pos++;
			x = mk(p, N_SET, at);
			x->a = target;
			x->b = parse_tuple(p, true);
			end_block(p);
		} else {
			if (target->kind != E_NAME)
				unexpected(p, "'='");
			x = mk(p, N_SETBLOCK, at);
			x->a = target;
			struct node *bv = mk(p, E_BODYVAL, at);
			x->b = parse_filter(p, bv);
			end_block(p);
			parse_body(p, &x->body, endset_only, "set", at->line, at->col);
			p->pos++;
			end_block(p);
		}
	} else if (!strcmp(w, "macro")) {
		x = mk(p, N_MACRO, at);
		if (cur(p)->t != TK_NAME)
			unexpected(p, "a macro name");
		x->name = cur(p)->s;
		p->pos++;
		parse_macro_params(p, x);
		end_block(p);
		int saved = p->loop_depth;
		p->loop_depth = 0;
		parse_body(p, &x->body, endmacro_only, "macro", at->line, at->col);
		p->loop_depth = saved;
		p->pos++;
		if (cur(p)->t == TK_NAME) /* {% endmacro name %} */
			p->pos++;
		end_block(p);
	} else if (!strcmp(w, "call")) {
		x = mk(p, N_CALLBLOCK, at);
		struct node *params = mk(p, N_MACRO, at);
		params->name = "caller";
		if (is_op(cur(p), "("))
			parse_macro_params(p, params);
		x->b = params;
		x->a = parse_expr(p, true);
		if (x->a->kind != E_CALL)
			perr(p, at->line, at->col, "expected a call after {%% call %%}");
		end_block(p);
		int saved = p->loop_depth;
		p->loop_depth = 0;
		parse_body(p, &params->body, endcall_only, "call", at->line, at->col);
		p->loop_depth = saved;
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "filter")) {
		x = mk(p, N_FILTERBLOCK, at);
		struct node *bv = mk(p, E_BODYVAL, at);
		/* {% filter upper|trim %}: the chain after the first name */
		struct node *f = mk(p, E_FILTER, at);
		f->name = parse_dotted_name(p);
		f->a = bv;
		if (is_op(cur(p), "("))
			parse_call_args(p, f);
		x->b = parse_filter(p, f);
		end_block(p);
		parse_body(p, &x->body, endfilter_only, "filter", at->line, at->col);
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "generation")) {
		/* rendered as its body: output the statements in place */
		end_block(p);
		parse_body(p, body, endgen_only, "generation", at->line, at->col);
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "break") || !strcmp(w, "continue")) {
		if (!p->loop_depth)
			perr(p, at->line, at->col, "'%s' outside of a loop", w);
		x = mk(p, w[0] == 'b' ? N_BREAK : N_CONTINUE, at);
		end_block(p);
	} else if (!strcmp(w, "with")) {
		/* {% with a = 1, b = x %}: values from the outer scope, names local to the body */
		x = mk(p, N_WITH, at);
		const char *names[MAX_ARGS];
		while (cur(p)->t != TK_BEND) {
			if (x->kids.n)
				expect_op(p, ",");
			if (x->kids.n == MAX_ARGS)
				perr(p, cur(p)->line, cur(p)->col, "more than %d assignments", MAX_ARGS);
			if (cur(p)->t != TK_NAME)
				unexpected(p, "a name to assign to");
			names[x->kids.n] = cur(p)->s;
			p->pos++;
			expect_op(p, "=");
			nvec_push(p, &x->kids, parse_expr(p, true));
		}
		x->kwnames = palloc(p, (x->kids.n + 1) * sizeof *x->kwnames);
		memcpy(x->kwnames, names, x->kids.n * sizeof *names);
		end_block(p);
		parse_body(p, &x->body, endwith_only, "with", at->line, at->col);
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "include") || !strcmp(w, "extends") || !strcmp(w, "import") || !strcmp(w, "from") ||
		   !strcmp(w, "block") || !strcmp(w, "do") || !strcmp(w, "autoescape")) {
		perr(p, at->line, at->col, "the '%s' statement is not supported", w);
	} else {
		perr(p, at->line, at->col, "encountered unknown tag '%s'", w);
	}
	if (x)
		nvec_push(p, body, x);
	p->depth--;
}

/* Statements until EOF (ends == NULL) or until a block whose first name is in
 * ends; then cur() is that name and the match is returned. */
static const char *const *parse_body(struct parser *p, struct nvec *body, const char *const *ends, const char *opener,
				     int line, int col)
{
	for (;;) {
		struct tok *k = cur(p);
		if (k->t == TK_EOF) {
			if (!ends)
				return NULL;
			const char *last = ends[0];
			for (const char *const *e = ends; *e; e++)
				last = *e;
			perr(p, line, col, "unexpected end of template: the '%s' block opened here is never closed ('%s' expected)",
			     opener, last);
		}
		if (k->t == TK_DATA) {
			struct node *x = mk(p, N_DATA, k);
			x->lit = str_lit(p, k->s, k->n);
			nvec_push(p, body, x);
			p->pos++;
		} else if (k->t == TK_VBEGIN) {
			p->pos++;
			struct node *x = mk(p, N_OUTPUT, k);
			x->a = parse_tuple(p, true);
			expect_t(p, TK_VEND, "end of print statement");
			nvec_push(p, body, x);
		} else if (k->t == TK_BBEGIN) {
			p->pos++;
			struct tok *w = cur(p);
			if (ends && w->t == TK_NAME)
				for (const char *const *e = ends; *e; e++)
					if (!strcmp(*e, w->s))
						return e;
			if (w->t == TK_NAME && (!strncmp(w->s, "end", 3) || !strcmp(w->s, "else") || !strcmp(w->s, "elif")))
				perr(p, w->line, w->col, "unexpected '%s'%s%s%s", w->s, ends ? " (the innermost open block is '" : "",
				     ends ? opener : "", ends ? "')" : "");
			parse_statement(p, body);
		} else {
			unexpected(p, "template data or a tag");
		}
	}
}

/* ---- render state, allocation, strings ---- */

struct sb {
	char *p; /* arena; NUL-terminated when n > 0 or p != NULL */
	size_t n, cap;
};

struct rctx {
	struct arena a;
	size_t bytes; /* allocated in a so far */
	jmp_buf jb;
	char *err;
	size_t errlen;
	struct sb *out;
	int64_t steps;
	int depth;
	int ctl;             /* 1 after break, 2 after continue, until the loop sees it */
	struct jv bodyval;   /* the rendered body a set/filter block feeds its filters */
	struct scope *root;
	int64_t now_s;
	bool fixed_now;
};

__attribute__((noreturn, format(printf, 3, 4))) static void rerr(struct rctx *r, const struct node *at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->err && r->errlen) {
		if (at)
			snprintf(r->err, r->errlen, "template error at line %d:%d: %s", at->line, at->col, msg);
		else
			snprintf(r->err, r->errlen, "template error: %s", msg);
	}
	longjmp(r->jb, 1);
}

static void *ralloc(struct rctx *r, size_t n)
{
	r->bytes += n;
	if (r->bytes > MAX_RENDER_BYTES) {
		if (r->err && r->errlen)
			snprintf(r->err, r->errlen, "template error: the render needs more than %zu MiB; it is refused as a "
				 "likely runaway", MAX_RENDER_BYTES >> 20);
		longjmp(r->jb, 1);
	}
	void *m = arena_alloc(&r->a, n);
	if (!m) {
		if (r->err && r->errlen)
			snprintf(r->err, r->errlen, "template error: out of memory");
		longjmp(r->jb, 2);
	}
	return m;
}

static void sb_put(struct rctx *r, struct sb *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *np = ralloc(r, cap);
		if (b->n)
			memcpy(np, b->p, b->n);
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_puts(struct rctx *r, struct sb *b, const char *s)
{
	sb_put(r, b, s, strlen(s));
}

static struct jv v_str(struct rctx *r, const char *s, size_t n)
{
	struct jstr *j = ralloc(r, sizeof *j + n + 1);
	if (n)
		memcpy(j->p, s, n);
	j->n = n;
	struct jv v = {.t = T_STR};
	v.u.s = j;
	return v;
}

static struct jv v_sb(struct rctx *r, struct sb *b)
{
	return v_str(r, b->p ? b->p : "", b->n);
}

static struct jv v_int(int64_t i)
{
	struct jv v = {.t = T_INT};
	v.u.i = i;
	return v;
}

static struct jv v_float(double f)
{
	struct jv v = {.t = T_FLOAT};
	v.u.f = f;
	return v;
}

static struct jv v_bool(bool b)
{
	struct jv v = {.t = T_BOOL};
	v.u.b = b;
	return v;
}

static struct jv v_none(void)
{
	struct jv v = {.t = T_NONE};
	return v;
}

static struct jv v_undef(struct rctx *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static struct jv v_undef(struct rctx *r, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct jv v = {.t = T_UNDEF};
	size_t n = strlen(msg);
	char *h = ralloc(r, n + 1);
	memcpy(h, msg, n);
	v.u.hint = h;
	return v;
}

static struct jv v_list(struct rctx *r, size_t cap)
{
	struct jv v = {.t = T_LIST};
	v.u.l = ralloc(r, sizeof *v.u.l);
	if (cap) {
		v.u.l->v = ralloc(r, cap * sizeof(struct jv));
		v.u.l->cap = cap;
	}
	return v;
}

static void list_push(struct rctx *r, struct jlist *l, struct jv x)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		struct jv *nv = ralloc(r, cap * sizeof *nv);
		if (l->n)
			memcpy(nv, l->v, l->n * sizeof *nv);
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = x;
}

static struct jv v_dict(struct rctx *r, int t)
{
	struct jv v = {.t = (unsigned char)t};
	v.u.d = ralloc(r, sizeof *v.u.d);
	return v;
}

static bool py_eq(struct jv a, struct jv b);

static struct jv *dict_find(struct jdict *d, struct jv k)
{
	for (size_t i = 0; i < d->n; i++)
		if (py_eq(d->k[i], k))
			return &d->v[i];
	return NULL;
}

static struct jv *dict_find_s(struct jdict *d, const char *k)
{
	size_t n = strlen(k);
	for (size_t i = 0; i < d->n; i++)
		if (d->k[i].t == T_STR && d->k[i].u.s->n == n && memcmp(d->k[i].u.s->p, k, n) == 0)
			return &d->v[i];
	return NULL;
}

static void dict_set(struct rctx *r, struct jdict *d, struct jv k, struct jv v)
{
	struct jv *slot = dict_find(d, k);
	if (slot) {
		*slot = v;
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 4;
		struct jv *nk = ralloc(r, cap * sizeof *nk), *nv = ralloc(r, cap * sizeof *nv);
		if (d->n) {
			memcpy(nk, d->k, d->n * sizeof *nk);
			memcpy(nv, d->v, d->n * sizeof *nv);
		}
		d->k = nk;
		d->v = nv;
		d->cap = cap;
	}
	d->k[d->n] = k;
	d->v[d->n++] = v;
}

static void dict_set_s(struct rctx *r, struct jdict *d, const char *k, struct jv v)
{
	dict_set(r, d, v_str(r, k, strlen(k)), v);
}

/* ---- scopes ---- */

static struct scope *scope_new(struct rctx *r, struct scope *parent)
{
	struct scope *s = ralloc(r, sizeof *s);
	s->parent = parent;
	return s;
}

static struct jv *scope_find(struct scope *s, const char *name)
{
	for (; s; s = s->parent)
		for (size_t i = 0; i < s->n; i++)
			if (!strcmp(s->names[i], name))
				return &s->vals[i];
	return NULL;
}

static void scope_set(struct rctx *r, struct scope *s, const char *name, struct jv v)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name)) {
			s->vals[i] = v;
			return;
		}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		const char **nn = ralloc(r, cap * sizeof *nn);
		struct jv *nv = ralloc(r, cap * sizeof *nv);
		if (s->n) {
			memcpy(nn, s->names, s->n * sizeof *nn);
			memcpy(nv, s->vals, s->n * sizeof *nv);
		}
		s->names = nn;
		s->vals = nv;
		s->cap = cap;
	}
	s->names[s->n] = name;
	s->vals[s->n++] = v;
}

/* ---- Python semantics: truth, equality, order, type names ---- */

static const char *type_name(struct jv v)
{
	switch (v.t) {
	case T_UNDEF: return "Undefined";
	case T_NONE: return "NoneType";
	case T_BOOL: return "bool";
	case T_INT: return "int";
	case T_FLOAT: return "float";
	case T_STR: return "str";
	case T_LIST: return v.flags & F_GEN ? "generator" : v.flags & F_TUPLE ? "tuple" : "list";
	case T_DICT: return "dict";
	case T_NS: return "Namespace";
	case T_MACRO: return "Macro";
	case T_FUNC: return "builtin_function_or_method";
	default: return "LoopContext";
	}
}

static bool truthy(struct jv v)
{
	switch (v.t) {
	case T_UNDEF:
	case T_NONE: return false;
	case T_BOOL: return v.u.b;
	case T_INT: return v.u.i != 0;
	case T_FLOAT: return v.u.f != 0.0;
	case T_STR: return v.u.s->n > 0;
	case T_LIST: return (v.flags & F_GEN) || v.u.l->n > 0;
	case T_DICT: return v.u.d->n > 0;
	default: return true;
	}
}

static bool is_num(struct jv v)
{
	return v.t == T_BOOL || v.t == T_INT || v.t == T_FLOAT;
}

static double num_f(struct jv v)
{
	return v.t == T_FLOAT ? v.u.f : v.t == T_INT ? (double)v.u.i : (double)v.u.b;
}

static int64_t num_i(struct jv v)
{
	return v.t == T_INT ? v.u.i : (int64_t)v.u.b;
}

static bool py_eq(struct jv a, struct jv b)
{
	if (is_num(a) && is_num(b)) {
		if (a.t == T_FLOAT || b.t == T_FLOAT)
			return num_f(a) == num_f(b);
		return num_i(a) == num_i(b);
	}
	if (a.t != b.t)
		return false;
	switch (a.t) {
	case T_UNDEF:
	case T_NONE: return true;
	case T_STR: return a.u.s->n == b.u.s->n && memcmp(a.u.s->p, b.u.s->p, a.u.s->n) == 0;
	case T_LIST:
		if ((a.flags | b.flags) & F_GEN)
			return a.u.l == b.u.l;
		if ((a.flags & F_TUPLE) != (b.flags & F_TUPLE) || a.u.l->n != b.u.l->n)
			return false;
		for (size_t i = 0; i < a.u.l->n; i++)
			if (!py_eq(a.u.l->v[i], b.u.l->v[i]))
				return false;
		return true;
	case T_DICT:
		if (a.u.d->n != b.u.d->n)
			return false;
		for (size_t i = 0; i < a.u.d->n; i++) {
			struct jv *o = dict_find(b.u.d, a.u.d->k[i]);
			if (!o || !py_eq(a.u.d->v[i], *o))
				return false;
		}
		return true;
	case T_NS: return a.u.d == b.u.d;
	case T_MACRO: return a.u.m == b.u.m;
	default: return false;
	}
}

/* <0, 0, >0; errors like Python for unorderable types */
static int py_cmp(struct rctx *r, const struct node *at, struct jv a, struct jv b, const char *op)
{
	if (a.t == T_UNDEF)
		rerr(r, at, "%s", a.u.hint);
	if (b.t == T_UNDEF)
		rerr(r, at, "%s", b.u.hint);
	if (is_num(a) && is_num(b)) {
		if (a.t == T_FLOAT || b.t == T_FLOAT) {
			double x = num_f(a), y = num_f(b);
			return x < y ? -1 : x > y ? 1 : 0;
		}
		int64_t x = num_i(a), y = num_i(b);
		return x < y ? -1 : x > y ? 1 : 0;
	}
	if (a.t == T_STR && b.t == T_STR) {
		size_t n = a.u.s->n < b.u.s->n ? a.u.s->n : b.u.s->n;
		int c = memcmp(a.u.s->p, b.u.s->p, n);
		if (c)
			return c;
		return a.u.s->n < b.u.s->n ? -1 : a.u.s->n > b.u.s->n ? 1 : 0;
	}
	if (a.t == T_LIST && b.t == T_LIST && (a.flags & F_TUPLE) == (b.flags & F_TUPLE)) {
		for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
			if (py_eq(a.u.l->v[i], b.u.l->v[i]))
				continue;
			return py_cmp(r, at, a.u.l->v[i], b.u.l->v[i], op);
		}
		return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n ? 1 : 0;
	}
	rerr(r, at, "'%s' not supported between instances of '%s' and '%s'", op, type_name(a), type_name(b));
}

/* ---- str() and repr() ---- */

static void fmt_float(double d, char *o, size_t on)
{
	if (isnan(d)) {
		snprintf(o, on, "nan");
		return;
	}
	if (isinf(d)) {
		snprintf(o, on, d < 0 ? "-inf" : "inf");
		return;
	}
	char buf[48];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* buf: [-]D[.DDD]e[+-]XX -> digits and decimal exponent */
	char digits[32];
	size_t nd = 0;
	const char *q = buf;
	bool neg = *q == '-';
	if (neg)
		q++;
	for (; *q && *q != 'e'; q++)
		if (isdigit((unsigned char)*q))
			digits[nd++] = *q;
	int exp = atoi(q + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	size_t w = 0;
	char out[64];
	if (neg)
		out[w++] = '-';
	if (exp >= -4 && exp < 16) {
		if (exp >= 0) {
			for (int i = 0; i <= exp; i++)
				out[w++] = (size_t)i < nd ? digits[i] : '0';
			out[w++] = '.';
			if ((size_t)exp + 1 < nd)
				for (size_t i = (size_t)exp + 1; i < nd; i++)
					out[w++] = digits[i];
			else
				out[w++] = '0';
		} else {
			out[w++] = '0';
			out[w++] = '.';
			for (int i = 0; i < -exp - 1; i++)
				out[w++] = '0';
			for (size_t i = 0; i < nd; i++)
				out[w++] = digits[i];
		}
		out[w] = 0;
	} else {
		out[w++] = digits[0];
		if (nd > 1) {
			out[w++] = '.';
			for (size_t i = 1; i < nd; i++)
				out[w++] = digits[i];
		}
		snprintf(out + w, sizeof out - w, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	}
	snprintf(o, on, "%s", out);
}

static void put_repr(struct rctx *r, struct sb *b, struct jv v);

static void put_str(struct rctx *r, struct sb *b, struct jv v)
{
	char tmp[64];
	switch (v.t) {
	case T_UNDEF: return;
	case T_NONE: sb_puts(r, b, "None"); return;
	case T_BOOL: sb_puts(r, b, v.u.b ? "True" : "False"); return;
	case T_INT:
		snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i);
		sb_puts(r, b, tmp);
		return;
	case T_FLOAT:
		fmt_float(v.u.f, tmp, sizeof tmp);
		sb_puts(r, b, tmp);
		return;
	case T_STR: sb_put(r, b, v.u.s->p, v.u.s->n); return;
	default: put_repr(r, b, v);
	}
}

/* Code points Python's repr() escapes beyond ASCII: C1 controls, NBSP and the
 * other separators, format characters and private use (unassigned ones are
 * not known here and print as they are). */
static bool py_unprintable(uint32_t cp)
{
	return cp <= 0xA0 || cp == 0xAD || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
	       (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF ||
	       (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000 || cp == 0x061C ||
	       cp == 0x180E || (cp >= 0xD800 && cp <= 0xDFFF);
}

static void put_str_repr(struct rctx *r, struct sb *b, const struct jstr *s)
{
	bool has_sq = memchr(s->p, '\'', s->n) != NULL, has_dq = memchr(s->p, '"', s->n) != NULL;
	char q = has_sq && !has_dq ? '"' : '\'';
	sb_put(r, b, &q, 1);
	for (size_t i = 0; i < s->n; i++) {
		unsigned char c = (unsigned char)s->p[i];
		char tmp[12];
		if (c == (unsigned char)q || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			sb_put(r, b, tmp, 2);
		} else if (c == '\n') {
			sb_puts(r, b, "\\n");
		} else if (c == '\r') {
			sb_puts(r, b, "\\r");
		} else if (c == '\t') {
			sb_puts(r, b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof tmp, "\\x%02x", c);
			sb_puts(r, b, tmp);
		} else if (c >= 0x80) {
			size_t k = utf8_off(s->p + i, s->n - i, 1);
			uint32_t cp = c & (0x3F >> (k - 1));
			for (size_t j = 1; j < k; j++)
				cp = cp << 6 | ((unsigned char)s->p[i + j] & 0x3F);
			if (py_unprintable(cp)) {
				snprintf(tmp, sizeof tmp, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
				sb_puts(r, b, tmp);
			} else {
				sb_put(r, b, s->p + i, k);
			}
			i += k - 1;
		} else {
			sb_put(r, b, (const char *)&s->p[i], 1);
		}
	}
	sb_put(r, b, &q, 1);
}

static void put_repr(struct rctx *r, struct sb *b, struct jv v);

static void put_repr_container(struct rctx *r, struct sb *b, struct jv v)
{
	switch (v.t) {
	case T_LIST: {
		if (v.flags & F_GEN)
			rerr(r, NULL, "printing a generator (the result of select, map, items, unique or reverse) is not "
				      "supported: its text has a memory address; apply |list first");
		bool tup = v.flags & F_TUPLE;
		sb_puts(r, b, tup ? "(" : "[");
		for (size_t i = 0; i < v.u.l->n; i++) {
			if (i)
				sb_puts(r, b, ", ");
			put_repr(r, b, v.u.l->v[i]);
		}
		if (tup && v.u.l->n == 1)
			sb_puts(r, b, ",");
		sb_puts(r, b, tup ? ")" : "]");
		return;
	}
	case T_DICT:
	case T_NS:
		sb_puts(r, b, v.t == T_NS ? "<Namespace {" : "{");
		for (size_t i = 0; i < v.u.d->n; i++) {
			if (i)
				sb_puts(r, b, ", ");
			put_repr(r, b, v.u.d->k[i]);
			sb_puts(r, b, ": ");
			put_repr(r, b, v.u.d->v[i]);
		}
		sb_puts(r, b, v.t == T_NS ? "}>" : "}");
		return;
	default: break;
	}
}

static void put_repr(struct rctx *r, struct sb *b, struct jv v)
{
	if (v.t == T_LIST || v.t == T_DICT || v.t == T_NS) {
		/* a namespace can hold itself; Python would print {...} there */
		if (++r->depth > MAX_DEPTH)
			rerr(r, NULL, "value nested too deeply to print");
		put_repr_container(r, b, v);
		r->depth--;
		return;
	}
	switch (v.t) {
	case T_STR: put_str_repr(r, b, v.u.s); return;
	case T_UNDEF: return;
	case T_MACRO: {
		char tmp[300];
		snprintf(tmp, sizeof tmp, "<Macro '%s'>", v.u.m->def->name);
		sb_puts(r, b, tmp);
		return;
	}
	case T_LOOP: {
		char tmp[64];
		snprintf(tmp, sizeof tmp, "<LoopContext %zu/%zu>", v.u.loop->i + 1, v.u.loop->items->n);
		sb_puts(r, b, tmp);
		return;
	}
	case T_FUNC:
		rerr(r, NULL, "printing a function or method ('%s') is not supported: Python prints a memory address",
		     v.u.fn->name);
	default: put_str(r, b, v);
	}
}

static struct jv to_str(struct rctx *r, struct jv v)
{
	if (v.t == T_STR)
		return v;
	struct sb b = {0};
	put_str(r, &b, v);
	return v_sb(r, &b);
}

/* ---- json.dumps ---- */

struct jsonopt {
	bool ensure_ascii, sort_keys;
	const char *indent; /* NULL: single line */
	const char *item_sep, *key_sep;
};

static void json_str(struct rctx *r, struct sb *b, const char *s, size_t n, bool ascii)
{
	sb_puts(r, b, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[16];
		switch (c) {
		case '"': sb_puts(r, b, "\\\""); break;
		case '\\': sb_puts(r, b, "\\\\"); break;
		case '\n': sb_puts(r, b, "\\n"); break;
		case '\r': sb_puts(r, b, "\\r"); break;
		case '\t': sb_puts(r, b, "\\t"); break;
		case '\b': sb_puts(r, b, "\\b"); break;
		case '\f': sb_puts(r, b, "\\f"); break;
		default:
			if (c < 0x20 || (ascii && c == 0x7f)) {
				snprintf(tmp, sizeof tmp, "\\u%04x", c);
				sb_puts(r, b, tmp);
			} else if (ascii && c >= 0x80) {
				int k = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
				uint32_t cp = c & (0x3F >> k);
				for (int j = 1; j <= k && i + 1 < n; j++)
					cp = cp << 6 | ((unsigned char)s[++i] & 0x3F);
				if (cp >= 0x10000) {
					cp -= 0x10000;
					snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
				} else {
					snprintf(tmp, sizeof tmp, "\\u%04x", cp);
				}
				sb_puts(r, b, tmp);
			} else {
				sb_put(r, b, s + i, 1);
			}
		}
	}
	sb_puts(r, b, "\"");
}

static void json_nl(struct rctx *r, struct sb *b, const struct jsonopt *o, int level)
{
	sb_puts(r, b, "\n");
	for (int i = 0; i < level; i++)
		sb_puts(r, b, o->indent);
}

static int key_order(const void *a, const void *b)
{
	const struct jv *x = *(const struct jv *const *)a, *y = *(const struct jv *const *)b;
	size_t n = x->u.s->n < y->u.s->n ? x->u.s->n : y->u.s->n;
	int c = memcmp(x->u.s->p, y->u.s->p, n);
	return c ? c : (x->u.s->n > y->u.s->n) - (x->u.s->n < y->u.s->n);
}

static void json_dump(struct rctx *r, const struct node *at, struct sb *b, struct jv v, const struct jsonopt *o, int level)
{
	char tmp[64];
	if (level > MAX_DEPTH)
		rerr(r, at, "tojson: value nested too deeply");
	switch (v.t) {
	case T_NONE: sb_puts(r, b, "null"); return;
	case T_BOOL: sb_puts(r, b, v.u.b ? "true" : "false"); return;
	case T_INT:
		snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i);
		sb_puts(r, b, tmp);
		return;
	case T_FLOAT:
		if (isnan(v.u.f))
			sb_puts(r, b, "NaN");
		else if (isinf(v.u.f))
			sb_puts(r, b, v.u.f < 0 ? "-Infinity" : "Infinity");
		else {
			fmt_float(v.u.f, tmp, sizeof tmp);
			sb_puts(r, b, tmp);
		}
		return;
	case T_STR: json_str(r, b, v.u.s->p, v.u.s->n, o->ensure_ascii); return;
	case T_LIST:
		if (v.flags & F_GEN)
			rerr(r, at, "Object of type generator is not JSON serializable");
		if (!v.u.l->n) {
			sb_puts(r, b, "[]");
			return;
		}
		sb_puts(r, b, "[");
		for (size_t i = 0; i < v.u.l->n; i++) {
			if (i)
				sb_puts(r, b, o->item_sep);
			if (o->indent)
				json_nl(r, b, o, level + 1);
			json_dump(r, at, b, v.u.l->v[i], o, level + 1);
		}
		if (o->indent)
			json_nl(r, b, o, level);
		sb_puts(r, b, "]");
		return;
	case T_DICT: {
		struct jdict *d = v.u.d;
		if (!d->n) {
			sb_puts(r, b, "{}");
			return;
		}
		/* keys as json.dumps turns them into strings */
		struct jv **order = ralloc(r, d->n * sizeof *order);
		struct jv *keys = ralloc(r, d->n * sizeof *keys);
		for (size_t i = 0; i < d->n; i++) {
			struct jv k = d->k[i];
			if (k.t == T_BOOL)
				k = v_str(r, k.u.b ? "true" : "false", k.u.b ? 4 : 5);
			else if (k.t == T_NONE)
				k = v_str(r, "null", 4);
			else if (k.t == T_INT || k.t == T_FLOAT)
				k = to_str(r, k);
			else if (k.t != T_STR)
				rerr(r, at, "tojson: keys must be str, int, float, bool or None, not %s", type_name(k));
			keys[i] = k;
			keys[i].flags = 0;
			order[i] = &keys[i];
		}
		if (o->sort_keys)
			qsort(order, d->n, sizeof *order, key_order);
		sb_puts(r, b, "{");
		for (size_t i = 0; i < d->n; i++) {
			size_t idx = (size_t)(order[i] - keys);
			if (i)
				sb_puts(r, b, o->item_sep);
			if (o->indent)
				json_nl(r, b, o, level + 1);
			json_str(r, b, keys[idx].u.s->p, keys[idx].u.s->n, o->ensure_ascii);
			sb_puts(r, b, o->key_sep);
			json_dump(r, at, b, d->v[idx], o, level + 1);
		}
		if (o->indent)
			json_nl(r, b, o, level);
		sb_puts(r, b, "}");
		return;
	}
	default: rerr(r, at, "Object of type %s is not JSON serializable", type_name(v));
	}
}

/* HTML escaping as markupsafe does it */
static struct jv html_escape(struct rctx *r, struct jv v)
{
	if (v.t == T_STR && (v.flags & F_MARKUP))
		return v;
	struct jv s = to_str(r, v);
	struct sb b = {0};
	sb_put(r, &b, "", 0);
	for (size_t i = 0; i < s.u.s->n; i++) {
		char c = s.u.s->p[i];
		switch (c) {
		case '&': sb_puts(r, &b, "&amp;"); break;
		case '<': sb_puts(r, &b, "&lt;"); break;
		case '>': sb_puts(r, &b, "&gt;"); break;
		case '\'': sb_puts(r, &b, "&#39;"); break;
		case '"': sb_puts(r, &b, "&#34;"); break;
		default: sb_put(r, &b, &c, 1);
		}
	}
	struct jv o = v_sb(r, &b);
	o.flags = F_MARKUP;
	return o;
}

/* ---- evaluation ---- */

struct args {
	int n;                       /* all arguments */
	struct jv v[MAX_ARGS];
	const char *kw[MAX_ARGS];    /* NULL for positional */
};

static struct jv eval(struct rctx *r, struct node *x, struct scope *s);
static void exec_body(struct rctx *r, struct nvec *body, struct scope *s);

static void step(struct rctx *r, const struct node *at)
{
	if (++r->steps > MAX_STEPS)
		rerr(r, at, "the template takes more than %d steps; it is refused as a likely runaway", MAX_STEPS);
}

static int npos(const struct args *a)
{
	int k = 0;
	while (k < a->n && !a->kw[k])
		k++;
	return k;
}

/* Argument by position or keyword; false when absent. */
static bool arg(const struct args *a, int pos, const char *name, struct jv *out)
{
	if (pos >= 0 && pos < npos(a)) {
		*out = a->v[pos];
		return true;
	}
	for (int i = 0; i < a->n; i++)
		if (a->kw[i] && name && !strcmp(a->kw[i], name)) {
			*out = a->v[i];
			return true;
		}
	return false;
}

static struct jv arg_or(const struct args *a, int pos, const char *name, struct jv dflt)
{
	struct jv v;
	return arg(a, pos, name, &v) ? v : dflt;
}

static void need_str(struct rctx *r, const struct node *at, struct jv v, const char *what)
{
	if (v.t != T_STR)
		rerr(r, at, "%s must be a string, not %s", what, type_name(v));
}

static int64_t need_int(struct rctx *r, const struct node *at, struct jv v, const char *what)
{
	if (v.t != T_INT && v.t != T_BOOL)
		rerr(r, at, "%s must be an integer, not %s", what, type_name(v));
	return num_i(v);
}

/* Items of an iterable as Python's iter() yields them. */
static struct jlist *iterate(struct rctx *r, const struct node *at, struct jv v)
{
	struct jv l;
	switch (v.t) {
	case T_UNDEF: return v_list(r, 0).u.l;
	case T_LIST: return v.u.l;
	case T_DICT:
		l = v_list(r, v.u.d->n);
		for (size_t i = 0; i < v.u.d->n; i++)
			list_push(r, l.u.l, v.u.d->k[i]);
		return l.u.l;
	case T_STR: {
		const char *p = v.u.s->p;
		size_t n = v.u.s->n;
		l = v_list(r, n);
		for (size_t i = 0; i < n;) {
			size_t j = utf8_off(p + i, n - i, 1);
			list_push(r, l.u.l, v_str(r, p + i, j));
			i += j;
		}
		return l.u.l;
	}
	default: rerr(r, at, "'%s' object is not iterable", type_name(v));
	}
}

static bool is_str_method(const char *n)
{
	static const char *const m[] = {"startswith", "endswith", "split", "rsplit", "splitlines", "strip", "lstrip",
					"rstrip", "replace", "upper", "lower", "title", "capitalize", "format", "find",
					"rfind", "index", "rindex", "count", "join", "isdigit", "isalpha", "isalnum",
					"isspace", "isupper", "islower", "isnumeric", "isdecimal", "center", "ljust",
					"rjust", "zfill", "removeprefix", "removesuffix", "partition", "rpartition",
					"swapcase", "casefold", "encode", "expandtabs", "istitle", NULL};
	for (int i = 0; m[i]; i++)
		if (!strcmp(m[i], n))
			return true;
	return false;
}

static int dict_method(const char *n) /* 1 safe, 2 refused by the immutable sandbox, 0 none */
{
	if (!strcmp(n, "get") || !strcmp(n, "items") || !strcmp(n, "keys") || !strcmp(n, "values") ||
	    !strcmp(n, "copy"))
		return 1;
	if (!strcmp(n, "pop") || !strcmp(n, "popitem") || !strcmp(n, "update") || !strcmp(n, "setdefault") ||
	    !strcmp(n, "clear") || !strcmp(n, "fromkeys"))
		return 2;
	return 0;
}

static int list_method(const char *n)
{
	if (!strcmp(n, "index") || !strcmp(n, "count") || !strcmp(n, "copy"))
		return 1;
	if (!strcmp(n, "append") || !strcmp(n, "extend") || !strcmp(n, "insert") || !strcmp(n, "pop") ||
	    !strcmp(n, "remove") || !strcmp(n, "clear") || !strcmp(n, "sort") || !strcmp(n, "reverse"))
		return 2;
	return 0;
}

static struct jv bound(struct rctx *r, struct jv self, const char *name, bool unsafe)
{
	struct jv v = {.t = T_FUNC};
	v.u.fn = ralloc(r, sizeof *v.u.fn);
	v.u.fn->name = name;
	v.u.fn->self = self;
	v.u.fn->unsafe = unsafe;
	return v;
}

static struct jv loop_attr(struct rctx *r, struct jv lv, const char *name)
{
	struct loopv *L = lv.u.loop;
	int64_t n = (int64_t)L->items->n, i = (int64_t)L->i;
	if (!strcmp(name, "index"))
		return v_int(i + 1);
	if (!strcmp(name, "index0"))
		return v_int(i);
	if (!strcmp(name, "revindex"))
		return v_int(n - i);
	if (!strcmp(name, "revindex0"))
		return v_int(n - i - 1);
	if (!strcmp(name, "first"))
		return v_bool(i == 0);
	if (!strcmp(name, "last"))
		return v_bool(i == n - 1);
	if (!strcmp(name, "length"))
		return v_int(n);
	if (!strcmp(name, "depth"))
		return v_int(L->depth);
	if (!strcmp(name, "depth0"))
		return v_int(L->depth - 1);
	if (!strcmp(name, "previtem"))
		return i > 0 ? L->items->v[i - 1] : v_undef(r, "there is no previous item");
	if (!strcmp(name, "nextitem"))
		return i + 1 < n ? L->items->v[i + 1] : v_undef(r, "there is no next item");
	if (!strcmp(name, "cycle") || !strcmp(name, "changed"))
		return bound(r, lv, name, false);
	return v_undef(r, "'LoopContext object' has no attribute '%s'", name);
}

static struct jv get_attr(struct rctx *r, const struct node *at, struct jv obj, const char *name)
{
	int k;
	switch (obj.t) {
	case T_UNDEF: rerr(r, at, "%s", obj.u.hint);
	case T_DICT:
		if ((k = dict_method(name)))
			return bound(r, obj, name, k == 2);
		{
			struct jv *v = dict_find_s(obj.u.d, name);
			return v ? *v : v_undef(r, "'dict object' has no attribute '%s'", name);
		}
	case T_NS: {
		struct jv *v = dict_find_s(obj.u.d, name);
		return v ? *v : v_undef(r, "'Namespace object' has no attribute '%s'", name);
	}
	case T_STR:
		if (is_str_method(name))
			return bound(r, obj, name, false);
		break;
	case T_LIST:
		if ((k = list_method(name)))
			return bound(r, obj, name, k == 2);
		break;
	case T_LOOP: return loop_attr(r, obj, name);
	case T_NONE: return v_undef(r, "'None' has no attribute '%s'", name);
	default: break;
	}
	return v_undef(r, "'%s object' has no attribute '%s'", type_name(obj), name);
}

static struct jv get_item(struct rctx *r, const struct node *at, struct jv obj, struct jv key)
{
	if (obj.t == T_UNDEF)
		rerr(r, at, "%s", obj.u.hint);
	if (obj.t == T_LIST && (obj.flags & F_GEN))
		return v_undef(r, "'generator object' has no such item");
	if ((obj.t == T_LIST || obj.t == T_STR) && (key.t == T_INT || key.t == T_BOOL)) {
		int64_t i = num_i(key);
		if (obj.t == T_LIST) {
			int64_t n = (int64_t)obj.u.l->n;
			if (i < 0)
				i += n;
			if (i < 0 || i >= n)
				return v_undef(r, "list object has no element %" PRId64, num_i(key));
			return obj.u.l->v[i];
		}
		int64_t n = (int64_t)utf8_len(obj.u.s->p, obj.u.s->n);
		if (i < 0)
			i += n;
		if (i < 0 || i >= n)
			return v_undef(r, "str object has no element %" PRId64, num_i(key));
		size_t o = utf8_off(obj.u.s->p, obj.u.s->n, (size_t)i);
		return v_str(r, obj.u.s->p + o, utf8_off(obj.u.s->p + o, obj.u.s->n - o, 1));
	}
	if (obj.t == T_DICT) {
		struct jv *v = dict_find(obj.u.d, key);
		if (v)
			return *v;
		if (key.t == T_STR && dict_method(key.u.s->p))
			return get_attr(r, at, obj, key.u.s->p);
		if (key.t == T_STR)
			return v_undef(r, "'dict object' has no attribute '%s'", key.u.s->p);
		return v_undef(r, "'dict object' has no such key");
	}
	if (key.t == T_STR && (obj.t == T_NS || obj.t == T_LOOP || obj.t == T_STR || obj.t == T_LIST))
		return get_attr(r, at, obj, key.u.s->p);
	return v_undef(r, "'%s object' has no such item", type_name(obj));
}

static int64_t clamp_idx(int64_t i, int64_t n, bool neg_step)
{
	if (i < 0) {
		i += n;
		if (i < 0)
			i = neg_step ? -1 : 0;
	} else if (i >= n) {
		i = neg_step ? n - 1 : n;
	}
	return i;
}

static struct jv slice(struct rctx *r, const struct node *at, struct jv obj, struct jv a, struct jv b, struct jv c)
{
	if (obj.t == T_UNDEF)
		rerr(r, at, "%s", obj.u.hint);
	int64_t stp = c.t == T_NONE || c.t == T_UNDEF ? 1 : need_int(r, at, c, "slice step");
	if (stp == 0)
		rerr(r, at, "slice step cannot be zero");
	struct jlist *items;
	/* jinja2 compiles slices to a plain Python subscript: no undefined fallback */
	if (obj.t == T_DICT)
		rerr(r, at, "unhashable type: 'slice'");
	if (obj.t == T_LIST && !(obj.flags & F_GEN))
		items = obj.u.l;
	else if (obj.t == T_STR)
		items = iterate(r, at, obj);
	else
		rerr(r, at, "'%s' object is not subscriptable", type_name(obj));
	int64_t n = (int64_t)items->n, lo, hi;
	if (stp > 0) {
		lo = a.t == T_NONE || a.t == T_UNDEF ? 0 : clamp_idx(need_int(r, at, a, "slice start"), n, false);
		hi = b.t == T_NONE || b.t == T_UNDEF ? n : clamp_idx(need_int(r, at, b, "slice stop"), n, false);
	} else {
		lo = a.t == T_NONE || a.t == T_UNDEF ? n - 1 : clamp_idx(need_int(r, at, a, "slice start"), n, true);
		hi = b.t == T_NONE || b.t == T_UNDEF ? -1 : clamp_idx(need_int(r, at, b, "slice stop"), n, true);
	}
	struct jv out = v_list(r, 0);
	out.flags = obj.flags & F_TUPLE;
	for (int64_t i = lo; stp > 0 ? i < hi : i > hi; i += stp)
		list_push(r, out.u.l, items->v[i]);
	if (obj.t == T_STR) {
		struct sb sbuf = {0};
		sb_put(r, &sbuf, "", 0);
		for (size_t i = 0; i < out.u.l->n; i++)
			sb_put(r, &sbuf, out.u.l->v[i].u.s->p, out.u.l->v[i].u.s->n);
		return v_sb(r, &sbuf);
	}
	return out;
}

/* ---- arithmetic ---- */

static struct jv concat_str(struct rctx *r, struct jv a, struct jv b)
{
	/* Markup + str escapes the str, and str + Markup too (markupsafe) */
	bool mk = (a.flags | b.flags) & F_MARKUP;
	if (mk) {
		a = html_escape(r, a);
		b = html_escape(r, b);
	}
	struct jv v = v_str(r, NULL, 0);
	struct jstr *j = ralloc(r, sizeof *j + a.u.s->n + b.u.s->n + 1);
	memcpy(j->p, a.u.s->p, a.u.s->n);
	memcpy(j->p + a.u.s->n, b.u.s->p, b.u.s->n);
	j->n = a.u.s->n + b.u.s->n;
	v.u.s = j;
	v.flags = mk ? F_MARKUP : 0;
	return v;
}

static struct jv repeat(struct rctx *r, const struct node *at, struct jv seq, int64_t times)
{
	if (times < 0)
		times = 0;
	if (seq.t == T_STR) {
		if (seq.u.s->n && (uint64_t)times > MAX_RENDER_BYTES / seq.u.s->n)
			rerr(r, at, "string repetition too large");
		struct sb b = {0};
		sb_put(r, &b, "", 0);
		for (int64_t i = 0; i < times; i++)
			sb_put(r, &b, seq.u.s->p, seq.u.s->n);
		return v_sb(r, &b);
	}
	if (seq.u.l->n && (uint64_t)times > MAX_RANGE / seq.u.l->n)
		rerr(r, at, "list repetition too large");
	struct jv out = v_list(r, 0);
	out.flags = seq.flags;
	for (int64_t i = 0; i < times; i++)
		for (size_t k = 0; k < seq.u.l->n; k++)
			list_push(r, out.u.l, seq.u.l->v[k]);
	return out;
}

static struct jv binop(struct rctx *r, const struct node *at, int op, struct jv a, struct jv b);

__attribute__((noreturn)) static void bad_operands(struct rctx *r, const struct node *at, const char *sym, struct jv a,
						    struct jv b)
{
	if (a.t == T_UNDEF)
		rerr(r, at, "%s", a.u.hint);
	if (b.t == T_UNDEF)
		rerr(r, at, "%s", b.u.hint);
	if (a.t == T_STR && !strcmp(sym, "+"))
		rerr(r, at, "can only concatenate str (not \"%s\") to str", type_name(b));
	rerr(r, at, "unsupported operand type(s) for %s: '%s' and '%s'", sym, type_name(a), type_name(b));
}

static struct jv arith(struct rctx *r, const struct node *at, int op, struct jv a, struct jv b)
{
	static const char *const sym[] = {"+", "-", "*", "/", "//", "%", "**"};
	if (!is_num(a) || !is_num(b))
		bad_operands(r, at, sym[op], a, b);
	if (op == B_DIV) {
		if (num_f(b) == 0)
			rerr(r, at, "division by zero");
		return v_float(num_f(a) / num_f(b));
	}
	if (a.t == T_FLOAT || b.t == T_FLOAT || (op == B_POW && num_i(b) < 0)) {
		double x = num_f(a), y = num_f(b);
		switch (op) {
		case B_ADD: return v_float(x + y);
		case B_SUB: return v_float(x - y);
		case B_MUL: return v_float(x * y);
		case B_FDIV:
			if (y == 0)
				rerr(r, at, "float floor division by zero");
			return v_float(floor(x / y));
		case B_MOD: {
			if (y == 0)
				rerr(r, at, "float modulo");
			double m = fmod(x, y);
			if (m != 0 && ((m < 0) != (y < 0)))
				m += y;
			return v_float(m);
		}
		default:
			if (x == 0 && y < 0)
				rerr(r, at, "0.0 cannot be raised to a negative power");
			return v_float(pow(x, y));
		}
	}
	int64_t x = num_i(a), y = num_i(b), z;
	switch (op) {
	case B_ADD:
		if (__builtin_add_overflow(x, y, &z))
			goto overflow;
		return v_int(z);
	case B_SUB:
		if (__builtin_sub_overflow(x, y, &z))
			goto overflow;
		return v_int(z);
	case B_MUL:
		if (__builtin_mul_overflow(x, y, &z))
			goto overflow;
		return v_int(z);
	case B_FDIV:
	case B_MOD: {
		if (y == 0)
			rerr(r, at, "integer division or modulo by zero");
		if (x == INT64_MIN && y == -1)
			goto overflow;
		int64_t q = x / y, m = x % y;
		if (m != 0 && ((m < 0) != (y < 0))) {
			q--;
			m += y;
		}
		return v_int(op == B_FDIV ? q : m);
	}
	default:
		z = 1;
		for (int64_t i = 0; i < y; i++) {
			if (__builtin_mul_overflow(z, x, &z))
				goto overflow;
			if (z == 0 || z == 1)
				break;
		}
		return v_int(z);
	}
overflow:
	rerr(r, at, "integer overflow (values are limited to 64 bits)");
}

static struct jv str_contains(struct rctx *r, const struct node *at, struct jv hay, struct jv needle)
{
	if (needle.t != T_STR)
		rerr(r, at, "'in <string>' requires string as left operand, not %s", type_name(needle));
	if (!needle.u.s->n)
		return v_bool(true);
	return v_bool(memmem(hay.u.s->p, hay.u.s->n, needle.u.s->p, needle.u.s->n) != NULL);
}

static bool contains(struct rctx *r, const struct node *at, struct jv container, struct jv x)
{
	switch (container.t) {
	case T_STR: return str_contains(r, at, container, x).u.b;
	case T_LIST:
		for (size_t i = 0; i < container.u.l->n; i++)
			if (py_eq(container.u.l->v[i], x))
				return true;
		return false;
	case T_DICT:
		if ((x.t == T_LIST && !(x.flags & F_TUPLE)) || x.t == T_DICT || x.t == T_NS)
			rerr(r, at, "unhashable type: '%s'", type_name(x));
		return dict_find(container.u.d, x) != NULL;
	case T_UNDEF: return false;
	default: rerr(r, at, "argument of type '%s' is not iterable", type_name(container));
	}
}

/* printf-style str % args: %s %r %d %i %f %x %%, flags, width, precision, %(name)s */
static struct jv str_mod(struct rctx *r, const struct node *at, struct jv fmt, struct jv arg)
{
	struct sb b = {0};
	sb_put(r, &b, "", 0);
	const char *p = fmt.u.s->p;
	size_t n = fmt.u.s->n, used = 0;
	bool tuple = arg.t == T_LIST && (arg.flags & F_TUPLE);
	bool mapping = arg.t == T_DICT || (arg.t == T_LIST && !tuple); /* Python: anything with __getitem__ */
	size_t nargs = tuple ? arg.u.l->n : 1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '%') {
			sb_put(r, &b, p + i, 1);
			continue;
		}
		if (++i >= n)
			rerr(r, at, "incomplete format");
		struct jv v;
		if (p[i] == '(') {
			size_t j = i + 1;
			while (j < n && p[j] != ')')
				j++;
			if (arg.t != T_DICT || j >= n)
				rerr(r, at, "format requires a mapping");
			struct jv *f = dict_find(arg.u.d, v_str(r, p + i + 1, j - i - 1));
			if (!f)
				rerr(r, at, "KeyError in %% formatting");
			v = *f;
			i = j + 1;
			used = nargs; /* a mapping is used as a whole */
		} else {
			v.t = T_UNDEF;
		}
		char spec[32] = "%";
		size_t sl = 1;
		while (i < n && strchr("-+ #0123456789.", p[i]) && sl < sizeof spec - 3)
			spec[sl++] = p[i++];
		if (i >= n)
			rerr(r, at, "incomplete format");
		char conv = p[i];
		if (conv == '%') {
			sb_put(r, &b, "%", 1);
			continue;
		}
		if (v.t == T_UNDEF && p[i - 1] != ')') {
			if (mapping) {
				v = arg;
			} else {
				if (used >= nargs)
					rerr(r, at, "not enough arguments for format string");
				v = tuple ? arg.u.l->v[used] : arg;
				used++;
			}
		}
		char tmp[512];
		if (conv == 's' || conv == 'r') {
			struct sb vs = {0};
			sb_put(r, &vs, "", 0);
			if (conv == 's')
				put_str(r, &vs, v);
			else
				put_repr(r, &vs, v);
			spec[sl++] = 's';
			spec[sl] = 0;
			if (sl == 2) {
				sb_put(r, &b, vs.p, vs.n);
				continue;
			}
			snprintf(tmp, sizeof tmp, spec, vs.p);
		} else if (strchr("dixXo", conv)) {
			if (!is_num(v))
				rerr(r, at, "%%%c format: a real number is required, not %s", conv, type_name(v));
			int64_t iv = v.t == T_FLOAT ? (int64_t)v.u.f : num_i(v);
			memcpy(spec + sl, conv == 'i' ? "lld" : conv == 'd' ? "lld" : conv == 'x' ? "llx" : conv == 'X' ? "llX" : "llo", 4);
			snprintf(tmp, sizeof tmp, spec, (long long)iv);
		} else if (strchr("feEgG", conv)) {
			if (!is_num(v))
				rerr(r, at, "%%%c format: a real number is required, not %s", conv, type_name(v));
			spec[sl++] = conv;
			spec[sl] = 0;
			snprintf(tmp, sizeof tmp, spec, num_f(v));
		} else {
			rerr(r, at, "unsupported format character '%c'", conv);
		}
		sb_puts(r, &b, tmp);
	}
	if (!mapping && used < nargs && !(tuple && nargs == 0 && used == 0))
		rerr(r, at, "not all arguments converted during string formatting");
	return v_sb(r, &b);
}

static struct jv binop(struct rctx *r, const struct node *at, int op, struct jv a, struct jv b)
{
	switch (op) {
	case B_ADD:
		if (a.t == T_STR && b.t == T_STR)
			return concat_str(r, a, b);
		if (a.t == T_LIST && b.t == T_LIST && !((a.flags | b.flags) & F_GEN)) {
			if ((a.flags & F_TUPLE) != (b.flags & F_TUPLE))
				rerr(r, at, "can only concatenate %s (not \"%s\") to %s", type_name(a), type_name(b), type_name(a));
			struct jv out = v_list(r, a.u.l->n + b.u.l->n);
			out.flags = a.flags;
			for (size_t i = 0; i < a.u.l->n; i++)
				list_push(r, out.u.l, a.u.l->v[i]);
			for (size_t i = 0; i < b.u.l->n; i++)
				list_push(r, out.u.l, b.u.l->v[i]);
			return out;
		}
		return arith(r, at, op, a, b);
	case B_MUL:
		if ((a.t == T_STR || a.t == T_LIST) && (b.t == T_INT || b.t == T_BOOL))
			return repeat(r, at, a, num_i(b));
		if ((b.t == T_STR || b.t == T_LIST) && (a.t == T_INT || a.t == T_BOOL))
			return repeat(r, at, b, num_i(a));
		return arith(r, at, op, a, b);
	case B_SUB:
	case B_DIV:
	case B_FDIV:
	case B_POW: return arith(r, at, op, a, b);
	case B_MOD:
		if (a.t == T_STR)
			return str_mod(r, at, a, b);
		return arith(r, at, op, a, b);
	case B_CAT: {
		struct jv x = to_str(r, a), y = to_str(r, b);
		x.flags = y.flags = 0;
		return concat_str(r, x, y);
	}
	case B_EQ: return v_bool(py_eq(a, b));
	case B_NE: return v_bool(!py_eq(a, b));
	case B_LT: return v_bool(py_cmp(r, at, a, b, "<") < 0);
	case B_LE: return v_bool(py_cmp(r, at, a, b, "<=") <= 0);
	case B_GT: return v_bool(py_cmp(r, at, a, b, ">") > 0);
	case B_GE: return v_bool(py_cmp(r, at, a, b, ">=") >= 0);
	case B_IN: return v_bool(contains(r, at, b, a));
	default: return v_bool(!contains(r, at, b, a));
	}
}

/* ---- string operations (Python str semantics on UTF-8) ---- */

/* chars == NULL strips whitespace; else any code point of chars */
static struct jv str_strip(struct rctx *r, struct jv s, const struct jstr *chars, bool left, bool right)
{
	const char *p = s.u.s->p;
	size_t lo = 0, hi = s.u.s->n;
	if (!chars) {
		size_t k;
		if (left)
			while (lo < hi && (k = ws_at(p, hi, lo)))
				lo += k;
		if (right)
			while (hi > lo && (k = ws_before(p + lo, hi - lo)))
				hi -= k;
	} else {
		if (left)
			while (lo < hi) {
				size_t k = utf8_off(p + lo, hi - lo, 1);
				if (!memmem(chars->p, chars->n, p + lo, k))
					break;
				lo += k;
			}
		if (right)
			while (hi > lo) {
				size_t k = 1;
				while (k < hi - lo && ((unsigned char)p[hi - k] & 0xC0) == 0x80)
					k++;
				if (!memmem(chars->p, chars->n, p + hi - k, k))
					break;
				hi -= k;
			}
	}
	struct jv o = v_str(r, p + lo, hi - lo);
	o.flags = s.flags;
	return o;
}

static struct jv str_replace(struct rctx *r, struct jv s, struct jv old, struct jv new_, int64_t count)
{
	struct sb b = {0};
	sb_put(r, &b, "", 0);
	const char *p = s.u.s->p;
	size_t n = s.u.s->n, i = 0;
	int64_t done = 0;
	if (!old.u.s->n) { /* Python inserts between every character */
		while (count < 0 || done < count) {
			sb_put(r, &b, new_.u.s->p, new_.u.s->n);
			done++;
			if (i >= n)
				break;
			size_t k = utf8_off(p + i, n - i, 1);
			sb_put(r, &b, p + i, k);
			i += k;
		}
		sb_put(r, &b, p + i, n - i);
		return v_sb(r, &b);
	}
	while (i <= n && (count < 0 || done < count)) {
		const char *hit = memmem(p + i, n - i, old.u.s->p, old.u.s->n);
		if (!hit)
			break;
		sb_put(r, &b, p + i, (size_t)(hit - (p + i)));
		sb_put(r, &b, new_.u.s->p, new_.u.s->n);
		i = (size_t)(hit - p) + old.u.s->n;
		done++;
	}
	sb_put(r, &b, p + i, n - i);
	return v_sb(r, &b);
}

static struct jv str_split(struct rctx *r, struct jv s, struct jv sep, int64_t maxsplit, bool from_right)
{
	const char *p = s.u.s->p;
	size_t n = s.u.s->n;
	struct jv out = v_list(r, 0);
	if (sep.t != T_STR) {
		/* whitespace runs, no empty strings; past maxsplit the rest of the
		 * string stays whole, its outer whitespace kept, as CPython does */
		size_t *st = ralloc(r, (n / 2 + 2) * sizeof *st), *en = ralloc(r, (n / 2 + 2) * sizeof *en);
		size_t nw = 0, i = 0, k;
		while (i < n) {
			while (i < n && (k = ws_at(p, n, i)))
				i += k;
			if (i >= n)
				break;
			st[nw] = i;
			while (i < n && !ws_at(p, n, i))
				i++;
			en[nw++] = i;
		}
		size_t keep = maxsplit < 0 || (uint64_t)maxsplit + 1 >= nw ? nw : (size_t)maxsplit;
		if (keep == nw) {
			for (size_t w = 0; w < nw; w++)
				list_push(r, out.u.l, v_str(r, p + st[w], en[w] - st[w]));
		} else if (!from_right) {
			for (size_t w = 0; w < keep; w++)
				list_push(r, out.u.l, v_str(r, p + st[w], en[w] - st[w]));
			list_push(r, out.u.l, v_str(r, p + st[keep], n - st[keep]));
		} else {
			list_push(r, out.u.l, v_str(r, p, en[nw - keep - 1]));
			for (size_t w = nw - keep; w < nw; w++)
				list_push(r, out.u.l, v_str(r, p + st[w], en[w] - st[w]));
		}
		return out;
	}
	const char *sp = sep.u.s->p;
	size_t sn = sep.u.s->n;
	if (!sn)
		return v_undef(r, "empty separator");
	if (!from_right) {
		size_t i = 0;
		int64_t k = 0;
		for (;;) {
			const char *hit = (maxsplit < 0 || k < maxsplit) ? memmem(p + i, n - i, sp, sn) : NULL;
			if (!hit) {
				list_push(r, out.u.l, v_str(r, p + i, n - i));
				return out;
			}
			list_push(r, out.u.l, v_str(r, p + i, (size_t)(hit - (p + i))));
			i = (size_t)(hit - p) + sn;
			k++;
		}
	}
	struct jlist *rev = v_list(r, 0).u.l;
	size_t e = n;
	int64_t k = 0;
	while (maxsplit < 0 || k < maxsplit) {
		size_t found = SIZE_MAX;
		for (size_t j = e >= sn ? e - sn + 1 : 0; j-- > 0;)
			if (memcmp(p + j, sp, sn) == 0) {
				found = j;
				break;
			}
		if (found == SIZE_MAX)
			break;
		list_push(r, rev, v_str(r, p + found + sn, e - found - sn));
		e = found;
		k++;
	}
	list_push(r, out.u.l, v_str(r, p, e));
	for (size_t q = rev->n; q-- > 0;)
		list_push(r, out.u.l, rev->v[q]);
	return out;
}

/* 0 lower, 1 upper, 2 str.title, 3 capitalize, 4 the title filter */
static struct jv str_case(struct rctx *r, struct jv s, int mode)
{
	struct jv o = v_str(r, s.u.s->p, s.u.s->n);
	char *p = o.u.s->p;
	bool prev_alpha = false;
	for (size_t i = 0; i < o.u.s->n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (mode == 0)
			p[i] = (char)tolower(c);
		else if (mode == 1)
			p[i] = (char)toupper(c);
		else if (mode == 2)
			p[i] = (char)(prev_alpha ? tolower(c) : toupper(c));
		else if (mode == 4) /* the title filter: words start after -, space, (, {, [ or < */
			p[i] = (char)(i == 0 || strchr("-({[< \t\n\r\f\v", p[i - 1]) ? toupper(c) : tolower(c));
		else
			p[i] = (char)(i == 0 ? toupper(c) : tolower(c));
		prev_alpha = isalpha(c) || c >= 0x80;
	}
	o.flags = s.flags;
	return o;
}

/* str.format with {}, {0}, {name} and {{ }}; no format specs */
static struct jv str_format(struct rctx *r, const struct node *at, struct jv fmt, const struct args *a)
{
	struct sb b = {0};
	sb_put(r, &b, "", 0);
	const char *p = fmt.u.s->p;
	size_t n = fmt.u.s->n;
	int auto_idx = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') {
			sb_put(r, &b, "{", 1);
			i++;
		} else if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') {
			sb_put(r, &b, "}", 1);
			i++;
		} else if (p[i] == '{') {
			size_t j = i + 1;
			while (j < n && p[j] != '}')
				j++;
			if (j >= n)
				rerr(r, at, "str.format: single '{' encountered in format string");
			char field[64];
			size_t fl = j - i - 1;
			if (fl >= sizeof field || memchr(p + i + 1, ':', fl) || memchr(p + i + 1, '!', fl) ||
			    memchr(p + i + 1, '.', fl) || memchr(p + i + 1, '[', fl))
				rerr(r, at, "str.format: only {}, {N} and {name} fields are supported");
			memcpy(field, p + i + 1, fl);
			field[fl] = 0;
			struct jv v;
			bool ok;
			if (!fl)
				ok = arg(a, auto_idx++, NULL, &v);
			else if (isdigit((unsigned char)field[0]))
				ok = arg(a, atoi(field), NULL, &v);
			else
				ok = arg(a, -1, field, &v);
			if (!ok)
				rerr(r, at, "str.format: no argument for field {%s}", field);
			put_str(r, &b, v);
			i = j;
		} else if (p[i] == '}') {
			rerr(r, at, "str.format: single '}' encountered in format string");
		} else {
			sb_put(r, &b, p + i, 1);
		}
	}
	return v_sb(r, &b);
}

/* Python str.splitlines for the separators templates meet */
static struct jlist *split_lines(struct rctx *r, const char *p, size_t n)
{
	struct jlist *l = v_list(r, 0).u.l;
	size_t i = 0, st = 0;
	while (i < n) {
		unsigned char c = (unsigned char)p[i];
		size_t k = 0;
		if (c == '\r' && i + 1 < n && p[i + 1] == '\n')
			k = 2;
		else if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
			k = 1;
		else if (c == 0xC2 && i + 1 < n && (unsigned char)p[i + 1] == 0x85)
			k = 2;
		else if (c == 0xE2 && i + 2 < n && (unsigned char)p[i + 1] == 0x80 &&
			 ((unsigned char)p[i + 2] == 0xA8 || (unsigned char)p[i + 2] == 0xA9))
			k = 3;
		if (k) {
			list_push(r, l, v_str(r, p + st, i - st));
			i += k;
			st = i;
		} else {
			i++;
		}
	}
	if (st < n)
		list_push(r, l, v_str(r, p + st, n - st));
	return l;
}

/* ---- methods of str, dict, list and loop ---- */

static struct jv call_macro(struct rctx *r, const struct node *at, struct macro *m, const struct args *a,
			    struct macro *caller);
static struct jv apply_filter(struct rctx *r, const struct node *at, const char *name, struct jv in,
			      const struct args *a);
static bool apply_test(struct rctx *r, const struct node *at, const char *name, struct jv in, const struct args *a);

static bool starts_or_ends(struct rctx *r, const struct node *at, struct jv s, struct jv x, bool end)
{
	if (x.t == T_LIST && (x.flags & F_TUPLE)) {
		for (size_t i = 0; i < x.u.l->n; i++)
			if (starts_or_ends(r, at, s, x.u.l->v[i], end))
				return true;
		return false;
	}
	need_str(r, at, x, end ? "endswith's argument" : "startswith's argument");
	if (x.u.s->n > s.u.s->n)
		return false;
	const char *p = end ? s.u.s->p + s.u.s->n - x.u.s->n : s.u.s->p;
	return memcmp(p, x.u.s->p, x.u.s->n) == 0;
}

static struct jv str_method(struct rctx *r, const struct node *at, struct jv s, const char *m, const struct args *a)
{
	struct jv x, y;
	const char *p = s.u.s->p;
	size_t n = s.u.s->n;
	if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
		if (!arg(a, 0, NULL, &x))
			rerr(r, at, "%s() takes at least 1 argument", m);
		return v_bool(starts_or_ends(r, at, s, x, m[0] == 'e'));
	}
	if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
		x = arg_or(a, 0, NULL, v_none());
		if (x.t != T_NONE)
			need_str(r, at, x, "strip's argument");
		return str_strip(r, s, x.t == T_STR ? x.u.s : NULL, m[0] != 'r', m[0] != 'l');
	}
	if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
		x = arg_or(a, 0, "sep", v_none());
		if (x.t != T_NONE)
			need_str(r, at, x, "split's separator");
		int64_t ms = need_int(r, at, arg_or(a, 1, "maxsplit", v_int(-1)), "maxsplit");
		struct jv out = str_split(r, s, x, ms, m[0] == 'r');
		if (out.t == T_UNDEF)
			rerr(r, at, "empty separator");
		return out;
	}
	if (!strcmp(m, "splitlines")) {
		struct jv out = v_list(r, 0);
		out.u.l = split_lines(r, p, n);
		return out;
	}
	if (!strcmp(m, "replace")) {
		if (!arg(a, 0, NULL, &x) || !arg(a, 1, NULL, &y))
			rerr(r, at, "replace() takes 2 arguments");
		need_str(r, at, x, "replace's first argument");
		need_str(r, at, y, "replace's second argument");
		return str_replace(r, s, x, y, need_int(r, at, arg_or(a, 2, "count", v_int(-1)), "count"));
	}
	if (!strcmp(m, "upper"))
		return str_case(r, s, 1);
	if (!strcmp(m, "lower") || !strcmp(m, "casefold"))
		return str_case(r, s, 0);
	if (!strcmp(m, "title"))
		return str_case(r, s, 2);
	if (!strcmp(m, "capitalize"))
		return str_case(r, s, 3);
	if (!strcmp(m, "format"))
		return str_format(r, at, s, a);
	if (!strcmp(m, "find") || !strcmp(m, "index") || !strcmp(m, "rfind") || !strcmp(m, "rindex") ||
	    !strcmp(m, "count")) {
		if (!arg(a, 0, NULL, &x))
			rerr(r, at, "%s() takes at least 1 argument", m);
		need_str(r, at, x, "the substring");
		if (!strcmp(m, "count")) {
			int64_t c = 0;
			if (!x.u.s->n)
				return v_int((int64_t)utf8_len(p, n) + 1);
			for (const char *q = p; (q = memmem(q, n - (size_t)(q - p), x.u.s->p, x.u.s->n)); q += x.u.s->n)
				c++;
			return v_int(c);
		}
		const char *hit = NULL;
		if (m[0] == 'r') {
			for (size_t j = n >= x.u.s->n ? n - x.u.s->n + 1 : 0; j-- > 0;)
				if (!memcmp(p + j, x.u.s->p, x.u.s->n)) {
					hit = p + j;
					break;
				}
		} else {
			hit = x.u.s->n ? memmem(p, n, x.u.s->p, x.u.s->n) : p;
		}
		if (!hit && strstr(m, "index"))
			rerr(r, at, "substring not found");
		return v_int(hit ? (int64_t)utf8_len(p, (size_t)(hit - p)) : -1);
	}
	if (!strcmp(m, "join")) {
		if (!arg(a, 0, NULL, &x))
			rerr(r, at, "join() takes exactly one argument");
		struct jlist *l = iterate(r, at, x);
		struct sb b = {0};
		sb_put(r, &b, "", 0);
		for (size_t i = 0; i < l->n; i++) {
			if (l->v[i].t != T_STR)
				rerr(r, at, "sequence item %zu: expected str instance, %s found", i, type_name(l->v[i]));
			if (i)
				sb_put(r, &b, p, n);
			sb_put(r, &b, l->v[i].u.s->p, l->v[i].u.s->n);
		}
		return v_sb(r, &b);
	}
	if (!strcmp(m, "isspace")) {
		bool ok = n > 0;
		for (size_t i = 0, k; i < n && ok; i += k)
			ok = (k = ws_at(p, n, i)) != 0;
		return v_bool(ok);
	}
	if (!strncmp(m, "is", 2)) {
		bool ok = n > 0, any_cased = false;
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)p[i];
			if (!strcmp(m, "isdigit") || !strcmp(m, "isnumeric") || !strcmp(m, "isdecimal"))
				ok = ok && isdigit(c);
			else if (!strcmp(m, "isalpha"))
				ok = ok && (isalpha(c) || c >= 0x80);
			else if (!strcmp(m, "isalnum"))
				ok = ok && (isalnum(c) || c >= 0x80);
			else if (!strcmp(m, "isupper"))
				ok = ok && !islower(c), any_cased = any_cased || isupper(c);
			else if (!strcmp(m, "islower"))
				ok = ok && !isupper(c), any_cased = any_cased || islower(c);
			else
				rerr(r, at, "str.%s is not supported", m);
		}
		if (!strcmp(m, "isupper") || !strcmp(m, "islower"))
			ok = ok && any_cased;
		return v_bool(ok);
	}
	if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
		if (!arg(a, 0, NULL, &x))
			rerr(r, at, "%s() takes exactly one argument", m);
		need_str(r, at, x, "the affix");
		bool suf = m[6] == 's';
		if (starts_or_ends(r, at, s, x, suf))
			return suf ? v_str(r, p, n - x.u.s->n) : v_str(r, p + x.u.s->n, n - x.u.s->n);
		return s;
	}
	if (!strcmp(m, "partition") || !strcmp(m, "rpartition")) {
		if (!arg(a, 0, NULL, &x))
			rerr(r, at, "%s() takes exactly one argument", m);
		need_str(r, at, x, "the separator");
		struct jv sep = x;
		struct jv parts = str_split(r, s, sep, 1, m[0] == 'r');
		if (parts.t == T_UNDEF)
			rerr(r, at, "empty separator");
		struct jv out = v_list(r, 3);
		out.flags = F_TUPLE;
		if (parts.u.l->n == 2) {
			list_push(r, out.u.l, parts.u.l->v[0]);
			list_push(r, out.u.l, sep);
			list_push(r, out.u.l, parts.u.l->v[1]);
		} else if (m[0] == 'r') {
			list_push(r, out.u.l, v_str(r, "", 0));
			list_push(r, out.u.l, v_str(r, "", 0));
			list_push(r, out.u.l, s);
		} else {
			list_push(r, out.u.l, s);
			list_push(r, out.u.l, v_str(r, "", 0));
			list_push(r, out.u.l, v_str(r, "", 0));
		}
		return out;
	}
	rerr(r, at, "str.%s() is not supported", m);
}

static struct jv call_method(struct rctx *r, const struct node *at, struct func *f, const struct args *a)
{
	struct jv self = f->self, x;
	if (f->unsafe)
		rerr(r, at, "access to attribute '%s' of '%s' object is unsafe.", f->name, type_name(self));
	if (self.t == T_STR)
		return str_method(r, at, self, f->name, a);
	if (self.t == T_DICT) {
		struct jdict *d = self.u.d;
		if (!strcmp(f->name, "get")) {
			if (!arg(a, 0, NULL, &x))
				rerr(r, at, "get() takes at least 1 argument");
			struct jv *v = dict_find(d, x);
			return v ? *v : arg_or(a, 1, NULL, v_none());
		}
		if (!strcmp(f->name, "copy")) {
			struct jv out = v_dict(r, T_DICT);
			for (size_t i = 0; i < d->n; i++)
				dict_set(r, out.u.d, d->k[i], d->v[i]);
			return out;
		}
		struct jv out = v_list(r, d->n);
		for (size_t i = 0; i < d->n; i++) {
			if (!strcmp(f->name, "keys")) {
				list_push(r, out.u.l, d->k[i]);
			} else if (!strcmp(f->name, "values")) {
				list_push(r, out.u.l, d->v[i]);
			} else {
				struct jv pair = v_list(r, 2);
				pair.flags = F_TUPLE;
				list_push(r, pair.u.l, d->k[i]);
				list_push(r, pair.u.l, d->v[i]);
				list_push(r, out.u.l, pair);
			}
		}
		return out;
	}
	if (self.t == T_LIST) {
		struct jlist *l = self.u.l;
		if (!strcmp(f->name, "copy")) {
			struct jv out = v_list(r, l->n);
			for (size_t i = 0; i < l->n; i++)
				list_push(r, out.u.l, l->v[i]);
			return out;
		}
		if (!arg(a, 0, NULL, &x))
			rerr(r, at, "%s() takes exactly one argument", f->name);
		int64_t c = 0;
		for (size_t i = 0; i < l->n; i++)
			if (py_eq(l->v[i], x)) {
				if (f->name[0] == 'i')
					return v_int((int64_t)i);
				c++;
			}
		if (f->name[0] == 'i')
			rerr(r, at, "list.index(x): x not in list");
		return v_int(c);
	}
	if (self.t == T_LOOP) {
		struct loopv *L = self.u.loop;
		if (!strcmp(f->name, "cycle")) {
			int k = npos(a);
			if (!k)
				rerr(r, at, "no items for cycling given");
			return a->v[L->i % (size_t)k];
		}
		/* changed(*values) */
		struct jv cur = v_list(r, 0);
		for (int i = 0; i < a->n; i++)
			list_push(r, cur.u.l, a->v[i]);
		bool changed = !L->changed_seen || !py_eq(L->changed_last, cur);
		L->changed_last = cur;
		L->changed_seen = true;
		return v_bool(changed);
	}
	rerr(r, at, "'%s' object is not callable", type_name(self));
}

/* ---- globals ---- */

static struct jv call_global(struct rctx *r, const struct node *at, const char *name, const struct args *a)
{
	struct jv x;
	if (!strcmp(name, "raise_exception")) {
		struct jv msg = to_str(r, arg_or(a, 0, "message", v_str(r, "", 0)));
		rerr(r, at, "raise_exception: %s", msg.u.s->p);
	}
	if (!strcmp(name, "range")) {
		int k = npos(a);
		int64_t lo = 0, hi, st = 1;
		if (k == 1) {
			hi = need_int(r, at, a->v[0], "range's argument");
		} else if (k == 2 || k == 3) {
			lo = need_int(r, at, a->v[0], "range's start");
			hi = need_int(r, at, a->v[1], "range's stop");
			if (k == 3)
				st = need_int(r, at, a->v[2], "range's step");
		} else {
			rerr(r, at, "range expected 1 to 3 integer arguments, got %d", k);
		}
		if (st == 0)
			rerr(r, at, "range() arg 3 must not be zero");
		double count = ceil(((double)hi - (double)lo) / (double)st);
		if (count > MAX_RANGE)
			rerr(r, at, "range too big: the sandbox allows at most %d items", MAX_RANGE);
		struct jv out = v_list(r, count > 0 ? (size_t)count : 0);
		for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st)
			list_push(r, out.u.l, v_int(i));
		return out;
	}
	if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
		struct jv out = v_dict(r, name[0] == 'n' ? T_NS : T_DICT);
		if (arg(a, 0, NULL, &x)) {
			if (x.t != T_DICT && x.t != T_NS)
				rerr(r, at, "%s() takes a mapping as its positional argument", name);
			for (size_t i = 0; i < x.u.d->n; i++)
				dict_set(r, out.u.d, x.u.d->k[i], x.u.d->v[i]);
		}
		for (int i = 0; i < a->n; i++)
			if (a->kw[i])
				dict_set_s(r, out.u.d, a->kw[i], a->v[i]);
		return out;
	}
	if (!strcmp(name, "strftime_now")) {
		if (!arg(a, 0, "format", &x))
			rerr(r, at, "strftime_now() takes a format string");
		need_str(r, at, x, "strftime_now's format");
		time_t t = r->fixed_now ? (time_t)r->now_s : time(NULL);
		struct tm tm;
		if (r->fixed_now)
			gmtime_r(&t, &tm);
		else
			localtime_r(&t, &tm);
		char out[512];
		size_t n = x.u.s->n ? strftime(out, sizeof out, x.u.s->p, &tm) : 0;
		if (x.u.s->n && !n)
			rerr(r, at, "strftime_now: format too long or empty result");
		return v_str(r, out, n);
	}
	rerr(r, at, "'%s' is not callable", name);
}

static bool is_global(const char *n)
{
	return !strcmp(n, "range") || !strcmp(n, "namespace") || !strcmp(n, "dict") || !strcmp(n, "raise_exception") ||
	       !strcmp(n, "strftime_now");
}

static struct jv call_value(struct rctx *r, const struct node *at, struct jv fn, const struct args *a,
			    struct macro *caller)
{
	if (fn.t == T_MACRO)
		return call_macro(r, at, fn.u.m, a, caller);
	if (caller)
		rerr(r, at, "{%% call %%} needs a macro");
	if (fn.t == T_FUNC) {
		if (fn.u.fn->self.t == T_UNDEF)
			return call_global(r, at, fn.u.fn->name, a);
		return call_method(r, at, fn.u.fn, a);
	}
	if (fn.t == T_UNDEF)
		rerr(r, at, "%s", fn.u.hint);
	rerr(r, at, "'%s' object is not callable", type_name(fn));
}

/* ---- filters ---- */

/* jinja2's make_attrgetter: "a.b.0" looked up item-first, integers as indices */
static struct jv attr_path(struct rctx *r, const struct node *at, struct jv v, struct jv path)
{
	if (path.t == T_INT)
		return get_item(r, at, v, path);
	need_str(r, at, path, "attribute");
	const char *p = path.u.s->p;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		struct jv key = v_str(r, p, n);
		bool digits = n > 0;
		for (size_t i = 0; i < n; i++)
			digits = digits && isdigit((unsigned char)p[i]);
		if (digits)
			key = v_int(strtoll(key.u.s->p, NULL, 10));
		v = get_item(r, at, v, key);
		p += n + (dot ? 1 : 0);
		if (!dot)
			break;
	}
	return v;
}

/* sort key: lower-cased strings unless case_sensitive */
static struct jv sort_key(struct rctx *r, struct jv v, bool case_sensitive)
{
	return !case_sensitive && v.t == T_STR ? str_case(r, v, 0) : v;
}

struct sort_ctx {
	struct rctx *r;
	const struct node *at;
	struct jv *keys;
};

/* stable merge sort on indices (Python's sort is stable) */
static void merge_sort(struct sort_ctx *c, size_t *idx, size_t *tmp, size_t n)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	merge_sort(c, idx, tmp, h);
	merge_sort(c, idx + h, tmp, n - h);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = py_cmp(c->r, c->at, c->keys[idx[j]], c->keys[idx[i]], "<") < 0 ? idx[j++] : idx[i++];
	while (i < h)
		tmp[k++] = idx[i++];
	while (j < n)
		tmp[k++] = idx[j++];
	memcpy(idx, tmp, n * sizeof *idx);
}

static struct jv sorted(struct rctx *r, const struct node *at, struct jlist *items, struct jv *keys, bool reverse)
{
	size_t n = items->n;
	size_t *idx = ralloc(r, (n + 1) * sizeof *idx), *tmp = ralloc(r, (n + 1) * sizeof *tmp);
	for (size_t i = 0; i < n; i++)
		idx[i] = reverse ? n - 1 - i : i;
	struct sort_ctx c = {r, at, keys};
	merge_sort(&c, idx, tmp, n);
	struct jv out = v_list(r, n);
	for (size_t i = 0; i < n; i++)
		list_push(r, out.u.l, items->v[idx[reverse ? n - 1 - i : i]]);
	return out;
}

static struct jv select_items(struct rctx *r, const struct node *at, struct jv in, const struct args *a, bool by_attr,
			      bool keep)
{
	struct jv out = v_list(r, 0);
	out.flags = F_GEN;
	if (!truthy(in)) /* jinja2 checks `if value:` before iterating */
		return out;
	struct jlist *items = iterate(r, at, in);
	int first = by_attr ? 1 : 0;
	struct jv attr = {0}, testname;
	if (by_attr && !arg(a, 0, NULL, &attr))
		rerr(r, at, "selectattr/rejectattr need an attribute name");
	bool has_test = arg(a, first, NULL, &testname);
	if (has_test)
		need_str(r, at, testname, "the test name");
	struct args ta = {0};
	for (int i = first + 1; i < a->n; i++) {
		ta.v[ta.n] = a->v[i];
		ta.kw[ta.n++] = a->kw[i];
	}
	for (size_t i = 0; i < items->n; i++) {
		struct jv v = by_attr ? attr_path(r, at, items->v[i], attr) : items->v[i];
		bool ok = has_test ? apply_test(r, at, testname.u.s->p, v, &ta) : truthy(v);
		if (ok == keep)
			list_push(r, out.u.l, items->v[i]);
	}
	return out;
}

static struct jv f_indent(struct rctx *r, const struct node *at, struct jv in, const struct args *a)
{
	struct jv w = arg_or(a, 0, "width", v_int(4));
	bool first = truthy(arg_or(a, 1, "first", v_bool(false))), blank = truthy(arg_or(a, 2, "blank", v_bool(false)));
	struct jv ind;
	if (w.t == T_STR)
		ind = w;
	else
		ind = repeat(r, at, v_str(r, " ", 1), need_int(r, at, w, "indent's width"));
	if (in.t != T_STR)
		rerr(r, at, "unsupported operand type(s) for +=: '%s' and 'str'", type_name(in));
	struct jv s = in;
	struct sb tmp = {0};
	sb_put(r, &tmp, s.u.s->p, s.u.s->n);
	sb_put(r, &tmp, "\n", 1);
	struct jlist *lines = split_lines(r, tmp.p, tmp.n);
	struct sb b = {0};
	sb_put(r, &b, "", 0);
	if (first)
		sb_put(r, &b, ind.u.s->p, ind.u.s->n);
	for (size_t i = 0; i < lines->n; i++) {
		struct jstr *l = lines->v[i].u.s;
		if (i) {
			sb_put(r, &b, "\n", 1);
			if (blank || l->n)
				sb_put(r, &b, ind.u.s->p, ind.u.s->n);
		}
		sb_put(r, &b, l->p, l->n);
	}
	return v_sb(r, &b);
}

static struct jv f_tojson(struct rctx *r, const struct node *at, struct jv in, const struct args *a)
{
	/* Hugging Face's signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
	struct jsonopt o = {.ensure_ascii = truthy(arg_or(a, 0, "ensure_ascii", v_bool(false))),
			    .sort_keys = truthy(arg_or(a, 3, "sort_keys", v_bool(false)))};
	struct jv ind = arg_or(a, 1, "indent", v_none()), sep = arg_or(a, 2, "separators", v_none());
	if (ind.t == T_STR) {
		o.indent = ind.u.s->p;
	} else if (ind.t != T_NONE) {
		struct jv sp = repeat(r, at, v_str(r, " ", 1), need_int(r, at, ind, "tojson's indent"));
		o.indent = sp.u.s->p;
	}
	o.item_sep = o.indent ? "," : ", ";
	o.key_sep = ": ";
	if (sep.t != T_NONE) {
		if (sep.t != T_LIST || sep.u.l->n != 2 || sep.u.l->v[0].t != T_STR || sep.u.l->v[1].t != T_STR)
			rerr(r, at, "tojson's separators must be a pair of strings");
		o.item_sep = sep.u.l->v[0].u.s->p;
		o.key_sep = sep.u.l->v[1].u.s->p;
	}
	struct sb b = {0};
	sb_put(r, &b, "", 0);
	json_dump(r, at, &b, in, &o, 0);
	return v_sb(r, &b);
}

static struct jv f_int(struct rctx *r, const struct node *at, struct jv in, const struct args *a)
{
	struct jv dflt = arg_or(a, 0, "default", v_int(0));
	if (in.t == T_UNDEF) /* int(Undefined) raises */
		rerr(r, at, "%s", in.u.hint);
	if (in.t == T_INT || in.t == T_BOOL)
		return v_int(num_i(in));
	if (in.t == T_FLOAT)
		return isfinite(in.u.f) && fabs(in.u.f) < 9.2e18 ? v_int((int64_t)in.u.f) : dflt;
	if (in.t != T_STR)
		return dflt;
	char buf[128];
	size_t n = 0;
	struct jv t = str_strip(r, in, NULL, true, true);
	for (size_t i = 0; i < t.u.s->n && n < sizeof buf - 1; i++)
		if (t.u.s->p[i] != '_')
			buf[n++] = t.u.s->p[i];
	buf[n] = 0;
	char *e;
	errno = 0;
	long long v = strtoll(buf, &e, (int)need_int(r, NULL, arg_or(a, 1, "base", v_int(10)), "base"));
	if (n && !*e && !errno && !isspace((unsigned char)buf[0]))
		return v_int(v);
	double d = strtod(buf, &e);
	if (n && !*e && isfinite(d) && fabs(d) < 9.2e18)
		return v_int((int64_t)d);
	return dflt;
}

static struct jv apply_filter(struct rctx *r, const struct node *at, const char *f, struct jv in, const struct args *a)
{
	struct jv x;
	if (!strcmp(f, "safe")) {
		struct jv o = to_str(r, in);
		o.flags = F_MARKUP;
		return o;
	}
	if (!strcmp(f, "default") || !strcmp(f, "d")) {
		bool boolean = truthy(arg_or(a, 1, "boolean", v_bool(false)));
		if (in.t == T_UNDEF || (boolean && !truthy(in)))
			return arg_or(a, 0, "default_value", v_str(r, "", 0));
		return in;
	}
	if (!strcmp(f, "length") || !strcmp(f, "count")) {
		switch (in.t) {
		case T_STR: return v_int((int64_t)utf8_len(in.u.s->p, in.u.s->n));
		case T_LIST:
			if (in.flags & F_GEN)
				rerr(r, at, "object of type 'generator' has no len()");
			return v_int((int64_t)in.u.l->n);
		case T_DICT: return v_int((int64_t)in.u.d->n);
		case T_UNDEF: return v_int(0);
		default: rerr(r, at, "object of type '%s' has no len()", type_name(in));
		}
	}
	if (!strcmp(f, "tojson"))
		return f_tojson(r, at, in, a);
	if (!strcmp(f, "string"))
		return to_str(r, in);
	if (!strcmp(f, "trim")) {
		x = arg_or(a, 0, "chars", v_none());
		if (x.t != T_NONE)
			need_str(r, at, x, "trim's chars");
		return str_strip(r, to_str(r, in), x.t == T_STR ? x.u.s : NULL, true, true);
	}
	if (!strcmp(f, "upper") || !strcmp(f, "lower") || !strcmp(f, "title") || !strcmp(f, "capitalize")) {
		int mode = f[0] == 'l' ? 0 : f[0] == 'u' ? 1 : f[0] == 't' ? 4 : 3;
		return str_case(r, to_str(r, in), mode);
	}
	if (!strcmp(f, "replace")) {
		struct jv old, nw;
		if (!arg(a, 0, "old", &old) || !arg(a, 1, "new", &nw))
			rerr(r, at, "replace needs the old and new strings");
		struct jv cnt = arg_or(a, 2, "count", v_none());
		struct jv o = str_replace(r, to_str(r, in), to_str(r, old), to_str(r, nw),
					  cnt.t == T_NONE ? -1 : need_int(r, at, cnt, "count"));
		return o;
	}
	if (!strcmp(f, "join")) {
		struct jv sep = to_str(r, arg_or(a, 0, "d", v_str(r, "", 0)));
		struct jv attr;
		bool has_attr = arg(a, 1, "attribute", &attr);
		struct jlist *l = iterate(r, at, in);
		struct sb b = {0};
		sb_put(r, &b, "", 0);
		for (size_t i = 0; i < l->n; i++) {
			if (i)
				sb_put(r, &b, sep.u.s->p, sep.u.s->n);
			put_str(r, &b, has_attr ? attr_path(r, at, l->v[i], attr) : l->v[i]);
		}
		return v_sb(r, &b);
	}
	if (!strcmp(f, "items")) {
		struct jv out = v_list(r, 0);
		if (in.t != T_UNDEF) {
			if (in.t != T_DICT)
				rerr(r, at, "can only get item pairs from a mapping");
			struct func fn = {.name = "items", .self = in};
			out = call_method(r, at, &fn, a);
		}
		out.flags = F_GEN;
		return out;
	}
	if (!strcmp(f, "list")) {
		struct jlist *l = iterate(r, at, in);
		struct jv out = v_list(r, l->n);
		for (size_t i = 0; i < l->n; i++)
			list_push(r, out.u.l, l->v[i]);
		return out;
	}
	if (!strcmp(f, "first") || !strcmp(f, "last")) {
		struct jlist *l = iterate(r, at, in);
		if (f[0] == 'l' && in.t == T_LIST && (in.flags & F_GEN))
			rerr(r, at, "'generator' object is not reversible");
		if (!l->n)
			return v_undef(r, "No %s item, sequence was empty.", f);
		return l->v[f[0] == 'f' ? 0 : l->n - 1];
	}
	if (!strcmp(f, "reverse")) {
		if (in.t == T_STR) {
			struct jlist *l = iterate(r, at, in);
			struct sb b = {0};
			sb_put(r, &b, "", 0);
			for (size_t i = l->n; i-- > 0;)
				sb_put(r, &b, l->v[i].u.s->p, l->v[i].u.s->n);
			return v_sb(r, &b);
		}
		/* reversed() gives an iterator; a generator has none, so jinja2 makes a list */
		struct jlist *l = iterate(r, at, in);
		struct jv out = v_list(r, l->n);
		for (size_t i = l->n; i-- > 0;)
			list_push(r, out.u.l, l->v[i]);
		out.flags = in.t == T_LIST && (in.flags & F_GEN) ? 0 : F_GEN;
		return out;
	}
	if (!strcmp(f, "selectattr") || !strcmp(f, "rejectattr"))
		return select_items(r, at, in, a, true, f[0] == 's');
	if (!strcmp(f, "select") || !strcmp(f, "reject"))
		return select_items(r, at, in, a, false, f[0] == 's');
	if (!strcmp(f, "map")) {
		struct jv out = v_list(r, 0), attr, fname;
		out.flags = F_GEN;
		if (!truthy(in))
			return out;
		struct jlist *l = iterate(r, at, in);
		if (arg(a, -1, "attribute", &attr)) {
			struct jv dflt;
			bool has_d = arg(a, -1, "default", &dflt);
			for (size_t i = 0; i < l->n; i++) {
				struct jv v = attr_path(r, at, l->v[i], attr);
				list_push(r, out.u.l, v.t == T_UNDEF && has_d ? dflt : v);
			}
			return out;
		}
		if (!arg(a, 0, NULL, &fname))
			rerr(r, at, "map needs a filter name or attribute=");
		need_str(r, at, fname, "the filter name");
		struct args fa = {0};
		for (int i = 1; i < a->n; i++) {
			fa.v[fa.n] = a->v[i];
			fa.kw[fa.n++] = a->kw[i];
		}
		for (size_t i = 0; i < l->n; i++)
			list_push(r, out.u.l, apply_filter(r, at, fname.u.s->p, l->v[i], &fa));
		return out;
	}
	if (!strcmp(f, "dictsort")) {
		if (in.t != T_DICT)
			rerr(r, at, "dictsort needs a mapping, not %s", type_name(in));
		bool cs = truthy(arg_or(a, 0, "case_sensitive", v_bool(false)));
		struct jv by = arg_or(a, 1, "by", v_str(r, "key", 3));
		bool rev = truthy(arg_or(a, 2, "reverse", v_bool(false)));
		bool by_value = by.t == T_STR && !strcmp(by.u.s->p, "value");
		struct func fn = {.name = "items", .self = in};
		struct args none = {0};
		struct jv items = call_method(r, at, &fn, &none);
		struct jv *keys = ralloc(r, (items.u.l->n + 1) * sizeof *keys);
		for (size_t i = 0; i < items.u.l->n; i++)
			keys[i] = sort_key(r, items.u.l->v[i].u.l->v[by_value ? 1 : 0], cs);
		return sorted(r, at, items.u.l, keys, rev);
	}
	if (!strcmp(f, "sort") || !strcmp(f, "unique") || !strcmp(f, "min") || !strcmp(f, "max")) {
		bool is_sort = f[0] == 's';
		struct jlist *l = iterate(r, at, in);
		bool rev = is_sort && truthy(arg_or(a, 0, "reverse", v_bool(false)));
		bool cs = truthy(arg_or(a, is_sort ? 1 : 0, "case_sensitive", v_bool(false)));
		struct jv attr;
		bool has_attr = arg(a, is_sort ? 2 : 1, "attribute", &attr);
		struct jv *keys = ralloc(r, (l->n + 1) * sizeof *keys);
		for (size_t i = 0; i < l->n; i++)
			keys[i] = sort_key(r, has_attr ? attr_path(r, at, l->v[i], attr) : l->v[i], cs);
		if (is_sort)
			return sorted(r, at, l, keys, rev);
		if (f[0] == 'u') {
			struct jv out = v_list(r, 0), seen = v_list(r, 0);
			out.flags = F_GEN;
			for (size_t i = 0; i < l->n; i++) {
				if (contains(r, at, seen, keys[i]))
					continue;
				list_push(r, seen.u.l, keys[i]);
				list_push(r, out.u.l, l->v[i]);
			}
			return out;
		}
		if (!l->n)
			return v_undef(r, "No aggregated item, sequence was empty.");
		size_t best = 0;
		for (size_t i = 1; i < l->n; i++) {
			int c = py_cmp(r, at, keys[i], keys[best], "<");
			if (f[1] == 'i' ? c < 0 : c > 0)
				best = i;
		}
		return l->v[best];
	}
	if (!strcmp(f, "indent"))
		return f_indent(r, at, in, a);
	if (!strcmp(f, "int"))
		return f_int(r, at, in, a);
	if (!strcmp(f, "float")) {
		if (in.t == T_UNDEF)
			rerr(r, at, "%s", in.u.hint);
		if (is_num(in))
			return v_float(num_f(in));
		if (in.t == T_STR) {
			char *e;
			struct jv t = str_strip(r, in, NULL, true, true);
			double d = strtod(t.u.s->p, &e);
			if (t.u.s->n && !*e)
				return v_float(d);
		}
		return arg_or(a, 0, "default", v_float(0.0));
	}
	if (!strcmp(f, "abs")) {
		if (in.t == T_FLOAT)
			return v_float(fabs(in.u.f));
		if (in.t == T_INT || in.t == T_BOOL) {
			if (num_i(in) == INT64_MIN)
				rerr(r, at, "integer overflow");
			return v_int(num_i(in) < 0 ? -num_i(in) : num_i(in));
		}
		rerr(r, at, "bad operand type for abs(): '%s'", type_name(in));
	}
	if (!strcmp(f, "round")) {
		int64_t prec = need_int(r, at, arg_or(a, 0, "precision", v_int(0)), "precision");
		struct jv method = arg_or(a, 1, "method", v_str(r, "common", 6));
		if (!is_num(in))
			rerr(r, at, "round needs a number");
		const char *mm = method.t == T_STR ? method.u.s->p : "common";
		if (!strcmp(mm, "common") && in.t != T_FLOAT)
			return v_int(num_i(in)); /* round() of an int is that int */
		if (!strcmp(mm, "common")) {
			/* Python's round(): correctly rounded, ties to even, as printf does it */
			char tmp[400];
			if (prec < 0 || prec > 300)
				rerr(r, at, "round's precision must be between 0 and 300");
			snprintf(tmp, sizeof tmp, "%.*f", (int)prec, num_f(in));
			return v_float(strtod(tmp, NULL));
		}
		if (strcmp(mm, "ceil") && strcmp(mm, "floor"))
			rerr(r, at, "method must be common, ceil or floor");
		double m = pow(10, (double)prec), v = num_f(in) * m;
		v = mm[0] == 'c' ? ceil(v) : floor(v);
		return v_float(v / m);
	}
	if (!strcmp(f, "sum")) {
		struct jlist *l = iterate(r, at, in);
		struct jv attr, acc = arg_or(a, 1, "start", v_int(0));
		bool has_attr = arg(a, 0, "attribute", &attr);
		for (size_t i = 0; i < l->n; i++)
			acc = binop(r, at, B_ADD, acc, has_attr ? attr_path(r, at, l->v[i], attr) : l->v[i]);
		return acc;
	}
	if (!strcmp(f, "escape") || !strcmp(f, "e"))
		return html_escape(r, in);
	if (!strcmp(f, "attr")) {
		if (!arg(a, 0, "name", &x))
			rerr(r, at, "attr needs a name");
		need_str(r, at, x, "attr's name");
		return get_attr(r, at, in, x.u.s->p);
	}
	if (!strcmp(f, "wordcount")) { /* runs of \w */
		struct jv sv = to_str(r, in);
		int64_t words = 0;
		bool inword = false;
		for (size_t i = 0, k; i < sv.u.s->n; i += k) {
			unsigned char c = (unsigned char)sv.u.s->p[i];
			k = ws_at(sv.u.s->p, sv.u.s->n, i);
			bool w = !k && (isalnum(c) || c == '_' || c >= 0x80);
			k = k ? k : 1;
			words += w && !inword;
			inword = w;
		}
		return v_int(words);
	}
	if (!strcmp(f, "format")) { /* value % args, or % kwargs */
		int np = npos(a);
		if (np && np < a->n)
			rerr(r, at, "format can't handle positional and keyword arguments at the same time");
		struct jv fa = np < a->n ? v_dict(r, T_DICT) : v_list(r, (size_t)np);
		if (np < a->n)
			for (int i = 0; i < a->n; i++)
				dict_set_s(r, fa.u.d, a->kw[i], a->v[i]);
		else
			for (int i = 0; i < np; i++)
				list_push(r, fa.u.l, a->v[i]);
		fa.flags = fa.t == T_LIST ? F_TUPLE : 0;
		return str_mod(r, at, to_str(r, in), fa);
	}
	if (!strcmp(f, "center")) {
		struct jv sv = to_str(r, in);
		int64_t width = need_int(r, at, arg_or(a, 0, "width", v_int(80)), "center's width");
		int64_t len = (int64_t)utf8_len(sv.u.s->p, sv.u.s->n), marg = width - len;
		if (marg <= 0)
			return sv;
		int64_t left = marg / 2 + (marg & width & 1); /* CPython's split of the padding */
		struct jv out = concat_str(r, repeat(r, at, v_str(r, " ", 1), left), sv);
		return concat_str(r, out, repeat(r, at, v_str(r, " ", 1), marg - left));
	}
	if (!strcmp(f, "truncate")) {
		struct jv sv = to_str(r, in);
		int64_t length = need_int(r, at, arg_or(a, 0, "length", v_int(255)), "truncate's length");
		bool killwords = truthy(arg_or(a, 1, "killwords", v_bool(false)));
		struct jv end = to_str(r, arg_or(a, 2, "end", v_str(r, "...", 3)));
		struct jv lw = arg_or(a, 3, "leeway", v_none());
		int64_t leeway = lw.t == T_NONE ? 5 : need_int(r, at, lw, "leeway");
		int64_t len = (int64_t)utf8_len(sv.u.s->p, sv.u.s->n), endlen = (int64_t)utf8_len(end.u.s->p, end.u.s->n);
		if (length < endlen || leeway < 0)
			rerr(r, at, "truncate: expected length >= len(end) and leeway >= 0");
		if (len <= length + leeway)
			return sv;
		size_t cut = utf8_off(sv.u.s->p, sv.u.s->n, (size_t)(length - endlen));
		struct jv head = v_str(r, sv.u.s->p, cut);
		if (!killwords) {
			struct jv parts = str_split(r, head, v_str(r, " ", 1), 1, true);
			head = parts.u.l->v[0];
		}
		return concat_str(r, head, end);
	}
	rerr(r, at, "no filter named '%s'", f);
}

/* ---- tests ---- */

static bool apply_test(struct rctx *r, const struct node *at, const char *t, struct jv in, const struct args *a)
{
	struct jv x;
	if (!strcmp(t, "defined"))
		return in.t != T_UNDEF;
	if (!strcmp(t, "undefined"))
		return in.t == T_UNDEF;
	if (!strcmp(t, "none"))
		return in.t == T_NONE;
	if (!strcmp(t, "string"))
		return in.t == T_STR;
	if (!strcmp(t, "mapping"))
		return in.t == T_DICT;
	if (!strcmp(t, "number"))
		return is_num(in);
	if (!strcmp(t, "integer"))
		return in.t == T_INT;
	if (!strcmp(t, "float"))
		return in.t == T_FLOAT;
	if (!strcmp(t, "boolean"))
		return in.t == T_BOOL;
	if (!strcmp(t, "true"))
		return in.t == T_BOOL && in.u.b;
	if (!strcmp(t, "false"))
		return in.t == T_BOOL && !in.u.b;
	if (!strcmp(t, "iterable"))
		return in.t == T_STR || in.t == T_LIST || in.t == T_DICT || in.t == T_UNDEF;
	if (!strcmp(t, "sequence"))
		return in.t == T_STR || (in.t == T_LIST && !(in.flags & F_GEN)) || in.t == T_DICT || in.t == T_UNDEF;
	if (!strcmp(t, "callable"))
		return in.t == T_MACRO || in.t == T_FUNC;
	if (!strcmp(t, "escaped"))
		return in.t == T_STR && (in.flags & F_MARKUP);
	if (!strcmp(t, "lower") || !strcmp(t, "upper")) { /* str(value).islower() / .isupper() */
		struct func fn = {.name = t[0] == 'l' ? "islower" : "isupper", .self = to_str(r, in)};
		struct args none = {0};
		return call_method(r, at, &fn, &none).u.b;
	}
	if (!strcmp(t, "odd") || !strcmp(t, "even")) /* value % 2 == 1 (or 0), as Python computes it */
		return py_eq(binop(r, at, B_MOD, in, v_int(2)), v_int(t[0] == 'o' ? 1 : 0));
	if (!strcmp(t, "divisibleby")) {
		if (!arg(a, 0, "num", &x))
			rerr(r, at, "divisibleby needs a number");
		int64_t d = need_int(r, at, x, "divisor");
		if (!d)
			rerr(r, at, "integer division or modulo by zero");
		return need_int(r, at, in, "the tested value") % d == 0;
	}
	if (!strcmp(t, "sameas")) {
		if (!arg(a, 0, "other", &x))
			rerr(r, at, "sameas needs a value");
		if (in.t != x.t)
			return false;
		if (in.t == T_NONE || in.t == T_UNDEF)
			return true;
		if (in.t == T_BOOL)
			return in.u.b == x.u.b;
		if (in.t == T_INT)
			return in.u.i == x.u.i && in.u.i >= -5 && in.u.i <= 256; /* CPython's small-int cache */
		return in.u.l == x.u.l;
	}
	static const struct {
		const char *name;
		int op;
	} cmp[] = {{"eq", B_EQ}, {"equalto", B_EQ}, {"==", B_EQ}, {"ne", B_NE}, {"!=", B_NE}, {"lt", B_LT},
		   {"lessthan", B_LT}, {"<", B_LT}, {"le", B_LE}, {"<=", B_LE}, {"gt", B_GT}, {"greaterthan", B_GT},
		   {">", B_GT}, {"ge", B_GE}, {">=", B_GE}, {"in", B_IN}};
	for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
		if (!strcmp(t, cmp[i].name)) {
			if (!arg(a, 0, NULL, &x))
				rerr(r, at, "test '%s' needs an argument", t);
			return binop(r, at, cmp[i].op, in, x).u.b;
		}
	rerr(r, at, "no test named '%s'", t);
}

/* ---- expressions ---- */

static void eval_args(struct rctx *r, struct node *x, struct scope *s, struct args *a)
{
	a->n = (int)x->kids.n;
	for (size_t i = 0; i < x->kids.n; i++) {
		a->v[i] = eval(r, x->kids.v[i], s);
		a->kw[i] = x->kwnames ? x->kwnames[i] : NULL;
	}
}

static struct jv lookup(struct rctx *r, const char *name, struct scope *s)
{
	struct jv *v = scope_find(s, name);
	if (v)
		return *v;
	if (is_global(name))
		return bound(r, (struct jv){.t = T_UNDEF}, name, false);
	return v_undef(r, "'%s' is undefined", name);
}

static struct jv eval(struct rctx *r, struct node *x, struct scope *s)
{
	struct jv a, b, c;
	struct args args;
	step(r, x);
	if (++r->depth > MAX_DEPTH)
		rerr(r, x, "expression nested too deeply");
	struct jv out;
	switch (x->kind) {
	case E_LIT: out = x->lit; break;
	case E_NAME: out = lookup(r, x->name, s); break;
	case E_BODYVAL: out = r->bodyval; break;
	case E_LIST:
	case E_TUPLE:
		out = v_list(r, x->kids.n);
		out.flags = x->kind == E_TUPLE ? F_TUPLE : 0;
		for (size_t i = 0; i < x->kids.n; i++)
			list_push(r, out.u.l, eval(r, x->kids.v[i], s));
		break;
	case E_DICT:
		out = v_dict(r, T_DICT);
		for (size_t i = 0; i + 1 < x->kids.n; i += 2) {
			a = eval(r, x->kids.v[i], s);
			if (a.t == T_LIST && !(a.flags & F_TUPLE))
				rerr(r, x, "unhashable type: 'list'");
			if (a.t == T_DICT || a.t == T_UNDEF)
				rerr(r, x, "unhashable type: '%s'", type_name(a));
			dict_set(r, out.u.d, a, eval(r, x->kids.v[i + 1], s));
		}
		break;
	case E_ATTR: out = get_attr(r, x, eval(r, x->a, s), x->name); break;
	case E_ITEM:
		a = eval(r, x->a, s);
		out = get_item(r, x, a, eval(r, x->b, s));
		break;
	case E_SLICE:
		a = eval(r, x->a, s);
		b = x->b ? eval(r, x->b, s) : v_none();
		c = x->c ? eval(r, x->c, s) : v_none();
		out = slice(r, x, a, b, c, x->kids.v[0] ? eval(r, x->kids.v[0], s) : v_none());
		break;
	case E_CALL:
		a = eval(r, x->a, s);
		eval_args(r, x, s, &args);
		out = call_value(r, x, a, &args, NULL);
		break;
	case E_FILTER:
		a = eval(r, x->a, s);
		eval_args(r, x, s, &args);
		out = apply_filter(r, x, x->name, a, &args);
		break;
	case E_TEST:
		a = eval(r, x->a, s);
		eval_args(r, x, s, &args);
		out = v_bool(apply_test(r, x, x->name, a, &args) != (bool)x->op);
		break;
	case E_NOT: out = v_bool(!truthy(eval(r, x->a, s))); break;
	case E_NEG:
	case E_POS:
		a = eval(r, x->a, s);
		if (a.t == T_UNDEF)
			rerr(r, x, "%s", a.u.hint);
		if (!is_num(a))
			rerr(r, x, "bad operand type for unary %c: '%s'", x->kind == E_NEG ? '-' : '+', type_name(a));
		if (x->kind == E_POS)
			out = a.t == T_BOOL ? v_int(num_i(a)) : a;
		else if (a.t == T_FLOAT)
			out = v_float(-a.u.f);
		else if (num_i(a) == INT64_MIN)
			rerr(r, x, "integer overflow");
		else
			out = v_int(-num_i(a));
		break;
	case E_BIN:
		a = eval(r, x->a, s);
		out = binop(r, x, x->op, a, eval(r, x->b, s));
		break;
	case E_AND:
		a = eval(r, x->a, s);
		out = truthy(a) ? eval(r, x->b, s) : a;
		break;
	case E_OR:
		a = eval(r, x->a, s);
		out = truthy(a) ? a : eval(r, x->b, s);
		break;
	case E_COND:
		if (truthy(eval(r, x->a, s)))
			out = eval(r, x->b, s);
		else
			out = x->c ? eval(r, x->c, s) : v_undef(r, "the inline if-expression on line %d evaluated to false and no else section was defined", x->line);
		break;
	default: rerr(r, x, "internal error: node kind %d is not an expression", x->kind);
	}
	r->depth--;
	return out;
}

/* ---- statements ---- */

static void assign(struct rctx *r, struct node *target, struct jv v, struct scope *s)
{
	if (target->kind == E_NAME) {
		scope_set(r, s, target->name, v);
	} else if (target->kind == E_ATTR) {
		struct jv ns = eval(r, target->a, s);
		if (ns.t != T_NS)
			rerr(r, target, "cannot assign attribute on non-namespace object");
		dict_set_s(r, ns.u.d, target->name, v);
	} else {
		struct jlist *items = iterate(r, target, v);
		if (items->n != target->kids.n)
			rerr(r, target, items->n > target->kids.n ? "too many values to unpack (expected %zu)"
								  : "not enough values to unpack (expected %zu)",
			     target->kids.n);
		for (size_t i = 0; i < items->n; i++)
			assign(r, target->kids.v[i], items->v[i], s);
	}
}

static struct jv render_to_string(struct rctx *r, struct nvec *body, struct scope *s)
{
	struct sb *saved = r->out, b = {0};
	sb_put(r, &b, "", 0);
	r->out = &b;
	exec_body(r, body, s);
	r->out = saved;
	return v_sb(r, &b);
}

static struct jv call_macro(struct rctx *r, const struct node *at, struct macro *m, const struct args *a,
			    struct macro *caller)
{
	if (++r->depth > MAX_DEPTH)
		rerr(r, at, "macro calls nested too deeply (recursion?)");
	struct node *def = m->def;
	struct scope *ms = scope_new(r, m->closure);
	int np = npos(a);
	for (size_t i = 0; i < def->kids.n; i++) {
		const char *pname = def->kwnames[i];
		struct jv v;
		if ((int)i < np)
			v = a->v[i];
		else if (!arg(a, -1, pname, &v))
			v = def->kids.v[i] ? eval(r, def->kids.v[i], ms)
					   : v_undef(r, "parameter '%s' was not provided", pname);
		scope_set(r, ms, pname, v);
	}
	struct jv varargs = v_list(r, 0), kwargs = v_dict(r, T_DICT);
	varargs.flags = F_TUPLE;
	for (int i = (int)def->kids.n; i < np; i++)
		list_push(r, varargs.u.l, a->v[i]);
	for (int i = np; i < a->n; i++) {
		bool known = false;
		for (size_t k = 0; k < def->kids.n; k++)
			known = known || !strcmp(def->kwnames[k], a->kw[i]);
		if (!known)
			dict_set_s(r, kwargs.u.d, a->kw[i], a->v[i]);
	}
	scope_set(r, ms, "varargs", varargs);
	scope_set(r, ms, "kwargs", kwargs);
	if (caller) {
		struct jv cv = {.t = T_MACRO};
		cv.u.m = caller;
		scope_set(r, ms, "caller", cv);
	}
	struct jv out = render_to_string(r, &def->body, ms);
	r->ctl = 0;
	r->depth--;
	return out;
}

static void exec_for(struct rctx *r, struct node *x, struct scope *s)
{
	struct jlist *items = iterate(r, x, eval(r, x->b, s));
	if (x->c) {
		struct jlist *kept = v_list(r, 0).u.l;
		for (size_t i = 0; i < items->n; i++) {
			struct scope *fs = scope_new(r, s);
			assign(r, x->a, items->v[i], fs);
			if (truthy(eval(r, x->c, fs)))
				list_push(r, kept, items->v[i]);
		}
		items = kept;
	}
	struct loopv *L = ralloc(r, sizeof *L);
	L->items = items;
	L->depth = 1;
	struct jv lv = {.t = T_LOOP};
	lv.u.loop = L;
	/* one scope reused for every iteration: each starts empty, as in jinja2 */
	struct scope *it = scope_new(r, s);
	for (size_t i = 0; i < items->n; i++) {
		step(r, x);
		it->n = 0;
		L->i = i;
		assign(r, x->a, items->v[i], it);
		scope_set(r, it, "loop", lv);
		exec_body(r, &x->body, it);
		if (r->ctl == 1) {
			r->ctl = 0;
			break;
		}
		r->ctl = 0;
	}
	if (!items->n)
		exec_body(r, &x->orelse, scope_new(r, s));
}

static void exec_node(struct rctx *r, struct node *x, struct scope *s)
{
	step(r, x);
	switch (x->kind) {
	case N_DATA: sb_put(r, r->out, x->lit.u.s->p, x->lit.u.s->n); break;
	case N_OUTPUT: put_str(r, r->out, eval(r, x->a, s)); break;
	case N_IF:
		if (truthy(eval(r, x->a, s)))
			exec_body(r, &x->body, s);
		else
			exec_body(r, &x->orelse, s);
		break;
	case N_FOR: exec_for(r, x, s); break;
	case N_SET: assign(r, x->a, eval(r, x->b, s), s); break;
	case N_SETBLOCK:
	case N_FILTERBLOCK: {
		struct jv saved = r->bodyval;
		r->bodyval = render_to_string(r, &x->body, x->kind == N_SETBLOCK ? scope_new(r, s) : s);
		struct jv v = eval(r, x->b, s);
		r->bodyval = saved;
		if (x->kind == N_SETBLOCK)
			assign(r, x->a, v, s);
		else
			put_str(r, r->out, v);
		break;
	}
	case N_MACRO: {
		struct jv mv = {.t = T_MACRO};
		mv.u.m = ralloc(r, sizeof *mv.u.m);
		mv.u.m->def = x;
		mv.u.m->closure = s;
		scope_set(r, s, x->name, mv);
		break;
	}
	case N_CALLBLOCK: {
		struct macro *caller = ralloc(r, sizeof *caller);
		caller->def = x->b;
		caller->closure = s;
		struct jv fn = eval(r, x->a->a, s);
		struct args a;
		eval_args(r, x->a, s, &a);
		put_str(r, r->out, call_value(r, x, fn, &a, caller));
		break;
	}
	case N_WITH: {
		struct scope *ws = scope_new(r, s);
		for (size_t i = 0; i < x->kids.n; i++)
			scope_set(r, ws, x->kwnames[i], eval(r, x->kids.v[i], s));
		exec_body(r, &x->body, ws);
		break;
	}
	case N_BREAK: r->ctl = 1; break;
	case N_CONTINUE: r->ctl = 2; break;
	default: rerr(r, x, "internal error: node kind %d is not a statement", x->kind);
	}
}

static void exec_body(struct rctx *r, struct nvec *body, struct scope *s)
{
	for (size_t i = 0; i < body->n && !r->ctl; i++)
		exec_node(r, body->v[i], s);
}

/* ---- public API ---- */

struct jinja_template *jinja_parse(const char *src, size_t n, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!src || !utf8_valid(src, n)) {
		if (err && errlen)
			snprintf(err, errlen, "template is not valid UTF-8 text");
		errno = EINVAL;
		return NULL;
	}
	struct jinja_template *t = calloc(1, sizeof *t);
	struct parser *p = calloc(1, sizeof *p);
	char *norm = malloc(n + 1);
	if (!t || !p || !norm) {
		free(t);
		free(p);
		free(norm);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	/* newlines as jinja2 normalises them; one trailing newline dropped */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (src[i] == '\r') {
			norm[m++] = '\n';
			if (i + 1 < n && src[i + 1] == '\n')
				i++;
		} else {
			norm[m++] = src[i];
		}
	}
	if (m && norm[m - 1] == '\n')
		m--;
	norm[m] = 0;
	arena_init(&t->a, 64 * 1024);
	p->a = &t->a;
	p->src = norm;
	p->n = m;
	p->err = err;
	p->errlen = errlen;
	p->lc_line = 1;
	int jr = setjmp(p->jb);
	if (jr) {
		free(p->toks);
		free(p);
		free(norm);
		jinja_destroy(t);
		errno = jr == 2 ? ENOMEM : EINVAL;
		return NULL;
	}
	lex(p);
	parse_body(p, &t->body, NULL, "", 0, 0);
	free(p->toks);
	free(p);
	free(norm);
	return t;
}

void jinja_destroy(struct jinja_template *t)
{
	if (!t)
		return;
	arena_finish(&t->a);
	free(t);
}

static struct jv from_json(struct rctx *r, const cJSON *j, char *path, size_t plen, int depth)
{
	size_t used = strlen(path);
	if (depth > MAX_DEPTH)
		rerr(r, NULL, "context value %s is nested too deeply", path);
	if (cJSON_IsNull(j))
		return v_none();
	if (cJSON_IsBool(j))
		return v_bool(cJSON_IsTrue(j));
	if (cJSON_IsNumber(j)) {
		double d = j->valuedouble;
		/* JSON numbers without a fraction become int, as Python's json does */
		if (d == floor(d) && fabs(d) < 9007199254740992.0 && !(d == 0 && signbit(d)))
			return v_int((int64_t)d);
		return v_float(d);
	}
	if (cJSON_IsString(j)) {
		size_t n = strlen(j->valuestring);
		if (!utf8_valid(j->valuestring, n))
			rerr(r, NULL, "context value %s is not valid UTF-8 text; convert it to UTF-8 first", path);
		return v_str(r, j->valuestring, n);
	}
	if (cJSON_IsArray(j)) {
		struct jv out = v_list(r, 0);
		int i = 0;
		for (const cJSON *c = j->child; c; c = c->next, i++) {
			snprintf(path + used, plen - used, "[%d]", i);
			list_push(r, out.u.l, from_json(r, c, path, plen, depth + 1));
			path[used] = 0;
		}
		return out;
	}
	if (cJSON_IsObject(j)) {
		struct jv out = v_dict(r, T_DICT);
		for (const cJSON *c = j->child; c; c = c->next) {
			const char *k = c->string ? c->string : "";
			snprintf(path + used, plen - used, "%s%s", used ? "." : "", k);
			if (!utf8_valid(k, strlen(k)))
				rerr(r, NULL, "a key in context value %.*s is not valid UTF-8 text", (int)used, path);
			dict_set(r, out.u.d, v_str(r, k, strlen(k)), from_json(r, c, path, plen, depth + 1));
			path[used] = 0;
		}
		return out;
	}
	rerr(r, NULL, "context value %s has an unsupported JSON type", path);
}

static int render(const struct jinja_template *t, const cJSON *context, bool fixed, int64_t now_s, struct buf *out,
		  char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!t || !out || (context && !cJSON_IsObject(context))) {
		if (err && errlen)
			snprintf(err, errlen, "template render needs a template and a JSON object of variables");
		return -EINVAL;
	}
	struct rctx *r = calloc(1, sizeof *r);
	if (!r) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	arena_init(&r->a, 64 * 1024);
	r->err = err;
	r->errlen = errlen;
	r->fixed_now = fixed;
	r->now_s = now_s;
	int rc = 0;
	int jr = setjmp(r->jb);
	if (jr) {
		rc = jr == 2 ? -ENOMEM : -EINVAL;
		goto done;
	}
	r->root = scope_new(r, NULL);
	struct sb *top = ralloc(r, sizeof *top);
	sb_put(r, top, "", 0);
	r->out = top;
	if (context) {
		char path[512];
		for (const cJSON *c = context->child; c; c = c->next) {
			snprintf(path, sizeof path, "%s", c->string ? c->string : "");
			if (!utf8_valid(path, strlen(path)))
				rerr(r, NULL, "a context variable name is not valid UTF-8 text");
			size_t kn = strlen(path);
			char *name = ralloc(r, kn + 1);
			memcpy(name, path, kn);
			scope_set(r, r->root, name, from_json(r, c, path, sizeof path, 0));
		}
	}
	/* apply_chat_template always passes these */
	if (!scope_find(r->root, "tools"))
		scope_set(r, r->root, "tools", v_none());
	if (!scope_find(r->root, "documents"))
		scope_set(r, r->root, "documents", v_none());
	if (!scope_find(r->root, "add_generation_prompt"))
		scope_set(r, r->root, "add_generation_prompt", v_bool(false));
	exec_body(r, &((struct jinja_template *)t)->body, r->root);
	if (buf_append(out, top->p, top->n) != 0) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
done:
	arena_finish(&r->a);
	free(r);
	return rc;
}

int jinja_render_chat(const struct jinja_template *t, const cJSON *context, struct buf *out, char *err, size_t errlen)
{
	return render(t, context, false, 0, out, err, errlen);
}

int jinja_render_chat_at(const struct jinja_template *t, const cJSON *context, int64_t now_s, struct buf *out,
			 char *err, size_t errlen)
{
	return render(t, context, true, now_s, out, err, errlen);
}

/* ---- loading ---- */

char *jinja_source_from_hf_config(const cJSON *config, size_t *n, char *err, size_t errlen)
{
	const cJSON *ct = cJSON_GetObjectItemCaseSensitive(config, "chat_template");
	const char *src = NULL;
	if (cJSON_IsString(ct)) {
		src = ct->valuestring;
	} else if (cJSON_IsArray(ct)) {
		for (const cJSON *c = ct->child; c; c = c->next) {
			const char *name = json_get_str(c, "name"), *tmpl = json_get_str(c, "template");
			if (name && tmpl && !strcmp(name, "default"))
				src = tmpl;
		}
		if (!src) {
			snprintf(err, errlen, "chat_template lists named templates but none is called \"default\"");
			return NULL;
		}
	} else {
		snprintf(err, errlen, "no chat_template string or list in the tokenizer config");
		return NULL;
	}
	char *out = strdup(src);
	if (!out) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (n)
		*n = strlen(out);
	return out;
}

static const char *special_token(const cJSON *cfg, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
	if (cJSON_IsString(v))
		return v->valuestring;
	return json_get_str(v, "content");
}

char *jinja_source_load(const char *path, size_t *n, cJSON **special, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct buf b;
	buf_init(&b);
	char chunk[65536];
	size_t got;
	int rc = 0;
	while (rc == 0 && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
		rc = buf_append(&b, chunk, got);
	bool bad = ferror(f) || rc != 0;
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s: read failed", path);
		buf_finish(&b);
		return NULL;
	}
	size_t len = b.len;
	char *text = b.len ? buf_steal(&b) : strdup("");
	buf_finish(&b);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	size_t pl = strlen(path);
	if (pl >= 5 && !strcmp(path + pl - 5, ".json")) {
		char jerr[256];
		cJSON *cfg = json_parse_n(text, len, jerr, sizeof jerr);
		free(text);
		if (!cfg) {
			snprintf(err, errlen, "%s: %s", path, jerr);
			return NULL;
		}
		char e2[256];
		char *src = jinja_source_from_hf_config(cfg, n, e2, sizeof e2);
		if (!src) {
			snprintf(err, errlen, "%s: %s", path, e2);
		} else if (special) {
			/* bos_token, eos_token, pad_token, ...: what apply_chat_template passes */
			if (!*special)
				*special = cJSON_CreateObject();
			for (const cJSON *c = cfg->child; c && *special; c = c->next) {
				size_t kl = c->string ? strlen(c->string) : 0;
				const char *tok = kl > 6 && !strcmp(c->string + kl - 6, "_token") ? special_token(cfg, c->string)
												  : NULL;
				if (tok && !cJSON_GetObjectItemCaseSensitive(*special, c->string))
					cJSON_AddStringToObject(*special, c->string, tok);
			}
		}
		cJSON_Delete(cfg);
		return src;
	}
	if (n)
		*n = len;
	return text;
}
