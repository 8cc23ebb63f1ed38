/* test_model_gdn — the delta-rule kernels: chunked == row-by-row (several lengths and chunk
 * sizes, chunk edges included), split runs == one run (state carried in place), a hand-checked
 * single step, the conv window, and the matmul paths (portable == AVX2, every weight type). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/gdn.h"
#include "gguf/gguf.h"
#include "model/kernels.h"
#include "test.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static void normalise(float *x, int n)
{
	float s = 0;
	for (int i = 0; i < n; i++)
		s += x[i] * x[i];
	s = 1.0f / sqrtf(s + 1e-6f);
	for (int i = 0; i < n; i++)
		x[i] *= s;
}

struct data {
	int n, dk, dv;
	float *q, *k, *v, *g, *b;
};

static struct data make(int n, int dk, int dv)
{
	struct data d = { n, dk, dv, malloc(sizeof(float) * n * dk), malloc(sizeof(float) * n * dk),
			  malloc(sizeof(float) * n * dv), malloc(sizeof(float) * n), malloc(sizeof(float) * n) };
	for (int t = 0; t < n; t++) {
		for (int i = 0; i < dk; i++) {
			d.q[t * dk + i] = frand();
			d.k[t * dk + i] = frand();
		}
		normalise(d.q + t * dk, dk);
		normalise(d.k + t * dk, dk);
		for (int i = 0; i < dv; i++)
			d.v[t * dv + i] = frand();
		d.g[t] = -0.5f * (frand() + 1.0f) - 0.01f; /* log decay in (-1, 0) */
		d.b[t] = 0.5f * (frand() + 1.0f);
	}
	return d;
}

static void drop(struct data *d)
{
	free(d->q);
	free(d->k);
	free(d->v);
	free(d->g);
	free(d->b);
}

static struct gdn_rows rows_of(const struct data *d, int t0, int n, float *o)
{
	struct gdn_rows r = { n, d->q + t0 * d->dk, d->k + t0 * d->dk, d->v + t0 * d->dv, d->dk, d->dk, d->dv,
			      d->g + t0, d->b + t0, 1, o + t0 * d->dv, d->dv };
	return r;
}

static double max_rel(const float *a, const float *b, size_t n)
{
	double md = 0, mx = 1e-30;
	for (size_t i = 0; i < n; i++) {
		md = fmax(md, fabs((double)a[i] - b[i]));
		mx = fmax(mx, fabs((double)b[i]));
	}
	return md / mx;
}

static void test_chunked_equals_rows(void)
{
	const int lens[] = { 1, 7, 15, 16, 17, 63, 64, 65, 130 };
	const int chunks[] = { 16, 64 };
	int dk = 16, dv = 8;
	float *scratch = malloc(sizeof(float) * gdn_chunk_scratch_floats(64, dk, dv));
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (size_t ci = 0; ci < 2; ci++) {
			int n = lens[li];
			struct data d = make(n, dk, dv);
			float *s1 = calloc(dk * dv, 4), *s2 = calloc(dk * dv, 4);
			for (int i = 0; i < dk * dv; i++)
				s1[i] = s2[i] = 0.3f * frand(); /* a non-zero initial state */
			float *o1 = calloc(n * dv, 4), *o2 = calloc(n * dv, 4);
			struct gdn_rows r1 = rows_of(&d, 0, n, o1), r2 = rows_of(&d, 0, n, o2);
			gdn_rule_rows(s1, dk, dv, 0.25f, &r1);
			gdn_rule_chunked(s2, dk, dv, 0.25f, &r2, chunks[ci], scratch);
			double eo = max_rel(o2, o1, (size_t)n * dv), es = max_rel(s2, s1, (size_t)dk * dv);
			if (!CHECK(eo < 1e-5 && es < 1e-5))
				fprintf(stderr, "n=%d chunk=%d: output rel err %g, state rel err %g\n", n, chunks[ci], eo, es);
			free(s1);
			free(s2);
			free(o1);
			free(o2);
			drop(&d);
		}
	free(scratch);
}

/* Rows fed in pieces (decode after prefill) give the same as one run. */
static void test_split_runs(void)
{
	int dk = 8, dv = 8, n = 40;
	struct data d = make(n, dk, dv);
	float *s1 = calloc(dk * dv, 4), *s2 = calloc(dk * dv, 4), *o1 = calloc(n * dv, 4), *o2 = calloc(n * dv, 4);
	float *scratch = malloc(sizeof(float) * gdn_chunk_scratch_floats(16, dk, dv));
	struct gdn_rows r = rows_of(&d, 0, n, o1);
	gdn_rule_rows(s1, dk, dv, 1.0f, &r);
	struct gdn_rows a = rows_of(&d, 0, 21, o2);
	gdn_rule_chunked(s2, dk, dv, 1.0f, &a, 16, scratch);
	for (int t = 21; t < n; t++) {
		struct gdn_rows b = rows_of(&d, t, 1, o2);
		gdn_rule_rows(s2, dk, dv, 1.0f, &b);
	}
	CHECK(max_rel(o2, o1, (size_t)n * dv) < 1e-5);
	CHECK(max_rel(s2, s1, (size_t)dk * dv) < 1e-5);
	free(s1);
	free(s2);
	free(o1);
	free(o2);
	free(scratch);
	drop(&d);
}

/* One step by hand: d_k = 2, d_v = 1, S0ᵀ = [1, 2], k = [1, 0], q = [0, 1], v = 5, g = ln 0.5, β = 0.5.
 * S' = [0.5, 1]; u = 0.5 (5 − 0.5) = 2.25; S = [2.75, 1]; o = S·q = 1. */
static void test_hand_step(void)
{
	float st[2] = { 1, 2 }, q[2] = { 0, 1 }, k[2] = { 1, 0 }, v[1] = { 5 }, g[1] = { logf(0.5f) }, b[1] = { 0.5f },
	      o[1];
	struct gdn_rows r = { 1, q, k, v, 2, 2, 1, g, b, 1, o, 1 };
	gdn_rule_rows(st, 2, 1, 1.0f, &r);
	CHECK_NEAR(st[0], 2.75, 1e-6);
	CHECK_NEAR(st[1], 1.0, 1e-6);
	CHECK_NEAR(o[0], 1.0, 1e-6);
}

static void test_conv(void)
{
	/* Width 3, two channels; window starts empty. Channel 0 weights [1, 2, 3]: out_t = silu(x_{t-2} + 2x_{t-1} + 3x_t). */
	float w[6] = { 1, 2, 3, 0, 0, 1 }, win[4] = { 0 }, x[8] = { 1, 10, 2, 20, 3, 30, 4, 40 }, out[8];
	gdn_conv_rows(win, w, 3, 2, 0, 2, x, 2, 2, out, 2);
	float pre = 0 * 1 + 1 * 2 + 2 * 3; /* row 1: x_{-1}=0, x_0=1, x_1=2 */
	CHECK_NEAR(out[2], pre / (1 + expf(-pre)), 1e-6);
	CHECK_NEAR(win[0], 1, 0);
	CHECK_NEAR(win[2], 2, 0);
	/* Two more rows, one at a time, equal a single call over all four. */
	float win2[4] = { 0 }, out2[8];
	gdn_conv_rows(win, w, 3, 2, 0, 2, x + 4, 2, 1, out + 4, 2);
	gdn_conv_rows(win, w, 3, 2, 0, 2, x + 6, 2, 1, out + 6, 2);
	gdn_conv_rows(win2, w, 3, 2, 0, 2, x, 2, 4, out2, 2);
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(out[i], out2[i], 1e-7);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(win[i], win2[i], 0);
	pre = 2 * 1 + 3 * 2 + 4 * 3;
	CHECK_NEAR(out[6], pre / (1 + expf(-pre)), 1e-6);
	/* Channels done separately (as threads split them) equal all at once. */
	float win3[4] = { 0 }, out3[8];
	gdn_conv_rows(win3, w, 3, 2, 1, 2, x, 2, 4, out3, 2);
	gdn_conv_rows(win3, w, 3, 2, 0, 1, x, 2, 4, out3, 2);
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(out3[i], out2[i], 0);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(win3[i], win2[i], 0);
}

static void test_matmul_paths(void)
{
	int n_in = 96, n_out = 37, n_rows = 5;
	float *w = malloc(sizeof(float) * n_in * n_out), *x = malloc(sizeof(float) * n_in * n_rows);
	for (int i = 0; i < n_in * n_out; i++)
		w[i] = frand();
	for (int i = 0; i < n_in * n_rows; i++)
		x[i] = frand();
	float *ref = calloc((size_t)n_out * n_rows, 4);
	for (int r = 0; r < n_rows; r++)
		for (int o = 0; o < n_out; o++) {
			double s = 0;
			for (int i = 0; i < n_in; i++)
				s += (double)w[o * n_in + i] * x[r * n_in + i];
			ref[r * n_out + o] = (float)s;
		}
	const uint32_t types[] = { GGUF_TENSOR_F32, GGUF_TENSOR_F16, GGUF_TENSOR_BF16, GGUF_TENSOR_Q8_0 };
	const double tol[] = { 1e-5, 2e-3, 1.5e-2, 2e-2 };
	uint8_t *buf = malloc((size_t)n_in * n_out * 4);
	const char *isas[] = { "portable", "avx2", "auto", "avx512" };
	for (int ti = 0; ti < 4; ti++) {
		size_t rb;
		for (int o = 0; o < n_out; o++) {
			const float *src = w + o * n_in;
			if (types[ti] == GGUF_TENSOR_F32) {
				rb = (size_t)n_in * 4;
				memcpy(buf + o * rb, src, rb);
			} else if (types[ti] == GGUF_TENSOR_Q8_0) {
				rb = (size_t)n_in / 32 * 34;
				kern_quantize_q8_0(src, buf + o * rb, n_in);
			} else {
				rb = (size_t)n_in * 2;
				for (int i = 0; i < n_in; i++) {
					uint16_t h = types[ti] == GGUF_TENSOR_F16 ? kern_f32_to_f16(src[i]) : kern_f32_to_bf16(src[i]);
					memcpy(buf + o * rb + 2 * i, &h, 2);
				}
			}
		}
		rb = (size_t)gguf_type_row_bytes(types[ti], (uint64_t)n_in);
		struct kern_mat m = { buf, types[ti], n_in, n_out, rb, 0 };
		float *y[4];
		for (int k = 0; k < 4; k++) {
			struct kern_pool *p = kern_pool_create(2, isas[k]);
			y[k] = calloc((size_t)n_out * n_rows, 4);
			kern_matmul(p, &m, x, n_in, n_rows, y[k], n_out);
			kern_pool_destroy(p);
			double e = max_rel(y[k], ref, (size_t)n_out * n_rows);
			if (!CHECK(e < tol[ti]))
				fprintf(stderr, "type %u isa %s: rel err %g\n", types[ti], isas[k], e);
		}
		CHECK(max_rel(y[1], y[0], (size_t)n_out * n_rows) < 1e-5);
		CHECK(max_rel(y[2], y[0], (size_t)n_out * n_rows) < 1e-5);
		CHECK(max_rel(y[3], y[0], (size_t)n_out * n_rows) < 1e-5);
		for (int k = 0; k < 4; k++)
			free(y[k]);
	}
	/* Conversions round trip exactly where the format can hold the value. */
	CHECK_NEAR(kern_f16_to_f32(kern_f32_to_f16(1.5f)), 1.5, 0);
	CHECK_NEAR(kern_f16_to_f32(kern_f32_to_f16(-65504.0f)), -65504.0, 0);
	CHECK_NEAR(kern_f16_to_f32(kern_f32_to_f16(6.103515625e-05f)), 6.103515625e-05, 0);
	CHECK_NEAR(kern_f16_to_f32(kern_f32_to_f16(5.960464477539063e-08f)), 5.960464477539063e-08, 0);
	CHECK_NEAR(kern_bf16_to_f32(kern_f32_to_bf16(-3.0f)), -3.0, 0);
	free(buf);
	free(w);
	free(x);
	free(ref);
}

/* Long rows (cut into K blocks) and every grouping of rows: a row's outputs are the same
 * floats whether it is computed alone or among others, or with its matrix cut in three and
 * done by kern_matmul_n, for every kernel path and thread count, and close to a
 * double-precision reference. */
static void test_matmul_rows_alone(void)
{
	int n_in = 1600, n_out = 23, n_rows = 11;
	float *w = malloc(sizeof(float) * n_in * n_out), *x = malloc(sizeof(float) * n_in * n_rows);
	float *all = malloc(sizeof(float) * n_out * n_rows), *one = malloc(sizeof(float) * n_out);
	for (int i = 0; i < n_in * n_out; i++)
		w[i] = frand();
	for (int i = 0; i < n_in * n_rows; i++)
		x[i] = frand();
	struct kern_mat m = { w, GGUF_TENSOR_F32, n_in, n_out, (size_t)n_in * 4, 0 };
	const char *isas[] = { "portable", "avx2", "auto", "avx512" };
	for (int k = 0; k < 4; k++)
		for (int nt = 1; nt <= 3; nt += 2) {
			struct kern_pool *p = kern_pool_create(nt, isas[k]);
			kern_matmul(p, &m, x, n_in, n_rows, all, n_out);
			int same = 1;
			double e = 0;
			for (int r = 0; r < n_rows; r++) {
				kern_matmul(p, &m, x + (size_t)r * n_in, n_in, 1, one, n_out);
				same &= memcmp(one, all + (size_t)r * n_out, sizeof(float) * n_out) == 0;
				for (int o = 0; o < n_out; o++) {
					double ref = 0;
					for (int i = 0; i < n_in; i++)
						ref += (double)w[(size_t)o * n_in + i] * x[(size_t)r * n_in + i];
					e = fmax(e, fabs(one[o] - ref) / fmax(fabs(ref), 1e-3));
				}
			}
			/* The same rows as three matrices in one split: the same floats. */
			struct kern_mat m3[3] = { { w, GGUF_TENSOR_F32, n_in, 5, (size_t)n_in * 4, 0 },
						  { w + (size_t)5 * n_in, GGUF_TENSOR_F32, n_in, 1, (size_t)n_in * 4, 0 },
						  { w + (size_t)6 * n_in, GGUF_TENSOR_F32, n_in, n_out - 6, (size_t)n_in * 4, 0 } };
			const struct kern_mat *mp[3] = { &m3[0], &m3[1], &m3[2] };
			float *split = malloc(sizeof(float) * n_out * n_rows);
			float *ys[3] = { split, split + 5, split + 6 };
			int yst[3] = { n_out, n_out, n_out };
			kern_matmul_n(p, 3, mp, x, n_in, n_rows, ys, yst);
			same &= memcmp(split, all, sizeof(float) * n_out * n_rows) == 0;
			free(split);
			if (!CHECK(same && e < 1e-4))
				fprintf(stderr, "isa %s (%s), %d threads: alone == batched %d, rel err %g\n", isas[k],
					kern_pool_isa(p), nt, same, e);
			kern_pool_destroy(p);
		}
	free(w);
	free(x);
	free(all);
	free(one);
}

/* The vector exp/SiLU against libm over a wide range, including values that clamp. */
static void test_activations(void)
{
	enum { N = 1003 };
	float x[N], y[N], m[N], e[N];
	for (int i = 0; i < N; i++) {
		x[i] = -100.0f + 200.0f * i / (N - 1);
		m[i] = 0.5f + (float)(i % 7);
	}
	memcpy(y, x, sizeof(x));
	kern_silu_mul(y, m, N);
	double worst = 0;
	for (int i = 0; i < N; i++) {
		double ref = (double)x[i] / (1.0 + exp(-(double)x[i])) * m[i];
		double err = fabs(y[i] - ref) / fmax(fabs(ref), 1e-30);
		if (fabs(ref) > 1e-30)
			worst = fmax(worst, err);
	}
	printf("silu: worst relative error %.3g\n", worst);
	CHECK(worst < 1e-6);
	float in[N];
	for (int i = 0; i < N; i++)
		in[i] = e[i] = x[i] * 0.8f; /* keep exp finite: up to e^80 */
	float shift = 3.0f, sum = kern_exp_shift(e, shift, N);
	double rsum = 0;
	worst = 0;
	for (int i = 0; i < N; i++) {
		double ref = exp((double)(in[i] - shift));
		rsum += ref;
		worst = fmax(worst, fabs(e[i] - ref) / ref);
	}
	printf("exp: worst relative error %.3g\n", worst);
	CHECK(worst < 1e-6);
	CHECK_NEAR(sum, rsum, 1e-5);
	float y2[3] = { 1, 2, 3 }, z2[3] = { 0, 1, -1 };
	kern_mul_silu(y2, z2, 3);
	CHECK_NEAR(y2[0], 0.0, 0);
	CHECK_NEAR(y2[1], 2.0 / (1.0 + exp(-1.0)), 1e-6);
}

int main(void)
{
	test_activations();
	test_hand_step();
	test_chunked_equals_rows();
	test_split_runs();
	test_conv();
	test_matmul_paths();
	test_matmul_rows_alone();
	return test_done();
}
