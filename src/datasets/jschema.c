/* jschema — see jschema.h. Recursive over the schema; paths in messages are
 * dotted from "$" ("$.items[2].name"). Depth is bounded (32) so a hostile
 * schema cannot exhaust the stack. */
#include "datasets/jschema.h"
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 32

static const char *const known[] = {
	"type", "properties", "required", "additionalProperties", "enum", "const", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "items", "minItems",
	"maxItems", "anyOf",
	/* annotations: no effect on validation */
	"description", "title", "default", "examples", "$schema", "$comment",
};
static const char *const types[] = {"object", "array", "string", "integer", "number", "boolean", "null"};

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t whylen, const char *fmt, ...)
{
	if (!why || !whylen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static bool is_count(const cJSON *v) { return cJSON_IsNumber(v) && v->valuedouble >= 0 && floor(v->valuedouble) == v->valuedouble; }

/* ---- schema check ---------------------------------------------------------- */

static int check(const cJSON *s, const char *path, int depth, char *why, size_t whylen)
{
	char sub[512];
	if (depth > MAX_DEPTH) {
		say(why, whylen, "%s: nested deeper than %d levels", path, MAX_DEPTH);
		return -EINVAL;
	}
	if (cJSON_IsBool(s))
		return 0; /* true: anything, false: nothing */
	if (!cJSON_IsObject(s)) {
		say(why, whylen, "%s: a schema must be an object", path);
		return -EINVAL;
	}
	const cJSON *k;
	cJSON_ArrayForEach(k, s) {
		if (!in_list(k->string, known, sizeof known / sizeof known[0])) {
			say(why, whylen, "%s.%s: keyword not supported (supported: type, properties, required, "
					 "additionalProperties, enum, const, minimum, maximum, exclusiveMinimum, "
					 "exclusiveMaximum, minLength, maxLength, pattern, items, minItems, maxItems, anyOf)",
			    path, k->string);
			return -EINVAL;
		}
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
	if (t) {
		bool ok = cJSON_IsString(t) && in_list(t->valuestring, types, 7);
		if (cJSON_IsArray(t)) {
			ok = cJSON_GetArraySize(t) > 0;
			const cJSON *e;
			cJSON_ArrayForEach(e, t) ok &= cJSON_IsString(e) && in_list(e->valuestring, types, 7);
		}
		if (!ok) {
			say(why, whylen, "%s.type: not a JSON Schema type name (or a list of them)", path);
			return -EINVAL;
		}
	}
	static const char *const counts[] = {"minLength", "maxLength", "minItems", "maxItems"};
	for (size_t i = 0; i < 4; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, counts[i]);
		if (v && !is_count(v)) {
			say(why, whylen, "%s.%s: not a non-negative integer", path, counts[i]);
			return -EINVAL;
		}
	}
	static const char *const nums[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
	for (size_t i = 0; i < 4; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, nums[i]);
		if (v && !cJSON_IsNumber(v)) {
			say(why, whylen, "%s.%s: not a number", path, nums[i]);
			return -EINVAL;
		}
	}
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(s, "enum");
	if (e && (!cJSON_IsArray(e) || cJSON_GetArraySize(e) == 0)) {
		say(why, whylen, "%s.enum: not a non-empty array", path);
		return -EINVAL;
	}
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
	if (pat) {
		regex_t re;
		if (!cJSON_IsString(pat) || regcomp(&re, pat->valuestring, REG_EXTENDED | REG_NOSUB) != 0) {
			say(why, whylen, "%s.pattern: not a POSIX extended regular expression", path);
			return -EINVAL;
		}
		regfree(&re);
	}
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
	if (req) {
		bool ok = cJSON_IsArray(req);
		const cJSON *r;
		cJSON_ArrayForEach(r, req) ok &= cJSON_IsString(r);
		if (!ok) {
			say(why, whylen, "%s.required: not an array of property names", path);
			return -EINVAL;
		}
	}
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
	if (props) {
		if (!cJSON_IsObject(props)) {
			say(why, whylen, "%s.properties: not an object", path);
			return -EINVAL;
		}
		const cJSON *p;
		cJSON_ArrayForEach(p, props) {
			snprintf(sub, sizeof sub, "%s.properties.%s", path, p->string);
			if (check(p, sub, depth + 1, why, whylen))
				return -EINVAL;
		}
	}
	const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
	if (ap) {
		snprintf(sub, sizeof sub, "%s.additionalProperties", path);
		if (check(ap, sub, depth + 1, why, whylen))
			return -EINVAL;
	}
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
	if (items) {
		snprintf(sub, sizeof sub, "%s.items", path);
		if (check(items, sub, depth + 1, why, whylen))
			return -EINVAL;
	}
	const cJSON *any = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
	if (any) {
		if (!cJSON_IsArray(any) || cJSON_GetArraySize(any) == 0) {
			say(why, whylen, "%s.anyOf: not a non-empty array of schemas", path);
			return -EINVAL;
		}
		int i = 0;
		const cJSON *a;
		cJSON_ArrayForEach(a, any) {
			snprintf(sub, sizeof sub, "%s.anyOf[%d]", path, i++);
			if (check(a, sub, depth + 1, why, whylen))
				return -EINVAL;
		}
	}
	return 0;
}

int jschema_check(const cJSON *schema, char *why, size_t whylen)
{
	return check(schema, "schema", 0, why, whylen);
}

/* ---- validation ------------------------------------------------------------ */

static bool type_is(const char *t, const cJSON *v)
{
	if (strcmp(t, "object") == 0)
		return cJSON_IsObject(v);
	if (strcmp(t, "array") == 0)
		return cJSON_IsArray(v);
	if (strcmp(t, "string") == 0)
		return cJSON_IsString(v);
	if (strcmp(t, "number") == 0)
		return cJSON_IsNumber(v);
	if (strcmp(t, "integer") == 0)
		return cJSON_IsNumber(v) && floor(v->valuedouble) == v->valuedouble && isfinite(v->valuedouble);
	if (strcmp(t, "boolean") == 0)
		return cJSON_IsBool(v);
	return cJSON_IsNull(v);
}

/* UTF-8 code points, as JSON Schema counts string length. */
static size_t utf8_len(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

static bool valid(const cJSON *s, const cJSON *v, const char *path, int depth, char *why, size_t whylen)
{
	char sub[512];
	if (cJSON_IsBool(s)) {
		if (cJSON_IsFalse(s))
			say(why, whylen, "%s: not allowed here", path);
		return cJSON_IsTrue(s);
	}
	if (depth > MAX_DEPTH) {
		say(why, whylen, "%s: nested deeper than %d levels", path, MAX_DEPTH);
		return false;
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
	if (cJSON_IsString(t) && !type_is(t->valuestring, v)) {
		say(why, whylen, "%s: not of type %s", path, t->valuestring);
		return false;
	}
	if (cJSON_IsArray(t)) {
		bool any = false;
		const cJSON *e;
		cJSON_ArrayForEach(e, t) any |= cJSON_IsString(e) && type_is(e->valuestring, v);
		if (!any) {
			say(why, whylen, "%s: not of any of the allowed types", path);
			return false;
		}
	}
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(s, "const");
	if (c && !cJSON_Compare(c, v, true)) {
		say(why, whylen, "%s: not the required constant", path);
		return false;
	}
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
	if (en) {
		bool found = false;
		const cJSON *e;
		cJSON_ArrayForEach(e, en) found |= cJSON_Compare(e, v, true);
		if (!found) {
			say(why, whylen, "%s: not one of the enum values", path);
			return false;
		}
	}
	if (cJSON_IsNumber(v)) {
		double x = v->valuedouble;
		const cJSON *lim;
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "minimum")) && x < lim->valuedouble) {
			say(why, whylen, "%s: %g is below the minimum %g", path, x, lim->valuedouble);
			return false;
		}
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "maximum")) && x > lim->valuedouble) {
			say(why, whylen, "%s: %g is above the maximum %g", path, x, lim->valuedouble);
			return false;
		}
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum")) && x <= lim->valuedouble) {
			say(why, whylen, "%s: %g is not above %g", path, x, lim->valuedouble);
			return false;
		}
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum")) && x >= lim->valuedouble) {
			say(why, whylen, "%s: %g is not below %g", path, x, lim->valuedouble);
			return false;
		}
	}
	if (cJSON_IsString(v)) {
		size_t n = utf8_len(v->valuestring);
		const cJSON *lim;
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "minLength")) && (double)n < lim->valuedouble) {
			say(why, whylen, "%s: shorter than %g characters", path, lim->valuedouble);
			return false;
		}
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "maxLength")) && (double)n > lim->valuedouble) {
			say(why, whylen, "%s: longer than %g characters", path, lim->valuedouble);
			return false;
		}
		const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
		if (cJSON_IsString(pat)) {
			regex_t re;
			if (regcomp(&re, pat->valuestring, REG_EXTENDED | REG_NOSUB) != 0) {
				say(why, whylen, "%s: the schema's pattern does not compile", path);
				return false;
			}
			int m = regexec(&re, v->valuestring, 0, NULL, 0);
			regfree(&re);
			if (m != 0) {
				say(why, whylen, "%s: does not match the pattern %s", path, pat->valuestring);
				return false;
			}
		}
	}
	if (cJSON_IsArray(v)) {
		int n = cJSON_GetArraySize(v);
		const cJSON *lim;
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "minItems")) && n < lim->valuedouble) {
			say(why, whylen, "%s: fewer than %g items", path, lim->valuedouble);
			return false;
		}
		if ((lim = cJSON_GetObjectItemCaseSensitive(s, "maxItems")) && n > lim->valuedouble) {
			say(why, whylen, "%s: more than %g items", path, lim->valuedouble);
			return false;
		}
		const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
		if (items) {
			int i = 0;
			const cJSON *e;
			cJSON_ArrayForEach(e, v) {
				snprintf(sub, sizeof sub, "%s[%d]", path, i++);
				if (!valid(items, e, sub, depth + 1, why, whylen))
					return false;
			}
		}
	}
	if (cJSON_IsObject(v)) {
		const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *r;
		cJSON_ArrayForEach(r, req) {
			if (cJSON_IsString(r) && !cJSON_GetObjectItemCaseSensitive(v, r->valuestring)) {
				say(why, whylen, "%s: the required property \"%s\" is missing", path, r->valuestring);
				return false;
			}
		}
		const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
		const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
		const cJSON *m;
		cJSON_ArrayForEach(m, v) {
			const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
			snprintf(sub, sizeof sub, "%s.%s", path, m->string);
			if (ps) {
				if (!valid(ps, m, sub, depth + 1, why, whylen))
					return false;
			} else if (cJSON_IsFalse(ap)) {
				say(why, whylen, "%s: property not allowed (additionalProperties is false)", sub);
				return false;
			} else if (cJSON_IsObject(ap) && !valid(ap, m, sub, depth + 1, why, whylen)) {
				return false;
			}
		}
	}
	const cJSON *any = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
	if (any) {
		const cJSON *a;
		cJSON_ArrayForEach(a, any) if (valid(a, v, path, depth + 1, NULL, 0)) return true;
		say(why, whylen, "%s: matches none of the anyOf schemas", path);
		return false;
	}
	return true;
}

bool jschema_validate(const cJSON *schema, const cJSON *value, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	return valid(schema, value, "$", 0, why, whylen);
}
