/* db — opening the results DB for reading reports, with the refusals every
 * report shares: a missing file, an empty DB, an unknown run or one of the wrong
 * kind. Nothing here writes rows; store_open() may migrate an older schema.
 * Arguments are borrowed; the store is the caller's to close. */
#ifndef SIXI_REPORT_DB_H
#define SIXI_REPORT_DB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* Opens an existing DB that holds at least one run; NULL with a message otherwise. */
struct store *report_db_open(const char *path, char *err, size_t errlen);

struct report_run {
	int64_t id;
	char kind[16];
	char workload[64];
	char model[256];
	char status[32];
	char started[40];
	char *protocol_json; /* owned: free() */
	char config_hash[65];
	char memory_warning[1024]; /* host_facts.memory.warning when the run started: other servers
				      holding memory, little memory available; "" when none */
};
/* Looks up run id of the given kind ("eval" or "bench"); -ENOENT / -EINVAL with a
 * message naming the runs that do exist. */
__attribute__((warn_unused_result)) int report_db_run(struct store *s, int64_t id, const char *kind,
						      struct report_run *out, char *err, size_t errlen);
void report_run_finish(struct report_run *r);

struct store_bench_read;
struct level_request;
/* A stored bench row as the one definition of the serving figures reads it (stats/level.h):
 * error strings outside the known classes read as "other"; the per-event gaps are not read.
 * The result borrows x's strings. */
struct level_request report_level_request(const struct store_bench_read *x);
/* Whether a bench run promised unique prompts (a cached prompt token then makes a level
 * invalid): its protocol's unique_prompts, else true for the workloads that promise it
 * (sweep, prefill, rate). */
bool report_run_unique_prompts(const char *workload, const char *protocol_json);

#endif
