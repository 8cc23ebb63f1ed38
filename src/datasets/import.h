/* import — turns a public benchmark file into a sixi dataset folder:
 * `sixi-eval import --format F FILE [--name NAME] [--out DIR] [--force]`
 * writes DIR/NAME/tasks.jsonl and DIR/NAME/README.md (DIR: datasets under the
 * current directory; NAME: the file's name up to its first dot, or --name).
 *
 * Formats (fields and conversions in datasets/FORMATS.md): humaneval,
 * humaneval+ (EvalPlus: base_input and plus_input checked against the
 * canonical solution), mbpp and mbpp-sanitized (JSONL or a JSON array),
 * gsm8k, livecodebench (stdin/stdout and functional tests, private tests
 * plain or compressed), bigcodebench (unittest classes), aime (integer
 * answers). Any file may be gzip-compressed (.gz, read through zlib).
 *
 * All or nothing: the whole input is read and converted into a temporary
 * folder, the result is checked with the dataset loader and every Python
 * source is compiled (never run), and only then renamed into place. A wrong
 * format flag, a file of another format ("it looks like gsm8k"), a damaged or
 * truncated gzip stream, a line that is not JSON (FILE:LINE), a task whose
 * tests are missing or do not parse: one message, nothing written.
 * Arguments are borrowed. */
#ifndef SIXI_EVAL_IMPORT_H
#define SIXI_EVAL_IMPORT_H
#include <stdbool.h>
#include <stddef.h>

/* Into datasets/NAME under the current directory. 0 with *n_tasks and
 * out_path (the tasks.jsonl written) set, or -errno with err. */
int eval_import(const char *format, const char *path, const char *name, bool force, char *out_path,
		size_t out_len, size_t *n_tasks, char *err, size_t errlen);
/* The same into out_dir/NAME (out_dir NULL: "datasets"). */
int eval_import_to(const char *format, const char *path, const char *name, const char *out_dir, bool force,
		   char *out_path, size_t out_len, size_t *n_tasks, char *err, size_t errlen);
/* The format names, comma-separated, for messages. */
const char *eval_import_formats(void);

/* Compiles (never runs) every Python source of a tasks file with
 * /usr/bin/python3: tests, reference, generator and brute of code tasks.
 * Problems are named "SHOWN:LINE" (LINE: metadata.source_line when the task
 * has one, else the line in the file). 0, -EINVAL with the problems in err,
 * or -ENOENT when the interpreter cannot be started (err says so). */
int eval_import_python_check(const char *tasks_path, const char *shown_as, char *err, size_t errlen);

/* `sixi-eval import ...` (argv[0] is "import"): 0 done, 1 refused, 2 usage. */
int import_cmd_main(int argc, char **argv);
#endif
