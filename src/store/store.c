/* store — see store.h: opening, migrating, closing, raw text, transactions.
 *
 * Writers use prepared statements and one transaction per row (WAL makes that
 * cheap: synchronous=NORMAL in WAL mode fsyncs only at checkpoints, and a crash
 * loses at most the rows of the last moments, never leaves a partial one). */
#include "store/store.h"
#include "store/internal.h"
#include "core/err.h"
#include "core/fault.h"
#include "core/hash.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int set_err(char *err, size_t errlen, const char *path, const char *what, sqlite3 *db)
{
	if (err)
		err_set(err, errlen, "%s: %s%s%s", path, what, db ? ": " : "", db ? sqlite3_errmsg(db) : "");
	return -EIO;
}

static int mkdir_parent(const char *path)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	for (char *p = dir + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0755);
			*p = '/';
		}
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int user_version(sqlite3 *db, int *v)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		*v = 0;
		return 0;
	}
	*v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return 0;
}

static int migrate(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	int have;
	user_version(db, &have);
	int want = store_n_migrations;
	if (have > want) {
		err_set(err, errlen,
			 "%s: schema version %d is newer than this program understands (%d); use a newer sixi",
			 path, have, want);
		return -EPROTO;
	}
	for (int v = have + 1; v <= want; v++) {
		char *msg = NULL;
		char sql[256];
		if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		if (sqlite3_exec(db, store_migrations[v - 1], NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		snprintf(sql, sizeof sql,
			 "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);"
			 "DELETE FROM schema_version; INSERT INTO schema_version VALUES (%d);", v);
		if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		if (sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		continue;
fail:
		err_set(err, errlen, "%s: migrating to schema version %d failed: %s", path, v, msg ? msg : "?");
		sqlite3_free(msg);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -EIO;
	}
	return 0;
}

struct store *store_open(const char *path, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof *s);
	if (!s) {
		err_set(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(s->path, sizeof s->path, "%s", path);
	if (mkdir_parent(path) != 0) {
		err_set(err, errlen, "%s: cannot create its directory: %s", path, strerror(errno));
		goto fail;
	}
	if (fault_init() != 0 || store_fault_install() != 0) { /* tests only: SIXI_FAULT, core/fault.h */
		err_set(err, errlen, "%s: SIXI_FAULT is malformed or its failing VFS could not be registered (see the "
			 "message above)", path);
		goto fail;
	}
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK) {
		set_err(err, errlen, path, "cannot open database", s->db);
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 10000);
	char *msg = NULL;
	if (sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
			 NULL, NULL, &msg) != SQLITE_OK) {
		err_set(err, errlen, "%s: not a usable SQLite database: %s", path, msg ? msg : "?");
		sqlite3_free(msg);
		goto fail;
	}
	if (migrate(s->db, path, err, errlen) != 0)
		goto fail;
	return s;
fail:
	store_close(s);
	return NULL;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	sqlite3_finalize(s->ins_bench);
	sqlite3_finalize(s->ins_eval);
	sqlite3_finalize(s->ins_raw);
	sqlite3_finalize(s->ins_kl);
	sqlite3_close(s->db);
	free(s);
}

const char *store_errmsg(struct store *s) { return sqlite3_errmsg(s->db); }

/* ---- helpers the store's files share (internal.h) ---- */

sqlite3_stmt *store_cached(struct store *s, sqlite3_stmt **slot, const char *sql)
{
	if (!*slot && sqlite3_prepare_v2(s->db, sql, -1, slot, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_reset(*slot);
	sqlite3_clear_bindings(*slot);
	return *slot;
}

int store_step_once(sqlite3_stmt *st, int bad)
{
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(st);
	return rc;
}

int store_fail(struct store *s, const char *what, char *err, size_t errlen)
{
	err_set(err, errlen, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
	return -EIO;
}

int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what, char *err, size_t errlen)
{
	*st = NULL;
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK)
		return 0;
	return store_fail(s, what, err, errlen);
}

const char *store_col_text(sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	return v ? (const char *)v : "";
}

char *store_col_dup(sqlite3_stmt *st, int col, int *oom)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	if (!v)
		return NULL;
	char *d = strdup((const char *)v);
	if (!d)
		*oom = 1;
	return d;
}

int store_check_numeric(sqlite3_stmt *st, int first, int n, const char *const *names, const char *table,
			const char *where, char *err, size_t errlen)
{
	for (int c = first; c < first + n; c++) {
		int t = sqlite3_column_type(st, c);
		if (t == SQLITE_NULL || t == SQLITE_INTEGER || (t == SQLITE_FLOAT && isfinite(sqlite3_column_double(st, c))))
			continue;
		return err_fail(err, errlen, "%s id %lld (%s): %s holds '%s', not a number; fix or delete that row", table,
				(long long)sqlite3_column_int64(st, 0), where, names[c - first], store_col_text(st, c));
	}
	return 0;
}

/* ---- transactions ---- */

static int exec_plain(struct store *s, const char *sql)
{
	return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int store_exec(struct store *s, const char *sql) { return exec_plain(s, sql); }
int store_begin(struct store *s) { return exec_plain(s, "BEGIN IMMEDIATE"); }
int store_commit(struct store *s) { return exec_plain(s, "COMMIT"); }
int store_rollback(struct store *s) { return exec_plain(s, "ROLLBACK"); }

int store_set_checkpoint_pages(struct store *s, int pages)
{
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA wal_autocheckpoint=%d", pages);
	return exec_plain(s, sql);
}

/* ---- raw text ---- */

int store_raw_put(struct store *s, const void *p, size_t n, char hex[65])
{
	sha256_hex(p, n, hex);
	sqlite3_stmt *st = store_cached(s, &s->ins_raw, "INSERT OR IGNORE INTO raw_text(sha256, bytes) VALUES (?, ?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_text(st, 1, hex, 64, SQLITE_TRANSIENT);
	bad |= sqlite3_bind_blob(st, 2, n ? p : "", (int)n, SQLITE_TRANSIENT);
	return store_step_once(st, bad);
}

int store_raw_get(struct store *s, const char *sha, char **bytes, size_t *n)
{
	*bytes = NULL;
	*n = 0;
	if (!sha)
		return -ENOENT;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "SELECT bytes FROM raw_text WHERE sha256 = ?", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int rc = -ENOENT;
	if (sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = -ENOMEM;
	} else {
		int step = sqlite3_step(st);
		if (step == SQLITE_ROW) {
			size_t len = (size_t)sqlite3_column_bytes(st, 0);
			char *out = malloc(len + 1);
			if (!out) {
				rc = -ENOMEM;
			} else {
				if (len) /* an empty blob comes back as NULL */
					memcpy(out, sqlite3_column_blob(st, 0), len);
				out[len] = 0;
				*bytes = out;
				*n = len;
				rc = 0;
			}
		} else if (step != SQLITE_DONE) {
			rc = -EIO;
		}
	}
	sqlite3_finalize(st);
	return rc;
}
