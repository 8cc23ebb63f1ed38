/* shapes — the model shapes the GPU benchmarks use: Qwen3.5-0.8B's, Qwen3.5-9B's and
 * Qwen3.5-27B's and Qwen3.5-35B-A3B's text parts as this project reads their published configs (the real
 * 248320-token vocabulary), and moe-small: the 35B-A3B's widths with 8 layers (~7.2B parameters).
 * perf_cuda_engine builds random models of them in memory; perf_model --write-shape writes
 * them as GGUF files (the tiny vocabulary padded to 248320 tokens) for side-by-side runs. */
#ifndef SIXI_TESTS_PERF_SHAPES_H
#define SIXI_TESTS_PERF_SHAPES_H
#include "model/model.h"

#include <string.h>

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
/* Qwen3.5-27B: 64 layers of width 5120, 48 of them GDN (16 key heads, 48 value heads of 128),
 * every 4th full attention (24 query heads, 4 KV heads of 256), SwiGLU of 17408: the release
 * notes' model class. ~26.9B parameters (tied embeddings here): ~16 GB as Q4_K_M. */
static const struct model_config perf_shape_27b = {
	.n_vocab = 248320, .n_embd = 5120, .n_layer = 64, .n_ff = 17408, .n_head = 24, .n_head_kv = 4,
	.head_dim = 256, .n_rot = 64, .rope_theta = 1e7f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4,
	.ssm_head_dim = 128, .ssm_n_k_heads = 16, .ssm_n_v_heads = 48, .full_attn_interval = 4, .n_ctx_train = 262144,
};
/* Qwen3.5-35B-A3B (qwen35moe): 40 layers of width 2048, every 4th full attention (16 query heads,
 * 2 KV heads of 256, 64 rotated dims), GDN 16 key heads / 32 value heads of 128, 256 experts of
 * width 512 with 8 a token, a shared expert of width 512 (n_ff). ~34.2B parameters (tied
 * embeddings here): ~68 GB as BF16, ~36 GB as Q8_0. */
static const struct model_config perf_shape_35b_a3b = {
	.n_vocab = 248320, .n_embd = 2048, .n_layer = 40, .n_ff = 512, .n_head = 16, .n_head_kv = 2,
	.head_dim = 256, .n_rot = 64, .rope_theta = 1e7f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4,
	.ssm_head_dim = 128, .ssm_n_k_heads = 16, .ssm_n_v_heads = 32, .full_attn_interval = 4, .n_ctx_train = 262144,
	.n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512,
};
/* The same widths, 8 layers (two of them attention): ~7.2B parameters, ~14.5 GB BF16, ~7.7 GB Q8_0. */
static const struct model_config perf_shape_moe_small = {
	.n_vocab = 248320, .n_embd = 2048, .n_layer = 8, .n_ff = 512, .n_head = 16, .n_head_kv = 2,
	.head_dim = 256, .n_rot = 64, .rope_theta = 1e7f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4,
	.ssm_head_dim = 128, .ssm_n_k_heads = 16, .ssm_n_v_heads = 32, .full_attn_interval = 4, .n_ctx_train = 262144,
	.n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512,
};

/* The shape called name ("0.8b", "9b", "27b", "35b-a3b", "moe-small"), NULL if none. */
static inline const struct model_config *perf_shape(const char *name)
{
	static const struct {
		const char *name;
		const struct model_config *c;
	} all[] = { { "0.8b", &perf_shape_08b }, { "9b", &perf_shape_9b }, { "27b", &perf_shape_27b }, { "35b-a3b", &perf_shape_35b_a3b },
		    { "moe-small", &perf_shape_moe_small } };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (strcmp(all[i].name, name) == 0)
			return all[i].c;
	return NULL;
}
#endif
