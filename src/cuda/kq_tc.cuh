/* kq_tc — Q4_K, Q5_K and Q6_K matrices in mm_tc (tensor cores, wide passes), included by
 * cuda_model.cu before mm_tc.
 *
 * A warp takes whole super-blocks (256 inputs: warp w the super-blocks w, w + 8, ...) of its
 * block's 16 MT outputs against its 8 NT rows of the pass' Q8_K activations. Q4_K/Q5_K: one
 * m16n8k32 s8 product per 32-element part j (the unsigned 4/5-bit values fit int8), exact,
 * times the part's 6-bit scale into the super-block's integer sum is; Q6_K: one m16n8k16 s8
 * product per 16-element group (values -32..31) times its int8 scale. The mins' integer sum im
 * comes from the Q8_K bsums. Then, per super-block, the CPU's float term (kq_kernels.cuh):
 * d * dx * is - dmin * dx * im, each operation rounded alone, added to the fp32 sum; so an
 * output's floats are those of the warp-per-output kernel up to the order of the fp32 sum, and
 * do not depend on the pass' other rows.
 * Fragments (PTX ISA, mma.m16n8k32 / m16n8k16 with .s8; lane = 4 g + t): k32 as mm_tc's Q8_0
 * (a thread's 8 consecutive values j*32 + 8t .. 8t + 7 of rows g and g + 8 and of row g of the
 * pass, the same permutation on both sides); k16: 4 consecutive values 4t .. 4t + 3 of the
 * group (mma_s8_k16 beside mma_s8 in cuda_model.cu). */

/* Scale and min of part j from a Q4_K/Q5_K block's 12 scale bytes as 3 words (scale_min_k4). */
__device__ __forceinline__ void kq_scale_min(const uint32_t *s, int j, int *sc, int *mn)
{
#define KQ_B(k) ((int)((s[(k) / 4] >> (8 * ((k) % 4))) & 0xff))
	if (j < 4) {
		*sc = KQ_B(j) & 63;
		*mn = KQ_B(j + 4) & 63;
	} else {
		*sc = (KQ_B(j + 4) & 0xf) | ((KQ_B(j - 4) >> 6) << 4);
		*mn = (KQ_B(j + 4) >> 4) | ((KQ_B(j) >> 6) << 4);
	}
#undef KQ_B
}

/* 4 values of a Q6_K block (208 bytes as uploaded): elements 32 j + e .. e + 3 (e a multiple of 4). */
__device__ __forceinline__ uint32_t kq6_word(const uint8_t *p, int j, int e)
{
	const int h = j / 4, qt = j % 4;
	uint32_t ql = __ldg(reinterpret_cast<const uint32_t *>(p + 64 * h + 32 * (qt & 1) + e));
	uint32_t qh = __ldg(reinterpret_cast<const uint32_t *>(p + 128 + 32 * h + e));
	return __vsub4(((ql >> (4 * (qt >> 1))) & 0x0f0f0f0fu) | (((qh >> (2 * qt)) & 0x03030303u) << 4), 0x20202020u);
}

/* 8 values of a Q4_K/Q5_K block: elements 32 j + 8 t .. + 7, as two words. */
__device__ __forceinline__ uint2 kq45_words(const uint8_t *p, bool five, int j, int t)
{
	uint2 q = __ldg(reinterpret_cast<const uint2 *>(p + (five ? 48 : 16) + 32 * (j / 2) + 8 * t));
	uint32_t v0 = (q.x >> (4 * (j & 1))) & 0x0f0f0f0fu, v1 = (q.y >> (4 * (j & 1))) & 0x0f0f0f0fu;
	if (five) {
		uint2 h = __ldg(reinterpret_cast<const uint2 *>(p + 16 + 8 * t));
		v0 |= ((h.x >> j) & 0x01010101u) << 4;
		v1 |= ((h.y >> j) & 0x01010101u) << 4;
	}
	return make_uint2(v0, v1);
}

template <int MT, int NT>
__device__ __forceinline__ void tc_kq256(const struct mm_args &a, const struct dmat &w, int warp, int g, int t,
					 const int *oa, const int *ob, int r0, float (*acc)[NT][4])
{
	const int nsb = w.n_in / 256;
	const bool six = w.type == GGUF_TENSOR_Q6_K, five = w.type == GGUF_TENSOR_Q5_K;
	const size_t bb = six ? 208 : five ? 176 : 144;
	for (int sb = warp; sb < nsb; sb += TC_STEPS) {
		const uint8_t *pa[MT], *pb[MT];
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
			pa[mt] = (const uint8_t *)w.w + ((size_t)oa[mt] * nsb + sb) * bb;
			pb[mt] = (const uint8_t *)w.w + ((size_t)ob[mt] * nsb + sb) * bb;
		}
		int is[MT][NT][4];
#pragma unroll
		for (int mt = 0; mt < MT; mt++)
#pragma unroll
			for (int n = 0; n < NT; n++)
				is[mt][n][0] = is[mt][n][1] = is[mt][n][2] = is[mt][n][3] = 0;
		uint32_t swa[MT][3] = {}, swb[MT][3] = {}; /* Q4_K/Q5_K: the scale words of rows g, g + 8 */
		if (!six)
#pragma unroll
			for (int mt = 0; mt < MT; mt++)
#pragma unroll
				for (int k = 0; k < 3; k++) {
					swa[mt][k] = __ldg(reinterpret_cast<const uint32_t *>(pa[mt] + 4) + k);
					swb[mt][k] = __ldg(reinterpret_cast<const uint32_t *>(pb[mt] + 4) + k);
				}
#pragma unroll 1
		for (int j = 0; j < 8; j++) {
			if (six) {
#pragma unroll
				for (int hg = 0; hg < 2; hg++) { /* the part's two groups of 16 */
					uint32_t A0[MT], A1[MT];
					int sa[MT], sbb[MT];
#pragma unroll
					for (int mt = 0; mt < MT; mt++) {
						A0[mt] = kq6_word(pa[mt], j, 16 * hg + 4 * t);
						A1[mt] = kq6_word(pb[mt], j, 16 * hg + 4 * t);
						sa[mt] = (int)(int8_t)__ldg(pa[mt] + 192 + 2 * j + hg);
						sbb[mt] = (int)(int8_t)__ldg(pb[mt] + 192 + 2 * j + hg);
					}
#pragma unroll
					for (int n = 0; n < NT; n++) {
						int rb = min(r0 + n * 8 + g, a.N - 1);
						uint32_t B = __ldg(reinterpret_cast<const uint32_t *>(
							a.kq + (size_t)rb * a.nq + (size_t)sb * 256 + 32 * j + 16 * hg + 4 * t));
#pragma unroll
						for (int mt = 0; mt < MT; mt++) {
							int s[4] = { 0, 0, 0, 0 };
							mma_s8_k16(s, A0[mt], A1[mt], B);
							is[mt][n][0] += sa[mt] * s[0];
							is[mt][n][1] += sa[mt] * s[1];
							is[mt][n][2] += sbb[mt] * s[2];
							is[mt][n][3] += sbb[mt] * s[3];
						}
					}
				}
			} else {
				uint2 A0[MT], A1[MT];
				int sa[MT], sbb[MT], mn;
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					A0[mt] = kq45_words(pa[mt], five, j, t);
					A1[mt] = kq45_words(pb[mt], five, j, t);
					kq_scale_min(swa[mt], j, &sa[mt], &mn);
					kq_scale_min(swb[mt], j, &sbb[mt], &mn);
				}
#pragma unroll
				for (int n = 0; n < NT; n++) {
					int rb = min(r0 + n * 8 + g, a.N - 1);
					uint2 B = __ldg(reinterpret_cast<const uint2 *>(a.kq + (size_t)rb * a.nq + (size_t)sb * 256 +
											32 * j + 8 * t));
#pragma unroll
					for (int mt = 0; mt < MT; mt++) {
						int s[4] = { 0, 0, 0, 0 };
						mma_s8(s, A0[mt].x, A1[mt].x, A0[mt].y, A1[mt].y, B.x, B.y);
						is[mt][n][0] += sa[mt] * s[0];
						is[mt][n][1] += sa[mt] * s[1];
						is[mt][n][2] += sbb[mt] * s[2];
						is[mt][n][3] += sbb[mt] * s[3];
					}
				}
			}
		}
		/* the float terms: outputs oa (registers 0, 1), ob (2, 3); rows 2t (0, 2), 2t + 1 (1, 3) */
		float da[MT], db[MT], ma[MT], mb[MT];
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
			if (six) {
				da[mt] = __half2float(w.d[(size_t)oa[mt] * nsb + sb]);
				db[mt] = __half2float(w.d[(size_t)ob[mt] * nsb + sb]);
				ma[mt] = mb[mt] = 0.f;
			} else {
				uint32_t x = __ldg(reinterpret_cast<const uint32_t *>(pa[mt])), y = __ldg(reinterpret_cast<const uint32_t *>(pb[mt]));
				da[mt] = __half2float(__ushort_as_half((unsigned short)(x & 0xffff)));
				ma[mt] = __half2float(__ushort_as_half((unsigned short)(x >> 16)));
				db[mt] = __half2float(__ushort_as_half((unsigned short)(y & 0xffff)));
				mb[mt] = __half2float(__ushort_as_half((unsigned short)(y >> 16)));
			}
		}
#pragma unroll
		for (int n = 0; n < NT; n++) {
			int rc[2] = { min(r0 + n * 8 + 2 * t, a.N - 1), min(r0 + n * 8 + 2 * t + 1, a.N - 1) };
			float dx[2];
			int bsp[2][8]; /* the rows' sums of each 32-element part (two bsums each) */
#pragma unroll
			for (int i = 0; i < 2; i++) {
				dx[i] = __ldg(a.kd + (size_t)rc[i] * nsb + sb);
#pragma unroll
				for (int jj = 0; jj < 8; jj++) {
					bsp[i][jj] = 0;
					if (!six) {
						uint32_t v = __ldg(reinterpret_cast<const unsigned int *>(
							a.kbs + (size_t)rc[i] * (a.nq / 16) + (size_t)sb * 16 + 2 * jj));
						bsp[i][jj] = (int)(int16_t)(v & 0xffff) + (int)(int16_t)(v >> 16);
					}
				}
			}
#pragma unroll
			for (int mt = 0; mt < MT; mt++) {
				int im[4] = { 0, 0, 0, 0 };
				if (!six)
#pragma unroll
					for (int jj = 0; jj < 8; jj++) {
						int sc, mna, mnb;
						kq_scale_min(swa[mt], jj, &sc, &mna);
						kq_scale_min(swb[mt], jj, &sc, &mnb);
						im[0] += mna * bsp[0][jj];
						im[1] += mna * bsp[1][jj];
						im[2] += mnb * bsp[0][jj];
						im[3] += mnb * bsp[1][jj];
					}
#pragma unroll
				for (int q = 0; q < 4; q++) {
					float d = q < 2 ? da[mt] : db[mt], dm = q < 2 ? ma[mt] : mb[mt], x = dx[q & 1];
					acc[mt][n][q] = __fadd_rn(acc[mt][n][q],
								  __fsub_rn(__fmul_rn(__fmul_rn(d, x), (float)is[mt][n][q]),
									    __fmul_rn(__fmul_rn(dm, x), (float)im[q])));
				}
			}
		}
	}
}
