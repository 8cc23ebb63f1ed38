/* jinja_value — values and the render state: allocation in the per-render arena,
 * string builders, scopes, Python semantics (truth, equality, order, type names),
 * str() and repr(), json.dumps, and the str methods' string work on UTF-8
 * (counted in code points). Nothing here walks the tree; errors unwind through
 * jr_err to the render entry point. */
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

/* ---- UTF-8 helpers ---- */

size_t ju_len(const char *s, size_t n) /* code points */
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			c++;
	return c;
}

/* Byte offset of code point k (clamped to n). */
size_t ju_off(const char *s, size_t n, size_t k)
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

bool ju_valid(const char *s, size_t n)
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

int ju_put(char *o, uint32_t cp)
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
size_t ju_ws_at(const char *s, size_t n, size_t i)
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
size_t ju_ws_before(const char *s, size_t i)
{
	if (i >= 1 && (unsigned char)s[i - 1] < 0x80)
		return is_pyspace((unsigned char)s[i - 1]);
	for (size_t k = 2; k <= 3 && k <= i; k++)
		if (ju_ws_at(s, i, i - k) == k)
			return k;
	return 0;
}

/* ---- render state, allocation, strings ---- */

__attribute__((noreturn, format(printf, 3, 4))) void jr_err(struct rctx *r, const struct node *at, const char *fmt, ...)
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

void *jr_alloc(struct rctx *r, size_t n)
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

void jr_put(struct rctx *r, struct sb *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *np = jr_alloc(r, cap);
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

void jr_puts(struct rctx *r, struct sb *b, const char *s)
{
	jr_put(r, b, s, strlen(s));
}

struct jv jv_str(struct rctx *r, const char *s, size_t n)
{
	struct jstr *j = jr_alloc(r, sizeof *j + n + 1);
	if (n)
		memcpy(j->p, s, n);
	j->n = n;
	struct jv v = {.t = T_STR};
	v.u.s = j;
	return v;
}

struct jv jv_sb(struct rctx *r, struct sb *b)
{
	return jv_str(r, b->p ? b->p : "", b->n);
}

struct jv jv_int(int64_t i)
{
	struct jv v = {.t = T_INT};
	v.u.i = i;
	return v;
}

struct jv jv_float(double f)
{
	struct jv v = {.t = T_FLOAT};
	v.u.f = f;
	return v;
}

struct jv jv_bool(bool b)
{
	struct jv v = {.t = T_BOOL};
	v.u.b = b;
	return v;
}

struct jv jv_none(void)
{
	struct jv v = {.t = T_NONE};
	return v;
}

struct jv jv_undef(struct rctx *r, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct jv v = {.t = T_UNDEF};
	size_t n = strlen(msg);
	char *h = jr_alloc(r, n + 1);
	memcpy(h, msg, n);
	v.u.hint = h;
	return v;
}

struct jv jv_list(struct rctx *r, size_t cap)
{
	struct jv v = {.t = T_LIST};
	v.u.l = jr_alloc(r, sizeof *v.u.l);
	if (cap) {
		v.u.l->v = jr_alloc(r, cap * sizeof(struct jv));
		v.u.l->cap = cap;
	}
	return v;
}

void jv_list_push(struct rctx *r, struct jlist *l, struct jv x)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		struct jv *nv = jr_alloc(r, cap * sizeof *nv);
		if (l->n)
			memcpy(nv, l->v, l->n * sizeof *nv);
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = x;
}

struct jv jv_dict(struct rctx *r, int t)
{
	struct jv v = {.t = (unsigned char)t};
	v.u.d = jr_alloc(r, sizeof *v.u.d);
	return v;
}

struct jv *jv_dict_find(struct jdict *d, struct jv k)
{
	for (size_t i = 0; i < d->n; i++)
		if (jv_eq(d->k[i], k))
			return &d->v[i];
	return NULL;
}

struct jv *jv_dict_find_s(struct jdict *d, const char *k)
{
	size_t n = strlen(k);
	for (size_t i = 0; i < d->n; i++)
		if (d->k[i].t == T_STR && d->k[i].u.s->n == n && memcmp(d->k[i].u.s->p, k, n) == 0)
			return &d->v[i];
	return NULL;
}

void jv_dict_set(struct rctx *r, struct jdict *d, struct jv k, struct jv v)
{
	struct jv *slot = jv_dict_find(d, k);
	if (slot) {
		*slot = v;
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 4;
		struct jv *nk = jr_alloc(r, cap * sizeof *nk), *nv = jr_alloc(r, cap * sizeof *nv);
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

void jv_dict_set_s(struct rctx *r, struct jdict *d, const char *k, struct jv v)
{
	jv_dict_set(r, d, jv_str(r, k, strlen(k)), v);
}

/* ---- scopes ---- */

struct scope *jr_scope_new(struct rctx *r, struct scope *parent)
{
	struct scope *s = jr_alloc(r, sizeof *s);
	s->parent = parent;
	return s;
}

struct jv *jr_scope_find(struct scope *s, const char *name)
{
	for (; s; s = s->parent)
		for (size_t i = 0; i < s->n; i++)
			if (!strcmp(s->names[i], name))
				return &s->vals[i];
	return NULL;
}

void jr_scope_set(struct rctx *r, struct scope *s, const char *name, struct jv v)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name)) {
			s->vals[i] = v;
			return;
		}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		const char **nn = jr_alloc(r, cap * sizeof *nn);
		struct jv *nv = jr_alloc(r, cap * sizeof *nv);
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

const char *jv_type_name(struct jv v)
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

bool jv_truthy(struct jv v)
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

bool jv_is_num(struct jv v)
{
	return v.t == T_BOOL || v.t == T_INT || v.t == T_FLOAT;
}

double jv_num_f(struct jv v)
{
	return v.t == T_FLOAT ? v.u.f : v.t == T_INT ? (double)v.u.i : (double)v.u.b;
}

int64_t jv_num_i(struct jv v)
{
	return v.t == T_INT ? v.u.i : (int64_t)v.u.b;
}

bool jv_eq(struct jv a, struct jv b)
{
	if (jv_is_num(a) && jv_is_num(b)) {
		if (a.t == T_FLOAT || b.t == T_FLOAT)
			return jv_num_f(a) == jv_num_f(b);
		return jv_num_i(a) == jv_num_i(b);
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
			if (!jv_eq(a.u.l->v[i], b.u.l->v[i]))
				return false;
		return true;
	case T_DICT:
		if (a.u.d->n != b.u.d->n)
			return false;
		for (size_t i = 0; i < a.u.d->n; i++) {
			struct jv *o = jv_dict_find(b.u.d, a.u.d->k[i]);
			if (!o || !jv_eq(a.u.d->v[i], *o))
				return false;
		}
		return true;
	case T_NS: return a.u.d == b.u.d;
	case T_MACRO: return a.u.m == b.u.m;
	default: return false;
	}
}

/* <0, 0, >0; errors like Python for unorderable types */
int jv_cmp(struct rctx *r, const struct node *at, struct jv a, struct jv b, const char *op)
{
	if (a.t == T_UNDEF)
		jr_err(r, at, "%s", a.u.hint);
	if (b.t == T_UNDEF)
		jr_err(r, at, "%s", b.u.hint);
	if (jv_is_num(a) && jv_is_num(b)) {
		if (a.t == T_FLOAT || b.t == T_FLOAT) {
			double x = jv_num_f(a), y = jv_num_f(b);
			return x < y ? -1 : x > y ? 1 : 0;
		}
		int64_t x = jv_num_i(a), y = jv_num_i(b);
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
			if (jv_eq(a.u.l->v[i], b.u.l->v[i]))
				continue;
			return jv_cmp(r, at, a.u.l->v[i], b.u.l->v[i], op);
		}
		return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n ? 1 : 0;
	}
	jr_err(r, at, "'%s' not supported between instances of '%s' and '%s'", op, jv_type_name(a), jv_type_name(b));
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

void jv_put_str(struct rctx *r, struct sb *b, struct jv v)
{
	char tmp[64];
	switch (v.t) {
	case T_UNDEF: return;
	case T_NONE: jr_puts(r, b, "None"); return;
	case T_BOOL: jr_puts(r, b, v.u.b ? "True" : "False"); return;
	case T_INT:
		snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i);
		jr_puts(r, b, tmp);
		return;
	case T_FLOAT:
		fmt_float(v.u.f, tmp, sizeof tmp);
		jr_puts(r, b, tmp);
		return;
	case T_STR: jr_put(r, b, v.u.s->p, v.u.s->n); return;
	default: jv_put_repr(r, b, v);
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
	jr_put(r, b, &q, 1);
	for (size_t i = 0; i < s->n; i++) {
		unsigned char c = (unsigned char)s->p[i];
		char tmp[12];
		if (c == (unsigned char)q || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			jr_put(r, b, tmp, 2);
		} else if (c == '\n') {
			jr_puts(r, b, "\\n");
		} else if (c == '\r') {
			jr_puts(r, b, "\\r");
		} else if (c == '\t') {
			jr_puts(r, b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof tmp, "\\x%02x", c);
			jr_puts(r, b, tmp);
		} else if (c >= 0x80) {
			size_t k = ju_off(s->p + i, s->n - i, 1);
			uint32_t cp = c & (0x3F >> (k - 1));
			for (size_t j = 1; j < k; j++)
				cp = cp << 6 | ((unsigned char)s->p[i + j] & 0x3F);
			if (py_unprintable(cp)) {
				snprintf(tmp, sizeof tmp, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
				jr_puts(r, b, tmp);
			} else {
				jr_put(r, b, s->p + i, k);
			}
			i += k - 1;
		} else {
			jr_put(r, b, (const char *)&s->p[i], 1);
		}
	}
	jr_put(r, b, &q, 1);
}

static void put_repr_container(struct rctx *r, struct sb *b, struct jv v)
{
	switch (v.t) {
	case T_LIST: {
		if (v.flags & F_GEN)
			jr_err(r, NULL, "printing a generator (the result of select, map, items, unique or reverse) is not "
				      "supported: its text has a memory address; apply |list first");
		bool tup = v.flags & F_TUPLE;
		jr_puts(r, b, tup ? "(" : "[");
		for (size_t i = 0; i < v.u.l->n; i++) {
			if (i)
				jr_puts(r, b, ", ");
			jv_put_repr(r, b, v.u.l->v[i]);
		}
		if (tup && v.u.l->n == 1)
			jr_puts(r, b, ",");
		jr_puts(r, b, tup ? ")" : "]");
		return;
	}
	case T_DICT:
	case T_NS:
		jr_puts(r, b, v.t == T_NS ? "<Namespace {" : "{");
		for (size_t i = 0; i < v.u.d->n; i++) {
			if (i)
				jr_puts(r, b, ", ");
			jv_put_repr(r, b, v.u.d->k[i]);
			jr_puts(r, b, ": ");
			jv_put_repr(r, b, v.u.d->v[i]);
		}
		jr_puts(r, b, v.t == T_NS ? "}>" : "}");
		return;
	default: break;
	}
}

void jv_put_repr(struct rctx *r, struct sb *b, struct jv v)
{
	if (v.t == T_LIST || v.t == T_DICT || v.t == T_NS) {
		/* a namespace can hold itself; Python would print {...} there */
		if (++r->depth > MAX_DEPTH)
			jr_err(r, NULL, "value nested too deeply to print");
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
		jr_puts(r, b, tmp);
		return;
	}
	case T_LOOP: {
		char tmp[64];
		snprintf(tmp, sizeof tmp, "<LoopContext %zu/%zu>", v.u.loop->i + 1, v.u.loop->items->n);
		jr_puts(r, b, tmp);
		return;
	}
	case T_FUNC:
		jr_err(r, NULL, "printing a function or method ('%s') is not supported: Python prints a memory address",
		     v.u.fn->name);
	default: jv_put_str(r, b, v);
	}
}

struct jv jv_to_str(struct rctx *r, struct jv v)
{
	if (v.t == T_STR)
		return v;
	struct sb b = {0};
	jv_put_str(r, &b, v);
	return jv_sb(r, &b);
}

/* ---- json.dumps ---- */

static void json_str(struct rctx *r, struct sb *b, const char *s, size_t n, bool ascii)
{
	jr_puts(r, b, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[16];
		switch (c) {
		case '"': jr_puts(r, b, "\\\""); break;
		case '\\': jr_puts(r, b, "\\\\"); break;
		case '\n': jr_puts(r, b, "\\n"); break;
		case '\r': jr_puts(r, b, "\\r"); break;
		case '\t': jr_puts(r, b, "\\t"); break;
		case '\b': jr_puts(r, b, "\\b"); break;
		case '\f': jr_puts(r, b, "\\f"); break;
		default:
			if (c < 0x20 || (ascii && c == 0x7f)) {
				snprintf(tmp, sizeof tmp, "\\u%04x", c);
				jr_puts(r, b, tmp);
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
				jr_puts(r, b, tmp);
			} else {
				jr_put(r, b, s + i, 1);
			}
		}
	}
	jr_puts(r, b, "\"");
}

static void json_nl(struct rctx *r, struct sb *b, const struct jsonopt *o, int level)
{
	jr_puts(r, b, "\n");
	for (int i = 0; i < level; i++)
		jr_puts(r, b, o->indent);
}

static int key_order(const void *a, const void *b)
{
	const struct jv *x = *(const struct jv *const *)a, *y = *(const struct jv *const *)b;
	size_t n = x->u.s->n < y->u.s->n ? x->u.s->n : y->u.s->n;
	int c = memcmp(x->u.s->p, y->u.s->p, n);
	return c ? c : (x->u.s->n > y->u.s->n) - (x->u.s->n < y->u.s->n);
}

void jv_json_dump(struct rctx *r, const struct node *at, struct sb *b, struct jv v, const struct jsonopt *o, int level)
{
	char tmp[64];
	if (level > MAX_DEPTH)
		jr_err(r, at, "tojson: value nested too deeply");
	switch (v.t) {
	case T_NONE: jr_puts(r, b, "null"); return;
	case T_BOOL: jr_puts(r, b, v.u.b ? "true" : "false"); return;
	case T_INT:
		snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i);
		jr_puts(r, b, tmp);
		return;
	case T_FLOAT:
		if (isnan(v.u.f))
			jr_puts(r, b, "NaN");
		else if (isinf(v.u.f))
			jr_puts(r, b, v.u.f < 0 ? "-Infinity" : "Infinity");
		else {
			fmt_float(v.u.f, tmp, sizeof tmp);
			jr_puts(r, b, tmp);
		}
		return;
	case T_STR: json_str(r, b, v.u.s->p, v.u.s->n, o->ensure_ascii); return;
	case T_LIST:
		if (v.flags & F_GEN)
			jr_err(r, at, "Object of type generator is not JSON serializable");
		if (!v.u.l->n) {
			jr_puts(r, b, "[]");
			return;
		}
		jr_puts(r, b, "[");
		for (size_t i = 0; i < v.u.l->n; i++) {
			if (i)
				jr_puts(r, b, o->item_sep);
			if (o->indent)
				json_nl(r, b, o, level + 1);
			jv_json_dump(r, at, b, v.u.l->v[i], o, level + 1);
		}
		if (o->indent)
			json_nl(r, b, o, level);
		jr_puts(r, b, "]");
		return;
	case T_DICT: {
		struct jdict *d = v.u.d;
		if (!d->n) {
			jr_puts(r, b, "{}");
			return;
		}
		/* keys as json.dumps turns them into strings */
		struct jv **order = jr_alloc(r, d->n * sizeof *order);
		struct jv *keys = jr_alloc(r, d->n * sizeof *keys);
		for (size_t i = 0; i < d->n; i++) {
			struct jv k = d->k[i];
			if (k.t == T_BOOL)
				k = jv_str(r, k.u.b ? "true" : "false", k.u.b ? 4 : 5);
			else if (k.t == T_NONE)
				k = jv_str(r, "null", 4);
			else if (k.t == T_INT || k.t == T_FLOAT)
				k = jv_to_str(r, k);
			else if (k.t != T_STR)
				jr_err(r, at, "tojson: keys must be str, int, float, bool or None, not %s", jv_type_name(k));
			keys[i] = k;
			keys[i].flags = 0;
			order[i] = &keys[i];
		}
		if (o->sort_keys)
			qsort(order, d->n, sizeof *order, key_order);
		jr_puts(r, b, "{");
		for (size_t i = 0; i < d->n; i++) {
			size_t idx = (size_t)(order[i] - keys);
			if (i)
				jr_puts(r, b, o->item_sep);
			if (o->indent)
				json_nl(r, b, o, level + 1);
			json_str(r, b, keys[idx].u.s->p, keys[idx].u.s->n, o->ensure_ascii);
			jr_puts(r, b, o->key_sep);
			jv_json_dump(r, at, b, d->v[idx], o, level + 1);
		}
		if (o->indent)
			json_nl(r, b, o, level);
		jr_puts(r, b, "}");
		return;
	}
	default: jr_err(r, at, "Object of type %s is not JSON serializable", jv_type_name(v));
	}
}

/* HTML escaping as markupsafe does it */
struct jv jv_html_escape(struct rctx *r, struct jv v)
{
	if (v.t == T_STR && (v.flags & F_MARKUP))
		return v;
	struct jv s = jv_to_str(r, v);
	struct sb b = {0};
	jr_put(r, &b, "", 0);
	for (size_t i = 0; i < s.u.s->n; i++) {
		char c = s.u.s->p[i];
		switch (c) {
		case '&': jr_puts(r, &b, "&amp;"); break;
		case '<': jr_puts(r, &b, "&lt;"); break;
		case '>': jr_puts(r, &b, "&gt;"); break;
		case '\'': jr_puts(r, &b, "&#39;"); break;
		case '"': jr_puts(r, &b, "&#34;"); break;
		default: jr_put(r, &b, &c, 1);
		}
	}
	struct jv o = jv_sb(r, &b);
	o.flags = F_MARKUP;
	return o;
}

/* ---- string operations (Python str semantics on UTF-8) ---- */

/* chars == NULL strips whitespace; else any code point of chars */
struct jv jv_str_strip(struct rctx *r, struct jv s, const struct jstr *chars, bool left, bool right)
{
	const char *p = s.u.s->p;
	size_t lo = 0, hi = s.u.s->n;
	if (!chars) {
		size_t k;
		if (left)
			while (lo < hi && (k = ju_ws_at(p, hi, lo)))
				lo += k;
		if (right)
			while (hi > lo && (k = ju_ws_before(p + lo, hi - lo)))
				hi -= k;
	} else {
		if (left)
			while (lo < hi) {
				size_t k = ju_off(p + lo, hi - lo, 1);
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
	struct jv o = jv_str(r, p + lo, hi - lo);
	o.flags = s.flags;
	return o;
}

struct jv jv_str_replace(struct rctx *r, struct jv s, struct jv old, struct jv new_, int64_t count)
{
	struct sb b = {0};
	jr_put(r, &b, "", 0);
	const char *p = s.u.s->p;
	size_t n = s.u.s->n, i = 0;
	int64_t done = 0;
	if (!old.u.s->n) { /* Python inserts between every character */
		while (count < 0 || done < count) {
			jr_put(r, &b, new_.u.s->p, new_.u.s->n);
			done++;
			if (i >= n)
				break;
			size_t k = ju_off(p + i, n - i, 1);
			jr_put(r, &b, p + i, k);
			i += k;
		}
		jr_put(r, &b, p + i, n - i);
		return jv_sb(r, &b);
	}
	while (i <= n && (count < 0 || done < count)) {
		const char *hit = memmem(p + i, n - i, old.u.s->p, old.u.s->n);
		if (!hit)
			break;
		jr_put(r, &b, p + i, (size_t)(hit - (p + i)));
		jr_put(r, &b, new_.u.s->p, new_.u.s->n);
		i = (size_t)(hit - p) + old.u.s->n;
		done++;
	}
	jr_put(r, &b, p + i, n - i);
	return jv_sb(r, &b);
}

struct jv jv_str_split(struct rctx *r, struct jv s, struct jv sep, int64_t maxsplit, bool from_right)
{
	const char *p = s.u.s->p;
	size_t n = s.u.s->n;
	struct jv out = jv_list(r, 0);
	if (sep.t != T_STR) {
		/* whitespace runs, no empty strings; past maxsplit the rest of the
		 * string stays whole, its outer whitespace kept, as CPython does */
		size_t *st = jr_alloc(r, (n / 2 + 2) * sizeof *st), *en = jr_alloc(r, (n / 2 + 2) * sizeof *en);
		size_t nw = 0, i = 0, k;
		while (i < n) {
			while (i < n && (k = ju_ws_at(p, n, i)))
				i += k;
			if (i >= n)
				break;
			st[nw] = i;
			while (i < n && !ju_ws_at(p, n, i))
				i++;
			en[nw++] = i;
		}
		size_t keep = maxsplit < 0 || (uint64_t)maxsplit + 1 >= nw ? nw : (size_t)maxsplit;
		if (keep == nw) {
			for (size_t w = 0; w < nw; w++)
				jv_list_push(r, out.u.l, jv_str(r, p + st[w], en[w] - st[w]));
		} else if (!from_right) {
			for (size_t w = 0; w < keep; w++)
				jv_list_push(r, out.u.l, jv_str(r, p + st[w], en[w] - st[w]));
			jv_list_push(r, out.u.l, jv_str(r, p + st[keep], n - st[keep]));
		} else {
			jv_list_push(r, out.u.l, jv_str(r, p, en[nw - keep - 1]));
			for (size_t w = nw - keep; w < nw; w++)
				jv_list_push(r, out.u.l, jv_str(r, p + st[w], en[w] - st[w]));
		}
		return out;
	}
	const char *sp = sep.u.s->p;
	size_t sn = sep.u.s->n;
	if (!sn)
		return jv_undef(r, "empty separator");
	if (!from_right) {
		size_t i = 0;
		int64_t k = 0;
		for (;;) {
			const char *hit = (maxsplit < 0 || k < maxsplit) ? memmem(p + i, n - i, sp, sn) : NULL;
			if (!hit) {
				jv_list_push(r, out.u.l, jv_str(r, p + i, n - i));
				return out;
			}
			jv_list_push(r, out.u.l, jv_str(r, p + i, (size_t)(hit - (p + i))));
			i = (size_t)(hit - p) + sn;
			k++;
		}
	}
	struct jlist *rev = jv_list(r, 0).u.l;
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
		jv_list_push(r, rev, jv_str(r, p + found + sn, e - found - sn));
		e = found;
		k++;
	}
	jv_list_push(r, out.u.l, jv_str(r, p, e));
	for (size_t q = rev->n; q-- > 0;)
		jv_list_push(r, out.u.l, rev->v[q]);
	return out;
}

/* 0 lower, 1 upper, 2 str.title, 3 capitalize, 4 the title filter */
struct jv jv_str_case(struct rctx *r, struct jv s, int mode)
{
	struct jv o = jv_str(r, s.u.s->p, s.u.s->n);
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
struct jv jv_str_format(struct rctx *r, const struct node *at, struct jv fmt, const struct args *a)
{
	struct sb b = {0};
	jr_put(r, &b, "", 0);
	const char *p = fmt.u.s->p;
	size_t n = fmt.u.s->n;
	int auto_idx = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') {
			jr_put(r, &b, "{", 1);
			i++;
		} else if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') {
			jr_put(r, &b, "}", 1);
			i++;
		} else if (p[i] == '{') {
			size_t j = i + 1;
			while (j < n && p[j] != '}')
				j++;
			if (j >= n)
				jr_err(r, at, "str.format: single '{' encountered in format string");
			char field[64];
			size_t fl = j - i - 1;
			if (fl >= sizeof field || memchr(p + i + 1, ':', fl) || memchr(p + i + 1, '!', fl) ||
			    memchr(p + i + 1, '.', fl) || memchr(p + i + 1, '[', fl))
				jr_err(r, at, "str.format: only {}, {N} and {name} fields are supported");
			memcpy(field, p + i + 1, fl);
			field[fl] = 0;
			struct jv v;
			bool ok;
			if (!fl)
				ok = je_arg(a, auto_idx++, NULL, &v);
			else if (isdigit((unsigned char)field[0]))
				ok = je_arg(a, atoi(field), NULL, &v);
			else
				ok = je_arg(a, -1, field, &v);
			if (!ok)
				jr_err(r, at, "str.format: no argument for field {%s}", field);
			jv_put_str(r, &b, v);
			i = j;
		} else if (p[i] == '}') {
			jr_err(r, at, "str.format: single '}' encountered in format string");
		} else {
			jr_put(r, &b, p + i, 1);
		}
	}
	return jv_sb(r, &b);
}

/* Python str.splitlines for the separators templates meet */
struct jlist *jv_split_lines(struct rctx *r, const char *p, size_t n)
{
	struct jlist *l = jv_list(r, 0).u.l;
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
			jv_list_push(r, l, jv_str(r, p + st, i - st));
			i += k;
			st = i;
		} else {
			i++;
		}
	}
	if (st < n)
		jv_list_push(r, l, jv_str(r, p + st, n - st));
	return l;
}
