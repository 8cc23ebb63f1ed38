/* kernels — the CPU matrix work of the model: weight-row decoding (F32, F16, BF16 and the
 * block types of quant.h), dot products and the batched matrix-vector product, each with a
 * portable path and an AVX2/FMA path chosen at run time, plus a small pthread pool that splits
 * work by rows. Block weights are not widened: the pass's activations are quantised once per
 * call as llama.cpp pairs with the type (Q8_0, Q8_1, Q8_K) and quant.h's fused dot products
 * read the packed weights.
 *
 * Does not: own weights (they are borrowed: the model's huge-page copy or a file mapping),
 * allocate per call (per-thread buffers grow to the largest call seen), or know about layers. Precision: float weights are widened to fp32 and every sum is fp32; block weights
 * meet 8-bit activations in exact integer sums per block, accumulated in fp32.
 * Workload: one matmul per projection per pass; a pass holds 1..a few hundred rows, so the
 * kernel reads each weight row once and applies it to every row of the pass.
 * Ownership: arguments are borrowed; kern_pool_create's result is the caller's to destroy. */
#ifndef SIXI_MODEL_KERNELS_H
#define SIXI_MODEL_KERNELS_H
#include <stddef.h>
#include <stdint.h>

/* Weight matrix in ggml layout: n_out rows of n_in elements of `type` (enum gguf_tensor_type),
 * rows `row_bytes` apart; or, with `grouped`, the rows in groups of 8 (quant.h's grouped
 * layout, kern_mat_group), each group quant_group_bytes(type, n_in) bytes, the last one
 * padded with zero rows (row_bytes is then still that of one plain row). */
struct kern_mat {
	const void *data;
	uint32_t type;
	int n_in;
	int n_out;
	size_t row_bytes;
	int grouped;
};

/* Bytes of w in the grouped layout, or 0 where it has none (types other than Q4_K and Q6_K,
 * or a CPU without AVX2, where grouped weights would only be slower). */
size_t kern_mat_group_bytes(const struct kern_mat *w);
/* Write w's rows grouped into dst (kern_mat_group_bytes(w) bytes) and point w at them. */
void kern_mat_group(struct kern_mat *w, void *dst);

struct kern_pool;

/* n_threads <= 0: one thread per online CPU. isa: NULL or "auto" picks the fastest the CPU
 * has (AVX-512 matrix tiles where 512-bit FMAs run at full width, else AVX2/FMA), "avx512"
 * asks for the AVX-512 tiles wherever the CPU has them, "avx2" stops at AVX2, "portable"
 * forces the plain C path (tests compare them). Block weights (quant.h) take the AVX-512 VNNI
 * kernels with the AVX-512 tiles (when the CPU has VNNI), else AVX2; grouped weights take the
 * 256-bit VNNI group kernels wherever the CPU has VNNI, unless "avx2" or "portable" was asked
 * for (they give the AVX2 group kernels' results bit for bit). NULL and errno on failure. */
struct kern_pool *kern_pool_create(int n_threads, const char *isa);
void kern_pool_destroy(struct kern_pool *p);
int kern_pool_threads(const struct kern_pool *p);
/* "avx512", "avx2" or "portable": the matmul path. */
const char *kern_pool_isa(const struct kern_pool *p);

/* Run fn(ctx, i, n) for i in [0, n) on the pool's threads (n <= threads); returns when all end. */
void kern_pool_run(struct kern_pool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx, int n);

/* y[r][o] = sum_i W[o][i] * x[r][i] for r < n_rows; x rows are x_stride floats apart,
 * y rows y_stride floats apart. Splits the output rows over the pool. */
void kern_matmul(struct kern_pool *p, const struct kern_mat *w, const float *x, int x_stride, int n_rows,
		 float *y, int y_stride);

/* Up to KERN_MATMUL_MAX products of the same x in one split over the pool (the projections
 * that read the same activations): y[i] = W[i] x as kern_matmul computes it, bit for bit,
 * with the tiles of all the matrices shared evenly among the threads. Every w[i]->n_in is
 * the same. More than KERN_MATMUL_MAX matrices are done in several splits. */
#define KERN_MATMUL_MAX 8
void kern_matmul_n(struct kern_pool *p, int n_mat, const struct kern_mat *const *w, const float *x, int x_stride,
		   int n_rows, float *const *y, const int *y_stride);

/* Decode one weight row (n elements of `type`) into fp32. */
void kern_row_to_f32(uint32_t type, const void *row, float *out, int n);
/* True for the weight types the kernels decode. */
int kern_type_supported(uint32_t type);

/* Vector primitives for the per-sequence parts (attention, delta rule): AVX2/FMA when the
 * CPU has it, else portable. kern_dot returns a·b; kern_axpy does y += a x. */
float kern_dot(const float *a, const float *b, int n);
void kern_axpy(float *y, float a, const float *x, int n);
/* Activations over arrays, with an AVX2 exp (Cephes' polynomial, relative error about 1e-7)
 * when the CPU has it: kern_silu_mul: y[i] = silu(y[i]) * (m ? m[i] : 1);
 * kern_mul_silu: y[i] *= silu(z[i]); kern_exp_shift: x[i] = exp(x[i] - shift), returns the sum. */
void kern_silu_mul(float *y, const float *m, int n);
void kern_mul_silu(float *y, const float *z, int n);
float kern_exp_shift(float *x, float shift, int n);
/* IEEE half and bfloat16 to fp32 and back (round to nearest even). */
float kern_f16_to_f32(uint16_t h);
uint16_t kern_f32_to_f16(float f);
float kern_bf16_to_f32(uint16_t h);
uint16_t kern_f32_to_bf16(float f);
/* Quantize n floats (n % 32 == 0) to Q8_0 blocks (2-byte f16 scale + 32 int8). */
void kern_quantize_q8_0(const float *x, void *out, int n);
#endif
