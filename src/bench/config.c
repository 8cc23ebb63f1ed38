/* config — see config.h. */
#include "bench/config.h"
#include "core/err.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is(const struct bench_args *a, const char *w) { return strcmp(a->workload, w) == 0; }

void bench_args_defaults(struct bench_args *a, const char *workload)
{
	memset(a, 0, sizeof *a);
	a->workload = workload;
	bench_cfg_defaults(&a->cfg);
	a->agents = (struct agents_params){ .agents = 16, .doc_tokens = 17800, .followups = 2, .followup_tokens = 64,
					    .answer_tokens = 16 };
	a->events = 256;
	a->tokens_per_event = 1;
	a->lifetime_s = 3600;
	a->repeats = 1;
	a->trace_speed = 1;
	a->replay = (struct replay_params){ .conversations = 4, .limit = 1000000, .max_turns = 1000 };
	a->prefix = (struct prefix_params){ .groups = 4, .prefix_tokens = 1000, .requests = 4, .question_tokens = 32 };
	a->search = (struct search_params){ .target = 0.9, .tolerance = 0.05, .requests = 100, .max_probes = 12 };
	a->http_engine = -1;
	a->log_level = -1;
}

static int default_list(struct args_list *l, const char *flag, const char *text, int64_t max, char *err,
			size_t errlen)
{
	if (l->n)
		return 0;
	snprintf(l->text, sizeof l->text, "%s", text);
	return args_i64_list(flag, text, 1, max, l->v, ARGS_LIST_MAX, &l->n, err, errlen);
}

static int check_url(struct bench_args *a, char *err, size_t errlen)
{
	struct bench_cfg *c = &a->cfg;
	if (!c->url) {
		err_set(err, errlen, "--url is required (e.g. --url http://127.0.0.1:8080)");
		return -EINVAL;
	}
	if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0) {
		err_set(err, errlen, "--url '%s' must start with http:// or https://", c->url);
		return -EINVAL;
	}
	snprintf(a->url_buf, sizeof a->url_buf, "%s", c->url);
	size_t len = strlen(a->url_buf);
	while (len && a->url_buf[len - 1] == '/')
		a->url_buf[--len] = 0;
	if (len >= 3 && strcmp(a->url_buf + len - 3, "/v1") == 0)
		a->url_buf[len - 3] = 0;
	c->url = a->url_buf;
	return 0;
}

int bench_args_check(struct bench_args *a, char *err, size_t errlen)
{
	int rc = default_list(&a->concurrency, "--concurrency", "1,4,16,32", 100000, err, errlen);
	rc = rc ? rc : default_list(&a->prompt_lengths, "--prompt-tokens", "1000,4000,16000", 10000000, err, errlen);
	rc = rc ? rc : default_list(&a->streams, "--streams", "1,64,1000", 100000, err, errlen);
	if (rc || is(a, "emitter"))
		return rc;
	if (is(a, "selftest"))
		return a->cfg.url ? check_url(a, err, errlen) : 0;
	if ((rc = check_url(a, err, errlen)) != 0)
		return rc;
	if (is(a, "replay") && !a->prompts) {
		err_set(err, errlen, "replay needs --prompts FILE (ShareGPT JSON or JSONL of conversations)");
		return -EINVAL;
	}
	if (is(a, "search")) {
		const struct search_params *s = &a->search;
		const char *why = !a->slo ? "search needs --slo SPEC (e.g. --slo ttft=500ms,e2e=10s)"
				  : s->lo <= 0 || s->hi <= s->lo ? "search needs --lo X and --hi Y with 0 < X < Y"
				  : s->concurrency && (s->lo != floor(s->lo) || s->hi != floor(s->hi))
					  ? "--mode concurrency: --lo and --hi are whole numbers of streams"
					  : NULL;
		if (why) {
			err_set(err, errlen, "%s", why);
			return -EINVAL;
		}
	}
	if (is(a, "rate") && !a->trace && (a->rps <= 0 || a->duration_s <= 0)) {
		err_set(err, errlen, "rate needs --rps R and --duration S (or --trace FILE)");
		return -EINVAL;
	}
	/* a prompt set may share prefixes, and reuse of the history or prefix is what replay
	 * and prefix measure: cached tokens are reported there, not a reason to invalidate */
	if (a->prompts || is(a, "replay") || is(a, "prefix"))
		a->cfg.unique_prompts = false;
	return 0;
}

char *bench_cfg_json(const struct bench_args *a)
{
	const struct bench_cfg *c = &a->cfg;
	cJSON *p = cJSON_CreateObject();
	if (!p)
		return NULL;
	cJSON_AddStringToObject(p, "workload", a->workload);
	cJSON_AddStringToObject(p, "url", c->url);
	if (c->model)
		cJSON_AddStringToObject(p, "model", c->model);
	cJSON_AddStringToObject(p, "api", c->api == OPENAI_CHAT ? "chat" : "completions");
	cJSON_AddNumberToObject(p, "max_tokens", (double)c->max_tokens);
	cJSON_AddNumberToObject(p, "prompt_tokens", (double)c->prompt_tokens);
	cJSON_AddNumberToObject(p, "temperature", c->temperature);
	cJSON_AddBoolToObject(p, "ignore_eos", c->ignore_eos);
	cJSON_AddNumberToObject(p, "rounds", (double)c->rounds);
	cJSON_AddNumberToObject(p, "warmup", (double)c->warmup);
	cJSON_AddNumberToObject(p, "threads", c->threads);
	cJSON_AddNumberToObject(p, "seed", (double)c->seed);
	cJSON_AddNumberToObject(p, "stall_timeout_ms", (double)c->stall_timeout_ms);
	const char *arrival = a->arrival ? a->arrival : "poisson";
	if (is(a, "sweep")) {
		cJSON_AddStringToObject(p, "concurrency", a->concurrency.text);
	} else if (is(a, "prefill")) {
		cJSON_AddStringToObject(p, "prompt_lengths", a->prompt_lengths.text);
	} else if (is(a, "agents")) {
		cJSON_AddNumberToObject(p, "agents", (double)a->agents.agents);
		cJSON_AddNumberToObject(p, "doc_tokens", (double)a->agents.doc_tokens);
		cJSON_AddNumberToObject(p, "followups", (double)a->agents.followups);
		cJSON_AddNumberToObject(p, "followup_tokens", (double)a->agents.followup_tokens);
		cJSON_AddNumberToObject(p, "stagger_s", a->agents.stagger_s);
	} else if (is(a, "rate")) {
		cJSON_AddNumberToObject(p, "rps", a->rps);
		cJSON_AddNumberToObject(p, "duration_s", a->duration_s);
		cJSON_AddStringToObject(p, "arrival", arrival);
		if (a->ramp)
			cJSON_AddStringToObject(p, "ramp", a->ramp);
		if (a->trace) {
			cJSON_AddStringToObject(p, "trace", a->trace);
			cJSON_AddNumberToObject(p, "trace_speed", a->trace_speed);
		}
	} else if (is(a, "replay")) {
		cJSON_AddNumberToObject(p, "conversations", (double)a->replay.conversations);
		cJSON_AddNumberToObject(p, "max_conversations", (double)a->replay.limit);
		cJSON_AddNumberToObject(p, "max_turns", (double)a->replay.max_turns);
		cJSON_AddNumberToObject(p, "think_time_s", a->replay.think_s);
	} else if (is(a, "prefix")) {
		cJSON_AddNumberToObject(p, "groups", (double)a->prefix.groups);
		cJSON_AddNumberToObject(p, "prefix_tokens", (double)a->prefix.prefix_tokens);
		cJSON_AddNumberToObject(p, "requests_per_group", (double)a->prefix.requests);
		cJSON_AddNumberToObject(p, "question_tokens", (double)a->prefix.question_tokens);
	} else if (is(a, "search")) {
		cJSON_AddStringToObject(p, "mode", a->search.concurrency ? "concurrency" : "rate");
		cJSON_AddNumberToObject(p, "lo", a->search.lo);
		cJSON_AddNumberToObject(p, "hi", a->search.hi);
		cJSON_AddNumberToObject(p, "target", a->search.target);
		cJSON_AddNumberToObject(p, "tolerance", a->search.tolerance);
		cJSON_AddNumberToObject(p, "requests", (double)a->search.requests);
		cJSON_AddNumberToObject(p, "search_repeats", (double)a->repeats);
		cJSON_AddStringToObject(p, "arrival", arrival);
	}
	if (a->prompts)
		cJSON_AddStringToObject(p, "prompts", a->prompts);
	if (a->input_len)
		cJSON_AddStringToObject(p, "input_len", a->input_len);
	if (a->output_len)
		cJSON_AddStringToObject(p, "output_len", a->output_len);
	if (a->slo)
		cJSON_AddStringToObject(p, "slo", a->slo);
	if (is(a, "sweep"))
		cJSON_AddNumberToObject(p, "repeats", (double)a->repeats);
	cJSON_AddBoolToObject(p, "scrape_metrics", a->metrics);
	cJSON_AddBoolToObject(p, "unique_prompts", c->unique_prompts);
	char *s = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	return s;
}
