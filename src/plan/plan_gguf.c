/* plan_gguf — fills struct plan_model from a GGUF file's metadata, with llama.cpp's key
 * names ("ARCH.block_count", "ARCH.attention.head_count_kv", "ARCH.ssm.*", ...), and
 * takes the weight bytes from the tensor table.
 *
 * Layer kinds: the Gated DeltaNet architectures (qwen3next, qwen35, qwen35moe) mark a
 * layer full attention when (i + 1) % ARCH.full_attention_interval == 0 (default 4), as
 * llama.cpp does; their ssm keys mean: group_count = K-heads, time_step_rank = V-heads,
 * state_size = d_k, inner_size = V-heads x d_v. Other hybrids (jamba, granitehybrid,
 * nemotron_h, ...) carry head_count_kv as a per-layer array in which 0 marks a Mamba
 * layer; mamba/mamba2 are all Mamba. Trailing nextn (MTP) layers are left out.
 *
 * What it does not do: sliding-window layers of GGUF models are counted as full
 * attention (an overestimate), and it reads nothing but metadata and the tensor table. */
#include "plan/plan.h"
#include "core/err.h"
#include "plan/plan_gguf.h"
#include "gguf/gguf.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool key_u32(const struct gguf *g, const char *arch, const char *suffix, uint32_t *out)
{
	char key[160];
	uint64_t v;
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	if (!gguf_get_u64(g, key, &v) || v == 0 || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool is_gdn_arch(const char *arch)
{
	return strcmp(arch, "qwen3next") == 0 || strcmp(arch, "qwen35") == 0 || strcmp(arch, "qwen35moe") == 0;
}

int plan_model_from_gguf(const struct gguf *g, const char *name, struct plan_model *m, char *err, size_t errlen)
{
	plan_model_init(m);
	snprintf(m->name, sizeof m->name, "%s", name ? name : "model.gguf");
	const char *arch = gguf_get_str(g, "general.architecture");
	if (!arch) {
		err_set(err, errlen, "%s: missing general.architecture; not a model GGUF", m->name);
		return -EINVAL;
	}
	snprintf(m->arch, sizeof m->arch, "%s", arch);
	char missing[512] = "";
#define NEED(suffix, out)                                                                                    \
	do {                                                                                                 \
		if (!key_u32(g, arch, suffix, out))                                                          \
			snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s.%s",      \
				 missing[0] ? ", " : "", arch, suffix);                                       \
	} while (0)

	uint32_t n_layers = 0, nextn = 0, heads = 0, interval = 4;
	NEED("block_count", &n_layers);
	if (key_u32(g, arch, "nextn_predict_layers", &nextn) && nextn < n_layers)
		n_layers -= nextn;
	m->n_layers = n_layers;
	key_u32(g, arch, "embedding_length", &m->hidden_size);
	uint32_t ctx = 0, ff = 0, eff = 0, used = 0;
	if (key_u32(g, arch, "context_length", &ctx))
		m->max_context_tokens = ctx;
	if (key_u32(g, arch, "expert_feed_forward_length", &eff) && key_u32(g, arch, "expert_used_count", &used))
		m->ffn_size = eff * used;
	else if (key_u32(g, arch, "feed_forward_length", &ff))
		m->ffn_size = ff;
	long tok = gguf_find_key(g, "tokenizer.ggml.tokens");
	if (tok >= 0)
		m->vocab_size = (uint32_t)gguf_kv_array_len(g, (size_t)tok);
	else
		key_u32(g, arch, "vocab_size", &m->vocab_size);

	/* layer kinds */
	char kv_key[160];
	snprintf(kv_key, sizeof kv_key, "%s.attention.head_count_kv", arch);
	long kv_idx = gguf_find_key(g, kv_key);
	bool kv_array = kv_idx >= 0 && gguf_kv_type(g, (size_t)kv_idx) == GGUF_TYPE_ARRAY;
	bool ssm = strcmp(arch, "mamba") == 0 || strcmp(arch, "mamba2") == 0;
	uint32_t array_attn = 0, array_zero = 0;
	if (kv_array) {
		/* per-layer KV heads: all attention layers must agree; 0 marks a recurrent layer */
		size_t n = gguf_kv_array_len(g, (size_t)kv_idx);
		for (size_t i = 0; i < n && i < n_layers; i++) {
			int64_t v = 0;
			if (!gguf_get_arr_i64(g, (size_t)kv_idx, i, &v) || v < 0 || v > UINT32_MAX) {
				err_set(err, errlen, "%s: %s[%zu] is not a head count", m->name, kv_key, i);
				return -EINVAL;
			}
			if (v && m->n_kv_heads && (uint32_t)v != m->n_kv_heads) {
				err_set(err, errlen, "%s: %s differs between attention layers (%u and %" PRId64 "); "
					 "not supported", m->name, kv_key, m->n_kv_heads, v);
				return -ENOTSUP;
			}
			if (v) {
				m->n_kv_heads = (uint32_t)v;
				array_attn++;
			} else {
				array_zero++;
			}
		}
	}
	if (is_gdn_arch(arch)) {
		key_u32(g, arch, "full_attention_interval", &interval);
		for (uint32_t i = 0; i < n_layers; i++) {
			if ((i + 1) % interval == 0)
				m->n_attn++;
			else
				m->n_gdn++;
		}
	} else if (kv_array) {
		m->n_attn = array_attn;
		m->n_mamba = array_zero;
	} else if (ssm) {
		m->n_mamba = n_layers;
	} else {
		m->n_attn = n_layers;
		if (strcmp(arch, "falcon-h1") == 0)
			m->n_mamba = n_layers;
	}

	/* attention */
	if (m->n_attn) {
		uint32_t rank = 0, rope = 0;
		if (key_u32(g, arch, "attention.kv_lora_rank", &rank)) {
			NEED("rope.dimension_count", &rope);
			m->mla_kv_elems = rank + rope;
		} else {
			NEED("attention.head_count", &heads);
			if (!kv_array && !key_u32(g, arch, "attention.head_count_kv", &m->n_kv_heads))
				m->n_kv_heads = heads;
			if (!key_u32(g, arch, "attention.key_length", &m->head_dim_k) && heads && m->hidden_size)
				m->head_dim_k = m->hidden_size / heads;
			if (!key_u32(g, arch, "attention.value_length", &m->head_dim_v))
				m->head_dim_v = m->head_dim_k;
			if (!m->head_dim_k)
				NEED("attention.key_length", &m->head_dim_k);
		}
	}
	/* recurrent layers */
	if (m->n_gdn) {
		uint32_t inner = 0;
		NEED("ssm.group_count", &m->gdn_k_heads);
		NEED("ssm.time_step_rank", &m->gdn_v_heads);
		NEED("ssm.state_size", &m->gdn_k_dim);
		NEED("ssm.inner_size", &inner);
		NEED("ssm.conv_kernel", &m->gdn_conv_kernel);
		if (m->gdn_v_heads)
			m->gdn_v_dim = inner / m->gdn_v_heads;
	}
	if (m->n_mamba) {
		NEED("ssm.inner_size", &m->mamba_d_inner);
		NEED("ssm.state_size", &m->mamba_d_state);
		NEED("ssm.conv_kernel", &m->mamba_conv_kernel);
		if (!key_u32(g, arch, "ssm.group_count", &m->mamba_n_groups))
			m->mamba_n_groups = 0; /* Mamba-1 */
	}
#undef NEED
	if (missing[0]) {
		err_set(err, errlen, "%s: missing metadata %s (needed to size the KV cache or recurrent state)",
			 m->name, missing);
		return -EINVAL;
	}

	uint64_t bytes = 0, params = 0;
	for (size_t i = 0; i < gguf_tensor_count(g); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);
		uint64_t n = 1;
		for (uint32_t d = 0; d < t->n_dims && d < 4; d++)
			n *= t->ne[d];
		bytes += t->n_bytes;
		params += n;
	}
	m->weight_bytes = bytes;
	m->n_params = params;
	m->weight_source = "GGUF tensor bytes";
	return plan_model_check(m, err, errlen);
}

int plan_model_from_gguf_file(const char *path, struct plan_model *m, char *err, size_t errlen)
{
	struct gguf *g = gguf_open(path, err, errlen);
	if (!g)
		return -EINVAL;
	int rc = plan_model_from_gguf(g, path, m, err, errlen);
	gguf_close(g);
	return rc;
}
