/* dataset_cmd — `sixi-eval dataset check PATH`: validates a dataset and
 * prints what it holds.
 *
 * PATH is a tasks file (.jsonl), a folder with tasks.jsonl, or a folder of
 * tool-call sets (datasets/gates/). Checked: the task schema, unique ids and
 * that every task has tests (the loader, task.h), that every Python source
 * parses (tests, reference, generator, brute force; compiled, never run), a
 * tool-call set's schemas and expected calls (toolcall.h), that mutants.jsonl
 * (when present) names only tasks of the set, and that the set's README.md
 * states its licence on a line starting "LICENSE:". Printed: size (tasks,
 * graders, difficulty labels, bytes, sha256) and the licence line. Nothing is
 * sent to a server and no model code runs; `sixi-eval preflight` runs the
 * references. */
#ifndef SIXI_EVAL_DATASET_CMD_H
#define SIXI_EVAL_DATASET_CMD_H

/* argv[0] is "dataset". Exit status: 0 valid, 1 invalid, 2 usage. */
int dataset_cmd_main(int argc, char **argv);
#endif
