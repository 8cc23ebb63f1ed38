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
 * group (mma_s8_k16 beside mma_s8 in cuda_model.cu).
 * Loads: a lane's bytes of a whole super-block (Q6_K: of half of one) are loaded before the
 * first product, so that a warp has them all in flight at once; the scales and mins are
 * unpacked once a super-block, a byte each. (One part's loads at a time, then its products,
 * read ~0.5 TB/s at 32 rows on an H100: latency, not bytes.) */

template <int MT, int NT>
__device__ __forceinline__ void tc_kq256(const struct mm_args &a, const struct dmat &w, int warp, int g, int t,
					 const int *oa, const int *ob, int r0, float (*acc)[NT][4])
{
	const int nsb = w.n_in / 256;
	const bool six = w.type == GGUF_TENSOR_Q6_K, five = w.type == GGUF_TENSOR_Q5_K;
	const size_t bb = six ? 208 : five ? 176 : 144;
	const int8_t *brow[NT]; /* the B fragments' rows (g) of the pass' Q8_K activations */
#pragma unroll
	for (int n = 0; n < NT; n++)
		brow[n] = a.kq + (size_t)min(r0 + n * 8 + g, a.N - 1) * a.nq;
#pragma unroll 1
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
		/* Q4_K/Q5_K: rows g and g + 8's scales (words 0, 1) and mins (2, 3), a byte a part */
		uint32_t sma[MT][4] = {}, smb[MT][4] = {};
		if (six) {
			/* a half (parts 4 h .. 4 h + 3) at a time: the lane's words of it loaded first, all
			 * in flight together (ql at 64 h + 32 c + 16 hg + 4 t, qh at 128 + 32 h + 16 hg + 4 t,
			 * the half's 8 scales at 192 + 8 h) */
#pragma unroll
			for (int h = 0; h < 2; h++) {
				uint32_t la[MT][2][2], lb[MT][2][2], ha[MT][2], hb[MT][2];
				uint2 sca[MT], scb[MT];
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
#pragma unroll
					for (int hg = 0; hg < 2; hg++) {
#pragma unroll
						for (int c = 0; c < 2; c++) {
							la[mt][c][hg] = __ldg(reinterpret_cast<const uint32_t *>(pa[mt] + 64 * h + 32 * c + 16 * hg + 4 * t));
							lb[mt][c][hg] = __ldg(reinterpret_cast<const uint32_t *>(pb[mt] + 64 * h + 32 * c + 16 * hg + 4 * t));
						}
						ha[mt][hg] = __ldg(reinterpret_cast<const uint32_t *>(pa[mt] + 128 + 32 * h + 16 * hg + 4 * t));
						hb[mt][hg] = __ldg(reinterpret_cast<const uint32_t *>(pb[mt] + 128 + 32 * h + 16 * hg + 4 * t));
					}
					sca[mt] = __ldg(reinterpret_cast<const uint2 *>(pa[mt] + 192 + 8 * h));
					scb[mt] = __ldg(reinterpret_cast<const uint2 *>(pb[mt] + 192 + 8 * h));
				}
#pragma unroll
				for (int qt = 0; qt < 4; qt++) {
					const int j = 4 * h + qt;
#pragma unroll
					for (int hg = 0; hg < 2; hg++) { /* the part's two groups of 16 */
						uint32_t B[NT];
#pragma unroll
						for (int n = 0; n < NT; n++)
							B[n] = __ldg(reinterpret_cast<const uint32_t *>(brow[n] + (size_t)sb * 256 + 32 * j + 16 * hg + 4 * t));
#pragma unroll
						for (int mt = 0; mt < MT; mt++) {
							const uint32_t A0 = kq6_value4(la[mt][qt & 1][hg], ha[mt][hg], qt);
							const uint32_t A1 = kq6_value4(lb[mt][qt & 1][hg], hb[mt][hg], qt);
							const uint32_t sw = 2 * qt + hg < 4 ? sca[mt].x : sca[mt].y;
							const uint32_t tw = 2 * qt + hg < 4 ? scb[mt].x : scb[mt].y;
							const int sa = (int)(int8_t)(sw >> (8 * ((2 * qt + hg) % 4)));
							const int sbb = (int)(int8_t)(tw >> (8 * ((2 * qt + hg) % 4)));
#pragma unroll
							for (int n = 0; n < NT; n++) {
								int s[4] = { 0, 0, 0, 0 };
								mma_s8_k16(s, A0, A1, B[n]);
								is[mt][n][0] += sa * s[0];
								is[mt][n][1] += sa * s[1];
								is[mt][n][2] += sbb * s[2];
								is[mt][n][3] += sbb * s[3];
							}
						}
					}
				}
			}
		} else {
			/* the lane's 8 bytes of each of the four 32-byte chunks (part j: chunk j / 2, nibble
			 * j % 2) and of the high bits (Q5_K), loaded first, all in flight together */
			uint2 qa[MT][4], qb[MT][4], hva[MT], hvb[MT];
			const int qoff = five ? 48 : 16;
#pragma unroll
			for (int mt = 0; mt < MT; mt++) {
#pragma unroll
				for (int c = 0; c < 4; c++) {
					qa[mt][c] = __ldg(reinterpret_cast<const uint2 *>(pa[mt] + qoff + 32 * c + 8 * t));
					qb[mt][c] = __ldg(reinterpret_cast<const uint2 *>(pb[mt] + qoff + 32 * c + 8 * t));
				}
				hva[mt] = hvb[mt] = make_uint2(0, 0);
				if (five) {
					hva[mt] = __ldg(reinterpret_cast<const uint2 *>(pa[mt] + 16 + 8 * t));
					hvb[mt] = __ldg(reinterpret_cast<const uint2 *>(pb[mt] + 16 + 8 * t));
				}
				uint32_t s3[3];
#pragma unroll
				for (int k = 0; k < 3; k++)
					s3[k] = __ldg(reinterpret_cast<const uint32_t *>(pa[mt] + 4) + k);
				kq_scales_mins(s3, sma[mt]);
#pragma unroll
				for (int k = 0; k < 3; k++)
					s3[k] = __ldg(reinterpret_cast<const uint32_t *>(pb[mt] + 4) + k);
				kq_scales_mins(s3, smb[mt]);
			}
#pragma unroll
			for (int j = 0; j < 8; j++) {
				uint2 B[NT];
#pragma unroll
				for (int n = 0; n < NT; n++)
					B[n] = __ldg(reinterpret_cast<const uint2 *>(brow[n] + (size_t)sb * 256 + 32 * j + 8 * t));
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					const uint2 A0 = kq45_value8(qa[mt][j / 2], hva[mt], five, j);
					const uint2 A1 = kq45_value8(qb[mt][j / 2], hvb[mt], five, j);
					const int sa = kq_byte(sma[mt], j), sbb = kq_byte(smb[mt], j);
#pragma unroll
					for (int n = 0; n < NT; n++) {
						int s[4] = { 0, 0, 0, 0 };
						mma_s8(s, A0.x, A1.x, A0.y, A1.y, B[n].x, B[n].y);
						is[mt][n][0] += sa * s[0];
						is[mt][n][1] += sa * s[1];
						is[mt][n][2] += sbb * s[2];
						is[mt][n][3] += sbb * s[3];
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
				for (int jj = 0; jj < 8; jj++)
					bsp[i][jj] = 0;
				if (!six) { /* the super-block's 16 bsums, 32 aligned bytes */
					const uint4 *bp = reinterpret_cast<const uint4 *>(a.kbs + (size_t)rc[i] * (a.nq / 16) + (size_t)sb * 16);
					uint4 v0 = __ldg(bp), v1 = __ldg(bp + 1);
					const uint32_t v[8] = { v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w };
#pragma unroll
					for (int jj = 0; jj < 8; jj++)
						bsp[i][jj] = (int)(int16_t)(v[jj] & 0xffff) + (int)(int16_t)(v[jj] >> 16);
				}
			}
#pragma unroll
			for (int mt = 0; mt < MT; mt++) {
				int im[4] = { 0, 0, 0, 0 };
				if (!six)
#pragma unroll
					for (int jj = 0; jj < 8; jj++) {
						const int mna = kq_byte(sma[mt] + 2, jj), mnb = kq_byte(smb[mt] + 2, jj);
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
