/* test_cuda_kq_emul — the integer logic of the CUDA engine's block-type kernels
 * (src/cuda/kq_kernels.cuh, kq_tc.cuh) run on the CPU against quant.c, so that it is checked
 * where there is no GPU. The device files are compiled as host C++ with small stand-ins for
 * the intrinsics they use (__ldg, __dp4a, __vsub4, __byte_perm, the rounded float operations,
 * a warp's shuffles and mma.sync as 32 threads meeting at a barrier), following the PTX ISA's
 * definitions (mma m16n8k32 / m16n8k16 .s8 fragment layouts). Checked, bit for bit against
 * quant.c where the order of the sums is the CPU's:
 *  - decoding (kq_value, the embedding's path) against quant_row_dequantize, every type;
 *  - each block's integer dot and float term (kq32_rows, kq256_load) against dot_portable;
 *  - dot_kq as mm_small runs it (lanes of 1, 2, 8 warps an output, 4 rows at once for 3) against
 *    quant_row_dot within 1e-5 (the fp32 sum over blocks is in another order there);
 *  - tc_kq256 (tensor cores: 8 warps; 16 outputs x 8 rows and 5, 32 x 16 and 13) bit for bit, its warps' sums
 *    added in warp order as mm_tc does (one super-block a warp: the CPU's order);
 *  - the Q8_K and Q8_1 activation quantisers on the agreement test's edge cases, byte for byte.
 * What it cannot check: the hardware itself (the stand-ins follow the documentation), memory
 * alignment, launches; test_cuda_engine does that on a GPU. */
#include <cuda_fp16.h>
#include <vector_functions.h>
#include <vector_types.h>

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

extern "C" {
#include "gguf/gguf.h"
#include "model/quant.h"
}

#undef __device__
#undef __global__
#undef __forceinline__
#undef __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __host__

/* ---- stand-ins for the device's intrinsics ---- */

template <class T> static T __ldg(const T *p)
{
	return *p;
}

static uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s)
{
	uint8_t b[8];
	memcpy(b, &x, 4);
	memcpy(b + 4, &y, 4);
	uint32_t r = 0;
	for (int i = 0; i < 4; i++)
		r |= (uint32_t)b[(s >> (4 * i)) & 7] << (8 * i);
	return r;
}

static uint32_t __vsub4(uint32_t a, uint32_t b)
{
	uint32_t r = 0;
	for (int i = 0; i < 4; i++)
		r |= ((((a >> 8 * i) & 0xff) - ((b >> 8 * i) & 0xff)) & 0xff) << 8 * i;
	return r;
}

static int __dp4a(int a, int b, int c)
{
	for (int i = 0; i < 4; i++)
		c += (int8_t)((uint32_t)a >> 8 * i) * (int8_t)((uint32_t)b >> 8 * i);
	return c;
}

/* each operation rounded alone (volatile: no contraction) */
static float __fmul_rn(float a, float b)
{
	volatile float r = a * b;
	return r;
}

static float __fadd_rn(float a, float b)
{
	volatile float r = a + b;
	return r;
}

static float __fsub_rn(float a, float b)
{
	volatile float r = a - b;
	return r;
}

static float __fdiv_rn(float a, float b)
{
	volatile float r = a / b;
	return r;
}

static int __float_as_int(float f)
{
	int i;
	memcpy(&i, &f, 4);
	return i;
}

static inline int min(int a, int b)
{
	return a < b ? a : b;
}

/* cuda_model.cu's structures, the fields the kq files use */
struct dmat {
	int type;
	int n_in, n_out;
	const void *w;
	const __half *d;
	const uint32_t *qh;
};

struct mm_args {
	int N, nq;
	const int8_t *xq;
	const float *xd, *xs1;
	const int8_t *kq;
	const float *kd;
	const int16_t *kbs;
};

static void pdl_enter()
{
}

/* a warp: 32 threads, thread-local indices, meeting at a barrier */
struct idx3 {
	int x, y;
};
static thread_local idx3 threadIdx, blockIdx;
static std::barrier<> *warp_bar;
static uint32_t warp_slot[32];

template <class T> static T __shfl_xor_sync(unsigned, T v, int off)
{
	uint32_t u, o;
	int l = threadIdx.x & 31;
	memcpy(&u, &v, 4);
	warp_slot[l] = u;
	warp_bar->arrive_and_wait();
	o = warp_slot[l ^ off];
	warp_bar->arrive_and_wait();
	T r;
	memcpy(&r, &o, 4);
	return r;
}

/* Runs f(lane) on the 32 threads of one warp. */
template <class F> static void run_warp(F f)
{
	std::barrier<> b(32);
	warp_bar = &b;
	std::vector<std::thread> th;
	for (int l = 0; l < 32; l++)
		th.emplace_back([&f, l] { f(l); });
	for (auto &t : th)
		t.join();
}

#include "cuda/q8_idot.cuh"

/* mma.sync m16n8k{32,16} .s8 (PTX ISA fragment layouts; lane = 4 g + t): A row g / g + 8 from
 * a0 / a1 at k 4t .. 4t + 3 (k32: a2 / a3 at 16 + 4t), B column g from b0 at k 4t (k32: b1 at
 * 16 + 4t); C: c0, c1 row g, columns 2t, 2t + 1; c2, c3 row g + 8. */
static uint32_t frag_a[32][4], frag_b[32][2];

static void mma_emul(int *c, const uint32_t *a, int na, const uint32_t *b, int nb)
{
	int l = threadIdx.x & 31, g = l >> 2, t = l & 3, K = na == 4 ? 32 : 16;
	memcpy(frag_a[l], a, 4 * (size_t)na);
	memcpy(frag_b[l], b, 4 * (size_t)nb);
	warp_bar->arrive_and_wait();
	int A[16][32], B[32][8];
	for (int ln = 0; ln < 32; ln++) {
		int gg = ln >> 2, tt = ln & 3;
		for (int i = 0; i < 4; i++) {
			A[gg][4 * tt + i] = (int8_t)(frag_a[ln][0] >> 8 * i);
			A[gg + 8][4 * tt + i] = (int8_t)(frag_a[ln][1] >> 8 * i);
			B[4 * tt + i][gg] = (int8_t)(frag_b[ln][0] >> 8 * i);
			if (K == 32) {
				A[gg][16 + 4 * tt + i] = (int8_t)(frag_a[ln][2] >> 8 * i);
				A[gg + 8][16 + 4 * tt + i] = (int8_t)(frag_a[ln][3] >> 8 * i);
				B[16 + 4 * tt + i][gg] = (int8_t)(frag_b[ln][1] >> 8 * i);
			}
		}
	}
	warp_bar->arrive_and_wait();
	const int rows[4] = { g, g, g + 8, g + 8 }, cols[4] = { 2 * t, 2 * t + 1, 2 * t, 2 * t + 1 };
	for (int q = 0; q < 4; q++) {
		int s = 0;
		for (int k = 0; k < K; k++)
			s += A[rows[q]][k] * B[k][cols[q]];
		c[q] += s;
	}
}

static void mma_s8(int *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1)
{
	const uint32_t a[4] = { a0, a1, a2, a3 }, b[2] = { b0, b1 };
	mma_emul(c, a, 4, b, 2);
}

static void mma_s8_k16(int *c, uint32_t a0, uint32_t a1, uint32_t b0)
{
	const uint32_t a[2] = { a0, a1 }, b[1] = { b0 };
	mma_emul(c, a, 2, b, 1);
}

#define TC_STEPS 8
#include "cuda/kq_kernels.cuh"
#include "cuda/kq_tc.cuh"

/* test.h's two checks used here (test.h itself is C) */
static int n_checks, n_failed;
#define CHECK_EQ_INT(a, b) check_eq((long long)(a), (long long)(b), #a, __LINE__)

static void check_eq(long long a, long long b, const char *what, int line)
{
	n_checks++;
	if (a != b) {
		n_failed++;
		fprintf(stderr, "%s:%d: %s == %lld failed: %lld\n", __FILE__, line, what, b, a);
	}
}

/* ---- a matrix and activation rows in the device layouts ---- */

static const int all_types[] = { GGUF_TENSOR_Q4_0, GGUF_TENSOR_Q4_1, GGUF_TENSOR_Q5_0, GGUF_TENSOR_Q5_1, GGUF_TENSOR_IQ4_NL,
				 GGUF_TENSOR_Q4_K, GGUF_TENSOR_Q5_K, GGUF_TENSOR_Q6_K, GGUF_TENSOR_IQ4_XS };

static float urand(uint64_t *r)
{
	*r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
	return (float)((double)(*r >> 11) / 9007199254740992.0);
}

/* n_out random rows of n_in as `type`: the stored blocks (raw) and kq_upload.cuh's layout. */
struct wmat {
	std::vector<uint8_t> raw, qs;
	std::vector<uint16_t> sc;
	std::vector<uint32_t> qh;
	size_t row_bytes;
	dmat m;
};

static void make_matrix(wmat *w, int type, int n_in, int n_out, uint64_t seed)
{
	int be = quant_block_elems((uint32_t)type), bb = quant_block_bytes((uint32_t)type);
	size_t nb = (size_t)n_in / (size_t)be * (size_t)n_out;
	std::vector<float> x((size_t)n_in);
	w->row_bytes = (size_t)n_in / (size_t)be * (size_t)bb;
	w->raw.resize(w->row_bytes * (size_t)n_out);
	for (int o = 0; o < n_out; o++) {
		for (auto &v : x)
			v = (urand(&seed) - 0.5f) * 3;
		quant_row_quantize((uint32_t)type, x.data(), w->raw.data() + w->row_bytes * (size_t)o, n_in);
	}
	int q_off = 2, q_len = 16, n_half = 1, d_off = 0, qh_off = -1, qh_words = 1; /* as kq_upload */
	switch (type) {
	case GGUF_TENSOR_Q4_1: q_off = 4, n_half = 2; break;
	case GGUF_TENSOR_Q5_0: q_off = 6, qh_off = 2; break;
	case GGUF_TENSOR_Q5_1: q_off = 8, n_half = 2, qh_off = 4; break;
	case GGUF_TENSOR_Q6_K: q_off = 0, q_len = 208, d_off = 208; break;
	case GGUF_TENSOR_IQ4_XS: q_off = 8, q_len = 128, qh_off = 2, qh_words = 2; break;
	default: break;
	}
	w->qs.assign(nb * (size_t)q_len, 0);
	w->sc.assign(nb * (size_t)n_half, 0);
	w->qh.assign(nb * (size_t)qh_words, 0);
	for (size_t b = 0; b < nb; b++) {
		const uint8_t *p = w->raw.data() + b * (size_t)bb;
		memcpy(&w->qs[b * (size_t)q_len], p + q_off, (size_t)q_len);
		memcpy(&w->sc[b * (size_t)n_half], p + d_off, 2 * (size_t)n_half);
		if (qh_words == 2) {
			memcpy(&w->qh[2 * b], p + qh_off, 2);
			memcpy(&w->qh[2 * b + 1], p + qh_off + 2, 4);
		} else if (qh_off >= 0) {
			memcpy(&w->qh[b], p + qh_off, 4);
		}
	}
	bool raw = type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q5_K;
	w->m = dmat{ type, n_in, n_out, raw ? (const void *)w->raw.data() : (const void *)w->qs.data(),
		     (const __half *)w->sc.data(), w->qh.data() };
}

/* n rows of n_in floats quantised as the CPU does for `type` (blocks in xq) and split into the
 * device's arrays. */
struct arows {
	std::vector<uint8_t> xq;
	std::vector<int8_t> q;
	std::vector<float> d, s1, kd;
	std::vector<int16_t> bs;
	size_t row_bytes;
	mm_args a;
};

static void make_rows(arows *r, int type, int n_in, int n, uint64_t seed)
{
	uint32_t act = quant_act_type((uint32_t)type);
	int ae = quant_block_elems(act), ab = quant_block_bytes(act), nb = n_in / ae;
	std::vector<float> x((size_t)n_in);
	r->row_bytes = (size_t)nb * (size_t)ab;
	r->xq.resize(r->row_bytes * (size_t)n);
	r->q.assign((size_t)n_in * (size_t)n, 0);
	r->d.assign((size_t)n_in / 32 * (size_t)n, 0);
	r->s1.assign((size_t)n_in / 32 * (size_t)n, 0);
	r->kd.assign((size_t)n_in / 256 * (size_t)n + 1, 0);
	r->bs.assign((size_t)n_in / 16 * (size_t)n, 0);
	for (int k = 0; k < n; k++) {
		for (auto &v : x)
			v = (urand(&seed) - 0.3f) * 2;
		uint8_t *o = r->xq.data() + r->row_bytes * (size_t)k;
		quant_act_quantize(act, x.data(), o, n_in);
		for (int b = 0; b < nb; b++, o += ab) {
			if (ae == 256) {
				memcpy(&r->kd[(size_t)k * (size_t)(n_in / 256) + (size_t)b], o, 4);
				memcpy(&r->q[(size_t)k * (size_t)n_in + (size_t)b * 256], o + 4, 256);
				memcpy(&r->bs[(size_t)k * (size_t)(n_in / 16) + (size_t)b * 16], o + 260, 32);
			} else {
				__half h;
				size_t at = (size_t)k * (size_t)(n_in / 32) + (size_t)b;
				memcpy(&h, o, 2);
				r->d[at] = __half2float(h);
				if (ab == 36) {
					memcpy(&h, o + 2, 2);
					r->s1[at] = __half2float(h);
				}
				memcpy(&r->q[(size_t)k * (size_t)n_in + (size_t)b * 32], o + ab - 32, 32);
			}
		}
	}
	r->a = mm_args{ n, n_in, r->q.data(), r->d.data(), r->s1.data(), r->q.data(), r->kd.data(), r->bs.data() };
}

static bool same_float(float a, float b)
{
	return memcmp(&a, &b, 4) == 0;
}

/* Decoding and each block's terms, summed in the CPU's order, against quant.c. */
static void check_blocks(void)
{
	enum { NI = 1024, NO = 3 };
	for (int type : all_types) {
		wmat w;
		arows r;
		make_matrix(&w, type, NI, NO, 0x1234u + (uint64_t)type);
		make_rows(&r, type, NI, 1, 0x777u + (uint64_t)type);
		std::vector<float> y((size_t)NI);
		int dec = 0, dot = 0;
		for (int o = 0; o < NO; o++) {
			quant_row_dequantize((uint32_t)type, w.raw.data() + w.row_bytes * (size_t)o, y.data(), NI);
			for (int e = 0; e < NI; e += 8) {
				float v[8];
				kq_load8(w.m, o, e, v);
				for (int j = 0; j < 8; j++)
					dec += !same_float(v[j], y[(size_t)(e + j)]);
			}
			float acc = 0;
			if (quant_block_elems((uint32_t)type) == 32) {
				bool two = type == GGUF_TENSOR_Q4_1 || type == GGUF_TENSOR_Q5_1;
				for (int b = 0; b < NI / 32; b++)
					kq32_rows<1>(kq32_load(w.m, o, b), two, r.a, 0, b, &acc);
			} else {
				for (int sb = 0; sb < NI / 256; sb++) { /* the 8 lanes of a super-block, one after another */
					int is = 0, im = 0;
					kq256 c0 = {};
					for (int j = 0; j < 8; j++) {
						kq256 c = kq256_load(w.m, o, sb, j);
						const int4 *xp = reinterpret_cast<const int4 *>(r.a.kq + sb * 256 + 32 * j);
						if (j == 0)
							c0 = c;
						if (type == GGUF_TENSOR_Q6_K) {
							int4 z = make_int4(0, 0, 0, 0);
							is += c.sc * q8_idot(c.lo, z, xp[0], z) + c.mn * q8_idot(z, c.hi, z, xp[1]);
						} else {
							is += c.sc * q8_idot(c.lo, c.hi, xp[0], xp[1]);
							im += c.mn * (r.bs[(size_t)sb * 16 + 2 * (size_t)j] + r.bs[(size_t)sb * 16 + 2 * (size_t)j + 1]);
						}
					}
					float dx = r.kd[(size_t)sb];
					acc = __fadd_rn(acc, __fsub_rn(__fmul_rn(__fmul_rn(c0.d, dx), (float)is),
								       __fmul_rn(__fmul_rn(c0.dmin, dx), (float)im)));
				}
			}
			float ref = quant_row_dot((uint32_t)type, w.raw.data() + w.row_bytes * (size_t)o, r.xq.data(), NI,
						  QUANT_ISA_PORTABLE);
			dot += !same_float(acc, ref);
		}
		CHECK_EQ_INT(dec, 0);
		CHECK_EQ_INT(dot, 0);
		printf("%s: decoding %d of %d values differ from quant_row_dequantize; block terms: %d of %d rows differ "
		       "from dot_portable\n", gguf_type_name((uint32_t)type), dec, NI * NO, dot, NO);
	}
}

/* dot_kq as mm_small runs it: kw warps an output, 4 rows at once (3 of them live). */
static void check_small(void)
{
	enum { NI = 256 * 11, NR = 3 };
	for (int type : all_types) {
		wmat w;
		arows r;
		make_matrix(&w, type, NI, 1, 0x4321u + (uint64_t)type);
		make_rows(&r, type, NI, NR, 0x999u + (uint64_t)type);
		for (int kw : { 1, 2, 8 }) {
			static float part[8][32][4];
			for (int q = 0; q < kw; q++)
				run_warp([&](int l) {
					threadIdx.x = l;
					float acc[4] = { 0, 0, 0, 0 };
					dot_kq<4, 2>(w.m, 0, r.a, 0, q * 32 + l, 32 * kw, acc);
					memcpy(part[q][l], acc, sizeof acc);
				});
			int bad = 0;
			for (int k = 0; k < NR; k++) {
				double s = 0;
				for (int q = 0; q < kw; q++)
					for (int l = 0; l < 32; l++)
						s += part[q][l][k];
				double ref = quant_row_dot((uint32_t)type, w.raw.data(), r.xq.data() + r.row_bytes * (size_t)k, NI,
							   QUANT_ISA_PORTABLE);
				bad += !(fabs(s - ref) <= 1e-5 * (fabs(ref) + 1));
				bad += part[0][0][3] != 0.f; /* the fourth row is past N */
			}
			CHECK_EQ_INT(bad, 0);
			printf("%s: the warp-per-output split over %d warp(s), 3 rows: %d differ from quant_row_dot\n",
			       gguf_type_name((uint32_t)type), kw, bad);
		}
	}
}

/* tc_kq256: 8 warps (one super-block each: the CPU's order), MT x 16 outputs x NT x 8 rows of
 * the pass (1 x 1: 8 and 5 rows; 2 x 2: 16 and 11 rows, the tiles' indexing). */
template <int MT, int NT> static void check_tc(void)
{
	enum { NI = 1024, NO = 16 * MT, NR = 8 * NT };
	for (int type : { GGUF_TENSOR_Q4_K, GGUF_TENSOR_Q5_K, GGUF_TENSOR_Q6_K }) {
		wmat w;
		arows r;
		make_matrix(&w, type, NI, NO, 0x5555u + (uint64_t)type + 0x100u * MT);
		make_rows(&r, type, NI, NR, 0x6666u + (uint64_t)type + 0x100u * NT);
		for (int N : { (int)NR, (int)NR - 3 }) {
			static float red[TC_STEPS][32][MT][NT][4];
			mm_args a = r.a;
			a.N = N;
			for (int wp = 0; wp < TC_STEPS; wp++)
				run_warp([&](int l) {
					threadIdx.x = l + 32 * wp;
					int g = l >> 2, t = l & 3, oa[MT], ob[MT];
					for (int mt = 0; mt < MT; mt++)
						oa[mt] = 16 * mt + g, ob[mt] = 16 * mt + g + 8;
					float acc[MT][NT][4] = {};
					tc_kq256<MT, NT>(a, w.m, wp, g, t, oa, ob, 0, acc);
					memcpy(red[wp][l], acc, sizeof acc);
				});
			int bad = 0, n = 0;
			for (int l = 0; l < 32; l++)
				for (int mt = 0; mt < MT; mt++)
					for (int nt = 0; nt < NT; nt++)
						for (int q = 0; q < 4; q++) {
							int o = 16 * mt + (l >> 2) + (q >= 2 ? 8 : 0), k = 8 * nt + 2 * (l & 3) + (q & 1);
							if (k >= N)
								continue;
							float s = 0;
							for (int wp = 0; wp < TC_STEPS; wp++)
								s += red[wp][l][mt][nt][q];
							float ref = quant_row_dot((uint32_t)type, w.raw.data() + w.row_bytes * (size_t)o,
										  r.xq.data() + r.row_bytes * (size_t)k, NI, QUANT_ISA_PORTABLE);
							bad += !same_float(s, ref);
							n++;
						}
			CHECK_EQ_INT(bad, 0);
			CHECK_EQ_INT(n, NO * N);
			printf("%s: the tensor-core product, %d x %d tiles, %d rows: %d of %d outputs differ from dot_portable\n",
			       gguf_type_name((uint32_t)type), MT, NT, N, bad, n);
		}
	}
}

/* The activation quantisers on test_cuda_engine's edge cases, a warp a block. */
static void check_act(void)
{
	enum { NB = 24, N = NB * 256 };
	std::vector<float> x(N);
	uint64_t r = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < N; i++) {
		float u = urand(&r) - 0.5f, v = (float)(u * pow(10.0, (double)((i / 256) % 13) - 6.0));
		int j = i % 256;
		switch (i / 256) {
		case 0: v = 0.f; break;
		case 1: v = j == 3 ? -2.f : j == 200 ? 2.f : u; break;
		case 2: v = j == 0 ? -127.f : (float)(j % 253) - 126.5f; break;
		case 3: v = j == 0 ? 1e-38f : j % 4 ? u * 1e-38f : 0.f; break;
		case 4: v = u * 1e-41f; break;
		case 5: v = u * 1e-36f; break;
		case 6: v = j == 7 ? 1e30f : u * 1e30f; break;
		case 7: v = j == 100 ? 3.5f : j == 0 ? -3.5f : u; break;
		default: break;
		}
		x[(size_t)i] = v;
	}
	std::vector<uint8_t> a((size_t)NB * 292), b((size_t)NB * 292);
	std::vector<int8_t> q(N);
	std::vector<float> kd(NB), d(N / 32), s1(N / 32);
	std::vector<int16_t> bs(N / 16);
	quant_act_quantize(GGUF_TENSOR_Q8_K, x.data(), a.data(), N);
	for (int sb = 0; sb < NB; sb++)
		run_warp([&](int l) {
			threadIdx.x = l + 32 * (sb % 8);
			blockIdx.x = sb / 8, blockIdx.y = 0;
			act_q8k_kernel(x.data(), N, N, q.data(), kd.data(), bs.data());
		});
	int diff = 0;
	for (int sb = 0; sb < NB; sb++) {
		uint8_t *o = b.data() + (size_t)sb * 292;
		memcpy(o, &kd[(size_t)sb], 4);
		memcpy(o + 4, &q[(size_t)sb * 256], 256);
		memcpy(o + 260, &bs[(size_t)sb * 16], 32);
		diff += memcmp(o, a.data() + (size_t)sb * 292, 292) != 0;
	}
	CHECK_EQ_INT(diff, 0);
	printf("Q8_K quantiser: %d of %d blocks differ from quant_act_quantize\n", diff, NB);
	std::vector<uint8_t> a1((size_t)N / 32 * 36);
	quant_act_quantize(GGUF_TENSOR_Q8_1, x.data(), a1.data(), N);
	for (int k = 0; k < N / 32; k++)
		run_warp([&](int l) {
			threadIdx.x = l + 32 * (k % 8);
			blockIdx.x = k / 8, blockIdx.y = 0;
			act_q81_kernel(x.data(), N, N, q.data(), d.data(), s1.data());
		});
	diff = 0;
	for (int k = 0; k < N / 32; k++) {
		uint8_t o[36];
		__half h = __float2half_rn(d[(size_t)k]), s = __float2half_rn(s1[(size_t)k]);
		memcpy(o, &h, 2);
		memcpy(o + 2, &s, 2);
		memcpy(o + 4, &q[(size_t)k * 32], 32);
		diff += memcmp(o, a1.data() + (size_t)k * 36, 36) != 0;
	}
	CHECK_EQ_INT(diff, 0);
	printf("Q8_1 quantiser: %d of %d blocks differ from quant_act_quantize\n", diff, N / 32);
}

int main()
{
	check_blocks();
	check_small();
	check_tc<1, 1>();
	check_tc<2, 2>();
	check_act();
	printf("%d checks, %d failed\n", n_checks, n_failed);
	return n_failed ? 1 : 0;
}
