/* Integration test of the grading sandbox: each canary (socket, write outside
 * the work folder, fork bomb, 10 GB allocation, sleep forever) is contained,
 * answered within its limits, and the harness still grades afterwards.
 * Skips (saying why) where bubblewrap cannot build a sandbox. */
#include "test.h"
#include "core/clock.h"
#include "grade/grade.h"
#include "grade/preflight.h"
#include <sys/stat.h>

int main(void)
{
	struct grader *g = grader_create(test_src_path("harness"), NULL);
	if (grader_sandbox_problem(g)) {
		printf("%s\n", grader_sandbox_problem(g));
		grader_destroy(g);
		return test_skip("the sandbox is unusable here");
	}
	for (int i = 0; i < preflight_canary_count(); i++) {
		char detail[600];
		int64_t t0 = clock_now_ns();
		bool ok = preflight_canary_run(g, i, detail, sizeof detail);
		double s = (double)(clock_now_ns() - t0) / 1e9;
		printf("canary %s: %s (%.1f s)\n", preflight_canary_name(i), detail, s);
		CHECK(ok);
		CHECK(s < 120); /* a hang guard: each canary is bounded by the sandbox's limits */
	}
	/* nothing the canaries tried landed on the host */
	struct stat st;
	CHECK(stat("/usr/sixi_canary", &st) != 0);
	CHECK(stat("/etc/sixi_canary", &st) != 0);
	CHECK(stat("/sixi_canary", &st) != 0);
	grader_destroy(g);
	return test_done();
}
