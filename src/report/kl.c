/* kl — see kl.h. */
#include "report/kl.h"

#include <cjson/cJSON.h>
#include <errno.h>
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

struct points {
	struct kl_point *p;
	size_t n, cap;
};

static int point_add(void *ctx, const struct store_kl_row *row)
{
	struct points *pt = ctx;
	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 256;
		struct kl_point *np = realloc(pt->p, sizeof(*np) * cap);
		if (!np)
			return -ENOMEM;
		pt->p = np;
		pt->cap = cap;
	}
	pt->p[pt->n++] = (struct kl_point){ row->kl, row->top1_same, row->logp_ref, row->logp_cand };
	return 0;
}

/* One run's figures from its rows. */
static int run_figures(struct store *s, int64_t id, struct kl_run_fig *r, char *err, size_t errlen)
{
	struct points pt = { 0 };
	struct store_run_info info;
	memset(r, 0, sizeof(*r));
	r->id = id;
	int rc = store_run_get(s, id, &info, err, errlen);
	if (rc == -ENOENT) {
		err_set(err, errlen, "run %lld does not exist (sixi-report kl with no run lists the kl runs)", (long long)id);
		return rc;
	}
	if (rc)
		return rc;
	if (!info.workload || strcmp(info.workload, "kl") != 0) {
		err_set(err, errlen, "run %lld is a '%s' run, not a sixi-eval kl run", (long long)id,
			info.workload ? info.workload : "?");
		store_run_info_finish(&info);
		return -EINVAL;
	}
	r->reference = proto_str(info.protocol_json, "reference");
	r->candidate = proto_str(info.protocol_json, "candidate");
	store_run_info_finish(&info);
	rc = store_kl_each(s, id, point_add, &pt, err, errlen);
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory");
	if (rc == 0 && pt.n == 0) {
		err_set(err, errlen, "run %lld has no kl rows (it did not finish)", (long long)id);
		rc = -EINVAL;
	}
	if (rc == 0) {
		rc = kl_figures_compute(pt.p, pt.n, &r->fig);
		if (rc)
			err_set(err, errlen, "run %lld: its kl rows hold values that are not numbers", (long long)id);
	}
	free(pt.p);
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
		rc = store_run_list(s, NULL, "kl", false, 0, &ids, &n, err, errlen);
		if (rc)
			goto out;
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
		rc = run_figures(s, ids[i], &r[i], err, errlen);
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
