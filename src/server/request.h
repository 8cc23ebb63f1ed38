/* request — the body of a /v1/completions or /v1/chat/completions request
 * parsed and validated into struct gen_req: the prompt tokenised (chat
 * messages rendered with the chat template, or ChatML without one), sampling
 * parameters range-checked, stop strings and logit_bias copied. No sockets and
 * no scheduler here, so the parse can be fed arbitrary bytes
 * (tests/fuzz/fuzz_request.c). Errors name the field and what to send instead;
 * unknown fields are counted, not refused. */
#ifndef SIXI_SERVER_REQUEST_H
#define SIXI_SERVER_REQUEST_H
#include "server/sampler.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REQUEST_MAX_CHOICES 16
#define REQUEST_MAX_STOPS 4
/* prompt_logprobs x prompt tokens at most: what one request may make the server keep */
#define REQUEST_MAX_PROMPT_SCORES (1 << 22)

struct engine;
struct jinja_template;

/* What a parse needs from the server; borrowed. */
struct request_env {
	struct engine *e;                /* tokenizer, vocabulary and context size */
	struct jinja_template *tmpl;     /* chat template, or NULL for ChatML */
	_Atomic uint64_t *unknown_fields; /* counter of ignored fields, or NULL */
};

struct gen_req {
	int32_t *prompt;     /* (n_prompt) token ids */
	size_t n_prompt;
	int64_t max_tokens;
	bool max_given;
	struct sampler_params sp;
	uint64_t seed;
	bool seed_given;
	const char *stop[REQUEST_MAX_STOPS]; /* owned copies */
	size_t n_stop;
	bool ignore_eos;
	int32_t *bias_ids;   /* (n_bias) logit_bias */
	float *bias;         /* (n_bias) */
	size_t n_bias;
	int n;
	bool n_given;
	bool stream, include_usage;
	bool vote;           /* "vote": true: n samples, the majority answer (server.c) */
	int32_t prompt_logprobs; /* "prompt_logprobs": N (vLLM's extension, /v1/completions): the
				  * prompt's tokens scored, with the top N at every position; 0: off */
};

/* Parses body[0..body_len) into r (zeroed by the caller). Returns 0, or the
 * HTTP status to answer (400, 500) with msg set and *param naming the field
 * (or NULL). request_finish(r) must be called either way. */
int request_parse(const struct request_env *env, const char *body, size_t body_len, bool chat, struct gen_req *r,
		  char *msg, size_t ml, const char **param);
void request_finish(struct gen_req *r);
#endif
