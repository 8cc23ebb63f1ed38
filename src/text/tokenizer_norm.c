/* tokenizer_norm — tokenizer.json normalizers (see tokenizer_norm.h). A normalizer is
 * flattened into a list of steps at load; applying it runs each step from one malloc'd
 * buffer into the next. Unicode work is in unicode_norm.c. */
#include "text/tokenizer_norm.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/err.h"
#include "core/json.h"
#include "text/unicode.h"
#include "text/unicode_norm.h"

enum step_kind { STEP_NFC, STEP_NFD, STEP_NFKC, STEP_NFKD, STEP_LOWERCASE, STEP_STRIP, STEP_REPLACE, STEP_PREPEND };

struct step {
	enum step_kind kind;
	bool left, right;   /* Strip */
	char *pattern;      /* Replace: the String pattern (non-empty) */
	size_t pattern_len;
	char *content;      /* Replace: the replacement; Prepend: the prefix */
	size_t content_len;
};

struct tok_norm {
	struct step *step;
	size_t n, cap;
};

static const char supported[] = "supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Sequence";

void tok_norm_destroy(struct tok_norm *nm)
{
	if (!nm)
		return;
	for (size_t i = 0; i < nm->n; i++) {
		free(nm->step[i].pattern);
		free(nm->step[i].content);
	}
	free(nm->step);
	free(nm);
}

size_t tok_norm_steps(const struct tok_norm *nm) { return nm ? nm->n : 0; }

static int push_step(struct tok_norm *nm, struct step s)
{
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? 2 * nm->cap : 4;
		struct step *nv = realloc(nm->step, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		nm->step = nv;
		nm->cap = cap;
	}
	nm->step[nm->n++] = s;
	return 0;
}

static char *dup_str(const char *s, size_t *len)
{
	*len = strlen(s);
	char *d = malloc(*len + 1);
	if (d)
		memcpy(d, s, *len + 1);
	return d;
}

/* Appends the steps of one normalizer object; where names its place ("normalizer.normalizers[1]"). */
static int parse_node(const cJSON *node, const char *where, struct tok_norm *nm, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		enum step_kind kind;
	} unicode_forms[] = {{"NFC", STEP_NFC}, {"NFD", STEP_NFD}, {"NFKC", STEP_NFKC}, {"NFKD", STEP_NFKD}};
	const char *type = cJSON_IsObject(node) ? json_get_str(node, "type") : NULL;
	struct step s = {0};
	if (!type) {
		err_set(err, errlen, "%s: not an object with a \"type\" (%s)", where, supported);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof unicode_forms / sizeof unicode_forms[0]; i++)
		if (strcmp(type, unicode_forms[i].name) == 0)
			return push_step(nm, (struct step){.kind = unicode_forms[i].kind});
	if (strcmp(type, "Lowercase") == 0)
		return push_step(nm, (struct step){.kind = STEP_LOWERCASE});
	if (strcmp(type, "Strip") == 0) {
		s.kind = STEP_STRIP;
		s.left = s.right = true; /* the library's defaults */
		json_get_bool(node, "strip_left", &s.left);
		json_get_bool(node, "strip_right", &s.right);
		return push_step(nm, s);
	}
	if (strcmp(type, "Sequence") == 0) {
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(node, "normalizers"), *it;
		if (!cJSON_IsArray(list)) {
			err_set(err, errlen, "%s: Sequence without a \"normalizers\" array", where);
			return -EINVAL;
		}
		int i = 0, rc = 0;
		cJSON_ArrayForEach(it, list) {
			char sub[256];
			snprintf(sub, sizeof sub, "%.200s.normalizers[%d]", where, i++);
			if ((rc = parse_node(it, sub, nm, err, errlen)))
				return rc;
		}
		return 0;
	}
	if (strcmp(type, "Prepend") == 0) {
		const char *p = json_get_str(node, "prepend");
		if (!p) {
			err_set(err, errlen, "%s: Prepend without a \"prepend\" string", where);
			return -EINVAL;
		}
		s.kind = STEP_PREPEND;
		if (!(s.content = dup_str(p, &s.content_len)))
			return -ENOMEM;
		int rc = push_step(nm, s);
		if (rc)
			free(s.content);
		return rc;
	}
	if (strcmp(type, "Replace") == 0) {
		const char *pat = json_get_str(node, "pattern.String"), *content = json_get_str(node, "content");
		if (json_path(node, "pattern.Regex")) {
			err_set(err, errlen, "%s: Replace with a Regex pattern is not supported (only {\"String\": ...} "
				"patterns)", where);
			return -EINVAL;
		}
		if (!pat || !*pat || !content) {
			err_set(err, errlen, "%s: Replace needs a non-empty \"pattern\": {\"String\": ...} and a \"content\" "
				"string", where);
			return -EINVAL;
		}
		s.kind = STEP_REPLACE;
		s.pattern = dup_str(pat, &s.pattern_len);
		s.content = dup_str(content, &s.content_len);
		int rc = s.pattern && s.content ? push_step(nm, s) : -ENOMEM;
		if (rc) {
			free(s.pattern);
			free(s.content);
		}
		return rc;
	}
	err_set(err, errlen, "%s: type '%s' is not supported (%s)", where, type, supported);
	return -EINVAL;
}

int tok_norm_from_json(const struct cJSON *node, struct tok_norm **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!node || cJSON_IsNull(node))
		return 0;
	struct tok_norm *nm = calloc(1, sizeof *nm);
	if (!nm)
		return -ENOMEM;
	int rc = parse_node(node, "normalizer", nm, err, errlen);
	if (rc == -ENOMEM)
		err_set(err, errlen, "normalizer: out of memory");
	if (rc) {
		tok_norm_destroy(nm);
		return rc;
	}
	*out = nm;
	return 0;
}

/* ---- the steps: each reads s[0..n) and writes a new malloc'd *out ---- */

static int strip(const struct step *st, const char *s, size_t n, char **out, size_t *out_len)
{
	size_t a = 0, b = n;
	uint32_t cp;
	size_t k;
	while (st->left && a < b && (k = unicode_utf8_decode(s + a, b - a, &cp)) && unicode_is_space(cp))
		a += k;
	while (st->right && b > a) {
		size_t p = b - 1;
		while (p > a && ((unsigned char)s[p] & 0xc0) == 0x80)
			p--;
		if (!unicode_utf8_decode(s + p, b - p, &cp) || !unicode_is_space(cp))
			break;
		b = p;
	}
	char *o = malloc(b - a + 1);
	if (!o)
		return -ENOMEM;
	memcpy(o, s + a, b - a);
	o[b - a] = 0;
	*out = o;
	*out_len = b - a;
	return 0;
}

static int replace(const struct step *st, const char *s, size_t n, char **out, size_t *out_len)
{
	size_t hits = 0;
	for (const char *p = s, *end = s + n; (p = memmem(p, (size_t)(end - p), st->pattern, st->pattern_len));
	     p += st->pattern_len)
		hits++;
	size_t len = n - hits * st->pattern_len + hits * st->content_len;
	char *o = malloc(len + 1);
	if (!o)
		return -ENOMEM;
	size_t w = 0, i = 0;
	while (i < n) {
		const char *p = memmem(s + i, n - i, st->pattern, st->pattern_len);
		size_t stop = p ? (size_t)(p - s) : n;
		memcpy(o + w, s + i, stop - i);
		w += stop - i;
		if (!p)
			break;
		memcpy(o + w, st->content, st->content_len);
		w += st->content_len;
		i = stop + st->pattern_len;
	}
	o[w] = 0;
	*out = o;
	*out_len = w;
	return 0;
}

static int prepend(const struct step *st, const char *s, size_t n, char **out, size_t *out_len)
{
	size_t len = n ? n + st->content_len : 0; /* an empty string stays empty */
	char *o = malloc(len + 1);
	if (!o)
		return -ENOMEM;
	if (n) {
		memcpy(o, st->content, st->content_len);
		memcpy(o + st->content_len, s, n);
	}
	o[len] = 0;
	*out = o;
	*out_len = len;
	return 0;
}

static int run_step(const struct step *st, const char *s, size_t n, char **out, size_t *out_len)
{
	switch (st->kind) {
	case STEP_NFC: return unicode_normalize(UNICODE_NFC, s, n, out, out_len);
	case STEP_NFD: return unicode_normalize(UNICODE_NFD, s, n, out, out_len);
	case STEP_NFKC: return unicode_normalize(UNICODE_NFKC, s, n, out, out_len);
	case STEP_NFKD: return unicode_normalize(UNICODE_NFKD, s, n, out, out_len);
	case STEP_LOWERCASE: return unicode_lowercase(s, n, out, out_len);
	case STEP_STRIP: return strip(st, s, n, out, out_len);
	case STEP_REPLACE: return replace(st, s, n, out, out_len);
	case STEP_PREPEND: return prepend(st, s, n, out, out_len);
	}
	return -EINVAL;
}

int tok_norm_apply(const struct tok_norm *nm, const char *s, size_t n, char **out, size_t *out_len)
{
	char *cur = malloc(n + 1);
	size_t len = n;
	int rc = 0;
	*out = NULL;
	*out_len = 0;
	if (!cur)
		return -ENOMEM;
	memcpy(cur, s, n);
	cur[n] = 0;
	if (unicode_utf8_valid_prefix(s, n) != n)
		rc = -EILSEQ;
	for (size_t i = 0; nm && i < nm->n && !rc; i++) {
		char *next;
		size_t next_len;
		rc = run_step(&nm->step[i], cur, len, &next, &next_len);
		if (!rc) {
			free(cur);
			cur = next;
			len = next_len;
		}
	}
	if (rc) {
		free(cur);
		return rc;
	}
	*out = cur;
	*out_len = len;
	return 0;
}
