/* gate — see gate.h. Sections: the protocol, one request, the three kinds of
 * gate, the report, the command. */
#include "eval/gate.h"
#include "core/args.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/err.h"
#include "grade/grade.h"
#include "datasets/needle.h"
#include "datasets/task.h"
#include "datasets/toolcall.h"
#include "net/http.h"
#include "net/openai.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the protocol ------------------------------------------------------------ */

enum gate_kind { GATE_DATASET, GATE_TOOL_CALLS, GATE_NEEDLE };

#define GATE_MAX 16
#define GATE_MAX_POINTS 16

struct gate {
	char *name;
	enum gate_kind kind;
	char *path;                       /* dataset or tool-call set, resolved */
	int64_t tasks;                    /* dataset: how many (0 = all) */
	int64_t min_passed;               /* -1 when min_rate is used */
	double min_rate;                  /* fraction in [0, 1]; -1 when min_passed is used */
	bool text_calls;                  /* tool_calls: accept a call written as JSON text */
	int64_t tokens[GATE_MAX_POINTS];  /* needle: context lengths, tokens */
	int n_tokens;
	double depths[GATE_MAX_POINTS];   /* needle: depths in [0, 1] */
	int n_depths;
	int64_t trials;                   /* needle: prompts per (length, depth) */
	struct eval_dataset *dataset;     /* loaded at protocol load */
	struct toolcall_set *toolset;
	size_t n_items;                   /* items the gate grades */
};

struct gate_protocol {
	char *name;
	char *endpoint, *model;
	int64_t max_tokens, reasoning_max_tokens;
	double temperature;
	double timeout_s;
	int64_t seed;                     /* -1: none given */
	struct gate gates[GATE_MAX];
	int n;
};

static const char *const top_keys[] = {"name", "description", "endpoint", "model", "max_tokens",
				       "reasoning_max_tokens", "temperature", "timeout_s", "seed", "gates", NULL};
static const char *const gate_keys[] = {"name", "kind", "description", "dataset", "tasks", "min_passed", "min_rate",
					"text_calls", "context_tokens", "depths", "trials", NULL};

#define GATE_DOC "protocols/README-gate.md"

/* A number field: absent leaves *out; present must be a number in [min, max] (whole when integer). */
static int num(const cJSON *o, const char *where, const char *key, double min, double max, bool integer, double *out,
	       char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max ||
	    (integer && floor(v->valuedouble) != v->valuedouble))
		return err_fail(err, errlen, "%s: \"%s\" must be %s from %g to %g", where, key,
				   integer ? "a whole number" : "a number", min, max);
	*out = v->valuedouble;
	return 0;
}

static char *resolve(const char *base_dir, const char *p)
{
	size_t n = strlen(base_dir) + strlen(p) + 2;
	char *s = malloc(n);
	if (s) {
		if (p[0] == '/' || !*base_dir)
			snprintf(s, n, "%s", p);
		else
			snprintf(s, n, "%s/%s", base_dir, p);
	}
	return s;
}

static int parse_points(const cJSON *o, const char *where, const char *key, double min, double max, bool integer,
			double *out, int *n, char *err, size_t errlen)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 || cJSON_GetArraySize(a) > GATE_MAX_POINTS)
		return err_fail(err, errlen, "%s: \"%s\" must be an array of 1 to %d numbers", where, key,
				   GATE_MAX_POINTS);
	*n = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, a) {
		if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max ||
		    (integer && floor(v->valuedouble) != v->valuedouble))
			return err_fail(err, errlen, "%s: every entry of \"%s\" must be %s from %g to %g", where, key,
					   integer ? "a whole number" : "a number", min, max);
		out[(*n)++] = v->valuedouble;
	}
	return 0;
}

static int parse_gate(struct gate_protocol *p, const cJSON *g, int i, const char *base_dir, char *err, size_t errlen)
{
	char where[160];
	snprintf(where, sizeof where, "gates[%d]", i);
	int rc = json_check_keys(g, where, gate_keys, GATE_DOC, err, errlen);
	if (rc)
		return rc;
	struct gate *G = &p->gates[i];
	const char *name = json_get_str(g, "name"), *kind = json_get_str(g, "kind");
	if (!name || !*name || strlen(name) > 64 || strpbrk(name, " \t\n"))
		return err_fail(err, errlen, "%s: \"name\" must be a short word (no spaces)", where);
	snprintf(where, sizeof where, "gate %s", name);
	for (int k = 0; k < i; k++)
		if (strcmp(p->gates[k].name, name) == 0)
			return err_fail(err, errlen, "%s: the name is used twice; gate names must differ", where);
	if (!(G->name = strdup(name)))
		return -ENOMEM;
	if (!kind || (strcmp(kind, "dataset") && strcmp(kind, "tool_calls") && strcmp(kind, "needle")))
		return err_fail(err, errlen, "%s: \"kind\" must be \"dataset\", \"tool_calls\" or \"needle\"", where);
	G->kind = !strcmp(kind, "dataset") ? GATE_DATASET : !strcmp(kind, "tool_calls") ? GATE_TOOL_CALLS : GATE_NEEDLE;
	bool has_path = cJSON_GetObjectItemCaseSensitive(g, "dataset") != NULL;
	if (G->kind != GATE_NEEDLE && !json_get_str(g, "dataset"))
		return err_fail(err, errlen, "%s: \"dataset\" (a path) is required for kind %s", where, kind);
	if (G->kind == GATE_NEEDLE && has_path)
		return err_fail(err, errlen, "%s: a needle gate generates its prompts; remove \"dataset\"", where);
	if (G->kind != GATE_DATASET && cJSON_GetObjectItemCaseSensitive(g, "tasks"))
		return err_fail(err, errlen, "%s: \"tasks\" is for dataset gates", where);
	if (G->kind != GATE_TOOL_CALLS && cJSON_GetObjectItemCaseSensitive(g, "text_calls"))
		return err_fail(err, errlen, "%s: \"text_calls\" is for tool_calls gates", where);
	if (G->kind != GATE_NEEDLE && (cJSON_GetObjectItemCaseSensitive(g, "context_tokens") ||
				       cJSON_GetObjectItemCaseSensitive(g, "depths") ||
				       cJSON_GetObjectItemCaseSensitive(g, "trials")))
		return err_fail(err, errlen, "%s: context_tokens, depths and trials are for needle gates", where);

	double d = 0, trials = 1;
	char lerr[4096];
	if ((rc = num(g, where, "tasks", 1, 1e6, true, &d, err, errlen)))
		return rc;
	G->tasks = (int64_t)d;
	if (G->kind == GATE_DATASET) {
		if (!(G->path = resolve(base_dir, json_get_str(g, "dataset"))))
			return -ENOMEM;
		if (!(G->dataset = eval_dataset_load(G->path, lerr, sizeof lerr)))
			return err_fail(err, errlen, "%s: the dataset does not load: %s", where, lerr);
		size_t n = eval_dataset_count(G->dataset);
		if (G->tasks > (int64_t)n)
			return err_fail(err, errlen, "%s: \"tasks\" is %lld but %s has %zu", where,
					   (long long)G->tasks, G->path, n);
		G->n_items = G->tasks ? (size_t)G->tasks : n;
	} else if (G->kind == GATE_TOOL_CALLS) {
		if (!(G->path = resolve(base_dir, json_get_str(g, "dataset"))))
			return -ENOMEM;
		if (!(G->toolset = toolcall_set_load(G->path, lerr, sizeof lerr)))
			return err_fail(err, errlen, "%s: the tool-call set does not load: %s", where, lerr);
		G->n_items = toolcall_set_count(G->toolset);
		bool tc = false;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, "text_calls");
		if (v && !json_get_bool(g, "text_calls", &tc))
			return err_fail(err, errlen, "%s: \"text_calls\" must be true or false", where);
		G->text_calls = tc;
	} else {
		double pts[GATE_MAX_POINTS];
		if ((rc = parse_points(g, where, "context_tokens", 64, 2000000, true, pts, &G->n_tokens, err, errlen)))
			return rc;
		for (int k = 0; k < G->n_tokens; k++)
			G->tokens[k] = (int64_t)pts[k];
		if ((rc = parse_points(g, where, "depths", 0, 1, false, G->depths, &G->n_depths, err, errlen)) ||
		    (rc = num(g, where, "trials", 1, 1000, true, &trials, err, errlen)))
			return rc;
		G->trials = (int64_t)trials;
		G->n_items = (size_t)(G->n_tokens * G->n_depths) * (size_t)G->trials;
	}
	bool has_min = cJSON_GetObjectItemCaseSensitive(g, "min_passed") != NULL;
	bool has_rate = cJSON_GetObjectItemCaseSensitive(g, "min_rate") != NULL;
	if (has_min == has_rate)
		return err_fail(err, errlen, "%s: give exactly one threshold: \"min_passed\" (a count) or \"min_rate\" "
						"(a fraction from 0 to 1)", where);
	G->min_passed = -1;
	G->min_rate = -1;
	if (has_min) {
		if ((rc = num(g, where, "min_passed", 0, (double)G->n_items, true, &d, err, errlen)))
			return err_fail(err, errlen, "%s: \"min_passed\" must be a whole number from 0 to %zu (the "
							"gate grades %zu items)", where, G->n_items, G->n_items);
		G->min_passed = (int64_t)d;
	} else if ((rc = num(g, where, "min_rate", 0, 1, false, &G->min_rate, err, errlen))) {
		return rc;
	}
	return 0;
}

struct gate_protocol *gate_protocol_load(const char *path, char *err, size_t errlen)
{
	char jerr[512];
	cJSON *root = json_parse_file(path, jerr, sizeof jerr);
	if (!root) {
		err_fail(err, errlen, "%s", jerr);
		return NULL;
	}
	struct gate_protocol *p = calloc(1, sizeof *p);
	char *base = strdup(path);
	int rc = p && base ? 0 : -ENOMEM;
	if (rc)
		goto out;
	char *slash = strrchr(base, '/');
	if (slash)
		*slash = 0;
	else
		base[0] = 0;
	if ((rc = json_check_keys(root, path, top_keys, GATE_DOC, err, errlen)))
		goto out;
	const char *name = json_get_str(root, "name");
	p->name = strdup(name ? name : "gate");
	p->endpoint = json_get_str(root, "endpoint") ? strdup(json_get_str(root, "endpoint")) : NULL;
	p->model = strdup(json_get_str(root, "model") ? json_get_str(root, "model") : "default");
	double mt = 4096, rmt = 64000, temp = 0, tmo = 600, seed = -1;
	if ((rc = num(root, path, "max_tokens", 1, 1e7, true, &mt, err, errlen)) ||
	    (rc = num(root, path, "reasoning_max_tokens", 1, 1e7, true, &rmt, err, errlen)) ||
	    (rc = num(root, path, "temperature", 0, 10, false, &temp, err, errlen)) ||
	    (rc = num(root, path, "timeout_s", 1, 86400, false, &tmo, err, errlen)) ||
	    (rc = num(root, path, "seed", 0, 9007199254740991.0, true, &seed, err, errlen)))
		goto out;
	p->max_tokens = (int64_t)mt;
	p->reasoning_max_tokens = (int64_t)rmt;
	p->temperature = temp;
	p->timeout_s = tmo;
	p->seed = (int64_t)seed;
	const cJSON *gates = cJSON_GetObjectItemCaseSensitive(root, "gates");
	if (!cJSON_IsArray(gates) || cJSON_GetArraySize(gates) < 1 || cJSON_GetArraySize(gates) > GATE_MAX) {
		rc = err_fail(err, errlen, "%s: \"gates\" must be an array of 1 to %d gates", path, GATE_MAX);
		goto out;
	}
	const cJSON *g;
	cJSON_ArrayForEach(g, gates) {
		if ((rc = parse_gate(p, g, p->n, base, err, errlen))) {
			p->n++; /* what was parsed of it is freed with the rest */
			goto out;
		}
		p->n++;
	}
out:
	if (rc == -ENOMEM)
		err_fail(err, errlen, "out of memory");
	free(base);
	cJSON_Delete(root);
	if (rc) {
		gate_protocol_destroy(p);
		return NULL;
	}
	return p;
}

void gate_protocol_destroy(struct gate_protocol *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		free(p->gates[i].name);
		free(p->gates[i].path);
		eval_dataset_destroy(p->gates[i].dataset);
		toolcall_set_destroy(p->gates[i].toolset);
	}
	free(p->name);
	free(p->endpoint);
	free(p->model);
	free(p);
}

int gate_protocol_count(const struct gate_protocol *p) { return p->n; }
const char *gate_protocol_gate_name(const struct gate_protocol *p, int i) { return p->gates[i].name; }

/* ---- one request ----------------------------------------------------------------- */

#define MAX_CALLS 8

struct reply {
	struct buf content, reasoning;
	struct buf call_name[MAX_CALLS], call_args[MAX_CALLS];
	int n_calls;
	char error[300]; /* "" on success */
};

static void reply_init(struct reply *r)
{
	memset(r, 0, sizeof *r);
	buf_init(&r->content);
	buf_init(&r->reasoning);
	for (int i = 0; i < MAX_CALLS; i++) {
		buf_init(&r->call_name[i]);
		buf_init(&r->call_args[i]);
	}
}

static void reply_finish(struct reply *r)
{
	buf_finish(&r->content);
	buf_finish(&r->reasoning);
	for (int i = 0; i < MAX_CALLS; i++) {
		buf_finish(&r->call_name[i]);
		buf_finish(&r->call_args[i]);
	}
}

static void add_text(struct buf *b, const char *s)
{
	if (buf_puts(b, s) != 0)
		return; /* out of memory: the reply is cut and its grade fails on its own */
}

static void add_str(struct buf *b, const cJSON *o, const char *key)
{
	const char *s = json_get_str(o, key);
	if (s)
		add_text(b, s);
}

/* One message (message of a whole body, or delta of a chunk) into r. */
static void take(struct reply *r, const cJSON *m)
{
	add_str(&r->content, m, "content");
	add_str(&r->reasoning, m, "reasoning_content");
	add_str(&r->reasoning, m, "reasoning");
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), *c;
	int pos = 0;
	cJSON_ArrayForEach(c, tc) {
		int64_t idx = pos++;
		(void)json_get_i64(c, "index", &idx);
		if (idx < 0 || idx >= MAX_CALLS)
			continue;
		if (idx >= r->n_calls)
			r->n_calls = (int)idx + 1;
		add_str(&r->call_name[idx], c, "function.name");
		const cJSON *a = json_path(c, "function.arguments");
		if (cJSON_IsString(a)) {
			add_str(&r->call_args[idx], c, "function.arguments");
		} else if (cJSON_IsObject(a)) {
			char *s = cJSON_PrintUnformatted(a);
			if (s)
				add_text(&r->call_args[idx], s);
			free(s);
		}
	}
}

static void take_object(struct reply *r, const cJSON *o, bool streamed)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (e && !r->error[0]) {
		const char *msg = cJSON_IsString(e) ? e->valuestring : json_get_str(e, "message");
		snprintf(r->error, sizeof r->error, "the server sent an error: %.200s", msg ? msg : "(no message)");
		return;
	}
	const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
	const cJSON *m = choice ? cJSON_GetObjectItemCaseSensitive(choice, streamed ? "delta" : "message") : NULL;
	if (m)
		take(r, m);
}

/* The whole response body: a JSON object (stream off) or SSE "data:" lines. */
static void parse_body(struct reply *r, const char *body, size_t n)
{
	size_t i = 0;
	while (i < n && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r'))
		i++;
	char jerr[128];
	if (i < n && body[i] == '{') {
		cJSON *o = json_parse_n(body + i, n - i, jerr, sizeof jerr);
		if (o)
			take_object(r, o, false);
		else
			snprintf(r->error, sizeof r->error, "malformed JSON response: %s", jerr);
		cJSON_Delete(o);
		return;
	}
	bool any = false;
	while (i < n) {
		const char *line = body + i, *nl = memchr(line, '\n', n - i);
		size_t len = nl ? (size_t)(nl - line) : n - i;
		i += len + 1;
		if (len < 5 || strncmp(line, "data:", 5) != 0)
			continue;
		const char *d = line + 5;
		size_t dl = len - 5;
		while (dl && (*d == ' ')) {
			d++;
			dl--;
		}
		while (dl && (d[dl - 1] == '\r' || d[dl - 1] == ' '))
			dl--;
		if (dl == 6 && strncmp(d, "[DONE]", 6) == 0)
			break;
		cJSON *o = json_parse_n(d, dl, jerr, sizeof jerr);
		if (!o) {
			snprintf(r->error, sizeof r->error, "malformed stream event: %s", jerr);
			return;
		}
		any = true;
		take_object(r, o, true);
		cJSON_Delete(o);
	}
	if (!any && !r->error[0])
		snprintf(r->error, sizeof r->error, "the response held no completion");
}

struct target {
	const struct gate_protocol *p;
	const char *url_api;
	const char *model;
	int64_t requests, api_errors;
};

static void ask(struct target *S, const char *prompt, const cJSON *tools, int64_t max_tokens, struct reply *r)
{
	reply_init(r);
	char *extra = NULL;
	if (tools) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToObject(x, "tools", cJSON_Duplicate(tools, true));
		extra = cJSON_PrintUnformatted(x);
		cJSON_Delete(x);
	}
	struct openai_request req = {
		.api = OPENAI_CHAT, .model = S->model, .prompt = prompt, .max_tokens = max_tokens,
		.temperature = S->p->temperature, .top_p = -1, .top_k = -1, .seed = -1, .stream = true,
		.include_usage = true, .extra_json = extra,
	};
	struct buf body, resp;
	buf_init(&body);
	buf_init(&resp);
	int status = 0;
	char err[512];
	S->requests++;
	if (openai_request_body(&req, &body) != 0) {
		snprintf(r->error, sizeof r->error, "cannot build the request body");
	} else if (http_fetch(S->url_api, body.data, (int64_t)(S->p->timeout_s * 1000), &resp, &status, err,
			      sizeof err) != 0) {
		snprintf(r->error, sizeof r->error, "%.280s", err);
	} else if (status != 200) {
		snprintf(r->error, sizeof r->error, "HTTP %d: %.200s", status, resp.data ? resp.data : "");
	} else {
		parse_body(r, resp.data ? resp.data : "", resp.len);
	}
	if (r->error[0])
		S->api_errors++;
	for (char *q = r->error; *q; q++)
		if (*q == '\n' || *q == '\r')
			*q = ' ';
	buf_finish(&body);
	buf_finish(&resp);
	free(extra);
}

/* ---- the gates -------------------------------------------------------------------- */

struct tally {
	int64_t passed, failed, api_errors, environment;
	char first_problem[400]; /* why the first item did not pass */
};

static void note(struct tally *t, const char *id, const char *why)
{
	if (!t->first_problem[0])
		snprintf(t->first_problem, sizeof t->first_problem, "%.80s: %.300s", id, why);
}

static void run_dataset(struct target *S, struct grader **g, const struct gate *G, struct tally *t)
{
	size_t n = eval_dataset_count(G->dataset);
	const struct eval_task **order = malloc(n * sizeof *order);
	if (!order) {
		note(t, G->name, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = eval_dataset_task(G->dataset, i);
	/* the same tasks on every machine: sorted by id, then a seeded shuffle */
	eval_tasks_shuffle(order, n, S->p->seed >= 0 ? S->p->seed : 0, 0);
	for (size_t i = 0; i < G->n_items; i++) {
		const struct eval_task *task = order[i];
		struct reply r;
		ask(S, task->prompt, NULL, task->reasoning ? S->p->reasoning_max_tokens : S->p->max_tokens, &r);
		if (r.error[0]) {
			t->api_errors++;
			note(t, task->id, r.error);
		} else {
			if (!*g)
				*g = grader_create(NULL, NULL);
			struct grade_result gr;
			if (!*g || grade_completion(*g, task, r.content.data ? r.content.data : "", &gr) != 0) {
				t->environment++;
				note(t, task->id, "out of memory");
			} else if (gr.status == GRADE_PASS) {
				t->passed++;
			} else if (gr.status == GRADE_ENVIRONMENT) {
				t->environment++;
				note(t, task->id, gr.detail);
			} else {
				t->failed++;
				note(t, task->id, gr.detail);
			}
		}
		reply_finish(&r);
	}
	free(order);
}

static void run_tool_calls(struct target *S, const struct gate *G, struct tally *t)
{
	for (size_t i = 0; i < G->n_items; i++) {
		const struct toolcall_case *c = toolcall_set_case(G->toolset, i);
		struct reply r;
		ask(S, c->prompt, c->tools, S->p->max_tokens, &r);
		char why[600];
		if (r.error[0]) {
			t->api_errors++;
			note(t, c->id, r.error);
		} else if (r.n_calls > 0) {
			if (toolcall_grade(c, r.call_name[0].data, r.call_args[0].data, why, sizeof why))
				t->passed++;
			else {
				t->failed++;
				note(t, c->id, why);
			}
		} else {
			char *name = NULL, *args = NULL;
			if (G->text_calls && toolcall_from_text(r.content.data ? r.content.data : "", &name, &args) &&
			    toolcall_grade(c, name, args, why, sizeof why)) {
				t->passed++;
			} else {
				if (!name)
					snprintf(why, sizeof why, "no tool call in the reply%s",
						 G->text_calls ? " (structured or as JSON text)" : "");
				t->failed++;
				note(t, c->id, why);
			}
			free(name);
			free(args);
		}
		reply_finish(&r);
	}
}

static void run_needle(struct target *S, const struct gate *G, uint64_t seed, struct tally *t)
{
	uint64_t k = 0;
	for (int a = 0; a < G->n_tokens; a++) {
		for (int b = 0; b < G->n_depths; b++) {
			for (int64_t trial = 0; trial < G->trials; trial++, k++) {
				struct needle_spec sp = {.context_tokens = G->tokens[a], .depth = G->depths[b],
							 .seed = seed * 1000003u + k};
				struct needle_case nc;
				char id[96];
				snprintf(id, sizeof id, "%lld tokens, depth %.2f", (long long)G->tokens[a], G->depths[b]);
				if (needle_make(&sp, &nc) != 0) {
					t->environment++;
					note(t, id, "cannot build the prompt (out of memory)");
					continue;
				}
				struct reply r;
				ask(S, nc.prompt, NULL, S->p->max_tokens, &r);
				if (r.error[0]) {
					t->api_errors++;
					note(t, id, r.error);
				} else if (needle_check(&nc, r.content.data ? r.content.data : "")) {
					t->passed++;
				} else {
					char why[200];
					snprintf(why, sizeof why, "the code %s is not in the reply", nc.answer);
					t->failed++;
					note(t, id, why);
				}
				reply_finish(&r);
				needle_case_finish(&nc);
			}
		}
	}
}

/* ---- the report ------------------------------------------------------------------- */

static bool gate_passes(const struct gate *G, const struct tally *t, int64_t *need)
{
	int64_t n = (int64_t)G->n_items;
	*need = G->min_passed >= 0 ? G->min_passed : (int64_t)ceil(G->min_rate * (double)n - 1e-9);
	return t->passed >= *need;
}

int gate_run(const struct gate_protocol *p, const struct gate_overrides *o, FILE *out, bool *all_passed, char *err,
	     size_t errlen)
{
	*all_passed = false;
	const char *endpoint = o->url ? o->url : p->endpoint;
	if (!endpoint || strncmp(endpoint, "http", 4) != 0)
		return err_fail(err, errlen, "give the server's base URL with --url (e.g. http://127.0.0.1:8080) "
						"or \"endpoint\" in the protocol");
	int only = -1;
	if (o->only) {
		for (int i = 0; i < p->n; i++)
			if (strcmp(p->gates[i].name, o->only) == 0)
				only = i;
		if (only < 0)
			return err_fail(err, errlen, "the protocol has no gate named \"%s\"", o->only);
	}
	char url[1200];
	size_t el = strlen(endpoint);
	while (el && endpoint[el - 1] == '/')
		el--;
	snprintf(url, sizeof url, "%.*s%s", (int)el, endpoint, openai_api_path(OPENAI_CHAT));
	uint64_t seed = o->needle_seed >= 0 ? (uint64_t)o->needle_seed
			: p->seed >= 0     ? (uint64_t)p->seed
					   : (uint64_t)(clock_now_ns() / 1000) % 1000000007u;
	struct target S = {.p = p, .url_api = url, .model = o->model ? o->model : p->model};
	struct grader *g = NULL;
	cJSON *js = o->json ? cJSON_CreateObject() : NULL, *jg = js ? cJSON_AddArrayToObject(js, "gates") : NULL;
	if (js) {
		cJSON_AddStringToObject(js, "protocol", p->name);
		cJSON_AddStringToObject(js, "endpoint", endpoint);
		cJSON_AddStringToObject(js, "model", S.model);
		cJSON_AddNumberToObject(js, "needle_seed", (double)seed);
	} else {
		fprintf(out, "gate %s: %s, model %s, needle seed %llu\n", p->name, endpoint, S.model,
			(unsigned long long)seed);
		fflush(out);
	}
	int ran = 0, passed = 0;
	for (int i = 0; i < p->n; i++) {
		if (only >= 0 && i != only)
			continue;
		const struct gate *G = &p->gates[i];
		struct tally t = {0};
		int64_t t0 = clock_now_ns();
		if (G->kind == GATE_DATASET)
			run_dataset(&S, &g, G, &t);
		else if (G->kind == GATE_TOOL_CALLS)
			run_tool_calls(&S, G, &t);
		else
			run_needle(&S, G, seed, &t);
		double secs = (double)(clock_now_ns() - t0) / 1e9;
		int64_t need;
		bool ok = gate_passes(G, &t, &need);
		ran++;
		passed += ok;
		double pct = G->n_items ? 100.0 * (double)t.passed / (double)G->n_items : 0;
		if (js) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "name", G->name);
			cJSON_AddStringToObject(x, "result", ok ? "PASS" : "FAIL");
			cJSON_AddNumberToObject(x, "items", (double)G->n_items);
			cJSON_AddNumberToObject(x, "passed", (double)t.passed);
			cJSON_AddNumberToObject(x, "needed", (double)need);
			cJSON_AddNumberToObject(x, "failed", (double)t.failed);
			cJSON_AddNumberToObject(x, "api_errors", (double)t.api_errors);
			cJSON_AddNumberToObject(x, "environment", (double)t.environment);
			cJSON_AddNumberToObject(x, "seconds", secs);
			if (t.first_problem[0])
				cJSON_AddStringToObject(x, "first_problem", t.first_problem);
			cJSON_AddItemToArray(jg, x);
		} else {
			fprintf(out, "%s %s: %lld/%zu passed (%.1f %%), needs %lld; %.1f s", ok ? "PASS" : "FAIL", G->name,
				(long long)t.passed, G->n_items, pct, (long long)need, secs);
			if (t.api_errors)
				fprintf(out, "; %lld api errors", (long long)t.api_errors);
			if (t.environment)
				fprintf(out, "; %lld could not be graded here", (long long)t.environment);
			if (t.first_problem[0])
				fprintf(out, "; first problem: %s", t.first_problem);
			fputc('\n', out);
			fflush(out);
		}
	}
	*all_passed = passed == ran;
	if (js) {
		cJSON_AddStringToObject(js, "result", *all_passed ? "PASS" : "FAIL");
		cJSON_AddNumberToObject(js, "gates_passed", passed);
		cJSON_AddNumberToObject(js, "gates_run", ran);
		char *s = cJSON_Print(js);
		fprintf(out, "%s\n", s ? s : "{}");
		free(s);
		cJSON_Delete(js);
	} else {
		fprintf(out, "gate %s: %s (%d of %d gates passed)\n", p->name, *all_passed ? "PASS" : "FAIL", passed, ran);
	}
	grader_destroy(g);
	return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static const char gate_usage[] =
	"usage: sixi-eval gate PROTOCOL.json [--url URL] [--model NAME] [--only GATE] [--seed N] [--json]\n"
	"         runs the protocol's gates; one PASS/FAIL line per gate, then the verdict\n"
	"         (exit 0: every gate passed, 3: a gate failed, 1: could not run, 2: usage)\n"
	"       sixi-eval gate needle --tokens N --depth D [--seed S] [--json]\n"
	"         prints one needle-in-a-haystack prompt (--json: with its answer)\n"
	"Protocol keys: protocols/README-gate.md; example: protocols/gate.json.\n";

/* `gate needle` and `gate`: one option table, each row naming the field it sets. */
enum { NEEDLE = 1u << 0, GATE = 1u << 1 };
struct gate_cli {
	struct gate_overrides o;
	struct needle_spec sp;
	bool json;
};
#define O struct gate_cli
static const struct args_opt gate_options[] = {
	ARGS_HEADING("gate PROTOCOL.json:"),
	ARGS_STRING_OPT("--url", "URL", O, o.url, GATE, "the server (default: the protocol's)"),
	ARGS_STRING_OPT("--model", "NAME", O, o.model, GATE, "the model (default: the protocol's)"),
	ARGS_STRING_OPT("--only", "GATE", O, o.only, GATE, "run only this gate"),
	ARGS_INT_OPT("--seed", "N", O, o.needle_seed, 0, 9.3e18, GATE, "needle seed (default: the protocol's)"),
	ARGS_FLAG_OPT("--json", O, o.json, true, GATE, "one JSON object instead of lines"),
	ARGS_HEADING("gate needle:"),
	ARGS_INT_OPT("--tokens", "N", O, sp.context_tokens, 0, 9.3e18, NEEDLE, "haystack tokens, 64 to 2000000"),
	ARGS_DOUBLE_OPT("--depth", "D", O, sp.depth, 0, 1, NEEDLE, "where the needle goes, 0 (first) to 1 (last)"),
	ARGS_INT_OPT("--seed", "S", O, sp.seed, 0, 9.3e18, NEEDLE, "filler, key and code seed (default 1)"),
	ARGS_FLAG_OPT("--json", O, json, true, NEEDLE, "the prompt with its answer as JSON"),
	ARGS_TABLE_END,
};
#undef O

static int cmd_needle(int argc, char **argv)
{
	struct gate_cli g = { .sp = {.context_tokens = 0, .depth = -1, .seed = 1} };
	static const struct args_spec spec = { .prog = "sixi-eval gate needle", .usage = gate_usage, .opts = gate_options };
	int rc = args_cli(&spec, NEEDLE, argc - 1, argv + 1, &g, NULL, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	struct needle_spec sp = g.sp;
	bool json = g.json;
	struct needle_case c;
	rc = needle_make(&sp, &c);
	if (rc == -EINVAL) {
		fprintf(stderr, "sixi-eval gate needle: give --tokens from 64 to 2000000 and --depth from 0 to 1\n");
		return 2;
	}
	if (rc) {
		fprintf(stderr, "sixi-eval gate needle: out of memory\n");
		return 1;
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "prompt", c.prompt);
		cJSON_AddStringToObject(o, "answer", c.answer);
		cJSON_AddStringToObject(o, "key", c.key);
		cJSON_AddNumberToObject(o, "bytes", (double)c.prompt_bytes);
		cJSON_AddNumberToObject(o, "needle_at_bytes", (double)c.needle_at_bytes);
		cJSON_AddNumberToObject(o, "depth_actual", c.depth_actual);
		char *s = cJSON_PrintUnformatted(o);
		printf("%s\n", s ? s : "{}");
		free(s);
		cJSON_Delete(o);
	} else {
		printf("%s\n", c.prompt);
	}
	needle_case_finish(&c);
	return 0;
}

int gate_cmd_main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		static const struct args_spec all = { .prog = "sixi-eval gate", .usage = gate_usage, .opts = gate_options };
		args_help(&all, 0, stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "needle") == 0)
		return cmd_needle(argc - 1, argv + 1);
	struct gate_cli g = { .o = {.needle_seed = -1} };
	static const struct args_spec spec = { .prog = "sixi-eval gate", .usage = gate_usage, .opts = gate_options,
					       .max_pos = 1 };
	const char *path = NULL;
	int prc = args_cli(&spec, GATE, argc - 1, argv + 1, &g, &path, NULL);
	if (prc != ARGS_CONTINUE)
		return prc;
	struct gate_overrides o = g.o;
	if (!path) {
		fprintf(stderr, "sixi-eval gate: give a gate PROTOCOL file (e.g. protocols/gate.json)\n%s", gate_usage);
		return 2;
	}
	char err[8192];
	struct gate_protocol *p = gate_protocol_load(path, err, sizeof err);
	if (!p) {
		fprintf(stderr, "sixi-eval gate: %s\n", err);
		return 1;
	}
	if (http_global_init() != 0) {
		gate_protocol_destroy(p);
		fprintf(stderr, "sixi-eval gate: cannot initialise libcurl\n");
		return 1;
	}
	bool all = false;
	int rc = gate_run(p, &o, stdout, &all, err, sizeof err);
	if (rc)
		fprintf(stderr, "sixi-eval gate: %s\n", err);
	http_global_cleanup();
	gate_protocol_destroy(p);
	return rc ? 1 : all ? 0 : 3;
}
