/* slo — service-level objectives for a level of requests: parsing, the per-request
 * verdict, attainment with its Wilson interval, goodput.
 *
 * Syntax (--slo): comma-separated terms NAME=VALUE, VALUE a number with a unit
 * (us, ms or s; a bare number is refused). NAME is one of
 *   ttft   time to first token, from the intended send time (open loop) or the send
 *   tpot   (t_last - t_first_token) / (completion_tokens - 1), the request's mean
 *   itl    the request's longest gap between tokens (an event's gap / its tokens)
 *   e2e    from the intended send time to the last byte
 * A plain NAME is per request: a request is good when it succeeded and meets every
 * per-request term. NAME_pP (ttft_p99=2s, itl_p90=80ms) is a level term: the P-th
 * percentile over the level's successful requests must be within VALUE; it says
 * whether the level passes, not whether a request is good.
 * Attainment = good / all requests the level scheduled (errors and requests never
 * sent count as misses); its 95 % interval is Wilson's (stats_wilson). Goodput =
 * good requests per second of the level's wall time (vLLM's --goodput).
 * Defined here, beside the level's other figures (stats/level.h), so that
 * sixi-bench's live summary and sixi-report compute the same verdicts; bench/slo.h
 * applies them to sixi-bench's samples.
 * Arguments are borrowed. */
#ifndef SIXI_STATS_SLO_H
#define SIXI_STATS_SLO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "stats/level.h"

enum slo_metric { SLO_TTFT, SLO_TPOT, SLO_ITL, SLO_E2E };
#define SLO_MAX_TERMS 8

struct slo_term {
	enum slo_metric metric;
	double pct;          /* 0: per request; else the level's percentile (0 < pct <= 100) */
	double limit_ms;
};

struct slo {
	struct slo_term t[SLO_MAX_TERMS];
	size_t n;
	char text[256];      /* as given */
};

/* 0 or -EINVAL with a message naming the term, its position and the expected form. */
__attribute__((warn_unused_result)) int slo_parse(const char *s, struct slo *out, char *err, size_t errlen);

/* One request's figures in ms (NaN when they do not exist, e.g. one token: no tpot). */
struct slo_request {
	bool ok;             /* succeeded with at least one token */
	double ttft_ms, tpot_ms, itl_max_ms, e2e_ms;
};
void slo_request_from(const struct level_request *x, struct slo_request *out);
/* Per-request terms only; a failed request never meets. A missing figure (NaN)
 * meets its term only when the term cannot apply (tpot and itl of a one-token reply). */
bool slo_request_meets(const struct slo *slo, const struct slo_request *r);

struct slo_level {
	int64_t scheduled, good;
	double attainment, low, high;   /* good / scheduled, Wilson 95 % */
	double goodput_rps;
	bool level_terms_met;           /* every percentile term holds */
	char failed[192];               /* which percentile terms failed, "" if none */
};
/* Evaluates n requests (all the level scheduled) over wall_s seconds.
 * 0, -EINVAL (scheduled = 0) or -ENOMEM. */
__attribute__((warn_unused_result)) int slo_level_eval(const struct slo *slo, const struct slo_request *r, size_t n,
							double wall_s, struct slo_level *out);
#endif
