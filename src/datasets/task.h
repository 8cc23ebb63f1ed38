/* task — evaluation datasets: one task per line of a JSONL file (format in
 * datasets/README.md), checked completely before any request is sent.
 *
 * Refused, with "FILE:LINE: what; what to do": malformed JSON, missing or
 * mistyped fields, unknown keys (typos would silently drop tests), duplicate
 * ids, unknown graders, tasks without tests. Every problem in the file is
 * reported, not only the first. The loader does not run anything.
 * struct eval_task is read-only for callers; its strings live as long as the
 * dataset. eval_dataset_destroy accepts NULL. */
#ifndef SIXI_EVAL_TASK_H
#define SIXI_EVAL_TASK_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum eval_grader {
	EVAL_GRADER_PYTHON_TESTS = 0, /* HumanEval/MBPP: assertions run against the solution */
	EVAL_GRADER_STDIO,            /* LiveCodeBench: a program judged on stdin/stdout pairs */
	EVAL_GRADER_BRUTE_FORCE,      /* stdin/stdout compared with a brute-force program on random inputs */
	EVAL_GRADER_NUMERIC,          /* GSM8K: the final number of the answer */
	EVAL_GRADER_CHOICE,           /* multiple choice: one letter */
};
const char *eval_grader_name(enum eval_grader g);

struct eval_task {
	const char *id;
	const char *prompt;
	enum eval_grader grader;
	const char *language;    /* "python" unless given */
	bool reasoning;          /* gets the protocol's reasoning max_tokens */
	const char *tests;       /* python_tests: Python source run after the solution */
	const char *entry_point; /* python_tests: function passed to check() when tests define it; may be NULL */
	const cJSON *cases;      /* stdio: array of {"input","output"} */
	const char *generator;   /* brute_force: Python source defining gen(rng) -> str */
	const char *brute;       /* brute_force: the trusted slow program */
	int64_t n_random;        /* brute_force: inputs per grading (default 40) */
	int64_t seed;            /* brute_force: seed of the input generator (default 1) */
	double answer;           /* numeric */
	double tolerance;        /* numeric: absolute (default 1e-6) */
	char answer_letter;      /* choice: 'A'.. */
	int n_choices;           /* choice */
	const char *reference;   /* a solution (or a reply) that must pass; NULL when the grader derives one */
	const char *const *requires; /* Python modules the grader needs (missing -> environment) */
	int n_requires;
	double timeout_s;        /* CPU seconds per limited run, the floor of the scaled limit (default 10; grade.h) */
	int64_t memory_mb;       /* address space of the sandbox (default 1024) */
	const char *file;        /* where it was read */
	int line;
};

struct eval_dataset;
/* path: a .jsonl file, or a directory holding tasks.jsonl. NULL on error, with
 * every problem (one per line of err) in err. */
struct eval_dataset *eval_dataset_load(const char *path, char *err, size_t errlen);
/* The same from bytes[0..n) in memory; name stands for the file in messages. */
struct eval_dataset *eval_dataset_parse(const char *bytes, size_t n, const char *name, char *err, size_t errlen);
void eval_dataset_destroy(struct eval_dataset *d);
size_t eval_dataset_count(const struct eval_dataset *d);
const struct eval_task *eval_dataset_task(const struct eval_dataset *d, size_t i);
/* NULL when absent. */
const struct eval_task *eval_dataset_find(const struct eval_dataset *d, const char *id);
/* sha256 of the file's bytes: stored with a run so a changed dataset is noticed. */
const char *eval_dataset_sha256(const struct eval_dataset *d);
const char *eval_dataset_path(const struct eval_dataset *d);

/* The order tasks run in, for one repeat: sorted by id, then a Fisher-Yates
 * shuffle driven by splitmix64 seeded from seed and repeat. The same seed gives
 * the same order on every machine, whatever the order of the file; never id
 * order (a first-N slice of a sorted set is biased). Permutes t in place. */
void eval_tasks_shuffle(const struct eval_task **t, size_t n, int64_t seed, int64_t repeat);
#endif
