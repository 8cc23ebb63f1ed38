/* slo — see slo.h. */
#include "bench/slo.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sample as the level's one definition reads it (stats/level.h). */
static struct level_request as_level_request(const struct bench_sample *x)
{
	return (struct level_request){
		.stream = x->stream, .prompt_tokens = x->prompt_tokens, .cached_tokens = x->cached_tokens,
		.completion_tokens = x->completion_tokens, .requested_tokens = x->requested_tokens,
		.sse_events = x->sse_events, .token_events = x->token_events, .t_intended = x->t_intended,
		.t_send = x->t_send, .t_first_token = x->t_first_token, .t_last = x->t_last, .t_done = x->t_done,
		.error = x->error, .gaps_ms = x->gaps_ms, .n_gaps = x->n_gaps,
	};
}

void slo_request_of(const struct bench_sample *x, struct slo_request *r)
{
	struct level_request q = as_level_request(x);
	slo_request_from(&q, r);
}

int slo_level_apply(const struct slo *slo, const struct bench_sample *s, size_t n, int64_t level, struct bench_level *L)
{
	struct slo_request *r = malloc((n ? n : 1) * sizeof *r);
	if (!r)
		return -ENOMEM;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i].level == level && strcmp(s[i].phase, "measure") == 0)
			slo_request_of(&s[i], &r[m++]);
	struct slo_level v;
	int rc = slo_level_eval(slo, r, m, L->wall_s, &v);
	free(r);
	if (rc)
		return rc;
	L->has_slo = true;
	L->slo_scheduled = v.scheduled;
	L->slo_good = v.good;
	L->slo_attainment = v.attainment;
	L->slo_low = v.low;
	L->slo_high = v.high;
	L->goodput_rps = v.goodput_rps;
	L->slo_level_met = v.level_terms_met;
	snprintf(L->slo_failed, sizeof L->slo_failed, "%s", v.failed);
	return 0;
}
