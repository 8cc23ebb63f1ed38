/* bench — see bench.h.
 *
 * One ordered query per run (level, stream, seq) and one pass: a level's rows are
 * gathered, summarised when the level changes (stats/level.h, the definition
 * sixi-bench's live summary uses too), and dropped. */
#include "report/bench.h"
#include "core/err.h"
#include "report/db.h"
#include "report/doc.h"
#include "core/args.h"
#include "stats/level.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
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
		err_set(err, errlen, "bench: %s", rc == ARGS_HELP ? "--help: see sixi-report --help" : why);
		return -EINVAL;
	}
	for (int i = 0; i < npos; i++)
		if ((rc = args_i64("bench RUN", pos[i], 1, INT64_MAX, &o->runs[o->nruns++], err, errlen)) != 0)
			return rc;
	if (!o->db || o->nruns == 0) {
		err_set(err, errlen, "bench: expected sixi-report bench --db DB RUN [RUN...]");
		return -EINVAL;
	}
	return 0;
}

/* One level's measured requests as they are read (one point of a curve). */
struct level {
	int64_t level;
	struct level_request *rq; /* (n) */
	size_t n, cap;
	char fp[16];
	int64_t fps; /* distinct fingerprints seen (1 or "more than one") */
};

static void level_reset(struct level *l, int64_t level)
{
	l->level = level;
	l->n = 0;
	l->fp[0] = 0;
	l->fps = 0;
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

static int emit_level(struct report_doc *d, struct level *l, const char *q, struct curves *cv, int r, bool unique)
{
	char label[32], status[320];
	struct level_rules rules = { .unique_prompts = unique };
	struct level_figures F;
	if (level_figures_compute(l->rq, l->n, &rules, &F) != 0)
		return -ENOMEM;
	snprintf(label, sizeof label, "%lld", (long long)l->level);
	report_doc_row(d);
	report_doc_cell(d, label);
	report_doc_num(d, q, "%.0f", (double)F.requests);
	if (!F.valid) {
		snprintf(status, sizeof status, "invalid: %s", F.invalid_reason);
		for (int i = 0; i < 9; i++)
			report_doc_cell(d, "invalid");
		report_doc_cell(d, l->fps > 1 ? "mixed" : l->fp);
		report_doc_cell(d, status);
		return curve_add(cv, r, (double)l->level, NAN, NAN, NAN, NAN);
	}
	report_doc_num(d, q, "%.0f", (double)F.streams);
	report_doc_num(d, q, "%.1f", F.agg_tok_s);
	report_doc_num(d, q, "%.1f", F.stream_tok_s_mean);
	report_doc_num(d, q, "%.1f", F.ttft_p50_ms);
	report_doc_num(d, q, "%.1f", F.ttft_p90_ms);
	report_doc_num(d, q, "%.1f", F.ttft_p99_ms);
	report_doc_num(d, q, "%.0f", F.prefill_tok_s);
	report_doc_num(d, q, "%.2f", F.sse_events_per_token);
	report_doc_num(d, q, "%.1f", F.followup_ttft_p50_ms);
	report_doc_cell(d, l->fps > 1 ? "mixed" : l->fp);
	if (F.errors)
		snprintf(status, sizeof status, "valid; %lld failed requests left out", (long long)F.errors);
	else
		snprintf(status, sizeof status, "valid");
	report_doc_cell(d, status);
	return curve_add(cv, r, (double)l->level, F.agg_tok_s, F.stream_tok_s_mean, F.ttft_p50_ms, F.prefill_tok_s);
}

/* The stored error class as a string that outlives the row (the rows' own text
 * is gone at the next row). */
/* What bench_run's row callback works on. */
struct bench_pass {
	struct report_doc *d;
	const char *q;
	struct curves *cv;
	int r;
	bool unique;
	struct level l;
	int rows;
};

static int bench_row(void *ctx, const struct store_bench_read *x)
{
	struct bench_pass *P = ctx;
	struct level *l = &P->l;
	if (x->level != l->level) {
		if (l->level != INT64_MIN) {
			int rc = emit_level(P->d, l, P->q, P->cv, P->r, P->unique);
			if (rc)
				return rc;
		}
		level_reset(l, x->level);
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct level_request *rq = realloc(l->rq, cap * sizeof *rq);
		if (!rq)
			return -ENOMEM;
		l->rq = rq;
		l->cap = cap;
	}
	P->rows++;
	l->rq[l->n++] = report_level_request(x);
	const char *fp = x->fingerprint_hash;
	if (l->fps == 0 || strncmp(l->fp, fp, 12) != 0) {
		if (l->fps == 0)
			snprintf(l->fp, sizeof l->fp, "%.12s", fp);
		l->fps += l->fps == 0 || strncmp(l->fp, fp, 12) != 0;
	}
	return 0;
}

static int bench_run(struct store *s, struct report_doc *d, const struct report_run *run, struct curves *cv, int r,
		     char *err, size_t errlen)
{
	char sql[600], q[32], title[512];
	store_bench_each_sql(run->id, sql, sizeof sql);
	snprintf(q, sizeof q, "bench_%lld", (long long)run->id);
	report_doc_query(d, q, sql);
	bool unique = report_run_unique_prompts(run->workload, run->protocol_json);
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
	struct bench_pass P = { .d = d, .q = q, .cv = cv, .r = r, .unique = unique };
	level_reset(&P.l, INT64_MIN);
	int rc = store_bench_each(s, run->id, bench_row, &P, err, errlen);
	if (rc == 0 && P.l.level != INT64_MIN)
		rc = emit_level(d, &P.l, q, cv, r, unique);
	free(P.l.rq);
	if (rc == 0 && P.rows == 0) {
		err_set(err, errlen, "run %lld has no measured requests (only warm-up or none)", (long long)run->id);
		rc = -EINVAL;
	}
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory reading bench_requests");
	report_doc_note(d, "The figures are sixi-bench's own (one function computes both; sixi(7), SERVING "
			   "FIGURES). tok/s aggregate: sum of usage.completion_tokens of the successful requests over the "
			   "level's wall time (first start to last done); per stream: (completion_tokens - 1) / (t_last - "
			   "t_first_token) per request, averaged. TTFT: start (send, or the intended arrival of a rate run) "
			   "to first token. Warm-up and readiness requests are excluded, failed requests counted and left "
			   "out. A level where a response carried no usage%s, or no request succeeded, is shown as invalid "
			   "and left out.",
			unique ? ", cached_tokens > 0 although prompts were unique" : "");
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
		rc = bench_run(s, d, &runs[i], &cv, (int)i, err, errlen);
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
			err_set(err, errlen, "building the report: out of memory");
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
