/* source — see source.h. A JSON array is cut into its records by a small
 * scanner (strings, escapes and nesting depth) that remembers the line where each
 * record starts, so a bad record is named by line; each record is then parsed on
 * its own with cJSON. */
#include "bench/source.h"
#include "core/err.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"

const char *source_role_name(enum source_role r)
{
	return r == SOURCE_SYSTEM ? "system" : r == SOURCE_USER ? "user" : "assistant";
}

void source_destroy(struct source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t j = 0; j < s->c[i].n; j++)
			free(s->c[i].m[j].text);
		free(s->c[i].m);
	}
	free(s->c);
	free(s);
}

size_t source_user_turns(const struct source_conv *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++)
		k += c->m[i].role == SOURCE_USER;
	return k;
}

char *source_first_prompt(const struct source_conv *c)
{
	const char *sys = NULL, *user = NULL;
	for (size_t i = 0; i < c->n && !user; i++) {
		if (c->m[i].role == SOURCE_SYSTEM && !sys)
			sys = c->m[i].text;
		else if (c->m[i].role == SOURCE_USER)
			user = c->m[i].text;
	}
	size_t n = (sys ? strlen(sys) + 2 : 0) + (user ? strlen(user) : 0) + 1;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%s%s%s", sys ? sys : "", sys ? "\n\n" : "", user ? user : "");
	return out;
}

/* ---- one record ---- */

static bool role_of(const char *s, bool sharegpt, enum source_role *r)
{
	static const struct { const char *name; enum source_role role; } roles[] = {
		{ "system", SOURCE_SYSTEM }, { "user", SOURCE_USER },   { "human", SOURCE_USER },
		{ "assistant", SOURCE_ASSISTANT }, { "gpt", SOURCE_ASSISTANT }, { "chatgpt", SOURCE_ASSISTANT },
		{ "bard", SOURCE_ASSISTANT }, { "bing", SOURCE_ASSISTANT }, { "model", SOURCE_ASSISTANT },
	};
	(void)sharegpt;
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
		if (strcmp(s, roles[i].name) == 0) {
			*r = roles[i].role;
			return true;
		}
	return false;
}

static int conv_push(struct source_conv *c, size_t *cap, enum source_role role, const char *text)
{
	if (c->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		struct source_msg *p = realloc(c->m, nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		c->m = p;
		*cap = nc;
	}
	char *t = strdup(text);
	if (!t)
		return -ENOMEM;
	c->m[c->n++] = (struct source_msg){ role, t };
	return 0;
}

static void conv_free(struct source_conv *c)
{
	for (size_t j = 0; j < c->n; j++)
		free(c->m[j].text);
	free(c->m);
	memset(c, 0, sizeof *c);
}

static const char expect_sharegpt[] =
	"expected {\"conversations\": [{\"from\": \"human\"|\"gpt\"|\"system\", \"value\": TEXT}, ...]}";
static const char expect_messages[] =
	"expected {\"messages\": [{\"role\": \"system\"|\"user\"|\"assistant\", \"content\": TEXT}, ...]}";

/* Parses one record into c. 0, -EINVAL (err says why, without the FILE:LINE prefix) or -ENOMEM. */
static int record_parse(const cJSON *o, struct source_conv *c, char *err, size_t errlen)
{
	size_t cap = 0;
	memset(c, 0, sizeof *c);
	if (!cJSON_IsObject(o)) {
		err_set(err, errlen, "not a JSON object; expected a ShareGPT record, {\"messages\": [...]} or "
				      "{\"prompt\": TEXT}");
		return -EINVAL;
	}
	const cJSON *conv = cJSON_GetObjectItemCaseSensitive(o, "conversations");
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(o, "messages");
	const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(o, "prompt");
	if (conv || msgs) {
		bool sg = conv != NULL;
		const cJSON *arr = sg ? conv : msgs;
		const char *kr = sg ? "from" : "role", *kt = sg ? "value" : "content";
		const char *expect = sg ? expect_sharegpt : expect_messages;
		if (!cJSON_IsArray(arr)) {
			err_set(err, errlen, "\"%s\" is not an array; %s", sg ? "conversations" : "messages", expect);
			return -EINVAL;
		}
		int i = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, arr)
		{
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, kr);
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, kt);
			enum source_role role;
			const char *why = NULL;
			if (!cJSON_IsObject(it))
				why = "is not an object";
			else if (!cJSON_IsString(r))
				why = sg ? "has no string \"from\"" : "has no string \"role\"";
			else if (!cJSON_IsString(t))
				why = sg ? "has no string \"value\"" : "has no string \"content\"";
			else if (!role_of(r->valuestring, sg, &role))
				why = "has an unknown role";
			if (why) {
				err_set(err, errlen, "%s[%d] %s%s%s%s; %s", sg ? "conversations" : "messages", i, why,
					 cJSON_IsString(r) && !strcmp(why, "has an unknown role") ? " \"" : "",
					 cJSON_IsString(r) && !strcmp(why, "has an unknown role") ? r->valuestring : "",
					 cJSON_IsString(r) && !strcmp(why, "has an unknown role") ? "\"" : "", expect);
				conv_free(c);
				return -EINVAL;
			}
			if (conv_push(c, &cap, role, t->valuestring) != 0) {
				conv_free(c);
				return -ENOMEM;
			}
			i++;
		}
		return 0;
	}
	if (prompt) {
		if (!cJSON_IsString(prompt)) {
			err_set(err, errlen, "\"prompt\" is not a string; expected {\"prompt\": TEXT}");
			return -EINVAL;
		}
		return conv_push(c, &cap, SOURCE_USER, prompt->valuestring);
	}
	err_set(err, errlen, "the record has none of \"conversations\", \"messages\", \"prompt\"; %s", expect_sharegpt);
	return -EINVAL;
}

/* ---- the file ---- */

static int add_record(struct source *s, size_t *cap, const char *text, size_t len, long line, char *err, size_t errlen)
{
	cJSON *o = cJSON_ParseWithLength(text, len);
	char why[512];
	struct source_conv c;
	int rc;
	if (!o) {
		snprintf(why, sizeof why, "not valid JSON; expected one record per line (ShareGPT, messages or prompt)");
		rc = -EINVAL;
	} else {
		rc = record_parse(o, &c, why, sizeof why);
	}
	cJSON_Delete(o);
	if (rc == -EINVAL) {
		err_set(err, errlen, "%s:%ld: %s", s->path, line, why);
		return rc;
	}
	if (rc) {
		err_set(err, errlen, "out of memory reading %s", s->path);
		return rc;
	}
	c.line = line;
	if (source_user_turns(&c) == 0) {
		conv_free(&c);
		s->skipped++;
		return 0;
	}
	if (s->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct source_conv *p = realloc(s->c, nc * sizeof *p);
		if (!p) {
			conv_free(&c);
			err_set(err, errlen, "out of memory reading %s", s->path);
			return -ENOMEM;
		}
		s->c = p;
		*cap = nc;
	}
	s->c[s->n++] = c;
	return 0;
}

/* Cuts a JSON array into records; each starts at depth 1 with '{'. */
static int load_array(struct source *s, const char *t, size_t len, char *err, size_t errlen)
{
	size_t cap = 0;
	long line = 1, rec_line = 0;
	int depth = 0;
	bool in_str = false, esc = false;
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		char ch = t[i];
		if (ch == '\n')
			line++;
		if (in_str) {
			if (esc)
				esc = false;
			else if (ch == '\\')
				esc = true;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"') {
			in_str = true;
		} else if (ch == '[' || ch == '{') {
			if (depth == 1) {
				start = i;
				rec_line = line;
			}
			depth++;
		} else if (ch == ']' || ch == '}') {
			depth--;
			if (depth < 0)
				break;
			if (depth == 1) {
				int rc = add_record(s, &cap, t + start, i + 1 - start, rec_line, err, errlen);
				if (rc)
					return rc;
			}
			if (depth == 0) {
				size_t rest = i + 1 + strspn(t + i + 1, " \t\r\n");
				if (rest != len) {
					err_set(err, errlen, "%s:%ld: text after the closing ']'; expected one JSON array",
						 s->path, line);
					return -EINVAL;
				}
				return 0;
			}
		} else if (depth == 1 && ch != ',' && ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n') {
			err_set(err, errlen, "%s:%ld: an array element that is not an object; expected [{record}, ...]",
				 s->path, line);
			return -EINVAL;
		}
	}
	err_set(err, errlen, "%s:%ld: the JSON array is not closed (truncated file?); expected [{record}, ...]", s->path,
		 line);
	return -EINVAL;
}

static int load_lines(struct source *s, const char *t, size_t len, char *err, size_t errlen)
{
	size_t cap = 0;
	long line = 0;
	for (size_t i = 0; i < len;) {
		size_t e = i;
		while (e < len && t[e] != '\n')
			e++;
		line++;
		if (strspn(t + i, " \t\r") < e - i) {
			int rc = add_record(s, &cap, t + i, e - i, line, err, errlen);
			if (rc)
				return rc;
		}
		i = e + 1;
	}
	return 0;
}


struct source *source_load(const char *path, char *err, size_t errlen)
{
	struct source *s = calloc(1, sizeof *s);
	if (!s) {
		err_set(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	struct stat st;
	bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	if (dir)
		snprintf(s->path, sizeof s->path, "%s/tasks.jsonl", path);
	else
		snprintf(s->path, sizeof s->path, "%s", path);
	size_t len = 0;
	char *t = buf_load_file(s->path, &len);
	int rc;
	if (!t) {
		err_set(err, errlen, "%s: cannot read the prompt file: %s%s", s->path, strerror(errno),
			 dir ? " (a dataset folder holds tasks.jsonl)" : "");
		rc = -ENOENT;
	} else {
		size_t lead = strspn(t, " \t\r\n");
		rc = t[lead] == '[' ? load_array(s, t, len, err, errlen) : load_lines(s, t, len, err, errlen);
		if (!rc && s->n == 0) {
			err_set(err, errlen, "%s: no record with a user turn (%zu skipped); nothing to send", s->path,
				 s->skipped);
			rc = -EINVAL;
		}
	}
	free(t);
	if (rc) {
		source_destroy(s);
		errno = -rc;
		return NULL;
	}
	return s;
}
