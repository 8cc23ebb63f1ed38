/* perf_model — decode throughput of the CPU forward pass.
 *
 *   perf_model [--threads N] [--steps N] [--isa auto|avx512|avx2|portable] [--model FILE.gguf]... [--json]
 *   perf_model --write-tiny PATH | --write-100m PATH | --write-moe PATH [--type T]
 *   perf_model --write-shape 0.8b|9b|35b-a3b|moe-small PATH [--type T]
 *   perf_model --model FILE.gguf --greedy TEXT [--steps N]
 *   perf_model --model FILE.gguf --logits N OUT
 *   perf_model --import-hf DIR OUT.gguf [--type T]
 * (T: f32, f16, bf16 or a block type of model/quant.h, e.g. q4_k; sixi's own quantiser; for
 * --write-*, also q4_k_m or q5_k_m: llama-quantize's mixtures, model/tiny.h)
 *
 * Without --model it writes two random models to a temporary directory: the embedded tiny
 * default and a ~100M-parameter one (F32), both with the tiny vocabulary. For each model it
 * measures, after a 32-token prompt per sequence:
 *   single stream: one sequence, one row per pass, greedy, `steps` passes;
 *   32 sequences: 32 slots, one row each per pass (rows share one read of the weights);
 *   prefill: one 256-token prompt in one pass.
 * --greedy prints the first N greedy tokens after TEXT (ids and text), to compare with
 * llama.cpp on the same file; --logits writes teacher-forced logits of N fixed ids (for the KL
 * divergence against llama.cpp, tests/perf/kl_vs_llama.sh). --write-* write the two benchmark models and exit; --import-hf
 * converts a Hugging Face Qwen3.5 text checkpoint, dense or MoE, to GGUF (without tokenizer keys).
 * --write-shape writes a random model of Qwen3.5-0.8B's, 9B's or 35B-A3B's shape, or moe-small
 * (shapes.h; the tiny vocabulary padded to the real 248320 tokens with tokens that decode to
 * their names, so that a random model sampling them streams text), the GPU comparison's files
 * (cuda_vs_llama.sh). The qwen35moe shapes are written with one layer's data in memory: every
 * layer holds the same random tensors (35b-a3b: ~37 GB as Q8_0, ~69 GB as BF16 on disk).
 * --write-moe writes the 100M model's attention and GDN layers with a qwen35moe MLP (16
 * experts of width 512, 4 used, a shared expert of width 512).
 * Tokens/s = rows decoded / wall time of the passes (clock_now_ns). Run by `meson test
 * --benchmark --suite perf`, never in the default test run. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/clock.h"
#include "gguf/gguf.h"
#include "model/kernels.h"
#include "model/model.h"
#include "model/quant.h"
#include "model/safetensors.h"
#include "model/tiny.h"
#include "text/tokenizer.h"
#include "shapes.h"

static const struct model_config c100 = {
	.n_embd = 768, .n_layer = 12, .n_ff = 2816, .n_head = 8, .n_head_kv = 2, .head_dim = 64,
	.n_rot = 16, .rope_theta = 1e6f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4, .ssm_head_dim = 64,
	.ssm_n_k_heads = 4, .ssm_n_v_heads = 8, .full_attn_interval = 4, .n_ctx_train = 8192,
};

static int argmax(const float *v, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return b;
}

struct result {
	double single_tps, batch_tps, prefill_tps;
};

static int bench(const char *path, int threads, const char *isa, int steps, struct result *res, char *desc,
		 size_t desc_len)
{
	char err[512];
	struct model *m = model_load(path, threads, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "perf_model: %s\n", err);
		return -1;
	}
	if (isa && model_set_isa(m, isa) != 0) {
		fprintf(stderr, "perf_model: cannot select kernels '%s'\n", isa);
		model_free(m);
		return -1;
	}
	const struct model_config *c = model_get_config(m);
	int V = c->n_vocab, n_seq = 32, prompt = 32, long_prompt = 256;
	long params = (long)c->n_vocab * c->n_embd * 2;
	for (int il = 0; il < c->n_layer; il++) {
		long E = c->n_embd, d = c->ssm_head_dim;
		if (model_layer_is_attention(m, il))
			params += E * c->n_head * c->head_dim * 3 + 2 * E * c->n_head_kv * c->head_dim;
		else
			params += E * (2 * c->ssm_n_k_heads * d + c->ssm_n_v_heads * d) + 2 * E * c->ssm_n_v_heads * d;
		params += 3 * E * c->n_ff; /* qwen35moe: the shared expert */
		if (c->n_expert > 0) /* the router, the shared expert's gate, the experts */
			params += E * c->n_expert + E + 3 * E * c->n_ff_exp * (long)c->n_expert;
	}
	char moe[64] = "";
	if (c->n_expert > 0)
		snprintf(moe, sizeof(moe), ", %d experts (%d used)", c->n_expert, c->n_expert_used);
	snprintf(desc, desc_len, "%.1fM params, %d layers, n_embd %d%s, %s, %d threads", params / 1e6, c->n_layer,
		 c->n_embd, moe, model_isa(m), threads);
	/* slot 0 decodes in both phases */
	struct model_state *s = model_state_create(m, n_seq, prompt + 2 * steps + long_prompt + 8);
	float *logits = malloc(sizeof(float) * V * (size_t)(long_prompt > n_seq ? long_prompt : n_seq));
	int32_t tok[1024], slot[1024];
	uint8_t want[1024];
	int rc = 0;
	/* prompts: every slot gets its own 32 tokens in one pass */
	int n = 0;
	for (int q = 0; q < n_seq; q++)
		for (int t = 0; t < prompt; t++, n++)
			tok[n] = (q * 131 + t * 17) % V, slot[n] = q, want[n] = t == prompt - 1;
	struct model_batch b = { n, tok, slot, NULL, want };
	rc |= model_forward(m, s, &b, logits);
	int next[32];
	for (int q = 0; q < n_seq; q++)
		next[q] = argmax(logits + (size_t)q * V, V);
	/* single stream on slot 0 */
	uint64_t t0 = clock_now_ns();
	for (int i = 0; i < steps; i++) {
		int32_t sl = 0;
		struct model_batch one = { 1, &next[0], &sl, NULL, NULL };
		rc |= model_forward(m, s, &one, logits);
		next[0] = argmax(logits, V);
	}
	res->single_tps = steps / ((clock_now_ns() - t0) / 1e9);
	/* 32 sequences, one row each per pass (slot 0 is ahead; positions are per slot) */
	t0 = clock_now_ns();
	for (int i = 0; i < steps; i++) {
		for (int q = 0; q < n_seq; q++)
			tok[q] = next[q], slot[q] = q;
		struct model_batch many = { n_seq, tok, slot, NULL, NULL };
		rc |= model_forward(m, s, &many, logits);
		for (int q = 0; q < n_seq; q++)
			next[q] = argmax(logits + (size_t)q * V, V);
	}
	res->batch_tps = (double)steps * n_seq / ((clock_now_ns() - t0) / 1e9);
	/* prefill: a fresh slot, 256 tokens in one pass, logits for the last only */
	model_state_slot_reset(s, 1);
	for (int t = 0; t < long_prompt; t++)
		tok[t] = (t * 7 + 3) % V, slot[t] = 1, want[t] = t == long_prompt - 1;
	struct model_batch pf = { long_prompt, tok, slot, NULL, want };
	t0 = clock_now_ns();
	rc |= model_forward(m, s, &pf, logits);
	res->prefill_tps = long_prompt / ((clock_now_ns() - t0) / 1e9);
	free(logits);
	model_state_destroy(s);
	model_free(m);
	if (rc)
		fprintf(stderr, "perf_model: a forward pass failed (%d)\n", rc);
	return rc ? -1 : 0;
}

static int greedy(const char *path, const char *text, int steps, int threads)
{
	char err[512];
	struct model *m = model_load(path, threads, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "perf_model: %s\n", err);
		return 1;
	}
	struct tokenizer *tk = tok_load_gguf(model_gguf(m), err, sizeof(err));
	int32_t *ids = NULL;
	size_t n = 0;
	if (!tk || tok_encode(tk, text, strlen(text), true, true, &ids, &n) != 0 || n == 0 || n > 256) {
		fprintf(stderr, "perf_model: cannot tokenize the prompt%s%s\n", tk ? "" : ": ", tk ? "" : err);
		return 1;
	}
	int V = model_get_config(m)->n_vocab;
	struct model_state *s = model_state_create(m, 1, (int)n + steps + 1);
	float *lg = malloc(sizeof(float) * V * n);
	int32_t slots[256] = { 0 }, out[512];
	struct model_batch b = { (int)n, ids, slots, NULL, NULL };
	int rc = model_forward(m, s, &b, lg);
	const float *last = lg + (size_t)(n - 1) * V;
	printf("prompt ids:");
	for (size_t i = 0; i < n; i++)
		printf(" %d", ids[i]);
	printf("\ngenerated ids:");
	for (int i = 0; i < steps && !rc; i++) {
		out[i] = argmax(last, V);
		printf(" %d", out[i]);
		struct model_batch one = { 1, &out[i], slots, NULL, NULL };
		rc = model_forward(m, s, &one, lg);
		last = lg;
	}
	char *txt = NULL;
	size_t tl = 0;
	if (!rc && tok_decode(tk, out, (size_t)steps, false, &txt, &tl) == 0)
		printf("\ngenerated text: %s\n", txt);
	free(txt);
	free(lg);
	free(ids);
	model_state_destroy(s);
	tok_destroy(tk);
	model_free(m);
	return rc ? 1 : 0;
}

/* Teacher-forced logits: n fixed ids ((37 i + 11) mod n_vocab) in one pass, every row's
 * n_vocab logits written to out as float32 (row-major); the ids go to stdout, one line. */
static int logits_dump(const char *path, int n, const char *out, int threads, const char *isa)
{
	char err[512];
	struct model *m = model_load(path, threads, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "perf_model: %s\n", err);
		return 1;
	}
	if (isa && model_set_isa(m, isa) != 0) {
		fprintf(stderr, "perf_model: unknown --isa '%s'\n", isa);
		model_free(m);
		return 2;
	}
	int V = model_get_config(m)->n_vocab, rc = 1;
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)n), *slots = calloc((size_t)n, sizeof(int32_t));
	float *lg = malloc(sizeof(float) * (size_t)V * n);
	struct model_state *s = model_state_create(m, 1, n + 1);
	FILE *f = NULL;
	if (!ids || !slots || !lg || !s)
		goto out;
	for (int i = 0; i < n; i++)
		ids[i] = (int32_t)((37L * i + 11) % V);
	struct model_batch b = { n, ids, slots, NULL, NULL };
	if (model_forward(m, s, &b, lg) != 0 || !(f = fopen(out, "wb")) ||
	    fwrite(lg, sizeof(float) * (size_t)V, (size_t)n, f) != (size_t)n)
		goto out;
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? " " : "", ids[i]);
	printf("\n");
	rc = 0;
out:
	if (f && fclose(f) != 0)
		rc = 1;
	if (rc)
		fprintf(stderr, "perf_model: cannot write the logits to %s\n", out);
	model_state_destroy(s);
	free(lg);
	free(slots);
	free(ids);
	model_free(m);
	return rc;
}

/* ---- --write-shape for the qwen35moe shapes: a layer's worth of memory ---- */

/* Random data of one tensor kind, shared by every layer (the writer references it). */
struct shared_buf {
	char key[64];
	void *data;
	uint64_t bytes;
	uint32_t type;
};

struct shape_writer {
	struct gguf_writer *w;
	struct shared_buf bufs[32];
	int n_bufs, rc;
	uint64_t rng;
};

static float shape_uniform(struct shape_writer *sw) /* [-1, 1) */
{
	sw->rng ^= sw->rng << 13, sw->rng ^= sw->rng >> 7, sw->rng ^= sw->rng << 17;
	return (float)((sw->rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* Tensor `name` of ne0 x ne1 x ne2 (ggml order): mean + spread * uniform, `matrix` ones stored as
 * type (where its blocks divide ne0), the rest F32. The data is made once per key and shared by
 * every layer's tensor of that key, so the file is written with one layer's data in memory. */
static void shape_add(struct shape_writer *sw, const char *key, const char *name, int ne0, int ne1, int ne2,
		      float mean, float spread, int matrix, uint32_t mtype)
{
	if (sw->rc)
		return;
	uint32_t type = GGUF_TENSOR_F32;
	int be = quant_block_elems(mtype);
	if (matrix && (!be || ne0 % be == 0))
		type = mtype;
	struct shared_buf *b = NULL;
	for (int i = 0; i < sw->n_bufs; i++)
		if (strcmp(sw->bufs[i].key, key) == 0)
			b = &sw->bufs[i];
	uint64_t rows = (uint64_t)ne1 * (uint64_t)ne2, rb = gguf_type_row_bytes(type, (uint64_t)ne0);
	if (!b) {
		if (sw->n_bufs == (int)(sizeof sw->bufs / sizeof sw->bufs[0])) {
			sw->rc = -ENOSPC;
			return;
		}
		b = &sw->bufs[sw->n_bufs++];
		snprintf(b->key, sizeof b->key, "%s", key);
		b->bytes = rb * rows;
		b->type = type;
		b->data = malloc(b->bytes);
		float *x = malloc(sizeof(float) * (size_t)ne0);
		if (!b->data || !x) {
			free(x);
			sw->rc = -ENOMEM;
			return;
		}
		for (uint64_t r = 0; r < rows; r++) {
			uint8_t *dst = (uint8_t *)b->data + rb * r;
			for (int i = 0; i < ne0; i++)
				x[i] = mean + spread * shape_uniform(sw);
			if (type == GGUF_TENSOR_F32) {
				memcpy(dst, x, sizeof(float) * (size_t)ne0);
			} else if (quant_type_is_block(type)) {
				quant_row_quantize(type, x, dst, ne0);
			} else {
				for (int i = 0; i < ne0; i++) {
					uint16_t h = type == GGUF_TENSOR_F16 ? kern_f32_to_f16(x[i]) : kern_f32_to_bf16(x[i]);
					memcpy(dst + 2 * i, &h, 2);
				}
			}
		}
		free(x);
	}
	uint64_t ne[4] = { (uint64_t)ne0, (uint64_t)ne1, (uint64_t)ne2, 1 };
	sw->rc = gguf_writer_add_tensor_ref(sw->w, name, ne2 > 1 ? 3 : ne1 == 1 ? 1 : 2, ne, b->type, b->data, b->bytes);
}

static float shape_fan(int fan_in, float scale)
{
	return scale * sqrtf(3.0f / (float)fan_in);
}

/* A random model of c's shape (the tiny vocabulary padded to c->n_vocab, its template) at path,
 * every layer alike (the same random tensors), with at most one layer's tensors and the
 * embeddings in memory: the ~37 GB Q8_0 file of Qwen3.5-35B-A3B's shape is written in ~2 GB. The
 * tensors and their scales are model_write_random's. 0, or a negative errno with err set. */
static int write_shape_streamed(const char *path, const struct model_config *c, uint32_t type, uint64_t seed,
				char *err, size_t errlen)
{
	struct shape_writer sw = { .w = gguf_writer_create(), .rng = seed * 0x9e3779b97f4a7c15ull | 1 };
	if (!sw.w)
		return -ENOMEM;
	char why[256], n[96], tmp[4200];
	int rc = model_config_check(c, why, sizeof why);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, why);
	rc = rc ? rc : model_config_to_gguf(c, sw.w);
	rc = rc ? rc : gguf_writer_set_str(sw.w, "general.name", "sixi-shape-random");
	rc = rc ? rc : tok_write_tiny_vocab_padded(sw.w, (size_t)c->n_vocab, TOK_TYPE_NORMAL, err, errlen);
	rc = rc ? rc : gguf_writer_set_str(sw.w, "tokenizer.chat_template", model_tiny_chat_template);
	sw.rc = rc;
	int E = c->n_embd, d = c->ssm_head_dim, Hk = c->ssm_n_k_heads, Hv = c->ssm_n_v_heads, hd = c->head_dim;
	int cd = 2 * Hk * d + Hv * d, X = c->n_expert, F = c->n_ff_exp;
	shape_add(&sw, "token_embd", "token_embd.weight", E, c->n_vocab, 1, 0, 1.7f, 1, type);
	shape_add(&sw, "output_norm", "output_norm.weight", E, 1, 1, 1, 0.35f, 0, type);
	shape_add(&sw, "output", "output.weight", E, c->n_vocab, 1, 0, shape_fan(E, 1), 1, type);
	for (int il = 0; il < c->n_layer && !sw.rc; il++) {
#define T(key, ne0, ne1, ne2, mean, spread, matrix) \
	(snprintf(n, sizeof n, "blk.%d.%s", il, key), shape_add(&sw, key, n, ne0, ne1, ne2, mean, spread, matrix, type))
		T("attn_norm.weight", E, 1, 1, 1, 0.35f, 0);
		T("post_attention_norm.weight", E, 1, 1, 1, 0.35f, 0);
		if ((il + 1) % c->full_attn_interval == 0) {
			T("attn_q.weight", E, c->n_head * hd * 2, 1, 0, shape_fan(E, 1), 1);
			T("attn_k.weight", E, c->n_head_kv * hd, 1, 0, shape_fan(E, 1), 1);
			T("attn_v.weight", E, c->n_head_kv * hd, 1, 0, shape_fan(E, 1), 1);
			T("attn_output.weight", c->n_head * hd, E, 1, 0, shape_fan(c->n_head * hd, 0.5f), 1);
			T("attn_q_norm.weight", hd, 1, 1, 1, 0.35f, 0);
			T("attn_k_norm.weight", hd, 1, 1, 1, 0.35f, 0);
		} else {
			T("attn_qkv.weight", E, cd, 1, 0, shape_fan(E, 1), 1);
			T("attn_gate.weight", E, Hv * d, 1, 0, shape_fan(E, 1), 1);
			T("ssm_beta.weight", E, Hv, 1, 0, shape_fan(E, 1), 1);
			T("ssm_alpha.weight", E, Hv, 1, 0, shape_fan(E, 1), 1);
			T("ssm_conv1d.weight", c->ssm_conv_kernel, cd, 1, 0, 0.85f, 0);
			T("ssm_dt.bias", Hv, 1, 1, -3.0f, 0.85f, 0);
			T("ssm_a", Hv, 1, 1, -4.5f, 3.5f, 0);
			T("ssm_norm.weight", d, 1, 1, 1, 0.35f, 0);
			T("ssm_out.weight", Hv * d, E, 1, 0, shape_fan(Hv * d, 0.5f), 1);
		}
		if (X > 0) {
			T("ffn_gate_inp.weight", E, X, 1, 0, shape_fan(E, 2), 1);
			T("ffn_gate_inp_shexp.weight", E, 1, 1, 0, shape_fan(E, 1), 0);
			T("ffn_gate_shexp.weight", E, c->n_ff, 1, 0, shape_fan(E, 1), 1);
			T("ffn_up_shexp.weight", E, c->n_ff, 1, 0, shape_fan(E, 1), 1);
			T("ffn_down_shexp.weight", c->n_ff, E, 1, 0, shape_fan(c->n_ff, 0.5f), 1);
			T("ffn_gate_exps.weight", E, F, X, 0, shape_fan(E, 1), 1);
			T("ffn_up_exps.weight", E, F, X, 0, shape_fan(E, 1), 1);
			T("ffn_down_exps.weight", F, E, X, 0, shape_fan(F, 0.5f), 1);
		} else {
			T("ffn_gate.weight", E, c->n_ff, 1, 0, shape_fan(E, 1), 1);
			T("ffn_up.weight", E, c->n_ff, 1, 0, shape_fan(E, 1), 1);
			T("ffn_down.weight", c->n_ff, E, 1, 0, shape_fan(c->n_ff, 0.5f), 1);
		}
#undef T
	}
	rc = sw.rc;
	if (rc && !err[0])
		snprintf(err, errlen, "%s: cannot build the model (%s)", path, strerror(-rc));
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (!rc)
		rc = gguf_writer_write(sw.w, tmp, err, errlen);
	gguf_writer_destroy(sw.w);
	for (int i = 0; i < sw.n_bufs; i++)
		free(sw.bufs[i].data);
	if (!rc && rename(tmp, path) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot rename from %s.tmp: %s", path, path, strerror(errno));
	}
	if (rc)
		unlink(tmp);
	return rc;
}

int main(int argc, char **argv)
{
	const char *greedy_text = NULL, *write_tiny = NULL, *write_100m = NULL, *write_moe = NULL, *hf_dir = NULL, *hf_out = NULL;
	const char *shape = NULL, *write_shape = NULL;
	const char *logits_out = NULL;
	int logits_n = 0;
	uint32_t hf_type = GGUF_TENSOR_F32;
	const char *isa = NULL;
	int threads = 0, steps = 32, json = 0, n_models = 0;
	const char *models[8];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc && n_models < 8)
			models[n_models++] = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc)
			isa = argv[++i];
		else if (strcmp(argv[i], "--logits") == 0 && i + 2 < argc)
			logits_n = atoi(argv[i + 1]), logits_out = argv[i + 2], i += 2;
		else if (strcmp(argv[i], "--greedy") == 0 && i + 1 < argc)
			greedy_text = argv[++i];
		else if (strcmp(argv[i], "--write-tiny") == 0 && i + 1 < argc)
			write_tiny = argv[++i];
		else if (strcmp(argv[i], "--write-100m") == 0 && i + 1 < argc)
			write_100m = argv[++i];
		else if (strcmp(argv[i], "--write-moe") == 0 && i + 1 < argc)
			write_moe = argv[++i];
		else if (strcmp(argv[i], "--write-shape") == 0 && i + 2 < argc && perf_shape(argv[i + 1]))
			shape = argv[i + 1], write_shape = argv[i + 2], i += 2;
		else if (strcmp(argv[i], "--import-hf") == 0 && i + 2 < argc)
			hf_dir = argv[i + 1], hf_out = argv[i + 2], i += 2;
		else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
			const char *t = argv[++i];
			hf_type = GGUF_TENSOR_F32;
			if (strcasecmp(t, "q4_k_m") == 0)
				hf_type = MODEL_MIX_Q4_K_M;
			else if (strcasecmp(t, "q5_k_m") == 0)
				hf_type = MODEL_MIX_Q5_K_M;
			for (uint32_t k = 0; k < 40; k++)
				if (strcasecmp(t, gguf_type_name(k)) == 0 &&
				    (k <= GGUF_TENSOR_F16 || k == GGUF_TENSOR_BF16 || quant_type_is_block(k)))
					hf_type = k;
		}
		else {
			fprintf(stderr, "usage: perf_model [--threads N] [--steps N] [--isa auto|avx512|avx2|portable] [--model FILE.gguf]... [--json]\n"
					"       perf_model --write-tiny PATH | --write-100m PATH | --write-moe PATH [--type T]\n"
					"       perf_model --write-shape 0.8b|9b|35b-a3b|moe-small PATH [--type T]\n"
					"       perf_model --model FILE.gguf --greedy TEXT [--steps N]\n"
					"       perf_model --model FILE.gguf --logits N OUT\n"
					"       perf_model --import-hf DIR OUT.gguf [--type T]\n"
					"  T: f32, f16, bf16, or a block type: q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k iq4_nl iq4_xs,\n"
					"     or (--write-*) q4_k_m, q5_k_m: llama-quantize's mixtures of those (model/tiny.h)\n");
			return 2;
		}
	}
	if (threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (int)n : 1;
	}
	if (steps < 1 || steps > 400)
		steps = 32;
	char err0[512];
	const char *type_label = hf_type == MODEL_MIX_Q4_K_M   ? "Q4_K_M-mixture"
				 : hf_type == MODEL_MIX_Q5_K_M ? "Q5_K_M-mixture"
							       : gguf_type_name(hf_type);
	if (hf_dir) {
		if (hf_type == MODEL_MIX_Q4_K_M || hf_type == MODEL_MIX_Q5_K_M) {
			fprintf(stderr, "perf_model: --import-hf takes one type (q4_k_m and q5_k_m are for --write-*)\n");
			return 2;
		}
		if (hf_model_convert(hf_dir, hf_out, hf_type, err0, sizeof(err0))) {
			fprintf(stderr, "perf_model: %s\n", err0);
			return 1;
		}
		printf("wrote %s (%s matrices)\n", hf_out, gguf_type_name(hf_type));
		return 0;
	}
	if (write_shape) {
		const struct model_config *c = perf_shape(shape);
		err0[0] = 0;
		/* the dense shapes as before (the same bytes); the MoE ones a layer at a time */
		if (c->n_expert > 0 ? write_shape_streamed(write_shape, c, hf_type, 11, err0, sizeof(err0))
				    : model_write_random_vocab(write_shape, c, hf_type, 11, c->n_vocab, TOK_TYPE_NORMAL, err0, sizeof(err0))) {
			fprintf(stderr, "perf_model: %s\n", err0);
			return 1;
		}
		printf("wrote %s (%s shape, %s matrices, %d tokens)\n", write_shape, shape, type_label, c->n_vocab);
		return 0;
	}
	if (write_tiny || write_100m || write_moe) {
		struct model_config cm = c100; /* the 100M model's attention and GDN with a qwen35moe MLP */
		cm.n_ff = 512, cm.n_expert = 16, cm.n_expert_used = 4, cm.n_ff_exp = 512;
		if ((write_tiny && model_write_tiny(write_tiny, err0, sizeof(err0))) ||
		    (write_100m && model_write_random(write_100m, &c100, hf_type, 7, err0, sizeof(err0))) ||
		    (write_moe && model_write_random(write_moe, &cm, hf_type, 9, err0, sizeof(err0)))) {
			fprintf(stderr, "perf_model: %s\n", err0);
			return 1;
		}
		return 0;
	}
	if (logits_out) {
		if (n_models != 1 || logits_n < 1 || logits_n > 4096) {
			fprintf(stderr, "perf_model: --logits N OUT needs one --model and 1 <= N <= 4096\n");
			return 2;
		}
		return logits_dump(models[0], logits_n, logits_out, threads, isa);
	}
	if (greedy_text) {
		if (n_models != 1) {
			fprintf(stderr, "perf_model: --greedy needs one --model\n");
			return 2;
		}
		return greedy(models[0], greedy_text, steps, threads);
	}
	char dir[] = "/tmp/sixi-perf-model-XXXXXX", tiny[128], big[128], err[512];
	const char *names[8];
	if (n_models == 0) {
		if (!mkdtemp(dir)) {
			perror("perf_model: mkdtemp");
			return 1;
		}
		snprintf(tiny, sizeof(tiny), "%s/tiny.gguf", dir);
		snprintf(big, sizeof(big), "%s/random-100m.gguf", dir);
		if (model_write_tiny(tiny, err, sizeof(err)) ||
		    model_write_random(big, &c100, GGUF_TENSOR_F32, 7, err, sizeof(err))) {
			fprintf(stderr, "perf_model: %s\n", err);
			return 1;
		}
		models[0] = tiny, names[0] = "tiny";
		models[1] = big, names[1] = "random-100m";
		n_models = 2;
	} else {
		for (int i = 0; i < n_models; i++)
			names[i] = models[i];
	}
	int rc = 0;
	if (json)
		printf("[");
	for (int i = 0; i < n_models; i++) {
		struct result r;
		char desc[256];
		if (bench(models[i], threads, isa, steps, &r, desc, sizeof(desc))) {
			rc = 1;
			continue;
		}
		if (json)
			printf("%s{\"model\":\"%s\",\"desc\":\"%s\",\"single_tok_s\":%.1f,\"batch32_tok_s\":%.1f,"
			       "\"prefill_tok_s\":%.1f}",
			       i ? "," : "", names[i], desc, r.single_tps, r.batch_tps, r.prefill_tps);
		else
			printf("%-12s %s\n  single stream %8.1f tok/s   32 sequences %8.1f tok/s   prefill(256) %8.1f tok/s\n",
			       names[i], desc, r.single_tps, r.batch_tps, r.prefill_tps);
	}
	if (json)
		printf("]\n");
	if (dir[strlen(dir) - 1] != 'X') {
		unlink(tiny);
		unlink(big);
		rmdir(dir);
	}
	return rc;
}
