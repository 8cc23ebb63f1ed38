/* selftest — the client's own ceiling on this machine: streams, events/s and
 * tokens/s against the built-in emitter, and memory per stream. Stored as a run of
 * workload 'selftest'; later sweeps report their headroom against it. */
#ifndef SIXI_BENCH_SELFTEST_H
#define SIXI_BENCH_SELFTEST_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bench/bench.h"

struct selftest_params {
	const int64_t *streams;   /* concurrency levels */
	size_t n_streams;
	int64_t events;           /* events per response */
	int64_t tokens_per_event;
	const char *url;          /* an emitter already running elsewhere (sixi-bench emitter); NULL: built-in */
};

int selftest_run(const struct bench_cfg *cfg, const struct selftest_params *p, FILE *out, char *err, size_t errlen);
#endif
