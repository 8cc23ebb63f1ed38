/* sixi-eval — pass/fail evaluation runs: argument parsing and wiring only.
 * The work is in src/eval/ (datasets, protocols, scoring, grading, runs). */
#include "core/log.h"
#include "eval/grade.h"
#include "eval/offline.h"
#include "eval/preflight.h"
#include "eval/task.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: sixi-eval COMMAND ...\n"
	"  preflight DATASET [--no-canaries]      reference passes, empty fails, sandbox canaries contained\n"
	"  grade DATASET --completions FILE.jsonl [--loop-threshold PCT] [--json]\n"
	"                                         grade given completions offline\n"
	"DATASET is a .jsonl file or a folder with tasks.jsonl (format: datasets/README.md).\n";

static int cmd_preflight(int argc, char **argv)
{
	const char *dataset = NULL;
	bool canaries = true;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-canaries") == 0)
			canaries = false;
		else if (argv[i][0] != '-' && !dataset)
			dataset = argv[i];
		else {
			fprintf(stderr, "sixi-eval preflight: unknown argument '%s'\n%s", argv[i], usage);
			return 2;
		}
	}
	if (!dataset) {
		fprintf(stderr, "sixi-eval preflight: give a DATASET\n%s", usage);
		return 2;
	}
	char err[8192];
	struct eval_dataset *d = eval_dataset_load(dataset, err, sizeof err);
	if (!d) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	struct grader *g = grader_create(NULL, NULL);
	if (!g) {
		eval_dataset_destroy(d);
		fprintf(stderr, "sixi-eval: out of memory\n");
		return 1;
	}
	if (grader_sandbox_problem(g))
		fprintf(stdout, "sandbox unusable: %s\n", grader_sandbox_problem(g));
	struct preflight_report rep;
	int rc = preflight_run(g, d, canaries, stdout, &rep);
	int failed = rep.failed;
	preflight_finish(&rep);
	grader_destroy(g);
	eval_dataset_destroy(d);
	return rc || failed ? 1 : 0;
}

static int cmd_grade(int argc, char **argv)
{
	const char *dataset = NULL, *completions = NULL;
	double loop_threshold = 50;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--completions") == 0 && i + 1 < argc)
			completions = argv[++i];
		else if (strcmp(argv[i], "--loop-threshold") == 0 && i + 1 < argc)
			loop_threshold = atof(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] != '-' && !dataset)
			dataset = argv[i];
		else {
			fprintf(stderr, "sixi-eval grade: unknown argument '%s'\n%s", argv[i], usage);
			return 2;
		}
	}
	if (!dataset || !completions) {
		fprintf(stderr, "sixi-eval grade: give a DATASET and --completions FILE.jsonl\n%s", usage);
		return 2;
	}
	char err[8192];
	struct eval_dataset *d = eval_dataset_load(dataset, err, sizeof err);
	if (!d) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	struct grader *g = grader_create(NULL, NULL);
	if (g && grader_sandbox_problem(g))
		fprintf(stderr, "sixi-eval: warning: %s; code tasks are graded as environment failures\n",
			grader_sandbox_problem(g));
	int rc = g ? offline_grade(g, d, completions, loop_threshold, json, stdout, err, sizeof err) : -1;
	if (rc)
		fprintf(stderr, "sixi-eval: %s\n", g ? err : "out of memory");
	grader_destroy(g);
	eval_dataset_destroy(d);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	log_set_program("sixi-eval");
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "preflight") == 0)
		return cmd_preflight(argc - 1, argv + 1);
	if (strcmp(cmd, "grade") == 0)
		return cmd_grade(argc - 1, argv + 1);
	fprintf(stderr, "sixi-eval: unknown command '%s'\n%s", cmd, usage);
	return 2;
}
