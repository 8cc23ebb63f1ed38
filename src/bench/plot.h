/* plot — gnuplot plots of a bench run, rendered by gnuplot run as a process.
 * Writes DATA (.dat), the script (.gp) and both PNG and SVG beside the database
 * (or in --plot-dir). Without gnuplot it says how to get it and returns; the
 * tables and rows never depend on plotting. */
#ifndef SIXI_BENCH_PLOT_H
#define SIXI_BENCH_PLOT_H
#include <stddef.h>
#include <stdio.h>
#include "bench/bench.h"

/* Throughput and per-stream tok/s vs concurrency. Returns 0 when plots were written. */
int plot_sweep(struct bench *b, const struct bench_level *l, size_t n, FILE *msg);
/* TTFT and prefill rate vs prompt length. */
int plot_prefill(struct bench *b, const struct bench_level *l, size_t n, FILE *msg);
#endif
