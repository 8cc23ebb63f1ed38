/* dist — seeded length distributions for synthetic prompts and outputs:
 *   fixed:N            every draw is N
 *   uniform:LO,HI      integers LO..HI inclusive, equally likely
 *   normal:MEAN,SD     rounded, clipped to >= 1
 *   lognormal:MEDIAN,SIGMA  exp(N(ln MEDIAN, SIGMA^2)) rounded, clipped to >= 1
 * Draws come from GSL's generators (gsl_ran_*) on a gsl_rng the caller seeds, so
 * a recorded seed reproduces every length. Lengths are in tokens; turning them
 * into text is the caller's business. Arguments are borrowed. */
#ifndef SIXI_BENCH_DIST_H
#define SIXI_BENCH_DIST_H
#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>

enum dist_kind { DIST_FIXED, DIST_UNIFORM, DIST_NORMAL, DIST_LOGNORMAL };

struct dist {
	enum dist_kind kind;
	double a, b;  /* N | LO,HI | MEAN,SD | MEDIAN,SIGMA */
};

/* Parses "KIND:ARGS" (a bare integer means fixed). 0 or -EINVAL with a message
 * naming flag, the value and the accepted forms. */
__attribute__((warn_unused_result)) int dist_parse(const char *flag, const char *s, struct dist *out, char *err,
						    size_t errlen);
/* One draw, >= 1. */
int64_t dist_draw(const struct dist *d, gsl_rng *r);
/* "lognormal:200,0.5" back again. */
void dist_format(const struct dist *d, char *out, size_t n);
#endif
