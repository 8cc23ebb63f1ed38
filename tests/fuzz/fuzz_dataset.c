/* fuzz_dataset — libFuzzer target for the dataset loader (src/datasets/task.c):
 * arbitrary bytes as a JSONL dataset, every line parsed and checked. Beyond
 * "no crash": a refused dataset has a message naming a line; an accepted one
 * has at least one task, every task has a valid id, a prompt and a known
 * grader, is found by its id, and the same bytes parse to the same tasks a
 * second time; the seeded shuffle is a permutation. */
#include "datasets/task.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_dataset"
#include "fuzz_check.h"
#define CHECK(ok, why) FUZZ_CHECK_ON(ok, why, data, size)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1 << 16))
		return 0;
	char err[4096] = "";
	struct eval_dataset *d = eval_dataset_parse((const char *)data, size, "fuzz.jsonl", err, sizeof err);
	if (!d) {
		CHECK(err[0] && strstr(err, "fuzz.jsonl"), "refused without a message naming the file");
		return 0;
	}
	size_t n = eval_dataset_count(d);
	CHECK(n >= 1, "accepted with no tasks");
	const struct eval_task **order = malloc(n * sizeof *order);
	CHECK(order != NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct eval_task *t = eval_dataset_task(d, i);
		CHECK(t && t->id && t->id[0] && t->prompt, "a task without id or prompt");
		CHECK(t->grader >= EVAL_GRADER_PYTHON_TESTS && t->grader <= EVAL_GRADER_CHOICE &&
			      eval_grader_name(t->grader) != NULL,
		      "unknown grader");
		CHECK(eval_dataset_find(d, t->id) == t, "a task is not found by its id");
		CHECK(t->line >= 1, "a task without a line number");
		order[i] = t;
	}
	CHECK(eval_dataset_task(d, n) == NULL, "a task past the end");
	eval_tasks_shuffle(order, n, 7, 1);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			CHECK(order[i] != order[j], "the shuffle is not a permutation");
	free(order);
	struct eval_dataset *d2 = eval_dataset_parse((const char *)data, size, "fuzz.jsonl", err, sizeof err);
	CHECK(d2 && eval_dataset_count(d2) == n && strcmp(eval_dataset_sha256(d), eval_dataset_sha256(d2)) == 0,
	      "the same bytes parsed differently");
	for (size_t i = 0; i < n; i++)
		CHECK(strcmp(eval_dataset_task(d, i)->id, eval_dataset_task(d2, i)->id) == 0, "ids differ on a re-parse");
	eval_dataset_destroy(d2);
	eval_dataset_destroy(d);
	return 0;
}
