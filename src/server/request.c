/* request — see request.h. Runs on the server's HTTP loop thread; the engine's
 * tokenize is the only engine call made. */
#include "server/request.h"
#include "server/engine.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "text/jinja.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_integer(const cJSON *v)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble);
}



/* Returns 0, or writes an error into msg/param and returns -EINVAL. */
static int tokenize_text(const struct request_env *s, const char *text, struct gen_req *r, char *msg, size_t ml)
{
	size_t len = strlen(text);
	size_t cap = len + 64, n = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		int32_t *ids = realloc(r->prompt, cap * sizeof(int32_t));
		if (!ids) {
			snprintf(msg, ml, "out of memory");
			return -ENOMEM;
		}
		r->prompt = ids;
		int rc = s->e->ops->tokenize(s->e, text, len, ids, cap, &n);
		if (rc != 0) {
			snprintf(msg, ml, "the prompt could not be tokenised (%s)", strerror(-rc));
			return -EINVAL;
		}
		if (n <= cap)
			break;
		cap = n;
	}
	r->n_prompt = n;
	return 0;
}

static int parse_prompt(const struct request_env *s, const cJSON *p, struct gen_req *r, char *msg, size_t ml)
{
	if (cJSON_IsString(p))
		return tokenize_text(s, p->valuestring, r, msg, ml);
	if (cJSON_IsArray(p)) {
		int n = cJSON_GetArraySize(p);
		if (n == 1 && cJSON_IsString(p->child))
			return tokenize_text(s, p->child->valuestring, r, msg, ml);
		r->prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
		if (!r->prompt) {
			snprintf(msg, ml, "out of memory");
			return -ENOMEM;
		}
		int i = 0;
		for (const cJSON *it = p->child; it; it = it->next, i++) {
			if (!is_integer(it) || it->valuedouble < 0 || it->valuedouble >= s->e->n_vocab) {
				snprintf(msg, ml,
					 "prompt[%d] must be a token id, an integer in [0, %d); send a string or an "
					 "array of token ids",
					 i, s->e->n_vocab);
				return -EINVAL;
			}
			r->prompt[i] = (int32_t)it->valuedouble;
		}
		r->n_prompt = (size_t)n;
		return 0;
	}
	snprintf(msg, ml, "prompt must be a string or an array of token ids");
	return -EINVAL;
}

static int render_chat(const struct request_env *s, const cJSON *msgs, struct gen_req *r, char *msg, size_t ml)
{
	if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
		snprintf(msg, ml, "messages must be a non-empty array of {\"role\", \"content\"} objects");
		return -EINVAL;
	}
	struct buf t;
	buf_init(&t);
	int rc = 0, i = 0;
	for (const cJSON *m = msgs->child; m && rc == 0 && s->tmpl; m = m->next, i++) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
			snprintf(msg, ml, "messages[%d] must be an object with a string \"role\"", i);
			rc = -EINVAL;
		}
	}
	if (s->tmpl && rc == 0) {
		cJSON *ctx = cJSON_CreateObject();
		cJSON_AddItemToObject(ctx, "messages", cJSON_Duplicate(msgs, true));
		cJSON_AddTrueToObject(ctx, "add_generation_prompt");
		cJSON_AddStringToObject(ctx, "bos_token", s->e->bos_text ? s->e->bos_text : "");
		cJSON_AddStringToObject(ctx, "eos_token", s->e->eos_text ? s->e->eos_text : "");
		char terr[256];
		rc = jinja_render_chat(s->tmpl, ctx, &t, terr, sizeof terr);
		cJSON_Delete(ctx);
		if (rc != 0)
			snprintf(msg, ml, "the chat template cannot render these messages: %s", terr);
		else
			rc = tokenize_text(s, t.data ? t.data : "", r, msg, ml);
		buf_finish(&t);
		return rc == 0 ? 0 : -EINVAL;
	}
	for (const cJSON *m = msgs->child; m && rc == 0; m = m->next, i++) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
			snprintf(msg, ml, "messages[%d] must be an object with a string \"role\"", i);
			rc = -EINVAL;
			break;
		}
		rc |= buf_printf(&t, "<|im_start|>%s\n", role->valuestring);
		if (cJSON_IsString(content)) {
			rc |= buf_puts(&t, content->valuestring);
		} else if (cJSON_IsArray(content)) {
			for (const cJSON *part = content->child; part; part = part->next) {
				const char *text = json_get_str(part, "text");
				if (!text) {
					snprintf(msg, ml, "messages[%d].content parts must be {\"type\": \"text\", \"text\": ...}", i);
					rc = -EINVAL;
					break;
				}
				rc |= buf_puts(&t, text);
			}
		} else if (content && !cJSON_IsNull(content)) {
			snprintf(msg, ml, "messages[%d].content must be a string or an array of text parts", i);
			rc = -EINVAL;
		}
		if (rc == 0)
			rc |= buf_puts(&t, "<|im_end|>\n");
	}
	if (rc == 0)
		rc = buf_puts(&t, "<|im_start|>assistant\n");
	if (rc == 0)
		rc = tokenize_text(s, t.data, r, msg, ml);
	else if (rc != -EINVAL)
		snprintf(msg, ml, "out of memory");
	buf_finish(&t);
	return rc == 0 ? 0 : -EINVAL;
}

static const char *const known_fields[] = {
	"model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
	"min_p", "seed", "stop", "ignore_eos", "n", "stream", "stream_options", "logit_bias", "vote", "prompt_logprobs",
	"return_token_ids",
};

/* Parses and validates; on error returns the HTTP status with msg/param set. */
int request_parse(const struct request_env *s, const char *body, size_t body_len, bool chat, struct gen_req *r,
		  char *msg, size_t ml, const char **param)
{
	char perr[256];
	*param = NULL;
	cJSON *root = json_parse_n(body, body_len, perr, sizeof perr);
	int status = 400;
	if (!root) {
		snprintf(msg, ml, "the body is not valid JSON (%s); send a JSON object", perr);
		return 400;
	}
	if (!cJSON_IsObject(root)) {
		snprintf(msg, ml, "the body must be a JSON object");
		goto out;
	}
	*r = (struct gen_req){ .sp = { .temperature = 1.0, .top_p = 1.0 }, .n = 1 };
	for (const cJSON *it = root->child; it; it = it->next) {
		bool known = false;
		for (size_t i = 0; i < sizeof known_fields / sizeof known_fields[0]; i++)
			known |= strcmp(it->string, known_fields[i]) == 0;
		if (!known) {
			if (s->unknown_fields)
				atomic_fetch_add_explicit(s->unknown_fields, 1, memory_order_relaxed);
			log_info("ignoring unknown request field \"%s\"", it->string);
		}
	}
	const cJSON *v;
#define FIELD(name) (v = cJSON_GetObjectItemCaseSensitive(root, name)) != NULL && !cJSON_IsNull(v)
#define BAD(name, ...) do { *param = name; snprintf(msg, ml, __VA_ARGS__); goto out; } while (0)
	if (chat) {
		if (!(v = cJSON_GetObjectItemCaseSensitive(root, "messages")))
			BAD("messages", "messages is required for /v1/chat/completions");
		if (render_chat(s, v, r, msg, ml) != 0) {
			*param = "messages";
			goto out;
		}
	} else {
		if (!(v = cJSON_GetObjectItemCaseSensitive(root, "prompt")))
			BAD("prompt", "prompt is required for /v1/completions");
		if (parse_prompt(s, v, r, msg, ml) != 0) {
			*param = "prompt";
			goto out;
		}
	}
	if (r->n_prompt == 0)
		BAD(chat ? "messages" : "prompt", "the prompt is empty; send at least one token");
	if (r->n_prompt >= (size_t)s->e->n_ctx)
		BAD(chat ? "messages" : "prompt",
		    "the prompt is %zu tokens but the context is %d; shorten it to at most %d tokens", r->n_prompt,
		    s->e->n_ctx, s->e->n_ctx - 1);
	int64_t room = s->e->n_ctx - (int64_t)r->n_prompt;
	const char *mt = FIELD("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
	if (FIELD(mt)) {
		if (!is_integer(v))
			BAD(mt, "%s must be an integer", mt);
		if (v->valuedouble < 1)
			BAD(mt, "%s must be at least 1 (got %.0f)", mt, v->valuedouble);
		if (v->valuedouble > (double)room)
			BAD(mt, "%s is %.0f but the prompt (%zu tokens) leaves room for %lld in the context of %d", mt,
			    v->valuedouble, r->n_prompt, (long long)room, s->e->n_ctx);
		r->max_tokens = (int64_t)v->valuedouble;
		r->max_given = true;
	} else {
		r->max_tokens = chat ? room : (room < 16 ? room : 16); /* OpenAI's legacy default is 16 */
	}
	if (FIELD("temperature")) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2)
			BAD("temperature", "temperature must be a number in [0, 2]");
		r->sp.temperature = v->valuedouble;
	}
	if (FIELD("top_p")) {
		if (!cJSON_IsNumber(v) || v->valuedouble <= 0 || v->valuedouble > 1)
			BAD("top_p", "top_p must be a number in (0, 1]");
		r->sp.top_p = v->valuedouble;
	}
	if (FIELD("top_k")) {
		if (!is_integer(v) || v->valuedouble < -1 || v->valuedouble > 1e9)
			BAD("top_k", "top_k must be an integer >= 0 (0 or -1 turns it off)");
		r->sp.top_k = v->valuedouble < 0 ? 0 : (int64_t)v->valuedouble;
	}
	if (FIELD("min_p")) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1)
			BAD("min_p", "min_p must be a number in [0, 1]");
		r->sp.min_p = v->valuedouble;
	}
	if (FIELD("seed")) {
		if (!is_integer(v))
			BAD("seed", "seed must be an integer");
		r->seed = (uint64_t)(int64_t)v->valuedouble;
		r->seed_given = true;
	}
	if (FIELD("stop")) {
		if (cJSON_IsString(v)) {
			r->stop[r->n_stop++] = v->valuestring;
		} else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) <= REQUEST_MAX_STOPS) {
			for (const cJSON *it = v->child; it; it = it->next) {
				if (!cJSON_IsString(it))
					BAD("stop", "stop must be a string or an array of up to %d strings", REQUEST_MAX_STOPS);
				r->stop[r->n_stop++] = it->valuestring;
			}
		} else {
			BAD("stop", "stop must be a string or an array of up to %d strings", REQUEST_MAX_STOPS);
		}
	}
	if (FIELD("ignore_eos")) {
		if (!cJSON_IsBool(v))
			BAD("ignore_eos", "ignore_eos must be true or false");
		r->ignore_eos = cJSON_IsTrue(v);
	}
	if (FIELD("logit_bias")) {
		int nb = cJSON_IsObject(v) ? cJSON_GetArraySize(v) : -1;
		if (nb < 0)
			BAD("logit_bias", "logit_bias must be an object of {\"token id\": bias in [-100, 100]}");
		r->bias_ids = malloc((size_t)(nb ? nb : 1) * sizeof(int32_t));
		r->bias = malloc((size_t)(nb ? nb : 1) * sizeof(float));
		if (!r->bias_ids || !r->bias)
			BAD("logit_bias", "out of memory");
		for (const cJSON *it = v->child; it; it = it->next) {
			char *end;
			long id = strtol(it->string, &end, 10);
			if (*it->string == 0 || *end || id < 0 || id >= s->e->n_vocab)
				BAD("logit_bias", "logit_bias key \"%s\" is not a token id in [0, %d)", it->string, s->e->n_vocab);
			if (!cJSON_IsNumber(it) || it->valuedouble < -100 || it->valuedouble > 100)
				BAD("logit_bias", "logit_bias[\"%s\"] must be a number in [-100, 100]", it->string);
			r->bias_ids[r->n_bias] = (int32_t)id;
			r->bias[r->n_bias++] = (float)it->valuedouble;
		}
	}
	if (FIELD("n")) {
		if (!is_integer(v) || v->valuedouble < 1 || v->valuedouble > REQUEST_MAX_CHOICES)
			BAD("n", "n must be an integer in [1, %d]", REQUEST_MAX_CHOICES);
		r->n = (int)v->valuedouble;
		r->n_given = true;
	}
	if (FIELD("stream")) {
		if (!cJSON_IsBool(v))
			BAD("stream", "stream must be true or false");
		r->stream = cJSON_IsTrue(v);
	}
	if (FIELD("stream_options")) {
		const cJSON *iu = cJSON_GetObjectItemCaseSensitive(v, "include_usage");
		if (!cJSON_IsObject(v) || (iu && !cJSON_IsBool(iu)))
			BAD("stream_options", "stream_options must be an object like {\"include_usage\": true}");
		r->include_usage = cJSON_IsTrue(iu);
	}
	int max_vote = s->e->n_slots < REQUEST_MAX_CHOICES ? s->e->n_slots : REQUEST_MAX_CHOICES;
	if (FIELD("vote")) {
		if (!cJSON_IsBool(v))
			BAD("vote", "vote must be true or false; to vote, send \"vote\": true with \"n\" from 2 to %d",
			    max_vote);
		r->vote = cJSON_IsTrue(v);
	}
	if (r->vote) {
		if (max_vote < 2)
			BAD("vote", "this server holds %d sequence at once (--parallel) and a vote needs at least 2; "
				    "start it with --parallel 2 or more", s->e->n_slots);
		if (!r->n_given)
			BAD("n", "vote needs n, the number of samples: send \"n\" from 2 to %d", max_vote);
		if (r->n < 2)
			BAD("n", "vote needs at least 2 samples (got n = %d); send \"n\" from 2 to %d", r->n, max_vote);
		if (r->n > max_vote)
			BAD("n", "n is %d but a vote's samples run at once and this server holds %d sequences "
				 "(--parallel); send n from 2 to %d", r->n, s->e->n_slots, max_vote);
		if (r->stream)
			BAD("stream", "vote does not stream (its answer is known only once the samples are done); "
				      "send \"stream\": false");
		if (r->n_prompt < 1)
			BAD("prompt", "the prompt is empty");
	}
	if (FIELD("return_token_ids") && !cJSON_IsBool(v))
		BAD("return_token_ids", "return_token_ids must be true or false");
	if (FIELD("prompt_logprobs")) {
		if (chat)
			BAD("prompt_logprobs", "prompt_logprobs scores a prompt: send it to /v1/completions");
		if (!is_integer(v) || v->valuedouble < 0 || v->valuedouble > s->e->n_sample)
			BAD("prompt_logprobs", "prompt_logprobs must be an integer in [0, %d] (the top entries kept at every "
					       "prompt position; the model's vocabulary has %d)", s->e->n_sample, s->e->n_sample);
		r->prompt_logprobs = (int32_t)v->valuedouble;
		if (r->prompt_logprobs > 0 && (double)r->prompt_logprobs * (double)r->n_prompt > REQUEST_MAX_PROMPT_SCORES)
			BAD("prompt_logprobs", "prompt_logprobs %d over %zu prompt tokens is more than %d entries; send a "
					       "smaller N or a shorter prompt", r->prompt_logprobs, r->n_prompt,
			    REQUEST_MAX_PROMPT_SCORES);
		if (r->prompt_logprobs > 0 && r->stream)
			BAD("stream", "prompt_logprobs are sent with the whole response: send \"stream\": false");
		if (r->prompt_logprobs > 0 && (r->n > 1 || r->vote))
			BAD("n", "prompt_logprobs scores one prompt: send n 1 (and no vote)");
	}
#undef FIELD
#undef BAD
	status = 0;
	/* The stop strings point into root; copy them before it is freed. */
	for (size_t i = 0; i < r->n_stop; i++) {
		r->stop[i] = strdup(r->stop[i]);
		if (!r->stop[i]) {
			while (i > 0)
				free((char *)r->stop[--i]); /* the copies made so far */
			snprintf(msg, ml, "out of memory");
			status = 500;
			break;
		}
	}
out:
	if (status != 0)
		r->n_stop = 0; /* stop strings were borrowed from root */
	cJSON_Delete(root);
	return status;
}

void request_finish(struct gen_req *r)
{
	free(r->prompt);
	free(r->bias_ids);
	free(r->bias);
	for (size_t i = 0; i < r->n_stop; i++)
		free((char *)r->stop[i]);
}

