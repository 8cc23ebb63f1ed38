/* model — the hybrid Gated DeltaNet language model (llama.cpp's `qwen35` architecture:
 * Qwen3.5 dense text models, and `qwen35moe`: the same with a mixture-of-experts MLP) on the CPU: loading from GGUF, the recurrent-state slot pool,
 * and a batched forward pass over many sequences of different lengths.
 *
 * Layers: every full_attention_interval-th layer is gated full attention with a KV cache,
 * the others are Gated DeltaNet layers with a fixed-size recurrent state per sequence.
 * MoE layers (qwen35moe, computed as llama.cpp does): router logits W_r h, a softmax over all
 * experts, the expert_used_count most probable, their probabilities renormalised to sum 1;
 * the output is the chosen experts' SwiGLU outputs weighted by those, plus the shared
 * expert's output times sigmoid(w_s . h). A pass groups its rows by expert, so each chosen
 * expert's matrices are read once a pass however many rows chose it.
 * Weights are F32, F16, BF16 or a block type of quant.h. The matrices are copied once, unchanged, into memory
 * backed by transparent huge pages when the kernel offers them and they take at most a
 * quarter of the RAM (a pass streams them all; 4 KiB pages cost a TLB miss every 4 KiB);
 * otherwise they are read in place from the mmapped file. All activations, states and
 * caches are fp32.
 * Conventions are the GGUF file's (llama.cpp's converter): norm weights already hold 1+w,
 * ssm_a holds −exp(A_log), V-heads are in tiled order (V-head j uses K-head j mod H_k).
 *
 * Does not: sample, tokenize (the tokenizer module reads the same GGUF, see model_gguf).
 * Rolling rows back (speculative decoding) is opt-in per pool, see "rollback" below.
 * Threads: one model_forward at a time per model; it uses the model's thread pool.
 * Ownership: arguments are borrowed; pointers returned by getters live as long as the model. */
#ifndef SIXI_MODEL_MODEL_H
#define SIXI_MODEL_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gguf;
struct gguf_writer;

/* Hyper-parameters, named after the GGUF keys they come from (qwen35.* or qwen35moe.*). */
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
	/* qwen35moe only (all 0 for the dense qwen35): every layer's MLP is n_expert routed experts
	 * of width n_ff_exp, n_expert_used of them per row, plus one shared expert of width n_ff
	 * (expert_shared_feed_forward_length) behind a sigmoid gate. */
	int n_expert;           /* expert_count */
	int n_expert_used;      /* expert_used_count */
	int n_ff_exp;           /* expert_feed_forward_length */
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
/* "avx512", "avx2" or "portable": the matrix-product path in use. */
const char *model_isa(const struct model *m);
/* Choose the matrix-product path ("auto", "avx512", "avx2", "portable"; tests and benchmarks compare
 * them). The per-sequence vector work always takes the widest path the CPU has. */
int model_set_isa(struct model *m, const char *isa);

/* Stores every F16 and BF16 weight matrix (not the token embedding) as F32, converted once,
 * when together they take at most max_bytes as F32; otherwise -E2BIG and nothing changes
 * (-ENOMEM likewise). Exact (both types widen to F32 without rounding) and the pass computes
 * the same floats, but no longer widens every row of every matrix on each pass: for a model
 * of a few MB, one-row passes run about twice as fast (a draft model, say). Call before the
 * first pass, from the thread that owns the model. */
int model_matrices_f32(struct model *m, size_t max_bytes);

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

/* ---- rollback: rows kept for speculative verification ---- */
/* A pool with rollback keeps the rows of model_forward_spec passes so that the last rows of a
 * slot can be dropped again (model_state_slot_rollback). Two modes:
 *  - MODEL_ROLLBACK_LOG: the slot's GDN state is a base state plus a log of the rows since
 *    (gdn_log.h says what a row holds). A spec pass copies the base, replays the kept rows on
 *    the copy with exactly the float operations of the forward pass, then runs the new rows
 *    on it and appends them to the log; the base is written only when the log is folded
 *    into it (when a pass would overflow the log, on model_commit, and before a plain
 *    model_forward on the slot). Rolling back is moving the log's end.
 *  - MODEL_ROLLBACK_SNAPSHOT: the state is updated in place and a ring keeps the state and
 *    conv window before the first kept row and after every kept row; rolling back copies
 *    one back. The baseline and test oracle.
 * In both, attention KV rows roll back by truncation (the slot's position moves back).
 * A spec pass runs every row of a logged segment with the row-by-row delta rule (what a
 * one-row decode runs), so a speculative run and a plain one-row-at-a-time run compute the
 * same floats. max_rows: rows the log (or ring) keeps per slot; a spec segment longer than
 * that is refused. Setting the mode resets every slot's kept rows (the state is kept). */
enum model_rollback { MODEL_ROLLBACK_NONE = 0, MODEL_ROLLBACK_LOG = 1, MODEL_ROLLBACK_SNAPSHOT = 2 };
int model_state_set_rollback(struct model_state *s, enum model_rollback mode, int max_rows);
enum model_rollback model_state_rollback_mode(const struct model_state *s);
/* Rows a spec segment may have (max_rows), 0 without rollback. */
int model_state_rollback_capacity(const struct model_state *s);
/* Rows of the slot that can be rolled back now (kept since the last fold). */
int model_state_slot_kept(const struct model_state *s, int slot);
/* Drops the slot's last n rows: -EINVAL for a bad slot, -ERANGE when n > kept rows. */
int model_state_slot_rollback(struct model_state *s, int slot, int n);
/* Bytes of the log or snapshot ring of all slots (0 without rollback). */
size_t model_state_rollback_bytes(const struct model_state *s);
/* The pool's bytes by part, all slots: attention KV cache, GDN recurrent states, conv windows,
 * the rollback log or ring, and what a snapshot ring of the same depth (one state and window
 * per kept row plus the one before) takes; the last two are 0 without rollback. */
struct model_state_memory {
	size_t kv, gdn_state, conv, rollback, snapshot_ring;
};
void model_state_memory(const struct model_state *s, struct model_state_memory *out);
/* Like model_forward, but every segment is kept for rollback. -EINVAL without rollback,
 * -E2BIG when a kept segment has more rows than the capacity; nothing changed then. */
int model_forward_spec(struct model *m, struct model_state *s, const struct model_batch *b, float *logits_out);
/* Per slot: keep [n_rows] (NULL: none); a slot's segment is kept when keep is set on its first
 * row. Slots not kept run as in model_forward (their kept rows are folded first). */
int model_forward_keep(struct model *m, struct model_state *s, const struct model_batch *b, const uint8_t *keep,
		       float *logits_out);
/* Folds the slot's kept rows into its state (they can no longer be rolled back). */
int model_commit(struct model *m, struct model_state *s, int slot);
/* The slot's GDN layer `gdn` as stored: the state [H_v][d_v][d_k] followed by the conv window
 * [conv_kernel-1][conv_dim] (*n_floats gets the total). In log mode it is the base: call
 * model_commit first to read the slot's current state. NULL for a bad slot or layer. */
const float *model_state_slot_gdn(const struct model_state *s, int slot, int gdn, size_t *n_floats);

/* ---- building and writing ---- */
/* Fills cfg from the qwen35.* (or qwen35moe.*) keys of g. -EINVAL with "FILE: key ..." in err
 * when a key is missing or out of range, or the architecture is neither. */
int model_config_from_gguf(const struct gguf *g, const char *path, struct model_config *cfg, char *err,
			   size_t errlen);
/* Writes general.architecture and the qwen35.* keys of cfg (as llama.cpp reads them);
 * qwen35moe and its expert_* keys when cfg->n_expert > 0. */
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
