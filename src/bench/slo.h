/* slo — service-level objectives (stats/slo.h, where they are defined) applied to
 * sixi-bench's samples. Arguments are borrowed. */
#ifndef SIXI_BENCH_SLO_H
#define SIXI_BENCH_SLO_H
#include <stddef.h>
#include <stdint.h>
#include "bench/bench.h"
#include "stats/slo.h"

/* One sample's figures (slo_request_from on the sample as a level request). */
void slo_request_of(const struct bench_sample *s, struct slo_request *out);
/* Evaluates the measured samples of `level` in s[0..n) and fills L's slo fields
 * (wall time: L->wall_s). 0, -EINVAL (no sample of the level) or -ENOMEM. */
__attribute__((warn_unused_result)) int slo_level_apply(const struct slo *slo, const struct bench_sample *s, size_t n,
							 int64_t level, struct bench_level *L);
#endif
