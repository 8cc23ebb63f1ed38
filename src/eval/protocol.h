/* protocol — an evaluation protocol: what is compared, on which data, how it is
 * sampled and repeated, and which analysis is fixed in advance. Read from a JSON
 * file (documented by protocols/schema.json) or built from command-line flags,
 * validated completely, and turned into canonical JSON whose sha256 identifies
 * the frozen configuration of a run.
 *
 * Refused: unknown keys (at every level), wrong types, impossible values
 * (temperature < 0, max_tokens < 1, repeats < 1, top_p outside (0,1], ...),
 * duplicate condition names. Greedy sampling is accepted; eval_protocol_warnings
 * says so. Relative dataset and template paths are resolved against the
 * protocol file's folder. struct eval_protocol is read-only for callers and
 * freed with eval_protocol_destroy (accepts NULL). */
#ifndef SIXI_EVAL_PROTOCOL_H
#define SIXI_EVAL_PROTOCOL_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVAL_MAX_CONDITIONS 16
#define EVAL_MAX_DATASETS 16
#define EVAL_MAX_STOPS 8

struct eval_condition {
	char *name;
	char *endpoint;        /* base URL, e.g. http://127.0.0.1:8080 */
	char *model;           /* the "model" field sent with each request */
	char *template_source; /* "chat" (server's chat endpoint), "raw" (prompt as is), "jinja",
				  "tokenizer_config", "gguf" (rendered here, sent to /v1/completions) */
	char *template_path;   /* for jinja / tokenizer_config / gguf */
};

struct eval_protocol {
	char *name;
	struct eval_condition conditions[EVAL_MAX_CONDITIONS];
	int n_conditions;
	char *datasets[EVAL_MAX_DATASETS];
	int n_datasets;
	double temperature, top_p;
	int64_t top_k;                 /* -1 = not sent */
	int64_t sample_seed;           /* sampling.seed: >= 0, each attempt sends a seed derived from it,
					  the task, the repeat and the attempt (reproducible sampling on
					  servers that honour seeds); -1 = none sent */
	int64_t max_tokens;            /* tasks not marked reasoning */
	int64_t reasoning_max_tokens;  /* tasks marked reasoning; >= 64000 unless set */
	char *stop[EVAL_MAX_STOPS];
	int n_stop;
	int64_t repeats, concurrency, attempts;
	double timeout_s;              /* whole request */
	double stall_s;                /* no bytes for this long = stall */
	int64_t shuffle_seed;
	double loop_stop;              /* percent; 0 = guard off */
	char *tests[8];                /* analysis fixed in advance */
	int n_tests;
	char *alternative;             /* two-sided | less | greater */
	double alpha;
};

/* Parses and validates; base_dir resolves relative paths (NULL = cwd). */
struct eval_protocol *eval_protocol_parse(const cJSON *root, const char *base_dir, char *err, size_t errlen);
struct eval_protocol *eval_protocol_load(const char *path, char *err, size_t errlen);
void eval_protocol_destroy(struct eval_protocol *p);
/* Canonical JSON (defaults filled, fixed key order, one condition when cond >= 0,
 * all when -1). Caller frees. */
char *eval_protocol_canonical(const struct eval_protocol *p, int cond);
/* Appends warnings (greedy decoding, small reasoning budget, ...) one per line to
 * out (cap bytes); returns how many. */
int eval_protocol_warnings(const struct eval_protocol *p, char *out, size_t cap);
/* max_tokens for a task. */
int64_t eval_protocol_max_tokens(const struct eval_protocol *p, bool reasoning);
#endif
