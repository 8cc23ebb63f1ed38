/* bench — the bench_requests table: one row per request written the moment it
 * is known, and the measured rows read back for figures (see store.h). */
#include "store/store.h"
#include "store/internal.h"
#include "core/err.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

int store_bench_insert(struct store *s, const struct store_bench_row *r)
{
	/* the next id of the run, read under the row's own write lock: one seek to
	 * the end of the run's key range, right where the row goes */
	sqlite3_stmt *st = store_cached(s, &s->ins_bench,
			       "INSERT INTO bench_requests(id, run, phase, level, stream, seq, prompt_tokens, cached_tokens,"
			       " completion_tokens, requested_tokens, sse_events, content_events, t_intended, t_send,"
			       " t_first_byte, t_first_token, t_last, t_done, error, error_detail, http_status,"
			       " finish_reason, fingerprint_hash, tag, itl_json)"
			       " VALUES ((SELECT coalesce(max(id), 0) + 1 FROM bench_requests WHERE run = ?1),"
			       " ?1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	if (!st)
		return -EIO;
	int bad = sqlite3_bind_int64(st, 1, r->run_id);
	bad |= store_bind_text(st, 2, r->phase ? r->phase : "measure");
	bad |= sqlite3_bind_int64(st, 3, r->level);
	bad |= sqlite3_bind_int64(st, 4, r->stream);
	bad |= sqlite3_bind_int64(st, 5, r->seq);
	bad |= store_bind_count(st, 6, r->prompt_tokens);
	bad |= store_bind_count(st, 7, r->cached_tokens);
	bad |= store_bind_count(st, 8, r->completion_tokens);
	bad |= sqlite3_bind_int64(st, 9, r->requested_tokens);
	bad |= sqlite3_bind_int64(st, 10, r->sse_events);
	bad |= sqlite3_bind_int64(st, 11, r->content_events);
	bad |= store_bind_time(st, 12, r->t_intended);
	bad |= store_bind_time(st, 13, r->t_send);
	bad |= store_bind_time(st, 14, r->t_first_byte);
	bad |= store_bind_time(st, 15, r->t_first_token);
	bad |= store_bind_time(st, 16, r->t_last);
	bad |= store_bind_time(st, 17, r->t_done);
	bad |= store_bind_text(st, 18, r->error);
	bad |= store_bind_text(st, 19, r->error_detail);
	if (r->http_status)
		bad |= sqlite3_bind_int(st, 20, r->http_status);
	bad |= store_bind_text(st, 21, r->finish_reason);
	bad |= store_bind_text(st, 22, r->fingerprint_hash);
	bad |= store_bind_text(st, 23, r->tag);
	bad |= store_bind_text(st, 24, r->itl_json);
	return store_step_once(st, bad);
}


/* The columns store_bench_each reads, in struct store_bench_read's order. */
static const char bench_rows_sql[] =
	"SELECT id, level, stream, seq, prompt_tokens, cached_tokens, completion_tokens, requested_tokens,"
	" sse_events, content_events, t_intended, t_send, t_first_token, t_last, t_done, error,"
	" coalesce(fingerprint_hash, ''), coalesce(tag, ''), itl_json, error_detail"
	" FROM bench_requests WHERE run = %lld AND phase = 'measure'"
	" ORDER BY level, stream, seq";

void store_bench_each_sql(int64_t run, char *buf, size_t n) { snprintf(buf, n, bench_rows_sql, (long long)run); }

static int64_t count_or_unknown(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, col);
}

int store_bench_each(struct store *s, int64_t run, int (*fn)(void *ctx, const struct store_bench_read *r), void *ctx,
		     char *err, size_t errlen)
{
	static const char *const numeric[] = { "prompt_tokens", "cached_tokens", "completion_tokens",
					       "requested_tokens", "sse_events", "content_events", "t_intended",
					       "t_send", "t_first_token", "t_last", "t_done" };
	char sql[sizeof bench_rows_sql + 32];
	store_bench_each_sql(run, sql, sizeof sql);
	sqlite3_stmt *st;
	int rc = store_prepare(s, sql, &st, "reading bench_requests failed", err, errlen);
	if (rc)
		return rc;
	int step = SQLITE_DONE;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_bench_read r = {
			.id = sqlite3_column_int64(st, 0),
			.level = sqlite3_column_int64(st, 1),
			.stream = sqlite3_column_int64(st, 2),
			.seq = sqlite3_column_int64(st, 3),
		};
		char where[96];
		snprintf(where, sizeof where, "run %lld, level %lld", (long long)run, (long long)r.level);
		/* columns 4 (prompt_tokens) to 14 (t_done), in numeric[]'s order */
		rc = store_check_numeric(st, 4, 11, numeric, "bench_requests", where, err, errlen);
		if (rc)
			break;
		r.prompt_tokens = count_or_unknown(st, 4);
		r.cached_tokens = count_or_unknown(st, 5);
		r.completion_tokens = count_or_unknown(st, 6);
		r.requested_tokens = sqlite3_column_int64(st, 7);
		r.sse_events = sqlite3_column_int64(st, 8);
		r.content_events = sqlite3_column_int64(st, 9);
		r.t_intended = sqlite3_column_int64(st, 10);
		r.t_send = sqlite3_column_int64(st, 11);
		r.t_first_token = sqlite3_column_int64(st, 12);
		r.t_last = sqlite3_column_int64(st, 13);
		r.t_done = sqlite3_column_int64(st, 14);
		r.error = (const char *)sqlite3_column_text(st, 15);
		r.fingerprint_hash = store_col_text(st, 16);
		r.tag = store_col_text(st, 17);
		r.itl_json = (const char *)sqlite3_column_text(st, 18);
		r.error_detail = (const char *)sqlite3_column_text(st, 19);
		rc = fn(ctx, &r);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store_fail(s, "reading bench_requests failed", err, errlen);
	sqlite3_finalize(st);
	return rc;
}
