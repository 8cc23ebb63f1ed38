/* gate — a release gate: a few fixed checks against one endpoint, each with a
 * pass threshold, and one PASS/FAIL line per check (in the spirit of "GSM8K
 * 28/30, HumanEval 19/20, tool calls, needle").
 *
 * A gate protocol is a JSON file (protocols/gate.json; keys in
 * protocols/README-gate.md) listing gates of three kinds:
 *   dataset    — N tasks of a sixi dataset (deterministic shuffled order),
 *                graded by the dataset's own grader (grade.h);
 *   tool_calls — a tool-call set (toolcall.h): the reply must be a structured
 *                call whose arguments validate against the tool's schema;
 *   needle     — needle-in-a-haystack prompts (needle.h) at each context
 *                length and depth.
 * A gate passes when at least min_passed items (or the fraction min_rate)
 * pass. Requests are chat completions sent one at a time, streamed; a
 * request that fails (connect, HTTP error, timeout) counts against its gate
 * and is reported as an API error, never silently dropped. The gate does not
 * store rows in the results database: it is a go/no-go check; a comparison
 * of models is a `sixi-eval run`.
 *
 * The protocol is checked completely (unknown keys, types, ranges, thresholds
 * larger than the gate, missing files, unloadable datasets) before the first
 * request. Arguments are borrowed. */
#ifndef SIXI_EVAL_GATE_H
#define SIXI_EVAL_GATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gate_protocol;
/* NULL with a message in err. Relative paths in it are resolved against the
 * folder of path; datasets and tool-call sets are loaded (and checked) here. */
struct gate_protocol *gate_protocol_load(const char *path, char *err, size_t errlen);
void gate_protocol_destroy(struct gate_protocol *p);
int gate_protocol_count(const struct gate_protocol *p);
const char *gate_protocol_gate_name(const struct gate_protocol *p, int i);

struct gate_overrides {
	const char *url;       /* endpoint (base URL); NULL: the protocol's */
	const char *model;     /* NULL: the protocol's */
	const char *only;      /* run only the gate of this name; NULL: all */
	int64_t needle_seed;   /* < 0: the protocol's seed, else one from the clock (printed) */
	bool json;             /* one JSON object on out instead of lines */
};

/* Runs the gates, printing "PASS NAME: ..." or "FAIL NAME: ..." per gate and a
 * last line "gate PROTOCOL: PASS|FAIL (k of n gates passed)". *all_passed is
 * set. 0 when the gates ran (passed or not), -errno with err when they could
 * not (bad override, unknown --only name, OOM). */
int gate_run(const struct gate_protocol *p, const struct gate_overrides *o, FILE *out, bool *all_passed, char *err,
	     size_t errlen);

/* `sixi-eval gate ...`: argument parsing for the command (see its --help). */
int gate_cmd_main(int argc, char **argv);
#endif
