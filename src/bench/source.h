/* source — prompt sets read from files, as conversations.
 *
 * Accepted inputs (told apart by the path and the first byte):
 *   - a ShareGPT JSON file: an array of {"conversations": [{"from": "human"|"gpt"|
 *     "system", "value": TEXT}, ...]}; every turn is kept, in order;
 *   - JSONL: one record per line, each either a ShareGPT record, {"messages":
 *     [{"role": "system"|"user"|"assistant", "content": TEXT}, ...]} or {"prompt": TEXT};
 *     a JSON array of such records is read the same way;
 *   - an eval dataset folder (DIR/tasks.jsonl, datasets/README.md): each task's "prompt".
 * A record that is malformed (a field of the wrong type, an unknown role) stops the
 * load with "FILE:LINE: ...; expected ..." naming the record's first line; records
 * with no user turn at all are skipped and counted (public ShareGPT dumps hold some).
 * The dataset's own assistant turns are kept for reference; replaying sends the
 * model's replies in their place. Everything is read before any request is sent.
 * Arguments are borrowed; struct source is owned by the caller (source_destroy). */
#ifndef SIXI_BENCH_SOURCE_H
#define SIXI_BENCH_SOURCE_H
#include <stddef.h>
#include <stdint.h>

enum source_role { SOURCE_SYSTEM, SOURCE_USER, SOURCE_ASSISTANT };

struct source_msg {
	enum source_role role;
	char *text;           /* owned, NUL-terminated UTF-8 */
};

struct source_conv {
	struct source_msg *m; /* (n) */
	size_t n;
	long line;            /* first line of the record in the file */
};

struct source {
	struct source_conv *c; /* (n) conversations with at least one user turn */
	size_t n;
	size_t skipped;        /* records without a user turn */
	char path[1024];
};

/* NULL with err set ("FILE:LINE: ..."), errno EINVAL, ENOENT or ENOMEM. */
struct source *source_load(const char *path, char *err, size_t errlen);
void source_destroy(struct source *s);
/* Number of user turns of c. */
size_t source_user_turns(const struct source_conv *c);
/* The text of c's first user turn (a single-request workload's prompt), with the
 * system message, if any, before it and a blank line between. Caller frees. */
char *source_first_prompt(const struct source_conv *c);
const char *source_role_name(enum source_role r);
#endif
