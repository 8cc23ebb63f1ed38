/* grade — see grade.h.
 *
 * The driver gets the task as task.json (only the fields it needs), the code as
 * solution.py and, for brute_force, the trusted program as brute.py. Its result
 * line on fd 3 decides; the absence of a "started" line means the harness never
 * ran (environment), and "started" without a result means the job was killed
 * (a limit: memory, CPU, processes), which is the model's failure. */
#include "eval/grade.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/json.h"
#include "eval/sandbox.h"
#include "eval/score.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SIXI_HARNESS_DIR
#define SIXI_HARNESS_DIR "harness"
#endif

struct grader {
	char harness[1024];
	char python[256];
	char problem[1200];    /* "" when the sandbox works */
	pthread_rwlock_t lock; /* readers: ordinary runs; writer: a timeout re-run alone */
};

struct grader *grader_create(const char *harness_dir, const char *python)
{
	struct grader *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	const char *env = getenv("SIXI_HARNESS_DIR");
	snprintf(g->harness, sizeof g->harness, "%s", harness_dir ? harness_dir : env && *env ? env : SIXI_HARNESS_DIR);
	snprintf(g->python, sizeof g->python, "%s", python ? python : "/usr/bin/python3");
	pthread_rwlock_init(&g->lock, NULL);
	sandbox_sweep();
	char driver[1100];
	snprintf(driver, sizeof driver, "%s/driver.py", g->harness);
	FILE *f = fopen(driver, "r");
	if (!f) {
		snprintf(g->problem, sizeof g->problem, "%s is missing; set SIXI_HARNESS_DIR to the harness/ folder",
			 driver);
	} else {
		fclose(f);
		if (sandbox_probe(g->python, g->problem, sizeof g->problem) == 0)
			g->problem[0] = 0;
	}
	return g;
}

void grader_destroy(struct grader *g)
{
	if (!g)
		return;
	pthread_rwlock_destroy(&g->lock);
	free(g);
}

const char *grader_sandbox_problem(const struct grader *g) { return g->problem[0] ? g->problem : NULL; }
const char *grader_python(const struct grader *g) { return g->python; }

const char *grade_status_name(enum grade_status s)
{
	return s == GRADE_PASS ? "pass" : s == GRADE_FAIL ? "fail" : "environment";
}

__attribute__((format(printf, 3, 4))) static void set(struct grade_result *r, enum grade_status s, const char *fmt,
						       ...)
{
	r->status = s;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof r->detail, fmt, ap);
	va_end(ap);
	for (char *p = r->detail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

static char *task_json(const struct eval_task *t)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON *req = cJSON_AddArrayToObject(o, "requires");
	for (int i = 0; i < t->n_requires; i++)
		cJSON_AddItemToArray(req, cJSON_CreateString(t->requires[i]));
	if (t->tests)
		cJSON_AddStringToObject(o, "tests", t->tests);
	if (t->entry_point)
		cJSON_AddStringToObject(o, "entry_point", t->entry_point);
	if (t->cases)
		cJSON_AddItemToObject(o, "tests", cJSON_Duplicate(t->cases, 1));
	if (t->generator) {
		cJSON_AddStringToObject(o, "generator", t->generator);
		cJSON_AddNumberToObject(o, "seed", (double)t->seed);
		cJSON_AddNumberToObject(o, "random_inputs", (double)t->n_random);
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* One sandboxed driver run. Returns 1 when it timed out, 0 otherwise (r set). */
static int run_once(struct grader *g, const struct eval_task *t, const char *code, struct grade_result *r)
{
	const char *mode = t->grader == EVAL_GRADER_PYTHON_TESTS ? "unit" : t->grader == EVAL_GRADER_STDIO ? "stdio" : "brute";
	char *tj = task_json(t);
	if (!tj) {
		set(r, GRADE_ENVIRONMENT, "out of memory");
		return 0;
	}
	struct sandbox_file files[3] = {{"task.json", tj, strlen(tj)}, {"solution.py", code, strlen(code)}, {0}};
	size_t nfiles = 2;
	if (t->brute)
		files[nfiles++] = (struct sandbox_file){"brute.py", t->brute, strlen(t->brute)};
	char limit[32];
	snprintf(limit, sizeof limit, "%g", t->timeout_s);
	const char *argv[] = {g->python, "/harness/driver.py", mode, limit, NULL};
	int64_t runs = t->grader == EVAL_GRADER_STDIO ? cJSON_GetArraySize(t->cases)
		       : t->grader == EVAL_GRADER_BRUTE_FORCE ? 2 * t->n_random : 1;
	struct sandbox_limits lim = {
		/* a fixed budget per program start on top of the task's own limit */
		.wall_s = t->timeout_s + 0.5 * (double)runs + 1,
		.cpu_s = t->timeout_s + 0.5 * (double)runs + 1,
		.memory_mb = t->memory_mb,
		.nproc = 64,
		.fsize_mb = 16,
	};
	struct sandbox_result sr;
	int rc = sandbox_run(g->harness, files, nfiles, argv, &lim, &sr);
	free(tj);
	if (rc) {
		set(r, GRADE_ENVIRONMENT, "the sandbox could not start: %s", strerror(-rc));
		return 0;
	}
	int timed_out = 0;
	if (!sr.started) {
		char *nl = strchr(sr.output, '\n');
		if (nl)
			*nl = 0;
		set(r, GRADE_ENVIRONMENT, "the grader did not start (%s)",
		    sr.output[0] ? sr.output : sr.timed_out ? "timed out" : "no output");
	} else if (sr.timed_out) {
		set(r, GRADE_FAIL, "timeout: ran past %.1f s of wall clock", lim.wall_s);
		timed_out = 1;
	} else {
		char err[128];
		cJSON *res = json_parse_n(sr.channel, strlen(sr.channel), err, sizeof err);
		const char *status = res ? json_get_str(res, "status") : NULL;
		const char *detail = res ? json_get_str(res, "detail") : NULL;
		if (!status) {
			/* killed by a limit before reporting */
			const char *tail = sr.output;
			size_t len = strlen(tail);
			if (len > 200)
				tail += len - 200;
			set(r, GRADE_FAIL, "the program was stopped (exit %d, a CPU, memory or process limit?): %s",
			    sr.exit_status, tail);
		} else if (strcmp(status, "pass") == 0) {
			set(r, GRADE_PASS, "%s", "all tests passed");
		} else if (strcmp(status, "environment") == 0) {
			set(r, GRADE_ENVIRONMENT, "%s", detail ? detail : "the grader cannot run here");
		} else if (strcmp(status, "timeout") == 0) {
			set(r, GRADE_FAIL, "timeout: %s", detail ? detail : "");
			timed_out = 1;
		} else {
			set(r, GRADE_FAIL, "%s", detail ? detail : "tests failed");
		}
		cJSON_Delete(res);
	}
	sandbox_result_finish(&sr);
	return timed_out;
}

static void grade_code(struct grader *g, const struct eval_task *t, const char *code, struct grade_result *r)
{
	if (g->problem[0]) {
		set(r, GRADE_ENVIRONMENT, "%s", g->problem);
		return;
	}
	if (strcmp(t->language, "python") != 0) {
		set(r, GRADE_ENVIRONMENT, "no runtime for language \"%s\" in harness/", t->language);
		return;
	}
	pthread_rwlock_rdlock(&g->lock);
	int timed_out = run_once(g, t, code, r);
	pthread_rwlock_unlock(&g->lock);
	if (timed_out) {
		/* under load a correct program can be slow: once more, alone */
		pthread_rwlock_wrlock(&g->lock);
		timed_out = run_once(g, t, code, r);
		pthread_rwlock_unlock(&g->lock);
		r->reran_alone = true;
	}
	r->timed_out = timed_out;
}

static void grade_answer(const struct eval_task *t, const char *reply, struct grade_result *r)
{
	if (t->grader == EVAL_GRADER_NUMERIC) {
		double v;
		if (!score_extract_number(reply, &v)) {
			set(r, GRADE_FAIL, "no number in the reply");
			return;
		}
		snprintf(r->answer, sizeof r->answer, "%.15g", v);
		if (fabs(v - t->answer) <= t->tolerance)
			set(r, GRADE_PASS, "answer %s", r->answer);
		else
			set(r, GRADE_FAIL, "answer %s, expected %.15g", r->answer, t->answer);
		return;
	}
	char c = score_extract_choice(reply, t->n_choices);
	if (!c) {
		set(r, GRADE_FAIL, "no choice letter in the reply");
		return;
	}
	snprintf(r->answer, sizeof r->answer, "%c", c);
	if (c == t->answer_letter)
		set(r, GRADE_PASS, "answer %c", c);
	else
		set(r, GRADE_FAIL, "answer %c, expected %c", c, t->answer_letter);
}

static bool is_code_grader(const struct eval_task *t)
{
	return t->grader == EVAL_GRADER_PYTHON_TESTS || t->grader == EVAL_GRADER_STDIO ||
	       t->grader == EVAL_GRADER_BRUTE_FORCE;
}

int grade_solution(struct grader *g, const struct eval_task *t, const char *solution, struct grade_result *r)
{
	memset(r, 0, sizeof *r);
	int64_t t0 = clock_now_ns();
	if (!solution)
		solution = "";
	if (is_code_grader(t)) {
		r->has_code = *solution != 0;
		char hex[65];
		sha256_hex(solution, strlen(solution), hex);
		snprintf(r->answer, sizeof r->answer, "%.16s", hex);
		grade_code(g, t, solution, r);
	} else {
		grade_answer(t, solution, r);
	}
	r->seconds = (double)(clock_now_ns() - t0) / 1e9;
	return 0;
}

int grade_completion(struct grader *g, const struct eval_task *t, const char *completion, struct grade_result *r)
{
	if (!is_code_grader(t))
		return grade_solution(g, t, completion ? completion : "", r);
	bool has_code;
	char *code = score_extract_code(completion ? completion : "", t->language, &has_code);
	if (!code)
		return -ENOMEM;
	int rc = 0;
	if (!has_code) {
		memset(r, 0, sizeof *r);
		set(r, GRADE_FAIL, "no code in the reply");
	} else {
		rc = grade_solution(g, t, code, r);
	}
	r->has_code = has_code;
	free(code);
	return rc;
}

char *grade_reference(const struct eval_task *t)
{
	if (t->reference)
		return strdup(t->reference);
	char buf[64];
	if (t->grader == EVAL_GRADER_NUMERIC)
		snprintf(buf, sizeof buf, "#### %.15g", t->answer);
	else if (t->grader == EVAL_GRADER_CHOICE)
		snprintf(buf, sizeof buf, "Answer: %c", t->answer_letter);
	else if (t->grader == EVAL_GRADER_BRUTE_FORCE)
		return strdup(t->brute);
	else
		return NULL;
	return strdup(buf);
}
