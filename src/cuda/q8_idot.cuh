/* q8_idot — the exact integer dot of two Q8 blocks on the GPU, shared by the matrix kernels
 * (cuda_model.cu, kq_kernels.cuh) and the CPU emulation test of them (test_cuda_kq_emul.cpp,
 * which supplies __dp4a). */
#ifndef SIXI_CUDA_Q8_IDOT_CUH
#define SIXI_CUDA_Q8_IDOT_CUH

/* The exact integer dot of two blocks of 32 int8 (8 words each), 4 products an instruction. */
__device__ __forceinline__ int q8_idot(const int4 &wl, const int4 &wh, const int4 &xl, const int4 &xh)
{
	int s = __dp4a(wl.x, xl.x, 0);
	s = __dp4a(wl.y, xl.y, s);
	s = __dp4a(wl.z, xl.z, s);
	s = __dp4a(wl.w, xl.w, s);
	s = __dp4a(wh.x, xh.x, s);
	s = __dp4a(wh.y, xh.y, s);
	s = __dp4a(wh.z, xh.z, s);
	return __dp4a(wh.w, xh.w, s);
}

#endif
