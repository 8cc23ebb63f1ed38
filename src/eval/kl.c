/* kl — see kl.h. Sections: loading, scoring, storing, the command. */
#include "eval/kl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/log.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "store/store.h"

#define KL_CHUNK 64 /* rows a forward pass holds: bounds the logits to 2 x 64 x n_vocab floats */

/* ======== loading ======== */

struct side {
	const char *path;
	struct model *m;
	struct tokenizer *tok;
	struct model_state *st;
	float *logits; /* [KL_CHUNK][n_vocab] */
};

static void side_finish(struct side *s)
{
	free(s->logits);
	model_state_destroy(s->st);
	tok_destroy(s->tok);
	model_free(s->m);
}

static int side_load(struct side *s, const char *path, int threads, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->path = path;
	struct gguf *g = gguf_open(path, err, errlen);
	if (!g)
		return -EINVAL;
	s->tok = tok_load_gguf(g, err, errlen);
	if (!s->tok) {
		gguf_close(g);
		return -EINVAL;
	}
	s->m = model_load_gguf(g, path, threads, err, errlen); /* owns g from here, failure included */
	return s->m ? 0 : -EINVAL;
}

static char *read_text(const char *path, size_t *n, char *err, size_t errlen)
{
	char *text = buf_load_file(path, n);
	if (!text && errno == ENOMEM)
		err_set(err, errlen, "%s: out of memory reading the text", path);
	else if (!text && errno == EIO)
		err_set(err, errlen, "%s: error reading the text", path);
	else if (!text)
		err_set(err, errlen, "%s: cannot read the text: %s", path, strerror(errno));
	return text;
}

/* ======== scoring ======== */

/* Log-softmax of n floats into out (double). */
static void log_softmax(const float *x, double *out, int n)
{
	double mx = x[0], s = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > mx)
			mx = x[i];
	for (int i = 0; i < n; i++)
		s += exp((double)x[i] - mx);
	double lse = mx + log(s);
	for (int i = 0; i < n; i++)
		out[i] = (double)x[i] - lse;
}

static int argmax(const float *x, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* Runs ids[0..L) through both models from a fresh slot; point i (i < L-1) scores ids[i+1]. */
static int score_window(struct side *ref, struct side *cand, const int32_t *ids, int L, int V, double *lr,
			double *lc, struct kl_point *pt)
{
	int rc = model_state_slot_reset(ref->st, 0);
	if (!rc)
		rc = model_state_slot_reset(cand->st, 0);
	int32_t slots[KL_CHUNK] = { 0 };
	for (int r0 = 0; !rc && r0 < L - 1; r0 += KL_CHUNK) {
		int n = L - 1 - r0 < KL_CHUNK ? L - 1 - r0 : KL_CHUNK;
		struct model_batch b = { .n_rows = n, .tokens = ids + r0, .slots = slots };
		if ((rc = model_forward(ref->m, ref->st, &b, ref->logits)) ||
		    (rc = model_forward(cand->m, cand->st, &b, cand->logits)))
			break;
		for (int i = 0; i < n; i++) {
			const float *a = ref->logits + (size_t)i * V, *c = cand->logits + (size_t)i * V;
			log_softmax(a, lr, V);
			log_softmax(c, lc, V);
			double kl = 0;
			for (int v = 0; v < V; v++)
				kl += exp(lr[v]) * (lr[v] - lc[v]);
			int next = ids[r0 + i + 1];
			pt[r0 + i] = (struct kl_point){ .kl = kl, .top1_same = argmax(a, V) == argmax(c, V),
							.logp_ref = lr[next], .logp_cand = lc[next] };
		}
	}
	return rc;
}

/* ======== storing ======== */

static char *protocol_json(const struct kl_opts *o, const char *text_sha, size_t n_tokens, size_t n_points)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "kind", "kl");
	cJSON_AddStringToObject(j, "reference", o->reference);
	cJSON_AddStringToObject(j, "candidate", o->candidate);
	cJSON_AddStringToObject(j, "text", o->text);
	cJSON_AddStringToObject(j, "text_sha256", text_sha);
	cJSON_AddNumberToObject(j, "ctx", o->ctx);
	cJSON_AddNumberToObject(j, "max_positions", o->max_positions);
	cJSON_AddNumberToObject(j, "tokens", (double)n_tokens);
	cJSON_AddNumberToObject(j, "positions", (double)n_points);
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static char *summary_json(const struct kl_figures *f)
{
	cJSON *j = cJSON_CreateObject(), *k = cJSON_AddObjectToObject(j, "kl");
	const char *names[KL_FIGURES_N];
	double values[KL_FIGURES_N];
	kl_figures_named(f, names, values);
	for (int i = 0; i < KL_FIGURES_N; i++)
		cJSON_AddNumberToObject(k, names[i], values[i]);
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The run, its rows, summary and status in one transaction. */
static int store_all(struct store *st, const struct kl_opts *o, const char *proto, const char *summary,
		     const int32_t *ids, const struct kl_point *pt, const int64_t *pos, size_t n, int64_t *run_id,
		     char *err, size_t errlen)
{
	cJSON *fpj = cJSON_CreateObject();
	cJSON_AddStringToObject(fpj, "reference", base_name(o->reference));
	cJSON_AddStringToObject(fpj, "candidate", base_name(o->candidate));
	char *fps = cJSON_PrintUnformatted(fpj);
	cJSON_Delete(fpj);
	if (!fps) {
		err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct store_run r = { .kind = "eval", .workload = "kl", .protocol_json = proto, .endpoint = NULL,
			       .model = o->candidate, .fingerprint = fps, .host_facts = NULL };
	int rc = store_begin(st);
	if (!rc)
		rc = store_run_begin(st, &r, run_id);
	for (size_t i = 0; !rc && i < n; i++) {
		struct store_kl_row row = { .run_id = *run_id, .position = pos[i], .token = ids[pos[i] + 1], .kl = pt[i].kl,
					    .top1_same = pt[i].top1_same != 0, .logp_ref = pt[i].logp_ref,
					    .logp_cand = pt[i].logp_cand };
		rc = store_kl_insert(st, &row);
	}
	if (!rc)
		rc = store_run_set_summary(st, *run_id, summary);
	if (!rc)
		rc = store_run_finish(st, *run_id, "done");
	if (!rc)
		rc = store_commit(st);
	if (rc) {
		err_set(err, errlen, "the results database refused the run: %s (nothing was stored)", store_errmsg(st));
		if (store_rollback(st))
			log_warn("rollback failed: %s", store_errmsg(st));
	}
	free(fps);
	return rc;
}

int kl_run(const struct kl_opts *o, struct store *st, struct kl_result *res, char *err, size_t errlen)
{
	struct side ref = { 0 }, cand = { 0 };
	char *text = NULL, *proto = NULL, *summary = NULL;
	int32_t *ids = NULL, *ids2 = NULL;
	double *lr = NULL, *lc = NULL;
	struct kl_point *pt = NULL;
	int64_t *pos = NULL;
	size_t n_text = 0, n_ids = 0, n_ids2 = 0;
	int rc = -EINVAL;
	if (o->ctx < 2 || o->ctx > 65536) {
		err_set(err, errlen, "--ctx %d: a window needs 2 to 65536 tokens", o->ctx);
		goto out;
	}
	if (!(text = read_text(o->text, &n_text, err, errlen)))
		goto out;
	if (tok_utf8_error_offset(text, n_text) != n_text) {
		err_set(err, errlen, "%s: not UTF-8 (first bad byte at offset %zu); give a UTF-8 text", o->text,
			tok_utf8_error_offset(text, n_text));
		goto out;
	}
	if ((rc = side_load(&ref, o->reference, o->threads, err, errlen)) ||
	    (rc = side_load(&cand, o->candidate, o->threads, err, errlen)))
		goto out;
	rc = -EINVAL;
	int V = model_get_config(ref.m)->n_vocab;
	if (model_get_config(cand.m)->n_vocab != V) {
		err_set(err, errlen, "%s: vocabulary of %d tokens, the reference %s has %d: KL needs the same model's files",
			o->candidate, model_get_config(cand.m)->n_vocab, o->reference, V);
		goto out;
	}
	if (tok_encode(ref.tok, text, n_text, false, false, &ids, &n_ids) ||
	    tok_encode(cand.tok, text, n_text, false, false, &ids2, &n_ids2)) {
		err_set(err, errlen, "%s: the models' tokenizers cannot encode the text", o->text);
		goto out;
	}
	if (n_ids != n_ids2 || memcmp(ids, ids2, n_ids * sizeof(int32_t)) != 0) {
		size_t k = 0;
		while (k < n_ids && k < n_ids2 && ids[k] == ids2[k])
			k++;
		err_set(err, errlen, "%s: its tokenizer splits the text differently from %s's (first at token %zu): "
			"KL needs the same model's files", o->candidate, o->reference, k);
		goto out;
	}
	if (n_ids < 2) {
		err_set(err, errlen, "%s: %zu token(s); the text needs at least 2 to predict one", o->text, n_ids);
		goto out;
	}
	/* windows: [s, s+L) predicts s+1 .. s+L-1; the next starts at s+L-1 */
	size_t n_pt = n_ids - 1;
	if (o->max_positions > 0 && (size_t)o->max_positions < n_pt)
		n_pt = (size_t)o->max_positions;
	pt = malloc(sizeof(*pt) * n_pt);
	pos = malloc(sizeof(*pos) * n_pt);
	lr = malloc(sizeof(double) * (size_t)V);
	lc = malloc(sizeof(double) * (size_t)V);
	ref.logits = malloc(sizeof(float) * (size_t)V * KL_CHUNK);
	cand.logits = malloc(sizeof(float) * (size_t)V * KL_CHUNK);
	ref.st = model_state_create(ref.m, 1, o->ctx);
	cand.st = model_state_create(cand.m, 1, o->ctx);
	if (!pt || !pos || !lr || !lc || !ref.logits || !cand.logits || !ref.st || !cand.st) {
		err_set(err, errlen, "out of memory (n_vocab %d, --ctx %d): try a smaller --ctx", V, o->ctx);
		rc = -ENOMEM;
		goto out;
	}
	size_t done = 0;
	for (size_t s = 0; done < n_pt;) {
		size_t L = n_ids - s < (size_t)o->ctx ? n_ids - s : (size_t)o->ctx;
		if (L - 1 > n_pt - done)
			L = n_pt - done + 1;
		if ((rc = score_window(&ref, &cand, ids + s, (int)L, V, lr, lc, pt + done))) {
			err_set(err, errlen, "the forward pass failed (%s)", strerror(-rc));
			goto out;
		}
		for (size_t i = 0; i < L - 1; i++)
			pos[done + i] = (int64_t)(s + i);
		done += L - 1;
		s += L - 1;
	}
	if ((rc = kl_figures_compute(pt, n_pt, &res->fig))) {
		err_set(err, errlen, "the distributions gave no usable figures (NaN logits in %s or %s?)", o->reference,
			o->candidate);
		goto out;
	}
	char sha[65];
	sha256_hex(text, n_text, sha);
	proto = protocol_json(o, sha, n_ids, n_pt);
	summary = summary_json(&res->fig);
	if (!proto || !summary) {
		err_set(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = store_all(st, o, proto, summary, ids, pt, pos, n_pt, &res->run_id, err, errlen);
out:
	free(summary);
	free(proto);
	free(pos);
	free(pt);
	free(lc);
	free(lr);
	free(ids2);
	free(ids);
	free(text);
	side_finish(&cand);
	side_finish(&ref);
	return rc;
}

/* ======== the command ======== */

static const char kl_usage[] =
	"usage: sixi-eval kl --reference REF.gguf --model CAND.gguf --text FILE [--ctx N] [--positions N]\n"
	"                    [--threads N] [--db PATH] [--json]\n"
	"  KL(reference || candidate) of the next-token distributions at every position of FILE (teacher-forced,\n"
	"  windows of --ctx tokens, default 512), top-1 agreement and the perplexity ratio; stored as a run\n"
	"  (sixi-report kl shows it). REF is the model in F32/F16/BF16, CAND the same model quantised.\n";

/* sixi-eval kl's options: one table, each row naming the field it sets. */
struct kl_cli {
	struct kl_opts k;
	const char *db;
	bool json;
};
#define O struct kl_cli
static const struct args_opt kl_options[] = {
	ARGS_STRING_OPT("--reference", "REF.gguf", O, k.reference, 0, "the model in F32/F16/BF16"),
	ARGS_STRING_OPT("--model", "CAND.gguf", O, k.candidate, 0, "the same model quantised"),
	ARGS_STRING_OPT("--text", "FILE", O, k.text, 0, "the text, teacher-forced"),
	ARGS_INT_OPT("--ctx", "N", O, k.ctx, 2, 65536, 0, "tokens per window (default 512)"),
	ARGS_INT_OPT("--positions", "N", O, k.max_positions, 1, 65536, 0, "positions scored at most"),
	ARGS_INT_OPT("--threads", "N", O, k.threads, 0, 65536, 0, "CPU threads (0: cores)"),
	ARGS_STRING_OPT("--db", "PATH", O, db, 0, "results database (default results/sixi.db)"),
	ARGS_FLAG_OPT("--json", O, json, true, 0, "the result as JSON"),
	ARGS_TABLE_END,
};
#undef O

int kl_cmd_main(int argc, char **argv)
{
	struct kl_cli c = { .k = { .ctx = 512 }, .db = STORE_DEFAULT_PATH };
	static const struct args_spec spec = { .prog = "sixi-eval kl", .usage = kl_usage, .opts = kl_options };
	int rc = args_cli(&spec, 0, argc - 1, argv + 1, &c, NULL, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	struct kl_opts o = c.k;
	const char *db = c.db;
	bool json = c.json;
	char err[2048] = "";
	if (!o.reference || !o.candidate || !o.text) {
		fprintf(stderr, "sixi-eval kl: --reference, --model and --text are required (see sixi-eval kl --help)\n");
		return 2;
	}
	struct store *st = store_open(db, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "sixi-eval kl: %s\n", err);
		return 1;
	}
	struct kl_result r = { 0 };
	rc = kl_run(&o, st, &r, err, sizeof(err));
	store_close(st);
	if (rc) {
		fprintf(stderr, "sixi-eval kl: %s\n", err);
		return 1;
	}
	const struct kl_figures *f = &r.fig;
	if (json)
		printf("{\"run\":%lld,\"positions\":%lld,\"kl_mean\":%.17g,\"kl_p99\":%.17g,\"kl_max\":%.17g,"
		       "\"top1\":%.17g,\"ppl_ref\":%.17g,\"ppl_cand\":%.17g,\"ppl_ratio\":%.17g}\n",
		       (long long)r.run_id, (long long)f->n, f->kl_mean, f->kl_p99, f->kl_max, f->top1, f->ppl_ref,
		       f->ppl_cand, f->ppl_ratio);
	else
		printf("run %lld: %lld positions: mean KL %.4g nats, p99 %.4g, max %.4g; top-1 agreement %.2f%%; "
		       "perplexity %.4f vs %.4f (ratio %.5f)\n",
		       (long long)r.run_id, (long long)f->n, f->kl_mean, f->kl_p99, f->kl_max, 100 * f->top1, f->ppl_cand,
		       f->ppl_ref, f->ppl_ratio);
	return 0;
}
