/* spec — see spec.h. One sequence, slot 0 of a pool per model created per generation; the
 * target's pool keeps rows with the chosen rollback mode, the draft's with the log. */
#include "model/spec.h"
#include "core/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

#define SPEC_DRAFT_LIMIT 64

struct spec {
	struct model *target, *draft;
	struct spec_opts o;
};

double spec_accept_len(const struct spec_stats *st)
{
	return st->steps > 0 ? (double)st->generated / (double)st->steps : 0.0;
}

double spec_accept_rate(const struct spec_stats *st)
{
	return st->drafted > 0 ? (double)st->accepted / (double)st->drafted : 0.0;
}

int spec_ngram_draft(const int32_t *hist, int n_hist, int ngram_min, int ngram_max, int max_draft, int32_t *out)
{
	if (ngram_min < 1)
		ngram_min = 1;
	for (int n = ngram_max; n >= ngram_min; n--) {
		if (n >= n_hist)
			continue;
		const int32_t *tail = hist + n_hist - n;
		/* latest earlier start i with hist[i..i+n) == tail and at least one token after it */
		for (int i = n_hist - n - 1; i >= 0; i--) {
			if (memcmp(hist + i, tail, sizeof(int32_t) * (size_t)n) != 0)
				continue;
			int k = 0;
			while (k < max_draft && i + n + k < n_hist) {
				out[k] = hist[i + n + k];
				k++;
			}
			return k;
		}
	}
	return 0;
}

int spec_check_draft(const struct model *target, const struct model *draft, char *err, size_t errlen)
{
	int nt = model_get_config(target)->n_vocab, nd = model_get_config(draft)->n_vocab;
	if (nt != nd) {
		err_set(err, errlen,
			"the draft model has a vocabulary of %d tokens, the target %d: a draft must use the target's "
			"tokenizer (pick a draft of the same model family)",
			nd, nt);
		return -EINVAL;
	}
	const struct gguf *gt = model_gguf(target), *gd = model_gguf(draft);
	if (!gt || !gd)
		return 0;
	long kt = gguf_find_key(gt, "tokenizer.ggml.tokens"), kd = gguf_find_key(gd, "tokenizer.ggml.tokens");
	if (kt < 0 || kd < 0)
		return 0;
	size_t n = gguf_kv_array_len(gt, (size_t)kt);
	if (n != gguf_kv_array_len(gd, (size_t)kd)) {
		err_set(err, errlen, "the draft model's tokenizer lists %zu tokens, the target's %zu: a draft must use "
			"the target's tokenizer", gguf_kv_array_len(gd, (size_t)kd), n);
		return -EINVAL;
	}
	for (size_t j = 0; j < n; j++) {
		size_t lt = gguf_get_arr_str_len(gt, (size_t)kt, j), ld = gguf_get_arr_str_len(gd, (size_t)kd, j);
		const char *a = gguf_get_arr_str(gt, (size_t)kt, j), *b = gguf_get_arr_str(gd, (size_t)kd, j);
		if (lt != ld || !a || !b || memcmp(a, b, lt) != 0) {
			err_set(err, errlen, "the draft model's token %zu differs from the target's: a draft must use the "
				"target's tokenizer", j);
			return -EINVAL;
		}
	}
	return 0;
}

struct spec *spec_create(struct model *target, struct model *draft, const struct spec_opts *o, char *err,
			 size_t errlen)
{
	struct spec_opts v = *o;
	if (v.draft_max < 1 || v.draft_max > SPEC_DRAFT_LIMIT) {
		err_set(err, errlen, "draft width %d is out of range: use 1 to %d", v.draft_max, SPEC_DRAFT_LIMIT);
		return NULL;
	}
	if (v.log_rows == 0)
		v.log_rows = v.draft_max + 1;
	if (v.log_rows < 0 || v.draft_max + 1 > v.log_rows) {
		err_set(err, errlen,
			"draft width %d needs %d rows of rollback log (the drafts plus the last token), the log holds "
			"%d: lower the draft width or raise the log size",
			v.draft_max, v.draft_max + 1, v.log_rows);
		return NULL;
	}
	if (v.rollback == MODEL_ROLLBACK_NONE)
		v.rollback = MODEL_ROLLBACK_LOG;
	if (v.rollback != MODEL_ROLLBACK_LOG && v.rollback != MODEL_ROLLBACK_SNAPSHOT) {
		err_set(err, errlen, "unknown rollback mode %d (log or snapshot)", (int)v.rollback);
		return NULL;
	}
	if (v.ngram_min <= 0)
		v.ngram_min = 1;
	if (v.ngram_max <= 0)
		v.ngram_max = 3;
	if (v.ngram_max < v.ngram_min) {
		err_set(err, errlen, "n-gram lengths %d..%d are empty: ngram_max must be >= ngram_min", v.ngram_min,
			v.ngram_max);
		return NULL;
	}
	if (draft && spec_check_draft(target, draft, err, errlen))
		return NULL;
	struct spec *sp = calloc(1, sizeof(*sp));
	if (!sp) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	sp->target = target;
	sp->draft = draft;
	sp->o = v;
	return sp;
}

void spec_free(struct spec *sp)
{
	free(sp);
}

static int argmax(const float *v, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return b;
}

/* Plain pass of tokens [0, n) on slot 0 with no logits. */
static int prefill(struct model *m, struct model_state *s, const int32_t *tok, int n)
{
	if (n <= 0)
		return 0;
	int32_t *slots = calloc((size_t)n, sizeof(int32_t));
	uint8_t *want = calloc((size_t)n, 1);
	int rc = -ENOMEM;
	if (slots && want) {
		struct model_batch b = { .n_rows = n, .tokens = tok, .slots = slots, .want_logits = want };
		rc = model_forward(m, s, &b, NULL);
	}
	free(slots);
	free(want);
	return rc;
}

/* Kept pass of tokens [0, n) on slot 0; logits of every row, or of the last only. */
static int spec_pass(struct model *m, struct model_state *s, const int32_t *tok, int n, int last_only,
		     float *logits)
{
	int32_t slots[SPEC_DRAFT_LIMIT + 2] = { 0 };
	uint8_t want[SPEC_DRAFT_LIMIT + 2];
	if (n > SPEC_DRAFT_LIMIT + 2)
		return -E2BIG;
	for (int i = 0; i < n; i++)
		want[i] = (uint8_t)(!last_only || i == n - 1);
	struct model_batch b = { .n_rows = n, .tokens = tok, .slots = slots, .want_logits = want };
	return model_forward_spec(m, s, &b, logits);
}

int spec_generate(struct spec *sp, const int32_t *prompt, int n_prompt, int n_gen, int32_t *out,
		  struct spec_stats *st)
{
	if (n_prompt < 1 || n_gen < 0)
		return -EINVAL;
	int K = sp->o.draft_max, n_vocab = model_get_config(sp->target)->n_vocab;
	int n_ctx = n_prompt + n_gen + K + 2;
	struct model_state *ts = model_state_create(sp->target, 1, n_ctx);
	struct model_state *ds = sp->draft ? model_state_create(sp->draft, 1, n_ctx) : NULL;
	int32_t *hist = malloc(sizeof(int32_t) * ((size_t)n_ctx));
	float *logits = malloc(sizeof(float) * (size_t)n_vocab * (size_t)(K + 1));
	int rc = 0;
	if (!ts || (sp->draft && !ds) || !hist || !logits)
		rc = -ENOMEM;
	if (!rc)
		rc = model_state_set_rollback(ts, sp->o.rollback, sp->o.log_rows);
	if (!rc && ds)
		rc = model_state_set_rollback(ds, MODEL_ROLLBACK_LOG, K + 2);
	if (!rc)
		rc = prefill(sp->target, ts, prompt, n_prompt - 1);
	if (!rc && ds)
		rc = prefill(sp->draft, ds, prompt, n_prompt - 1);
	if (rc)
		goto done;
	memcpy(hist, prompt, sizeof(int32_t) * (size_t)n_prompt);
	int len = n_prompt, dpos = n_prompt - 1, produced = 0;
	int32_t rows[SPEC_DRAFT_LIMIT + 1];
	while (produced < n_gen) {
		int k = n_gen - produced - 1 < K ? n_gen - produced - 1 : K;
		int32_t *d = rows + 1; /* d[0..k) are the drafts */
		rows[0] = hist[len - 1];
		if (k > 0 && !sp->draft) {
			k = spec_ngram_draft(hist, len, sp->o.ngram_min, sp->o.ngram_max, k, d);
		} else if (k > 0) {
			/* the draft catches up on history, then drafts one token per pass */
			if ((rc = model_commit(sp->draft, ds, 0)) ||
			    (rc = spec_pass(sp->draft, ds, hist + dpos, len - dpos, 1, logits)))
				goto done;
			d[0] = argmax(logits, n_vocab);
			for (int i = 1; i < k; i++) {
				if ((rc = spec_pass(sp->draft, ds, d + i - 1, 1, 1, logits)))
					goto done;
				d[i] = argmax(logits, n_vocab);
			}
			dpos = len;
		}
		if ((rc = spec_pass(sp->target, ts, rows, k + 1, 0, logits)))
			goto done;
		int a = 0;
		while (a < k && argmax(logits + (size_t)a * n_vocab, n_vocab) == d[a])
			a++;
		int bonus = argmax(logits + (size_t)a * n_vocab, n_vocab);
		if ((rc = model_state_slot_rollback(ts, 0, k - a)))
			goto done;
		if (sp->draft && k > 0) {
			int kept = a < k - 1 ? a : k - 1; /* the draft ran d[0..k-1) */
			if ((rc = model_state_slot_rollback(ds, 0, (k - 1) - kept)))
				goto done;
			dpos = len + kept;
		}
		for (int i = 0; i < a; i++)
			hist[len++] = d[i];
		hist[len++] = bonus;
		produced += a + 1;
		if (st) {
			st->steps++;
			st->drafted += k;
			st->accepted += a;
			st->generated += a + 1;
		}
	}
	memcpy(out, hist + n_prompt, sizeof(int32_t) * (size_t)n_gen);
done:
	free(hist);
	free(logits);
	model_state_destroy(ts);
	model_state_destroy(ds);
	return rc;
}
