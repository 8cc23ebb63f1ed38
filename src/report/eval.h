/* eval — `sixi-report compare`: two eval runs side by side, computed from eval_rows.
 *
 * Pooled (pass counts, Wilson per condition, Fisher), paired over tasks (McNemar
 * on tasks solved in any repeat, sign test on per-task pass rates across
 * repeats, paired bootstrap of the difference), run to run (each repeat's rate,
 * mean +- sd, Welch), failure classes and tokens. A task's outcome in one repeat
 * is its last attempt; attempts ending in api_error or environment are not the
 * model's failures and are left out of every rate (they are counted). Runs with
 * different task sets are refused unless intersect is set. Runs may differ in
 * what a condition is (model, endpoint, template, sampling, server, client
 * timeouts): the header names each nested key with both values. Runs whose
 * frozen configurations differ in datasets' contents, analysis, repeats or
 * budgets (attempts, max_tokens, loop_stop) are refused, naming the nested
 * key, unless allow_config_diff is set. Tests the protocol pre-registered come first.
 * Reads the DB only. Arguments are borrowed. */
#ifndef SIXI_REPORT_EVAL_H
#define SIXI_REPORT_EVAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct report_doc;

struct report_compare_opts {
	const char *db;
	int64_t run_a, run_b;
	bool intersect;
	bool allow_config_diff;
	uint64_t seed;      /* bootstrap */
	int64_t resamples;  /* bootstrap */
};

/* Parses compare's own arguments (--db DB RUN_A RUN_B [--intersect]
 * [--allow-config-diff] [--seed N] [--resamples N]); unknown ones are errors. */
__attribute__((warn_unused_result)) int report_compare_args(int argc, char **argv, struct report_compare_opts *o,
							    char *err, size_t errlen);
/* Fills doc; on refusal (empty DB, unknown run, task sets, configuration) returns
 * -EINVAL with one message in err and leaves doc partly filled (not to be rendered). */
__attribute__((warn_unused_result)) int report_compare_build(const struct report_compare_opts *o,
							     struct report_doc *doc, char *err, size_t errlen);
#endif
