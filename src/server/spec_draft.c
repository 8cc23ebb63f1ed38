/* spec_draft — see spec_draft.h. Per slot the draft remembers the ids its state has consumed
 * (fed[slot], n_fed[slot]); its pool keeps k_max rows for rollback (log mode), enough for the
 * drafts of one call, which are the only rows it ever takes back. */
#include "server/spec_draft.h"
#include "core/err.h"

#include "model/model.h"
#include "model/spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct spec_draft {
	struct model *m;
	struct model_state *st;
	int n_slots, n_ctx, k_max, n_vocab;
	int32_t *fed;   /* (n_slots, n_ctx) ids consumed per slot */
	int *n_fed;     /* (n_slots) */
	int32_t *tok, *slot; /* batch scratch (cap) */
	uint8_t *want;
	size_t cap;
	float *logits;  /* (n_slots, n_vocab) */
};

void spec_draft_free(struct spec_draft *d)
{
	if (!d)
		return;
	model_state_destroy(d->st);
	model_free(d->m);
	free(d->fed);
	free(d->n_fed);
	free(d->tok);
	free(d->slot);
	free(d->want);
	free(d->logits);
	free(d);
}

struct spec_draft *spec_draft_open(const char *path, const struct model *target, int n_slots, int n_ctx,
				   int k_max, int n_threads, char *err, size_t errlen)
{
	struct spec_draft *d = calloc(1, sizeof *d);
	if (!d) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	char why[512];
	d->m = model_load(path, n_threads, why, sizeof why);
	if (!d->m) {
		err_set(err, errlen, "draft model: %s", why);
		goto fail;
	}
	if (spec_check_draft(target, d->m, why, sizeof why) != 0) {
		err_set(err, errlen, "%s: %s", path, why);
		goto fail;
	}
	/* The draft runs one-row passes, where widening BF16 rows is half the time; a draft of a
	 * few MB affords F32 matrices (a larger one keeps its type). */
	int rc = model_matrices_f32(d->m, (size_t)64 << 20);
	if (rc != 0 && rc != -E2BIG) {
		err_set(err, errlen, "draft model: out of memory for its matrices");
		goto fail;
	}
	d->n_slots = n_slots;
	d->n_ctx = n_ctx;
	d->k_max = k_max;
	d->n_vocab = model_get_config(d->m)->n_vocab;
	d->st = model_state_create(d->m, n_slots, n_ctx);
	d->fed = malloc(sizeof(int32_t) * (size_t)n_slots * (size_t)n_ctx);
	d->n_fed = calloc((size_t)n_slots, sizeof(int));
	d->logits = malloc(sizeof(float) * (size_t)n_slots * (size_t)d->n_vocab);
	if (!d->st || !d->fed || !d->n_fed || !d->logits ||
	    model_state_set_rollback(d->st, MODEL_ROLLBACK_LOG, k_max) != 0) {
		err_set(err, errlen, "draft model: cannot allocate %d state slots of %d positions", n_slots, n_ctx);
		goto fail;
	}
	return d;
fail:
	spec_draft_free(d);
	return NULL;
}

void spec_draft_reset(struct spec_draft *d, int slot)
{
	if (slot >= 0 && slot < d->n_slots) {
		model_state_slot_reset(d->st, slot);
		d->n_fed[slot] = 0;
	}
}

size_t spec_draft_state_bytes(const struct spec_draft *d)
{
	return model_state_slot_bytes(d->st) * (size_t)d->n_slots + model_state_rollback_bytes(d->st);
}

static int grow(struct spec_draft *d, size_t n)
{
	if (n <= d->cap)
		return 0;
	int32_t *t = realloc(d->tok, n * sizeof *t), *s = t ? realloc(d->slot, n * sizeof *s) : NULL;
	if (t)
		d->tok = t;
	if (s)
		d->slot = s;
	uint8_t *w = s ? realloc(d->want, n) : NULL;
	if (w)
		d->want = w;
	if (!t || !s || !w)
		return -ENOMEM;
	d->cap = n;
	return 0;
}

static int argmax(const float *v, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return b;
}

int spec_draft_feed(struct spec_draft *d, const int32_t *tokens, const int32_t *slots, const int32_t *pos,
		    const uint8_t *keep, int n)
{
	int rc = grow(d, (size_t)(n > 0 ? n : 1));
	if (rc != 0)
		return rc;
	size_t at = 0;
	for (int r0 = 0, r1; r0 < n; r0 = r1) {
		int s = slots[r0];
		for (r1 = r0 + 1; r1 < n && slots[r1] == s; r1++)
			;
		if ((keep && keep[r0]) || s < 0 || s >= d->n_slots || pos[r0] != d->n_fed[s] ||
		    pos[r0] + (r1 - r0) > d->n_ctx)
			continue;
		for (int j = r0; j < r1; j++) {
			d->tok[at] = tokens[j];
			d->slot[at] = s;
			d->want[at] = 0;
			at++;
		}
	}
	if (at == 0)
		return 0;
	struct model_batch b = { .n_rows = (int)at, .tokens = d->tok, .slots = d->slot, .want_logits = d->want };
	if ((rc = model_forward(d->m, d->st, &b, NULL)) != 0)
		return rc;
	for (size_t i = 0; i < at; i++) /* consumed: note the ids where the catch-up compares them */
		d->fed[(size_t)d->slot[i] * d->n_ctx + d->n_fed[d->slot[i]]++] = d->tok[i];
	return 0;
}

int spec_draft_run(struct spec_draft *d, struct spec_draft_req *r, size_t n)
{
	size_t rows = 0;
	int rc = 0, k_most = 0;
	/* 1. catch up: drop rejected drafts, then feed the history ids not yet consumed */
	for (size_t i = 0; i < n; i++) {
		int s = r[i].slot, c = 0;
		r[i].n_out = 0;
		if (s < 0 || s >= d->n_slots || r[i].n_hist < 1 || r[i].n_hist + r[i].k > d->n_ctx || r[i].k > d->k_max)
			return -EINVAL;
		int *nf = &d->n_fed[s];
		const int32_t *fed = d->fed + (size_t)s * d->n_ctx;
		while (c < *nf && c < r[i].n_hist && fed[c] == r[i].hist[c])
			c++;
		if (c == r[i].n_hist) /* the last id must be fed again for its logits */
			c--;
		if (*nf - c > model_state_slot_kept(d->st, s)) {
			spec_draft_reset(d, s); /* diverged beyond the kept rows: start over */
			c = 0;
		} else if ((rc = model_state_slot_rollback(d->st, s, *nf - c)) != 0) {
			return rc;
		}
		*nf = c;
		rows += (size_t)(r[i].n_hist - c);
		if (r[i].k > k_most)
			k_most = r[i].k;
	}
	if ((rc = grow(d, rows + n)) != 0)
		return rc;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		int s = r[i].slot;
		int32_t *fed = d->fed + (size_t)s * d->n_ctx;
		for (int j = d->n_fed[s]; j < r[i].n_hist; j++) {
			d->tok[at] = r[i].hist[j];
			d->slot[at] = s;
			d->want[at] = j == r[i].n_hist - 1;
			fed[j] = r[i].hist[j];
			at++;
		}
		d->n_fed[s] = r[i].n_hist;
	}
	struct model_batch b = { .n_rows = (int)at, .tokens = d->tok, .slots = d->slot, .want_logits = d->want };
	if ((rc = model_forward(d->m, d->st, &b, d->logits)) != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const float *row = d->logits + i * (size_t)d->n_vocab;
		int32_t t = r[i].pick ? r[i].pick(r[i].pick_arg, 0, row, d->n_vocab) : argmax(row, d->n_vocab);
		if (t < 0)
			return t;
		r[i].out[r[i].n_out++] = t;
	}
	/* 2. one kept row per pass for each sequence that wants more */
	for (int step = 1; step < k_most; step++) {
		at = 0;
		for (size_t i = 0; i < n; i++) {
			if (r[i].n_out >= r[i].k)
				continue;
			int s = r[i].slot;
			int32_t t = r[i].out[r[i].n_out - 1];
			d->tok[at] = t;
			d->slot[at] = s;
			d->want[at] = 1;
			d->fed[(size_t)s * d->n_ctx + d->n_fed[s]++] = t;
			at++;
		}
		if (at == 0)
			break;
		struct model_batch bk = { .n_rows = (int)at, .tokens = d->tok, .slots = d->slot, .want_logits = d->want };
		if ((rc = model_forward_spec(d->m, d->st, &bk, d->logits)) != 0)
			return rc;
		size_t li = 0;
		for (size_t i = 0; i < n; i++) {
			if (r[i].n_out >= r[i].k)
				continue;
			const float *row = d->logits + li++ * (size_t)d->n_vocab;
			int32_t t = r[i].pick ? r[i].pick(r[i].pick_arg, r[i].n_out, row, d->n_vocab)
					      : argmax(row, d->n_vocab);
			if (t < 0)
				return t;
			r[i].out[r[i].n_out++] = t;
		}
	}
	return 0;
}
