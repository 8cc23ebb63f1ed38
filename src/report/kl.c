/* kl — see kl.h. */
#include "report/kl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "report/db.h"
#include "stats/kl.h"
#include "stats/level.h"
#include "store/store.h"

#define KL_MAX_LEVELS 64

/* One bench run's aggregate tok/s per level (valid levels only). */
struct speed {
	int64_t bench_run;
	size_t n;
	int64_t level[KL_MAX_LEVELS];
	double tok_s[KL_MAX_LEVELS];
};

struct kl_run_fig {
	int64_t id;
	char *reference, *candidate, *text_sha; /* from the run's protocol_json; owned */
	struct kl_figures fig;
	const struct speed *speed;              /* NULL: no bench run paired */
	double cost;                            /* largest shortfall against the fastest file */
	int64_t cost_level;                     /* the level where it is largest */
	const char *verdict;                    /* "winner", "costs too much", "worse", NULL: not judged */
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
	r->text_sha = proto_str(info.protocol_json, "text_sha256");
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


/* ---- speed: a bench run's aggregate tok/s per level ---- */

struct speed_pass {
	struct speed *sp;
	struct level_request *rq;
	size_t n, cap;
	int64_t level;
	bool unique, too_many;
};

static int speed_flush(struct speed_pass *P)
{
	if (P->n == 0)
		return 0;
	struct level_rules rules = { .unique_prompts = P->unique };
	struct level_figures F;
	if (level_figures_compute(P->rq, P->n, &rules, &F) != 0)
		return -ENOMEM;
	P->n = 0;
	if (!F.valid || !(F.agg_tok_s > 0))
		return 0; /* an invalid level is no evidence of speed */
	if (P->sp->n == KL_MAX_LEVELS) {
		P->too_many = true;
		return 0;
	}
	P->sp->level[P->sp->n] = P->level;
	P->sp->tok_s[P->sp->n++] = F.agg_tok_s;
	return 0;
}

static int speed_row(void *ctx, const struct store_bench_read *x)
{
	struct speed_pass *P = ctx;
	if (P->n > 0 && x->level != P->level) {
		int rc = speed_flush(P);
		if (rc)
			return rc;
	}
	P->level = x->level;
	if (P->n == P->cap) {
		size_t cap = P->cap ? P->cap * 2 : 256;
		struct level_request *rq = realloc(P->rq, cap * sizeof *rq);
		if (!rq)
			return -ENOMEM;
		P->rq = rq;
		P->cap = cap;
	}
	P->rq[P->n++] = report_level_request(x);
	return 0;
}

static int speed_read(struct store *s, int64_t bench_run, struct speed *sp, char *err, size_t errlen)
{
	struct store_run_info info;
	memset(sp, 0, sizeof *sp);
	sp->bench_run = bench_run;
	int rc = store_run_get(s, bench_run, &info, err, errlen);
	if (rc == -ENOENT) {
		err_set(err, errlen, "--speed: bench run %lld does not exist", (long long)bench_run);
		return rc;
	}
	if (rc)
		return rc;
	if (!info.kind || strcmp(info.kind, "bench") != 0 || !info.status || strcmp(info.status, "done") != 0) {
		err_set(err, errlen, "--speed: run %lld is %s%s%s, not a finished sixi-bench run (give the bench run of "
			"the server that served the file)", (long long)bench_run,
			info.kind && strcmp(info.kind, "bench") == 0 ? "a bench run with status '" : "a run of kind '",
			info.kind && strcmp(info.kind, "bench") == 0 ? (info.status ? info.status : "?")
								     : (info.kind ? info.kind : "?"), "'");
		store_run_info_finish(&info);
		return -EINVAL;
	}
	struct speed_pass P = { .sp = sp, .unique = report_run_unique_prompts(info.workload, info.protocol_json) };
	store_run_info_finish(&info);
	rc = store_bench_each(s, bench_run, speed_row, &P, err, errlen);
	if (rc == 0)
		rc = speed_flush(&P);
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory");
	if (rc == 0 && P.too_many) {
		err_set(err, errlen, "--speed: bench run %lld has more than %d levels", (long long)bench_run,
			KL_MAX_LEVELS);
		rc = -EINVAL;
	}
	if (rc == 0 && sp->n == 0) {
		err_set(err, errlen, "--speed: bench run %lld has no valid level (sixi-report bench %lld says why)",
			(long long)bench_run, (long long)bench_run);
		rc = -EINVAL;
	}
	free(P.rq);
	return rc;
}

static double speed_at(const struct speed *sp, int64_t level)
{
	for (size_t i = 0; i < sp->n; i++)
		if (sp->level[i] == level)
			return sp->tok_s[i];
	return NAN;
}

/* ---- the rule ---- */

struct levels {
	size_t n;
	int64_t level[KL_MAX_LEVELS];
};

/* The levels every judged run's bench run measured validly; each run's cost; the verdicts. */
static int apply_rule(struct kl_run_fig *r, size_t n, double max_cost, struct levels *L, char *err, size_t errlen)
{
	const struct kl_run_fig *first = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!first) {
			first = &r[i];
			continue;
		}
		if (strcmp(r[i].reference, first->reference) != 0 || strcmp(r[i].text_sha, first->text_sha) != 0) {
			err_set(err, errlen, "kl runs %lld and %lld measured against other %s (%s and %s): their KL "
				"divergences are not comparable, so the rule cannot choose between them",
				(long long)first->id, (long long)r[i].id,
				strcmp(r[i].reference, first->reference) != 0 ? "references" : "texts",
				strcmp(r[i].reference, first->reference) != 0 ? first->reference : first->text_sha,
				strcmp(r[i].reference, first->reference) != 0 ? r[i].reference : r[i].text_sha);
			return -EINVAL;
		}
	}
	L->n = 0;
	for (size_t k = 0; n > 0 && k < r[0].speed->n; k++) {
		bool everywhere = true;
		for (size_t i = 1; i < n; i++)
			everywhere &= !isnan(speed_at(r[i].speed, r[0].speed->level[k]));
		if (everywhere)
			L->level[L->n++] = r[0].speed->level[k];
	}
	if (L->n == 0) {
		err_set(err, errlen, "the bench runs given with --speed share no valid level (run them at the same "
			"concurrencies or rates)");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		r[i].cost = 0;
		r[i].cost_level = L->level[0];
		for (size_t k = 0; k < L->n; k++) {
			double best = 0;
			for (size_t j = 0; j < n; j++)
				best = fmax(best, speed_at(r[j].speed, L->level[k]));
			double c = 1 - speed_at(r[i].speed, L->level[k]) / best;
			if (c > r[i].cost) {
				r[i].cost = c;
				r[i].cost_level = L->level[k];
			}
		}
	}
	struct kl_run_fig *win = NULL;
	for (size_t i = 0; i < n; i++)
		if (r[i].cost < max_cost &&
		    (!win || r[i].fig.kl_mean < win->fig.kl_mean ||
		     (r[i].fig.kl_mean == win->fig.kl_mean && r[i].cost < win->cost)))
			win = &r[i];
	/* the fastest file costs 0, so there is always a winner */
	for (size_t i = 0; i < n; i++)
		r[i].verdict = &r[i] == win ? "winner" : r[i].cost >= max_cost ? "costs too much" : "worse";
	return 0;
}

/* One line per judged file: why it won or lost. */
static void explain(FILE *out, const struct kl_run_fig *r, size_t n, double max_cost, const char *lead)
{
	const struct kl_run_fig *win = NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].verdict, "winner") == 0)
			win = &r[i];
	fprintf(out, "%sRule: a file closer to the reference wins when it costs less than %.3g%% of the speed.\n", lead,
		100 * max_cost);
	for (size_t i = 0; i < n; i++) {
		const struct kl_run_fig *f = &r[i];
		fprintf(out, "%s- run %lld (%s): ", lead, (long long)f->id, f->candidate);
		if (f == win)
			fprintf(out, "wins: the lowest mean KL (%.4g) of the files that cost less than %.3g%% (it costs "
				"%.2f%%, at level %lld)\n", f->fig.kl_mean, 100 * max_cost, 100 * f->cost,
				(long long)f->cost_level);
		else if (strcmp(f->verdict, "costs too much") == 0 && f->fig.kl_mean < win->fig.kl_mean)
			fprintf(out, "loses: closer to the reference (mean KL %.4g against %.4g) but %.2f%% slower than "
				"the fastest file at level %lld\n", f->fig.kl_mean, win->fig.kl_mean, 100 * f->cost,
				(long long)f->cost_level);
		else if (strcmp(f->verdict, "costs too much") == 0)
			fprintf(out, "loses: mean KL %.4g is no better than %.4g, and it is %.2f%% slower at level %lld\n",
				f->fig.kl_mean, win->fig.kl_mean, 100 * f->cost, (long long)f->cost_level);
		else
			fprintf(out, "loses: mean KL %.4g against the winner's %.4g (it costs %.2f%%)\n", f->fig.kl_mean,
				win->fig.kl_mean, 100 * f->cost);
	}
}

static void print_markdown(FILE *out, const struct kl_run_fig *r, size_t n, const struct levels *L,
			   double max_cost)
{
	fprintf(out, "| run | candidate | reference | positions | mean KL | p99 KL | max KL | top-1 | PPL ratio |");
	for (size_t k = 0; L && k < L->n; k++)
		fprintf(out, " tok/s at %lld |", (long long)L->level[k]);
	fprintf(out, L ? " bench run | speed cost | rule |\n" : "\n");
	fprintf(out, "|---|---|---|---|---|---|---|---|---|");
	for (size_t k = 0; L && k < L->n + 3; k++)
		fprintf(out, "---|");
	fprintf(out, "\n");
	for (size_t i = 0; i < n; i++) {
		const struct kl_figures *f = &r[i].fig;
		fprintf(out, "| %lld | %s | %s | %lld | %.4g | %.4g | %.4g | %.2f%% | %.5f |", (long long)r[i].id,
			r[i].candidate, r[i].reference, (long long)f->n, f->kl_mean, f->kl_p99, f->kl_max, 100 * f->top1,
			f->ppl_ratio);
		for (size_t k = 0; L && k < L->n; k++)
			fprintf(out, " %.1f |", speed_at(r[i].speed, L->level[k]));
		if (L)
			fprintf(out, " %lld | %.2f%% | %s |", (long long)r[i].speed->bench_run, 100 * r[i].cost,
				r[i].verdict);
		fprintf(out, "\n");
	}
	if (L) {
		fprintf(out, "\n");
		explain(out, r, n, max_cost, "");
	}
}

static int print_json(FILE *out, const struct kl_run_fig *r, size_t n, const struct levels *L, double max_cost)
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
		if (L) {
			cJSON_AddNumberToObject(o, "bench_run", (double)r[i].speed->bench_run);
			cJSON *sp = cJSON_AddObjectToObject(o, "tok_s");
			for (size_t k = 0; k < L->n; k++) {
				char key[32];
				snprintf(key, sizeof key, "%lld", (long long)L->level[k]);
				cJSON_AddNumberToObject(sp, key, speed_at(r[i].speed, L->level[k]));
			}
			cJSON_AddNumberToObject(o, "speed_cost", r[i].cost);
			cJSON_AddNumberToObject(o, "speed_cost_level", (double)r[i].cost_level);
			cJSON_AddNumberToObject(o, "max_cost", max_cost);
			cJSON_AddStringToObject(o, "rule", r[i].verdict);
		}
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

int report_kl(struct store *s, const struct report_kl_opts *o, FILE *out, char *err, size_t errlen)
{
	int64_t *ids = NULL;
	struct kl_run_fig *r = NULL;
	struct speed *sp = NULL;
	size_t n = 0;
	int rc = 0;
	double max_cost = o->max_cost > 0 ? o->max_cost : 0.10;
	if (o->n_runs > 0 || o->n_speed > 0) {
		/* the runs named, else those --speed pairs */
		n = o->n_runs > 0 ? o->n_runs : o->n_speed;
		ids = malloc(sizeof(*ids) * n);
		for (size_t i = 0; ids && i < n; i++)
			ids[i] = o->n_runs > 0 ? o->runs[i] : o->speed[i].kl_run;
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
	sp = calloc(o->n_speed ? o->n_speed : 1, sizeof(*sp));
	if (!ids || !r || !sp) {
		err_set(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = run_figures(s, ids[i], &r[i], err, errlen);
	for (size_t k = 0; k < o->n_speed && !rc; k++) {
		size_t i = 0;
		while (i < n && r[i].id != o->speed[k].kl_run)
			i++;
		if (i == n) {
			err_set(err, errlen, "--speed %lld=%lld: kl run %lld is not among the runs shown",
				(long long)o->speed[k].kl_run, (long long)o->speed[k].bench_run, (long long)o->speed[k].kl_run);
			rc = -EINVAL;
		} else if (r[i].speed) {
			err_set(err, errlen, "--speed: kl run %lld is paired twice", (long long)r[i].id);
			rc = -EINVAL;
		} else if ((rc = speed_read(s, o->speed[k].bench_run, &sp[k], err, errlen)) == 0) {
			r[i].speed = &sp[k];
		}
	}
	for (size_t i = 0; i < n && !rc && o->n_speed > 0; i++)
		if (!r[i].speed) {
			err_set(err, errlen, "kl run %lld has no --speed: pair every run shown with the bench run of its "
				"file (--speed %lld=BENCH_RUN), or show only the paired runs", (long long)r[i].id,
				(long long)r[i].id);
			rc = -EINVAL;
		}
	struct levels L;
	if (!rc && o->n_speed > 0)
		rc = apply_rule(r, n, max_cost, &L, err, errlen);
	if (!rc) {
		const struct levels *lp = o->n_speed > 0 ? &L : NULL;
		if (o->json)
			rc = print_json(out, r, n, lp, max_cost);
		else
			print_markdown(out, r, n, lp, max_cost);
	}
out:
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].reference);
		free(r[i].candidate);
		free(r[i].text_sha);
	}
	free(sp);
	free(r);
	free(ids);
	return rc;
}
