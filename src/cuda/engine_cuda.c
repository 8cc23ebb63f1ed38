/* engine_cuda — see engine_cuda.h. Rows arrive grouped by sequence as the CPU engine gets
 * them (real.c); they are handed to cuda_model_forward as one batch. Tokenizing is real.c's. */
#include "cuda/engine_cuda.h"
#include "cuda/cuda_model.h"
#include "server/engine.h"
#include "server/real.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "text/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_engine {
	struct engine base;
	struct gguf *g;
	struct tokenizer *tok;
	struct cuda_model *cm;
	unsigned char *used;   /* (n_slots) */
	struct real_rows rows; /* batch scratch */
	char name[256];
};

/* GGUF tensors seen as model_create's lookup wants them. */
struct lookup {
	const struct gguf *g;
	struct model_tensor t;
};

static const struct model_tensor *find_tensor(void *ctx, const char *name)
{
	struct lookup *lk = ctx;
	const struct gguf_tensor *t = gguf_tensor_find(lk->g, name);
	if (!t)
		return NULL;
	lk->t = (struct model_tensor){ .name = t->name, .n_dims = t->n_dims, .type = t->type, .data = t->data,
				       .n_bytes = t->n_bytes };
	memcpy(lk->t.ne, t->ne, sizeof lk->t.ne);
	return &lk->t;
}

static int ce_tokenize(struct engine *e, const char *text, size_t len, int32_t *ids, size_t cap, size_t *n)
{
	return real_tok_encode(((struct cuda_engine *)e)->tok, text, len, ids, cap, n);
}

static int ce_detokenize(struct engine *e, int32_t id, struct buf *out)
{
	return real_tok_piece(((struct cuda_engine *)e)->tok, id, out);
}

static bool ce_is_eog(struct engine *e, int32_t id)
{
	return tok_is_eog(((struct cuda_engine *)e)->tok, id);
}

static int ce_pass(struct engine *e, const struct engine_row *rows, size_t n, const uint8_t *keep, float *logits)
{
	struct cuda_engine *c = (struct cuda_engine *)e;
	struct model_batch b;
	int rc = real_rows_batch(&c->rows, rows, n, e->n_slots, c->used, &b);
	if (rc == 0)
		rc = cuda_model_forward(c->cm, &b, keep, logits);
	if (rc == -EIO)
		fprintf(stderr, "sixi-server: CUDA engine: %s\n", cuda_model_error(c->cm));
	return rc;
}

static int ce_forward(struct engine *e, const struct engine_row *rows, size_t n, float *logits)
{
	return ce_pass(e, rows, n, NULL, logits);
}

static int ce_forward_keep(struct engine *e, const struct engine_row *rows, size_t n, const uint8_t *keep,
			   float *logits)
{
	return ce_pass(e, rows, n, keep, logits);
}

static int ce_rollback(struct engine *e, int slot, int n)
{
	return cuda_model_slot_rollback(((struct cuda_engine *)e)->cm, slot, n);
}

static int ce_slot_alloc(struct engine *e)
{
	struct cuda_engine *c = (struct cuda_engine *)e;
	for (int i = 0; i < e->n_slots; i++)
		if (!c->used[i]) {
			int rc = cuda_model_slot_reset(c->cm, i);
			if (rc != 0)
				return rc;
			c->used[i] = 1;
			return i;
		}
	return -ENOSPC;
}

static void ce_slot_free(struct engine *e, int slot)
{
	struct cuda_engine *c = (struct cuda_engine *)e;
	if (slot >= 0 && slot < e->n_slots)
		c->used[slot] = 0;
}

static int ce_slot_copy(struct engine *e, int dst, int src)
{
	struct cuda_engine *c = (struct cuda_engine *)e;
	if (dst < 0 || dst >= e->n_slots || src < 0 || src >= e->n_slots || !c->used[dst] || !c->used[src])
		return -EINVAL;
	return cuda_model_slot_copy(c->cm, dst, src);
}

static void ce_destroy(struct engine *e)
{
	struct cuda_engine *c = (struct cuda_engine *)e;
	cuda_model_destroy(c->cm);
	tok_destroy(c->tok);
	if (c->g)
		gguf_close(c->g);
	free(c->used);
	real_rows_finish(&c->rows);
	free(c);
}

static float *ce_logits_alloc(struct engine *e, size_t n_floats)
{
	(void)e;
	return cuda_host_alloc(n_floats * sizeof(float));
}

static void ce_logits_free(struct engine *e, float *p)
{
	(void)e;
	cuda_host_free(p);
}

static const struct engine_ops cuda_ops = {
	.tokenize = ce_tokenize,
	.detokenize = ce_detokenize,
	.is_eog = ce_is_eog,
	.forward = ce_forward,
	.slot_alloc = ce_slot_alloc,
	.slot_free = ce_slot_free,
	.slot_copy = ce_slot_copy,
	.logits_alloc = ce_logits_alloc,
	.logits_free = ce_logits_free,
	.destroy = ce_destroy,
};

static const struct engine_ops cuda_spec_ops = {
	.tokenize = ce_tokenize,
	.detokenize = ce_detokenize,
	.is_eog = ce_is_eog,
	.forward = ce_forward,
	.slot_alloc = ce_slot_alloc,
	.slot_free = ce_slot_free,
	.slot_copy = ce_slot_copy,
	.forward_keep = ce_forward_keep,
	.rollback = ce_rollback,
	.logits_alloc = ce_logits_alloc,
	.logits_free = ce_logits_free,
	.destroy = ce_destroy,
};

int cuda_engine_device(int device, char *name, size_t name_len, size_t *free_bytes, size_t *total_bytes, char *err,
		       size_t errlen)
{
	return cuda_device_query(device, name, name_len, free_bytes, total_bytes, err, errlen);
}

struct engine *cuda_engine_open(const char *path, int device, int n_slots, int n_ctx, int rb_rows, char *err,
				size_t errlen)
{
	struct cuda_engine *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->base.ops = rb_rows > 0 ? &cuda_spec_ops : &cuda_ops;
	struct model_config cfg;
	char terr[512];
	c->g = gguf_open(path, err, errlen);
	if (!c->g || model_config_from_gguf(c->g, path, &cfg, err, errlen) != 0)
		goto fail;
	c->tok = tok_load_gguf(c->g, terr, sizeof terr);
	if (!c->tok) {
		snprintf(err, errlen, "%s: tokenizer: %s", path, terr);
		goto fail;
	}
	if ((size_t)cfg.n_vocab < tok_vocab_size(c->tok)) {
		snprintf(err, errlen, "%s: the tokenizer has %zu tokens but the model only %d rows of embeddings", path,
			 tok_vocab_size(c->tok), cfg.n_vocab);
		goto fail;
	}
	c->used = calloc((size_t)n_slots, 1);
	if (!c->used) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	struct lookup lk = { .g = c->g };
	c->cm = cuda_model_create(device, &cfg, find_tensor, &lk, path, n_slots, n_ctx, rb_rows, err, errlen);
	if (!c->cm)
		goto fail;
	const char *slash = strrchr(path, '/');
	snprintf(c->name, sizeof c->name, "%s", slash ? slash + 1 : path);
	c->base.name = c->name;
	c->base.n_vocab = cfg.n_vocab;
	c->base.n_logits = cfg.n_vocab;
	c->base.n_sample = (int32_t)tok_vocab_size(c->tok);
	c->base.eos = tok_eos(c->tok);
	c->base.n_ctx = n_ctx;
	c->base.n_slots = n_slots;
	c->base.time_scale = 1;
	c->base.chat_template = gguf_get_str(c->g, "tokenizer.chat_template");
	c->base.bos_text = tok_bos(c->tok) >= 0 ? tok_piece(c->tok, tok_bos(c->tok)) : NULL;
	c->base.eos_text = tok_eos(c->tok) >= 0 ? tok_piece(c->tok, tok_eos(c->tok)) : NULL;
	atomic_init(&c->base.state_copies, 0);
	struct model_state_memory mm;
	cuda_model_memory(c->cm, &mm, NULL);
	c->base.mem_kv = (int64_t)mm.kv;
	c->base.mem_gdn_state = (int64_t)mm.gdn_state;
	c->base.mem_conv = (int64_t)mm.conv;
	c->base.mem_rollback = (int64_t)mm.rollback;
	c->base.mem_snapshot_ring = (int64_t)mm.snapshot_ring;
	return &c->base;
fail:
	ce_destroy(&c->base);
	return NULL;
}
