/* real — the engine (engine.h) over the project's hybrid Gated DeltaNet model
 * (model/model.h) and the tokenizer its GGUF carries (model/tokenizer.h).
 * Recurrent states live in the model's slot pool and are read and written in
 * place by the forward pass: the engine never copies a state, so its
 * state_copies counter stays 0. Arguments are borrowed. */
#ifndef SIXI_SERVER_REAL_H
#define SIXI_SERVER_REAL_H
#include <stddef.h>
#include <stdint.h>

struct buf;
struct engine;
struct engine_row;
struct model_batch;
struct tokenizer;

/* Loads path (a qwen35 GGUF), builds the tokenizer and n_slots states of n_ctx
 * positions. n_threads <= 0: all CPUs. NULL with "what, and what to do" in err. */
struct engine *real_engine_open(const char *path, int n_slots, int n_ctx, int n_threads, char *err,
				size_t errlen);
/* Speculative decoding: the pool keeps up to `rows` rows per slot for rollback (mode:
 * 1 = log, 2 = snapshot, as model.h's enum model_rollback) and the engine gains forward_keep
 * and rollback; *bytes gets what the log or ring takes for all slots. Call before the first
 * pass. 0, or -errno with a message in err. */
int real_engine_set_rollback(struct engine *e, int mode, int rows, size_t *bytes, char *err, size_t errlen);
/* A draft model of the same vocabulary for the speculative decoding set up above; it drafts
 * up to k_max tokens per step. 0, or -errno with "FILE: what, what to do" in err. */
int real_engine_set_draft(struct engine *e, const char *path, int k_max, int n_threads, char *err, size_t errlen);

/* ---- shared with the CUDA engine (cuda/engine_cuda.h), which serves the same GGUF ---- */
/* engine_ops.tokenize and .detokenize over a GGUF's tokenizer. 0 or -errno. */
int real_tok_encode(const struct tokenizer *tok, const char *text, size_t len, int32_t *ids, size_t cap, size_t *n);
int real_tok_piece(const struct tokenizer *tok, int32_t id, struct buf *out);
/* The scheduler's rows as a model_batch over scratch arrays that grow on demand (b points into
 * s until the next call). -EINVAL for a row whose slot is out of range or not in use. */
struct real_rows {
	int32_t *tokens, *slots, *pos; /* (cap) */
	uint8_t *want;                 /* (cap) */
	size_t cap;
};
int real_rows_batch(struct real_rows *s, const struct engine_row *rows, size_t n, int n_slots,
		    const unsigned char *used, struct model_batch *b);
void real_rows_finish(struct real_rows *s);
#endif
