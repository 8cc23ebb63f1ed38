/* config — one sixi-bench command line as data: the fields its option table
 * (src/sixi-bench.c) sets, their defaults, the checks that need several options
 * together, and the frozen configuration stored with the run (bench_cfg_json),
 * so that what a run was asked to do is written in one place.
 * Strings are borrowed from argv; nothing here allocates except bench_cfg_json. */
#ifndef SIXI_BENCH_CONFIG_H
#define SIXI_BENCH_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bench/bench.h"
#include "bench/workloads.h"
#include "core/args.h"

struct bench_args {
	const char *workload;            /* sweep, prefill, agents, rate, replay, prefix, search, selftest, emitter */
	struct bench_cfg cfg;
	struct args_list concurrency;    /* sweep: levels (default 1,4,16,32) */
	struct args_list prompt_lengths; /* prefill: prompt lengths (default 1000,4000,16000) */
	struct args_list streams;        /* selftest: stream counts (default 1,64,1000) */
	int64_t repeats;                 /* sweep: runs per level; prefill: requests per length; search: per probe */
	struct agents_params agents;
	double rps, duration_s;          /* rate */
	const char *arrival, *ramp;      /* rate, search: as given (bench/arrival.h parses them) */
	const char *trace;               /* rate: a recorded trace instead of --rps */
	double trace_speed;
	struct replay_params replay;
	struct prefix_params prefix;
	struct search_params search;
	const char *prompts, *input_len, *output_len, *slo; /* as given; parsed by bench/source, dist, slo */
	bool metrics;
	int64_t events, tokens_per_event; /* selftest, emitter: the emitter's responses */
	int port;                        /* emitter */
	const char *port_file;
	double lifetime_s;
	int http_engine;                 /* -1: the default; else an index into "native|curl" */
	int log_level;                   /* -1: unchanged; else an enum log_level */
	char url_buf[1024];              /* cfg.url normalised (bench_args_check) */
};

/* Every field's default for the given workload (borrowed). */
void bench_args_defaults(struct bench_args *a, const char *workload);

/* After parsing: fills the lists left empty with their defaults, normalises the URL
 * (no trailing '/' or '/v1'), turns off cached-prompt invalidation where prompts
 * may share prefixes, and checks what needs several options (a URL for every
 * workload but selftest and emitter, --slo --lo --hi for search, --prompts for
 * replay, --rps and --duration or --trace for rate). 0, or -EINVAL with one message. */
int bench_args_check(struct bench_args *a, char *err, size_t errlen);

/* The frozen configuration of the run (the protocol row), as compact JSON text that
 * the caller frees; NULL when out of memory. */
char *bench_cfg_json(const struct bench_args *a);
#endif
