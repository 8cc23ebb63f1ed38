/* test_server_spec_sample — exact speculative sampling (server/sampler.h): the token emitted
 * by a verification step must be distributed exactly as the target distribution p.
 *  1. The core, analytically: over small vocabularies (1-6 outcomes, with zeros) and random
 *     p and q, sum over drafts x ~ q of q(x)·[accept(x)·[y = x] + (1 - accept(x))·residual_x(y)]
 *     equals p(y) to 1e-12; the same for deterministic drafts (q one-hot at x, x outside p's
 *     support included).
 *  2. The draw: sampler_spec_choose integrated exactly over a grid of (u1, u2) gives those
 *     probabilities within the grid's resolution.
 *  3. The whole step on logits with the request transforms (temperature, top-k, top-p,
 *     min-p): p is the distribution sampler_pick draws from (sampler_probs, checked against
 *     closed forms), the analytic identity holds for it, and seeded draws of
 *     sampler_pick_draft match p; greedy keeps the argmax; seeds repeat. */
#include "test.h"
#include "server/sampler.h"

#include <math.h>
#include <string.h>

#define NMAX 8

static uint64_t lcg = 12345;
static double rnd(void)
{
	lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(lcg >> 11) / 9007199254740992.0;
}

/* A random distribution over n outcomes, about a third of them zero (never all). */
static void random_dist(double *d, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		d[i] = rnd() < 0.33 ? 0 : rnd();
		s += d[i];
	}
	if (s == 0) {
		d[n - 1] = 1;
		s = 1;
	}
	for (size_t i = 0; i < n; i++)
		d[i] /= s;
}

/* The analytic emission distribution of one step: out[y]. q NULL: the draft is x. */
static void emitted(const double *p, const double *q, size_t n, long x_det, double *out)
{
	double res[NMAX];
	for (size_t y = 0; y < n; y++)
		out[y] = 0;
	if (!q) {
		double a = sampler_spec_residual(p, NULL, n, x_det, res);
		for (size_t y = 0; y < n; y++)
			out[y] = (x_det == (long)y ? a : 0) + (1 - a) * res[y];
		return;
	}
	for (size_t x = 0; x < n; x++) {
		if (q[x] <= 0)
			continue;
		double a = sampler_spec_residual(p, q, n, (long)x, res);
		for (size_t y = 0; y < n; y++)
			out[y] += q[x] * ((x == y ? a : 0) + (1 - a) * res[y]);
	}
}

static double max_diff(const double *a, const double *b, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = fmax(m, fabs(a[i] - b[i]));
	return m;
}

static void test_core_exact(void)
{
	double worst = 0;
	int cases = 0;
	for (size_t n = 1; n <= 6; n++) {
		for (int t = 0; t < 300; t++) {
			double p[NMAX], q[NMAX], out[NMAX];
			random_dist(p, n);
			random_dist(q, n);
			if (t == 0)
				memcpy(q, p, sizeof p); /* q == p: always accepted */
			emitted(p, q, n, 0, out);
			worst = fmax(worst, max_diff(out, p, n));
			for (long x = -1; x < (long)n; x++) {
				emitted(p, NULL, n, x, out);
				worst = fmax(worst, max_diff(out, p, n));
			}
			cases += 2 + (int)n;
		}
	}
	printf("core: %d cases, largest |P(emit y) - p(y)| = %.3g\n", cases, worst);
	CHECK(worst < 1e-12);
	/* A step that broke the rule would be caught: accepting with q(x) instead gives another law. */
	double p[3] = { 0.5, 0.3, 0.2 }, q[3] = { 0.2, 0.3, 0.5 }, res[3], bad[3] = { 0 };
	for (int x = 0; x < 3; x++) {
		sampler_spec_residual(p, q, 3, x, res);
		double a = fmin(1, q[x] / p[x]);
		for (int y = 0; y < 3; y++)
			bad[y] += q[x] * ((x == y ? a : 0) + (1 - a) * res[y]);
	}
	CHECK(max_diff(bad, p, 3) > 0.01);
}

/* Exact integration of sampler_spec_choose over an M x M grid of midpoints. */
static void test_choose_grid(void)
{
	enum { M = 1000 };
	double worst = 0;
	for (int t = 0; t < 20; t++) {
		size_t n = 2 + (size_t)t % 5;
		double p[NMAX], q[NMAX], res[NMAX], want[NMAX], got[NMAX] = { 0 };
		random_dist(p, n);
		random_dist(q, n);
		long x = (long)(t % (int)n);
		if (q[x] == 0)
			q[x] = 0.1; /* x must be a possible draft; renormalise */
		double s = 0;
		for (size_t i = 0; i < n; i++)
			s += q[i];
		for (size_t i = 0; i < n; i++)
			q[i] /= s;
		double a = sampler_spec_residual(p, q, n, x, res);
		for (size_t y = 0; y < n; y++)
			want[y] = (x == (long)y ? a : 0) + (1 - a) * res[y];
		for (int i = 0; i < M; i++)
			for (int j = 0; j < M; j++) {
				long y = sampler_spec_choose(a, res, n, x, (i + 0.5) / M, (j + 0.5) / M);
				if (y >= 0 && (size_t)y < n)
					got[y] += 1.0 / ((double)M * M);
			}
		worst = fmax(worst, max_diff(got, want, n));
	}
	printf("choose: largest grid deviation %.3g (grid step %.3g)\n", worst, 1.0 / M);
	CHECK(worst <= 2.0 / M);
}

static void test_step_on_logits(void)
{
	struct sampler_scratch sc = { 0 };
	const float l3[4] = { 0.0f, logf(2.0f), logf(3.0f), -INFINITY };
	double pr[4];
	struct sampler_params t1 = { .temperature = 1, .top_p = 1 };
	CHECK(sampler_probs(&t1, l3, 4, &sc, pr) == 0);
	CHECK_NEAR(pr[0], 1.0 / 6, 1e-6);
	CHECK_NEAR(pr[2], 3.0 / 6, 1e-6);
	CHECK(pr[3] == 0);
	struct sampler_params k2 = { .temperature = 1, .top_p = 1, .top_k = 2 };
	CHECK(sampler_probs(&k2, l3, 4, &sc, pr) == 0);
	CHECK(pr[0] == 0);
	CHECK_NEAR(pr[1], 0.4, 1e-6);

	const float lg[6] = { 1.0f, 2.5f, 0.3f, 2.2f, -1.0f, 1.7f };
	const float dl[6] = { 2.0f, 0.1f, 1.5f, 2.4f, 0.0f, -0.5f }; /* a draft model's logits */
	const struct sampler_params sets[] = {
		{ .temperature = 1, .top_p = 1 },
		{ .temperature = 0.7, .top_p = 1, .top_k = 4 },
		{ .temperature = 1.3, .top_p = 0.8 },
		{ .temperature = 0.9, .top_p = 1, .min_p = 0.2 },
		{ .temperature = 1.1, .top_p = 0.9, .top_k = 5, .min_p = 0.05 },
	};
	enum { DRAWS = 40000 };
	double worst_exact = 0, worst_emp = 0;
	for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
		double p[6], q[6], out[6];
		CHECK(sampler_probs(&sets[si], lg, 6, &sc, p) == 0);
		CHECK(sampler_probs(&sets[si], dl, 6, &sc, q) == 0);
		emitted(p, q, 6, 0, out);
		worst_exact = fmax(worst_exact, max_diff(out, p, 6));
		struct sampler_rng rng;
		sampler_rng_seed(&rng, 99 + si);
		/* deterministic drafts x = 0..5, and drafts drawn from q */
		for (int x = -1; x < 6; x++) {
			double f[6] = { 0 };
			int acc = 0;
			for (int d = 0; d < DRAWS; d++) {
				int32_t dx = x;
				const double *qq = NULL;
				if (x < 0) { /* a draw from q, then the general rule */
					double u = sampler_rng_uniform(&rng), c = 0;
					dx = 5;
					for (int i = 0; i < 6; i++)
						if (q[i] > 0 && u < (c += q[i])) {
							dx = i;
							break;
						}
					qq = q;
				}
				bool accepted;
				int32_t y = sampler_pick_draft(&sets[si], &rng, lg, 6, &sc, dx, qq, &accepted);
				if (y < 0 || y >= 6 || accepted != (y == dx)) {
					CHECK(0);
					break;
				}
				f[y] += 1.0 / DRAWS;
				acc += accepted;
			}
			worst_emp = fmax(worst_emp, max_diff(f, p, 6));
			if (x >= 0) /* acceptance rate of a deterministic draft: p(x) */
				CHECK(fabs((double)acc / DRAWS - p[x]) < 0.015);
		}
	}
	printf("logits: analytic deviation %.3g, largest empirical deviation %.4f over %d draws\n", worst_exact,
	       worst_emp, DRAWS);
	CHECK(worst_exact < 1e-12);
	CHECK(worst_emp < 0.015);

	/* Greedy: the argmax, accepted only when it is the draft; no random numbers drawn. */
	struct sampler_params g = { .temperature = 0, .top_p = 1 };
	struct sampler_rng r1, r2;
	sampler_rng_seed(&r1, 5);
	sampler_rng_seed(&r2, 5);
	bool accepted;
	CHECK_EQ_INT(sampler_pick_draft(&g, &r1, lg, 6, &sc, 1, NULL, &accepted), 1);
	CHECK(accepted);
	CHECK_EQ_INT(sampler_pick_draft(&g, &r1, lg, 6, &sc, 3, NULL, &accepted), 1);
	CHECK(!accepted);
	CHECK(sampler_rng_uniform(&r1) == sampler_rng_uniform(&r2));
	/* Seeds repeat. */
	sampler_rng_seed(&r1, 77);
	sampler_rng_seed(&r2, 77);
	int same = 0;
	for (int i = 0; i < 500; i++) {
		bool a1, a2;
		same += sampler_pick_draft(&sets[2], &r1, lg, 6, &sc, i % 6, NULL, &a1) ==
			sampler_pick_draft(&sets[2], &r2, lg, 6, &sc, i % 6, NULL, &a2);
	}
	CHECK_EQ_INT(same, 500);
	sampler_scratch_finish(&sc);
}

int main(void)
{
	test_core_exact();
	test_choose_grid();
	test_step_on_logits();
	return test_done();
}
