/* gdn_cuda — see gdn_cuda.h. One warp owns 8 value columns of one head: lane l holds elements
 * [4l, 4l+4) of each column's d_k-vector (one float4 load per column, 512 contiguous bytes a
 * warp), so the state is read once, kept in registers through every replayed and new row, and
 * written at most once. Dot products are warp reductions by shuffles. */
#include "cuda/gdn_cuda.h"

#include <cuda_runtime.h>

#define DK 128
#define COLS 8  /* value columns per warp */
#define WARPS 4 /* warps per block: 32 columns */

__device__ __forceinline__ float warp_sum(float x)
{
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

__device__ __forceinline__ float dot4(float4 a, float4 b)
{
	return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

__global__ void __launch_bounds__(32 * WARPS) gdn_rows_kernel(struct gdn_cuda_args a)
{
	const int ns = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int kh = h % a.H_k, col0 = (blockIdx.x * WARPS + warp) * COLS, dv = a.d_v;
	float *st = a.state + ((size_t)ns * a.H_v + h) * (size_t)dv * DK;
	float4 s[COLS];
#pragma unroll
	for (int c = 0; c < COLS; c++)
		s[c] = reinterpret_cast<const float4 *>(st + (size_t)(col0 + c) * DK)[lane];
	const int c0 = a.kept[ns], n = c0 + a.T;
	for (int t = 0; t < n; t++) {
		const size_t row = (size_t)ns * a.L + t;
		const float4 k = reinterpret_cast<const float4 *>(a.k + (row * a.H_k + kh) * DK)[lane];
		const float alpha = expf(a.g[row * a.H_v + h]), beta = a.beta[row * a.H_v + h];
		const float *v = a.v + (row * a.H_v + h) * dv + col0;
		const bool out = t >= c0 && a.o != nullptr;
		float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
		float *o = nullptr;
		if (out) {
			const size_t r = (size_t)ns * a.T + (t - c0);
			q = reinterpret_cast<const float4 *>(a.q + (r * a.H_k + kh) * DK)[lane];
			o = a.o + (r * a.H_v + h) * dv + col0;
		}
#pragma unroll
		for (int c = 0; c < COLS; c++) {
			float u = beta * (v[c] - alpha * warp_sum(dot4(s[c], k)));
			s[c].x = fmaf(u, k.x, alpha * s[c].x);
			s[c].y = fmaf(u, k.y, alpha * s[c].y);
			s[c].z = fmaf(u, k.z, alpha * s[c].z);
			s[c].w = fmaf(u, k.w, alpha * s[c].w);
			if (out) {
				float e = warp_sum(dot4(s[c], q));
				if (lane == 0)
					o[c] = a.scale * e;
			}
		}
		if (a.ring && t >= c0) {
			float *rs = a.ring + (((size_t)(t - c0) * gridDim.z + ns) * a.H_v + h) * (size_t)dv * DK;
#pragma unroll
			for (int c = 0; c < COLS; c++)
				reinterpret_cast<float4 *>(rs + (size_t)(col0 + c) * DK)[lane] = s[c];
		}
	}
	if (a.write_back) {
#pragma unroll
		for (int c = 0; c < COLS; c++)
			reinterpret_cast<float4 *>(st + (size_t)(col0 + c) * DK)[lane] = s[c];
	}
}

extern "C" int gdn_cuda_rows(const struct gdn_cuda_args *a, void *stream)
{
	if (a->d_v % (COLS * WARPS) || a->H_v % a->H_k || a->ns <= 0 || a->ns > 65535 || a->H_v > 65535)
		return (int)cudaErrorInvalidValue;
	dim3 grid((unsigned)(a->d_v / (COLS * WARPS)), (unsigned)a->H_v, (unsigned)a->ns);
	gdn_rows_kernel<<<grid, 32 * WARPS, 0, (cudaStream_t)stream>>>(*a);
	return (int)cudaGetLastError();
}
