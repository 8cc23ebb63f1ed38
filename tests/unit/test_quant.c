/* test_quant — the block weight types against llama.cpp and against themselves:
 *  - decoding is bit for bit llama.cpp's reference dequantize_row_* on committed rows
 *    (tests/fixtures/quant: one row from llama.cpp's own quantiser, one of random bytes);
 *  - activations quantised as llama.cpp's x86 CPU backend does (Q8_0, Q8_1, Q8_K), bit for bit;
 *  - the fused dot products (portable, AVX2, AVX-512 VNNI where the CPU has them) equal llama.cpp's vec_dot to fp32 rounding;
 *  - sixi's quantiser round-trips random rows within each type's error bound, and the fused
 *    dot of a quantised row equals the fp32 dot of its decoded row to within the activation
 *    quantisation error. */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model/kernels.h"
#include "model/quant.h"

static const uint32_t types[] = {
	GGUF_TENSOR_Q4_0, GGUF_TENSOR_Q4_1, GGUF_TENSOR_Q5_0, GGUF_TENSOR_Q5_1, GGUF_TENSOR_Q8_0,
	GGUF_TENSOR_Q4_K, GGUF_TENSOR_Q5_K, GGUF_TENSOR_Q6_K, GGUF_TENSOR_IQ4_NL, GGUF_TENSOR_IQ4_XS,
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))

/* The fixture generator's activations: exact in fp32. */
static float xval(int i)
{
	uint32_t h = (uint32_t)i * 2654435761u;
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return (float)((int)(h & 0xffff) - 32768) / 16384.0f;
}

/* The best kernel level this CPU has; every level up to it is checked. */
static int best_isa(void)
{
	return quant_isa_best();
}

/* Fixture: u32 type, n, rows, act type; act row; then per row: weight bytes, n floats, one float. */
static void check_fixture(uint32_t type, int avx2)
{
	char rel[128];
	snprintf(rel, sizeof rel, "tests/fixtures/quant/%s.bin", gguf_type_name(type));
	size_t len;
	uint8_t *f = (uint8_t *)test_slurp(test_src_path(rel), &len);
	if (!CHECK(f != NULL)) {
		fprintf(stderr, "cannot read %s\n", rel);
		return;
	}
	uint32_t hdr[4];
	memcpy(hdr, f, 16);
	int n = (int)hdr[1], rows = (int)hdr[2];
	CHECK_EQ_INT(hdr[0], type);
	CHECK_EQ_INT(hdr[3], quant_act_type(type));
	size_t wb = gguf_type_row_bytes(type, (uint64_t)n), xb = gguf_type_row_bytes(hdr[3], (uint64_t)n);
	if (!CHECK(len == 16 + xb + (size_t)rows * (wb + 4 * (size_t)n + 4))) {
		free(f);
		return;
	}
	float *x = malloc(sizeof(float) * (size_t)n), *deq = malloc(sizeof(float) * (size_t)n);
	uint8_t *xq = malloc(xb);
	for (int i = 0; i < n; i++)
		x[i] = xval(i);
	quant_act_quantize(hdr[3], x, xq, n);
	CHECK(memcmp(xq, f + 16, xb) == 0);
	const uint8_t *p = f + 16 + xb;
	for (int r = 0; r < rows; r++, p += wb + 4 * (size_t)n + 4) {
		quant_row_dequantize(type, p, deq, n);
		int same = memcmp(deq, p + wb, 4 * (size_t)n) == 0;
		if (!CHECK(same))
			fprintf(stderr, "%s row %d: decoded floats differ from llama.cpp's\n", gguf_type_name(type), r);
		float ref, mag = 0;
		memcpy(&ref, p + wb + 4 * (size_t)n, 4);
		for (int i = 0; i < n; i++)
			mag += fabsf(deq[i] * x[i]);
		/* same integers, fp32 sums in another order: within a few ulps of the magnitude */
		float dp = quant_row_dot(type, p, xq, n, 0);
		CHECK(fabsf(dp - ref) <= 1e-5f * mag);
		for (int isa = 1; isa <= avx2; isa++) {
			float da = quant_row_dot(type, p, xq, n, isa);
			CHECK(fabsf(da - ref) <= 1e-5f * mag);
		}
		printf("%-6s row %d: decode %s, dot %.7g (llama.cpp %.7g)\n", gguf_type_name(type), r,
		       same ? "identical" : "DIFFERENT", dp, ref);
	}
	free(x);
	free(deq);
	free(xq);
	free(f);
}

static uint64_t rs = 88172645463325252ull;
static float urand(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (float)((rs >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* Round trip and fused dot on random rows. Bounds: RMS error relative to the row's RMS. */
static void check_roundtrip(uint32_t type, int avx2)
{
	const int n = 1024;
	/* generous bounds over what a plain per-block quantiser reaches on uniform data */
	double bound = 0;
	switch (type) {
	case GGUF_TENSOR_Q8_0: bound = 0.006; break;
	case GGUF_TENSOR_Q6_K: bound = 0.025; break;
	case GGUF_TENSOR_Q5_0: case GGUF_TENSOR_Q5_1: case GGUF_TENSOR_Q5_K: bound = 0.045; break;
	default: bound = 0.09; break;
	}
	float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n), *d = malloc(sizeof(float) * n);
	uint8_t *q = malloc(gguf_type_row_bytes(type, n)), *xq = malloc(gguf_type_row_bytes(GGUF_TENSOR_Q8_K, n) + 2048);
	double worst = 0, worst_dot = 0;
	for (int trial = 0; trial < 8; trial++) {
		for (int i = 0; i < n; i++) {
			w[i] = urand() * (trial == 0 ? 1.0f : 0.02f) + (trial == 3 ? 0.01f : 0);
			x[i] = urand();
		}
		quant_row_quantize(type, w, q, n);
		quant_row_dequantize(type, q, d, n);
		double e = 0, s = 0;
		for (int i = 0; i < n; i++)
			e += (double)(d[i] - w[i]) * (d[i] - w[i]), s += (double)w[i] * w[i];
		double rel = sqrt(e / s);
		worst = rel > worst ? rel : worst;
		/* fused dot vs the fp32 dot of the decoded row: only x's 8-bit rounding differs */
		quant_act_quantize(quant_act_type(type), x, xq, n);
		double ref = 0, mag = 0;
		for (int i = 0; i < n; i++)
			ref += (double)d[i] * x[i], mag += fabs((double)d[i] * x[i]);
		float dp = quant_row_dot(type, q, xq, n, 0);
		double de = fabs(dp - ref) / mag;
		worst_dot = de > worst_dot ? de : worst_dot;
		for (int isa = 1; isa <= avx2; isa++)
			CHECK(fabsf(quant_row_dot(type, q, xq, n, isa) - dp) <= 1e-5f * (float)mag);
	}
	printf("%-6s sixi quantiser: worst relative RMS error %.4f (bound %.3f); fused dot vs fp32 of the decoded row: "
	       "%.2e of sum |w x|\n", gguf_type_name(type), worst, bound, worst_dot);
	CHECK(worst < bound);
	CHECK(worst > 0);
	CHECK(worst_dot < 4e-3);
	free(x);
	free(w);
	free(d);
	free(q);
	free(xq);
}

/* Several rows in one call: each row bit for bit its single-row result, on both paths. */
static void check_rows(uint32_t type, int avx2)
{
	enum { N = 512, R = 7 };
	uint32_t act = quant_act_type(type);
	size_t xb = gguf_type_row_bytes(act, N);
	float x[N], w[N], one[R], many[R];
	uint8_t *q = malloc(gguf_type_row_bytes(type, N)), *xq = malloc(xb * R);
	for (int i = 0; i < N; i++)
		w[i] = urand();
	quant_row_quantize(type, w, q, N);
	for (int r = 0; r < R; r++) {
		for (int i = 0; i < N; i++)
			x[i] = urand() * (float)(r + 1);
		quant_act_quantize(act, x, xq + xb * r, N);
	}
	for (int path = 0; path <= avx2; path++) {
		quant_rows_dot(type, q, xq, xb, R, N, many, path);
		for (int r = 0; r < R; r++)
			one[r] = quant_row_dot(type, q, xq + xb * r, N, path);
		CHECK(memcmp(one, many, sizeof one) == 0);
	}
	free(q);
	free(xq);
}


/* Q4_K and Q6_K in groups of 8 rows (quant_group_*): the packing round-trips bit for bit; the
 * portable group dot is the portable row dot bit for bit; the SIMD group dot is within fp32
 * order of it, and a row's result does not depend on how many rows share the call. Shapes:
 * 1..17 weight rows (a last group part empty), 1..64 activation rows, 1..11 blocks, rows from
 * the quantiser and rows of random bytes (extreme nibbles and scales). Through kern_matmul
 * too: grouped against plain matrices on odd shapes. */
static void check_groups(uint32_t type, int avx2)
{
	enum { NMAX = 2816, OMAX = 17, RMAX = 64 };
	const int ns[] = { 256, 768, 2816 }, outs[] = { 1, 5, 8, 13, 17 }, nrs[] = { 1, 2, 3, 4, 5, 7, 8, 13, 31, 32, 33, 64 };
	size_t rbmax = gguf_type_row_bytes(type, NMAX), xbmax = gguf_type_row_bytes(GGUF_TENSOR_Q8_K, NMAX);
	uint8_t *w = malloc(rbmax * OMAX), *g = malloc(quant_group_bytes(type, NMAX) * 3), *back = malloc(rbmax);
	uint8_t *xq = malloc(xbmax * RMAX);
	float *x = malloc(sizeof(float) * NMAX * RMAX), *row = malloc(sizeof(float) * NMAX);
	float *ref = malloc(sizeof(float) * RMAX * 24), *got = malloc(sizeof(float) * RMAX * 24);
	float *one = malloc(sizeof(float) * 24), *mag = malloc(sizeof(float) * RMAX * 24);
	float *dec = malloc(sizeof(float) * NMAX * OMAX), *xd = malloc(sizeof(float) * NMAX * RMAX);
	float *y0 = malloc(sizeof(float) * RMAX * OMAX), *y1 = malloc(sizeof(float) * RMAX * OMAX);
	int bad_pack = 0, bad_port = 0, bad_simd = 0, bad_inv = 0, bad_mat = 0, bad_vnni = 0, checks = 0;
	float *avx2_out = malloc(sizeof(float) * RMAX * 8);
	double worst = 0;
	for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
		for (int random_bytes = 0; random_bytes < 2; random_bytes++) {
			int n = ns[ni];
			size_t rb = gguf_type_row_bytes(type, (uint64_t)n), xb = gguf_type_row_bytes(GGUF_TENSOR_Q8_K, (uint64_t)n);
			size_t gb = quant_group_bytes(type, n);
			for (int o = 0; o < OMAX; o++) {
				if (!random_bytes) {
					for (int i = 0; i < n; i++)
						row[i] = urand() * (o % 3 == 0 ? 1.0f : 0.05f) + (o == 2 ? 0.03f : 0);
					quant_row_quantize(type, row, w + rb * o, n);
					continue;
				}
				for (size_t k = 0; k < rb; k++)
					w[rb * o + k] = (uint8_t)(urand() * 128 + 128);
				if (o == 1) /* every value at its largest */
					memset(w + rb * o, 0xFF, rb);
				for (int b = 0; b < n / 256; b++) { /* finite scales: halves of 2^-8 .. 2^-5 */
					uint8_t *blk = w + rb * o + (size_t)b * quant_block_bytes(type);
					uint16_t h0 = (uint16_t)(0x1C00 + (int)((urand() + 1) * 2000)), h1 = (uint16_t)(0x1C00 + o * 64);
					memcpy(blk + (type == GGUF_TENSOR_Q4_K ? 0 : 208), &h0, 2);
					if (type == GGUF_TENSOR_Q4_K)
						memcpy(blk + 2, &h1, 2);
				}
			}
			for (int r = 0; r < RMAX; r++) {
				for (int i = 0; i < n; i++)
					x[(size_t)r * n + i] = r == 1 ? 1.0f : r == 2 ? -1.0f : urand() * (float)(r % 5 + 1);
				quant_act_quantize(GGUF_TENSOR_Q8_K, x + (size_t)r * n, xq + xb * r, n);
				for (int i = 0; i < n; i++) { /* Q8_K decoded: d * q */
					const uint8_t *blk = xq + xb * r + (size_t)(i / 256) * 292;
					float dx;
					memcpy(&dx, blk, 4);
					xd[(size_t)r * n + i] = dx * (float)(int8_t)blk[4 + i % 256];
				}
			}
			for (int o = 0; o < OMAX; o++)
				quant_row_dequantize(type, w + rb * o, dec + (size_t)o * n, n);
			for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++) {
				int n_out = outs[oi], n_g = (n_out + 7) / 8;
				for (int gi = 0; gi < n_g; gi++) {
					int nr = n_out - 8 * gi < 8 ? n_out - 8 * gi : 8;
					quant_group_pack(type, w + rb * 8 * gi, rb, nr, n, g + gb * gi);
					for (int i = 0; i < nr; i++) {
						quant_group_row(type, g + gb * gi, i, n, back);
						bad_pack += memcmp(back, w + rb * (8 * gi + i), rb) != 0;
					}
				}
				for (size_t ri = 0; ri < sizeof nrs / sizeof nrs[0]; ri++) {
					int R = nrs[ri];
					for (int gi = 0; gi < n_g; gi++) {
						int nr = n_out - 8 * gi < 8 ? n_out - 8 * gi : 8;
						quant_group_dot(type, g + gb * gi, xq, xb, R, n, got, 0);
						for (int r = 0; r < R; r++)
							for (int i = 0; i < 8; i++) {
								float want = 0, m = 0;
								if (i < nr) {
									want = quant_row_dot(type, w + rb * (8 * gi + i), xq + xb * r, n, 0);
									for (int e = 0; e < n; e++)
										m += fabsf(dec[(size_t)(8 * gi + i) * n + e] * xd[(size_t)r * n + e]);
								}
								ref[r * 8 + i] = want;
								mag[r * 8 + i] = m;
								bad_port += memcmp(&want, &got[r * 8 + i], 4) != 0;
							}
						for (int isa = 1; isa <= avx2; isa++) {
							quant_group_dot(type, g + gb * gi, xq, xb, R, n, got, isa);
							if (isa == 2) /* VNNI: the same int32 sums and float steps as AVX2 */
								bad_vnni += memcmp(got, avx2_out, sizeof(float) * 8 * (size_t)R) != 0;
							else
								memcpy(avx2_out, got, sizeof(float) * 8 * (size_t)R);
							for (int k = 0; k < R * 8; k++) {
								double e = fabs((double)got[k] - ref[k]) / (mag[k] > 0 ? mag[k] : 1);
								worst = e > worst ? e : worst;
								bad_simd += e > 1e-5;
								checks++;
							}
							for (int r = 0; r < R; r += 1 + R / 4) {
								quant_group_dot(type, g + gb * gi, xq + xb * r, xb, 1, n, one, isa);
								bad_inv += memcmp(one, got + 8 * r, sizeof(float) * 8) != 0;
							}
						}
					}
					/* kern_matmul: grouped against plain, bit for bit on the portable path */
					for (int path = 0; path < 2; path++) {
						struct kern_pool *pool = kern_pool_create(2, path ? "auto" : "portable");
						struct kern_mat plain = { .data = w, .type = type, .n_in = n, .n_out = n_out,
									  .row_bytes = rb };
						struct kern_mat grp = plain;
						grp.data = g;
						grp.grouped = 1;
						kern_matmul(pool, &plain, x, n, R, y0, n_out);
						kern_matmul(pool, &grp, x, n, R, y1, n_out);
						for (int k = 0; k < R * n_out; k++) {
							if (path == 0 || !strcmp(kern_pool_isa(pool), "portable"))
								bad_mat += memcmp(&y0[k], &y1[k], 4) != 0;
							else
								bad_mat += fabs((double)y0[k] - y1[k]) >
									   1e-5 * (mag[(k / n_out) * 8] + mag[(k / n_out) * 8 + 1] + 1);
						}
						kern_pool_destroy(pool);
					}
				}
			}
		}
	printf("%-6s grouped: %d SIMD outputs, worst |grouped - portable| %.1e of sum |w x|; pack %d, portable %d, "
	       "SIMD %d, row-count %d, matmul %d, VNNI vs AVX2 %d mismatches\n",
	       gguf_type_name(type), checks, worst, bad_pack, bad_port, bad_simd, bad_inv, bad_mat, bad_vnni);
	CHECK_EQ_INT(bad_vnni, 0);
	CHECK_EQ_INT(bad_pack, 0);
	CHECK_EQ_INT(bad_port, 0);
	CHECK_EQ_INT(bad_simd, 0);
	CHECK_EQ_INT(bad_inv, 0);
	CHECK_EQ_INT(bad_mat, 0);
	free(w), free(g), free(back), free(xq), free(x), free(row), free(ref), free(got), free(one), free(mag);
	free(dec), free(xd), free(y0), free(y1), free(avx2_out);
}


/* Q8_K activations (the SIMD quantiser where the CPU has one) against a plain reading of
 * llama.cpp's quantize_row_q8_K_ref, byte for byte, on rows with ties of |x| of both signs,
 * zero blocks, a lone value and values that round at .5. */
static void check_q8_k(void)
{
	enum { N = 1024 };
	float x[N];
	uint8_t got[4 * 292], want[4 * 292];
	int bad = 0;
	for (int trial = 0; trial < 64; trial++) {
		for (int i = 0; i < N; i++)
			x[i] = urand() * (float)(1 + trial % 7);
		if (trial % 4 == 1)
			x[3] = -8, x[200] = 8, x[9] = 8; /* ties: the first of largest magnitude decides */
		if (trial % 4 == 2)
			for (int i = 256; i < 512; i++)
				x[i] = i == 300 ? -0.5f : 0;
		if (trial % 4 == 3)
			for (int i = 0; i < N; i++)
				x[i] = (float)((i * 7) % 255 - 127) * 0.5f; /* many exact halves of a step */
		if (trial == 5)
			memset(x + 768, 0, 256 * sizeof(float));
		quant_act_quantize(GGUF_TENSOR_Q8_K, x, got, N);
		for (int b = 0; b < N / 256; b++) {
			const float *v = x + 256 * b;
			uint8_t *o = want + 292 * b;
			float amax = 0, max = 0;
			for (int i = 0; i < 256; i++)
				if (fabsf(v[i]) > amax)
					amax = fabsf(v[i]), max = v[i];
			memset(o, 0, 292);
			if (amax == 0)
				continue;
			float iscale = -127.0f / max, d = 1 / iscale;
			int16_t bs[16] = { 0 };
			for (int i = 0; i < 256; i++) {
				int q = (int)rintf(iscale * v[i]); /* nearest, ties to even */
				q = q < 127 ? q : 127;
				o[4 + i] = (uint8_t)(int8_t)q;
				bs[i / 16] = (int16_t)(bs[i / 16] + q);
			}
			memcpy(o, &d, 4);
			memcpy(o + 260, bs, 32);
		}
		bad += memcmp(got, want, sizeof got) != 0;
	}
	printf("Q8_K activations: %d of 64 rows differ from the reference\n", bad);
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	int avx2 = best_isa(); /* highest level checked: 0 portable, 1 AVX2, 2 AVX-512 VNNI */
	printf("kernel levels checked: portable%s%s\n", avx2 >= 1 ? ", AVX2" : "", avx2 >= 2 ? ", AVX-512 VNNI" : "");
	for (size_t i = 0; i < N_TYPES; i++) {
		CHECK(kern_type_supported(types[i]));
		CHECK(quant_type_is_block(types[i]));
		CHECK_EQ_INT(gguf_type_row_bytes(types[i], (uint64_t)quant_block_elems(types[i])),
			     quant_block_bytes(types[i]));
		check_fixture(types[i], avx2);
		check_roundtrip(types[i], avx2);
		check_rows(types[i], avx2);
		if (quant_type_groups(types[i]))
			check_groups(types[i], avx2);
	}
	check_q8_k();
	CHECK(!kern_type_supported(GGUF_TENSOR_Q2_K));
	CHECK(!kern_type_supported(GGUF_TENSOR_Q3_K));
	return test_done();
}
