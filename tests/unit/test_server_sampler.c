/* test_server_sampler — the sampler's filters against closed-form probabilities. */
#include "test.h"
#include "server/sampler.h"

#include <math.h>

#define DRAWS 60000

/* Frequencies of each id over DRAWS picks. */
static void freqs(const struct sampler_params *p, const float *logits, size_t n, double *out)
{
	struct sampler_rng rng;
	struct sampler_scratch sc = { 0 };
	sampler_rng_seed(&rng, 42);
	for (size_t i = 0; i < n; i++)
		out[i] = 0;
	for (int i = 0; i < DRAWS; i++) {
		int32_t id = sampler_pick(p, &rng, logits, n, &sc);
		if (id >= 0 && (size_t)id < n)
			out[id] += 1.0 / DRAWS;
	}
	sampler_scratch_finish(&sc);
}

int main(void)
{
	const float l3[4] = { 0.0f, logf(2.0f), logf(3.0f), -INFINITY }; /* p = 1/6, 2/6, 3/6, 0 */
	struct sampler_scratch sc = { 0 };
	struct sampler_rng rng;
	sampler_rng_seed(&rng, 1);

	/* Greedy: argmax; ties go to the lowest id. */
	struct sampler_params greedy = { .temperature = 0, .top_p = 1 };
	CHECK_EQ_INT(sampler_pick(&greedy, &rng, l3, 4, &sc), 2);
	const float tie[3] = { 1.0f, 5.0f, 5.0f };
	CHECK_EQ_INT(sampler_pick(&greedy, &rng, tie, 3, &sc), 1);
	struct sampler_params k1 = { .temperature = 1, .top_p = 1, .top_k = 1 };
	CHECK_EQ_INT(sampler_pick(&k1, &rng, l3, 4, &sc), 2);

	/* Plain sampling at temperature 1. */
	double f[4];
	struct sampler_params plain = { .temperature = 1, .top_p = 1 };
	freqs(&plain, l3, 4, f);
	CHECK_NEAR(f[0], 1.0 / 6, 0.05);
	CHECK_NEAR(f[1], 2.0 / 6, 0.03);
	CHECK_NEAR(f[2], 3.0 / 6, 0.02);
	CHECK_EQ_INT((int)(f[3] * DRAWS), 0);

	/* Temperature 0.5 squares the probabilities: 1, 4, 9 over 14. */
	struct sampler_params cold = { .temperature = 0.5, .top_p = 1 };
	freqs(&cold, l3, 4, f);
	CHECK_NEAR(f[0], 1.0 / 14, 0.08);
	CHECK_NEAR(f[2], 9.0 / 14, 0.02);

	/* top_k 2 keeps ids 1 and 2: 2/5 and 3/5. */
	struct sampler_params topk = { .temperature = 1, .top_p = 1, .top_k = 2 };
	freqs(&topk, l3, 4, f);
	CHECK_EQ_INT((int)(f[0] * DRAWS), 0);
	CHECK_NEAR(f[1], 0.4, 0.03);
	CHECK_NEAR(f[2], 0.6, 0.02);

	/* top_p 0.5: id 2 alone reaches the mass; top_p 0.6 adds id 1. */
	struct sampler_params topp = { .temperature = 1, .top_p = 0.5 };
	freqs(&topp, l3, 4, f);
	CHECK_NEAR(f[2], 1.0, 1e-12);
	topp.top_p = 0.6;
	freqs(&topp, l3, 4, f);
	CHECK_NEAR(f[1], 0.4, 0.03);
	CHECK_EQ_INT((int)(f[0] * DRAWS), 0);

	/* min_p 0.5: keep p >= 0.25 (ids 1 and 2). */
	struct sampler_params minp = { .temperature = 1, .top_p = 1, .min_p = 0.5 };
	freqs(&minp, l3, 4, f);
	CHECK_EQ_INT((int)(f[0] * DRAWS), 0);
	CHECK_NEAR(f[1], 0.4, 0.03);

	/* Seeds: the same seed repeats the same picks, another seed differs. */
	struct sampler_rng a, b, c;
	sampler_rng_seed(&a, 7);
	sampler_rng_seed(&b, 7);
	sampler_rng_seed(&c, 8);
	float wide[64];
	for (int i = 0; i < 64; i++)
		wide[i] = (float)(i % 7) * 0.1f;
	int same = 0, differ = 0;
	for (int i = 0; i < 200; i++) {
		int32_t x = sampler_pick(&plain, &a, wide, 64, &sc), y = sampler_pick(&plain, &b, wide, 64, &sc);
		int32_t z = sampler_pick(&plain, &c, wide, 64, &sc);
		same += x == y;
		differ += x != z;
	}
	CHECK_EQ_INT(same, 200);
	CHECK(differ > 100);
	/* Uniform draws stay in [0, 1). */
	double lo = 1, hi = 0;
	for (int i = 0; i < 10000; i++) {
		double u = sampler_rng_uniform(&a);
		lo = u < lo ? u : lo;
		hi = u > hi ? u : hi;
	}
	CHECK(lo >= 0 && lo < 0.01 && hi < 1 && hi > 0.99);
	sampler_scratch_finish(&sc);
	return test_done();
}
