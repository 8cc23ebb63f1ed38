/* perf_spec_cuda — the GDN verify kernel with in-kernel replay (src/cuda) at the 27B shape on
 * one GPU: achieved bandwidth against the device's measured copy bandwidth, time per step for
 * draft widths 1..16 in log mode (replay, no write-back) and snapshot mode (a state written
 * per row), the fold, memory of both, and agreement with the CPU kernel (gdn_rule_rows).
 *
 *   perf_spec_cuda [--seqs N] [--iters N]
 *
 * Shape: 48 GDN layers x N sequences (default 32) independent states of H_v 48 heads x
 * d_v 128 x d_k 128 fp32 (4.83 GB at 32 sequences), H_k 16. Inputs are random (keys of about
 * unit norm, g in [-0.7, 0], beta in (0, 1)). A log step replays `kept` = width rows (the
 * accepted rows of the previous step, the worst case before a fold at a log of 2(width+1))
 * then runs width + 1 new rows. Bandwidth counts the state bytes a step must move: log =
 * one read; plain decode = read + write; snapshot = read + one write per row. Times are the
 * median of --iters runs (CUDA events). A second table times the same log steps with each
 * mapping of lanes to value columns the kernel offers (gdn_cuda.h, `lanes`), and the agreement
 * check runs for every mapping. A third table times the chunked form (gdn_chunk.cuh) against the
 * row kernel for widths 1..16, 32 and 64 (the log holds up to 2 x 65 rows) beside the memory
 * floor (the state read once at the copy bandwidth), and checks it against the CPU kernel.
 * Exits 77 when no GPU is present. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "model/gdn.h"
}
#include "cuda/gdn_cuda.h"

#define CK(x)                                                                                     \
	do {                                                                                      \
		cudaError_t e_ = (x);                                                             \
		if (e_ != cudaSuccess) {                                                          \
			fprintf(stderr, "perf_spec_cuda: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), \
				__LINE__);                                                        \
			exit(1);                                                                  \
		}                                                                                 \
	} while (0)

static const int NL = 48, HK = 16, HV = 48, D = 128, WMAX = 16, WBIG = 64;

__device__ __forceinline__ float hash_uniform(size_t i, unsigned seed) /* [0, 1) */
{
	unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return (float)(x >> 40) * (1.0f / 16777216.0f);
}

/* out[i] = lo + (hi - lo) * u(i) */
__global__ void fill(float *out, size_t n, unsigned seed, float lo, float hi)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = lo + (hi - lo) * hash_uniform(i, seed);
}

/* g = log(u) for u in [0.5, 1): in [-0.69, 0] */
__global__ void fill_log(float *out, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = logf(0.5f + 0.5f * hash_uniform(i, seed));
}

static void rnd(float *p, size_t n, unsigned seed, float lo, float hi)
{
	fill<<<4096, 256>>>(p, n, seed, lo, hi);
	CK(cudaGetLastError());
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

struct bufs {
	float *state, *copy, *k, *v, *g, *beta, *q, *o, *ring;
	int *kept;
	int ns;
};

static float time_ms(struct gdn_cuda_args *a, int iters, float *state_restore_from)
{
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	float *t = (float *)malloc(sizeof(float) * (size_t)iters);
	for (int i = 0; i < iters + 1; i++) {
		CK(cudaEventRecord(e0));
		CK((cudaError_t)gdn_cuda_rows(a, 0));
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (i > 0)
			t[i - 1] = ms; /* the first is a warm-up */
		(void)state_restore_from;
	}
	qsort(t, (size_t)iters, sizeof(float), cmp_f);
	float med = t[iters / 2];
	free(t);
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return med;
}

/* CPU reference for (ns, h): replay kept rows then the T new ones with gdn_rule_rows; compare
 * outputs and (when write_back) the state. Returns the max relative error. */
static double check_head(const struct bufs *b, const float *state0, int ns, int h, int kept, int T, int L,
			 int write_back, double *max_state_err)
{
	size_t hs = (size_t)D * D;
	float *st = (float *)malloc(sizeof(float) * hs), *dummy = (float *)malloc(sizeof(float) * D);
	float *o_cpu = (float *)malloc(sizeof(float) * (size_t)T * D), *o_gpu = (float *)malloc(sizeof(float) * (size_t)T * HV * D);
	size_t nk = (size_t)L * HK * D, nv = (size_t)L * HV * D, ng = (size_t)L * HV, nq = (size_t)T * HK * D;
	float *k = (float *)malloc(sizeof(float) * nk), *v = (float *)malloc(sizeof(float) * nv);
	float *g = (float *)malloc(sizeof(float) * ng), *be = (float *)malloc(sizeof(float) * ng);
	float *q = (float *)malloc(sizeof(float) * nq);
	memcpy(st, state0, sizeof(float) * hs);
	CK(cudaMemcpy(k, b->k + (size_t)ns * nk, sizeof(float) * nk, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(v, b->v + (size_t)ns * nv, sizeof(float) * nv, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(g, b->g + (size_t)ns * ng, sizeof(float) * ng, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(be, b->beta + (size_t)ns * ng, sizeof(float) * ng, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(q, b->q + (size_t)ns * nq, sizeof(float) * nq, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(o_gpu, b->o + (size_t)ns * T * HV * D, sizeof(float) * (size_t)T * HV * D, cudaMemcpyDeviceToHost));
	int kh = h % HK;
	float scale = 1.0f / sqrtf((float)D);
	struct gdn_rows rr = { kept, k + kh * D, k + kh * D, v + h * D, HK * D, HK * D, HV * D, g + h, be + h, HV, dummy, 0 };
	gdn_rule_rows(st, D, D, scale, &rr);
	struct gdn_rows nr = { T, q + kh * D, k + (size_t)kept * HK * D + kh * D, v + (size_t)kept * HV * D + h * D,
			       HK * D, HK * D, HV * D, g + (size_t)kept * HV + h, be + (size_t)kept * HV + h, HV, o_cpu, D };
	gdn_rule_rows(st, D, D, scale, &nr);
	double err = 0, mx = 0;
	for (int t = 0; t < T; t++)
		for (int j = 0; j < D; j++) {
			double a = o_cpu[(size_t)t * D + j], c = o_gpu[((size_t)t * HV + h) * D + j];
			err = fmax(err, fabs(a - c));
			mx = fmax(mx, fabs(a));
		}
	*max_state_err = -1;
	if (write_back) {
		float *sg = (float *)malloc(sizeof(float) * hs);
		CK(cudaMemcpy(sg, b->state + ((size_t)ns * HV + h) * hs, sizeof(float) * hs, cudaMemcpyDeviceToHost));
		double se = 0, sm = 0;
		for (size_t i = 0; i < hs; i++) {
			se = fmax(se, fabs((double)sg[i] - st[i]));
			sm = fmax(sm, fabs((double)st[i]));
		}
		*max_state_err = se / (sm > 0 ? sm : 1);
		free(sg);
	}
	free(st), free(dummy), free(o_cpu), free(o_gpu), free(k), free(v), free(g), free(be), free(q);
	return err / (mx > 0 ? mx : 1);
}

/* check_head on four (sequence, head) pairs spread over the batch (the first, the last and two
 * between) after a written-back step of width w from the states in b->copy; the largest output
 * and state errors. */
static void check_pairs(const struct bufs *b, int NS, int w, int T, int L, double *worst_o, double *worst_s)
{
	size_t hs = (size_t)D * D;
	int pairs[4][2] = { { 0, 0 }, { 1, 17 }, { NS / 2, 33 }, { NS - 1, HV - 1 } };
	float *s0 = (float *)malloc(sizeof(float) * hs);
	for (int p = 0; p < 4; p++) {
		int ns = pairs[p][0], h = pairs[p][1];
		CK(cudaMemcpy(s0, b->copy + ((size_t)ns * HV + h) * hs, sizeof(float) * hs, cudaMemcpyDeviceToHost));
		double se = 0, oe = check_head(b, s0, ns, h, w, T, L, 1, &se);
		*worst_o = fmax(*worst_o, oe);
		*worst_s = fmax(*worst_s, se);
	}
	free(s0);
}


int main(int argc, char **argv)
{
	int seqs = 32, iters = 10;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seqs") && i + 1 < argc)
			seqs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: perf_spec_cuda [--seqs N] [--iters N]\n");
			return 2;
		}
	}
	if (seqs < 1 || iters < 1 || seqs * NL > 65535) {
		fprintf(stderr, "perf_spec_cuda: --seqs 1..1365 and --iters >= 1\n");
		return 2;
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	int NS = seqs * NL, L = 2 * (WBIG + 1);
	size_t hs = (size_t)D * D, state_f = (size_t)NS * HV * hs;
	double state_b = (double)state_f * 4;
	printf("device: %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
	printf("shape: %d sequences x %d GDN layers, H_k %d, H_v %d, d_k = d_v = %d, fp32: state %.2f GB\n", seqs, NL, HK,
	       HV, D, state_b / 1e9);
	struct bufs b;
	b.ns = NS;
	size_t nk = (size_t)NS * L * HK * D, nv = (size_t)NS * L * HV * D, ng = (size_t)NS * L * HV;
	size_t nq = (size_t)NS * (WBIG + 1) * HK * D, no = (size_t)NS * (WBIG + 1) * HV * D;
	CK(cudaMalloc(&b.state, state_f * 4));
	CK(cudaMalloc(&b.copy, state_f * 4));
	CK(cudaMalloc(&b.k, nk * 4));
	CK(cudaMalloc(&b.v, nv * 4));
	CK(cudaMalloc(&b.g, ng * 4));
	CK(cudaMalloc(&b.beta, ng * 4));
	CK(cudaMalloc(&b.q, nq * 4));
	CK(cudaMalloc(&b.o, no * 4));
	CK(cudaMalloc(&b.kept, sizeof(int) * (size_t)NS));
	float kr = sqrtf(3.0f / D); /* uniform in [-kr, kr): E|k|^2 = 1 */
	rnd(b.state, state_f, 1, -0.05f, 0.05f);
	rnd(b.k, nk, 2, -kr, kr);
	rnd(b.v, nv, 3, -1.f, 1.f);
	fill_log<<<4096, 256>>>(b.g, ng, 4);
	CK(cudaGetLastError());
	rnd(b.beta, ng, 5, 0.f, 1.f);
	rnd(b.q, nq, 6, -kr, kr);
	CK(cudaDeviceSynchronize());

	/* copy bandwidth: one D2D copy of the whole state */
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	float best = 1e30f;
	for (int i = 0; i < 5; i++) {
		CK(cudaEventRecord(e0));
		CK(cudaMemcpyAsync(b.copy, b.state, state_f * 4, cudaMemcpyDeviceToDevice));
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		float ms;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (i > 0 && ms < best)
			best = ms;
	}
	double copy_bw = 2 * state_b / (best * 1e-3); /* read + write */
	printf("device-to-device copy of the state: %.3f ms, %.2f TB/s (read + write counted)\n\n", best, copy_bw / 1e12);

	struct gdn_cuda_args a;
	memset(&a, 0, sizeof(a));
	a.chunk = -1; /* the row kernel, whatever SIXI_CUDA_GDN_CHUNK says, except in the chunked table */
	a.state = b.state, a.k = b.k, a.v = b.v, a.g = b.g, a.beta = b.beta, a.q = b.q, a.o = b.o;
	a.kept = b.kept, a.ns = NS, a.L = L, a.H_k = HK, a.H_v = HV, a.d_v = D, a.scale = 1.0f / sqrtf((float)D);
	int *kept_h = (int *)malloc(sizeof(int) * (size_t)NS);

	/* plain decode: one row, state read and written (the no-speculation baseline) */
	memset(kept_h, 0, sizeof(int) * (size_t)NS);
	CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
	a.T = 1, a.write_back = 1;
	CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
	float t_plain = time_ms(&a, iters, NULL);
	CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
	printf("plain decode (1 row, read + write): %.3f ms/step, %.2f TB/s = %.0f%% of copy\n", t_plain,
	       2 * state_b / (t_plain * 1e-3) / 1e12, 100.0 * (2 * state_b / (t_plain * 1e-3)) / copy_bw);

	/* the fold alone: replay `kept` rows and write back */
	printf("\n| width | rows/step | log ms/step | log TB/s (state read) | %% of copy | snapshot ms/step | snapshot TB/s | fold ms | log GB | ring GB |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	size_t ring_f = (size_t)(WMAX + 1) * state_f;
	size_t free_b = 0, total_b = 0;
	CK(cudaMemGetInfo(&free_b, &total_b));
	int ring_ok = ring_f * 4 + (1ull << 30) < free_b;
	if (ring_ok)
		CK(cudaMalloc(&b.ring, ring_f * 4));
	int widths[] = { 1, 2, 4, 8, 12, 16 };
	for (int wi = 0; wi < 6; wi++) {
		int w = widths[wi], T = w + 1;
		for (int i = 0; i < NS; i++)
			kept_h[i] = w;
		CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
		a.T = T, a.write_back = 0, a.ring = NULL, a.o = b.o;
		float tl = time_ms(&a, iters, NULL);
		double bw = state_b / (tl * 1e-3);
		/* fold: the kept rows into the base, no outputs */
		a.T = 0, a.write_back = 1, a.o = NULL;
		float tf = time_ms(&a, iters, NULL);
		CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
		float ts = -1;
		if (ring_ok) {
			memset(kept_h, 0, sizeof(int) * (size_t)NS);
			CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
			a.T = T, a.write_back = 1, a.o = b.o, a.ring = b.ring;
			ts = time_ms(&a, iters, NULL);
			a.ring = NULL;
			CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
		}
		double log_gb = (double)T * NS * ((double)HK * D + HV * D + 2.0 * HV) * 4 / 1e9;
		double ring_gb = (double)T * state_b / 1e9;
		printf("| %d | %d | %.3f | %.2f | %.0f%% | %.3f | %.2f | %.3f | %.3f | %.1f |\n", w, T, tl, bw / 1e12,
		       100.0 * bw / copy_bw, ts, ts > 0 ? (1 + T) * state_b / (ts * 1e-3) / 1e12 : 0.0, tf, log_gb, ring_gb);
	}

	/* the lanes-per-column mappings side by side, log mode */
	static const int lanes[] = { 32, 16, 8, 4 };
	printf("\n| width | rows/step | lanes 32 ms | lanes 16 ms (default) | lanes 8 ms | lanes 4 ms |\n");
	printf("|---:|---:|---:|---:|---:|---:|\n");
	for (int wi = 0; wi < 6; wi++) {
		int w = widths[wi], T = w + 1;
		for (int i = 0; i < NS; i++)
			kept_h[i] = w;
		CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
		a.T = T, a.write_back = 0, a.ring = NULL, a.o = b.o;
		printf("| %d | %d", w, T);
		for (int li = 0; li < 4; li++) {
			a.lanes = lanes[li];
			printf(" | %.3f", time_ms(&a, iters, NULL));
		}
		printf(" |\n");
	}
	a.lanes = 0;
	printf("plain decode (1 row, read + write) by mapping:");
	memset(kept_h, 0, sizeof(int) * (size_t)NS);
	CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
	for (int li = 0; li < 4; li++) {
		a.lanes = lanes[li], a.T = 1, a.write_back = 1, a.o = b.o;
		float tp = time_ms(&a, iters, NULL);
		CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
		printf(" lanes %d %.3f ms (%.0f%% of copy);", lanes[li], tp, 100.0 * (2 * state_b / (tp * 1e-3)) / copy_bw);
	}
	printf("\n");

	/* the chunked form (gdn_chunk.cuh) against the row kernel, log mode, and the memory floor:
	 * the state read once at the copy bandwidth (read + write counted), i.e. half a copy */
	a.lanes = 0, a.ring = NULL;
	double floor_ms = state_b / copy_bw * 1e3;
	printf("\nchunked (tensor cores, split TF32) against row by row, log step (kept = width, width + 1 new rows, no "
	       "write-back); floor = state read once at copy bandwidth = %.3f ms\n", floor_ms);
	printf("| width | rows/step | row ms | chunked ms (16-row chunks) | chunked ms (32) | chunked ms (64) | best / floor | row / best | plain TF32 ms (32) |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	static const int cw[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 64 };
	for (int wi = 0; wi < (int)(sizeof cw / sizeof cw[0]); wi++) {
		int w = cw[wi], T = w + 1;
		for (int i = 0; i < NS; i++)
			kept_h[i] = w;
		CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
		a.T = T, a.write_back = 0, a.o = b.o, a.chunk = -1;
		float tr = time_ms(&a, iters, NULL), tc[3], best = 1e30f;
		static const int crs[] = { 16, 32, 64 };
		for (int ci = 0; ci < 3; ci++) {
			a.chunk = 1, a.chunk_rows = crs[ci];
			tc[ci] = time_ms(&a, iters, NULL);
			best = fminf(best, tc[ci]);
		}
		a.chunk_rows = 32, a.chunk_tf32 = 1;
		float tt = time_ms(&a, iters, NULL);
		a.chunk = -1, a.chunk_rows = 0, a.chunk_tf32 = 0;
		printf("| %d | %d | %.3f | %.3f | %.3f | %.3f | %.2fx | %.2fx | %.3f |\n", w, T, tr, tc[0], tc[1], tc[2], best / floor_ms,
		       tr / best, tt);
	}
	/* chunked agreement with the CPU kernel: width 16 after 16 kept rows, written back */
	for (int ci = 0; ci < 3; ci++) {
		static const int crs[] = { 16, 32, 64 };
		int w = 16, T = w + 1;
		for (int i = 0; i < NS; i++)
			kept_h[i] = w;
		CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
		a.T = T, a.write_back = 1, a.o = b.o, a.chunk = 1, a.chunk_rows = crs[ci];
		CK((cudaError_t)gdn_cuda_rows(&a, 0));
		CK(cudaDeviceSynchronize());
		double worst_o = 0, worst_s = 0;
		check_pairs(&b, NS, w, T, L, &worst_o, &worst_s);
		printf("agreement with the CPU kernel, chunked, %d-row chunks (width 16 after 16 kept rows, 4 pairs): max |o| "
		       "error %.2e, max state error %.2e\n", crs[ci], worst_o, worst_s);
		if (!(worst_o < 1e-4 && worst_s < 1e-4)) {
			printf("FAIL: chunked GPU and CPU kernels disagree\n");
			return 1;
		}
	}
	a.chunk = -1, a.chunk_rows = 0;
	CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));

	/* agreement with the CPU kernel: width 8, kept 8, a few (sequence, head) pairs, every mapping */
	for (int li = 0; li < 4; li++) {
		a.lanes = lanes[li];
		int w = 8, T = w + 1;
		for (int i = 0; i < NS; i++)
			kept_h[i] = w;
		CK(cudaMemcpy(b.kept, kept_h, sizeof(int) * (size_t)NS, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(b.state, b.copy, state_f * 4, cudaMemcpyDeviceToDevice));
		a.T = T, a.write_back = 1, a.o = b.o, a.ring = NULL;
		CK((cudaError_t)gdn_cuda_rows(&a, 0));
		CK(cudaDeviceSynchronize());
		double worst_o = 0, worst_s = 0;
		check_pairs(&b, NS, w, T, L, &worst_o, &worst_s);
		printf("\nagreement with the CPU kernel, lanes %d (width 8 after 8 kept rows, 4 sequence/head pairs): max |o| "
		       "error %.2e, max state error %.2e (relative to the largest magnitude)\n",
		       lanes[li], worst_o, worst_s);
		if (!(worst_o < 1e-4 && worst_s < 1e-4)) {
			printf("FAIL: GPU and CPU kernels disagree\n");
			return 1;
		}
	}
	return 0;
}
