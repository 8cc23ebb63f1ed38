/* results — what is computed from a run's stored rows: the summary, the export
 * and the budget regrade (declared in run.h). Nothing here talks to a server.
 *
 * The final row of a (repeat, task) is its last attempt. Pass rates are given
 * over graded rows (api_error and environment left out: they say nothing about
 * the model) and end to end (over all task runs), side by side. */
#include "core/buf.h"
#include "core/json.h"
#include "grade/grade.h"
#include "eval/run.h"
#include "grade/score.h"
#include "datasets/task.h"
#include "core/err.h"
#include "store/store.h"
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
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
	}
	free(rs->r);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

static int rows_load(sqlite3 *db, int64_t run, struct rows *rs)
{
	memset(rs, 0, sizeof *rs);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT repeat_index, task_id, attempt, pass, completion_tokens, seconds, truncated,"
			       " loop_pct, failure_class, grader_detail, raw_sha256, reasoning_sha256 FROM eval_rows"
			       " WHERE run = ? ORDER BY repeat_index, task_id, attempt",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, run);
	size_t cap = 0;
	int rc = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (rs->n == cap) {
			cap = cap ? cap * 2 : 256;
			struct frow *n = realloc(rs->r, cap * sizeof *n);
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			rs->r = n;
		}
		struct frow *f = &rs->r[rs->n++];
		memset(f, 0, sizeof *f);
		f->repeat = sqlite3_column_int64(st, 0);
		f->task = col_dup(st, 1);
		f->attempt = sqlite3_column_int64(st, 2);
		f->pass = sqlite3_column_int(st, 3) != 0;
		f->tokens = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4);
		f->seconds = sqlite3_column_double(st, 5);
		f->truncated = sqlite3_column_int(st, 6) != 0;
		f->loop_pct = sqlite3_column_double(st, 7);
		const unsigned char *cls = sqlite3_column_text(st, 8);
		if (score_class_parse(cls ? (const char *)cls : "", &f->cls) != 0)
			f->cls = SCORE_WRONG;
		const unsigned char *dj = sqlite3_column_text(st, 9);
		cJSON *d = dj ? cJSON_Parse((const char *)dj) : NULL;
		const char *ans = d ? json_get_str(d, "answer") : NULL;
		const char *ch = d ? json_get_str(d, "chunks_sha256") : NULL;
		f->answer = ans ? strdup(ans) : NULL;
		f->chunks_sha = ch ? strdup(ch) : NULL;
		cJSON_Delete(d);
		f->raw_sha = col_dup(st, 10);
		f->reasoning_sha = col_dup(st, 11);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Index of the final row of each (repeat, task): the last of a run of rows with
 * the same key (rows are ordered by repeat, task, attempt). */
static bool is_final(const struct rows *rs, size_t i)
{
	return i + 1 == rs->n || rs->r[i + 1].repeat != rs->r[i].repeat || strcmp(rs->r[i + 1].task, rs->r[i].task) != 0;
}

static bool graded(enum score_class c) { return c != SCORE_API_ERROR && c != SCORE_ENVIRONMENT; }

static int run_header(sqlite3 *db, int64_t run, char **proto, char **model, char **status)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT protocol_json, model, status, kind FROM runs WHERE id = ?", -1, &st, NULL) !=
	    SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, run);
	int rc = -ENOENT;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 3) &&
	    strcmp((const char *)sqlite3_column_text(st, 3), "eval") == 0) {
		*proto = col_dup(st, 0);
		*model = col_dup(st, 1);
		*status = col_dup(st, 2);
		rc = 0;
	}
	sqlite3_finalize(st);
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
	int rc = run_header(store_db(s), run, &proto, &model, &status);
	if (rc) {
		err_fail(err, errlen, "%s has no eval run %lld", path, (long long)run);
		goto out;
	}
	if ((rc = rows_load(store_db(s), run, &rs)) != 0) {
		err_fail(err, errlen, "reading rows of run %lld failed", (long long)run);
		goto out;
	}
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
	double mean = 0, m2 = 0;
	int nrep = 0;
	for (int64_t r = 0; r < repeats && r < 1000; r++) {
		if (!rep_graded[r])
			continue;
		double v = (double)rep_pass[r] / (double)rep_graded[r];
		cJSON_AddItemToArray(pr, cJSON_CreateNumber(v));
		nrep++;
		double d = v - mean;
		mean += d / nrep;
		m2 += d * (v - mean);
	}
	cJSON_AddNumberToObject(e, "pass_rate_sd_across_repeats", nrep > 1 ? sqrt(m2 / (nrep - 1)) : 0);
	cJSON *pk = cJSON_AddObjectToObject(e, "pass_at_k");
	for (int k = 1; k <= min_n && k <= 16; k++) {
		double tot = 0;
		int m = 0;
		for (size_t t = 0; t < n_tasks; t++) {
			if (acc[t].n == 0)
				continue;
			tot += score_pass_at_k(acc[t].n, acc[t].c, k);
			m++;
		}
		char key[16];
		snprintf(key, sizeof key, "%d", k);
		cJSON_AddNumberToObject(pk, key, m ? tot / m : 0);
	}
	cJSON_AddNumberToObject(e, "majority_vote_passed", vote_pass);
	cJSON_AddNumberToObject(e, "majority_vote_tasks", vote_tasks);
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
		fprintf(out, " (sd %.1f points)\n", nrep > 1 ? 100 * sqrt(m2 / (nrep - 1)) : 0);
		fprintf(out, "  ");
		const cJSON *k;
		cJSON_ArrayForEach(k, pk)
			fprintf(out, "pass@%s %.1f%%, ", k->string, 100 * k->valuedouble);
		fprintf(out, "majority vote %d of %d tasks\n", vote_pass, vote_tasks);
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

static const char *const export_cols[] = {"run", "repeat", "task", "attempt", "pass", "failure_class",
					  "prompt_tokens", "tokens", "seconds", "truncated", "has_code", "loop_pct",
					  "early_stop", "api_error", "finish_reason", "raw_sha256", "reasoning_sha256",
					  "grader_detail", "completion", "reasoning", NULL};

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
	int rc = run_header(store_db(s), run, &proto, &model, &status);
	free(proto);
	free(model);
	free(status);
	if (rc) {
		store_close(s);
		return err_fail(err, errlen, "%s has no eval run %lld", path, (long long)run);
	}
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(store_db(s),
			       "SELECT e.run, e.repeat_index, e.task_id, e.attempt, e.pass, e.failure_class,"
			       " e.prompt_tokens, e.completion_tokens, e.seconds, e.truncated, e.has_code, e.loop_pct,"
			       " e.early_stop, e.api_error, e.finish_reason, e.raw_sha256, e.reasoning_sha256,"
			       " e.grader_detail, c.bytes, r.bytes FROM eval_rows e"
			       " LEFT JOIN raw_text c ON c.sha256 = e.raw_sha256"
			       " LEFT JOIN raw_text r ON r.sha256 = e.reasoning_sha256"
			       " WHERE e.run = ? ORDER BY e.repeat_index, e.task_id, e.attempt",
			       -1, &st, NULL) != SQLITE_OK) {
		store_close(s);
		return err_fail(err, errlen, "reading rows failed");
	}
	sqlite3_bind_int64(st, 1, run);
	if (csv)
		for (int i = 0; export_cols[i]; i++)
			fprintf(out, "%s%s", i ? "," : "", export_cols[i]);
	if (csv)
		fputc('\n', out);
	while (sqlite3_step(st) == SQLITE_ROW) {
		cJSON *o = csv ? NULL : cJSON_CreateObject();
		for (int i = 0; export_cols[i]; i++) {
			int type = sqlite3_column_type(st, i);
			const char *txt = (const char *)sqlite3_column_text(st, i);
			size_t n = (size_t)sqlite3_column_bytes(st, i);
			if (csv) {
				if (i)
					fputc(',', out);
				if (type == SQLITE_NULL)
					continue;
				if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
					fwrite(txt, 1, n, out);
				else
					csv_field(out, txt ? txt : "", n);
			} else if (type == SQLITE_NULL) {
				cJSON_AddNullToObject(o, export_cols[i]);
			} else if (type == SQLITE_INTEGER) {
				if (strcmp(export_cols[i], "pass") == 0 || strcmp(export_cols[i], "truncated") == 0 ||
				    strcmp(export_cols[i], "has_code") == 0)
					cJSON_AddBoolToObject(o, export_cols[i], sqlite3_column_int(st, i));
				else
					cJSON_AddNumberToObject(o, export_cols[i], (double)sqlite3_column_int64(st, i));
			} else if (type == SQLITE_FLOAT) {
				cJSON_AddNumberToObject(o, export_cols[i], sqlite3_column_double(st, i));
			} else if (strcmp(export_cols[i], "grader_detail") == 0 && txt) {
				cJSON *d = cJSON_Parse(txt);
				cJSON_AddItemToObject(o, export_cols[i], d ? d : cJSON_CreateString(txt));
			} else {
				/* blobs are text; cJSON needs a terminated copy */
				char *copy = malloc(n + 1);
				if (copy) {
					if (n) /* an empty blob comes back as NULL */
						memcpy(copy, sqlite3_column_blob(st, i), n);
					copy[n] = 0;
					cJSON_AddStringToObject(o, export_cols[i], copy);
					free(copy);
				}
			}
		}
		if (csv) {
			fputc('\n', out);
		} else {
			char *line = cJSON_PrintUnformatted(o);
			fprintf(out, "%s\n", line ? line : "{}");
			free(line);
			cJSON_Delete(o);
		}
	}
	sqlite3_finalize(st);
	store_close(s);
	return ferror(out) ? err_fail(err, errlen, "writing the export failed") : 0;
}

/* ---- regrade ------------------------------------------------------------------ */

static char *raw_get(sqlite3 *db, const char *sha, size_t *n)
{
	*n = 0;
	if (!sha)
		return NULL;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT bytes FROM raw_text WHERE sha256 = ?", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC);
	char *out = NULL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*n = (size_t)sqlite3_column_bytes(st, 0);
		out = malloc(*n + 1);
		if (out) {
			memcpy(out, sqlite3_column_blob(st, 0), *n);
			out[*n] = 0;
		}
	}
	sqlite3_finalize(st);
	return out;
}

/* Bytes of content kept when the reply is cut to budget tokens. Uses the stored
 * per-event byte offsets (tokens spread evenly over events) when there are any,
 * else a proportional cut over reasoning then content. */
static size_t cut_content(sqlite3 *db, const struct frow *f, int64_t budget, size_t content_len, size_t reasoning_len)
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
	int rc = run_header(store_db(s), run, &proto, &model, &status);
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
	if ((rc = rows_load(store_db(s), run, &rs)) != 0 || !(g = grader_create(harness_dir, NULL))) {
		rc = err_fail(err, errlen, "reading rows of run %lld failed", (long long)run);
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
			char *content = raw_get(store_db(s), f->raw_sha, &clen);
			char *reasoning = raw_get(store_db(s), f->reasoning_sha, &rlen);
			free(reasoning);
			truncated++;
			if (t && content) {
				content[cut_content(store_db(s), f, budget, clen, rlen)] = 0;
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
