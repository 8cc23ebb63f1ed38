/* eval — see eval.h.
 *
 * One query per run reads every row of that run ordered by task, repeat and
 * attempt (the eval_rows_run index gives the task order), and one pass folds it
 * into per-task and per-repeat counts; the two runs are then merged by task id.
 * Cost is O(rows) plus the bootstrap, O(resamples x tasks). */
#include "report/eval.h"
#include "core/err.h"
#include "report/db.h"
#include "report/doc.h"
#include "core/args.h"
#include "core/buf.h"
#include "core/json.h"
#include "stats/boot.h"
#include "stats/stats.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const classes[] = { "pass", "wrong", "truncated", "loop", "api_error", "environment" };
#define NCLASSES 6
#define CLASS_UNSCORED 4 /* api_error and environment: not the model's failure */

struct task {
	const char *id;   /* in the side's arena */
	int64_t pass, n;  /* scored final attempts */
	int64_t unscored; /* final attempts that ended in api_error or environment */
};

struct side {
	struct report_run run;
	struct arena arena;
	struct task *tasks; /* sorted by id (the query's order) */
	size_t ntasks, tasks_cap;
	int64_t *rep_pass, *rep_n; /* (nrep) indexed by repeat_index */
	size_t nrep;
	int64_t cls[NCLASSES];     /* final attempts by failure class */
	int64_t rows;              /* attempts */
	int64_t tokens, token_rows;
	char sql[1024];
	const char *prev;          /* task id of the last row read, in the arena */
	char bad[256];             /* why a row was refused */
};

#define O struct report_compare_opts
static const struct args_opt compare_options[] = {
	ARGS_STRING_OPT("--db", "DB", O, db, 0, "the database of both runs"),
	ARGS_FLAG_OPT("--intersect", O, intersect, true, 0, "compare the tasks both runs have"),
	ARGS_FLAG_OPT("--allow-config-diff", O, allow_config_diff, true, 0, "compare runs of different configurations"),
	ARGS_INT_OPT("--seed", "N", O, seed, 0, 9.3e18, 0, "bootstrap seed"),
	ARGS_INT_OPT("--resamples", "N", O, resamples, 100, 1000000, 0, "bootstrap resamples (default 2000)"),
	ARGS_TABLE_END,
};
#undef O

int report_compare_args(int argc, char **argv, struct report_compare_opts *o, char *err, size_t errlen)
{
	*o = (struct report_compare_opts){ .seed = 20260101, .resamples = 2000 };
	static const struct args_spec spec = { .prog = "sixi-report", .opts = compare_options,
					       .max_pos = 2 };
	const char *pos[2];
	int npos = 0;
	char why[512];
	int rc = args_parse(&spec, 0, argc, argv, o, pos, &npos, why, sizeof why);
	if (rc) {
		err_set(err, errlen, "compare: %s", rc == ARGS_HELP ? "--help: see sixi-report --help" : why);
		return -EINVAL;
	}
	if ((npos > 0 && (rc = args_i64("compare RUN_A", pos[0], 1, INT64_MAX, &o->run_a, err, errlen)) != 0) ||
	    (npos > 1 && (rc = args_i64("compare RUN_B", pos[1], 1, INT64_MAX, &o->run_b, err, errlen)) != 0))
		return rc;
	if (npos != 2) {
		err_set(err, errlen, "compare: expected two run ids: sixi-report compare --db DB RUN_A RUN_B");
		return -EINVAL;
	}
	if (!o->db) {
		err_set(err, errlen, "compare: --db DB is required");
		return -EINVAL;
	}
	if (o->run_a == o->run_b) {
		err_set(err, errlen, "compare: RUN_A and RUN_B are both %lld; compare two different runs",
			 (long long)o->run_a);
		return -EINVAL;
	}
	return 0;
}

/* ---- loading ---- */

static void side_finish(struct side *s)
{
	report_run_finish(&s->run);
	arena_finish(&s->arena);
	free(s->tasks);
	free(s->rep_pass);
	free(s->rep_n);
}

static int class_index(const char *c)
{
	for (int i = 0; i < NCLASSES; i++)
		if (strcmp(c, classes[i]) == 0)
			return i;
	return -1;
}

struct pending {
	bool set;
	int64_t repeat, pass;
	int cls;
};

static int commit(struct side *s, struct pending *p)
{
	if (!p->set)
		return 0;
	struct task *t = &s->tasks[s->ntasks - 1];
	s->cls[p->cls]++;
	if (p->cls >= CLASS_UNSCORED) {
		t->unscored++;
	} else {
		if ((size_t)p->repeat >= s->nrep) {
			size_t n = (size_t)p->repeat + 1;
			int64_t *a = realloc(s->rep_pass, n * sizeof *a), *b = a ? realloc(s->rep_n, n * sizeof *b) : NULL;
			if (a)
				s->rep_pass = a;
			if (!a || !b)
				return -ENOMEM;
			s->rep_n = b;
			for (size_t i = s->nrep; i < n; i++)
				s->rep_pass[i] = s->rep_n[i] = 0;
			s->nrep = n;
		}
		t->n++;
		t->pass += p->pass;
		s->rep_n[p->repeat]++;
		s->rep_pass[p->repeat] += p->pass;
	}
	p->set = false;
	return 0;
}

/* One row of a side's run (task, repeat, attempt order); the store marks the
 * final attempt of each (task, repeat), the outcome that is counted. */
static int side_row(void *ctx, const struct store_eval_read *r)
{
	struct side *s = ctx;
	int ci = r->failure_class[0] ? class_index(r->failure_class) : -1;
	if (r->repeat < 0 || r->repeat > 1000000 || ci < 0) {
		snprintf(s->bad, sizeof s->bad, "eval_rows id %lld (run %lld): repeat_index %lld or failure_class '%s' is invalid",
			 (long long)r->id, (long long)s->run.id, (long long)r->repeat, r->failure_class);
		return -EDOM;
	}
	if (!s->prev || strcmp(s->prev, r->task_id) != 0) {
		if (s->ntasks >= s->tasks_cap) {
			size_t cap = s->tasks_cap ? s->tasks_cap * 2 : 1024;
			struct task *t = realloc(s->tasks, cap * sizeof *t);
			if (!t)
				return -ENOMEM;
			s->tasks = t;
			s->tasks_cap = cap;
		}
		const char *id = arena_strdup(&s->arena, r->task_id);
		if (!id)
			return -ENOMEM;
		s->tasks[s->ntasks++] = (struct task){ .id = id };
		s->prev = id;
	}
	s->rows++;
	if (r->completion_tokens >= 0) {
		s->tokens += r->completion_tokens;
		s->token_rows++;
	}
	if (!r->final)
		return 0;
	struct pending p = { true, r->repeat, r->pass ? 1 : 0, ci };
	return commit(s, &p);
}

static int load_side(struct store *db, struct side *s, char *err, size_t errlen)
{
	arena_init(&s->arena, 256 * 1024);
	store_eval_each_sql(s->run.id, STORE_EVAL_BY_TASK, s->sql, sizeof s->sql);
	int rc = store_eval_each(db, s->run.id, STORE_EVAL_BY_TASK, side_row, s, err, errlen);
	if (rc == -EDOM) {
		err_set(err, errlen, "%s", s->bad);
		rc = -EINVAL;
	}
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory reading eval_rows");
	if (rc == 0 && s->rows == 0) {
		err_set(err, errlen, "run %lld has no eval rows", (long long)s->run.id);
		rc = -EINVAL;
	}
	return rc;
}

/* ---- configuration ---- */

/* Lists the top-level protocol keys whose values differ, ignoring what a
 * condition is allowed to change. Returns the number of differing keys. */
/* ---- frozen configurations: what may differ between two compared runs ---- */

/* Keys of the frozen configuration (run.c's frozen_config) whose difference
 * makes a comparison invalid: other tasks (dataset contents), other analysis,
 * other repeats or budgets. Everything else (model, endpoint, template,
 * sampling, server, client timeouts) is what a condition is, and is named in
 * the report's header. Matched as a prefix of the nested key. */
static const char *const refused_keys[] = {
	"protocol.analysis", "protocol.repeats", "protocol.attempts", "protocol.sampling.max_tokens",
	"protocol.sampling.reasoning_max_tokens", "protocol.loop_stop", "datasets",
};
/* Compared whole, named by their key only (long lists, opaque blobs). */
static const char *const whole_keys[] = {"task_order", "excluded", "server_fingerprint", "power_plan",
					 "grader_limits"};

struct cfg_diff {
	char *allowed;  /* "key: A vs B; ..." */
	size_t allowed_cap;
	char *refused;  /* "key, key" */
	size_t refused_cap;
	int n_allowed, n_refused;
};

static bool key_in(const char *key, const char *const *list, size_t n, bool prefix)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(list[i]);
		if (prefix ? strncmp(key, list[i], l) == 0 && (key[l] == 0 || key[l] == '.' || key[l] == '[')
			   : strcmp(key, list[i]) == 0)
			return true;
	}
	return false;
}

/* The dataset paths may differ; their contents (sha256) may not. */
static bool refused_key(const char *key)
{
	if (strncmp(key, "datasets[", 9) == 0 && strstr(key, "].path"))
		return false;
	return key_in(key, refused_keys, sizeof refused_keys / sizeof refused_keys[0], true);
}

static void short_value(const cJSON *v, char *out, size_t n)
{
	char *t = v ? cJSON_PrintUnformatted(v) : NULL;
	snprintf(out, n, "%s", t ? t : "(absent)");
	if (t && strlen(t) >= n && n > 4)
		memcpy(out + n - 4, "...", 4);
	free(t);
}

static void note_diff(void *ctx, const char *key, const cJSON *a, const cJSON *b)
{
	struct cfg_diff *d = ctx;
	if (refused_key(key)) {
		size_t l = strlen(d->refused);
		snprintf(d->refused + l, d->refused_cap - l, "%s%s", d->n_refused++ ? ", " : "", key);
		return;
	}
	char va[96], vb[96];
	short_value(a, va, sizeof va);
	short_value(b, vb, sizeof vb);
	size_t l = strlen(d->allowed);
	snprintf(d->allowed + l, d->allowed_cap - l, "%s%s: %s vs %s", d->n_allowed++ ? "; " : "", key, va, vb);
}

static bool whole_key(void *ctx, const char *key)
{
	(void)ctx;
	return key_in(key, whole_keys, sizeof whole_keys / sizeof whole_keys[0], false);
}

/* Compares two frozen configurations: refused (invalidating) keys into
 * refused, the others with both values into allowed. Returns the number of
 * refused differences. */
static int config_diff(const char *ja, const char *jb, char *refused, size_t rn, char *allowed, size_t an)
{
	cJSON *a = cJSON_Parse(ja), *b = cJSON_Parse(jb);
	struct cfg_diff d = {allowed, an, refused, rn, 0, 0};
	refused[0] = allowed[0] = 0;
	if (!a || !b)
		note_diff(&d, "datasets (a run's protocol_json is not valid JSON)", NULL, NULL);
	else
		json_diff(a, b, whole_key, note_diff, &d);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return d.n_refused;
}

/* The protocol's pre-registered tests (analysis.tests), in order, and the
 * alternative and alpha fixed with them (for the record in the report). */
static int preregistered(const char *protocol, char names[8][16], char *plan, size_t planlen)
{
	cJSON *p = cJSON_Parse(protocol);
	cJSON *analysis = cJSON_GetObjectItemCaseSensitive(p, "analysis");
	cJSON *tests = cJSON_GetObjectItemCaseSensitive(analysis, "tests");
	const char *alt = json_get_str(analysis, "alternative");
	double alpha = 0;
	bool has_alpha = json_get_double(analysis, "alpha", &alpha);
	int n = 0;
	for (cJSON *t = tests ? tests->child : NULL; t && n < 8; t = t->next)
		if (cJSON_IsString(t))
			snprintf(names[n++], 16, "%s", t->valuestring);
	snprintf(plan, planlen, "%s%s%s%s", alt ? "alternative " : "", alt ? alt : "",
		 has_alpha ? (alt ? ", alpha " : "alpha ") : "", "");
	if (has_alpha) {
		size_t l = strlen(plan);
		snprintf(plan + l, planlen - l, "%g", alpha);
	}
	cJSON_Delete(p);
	return n;
}

/* ---- analysis ---- */

struct pair {
	const struct task *a, *b;
};

struct cmp {
	const struct report_compare_opts *o;
	struct side *A, *B;
	struct pair *pairs; /* tasks in both runs with scored attempts on both sides */
	size_t npairs;
	int64_t pass_a, n_a, pass_b, n_b; /* pooled over the paired tasks */
	char la[64], lb[64];              /* labels: "A (run 3)" */
	double p_of[8];                   /* two-sided p of each pre-registered test, for Holm */
	const char *name_of[8];
	int nprereg_p;
};

#define Q_A "rows_a"
#define Q_B "rows_b"
#define Q_AB "rows_a+rows_b"

static void t_wilson(struct report_doc *d, struct cmp *c)
{
	static const char *const h[] = { "condition", "passes", "attempts", "rate %", "Wilson 95% low %",
					 "Wilson 95% high %" };
	report_doc_table(d, "pooled", "Pooled pass counts with Wilson intervals", 6, h);
	for (int s = 0; s < 2; s++) {
		int64_t k = s ? c->pass_b : c->pass_a, n = s ? c->n_b : c->n_a;
		double lo = NAN, hi = NAN;
		if (n > 0 && stats_wilson(k, n, 0.95, &lo, &hi) != 0)
			lo = hi = NAN;
		report_doc_row(d);
		report_doc_cell(d, s ? c->lb : c->la);
		report_doc_num(d, s ? Q_B : Q_A, "%.0f", (double)k);
		report_doc_num(d, s ? Q_B : Q_A, "%.0f", (double)n);
		report_doc_num(d, s ? Q_B : Q_A, "%.1f", n ? 100.0 * (double)k / (double)n : NAN);
		report_doc_num(d, s ? Q_B : Q_A, "%.1f", 100 * lo);
		report_doc_num(d, s ? Q_B : Q_A, "%.1f", 100 * hi);
	}
	report_doc_note(d, "Attempts are the last attempt of each task in each repeat; api_error and environment "
			   "outcomes are excluded (they are not the model failing).");
}

static double t_fisher(struct report_doc *d, struct cmp *c)
{
	static const char *const h[] = { "test", "A pass", "A fail", "B pass", "B fail", "odds ratio",
					 "p two-sided", "p A>B", "p A<B" };
	struct stats_fisher f = { NAN, NAN, NAN, NAN };
	if (stats_fisher_exact(c->pass_a, c->n_a - c->pass_a, c->pass_b, c->n_b - c->pass_b, &f) != 0)
		f.p_two_sided = NAN;
	report_doc_table(d, "fisher", "Fisher's exact test on pooled attempts", 9, h);
	report_doc_row(d);
	report_doc_cell(d, "Fisher");
	report_doc_num(d, Q_A, "%.0f", (double)c->pass_a);
	report_doc_num(d, Q_A, "%.0f", (double)(c->n_a - c->pass_a));
	report_doc_num(d, Q_B, "%.0f", (double)c->pass_b);
	report_doc_num(d, Q_B, "%.0f", (double)(c->n_b - c->pass_b));
	report_doc_num(d, Q_AB, "%.3f", f.odds_ratio);
	report_doc_num(d, Q_AB, "%.4g", f.p_two_sided);
	report_doc_num(d, Q_AB, "%.4g", f.p_greater);
	report_doc_num(d, Q_AB, "%.4g", f.p_less);
	report_doc_note(d, "Assumes independent attempts; a task's repeats are not independent, so read the paired "
			   "tests below for the same question.");
	return f.p_two_sided;
}

static double t_mcnemar(struct report_doc *d, struct cmp *c)
{
	static const char *const h[] = { "test", "tasks", "both solved", "only A", "only B", "neither",
					 "p two-sided", "p one-sided (A>B)", "mid-p two-sided" };
	int64_t both = 0, oa = 0, ob = 0, none = 0;
	for (size_t i = 0; i < c->npairs; i++) {
		bool a = c->pairs[i].a->pass > 0, b = c->pairs[i].b->pass > 0;
		both += a && b;
		oa += a && !b;
		ob += !a && b;
		none += !a && !b;
	}
	struct stats_mcnemar m = { NAN, NAN, NAN, NAN };
	if (stats_mcnemar_exact(oa, ob, &m) != 0)
		m.p_two_sided = NAN;
	report_doc_table(d, "mcnemar", "Exact McNemar test over tasks (solved = passed in any repeat)", 9, h);
	report_doc_row(d);
	report_doc_cell(d, "McNemar");
	report_doc_num(d, Q_AB, "%.0f", (double)c->npairs);
	report_doc_num(d, Q_AB, "%.0f", (double)both);
	report_doc_num(d, Q_AB, "%.0f", (double)oa);
	report_doc_num(d, Q_AB, "%.0f", (double)ob);
	report_doc_num(d, Q_AB, "%.0f", (double)none);
	report_doc_num(d, Q_AB, "%.4g", m.p_two_sided);
	report_doc_num(d, Q_AB, "%.4g", m.p_one_sided);
	report_doc_num(d, Q_AB, "%.4g", m.p_mid_two_sided);
	report_doc_note(d, "Paired: only the discordant tasks carry information.");
	return m.p_two_sided;
}

static double t_sign(struct report_doc *d, struct cmp *c)
{
	static const char *const h[] = { "test", "A more passes", "B more passes", "tied", "p two-sided" };
	int64_t pos = 0, neg = 0, ties = 0;
	for (size_t i = 0; i < c->npairs; i++) {
		const struct task *a = c->pairs[i].a, *b = c->pairs[i].b;
		/* rates, so that tasks with a different number of scored repeats compare fairly */
		double diff = (double)a->pass * (double)b->n - (double)b->pass * (double)a->n;
		pos += diff > 0;
		neg += diff < 0;
		ties += diff == 0;
	}
	struct stats_sign s = { .p_two_sided = NAN };
	if (stats_sign_counts(pos, neg, &s) != 0)
		s.p_two_sided = NAN;
	report_doc_table(d, "sign", "Sign test on per-task pass rates across repeats", 5, h);
	report_doc_row(d);
	report_doc_cell(d, "sign");
	report_doc_num(d, Q_AB, "%.0f", (double)pos);
	report_doc_num(d, Q_AB, "%.0f", (double)neg);
	report_doc_num(d, Q_AB, "%.0f", (double)ties);
	report_doc_num(d, Q_AB, "%.4g", s.p_two_sided);
	report_doc_note(d, "Exact, ties dropped; each task counts once however often it was repeated.");
	return s.p_two_sided;
}

static double t_bootstrap(struct report_doc *d, struct cmp *c)
{
	static const char *const h[] = { "test", "A - B points", "percentile low", "percentile high", "BCa low",
					 "BCa high" };
	struct stats_boot_task *t = malloc((c->npairs ? c->npairs : 1) * sizeof *t);
	struct stats_boot b = { .estimate = NAN, .pct_low = NAN, .pct_high = NAN, .bca_low = NAN, .bca_high = NAN };
	for (size_t i = 0; t && i < c->npairs; i++)
		t[i] = (struct stats_boot_task){ c->pairs[i].a->pass, c->pairs[i].a->n, c->pairs[i].b->pass,
						 c->pairs[i].b->n };
	if (t && c->npairs && stats_boot_paired(t, c->npairs, (size_t)c->o->resamples, 0.95, c->o->seed, &b) != 0)
		b.estimate = NAN;
	free(t);
	report_doc_table(d, "bootstrap", "Paired bootstrap over tasks of the difference in pass rate, 95%", 6, h);
	report_doc_row(d);
	report_doc_cell(d, "bootstrap");
	report_doc_num(d, Q_AB, "%+.1f", 100 * b.estimate);
	report_doc_num(d, Q_AB, "%+.1f", 100 * b.pct_low);
	report_doc_num(d, Q_AB, "%+.1f", 100 * b.pct_high);
	report_doc_num(d, Q_AB, "%+.1f", 100 * b.bca_low);
	report_doc_num(d, Q_AB, "%+.1f", 100 * b.bca_high);
	report_doc_note(d, "Tasks are resampled with their repeats kept together (%lld resamples, seed %llu: the "
			   "interval reproduces exactly).",
			(long long)c->o->resamples, (unsigned long long)c->o->seed);
	return NAN; /* an interval, not a p-value */
}

static double t_welch(struct report_doc *d, struct cmp *c)
{
	static const char *const h[] = { "test", "repeats A", "repeats B", "t", "df", "p two-sided" };
	double *ra = malloc((c->A->nrep + c->B->nrep + 1) * sizeof *ra), *rb = ra ? ra + c->A->nrep : NULL;
	size_t na = 0, nb = 0;
	for (size_t r = 0; ra && r < c->A->nrep; r++)
		if (c->A->rep_n[r])
			ra[na++] = 100.0 * (double)c->A->rep_pass[r] / (double)c->A->rep_n[r];
	for (size_t r = 0; rb && r < c->B->nrep; r++)
		if (c->B->rep_n[r])
			rb[nb++] = 100.0 * (double)c->B->rep_pass[r] / (double)c->B->rep_n[r];
	struct stats_welch w = { .t = NAN, .df = NAN, .p_two_sided = NAN };
	int rc = ra ? stats_welch(ra, na, rb, nb, &w) : -ENOMEM;
	free(ra);
	report_doc_table(d, "welch", "Welch's t-test on per-repeat pass rates", 6, h);
	report_doc_row(d);
	report_doc_cell(d, "Welch");
	report_doc_num(d, Q_A, "%.0f", (double)na);
	report_doc_num(d, Q_B, "%.0f", (double)nb);
	report_doc_num(d, Q_AB, "%.2f", rc ? NAN : w.t);
	report_doc_num(d, Q_AB, "%.2f", rc ? NAN : w.df);
	report_doc_num(d, Q_AB, "%.4g", rc ? NAN : w.p_two_sided);
	if (rc == -EINVAL)
		report_doc_note(d, "n/a: Welch needs at least two repeats per run.");
	else if (rc == -EDOM)
		report_doc_note(d, "n/a: no spread between repeats in either run.");
	else
		report_doc_note(d, "Run-to-run spread: each repeat's pass rate (%%) is one observation.");
	return rc ? NAN : w.p_two_sided;
}

static const struct {
	const char *name;
	double (*fn)(struct report_doc *d, struct cmp *c);
} tests[] = {
	{ "fisher", t_fisher }, { "mcnemar", t_mcnemar }, { "sign", t_sign },
	{ "bootstrap", t_bootstrap }, { "welch", t_welch },
};
#define NTESTS (sizeof tests / sizeof tests[0])

static void descriptive(struct report_doc *d, struct cmp *c)
{
	static const char *const hr[] = { "repeat", "A rate %", "B rate %" };
	report_doc_heading(d, "Run to run");
	report_doc_table(d, "repeats", "Pass rate of each repeat", 3, hr);
	size_t nrep = c->A->nrep > c->B->nrep ? c->A->nrep : c->B->nrep;
	double *va = malloc((2 * nrep + 1) * sizeof *va), *vb = va ? va + nrep : NULL;
	size_t na = 0, nb = 0;
	static const char *const series[2] = { "A", "B" };
	for (size_t r = 0; va && r < nrep; r++) {
		char label[32];
		snprintf(label, sizeof label, "%zu", r);
		double a = r < c->A->nrep && c->A->rep_n[r] ? 100.0 * (double)c->A->rep_pass[r] / (double)c->A->rep_n[r] : NAN;
		double b = r < c->B->nrep && c->B->rep_n[r] ? 100.0 * (double)c->B->rep_pass[r] / (double)c->B->rep_n[r] : NAN;
		if (isnan(a) && isnan(b))
			continue;
		report_doc_row(d);
		report_doc_cell(d, label);
		report_doc_num(d, Q_A, "%.1f", a);
		report_doc_num(d, Q_B, "%.1f", b);
		if (!isnan(a))
			va[na++] = a;
		if (!isnan(b))
			vb[nb++] = b;
	}
	double ma = NAN, sa = NAN, mb = NAN, sb = NAN;
	if (va && na && stats_mean_sd(va, na, &ma, &sa) != 0)
		ma = NAN;
	if (vb && nb && stats_mean_sd(vb, nb, &mb, &sb) != 0)
		mb = NAN;
	report_doc_row(d);
	report_doc_cell(d, "mean");
	report_doc_num(d, Q_A, "%.1f", ma);
	report_doc_num(d, Q_B, "%.1f", mb);
	report_doc_row(d);
	report_doc_cell(d, "sd");
	report_doc_num(d, Q_A, "%.1f", sa);
	report_doc_num(d, Q_B, "%.1f", sb);
	report_doc_note(d, "sd is the sample standard deviation across repeats (n - 1).");
	report_doc_plot(d, "repeats", "Pass rate per repeat", "repeat", "pass rate (%)", false, 2, series);
	for (size_t r = 0; va && r < nrep; r++) {
		if (r < c->A->nrep && c->A->rep_n[r])
			report_doc_point(d, 0, (double)r, 100.0 * (double)c->A->rep_pass[r] / (double)c->A->rep_n[r]);
		if (r < c->B->nrep && c->B->rep_n[r])
			report_doc_point(d, 1, (double)r, 100.0 * (double)c->B->rep_pass[r] / (double)c->B->rep_n[r]);
	}
	free(va);

	static const char *const hc[] = { "failure class", "A", "B" };
	report_doc_heading(d, "Outcomes and tokens");
	report_doc_table(d, "classes", "Outcome of each task's last attempt, by class", 3, hc);
	for (int i = 0; i < NCLASSES; i++) {
		report_doc_row(d);
		report_doc_cell(d, classes[i]);
		report_doc_num(d, Q_A, "%.0f", (double)c->A->cls[i]);
		report_doc_num(d, Q_B, "%.0f", (double)c->B->cls[i]);
	}
	report_doc_note(d, "Counted over every task of each run, before any intersection.");
	static const char *const ht[] = { "tokens", "A", "B" };
	report_doc_table(d, "tokens", "Completion tokens", 3, ht);
	report_doc_row(d);
	report_doc_cell(d, "per attempt");
	report_doc_num(d, Q_A, "%.0f", c->A->token_rows ? (double)c->A->tokens / (double)c->A->token_rows : NAN);
	report_doc_num(d, Q_B, "%.0f", c->B->token_rows ? (double)c->B->tokens / (double)c->B->token_rows : NAN);
	report_doc_row(d);
	report_doc_cell(d, "per solved task");
	report_doc_num(d, Q_A, "%.0f", c->A->cls[0] ? (double)c->A->tokens / (double)c->A->cls[0] : NAN);
	report_doc_num(d, Q_B, "%.0f", c->B->cls[0] ? (double)c->B->tokens / (double)c->B->cls[0] : NAN);
	report_doc_note(d, "Per solved task: all completion tokens of the run (every attempt) over its passing outcomes.");
}

/* ---- the report ---- */

/* The smallest difference (pass-rate points, centred on pbar) that n attempts
 * per side detect with 80 % power: the gap where the two-proportion sample
 * size falls to n. NAN when even the widest gap needs more. */
static double min_detectable(double pbar, int64_t n, double alpha, bool two_sided)
{
	double half = pbar < 1 - pbar ? pbar : 1 - pbar; /* room on the tighter side */
	double lo = 1e-4, hi = 2 * half - 1e-6;
	struct stats_power pw;
	if (hi <= lo || stats_power_two_prop(pbar - hi / 2, pbar + hi / 2, alpha, 0.8, two_sided, &pw) != 0 ||
	    pw.n_per_group > (double)n)
		return NAN;
	for (int i = 0; i < 60; i++) {
		double mid = (lo + hi) / 2;
		if (stats_power_two_prop(pbar - mid / 2, pbar + mid / 2, alpha, 0.8, two_sided, &pw) == 0 &&
		    pw.n_per_group <= (double)n)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* The minimum detectable difference for the attempts compared, and a flag on a
 * "no difference found" reading that the comparison could not have made: when
 * that difference is larger than the gap the run planned to detect (its
 * power_plan), or than 10 points without a plan. */
static void power_section(struct report_doc *d, struct cmp *c, const char *proto_a, const char *proto_b)
{
	int64_t n = c->n_a < c->n_b ? c->n_a : c->n_b;
	if (n < 2)
		return;
	cJSON *pa = cJSON_Parse(proto_a), *pb = cJSON_Parse(proto_b);
	double alpha = 0.05, gap = 0;
	(void)json_get_double(pa, "protocol.analysis.alpha", &alpha);
	const char *alt = json_get_str(pa, "protocol.analysis.alternative");
	bool two_sided = !alt || strcmp(alt, "two-sided") == 0;
	bool planned = json_get_double(pa, "power_plan.detect_gap", &gap) || json_get_double(pb, "power_plan.detect_gap", &gap);
	cJSON_Delete(pa);
	cJSON_Delete(pb);
	if (!(alpha > 0 && alpha < 1))
		alpha = 0.05;
	if (!(gap > 0 && gap < 1)) {
		gap = 0.10;
		planned = false;
	}
	int64_t total = c->n_a + c->n_b;
	double pbar = (double)(c->pass_a + c->pass_b) / (double)total;
	/* all passed or all failed: centre on the nearest rate one attempt away from it */
	if (pbar < 0.5 / (double)total)
		pbar = 0.5 / (double)total;
	if (pbar > 1 - 0.5 / (double)total)
		pbar = 1 - 0.5 / (double)total;
	double mdd = min_detectable(pbar, n, alpha, two_sided);
	struct stats_fisher f = { NAN, NAN, NAN, NAN };
	if (stats_fisher_exact(c->pass_a, c->n_a - c->pass_a, c->pass_b, c->n_b - c->pass_b, &f) != 0)
		f.p_two_sided = NAN;
	report_doc_heading(d, "Power");
	char mdds[64];
	if (isnan(mdd))
		snprintf(mdds, sizeof mdds, "larger than any difference around that rate");
	else
		snprintf(mdds, sizeof mdds, "%.1f percentage points", mdd * 100);
	report_doc_para(d, "With %lld and %lld scored attempts, the smallest difference these runs could detect with 80 %% "
			   "power at alpha %g (%s, around the pooled pass rate of %.1f %%) is %s. Attempts of one task "
			   "are not independent, so the real figure is larger still.",
			(long long)c->n_a, (long long)c->n_b, alpha, two_sided ? "two-sided" : "one-sided", pbar * 100, mdds);
	if (!isnan(f.p_two_sided) && f.p_two_sided >= alpha) {
		bool under = isnan(mdd) || mdd > gap;
		if (under)
			report_doc_para(d, "UNDERPOWERED: no difference found (Fisher p = %.3g), but these runs could not "
					   "have detected a difference of %.1f points (%s): \"no difference\" here is not "
					   "evidence that the two are the same. Plan the runs with `sixi-eval run "
					   "--detect-gap`.",
					f.p_two_sided, gap * 100,
					planned ? "the gap the run was planned to detect" : "no gap was planned; 10 points assumed");
		else
			report_doc_para(d, "No difference found (Fisher p = %.3g); the runs had 80 %% power for differences of "
					   "%.1f points or more, which covers the %.1f points %s.",
					f.p_two_sided, mdd * 100, gap * 100,
					planned ? "the run was planned to detect" : "assumed without a plan");
	}
}

static int merge(struct cmp *c, char *err, size_t errlen)
{
	struct side *A = c->A, *B = c->B;
	size_t i = 0, j = 0, only_a = 0, only_b = 0, common = 0;
	const char *ex_a = NULL, *ex_b = NULL;
	c->pairs = malloc((A->ntasks < B->ntasks ? A->ntasks : B->ntasks) * sizeof *c->pairs + 1);
	if (!c->pairs)
		return -ENOMEM;
	while (i < A->ntasks || j < B->ntasks) {
		int cmpv = i >= A->ntasks ? 1 : j >= B->ntasks ? -1 : strcmp(A->tasks[i].id, B->tasks[j].id);
		if (cmpv < 0) {
			ex_a = ex_a ? ex_a : A->tasks[i].id;
			only_a++;
			i++;
		} else if (cmpv > 0) {
			ex_b = ex_b ? ex_b : B->tasks[j].id;
			only_b++;
			j++;
		} else {
			common++;
			if (A->tasks[i].n > 0 && B->tasks[j].n > 0)
				c->pairs[c->npairs++] = (struct pair){ &A->tasks[i], &B->tasks[j] };
			i++;
			j++;
		}
	}
	if (common == 0) {
		err_set(err, errlen, "runs %lld and %lld have no task in common; nothing can be compared",
			 (long long)A->run.id, (long long)B->run.id);
		return -EINVAL;
	}
	if ((only_a || only_b) && !c->o->intersect) {
		err_set(err, errlen,
			 "runs %lld and %lld have different task sets: %zu tasks only in run %lld%s%s%s, %zu only in run "
			 "%lld%s%s%s; pass --intersect to compare the %zu tasks in common",
			 (long long)A->run.id, (long long)B->run.id, only_a, (long long)A->run.id, ex_a ? " (e.g. " : "",
			 ex_a ? ex_a : "", ex_a ? ")" : "", only_b, (long long)B->run.id, ex_b ? " (e.g. " : "",
			 ex_b ? ex_b : "", ex_b ? ")" : "", common);
		return -EINVAL;
	}
	if (c->npairs == 0) {
		err_set(err, errlen, "runs %lld and %lld share tasks, but none has a scored attempt in both "
			 "(all api_error or environment)", (long long)A->run.id, (long long)B->run.id);
		return -EINVAL;
	}
	for (size_t k = 0; k < c->npairs; k++) {
		c->pass_a += c->pairs[k].a->pass;
		c->n_a += c->pairs[k].a->n;
		c->pass_b += c->pairs[k].b->pass;
		c->n_b += c->pairs[k].b->n;
	}
	return (only_a || only_b) ? 1 : 0;
}

int report_compare_build(const struct report_compare_opts *o, struct report_doc *d, char *err, size_t errlen)
{
	struct side A = { 0 }, B = { 0 };
	struct cmp c = { .o = o, .A = &A, .B = &B };
	struct store *s = report_db_open(o->db, err, errlen);
	if (!s)
		return -EINVAL;
	struct store *db = s;
	int rc = report_db_run(s, o->run_a, "eval", &A.run, err, errlen);
	rc = rc ? rc : report_db_run(s, o->run_b, "eval", &B.run, err, errlen);
	char diff[1024], conds[2048];
	int refused = rc ? 0 : config_diff(A.run.protocol_json, B.run.protocol_json, diff, sizeof diff, conds, sizeof conds);
	if (refused && !o->allow_config_diff) {
		err_set(err, errlen,
			 "runs %lld and %lld were run with different frozen configurations (differ in: %s; other "
			 "tasks, analysis, repeats or budgets make the comparison invalid); pass --allow-config-diff "
			 "to compare them anyway",
			 (long long)A.run.id, (long long)B.run.id, diff);
		rc = -EINVAL;
	}
	rc = rc ? rc : load_side(db, &A, err, errlen);
	rc = rc ? rc : load_side(db, &B, err, errlen);
	int merged = rc ? 0 : merge(&c, err, errlen);
	if (merged < 0)
		rc = merged;
	if (rc)
		goto out;

	snprintf(c.la, sizeof c.la, "A (run %lld)", (long long)A.run.id);
	snprintf(c.lb, sizeof c.lb, "B (run %lld)", (long long)B.run.id);
	report_doc_query(d, Q_A, A.sql);
	report_doc_query(d, Q_B, B.sql);
	char runs_sql[160];
	store_run_pair_sql(A.run.id, B.run.id, runs_sql, sizeof runs_sql);
	report_doc_query(d, "runs", runs_sql);
	report_doc_para(d, "A is run %lld (%s, started %s); B is run %lld (%s, started %s). Every number below is "
			   "computed from eval_rows at render time.",
			(long long)A.run.id, A.run.model[0] ? A.run.model : "model not recorded", A.run.started,
			(long long)B.run.id, B.run.model[0] ? B.run.model : "model not recorded", B.run.started);
	if (conds[0])
		report_doc_para(d, "The conditions differ in: %s.", conds);
	if (refused)
		report_doc_para(d, "Warning: the runs' frozen configurations differ in %s (compared because "
				   "--allow-config-diff was given).", diff);
	for (int k = 0; k < 2; k++) {
		const struct report_run *r = k ? &B.run : &A.run;
		if (r->memory_warning[0])
			report_doc_para(d, "Warning (run %lld): when it started, %s.", (long long)r->id,
					r->memory_warning);
	}
	if (merged == 1)
		report_doc_para(d, "Only the tasks both runs share are compared (--intersect).");
	static const char *const hr[] = { "run", "status", "tasks", "tasks compared", "attempts (rows)",
					  "scored outcomes", "api_error", "environment" };
	report_doc_table(d, "runs", "Runs", 8, hr);
	for (int k = 0; k < 2; k++) {
		struct side *x = k ? &B : &A;
		int64_t scored = 0;
		for (int i = 0; i < CLASS_UNSCORED; i++)
			scored += x->cls[i];
		report_doc_row(d);
		report_doc_cell(d, k ? c.lb : c.la);
		report_doc_cell(d, x->run.status);
		report_doc_num(d, k ? Q_B : Q_A, "%.0f", (double)x->ntasks);
		report_doc_num(d, Q_AB, "%.0f", (double)c.npairs);
		report_doc_num(d, k ? Q_B : Q_A, "%.0f", (double)x->rows);
		report_doc_num(d, k ? Q_B : Q_A, "%.0f", (double)scored);
		report_doc_num(d, k ? Q_B : Q_A, "%.0f", (double)x->cls[4]);
		report_doc_num(d, k ? Q_B : Q_A, "%.0f", (double)x->cls[5]);
	}

	/* pre-registered tests first, then the rest labelled exploratory */
	char pre[8][16], plan[96];
	int npre = preregistered(A.run.protocol_json, pre, plan, sizeof plan);
	bool done[NTESTS + 1] = { false }, wilson_done = false;
	if (npre) {
		report_doc_heading(d, "Pre-registered tests");
		report_doc_para(d, "The protocol fixed these tests before the run, in this order%s%s%s. p-values are "
				   "shown two-sided and one-sided where the test has both.",
				plan[0] ? " (" : "", plan, plan[0] ? ")" : "");
		for (int p = 0; p < npre; p++) {
			if (strcmp(pre[p], "wilson") == 0 && !wilson_done) {
				t_wilson(d, &c);
				wilson_done = true;
			}
			for (size_t t = 0; t < NTESTS; t++)
				if (!done[t] && strcmp(pre[p], tests[t].name) == 0) {
					double pv = tests[t].fn(d, &c);
					done[t] = true;
					if (!isnan(pv) && c.nprereg_p < 8) {
						c.name_of[c.nprereg_p] = tests[t].name;
						c.p_of[c.nprereg_p++] = pv;
					}
				}
		}
		if (c.nprereg_p > 1) {
			double adj[8];
			static const char *const hh[] = { "test", "p two-sided", "Holm-adjusted p" };
			if (stats_holm(c.p_of, (size_t)c.nprereg_p, adj) == 0) {
				report_doc_table(d, "holm", "Holm correction over the pre-registered tests", 3, hh);
				for (int k = 0; k < c.nprereg_p; k++) {
					report_doc_row(d);
					report_doc_cell(d, c.name_of[k]);
					report_doc_num(d, Q_AB, "%.4g", c.p_of[k]);
					report_doc_num(d, Q_AB, "%.4g", adj[k]);
				}
			}
		}
		report_doc_heading(d, "Exploratory (not pre-registered)");
	} else {
		report_doc_heading(d, "Tests");
		report_doc_para(d, "The protocol pre-registered no tests: every test below is exploratory.");
	}
	if (!wilson_done)
		t_wilson(d, &c);
	for (size_t t = 0; t < NTESTS; t++)
		if (!done[t])
			(void)tests[t].fn(d, &c);
	descriptive(d, &c);
	power_section(d, &c, A.run.protocol_json, B.run.protocol_json);
	rc = report_doc_error(d);
	if (rc)
		err_set(err, errlen, "building the report: out of memory");
out:
	free(c.pairs);
	side_finish(&A);
	side_finish(&B);
	store_close(s);
	return rc;
}
