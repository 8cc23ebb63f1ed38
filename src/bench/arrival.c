/* arrival — see arrival.h. Trace files are read line by line, so a message can
 * name the line; a record is a complete line (no JSON spanning lines). */
#include "bench/arrival.h"
#include "core/err.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing the flags ---- */

int arrival_parse(const char *s, struct arrival *out, char *err, size_t errlen)
{
	struct arrival a = *out;
	char *end;
	if (strcmp(s, "poisson") == 0) {
		a.kind = ARRIVAL_POISSON;
		a.burstiness = 1;
	} else if (strcmp(s, "constant") == 0) {
		a.kind = ARRIVAL_CONSTANT;
	} else if (strncmp(s, "gamma:", 6) == 0 && (a.burstiness = strtod(s + 6, &end), end != s + 6 && *end == 0) &&
		   a.burstiness > 0 && isfinite(a.burstiness)) {
		a.kind = ARRIVAL_GAMMA;
	} else {
		err_set(err, errlen,
			 "--arrival: '%s' is not an arrival process; use poisson, constant or gamma:B (B > 0 the "
			 "burstiness: below 1 burstier than Poisson)", s);
		return -EINVAL;
	}
	*out = a;
	return 0;
}

int arrival_parse_ramp(const char *s, struct arrival *out, char *err, size_t errlen)
{
	struct arrival a = *out;
	const char *p = NULL;
	if (strncmp(s, "linear:", 7) == 0)
		a.ramp = RAMP_LINEAR, p = s + 7;
	else if (strncmp(s, "exp:", 4) == 0)
		a.ramp = RAMP_EXP, p = s + 4;
	char *end = NULL;
	bool ok = p != NULL;
	if (ok) {
		a.ramp_from = strtod(p, &end);
		ok = end != p && *end == ',' && a.ramp_from > 0 && isfinite(a.ramp_from);
	}
	if (ok) {
		p = end + 1;
		a.ramp_s = strtod(p, &end);
		ok = end != p && *end == 0 && a.ramp_s > 0 && isfinite(a.ramp_s);
	}
	if (!ok) {
		err_set(err, errlen,
			 "--ramp: '%s' is not a ramp; use linear:FROM,SECONDS or exp:FROM,SECONDS (FROM > 0 requests/s "
			 "at the start, SECONDS > 0 to reach --rps)", s);
		return -EINVAL;
	}
	*out = a;
	return 0;
}

/* ---- schedules ---- */

static double rate_at(const struct arrival *a, double rate, double t)
{
	if (a->ramp == RAMP_NONE || t >= a->ramp_s)
		return rate;
	double f = t / a->ramp_s;
	if (a->ramp == RAMP_LINEAR)
		return a->ramp_from + (rate - a->ramp_from) * f;
	return a->ramp_from * pow(rate / a->ramp_from, f);
}

int arrival_schedule(const struct arrival *a, double rate, double duration_s, size_t max_n, uint64_t seed, double **t,
		     size_t *n)
{
	size_t cap = 64;
	double *v = malloc(cap * sizeof *v);
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	int rc = 0;
	*n = 0;
	if (!v || !r) {
		rc = -ENOMEM;
		goto out;
	}
	gsl_rng_set(r, (unsigned long)(seed ^ (seed >> 32)));
	double now = 0;
	for (;;) {
		double lam = rate_at(a, rate, now);
		double gap;
		switch (a->kind) {
		case ARRIVAL_CONSTANT: gap = 1.0 / lam; break;
		case ARRIVAL_GAMMA: gap = gsl_ran_gamma(r, a->burstiness, 1.0 / (lam * a->burstiness)); break;
		default: gap = gsl_ran_exponential(r, 1.0 / lam); break;
		}
		/* the first request is due at t = 0 for a constant rate, after one gap otherwise */
		if (*n > 0 || a->kind != ARRIVAL_CONSTANT)
			now += gap;
		if (now >= duration_s || *n >= max_n)
			break;
		if (*n == cap) {
			double *p = realloc(v, 2 * cap * sizeof *v);
			if (!p) {
				rc = -ENOMEM;
				goto out;
			}
			v = p;
			cap *= 2;
		}
		v[(*n)++] = now;
	}
out:
	gsl_rng_free(r);
	if (rc) {
		free(v);
		v = NULL;
		*n = 0;
	}
	*t = v;
	return rc;
}

/* ---- traces ---- */

void arrival_trace_finish(struct arrival_trace *t)
{
	if (!t)
		return;
	free(t->t_s);
	free(t->input_tokens);
	free(t->output_tokens);
	memset(t, 0, sizeof *t);
}

static int trace_push(struct arrival_trace *t, size_t *cap, double ts, int64_t in, int64_t outlen)
{
	if (t->n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		double *a = realloc(t->t_s, c * sizeof *a);
		if (a)
			t->t_s = a;
		int64_t *b = realloc(t->input_tokens, c * sizeof *b);
		if (b)
			t->input_tokens = b;
		int64_t *d = realloc(t->output_tokens, c * sizeof *d);
		if (d)
			t->output_tokens = d;
		if (!a || !b || !d)
			return -ENOMEM;
		*cap = c;
	}
	t->t_s[t->n] = ts;
	t->input_tokens[t->n] = in;
	t->output_tokens[t->n] = outlen;
	t->n++;
	return 0;
}

static int64_t json_len(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 1 ? (int64_t)v->valuedouble : -1;
}

/* A CSV field by index (no quoting: BurstGPT has none). */
static bool csv_field(const char *line, int idx, char *out, size_t n)
{
	const char *p = line;
	for (int i = 0; i < idx; i++) {
		p = strchr(p, ',');
		if (!p)
			return false;
		p++;
	}
	size_t len = strcspn(p, ",\r\n");
	if (len >= n)
		return false;
	memcpy(out, p, len);
	out[len] = 0;
	return true;
}

static int csv_column(const char *header, const char *name)
{
	char f[64];
	for (int i = 0; csv_field(header, i, f, sizeof f); i++)
		if (strcmp(f, name) == 0)
			return i;
	return -1;
}

int arrival_trace_load(const char *path, double speed, size_t max_n, struct arrival_trace *out, char *err,
		       size_t errlen)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (!f) {
		err_set(err, errlen, "%s: cannot open the trace: %s", path, strerror(errno));
		return -ENOENT;
	}
	int c = fgetc(f);
	while (c == ' ' || c == '\n' || c == '\r' || c == '\t')
		c = fgetc(f);
	bool jsonl = c == '{';
	if (c != EOF)
		ungetc(c, f);
	char *line = NULL;
	size_t lcap = 0, cap = 0;
	long lineno = 0;
	int rc = 0, col_t = -1, col_in = -1, col_out = -1;
	double prev = -INFINITY, first = 0;
	while (getline(&line, &lcap, f) >= 0 && out->n < max_n) {
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		double ts;
		int64_t in = -1, ol = -1;
		if (jsonl) {
			cJSON *o = cJSON_Parse(line);
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "timestamp");
			if (!cJSON_IsObject(o) || !cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
				cJSON_Delete(o);
				err_set(err, errlen,
					 "%s:%ld: not a Mooncake trace record; expected one JSON object per line with a "
					 "numeric \"timestamp\" (ms) and optional \"input_length\", \"output_length\"",
					 path, lineno);
				rc = -EINVAL;
				break;
			}
			ts = v->valuedouble / 1000.0;
			in = json_len(o, "input_length");
			ol = json_len(o, "output_length");
			cJSON_Delete(o);
		} else {
			if (col_t < 0) {
				col_t = csv_column(line, "Timestamp");
				col_in = csv_column(line, "Request tokens");
				col_out = csv_column(line, "Response tokens");
				if (col_t < 0) {
					err_set(err, errlen,
						 "%s:%ld: not a BurstGPT CSV header; expected a first line naming the columns "
						 "Timestamp (s), Request tokens, Response tokens (or a Mooncake JSONL trace)",
						 path, lineno);
					rc = -EINVAL;
					break;
				}
				continue;
			}
			char fld[64], *end;
			if (!csv_field(line, col_t, fld, sizeof fld) || (ts = strtod(fld, &end), end == fld) || !isfinite(ts)) {
				err_set(err, errlen, "%s:%ld: the Timestamp column is not a number (seconds expected)", path,
					 lineno);
				rc = -EINVAL;
				break;
			}
			if (col_in >= 0 && csv_field(line, col_in, fld, sizeof fld))
				in = atoll(fld) >= 1 ? atoll(fld) : -1;
			if (col_out >= 0 && csv_field(line, col_out, fld, sizeof fld))
				ol = atoll(fld) >= 1 ? atoll(fld) : -1;
		}
		if (ts < prev) {
			err_set(err, errlen,
				 "%s:%ld: timestamp %.3f s is before the previous record's %.3f s; a trace must be sorted "
				 "by time (non-decreasing timestamps)", path, lineno, ts, prev);
			rc = -EINVAL;
			break;
		}
		if (out->n == 0)
			first = ts;
		prev = ts;
		if ((rc = trace_push(out, &cap, (ts - first) / speed, in, ol)) != 0) {
			err_set(err, errlen, "out of memory reading %s", path);
			break;
		}
	}
	if (!rc && out->n == 0) {
		err_set(err, errlen, "%s: the trace has no records", path);
		rc = -EINVAL;
	}
	free(line);
	fclose(f);
	if (rc)
		arrival_trace_finish(out);
	return rc;
}
