/* eval — the eval_rows table: one row per attempt, read back for summaries,
 * reports, resumes and exports (see store.h). The rule of which attempt counts
 * (the final one) is written once, in store_eval_each. */
#include "store/store.h"
#include "store/internal.h"
#include "core/err.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_eval_insert(struct store *s, const struct store_eval_row *w)
{
	sqlite3_stmt *st = store_cached(s, &s->ins_eval,
			       "INSERT INTO eval_rows(run, repeat_index, task_id, attempt, pass, prompt_tokens,"
			       " completion_tokens, seconds, truncated, has_code, loop_pct, early_stop, api_error,"
			       " failure_class, finish_reason, raw_sha256, reasoning_sha256, grader_detail)"
			       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, w->run_id);
	bad |= sqlite3_bind_int64(st, 2, w->repeat);
	bad |= store_bind_text(st, 3, w->task_id);
	bad |= sqlite3_bind_int64(st, 4, w->attempt);
	bad |= sqlite3_bind_int(st, 5, w->pass);
	bad |= store_bind_count(st, 6, w->prompt_tokens);
	bad |= store_bind_count(st, 7, w->completion_tokens);
	bad |= sqlite3_bind_double(st, 8, w->seconds);
	bad |= sqlite3_bind_int(st, 9, w->truncated);
	bad |= sqlite3_bind_int(st, 10, w->has_code);
	bad |= sqlite3_bind_double(st, 11, w->loop_pct);
	bad |= store_bind_opt_text(st, 12, w->early_stop);
	bad |= store_bind_opt_text(st, 13, w->api_error);
	bad |= store_bind_opt_text(st, 14, w->failure_class);
	bad |= store_bind_opt_text(st, 15, w->finish_reason);
	bad |= store_bind_opt_text(st, 16, w->raw_sha);
	bad |= store_bind_opt_text(st, 17, w->reasoning_sha);
	bad |= store_bind_opt_text(st, 18, w->detail_json);
	return store_step_once(st, bad);
}

int store_eval_put(struct store *s, const struct store_eval_row *w, int *outcome)
{
	*outcome = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT pass, failure_class, coalesce(raw_sha256, ''), coalesce(reasoning_sha256, '')"
			       " FROM eval_rows WHERE run = ? AND repeat_index = ? AND task_id = ? AND attempt = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, w->run_id);
	bad |= sqlite3_bind_int64(st, 2, w->repeat);
	bad |= store_bind_text(st, 3, w->task_id);
	bad |= sqlite3_bind_int64(st, 4, w->attempt);
	int rc = bad ? -ENOMEM : 0;
	int step = rc ? SQLITE_DONE : sqlite3_step(st);
	if (step == SQLITE_ROW) {
		/* an empty string is stored as NULL (store_eval_insert), so compare it as "" */
		const char *cls = store_col_text(st, 1), *raw = store_col_text(st, 2), *rsn = store_col_text(st, 3);
		bool same = (sqlite3_column_int(st, 0) != 0) == w->pass &&
			    strcmp(cls, w->failure_class ? w->failure_class : "") == 0 &&
			    strcmp(raw, w->raw_sha ? w->raw_sha : "") == 0 &&
			    strcmp(rsn, w->reasoning_sha ? w->reasoning_sha : "") == 0;
		*outcome = same ? 0 : -1;
	} else if (step != SQLITE_DONE) {
		rc = -EIO;
	}
	sqlite3_finalize(st);
	if (rc || step == SQLITE_ROW)
		return rc;
	rc = store_eval_insert(s, w);
	if (rc == 0)
		*outcome = 1;
	return rc;
}

/* Both orders end in attempt, so the rows of one (repeat, task) arrive together and
 * the last of them is its final attempt: a row is final when the next row has
 * another key (or there is none). store_eval_each holds each row back until it
 * knows. (A window expression in SQL says the same but costs a second sort: 2.6
 * against 1.2 s CPU for tests/perf/perf_report.c's million rows.) */
static const char eval_rows_sql[] =
	"SELECT id, task_id, repeat_index, attempt, pass, completion_tokens, seconds, loop_pct, failure_class,"
	" prompt_tokens, truncated, has_code, early_stop, api_error, finish_reason, raw_sha256,"
	" reasoning_sha256, grader_detail"
	" FROM eval_rows WHERE run = %lld ORDER BY %s";

void store_eval_each_sql(int64_t run, enum store_eval_order order, char *buf, size_t n)
{
	snprintf(buf, n, eval_rows_sql, (long long)run,
		 order == STORE_EVAL_BY_TASK ? "task_id, repeat_index, attempt" : "repeat_index, task_id, attempt");
}

static const char *text_or_null(sqlite3_stmt *st, int col) { return (const char *)sqlite3_column_text(st, col); }

/* A row held back until the next one says whether it is final: its own copy of
 * the strings, in buffers kept from row to row. */
enum { HELD_STRINGS = 9 };
struct held {
	struct store_eval_read r;
	bool set;
	char *buf[HELD_STRINGS];
	size_t cap[HELD_STRINGS];
};

static int hold_str(struct held *h, int i, const char *v, const char **dst)
{
	if (!v) {
		*dst = NULL;
		return 0;
	}
	size_t n = strlen(v) + 1;
	if (n > h->cap[i]) {
		char *b = realloc(h->buf[i], n);
		if (!b)
			return -ENOMEM;
		h->buf[i] = b;
		h->cap[i] = n;
	}
	memcpy(h->buf[i], v, n);
	*dst = h->buf[i];
	return 0;
}

static int hold(struct held *h, const struct store_eval_read *r)
{
	h->r = *r;
	h->set = true;
	const char *src[HELD_STRINGS] = { r->task_id, r->failure_class, r->early_stop, r->api_error, r->finish_reason,
					  r->raw_sha, r->reasoning_sha, r->detail_json, NULL };
	const char **dst[HELD_STRINGS] = { &h->r.task_id, &h->r.failure_class, &h->r.early_stop, &h->r.api_error,
					   &h->r.finish_reason, &h->r.raw_sha, &h->r.reasoning_sha, &h->r.detail_json,
					   NULL };
	for (int i = 0; i < HELD_STRINGS && dst[i]; i++)
		if (hold_str(h, i, src[i], dst[i]) != 0)
			return -ENOMEM;
	return 0;
}

int store_eval_each(struct store *s, int64_t run, enum store_eval_order order,
		    int (*fn)(void *ctx, const struct store_eval_read *r), void *ctx, char *err, size_t errlen)
{
	static const char *const numeric[] = { "completion_tokens", "seconds", "loop_pct" };
	char sql[sizeof eval_rows_sql + 64];
	store_eval_each_sql(run, order, sql, sizeof sql);
	sqlite3_stmt *st;
	int rc = store_prepare(s, sql, &st, "reading eval_rows failed", err, errlen);
	if (rc)
		return rc;
	struct held h = { .set = false };
	int step = SQLITE_DONE;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_eval_read r = {
			.id = sqlite3_column_int64(st, 0),
			.task_id = store_col_text(st, 1),
			.repeat = sqlite3_column_int64(st, 2),
			.attempt = sqlite3_column_int64(st, 3),
			.pass = sqlite3_column_int(st, 4) != 0,
		};
		char where[300];
		snprintf(where, sizeof where, "run %lld, task %s", (long long)run, r.task_id);
		/* columns 5 (completion_tokens) to 7 (loop_pct), in numeric[]'s order */
		rc = store_check_numeric(st, 5, 3, numeric, "eval_rows", where, err, errlen);
		if (rc)
			break;
		r.completion_tokens = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
		r.seconds = sqlite3_column_double(st, 6);
		r.loop_pct = sqlite3_column_double(st, 7);
		r.failure_class = store_col_text(st, 8);
		r.prompt_tokens = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9);
		r.truncated = sqlite3_column_int(st, 10) != 0;
		r.has_code = sqlite3_column_int(st, 11) != 0;
		r.early_stop = text_or_null(st, 12);
		r.api_error = text_or_null(st, 13);
		r.finish_reason = text_or_null(st, 14);
		r.raw_sha = text_or_null(st, 15);
		r.reasoning_sha = text_or_null(st, 16);
		r.detail_json = text_or_null(st, 17);
		if (h.set) {
			h.r.final = h.r.repeat != r.repeat || strcmp(h.r.task_id, r.task_id) != 0;
			rc = fn(ctx, &h.r);
		}
		if (rc == 0 && (rc = hold(&h, &r)) != 0)
			err_set(err, errlen, "out of memory reading eval_rows of run %lld", (long long)run);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store_fail(s, "reading eval_rows failed", err, errlen);
	if (rc == 0 && h.set) {
		h.r.final = true;
		rc = fn(ctx, &h.r);
	}
	for (int i = 0; i < HELD_STRINGS; i++)
		free(h.buf[i]);
	sqlite3_finalize(st);
	return rc;
}

int store_eval_task_progress(struct store *s, int64_t run, int64_t repeat, const char *task_id, int64_t *max_attempt,
			     int64_t *results)
{
	*max_attempt = *results = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT coalesce(max(attempt), 0), coalesce(sum(failure_class != 'api_error'), 0) FROM eval_rows"
			       " WHERE run = ? AND repeat_index = ? AND task_id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, run);
	bad |= sqlite3_bind_int64(st, 2, repeat);
	bad |= sqlite3_bind_text(st, 3, task_id, -1, SQLITE_STATIC);
	int rc = bad ? -ENOMEM : 0;
	if (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		*max_attempt = sqlite3_column_int64(st, 0);
		*results = sqlite3_column_int64(st, 1);
	} else if (rc == 0) {
		rc = -EIO;
	}
	sqlite3_finalize(st);
	return rc;
}

const char *const store_eval_export_cols[] = { "run", "repeat", "task", "attempt", "pass", "failure_class",
					       "prompt_tokens", "tokens", "seconds", "truncated", "has_code", "loop_pct",
					       "early_stop", "api_error", "finish_reason", "raw_sha256", "reasoning_sha256",
					       "grader_detail", "completion", "reasoning", NULL };
#define EXPORT_COLS (sizeof store_eval_export_cols / sizeof store_eval_export_cols[0] - 1)

int store_eval_export_each(struct store *s, int64_t run, int (*fn)(void *ctx, const struct store_cell *cells),
			   void *ctx, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s,
			       "SELECT e.run, e.repeat_index, e.task_id, e.attempt, e.pass, e.failure_class,"
			       " e.prompt_tokens, e.completion_tokens, e.seconds, e.truncated, e.has_code, e.loop_pct,"
			       " e.early_stop, e.api_error, e.finish_reason, e.raw_sha256, e.reasoning_sha256,"
			       " e.grader_detail, c.bytes, r.bytes FROM eval_rows e"
			       " LEFT JOIN raw_text c ON c.sha256 = e.raw_sha256"
			       " LEFT JOIN raw_text r ON r.sha256 = e.reasoning_sha256"
			       " WHERE e.run = ? ORDER BY e.repeat_index, e.task_id, e.attempt",
			       &st, "reading rows failed", err, errlen);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	struct store_cell cells[EXPORT_COLS];
	int step = SQLITE_DONE;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		for (size_t i = 0; i < EXPORT_COLS; i++) {
			int type = sqlite3_column_type(st, (int)i);
			struct store_cell *c = &cells[i];
			*c = (struct store_cell){ .type = type == SQLITE_NULL ? STORE_CELL_NULL
							  : type == SQLITE_INTEGER ? STORE_CELL_INT
							  : type == SQLITE_FLOAT ? STORE_CELL_REAL : STORE_CELL_TEXT };
			if (c->type == STORE_CELL_NULL)
				continue;
			if (c->type == STORE_CELL_INT)
				c->i = sqlite3_column_int64(st, (int)i);
			else if (c->type == STORE_CELL_REAL)
				c->d = sqlite3_column_double(st, (int)i);
			/* text after the number (a number turned into text keeps its value), then its length */
			c->text = (const char *)sqlite3_column_text(st, (int)i);
			c->n = (size_t)sqlite3_column_bytes(st, (int)i);
			if (!c->text && sqlite3_errcode(s->db) == SQLITE_NOMEM) {
				rc = -ENOMEM;
				break;
			}
			if (!c->text)
				c->text = ""; /* an empty blob */
		}
		if (rc == 0)
			rc = fn(ctx, cells);
	}
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory reading rows of run %lld", (long long)run);
	else if (rc == 0 && step != SQLITE_DONE)
		rc = store_fail(s, "reading rows failed", err, errlen);
	sqlite3_finalize(st);
	return rc;
}
