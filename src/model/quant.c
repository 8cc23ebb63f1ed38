/* quant — see quant.h. Formats, decoding order and the activation quantisers follow
 * llama.cpp's ggml/src/ggml-common.h (block structs), ggml-quants.c (dequantize_row_*,
 * quantize_row_q8_K_ref) and ggml-cpu/arch/x86/quants.c (quantize_row_q8_0/q8_1); the code is
 * this project's own.
 *
 * Every block type is first unpacked into integers (struct blk: one small integer per element,
 * integer sub-block scales, fp32 super-block scales); decoding and the portable dot products
 * work on that, so one unpacker per type serves both. The AVX2 dot products read the packed
 * bytes directly (maddubs on 4- to 6-bit unsigned values against int8 activations, or
 * abs/sign for signed ones), one function per type.
 * Workload: a decode pass is a few hundred dot products of a weight row with each activation
 * row; unpacking is only on the portable path and for decoding (embedding rows, tests).
 * Q4_K and Q6_K matrices are mostly read in groups of 8 rows (quant_group_*, the model's
 * load-time copy): the group kernels are the row kernels' integer sums in another layout. */
#include "model/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QUANT_X86 1
#include <immintrin.h>
#else
#define QUANT_X86 0
#endif

#define QK 32   /* elements of a Q4_0 .. Q8_1, IQ4_NL block */
#define QK_K 256 /* elements of a K-quant, IQ4_XS, Q8_K block */
#ifndef ROWS_STEP
#define ROWS_STEP 4 /* activation rows per weight read in the SIMD kernels (at most ROWS_MAX) */
#endif

/* The 16 levels of IQ4_NL and IQ4_XS (ggml-common.h's kvalues_iq4nl). */
static const int8_t iq4nl_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
					  1,    13,   25,  38,  53,  69,  89,  113 };

int quant_block_elems(uint32_t type)
{
	switch (type) {
	case GGUF_TENSOR_Q4_0: case GGUF_TENSOR_Q4_1: case GGUF_TENSOR_Q5_0: case GGUF_TENSOR_Q5_1:
	case GGUF_TENSOR_Q8_0: case GGUF_TENSOR_Q8_1: case GGUF_TENSOR_IQ4_NL:
		return QK;
	case GGUF_TENSOR_Q4_K: case GGUF_TENSOR_Q5_K: case GGUF_TENSOR_Q6_K: case GGUF_TENSOR_Q8_K:
	case GGUF_TENSOR_IQ4_XS:
		return QK_K;
	default:
		return 0;
	}
}

int quant_block_bytes(uint32_t type)
{
	switch (type) {
	case GGUF_TENSOR_Q4_0: return 2 + 16;
	case GGUF_TENSOR_Q4_1: return 4 + 16;
	case GGUF_TENSOR_Q5_0: return 2 + 4 + 16;
	case GGUF_TENSOR_Q5_1: return 4 + 4 + 16;
	case GGUF_TENSOR_Q8_0: return 2 + 32;
	case GGUF_TENSOR_Q8_1: return 4 + 32;
	case GGUF_TENSOR_IQ4_NL: return 2 + 16;
	case GGUF_TENSOR_Q4_K: return 4 + 12 + 128;
	case GGUF_TENSOR_Q5_K: return 4 + 12 + 32 + 128;
	case GGUF_TENSOR_Q6_K: return 128 + 64 + 16 + 2;
	case GGUF_TENSOR_Q8_K: return 4 + 256 + 32;
	case GGUF_TENSOR_IQ4_XS: return 2 + 2 + 4 + 128;
	default: return 0;
	}
}

int quant_type_is_block(uint32_t type)
{
	return quant_block_elems(type) != 0 && type != GGUF_TENSOR_Q8_1 && type != GGUF_TENSOR_Q8_K;
}

uint32_t quant_act_type(uint32_t type)
{
	switch (type) {
	case GGUF_TENSOR_Q4_0: case GGUF_TENSOR_Q5_0: case GGUF_TENSOR_Q8_0: case GGUF_TENSOR_IQ4_NL:
		return GGUF_TENSOR_Q8_0;
	case GGUF_TENSOR_Q4_1: case GGUF_TENSOR_Q5_1:
		return GGUF_TENSOR_Q8_1;
	case GGUF_TENSOR_Q4_K: case GGUF_TENSOR_Q5_K: case GGUF_TENSOR_Q6_K: case GGUF_TENSOR_IQ4_XS:
		return GGUF_TENSOR_Q8_K;
	default:
		return 0;
	}
}

static float half(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return kern_f16_to_f32(h);
}

static void put_half(uint8_t *p, float f)
{
	uint16_t h = kern_f32_to_f16(f);
	memcpy(p, &h, 2);
}

/* ---- unpacking: one block into integers ---- */

/* A block as integers. Element e is q[e]; its value is
 *   32-element types:  q*d (+ m for Q4_1, Q5_1)
 *   256-element types: (d*sc[g])*q - dmin*mn[g], g = e / sub (mn = 0 for Q6_K, IQ4_XS). */
struct blk {
	int8_t q[QK_K];
	int sc[16], mn[16]; /* per sub-block integer scale and min */
	int sub;            /* elements per sub-block (256-element types) */
	float d, dmin;      /* fp16 scales widened; dmin is Q4_1/Q5_1's m */
};

/* The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block (12 packed bytes). */
static void scale_min_k4(int j, const uint8_t *s, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*mn = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
		*mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

/* The 8 scales and 8 mins of a Q4_K/Q5_K block as bytes, by 32-bit lanes (the same
 * values scale_min_k4 gives one at a time). */
static inline void scales_k4(const uint8_t *s, uint8_t sc[8], uint8_t mn[8])
{
	uint32_t a, b, c, v[4];
	memcpy(&a, s, 4);
	memcpy(&b, s + 4, 4);
	memcpy(&c, s + 8, 4);
	v[0] = a & 0x3f3f3f3fu;
	v[1] = (c & 0x0f0f0f0fu) | ((a >> 6) & 0x03030303u) << 4;
	v[2] = b & 0x3f3f3f3fu;
	v[3] = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 6) & 0x03030303u) << 4;
	memcpy(sc, v, 8);
	memcpy(mn, v + 2, 8);
}

static void unpack(uint32_t type, const uint8_t *b, struct blk *u)
{
	switch (type) {
	case GGUF_TENSOR_Q4_0: case GGUF_TENSOR_Q4_1: case GGUF_TENSOR_IQ4_NL: {
		int one = type == GGUF_TENSOR_Q4_1;
		const uint8_t *qs = b + (one ? 4 : 2);
		u->d = half(b);
		u->dmin = one ? half(b + 2) : 0;
		for (int j = 0; j < 16; j++) {
			int lo = qs[j] & 0xF, hi = qs[j] >> 4;
			if (type == GGUF_TENSOR_IQ4_NL)
				lo = iq4nl_values[lo], hi = iq4nl_values[hi];
			else if (!one)
				lo -= 8, hi -= 8;
			u->q[j] = (int8_t)lo;
			u->q[j + 16] = (int8_t)hi;
		}
		break;
	}
	case GGUF_TENSOR_Q5_0: case GGUF_TENSOR_Q5_1: {
		int one = type == GGUF_TENSOR_Q5_1;
		const uint8_t *p = b + (one ? 4 : 2), *qs = p + 4;
		uint32_t qh;
		memcpy(&qh, p, 4);
		u->d = half(b);
		u->dmin = one ? half(b + 2) : 0;
		for (int j = 0; j < 16; j++) {
			int lo = (qs[j] & 0xF) | (((qh >> j) << 4) & 0x10);
			int hi = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
			u->q[j] = (int8_t)(one ? lo : lo - 16);
			u->q[j + 16] = (int8_t)(one ? hi : hi - 16);
		}
		break;
	}
	case GGUF_TENSOR_Q8_0:
		u->d = half(b);
		memcpy(u->q, b + 2, 32);
		break;
	case GGUF_TENSOR_Q4_K: case GGUF_TENSOR_Q5_K: {
		int five = type == GGUF_TENSOR_Q5_K;
		const uint8_t *s = b + 4, *qh = b + 16, *qs = b + 16 + (five ? 32 : 0);
		u->d = half(b);
		u->dmin = half(b + 2);
		u->sub = 32;
		for (int j = 0; j < 8; j++)
			scale_min_k4(j, s, &u->sc[j], &u->mn[j]);
		/* 64 elements per 32 bytes: low nibbles, then high nibbles; Q5_K's fifth bit of
		 * element l of sub-block j is bit j of qh[l]. */
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++) {
				int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
				if (five) {
					lo += qh[l] & (1u << (2 * c)) ? 16 : 0;
					hi += qh[l] & (1u << (2 * c + 1)) ? 16 : 0;
				}
				u->q[64 * c + l] = (int8_t)lo;
				u->q[64 * c + 32 + l] = (int8_t)hi;
			}
		break;
	}
	case GGUF_TENSOR_Q6_K: {
		const uint8_t *ql = b, *qh = b + 128;
		const int8_t *sc = (const int8_t *)(b + 192);
		u->d = half(b + 208);
		u->dmin = 0;
		u->sub = 16;
		for (int j = 0; j < 16; j++)
			u->sc[j] = sc[j], u->mn[j] = 0;
		for (int h = 0; h < 2; h++, ql += 64, qh += 32)
			for (int l = 0; l < 32; l++) {
				int8_t *q = u->q + 128 * h;
				q[l] = (int8_t)(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
				q[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
				q[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
				q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
			}
		break;
	}
	case GGUF_TENSOR_IQ4_XS: {
		uint16_t sh;
		memcpy(&sh, b + 2, 2);
		const uint8_t *sl = b + 4, *qs = b + 8;
		u->d = half(b);
		u->dmin = 0;
		u->sub = 32;
		for (int ib = 0; ib < 8; ib++) {
			u->sc[ib] = (((sl[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((sh >> 2 * ib) & 3) << 4)) - 32;
			u->mn[ib] = 0;
			for (int j = 0; j < 16; j++) {
				u->q[32 * ib + j] = iq4nl_values[qs[16 * ib + j] & 0xF];
				u->q[32 * ib + 16 + j] = iq4nl_values[qs[16 * ib + j] >> 4];
			}
		}
		break;
	}
	default:
		memset(u, 0, sizeof(*u));
	}
}

/* ---- decoding ---- */

void quant_row_dequantize(uint32_t type, const void *row, float *out, int n)
{
	int be = quant_block_elems(type), bb = quant_block_bytes(type);
	if (!be) {
		memset(out, 0, sizeof(float) * (size_t)n);
		return;
	}
	const uint8_t *p = row;
	struct blk u;
	for (int b = 0; b < n / be; b++, p += bb, out += be) {
		unpack(type, p, &u);
		if (be == QK) {
			/* ggml: x*d, or x*d + m (int times float, then the add) */
			if (type == GGUF_TENSOR_Q4_1 || type == GGUF_TENSOR_Q5_1)
				for (int e = 0; e < QK; e++)
					out[e] = (float)u.q[e] * u.d + u.dmin;
			else
				for (int e = 0; e < QK; e++)
					out[e] = (float)u.q[e] * u.d;
			continue;
		}
		/* ggml: d1 = d*sc, m1 = dmin*m, y = d1*q - m1 (Q4_K, Q5_K); y = d*sc*q (Q6_K,
		 * left to right); dl = d*ls, y = dl*value (IQ4_XS) */
		for (int g = 0; g < QK_K / u.sub; g++) {
			float d1 = u.d * (float)u.sc[g], m1 = u.dmin * (float)u.mn[g];
			const int8_t *q = u.q + g * u.sub;
			if (type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q5_K)
				for (int e = 0; e < u.sub; e++)
					out[g * u.sub + e] = d1 * (float)(uint8_t)q[e] - m1;
			else
				for (int e = 0; e < u.sub; e++)
					out[g * u.sub + e] = d1 * (float)q[e];
		}
	}
}

/* ---- sixi's quantisers (for writing files) ---- */

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The element of largest magnitude, with its sign. */
static float signed_max(const float *x, int n)
{
	float amax = 0, max = 0;
	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > amax)
			amax = fabsf(x[i]), max = x[i];
	return max;
}

static void range(const float *x, int n, float *lo, float *hi)
{
	*lo = *hi = x[0];
	for (int i = 1; i < n; i++)
		*lo = fminf(*lo, x[i]), *hi = fmaxf(*hi, x[i]);
}

/* Index of the IQ4_NL level nearest to v. */
static int iq4_nearest(float v)
{
	int best = 0;
	for (int k = 1; k < 16; k++)
		if (fabsf(v - iq4nl_values[k]) < fabsf(v - iq4nl_values[best]))
			best = k;
	return best;
}

/* Q4_0 / Q5_0 (symmetric: the signed max maps to -8 / -16), Q4_1 / Q5_1 (min + 15 or 31 steps). */
static void quantize_32(uint32_t type, const float *x, uint8_t *o)
{
	int five = type == GGUF_TENSOR_Q5_0 || type == GGUF_TENSOR_Q5_1;
	int one = type == GGUF_TENSOR_Q4_1 || type == GGUF_TENSOR_Q5_1;
	int top = five ? 31 : 15;
	int q[QK];
	float d, m = 0;
	if (one) {
		float lo, hi;
		range(x, QK, &lo, &hi);
		d = (hi - lo) / (float)top;
		m = lo;
		float id = d ? 1.0f / d : 0;
		for (int i = 0; i < QK; i++)
			q[i] = clampi((int)lrintf((x[i] - m) * id), 0, top);
		put_half(o, d);
		put_half(o + 2, m);
	} else {
		d = signed_max(x, QK) / (five ? -16.0f : -8.0f);
		float id = d ? 1.0f / d : 0;
		for (int i = 0; i < QK; i++)
			q[i] = clampi((int)lrintf(x[i] * id) + (top + 1) / 2, 0, top);
		put_half(o, d);
	}
	uint8_t *p = o + (one ? 4 : 2);
	if (five) {
		uint32_t qh = 0;
		for (int j = 0; j < 16; j++)
			qh |= (uint32_t)((q[j] >> 4) & 1) << j | (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
		memcpy(p, &qh, 4);
		p += 4;
	}
	for (int j = 0; j < 16; j++)
		p[j] = (uint8_t)((q[j] & 0xF) | (q[j + 16] & 0xF) << 4);
}

/* Q4_K / Q5_K: per 32-element sub-block x ≈ s*q - m (q in 0..15 or 0..31, m >= 0); s and m
 * are then quantised to 6 bits against the block's largest of each. */
static void quantize_k45(int five, const float *x, uint8_t *o)
{
	int top = five ? 31 : 15;
	float s[8], mn[8], smax = 0, mmax = 0;
	for (int j = 0; j < 8; j++) {
		float lo, hi;
		range(x + 32 * j, 32, &lo, &hi);
		if (lo > 0)
			lo = 0;
		s[j] = (hi - lo) / (float)top;
		mn[j] = -lo;
		smax = fmaxf(smax, s[j]);
		mmax = fmaxf(mmax, mn[j]);
	}
	float d = smax / 63.0f, dmin = mmax / 63.0f;
	put_half(o, d);
	put_half(o + 2, dmin);
	d = kern_f16_to_f32(kern_f32_to_f16(d));
	dmin = kern_f16_to_f32(kern_f32_to_f16(dmin));
	int ls[8], lm[8];
	for (int j = 0; j < 8; j++) {
		ls[j] = d ? clampi((int)lrintf(s[j] / d), 0, 63) : 0;
		lm[j] = dmin ? clampi((int)lrintf(mn[j] / dmin), 0, 63) : 0;
	}
	uint8_t *sc = o + 4;
	for (int j = 0; j < 4; j++) {
		sc[j] = (uint8_t)(ls[j] | (ls[j + 4] >> 4) << 6);
		sc[j + 4] = (uint8_t)(lm[j] | (lm[j + 4] >> 4) << 6);
		sc[j + 8] = (uint8_t)((ls[j + 4] & 0xF) | (lm[j + 4] & 0xF) << 4);
	}
	int q[QK_K];
	for (int j = 0; j < 8; j++) {
		float step = d * (float)ls[j], off = dmin * (float)lm[j];
		for (int i = 0; i < 32; i++)
			q[32 * j + i] = step ? clampi((int)lrintf((x[32 * j + i] + off) / step), 0, top) : 0;
	}
	uint8_t *qh = o + 16, *qs = o + 16 + (five ? 32 : 0);
	if (five)
		memset(qh, 0, 32);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
			qs[32 * c + l] = (uint8_t)((lo & 0xF) | (hi & 0xF) << 4);
			if (five)
				qh[l] |= (uint8_t)(((lo >> 4) & 1) << (2 * c) | ((hi >> 4) & 1) << (2 * c + 1));
		}
}

/* Q6_K: per 16-element sub-block x ≈ s*q, q in -32..31, s an int8 times the block's d. */
static void quantize_q6_k(const float *x, uint8_t *o)
{
	float s[16], amax = 0;
	for (int j = 0; j < 16; j++) {
		s[j] = signed_max(x + 16 * j, 16) / -32.0f;
		amax = fmaxf(amax, fabsf(s[j]));
	}
	float d = amax / 127.0f;
	put_half(o + 208, d);
	d = kern_f16_to_f32(kern_f32_to_f16(d));
	int8_t *sc = (int8_t *)(o + 192);
	int q[QK_K];
	for (int j = 0; j < 16; j++) {
		sc[j] = (int8_t)(d ? clampi((int)lrintf(s[j] / d), -127, 127) : 0);
		float step = d * (float)sc[j];
		for (int i = 0; i < 16; i++)
			q[16 * j + i] = (step ? clampi((int)lrintf(x[16 * j + i] / step), -32, 31) : 0) + 32;
	}
	uint8_t *ql = o, *qh = o + 128;
	for (int h = 0; h < 2; h++, ql += 64, qh += 32) {
		const int *v = q + 128 * h;
		for (int l = 0; l < 32; l++) {
			ql[l] = (uint8_t)((v[l] & 0xF) | (v[l + 64] & 0xF) << 4);
			ql[l + 32] = (uint8_t)((v[l + 32] & 0xF) | (v[l + 96] & 0xF) << 4);
			qh[l] = (uint8_t)(v[l] >> 4 | (v[l + 32] >> 4) << 2 | (v[l + 64] >> 4) << 4 | (v[l + 96] >> 4) << 6);
		}
	}
}

/* IQ4_NL (one fp16 scale per 32) and IQ4_XS (6-bit signed scales per 32 under one fp16). */
static void quantize_iq4(int xs, const float *x, uint8_t *o)
{
	int n_sub = xs ? 8 : 1;
	float s[8], amax = 0;
	for (int j = 0; j < n_sub; j++) {
		s[j] = signed_max(x + 32 * j, 32) / -127.0f;
		amax = fmaxf(amax, fabsf(s[j]));
	}
	float d = xs ? amax / 31.0f : s[0];
	put_half(o, d);
	d = kern_f16_to_f32(kern_f32_to_f16(d));
	uint8_t *qs = o + (xs ? 8 : 2);
	uint16_t sh = 0;
	if (xs)
		memset(o + 4, 0, 4);
	for (int j = 0; j < n_sub; j++) {
		int ls = 1;
		if (xs) {
			ls = d ? clampi((int)lrintf(s[j] / d), -31, 31) : 0;
			o[4 + j / 2] |= (uint8_t)(((ls + 32) & 0xF) << 4 * (j % 2));
			sh |= (uint16_t)(((ls + 32) >> 4) << 2 * j);
		}
		float step = d * (float)ls, is = step ? 1.0f / step : 0;
		for (int i = 0; i < 16; i++) {
			int lo = iq4_nearest(x[32 * j + i] * is), hi = iq4_nearest(x[32 * j + 16 + i] * is);
			qs[16 * j + i] = (uint8_t)(lo | hi << 4);
		}
	}
	if (xs)
		memcpy(o + 2, &sh, 2);
}

void quant_row_quantize(uint32_t type, const float *x, void *out, int n)
{
	int be = quant_block_elems(type), bb = quant_block_bytes(type);
	if (type == GGUF_TENSOR_Q8_0 || type == GGUF_TENSOR_Q8_1 || type == GGUF_TENSOR_Q8_K) {
		quant_act_quantize(type, x, out, n);
		return;
	}
	uint8_t *o = out;
	for (int b = 0; be && b < n / be; b++, x += be, o += bb) {
		switch (type) {
		case GGUF_TENSOR_Q4_K: quantize_k45(0, x, o); break;
		case GGUF_TENSOR_Q5_K: quantize_k45(1, x, o); break;
		case GGUF_TENSOR_Q6_K: quantize_q6_k(x, o); break;
		case GGUF_TENSOR_IQ4_NL: quantize_iq4(0, x, o); break;
		case GGUF_TENSOR_IQ4_XS: quantize_iq4(1, x, o); break;
		default: quantize_32(type, x, o); break;
		}
	}
}

/* ---- activations ---- */

/* ggml's nearest_int: round half to even through the float mantissa (|v| < 2^22). */
static int nearest_int(float v)
{
	float f = v + 12582912.0f;
	int32_t i;
	memcpy(&i, &f, 4);
	return (i & 0x007fffff) - 0x00400000;
}

/* One Q8_K block as llama.cpp's reference quantiser makes it (quantize_row_q8_K_ref). */
static void q8_k_block(const float *x, uint8_t *o)
{
	float max = signed_max(x, QK_K), d = 0;
	int8_t *q = (int8_t *)(o + 4);
	int16_t bs[16];
	if (max == 0) {
		memset(o, 0, 292);
		return;
	}
	float iscale = -127.0f / max;
	for (int j = 0; j < QK_K; j++) {
		int v = nearest_int(iscale * x[j]);
		q[j] = (int8_t)(v < 127 ? v : 127);
	}
	for (int g = 0; g < 16; g++) {
		int s = 0;
		for (int j = 0; j < 16; j++)
			s += q[16 * g + j];
		bs[g] = (int16_t)s;
	}
	d = 1 / iscale;
	memcpy(o, &d, 4);
	memcpy(o + 260, bs, 32);
}

#if QUANT_X86
/* One Q8_K block as q8_k_block makes it, byte for byte: the same first value of
 * largest magnitude, the same fp32 multiply and round-to-even add, the same clamp. */
__attribute__((target("avx2,fma,f16c"))) static void q8_k_block_avx2(const float *x, uint8_t *o)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 am = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
	for (int j = 0; j < QK_K; j += 8) {
		__m256 v = _mm256_loadu_ps(x + j);
		am = _mm256_max_ps(_mm256_andnot_ps(sign, v), am);
		nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
	}
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(am), _mm256_extractf128_ps(am, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
	float amax = _mm_cvtss_f32(h), max = 0;
	if (_mm256_movemask_ps(nan) || !isfinite(amax)) { /* NaN or infinity: the scalar code's arithmetic */
		q8_k_block(x, o);
		return;
	}
	if (amax == 0) {
		memset(o, 0, 292);
		return;
	}
	for (int j = 0; j < QK_K; j++)
		if (fabsf(x[j]) == amax) {
			max = x[j];
			break;
		}
	float iscale = -127.0f / max, d = 1 / iscale;
	if (!isfinite(iscale) || !isfinite(d)) { /* a subnormal largest value: products past the rounding trick */
		q8_k_block(x, o);
		return;
	}
	const __m256 is = _mm256_set1_ps(iscale), magic = _mm256_set1_ps(12582912.0f);
	const __m256i mant = _mm256_set1_epi32(0x007fffff), off = _mm256_set1_epi32(0x00400000);
	const __m256i top = _mm256_set1_epi32(127), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
	int8_t *q = (int8_t *)(o + 4);
	int16_t bs[16];
	for (int j = 0; j < QK_K; j += 32) {
		__m256i v[4];
		for (int k = 0; k < 4; k++) {
			__m256 f = _mm256_add_ps(_mm256_mul_ps(is, _mm256_loadu_ps(x + j + 8 * k)), magic);
			v[k] = _mm256_min_epi32(_mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(f), mant), off), top);
		}
		/* packs interleave the 128-bit lanes: the permute puts the 32 bytes back in order */
		__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
		p = _mm256_permutevar8x32_epi32(p, order);
		_mm256_storeu_si256((__m256i *)(q + j), p);
		/* sums of 16: bytes to pairs, pairs to fours, then two horizontal adds */
		__m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, p), ones16);
		s = _mm256_hadd_epi32(s, s);
		s = _mm256_hadd_epi32(s, s);
		bs[j / 16] = (int16_t)_mm256_extract_epi32(s, 0);
		bs[j / 16 + 1] = (int16_t)_mm256_extract_epi32(s, 4);
	}
	memcpy(o, &d, 4);
	memcpy(o + 260, bs, 32);
}
#endif

void quant_act_quantize(uint32_t act, const float *x, void *out, int n)
{
	uint8_t *o = out;
#if QUANT_X86
	if (act == GGUF_TENSOR_Q8_K && __builtin_cpu_supports("avx2")) {
		for (int b = 0; b < n / QK_K; b++)
			q8_k_block_avx2(x + (size_t)b * QK_K, o + (size_t)b * 292);
		return;
	}
#endif
	if (act == GGUF_TENSOR_Q8_K) {
		for (int b = 0; b < n / QK_K; b++)
			q8_k_block(x + (size_t)b * QK_K, o + (size_t)b * 292);
		return;
	}
	int with_sum = act == GGUF_TENSOR_Q8_1, bb = with_sum ? 36 : 34;
	for (int b = 0; b < n / QK; b++, x += QK, o += bb) {
		float amax = 0;
		for (int j = 0; j < QK; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0;
		int8_t *q = (int8_t *)(o + (with_sum ? 4 : 2));
		int sum = 0;
		for (int j = 0; j < QK; j++) {
			q[j] = (int8_t)nearest_int(x[j] * id);
			sum += q[j];
		}
		put_half(o, d);
		if (with_sum)
			put_half(o + 2, d * (float)sum);
	}
}

/* ---- dot products: portable ---- */

/* One 256-element block of w against one Q8_K block: d*dx*is - dmin*dx*im with the exact
 * integer sums is (scaled values times y) and im (mins times y's sums). */
static float kblock_term(uint32_t type, const uint8_t *w, const uint8_t *xq)
{
	struct blk u;
	unpack(type, w, &u);
	float dx;
	memcpy(&dx, xq, 4);
	const int8_t *y = (const int8_t *)(xq + 4);
	int16_t bs[16];
	memcpy(bs, xq + 260, 32);
	int is = 0, im = 0;
	for (int g = 0; g < QK_K / u.sub; g++) {
		int s = 0;
		for (int e = 0; e < u.sub; e++)
			s += (type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q5_K ? (uint8_t)u.q[g * u.sub + e]
										  : u.q[g * u.sub + e]) *
			     y[g * u.sub + e];
		is += u.sc[g] * s;
		if (u.sub == 32)
			im += u.mn[g] * (bs[2 * g] + bs[2 * g + 1]);
	}
	return u.d * dx * (float)is - u.dmin * dx * (float)im;
}

static float dot_portable(uint32_t type, const uint8_t *w, const uint8_t *xq, int n)
{
	int be = quant_block_elems(type), bb = quant_block_bytes(type);
	struct blk u;
	float sum = 0;
	if (be == QK) {
		int one = quant_act_type(type) == GGUF_TENSOR_Q8_1;
		int xb = one ? 36 : 34;
		for (int b = 0; b < n / QK; b++, w += bb, xq += xb) {
			unpack(type, w, &u);
			const int8_t *y = (const int8_t *)(xq + (one ? 4 : 2));
			int s = 0;
			for (int e = 0; e < QK; e++)
				s += u.q[e] * y[e];
			sum += u.d * half(xq) * (float)s;
			if (one)
				sum += u.dmin * half(xq + 2);
		}
		return sum;
	}
	for (int b = 0; b < n / QK_K; b++, w += bb, xq += 292)
		sum += kblock_term(type, w, xq);
	return sum;
}

/* ---- weights in groups of 8 rows (quant.h) ---- */

/* Offsets in one super-block of a group. Q4_K: d[8] and dmin[8] (fp16), sc[j][i] (sub-block
 * j, row i), the mins as pairs mn[p][i][2] (sub-blocks 2p, 2p+1: the int16 pairs of a madd),
 * then qs[c][u][i][4]: bytes 32c + 4u .. +3 of row i's qs (low nibbles sub-block 2c, high
 * 2c+1). Q6_K: for each half h the low nibbles ql[h][0..1][u][i][4] (bytes 64h + 32k + 4u
 * .. +3 of row i's ql), the high bits qh[h][u][i][4] (bytes 32h + 4u .. +3 of row i's qh),
 * the scales as pairs sc[p][i][2] (sub-blocks 2p, 2p+1), d[8], 16 bytes of padding (a
 * multiple of 32 bytes, so that no 32-byte load crosses a cache line). */
enum { G4_D = 0, G4_DMIN = 16, G4_SC = 32, G4_MN = 96, G4_QS = 160, G4_BYTES = 1184 };
enum { G6_QL = 0, G6_QH = 1024, G6_SC = 1536, G6_D = 1664, G6_BYTES = 1696 }; /* 32-byte loads stay in a line */

int quant_type_groups(uint32_t type)
{
	return type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q6_K;
}

size_t quant_group_bytes(uint32_t type, int n)
{
	if (!quant_type_groups(type))
		return 0;
	return (size_t)(n / QK_K) * (type == GGUF_TENSOR_Q4_K ? G4_BYTES : G6_BYTES);
}

void quant_group_pack(uint32_t type, const void *rows, size_t row_bytes, int n_rows, int n, void *group)
{
	int gb = type == GGUF_TENSOR_Q4_K ? G4_BYTES : G6_BYTES, bb = quant_block_bytes(type);
	uint8_t *o = group;
	memset(o, 0, (size_t)(n / QK_K) * gb);
	for (int b = 0; b < n / QK_K; b++, o += gb)
		for (int i = 0; i < n_rows && i < QUANT_GROUP_ROWS; i++) {
			const uint8_t *w = (const uint8_t *)rows + (size_t)i * row_bytes + (size_t)b * bb;
			if (type == GGUF_TENSOR_Q4_K) {
				memcpy(o + G4_D + 2 * i, w, 2);
				memcpy(o + G4_DMIN + 2 * i, w + 2, 2);
				for (int j = 0; j < 8; j++) {
					int sc, mn;
					scale_min_k4(j, w + 4, &sc, &mn);
					o[G4_SC + 8 * j + i] = (uint8_t)sc;
					o[G4_MN + 16 * (j / 2) + 2 * i + j % 2] = (uint8_t)mn;
				}
				for (int c = 0; c < 4; c++)
					for (int u = 0; u < 8; u++)
						memcpy(o + G4_QS + 256 * c + 32 * u + 4 * i, w + 16 + 32 * c + 4 * u, 4);
			} else {
				memcpy(o + G6_D + 2 * i, w + 208, 2);
				for (int g = 0; g < 16; g++)
					o[G6_SC + 16 * (g / 2) + 2 * i + g % 2] = w[192 + g];
				for (int h = 0; h < 2; h++)
					for (int u = 0; u < 8; u++) {
						for (int k = 0; k < 2; k++)
							memcpy(o + G6_QL + 512 * h + 256 * k + 32 * u + 4 * i,
							       w + 64 * h + 32 * k + 4 * u, 4);
						memcpy(o + G6_QH + 256 * h + 32 * u + 4 * i, w + 128 + 32 * h + 4 * u, 4);
					}
			}
		}
}

void quant_group_row(uint32_t type, const void *group, int i, int n, void *row)
{
	int gb = type == GGUF_TENSOR_Q4_K ? G4_BYTES : G6_BYTES, bb = quant_block_bytes(type);
	const uint8_t *o = group;
	uint8_t *w = row;
	for (int b = 0; b < n / QK_K; b++, o += gb, w += bb) {
		if (type == GGUF_TENSOR_Q4_K) {
			uint8_t *s = w + 4;
			memcpy(w, o + G4_D + 2 * i, 2);
			memcpy(w + 2, o + G4_DMIN + 2 * i, 2);
			memset(s, 0, 12);
			for (int j = 0; j < 8; j++) { /* the inverse of scale_min_k4 */
				int sc = o[G4_SC + 8 * j + i], mn = o[G4_MN + 16 * (j / 2) + 2 * i + j % 2];
				if (j < 4) {
					s[j] |= (uint8_t)sc;
					s[j + 4] |= (uint8_t)mn;
				} else {
					s[j + 4] = (uint8_t)((sc & 0xF) | (mn & 0xF) << 4);
					s[j - 4] |= (uint8_t)((sc >> 4) << 6);
					s[j] |= (uint8_t)((mn >> 4) << 6);
				}
			}
			for (int c = 0; c < 4; c++)
				for (int u = 0; u < 8; u++)
					memcpy(w + 16 + 32 * c + 4 * u, o + G4_QS + 256 * c + 32 * u + 4 * i, 4);
		} else {
			memcpy(w + 208, o + G6_D + 2 * i, 2);
			for (int g = 0; g < 16; g++)
				w[192 + g] = o[G6_SC + 16 * (g / 2) + 2 * i + g % 2];
			for (int h = 0; h < 2; h++)
				for (int u = 0; u < 8; u++) {
					for (int k = 0; k < 2; k++)
						memcpy(w + 64 * h + 32 * k + 4 * u, o + G6_QL + 512 * h + 256 * k + 32 * u + 4 * i,
						       4);
					memcpy(w + 128 + 32 * h + 4 * u, o + G6_QH + 256 * h + 32 * u + 4 * i, 4);
				}
		}
	}
}

/* Portable: each row's blocks back in the plain layout, summed as dot_portable sums them. */
static void group_dot_portable(uint32_t type, const uint8_t *g, const uint8_t *xq, size_t xs, int n_rows, int n,
			       float *out)
{
	int gb = type == GGUF_TENSOR_Q4_K ? G4_BYTES : G6_BYTES;
	uint8_t blk[256];
	for (int r = 0; r < n_rows; r++)
		for (int i = 0; i < QUANT_GROUP_ROWS; i++) {
			float sum = 0;
			for (int b = 0; b < n / QK_K; b++) {
				quant_group_row(type, g + (size_t)b * gb, i, QK_K, blk);
				sum += kblock_term(type, blk, xq + (size_t)r * xs + (size_t)b * 292);
			}
			out[r * QUANT_GROUP_ROWS + i] = sum;
		}
}

/* ---- dot products: AVX2 ---- */

#if QUANT_X86
#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* fp16 to fp32 in one instruction (exact, as kern_f16_to_f32). */
AVX2 static inline float hf(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

AVX2 static inline float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

/* Each of 8 mins twice, as 16 int16: madd with the 16 bsums gives min_j * (bs[2j] + bs[2j+1]). */
AVX2 static inline __m256i mins_twice(const uint8_t mn[8])
{
	int64_t m;
	memcpy(&m, mn, 8);
	__m256i t = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(m));
	return _mm256_or_si256(t, _mm256_slli_epi32(t, 16));
}

/* 16 packed bytes -> 32 nibbles: low nibbles in the low lane, high nibbles in the high lane. */
AVX2 static inline __m256i nibbles_16(const uint8_t *p)
{
	__m128i t = _mm_loadu_si128((const __m128i *)p);
	return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes, 0xFF where the bit is set (bit j -> byte j). */
AVX2 static inline __m256i bits_32(uint32_t bits)
{
	const __m256i pick = _mm256_setr_epi64x(0, 0x0101010101010101ll, 0x0202020202020202ll, 0x0303030303030303ll);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), pick);
	return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Q4_K/Q5_K: chunk c of a super-block (64 values) as the 32 of its first sub-block (low
 * nibbles) and the 32 of its second (high nibbles); with five, bit 2c of hb's byte l is
 * element l's fifth bit in the first sub-block, 2c+1 in the second. */
AVX2 static inline void k45_chunk(int five, const uint8_t *qs, __m256i hb, int c, __m256i *lo, __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), b1 = _mm256_set1_epi8(1);
	__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
	*lo = _mm256_and_si256(q, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
	if (five) {
		*lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), b1), 4));
		*hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), b1), 4));
	}
}

/* Q6_K: half h of a super-block (128 values, ql = 64 bytes of low nibbles, qh = 32 bytes of
 * high bit pairs) as four groups of 32 unsigned 6-bit values, in element order. */
AVX2 static inline void q6_k_half(const uint8_t *ql, const uint8_t *qh, __m256i q[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
	__m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
	__m256i hh = _mm256_loadu_si256((const __m256i *)qh);
	q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hh, m2), 4));
	q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 2), m2), 4));
	q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
			       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 4), m2), 4));
	q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
			       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 6), m2), 4));
}

/* The kernels below take NR activation rows (1..4, a constant after inlining, so the per-row
 * accumulators live in registers): the weight block is unpacked once and applied to every
 * row. Each row's operations are the same whatever NR is, so a row's result never depends on
 * how many rows share the call. xq rows are xs bytes apart; out[r] receives row r's sum. */
#define ROWS_MAX 4
/* the row loops unrolled, so that the per-row accumulators are registers, not an array (the
 * chunk loops stay rolled: unrolled they spill, 74 against 96 GFLOP/s at 32 Q4_K rows) */
#define UNROLL _Pragma("GCC unroll 4")
#define INL __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

INL void dot32_rows(uint32_t type, const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, float *out)
{
	const __m256i ones = _mm256_set1_epi16(1);
	const __m256i iq4 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)iq4nl_values));
	int one = type == GGUF_TENSOR_Q4_1 || type == GGUF_TENSOR_Q5_1;
	int bb = quant_block_bytes(type), xb = one ? 36 : 34, yo = one ? 4 : 2;
	__m256 acc[ROWS_MAX];
	float summ[ROWS_MAX];
	UNROLL
	for (int r = 0; r < nr; r++)
		acc[r] = _mm256_setzero_ps(), summ[r] = 0;
	for (int b = 0; b < n / QK; b++, w += bb, xq += xb) {
		__m256i q;
		uint32_t qh;
		switch (type) {
		case GGUF_TENSOR_Q8_0: q = _mm256_loadu_si256((const __m256i *)(w + 2)); break;
		case GGUF_TENSOR_Q4_0: q = _mm256_sub_epi8(nibbles_16(w + 2), _mm256_set1_epi8(8)); break;
		case GGUF_TENSOR_IQ4_NL: q = _mm256_shuffle_epi8(iq4, nibbles_16(w + 2)); break;
		case GGUF_TENSOR_Q4_1: q = nibbles_16(w + 4); break;
		case GGUF_TENSOR_Q5_0:
			memcpy(&qh, w + 2, 4);
			/* nibble - 16 where the fifth bit is clear: nibble | 0xF0 */
			q = _mm256_or_si256(nibbles_16(w + 6), _mm256_andnot_si256(bits_32(qh), _mm256_set1_epi8((char)0xF0)));
			break;
		default: /* Q5_1 */
			memcpy(&qh, w + 4, 4);
			q = _mm256_or_si256(nibbles_16(w + 8), _mm256_and_si256(bits_32(qh), _mm256_set1_epi8(0x10)));
			break;
		}
		/* signed values: |q| against y with q's sign; unsigned (Q4_1, Q5_1): as they are */
		__m256i qa = one ? q : _mm256_sign_epi8(q, q);
		float dw = hf(w), mw = one ? hf(w + 2) : 0;
		UNROLL
		for (int r = 0; r < nr; r++) {
			const uint8_t *x = xq + (size_t)r * xs;
			__m256i y = _mm256_loadu_si256((const __m256i *)(x + yo));
			__m256i p = _mm256_maddubs_epi16(qa, one ? y : _mm256_sign_epi8(y, q));
			__m256 sf = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
			acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * hf(x)), sf, acc[r]);
			if (one)
				summ[r] += mw * hf(x + 2);
		}
	}
	UNROLL
	for (int r = 0; r < nr; r++)
		out[r] = hsum8(acc[r]) + summ[r];
}

/* Q4_K and Q5_K against Q8_K: 4 chunks of 64 (two sub-blocks of 32 each). */
INL void k45_rows(int five, const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, float *out)
{
	__m256 acc[ROWS_MAX];
	UNROLL
	for (int r = 0; r < nr; r++)
		acc[r] = _mm256_setzero_ps();
	int bb = five ? 176 : 144;
	for (int b = 0; b < n / QK_K; b++, w += bb, xq += 292) {
		uint8_t sc[8], mn[8];
		scales_k4(w + 4, sc, mn);
		__m256i mins = mins_twice(mn);
		const uint8_t *qs = w + 16 + (five ? 32 : 0);
		__m256i hb = five ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
		__m256i si[ROWS_MAX];
		UNROLL
		for (int r = 0; r < nr; r++)
			si[r] = _mm256_setzero_si256();
		for (int c = 0; c < 4; c++) {
			__m256i lo, hi;
			k45_chunk(five, qs, hb, c, &lo, &hi);
			__m256i s0 = _mm256_set1_epi16((short)sc[2 * c]), s1 = _mm256_set1_epi16((short)sc[2 * c + 1]);
			UNROLL
			for (int r = 0; r < nr; r++) {
				const int8_t *y = (const int8_t *)(xq + (size_t)r * xs + 4);
				__m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y + 64 * c)));
				__m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y + 64 * c + 32)));
				si[r] = _mm256_add_epi32(si[r], _mm256_add_epi32(_mm256_madd_epi16(p0, s0), _mm256_madd_epi16(p1, s1)));
			}
		}
		__m256 d = _mm256_set1_ps(hf(w)), dmin = _mm256_set1_ps(hf(w + 2));
		UNROLL
		for (int r = 0; r < nr; r++) {
			const uint8_t *x = xq + (size_t)r * xs;
			__m256 dx = _mm256_broadcast_ss((const float *)x);
			__m256i im = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x + 260)), mins);
			acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(si[r]), acc[r]);
			acc[r] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(im), acc[r]);
		}
	}
	UNROLL
	for (int r = 0; r < nr; r++)
		out[r] = hsum8(acc[r]);
}

/* Q6_K against Q8_K: the unsigned 6-bit values times y, less 32 * y's sums (from bsums). */
INL void q6_k_rows(const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, float *out)
{
	__m256 acc[ROWS_MAX];
	UNROLL
	for (int r = 0; r < nr; r++)
		acc[r] = _mm256_setzero_ps();
	for (int b = 0; b < n / QK_K; b++, w += 210, xq += 292) {
		const int8_t *sc = (const int8_t *)(w + 192);
		/* 32 * sum_g sc[g] * bsums[g]: the values were stored + 32 */
		__m256i sc16 = _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc)), 5);
		__m256i si[ROWS_MAX];
		UNROLL
		for (int r = 0; r < nr; r++)
			si[r] = _mm256_setzero_si256();
		const uint8_t *ql = w, *qh = w + 128;
		for (int h = 0; h < 2; h++, ql += 64, qh += 32) {
			__m256i q[4];
			q6_k_half(ql, qh, q);
			for (int k = 0; k < 4; k++) {
				const int8_t *s8 = sc + 8 * h + 2 * k;
				__m256i s = _mm256_set_m128i(_mm_set1_epi16(s8[1]), _mm_set1_epi16(s8[0]));
				UNROLL
				for (int r = 0; r < nr; r++) {
					const int8_t *y = (const int8_t *)(xq + (size_t)r * xs + 4) + 128 * h + 32 * k;
					__m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)y));
					si[r] = _mm256_add_epi32(si[r], _mm256_madd_epi16(p, s));
				}
			}
		}
		__m256 d = _mm256_set1_ps(hf(w + 208));
		UNROLL
		for (int r = 0; r < nr; r++) {
			const uint8_t *x = xq + (size_t)r * xs;
			__m256i corr = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x + 260)), sc16);
			__m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(si[r], corr));
			acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_broadcast_ss((const float *)x)), f, acc[r]);
		}
	}
	UNROLL
	for (int r = 0; r < nr; r++)
		out[r] = hsum8(acc[r]);
}

INL void iq4_xs_rows(const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, float *out)
{
	const __m256i iq4 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)iq4nl_values));
	__m256 acc[ROWS_MAX];
	UNROLL
	for (int r = 0; r < nr; r++)
		acc[r] = _mm256_setzero_ps();
	for (int b = 0; b < n / QK_K; b++, w += 136, xq += 292) {
		uint16_t sh;
		memcpy(&sh, w + 2, 2);
		__m256i si[ROWS_MAX];
		UNROLL
		for (int r = 0; r < nr; r++)
			si[r] = _mm256_setzero_si256();
		for (int ib = 0; ib < 8; ib++) {
			int ls = (((w[4 + ib / 2] >> 4 * (ib % 2)) & 0xF) | (((sh >> 2 * ib) & 3) << 4)) - 32;
			__m256i q = _mm256_shuffle_epi8(iq4, nibbles_16(w + 8 + 16 * ib));
			__m256i qa = _mm256_sign_epi8(q, q), s = _mm256_set1_epi16((short)ls);
			UNROLL
			for (int r = 0; r < nr; r++) {
				const int8_t *y = (const int8_t *)(xq + (size_t)r * xs + 4) + 32 * ib;
				__m256i p = _mm256_maddubs_epi16(qa, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)y), q));
				si[r] = _mm256_add_epi32(si[r], _mm256_madd_epi16(p, s));
			}
		}
		float d = hf(w);
		UNROLL
		for (int r = 0; r < nr; r++) {
			float dx;
			memcpy(&dx, xq + (size_t)r * xs, 4);
			acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(si[r]), acc[r]);
		}
	}
	UNROLL
	for (int r = 0; r < nr; r++)
		out[r] = hsum8(acc[r]);
}

/* One instance per type and row count, so NR is a constant in each; attr: the ISA it is built for. */
#define ROWS_FN(attr, name, call)                                                                       \
	attr static void name(uint32_t type, const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, \
			      float *out)                                                               \
	{                                                                                               \
		(void)type;                                                                             \
		switch (nr) {                                                                           \
		case 4: call(4); break;                                                                 \
		case 3: call(3); break;                                                                 \
		case 2: call(2); break;                                                                 \
		default: call(1); break;                                                                \
		}                                                                                       \
	}
#define CALL_32(k) dot32_rows(type, w, xq, xs, n, k, out)
#define CALL_Q4K(k) k45_rows(0, w, xq, xs, n, k, out)
#define CALL_Q5K(k) k45_rows(1, w, xq, xs, n, k, out)
#define CALL_Q6K(k) q6_k_rows(w, xq, xs, n, k, out)
#define CALL_IQ4XS(k) iq4_xs_rows(w, xq, xs, n, k, out)
ROWS_FN(AVX2, rows_32, CALL_32)
ROWS_FN(AVX2, rows_q4_k, CALL_Q4K)
ROWS_FN(AVX2, rows_q5_k, CALL_Q5K)
ROWS_FN(AVX2, rows_q6_k, CALL_Q6K)
ROWS_FN(AVX2, rows_iq4_xs, CALL_IQ4XS)

/* Grouped weights (8 rows): a 32-byte vector holds 4 weights of each of the 8 rows; the 4
 * activation bytes that meet them are broadcast, so one maddubs gives 8 rows x 2 pair sums.
 * Pair sums of a sub-block add up in int16 (Q4_K: 8 x 2 x 15 x 128 = 30720; Q6_K: two units,
 * 2 x 2 x 63 x 128 = 32256, both below 32768), then one madd with the rows' scales gives the
 * int32 sum of each row in its own lane. NA activation rows (1..4) share each weight vector. */
AVX2 static inline __m256i bcast4(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/* One sub-block (32 weights a row; hi: the high nibbles) of a Q4_K group into is[]. */
INL void q4_k_group_sub(const uint8_t *qs, int hi, const uint8_t *sc8, const uint8_t *xq, size_t xs, int yo,
			int na, __m256i *is)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	__m256i s16[ROWS_MAX];
	UNROLL
	for (int a = 0; a < na; a++)
		s16[a] = _mm256_setzero_si256();
	_Pragma("GCC unroll 8")
	for (int u = 0; u < 8; u++) {
		__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * u));
		q = _mm256_and_si256(hi ? _mm256_srli_epi16(q, 4) : q, m4);
		UNROLL
		for (int a = 0; a < na; a++)
			s16[a] = _mm256_add_epi16(s16[a], _mm256_maddubs_epi16(q, bcast4(xq + (size_t)a * xs + yo + 4 * u)));
	}
	__m256i sc = mins_twice(sc8);
	UNROLL
	for (int a = 0; a < na; a++)
		is[a] = _mm256_add_epi32(is[a], _mm256_madd_epi16(s16[a], sc));
}

/* The block loop of a Q4_K group, for the AVX2 and the VNNI sub-block kernels. */
#define Q4_K_GROUP_FN(ATTR, NAME, SUB) \
ATTR void NAME(const uint8_t *g, const uint8_t *xq, size_t xs, int n, int na, float *out) \
{ \
	__m256 acc[ROWS_MAX]; \
	UNROLL \
	for (int a = 0; a < na; a++) \
		acc[a] = _mm256_setzero_ps(); \
	for (int b = 0; b < n / QK_K; b++, g += G4_BYTES, xq += 292) { \
		__m256i is[ROWS_MAX]; \
		UNROLL \
		for (int a = 0; a < na; a++) \
			is[a] = _mm256_setzero_si256(); \
		for (int c = 0; c < 4; c++) { \
			SUB(g + G4_QS + 256 * c, 0, g + G4_SC + 16 * c, xq, xs, 4 + 64 * c, na, is); \
			SUB(g + G4_QS + 256 * c, 1, g + G4_SC + 16 * c + 8, xq, xs, 4 + 64 * c + 32, na, is); \
		} \
		__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + G4_D))); \
		__m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + G4_DMIN))); \
		UNROLL \
		for (int a = 0; a < na; a++) { \
			const uint8_t *x = xq + (size_t)a * xs; \
			/* y's sums per sub-block (bs[2j] + bs[2j+1]), pairs of them against the mins */ \
			__m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)(x + 260)), \
						    _mm_loadu_si128((const __m128i *)(x + 276))); \
			__m256i b2 = _mm256_broadcastsi128_si256(bs); \
			const __m128i *mn = (const __m128i *)(g + G4_MN); \
			__m256i im = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(mn)), _mm256_shuffle_epi32(b2, 0x00)); \
			im = _mm256_add_epi32(im, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(mn + 1)), \
								    _mm256_shuffle_epi32(b2, 0x55))); \
			im = _mm256_add_epi32(im, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(mn + 2)), \
								    _mm256_shuffle_epi32(b2, 0xAA))); \
			im = _mm256_add_epi32(im, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(mn + 3)), \
								    _mm256_shuffle_epi32(b2, 0xFF))); \
			__m256 dx = _mm256_broadcast_ss((const float *)x); \
			acc[a] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(is[a]), acc[a]); \
			acc[a] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(im), acc[a]); \
		} \
	} \
	UNROLL \
	for (int a = 0; a < na; a++) \
		_mm256_storeu_ps(out + 8 * a, acc[a]); \
}
Q4_K_GROUP_FN(INL, q4_k_group, q4_k_group_sub)

/* Units u0 .. u0+3 (one sub-block of 16 weights a row) of group k (0..3) of half of a Q6_K
 * group into is[], with sc: each row's scale in both int16 halves of its lane. */
INL void q6_k_group_sub(const uint8_t *ql, const uint8_t *qh, int k, int u0, __m256i sc, const uint8_t *xq,
			size_t xs, int yo, int na, __m256i *is)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
	const uint8_t *src = ql + 256 * (k & 1);
	_Pragma("GCC unroll 4")
	for (int u = u0; u < u0 + 4; u += 2) {
		__m256i q[2];
		for (int v = 0; v < 2; v++) {
			__m256i l = _mm256_loadu_si256((const __m256i *)(src + 32 * (u + v)));
			__m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * (u + v)));
			l = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(l, 4) : l, m4);
			/* bits 2k, 2k+1 of each byte to bits 4, 5 */
			h = _mm256_and_si256(k == 3 ? _mm256_srli_epi16(h, 2) : k == 2 ? h : _mm256_slli_epi16(h, 4 - 2 * k), m2);
			q[v] = _mm256_or_si256(l, h);
		}
		UNROLL
		for (int a = 0; a < na; a++) {
			const uint8_t *y = xq + (size_t)a * xs + yo + 4 * u;
			__m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(q[0], bcast4(y)), _mm256_maddubs_epi16(q[1], bcast4(y + 4)));
			is[a] = _mm256_add_epi32(is[a], _mm256_madd_epi16(p, sc));
		}
	}
}

/* Stops the compiler from keeping loaded vectors across it: without it GCC keeps the shared
 * qh and ql vectors of all four parts of a half in registers, and spills (measured: Q6_K at 4
 * activation rows at half the speed of 1 row). */
#define LOAD_FENCE() __asm__ __volatile__("" ::: "memory")

/* Group k of half h: sub-blocks 8h + 2k and 8h + 2k + 1 (scale pair 4h + k); and the block
 * loop of a Q6_K group, for the AVX2 and the VNNI sub-block kernels. */
#define Q6_K_GROUP_FN(ATTR, NAME, PART, SUB) \
ATTR void PART(const uint8_t *g, int h, int k, const uint8_t *xq, size_t xs, int na, __m256i *is) \
{ \
	/* each row's scale in both int16 halves of its lane: the first or the second of the pair */ \
	const __m256i dup0 = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, \
					      8, 9, 8, 9, 12, 13, 12, 13); \
	const __m256i dup1 = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, \
					      6, 7, 10, 11, 10, 11, 14, 15, 14, 15); \
	__m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(g + G6_SC + 16 * (4 * h + k)))); \
	const uint8_t *ql = g + G6_QL + 512 * h, *qh = g + G6_QH + 256 * h; \
	int yo = 4 + 128 * h + 32 * k; \
	SUB(ql, qh, k, 0, _mm256_shuffle_epi8(sc, dup0), xq, xs, yo, na, is); \
	SUB(ql, qh, k, 4, _mm256_shuffle_epi8(sc, dup1), xq, xs, yo, na, is); \
} \
 \
ATTR void NAME(const uint8_t *g, const uint8_t *xq, size_t xs, int n, int na, float *out) \
{ \
	__m256 acc[ROWS_MAX]; \
	UNROLL \
	for (int a = 0; a < na; a++) \
		acc[a] = _mm256_setzero_ps(); \
	for (int b = 0; b < n / QK_K; b++, g += G6_BYTES, xq += 292) { \
		__m256i is[ROWS_MAX]; \
		UNROLL \
		for (int a = 0; a < na; a++) \
			is[a] = _mm256_setzero_si256(); \
		for (int h = 0; h < 2; h++) { \
			PART(g, h, 0, xq, xs, na, is); \
			LOAD_FENCE(); \
			PART(g, h, 1, xq, xs, na, is); \
			LOAD_FENCE(); \
			PART(g, h, 2, xq, xs, na, is); \
			LOAD_FENCE(); \
			PART(g, h, 3, xq, xs, na, is); \
			LOAD_FENCE(); \
		} \
		__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + G6_D))); \
		UNROLL \
		for (int a = 0; a < na; a++) { \
			const uint8_t *x = xq + (size_t)a * xs; \
			/* the values were stored + 32: less 32 * sum_g sc[g] * bsums[g] */ \
			__m256i corr = _mm256_setzero_si256(); \
			for (int p = 0; p < 8; p++) \
				corr = _mm256_add_epi32(corr, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128( \
											(const __m128i *)(g + G6_SC + 16 * p))), \
									bcast4(x + 260 + 4 * p))); \
			__m256i t = _mm256_sub_epi32(is[a], _mm256_slli_epi32(corr, 5)); \
			acc[a] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_broadcast_ss((const float *)x)), _mm256_cvtepi32_ps(t), \
						 acc[a]); \
		} \
	} \
	UNROLL \
	for (int a = 0; a < na; a++) \
		_mm256_storeu_ps(out + 8 * a, acc[a]); \
}
Q6_K_GROUP_FN(INL, q6_k_group, q6_k_group_part, q6_k_group_sub)

/* name(): call with na (1..4) as a constant, so each activation-row count gets its own unrolled
 * kernel; attr is the target (AVX2 or VNNI). */
#define GROUP_FN(attr, name, call)                                                                           \
	attr static void name(const uint8_t *g, const uint8_t *xq, size_t xs, int n, int na, float *out)     \
	{                                                                                                    \
		switch (na) {                                                                                \
		case 4: call(g, xq, xs, n, 4, out); break;                                                   \
		case 3: call(g, xq, xs, n, 3, out); break;                                                   \
		case 2: call(g, xq, xs, n, 2, out); break;                                                   \
		default: call(g, xq, xs, n, 1, out); break;                                                  \
		}                                                                                            \
	}
GROUP_FN(AVX2, group_q4_k, q4_k_group)
GROUP_FN(AVX2, group_q6_k, q6_k_group)

/* The same with AVX-512 VNNI's 256-bit vpdpbusd (AVX512VL), which runs at full rate on cores
 * that split 512-bit operations: 4 products of a row straight into its int32 lane, so a
 * sub-block's sum needs no int16 steps; then times the rows' scales (vpmulld). The int32
 * sums are the AVX2 kernels' and the float steps the same, so both give the same bits. */
#define INLV __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"), always_inline)) static inline
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

INLV void q4_k_group_sub_vnni(const uint8_t *qs, int hi, const uint8_t *sc8, const uint8_t *xq, size_t xs, int yo,
			      int na, __m256i *is)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	__m256i s32[ROWS_MAX];
	UNROLL
	for (int a = 0; a < na; a++)
		s32[a] = _mm256_setzero_si256();
	_Pragma("GCC unroll 8")
	for (int u = 0; u < 8; u++) {
		__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * u));
		q = _mm256_and_si256(hi ? _mm256_srli_epi16(q, 4) : q, m4);
		UNROLL
		for (int a = 0; a < na; a++)
			s32[a] = _mm256_dpbusd_epi32(s32[a], q, bcast4(xq + (size_t)a * xs + yo + 4 * u));
	}
	int64_t b8;
	memcpy(&b8, sc8, 8);
	__m256i sc = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(b8));
	UNROLL
	for (int a = 0; a < na; a++)
		is[a] = _mm256_add_epi32(is[a], _mm256_mullo_epi32(s32[a], sc));
}

INLV void q6_k_group_sub_vnni(const uint8_t *ql, const uint8_t *qh, int k, int u0, __m256i sc, const uint8_t *xq,
			      size_t xs, int yo, int na, __m256i *is)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
	const uint8_t *src = ql + 256 * (k & 1);
	__m256i s32[ROWS_MAX];
	UNROLL
	for (int a = 0; a < na; a++)
		s32[a] = _mm256_setzero_si256();
	_Pragma("GCC unroll 4")
	for (int u = u0; u < u0 + 4; u++) {
		__m256i l = _mm256_loadu_si256((const __m256i *)(src + 32 * u));
		__m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * u));
		l = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(l, 4) : l, m4);
		h = _mm256_and_si256(k == 3 ? _mm256_srli_epi16(h, 2) : k == 2 ? h : _mm256_slli_epi16(h, 4 - 2 * k), m2);
		__m256i q = _mm256_or_si256(l, h);
		UNROLL
		for (int a = 0; a < na; a++)
			s32[a] = _mm256_dpbusd_epi32(s32[a], q, bcast4(xq + (size_t)a * xs + yo + 4 * u));
	}
	__m256i sc32 = _mm256_srai_epi32(sc, 16); /* the row's scale, sign-extended from the pair */
	UNROLL
	for (int a = 0; a < na; a++)
		is[a] = _mm256_add_epi32(is[a], _mm256_mullo_epi32(s32[a], sc32));
}

Q4_K_GROUP_FN(INLV, q4_k_group_vnni, q4_k_group_sub_vnni)
Q6_K_GROUP_FN(INLV, q6_k_group_vnni, q6_k_group_part_vnni, q6_k_group_sub_vnni)
GROUP_FN(VNNI, group_q4_k_vnni, q4_k_group_vnni)
GROUP_FN(VNNI, group_q6_k_vnni, q6_k_group_vnni)
/* ---- dot products: AVX-512 (BW, VL, VNNI) for the K-quants of the common presets ---- */

/* Q4_K/Q5_K: a 64-element chunk (two sub-blocks) is one 512-bit vector, against 64
 * contiguous activation bytes; the sub-block scales multiply the pair sums inside
 * vpdpwssd. Q6_K: two 32-element groups per vector, four 16-element scales. */
#define INL512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"), always_inline)) static inline
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

INL512 __m512i join256(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

INL512 void k45_rows_512(int five, const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, float *out)
{
	__m512 acc[ROWS_MAX];
	__m256 accm[ROWS_MAX];
	UNROLL
	for (int r = 0; r < nr; r++)
		acc[r] = _mm512_setzero_ps(), accm[r] = _mm256_setzero_ps();
	int bb = five ? 176 : 144;
	for (int b = 0; b < n / QK_K; b++, w += bb, xq += 292) {
		uint8_t sc[8], mn[8];
		scales_k4(w + 4, sc, mn);
		__m256i mins = mins_twice(mn);
		const uint8_t *qs = w + 16 + (five ? 32 : 0);
		__m256i hb = five ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
		__m512i si[ROWS_MAX];
		UNROLL
		for (int r = 0; r < nr; r++)
			si[r] = _mm512_setzero_si512();
		for (int c = 0; c < 4; c++) {
			__m256i lo, hi;
			k45_chunk(five, qs, hb, c, &lo, &hi);
			__m512i qv = join256(lo, hi);
			__m512i sv = join256(_mm256_set1_epi16((short)sc[2 * c]), _mm256_set1_epi16((short)sc[2 * c + 1]));
			UNROLL
			for (int r = 0; r < nr; r++) {
				__m512i y = _mm512_loadu_si512((const void *)(xq + (size_t)r * xs + 4 + 64 * c));
				si[r] = _mm512_dpwssd_epi32(si[r], _mm512_maddubs_epi16(qv, y), sv);
			}
		}
		__m512 d = _mm512_set1_ps(hf(w));
		__m256 dmin = _mm256_set1_ps(hf(w + 2));
		UNROLL
		for (int r = 0; r < nr; r++) {
			const uint8_t *x = xq + (size_t)r * xs;
			__m256i im = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x + 260)), mins);
			acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(*(const float *)x)), _mm512_cvtepi32_ps(si[r]), acc[r]);
			accm[r] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, _mm256_broadcast_ss((const float *)x)), _mm256_cvtepi32_ps(im), accm[r]);
		}
	}
	UNROLL
	for (int r = 0; r < nr; r++)
		out[r] = _mm512_reduce_add_ps(acc[r]) - hsum8(accm[r]);
}

INL512 void q6_k_rows_512(const uint8_t *w, const uint8_t *xq, size_t xs, int n, int nr, float *out)
{
	/* i16 lane l of a 512-bit vector takes scale l / 8 (16 elements = 8 pair sums) */
	const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 0x00010001, 0x00010001, 0x00010001, 0x00010001,
						 0x00020002, 0x00020002, 0x00020002, 0x00020002, 0x00030003,
						 0x00030003, 0x00030003, 0x00030003);
	__m512 acc[ROWS_MAX];
	UNROLL
	for (int r = 0; r < nr; r++)
		acc[r] = _mm512_setzero_ps();
	for (int b = 0; b < n / QK_K; b++, w += 210, xq += 292) {
		const int8_t *sc = (const int8_t *)(w + 192);
		__m256i sc16 = _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc)), 5);
		__m512i si[ROWS_MAX];
		UNROLL
		for (int r = 0; r < nr; r++)
			si[r] = _mm512_setzero_si512();
		const uint8_t *ql = w, *qh = w + 128;
		for (int h = 0; h < 2; h++, ql += 64, qh += 32) {
			__m256i q[4];
			q6_k_half(ql, qh, q);
			__m512i qv[2] = {join256(q[0], q[1]), join256(q[2], q[3])};
			for (int k = 0; k < 2; k++) {
				int32_t s4;
				memcpy(&s4, sc + 8 * h + 4 * k, 4);
				__m512i sv = _mm512_permutexvar_epi16(spread, _mm512_castsi128_si512(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(s4))));
				UNROLL
				for (int r = 0; r < nr; r++) {
					__m512i y = _mm512_loadu_si512((const void *)(xq + (size_t)r * xs + 4 + 128 * h + 64 * k));
					si[r] = _mm512_dpwssd_epi32(si[r], _mm512_maddubs_epi16(qv[k], y), sv);
				}
			}
		}
		__m512 d = _mm512_set1_ps(hf(w + 208));
		UNROLL
		for (int r = 0; r < nr; r++) {
			const uint8_t *x = xq + (size_t)r * xs;
			__m256i corr = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x + 260)), sc16);
			__m512i t = _mm512_sub_epi32(si[r], _mm512_inserti64x4(_mm512_setzero_si512(), corr, 0));
			acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(*(const float *)x)), _mm512_cvtepi32_ps(t), acc[r]);
		}
	}
	UNROLL
	for (int r = 0; r < nr; r++)
		out[r] = _mm512_reduce_add_ps(acc[r]);
}

#define CALL_Q4K512(k) k45_rows_512(0, w, xq, xs, n, k, out)
#define CALL_Q5K512(k) k45_rows_512(1, w, xq, xs, n, k, out)
#define CALL_Q6K512(k) q6_k_rows_512(w, xq, xs, n, k, out)
ROWS_FN(AVX512, rows_q4_k_512, CALL_Q4K512)
ROWS_FN(AVX512, rows_q5_k_512, CALL_Q5K512)
ROWS_FN(AVX512, rows_q6_k_512, CALL_Q6K512)
#endif


void quant_rows_dot(uint32_t type, const void *w, const void *xq, size_t xq_row_bytes, int n_rows, int n,
		    float *out, int isa)
{
	for (int r0 = 0; r0 < n_rows; r0 += ROWS_STEP) {
		int nr = n_rows - r0 < ROWS_STEP ? n_rows - r0 : ROWS_STEP;
		const uint8_t *x = (const uint8_t *)xq + (size_t)r0 * xq_row_bytes;
#if QUANT_X86
		if (isa >= QUANT_ISA_AVX512 && (type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q5_K || type == GGUF_TENSOR_Q6_K)) {
			if (type == GGUF_TENSOR_Q4_K)
				rows_q4_k_512(type, w, x, xq_row_bytes, n, nr, out + r0);
			else if (type == GGUF_TENSOR_Q5_K)
				rows_q5_k_512(type, w, x, xq_row_bytes, n, nr, out + r0);
			else
				rows_q6_k_512(type, w, x, xq_row_bytes, n, nr, out + r0);
			continue;
		}
		if (isa >= QUANT_ISA_AVX2) {
			switch (type) {
			case GGUF_TENSOR_Q4_K: rows_q4_k(type, w, x, xq_row_bytes, n, nr, out + r0); break;
			case GGUF_TENSOR_Q5_K: rows_q5_k(type, w, x, xq_row_bytes, n, nr, out + r0); break;
			case GGUF_TENSOR_Q6_K: rows_q6_k(type, w, x, xq_row_bytes, n, nr, out + r0); break;
			case GGUF_TENSOR_IQ4_XS: rows_iq4_xs(type, w, x, xq_row_bytes, n, nr, out + r0); break;
			default: rows_32(type, w, x, xq_row_bytes, n, nr, out + r0); break;
			}
			continue;
		}
#endif
		for (int r = 0; r < nr; r++)
			out[r0 + r] = dot_portable(type, w, x + (size_t)r * xq_row_bytes, n);
	}
}

int quant_isa_best(void)
{
#if QUANT_X86
	if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512vnni"))
		return QUANT_ISA_AVX512;
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? QUANT_ISA_AVX2 : QUANT_ISA_PORTABLE;
#else
	return QUANT_ISA_PORTABLE;
#endif
}

float quant_row_dot(uint32_t type, const void *w, const void *xq, int n, int isa)
{
	float s;
	quant_rows_dot(type, w, xq, 0, 1, n, &s, isa);
	return s;
}

void quant_group_dot(uint32_t type, const void *group, const void *xq, size_t xq_row_bytes, int n_rows, int n,
		     float *out, int isa)
{
	const uint8_t *g = group, *x = xq;
#if QUANT_X86
	if (isa >= QUANT_ISA_AVX2) {
		for (int r0 = 0; r0 < n_rows; r0 += ROWS_STEP) {
			int nr = n_rows - r0 < ROWS_STEP ? n_rows - r0 : ROWS_STEP;
			const uint8_t *xr = x + (size_t)r0 * xq_row_bytes;
			float *o = out + r0 * QUANT_GROUP_ROWS;
			if (isa >= QUANT_ISA_AVX512)
				(type == GGUF_TENSOR_Q4_K ? group_q4_k_vnni : group_q6_k_vnni)(g, xr, xq_row_bytes, n, nr, o);
			else
				(type == GGUF_TENSOR_Q4_K ? group_q4_k : group_q6_k)(g, xr, xq_row_bytes, n, nr, o);
		}
		return;
	}
#else
	(void)isa;
#endif
	group_dot_portable(type, g, x, xq_row_bytes, n_rows, n, out);
}
