/* runs — the runs table: a run begun, finished, its summary and fingerprint
 * written, and read back (see store.h). */
#include "store/store.h"
#include "store/internal.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/hash.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_run_begin(struct store *s, const struct store_run *r, int64_t *run_id)
{
	char hash[65], started[32];
	const char *proto = r->protocol_json ? r->protocol_json : "{}";
	sha256_hex(proto, strlen(proto), hash);
	clock_wall_iso(started, sizeof started);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO runs(kind, workload, started, protocol_json, protocol_hash, config_hash,"
			       " endpoint, model, fingerprint, client_version, host_facts)"
			       " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int bad = 0;
	bad |= store_bind_text(st, 1, r->kind);
	bad |= store_bind_text(st, 2, r->workload);
	bad |= store_bind_text(st, 3, started);
	bad |= store_bind_text(st, 4, proto);
	bad |= store_bind_text(st, 5, hash);
	bad |= store_bind_text(st, 6, hash);
	bad |= store_bind_text(st, 7, r->endpoint);
	bad |= store_bind_text(st, 8, r->model);
	bad |= store_bind_text(st, 9, r->fingerprint);
	bad |= store_bind_text(st, 10, "sixi " SIXI_VERSION);
	bad |= store_bind_text(st, 11, r->host_facts);
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	if (rc == 0)
		*run_id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int store_run_finish(struct store *s, int64_t run_id, const char *status)
{
	char finished[32];
	clock_wall_iso(finished, sizeof finished);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "UPDATE runs SET status = ?, finished = ? WHERE id = ?", -1, &st, NULL) !=
	    SQLITE_OK)
		return -EIO;
	int bad = 0;
	bad |= store_bind_text(st, 1, status);
	bad |= store_bind_text(st, 2, finished);
	bad |= sqlite3_bind_int64(st, 3, run_id);
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

int store_run_set_summary(struct store *s, int64_t run_id, const char *summary_json)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
			       "UPDATE runs SET summary_json = json_patch(coalesce(summary_json, '{}'), ?) WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int bad = 0;
	bad |= store_bind_text(st, 1, summary_json);
	bad |= sqlite3_bind_int64(st, 2, run_id);
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

/* An UPDATE of one run with one text parameter (?1) and the run id (?2). */
static int update_run(struct store *s, const char *sql, const char *text, int64_t run_id)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int bad = store_bind_text(st, 1, text);
	bad |= sqlite3_bind_int64(st, 2, run_id);
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

int store_run_append_level(struct store *s, int64_t run_id, const char *level_json)
{
	/* summary_json.levels is an array; append through SQLite's JSON functions */
	return update_run(s,
			  "UPDATE runs SET summary_json = json_set(coalesce(summary_json, '{}'), '$.levels',"
			  " json_insert(coalesce(json_extract(summary_json, '$.levels'), json('[]')), '$[#]', json(?1)))"
			  " WHERE id = ?2",
			  level_json, run_id);
}

int store_run_keep_fingerprint(struct store *s, int64_t run_id, const char *fingerprint_json)
{
	/* coalesce: a run keeps the first fingerprint it was given */
	int rc = update_run(s, "UPDATE runs SET fingerprint = coalesce(fingerprint, ?1) WHERE id = ?2", fingerprint_json,
			    run_id);
	if (rc == 0 && sqlite3_changes(s->db) != 1)
		rc = -ENOENT;
	return rc;
}

int store_run_find_merged(struct store *s, const char *key, int64_t *run_id, char *err, size_t errlen)
{
	*run_id = 0;
	sqlite3_stmt *st;
	int rc = store_prepare(s,
			       "SELECT id FROM runs WHERE kind = 'eval' AND json_valid(summary_json)"
			       " AND json_extract(summary_json, '$.merge.key') = ? ORDER BY id LIMIT 1",
			       &st, "reading runs failed", err, errlen);
	if (rc)
		return rc;
	if (store_bind_text(st, 1, key) != SQLITE_OK) {
		sqlite3_finalize(st);
		err_set(err, errlen, "out of memory reading runs");
		return -ENOMEM;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		*run_id = sqlite3_column_int64(st, 0);
	else if (step != SQLITE_DONE)
		rc = store_fail(s, "reading runs failed", err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int store_run_get(struct store *s, int64_t id, struct store_run_info *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st;
	int rc = store_prepare(s,
			       "SELECT kind, workload, model, status, started, finished, endpoint, protocol_json,"
			       " config_hash, fingerprint, host_facts, summary_json FROM runs WHERE id = ?",
			       &st, "reading runs failed", err, errlen);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		int oom = 0;
		out->id = id;
		char **f[] = { &out->kind, &out->workload, &out->model, &out->status, &out->started, &out->finished,
			       &out->endpoint, &out->protocol_json, &out->config_hash, &out->fingerprint,
			       &out->host_facts, &out->summary_json };
		for (int c = 0; c < (int)(sizeof f / sizeof f[0]); c++)
			*f[c] = store_col_dup(st, c, &oom);
		if (oom) {
			store_run_info_finish(out);
			err_set(err, errlen, "out of memory reading run %lld", (long long)id);
			rc = -ENOMEM;
		}
	} else if (step == SQLITE_DONE) {
		rc = -ENOENT;
	} else {
		rc = store_fail(s, "reading runs failed", err, errlen);
	}
	sqlite3_finalize(st);
	return rc;
}

void store_run_info_finish(struct store_run_info *r)
{
	if (!r)
		return;
	char *f[] = { r->kind, r->workload, r->model, r->status, r->started, r->finished, r->endpoint,
		      r->protocol_json, r->config_hash, r->fingerprint, r->host_facts, r->summary_json };
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		free(f[i]);
	memset(r, 0, sizeof *r);
}

void store_run_pair_sql(int64_t a, int64_t b, char *buf, size_t n)
{
	snprintf(buf, n, "SELECT id, kind, model, status, started, config_hash FROM runs WHERE id IN (%lld, %lld)",
		 (long long)a, (long long)b);
}

int store_run_count(struct store *s, int64_t *n, char *err, size_t errlen)
{
	*n = 0;
	sqlite3_stmt *st;
	int rc = store_prepare(s, "SELECT count(*) FROM runs", &st, "reading runs failed", err, errlen);
	if (rc)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = sqlite3_column_int64(st, 0);
	else
		rc = store_fail(s, "reading runs failed", err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int store_run_list(struct store *s, const char *kind, const char *workload, bool newest_first, size_t limit,
		   int64_t **ids, size_t *n, char *err, size_t errlen)
{
	*ids = NULL;
	*n = 0;
	char sql[256];
	snprintf(sql, sizeof sql,
		 "SELECT id FROM runs WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR workload = ?2)"
		 " ORDER BY id %s LIMIT ?3",
		 newest_first ? "DESC" : "ASC");
	sqlite3_stmt *st;
	int rc = store_prepare(s, sql, &st, "reading runs failed", err, errlen);
	if (rc)
		return rc;
	int bad = store_bind_text(st, 1, kind);
	bad |= store_bind_text(st, 2, workload);
	bad |= sqlite3_bind_int64(st, 3, limit ? (int64_t)limit : -1);
	size_t cap = 0;
	int step = SQLITE_DONE;
	while (!bad && rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			int64_t *p = realloc(*ids, cap * sizeof *p);
			if (!p) {
				rc = -ENOMEM;
				break;
			}
			*ids = p;
		}
		(*ids)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	if (bad)
		rc = -ENOMEM;
	if (rc == 0 && step != SQLITE_DONE)
		rc = store_fail(s, "reading runs failed", err, errlen);
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory listing runs");
	if (rc) {
		free(*ids);
		*ids = NULL;
		*n = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

int store_selftest_events_per_s(struct store *s, double *events_per_s)
{
	*events_per_s = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT json_extract(summary_json, '$.events_per_s') FROM runs WHERE workload = 'selftest'"
			       " AND status = 'done' AND summary_json IS NOT NULL ORDER BY id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int step = sqlite3_step(st), rc = 0;
	if (step == SQLITE_ROW)
		*events_per_s = sqlite3_column_double(st, 0);
	else if (step != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(st);
	return rc;
}
