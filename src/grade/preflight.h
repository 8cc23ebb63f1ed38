/* preflight — checks a dataset and the grading sandbox before any request:
 * each task's reference must pass and an empty solution must fail, and five
 * sandbox canaries (open a socket, write outside the work folder, fork bomb,
 * allocate 10 GB, sleep forever) must be contained while the harness keeps
 * running. Failing tasks are named with the reason; runs leave them out.
 * Each passing reference's CPU time is recorded in the grader, which scales
 * that task's CPU limit from it (grade.h).
 * Arguments are borrowed; the report's arrays are freed by preflight_finish. */
#ifndef SIXI_EVAL_PREFLIGHT_H
#define SIXI_EVAL_PREFLIGHT_H
#include "grade/grade.h"
#include "datasets/task.h"
#include <stdbool.h>
#include <stdio.h>

struct preflight_report {
	int passed, failed;      /* checks: tasks (2 each) and canaries */
	char **excluded;         /* ids of tasks that failed a check */
	int n_excluded;
	bool sandbox_ok;         /* canaries contained (false also when not run) */
};

/* Prints one line per check to out (NULL: quiet), then "N passed, M failed".
 * canaries=false skips the sandbox canaries (runs check tasks only). */
int preflight_run(struct grader *g, const struct eval_dataset *d, bool canaries, FILE *out,
		  struct preflight_report *rep);
void preflight_finish(struct preflight_report *rep);
bool preflight_is_excluded(const struct preflight_report *rep, const char *id);

/* The canaries, exposed for the tests: count, name, and a run of one. Returns
 * true when contained; detail says what happened. */
int preflight_canary_count(void);
const char *preflight_canary_name(int i);
bool preflight_canary_run(struct grader *g, int i, char *detail, size_t detail_len);
#endif
