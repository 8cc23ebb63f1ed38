/* model — see model.h. Sections: config from/to GGUF, weights (and their copy into huge
 * pages), state pool, forward pass.
 *
 * The forward pass works on all rows of a batch at once for every projection (one read of
 * each weight matrix per pass, whatever the number of sequences), and per sequence segment
 * for the parts that carry state: the conv window and delta rule of GDN layers and the KV
 * cache of attention layers. A segment longer than GDN_CHUNK_MIN rows (a prefill) takes the
 * chunked delta rule; shorter ones (decode, short verify windows) the row-by-row rule.
 * Precision: fp32 throughout; g, softplus and exp(A_log) in fp32 as the reference does. */
#include "core/err.h"
#include "model/model.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/gdn.h"
#include "model/gdn_log.h"
#include "gguf/gguf.h"
#include "model/kernels.h"

#define GDN_CHUNK 64
#define GDN_CHUNK_MIN 8
#define L2_EPS 1e-6f /* the reference's l2norm epsilon, independent of rms eps */


/* ======== config ======== */

static const char ARCH[] = "qwen35";
static const char ARCH_MOE[] = "qwen35moe";

static const char *arch_of(const struct model_config *c)
{
	return c->n_expert > 0 ? ARCH_MOE : ARCH;
}

int model_config_check(const struct model_config *c, char *err, size_t errlen)
{
	if (c->n_vocab <= 0 || c->n_embd <= 0 || c->n_layer <= 0 || c->n_ff <= 0 || c->n_head <= 0 ||
	    c->n_head_kv <= 0 || c->head_dim <= 0 || c->ssm_conv_kernel <= 0 || c->ssm_head_dim <= 0 ||
	    c->ssm_n_k_heads <= 0 || c->ssm_n_v_heads <= 0 || c->full_attn_interval <= 0) {
		err_set(err, errlen, "a size is zero or negative");
		return -EINVAL;
	}
	if (c->n_expert < 0 || c->n_expert > 4096 || (c->n_expert > 0 && (c->n_expert_used <= 0 ||
	    c->n_expert_used > c->n_expert || c->n_ff_exp <= 0 || c->n_ff_exp > (1 << 22)))) {
		err_set(err, errlen,
			"expert_used_count %d must be between 1 and expert_count %d (at most 4096), and "
			"expert_feed_forward_length %d positive", c->n_expert_used, c->n_expert, c->n_ff_exp);
		return -EINVAL;
	}
	if (c->n_head % c->n_head_kv) {
		err_set(err, errlen, "attention.head_count %d is not a multiple of head_count_kv %d", c->n_head,
			c->n_head_kv);
		return -EINVAL;
	}
	if (c->ssm_n_v_heads % c->ssm_n_k_heads) {
		err_set(err, errlen, "ssm.time_step_rank (V-heads) %d is not a multiple of ssm.group_count %d",
			c->ssm_n_v_heads, c->ssm_n_k_heads);
		return -EINVAL;
	}
	if (c->n_rot < 0 || c->n_rot > c->head_dim || c->n_rot % 2) {
		err_set(err, errlen, "rope.dimension_count %d must be even and at most key_length %d", c->n_rot,
			c->head_dim);
		return -EINVAL;
	}
	if (!(c->norm_eps > 0) || !(c->rope_theta > 0)) {
		err_set(err, errlen, "rms epsilon and rope.freq_base must be positive");
		return -EINVAL;
	}
	if ((long)c->n_embd * c->n_vocab > (1L << 40) || c->n_embd > (1 << 20) || c->n_ff > (1 << 22) ||
	    c->n_layer > 4096 || (long)c->n_head * c->head_dim > (1 << 20) ||
	    (long)c->ssm_n_v_heads * c->ssm_head_dim > (1 << 20) || c->ssm_conv_kernel > 64) {
		err_set(err, errlen, "sizes beyond what this implementation accepts");
		return -EINVAL;
	}
	return 0;
}

static int key_int(const struct gguf *g, const char *path, const char *arch, const char *suffix, int *out,
		   int required, char *err, size_t errlen)
{
	char key[128];
	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	int64_t v;
	if (!gguf_get_i64(g, key, &v)) {
		if (!required)
			return 0;
		err_set(err, errlen, "%s: missing or non-integer metadata key '%s' (a %s GGUF needs it)", path,
			key, arch);
		return -EINVAL;
	}
	if (v < 0 || v > (1LL << 31) - 1) {
		err_set(err, errlen, "%s: metadata key '%s' = %lld is out of range", path, key, (long long)v);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static int key_float(const struct gguf *g, const char *path, const char *arch, const char *suffix, float *out,
		     int required, char *err, size_t errlen)
{
	char key[128];
	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	double v;
	if (!gguf_get_f64(g, key, &v)) {
		if (!required)
			return 0;
		err_set(err, errlen, "%s: missing or non-float metadata key '%s' (a %s GGUF needs it)", path, key,
			arch);
		return -EINVAL;
	}
	*out = (float)v;
	return 0;
}

int model_config_from_gguf(const struct gguf *g, const char *path, struct model_config *c, char *err,
			   size_t errlen)
{
	memset(c, 0, sizeof(*c));
	const char *arch = gguf_get_str(g, "general.architecture");
	if (!arch) {
		err_set(err, errlen, "%s: missing metadata key 'general.architecture'", path);
		return -EINVAL;
	}
	if (strcmp(arch, ARCH) != 0 && strcmp(arch, ARCH_MOE) != 0) {
		err_set(err, errlen, "%s: architecture '%s' is not supported (supported: qwen35, qwen35moe)", path, arch);
		return -EINVAL;
	}
	int moe = strcmp(arch, ARCH_MOE) == 0;
	int inner = 0, rc = 0;
	c->full_attn_interval = 4;
	c->rope_theta = 10000.0f;
	c->n_ctx_train = 4096;
	if ((rc = key_int(g, path, arch, "embedding_length", &c->n_embd, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "block_count", &c->n_layer, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "feed_forward_length", &c->n_ff, !moe, err, errlen)) ||
	    (rc = key_int(g, path, arch, "attention.head_count", &c->n_head, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "attention.head_count_kv", &c->n_head_kv, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "ssm.conv_kernel", &c->ssm_conv_kernel, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "ssm.state_size", &c->ssm_head_dim, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "ssm.group_count", &c->ssm_n_k_heads, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "ssm.time_step_rank", &c->ssm_n_v_heads, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "ssm.inner_size", &inner, 1, err, errlen)) ||
	    (rc = key_int(g, path, arch, "full_attention_interval", &c->full_attn_interval, 0, err, errlen)) ||
	    (rc = key_int(g, path, arch, "context_length", &c->n_ctx_train, 0, err, errlen)) ||
	    (rc = key_float(g, path, arch, "attention.layer_norm_rms_epsilon", &c->norm_eps, 1, err, errlen)) ||
	    (rc = key_float(g, path, arch, "rope.freq_base", &c->rope_theta, 0, err, errlen)))
		return rc;
	if (moe) {
		/* llama.cpp's defaults: an expert's width n_ff / expert_used_count, the shared
		 * expert's n_ff, when the expert_* lengths are absent */
		int n_ff = c->n_ff, shexp = 0;
		if ((rc = key_int(g, path, arch, "expert_count", &c->n_expert, 1, err, errlen)) ||
		    (rc = key_int(g, path, arch, "expert_used_count", &c->n_expert_used, 1, err, errlen)) ||
		    (rc = key_int(g, path, arch, "expert_feed_forward_length", &c->n_ff_exp, 0, err, errlen)) ||
		    (rc = key_int(g, path, arch, "expert_shared_feed_forward_length", &shexp, 0, err, errlen)))
			return rc;
		if (c->n_expert <= 0 || c->n_expert_used <= 0 || c->n_expert_used > c->n_expert) {
			err_set(err, errlen, "%s: qwen35moe.expert_used_count %d must be between 1 and expert_count %d", path,
				c->n_expert_used, c->n_expert);
			return -EINVAL;
		}
		if (!c->n_ff_exp)
			c->n_ff_exp = n_ff / c->n_expert_used;
		c->n_ff = shexp ? shexp : n_ff;
		if (c->n_ff_exp <= 0 || c->n_ff <= 0) {
			err_set(err, errlen, "%s: qwen35moe needs expert_feed_forward_length and "
				"expert_shared_feed_forward_length (or feed_forward_length)", path);
			return -EINVAL;
		}
	}
	if (c->n_head <= 0) {
		err_set(err, errlen, "%s: %s.attention.head_count must be positive", path, arch);
		return -EINVAL;
	}
	c->head_dim = c->n_embd / c->n_head;
	int vlen = -1;
	if ((rc = key_int(g, path, arch, "attention.key_length", &c->head_dim, 0, err, errlen)) ||
	    (rc = key_int(g, path, arch, "attention.value_length", &vlen, 0, err, errlen)))
		return rc;
	if (vlen >= 0 && vlen != c->head_dim) {
		err_set(err, errlen, "%s: %s.attention.value_length %d differs from key_length %d (unsupported)",
			path, arch, vlen, c->head_dim);
		return -EINVAL;
	}
	c->n_rot = c->head_dim;
	if ((rc = key_int(g, path, arch, "rope.dimension_count", &c->n_rot, 0, err, errlen)))
		return rc;
	if (inner != c->ssm_n_v_heads * c->ssm_head_dim) {
		err_set(err, errlen, "%s: %s.ssm.inner_size %d != time_step_rank %d x state_size %d", path, arch, inner,
			c->ssm_n_v_heads, c->ssm_head_dim);
		return -EINVAL;
	}
	const struct gguf_tensor *emb = gguf_tensor_find(g, "token_embd.weight");
	if (!emb) {
		err_set(err, errlen, "%s: missing tensor 'token_embd.weight'", path);
		return -EINVAL;
	}
	if (emb->ne[1] > (1u << 30)) {
		err_set(err, errlen, "%s: tensor 'token_embd.weight' has an absurd vocabulary", path);
		return -EINVAL;
	}
	c->n_vocab = (int)emb->ne[1];
	char why[256];
	if (model_config_check(c, why, sizeof(why))) {
		err_set(err, errlen, "%s: %s", path, why);
		return -EINVAL;
	}
	return 0;
}

int model_config_to_gguf(const struct model_config *c, struct gguf_writer *w)
{
	char k[128];
	const char *arch = arch_of(c);
	int rc = gguf_writer_set_str(w, "general.architecture", arch);
#define U32(suffix, v)                                                        \
	do {                                                                  \
		snprintf(k, sizeof(k), "%s.%s", arch, suffix);                \
		if (!rc)                                                      \
			rc = gguf_writer_set_u32(w, k, (uint32_t)(v));        \
	} while (0)
#define F32(suffix, v)                                                 \
	do {                                                           \
		snprintf(k, sizeof(k), "%s.%s", arch, suffix);         \
		if (!rc)                                               \
			rc = gguf_writer_set_f32(w, k, (float)(v));    \
	} while (0)
	U32("context_length", c->n_ctx_train);
	U32("embedding_length", c->n_embd);
	U32("block_count", c->n_layer);
	U32("feed_forward_length", c->n_ff);
	U32("attention.head_count", c->n_head);
	U32("attention.head_count_kv", c->n_head_kv);
	U32("attention.key_length", c->head_dim);
	U32("attention.value_length", c->head_dim);
	F32("attention.layer_norm_rms_epsilon", c->norm_eps);
	F32("rope.freq_base", c->rope_theta);
	U32("rope.dimension_count", c->n_rot);
	U32("ssm.conv_kernel", c->ssm_conv_kernel);
	U32("ssm.state_size", c->ssm_head_dim);
	U32("ssm.group_count", c->ssm_n_k_heads);
	U32("ssm.time_step_rank", c->ssm_n_v_heads);
	U32("ssm.inner_size", c->ssm_n_v_heads * c->ssm_head_dim);
	U32("full_attention_interval", c->full_attn_interval);
	if (c->n_expert > 0) {
		U32("expert_count", c->n_expert);
		U32("expert_used_count", c->n_expert_used);
		U32("expert_feed_forward_length", c->n_ff_exp);
		U32("expert_shared_feed_forward_length", c->n_ff);
	}
#undef U32
#undef F32
	/* llama.cpp's qwen35 loader requires the mRoPE sections; for text all three position
	 * streams are equal, so any split gives ordinary partial RoPE. Sections sum to n_rot/2. */
	int32_t sec[4] = { 0, 0, 0, 0 };
	int half = c->n_rot / 2;
	sec[0] = half - 2 * (half / 3);
	sec[1] = half / 3;
	sec[2] = half / 3;
	snprintf(k, sizeof(k), "%s.rope.dimension_sections", arch);
	if (!rc)
		rc = gguf_writer_set_arr_num(w, k, GGUF_TYPE_INT32, sec, 4);
	return rc;
}

/* ======== weights ======== */

struct layer {
	bool attn;
	int index;              /* among GDN layers or among attention layers */
	float *attn_norm;       /* [n_embd] */
	float *post_norm;       /* [n_embd] */
	/* GDN */
	struct kern_mat qkv;    /* n_embd -> conv_dim ([Q | K | V]) */
	struct kern_mat z;      /* n_embd -> H_v*d_v (output gate) */
	struct kern_mat beta;   /* n_embd -> H_v */
	struct kern_mat alpha;  /* n_embd -> H_v */
	struct kern_mat ssm_out;/* H_v*d_v -> n_embd */
	float *conv_w;          /* [conv_dim][conv_kernel] */
	float *dt_bias;         /* [H_v] */
	float *ssm_a;           /* [H_v], −exp(A_log) */
	float *ssm_norm;        /* [d_v] */
	/* attention */
	struct kern_mat wq;     /* n_embd -> n_head*2*head_dim, per head [q | gate] */
	struct kern_mat wk, wv; /* n_embd -> n_head_kv*head_dim */
	struct kern_mat wo;     /* n_head*head_dim -> n_embd */
	float *q_norm, *k_norm; /* [head_dim] */
	/* MLP (qwen35moe: the shared expert) */
	struct kern_mat ffn_gate, ffn_up; /* n_embd -> n_ff */
	struct kern_mat ffn_down;         /* n_ff -> n_embd */
	/* MoE (qwen35moe): views of the 3-D expert tensors, one matrix per expert */
	struct kern_mat router;           /* n_embd -> n_expert (ffn_gate_inp) */
	struct kern_mat shexp_gate;       /* n_embd -> 1 (ffn_gate_inp_shexp), sigmoid-ed */
	struct kern_mat *exp_gate, *exp_up; /* [n_expert]: n_embd -> n_ff_exp */
	struct kern_mat *exp_down;        /* [n_expert]: n_ff_exp -> n_embd */
};

struct model {
	struct model_config cfg;
	struct gguf *gguf;               /* owned when loaded from a file */
	struct model_tensor *tensors;    /* owned view of the GGUF's tensors */
	size_t n_tensors;
	struct kern_pool *pool;
	struct layer *layers;            /* [n_layer] */
	int n_gdn, n_attn;
	struct kern_mat tok_embd;        /* n_embd x n_vocab, rows decoded on demand */
	struct kern_mat output;          /* n_embd -> n_vocab */
	float *output_norm;              /* [n_embd] */
	int conv_dim;                    /* 2*H_k*d_k + H_v*d_v */
	/* forward scratch, grown on demand */
	float *work;
	size_t work_floats;
	int32_t *iwork;                  /* MoE routing: [N*k chosen][n_expert+1 offsets][N*k grouped rows] */
	size_t iwork_n;
	int n_threads;
	void *wmap;                      /* weight matrices copied into huge pages (or NULL) */
	size_t wmap_len;                 /* bytes mapped at wmap */
	float *wf32;                     /* F16/BF16 matrices stored as F32 (model_matrices_f32), or NULL */
};

static uint64_t row_bytes(uint32_t type, uint64_t n)
{
	return kern_type_supported(type) ? gguf_type_row_bytes(type, n) : 0;
}

/* The one message for a weight type the kernels cannot read. */
static void refuse_type(char *err, size_t errlen, const char *source, const char *name, uint32_t type)
{
	err_set(err, errlen,
		"%s: tensor '%s' has type %s (%u), which sixi cannot read; supported: F32, F16, BF16, Q4_0, "
		"Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS (quantize the original to one of "
		"these, e.g. llama-quantize's presets Q4_0, Q4_K_M, Q5_K_M, Q6_K, Q8_0, IQ4_XS)",
		source, name, gguf_type_name(type), type);
}

struct loader {
	model_tensor_find_fn find;
	void *ctx;
	const char *source;
	char *err;
	size_t errlen;
};

/* A tensor of exactly ne0 x ne1 x ne2 (1 for the dimensions it lacks; the fourth must be 1).
 * `hint` (or NULL) is added to a shape mismatch's message. */
static const struct model_tensor *get_tensor3(struct loader *ld, const char *name, uint64_t ne0, uint64_t ne1,
					      uint64_t ne2, int optional, const char *hint)
{
	const struct model_tensor *t = ld->find(ld->ctx, name);
	if (!t) {
		if (!optional)
			err_set(ld->err, ld->errlen, "%s: missing tensor '%s'", ld->source, name);
		return NULL;
	}
	if (!kern_type_supported(t->type)) {
		refuse_type(ld->err, ld->errlen, ld->source, name, t->type);
		return NULL;
	}
	uint64_t ne[4] = { 1, 1, 1, 1 };
	for (uint32_t i = 0; i < t->n_dims && i < 4; i++)
		ne[i] = t->ne[i];
	if (t->n_dims > 4 || ne[0] != ne0 || ne[1] != ne1 || ne[2] != ne2 || ne[3] != 1) {
		char want[96];
		if (ne2 == 1)
			snprintf(want, sizeof(want), "[%llu, %llu]", (unsigned long long)ne0, (unsigned long long)ne1);
		else
			snprintf(want, sizeof(want), "[%llu, %llu, %llu]", (unsigned long long)ne0,
				 (unsigned long long)ne1, (unsigned long long)ne2);
		err_set(ld->err, ld->errlen, "%s: tensor '%s' has shape [%llu, %llu, %llu, %llu], expected %s%s",
			ld->source, name, (unsigned long long)ne[0], (unsigned long long)ne[1],
			(unsigned long long)ne[2], (unsigned long long)ne[3], want, hint ? hint : "");
		return NULL;
	}
	uint64_t rb = row_bytes(t->type, ne0);
	if (rb == 0 || t->n_bytes != rb * ne1 * ne2 || !t->data) {
		err_set(ld->err, ld->errlen, "%s: tensor '%s': %llu bytes of data do not match its %s shape", ld->source,
			name, (unsigned long long)t->n_bytes, gguf_type_name(t->type));
		return NULL;
	}
	return t;
}

static const struct model_tensor *get_tensor(struct loader *ld, const char *name, uint64_t ne0, uint64_t ne1,
					     int optional)
{
	return get_tensor3(ld, name, ne0, ne1, 1, optional, NULL);
}

static int get_mat(struct loader *ld, struct kern_mat *m, const char *name, int n_in, int n_out)
{
	const struct model_tensor *t = get_tensor(ld, name, (uint64_t)n_in, (uint64_t)n_out, 0);
	if (!t)
		return -EINVAL;
	m->data = t->data;
	m->type = t->type;
	m->n_in = n_in;
	m->n_out = n_out;
	m->row_bytes = (size_t)row_bytes(t->type, (uint64_t)n_in);
	return 0;
}

/* Small tensors are decoded once to fp32 (norms, conv kernel, per-head scalars). */
static int get_f32(struct loader *ld, float **out, const char *name, int ne0, int ne1)
{
	const struct model_tensor *t = get_tensor(ld, name, (uint64_t)ne0, (uint64_t)ne1, 0);
	if (!t)
		return -EINVAL;
	float *v = malloc(sizeof(float) * (size_t)ne0 * ne1);
	if (!v) {
		err_set(ld->err, ld->errlen, "%s: out of memory", ld->source);
		return -ENOMEM;
	}
	size_t rb = (size_t)row_bytes(t->type, (uint64_t)ne0);
	for (int r = 0; r < ne1; r++)
		kern_row_to_f32(t->type, (const uint8_t *)t->data + rb * r, v + (size_t)r * ne0, ne0);
	*out = v;
	return 0;
}

/* One matrix per expert over a 3-D tensor [n_in, n_out, n_expert] (ggml order: expert e's
 * rows follow expert e-1's); `first` and `n_out` pick rows [first, first + n_out) of each
 * expert's n_total rows (a merged gate_up tensor holds gate then up). */
static void expert_hint(const struct model_config *c, char *hint, size_t n)
{
	snprintf(hint, n,
		 " (from qwen35moe.expert_count %d, expert_feed_forward_length %d, embedding_length %d: "
		 "the file's metadata and its tensors disagree; re-convert it)",
		 c->n_expert, c->n_ff_exp, c->n_embd);
}

/* The router: n_embd -> n_expert, its shape checked against expert_count. */
static int get_router(struct loader *ld, const struct model_config *c, struct kern_mat *m, const char *name)
{
	char hint[200];
	expert_hint(c, hint, sizeof(hint));
	if (!get_tensor3(ld, name, (uint64_t)c->n_embd, (uint64_t)c->n_expert, 1, 0, hint))
		return -EINVAL;
	return get_mat(ld, m, name, c->n_embd, c->n_expert);
}

static int get_experts(struct loader *ld, const struct model_config *c, struct kern_mat **out, const char *name,
		       int n_in, int n_total, int first, int n_out)
{
	char hint[200];
	expert_hint(c, hint, sizeof(hint));
	const struct model_tensor *t =
		get_tensor3(ld, name, (uint64_t)n_in, (uint64_t)n_total, (uint64_t)c->n_expert, 0, hint);
	if (!t)
		return -EINVAL;
	struct kern_mat *v = calloc((size_t)c->n_expert, sizeof(*v));
	if (!v) {
		err_set(ld->err, ld->errlen, "%s: out of memory", ld->source);
		return -ENOMEM;
	}
	size_t rb = (size_t)row_bytes(t->type, (uint64_t)n_in);
	for (int e = 0; e < c->n_expert; e++) {
		v[e].data = (const uint8_t *)t->data + rb * ((size_t)e * n_total + first);
		v[e].type = t->type;
		v[e].n_in = n_in;
		v[e].n_out = n_out;
		v[e].row_bytes = rb;
	}
	*out = v;
	return 0;
}

static void free_layers(struct model *m)
{
	if (!m->layers)
		return;
	for (int i = 0; i < m->cfg.n_layer; i++) {
		struct layer *l = &m->layers[i];
		free(l->attn_norm);
		free(l->post_norm);
		free(l->conv_w);
		free(l->dt_bias);
		free(l->ssm_a);
		free(l->ssm_norm);
		free(l->q_norm);
		free(l->k_norm);
		free(l->exp_gate);
		free(l->exp_up);
		free(l->exp_down);
	}
	free(m->layers);
	m->layers = NULL;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	free_layers(m);
	free(m->output_norm);
	free(m->work);
	free(m->iwork);
	kern_pool_destroy(m->pool);
	free(m->tensors);
	if (m->gguf)
		gguf_close(m->gguf);
	if (m->wmap)
		munmap(m->wmap, m->wmap_len);
	free(m->wf32);
	free(m);
}

/* ---- weight matrices in 2 MiB pages ---- */

/* Every pass streams all the matrices once. From a file mapping (4 KiB pages) that is a TLB
 * miss every 4 KiB, and under a hypervisor each miss walks two page tables: measured here
 * at 15-40 % of the matrix time. So the matrices are copied once into anonymous memory
 * advised for transparent huge pages, when the kernel offers them (THP "always" or
 * "madvise") and the copy takes at most a quarter of the physical memory; otherwise (and if
 * anything fails) the matrices stay where they are. Values are unchanged. Q4_K and Q6_K
 * matrices (but the token embedding, whose rows are read one by one) are written in groups of
 * 8 rows on the way (kern_mat_group: kernels that feed 8 outputs a load; the copy is then made
 * with or without huge pages); SIXI_CPU_GROUPS=0 in the environment keeps them as rows. */
static int thp_available(void)
{
	char buf[128] = { 0 };
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

static void weights_to_huge_pages(struct model *m)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	enum { MAX_MATS_PER_LAYER = 14, HUGE = 2 << 20 };
	size_t cap = (size_t)m->cfg.n_layer * (MAX_MATS_PER_LAYER + 3 * (size_t)m->cfg.n_expert) + 2, n = 0;
	struct kern_mat **mats = malloc(sizeof(*mats) * cap);
	if (!mats)
		return;
	for (int il = 0; il < m->cfg.n_layer; il++) {
		struct layer *l = &m->layers[il];
		struct kern_mat *all[] = { &l->qkv, &l->z, &l->beta, &l->alpha, &l->ssm_out, &l->wq, &l->wk,
					   &l->wv, &l->wo, &l->ffn_gate, &l->ffn_up, &l->ffn_down, &l->router,
					   &l->shexp_gate };
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			if (all[i]->data)
				mats[n++] = all[i];
		for (int e = 0; l->exp_down && e < m->cfg.n_expert; e++) {
			mats[n++] = &l->exp_gate[e];
			mats[n++] = &l->exp_up[e];
			mats[n++] = &l->exp_down[e];
		}
	}
	int tied = m->output.data == m->tok_embd.data;
	if (!tied)
		mats[n++] = &m->output;
	size_t n_group = n; /* mats[0..n_group) may be grouped */
	mats[n++] = &m->tok_embd;
	const char *env = getenv("SIXI_CPU_GROUPS");
	int groups = !(env && strcmp(env, "0") == 0), any_group = 0;
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		size_t gb = groups && i < n_group ? kern_mat_group_bytes(mats[i]) : 0;
		any_group |= gb > 0;
		total += ((gb ? gb : (size_t)mats[i]->n_out * mats[i]->row_bytes) + 63) & ~(size_t)63;
	}
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	if (total == 0 || pages <= 0 || psz <= 0 || total > (size_t)pages * (size_t)psz / 4 ||
	    (!thp_available() && !any_group)) {
		free(mats);
		return;
	}
	size_t len = total + HUGE;
	void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		free(mats);
		return;
	}
	char *a = (char *)(((uintptr_t)base + HUGE - 1) & ~(uintptr_t)(HUGE - 1)), *at = a;
	madvise(a, total, MADV_HUGEPAGE); /* advice only: without it the copy still works */
	for (size_t i = 0; i < n; i++) {
		size_t bytes = groups && i < n_group ? kern_mat_group_bytes(mats[i]) : 0;
		if (bytes) {
			kern_mat_group(mats[i], at);
		} else {
			bytes = (size_t)mats[i]->n_out * mats[i]->row_bytes;
			memcpy(at, mats[i]->data, bytes);
			mats[i]->data = at;
		}
		at += (bytes + 63) & ~(size_t)63;
	}
	if (tied)
		m->output = m->tok_embd;
	mprotect(a, total, PROT_READ);
	m->wmap = base;
	m->wmap_len = len;
	free(mats);
#else
	(void)m;
#endif
}

/* ---- small models: matrices stored as F32 ---- */

int model_matrices_f32(struct model *m, size_t max_bytes)
{
	struct kern_mat *mats[16];
	size_t total = 0;
	if (m->wf32)
		return 0;
	for (int pass = 0; pass < 2; pass++) { /* 0: count the floats, 1: convert */
		float *at = m->wf32;
		for (int il = -1; il < m->cfg.n_layer; il++) {
			size_t n = 0;
			if (il < 0) {
				mats[n++] = &m->output;
			} else {
				struct layer *l = &m->layers[il];
				struct kern_mat *all[] = { &l->qkv, &l->z, &l->beta, &l->alpha, &l->ssm_out, &l->wq,
							   &l->wk, &l->wv, &l->wo, &l->ffn_gate, &l->ffn_up, &l->ffn_down,
							   &l->router, &l->shexp_gate };
				for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
					mats[n++] = all[i];
			}
			for (size_t i = 0; i < n; i++) {
				struct kern_mat *w = mats[i];
				if (!w->data || (w->type != GGUF_TENSOR_F16 && w->type != GGUF_TENSOR_BF16))
					continue;
				size_t floats = (size_t)w->n_out * (size_t)w->n_in;
				if (pass == 0) {
					total += floats;
					continue;
				}
				for (int r = 0; r < w->n_out; r++)
					kern_row_to_f32(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes,
							at + (size_t)r * w->n_in, w->n_in);
				*w = (struct kern_mat){ .data = at, .type = GGUF_TENSOR_F32, .n_in = w->n_in,
							.n_out = w->n_out, .row_bytes = (size_t)w->n_in * sizeof(float) };
				at += floats;
			}
		}
		if (pass == 0) {
			if (total == 0)
				return 0;
			if (total > max_bytes / sizeof(float))
				return -E2BIG;
			m->wf32 = malloc(total * sizeof(float));
			if (!m->wf32)
				return -ENOMEM;
		}
	}
	return 0;
}

static int load_layer(struct model *m, struct loader *ld, int il)
{
	const struct model_config *c = &m->cfg;
	struct layer *l = &m->layers[il];
	char n[96];
	int rc;
	int E = c->n_embd, Hv = c->ssm_n_v_heads, dv = c->ssm_head_dim, hd = c->head_dim;
#define NAME(s) (snprintf(n, sizeof(n), "blk.%d.%s", il, s), n)
	int moe = c->n_expert > 0, F = c->n_ff_exp;
	if ((rc = get_f32(ld, &l->attn_norm, NAME("attn_norm.weight"), E, 1)) ||
	    (rc = get_f32(ld, &l->post_norm, NAME("post_attention_norm.weight"), E, 1)) ||
	    (rc = get_mat(ld, &l->ffn_gate, NAME(moe ? "ffn_gate_shexp.weight" : "ffn_gate.weight"), E, c->n_ff)) ||
	    (rc = get_mat(ld, &l->ffn_up, NAME(moe ? "ffn_up_shexp.weight" : "ffn_up.weight"), E, c->n_ff)) ||
	    (rc = get_mat(ld, &l->ffn_down, NAME(moe ? "ffn_down_shexp.weight" : "ffn_down.weight"), c->n_ff, E)))
		return rc;
	if (moe) {
		if ((rc = get_router(ld, c, &l->router, NAME("ffn_gate_inp.weight"))) ||
		    (rc = get_mat(ld, &l->shexp_gate, NAME("ffn_gate_inp_shexp.weight"), E, 1)) ||
		    (rc = get_experts(ld, c, &l->exp_down, NAME("ffn_down_exps.weight"), F, E, 0, E)))
			return rc;
		/* gate and up as two tensors, or merged (llama.cpp's ffn_gate_up_exps: gate rows first) */
		if (ld->find(ld->ctx, NAME("ffn_gate_up_exps.weight"))) {
			if ((rc = get_experts(ld, c, &l->exp_gate, n, E, 2 * F, 0, F)) ||
			    (rc = get_experts(ld, c, &l->exp_up, n, E, 2 * F, F, F)))
				return rc;
		} else if ((rc = get_experts(ld, c, &l->exp_gate, NAME("ffn_gate_exps.weight"), E, F, 0, F)) ||
			   (rc = get_experts(ld, c, &l->exp_up, NAME("ffn_up_exps.weight"), E, F, 0, F))) {
			return rc;
		}
	}
	if (l->attn) {
		if ((rc = get_mat(ld, &l->wq, NAME("attn_q.weight"), E, c->n_head * hd * 2)) ||
		    (rc = get_mat(ld, &l->wk, NAME("attn_k.weight"), E, c->n_head_kv * hd)) ||
		    (rc = get_mat(ld, &l->wv, NAME("attn_v.weight"), E, c->n_head_kv * hd)) ||
		    (rc = get_mat(ld, &l->wo, NAME("attn_output.weight"), c->n_head * hd, E)) ||
		    (rc = get_f32(ld, &l->q_norm, NAME("attn_q_norm.weight"), hd, 1)) ||
		    (rc = get_f32(ld, &l->k_norm, NAME("attn_k_norm.weight"), hd, 1)))
			return rc;
	} else {
		if ((rc = get_mat(ld, &l->qkv, NAME("attn_qkv.weight"), E, m->conv_dim)) ||
		    (rc = get_mat(ld, &l->z, NAME("attn_gate.weight"), E, Hv * dv)) ||
		    (rc = get_mat(ld, &l->beta, NAME("ssm_beta.weight"), E, Hv)) ||
		    (rc = get_mat(ld, &l->alpha, NAME("ssm_alpha.weight"), E, Hv)) ||
		    (rc = get_mat(ld, &l->ssm_out, NAME("ssm_out.weight"), Hv * dv, E)) ||
		    (rc = get_f32(ld, &l->conv_w, NAME("ssm_conv1d.weight"), c->ssm_conv_kernel, m->conv_dim)) ||
		    (rc = get_f32(ld, &l->dt_bias, NAME("ssm_dt.bias"), Hv, 1)) ||
		    (rc = get_f32(ld, &l->ssm_a, NAME("ssm_a"), Hv, 1)) ||
		    (rc = get_f32(ld, &l->ssm_norm, NAME("ssm_norm.weight"), dv, 1)))
			return rc;
	}
#undef NAME
	return 0;
}

struct model *model_create(const struct model_config *cfg, model_tensor_find_fn find, void *ctx,
			   const char *source, int n_threads, char *err, size_t errlen)
{
	char why[256];
	if (model_config_check(cfg, why, sizeof(why))) {
		err_set(err, errlen, "%s: %s", source, why);
		errno = EINVAL;
		return NULL;
	}
	struct model *m = calloc(1, sizeof(*m));
	if (!m) {
		err_set(err, errlen, "%s: out of memory", source);
		return NULL;
	}
	m->cfg = *cfg;
	m->n_threads = n_threads;
	const struct model_config *c = &m->cfg;
	m->conv_dim = 2 * c->ssm_n_k_heads * c->ssm_head_dim + c->ssm_n_v_heads * c->ssm_head_dim;
	struct loader ld = { find, ctx, source, err, errlen };
	m->layers = calloc((size_t)c->n_layer, sizeof(*m->layers));
	if (!m->layers) {
		err_set(err, errlen, "%s: out of memory", source);
		goto fail;
	}
	for (int il = 0; il < c->n_layer; il++) {
		struct layer *l = &m->layers[il];
		l->attn = (il + 1) % c->full_attn_interval == 0;
		l->index = l->attn ? m->n_attn++ : m->n_gdn++;
		if (load_layer(m, &ld, il))
			goto fail;
	}
	if (get_mat(&ld, &m->tok_embd, "token_embd.weight", c->n_embd, c->n_vocab) ||
	    get_f32(&ld, &m->output_norm, "output_norm.weight", c->n_embd, 1))
		goto fail;
	if (get_tensor(&ld, "output.weight", (uint64_t)c->n_embd, (uint64_t)c->n_vocab, 1)) {
		if (get_mat(&ld, &m->output, "output.weight", c->n_embd, c->n_vocab))
			goto fail;
	} else if (find(ctx, "output.weight")) {
		goto fail; /* present but malformed: get_tensor wrote why */
	} else {
		m->output = m->tok_embd; /* tied embeddings */
	}
	m->pool = kern_pool_create(n_threads, NULL);
	if (!m->pool) {
		err_set(err, errlen, "%s: cannot start %d threads", source, n_threads);
		goto fail;
	}
	weights_to_huge_pages(m);
	return m;
fail:
	model_free(m);
	errno = EINVAL;
	return NULL;
}

static const struct model_tensor *find_in_array(void *ctx, const char *name)
{
	struct model *m = ctx;
	for (size_t i = 0; i < m->n_tensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	return NULL;
}

struct model *model_load_gguf(struct gguf *g, const char *name, int n_threads, char *err, size_t errlen)
{
	struct model_config cfg;
	if (model_config_from_gguf(g, name, &cfg, err, errlen)) {
		gguf_close(g);
		errno = EINVAL;
		return NULL;
	}
	/* Every tensor's type is checked before anything is allocated. */
	for (size_t i = 0; i < gguf_tensor_count(g); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);
		if (!kern_type_supported(t->type)) {
			refuse_type(err, errlen, name, t->name, t->type);
			gguf_close(g);
			errno = EINVAL;
			return NULL;
		}
	}
	/* model_create needs a lookup before the model exists: use a temporary holder. */
	struct model tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.n_tensors = gguf_tensor_count(g);
	tmp.tensors = calloc(tmp.n_tensors ? tmp.n_tensors : 1, sizeof(*tmp.tensors));
	if (!tmp.tensors) {
		gguf_close(g);
		err_set(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	for (size_t i = 0; i < tmp.n_tensors; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);
		struct model_tensor *o = &tmp.tensors[i];
		o->name = t->name;
		o->n_dims = t->n_dims;
		memcpy(o->ne, t->ne, sizeof(o->ne));
		o->type = t->type;
		o->data = t->data;
		o->n_bytes = t->n_bytes;
	}
	struct model *m = model_create(&cfg, find_in_array, &tmp, name, n_threads, err, errlen);
	if (!m) {
		free(tmp.tensors);
		gguf_close(g);
		return NULL;
	}
	m->gguf = g;
	m->tensors = tmp.tensors;
	m->n_tensors = tmp.n_tensors;
	return m;
}

struct model *model_load(const char *path, int n_threads, char *err, size_t errlen)
{
	struct gguf *g = gguf_open(path, err, errlen);
	if (!g)
		return NULL;
	return model_load_gguf(g, path, n_threads, err, errlen);
}

const struct model_config *model_get_config(const struct model *m)
{
	return &m->cfg;
}

bool model_layer_is_attention(const struct model *m, int layer)
{
	return layer >= 0 && layer < m->cfg.n_layer && m->layers[layer].attn;
}

const struct gguf *model_gguf(const struct model *m)
{
	return m->gguf;
}

const char *model_isa(const struct model *m)
{
	return kern_pool_isa(m->pool);
}

int model_set_isa(struct model *m, const char *isa)
{
	struct kern_pool *p = kern_pool_create(m->n_threads, isa);
	if (!p)
		return -errno;
	kern_pool_destroy(m->pool);
	m->pool = p;
	return 0;
}

/* ======== state pool ======== */

struct model_state {
	int n_slots, n_ctx;
	int n_gdn, n_attn;
	int H_v, d_k, d_v, conv_dim, conv_hist, kv_dim;
	size_t ssm_floats, conv_floats, kv_floats; /* per slot per layer */
	size_t slot_floats;
	float *data;  /* [slot][ gdn: (ssm [H_v][d_v][d_k], conv [hist][conv_dim]) x n_gdn,
		       *         attn: (K [n_ctx][kv_dim], V [n_ctx][kv_dim]) x n_attn ] */
	int *pos;     /* [slot] rows held */
	/* rollback (model.h): per slot [gdn][rows][rb_row_floats], rows = rb_rows (log) or
	 * rb_rows + 1 (snapshot ring: entry 0 is the state before the first kept row) */
	enum model_rollback rb_mode;
	int rb_rows;
	size_t rb_row_floats; /* log: conv_dim + 2 H_v; snapshot: ssm_floats + conv_floats */
	size_t rb_layer_floats, rb_slot_floats;
	float *rb_data;
	int *rb_n;    /* [slot] rows kept */
};

struct model_state *model_state_create(const struct model *m, int n_slots, int n_ctx)
{
	if (n_slots <= 0 || n_ctx <= 0) {
		errno = EINVAL;
		return NULL;
	}
	struct model_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	const struct model_config *c = &m->cfg;
	s->n_slots = n_slots;
	s->n_ctx = n_ctx;
	s->n_gdn = m->n_gdn;
	s->n_attn = m->n_attn;
	s->H_v = c->ssm_n_v_heads;
	s->d_k = s->d_v = c->ssm_head_dim;
	s->conv_dim = m->conv_dim;
	s->conv_hist = c->ssm_conv_kernel - 1;
	s->kv_dim = c->n_head_kv * c->head_dim;
	s->ssm_floats = (size_t)s->H_v * s->d_v * s->d_k;
	s->conv_floats = (size_t)s->conv_hist * s->conv_dim;
	s->kv_floats = (size_t)n_ctx * s->kv_dim;
	s->slot_floats = (s->ssm_floats + s->conv_floats) * s->n_gdn + 2 * s->kv_floats * s->n_attn;
	if (s->slot_floats > SIZE_MAX / sizeof(float) / (size_t)n_slots) {
		model_state_destroy(s);
		errno = ENOMEM;
		return NULL;
	}
	s->data = calloc(s->slot_floats * n_slots, sizeof(float));
	s->pos = calloc((size_t)n_slots, sizeof(int));
	if (!s->data || !s->pos) {
		model_state_destroy(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void model_state_destroy(struct model_state *s)
{
	if (!s)
		return;
	free(s->data);
	free(s->pos);
	free(s->rb_data);
	free(s->rb_n);
	free(s);
}

int model_state_slots(const struct model_state *s)
{
	return s->n_slots;
}

int model_state_n_ctx(const struct model_state *s)
{
	return s->n_ctx;
}

size_t model_state_slot_bytes(const struct model_state *s)
{
	return s->slot_floats * sizeof(float);
}

int model_state_slot_pos(const struct model_state *s, int slot)
{
	if (slot < 0 || slot >= s->n_slots)
		return -EINVAL;
	return s->pos[slot];
}

static float *slot_base(const struct model_state *s, int slot)
{
	return s->data + s->slot_floats * (size_t)slot;
}

static float *slot_ssm(const struct model_state *s, int slot, int gdn)
{
	return slot_base(s, slot) + (s->ssm_floats + s->conv_floats) * (size_t)gdn;
}

static float *slot_conv(const struct model_state *s, int slot, int gdn)
{
	return slot_ssm(s, slot, gdn) + s->ssm_floats;
}

static float *slot_k(const struct model_state *s, int slot, int attn)
{
	return slot_base(s, slot) + (s->ssm_floats + s->conv_floats) * (size_t)s->n_gdn +
	       2 * s->kv_floats * (size_t)attn;
}

static float *slot_v(const struct model_state *s, int slot, int attn)
{
	return slot_k(s, slot, attn) + s->kv_floats;
}

int model_state_slot_reset(struct model_state *s, int slot)
{
	if (slot < 0 || slot >= s->n_slots)
		return -EINVAL;
	/* The KV rows past pos are never read, so only the recurrent parts need zeroing. */
	for (int i = 0; i < s->n_gdn; i++)
		memset(slot_ssm(s, slot, i), 0, sizeof(float) * (s->ssm_floats + s->conv_floats));
	s->pos[slot] = 0;
	if (s->rb_n)
		s->rb_n[slot] = 0;
	return 0;
}

int model_state_slot_copy(struct model_state *s, int dst, int src)
{
	if (dst < 0 || dst >= s->n_slots || src < 0 || src >= s->n_slots)
		return -EINVAL;
	if (dst == src)
		return 0;
	for (int i = 0; i < s->n_gdn; i++)
		memcpy(slot_ssm(s, dst, i), slot_ssm(s, src, i), sizeof(float) * (s->ssm_floats + s->conv_floats));
	for (int i = 0; i < s->n_attn; i++) {
		size_t n = (size_t)s->pos[src] * s->kv_dim;
		memcpy(slot_k(s, dst, i), slot_k(s, src, i), sizeof(float) * n);
		memcpy(slot_v(s, dst, i), slot_v(s, src, i), sizeof(float) * n);
	}
	s->pos[dst] = s->pos[src];
	if (s->rb_n) {
		memcpy(s->rb_data + s->rb_slot_floats * (size_t)dst, s->rb_data + s->rb_slot_floats * (size_t)src,
		       sizeof(float) * s->rb_slot_floats);
		s->rb_n[dst] = s->rb_n[src];
	}
	return 0;
}

/* ======== forward pass ======== */

struct segment {
	int slot, r0, n, pos0;
	int spec; /* kept for rollback (model_forward_spec) */
	int c;    /* log mode: kept rows replayed before the new ones */
	size_t replay0; /* log mode: first row of this segment's replay rows in pass.replay */
};

/* Buffers of one pass, carved from m->work. Shapes are [rows][width]. */
struct pass {
	struct model *m;
	struct model_state *s;
	int N;
	const struct segment *seg;
	int n_seg;
	const struct layer *l;
	float *x;    /* [N][n_embd] residual stream */
	float *h;    /* [N][n_embd] normed input of a block */
	float *y;    /* [N][n_embd] block output */
	float *a1;   /* [N][max(conv_dim, n_head*2*hd, n_ff)] */
	float *a2;   /* [N][max(conv_dim, n_ff, kv_dim)] */
	float *a3;   /* [N][max(H_v*d_v, kv_dim)] */
	float *a4;   /* [N][max(H_v*d_v, n_head*hd)] */
	float *gb;   /* [N][2*H_v]: g then beta per row */
	float *ab;   /* [N][2*H_v]: alpha, beta projections */
	/* MoE only (sizes 0 for the dense model): */
	float *mlog;   /* [N][n_expert] router logits, then probabilities */
	float *mgate;  /* [N] shared expert gate logit */
	float *mw;     /* [N][k] routed weights, renormalised */
	float *mx;     /* [N][n_embd] one expert's rows of h, gathered */
	float *mg, *mu;/* [N][n_ff_exp] one expert's gate and up products */
	float *mo;     /* [N][n_embd] one expert's output */
	int32_t *mi;   /* [N][k] chosen experts, then [n_expert + 1] offsets, then [N*k] grouped (row*k + j) */
	float *scratch; /* per thread: max(gdn chunk scratch, n_ctx scores) + replay state d_v*d_k + d_v */
	float *replay;  /* log mode: post-conv replay rows [sum of c][conv_dim] */
	float *segwin;  /* log mode: conv window per segment [n_seg][hist][conv_dim] */
	size_t scratch_per_thread;
	int w1, w2, w3, w4;
};

static void rms_norm(float *out, const float *x, const float *w, int n, float eps)
{
	/* four partial sums: a quarter of the dependent-add chain of one */
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += (double)x[i] * x[i];
		s1 += (double)x[i + 1] * x[i + 1];
		s2 += (double)x[i + 2] * x[i + 2];
		s3 += (double)x[i + 3] * x[i + 3];
	}
	for (; i < n; i++)
		s0 += (double)x[i] * x[i];
	double ss = (s0 + s1) + (s2 + s3);
	float r = 1.0f / sqrtf((float)(ss / n) + eps);
	for (i = 0; i < n; i++)
		out[i] = x[i] * r * w[i];
}

static void l2_norm(float *x, int n)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	float r = 1.0f / sqrtf((float)ss + L2_EPS);
	for (int i = 0; i < n; i++)
		x[i] *= r;
}

static float softplus(float v)
{
	return v > 20.0f ? v : log1pf(expf(v)); /* the reference's threshold */
}

static void matmul(struct pass *p, const struct kern_mat *w, const float *x, int xs, float *y, int ys)
{
	kern_matmul(p->m->pool, w, x, xs, p->N, y, ys);
}

/* ---- elementwise work, split by rows over the pool ---- */

struct row_job {
	struct pass *p;
	void (*row)(struct pass *p, int r);
};

static void rows_part(void *arg, int ith, int nth)
{
	struct row_job *j = arg;
	int r0 = (int)((long)j->p->N * ith / nth), r1 = (int)((long)j->p->N * (ith + 1) / nth);
	for (int r = r0; r < r1; r++)
		j->row(j->p, r);
}

/* Runs row(p, r) for every row; `cost` is the rough flops a row (threads only when it pays). */
static void for_rows(struct pass *p, void (*row)(struct pass *, int), double cost)
{
	struct row_job j = { p, row };
	int nth = kern_pool_threads(p->m->pool);
	double work = cost * p->N;
	if (work < 65536.0 * nth)
		nth = work < 65536.0 ? 1 : (int)(work / 65536.0);
	if (nth > p->N)
		nth = p->N;
	kern_pool_run(p->m->pool, rows_part, &j, nth);
}

/* ---- GDN ---- */

/* ---- rollback: kept rows (model.h) ---- */

static float *rb_row(const struct model_state *s, int slot, int gdn, int row)
{
	return s->rb_data + s->rb_slot_floats * (size_t)slot + s->rb_layer_floats * (size_t)gdn +
	       s->rb_row_floats * (size_t)row;
}

/* One V-head of a kept segment. Log mode: replay the c kept rows on a copy of the base, then
 * run the new rows on the copy; the base is not written. Snapshot mode: run the rows in place,
 * saving the head's state after each. Both use gdn_rule_rows, the one-row decode's kernel. */
static void spec_head(struct pass *p, const struct segment *sg, int h, int kh, float *st, float scale,
		      const struct gdn_rows *r, float *scratch)
{
	const struct model_state *s = p->s;
	int Hv = s->H_v, d = s->d_k, cd = s->conv_dim, Hk = p->m->cfg.ssm_n_k_heads;
	size_t hs = (size_t)d * d;
	float *work = scratch + p->scratch_per_thread - hs - (size_t)d; /* the copy, then a dummy o */
	if (s->rb_mode == MODEL_ROLLBACK_LOG) {
		memcpy(work, st, sizeof(float) * hs);
		if (sg->c > 0) {
			const float *rp = p->replay + sg->replay0 * cd, *lg = rb_row(s, sg->slot, p->l->index, 0) + cd;
			struct gdn_rows rr = {
				.n = sg->c,
				.q = rp + Hk * d + kh * d, /* the output is discarded: any d_k floats do */
				.k = rp + Hk * d + kh * d,
				.v = rp + 2 * Hk * d + h * d,
				.q_stride = cd, .k_stride = cd, .v_stride = cd,
				.g = lg + h,
				.beta = lg + Hv + h,
				.gb_stride = (int)s->rb_row_floats,
				.o = work + hs,
				.o_stride = 0,
			};
			gdn_rule_rows(work, d, d, scale, &rr);
		}
		gdn_rule_rows(work, d, d, scale, r);
		return;
	}
	for (int t = 0; t < r->n; t++) {
		struct gdn_rows r1 = *r;
		r1.n = 1;
		r1.q += (size_t)t * r->q_stride;
		r1.k += (size_t)t * r->k_stride;
		r1.v += (size_t)t * r->v_stride;
		r1.g += (size_t)t * r->gb_stride;
		r1.beta += (size_t)t * r->gb_stride;
		r1.o += (size_t)t * r->o_stride;
		gdn_rule_rows(st, d, d, scale, &r1);
		memcpy(rb_row(s, sg->slot, p->l->index, sg->c + t + 1) + (size_t)h * hs, st, sizeof(float) * hs);
	}
}

/* Work item i covers (segment i / H_v, head i % H_v). */
static void gdn_heads(void *arg, int ith, int nth)
{
	struct pass *p = arg;
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int Hv = c->ssm_n_v_heads, Hk = c->ssm_n_k_heads, d = c->ssm_head_dim;
	int n_items = p->n_seg * Hv;
	float *scratch = p->scratch + p->scratch_per_thread * ith;
	for (int it = ith; it < n_items; it += nth) {
		const struct segment *sg = &p->seg[it / Hv];
		int h = it % Hv, kh = h % Hk; /* tiled V-head order */
		float *conv = p->a2; /* post-conv [N][conv_dim]: q | k | v */
		struct gdn_rows r = {
			.n = sg->n,
			.q = conv + (size_t)sg->r0 * p->w2 + kh * d,
			.k = conv + (size_t)sg->r0 * p->w2 + Hk * d + kh * d,
			.v = conv + (size_t)sg->r0 * p->w2 + 2 * Hk * d + h * d,
			.q_stride = p->w2, .k_stride = p->w2, .v_stride = p->w2,
			.g = p->gb + (size_t)sg->r0 * 2 * Hv + h,
			.beta = p->gb + (size_t)sg->r0 * 2 * Hv + Hv + h,
			.gb_stride = 2 * Hv,
			.o = p->a4 + (size_t)sg->r0 * p->w4 + h * d,
			.o_stride = p->w4,
		};
		float *st = slot_ssm(p->s, sg->slot, l->index) + (size_t)h * d * d;
		float scale = 1.0f / sqrtf((float)d);
		if (sg->spec) {
			spec_head(p, sg, h, kh, st, scale, &r, scratch);
			continue;
		}
		if (sg->n >= GDN_CHUNK_MIN)
			gdn_rule_chunked(st, d, d, scale, &r, GDN_CHUNK, scratch);
		else
			gdn_rule_rows(st, d, d, scale, &r);
	}
}

static void conv_part(void *arg, int ith, int nth)
{
	struct pass *p = arg;
	/* Split at multiples of 8 channels: the vector SiLU then treats every channel the same
	 * way whatever the number of threads, so a pass's values do not depend on its size. */
	int cd = p->m->conv_dim, c0 = (int)((long)cd * ith / nth) & ~7, c1 = (int)((long)cd * (ith + 1) / nth) & ~7;
	if (ith == nth - 1)
		c1 = cd;
	int kw = p->m->cfg.ssm_conv_kernel;
	for (int si = 0; si < p->n_seg; si++) {
		const struct segment *sg = &p->seg[si];
		float *win = slot_conv(p->s, sg->slot, p->l->index);
		const float *x = p->a1 + (size_t)sg->r0 * p->w1;
		float *out = p->a2 + (size_t)sg->r0 * p->w2;
		if (sg->spec && p->s->rb_mode == MODEL_ROLLBACK_LOG)
			win = p->segwin + (size_t)si * p->s->conv_floats; /* the window after the replayed rows */
		if (sg->spec && p->s->rb_mode == MODEL_ROLLBACK_SNAPSHOT) {
			/* one row at a time, saving the window after each */
			size_t nc = sizeof(float) * (size_t)(c1 - c0);
			for (int t = 0; t < sg->n; t++) {
				gdn_conv_rows(win, p->l->conv_w, kw, cd, c0, c1, x + (size_t)t * p->w1, p->w1, 1,
					      out + (size_t)t * p->w2, p->w2);
				float *dst = rb_row(p->s, sg->slot, p->l->index, sg->c + t + 1) + p->s->ssm_floats;
				for (int i = 0; i < p->s->conv_hist; i++)
					memcpy(dst + (size_t)i * cd + c0, win + (size_t)i * cd + c0, nc);
			}
			continue;
		}
		gdn_conv_rows(win, p->l->conv_w, kw, cd, c0, c1, x, p->w1, sg->n, out, p->w2);
	}
}

/* After the conv: L2-normalise q and k per K-head; g and β per V-head. */
static void gdn_pre_row(struct pass *p, int r)
{
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int Hv = c->ssm_n_v_heads, Hk = c->ssm_n_k_heads, d = c->ssm_head_dim;
	float *row = p->a2 + (size_t)r * p->w2;
	for (int kh = 0; kh < Hk; kh++) {
		l2_norm(row + kh * d, d);
		l2_norm(row + Hk * d + kh * d, d);
	}
	const float *ab = p->ab + (size_t)r * 2 * Hv;
	float *gb = p->gb + (size_t)r * 2 * Hv;
	for (int h = 0; h < Hv; h++) {
		gb[h] = l->ssm_a[h] * softplus(ab[Hv + h] + l->dt_bias[h]);
		gb[Hv + h] = 1.0f / (1.0f + expf(-ab[h]));
	}
}

/* Gated RMSNorm per head (plain weight), gate SiLU(z). */
static void gdn_post_row(struct pass *p, int r)
{
	const struct model_config *c = &p->m->cfg;
	int Hv = c->ssm_n_v_heads, d = c->ssm_head_dim;
	float *o = p->a4 + (size_t)r * p->w4;
	const float *z = p->a3 + (size_t)r * p->w3;
	for (int h = 0; h < Hv; h++) {
		rms_norm(o + h * d, o + h * d, p->l->ssm_norm, d, c->norm_eps);
	}
	kern_mul_silu(o, z, Hv * d);
}

/* Log mode: the post-conv rows of a slot's first c kept rows of GDN layer `l`, from its conv
 * window `win` (advanced in place past them): the same convolution and the same key L2 norm
 * as the forward pass (gdn_pre_row), so replay sees the floats the rows first saw. */
static void log_replay_inputs(const struct model *m, const struct model_state *s, const struct layer *l, int slot,
			      int c, float *win, float *out)
{
	int cd = s->conv_dim, Hk = m->cfg.ssm_n_k_heads, d = s->d_k;
	if (c <= 0)
		return;
	gdn_conv_rows(win, l->conv_w, m->cfg.ssm_conv_kernel, cd, 0, cd, rb_row(s, slot, l->index, 0),
		      (int)s->rb_row_floats, c, out, cd);
	for (int t = 0; t < c; t++)
		for (int kh = 0; kh < Hk; kh++)
			l2_norm(out + (size_t)t * cd + Hk * d + kh * d, d);
}

/* Before the conv of a pass: replay inputs and the conv window of every kept log segment. */
static void log_prepare(struct pass *p)
{
	const struct model_state *s = p->s;
	for (int si = 0; si < p->n_seg; si++) {
		const struct segment *sg = &p->seg[si];
		if (!sg->spec)
			continue;
		float *win = p->segwin + (size_t)si * s->conv_floats;
		memcpy(win, slot_conv(s, sg->slot, p->l->index), sizeof(float) * s->conv_floats);
		log_replay_inputs(p->m, s, p->l, sg->slot, sg->c, win, p->replay + sg->replay0 * s->conv_dim);
	}
}

/* After g and β are known: append the new rows of every kept log segment to its log. */
static void log_append(struct pass *p)
{
	const struct model_state *s = p->s;
	int Hv = s->H_v, cd = s->conv_dim;
	for (int si = 0; si < p->n_seg; si++) {
		const struct segment *sg = &p->seg[si];
		if (!sg->spec)
			continue;
		for (int t = 0; t < sg->n; t++) {
			float *row = rb_row(s, sg->slot, p->l->index, sg->c + t);
			memcpy(row, p->a1 + (size_t)(sg->r0 + t) * p->w1, sizeof(float) * cd);
			memcpy(row + cd, p->gb + (size_t)(sg->r0 + t) * 2 * Hv, sizeof(float) * 2 * Hv);
		}
	}
}

static void layer_gdn(struct pass *p)
{
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int N = p->N, Hv = c->ssm_n_v_heads, d = c->ssm_head_dim, cd = p->m->conv_dim;
	{ /* pre-conv q|k|v, z, b, a: one split over the threads */
		const struct kern_mat *w[4] = { &l->qkv, &l->z, &l->beta, &l->alpha };
		float *y[4] = { p->a1, p->a3, p->ab, p->ab + Hv };
		int ys[4] = { p->w1, p->w3, 2 * Hv, 2 * Hv };
		kern_matmul_n(p->m->pool, 4, w, p->h, c->n_embd, N, y, ys);
	}
	int nth = kern_pool_threads(p->m->pool);
	double conv_work = 30.0 * N * cd; /* an expf a channel a row */
	int nconv = conv_work < 65536.0 * nth ? (conv_work < 65536.0 ? 1 : (int)(conv_work / 65536.0)) : nth;
	int logged = p->replay != NULL;
	if (logged)
		log_prepare(p);
	kern_pool_run(p->m->pool, conv_part, p, nconv);
	for_rows(p, gdn_pre_row, 30.0 * (2 * c->ssm_n_k_heads * d + Hv));
	if (logged)
		log_append(p);
	/* Threads only pay off when there is enough state to sweep (about 6 d² flops a row a head). */
	double work = 6.0 * N * Hv * d * d;
	if (work < 262144.0)
		nth = 1;
	kern_pool_run(p->m->pool, gdn_heads, p, p->n_seg * Hv < nth ? p->n_seg * Hv : nth);
	for_rows(p, gdn_post_row, 30.0 * Hv * d);
	matmul(p, &l->ssm_out, p->a4, p->w4, p->y, c->n_embd);
}

/* ---- attention ---- */

/* The angle's cosine and sine of pair i at position pos. */
static void rope_angle(int i, int n_rot, int pos, float theta, float *cs, float *sn)
{
	float inv = (float)(1.0 / pow((double)theta, (double)(2 * i) / n_rot));
	float a = (float)pos * inv;
	*cs = cosf(a);
	*sn = sinf(a);
}

/* Rotate v's pairs (i, i + n_rot/2); cs/sn: the angles' cosines and sines, or NULL to
 * compute them here. */
static void rope(float *v, int n_rot, int pos, float theta, const float *cs, const float *sn)
{
	int half = n_rot / 2;
	for (int i = 0; i < half; i++) {
		float c, s;
		if (cs)
			c = cs[i], s = sn[i];
		else
			rope_angle(i, n_rot, pos, theta, &c, &s);
		float x0 = v[i], x1 = v[i + half];
		v[i] = x0 * c - x1 * s;
		v[i + half] = x0 * s + x1 * c;
	}
}

/* One row before attention: per-head RMSNorm and RoPE of q and k (the angles computed once
 * for all heads when they fit the stack table), and k, v into the slot's cache. */
static void attn_qk_row(struct pass *p, int r)
{
	enum { ROPE_TABLE = 128 };
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int nh = c->n_head, nkv = c->n_head_kv, hd = c->head_dim, kvd = p->s->kv_dim;
	int si = 0;
	while (p->seg[si].r0 + p->seg[si].n <= r)
		si++;
	const struct segment *sg = &p->seg[si];
	int pos = sg->pos0 + (r - sg->r0);
	float cs[ROPE_TABLE], sn[ROPE_TABLE];
	const float *pc = NULL, *ps = NULL;
	if (c->n_rot / 2 <= ROPE_TABLE) {
		for (int i = 0; i < c->n_rot / 2; i++)
			rope_angle(i, c->n_rot, pos, c->rope_theta, &cs[i], &sn[i]);
		pc = cs, ps = sn;
	}
	float *q = p->a1 + (size_t)r * p->w1, *k = p->a2 + (size_t)r * p->w2;
	for (int h = 0; h < nh; h++) {
		float *qh = q + (size_t)h * 2 * hd;
		rms_norm(qh, qh, l->q_norm, hd, c->norm_eps);
		rope(qh, c->n_rot, pos, c->rope_theta, pc, ps);
	}
	for (int h = 0; h < nkv; h++) {
		rms_norm(k + h * hd, k + h * hd, l->k_norm, hd, c->norm_eps);
		rope(k + h * hd, c->n_rot, pos, c->rope_theta, pc, ps);
	}
	float *K = slot_k(p->s, sg->slot, l->index), *V = slot_v(p->s, sg->slot, l->index);
	memcpy(K + (size_t)pos * kvd, k, sizeof(float) * kvd);
	memcpy(V + (size_t)pos * kvd, p->a3 + (size_t)r * p->w3, sizeof(float) * kvd);
}

/* Work item i covers (row i / n_head, head i % n_head). */
static void attn_heads(void *arg, int ith, int nth)
{
	struct pass *p = arg;
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int nh = c->n_head, hd = c->head_dim, rep = c->n_head / c->n_head_kv, kvd = p->s->kv_dim;
	float *scores = p->scratch + p->scratch_per_thread * ith;
	float scale = 1.0f / sqrtf((float)hd);
	/* Row -> segment lookup: rows are grouped by segment in order. */
	int si = 0;
	for (int it = ith; it < p->N * nh; it += nth) {
		int r = it / nh, h = it % nh;
		while (p->seg[si].r0 + p->seg[si].n <= r)
			si++;
		while (p->seg[si].r0 > r)
			si--;
		const struct segment *sg = &p->seg[si];
		int pos = sg->pos0 + (r - sg->r0);
		const float *q = p->a1 + (size_t)r * p->w1 + (size_t)h * 2 * hd;
		const float *K = slot_k(p->s, sg->slot, l->index), *V = slot_v(p->s, sg->slot, l->index);
		int kvh = h / rep;
		float mx = -INFINITY;
		for (int t = 0; t <= pos; t++) {
			scores[t] = kern_dot(q, K + (size_t)t * kvd + kvh * hd, hd) * scale;
			if (scores[t] > mx)
				mx = scores[t];
		}
		float sum = kern_exp_shift(scores, mx, pos + 1);
		float *o = p->a4 + (size_t)r * p->w4 + h * hd;
		for (int i = 0; i < hd; i++)
			o[i] = 0;
		for (int t = 0; t <= pos; t++)
			kern_axpy(o, scores[t] / sum, V + (size_t)t * kvd + kvh * hd, hd);
		const float *gate = q + hd;
		for (int i = 0; i < hd; i++)
			o[i] *= 1.0f / (1.0f + expf(-gate[i]));
	}
}

static void layer_attn(struct pass *p)
{
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int nh = c->n_head, nkv = c->n_head_kv, hd = c->head_dim;
	{ /* per head [q | gate], k, v: one split over the threads */
		const struct kern_mat *w[3] = { &l->wq, &l->wk, &l->wv };
		float *y[3] = { p->a1, p->a2, p->a3 };
		int ys[3] = { p->w1, p->w2, p->w3 };
		kern_matmul_n(p->m->pool, 3, w, p->h, c->n_embd, p->N, y, ys);
	}
	for_rows(p, attn_qk_row, 20.0 * (nh + nkv) * hd);
	int nth = kern_pool_threads(p->m->pool);
	double work = 4.0 * nh * hd * (double)(p->seg[p->n_seg - 1].pos0 + 1) * p->N;
	if (work < 262144.0)
		nth = 1;
	kern_pool_run(p->m->pool, attn_heads, p, p->N * nh < nth ? p->N * nh : nth);
	matmul(p, &l->wo, p->a4, p->w4, p->y, c->n_embd);
}

/* ---- MLP ---- */

static void mlp_act_row(struct pass *p, int r)
{
	kern_silu_mul(p->a1 + (size_t)r * p->w1, p->a2 + (size_t)r * p->w2, p->m->cfg.n_ff);
}

static void layer_mlp(struct pass *p)
{
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	const struct kern_mat *w[2] = { &l->ffn_gate, &l->ffn_up };
	float *y[2] = { p->a1, p->a2 };
	int ys[2] = { p->w1, p->w2 };
	kern_matmul_n(p->m->pool, 2, w, p->h, c->n_embd, p->N, y, ys);
	for_rows(p, mlp_act_row, 30.0 * c->n_ff);
	matmul(p, &l->ffn_down, p->a1, p->w1, p->y, c->n_embd);
}

/* ---- MoE (qwen35moe) ---- */

/* One row's routing as llama.cpp's build_moe_ffn does it for qwen35moe (softmax gating,
 * weights renormalised, no scale): probabilities over all experts (written back into p),
 * the k most probable (ties: the lower index) into chosen[], their probabilities divided by
 * their sum (clamped below at 2^-14 as llama.cpp does) into w[], most probable first. */
static void moe_route(float *p, int n_expert, int k, int32_t *chosen, float *w)
{
	float mx = p[0];
	for (int e = 1; e < n_expert; e++)
		if (p[e] > mx)
			mx = p[e];
	double sum = 0;
	for (int e = 0; e < n_expert; e++) {
		p[e] = expf(p[e] - mx);
		sum += p[e];
	}
	float inv = (float)(1.0 / sum);
	for (int e = 0; e < n_expert; e++)
		p[e] *= inv;
	float wsum = 0;
	for (int j = 0; j < k; j++) {
		int best = -1;
		for (int e = 0; e < n_expert; e++) {
			int taken = 0;
			for (int i = 0; i < j && !taken; i++)
				taken = chosen[i] == e;
			if (!taken && (best < 0 || p[e] > p[best]))
				best = e;
		}
		chosen[j] = best;
		w[j] = p[best];
		wsum += w[j];
	}
	if (wsum < 6.103515625e-5f)
		wsum = 6.103515625e-5f;
	for (int j = 0; j < k; j++)
		w[j] /= wsum;
}

/* The shared expert (as the dense MLP, into y) times sigmoid of its gate, plus the routed
 * experts. Rows are grouped by expert (a counting sort of the (row, choice) pairs), and each
 * expert that any row chose runs once over its gathered rows: its three matrices are read
 * once a pass. A row's experts are added in expert order, whatever else the pass holds. */
static void layer_moe(struct pass *p)
{
	const struct model_config *c = &p->m->cfg;
	const struct layer *l = p->l;
	int N = p->N, E = c->n_embd, X = c->n_expert, K = c->n_expert_used, F = c->n_ff_exp;
	{
		const struct kern_mat *w[4] = { &l->ffn_gate, &l->ffn_up, &l->router, &l->shexp_gate };
		float *y[4] = { p->a1, p->a2, p->mlog, p->mgate };
		int ys[4] = { p->w1, p->w2, X, 1 };
		kern_matmul_n(p->m->pool, 4, w, p->h, E, N, y, ys);
	}
	for_rows(p, mlp_act_row, 30.0 * c->n_ff);
	matmul(p, &l->ffn_down, p->a1, p->w1, p->y, E);
	int32_t *chosen = p->mi, *off = p->mi + (size_t)N * K, *grp = off + X + 1;
	for (int e = 0; e <= X; e++)
		off[e] = 0;
	for (int r = 0; r < N; r++) {
		float g = 1.0f / (1.0f + expf(-p->mgate[r]));
		float *yr = p->y + (size_t)r * E;
		for (int i = 0; i < E; i++)
			yr[i] *= g;
		moe_route(p->mlog + (size_t)r * X, X, K, chosen + (size_t)r * K, p->mw + (size_t)r * K);
		for (int j = 0; j < K; j++)
			off[chosen[r * K + j] + 1]++;
	}
	for (int e = 0; e < X; e++)
		off[e + 1] += off[e];
	/* fill each expert's list in row order (off[e] walks to the next expert's start, then is restored) */
	for (int r = 0; r < N; r++)
		for (int j = 0; j < K; j++)
			grp[off[chosen[r * K + j]]++] = r * K + j;
	for (int e = X; e > 0; e--)
		off[e] = off[e - 1];
	off[0] = 0;
	for (int e = 0; e < X; e++) {
		int n = off[e + 1] - off[e];
		if (n == 0)
			continue;
		const int32_t *list = grp + off[e];
		for (int i = 0; i < n; i++)
			memcpy(p->mx + (size_t)i * E, p->h + (size_t)(list[i] / K) * E, sizeof(float) * E);
		const struct kern_mat *w[2] = { &l->exp_gate[e], &l->exp_up[e] };
		float *gu[2] = { p->mg, p->mu };
		int ys[2] = { F, F };
		kern_matmul_n(p->m->pool, 2, w, p->mx, E, n, gu, ys);
		for (int i = 0; i < n; i++)
			kern_silu_mul(p->mg + (size_t)i * F, p->mu + (size_t)i * F, F);
		kern_matmul(p->m->pool, &l->exp_down[e], p->mg, F, n, p->mo, E);
		for (int i = 0; i < n; i++) {
			float wt = p->mw[list[i]];
			float *yr = p->y + (size_t)(list[i] / K) * E;
			const float *o = p->mo + (size_t)i * E;
			for (int t = 0; t < E; t++)
				yr[t] += wt * o[t];
		}
	}
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

static int check_batch(const struct model *m, const struct model_state *s, const struct model_batch *b,
		       struct segment *seg, int *n_seg)
{
	int ns = 0;
	for (int r = 0; r < b->n_rows; r++) {
		int tok = b->tokens[r], slot = b->slots[r];
		if (tok < 0 || tok >= m->cfg.n_vocab || slot < 0 || slot >= s->n_slots)
			return -EINVAL;
		if (ns == 0 || seg[ns - 1].slot != slot) {
			for (int i = 0; i < ns; i++)
				if (seg[i].slot == slot)
					return -EINVAL; /* a slot's rows must be consecutive */
			seg[ns].slot = slot;
			seg[ns].r0 = r;
			seg[ns].n = 0;
			seg[ns].pos0 = s->pos[slot];
			ns++;
		}
		struct segment *sg = &seg[ns - 1];
		if (b->pos && b->pos[r] != sg->pos0 + sg->n)
			return -EINVAL;
		sg->n++;
		if (sg->pos0 + sg->n > s->n_ctx)
			return -EINVAL;
	}
	*n_seg = ns;
	return 0;
}

/* Folds the slot's kept rows into its stored state. Log mode: replays them on the base in
 * place (conv window included) with the forward pass's operations; snapshot mode: the state
 * is already current, only the ring restarts. */
static int rb_fold(struct model *m, struct model_state *s, int slot)
{
	int c = s->rb_n[slot];
	if (s->rb_mode == MODEL_ROLLBACK_LOG && c > 0) {
		int cd = s->conv_dim, d = s->d_k, Hk = m->cfg.ssm_n_k_heads, Hv = s->H_v;
		float *buf = malloc(sizeof(float) * ((size_t)c * cd + (size_t)d));
		if (!buf)
			return -ENOMEM;
		float scale = 1.0f / sqrtf((float)d);
		for (int il = 0; il < m->cfg.n_layer; il++) {
			const struct layer *l = &m->layers[il];
			if (l->attn)
				continue;
			log_replay_inputs(m, s, l, slot, c, slot_conv(s, slot, l->index), buf);
			const float *lg = rb_row(s, slot, l->index, 0) + cd;
			for (int h = 0; h < Hv; h++) {
				int kh = h % Hk;
				struct gdn_rows rr = {
					.n = c,
					.q = buf + Hk * d + kh * d,
					.k = buf + Hk * d + kh * d,
					.v = buf + 2 * Hk * d + h * d,
					.q_stride = cd, .k_stride = cd, .v_stride = cd,
					.g = lg + h,
					.beta = lg + Hv + h,
					.gb_stride = (int)s->rb_row_floats,
					.o = buf + (size_t)c * cd,
					.o_stride = 0,
				};
				gdn_rule_rows(slot_ssm(s, slot, l->index) + (size_t)h * d * d, d, d, scale, &rr);
			}
		}
		free(buf);
	}
	s->rb_n[slot] = 0;
	return 0;
}

/* Residual adds and the norms around the mixers, a row at a time (split over the pool). */
static void attn_norm_row(struct pass *p, int r)
{
	int E = p->m->cfg.n_embd;
	rms_norm(p->h + (size_t)r * E, p->x + (size_t)r * E, p->l->attn_norm, E, p->m->cfg.norm_eps);
}

static void add_attn_norm_row(struct pass *p, int r)
{
	int E = p->m->cfg.n_embd;
	float *x = p->x + (size_t)r * E;
	const float *y = p->y + (size_t)r * E;
	for (int i = 0; i < E; i++)
		x[i] += y[i];
	rms_norm(p->h + (size_t)r * E, x, p->l->attn_norm, E, p->m->cfg.norm_eps);
}

static void add_post_norm_row(struct pass *p, int r)
{
	int E = p->m->cfg.n_embd;
	float *x = p->x + (size_t)r * E;
	const float *y = p->y + (size_t)r * E;
	for (int i = 0; i < E; i++)
		x[i] += y[i];
	rms_norm(p->h + (size_t)r * E, x, p->l->post_norm, E, p->m->cfg.norm_eps);
}

static void add_row(struct pass *p, int r)
{
	int E = p->m->cfg.n_embd;
	float *x = p->x + (size_t)r * E;
	const float *y = p->y + (size_t)r * E;
	for (int i = 0; i < E; i++)
		x[i] += y[i];
}

static int forward_impl(struct model *m, struct model_state *s, const struct model_batch *b, float *logits_out,
			int spec, const uint8_t *keep)
{
	const struct model_config *c = &m->cfg;
	int N = b->n_rows;
	if (N <= 0)
		return N == 0 ? 0 : -EINVAL;
	if (s->n_gdn != m->n_gdn || s->n_attn != m->n_attn || s->conv_dim != m->conv_dim)
		return -EINVAL;
	struct segment *seg = malloc(sizeof(*seg) * (size_t)N);
	if (!seg)
		return -ENOMEM;
	int n_seg = 0, rc = check_batch(m, s, b, seg, &n_seg), any_kept = 0;
	for (int si = 0; !rc && si < n_seg; si++) {
		seg[si].spec = spec || (keep && keep[seg[si].r0]);
		seg[si].c = 0;
		seg[si].replay0 = 0;
		any_kept |= seg[si].spec;
		if (seg[si].spec && s->rb_mode == MODEL_ROLLBACK_NONE)
			rc = -EINVAL;
		else if (seg[si].spec && seg[si].n > s->rb_rows)
			rc = -E2BIG;
	}
	if (rc) {
		free(seg);
		return rc;
	}
	/* Kept rows: fold when the new rows would not fit (or the pass is a plain one), then note
	 * where each segment's rows go. Folding does not change what the slot holds. */
	size_t n_replay = 0;
	for (int si = 0; si < n_seg && s->rb_mode != MODEL_ROLLBACK_NONE; si++) {
		struct segment *sg = &seg[si];
		if ((!sg->spec || s->rb_n[sg->slot] + sg->n > s->rb_rows) && (rc = rb_fold(m, s, sg->slot))) {
			free(seg);
			return rc;
		}
		sg->c = s->rb_n[sg->slot];
		if (sg->spec && s->rb_mode == MODEL_ROLLBACK_LOG) {
			sg->replay0 = n_replay;
			n_replay += (size_t)sg->c;
		}
		if (sg->spec && s->rb_mode == MODEL_ROLLBACK_SNAPSHOT && sg->c == 0)
			for (int i = 0; i < s->n_gdn; i++)
				memcpy(rb_row(s, sg->slot, i, 0), slot_ssm(s, sg->slot, i), sizeof(float) * s->rb_row_floats);
	}
	struct pass p = { .m = m, .s = s, .N = N, .seg = seg, .n_seg = n_seg };
	float *rb_buf = NULL;
	if (any_kept && s->rb_mode == MODEL_ROLLBACK_LOG) {
		rb_buf = malloc(sizeof(float) * (n_replay * (size_t)s->conv_dim + (size_t)n_seg * s->conv_floats + 1));
		if (!rb_buf) {
			free(seg);
			return -ENOMEM;
		}
		p.segwin = rb_buf;
		p.replay = rb_buf + (size_t)n_seg * s->conv_floats;
	}
	int d = c->ssm_head_dim, Hv = c->ssm_n_v_heads, hd = c->head_dim, kvd = s->kv_dim;
	p.w1 = imax(imax(m->conv_dim, c->n_head * 2 * hd), c->n_ff);
	p.w2 = imax(imax(m->conv_dim, c->n_ff), kvd);
	p.w3 = imax(Hv * d, kvd);
	p.w4 = imax(Hv * d, c->n_head * hd);
	int nth = kern_pool_threads(m->pool);
	p.scratch_per_thread = gdn_chunk_scratch_floats(GDN_CHUNK, d, d);
	if (p.scratch_per_thread < (size_t)s->n_ctx)
		p.scratch_per_thread = (size_t)s->n_ctx;
	p.scratch_per_thread += (size_t)d * d + (size_t)d; /* spec_head's state copy and dummy output */
	size_t E = (size_t)c->n_embd;
	size_t need = (size_t)N * (3 * E + p.w1 + p.w2 + p.w3 + p.w4 + 4 * (size_t)Hv) +
		      p.scratch_per_thread * nth;
	size_t X = (size_t)c->n_expert, K = (size_t)c->n_expert_used, moe_floats = 0, moe_ints = 0;
	if (X) {
		moe_floats = (size_t)N * (X + 1 + K + 2 * E + 2 * (size_t)c->n_ff_exp);
		moe_ints = (size_t)N * K * 2 + X + 1;
		if (moe_ints > m->iwork_n) {
			int32_t *iw = realloc(m->iwork, moe_ints * sizeof(int32_t));
			if (!iw) {
				free(rb_buf);
				free(seg);
				return -ENOMEM;
			}
			m->iwork = iw;
			m->iwork_n = moe_ints;
		}
	}
	need += moe_floats;
	if (need > m->work_floats) {
		float *w = realloc(m->work, need * sizeof(float));
		if (!w) {
			free(rb_buf);
			free(seg);
			return -ENOMEM;
		}
		m->work = w;
		m->work_floats = need;
	}
	float *w = m->work;
	p.x = w, w += N * E;
	p.h = w, w += N * E;
	p.y = w, w += N * E;
	p.a1 = w, w += (size_t)N * p.w1;
	p.a2 = w, w += (size_t)N * p.w2;
	p.a3 = w, w += (size_t)N * p.w3;
	p.a4 = w, w += (size_t)N * p.w4;
	p.gb = w, w += (size_t)N * 2 * Hv;
	p.ab = w, w += (size_t)N * 2 * Hv;
	if (X) {
		p.mlog = w, w += (size_t)N * X;
		p.mgate = w, w += (size_t)N;
		p.mw = w, w += (size_t)N * K;
		p.mx = w, w += (size_t)N * E;
		p.mo = w, w += (size_t)N * E;
		p.mg = w, w += (size_t)N * c->n_ff_exp;
		p.mu = w, w += (size_t)N * c->n_ff_exp;
		p.mi = m->iwork;
	}
	p.scratch = w;

	for (int r = 0; r < N; r++)
		kern_row_to_f32(m->tok_embd.type,
				(const uint8_t *)m->tok_embd.data + m->tok_embd.row_bytes * (size_t)b->tokens[r],
				p.x + r * E, c->n_embd);
	double norm_cost = 8.0 * E; /* rough flops a row: a double sum of squares, scale, add */
	for (int il = 0; il < c->n_layer; il++) {
		p.l = &m->layers[il];
		/* the previous layer's MLP output is added here, with this layer's first norm */
		for_rows(&p, il ? add_attn_norm_row : attn_norm_row, norm_cost);
		if (p.l->attn)
			layer_attn(&p);
		else
			layer_gdn(&p);
		for_rows(&p, add_post_norm_row, norm_cost);
		if (c->n_expert)
			layer_moe(&p);
		else
			layer_mlp(&p);
	}
	for_rows(&p, add_row, norm_cost);
	for (int si = 0; si < n_seg; si++) {
		s->pos[seg[si].slot] += seg[si].n;
		if (seg[si].spec)
			s->rb_n[seg[si].slot] = seg[si].c + seg[si].n;
	}
	free(rb_buf);

	/* Logits only for the rows that want them: gather their normed rows first. */
	int n_out = 0;
	for (int r = 0; r < N; r++) {
		if (b->want_logits && !b->want_logits[r])
			continue;
		rms_norm(p.h + (size_t)n_out * E, p.x + r * E, m->output_norm, c->n_embd, c->norm_eps);
		n_out++;
	}
	if (n_out > 0 && logits_out)
		kern_matmul(m->pool, &m->output, p.h, c->n_embd, n_out, logits_out, c->n_vocab);
	free(seg);
	return 0;
}

int model_forward(struct model *m, struct model_state *s, const struct model_batch *b, float *logits_out)
{
	return forward_impl(m, s, b, logits_out, 0, NULL);
}

/* ======== rollback ======== */

int model_forward_spec(struct model *m, struct model_state *s, const struct model_batch *b, float *logits_out)
{
	return forward_impl(m, s, b, logits_out, 1, NULL);
}

int model_forward_keep(struct model *m, struct model_state *s, const struct model_batch *b, const uint8_t *keep,
		       float *logits_out)
{
	return forward_impl(m, s, b, logits_out, 0, keep);
}

int model_state_set_rollback(struct model_state *s, enum model_rollback mode, int max_rows)
{
	if (mode != MODEL_ROLLBACK_NONE && mode != MODEL_ROLLBACK_LOG && mode != MODEL_ROLLBACK_SNAPSHOT)
		return -EINVAL;
	if (mode != MODEL_ROLLBACK_NONE && (max_rows <= 0 || max_rows > 4096))
		return -EINVAL;
	for (int i = 0; s->rb_mode == MODEL_ROLLBACK_LOG && i < s->n_slots; i++)
		if (s->rb_n[i] > 0)
			return -EBUSY; /* the base lacks the kept rows: model_commit them first */
	free(s->rb_data);
	free(s->rb_n);
	s->rb_data = NULL;
	s->rb_n = NULL;
	s->rb_mode = MODEL_ROLLBACK_NONE;
	s->rb_rows = 0;
	if (mode == MODEL_ROLLBACK_NONE)
		return 0;
	size_t row, entries;
	if (mode == MODEL_ROLLBACK_LOG) {
		struct gdn_log_shape sh = { s->n_gdn, (s->conv_dim - s->H_v * s->d_v) / (2 * s->d_k), s->H_v, s->d_k,
					    s->d_v, s->conv_hist + 1 };
		row = (size_t)gdn_log_row_floats(&sh);
		entries = (size_t)max_rows;
	} else {
		row = s->ssm_floats + s->conv_floats;
		entries = (size_t)max_rows + 1;
	}
	size_t per_slot = row * entries * (size_t)s->n_gdn;
	if (per_slot && per_slot > SIZE_MAX / sizeof(float) / (size_t)s->n_slots)
		return -ENOMEM;
	s->rb_data = calloc(per_slot * (size_t)s->n_slots + 1, sizeof(float));
	s->rb_n = calloc((size_t)s->n_slots, sizeof(int));
	if (!s->rb_data || !s->rb_n) {
		free(s->rb_data);
		free(s->rb_n);
		s->rb_data = NULL;
		s->rb_n = NULL;
		return -ENOMEM;
	}
	s->rb_mode = mode;
	s->rb_rows = max_rows;
	s->rb_row_floats = row;
	s->rb_layer_floats = row * entries;
	s->rb_slot_floats = per_slot;
	return 0;
}

enum model_rollback model_state_rollback_mode(const struct model_state *s)
{
	return s->rb_mode;
}

int model_state_rollback_capacity(const struct model_state *s)
{
	return s->rb_rows;
}

int model_state_slot_kept(const struct model_state *s, int slot)
{
	if (slot < 0 || slot >= s->n_slots)
		return -EINVAL;
	return s->rb_n ? s->rb_n[slot] : 0;
}

int model_state_slot_rollback(struct model_state *s, int slot, int n)
{
	if (slot < 0 || slot >= s->n_slots || n < 0)
		return -EINVAL;
	if (n == 0)
		return 0;
	if (!s->rb_n || n > s->rb_n[slot])
		return -ERANGE;
	int keep = s->rb_n[slot] - n;
	if (s->rb_mode == MODEL_ROLLBACK_SNAPSHOT)
		for (int i = 0; i < s->n_gdn; i++)
			memcpy(slot_ssm(s, slot, i), rb_row(s, slot, i, keep), sizeof(float) * s->rb_row_floats);
	s->rb_n[slot] = keep;
	s->pos[slot] -= n; /* attention: KV rows past pos are dead and get overwritten */
	return 0;
}

size_t model_state_rollback_bytes(const struct model_state *s)
{
	return s->rb_n ? s->rb_slot_floats * (size_t)s->n_slots * sizeof(float) : 0;
}

int model_commit(struct model *m, struct model_state *s, int slot)
{
	if (slot < 0 || slot >= s->n_slots || s->n_gdn != m->n_gdn || s->conv_dim != m->conv_dim)
		return -EINVAL;
	return s->rb_n ? rb_fold(m, s, slot) : 0;
}

const float *model_state_slot_gdn(const struct model_state *s, int slot, int gdn, size_t *n_floats)
{
	if (slot < 0 || slot >= s->n_slots || gdn < 0 || gdn >= s->n_gdn)
		return NULL;
	if (n_floats)
		*n_floats = s->ssm_floats + s->conv_floats;
	return slot_ssm(s, slot, gdn);
}

void model_state_memory(const struct model_state *s, struct model_state_memory *out)
{
	size_t slots = (size_t)s->n_slots, f = sizeof(float);
	out->kv = 2 * s->kv_floats * (size_t)s->n_attn * slots * f;
	out->gdn_state = s->ssm_floats * (size_t)s->n_gdn * slots * f;
	out->conv = s->conv_floats * (size_t)s->n_gdn * slots * f;
	out->rollback = model_state_rollback_bytes(s);
	out->snapshot_ring = s->rb_n ? (s->ssm_floats + s->conv_floats) * (size_t)s->n_gdn * ((size_t)s->rb_rows + 1) * slots * f
				     : 0;
}
