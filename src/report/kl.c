/* kl — see kl.h. */
#include "report/kl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "stats/kl.h"
#include "store/store.h"

struct kl_run_fig {
	int64_t id;
	char *reference, *candidate; /* from the run's protocol_json; owned */
	struct kl_figures fig;
};

static char *proto_str(const char *proto, const char *key)
{
	cJSON *j = proto ? cJSON_Parse(proto) : NULL;
	const cJSON *v = cJSON_GetObjectItem(j, key);
	char *s = strdup(cJSON_IsString(v) ? v->valuestring : "?");
	cJSON_Delete(j);
	return s;
}

/* One run's figures from its rows. */
static int run_figures(sqlite3 *db, int64_t id, struct kl_run_fig *r, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct kl_point *p = NULL;
	size_t n = 0, cap = 0;
	int rc = -EIO;
	memset(r, 0, sizeof(*r));
	r->id = id;
	if (sqlite3_prepare_v2(db, "SELECT workload, protocol_json FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		goto db_fail;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		err_set(err, errlen, "run %lld does not exist (sixi-report kl with no run lists the kl runs)", (long long)id);
		rc = -ENOENT;
		goto out;
	}
	const char *wl = (const char *)sqlite3_column_text(st, 0);
	if (!wl || strcmp(wl, "kl") != 0) {
		err_set(err, errlen, "run %lld is a '%s' run, not a sixi-eval kl run", (long long)id, wl ? wl : "?");
		rc = -EINVAL;
		goto out;
	}
	const char *proto = (const char *)sqlite3_column_text(st, 1);
	r->reference = proto_str(proto, "reference");
	r->candidate = proto_str(proto, "candidate");
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT kl, top1_same, logp_ref, logp_cand FROM kl_rows WHERE run = ? ORDER BY position",
			       -1, &st, NULL) != SQLITE_OK)
		goto db_fail;
	sqlite3_bind_int64(st, 1, id);
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct kl_point *np = realloc(p, sizeof(*p) * cap);
			if (!np) {
				err_set(err, errlen, "out of memory");
				rc = -ENOMEM;
				goto out;
			}
			p = np;
		}
		p[n++] = (struct kl_point){ sqlite3_column_double(st, 0), sqlite3_column_int(st, 1),
					    sqlite3_column_double(st, 2), sqlite3_column_double(st, 3) };
	}
	if (s != SQLITE_DONE)
		goto db_fail;
	if (n == 0) {
		err_set(err, errlen, "run %lld has no kl rows (it did not finish)", (long long)id);
		rc = -EINVAL;
		goto out;
	}
	rc = kl_figures_compute(p, n, &r->fig);
	if (rc)
		err_set(err, errlen, "run %lld: its kl rows hold values that are not numbers", (long long)id);
	goto out;
db_fail:
	err_set(err, errlen, "reading run %lld: %s", (long long)id, sqlite3_errmsg(db));
	rc = -EIO;
out:
	sqlite3_finalize(st);
	free(p);
	return rc;
}

static void print_markdown(FILE *out, const struct kl_run_fig *r, size_t n)
{
	fprintf(out, "| run | candidate | reference | positions | mean KL | p99 KL | max KL | top-1 | PPL ratio |\n"
		     "|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		const struct kl_figures *f = &r[i].fig;
		fprintf(out, "| %lld | %s | %s | %lld | %.4g | %.4g | %.4g | %.2f%% | %.5f |\n", (long long)r[i].id,
			r[i].candidate, r[i].reference, (long long)f->n, f->kl_mean, f->kl_p99, f->kl_max, 100 * f->top1,
			f->ppl_ratio);
	}
}

static int print_json(FILE *out, const struct kl_run_fig *r, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct kl_figures *f = &r[i].fig;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "run", (double)r[i].id);
		cJSON_AddStringToObject(o, "candidate", r[i].candidate);
		cJSON_AddStringToObject(o, "reference", r[i].reference);
		const char *names[KL_FIGURES_N];
		double values[KL_FIGURES_N];
		kl_figures_named(f, names, values);
		for (int k = 0; k < KL_FIGURES_N; k++)
			cJSON_AddNumberToObject(o, names[k], values[k]);
		cJSON_AddItemToArray(a, o);
	}
	char *s = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	if (!s)
		return -ENOMEM;
	fprintf(out, "%s\n", s);
	free(s);
	return 0;
}

int report_kl(struct store *s, const int64_t *runs, size_t n_runs, bool json, FILE *out, char *err, size_t errlen)
{
	sqlite3 *db = store_db(s);
	int64_t *ids = NULL;
	struct kl_run_fig *r = NULL;
	size_t n = 0;
	int rc = 0;
	if (n_runs > 0) {
		ids = malloc(sizeof(*ids) * n_runs);
		if (ids)
			memcpy(ids, runs, sizeof(*ids) * n_runs);
		n = n_runs;
	} else {
		sqlite3_stmt *st = NULL;
		size_t cap = 0;
		if (sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE workload = 'kl' ORDER BY id", -1, &st, NULL) ==
		    SQLITE_OK) {
			while (sqlite3_step(st) == SQLITE_ROW) {
				if (n == cap) {
					cap = cap ? cap * 2 : 16;
					int64_t *ni = realloc(ids, sizeof(*ids) * cap);
					if (!ni)
						break;
					ids = ni;
				}
				ids[n++] = sqlite3_column_int64(st, 0);
			}
		}
		sqlite3_finalize(st);
		if (n == 0) {
			err_set(err, errlen, "the database holds no sixi-eval kl runs (run sixi-eval kl first)");
			rc = -ENOENT;
			goto out;
		}
	}
	r = calloc(n ? n : 1, sizeof(*r));
	if (!ids || !r) {
		err_set(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = run_figures(db, ids[i], &r[i], err, errlen);
	if (!rc) {
		if (json)
			rc = print_json(out, r, n);
		else
			print_markdown(out, r, n);
	}
out:
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].reference);
		free(r[i].candidate);
	}
	free(r);
	free(ids);
	return rc;
}
