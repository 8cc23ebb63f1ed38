/* test_datasets_check — `sixi-eval dataset check`: the bundled sets are valid
 * and report their size and licence; broken sets are refused with the reason
 * (missing licence line, duplicate ids, tests that do not parse, a mutant of
 * an unknown task, a task without tests); usage errors exit 2. */
#include "datasets/dataset_cmd.h"
#include "test.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[64];

/* Runs dataset_cmd_main with stdout and stderr captured into out. */
static int run(char *out, size_t outlen, int argc, char **argv)
{
	char path[128];
	snprintf(path, sizeof path, "%s/out.txt", tmp);
	fflush(stdout);
	fflush(stderr);
	int saved1 = dup(1), saved2 = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 1);
	dup2(fd, 2);
	int rc = dataset_cmd_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved1, 1);
	dup2(saved2, 2);
	close(saved1);
	close(saved2);
	close(fd);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(out, 1, outlen - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	unlink(path);
	return rc;
}

static int check_path(const char *path, char *out, size_t outlen)
{
	char *argv[] = {"dataset", "check", (char *)path, NULL};
	return run(out, outlen, 3, argv);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const char good_task[] =
	"{\"id\": \"t/1\", \"grader\": \"python_tests\", \"prompt\": \"p\", \"tests\": \"assert f() == 1\\n\", "
	"\"reference\": \"def f():\\n    return 1\\n\", \"metadata\": {\"difficulty\": \"easy\"}}\n";

static void test_bundled(void)
{
	static char out[65536];
	CHECK_EQ_INT(check_path(test_src_path("datasets/sixi-code"), out, sizeof out), 0);
	CHECK(strstr(out, "tasks: 63 (python_tests 63)") != NULL);
	CHECK(strstr(out, "difficulty: easy 29, medium 28, hard 6") != NULL);
	CHECK(strstr(out, "mutants: 156 in mutants.jsonl") != NULL);
	CHECK(strstr(out, "licence: Apache-2.0") != NULL);
	CHECK(strstr(out, "sixi-code: valid") != NULL);
	CHECK_EQ_INT(check_path(test_src_path("datasets/sixi-math"), out, sizeof out), 0);
	CHECK(strstr(out, "tasks: 63 (numeric 63)") != NULL && strstr(out, "licence: Apache-2.0") != NULL);
	CHECK_EQ_INT(check_path(test_src_path("datasets/gates"), out, sizeof out), 0);
	CHECK(strstr(out, "tool-call cases: 24") != NULL && strstr(out, "licence: Apache-2.0") != NULL);
	char *json[] = {"dataset", "check", (char *)test_src_path("datasets/sixi-math"), "--json", NULL};
	CHECK_EQ_INT(run(out, sizeof out, 4, json), 0);
	CHECK(strstr(out, "\"valid\":true") != NULL && strstr(out, "\"tasks\":63") != NULL);
}

static void test_broken(void)
{
	static char out[65536];
	char dir[128];
	snprintf(dir, sizeof dir, "%s/set", tmp);
	mkdir(dir, 0755);
	write_file(dir, "tasks.jsonl", good_task);
	/* no README, no licence */
	CHECK_EQ_INT(check_path(dir, out, sizeof out), 1);
	CHECK(strstr(out, "no licence line") != NULL && strstr(out, "INVALID (1 problem)") != NULL);
	write_file(dir, "README.md", "# set\n\nLICENSE: CC0-1.0\n");
	CHECK_EQ_INT(check_path(dir, out, sizeof out), 0);
	CHECK(strstr(out, "licence: CC0-1.0") != NULL && strstr(out, "tasks: 1 (python_tests 1)") != NULL);
	/* duplicate ids */
	char two[1024];
	snprintf(two, sizeof two, "%s%s", good_task, good_task);
	write_file(dir, "tasks.jsonl", two);
	CHECK_EQ_INT(check_path(dir, out, sizeof out), 1);
	CHECK(strstr(out, "duplicate") != NULL);
	/* tests that do not parse (the loader accepts them; the compile check does not) */
	write_file(dir, "tasks.jsonl",
		   "{\"id\": \"t/1\", \"grader\": \"python_tests\", \"prompt\": \"p\", \"tests\": \"assert f( == 1\\n\", "
		   "\"reference\": \"def f():\\n    return 1\\n\"}\n");
	CHECK_EQ_INT(check_path(dir, out, sizeof out), 1);
	CHECK(strstr(out, "tasks.jsonl:1: task t/1: its tests do not parse as Python") != NULL);
	/* a task without tests */
	write_file(dir, "tasks.jsonl", "{\"id\": \"t/1\", \"grader\": \"python_tests\", \"prompt\": \"p\", "
				       "\"reference\": \"x = 1\\n\"}\n");
	CHECK_EQ_INT(check_path(dir, out, sizeof out), 1);
	CHECK(strstr(out, "has no tests") != NULL);
	/* a mutant of a task the set lacks */
	write_file(dir, "tasks.jsonl", good_task);
	write_file(dir, "mutants.jsonl", "{\"task\": \"t/2\", \"mutant\": \"m\", \"solution\": \"x = 1\"}\n");
	CHECK_EQ_INT(check_path(dir, out, sizeof out), 1);
	CHECK(strstr(out, "mutant of \"t/2\", which is not a task of the set") != NULL);
	/* a folder with nothing to check */
	char empty[128];
	snprintf(empty, sizeof empty, "%s/empty", tmp);
	mkdir(empty, 0755);
	CHECK_EQ_INT(check_path(empty, out, sizeof out), 1);
	CHECK(strstr(out, "no tasks.jsonl") != NULL);
	rmdir(empty);
	char p[200];
	const char *files[] = {"tasks.jsonl", "README.md", "mutants.jsonl"};
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
	CHECK_EQ_INT(check_path("/nonexistent/set", out, sizeof out), 1);
	CHECK(strstr(out, "/nonexistent/set") != NULL);
}

static void test_usage(void)
{
	static char out[4096];
	char *a[] = {"dataset", NULL};
	CHECK_EQ_INT(run(out, sizeof out, 1, a), 2);
	char *b[] = {"dataset", "verify", "x", NULL};
	CHECK_EQ_INT(run(out, sizeof out, 3, b), 2);
	char *c[] = {"dataset", "check", NULL};
	CHECK_EQ_INT(run(out, sizeof out, 2, c), 2);
	char *d[] = {"dataset", "check", "a", "--frobnicate", NULL};
	CHECK_EQ_INT(run(out, sizeof out, 4, d), 2);
	CHECK(strstr(out, "--frobnicate") != NULL);
}

int main(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/sixi-dscheck-XXXXXX");
	if (!mkdtemp(tmp))
		return test_skip("cannot create a temporary folder");
	test_bundled();
	test_broken();
	test_usage();
	rmdir(tmp);
	return test_done();
}
