/* Unit tests for src/store: schema creation, migration idempotence, rows, raw text. */
#include "test.h"
#include "store/store.h"
#include <sqlite3.h>
#include <unistd.h>

static int64_t count(struct store *s, const char *sql)
{
	sqlite3_stmt *st;
	int64_t n = -1;
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

int main(void)
{
	char path[] = "/tmp/sixi-test-store-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	unlink(path);
	char err[512];
	struct store *s = store_open(path, err, sizeof err);
	if (!CHECK(s != NULL)) fprintf(stderr, "%s\n", err);
	if (!s)
		return test_done();
	CHECK_EQ_INT(count(s, "SELECT version FROM schema_version"), STORE_SCHEMA_VERSION);
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
	CHECK_EQ_INT(count(s, "SELECT count(*) FROM bench_requests WHERE completion_tokens IS NULL AND error='usage'"), 1);
	CHECK_EQ_INT(count(s, "SELECT sum(completion_tokens) FROM bench_requests"), 64);
	CHECK(store_run_set_summary(s, run, "{\"x\":1}") == 0);
	CHECK(store_run_set_summary(s, run, "{\"y\":2}") == 0);
	CHECK_EQ_INT(count(s, "SELECT json_extract(summary_json, '$.x') + json_extract(summary_json, '$.y') FROM runs"), 3);
	CHECK(store_run_finish(s, run, "done") == 0);
	char hex[65], hex2[65];
	CHECK(store_raw_put(s, "abc", 3, hex) == 0);
	CHECK(store_raw_put(s, "abc", 3, hex2) == 0);
	CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_EQ_INT(count(s, "SELECT count(*) FROM raw_text"), 1);
	/* a bad kind is refused by the schema, not stored */
	struct store_run bad = { .kind = "nonsense" };
	CHECK(store_run_begin(s, &bad, &run) != 0);
	store_close(s);
	/* reopening migrates nothing and keeps rows */
	s = store_open(path, err, sizeof err);
	CHECK(s != NULL);
	CHECK_EQ_INT(count(s, "SELECT count(*) FROM bench_requests"), 2);
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
