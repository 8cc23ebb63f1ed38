/* import — turns a public benchmark file into a sixi dataset folder:
 * `sixi-eval import --format humaneval|mbpp|gsm8k FILE` writes
 * datasets/NAME/tasks.jsonl under the current directory (NAME: the file's name
 * without extension, or --name). The new file is checked with the dataset
 * loader before it replaces anything, so a bad input leaves nothing behind.
 * Formats: humaneval (task_id, prompt, canonical_solution, test, entry_point),
 * mbpp (task_id, text, code, test_list[, test_setup_code]), gsm8k (question,
 * answer ending in "#### N"). Arguments are borrowed. */
#ifndef SIXI_EVAL_IMPORT_H
#define SIXI_EVAL_IMPORT_H
#include <stdbool.h>
#include <stddef.h>

/* 0 with *n_tasks and out_path (the tasks.jsonl written) set, or -errno with err. */
int eval_import(const char *format, const char *path, const char *name, bool force, char *out_path,
		size_t out_len, size_t *n_tasks, char *err, size_t errlen);
#endif
