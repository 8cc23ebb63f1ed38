/* kl — the kl_rows table of sixi-eval kl runs (see store.h). */
#include "store/store.h"
#include "store/internal.h"
#include "core/err.h"
#include <errno.h>
#include <stdio.h>

int store_kl_insert(struct store *s, const struct store_kl_row *w)
{
	sqlite3_stmt *st = store_cached(s, &s->ins_kl,
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
	return store_step_once(st, bad);
}

int store_kl_each(struct store *s, int64_t run, int (*fn)(void *ctx, const struct store_kl_row *r), void *ctx,
		  char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s,
			       "SELECT position, token, kl, top1_same, logp_ref, logp_cand FROM kl_rows WHERE run = ?"
			       " ORDER BY position",
			       &st, "reading kl_rows failed", err, errlen);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	int step = SQLITE_DONE;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_kl_row r = {
			.run_id = run,
			.position = sqlite3_column_int64(st, 0),
			.token = sqlite3_column_int64(st, 1),
			.kl = sqlite3_column_double(st, 2),
			.top1_same = sqlite3_column_int(st, 3) != 0,
			.logp_ref = sqlite3_column_double(st, 4),
			.logp_cand = sqlite3_column_double(st, 5),
		};
		rc = fn(ctx, &r);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store_fail(s, "reading kl_rows failed", err, errlen);
	sqlite3_finalize(st);
	return rc;
}
