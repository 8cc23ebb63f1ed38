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
#include "net/http.h"
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

/* The text file, which must be UTF-8; NULL with a message. */
static char *read_text(const char *path, size_t *n, char *err, size_t errlen)
{
	char *text = buf_load_file(path, n);
	if (!text && errno == ENOMEM)
		err_set(err, errlen, "%s: out of memory reading the text", path);
	else if (!text && errno == EIO)
		err_set(err, errlen, "%s: error reading the text", path);
	else if (!text)
		err_set(err, errlen, "%s: cannot read the text: %s", path, strerror(errno));
	if (text && tok_utf8_error_offset(text, *n) != *n) {
		err_set(err, errlen, "%s: not UTF-8 (first bad byte at offset %zu); give a UTF-8 text", path,
			tok_utf8_error_offset(text, *n));
		free(text);
		return NULL;
	}
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
static int store_all(struct store *st, const char *reference, const char *candidate, const char *proto,
		     const char *summary, const int32_t *ids, const struct kl_point *pt, const int64_t *pos, size_t n,
		     int64_t *run_id, char *err, size_t errlen)
{
	cJSON *fpj = cJSON_CreateObject();
	cJSON_AddStringToObject(fpj, "reference", base_name(reference));
	cJSON_AddStringToObject(fpj, "candidate", base_name(candidate));
	char *fps = cJSON_PrintUnformatted(fpj);
	cJSON_Delete(fpj);
	if (!fps) {
		err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct store_run r = { .kind = "eval", .workload = "kl", .protocol_json = proto, .endpoint = NULL,
			       .model = candidate, .fingerprint = fps, .host_facts = NULL };
	int rc = store_begin(st);
	if (!rc)
		rc = store_run_begin(st, &r, run_id);
	for (size_t i = 0; !rc && i < n; i++) {
		/* ids: the token each position predicts, indexed by position + 1 */
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
	rc = store_all(st, o->reference, o->candidate, proto, summary, ids, pt, pos, n_pt, &res->run_id, err, errlen);
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

/* ======== the API form ======== */

#define KL_API_MAX_BYTES ((size_t)1 << 30) /* one answer: --top x tokens x ~70 bytes */

/* One side's answer for a chunk: the prompt's ids and, per position, the listed ids. */
struct api_side {
	cJSON *root;            /* owns the rest */
	const cJSON *ids;       /* prompt_token_ids */
	const cJSON *lps;       /* prompt_logprobs */
	int n;                  /* tokens */
};

static void api_side_finish(struct api_side *a)
{
	cJSON_Delete(a->root);
	memset(a, 0, sizeof *a);
}

/* Posts one chunk to url's /v1/completions and checks the answer's shape. */
static int api_score(const char *url, const char *model, const char *chunk, size_t len, int top, int timeout_s,
		     struct api_side *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	cJSON *req = cJSON_CreateObject();
	char *text = strndup(chunk, len), *body = NULL;
	char endpoint[1024];
	size_t ul = strlen(url);
	while (ul > 0 && url[ul - 1] == '/')
		ul--;
	snprintf(endpoint, sizeof endpoint, "%.*s/v1/completions", (int)ul, url);
	if (req && text) {
		cJSON_AddStringToObject(req, "model", model ? model : "default");
		cJSON_AddStringToObject(req, "prompt", text);
		cJSON_AddNumberToObject(req, "max_tokens", 1);
		cJSON_AddNumberToObject(req, "temperature", 0);
		cJSON_AddNumberToObject(req, "prompt_logprobs", top);
		cJSON_AddBoolToObject(req, "return_token_ids", true);
		body = cJSON_PrintUnformatted(req);
	}
	cJSON_Delete(req);
	free(text);
	if (!body) {
		err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct buf out;
	buf_init(&out);
	int status = 0;
	char why[512] = "";
	int rc = http_fetch_max(endpoint, body, (int64_t)timeout_s * 1000, KL_API_MAX_BYTES, &out, &status, why,
				sizeof why);
	free(body);
	if (rc) {
		err_set(err, errlen, "%s (is the server running? a long chunk may need a larger --timeout, a long answer a "
			"smaller --top or --chunk-chars)", why);
		goto out;
	}
	rc = -EINVAL;
	if (status != 200) {
		err_set(err, errlen, "%s answered HTTP %d: %.300s", endpoint, status, out.data ? out.data : "");
		goto out;
	}
	a->root = cJSON_Parse(out.data ? out.data : "");
	const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a->root, "choices"), 0);
	a->ids = cJSON_GetObjectItemCaseSensitive(ch, "prompt_token_ids");
	a->lps = cJSON_GetObjectItemCaseSensitive(ch, "prompt_logprobs");
	if (!cJSON_IsArray(a->lps) || !cJSON_IsArray(a->ids)) {
		err_set(err, errlen, "%s gave no %s: sixi-eval kl --url needs a server that answers vLLM's "
			"prompt_logprobs with prompt_token_ids (sixi-server does; vLLM with return_token_ids)", endpoint,
			!cJSON_IsArray(a->lps) ? "prompt_logprobs" : "prompt_token_ids");
		goto out;
	}
	a->n = cJSON_GetArraySize(a->ids);
	if (cJSON_GetArraySize(a->lps) != a->n) {
		err_set(err, errlen, "%s: prompt_logprobs has %d entries for %d prompt tokens", endpoint,
			cJSON_GetArraySize(a->lps), a->n);
		goto out;
	}
	rc = 0;
out:
	buf_finish(&out);
	if (rc)
		api_side_finish(a);
	return rc;
}

/* A position's listed ids on one side: the smallest log-probability among the top ranks (what
 * an id not listed can be at most), the top-ranked id, the prompt token's log-probability. */
struct api_pos {
	const cJSON *o;
	double floor_lp;
	long top_id;
	double tok_lp;
};

static int api_pos_read(const cJSON *o, long tok, int top, struct api_pos *p)
{
	p->o = o;
	p->floor_lp = INFINITY;
	p->top_id = -1;
	p->tok_lp = NAN;
	for (const cJSON *e = o ? o->child : NULL; e; e = e->next) {
		const cJSON *lp = cJSON_GetObjectItemCaseSensitive(e, "logprob");
		const cJSON *rk = cJSON_GetObjectItemCaseSensitive(e, "rank");
		if (!cJSON_IsNumber(lp) || !cJSON_IsNumber(rk))
			return -EINVAL;
		long id = strtol(e->string, NULL, 10);
		if (rk->valuedouble <= top && lp->valuedouble < p->floor_lp)
			p->floor_lp = lp->valuedouble;
		if (rk->valuedouble == 1)
			p->top_id = id;
		if (id == tok)
			p->tok_lp = lp->valuedouble;
	}
	return isnan(p->tok_lp) || isinf(p->floor_lp) ? -EINVAL : 0;
}

static double api_lp(const struct api_pos *p, const char *key)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(p->o, key);
	return e ? cJSON_GetObjectItemCaseSensitive(e, "logprob")->valuedouble : p->floor_lp;
}

/* KL over the union of the listed ids plus one bucket for the rest (see kl.h). */
static double api_kl(const struct api_pos *r, const struct api_pos *c)
{
	double kl = 0, pr = 0, qr = 0;
	for (int side = 0; side < 2; side++)
		for (const cJSON *e = (side ? c : r)->o->child; e; e = e->next) {
			if (side == 1 && cJSON_GetObjectItemCaseSensitive(r->o, e->string))
				continue; /* listed on both: counted once */
			double lp = api_lp(r, e->string), lq = api_lp(c, e->string);
			kl += exp(lp) * (lp - lq);
			pr += exp(lp);
			qr += exp(lq);
		}
	/* below 1e-4 the rest is the rounding of the listed values (every id listed) */
	double p_rest = 1 - pr, q_rest = 1 - qr;
	if (p_rest > 1e-4)
		kl += p_rest * (log(p_rest) - log(q_rest > 1e-12 ? q_rest : 1e-12));
	return kl;
}

/* Where chunk i of text[0..n) ends: about want bytes on, at a line end in its last quarter
 * when there is one, else at a UTF-8 character boundary. */
static size_t chunk_end(const char *text, size_t n, size_t at, size_t want)
{
	if (n - at <= want)
		return n;
	size_t e = at + want;
	for (size_t k = e; k > at + want - want / 4; k--)
		if (text[k - 1] == '\n')
			return k;
	while (e > at + 1 && ((unsigned char)text[e] & 0xC0) == 0x80)
		e--;
	return e;
}

int kl_run_api(const struct kl_api_opts *o, struct store *st, struct kl_result *res, char *err, size_t errlen)
{
	char *text = NULL, *proto = NULL, *summary = NULL;
	struct kl_point *pt = NULL;
	int64_t *pos = NULL;
	int32_t *toks = NULL;
	size_t n_text = 0, n_pt = 0, cap = 0, n_tokens = 0;
	int rc = -EINVAL;
	struct api_side ra = { 0 }, ca = { 0 };
	if (!(text = read_text(o->text, &n_text, err, errlen)))
		goto out;
	/* toks is indexed by position + 1, as store_all reads it */
	for (size_t at = 0; at < n_text && (o->max_positions <= 0 || n_pt < (size_t)o->max_positions);) {
		size_t end = chunk_end(text, n_text, at, (size_t)o->chunk_chars);
		if ((rc = api_score(o->reference_url, o->reference_model, text + at, end - at, o->top, o->timeout_s, &ra,
				    err, errlen)) ||
		    (rc = api_score(o->candidate_url, o->candidate_model, text + at, end - at, o->top, o->timeout_s, &ca,
				    err, errlen)))
			goto out;
		rc = -EINVAL;
		int same = 0;
		while (same < ra.n && same < ca.n &&
		       cJSON_GetArrayItem(ra.ids, same)->valuedouble == cJSON_GetArrayItem(ca.ids, same)->valuedouble)
			same++;
		if (same != ra.n || ra.n != ca.n) {
			err_set(err, errlen, "the endpoints tokenize the text differently (bytes %zu-%zu, first at token %d): "
				"KL needs the same model behind both", at, end, same);
			goto out;
		}
		if (n_pt + (size_t)ra.n + 1 > cap) {
			cap = 2 * (n_pt + (size_t)ra.n + 1);
			struct kl_point *np = realloc(pt, cap * sizeof *np);
			int64_t *npos = np ? realloc(pos, cap * sizeof *npos) : NULL;
			int32_t *nt = npos ? realloc(toks, (cap + 1) * sizeof *nt) : NULL;
			pt = np ? np : pt;
			pos = npos ? npos : pos;
			toks = nt ? nt : toks;
			if (!nt) {
				err_set(err, errlen, "out of memory");
				rc = -ENOMEM;
				goto out;
			}
		}
		for (int i = 1; i < ra.n && (o->max_positions <= 0 || n_pt < (size_t)o->max_positions); i++) {
			long tok = (long)cJSON_GetArrayItem(ra.ids, i)->valuedouble;
			struct api_pos r, c;
			if (api_pos_read(cJSON_GetArrayItem(ra.lps, i), tok, o->top, &r) ||
			    api_pos_read(cJSON_GetArrayItem(ca.lps, i), tok, o->top, &c)) {
				err_set(err, errlen, "prompt_logprobs at token %d of bytes %zu-%zu: an entry without logprob and "
					"rank, or without the prompt's own token", i, at, end);
				goto out;
			}
			pt[n_pt] = (struct kl_point){ .kl = api_kl(&r, &c), .top1_same = r.top_id == c.top_id,
						      .logp_ref = r.tok_lp, .logp_cand = c.tok_lp };
			pos[n_pt] = (int64_t)n_pt;
			toks[n_pt + 1] = (int32_t)tok;
			n_pt++;
		}
		n_tokens += (size_t)ra.n;
		api_side_finish(&ra);
		api_side_finish(&ca);
		at = end;
	}
	if (n_pt == 0) {
		err_set(err, errlen, "%s: no position to score (a text of one token per chunk?); give a longer text or "
			"a larger --chunk-chars", o->text);
		goto out;
	}
	if ((rc = kl_figures_compute(pt, n_pt, &res->fig))) {
		err_set(err, errlen, "the endpoints' log-probabilities gave no usable figures (NaN?)");
		goto out;
	}
	char sha[65];
	sha256_hex(text, n_text, sha);
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "kind", "kl");
	cJSON_AddStringToObject(j, "form", "api");
	cJSON_AddStringToObject(j, "reference", o->reference_url);
	cJSON_AddStringToObject(j, "reference_model", o->reference_model ? o->reference_model : "default");
	cJSON_AddStringToObject(j, "candidate", o->candidate_url);
	cJSON_AddStringToObject(j, "candidate_model", o->candidate_model ? o->candidate_model : "default");
	cJSON_AddStringToObject(j, "text", o->text);
	cJSON_AddStringToObject(j, "text_sha256", sha);
	cJSON_AddNumberToObject(j, "top", o->top);
	cJSON_AddNumberToObject(j, "chunk_chars", o->chunk_chars);
	cJSON_AddNumberToObject(j, "max_positions", o->max_positions);
	cJSON_AddNumberToObject(j, "tokens", (double)n_tokens);
	cJSON_AddNumberToObject(j, "positions", (double)n_pt);
	proto = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	summary = summary_json(&res->fig);
	if (!proto || !summary) {
		err_set(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = store_all(st, o->reference_url, o->candidate_url, proto, summary, toks, pt, pos, n_pt, &res->run_id, err,
		       errlen);
out:
	api_side_finish(&ra);
	api_side_finish(&ca);
	free(summary);
	free(proto);
	free(toks);
	free(pos);
	free(pt);
	free(text);
	return rc;
}

/* ======== the command ======== */

static const char kl_usage[] =
	"usage: sixi-eval kl --reference REF.gguf --model CAND.gguf --text FILE [--ctx N] [--positions N]\n"
	"                    [--threads N] [--db PATH] [--json]\n"
	"       sixi-eval kl --reference-url URL --url URL --text FILE [--model NAME] [--reference-model NAME]\n"
	"                    [--top N] [--chunk-chars N] [--timeout S] [--positions N] [--db PATH] [--json]\n"
	"  KL(reference || candidate) of the next-token distributions at every position of FILE (teacher-forced),\n"
	"  top-1 agreement and the perplexity ratio; stored as a run (sixi-report kl shows it). Files: REF is the\n"
	"  model in F32/F16/BF16, CAND the same model quantised, both run here in windows of --ctx tokens (default\n"
	"  512). Endpoints: each scores the text through /v1/completions with prompt_logprobs (--top per\n"
	"  position, default 20: exact when it covers the vocabulary), in chunks of --chunk-chars bytes.\n";

/* sixi-eval kl's options: one table, each row naming the field it sets. */
struct kl_cli {
	struct kl_opts k;
	struct kl_api_opts a;
	const char *db;
	bool json;
};
#define O struct kl_cli
static const struct args_opt kl_options[] = {
	ARGS_INT_OPT("--chunk-chars", "N", O, a.chunk_chars, 16, 1 << 24, 0,
		     "endpoints: bytes of text per request (default 2000)"),
	ARGS_INT_OPT("--ctx", "N", O, k.ctx, 2, 65536, 0, "files: tokens per window (default 512)"),
	ARGS_STRING_OPT("--db", "PATH", O, db, 0, "results database (default results/sixi.db)"),
	ARGS_FLAG_OPT("--json", O, json, true, 0, "the result as JSON"),
	ARGS_STRING_OPT("--model", "CAND.gguf|NAME", O, k.candidate, 0,
			"files: the same model quantised; endpoints: the model name sent to --url"),
	ARGS_INT_OPT("--positions", "N", O, k.max_positions, 1, 1 << 30, 0, "positions scored at most"),
	ARGS_STRING_OPT("--reference", "REF.gguf", O, k.reference, 0, "files: the model in F32/F16/BF16"),
	ARGS_STRING_OPT("--reference-model", "NAME", O, a.reference_model, 0,
			"endpoints: the model name sent to --reference-url"),
	ARGS_STRING_OPT("--reference-url", "URL", O, a.reference_url, 0, "endpoints: the reference's server"),
	ARGS_STRING_OPT("--text", "FILE", O, k.text, 0, "the text, teacher-forced"),
	ARGS_INT_OPT("--threads", "N", O, k.threads, 0, 65536, 0, "files: CPU threads (0: cores)"),
	ARGS_INT_OPT("--timeout", "S", O, a.timeout_s, 1, 86400, 0, "endpoints: seconds per request (default 600)"),
	ARGS_INT_OPT("--top", "N", O, a.top, 1, 1 << 20, 0, "endpoints: prompt_logprobs per position (default 20)"),
	ARGS_STRING_OPT("--url", "URL", O, a.candidate_url, 0, "endpoints: the candidate's server"),
	ARGS_TABLE_END,
};
#undef O

int kl_cmd_main(int argc, char **argv)
{
	struct kl_cli c = { .k = { .ctx = 512 }, .a = { .top = 20, .chunk_chars = 2000, .timeout_s = 600 },
			    .db = STORE_DEFAULT_PATH };
	static const struct args_spec spec = { .prog = "sixi-eval kl", .usage = kl_usage, .opts = kl_options };
	int rc = args_cli(&spec, 0, argc - 1, argv + 1, &c, NULL, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	bool api = c.a.reference_url || c.a.candidate_url;
	struct kl_opts o = c.k;
	const char *db = c.db;
	bool json = c.json;
	char err[2048] = "";
	if (api && (!c.a.reference_url || !c.a.candidate_url || !o.text)) {
		fprintf(stderr, "sixi-eval kl: the endpoint form needs --reference-url, --url and --text (see sixi-eval kl "
				"--help)\n");
		return 2;
	}
	if (api && (o.reference || c.k.ctx != 512 || c.k.threads)) {
		fprintf(stderr, "sixi-eval kl: %s is for two files; with --url and --reference-url the endpoints run the "
				"models (see sixi-eval kl --help)\n", o.reference ? "--reference" : c.k.threads ? "--threads" : "--ctx");
		return 2;
	}
	if (!api && (c.a.reference_model || c.a.top != 20 || c.a.chunk_chars != 2000 || c.a.timeout_s != 600)) {
		fprintf(stderr, "sixi-eval kl: --reference-model, --top, --chunk-chars and --timeout are for two endpoints "
				"(--reference-url and --url); with files, see sixi-eval kl --help\n");
		return 2;
	}
	if (!api && (!o.reference || !o.candidate || !o.text)) {
		fprintf(stderr, "sixi-eval kl: --reference, --model and --text are required (see sixi-eval kl --help)\n");
		return 2;
	}
	struct store *st = store_open(db, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "sixi-eval kl: %s\n", err);
		return 1;
	}
	struct kl_result r = { 0 };
	if (api) {
		struct kl_api_opts a = c.a;
		a.candidate_model = o.candidate;
		a.text = o.text;
		a.max_positions = o.max_positions;
		rc = kl_run_api(&a, st, &r, err, sizeof(err));
	} else {
		rc = kl_run(&o, st, &r, err, sizeof(err));
	}
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
