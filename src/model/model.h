/* model — the hybrid Gated DeltaNet language model (llama.cpp's `qwen35` architecture:
 * Qwen3.5 dense text models) on the CPU: loading from GGUF, the recurrent-state slot pool,
 * and a batched forward pass over many sequences of different lengths.
 *
 * Layers: every full_attention_interval-th layer is gated full attention with a KV cache,
 * the others are Gated DeltaNet layers with a fixed-size recurrent state per sequence.
 * Weights are F32, F16, BF16 or Q8_0 and are read in place from the mmapped file; all
 * activations, states and caches are fp32.
 * Conventions are the GGUF file's (llama.cpp's converter): norm weights already hold 1+w,
 * ssm_a holds −exp(A_log), V-heads are in tiled order (V-head j uses K-head j mod H_k).
 *
 * Does not: sample, tokenize (the tokenizer module reads the same GGUF, see model_gguf),
 * roll back recurrent state (a slot only moves forward; copy a slot to branch it).
 * Threads: one model_forward at a time per model; it uses the model's thread pool.
 * Ownership: arguments are borrowed; pointers returned by getters live as long as the model. */
#ifndef SIXI_MODEL_MODEL_H
#define SIXI_MODEL_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gguf;
struct gguf_writer;

/* Hyper-parameters, named after the GGUF keys they come from (qwen35.*). */
struct model_config {
	int n_vocab;            /* rows of token_embd */
	int n_embd;             /* embedding_length */
	int n_layer;            /* block_count */
	int n_ff;               /* feed_forward_length */
	int n_head;             /* attention.head_count */
	int n_head_kv;          /* attention.head_count_kv */
	int head_dim;           /* attention.key_length (== value_length) */
	int n_rot;              /* rope.dimension_count: rotated dims per head (partial RoPE) */
	float rope_theta;       /* rope.freq_base */
	float norm_eps;         /* attention.layer_norm_rms_epsilon */
	int ssm_conv_kernel;    /* ssm.conv_kernel: causal conv width */
	int ssm_head_dim;       /* ssm.state_size: d_k == d_v of a GDN head */
	int ssm_n_k_heads;      /* ssm.group_count: H_k */
	int ssm_n_v_heads;      /* ssm.time_step_rank: H_v */
	int full_attn_interval; /* full_attention_interval: layer i is attention iff (i+1) % it == 0 */
	int n_ctx_train;        /* context_length */
};

struct model;

/* Opens a qwen35 GGUF and checks every key and tensor it needs. n_threads <= 0: all CPUs.
 * NULL on failure with "FILE: what (key or tensor), what is supported" in err. */
struct model *model_load(const char *path, int n_threads, char *err, size_t errlen);
/* The same over a GGUF already open (e.g. to read its tokenizer first); takes ownership of g
 * (closed on failure too). name is used in messages. */
struct model *model_load_gguf(struct gguf *g, const char *name, int n_threads, char *err, size_t errlen);
void model_free(struct model *m);

const struct model_config *model_get_config(const struct model *m);
bool model_layer_is_attention(const struct model *m, int layer);
/* The GGUF the model was loaded from (tokenizer.ggml.* keys, tokenizer.chat_template), or
 * NULL for a model built from a Hugging Face directory. */
const struct gguf *model_gguf(const struct model *m);
/* "avx2" or "portable": the matmul path in use. */
const char *model_isa(const struct model *m);
/* Force the portable kernels (tests compare the paths); call before the first forward. */
int model_set_isa(struct model *m, const char *isa);

/* ---- the state pool ---- */
/* Per slot: for each GDN layer the recurrent state [H_v][d_v][d_k] and the conv window
 * [conv_kernel-1][conv_dim]; for each attention layer a KV cache of n_ctx rows. Kernels read
 * and write the slots in place. A slot starts empty (position 0). */
struct model_state;
struct model_state *model_state_create(const struct model *m, int n_slots, int n_ctx);
void model_state_destroy(struct model_state *s);
int model_state_slots(const struct model_state *s);
int model_state_n_ctx(const struct model_state *s);
/* Rows the slot holds: the position its next row must have. */
int model_state_slot_pos(const struct model_state *s, int slot);
int model_state_slot_reset(struct model_state *s, int slot);
/* dst becomes an exact copy of src (state, conv window, KV rows, position). */
int model_state_slot_copy(struct model_state *s, int dst, int src);
/* Bytes of one slot. */
size_t model_state_slot_bytes(const struct model_state *s);

/* ---- the forward pass ---- */
/* One pass over n_rows rows drawn from any number of slots. Rows of one slot must be
 * consecutive in the batch, in order, and the first must have pos == the slot's position
 * (pos may be NULL: then it is implied). want_logits may be NULL: logits for every row.
 * logits_out receives n_vocab floats per row that wants logits, in row order.
 * Returns 0, or -EINVAL for a malformed batch (bad token, slot, order, position, or a slot
 * that would pass n_ctx), -ENOMEM; on error no slot has changed. */
struct model_batch {
	int n_rows;
	const int32_t *tokens;      /* [n_rows] */
	const int32_t *slots;       /* [n_rows] */
	const int32_t *pos;         /* [n_rows] or NULL */
	const uint8_t *want_logits; /* [n_rows] or NULL */
};
int model_forward(struct model *m, struct model_state *s, const struct model_batch *b, float *logits_out);

/* ---- building and writing ---- */
/* Fills cfg from the qwen35.* keys of g. -EINVAL with "FILE: key ..." in err when a key is
 * missing or out of range, or the architecture is not qwen35. */
int model_config_from_gguf(const struct gguf *g, const char *path, struct model_config *cfg, char *err,
			   size_t errlen);
/* Writes general.architecture and the qwen35.* keys of cfg (as llama.cpp reads them). */
int model_config_to_gguf(const struct model_config *cfg, struct gguf_writer *w);
/* Sanity of a config: positive sizes, heads that divide, n_rot even and <= head_dim. */
int model_config_check(const struct model_config *cfg, char *err, size_t errlen);

/* A tensor as the model reads it: ggml order shape, type, data (borrowed). */
struct model_tensor {
	const char *name;
	uint32_t n_dims;
	uint64_t ne[4];
	uint32_t type;
	const void *data;
	uint64_t n_bytes;
};
/* Looks a tensor up by its GGUF name (e.g. "blk.0.attn_qkv.weight"); NULL when absent. */
typedef const struct model_tensor *(*model_tensor_find_fn)(void *ctx, const char *name);
/* Builds a model over tensors someone else owns (the Hugging Face import uses this). `source`
 * names them in messages. The tensors must outlive the model. */
struct model *model_create(const struct model_config *cfg, model_tensor_find_fn find, void *ctx,
			   const char *source, int n_threads, char *err, size_t errlen);
#endif
