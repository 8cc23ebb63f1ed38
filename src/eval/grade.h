/* grade — decides whether a completion solves a task.
 *
 * Code graders (python_tests, stdio, brute_force) extract the code (score.h),
 * then run harness/driver.py inside the sandbox (sandbox.h). numeric and
 * choice graders compare the extracted answer here, with no sandbox.
 * A grader that cannot run (no bwrap, no interpreter, a module the task
 * requires is missing, a brute-force program that fails) is an ENVIRONMENT
 * result, never a failure of the model. A run that hits the wall clock is run
 * again once with no other grading in parallel before it counts as a failure.
 *
 * Thread-safe: concurrent grade_* calls share the grader; the re-run of a
 * timeout takes the grader exclusively. Arguments are borrowed. */
#ifndef SIXI_EVAL_GRADE_H
#define SIXI_EVAL_GRADE_H
#include "eval/task.h"
#include <stdbool.h>
#include <stddef.h>

enum grade_status { GRADE_PASS = 0, GRADE_FAIL, GRADE_ENVIRONMENT };

struct grade_result {
	enum grade_status status;
	bool has_code;        /* code graders: a code block (or code-like text) was found */
	bool timed_out;       /* the final verdict came from a timeout */
	bool reran_alone;     /* a first timeout was re-run alone */
	char answer[64];      /* extracted answer (number, letter) or code sha256 prefix, for majority votes */
	char detail[512];     /* why, in one line */
	double seconds;       /* grading wall time */
};

struct grader;
/* harness_dir: folder with driver.py (NULL: $SIXI_HARNESS_DIR, else the source
 * tree's harness/). python: the interpreter the sandbox runs (NULL: /usr/bin/python3).
 * Probes the sandbox once; when it is unusable the grader still works and every
 * code grade is ENVIRONMENT (grader_sandbox_problem says why). NULL on OOM. */
struct grader *grader_create(const char *harness_dir, const char *python);
void grader_destroy(struct grader *g);
/* NULL when the sandbox works, else why not. */
const char *grader_sandbox_problem(const struct grader *g);
const char *grader_python(const struct grader *g);

/* Grades a model reply (code is extracted from it). */
int grade_completion(struct grader *g, const struct eval_task *t, const char *completion, struct grade_result *r);
/* Grades a solution given directly (code graders: the program; others: a reply). */
int grade_solution(struct grader *g, const struct eval_task *t, const char *solution, struct grade_result *r);
/* The reference to check in preflight (the task's, or one derived from its answer). Caller frees. */
char *grade_reference(const struct eval_task *t);
const char *grade_status_name(enum grade_status s);
#endif
