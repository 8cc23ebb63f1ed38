/* workloads — see workloads.h. */
#include "bench/workloads.h"
#include "bench/plot.h"
#include "bench/selftest.h"
#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ---- */

struct plan {
	struct runner_stream *streams;
	struct runner_req *reqs;
	size_t n_streams, n_reqs;
};

static int plan_alloc(struct plan *p, size_t n_streams, size_t n_reqs)
{
	p->streams = calloc(n_streams ? n_streams : 1, sizeof *p->streams);
	p->reqs = calloc(n_reqs ? n_reqs : 1, sizeof *p->reqs);
	p->n_streams = n_streams;
	p->n_reqs = n_reqs;
	return p->streams && p->reqs ? 0 : -ENOMEM;
}

static void plan_free(struct plan *p)
{
	for (size_t i = 0; p->reqs && i < p->n_reqs; i++)
		free(p->reqs[i].body);
	free(p->reqs);
	free(p->streams);
}

/* Runs a level's plan (and frees it), summarises the level and stores the summary.
 * A fingerprint that changed since the run's first makes the level invalid. */
static int run_level(struct bench *b, struct plan *pl, int64_t level, bool fingerprint_changed,
		     struct bench_level *out)
{
	struct bench_sample *samples = NULL;
	size_t n = 0;
	int rc = bench_run_streams(b, pl->streams, pl->n_streams, &samples, &n);
	plan_free(pl);
	if (!rc)
		rc = bench_level_summarise(b, samples, n, level, out);
	if (!rc) {
		if (fingerprint_changed) {
			out->valid = false;
			snprintf(out->invalid_reason, sizeof out->invalid_reason,
				 "the server's fingerprint changed since the run's first level: not comparable");
		}
		bench_level_store(b, out);
	}
	bench_samples_free(samples, n);
	return rc;
}

static const char *yes_no(bool v) { return v ? "yes" : "NO"; }

static void print_fixed(FILE *out, double v, int width, int prec)
{
	if (isfinite(v))
		fprintf(out, " %*.*f", width, prec, v);
	else
		fprintf(out, " %*s", width, "-");
}

static void print_levels(FILE *out, const char *what, const struct bench_level *L, size_t n)
{
	fprintf(out, "%6s %5s %4s %10s %9s %27s %8s %15s %7s %8s  %s\n", what, "ok", "err", "agg tok/s",
		"strm tok/s", "TTFT p50/p90/p99 ms", "TPOT ms", "ITL p50/p99 ms", "tok/ev", "headroom", "valid");
	for (size_t i = 0; i < n; i++) {
		const struct bench_level *l = &L[i];
		char ttft[64], itl[48], head[16];
		snprintf(ttft, sizeof ttft, "%.1f/%.1f/%.1f", l->ttft_p50_ms, l->ttft_p90_ms, l->ttft_p99_ms);
		snprintf(itl, sizeof itl, "%.2f/%.2f", l->itl_p50_ms, l->itl_p99_ms);
		if (l->headroom > 0)
			snprintf(head, sizeof head, "%.0fx", l->headroom);
		else
			snprintf(head, sizeof head, "-");
		fprintf(out, "%6lld %5lld %4lld", (long long)l->level, (long long)l->ok, (long long)l->errors);
		print_fixed(out, l->agg_tok_s, 10, 1);
		print_fixed(out, l->stream_tok_s_mean, 10, 1);
		fprintf(out, " %27s", ttft);
		print_fixed(out, l->tpot_ms_mean, 8, 2);
		fprintf(out, " %15s", itl);
		print_fixed(out, l->tokens_per_event, 7, 2);
		fprintf(out, " %8s  %s\n", head, yes_no(l->valid));
	}
	for (size_t i = 0; i < n; i++) {
		if (!L[i].valid)
			fprintf(out, "  %s %lld is invalid: %s\n", what, (long long)L[i].level, L[i].invalid_reason);
		if (L[i].errors)
			fprintf(out, "  %s %lld errors: %s\n", what, (long long)L[i].level, L[i].error_classes);
		if (L[i].short_streams)
			fprintf(out, "  %s %lld: %lld streams ended short of the requested length (ignore_eos not honoured?)\n",
				what, (long long)L[i].level, (long long)L[i].short_streams);
		if (L[i].tokens_per_event > 1.05)
			fprintf(out, "  %s %lld: %.2f tokens per SSE event: counting events would under-count tokens\n",
				what, (long long)L[i].level, L[i].tokens_per_event);
	}
}

static void print_json(FILE *out, struct bench *b, const char *workload, const struct bench_level *L, size_t n,
		       cJSON *extra)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "run", (double)bench_run_id(b));
	cJSON_AddStringToObject(o, "workload", workload);
	cJSON_AddStringToObject(o, "url", bench_config(b)->url);
	cJSON_AddNumberToObject(o, "tokens_per_word", bench_tokens_per_word(b));
	cJSON *arr = cJSON_AddArrayToObject(o, "levels");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, bench_level_json(&L[i]));
	if (extra)
		cJSON_AddItemToObject(o, "detail", extra);
	char *s = cJSON_Print(o);
	fprintf(out, "%s\n", s);
	free(s);
	cJSON_Delete(o);
}

/* A client ceiling for the headroom column: measured once per database, quietly. */
static void ensure_ceiling(struct bench *b)
{
	if (bench_client_ceiling(b) > 0)
		return;
	struct bench_cfg cfg = *bench_config(b);
	cfg.quiet = true;
	cfg.json = false;
	cfg.rounds = 4;
	int64_t streams[] = { 64 };
	struct selftest_params sp = { .streams = streams, .n_streams = 1, .events = 256, .tokens_per_event = 1 };
	char err[256];
	if (selftest_run(&cfg, &sp, stderr, err, sizeof err) != 0)
		log_warn("could not measure the client's ceiling: %s", err);
}

static int prepare(struct bench *b, char *err, size_t errlen)
{
	ensure_ceiling(b);
	int rc = bench_wait_ready(b, err, errlen);
	if (rc)
		return rc;
	bench_fingerprint(b);
	rc = bench_calibrate(b, err, errlen);
	if (rc)
		return rc;
	return bench_warmup(b, err, errlen);
}

static void header(FILE *out, struct bench *b, const char *workload)
{
	const struct bench_cfg *c = bench_config(b);
	if (c->json || c->quiet)
		return;
	fprintf(out, "run %lld  %s  %s  model %s  prompt ~%lld tok  max_tokens %lld  (%.2f tokens/word)\n",
		(long long)bench_run_id(b), workload, c->url, c->model ? c->model : "-", (long long)c->prompt_tokens,
		(long long)c->max_tokens, bench_tokens_per_word(b));
}

/* ---- sweep ---- */

int workload_sweep(struct bench *b, const struct sweep_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "sweep");
	struct bench_level *levels = calloc(p->n_levels, sizeof *levels);
	if (!levels)
		return -ENOMEM;
	for (size_t li = 0; li < p->n_levels; li++) {
		int64_t conc = p->levels[li];
		bool changed = bench_fingerprint(b);
		struct plan pl;
		if ((rc = plan_alloc(&pl, (size_t)conc, (size_t)(conc * c->rounds))) != 0)
			break;
		size_t k = 0;
		for (int64_t s = 0; s < conc && !rc; s++) {
			pl.streams[s].reqs = &pl.reqs[k];
			pl.streams[s].n = (size_t)c->rounds;
			for (int64_t r = 0; r < c->rounds && !rc; r++, k++) {
				struct runner_req *rq = &pl.reqs[k];
				rq->level = conc;
				rq->stream = s;
				rq->seq = r;
				rq->requested_tokens = c->max_tokens;
				rq->phase = "measure";
				rc = bench_body(b, conc * 100000 + s, r, c->prompt_tokens, c->max_tokens, &rq->body,
						&rq->body_len);
			}
		}
		if (rc) {
			plan_free(&pl);
			break;
		}
		if ((rc = run_level(b, &pl, conc, changed, &levels[li])) != 0)
			break;
		if (!c->json && !c->quiet)
			fprintf(out, "  concurrency %lld: %.1f tok/s aggregate, %lld/%lld ok\n", (long long)conc,
				levels[li].agg_tok_s, (long long)levels[li].ok, (long long)levels[li].requests);
	}
	if (!rc) {
		if (c->json)
			print_json(out, b, "sweep", levels, p->n_levels, NULL);
		else
			print_levels(out, "conc", levels, p->n_levels);
		if (!c->no_plots)
			plot_sweep(b, levels, p->n_levels, c->json ? stderr : out);
	}
	free(levels);
	return rc;
}

/* ---- prefill ---- */

int workload_prefill(struct bench *b, const struct prefill_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "prefill");
	struct bench_level *levels = calloc(p->n_lengths, sizeof *levels);
	if (!levels)
		return -ENOMEM;
	int64_t reps = p->repeats > 0 ? p->repeats : 1;
	for (size_t li = 0; li < p->n_lengths && !rc; li++) {
		int64_t len = p->lengths[li];
		bool changed = bench_fingerprint(b);
		struct plan pl;
		if ((rc = plan_alloc(&pl, 1, (size_t)reps)) != 0)
			break;
		pl.streams[0].reqs = pl.reqs;
		pl.streams[0].n = (size_t)reps;
		for (int64_t r = 0; r < reps && !rc; r++) {
			struct runner_req *rq = &pl.reqs[r];
			rq->level = len;
			rq->stream = 0;
			rq->seq = r;
			rq->requested_tokens = 1;
			rq->phase = "measure";
			rc = bench_body(b, 900000 + (int64_t)li, r, len, 1, &rq->body, &rq->body_len);
		}
		if (rc)
			plan_free(&pl);
		else
			rc = run_level(b, &pl, len, changed, &levels[li]);
	}
	if (!rc) {
		if (c->json) {
			print_json(out, b, "prefill", levels, p->n_lengths, NULL);
		} else {
			fprintf(out, "%10s %12s %12s %14s  %s\n", "target", "prompt tok", "TTFT p50 ms", "prefill tok/s",
				"valid");
			for (size_t i = 0; i < p->n_lengths; i++) {
				fprintf(out, "%10lld %12lld", (long long)levels[i].level, (long long)levels[i].prompt_tokens_mean);
				print_fixed(out, levels[i].ttft_p50_ms, 12, 1);
				print_fixed(out, levels[i].prefill_tok_s, 14, 1);
				fprintf(out, "  %s\n", yes_no(levels[i].valid));
				if (!levels[i].valid)
					fprintf(out, "  length %lld is invalid: %s\n", (long long)levels[i].level,
						levels[i].invalid_reason);
			}
		}
		if (!c->no_plots)
			plot_prefill(b, levels, p->n_lengths, c->json ? stderr : out);
	}
	free(levels);
	return rc;
}

/* ---- agents ---- */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int workload_agents(struct bench *b, const struct agents_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "agents");
	int64_t A = p->agents, F = p->followups;
	struct plan pl;
	if ((rc = plan_alloc(&pl, (size_t)A, (size_t)(A * (1 + F)))) != 0)
		return rc;
	size_t k = 0;
	for (int64_t a = 0; a < A && !rc; a++) {
		pl.streams[a].reqs = &pl.reqs[k];
		pl.streams[a].n = (size_t)(1 + F);
		for (int64_t f = 0; f <= F && !rc; f++, k++) {
			struct runner_req *rq = &pl.reqs[k];
			rq->level = A;
			rq->stream = a;
			rq->seq = f;
			rq->requested_tokens = p->answer_tokens;
			rq->phase = "measure";
			rq->tag = f == 0 ? "doc" : "followup";
			rc = bench_body(b, 700000 + a, f, f == 0 ? p->doc_tokens : p->followup_tokens, p->answer_tokens,
					&rq->body, &rq->body_len);
		}
	}
	/* staggered arrivals: agent a's document is sent a x stagger after the start, so
	 * follow-ups of early agents meet the documents of later ones */
	if (!rc && p->stagger_s > 0) {
		int64_t t0 = clock_now_ns() + 50000000LL;
		for (int64_t a = 0; a < A; a++)
			pl.streams[a].reqs[0].t_intended_ns = t0 + (int64_t)((double)a * p->stagger_s * 1e9);
	}
	struct bench_sample *samples = NULL;
	size_t n = 0;
	if (!rc)
		rc = bench_run_streams(b, pl.streams, pl.n_streams, &samples, &n);
	plan_free(&pl);
	/* the same follow-ups, alone, one at a time */
	if (!rc) {
		struct plan al;
		if ((rc = plan_alloc(&al, 1, (size_t)F)) == 0) {
			al.streams[0].reqs = al.reqs;
			al.streams[0].n = (size_t)F;
			for (int64_t f = 0; f < F && !rc; f++) {
				struct runner_req *rq = &al.reqs[f];
				rq->level = A;
				rq->stream = -1;
				rq->seq = f + 1;
				rq->requested_tokens = p->answer_tokens;
				rq->phase = "alone";
				rq->tag = "followup";
				rc = bench_body(b, 800000, f, p->followup_tokens, p->answer_tokens, &rq->body, &rq->body_len);
			}
			if (!rc)
				rc = bench_run_streams(b, al.streams, 1, &samples, &n);
		}
		plan_free(&al);
	}
	if (rc) {
		bench_samples_free(samples, n);
		return rc;
	}
	double *doc = calloc(n + 1, sizeof *doc), *fu = calloc(n + 1, sizeof *fu), *alone = calloc(n + 1, sizeof *alone);
	struct bench_level L;
	if (!doc || !fu || !alone || bench_level_summarise(b, samples, n, A, &L) != 0) {
		free(doc);
		free(fu);
		free(alone);
		bench_samples_free(samples, n);
		return -ENOMEM;
	}
	size_t nd = 0, nf = 0, na = 0;
	int64_t errors = 0, missing_usage = 0, cached = 0;
	double fu_max = 0;
	for (size_t i = 0; i < n; i++) {
		const struct bench_sample *x = &samples[i];
		if (x->error) {
			errors++;
			continue;
		}
		if (x->completion_tokens < 0)
			missing_usage++;
		if (x->cached_tokens > 0)
			cached++;
		if (!x->t_first_token)
			continue;
		int64_t start = x->t_intended ? x->t_intended : x->t_send;
		double ttft = (double)(x->t_first_token - start) / 1e9;
		if (strcmp(x->phase, "alone") == 0)
			alone[na++] = ttft;
		else if (x->tag && strcmp(x->tag, "doc") == 0)
			doc[nd++] = ttft;
		else {
			fu[nf++] = ttft;
			if (ttft > fu_max)
				fu_max = ttft;
		}
	}
	double doc_med = median(doc, nd), fu_med = median(fu, nf), alone_med = median(alone, na);
	if (missing_usage || (c->unique_prompts && cached)) {
		L.valid = false;
		snprintf(L.invalid_reason, sizeof L.invalid_reason, "%s",
			 missing_usage ? "responses without usage" : "cached_tokens > 0 on unique prompts");
	}
	bench_level_store(b, &L);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "agents", (double)A);
	cJSON_AddNumberToObject(d, "doc_tokens", (double)p->doc_tokens);
	cJSON_AddNumberToObject(d, "followups", (double)F);
	cJSON_AddNumberToObject(d, "stagger_s", p->stagger_s);
	if (isfinite(doc_med))
		cJSON_AddNumberToObject(d, "doc_ttft_median_s", doc_med);
	if (isfinite(fu_med))
		cJSON_AddNumberToObject(d, "followup_wait_median_s", fu_med);
	cJSON_AddNumberToObject(d, "followup_wait_max_s", fu_max);
	if (isfinite(alone_med))
		cJSON_AddNumberToObject(d, "followup_alone_median_s", alone_med);
	if (isfinite(fu_med) && isfinite(alone_med))
		cJSON_AddNumberToObject(d, "followup_extra_wait_median_s", fu_med - alone_med);
	cJSON_AddNumberToObject(d, "errors", (double)errors);
	cJSON_AddBoolToObject(d, "valid", L.valid);
	char *ds = cJSON_PrintUnformatted(d);
	char wrapped[4096];
	snprintf(wrapped, sizeof wrapped, "{\"agents\":%s}", ds ? ds : "null");
	if (!ds || store_run_set_summary(bench_store(b), bench_run_id(b), wrapped) != 0)
		log_warn("could not store the agents summary");
	free(ds);
	if (c->json) {
		print_json(out, b, "agents", &L, 1, d);
	} else {
		fprintf(out, "%lld agents x %lld-token documents, %lld follow-ups each (%lld tokens), starts %.2f s apart\n",
			(long long)A, (long long)p->doc_tokens, (long long)F, (long long)p->followup_tokens, p->stagger_s);
		fprintf(out, "  document load TTFT   median %.3f s\n", doc_med);
		fprintf(out, "  follow-up wait       median %.3f s   max %.3f s   (%zu follow-ups)\n", fu_med, fu_max, nf);
		fprintf(out, "  same follow-up alone median %.3f s\n", alone_med);
		fprintf(out, "  errors %lld   valid %s%s%s\n", (long long)errors, yes_no(L.valid), L.valid ? "" : ": ",
			L.valid ? "" : L.invalid_reason);
		cJSON_Delete(d);
	}
	free(doc);
	free(fu);
	free(alone);
	bench_samples_free(samples, n);
	return 0;
}

/* ---- open-loop rate ---- */

static double uniform01(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

int workload_rate(struct bench *b, const struct rate_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "rate");
	/* the Poisson schedule, fixed before anything is sent */
	uint64_t rng = c->seed ^ 0x9a7eULL;
	size_t cap = (size_t)(p->rps * p->duration_s * 2 + 16), n_arr = 0;
	double *arr = malloc(cap * sizeof *arr);
	if (!arr)
		return -ENOMEM;
	for (double t = -log(uniform01(&rng)) / p->rps; t < p->duration_s && n_arr < cap;
	     t += -log(uniform01(&rng)) / p->rps)
		arr[n_arr++] = t;
	int64_t level = (int64_t)llround(p->rps) > 0 ? (int64_t)llround(p->rps) : 1;
	struct plan pl;
	if ((rc = plan_alloc(&pl, n_arr, n_arr)) != 0) {
		free(arr);
		return rc;
	}
	for (size_t i = 0; i < n_arr && !rc; i++) {
		struct runner_req *rq = &pl.reqs[i];
		rq->level = level;
		rq->stream = (int64_t)i;
		rq->requested_tokens = c->max_tokens;
		rq->phase = "measure";
		pl.streams[i].reqs = rq;
		pl.streams[i].n = 1;
		rc = bench_body(b, 600000 + (int64_t)i, 0, c->prompt_tokens, c->max_tokens, &rq->body, &rq->body_len);
	}
	int64_t t0 = clock_now_ns() + 100000000LL; /* bodies are ready; start 100 ms from now */
	for (size_t i = 0; i < n_arr; i++)
		pl.reqs[i].t_intended_ns = t0 + (int64_t)(arr[i] * 1e9);
	free(arr);
	struct bench_sample *samples = NULL;
	size_t n = 0;
	if (!rc)
		rc = bench_run_streams(b, pl.streams, pl.n_streams, &samples, &n);
	plan_free(&pl);
	if (rc) {
		bench_samples_free(samples, n);
		return rc;
	}
	struct bench_level L;
	/* latency from the intended send time, and the lag of the client itself */
	double *e2e = calloc(n + 1, sizeof *e2e), *lag = calloc(n + 1, sizeof *lag);
	if (!e2e || !lag || bench_level_summarise(b, samples, n, level, &L) != 0) {
		free(e2e);
		free(lag);
		bench_samples_free(samples, n);
		return -ENOMEM;
	}
	size_t ne = 0, nl = 0;
	for (size_t i = 0; i < n; i++) {
		if (samples[i].t_send && samples[i].t_intended)
			lag[nl++] = (double)(samples[i].t_send - samples[i].t_intended) / 1e6;
		if (!samples[i].error && samples[i].t_done)
			e2e[ne++] = (double)(samples[i].t_done - samples[i].t_intended) / 1e6;
	}
	double e50 = bench_percentile(e2e, ne, 50), e99 = bench_percentile(e2e, ne, 99),
	       lag99 = bench_percentile(lag, nl, 99);
	/* a client that sent late measured its own lag, not the server: the level is
	 * invalid in the stored row and the table, not only in the footer */
	if (isfinite(lag99) && lag99 > 500 && L.valid) {
		L.valid = false;
		snprintf(L.invalid_reason, sizeof L.invalid_reason,
			 "the client was overloaded (send lag p99 %.0f ms > 500 ms)", lag99);
	}
	bench_level_store(b, &L);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "rps", p->rps);
	cJSON_AddNumberToObject(d, "duration_s", p->duration_s);
	cJSON_AddNumberToObject(d, "scheduled", (double)n);
	if (isfinite(e50))
		cJSON_AddNumberToObject(d, "latency_from_intended_p50_ms", e50);
	if (isfinite(e99))
		cJSON_AddNumberToObject(d, "latency_from_intended_p99_ms", e99);
	if (isfinite(lag99))
		cJSON_AddNumberToObject(d, "send_lag_p99_ms", lag99);
	if (c->json) {
		print_json(out, b, "rate", &L, 1, d);
	} else {
		fprintf(out, "open loop: %.2f req/s for %.0f s, %zu requests scheduled (Poisson)\n", p->rps, p->duration_s, n);
		print_levels(out, "rps", &L, 1);
		fprintf(out, "  end-to-end latency from intended send: p50 %.1f ms  p99 %.1f ms\n", e50, e99);
		fprintf(out, "  client send lag p99 %.2f ms%s\n", lag99,
			isfinite(lag99) && lag99 > 500 ? "  (client overloaded: results invalid)" : "");
		cJSON_Delete(d);
	}
	free(e2e);
	free(lag);
	bench_samples_free(samples, n);
	return 0;
}
