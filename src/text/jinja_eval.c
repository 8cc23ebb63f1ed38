/* jinja_eval — the tree-walking evaluator: arguments, attribute and item access,
 * arithmetic, the methods of str, dict, list and loop, globals, expressions and
 * statements. Every node evaluated counts one step (MAX_STEPS); filters and tests
 * are in jinja_filters.c. Errors unwind through jr_err. */
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

/* ---- evaluation ---- */

static struct jv eval(struct rctx *r, struct node *x, struct scope *s);

static void step(struct rctx *r, const struct node *at)
{
	if (++r->steps > MAX_STEPS)
		jr_err(r, at, "the template takes more than %d steps; it is refused as a likely runaway", MAX_STEPS);
}

int je_npos(const struct args *a)
{
	int k = 0;
	while (k < a->n && !a->kw[k])
		k++;
	return k;
}

/* Argument by position or keyword; false when absent. */
bool je_arg(const struct args *a, int pos, const char *name, struct jv *out)
{
	if (pos >= 0 && pos < je_npos(a)) {
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

struct jv je_arg_or(const struct args *a, int pos, const char *name, struct jv dflt)
{
	struct jv v;
	return je_arg(a, pos, name, &v) ? v : dflt;
}

void je_need_str(struct rctx *r, const struct node *at, struct jv v, const char *what)
{
	if (v.t != T_STR)
		jr_err(r, at, "%s must be a string, not %s", what, jv_type_name(v));
}

int64_t je_need_int(struct rctx *r, const struct node *at, struct jv v, const char *what)
{
	if (v.t != T_INT && v.t != T_BOOL)
		jr_err(r, at, "%s must be an integer, not %s", what, jv_type_name(v));
	return jv_num_i(v);
}

/* Items of an iterable as Python's iter() yields them. */
struct jlist *je_iterate(struct rctx *r, const struct node *at, struct jv v)
{
	struct jv l;
	switch (v.t) {
	case T_UNDEF: return jv_list(r, 0).u.l;
	case T_LIST: return v.u.l;
	case T_DICT:
		l = jv_list(r, v.u.d->n);
		for (size_t i = 0; i < v.u.d->n; i++)
			jv_list_push(r, l.u.l, v.u.d->k[i]);
		return l.u.l;
	case T_STR: {
		const char *p = v.u.s->p;
		size_t n = v.u.s->n;
		l = jv_list(r, n);
		for (size_t i = 0; i < n;) {
			size_t j = ju_off(p + i, n - i, 1);
			jv_list_push(r, l.u.l, jv_str(r, p + i, j));
			i += j;
		}
		return l.u.l;
	}
	default: jr_err(r, at, "'%s' object is not iterable", jv_type_name(v));
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
	v.u.fn = jr_alloc(r, sizeof *v.u.fn);
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
		return jv_int(i + 1);
	if (!strcmp(name, "index0"))
		return jv_int(i);
	if (!strcmp(name, "revindex"))
		return jv_int(n - i);
	if (!strcmp(name, "revindex0"))
		return jv_int(n - i - 1);
	if (!strcmp(name, "first"))
		return jv_bool(i == 0);
	if (!strcmp(name, "last"))
		return jv_bool(i == n - 1);
	if (!strcmp(name, "length"))
		return jv_int(n);
	if (!strcmp(name, "depth"))
		return jv_int(L->depth);
	if (!strcmp(name, "depth0"))
		return jv_int(L->depth - 1);
	if (!strcmp(name, "previtem"))
		return i > 0 ? L->items->v[i - 1] : jv_undef(r, "there is no previous item");
	if (!strcmp(name, "nextitem"))
		return i + 1 < n ? L->items->v[i + 1] : jv_undef(r, "there is no next item");
	if (!strcmp(name, "cycle") || !strcmp(name, "changed"))
		return bound(r, lv, name, false);
	return jv_undef(r, "'LoopContext object' has no attribute '%s'", name);
}

struct jv je_get_attr(struct rctx *r, const struct node *at, struct jv obj, const char *name)
{
	int k;
	switch (obj.t) {
	case T_UNDEF: jr_err(r, at, "%s", obj.u.hint);
	case T_DICT:
		if ((k = dict_method(name)))
			return bound(r, obj, name, k == 2);
		{
			struct jv *v = jv_dict_find_s(obj.u.d, name);
			return v ? *v : jv_undef(r, "'dict object' has no attribute '%s'", name);
		}
	case T_NS: {
		struct jv *v = jv_dict_find_s(obj.u.d, name);
		return v ? *v : jv_undef(r, "'Namespace object' has no attribute '%s'", name);
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
	case T_NONE: return jv_undef(r, "'None' has no attribute '%s'", name);
	default: break;
	}
	return jv_undef(r, "'%s object' has no attribute '%s'", jv_type_name(obj), name);
}

struct jv je_get_item(struct rctx *r, const struct node *at, struct jv obj, struct jv key)
{
	if (obj.t == T_UNDEF)
		jr_err(r, at, "%s", obj.u.hint);
	if (obj.t == T_LIST && (obj.flags & F_GEN))
		return jv_undef(r, "'generator object' has no such item");
	if ((obj.t == T_LIST || obj.t == T_STR) && (key.t == T_INT || key.t == T_BOOL)) {
		int64_t i = jv_num_i(key);
		if (obj.t == T_LIST) {
			int64_t n = (int64_t)obj.u.l->n;
			if (i < 0)
				i += n;
			if (i < 0 || i >= n)
				return jv_undef(r, "list object has no element %" PRId64, jv_num_i(key));
			return obj.u.l->v[i];
		}
		int64_t n = (int64_t)ju_len(obj.u.s->p, obj.u.s->n);
		if (i < 0)
			i += n;
		if (i < 0 || i >= n)
			return jv_undef(r, "str object has no element %" PRId64, jv_num_i(key));
		size_t o = ju_off(obj.u.s->p, obj.u.s->n, (size_t)i);
		return jv_str(r, obj.u.s->p + o, ju_off(obj.u.s->p + o, obj.u.s->n - o, 1));
	}
	if (obj.t == T_DICT) {
		struct jv *v = jv_dict_find(obj.u.d, key);
		if (v)
			return *v;
		if (key.t == T_STR && dict_method(key.u.s->p))
			return je_get_attr(r, at, obj, key.u.s->p);
		if (key.t == T_STR)
			return jv_undef(r, "'dict object' has no attribute '%s'", key.u.s->p);
		return jv_undef(r, "'dict object' has no such key");
	}
	if (key.t == T_STR && (obj.t == T_NS || obj.t == T_LOOP || obj.t == T_STR || obj.t == T_LIST))
		return je_get_attr(r, at, obj, key.u.s->p);
	return jv_undef(r, "'%s object' has no such item", jv_type_name(obj));
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
		jr_err(r, at, "%s", obj.u.hint);
	int64_t stp = c.t == T_NONE || c.t == T_UNDEF ? 1 : je_need_int(r, at, c, "slice step");
	if (stp == 0)
		jr_err(r, at, "slice step cannot be zero");
	struct jlist *items;
	/* jinja2 compiles slices to a plain Python subscript: no undefined fallback */
	if (obj.t == T_DICT)
		jr_err(r, at, "unhashable type: 'slice'");
	if (obj.t == T_LIST && !(obj.flags & F_GEN))
		items = obj.u.l;
	else if (obj.t == T_STR)
		items = je_iterate(r, at, obj);
	else
		jr_err(r, at, "'%s' object is not subscriptable", jv_type_name(obj));
	int64_t n = (int64_t)items->n, lo, hi;
	if (stp > 0) {
		lo = a.t == T_NONE || a.t == T_UNDEF ? 0 : clamp_idx(je_need_int(r, at, a, "slice start"), n, false);
		hi = b.t == T_NONE || b.t == T_UNDEF ? n : clamp_idx(je_need_int(r, at, b, "slice stop"), n, false);
	} else {
		lo = a.t == T_NONE || a.t == T_UNDEF ? n - 1 : clamp_idx(je_need_int(r, at, a, "slice start"), n, true);
		hi = b.t == T_NONE || b.t == T_UNDEF ? -1 : clamp_idx(je_need_int(r, at, b, "slice stop"), n, true);
	}
	struct jv out = jv_list(r, 0);
	out.flags = obj.flags & F_TUPLE;
	for (int64_t i = lo; stp > 0 ? i < hi : i > hi; i += stp)
		jv_list_push(r, out.u.l, items->v[i]);
	if (obj.t == T_STR) {
		struct sb sbuf = {0};
		jr_put(r, &sbuf, "", 0);
		for (size_t i = 0; i < out.u.l->n; i++)
			jr_put(r, &sbuf, out.u.l->v[i].u.s->p, out.u.l->v[i].u.s->n);
		return jv_sb(r, &sbuf);
	}
	return out;
}

/* ---- arithmetic ---- */

struct jv je_concat(struct rctx *r, struct jv a, struct jv b)
{
	/* Markup + str escapes the str, and str + Markup too (markupsafe) */
	bool mk = (a.flags | b.flags) & F_MARKUP;
	if (mk) {
		a = jv_html_escape(r, a);
		b = jv_html_escape(r, b);
	}
	struct jv v = jv_str(r, NULL, 0);
	struct jstr *j = jr_alloc(r, sizeof *j + a.u.s->n + b.u.s->n + 1);
	memcpy(j->p, a.u.s->p, a.u.s->n);
	memcpy(j->p + a.u.s->n, b.u.s->p, b.u.s->n);
	j->n = a.u.s->n + b.u.s->n;
	v.u.s = j;
	v.flags = mk ? F_MARKUP : 0;
	return v;
}

struct jv je_repeat(struct rctx *r, const struct node *at, struct jv seq, int64_t times)
{
	if (times < 0)
		times = 0;
	if (seq.t == T_STR) {
		if (seq.u.s->n && (uint64_t)times > MAX_RENDER_BYTES / seq.u.s->n)
			jr_err(r, at, "string repetition too large");
		struct sb b = {0};
		jr_put(r, &b, "", 0);
		for (int64_t i = 0; i < times; i++)
			jr_put(r, &b, seq.u.s->p, seq.u.s->n);
		return jv_sb(r, &b);
	}
	if (seq.u.l->n && (uint64_t)times > MAX_RANGE / seq.u.l->n)
		jr_err(r, at, "list repetition too large");
	struct jv out = jv_list(r, 0);
	out.flags = seq.flags;
	for (int64_t i = 0; i < times; i++)
		for (size_t k = 0; k < seq.u.l->n; k++)
			jv_list_push(r, out.u.l, seq.u.l->v[k]);
	return out;
}

__attribute__((noreturn)) static void bad_operands(struct rctx *r, const struct node *at, const char *sym, struct jv a,
						    struct jv b)
{
	if (a.t == T_UNDEF)
		jr_err(r, at, "%s", a.u.hint);
	if (b.t == T_UNDEF)
		jr_err(r, at, "%s", b.u.hint);
	if (a.t == T_STR && !strcmp(sym, "+"))
		jr_err(r, at, "can only concatenate str (not \"%s\") to str", jv_type_name(b));
	jr_err(r, at, "unsupported operand type(s) for %s: '%s' and '%s'", sym, jv_type_name(a), jv_type_name(b));
}

static struct jv arith(struct rctx *r, const struct node *at, int op, struct jv a, struct jv b)
{
	static const char *const sym[] = {"+", "-", "*", "/", "//", "%", "**"};
	if (!jv_is_num(a) || !jv_is_num(b))
		bad_operands(r, at, sym[op], a, b);
	if (op == B_DIV) {
		if (jv_num_f(b) == 0)
			jr_err(r, at, "division by zero");
		return jv_float(jv_num_f(a) / jv_num_f(b));
	}
	if (a.t == T_FLOAT || b.t == T_FLOAT || (op == B_POW && jv_num_i(b) < 0)) {
		double x = jv_num_f(a), y = jv_num_f(b);
		switch (op) {
		case B_ADD: return jv_float(x + y);
		case B_SUB: return jv_float(x - y);
		case B_MUL: return jv_float(x * y);
		case B_FDIV:
			if (y == 0)
				jr_err(r, at, "float floor division by zero");
			return jv_float(floor(x / y));
		case B_MOD: {
			if (y == 0)
				jr_err(r, at, "float modulo");
			double m = fmod(x, y);
			if (m != 0 && ((m < 0) != (y < 0)))
				m += y;
			return jv_float(m);
		}
		default:
			if (x == 0 && y < 0)
				jr_err(r, at, "0.0 cannot be raised to a negative power");
			return jv_float(pow(x, y));
		}
	}
	int64_t x = jv_num_i(a), y = jv_num_i(b), z;
	switch (op) {
	case B_ADD:
		if (__builtin_add_overflow(x, y, &z))
			goto overflow;
		return jv_int(z);
	case B_SUB:
		if (__builtin_sub_overflow(x, y, &z))
			goto overflow;
		return jv_int(z);
	case B_MUL:
		if (__builtin_mul_overflow(x, y, &z))
			goto overflow;
		return jv_int(z);
	case B_FDIV:
	case B_MOD: {
		if (y == 0)
			jr_err(r, at, "integer division or modulo by zero");
		if (x == INT64_MIN && y == -1)
			goto overflow;
		int64_t q = x / y, m = x % y;
		if (m != 0 && ((m < 0) != (y < 0))) {
			q--;
			m += y;
		}
		return jv_int(op == B_FDIV ? q : m);
	}
	default:
		z = 1;
		for (int64_t i = 0; i < y; i++) {
			if (__builtin_mul_overflow(z, x, &z))
				goto overflow;
			if (z == 0 || z == 1)
				break;
		}
		return jv_int(z);
	}
overflow:
	jr_err(r, at, "integer overflow (values are limited to 64 bits)");
}

static struct jv str_contains(struct rctx *r, const struct node *at, struct jv hay, struct jv needle)
{
	if (needle.t != T_STR)
		jr_err(r, at, "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
	if (!needle.u.s->n)
		return jv_bool(true);
	return jv_bool(memmem(hay.u.s->p, hay.u.s->n, needle.u.s->p, needle.u.s->n) != NULL);
}

bool je_contains(struct rctx *r, const struct node *at, struct jv container, struct jv x)
{
	switch (container.t) {
	case T_STR: return str_contains(r, at, container, x).u.b;
	case T_LIST:
		for (size_t i = 0; i < container.u.l->n; i++)
			if (jv_eq(container.u.l->v[i], x))
				return true;
		return false;
	case T_DICT:
		if ((x.t == T_LIST && !(x.flags & F_TUPLE)) || x.t == T_DICT || x.t == T_NS)
			jr_err(r, at, "unhashable type: '%s'", jv_type_name(x));
		return jv_dict_find(container.u.d, x) != NULL;
	case T_UNDEF: return false;
	default: jr_err(r, at, "argument of type '%s' is not iterable", jv_type_name(container));
	}
}

/* printf-style str % args: %s %r %d %i %f %x %%, flags, width, precision, %(name)s */
struct jv je_str_mod(struct rctx *r, const struct node *at, struct jv fmt, struct jv arg)
{
	struct sb b = {0};
	jr_put(r, &b, "", 0);
	const char *p = fmt.u.s->p;
	size_t n = fmt.u.s->n, used = 0;
	bool tuple = arg.t == T_LIST && (arg.flags & F_TUPLE);
	bool mapping = arg.t == T_DICT || (arg.t == T_LIST && !tuple); /* Python: anything with __getitem__ */
	size_t nargs = tuple ? arg.u.l->n : 1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '%') {
			jr_put(r, &b, p + i, 1);
			continue;
		}
		if (++i >= n)
			jr_err(r, at, "incomplete format");
		struct jv v;
		if (p[i] == '(') {
			size_t j = i + 1;
			while (j < n && p[j] != ')')
				j++;
			if (arg.t != T_DICT || j >= n)
				jr_err(r, at, "format requires a mapping");
			struct jv *f = jv_dict_find(arg.u.d, jv_str(r, p + i + 1, j - i - 1));
			if (!f)
				jr_err(r, at, "KeyError in %% formatting");
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
			jr_err(r, at, "incomplete format");
		char conv = p[i];
		if (conv == '%') {
			jr_put(r, &b, "%", 1);
			continue;
		}
		if (v.t == T_UNDEF && p[i - 1] != ')') {
			if (mapping) {
				v = arg;
			} else {
				if (used >= nargs)
					jr_err(r, at, "not enough arguments for format string");
				v = tuple ? arg.u.l->v[used] : arg;
				used++;
			}
		}
		char tmp[512];
		if (conv == 's' || conv == 'r') {
			struct sb vs = {0};
			jr_put(r, &vs, "", 0);
			if (conv == 's')
				jv_put_str(r, &vs, v);
			else
				jv_put_repr(r, &vs, v);
			spec[sl++] = 's';
			spec[sl] = 0;
			if (sl == 2) {
				jr_put(r, &b, vs.p, vs.n);
				continue;
			}
			snprintf(tmp, sizeof tmp, spec, vs.p);
		} else if (strchr("dixXo", conv)) {
			if (!jv_is_num(v))
				jr_err(r, at, "%%%c format: a real number is required, not %s", conv, jv_type_name(v));
			int64_t iv = v.t == T_FLOAT ? (int64_t)v.u.f : jv_num_i(v);
			memcpy(spec + sl, conv == 'i' ? "lld" : conv == 'd' ? "lld" : conv == 'x' ? "llx" : conv == 'X' ? "llX" : "llo", 4);
			snprintf(tmp, sizeof tmp, spec, (long long)iv);
		} else if (strchr("feEgG", conv)) {
			if (!jv_is_num(v))
				jr_err(r, at, "%%%c format: a real number is required, not %s", conv, jv_type_name(v));
			spec[sl++] = conv;
			spec[sl] = 0;
			snprintf(tmp, sizeof tmp, spec, jv_num_f(v));
		} else {
			jr_err(r, at, "unsupported format character '%c'", conv);
		}
		jr_puts(r, &b, tmp);
	}
	if (!mapping && used < nargs && !(tuple && nargs == 0 && used == 0))
		jr_err(r, at, "not all arguments converted during string formatting");
	return jv_sb(r, &b);
}

struct jv je_binop(struct rctx *r, const struct node *at, int op, struct jv a, struct jv b)
{
	switch (op) {
	case B_ADD:
		if (a.t == T_STR && b.t == T_STR)
			return je_concat(r, a, b);
		if (a.t == T_LIST && b.t == T_LIST && !((a.flags | b.flags) & F_GEN)) {
			if ((a.flags & F_TUPLE) != (b.flags & F_TUPLE))
				jr_err(r, at, "can only concatenate %s (not \"%s\") to %s", jv_type_name(a), jv_type_name(b), jv_type_name(a));
			struct jv out = jv_list(r, a.u.l->n + b.u.l->n);
			out.flags = a.flags;
			for (size_t i = 0; i < a.u.l->n; i++)
				jv_list_push(r, out.u.l, a.u.l->v[i]);
			for (size_t i = 0; i < b.u.l->n; i++)
				jv_list_push(r, out.u.l, b.u.l->v[i]);
			return out;
		}
		return arith(r, at, op, a, b);
	case B_MUL:
		if ((a.t == T_STR || a.t == T_LIST) && (b.t == T_INT || b.t == T_BOOL))
			return je_repeat(r, at, a, jv_num_i(b));
		if ((b.t == T_STR || b.t == T_LIST) && (a.t == T_INT || a.t == T_BOOL))
			return je_repeat(r, at, b, jv_num_i(a));
		return arith(r, at, op, a, b);
	case B_SUB:
	case B_DIV:
	case B_FDIV:
	case B_POW: return arith(r, at, op, a, b);
	case B_MOD:
		if (a.t == T_STR)
			return je_str_mod(r, at, a, b);
		return arith(r, at, op, a, b);
	case B_CAT: {
		struct jv x = jv_to_str(r, a), y = jv_to_str(r, b);
		x.flags = y.flags = 0;
		return je_concat(r, x, y);
	}
	case B_EQ: return jv_bool(jv_eq(a, b));
	case B_NE: return jv_bool(!jv_eq(a, b));
	case B_LT: return jv_bool(jv_cmp(r, at, a, b, "<") < 0);
	case B_LE: return jv_bool(jv_cmp(r, at, a, b, "<=") <= 0);
	case B_GT: return jv_bool(jv_cmp(r, at, a, b, ">") > 0);
	case B_GE: return jv_bool(jv_cmp(r, at, a, b, ">=") >= 0);
	case B_IN: return jv_bool(je_contains(r, at, b, a));
	default: return jv_bool(!je_contains(r, at, b, a));
	}
}

/* ---- methods of str, dict, list and loop ---- */

static struct jv call_macro(struct rctx *r, const struct node *at, struct macro *m, const struct args *a,
			    struct macro *caller);

static bool starts_or_ends(struct rctx *r, const struct node *at, struct jv s, struct jv x, bool end)
{
	if (x.t == T_LIST && (x.flags & F_TUPLE)) {
		for (size_t i = 0; i < x.u.l->n; i++)
			if (starts_or_ends(r, at, s, x.u.l->v[i], end))
				return true;
		return false;
	}
	je_need_str(r, at, x, end ? "endswith's argument" : "startswith's argument");
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
		if (!je_arg(a, 0, NULL, &x))
			jr_err(r, at, "%s() takes at least 1 argument", m);
		return jv_bool(starts_or_ends(r, at, s, x, m[0] == 'e'));
	}
	if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
		x = je_arg_or(a, 0, NULL, jv_none());
		if (x.t != T_NONE)
			je_need_str(r, at, x, "strip's argument");
		return jv_str_strip(r, s, x.t == T_STR ? x.u.s : NULL, m[0] != 'r', m[0] != 'l');
	}
	if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
		x = je_arg_or(a, 0, "sep", jv_none());
		if (x.t != T_NONE)
			je_need_str(r, at, x, "split's separator");
		int64_t ms = je_need_int(r, at, je_arg_or(a, 1, "maxsplit", jv_int(-1)), "maxsplit");
		struct jv out = jv_str_split(r, s, x, ms, m[0] == 'r');
		if (out.t == T_UNDEF)
			jr_err(r, at, "empty separator");
		return out;
	}
	if (!strcmp(m, "splitlines")) {
		struct jv out = jv_list(r, 0);
		out.u.l = jv_split_lines(r, p, n);
		return out;
	}
	if (!strcmp(m, "replace")) {
		if (!je_arg(a, 0, NULL, &x) || !je_arg(a, 1, NULL, &y))
			jr_err(r, at, "replace() takes 2 arguments");
		je_need_str(r, at, x, "replace's first argument");
		je_need_str(r, at, y, "replace's second argument");
		return jv_str_replace(r, s, x, y, je_need_int(r, at, je_arg_or(a, 2, "count", jv_int(-1)), "count"));
	}
	if (!strcmp(m, "upper"))
		return jv_str_case(r, s, 1);
	if (!strcmp(m, "lower") || !strcmp(m, "casefold"))
		return jv_str_case(r, s, 0);
	if (!strcmp(m, "title"))
		return jv_str_case(r, s, 2);
	if (!strcmp(m, "capitalize"))
		return jv_str_case(r, s, 3);
	if (!strcmp(m, "format"))
		return jv_str_format(r, at, s, a);
	if (!strcmp(m, "find") || !strcmp(m, "index") || !strcmp(m, "rfind") || !strcmp(m, "rindex") ||
	    !strcmp(m, "count")) {
		if (!je_arg(a, 0, NULL, &x))
			jr_err(r, at, "%s() takes at least 1 argument", m);
		je_need_str(r, at, x, "the substring");
		if (!strcmp(m, "count")) {
			int64_t c = 0;
			if (!x.u.s->n)
				return jv_int((int64_t)ju_len(p, n) + 1);
			for (const char *q = p; (q = memmem(q, n - (size_t)(q - p), x.u.s->p, x.u.s->n)); q += x.u.s->n)
				c++;
			return jv_int(c);
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
			jr_err(r, at, "substring not found");
		return jv_int(hit ? (int64_t)ju_len(p, (size_t)(hit - p)) : -1);
	}
	if (!strcmp(m, "join")) {
		if (!je_arg(a, 0, NULL, &x))
			jr_err(r, at, "join() takes exactly one argument");
		struct jlist *l = je_iterate(r, at, x);
		struct sb b = {0};
		jr_put(r, &b, "", 0);
		for (size_t i = 0; i < l->n; i++) {
			if (l->v[i].t != T_STR)
				jr_err(r, at, "sequence item %zu: expected str instance, %s found", i, jv_type_name(l->v[i]));
			if (i)
				jr_put(r, &b, p, n);
			jr_put(r, &b, l->v[i].u.s->p, l->v[i].u.s->n);
		}
		return jv_sb(r, &b);
	}
	if (!strcmp(m, "isspace")) {
		bool ok = n > 0;
		for (size_t i = 0, k; i < n && ok; i += k)
			ok = (k = ju_ws_at(p, n, i)) != 0;
		return jv_bool(ok);
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
				jr_err(r, at, "str.%s is not supported", m);
		}
		if (!strcmp(m, "isupper") || !strcmp(m, "islower"))
			ok = ok && any_cased;
		return jv_bool(ok);
	}
	if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
		if (!je_arg(a, 0, NULL, &x))
			jr_err(r, at, "%s() takes exactly one argument", m);
		je_need_str(r, at, x, "the affix");
		bool suf = m[6] == 's';
		if (starts_or_ends(r, at, s, x, suf))
			return suf ? jv_str(r, p, n - x.u.s->n) : jv_str(r, p + x.u.s->n, n - x.u.s->n);
		return s;
	}
	if (!strcmp(m, "partition") || !strcmp(m, "rpartition")) {
		if (!je_arg(a, 0, NULL, &x))
			jr_err(r, at, "%s() takes exactly one argument", m);
		je_need_str(r, at, x, "the separator");
		struct jv sep = x;
		struct jv parts = jv_str_split(r, s, sep, 1, m[0] == 'r');
		if (parts.t == T_UNDEF)
			jr_err(r, at, "empty separator");
		struct jv out = jv_list(r, 3);
		out.flags = F_TUPLE;
		if (parts.u.l->n == 2) {
			jv_list_push(r, out.u.l, parts.u.l->v[0]);
			jv_list_push(r, out.u.l, sep);
			jv_list_push(r, out.u.l, parts.u.l->v[1]);
		} else if (m[0] == 'r') {
			jv_list_push(r, out.u.l, jv_str(r, "", 0));
			jv_list_push(r, out.u.l, jv_str(r, "", 0));
			jv_list_push(r, out.u.l, s);
		} else {
			jv_list_push(r, out.u.l, s);
			jv_list_push(r, out.u.l, jv_str(r, "", 0));
			jv_list_push(r, out.u.l, jv_str(r, "", 0));
		}
		return out;
	}
	jr_err(r, at, "str.%s() is not supported", m);
}

struct jv je_call_method(struct rctx *r, const struct node *at, struct func *f, const struct args *a)
{
	struct jv self = f->self, x;
	if (f->unsafe)
		jr_err(r, at, "access to attribute '%s' of '%s' object is unsafe.", f->name, jv_type_name(self));
	if (self.t == T_STR)
		return str_method(r, at, self, f->name, a);
	if (self.t == T_DICT) {
		struct jdict *d = self.u.d;
		if (!strcmp(f->name, "get")) {
			if (!je_arg(a, 0, NULL, &x))
				jr_err(r, at, "get() takes at least 1 argument");
			struct jv *v = jv_dict_find(d, x);
			return v ? *v : je_arg_or(a, 1, NULL, jv_none());
		}
		if (!strcmp(f->name, "copy")) {
			struct jv out = jv_dict(r, T_DICT);
			for (size_t i = 0; i < d->n; i++)
				jv_dict_set(r, out.u.d, d->k[i], d->v[i]);
			return out;
		}
		struct jv out = jv_list(r, d->n);
		for (size_t i = 0; i < d->n; i++) {
			if (!strcmp(f->name, "keys")) {
				jv_list_push(r, out.u.l, d->k[i]);
			} else if (!strcmp(f->name, "values")) {
				jv_list_push(r, out.u.l, d->v[i]);
			} else {
				struct jv pair = jv_list(r, 2);
				pair.flags = F_TUPLE;
				jv_list_push(r, pair.u.l, d->k[i]);
				jv_list_push(r, pair.u.l, d->v[i]);
				jv_list_push(r, out.u.l, pair);
			}
		}
		return out;
	}
	if (self.t == T_LIST) {
		struct jlist *l = self.u.l;
		if (!strcmp(f->name, "copy")) {
			struct jv out = jv_list(r, l->n);
			for (size_t i = 0; i < l->n; i++)
				jv_list_push(r, out.u.l, l->v[i]);
			return out;
		}
		if (!je_arg(a, 0, NULL, &x))
			jr_err(r, at, "%s() takes exactly one argument", f->name);
		int64_t c = 0;
		for (size_t i = 0; i < l->n; i++)
			if (jv_eq(l->v[i], x)) {
				if (f->name[0] == 'i')
					return jv_int((int64_t)i);
				c++;
			}
		if (f->name[0] == 'i')
			jr_err(r, at, "list.index(x): x not in list");
		return jv_int(c);
	}
	if (self.t == T_LOOP) {
		struct loopv *L = self.u.loop;
		if (!strcmp(f->name, "cycle")) {
			int k = je_npos(a);
			if (!k)
				jr_err(r, at, "no items for cycling given");
			return a->v[L->i % (size_t)k];
		}
		/* changed(*values) */
		struct jv cur = jv_list(r, 0);
		for (int i = 0; i < a->n; i++)
			jv_list_push(r, cur.u.l, a->v[i]);
		bool changed = !L->changed_seen || !jv_eq(L->changed_last, cur);
		L->changed_last = cur;
		L->changed_seen = true;
		return jv_bool(changed);
	}
	jr_err(r, at, "'%s' object is not callable", jv_type_name(self));
}

/* ---- globals ---- */

static struct jv call_global(struct rctx *r, const struct node *at, const char *name, const struct args *a)
{
	struct jv x;
	if (!strcmp(name, "raise_exception")) {
		struct jv msg = jv_to_str(r, je_arg_or(a, 0, "message", jv_str(r, "", 0)));
		jr_err(r, at, "raise_exception: %s", msg.u.s->p);
	}
	if (!strcmp(name, "range")) {
		int k = je_npos(a);
		int64_t lo = 0, hi, st = 1;
		if (k == 1) {
			hi = je_need_int(r, at, a->v[0], "range's argument");
		} else if (k == 2 || k == 3) {
			lo = je_need_int(r, at, a->v[0], "range's start");
			hi = je_need_int(r, at, a->v[1], "range's stop");
			if (k == 3)
				st = je_need_int(r, at, a->v[2], "range's step");
		} else {
			jr_err(r, at, "range expected 1 to 3 integer arguments, got %d", k);
		}
		if (st == 0)
			jr_err(r, at, "range() arg 3 must not be zero");
		double count = ceil(((double)hi - (double)lo) / (double)st);
		if (count > MAX_RANGE)
			jr_err(r, at, "range too big: the sandbox allows at most %d items", MAX_RANGE);
		struct jv out = jv_list(r, count > 0 ? (size_t)count : 0);
		for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st)
			jv_list_push(r, out.u.l, jv_int(i));
		return out;
	}
	if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
		struct jv out = jv_dict(r, name[0] == 'n' ? T_NS : T_DICT);
		if (je_arg(a, 0, NULL, &x)) {
			if (x.t != T_DICT && x.t != T_NS)
				jr_err(r, at, "%s() takes a mapping as its positional argument", name);
			for (size_t i = 0; i < x.u.d->n; i++)
				jv_dict_set(r, out.u.d, x.u.d->k[i], x.u.d->v[i]);
		}
		for (int i = 0; i < a->n; i++)
			if (a->kw[i])
				jv_dict_set_s(r, out.u.d, a->kw[i], a->v[i]);
		return out;
	}
	if (!strcmp(name, "strftime_now")) {
		if (!je_arg(a, 0, "format", &x))
			jr_err(r, at, "strftime_now() takes a format string");
		je_need_str(r, at, x, "strftime_now's format");
		time_t t = r->fixed_now ? (time_t)r->now_s : time(NULL);
		struct tm tm;
		if (r->fixed_now)
			gmtime_r(&t, &tm);
		else
			localtime_r(&t, &tm);
		char out[512];
		size_t n = x.u.s->n ? strftime(out, sizeof out, x.u.s->p, &tm) : 0;
		if (x.u.s->n && !n)
			jr_err(r, at, "strftime_now: format too long or empty result");
		return jv_str(r, out, n);
	}
	jr_err(r, at, "'%s' is not callable", name);
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
		jr_err(r, at, "{%% call %%} needs a macro");
	if (fn.t == T_FUNC) {
		if (fn.u.fn->self.t == T_UNDEF)
			return call_global(r, at, fn.u.fn->name, a);
		return je_call_method(r, at, fn.u.fn, a);
	}
	if (fn.t == T_UNDEF)
		jr_err(r, at, "%s", fn.u.hint);
	jr_err(r, at, "'%s' object is not callable", jv_type_name(fn));
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
	struct jv *v = jr_scope_find(s, name);
	if (v)
		return *v;
	if (is_global(name))
		return bound(r, (struct jv){.t = T_UNDEF}, name, false);
	return jv_undef(r, "'%s' is undefined", name);
}

static struct jv eval(struct rctx *r, struct node *x, struct scope *s)
{
	struct jv a, b, c;
	struct args args;
	step(r, x);
	if (++r->depth > MAX_DEPTH)
		jr_err(r, x, "expression nested too deeply");
	struct jv out;
	switch (x->kind) {
	case E_LIT: out = x->lit; break;
	case E_NAME: out = lookup(r, x->name, s); break;
	case E_BODYVAL: out = r->bodyval; break;
	case E_LIST:
	case E_TUPLE:
		out = jv_list(r, x->kids.n);
		out.flags = x->kind == E_TUPLE ? F_TUPLE : 0;
		for (size_t i = 0; i < x->kids.n; i++)
			jv_list_push(r, out.u.l, eval(r, x->kids.v[i], s));
		break;
	case E_DICT:
		out = jv_dict(r, T_DICT);
		for (size_t i = 0; i + 1 < x->kids.n; i += 2) {
			a = eval(r, x->kids.v[i], s);
			if (a.t == T_LIST && !(a.flags & F_TUPLE))
				jr_err(r, x, "unhashable type: 'list'");
			if (a.t == T_DICT || a.t == T_UNDEF)
				jr_err(r, x, "unhashable type: '%s'", jv_type_name(a));
			jv_dict_set(r, out.u.d, a, eval(r, x->kids.v[i + 1], s));
		}
		break;
	case E_ATTR: out = je_get_attr(r, x, eval(r, x->a, s), x->name); break;
	case E_ITEM:
		a = eval(r, x->a, s);
		out = je_get_item(r, x, a, eval(r, x->b, s));
		break;
	case E_SLICE:
		a = eval(r, x->a, s);
		b = x->b ? eval(r, x->b, s) : jv_none();
		c = x->c ? eval(r, x->c, s) : jv_none();
		out = slice(r, x, a, b, c, x->kids.v[0] ? eval(r, x->kids.v[0], s) : jv_none());
		break;
	case E_CALL:
		a = eval(r, x->a, s);
		eval_args(r, x, s, &args);
		out = call_value(r, x, a, &args, NULL);
		break;
	case E_FILTER:
		a = eval(r, x->a, s);
		eval_args(r, x, s, &args);
		out = jf_filter(r, x, x->name, a, &args);
		break;
	case E_TEST:
		a = eval(r, x->a, s);
		eval_args(r, x, s, &args);
		out = jv_bool(jf_test(r, x, x->name, a, &args) != (bool)x->op);
		break;
	case E_NOT: out = jv_bool(!jv_truthy(eval(r, x->a, s))); break;
	case E_NEG:
	case E_POS:
		a = eval(r, x->a, s);
		if (a.t == T_UNDEF)
			jr_err(r, x, "%s", a.u.hint);
		if (!jv_is_num(a))
			jr_err(r, x, "bad operand type for unary %c: '%s'", x->kind == E_NEG ? '-' : '+', jv_type_name(a));
		if (x->kind == E_POS)
			out = a.t == T_BOOL ? jv_int(jv_num_i(a)) : a;
		else if (a.t == T_FLOAT)
			out = jv_float(-a.u.f);
		else if (jv_num_i(a) == INT64_MIN)
			jr_err(r, x, "integer overflow");
		else
			out = jv_int(-jv_num_i(a));
		break;
	case E_BIN:
		a = eval(r, x->a, s);
		out = je_binop(r, x, x->op, a, eval(r, x->b, s));
		break;
	case E_AND:
		a = eval(r, x->a, s);
		out = jv_truthy(a) ? eval(r, x->b, s) : a;
		break;
	case E_OR:
		a = eval(r, x->a, s);
		out = jv_truthy(a) ? a : eval(r, x->b, s);
		break;
	case E_COND:
		if (jv_truthy(eval(r, x->a, s)))
			out = eval(r, x->b, s);
		else
			out = x->c ? eval(r, x->c, s) : jv_undef(r, "the inline if-expression on line %d evaluated to false and no else section was defined", x->line);
		break;
	default: jr_err(r, x, "internal error: node kind %d is not an expression", x->kind);
	}
	r->depth--;
	return out;
}

/* ---- statements ---- */

static void assign(struct rctx *r, struct node *target, struct jv v, struct scope *s)
{
	if (target->kind == E_NAME) {
		jr_scope_set(r, s, target->name, v);
	} else if (target->kind == E_ATTR) {
		struct jv ns = eval(r, target->a, s);
		if (ns.t != T_NS)
			jr_err(r, target, "cannot assign attribute on non-namespace object");
		jv_dict_set_s(r, ns.u.d, target->name, v);
	} else {
		struct jlist *items = je_iterate(r, target, v);
		if (items->n != target->kids.n)
			jr_err(r, target, items->n > target->kids.n ? "too many values to unpack (expected %zu)"
								  : "not enough values to unpack (expected %zu)",
			     target->kids.n);
		for (size_t i = 0; i < items->n; i++)
			assign(r, target->kids.v[i], items->v[i], s);
	}
}

static struct jv render_to_string(struct rctx *r, struct nvec *body, struct scope *s)
{
	struct sb *saved = r->out, b = {0};
	jr_put(r, &b, "", 0);
	r->out = &b;
	je_exec_body(r, body, s);
	r->out = saved;
	return jv_sb(r, &b);
}

static struct jv call_macro(struct rctx *r, const struct node *at, struct macro *m, const struct args *a,
			    struct macro *caller)
{
	if (++r->depth > MAX_DEPTH)
		jr_err(r, at, "macro calls nested too deeply (recursion?)");
	struct node *def = m->def;
	struct scope *ms = jr_scope_new(r, m->closure);
	int np = je_npos(a);
	for (size_t i = 0; i < def->kids.n; i++) {
		const char *pname = def->kwnames[i];
		struct jv v;
		if ((int)i < np)
			v = a->v[i];
		else if (!je_arg(a, -1, pname, &v))
			v = def->kids.v[i] ? eval(r, def->kids.v[i], ms)
					   : jv_undef(r, "parameter '%s' was not provided", pname);
		jr_scope_set(r, ms, pname, v);
	}
	struct jv varargs = jv_list(r, 0), kwargs = jv_dict(r, T_DICT);
	varargs.flags = F_TUPLE;
	for (int i = (int)def->kids.n; i < np; i++)
		jv_list_push(r, varargs.u.l, a->v[i]);
	for (int i = np; i < a->n; i++) {
		bool known = false;
		for (size_t k = 0; k < def->kids.n; k++)
			known = known || !strcmp(def->kwnames[k], a->kw[i]);
		if (!known)
			jv_dict_set_s(r, kwargs.u.d, a->kw[i], a->v[i]);
	}
	jr_scope_set(r, ms, "varargs", varargs);
	jr_scope_set(r, ms, "kwargs", kwargs);
	if (caller) {
		struct jv cv = {.t = T_MACRO};
		cv.u.m = caller;
		jr_scope_set(r, ms, "caller", cv);
	}
	struct jv out = render_to_string(r, &def->body, ms);
	r->ctl = 0;
	r->depth--;
	return out;
}

static void exec_for(struct rctx *r, struct node *x, struct scope *s)
{
	struct jlist *items = je_iterate(r, x, eval(r, x->b, s));
	if (x->c) {
		struct jlist *kept = jv_list(r, 0).u.l;
		for (size_t i = 0; i < items->n; i++) {
			struct scope *fs = jr_scope_new(r, s);
			assign(r, x->a, items->v[i], fs);
			if (jv_truthy(eval(r, x->c, fs)))
				jv_list_push(r, kept, items->v[i]);
		}
		items = kept;
	}
	struct loopv *L = jr_alloc(r, sizeof *L);
	L->items = items;
	L->depth = 1;
	struct jv lv = {.t = T_LOOP};
	lv.u.loop = L;
	/* one scope reused for every iteration: each starts empty, as in jinja2 */
	struct scope *it = jr_scope_new(r, s);
	for (size_t i = 0; i < items->n; i++) {
		step(r, x);
		it->n = 0;
		L->i = i;
		assign(r, x->a, items->v[i], it);
		jr_scope_set(r, it, "loop", lv);
		je_exec_body(r, &x->body, it);
		if (r->ctl == 1) {
			r->ctl = 0;
			break;
		}
		r->ctl = 0;
	}
	if (!items->n)
		je_exec_body(r, &x->orelse, jr_scope_new(r, s));
}

static void exec_node(struct rctx *r, struct node *x, struct scope *s)
{
	step(r, x);
	switch (x->kind) {
	case N_DATA: jr_put(r, r->out, x->lit.u.s->p, x->lit.u.s->n); break;
	case N_OUTPUT: jv_put_str(r, r->out, eval(r, x->a, s)); break;
	case N_IF:
		if (jv_truthy(eval(r, x->a, s)))
			je_exec_body(r, &x->body, s);
		else
			je_exec_body(r, &x->orelse, s);
		break;
	case N_FOR: exec_for(r, x, s); break;
	case N_SET: assign(r, x->a, eval(r, x->b, s), s); break;
	case N_SETBLOCK:
	case N_FILTERBLOCK: {
		struct jv saved = r->bodyval;
		r->bodyval = render_to_string(r, &x->body, x->kind == N_SETBLOCK ? jr_scope_new(r, s) : s);
		struct jv v = eval(r, x->b, s);
		r->bodyval = saved;
		if (x->kind == N_SETBLOCK)
			assign(r, x->a, v, s);
		else
			jv_put_str(r, r->out, v);
		break;
	}
	case N_MACRO: {
		struct jv mv = {.t = T_MACRO};
		mv.u.m = jr_alloc(r, sizeof *mv.u.m);
		mv.u.m->def = x;
		mv.u.m->closure = s;
		jr_scope_set(r, s, x->name, mv);
		break;
	}
	case N_CALLBLOCK: {
		struct macro *caller = jr_alloc(r, sizeof *caller);
		caller->def = x->b;
		caller->closure = s;
		struct jv fn = eval(r, x->a->a, s);
		struct args a;
		eval_args(r, x->a, s, &a);
		jv_put_str(r, r->out, call_value(r, x, fn, &a, caller));
		break;
	}
	case N_WITH: {
		struct scope *ws = jr_scope_new(r, s);
		for (size_t i = 0; i < x->kids.n; i++)
			jr_scope_set(r, ws, x->kwnames[i], eval(r, x->kids.v[i], s));
		je_exec_body(r, &x->body, ws);
		break;
	}
	case N_BREAK: r->ctl = 1; break;
	case N_CONTINUE: r->ctl = 2; break;
	default: jr_err(r, x, "internal error: node kind %d is not a statement", x->kind);
	}
}

void je_exec_body(struct rctx *r, struct nvec *body, struct scope *s)
{
	for (size_t i = 0; i < body->n && !r->ctl; i++)
		exec_node(r, body->v[i], s);
}
