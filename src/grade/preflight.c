/* preflight — see preflight.h.
 *
 * A canary is a python_tests "solution" that tries an escape and sets ESCAPED
 * when it got through; its test asserts ESCAPED. So a canary that passes has
 * escaped, a failure (exception, limit, timeout) means it was contained. The
 * harness must answer every canary within its wall limit and still grade
 * afterwards (each canary is followed by a trivial job that must pass). */
#include "grade/preflight.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct canary {
	const char *name;
	const char *code;
	double timeout_s;
};

static const struct canary canaries[] = {
	{"socket",
	 "import socket\nESCAPED = False\n"
	 "for host, port in (('1.1.1.1', 53), ('127.0.0.1', 22), ('::1', 22)):\n"
	 "    try:\n"
	 "        socket.create_connection((host, port), timeout=2).close()\n"
	 "        ESCAPED = True\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "try:\n"
	 "    socket.getaddrinfo('example.com', 80)\n"
	 "    ESCAPED = True\n"
	 "except OSError:\n"
	 "    pass\n",
	 10},
	{"write-outside-work",
	 "ESCAPED = False\n"
	 "for p in ('/usr/sixi_canary', '/etc/sixi_canary', '/sixi_canary', '/input/sixi_canary',\n"
	 "          '/harness/sixi_canary', '/proc/sixi_canary', '/dev/sixi_canary'):\n"
	 "    try:\n"
	 "        with open(p, 'w') as f:\n"
	 "            f.write('x')\n"
	 "        ESCAPED = True\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "open('/task/allowed', 'w').write('inside the work folder is fine')\n",
	 10},
	{"fork-bomb",
	 "import os\n"
	 "while True:\n"
	 "    try:\n"
	 "        os.fork()\n"
	 "    except OSError:\n"
	 "        pass\n",
	 0.5},
	{"allocate-10GB",
	 "b = bytearray(10 * 1024 ** 3)\nESCAPED = True\n",
	 10},
	{"sleep-forever",
	 "import time\ntime.sleep(10 ** 9)\nESCAPED = True\n",
	 0.5},
};

int preflight_canary_count(void) { return (int)(sizeof canaries / sizeof canaries[0]); }
const char *preflight_canary_name(int i) { return canaries[i].name; }

static struct eval_task canary_task(const char *id, double timeout_s)
{
	struct eval_task t = {0};
	t.id = id;
	t.prompt = "canary";
	t.grader = EVAL_GRADER_PYTHON_TESTS;
	t.language = "python";
	t.tests = "assert ESCAPED\n";
	t.timeout_s = timeout_s;
	t.memory_mb = 1024;
	return t;
}

bool preflight_canary_run(struct grader *g, int i, char *detail, size_t detail_len)
{
	const struct canary *c = &canaries[i];
	struct eval_task t = canary_task(c->name, c->timeout_s);
	struct grade_result r;
	if (grade_solution(g, &t, c->code, &r) != 0) {
		snprintf(detail, detail_len, "could not run");
		return false;
	}
	if (r.status == GRADE_ENVIRONMENT) {
		snprintf(detail, detail_len, "not checked: %s", r.detail);
		return false;
	}
	if (r.status == GRADE_PASS) {
		snprintf(detail, detail_len, "ESCAPED: the sandbox did not contain it");
		return false;
	}
	/* the harness must still grade after the canary */
	struct eval_task ok = canary_task("after-canary", 10);
	ok.tests = "assert ESCAPED is False\n";
	struct grade_result r2;
	if (grade_solution(g, &ok, "ESCAPED = False\n", &r2) != 0 || r2.status != GRADE_PASS) {
		snprintf(detail, detail_len, "contained, but the harness did not grade afterwards: %s", r2.detail);
		return false;
	}
	snprintf(detail, detail_len, "contained in %.1f s (%s)", r.seconds, r.detail);
	return true;
}

static int exclude(struct preflight_report *rep, const char *id)
{
	if (preflight_is_excluded(rep, id))
		return 0;
	char **n = realloc(rep->excluded, (size_t)(rep->n_excluded + 1) * sizeof *n);
	if (!n)
		return -ENOMEM;
	rep->excluded = n;
	if (!(n[rep->n_excluded] = strdup(id)))
		return -ENOMEM;
	rep->n_excluded++;
	return 0;
}

int preflight_run(struct grader *g, const struct eval_dataset *d, bool run_canaries, FILE *out,
		  struct preflight_report *rep)
{
	memset(rep, 0, sizeof *rep);
	int rc = 0, unchecked = 0;
	const char *problem = grader_sandbox_problem(g);
	for (size_t i = 0; i < eval_dataset_count(d) && rc == 0; i++) {
		const struct eval_task *t = eval_dataset_task(d, i);
		if (problem && t->grader != EVAL_GRADER_NUMERIC && t->grader != EVAL_GRADER_CHOICE) {
			/* one cause for all of them, said once below, not once per task */
			unchecked++;
			rep->failed += 2;
			rc = exclude(rep, t->id);
			continue;
		}
		char *ref = grade_reference(t);
		struct grade_result r;
		bool ok_ref = false;
		if (!ref) {
			if (out)
				fprintf(out, "FAIL %s: reference: the task has no reference solution\n", t->id);
		} else {
			rc = grade_solution(g, t, ref, &r);
			ok_ref = rc == 0 && r.status == GRADE_PASS;
			/* the task's CPU limit scales from what its reference needs here */
			if (ok_ref && rc == 0)
				rc = grader_set_reference_cpu(g, t->id, r.cpu_s);
			if (out)
				fprintf(out, "%s %s: reference %s%s%s\n", ok_ref ? "PASS" : "FAIL", t->id,
					ok_ref ? "passes" : r.status == GRADE_ENVIRONMENT ? "cannot be graded here: " : "fails: ",
					ok_ref ? "" : r.detail, "");
		}
		free(ref);
		struct grade_result e;
		rc = rc ? rc : grade_solution(g, t, "", &e);
		bool ok_empty = rc == 0 && e.status == GRADE_FAIL;
		if (out)
			fprintf(out, "%s %s: empty solution %s%s\n", ok_empty ? "PASS" : "FAIL", t->id,
				ok_empty ? "fails" : e.status == GRADE_PASS ? "passes: the tests check nothing" : "not graded: ",
				ok_empty || e.status == GRADE_PASS ? "" : e.detail);
		rep->passed += ok_ref + ok_empty;
		rep->failed += !ok_ref + !ok_empty;
		if ((!ok_ref || !ok_empty) && rc == 0)
			rc = exclude(rep, t->id);
	}
	if (unchecked && out)
		fprintf(out, "%d code task(s) not checked: %s\n", unchecked, problem);
	if (run_canaries && problem) {
		rep->failed += preflight_canary_count();
		if (out)
			fprintf(out, "%d canaries not run: the sandbox is unusable\n", preflight_canary_count());
	}
	if (run_canaries && rc == 0 && !problem) {
		int contained = 0;
		for (int i = 0; i < preflight_canary_count(); i++) {
			char detail[600];
			bool ok = preflight_canary_run(g, i, detail, sizeof detail);
			contained += ok;
			rep->passed += ok;
			rep->failed += !ok;
			if (out)
				fprintf(out, "%s canary %s: %s\n", ok ? "PASS" : "FAIL", canaries[i].name, detail);
		}
		rep->sandbox_ok = contained == preflight_canary_count();
	}
	if (out) {
		if (rep->n_excluded)
			fprintf(out, "%d task(s) left out of runs until fixed\n", rep->n_excluded);
		fprintf(out, "%d passed, %d failed\n", rep->passed, rep->failed);
	}
	return rc;
}

void preflight_finish(struct preflight_report *rep)
{
	if (!rep)
		return;
	for (int i = 0; i < rep->n_excluded; i++)
		free(rep->excluded[i]);
	free(rep->excluded);
	rep->excluded = NULL;
	rep->n_excluded = 0;
}

bool preflight_is_excluded(const struct preflight_report *rep, const char *id)
{
	for (int i = 0; i < rep->n_excluded; i++)
		if (strcmp(rep->excluded[i], id) == 0)
			return true;
	return false;
}
