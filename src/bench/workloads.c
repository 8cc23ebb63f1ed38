/* workloads — see workloads.h. */
#include "bench/workloads.h"
#include "core/err.h"
#include "bench/dist.h"
#include "bench/plot.h"
#include "bench/prompt.h"
#include "bench/scrape.h"
#include "bench/selftest.h"
#include "bench/slo.h"
#include "bench/source.h"
#include "stats/level.h"
#include "stats/stats.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdatomic.h>
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

/* Chooses each request's prompt and lengths from the workload's inputs. */
struct picker {
	struct bench *b;
	const struct workload_inputs *in;
	gsl_rng *rng;          /* lengths, seeded from --seed */
	size_t next;           /* next conversation of the source */
};

static int picker_init(struct picker *pk, struct bench *b, const struct workload_inputs *in, uint64_t salt)
{
	static const struct workload_inputs none;
	pk->b = b;
	pk->in = in ? in : &none;
	pk->next = 0;
	pk->rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!pk->rng)
		return -ENOMEM;
	uint64_t seed = bench_config(b)->seed ^ salt;
	gsl_rng_set(pk->rng, (unsigned long)(seed ^ (seed >> 32)));
	return 0;
}

static void picker_finish(struct picker *pk) { gsl_rng_free(pk->rng); }

static int64_t pick_output(struct picker *pk)
{
	return pk->in->output_len ? dist_draw(pk->in->output_len, pk->rng) : bench_config(pk->b)->max_tokens;
}

/* A chat messages array of the given (role, text) pairs; caller frees. */
static char *messages_json(const char *const *roles, const char *const *texts, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; a && i < n; i++) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", roles[i]);
		cJSON_AddStringToObject(m, "content", texts[i]);
		cJSON_AddItemToArray(a, m);
	}
	char *s = a ? cJSON_PrintUnformatted(a) : NULL;
	cJSON_Delete(a);
	return s;
}

/* One request's body: the next prompt of the source, or a synthetic prompt of
 * in_tokens (> 0) or a drawn length; max_tokens out_tokens (> 0) or drawn. */
static int pick_body(struct picker *pk, int64_t stream, int64_t seq, int64_t in_tokens, int64_t out_tokens,
		     struct runner_req *rq)
{
	struct bench *b = pk->b;
	int64_t mt = out_tokens > 0 ? out_tokens : pick_output(pk);
	rq->requested_tokens = mt;
	const struct source *src = pk->in->src;
	if (!src) {
		int64_t len = in_tokens > 0 ? in_tokens
			      : pk->in->input_len ? dist_draw(pk->in->input_len, pk->rng)
						  : bench_config(b)->prompt_tokens;
		return bench_body(b, stream, seq, len, mt, &rq->body, &rq->body_len);
	}
	const struct source_conv *c = &src->c[pk->next++ % src->n];
	if (bench_config(b)->api == OPENAI_CHAT) {
		const char *roles[2], *texts[2];
		size_t n = 0;
		for (size_t i = 0; i < c->n && (n == 0 || strcmp(roles[n - 1], "user") != 0); i++) {
			if (c->m[i].role == SOURCE_ASSISTANT || (n == 1 && c->m[i].role == SOURCE_SYSTEM))
				continue;
			roles[n] = source_role_name(c->m[i].role);
			texts[n++] = c->m[i].text;
		}
		char *mj = messages_json(roles, texts, n);
		int rc = mj ? bench_body_text(b, NULL, mj, mt, &rq->body, &rq->body_len) : -ENOMEM;
		free(mj);
		return rc;
	}
	char *p = source_first_prompt(c);
	int rc = p ? bench_body_text(b, p, NULL, mt, &rq->body, &rq->body_len) : -ENOMEM;
	free(p);
	return rc;
}

/* Runs a level's plan (and frees it), summarises the level and stores the summary.
 * A fingerprint that changed since the run's first makes the level invalid. */
/* The server's metrics before a level, and after it the deltas into L (--metrics). */
static int metrics_before(struct bench *b, const struct workload_inputs *in, struct scrape *s)
{
	memset(s, 0, sizeof *s);
	return in && in->metrics ? scrape_fetch(bench_config(b)->url, s) : 0;
}

static int metrics_after(struct bench *b, const struct workload_inputs *in, struct scrape *before, struct bench_level *L)
{
	struct scrape after;
	int rc = 0;
	if (in && in->metrics && (rc = scrape_fetch(bench_config(b)->url, &after)) == 0) {
		L->server_metrics = scrape_delta(before, &after);
		if (!after.ok)
			log_warn("%s/metrics did not answer: no server metrics for this level", bench_config(b)->url);
		scrape_finish(&after);
	}
	scrape_finish(before);
	return rc;
}

static void levels_free_metrics(struct bench_level *L, size_t n)
{
	for (size_t i = 0; L && i < n; i++) {
		cJSON_Delete(L[i].server_metrics);
		L[i].server_metrics = NULL;
	}
}

static int run_level(struct bench *b, struct plan *pl, int64_t level, bool fingerprint_changed,
		     const struct workload_inputs *in, int64_t repeat, struct bench_level *out)
{
	const struct slo *slo = in ? in->slo : NULL;
	struct bench_sample *samples = NULL;
	size_t n = 0;
	struct scrape before;
	int rc = metrics_before(b, in, &before);
	if (!rc)
		rc = bench_run_streams(b, pl->streams, pl->n_streams, &samples, &n);
	plan_free(pl);
	if (!rc)
		rc = bench_level_summarise(b, samples, n, level, out);
	if (!rc)
		rc = metrics_after(b, in, &before, out);
	else
		scrape_finish(&before);
	if (!rc && slo)
		rc = slo_level_apply(slo, samples, n, level, out);
	if (!rc) {
		out->repeat = repeat;
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
	rc = bench_fingerprint(b, NULL, err, errlen);
	if (rc)
		return rc;
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

/* The figures compared across repeated runs: each run's own value (a run's p99 is
 * that run's p99; samples are never pooled across runs into one percentile). */
static const struct {
	const char *name;
	size_t off;
} run_metrics[] = {
	{ "aggregate_tok_s", offsetof(struct bench_level, agg_tok_s) },
	{ "ttft_p50_ms", offsetof(struct bench_level, ttft_p50_ms) },
	{ "ttft_p99_ms", offsetof(struct bench_level, ttft_p99_ms) },
	{ "tpot_ms_mean", offsetof(struct bench_level, tpot_ms_mean) },
	{ "itl_p50_ms", offsetof(struct bench_level, itl_p50_ms) },
	{ "itl_p99_ms", offsetof(struct bench_level, itl_p99_ms) },
	{ "goodput_rps", offsetof(struct bench_level, goodput_rps) },
	{ "slo_attainment", offsetof(struct bench_level, slo_attainment) },
};

/* Mean, Student-t 95 % interval and CV of a level's metric over R runs (the one
 * definition, stats/level.h, that sixi-report bench uses too); runs[r * n_levels + li]. */
static cJSON *across_runs(const struct bench_level *runs, size_t n_levels, size_t li, int64_t R, FILE *out, bool text)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "level", (double)runs[li].level);
	cJSON_AddNumberToObject(o, "runs", (double)R);
	cJSON *m = cJSON_AddObjectToObject(o, "metrics");
	for (size_t k = 0; k < sizeof run_metrics / sizeof run_metrics[0]; k++) {
		if (k >= 6 && !runs[li].has_slo)
			continue;
		double v[1000];
		size_t n = 0;
		for (int64_t r = 0; r < R && r < 1000; r++) {
			const struct bench_level *L = &runs[(size_t)r * n_levels + li];
			double x = *(const double *)((const char *)L + run_metrics[k].off);
			if (L->valid && isfinite(x))
				v[n++] = x;
		}
		struct level_spread S;
		level_spread_compute(v, n, &S);
		double mean = S.mean, sd = S.sd, half = S.high - S.mean, cv = S.cv;
		bool unstable = S.unstable;
		cJSON *e = cJSON_AddObjectToObject(m, run_metrics[k].name);
		cJSON *vals = cJSON_AddArrayToObject(e, "values");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(vals, cJSON_CreateNumber(v[i]));
		cJSON_AddNumberToObject(e, "n", (double)n);
		if (isfinite(mean))
			cJSON_AddNumberToObject(e, "mean", mean);
		if (isfinite(half)) {
			cJSON_AddNumberToObject(e, "low", mean - half);
			cJSON_AddNumberToObject(e, "high", mean + half);
			cJSON_AddNumberToObject(e, "sd", sd);
		}
		if (isfinite(cv))
			cJSON_AddNumberToObject(e, "cv", cv);
		cJSON_AddBoolToObject(e, "unstable", unstable);
		if (text)
		{
			char left[96] = "";
			if (n < (size_t)R)
				snprintf(left, sizeof left, "  (%lld of %lld runs left out: invalid or no value)",
					 (long long)R - (long long)n, (long long)R);
			fprintf(out, "%6lld %-16s %12.3f  [%.3f, %.3f]  cv %5.1f%%%s%s\n", (long long)runs[li].level,
				run_metrics[k].name, mean, mean - half, mean + half, 100 * cv, unstable ? "  UNSTABLE (cv > 20%)" : "",
				left);
		}
	}
	return o;
}

/* The server's own view of each level (--metrics): its derived ratios and counters. */
static void print_server_metrics(FILE *out, const char *what, const struct bench_level *L, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const cJSON *m = L[i].server_metrics;
		if (!m)
			continue;
		const cJSON *acc = cJSON_GetObjectItem(m, "spec_acceptance"), *hit = cJSON_GetObjectItem(m, "prefix_cache_hit_rate");
		const cJSON *c = cJSON_GetObjectItem(m, "counters");
		fprintf(out, "  %s %lld server: %d counters changed", what, (long long)L[i].level, cJSON_GetArraySize(c));
		if (cJSON_IsNumber(acc))
			fprintf(out, ", speculative acceptance %.3f", acc->valuedouble);
		if (cJSON_IsNumber(hit))
			fprintf(out, ", prefix cache hit rate %.3f", hit->valuedouble);
		fprintf(out, "\n");
	}
}

static void print_slo(FILE *out, const char *what, const struct bench_level *L, size_t n)
{
	print_server_metrics(out, what, L, n);
	for (size_t i = 0; i < n; i++) {
		if (!L[i].has_slo)
			continue;
		fprintf(out, "  %s %lld%s: SLO attainment %.1f%% [%.1f, %.1f] (%lld of %lld good), goodput %.3f req/s%s%s\n",
			what, (long long)L[i].level, L[i].repeat ? " run" : "", 100 * L[i].slo_attainment, 100 * L[i].slo_low,
			100 * L[i].slo_high, (long long)L[i].slo_good, (long long)L[i].slo_scheduled, L[i].goodput_rps,
			L[i].slo_level_met ? "" : "; level terms failed: ", L[i].slo_failed);
	}
}

int workload_sweep(struct bench *b, const struct sweep_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "sweep");
	int64_t R = p->repeats > 0 ? p->repeats : 1;
	struct bench_level *levels = calloc(p->n_levels * (size_t)R, sizeof *levels);
	struct picker pk;
	if (!levels || picker_init(&pk, b, p->in, 0x5eeb) != 0) {
		free(levels);
		return -ENOMEM;
	}
	/* runs are interleaved (every level once, then again) so a slow drift of the
	 * server spreads over all levels instead of biasing the last ones */
	for (int64_t rep = 0; rep < R && !rc; rep++) {
		for (size_t li = 0; li < p->n_levels; li++) {
			int64_t conc = p->levels[li];
			bool changed = false;
			if ((rc = bench_fingerprint(b, &changed, err, errlen)) != 0)
				break;
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
					rq->seq = rep * c->rounds + r;
					rq->phase = "measure";
					rc = pick_body(&pk, conc * 100000 + s, rep * c->rounds + r, 0, 0, rq);
				}
			}
			if (rc) {
				plan_free(&pl);
				break;
			}
			struct bench_level *L = &levels[(size_t)rep * p->n_levels + li];
			if ((rc = run_level(b, &pl, conc, changed, p->in, R > 1 ? rep + 1 : 0, L)) != 0)
				break;
			if (!c->json && !c->quiet)
				fprintf(out, "  concurrency %lld%s: %.1f tok/s aggregate, %lld/%lld ok\n", (long long)conc,
					R > 1 ? " (run)" : "", L->agg_tok_s, (long long)L->ok, (long long)L->requests);
		}
	}
	picker_finish(&pk);
	if (!rc) {
		size_t all = p->n_levels * (size_t)R;
		cJSON *acr = R > 1 ? cJSON_CreateArray() : NULL;
		bool text = !c->json;
		if (text)
			print_levels(out, "conc", levels, all);
		if (text)
			print_slo(out, "conc", levels, all);
		if (acr && text)
			fprintf(out, "across %lld runs (mean, t 95%% interval, coefficient of variation; each run's own "
				     "percentiles):\n", (long long)R);
		for (size_t li = 0; acr && li < p->n_levels; li++)
			cJSON_AddItemToArray(acr, across_runs(levels, p->n_levels, li, R, out, text));
		if (acr) {
			cJSON *w = cJSON_CreateObject();
			cJSON_AddItemReferenceToObject(w, "across_runs", acr);
			char *ws = cJSON_PrintUnformatted(w);
			cJSON_Delete(w);
			if (!ws || store_run_set_summary(bench_store(b), bench_run_id(b), ws) != 0)
				log_warn("could not store the across-runs summary");
			free(ws);
		}
		if (c->json) {
			cJSON *d = NULL;
			if (acr) {
				d = cJSON_CreateObject();
				cJSON_AddItemToObject(d, "across_runs", acr);
				acr = NULL;
			}
			print_json(out, b, "sweep", levels, all, d);
		}
		cJSON_Delete(acr);
		if (!c->no_plots)
			plot_sweep(b, levels, p->n_levels, c->json ? stderr : out);
	}
	levels_free_metrics(levels, p->n_levels * (size_t)R);
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
		bool changed = false;
		if ((rc = bench_fingerprint(b, &changed, err, errlen)) != 0)
			break;
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
			rc = run_level(b, &pl, len, changed, NULL, 0, &levels[li]);
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
	} else if (nd == 0 || nf == 0) { /* the workload's figures are these waits: none, no result */
		L.valid = false;
		snprintf(L.invalid_reason, sizeof L.invalid_reason,
			 "no first token measured for any %s (%lld of %zu requests failed; a reply that streams no text "
			 "has no first token)", nd == 0 ? "document" : "follow-up", (long long)errors, n);
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

int workload_rate(struct bench *b, const struct rate_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "rate");
	/* the schedule, fixed before anything is sent */
	size_t n_arr = 0;
	double *arr = NULL;
	struct plan pl = { 0 };
	const struct arrival_trace *tr = p->trace;
	if (tr) {
		arr = malloc((tr->n ? tr->n : 1) * sizeof *arr);
		if (!arr)
			return -ENOMEM;
		memcpy(arr, tr->t_s, tr->n * sizeof *arr);
		n_arr = tr->n;
	} else if ((rc = arrival_schedule(&p->arrival, p->rps, p->duration_s, (size_t)(p->rps * p->duration_s * 4 + 64),
					  c->seed ^ 0x9a7eULL, &arr, &n_arr)) != 0) {
		return rc;
	}
	int64_t level = tr ? 1 : (int64_t)llround(p->rps) > 0 ? (int64_t)llround(p->rps) : 1;
	struct picker pk;
	if ((rc = plan_alloc(&pl, n_arr, n_arr)) != 0 || (rc = picker_init(&pk, b, p->in, 0x9a7e)) != 0) {
		plan_free(&pl);
		free(arr);
		return rc;
	}
	for (size_t i = 0; i < n_arr && !rc; i++) {
		struct runner_req *rq = &pl.reqs[i];
		rq->level = level;
		rq->stream = (int64_t)i;
		rq->phase = "measure";
		pl.streams[i].reqs = rq;
		pl.streams[i].n = 1;
		rc = pick_body(&pk, 600000 + (int64_t)i, 0, tr ? tr->input_tokens[i] : 0, tr ? tr->output_tokens[i] : 0, rq);
	}
	picker_finish(&pk);
	int64_t t0 = clock_now_ns() + 100000000LL; /* bodies are ready; start 100 ms from now */
	for (size_t i = 0; i < n_arr; i++)
		pl.reqs[i].t_intended_ns = t0 + (int64_t)(arr[i] * 1e9);
	free(arr);
	struct bench_sample *samples = NULL;
	size_t n = 0;
	struct scrape before;
	if (!rc)
		rc = metrics_before(b, p->in, &before);
	if (!rc)
		rc = bench_run_streams(b, pl.streams, pl.n_streams, &samples, &n);
	plan_free(&pl);
	if (rc) {
		bench_samples_free(samples, n);
		return rc;
	}
	struct bench_level L;
	memset(&L, 0, sizeof L);
	if (metrics_after(b, p->in, &before, &L) != 0) {
		bench_samples_free(samples, n);
		return -ENOMEM;
	}
	cJSON *server_metrics = L.server_metrics;
	/* latency from the intended send time, and the lag of the client itself */
	double *e2e = calloc(n + 1, sizeof *e2e), *lag = calloc(n + 1, sizeof *lag);
	if (!e2e || !lag || bench_level_summarise(b, samples, n, level, &L) != 0 ||
	    (p->in && p->in->slo && slo_level_apply(p->in->slo, samples, n, level, &L) != 0)) {
		free(e2e);
		free(lag);
		cJSON_Delete(server_metrics);
		bench_samples_free(samples, n);
		return -ENOMEM;
	}
	L.server_metrics = server_metrics; /* summarising cleared it */
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
		if (tr)
			fprintf(out, "open loop: trace replay, %zu requests over %.1f s\n", n, n ? tr->t_s[tr->n - 1] : 0.0);
		else
			fprintf(out, "open loop: %.2f req/s for %.0f s, %zu requests scheduled (%s%s)\n", p->rps,
				p->duration_s, n,
				p->arrival.kind == ARRIVAL_GAMMA ? "gamma" : p->arrival.kind == ARRIVAL_CONSTANT ? "constant"
													: "Poisson",
				p->arrival.ramp == RAMP_NONE ? "" : p->arrival.ramp == RAMP_LINEAR ? ", linear ramp" : ", exponential ramp");
		print_levels(out, "rps", &L, 1);
		print_slo(out, "rps", &L, 1);
		fprintf(out, "  end-to-end latency from intended send: p50 %.1f ms  p99 %.1f ms\n", e50, e99);
		fprintf(out, "  client send lag p99 %.2f ms%s\n", lag99,
			isfinite(lag99) && lag99 > 500 ? "  (client overloaded: results invalid)" : "");
		cJSON_Delete(d);
	}
	free(e2e);
	free(lag);
	cJSON_Delete(L.server_metrics);
	bench_samples_free(samples, n);
	return 0;
}

/* ---- replay: multi-turn conversations ---- */

struct turn_ref {
	size_t conv;           /* index into the source */
	size_t turn;           /* 0-based user turn */
};

struct replay {
	struct bench *b;
	const struct source *src;
	double think_s;
	char ***replies;       /* (n_conv, turns) the model's reply to each turn, owned */
	size_t n_conv;
};

/* The request of turn k: the conversation up to its k-th user turn, the model's own
 * replies in place of the dataset's. Chat: a messages array; completions: a
 * transcript in which each turn's prompt is the previous prompt, its reply and
 * the new user turn, byte for byte (so a prefix cache can serve it). */
static int replay_build(void *ud, struct runner_req *rq, int64_t now_ns)
{
	struct replay *r = ud;
	const struct turn_ref *t = rq->user;
	const struct source_conv *c = &r->src->c[t->conv];
	bool chat = bench_config(r->b)->api == OPENAI_CHAT;
	cJSON *msgs = chat ? cJSON_CreateArray() : NULL;
	struct buf tx;
	buf_init(&tx);
	int rc = chat && !msgs ? -ENOMEM : 0;
	size_t user = 0;
	for (size_t i = 0; i < c->n && !rc && user <= t->turn; i++) {
		const struct source_msg *m = &c->m[i];
		if (m->role == SOURCE_ASSISTANT)
			continue; /* the dataset's reply: the model's own is sent instead */
		const char *reply = NULL;
		if (m->role == SOURCE_USER) {
			if (user < t->turn)
				reply = r->replies[t->conv][user] ? r->replies[t->conv][user] : "";
			user++;
		}
		if (chat) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "role", source_role_name(m->role));
			cJSON_AddStringToObject(o, "content", m->text);
			cJSON_AddItemToArray(msgs, o);
			if (reply) {
				o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "role", "assistant");
				cJSON_AddStringToObject(o, "content", reply);
				cJSON_AddItemToArray(msgs, o);
			}
		} else if (m->role == SOURCE_SYSTEM) {
			rc = buf_printf(&tx, "%sSystem: %s", tx.len ? "\n\n" : "", m->text);
		} else {
			rc = buf_printf(&tx, "%sUser: %s\n\nAssistant:", tx.len ? "\n\n" : "", m->text);
			if (!rc && reply)
				rc = buf_puts(&tx, reply);
		}
	}
	char *mj = chat && !rc ? cJSON_PrintUnformatted(msgs) : NULL;
	if (!rc && chat && !mj)
		rc = -ENOMEM;
	if (!rc)
		rc = bench_body_text(r->b, chat ? NULL : tx.data, mj, rq->requested_tokens, &rq->body, &rq->body_len);
	free(mj);
	cJSON_Delete(msgs);
	buf_finish(&tx);
	if (!rc && t->turn > 0 && r->think_s > 0)
		rq->t_intended_ns = now_ns + (int64_t)(r->think_s * 1e9);
	return rc;
}

static void replay_reply(void *ud, const struct runner_req *rq, const char *text, size_t len)
{
	struct replay *r = ud;
	const struct turn_ref *t = rq->user;
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, text ? text : "", len);
		s[len] = 0;
	}
	free(r->replies[t->conv][t->turn]);
	r->replies[t->conv][t->turn] = s; /* NULL (out of memory) is sent as an empty reply */
}

int workload_replay(struct bench *b, const struct replay_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	const struct source *src = p->in ? p->in->src : NULL;
	if (!src) {
		err_set(err, errlen, "replay needs --prompts FILE (conversations)");
		return -EINVAL;
	}
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "replay");
	size_t n_conv = src->n < (size_t)p->limit ? src->n : (size_t)p->limit;
	size_t S = (size_t)p->conversations < n_conv ? (size_t)p->conversations : n_conv;
	size_t n_req = 0, max_turns = 0;
	for (size_t i = 0; i < n_conv; i++) {
		size_t k = source_user_turns(&src->c[i]);
		k = k < (size_t)p->max_turns ? k : (size_t)p->max_turns;
		n_req += k;
		max_turns = k > max_turns ? k : max_turns;
	}
	struct replay r = { .b = b, .src = src, .think_s = p->think_s, .n_conv = n_conv };
	struct turn_ref *refs = calloc(n_req ? n_req : 1, sizeof *refs);
	r.replies = calloc(n_conv, sizeof *r.replies);
	struct plan pl = { 0 };
	struct picker pk;
	bool pk_ok = false;
	rc = !refs || !r.replies ? -ENOMEM : plan_alloc(&pl, S, n_req);
	if (!rc)
		rc = picker_init(&pk, b, p->in, 0x7e91a);
	pk_ok = !rc;
	struct bench_sample *samples = NULL;
	size_t n = 0;
	/* conversation i runs on stream i mod S, after the ones before it there */
	size_t k = 0;
	for (size_t s = 0; s < S && !rc; s++) {
		pl.streams[s].reqs = &pl.reqs[k];
		for (size_t i = s; i < n_conv && !rc; i += S) {
			size_t turns = source_user_turns(&src->c[i]);
			turns = turns < (size_t)p->max_turns ? turns : (size_t)p->max_turns;
			if (!(r.replies[i] = calloc(turns ? turns : 1, sizeof **r.replies))) {
				rc = -ENOMEM;
				break;
			}
			for (size_t t = 0; t < turns; t++, k++) {
				struct runner_req *rq = &pl.reqs[k];
				refs[k] = (struct turn_ref){ i, t };
				rq->user = &refs[k];
				rq->level = (int64_t)S;
				rq->stream = (int64_t)i;
				rq->seq = (int64_t)t;
				rq->phase = "measure";
				rq->tag = "turn";
				rq->requested_tokens = pick_output(&pk);
				pl.streams[s].n++;
			}
		}
	}
	if (!rc) {
		struct bench_hooks h = { .build = replay_build, .on_reply = replay_reply, .ud = &r };
		rc = bench_run_streams_with(b, pl.streams, pl.n_streams, &h, &samples, &n);
	}
	if (pk_ok)
		picker_finish(&pk);
	plan_free(&pl);
	struct bench_level L;
	if (!rc)
		rc = bench_level_summarise(b, samples, n, (int64_t)S, &L);
	if (!rc && p->in->slo)
		rc = slo_level_apply(p->in->slo, samples, n, (int64_t)S, &L);
	cJSON *d = NULL;
	if (!rc) {
		bench_level_store(b, &L);
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "conversations", (double)n_conv);
		cJSON_AddNumberToObject(d, "in_flight", (double)S);
		cJSON_AddNumberToObject(d, "think_s", p->think_s);
		cJSON *turns = cJSON_AddArrayToObject(d, "turns");
		if (!c->json)
			fprintf(out, "%zu conversations, %zu at a time, up to %zu turns, think time %.2f s\n%5s %9s %12s %12s %12s\n",
				n_conv, S, max_turns, p->think_s, "turn", "requests", "prompt tok", "cached tok", "TTFT p50 ms");
		double *ttft = malloc((n ? n : 1) * sizeof *ttft);
		for (size_t t = 0; ttft && t < max_turns; t++) {
			int64_t cnt = 0, pt = 0, ct = 0;
			size_t m = 0;
			for (size_t i = 0; i < n; i++) {
				const struct bench_sample *x = &samples[i];
				if (strcmp(x->phase, "measure") || x->seq != (int64_t)t || x->error)
					continue;
				cnt++;
				pt += x->prompt_tokens > 0 ? x->prompt_tokens : 0;
				ct += x->cached_tokens > 0 ? x->cached_tokens : 0;
				int64_t start = x->t_intended ? x->t_intended : x->t_send;
				if (x->t_first_token)
					ttft[m++] = (double)(x->t_first_token - start) / 1e6;
			}
			double p50 = bench_percentile(ttft, m, 50);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "turn", (double)(t + 1));
			cJSON_AddNumberToObject(o, "requests", (double)cnt);
			cJSON_AddNumberToObject(o, "prompt_tokens_mean", cnt ? (double)pt / (double)cnt : 0);
			cJSON_AddNumberToObject(o, "cached_tokens_mean", cnt ? (double)ct / (double)cnt : 0);
			if (isfinite(p50))
				cJSON_AddNumberToObject(o, "ttft_p50_ms", p50);
			cJSON_AddItemToArray(turns, o);
			if (!c->json)
				fprintf(out, "%5zu %9lld %12.1f %12.1f %12.1f\n", t + 1, (long long)cnt,
					cnt ? (double)pt / (double)cnt : 0, cnt ? (double)ct / (double)cnt : 0, p50);
		}
		free(ttft);
		if (c->json) {
			print_json(out, b, "replay", &L, 1, d);
		} else {
			print_levels(out, "conv", &L, 1);
			print_slo(out, "conv", &L, 1);
			cJSON_Delete(d);
		}
	}
	for (size_t i = 0; r.replies && i < n_conv; i++) {
		for (size_t t = 0; r.replies[i] && t < (size_t)p->max_turns && t < source_user_turns(&src->c[i]); t++)
			free(r.replies[i][t]);
		free(r.replies[i]);
	}
	free(r.replies);
	free(refs);
	bench_samples_free(samples, n);
	return rc;
}

/* ---- prefix: groups sharing a long prefix ---- */

int workload_prefix(struct bench *b, const struct prefix_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "prefix");
	int64_t G = p->groups, R = p->requests;
	bool chat = c->api == OPENAI_CHAT;
	struct plan pl;
	if ((rc = plan_alloc(&pl, (size_t)G, (size_t)(G * (R + 1)))) != 0) {
		plan_free(&pl);
		return rc;
	}
	uint64_t seed = c->seed ^ (uint64_t)bench_run_id(b) << 20;
	double tpw = bench_tokens_per_word(b);
	size_t k = 0;
	for (int64_t g = 0; g < G && !rc; g++) {
		pl.streams[g].reqs = &pl.reqs[k];
		pl.streams[g].n = (size_t)(R + 1);
		char *prefix = prompt_make(seed, 500000 + g, 0, prompt_words_for(p->prefix_tokens, tpw));
		for (int64_t r = 0; r <= R && !rc && prefix; r++, k++) {
			struct runner_req *rq = &pl.reqs[k];
			rq->level = G;
			rq->stream = g;
			rq->seq = r;
			rq->phase = "measure";
			rq->tag = r == 0 ? "prime" : "shared";
			rq->requested_tokens = r == 0 ? 1 : c->max_tokens;
			char *q = r == 0 ? NULL : prompt_make(seed, 510000 + g, r, prompt_words_for(p->question_tokens, tpw));
			if (r > 0 && !q) {
				rc = -ENOMEM;
				break;
			}
			if (chat) {
				const char *roles[2] = { "system", "user" }, *texts[2] = { prefix, q };
				char *mj = messages_json(roles, texts, r == 0 ? 1 : 2);
				rc = mj ? bench_body_text(b, NULL, mj, rq->requested_tokens, &rq->body, &rq->body_len) : -ENOMEM;
				free(mj);
			} else {
				struct buf t;
				buf_init(&t);
				rc = buf_printf(&t, "%s%s%s", prefix, q ? " " : "", q ? q : "");
				if (!rc)
					rc = bench_body_text(b, t.data, NULL, rq->requested_tokens, &rq->body, &rq->body_len);
				buf_finish(&t);
			}
			free(q);
		}
		if (!prefix)
			rc = -ENOMEM;
		free(prefix);
	}
	struct bench_sample *samples = NULL;
	size_t n = 0;
	if (!rc)
		rc = bench_run_streams(b, pl.streams, pl.n_streams, &samples, &n);
	plan_free(&pl);
	struct bench_level L;
	if (!rc)
		rc = bench_level_summarise(b, samples, n, G, &L);
	if (!rc) {
		/* the shared part of a request is its group's prime, as the server counted it */
		int64_t *prime = calloc((size_t)G, sizeof *prime);
		int64_t offered = 0, cached = 0, hits = 0, shared_n = 0, prime_cached = 0;
		if (!prime) {
			rc = -ENOMEM;
		} else {
			for (size_t i = 0; i < n; i++)
				if (samples[i].seq == 0 && samples[i].stream >= 0 && samples[i].stream < G && !samples[i].error) {
					prime[samples[i].stream] = samples[i].prompt_tokens > 0 ? samples[i].prompt_tokens : 0;
					prime_cached += samples[i].cached_tokens > 0 ? samples[i].cached_tokens : 0;
				}
			for (size_t i = 0; i < n; i++) {
				const struct bench_sample *x = &samples[i];
				if (x->seq == 0 || x->error || x->stream < 0 || x->stream >= G)
					continue;
				shared_n++;
				offered += prime[x->stream];
				cached += x->cached_tokens > 0 ? x->cached_tokens : 0;
				hits += x->cached_tokens > 0;
			}
		}
		free(prime);
		if (!rc) {
			bench_level_store(b, &L);
			cJSON *d = cJSON_CreateObject();
			cJSON_AddNumberToObject(d, "groups", (double)G);
			cJSON_AddNumberToObject(d, "prefix_tokens", (double)p->prefix_tokens);
			cJSON_AddNumberToObject(d, "requests_per_group", (double)R);
			cJSON_AddNumberToObject(d, "shared_requests", (double)shared_n);
			cJSON_AddNumberToObject(d, "shared_prefix_tokens", (double)offered);
			cJSON_AddNumberToObject(d, "cached_tokens", (double)cached);
			cJSON_AddNumberToObject(d, "prime_cached_tokens", (double)prime_cached);
			cJSON_AddNumberToObject(d, "requests_with_cache_hit", (double)hits);
			cJSON_AddNumberToObject(d, "reuse", offered > 0 ? (double)cached / (double)offered : 0);
			char *ds = cJSON_PrintUnformatted(d);
			char *wrapped = ds ? malloc(strlen(ds) + 16) : NULL;
			if (wrapped)
				sprintf(wrapped, "{\"prefix\":%s}", ds);
			if (!wrapped || store_run_set_summary(bench_store(b), bench_run_id(b), wrapped) != 0)
				log_warn("could not store the prefix summary");
			free(wrapped);
			free(ds);
			if (c->json) {
				print_json(out, b, "prefix", &L, 1, d);
			} else {
				fprintf(out, "%lld groups x %lld requests sharing a %lld-token prefix (each group's prefix sent "
					     "alone first)\n", (long long)G, (long long)R, (long long)p->prefix_tokens);
				fprintf(out, "  shared prefix tokens %lld, cached_tokens reported %lld (%.1f%%), %lld of %lld "
					     "requests hit the cache\n", (long long)offered, (long long)cached,
					offered > 0 ? 100.0 * (double)cached / (double)offered : 0.0, (long long)hits,
					(long long)shared_n);
				print_levels(out, "groups", &L, 1);
				cJSON_Delete(d);
			}
		}
	}
	bench_samples_free(samples, n);
	return rc;
}

/* ---- search: the highest load that meets the SLO ---- */

/* Over-saturation of an open-loop level: the queue grows without bound. After each
 * finished request the backlog B(t) = requests due by t - requests finished is
 * compared with its value at half the elapsed time; the level is stopped once, with
 * at least 16 requests due, B >= 8 and B >= 1.5 x B(t/2) + 1 on three finishes in a
 * row. A stable queue keeps B about constant (B = 2 x B(t/2) cannot persist); a
 * server short of capacity by any margin grows B linearly, doubling every doubling
 * of t. */
struct satmon {
	const int64_t *due;    /* (n_due) due times, ascending */
	size_t n_due, done, n_hist, cap_hist;
	int64_t t0;
	int64_t *ht, *hb;      /* (n_hist) time and backlog at each finish */
	int streak;
	int64_t backlog, backlog_half;
	_Atomic bool stop;
	bool oom;
};

static void satmon_sample(void *ud, const struct bench_sample *x)
{
	struct satmon *m = ud;
	int64_t now = x->t_done ? x->t_done : clock_now_ns();
	m->done++;
	size_t lo = 0, hi = m->n_due; /* due by now: upper bound */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->due[mid] <= now)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t due = (int64_t)lo, b = due - (int64_t)m->done;
	if (m->n_hist == m->cap_hist) {
		size_t c = m->cap_hist ? 2 * m->cap_hist : 256;
		int64_t *a = realloc(m->ht, c * sizeof *a);
		if (a)
			m->ht = a;
		int64_t *z = realloc(m->hb, c * sizeof *z);
		if (z)
			m->hb = z;
		if (!a || !z) {
			m->oom = true;
			return;
		}
		m->cap_hist = c;
	}
	m->ht[m->n_hist] = now;
	m->hb[m->n_hist++] = b;
	int64_t half_t = m->t0 + (now - m->t0) / 2, bh = 0;
	for (size_t i = 0; i < m->n_hist && m->ht[i] <= half_t; i++)
		bh = m->hb[i];
	if (due >= 16 && b >= 8 && (double)b >= 1.5 * (double)bh + 1)
		m->streak++;
	else
		m->streak = 0;
	if (m->streak >= 3 && !atomic_load(&m->stop)) {
		m->backlog = b;
		m->backlog_half = bh;
		atomic_store(&m->stop, true);
	}
}

struct probe {
	double x;              /* offered rate (req/s) or concurrency */
	int64_t runs, good, scheduled;
	double low, high;      /* Wilson 95 % of the pooled attainment */
	double tok_s, e2e_p50_ms, goodput_rps; /* means over the runs */
	bool pass, saturated;
	char why[256];
};

/* One run of a probe: N requests at rate x (open loop) or x streams (closed loop). */
static int probe_run(struct bench *b, const struct search_params *p, struct picker *pk, int64_t level, double x,
		     int64_t run, struct probe *pr)
{
	const struct bench_cfg *c = bench_config(b);
	int64_t N = p->requests;
	size_t n_streams = p->concurrency ? (size_t)x : (size_t)N;
	int64_t per = p->concurrency ? (N + (int64_t)x - 1) / (int64_t)x : 1;
	struct plan pl = { 0 };
	double *t = NULL;
	size_t nt = 0;
	int rc = plan_alloc(&pl, n_streams, n_streams * (size_t)per);
	if (!rc && !p->concurrency)
		rc = arrival_schedule(&p->arrival, x, 1e9, (size_t)N, c->seed ^ (uint64_t)(level * 7919 + run), &t, &nt);
	int64_t *due = !rc ? calloc(nt ? nt : 1, sizeof *due) : NULL;
	if (!rc && !due)
		rc = -ENOMEM;
	size_t k = 0;
	for (size_t s = 0; s < n_streams && !rc; s++) {
		pl.streams[s].reqs = &pl.reqs[k];
		pl.streams[s].n = (size_t)per;
		for (int64_t r = 0; r < per && !rc; r++, k++) {
			struct runner_req *rq = &pl.reqs[k];
			rq->level = level;
			rq->stream = (int64_t)s;
			rq->seq = run * per + r;
			rq->phase = "measure";
			rq->tag = "search";
			rc = pick_body(pk, 400000 + level * 1000000 + (int64_t)s, run * per + r, 0, 0, rq);
		}
	}
	struct satmon m = { .due = due, .n_due = nt };
	if (!rc && !p->concurrency) {
		int64_t t0 = clock_now_ns() + 100000000LL;
		m.t0 = t0;
		for (size_t i = 0; i < nt; i++)
			due[i] = pl.reqs[i].t_intended_ns = t0 + (int64_t)(t[i] * 1e9);
	}
	free(t);
	struct bench_sample *samples = NULL;
	size_t n = 0;
	if (!rc) {
		struct bench_hooks h = { .on_sample = p->concurrency ? NULL : satmon_sample, .ud = &m, .stop = &m.stop };
		rc = bench_run_streams_with(b, pl.streams, pl.n_streams, &h, &samples, &n);
	}
	plan_free(&pl);
	struct bench_level L;
	if (!rc)
		rc = bench_level_summarise(b, samples, n, level, &L);
	if (!rc)
		rc = slo_level_apply(p->in->slo, samples, n, level, &L);
	if (!rc) {
		L.repeat = run + 1;
		bool sat = atomic_load(&m.stop);
		if (sat) {
			L.valid = false;
			snprintf(L.invalid_reason, sizeof L.invalid_reason,
				 "over-saturated: stopped early, backlog %lld requests and rising (%lld at half the time)",
				 (long long)m.backlog, (long long)m.backlog_half);
			pr->saturated = true;
			snprintf(pr->why, sizeof pr->why, "over-saturated (backlog %lld, %lld at half the time)",
				 (long long)m.backlog, (long long)m.backlog_half);
		}
		bench_level_store(b, &L);
		double *e2e = malloc((n ? n : 1) * sizeof *e2e);
		size_t ne = 0;
		for (size_t i = 0; e2e && i < n; i++)
			if (!samples[i].error && samples[i].t_done && samples[i].level == level)
				e2e[ne++] = (double)(samples[i].t_done -
						     (samples[i].t_intended ? samples[i].t_intended : samples[i].t_send)) / 1e6;
		double e50 = bench_percentile(e2e, ne, 50);
		free(e2e);
		pr->runs++;
		pr->good += L.slo_good;
		pr->scheduled += L.slo_scheduled;
		pr->tok_s += (L.agg_tok_s - pr->tok_s) / (double)pr->runs;
		pr->goodput_rps += (L.goodput_rps - pr->goodput_rps) / (double)pr->runs;
		pr->e2e_p50_ms += ((isfinite(e50) ? e50 : 0) - pr->e2e_p50_ms) / (double)pr->runs;
		if (!L.slo_level_met && !pr->why[0])
			snprintf(pr->why, sizeof pr->why, "level terms failed: %s", L.slo_failed);
		if (m.oom)
			rc = -ENOMEM;
	}
	free(m.ht);
	free(m.hb);
	free(due);
	bench_samples_free(samples, n);
	return rc;
}

/* Runs a probe `repeats` times (fewer when it is over-saturated) and decides it:
 * pass when the Wilson lower bound of good / scheduled over all its runs reaches
 * the target, every level term held, and it was never over-saturated. */
static int probe_eval(struct bench *b, const struct search_params *p, struct picker *pk, int64_t level, double x,
		      struct probe *pr, FILE *out)
{
	memset(pr, 0, sizeof *pr);
	pr->x = x;
	int rc = 0;
	for (int64_t r = 0; r < p->repeats && !rc && !pr->saturated; r++)
		rc = probe_run(b, p, pk, level, x, r, pr);
	if (rc)
		return rc;
	if (stats_wilson(pr->good, pr->scheduled, 0.95, &pr->low, &pr->high) != 0)
		return -EINVAL;
	pr->pass = !pr->saturated && !pr->why[0] && pr->low >= p->target;
	if (!bench_config(b)->json && !bench_config(b)->quiet)
		fprintf(out, "  probe %lld: %s %.3f  attainment %lld/%lld, lower bound %.3f %s target %.3f  %s%s%s\n",
			(long long)level, p->concurrency ? "concurrency" : "rate", x, (long long)pr->good,
			(long long)pr->scheduled, pr->low, pr->low >= p->target ? ">=" : "<", p->target,
			pr->pass ? "pass" : "FAIL", pr->why[0] ? ": " : "", pr->why);
	return 0;
}

/* Kneedle (Satopaa, Albrecht, Irwin, Raghavan 2011): with latency on x and
 * throughput on y, both scaled to [0, 1], the knee of a concave rising curve is
 * the point farthest above the diagonal, max(y - x). Points sorted by latency. */
static int knee_of(const struct probe *pr, size_t n)
{
	int idx[64];
	size_t m = 0;
	for (size_t i = 0; i < n && m < 64; i++)
		if (!pr[i].saturated && pr[i].runs > 0)
			idx[m++] = (int)i;
	if (m < 3)
		return -1;
	for (size_t i = 1; i < m; i++)
		for (size_t j = i; j > 0 && pr[idx[j]].e2e_p50_ms < pr[idx[j - 1]].e2e_p50_ms; j--) {
			int t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	double x0 = pr[idx[0]].e2e_p50_ms, x1 = pr[idx[m - 1]].e2e_p50_ms, y0 = INFINITY, y1 = -INFINITY;
	for (size_t i = 0; i < m; i++) {
		y0 = fmin(y0, pr[idx[i]].tok_s);
		y1 = fmax(y1, pr[idx[i]].tok_s);
	}
	if (!(x1 > x0) || !(y1 > y0))
		return -1;
	int best = -1;
	double bd = 0;
	for (size_t i = 0; i < m; i++) {
		double d = (pr[idx[i]].tok_s - y0) / (y1 - y0) - (pr[idx[i]].e2e_p50_ms - x0) / (x1 - x0);
		if (d > bd) {
			bd = d;
			best = idx[i];
		}
	}
	return best;
}

static cJSON *probe_json(const struct probe *pr, int64_t level)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "probe", (double)level);
	cJSON_AddNumberToObject(o, "load", pr->x);
	cJSON_AddNumberToObject(o, "runs", (double)pr->runs);
	cJSON_AddNumberToObject(o, "good", (double)pr->good);
	cJSON_AddNumberToObject(o, "scheduled", (double)pr->scheduled);
	cJSON_AddNumberToObject(o, "attainment", pr->scheduled ? (double)pr->good / (double)pr->scheduled : 0);
	cJSON_AddNumberToObject(o, "attainment_low", pr->low);
	cJSON_AddNumberToObject(o, "attainment_high", pr->high);
	cJSON_AddNumberToObject(o, "aggregate_tok_s", pr->tok_s);
	cJSON_AddNumberToObject(o, "goodput_rps", pr->goodput_rps);
	cJSON_AddNumberToObject(o, "e2e_p50_ms", pr->e2e_p50_ms);
	cJSON_AddBoolToObject(o, "pass", pr->pass);
	cJSON_AddBoolToObject(o, "over_saturated", pr->saturated);
	cJSON_AddStringToObject(o, "why", pr->why);
	return o;
}

int workload_search(struct bench *b, const struct search_params *p, FILE *out, char *err, size_t errlen)
{
	const struct bench_cfg *c = bench_config(b);
	if (!p->in || !p->in->slo) {
		err_set(err, errlen, "search needs --slo (what a request must meet), e.g. --slo ttft=500ms,e2e=10s");
		return -EINVAL;
	}
	int rc = prepare(b, err, errlen);
	if (rc)
		return rc;
	header(out, b, "search");
	struct probe pr[64];
	size_t np = 0;
	struct picker pk;
	if ((rc = picker_init(&pk, b, p->in, 0x5ea6c)) != 0)
		return rc;
	double lo = p->lo, hi = p->hi;
	bool at_least_hi = false, below_lo = false;
	int64_t max_probes = p->max_probes < 64 ? p->max_probes : 64;
	/* the bracket's ends first: the top must fail and the bottom pass for a bisection */
	rc = probe_eval(b, p, &pk, (int64_t)np + 1, hi, &pr[np], out);
	if (!rc && pr[np++].pass)
		at_least_hi = true;
	if (!rc && !at_least_hi) {
		rc = probe_eval(b, p, &pk, (int64_t)np + 1, lo, &pr[np], out);
		if (!rc && !pr[np++].pass)
			below_lo = true;
	}
	while (!rc && !at_least_hi && !below_lo && (int64_t)np < max_probes) {
		double mid = (lo + hi) / 2;
		if (p->concurrency) {
			if (hi - lo <= 1)
				break;
			mid = floor(mid);
		} else if ((hi - lo) / lo <= p->tolerance) {
			break;
		}
		rc = probe_eval(b, p, &pk, (int64_t)np + 1, mid, &pr[np], out);
		if (rc)
			break;
		if (pr[np++].pass)
			lo = mid;
		else
			hi = mid;
	}
	picker_finish(&pk);
	if (rc)
		return rc;
	const struct probe *best = NULL;
	for (size_t i = 0; i < np; i++)
		if (pr[i].pass && pr[i].x == (at_least_hi ? hi : lo))
			best = &pr[i];
	int kn = knee_of(pr, np);
	int64_t saturated = 0;
	for (size_t i = 0; i < np; i++)
		saturated += pr[i].saturated;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "mode", p->concurrency ? "concurrency" : "rate");
	cJSON_AddNumberToObject(d, "target", p->target);
	cJSON_AddStringToObject(d, "slo", p->in->slo->text);
	cJSON_AddNumberToObject(d, "requests_per_run", (double)p->requests);
	cJSON_AddNumberToObject(d, "repeats", (double)p->repeats);
	cJSON *arr = cJSON_AddArrayToObject(d, "probes");
	for (size_t i = 0; i < np; i++)
		cJSON_AddItemToArray(arr, probe_json(&pr[i], (int64_t)i + 1));
	cJSON *res = cJSON_AddObjectToObject(d, "result");
	cJSON_AddBoolToObject(res, "bracketed", !at_least_hi && !below_lo);
	if (best) {
		cJSON_AddNumberToObject(res, "sustainable", best->x);
		cJSON_AddNumberToObject(res, "attainment", (double)best->good / (double)best->scheduled);
		cJSON_AddNumberToObject(res, "attainment_low", best->low);
		cJSON_AddNumberToObject(res, "attainment_high", best->high);
		cJSON_AddNumberToObject(res, "goodput_rps", best->goodput_rps);
	} else {
		cJSON_AddNullToObject(res, "sustainable");
	}
	cJSON_AddNumberToObject(res, "bracket_low", at_least_hi ? hi : lo);
	cJSON_AddNumberToObject(res, "bracket_high", hi);
	cJSON_AddNumberToObject(res, "over_saturated_probes", (double)saturated);
	if (kn >= 0) {
		cJSON *k = cJSON_AddObjectToObject(res, "knee");
		cJSON_AddNumberToObject(k, "load", pr[kn].x);
		cJSON_AddNumberToObject(k, "aggregate_tok_s", pr[kn].tok_s);
		cJSON_AddNumberToObject(k, "e2e_p50_ms", pr[kn].e2e_p50_ms);
	}
	char *ds = cJSON_PrintUnformatted(d);
	char *wrapped = ds ? malloc(strlen(ds) + 16) : NULL;
	if (wrapped)
		sprintf(wrapped, "{\"search\":%s}", ds);
	if (!wrapped || store_run_set_summary(bench_store(b), bench_run_id(b), wrapped) != 0)
		log_warn("could not store the search summary");
	free(wrapped);
	free(ds);
	if (c->json) {
		char *s = cJSON_Print(d);
		fprintf(out, "{\"run\": %lld, \"workload\": \"search\", \"detail\": %s}\n", (long long)bench_run_id(b), s);
		free(s);
	} else {
		const char *unit = p->concurrency ? "streams" : "req/s";
		if (at_least_hi)
			fprintf(out, "the top of the range (%g %s) meets the SLO: the sustainable load is at least that; raise --hi\n",
				hi, unit);
		else if (below_lo)
			fprintf(out, "the bottom of the range (%g %s) misses the SLO: lower --lo\n", lo, unit);
		else if (best)
			fprintf(out, "sustainable: %g %s (bracket [%g, %g]), attainment %.1f%% [%.1f, %.1f] (Wilson 95%%), goodput "
				     "%.3f req/s\n", best->x, unit, lo, hi, 100.0 * (double)best->good / (double)best->scheduled,
				100 * best->low, 100 * best->high, best->goodput_rps);
		if (saturated)
			fprintf(out, "%lld probe(s) stopped early: over-saturated (the queue grew without bound)\n",
				(long long)saturated);
		if (kn >= 0)
			fprintf(out, "knee of throughput vs latency: %g %s (%.1f tok/s at e2e p50 %.1f ms)\n", pr[kn].x, unit,
				pr[kn].tok_s, pr[kn].e2e_p50_ms);
	}
	cJSON_Delete(d);
	return 0;
}
