/* plan_config — fills struct plan_model from a Hugging Face config.json and finds the
 * weight bytes beside it.
 *
 * Field lookup: text_config first (multimodal wrappers such as Qwen3.5 or Gemma 3 keep
 * the language model there), then the top level. Layer kinds come from, in order:
 * layer_types, layers_block_type, hybrid_override_pattern (Nemotron-H: M = Mamba,
 * * = attention, - and E = MLP only), full_attention_interval with the linear_* GDN
 * fields (Qwen3-Next: layer i is full attention when (i + 1) % interval == 0, default
 * 4), attn_layer_period/offset (Jamba), the model type (pure Mamba, Falcon-H1's
 * parallel attention + Mamba), Qwen2-style use_sliding_window / max_window_layers;
 * otherwise every layer is full attention.
 *
 * What it does not do: it does not validate the rest of the config, and it does not
 * estimate parameters of Mamba or MLA layers (weights then come from the files or from
 * --weights). Every field that is needed and absent is named in one message. */
#include "plan/plan.h"
#include "core/err.h"
#include "core/buf.h"
#include "core/json.h"
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "plan/plan_gguf.h"

struct cfg {
	const cJSON *text, *root;
	struct buf missing;  /* ", "-separated names of needed fields that are absent */
	struct buf bad;      /* first field present with an unusable value */
};

static const cJSON *lookup(const struct cfg *c, const char *key)
{
	const cJSON *it = c->text ? cJSON_GetObjectItemCaseSensitive(c->text, key) : NULL;
	if (!it || cJSON_IsNull(it))
		it = cJSON_GetObjectItemCaseSensitive(c->root, key);
	return it && !cJSON_IsNull(it) ? it : NULL;
}

/* 1: *out set to a positive integer; 0: absent; -1: present but not a positive integer
 * below 2^32 (recorded in c->bad). */
static int field_u32(struct cfg *c, const char *key, uint32_t *out)
{
	const cJSON *it = lookup(c, key);
	if (!it)
		return 0;
	double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
	if (!cJSON_IsNumber(it) || d != (double)(int64_t)d || d <= 0 || d > 4294967295.0) {
		if (!c->bad.len) {
			char *s = cJSON_PrintUnformatted(it);
			int rc = buf_printf(&c->bad, "%s is %s; it must be a positive integer", key, s ? s : "?");
			(void)rc;
			free(s);
		}
		return -1;
	}
	*out = (uint32_t)d;
	return 1;
}

/* First of the NULL-terminated alternatives that is present. */
static int field_any(struct cfg *c, const char *const *keys, uint32_t *out)
{
	for (size_t i = 0; keys[i]; i++) {
		int rc = field_u32(c, keys[i], out);
		if (rc)
			return rc;
	}
	return 0;
}

static void need(struct cfg *c, const char *what)
{
	int rc = buf_printf(&c->missing, "%s%s", c->missing.len ? ", " : "", what);
	(void)rc;
}

/* Required field with alternatives; records the first name (and the others) when absent. */
static void require_any(struct cfg *c, const char *const *keys, uint32_t *out, const char *label)
{
	if (field_any(c, keys, out) == 0)
		need(c, label);
}

static const char *model_type(const struct cfg *c)
{
	const cJSON *t = lookup(c, "model_type");
	return cJSON_IsString(t) ? t->valuestring : "";
}

/* ---- layer kinds ---- */

enum kind { KIND_NONE, KIND_ATTN, KIND_SWA, KIND_GDN, KIND_MAMBA, KIND_BOTH };

static int kind_of(const char *s, enum kind *k)
{
	static const struct {
		const char *name;
		enum kind k;
	} names[] = {
		{ "full_attention", KIND_ATTN }, { "attention", KIND_ATTN }, { "global_attention", KIND_ATTN },
		{ "sliding_attention", KIND_SWA }, { "local_attention", KIND_SWA },
		{ "chunked_attention", KIND_SWA }, { "linear_attention", KIND_GDN },
		{ "mamba", KIND_MAMBA }, { "mamba2", KIND_MAMBA }, { "ssm", KIND_MAMBA },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(s, names[i].name) == 0) {
			*k = names[i].k;
			return 0;
		}
	return -EINVAL;
}

static void count_kind(struct plan_model *m, enum kind k)
{
	switch (k) {
	case KIND_ATTN: m->n_attn++; break;
	case KIND_SWA: m->n_swa++; break;
	case KIND_GDN: m->n_gdn++; break;
	case KIND_MAMBA: m->n_mamba++; break;
	case KIND_BOTH: m->n_attn++; m->n_mamba++; break;
	case KIND_NONE: break;
	}
}

static int layer_kinds(struct cfg *c, struct plan_model *m, char *err, size_t errlen)
{
	const char *name = m->name;
	const cJSON *types = lookup(c, "layer_types");
	const char *types_key = "layer_types";
	if (!types) {
		types = lookup(c, "layers_block_type");
		types_key = "layers_block_type";
	}
	if (types) {
		if (!cJSON_IsArray(types)) {
			err_set(err, errlen, "%s: %s must be an array of layer kinds", name, types_key);
			return -EINVAL;
		}
		int n = cJSON_GetArraySize(types);
		if (m->n_layers && (uint32_t)n < m->n_layers) {
			err_set(err, errlen, "%s: %s has %d entries but num_hidden_layers is %u", name, types_key,
				 n, m->n_layers);
			return -EINVAL;
		}
		for (int i = 0; i < (int)m->n_layers; i++) {
			const cJSON *t = cJSON_GetArrayItem(types, i);
			enum kind k;
			if (!cJSON_IsString(t) || kind_of(t->valuestring, &k)) {
				err_set(err, errlen, "%s: %s[%d] is %s; supported: full_attention, "
					 "sliding_attention, chunked_attention, linear_attention, mamba", name,
					 types_key, i, cJSON_IsString(t) ? t->valuestring : "not a string");
				return -EINVAL;
			}
			count_kind(m, k);
		}
		return 0;
	}
	const cJSON *pattern = lookup(c, "hybrid_override_pattern");
	if (cJSON_IsString(pattern)) {
		const char *p = pattern->valuestring;
		if (m->n_layers && strlen(p) != m->n_layers) {
			err_set(err, errlen, "%s: hybrid_override_pattern has %zu layers but num_hidden_layers is %u",
				 name, strlen(p), m->n_layers);
			return -EINVAL;
		}
		for (; *p; p++) {
			if (*p == 'M')
				m->n_mamba++;
			else if (*p == '*')
				m->n_attn++;
			else if (*p != '-' && *p != 'E') {
				err_set(err, errlen, "%s: hybrid_override_pattern has '%c'; expected M, *, - or E",
					 name, *p);
				return -EINVAL;
			}
		}
		return 0;
	}
	const char *mt = model_type(c);
	uint32_t interval = 0, period = 0, offset = 0;
	if (lookup(c, "linear_num_value_heads") || field_u32(c, "full_attention_interval", &interval) > 0) {
		if (!interval && field_u32(c, "full_attention_interval", &interval) <= 0)
			interval = 4; /* the transformers default for Qwen3-Next */
		for (uint32_t i = 0; i < m->n_layers; i++)
			count_kind(m, (i + 1) % interval == 0 ? KIND_ATTN : KIND_GDN);
		return 0;
	}
	if (field_u32(c, "attn_layer_period", &period) > 0) {
		if (field_u32(c, "attn_layer_offset", &offset) < 0)
			offset = 0;
		for (uint32_t i = 0; i < m->n_layers; i++)
			count_kind(m, i % period == offset ? KIND_ATTN : KIND_MAMBA);
		return 0;
	}
	enum kind all = KIND_ATTN;
	if (strcmp(mt, "mamba") == 0 || strcmp(mt, "mamba2") == 0 || strcmp(mt, "falcon_mamba") == 0)
		all = KIND_MAMBA;
	else if (strcmp(mt, "falcon_h1") == 0)
		all = KIND_BOTH;
	const cJSON *use_swa = lookup(c, "use_sliding_window");
	uint32_t max_window_layers = 0, window = 0;
	bool qwen2_swa = cJSON_IsTrue(use_swa) && field_u32(c, "sliding_window", &window) > 0;
	if (qwen2_swa && field_u32(c, "max_window_layers", &max_window_layers) < 0)
		max_window_layers = 0;
	for (uint32_t i = 0; i < m->n_layers; i++)
		count_kind(m, qwen2_swa && i >= max_window_layers ? KIND_SWA : all);
	return 0;
}

/* ---- per-kind fields ---- */

#define KEYS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void attention_fields(struct cfg *c, struct plan_model *m)
{
	uint32_t heads = 0, hidden = 0, rank = 0, rope = 0;
	if (field_u32(c, "kv_lora_rank", &rank) > 0) {
		/* MLA: one compressed latent plus the decoupled RoPE key per layer and token */
		require_any(c, KEYS("qk_rope_head_dim"), &rope, "qk_rope_head_dim");
		m->mla_kv_elems = rank + rope;
		return;
	}
	int has_heads = field_any(c, KEYS("num_attention_heads", "n_head", "num_heads"), &heads);
	int has_kv = field_any(c, KEYS("num_key_value_heads", "num_kv_heads", "n_head_kv",
				       "multi_query_group_num"), &m->n_kv_heads);
	if (has_kv == 0) {
		if (has_heads > 0)
			m->n_kv_heads = heads; /* transformers' default: no GQA */
		else
			need(c, "num_key_value_heads");
	}
	uint32_t hd = 0;
	if (field_any(c, KEYS("head_dim", "attention_head_dim", "kv_channels"), &hd) == 0) {
		if (has_heads > 0 && field_u32(c, "hidden_size", &hidden) > 0 && hidden % heads == 0)
			hd = hidden / heads;
		else
			need(c, "head_dim (or hidden_size and num_attention_heads)");
	}
	m->head_dim_k = m->head_dim_v = hd;
	if (m->n_swa)
		require_any(c, KEYS("sliding_window", "attention_chunk_size"), &m->swa_window_tokens,
			    "sliding_window");
}

static void gdn_fields(struct cfg *c, struct plan_model *m)
{
	require_any(c, KEYS("linear_num_key_heads"), &m->gdn_k_heads, "linear_num_key_heads");
	require_any(c, KEYS("linear_num_value_heads"), &m->gdn_v_heads, "linear_num_value_heads");
	require_any(c, KEYS("linear_key_head_dim"), &m->gdn_k_dim, "linear_key_head_dim");
	require_any(c, KEYS("linear_value_head_dim"), &m->gdn_v_dim, "linear_value_head_dim");
	require_any(c, KEYS("linear_conv_kernel_dim"), &m->gdn_conv_kernel, "linear_conv_kernel_dim");
}

static void mamba_fields(struct cfg *c, struct plan_model *m)
{
	bool pure = strncmp(model_type(c), "mamba", 5) == 0 || strcmp(model_type(c), "falcon_mamba") == 0;
	uint32_t heads = 0, head_dim = 0, expand = 0, hidden = 0;
	require_any(c, KEYS("mamba_d_state", "ssm_state_size", "state_size"), &m->mamba_d_state,
		    "mamba_d_state (or ssm_state_size / state_size)");
	require_any(c, KEYS("mamba_d_conv", "conv_kernel", "mamba_conv_kernel"), &m->mamba_conv_kernel,
		    "mamba_d_conv (or conv_kernel)");
	int has_heads = pure ? field_any(c, KEYS("num_heads"), &heads)
			     : field_any(c, KEYS("mamba_n_heads", "mamba_num_heads"), &heads);
	int has_hd = pure ? field_any(c, KEYS("head_dim"), &head_dim)
			  : field_any(c, KEYS("mamba_d_head", "mamba_head_dim"), &head_dim);
	if (has_heads > 0 && has_hd > 0) {
		m->mamba_d_inner = heads * head_dim; /* Mamba-2 */
		if (field_any(c, KEYS("mamba_n_groups", "n_groups"), &m->mamba_n_groups) <= 0)
			m->mamba_n_groups = 1;
	} else if (field_any(c, KEYS("mamba_d_ssm"), &m->mamba_d_inner) > 0) {
		if (field_any(c, KEYS("mamba_n_groups", "n_groups"), &m->mamba_n_groups) <= 0)
			m->mamba_n_groups = 1;
	} else if (pure && field_u32(c, "intermediate_size", &m->mamba_d_inner) > 0) {
		m->mamba_n_groups = 0; /* Mamba-1 */
	} else if (field_any(c, KEYS("mamba_expand", "expand"), &expand) > 0 &&
		   field_u32(c, "hidden_size", &hidden) > 0) {
		m->mamba_d_inner = expand * hidden;
		if (field_any(c, KEYS("mamba_n_groups", "n_groups"), &m->mamba_n_groups) <= 0)
			m->mamba_n_groups = 0;
	} else {
		need(c, "mamba_n_heads and mamba_d_head (or mamba_expand and hidden_size)");
	}
}

static void size_fields(struct cfg *c, struct plan_model *m)
{
	uint32_t experts_per_tok = 0, moe = 0, shared = 0, ctx = 0;
	if (field_u32(c, "hidden_size", &m->hidden_size) < 0)
		m->hidden_size = 0;
	if (field_u32(c, "vocab_size", &m->vocab_size) < 0)
		m->vocab_size = 0;
	if (field_any(c, KEYS("moe_intermediate_size"), &moe) > 0 &&
	    field_any(c, KEYS("num_experts_per_tok", "num_experts_per_token", "moe_topk"), &experts_per_tok) > 0) {
		if (field_u32(c, "shared_expert_intermediate_size", &shared) <= 0)
			shared = 0;
		m->ffn_size = moe * experts_per_tok + shared;
	} else if (field_any(c, KEYS("intermediate_size", "ffn_hidden_size"), &m->ffn_size) < 0) {
		m->ffn_size = 0;
	}
	if (field_any(c, KEYS("max_position_embeddings", "max_seq_len", "n_positions"), &ctx) > 0)
		m->max_context_tokens = ctx;
	const cJSON *dt = lookup(c, "torch_dtype");
	if (!dt)
		dt = lookup(c, "dtype");
	if (cJSON_IsString(dt) && plan_dtype_parse(dt->valuestring, &m->weight_dtype))
		m->weight_dtype = PLAN_DTYPE_BF16;
	/* the validation above only records bad values; clear them here since these are optional */
	buf_reset(&c->bad);
}

int plan_model_from_json(const cJSON *config, const char *name, struct plan_model *m, char *err, size_t errlen)
{
	plan_model_init(m);
	snprintf(m->name, sizeof m->name, "%s", name ? name : "config.json");
	if (!cJSON_IsObject(config)) {
		err_set(err, errlen, "%s: not a JSON object; expected a Hugging Face config.json", m->name);
		return -EINVAL;
	}
	struct cfg c = { .root = config };
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(config, "text_config");
	c.text = cJSON_IsObject(text) ? text : NULL;
	buf_init(&c.missing);
	buf_init(&c.bad);
	snprintf(m->arch, sizeof m->arch, "%s", model_type(&c));

	int rc = 0;
	size_fields(&c, m);
	require_any(&c, KEYS("num_hidden_layers", "n_layer", "num_layers", "n_layers"), &m->n_layers,
		    "num_hidden_layers");
	if (c.bad.len || c.missing.len)
		goto check;
	rc = layer_kinds(&c, m, err, errlen);
	if (rc)
		goto out;
	if (m->n_attn || m->n_swa)
		attention_fields(&c, m);
	if (m->n_gdn)
		gdn_fields(&c, m);
	if (m->n_mamba)
		mamba_fields(&c, m);
check:
	if (c.bad.len) {
		err_set(err, errlen, "%s: %s", m->name, c.bad.data);
		rc = -EINVAL;
	} else if (c.missing.len) {
		err_set(err, errlen, "%s: missing %s (needed to size the %s); add %s to the config or use a "
			 "GGUF with this metadata", m->name, c.missing.data,
			 m->n_gdn || m->n_mamba ? "KV cache and recurrent state" : "KV cache",
			 strchr(c.missing.data, ',') ? "them" : "it");
		rc = -EINVAL;
	} else {
		rc = plan_model_check(m, err, errlen);
	}
out:
	buf_finish(&c.missing);
	buf_finish(&c.bad);
	return rc;
}

/* ---- parameters from shapes ---- */

static uint64_t num(const cJSON *cfg, const char *key)
{
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
	int64_t v = 0;
	if (!(cJSON_IsObject(text) && json_get_i64(text, key, &v)) && !json_get_i64(cfg, key, &v))
		return 0;
	return v > 0 ? (uint64_t)v : 0;
}

static bool flag(const cJSON *cfg, const char *key)
{
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
	bool v = false;
	if (!(cJSON_IsObject(text) && json_get_bool(text, key, &v)))
		json_get_bool(cfg, key, &v);
	return v;
}

uint64_t plan_params_estimate(const cJSON *config)
{
	struct plan_model m;
	char err[512];
	if (plan_model_from_json(config, "config", &m, err, sizeof err) || m.n_mamba || m.mla_kv_elems)
		return 0;
	uint64_t hidden = num(config, "hidden_size"), vocab = num(config, "vocab_size");
	uint64_t heads = num(config, "num_attention_heads"), hd = m.head_dim_k;
	if (!hidden || !vocab || (m.n_attn + m.n_swa && !heads))
		return 0;
	uint64_t total = vocab * hidden * (flag(config, "tie_word_embeddings") ? 1 : 2) + hidden;
	/* attention: q (doubled by an output gate), k, v, o, q/k norms */
	const char *mt = m.arch;
	bool gate = flag(config, "attn_output_gate") || strcmp(mt, "qwen3_next") == 0;
	uint64_t q_out = heads * hd * (gate ? 2 : 1);
	uint64_t attn = hidden * q_out + 2 * hidden * m.n_kv_heads * hd + heads * hd * hidden + 2 * hd;
	/* GDN: q, k, v, z, b, a projections, the conv, the output projection, A_log, dt_bias, norm */
	uint64_t hk = m.gdn_k_heads, hv = m.gdn_v_heads, dk = m.gdn_k_dim, dv = m.gdn_v_dim;
	uint64_t conv_ch = 2 * hk * dk + hv * dv;
	uint64_t gdn = hidden * (conv_ch + hv * dv + 2 * hv) + conv_ch * m.gdn_conv_kernel + hv * dv * hidden +
		       2 * hv + dv;
	/* MLP: dense SwiGLU or routed experts + router + shared expert and its gate */
	uint64_t experts = num(config, "num_experts") ? num(config, "num_experts")
			 : num(config, "num_local_experts") ? num(config, "num_local_experts")
			 : num(config, "n_routed_experts");
	uint64_t moe = num(config, "moe_intermediate_size"), shared = num(config, "shared_expert_intermediate_size");
	uint64_t mlp = experts && moe ? experts * 3 * hidden * moe + hidden * experts +
						(shared ? 3 * hidden * shared + hidden : 0)
				      : 3 * hidden * num(config, "intermediate_size");
	uint64_t layer_common = mlp + 2 * hidden;
	total += (uint64_t)(m.n_attn + m.n_swa) * (attn + layer_common) + (uint64_t)m.n_gdn * (gdn + layer_common);
	return total;
}

/* ---- files ---- */

static bool is_gguf(const char *path)
{
	char magic[4] = { 0 };
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t got = fread(magic, 1, 4, f);
	fclose(f);
	return got == 4 && memcmp(magic, "GGUF", 4) == 0;
}

/* Weight bytes from the checkpoint next to config.json: the index's total_size, or the
 * sum of the *.safetensors files. 0 when neither is there. */
static uint64_t weights_beside(const char *dir, const char **source)
{
	char path[4096];
	char err[256];
	if (snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir) >= (int)sizeof path)
		return 0;
	cJSON *idx = json_parse_file(path, err, sizeof err);
	int64_t total = 0;
	bool ok = idx && json_get_i64(idx, "metadata.total_size", &total) && total > 0;
	cJSON_Delete(idx);
	if (ok) {
		*source = "model.safetensors.index.json total_size";
		return (uint64_t)total;
	}
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	uint64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;
		if (n <= 12 || strcmp(e->d_name + n - 12, ".safetensors") != 0)
			continue;
		if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
			continue;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	if (sum)
		*source = "sum of *.safetensors sizes";
	return sum;
}

int plan_model_load(const char *path, struct plan_model *m, char *err, size_t errlen)
{
	struct stat st;
	char file[4096], dir[4096];
	if (!path || !*path || stat(path, &st) != 0) {
		err_set(err, errlen, "%s: %s; give a config.json, a model directory or a .gguf file",
			 path ? path : "(none)", path && *path ? strerror(errno) : "no model given");
		return -ENOENT;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(dir, sizeof dir, "%s", path);
		snprintf(file, sizeof file, "%s/config.json", path);
	} else {
		snprintf(file, sizeof file, "%s", path);
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
		else
			snprintf(dir, sizeof dir, ".");
	}
	if (is_gguf(file)) {
#ifdef SIXI_PLAN_GGUF
		return plan_model_from_gguf_file(file, m, err, errlen);
#else
		err_set(err, errlen, "%s: GGUF input is not available in this build; give the model's config.json",
			 file);
		return -ENOTSUP;
#endif
	}
	cJSON *root = json_parse_file(file, err, errlen);
	if (!root)
		return -EINVAL;
	int rc = plan_model_from_json(root, file, m, err, errlen);
	if (rc == 0) {
		m->weight_bytes = weights_beside(dir, &m->weight_source);
		m->n_params = plan_params_estimate(root);
		if (!m->weight_bytes && m->n_params) {
			m->weight_bytes = m->n_params * plan_dtype_bytes(m->weight_dtype);
			m->weight_source = cJSON_GetObjectItemCaseSensitive(root, "quantization_config")
						   ? "estimate: parameters x dtype bytes (the config is quantised: "
						     "real size differs; pass --weights)"
						   : "estimate: parameters from the config's shapes x dtype bytes";
		}
	}
	cJSON_Delete(root);
	return rc;
}
