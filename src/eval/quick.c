/* quick — see quick.h. */
#include "eval/quick.h"
#include <math.h>
#include <string.h>

void eval_quick_defaults(struct eval_quick *q)
{
	*q = (struct eval_quick){ .name = "quick" };
	double *nums[] = { &q->repeats, &q->concurrency, &q->attempts, &q->timeout_s, &q->stall_s, &q->shuffle_seed,
			   &q->loop_stop, &q->max_tokens, &q->reasoning_max_tokens, &q->temperature, &q->top_p, &q->top_k,
			   &q->sample_seed };
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		*nums[i] = NAN;
}

/* The numbers in protocol order: key and value. */
#define RUN_KEYS(q)                                                                                           \
	{ "repeats", (q)->repeats }, { "concurrency", (q)->concurrency }, { "attempts", (q)->attempts },     \
		{ "timeout_s", (q)->timeout_s }, { "stall_s", (q)->stall_s }, { "shuffle_seed", (q)->shuffle_seed }, \
	{ "loop_stop", (q)->loop_stop }
#define SAMPLING_KEYS(q)                                                                                          \
	{ "max_tokens", (q)->max_tokens }, { "reasoning_max_tokens", (q)->reasoning_max_tokens },                \
		{ "temperature", (q)->temperature }, { "top_p", (q)->top_p }, { "top_k", (q)->top_k },           \
		{ "seed", (q)->sample_seed }

struct key { const char *key; double v; };

static bool add_given(cJSON *o, const struct key *k, size_t n)
{
	bool any = false;
	for (size_t i = 0; i < n; i++)
		if (!isnan(k[i].v)) {
			cJSON_AddNumberToObject(o, k[i].key, k[i].v);
			any = true;
		}
	return any;
}

bool eval_quick_any(const struct eval_quick *q)
{
	const struct key run[] = { RUN_KEYS(q) }, samp[] = { SAMPLING_KEYS(q) };
	bool any = q->url || q->model || q->dataset;
	for (size_t i = 0; i < sizeof run / sizeof run[0]; i++)
		any |= !isnan(run[i].v);
	for (size_t i = 0; i < sizeof samp / sizeof samp[0]; i++)
		any |= !isnan(samp[i].v);
	return any;
}

cJSON *eval_quick_protocol(const struct eval_quick *q)
{
	const struct key run[] = { RUN_KEYS(q) }, samp[] = { SAMPLING_KEYS(q) };
	cJSON *p = cJSON_CreateObject(), *s = cJSON_CreateObject(), *cd = cJSON_CreateObject();
	if (!p || !s || !cd) {
		cJSON_Delete(p);
		cJSON_Delete(s);
		cJSON_Delete(cd);
		return NULL;
	}
	add_given(p, run, sizeof run / sizeof run[0]);
	cJSON_AddStringToObject(p, "name", q->name);
	cJSON_AddStringToObject(cd, "name", q->model);
	cJSON_AddStringToObject(cd, "endpoint", q->url);
	cJSON_AddStringToObject(cd, "model", q->model);
	cJSON *tp = cJSON_AddObjectToObject(cd, "template");
	const char *source = q->raw ? "raw" : "chat";
	if (q->template_path) {
		/* the file decides the source: a GGUF, a tokenizer_config.json, or a .jinja file */
		size_t tl = strlen(q->template_path);
		source = tl > 5 && strcmp(q->template_path + tl - 5, ".gguf") == 0   ? "gguf"
			 : tl > 5 && strcmp(q->template_path + tl - 5, ".json") == 0 ? "tokenizer_config"
										  : "jinja";
		cJSON_AddStringToObject(tp, "path", q->template_path);
	}
	cJSON_AddStringToObject(tp, "source", source);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(p, "conditions"), cd);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(p, "datasets"), cJSON_CreateString(q->dataset));
	if (add_given(s, samp, sizeof samp / sizeof samp[0]))
		cJSON_AddItemToObject(p, "sampling", s);
	else
		cJSON_Delete(s);
	return p;
}
