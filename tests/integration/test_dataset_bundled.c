/* test_dataset_bundled — the bundled sets hold up under the real grader:
 * every reference passes and every empty answer fails (preflight, in the
 * bubblewrap sandbox), and for datasets/sixi-code at least 90 % of the stored
 * mutants (plausible wrong solutions in mutants.jsonl) fail. Prints the
 * mutation rate. For the tool-call set, the same two checks without a
 * sandbox: each expected call passes its own grading and an empty reply or
 * a call of another offered tool fails. SKIPs (code) when the sandbox cannot
 * run here.
 *
 *   test_dataset_bundled [code|math|gates]   (default: all) */
#include "core/json.h"
#include "grade/grade.h"
#include "grade/preflight.h"
#include "datasets/task.h"
#include "datasets/toolcall.h"
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_preflight(struct grader *g, const char *rel)
{
	char err[8192];
	struct eval_dataset *d = eval_dataset_load(test_src_path(rel), err, sizeof err);
	if (!CHECK(d != NULL)) {
		fprintf(stderr, "%s: %s\n", rel, err);
		return;
	}
	struct preflight_report rep;
	CHECK_EQ_INT(preflight_run(g, d, false, NULL, &rep), 0);
	printf("%s: %zu tasks, preflight %d passed, %d failed\n", rel, eval_dataset_count(d), rep.passed,
	       rep.failed);
	CHECK_EQ_INT(rep.failed, 0);
	CHECK_EQ_INT(rep.passed, 2 * (int)eval_dataset_count(d));
	for (int i = 0; i < rep.n_excluded; i++)
		fprintf(stderr, "%s: excluded %s\n", rel, rep.excluded[i]);
	preflight_finish(&rep);
	eval_dataset_destroy(d);
}

static void check_mutants(struct grader *g)
{
	char err[8192];
	struct eval_dataset *d = eval_dataset_load(test_src_path("datasets/sixi-code"), err, sizeof err);
	if (!CHECK(d != NULL))
		return;
	FILE *f = fopen(test_src_path("datasets/sixi-code/mutants.jsonl"), "r");
	if (!CHECK(f != NULL)) {
		eval_dataset_destroy(d);
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	int total = 0, failed = 0, env = 0;
	int *per_task = calloc(eval_dataset_count(d), sizeof *per_task);
	while (getline(&line, &cap, f) > 0) {
		cJSON *m = json_parse_n(line, strlen(line), err, sizeof err);
		const char *tid = m ? json_get_str(m, "task") : NULL, *code = m ? json_get_str(m, "solution") : NULL;
		const struct eval_task *t = tid ? eval_dataset_find(d, tid) : NULL;
		if (!CHECK(t != NULL && code != NULL)) {
			cJSON_Delete(m);
			continue;
		}
		for (size_t i = 0; i < eval_dataset_count(d); i++)
			if (eval_dataset_task(d, i) == t)
				per_task[i]++;
		struct grade_result r;
		CHECK_EQ_INT(grade_solution(g, t, code, &r), 0);
		total++;
		if (r.status == GRADE_FAIL)
			failed++;
		else if (r.status == GRADE_ENVIRONMENT)
			env++;
		if (r.status != GRADE_FAIL)
			printf("mutant %s/%s survives (%s: %s)\n", tid, json_get_str(m, "mutant"),
			       grade_status_name(r.status), r.detail);
		cJSON_Delete(m);
	}
	free(line);
	fclose(f);
	/* every task has 2 or 3 mutants */
	for (size_t i = 0; i < eval_dataset_count(d); i++)
		if (!CHECK(per_task[i] >= 2 && per_task[i] <= 3))
			fprintf(stderr, "%s has %d mutants\n", eval_dataset_task(d, i)->id, per_task[i]);
	free(per_task);
	double rate = total ? 100.0 * failed / total : 0;
	printf("datasets/sixi-code mutants: %d of %d fail (%.1f %%), %d environment\n", failed, total, rate, env);
	CHECK(total >= 2 * (int)eval_dataset_count(d));
	CHECK_EQ_INT(env, 0);
	CHECK(rate >= 90.0);
	eval_dataset_destroy(d);
}

static void check_toolcalls(void)
{
	char err[8192], why[512];
	struct toolcall_set *s = toolcall_set_load(test_src_path("datasets/gates/tool-calls.jsonl"), err, sizeof err);
	if (!CHECK(s != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	int passed = 0, failed = 0;
	for (size_t i = 0; i < toolcall_set_count(s); i++) {
		const struct toolcall_case *c = toolcall_set_case(s, i);
		char *args = cJSON_PrintUnformatted(c->expect_args);
		if (CHECK(toolcall_grade(c, c->expect_name, args, why, sizeof why)))
			passed++;
		else
			fprintf(stderr, "%s: the expected call fails: %s\n", c->id, why);
		if (CHECK(!toolcall_grade(c, "", "", why, sizeof why)))
			passed++;
		/* another offered tool with the same arguments */
		const cJSON *t;
		cJSON_ArrayForEach(t, c->tools) {
			const char *name = json_get_str(t, "function.name");
			if (name && strcmp(name, c->expect_name) != 0 && !CHECK(!toolcall_grade(c, name, args, why, sizeof why)))
				failed++;
		}
		free(args);
	}
	printf("datasets/gates/tool-calls.jsonl: %zu cases, %d of %zu checks passed, %d wrong calls accepted\n",
	       toolcall_set_count(s), passed, 2 * toolcall_set_count(s), failed);
	CHECK(toolcall_set_count(s) >= 20);
	CHECK_EQ_INT(passed, 2 * (int)toolcall_set_count(s));
	toolcall_set_destroy(s);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	struct grader *g = grader_create(NULL, NULL);
	if (!g)
		return 1;
	if (!strcmp(which, "all") || !strcmp(which, "gates"))
		check_toolcalls();
	if (grader_sandbox_problem(g) && strcmp(which, "math") != 0 && strcmp(which, "gates") != 0) {
		char why[1400];
		snprintf(why, sizeof why, "the grading sandbox cannot run here: %s", grader_sandbox_problem(g));
		grader_destroy(g);
		return test_skip(why);
	}
	if (!strcmp(which, "all") || !strcmp(which, "code")) {
		check_preflight(g, "datasets/sixi-code");
		check_mutants(g);
	}
	if (!strcmp(which, "all") || !strcmp(which, "math"))
		check_preflight(g, "datasets/sixi-math");
	grader_destroy(g);
	return test_done();
}
