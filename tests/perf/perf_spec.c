/* perf_spec — rollback memory and time: the log against the snapshot ring.
 *
 *   perf_spec [--seqs N] [--steps N] [--threads N] [--model FILE.gguf]
 *
 * Part 1 (arithmetic, no model): at the 27B hybrid's GDN shape (48 GDN layers, H_k 16,
 * H_v 48, d_k = d_v = 128, conv 4, fp32) and N sequences (default 36): the live recurrent
 * state, and for draft widths 1..16 (a verify pass keeps width + 1 rows) what a snapshot ring
 * of one state per kept row needs against a log of the same rows (gdn_log.h).
 * Part 2 (CPU, measured): on a ~100M-parameter random model (or --model), 4 sequences, verify
 * passes of width + 1 rows per sequence with half the drafts rejected and rolled back, in log
 * and in snapshot mode: milliseconds per step (median of `steps`), the rollback buffers'
 * bytes, and whether both modes gave the same logits bit for bit.
 * Run by `meson test --benchmark --suite perf perf_spec`, never in the default test run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "model/gdn_log.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/tiny.h"

static const struct model_config c100 = {
	.n_embd = 768, .n_layer = 12, .n_ff = 2816, .n_head = 8, .n_head_kv = 2, .head_dim = 64,
	.n_rot = 16, .rope_theta = 1e6f, .norm_eps = 1e-6f, .ssm_conv_kernel = 4, .ssm_head_dim = 64,
	.ssm_n_k_heads = 4, .ssm_n_v_heads = 8, .full_attn_interval = 4, .n_ctx_train = 8192,
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void arithmetic(int n_seq)
{
	struct gdn_log_shape sh = { 48, 16, 48, 128, 128, 4 };
	double GiB = 1024.0 * 1024.0 * 1024.0, MiB = 1024.0 * 1024.0;
	printf("27B GDN shape: 48 layers, H_k 16, H_v 48, d_k = d_v = 128, conv 4, fp32; %d sequences\n", n_seq);
	printf("per sequence: state + conv window %.1f MiB; log row %.3f MiB (%llu floats per layer); "
	       "one snapshot %.1f MiB (%llu floats per layer)\n",
	       gdn_log_state_bytes(&sh) / MiB, gdn_log_bytes(&sh, 1) / MiB,
	       (unsigned long long)gdn_log_row_floats(&sh), gdn_log_snapshot_bytes(&sh, 1) / MiB,
	       (unsigned long long)gdn_log_state_floats(&sh));
	printf("live GDN state for %d sequences: %.2f GiB\n\n", n_seq, gdn_log_state_bytes(&sh) * n_seq / GiB);
	printf("| draft width | kept rows | snapshot ring (GiB) | log (GiB) | ratio |\n");
	printf("|---:|---:|---:|---:|---:|\n");
	for (int w = 1; w <= 16; w++) {
		int rows = w + 1;
		double ring = (double)gdn_log_snapshot_bytes(&sh, rows) * n_seq, lg = (double)gdn_log_bytes(&sh, rows) * n_seq;
		printf("| %d | %d | %.2f | %.3f | %.1fx |\n", w, rows, ring / GiB, lg / GiB, ring / lg);
	}
	printf("\n");
}

static double step_ms(struct model *m, enum model_rollback mode, int n_seq, int width, int steps, size_t *bytes,
		      float *logits_out)
{
	int rows = width + 1, N = n_seq * rows, V = model_get_config(m)->n_vocab;
	struct model_state *s = model_state_create(m, n_seq, 64 + steps * rows + 8);
	if (!s || model_state_set_rollback(s, mode, 2 * rows)) {
		model_state_destroy(s);
		return -1;
	}
	*bytes = model_state_rollback_bytes(s);
	int32_t *tok = malloc(sizeof(int32_t) * (size_t)N), *slot = malloc(sizeof(int32_t) * (size_t)N);
	int32_t *pt = malloc(sizeof(int32_t) * 64 * (size_t)n_seq), *ps = malloc(sizeof(int32_t) * 64 * (size_t)n_seq);
	float *lg = malloc(sizeof(float) * (size_t)V * N);
	double *t = malloc(sizeof(double) * (size_t)steps);
	uint64_t r = 99;
	for (int i = 0; i < 64 * n_seq; i++) {
		pt[i] = (int32_t)(i * 7919 % V);
		ps[i] = i / 64;
	}
	struct model_batch pb = { .n_rows = 64 * n_seq, .tokens = pt, .slots = ps };
	int rc = model_forward(m, s, &pb, NULL);
	for (int k = 0; !rc && k < steps; k++) {
		for (int i = 0; i < N; i++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			tok[i] = (int32_t)((r >> 33) % (uint64_t)V);
			slot[i] = i / rows;
		}
		struct model_batch b = { .n_rows = N, .tokens = tok, .slots = slot };
		int64_t t0 = clock_now_ns();
		rc = model_forward_spec(m, s, &b, lg);
		for (int q = 0; !rc && q < n_seq; q++)
			rc = model_state_slot_rollback(s, q, width / 2); /* half the drafts rejected */
		t[k] = (double)(clock_now_ns() - t0) / 1e6;
	}
	if (logits_out)
		memcpy(logits_out, lg, sizeof(float) * (size_t)V * N);
	qsort(t, (size_t)steps, sizeof(double), cmp_d);
	double med = rc ? -1 : t[steps / 2];
	free(tok), free(slot), free(pt), free(ps), free(lg), free(t);
	model_state_destroy(s);
	return med;
}

int main(int argc, char **argv)
{
	int n_seq = 36, steps = 9, threads = 0;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seqs") && i + 1 < argc)
			n_seq = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--model") && i + 1 < argc)
			path = argv[++i];
		else {
			fprintf(stderr, "usage: perf_spec [--seqs N] [--steps N] [--threads N] [--model FILE.gguf]\n");
			return 2;
		}
	}
	if (n_seq < 1 || steps < 1) {
		fprintf(stderr, "perf_spec: --seqs and --steps must be at least 1\n");
		return 2;
	}
	arithmetic(n_seq);
	char dir[] = "/tmp/sixi-perf-spec-XXXXXX", tmp[128], err[512];
	int own = 0;
	if (!path) {
		if (!mkdtemp(dir)) {
			perror("perf_spec: mkdtemp");
			return 1;
		}
		snprintf(tmp, sizeof(tmp), "%s/m100.gguf", dir);
		if (model_write_random(tmp, &c100, GGUF_TENSOR_F32, 0, err, sizeof(err))) {
			fprintf(stderr, "perf_spec: %s\n", err);
			return 1;
		}
		path = tmp;
		own = 1;
	}
	struct model *m = model_load(path, threads, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "perf_spec: %s\n", err);
		return 1;
	}
	const struct model_config *c = model_get_config(m);
	int V = c->n_vocab, seqs = 4;
	printf("CPU (%s), %s: %d layers, H_v %d, d %d; %d sequences, median of %d steps, half the drafts rolled back\n",
	       model_isa(m), own ? "~100M random model" : path, c->n_layer, c->ssm_n_v_heads, c->ssm_head_dim, seqs,
	       steps);
	printf("| draft width | log ms/step | snapshot ms/step | log buffers (MiB) | snapshot ring (MiB) | same logits |\n");
	printf("|---:|---:|---:|---:|---:|---|\n");
	int widths[] = { 1, 2, 4, 8, 16 };
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		int w = widths[i], N = seqs * (w + 1);
		float *a = malloc(sizeof(float) * (size_t)V * N), *b = malloc(sizeof(float) * (size_t)V * N);
		size_t bl = 0, bs = 0;
		double tl = step_ms(m, MODEL_ROLLBACK_LOG, seqs, w, steps, &bl, a);
		double ts = step_ms(m, MODEL_ROLLBACK_SNAPSHOT, seqs, w, steps, &bs, b);
		int same = memcmp(a, b, sizeof(float) * (size_t)V * N) == 0;
		printf("| %d | %.2f | %.2f | %.2f | %.2f | %s |\n", w, tl, ts, bl / 1048576.0, bs / 1048576.0,
		       same ? "yes" : "NO");
		free(a);
		free(b);
	}
	model_free(m);
	if (own) {
		unlink(tmp);
		rmdir(dir);
	}
	return 0;
}
