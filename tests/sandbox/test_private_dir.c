/* The sandbox wherever the project lives: the harness and a dataset copied
 * into a fresh mode-0700 folder (as mktemp -d makes it, as /root is), graded
 * from there. As root the sandbox runs as an unused uid that cannot enter that
 * folder, so this checks that nothing is bound from it. As another user the
 * same checks run (the folder is the user's own). Then a harness that is
 * broken is reported once, as the harness's fault, and preflight says so in
 * one line instead of failing every task as environment.
 * Skips (saying why) where bubblewrap cannot build a sandbox at all. */
#include "test.h"
#include "grade/grade.h"
#include "grade/preflight.h"
#include "datasets/task.h"
#include <sys/stat.h>
#include <unistd.h>

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	int rc = in && out ? 0 : -1;
	char b[8192];
	size_t n;
	while (rc == 0 && (n = fread(b, 1, sizeof b, in)) > 0)
		rc = fwrite(b, 1, n, out) == n ? 0 : -1;
	if (in)
		fclose(in);
	if (out && fclose(out) != 0)
		rc = -1;
	return rc;
}

int main(void)
{
	struct grader *probe = grader_create(test_src_path("harness"), NULL);
	if (!probe || grader_sandbox_problem(probe)) {
		printf("%s\n", probe ? grader_sandbox_problem(probe) : "out of memory");
		grader_destroy(probe);
		return test_skip("the sandbox is unusable here");
	}
	grader_destroy(probe);
	char top[] = "/tmp/sixi-private-XXXXXX";
	CHECK(mkdtemp(top) != NULL);
	CHECK(chmod(top, 0700) == 0);
	printf("private folder %s (mode 0700), running as uid %d\n", top, (int)geteuid());
	char dir[300], from[4400], to[600];
	snprintf(dir, sizeof dir, "%s/harness", top);
	CHECK(mkdir(dir, 0700) == 0);
	static const char *const files[] = {"driver.py", "worker.py", "wire.py"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(from, sizeof from, "%s/%s", test_src_path("harness"), files[i]);
		snprintf(to, sizeof to, "%s/%s", dir, files[i]);
		CHECK(copy_file(from, to) == 0);
		chmod(to, 0600);
	}
	snprintf(to, sizeof to, "%s/tasks.jsonl", top);
	CHECK(copy_file(test_src_path("datasets/demo/tasks.jsonl"), to) == 0);

	struct grader *g = grader_create(dir, NULL);
	CHECK(g && !grader_sandbox_problem(g));
	if (g && grader_sandbox_problem(g))
		fprintf(stderr, "%s\n", grader_sandbox_problem(g));
	char err[1024];
	struct eval_dataset *d = eval_dataset_load(to, err, sizeof err);
	CHECK(d != NULL);
	struct preflight_report rep;
	if (g && d) {
		CHECK(preflight_run(g, d, false, stdout, &rep) == 0);
		CHECK_EQ_INT(rep.failed, 0);
		CHECK_EQ_INT(rep.passed, 2 * (int)eval_dataset_count(d));
		preflight_finish(&rep);
	}
	grader_destroy(g);

	/* a broken harness: one line that blames it, no task graded as environment */
	snprintf(to, sizeof to, "%s/driver.py", dir);
	FILE *f = fopen(to, "w");
	CHECK(f && fputs("raise SystemExit('broken on purpose')\n", f) >= 0 && fclose(f) == 0);
	g = grader_create(dir, NULL);
	const char *why = g ? grader_sandbox_problem(g) : NULL;
	CHECK(why && strstr(why, "the harness is broken"));
	printf("broken harness: %s\n", why ? why : "(no problem reported)");
	if (g && d) {
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);
		CHECK(preflight_run(g, d, true, mem, &rep) == 0);
		fclose(mem);
		CHECK(text && strstr(text, "code task(s) not checked: the harness") && !strstr(text, "cannot be graded here"));
		printf("%s", text ? text : "");
		free(text);
		preflight_finish(&rep);
	}
	grader_destroy(g);
	eval_dataset_destroy(d);

	for (size_t i = 0; i < 3; i++) {
		snprintf(to, sizeof to, "%s/%s", dir, files[i]);
		unlink(to);
	}
	rmdir(dir);
	snprintf(to, sizeof to, "%s/tasks.jsonl", top);
	unlink(to);
	CHECK(rmdir(top) == 0);
	return test_done();
}
