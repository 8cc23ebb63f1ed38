/* perf_model — decode throughput of the CPU forward pass.
 *
 *   perf_model [--threads N] [--steps N] [--isa auto|avx512|avx2|portable] [--model FILE.gguf]... [--json]
 *   perf_model --write-tiny PATH | --write-100m PATH | --write-moe PATH [--type T]
 *   perf_model --write-shape 0.8b|9b PATH [--type T]
 *   perf_model --model FILE.gguf --greedy TEXT [--steps N]
 *   perf_model --model FILE.gguf --logits N OUT
 *   perf_model --import-hf DIR OUT.gguf [--type T]
 * (T: f32, f16, bf16 or a block type of model/quant.h, e.g. q4_k; sixi's own quantiser; or
 * q4_k_m for the random models: Q4_K with Q6_K where llama-quantize's Q4_K_M preset puts it)
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
 * converts a Hugging Face Qwen3.5 text checkpoint to GGUF (without tokenizer keys).
 * --write-moe writes the 100M model's attention and GDN layers with a qwen35moe MLP (16
 * experts of width 512, 4 used, a shared expert of width 512).
 * --write-shape writes a random model of Qwen3.5-0.8B's or 9B's shape (shapes.h; the tiny
 * vocabulary padded to the real 248320 tokens), the GPU comparison's files (cuda_vs_llama.sh).
 * Tokens/s = rows decoded / wall time of the passes (clock_now_ns). Run by `meson test
 * --benchmark --suite perf`, never in the default test run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/clock.h"
#include "gguf/gguf.h"
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
		else if (strcmp(argv[i], "--write-shape") == 0 && i + 2 < argc &&
			 (strcmp(argv[i + 1], "0.8b") == 0 || strcmp(argv[i + 1], "9b") == 0))
			shape = argv[i + 1], write_shape = argv[i + 2], i += 2;
		else if (strcmp(argv[i], "--import-hf") == 0 && i + 2 < argc)
			hf_dir = argv[i + 1], hf_out = argv[i + 2], i += 2;
		else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
			const char *t = argv[++i];
			hf_type = strcasecmp(t, "q4_k_m") == 0 ? MODEL_MIX_Q4_K_M : GGUF_TENSOR_F32;
			for (uint32_t k = 0; k < 40; k++)
				if (strcasecmp(t, gguf_type_name(k)) == 0 &&
				    (k <= GGUF_TENSOR_F16 || k == GGUF_TENSOR_BF16 || quant_type_is_block(k)))
					hf_type = k;
		}
		else {
			fprintf(stderr, "usage: perf_model [--threads N] [--steps N] [--isa auto|avx512|avx2|portable] [--model FILE.gguf]... [--json]\n"
					"       perf_model --write-tiny PATH | --write-100m PATH | --write-moe PATH [--type T]\n"
					"       perf_model --write-shape 0.8b|9b PATH [--type T]\n"
					"       perf_model --model FILE.gguf --greedy TEXT [--steps N]\n"
					"       perf_model --model FILE.gguf --logits N OUT\n"
					"       perf_model --import-hf DIR OUT.gguf [--type T]\n"
					"  T: f32, f16, bf16, or a block type: q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k iq4_nl iq4_xs;\n"
					"     q4_k_m (random models: Q4_K with Q6_K where llama-quantize's Q4_K_M puts it)\n");
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
	if (hf_dir) {
		if (hf_model_convert(hf_dir, hf_out, hf_type, err0, sizeof(err0))) {
			fprintf(stderr, "perf_model: %s\n", err0);
			return 1;
		}
		printf("wrote %s (%s matrices)\n", hf_out, gguf_type_name(hf_type));
		return 0;
	}
	if (write_shape) {
		const struct model_config *c = strcmp(shape, "9b") == 0 ? &perf_shape_9b : &perf_shape_08b;
		if (model_write_random_vocab(write_shape, c, hf_type, 11, c->n_vocab, err0, sizeof(err0))) {
			fprintf(stderr, "perf_model: %s\n", err0);
			return 1;
		}
		printf("wrote %s (%s shape, %s matrices, %d tokens)\n", write_shape, shape,
		       hf_type == MODEL_MIX_Q4_K_M ? "Q4_K_M mix" : gguf_type_name(hf_type), c->n_vocab);
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
