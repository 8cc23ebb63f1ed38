/* jinja_filters — the builtin filters (|join, |tojson, |selectattr, ...) and tests
 * (is defined, is string, ...) with jinja2's argument names and defaults. Each
 * takes its input and the call's arguments and returns a new value in the render
 * arena; unknown filters and tests are a render error naming them. */
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

/* ---- filters ---- */

/* jinja2's make_attrgetter: "a.b.0" looked up item-first, integers as indices */
static struct jv attr_path(struct rctx *r, const struct node *at, struct jv v, struct jv path)
{
	if (path.t == T_INT)
		return je_get_item(r, at, v, path);
	je_need_str(r, at, path, "attribute");
	const char *p = path.u.s->p;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		struct jv key = jv_str(r, p, n);
		bool digits = n > 0;
		for (size_t i = 0; i < n; i++)
			digits = digits && isdigit((unsigned char)p[i]);
		if (digits)
			key = jv_int(strtoll(key.u.s->p, NULL, 10));
		v = je_get_item(r, at, v, key);
		p += n + (dot ? 1 : 0);
		if (!dot)
			break;
	}
	return v;
}

/* sort key: lower-cased strings unless case_sensitive */
static struct jv sort_key(struct rctx *r, struct jv v, bool case_sensitive)
{
	return !case_sensitive && v.t == T_STR ? jv_str_case(r, v, 0) : v;
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
		tmp[k++] = jv_cmp(c->r, c->at, c->keys[idx[j]], c->keys[idx[i]], "<") < 0 ? idx[j++] : idx[i++];
	while (i < h)
		tmp[k++] = idx[i++];
	while (j < n)
		tmp[k++] = idx[j++];
	memcpy(idx, tmp, n * sizeof *idx);
}

static struct jv sorted(struct rctx *r, const struct node *at, struct jlist *items, struct jv *keys, bool reverse)
{
	size_t n = items->n;
	size_t *idx = jr_alloc(r, (n + 1) * sizeof *idx), *tmp = jr_alloc(r, (n + 1) * sizeof *tmp);
	for (size_t i = 0; i < n; i++)
		idx[i] = reverse ? n - 1 - i : i;
	struct sort_ctx c = {r, at, keys};
	merge_sort(&c, idx, tmp, n);
	struct jv out = jv_list(r, n);
	for (size_t i = 0; i < n; i++)
		jv_list_push(r, out.u.l, items->v[idx[reverse ? n - 1 - i : i]]);
	return out;
}

static struct jv select_items(struct rctx *r, const struct node *at, struct jv in, const struct args *a, bool by_attr,
			      bool keep)
{
	struct jv out = jv_list(r, 0);
	out.flags = F_GEN;
	if (!jv_truthy(in)) /* jinja2 checks `if value:` before iterating */
		return out;
	struct jlist *items = je_iterate(r, at, in);
	int first = by_attr ? 1 : 0;
	struct jv attr = {0}, testname;
	if (by_attr && !je_arg(a, 0, NULL, &attr))
		jr_err(r, at, "selectattr/rejectattr need an attribute name");
	bool has_test = je_arg(a, first, NULL, &testname);
	if (has_test)
		je_need_str(r, at, testname, "the test name");
	struct args ta = {0};
	for (int i = first + 1; i < a->n; i++) {
		ta.v[ta.n] = a->v[i];
		ta.kw[ta.n++] = a->kw[i];
	}
	for (size_t i = 0; i < items->n; i++) {
		struct jv v = by_attr ? attr_path(r, at, items->v[i], attr) : items->v[i];
		bool ok = has_test ? jf_test(r, at, testname.u.s->p, v, &ta) : jv_truthy(v);
		if (ok == keep)
			jv_list_push(r, out.u.l, items->v[i]);
	}
	return out;
}

static struct jv f_indent(struct rctx *r, const struct node *at, struct jv in, const struct args *a)
{
	struct jv w = je_arg_or(a, 0, "width", jv_int(4));
	bool first = jv_truthy(je_arg_or(a, 1, "first", jv_bool(false))), blank = jv_truthy(je_arg_or(a, 2, "blank", jv_bool(false)));
	struct jv ind;
	if (w.t == T_STR)
		ind = w;
	else
		ind = je_repeat(r, at, jv_str(r, " ", 1), je_need_int(r, at, w, "indent's width"));
	if (in.t != T_STR)
		jr_err(r, at, "unsupported operand type(s) for +=: '%s' and 'str'", jv_type_name(in));
	struct jv s = in;
	struct sb tmp = {0};
	jr_put(r, &tmp, s.u.s->p, s.u.s->n);
	jr_put(r, &tmp, "\n", 1);
	struct jlist *lines = jv_split_lines(r, tmp.p, tmp.n);
	struct sb b = {0};
	jr_put(r, &b, "", 0);
	if (first)
		jr_put(r, &b, ind.u.s->p, ind.u.s->n);
	for (size_t i = 0; i < lines->n; i++) {
		struct jstr *l = lines->v[i].u.s;
		if (i) {
			jr_put(r, &b, "\n", 1);
			if (blank || l->n)
				jr_put(r, &b, ind.u.s->p, ind.u.s->n);
		}
		jr_put(r, &b, l->p, l->n);
	}
	return jv_sb(r, &b);
}

static struct jv f_tojson(struct rctx *r, const struct node *at, struct jv in, const struct args *a)
{
	/* Hugging Face's signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
	struct jsonopt o = {.ensure_ascii = jv_truthy(je_arg_or(a, 0, "ensure_ascii", jv_bool(false))),
			    .sort_keys = jv_truthy(je_arg_or(a, 3, "sort_keys", jv_bool(false)))};
	struct jv ind = je_arg_or(a, 1, "indent", jv_none()), sep = je_arg_or(a, 2, "separators", jv_none());
	if (ind.t == T_STR) {
		o.indent = ind.u.s->p;
	} else if (ind.t != T_NONE) {
		struct jv sp = je_repeat(r, at, jv_str(r, " ", 1), je_need_int(r, at, ind, "tojson's indent"));
		o.indent = sp.u.s->p;
	}
	o.item_sep = o.indent ? "," : ", ";
	o.key_sep = ": ";
	if (sep.t != T_NONE) {
		if (sep.t != T_LIST || sep.u.l->n != 2 || sep.u.l->v[0].t != T_STR || sep.u.l->v[1].t != T_STR)
			jr_err(r, at, "tojson's separators must be a pair of strings");
		o.item_sep = sep.u.l->v[0].u.s->p;
		o.key_sep = sep.u.l->v[1].u.s->p;
	}
	struct sb b = {0};
	jr_put(r, &b, "", 0);
	jv_json_dump(r, at, &b, in, &o, 0);
	return jv_sb(r, &b);
}

static struct jv f_int(struct rctx *r, const struct node *at, struct jv in, const struct args *a)
{
	struct jv dflt = je_arg_or(a, 0, "default", jv_int(0));
	if (in.t == T_UNDEF) /* int(Undefined) raises */
		jr_err(r, at, "%s", in.u.hint);
	if (in.t == T_INT || in.t == T_BOOL)
		return jv_int(jv_num_i(in));
	if (in.t == T_FLOAT)
		return isfinite(in.u.f) && fabs(in.u.f) < 9.2e18 ? jv_int((int64_t)in.u.f) : dflt;
	if (in.t != T_STR)
		return dflt;
	char buf[128];
	size_t n = 0;
	struct jv t = jv_str_strip(r, in, NULL, true, true);
	for (size_t i = 0; i < t.u.s->n && n < sizeof buf - 1; i++)
		if (t.u.s->p[i] != '_')
			buf[n++] = t.u.s->p[i];
	buf[n] = 0;
	char *e;
	errno = 0;
	long long v = strtoll(buf, &e, (int)je_need_int(r, NULL, je_arg_or(a, 1, "base", jv_int(10)), "base"));
	if (n && !*e && !errno && !isspace((unsigned char)buf[0]))
		return jv_int(v);
	double d = strtod(buf, &e);
	if (n && !*e && isfinite(d) && fabs(d) < 9.2e18)
		return jv_int((int64_t)d);
	return dflt;
}

struct jv jf_filter(struct rctx *r, const struct node *at, const char *f, struct jv in, const struct args *a)
{
	struct jv x;
	if (!strcmp(f, "safe")) {
		struct jv o = jv_to_str(r, in);
		o.flags = F_MARKUP;
		return o;
	}
	if (!strcmp(f, "default") || !strcmp(f, "d")) {
		bool boolean = jv_truthy(je_arg_or(a, 1, "boolean", jv_bool(false)));
		if (in.t == T_UNDEF || (boolean && !jv_truthy(in)))
			return je_arg_or(a, 0, "default_value", jv_str(r, "", 0));
		return in;
	}
	if (!strcmp(f, "length") || !strcmp(f, "count")) {
		switch (in.t) {
		case T_STR: return jv_int((int64_t)ju_len(in.u.s->p, in.u.s->n));
		case T_LIST:
			if (in.flags & F_GEN)
				jr_err(r, at, "object of type 'generator' has no len()");
			return jv_int((int64_t)in.u.l->n);
		case T_DICT: return jv_int((int64_t)in.u.d->n);
		case T_UNDEF: return jv_int(0);
		default: jr_err(r, at, "object of type '%s' has no len()", jv_type_name(in));
		}
	}
	if (!strcmp(f, "tojson"))
		return f_tojson(r, at, in, a);
	if (!strcmp(f, "string"))
		return jv_to_str(r, in);
	if (!strcmp(f, "trim")) {
		x = je_arg_or(a, 0, "chars", jv_none());
		if (x.t != T_NONE)
			je_need_str(r, at, x, "trim's chars");
		return jv_str_strip(r, jv_to_str(r, in), x.t == T_STR ? x.u.s : NULL, true, true);
	}
	if (!strcmp(f, "upper") || !strcmp(f, "lower") || !strcmp(f, "title") || !strcmp(f, "capitalize")) {
		int mode = f[0] == 'l' ? 0 : f[0] == 'u' ? 1 : f[0] == 't' ? 4 : 3;
		return jv_str_case(r, jv_to_str(r, in), mode);
	}
	if (!strcmp(f, "replace")) {
		struct jv old, nw;
		if (!je_arg(a, 0, "old", &old) || !je_arg(a, 1, "new", &nw))
			jr_err(r, at, "replace needs the old and new strings");
		struct jv cnt = je_arg_or(a, 2, "count", jv_none());
		struct jv o = jv_str_replace(r, jv_to_str(r, in), jv_to_str(r, old), jv_to_str(r, nw),
					  cnt.t == T_NONE ? -1 : je_need_int(r, at, cnt, "count"));
		return o;
	}
	if (!strcmp(f, "join")) {
		struct jv sep = jv_to_str(r, je_arg_or(a, 0, "d", jv_str(r, "", 0)));
		struct jv attr;
		bool has_attr = je_arg(a, 1, "attribute", &attr);
		struct jlist *l = je_iterate(r, at, in);
		struct sb b = {0};
		jr_put(r, &b, "", 0);
		for (size_t i = 0; i < l->n; i++) {
			if (i)
				jr_put(r, &b, sep.u.s->p, sep.u.s->n);
			jv_put_str(r, &b, has_attr ? attr_path(r, at, l->v[i], attr) : l->v[i]);
		}
		return jv_sb(r, &b);
	}
	if (!strcmp(f, "items")) {
		struct jv out = jv_list(r, 0);
		if (in.t != T_UNDEF) {
			if (in.t != T_DICT)
				jr_err(r, at, "can only get item pairs from a mapping");
			struct func fn = {.name = "items", .self = in};
			out = je_call_method(r, at, &fn, a);
		}
		out.flags = F_GEN;
		return out;
	}
	if (!strcmp(f, "list")) {
		struct jlist *l = je_iterate(r, at, in);
		struct jv out = jv_list(r, l->n);
		for (size_t i = 0; i < l->n; i++)
			jv_list_push(r, out.u.l, l->v[i]);
		return out;
	}
	if (!strcmp(f, "first") || !strcmp(f, "last")) {
		struct jlist *l = je_iterate(r, at, in);
		if (f[0] == 'l' && in.t == T_LIST && (in.flags & F_GEN))
			jr_err(r, at, "'generator' object is not reversible");
		if (!l->n)
			return jv_undef(r, "No %s item, sequence was empty.", f);
		return l->v[f[0] == 'f' ? 0 : l->n - 1];
	}
	if (!strcmp(f, "reverse")) {
		if (in.t == T_STR) {
			struct jlist *l = je_iterate(r, at, in);
			struct sb b = {0};
			jr_put(r, &b, "", 0);
			for (size_t i = l->n; i-- > 0;)
				jr_put(r, &b, l->v[i].u.s->p, l->v[i].u.s->n);
			return jv_sb(r, &b);
		}
		/* reversed() gives an iterator; a generator has none, so jinja2 makes a list */
		struct jlist *l = je_iterate(r, at, in);
		struct jv out = jv_list(r, l->n);
		for (size_t i = l->n; i-- > 0;)
			jv_list_push(r, out.u.l, l->v[i]);
		out.flags = in.t == T_LIST && (in.flags & F_GEN) ? 0 : F_GEN;
		return out;
	}
	if (!strcmp(f, "selectattr") || !strcmp(f, "rejectattr"))
		return select_items(r, at, in, a, true, f[0] == 's');
	if (!strcmp(f, "select") || !strcmp(f, "reject"))
		return select_items(r, at, in, a, false, f[0] == 's');
	if (!strcmp(f, "map")) {
		struct jv out = jv_list(r, 0), attr, fname;
		out.flags = F_GEN;
		if (!jv_truthy(in))
			return out;
		struct jlist *l = je_iterate(r, at, in);
		if (je_arg(a, -1, "attribute", &attr)) {
			struct jv dflt;
			bool has_d = je_arg(a, -1, "default", &dflt);
			for (size_t i = 0; i < l->n; i++) {
				struct jv v = attr_path(r, at, l->v[i], attr);
				jv_list_push(r, out.u.l, v.t == T_UNDEF && has_d ? dflt : v);
			}
			return out;
		}
		if (!je_arg(a, 0, NULL, &fname))
			jr_err(r, at, "map needs a filter name or attribute=");
		je_need_str(r, at, fname, "the filter name");
		struct args fa = {0};
		for (int i = 1; i < a->n; i++) {
			fa.v[fa.n] = a->v[i];
			fa.kw[fa.n++] = a->kw[i];
		}
		for (size_t i = 0; i < l->n; i++)
			jv_list_push(r, out.u.l, jf_filter(r, at, fname.u.s->p, l->v[i], &fa));
		return out;
	}
	if (!strcmp(f, "dictsort")) {
		if (in.t != T_DICT)
			jr_err(r, at, "dictsort needs a mapping, not %s", jv_type_name(in));
		bool cs = jv_truthy(je_arg_or(a, 0, "case_sensitive", jv_bool(false)));
		struct jv by = je_arg_or(a, 1, "by", jv_str(r, "key", 3));
		bool rev = jv_truthy(je_arg_or(a, 2, "reverse", jv_bool(false)));
		bool by_value = by.t == T_STR && !strcmp(by.u.s->p, "value");
		struct func fn = {.name = "items", .self = in};
		struct args none = {0};
		struct jv items = je_call_method(r, at, &fn, &none);
		struct jv *keys = jr_alloc(r, (items.u.l->n + 1) * sizeof *keys);
		for (size_t i = 0; i < items.u.l->n; i++)
			keys[i] = sort_key(r, items.u.l->v[i].u.l->v[by_value ? 1 : 0], cs);
		return sorted(r, at, items.u.l, keys, rev);
	}
	if (!strcmp(f, "sort") || !strcmp(f, "unique") || !strcmp(f, "min") || !strcmp(f, "max")) {
		bool is_sort = f[0] == 's';
		struct jlist *l = je_iterate(r, at, in);
		bool rev = is_sort && jv_truthy(je_arg_or(a, 0, "reverse", jv_bool(false)));
		bool cs = jv_truthy(je_arg_or(a, is_sort ? 1 : 0, "case_sensitive", jv_bool(false)));
		struct jv attr;
		bool has_attr = je_arg(a, is_sort ? 2 : 1, "attribute", &attr);
		struct jv *keys = jr_alloc(r, (l->n + 1) * sizeof *keys);
		for (size_t i = 0; i < l->n; i++)
			keys[i] = sort_key(r, has_attr ? attr_path(r, at, l->v[i], attr) : l->v[i], cs);
		if (is_sort)
			return sorted(r, at, l, keys, rev);
		if (f[0] == 'u') {
			struct jv out = jv_list(r, 0), seen = jv_list(r, 0);
			out.flags = F_GEN;
			for (size_t i = 0; i < l->n; i++) {
				if (je_contains(r, at, seen, keys[i]))
					continue;
				jv_list_push(r, seen.u.l, keys[i]);
				jv_list_push(r, out.u.l, l->v[i]);
			}
			return out;
		}
		if (!l->n)
			return jv_undef(r, "No aggregated item, sequence was empty.");
		size_t best = 0;
		for (size_t i = 1; i < l->n; i++) {
			int c = jv_cmp(r, at, keys[i], keys[best], "<");
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
			jr_err(r, at, "%s", in.u.hint);
		if (jv_is_num(in))
			return jv_float(jv_num_f(in));
		if (in.t == T_STR) {
			char *e;
			struct jv t = jv_str_strip(r, in, NULL, true, true);
			double d = strtod(t.u.s->p, &e);
			if (t.u.s->n && !*e)
				return jv_float(d);
		}
		return je_arg_or(a, 0, "default", jv_float(0.0));
	}
	if (!strcmp(f, "abs")) {
		if (in.t == T_FLOAT)
			return jv_float(fabs(in.u.f));
		if (in.t == T_INT || in.t == T_BOOL) {
			if (jv_num_i(in) == INT64_MIN)
				jr_err(r, at, "integer overflow");
			return jv_int(jv_num_i(in) < 0 ? -jv_num_i(in) : jv_num_i(in));
		}
		jr_err(r, at, "bad operand type for abs(): '%s'", jv_type_name(in));
	}
	if (!strcmp(f, "round")) {
		int64_t prec = je_need_int(r, at, je_arg_or(a, 0, "precision", jv_int(0)), "precision");
		struct jv method = je_arg_or(a, 1, "method", jv_str(r, "common", 6));
		if (!jv_is_num(in))
			jr_err(r, at, "round needs a number");
		const char *mm = method.t == T_STR ? method.u.s->p : "common";
		if (!strcmp(mm, "common") && in.t != T_FLOAT)
			return jv_int(jv_num_i(in)); /* round() of an int is that int */
		if (!strcmp(mm, "common")) {
			/* Python's round(): correctly rounded, ties to even, as printf does it */
			char tmp[400];
			if (prec < 0 || prec > 300)
				jr_err(r, at, "round's precision must be between 0 and 300");
			snprintf(tmp, sizeof tmp, "%.*f", (int)prec, jv_num_f(in));
			return jv_float(strtod(tmp, NULL));
		}
		if (strcmp(mm, "ceil") && strcmp(mm, "floor"))
			jr_err(r, at, "method must be common, ceil or floor");
		double m = pow(10, (double)prec), v = jv_num_f(in) * m;
		v = mm[0] == 'c' ? ceil(v) : floor(v);
		return jv_float(v / m);
	}
	if (!strcmp(f, "sum")) {
		struct jlist *l = je_iterate(r, at, in);
		struct jv attr, acc = je_arg_or(a, 1, "start", jv_int(0));
		bool has_attr = je_arg(a, 0, "attribute", &attr);
		for (size_t i = 0; i < l->n; i++)
			acc = je_binop(r, at, B_ADD, acc, has_attr ? attr_path(r, at, l->v[i], attr) : l->v[i]);
		return acc;
	}
	if (!strcmp(f, "escape") || !strcmp(f, "e"))
		return jv_html_escape(r, in);
	if (!strcmp(f, "attr")) {
		if (!je_arg(a, 0, "name", &x))
			jr_err(r, at, "attr needs a name");
		je_need_str(r, at, x, "attr's name");
		return je_get_attr(r, at, in, x.u.s->p);
	}
	if (!strcmp(f, "wordcount")) { /* runs of \w */
		struct jv sv = jv_to_str(r, in);
		int64_t words = 0;
		bool inword = false;
		for (size_t i = 0, k; i < sv.u.s->n; i += k) {
			unsigned char c = (unsigned char)sv.u.s->p[i];
			k = ju_ws_at(sv.u.s->p, sv.u.s->n, i);
			bool w = !k && (isalnum(c) || c == '_' || c >= 0x80);
			k = k ? k : 1;
			words += w && !inword;
			inword = w;
		}
		return jv_int(words);
	}
	if (!strcmp(f, "format")) { /* value % args, or % kwargs */
		int np = je_npos(a);
		if (np && np < a->n)
			jr_err(r, at, "format can't handle positional and keyword arguments at the same time");
		struct jv fa = np < a->n ? jv_dict(r, T_DICT) : jv_list(r, (size_t)np);
		if (np < a->n)
			for (int i = 0; i < a->n; i++)
				jv_dict_set_s(r, fa.u.d, a->kw[i], a->v[i]);
		else
			for (int i = 0; i < np; i++)
				jv_list_push(r, fa.u.l, a->v[i]);
		fa.flags = fa.t == T_LIST ? F_TUPLE : 0;
		return je_str_mod(r, at, jv_to_str(r, in), fa);
	}
	if (!strcmp(f, "center")) {
		struct jv sv = jv_to_str(r, in);
		int64_t width = je_need_int(r, at, je_arg_or(a, 0, "width", jv_int(80)), "center's width");
		int64_t len = (int64_t)ju_len(sv.u.s->p, sv.u.s->n), marg = width - len;
		if (marg <= 0)
			return sv;
		int64_t left = marg / 2 + (marg & width & 1); /* CPython's split of the padding */
		struct jv out = je_concat(r, je_repeat(r, at, jv_str(r, " ", 1), left), sv);
		return je_concat(r, out, je_repeat(r, at, jv_str(r, " ", 1), marg - left));
	}
	if (!strcmp(f, "truncate")) {
		struct jv sv = jv_to_str(r, in);
		int64_t length = je_need_int(r, at, je_arg_or(a, 0, "length", jv_int(255)), "truncate's length");
		bool killwords = jv_truthy(je_arg_or(a, 1, "killwords", jv_bool(false)));
		struct jv end = jv_to_str(r, je_arg_or(a, 2, "end", jv_str(r, "...", 3)));
		struct jv lw = je_arg_or(a, 3, "leeway", jv_none());
		int64_t leeway = lw.t == T_NONE ? 5 : je_need_int(r, at, lw, "leeway");
		int64_t len = (int64_t)ju_len(sv.u.s->p, sv.u.s->n), endlen = (int64_t)ju_len(end.u.s->p, end.u.s->n);
		if (length < endlen || leeway < 0)
			jr_err(r, at, "truncate: expected length >= len(end) and leeway >= 0");
		if (len <= length + leeway)
			return sv;
		size_t cut = ju_off(sv.u.s->p, sv.u.s->n, (size_t)(length - endlen));
		struct jv head = jv_str(r, sv.u.s->p, cut);
		if (!killwords) {
			struct jv parts = jv_str_split(r, head, jv_str(r, " ", 1), 1, true);
			head = parts.u.l->v[0];
		}
		return je_concat(r, head, end);
	}
	jr_err(r, at, "no filter named '%s'", f);
}

/* ---- tests ---- */

bool jf_test(struct rctx *r, const struct node *at, const char *t, struct jv in, const struct args *a)
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
		return jv_is_num(in);
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
		struct func fn = {.name = t[0] == 'l' ? "islower" : "isupper", .self = jv_to_str(r, in)};
		struct args none = {0};
		return je_call_method(r, at, &fn, &none).u.b;
	}
	if (!strcmp(t, "odd") || !strcmp(t, "even")) /* value % 2 == 1 (or 0), as Python computes it */
		return jv_eq(je_binop(r, at, B_MOD, in, jv_int(2)), jv_int(t[0] == 'o' ? 1 : 0));
	if (!strcmp(t, "divisibleby")) {
		if (!je_arg(a, 0, "num", &x))
			jr_err(r, at, "divisibleby needs a number");
		int64_t d = je_need_int(r, at, x, "divisor");
		if (!d)
			jr_err(r, at, "integer division or modulo by zero");
		return je_need_int(r, at, in, "the tested value") % d == 0;
	}
	if (!strcmp(t, "sameas")) {
		if (!je_arg(a, 0, "other", &x))
			jr_err(r, at, "sameas needs a value");
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
			if (!je_arg(a, 0, NULL, &x))
				jr_err(r, at, "test '%s' needs an argument", t);
			return je_binop(r, at, cmp[i].op, in, x).u.b;
		}
	jr_err(r, at, "no test named '%s'", t);
}
