/* test_server_prefill — the pass-cost model and the chunk rule (prefill.h), without
 * threads or clocks: the fit recovers a linear cost exactly, keeps the prior where the
 * passes say nothing, follows a change within a few dozen passes; the budget and rows
 * within it; pressure; the plan's order (short whole first, fewest rows left, ties by
 * arrival) and its starvation grant. */
#include "test.h"
#include "server/prefill.h"

static const struct prefill_cost cpu = { 50e6, 10e6, 4e6 }; /* a slow machine: prompt rows dear */
static const struct prefill_cost thor = { 85e6, 1.2e6, 0.75e6 };

static double truth(const struct prefill_cost *c, size_t d, size_t p)
{
	return c->base_ns + (double)d * c->decode_row_ns + (double)p * c->prompt_row_ns;
}

static void test_fit(void)
{
	struct prefill_model m;
	/* a wrong prior (the simulated Thor) against the slow machine's passes */
	prefill_model_init(&m, NULL);
	CHECK_NEAR(m.cost.base_ns, thor.base_ns, 1e-12);
	for (int i = 0; i < 200; i++) {
		size_t d = (size_t)(i % 5), p = (size_t)((i * 37) % 300);
		prefill_model_observe(&m, d, p, truth(&cpu, d, p));
	}
	/* the prior's pull fades once the passes vary: a few % on the coefficients the passes
	 * barely tell apart (few decode rows), half a percent on what the budget uses */
	CHECK_NEAR(m.cost.base_ns, cpu.base_ns, 0.07);
	CHECK_NEAR(m.cost.decode_row_ns, cpu.decode_row_ns, 0.07);
	CHECK_NEAR(m.cost.prompt_row_ns, cpu.prompt_row_ns, 0.01);
	CHECK_NEAR(prefill_model_predict(&m, 3, 100), truth(&cpu, 3, 100), 0.005);

	/* the right prior stays exact, and decode-only passes leave the prompt row where it was */
	prefill_model_init(&m, &thor);
	for (int i = 0; i < 100; i++)
		prefill_model_observe(&m, 1 + (size_t)(i % 3), 0, truth(&thor, 1 + (size_t)(i % 3), 0));
	CHECK_NEAR(m.cost.base_ns, thor.base_ns, 1e-9);
	CHECK_NEAR(m.cost.decode_row_ns, thor.decode_row_ns, 1e-9);
	CHECK_NEAR(m.cost.prompt_row_ns, thor.prompt_row_ns, 1e-9);

	/* the machine slows down 2x: within 60 passes the fit says so (forgetting 0.95) */
	struct prefill_cost slow = { 2 * thor.base_ns, 2 * thor.decode_row_ns, 2 * thor.prompt_row_ns };
	for (int i = 0; i < 60; i++) {
		size_t d = (size_t)(i % 7), p = (size_t)((i * 53) % 512);
		prefill_model_observe(&m, d, p, truth(&slow, d, p));
	}
	CHECK_NEAR(prefill_model_predict(&m, 4, 256), truth(&slow, 4, 256), 0.05);

	/* nonsense observations are ignored; coefficients never go negative */
	struct prefill_model before = m;
	prefill_model_observe(&m, 1, 1, 0);
	prefill_model_observe(&m, 1, 1, -5);
	prefill_model_observe(&m, 1, 1, NAN);
	CHECK_EQ_INT(m.n_obs, before.n_obs);
	prefill_model_init(&m, &thor);
	for (int i = 0; i < 50; i++) /* more rows, less time: a fit would give negative rows */
		prefill_model_observe(&m, 0, (size_t)(i % 2) * 500, i % 2 ? 1e6 : 100e6);
	CHECK(m.cost.base_ns >= 0 && m.cost.decode_row_ns >= 0 && m.cost.prompt_row_ns >= 1);
}

static void test_budget(void)
{
	struct prefill_model m;
	prefill_model_init(&m, &cpu);
	/* default: six predicted one-row decode steps = 6 x 60 ms */
	CHECK_NEAR(prefill_budget_ns(&m, 0), 360e6, 1e-12);
	CHECK_NEAR(prefill_budget_ns(&m, 123e6), 123e6, 1e-12);
	/* 360 ms - (50 + 4 x 10) ms leaves 270 ms: 67 rows of 4 ms */
	CHECK_EQ_INT(prefill_rows_within(&m, 4, 360e6, 16, 512), 67);
	CHECK_EQ_INT(prefill_rows_within(&m, 4, 360e6, 16, 40), 40);   /* the cap */
	CHECK_EQ_INT(prefill_rows_within(&m, 40, 360e6, 16, 512), 16); /* over budget already: the floor */
	CHECK_EQ_INT(prefill_rows_within(&m, 40, 360e6, 16, 8), 8);    /* the cap wins over the floor */
	prefill_model_init(&m, &thor);
	/* the simulated Thor: 6 x 86.2 ms leaves 431 ms for rows of 0.75 ms: 574, above the default cap of 512 */
	CHECK_EQ_INT(prefill_rows_within(&m, 1, prefill_budget_ns(&m, 0), 16, 4096), 574);
}

static void test_pressure(void)
{
	struct prefill_want w[2] = { { .left = 5000 }, { .left = 300 } };
	CHECK_EQ_INT(prefill_pressure(w, 2, 0, 100), PREFILL_IDLE);
	CHECK_EQ_INT(prefill_pressure(w, 2, 1, 100), PREFILL_DECODING);                   /* a decoding stream */
	CHECK_EQ_INT(prefill_pressure(w, 2, 1, PREFILL_AFTER_TURN - 1), PREFILL_WAITING); /* a turn just ended */
	CHECK_EQ_INT(prefill_pressure(w, 2, 0, PREFILL_AFTER_TURN - 1), PREFILL_WAITING);
	CHECK_EQ_INT(prefill_pressure(w, 2, 0, PREFILL_AFTER_TURN), PREFILL_IDLE);
	w[1].left = PREFILL_SHORT_ROWS;                                                   /* a short prompt */
	CHECK_EQ_INT(prefill_pressure(w, 2, 0, 100), PREFILL_WAITING);
	CHECK_EQ_INT(prefill_pressure(w, 2, 3, 100), PREFILL_WAITING);
	CHECK_EQ_INT(prefill_pressure(NULL, 0, 0, 100), PREFILL_IDLE);
}

static size_t grant_of(const struct prefill_want *w, size_t n, uint64_t order)
{
	for (size_t i = 0; i < n; i++)
		if (w[i].order == order)
			return w[i].grant;
	return (size_t)-1;
}

static void test_plan(void)
{
	/* two documents and a follow-up: the follow-up whole, then the shorter document */
	struct prefill_want w[4] = { { .left = 9000, .order = 0 }, { .left = 4000, .order = 1 }, { .left = 64, .order = 2 } };
	CHECK_EQ_INT(prefill_plan(w, 3, 100), 100);
	CHECK_EQ_INT(grant_of(w, 3, 2), 64);
	CHECK_EQ_INT(grant_of(w, 3, 1), 36);
	CHECK_EQ_INT(grant_of(w, 3, 0), 0);
	CHECK_EQ_INT(w[0].order, 2); /* sorted: fewest rows left first */

	/* a short prompt goes whole even past the allowance; nothing else joins it */
	struct prefill_want s[2] = { { .left = 5000, .order = 0 }, { .left = 200, .order = 1 } };
	CHECK_EQ_INT(prefill_plan(s, 2, 16), 200);
	CHECK_EQ_INT(grant_of(s, 2, 1), 200);
	CHECK_EQ_INT(grant_of(s, 2, 0), 0);

	/* a long first prompt is chunked to the allowance */
	struct prefill_want l[1] = { { .left = 5000 } };
	CHECK_EQ_INT(prefill_plan(l, 1, 300), 300);

	/* ties by arrival */
	struct prefill_want t[2] = { { .left = 700, .order = 9 }, { .left = 700, .order = 3 } };
	prefill_plan(t, 2, 800);
	CHECK_EQ_INT(grant_of(t, 2, 3), 700);
	CHECK_EQ_INT(grant_of(t, 2, 9), 100);

	/* starvation: the longest, left out for 8 passes, gets 16 rows taken first from the budget */
	w[0] = (struct prefill_want){ .left = 9000, .order = 0, .skipped = PREFILL_STARVE_PASSES };
	w[1] = (struct prefill_want){ .left = 4000, .order = 1 };
	w[2] = (struct prefill_want){ .left = 64, .order = 2 };
	w[3] = (struct prefill_want){ .left = 10, .order = 3, .skipped = PREFILL_STARVE_PASSES }; /* fewer than 16 left */
	CHECK_EQ_INT(prefill_plan(w, 4, 100), 100);
	CHECK_EQ_INT(grant_of(w, 4, 3), 10);
	CHECK_EQ_INT(grant_of(w, 4, 2), 64);
	CHECK_EQ_INT(grant_of(w, 4, 0), PREFILL_MIN_ROWS);
	CHECK_EQ_INT(grant_of(w, 4, 1), 100 - 10 - 64 - PREFILL_MIN_ROWS);
	/* ... never out of the short first prompt's share: past the allowance */
	w[0] = (struct prefill_want){ .left = 9000, .order = 0, .skipped = 50 };
	w[1] = (struct prefill_want){ .left = 64, .order = 1 };
	CHECK_EQ_INT(prefill_plan(w, 2, 70), 64 + PREFILL_MIN_ROWS);
	CHECK_EQ_INT(grant_of(w, 2, 1), 64);
	CHECK_EQ_INT(grant_of(w, 2, 0), PREFILL_MIN_ROWS);

	/* a simulated run: four documents, a 100-row allowance; every one progresses at least
	 * 16 rows every 9 passes, and all finish */
	struct prefill_want d[4];
	size_t left[4] = { 3000, 2000, 2500, 1000 };
	int64_t skipped[4] = { 0 }, since[4] = { 0 }, worst = 0;
	for (int pass = 0; pass < 1000; pass++) {
		size_t n = 0;
		for (int i = 0; i < 4; i++)
			if (left[i] > 0)
				d[n++] = (struct prefill_want){ .left = left[i], .skipped = skipped[i], .order = (uint64_t)i };
		if (n == 0)
			break;
		size_t got = prefill_plan(d, n, 100), most = d[0].left <= PREFILL_SHORT_ROWS ? d[0].left : 0;
		CHECK(got <= (most > 100 ? most : 100) + PREFILL_MIN_ROWS * n);
		for (size_t j = 0; j < n; j++) {
			int i = (int)d[j].order;
			left[i] -= d[j].grant;
			skipped[i] = d[j].grant ? 0 : skipped[i] + 1;
			since[i] = d[j].grant ? 0 : since[i] + 1;
			worst = since[i] > worst ? since[i] : worst;
		}
	}
	CHECK_EQ_INT(left[0] + left[1] + left[2] + left[3], 0);
	CHECK(worst <= PREFILL_STARVE_PASSES);
}

int main(void)
{
	test_fit();
	test_budget();
	test_pressure();
	test_plan();
	return test_done();
}
