/* protocol — see protocol.h.
 *
 * Validation is by hand against the same key lists protocols/schema.json
 * documents (a unit test checks the two agree). Canonical JSON is built from
 * the validated struct, never from the input text, so formatting, key order and
 * omitted defaults do not change the hash. */
#include "eval/protocol.h"
#include "core/err.h"
#include "core/buf.h"
#include "core/json.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages are best effort: on allocation failure the text is shorter, never wrong. */
#define bprintf(...) do { if (buf_printf(__VA_ARGS__)) {} } while (0)

static const char *const top_keys[] = {"name",   "description", "conditions",   "datasets", "sampling",
				       "repeats", "concurrency", "attempts",   "timeout_s", "stall_s",
				       "shuffle_seed", "loop_stop", "analysis", NULL};
static const char *const cond_keys[] = {"name", "endpoint", "model", "template", NULL};
static const char *const tmpl_keys[] = {"source", "path", NULL};
static const char *const samp_keys[] = {"temperature", "top_p", "top_k", "seed", "max_tokens", "reasoning_max_tokens",
					"stop", NULL};
static const char *const anal_keys[] = {"tests", "alternative", "alpha", NULL};
static const char *const sources[] = {"chat", "raw", "jinja", "tokenizer_config", "gguf", NULL};
static const char *const known_tests[] = {"fisher", "mcnemar", "sign", "wilson", "welch", "bootstrap", NULL};
static const char *const alternatives[] = {"two-sided", "less", "greater", NULL};

#define PROTOCOL_DOC "protocols/schema.json"

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static int get_num(const cJSON *o, const char *where, const char *key, double min, double max, bool integer,
		   double *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return err_fail(err, errlen, "%s.%s must be a number", where, key);
	if (integer && v->valuedouble != floor(v->valuedouble))
		return err_fail(err, errlen, "%s.%s must be a whole number, got %g", where, key, v->valuedouble);
	if (v->valuedouble < min || v->valuedouble > max)
		return err_fail(err, errlen, "%s.%s = %g is impossible (allowed %g to %g)", where, key, v->valuedouble, min,
			    max);
	*out = v->valuedouble;
	return 0;
}

static int get_i64(const cJSON *o, const char *where, const char *key, double min, double max, int64_t *out,
		   char *err, size_t errlen)
{
	double d = (double)*out;
	int rc = get_num(o, where, key, min, max, true, &d, err, errlen);
	*out = (int64_t)d;
	return rc;
}

static int get_str(const cJSON *o, const char *where, const char *key, bool required, char **out, char *err,
		   size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v) {
		if (required)
			return err_fail(err, errlen, "%s.%s is missing (a string)", where, key);
		return 0;
	}
	if (!cJSON_IsString(v) || !*v->valuestring)
		return err_fail(err, errlen, "%s.%s must be a non-empty string", where, key);
	free(*out);
	*out = strdup(v->valuestring);
	return *out ? 0 : err_fail(err, errlen, "%s.%s: out of memory", where, key);
}

static char *resolve(const char *base_dir, const char *p)
{
	if (!base_dir || !*base_dir || p[0] == '/' || strcmp(base_dir, ".") == 0)
		return strdup(p);
	size_t n = strlen(base_dir) + strlen(p) + 2;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s/%s", base_dir, p);
	return s;
}

static int parse_condition(struct eval_protocol *p, const cJSON *c, int i, const char *base_dir, char *err,
			   size_t errlen)
{
	char where[48];
	snprintf(where, sizeof where, "conditions[%d]", i);
	struct eval_condition *k = &p->conditions[i];
	int rc = json_check_keys(c, where, cond_keys, PROTOCOL_DOC, err, errlen);
	if (!rc)
		rc = get_str(c, where, "name", true, &k->name, err, errlen);
	if (!rc)
		rc = get_str(c, where, "endpoint", true, &k->endpoint, err, errlen);
	if (!rc)
		rc = get_str(c, where, "model", true, &k->model, err, errlen);
	if (rc)
		return rc;
	if (strncmp(k->endpoint, "http://", 7) != 0 && strncmp(k->endpoint, "https://", 8) != 0)
		return err_fail(err, errlen, "%s.endpoint \"%s\" must start with http:// or https://", where, k->endpoint);
	size_t el = strlen(k->endpoint);
	while (el > 8 && k->endpoint[el - 1] == '/')
		k->endpoint[--el] = 0;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "template");
	char twhere[64];
	snprintf(twhere, sizeof twhere, "%s.template", where);
	if (t) {
		if ((rc = json_check_keys(t, twhere, tmpl_keys, PROTOCOL_DOC, err, errlen)) ||
		    (rc = get_str(t, twhere, "source", true, &k->template_source, err, errlen)) ||
		    (rc = get_str(t, twhere, "path", false, &k->template_path, err, errlen)))
			return rc;
		if (!in_list(sources, k->template_source))
			return err_fail(err, errlen, "%s.source \"%s\" is unknown (use chat, raw, jinja, tokenizer_config or gguf)",
				    twhere, k->template_source);
		bool needs_path = strcmp(k->template_source, "chat") != 0 && strcmp(k->template_source, "raw") != 0;
		if (needs_path != (k->template_path != NULL))
			return err_fail(err, errlen, "%s: source \"%s\" %s a \"path\"", twhere, k->template_source,
				    needs_path ? "needs" : "takes no");
		if (k->template_path) {
			char *r = resolve(base_dir, k->template_path);
			free(k->template_path);
			k->template_path = r;
			if (!r)
				return err_fail(err, errlen, "%s.path: out of memory", twhere);
		}
	} else {
		k->template_source = strdup("chat");
		if (!k->template_source)
			return err_fail(err, errlen, "%s: out of memory", twhere);
	}
	for (int j = 0; j < i; j++)
		if (strcmp(p->conditions[j].name, k->name) == 0)
			return err_fail(err, errlen, "%s.name \"%s\" is used twice; condition names must differ", where,
				    k->name);
	return k->template_source ? 0 : -ENOMEM;
}

struct eval_protocol *eval_protocol_parse(const cJSON *root, const char *base_dir, char *err, size_t errlen)
{
	struct eval_protocol *p = calloc(1, sizeof *p);
	if (!p) {
		err_fail(err, errlen, "out of memory");
		return NULL;
	}
	p->temperature = 0.7;
	p->top_p = 1.0;
	p->top_k = -1;
	p->sample_seed = -1;
	p->max_tokens = 4096;
	p->reasoning_max_tokens = 64000;
	p->repeats = 3;
	p->concurrency = 1;
	p->attempts = 3;
	p->timeout_s = 240;
	p->stall_s = 60;
	p->shuffle_seed = 1;
	p->loop_stop = 0;
	p->alpha = 0.05;
	int rc = json_check_keys(root, "protocol", top_keys, PROTOCOL_DOC, err, errlen);
	if (!rc)
		rc = get_str(root, "protocol", "name", true, &p->name, err, errlen);
	if (rc)
		goto fail;
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(root, "conditions");
	if (!cJSON_IsArray(conds) || cJSON_GetArraySize(conds) < 1 || cJSON_GetArraySize(conds) > EVAL_MAX_CONDITIONS) {
		rc = err_fail(err, errlen, "protocol.conditions must be an array of 1 to %d conditions", EVAL_MAX_CONDITIONS);
		goto fail;
	}
	for (const cJSON *c = conds->child; c; c = c->next) {
		if ((rc = parse_condition(p, c, p->n_conditions, base_dir, err, errlen)))
			goto fail;
		p->n_conditions++;
	}
	const cJSON *ds = cJSON_GetObjectItemCaseSensitive(root, "datasets");
	if (!cJSON_IsArray(ds) || cJSON_GetArraySize(ds) < 1 || cJSON_GetArraySize(ds) > EVAL_MAX_DATASETS) {
		rc = err_fail(err, errlen, "protocol.datasets must be an array of 1 to %d dataset paths", EVAL_MAX_DATASETS);
		goto fail;
	}
	for (const cJSON *d = ds->child; d; d = d->next) {
		if (!cJSON_IsString(d) || !*d->valuestring) {
			rc = err_fail(err, errlen, "protocol.datasets[%d] must be a path (string)", p->n_datasets);
			goto fail;
		}
		if (!(p->datasets[p->n_datasets++] = resolve(base_dir, d->valuestring))) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "sampling");
	if (s) {
		if ((rc = json_check_keys(s, "sampling", samp_keys, PROTOCOL_DOC, err, errlen)) ||
		    (rc = get_num(s, "sampling", "temperature", 0, 10, false, &p->temperature, err, errlen)) ||
		    (rc = get_num(s, "sampling", "top_p", 1e-9, 1, false, &p->top_p, err, errlen)) ||
		    (rc = get_i64(s, "sampling", "top_k", -1, 1e6, &p->top_k, err, errlen)) ||
		    (rc = get_i64(s, "sampling", "seed", 0, 9007199254740991.0, &p->sample_seed, err, errlen)) ||
		    (rc = get_i64(s, "sampling", "max_tokens", 1, 1e7, &p->max_tokens, err, errlen)) ||
		    (rc = get_i64(s, "sampling", "reasoning_max_tokens", 1, 1e7, &p->reasoning_max_tokens, err, errlen)))
			goto fail;
		if (p->top_k == 0) {
			rc = err_fail(err, errlen, "sampling.top_k = 0 is impossible; use -1 (or leave it out) for no limit");
			goto fail;
		}
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(s, "stop");
		if (st) {
			if (!cJSON_IsArray(st) || cJSON_GetArraySize(st) > EVAL_MAX_STOPS) {
				rc = err_fail(err, errlen, "sampling.stop must be an array of at most %d strings", EVAL_MAX_STOPS);
				goto fail;
			}
			for (const cJSON *e = st->child; e; e = e->next) {
				if (!cJSON_IsString(e) || !*e->valuestring) {
					rc = err_fail(err, errlen, "sampling.stop entries must be non-empty strings");
					goto fail;
				}
				p->stop[p->n_stop++] = strdup(e->valuestring);
			}
		}
	}
	if ((rc = get_i64(root, "protocol", "repeats", 1, 1000, &p->repeats, err, errlen)) ||
	    (rc = get_i64(root, "protocol", "concurrency", 1, 1024, &p->concurrency, err, errlen)) ||
	    (rc = get_i64(root, "protocol", "attempts", 1, 20, &p->attempts, err, errlen)) ||
	    (rc = get_num(root, "protocol", "timeout_s", 0.1, 86400, false, &p->timeout_s, err, errlen)) ||
	    (rc = get_num(root, "protocol", "stall_s", 0.1, 86400, false, &p->stall_s, err, errlen)) ||
	    (rc = get_i64(root, "protocol", "shuffle_seed", 0, 9007199254740991.0, &p->shuffle_seed, err, errlen)) ||
	    (rc = get_num(root, "protocol", "loop_stop", 0, 100, false, &p->loop_stop, err, errlen)))
		goto fail;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "analysis");
	if (a) {
		if ((rc = json_check_keys(a, "analysis", anal_keys, PROTOCOL_DOC, err, errlen)) ||
		    (rc = get_str(a, "analysis", "alternative", false, &p->alternative, err, errlen)) ||
		    (rc = get_num(a, "analysis", "alpha", 1e-12, 0.5, false, &p->alpha, err, errlen)))
			goto fail;
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "tests");
		if (t) {
			if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) > 8) {
				rc = err_fail(err, errlen, "analysis.tests must be an array of test names");
				goto fail;
			}
			for (const cJSON *e = t->child; e; e = e->next) {
				if (!cJSON_IsString(e) || !in_list(known_tests, e->valuestring)) {
					rc = err_fail(err, errlen,
						  "analysis.tests: unknown test %s%s%s (use fisher, mcnemar, sign, wilson, welch, bootstrap)",
						  cJSON_IsString(e) ? "\"" : "", cJSON_IsString(e) ? e->valuestring : "(not a string)",
						  cJSON_IsString(e) ? "\"" : "");
					goto fail;
				}
				p->tests[p->n_tests++] = strdup(e->valuestring);
			}
		}
	}
	if (!p->alternative)
		p->alternative = strdup("two-sided");
	if (!in_list(alternatives, p->alternative)) {
		rc = err_fail(err, errlen, "analysis.alternative \"%s\" is unknown (use two-sided, less or greater)",
			  p->alternative);
		goto fail;
	}
	if (p->n_tests == 0) {
		p->tests[p->n_tests++] = strdup("fisher");
		p->tests[p->n_tests++] = strdup("mcnemar");
		p->tests[p->n_tests++] = strdup("wilson");
	}
	if (p->stall_s > p->timeout_s) {
		rc = err_fail(err, errlen, "stall_s (%g) is longer than timeout_s (%g); a stall could never be seen",
			  p->stall_s, p->timeout_s);
		goto fail;
	}
	return p;
fail:
	eval_protocol_destroy(p);
	return NULL;
}

struct eval_protocol *eval_protocol_load(const char *path, char *err, size_t errlen)
{
	char jerr[512];
	cJSON *root = json_parse_file(path, jerr, sizeof jerr);
	if (!root) {
		err_set(err, errlen, "%s", jerr);
		return NULL;
	}
	char base[1024];
	snprintf(base, sizeof base, "%s", path);
	char *slash = strrchr(base, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(base, sizeof base, ".");
	char perr[768];
	struct eval_protocol *p = eval_protocol_parse(root, base, perr, sizeof perr);
	cJSON_Delete(root);
	if (!p)
		err_set(err, errlen, "%s: %s", path, perr);
	return p;
}

void eval_protocol_destroy(struct eval_protocol *p)
{
	if (!p)
		return;
	free(p->name);
	for (int i = 0; i < EVAL_MAX_CONDITIONS; i++) {
		struct eval_condition *c = &p->conditions[i];
		free(c->name);
		free(c->endpoint);
		free(c->model);
		free(c->template_source);
		free(c->template_path);
	}
	for (int i = 0; i < p->n_datasets; i++)
		free(p->datasets[i]);
	for (int i = 0; i < p->n_stop; i++)
		free(p->stop[i]);
	for (int i = 0; i < p->n_tests; i++)
		free(p->tests[i]);
	free(p->alternative);
	free(p);
}

static cJSON *condition_json(const struct eval_condition *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", c->name);
	cJSON_AddStringToObject(o, "endpoint", c->endpoint);
	cJSON_AddStringToObject(o, "model", c->model);
	cJSON *t = cJSON_AddObjectToObject(o, "template");
	cJSON_AddStringToObject(t, "source", c->template_source);
	if (c->template_path)
		cJSON_AddStringToObject(t, "path", c->template_path);
	return o;
}

char *eval_protocol_canonical(const struct eval_protocol *p, int cond)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "name", p->name);
	cJSON *cs = cJSON_AddArrayToObject(o, "conditions");
	for (int i = 0; i < p->n_conditions; i++)
		if (cond < 0 || cond == i)
			cJSON_AddItemToArray(cs, condition_json(&p->conditions[i]));
	cJSON *ds = cJSON_AddArrayToObject(o, "datasets");
	for (int i = 0; i < p->n_datasets; i++)
		cJSON_AddItemToArray(ds, cJSON_CreateString(p->datasets[i]));
	cJSON *s = cJSON_AddObjectToObject(o, "sampling");
	cJSON_AddNumberToObject(s, "temperature", p->temperature);
	cJSON_AddNumberToObject(s, "top_p", p->top_p);
	cJSON_AddNumberToObject(s, "top_k", (double)p->top_k);
	if (p->sample_seed >= 0) /* only when set: the configurations of runs without one keep their hash */
		cJSON_AddNumberToObject(s, "seed", (double)p->sample_seed);
	cJSON_AddNumberToObject(s, "max_tokens", (double)p->max_tokens);
	cJSON_AddNumberToObject(s, "reasoning_max_tokens", (double)p->reasoning_max_tokens);
	cJSON *st = cJSON_AddArrayToObject(s, "stop");
	for (int i = 0; i < p->n_stop; i++)
		cJSON_AddItemToArray(st, cJSON_CreateString(p->stop[i]));
	cJSON_AddNumberToObject(o, "repeats", (double)p->repeats);
	cJSON_AddNumberToObject(o, "concurrency", (double)p->concurrency);
	cJSON_AddNumberToObject(o, "attempts", (double)p->attempts);
	cJSON_AddNumberToObject(o, "timeout_s", p->timeout_s);
	cJSON_AddNumberToObject(o, "stall_s", p->stall_s);
	cJSON_AddNumberToObject(o, "shuffle_seed", (double)p->shuffle_seed);
	cJSON_AddNumberToObject(o, "loop_stop", p->loop_stop);
	cJSON *a = cJSON_AddObjectToObject(o, "analysis");
	cJSON *t = cJSON_AddArrayToObject(a, "tests");
	for (int i = 0; i < p->n_tests; i++)
		cJSON_AddItemToArray(t, cJSON_CreateString(p->tests[i]));
	cJSON_AddStringToObject(a, "alternative", p->alternative);
	cJSON_AddNumberToObject(a, "alpha", p->alpha);
	char *out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return out;
}

int eval_protocol_warnings(const struct eval_protocol *p, char *out, size_t cap)
{
	struct buf b;
	buf_init(&b);
	int n = 0;
	if (p->temperature == 0) {
		bprintf(&b, "%stemperature 0 is greedy decoding: a model that starts repeating itself cannot "
				 "leave the loop; 0.7 is the default\n", "");
		n++;
	}
	if (p->reasoning_max_tokens < 64000) {
		bprintf(&b, "reasoning_max_tokens %lld is below 64000: reasoning tasks may be cut off "
				 "mid-thought and scored as truncated\n", (long long)p->reasoning_max_tokens);
		n++;
	}
	if (p->repeats < 3) {
		bprintf(&b, "repeats %lld: a single run cannot separate a difference from sampling noise; "
				 "use 3 or more\n", (long long)p->repeats);
		n++;
	}
	if (p->loop_stop == 0 && p->temperature == 0) {
		bprintf(&b, "loop_stop is off with greedy decoding: a looping reply runs to max_tokens\n");
		n++;
	}
	if (out && cap)
		snprintf(out, cap, "%s", b.data ? b.data : "");
	buf_finish(&b);
	return n;
}

int64_t eval_protocol_max_tokens(const struct eval_protocol *p, bool reasoning)
{
	return reasoning ? p->reasoning_max_tokens : p->max_tokens;
}
