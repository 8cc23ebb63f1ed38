/* gdn — the Gated DeltaNet kernels of one V-head: the depthwise causal convolution with its
 * rolling window, the gated delta rule row by row, and the same rule in chunked (WY / UT)
 * form for prefill. Both forms read and write the caller's state in place.
 *
 * State layout, per V-head: St[d_v][d_k] (the transpose of S in S_t = α S + k uᵀ). Every
 * per-row operation — the read (α S)ᵀk, the update S += k uᵀ and the output Sᵀq — then walks
 * one contiguous d_k row per value column, so each is a dot product or an axpy over
 * contiguous floats; the model keeps the pool as [slot][gdn_layer][H_v][d_v][d_k].
 *
 * Math (per row t, q and k already L2-normalised, g ≤ 0 the log decay, β in (0,1)):
 *   S' = e^g S;  u = β (v − S'ᵀ k);  S = S' + k uᵀ;  o = scale · Sᵀ q.
 * The chunked form computes the same values with the L×L lower-triangular system of one
 * chunk; it differs from the row form only by float rounding (tests bound it).
 * Does not: project, normalise or gate (the model does), or allocate (scratch is the caller's).
 * All arithmetic is fp32. Arguments are borrowed. */
#ifndef SIXI_MODEL_GDN_H
#define SIXI_MODEL_GDN_H
#include <stddef.h>

/* n consecutive rows of one sequence for one V-head. Row t reads q + t*q_stride (d_k floats),
 * k + t*k_stride, v + t*v_stride (d_v floats), g[t*gb_stride], beta[t*gb_stride], and writes
 * o + t*o_stride (d_v floats). */
struct gdn_rows {
	int n;
	const float *q, *k, *v;
	int q_stride, k_stride, v_stride;
	const float *g, *beta;
	int gb_stride;
	float *o;
	int o_stride;
};

/* Row-by-row gated delta rule on St (d_v x d_k, see above); scale multiplies the output. */
void gdn_rule_rows(float *st, int d_k, int d_v, float scale, const struct gdn_rows *r);

/* Floats of scratch gdn_rule_chunked needs for chunks of `chunk` rows. */
size_t gdn_chunk_scratch_floats(int chunk, int d_k, int d_v);
/* Same result as gdn_rule_rows, computed chunk rows at a time. */
void gdn_rule_chunked(float *st, int d_k, int d_v, float scale, const struct gdn_rows *r, int chunk,
		      float *scratch);

/* Depthwise causal convolution with kernel width kw, then SiLU, on channels [c0, c1) of
 * `channels` (channels are independent, so callers may split them across threads).
 * w: weights [channels][kw] (ggml ne {kw, channels}); win: the last kw-1 pre-convolution rows
 * [kw-1][channels], oldest first, updated in place to end at the last of the n new rows
 * x (row stride x_stride); out: n rows, row stride out_stride (same channel indexing). */
void gdn_conv_rows(float *win, const float *w, int kw, int channels, int c0, int c1, const float *x, int x_stride,
		   int n, float *out, int out_stride);
#endif
