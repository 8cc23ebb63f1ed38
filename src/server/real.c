/* real — see real.h. A pass's rows arrive from the scheduler grouped by
 * sequence with each sequence's rows consecutive and in position order (decode
 * rows are one per sequence, a prompt chunk is contiguous), which is what
 * model_forward requires. Token pieces are decoded one id at a time; the
 * scheduler holds back incomplete UTF-8 before text reaches a client. */
#include "server/real.h"
#include "core/err.h"
#include "server/engine.h"
#include "core/buf.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "server/spec_draft.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct real_engine {
	struct engine base;
	struct model *m;
	struct model_state *st;
	struct tokenizer *tok;
	struct spec_draft *draft; /* NULL: no draft model */
	unsigned char *used;   /* (n_slots) */
	struct real_rows rows; /* batch scratch */
	char name[256];
};

int real_tok_encode(const struct tokenizer *tok, const char *text, size_t len, int32_t *ids, size_t cap, size_t *n)
{
	int32_t *out = NULL;
	size_t k = 0;
	int rc = tok_encode(tok, text, len, true, true, &out, &k);
	if (rc != 0)
		return rc;
	memcpy(ids, out, (k < cap ? k : cap) * sizeof(int32_t));
	*n = k;
	free(out);
	return 0;
}

int real_tok_piece(const struct tokenizer *tok, int32_t id, struct buf *out)
{
	char *text = NULL, *one = NULL;
	size_t len = 0, len1 = 0;
	int rc;
	if (tok_model_kind(tok) == TOK_MODEL_SPM) {
		/* SentencePiece drops the leading space of the first token decoded; a
		 * generated token is never first, so decode it as the second of two and
		 * keep the bytes it adds. */
		int32_t two[2] = { id, id };
		rc = tok_decode(tok, two, 2, false, &text, &len);
		if (rc == 0)
			rc = tok_decode(tok, &id, 1, false, &one, &len1);
		if (rc == 0 && len >= len1)
			rc = buf_append(out, text + len1, len - len1);
	} else {
		rc = tok_decode(tok, &id, 1, false, &text, &len);
		if (rc == 0)
			rc = buf_append(out, text, len);
	}
	free(text);
	free(one);
	return rc;
}

static int real_tokenize(struct engine *e, const char *text, size_t len, int32_t *ids, size_t cap, size_t *n)
{
	return real_tok_encode(((struct real_engine *)e)->tok, text, len, ids, cap, n);
}

static int real_detokenize(struct engine *e, int32_t id, struct buf *out)
{
	return real_tok_piece(((struct real_engine *)e)->tok, id, out);
}

static bool real_is_eog(struct engine *e, int32_t id)
{
	return tok_is_eog(((struct real_engine *)e)->tok, id);
}

int real_rows_batch(struct real_rows *s, const struct engine_row *rows, size_t n, int n_slots,
		    const unsigned char *used, struct model_batch *b)
{
	if (n > s->cap) {
		size_t c = n * 2;
		int32_t *t = realloc(s->tokens, c * sizeof *t);
		if (t)
			s->tokens = t;
		int32_t *sl = realloc(s->slots, c * sizeof *sl);
		if (sl)
			s->slots = sl;
		int32_t *p = realloc(s->pos, c * sizeof *p);
		if (p)
			s->pos = p;
		uint8_t *w = realloc(s->want, c);
		if (w)
			s->want = w;
		if (!t || !sl || !p || !w)
			return -ENOMEM;
		s->cap = c;
	}
	for (size_t i = 0; i < n; i++) {
		if (rows[i].slot < 0 || rows[i].slot >= n_slots || !used[rows[i].slot])
			return -EINVAL;
		s->tokens[i] = rows[i].token;
		s->slots[i] = rows[i].slot;
		s->pos[i] = rows[i].pos;
		s->want[i] = rows[i].want_logits;
	}
	*b = (struct model_batch){ .n_rows = (int)n, .tokens = s->tokens, .slots = s->slots, .pos = s->pos,
				   .want_logits = s->want };
	return 0;
}

void real_rows_finish(struct real_rows *s)
{
	free(s->tokens);
	free(s->slots);
	free(s->pos);
	free(s->want);
	memset(s, 0, sizeof *s);
}

/* The draft's share of a pass (spec_draft_feed), run beside the target's. */
struct feed_job {
	struct spec_draft *d;
	const struct model_batch *b;
	const uint8_t *keep;
};

static void *feed_main(void *arg)
{
	struct feed_job *j = arg;
	/* a failure only leaves the rows to the draft's own catch-up */
	(void)spec_draft_feed(j->d, j->b->tokens, j->b->slots, j->b->pos, j->keep, j->b->n_rows);
	return NULL;
}

static int forward_rows(struct engine *e, const struct engine_row *rows, size_t n, const uint8_t *keep,
			float *logits)
{
	struct real_engine *r = (struct real_engine *)e;
	struct model_batch b;
	int rc = real_rows_batch(&r->rows, rows, n, e->n_slots, r->used, &b);
	if (rc != 0)
		return rc;
	/* Prompt rows (segments not kept) go to the draft model too, on a second thread while the
	 * target runs them: otherwise the draft reads a whole prompt serially before its first
	 * draft, which at a few dozen generated tokens a request costs more than speculation saves. */
	bool feed = false;
	for (size_t i = 0; r->draft && !feed && i < n; i++)
		feed = !keep || !keep[i];
	struct feed_job job = { r->draft, &b, keep };
	pthread_t th;
	bool threaded = feed && pthread_create(&th, NULL, feed_main, &job) == 0;
	if (feed && !threaded)
		feed_main(&job);
	rc = keep ? model_forward_keep(r->m, r->st, &b, keep, logits) : model_forward(r->m, r->st, &b, logits);
	if (threaded)
		pthread_join(th, NULL);
	return rc;
}

static int real_forward(struct engine *e, const struct engine_row *rows, size_t n, float *logits)
{
	return forward_rows(e, rows, n, NULL, logits);
}

static int real_forward_keep(struct engine *e, const struct engine_row *rows, size_t n, const uint8_t *keep,
			     float *logits)
{
	return forward_rows(e, rows, n, keep, logits);
}

static int real_rollback(struct engine *e, int slot, int n)
{
	return model_state_slot_rollback(((struct real_engine *)e)->st, slot, n);
}

static int real_slot_alloc(struct engine *e)
{
	struct real_engine *r = (struct real_engine *)e;
	for (int i = 0; i < e->n_slots; i++)
		if (!r->used[i]) {
			int rc = model_state_slot_reset(r->st, i);
			if (rc != 0)
				return rc;
			r->used[i] = 1;
			if (r->draft)
				spec_draft_reset(r->draft, i);
			return i;
		}
	return -ENOSPC;
}

static void real_slot_free(struct engine *e, int slot)
{
	struct real_engine *r = (struct real_engine *)e;
	if (slot >= 0 && slot < e->n_slots)
		r->used[slot] = 0;
}

static int real_slot_copy(struct engine *e, int dst, int src)
{
	struct real_engine *r = (struct real_engine *)e;
	if (dst < 0 || dst >= e->n_slots || src < 0 || src >= e->n_slots || !r->used[dst] || !r->used[src])
		return -EINVAL;
	int rc = model_state_slot_copy(r->st, dst, src);
	if (rc == 0 && r->draft)
		spec_draft_reset(r->draft, dst); /* the draft re-synchronises from the history */
	return rc;
}

static void real_destroy(struct engine *e)
{
	struct real_engine *r = (struct real_engine *)e;
	model_state_destroy(r->st);
	spec_draft_free(r->draft);
	tok_destroy(r->tok);
	model_free(r->m);
	free(r->used);
	real_rows_finish(&r->rows);
	free(r);
}

static const struct engine_ops real_ops = {
	.tokenize = real_tokenize,
	.detokenize = real_detokenize,
	.is_eog = real_is_eog,
	.forward = real_forward,
	.slot_alloc = real_slot_alloc,
	.slot_free = real_slot_free,
	.slot_copy = real_slot_copy,
	.host_row_ns = NULL,
	.destroy = real_destroy,
};

static int real_draft(struct engine *e, struct engine_draft *d, size_t n)
{
	struct real_engine *r = (struct real_engine *)e;
	struct spec_draft_req *q = malloc(n * sizeof *q);
	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		q[i] = (struct spec_draft_req){ .slot = d[i].slot, .hist = d[i].hist, .n_hist = d[i].n_hist, .k = d[i].k,
						.out = d[i].out, .pick = d[i].pick, .pick_arg = d[i].pick_arg };
	int rc = spec_draft_run(r->draft, q, n);
	for (size_t i = 0; i < n; i++)
		d[i].n_out = rc == 0 ? q[i].n_out : 0;
	free(q);
	return rc;
}

static const struct engine_ops real_draft_ops = {
	.tokenize = real_tokenize,
	.detokenize = real_detokenize,
	.is_eog = real_is_eog,
	.forward = real_forward,
	.slot_alloc = real_slot_alloc,
	.slot_free = real_slot_free,
	.slot_copy = real_slot_copy,
	.forward_keep = real_forward_keep,
	.rollback = real_rollback,
	.draft = real_draft,
	.host_row_ns = NULL,
	.destroy = real_destroy,
};

int real_engine_set_draft(struct engine *e, const char *path, int k_max, int n_threads, char *err, size_t errlen)
{
	struct real_engine *r = (struct real_engine *)e;
	if (!e->ops->rollback) {
		err_set(err, errlen, "a draft model needs speculative decoding set up first");
		return -EINVAL;
	}
	r->draft = spec_draft_open(path, r->m, e->n_slots, e->n_ctx, k_max, n_threads, err, errlen);
	if (!r->draft)
		return -EINVAL;
	e->ops = &real_draft_ops;
	return 0;
}

static void real_memory(struct real_engine *r)
{
	struct model_state_memory mm;
	model_state_memory(r->st, &mm);
	r->base.mem_kv = (int64_t)mm.kv;
	r->base.mem_gdn_state = (int64_t)mm.gdn_state;
	r->base.mem_conv = (int64_t)mm.conv;
	r->base.mem_rollback = (int64_t)mm.rollback;
	r->base.mem_snapshot_ring = (int64_t)mm.snapshot_ring;
}

static const struct engine_ops real_spec_ops = {
	.tokenize = real_tokenize,
	.detokenize = real_detokenize,
	.is_eog = real_is_eog,
	.forward = real_forward,
	.slot_alloc = real_slot_alloc,
	.slot_free = real_slot_free,
	.slot_copy = real_slot_copy,
	.forward_keep = real_forward_keep,
	.rollback = real_rollback,
	.host_row_ns = NULL,
	.destroy = real_destroy,
};

int real_engine_set_rollback(struct engine *e, int mode, int rows, size_t *bytes, char *err, size_t errlen)
{
	struct real_engine *r = (struct real_engine *)e;
	int rc = model_state_set_rollback(r->st, (enum model_rollback)mode, rows);
	if (rc != 0) {
		err_set(err, errlen, "cannot keep %d rows per slot for rollback: %s", rows, strerror(-rc));
		return rc;
	}
	e->ops = mode ? &real_spec_ops : &real_ops;
	*bytes = model_state_rollback_bytes(r->st);
	real_memory(r);
	return 0;
}

struct engine *real_engine_open(const char *path, int n_slots, int n_ctx, int n_threads, char *err, size_t errlen)
{
	struct real_engine *r = calloc(1, sizeof *r);
	if (!r) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	r->base.ops = &real_ops;
	r->m = model_load(path, n_threads, err, errlen);
	if (!r->m)
		goto fail;
	const struct gguf *g = model_gguf(r->m);
	if (!g) {
		err_set(err, errlen, "%s: no GGUF metadata to build a tokenizer from", path);
		goto fail;
	}
	char terr[512];
	r->tok = tok_load_gguf(g, terr, sizeof terr);
	if (!r->tok) {
		err_set(err, errlen, "%s: tokenizer: %s", path, terr);
		goto fail;
	}
	const struct model_config *cfg = model_get_config(r->m);
	if ((size_t)cfg->n_vocab < tok_vocab_size(r->tok)) {
		err_set(err, errlen, "%s: the tokenizer has %zu tokens but the model only %d rows of embeddings", path,
			 tok_vocab_size(r->tok), cfg->n_vocab);
		goto fail;
	}
	r->st = model_state_create(r->m, n_slots, n_ctx);
	r->used = calloc((size_t)n_slots, 1);
	if (!r->st || !r->used) {
		err_set(err, errlen, "cannot allocate %d state slots of %d positions", n_slots, n_ctx);
		goto fail;
	}
	const char *slash = strrchr(path, '/');
	snprintf(r->name, sizeof r->name, "%s", slash ? slash + 1 : path);
	r->base.name = r->name;
	r->base.n_vocab = cfg->n_vocab;
	r->base.n_logits = cfg->n_vocab;
	r->base.n_sample = (int32_t)tok_vocab_size(r->tok); /* padding rows beyond the vocabulary never win */
	r->base.eos = tok_eos(r->tok);
	r->base.n_ctx = n_ctx;
	r->base.n_slots = n_slots;
	r->base.time_scale = 1;
	r->base.chat_template = gguf_get_str(g, "tokenizer.chat_template");
	r->base.bos_text = tok_bos(r->tok) >= 0 ? tok_piece(r->tok, tok_bos(r->tok)) : NULL;
	r->base.eos_text = tok_eos(r->tok) >= 0 ? tok_piece(r->tok, tok_eos(r->tok)) : NULL;
	atomic_init(&r->base.state_copies, 0);
	real_memory(r);
	return &r->base;
fail:
	real_destroy(&r->base);
	return NULL;
}
