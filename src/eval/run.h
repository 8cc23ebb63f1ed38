/* run — evaluation runs against an OpenAI-compatible endpoint, and what is
 * computed from their stored rows.
 *
 * A run is one condition of a protocol with its configuration frozen: the
 * canonical protocol, the datasets' sha256, the tasks preflight left out, the
 * server's fingerprint and the template hash are stored (runs.protocol_json,
 * hashed by the store) before the first request. Then: readiness by a real
 * generation, two warm-ups (stored in bench_requests as phase ready/warmup,
 * excluded from results), the parser-bypass probe (chat conditions), and the
 * tasks in a deterministic shuffled order per repeat, `concurrency` at a time.
 * Each attempt's raw text (content and reasoning apart) is stored before it is
 * graded, then one eval_rows row is written in its own transaction. An API
 * error (connect, timeout, stall, reset, 5xx, malformed stream) is a row with
 * failure_class api_error, followed by a health probe and a fresh attempt, up to
 * `attempts`; it is never scored as a wrong answer.
 *
 * Resume completes only the (repeat, task) pairs without a final row, with the
 * stored configuration; a different protocol, dataset or server is refused.
 * Arguments are borrowed. */
#ifndef SIXI_EVAL_RUN_H
#define SIXI_EVAL_RUN_H
#include "eval/protocol.h"
#include "eval/shard.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct eval_run_opts {
	const char *db_path;      /* NULL: results/sixi.db */
	FILE *out;                /* progress, audit and summary; NULL: quiet */
	bool skip_preflight;      /* do not check references before the run */
	double ready_timeout_s;   /* how long to wait for the first real generation (default 300) */
	const char *harness_dir;  /* NULL: the grader's default */
	bool json;                /* the final summary as JSON on json_out (out then gets the rest) */
	FILE *json_out;
	double detect_gap;        /* > 0: the pass-rate difference (0..1) the run is meant to detect; a
				     plan too small for 80 % power is refused (power plan, stored with the run) */
	double gap_baseline;      /* the pass rate the gap is measured from (0: 0.5, the worst case) */
	bool allow_underpowered;  /* warn instead of refusing */
	struct eval_shard shard;  /* n > 1: only this slice of the (task, repeat) pairs (eval/shard.h); not
				     part of the configuration hash */
};

/* The power plan of a run: attempts needed per condition to detect gap around
 * baseline with 80 % power at the protocol's alpha (and sidedness), against the
 * planned tasks x repeats. Returns 0 and fills the fields, or -EINVAL with a
 * message when the gap or baseline is out of range. */
struct eval_power_plan {
	double gap, baseline, alpha, power;
	bool two_sided;
	int64_t needed, planned;
	bool underpowered;
};
int eval_power_plan(const struct eval_protocol *p, size_t n_tasks, double gap, double baseline,
		    struct eval_power_plan *out, char *err, size_t errlen);

/* Runs condition cond (index) of p as a new run; *run_id is set as soon as the run
 * is stored. 0, or -errno with a message in err. */
int eval_run_new(const struct eval_protocol *p, int cond, const struct eval_run_opts *o, int64_t *run_id, char *err,
		 size_t errlen);
/* Completes a run. protocol_path, when given, must match the frozen configuration. */
int eval_run_resume(int64_t run_id, const char *protocol_path, const struct eval_run_opts *o, char *err,
		    size_t errlen);

/* Computes the run summary from its rows (pass rate, truncation %, loop %, api
 * errors, tokens per attempt and per solved task, seconds, pass@k, majority vote,
 * per-repeat pass rates), stores it in runs.summary_json and prints it (JSON when
 * json). */
int eval_run_summary(const char *db_path, int64_t run_id, bool json, FILE *out, char *err, size_t errlen);
/* One line per attempt with the raw text. format: "csv" or "jsonl". */
int eval_run_export(const char *db_path, int64_t run_id, const char *format, FILE *out, char *err, size_t errlen);
/* Cuts stored completions at each budget (tokens) and regrades them: how much of
 * the score is truncation. */
int eval_run_regrade(const char *db_path, int64_t run_id, const int64_t *budgets, size_t n_budgets, bool json,
		     FILE *out, const char *harness_dir, char *err, size_t errlen);
#endif
