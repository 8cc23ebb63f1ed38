/* safetensors — a reader of the safetensors format (8-byte little-endian header length, a
 * JSON header naming each tensor's dtype, shape and byte range, then the data, mmapped), and
 * the import of a Hugging Face Qwen3.5 text model directory (config.json + model.safetensors)
 * into the GGUF conventions of llama.cpp's qwen35 architecture, or of its MoE variant
 * (model_type qwen3_5_moe_text) into qwen35moe's.
 *
 * The import converts exactly as llama.cpp's converter does: tensor names; norm weights
 * stored as 1+w (all RMSNorms but the GDN output norm); ssm_a = −exp(A_log); V-heads of
 * in_proj_qkv (V part), in_proj_z, in_proj_b, in_proj_a, A_log, dt_bias, conv1d (V part)
 * and out_proj (columns) reordered from grouped-by-K-head to tiled order; conv1d squeezed.
 * MoE layers: mlp.gate -> ffn_gate_inp, mlp.shared_expert_gate -> ffn_gate_inp_shexp,
 * mlp.shared_expert.* -> ffn_*_shexp, and the routed experts, fused (experts.gate_up_proj
 * [E][2F][H] gate rows first, experts.down_proj [E][H][F]) or one module per expert
 * (experts.N.{gate,up,down}_proj.weight), -> the 3-D ffn_{gate,up,down}_exps (expert-major).
 * Reads model.safetensors or the shards model.safetensors.index.json names; the text model's
 * tensors may sit under "model.", "model.language_model." (the multimodal wrapper, whose
 * config.json nests text_config) or no prefix.
 * Does not: read MTP weights, vision towers, or tokenizers (a written GGUF gets its
 * tokenizer keys from the caller).
 * Errors name the file and the tensor or key; a header that lies about sizes is refused.
 * Ownership: everything returned is freed by the matching close/free. */
#ifndef SIXI_MODEL_SAFETENSORS_H
#define SIXI_MODEL_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

struct st_tensor {
	const char *name;
	uint32_t type;      /* enum gguf_tensor_type: F32, F16 or BF16 */
	int n_dims;
	uint64_t shape[4];  /* outermost first, as in the JSON header */
	const void *data;   /* mmapped */
	uint64_t n_bytes;
};

struct st_file;
struct st_file *st_open(const char *path, char *err, size_t errlen);
void st_close(struct st_file *f);
size_t st_count(const struct st_file *f);
const struct st_tensor *st_at(const struct st_file *f, size_t i);
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* Parses a header held in memory (buf, n bytes = the whole file); used by st_open and fuzzing. */
struct st_file *st_parse(const void *buf, size_t n, const char *name, char *err, size_t errlen);

/* A Hugging Face model converted to qwen35 (or qwen35moe) GGUF tensors (fp32, owned). */
struct hf_model;
struct hf_model *hf_model_import(const char *dir, char *err, size_t errlen);
void hf_model_free(struct hf_model *h);
const struct model_config *hf_model_config(const struct hf_model *h);
/* A model running directly on the converted tensors; h must outlive it. */
struct model *hf_model_create(struct hf_model *h, int n_threads, char *err, size_t errlen);
/* Writes the converted model as GGUF: config keys, then the keys already in `extra` (e.g. the
 * tokenizer's; may be NULL), then tensors. 2-D weight matrices and 3-D expert tensors are
 * stored as `matrix_type` (F32, F16, BF16 or Q8_0); norms, conv kernels, per-head vectors and
 * the MoE router stay F32. */
struct gguf_writer;
int hf_model_write_gguf(const struct hf_model *h, struct gguf_writer *w, uint32_t matrix_type, const char *path,
			char *err, size_t errlen);
/* hf_model_import + hf_model_write_gguf into a fresh writer: DIR to OUT (no tokenizer keys). */
int hf_model_convert(const char *dir, const char *out, uint32_t matrix_type, char *err, size_t errlen);
#endif
