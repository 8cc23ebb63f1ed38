/* export — `sixi-report export`: one level of a bench run written in another load
 * generator's file format, every number computed from the stored timestamps of
 * bench_requests by that tool's own definition (sixi(7), "How other load
 * generators define the same figures"), so a sixi run can be read by the tools
 * and dashboards built for them, and compared with their runs on their terms.
 *
 * Formats:
 *   vllm    the JSON of vLLM's `bench serve --save-result` (benchmark_serving.py):
 *           run facts, duration, completed, token totals, throughputs, mean /
 *           median / std / p99 of TTFT, TPOT, ITL and E2EL in ms, and the
 *           per-request arrays input_lens, output_lens, ttfts, itls, errors and
 *           generated_texts (null: sixi-bench does not keep the reply text).
 *   aiperf  the CSV of AIPerf's profile_export_aiperf.csv: one row per record
 *           metric (avg, min, max, p1 ... p99, std), then the run's throughputs.
 *   guidellm the CSV of GuideLLM's benchmarks.csv: three header rows (group,
 *           field, unit or statistic), one row per level (GuideLLM's benchmark).
 * A run with several levels (or repeats) is exported one level (one repeat) at a
 * time, as a file of vLLM or AIPerf describes one load; GuideLLM's takes every
 * level of one repeat. Nothing is written unless the
 * whole file could be computed (FILE.tmp, then renamed).
 * Reads the DB only. Arguments are borrowed. */
#ifndef SIXI_REPORT_EXPORT_H
#define SIXI_REPORT_EXPORT_H
#include <stddef.h>
#include <stdio.h>

/* `sixi-report export` as typed (argv after the command word). The file goes to
 * --out, or to out when none is named. 0; ARGS_HELP after printing the help to
 * out; -EINVAL (bad input: err says what and what to do) or another -errno. */
__attribute__((warn_unused_result)) int report_export_cli(int argc, char **argv, FILE *out, char *err,
							  size_t errlen);
#endif
