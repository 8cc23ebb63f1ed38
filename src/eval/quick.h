/* quick — a quick run (`sixi-eval run --url --model --dataset ...`) as data, and
 * the protocol object it stands for, so that it is checked and hashed exactly like
 * a protocol file (protocols/schema.json). The fields are what sixi-eval's option
 * table sets; a number left NaN was not given and is left to the protocol's default.
 * Strings are borrowed. */
#ifndef SIXI_EVAL_QUICK_H
#define SIXI_EVAL_QUICK_H
#include <cjson/cJSON.h>
#include <stdbool.h>

struct eval_quick {
	const char *name;            /* the protocol's name (default "quick") */
	const char *url, *model, *dataset;
	const char *template_path;   /* a .gguf, tokenizer_config.json or .jinja file; NULL: the server's */
	bool raw;                    /* template source "raw" instead of "chat" (no --template) */
	/* the run: protocol keys of the same name */
	double repeats, concurrency, attempts, timeout_s, stall_s, shuffle_seed, loop_stop;
	/* protocol.sampling */
	double max_tokens, reasoning_max_tokens, temperature, top_p, top_k, sample_seed;
};

/* Every number NaN (not given), name "quick", the rest NULL. */
void eval_quick_defaults(struct eval_quick *q);
/* True when any part of the frozen configuration was given (a number, url, model, dataset). */
bool eval_quick_any(const struct eval_quick *q);
/* The protocol object of the quick run (the caller deletes it); NULL when out of memory. */
cJSON *eval_quick_protocol(const struct eval_quick *q);
#endif
