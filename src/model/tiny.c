/* tiny — see tiny.h. Weights are drawn from a fixed xorshift stream in tensor order, with
 * the scales that keep a random network well-conditioned (the same recipe as the reference
 * fixture's script): matrices uniform with variance 1/fan_in, branch outputs at half scale,
 * norm weights 1 ± 0.2 (already in the GGUF's 1+w form), decays e^g mostly in (0.5, 1).
 * The file is written to PATH.tmp and renamed, so a failure leaves nothing half-written. */
#include "model/tiny.h"
#include "core/err.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/kernels.h"
#include "model/quant.h"
#include "model/safetensors.h"
#include "text/tokenizer.h"

const char model_tiny_chat_template[] =
	"{%- for message in messages %}"
	"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
	"{%- endfor %}"
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

struct rng {
	uint64_t s;
};

static float uniform(struct rng *r) /* in [-1, 1) */
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (float)((r->s >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

struct tw {
	struct gguf_writer *w;
	struct rng r;
	uint32_t matrix_type;
	int rc;
	const struct model_config *cfg; /* for MODEL_MIX_* */
};

/* llama.cpp's use_more_bits: the layers of n whose attn_v / ffn_down a K_M mixture keeps at Q6_K. */
static int more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

uint32_t model_mix_type(uint32_t mix, const struct model_config *c, const char *name, int ne0)
{
	uint32_t base = mix == MODEL_MIX_Q5_K_M ? GGUF_TENSOR_Q5_K : GGUF_TENSOR_Q4_K, type = base;
	int il = -1, fai = c->full_attn_interval, n = c->n_layer;
	if (sscanf(name, "blk.%d.", &il) != 1)
		il = -1;
	if (strcmp(name, "output.weight") == 0)
		type = GGUF_TENSOR_Q6_K;
	else if (il >= 0 && strstr(name, ".attn_v.weight") && more_bits((il + 1) / fai - 1, n / fai))
		type = GGUF_TENSOR_Q6_K;
	else if (il >= 0 && strstr(name, ".ffn_down.weight") && more_bits(il, n))
		type = GGUF_TENSOR_Q6_K;
	if (ne0 % 256)
		type = type == GGUF_TENSOR_Q6_K ? GGUF_TENSOR_Q8_0 : base == GGUF_TENSOR_Q5_K ? GGUF_TENSOR_Q5_1 : GGUF_TENSOR_Q5_0;
	return ne0 % 32 ? GGUF_TENSOR_F32 : type;
}

/* A tensor of ggml shape ne0 x ne1 x ne2 whose elements are mean + spread * uniform; `matrix`
 * ones are stored as tw->matrix_type where that type can hold rows of ne0. */
static void add3(struct tw *t, const char *name, int ne0, int ne1, int ne2, float mean, float spread, int matrix)
{
	if (t->rc)
		return;
	size_t n = (size_t)ne0 * ne1 * ne2;
	float *v = malloc(n * sizeof(float));
	if (!v) {
		t->rc = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = mean + spread * uniform(&t->r);
	uint64_t ne[4] = { (uint64_t)ne0, (uint64_t)ne1, (uint64_t)ne2, 1 };
	int rows = ne1 * ne2;
	uint32_t type = GGUF_TENSOR_F32;
	int be = quant_block_elems(t->matrix_type);
	if (matrix && (t->matrix_type == MODEL_MIX_Q4_K_M || t->matrix_type == MODEL_MIX_Q5_K_M))
		type = model_mix_type(t->matrix_type, t->cfg, name, ne0);
	else if (matrix && (!be || ne0 % be == 0))
		type = t->matrix_type;
	uint64_t nb = gguf_type_row_bytes(type, (uint64_t)ne0) * (uint64_t)rows;
	void *data = v;
	uint8_t *conv = NULL;
	if (type != GGUF_TENSOR_F32) {
		conv = malloc(nb);
		if (!conv) {
			free(v);
			t->rc = -ENOMEM;
			return;
		}
		size_t rb = (size_t)gguf_type_row_bytes(type, (uint64_t)ne0);
		for (int r = 0; r < rows; r++) {
			const float *src = v + (size_t)r * ne0;
			uint8_t *dst = conv + rb * r;
			if (quant_type_is_block(type)) {
				quant_row_quantize(type, src, dst, ne0);
			} else {
				for (int i = 0; i < ne0; i++) {
					uint16_t h = type == GGUF_TENSOR_F16 ? kern_f32_to_f16(src[i]) : kern_f32_to_bf16(src[i]);
					memcpy(dst + 2 * i, &h, 2);
				}
			}
		}
		data = conv;
	}
	t->rc = gguf_writer_add_tensor(t->w, name, ne2 > 1 ? 3 : ne1 == 1 ? 1 : 2, ne, type, data, nb);
	free(conv);
	free(v);
}

static void add(struct tw *t, const char *name, int ne0, int ne1, float mean, float spread, int matrix)
{
	add3(t, name, ne0, ne1, 1, mean, spread, matrix);
}

/* Uniform on [-a, a] has variance a²/3: a = sqrt(3/fan_in) gives variance 1/fan_in. */
static float fan(int fan_in, float scale)
{
	return scale * sqrtf(3.0f / (float)fan_in);
}

static void add_weights(struct tw *t, const struct model_config *c)
{
	char n[96];
	int E = c->n_embd, d = c->ssm_head_dim, Hk = c->ssm_n_k_heads, Hv = c->ssm_n_v_heads, hd = c->head_dim;
	int conv_dim = 2 * Hk * d + Hv * d;
	add(t, "token_embd.weight", E, c->n_vocab, 0, 1.7f, 1);
	add(t, "output_norm.weight", E, 1, 1, 0.35f, 0);
	add(t, "output.weight", E, c->n_vocab, 0, fan(E, 1), 1);
	for (int il = 0; il < c->n_layer && !t->rc; il++) {
#define N(s) (snprintf(n, sizeof(n), "blk.%d.%s", il, s), n)
		add(t, N("attn_norm.weight"), E, 1, 1, 0.35f, 0);
		add(t, N("post_attention_norm.weight"), E, 1, 1, 0.35f, 0);
		if ((il + 1) % c->full_attn_interval == 0) {
			add(t, N("attn_q.weight"), E, c->n_head * hd * 2, 0, fan(E, 1), 1);
			add(t, N("attn_k.weight"), E, c->n_head_kv * hd, 0, fan(E, 1), 1);
			add(t, N("attn_v.weight"), E, c->n_head_kv * hd, 0, fan(E, 1), 1);
			add(t, N("attn_output.weight"), c->n_head * hd, E, 0, fan(c->n_head * hd, 0.5f), 1);
			add(t, N("attn_q_norm.weight"), hd, 1, 1, 0.35f, 0);
			add(t, N("attn_k_norm.weight"), hd, 1, 1, 0.35f, 0);
		} else {
			add(t, N("attn_qkv.weight"), E, conv_dim, 0, fan(E, 1), 1);
			add(t, N("attn_gate.weight"), E, Hv * d, 0, fan(E, 1), 1);
			add(t, N("ssm_beta.weight"), E, Hv, 0, fan(E, 1), 1);
			add(t, N("ssm_alpha.weight"), E, Hv, 0, fan(E, 1), 1);
			add(t, N("ssm_conv1d.weight"), c->ssm_conv_kernel, conv_dim, 0, 0.85f, 0);
			add(t, N("ssm_dt.bias"), Hv, 1, -3.0f, 0.85f, 0);
			add(t, N("ssm_a"), Hv, 1, -4.5f, 3.5f, 0); /* −exp(A_log) with A in (1, 8) */
			add(t, N("ssm_norm.weight"), d, 1, 1, 0.35f, 0);
			add(t, N("ssm_out.weight"), Hv * d, E, 0, fan(Hv * d, 0.5f), 1);
		}
		if (c->n_expert > 0) {
			/* qwen35moe: router, shared expert and its gate, experts as 3-D tensors */
			int X = c->n_expert, F = c->n_ff_exp;
			add(t, N("ffn_gate_inp.weight"), E, X, 0, fan(E, 2), 1);
			add(t, N("ffn_gate_inp_shexp.weight"), E, 1, 0, fan(E, 1), 0);
			add(t, N("ffn_gate_shexp.weight"), E, c->n_ff, 0, fan(E, 1), 1);
			add(t, N("ffn_up_shexp.weight"), E, c->n_ff, 0, fan(E, 1), 1);
			add(t, N("ffn_down_shexp.weight"), c->n_ff, E, 0, fan(c->n_ff, 0.5f), 1);
			add3(t, N("ffn_gate_exps.weight"), E, F, X, 0, fan(E, 1), 1);
			add3(t, N("ffn_up_exps.weight"), E, F, X, 0, fan(E, 1), 1);
			add3(t, N("ffn_down_exps.weight"), F, E, X, 0, fan(F, 0.5f), 1);
		} else {
			add(t, N("ffn_gate.weight"), E, c->n_ff, 0, fan(E, 1), 1);
			add(t, N("ffn_up.weight"), E, c->n_ff, 0, fan(E, 1), 1);
			add(t, N("ffn_down.weight"), c->n_ff, E, 0, fan(c->n_ff, 0.5f), 1);
		}
#undef N
	}
}

/* Vocabulary size the tiny tokenizer produces: write it alone to a scratch file and count. */
static int tiny_vocab_size(const char *path, int *n_vocab, char *err, size_t errlen)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.vocab.tmp", path);
	struct gguf_writer *w = gguf_writer_create();
	if (!w)
		return -ENOMEM;
	int rc = tok_write_tiny_vocab(w, err, errlen);
	if (!rc)
		rc = gguf_writer_write(w, tmp, err, errlen);
	gguf_writer_destroy(w);
	if (rc)
		return rc;
	struct gguf *g = gguf_open(tmp, err, errlen);
	unlink(tmp);
	if (!g)
		return -EIO;
	long k = gguf_find_key(g, "tokenizer.ggml.tokens");
	*n_vocab = k >= 0 ? (int)gguf_kv_array_len(g, (size_t)k) : 0;
	gguf_close(g);
	if (*n_vocab <= 0) {
		err_set(err, errlen, "%s: the tiny vocabulary has no tokens", path);
		return -EINVAL;
	}
	return 0;
}

int model_write_random(const char *path, const struct model_config *cfg_in, uint32_t matrix_type, uint64_t seed,
		       char *err, size_t errlen)
{
	return model_write_random_vocab(path, cfg_in, matrix_type, seed, 0, TOK_TYPE_UNUSED, err, errlen);
}

int model_write_random_vocab(const char *path, const struct model_config *cfg_in, uint32_t matrix_type, uint64_t seed,
			     int n_vocab, int pad_type, char *err, size_t errlen)
{
	struct model_config c = *cfg_in;
	int rc = tiny_vocab_size(path, &c.n_vocab, err, errlen);
	if (rc)
		return rc;
	int pad = n_vocab > c.n_vocab; /* the tiny vocabulary padded with unused tokens */
	if (pad)
		c.n_vocab = n_vocab;
	char why[256];
	if (model_config_check(&c, why, sizeof(why))) {
		err_set(err, errlen, "%s: %s", path, why);
		return -EINVAL;
	}
	struct tw t = { gguf_writer_create(), { seed ? seed : 0x9e3779b97f4a7c15ull }, matrix_type, 0, &c };
	if (!t.w)
		return -ENOMEM;
	rc = model_config_to_gguf(&c, t.w);
	if (!rc)
		rc = gguf_writer_set_str(t.w, "general.name", "sixi-tiny-random");
	if (!rc)
		rc = pad ? tok_write_tiny_vocab_padded(t.w, (size_t)c.n_vocab, pad_type, err, errlen) : tok_write_tiny_vocab(t.w, err, errlen);
	if (!rc)
		rc = gguf_writer_set_str(t.w, "tokenizer.chat_template", model_tiny_chat_template);
	if (!rc) {
		add_weights(&t, &c);
		rc = t.rc;
	}
	if (rc && !err[0])
		err_set(err, errlen, "%s: cannot build the model (%s)", path, strerror(-rc));
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!rc)
		rc = gguf_writer_write(t.w, tmp, err, errlen);
	gguf_writer_destroy(t.w);
	if (!rc && rename(tmp, path) != 0) {
		rc = -errno;
		err_set(err, errlen, "%s: cannot rename from %s: %s", path, tmp, strerror(errno));
	}
	if (rc)
		unlink(tmp);
	return rc;
}

static const struct model_config tiny_cfg = {
		.n_embd = 128,
		.n_layer = 4,
		.n_ff = 320,
		.n_head = 4,
		.n_head_kv = 2,
		.head_dim = 32,
		.n_rot = 8,
		.rope_theta = 10000.0f,
		.norm_eps = 1e-6f,
		.ssm_conv_kernel = 4,
		.ssm_head_dim = 32,
		.ssm_n_k_heads = 2,
		.ssm_n_v_heads = 4,
		.full_attn_interval = 4,
		.n_ctx_train = 8192,
};

int model_write_tiny(const char *path, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	return model_write_random(path, &tiny_cfg, GGUF_TENSOR_F32, 0x51c51c51ull, err, errlen);
}

void model_tiny_moe_config(struct model_config *c)
{
	*c = tiny_cfg;
	c->n_ff = 128; /* the shared expert */
	c->n_expert = 16;
	c->n_expert_used = 4;
	c->n_ff_exp = 64;
}

int model_write_tiny_moe(const char *path, uint32_t matrix_type, char *err, size_t errlen)
{
	struct model_config c;
	model_tiny_moe_config(&c);
	if (err && errlen)
		err[0] = 0;
	return model_write_random(path, &c, matrix_type, 0x3e3e3e3eull, err, errlen);
}

int model_write_trained(const char *dir, const char *path, uint32_t matrix_type, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	int n_vocab = 0;
	int rc = tiny_vocab_size(path, &n_vocab, err, errlen);
	if (rc)
		return rc;
	struct hf_model *h = hf_model_import(dir, err, errlen);
	if (!h)
		return -EINVAL;
	if (hf_model_config(h)->n_vocab != n_vocab) {
		err_set(err, errlen,
			 "%s: vocab_size is %d but the tiny vocabulary has %d tokens; --from takes a model trained on "
			 "the tiny vocabulary (src/model/trained/)", dir, hf_model_config(h)->n_vocab, n_vocab);
		hf_model_free(h);
		return -EINVAL;
	}
	const char *base = strrchr(dir, '/');
	base = base && base[1] ? base + 1 : dir;
	struct gguf_writer *w = gguf_writer_create();
	rc = w ? 0 : -ENOMEM;
	if (!rc)
		rc = gguf_writer_set_str(w, "general.name", base);
	if (!rc)
		rc = tok_write_tiny_vocab(w, err, errlen);
	if (!rc)
		rc = gguf_writer_set_str(w, "tokenizer.chat_template", model_tiny_chat_template);
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!rc)
		rc = hf_model_write_gguf(h, w, matrix_type, tmp, err, errlen);
	else if (!err[0])
		err_set(err, errlen, "%s: cannot build the model (%s)", path, strerror(-rc));
	gguf_writer_destroy(w);
	hf_model_free(h);
	if (!rc && rename(tmp, path) != 0) {
		rc = -errno;
		err_set(err, errlen, "%s: cannot rename from %s: %s", path, tmp, strerror(errno));
	}
	if (rc)
		unlink(tmp);
	return rc;
}
