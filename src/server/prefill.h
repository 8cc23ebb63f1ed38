/* prefill — how many prompt rows each pass takes, and whose.
 *
 * A pass costs base + decode_rows x decode_row + prompt_rows x prompt_row (device time).
 * The model is refitted by weighted least squares after every pass: older passes count
 * 0.95 times less per pass, and a ridge towards the prior (the engine's own figures where it
 * has them, the simulated device's) keeps a coefficient the recent passes do not show
 * (no prompt rows lately, one decode stream only) where it was. Chunks are then sized by
 * time: whenever something else waits on the device, a pass stays within the budget.
 *
 * The rule (prefill_plan):
 *   - Pressure, in three steps: a prompt of at most PREFILL_SHORT_ROWS rows left, or a
 *     sequence that finished in the last PREFILL_AFTER_TURN passes or is sampling its last
 *     tokens by length (its next turn is usually on its way; the scheduler says so by
 *     passes_since_finish 0), waits: the prompt rows of a pass are those that fit the budget
 *     (at least PREFILL_MIN_ROWS). Only decoding streams wait: PREFILL_DECODING_FACTOR x
 *     the budget (each of their tokens is slowed, not a first token held back, so prefill
 *     throughput counts more). Nothing waits: up to the row cap.
 *   - Order: fewest rows left first (a follow-up is a short prompt, so it goes before more
 *     chunks of long documents, whole, even past the budget); ties by arrival.
 *   - No starvation: a prompt left out of PREFILL_STARVE_PASSES passes in a row gets
 *     PREFILL_MIN_ROWS rows of the next one, from the budget (past it when a short first
 *     prompt takes it all), so every prompt advances at least that much every
 *     PREFILL_STARVE_PASSES + 1 passes.
 * Not done here: choosing which sequences decode (all ready ones always do), slots.
 * Ownership: plain values; the caller's storage. Not thread-safe (the executor's). */
#ifndef SIXI_SERVER_PREFILL_H
#define SIXI_SERVER_PREFILL_H
#include <stddef.h>
#include <stdint.h>

#define PREFILL_SHORT_ROWS 256   /* a prompt with at most this many rows left is short */
#define PREFILL_MIN_ROWS 16      /* least prompt rows of a pass under pressure; the starvation grant */
#define PREFILL_STARVE_PASSES 8  /* passes left out in a row before the starvation grant */
#define PREFILL_AFTER_TURN 4     /* passes after a sequence finishes that count as pressure */
#define PREFILL_BUDGET_STEPS 6.0 /* default budget: this many predicted one-row decode steps */
#define PREFILL_DECODING_FACTOR 8.0 /* budget multiple when only decoding streams wait */

struct prefill_cost {
	double base_ns;       /* per pass (weights read once) */
	double decode_row_ns; /* per row with logits */
	double prompt_row_ns; /* per prompt row without logits */
};

struct prefill_model {
	struct prefill_cost prior;
	struct prefill_cost cost; /* the current fit */
	double s[3][3];           /* decayed sum of x x^T, x = (1, decode/4, prompt/64) */
	double r[3];              /* decayed sum of x t_ns */
	int64_t n_obs;
};

/* A prior of zeros (an engine that gives none) takes the simulated Thor's figures. */
void prefill_model_init(struct prefill_model *m, const struct prefill_cost *prior);
/* One pass: its rows and device time (ns). Passes of no time are ignored. */
void prefill_model_observe(struct prefill_model *m, size_t decode_rows, size_t prompt_rows, double ns);
double prefill_model_predict(const struct prefill_model *m, size_t decode_rows, size_t prompt_rows);
/* The pass budget in device ns: budget_ns when > 0, else PREFILL_BUDGET_STEPS predicted
 * decode steps of one row. */
double prefill_budget_ns(const struct prefill_model *m, double budget_ns);
/* Prompt rows a pass with decode_rows can take within budget_ns: within [min_rows, cap]. */
size_t prefill_rows_within(const struct prefill_model *m, size_t decode_rows, double budget_ns, size_t min_rows,
			   size_t cap);

/* One prompt in prefill. left and skipped are inputs; grant is set by prefill_plan. */
struct prefill_want {
	size_t left;          /* rows still to prefill (> 0) */
	int64_t skipped;      /* consecutive passes it was left out of */
	uint64_t order;       /* arrival order, for ties */
	size_t grant;         /* rows in this pass */
	void *seq;            /* the caller's */
};
enum prefill_pressure {
	PREFILL_IDLE,     /* only prompts of more than PREFILL_SHORT_ROWS rows: up to the row cap */
	PREFILL_DECODING, /* decoding streams too: PREFILL_DECODING_FACTOR x the budget */
	PREFILL_WAITING,  /* a short prompt, or a turn just ended: the budget */
};
/* How much a pass is pressed (see the top). */
enum prefill_pressure prefill_pressure(const struct prefill_want *w, size_t n, size_t decode_rows,
				       int64_t passes_since_finish);
/* Grants rows to w[0..n) by the rule above (w is sorted: fewest rows left first); rows is
 * the pass's prompt-row allowance. Returns the rows granted: at most rows, except that the
 * first prompt, when short, is taken whole and starvation grants come on top of it. */
size_t prefill_plan(struct prefill_want *w, size_t n, size_t rows);
#endif
