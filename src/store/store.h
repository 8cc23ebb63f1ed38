/* store — the SQLite results database: schema, migrations, run and row writers.
 *
 * One file (default results/sixi.db) in WAL mode. Every finished row is written
 * in its own transaction the moment it is known, so a run killed at any point
 * leaves only complete rows and can be resumed. The schema version lives in
 * schema_version; store_open() migrates older files forward and refuses newer ones.
 * Arguments are borrowed; struct store is opaque and freed by store_close(). */
#ifndef SIXI_STORE_STORE_H
#define SIXI_STORE_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_DEFAULT_PATH "results/sixi.db"
#define STORE_SCHEMA_VERSION 3

struct store;
struct sqlite3;

/* Opens (creating parent dir and file if needed) and migrates. NULL on error with a
 * message naming the path in err. */
struct store *store_open(const char *path, char *err, size_t errlen);
void store_close(struct store *s);
/* The raw handle, for readers (report) that run their own queries. Borrowed. */
struct sqlite3 *store_db(struct store *s);
const char *store_errmsg(struct store *s);

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

/* Sets runs.fingerprint of a run that has none yet; a run keeps the first one it was
 * given (at store_run_begin or here). 0, -ENOENT (no such run), -ENOMEM or -EIO. */
__attribute__((warn_unused_result)) int store_run_keep_fingerprint(struct store *s, int64_t run_id,
								   const char *fingerprint_json);

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

/* Stores bytes under their sha256 (idempotent); hex receives the digest. */
__attribute__((warn_unused_result)) int store_raw_put(struct store *s, const void *p, size_t n, char hex[65]);

/* Begin/commit helpers for writers that batch (tests, importers). */
__attribute__((warn_unused_result)) int store_exec(struct store *s, const char *sql);
#endif
