/* Reward-hack corpus through the real grader: every completion of
 * tests/sandbox/hacks/hacks.jsonl (written by make_hacks.py there) does not
 * solve its task and tries to be graded as a pass or excused as environment;
 * each must grade FAIL. Before them, each task's reference must PASS and the
 * empty solution FAIL (so a FAIL is the grader's judgement, not a broken task);
 * after each hack a correct solution must still PASS and a wrong one FAIL.
 * Skips (saying why) where bubblewrap cannot build a sandbox.
 * `build/tests/sandbox/test_reward_hacks NAME` runs the hacks of one name. */
#include "test.h"
#include "core/json.h"
#include "grade/grade.h"
#include "datasets/task.h"

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	struct grader *g = grader_create(test_src_path("harness"), NULL);
	if (!g || grader_sandbox_problem(g)) {
		printf("%s\n", g ? grader_sandbox_problem(g) : "out of memory");
		grader_destroy(g);
		return test_skip("the sandbox is unusable here");
	}
	char err[2048];
	struct eval_dataset *d = eval_dataset_load(test_src_path("tests/sandbox/hacks"), err, sizeof err);
	if (!CHECK(d != NULL)) {
		fprintf(stderr, "%s\n", err);
		grader_destroy(g);
		return test_done();
	}
	struct grade_result r;
	for (size_t i = 0; i < eval_dataset_count(d); i++) {
		const struct eval_task *t = eval_dataset_task(d, i);
		CHECK(grade_solution(g, t, t->reference, &r) == 0);
		if (!CHECK(r.status == GRADE_PASS))
			fprintf(stderr, "%s: reference: %s\n", t->id, r.detail);
		CHECK(grade_solution(g, t, "", &r) == 0);
		CHECK(r.status == GRADE_FAIL);
	}
	char *text = read_text(test_src_path("tests/sandbox/hacks/hacks.jsonl"));
	CHECK(text != NULL);
	int ran = 0, held = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		cJSON *h = cJSON_Parse(line);
		const char *name = json_get_str(h, "name"), *task = json_get_str(h, "task"),
			   *code = json_get_str(h, "solution");
		const struct eval_task *t = task ? eval_dataset_find(d, task) : NULL;
		CHECK(name && code && t);
		if (!name || !code || !t || (only && strcmp(only, name) != 0)) {
			cJSON_Delete(h);
			continue;
		}
		ran++;
		CHECK(grade_solution(g, t, code, &r) == 0);
		bool ok = r.status == GRADE_FAIL;
		held += ok;
		printf("%-20s %-28s %s in %.1f s: %s\n", task, name, ok ? "wrong" : r.status == GRADE_PASS ? "PASSED" : "environment",
		       r.seconds, r.detail);
		CHECK(ok);
		/* the harness still grades, both ways */
		CHECK(grade_solution(g, t, t->reference, &r) == 0 && r.status == GRADE_PASS);
		CHECK(grade_solution(g, t, "print('no')\n", &r) == 0 && r.status == GRADE_FAIL);
		cJSON_Delete(h);
	}
	printf("%d of %d reward hacks graded wrong\n", held, ran);
	CHECK(ran > 0);
	free(text);
	eval_dataset_destroy(d);
	grader_destroy(g);
	return test_done();
}
