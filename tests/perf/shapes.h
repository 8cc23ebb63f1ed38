/* shapes — the model shapes the GPU benchmarks use: Qwen3.5-0.8B's and Qwen3.5-9B's text
 * parts as this project reads their published configs (the real 248320-token vocabulary).
 * perf_cuda_engine builds random models of them in memory; perf_model --write-shape writes
 * them as GGUF files (the tiny vocabulary padded to 248320 tokens) for side-by-side runs. */
#ifndef SIXI_TESTS_PERF_SHAPES_H
#define SIXI_TESTS_PERF_SHAPES_H
#include "model/model.h"

static const struct model_config perf_shape_08b = {
	.n_vocab = 248320, .n_embd = 1024, .n_layer = 24, .n_ff = 3584, .n_head = 8, .n_head_kv = 2,
	.head_dim = 256, .n_rot = 64, .rope_theta = 1e7f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4,
	.ssm_head_dim = 128, .ssm_n_k_heads = 16, .ssm_n_v_heads = 16, .full_attn_interval = 4, .n_ctx_train = 262144,
};
static const struct model_config perf_shape_9b = {
	.n_vocab = 248320, .n_embd = 4096, .n_layer = 32, .n_ff = 12288, .n_head = 16, .n_head_kv = 4,
	.head_dim = 256, .n_rot = 64, .rope_theta = 1e7f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4,
	.ssm_head_dim = 128, .ssm_n_k_heads = 16, .ssm_n_v_heads = 32, .full_attn_interval = 4, .n_ctx_train = 262144,
};
#endif
