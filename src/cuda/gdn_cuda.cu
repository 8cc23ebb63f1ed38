/* gdn_cuda — see gdn_cuda.h. A group of SUB lanes owns C value columns of one head: lane `sub`
 * of the group holds elements [sub*E, sub*E + E) (E = d_k / SUB) of each of its columns'
 * d_k-vectors, so the state is read once, kept in registers through every replayed and new row,
 * and written at most once. The two dot products of a row (S k for the update, S q for the
 * output) are sums over the group's lanes by xor shuffles: log2(SUB) shuffles each, shared by
 * the 32 / SUB groups of a warp.
 *
 * Why SUB = 16 by default (measured on an H200 at the 27B shape, reports/perf/spec-cuda-h200.txt):
 * with one column per warp (SUB = 32, the first version, kept as `lanes = 32`) every column costs
 * 2 x 5 shuffles per row; 16 lanes a column (2 x 4 shuffles for 2 x 4 columns) made multi-row
 * steps ~22 % faster at the same one-row decode bandwidth (92-93 % of a copy). Fewer lanes a
 * column need more registers a thread (8 lanes: 128), and the lower occupancy then costs more
 * than the shuffles saved: one-row decode fell to 75 % of a copy. Smaller heads (d_k 64, 32:
 * small test models) keep E = 4, one float4 a lane a column. */
#include "cuda/gdn_cuda.h"

#include <cuda_runtime.h>

#include <stdlib.h>

#define WARPS 4 /* warps per block */

template <int SUB> __device__ __forceinline__ float group_sum(float x)
{
#pragma unroll
	for (int o = SUB / 2; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

template <int DK, int SUB, int C> __global__ void __launch_bounds__(32 * WARPS) gdn_rows_kernel(struct gdn_cuda_args a)
{
	constexpr int E = DK / SUB, E4 = E / 4, G = 32 / SUB;
	static_assert(E4 >= 1 && E % 4 == 0, "a lane holds whole float4s");
	/* a programmatic launch (a.pdl): wait for the previous kernel, then let the next start */
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
	const int ns = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int grp = lane / SUB, sub = lane % SUB, kh = h % a.H_k, dv = a.d_v;
	const int wcol0 = (blockIdx.x * WARPS + warp) * G * C;
	if (wcol0 >= dv) /* whole warps only: the shuffles need every lane */
		return;
	const int col0 = wcol0 + grp * C;
	const int sq = a.seq ? a.seq[ns] : ns;             /* state and log index */
	const int T = a.rows ? a.rows[ns] : a.T;            /* new rows */
	const size_t r0 = a.row0 ? (size_t)a.row0[ns] : (size_t)ns * a.T;
	const size_t qs = a.q_stride ? (size_t)a.q_stride : (size_t)a.H_k * DK;
	const size_t vs = a.v_stride ? (size_t)a.v_stride : (size_t)a.H_v * dv;
	const size_t gs = a.gb_stride ? (size_t)a.gb_stride : (size_t)a.H_v;
	const size_t os = a.o_stride ? (size_t)a.o_stride : (size_t)a.H_v * dv;
	const bool wb = a.wb ? a.wb[ns] != 0 : a.write_back != 0;
	float *__restrict__ st = a.state + ((size_t)sq * a.H_v + h) * (size_t)dv * DK;
	float *__restrict__ go = a.o;
	float4 s[C][E4];
#pragma unroll
	for (int c = 0; c < C; c++)
#pragma unroll
		for (int j = 0; j < E4; j++)
			s[c][j] = reinterpret_cast<const float4 *>(st + (size_t)(col0 + c) * DK + sub * E)[j];
	const int c0 = a.kept[ns], n = c0 + T;
	for (int t = 0; t < n; t++) {
		const float *kp, *vp;
		float gv, bv;
		const bool fresh = t >= c0 && a.nk != nullptr; /* a new row read from the pass's rows */
		const size_t r = r0 + (size_t)(t - c0);        /* its row in q, o and the new inputs */
		if (fresh) {
			kp = a.nk + r * qs + (size_t)kh * DK;
			vp = a.nv + r * vs + (size_t)h * dv;
			gv = __ldg(a.ng + r * gs + h);
			bv = __ldg(a.nbeta + r * gs + h);
		} else {
			const size_t row = (size_t)sq * a.L + t;
			kp = a.k + (row * a.H_k + kh) * DK;
			vp = a.v + (row * a.H_v + h) * dv;
			gv = __ldg(a.g + row * a.H_v + h);
			bv = __ldg(a.beta + row * a.H_v + h);
		}
		float4 k[E4];
#pragma unroll
		for (int j = 0; j < E4; j++)
			k[j] = __ldg(reinterpret_cast<const float4 *>(kp + sub * E) + j);
		const float alpha = expf(gv), beta = bv;
		const float *v = vp + col0;
		const bool out = t >= c0 && go != nullptr;
		float4 q[E4];
		float *o = nullptr;
		if (out) {
#pragma unroll
			for (int j = 0; j < E4; j++)
				q[j] = __ldg(reinterpret_cast<const float4 *>(a.q + r * qs + (size_t)kh * DK + sub * E) + j);
			o = go + r * os + (size_t)h * dv + col0;
		}
#pragma unroll
		for (int c = 0; c < C; c++) {
			float p = 0.f;
#pragma unroll
			for (int j = 0; j < E4; j++)
				p += s[c][j].x * k[j].x + s[c][j].y * k[j].y + s[c][j].z * k[j].z + s[c][j].w * k[j].w;
			const float u = beta * (__ldg(v + c) - alpha * group_sum<SUB>(p));
#pragma unroll
			for (int j = 0; j < E4; j++) {
				s[c][j].x = fmaf(u, k[j].x, alpha * s[c][j].x);
				s[c][j].y = fmaf(u, k[j].y, alpha * s[c][j].y);
				s[c][j].z = fmaf(u, k[j].z, alpha * s[c][j].z);
				s[c][j].w = fmaf(u, k[j].w, alpha * s[c][j].w);
			}
			if (out) {
				float e = 0.f;
#pragma unroll
				for (int j = 0; j < E4; j++)
					e += s[c][j].x * q[j].x + s[c][j].y * q[j].y + s[c][j].z * q[j].z + s[c][j].w * q[j].w;
				e = group_sum<SUB>(e);
				if (sub == 0)
					o[c] = a.scale * e;
			}
		}
		if (a.ring && t >= c0) {
			float *rs = a.ring + (((size_t)(t - c0) * gridDim.z + ns) * a.H_v + h) * (size_t)dv * DK;
#pragma unroll
			for (int c = 0; c < C; c++)
#pragma unroll
				for (int j = 0; j < E4; j++)
					reinterpret_cast<float4 *>(rs + (size_t)(col0 + c) * DK + sub * E)[j] = s[c][j];
		}
	}
	if (wb) {
#pragma unroll
		for (int c = 0; c < C; c++)
#pragma unroll
			for (int j = 0; j < E4; j++)
				reinterpret_cast<float4 *>(st + (size_t)(col0 + c) * DK + sub * E)[j] = s[c][j];
	}
}

template <int DK, int SUB, int C> static int launch(const struct gdn_cuda_args *a, cudaStream_t stream)
{
	const int per_block = WARPS * (32 / SUB) * C;
	if (a->d_v % ((32 / SUB) * C))
		return (int)cudaErrorInvalidValue;
	dim3 grid((unsigned)((a->d_v + per_block - 1) / per_block), (unsigned)a->H_v, (unsigned)a->ns);
	cudaLaunchAttribute at = {};
	at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at.val.programmaticStreamSerializationAllowed = 1;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = grid;
	cfg.blockDim = dim3(32 * WARPS);
	cfg.stream = stream;
	cfg.attrs = &at;
	cfg.numAttrs = a->pdl ? 1 : 0;
	return (int)cudaLaunchKernelEx(&cfg, gdn_rows_kernel<DK, SUB, C>, *a);
}

#include "cuda/gdn_chunk.cuh"

/* SIXI_CUDA_GDN_CHUNK=N: the chunked kernel for steps of N or more new rows (0, the default:
 * never). On an H100 at the 27B shape it is faster from 6 new rows after as many kept ones
 * (reports/perf/spec-chunk-h100.txt); off by default because a row's result then depends on
 * the chunk it falls in (rounding), so rollback is no longer bit-exact against recomputation. */
static int chunk_env(void)
{
	static int v = -1;
	if (v < 0) {
		const char *e = getenv("SIXI_CUDA_GDN_CHUNK");
		int x = e ? atoi(e) : 0;
		v = x > 0 ? x : 0;
	}
	return v;
}

static bool use_chunk(const struct gdn_cuda_args *a)
{
	if (a->ring || (a->d_k != 0 && a->d_k != 128) || a->d_v != 128 || a->chunk < 0)
		return false;
	const int thr = a->chunk > 0 ? a->chunk : chunk_env();
	const int rows = a->rows ? a->max_rows : a->T;
	return thr > 0 && rows >= thr;
}

extern "C" int gdn_cuda_rows(const struct gdn_cuda_args *a, void *stream)
{
	if (a->H_v % a->H_k || a->ns <= 0 || a->ns > 65535 || a->H_v > 65535)
		return (int)cudaErrorInvalidValue;
	cudaStream_t s = (cudaStream_t)stream;
	if (use_chunk(a)) {
		const bool split = a->chunk_tf32 == 0;
		switch (a->chunk_rows) {
		case 16:
			return split ? launch_chunk<16, true>(a, s) : launch_chunk<16, false>(a, s);
		case 0:
		case 32:
			return split ? launch_chunk<32, true>(a, s) : launch_chunk<32, false>(a, s);
		case 64:
			return split ? launch_chunk<64, true>(a, s) : launch_chunk<64, false>(a, s);
		default:
			return (int)cudaErrorInvalidValue;
		}
	}
	if (a->d_k == 64)
		return launch<64, 16, 4>(a, s);
	if (a->d_k == 32)
		return launch<32, 8, 4>(a, s);
	if (a->d_k != 0 && a->d_k != 128)
		return (int)cudaErrorInvalidValue;
	switch (a->lanes) {
	case 8:
		return launch<128, 8, 4>(a, s);
	case 4:
		return launch<128, 4, 2>(a, s);
	case 0:
	case 16:
		return a->cols == 1 ? launch<128, 16, 1>(a, s) : launch<128, 16, 4>(a, s);
	case 32:
		return launch<128, 32, 8>(a, s);
	default:
		return (int)cudaErrorInvalidValue;
	}
}
