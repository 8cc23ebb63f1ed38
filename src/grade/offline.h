/* offline — grading given completions with no endpoint:
 * `sixi-eval grade DATASET --completions FILE.jsonl`. Each line of the file is
 * {"task_id": ..., "completion": ...} with optional "finish_reason" ("length"
 * marks a cut-off reply). Every line is classified like a run's row (pass,
 * truncated, loop, environment, wrong) and a summary is printed.
 * Bad lines are refused with FILE:LINE before anything is graded. */
#ifndef SIXI_EVAL_OFFLINE_H
#define SIXI_EVAL_OFFLINE_H
#include "grade/grade.h"
#include "datasets/task.h"
#include <stdbool.h>
#include <stdio.h>

/* 0 on success (whatever the grades), -EINVAL on bad input (message in err). */
int offline_grade(struct grader *g, const struct eval_dataset *d, const char *completions_path, double loop_threshold,
		  bool json, FILE *out, char *err, size_t errlen);
#endif
