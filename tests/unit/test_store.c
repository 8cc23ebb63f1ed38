/* Unit tests for src/store: schema creation, migration idempotence, rows, raw text. */
#include "test.h"
#include "store/store.h"
#include <errno.h>
#include "test_sql.h"
#include <sqlite3.h>
#include <unistd.h>

static int64_t count(const char *path, const char *sql) { return test_sql_i64(path, sql); }

/* Turns the mkstemp template in path into a fresh name no file has (the store creates it). */
static void temp_name(char *path)
{
	int fd = mkstemp(path);
	close(fd);
	unlink(path);
}

/* A new store at a fresh name from the template; NULL (a failed check) when it cannot open. */
static struct store *open_temp(char *path)
{
	char err[512] = "";
	temp_name(path);
	struct store *s = store_open(path, err, sizeof err);
	if (!CHECK(s != NULL))
		fprintf(stderr, "%s\n", err);
	return s;
}

/* A version-1 file as sixi 0.1 wrote it (bench rows in a rowid table with a
 * (run, level) index, ids global), two runs with interleaved rows; opening it
 * must migrate to version 2 keeping every row and id, and number new rows of
 * each run after its own last id. */
static void test_migrate_v1(void)
{
	char path[] = "/tmp/sixi-test-store-v1-XXXXXX";
	temp_name(path);
	sqlite3 *db;
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db,
		"PRAGMA journal_mode=WAL;"
		"CREATE TABLE runs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('bench','eval')),"
		" workload TEXT, started TEXT NOT NULL, finished TEXT, protocol_json TEXT NOT NULL,"
		" protocol_hash TEXT NOT NULL, config_hash TEXT NOT NULL, endpoint TEXT, model TEXT, fingerprint TEXT,"
		" client_version TEXT NOT NULL, host_facts TEXT, status TEXT NOT NULL DEFAULT 'running', summary_json TEXT);"
		"CREATE TABLE bench_requests (id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id),"
		" phase TEXT NOT NULL DEFAULT 'measure', level INTEGER NOT NULL, stream INTEGER NOT NULL,"
		" seq INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER,"
		" requested_tokens INTEGER, sse_events INTEGER NOT NULL DEFAULT 0, content_events INTEGER NOT NULL DEFAULT 0,"
		" t_intended INTEGER, t_send INTEGER, t_first_byte INTEGER, t_first_token INTEGER, t_last INTEGER,"
		" t_done INTEGER, error TEXT, error_detail TEXT, http_status INTEGER, finish_reason TEXT,"
		" fingerprint_hash TEXT, tag TEXT, itl_json TEXT);"
		"CREATE INDEX bench_requests_run ON bench_requests(run, level);"
		"CREATE TABLE raw_text (sha256 TEXT PRIMARY KEY, bytes BLOB NOT NULL);"
		"CREATE TABLE eval_rows (id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id),"
		" repeat_index INTEGER NOT NULL, task_id TEXT NOT NULL, attempt INTEGER NOT NULL,"
		" pass INTEGER NOT NULL CHECK (pass IN (0,1)), prompt_tokens INTEGER, completion_tokens INTEGER,"
		" seconds REAL, truncated INTEGER NOT NULL DEFAULT 0, has_code INTEGER NOT NULL DEFAULT 0, loop_pct REAL,"
		" early_stop TEXT, api_error TEXT, failure_class TEXT NOT NULL CHECK (failure_class IN"
		" ('pass','truncated','loop','environment','api_error','wrong')), finish_reason TEXT,"
		" raw_sha256 TEXT REFERENCES raw_text(sha256), reasoning_sha256 TEXT REFERENCES raw_text(sha256),"
		" grader_detail TEXT, UNIQUE (run, repeat_index, task_id, attempt));"
		"CREATE INDEX eval_rows_run ON eval_rows(run, task_id);"
		"CREATE TABLE schema_version(version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);"
		"INSERT INTO runs(id, kind, started, protocol_json, protocol_hash, config_hash, client_version)"
		" VALUES (1, 'bench', 't', '{}', 'h', 'h', 'sixi 0.1'), (2, 'bench', 't', '{}', 'h', 'h', 'sixi 0.1');"
		"INSERT INTO bench_requests(id, run, level, stream, seq, completion_tokens, t_done, error) VALUES"
		" (1, 1, 1, 0, 0, 10, 5, NULL), (2, 2, 1, 0, 0, 20, 6, NULL), (3, 1, 2, 1, 0, NULL, NULL, 'timeout'),"
		" (4, 2, 1, 0, 1, 30, 7, NULL), (5, 1, 2, 0, 0, 40, 8, NULL);",
		NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	char err[512];
	struct store *s = store_open(path, err, sizeof err);
	if (!CHECK(s != NULL)) fprintf(stderr, "%s\n", err);
	if (!s)
		return;
	CHECK_EQ_INT(count(path, "SELECT version FROM schema_version"), STORE_SCHEMA_VERSION);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM sqlite_master WHERE name = 'kl_rows'"), 1); /* version 3 */
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM sqlite_master WHERE name = 'bench_requests'"
			      " AND sql LIKE '%WITHOUT ROWID'"), 1);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'bench_requests'"
			      " AND sql IS NOT NULL"), 0);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM bench_requests"), 5);
	/* every row kept with its id, run and values */
	CHECK_EQ_INT(count(path, "SELECT sum(id * 1000 + run * 100 + coalesce(completion_tokens, 0)) FROM bench_requests"),
		     15000 + 700 + 100);
	CHECK_EQ_INT(count(path, "SELECT error = 'timeout' FROM bench_requests WHERE id = 3"), 1);
	struct store_bench_row row = { .run_id = 2, .level = 1, .stream = 0, .seq = 2, .completion_tokens = 50,
				       .t_send = 1, .t_done = 9 };
	CHECK(store_bench_insert(s, &row) == 0);
	row.run_id = 1;
	CHECK(store_bench_insert(s, &row) == 0);
	CHECK(store_bench_insert(s, &row) == 0);
	CHECK_EQ_INT(count(path, "SELECT max(id) FROM bench_requests WHERE run = 2"), 5);
	CHECK_EQ_INT(count(path, "SELECT group_concat(id) = '1,3,5,6,7' FROM (SELECT id FROM bench_requests"
			      " WHERE run = 1 ORDER BY id)"), 1);
	/* a fresh run starts at 1 */
	int64_t run = 0;
	struct store_run r = { .kind = "bench", .workload = "sweep", .protocol_json = "{}" };
	CHECK(store_run_begin(s, &r, &run) == 0);
	CHECK_EQ_INT(run, 3);
	row.run_id = run;
	CHECK(store_bench_insert(s, &row) == 0);
	CHECK_EQ_INT(count(path, "SELECT id FROM bench_requests WHERE run = 3"), 1);
	char ok[64];
	CHECK_EQ_STR(test_sql_text(path, "PRAGMA integrity_check", ok, sizeof ok), "ok");
	store_close(s);
	unlink(path);
}

/* What store_eval_each handed out: "repeat/task/attempt[F]" per row, F for final. */
static int collect(void *ctx, const struct store_eval_read *r)
{
	char *out = ctx;
	size_t n = strlen(out);
	snprintf(out + n, 512 - n, "%s%lld/%s/%lld%s", n ? " " : "", (long long)r->repeat, r->task_id,
		 (long long)r->attempt, r->final ? "F" : "");
	return 0;
}

static int stop_at_two(void *ctx, const struct store_eval_read *r)
{
	(void)r;
	return ++*(int *)ctx == 2 ? -ECANCELED : 0;
}

/* The readers: the final attempt of each (repeat, task) in both orders, a run read
 * back, the run lists, a refused non-number, a callback that stops the walk. */
static void test_readers(void)
{
	char path[] = "/tmp/sixi-test-store-read-XXXXXX";
	struct store *s = open_temp(path);
	if (!s)
		return;
	char err[512] = "";
	int64_t run = 0, other = 0;
	struct store_run r = { .kind = "eval", .workload = "eval", .protocol_json = "{\"a\":1}", .model = "m" };
	struct store_run b = { .kind = "bench", .workload = "sweep", .protocol_json = "{}" };
	CHECK(store_run_begin(s, &r, &run) == 0 && store_run_begin(s, &b, &other) == 0);
	static const struct { int rep; const char *task; int attempt; } rows[] = {
		{ 0, "t2", 1 }, { 0, "t1", 1 }, { 0, "t1", 2 }, { 1, "t1", 1 }, { 1, "t2", 1 }, { 1, "t2", 2 }, { 1, "t2", 3 },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct store_eval_row w = { .run_id = run, .repeat = rows[i].rep, .attempt = rows[i].attempt,
					    .task_id = rows[i].task, .prompt_tokens = -1, .completion_tokens = 5,
					    .failure_class = "wrong" };
		CHECK(store_eval_insert(s, &w) == 0);
	}
	char out[512] = "";
	CHECK(store_eval_each(s, run, STORE_EVAL_BY_REPEAT, collect, out, err, sizeof err) == 0);
	CHECK_EQ_STR(out, "0/t1/1 0/t1/2F 0/t2/1F 1/t1/1F 1/t2/1 1/t2/2 1/t2/3F");
	out[0] = 0;
	CHECK(store_eval_each(s, run, STORE_EVAL_BY_TASK, collect, out, err, sizeof err) == 0);
	CHECK_EQ_STR(out, "0/t1/1 0/t1/2F 1/t1/1F 0/t2/1F 1/t2/1 1/t2/2 1/t2/3F");
	int calls = 0;
	CHECK(store_eval_each(s, run, STORE_EVAL_BY_TASK, stop_at_two, &calls, err, sizeof err) == -ECANCELED);
	CHECK_EQ_INT(calls, 2);
	int64_t max_attempt = -1, results = -1;
	CHECK(store_eval_task_progress(s, run, 1, "t2", &max_attempt, &results) == 0);
	CHECK(max_attempt == 3 && results == 3);
	CHECK(store_eval_task_progress(s, run, 7, "t2", &max_attempt, &results) == 0);
	CHECK(max_attempt == 0 && results == 0);
	struct store_run_info info;
	CHECK(store_run_get(s, run, &info, err, sizeof err) == 0);
	CHECK(info.kind && strcmp(info.kind, "eval") == 0 && info.model && strcmp(info.model, "m") == 0);
	CHECK(info.protocol_json && strcmp(info.protocol_json, "{\"a\":1}") == 0 && info.fingerprint == NULL);
	store_run_info_finish(&info);
	CHECK(store_run_keep_fingerprint(s, run, "[1]") == 0);
	CHECK(store_run_get(s, run, &info, err, sizeof err) == 0 && info.fingerprint && strcmp(info.fingerprint, "[1]") == 0);
	store_run_info_finish(&info);
	CHECK(store_run_get(s, 99, &info, err, sizeof err) == -ENOENT);
	int64_t *ids = NULL, n = 0;
	size_t nids = 0;
	CHECK(store_run_count(s, &n, err, sizeof err) == 0 && n == 2);
	CHECK(store_run_list(s, "bench", NULL, true, 0, &ids, &nids, err, sizeof err) == 0 && nids == 1 && ids[0] == other);
	free(ids);
	CHECK(store_run_list(s, NULL, NULL, true, 1, &ids, &nids, err, sizeof err) == 0 && nids == 1 && ids[0] == other);
	free(ids);
	CHECK(store_run_list(s, NULL, "kl", false, 0, &ids, &nids, err, sizeof err) == 0 && nids == 0 && ids == NULL);
	CHECK(store_exec(s, "UPDATE eval_rows SET seconds = 'nan' WHERE attempt = 3") == 0);
	out[0] = 0;
	CHECK(store_eval_each(s, run, STORE_EVAL_BY_REPEAT, collect, out, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "eval_rows id 7 (run 1, task t2): seconds holds 'nan', not a number") != NULL);
	store_close(s);
	unlink(path);
}

/* store_eval_put (a row copied by a merge) and store_run_find_merged. */
static void test_merge_writers(void)
{
	char path[] = "/tmp/sixi-test-store-merge-XXXXXX";
	struct store *s = open_temp(path);
	if (!s)
		return;
	char err[512] = "";
	int64_t run = 0, found = -1;
	struct store_run r = { .kind = "eval", .workload = "eval", .protocol_json = "{}" };
	CHECK(store_run_begin(s, &r, &run) == 0);
	CHECK(store_run_find_merged(s, "k1", &found, err, sizeof err) == 0 && found == 0);
	CHECK(store_run_set_summary(s, run, "{\"merge\":{\"key\":\"k1\"}}") == 0);
	CHECK(store_run_find_merged(s, "k1", &found, err, sizeof err) == 0 && found == run);
	CHECK(store_run_find_merged(s, "k2", &found, err, sizeof err) == 0 && found == 0);
	struct store_eval_row w = { .run_id = run, .repeat = 0, .attempt = 1, .task_id = "t", .pass = true,
				    .prompt_tokens = -1, .completion_tokens = 3, .seconds = 1, .failure_class = "pass" };
	int outcome = 9;
	CHECK(store_eval_put(s, &w, &outcome) == 0 && outcome == 1);
	w.seconds = 2; /* timing is not the outcome */
	CHECK(store_eval_put(s, &w, &outcome) == 0 && outcome == 0);
	w.pass = false;
	w.failure_class = "wrong";
	CHECK(store_eval_put(s, &w, &outcome) == 0 && outcome == -1);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM eval_rows WHERE pass = 1 AND seconds = 1"), 1);
	store_close(s);
	unlink(path);
}

int main(void)
{
	test_migrate_v1();
	test_readers();
	test_merge_writers();
	char path[] = "/tmp/sixi-test-store-XXXXXX";
	temp_name(path);
	char err[512];
	struct store *s = store_open(path, err, sizeof err);
	if (!CHECK(s != NULL)) fprintf(stderr, "%s\n", err);
	if (!s)
		return test_done();
	CHECK_EQ_INT(count(path, "SELECT version FROM schema_version"), STORE_SCHEMA_VERSION);
	int64_t run = 0;
	struct store_run r = { .kind = "bench", .workload = "sweep", .protocol_json = "{\"a\":1}" };
	CHECK(store_run_begin(s, &r, &run) == 0);
	CHECK(run > 0);
	struct store_bench_row row = { .run_id = run, .level = 4, .stream = 1, .prompt_tokens = 10,
				       .cached_tokens = 0, .completion_tokens = 64, .sse_events = 16,
				       .t_send = 100, .t_done = 200 };
	CHECK(store_bench_insert(s, &row) == 0);
	row.completion_tokens = -1;
	row.error = "usage";
	CHECK(store_bench_insert(s, &row) == 0);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM bench_requests WHERE completion_tokens IS NULL AND error='usage'"), 1);
	CHECK_EQ_INT(count(path, "SELECT sum(completion_tokens) FROM bench_requests"), 64);
	CHECK(store_run_set_summary(s, run, "{\"x\":1}") == 0);
	CHECK(store_run_set_summary(s, run, "{\"y\":2}") == 0);
	CHECK_EQ_INT(count(path, "SELECT json_extract(summary_json, '$.x') + json_extract(summary_json, '$.y') FROM runs"), 3);
	/* a run keeps the first fingerprint it was given */
	CHECK(store_run_keep_fingerprint(s, run, "{\"a\":1}") == 0);
	CHECK(store_run_keep_fingerprint(s, run, "{\"a\":2}") == 0);
	CHECK_EQ_INT(count(path, "SELECT json_extract(fingerprint, '$.a') FROM runs"), 1);
	CHECK(store_run_keep_fingerprint(s, run + 1000, "{}") == -ENOENT);
	CHECK(store_run_finish(s, run, "done") == 0);
	char hex[65], hex2[65];
	CHECK(store_raw_put(s, "abc", 3, hex) == 0);
	CHECK(store_raw_put(s, "abc", 3, hex2) == 0);
	CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM raw_text"), 1);
	/* eval rows: values kept, empty strings stored as NULL, a second row for the
	 * same run, repeat, task and attempt refused */
	struct store_run er = { .kind = "eval", .workload = "eval", .protocol_json = "{}" };
	int64_t erun = 0;
	CHECK(store_run_begin(s, &er, &erun) == 0);
	struct store_eval_row ev = { .run_id = erun, .repeat = 1, .attempt = 2, .task_id = "t/1", .pass = true,
				     .prompt_tokens = 7, .completion_tokens = -1, .seconds = 1.5, .loop_pct = 12.5,
				     .early_stop = "", .failure_class = "pass", .finish_reason = "stop",
				     .raw_sha = hex, .detail_json = "{\"k\":1}" };
	CHECK(store_eval_insert(s, &ev) == 0);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM eval_rows WHERE task_id = 't/1' AND repeat_index = 1 AND attempt = 2"
			      " AND pass = 1 AND prompt_tokens = 7 AND completion_tokens IS NULL AND seconds = 1.5"
			      " AND loop_pct = 12.5 AND early_stop IS NULL AND api_error IS NULL"
			      " AND failure_class = 'pass' AND finish_reason = 'stop' AND reasoning_sha256 IS NULL"
			      " AND json_extract(grader_detail, '$.k') = 1"), 1);
	CHECK(store_eval_insert(s, &ev) != 0);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM eval_rows"), 1);
	/* a bad failure class is refused by the schema */
	ev.attempt = 3;
	ev.failure_class = "nonsense";
	CHECK(store_eval_insert(s, &ev) != 0);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM eval_rows"), 1);
	/* a bad kind is refused by the schema, not stored */
	struct store_run bad = { .kind = "nonsense" };
	CHECK(store_run_begin(s, &bad, &run) != 0);
	store_close(s);
	/* reopening migrates nothing and keeps rows */
	s = store_open(path, err, sizeof err);
	CHECK(s != NULL);
	CHECK_EQ_INT(count(path, "SELECT count(*) FROM bench_requests"), 2);
	/* a file from the future is refused with a message */
	CHECK(store_exec(s, "UPDATE schema_version SET version = 99") == 0);
	store_close(s);
	s = store_open(path, err, sizeof err);
	CHECK(s == NULL);
	CHECK(strstr(err, "newer") != NULL);
	/* not a database */
	FILE *f = fopen(path, "w");
	fputs("this is not sqlite, just text long enough to be a header..........................", f);
	fclose(f);
	char wal[1100];
	snprintf(wal, sizeof wal, "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof wal, "%s-shm", path);
	unlink(wal);
	s = store_open(path, err, sizeof err);
	CHECK(s == NULL);
	unlink(path);
	return test_done();
}
