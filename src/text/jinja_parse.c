/* jinja_parse — the recursive-descent parser: tokens to the statement and
 * expression tree of jinja_int.h, in the template's arena. Expression precedence
 * follows jinja2's parser; statements are closed by the end tags named at each
 * jp_body call. Nesting is bounded (MAX_DEPTH); errors unwind through jp_err. */
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
	jp_err(p, k->line, k->col, "expected %s, got '%s'", want, tok_desc(k));
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
	struct node *x = jp_alloc(p, sizeof *x);
	x->kind = kind;
	x->line = at->line;
	x->col = at->col;
	return x;
}

static void nvec_push(struct parser *p, struct nvec *v, struct node *x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4;
		struct node **nv = jp_alloc(p, cap * sizeof *nv);
		if (v->n)
			memcpy(nv, v->v, v->n * sizeof *nv);
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = x;
}

static struct jv str_lit(struct parser *p, const char *s, size_t n)
{
	struct jstr *j = jp_alloc(p, sizeof *j + n + 1);
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
		jp_err(p, cur(p)->line, cur(p)->col, "template nested too deeply");
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
			jp_err(p, cur(p)->line, cur(p)->col, "more than %d arguments", MAX_ARGS);
		if (is_op(cur(p), "*") || is_op(cur(p), "**"))
			jp_err(p, cur(p)->line, cur(p)->col, "*args and **kwargs in calls are not supported");
		const char *name = NULL;
		if (cur(p)->t == TK_NAME && is_op(peek(p, 1), "=")) {
			name = cur(p)->s;
			p->pos += 2;
		} else if (x->kids.n && kw[x->kids.n - 1]) {
			jp_err(p, cur(p)->line, cur(p)->col, "positional argument follows keyword argument");
		}
		kw[x->kids.n] = name;
		nvec_push(p, &x->kids, parse_expr(p, true));
	}
	p->pos++;
	x->kwnames = jp_alloc(p, (x->kids.n + 1) * sizeof *x->kwnames);
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
		char *j = jp_alloc(p, a + b + 2);
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
				jp_err(p, cur(p)->line, cur(p)->col, "tuple subscripts are not supported");
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
			jp_err(p, k->line, k->col, "you cannot chain multiple tests with is");
		struct node *arg = parse_postfix(p, parse_primary(p));
		nvec_push(p, &t->kids, arg);
		t->kwnames = jp_alloc(p, sizeof *t->kwnames);
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
		char *buf = jp_alloc(p, total + 1);
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
	const char *const *e = jp_body(p, &x->body, if_ends, "if", at->line, at->col);
	struct tok *k = cur(p);
	p->pos++;
	if (!strcmp(*e, "elif")) {
		nvec_push(p, &x->orelse, parse_if(p, k));
		return x;
	}
	if (!strcmp(*e, "else")) {
		end_block(p);
		jp_body(p, &x->orelse, endif_only, "if", at->line, at->col);
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
		jp_err(p, cur(p)->line, cur(p)->col, "recursive for loops are not supported");
	end_block(p);
	p->loop_depth++;
	const char *const *e = jp_body(p, &x->body, for_ends, "for", at->line, at->col);
	p->loop_depth--;
	p->pos++;
	if (!strcmp(*e, "else")) {
		end_block(p);
		jp_body(p, &x->orelse, endfor_only, "for", at->line, at->col);
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
			jp_err(p, cur(p)->line, cur(p)->col, "more than %d parameters", MAX_ARGS);
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
	x->kwnames = jp_alloc(p, (x->kids.n + 1) * sizeof *x->kwnames);
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
			jp_body(p, &x->body, endset_only, "set", at->line, at->col);
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
		jp_body(p, &x->body, endmacro_only, "macro", at->line, at->col);
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
			jp_err(p, at->line, at->col, "expected a call after {%% call %%}");
		end_block(p);
		int saved = p->loop_depth;
		p->loop_depth = 0;
		jp_body(p, &params->body, endcall_only, "call", at->line, at->col);
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
		jp_body(p, &x->body, endfilter_only, "filter", at->line, at->col);
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "generation")) {
		/* rendered as its body: output the statements in place */
		end_block(p);
		jp_body(p, body, endgen_only, "generation", at->line, at->col);
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "break") || !strcmp(w, "continue")) {
		if (!p->loop_depth)
			jp_err(p, at->line, at->col, "'%s' outside of a loop", w);
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
				jp_err(p, cur(p)->line, cur(p)->col, "more than %d assignments", MAX_ARGS);
			if (cur(p)->t != TK_NAME)
				unexpected(p, "a name to assign to");
			names[x->kids.n] = cur(p)->s;
			p->pos++;
			expect_op(p, "=");
			nvec_push(p, &x->kids, parse_expr(p, true));
		}
		x->kwnames = jp_alloc(p, (x->kids.n + 1) * sizeof *x->kwnames);
		memcpy(x->kwnames, names, x->kids.n * sizeof *names);
		end_block(p);
		jp_body(p, &x->body, endwith_only, "with", at->line, at->col);
		p->pos++;
		end_block(p);
	} else if (!strcmp(w, "include") || !strcmp(w, "extends") || !strcmp(w, "import") || !strcmp(w, "from") ||
		   !strcmp(w, "block") || !strcmp(w, "do") || !strcmp(w, "autoescape")) {
		jp_err(p, at->line, at->col, "the '%s' statement is not supported", w);
	} else {
		jp_err(p, at->line, at->col, "encountered unknown tag '%s'", w);
	}
	if (x)
		nvec_push(p, body, x);
	p->depth--;
}

/* Statements until EOF (ends == NULL) or until a block whose first name is in
 * ends; then cur() is that name and the match is returned. */
const char *const *jp_body(struct parser *p, struct nvec *body, const char *const *ends, const char *opener,
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
			jp_err(p, line, col, "unexpected end of template: the '%s' block opened here is never closed ('%s' expected)",
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
				jp_err(p, w->line, w->col, "unexpected '%s'%s%s%s", w->s, ends ? " (the innermost open block is '" : "",
				     ends ? opener : "", ends ? "')" : "");
			parse_statement(p, body);
		} else {
			unexpected(p, "template data or a tag");
		}
	}
}
