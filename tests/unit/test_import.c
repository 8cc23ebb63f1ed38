/* test_import — the importers on small synthetic files in each public format
 * (tests/fixtures/import/, written by make_fixtures.py there): task counts,
 * graders, ids; in the sandbox, the imported references pass and wrong
 * solutions fail; and the refusals: unknown format, a file of another format,
 * damaged gzip, a line that is not JSON, tests that do not parse, a task
 * without tests, an existing folder. After a refusal the output folder holds
 * nothing, not even the temporary folder. */
#include "grade/grade.h"
#include "datasets/import.h"
#include "grade/preflight.h"
#include "datasets/task.h"
#include "test.h"
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char out_dir[64];
static struct grader *G;

static const char *fixture(const char *name)
{
	static char p[4][4200];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s", test_src_path("tests/fixtures/import/"));
	strncat(p[k], name, sizeof p[k] - strlen(p[k]) - 1);
	return p[k];
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void clear_out(void)
{
	nftw(out_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	mkdir(out_dir, 0755);
}

/* Imports, loads and (sandbox permitting) preflights; returns the dataset or NULL. */
static struct eval_dataset *import_ok(const char *format, const char *file, const char *name, size_t want)
{
	char err[8192], path[1500];
	size_t n = 0;
	int rc = eval_import_to(format, fixture(file), name, out_dir, false, path, sizeof path, &n, err, sizeof err);
	if (!CHECK_EQ_INT(rc, 0)) {
		fprintf(stderr, "import %s %s: %s\n", format, file, err);
		return NULL;
	}
	CHECK_EQ_INT(n, want);
	struct eval_dataset *d = eval_dataset_load(path, err, sizeof err);
	if (!CHECK(d != NULL))
		return NULL;
	CHECK_EQ_INT(eval_dataset_count(d), want);
	char readme[1600];
	snprintf(readme, sizeof readme, "%s/%s/README.md", out_dir, name);
	FILE *f = fopen(readme, "r");
	char text[2048] = "";
	if (CHECK(f != NULL)) {
		size_t k = fread(text, 1, sizeof text - 1, f);
		text[k] = 0;
		fclose(f);
	}
	CHECK(strstr(text, "\nLICENSE: ") != NULL);
	if (!grader_sandbox_problem(G)) {
		struct preflight_report rep;
		CHECK_EQ_INT(preflight_run(G, d, false, NULL, &rep), 0);
		if (!CHECK_EQ_INT(rep.failed, 0))
			for (int i = 0; i < rep.n_excluded; i++)
				fprintf(stderr, "%s: preflight failed for %s\n", format, rep.excluded[i]);
		CHECK_EQ_INT(rep.passed, 2 * (int)want);
		preflight_finish(&rep);
	}
	return d;
}

/* A solution that must fail (sandbox permitting). */
static void wrong_fails(const struct eval_dataset *d, const char *id, const char *code)
{
	const struct eval_task *t = eval_dataset_find(d, id);
	if (!CHECK(t != NULL) || grader_sandbox_problem(G))
		return;
	struct grade_result r;
	CHECK_EQ_INT(grade_solution(G, t, code, &r), 0);
	if (!CHECK_EQ_INT(r.status, GRADE_FAIL))
		fprintf(stderr, "%s: a wrong solution got %s (%s)\n", id, grade_status_name(r.status), r.detail);
}

static void test_formats(void)
{
	struct eval_dataset *d = import_ok("humaneval", "humaneval.jsonl", "he", 2);
	if (d) {
		CHECK(eval_dataset_find(d, "HumanEval/1") != NULL);
		CHECK_EQ_INT(eval_dataset_find(d, "HumanEval/0")->grader, EVAL_GRADER_PYTHON_TESTS);
		CHECK_EQ_STR(eval_dataset_find(d, "HumanEval/0")->entry_point, "double");
		wrong_fails(d, "HumanEval/0", "def double(x):\n    return x + 2\n");
	}
	eval_dataset_destroy(d);

	d = import_ok("humaneval+", "humanevalplus.jsonl", "hep", 2);
	if (d) {
		/* right on the base inputs ([1, -1] and []), wrong on a plus input */
		wrong_fails(d, "HumanEval/0", "def mean_abs(xs):\n    return 1.0 if xs else 0.0\n");
		/* lists and tuples compare alike, floats within atol */
		const struct eval_task *t = eval_dataset_find(d, "HumanEval/1");
		struct grade_result r;
		if (t && !grader_sandbox_problem(G)) {
			CHECK_EQ_INT(grade_solution(G, t, "def pairs(n):\n    return [[i, j] for i in range(n) for j in "
							  "range(i + 1, n)]\n", &r), 0);
			CHECK_EQ_INT(r.status, GRADE_PASS);
		}
	}
	eval_dataset_destroy(d);

	d = import_ok("mbpp", "mbpp.jsonl", "mbpp", 2);
	if (d) {
		CHECK(eval_dataset_find(d, "mbpp/11") != NULL);
		CHECK(strstr(eval_dataset_find(d, "mbpp/11")->prompt, "remove_occ(\"abcda\",\"a\")") != NULL);
		wrong_fails(d, "mbpp/11", "def remove_occ(s, ch):\n    return s[1:-1]\n");
	}
	eval_dataset_destroy(d);

	d = import_ok("mbpp-sanitized", "mbpp-sanitized.json", "mbpps", 2); /* a JSON array */
	if (d)
		wrong_fails(d, "mbpp/21", "def gcd2(a, b):\n    return min(a, b)\n");
	eval_dataset_destroy(d);

	d = import_ok("gsm8k", "gsm8k.jsonl", "gsm", 2);
	if (d) {
		CHECK_EQ_INT(eval_dataset_task(d, 0)->grader, EVAL_GRADER_NUMERIC);
		const struct eval_task *t = eval_dataset_find(d, "gsm8k/2");
		CHECK(t && t->answer == 5000); /* thousands commas */
	}
	eval_dataset_destroy(d);

	d = import_ok("aime", "aime.jsonl", "aime", 3);
	if (d) {
		const struct eval_task *t = eval_dataset_find(d, "aime/2031-I-1");
		CHECK(t && t->answer == 1 && t->tolerance == 0 && t->reasoning);
		CHECK(eval_dataset_find(d, "aime/2") && eval_dataset_find(d, "aime/2")->answer == 18);
		CHECK(eval_dataset_find(d, "aime/x/3") && eval_dataset_find(d, "aime/x/3")->answer == 144);
	}
	eval_dataset_destroy(d);

	d = import_ok("livecodebench", "livecodebench.jsonl", "lcb", 2);
	if (d) {
		const struct eval_task *t = eval_dataset_find(d, "lcb/abc900_a");
		/* public plus the compressed private tests */
		CHECK(t && t->grader == EVAL_GRADER_STDIO && cJSON_GetArraySize(t->cases) == 3);
		t = eval_dataset_find(d, "lcb/9001");
		CHECK(t && t->grader == EVAL_GRADER_PYTHON_TESTS);
		wrong_fails(d, "lcb/abc900_a", "a, b = map(int, input().split())\nprint(a * b)\n");
		wrong_fails(d, "lcb/9001", "class Solution:\n    def longestRun(self, nums):\n        return len(nums)\n");
		t = eval_dataset_find(d, "lcb/9001");
		struct grade_result r;
		if (t && !grader_sandbox_problem(G)) {
			CHECK_EQ_INT(grade_solution(G, t, "from typing import List\nclass Solution:\n    def longestRun(self, nums: "
							  "List[int]) -> int:\n        best = run = 0\n        for i, x in "
							  "enumerate(nums):\n            run = run + 1 if i and nums[i - 1] == x "
							  "else 1\n            best = max(best, run)\n        return best\n",
						   &r), 0);
			CHECK_EQ_INT(r.status, GRADE_PASS);
		}
	}
	eval_dataset_destroy(d);

	d = import_ok("bigcodebench", "bigcodebench.jsonl", "bcb", 1);
	if (d) {
		const struct eval_task *t = eval_dataset_find(d, "BigCodeBench/0");
		CHECK(t && t->n_requires == 1 && strcmp(t->requires[0], "collections") == 0);
		wrong_fails(d, "BigCodeBench/0", "import collections\ndef task_func(words):\n    return "
						  "collections.Counter(words).most_common(1)[0] if len(set(words)) > 1 and "
						  "words[0] != 'x' else (words[-1], 1)\n");
	}
	eval_dataset_destroy(d);
	clear_out();
}

/* A refusal: rc != 0, err holds want, and the output folder stays empty. */
static void refused(const char *format, const char *file, const char *want)
{
	char err[8192], path[1500];
	size_t n = 99;
	int rc = eval_import_to(format, file, "x", out_dir, false, path, sizeof path, &n, err, sizeof err);
	CHECK(rc != 0);
	if (!CHECK(strstr(err, want) != NULL))
		fprintf(stderr, "import %s %s: got \"%s\", want \"%s\"\n", format, file, rc ? err : "(accepted)", want);
	CHECK_EQ_INT(n, 0);
	if (!CHECK_EQ_INT(entries(out_dir), 0))
		clear_out();
}

static void test_refusals(void)
{
	char gz[128], trunc[128], err[4096], path[1500];
	refused("humaneval++", fixture("humaneval.jsonl"), "--format \"humaneval++\" is unknown");
	refused("humaneval", fixture("gsm8k.jsonl"), "not a file in the HumanEval format");
	refused("humaneval", fixture("gsm8k.jsonl"), "it looks like gsm8k: give --format gsm8k");
	refused("gsm8k", fixture("humaneval.jsonl"), "looks like humaneval");
	refused("mbpp", fixture("mbpp-sanitized.json"), "looks like mbpp-sanitized");
	refused("humaneval", fixture("bad-line.jsonl"), "bad-line.jsonl:3: not a JSON object");
	refused("humaneval", fixture("bad-tests.jsonl"), "bad-tests.jsonl:2: task HumanEval/9: its tests do not parse");
	refused("humaneval", fixture("no-tests.jsonl"), "no-tests.jsonl:2: task HumanEval/1 has no tests");
	refused("humaneval", "/nonexistent/he.jsonl", "/nonexistent/he.jsonl");

	/* gzip: whole, then cut in half */
	snprintf(gz, sizeof gz, "%s.he.jsonl.gz", out_dir);
	snprintf(trunc, sizeof trunc, "%s.cut.jsonl.gz", out_dir);
	FILE *in = fopen(fixture("humaneval.jsonl"), "rb");
	gzFile z = gzopen(gz, "wb");
	char chunk[4096];
	size_t k;
	while (in && z && (k = fread(chunk, 1, sizeof chunk, in)) > 0)
		gzwrite(z, chunk, (unsigned)k);
	if (in)
		fclose(in);
	gzclose(z);
	FILE *f = fopen(gz, "rb");
	size_t len = f ? fread(chunk, 1, sizeof chunk, f) : 0;
	if (f)
		fclose(f);
	f = fopen(trunc, "wb");
	if (f) {
		fwrite(chunk, 1, len / 2, f);
		fclose(f);
	}
	refused("humaneval", trunc, "the gzip data is damaged or truncated");
	size_t n = 0;
	CHECK_EQ_INT(eval_import_to("humaneval", gz, "hegz", out_dir, false, path, sizeof path, &n, err, sizeof err), 0);
	CHECK_EQ_INT(n, 2);
	/* an existing folder: refused without --force, replaced with it */
	CHECK(eval_import_to("humaneval", gz, "hegz", out_dir, false, path, sizeof path, &n, err, sizeof err) != 0 &&
	      strstr(err, "exists; give --force"));
	CHECK_EQ_INT(eval_import_to("humaneval", fixture("humaneval.jsonl"), "hegz", out_dir, true, path, sizeof path, &n,
				    err, sizeof err), 0);
	CHECK_EQ_INT(entries(out_dir), 1); /* no temporary or old folder left */
	unlink(gz);
	unlink(trunc);
	clear_out();
}

static void test_command(void)
{
	char *argv[] = {"import", "--format", "gsm8k", (char *)fixture("gsm8k.jsonl"), "--out", out_dir, "--name", "g", NULL};
	CHECK_EQ_INT(import_cmd_main(8, argv), 0);
	char p[200];
	snprintf(p, sizeof p, "%s/g/tasks.jsonl", out_dir);
	CHECK(access(p, R_OK) == 0);
	char *bad[] = {"import", "--format", "gsm8k", NULL};
	CHECK_EQ_INT(import_cmd_main(3, bad), 2);
	char *wrong[] = {"import", "--format", "aime", (char *)fixture("humaneval.jsonl"), "--out", out_dir, NULL};
	CHECK_EQ_INT(import_cmd_main(6, wrong), 1);
	clear_out();
}

int main(void)
{
	snprintf(out_dir, sizeof out_dir, "/tmp/sixi-import-XXXXXX");
	if (!mkdtemp(out_dir))
		return test_skip("cannot create a temporary folder");
	G = grader_create(NULL, NULL);
	if (G && grader_sandbox_problem(G))
		printf("note: the sandbox cannot run here (%s); imported sets are loaded, not preflighted\n",
		       grader_sandbox_problem(G));
	test_formats();
	test_refusals();
	test_command();
	grader_destroy(G);
	rmdir(out_dir);
	return test_done();
}
