/* dist — see dist.h. */
#include "bench/dist.h"
#include "core/err.h"
#include <errno.h>
#include <stdbool.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char forms[] = "fixed:N, uniform:LO,HI, normal:MEAN,SD or lognormal:MEDIAN,SIGMA";

int dist_parse(const char *flag, const char *s, struct dist *out, char *err, size_t errlen)
{
	struct dist d = { DIST_FIXED, 0, 0 };
	const char *colon = strchr(s, ':');
	size_t klen = colon ? (size_t)(colon - s) : 0;
	const char *args = colon ? colon + 1 : s;
	int want = 1;
	if (!colon)
		d.kind = DIST_FIXED;
	else if (klen == 5 && strncmp(s, "fixed", 5) == 0)
		d.kind = DIST_FIXED;
	else if (klen == 7 && strncmp(s, "uniform", 7) == 0)
		d.kind = DIST_UNIFORM, want = 2;
	else if (klen == 6 && strncmp(s, "normal", 6) == 0)
		d.kind = DIST_NORMAL, want = 2;
	else if (klen == 9 && strncmp(s, "lognormal", 9) == 0)
		d.kind = DIST_LOGNORMAL, want = 2;
	else {
		err_set(err, errlen, "%s: '%s' is not a length distribution; use %s", flag, s, forms);
		return -EINVAL;
	}
	char *end;
	errno = 0;
	d.a = strtod(args, &end);
	bool ok = end != args && errno == 0 && isfinite(d.a);
	if (ok && want == 2) {
		ok = *end == ',';
		if (ok) {
			const char *p = end + 1;
			d.b = strtod(p, &end);
			ok = end != p && isfinite(d.b);
		}
	}
	ok = ok && *end == 0;
	if (ok) {
		switch (d.kind) {
		case DIST_FIXED: ok = d.a >= 1 && d.a == floor(d.a); break;
		case DIST_UNIFORM: ok = d.a >= 1 && d.b >= d.a && d.a == floor(d.a) && d.b == floor(d.b); break;
		case DIST_NORMAL: ok = d.a >= 1 && d.b >= 0; break;
		case DIST_LOGNORMAL: ok = d.a >= 1 && d.b >= 0; break;
		}
	}
	if (!ok) {
		err_set(err, errlen,
			 "%s: '%s' is not valid; use %s (lengths are whole tokens >= 1, LO <= HI, SD and SIGMA >= 0)",
			 flag, s, forms);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

int64_t dist_draw(const struct dist *d, gsl_rng *r)
{
	double v = d->a;
	switch (d->kind) {
	case DIST_FIXED: break;
	case DIST_UNIFORM: v = d->a + (double)gsl_rng_uniform_int(r, (unsigned long)(d->b - d->a) + 1); break;
	case DIST_NORMAL: v = d->a + gsl_ran_gaussian(r, d->b); break;
	case DIST_LOGNORMAL: v = gsl_ran_lognormal(r, log(d->a), d->b); break;
	}
	v = floor(v + 0.5);
	if (!(v >= 1))
		v = 1;
	if (v > 1e9)
		v = 1e9;
	return (int64_t)v;
}

void dist_format(const struct dist *d, char *out, size_t n)
{
	switch (d->kind) {
	case DIST_FIXED: snprintf(out, n, "fixed:%.0f", d->a); break;
	case DIST_UNIFORM: snprintf(out, n, "uniform:%.0f,%.0f", d->a, d->b); break;
	case DIST_NORMAL: snprintf(out, n, "normal:%g,%g", d->a, d->b); break;
	case DIST_LOGNORMAL: snprintf(out, n, "lognormal:%g,%g", d->a, d->b); break;
	}
}
