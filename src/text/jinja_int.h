/* jinja_int — what the parts of the Jinja engine share: value and node types,
 * the lexer's tokens and parser state, the render state, and the functions one
 * part calls in another. Private to src/text/jinja*.c; the public face is jinja.h.
 *
 * Prefixes, one per part: ju_ UTF-8, jv_ values, jr_ render state (arena, string
 * builders, scopes, errors), jl_ lexer, jp_ parser, je_ evaluator, jf_ filters and
 * tests. Errors inside the parser and the evaluator unwind with longjmp to the
 * public entry point (jp_err, jr_err); everything between allocates only in the
 * template's or the render's arena, so nothing leaks on the way. */
#ifndef SIXI_TEXT_JINJA_INT_H
#define SIXI_TEXT_JINJA_INT_H
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "text/jinja.h"

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

/* ---- lexer tokens and parser state ---- */

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

/* ---- render state ---- */

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

/* json.dumps options */
struct jsonopt {
	bool ensure_ascii, sort_keys;
	const char *indent; /* NULL: single line */
	const char *item_sep, *key_sep;
};

/* a call's arguments */
struct args {
	int n;                       /* all arguments */
	struct jv v[MAX_ARGS];
	const char *kw[MAX_ARGS];    /* NULL for positional */
};

/* ---- UTF-8, values, render state, Python semantics, str/repr, json.dumps (jinja_value.c) ---- */

size_t ju_len(const char *s, size_t n); /* code points */
size_t ju_off(const char *s, size_t n, size_t k);
bool ju_valid(const char *s, size_t n);
int ju_put(char *o, uint32_t cp);
size_t ju_ws_at(const char *s, size_t n, size_t i);
size_t ju_ws_before(const char *s, size_t i);
__attribute__((noreturn, format(printf, 3, 4))) void jr_err(struct rctx *r, const struct node *at, const char *fmt, ...);
void *jr_alloc(struct rctx *r, size_t n);
void jr_put(struct rctx *r, struct sb *b, const char *s, size_t n);
void jr_puts(struct rctx *r, struct sb *b, const char *s);
struct jv jv_str(struct rctx *r, const char *s, size_t n);
struct jv jv_sb(struct rctx *r, struct sb *b);
struct jv jv_int(int64_t i);
struct jv jv_float(double f);
struct jv jv_bool(bool b);
struct jv jv_none(void);
struct jv jv_undef(struct rctx *r, const char *fmt, ...);
struct jv jv_list(struct rctx *r, size_t cap);
void jv_list_push(struct rctx *r, struct jlist *l, struct jv x);
struct jv jv_dict(struct rctx *r, int t);
struct jv *jv_dict_find(struct jdict *d, struct jv k);
struct jv *jv_dict_find_s(struct jdict *d, const char *k);
void jv_dict_set(struct rctx *r, struct jdict *d, struct jv k, struct jv v);
void jv_dict_set_s(struct rctx *r, struct jdict *d, const char *k, struct jv v);
struct scope *jr_scope_new(struct rctx *r, struct scope *parent);
struct jv *jr_scope_find(struct scope *s, const char *name);
void jr_scope_set(struct rctx *r, struct scope *s, const char *name, struct jv v);
const char *jv_type_name(struct jv v);
bool jv_truthy(struct jv v);
bool jv_is_num(struct jv v);
double jv_num_f(struct jv v);
int64_t jv_num_i(struct jv v);
bool jv_eq(struct jv a, struct jv b);
int jv_cmp(struct rctx *r, const struct node *at, struct jv a, struct jv b, const char *op);
void jv_put_str(struct rctx *r, struct sb *b, struct jv v);
void jv_put_repr(struct rctx *r, struct sb *b, struct jv v);
struct jv jv_to_str(struct rctx *r, struct jv v);
void jv_json_dump(struct rctx *r, const struct node *at, struct sb *b, struct jv v, const struct jsonopt *o, int level);
struct jv jv_html_escape(struct rctx *r, struct jv v);
struct jv jv_str_strip(struct rctx *r, struct jv s, const struct jstr *chars, bool left, bool right);
struct jv jv_str_replace(struct rctx *r, struct jv s, struct jv old, struct jv new_, int64_t count);
struct jv jv_str_split(struct rctx *r, struct jv s, struct jv sep, int64_t maxsplit, bool from_right);
struct jv jv_str_case(struct rctx *r, struct jv s, int mode);
struct jv jv_str_format(struct rctx *r, const struct node *at, struct jv fmt, const struct args *a);
struct jlist *jv_split_lines(struct rctx *r, const char *p, size_t n);

/* ---- lexer (jinja_lex.c) ---- */

__attribute__((noreturn, format(printf, 4, 5))) void jp_err(struct parser *p, int line, int col, const char *fmt, ...);
void *jp_alloc(struct parser *p, size_t n);
void jl_lex(struct parser *p);

/* ---- parser (jinja_parse.c) ---- */

const char *const *jp_body(struct parser *p, struct nvec *body, const char *const *ends, const char *opener,
				     int line, int col);

/* ---- evaluator (jinja_eval.c) ---- */

int je_npos(const struct args *a);
bool je_arg(const struct args *a, int pos, const char *name, struct jv *out);
struct jv je_arg_or(const struct args *a, int pos, const char *name, struct jv dflt);
void je_need_str(struct rctx *r, const struct node *at, struct jv v, const char *what);
int64_t je_need_int(struct rctx *r, const struct node *at, struct jv v, const char *what);
struct jlist *je_iterate(struct rctx *r, const struct node *at, struct jv v);
struct jv je_get_attr(struct rctx *r, const struct node *at, struct jv obj, const char *name);
struct jv je_get_item(struct rctx *r, const struct node *at, struct jv obj, struct jv key);
struct jv je_concat(struct rctx *r, struct jv a, struct jv b);
struct jv je_repeat(struct rctx *r, const struct node *at, struct jv seq, int64_t times);
bool je_contains(struct rctx *r, const struct node *at, struct jv container, struct jv x);
struct jv je_str_mod(struct rctx *r, const struct node *at, struct jv fmt, struct jv arg);
struct jv je_binop(struct rctx *r, const struct node *at, int op, struct jv a, struct jv b);
struct jv je_call_method(struct rctx *r, const struct node *at, struct func *f, const struct args *a);
void je_exec_body(struct rctx *r, struct nvec *body, struct scope *s);

/* ---- filters and tests (jinja_filters.c) ---- */

struct jv jf_filter(struct rctx *r, const struct node *at, const char *f, struct jv in, const struct args *a);
bool jf_test(struct rctx *r, const struct node *at, const char *t, struct jv in, const struct args *a);

#endif
