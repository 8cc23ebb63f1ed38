/* json — see json.h. */
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"

static void locate(const char *s, const char *at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *p = s; p < at && *p; p++) {
		if (*p == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

cJSON *json_parse_n(const char *s, size_t n, char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(s, n, &end, 0);
	if (!root && err) {
		int line, col;
		const char *at = end ? end : cJSON_GetErrorPtr();
		if (!at || at < s || at > s + n)
			at = s;
		locate(s, at, &line, &col);
		err_set(err, errlen, "line %d, column %d: invalid JSON", line, col);
	}
	return root;
}

cJSON *json_parse_file(const char *path, char *err, size_t errlen)
{
	size_t len;
	char *data = buf_load_file(path, &len);
	if (!data) {
		err_set(err, errlen, "%s: %s", path, errno == ENOMEM ? "out of memory" : strerror(errno));
		return NULL;
	}
	char inner[256];
	cJSON *root = json_parse_n(data, len, inner, sizeof inner);
	if (!root)
		err_set(err, errlen, "%s: %s", path, inner);
	free(data);
	return root;
}

const cJSON *json_path(const cJSON *root, const char *dotted)
{
	const cJSON *cur = root;
	const char *p = dotted;
	char key[128];
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof key)
			return NULL;
		memcpy(key, p, n);
		key[n] = 0;
		if (!cJSON_IsObject(cur))
			return NULL;
		cur = cJSON_GetObjectItemCaseSensitive(cur, key);
		p = dot ? dot + 1 : p + n;
	}
	return cur;
}

bool json_get_double(const cJSON *obj, const char *dotted, double *out)
{
	const cJSON *it = json_path(obj, dotted);
	if (!cJSON_IsNumber(it))
		return false;
	*out = it->valuedouble;
	return true;
}

bool json_get_i64(const cJSON *obj, const char *dotted, int64_t *out)
{
	double d;
	if (!json_get_double(obj, dotted, &d) || !isfinite(d) || d != floor(d) || fabs(d) > 9.0e15)
		return false;
	*out = (int64_t)d;
	return true;
}

bool json_get_bool(const cJSON *obj, const char *dotted, bool *out)
{
	const cJSON *it = json_path(obj, dotted);
	if (!cJSON_IsBool(it))
		return false;
	*out = cJSON_IsTrue(it);
	return true;
}

const char *json_get_str(const cJSON *obj, const char *dotted)
{
	const cJSON *it = json_path(obj, dotted);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

char *json_print(const cJSON *item) { return cJSON_PrintUnformatted(item); }

struct diff_walk {
	bool (*whole)(void *ctx, const char *key);
	void (*fn)(void *ctx, const char *key, const cJSON *a, const cJSON *b);
	void *ctx;
};

static void diff_walk(const struct diff_walk *w, const char *key, const cJSON *a, const cJSON *b)
{
	if (a && b && cJSON_Compare(a, b, true))
		return;
	bool whole = key[0] && w->whole && w->whole(w->ctx, key);
	/* an object on one side only is walked too, so that its leaves are named */
	if (!whole && (cJSON_IsObject(a) || !a) && (cJSON_IsObject(b) || !b) && (a || b)) {
		for (int pass = 0; pass < 2; pass++)
			for (const cJSON *it = (pass ? b : a) ? (pass ? b : a)->child : NULL; it; it = it->next) {
				const cJSON *other = cJSON_GetObjectItemCaseSensitive(pass ? a : b, it->string);
				if (pass == 1 && other)
					continue; /* seen in the first pass */
				char sub[256];
				snprintf(sub, sizeof sub, "%s%s%s", key, key[0] ? "." : "", it->string);
				diff_walk(w, sub, pass ? other : it, pass ? it : other);
			}
		return;
	}
	if (!whole && cJSON_IsArray(a) && cJSON_IsArray(b) && cJSON_GetArraySize(a) == cJSON_GetArraySize(b)) {
		int i = 0;
		for (const cJSON *x = a->child, *y = b->child; x && y; x = x->next, y = y->next, i++) {
			char sub[256];
			snprintf(sub, sizeof sub, "%s[%d]", key, i);
			diff_walk(w, sub, x, y);
		}
		return;
	}
	w->fn(w->ctx, key, a, b);
}

void json_diff(const cJSON *a, const cJSON *b, bool (*whole)(void *ctx, const char *key),
	       void (*fn)(void *ctx, const char *key, const cJSON *a, const cJSON *b), void *ctx)
{
	struct diff_walk w = {whole, fn, ctx};
	diff_walk(&w, "", a, b);
}

int json_check_keys(const cJSON *o, const char *where, const char *const *keys, const char *doc, char *err,
		    size_t errlen)
{
	if (!cJSON_IsObject(o))
		return err_fail(err, errlen, "%s must be a JSON object", where);
	for (const cJSON *k = o->child; k; k = k->next) {
		const char *const *q = keys;
		while (*q && strcmp(*q, k->string) != 0)
			q++;
		if (*q)
			continue;
		struct buf b;
		buf_init(&b);
		int rc = 0;
		for (q = keys; *q && rc == 0; q++)
			rc = buf_printf(&b, "%s%s", q == keys ? "" : ", ", *q);
		err_fail(err, errlen, "%s: unknown key \"%s\" (allowed: %s; see %s)", where, k->string,
			 b.data && rc == 0 ? b.data : "...", doc);
		buf_finish(&b);
		return -EINVAL;
	}
	return 0;
}
