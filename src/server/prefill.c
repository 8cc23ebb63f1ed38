/* prefill — see prefill.h. The fit: x = (1, d/4, p/64) so that the three scaled
 * coefficients are all "ns per pass" of like size; S and r decay by FORGET per pass, so
 * about 20 recent passes decide; RIDGE is the prior's weight in passes. Solving the 3x3
 * system per pass is a few dozen flops. The budget and the plan are O(prompts in prefill)
 * plus a sort, once per pass. */
#include "server/prefill.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#define FORGET 0.95
#define RIDGE 0.1
#define D_SCALE 4.0
#define P_SCALE 64.0

/* The simulated Thor (sim.c): 85 ms per pass, 1.2 ms per decode row, 0.75 ms per prompt row. */
static const struct prefill_cost default_prior = { 85e6, 1.2e6, 0.75e6 };

static void scaled(const struct prefill_cost *c, double th[3])
{
	th[0] = c->base_ns;
	th[1] = c->decode_row_ns * D_SCALE;
	th[2] = c->prompt_row_ns * P_SCALE;
}

void prefill_model_init(struct prefill_model *m, const struct prefill_cost *prior)
{
	*m = (struct prefill_model){ 0 };
	bool given = prior && (prior->base_ns > 0 || prior->decode_row_ns > 0 || prior->prompt_row_ns > 0);
	m->prior = given ? *prior : default_prior;
	m->cost = m->prior;
}

/* Solves a x = b (3x3) by Gaussian elimination with partial pivoting; false if singular. */
static bool solve3(double a[3][3], double b[3], double x[3])
{
	for (int c = 0; c < 3; c++) {
		int p = c;
		for (int r = c + 1; r < 3; r++)
			if (fabs(a[r][c]) > fabs(a[p][c]))
				p = r;
		if (fabs(a[p][c]) < 1e-12)
			return false;
		if (p != c) {
			for (int k = 0; k < 3; k++) {
				double t = a[c][k];
				a[c][k] = a[p][k];
				a[p][k] = t;
			}
			double t = b[c];
			b[c] = b[p];
			b[p] = t;
		}
		for (int r = c + 1; r < 3; r++) {
			double f = a[r][c] / a[c][c];
			for (int k = c; k < 3; k++)
				a[r][k] -= f * a[c][k];
			b[r] -= f * b[c];
		}
	}
	for (int c = 2; c >= 0; c--) {
		double s = b[c];
		for (int k = c + 1; k < 3; k++)
			s -= a[c][k] * x[k];
		x[c] = s / a[c][c];
	}
	return true;
}

void prefill_model_observe(struct prefill_model *m, size_t decode_rows, size_t prompt_rows, double ns)
{
	if (!(ns > 0) || !isfinite(ns))
		return;
	double x[3] = { 1, (double)decode_rows / D_SCALE, (double)prompt_rows / P_SCALE };
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			m->s[i][j] = FORGET * m->s[i][j] + x[i] * x[j];
		m->r[i] = FORGET * m->r[i] + x[i] * ns;
	}
	m->n_obs++;
	/* (S + RIDGE I) th = r + RIDGE th0: least squares pulled towards the prior */
	double th0[3], a[3][3], b[3], th[3];
	scaled(&m->prior, th0);
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			a[i][j] = m->s[i][j] + (i == j ? RIDGE : 0);
		b[i] = m->r[i] + RIDGE * th0[i];
	}
	if (!solve3(a, b, th))
		return;
	/* a pass never costs less with more rows; a prompt row always costs something, or
	 * the budget would admit any number of them */
	m->cost.base_ns = th[0] > 0 ? th[0] : 0;
	m->cost.decode_row_ns = th[1] > 0 ? th[1] / D_SCALE : 0;
	m->cost.prompt_row_ns = th[2] / P_SCALE > 1 ? th[2] / P_SCALE : 1;
}

double prefill_model_predict(const struct prefill_model *m, size_t decode_rows, size_t prompt_rows)
{
	return m->cost.base_ns + (double)decode_rows * m->cost.decode_row_ns + (double)prompt_rows * m->cost.prompt_row_ns;
}

double prefill_budget_ns(const struct prefill_model *m, double budget_ns)
{
	return budget_ns > 0 ? budget_ns : PREFILL_BUDGET_STEPS * prefill_model_predict(m, 1, 0);
}

size_t prefill_rows_within(const struct prefill_model *m, size_t decode_rows, double budget_ns, size_t min_rows,
			   size_t cap)
{
	double left = budget_ns - prefill_model_predict(m, decode_rows, 0);
	double rows = left > 0 ? floor(left / m->cost.prompt_row_ns) : 0;
	size_t n = rows >= (double)cap ? cap : (size_t)rows;
	if (n < min_rows)
		n = min_rows;
	return n < cap ? n : cap;
}

enum prefill_pressure prefill_pressure(const struct prefill_want *w, size_t n, size_t decode_rows,
				       int64_t passes_since_finish)
{
	if (passes_since_finish < PREFILL_AFTER_TURN)
		return PREFILL_WAITING;
	for (size_t i = 0; i < n; i++)
		if (w[i].left <= PREFILL_SHORT_ROWS)
			return PREFILL_WAITING;
	return decode_rows > 0 ? PREFILL_DECODING : PREFILL_IDLE;
}

static int cmp_left(const void *a, const void *b)
{
	const struct prefill_want *x = a, *y = b;
	if (x->left != y->left)
		return x->left < y->left ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

size_t prefill_plan(struct prefill_want *w, size_t n, size_t rows)
{
	qsort(w, n, sizeof *w, cmp_left);
	size_t used = 0;
	for (size_t i = 0; i < n; i++)
		w[i].grant = 0;
	if (n == 0)
		return 0;
	/* the first (fewest rows left): whole when short, its wait ends in this pass */
	size_t first = w[0].left <= PREFILL_SHORT_ROWS ? w[0].left : 0;
	/* the starved: a few rows each, from the budget, or past it when the first takes it all */
	for (size_t i = 1; i < n; i++) {
		if (w[i].skipped < PREFILL_STARVE_PASSES)
			continue;
		w[i].grant = w[i].left < PREFILL_MIN_ROWS ? w[i].left : PREFILL_MIN_ROWS;
		used += w[i].grant;
	}
	if (rows < first + used)
		rows = first + used;
	/* then fewest rows left first */
	for (size_t i = 0; i < n && used < rows; i++) {
		size_t k = w[i].left - w[i].grant;
		if (k > rows - used)
			k = rows - used;
		w[i].grant += k;
		used += k;
	}
	return used;
}
