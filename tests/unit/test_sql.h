/* test_sql.h — a second connection to a results file, for tests that check what
 * the store wrote (or plant rows it would refuse) with SQL of their own. The
 * programs never do this: all their SQL is in src/store/. */
#ifndef SIXI_TEST_SQL_H
#define SIXI_TEST_SQL_H
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

/* The first column of the first row of sql run on the file at path (0 for NULL),
 * -1 when there is no row or it failed. */
static inline int64_t test_sql_i64(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 10000);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		else
			fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* The first column of the first row as text into buf ("" when none). */
static inline const char *test_sql_text(const char *path, const char *sql, char *buf, size_t n)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	snprintf(buf, n, "%s", "");
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 10000);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
		    sqlite3_column_text(st, 0))
			snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return buf;
}
#endif
