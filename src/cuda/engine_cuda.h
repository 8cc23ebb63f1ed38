/* engine_cuda — the engine (server/engine.h) over the qwen35 forward pass on one NVIDIA GPU
 * (cuda_model.h) and the tokenizer the GGUF carries: what `sixi-server --device cuda[:N]`
 * serves. The scheduler (continuous batching, chunked prefill, speculation by n-gram drafts,
 * voting) is the same code that drives the CPU engine; only the passes run on the GPU.
 * Rollback is by log; the snapshot ring and draft models stay CPU-only for now.
 * Built only when meson finds nvcc (option cuda); otherwise the server says so.
 * Ownership: arguments are borrowed; the engine is freed by engine_destroy. */
#ifndef SIXI_CUDA_ENGINE_CUDA_H
#define SIXI_CUDA_ENGINE_CUDA_H
#include <stddef.h>

struct engine;

/* Name and memory of device `device`; 0, or -ENODEV with "no CUDA device: why" in err. */
int cuda_engine_device(int device, char *name, size_t name_len, size_t *free_bytes, size_t *total_bytes, char *err,
		       size_t errlen);
/* Loads path (a qwen35 GGUF) onto the device with n_slots states of n_ctx positions;
 * rb_rows > 0 keeps that many rows per slot for rollback (speculative decoding: the engine
 * then has forward_keep and rollback). NULL with "what, and what to do" in err. */
struct engine *cuda_engine_open(const char *path, int device, int n_slots, int n_ctx, int rb_rows, char *err,
				size_t errlen);
#endif
