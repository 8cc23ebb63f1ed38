/* jinja — the engine's public entry points (jinja.h): parse, render, load a
 * template's source. The work is in the parts that jinja_int.h ties together:
 * jinja_lex.c (source to tokens), jinja_parse.c (tokens to a tree),
 * jinja_eval.c (the tree walk), jinja_filters.c (filters and tests) and
 * jinja_value.c (values, strings, scopes, the render arena).
 *
 * Shape: the source is normalised (\r\n and \r become \n, one trailing newline
 * dropped), cut into tokens the way jinja2's lexer does (lstrip_blocks and
 * trim_blocks applied while lexing), parsed into a tree in the template's arena,
 * and evaluated per render with every value in a per-render arena freed in one
 * go. Errors inside the parser and the evaluator unwind with longjmp to the
 * entry points here; this is safe because nothing between holds memory outside
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
#include "core/err.h"

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

/* ---- public API ---- */

struct jinja_template *jinja_parse(const char *src, size_t n, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!src || !ju_valid(src, n)) {
		if (err && errlen)
			err_set(err, errlen, "template is not valid UTF-8 text");
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
			err_set(err, errlen, "out of memory");
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
	jl_lex(p);
	jp_body(p, &t->body, NULL, "", 0, 0);
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
		jr_err(r, NULL, "context value %s is nested too deeply", path);
	if (cJSON_IsNull(j))
		return jv_none();
	if (cJSON_IsBool(j))
		return jv_bool(cJSON_IsTrue(j));
	if (cJSON_IsNumber(j)) {
		double d = j->valuedouble;
		/* JSON numbers without a fraction become int, as Python's json does */
		if (d == floor(d) && fabs(d) < 9007199254740992.0 && !(d == 0 && signbit(d)))
			return jv_int((int64_t)d);
		return jv_float(d);
	}
	if (cJSON_IsString(j)) {
		size_t n = strlen(j->valuestring);
		if (!ju_valid(j->valuestring, n))
			jr_err(r, NULL, "context value %s is not valid UTF-8 text; convert it to UTF-8 first", path);
		return jv_str(r, j->valuestring, n);
	}
	if (cJSON_IsArray(j)) {
		struct jv out = jv_list(r, 0);
		int i = 0;
		for (const cJSON *c = j->child; c; c = c->next, i++) {
			snprintf(path + used, plen - used, "[%d]", i);
			jv_list_push(r, out.u.l, from_json(r, c, path, plen, depth + 1));
			path[used] = 0;
		}
		return out;
	}
	if (cJSON_IsObject(j)) {
		struct jv out = jv_dict(r, T_DICT);
		for (const cJSON *c = j->child; c; c = c->next) {
			const char *k = c->string ? c->string : "";
			snprintf(path + used, plen - used, "%s%s", used ? "." : "", k);
			if (!ju_valid(k, strlen(k)))
				jr_err(r, NULL, "a key in context value %.*s is not valid UTF-8 text", (int)used, path);
			jv_dict_set(r, out.u.d, jv_str(r, k, strlen(k)), from_json(r, c, path, plen, depth + 1));
			path[used] = 0;
		}
		return out;
	}
	jr_err(r, NULL, "context value %s has an unsupported JSON type", path);
}

static int render(const struct jinja_template *t, const cJSON *context, bool fixed, int64_t now_s, struct buf *out,
		  char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!t || !out || (context && !cJSON_IsObject(context))) {
		if (err && errlen)
			err_set(err, errlen, "template render needs a template and a JSON object of variables");
		return -EINVAL;
	}
	struct rctx *r = calloc(1, sizeof *r);
	if (!r) {
		if (err && errlen)
			err_set(err, errlen, "out of memory");
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
	r->root = jr_scope_new(r, NULL);
	struct sb *top = jr_alloc(r, sizeof *top);
	jr_put(r, top, "", 0);
	r->out = top;
	if (context) {
		char path[512];
		for (const cJSON *c = context->child; c; c = c->next) {
			snprintf(path, sizeof path, "%s", c->string ? c->string : "");
			if (!ju_valid(path, strlen(path)))
				jr_err(r, NULL, "a context variable name is not valid UTF-8 text");
			size_t kn = strlen(path);
			char *name = jr_alloc(r, kn + 1);
			memcpy(name, path, kn);
			jr_scope_set(r, r->root, name, from_json(r, c, path, sizeof path, 0));
		}
	}
	/* apply_chat_template always passes these */
	if (!jr_scope_find(r->root, "tools"))
		jr_scope_set(r, r->root, "tools", jv_none());
	if (!jr_scope_find(r->root, "documents"))
		jr_scope_set(r, r->root, "documents", jv_none());
	if (!jr_scope_find(r->root, "add_generation_prompt"))
		jr_scope_set(r, r->root, "add_generation_prompt", jv_bool(false));
	je_exec_body(r, &((struct jinja_template *)t)->body, r->root);
	if (buf_append(out, top->p, top->n) != 0) {
		if (err && errlen)
			err_set(err, errlen, "out of memory");
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
			err_set(err, errlen, "chat_template lists named templates but none is called \"default\"");
			return NULL;
		}
	} else {
		err_set(err, errlen, "no chat_template string or list in the tokenizer config");
		return NULL;
	}
	char *out = strdup(src);
	if (!out) {
		err_set(err, errlen, "out of memory");
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
	size_t len;
	char *text = buf_load_file(path, &len);
	if (!text) {
		if (errno == ENOMEM)
			err_set(err, errlen, "out of memory");
		else if (errno == EIO)
			err_set(err, errlen, "%s: read failed", path);
		else
			err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	size_t pl = strlen(path);
	if (pl >= 5 && !strcmp(path + pl - 5, ".json")) {
		char jerr[256];
		cJSON *cfg = json_parse_n(text, len, jerr, sizeof jerr);
		free(text);
		if (!cfg) {
			err_set(err, errlen, "%s: %s", path, jerr);
			return NULL;
		}
		char e2[256];
		char *src = jinja_source_from_hf_config(cfg, n, e2, sizeof e2);
		if (!src) {
			err_set(err, errlen, "%s: %s", path, e2);
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
