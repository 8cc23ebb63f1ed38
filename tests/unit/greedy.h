/* greedy — the plain decoding that the model's faster paths (speculation, drafts,
 * batches) are checked against: the index of the largest logit, and greedy tokens
 * after a history from a fresh state, one row at a time after the prefill; and the measure
 * logits are compared by. */
#ifndef SIXI_TESTS_GREEDY_H
#define SIXI_TESTS_GREEDY_H
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "model/model.h"

/* The first index of the largest value (ties: the lowest index). */
static inline int greedy_argmax(const float *v, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return b;
}

/* How the model tests compare logits: the largest |a-b| over a row relative to the row's
 * largest |b| (b the reference), the worst of `rows` rows of `vocab`. */
static inline double greedy_rel_err(const float *a, const float *b, int rows, int vocab)
{
	double worst = 0;
	for (size_t r = 0; r < (size_t)rows; r++) {
		double md = 0, mx = 1e-30;
		for (size_t i = r * (size_t)vocab; i < (r + 1) * (size_t)vocab; i++) {
			md = fmax(md, fabs((double)a[i] - b[i]));
			mx = fmax(mx, fabs((double)b[i]));
		}
		worst = fmax(worst, md / mx);
	}
	return worst;
}

/* k greedy tokens after hist[0..n) (n >= 1) into out. 0, -ENOMEM, or the forward pass's error. */
static inline int greedy_reference(struct model *m, const int32_t *hist, int n, int k, int32_t *out)
{
	int V = model_get_config(m)->n_vocab;
	struct model_state *s = model_state_create(m, 1, n + k + 2);
	float *lg = malloc(sizeof(float) * (size_t)V);
	int32_t *slots = calloc((size_t)n + 1, sizeof *slots);
	uint8_t *want = calloc((size_t)n + 1, 1);
	int rc = s && lg && slots && want ? 0 : -ENOMEM;
	if (!rc) {
		want[n - 1] = 1;
		struct model_batch b = { .n_rows = n, .tokens = hist, .slots = slots, .want_logits = want };
		rc = model_forward(m, s, &b, lg);
	}
	for (int i = 0; !rc && i < k; i++) {
		out[i] = greedy_argmax(lg, V);
		struct model_batch b1 = { .n_rows = 1, .tokens = &out[i], .slots = slots };
		if (i + 1 < k)
			rc = model_forward(m, s, &b1, lg);
	}
	free(want);
	free(slots);
	free(lg);
	model_state_destroy(s);
	return rc;
}
#endif
