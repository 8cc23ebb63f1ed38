/* db — see db.h. */
#include "report/db.h"
#include "store/store.h"
#include "core/json.h"
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct store *report_db_open(const char *path, char *err, size_t errlen)
{
	if (!path || !*path) {
		snprintf(err, errlen, "--db DB is required (the results database, e.g. %s)", STORE_DEFAULT_PATH);
		return NULL;
	}
	if (access(path, R_OK) != 0) {
		snprintf(err, errlen, "%s: cannot read the database (%s); pass --db with the file sixi-eval or "
			 "sixi-bench wrote", path, strerror(errno));
		return NULL;
	}
	struct store *s = store_open(path, err, errlen);
	if (!s)
		return NULL;
	sqlite3_stmt *st;
	int64_t n = 0;
	if (sqlite3_prepare_v2((sqlite3 *)store_db(s), "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (n == 0) {
		snprintf(err, errlen, "%s: the database holds no runs; record one with sixi-eval or sixi-bench first",
			 path);
		store_close(s);
		return NULL;
	}
	return s;
}

static void copy_col(char *dst, size_t n, sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	snprintf(dst, n, "%s", v ? (const char *)v : "");
}

int report_db_run(struct store *s, int64_t id, const char *kind, struct report_run *out, char *err, size_t errlen)
{
	sqlite3 *db = (sqlite3 *)store_db(s);
	sqlite3_stmt *st;
	memset(out, 0, sizeof *out);
	if (sqlite3_prepare_v2(db,
			       "SELECT kind, coalesce(workload,''), coalesce(model,''), status, started, protocol_json,"
			       " config_hash, host_facts FROM runs WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "reading runs failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, id);
	int rc = 0;
	if (sqlite3_step(st) == SQLITE_ROW) {
		out->id = id;
		copy_col(out->kind, sizeof out->kind, st, 0);
		copy_col(out->workload, sizeof out->workload, st, 1);
		copy_col(out->model, sizeof out->model, st, 2);
		copy_col(out->status, sizeof out->status, st, 3);
		copy_col(out->started, sizeof out->started, st, 4);
		const unsigned char *p = sqlite3_column_text(st, 5);
		out->protocol_json = strdup(p ? (const char *)p : "{}");
		copy_col(out->config_hash, sizeof out->config_hash, st, 6);
		const unsigned char *hf = sqlite3_column_text(st, 7);
		cJSON *facts = hf ? cJSON_Parse((const char *)hf) : NULL;
		const char *mw = json_get_str(cJSON_GetObjectItemCaseSensitive(facts, "memory"), "warning");
		snprintf(out->memory_warning, sizeof out->memory_warning, "%s", mw ? mw : "");
		cJSON_Delete(facts);
		if (!out->protocol_json)
			rc = -ENOMEM;
		else if (strcmp(out->kind, kind) != 0) {
			snprintf(err, errlen, "run %lld is a %s run, not an %s run", (long long)id, out->kind, kind);
			rc = -EINVAL;
		}
	} else {
		/* say which runs of that kind exist, so the user can pick one */
		char list[256] = "";
		sqlite3_stmt *l;
		if (sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 10", -1, &l, NULL) ==
		    SQLITE_OK) {
			sqlite3_bind_text(l, 1, kind, -1, SQLITE_STATIC);
			while (sqlite3_step(l) == SQLITE_ROW) {
				size_t len = strlen(list);
				snprintf(list + len, sizeof list - len, "%s%lld", len ? ", " : "",
					 (long long)sqlite3_column_int64(l, 0));
			}
		}
		sqlite3_finalize(l);
		snprintf(err, errlen, "run %lld is not in the database (%s runs there: %s)", (long long)id, kind,
			 list[0] ? list : "none");
		rc = -ENOENT;
	}
	sqlite3_finalize(st);
	if (rc)
		report_run_finish(out);
	return rc;
}

void report_run_finish(struct report_run *r)
{
	if (!r)
		return;
	free(r->protocol_json);
	r->protocol_json = NULL;
}

int report_db_numeric(struct sqlite3_stmt *st, int first, int n, const char *const *names, const char *table,
		      const char *where, char *err, size_t errlen)
{
	for (int c = first; c < first + n; c++) {
		int t = sqlite3_column_type(st, c);
		if (t == SQLITE_NULL || t == SQLITE_INTEGER || (t == SQLITE_FLOAT && isfinite(sqlite3_column_double(st, c))))
			continue;
		snprintf(err, errlen, "%s id %lld (%s): %s holds '%s', not a number; fix or delete that row", table,
			 (long long)sqlite3_column_int64(st, 0), where, names[c - first],
			 (const char *)sqlite3_column_text(st, c));
		return -EINVAL;
	}
	return 0;
}
