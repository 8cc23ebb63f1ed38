/* Unit tests for src/grade/grade and sandbox: every bundled task's reference
 * passes and an empty answer fails; wrong answers fail; a grader that cannot
 * run (missing interpreter, missing module, missing harness) is environment,
 * never fail; a timeout is re-run alone before it counts. */
#include "test.h"
#include "grade/grade.h"
#include "grade/preflight.h"
#include "datasets/task.h"

static struct eval_task py_task(const char *tests)
{
	struct eval_task t = {0};
	t.id = "t";
	t.prompt = "p";
	t.grader = EVAL_GRADER_PYTHON_TESTS;
	t.language = "python";
	t.tests = tests;
	t.timeout_s = 5;
	t.memory_mb = 1024;
	return t;
}

static void test_demo_set(struct grader *g, const struct eval_dataset *d)
{
	struct preflight_report rep;
	CHECK(preflight_run(g, d, false, NULL, &rep) == 0);
	CHECK_EQ_INT(rep.failed, 0);
	CHECK_EQ_INT(rep.passed, 2 * (int)eval_dataset_count(d));
	CHECK_EQ_INT(rep.n_excluded, 0);
	preflight_finish(&rep);

	struct grade_result r;
	const struct eval_task *add = eval_dataset_find(d, "demo/add");
	CHECK(grade_completion(g, add, "Sure:\n```python\ndef add(a, b):\n    return a - b\n```\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_FAIL);
	CHECK(r.has_code && strstr(r.detail, "AssertionError"));
	CHECK(grade_completion(g, add, "<think>hm</think>```python\ndef add(a, b):\n    return a + b\n```", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_PASS);
	CHECK(grade_completion(g, add, "I would add them.", &r) == 0);
	CHECK(r.status == GRADE_FAIL && !r.has_code && strstr(r.detail, "no code"));
	/* exit() in the solution is a failure, not a pass */
	CHECK(grade_completion(g, add, "```python\nimport sys\nsys.exit(0)\n```", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_FAIL);

	const struct eval_task *sum = eval_dataset_find(d, "demo/sum-stdin");
	CHECK(grade_solution(g, sum, "a, b = map(int, input().split())\nprint(a * b)\n", &r) == 0);
	CHECK(r.status == GRADE_FAIL && strstr(r.detail, "expected"));
	CHECK(grade_solution(g, sum, "a, b = map(int, input().split())\nprint(f'{a + b}.000')\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_PASS); /* numbers compare as decimals */

	const struct eval_task *msub = eval_dataset_find(d, "demo/max-subarray");
	/* forgets all-negative arrays: caught on some random input */
	CHECK(grade_solution(g, msub, "input()\nbest = cur = 0\nfor x in map(int, input().split()):\n"
				      "    cur = max(0, cur + x)\n    best = max(best, cur)\nprint(best)\n", &r) == 0);
	CHECK(r.status == GRADE_FAIL && strstr(r.detail, "random input"));

	const struct eval_task *apples = eval_dataset_find(d, "demo/apples");
	CHECK(grade_completion(g, apples, "5+12 = 17 apples", &r) == 0 && r.status == GRADE_PASS);
	CHECK_EQ_STR(r.answer, "17");
	CHECK(grade_completion(g, apples, "#### 16", &r) == 0 && r.status == GRADE_FAIL);
	const struct eval_task *cap = eval_dataset_find(d, "demo/capital");
	CHECK(grade_completion(g, cap, "Answer: C", &r) == 0 && r.status == GRADE_FAIL);
	CHECK(grade_completion(g, cap, "It's Paris. Answer: B", &r) == 0 && r.status == GRADE_PASS);
}

static void test_environment(struct grader *g)
{
	struct grade_result r;
	struct eval_task t = py_task("assert f() == 1\n");
	const char *req[] = {"sixi_no_such_module_anywhere"};
	t.requires = req;
	t.n_requires = 1;
	CHECK(grade_solution(g, &t, "def f(): return 1\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_ENVIRONMENT);
	CHECK(strstr(r.detail, "sixi_no_such_module_anywhere is not installed") != NULL);

	struct grader *nopy = grader_create(NULL, "/nonexistent/python3");
	CHECK(grader_sandbox_problem(nopy) && strstr(grader_sandbox_problem(nopy), "/nonexistent/python3"));
	struct eval_task t2 = py_task("assert f() == 1\n");
	CHECK(grade_solution(nopy, &t2, "def f(): return 1\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_ENVIRONMENT);
	grader_destroy(nopy);

	struct grader *noharness = grader_create("/nonexistent/harness", NULL);
	CHECK(grade_solution(noharness, &t2, "def f(): return 1\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_ENVIRONMENT);
	CHECK(strstr(r.detail, "driver.py") != NULL);
	grader_destroy(noharness);

	/* brute-force program that crashes: the task is broken, not the model */
	struct eval_task b = {0};
	b.id = "b";
	b.grader = EVAL_GRADER_BRUTE_FORCE;
	b.language = "python";
	b.generator = "def gen(rng):\n    return '1\\n'\n";
	b.brute = "raise ValueError('broken reference')\n";
	b.n_random = 2;
	b.seed = 1;
	b.timeout_s = 5;
	b.memory_mb = 1024;
	CHECK(grade_solution(g, &b, "print(1)\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_ENVIRONMENT);
}

static void test_timeout_rerun(struct grader *g)
{
	struct grade_result r;
	struct eval_task t = py_task("assert True\n");
	t.timeout_s = 0.3;
	/* idle past the wall backstop (4 x 0.3 + 10 s) is the program's timeout, not the machine's */
	CHECK(grade_solution(g, &t, "import time\ntime.sleep(30)\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_FAIL);
	CHECK(r.timed_out && !r.reran_alone && strstr(r.detail, "idle"));
	CHECK(r.seconds < 100);
	/* a CPU limit passed is a timeout at once, however busy the machine */
	CHECK(grade_solution(g, &t, "while True:\n    pass\n", &r) == 0);
	CHECK_EQ_INT(r.status, GRADE_FAIL);
	CHECK(r.timed_out && strstr(r.detail, "CPU"));
	CHECK(r.cpu_limit_s == 0.3);
	/* memory limit: a failure, and the harness goes on */
	t.timeout_s = 5;
	CHECK(grade_solution(g, &t, "x = bytearray(4 * 1024 ** 3)\n", &r) == 0);
	CHECK(r.status == GRADE_FAIL && strstr(r.detail, "MemoryError"));
	CHECK(grade_solution(g, &t, "x = 1\n", &r) == 0 && r.status == GRADE_PASS);
}

/* max(timeout_s, 4 x reference CPU), and the record a run keeps of it */
static void test_cpu_limits(struct grader *g)
{
	struct eval_task t = py_task("assert True\n");
	t.id = "limits/x";
	t.timeout_s = 5;
	CHECK(grader_cpu_limit(g, &t) == 5);
	CHECK(grader_set_reference_cpu(g, "limits/x", 0.5) == 0);
	CHECK(grader_cpu_limit(g, &t) == 5);
	CHECK(grader_set_reference_cpu(g, "limits/x", 3) == 0);
	CHECK(grader_cpu_limit(g, &t) == 12);
	cJSON *rec = grader_limits_json(g);
	CHECK(rec && cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "reference_cpu_s"), "limits/x"));
	struct grader *g2 = grader_create(test_src_path("harness"), NULL);
	CHECK(g2 && grader_limits_load(g2, rec) == 0 && grader_cpu_limit(g2, &t) == 12);
	grader_destroy(g2);
	cJSON_Delete(rec);
}

int main(void)
{
	char err[4096];
	struct eval_dataset *d = eval_dataset_load(test_src_path("datasets/demo"), err, sizeof err);
	if (!CHECK(d != NULL)) {
		fprintf(stderr, "%s\n", err);
		return test_done();
	}
	struct grader *g = grader_create(test_src_path("harness"), NULL);
	test_cpu_limits(g);
	if (grader_sandbox_problem(g)) {
		/* then every code grade must say environment, never fail */
		struct grade_result r;
		CHECK(grade_solution(g, eval_dataset_find(d, "demo/add"), "def add(a, b): return 0\n", &r) == 0);
		CHECK_EQ_INT(r.status, GRADE_ENVIRONMENT);
		printf("sandbox unusable here (%s): checked that code grades are environment\n",
		       grader_sandbox_problem(g));
	} else {
		test_demo_set(g, d);
		test_environment(g);
		test_timeout_rerun(g);
	}
	grader_destroy(g);
	eval_dataset_destroy(d);
	return test_done();
}
