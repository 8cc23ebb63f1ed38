/* store — the SQLite results database: schema, migrations, and every statement
 * that reads or writes it. No code outside src/store/ includes sqlite3.h: a
 * program that needs a figure from the file calls a named function here.
 *
 * One file (default results/sixi.db) in WAL mode. Every finished row is written
 * in its own transaction the moment it is known, so a run killed at any point
 * leaves only complete rows and can be resumed. The schema version lives in
 * schema_version; store_open() migrates older files forward and refuses newer ones.
 * schema.c describes every table and column.
 * Arguments are borrowed; struct store is opaque and freed by store_close().
 * Readers report what went wrong in (err, errlen) and return 0 or a negative errno;
 * rows handed to a callback are borrowed until it returns.
 *
 * Files: store.c (open, migrate, raw text, transactions), runs.c, bench.c,
 * eval.c, kl.c (one table each), schema.c, fault.c (test-only failing writes). */
#ifndef SIXI_STORE_STORE_H
#define SIXI_STORE_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_DEFAULT_PATH "results/sixi.db"
#define STORE_SCHEMA_VERSION 3

struct store;

/* Opens (creating parent dir and file if needed) and migrates. NULL on error with a
 * message naming the path in err. */
struct store *store_open(const char *path, char *err, size_t errlen);
void store_close(struct store *s);
/* SQLite's message for the last failed call on s. */
const char *store_errmsg(struct store *s);

/* ---- transactions and tuning (store.c) ---- */
/* One transaction around several writes (all or nothing): BEGIN IMMEDIATE, COMMIT, ROLLBACK. */
__attribute__((warn_unused_result)) int store_begin(struct store *s);
__attribute__((warn_unused_result)) int store_commit(struct store *s);
__attribute__((warn_unused_result)) int store_rollback(struct store *s);
/* Copies the WAL back into the database every `pages` pages instead of SQLite's
 * 1,000 (fewer fsyncs per row for writers of many small rows). */
__attribute__((warn_unused_result)) int store_set_checkpoint_pages(struct store *s, int pages);

/* ---- runs (runs.c) ---- */

struct store_run {
	const char *kind;          /* "bench" | "eval" */
	const char *workload;      /* "sweep", "prefill", "agents", "rate", "eval", ... */
	const char *protocol_json; /* the frozen configuration, canonical JSON */
	const char *endpoint;
	const char *model;
	const char *fingerprint;   /* what the server says about itself (JSON) */
	const char *host_facts;    /* JSON */
};
/* Inserts a run with status 'running'; sets *run_id. The protocol and config hashes
 * are computed here (sha256 of protocol_json). */
__attribute__((warn_unused_result)) int store_run_begin(struct store *s, const struct store_run *r, int64_t *run_id);
__attribute__((warn_unused_result)) int store_run_finish(struct store *s, int64_t run_id, const char *status);
/* Merges key/value into runs.summary_json (a JSON object). */
__attribute__((warn_unused_result)) int store_run_set_summary(struct store *s, int64_t run_id, const char *summary_json);
/* Appends one level's summary (a JSON object) to runs.summary_json.levels. */
__attribute__((warn_unused_result)) int store_run_append_level(struct store *s, int64_t run_id, const char *level_json);
/* Sets runs.fingerprint of a run that has none yet; a run keeps the first one it was
 * given (at store_run_begin or here). 0, -ENOENT (no such run), -ENOMEM or -EIO. */
__attribute__((warn_unused_result)) int store_run_keep_fingerprint(struct store *s, int64_t run_id,
								   const char *fingerprint_json);

/* The eval run a merge wrote for merge key `key` (runs.summary_json.merge.key), the
 * oldest when there are several: 0 and *run_id (0 when there is none), or -EIO
 * with a message. */
__attribute__((warn_unused_result)) int store_run_find_merged(struct store *s, const char *key, int64_t *run_id,
							      char *err, size_t errlen);

/* One runs row as read back. Strings are the caller's (store_run_info_finish frees
 * them); a NULL column reads as NULL. */
struct store_run_info {
	int64_t id;
	char *kind, *workload, *model, *status, *started, *finished, *endpoint;
	char *protocol_json, *config_hash, *fingerprint, *host_facts, *summary_json;
};
/* Reads run id: 0, -ENOENT (no such run; err untouched), or -EIO / -ENOMEM with a message. */
__attribute__((warn_unused_result)) int store_run_get(struct store *s, int64_t id, struct store_run_info *out,
						     char *err, size_t errlen);
void store_run_info_finish(struct store_run_info *r);
/* A query that lists the header (id, kind, model, status, started, config hash) of
 * runs a and b, for reports that print the SQL that reproduces their tables. */
void store_run_pair_sql(int64_t a, int64_t b, char *buf, size_t n);
/* How many runs the file holds. */
__attribute__((warn_unused_result)) int store_run_count(struct store *s, int64_t *n, char *err, size_t errlen);
/* The ids of the runs of kind (NULL: any) and workload (NULL: any), oldest first or
 * newest first, at most limit of them (0: all). *ids is the caller's to free
 * (NULL when there are none). */
__attribute__((warn_unused_result)) int store_run_list(struct store *s, const char *kind, const char *workload,
						      bool newest_first, size_t limit, int64_t **ids, size_t *n,
						      char *err, size_t errlen);
/* The client's ceiling in SSE events per second: summary_json.events_per_s of the
 * newest finished selftest run; 0 when there is none. */
__attribute__((warn_unused_result)) int store_selftest_events_per_s(struct store *s, double *events_per_s);

/* ---- bench rows (bench.c) ---- */

/* One measured (or warm-up) request of a bench run. Times are CLOCK_MONOTONIC ns;
 * 0 means "did not happen". completion_tokens = -1 when the server sent no usage. */
struct store_bench_row {
	int64_t run_id;
	const char *phase;       /* "measure" | "warmup" | "ready" | "alone" */
	int64_t level;           /* concurrency, prompt length, agents, rps: what the workload varies */
	int64_t stream;          /* stream index within the level */
	int64_t seq;             /* request number within the stream */
	int64_t prompt_tokens, cached_tokens, completion_tokens, requested_tokens;
	int64_t sse_events, content_events;
	int64_t t_intended, t_send, t_first_byte, t_first_token, t_last, t_done;
	const char *error;       /* NULL on success; else class: connect|http|stall|reset|parse|server|usage|timeout */
	const char *error_detail;
	int http_status;
	const char *finish_reason;
	const char *fingerprint_hash;
	const char *tag;         /* workload detail, e.g. "doc" / "followup" */
	const char *itl_json;    /* optional: per-event gaps [ns,...] */
};
__attribute__((warn_unused_result)) int store_bench_insert(struct store *s, const struct store_bench_row *r);

/* A measured bench row as read back for figures. */
struct store_bench_read {
	int64_t id, level, stream, seq;
	int64_t prompt_tokens, cached_tokens, completion_tokens; /* -1: NULL (not reported) */
	int64_t requested_tokens, sse_events, content_events;
	int64_t t_intended, t_send, t_first_token, t_last, t_done; /* ns; 0: NULL */
	const char *error;                                        /* NULL on success */
	const char *fingerprint_hash, *tag;                       /* "" when NULL */
	const char *itl_json;     /* gaps between token-bearing events, JSON array of ns; NULL when not kept */
	const char *error_detail; /* NULL when NULL */
};
/* Calls fn for every 'measure' row of run in (level, stream, seq) order, and
 * stops at the first non-zero return of fn, which it returns. A row with a
 * column that is not a number is refused: -EINVAL, "bench_requests id N (run R,
 * level L): COLUMN holds 'V', not a number; ...". */
__attribute__((warn_unused_result)) int store_bench_each(struct store *s, int64_t run,
							int (*fn)(void *ctx, const struct store_bench_read *r),
							void *ctx, char *err, size_t errlen);
/* The query store_bench_each runs, for reports that print their SQL. */
void store_bench_each_sql(int64_t run, char *buf, size_t n);

/* ---- eval rows (eval.c) ---- */

/* One attempt at one task of an eval run (the per-task row). Empty strings are
 * stored as NULL, like absent ones. */
struct store_eval_row {
	int64_t run_id;
	int64_t repeat, attempt;
	const char *task_id;
	bool pass, truncated, has_code;
	int64_t prompt_tokens, completion_tokens; /* -1 = unknown */
	double seconds, loop_pct;
	const char *early_stop, *api_error, *failure_class, *finish_reason;
	const char *raw_sha, *reasoning_sha;     /* raw_text keys, stored before the row */
	const char *detail_json;                 /* grader_detail */
};
/* Inserts the row in its own transaction. 0, -ENOMEM, or -EIO (store_errmsg says
 * why; a second row for the same run, repeat, task and attempt is refused). */
__attribute__((warn_unused_result)) int store_eval_insert(struct store *s, const struct store_eval_row *r);

/* Puts a row copied from another file (sixi-eval merge): inserted when its run,
 * repeat, task and attempt are new (*outcome 1); left alone when a row with that key
 * and the same outcome (pass, failure_class, raw_sha256, reasoning_sha256) is there
 * (*outcome 0); not written when the row there has another outcome (*outcome -1).
 * Joins the caller's transaction. 0, -ENOMEM or -EIO. */
__attribute__((warn_unused_result)) int store_eval_put(struct store *s, const struct store_eval_row *r, int *outcome);

/* An eval row as read back. final is the one rule of which attempt counts: the
 * highest attempt of its (repeat, task) is the task run's outcome, the others are
 * retries on the way (every summary and report reads it from here). */
struct store_eval_read {
	int64_t id, repeat, attempt;
	const char *task_id;
	bool pass, truncated, has_code;
	bool final;
	int64_t prompt_tokens, completion_tokens;   /* -1: NULL (unknown) */
	double seconds, loop_pct;
	const char *failure_class;                  /* "" when NULL */
	const char *early_stop, *api_error, *finish_reason; /* NULL when NULL */
	const char *raw_sha, *reasoning_sha, *detail_json;
};
enum store_eval_order {
	STORE_EVAL_BY_REPEAT, /* repeat, task, attempt */
	STORE_EVAL_BY_TASK,   /* task, repeat, attempt */
};
/* Calls fn for every row of run in the given order; stops at fn's first non-zero
 * return, which it returns. completion_tokens, seconds and loop_pct must be NULL
 * or numbers: -EINVAL with "eval_rows id N (run R, task T): COLUMN holds 'V', not
 * a number; ..." otherwise. */
__attribute__((warn_unused_result)) int store_eval_each(struct store *s, int64_t run, enum store_eval_order order,
						       int (*fn)(void *ctx, const struct store_eval_read *r),
						       void *ctx, char *err, size_t errlen);
/* The query store_eval_each runs, for reports that print their SQL. */
void store_eval_each_sql(int64_t run, enum store_eval_order order, char *buf, size_t n);

/* How far a task of a run has got, for resuming: the highest attempt stored
 * (0: none) and how many of its attempts did not end in api_error (a task whose
 * attempts all did has no result yet). */
__attribute__((warn_unused_result)) int store_eval_task_progress(struct store *s, int64_t run, int64_t repeat,
								const char *task_id, int64_t *max_attempt,
								int64_t *results);

/* One cell of an export row: type as stored; text is SQLite's text of the value
 * (numbers too) and n its length in bytes. */
struct store_cell {
	enum { STORE_CELL_NULL, STORE_CELL_INT, STORE_CELL_REAL, STORE_CELL_TEXT } type;
	int64_t i;
	double d;
	const char *text;
	size_t n;
};
/* The export's columns, NULL-terminated: eval_rows' columns and the reply's and
 * reasoning's text ("completion", "reasoning"). */
extern const char *const store_eval_export_cols[];
/* Calls fn with the cells of each row of run (one per store_eval_export_cols
 * entry) in (repeat, task, attempt) order; stops at fn's first non-zero return. */
__attribute__((warn_unused_result)) int store_eval_export_each(struct store *s, int64_t run,
							      int (*fn)(void *ctx, const struct store_cell *cells),
							      void *ctx, char *err, size_t errlen);

/* ---- kl rows (kl.c) ---- */

/* One position of a KL-divergence run (sixi-eval kl): the distributions of the next token
 * after text[0..position] under the reference and the candidate model. */
struct store_kl_row {
	int64_t run_id;
	int64_t position;  /* 0-based index of the token whose successor is predicted */
	int64_t token;     /* the text's next token (the one scored) */
	double kl;         /* KL(reference || candidate) of the full next-token distributions, nats */
	bool top1_same;    /* the two most probable tokens are the same */
	double logp_ref, logp_cand; /* log-probability of `token` under each, nats */
};
/* Inserts the row (a second row for the same run and position is refused: -EIO). */
__attribute__((warn_unused_result)) int store_kl_insert(struct store *s, const struct store_kl_row *r);
/* Calls fn for each row of run in position order (run_id and position filled);
 * stops at fn's first non-zero return, which it returns. */
__attribute__((warn_unused_result)) int store_kl_each(struct store *s, int64_t run,
						     int (*fn)(void *ctx, const struct store_kl_row *r), void *ctx,
						     char *err, size_t errlen);

/* ---- raw text (store.c) ---- */

/* Stores bytes under their sha256 (idempotent); hex receives the digest. */
__attribute__((warn_unused_result)) int store_raw_put(struct store *s, const void *p, size_t n, char hex[65]);
/* The bytes stored under sha (hex), terminated, in *bytes (the caller's to free):
 * 0, -ENOENT when none are, -ENOMEM or -EIO. */
__attribute__((warn_unused_result)) int store_raw_get(struct store *s, const char *sha, char **bytes, size_t *n);

/* Runs SQL text as it is: for tests that build a file row by row, never for the programs. */
__attribute__((warn_unused_result)) int store_exec(struct store *s, const char *sql);
#endif
