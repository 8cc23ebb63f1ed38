/* arrival — when the requests of an open-loop level are due: seeded schedules and
 * recorded traces, fixed before anything is sent.
 *
 *   poisson        exponential gaps, mean 1/rate
 *   gamma:B        gamma gaps with shape B (the burstiness) and scale 1/(rate B), so the
 *                  mean stays 1/rate; B < 1 is burstier than Poisson, B = 1 is Poisson,
 *                  B > 1 more regular (vLLM's `--burstiness`, benchmark_serving.py)
 *   constant       gaps of exactly 1/rate
 * A ramp raises the rate from ramp_from to rate over ramp_s seconds, linearly or
 * exponentially (rate(t) = from x (rate/from)^(t/ramp_s)); each gap is drawn at the
 * rate of the moment it starts, as vLLM's ramp-up does. Traces give the due times
 * themselves: Mooncake JSONL ({"timestamp": ms, "input_length": N, "output_length": N})
 * and BurstGPT CSV (Timestamp in s, "Request tokens", "Response tokens" columns).
 * A trace must not go back in time: a decreasing timestamp is refused with FILE:LINE.
 * Times are seconds from the level's start. Draws use GSL (gsl_ran_exponential,
 * gsl_ran_gamma). Arguments are borrowed; returned arrays are the caller's to free. */
#ifndef SIXI_BENCH_ARRIVAL_H
#define SIXI_BENCH_ARRIVAL_H
#include <stddef.h>
#include <stdint.h>

enum arrival_kind { ARRIVAL_POISSON, ARRIVAL_GAMMA, ARRIVAL_CONSTANT };
enum arrival_ramp { RAMP_NONE, RAMP_LINEAR, RAMP_EXP };

struct arrival {
	enum arrival_kind kind;
	double burstiness;       /* gamma shape (1 for poisson) */
	enum arrival_ramp ramp;
	double ramp_from;        /* requests/s at t = 0 (> 0) */
	double ramp_s;           /* seconds to reach the target rate */
};

/* "poisson" | "gamma:B" | "constant". 0 or -EINVAL with a message. */
__attribute__((warn_unused_result)) int arrival_parse(const char *s, struct arrival *out, char *err, size_t errlen);
/* "linear:FROM,SECONDS" | "exp:FROM,SECONDS" (FROM in requests/s). */
__attribute__((warn_unused_result)) int arrival_parse_ramp(const char *s, struct arrival *out, char *err,
							    size_t errlen);

/* Due times in [0, duration_s) at `rate` requests/s, at most max_n of them; *t is
 * malloc'd (seconds, ascending). 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int arrival_schedule(const struct arrival *a, double rate, double duration_s,
							  size_t max_n, uint64_t seed, double **t, size_t *n);

struct arrival_trace {
	double *t_s;             /* (n) due time, seconds from the first record */
	int64_t *input_tokens;   /* (n) the record's prompt length, -1 when not given */
	int64_t *output_tokens;  /* (n) the record's output length, -1 when not given */
	size_t n;
};
/* Loads a Mooncake JSONL or BurstGPT CSV trace (told apart by the file's first
 * byte: '{' is JSONL). speed > 1 replays faster. At most max_n records are kept.
 * 0, or -EINVAL/-ENOENT with "FILE:LINE: what is wrong; what is expected" in err. */
__attribute__((warn_unused_result)) int arrival_trace_load(const char *path, double speed, size_t max_n,
							    struct arrival_trace *out, char *err, size_t errlen);
void arrival_trace_finish(struct arrival_trace *t);
#endif
