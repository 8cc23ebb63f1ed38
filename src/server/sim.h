/* sim — the simulated device: an engine (engine.h) whose forward pass sleeps for
 * the time a bandwidth-bound device would take and returns deterministic logits.
 * Pass time = weight bytes / bandwidth + decode rows x decode row cost + prefill
 * rows x prefill row cost; each sampled row also costs host time (sampling,
 * detokenising, writing) on the sampler thread. Everything is divided by
 * time_scale so tests can run a preset faster than real time with the same
 * ratios. Tokens are bytes (ids 0-255); prompts may carry any id below
 * n_vocab; logits depend only on (previous token, position), so a row's output
 * is the same alone or in any batch. Arguments are borrowed. */
#ifndef SIXI_SERVER_SIM_H
#define SIXI_SERVER_SIM_H
#include <stddef.h>
#include <stdint.h>

struct engine;

struct sim_config {
	char name[64];               /* preset or file name, shown as the model name */
	double weight_bytes;         /* read once per pass */
	double bandwidth_bytes_per_s;
	double decode_row_ns;        /* extra pass time per row that yields logits */
	double prefill_row_ns;       /* extra pass time per prompt row */
	double host_row_ns;          /* host time per sampled row */
	int32_t n_ctx;               /* positions per sequence */
	int32_t n_slots;             /* resident sequences */
	double time_scale;           /* >= 1 runs faster than real time */
	/* Memory model for sizing (sim_fit_check). */
	double mem_bytes;            /* device memory */
	double kv_bytes_per_token;   /* full-attention KV cache, all layers */
	double state_bytes_per_seq;  /* recurrent + conv state + rollback log, all layers */
	double activation_bytes;     /* scratch for one pass */
	/* Scripted texts (JSON "script": an array of up to SIM_SCRIPT_MAX strings), owned: see
	 * sim_config_finish. With a script, a sequence's logits put all the mass on the next byte
	 * of its text, then on id 0, the end of sequence (ids then stand for bytes 1-255). The
	 * text of a slot is script[0] when the slot is allocated; a slot forked from another
	 * (a vote's samples) takes the text after its source's, in fork order: sample i of a vote
	 * follows script[i mod n_script]. Rows are counted per slot from its allocation (or its
	 * source's), so the prefix cache would replay a text from its middle: leave it off. */
	char *script[16];
	int n_script;
};
#define SIM_SCRIPT_MAX 16
/* Frees the script strings of c (the engine keeps its own copy). */
void sim_config_finish(struct sim_config *c);

/* Presets: "thor" (Jetson-Thor-class, 27B hybrid at 4-bit, 15.8 GB of weights,
 * ~85 ms per pass) and "gb10" (GB10-class, 273 GB/s). 0 or -ENOENT. */
__attribute__((warn_unused_result)) int sim_config_preset(const char *name, struct sim_config *out);
/* Preset names, comma-separated, for messages. */
const char *sim_preset_names(void);
/* A JSON file: any field of a preset may be given, starting from "base"
 * (a preset name, default "thor"). 0 or -EINVAL with err set. */
__attribute__((warn_unused_result)) int sim_config_load(const char *path, struct sim_config *out, char *err,
							 size_t errlen);
/* Unscaled pass time in ns. */
double sim_pass_ns(const struct sim_config *c, size_t decode_rows, size_t prefill_rows);

/* Memory needed for n_slots x n_ctx, in bytes, with its parts. */
struct sim_size {
	double weights, kv, state, activations, total;
};
struct sim_size sim_size_of(const struct sim_config *c, int64_t n_slots, int64_t n_ctx);
/* Returns 0 when c fits in mem_limit_bytes; otherwise -ENOMEM and a message
 * naming the largest context for c's slots and the most slots for c's context. */
__attribute__((warn_unused_result)) int sim_fit_check(const struct sim_config *c, double mem_limit_bytes, char *msg,
						       size_t msglen);

/* NULL with errno set on failure. */
struct engine *sim_engine_create(const struct sim_config *c);
#endif
