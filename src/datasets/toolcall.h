/* toolcall — tool-call sets for the release gate: prompts whose answer must be
 * a structured call of one of the offered tools, with arguments that validate
 * against the tool's JSON schema (jschema.h subset) and carry the expected
 * values.
 *
 * A set is a JSONL file (datasets/gates/README.md), one case a line:
 *   {"id": ..., "prompt": ..., "tools": [OpenAI function tools],
 *    "expect": {"name": TOOL, "arguments": {KEY: VALUE, ...}}}
 * The loader refuses, naming FILE:LINE, what would make a case ungradeable:
 * not JSON, unknown keys, duplicate ids, a tool without a name or with a
 * schema outside the subset, an expected tool that is not offered, expected
 * arguments that do not validate against the tool's own schema. It runs
 * nothing. Strings of a case live as long as the set; arguments are borrowed. */
#ifndef SIXI_EVAL_TOOLCALL_H
#define SIXI_EVAL_TOOLCALL_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct toolcall_case {
	const char *id;
	const char *prompt;
	const cJSON *tools;       /* the array sent as the request's "tools" */
	const char *expect_name;
	const cJSON *expect_args; /* object: values the call must carry (strings case-insensitive) */
	const cJSON *schema;      /* parameters schema of the expected tool */
	int line;
};

struct toolcall_set;
/* NULL with every problem (one per line) in err. */
struct toolcall_set *toolcall_set_load(const char *path, char *err, size_t errlen);
void toolcall_set_destroy(struct toolcall_set *s);
size_t toolcall_set_count(const struct toolcall_set *s);
const struct toolcall_case *toolcall_set_case(const struct toolcall_set *s, size_t i);

/* Grades one call: name and arguments as the server returned them (arguments
 * as JSON text, as OpenAI sends them). true when the name is the expected
 * one, the arguments parse as a JSON object, validate against the tool's
 * schema and carry the expected values; else false with why. */
bool toolcall_grade(const struct toolcall_case *c, const char *name, const char *arguments, char *why, size_t whylen);

/* A call written as text, for servers without a tool-call parser: a JSON
 * object {"name": ..., "arguments": {...}} in the reply, bare, in a code
 * block or between <tool_call> tags (the last one wins). On success *name
 * and *arguments are malloc'd (the caller frees); false when there is none. */
bool toolcall_from_text(const char *reply, char **name, char **arguments);
#endif
