/* test_model_moe_hf — qwen35moe from a Hugging Face checkpoint (hf_model_import), two runs:
 *
 *  test_model_moe_hf roundtrip: no transformers needed. The tiny random MoE model
 *    (model_write_tiny_moe, F32) is written out here in the Hugging Face layout (config.json
 *    with model_type qwen3_5_moe_text + model.safetensors: transformers' tensor names and
 *    shapes, norms as w for 1+w, A_log for ssm_a, V-heads in grouped order), once with fused
 *    experts (experts.gate_up_proj [X][2F][H], experts.down_proj [X][H][F]) and once one module
 *    per expert (experts.N.{gate,up,down}_proj.weight), the latter also as the multimodal
 *    wrapper writes it (text_config, model.language_model.), then imported back. Every tensor of the
 *    GGUF written from the import equals the original bit for bit (ssm_a: -exp(log(-a)), the
 *    one value the trip rounds), and the logits of the import, of that GGUF and of the
 *    original (with those ssm_a) are identical; written with BF16 matrices, the 3-D expert
 *    tensors hold the bits of the tiny model's own BF16 file. Bad checkpoints (a missing expert, a
 *    mis-shaped gate_up_proj, neither expert layout, no shared expert gate, no num_experts)
 *    fail with a message naming the tensor or key.
 *
 *  test_model_moe_hf transformers: the checkpoint in tests/fixtures/model/qwen35moe-hf, made
 *    by transformers' Qwen3_5MoeForCausalLM (tests/fixtures/model/make_reference_moe.py),
 *    through the import and through its F32 GGUF: per row, the largest |logit - reference|
 *    within LOGIT_TOL of the row's largest |reference logit| (float32 on both sides), the
 *    same argmax at every position whose top two reference logits are further apart than
 *    the tolerance, a row-by-row decode as close, and the greedy continuation transformers
 *    generated. Exit 77 (skipped) while that directory does not exist. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/tiny.h"
#include "greedy.h"
#include "test.h"

#define FIX "tests/fixtures/model/qwen35moe-hf"
/* Relative to the row's largest |logit|: float32 sums in another order, as for the dense
 * model's transformers check (tests/unit/test_model.c). */
#define LOGIT_TOL 1e-4

/* ======== writing a checkpoint in the Hugging Face layout ======== */

struct hf_tensor {
	char name[160];
	int n_dims;
	uint64_t shape[3]; /* outermost first, as safetensors and torch write it */
	float *data;
};

struct hf_set {
	struct hf_tensor *t;
	int n, cap;
};

/* A new tensor of shape [d0] ([d0][d1], [d0][d1][d2] when those are > 0); returns its data. */
static float *hf_add(struct hf_set *s, const char *name, uint64_t d0, uint64_t d1, uint64_t d2)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->t = realloc(s->t, sizeof(*s->t) * (size_t)s->cap);
		if (!s->t)
			abort();
	}
	struct hf_tensor *t = &s->t[s->n++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->n_dims = d2 ? 3 : d1 ? 2 : 1;
	t->shape[0] = d0;
	t->shape[1] = d1 ? d1 : 1;
	t->shape[2] = d2 ? d2 : 1;
	t->data = malloc(sizeof(float) * d0 * t->shape[1] * t->shape[2]);
	if (!t->data)
		abort();
	return t->data;
}

static void hf_set_free(struct hf_set *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->t[i].data);
	free(s->t);
}

/* How a checkpoint is written: as the multimodal wrapper does (config.json nesting a
 * text_config that has no model_type of its own, tensors under model.language_model.), and
 * what a bad one changes: a tensor left out, a tensor whose second dimension is halved (only
 * its first half written), a config key left out. Names are the plain layout's. */
struct writing {
	int wrapper;
	const char *drop, *halve, *no_key;
};

static int write_safetensors(const struct hf_set *s, const char *path, const struct writing *f)
{
	cJSON *h = cJSON_CreateObject();
	uint64_t off = 0;
	for (int i = 0; i < s->n; i++) {
		const struct hf_tensor *t = &s->t[i];
		if (f->drop && strcmp(t->name, f->drop) == 0)
			continue;
		int halve = f->halve && strcmp(t->name, f->halve) == 0;
		char name[192];
		if (f->wrapper && strncmp(t->name, "model.", 6) == 0)
			snprintf(name, sizeof(name), "model.language_model.%s", t->name + 6);
		else
			snprintf(name, sizeof(name), "%s", t->name);
		cJSON *e = cJSON_AddObjectToObject(h, name);
		cJSON_AddStringToObject(e, "dtype", "F32");
		cJSON *shape = cJSON_AddArrayToObject(e, "shape");
		uint64_t n = 1;
		for (int d = 0; d < t->n_dims; d++) {
			uint64_t v = d == 1 && halve ? t->shape[1] / 2 : t->shape[d];
			cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)v));
			n *= v;
		}
		cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
		off += 4 * n;
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
	}
	char *js = cJSON_PrintUnformatted(h);
	cJSON_Delete(h);
	FILE *fp = fopen(path, "wb");
	uint64_t len = strlen(js);
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(len >> (8 * i));
	int ok = fp && fwrite(le, 1, 8, fp) == 8 && fwrite(js, 1, len, fp) == len;
	for (int i = 0; ok && i < s->n; i++) {
		const struct hf_tensor *t = &s->t[i];
		if (f->drop && strcmp(t->name, f->drop) == 0)
			continue;
		uint64_t n = t->shape[0] * t->shape[1] * t->shape[2];
		if (f->halve && strcmp(t->name, f->halve) == 0)
			n = t->shape[0] * (t->shape[1] / 2) * t->shape[2];
		ok = fwrite(t->data, 4, n, fp) == n;
	}
	if (fp && fclose(fp) != 0)
		ok = 0;
	free(js);
	return ok ? 0 : -1;
}

/* config.json of a Qwen3_5MoeTextConfig with c's sizes. */
static int write_config(const struct model_config *c, const char *path, const struct writing *f)
{
	cJSON *root = cJSON_CreateObject(), *j = root;
	cJSON_AddStringToObject(root, "model_type", f->wrapper ? "qwen3_5_moe" : "qwen3_5_moe_text");
	cJSON *arch = cJSON_AddArrayToObject(root, "architectures");
	cJSON_AddItemToArray(arch, cJSON_CreateString(f->wrapper ? "Qwen3_5MoeForConditionalGeneration" :
								    "Qwen3_5MoeForCausalLM"));
	if (f->wrapper)
		j = cJSON_AddObjectToObject(root, "text_config");
	const struct {
		const char *key;
		int v;
	} ints[] = {
		{ "vocab_size", c->n_vocab },
		{ "hidden_size", c->n_embd },
		{ "num_hidden_layers", c->n_layer },
		{ "num_attention_heads", c->n_head },
		{ "num_key_value_heads", c->n_head_kv },
		{ "head_dim", c->head_dim },
		{ "linear_conv_kernel_dim", c->ssm_conv_kernel },
		{ "linear_key_head_dim", c->ssm_head_dim },
		{ "linear_value_head_dim", c->ssm_head_dim },
		{ "linear_num_key_heads", c->ssm_n_k_heads },
		{ "linear_num_value_heads", c->ssm_n_v_heads },
		{ "max_position_embeddings", c->n_ctx_train },
		{ "num_experts", c->n_expert },
		{ "num_experts_per_tok", c->n_expert_used },
		{ "moe_intermediate_size", c->n_ff_exp },
		{ "shared_expert_intermediate_size", c->n_ff },
	};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (!f->no_key || strcmp(f->no_key, ints[i].key) != 0)
			cJSON_AddNumberToObject(j, ints[i].key, ints[i].v);
	cJSON_AddNumberToObject(j, "rms_norm_eps", c->norm_eps);
	cJSON_AddBoolToObject(j, "tie_word_embeddings", 0);
	cJSON *lt = cJSON_AddArrayToObject(j, "layer_types");
	for (int i = 0; i < c->n_layer; i++)
		cJSON_AddItemToArray(lt, cJSON_CreateString((i + 1) % c->full_attn_interval == 0 ? "full_attention" :
												  "linear_attention"));
	cJSON *rope = cJSON_AddObjectToObject(j, "rope_parameters");
	cJSON_AddStringToObject(rope, "rope_type", "default");
	cJSON_AddNumberToObject(rope, "rope_theta", c->rope_theta);
	cJSON_AddNumberToObject(rope, "partial_rotary_factor", (double)c->n_rot / c->head_dim);
	char *js = cJSON_Print(root);
	cJSON_Delete(root);
	FILE *fp = fopen(path, "w");
	int ok = fp && fputs(js, fp) >= 0;
	if (fp && fclose(fp) != 0)
		ok = 0;
	free(js);
	return ok ? 0 : -1;
}

/* ---- the inverse of the import's conversions ---- */

static const float *gg(const struct gguf *g, const char *name, uint64_t *n)
{
	const struct gguf_tensor *t = gguf_tensor_find(g, name);
	if (!t || t->type != GGUF_TENSOR_F32) {
		fprintf(stderr, "tiny MoE model: no F32 tensor '%s'\n", name);
		abort();
	}
	*n = t->ne[0] * t->ne[1] * t->ne[2];
	return t->data;
}

/* A GGUF tensor under its Hugging Face name, same floats; minus_one: 1+w stored, w wanted. */
static void copy_as(struct hf_set *s, const struct gguf *g, const char *gname, const char *hname, uint64_t d0,
		    uint64_t d1, uint64_t d2, int minus_one)
{
	uint64_t n;
	const float *src = gg(g, gname, &n);
	float *dst = hf_add(s, hname, d0, d1, d2);
	if (n != d0 * (d1 ? d1 : 1) * (d2 ? d2 : 1)) {
		fprintf(stderr, "'%s': %llu elements, not the config's\n", gname, (unsigned long long)n);
		abort();
	}
	for (uint64_t i = 0; i < n; i++)
		dst[i] = minus_one ? src[i] - 1.0f : src[i]; /* exact: the weights lie in [0.5, 2] */
}

/* The GGUF's V-heads are tiled (V-head j uses K-head j mod H_k), the checkpoint's grouped by
 * K-head: grouped head (kh, s) of [H_k][r] is tiled head s*H_k + kh. Rows (or columns, when
 * cols_axis) [v0 + j*hd, v0 + (j+1)*hd) of the tiled tensor, rows x cols, go back in grouped order. */
static void ungroup(float *t, uint64_t rows, uint64_t cols, uint64_t v0, int hd, int Hk, int Hv, int cols_axis)
{
	int r = Hv / Hk;
	float *o = malloc(sizeof(float) * rows * cols);
	memcpy(o, t, sizeof(float) * rows * cols);
	for (int hh = 0; hh < Hv; hh++) {
		int tiled = (hh % r) * Hk + hh / r;
		for (int e = 0; e < hd; e++) {
			uint64_t dst = v0 + (uint64_t)hh * hd + e, src = v0 + (uint64_t)tiled * hd + e;
			if (cols_axis)
				for (uint64_t row = 0; row < rows; row++)
					t[row * cols + dst] = o[row * cols + src];
			else
				memcpy(t + dst * cols, o + src * cols, sizeof(float) * cols);
		}
	}
	free(o);
}

/* The tiny GGUF model as transformers' Qwen3_5MoeForCausalLM state dict. */
static void export_hf(const struct gguf *g, const struct model_config *c, int fused, struct hf_set *s)
{
	uint64_t E = (uint64_t)c->n_embd, V = (uint64_t)c->n_vocab, X = (uint64_t)c->n_expert,
		 F = (uint64_t)c->n_ff_exp, S = (uint64_t)c->n_ff;
	int d = c->ssm_head_dim, Hk = c->ssm_n_k_heads, Hv = c->ssm_n_v_heads, hd = c->head_dim;
	uint64_t key_dim = (uint64_t)Hk * d, conv_dim = 2 * key_dim + (uint64_t)Hv * d, vd = (uint64_t)Hv * d;
	char gn[128], hn[192];
	copy_as(s, g, "token_embd.weight", "model.embed_tokens.weight", V, E, 0, 0);
	copy_as(s, g, "output_norm.weight", "model.norm.weight", E, 0, 0, 1);
	copy_as(s, g, "output.weight", "lm_head.weight", V, E, 0, 0);
	for (int il = 0; il < c->n_layer; il++) {
#define G(x) (snprintf(gn, sizeof(gn), "blk.%d.%s", il, x), gn)
#define H(x) (snprintf(hn, sizeof(hn), "model.layers.%d.%s", il, x), hn)
#define LAST (s->t[s->n - 1].data)
		copy_as(s, g, G("attn_norm.weight"), H("input_layernorm.weight"), E, 0, 0, 1);
		copy_as(s, g, G("post_attention_norm.weight"), H("post_attention_layernorm.weight"), E, 0, 0, 1);
		if ((il + 1) % c->full_attn_interval == 0) {
			uint64_t qd = (uint64_t)c->n_head * hd, kd = (uint64_t)c->n_head_kv * hd;
			copy_as(s, g, G("attn_q.weight"), H("self_attn.q_proj.weight"), 2 * qd, E, 0, 0);
			copy_as(s, g, G("attn_k.weight"), H("self_attn.k_proj.weight"), kd, E, 0, 0);
			copy_as(s, g, G("attn_v.weight"), H("self_attn.v_proj.weight"), kd, E, 0, 0);
			copy_as(s, g, G("attn_output.weight"), H("self_attn.o_proj.weight"), E, qd, 0, 0);
			copy_as(s, g, G("attn_q_norm.weight"), H("self_attn.q_norm.weight"), (uint64_t)hd, 0, 0, 1);
			copy_as(s, g, G("attn_k_norm.weight"), H("self_attn.k_norm.weight"), (uint64_t)hd, 0, 0, 1);
		} else {
			copy_as(s, g, G("attn_qkv.weight"), H("linear_attn.in_proj_qkv.weight"), conv_dim, E, 0, 0);
			ungroup(LAST, conv_dim, E, 2 * key_dim, d, Hk, Hv, 0);
			copy_as(s, g, G("attn_gate.weight"), H("linear_attn.in_proj_z.weight"), vd, E, 0, 0);
			ungroup(LAST, vd, E, 0, d, Hk, Hv, 0);
			copy_as(s, g, G("ssm_beta.weight"), H("linear_attn.in_proj_b.weight"), (uint64_t)Hv, E, 0, 0);
			ungroup(LAST, (uint64_t)Hv, E, 0, 1, Hk, Hv, 0);
			copy_as(s, g, G("ssm_alpha.weight"), H("linear_attn.in_proj_a.weight"), (uint64_t)Hv, E, 0, 0);
			ungroup(LAST, (uint64_t)Hv, E, 0, 1, Hk, Hv, 0);
			copy_as(s, g, G("ssm_dt.bias"), H("linear_attn.dt_bias"), (uint64_t)Hv, 0, 0, 0);
			ungroup(LAST, (uint64_t)Hv, 1, 0, 1, Hk, Hv, 0);
			copy_as(s, g, G("ssm_a"), H("linear_attn.A_log"), (uint64_t)Hv, 0, 0, 0);
			for (int i = 0; i < Hv; i++)
				LAST[i] = logf(-LAST[i]);
			ungroup(LAST, (uint64_t)Hv, 1, 0, 1, Hk, Hv, 0);
			copy_as(s, g, G("ssm_conv1d.weight"), H("linear_attn.conv1d.weight"), conv_dim, 1,
				(uint64_t)c->ssm_conv_kernel, 0);
			ungroup(LAST, conv_dim, (uint64_t)c->ssm_conv_kernel, 2 * key_dim, d, Hk, Hv, 0);
			copy_as(s, g, G("ssm_norm.weight"), H("linear_attn.norm.weight"), (uint64_t)d, 0, 0, 0);
			copy_as(s, g, G("ssm_out.weight"), H("linear_attn.out_proj.weight"), E, vd, 0, 0);
			ungroup(LAST, E, vd, 0, d, Hk, Hv, 1);
		}
		copy_as(s, g, G("ffn_gate_inp.weight"), H("mlp.gate.weight"), X, E, 0, 0);
		copy_as(s, g, G("ffn_gate_inp_shexp.weight"), H("mlp.shared_expert_gate.weight"), 1, E, 0, 0);
		copy_as(s, g, G("ffn_gate_shexp.weight"), H("mlp.shared_expert.gate_proj.weight"), S, E, 0, 0);
		copy_as(s, g, G("ffn_up_shexp.weight"), H("mlp.shared_expert.up_proj.weight"), S, E, 0, 0);
		copy_as(s, g, G("ffn_down_shexp.weight"), H("mlp.shared_expert.down_proj.weight"), E, S, 0, 0);
		uint64_t n, m = F * E;
		const float *gate = gg(g, G("ffn_gate_exps.weight"), &n), *up = gg(g, G("ffn_up_exps.weight"), &n);
		if (fused) {
			float *gu = hf_add(s, H("mlp.experts.gate_up_proj"), X, 2 * F, E);
			for (uint64_t e = 0; e < X; e++) {
				memcpy(gu + 2 * e * m, gate + e * m, sizeof(float) * m);
				memcpy(gu + 2 * e * m + m, up + e * m, sizeof(float) * m);
			}
			copy_as(s, g, G("ffn_down_exps.weight"), H("mlp.experts.down_proj"), X, E, F, 0);
		} else {
			const float *down = gg(g, G("ffn_down_exps.weight"), &n);
			for (uint64_t e = 0; e < X; e++) {
				char en[96];
				snprintf(en, sizeof(en), "mlp.experts.%llu.gate_proj.weight", (unsigned long long)e);
				memcpy(hf_add(s, H(en), F, E, 0), gate + e * m, sizeof(float) * m);
				snprintf(en, sizeof(en), "mlp.experts.%llu.up_proj.weight", (unsigned long long)e);
				memcpy(hf_add(s, H(en), F, E, 0), up + e * m, sizeof(float) * m);
				snprintf(en, sizeof(en), "mlp.experts.%llu.down_proj.weight", (unsigned long long)e);
				memcpy(hf_add(s, H(en), E, F, 0), down + e * m, sizeof(float) * m);
			}
		}
#undef G
#undef H
#undef LAST
	}
}

/* Writes DIR/config.json and DIR/model.safetensors. */
static int write_checkpoint(const char *dir, const struct model_config *c, const struct hf_set *s,
			    const struct writing *f)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	if (write_config(c, path, f))
		return -1;
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	return write_safetensors(s, path, f);
}

static void remove_checkpoint(const char *dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	unlink(path);
}

/* ======== round trip ======== */

/* The original GGUF's tensors, ssm_a replaced by what the trip through A_log gives. */
struct subst {
	struct model_tensor *t; /* one per GGUF tensor, in its order */
	float *a[64];           /* the replaced ssm_a data */
	size_t n;
	int n_a;
};

static const struct model_tensor *subst_find(void *ctx, const char *name)
{
	struct subst *s = ctx;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->t[i].name, name) == 0)
			return &s->t[i];
	return NULL;
}

static void subst_init(struct subst *s, const struct gguf *g)
{
	memset(s, 0, sizeof(*s));
	s->n = gguf_tensor_count(g);
	s->t = calloc(s->n, sizeof(*s->t));
	for (size_t i = 0; i < s->n; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);
		s->t[i] = (struct model_tensor){ t->name, t->n_dims, { t->ne[0], t->ne[1], t->ne[2], t->ne[3] }, t->type,
						 t->data, t->n_bytes };
		size_t len = strlen(t->name);
		if (len < 6 || strcmp(t->name + len - 6, ".ssm_a") != 0 || s->n_a == 64)
			continue;
		float *a = malloc(t->n_bytes);
		const float *src = t->data;
		for (uint64_t k = 0; k < t->ne[0]; k++)
			a[k] = -expf(logf(-src[k]));
		s->a[s->n_a++] = a;
		s->t[i].data = a;
	}
}

static void subst_finish(struct subst *s)
{
	for (int i = 0; i < s->n_a; i++)
		free(s->a[i]);
	free(s->t);
}

#define RT_ROWS 40

/* Logits of RT_ROWS fixed ids in one pass, then 3 one-row passes (the decode path). */
static float *run_ids(struct model *m)
{
	int V = model_get_config(m)->n_vocab;
	float *out = malloc(sizeof(float) * (size_t)V * (RT_ROWS + 3));
	int32_t tok[RT_ROWS + 3], slots[RT_ROWS + 3] = { 0 };
	for (int i = 0; i < RT_ROWS + 3; i++)
		tok[i] = (int32_t)((37 * i + 11) % V);
	struct model_state *st = model_state_create(m, 1, 64);
	struct model_batch b = { RT_ROWS, tok, slots, NULL, NULL };
	CHECK_EQ_INT(model_forward(m, st, &b, out), 0);
	for (int i = RT_ROWS; i < RT_ROWS + 3; i++) {
		struct model_batch b1 = { 1, &tok[i], slots, NULL, NULL };
		CHECK_EQ_INT(model_forward(m, st, &b1, out + (size_t)i * V), 0);
	}
	model_state_destroy(st);
	return out;
}

/* Every tensor of `got` (written from the import) equals the original's (after subst). */
static void compare_tensors(const struct gguf *orig, struct subst *sb, const struct gguf *got, const char *what)
{
	int same = 0, n = (int)gguf_tensor_count(orig);
	CHECK_EQ_INT(gguf_tensor_count(got), n);
	for (int i = 0; i < n; i++) {
		const struct gguf_tensor *a = gguf_tensor_at(orig, (size_t)i);
		const struct model_tensor *want = subst_find(sb, a->name);
		const struct gguf_tensor *b = gguf_tensor_find(got, a->name);
		int ok = b && b->type == want->type && b->n_dims == want->n_dims && b->n_bytes == want->n_bytes &&
			 memcmp(b->ne, want->ne, sizeof(b->ne)) == 0 && memcmp(b->data, want->data, b->n_bytes) == 0;
		if (!ok)
			fprintf(stderr, "%s: tensor '%s' differs after the round trip (%s)\n", what, a->name,
				b ? "shape, type or data" : "missing");
		same += ok;
	}
	printf("%s: %d of %d tensors equal bit for bit after the round trip\n", what, same, n);
	CHECK_EQ_INT(same, n);
}

/* The import written with BF16 matrices against the tiny model written so directly: every
 * matrix and 3-D expert tensor the same bits; the router stays F32 (as llama.cpp's converter
 * keeps ffn_gate_inp) where the tiny writer rounds it; ssm_a is the one F32 vector that differs. */
static void compare_bf16(const char *tmp, struct hf_model *h)
{
	char a[256], b[256], err[1024];
	snprintf(a, sizeof(a), "%s/import-bf16.gguf", tmp);
	snprintf(b, sizeof(b), "%s/tiny-bf16.gguf", tmp);
	struct gguf_writer *w = gguf_writer_create();
	CHECK_EQ_INT(hf_model_write_gguf(h, w, GGUF_TENSOR_BF16, a, err, sizeof(err)), 0);
	gguf_writer_destroy(w);
	CHECK_EQ_INT(model_write_tiny_moe(b, GGUF_TENSOR_BF16, err, sizeof(err)), 0);
	struct gguf *ga = gguf_open(a, err, sizeof(err)), *gb = gguf_open(b, err, sizeof(err));
	int same = 0, bf16 = 0, n = 0;
	for (size_t i = 0; ga && gb && i < gguf_tensor_count(gb); i++) {
		const struct gguf_tensor *tb = gguf_tensor_at(gb, i), *ta = gguf_tensor_find(ga, tb->name);
		if (strstr(tb->name, "ssm_a"))
			continue;
		n++;
		if (!ta)
			continue;
		if (strstr(tb->name, "ffn_gate_inp.weight")) {
			same += ta->type == GGUF_TENSOR_F32;
			continue;
		}
		bf16 += ta->type == GGUF_TENSOR_BF16;
		int ok = ta->type == tb->type && ta->n_bytes == tb->n_bytes && memcmp(ta->data, tb->data, ta->n_bytes) == 0;
		if (!ok)
			fprintf(stderr, "BF16: tensor '%s' differs from the tiny model's\n", tb->name);
		same += ok;
	}
	printf("written as BF16: %d of %d tensors as the tiny model's BF16 file has them (%d BF16; routers F32)\n",
	       same, n, bf16);
	CHECK(n > 0);
	CHECK_EQ_INT(same, n);
	gguf_close(ga);
	gguf_close(gb);
	unlink(a);
	unlink(b);
}

static void roundtrip(const char *tmp, const char *gguf_path, int fused, int wrapper)
{
	const char *what = fused ? "fused experts" : wrapper ? "one module per expert, multimodal wrapper" :
							      "one module per expert";
	char err[1024], dir[256], out[256];
	snprintf(dir, sizeof(dir), "%s/hf-%d%d", tmp, fused, wrapper);
	snprintf(out, sizeof(out), "%s/back-%d%d.gguf", tmp, fused, wrapper);
	mkdir(dir, 0700);
	struct gguf *g = gguf_open(gguf_path, err, sizeof(err));
	struct model_config c;
	if (!CHECK(g && model_config_from_gguf(g, gguf_path, &c, err, sizeof(err)) == 0)) {
		fprintf(stderr, "%s\n", err);
		gguf_close(g);
		return;
	}
	struct hf_set s = { 0 };
	struct writing how = { .wrapper = wrapper };
	export_hf(g, &c, fused, &s);
	CHECK_EQ_INT(write_checkpoint(dir, &c, &s, &how), 0);
	hf_set_free(&s);

	struct hf_model *h = hf_model_import(dir, err, sizeof(err));
	if (!CHECK(h != NULL)) {
		fprintf(stderr, "%s: %s\n", what, err);
		gguf_close(g);
		return;
	}
	const struct model_config *hc = hf_model_config(h);
	CHECK(memcmp(hc, &c, sizeof(c)) == 0); /* every size, rope and norm setting came back */
	CHECK_EQ_INT(hc->n_expert, 16);
	CHECK_EQ_INT(hc->n_expert_used, 4);
	CHECK_EQ_INT(hc->n_ff_exp, 64);
	CHECK_EQ_INT(hc->n_ff, 128);

	struct subst sb;
	subst_init(&sb, g);
	CHECK(sb.n_a > 0);
	struct gguf_writer *w = gguf_writer_create();
	CHECK_EQ_INT(hf_model_write_gguf(h, w, GGUF_TENSOR_F32, out, err, sizeof(err)), 0);
	gguf_writer_destroy(w);
	struct gguf *back = gguf_open(out, err, sizeof(err));
	if (CHECK(back != NULL)) {
		CHECK_EQ_STR(gguf_get_str(back, "general.architecture"), "qwen35moe");
		compare_tensors(g, &sb, back, what);
		gguf_close(back);
	}

	struct model *m0 = model_create(&c, subst_find, &sb, gguf_path, 2, err, sizeof(err));
	struct model *m1 = hf_model_create(h, 2, err, sizeof(err));
	struct model *m2 = model_load(out, 2, err, sizeof(err));
	if (CHECK(m0 && m1 && m2)) {
		int V = c.n_vocab;
		size_t nb = sizeof(float) * (size_t)V * (RT_ROWS + 3);
		float *l0 = run_ids(m0), *l1 = run_ids(m1), *l2 = run_ids(m2);
		int same1 = memcmp(l0, l1, nb) == 0, same2 = memcmp(l0, l2, nb) == 0;
		printf("%s: logits of %d rows identical to the original's: import %s, its GGUF %s\n", what,
		       RT_ROWS + 3, same1 ? "yes" : "NO", same2 ? "yes" : "NO");
		CHECK(same1);
		CHECK(same2);
		free(l0);
		free(l1);
		free(l2);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	model_free(m0);
	model_free(m1);
	model_free(m2);
	if (fused)
		compare_bf16(tmp, h);
	subst_finish(&sb);
	hf_model_free(h);
	gguf_close(g);
	unlink(out);
	remove_checkpoint(dir);
	rmdir(dir);
}

/* A bad checkpoint: the import fails and the message names `want`. */
static void refuse(const char *tmp, const struct gguf *g, const struct model_config *c, int fused,
		   const struct writing *f, const char *want, const char *want2)
{
	char err[1024] = "", dir[256];
	snprintf(dir, sizeof(dir), "%s/hf-bad", tmp);
	mkdir(dir, 0700);
	struct hf_set s = { 0 };
	export_hf(g, c, fused, &s);
	CHECK_EQ_INT(write_checkpoint(dir, c, &s, f), 0);
	hf_set_free(&s);
	struct hf_model *h = hf_model_import(dir, err, sizeof(err));
	CHECK(h == NULL);
	printf("refused: %s\n", err);
	if (!CHECK(strstr(err, want) != NULL && (!want2 || strstr(err, want2) != NULL)))
		fprintf(stderr, "expected the message to name '%s'%s%s\n", want, want2 ? " and " : "", want2 ? want2 : "");
	hf_model_free(h);
	remove_checkpoint(dir);
	rmdir(dir);
}

static int run_roundtrip(void)
{
	char tmp[] = "/tmp/sixi-test-moe-hf-XXXXXX", path[256], err[1024];
	if (!mkdtemp(tmp))
		return test_skip("cannot make a temporary directory");
	snprintf(path, sizeof(path), "%s/tiny-moe.gguf", tmp);
	if (!CHECK(model_write_tiny_moe(path, GGUF_TENSOR_F32, err, sizeof(err)) == 0)) {
		fprintf(stderr, "%s\n", err);
		return test_done();
	}
	roundtrip(tmp, path, 1, 0);
	roundtrip(tmp, path, 0, 0);
	roundtrip(tmp, path, 0, 1);

	struct gguf *g = gguf_open(path, err, sizeof(err));
	struct model_config c;
	if (CHECK(g && model_config_from_gguf(g, path, &c, err, sizeof(err)) == 0)) {
		struct writing f1 = { .drop = "model.layers.1.mlp.experts.3.up_proj.weight" };
		refuse(tmp, g, &c, 0, &f1, "missing tensor 'model.layers.1.mlp.experts.3.up_proj.weight'", NULL);
		struct writing f2 = { .halve = "model.layers.2.mlp.experts.gate_up_proj" };
		refuse(tmp, g, &c, 1, &f2, "'model.layers.2.mlp.experts.gate_up_proj' has shape [16, 64, 128]",
		       "expected [16, 128, 128]");
		struct writing f3 = { .drop = "model.layers.0.mlp.experts.gate_up_proj" };
		refuse(tmp, g, &c, 1, &f3, "'model.layers.0.mlp.experts.gate_up_proj' (fused experts)",
		       "'model.layers.0.mlp.experts.0.gate_proj.weight' (one per expert)");
		struct writing f4 = { .halve = "model.layers.3.mlp.experts.5.down_proj.weight" };
		refuse(tmp, g, &c, 0, &f4, "'model.layers.3.mlp.experts.5.down_proj.weight'", "expected 128 x 64");
		struct writing f5 = { .drop = "model.layers.0.mlp.shared_expert_gate.weight" };
		refuse(tmp, g, &c, 1, &f5, "missing tensor 'model.layers.0.mlp.shared_expert_gate.weight'", NULL);
		struct writing f6 = { .no_key = "num_experts" };
		refuse(tmp, g, &c, 1, &f6, "missing integer key 'num_experts'", NULL);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	gguf_close(g);
	unlink(path);
	rmdir(tmp);
	return test_done();
}

/* ======== against transformers ======== */

struct ref {
	int n_seq, vocab;
	int len[8];
	int32_t *tok[8];
	float *logits[8]; /* [len][vocab] */
	int32_t greedy[64];
	int n_greedy;
};

static int load_ref(struct ref *r, char *err, size_t errlen)
{
	cJSON *j = json_parse_file(test_src_path(FIX "/reference.json"), err, errlen);
	if (!j)
		return -1;
	int64_t v = 0;
	json_get_i64(j, "vocab", &v);
	r->vocab = (int)v;
	const cJSON *seqs = cJSON_GetObjectItem(j, "sequences"), *gr = cJSON_GetObjectItem(j, "greedy_after_seq1");
	r->n_seq = cJSON_GetArraySize(seqs);
	if (r->vocab <= 0 || r->n_seq < 2 || r->n_seq > 8) {
		snprintf(err, errlen, "%s: no vocab or 2..8 sequences", FIX "/reference.json");
		cJSON_Delete(j);
		return -1;
	}
	r->n_greedy = cJSON_IsArray(gr) ? cJSON_GetArraySize(gr) : 0;
	if (r->n_greedy > 64)
		r->n_greedy = 64;
	for (int i = 0; i < r->n_greedy; i++)
		r->greedy[i] = cJSON_GetArrayItem(gr, i)->valueint;
	FILE *f = fopen(test_src_path(FIX "/logits.f32"), "rb");
	int rc = f ? 0 : -1;
	for (int s = 0; !rc && s < r->n_seq; s++) {
		const cJSON *a = cJSON_GetArrayItem(seqs, s);
		r->len[s] = cJSON_GetArraySize(a);
		r->tok[s] = malloc(sizeof(int32_t) * (size_t)r->len[s]);
		for (int i = 0; i < r->len[s]; i++)
			r->tok[s][i] = cJSON_GetArrayItem(a, i)->valueint;
		size_t n = (size_t)r->len[s] * (size_t)r->vocab;
		r->logits[s] = malloc(sizeof(float) * n);
		if (fread(r->logits[s], sizeof(float), n, f) != n)
			rc = -1;
	}
	if (rc)
		snprintf(err, errlen, "%s: missing or shorter than reference.json says", FIX "/logits.f32");
	if (f)
		fclose(f);
	cJSON_Delete(j);
	return rc;
}

/* Positions whose argmax differs from the reference's, among those whose reference top two
 * are further apart than LOGIT_TOL of the largest |logit| (*close counts the others). */
static int argmax_mismatches(const float *a, const float *ref, int rows, int vocab, int *close)
{
	int bad = 0;
	for (int r = 0; r < rows; r++) {
		const float *x = ref + (size_t)r * vocab;
		int b = greedy_argmax(x, vocab);
		double second = -INFINITY, mx = 0;
		for (int i = 0; i < vocab; i++) {
			if (i != b && x[i] > second)
				second = x[i];
			mx = fmax(mx, fabs((double)x[i]));
		}
		if (x[b] - second <= LOGIT_TOL * mx) {
			(*close)++;
			continue;
		}
		bad += greedy_argmax(a + (size_t)r * vocab, vocab) != b;
	}
	return bad;
}

static void check_model(struct model *m, const struct ref *r, const char *via)
{
	CHECK_EQ_INT(model_get_config(m)->n_vocab, r->vocab);
	for (int s = 0; s < r->n_seq; s++) {
		int n = r->len[s];
		float *out = malloc(sizeof(float) * (size_t)n * r->vocab);
		int32_t *slots = calloc((size_t)n, sizeof(int32_t));
		struct model_state *st = model_state_create(m, 1, n + 8);
		struct model_batch b = { n, r->tok[s], slots, NULL, NULL };
		CHECK_EQ_INT(model_forward(m, st, &b, out), 0);
		double e = greedy_rel_err(out, r->logits[s], n, r->vocab);
		int close = 0, bad = argmax_mismatches(out, r->logits[s], n, r->vocab, &close);
		printf("%s: sequence %d (%d tokens): max relative logit error %.3g (tolerance %g); argmax differs at %d "
		       "of %d positions (%d near-ties not counted)\n", via, s, n, e, LOGIT_TOL, bad, n - close, close);
		CHECK(e < LOGIT_TOL);
		CHECK_EQ_INT(bad, 0);
		/* the same sequence one row per pass (decode) */
		if (s == r->n_seq - 1) {
			model_state_slot_reset(st, 0);
			for (int t = 0; t < n; t++) {
				struct model_batch b1 = { 1, &r->tok[s][t], slots, NULL, NULL };
				CHECK_EQ_INT(model_forward(m, st, &b1, out + (size_t)t * r->vocab), 0);
			}
			e = greedy_rel_err(out, r->logits[s], n, r->vocab);
			printf("%s: sequence %d one row per pass: max relative logit error %.3g\n", via, s, e);
			CHECK(e < LOGIT_TOL);
		}
		model_state_destroy(st);
		free(slots);
		free(out);
	}
	if (r->n_greedy > 0) {
		int32_t got[64];
		CHECK_EQ_INT(greedy_reference(m, r->tok[1], r->len[1], r->n_greedy, got), 0);
		int k = 0;
		while (k < r->n_greedy && got[k] == r->greedy[k])
			k++;
		printf("%s: greedy after sequence 1: the first %d of %d tokens equal transformers' generate()\n", via, k,
		       r->n_greedy);
		CHECK_EQ_INT(k, r->n_greedy);
	}
}

static int run_transformers(void)
{
	struct stat sb;
	if (stat(test_src_path(FIX), &sb) != 0)
		return test_skip(FIX " does not exist yet: make it once with a Python that has torch and "
			"transformers (python3 tests/fixtures/model/make_reference_moe.py OUTDIR; "
			"copy OUTDIR/* there)");
	char err[1024] = "";
	struct ref r;
	memset(&r, 0, sizeof(r));
	if (!CHECK(load_ref(&r, err, sizeof(err)) == 0)) {
		fprintf(stderr, "%s\n", err);
		return test_done();
	}
	struct hf_model *h = hf_model_import(test_src_path(FIX), err, sizeof(err));
	if (!CHECK(h != NULL)) {
		fprintf(stderr, "%s\n", err);
		return test_done();
	}
	const struct model_config *c = hf_model_config(h);
	printf("checkpoint: %d layers, %d experts of width %d, %d used a row, shared expert of width %d\n", c->n_layer,
	       c->n_expert, c->n_ff_exp, c->n_expert_used, c->n_ff);
	CHECK(c->n_expert > 1);
	struct model *m = hf_model_create(h, 2, err, sizeof(err));
	if (CHECK(m != NULL)) {
		check_model(m, &r, "HF import");
		model_free(m);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	char path[] = "/tmp/sixi-test-moe-hf-XXXXXX";
	int fd = mkstemp(path);
	if (CHECK(fd >= 0))
		close(fd);
	struct gguf_writer *w = gguf_writer_create();
	CHECK_EQ_INT(hf_model_write_gguf(h, w, GGUF_TENSOR_F32, path, err, sizeof(err)), 0);
	gguf_writer_destroy(w);
	m = model_load(path, 2, err, sizeof(err));
	if (CHECK(m != NULL)) {
		CHECK_EQ_STR(gguf_get_str(model_gguf(m), "general.architecture"), "qwen35moe");
		check_model(m, &r, "GGUF (F32)");
		model_free(m);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	unlink(path);
	hf_model_free(h);
	for (int s = 0; s < r.n_seq; s++) {
		free(r.tok[s]);
		free(r.logits[s]);
	}
	return test_done();
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "roundtrip") == 0)
		return run_roundtrip();
	if (argc == 2 && strcmp(argv[1], "transformers") == 0)
		return run_transformers();
	fprintf(stderr, "usage: test_model_moe_hf roundtrip|transformers\n");
	return 2;
}
