/* level — see level.h. */
#include "stats/level.h"
#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- percentiles ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double stats_percentile_sorted(const double *v, size_t n, double pct)
{
	if (n == 0)
		return NAN;
	double pos = pct / 100.0 * (double)(n - 1);
	size_t lo = (size_t)floor(pos);
	size_t hi = lo + 1 < n ? lo + 1 : lo;
	double f = pos - (double)lo;
	return v[lo] + (v[hi] - v[lo]) * f;
}

/* The order-preserving unsigned image of a double: negative values have all bits
 * flipped, the others only the sign bit; key_double undoes it. */
static uint64_t double_key(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u >> 63 ? ~u : u | (1ULL << 63);
}

static double key_double(uint64_t k)
{
	uint64_t u = k >> 63 ? k & ~(1ULL << 63) : ~k;
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

/* Sorts ascending. A level holds one gap per SSE event (hundreds of thousands), where
 * qsort's comparison calls cost more CPU than the measured run itself: an LSD radix
 * sort (4 passes of 16 bits over the keys) does it in linear time. Small arrays,
 * or no memory for the scratch arrays, take qsort. */
static void sort_doubles(double *v, size_t n)
{
	enum { BITS = 16, PASSES = 4, BUCKETS = 1 << BITS };
	uint64_t *tmp = n >= 4096 ? malloc(2 * n * sizeof *tmp) : NULL;
	size_t *count = tmp ? calloc((size_t)PASSES * BUCKETS, sizeof *count) : NULL;
	if (!count) {
		free(tmp);
		qsort(v, n, sizeof *v, cmp_double);
		return;
	}
	uint64_t *k = tmp + n;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = double_key(v[i]);
		k[i] = x;
		for (int p = 0; p < PASSES; p++)
			count[p * BUCKETS + ((x >> (p * BITS)) & (BUCKETS - 1))]++;
	}
	uint64_t *src = k, *dst = tmp;
	for (int p = 0; p < PASSES; p++) {
		size_t *c = count + (size_t)p * BUCKETS, sum = 0;
		for (int b = 0; b < BUCKETS; b++) {
			size_t t = c[b];
			c[b] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i] >> (p * BITS)) & (BUCKETS - 1)]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	/* an even number of passes ends in k */
	for (size_t i = 0; i < n; i++)
		v[i] = key_double(k[i]);
	free(count);
	free(tmp);
}

double stats_percentile(double *v, size_t n, double pct)
{
	if (n)
		sort_doubles(v, n);
	return stats_percentile_sorted(v, n, pct);
}

/* ---- the figures of a level ---- */

int64_t level_request_start(const struct level_request *r) { return r->t_intended ? r->t_intended : r->t_send; }

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int level_figures_compute(const struct level_request *s, size_t n, const struct level_rules *rules,
			  struct level_figures *L)
{
	memset(L, 0, sizeof *L);
	L->valid = true;
	size_t cap = n ? n : 1, n_gaps = 0;
	for (size_t i = 0; i < n; i++)
		n_gaps += s[i].n_gaps;
	double *ttft = malloc(cap * sizeof *ttft), *rate = malloc(cap * sizeof *rate),
	       *prefill = malloc(cap * sizeof *prefill), *follow = malloc(cap * sizeof *follow);
	double *gaps = malloc((n_gaps ? n_gaps : 1) * sizeof *gaps), *itl = malloc((n_gaps ? n_gaps : 1) * sizeof *itl);
	int64_t *streams = malloc(cap * sizeof *streams);
	int rc = 0;
	if (!ttft || !rate || !prefill || !follow || !gaps || !itl || !streams) {
		L->valid = false;
		snprintf(L->invalid_reason, sizeof L->invalid_reason, "out of memory summarising the level");
		rc = -ENOMEM;
		goto out;
	}
	size_t n_ttft = 0, n_rate = 0, n_prefill = 0, n_follow = 0;
	n_gaps = 0;
	int64_t t0 = INT64_MAX, t1 = 0, tokens = 0, events = 0, tok_events = 0, tpot_n = 0, prompt_sum = 0;
	double tpot_sum = 0;
	struct error_count { const char *cls; int n; } classes[12];
	int n_classes = 0;
	for (size_t i = 0; i < n; i++) {
		const struct level_request *x = &s[i];
		streams[i] = x->stream;
		L->requests++;
		if (x->error) {
			L->errors++;
			int k;
			for (k = 0; k < n_classes; k++)
				if (strcmp(classes[k].cls, x->error) == 0)
					break;
			if (k == n_classes && n_classes < 12)
				classes[n_classes++] = (struct error_count){ x->error, 0 };
			if (k < 12)
				classes[k].n++;
			continue;
		}
		L->ok++;
		int64_t start = level_request_start(x);
		if (start < t0)
			t0 = start;
		if (x->t_done > t1)
			t1 = x->t_done;
		events += x->sse_events;
		tok_events += x->token_events;
		if (x->completion_tokens < 0) {
			L->missing_usage++;
			continue;
		}
		tokens += x->completion_tokens;
		prompt_sum += x->prompt_tokens > 0 ? x->prompt_tokens : 0;
		if (x->cached_tokens > 0)
			L->cached_hits++;
		if (x->requested_tokens > 0 && rules->ignore_eos && x->completion_tokens < x->requested_tokens)
			L->short_streams++;
		if (x->t_first_token) {
			ttft[n_ttft++] = (double)(x->t_first_token - start) / 1e6;
			if (x->followup)
				follow[n_follow++] = (double)(x->t_first_token - start) / 1e6;
			int64_t fresh = x->prompt_tokens - (x->cached_tokens > 0 ? x->cached_tokens : 0);
			if (fresh > 0 && x->t_first_token > start)
				prefill[n_prefill++] = (double)fresh / ((double)(x->t_first_token - start) / 1e9);
		}
		if (x->completion_tokens > 1 && x->t_last > x->t_first_token) {
			double dt = (double)(x->t_last - x->t_first_token);
			rate[n_rate++] = (double)(x->completion_tokens - 1) / (dt / 1e9);
			tpot_sum += dt / 1e6 / (double)(x->completion_tokens - 1);
			tpot_n++;
		}
		double tpe = x->token_events > 0 ? (double)x->completion_tokens / (double)x->token_events : 1.0;
		for (size_t g = 0; g < x->n_gaps; g++) {
			gaps[n_gaps] = x->gaps_ms[g];
			itl[n_gaps] = x->gaps_ms[g] / (tpe > 0 ? tpe : 1.0);
			n_gaps++;
		}
	}
	for (int k = 0; k < n_classes; k++) {
		size_t len = strlen(L->error_classes);
		snprintf(L->error_classes + len, sizeof L->error_classes - len, "%s%s:%d", len ? " " : "", classes[k].cls,
			 classes[k].n);
	}
	qsort(streams, n, sizeof *streams, cmp_i64);
	for (size_t i = 0; i < n; i++)
		L->streams += i == 0 || streams[i] != streams[i - 1];
	L->wall_s = t1 > t0 && t0 != INT64_MAX ? (double)(t1 - t0) / 1e9 : 0;
	L->agg_tok_s = L->wall_s > 0 ? (double)tokens / L->wall_s : 0;
	L->events_per_s = L->wall_s > 0 ? (double)events / L->wall_s : 0;
	L->tokens_per_event = tok_events > 0 ? (double)tokens / (double)tok_events : 0;
	L->sse_events_per_token = tokens > 0 ? (double)events / (double)tokens : NAN;
	/* each distribution is sorted once, then read at its percentiles */
	L->ttft_p50_ms = stats_percentile(ttft, n_ttft, 50);
	L->ttft_p90_ms = stats_percentile_sorted(ttft, n_ttft, 90);
	L->ttft_p99_ms = stats_percentile_sorted(ttft, n_ttft, 99);
	L->followup_ttft_p50_ms = stats_percentile(follow, n_follow, 50);
	double sum = 0;
	for (size_t i = 0; i < n_rate; i++)
		sum += rate[i];
	L->stream_tok_s_mean = n_rate ? sum / (double)n_rate : NAN;
	L->stream_tok_s_p50 = stats_percentile(rate, n_rate, 50);
	L->tpot_ms_mean = tpot_n ? tpot_sum / (double)tpot_n : NAN;
	L->gap_p50_ms = stats_percentile(gaps, n_gaps, 50);
	L->gap_p99_ms = stats_percentile_sorted(gaps, n_gaps, 99);
	L->itl_p50_ms = stats_percentile(itl, n_gaps, 50);
	L->itl_p99_ms = stats_percentile_sorted(itl, n_gaps, 99);
	L->prefill_tok_s = stats_percentile(prefill, n_prefill, 50);
	L->prompt_tokens_mean = L->ok - L->missing_usage > 0 ? prompt_sum / (L->ok - L->missing_usage) : 0;
	if (L->missing_usage) {
		L->valid = false;
		snprintf(L->invalid_reason, sizeof L->invalid_reason,
			 "%lld responses carried no usage: tokens cannot be counted (the server must honour "
			 "stream_options.include_usage)", (long long)L->missing_usage);
	} else if (rules->unique_prompts && L->cached_hits) {
		L->valid = false;
		snprintf(L->invalid_reason, sizeof L->invalid_reason,
			 "%lld unique prompts reported cached_tokens > 0: a prefix cache served part of the prefill",
			 (long long)L->cached_hits);
	} else if (L->ok == 0) {
		L->valid = false;
		snprintf(L->invalid_reason, sizeof L->invalid_reason, "no request succeeded");
	}
out:
	free(ttft);
	free(rate);
	free(prefill);
	free(follow);
	free(gaps);
	free(itl);
	free(streams);
	return rc;
}

/* ---- across repeated runs ---- */

void level_spread_compute(const double *v, size_t n, struct level_spread *o)
{
	double sum = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	o->n = n;
	o->mean = n ? sum / (double)n : NAN;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - o->mean) * (v[i] - o->mean);
	o->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
	double half = n > 1 ? gsl_cdf_tdist_Pinv(0.975, (double)(n - 1)) * o->sd / sqrt((double)n) : NAN;
	o->low = o->mean - half;
	o->high = o->mean + half;
	o->cv = n > 1 && o->mean != 0 ? o->sd / fabs(o->mean) : NAN;
	o->unstable = isfinite(o->cv) && o->cv > LEVEL_CV_UNSTABLE;
}
