/* toolcall — see toolcall.h. The set keeps the parsed lines; cases point
 * into them. */
#include "datasets/toolcall.h"
#include "core/err.h"
#include "core/buf.h"
#include "text/reply.h"
#include "core/json.h"
#include "datasets/jschema.h"
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct toolcall_set {
	cJSON **lines;
	struct toolcall_case *cases;
	size_t n, cap;
};

static const char *const case_keys[] = {"id", "prompt", "tools", "expect", "metadata"};

__attribute__((format(printf, 4, 5))) static void problem(struct buf *errs, const char *path, int line,
							   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (buf_printf(errs, "%s:%d: ", path, line) == 0 && buf_vprintf(errs, fmt, ap) == 0 && buf_puts(errs, "\n")) {
		/* out of memory: the message is shorter, never wrong */
	}
	va_end(ap);
}

/* The parameters schema of tool `name` in tools, or NULL. */
static const cJSON *tool_schema(const cJSON *tools, const char *name)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, tools) {
		const char *n = json_get_str(t, "function.name");
		if (n && strcmp(n, name) == 0) {
			const cJSON *p = json_path(t, "function.parameters");
			return p ? p : t; /* a tool without parameters: checked below */
		}
	}
	return NULL;
}

static bool check_case(const cJSON *o, const char *path, int line, struct buf *errs, struct toolcall_case *c)
{
	bool ok = true;
	const cJSON *k;
	cJSON_ArrayForEach(k, o) {
		bool known = false;
		for (size_t i = 0; i < sizeof case_keys / sizeof case_keys[0]; i++)
			known |= strcmp(k->string, case_keys[i]) == 0;
		if (!known) {
			problem(errs, path, line, "unknown key \"%s\"; allowed: id, prompt, tools, expect, metadata",
				k->string);
			ok = false;
		}
	}
	c->id = json_get_str(o, "id");
	c->prompt = json_get_str(o, "prompt");
	c->tools = cJSON_GetObjectItemCaseSensitive(o, "tools");
	c->expect_name = json_get_str(o, "expect.name");
	c->expect_args = json_path(o, "expect.arguments");
	c->line = line;
	if (!c->id || !*c->id) {
		problem(errs, path, line, "\"id\" must be a non-empty string");
		ok = false;
	}
	if (!c->prompt || !*c->prompt) {
		problem(errs, path, line, "\"prompt\" must be a non-empty string");
		ok = false;
	}
	if (!cJSON_IsArray(c->tools) || cJSON_GetArraySize(c->tools) == 0) {
		problem(errs, path, line, "\"tools\" must be a non-empty array of {\"type\": \"function\", "
					  "\"function\": {...}}");
		return false;
	}
	const cJSON *t;
	cJSON_ArrayForEach(t, c->tools) {
		const char *type = json_get_str(t, "type"), *name = json_get_str(t, "function.name");
		const cJSON *params = json_path(t, "function.parameters");
		char why[512];
		if (!type || strcmp(type, "function") != 0 || !name || !*name) {
			problem(errs, path, line, "each tool needs \"type\": \"function\" and a function.name");
			ok = false;
		} else if (!params || !cJSON_IsObject(params)) {
			problem(errs, path, line, "tool %s: function.parameters must be a JSON schema object", name);
			ok = false;
		} else if (jschema_check(params, why, sizeof why) != 0) {
			problem(errs, path, line, "tool %s: %s", name, why);
			ok = false;
		}
	}
	if (!c->expect_name || !cJSON_IsObject(c->expect_args)) {
		problem(errs, path, line, "\"expect\" must be {\"name\": TOOL, \"arguments\": {...}}");
		return false;
	}
	if (!ok)
		return false;
	c->schema = tool_schema(c->tools, c->expect_name);
	if (!c->schema) {
		problem(errs, path, line, "the expected tool \"%s\" is not among the offered tools", c->expect_name);
		return false;
	}
	char why[512];
	if (!jschema_validate(c->schema, c->expect_args, why, sizeof why)) {
		problem(errs, path, line, "the expected arguments do not validate against the tool's schema: %s",
			why);
		return false;
	}
	return true;
}

struct toolcall_set *toolcall_set_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		err_set(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct toolcall_set *s = calloc(1, sizeof *s);
	struct buf errs;
	buf_init(&errs);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0;
	while (s && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		size_t k = 0;
		while (k < (size_t)len && isspace((unsigned char)line[k]))
			k++;
		if (k == (size_t)len)
			continue;
		char jerr[128];
		cJSON *o = json_parse_n(line, (size_t)len, jerr, sizeof jerr);
		if (!cJSON_IsObject(o)) {
			problem(&errs, path, lineno, "not a JSON object (%s)", o ? "another JSON value" : jerr);
			cJSON_Delete(o);
			continue;
		}
		if (s->n == s->cap) {
			size_t nc = s->cap ? 2 * s->cap : 32;
			cJSON **nl = realloc(s->lines, nc * sizeof *nl);
			struct toolcall_case *ncs = nl ? realloc(s->cases, nc * sizeof *ncs) : NULL;
			if (nl)
				s->lines = nl;
			if (!ncs) {
				cJSON_Delete(o);
				toolcall_set_destroy(s);
				s = NULL;
				break;
			}
			s->cases = ncs;
			s->cap = nc;
		}
		struct toolcall_case c = {0};
		if (!check_case(o, path, lineno, &errs, &c)) {
			cJSON_Delete(o);
			continue;
		}
		for (size_t i = 0; i < s->n; i++)
			if (strcmp(s->cases[i].id, c.id) == 0) {
				problem(&errs, path, lineno, "duplicate id \"%s\" (first on line %d)", c.id, s->cases[i].line);
			}
		s->lines[s->n] = o;
		s->cases[s->n++] = c;
	}
	free(line);
	fclose(f);
	if (!s) {
		err_set(err, errlen, "out of memory");
	} else if (errs.len || s->n == 0) {
		err_set(err, errlen, "%s", errs.len ? errs.data : "");
		if (!errs.len)
			err_set(err, errlen, "%s: no cases (one JSON object per line expected)", path);
		else if (err[strlen(err) - 1] == '\n')
			err[strlen(err) - 1] = 0;
		toolcall_set_destroy(s);
		s = NULL;
	}
	buf_finish(&errs);
	return s;
}

void toolcall_set_destroy(struct toolcall_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		cJSON_Delete(s->lines[i]);
	free(s->lines);
	free(s->cases);
	free(s);
}

size_t toolcall_set_count(const struct toolcall_set *s) { return s->n; }
const struct toolcall_case *toolcall_set_case(const struct toolcall_set *s, size_t i) { return &s->cases[i]; }

/* Expected value against the given one: strings compare case-insensitively
 * after trimming spaces, numbers by value, anything else exactly. */
static bool value_matches(const cJSON *want, const cJSON *got)
{
	if (cJSON_IsString(want) && cJSON_IsString(got)) {
		const char *a = want->valuestring, *b = got->valuestring;
		while (isspace((unsigned char)*b))
			b++;
		size_t nb = strlen(b);
		while (nb && isspace((unsigned char)b[nb - 1]))
			nb--;
		return strlen(a) == nb && strncasecmp(a, b, nb) == 0;
	}
	if (cJSON_IsNumber(want) && cJSON_IsNumber(got))
		return want->valuedouble == got->valuedouble;
	return cJSON_Compare(want, got, true);
}

bool toolcall_grade(const struct toolcall_case *c, const char *name, const char *arguments, char *why, size_t whylen)
{
	if (!name || !*name) {
		snprintf(why, whylen, "no tool call");
		return false;
	}
	if (strcmp(name, c->expect_name) != 0) {
		snprintf(why, whylen, "called %.100s, expected %s", name, c->expect_name);
		return false;
	}
	char jerr[128];
	const char *a = arguments && *arguments ? arguments : "{}";
	cJSON *args = json_parse_n(a, strlen(a), jerr, sizeof jerr);
	bool ok = false;
	if (!cJSON_IsObject(args)) {
		snprintf(why, whylen, "the arguments are not a JSON object (%s)", args ? "another JSON value" : jerr);
	} else if (jschema_validate(c->schema, args, why, whylen)) {
		ok = true;
		const cJSON *w;
		cJSON_ArrayForEach(w, c->expect_args) {
			const cJSON *g = cJSON_GetObjectItemCaseSensitive(args, w->string);
			if (!g || !value_matches(w, g)) {
				char *want = cJSON_PrintUnformatted(w), *got = g ? cJSON_PrintUnformatted(g) : NULL;
				snprintf(why, whylen, "argument %s is %.80s, expected %.80s", w->string, got ? got : "missing",
					 want ? want : "?");
				free(want);
				free(got);
				ok = false;
				break;
			}
		}
	}
	cJSON_Delete(args);
	return ok;
}

/* The JSON object starting at p (balanced braces, strings respected); its length or 0. */
static size_t object_len(const char *p)
{
	int depth = 0;
	bool str = false;
	for (const char *q = p; *q; q++) {
		if (str) {
			if (*q == '\\' && q[1])
				q++;
			else if (*q == '"')
				str = false;
		} else if (*q == '"') {
			str = true;
		} else if (*q == '{') {
			depth++;
		} else if (*q == '}' && --depth == 0) {
			return (size_t)(q - p) + 1;
		}
	}
	return 0;
}

bool toolcall_from_text(const char *reply, char **name, char **arguments)
{
	const char *s = text_after_reasoning(reply ? reply : "");
	bool found = false;
	*name = *arguments = NULL;
	for (const char *p = strchr(s, '{'); p; p = strchr(p + 1, '{')) {
		size_t n = object_len(p);
		if (!n)
			continue;
		char jerr[64];
		cJSON *o = json_parse_n(p, n, jerr, sizeof jerr);
		const char *nm = o ? json_get_str(o, "name") : NULL;
		const cJSON *args = o ? cJSON_GetObjectItemCaseSensitive(o, "arguments") : NULL;
		if (!args && o)
			args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
		if (nm && (cJSON_IsObject(args) || cJSON_IsString(args))) {
			free(*name);
			free(*arguments);
			*name = strdup(nm);
			*arguments = cJSON_IsString(args) ? strdup(args->valuestring) : cJSON_PrintUnformatted(args);
			found = *name && *arguments;
			p += n - 1; /* the next candidate starts after this object */
		}
		cJSON_Delete(o);
	}
	if (!found) {
		free(*name);
		free(*arguments);
		*name = *arguments = NULL;
	}
	return found;
}
