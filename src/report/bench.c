/* bench — see bench.h.
 *
 * One ordered query per run (level, stream, seq) and one pass: a level's rows are
 * gathered, summarised when the level changes, and dropped. Percentiles are
 * linear interpolations between order statistics (numpy's default). */
#include "report/bench.h"
#include "report/db.h"
#include "report/doc.h"
#include "core/args.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct args_opt bench_options[] = {
	ARGS_STRING_OPT("--db", "DB", struct report_bench_opts, db, 0, "the database of the runs"),
	ARGS_TABLE_END,
};

int report_bench_args(int argc, char **argv, struct report_bench_opts *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	static const struct args_spec spec = { .prog = "sixi-report", .opts = bench_options,
					       .max_pos = REPORT_BENCH_MAX_RUNS };
	const char *pos[REPORT_BENCH_MAX_RUNS];
	int npos = 0;
	char why[512];
	int rc = args_parse(&spec, 0, argc, argv, o, pos, &npos, why, sizeof why);
	if (rc == -EINVAL && npos == REPORT_BENCH_MAX_RUNS && strstr(why, "unexpected argument"))
		snprintf(why, sizeof why, "at most %d runs at once", REPORT_BENCH_MAX_RUNS);
	if (rc) {
		snprintf(err, errlen, "bench: %s", rc == ARGS_HELP ? "--help: see sixi-report --help" : why);
		return -EINVAL;
	}
	for (int i = 0; i < npos; i++)
		if ((rc = args_i64("bench RUN", pos[i], 1, INT64_MAX, &o->runs[o->nruns++], err, errlen)) != 0)
			return rc;
	if (!o->db || o->nruns == 0) {
		snprintf(err, errlen, "bench: expected sixi-report bench --db DB RUN [RUN...]");
		return -EINVAL;
	}
	return 0;
}

/* What one level (one point of a curve) adds up to. */
struct level {
	int64_t level;
	int64_t rows, no_usage, errors, cached;
	int64_t tokens, events;
	int64_t t_min, t_max; /* ns: first send, last done */
	int64_t streams;
	double stream_rate_sum; /* sum over streams of tokens / stream wall */
	int64_t cur_stream, s_tokens, s_min, s_max;
	double *ttft_ms, *prefill, *follow_ms; /* (rows) */
	size_t nttft, nprefill, nfollow, cap;
	char fp[16];
	int64_t fps; /* distinct fingerprints seen (1 or "more than one") */
};

static double pct(double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	gsl_sort(v, 1, n);
	return gsl_stats_quantile_from_sorted_data(v, 1, n, q);
}

static void close_stream(struct level *l)
{
	if (l->s_max > l->s_min) {
		l->stream_rate_sum += (double)l->s_tokens / ((double)(l->s_max - l->s_min) / 1e9);
		l->streams++;
	}
	l->s_tokens = 0;
	l->s_min = INT64_MAX;
	l->s_max = INT64_MIN;
}

static void level_reset(struct level *l, int64_t level)
{
	double *a = l->ttft_ms, *b = l->prefill, *c = l->follow_ms;
	size_t cap = l->cap;
	memset(l, 0, sizeof *l);
	l->ttft_ms = a;
	l->prefill = b;
	l->follow_ms = c;
	l->cap = cap;
	l->level = level;
	l->t_min = l->s_min = INT64_MAX;
	l->t_max = l->s_max = INT64_MIN;
	l->cur_stream = -1;
}

static int level_grow(struct level *l)
{
	if (l->nttft < l->cap && l->nfollow < l->cap && l->nprefill < l->cap)
		return 0;
	size_t nc = l->cap ? l->cap * 2 : 256;
	double *a = realloc(l->ttft_ms, nc * sizeof *a);
	if (a)
		l->ttft_ms = a;
	double *b = a ? realloc(l->prefill, nc * sizeof *b) : NULL;
	if (b)
		l->prefill = b;
	double *c = b ? realloc(l->follow_ms, nc * sizeof *c) : NULL;
	if (!c)
		return -ENOMEM;
	l->follow_ms = c;
	l->cap = nc;
	return 0;
}

static const char *level_name(const char *workload)
{
	if (strcmp(workload, "prefill") == 0)
		return "prompt tokens";
	if (strcmp(workload, "agents") == 0)
		return "agents";
	if (strcmp(workload, "rate") == 0)
		return "requests/s";
	return "concurrency";
}

/* Unique prompts: the protocol says so (unique_prompts), else the workloads that promise it. */
static bool unique_prompts(const struct report_run *r)
{
	cJSON *p = cJSON_Parse(r->protocol_json);
	cJSON *u = cJSON_GetObjectItemCaseSensitive(p, "unique_prompts");
	bool v = cJSON_IsBool(u) ? cJSON_IsTrue(u)
				 : strcmp(r->workload, "sweep") == 0 || strcmp(r->workload, "prefill") == 0 ||
					   strcmp(r->workload, "rate") == 0;
	cJSON_Delete(p);
	return v;
}

struct curves {
	int nruns;
	/* per run, per point: x and the plotted values (NaN for invalid points) */
	double *x[REPORT_BENCH_MAX_RUNS], *agg[REPORT_BENCH_MAX_RUNS], *per[REPORT_BENCH_MAX_RUNS],
		*ttft[REPORT_BENCH_MAX_RUNS], *prefill[REPORT_BENCH_MAX_RUNS];
	size_t n[REPORT_BENCH_MAX_RUNS], cap[REPORT_BENCH_MAX_RUNS];
};

static int curve_add(struct curves *cv, int r, double x, double agg, double per, double ttft, double prefill)
{
	if (cv->n[r] == cv->cap[r]) {
		size_t nc = cv->cap[r] ? cv->cap[r] * 2 : 16;
		double **arrs[5] = { &cv->x[r], &cv->agg[r], &cv->per[r], &cv->ttft[r], &cv->prefill[r] };
		for (int i = 0; i < 5; i++) {
			double *p = realloc(*arrs[i], nc * sizeof *p);
			if (!p)
				return -ENOMEM;
			*arrs[i] = p;
		}
		cv->cap[r] = nc;
	}
	cv->x[r][cv->n[r]] = x;
	cv->agg[r][cv->n[r]] = agg;
	cv->per[r][cv->n[r]] = per;
	cv->ttft[r][cv->n[r]] = ttft;
	cv->prefill[r][cv->n[r]] = prefill;
	cv->n[r]++;
	return 0;
}

static int emit_level(struct report_doc *d, struct level *l, const char *q, struct curves *cv, int r)
{
	char label[32], why[128] = "";
	close_stream(l);
	snprintf(label, sizeof label, "%lld", (long long)l->level);
	report_doc_row(d);
	report_doc_cell(d, label);
	report_doc_num(d, q, "%.0f", (double)l->rows);
	bool invalid = l->no_usage || l->errors || l->cached;
	if (invalid) {
		snprintf(why, sizeof why, "invalid: %s%s%s%s%s", l->no_usage ? "no usage" : "",
			 l->no_usage && (l->errors || l->cached) ? ", " : "", l->errors ? "errors" : "",
			 l->errors && l->cached ? ", " : "", l->cached ? "cached prompt" : "");
		for (int i = 0; i < 9; i++)
			report_doc_cell(d, "invalid");
		report_doc_cell(d, l->fps > 1 ? "mixed" : l->fp);
		report_doc_cell(d, why);
		return curve_add(cv, r, (double)l->level, NAN, NAN, NAN, NAN);
	}
	double wall_s = l->t_max > l->t_min ? (double)(l->t_max - l->t_min) / 1e9 : NAN;
	double agg = (double)l->tokens / wall_s, per = l->streams ? l->stream_rate_sum / (double)l->streams : NAN;
	double p50 = pct(l->ttft_ms, l->nttft, 0.5);
	report_doc_num(d, q, "%.0f", (double)l->streams);
	report_doc_num(d, q, "%.1f", agg);
	report_doc_num(d, q, "%.1f", per);
	report_doc_num(d, q, "%.1f", p50);
	report_doc_num(d, q, "%.1f", pct(l->ttft_ms, l->nttft, 0.9));
	report_doc_num(d, q, "%.1f", pct(l->ttft_ms, l->nttft, 0.99));
	double prefill = pct(l->prefill, l->nprefill, 0.5);
	report_doc_num(d, q, "%.0f", prefill);
	report_doc_num(d, q, "%.2f", l->tokens ? (double)l->events / (double)l->tokens : NAN);
	report_doc_num(d, q, "%.1f", pct(l->follow_ms, l->nfollow, 0.5));
	report_doc_cell(d, l->fps > 1 ? "mixed" : l->fp);
	report_doc_cell(d, "valid");
	return curve_add(cv, r, (double)l->level, agg, per, p50, prefill);
}

static int bench_run(sqlite3 *db, struct report_doc *d, const struct report_run *run, struct curves *cv, int r,
		     char *err, size_t errlen)
{
	char sql[600], q[32], title[512];
	snprintf(sql, sizeof sql,
		 "SELECT id, level, stream, prompt_tokens, cached_tokens, completion_tokens, sse_events, t_send,"
		 " t_first_token, t_done, error, coalesce(fingerprint_hash, ''), coalesce(tag, '')"
		 " FROM bench_requests WHERE run = %lld AND phase = 'measure'"
		 " ORDER BY level, stream, seq",
		 (long long)run->id);
	snprintf(q, sizeof q, "bench_%lld", (long long)run->id);
	report_doc_query(d, q, sql);
	bool unique = unique_prompts(run);
	const char *h[] = { level_name(run->workload), "requests", "streams", "tok/s aggregate", "tok/s per stream",
			    "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "prefill tok/s p50", "SSE events per token",
			    "follow-up wait p50 ms", "fingerprint", "status" };
	/* a run killed mid-way stays 'running', one that hit an error is 'failed': never shown as complete */
	bool complete = strcmp(run->status, "done") == 0;
	snprintf(title, sizeof title, "Run %lld: %s, %s%s%s%s", (long long)run->id,
		 run->workload[0] ? run->workload : "bench", run->model[0] ? run->model : "model not recorded",
		 complete ? "" : " (INCOMPLETE: status '", complete ? "" : run->status,
		 complete ? "" : "': the run stopped before its end; its rows are what was measured until then)");
	if (run->memory_warning[0])
		report_doc_para(d, "Warning (run %lld): when it started, %s. Its numbers may be lower than the "
				   "server can reach.", (long long)run->id, run->memory_warning);
	report_doc_table(d, q, title, 13, h);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "reading bench_requests failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	static const char *const numeric[] = { "prompt_tokens", "cached_tokens", "completion_tokens", "sse_events",
					       "t_send", "t_first_token", "t_done" };
	struct level l = { 0 };
	level_reset(&l, INT64_MIN);
	int rc = 0, step, rows = 0;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t level = sqlite3_column_int64(st, 1), stream = sqlite3_column_int64(st, 2);
		if (level != l.level) {
			if (l.level != INT64_MIN)
				rc = emit_level(d, &l, q, cv, r);
			level_reset(&l, level);
		}
		if (rc == 0)
			rc = level_grow(&l);
		if (rc)
			break;
		char where[96];
		snprintf(where, sizeof where, "run %lld, level %lld", (long long)run->id, (long long)level);
		rc = report_db_numeric(st, 3, 7, numeric, "bench_requests", where, err, errlen);
		if (rc)
			break;
		rows++;
		if (stream != l.cur_stream) {
			if (l.cur_stream >= 0)
				close_stream(&l);
			l.cur_stream = stream;
		}
		l.rows++;
		bool no_usage = sqlite3_column_type(st, 5) == SQLITE_NULL;
		bool error = sqlite3_column_type(st, 10) != SQLITE_NULL;
		bool cached = unique && sqlite3_column_int64(st, 4) > 0;
		l.no_usage += no_usage;
		l.errors += error;
		l.cached += cached;
		int64_t tok = sqlite3_column_int64(st, 5), send = sqlite3_column_int64(st, 7);
		int64_t first = sqlite3_column_int64(st, 8), done = sqlite3_column_int64(st, 9);
		const char *fp = (const char *)sqlite3_column_text(st, 11), *tag = (const char *)sqlite3_column_text(st, 12);
		if (l.fps == 0 || strncmp(l.fp, fp, 12) != 0) {
			if (l.fps == 0)
				snprintf(l.fp, sizeof l.fp, "%.12s", fp);
			l.fps += l.fps == 0 || strncmp(l.fp, fp, 12) != 0;
		}
		if (no_usage || error || cached)
			continue;
		l.tokens += tok;
		l.events += sqlite3_column_int64(st, 6);
		l.s_tokens += tok;
		if (send && send < l.t_min)
			l.t_min = send;
		if (done > l.t_max)
			l.t_max = done;
		if (send && send < l.s_min)
			l.s_min = send;
		if (done > l.s_max)
			l.s_max = done;
		if (send && first > send) {
			double ttft_ms = (double)(first - send) / 1e6;
			if (strcmp(tag, "followup") == 0)
				l.follow_ms[l.nfollow++] = ttft_ms;
			else
				l.ttft_ms[l.nttft++] = ttft_ms;
			if (sqlite3_column_type(st, 3) != SQLITE_NULL)
				l.prefill[l.nprefill++] = (double)sqlite3_column_int64(st, 3) / (ttft_ms / 1e3);
		}
	}
	if (rc == 0 && step != SQLITE_DONE) {
		snprintf(err, errlen, "reading bench_requests failed: %s", sqlite3_errmsg(db));
		rc = -EIO;
	}
	if (rc == 0 && l.level != INT64_MIN)
		rc = emit_level(d, &l, q, cv, r);
	sqlite3_finalize(st);
	free(l.ttft_ms);
	free(l.prefill);
	free(l.follow_ms);
	if (rc == 0 && rows == 0) {
		snprintf(err, errlen, "run %lld has no measured requests (only warm-up or none)", (long long)run->id);
		rc = -EINVAL;
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory reading bench_requests");
	report_doc_note(d, "tok/s aggregate: sum of usage.completion_tokens over the level's wall time (first send "
			   "to last done); per stream: each stream's tokens over its own wall time, averaged. TTFT: send "
			   "to first token. Warm-up and readiness requests are excluded. A level with an invalid request "
			   "(no usage, an error%s) is shown as invalid and left out.",
			unique ? ", or cached_tokens > 0 although prompts were unique" : "");
	return rc;
}

int report_bench_build(const struct report_bench_opts *o, struct report_doc *d, char *err, size_t errlen)
{
	struct store *s = report_db_open(o->db, err, errlen);
	if (!s)
		return -EINVAL;
	struct curves cv = { .nruns = (int)o->nruns };
	struct report_run runs[REPORT_BENCH_MAX_RUNS];
	memset(runs, 0, sizeof runs);
	int rc = 0;
	for (size_t i = 0; i < o->nruns && rc == 0; i++)
		rc = report_db_run(s, o->runs[i], "bench", &runs[i], err, errlen);
	if (rc == 0)
		report_doc_para(d, "Every number below is computed from bench_requests at render time.");
	for (size_t i = 0; i < o->nruns && rc == 0; i++)
		rc = bench_run((sqlite3 *)store_db(s), d, &runs[i], &cv, (int)i, err, errlen);
	if (rc == 0) {
		char names[REPORT_BENCH_MAX_RUNS][32];
		const char *series[REPORT_BENCH_MAX_RUNS + 1];
		for (size_t i = 0; i < o->nruns; i++) {
			snprintf(names[i], sizeof names[i], "run %lld", (long long)o->runs[i]);
			series[i] = names[i];
		}
		/* invalid points are drawn on the axis in their own series, never joined to a curve */
		series[o->nruns] = "invalid point (not measured)";
		bool any_invalid = false;
		for (size_t r = 0; r < o->nruns; r++)
			for (size_t k = 0; k < cv.n[r]; k++)
				any_invalid |= isnan(cv.agg[r][k]);
		static const struct {
			const char *id, *title, *ylabel;
		} plots[] = {
			{ "throughput", "Aggregate throughput", "completion tokens/s" },
			{ "per-stream", "Per-stream rate", "completion tokens/s per stream" },
			{ "ttft", "Time to first token (p50)", "ms" },
			{ "prefill", "Prefill rate (p50)", "prompt tokens/s" },
		};
		const char *xl = level_name(runs[0].workload);
		for (int p = 0; p < 4; p++) {
			report_doc_plot(d, plots[p].id, plots[p].title, xl, plots[p].ylabel, true,
					(int)o->nruns + any_invalid, series);
			for (size_t r = 0; r < o->nruns; r++)
				for (size_t k = 0; k < cv.n[r]; k++) {
					double y = p == 0 ? cv.agg[r][k] : p == 1 ? cv.per[r][k] : p == 2 ? cv.ttft[r][k]
													   : cv.prefill[r][k];
					if (isnan(cv.agg[r][k]))
						report_doc_point(d, (int)o->nruns, cv.x[r][k], 0);
					else
						report_doc_point(d, (int)r, cv.x[r][k], y);
				}
		}
		rc = report_doc_error(d);
		if (rc)
			snprintf(err, errlen, "building the report: out of memory");
	}
	for (size_t i = 0; i < o->nruns; i++) {
		report_run_finish(&runs[i]);
		free(cv.x[i]);
		free(cv.agg[i]);
		free(cv.per[i]);
		free(cv.ttft[i]);
		free(cv.prefill[i]);
	}
	store_close(s);
	return rc;
}
