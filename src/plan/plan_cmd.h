/* plan_cmd — the `sixi-bench plan` command: sizes a model's KV cache and recurrent-state
 * pool for a workload and prints the breakdown and the vLLM, SGLang and llama.cpp
 * settings that fit (see README "sixi-bench plan").
 *
 * argv[0] is "plan"; arguments are borrowed. Writes the report to stdout and one error
 * line to stderr. Returns the exit code: 0 the workload fits (or no --memory was given),
 * 1 it does not fit the memory given (the settings that would fit are printed, or that
 * nothing fits), 2 bad arguments or an unusable model file. */
#ifndef SIXI_PLAN_PLAN_CMD_H
#define SIXI_PLAN_PLAN_CMD_H

int plan_cmd_main(int argc, char **argv);
#endif
