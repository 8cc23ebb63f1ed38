/* kernels — see kernels.h. The AVX2/FMA functions are compiled with a target attribute so
 * that the rest of the library stays portable; kern_pool_create picks them when
 * __builtin_cpu_supports says the CPU has AVX2, FMA and F16C. Workers spin briefly between
 * jobs and then sleep (see SPIN_NS).
 *
 * Matrix products: each thread takes an even share of the tiles (4 weight rows each) and
 * applies a tile to every activation row, 3 rows at a time with 12 8-lane accumulators;
 * each output is the horizontal sum of its accumulator, so a row's result does not depend
 * on how many rows share the pass. While a tile is computed, the next tile's weight rows
 * are prefetched into L2 (a pass streams weights far larger than the caches); rows longer
 * than KBLOCK_MAX floats are cut into K blocks so that a tile and a group of activation
 * rows stay in L1, the partial accumulators waiting in a per-thread buffer in between.
 * Block weights meet the pass's quantised activations in quant.h's fused dot products; a
 * grouped matrix (Q4_K, Q6_K in groups of 8 rows) has tiles of one group, which feeds all 8
 * outputs of every activation row from each load. */
#include "model/kernels.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KERN_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define KERN_X86 0
#endif

#if KERN_X86
/* AVX2 + FMA + F16C (CPUID leaf 1 ECX bit 29; not every compiler's __builtin_cpu_supports
 * knows "f16c"). CPUID is slow, and very slow under a hypervisor, so it is asked once; the
 * answer never changes afterwards. */
static pthread_once_t avx2_once = PTHREAD_ONCE_INIT;
static int avx2_ok;
static int avx512_full; /* 512-bit FMAs at twice the 256-bit rate (see avx2_probe) */

static void avx2_probe(void)
{
	unsigned a = 0, b = 0, c = 0, d = 0;
	int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
	avx2_ok = f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	/* AMD's family 0x19 (Zen 4) runs each 512-bit operation as two 256-bit halves: there
	 * the AVX-512 tile does the AVX2 tile's work with no more FMAs a cycle, and measured
	 * slower, so "auto" keeps the AVX2 tile on AMD before family 0x1a (Zen 5). */
	unsigned family = (a >> 8) & 0xf, vendor_b = 0;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	b = c = d = 0;
	__get_cpuid(0, &vendor_b, &b, &c, &d);
	int amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* "AuthenticAMD" */
	avx512_full = avx2_ok && __builtin_cpu_supports("avx512f") && !(amd && family < 0x1a);
}

static int have_avx2(void)
{
	pthread_once(&avx2_once, avx2_probe);
	return avx2_ok;
}
#endif

#define QK8_0 32
#define ROWS_PER_TILE 4
#ifndef KBLOCK_MAX
#define KBLOCK_MAX 768
#endif

/* ---- scalar conversions ---- */

float kern_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
	if (exp == 0) {
		if (mant == 0) {
			bits = sign;
		} else { /* subnormal: renormalise */
			int e = -1;
			do {
				e++;
				mant <<= 1;
			} while (!(mant & 0x400));
			bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
		}
	} else if (exp == 31) {
		bits = sign | 0x7f800000u | (mant << 13);
	} else {
		bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t kern_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	uint32_t mant = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		mant |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
		half++; /* may carry into the exponent, which is the right rounding */
	return (uint16_t)half;
}

float kern_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t kern_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

void kern_quantize_q8_0(const float *x, void *out, int n)
{
	uint8_t *o = out;
	for (int b = 0; b < n / QK8_0; b++) {
		const float *v = x + b * QK8_0;
		float amax = 0;
		for (int i = 0; i < QK8_0; i++)
			amax = fmaxf(amax, fabsf(v[i]));
		float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0;
		uint16_t dh = kern_f32_to_f16(d);
		memcpy(o, &dh, 2);
		for (int i = 0; i < QK8_0; i++)
			o[2 + i] = (uint8_t)(int8_t)lrintf(v[i] * id);
		o += 2 + QK8_0;
	}
}

int kern_type_supported(uint32_t type)
{
	return type == GGUF_TENSOR_F32 || type == GGUF_TENSOR_F16 || type == GGUF_TENSOR_BF16 ||
	       quant_type_is_block(type);
}

static void row_to_f32_portable(uint32_t type, const void *row, float *out, int n)
{
	const uint8_t *p = row;
	switch (type) {
	case GGUF_TENSOR_F32:
		memcpy(out, row, (size_t)n * 4);
		break;
	case GGUF_TENSOR_F16:
		for (int i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			out[i] = kern_f16_to_f32(h);
		}
		break;
	case GGUF_TENSOR_BF16:
		for (int i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			out[i] = kern_bf16_to_f32(h);
		}
		break;
	case GGUF_TENSOR_Q8_0:
		for (int b = 0; b < n / QK8_0; b++) {
			const uint8_t *blk = p + b * (2 + QK8_0);
			uint16_t dh;
			memcpy(&dh, blk, 2);
			float d = kern_f16_to_f32(dh);
			for (int i = 0; i < QK8_0; i++)
				out[b * QK8_0 + i] = d * (float)(int8_t)blk[2 + i];
		}
		break;
	default:
		quant_row_dequantize(type, row, out, n); /* zeros for types kern_type_supported refuses */
	}
}

void kern_row_to_f32(uint32_t type, const void *row, float *out, int n)
{
	row_to_f32_portable(type, row, out, n);
}


/* ---- portable tile: ROWS_PER_TILE weight rows against every x row ---- */

static void tile_portable(const float *w, int n_w, int n_in, const float *x, int x_stride, int n_rows,
			  float *y, int y_stride, int o0)
{
	for (int r = 0; r < n_rows; r++) {
		const float *xr = x + (size_t)r * x_stride;
		for (int k = 0; k < n_w; k++) {
			const float *wk = w + (size_t)k * n_in;
			float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
			int i = 0;
			for (; i + 4 <= n_in; i += 4) {
				s0 += wk[i] * xr[i];
				s1 += wk[i + 1] * xr[i + 1];
				s2 += wk[i + 2] * xr[i + 2];
				s3 += wk[i + 3] * xr[i + 3];
			}
			for (; i < n_in; i++)
				s0 += wk[i] * xr[i];
			y[(size_t)r * y_stride + o0 + k] = (s0 + s1) + (s2 + s3);
		}
	}
}

#if KERN_X86
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline float hsum256(__m256 v)
{
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
	return _mm_cvtss_f32(lo);
}

/* The two hottest loops (tile_avx2 and this) start on a 64-byte line whatever the link order:
 * at 16-byte placement a change elsewhere in the binary moved them and made one-row passes of
 * sixi-small 15-25 % slower (measured with the same source of this file). */
__attribute__((target("avx2,fma,f16c"), aligned(64))) static void row_to_f32_avx2(uint32_t type, const void *row, float *out,
								      int n)
{
	const uint8_t *p = row;
	int i = 0;
	if (type == GGUF_TENSOR_F16) {
		for (; i + 8 <= n; i += 8)
			_mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
		for (; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			out[i] = kern_f16_to_f32(h);
		}
	} else if (type == GGUF_TENSOR_BF16) {
		for (; i + 8 <= n; i += 8) {
			__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 2 * i)));
			_mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
		}
		for (; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			out[i] = kern_bf16_to_f32(h);
		}
	} else if (type == GGUF_TENSOR_Q8_0) {
		for (int b = 0; b < n / QK8_0; b++) {
			const uint8_t *blk = p + b * (2 + QK8_0);
			uint16_t dh;
			memcpy(&dh, blk, 2);
			__m256 d = _mm256_set1_ps(kern_f16_to_f32(dh));
			for (int j = 0; j < QK8_0; j += 8) {
				__m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + j)));
				_mm256_storeu_ps(out + b * QK8_0 + j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
			}
		}
	} else {
		row_to_f32_portable(type, row, out, n);
	}
}

__attribute__((target("avx2,fma,f16c"), aligned(64))) static void tile_avx2(const float *w, int n_w, int n_in, const float *x,
							       int x_stride, int n_rows, float *y, int y_stride,
							       int o0, const char *pf, const char *pf_end, float *acc)
{
	const int n8 = n_in & ~7;
	const float *w0 = w, *w1 = w + n_in, *w2 = w + 2 * (size_t)n_in, *w3 = w + 3 * (size_t)n_in;
	int r = 0;
	/* 4 weight rows x 3 x rows: 12 accumulators, 7 loads per 12 FMAs. */
	if (n_w == ROWS_PER_TILE && n8 == n_in) {
		/* Long rows are cut into K blocks so that the tile's 4 weight rows and a group's 3 x
		 * rows stay in L1 together; the 8-lane partial sums wait in acc (12 vectors a group)
		 * between blocks, so the result is bit for bit that of one unbroken loop. */
		int kb = n8, n_blk = 1;
		if (n8 > KBLOCK_MAX) {
			n_blk = (n8 + KBLOCK_MAX - 1) / KBLOCK_MAX;
			kb = (n8 / n_blk + 7) & ~7;
			n_blk = (n8 + kb - 1) / kb;
		}
		int pf_per_group = (int)((pf_end - pf) / 64 / ((n_rows / 3) * n_blk + 1)) + 1;
		for (int k0 = 0; k0 < n8; k0 += kb) {
			int k1 = k0 + kb < n8 ? k0 + kb : n8;
			for (r = 0; r + 3 <= n_rows; r += 3) {
				const float *xa = x + (size_t)r * x_stride, *xb = xa + x_stride, *xc = xb + x_stride;
				float *ac = acc + (size_t)r / 3 * 96;
				__m256 a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3;
				if (k0 == 0) {
					a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
					c0 = a0, c1 = a0, c2 = a0, c3 = a0;
				} else {
					a0 = _mm256_loadu_ps(ac), a1 = _mm256_loadu_ps(ac + 8);
					a2 = _mm256_loadu_ps(ac + 16), a3 = _mm256_loadu_ps(ac + 24);
					b0 = _mm256_loadu_ps(ac + 32), b1 = _mm256_loadu_ps(ac + 40);
					b2 = _mm256_loadu_ps(ac + 48), b3 = _mm256_loadu_ps(ac + 56);
					c0 = _mm256_loadu_ps(ac + 64), c1 = _mm256_loadu_ps(ac + 72);
					c2 = _mm256_loadu_ps(ac + 80), c3 = _mm256_loadu_ps(ac + 88);
				}
				for (int q = 0; q < pf_per_group && pf < pf_end; q++, pf += 64)
					_mm_prefetch(pf, _MM_HINT_T1);
				/* 12 accumulators + 3 x + 1 weight = 16 ymm registers: load x once,
				 * stream the weight rows one at a time (loading all four would spill). */
				for (int i = k0; i < k1; i += 8) {
					__m256 xa8 = _mm256_loadu_ps(xa + i), xb8 = _mm256_loadu_ps(xb + i),
					       xc8 = _mm256_loadu_ps(xc + i);
					__m256 v = _mm256_loadu_ps(w0 + i);
					a0 = _mm256_fmadd_ps(v, xa8, a0);
					b0 = _mm256_fmadd_ps(v, xb8, b0);
					c0 = _mm256_fmadd_ps(v, xc8, c0);
					v = _mm256_loadu_ps(w1 + i);
					a1 = _mm256_fmadd_ps(v, xa8, a1);
					b1 = _mm256_fmadd_ps(v, xb8, b1);
					c1 = _mm256_fmadd_ps(v, xc8, c1);
					v = _mm256_loadu_ps(w2 + i);
					a2 = _mm256_fmadd_ps(v, xa8, a2);
					b2 = _mm256_fmadd_ps(v, xb8, b2);
					c2 = _mm256_fmadd_ps(v, xc8, c2);
					v = _mm256_loadu_ps(w3 + i);
					a3 = _mm256_fmadd_ps(v, xa8, a3);
					b3 = _mm256_fmadd_ps(v, xb8, b3);
					c3 = _mm256_fmadd_ps(v, xc8, c3);
				}
				if (k1 < n8) {
					_mm256_storeu_ps(ac, a0), _mm256_storeu_ps(ac + 8, a1);
					_mm256_storeu_ps(ac + 16, a2), _mm256_storeu_ps(ac + 24, a3);
					_mm256_storeu_ps(ac + 32, b0), _mm256_storeu_ps(ac + 40, b1);
					_mm256_storeu_ps(ac + 48, b2), _mm256_storeu_ps(ac + 56, b3);
					_mm256_storeu_ps(ac + 64, c0), _mm256_storeu_ps(ac + 72, c1);
					_mm256_storeu_ps(ac + 80, c2), _mm256_storeu_ps(ac + 88, c3);
					continue;
				}
				float *ya = y + (size_t)r * y_stride + o0, *yb = ya + y_stride, *yc = yb + y_stride;
				ya[0] = hsum256(a0), ya[1] = hsum256(a1), ya[2] = hsum256(a2), ya[3] = hsum256(a3);
				yb[0] = hsum256(b0), yb[1] = hsum256(b1), yb[2] = hsum256(b2), yb[3] = hsum256(b3);
				yc[0] = hsum256(c0), yc[1] = hsum256(c1), yc[2] = hsum256(c2), yc[3] = hsum256(c3);
			}
		}
		for (; r + 2 <= n_rows; r += 2) {
			const float *xa = x + (size_t)r * x_stride, *xb = xa + x_stride;
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
			for (int i = 0; i < n8; i += 8) {
				_mm_prefetch(pf, _MM_HINT_T1);
				pf += pf + 64 < pf_end ? 64 : 0;
				__m256 v0 = _mm256_loadu_ps(w0 + i), v1 = _mm256_loadu_ps(w1 + i), v2 = _mm256_loadu_ps(w2 + i),
				       v3 = _mm256_loadu_ps(w3 + i);
				__m256 xv = _mm256_loadu_ps(xa + i);
				a0 = _mm256_fmadd_ps(v0, xv, a0);
				a1 = _mm256_fmadd_ps(v1, xv, a1);
				a2 = _mm256_fmadd_ps(v2, xv, a2);
				a3 = _mm256_fmadd_ps(v3, xv, a3);
				xv = _mm256_loadu_ps(xb + i);
				b0 = _mm256_fmadd_ps(v0, xv, b0);
				b1 = _mm256_fmadd_ps(v1, xv, b1);
				b2 = _mm256_fmadd_ps(v2, xv, b2);
				b3 = _mm256_fmadd_ps(v3, xv, b3);
			}
			float *ya = y + (size_t)r * y_stride + o0, *yb = ya + y_stride;
			ya[0] = hsum256(a0), ya[1] = hsum256(a1), ya[2] = hsum256(a2), ya[3] = hsum256(a3);
			yb[0] = hsum256(b0), yb[1] = hsum256(b1), yb[2] = hsum256(b2), yb[3] = hsum256(b3);
		}
	}
	for (; r < n_rows; r++) {
		const float *xr = x + (size_t)r * x_stride;
		float *yr = y + (size_t)r * y_stride + o0;
		if (n_w == ROWS_PER_TILE) {
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int i = 0; i < n8; i += 8) {
				_mm_prefetch(pf, _MM_HINT_T1);
				_mm_prefetch(pf + 64, _MM_HINT_T1);
				pf += pf + 192 < pf_end ? 128 : 0;
				__m256 xv = _mm256_loadu_ps(xr + i);
				a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i), xv, a0);
				a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + i), xv, a1);
				a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + i), xv, a2);
				a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + i), xv, a3);
			}
			float s0 = hsum256(a0), s1 = hsum256(a1), s2 = hsum256(a2), s3 = hsum256(a3);
			for (int i = n8; i < n_in; i++) {
				s0 += w0[i] * xr[i];
				s1 += w1[i] * xr[i];
				s2 += w2[i] * xr[i];
				s3 += w3[i] * xr[i];
			}
			yr[0] = s0;
			yr[1] = s1;
			yr[2] = s2;
			yr[3] = s3;
		} else {
			for (int k = 0; k < n_w; k++) {
				const float *wk = w + (size_t)k * n_in;
				__m256 a = _mm256_setzero_ps();
				for (int i = 0; i < n8; i += 8)
					a = _mm256_fmadd_ps(_mm256_loadu_ps(wk + i), _mm256_loadu_ps(xr + i), a);
				float s = hsum256(a);
				for (int i = n8; i < n_in; i++)
					s += wk[i] * xr[i];
				yr[k] = s;
			}
		}
	}
}

/* AVX-512 tile for rows whose length is a multiple of 16: 4 weight rows x 4 x rows, 16
 * accumulators + 4 x + 1 weight register of the 32 there are. */
__attribute__((target("avx512f,avx2,fma,f16c"))) static void tile_avx512(const float *w, int n_w, int n_in,
									const float *x, int x_stride, int n_rows,
									float *y, int y_stride, int o0,
									const char *pf, const char *pf_end,
									float *acc_buf)
{
	const float *w0 = w, *w1 = w + n_in, *w2 = w + 2 * (size_t)n_in, *w3 = w + 3 * (size_t)n_in;
	int r = 0;
	if (n_w == ROWS_PER_TILE) {
		/* K blocks as in tile_avx2 (16 partial-sum vectors a group wait in acc_buf). */
		int kb = n_in, n_blk = 1;
		if (n_in > KBLOCK_MAX) {
			n_blk = (n_in + KBLOCK_MAX - 1) / KBLOCK_MAX;
			kb = (n_in / n_blk + 15) & ~15;
			n_blk = (n_in + kb - 1) / kb;
		}
		int pf_per_group = (int)((pf_end - pf) / 64 / ((n_rows / 4) * n_blk + 1)) + 1;
		for (int k0 = 0; k0 < n_in; k0 += kb) {
			int k1 = k0 + kb < n_in ? k0 + kb : n_in;
			for (r = 0; r + 4 <= n_rows; r += 4) {
				const float *xa = x + (size_t)r * x_stride, *xb = xa + x_stride, *xc = xb + x_stride,
					    *xd = xc + x_stride;
				float *ac = acc_buf + (size_t)r / 4 * 256;
				__m512 acc[16]; /* [x row][weight row] */
#pragma GCC unroll 16
				for (int q = 0; q < 16; q++)
					acc[q] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(ac + 16 * q);
				for (int q = 0; q < pf_per_group && pf < pf_end; q++, pf += 64)
					_mm_prefetch(pf, _MM_HINT_T1);
				for (int i = k0; i < k1; i += 16) {
					__m512 xv[4] = { _mm512_loadu_ps(xa + i), _mm512_loadu_ps(xb + i),
							 _mm512_loadu_ps(xc + i), _mm512_loadu_ps(xd + i) };
#pragma GCC unroll 4
					for (int k = 0; k < 4; k++) {
						__m512 v = _mm512_loadu_ps(w + (size_t)k * n_in + i);
#pragma GCC unroll 4
						for (int q = 0; q < 4; q++)
							acc[4 * q + k] = _mm512_fmadd_ps(v, xv[q], acc[4 * q + k]);
					}
				}
				if (k1 < n_in) {
#pragma GCC unroll 16
					for (int q = 0; q < 16; q++)
						_mm512_storeu_ps(ac + 16 * q, acc[q]);
					continue;
				}
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					float *yq = y + (size_t)(r + q) * y_stride + o0;
#pragma GCC unroll 4
					for (int k = 0; k < 4; k++)
						yq[k] = _mm512_reduce_add_ps(acc[4 * q + k]);
				}
			}
		}
		for (; r < n_rows; r++) {
			const float *xr = x + (size_t)r * x_stride;
			__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int i = 0; i < n_in; i += 16) {
				_mm_prefetch(pf, _MM_HINT_T1);
				_mm_prefetch(pf + 64, _MM_HINT_T1);
				_mm_prefetch(pf + 128, _MM_HINT_T1);
				_mm_prefetch(pf + 192, _MM_HINT_T1);
				pf += pf + 320 < pf_end ? 256 : 0;
				__m512 xv = _mm512_loadu_ps(xr + i);
				a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), xv, a0);
				a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), xv, a1);
				a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), xv, a2);
				a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), xv, a3);
			}
			float *yr = y + (size_t)r * y_stride + o0;
			yr[0] = _mm512_reduce_add_ps(a0), yr[1] = _mm512_reduce_add_ps(a1);
			yr[2] = _mm512_reduce_add_ps(a2), yr[3] = _mm512_reduce_add_ps(a3);
		}
		return;
	}
	for (; r < n_rows; r++) {
		const float *xr = x + (size_t)r * x_stride;
		for (int k = 0; k < n_w; k++) {
			const float *wk = w + (size_t)k * n_in;
			__m512 a = _mm512_setzero_ps();
			for (int i = 0; i < n_in; i += 16)
				a = _mm512_fmadd_ps(_mm512_loadu_ps(wk + i), _mm512_loadu_ps(xr + i), a);
			y[(size_t)r * y_stride + o0 + k] = _mm512_reduce_add_ps(a);
		}
	}
}
#endif

/* ---- thread pool ---- */

/* Workers spin on the generation counter for up to SPIN_NS after a job (a forward pass
 * dispatches jobs microseconds apart, and a condition-variable wake-up costs tens of
 * microseconds), then sleep on the condition variable, so an idle model costs no CPU. */
#define SPIN_NS 2000000L

struct kern_pool {
	int n_threads;
	int use_avx2;
	int use_avx512;              /* matmul tiles on 512-bit vectors (rows a multiple of 16) */
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t cv_start;
	int n_sleeping;              /* guarded by mu */
	atomic_ulong generation;     /* bumped (under mu) to publish a job */
	atomic_int n_pending;        /* workers that have not finished the current job */
	atomic_int stop;
	int n_job;                   /* job fields are written before generation is bumped */
	void (*fn)(void *, int, int);
	void *ctx;
	float **scratch; /* per thread: ROWS_PER_TILE * scratch_n floats, decoded weight rows */
	size_t scratch_n;
	float **acc;     /* per thread: 64 * (acc_rows + 4) floats, partial sums between K blocks */
	int acc_rows;
	int quant_isa;   /* QUANT_ISA_* for block weights: AVX-512 VNNI with the AVX-512 tiles */
	int group_isa;   /* QUANT_ISA_* for grouped weights: VNNI (256-bit) wherever the CPU has it */
	uint8_t *actq;   /* the pass's activations quantised for block weights (Q8_0, Q8_1, Q8_K rows) */
	size_t actq_bytes;
};

struct worker_arg {
	struct kern_pool *p;
	int ith;
};

static inline void cpu_relax(void)
{
#if KERN_X86
	__builtin_ia32_pause();
#endif
}

static long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct kern_pool *p = wa->p;
	int ith = wa->ith;
	free(wa);
	unsigned long seen = 0;
	for (;;) {
		unsigned long g = atomic_load_explicit(&p->generation, memory_order_acquire);
		if (g == seen && !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
			long t0 = mono_ns();
			for (int i = 0;; i++) {
				g = atomic_load_explicit(&p->generation, memory_order_acquire);
				if (g != seen || atomic_load_explicit(&p->stop, memory_order_relaxed))
					break;
				if (i < 256) {
					cpu_relax();
				} else {
					sched_yield(); /* give way when the machine has more threads than cores */
					if ((i & 63) == 63 && mono_ns() - t0 > SPIN_NS)
						break;
				}
			}
		}
		if (g == seen) {
			pthread_mutex_lock(&p->mu);
			p->n_sleeping++;
			while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
				pthread_cond_wait(&p->cv_start, &p->mu);
			p->n_sleeping--;
			pthread_mutex_unlock(&p->mu);
		}
		if (atomic_load(&p->stop))
			return NULL;
		seen = g;
		if (ith < p->n_job)
			p->fn(p->ctx, ith, p->n_job);
		atomic_fetch_sub_explicit(&p->n_pending, 1, memory_order_release);
	}
}

struct kern_pool *kern_pool_create(int n_threads, const char *isa)
{
	struct kern_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (n_threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = n > 0 ? (int)n : 1;
	}
	if (n_threads > 256)
		n_threads = 256;
	p->n_threads = n_threads;
#if KERN_X86
	p->use_avx2 = (!isa || strcmp(isa, "portable") != 0) && have_avx2();
	if (p->use_avx2 && isa && strcmp(isa, "avx512") == 0)
		p->use_avx512 = __builtin_cpu_supports("avx512f");
	else if (p->use_avx2 && (!isa || strcmp(isa, "auto") == 0))
		p->use_avx512 = avx512_full;
#endif
	p->quant_isa = QUANT_ISA_PORTABLE;
	if (p->use_avx2)
		/* with the AVX-512 tiles (where 512-bit operations run at full width, or asked
		 * for): the VNNI kernels; where they run as two halves they measured slower */
		p->quant_isa = p->use_avx512 && quant_isa_best() == QUANT_ISA_AVX512 ? QUANT_ISA_AVX512 : QUANT_ISA_AVX2;
	/* the group kernels' VNNI form is 256-bit, at full rate where 512-bit operations are
	 * split, so it is taken unless "avx2" (or "portable") was asked for */
	p->group_isa = p->quant_isa;
	if (p->use_avx2 && !(isa && strcmp(isa, "avx2") == 0) && quant_isa_best() == QUANT_ISA_AVX512)
		p->group_isa = QUANT_ISA_AVX512;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_start, NULL);
	atomic_init(&p->generation, 0);
	atomic_init(&p->n_pending, 0);
	atomic_init(&p->stop, 0);
	p->scratch = calloc((size_t)n_threads, sizeof(*p->scratch));
	p->acc = calloc((size_t)n_threads, sizeof(*p->acc));
	p->threads = calloc((size_t)n_threads, sizeof(*p->threads));
	if (!p->scratch || !p->acc || !p->threads) {
		kern_pool_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	/* Thread 0 is the caller; workers are 1..n-1. */
	for (int i = 1; i < n_threads; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));
		if (wa) {
			wa->p = p;
			wa->ith = i;
		}
		if (!wa || pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
			free(wa);
			p->n_threads = i;
			kern_pool_destroy(p);
			errno = EAGAIN;
			return NULL;
		}
	}
	return p;
}

void kern_pool_destroy(struct kern_pool *p)
{
	if (!p)
		return;
	if (p->threads) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->stop, 1);
		pthread_cond_broadcast(&p->cv_start);
		pthread_mutex_unlock(&p->mu);
		for (int i = 1; i < p->n_threads; i++)
			pthread_join(p->threads[i], NULL);
	}
	if (p->scratch)
		for (int i = 0; i < p->n_threads; i++)
			free(p->scratch[i]);
	free(p->scratch);
	if (p->acc)
		for (int i = 0; i < p->n_threads; i++)
			free(p->acc[i]);
	free(p->acc);
	free(p->actq);
	free(p->threads);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_start);
	free(p);
}

int kern_pool_threads(const struct kern_pool *p)
{
	return p->n_threads;
}

const char *kern_pool_isa(const struct kern_pool *p)
{
	return p->use_avx512 ? "avx512" : p->use_avx2 ? "avx2" : "portable";
}

void kern_pool_run(struct kern_pool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx, int n)
{
	if (n > p->n_threads)
		n = p->n_threads;
	if (n <= 1) {
		fn(ctx, 0, 1);
		return;
	}
	/* Every worker acknowledges every job (those with ith >= n do nothing), so no worker can
	 * still be reading the job fields when the next job overwrites them. */
	p->fn = fn;
	p->ctx = ctx;
	p->n_job = n;
	atomic_store_explicit(&p->n_pending, p->n_threads - 1, memory_order_relaxed);
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
	if (p->n_sleeping)
		pthread_cond_broadcast(&p->cv_start);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0, n);
	for (int i = 0; atomic_load_explicit(&p->n_pending, memory_order_acquire) > 0; i++) {
		if (i < 256)
			cpu_relax();
		else
			sched_yield();
	}
}

/* ---- matmul ---- */

struct matmul_job {
	struct kern_pool *p;
	int n_mat;
	const struct kern_mat *const *w;
	float *const *y;
	const int *y_stride;
	int tile0[KERN_MATMUL_MAX + 1]; /* matrix i owns global tiles [tile0[i], tile0[i+1]) */
	const float *x;
	int x_stride, n_rows;
	const uint8_t *xq[3];  /* x quantised as Q8_0, Q8_1, Q8_K (where a matrix needs it): n_rows rows */
	size_t xq_row[3];      /* bytes per quantised row */
};

/* Index of the activation format in matmul_job.xq: 0 Q8_0, 1 Q8_1, 2 Q8_K. */
static int act_index(uint32_t act)
{
	return act == GGUF_TENSOR_Q8_0 ? 0 : act == GGUF_TENSOR_Q8_1 ? 1 : 2;
}

static const uint32_t act_types[3] = { GGUF_TENSOR_Q8_0, GGUF_TENSOR_Q8_1, GGUF_TENSOR_Q8_K };

/* Quantise rows [n_rows*ith/nth, n_rows*(ith+1)/nth) of x into each needed format. */
static void act_part(void *arg, int ith, int nth)
{
	struct matmul_job *j = arg;
	int r0 = (int)((long)j->n_rows * ith / nth), r1 = (int)((long)j->n_rows * (ith + 1) / nth);
	int n_in = j->w[0]->n_in;
	for (int a = 0; a < 3; a++)
		for (int r = r0; j->xq[a] && r < r1; r++)
			quant_act_quantize(act_types[a], j->x + (size_t)r * j->x_stride,
					   (uint8_t *)j->xq[a] + (size_t)r * j->xq_row[a], n_in);
}

/* Block weights: each of the tile's rows against every quantised activation row (the weight
 * row stays in L1 while the activations stream from L2). */
static void tile_block(struct matmul_job *j, const struct kern_mat *w, int o0, int n_w, float *y, int y_stride)
{
	int a = act_index(quant_act_type(w->type));
	const uint8_t *xq = j->xq[a];
	float out[64];
	for (int k = 0; k < n_w; k++) {
		const void *row = (const uint8_t *)w->data + (size_t)(o0 + k) * w->row_bytes;
		for (int r0 = 0; r0 < j->n_rows; r0 += 64) {
			int nr = j->n_rows - r0 < 64 ? j->n_rows - r0 : 64;
			quant_rows_dot(w->type, row, xq + (size_t)r0 * j->xq_row[a], j->xq_row[a], nr, w->n_in, out,
				       j->p->quant_isa);
			for (int r = 0; r < nr; r++)
				y[(size_t)(r0 + r) * y_stride + o0 + k] = out[r];
		}
	}
}

/* Grouped weights: one group of 8 rows against every quantised activation row. */
static void tile_group(struct matmul_job *j, const struct kern_mat *w, int o0, int n_w, float *y, int y_stride)
{
	int a = act_index(quant_act_type(w->type));
	const uint8_t *xq = j->xq[a];
	const void *g = (const uint8_t *)w->data + (size_t)(o0 / QUANT_GROUP_ROWS) * quant_group_bytes(w->type, w->n_in);
	float out[64 * QUANT_GROUP_ROWS];
	for (int r0 = 0; r0 < j->n_rows; r0 += 64) {
		int nr = j->n_rows - r0 < 64 ? j->n_rows - r0 : 64;
		quant_group_dot(w->type, g, xq + (size_t)r0 * j->xq_row[a], j->xq_row[a], nr, w->n_in, out, j->p->group_isa);
		for (int r = 0; r < nr; r++)
			memcpy(y + (size_t)(r0 + r) * y_stride + o0, out + r * QUANT_GROUP_ROWS, sizeof(float) * (size_t)n_w);
	}
}

/* Output rows per tile: 4, or a group of 8 for grouped weights. */
static int tile_rows(const struct kern_mat *w)
{
	return w->grouped ? QUANT_GROUP_ROWS : ROWS_PER_TILE;
}

static int tiles_of(const struct kern_mat *w)
{
	return (w->n_out + tile_rows(w) - 1) / tile_rows(w);
}

size_t kern_mat_group_bytes(const struct kern_mat *w)
{
#if KERN_X86
	if (!quant_type_groups(w->type) || w->grouped || w->n_out <= 0 || !have_avx2())
		return 0;
#else
	if (1)
		return 0;
#endif
	return (size_t)((w->n_out + QUANT_GROUP_ROWS - 1) / QUANT_GROUP_ROWS) * quant_group_bytes(w->type, w->n_in);
}

void kern_mat_group(struct kern_mat *w, void *dst)
{
	size_t gb = quant_group_bytes(w->type, w->n_in);
	for (int o = 0; o < w->n_out; o += QUANT_GROUP_ROWS) {
		int nr = w->n_out - o < QUANT_GROUP_ROWS ? w->n_out - o : QUANT_GROUP_ROWS;
		quant_group_pack(w->type, (const uint8_t *)w->data + (size_t)o * w->row_bytes, w->row_bytes, nr, w->n_in,
				 (uint8_t *)dst + (size_t)(o / QUANT_GROUP_ROWS) * gb);
	}
	w->data = dst;
	w->grouped = 1;
}

/* Thread ith of nth takes an even share of all the matrices' tiles, in order. */
static void matmul_part(void *arg, int ith, int nth)
{
	struct matmul_job *j = arg;
	int n_tiles = j->tile0[j->n_mat];
	int t0 = (int)((long)n_tiles * ith / nth), t1 = (int)((long)n_tiles * (ith + 1) / nth);
	float *buf = j->p->scratch[ith];
	int mi = 0;
	for (int t = t0; t < t1; t++) {
		while (t >= j->tile0[mi + 1])
			mi++;
		const struct kern_mat *w = j->w[mi];
		float *y = j->y[mi];
		int y_stride = j->y_stride[mi];
		int o0 = (t - j->tile0[mi]) * tile_rows(w);
		int n_w = w->n_out - o0 < tile_rows(w) ? w->n_out - o0 : tile_rows(w);
		if (w->grouped) {
			tile_group(j, w, o0, n_w, y, y_stride);
			continue;
		}
		if (quant_type_is_block(w->type)) {
			tile_block(j, w, o0, n_w, y, y_stride);
			continue;
		}
		const float *wf;
		if (w->type == GGUF_TENSOR_F32 && w->row_bytes == (size_t)w->n_in * 4) {
			wf = (const float *)((const uint8_t *)w->data + (size_t)o0 * w->row_bytes);
		} else {
			for (int k = 0; k < n_w; k++) {
				const void *row = (const uint8_t *)w->data + (size_t)(o0 + k) * w->row_bytes;
#if KERN_X86
				if (j->p->use_avx2)
					row_to_f32_avx2(w->type, row, buf + (size_t)k * w->n_in, w->n_in);
				else
#endif
					row_to_f32_portable(w->type, row, buf + (size_t)k * w->n_in, w->n_in);
			}
			wf = buf;
		}
#if KERN_X86
		/* The next tile's raw rows (this matrix's or the next one's first), prefetched
		 * while this one is computed. */
		const char *pf = (const char *)wf, *pf_end = pf;
		if (t + 1 < t1) {
			const struct kern_mat *wn = t + 1 < j->tile0[mi + 1] ? w : j->w[mi + 1];
			int on = wn == w ? o0 + ROWS_PER_TILE : 0;
			int n_next = wn->n_out - on < ROWS_PER_TILE ? wn->n_out - on : ROWS_PER_TILE;
			pf = (const char *)wn->data + (size_t)on * wn->row_bytes;
			pf_end = pf + (size_t)n_next * wn->row_bytes;
		}
		if (j->p->use_avx512 && w->n_in % 16 == 0)
			tile_avx512(wf, n_w, w->n_in, j->x, j->x_stride, j->n_rows, y, y_stride, o0, pf, pf_end,
				    j->p->acc[ith]);
		else if (j->p->use_avx2)
			tile_avx2(wf, n_w, w->n_in, j->x, j->x_stride, j->n_rows, y, y_stride, o0, pf, pf_end,
				  j->p->acc[ith]);
		else
#endif
			tile_portable(wf, n_w, w->n_in, j->x, j->x_stride, j->n_rows, y, y_stride, o0);
	}
}

void kern_matmul_n(struct kern_pool *p, int n_mat, const struct kern_mat *const *w, const float *x, int x_stride,
		   int n_rows, float *const *y, const int *y_stride)
{
	if (n_rows <= 0 || n_mat <= 0)
		return;
	if (n_mat > KERN_MATMUL_MAX) {
		kern_matmul_n(p, KERN_MATMUL_MAX, w, x, x_stride, n_rows, y, y_stride);
		kern_matmul_n(p, n_mat - KERN_MATMUL_MAX, w + KERN_MATMUL_MAX, x, x_stride, n_rows, y + KERN_MATMUL_MAX,
			      y_stride + KERN_MATMUL_MAX);
		return;
	}
	int n_in = w[0]->n_in;
	if (p->scratch_n < (size_t)n_in) {
		for (int i = 0; i < p->n_threads; i++) {
			float *b = realloc(p->scratch[i], sizeof(float) * ROWS_PER_TILE * (size_t)n_in);
			if (!b)
				abort(); /* a few KiB per thread; out of memory here has no way to recover */
			p->scratch[i] = b;
		}
		p->scratch_n = (size_t)n_in;
	}
	if (p->acc_rows < n_rows) {
		for (int i = 0; i < p->n_threads; i++) {
			float *b = realloc(p->acc[i], sizeof(float) * 64 * (size_t)(n_rows + 4));
			if (!b)
				abort(); /* 256 bytes a row a thread, as above */
			p->acc[i] = b;
		}
		p->acc_rows = n_rows;
	}
	struct matmul_job j = { .p = p, .n_mat = n_mat, .w = w, .y = y, .y_stride = y_stride, .x = x,
				.x_stride = x_stride, .n_rows = n_rows };
	double work = 0;
	for (int i = 0; i < n_mat; i++) {
		j.tile0[i + 1] = j.tile0[i] + (w[i]->n_out > 0 ? tiles_of(w[i]) : 0);
		work += (double)w[i]->n_in * (w[i]->n_out > 0 ? w[i]->n_out : 0) * n_rows;
	}
	int n_tiles = j.tile0[n_mat];
	if (n_tiles == 0)
		return;
	/* Block weights read x quantised the way llama.cpp pairs with their type; each needed
	 * format is made once per call, rows split over the pool when there are many. */
	size_t need[3] = { 0, 0, 0 }, total = 0;
	for (int i = 0; i < n_mat; i++) {
		uint32_t act = quant_act_type(w[i]->type);
		if (act)
			need[act_index(act)] = (size_t)(n_in / quant_block_elems(act)) * (size_t)quant_block_bytes(act);
	}
	for (int a = 0; a < 3; a++)
		total += need[a] * (size_t)n_rows;
	if (total) {
		if (p->actq_bytes < total) {
			uint8_t *b = realloc(p->actq, total);
			if (!b)
				abort(); /* activations of one pass, a few hundred KiB at most */
			p->actq = b;
			p->actq_bytes = total;
		}
		size_t off = 0;
		for (int a = 0; a < 3; a++) {
			j.xq[a] = need[a] ? p->actq + off : NULL;
			j.xq_row[a] = need[a];
			off += need[a] * (size_t)n_rows;
		}
		int nq = n_rows * (double)n_in < 65536.0 ? 1 : p->n_threads < n_rows ? p->n_threads : n_rows;
		kern_pool_run(p, act_part, &j, nq);
	}
	/* Small products are not worth waking threads for. */
	int nth = p->n_threads;
	if (work < 65536.0 * nth)
		nth = work < 65536.0 ? 1 : (int)(work / 65536.0);
	if (nth > n_tiles)
		nth = n_tiles;
	kern_pool_run(p, matmul_part, &j, nth);
}

void kern_matmul(struct kern_pool *p, const struct kern_mat *w, const float *x, int x_stride, int n_rows,
		 float *y, int y_stride)
{
	kern_matmul_n(p, 1, &w, x, x_stride, n_rows, &y, &y_stride);
}

/* ---- vector primitives ---- */

#if KERN_X86
__attribute__((target("avx2,fma,f16c"))) static float dot_avx2(const float *a, const float *b, int n)
{
	__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
		acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
	}
	for (; i + 8 <= n; i += 8)
		acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
	float s = hsum256(_mm256_add_ps(acc0, acc1));
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}

__attribute__((target("avx2,fma,f16c"))) static void axpy_avx2(float *y, float a, const float *x, int n)
{
	__m256 av = _mm256_set1_ps(a);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * x[i];
}


/* exp(x) for 8 floats: x = n ln2 + r with |r| <= ln2/2, e^r by Cephes' degree-6 polynomial,
 * 2^n through the exponent bits. Inputs are clamped to [-87.3, 88.7] (results stay normal). */
__attribute__((target("avx2,fma,f16c"))) static inline __m256 exp256(__m256 x)
{
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma,f16c"))) static inline __m256 silu256(__m256 v)
{
	__m256 one = _mm256_set1_ps(1.0f);
	return _mm256_div_ps(v, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), v))));
}

__attribute__((target("avx2,fma,f16c"))) static int silu_mul_avx2(float *y, const float *m, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = silu256(_mm256_loadu_ps(y + i));
		if (m)
			v = _mm256_mul_ps(v, _mm256_loadu_ps(m + i));
		_mm256_storeu_ps(y + i, v);
	}
	return i;
}

__attribute__((target("avx2,fma,f16c"))) static int mul_silu_avx2(float *y, const float *z, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), silu256(_mm256_loadu_ps(z + i))));
	return i;
}

__attribute__((target("avx2,fma,f16c"))) static int exp_shift_avx2(float *x, float shift, int n, float *sum)
{
	__m256 sh = _mm256_set1_ps(shift), acc = _mm256_setzero_ps();
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
		_mm256_storeu_ps(x + i, e);
		acc = _mm256_add_ps(acc, e);
	}
	*sum = hsum256(acc);
	return i;
}
#endif

static float silu1(float v)
{
	return v / (1.0f + expf(-v));
}

void kern_silu_mul(float *y, const float *m, int n)
{
	int i = 0;
#if KERN_X86
	if (have_avx2())
		i = silu_mul_avx2(y, m, n);
#endif
	for (; i < n; i++)
		y[i] = silu1(y[i]) * (m ? m[i] : 1.0f);
}

void kern_mul_silu(float *y, const float *z, int n)
{
	int i = 0;
#if KERN_X86
	if (have_avx2())
		i = mul_silu_avx2(y, z, n);
#endif
	for (; i < n; i++)
		y[i] *= silu1(z[i]);
}

float kern_exp_shift(float *x, float shift, int n)
{
	int i = 0;
	float sum = 0;
#if KERN_X86
	if (have_avx2())
		i = exp_shift_avx2(x, shift, n, &sum);
#endif
	for (; i < n; i++) {
		x[i] = expf(x[i] - shift);
		sum += x[i];
	}
	return sum;
}

float kern_dot(const float *a, const float *b, int n)
{
#if KERN_X86
	if (have_avx2())
		return dot_avx2(a, b, n);
#endif
	float s = 0;
	for (int i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

void kern_axpy(float *y, float a, const float *x, int n)
{
#if KERN_X86
	if (have_avx2()) {
		axpy_avx2(y, a, x, n);
		return;
	}
#endif
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}
