/* perf_cuda_engine — decode throughput of the CUDA forward pass (cuda/cuda_model.h) on random
 * models of Qwen3.5-0.8B's and Qwen3.5-9B's shapes (BF16, Q8_0 and llama-quantize's Q4_K_M mixture of
 * Q4_K and Q6_K matrices (model/tiny.h), the real 248320-row
 * vocabulary), made in memory from a seed: aggregate tok/s at 1, 8, 32 and 128 streams (every
 * stream decodes one row per pass, logits of every row copied back into page-locked host memory,
 * as the engine gives the scheduler; pageable memory timed once below), and the one-stream decode time against its floor: the bytes a token must read (every
 * matrix once, the GDN states read and written, the KV rows) over the measured device copy
 * bandwidth, and one stream again with each of this version's changes left out in turn (no graph,
 * pageable host memory for the logits, no programmatic launch, the first version's kernels),
 * with the largest logit difference between the fused and the first version's kernels.
 * perf_cuda_engine 27b [q4_k_m|q8_0|bf16]: the release notes' class of model (shapes.h, 48 of
 * 64 layers GDN): context memory of 36 sequences with the log against a snapshot ring of the same
 * depth, and 32 streams' decode with speculation (verify passes, rollback by log) at fixed
 * acceptance rates.
 * The scheduler's host work is not in these figures (see the server benchmarks).
 * Exits 77 without a GPU. Usage: perf_cuda_engine [0.8b|9b|all [STREAMS]] (default all; STREAMS: only
 * that many streams, 0: all); perf_cuda_engine 35b-a3b|moe-small [STREAMS [q8_0|bf16|all]] (the
 * qwen35moe shapes of shapes.h, not in "all": Qwen3.5-35B-A3B's takes ~37 GB as Q8_0, ~69 GB as
 * BF16, host and device; the floor counts the 8 experts a token reads); perf_cuda_engine masks [0.8b|9b|all] (the fused set's parts one at a time);
 * perf_cuda_engine profile 0.8b|9b bf16|q8_0|q4_k_m STREAMS MASK COLS PDL (one pass for ncu);
 * perf_cuda_engine tc [0.8b|9b|all] [bf16|q8_0|q4_k_m|all] (fp32 against tensor-core products, 1..128
 * streams);
 * perf_cuda_engine gguf FILE [STREAMS [STEPS]] (a GGUF through the engine, for
 * tests/perf/cuda_vs_llama.sh). */
#include "core/clock.h"
#include "cuda/cuda_model.h"
#include "cuda/engine_cuda.h"
#include "gguf/gguf.h"
#include "server/engine.h"
#include "shapes.h"
#include "model/kernels.h"
#include "model/model.h"
#include "model/quant.h"
#include "model/tiny.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 1024
#define PROMPT 16
#define STEPS 24

struct mem_model {
	struct model_tensor t[MAX_TENSORS];
	char names[MAX_TENSORS][64];
	int n;
	size_t matrix_bytes; /* what a pass reads of the matrices */
};

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float urand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* A tensor of ne0 x ne1 x ne2 of `type`: `proto` random rows repeated down it (the values do not
 * change the time; a fresh draw per element would only make start-up slow). A router takes a
 * fresh row per expert, so that the rows choose different experts. */
static int add3(struct mem_model *mm, const char *name, int ne0, int ne1, int ne2, int proto, uint32_t type,
		float centre, float spread)
{
	if (mm->n == MAX_TENSORS)
		return -ENOSPC;
	ne1 *= ne2; /* rows */
	struct model_tensor *t = &mm->t[mm->n];
	snprintf(mm->names[mm->n], sizeof mm->names[0], "%s", name);
	size_t row = (size_t)gguf_type_row_bytes(type, (uint64_t)ne0);
	uint8_t *d = malloc(row * ne1);
	float *x = malloc(sizeof(float) * (size_t)ne0);
	if (!d || !x) {
		free(d);
		free(x);
		return -ENOMEM;
	}
	proto = ne1 < proto ? ne1 : proto;
	for (int r = 0; r < proto; r++) {
		uint8_t *o = d + row * r;
		for (int i = 0; i < ne0; i++)
			x[i] = centre + spread * urand();
		if (type == GGUF_TENSOR_Q8_0) {
			kern_quantize_q8_0(x, o, ne0);
		} else if (quant_type_is_block(type)) {
			quant_row_quantize(type, x, o, ne0);
		} else if (type == GGUF_TENSOR_F32) {
			memcpy(o, x, row);
		} else {
			for (int i = 0; i < ne0; i++) {
				uint16_t h = kern_f32_to_bf16(x[i]);
				memcpy(o + 2 * i, &h, 2);
			}
		}
	}
	for (int r = proto; r < ne1; r++)
		memcpy(d + row * r, d + row * (r % proto), row);
	free(x);
	*t = (struct model_tensor){ .name = mm->names[mm->n], .n_dims = ne2 > 1 ? 3 : 2,
				    .ne = { (uint64_t)ne0, (uint64_t)(ne1 / ne2), (uint64_t)ne2, 1 }, .type = type, .data = d,
				    .n_bytes = row * ne1 };
	mm->n++;
	return 0;
}

static int add(struct mem_model *mm, const char *name, int ne0, int ne1, uint32_t type, float centre, float spread)
{
	return add3(mm, name, ne0, ne1, 1, 64, type, centre, spread);
}

static const struct model_tensor *find(void *ctx, const char *name)
{
	struct mem_model *mm = ctx;
	for (int i = 0; i < mm->n; i++)
		if (strcmp(mm->t[i].name, name) == 0)
			return &mm->t[i];
	return NULL;
}

/* A matrix's type: type itself, or its type in a MODEL_MIX_* mixture (model/tiny.h). */
static uint32_t mat_type(uint32_t type, const struct model_config *c, const char *name, int ne0)
{
	return type == MODEL_MIX_Q4_K_M || type == MODEL_MIX_Q5_K_M ? model_mix_type(type, c, name, ne0) : type;
}

static int build(struct mem_model *mm, const struct model_config *c, uint32_t type)
{
	int E = c->n_embd, d = c->ssm_head_dim, Hk = c->ssm_n_k_heads, Hv = c->ssm_n_v_heads, hd = c->head_dim;
	int cd = 2 * Hk * d + Hv * d, rc = 0;
	char n[96];
	float fe = 1.0f / sqrtf((float)E);
	mm->n = 0;
	mm->matrix_bytes = 0;
#define MAT(nm, a, b, s) (snprintf(n, sizeof n, "blk.%d.%s", il, nm), rc = rc ? rc : add(mm, n, a, b, mat_type(type, c, n, a), 0, s), \
			  mm->matrix_bytes += rc ? 0 : mm->t[mm->n - 1].n_bytes)
#define VEC(nm, a, b, cen, s) (snprintf(n, sizeof n, "blk.%d.%s", il, nm), rc = rc ? rc : add(mm, n, a, b, GGUF_TENSOR_F32, cen, s))
	/* qwen35moe: a one-row pass reads n_expert_used of the n_expert experts of a layer */
#define EXPS(nm, a, b) (snprintf(n, sizeof n, "blk.%d.%s", il, nm), \
			rc = rc ? rc : add3(mm, n, a, b, c->n_expert, 64, type, 0, 1.0f / sqrtf((float)(a))), \
			mm->matrix_bytes += rc ? 0 : mm->t[mm->n - 1].n_bytes / c->n_expert * c->n_expert_used)
	int moe = c->n_expert > 0;
	for (int il = 0; il < c->n_layer && !rc; il++) {
		VEC("attn_norm.weight", E, 1, 1, 0.1f);
		VEC("post_attention_norm.weight", E, 1, 1, 0.1f);
		MAT(moe ? "ffn_gate_shexp.weight" : "ffn_gate.weight", E, c->n_ff, fe);
		MAT(moe ? "ffn_up_shexp.weight" : "ffn_up.weight", E, c->n_ff, fe);
		MAT(moe ? "ffn_down_shexp.weight" : "ffn_down.weight", c->n_ff, E, 1.0f / sqrtf((float)c->n_ff));
		if (moe) {
			snprintf(n, sizeof n, "blk.%d.ffn_gate_inp.weight", il);
			rc = rc ? rc : add3(mm, n, E, c->n_expert, 1, c->n_expert, type, 0, 2 * fe);
			mm->matrix_bytes += rc ? 0 : mm->t[mm->n - 1].n_bytes;
			VEC("ffn_gate_inp_shexp.weight", E, 1, 0, fe);
			EXPS("ffn_gate_exps.weight", E, c->n_ff_exp);
			EXPS("ffn_up_exps.weight", E, c->n_ff_exp);
			EXPS("ffn_down_exps.weight", c->n_ff_exp, E);
		}
		if ((il + 1) % c->full_attn_interval == 0) {
			MAT("attn_q.weight", E, c->n_head * hd * 2, fe);
			MAT("attn_k.weight", E, c->n_head_kv * hd, fe);
			MAT("attn_v.weight", E, c->n_head_kv * hd, fe);
			MAT("attn_output.weight", c->n_head * hd, E, 1.0f / sqrtf((float)(c->n_head * hd)));
			VEC("attn_q_norm.weight", hd, 1, 1, 0.1f);
			VEC("attn_k_norm.weight", hd, 1, 1, 0.1f);
		} else {
			MAT("attn_qkv.weight", E, cd, fe);
			MAT("attn_gate.weight", E, Hv * d, fe);
			MAT("ssm_beta.weight", E, Hv, fe);
			MAT("ssm_alpha.weight", E, Hv, fe);
			MAT("ssm_out.weight", Hv * d, E, 1.0f / sqrtf((float)(Hv * d)));
			VEC("ssm_conv1d.weight", c->ssm_conv_kernel, cd, 0, 0.5f);
			VEC("ssm_dt.bias", Hv, 1, -3, 0.5f);
			VEC("ssm_a", Hv, 1, -4, 2);
			VEC("ssm_norm.weight", d, 1, 1, 0.1f);
		}
	}
#undef MAT
#undef VEC
#undef EXPS
	if (!rc)
		rc = add(mm, "token_embd.weight", E, c->n_vocab, mat_type(type, c, "output.weight", E), 0, 1); /* tied */
	if (!rc)
		mm->matrix_bytes += mm->t[mm->n - 1].n_bytes; /* tied: read once a pass as the output matrix */
	if (!rc)
		rc = add(mm, "output_norm.weight", E, 1, GGUF_TENSOR_F32, 1, 0.1f);
	return rc;
}

static void release(struct mem_model *mm)
{
	for (int i = 0; i < mm->n; i++)
		free((void *)mm->t[i].data);
	mm->n = 0;
}

static int only_streams; /* argv[2]: run this stream count alone (e.g. under a profiler), 0: all */

/* ms per pass of S streams (slots 0..S-1, already prefilled) decoding one row each, after two
 * warm-up passes; every row's logits copied to lg. 0 on a failed pass (*rc set). */
static double time_decode(struct cuda_model *m, int S, int seed, int32_t *tok, int32_t *slot, uint8_t *want, float *lg,
			  int n_vocab, int *rc)
{
	for (int s = 0; s < S; s++)
		slot[s] = s, want[s] = 1;
	struct model_batch d = { .n_rows = S, .tokens = tok, .slots = slot, .want_logits = want };
	int64_t t0 = 0;
	for (int step = 0; step < STEPS + 2 && !*rc; step++) {
		if (step == 2)
			t0 = clock_now_ns(); /* two warm-up passes */
		for (int s = 0; s < S; s++)
			tok[s] = (int32_t)((step * seed + s * 17) % n_vocab);
		*rc = cuda_model_forward(m, &d, NULL, lg);
	}
	return *rc ? 0 : (double)(clock_now_ns() - t0) / 1e6 / STEPS;
}

/* Slots 0..S-1 reset and fed a 16-token prompt each in one pass. */
static int prefill(struct cuda_model *m, int S, int32_t *tok, int32_t *slot, uint8_t *want, float *lg, int n_vocab)
{
	int n = 0;
	for (int s = 0; s < S; s++) {
		cuda_model_slot_reset(m, s);
		for (int i = 0; i < PROMPT; i++, n++) {
			tok[n] = (int32_t)((s * 7919 + i * 104729) % n_vocab);
			slot[n] = s;
			want[n] = i == PROMPT - 1;
		}
	}
	struct model_batch b = { .n_rows = n, .tokens = tok, .slots = slot, .want_logits = want };
	return cuda_model_forward(m, &b, NULL, lg);
}

/* One stream's prompt and 8 greedy-free decode steps (fixed tokens); the last logits in out. */
static int decode_fixed(struct cuda_model *m, int32_t *tok, int32_t *slot, uint8_t *want, float *lg, int n_vocab,
			float *out)
{
	int rc = prefill(m, 1, tok, slot, want, lg, n_vocab);
	for (int step = 0; step < 8 && !rc; step++) {
		tok[0] = (int32_t)((step * 7 + 3) % n_vocab), slot[0] = 0, want[0] = 1;
		struct model_batch d = { .n_rows = 1, .tokens = tok, .slots = slot, .want_logits = want };
		rc = cuda_model_forward(m, &d, NULL, out);
	}
	return rc;
}

/* A random model of c's shape in type, uploaded to GPU 0 with slots x ctx of state; NULL
 * after saying why on stderr. The host copy is released either way; *matrix_bytes (may be
 * NULL) gets what a pass reads of the matrices. */
static struct cuda_model *open_engine(const char *label, const struct model_config *c, uint32_t type, int slots,
				      int ctx, int rb_rows, size_t *matrix_bytes)
{
	static struct mem_model mm;
	char err[1024];
	if (build(&mm, c, type)) {
		fprintf(stderr, "perf_cuda_engine: out of host memory for %s\n", label);
		release(&mm);
		return NULL;
	}
	struct cuda_model *m = cuda_model_create(0, c, find, &mm, label, slots, ctx, rb_rows, err, sizeof err);
	if (matrix_bytes)
		*matrix_bytes = mm.matrix_bytes;
	release(&mm);
	if (!m)
		fprintf(stderr, "perf_cuda_engine: %s: %s\n", label, err);
	return m;
}

static int run(const char *label, const struct model_config *c, uint32_t type, double bw)
{
	enum { SLOTS = 128, CTX = 256 };
	size_t matrix_bytes = 0;
	struct cuda_model *m = open_engine(label, c, type, SLOTS, CTX, 0, &matrix_bytes);
	if (!m)
		return 1;
	struct model_state_memory sm;
	size_t wbytes = 0;
	cuda_model_memory(m, &sm, &wbytes);
	static const int streams[] = { 1, 8, 32, 128 };
	size_t lg_bytes = sizeof(float) * (size_t)SLOTS * c->n_vocab;
	int32_t *tok = malloc(sizeof(int32_t) * SLOTS * PROMPT), *slot = malloc(sizeof(int32_t) * SLOTS * PROMPT);
	uint8_t *want = malloc(SLOTS * PROMPT);
	/* the logits land in page-locked memory, as a server that asks for it gets them */
	float *lg = cuda_host_alloc(lg_bytes), *lp = malloc(lg_bytes), *ref = malloc(sizeof(float) * c->n_vocab);
	int rc = tok && slot && want && lg && lp && ref ? 0 : 1;
	cuda_model_set_fused(m, 1); /* the tables: the fused kernels; the first version's (the engine's default) below */
	int pdl = cuda_model_set_pdl(m, 1), small = cuda_model_small_rows(m);
	double one_ms = 0;
	printf("(fused kernels, programmatic dependent launch %s, warp-per-output product up to %d rows, logits into "
	       "page-locked memory)\n\n| %s | streams | ms/pass | aggregate tok/s |\n|---|---:|---:|---:|\n",
	       pdl ? "on" : "not available", small, label);
	for (size_t k = 0; !rc && k < sizeof streams / sizeof streams[0]; k++) {
		int S = streams[k];
		if (only_streams && S != only_streams)
			continue;
		if ((rc = prefill(m, S, tok, slot, want, lg, c->n_vocab)))
			break;
		double ms = time_decode(m, S, 31, tok, slot, want, lg, c->n_vocab, &rc);
		if (rc)
			break;
		if (S == 1)
			one_ms = ms;
		printf("| %s | %d | %.3f | %.0f |\n", label, S, ms, S * 1000.0 / ms);
	}
	int kq = type == MODEL_MIX_Q4_K_M || type == MODEL_MIX_Q5_K_M; /* K-quants: the warp-per-output kernel either way */
	if (!rc && !kq && (!only_streams || only_streams == 32)) { /* 32 streams through the other matrix kernel */
		int alt = small >= 32 ? 16 : 32;
		cuda_model_set_small_rows(m, alt);
		rc = prefill(m, 32, tok, slot, want, lg, c->n_vocab);
		double ms = rc ? 0 : time_decode(m, 32, 37, tok, slot, want, lg, c->n_vocab, &rc);
		cuda_model_set_small_rows(m, 0);
		if (!rc)
			printf("| %s | 32, %s kernel | %.3f | %.0f |\n", label, alt == 16 ? "tiled" : "warp-per-output", ms,
			       32 * 1000.0 / ms);
	}
	/* one stream again: no graph; pageable logits; without PDL; the first version's kernels */
	double plain_ms = 0, pageable_ms = 0, nopdl_ms = 0, first_ms = 0, agree = -1;
	if (!rc) { /* each from the same prompt, so that attention reads as many positions */
		cuda_model_set_graphs(m, 0);
		if (!(rc = prefill(m, 1, tok, slot, want, lg, c->n_vocab)))
			plain_ms = time_decode(m, 1, 31, tok, slot, want, lg, c->n_vocab, &rc);
		cuda_model_set_graphs(m, 1);
		if (!rc && !(rc = prefill(m, 1, tok, slot, want, lg, c->n_vocab)))
			pageable_ms = time_decode(m, 1, 31, tok, slot, want, lp, c->n_vocab, &rc);
		cuda_model_set_pdl(m, 0);
		if (!rc && !(rc = prefill(m, 1, tok, slot, want, lg, c->n_vocab)))
			nopdl_ms = time_decode(m, 1, 31, tok, slot, want, lg, c->n_vocab, &rc);
		cuda_model_set_fused(m, 0);
		if (!rc && !(rc = prefill(m, 1, tok, slot, want, lg, c->n_vocab)))
			first_ms = time_decode(m, 1, 31, tok, slot, want, lg, c->n_vocab, &rc);
		/* the same tokens through both kernel sets: largest difference of the last logits */
		if (!rc)
			rc = decode_fixed(m, tok, slot, want, lg, c->n_vocab, ref);
		cuda_model_set_fused(m, 1);
		cuda_model_set_pdl(m, 1);
		if (!rc)
			rc = decode_fixed(m, tok, slot, want, lg, c->n_vocab, lp);
		if (!rc) {
			double mx = 0, d = 0;
			for (int i = 0; i < c->n_vocab; i++) {
				mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
				double e = fabs((double)lp[i] - ref[i]);
				d = e > d || isnan(e) ? e : d;
			}
			agree = mx > 0 ? d / mx : d;
		}
	}
	if (rc) {
		fprintf(stderr, "perf_cuda_engine: %s: pass failed (%d): %s\n", label, rc, cuda_model_error(m));
	} else {
		/* one stream at position ~PROMPT+STEPS: the matrices, the GDN states read and written, the KV rows read */
		double kv = (double)sm.kv / SLOTS / CTX * (PROMPT + STEPS);
		double bytes = (double)matrix_bytes + 2.0 * (double)sm.gdn_state / SLOTS + kv;
		double floor_ms = bytes / bw * 1e3; /* bw counts a copy's bytes read + written: what DRAM moves */
		printf("\n%s one-stream decode: %.3f ms/token; floor %.3f ms (%.1f MB read at %.2f TB/s) = %.0f %% of the floor's "
		       "speed; weights on the GPU %.2f GB\n", label, one_ms, floor_ms, bytes / 1e6, bw / 1e12,
		       100.0 * floor_ms / one_ms, (double)wbytes / 1e9);
		printf("  the same, every kernel launched (no graph) %.3f ms; logits into pageable memory %.3f ms; without "
		       "programmatic launch %.3f ms; the first version's kernels (no fusion, no PDL) %.3f ms = %.0f %% of the "
		       "floor\n", plain_ms, pageable_ms, nopdl_ms, first_ms, 100.0 * floor_ms / first_ms);
		printf("  fused vs first version's kernels, same 24 tokens: largest logit difference %.3g of the largest "
		       "logit\n\n", agree);
	}
	free(tok);
	free(slot);
	free(want);
	cuda_host_free(lg);
	free(lp);
	free(ref);
	cuda_model_destroy(m);
	return rc ? 1 : 0;
}

/* ---- the release notes' shape (mode "27b") ---- */

/* S streams' verify passes of 1 + k rows each (every row kept in the log, logits of every row
 * to the host); then each stream keeps its first row and its draft rows up to the first
 * rejection, drawn with acceptance a per draft (a fixed seed), and rolls back the rest, as the
 * server's speculation does. Tokens a pass: the kept rows (the last one's logits give the next
 * token). *tok_s gets the aggregate tokens per second, *ms the time a pass. */
static int spec_run(struct cuda_model *m, int S, int k, double a, int passes, int n_vocab, int32_t *tok, int32_t *slot,
		    uint8_t *want, uint8_t *keep, float *lg, double *tok_s, double *ms)
{
	int W = 1 + k, rc = prefill(m, S, tok, slot, want, lg, n_vocab);
	uint64_t r = 0x9E3779B97F4A7C15ull ^ (uint64_t)(k * 131 + (int)(a * 1000));
	long tokens = 0;
	int64_t t0 = 0;
	for (int p = 0; p < passes + 2 && !rc; p++) {
		if (p == 2)
			t0 = clock_now_ns(), tokens = 0;
		for (int s = 0; s < S; s++)
			for (int i = 0; i < W; i++) {
				int n = s * W + i;
				tok[n] = (int32_t)((p * 7919 + s * 31 + i * 17) % n_vocab), slot[n] = s, want[n] = 1;
				keep[n] = 1;
			}
		struct model_batch b = { .n_rows = S * W, .tokens = tok, .slots = slot, .want_logits = want };
		rc = cuda_model_forward(m, &b, keep, lg);
		for (int s = 0; s < S && !rc; s++) {
			int acc = 0;
			while (acc < k) {
				r ^= r << 13, r ^= r >> 7, r ^= r << 17;
				if ((double)(r >> 11) * (1.0 / 9007199254740992.0) >= a)
					break;
				acc++;
			}
			tokens += acc + 1;
			rc = cuda_model_slot_rollback(m, s, k - acc);
		}
	}
	double t = (double)(clock_now_ns() - t0) / 1e9;
	*ms = rc ? 0 : t * 1e3 / passes;
	*tok_s = rc ? 0 : (double)tokens / t;
	return rc;
}

static int run_27b(const char *tname, uint32_t type, double bw)
{
	const struct model_config *c = &perf_shape_27b;
	enum { SEQS = 36, CTX = 4096, K_MAX = 7, S = 32 };
	char label[64], name[256], err[256];
	snprintf(label, sizeof label, "27B-shape %s", tname);
	size_t free0 = 0, free1 = 0, total = 0, matrix_bytes = 0;
	cuda_device_query(0, name, sizeof name, &free0, &total, err, sizeof err);
	struct cuda_model *m = open_engine(label, c, type, SEQS, CTX, K_MAX + 1, &matrix_bytes);
	if (!m)
		return 1;
	cuda_device_query(0, name, sizeof name, &free1, &total, err, sizeof err);
	struct model_state_memory sm;
	size_t wbytes = 0;
	cuda_model_memory(m, &sm, &wbytes);
	double common = (double)sm.kv + (double)sm.gdn_state + (double)sm.conv;
	printf("%s: %d layers (%d GDN), weights on the GPU %.2f GB; device memory the engine took %.2f GB (weights, "
	       "states, scratch)\n\n", label, c->n_layer, c->n_layer - c->n_layer / c->full_attn_interval,
	       (double)wbytes / 1e9, (double)(free0 - free1) / 1e9);
	printf("Context memory, %d sequences of %d positions (KV in fp32), speculation of up to %d draft rows:\n\n"
	       "| part | GB |\n|---|---:|\n| KV cache | %.2f |\n| GDN states | %.2f |\n| conv windows | %.3f |\n"
	       "| rollback log (%d rows) | %.2f |\n| snapshot ring (%d states) | %.2f |\n"
	       "| **total with the log** | **%.2f** |\n| **total with a ring** | **%.2f** |\n\n",
	       SEQS, CTX, K_MAX, (double)sm.kv / 1e9, (double)sm.gdn_state / 1e9, (double)sm.conv / 1e9, K_MAX + 1,
	       (double)sm.rollback / 1e9, K_MAX + 2, (double)sm.snapshot_ring / 1e9, (common + (double)sm.rollback) / 1e9,
	       (common + (double)sm.snapshot_ring) / 1e9);
	printf("(beyond the weights the engine allocated %.2f GB; the ring's figure is its layout's size: the GPU engine "
	       "rolls back by log only)\n\n", ((double)(free0 - free1) - (double)wbytes) / 1e9);
	size_t rows = (size_t)S * (K_MAX + 1) > (size_t)SEQS * PROMPT ? (size_t)S * (K_MAX + 1) : (size_t)SEQS * PROMPT;
	int32_t *tok = malloc(sizeof(int32_t) * rows), *slot = malloc(sizeof(int32_t) * rows);
	uint8_t *want = malloc(rows), *keep = malloc(rows);
	float *lg = cuda_host_alloc(sizeof(float) * rows * (size_t)c->n_vocab);
	int rc = tok && slot && want && keep && lg ? 0 : 1;
	printf("| %s, %d streams | draft rows k | acceptance a draft | ms a pass | aggregate tok/s |\n"
	       "|---|---:|---:|---:|---:|\n", label, S);
	double one = 0, base = 0;
	if (!rc && !(rc = prefill(m, 1, tok, slot, want, lg, c->n_vocab)))
		one = time_decode(m, 1, 31, tok, slot, want, lg, c->n_vocab, &rc);
	if (!rc && !(rc = prefill(m, S, tok, slot, want, lg, c->n_vocab)))
		base = time_decode(m, S, 31, tok, slot, want, lg, c->n_vocab, &rc);
	if (!rc)
		printf("| no speculation | 0 | - | %.2f | %.0f |\n", base, S * 1000.0 / base);
	static const int ks[] = { 1, 3, 5, 7 };
	static const double as[] = { 0.5, 0.7, 0.9 };
	for (size_t i = 0; i < sizeof ks / sizeof ks[0] && !rc; i++)
		for (size_t j = 0; j < sizeof as / sizeof as[0] && !rc; j++) {
			double ts = 0, ms = 0;
			rc = spec_run(m, S, ks[i], as[j], 12, c->n_vocab, tok, slot, want, keep, lg, &ts, &ms);
			if (!rc)
				printf("| speculation | %d | %.1f | %.2f | %.0f |\n", ks[i], as[j], ms, ts);
		}
	if (rc) {
		fprintf(stderr, "perf_cuda_engine: %s: pass failed (%d): %s\n", label, rc, cuda_model_error(m));
	} else {
		double bytes = (double)matrix_bytes + 2.0 * (double)sm.gdn_state / SEQS;
		printf("\n%s one-stream decode: %.3f ms/token, %.1f tok/s; floor %.3f ms (%.2f GB read at %.2f TB/s) = %.0f %% "
		       "of the floor's speed\n", label, one, 1000.0 / one, bytes / bw * 1e3, bytes / 1e9, bw / 1e12,
		       100.0 * bytes / bw * 1e3 / one);
	}
	free(tok);
	free(slot);
	free(want);
	free(keep);
	cuda_host_free(lg);
	cuda_model_destroy(m);
	return rc ? 1 : 0;
}

/* ---- the tensor-core product against the fp32 kernels (mode "tc") ---- */

/* ms per pass at 1..128 streams with the engine's defaults, once with the products' fp32
 * kernels (tc_rows 0: warp per output, 64x64 tiles above small_rows) and once with the
 * tensor-core product at every width (tc_rows 1), so that the threshold can be read off; then
 * the last logits of 32 streams' decode step through both, largest difference relative to the
 * row's largest logit (graphs on, logits into page-locked memory). */
static int tc_compare(const char *label, const struct model_config *c, uint32_t type)
{
	enum { SLOTS = 128, CTX = 256 };
	struct cuda_model *m = open_engine(label, c, type, SLOTS, CTX, 0, NULL);
	if (!m)
		return 1;
	static const int streams[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
	size_t lg_bytes = sizeof(float) * (size_t)SLOTS * c->n_vocab;
	int32_t *tok = malloc(sizeof(int32_t) * SLOTS * PROMPT), *slot = malloc(sizeof(int32_t) * SLOTS * PROMPT);
	uint8_t *want = malloc(SLOTS * PROMPT);
	float *lg = cuda_host_alloc(lg_bytes), *ref = malloc(lg_bytes);
	int rc = tok && slot && want && lg && ref ? 0 : 1, def = cuda_model_tc_rows(m);
	/* variants: fp32 kernels; tensor cores (the engine's choice of outputs a block, then 16 and
	 * 32 forced); Q8_0 also widened to BF16 in scratch before the BF16 tensor-core product */
	static const struct { int tc, mt, dq; const char *name; } var[] = {
		{ 0, 0, 0, "fp32 kernels" }, { 1, 0, 0, "tensor cores" }, { 1, 1, 0, "tc, 16 outputs a block" },
		{ 1, 2, 0, "tc, 32 outputs a block" }, { 1, 0, 1, "tc, Q8_0 widened to BF16 first" },
	};
	int nv = type == GGUF_TENSOR_Q8_0 ? 5 : 4;
	char from[64];
	if (def < 0)
		snprintf(from, sizeof from, "2 rows (BF16) or 4 (Q8_0)");
	else
		snprintf(from, sizeof from, "%d rows", def);
	printf("(engine defaults: tensor-core product from %s, warp-per-output product up to %d rows; ms per pass, "
	       "aggregate tok/s of the first two in brackets)\n\n| %s | streams |", from, cuda_model_small_rows(m), label);
	for (int v = 0; v < nv; v++)
		printf(" %s |", var[v].name);
	printf(" speed-up (tensor cores) |\n|---|---:|");
	for (int v = 0; v <= nv; v++)
		printf("---:|");
	printf("\n");
	for (size_t k = 0; !rc && k < sizeof streams / sizeof streams[0]; k++) {
		int S = streams[k];
		double ms[5] = { 0, 0, 0, 0, 0 };
		for (int v = 0; v < nv && !rc; v++) {
			cuda_model_set_tc_rows(m, var[v].tc); /* 0: fp32 kernels, 1: tensor cores at every width */
			cuda_model_set_tc_mt(m, var[v].mt);
			if (var[v].dq && (rc = cuda_model_set_tc_dequant(m, 1)))
				break;
			if (!(rc = prefill(m, S, tok, slot, want, lg, c->n_vocab)))
				ms[v] = time_decode(m, S, 31, tok, slot, want, lg, c->n_vocab, &rc);
			if (var[v].dq)
				cuda_model_set_tc_dequant(m, 0);
		}
		cuda_model_set_tc_mt(m, 0);
		if (rc)
			break;
		printf("| %s | %d |", label, S);
		for (int v = 0; v < nv; v++)
			if (v < 2)
				printf(" %.3f (%.0f) |", ms[v], S * 1000.0 / ms[v]);
			else
				printf(" %.3f |", ms[v]);
		printf(" %.2fx |\n", ms[0] / ms[1]);
	}
	double worst = 0;
	for (int v = 0; v < 2 && !rc; v++) { /* the same 32 streams' prompts and one decode step through both */
		cuda_model_set_tc_rows(m, v);
		if ((rc = prefill(m, 32, tok, slot, want, lg, c->n_vocab)))
			break;
		for (int s = 0; s < 32; s++)
			tok[s] = (int32_t)((s * 31 + 5) % c->n_vocab), slot[s] = s, want[s] = 1;
		struct model_batch d = { .n_rows = 32, .tokens = tok, .slots = slot, .want_logits = want };
		if ((rc = cuda_model_forward(m, &d, NULL, v ? lg : ref)))
			break;
		for (int s = 0; v && s < 32; s++) {
			const float *a = ref + (size_t)s * c->n_vocab, *b = lg + (size_t)s * c->n_vocab;
			double mx = 0, dd = 0;
			for (int i = 0; i < c->n_vocab; i++) {
				mx = fabs(a[i]) > mx ? fabs(a[i]) : mx;
				double e = fabs((double)b[i] - a[i]);
				dd = e > dd || isnan(e) ? e : dd;
			}
			dd = mx > 0 ? dd / mx : dd;
			worst = dd > worst ? dd : worst;
		}
	}
	if (rc)
		fprintf(stderr, "perf_cuda_engine: %s: pass failed (%d): %s\n", label, rc, cuda_model_error(m));
	else
		printf("\n%s: tensor cores vs fp32 kernels, 32 streams' 16-token prompts and one decode step: largest logit "
		       "difference %.3g of the row's largest logit\n\n", label, worst);
	free(tok);
	free(slot);
	free(want);
	cuda_host_free(lg);
	free(ref);
	cuda_model_destroy(m);
	return rc ? 1 : 0;
}

/* ---- the fused set's parts one at a time (mode "masks") ---- */

/* ms per pass at 1 and 8 streams for every CUDA_FUSE_* mask, with and without programmatic
 * launch, and at one stream with the GDN kernel's one-column groups too: which part of the
 * fused set wins or loses, measured apart (graphs on, logits into page-locked memory). */
static int masks(const char *label, const struct model_config *c, uint32_t type)
{
	enum { SLOTS = 8, CTX = 256 };
	struct cuda_model *m = open_engine(label, c, type, SLOTS, CTX, 0, NULL);
	if (!m)
		return 1;
	int32_t tok[SLOTS * PROMPT], slot[SLOTS * PROMPT];
	uint8_t want[SLOTS * PROMPT];
	float *lg = cuda_host_alloc(sizeof(float) * (size_t)SLOTS * c->n_vocab);
	int rc = lg ? 0 : 1;
	printf("masks: %d GDN kernels, %d SwiGLU in the product, %d add_norm in the product's last block, %d weight loads "
	       "in flight\n\n| %s | streams | PDL | GDN cols | mask | ms/pass |\n|---|---:|---:|---:|---:|---:|\n",
	       CUDA_FUSE_GDN, CUDA_FUSE_SWIGLU, CUDA_FUSE_NORM, CUDA_FUSE_LOADS, label);
	static const int streams[] = { 1, 8 };
	for (int k = 0; !rc && k < 2; k++) {
		int S = streams[k];
		for (int pdl = 0; !rc && pdl < 2; pdl++) {
			if (cuda_model_set_pdl(m, pdl) != pdl)
				continue;
			for (int cols = 0; !rc && cols < (S == 1 ? 2 : 1); cols++) {
				cuda_model_set_gdn_cols(m, cols);
				for (int mask = 0; !rc && mask <= CUDA_FUSE_ALL; mask++) {
					cuda_model_set_fuse_mask(m, mask);
					if ((rc = prefill(m, S, tok, slot, want, lg, c->n_vocab)))
						break;
					double ms = time_decode(m, S, 31, tok, slot, want, lg, c->n_vocab, &rc);
					if (!rc)
						printf("| %s | %d | %d | %d | %d | %.3f |\n", label, S, pdl, cols, mask, ms);
				}
			}
		}
	}
	if (rc)
		fprintf(stderr, "perf_cuda_engine: %s: pass failed (%d): %s\n", label, rc, cuda_model_error(m));
	printf("\n");
	cuda_host_free(lg);
	cuda_model_destroy(m);
	return rc ? 1 : 0;
}

/* ---- one pass for a profiler (mode "profile") ---- */

/* S streams prefilled, three decode passes, then one more between cudaProfilerStart and Stop,
 * every kernel launched (no graph): what `ncu --profile-from-start off` times kernel by kernel. */
static int profile(const struct model_config *c, uint32_t type, int S, int mask, int cols, int pdl)
{
	static struct mem_model mm;
	char err[1024];
	enum { SLOTS = 32, CTX = 256 };
	if (S < 1 || S > SLOTS || build(&mm, c, type)) {
		fprintf(stderr, "perf_cuda_engine: profile: 1..%d streams, or out of host memory\n", SLOTS);
		release(&mm);
		return 1;
	}
	struct cuda_model *m = cuda_model_create(0, c, find, &mm, "profile", SLOTS, CTX, 0, err, sizeof err);
	release(&mm);
	if (!m) {
		fprintf(stderr, "perf_cuda_engine: %s\n", err);
		return 1;
	}
	int32_t tok[SLOTS * PROMPT], slot[SLOTS * PROMPT];
	uint8_t want[SLOTS * PROMPT];
	float *lg = cuda_host_alloc(sizeof(float) * (size_t)SLOTS * c->n_vocab);
	cuda_model_set_fuse_mask(m, mask);
	cuda_model_set_gdn_cols(m, cols);
	cuda_model_set_pdl(m, pdl);
	cuda_model_set_graphs(m, 0);
	int rc = lg ? prefill(m, S, tok, slot, want, lg, c->n_vocab) : 1;
	struct model_batch d = { .n_rows = S, .tokens = tok, .slots = slot, .want_logits = want };
	for (int step = 0; step < 4 && !rc; step++) {
		for (int s = 0; s < S; s++)
			tok[s] = (int32_t)((step * 31 + s * 17) % c->n_vocab), slot[s] = s, want[s] = 1;
		if (step == 3)
			cuda_model_profile(1);
		rc = cuda_model_forward(m, &d, NULL, lg);
		if (step == 3)
			cuda_model_profile(0);
	}
	if (rc)
		fprintf(stderr, "perf_cuda_engine: profile: pass failed (%d): %s\n", rc, cuda_model_error(m));
	cuda_host_free(lg);
	cuda_model_destroy(m);
	return rc ? 1 : 0;
}

/* ---- a GGUF file through the engine (mode "gguf"), as the server runs it ---- */

/* Aggregate decode tok/s of FILE at each stream count: every stream a PROMPT-token prompt in
 * one pass, then `steps` passes of one row a stream after two warm-up passes, through the
 * engine interface the scheduler calls (logits of every row into the engine's page-locked
 * memory, what the scheduler's buffers are; PERF_PAGEABLE=1: the heap). One line a stream count: "gguf streams=S ms_per_pass=.. tok_s=..". */
static int gguf_bench(const char *path, const char *list, int steps)
{
	int streams[16], n = 0, max_s = 0;
	for (const char *p = list; *p && n < 16;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 1 || v > 512) {
			fprintf(stderr, "perf_cuda_engine: gguf: stream counts are 1..512, comma-separated (got '%s')\n", list);
			return 2;
		}
		streams[n++] = (int)v;
		max_s = (int)v > max_s ? (int)v : max_s;
		p = *end == ',' ? end + 1 : end;
	}
	char err[1024];
	struct engine *e = cuda_engine_open(path, 0, max_s, PROMPT + steps + 8, 0, err, sizeof err);
	if (!e) {
		fprintf(stderr, "perf_cuda_engine: %s\n", err);
		return 1;
	}
	struct engine_row *rows = malloc(sizeof *rows * (size_t)max_s * PROMPT);
	/* the logits buffer as the server's scheduler gets it: the engine's page-locked memory
	 * (PERF_PAGEABLE=1: the heap, as before the engine had logits_alloc, for the comparison) */
	size_t n_lg = (size_t)max_s * (size_t)e->n_logits;
	const char *pg = getenv("PERF_PAGEABLE");
	int pinned = e->ops->logits_alloc && !(pg && strcmp(pg, "1") == 0);
	float *lg = pinned ? e->ops->logits_alloc(e, n_lg) : malloc(sizeof(float) * n_lg);
	int *slots = malloc(sizeof(int) * (size_t)max_s);
	int rc = rows && lg && slots ? 0 : 1;
	for (int k = 0; k < n && !rc; k++) {
		int S = streams[k], r = 0;
		for (int s = 0; s < S && !rc; s++)
			if ((slots[s] = e->ops->slot_alloc(e)) < 0)
				rc = 1;
		for (int s = 0; s < S && !rc; s++)
			for (int i = 0; i < PROMPT; i++)
				rows[r++] = (struct engine_row){ slots[s], (int32_t)((s * 7919 + i * 104729) % e->n_sample), i,
								 i == PROMPT - 1 };
		if (!rc)
			rc = e->ops->forward(e, rows, (size_t)r, lg);
		int64_t t0 = 0;
		for (int step = 0; step < steps + 2 && !rc; step++) {
			if (step == 2)
				t0 = clock_now_ns();
			for (int s = 0; s < S; s++)
				rows[s] = (struct engine_row){ slots[s], (int32_t)((step * 31 + s * 17) % e->n_sample),
							       PROMPT + step, true };
			rc = e->ops->forward(e, rows, (size_t)S, lg);
		}
		if (!rc) {
			double ms = (double)(clock_now_ns() - t0) / 1e6 / steps;
			printf("gguf streams=%d ms_per_pass=%.3f tok_s=%.1f\n", S, ms, S * 1000.0 / ms);
			fflush(stdout);
		}
		for (int s = 0; s < S; s++)
			if (slots[s] >= 0)
				e->ops->slot_free(e, slots[s]);
	}
	if (rc)
		fprintf(stderr, "perf_cuda_engine: gguf: %s: a pass failed (%d)\n", path, rc);
	free(rows);
	if (pinned)
		e->ops->logits_free(e, lg);
	else
		free(lg);
	free(slots);
	engine_destroy(e);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	char name[256], err[512];
	size_t fr = 0, to = 0;
	if (cuda_device_query(0, name, sizeof name, &fr, &to, err, sizeof err) != 0) {
		printf("skipped: %s\n", err);
		return 77;
	}
	double bw = 0;
	if (cuda_device_copy_bandwidth(0, &bw) != 0) {
		fprintf(stderr, "perf_cuda_engine: cannot measure the copy bandwidth\n");
		return 1;
	}
	const char *which = argc > 1 ? argv[1] : "all";
	if (strcmp(which, "gguf") == 0) {
		if (argc < 3) {
			fprintf(stderr, "usage: perf_cuda_engine gguf FILE [STREAMS (e.g. 1,8,32)] [STEPS]\n");
			return 2;
		}
		return gguf_bench(argv[2], argc > 3 ? argv[3] : "1,8,32", argc > 4 ? atoi(argv[4]) : 64);
	}
	if (strcmp(which, "profile") == 0) { /* profile 0.8b|9b bf16|q8_0 STREAMS MASK COLS PDL */
		if (argc < 8) {
			fprintf(stderr, "usage: perf_cuda_engine profile 0.8b|9b bf16|q8_0|q4_k_m STREAMS MASK COLS PDL\n");
			return 2;
		}
		return profile(strcmp(argv[2], "9b") == 0 ? &perf_shape_9b : &perf_shape_08b,
			       strcmp(argv[3], "q8_0") == 0	? GGUF_TENSOR_Q8_0
			       : strcmp(argv[3], "q4_k_m") == 0 ? MODEL_MIX_Q4_K_M
								: GGUF_TENSOR_BF16,
			       atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));
	}
	if (strcmp(which, "tc") == 0) { /* tc [0.8b|9b|all] [bf16|q8_0|q4_k_m|all] */
		const char *w = argc > 2 ? argv[2] : "all", *t = argc > 3 ? argv[3] : "all";
		int rc = 0, all = strcmp(t, "all") == 0, bf = all || strcmp(t, "bf16") == 0,
		    q8 = all || strcmp(t, "q8_0") == 0, k4 = all || strcmp(t, "q4_k_m") == 0;
		printf("device: %s\n\n", name);
		if (strcmp(w, "9b") != 0) {
			rc |= bf ? tc_compare("0.8B-shape BF16", &perf_shape_08b, GGUF_TENSOR_BF16) : 0;
			rc |= q8 ? tc_compare("0.8B-shape Q8_0", &perf_shape_08b, GGUF_TENSOR_Q8_0) : 0;
			rc |= k4 ? tc_compare("0.8B-shape Q4_K_M", &perf_shape_08b, MODEL_MIX_Q4_K_M) : 0;
		}
		if (strcmp(w, "0.8b") != 0) {
			rc |= bf ? tc_compare("9B-shape BF16", &perf_shape_9b, GGUF_TENSOR_BF16) : 0;
			rc |= q8 ? tc_compare("9B-shape Q8_0", &perf_shape_9b, GGUF_TENSOR_Q8_0) : 0;
			rc |= k4 ? tc_compare("9B-shape Q4_K_M", &perf_shape_9b, MODEL_MIX_Q4_K_M) : 0;
		}
		return rc;
	}
	if (strcmp(which, "27b") == 0) { /* 27b [q4_k_m|q8_0|bf16] */
		const char *t = argc > 2 ? argv[2] : "q4_k_m";
		printf("device: %s, %.1f GiB; device-to-device copy %.2f TB/s (read + write counted)\n\n", name,
		       (double)to / 1073741824.0, bw / 1e12);
		return run_27b(t, strcmp(t, "q8_0") == 0 ? GGUF_TENSOR_Q8_0 : strcmp(t, "bf16") == 0 ? GGUF_TENSOR_BF16
												 : MODEL_MIX_Q4_K_M, bw);
	}
	if (strcmp(which, "masks") == 0) { /* masks [0.8b|9b|all] */
		const char *w = argc > 2 ? argv[2] : "0.8b";
		int rc = 0;
		if (strcmp(w, "9b") != 0) {
			rc |= masks("0.8B-shape BF16", &perf_shape_08b, GGUF_TENSOR_BF16);
			rc |= masks("0.8B-shape Q8_0", &perf_shape_08b, GGUF_TENSOR_Q8_0);
		}
		if (strcmp(w, "0.8b") != 0) {
			rc |= masks("9B-shape BF16", &perf_shape_9b, GGUF_TENSOR_BF16);
			rc |= masks("9B-shape Q8_0", &perf_shape_9b, GGUF_TENSOR_Q8_0);
		}
		return rc;
	}
	only_streams = argc > 2 ? atoi(argv[2]) : 0;
	printf("device: %s, %.1f GiB; device-to-device copy %.2f TB/s (read + write counted)\n\n", name,
	       (double)to / 1073741824.0, bw / 1e12);
	int rc = 0;
	const struct model_config *moe = perf_shape(which);
	if (moe && moe->n_expert > 0) { /* 35b-a3b|moe-small [STREAMS [q8_0|bf16|all]]: Q8_0 first (it fits more) */
		const char *t = argc > 3 ? argv[3] : "all";
		char label[64];
		if (strcmp(t, "bf16") != 0) {
			snprintf(label, sizeof label, "%s-shape Q8_0", which);
			rc |= run(label, moe, GGUF_TENSOR_Q8_0, bw);
		}
		if (strcmp(t, "q8_0") != 0) {
			snprintf(label, sizeof label, "%s-shape BF16", which);
			rc |= run(label, moe, GGUF_TENSOR_BF16, bw);
		}
		return rc;
	}
	if (strcmp(which, "9b") != 0) {
		rc |= run("0.8B-shape BF16", &perf_shape_08b, GGUF_TENSOR_BF16, bw);
		rc |= run("0.8B-shape Q8_0", &perf_shape_08b, GGUF_TENSOR_Q8_0, bw);
		rc |= run("0.8B-shape Q4_K_M", &perf_shape_08b, MODEL_MIX_Q4_K_M, bw);
	}
	if (strcmp(which, "0.8b") != 0) {
		rc |= run("9B-shape BF16", &perf_shape_9b, GGUF_TENSOR_BF16, bw);
		rc |= run("9B-shape Q8_0", &perf_shape_9b, GGUF_TENSOR_Q8_0, bw);
		rc |= run("9B-shape Q4_K_M", &perf_shape_9b, MODEL_MIX_Q4_K_M, bw);
	}
	return rc;
}
