/* grade — decides whether a completion solves a task.
 *
 * Code graders (python_tests, stdio, brute_force) extract the code (score.h),
 * then run harness/driver.py inside the sandbox (sandbox.h). numeric and
 * choice graders compare the extracted answer here, with no sandbox.
 * A grader that cannot run (no bwrap, no interpreter, a module the task
 * requires is missing, a brute-force program that fails) is an ENVIRONMENT
 * result, never a failure of the model.
 *
 * The verdict of a code grader comes from harness/driver.py, which runs the
 * tests outside the candidate's process and compares plain data
 * (harness/README.md says what that guarantees). Limits are CPU seconds:
 * max(task timeout_s, 4 x the reference's CPU time measured by preflight),
 * with a wall-clock backstop; a job the machine starved of CPU (driver status
 * "overloaded") is run once more alone, and if it is starved again it is an
 * ENVIRONMENT result, not a failure.
 *
 * Thread-safe: concurrent grade_* calls share the grader; the re-run of a
 * starved job takes the grader exclusively; grader_set_reference_cpu and
 * grader_limits_load are called before grading starts. Arguments are borrowed. */
#ifndef SIXI_EVAL_GRADE_H
#define SIXI_EVAL_GRADE_H
#include "core/json.h"
#include "datasets/task.h"
#include <stdbool.h>
#include <stddef.h>

enum grade_status { GRADE_PASS = 0, GRADE_FAIL, GRADE_ENVIRONMENT };

struct grade_result {
	enum grade_status status;
	bool has_code;        /* code graders: a code block (or code-like text) was found */
	bool timed_out;       /* the final verdict came from a timeout (CPU limit, or idle past the backstop) */
	bool reran_alone;     /* a first run starved of CPU was re-run alone */
	double cpu_s;         /* CPU seconds of the candidate (its largest limited run) */
	double cpu_limit_s;   /* the CPU limit it ran under */
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
/* The CPU limit of t's runs: max(t->timeout_s, 4 x its recorded reference CPU). */
double grader_cpu_limit(const struct grader *g, const struct eval_task *t);
/* Records the reference's measured CPU seconds for task_id (preflight does). */
__attribute__((warn_unused_result)) int grader_set_reference_cpu(struct grader *g, const char *task_id, double cpu_s);
/* The recorded references' CPU seconds and the rule, to store with a run (caller frees), and back. */
cJSON *grader_limits_json(const struct grader *g);
__attribute__((warn_unused_result)) int grader_limits_load(struct grader *g, const cJSON *limits);
/* The reference to check in preflight (the task's, or one derived from its answer). Caller frees. */
char *grade_reference(const struct eval_task *t);
const char *grade_status_name(enum grade_status s);
#endif
