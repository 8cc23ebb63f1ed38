/* gdn — see gdn.h. Written for clarity; every inner loop is a dot product or an axpy over
 * contiguous d_k (or d_v) floats, done by the AVX2 primitives when the CPU has them. */
#include "model/gdn.h"

#include "model/kernels.h"

#include <math.h>
#include <string.h>

/* ---- vector primitives (dot and axpy come from kernels.c) ---- */

/* s = α s + u k, returning the new s · q: the whole per-column update in one pass. */
static float update_dot_c(float *s, float alpha, float u, const float *k, const float *q, int n)
{
	float acc = 0;
	for (int i = 0; i < n; i++) {
		s[i] = alpha * s[i] + u * k[i];
		acc += s[i] * q[i];
	}
	return acc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GDN_X86 1
__attribute__((target("avx2,fma"))) static float update_dot_avx2(float *s, float alpha, float u, const float *k,
								   const float *q, int n)
{
	__m256 av = _mm256_set1_ps(alpha), uv = _mm256_set1_ps(u), acc = _mm256_setzero_ps();
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 sv = _mm256_fmadd_ps(uv, _mm256_loadu_ps(k + i), _mm256_mul_ps(av, _mm256_loadu_ps(s + i)));
		_mm256_storeu_ps(s + i, sv);
		acc = _mm256_fmadd_ps(sv, _mm256_loadu_ps(q + i), acc);
	}
	__m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
	float r = _mm_cvtss_f32(lo);
	for (; i < n; i++) {
		s[i] = alpha * s[i] + u * k[i];
		r += s[i] * q[i];
	}
	return r;
}
#else
#define GDN_X86 0
#endif

struct vops {
	float (*dot)(const float *, const float *, int);
	void (*axpy)(float *, float, const float *, int);
	float (*update_dot)(float *, float, float, const float *, const float *, int);
};

static struct vops pick_ops(void)
{
	struct vops v = { kern_dot, kern_axpy, update_dot_c };
#if GDN_X86
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		v.update_dot = update_dot_avx2;
	}
#endif
	return v;
}

void gdn_rule_rows(float *st, int d_k, int d_v, float scale, const struct gdn_rows *r)
{
	struct vops vo = pick_ops();
	for (int t = 0; t < r->n; t++) {
		const float *q = r->q + (size_t)t * r->q_stride, *k = r->k + (size_t)t * r->k_stride;
		const float *v = r->v + (size_t)t * r->v_stride;
		float alpha = expf(r->g[(size_t)t * r->gb_stride]), beta = r->beta[(size_t)t * r->gb_stride];
		float *o = r->o + (size_t)t * r->o_stride;
		for (int j = 0; j < d_v; j++) {
			float *s = st + (size_t)j * d_k;
			/* (α S)ᵀk = α (Sᵀk): decay folded into the update, one pass less over S. */
			float u = beta * (v[j] - alpha * vo.dot(s, k, d_k));
			o[j] = scale * vo.update_dot(s, alpha, u, k, q, d_k);
		}
	}
}

size_t gdn_chunk_scratch_floats(int chunk, int d_k, int d_v)
{
	/* G[L], A[L][L], U[L][d_v], W[L][d_k] */
	return (size_t)chunk + (size_t)chunk * chunk + (size_t)chunk * d_v + (size_t)chunk * d_k;
}

/* e^x for the chunk's exponents (all <= 0): below -104 the float result is +0 (the smallest
 * subnormal is e^-103.3), which glibc's expf reaches only through its slow underflow path
 * (errno set, a few per cent of a prefill's time with strongly decaying gates). */
static inline float exp_decay(float x)
{
	return x < -104.0f ? 0.0f : expf(x);
}

/* One chunk of L rows (L <= chunk size). Notation of gdn.h; G is the running sum of g
 * inside the chunk. With A[i][j] = β_i e^{G_i−G_j} (k_i·k_j) for j < i, the row updates
 * u_i satisfy u_i + Σ_{j<i} A_ij u_j = β_i v_i − β_i e^{G_i} S0ᵀ k_i, so
 *   u = U − (S0ᵀ applied to each row of W), with (I+A)U = βv and (I+A)W = β e^G k;
 *   o_i = scale (e^{G_i} S0ᵀ q_i + Σ_{j≤i} e^{G_i−G_j} (q_i·k_j) u_j);
 *   S_L = e^{G_L} S0 + Σ_j e^{G_L−G_j} k_j u_jᵀ.
 * Every exponent is ≤ 0 because g ≤ 0, so nothing overflows. */
static void chunk_step(float *st, int d_k, int d_v, float scale, const struct gdn_rows *r, int t0, int L,
		       float *scratch, int chunk)
{
	struct vops vo = pick_ops();
	float *G = scratch, *A = G + chunk, *U = A + (size_t)chunk * chunk, *W = U + (size_t)chunk * d_v;
#define Q(i) (r->q + (size_t)(t0 + (i)) * r->q_stride)
#define K(i) (r->k + (size_t)(t0 + (i)) * r->k_stride)
#define V(i) (r->v + (size_t)(t0 + (i)) * r->v_stride)
#define B(i) (r->beta[(size_t)(t0 + (i)) * r->gb_stride])
	float acc = 0;
	for (int i = 0; i < L; i++) {
		acc += r->g[(size_t)(t0 + i) * r->gb_stride];
		G[i] = acc;
	}
	for (int i = 0; i < L; i++)
		for (int j = 0; j < i; j++)
			A[(size_t)i * chunk + j] = B(i) * exp_decay(G[i] - G[j]) * vo.dot(K(i), K(j), d_k);
	/* Forward substitution for U and W. */
	for (int i = 0; i < L; i++) {
		float *ui = U + (size_t)i * d_v, *wi = W + (size_t)i * d_k;
		float bi = B(i), eg = bi * exp_decay(G[i]);
		for (int c = 0; c < d_v; c++)
			ui[c] = bi * V(i)[c];
		for (int c = 0; c < d_k; c++)
			wi[c] = eg * K(i)[c];
		for (int j = 0; j < i; j++) {
			float a = A[(size_t)i * chunk + j];
			const float *uj = U + (size_t)j * d_v, *wj = W + (size_t)j * d_k;
			vo.axpy(ui, -a, uj, d_v);
			vo.axpy(wi, -a, wj, d_k);
		}
	}
	/* u_i = U_i − S0ᵀ W_i, in place in U (S0 is still the chunk's initial state). */
	for (int i = 0; i < L; i++) {
		float *ui = U + (size_t)i * d_v;
		const float *wi = W + (size_t)i * d_k;
		for (int c = 0; c < d_v; c++)
			ui[c] -= vo.dot(st + (size_t)c * d_k, wi, d_k);
	}
	/* Outputs: A's strict lower triangle is no longer needed, reuse it for e^{G_i−G_j} q_i·k_j. */
	for (int i = 0; i < L; i++) {
		float *o = r->o + (size_t)(t0 + i) * r->o_stride;
		float egi = exp_decay(G[i]);
		for (int c = 0; c < d_v; c++)
			o[c] = egi * vo.dot(st + (size_t)c * d_k, Q(i), d_k);
		for (int j = 0; j <= i; j++) {
			float a = exp_decay(G[i] - G[j]) * vo.dot(Q(i), K(j), d_k);
			vo.axpy(o, a, U + (size_t)j * d_v, d_v);
		}
		for (int c = 0; c < d_v; c++)
			o[c] *= scale;
	}
	/* State at the end of the chunk. */
	float egl = exp_decay(G[L - 1]);
	for (int c = 0; c < d_v; c++) {
		float *s = st + (size_t)c * d_k;
		for (int x = 0; x < d_k; x++)
			s[x] *= egl;
		for (int j = 0; j < L; j++) {
			float a = exp_decay(G[L - 1] - G[j]) * U[(size_t)j * d_v + c];
			vo.axpy(s, a, K(j), d_k);
		}
	}
#undef Q
#undef K
#undef V
#undef B
}

void gdn_rule_chunked(float *st, int d_k, int d_v, float scale, const struct gdn_rows *r, int chunk,
		      float *scratch)
{
	for (int t0 = 0; t0 < r->n; t0 += chunk) {
		int L = r->n - t0 < chunk ? r->n - t0 : chunk;
		chunk_step(st, d_k, d_v, scale, r, t0, L, scratch, chunk);
	}
}

void gdn_conv_rows(float *win, const float *w, int kw, int channels, int c0, int c1, const float *x, int x_stride,
		   int n, float *out, int out_stride)
{
	int hist = kw - 1;
	for (int t = 0; t < n; t++) {
		float *o = out + (size_t)t * out_stride;
		for (int c = c0; c < c1; c++) {
			const float *wc = w + (size_t)c * kw;
			float s = 0;
			/* Tap i reads input row t − hist + i; negative rows come from the window. */
			for (int i = 0; i < kw; i++) {
				int src = t - hist + i;
				float m = src >= 0 ? x[(size_t)src * x_stride + c] : win[(size_t)(hist + src) * channels + c];
				s += wc[i] * m;
			}
			o[c] = s;
		}
		kern_silu_mul(o + c0, NULL, c1 - c0);
	}
	/* Slide the window: keep the last hist rows of [window | x]. */
	size_t nc = (size_t)(c1 - c0) * sizeof(float);
	for (int i = 0; i < hist; i++) {
		int src = n - hist + i; /* row of [window | x] counted from x's first row */
		float *dst = win + (size_t)i * channels + c0;
		if (src >= 0)
			memcpy(dst, x + (size_t)src * x_stride + c0, nc);
		else
			memmove(dst, win + (size_t)(hist + src) * channels + c0, nc);
	}
}
