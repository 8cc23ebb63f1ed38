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
#include "core/json.h"
#include "stats/level.h"
#include "stats/slo.h"
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
	struct level_request *rq; /* (n); rq[i].gaps_ms is owned */
	int64_t *seq;             /* (n) the request's seq: seq / rounds is its repeat */
	size_t n, cap;
	char fp[16];
	int64_t fps; /* distinct fingerprints seen (1 or "more than one") */
};

static void level_reset(struct level *l, int64_t level)
{
	for (size_t i = 0; i < l->n; i++)
		free((double *)l->rq[i].gaps_ms);
	l->level = level;
	l->n = 0;
	l->fp[0] = 0;
	l->fps = 0;
}

int report_bench_gaps(const char *itl_json, double **gaps_ms, size_t *n)
{
	*gaps_ms = NULL;
	*n = 0;
	if (!itl_json)
		return 0;
	cJSON *a = cJSON_Parse(itl_json);
	int k = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
	if (k < 0) {
		cJSON_Delete(a);
		return -EINVAL;
	}
	double *g = malloc((size_t)(k ? k : 1) * sizeof *g);
	if (!g) {
		cJSON_Delete(a);
		return -ENOMEM;
	}
	int i = 0, rc = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, a)
	{
		if (!cJSON_IsNumber(e) || e->valuedouble < 0) {
			rc = -EINVAL;
			break;
		}
		g[i++] = e->valuedouble / 1e6;
	}
	cJSON_Delete(a);
	if (rc) {
		free(g);
		return rc;
	}
	*gaps_ms = g;
	*n = (size_t)k;
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
	if (strcmp(workload, "search") == 0)
		return "probe"; /* its load is in the goodput plot */
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

/* The figures compared across repeated runs, in the order and with the names of
 * sixi-bench sweep --repeats' live summary (its across_runs). */
enum { ACROSS_METRICS = 8, ACROSS_NO_SLO = 6 }; /* the last two only with an SLO */
static const char *const across_names[ACROSS_METRICS] = { "aggregate_tok_s", "ttft_p50_ms",    "ttft_p99_ms",
							  "tpot_ms_mean",    "itl_p50_ms",     "itl_p99_ms",
							  "goodput_rps",     "slo_attainment" };

static void across_values(const struct level_figures *F, const struct slo_level *S, double v[ACROSS_METRICS])
{
	v[0] = F->agg_tok_s;
	v[1] = F->ttft_p50_ms;
	v[2] = F->ttft_p99_ms;
	v[3] = F->tpot_ms_mean;
	v[4] = F->itl_p50_ms;
	v[5] = F->itl_p99_ms;
	v[6] = S ? S->goodput_rps : NAN;
	v[7] = S ? S->attainment : NAN;
}

/* One row of the across-runs table, kept until the level table is complete. */
struct across_row {
	int64_t level, runs;
	int metric;
	struct level_spread s;
};

/* One request on the run's timeline: ns since the run's first start. */
struct span {
	int64_t start, first, last;
	size_t order; /* read order (level, stream, seq): ties keep it */
};

/* What bench_run's row callback works on. */
struct bench_pass {
	struct report_doc *d;
	const char *q;
	struct curves *cv;
	int r;
	bool unique;
	int64_t repeats, rounds; /* repeats > 1: each run of a level on its own row, then across runs */
	const struct slo *slo;   /* the run's --slo, NULL when none */
	struct level l;
	int rows;
	struct across_row *across;
	size_t n_across, cap_across;
	struct span *spans;
	size_t n_spans, cap_spans;
};

/* One table row: the level (and the repeat, 1-based, when there are repeats). */
static void emit_row(struct bench_pass *P, const struct level *l, int64_t repeat, const struct level_figures *F)
{
	struct report_doc *d = P->d;
	const char *q = P->q;
	char label[32], status[320];
	snprintf(label, sizeof label, "%lld", (long long)l->level);
	report_doc_row(d);
	report_doc_cell(d, label);
	if (P->repeats > 1)
		report_doc_num(d, q, "%.0f", (double)repeat);
	report_doc_num(d, q, "%.0f", (double)F->requests);
	if (!F->valid) {
		snprintf(status, sizeof status, "invalid: %s", F->invalid_reason);
		for (int i = 0; i < 9; i++)
			report_doc_cell(d, "invalid");
		report_doc_cell(d, l->fps > 1 ? "mixed" : l->fp);
		report_doc_cell(d, status);
		return;
	}
	report_doc_num(d, q, "%.0f", (double)F->streams);
	report_doc_num(d, q, "%.1f", F->agg_tok_s);
	report_doc_num(d, q, "%.1f", F->stream_tok_s_mean);
	report_doc_num(d, q, "%.1f", F->ttft_p50_ms);
	report_doc_num(d, q, "%.1f", F->ttft_p90_ms);
	report_doc_num(d, q, "%.1f", F->ttft_p99_ms);
	report_doc_num(d, q, "%.0f", F->prefill_tok_s);
	report_doc_num(d, q, "%.2f", F->sse_events_per_token);
	report_doc_num(d, q, "%.1f", F->followup_ttft_p50_ms);
	report_doc_cell(d, l->fps > 1 ? "mixed" : l->fp);
	if (F->errors)
		snprintf(status, sizeof status, "valid; %lld failed requests left out", (long long)F->errors);
	else
		snprintf(status, sizeof status, "valid");
	report_doc_cell(d, status);
}

static int across_add(struct bench_pass *P, const struct across_row *a)
{
	if (P->n_across == P->cap_across) {
		size_t cap = P->cap_across ? 2 * P->cap_across : 32;
		struct across_row *p = realloc(P->across, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		P->across = p;
		P->cap_across = cap;
	}
	P->across[P->n_across++] = *a;
	return 0;
}

static double mean_of(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : NAN;
}

static int emit_level(struct bench_pass *P, struct level *l)
{
	struct level_rules rules = { .unique_prompts = P->unique };
	struct level_figures F;
	if (P->repeats <= 1) {
		if (level_figures_compute(l->rq, l->n, &rules, &F) != 0)
			return -ENOMEM;
		emit_row(P, l, 0, &F);
		return F.valid ? curve_add(P->cv, P->r, (double)l->level, F.agg_tok_s, F.stream_tok_s_mean, F.ttft_p50_ms,
					   F.prefill_tok_s)
			       : curve_add(P->cv, P->r, (double)l->level, NAN, NAN, NAN, NAN);
	}
	/* each run of the level is summarised on its own (seq / rounds is the run it
	 * belongs to), then each figure is compared across the runs */
	int64_t R = P->repeats;
	for (size_t i = 0; i < l->n; i++)
		if (l->seq[i] / P->rounds + 1 > R)
			R = l->seq[i] / P->rounds + 1;
	struct level_request *sub = malloc((l->n ? l->n : 1) * sizeof *sub);
	struct slo_request *sr = malloc((l->n ? l->n : 1) * sizeof *sr);
	double *vals = malloc((size_t)R * (ACROSS_METRICS + 4) * sizeof *vals);
	size_t *nv = calloc(ACROSS_METRICS + 4, sizeof *nv);
	int rc = sub && sr && vals && nv ? 0 : -ENOMEM;
	for (int64_t k = 0; k < R && rc == 0; k++) {
		size_t m = 0;
		for (size_t i = 0; i < l->n; i++)
			if (l->seq[i] / P->rounds == k)
				sub[m++] = l->rq[i];
		if (m == 0)
			continue;
		if ((rc = level_figures_compute(sub, m, &rules, &F)) != 0)
			break;
		emit_row(P, l, k + 1, &F);
		if (!F.valid)
			continue;
		/* goodput and attainment as sixi-bench's live summary computes them
		 * (stats/slo.h over all the requests the run scheduled, the level's wall) */
		struct slo_level S;
		if (P->slo) {
			for (size_t i = 0; i < m; i++)
				slo_request_from(&sub[i], &sr[i]);
			if ((rc = slo_level_eval(P->slo, sr, m, F.wall_s, &S)) != 0)
				break;
		}
		double v[ACROSS_METRICS + 4];
		across_values(&F, P->slo ? &S : NULL, v);
		v[ACROSS_METRICS] = F.agg_tok_s;
		v[ACROSS_METRICS + 1] = F.stream_tok_s_mean;
		v[ACROSS_METRICS + 2] = F.ttft_p50_ms;
		v[ACROSS_METRICS + 3] = F.prefill_tok_s;
		for (int j = 0; j < ACROSS_METRICS + 4; j++)
			if (isfinite(v[j]))
				vals[(size_t)j * (size_t)R + nv[j]++] = v[j];
	}
	for (int j = 0; j < (P->slo ? ACROSS_METRICS : ACROSS_NO_SLO) && rc == 0; j++) {
		struct across_row a = { .level = l->level, .runs = R, .metric = j };
		level_spread_compute(vals + (size_t)j * (size_t)R, nv[j], &a.s);
		rc = across_add(P, &a);
	}
	/* the curves show the mean over the runs of each figure */
	if (rc == 0) {
		double c[4];
		for (int j = 0; j < 4; j++)
			c[j] = mean_of(vals + (size_t)(ACROSS_METRICS + j) * (size_t)R, nv[ACROSS_METRICS + j]);
		rc = curve_add(P->cv, P->r, (double)l->level, c[0], c[1], c[2], c[3]);
	}
	free(sub);
	free(sr);
	free(vals);
	free(nv);
	return rc;
}

/* The stored error class as a string that outlives the row (the rows' own text
 * is gone at the next row). */

static int bench_row(void *ctx, const struct store_bench_read *x)
{
	struct bench_pass *P = ctx;
	struct level *l = &P->l;
	if (x->level != l->level) {
		if (l->level != INT64_MIN) {
			int rc = emit_level(P, l);
			if (rc)
				return rc;
		}
		level_reset(l, x->level);
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct level_request *rq = realloc(l->rq, cap * sizeof *rq);
		if (rq)
			l->rq = rq;
		int64_t *seq = rq ? realloc(l->seq, cap * sizeof *seq) : NULL;
		if (!seq)
			return -ENOMEM;
		l->seq = seq;
		l->cap = cap;
	}
	if (P->n_spans == P->cap_spans) {
		size_t cap = P->cap_spans ? P->cap_spans * 2 : 256;
		struct span *sp = realloc(P->spans, cap * sizeof *sp);
		if (!sp)
			return -ENOMEM;
		P->spans = sp;
		P->cap_spans = cap;
	}
	double *gaps = NULL;
	size_t n_gaps = 0;
	int rc = report_bench_gaps(x->itl_json, &gaps, &n_gaps);
	if (rc == -EINVAL)
		return -EBADMSG;
	if (rc)
		return rc;
	P->rows++;
	/* the stored row as the one definition of the figures reads it (stats/level.h) */
	l->seq[l->n] = x->seq;
	struct level_request rq = report_level_request(x);
	rq.gaps_ms = gaps;
	rq.n_gaps = n_gaps;
	l->rq[l->n++] = rq;
	P->spans[P->n_spans++] = (struct span){ level_request_start(&l->rq[l->n - 1]), x->t_first_token, x->t_last,
						  P->n_spans };
	const char *fp = x->fingerprint_hash;
	if (l->fps == 0 || strncmp(l->fp, fp, 12) != 0) {
		if (l->fps == 0)
			snprintf(l->fp, sizeof l->fp, "%.12s", fp);
		l->fps += l->fps == 0 || strncmp(l->fp, fp, 12) != 0;
	}
	return 0;
}

static void emit_across(struct bench_pass *P, const struct report_run *run)
{
	char id[48];
	snprintf(id, sizeof id, "bench_%lld_across", (long long)run->id);
	static const char *const h[] = { "level", "metric", "runs", "runs with a value", "mean", "t 95% low",
					 "t 95% high", "sd", "CV %", "stability" };
	char title[160];
	snprintf(title, sizeof title, "Run %lld across its %lld repeats: mean, Student-t 95%% interval, coefficient of "
		 "variation", (long long)run->id, (long long)P->repeats);
	report_doc_table(P->d, id, title, 10, h);
	for (size_t i = 0; i < P->n_across; i++) {
		const struct across_row *a = &P->across[i];
		char label[32];
		snprintf(label, sizeof label, "%lld", (long long)a->level);
		report_doc_row(P->d);
		report_doc_cell(P->d, label);
		report_doc_cell(P->d, across_names[a->metric]);
		report_doc_num(P->d, P->q, "%.0f", (double)a->runs);
		report_doc_num(P->d, P->q, "%.0f", (double)a->s.n);
		report_doc_num(P->d, P->q, "%.3f", a->s.mean);
		report_doc_num(P->d, P->q, "%.3f", a->s.low);
		report_doc_num(P->d, P->q, "%.3f", a->s.high);
		report_doc_num(P->d, P->q, "%.3f", a->s.sd);
		report_doc_num(P->d, P->q, "%.1f", 100 * a->s.cv);
		report_doc_cell(P->d, a->s.unstable ? "UNSTABLE (CV > 20%)" : isfinite(a->s.cv) ? "stable" : "n/a");
	}
	report_doc_note(P->d, "Each repeat is one run of every level (runs interleaved); a figure is computed per run "
			      "(a run's p99 is that run's p99) and only then compared: percentiles are never pooled "
			      "across runs. Invalid runs of a level are left out (runs with a value). The interval is "
			      "Student's t on the runs' values (n - 1 degrees of freedom); CV is sd / |mean|, flagged above "
			      "20%%. The definitions are sixi-bench's live summary's (stats/level.h, stats/slo.h); with "
			      "an SLO, goodput is good requests per second of the run's wall time and attainment good / "
			      "scheduled requests.");
}

/* The run's requests on one time axis: start (send, or the intended arrival) to
 * first token, then first to last token, one line per request in start order. */
static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->order > y->order) - (x->order < y->order);
}

static void emit_timeline(struct bench_pass *P, const struct report_run *run)
{
	if (P->n_spans == 0)
		return;
	qsort(P->spans, P->n_spans, sizeof *P->spans, cmp_span);
	int64_t t0 = P->spans[0].start;
	/* a page stays readable (and its inline SVG small): at most ~TIMELINE_MAX lines,
	 * every k-th request in start order, said in the title */
	enum { TIMELINE_MAX = 2000 };
	size_t step = (P->n_spans + TIMELINE_MAX - 1) / TIMELINE_MAX;
	char id[48], title[160];
	snprintf(id, sizeof id, "timeline-%lld", (long long)run->id);
	if (step > 1)
		snprintf(title, sizeof title, "Run %lld: one request in %zu of its %zu, from start to first token to "
			 "last token", (long long)run->id, step, P->n_spans);
	else
		snprintf(title, sizeof title, "Run %lld: each request from start to first token to last token",
			 (long long)run->id);
	static const char *const series[] = { "start to first token", "first to last token" };
	report_doc_plot(P->d, id, title, "seconds since the run's first start", "request (in start order)", false, 2,
			series);
	report_doc_plot_free_x(P->d);
	for (size_t i = 0; i < P->n_spans; i += step) {
		const struct span *s = &P->spans[i];
		double y = (double)(i + 1);
		if (!s->first)
			continue; /* failed before a token: nothing to draw */
		report_doc_point(P->d, 0, (double)(s->start - t0) / 1e9, y);
		report_doc_point(P->d, 0, (double)(s->first - t0) / 1e9, y);
		report_doc_point(P->d, 0, (double)(s->first - t0) / 1e9, NAN);
		if (s->last > s->first) {
			report_doc_point(P->d, 1, (double)(s->first - t0) / 1e9, y);
			report_doc_point(P->d, 1, (double)(s->last - t0) / 1e9, y);
			report_doc_point(P->d, 1, (double)(s->last - t0) / 1e9, NAN);
		}
	}
}

/* sixi-bench search: goodput of each probe against its offered load, with the
 * bracket the bisection ended on. A probe's load is kept in the run's summary
 * (runs.summary_json.search, written by the search as it decided), not in its
 * rows, so this plot draws the search's own figures. */
static int cmp_xy(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

static int emit_search(struct store *s, struct report_doc *d, const struct report_run *run, char *err, size_t errlen)
{
	struct store_run_info info = { 0 };
	int rc = store_run_get(s, run->id, &info, err, errlen);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	cJSON *sum = cJSON_Parse(info.summary_json ? info.summary_json : "{}");
	const cJSON *probes = json_path(sum, "search.probes");
	int np = cJSON_IsArray(probes) ? cJSON_GetArraySize(probes) : 0;
	double lo = NAN, hi = NAN, best = NAN, ymax = 0;
	json_get_double(sum, "search.result.bracket_low", &lo);
	json_get_double(sum, "search.result.bracket_high", &hi);
	json_get_double(sum, "search.result.sustainable", &best);
	const char *mode = json_get_str(sum, "search.mode");
	double *xy = np ? malloc((size_t)np * 2 * sizeof *xy) : NULL;
	int n = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, probes)
	{
		double x, y;
		if (xy && json_get_double(p, "load", &x) && json_get_double(p, "goodput_rps", &y)) {
			xy[2 * n] = x;
			xy[2 * n + 1] = y;
			n++;
			ymax = y > ymax ? y : ymax;
		}
	}
	if (n > 0) {
		qsort(xy, (size_t)n, 2 * sizeof *xy, cmp_xy);
		static const char *const series[] = { "goodput (good requests/s)", "search bracket", "sustainable load" };
		char id[48], title[128];
		snprintf(id, sizeof id, "goodput-%lld", (long long)run->id);
		snprintf(title, sizeof title, "Run %lld: goodput of each probe, and the bracket the search ended on",
			 (long long)run->id);
		bool conc = mode && strcmp(mode, "concurrency") == 0;
		report_doc_plot(d, id, title, conc ? "concurrency (streams)" : "offered rate (requests/s)",
				"good requests/s", false, 3, series);
		report_doc_plot_free_x(d);
		for (int i = 0; i < n; i++)
			report_doc_point(d, 0, xy[2 * i], xy[2 * i + 1]);
		double top = ymax > 0 ? ymax * 1.1 : 1;
		if (isfinite(lo) && isfinite(hi)) {
			report_doc_point(d, 1, lo, 0);
			report_doc_point(d, 1, lo, top);
			report_doc_point(d, 1, lo, NAN);
			report_doc_point(d, 1, hi, 0);
			report_doc_point(d, 1, hi, top);
		}
		for (int i = 0; isfinite(best) && i < n; i++)
			if (xy[2 * i] == best) {
				report_doc_point(d, 2, xy[2 * i], xy[2 * i + 1]);
				break;
			}
	} else if (np > 0 && !xy) {
		rc = -ENOMEM;
	}
	free(xy);
	cJSON_Delete(sum);
	store_run_info_finish(&info);
	return rc;
}

static int bench_run(struct store *s, struct report_doc *d, const struct report_run *run, struct curves *cv, int r,
		     char *err, size_t errlen)
{
	char sql[600], q[32], title[512];
	store_bench_each_sql(run->id, sql, sizeof sql);
	snprintf(q, sizeof q, "bench_%lld", (long long)run->id);
	report_doc_query(d, q, sql);
	bool unique = report_run_unique_prompts(run->workload, run->protocol_json);
	cJSON *proto = cJSON_Parse(run->protocol_json);
	int64_t repeats = 1, rounds = 0;
	if (strcmp(run->workload, "sweep") == 0 && json_get_i64(proto, "repeats", &repeats) &&
	    !json_get_i64(proto, "rounds", &rounds))
		repeats = 1;
	const char *slo_text = json_get_str(proto, "slo");
	bool has_slo = slo_text != NULL;
	struct slo slo;
	char why[768];
	int prc = has_slo ? slo_parse(slo_text, &slo, why, sizeof why) : 0;
	cJSON_Delete(proto);
	if (prc) {
		err_set(err, errlen, "run %lld: its protocol's slo does not parse (%s)", (long long)run->id, why);
		return -EINVAL;
	}
	if (repeats > 1 && rounds < 1) {
		err_set(err, errlen, "run %lld: its protocol says repeats %lld but rounds %lld: the rows cannot be split "
			"into runs", (long long)run->id, (long long)repeats, (long long)rounds);
		return -EINVAL;
	}
	const char *h1[] = { level_name(run->workload), "requests", "streams", "tok/s aggregate", "tok/s per stream",
			     "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "prefill tok/s p50", "SSE events per token",
			     "follow-up wait p50 ms", "fingerprint", "status" };
	const char *hr[] = { level_name(run->workload), "repeat", "requests", "streams", "tok/s aggregate",
			     "tok/s per stream", "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "prefill tok/s p50",
			     "SSE events per token", "follow-up wait p50 ms", "fingerprint", "status" };
	/* a run killed mid-way stays 'running', one that hit an error is 'failed': never shown as complete */
	bool complete = strcmp(run->status, "done") == 0;
	snprintf(title, sizeof title, "Run %lld: %s, %s%s%s%s%s", (long long)run->id,
		 run->workload[0] ? run->workload : "bench", run->model[0] ? run->model : "model not recorded",
		 repeats > 1 ? ", each repeat on its own row" : "",
		 complete ? "" : " (INCOMPLETE: status '", complete ? "" : run->status,
		 complete ? "" : "': the run stopped before its end; its rows are what was measured until then)");
	if (run->memory_warning[0])
		report_doc_para(d, "Warning (run %lld): when it started, %s. Its numbers may be lower than the "
				   "server can reach.", (long long)run->id, run->memory_warning);
	if (repeats > 1)
		report_doc_table(d, q, title, 14, hr);
	else
		report_doc_table(d, q, title, 13, h1);
	struct bench_pass P = { .d = d, .q = q, .cv = cv, .r = r, .unique = unique, .repeats = repeats, .rounds = rounds,
				.slo = has_slo ? &slo : NULL };
	level_reset(&P.l, INT64_MIN);
	int rc = store_bench_each(s, run->id, bench_row, &P, err, errlen);
	if (rc == 0 && P.l.level != INT64_MIN)
		rc = emit_level(&P, &P.l);
	level_reset(&P.l, INT64_MIN);
	free(P.l.rq);
	free(P.l.seq);
	if (rc == 0 && P.rows == 0) {
		err_set(err, errlen, "run %lld has no measured requests (only warm-up or none)", (long long)run->id);
		rc = -EINVAL;
	}
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory reading bench_requests");
	if (rc == -EBADMSG) {
		err_set(err, errlen, "run %lld: a bench_requests row's itl_json is not a JSON array of non-negative "
			"numbers (ns); the file was changed by hand or is damaged", (long long)run->id);
		rc = -EINVAL;
	}
	if (rc == 0) {
		report_doc_note(d, "The figures are sixi-bench's own (one function computes both; sixi(7), SERVING "
				   "FIGURES). tok/s aggregate: sum of usage.completion_tokens of the successful requests over "
				   "the level's wall time (first start to last done); per stream: (completion_tokens - 1) / "
				   "(t_last - t_first_token) per request, averaged. TTFT: start (send, or the intended arrival "
				   "of a rate run) to first token. Warm-up and readiness requests are excluded, failed requests "
				   "counted and left out. A level where a response carried no usage%s, or no request succeeded, "
				   "is shown as invalid and left out.",
				unique ? ", cached_tokens > 0 although prompts were unique" : "");
		if (repeats > 1)
			emit_across(&P, run);
		emit_timeline(&P, run);
		if (strcmp(run->workload, "search") == 0)
			rc = emit_search(s, d, run, err, errlen);
	}
	free(P.across);
	free(P.spans);
	return rc;
}

/* The levels no other level beats on both throughput (higher) and latency (lower),
 * in order of latency: the Pareto front of run r's valid points. */
static void emit_pareto(struct report_doc *d, const struct curves *cv, const int64_t *run_ids, size_t nruns)
{
	char names[REPORT_BENCH_MAX_RUNS * 2][48];
	const char *series[REPORT_BENCH_MAX_RUNS * 2];
	for (size_t r = 0; r < nruns; r++) {
		snprintf(names[2 * r], sizeof names[0], "run %lld levels", (long long)run_ids[r]);
		snprintf(names[2 * r + 1], sizeof names[0], "run %lld Pareto front", (long long)run_ids[r]);
		series[2 * r] = names[2 * r];
		series[2 * r + 1] = names[2 * r + 1];
	}
	report_doc_plot(d, "pareto", "Throughput against latency; the front: no other level has both more throughput "
			"and less latency", "TTFT p50 (ms)", "completion tokens/s (aggregate)", false, (int)(2 * nruns), series);
	report_doc_plot_free_x(d);
	for (size_t r = 0; r < nruns; r++) {
		size_t n = cv->n[r];
		for (size_t k = 0; k < n; k++)
			if (isfinite(cv->agg[r][k]) && isfinite(cv->ttft[r][k]))
				report_doc_point(d, (int)(2 * r), cv->ttft[r][k], cv->agg[r][k]);
		/* the front, by increasing latency: a point is on it when no point with
		 * lower-or-equal latency has more throughput */
		bool *used = calloc(n ? n : 1, sizeof *used);
		if (!used)
			return; /* the plot lacks its front; report_doc has no error to keep for this */
		for (;;) {
			size_t best = n;
			for (size_t k = 0; k < n; k++)
				if (!used[k] && isfinite(cv->agg[r][k]) && isfinite(cv->ttft[r][k]) &&
				    (best == n || cv->ttft[r][k] < cv->ttft[r][best]))
					best = k;
			if (best == n)
				break;
			used[best] = true;
			bool dominated = false;
			for (size_t k = 0; k < n; k++)
				if (k != best && isfinite(cv->agg[r][k]) && isfinite(cv->ttft[r][k]) &&
				    cv->ttft[r][k] <= cv->ttft[r][best] && cv->agg[r][k] > cv->agg[r][best])
					dominated = true;
			if (!dominated)
				report_doc_point(d, (int)(2 * r + 1), cv->ttft[r][best], cv->agg[r][best]);
		}
		free(used);
	}
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
		emit_pareto(d, &cv, o->runs, o->nruns);
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
