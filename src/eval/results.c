/* results — what is computed from a run's stored rows: the summary, the export
 * and the budget regrade (declared in run.h). Nothing here talks to a server.
 *
 * The final row of a (repeat, task) is its last attempt (the store marks it:
 * struct store_eval_read's final, the rule reports read too). Pass rates are given
 * over graded rows (api_error and environment left out: they say nothing about
 * the model) and end to end (over all task runs), side by side. */
#include "core/buf.h"
#include "core/json.h"
#include "grade/grade.h"
#include "eval/run.h"
#include "grade/score.h"
#include "datasets/task.h"
#include "core/err.h"
#include "stats/stats.h"
#include "store/store.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct frow {
	int64_t repeat, attempt;
	char *task;
	bool pass, truncated;
	int64_t tokens;          /* -1 unknown */
	double seconds, loop_pct;
	enum score_class cls;
	char *answer;            /* numeric/choice answer, or NULL */
	char *raw_sha, *reasoning_sha, *chunks_sha;
	char *replica;           /* the replica that served it (grader_detail.replica), or NULL */
	bool final;              /* the last attempt of its (repeat, task) */
};

struct rows {
	struct frow *r;
	size_t n;
};

static void rows_free(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->r[i].task);
		free(rs->r[i].answer);
		free(rs->r[i].raw_sha);
		free(rs->r[i].reasoning_sha);
		free(rs->r[i].chunks_sha);
		free(rs->r[i].replica);
	}
	free(rs->r);
}

static char *dup_or_null(const char *t, int *oom)
{
	char *d = t ? strdup(t) : NULL;
	if (t && !d)
		*oom = 1;
	return d;
}

static int row_add(void *ctx, const struct store_eval_read *r)
{
	struct rows *rs = ctx;
	if (rs->n % 256 == 0) {
		struct frow *n = realloc(rs->r, (rs->n + 256) * sizeof *n);
		if (!n)
			return -ENOMEM;
		rs->r = n;
	}
	struct frow *f = &rs->r[rs->n++];
	memset(f, 0, sizeof *f);
	int oom = 0;
	f->repeat = r->repeat;
	f->task = dup_or_null(r->task_id, &oom);
	f->attempt = r->attempt;
	f->pass = r->pass;
	f->tokens = r->completion_tokens;
	f->seconds = r->seconds;
	f->truncated = r->truncated;
	f->loop_pct = r->loop_pct;
	f->final = r->final;
	if (score_class_parse(r->failure_class, &f->cls) != 0)
		f->cls = SCORE_WRONG;
	cJSON *d = r->detail_json ? cJSON_Parse(r->detail_json) : NULL;
	f->answer = dup_or_null(d ? json_get_str(d, "answer") : NULL, &oom);
	f->chunks_sha = dup_or_null(d ? json_get_str(d, "chunks_sha256") : NULL, &oom);
	f->replica = dup_or_null(d ? json_get_str(d, "replica") : NULL, &oom);
	cJSON_Delete(d);
	f->raw_sha = dup_or_null(r->raw_sha, &oom);
	f->reasoning_sha = dup_or_null(r->reasoning_sha, &oom);
	return oom ? -ENOMEM : 0;
}

/* The rows of run in (repeat, task, attempt) order; err says why not. */
static int rows_load(struct store *s, int64_t run, struct rows *rs, char *err, size_t errlen)
{
	memset(rs, 0, sizeof *rs);
	int rc = store_eval_each(s, run, STORE_EVAL_BY_REPEAT, row_add, rs, err, errlen);
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory reading rows of run %lld", (long long)run);
	return rc;
}

static bool is_final(const struct rows *rs, size_t i) { return rs->r[i].final; }

static bool graded(enum score_class c) { return c != SCORE_API_ERROR && c != SCORE_ENVIRONMENT; }

/* The run's frozen configuration, model and status; -ENOENT when run is not an eval run. */
static int run_header(struct store *s, int64_t run, char **proto, char **model, char **status)
{
	struct store_run_info info;
	int rc = store_run_get(s, run, &info, NULL, 0);
	if (rc)
		return rc;
	rc = -ENOENT;
	if (info.kind && strcmp(info.kind, "eval") == 0) {
		*proto = info.protocol_json;
		*model = info.model;
		*status = info.status;
		info.protocol_json = info.model = info.status = NULL;
		rc = 0;
	}
	store_run_info_finish(&info);
	return rc;
}

/* ---- summary ------------------------------------------------------------------ */

struct task_acc {
	const char *task;
	int n, c;                /* graded final rows, passes */
	const char *answers[64]; /* of graded final rows, for the vote */
	bool answer_pass[64];
	int n_answers;
};

/* Per replica (rows of a condition with several, grader_detail.replica), by URL:
 * attempts, api_error attempts, task runs (final rows) and passes among them. NULL
 * when no row names a replica. */
struct replica_acc {
	const char *url;
	int64_t n[4]; /* attempts, api_error attempts, task runs, passed */
};

static int cmp_replica(const void *a, const void *b)
{
	return strcmp(((const struct replica_acc *)a)->url, ((const struct replica_acc *)b)->url);
}

static cJSON *replica_counts(const struct rows *rs)
{
	struct replica_acc acc[64];
	size_t n = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const struct frow *f = &rs->r[i];
		if (!f->replica)
			continue;
		size_t k = 0;
		while (k < n && strcmp(acc[k].url, f->replica) != 0)
			k++;
		if (k == n) {
			if (n == sizeof acc / sizeof acc[0])
				continue; /* more replicas than a run may list */
			acc[n++] = (struct replica_acc){ .url = f->replica };
		}
		acc[k].n[0]++;
		acc[k].n[1] += f->cls == SCORE_API_ERROR;
		acc[k].n[2] += f->final;
		acc[k].n[3] += f->final && f->pass && graded(f->cls);
	}
	if (n == 0)
		return NULL;
	/* in URL order: the same summary whatever order the rows came in */
	qsort(acc, n, sizeof acc[0], cmp_replica);
	static const char *const keys[] = { "attempts", "api_error_attempts", "task_runs", "passed" };
	cJSON *arr = cJSON_CreateArray();
	for (size_t k = 0; arr && k < n; k++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "url", acc[k].url);
		for (int j = 0; j < 4; j++)
			cJSON_AddNumberToObject(o, keys[j], (double)acc[k].n[j]);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* Merges key into runs.summary_json and prints value (JSON) when asked. */
static void publish(struct store *s, int64_t run, const char *key, cJSON *value, bool print_json, FILE *out)
{
	cJSON *wrap = cJSON_CreateObject();
	cJSON_AddItemReferenceToObject(wrap, key, value);
	char *text = cJSON_PrintUnformatted(wrap);
	if (text && store_run_set_summary(s, run, text) != 0)
		fprintf(stderr, "sixi-eval: could not store the %s: %s\n", key, store_errmsg(s));
	if (print_json && out) {
		char *pretty = cJSON_Print(value);
		fprintf(out, "%s\n", pretty ? pretty : "null");
		free(pretty);
	}
	free(text);
	cJSON_Delete(wrap);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

int eval_run_summary(const char *db_path, int64_t run, bool json, FILE *out, char *err, size_t errlen)
{
	const char *path = db_path ? db_path : STORE_DEFAULT_PATH;
	struct store *s = store_open(path, err, errlen);
	if (!s)
		return -EIO;
	char *proto = NULL, *model = NULL, *status = NULL;
	struct rows rs = {0};
	int rc = run_header(s, run, &proto, &model, &status);
	if (rc) {
		err_fail(err, errlen, "%s has no eval run %lld", path, (long long)run);
		goto out;
	}
	if ((rc = rows_load(s, run, &rs, err, errlen)) != 0)
		goto out;
	cJSON *frozen = cJSON_Parse(proto);
	int64_t repeats = 1;
	json_get_i64(frozen, "protocol.repeats", &repeats);
	const char *cond = json_get_str(frozen, "condition");
	int counts[SCORE_WRONG + 1] = {0};
	int64_t finals = 0, api_rows = 0, tok_sum = 0, tok_rows = 0, passes = 0, graded_n = 0;
	double seconds = 0;
	int64_t rep_pass[1000] = {0}, rep_graded[1000] = {0};
	/* per task accumulators: tasks sorted by name */
	size_t n_names = 0;
	const char **names = calloc(rs.n + 1, sizeof *names);
	for (size_t i = 0; i < rs.n; i++) {
		const struct frow *f = &rs.r[i];
		seconds += f->seconds;
		if (f->tokens >= 0) {
			tok_sum += f->tokens;
			tok_rows++;
		}
		api_rows += f->cls == SCORE_API_ERROR;
		if (!is_final(&rs, i))
			continue;
		finals++;
		counts[f->cls]++;
		if (graded(f->cls)) {
			graded_n++;
			passes += f->pass;
			if (f->repeat >= 0 && f->repeat < 1000) {
				rep_graded[f->repeat]++;
				rep_pass[f->repeat] += f->pass;
			}
		}
		if (names)
			names[n_names++] = f->task;
	}
	if (names)
		qsort(names, n_names, sizeof *names, cmp_str);
	size_t n_tasks = 0;
	struct task_acc *acc = calloc(n_names + 1, sizeof *acc);
	if (!names || !acc) {
		/* a summary short of its per-task part would read as a complete one */
		free(names);
		free(acc);
		cJSON_Delete(frozen);
		rc = -ENOMEM;
		err_fail(err, errlen, "out of memory summarising run %lld", (long long)run);
		goto out;
	}
	for (size_t i = 0; acc && i < n_names; i++)
		if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
			acc[n_tasks++].task = names[i];
	for (size_t i = 0; acc && i < rs.n; i++) {
		const struct frow *f = &rs.r[i];
		if (!is_final(&rs, i) || !graded(f->cls))
			continue;
		struct task_acc key = {.task = f->task}, *a = NULL;
		for (size_t k = 0; k < n_tasks && !a; k++)
			if (strcmp(acc[k].task, key.task) == 0)
				a = &acc[k];
		if (!a)
			continue;
		a->n++;
		a->c += f->pass;
		if (a->n_answers < 64) {
			a->answer_pass[a->n_answers] = f->pass;
			a->answers[a->n_answers++] = f->answer;
		}
	}
	/* pass@k for every k that every task with graded rows reaches */
	int min_n = -1;
	for (size_t k = 0; k < n_tasks; k++)
		if (acc[k].n > 0 && (min_n < 0 || acc[k].n < min_n))
			min_n = acc[k].n;
	int vote_pass = 0, vote_tasks = 0;
	for (size_t k = 0; k < n_tasks; k++) {
		if (acc[k].n == 0)
			continue;
		vote_tasks++;
		bool any_answer = false;
		for (int i = 0; i < acc[k].n_answers; i++)
			any_answer |= acc[k].answers[i] != NULL;
		if (any_answer) {
			int w = score_majority(acc[k].answers, acc[k].n_answers);
			vote_pass += w >= 0 && acc[k].answer_pass[w];
		} else {
			vote_pass += 2 * acc[k].c > acc[k].n;
		}
	}
	cJSON *sum = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(sum, "eval");
	cJSON_AddNumberToObject(e, "task_runs", (double)finals);
	cJSON_AddNumberToObject(e, "tasks", (double)n_tasks);
	cJSON_AddNumberToObject(e, "attempts", (double)rs.n);
	cJSON_AddNumberToObject(e, "graded", (double)graded_n);
	cJSON_AddNumberToObject(e, "passed", (double)passes);
	cJSON_AddNumberToObject(e, "pass_rate", graded_n ? (double)passes / (double)graded_n : 0);
	cJSON_AddNumberToObject(e, "pass_rate_end_to_end", finals ? (double)passes / (double)finals : 0);
	cJSON *cl = cJSON_AddObjectToObject(e, "classes");
	for (int c = SCORE_PASS; c <= SCORE_WRONG; c++)
		cJSON_AddNumberToObject(cl, score_class_name((enum score_class)c), counts[c]);
	cJSON_AddNumberToObject(e, "truncated_pct", graded_n ? 100.0 * counts[SCORE_TRUNCATED] / (double)graded_n : 0);
	cJSON_AddNumberToObject(e, "loop_pct", graded_n ? 100.0 * counts[SCORE_LOOP] / (double)graded_n : 0);
	cJSON_AddNumberToObject(e, "api_error_attempts", (double)api_rows);
	cJSON_AddNumberToObject(e, "tokens_per_attempt", tok_rows ? (double)tok_sum / (double)tok_rows : 0);
	cJSON_AddNumberToObject(e, "tokens_per_solved_task", passes ? (double)tok_sum / (double)passes : 0);
	cJSON_AddNumberToObject(e, "seconds", seconds);
	cJSON_AddNumberToObject(e, "seconds_per_attempt", rs.n ? seconds / (double)rs.n : 0);
	cJSON *pr = cJSON_AddArrayToObject(e, "pass_rate_per_repeat");
	/* run-to-run spread: the sample sd of the repeats' pass rates, as sixi-report
	 * compare computes it (stats_mean_sd) */
	double rep_rate[1000], mean = 0, sd = 0;
	int nrep = 0;
	for (int64_t r = 0; r < repeats && r < 1000; r++) {
		if (!rep_graded[r])
			continue;
		double v = (double)rep_pass[r] / (double)rep_graded[r];
		cJSON_AddItemToArray(pr, cJSON_CreateNumber(v));
		rep_rate[nrep++] = v;
	}
	if (nrep < 2 || stats_mean_sd(rep_rate, (size_t)nrep, &mean, &sd) != 0)
		sd = 0;
	cJSON_AddNumberToObject(e, "pass_rate_sd_across_repeats", sd);
	cJSON *pk = cJSON_AddObjectToObject(e, "pass_at_k");
	for (int k = 1; k <= min_n && k <= 16; k++) {
		double tot = 0;
		int m = 0;
		for (size_t t = 0; t < n_tasks; t++) {
			if (acc[t].n == 0)
				continue;
			double v;
			if (stats_pass_at_k(acc[t].n, acc[t].c, k, &v) == 0)
				tot += v;
			m++;
		}
		char key[16];
		snprintf(key, sizeof key, "%d", k);
		cJSON_AddNumberToObject(pk, key, m ? tot / m : 0);
	}
	cJSON_AddNumberToObject(e, "majority_vote_passed", vote_pass);
	cJSON_AddNumberToObject(e, "majority_vote_tasks", vote_tasks);
	cJSON *reps = replica_counts(&rs);
	if (reps)
		cJSON_AddItemToObject(e, "replicas", reps);
	publish(s, run, "eval", e, json, out);
	if (out && !json) {
		fprintf(out, "run %lld (%s, model %s, %s): %lld task runs of %zu tasks, %zu attempts\n", (long long)run,
			cond ? cond : "?", model ? model : "?", status ? status : "?", (long long)finals, n_tasks, rs.n);
		fprintf(out, "  pass rate %.1f%% (%lld of %lld graded); end to end %.1f%% (of %lld)\n",
			graded_n ? 100.0 * passes / graded_n : 0, (long long)passes, (long long)graded_n,
			finals ? 100.0 * passes / finals : 0, (long long)finals);
		fprintf(out, "  classes:");
		for (int c = SCORE_PASS; c <= SCORE_WRONG; c++)
			fprintf(out, " %s %d%s", score_class_name((enum score_class)c), counts[c], c < SCORE_WRONG ? "," : "\n");
		fprintf(out, "  truncated %.1f%%, loop %.1f%%, api errors %lld attempt(s)\n",
			graded_n ? 100.0 * counts[SCORE_TRUNCATED] / graded_n : 0,
			graded_n ? 100.0 * counts[SCORE_LOOP] / graded_n : 0, (long long)api_rows);
		fprintf(out, "  tokens per attempt %.1f, per solved task %.1f; %.1f s in requests (%.2f s per attempt)\n",
			tok_rows ? (double)tok_sum / tok_rows : 0, passes ? (double)tok_sum / passes : 0, seconds,
			rs.n ? seconds / rs.n : 0);
		fprintf(out, "  pass rate per repeat:");
		const cJSON *v;
		cJSON_ArrayForEach(v, pr)
			fprintf(out, " %.1f%%", 100 * v->valuedouble);
		fprintf(out, " (sd %.1f points)\n", 100 * sd);
		fprintf(out, "  ");
		const cJSON *k;
		cJSON_ArrayForEach(k, pk)
			fprintf(out, "pass@%s %.1f%%, ", k->string, 100 * k->valuedouble);
		fprintf(out, "majority vote %d of %d tasks\n", vote_pass, vote_tasks);
		const cJSON *r;
		cJSON_ArrayForEach(r, reps) {
			int64_t n = 0, api = 0, tr = 0, ps = 0;
			json_get_i64(r, "attempts", &n);
			json_get_i64(r, "api_error_attempts", &api);
			json_get_i64(r, "task_runs", &tr);
			json_get_i64(r, "passed", &ps);
			fprintf(out, "  replica %s: %lld attempt(s), %lld api_error, %lld task run(s) ended here, %lld passed\n",
				json_get_str(r, "url"), (long long)n, (long long)api, (long long)tr, (long long)ps);
		}
	}
	cJSON_Delete(sum);
	cJSON_Delete(frozen);
	free(acc);
	free(names);
out:
	rows_free(&rs);
	free(proto);
	free(model);
	free(status);
	store_close(s);
	return rc;
}

/* ---- export ------------------------------------------------------------------ */

static void csv_field(FILE *out, const char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', out);
		fputc(s[i], out);
	}
	fputc('"', out);
}

struct export_ctx {
	FILE *out;
	bool csv;
};

static int export_row(void *ctx, const struct store_cell *cells)
{
	const struct export_ctx *x = ctx;
	FILE *out = x->out;
	const char *const *cols = store_eval_export_cols;
	cJSON *o = x->csv ? NULL : cJSON_CreateObject();
	for (int i = 0; cols[i]; i++) {
		const struct store_cell *c = &cells[i];
		if (x->csv) {
			if (i)
				fputc(',', out);
			if (c->type == STORE_CELL_NULL)
				continue;
			if (c->type == STORE_CELL_INT || c->type == STORE_CELL_REAL)
				fwrite(c->text, 1, c->n, out);
			else
				csv_field(out, c->text, c->n);
		} else if (c->type == STORE_CELL_NULL) {
			cJSON_AddNullToObject(o, cols[i]);
		} else if (c->type == STORE_CELL_INT) {
			if (strcmp(cols[i], "pass") == 0 || strcmp(cols[i], "truncated") == 0 ||
			    strcmp(cols[i], "has_code") == 0)
				cJSON_AddBoolToObject(o, cols[i], c->i != 0);
			else
				cJSON_AddNumberToObject(o, cols[i], (double)c->i);
		} else if (c->type == STORE_CELL_REAL) {
			cJSON_AddNumberToObject(o, cols[i], c->d);
		} else if (strcmp(cols[i], "grader_detail") == 0) {
			cJSON *d = cJSON_Parse(c->text);
			cJSON_AddItemToObject(o, cols[i], d ? d : cJSON_CreateString(c->text));
		} else {
			/* blobs are text; cJSON needs a terminated copy */
			char *copy = malloc(c->n + 1);
			if (copy) {
				memcpy(copy, c->text, c->n);
				copy[c->n] = 0;
				cJSON_AddStringToObject(o, cols[i], copy);
				free(copy);
			}
		}
	}
	if (x->csv) {
		fputc('\n', out);
	} else {
		char *line = cJSON_PrintUnformatted(o);
		fprintf(out, "%s\n", line ? line : "{}");
		free(line);
		cJSON_Delete(o);
	}
	return 0;
}

int eval_run_export(const char *db_path, int64_t run, const char *format, FILE *out, char *err, size_t errlen)
{
	bool csv = strcmp(format, "csv") == 0;
	if (!csv && strcmp(format, "jsonl") != 0)
		return err_fail(err, errlen, "export format \"%s\" is unknown; use --csv or --jsonl", format);
	const char *path = db_path ? db_path : STORE_DEFAULT_PATH;
	struct store *s = store_open(path, err, errlen);
	if (!s)
		return -EIO;
	char *proto = NULL, *model = NULL, *status = NULL;
	int rc = run_header(s, run, &proto, &model, &status);
	free(proto);
	free(model);
	free(status);
	if (rc) {
		store_close(s);
		return err_fail(err, errlen, "%s has no eval run %lld", path, (long long)run);
	}
	if (csv) {
		for (int i = 0; store_eval_export_cols[i]; i++)
			fprintf(out, "%s%s", i ? "," : "", store_eval_export_cols[i]);
		fputc('\n', out);
	}
	struct export_ctx x = { out, csv };
	rc = store_eval_export_each(s, run, export_row, &x, err, errlen);
	store_close(s);
	if (rc)
		return rc;
	return ferror(out) ? err_fail(err, errlen, "writing the export failed") : 0;
}

/* ---- regrade ------------------------------------------------------------------ */

/* The raw text under sha, or NULL (none stored, or out of memory). */
static char *raw_get(struct store *s, const char *sha, size_t *n)
{
	char *out = NULL;
	if (store_raw_get(s, sha, &out, n) != 0)
		*n = 0;
	return out;
}

/* Bytes of content kept when the reply is cut to budget tokens. Uses the stored
 * per-event byte offsets (tokens spread evenly over events) when there are any,
 * else a proportional cut over reasoning then content. */
static size_t cut_content(struct store *db, const struct frow *f, int64_t budget, size_t content_len, size_t reasoning_len)
{
	size_t n;
	char *chunks = raw_get(db, f->chunks_sha, &n);
	cJSON *arr = chunks ? cJSON_Parse(chunks) : NULL;
	free(chunks);
	int events = cJSON_GetArraySize(arr);
	if (arr && events > 0) {
		double per_event = (double)f->tokens / events;
		int keep = (int)floor((double)budget / per_event);
		size_t c = 0;
		if (keep > 0) {
			const cJSON *e = cJSON_GetArrayItem(arr, keep < events ? keep - 1 : events - 1);
			const cJSON *cc = cJSON_GetArrayItem(e, 1);
			c = cJSON_IsNumber(cc) ? (size_t)cc->valuedouble : 0;
		}
		cJSON_Delete(arr);
		return c < content_len ? c : content_len;
	}
	cJSON_Delete(arr);
	double keep_bytes = (double)(content_len + reasoning_len) * (double)budget / (double)f->tokens;
	if (keep_bytes <= (double)reasoning_len)
		return 0;
	size_t c = (size_t)(keep_bytes - (double)reasoning_len);
	return c < content_len ? c : content_len;
}

int eval_run_regrade(const char *db_path, int64_t run, const int64_t *budgets, size_t n_budgets, bool json, FILE *out,
		     const char *harness_dir, char *err, size_t errlen)
{
	const char *path = db_path ? db_path : STORE_DEFAULT_PATH;
	struct store *s = store_open(path, err, errlen);
	if (!s)
		return -EIO;
	char *proto = NULL, *model = NULL, *status = NULL;
	struct rows rs = {0};
	struct eval_dataset *ds[16] = {0};
	int n_ds = 0;
	struct grader *g = NULL;
	cJSON *frozen = NULL, *result = cJSON_CreateArray();
	int rc = run_header(s, run, &proto, &model, &status);
	if (rc) {
		err_fail(err, errlen, "%s has no eval run %lld", path, (long long)run);
		goto out;
	}
	frozen = cJSON_Parse(proto);
	const cJSON *d;
	const cJSON *dsets = frozen ? cJSON_GetObjectItem(frozen, "datasets") : NULL;
	cJSON_ArrayForEach(d, dsets)
	{
		const char *p = json_get_str(d, "path"), *sha = json_get_str(d, "sha256");
		if (n_ds == 16 || !p || !(ds[n_ds] = eval_dataset_load(p, err, errlen))) {
			rc = -EINVAL;
			goto out;
		}
		if (!sha || strcmp(sha, eval_dataset_sha256(ds[n_ds])) != 0) {
			rc = err_fail(err, errlen, "%s changed since run %lld (sha256 differs); regrading needs the same data", p,
				  (long long)run);
			n_ds++;
			goto out;
		}
		n_ds++;
	}
	if ((rc = rows_load(s, run, &rs, err, errlen)) != 0)
		goto out;
	if (!(g = grader_create(harness_dir, NULL))) {
		rc = err_fail(err, errlen, "regrading run %lld: cannot set up the grader (out of memory)", (long long)run);
		goto out;
	}
	if (!json && out)
		fprintf(out, "%-10s %8s %8s %10s %10s\n", "max_tokens", "graded", "passed", "pass_rate", "truncated");
	for (size_t b = 0; b < n_budgets; b++) {
		int64_t budget = budgets[b], graded_n = 0, passed = 0, truncated = 0;
		for (size_t i = 0; i < rs.n; i++) {
			const struct frow *f = &rs.r[i];
			if (!is_final(&rs, i) || !graded(f->cls))
				continue;
			graded_n++;
			if (f->tokens < 0 || f->tokens <= budget) {
				/* within the budget: the stored verdict stands */
				passed += f->pass;
				truncated += f->cls == SCORE_TRUNCATED;
				continue;
			}
			const struct eval_task *t = NULL;
			for (int k = 0; k < n_ds && !t; k++)
				t = eval_dataset_find(ds[k], f->task);
			size_t clen, rlen;
			char *content = raw_get(s, f->raw_sha, &clen);
			char *reasoning = raw_get(s, f->reasoning_sha, &rlen);
			free(reasoning);
			truncated++;
			if (t && content) {
				content[cut_content(s, f, budget, clen, rlen)] = 0;
				struct grade_result gr;
				if (grade_completion(g, t, content, &gr) == 0 && gr.status == GRADE_PASS)
					passed++;
			}
			free(content);
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "max_tokens", (double)budget);
		cJSON_AddNumberToObject(o, "graded", (double)graded_n);
		cJSON_AddNumberToObject(o, "passed", (double)passed);
		cJSON_AddNumberToObject(o, "pass_rate", graded_n ? (double)passed / (double)graded_n : 0);
		cJSON_AddNumberToObject(o, "truncated", (double)truncated);
		cJSON_AddItemToArray(result, o);
		if (!json && out)
			fprintf(out, "%-10lld %8lld %8lld %9.1f%% %10lld\n", (long long)budget, (long long)graded_n,
				(long long)passed, graded_n ? 100.0 * passed / graded_n : 0, (long long)truncated);
	}
	publish(s, run, "regrade", result, json, out);
out:
	cJSON_Delete(result);
	cJSON_Delete(frozen);
	for (int k = 0; k < n_ds; k++)
		eval_dataset_destroy(ds[k]);
	grader_destroy(g);
	rows_free(&rs);
	free(proto);
	free(model);
	free(status);
	store_close(s);
	return rc;
}
