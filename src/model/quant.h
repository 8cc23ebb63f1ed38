/* quant — the block-quantised weight types of GGUF files that llama.cpp's llama-quantize writes
 * for the presets Q4_0, Q4_K_M, Q5_K_M, Q6_K, Q8_0 and IQ4_XS (and their fallbacks for rows
 * that are not a multiple of 256): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
 * IQ4_XS. Per type: decoding to fp32 (the same float operations in the same order as
 * ggml-quants.c's reference dequantize_row_*, so the same floats), a quantiser of sixi's own
 * (for the GGUF writer; simpler than llama.cpp's search, same format), the activation format
 * llama.cpp's CPU backend pairs with it (Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1,
 * Q8_K for the 256-element types) and the fused dot product of one weight row with one
 * quantised activation row, portable, AVX2, and AVX-512 VNNI for the K-quants (chosen by the
 * caller).
 *
 * Block layouts are those of ggml-common.h (little-endian, packed, no padding); fp16 scales
 * are IEEE halves. Does not: own memory (every buffer is the caller's), check shapes (callers
 * check n against quant_block_elems at load), or handle the other ggml types (Q2_K, Q3_K, the
 * IQ1-IQ3 grids, MXFP4), which are refused at load with a message.
 * Precision: dot products sum exact integer products per block and accumulate in fp32, as
 * llama.cpp's vec_dot kernels do; results differ from llama.cpp's only in fp32 summation order. */
#ifndef SIXI_MODEL_QUANT_H
#define SIXI_MODEL_QUANT_H
#include <stddef.h>
#include <stdint.h>

/* Elements and bytes of one block of a ggml type (0 for types this module does not know). */
int quant_block_elems(uint32_t type);
int quant_block_bytes(uint32_t type);
/* True for the block types above (the ones with a dequantiser, quantiser and dot product). */
int quant_type_is_block(uint32_t type);
/* The activation type llama.cpp's CPU backend quantises x to for weights of `type`
 * (GGUF_TENSOR_Q8_0, _Q8_1 or _Q8_K), or 0 for a type that is not a block type. */
uint32_t quant_act_type(uint32_t type);

/* Decode n elements (n a multiple of the block) of `type` into fp32: bit for bit what
 * llama.cpp's reference dequantize_row_* gives. */
void quant_row_dequantize(uint32_t type, const void *row, float *out, int n);
/* Encode n floats (n a multiple of the block) as `type` (block types, and Q8_1/Q8_K). */
void quant_row_quantize(uint32_t type, const float *x, void *out, int n);

/* Quantise an activation row of n floats to act (Q8_0, Q8_1 or Q8_K) as llama.cpp's x86 CPU
 * backend does (quantize_row_q8_0/q8_1 round to nearest even with 127/amax; q8_K is the
 * reference). */
void quant_act_quantize(uint32_t act, const float *x, void *out, int n);

/* Kernel levels: the caller picks one the CPU has (quant_isa_best says which it has).
 * AVX512 needs AVX-512 BW, VL and VNNI and is used for Q4_K, Q5_K and Q6_K (the other types
 * take the AVX2 kernels at that level). */
enum { QUANT_ISA_PORTABLE = 0, QUANT_ISA_AVX2 = 1, QUANT_ISA_AVX512 = 2 };
int quant_isa_best(void);

/* Sum over the row of w (n elements of `type`) times xq (the same n, quantised with
 * quant_act_quantize(quant_act_type(type))), with the kernels of level isa. */
float quant_row_dot(uint32_t type, const void *w, const void *xq, int n, int isa);
/* The same for n_rows activation rows, xq_row_bytes apart, into out[0..n_rows): each weight
 * block is read once for up to 4 rows. out[r] is bit for bit quant_row_dot of row r at the
 * same level (levels differ from each other in fp32 summation order only). */
void quant_rows_dot(uint32_t type, const void *w, const void *xq, size_t xq_row_bytes, int n_rows, int n,
		    float *out, int isa);

/* Weights in groups of QUANT_GROUP_ROWS rows (Q4_K and Q6_K): the rows of a group are
 * interleaved block by block, 4 bytes of each row in turn, so that one 32-byte load holds 4
 * weights of each of the 8 rows and one multiply against 4 broadcast activation bytes feeds 8
 * outputs at once (the idea of llama.cpp's repacked Q4_K_8x8 CPU layout; this layout is its
 * own). Per super-block of a group: Q4_K: 8 fp16 d, 8 fp16 dmin, the 6-bit scales and mins
 * as bytes, then the nibbles (1184 bytes); Q6_K: low nibbles, high bit pairs, the int8
 * scales, 8 fp16 d and padding (1696 bytes, 8 x 210 + 16). The integer sums per block are the row kernels';
 * only the fp32 order differs (each output is one lane, no horizontal sum). */
#define QUANT_GROUP_ROWS 8
/* True for the types with a grouped layout (Q4_K, Q6_K). */
int quant_type_groups(uint32_t type);
/* Bytes of one group of rows of n elements (n a multiple of 256). */
size_t quant_group_bytes(uint32_t type, int n);
/* Pack n_rows (1..8) rows of n elements, row_bytes apart, into one group; missing rows are
 * zero (their outputs are 0). */
void quant_group_pack(uint32_t type, const void *rows, size_t row_bytes, int n_rows, int n, void *group);
/* Row i of a group back in the plain layout (bit for bit the packed row). */
void quant_group_row(uint32_t type, const void *group, int i, int n, void *row);
/* out[r * 8 + i] = row i of the group times activation row r (n_rows rows, xq_row_bytes
 * apart, quantised as Q8_K), for all 8 rows of the group. A row's result does not depend on
 * n_rows; the portable level gives quant_row_dot's portable result bit for bit. */
void quant_group_dot(uint32_t type, const void *group, const void *xq, size_t xq_row_bytes, int n_rows, int n,
		     float *out, int isa);
#endif
