/* test_gdn_chunk — the chunked GDN kernel (src/cuda/gdn_chunk.cuh) against the row-by-row kernel
 * (gdn_cuda.cu) and the CPU recurrence (gdn_rule_rows), on small random shapes: 3 sequences,
 * H_k 2, H_v 4, d_k = d_v = 128. For new-row counts W = 4, 8, 16, 17, 32, 64 and chunk sizes
 * 16, 32, 64, a log step (kept rows replayed from the log: 0, W/2 and W by sequence) runs with and
 * without write-back; the outputs and the written state must lie within BOUND of the CPU's
 * (max abs difference over the largest magnitude), and a step without write-back must leave
 * the state bit for bit. One engine-style step (new rows from pass buffers, per-sequence rows,
 * seq and wb maps) runs too. A negative control (the CPU recurrence with the decay dropped)
 * must miss the bound. Inputs: keys and queries L2-normalised, v in [-2, 2], state in [-2, 2],
 * g = log u with u in [0.3, 1) and one row in 8 at g = -8, beta in (0, 1). Exits 77 without a GPU. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "model/gdn.h"
}
#include "cuda/gdn_cuda.h"

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "test_gdn_chunk: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), \
				__LINE__);                                                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static const int NSQ = 3, HK = 2, HV = 4, D = 128;
static const double BOUND = 1e-5, BOUND_TF32 = 1e-2; /* split TF32; plain TF32 (chunk_tf32) */

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double urand(void) /* [0, 1) */
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

static void fill(float *p, size_t n, double lo, double hi)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(lo + (hi - lo) * urand());
}

static void unit_rows(float *p, size_t rows)
{
	for (size_t r = 0; r < rows; r++) {
		float *x = p + r * D;
		double s = 0;
		for (int i = 0; i < D; i++)
			x[i] = (float)(urand() - 0.5), s += (double)x[i] * x[i];
		for (int i = 0; i < D; i++)
			x[i] = (float)(x[i] / sqrt(s));
	}
}

struct host {
	int L, T;                 /* log rows per sequence, new rows */
	float *state, *k, *v, *g, *beta, *q; /* layouts of gdn_cuda.h */
	int kept[3];
};

static float *dev(const float *h, size_t n)
{
	float *d;
	CK(cudaMalloc(&d, n * 4));
	CK(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
	return d;
}

static size_t n_state(void) { return (size_t)NSQ * HV * D * D; }

/* CPU: o [NSQ][T][HV][D] and the state after every row; decay 0 drops the gates */
static void cpu_ref(const struct host *x, float *o, float *st, int decay)
{
	float scale = 1.0f / sqrtf((float)D);
	memcpy(st, x->state, n_state() * 4);
	float *g = (float *)malloc(sizeof(float) * (size_t)NSQ * x->L * HV), *dummy = (float *)malloc(sizeof(float) * D);
	for (size_t i = 0; i < (size_t)NSQ * x->L * HV; i++)
		g[i] = decay ? x->g[i] : 0.f;
	for (int s = 0; s < NSQ; s++)
		for (int h = 0; h < HV; h++) {
			int kh = h % HK, kept = x->kept[s];
			float *sh = st + ((size_t)s * HV + h) * D * D;
			const float *k = x->k + (size_t)s * x->L * HK * D + kh * D, *v = x->v + (size_t)s * x->L * HV * D + h * D;
			const float *gg = g + (size_t)s * x->L * HV + h, *b = x->beta + (size_t)s * x->L * HV + h;
			struct gdn_rows rr = { kept, k, k, v, HK * D, HK * D, HV * D, gg, b, HV, dummy, 0 };
			gdn_rule_rows(sh, D, D, scale, &rr);
			struct gdn_rows nr = { x->T, x->q + (size_t)s * x->T * HK * D + kh * D, k + (size_t)kept * HK * D,
					       v + (size_t)kept * HV * D, HK * D, HK * D, HV * D, gg + (size_t)kept * HV,
					       b + (size_t)kept * HV, HV, o + (size_t)s * x->T * HV * D + h * D, HV * D };
			gdn_rule_rows(sh, D, D, scale, &nr);
		}
	free(g), free(dummy);
}

static double rel_err(const float *a, const float *ref, size_t n)
{
	double e = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - ref[i]);
		if (isnan(d))
			return INFINITY; /* a row not written, or a NaN computed */
		e = fmax(e, d);
		m = fmax(m, fabs((double)ref[i]));
	}
	return e / (m > 0 ? m : 1);
}

static int failures;

static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		failures++;
	}
}

/* one GPU step on x: chunk -1 (row kernel) or 1 (chunked, chunk_rows cr); o and state back */
static void gpu_step(const struct host *x, int chunk, int cr, int tf32, int wb, float *o, float *st)
{
	size_t nk = (size_t)NSQ * x->L * HK * D, nv = (size_t)NSQ * x->L * HV * D, ng = (size_t)NSQ * x->L * HV;
	size_t nq = (size_t)NSQ * x->T * HK * D, no = (size_t)NSQ * x->T * HV * D;
	struct gdn_cuda_args a;
	memset(&a, 0, sizeof a);
	a.state = dev(x->state, n_state());
	a.k = dev(x->k, nk), a.v = dev(x->v, nv), a.g = dev(x->g, ng), a.beta = dev(x->beta, ng), a.q = dev(x->q, nq);
	CK(cudaMalloc(&a.o, no * 4));
	CK(cudaMemset(a.o, 0xff, no * 4)); /* NaN: a row not written shows */
	int *kept;
	CK(cudaMalloc(&kept, sizeof x->kept));
	CK(cudaMemcpy(kept, x->kept, sizeof x->kept, cudaMemcpyHostToDevice));
	a.kept = kept, a.ns = NSQ, a.T = x->T, a.L = x->L, a.H_k = HK, a.H_v = HV, a.d_v = D, a.d_k = D;
	a.scale = 1.0f / sqrtf((float)D), a.write_back = wb, a.chunk = chunk, a.chunk_rows = cr, a.chunk_tf32 = tf32;
	CK((cudaError_t)gdn_cuda_rows(&a, 0));
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(o, a.o, no * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(st, a.state, n_state() * 4, cudaMemcpyDeviceToHost));
	cudaFree(a.state), cudaFree((void *)a.k), cudaFree((void *)a.v), cudaFree((void *)a.g);
	cudaFree((void *)a.beta), cudaFree((void *)a.q), cudaFree(a.o), cudaFree(kept);
}

static void make(struct host *x, int W)
{
	x->T = W;
	x->kept[0] = 0, x->kept[1] = W / 2, x->kept[2] = W;
	x->L = 2 * W;
	size_t nk = (size_t)NSQ * x->L * HK, ng = (size_t)NSQ * x->L * HV;
	x->state = (float *)malloc(n_state() * 4);
	x->k = (float *)malloc(nk * D * 4), x->v = (float *)malloc(ng * D * 4);
	x->g = (float *)malloc(ng * 4), x->beta = (float *)malloc(ng * 4);
	x->q = (float *)malloc((size_t)NSQ * W * HK * D * 4);
	fill(x->state, n_state(), -2, 2);
	unit_rows(x->k, nk);
	fill(x->v, ng * D, -2, 2);
	for (size_t i = 0; i < ng; i++)
		x->g[i] = urand() < 0.125 ? -8.f : logf((float)(0.3 + 0.7 * urand()));
	fill(x->beta, ng, 0.01, 1);
	unit_rows(x->q, (size_t)NSQ * W * HK);
}

static void unmake(struct host *x)
{
	free(x->state), free(x->k), free(x->v), free(x->g), free(x->beta), free(x->q);
}

/* the engine's form: new rows in pass buffers [rows][H_k d | H_k d | H_v d] and [rows][2 H_v],
 * per-sequence rows, a seq map (launch order reversed) and per-sequence write-back */
static void engine_case(void)
{
	struct host x;
	make(&x, 24);
	int rows[3] = { 24, 5, 17 }, kept[3] = { 3, 0, 20 }, wb[3] = { 1, 0, 1 };
	/* the log keeps kept rows; the new rows of sequence s are its log rows kept.. (copied out) */
	int w2 = 2 * HK * D + HV * D, N = rows[0] + rows[1] + rows[2];
	float *a2 = (float *)calloc((size_t)N * w2, 4), *gb = (float *)calloc((size_t)N * 2 * HV, 4);
	int row0[3], seq[3], kp[3], rw[3], wbs[3];
	for (int i = 0, r = 0; i < 3; i++) { /* launch index i holds sequence 2 - i */
		int s = 2 - i;
		seq[i] = s, row0[i] = r, kp[i] = kept[s], rw[i] = rows[s], wbs[i] = wb[s];
		for (int t = 0; t < rows[s]; t++, r++) {
			size_t lr = (size_t)s * x.L + kept[s] + t;
			for (int hk = 0; hk < HK; hk++) {
				memcpy(a2 + (size_t)r * w2 + hk * D, x.q + ((size_t)s * x.T + (t % x.T)) * HK * D + hk * D, D * 4);
				memcpy(a2 + (size_t)r * w2 + (HK + hk) * D, x.k + (lr * HK + hk) * D, D * 4);
			}
			memcpy(a2 + (size_t)r * w2 + 2 * HK * D, x.v + lr * HV * D, (size_t)HV * D * 4);
			memcpy(gb + (size_t)r * 2 * HV, x.g + lr * HV, HV * 4);
			memcpy(gb + (size_t)r * 2 * HV + HV, x.beta + lr * HV, HV * 4);
		}
	}
	/* CPU: per sequence, replay kept then rows new rows (queries as copied) */
	float scale = 1.0f / sqrtf((float)D);
	float *st = (float *)malloc(n_state() * 4), *o_cpu = (float *)calloc((size_t)N * HV * D, 4), *dummy = (float *)malloc(D * 4);
	memcpy(st, x.state, n_state() * 4);
	for (int i = 0; i < 3; i++) {
		int s = seq[i];
		for (int h = 0; h < HV; h++) {
			int kh = h % HK;
			float *sh = st + ((size_t)s * HV + h) * D * D;
			const float *k = x.k + (size_t)s * x.L * HK * D + kh * D, *v = x.v + (size_t)s * x.L * HV * D + h * D;
			const float *g = x.g + (size_t)s * x.L * HV + h, *b = x.beta + (size_t)s * x.L * HV + h;
			struct gdn_rows rr = { kp[i], k, k, v, HK * D, HK * D, HV * D, g, b, HV, dummy, 0 };
			gdn_rule_rows(sh, D, D, scale, &rr);
			const float *pr = a2 + (size_t)row0[i] * w2;
			struct gdn_rows nr = { rw[i], pr + kh * D, pr + (HK + kh) * D, pr + 2 * HK * D + h * D, w2, w2, w2,
					       gb + (size_t)row0[i] * 2 * HV + h, gb + (size_t)row0[i] * 2 * HV + HV + h, 2 * HV,
					       o_cpu + (size_t)row0[i] * HV * D + h * D, HV * D };
			gdn_rule_rows(sh, D, D, scale, &nr);
		}
	}
	for (int s = 0; s < 3; s++)
		if (!wb[s])
			memcpy(st + (size_t)s * HV * D * D, x.state + (size_t)s * HV * D * D, (size_t)HV * D * D * 4);
	for (int chunk = -1; chunk <= 1; chunk += 2) {
		struct gdn_cuda_args a;
		memset(&a, 0, sizeof a);
		size_t nk = (size_t)NSQ * x.L * HK * D, nv = (size_t)NSQ * x.L * HV * D, ng = (size_t)NSQ * x.L * HV;
		a.state = dev(x.state, n_state());
		a.k = dev(x.k, nk), a.v = dev(x.v, nv), a.g = dev(x.g, ng), a.beta = dev(x.beta, ng);
		float *da2 = dev(a2, (size_t)N * w2), *dgb = dev(gb, (size_t)N * 2 * HV);
		a.q = da2, a.nk = da2 + HK * D, a.nv = da2 + 2 * HK * D, a.ng = dgb, a.nbeta = dgb + HV;
		a.q_stride = w2, a.v_stride = w2, a.gb_stride = 2 * HV, a.o_stride = HV * D;
		CK(cudaMalloc(&a.o, (size_t)N * HV * D * 4));
		int *ints;
		CK(cudaMalloc(&ints, sizeof(int) * 15));
		int hi[15];
		memcpy(hi, kp, 12), memcpy(hi + 3, seq, 12), memcpy(hi + 6, row0, 12), memcpy(hi + 9, rw, 12), memcpy(hi + 12, wbs, 12);
		CK(cudaMemcpy(ints, hi, sizeof hi, cudaMemcpyHostToDevice));
		a.kept = ints, a.seq = ints + 3, a.row0 = ints + 6, a.rows = ints + 9, a.wb = ints + 12;
		a.ns = 3, a.L = x.L, a.H_k = HK, a.H_v = HV, a.d_v = D, a.d_k = D, a.scale = scale;
		a.chunk = chunk, a.max_rows = 24;
		CK((cudaError_t)gdn_cuda_rows(&a, 0));
		CK(cudaDeviceSynchronize());
		float *o = (float *)malloc((size_t)N * HV * D * 4), *sg = (float *)malloc(n_state() * 4);
		CK(cudaMemcpy(o, a.o, (size_t)N * HV * D * 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(sg, a.state, n_state() * 4, cudaMemcpyDeviceToHost));
		double eo = rel_err(o, o_cpu, (size_t)N * HV * D), es = rel_err(sg, st, n_state());
		printf("engine-style step (rows 24/5/17, kept 3/0/20, seq map, wb 1/0/1), %s kernel: output error %.2e, "
		       "state error %.2e\n", chunk < 0 ? "row" : "chunked", eo, es);
		expect(eo < BOUND && es < BOUND, "engine-style step outside the bound");
		free(o), free(sg);
		cudaFree(a.state), cudaFree((void *)a.k), cudaFree((void *)a.v), cudaFree((void *)a.g);
		cudaFree((void *)a.beta), cudaFree(da2), cudaFree(dgb), cudaFree(a.o), cudaFree(ints);
	}
	free(a2), free(gb), free(st), free(o_cpu), free(dummy);
	unmake(&x);
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	static const int widths[] = { 4, 8, 16, 17, 32, 64 }, crs[] = { 16, 32, 64 };
	double worst_o = 0, worst_s = 0, worst_row = 0, worst_tf32 = 0, control = 1e30;
	for (int wi = 0; wi < 6; wi++) {
		struct host x;
		make(&x, widths[wi]);
		size_t no = (size_t)NSQ * x.T * HV * D;
		float *o_ref = (float *)malloc(no * 4), *s_ref = (float *)malloc(n_state() * 4);
		float *o_nod = (float *)malloc(no * 4), *s_nod = (float *)malloc(n_state() * 4);
		float *o_row = (float *)malloc(no * 4), *s_row = (float *)malloc(n_state() * 4);
		float *o = (float *)malloc(no * 4), *s = (float *)malloc(n_state() * 4);
		cpu_ref(&x, o_ref, s_ref, 1);
		cpu_ref(&x, o_nod, s_nod, 0);
		gpu_step(&x, -1, 0, 0, 1, o_row, s_row);
		double er = rel_err(o_row, o_ref, no);
		for (int ci = 0; ci < 3; ci++) {
			gpu_step(&x, 1, crs[ci], 0, 1, o, s);
			double eo = rel_err(o, o_ref, no), es = rel_err(s, s_ref, n_state()), ek = rel_err(o, o_row, no);
			gpu_step(&x, 1, crs[ci], 0, 0, o, s);
			double el = rel_err(o, o_ref, no);
			int same = memcmp(s, x.state, n_state() * 4) == 0;
			double ec = rel_err(o, o_nod, no);
			printf("W %2d, chunks of %2d: output error %.2e (CPU) %.2e (row kernel), state error %.2e, log step "
			       "output error %.2e, state kept %s; decay dropped: %.2e\n",
			       x.T, crs[ci], eo, ek, es, el, same ? "yes" : "NO", ec);
			worst_o = fmax(worst_o, fmax(eo, el)), worst_s = fmax(worst_s, es), worst_row = fmax(worst_row, ek);
			control = fmin(control, ec);
			expect(eo < BOUND && el < BOUND && es < BOUND && ek < BOUND, "chunked kernel outside the bound");
			expect(same, "a log step (no write-back) changed the state");
		}
		expect(er < BOUND, "row kernel outside the bound");
		gpu_step(&x, 1, 32, 1, 1, o, s);
		double to = rel_err(o, o_ref, no), ts = rel_err(s, s_ref, n_state());
		printf("W %2d, chunks of 32, plain TF32 for the state products: output error %.2e, state error %.2e\n", x.T, to, ts);
		worst_tf32 = fmax(worst_tf32, fmax(to, ts));
		expect(to < BOUND_TF32 && ts < BOUND_TF32, "plain TF32 chunked kernel outside its bound");
		free(o_ref), free(s_ref), free(o_nod), free(s_nod), free(o_row), free(s_row), free(o), free(s);
		unmake(&x);
	}
	engine_case();
	expect(control > 100 * BOUND, "negative control: dropping the decay stays within the bound");
	printf("worst: output %.2e, state %.2e (relative to the largest magnitude), chunked vs row kernel %.2e; "
	       "bound %.0e; plain TF32 %.2e (bound %.0e); negative control (no decay) %.2e\n",
	       worst_o, worst_s, worst_row, BOUND, worst_tf32, BOUND_TF32, control);
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
