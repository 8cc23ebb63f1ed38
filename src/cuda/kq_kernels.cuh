/* kq_kernels — products of the kq_upload.cuh types in the warp-per-output kernel (mm_small),
 * their activation quantisers, and their decoding for the embedding (included by cuda_model.cu
 * after dot_q8).
 *
 * Numerics are the CPU engine's (quant.c), as for Q8_0: the input rows are quantised on the
 * device with quant_act_quantize's arithmetic (Q8_0 for Q4_0, Q5_0, IQ4_NL; Q8_1 for Q4_1, Q5_1;
 * Q8_K for Q4_K, Q5_K, Q6_K, IQ4_XS), a block's integer sum is exact (__dp4a), and its float term is
 * dot_portable's, each operation rounded alone (__fmul_rn etc., never fused):
 *  - 32-element blocks: sum += d_w * d_x * s; Q4_1/Q5_1 then sum += m_w * s_x.
 *  - 256-element blocks: is = sum over sub-blocks g of sc_g * (integer dot of g), im = sum of
 *    mn_g * (the Q8_K bsums of g); sum += d_w * d_x * is - dmin_w * d_x * im (Q6_K, IQ4_XS:
 *    dmin 0).
 * Only the order of the fp32 sum over a row's blocks differs from the CPU.
 * Work split: a lane takes whole 32-element blocks (as dot_q8); for the 256-element types a
 * lane takes one 32-element part of a super-block (8 lanes a super-block), its integer terms
 * are added over the 8 lanes with shuffles (exact), and the first of them adds the float term.
 * Decoding (kq_load8, the embedding) is quant_row_dequantize's arithmetic, so the same floats. */

/* ---- activations ---- */

/* quant.c's nearest_int on the product v; a NaN product (0 * an infinite 1/amax) gives 0, as
 * the x86 CPU's default NaN does there. */
__device__ __forceinline__ int kq_nearest(float v)
{
	if (v != v)
		return 0;
	return (__float_as_int(__fadd_rn(v, 12582912.0f)) & 0x007fffff) - 0x00400000;
}

/* Rows of x as Q8_1 activations: act_q8_kernel's quants and scales (Q8_1's are Q8_0's), and
 * s1 = fp16(d * sum of the block's quants) widened, d = amax / 127 unrounded (quant.c).
 * Grid: (blocks of 8 blocks of 32, rows). */
__global__ void act_q81_kernel(const float *x, int xs, int n_in, int8_t *xq, float *xd, float *xs1)
{
	pdl_enter();
	const int r = blockIdx.y, lane = threadIdx.x & 31, b = blockIdx.x * 8 + (threadIdx.x >> 5);
	if (b * 32 >= n_in)
		return;
	float v = x[(size_t)r * xs + (size_t)b * 32 + lane], amax = fabsf(v);
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
	float id = amax != 0.f ? __fdiv_rn(127.0f, amax) : 0.f;
	int q = (int)(int8_t)kq_nearest(__fmul_rn(v, id)), sum = q;
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		sum += __shfl_xor_sync(0xffffffffu, sum, off);
	xq[(size_t)r * n_in + (size_t)b * 32 + lane] = (int8_t)q;
	if (lane == 0) {
		float d = __fdiv_rn(amax, 127.0f);
		xd[(size_t)r * (n_in / 32) + b] = __half2float(__float2half_rn(d));
		xs1[(size_t)r * (n_in / 32) + b] = __half2float(__float2half_rn(__fmul_rn(d, (float)sum)));
	}
}

/* Rows of x as Q8_K activations (quant.c, after ggml's quantize_row_q8_K_ref): per 256, max =
 * the first element of largest magnitude, with its sign; iscale = -127 / max; q =
 * min(nearest_int(iscale * x), 127); d = 1 / iscale; bsums = the sums of each 16 quants; a
 * block whose max is 0 all zero. kq [N][n_in], kd [N][n_in / 256], kbs [N][n_in / 16]. A warp
 * a block, 8 consecutive elements a lane. Grid: (blocks of 8 super-blocks, rows). */
__global__ void act_q8k_kernel(const float *x, int xs, int n_in, int8_t *kq, float *kd, int16_t *kbs)
{
	pdl_enter();
	const int r = blockIdx.y, lane = threadIdx.x & 31, sb = blockIdx.x * 8 + (threadIdx.x >> 5);
	if (sb * 256 >= n_in)
		return;
	const float *xr = x + (size_t)r * xs + (size_t)sb * 256 + 8 * lane;
	float v[8], amax = 0.f, mx = 0.f;
	int at = 1 << 30;
#pragma unroll
	for (int k = 0; k < 8; k++) {
		v[k] = xr[k];
		if (fabsf(v[k]) > amax)
			amax = fabsf(v[k]), mx = v[k], at = 8 * lane + k;
	}
#pragma unroll
	for (int off = 16; off > 0; off >>= 1) {
		float oa = __shfl_xor_sync(0xffffffffu, amax, off), om = __shfl_xor_sync(0xffffffffu, mx, off);
		int oi = __shfl_xor_sync(0xffffffffu, at, off);
		if (oa > amax || (oa == amax && oi < at))
			amax = oa, mx = om, at = oi;
	}
	uint32_t w[2] = { 0, 0 };
	int s = 0;
	float iscale = mx != 0.f ? __fdiv_rn(-127.0f, mx) : 0.f;
	if (mx != 0.f) {
#pragma unroll
		for (int k = 0; k < 8; k++) {
			int q = kq_nearest(__fmul_rn(iscale, v[k]));
			q = q < 127 ? q : 127;
			s += (int8_t)q;
			w[k / 4] |= (uint32_t)(q & 0xff) << (8 * (k % 4));
		}
	}
	*reinterpret_cast<uint2 *>(kq + (size_t)r * n_in + (size_t)sb * 256 + 8 * lane) = make_uint2(w[0], w[1]);
	s += __shfl_xor_sync(0xffffffffu, s, 1);
	if (!(lane & 1))
		kbs[(size_t)r * (n_in / 16) + (size_t)sb * 16 + lane / 2] = (int16_t)s;
	if (lane == 0)
		kd[(size_t)r * (n_in / 256) + sb] = mx != 0.f ? __fdiv_rn(1.0f, iscale) : 0.f;
}

/* ---- 32-element blocks ---- */

/* 4 bits (of x's low 4) spread to bit 0 of each of 4 bytes. */
__device__ __forceinline__ uint32_t kq_spread4(uint32_t x)
{
	return ((x & 0xfu) * 0x00204081u) & 0x01010101u;
}

/* IQ4_NL's 16 levels for the 4 nibbles (bytes 0..15) of x, as signed bytes. */
__device__ __forceinline__ uint32_t kq_iq4(uint32_t x)
{
	const uint32_t t0 = 0xBFAD9881u, t1 = 0xF6EADDCFu, t2 = 0x26190D01u, t3 = 0x71594535u; /* kvalues_iq4nl */
	uint32_t y = x & 0x07070707u, z = y | (y >> 4);
	uint32_t sel = (z & 0xffu) | ((z >> 8) & 0xff00u);
	uint32_t lo = __byte_perm(t0, t1, sel), hi = __byte_perm(t2, t3, sel);
	uint32_t mask = ((x >> 3) & 0x01010101u) * 0xffu;
	return (hi & mask) | (lo & ~mask);
}

/* One 32-element weight block as 32 int8 values in element order (8 words), its scale and
 * (Q4_1, Q5_1) its min. */
struct kq32 {
	int4 lo, hi;
	float d, m;
};

__device__ __forceinline__ kq32 kq32_load(const struct dmat &w, int o, int b)
{
	const size_t blk = (size_t)o * (size_t)(w.n_in / 32) + (size_t)b;
	int4 n = __ldg(reinterpret_cast<const int4 *>((const uint8_t *)w.w + blk * 16));
	uint32_t v[4] = { (uint32_t)n.x, (uint32_t)n.y, (uint32_t)n.z, (uint32_t)n.w }, lo[4], hi[4];
	const bool two = w.type == GGUF_TENSOR_Q4_1 || w.type == GGUF_TENSOR_Q5_1;
	uint32_t h = w.type == GGUF_TENSOR_Q5_0 || w.type == GGUF_TENSOR_Q5_1 ? __ldg(w.qh + blk) : 0;
#pragma unroll
	for (int k = 0; k < 4; k++) {
		lo[k] = v[k] & 0x0f0f0f0fu; /* elements 4k .. 4k + 3 */
		hi[k] = (v[k] >> 4) & 0x0f0f0f0fu; /* elements 16 + 4k .. */
		switch (w.type) {
		case GGUF_TENSOR_Q4_0:
			lo[k] = __vsub4(lo[k], 0x08080808u), hi[k] = __vsub4(hi[k], 0x08080808u);
			break;
		case GGUF_TENSOR_Q5_0:
			lo[k] = __vsub4(lo[k] | kq_spread4(h >> (4 * k)) << 4, 0x10101010u);
			hi[k] = __vsub4(hi[k] | kq_spread4(h >> (16 + 4 * k)) << 4, 0x10101010u);
			break;
		case GGUF_TENSOR_Q5_1:
			lo[k] |= kq_spread4(h >> (4 * k)) << 4;
			hi[k] |= kq_spread4(h >> (16 + 4 * k)) << 4;
			break;
		case GGUF_TENSOR_IQ4_NL:
			lo[k] = kq_iq4(lo[k]), hi[k] = kq_iq4(hi[k]);
			break;
		default: /* Q4_1: unsigned nibbles */
			break;
		}
	}
	kq32 c;
	c.lo = make_int4((int)lo[0], (int)lo[1], (int)lo[2], (int)lo[3]);
	c.hi = make_int4((int)hi[0], (int)hi[1], (int)hi[2], (int)hi[3]);
	c.d = __half2float(w.d[two ? 2 * blk : blk]);
	c.m = two ? __half2float(w.d[2 * blk + 1]) : 0.f;
	return c;
}

/* acc[r] += the block against block b of activation row r0 + r (Q8_0 or, with m, Q8_1). */
template <int R>
__device__ __forceinline__ void kq32_rows(const kq32 &c, bool two, const struct mm_args &a, int r0, int b, float *acc)
{
	const int nb = a.nq / 32;
#pragma unroll
	for (int r = 0; r < R; r++) {
		if (r0 + r < a.N) {
			const int4 *xp = reinterpret_cast<const int4 *>(a.xq + (size_t)(r0 + r) * a.nq + (size_t)b * 32);
			int4 xl = __ldg(xp), xh = __ldg(xp + 1);
			float dx = __ldg(a.xd + (size_t)(r0 + r) * nb + b);
			acc[r] = __fadd_rn(acc[r], __fmul_rn(__fmul_rn(c.d, dx), (float)q8_idot(c.lo, c.hi, xl, xh)));
			if (two)
				acc[r] = __fadd_rn(acc[r], __fmul_rn(c.m, __ldg(a.xs1 + (size_t)(r0 + r) * nb + b)));
		}
	}
}

/* A lane's part of output o: blocks b, b + bstep, ..., U loaded before any is used. */
template <int R, int U>
__device__ __forceinline__ void dot_kq32(const struct dmat &w, int o, const struct mm_args &a, int r0, int b, int bstep,
					 float *acc)
{
	const int nb = w.n_in / 32;
	const bool two = w.type == GGUF_TENSOR_Q4_1 || w.type == GGUF_TENSOR_Q5_1;
	for (; b + (U - 1) * bstep < nb; b += U * bstep) {
		kq32 c[U];
#pragma unroll
		for (int u = 0; u < U; u++)
			c[u] = kq32_load(w, o, b + u * bstep);
#pragma unroll
		for (int u = 0; u < U; u++)
			kq32_rows<R>(c[u], two, a, r0, b + u * bstep, acc);
	}
	for (; b < nb; b += bstep)
		kq32_rows<R>(kq32_load(w, o, b), two, a, r0, b, acc);
}

/* ---- 256-element blocks ---- */

/* The 8 six-bit scales and mins of a Q4_K/Q5_K block's 12 scale bytes (3 words, scale_min_k4),
 * a byte each: sm[0], sm[1] the scales of parts 0-3 and 4-7, sm[2], sm[3] the mins. */
__device__ __forceinline__ void kq_scales_mins(const uint32_t *s, uint32_t *sm)
{
	sm[0] = s[0] & 0x3f3f3f3fu;
	sm[1] = (s[2] & 0x0f0f0f0fu) | (((s[0] >> 6) & 0x03030303u) << 4);
	sm[2] = s[1] & 0x3f3f3f3fu;
	sm[3] = ((s[2] >> 4) & 0x0f0f0f0fu) | (((s[1] >> 6) & 0x03030303u) << 4);
}

/* Byte j (0-7) of two packed words. */
__device__ __forceinline__ int kq_byte(const uint32_t *w, int j)
{
	return (int)((w[j / 4] >> (8 * (j % 4))) & 0xff);
}

/* 4 values (-32..31) of a Q6_K group from its low-bit word ql and high-bit word qh: the nibble
 * qt >> 1 of ql, bits 2 qt of qh. */
__device__ __forceinline__ uint32_t kq6_value4(uint32_t ql, uint32_t qh, int qt)
{
	return __vsub4(((ql >> (4 * (qt >> 1))) & 0x0f0f0f0fu) | (((qh >> (2 * qt)) & 0x03030303u) << 4), 0x20202020u);
}

/* 4 values of part j of a Q4_K/Q5_K block from a word q of its 32-byte chunk j / 2 (nibble j % 2)
 * and, Q5_K, the word h of the high bits at the same offset (bit j). */
__device__ __forceinline__ uint32_t kq45_value4(uint32_t q, uint32_t h, bool five, int j)
{
	uint32_t v = (q >> (4 * (j & 1))) & 0x0f0f0f0fu;
	return five ? v | ((h >> j) & 0x01010101u) << 4 : v;
}

/* The same for 8 values (two words). */
__device__ __forceinline__ uint2 kq45_value8(uint2 q, uint2 h, bool five, int j)
{
	return make_uint2(kq45_value4(q.x, h.x, five, j), kq45_value4(q.y, h.y, five, j));
}

/* Part j (elements 32 j .. 32 j + 31) of a super-block: 32 int8 values in element order,
 * Q4_K/Q5_K: its 6-bit scale and min; Q6_K: the scales of its two 16-element groups (sc, mn);
 * IQ4_XS: its signed 6-bit scale (mn 0); the super-block's d and dmin (Q6_K, IQ4_XS: 0). */
struct kq256 {
	int4 lo, hi;
	int sc, mn;
	float d, dmin;
};

__device__ __forceinline__ int4 kq_int4(const uint8_t *p)
{
	return __ldg(reinterpret_cast<const int4 *>(p));
}

__device__ __forceinline__ kq256 kq256_load(const struct dmat &w, int o, int sb, int j)
{
	const size_t blk = (size_t)o * (size_t)(w.n_in / 256) + (size_t)sb;
	kq256 c;
	uint32_t v[8];
	if (w.type == GGUF_TENSOR_Q6_K) {
		const uint8_t *p = (const uint8_t *)w.w + blk * 208;
		const int h = j / 4, qt = j % 4;
		int4 l0 = kq_int4(p + 64 * h + 32 * (qt & 1)), l1 = kq_int4(p + 64 * h + 32 * (qt & 1) + 16);
		int4 h0 = kq_int4(p + 128 + 32 * h), h1 = kq_int4(p + 128 + 32 * h + 16);
		uint32_t ql[8] = { (uint32_t)l0.x, (uint32_t)l0.y, (uint32_t)l0.z, (uint32_t)l0.w,
				   (uint32_t)l1.x, (uint32_t)l1.y, (uint32_t)l1.z, (uint32_t)l1.w };
		uint32_t qh[8] = { (uint32_t)h0.x, (uint32_t)h0.y, (uint32_t)h0.z, (uint32_t)h0.w,
				   (uint32_t)h1.x, (uint32_t)h1.y, (uint32_t)h1.z, (uint32_t)h1.w };
#pragma unroll
		for (int k = 0; k < 8; k++)
			v[k] = kq6_value4(ql[k], qh[k], qt);
		uint32_t s2 = __ldg(reinterpret_cast<const unsigned short *>(p + 192 + 2 * j));
		c.sc = (int)(int8_t)(s2 & 0xff);
		c.mn = (int)(int8_t)(s2 >> 8);
		c.d = __half2float(w.d[blk]);
		c.dmin = 0.f;
	} else if (w.type == GGUF_TENSOR_IQ4_XS) {
		int4 n = kq_int4((const uint8_t *)w.w + blk * 128 + 16 * j);
		uint32_t q[4] = { (uint32_t)n.x, (uint32_t)n.y, (uint32_t)n.z, (uint32_t)n.w };
#pragma unroll
		for (int k = 0; k < 4; k++) {
			v[k] = kq_iq4(q[k] & 0x0f0f0f0fu);
			v[4 + k] = kq_iq4((q[k] >> 4) & 0x0f0f0f0fu);
		}
		uint32_t sh = __ldg(w.qh + 2 * blk), sl = __ldg(w.qh + 2 * blk + 1);
		c.sc = (int)(((sl >> (4 * j)) & 0xf) | (((sh >> (2 * j)) & 3) << 4)) - 32;
		c.mn = 0;
		c.d = __half2float(w.d[blk]);
		c.dmin = 0.f;
	} else {
		const bool five = w.type == GGUF_TENSOR_Q5_K;
		const uint8_t *p = (const uint8_t *)w.w + blk * (five ? 176 : 144);
		const uint8_t *qs = p + (five ? 48 : 16) + 32 * (j / 2);
		int4 q0 = kq_int4(qs), q1 = kq_int4(qs + 16);
		uint32_t q[8] = { (uint32_t)q0.x, (uint32_t)q0.y, (uint32_t)q0.z, (uint32_t)q0.w,
				  (uint32_t)q1.x, (uint32_t)q1.y, (uint32_t)q1.z, (uint32_t)q1.w };
		int4 b0 = five ? kq_int4(p + 16) : int4{}, b1 = five ? kq_int4(p + 32) : int4{}; /* Q5_K's high bits */
		uint32_t hb[8] = { (uint32_t)b0.x, (uint32_t)b0.y, (uint32_t)b0.z, (uint32_t)b0.w,
				   (uint32_t)b1.x, (uint32_t)b1.y, (uint32_t)b1.z, (uint32_t)b1.w };
#pragma unroll
		for (int k = 0; k < 8; k++)
			v[k] = kq45_value4(q[k], hb[k], five, j);
		/* quant.c's scale_min_k4 on the 12 scale bytes at 4 */
		const uint32_t *sw = reinterpret_cast<const uint32_t *>(p + 4);
		uint32_t s[3] = { __ldg(sw), __ldg(sw + 1), __ldg(sw + 2) }, sm[4];
		kq_scales_mins(s, sm);
		c.sc = kq_byte(sm, j);
		c.mn = kq_byte(sm + 2, j);
		uint32_t dd = __ldg(reinterpret_cast<const uint32_t *>(p));
		c.d = __half2float(__ushort_as_half((unsigned short)(dd & 0xffff)));
		c.dmin = __half2float(__ushort_as_half((unsigned short)(dd >> 16)));
	}
	c.lo = make_int4((int)v[0], (int)v[1], (int)v[2], (int)v[3]);
	c.hi = make_int4((int)v[4], (int)v[5], (int)v[6], (int)v[7]);
	return c;
}

/* acc[r] += super-block sb against activation row r0 + r, by the 8 lanes of an aligned group
 * (part j each; ok: the group's super-block exists, uniform in the group; mins: Q4_K/Q5_K, the
 * types with a min term). Every lane of the warp calls this (the shuffles). */
template <int R>
__device__ __forceinline__ void kq256_rows(const kq256 &c, bool six, bool mins, bool ok, const struct mm_args &a,
					   int r0, int sb, int j, float *acc)
{
	const int nsb = a.nq / 256;
#pragma unroll
	for (int r = 0; r < R; r++) {
		if (r0 + r < a.N) { /* uniform over the warp */
			int is = 0, im = 0;
			float dx = 0.f;
			if (ok) {
				const size_t row = (size_t)(r0 + r);
				const int4 *xp = reinterpret_cast<const int4 *>(a.kq + row * a.nq + (size_t)sb * 256 + 32 * j);
				int4 xl = __ldg(xp), xh = __ldg(xp + 1);
				if (six) {
					int s0 = __dp4a(c.lo.x, xl.x, 0);
					s0 = __dp4a(c.lo.y, xl.y, s0);
					s0 = __dp4a(c.lo.z, xl.z, s0);
					s0 = __dp4a(c.lo.w, xl.w, s0);
					int s1 = __dp4a(c.hi.x, xh.x, 0);
					s1 = __dp4a(c.hi.y, xh.y, s1);
					s1 = __dp4a(c.hi.z, xh.z, s1);
					s1 = __dp4a(c.hi.w, xh.w, s1);
					is = c.sc * s0 + c.mn * s1;
				} else {
					is = c.sc * q8_idot(c.lo, c.hi, xl, xh);
				}
				if (mins) {
					uint32_t bs = __ldg(reinterpret_cast<const unsigned int *>(a.kbs + row * (size_t)(a.nq / 16) +
												   (size_t)sb * 16 + 2 * j));
					im = c.mn * ((int)(int16_t)(bs & 0xffff) + (int)(int16_t)(bs >> 16));
				}
				if (j == 0)
					dx = __ldg(a.kd + row * (size_t)nsb + sb);
			}
#pragma unroll
			for (int off = 1; off < 8; off <<= 1) {
				is += __shfl_xor_sync(0xffffffffu, is, off);
				if (mins)
					im += __shfl_xor_sync(0xffffffffu, im, off);
			}
			if (ok && j == 0)
				acc[r] = __fadd_rn(acc[r], __fsub_rn(__fmul_rn(__fmul_rn(c.d, dx), (float)is),
								     __fmul_rn(__fmul_rn(c.dmin, dx), (float)im)));
		}
	}
}

/* Lane L of nL (the lanes of the output's kw warps, L = 32 q + lane) takes part L % 8 of
 * super-blocks L / 8, L / 8 + nL / 8, ...; the loop is uniform over the warp (its first
 * super-block decides), U super-blocks' parts loaded before any is used. */
template <int R, int U>
__device__ __forceinline__ void dot_kq256(const struct dmat &w, int o, const struct mm_args &a, int r0, int L, int nL,
					  float *acc)
{
	const int nsb = w.n_in / 256, step = nL / 8, j = L & 7, mine = (L & 31) / 8;
	const bool six = w.type == GGUF_TENSOR_Q6_K, mins = w.type == GGUF_TENSOR_Q4_K || w.type == GGUF_TENSOR_Q5_K;
	int base = (L & ~31) / 8;
	for (; base + (U - 1) * step < nsb; base += U * step) {
		kq256 c[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			int sb = base + u * step + mine;
			c[u] = kq256{};
			if (sb < nsb)
				c[u] = kq256_load(w, o, sb, j);
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			int sb = base + u * step + mine;
			kq256_rows<R>(c[u], six, mins, sb < nsb, a, r0, sb, j, acc);
		}
	}
	for (; base < nsb; base += step) {
		int sb = base + mine;
		kq256 c = {};
		if (sb < nsb)
			c = kq256_load(w, o, sb, j);
		kq256_rows<R>(c, six, mins, sb < nsb, a, r0, sb, j, acc);
	}
}

/* Whether dot_rows takes the kq kernels for type t. */
__host__ __device__ static inline bool kq_is(int t)
{
	return t == GGUF_TENSOR_Q4_0 || t == GGUF_TENSOR_Q4_1 || t == GGUF_TENSOR_Q5_0 || t == GGUF_TENSOR_Q5_1 ||
	       t == GGUF_TENSOR_IQ4_NL || t == GGUF_TENSOR_Q4_K || t == GGUF_TENSOR_Q5_K || t == GGUF_TENSOR_Q6_K ||
	       t == GGUF_TENSOR_IQ4_XS;
}

/* dot_rows for a kq type: L, nL as dot_kq256 (a 32-element type takes blocks L, L + nL, ...). */
template <int R, int U>
__device__ __forceinline__ void dot_kq(const struct dmat &w, int o, const struct mm_args &a, int r0, int L, int nL,
				       float *acc)
{
	if (w.type == GGUF_TENSOR_Q4_K || w.type == GGUF_TENSOR_Q5_K || w.type == GGUF_TENSOR_Q6_K ||
	    w.type == GGUF_TENSOR_IQ4_XS)
		dot_kq256<R, U>(w, o, a, r0, L, nL, acc);
	else
		dot_kq32<R, U>(w, o, a, r0, L, nL, acc);
}

/* ---- decoding (the embedding) ---- */

/* Element e of row o as quant_row_dequantize gives it. */
__device__ __forceinline__ float kq_value(const struct dmat &w, int o, int e)
{
	const uint8_t *base = (const uint8_t *)w.w;
	if (w.type == GGUF_TENSOR_IQ4_XS) { /* dl = d * ls, y = dl * level (quant_row_dequantize) */
		const size_t blk = (size_t)o * (size_t)(w.n_in / 256) + (size_t)(e / 256);
		const int k = e % 256, j = k / 32, l = k % 32;
		int nib = (base[blk * 128 + 16 * j + l % 16] >> (l < 16 ? 0 : 4)) & 15;
		const uint32_t t[4] = { 0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u };
		int q = (int8_t)((t[nib / 4] >> (8 * (nib % 4))) & 0xff);
		uint32_t sh = w.qh[2 * blk], sl = w.qh[2 * blk + 1];
		int ls = (int)(((sl >> (4 * j)) & 0xf) | (((sh >> (2 * j)) & 3) << 4)) - 32;
		return __fmul_rn(__fmul_rn(__half2float(w.d[blk]), (float)ls), (float)q);
	}
	if (w.type == GGUF_TENSOR_Q4_K || w.type == GGUF_TENSOR_Q5_K || w.type == GGUF_TENSOR_Q6_K) {
		const size_t blk = (size_t)o * (size_t)(w.n_in / 256) + (size_t)(e / 256);
		const int k = e % 256;
		if (w.type == GGUF_TENSOR_Q6_K) {
			const uint8_t *p = base + blk * 208;
			int h = k / 128, qt = (k % 128) / 32, l = k % 32;
			int ql = (p[64 * h + 32 * (qt & 1) + l] >> (4 * (qt >> 1))) & 15;
			int qh = (p[128 + 32 * h + l] >> (2 * qt)) & 3;
			int sc = (int8_t)p[192 + k / 16];
			return __fmul_rn(__fmul_rn(__half2float(w.d[blk]), (float)sc), (float)((ql | qh << 4) - 32));
		}
		const bool five = w.type == GGUF_TENSOR_Q5_K;
		const uint8_t *p = base + blk * (five ? 176 : 144), *s = p + 4;
		int j = k / 32, l = k % 32;
		int q = (p[(five ? 48 : 16) + 32 * (j / 2) + l] >> (4 * (j & 1))) & 15;
		if (five)
			q |= ((p[16 + l] >> j) & 1) << 4;
		int sc, mn;
		if (j < 4)
			sc = s[j] & 63, mn = s[j + 4] & 63;
		else
			sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4), mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
		float d = __half2float(__ushort_as_half((unsigned short)(p[0] | p[1] << 8)));
		float dmin = __half2float(__ushort_as_half((unsigned short)(p[2] | p[3] << 8)));
		return __fsub_rn(__fmul_rn(__fmul_rn(d, (float)sc), (float)q), __fmul_rn(dmin, (float)mn));
	}
	const size_t blk = (size_t)o * (size_t)(w.n_in / 32) + (size_t)(e / 32);
	const int l = e % 32;
	int q = (base[blk * 16 + l % 16] >> (l < 16 ? 0 : 4)) & 15;
	const bool two = w.type == GGUF_TENSOR_Q4_1 || w.type == GGUF_TENSOR_Q5_1;
	if (w.type == GGUF_TENSOR_Q5_0 || w.type == GGUF_TENSOR_Q5_1)
		q |= (int)((w.qh[blk] >> l) & 1) << 4;
	switch (w.type) {
	case GGUF_TENSOR_Q4_0: q -= 8; break;
	case GGUF_TENSOR_Q5_0: q -= 16; break;
	case GGUF_TENSOR_IQ4_NL: {
		const uint32_t t[4] = { 0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u };
		q = (int8_t)((t[q / 4] >> (8 * (q % 4))) & 0xff);
		break;
	}
	default: break;
	}
	float d = __half2float(w.d[two ? 2 * blk : blk]);
	if (two)
		return __fadd_rn(__fmul_rn((float)q, d), __half2float(w.d[2 * blk + 1]));
	return __fmul_rn((float)q, d);
}

__device__ __forceinline__ void kq_load8(const struct dmat &m, int o, int i, float *w)
{
#pragma unroll
	for (int j = 0; j < 8; j++)
		w[j] = kq_value(m, o, i + j);
}
