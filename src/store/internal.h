/* internal — what the store's own files share and nothing outside src/store/ may
 * include: the connection, the kept writer statements, the binders and the
 * migrations (schema.c). */
#ifndef SIXI_STORE_INTERNAL_H
#define SIXI_STORE_INTERNAL_H
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct store {
	sqlite3 *db;
	sqlite3_stmt *ins_bench;
	sqlite3_stmt *ins_eval;
	sqlite3_stmt *ins_raw;
	sqlite3_stmt *ins_kl;
	char path[1024];
};

/* schema.c: migrations[v - 1] turns a version v-1 file into a version v one. */
extern const char *const store_migrations[];
extern const int store_n_migrations;

/* fault.c: registers the failing VFS when SIXI_FAULT names sqlite or full (tests only). */
int store_fault_install(void);

/* The binders return SQLite's code: a TRANSIENT text that cannot be copied
 * (SQLITE_NOMEM) leaves the parameter NULL, and a row with a NULL where a
 * value was meant (an error class, say) must never be written, so writers
 * check them all before stepping. */
static inline int store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}
/* An empty string is stored as NULL, like an absent one. */
static inline int store_bind_opt_text(sqlite3_stmt *st, int i, const char *v)
{
	return store_bind_text(st, i, v && *v ? v : NULL);
}
/* A time that is 0 when it did not happen: NULL then. */
static inline int store_bind_time(sqlite3_stmt *st, int i, int64_t v)
{
	return v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}
/* A count that is -1 when unknown: NULL then. */
static inline int store_bind_count(sqlite3_stmt *st, int i, int64_t v)
{
	return v >= 0 ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

/* A writer's statement, prepared on first use and kept: reset, bindings cleared. */
sqlite3_stmt *store_cached(struct store *s, sqlite3_stmt **slot, const char *sql);
/* Runs a kept writer statement once (autocommit: its own transaction) unless a
 * bind failed (bad != SQLITE_OK). 0, -ENOMEM or -EIO. */
int store_step_once(sqlite3_stmt *st, int bad);
/* Prepares a one-off statement; -EIO with "WHAT: <SQLite's message>" in err. */
int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what, char *err, size_t errlen);
/* -EIO with "WHAT: <SQLite's message>" in err. */
int store_fail(struct store *s, const char *what, char *err, size_t errlen);
/* A column's text, "" for NULL (borrowed until the next step). */
const char *store_col_text(sqlite3_stmt *st, int col);
/* A column's text as a malloc'd copy, NULL for NULL. *oom is set when a copy failed. */
char *store_col_dup(sqlite3_stmt *st, int col, int *oom);
/* Columns first .. first+n-1 of the current row must each be NULL or a finite
 * number (SQLite keeps 'nan' typed into an INTEGER column as text): -EINVAL with
 * "TABLE id ID (WHERE): COLUMN holds 'V', not a number; ..." otherwise. names
 * has n entries, the row id is column 0. */
int store_check_numeric(sqlite3_stmt *st, int first, int n, const char *const *names, const char *table,
			const char *where, char *err, size_t errlen);
#endif
