/* fuzz_request — libFuzzer target for sixi-server's request parse
 * (src/server/request.c): the body of /v1/completions or /v1/chat/completions
 * into struct gen_req, tokenised by the simulated engine (bytes are tokens).
 * The first byte picks the endpoint (bit 0: chat) and the chat rendering
 * (bit 1: a Jinja template, else the built-in ChatML). Invariants beyond "no
 * crash": an accepted request is within every limit the scheduler relies on
 * (prompt in [1, n_ctx), max_tokens within the room left, n, stop, sampling
 * ranges, logit_bias ids in the vocabulary); a refused one has a status of 400
 * or 500 and a message. */
#include "server/request.h"
#include "server/engine.h"
#include "server/sim.h"
#include "text/jinja.h"
#include "core/log.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char tmpl_src[] =
	"{%- for m in messages %}<|im_start|>{{ m.role }}\n"
	"{%- if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}"
	"<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

#define FUZZ_NAME "fuzz_request"
#include "fuzz_check.h"
#define CHECK(ok, why) FUZZ_CHECK_ON(ok, why, data + 1, size - 1)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct engine *e;
	static struct jinja_template *tmpl;
	static _Atomic uint64_t unknown;
	if (!e) {
		log_set_level(LOG_LEVEL_ERROR); /* unknown fields are logged at info level */
		struct sim_config c;
		if (sim_config_preset("thor", &c) != 0)
			abort();
		c.n_ctx = 256; /* small, so that context limits are reached */
		e = sim_engine_create(&c);
		char err[256];
		tmpl = jinja_parse(tmpl_src, sizeof tmpl_src - 1, err, sizeof err);
		if (!e || !tmpl) {
			fprintf(stderr, "fuzz_request: setup failed: %s\n", err);
			abort();
		}
	}
	if (size < 1 || size > (1 << 16))
		return 0;
	bool chat = data[0] & 1;
	struct request_env env = { .e = e, .tmpl = (data[0] & 2) ? tmpl : NULL, .unknown_fields = &unknown };
	struct gen_req r;
	memset(&r, 0, sizeof r);
	char msg[512] = "";
	const char *param = NULL;
	int st = request_parse(&env, (const char *)data + 1, size - 1, chat, &r, msg, sizeof msg, &param);
	if (st == 0) {
		CHECK(r.n_prompt >= 1 && r.n_prompt < (size_t)e->n_ctx && r.prompt, "accepted prompt out of range");
		for (size_t i = 0; i < r.n_prompt; i++)
			CHECK(r.prompt[i] >= 0 && r.prompt[i] < e->n_vocab, "prompt token outside the vocabulary");
		CHECK(r.max_tokens >= 1 && r.max_tokens <= e->n_ctx - (int64_t)r.n_prompt, "max_tokens out of range");
		CHECK(r.n >= 1 && r.n <= REQUEST_MAX_CHOICES, "n out of range");
		CHECK(r.n_stop <= REQUEST_MAX_STOPS, "too many stop strings");
		for (size_t i = 0; i < r.n_stop; i++)
			CHECK(r.stop[i] != NULL, "a stop string is NULL");
		CHECK(r.sp.temperature >= 0 && r.sp.temperature <= 2 && r.sp.top_p > 0 && r.sp.top_p <= 1 &&
			      r.sp.top_k >= 0 && r.sp.min_p >= 0 && r.sp.min_p <= 1,
		      "sampling parameters out of range");
		for (size_t i = 0; i < r.n_bias; i++)
			CHECK(r.bias_ids[i] >= 0 && r.bias_ids[i] < e->n_vocab && isfinite(r.bias[i]) &&
				      fabsf(r.bias[i]) <= 100,
			      "logit_bias out of range");
	} else {
		CHECK((st == 400 || st == 500) && msg[0], "a refusal without a 400/500 status and a message");
	}
	request_finish(&r);
	return 0;
}
