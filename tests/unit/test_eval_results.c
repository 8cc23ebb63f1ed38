/* Unit tests for src/eval/results: the run summary (pass rates with and without
 * infrastructure failures, classes, pass@k, majority vote, per-repeat spread,
 * tokens per solved task) and the export, on rows written directly into a
 * fresh database. No server. */
#include "test.h"
#include "core/json.h"
#include "eval/run.h"
#include "grade/score.h"
#include "stats/stats.h"
#include "store/store.h"
#include "test_sql.h"
#include <unistd.h>

/* pass@k as the summaries compute it (stats/stats.h) */
static double pass_at_k(int n, int c, int k)
{
	double v;
	return stats_pass_at_k(n, c, k, &v) == 0 ? v : -1;
}

static void row(struct store *db, int rep, const char *task, int attempt, const char *cls, int tokens, const char *answer,
		const char *raw_sha)
{
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "INSERT INTO eval_rows(run, repeat_index, task_id, attempt, pass, completion_tokens, seconds, truncated,"
		 " failure_class, grader_detail, raw_sha256) VALUES (1, %d, '%s', %d, %d, %d, 0.5, %d, '%s', '%s%s%s', %s%s%s)",
		 rep, task, attempt, strcmp(cls, "pass") == 0, tokens, strcmp(cls, "truncated") == 0, cls,
		 answer ? "{\"answer\":\"" : "{}", answer ? answer : "", answer ? "\"}" : "", raw_sha ? "'" : "",
		 raw_sha ? raw_sha : "NULL", raw_sha ? "'" : "");
	if (!CHECK(store_exec(db, sql) == 0))
		fprintf(stderr, "%s\n", store_errmsg(db));
}

int main(void)
{
	char path[256], err[1024];
	snprintf(path, sizeof path, "/tmp/sixi_test_results_%d.db", (int)getpid());
	unlink(path);
	struct store *s = store_open(path, err, sizeof err);
	if (!CHECK(s != NULL))
		return test_done();
	int64_t run;
	struct store_run r = {.kind = "eval", .workload = "eval", .model = "m",
			      .protocol_json = "{\"protocol\":{\"repeats\":3},\"condition\":\"c\"}"};
	CHECK(store_run_begin(s, &r, &run) == 0 && run == 1);
	char sha[65];
	const char *text = "he said \"hi\", then\nleft";
	CHECK(store_raw_put(s, text, strlen(text), sha) == 0);
	struct store *db = s;
	/* task a (code): pass, pass, wrong -> c=2 of 3 */
	row(db, 0, "a", 1, "pass", 10, NULL, sha);
	row(db, 1, "a", 1, "pass", 10, NULL, NULL);
	row(db, 2, "a", 1, "wrong", 10, NULL, NULL);
	/* task b (numeric): answers 7 (wrong), 8 (pass), 7 (wrong): the vote picks 7 -> fails */
	row(db, 0, "b", 1, "wrong", 20, "7", NULL);
	row(db, 1, "b", 1, "api_error", 0, NULL, NULL); /* retried, then passed */
	row(db, 1, "b", 2, "pass", 20, "8", NULL);
	row(db, 2, "b", 1, "truncated", 100, "7", NULL);
	/* task c: environment in every repeat: left out of graded rates */
	row(db, 0, "c", 1, "environment", 5, NULL, NULL);
	row(db, 1, "c", 1, "environment", 5, NULL, NULL);
	row(db, 2, "c", 1, "environment", 5, NULL, NULL);
	store_close(s);

	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	CHECK(eval_run_summary(path, 1, true, out, err, sizeof err) == 0);
	fclose(out);
	cJSON *j = cJSON_Parse(buf);
	if (CHECK(j != NULL)) {
		double v;
		CHECK(json_get_double(j, "task_runs", &v) && v == 9);
		CHECK(json_get_double(j, "attempts", &v) && v == 10);
		CHECK(json_get_double(j, "graded", &v) && v == 6);
		CHECK(json_get_double(j, "passed", &v) && v == 3);
		CHECK(json_get_double(j, "pass_rate", &v) && v == 0.5);
		CHECK_NEAR(json_get_double(j, "pass_rate_end_to_end", &v) ? v : -1, 3.0 / 9, 1e-12);
		CHECK(json_get_double(j, "classes.environment", &v) && v == 3);
		CHECK(json_get_double(j, "classes.api_error", &v) && v == 0); /* no task run lost */
		CHECK(json_get_double(j, "api_error_attempts", &v) && v == 1);
		CHECK(json_get_double(j, "classes.truncated", &v) && v == 1);
		/* tokens: 10+10+10+20+0+20+100+5+5+5 = 185 over 10 attempts; 185 / 3 solved */
		CHECK_NEAR(json_get_double(j, "tokens_per_attempt", &v) ? v : -1, 18.5, 1e-12);
		CHECK_NEAR(json_get_double(j, "tokens_per_solved_task", &v) ? v : -1, 185.0 / 3, 1e-12);
		/* pass@k averaged over a (n=3,c=2) and b (n=3,c=1); c has no graded rows */
		CHECK_NEAR(json_get_double(j, "pass_at_k.1", &v) ? v : -1,
			   (pass_at_k(3, 2, 1) + pass_at_k(3, 1, 1)) / 2, 1e-12);
		CHECK_NEAR(json_get_double(j, "pass_at_k.3", &v) ? v : -1, 1.0, 1e-12);
		/* vote: a passes (2 of 3), b's majority answer 7 is wrong */
		CHECK(json_get_double(j, "majority_vote_passed", &v) && v == 1);
		CHECK(json_get_double(j, "majority_vote_tasks", &v) && v == 2);
		/* per repeat: r0 1/2, r1 2/2, r2 0/2 -> sd 0.5 */
		const cJSON *pr = json_path(j, "pass_rate_per_repeat");
		CHECK(cJSON_GetArraySize(pr) == 3);
		CHECK_NEAR(json_get_double(j, "pass_rate_sd_across_repeats", &v) ? v : -1, 0.5, 1e-12);
	}
	cJSON_Delete(j);
	free(buf);

	/* the summary is stored with the run */
	CHECK_EQ_INT(test_sql_i64(path, "SELECT json_extract(summary_json, '$.eval.passed') FROM runs WHERE id = 1"), 3);

	/* export: CSV quotes commas, quotes and newlines of the raw text */
	out = open_memstream(&buf, &len);
	CHECK(eval_run_export(path, 1, "csv", out, err, sizeof err) == 0);
	fclose(out);
	CHECK(strstr(buf, "\"he said \"\"hi\"\", then\nleft\"") != NULL);
	CHECK(strncmp(buf, "run,repeat,task,attempt,pass,failure_class", 42) == 0);
	free(buf);
	out = open_memstream(&buf, &len);
	CHECK(eval_run_export(path, 1, "jsonl", out, err, sizeof err) == 0);
	fclose(out);
	int lines = 0;
	for (char *p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	CHECK_EQ_INT(lines, 10);
	CHECK(strstr(buf, "\"completion\":\"he said \\\"hi\\\", then\\nleft\"") != NULL);
	free(buf);
	CHECK(eval_run_export(path, 1, "xml", stdout, err, sizeof err) == -EINVAL && strstr(err, "--csv or --jsonl"));
	CHECK(eval_run_summary(path, 42, false, NULL, err, sizeof err) != 0 && strstr(err, "no eval run 42"));
	unlink(path);
	char wal[300];
	snprintf(wal, sizeof wal, "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof wal, "%s-shm", path);
	unlink(wal);
	return test_done();
}
