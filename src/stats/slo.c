/* slo — see slo.h. */
#include "stats/slo.h"
#include "core/err.h"
#include "stats/stats.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = { "ttft", "tpot", "itl", "e2e" };

static int bad(char *err, size_t errlen, const char *term, int pos, const char *why)
{
	err_set(err, errlen,
		 "--slo: term %d '%s' %s; expected NAME=VALUE with NAME one of ttft, tpot, itl, e2e (or NAME_pP, "
		 "e.g. ttft_p99, for a percentile over the level) and VALUE a number with a unit: us, ms or s "
		 "(e.g. --slo ttft=500ms,itl=50ms,e2e=10s)", pos, term, why);
	return -EINVAL;
}

int slo_parse(const char *s, struct slo *out, char *err, size_t errlen)
{
	struct slo v;
	memset(&v, 0, sizeof v);
	snprintf(v.text, sizeof v.text, "%s", s);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	int pos = 0;
	char *save = NULL;
	if (!*s)
		return bad(err, errlen, "", 1, "is empty");
	for (char *term = strtok_r(buf, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		pos++;
		if (v.n == SLO_MAX_TERMS)
			return bad(err, errlen, term, pos, "is one term too many (at most 8)");
		char *eq = strchr(term, '=');
		if (!eq)
			return bad(err, errlen, term, pos, "has no '='");
		*eq = 0;
		struct slo_term t = { 0, 0, 0 };
		char *us = strstr(term, "_p");
		size_t nlen = us ? (size_t)(us - term) : strlen(term);
		int m = -1;
		for (int i = 0; i < 4; i++)
			if (strlen(names[i]) == nlen && strncmp(term, names[i], nlen) == 0)
				m = i;
		if (m < 0) {
			*eq = '=';
			return bad(err, errlen, term, pos, "names no metric");
		}
		t.metric = (enum slo_metric)m;
		if (us) {
			char *end;
			t.pct = strtod(us + 2, &end);
			if (end == us + 2 || *end || !(t.pct > 0 && t.pct <= 100)) {
				*eq = '=';
				return bad(err, errlen, term, pos, "has a percentile that is not in (0, 100]");
			}
		}
		char *val = eq + 1, *end;
		double x = strtod(val, &end);
		*eq = '=';
		if (end == val || !isfinite(x) || x <= 0)
			return bad(err, errlen, term, pos, "has no positive number after '='");
		if (strcmp(end, "ms") == 0)
			t.limit_ms = x;
		else if (strcmp(end, "s") == 0)
			t.limit_ms = x * 1000;
		else if (strcmp(end, "us") == 0)
			t.limit_ms = x / 1000;
		else if (!*end)
			return bad(err, errlen, term, pos, "has no unit");
		else
			return bad(err, errlen, term, pos, "has a unit that is not us, ms or s");
		v.t[v.n++] = t;
	}
	*out = v;
	return 0;
}

void slo_request_from(const struct level_request *x, struct slo_request *r)
{
	r->ok = !x->error && x->t_first_token > 0;
	r->ttft_ms = r->tpot_ms = r->itl_max_ms = r->e2e_ms = NAN;
	if (!r->ok)
		return;
	int64_t start = x->t_intended ? x->t_intended : x->t_send;
	r->ttft_ms = (double)(x->t_first_token - start) / 1e6;
	if (x->t_done)
		r->e2e_ms = (double)(x->t_done - start) / 1e6;
	if (x->completion_tokens > 1 && x->t_last > x->t_first_token)
		r->tpot_ms = (double)(x->t_last - x->t_first_token) / 1e6 / (double)(x->completion_tokens - 1);
	double tpe = x->token_events > 0 && x->completion_tokens > 0
			     ? (double)x->completion_tokens / (double)x->token_events : 1.0;
	if (tpe < 1)
		tpe = 1;
	for (size_t g = 0; g < x->n_gaps; g++) {
		double v = x->gaps_ms[g] / tpe;
		if (isnan(r->itl_max_ms) || v > r->itl_max_ms)
			r->itl_max_ms = v;
	}
}

static double figure(const struct slo_request *r, enum slo_metric m)
{
	switch (m) {
	case SLO_TTFT: return r->ttft_ms;
	case SLO_TPOT: return r->tpot_ms;
	case SLO_ITL: return r->itl_max_ms;
	default: return r->e2e_ms;
	}
}

bool slo_request_meets(const struct slo *slo, const struct slo_request *r)
{
	if (!r->ok)
		return false;
	for (size_t i = 0; i < slo->n; i++) {
		const struct slo_term *t = &slo->t[i];
		if (t->pct > 0)
			continue;
		double v = figure(r, t->metric);
		if (isnan(v)) {
			/* a one-token reply has no gap: tpot and itl do not apply; a missing TTFT or e2e fails */
			if (t->metric == SLO_TTFT || t->metric == SLO_E2E)
				return false;
			continue;
		}
		if (v > t->limit_ms)
			return false;
	}
	return true;
}

int slo_level_eval(const struct slo *slo, const struct slo_request *r, size_t n, double wall_s, struct slo_level *L)
{
	memset(L, 0, sizeof *L);
	if (n == 0)
		return -EINVAL;
	L->scheduled = (int64_t)n;
	for (size_t i = 0; i < n; i++)
		L->good += slo_request_meets(slo, &r[i]);
	L->attainment = (double)L->good / (double)n;
	if (stats_wilson(L->good, L->scheduled, 0.95, &L->low, &L->high) != 0)
		return -EINVAL;
	L->goodput_rps = wall_s > 0 ? (double)L->good / wall_s : 0;
	L->level_terms_met = true;
	double *v = malloc(n * sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < slo->n; i++) {
		const struct slo_term *t = &slo->t[i];
		if (t->pct <= 0)
			continue;
		size_t m = 0;
		for (size_t j = 0; j < n; j++) {
			double x = figure(&r[j], t->metric);
			if (r[j].ok && !isnan(x))
				v[m++] = x;
		}
		double p = stats_percentile(v, m, t->pct);
		if (!(p <= t->limit_ms)) {
			L->level_terms_met = false;
			size_t len = strlen(L->failed);
			snprintf(L->failed + len, sizeof L->failed - len, "%s%s_p%g %.1f ms > %.1f ms", len ? ", " : "",
				 names[t->metric], t->pct, p, t->limit_ms);
		}
	}
	free(v);
	return 0;
}
