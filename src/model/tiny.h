/* tiny — the embedded models: a deterministic, tiny, random-weight qwen35 GGUF for structural
 * tests (and a qwen35moe variant of the same sizes), and the trained default sixi-small, all with the
 * project's own byte-level BPE vocabulary (learnt from the prose the project ships) and a
 * ChatML chat template. The random model's text is gibberish; it exists so that structural
 * tests have a real model of the real architecture to run with no download.
 *
 * model_write_trained converts the trained sixi-small models (src/model/trained/, weights
 * learnt on the GPU machine by train.py) to GGUF with the same vocabulary and template.
 * Does not: train weights (train.py does, once, outside the build). The same build always
 * writes the same bytes.
 * Ownership: arguments are borrowed. */
#ifndef SIXI_MODEL_TINY_H
#define SIXI_MODEL_TINY_H
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* The ChatML template written as tokenizer.chat_template. */
extern const char model_tiny_chat_template[];

/* Writes the tiny model (about 3 MiB) to path, replacing it only once complete.
 * 0, or a negative errno with "PATH: why" in err. */
int model_write_tiny(const char *path, char *err, size_t errlen);

/* The tiny model's sizes with a qwen35moe MLP: 16 experts of width 64, 4 used a row, a shared
 * expert of width 128. */
void model_tiny_moe_config(struct model_config *cfg);
/* Writes the tiny qwen35moe model (a different seed from the dense one) with its matrices as
 * matrix_type (see model_write_random). */
int model_write_tiny_moe(const char *path, uint32_t matrix_type, char *err, size_t errlen);

/* matrix_type values of model_write_random that are not one type but llama-quantize's mixtures
 * (llama.cpp's llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M / _Q5_K_M): Q4_K (Q5_K)
 * matrices, Q6_K for output.weight and for attn_v and ffn_down in the layers llama.cpp's
 * use_more_bits picks (the first and last eighth, every third between: about half); a row that
 * is not a multiple of 256 falls back as llama-quantize does (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K
 * to Q8_0; F32 if not a multiple of 32). */
#define MODEL_MIX_Q4_K_M 0x10000u
#define MODEL_MIX_Q5_K_M 0x10001u
/* The type of matrix `name` (rows of ne0 elements) in mixture mix of a model of config c. The
 * tied embedding of a model without output.weight is not special-cased (callers pass
 * "output.weight" for it, as llama-quantize treats it). */
uint32_t model_mix_type(uint32_t mix, const struct model_config *c, const char *name, int ne0);

/* Writes a random model with the tiny vocabulary and template: the vocabulary decides n_vocab
 * (cfg->n_vocab is ignored), cfg gives every other size; matrices are stored as matrix_type
 * (F32, F16, BF16 or a block type of quant.h, quantised by sixi's own quantiser; matrices whose
 * rows are not a multiple of the type's block stay F32; or a MODEL_MIX_*). model_write_tiny is this with the tiny config; the benchmark uses it
 * to build a ~100M-parameter model. */
int model_write_random(const char *path, const struct model_config *cfg, uint32_t matrix_type, uint64_t seed,
		       char *err, size_t errlen);
/* Writes a model trained on the tiny vocabulary (src/model/trained/: a Hugging Face Qwen3.5
 * directory, config.json + model.safetensors) as GGUF with the tiny vocabulary and template,
 * matrices as matrix_type (F32, F16, BF16 or Q8_0; the committed weights are exactly BF16).
 * Refuses a model whose vocab_size is not the tiny vocabulary's. 0, or a negative errno with
 * the reason in err; PATH is replaced only once complete. */
int model_write_trained(const char *dir, const char *path, uint32_t matrix_type, char *err, size_t errlen);

/* model_write_random with the vocabulary padded to n_vocab tokens (tok_write_tiny_vocab_padded,
 * padding of pad_type: TOK_TYPE_UNUSED or TOK_TYPE_NORMAL) where n_vocab is larger than the tiny
 * one's, so that the embedding and the output matrix have n_vocab rows (a random model of a real
 * model's shape for benchmarks). n_vocab <= the tiny size: model_write_random. */
int model_write_random_vocab(const char *path, const struct model_config *cfg, uint32_t matrix_type, uint64_t seed,
			     int n_vocab, int pad_type, char *err, size_t errlen);
#endif
