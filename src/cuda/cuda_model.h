/* cuda_model — the qwen35 and qwen35moe forward pass (model/model.h's math) on one NVIDIA GPU: weights
 * uploaded once, the per-sequence state pool (GDN states, conv windows, attention KV cache,
 * the rollback log) in device memory, and a batched pass over rows of many sequences that
 * copies back only the logits asked for. The CUDA engine (engine_cuda.h) wraps it.
 *
 * Rollback is by log only (model.h's MODEL_ROLLBACK_LOG semantics): a kept segment replays
 * its slot's kept rows on the base state inside the GDN kernel and appends its new rows to
 * the log; the base is written when the kept rows are folded into it.
 * Does not: tokenize, sample, or know the server. Plain C interface, no CUDA types, so C code
 * includes it; the implementation is cuda_model.cu.
 * Threads: one call at a time per model. Ownership: arguments are borrowed. */
#ifndef SIXI_CUDA_CUDA_MODEL_H
#define SIXI_CUDA_CUDA_MODEL_H
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cuda_model;

/* What device `dev` is: name, free and total memory. 0, or -ENODEV with "no CUDA device: why"
 * in err (no driver, no GPU, dev out of range). */
int cuda_device_query(int dev, char *name, size_t name_len, size_t *free_bytes, size_t *total_bytes, char *err,
		      size_t errlen);

/* Device-to-device copy bandwidth of device dev (bytes read + written per second, best of
 * several 1 GiB copies): the memory ceiling benchmarks compare with. 0 or -ENODEV/-ENOMEM. */
int cuda_device_copy_bandwidth(int dev, double *bytes_per_s);

/* Uploads the weights (looked up by GGUF name, as model_create does; F32, F16, BF16, Q8_0,
 * whose products quantise their input to Q8_0 as the CPU engine does, and Q4_0, Q4_1, Q5_0,
 * Q5_1, IQ4_NL, Q4_K, Q5_K, Q6_K, IQ4_XS as stored, with Q8_0, Q8_1 or Q8_K inputs likewise) to device dev and
 * allocates n_slots states of n_ctx positions, with a log of rb_rows rows
 * per slot (0: no rollback). NULL with "what, what to do" in err. */
struct cuda_model *cuda_model_create(int dev, const struct model_config *cfg, model_tensor_find_fn find, void *ctx,
				     const char *source, int n_slots, int n_ctx, int rb_rows, char *err, size_t errlen);
void cuda_model_destroy(struct cuda_model *m);

/* model_forward_keep's contract (keep may be NULL: nothing kept; logits of n_vocab floats per
 * row that wants them, in row order). -EINVAL malformed batch, -E2BIG a kept segment longer
 * than rb_rows, -EIO a device error (cuda_model_error says which). */
int cuda_model_forward(struct cuda_model *m, const struct model_batch *b, const uint8_t *keep, float *logits);
/* Passes of a shape seen before replay a CUDA graph (on, the default) or launch every kernel. */
void cuda_model_set_graphs(struct cuda_model *m, int on);
/* Passes of up to `rows` rows (<= 0: the default, 32, or 16 where n_embd >= 4096) take the
 * warp-per-output matrix kernel, wider ones the tiled one (benchmarks compare them). */
void cuda_model_set_small_rows(struct cuda_model *m, int rows);
int cuda_model_small_rows(const struct cuda_model *m);
/* Passes of `rows` rows or more (0: none; -1: the default, 2 rows for BF16 and 4 for Q8_0, as
 * measured) take the tensor-core product (mma.sync: BF16 weights
 * against the rows rounded to BF16, fp32 sums; Q8_0 weights against the rows' Q8_0 activations,
 * int8 products, the CPU's per-block terms) for their BF16 and Q8_0 matrices; F32 and F16 keep
 * the fp32 kernels. SIXI_CUDA_TC_ROWS=N at create sets one threshold for both types. */
void cuda_model_set_tc_rows(struct cuda_model *m, int rows);
int cuda_model_tc_rows(const struct cuda_model *m);
/* The tensor-core product's outputs a block: 16 (mt 1) or 32 (mt 2), 0: by the pass's rows as
 * measured (32 at 9-16 and above 32 rows). Benchmarks compare them. */
void cuda_model_set_tc_mt(struct cuda_model *m, int mt);
/* Measurement only: on, the tensor-core product takes each Q8_0 matrix widened to BF16 in a
 * scratch buffer of the largest matrix's size (q * d rounded to BF16; the rows rounded to BF16,
 * not quantised) instead of the int8 product; off frees it. 0, or -EIO (no memory). */
int cuda_model_set_tc_dequant(struct cuda_model *m, int on);
/* The fused kernels: conv, norms and gates of a GDN layer in one kernel, the gated norm with
 * the window update, SwiGLU inside the gate/up product, several weight loads in flight in the
 * matrix kernel, the add_norm after a product done by its last block (passes up to 4 rows).
 * on: all of them; off: the first version's kernels. The default at create is a part of the
 * set (below) where n_embd < 4096, none otherwise; SIXI_CUDA_FUSED=0|1|mMASK overrides. On an
 * H200 the whole set was slower at one stream than the first version's kernels; the GDN
 * kernels and SwiGLU alone were faster, the add_norm in the product and the loads in flight
 * slower (reports/perf/cuda-engine-h200.md). Benchmarks compare them. */
void cuda_model_set_fused(struct cuda_model *m, int on);
/* The fused set's parts one at a time (set_fused(1) is all of them; SIXI_CUDA_FUSED=mMASK at
 * create): the GDN layer's conv_pre and post_window kernels, SwiGLU inside the gate/up product,
 * the add_norm in the product's last block, several weight loads in flight a lane. */
enum { CUDA_FUSE_GDN = 1, CUDA_FUSE_SWIGLU = 2, CUDA_FUSE_NORM = 4, CUDA_FUSE_LOADS = 8, CUDA_FUSE_ALL = 15 };
void cuda_model_set_fuse_mask(struct cuda_model *m, int mask);
/* 1: passes of one segment run the GDN kernel with one value column a lane group (gdn_cuda.h's
 * cols; four times the blocks), 0: its default everywhere. Default at create: 1 where
 * n_embd < 4096; SIXI_CUDA_GDN_COLS=0|1 overrides. */
void cuda_model_set_gdn_cols(struct cuda_model *m, int cols);
/* cudaProfilerStart (on) or Stop: brackets the passes a profiler started with
 * --profile-from-start off records. 0 or a CUDA error number. */
int cuda_model_profile(int on);
/* Programmatic dependent launch (a kernel starts while the one before it drains), where the
 * device runs it: on by default (SIXI_CUDA_PDL=0: off). Returns whether it is on now. */
int cuda_model_set_pdl(struct cuda_model *m, int on);
int cuda_model_slot_reset(struct cuda_model *m, int slot);
int cuda_model_slot_copy(struct cuda_model *m, int dst, int src);
/* Drops the slot's last n kept rows: -ERANGE when n is more than it keeps. */
int cuda_model_slot_rollback(struct cuda_model *m, int slot, int n);
int cuda_model_slot_pos(const struct cuda_model *m, int slot);
/* Device bytes by part (model.h's struct model_state_memory) and of the weights. */
void cuda_model_memory(const struct cuda_model *m, struct model_state_memory *out, size_t *weight_bytes);
/* The device's activation quantiser of Q8_0 products (act_q8_kernel) on n floats (n a multiple
 * of 32) of host memory, into n / 32 Q8_0 blocks (34 bytes: fp16 scale, 32 int8) at out: what
 * quant_act_quantize(GGUF_TENSOR_Q8_0, ...) writes, byte for byte (the agreement test checks it).
 * 0, -EINVAL (n), -ENOMEM, -EIO (a device error). */
int cuda_quantize_q8_0(int dev, const float *x, int n, void *out);
/* The same for the activations of K-quant products (act_q8k_kernel): n a multiple of 256, into
 * n / 256 Q8_K blocks (292 bytes: fp32 scale, 256 int8, 16 int16 sums of 16) as
 * quant_act_quantize(GGUF_TENSOR_Q8_K, ...) writes them; and of Q4_1/Q5_1 products
 * (act_q81_kernel): n a multiple of 32, into Q8_1 blocks (36 bytes: fp16 d, fp16 d * sum, 32 int8). */
int cuda_quantize_q8_k(int dev, const float *x, int n, void *out);
int cuda_quantize_q8_1(int dev, const float *x, int n, void *out);
/* Page-locked host memory (the logits copy runs at full bus speed into it), NULL if none;
 * cuda_host_free accepts NULL. */
void *cuda_host_alloc(size_t bytes);
void cuda_host_free(void *p);
/* The last device error, "" if none. */
const char *cuda_model_error(const struct cuda_model *m);

#ifdef __cplusplus
}
#endif
#endif
