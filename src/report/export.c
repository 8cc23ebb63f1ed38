/* export — see export.h.
 *
 * One pass reads the run's measured rows into memory (a level of a benchmark is
 * thousands of rows, not millions); the chosen level's requests are then summed up
 * per format. Percentiles are linear between order statistics and std is the
 * population one (numpy's defaults, which vLLM and AIPerf use). */
#include "report/export.h"
#include "core/args.h"
#include "core/err.h"
#include "core/json.h"
#include "report/bench.h"
#include "report/db.h"
#include "stats/level.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct export_opts {
	const char *db, *out;
	int format;        /* index into "vllm|aiperf|guidellm" */
	int64_t level;     /* 0: the run's only level */
	int64_t repeat;    /* 0: the run has no repeats */
};

#define O struct export_opts
static const struct args_opt export_options[] = {
	ARGS_STRING_OPT("--db", "DB", O, db, 0, "the database (default results/sixi.db)"),
	ARGS_ENUM_OPT("--format", "vllm|aiperf|guidellm", "format", O, format, 0,
		      "vllm: the JSON that vLLM's bench serve saves (default);\naiperf: AIPerf's profile_export_aiperf.csv;\n"
		      "guidellm: GuideLLM's benchmarks.csv, a row per level"),
	ARGS_INT_OPT("--level", "L", O, level, 1, INT64_MAX, 0,
		     "the level to export (concurrency, rate, ...); required when the run has several\n"
		     "(guidellm: all levels when left out)"),
	ARGS_STRING_OPT("--out", "FILE", O, out, 0, "write FILE (default: standard output)"),
	ARGS_INT_OPT("--repeat", "K", O, repeat, 1, INT64_MAX, 0,
		     "the run of the level to export (1..N) when the sweep ran each level N times"),
	ARGS_TABLE_END,
};
#undef O

static const char usage[] = "usage: sixi-report export RUN [--db DB] [--format vllm|aiperf|guidellm] [--level L] "
			    "[--repeat K] [--out FILE]\n"
			    "  one level of a bench run in vLLM's, AIPerf's or GuideLLM's file format, by their definitions\n";

/* ---- reading the run ---- */

/* One measured request as the formats need it; strings and gaps are owned. */
struct xreq {
	int64_t level, seq, prompt_tokens, completion_tokens; /* -1: not reported */
	int64_t t_intended, t_send, t_first, t_last, t_done;  /* ns; 0: did not happen */
	char *error;                                           /* "class: detail"; NULL on success */
	double *gaps_ms;                                       /* token-bearing event gaps */
	size_t n_gaps;
};

struct xrun {
	struct xreq *r;
	size_t n, cap;
	int64_t levels[64];
	size_t n_levels; /* distinct levels, at most 64 kept for the message */
	bool bad_itl;
};

static void xrun_finish(struct xrun *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->r[i].error);
		free(x->r[i].gaps_ms);
	}
	free(x->r);
}

static int read_row(void *ctx, const struct store_bench_read *s)
{
	struct xrun *x = ctx;
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 256;
		struct xreq *p = realloc(x->r, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		x->r = p;
		x->cap = cap;
	}
	struct xreq *q = &x->r[x->n];
	*q = (struct xreq){ .level = s->level, .seq = s->seq, .prompt_tokens = s->prompt_tokens,
			    .completion_tokens = s->completion_tokens, .t_intended = s->t_intended, .t_send = s->t_send,
			    .t_first = s->t_first_token, .t_last = s->t_last, .t_done = s->t_done };
	int rc = report_bench_gaps(s->itl_json, &q->gaps_ms, &q->n_gaps);
	if (rc == -EINVAL) {
		x->bad_itl = true;
		return -EINVAL;
	}
	if (rc)
		return rc;
	if (s->error) {
		size_t len = strlen(s->error) + (s->error_detail ? strlen(s->error_detail) : 0) + 3;
		if (!(q->error = malloc(len))) {
			free(q->gaps_ms);
			return -ENOMEM;
		}
		snprintf(q->error, len, "%s%s%s", s->error, s->error_detail ? ": " : "", s->error_detail ? s->error_detail : "");
	}
	x->n++;
	if (x->n_levels == 0 || x->levels[x->n_levels - 1] != s->level) /* rows come in level order */
		if (x->n_levels < sizeof x->levels / sizeof x->levels[0])
			x->levels[x->n_levels++] = s->level;
	return 0;
}

/* ---- figures ---- */

/* numpy's mean, median, std (population), percentiles of v[0..n) (sorted here);
 * all 0 when n == 0, as vLLM writes np.mean(x or 0). */
struct dist {
	double mean, median, std, min, max, p[9];
};
static const double dist_pcts[9] = { 1, 5, 10, 25, 50, 75, 90, 95, 99 };

static void dist_of(double *v, size_t n, struct dist *d)
{
	memset(d, 0, sizeof *d);
	if (n == 0)
		return;
	double sum = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	d->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - d->mean) * (v[i] - d->mean);
	d->std = sqrt(ss / (double)n);
	d->median = stats_percentile(v, n, 50); /* sorts v */
	d->min = v[0];
	d->max = v[n - 1];
	for (int k = 0; k < 9; k++)
		d->p[k] = stats_percentile_sorted(v, n, dist_pcts[k]);
}

/* The selected requests' span: earliest start (the intended arrival of an
 * open-loop request, else its send) to the latest end (t_done, else t_last). */
static double duration_s(const struct xreq *const *r, size_t n, bool intended)
{
	int64_t t0 = INT64_MAX, t1 = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t s = intended && r[i]->t_intended ? r[i]->t_intended : r[i]->t_send;
		int64_t e = r[i]->t_done ? r[i]->t_done : r[i]->t_last;
		if (s && s < t0)
			t0 = s;
		if (e > t1)
			t1 = e;
	}
	return t1 > t0 && t0 != INT64_MAX ? (double)(t1 - t0) / 1e9 : 0;
}

static int64_t count_or_zero(int64_t v) { return v > 0 ? v : 0; }

/* ---- vLLM ---- */

static void add_dist_ms(cJSON *o, const char *name, double *v_s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v_s[i] *= 1000;
	struct dist d;
	dist_of(v_s, n, &d);
	char key[48];
	snprintf(key, sizeof key, "mean_%s_ms", name);
	cJSON_AddNumberToObject(o, key, d.mean);
	snprintf(key, sizeof key, "median_%s_ms", name);
	cJSON_AddNumberToObject(o, key, d.median);
	snprintf(key, sizeof key, "std_%s_ms", name);
	cJSON_AddNumberToObject(o, key, d.std);
	snprintf(key, sizeof key, "p99_%s_ms", name);
	cJSON_AddNumberToObject(o, key, d.p[8]);
}

/* vLLM's definitions (benchmark_serving.py calculate_metrics): a request's start
 * is its send; TTFT to the first token-bearing event; its latency (E2EL) to the
 * last one; TPOT = (latency - TTFT) / (output_len - 1) for output_len > 1; ITL the
 * list of event gaps. Failed requests are in the arrays with TTFT 0, no gaps,
 * output length 0 and their error; the statistics are over the completed ones. */
static cJSON *vllm_json(const struct store_run_info *run, const struct xreq *const *r, size_t n, int64_t level,
			int64_t repeat)
{
	cJSON *o = cJSON_CreateObject(), *proto = cJSON_Parse(run->protocol_json ? run->protocol_json : "{}");
	size_t n_gaps = 0;
	for (size_t i = 0; i < n; i++)
		n_gaps += r[i]->n_gaps;
	double *ttft = malloc((n ? n : 1) * sizeof *ttft), *tpot = malloc((n ? n : 1) * sizeof *tpot),
	       *e2el = malloc((n ? n : 1) * sizeof *e2el), *itl = malloc((n_gaps ? n_gaps : 1) * sizeof *itl);
	if (!o || !ttft || !tpot || !e2el || !itl) {
		cJSON_Delete(o);
		o = NULL;
		goto out;
	}
	/* run facts, as vLLM's main() adds them */
	char date[32] = "";
	const char *st = run->started ? run->started : "";
	if (strlen(st) >= 19) /* 2026-12-06T02:27:00Z -> 20261206-022700 */
		snprintf(date, sizeof date, "%.4s%.2s%.2s-%.2s%.2s%.2s", st, st + 5, st + 8, st + 11, st + 14, st + 17);
	cJSON_AddStringToObject(o, "date", date);
	const char *api = json_get_str(proto, "api");
	cJSON_AddStringToObject(o, "backend", api && strcmp(api, "completions") == 0 ? "openai" : "openai-chat");
	cJSON_AddStringToObject(o, "model_id", run->model ? run->model : "");
	cJSON_AddStringToObject(o, "tokenizer_id", run->model ? run->model : "");
	cJSON_AddNumberToObject(o, "num_prompts", (double)n);
	const char *wl = run->workload ? run->workload : "";
	/* the offered load: a rate run's rps; a search probe's load, which its run's
	 * summary keeps (the level is the probe's number); a sweep's level */
	double rps = 0, conc = strcmp(wl, "sweep") == 0 || strcmp(wl, "agents") == 0 ? (double)level : 0, load = 0;
	if (strcmp(wl, "rate") == 0)
		json_get_double(proto, "rps", &rps);
	if (strcmp(wl, "search") == 0) {
		cJSON *sum = cJSON_Parse(run->summary_json ? run->summary_json : "{}");
		const cJSON *probes = json_path(sum, "search.probes"), *p;
		cJSON_ArrayForEach(p, probes)
		{
			int64_t k;
			if (json_get_i64(p, "probe", &k) && k == level && json_get_double(p, "load", &load)) {
				const char *mode = json_get_str(sum, "search.mode");
				if (mode && strcmp(mode, "concurrency") == 0)
					conc = load;
				else
					rps = load;
			}
		}
		cJSON_Delete(sum);
	}
	if (rps > 0)
		cJSON_AddNumberToObject(o, "request_rate", rps);
	else
		cJSON_AddStringToObject(o, "request_rate", "inf");
	const char *arrival = json_get_str(proto, "arrival");
	double burst = 1.0;
	if (arrival && strncmp(arrival, "gamma:", 6) == 0)
		burst = strtod(arrival + 6, NULL);
	cJSON_AddNumberToObject(o, "burstiness", burst);
	if (conc > 0)
		cJSON_AddNumberToObject(o, "max_concurrency", conc);
	else
		cJSON_AddNullToObject(o, "max_concurrency");
	/* the figures */
	size_t nt = 0, np = 0, ne = 0, ni = 0;
	int64_t completed = 0, total_in = 0, total_out = 0;
	for (size_t i = 0; i < n; i++) {
		const struct xreq *q = r[i];
		if (q->error || !q->t_first)
			continue;
		completed++;
		total_in += count_or_zero(q->prompt_tokens);
		total_out += count_or_zero(q->completion_tokens);
		double t = (double)(q->t_first - q->t_send) / 1e9, lat = (double)(q->t_last - q->t_send) / 1e9;
		ttft[nt++] = t;
		e2el[ne++] = lat;
		if (q->completion_tokens > 1)
			tpot[np++] = (lat - t) / (double)(q->completion_tokens - 1);
		for (size_t g = 0; g < q->n_gaps; g++)
			itl[ni++] = q->gaps_ms[g] / 1e3;
	}
	double dur = duration_s(r, n, true);
	cJSON_AddNumberToObject(o, "duration", dur);
	cJSON_AddNumberToObject(o, "completed", (double)completed);
	cJSON_AddNumberToObject(o, "total_input_tokens", (double)total_in);
	cJSON_AddNumberToObject(o, "total_output_tokens", (double)total_out);
	cJSON_AddNumberToObject(o, "request_throughput", dur > 0 ? (double)completed / dur : 0);
	cJSON_AddNumberToObject(o, "output_throughput", dur > 0 ? (double)total_out / dur : 0);
	cJSON_AddNumberToObject(o, "total_token_throughput", dur > 0 ? (double)(total_in + total_out) / dur : 0);
	/* the per-request arrays, one entry per request in (stream, seq) order */
	cJSON *in_l = cJSON_AddArrayToObject(o, "input_lens"), *out_l = cJSON_AddArrayToObject(o, "output_lens"),
	      *tt = cJSON_AddArrayToObject(o, "ttfts"), *its = cJSON_AddArrayToObject(o, "itls"),
	      *texts = cJSON_AddArrayToObject(o, "generated_texts"), *errs = cJSON_AddArrayToObject(o, "errors");
	for (size_t i = 0; i < n; i++) {
		const struct xreq *q = r[i];
		bool ok = !q->error && q->t_first;
		cJSON_AddItemToArray(in_l, cJSON_CreateNumber((double)count_or_zero(q->prompt_tokens)));
		cJSON_AddItemToArray(out_l, cJSON_CreateNumber(ok ? (double)count_or_zero(q->completion_tokens) : 0));
		cJSON_AddItemToArray(tt, cJSON_CreateNumber(ok ? (double)(q->t_first - q->t_send) / 1e9 : 0));
		cJSON *a = cJSON_CreateArray();
		for (size_t g = 0; ok && g < q->n_gaps; g++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(q->gaps_ms[g] / 1e3));
		cJSON_AddItemToArray(its, a);
		cJSON_AddItemToArray(texts, cJSON_CreateNull());
		cJSON_AddItemToArray(errs, cJSON_CreateString(q->error ? q->error : ok ? "" : "no token arrived"));
	}
	add_dist_ms(o, "ttft", ttft, nt);
	add_dist_ms(o, "tpot", tpot, np);
	add_dist_ms(o, "itl", itl, ni);
	add_dist_ms(o, "e2el", e2el, ne);
	cJSON *sx = cJSON_AddObjectToObject(o, "sixi");
	cJSON_AddNumberToObject(sx, "run", (double)run->id);
	cJSON_AddStringToObject(sx, "workload", wl);
	cJSON_AddNumberToObject(sx, "level", (double)level);
	if (repeat)
		cJSON_AddNumberToObject(sx, "repeat", (double)repeat);
	cJSON_AddStringToObject(sx, "definitions", "vLLM's, from sixi's stored timestamps: start = send, TTFT to the "
				"first token-bearing event (vLLM counts a chat stream's role prelude, which sixi does not "
				"store apart), E2EL to the last, TPOT = (E2EL - TTFT) / (N - 1), ITL = event "
				"gaps; generated_texts are null (sixi-bench keeps no reply text); see sixi(7)");
out:
	cJSON_Delete(proto);
	free(ttft);
	free(tpot);
	free(e2el);
	free(itl);
	return o;
}

/* ---- AIPerf ---- */

static int csv_dist(FILE *f, const char *name, double *v, size_t n)
{
	struct dist d;
	dist_of(v, n, &d);
	if (n == 0)
		return fprintf(f, "%s,,,,,,,,,,,,,\n", name) < 0 ? -EIO : 0;
	fprintf(f, "%s,%.6f,%.6f,%.6f", name, d.mean, d.min, d.max);
	for (int k = 0; k < 9; k++)
		fprintf(f, ",%.6f", d.p[k]);
	return fprintf(f, ",%.6f\n", d.std) < 0 ? -EIO : 0;
}

/* AIPerf's definitions: start = the request's send; TTFT to the first non-empty
 * response; Request Latency to the last response (t_done); ITL = (latency - TTFT)
 * / (OSL - 1) per request; throughput per user = 1 / ITL; the run's throughputs
 * over its benchmark duration, earliest send to latest response. */
static int aiperf_csv(FILE *f, const struct xreq *const *r, size_t n)
{
	double *v[6];
	size_t k[6] = { 0 };
	int rc = 0;
	for (int j = 0; j < 6; j++)
		if (!(v[j] = malloc((n ? n : 1) * sizeof *v[j])))
			rc = -ENOMEM;
	int64_t completed = 0, total_out = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct xreq *q = r[i];
		if (q->error || !q->t_first)
			continue;
		completed++;
		total_out += count_or_zero(q->completion_tokens);
		double ttft = (double)(q->t_first - q->t_send) / 1e6;
		double lat = (double)((q->t_done ? q->t_done : q->t_last) - q->t_send) / 1e6;
		v[0][k[0]++] = ttft;
		v[2][k[2]++] = lat;
		if (q->completion_tokens > 1 && lat > ttft) {
			double itl = (lat - ttft) / (double)(q->completion_tokens - 1);
			v[1][k[1]++] = itl;
			v[3][k[3]++] = 1000.0 / itl;
		}
		if (q->completion_tokens >= 0)
			v[4][k[4]++] = (double)q->completion_tokens;
		if (q->prompt_tokens >= 0)
			v[5][k[5]++] = (double)q->prompt_tokens;
	}
	static const char *const names[6] = {
		"Time to First Token (ms)", "Inter Token Latency (ms)", "Request Latency (ms)",
		"Output Token Throughput Per User (tokens/sec/user)", "Output Sequence Length (tokens)",
		"Input Sequence Length (tokens)",
	};
	if (rc == 0 && fprintf(f, "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n") < 0)
		rc = -EIO;
	for (int j = 0; j < 6 && rc == 0; j++)
		rc = csv_dist(f, names[j], v[j], k[j]);
	double dur = duration_s(r, n, false);
	if (rc == 0 && fprintf(f, "\nMetric,Value\nRequest Throughput (requests/sec),%.6f\n"
				  "Output Token Throughput (tokens/sec),%.6f\nRequest Count (requests),%lld\n",
			       dur > 0 ? (double)completed / dur : 0, dur > 0 ? (double)total_out / dur : 0,
			       (long long)completed) < 0)
		rc = -EIO;
	for (int j = 0; j < 6; j++)
		free(v[j]);
	return rc;
}

/* ---- GuideLLM ---- */

/* One distribution in GuideLLM's four columns: mean, median, std, and the list
 * [min, p0.1, p1, p5, p10, p25, p75, p90, p95, p99, max]. */
static void guidellm_dist(FILE *f, double *v, size_t n)
{
	struct dist d;
	dist_of(v, n, &d);
	if (n == 0) {
		fprintf(f, ",,,");
		return;
	}
	static const double p[] = { 0.1, 1, 5, 10, 25, 75, 90, 95, 99 };
	fprintf(f, ",%.9g,%.9g,%.9g,\"[%.9g", d.mean, d.median, d.std, d.min);
	for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
		fprintf(f, ", %.9g", stats_percentile_sorted(v, n, p[k]));
	fprintf(f, ", %.9g]\"", d.max);
}

/* GuideLLM's benchmarks.csv: three header rows (group, field, unit or statistic)
 * and one row per benchmark, here one per level of sel[0..n) (sel is in level
 * order). GuideLLM's definitions: a request starts at its send; TTFT to the first
 * iteration; request latency to its end (t_done), in s; TPOT = latency / output
 * tokens (with the TTFT); ITL = (t_last - t_first) / (output tokens - 1). The
 * distributions are over the successful requests. */
static int guidellm_csv(FILE *f, const struct store_run_info *run, const struct xreq *const *sel, size_t n)
{
	static const char *const dists[][2] = {
		{ "Request Latency", "Successful Sec" },     { "Time to First Token", "Successful ms" },
		{ "Time per Output Token", "Successful ms" }, { "Inter Token Latency", "Successful ms" },
		{ "Token Metrics", "Successful Input Tokens" }, { "Token Metrics", "Successful Output Tokens" },
	};
	enum { ND = sizeof dists / sizeof dists[0] };
	static const char *const stat[] = { "Mean", "Median", "Std Dev", "Percentiles" };
	static const char *const fixed[][3] = {
		{ "Run Info", "Run ID", "" },           { "Benchmark", "ID", "" },
		{ "Benchmark", "Strategy", "" },        { "Timings", "Duration", "Sec" },
		{ "Request Counts", "Successful", "" }, { "Request Counts", "Errored", "" },
		{ "Request Counts", "Total", "" },
	};
	enum { NF = sizeof fixed / sizeof fixed[0] };
	for (int row = 0; row < 3; row++) {
		for (int c = 0; c < NF; c++)
			fprintf(f, "%s%s", c ? "," : "", fixed[c][row]);
		for (int c = 0; c < ND; c++)
			for (int k = 0; k < 4; k++)
				fprintf(f, ",%s", row < 2 ? dists[c][row] : stat[k]);
		fprintf(f, "\n");
	}
	double *v[ND];
	int rc = 0;
	for (int j = 0; j < ND; j++)
		if (!(v[j] = malloc((n ? n : 1) * sizeof *v[j])))
			rc = -ENOMEM;
	const char *wl = run->workload ? run->workload : "";
	cJSON *proto = cJSON_Parse(run->protocol_json ? run->protocol_json : "{}");
	const char *arrival = json_get_str(proto, "arrival");
	const char *strategy = strcmp(wl, "sweep") == 0 || strcmp(wl, "agents") == 0 ? "concurrent"
			       : strcmp(wl, "rate") == 0 ? (arrival && strcmp(arrival, "constant") == 0 ? "constant" : "poisson")
							 : wl;
	for (size_t i0 = 0; rc == 0 && i0 < n;) {
		size_t i1 = i0;
		while (i1 < n && sel[i1]->level == sel[i0]->level)
			i1++;
		size_t k[ND] = { 0 };
		int64_t ok = 0, errored = 0;
		for (size_t i = i0; i < i1; i++) {
			const struct xreq *q = sel[i];
			if (q->error || !q->t_first) {
				errored++;
				continue;
			}
			ok++;
			int64_t end = q->t_done ? q->t_done : q->t_last;
			double lat = (double)(end - q->t_send) / 1e9;
			v[0][k[0]++] = lat;
			v[1][k[1]++] = (double)(q->t_first - q->t_send) / 1e6;
			if (q->completion_tokens > 0)
				v[2][k[2]++] = lat * 1e3 / (double)q->completion_tokens;
			if (q->completion_tokens > 1)
				v[3][k[3]++] = (double)(q->t_last - q->t_first) / 1e6 / (double)(q->completion_tokens - 1);
			if (q->prompt_tokens >= 0)
				v[4][k[4]++] = (double)q->prompt_tokens;
			if (q->completion_tokens >= 0)
				v[5][k[5]++] = (double)q->completion_tokens;
		}
		fprintf(f, "%lld,run %lld level %lld,%s,%.9g,%lld,%lld,%lld", (long long)run->id, (long long)run->id,
			(long long)sel[i0]->level, strategy, duration_s(sel + i0, i1 - i0, true), (long long)ok,
			(long long)errored, (long long)(i1 - i0));
		for (int j = 0; j < ND; j++)
			guidellm_dist(f, v[j], k[j]);
		if (fprintf(f, "\n") < 0)
			rc = -EIO;
		i0 = i1;
	}
	cJSON_Delete(proto);
	for (int j = 0; j < ND; j++)
		free(v[j]);
	return rc;
}

/* ---- the command ---- */

/* Writes the chosen requests to path (NULL: out), all or nothing. */
static int write_export(const struct export_opts *o, const struct store_run_info *run, const struct xreq *const *sel,
			size_t n, FILE *out, char *err, size_t errlen)
{
	char tmp[4200];
	FILE *f = out;
	if (o->out) {
		snprintf(tmp, sizeof tmp, "%s.tmp", o->out);
		if (!(f = fopen(tmp, "w"))) {
			err_set(err, errlen, "export: cannot write %s: %s", tmp, strerror(errno));
			return -EIO;
		}
	}
	int rc = 0;
	if (o->format == 0) {
		cJSON *j = vllm_json(run, sel, n, sel[0]->level, o->repeat);
		char *s = j ? cJSON_Print(j) : NULL;
		if (!s)
			rc = -ENOMEM;
		else if (fprintf(f, "%s\n", s) < 0)
			rc = -EIO;
		free(s);
		cJSON_Delete(j);
	} else if (o->format == 1) {
		rc = aiperf_csv(f, sel, n);
	} else {
		rc = guidellm_csv(f, run, sel, n);
	}
	if (o->out) {
		if (fclose(f) != 0 && rc == 0)
			rc = -EIO;
		if (rc == 0 && rename(tmp, o->out) != 0)
			rc = -EIO;
		if (rc)
			unlink(tmp);
	}
	if (rc)
		err_set(err, errlen, "export: %s", rc == -ENOMEM ? "out of memory" : "writing the file failed");
	return rc;
}

int report_export_cli(int argc, char **argv, FILE *out, char *err, size_t errlen)
{
	struct export_opts o = { .db = STORE_DEFAULT_PATH };
	const char *pos[1] = { NULL };
	int npos = 0;
	static const struct args_spec spec = { .prog = "sixi-report", .cmd = "export", .usage = usage,
					       .opts = export_options, .max_pos = 1 };
	char why[512];
	int rc = args_parse(&spec, 0, argc, argv, &o, pos, &npos, why, sizeof why);
	if (rc == ARGS_HELP) {
		args_help(&spec, 0, out);
		return ARGS_HELP;
	}
	if (rc) {
		err_set(err, errlen, "export: %s", why);
		return -EINVAL;
	}
	int64_t id = 0;
	if (npos != 1) {
		err_set(err, errlen, "export: which run? (sixi-report export RUN [--db DB] [--format "
			"vllm|aiperf|guidellm])");
		return -EINVAL;
	}
	if ((rc = args_i64("export RUN", pos[0], 1, INT64_MAX, &id, err, errlen)) != 0)
		return -EINVAL;
	struct store *s = report_db_open(o.db, err, errlen);
	if (!s)
		return -EINVAL;
	struct report_run rr = { 0 };
	struct store_run_info run = { 0 };
	struct xrun x = { 0 };
	const struct xreq **sel = NULL;
	rc = report_db_run(s, id, "bench", &rr, err, errlen);
	if (rc == 0 && (rc = store_run_get(s, id, &run, err, errlen)) != 0 && rc == -ENOENT)
		err_set(err, errlen, "export: run %lld vanished while it was read", (long long)id);
	if (rc == 0) {
		rc = store_bench_each(s, id, read_row, &x, err, errlen);
		if (x.bad_itl)
			err_set(err, errlen, "export: run %lld: a bench_requests row's itl_json is not a JSON array of "
				"non-negative numbers (ns); the file was changed by hand or is damaged", (long long)id);
		else if (rc == -ENOMEM)
			err_set(err, errlen, "export: out of memory reading run %lld", (long long)id);
	}
	if (rc == 0 && x.n == 0) {
		err_set(err, errlen, "export: run %lld has no measured requests (only warm-up or none)", (long long)id);
		rc = -EINVAL;
	}
	/* which level */
	int64_t level = o.level;
	bool all_levels = o.format == 2 && !level; /* GuideLLM's file has a row per benchmark */
	if (rc == 0 && !level && x.n_levels > 1 && !all_levels) {
		char list[512] = "";
		for (size_t i = 0; i < x.n_levels; i++) {
			size_t len = strlen(list);
			snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", (long long)x.levels[i]);
		}
		err_set(err, errlen, "export: run %lld has %zu levels (%s): name one with --level L (a file of vLLM or "
			"AIPerf describes one load)", (long long)id, x.n_levels, list);
		rc = -EINVAL;
	}
	if (rc == 0 && !level)
		level = x.levels[0];
	/* which repeat: a sweep with --repeats N keeps run k's requests at seq / rounds == k - 1 */
	int64_t repeats = 1, rounds = 0;
	cJSON *proto = rc == 0 ? cJSON_Parse(run.protocol_json ? run.protocol_json : "{}") : NULL;
	if (proto && strcmp(rr.workload, "sweep") == 0 && json_get_i64(proto, "repeats", &repeats) &&
	    !json_get_i64(proto, "rounds", &rounds))
		repeats = 1;
	cJSON_Delete(proto);
	if (rc == 0 && repeats > 1 && (!o.repeat || o.repeat > repeats || rounds < 1)) {
		err_set(err, errlen, "export: run %lld ran every level %lld times (--repeats): name one run with "
			"--repeat K, 1 to %lld (runs are never pooled into one percentile)", (long long)id,
			(long long)repeats, (long long)repeats);
		rc = -EINVAL;
	}
	if (rc == 0 && repeats <= 1 && o.repeat) {
		err_set(err, errlen, "export: run %lld has no repeats: leave --repeat out", (long long)id);
		rc = -EINVAL;
	}
	size_t n = 0;
	if (rc == 0 && !(sel = malloc(x.n * sizeof *sel)))
		rc = -ENOMEM;
	for (size_t i = 0; rc == 0 && i < x.n; i++)
		if ((all_levels || x.r[i].level == level) && (repeats <= 1 || x.r[i].seq / rounds == o.repeat - 1))
			sel[n++] = &x.r[i];
	if (rc == 0 && n == 0) {
		err_set(err, errlen, "export: run %lld has no measured request at level %lld%s (see sixi-report bench "
			"--db DB %lld for its levels)", (long long)id, (long long)level, o.repeat ? " in that repeat" : "",
			(long long)id);
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = write_export(&o, &run, sel, n, out, err, errlen);
	if (rc == -ENOMEM && !err[0])
		err_set(err, errlen, "export: out of memory");
	free(sel);
	xrun_finish(&x);
	store_run_info_finish(&run);
	report_run_finish(&rr);
	store_close(s);
	return rc;
}
