/* store — see store.h.
 *
 * Migrations are an ordered list of SQL scripts; version N's script turns a
 * version N-1 file into a version N file inside one transaction. Writers use
 * prepared statements and one transaction per row (WAL makes that cheap:
 * synchronous=NORMAL in WAL mode fsyncs only at checkpoints, and a crash loses
 * at most the rows of the last moments, never leaves a partial one). */
#include "store/store.h"
#include "core/fault.h"
#include "core/clock.h"
#include "core/hash.h"
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct store {
	sqlite3 *db;
	sqlite3_stmt *ins_bench;
	sqlite3_stmt *ins_eval;
	sqlite3_stmt *ins_raw;
	sqlite3_stmt *ins_kl;
	char path[1024];
};

static const char *const migrations[] = {
	/* version 1 */
	"CREATE TABLE runs ("
	" id INTEGER PRIMARY KEY,"
	" kind TEXT NOT NULL CHECK (kind IN ('bench','eval')),"
	" workload TEXT,"
	" started TEXT NOT NULL,"
	" finished TEXT,"
	" protocol_json TEXT NOT NULL,"
	" protocol_hash TEXT NOT NULL,"
	" config_hash TEXT NOT NULL,"
	" endpoint TEXT,"
	" model TEXT,"
	" fingerprint TEXT,"
	" client_version TEXT NOT NULL,"
	" host_facts TEXT,"
	" status TEXT NOT NULL DEFAULT 'running',"
	" summary_json TEXT);"
	"CREATE TABLE bench_requests ("
	" id INTEGER PRIMARY KEY,"
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" phase TEXT NOT NULL DEFAULT 'measure',"
	" level INTEGER NOT NULL,"
	" stream INTEGER NOT NULL,"
	" seq INTEGER NOT NULL DEFAULT 0,"
	" prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER, requested_tokens INTEGER,"
	" sse_events INTEGER NOT NULL DEFAULT 0, content_events INTEGER NOT NULL DEFAULT 0,"
	" t_intended INTEGER, t_send INTEGER, t_first_byte INTEGER, t_first_token INTEGER, t_last INTEGER, t_done INTEGER,"
	" error TEXT, error_detail TEXT, http_status INTEGER, finish_reason TEXT,"
	" fingerprint_hash TEXT, tag TEXT, itl_json TEXT);"
	"CREATE INDEX bench_requests_run ON bench_requests(run, level);"
	"CREATE TABLE raw_text ("
	" sha256 TEXT PRIMARY KEY,"
	" bytes BLOB NOT NULL);"
	"CREATE TABLE eval_rows ("
	" id INTEGER PRIMARY KEY,"
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" repeat_index INTEGER NOT NULL,"
	" task_id TEXT NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" pass INTEGER NOT NULL CHECK (pass IN (0,1)),"
	" prompt_tokens INTEGER, completion_tokens INTEGER,"
	" seconds REAL,"
	" truncated INTEGER NOT NULL DEFAULT 0,"
	" has_code INTEGER NOT NULL DEFAULT 0,"
	" loop_pct REAL,"
	" early_stop TEXT,"
	" api_error TEXT,"
	" failure_class TEXT NOT NULL CHECK (failure_class IN ('pass','truncated','loop','environment','api_error','wrong')),"
	" finish_reason TEXT,"
	" raw_sha256 TEXT REFERENCES raw_text(sha256),"
	" reasoning_sha256 TEXT REFERENCES raw_text(sha256),"
	" grader_detail TEXT,"
	" UNIQUE (run, repeat_index, task_id, attempt));"
	"CREATE INDEX eval_rows_run ON eval_rows(run, task_id);",
	/* version 2: bench rows clustered on (run, id), one b-tree per row written
	 * instead of the table plus its (run, level) index; id is now numbered
	 * within its run (1, 2, ... in the order rows were written) */
	"CREATE TABLE bench_requests_v2 ("
	" id INTEGER NOT NULL,"
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" phase TEXT NOT NULL DEFAULT 'measure',"
	" level INTEGER NOT NULL,"
	" stream INTEGER NOT NULL,"
	" seq INTEGER NOT NULL DEFAULT 0,"
	" prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER, requested_tokens INTEGER,"
	" sse_events INTEGER NOT NULL DEFAULT 0, content_events INTEGER NOT NULL DEFAULT 0,"
	" t_intended INTEGER, t_send INTEGER, t_first_byte INTEGER, t_first_token INTEGER, t_last INTEGER, t_done INTEGER,"
	" error TEXT, error_detail TEXT, http_status INTEGER, finish_reason TEXT,"
	" fingerprint_hash TEXT, tag TEXT, itl_json TEXT,"
	" PRIMARY KEY (run, id)) WITHOUT ROWID;"
	"INSERT INTO bench_requests_v2 SELECT * FROM bench_requests;"
	"DROP TABLE bench_requests;"
	"ALTER TABLE bench_requests_v2 RENAME TO bench_requests;",
	/* version 3: per-position rows of a KL-divergence run (sixi-eval kl): the candidate's
	 * next-token distribution against the reference's at each position of a text */
	"CREATE TABLE kl_rows ("
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" position INTEGER NOT NULL,"
	" token INTEGER NOT NULL,"
	" kl REAL NOT NULL,"
	" top1_same INTEGER NOT NULL CHECK (top1_same IN (0,1)),"
	" logp_ref REAL NOT NULL,"
	" logp_cand REAL NOT NULL,"
	" PRIMARY KEY (run, position)) WITHOUT ROWID;",
};

static int set_err(char *err, size_t errlen, const char *path, const char *what, sqlite3 *db)
{
	if (err)
		snprintf(err, errlen, "%s: %s%s%s", path, what, db ? ": " : "", db ? sqlite3_errmsg(db) : "");
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
	int want = (int)(sizeof migrations / sizeof migrations[0]);
	if (have > want) {
		snprintf(err, errlen,
			 "%s: schema version %d is newer than this program understands (%d); use a newer sixi",
			 path, have, want);
		return -EPROTO;
	}
	for (int v = have + 1; v <= want; v++) {
		char *msg = NULL;
		char sql[256];
		if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		if (sqlite3_exec(db, migrations[v - 1], NULL, NULL, &msg) != SQLITE_OK)
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
		snprintf(err, errlen, "%s: migrating to schema version %d failed: %s", path, v, msg ? msg : "?");
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
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(s->path, sizeof s->path, "%s", path);
	if (mkdir_parent(path) != 0) {
		snprintf(err, errlen, "%s: cannot create its directory: %s", path, strerror(errno));
		goto fail;
	}
	if (fault_init() != 0) { /* fault injection (tests only: SIXI_FAULT, core/fault.h) */
		snprintf(err, errlen, "%s: SIXI_FAULT is malformed (see the message above)", path);
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
		snprintf(err, errlen, "%s: not a usable SQLite database: %s", path, msg ? msg : "?");
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

struct sqlite3 *store_db(struct store *s) { return s->db; }
const char *store_errmsg(struct store *s) { return sqlite3_errmsg(s->db); }

int store_exec(struct store *s, const char *sql)
{
	return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

/* The binders return SQLite's code: a TRANSIENT text that cannot be copied
 * (SQLITE_NOMEM) leaves the parameter NULL, and a row with a NULL where a
 * value was meant (an error class, say) must never be written, so writers
 * check them all before stepping. */
static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

static int bind_time(sqlite3_stmt *st, int i, int64_t v)
{
	return v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

/* A count that is -1 when unknown: NULL then. */
static int bind_count(sqlite3_stmt *st, int i, int64_t v)
{
	return v >= 0 ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

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
	bad |= bind_text(st, 1, r->kind);
	bad |= bind_text(st, 2, r->workload);
	bad |= bind_text(st, 3, started);
	bad |= bind_text(st, 4, proto);
	bad |= bind_text(st, 5, hash);
	bad |= bind_text(st, 6, hash);
	bad |= bind_text(st, 7, r->endpoint);
	bad |= bind_text(st, 8, r->model);
	bad |= bind_text(st, 9, r->fingerprint);
	bad |= bind_text(st, 10, "sixi " SIXI_VERSION);
	bad |= bind_text(st, 11, r->host_facts);
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
	bad |= bind_text(st, 1, status);
	bad |= bind_text(st, 2, finished);
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
	bad |= bind_text(st, 1, summary_json);
	bad |= sqlite3_bind_int64(st, 2, run_id);
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

int store_run_keep_fingerprint(struct store *s, int64_t run_id, const char *fingerprint_json)
{
	sqlite3_stmt *st;
	/* coalesce: a run keeps the first fingerprint it was given */
	if (sqlite3_prepare_v2(s->db, "UPDATE runs SET fingerprint = coalesce(fingerprint, ?) WHERE id = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	int bad = 0;
	bad |= bind_text(st, 1, fingerprint_json);
	bad |= sqlite3_bind_int64(st, 2, run_id);
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	if (rc == 0 && sqlite3_changes(s->db) != 1)
		rc = -ENOENT;
	sqlite3_finalize(st);
	return rc;
}

/* A writer's statement, prepared on first use and kept: reset, bindings cleared. */
static sqlite3_stmt *cached(struct store *s, sqlite3_stmt **slot, const char *sql)
{
	if (!*slot && sqlite3_prepare_v2(s->db, sql, -1, slot, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_reset(*slot);
	sqlite3_clear_bindings(*slot);
	return *slot;
}

/* Runs a kept writer statement once (autocommit: its own transaction) unless a
 * bind failed (bad != SQLITE_OK). */
static int step_once(sqlite3_stmt *st, int bad)
{
	int rc = bad ? -ENOMEM : sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(st);
	return rc;
}

int store_bench_insert(struct store *s, const struct store_bench_row *r)
{
	/* the next id of the run, read under the row's own write lock: one seek to
	 * the end of the run's key range, right where the row goes */
	sqlite3_stmt *st = cached(s, &s->ins_bench,
			       "INSERT INTO bench_requests(id, run, phase, level, stream, seq, prompt_tokens, cached_tokens,"
			       " completion_tokens, requested_tokens, sse_events, content_events, t_intended, t_send,"
			       " t_first_byte, t_first_token, t_last, t_done, error, error_detail, http_status,"
			       " finish_reason, fingerprint_hash, tag, itl_json)"
			       " VALUES ((SELECT coalesce(max(id), 0) + 1 FROM bench_requests WHERE run = ?1),"
			       " ?1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, r->run_id);
	bad |= bind_text(st, 2, r->phase ? r->phase : "measure");
	bad |= sqlite3_bind_int64(st, 3, r->level);
	bad |= sqlite3_bind_int64(st, 4, r->stream);
	bad |= sqlite3_bind_int64(st, 5, r->seq);
	bad |= bind_count(st, 6, r->prompt_tokens);
	bad |= bind_count(st, 7, r->cached_tokens);
	bad |= bind_count(st, 8, r->completion_tokens);
	bad |= sqlite3_bind_int64(st, 9, r->requested_tokens);
	bad |= sqlite3_bind_int64(st, 10, r->sse_events);
	bad |= sqlite3_bind_int64(st, 11, r->content_events);
	bad |= bind_time(st, 12, r->t_intended);
	bad |= bind_time(st, 13, r->t_send);
	bad |= bind_time(st, 14, r->t_first_byte);
	bad |= bind_time(st, 15, r->t_first_token);
	bad |= bind_time(st, 16, r->t_last);
	bad |= bind_time(st, 17, r->t_done);
	bad |= bind_text(st, 18, r->error);
	bad |= bind_text(st, 19, r->error_detail);
	if (r->http_status)
		bad |= sqlite3_bind_int(st, 20, r->http_status);
	bad |= bind_text(st, 21, r->finish_reason);
	bad |= bind_text(st, 22, r->fingerprint_hash);
	bad |= bind_text(st, 23, r->tag);
	bad |= bind_text(st, 24, r->itl_json);
	return step_once(st, bad);
}

static int bind_opt_text(sqlite3_stmt *st, int i, const char *v)
{
	return bind_text(st, i, v && *v ? v : NULL);
}

int store_eval_insert(struct store *s, const struct store_eval_row *w)
{
	sqlite3_stmt *st = cached(s, &s->ins_eval,
			       "INSERT INTO eval_rows(run, repeat_index, task_id, attempt, pass, prompt_tokens,"
			       " completion_tokens, seconds, truncated, has_code, loop_pct, early_stop, api_error,"
			       " failure_class, finish_reason, raw_sha256, reasoning_sha256, grader_detail)"
			       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, w->run_id);
	bad |= sqlite3_bind_int64(st, 2, w->repeat);
	bad |= bind_text(st, 3, w->task_id);
	bad |= sqlite3_bind_int64(st, 4, w->attempt);
	bad |= sqlite3_bind_int(st, 5, w->pass);
	bad |= bind_count(st, 6, w->prompt_tokens);
	bad |= bind_count(st, 7, w->completion_tokens);
	bad |= sqlite3_bind_double(st, 8, w->seconds);
	bad |= sqlite3_bind_int(st, 9, w->truncated);
	bad |= sqlite3_bind_int(st, 10, w->has_code);
	bad |= sqlite3_bind_double(st, 11, w->loop_pct);
	bad |= bind_opt_text(st, 12, w->early_stop);
	bad |= bind_opt_text(st, 13, w->api_error);
	bad |= bind_opt_text(st, 14, w->failure_class);
	bad |= bind_opt_text(st, 15, w->finish_reason);
	bad |= bind_opt_text(st, 16, w->raw_sha);
	bad |= bind_opt_text(st, 17, w->reasoning_sha);
	bad |= bind_opt_text(st, 18, w->detail_json);
	return step_once(st, bad);
}

int store_kl_insert(struct store *s, const struct store_kl_row *w)
{
	sqlite3_stmt *st = cached(s, &s->ins_kl,
			       "INSERT INTO kl_rows(run, position, token, kl, top1_same, logp_ref, logp_cand)"
			       " VALUES (?,?,?,?,?,?,?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, w->run_id);
	bad |= sqlite3_bind_int64(st, 2, w->position);
	bad |= sqlite3_bind_int64(st, 3, w->token);
	bad |= sqlite3_bind_double(st, 4, w->kl);
	bad |= sqlite3_bind_int(st, 5, w->top1_same ? 1 : 0);
	bad |= sqlite3_bind_double(st, 6, w->logp_ref);
	bad |= sqlite3_bind_double(st, 7, w->logp_cand);
	return step_once(st, bad);
}

int store_raw_put(struct store *s, const void *p, size_t n, char hex[65])
{
	sha256_hex(p, n, hex);
	sqlite3_stmt *st = cached(s, &s->ins_raw, "INSERT OR IGNORE INTO raw_text(sha256, bytes) VALUES (?, ?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_text(st, 1, hex, 64, SQLITE_TRANSIENT);
	bad |= sqlite3_bind_blob(st, 2, n ? p : "", (int)n, SQLITE_TRANSIENT);
	return step_once(st, bad);
}
