/* plan — memory sizing of a served model: weights, the attention KV cache and the
 * recurrent-state pool (Gated DeltaNet or Mamba layers), from the model's shape and
 * the workload (context, sequences, headroom, dtypes, speculative slots).
 *
 * What it does: reads the fields that decide memory from a Hugging Face config.json
 * (text_config of multimodal wrappers, layer_types / full_attention_interval of
 * hybrids, linear_* fields of Qwen3-Next / Qwen3.5 GDN layers, mamba fields of Mamba
 * hybrids) or from GGUF metadata, and does the arithmetic in exact integers.
 * "What fits" answers the two inverse questions for a memory budget: the largest
 * context for S sequences and the most sequences for a context.
 *
 * What it does not do: it never allocates model memory, never measures anything, and
 * it does not model a server's allocator overheads (paging granularity, CUDA graphs,
 * fragmentation); the headroom factor is where those go. Activations are an estimate
 * of one pass's fp32 working buffers, labelled as such.
 *
 * Formulas (bytes; e = element bytes of the chosen dtype):
 *   KV per token       = attention layers x (K-heads x head_dim_k + V-heads x head_dim_v) x e
 *                        (= 2 x layers x KV heads x head dim x e when K and V dims agree;
 *                        MLA models store kv_lora_rank + rope dims once per layer);
 *                        sliding-window layers hold at most their window per sequence.
 *   KV for a workload  = ceil(KV per token x context x sequences x headroom)
 *   SSM state per slot = GDN layers x V-heads x d_k x d_v x e_state
 *                        + Mamba layers x d_inner x d_state x e_state
 *   conv per slot      = layers x (kernel - 1) x conv channels x e_conv, channels =
 *                        2 x K-heads x d_k + V-heads x d_v (GDN), d_inner + 2 x groups x
 *                        d_state (Mamba-2; groups = 0 for Mamba-1)
 *   state slots        = sequences x speculative slots per request (a draft model: 5)
 *   draft states       = sequences x (draft tokens x SSM state per slot + (draft tokens +
 *                        kernel - 2) conv rows), for servers that snapshot every drafted row
 *   log row (GDN)      = GDN layers x V-heads x (d_k + d_v + 2) x e_state; the conv ring
 *                        grows by one conv row per kept log row.
 *
 * Ownership: arguments are borrowed; nothing returned needs freeing. Errors: functions
 * return 0 or -errno and write one message into err saying what was wrong and what to
 * do (for a config: every missing field by name). */
#ifndef SIXI_PLAN_PLAN_H
#define SIXI_PLAN_PLAN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

enum plan_dtype { PLAN_DTYPE_FP32 = 0, PLAN_DTYPE_BF16, PLAN_DTYPE_FP16, PLAN_DTYPE_FP8 };

/* "fp32|float32|bf16|bfloat16|fp16|float16|half|fp8|fp8_e4m3|fp8_e5m2" -> dtype; -EINVAL otherwise. */
__attribute__((warn_unused_result)) int plan_dtype_parse(const char *s, enum plan_dtype *out);
uint32_t plan_dtype_bytes(enum plan_dtype t);
const char *plan_dtype_name(enum plan_dtype t);

/* The model's shape as far as memory is concerned. Callers may fill it themselves
 * (sixi-server does, from its own loaded model) after plan_model_init(); zero means
 * "none" for layer counts and "unknown" for sizes. */
struct plan_model {
	char name[128];                 /* file or model name, for messages */
	char arch[64];                  /* model_type / general.architecture */
	uint32_t n_layers;              /* decoder layers (MTP / nextn layers excluded) */

	/* attention layers with a KV cache */
	uint32_t n_attn;                /* full-attention layers: KV grows with the context */
	uint32_t n_swa;                 /* sliding-window layers: KV capped at swa_window_tokens */
	uint32_t swa_window_tokens;
	uint32_t n_kv_heads;            /* KV heads per attention layer */
	uint32_t head_dim_k, head_dim_v;/* elements per head of K and of V */
	uint32_t mla_kv_elems;          /* MLA: kv_lora_rank + qk_rope_head_dim per layer; 0 = not MLA */

	/* Gated DeltaNet (linear attention) layers */
	uint32_t n_gdn;
	uint32_t gdn_k_heads, gdn_v_heads;  /* linear_num_key_heads, linear_num_value_heads */
	uint32_t gdn_k_dim, gdn_v_dim;      /* linear_key_head_dim, linear_value_head_dim */
	uint32_t gdn_conv_kernel;           /* linear_conv_kernel_dim */

	/* Mamba layers */
	uint32_t n_mamba;
	uint32_t mamba_d_inner;         /* heads x head dim (Mamba-2) or expand x hidden */
	uint32_t mamba_d_state;
	uint32_t mamba_n_groups;        /* 0 for Mamba-1 */
	uint32_t mamba_conv_kernel;

	/* for weights and the activation estimate */
	uint32_t hidden_size, ffn_size, vocab_size; /* ffn_size: per token (MoE: top-k x expert size) */
	uint64_t max_context_tokens;    /* max_position_embeddings; 0 = unknown */
	uint64_t n_params;              /* 0 = unknown */
	uint64_t weight_bytes;          /* from the files; 0 = unknown */
	const char *weight_source;      /* static string: where weight_bytes came from */
	enum plan_dtype weight_dtype;   /* torch_dtype, for params x bytes */
};

void plan_model_init(struct plan_model *m);
/* Fills m from a config.json object (text_config looked at first). */
__attribute__((warn_unused_result)) int plan_model_from_json(const struct cJSON *config, const char *name,
							     struct plan_model *m, char *err, size_t errlen);
/* Loads a config.json (a file, or a directory holding one; weights are then taken from
 * model.safetensors.index.json's total_size or the *.safetensors sizes beside it) or a
 * GGUF file (weights = its tensor bytes). */
__attribute__((warn_unused_result)) int plan_model_load(const char *path, struct plan_model *m, char *err,
							size_t errlen);
/* Checks that the shape is consistent (e.g. a GDN layer count with zero heads). */
__attribute__((warn_unused_result)) int plan_model_check(const struct plan_model *m, char *err, size_t errlen);

/* Per-unit sizes. */
uint64_t plan_kv_bytes_per_token(const struct plan_model *m, enum plan_dtype kv); /* full + sliding layers */
uint64_t plan_ssm_bytes_per_slot(const struct plan_model *m, enum plan_dtype state);
uint64_t plan_conv_bytes_per_slot(const struct plan_model *m, enum plan_dtype conv);
uint64_t plan_log_row_bytes(const struct plan_model *m, enum plan_dtype state);   /* GDN only */
uint64_t plan_conv_row_bytes(const struct plan_model *m, enum plan_dtype conv);   /* one row, all recurrent layers */
/* Parameters estimated from the shapes in a config (dense, MoE, GDN); 0 if it cannot. */
uint64_t plan_params_estimate(const struct cJSON *config);

struct plan_workload {
	int64_t context_tokens;         /* per sequence */
	int64_t sequences;              /* concurrent requests */
	double headroom;                /* multiplies the KV cache only (>= 1) */
	enum plan_dtype kv_dtype, state_dtype, conv_dtype;
	uint32_t spec_slots;            /* recurrent-state slots per request: 1 plain, 5 with a draft model */
	uint32_t draft_tokens;          /* snapshot-style speculative decoding keeps one state per drafted
					 * token and sequence (SGLang, vLLM); 0 = none */
	uint32_t log_rows;              /* rollback log rows per sequence (sixi-server); 0 = none */
	uint32_t batch_rows;            /* rows of one forward pass, for the activation estimate */
};

/* The plan command's defaults: headroom 1.25, bf16 KV and conv, fp32 state, 1 slot,
 * no log, 2048-row passes. */
void plan_workload_init(struct plan_workload *w, int64_t context_tokens, int64_t sequences);
/* sixi-server's own settings: fp32 KV, state and conv (its CPU forward pass), headroom 1,
 * one state slot per sequence plus log_rows kept rows, passes of batch_rows rows. */
void plan_workload_server(struct plan_workload *w, int64_t context_tokens, int64_t sequences,
			  uint32_t log_rows, uint32_t batch_rows);

struct plan_breakdown {
	uint64_t weights_bytes;
	uint64_t kv_bytes;              /* attention KV for all sequences, headroom included */
	uint64_t ssm_bytes;             /* recurrent state, all slots */
	uint64_t conv_bytes;            /* conv windows, all slots, plus the log's conv rows */
	uint64_t draft_state_bytes;     /* per-draft-token SSM states and conv rows, all sequences */
	uint64_t log_bytes;             /* rollback log rows (k, v, g, beta per V-head), all sequences */
	uint64_t activation_bytes;      /* estimate: one pass of batch_rows rows, fp32 */
	uint64_t total_bytes;
	/* units behind them */
	uint64_t kv_per_token_bytes;    /* full-attention layers (sliding layers included until capped) */
	uint64_t kv_per_sequence_bytes; /* at the workload's context, before headroom */
	uint64_t ssm_per_slot_bytes, conv_per_slot_bytes, log_row_bytes;
	uint64_t state_slots;           /* sequences x spec_slots */
};

/* The breakdown of a model under a workload. This is what sixi-server calls at start-up:
 *   struct plan_workload w; plan_workload_server(&w, ctx, seqs, log_rows, batch_rows);
 *   plan_compute(&model, &w, &b, err, sizeof err);
 * then compares b.total_bytes with its memory limit and, if it does not fit, asks
 * plan_fit_context / plan_fit_sequences what would. -EINVAL for zero or negative sizes,
 * -EOVERFLOW when a total passes 2^64 bytes. */
__attribute__((warn_unused_result)) int plan_compute(const struct plan_model *m, const struct plan_workload *w,
						     struct plan_breakdown *out, char *err, size_t errlen);

/* sixi-server's start-up sizing in one call: plan_workload_server + plan_compute. The
 * model comes from plan_model_from_gguf() on the server's open GGUF (plan_gguf.h) or is
 * filled by hand from the server's own config after plan_model_init(); weight_bytes
 * should then be the loaded tensors' bytes. */
__attribute__((warn_unused_result)) int plan_server_breakdown(const struct plan_model *m, int64_t context_tokens,
							      int64_t sequences, uint32_t log_rows,
							      uint32_t batch_rows, struct plan_breakdown *out,
							      char *err, size_t errlen);

/* Largest context (<= max_tokens) at w->sequences sequences whose total stays within
 * memory_bytes; 0 when not even one token fits. */
int64_t plan_fit_context(const struct plan_model *m, const struct plan_workload *w, uint64_t memory_bytes,
			 int64_t max_tokens);
/* Most sequences (<= max_sequences) at w->context_tokens whose total stays within
 * memory_bytes; 0 when not even one fits. */
int64_t plan_fit_sequences(const struct plan_model *m, const struct plan_workload *w, uint64_t memory_bytes,
			   int64_t max_sequences);

/* SGLang's Mamba pool for a hybrid, as its memory-pool code sizes it: (slots + 1) SSM and
 * conv states (one padding slot), plus, with a draft of draft_tokens, an intermediate
 * cache of (running + 1) x draft_tokens SSM states and (running + 1) x (draft_tokens +
 * kernel - 2) conv rows, where running = slots / spec_slots. Reproduces the published
 * 80-slot pool (15.6 GiB at bf16 state). */
uint64_t plan_sglang_mamba_pool_bytes(const struct plan_model *m, uint64_t slots, uint32_t spec_slots,
				      uint32_t draft_tokens, enum plan_dtype state, enum plan_dtype conv);

/* "15.27 GiB" style, binary units; returns buf. */
const char *plan_format_bytes(uint64_t bytes, char *buf, size_t len);
#endif
