/* grade — see grade.h.
 *
 * The driver gets the code as /input/solution.py and everything else (tests,
 * expected outputs, the brute-force program, the limits) as the sandbox's
 * private blob on fd 4, which no process of the candidate's can read. Its
 * result line on fd 3 decides; the absence of a "started" line means the
 * harness never ran (environment), and "started" without a result means the
 * job was killed (a limit, or the candidate killed the driver), which is the
 * model's failure. The harness's files are read once here and copied into
 * every sandbox (sandbox.h says why). */
#include "grade/grade.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/json.h"
#include "grade/sandbox.h"
#include "grade/score.h"
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

/* the files of harness/ the sandbox runs (driver.py imports wire.py and starts worker.py) */
static const char *const harness_names[] = {"driver.py", "worker.py", "wire.py"};
#define N_HARNESS (sizeof harness_names / sizeof harness_names[0])

struct ref_cpu {
	char *id;
	double cpu_s; /* the reference's measured CPU seconds (largest limited run) */
};

struct grader {
	char harness[1024];
	char python[256];
	char problem[1200];    /* "" when the sandbox works */
	struct sandbox_file hfiles[N_HARNESS]; /* contents of harness_names, read at create */
	struct ref_cpu *refs;  /* set by preflight or a recorded run, before grading */
	size_t n_refs;
	pthread_rwlock_t lock; /* readers: ordinary runs; writer: a timeout re-run alone */
};


/* A trivial job through the real driver: what the harness itself must do. */
static void probe_harness(struct grader *g)
{
	struct eval_task t = {0};
	t.id = "harness-probe";
	t.prompt = "probe";
	t.grader = EVAL_GRADER_PYTHON_TESTS;
	t.language = "python";
	t.tests = "assert f(2) == 3\n";
	t.timeout_s = 10;
	t.memory_mb = 1024;
	struct grade_result r;
	if (grade_solution(g, &t, "def f(x):\n    return x + 1\n", &r) != 0 || r.status != GRADE_PASS)
		snprintf(g->problem, sizeof g->problem,
			 "the harness in %.300s cannot grade a trivial task here (%.300s): the harness is broken, not the tasks",
			 g->harness, r.detail);
}

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
	for (size_t i = 0; i < N_HARNESS && !g->problem[0]; i++) {
		char path[1100];
		snprintf(path, sizeof path, "%s/%s", g->harness, harness_names[i]);
		size_t len = 0;
		char *data = buf_load_file(path, &len);
		if (!data)
			snprintf(g->problem, sizeof g->problem,
				 "the harness file %s cannot be read (%s); set SIXI_HARNESS_DIR to the harness/ folder",
				 path, strerror(errno));
		g->hfiles[i] = (struct sandbox_file){harness_names[i], data, len};
	}
	if (!g->problem[0] && sandbox_probe(g->python, g->problem, sizeof g->problem) == 0) {
		g->problem[0] = 0;
		probe_harness(g);
	}
	return g;
}

void grader_destroy(struct grader *g)
{
	if (!g)
		return;
	pthread_rwlock_destroy(&g->lock);
	for (size_t i = 0; i < N_HARNESS; i++)
		free((char *)g->hfiles[i].data);
	for (size_t i = 0; i < g->n_refs; i++)
		free(g->refs[i].id);
	free(g->refs);
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

/* evalplus scales each task's limit from its reference solution's measured
 * time: max(floor, 4 x reference) (its gt_time_limit_factor 4.0). Here the
 * floor is the task's timeout_s, in CPU seconds. */
#define REF_CPU_FACTOR 4.0

static const struct ref_cpu *ref_find(const struct grader *g, const char *id)
{
	for (size_t i = 0; i < g->n_refs; i++)
		if (strcmp(g->refs[i].id, id) == 0)
			return &g->refs[i];
	return NULL;
}

double grader_cpu_limit(const struct grader *g, const struct eval_task *t)
{
	const struct ref_cpu *r = ref_find(g, t->id);
	double scaled = r ? REF_CPU_FACTOR * r->cpu_s : 0;
	return scaled > t->timeout_s ? scaled : t->timeout_s;
}

/* The wall-clock backstop of one limited run: far above its CPU limit, so only a
 * starved or idle run reaches it (driver.py tells which). */
static double wall_backstop(double cpu_s) { return 4 * cpu_s + 10; }

int grader_set_reference_cpu(struct grader *g, const char *task_id, double cpu_s)
{
	struct ref_cpu *r = (struct ref_cpu *)ref_find(g, task_id);
	if (r) {
		r->cpu_s = cpu_s;
		return 0;
	}
	struct ref_cpu *n = realloc(g->refs, (g->n_refs + 1) * sizeof *n);
	if (!n)
		return -ENOMEM;
	g->refs = n;
	if (!(n[g->n_refs].id = strdup(task_id)))
		return -ENOMEM;
	n[g->n_refs++].cpu_s = cpu_s;
	return 0;
}

cJSON *grader_limits_json(const struct grader *g)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "rule", "cpu limit = max(task timeout_s, 4 x reference CPU seconds); "
					   "wall backstop = 4 x cpu limit + 10 s");
	cJSON *refs = cJSON_AddObjectToObject(o, "reference_cpu_s");
	for (size_t i = 0; refs && i < g->n_refs; i++)
		cJSON_AddNumberToObject(refs, g->refs[i].id, g->refs[i].cpu_s);
	if (!refs) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int grader_limits_load(struct grader *g, const cJSON *limits)
{
	const cJSON *refs = cJSON_GetObjectItemCaseSensitive(limits, "reference_cpu_s");
	const cJSON *e;
	int rc = 0;
	cJSON_ArrayForEach(e, refs)
	{
		if (rc == 0 && cJSON_IsNumber(e) && e->string)
			rc = grader_set_reference_cpu(g, e->string, e->valuedouble);
	}
	return rc;
}

static char *task_json(const struct eval_task *t, double cpu_s)
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
	if (t->brute)
		cJSON_AddStringToObject(o, "brute", t->brute);
	cJSON *lim = cJSON_AddObjectToObject(o, "limits");
	if (lim) {
		cJSON_AddNumberToObject(lim, "cpu_s", cpu_s);
		cJSON_AddNumberToObject(lim, "wall_s", wall_backstop(cpu_s));
	}
	char *s = lim ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	return s;
}

/* One sandboxed driver run. Returns 1 when the machine was too busy to judge
 * it (re-run alone), 0 otherwise (r set). */
static int run_once(struct grader *g, const struct eval_task *t, const char *code, struct grade_result *r)
{
	const char *mode = t->grader == EVAL_GRADER_PYTHON_TESTS ? "unit" : t->grader == EVAL_GRADER_STDIO ? "stdio" : "brute";
	double cpu_s = grader_cpu_limit(g, t);
	r->cpu_limit_s = cpu_s;
	char *tj = task_json(t, cpu_s);
	if (!tj) {
		set(r, GRADE_ENVIRONMENT, "out of memory");
		return 0;
	}
	struct sandbox_file input = {"solution.py", code, strlen(code)};
	const char *argv[] = {g->python, "/harness/driver.py", mode, NULL};
	int64_t runs = t->grader == EVAL_GRADER_STDIO ? cJSON_GetArraySize(t->cases)
		       : t->grader == EVAL_GRADER_BRUTE_FORCE ? 2 * t->n_random : 1;
	/* a hang guard only: the driver enforces the limits of each run itself */
	double outer_s = wall_backstop(cpu_s) * (double)runs + 30;
	struct sandbox_limits lim = {
		.wall_s = outer_s,
		.cpu_s = outer_s,
		.memory_mb = t->memory_mb,
		.nproc = 64,
		.fsize_mb = 16,
	};
	struct sandbox_job job = {&input, 1, g->hfiles, N_HARNESS, tj, strlen(tj)};
	struct sandbox_result sr;
	int rc = sandbox_run(&job, argv, &lim, &sr);
	free(tj);
	if (rc) {
		set(r, GRADE_ENVIRONMENT, "the sandbox could not start: %s", strerror(-rc));
		return 0;
	}
	int overloaded = 0;
	if (!sr.started) {
		char *nl = strchr(sr.output, '\n');
		if (nl)
			*nl = 0;
		set(r, GRADE_ENVIRONMENT, "the grader did not start (%s)",
		    sr.output[0] ? sr.output : sr.timed_out ? "timed out" : "no output");
	} else if (sr.timed_out) {
		/* the driver keeps its own limits; only a stopped or killed driver gets here */
		set(r, GRADE_FAIL, "timeout: the job ran past its %.0f s hang guard", lim.wall_s);
		r->timed_out = true;
	} else {
		char err[128];
		cJSON *res = json_parse_n(sr.channel, strlen(sr.channel), err, sizeof err);
		const char *status = res ? json_get_str(res, "status") : NULL;
		const char *detail = res ? json_get_str(res, "detail") : NULL;
		const cJSON *cpu = res ? cJSON_GetObjectItemCaseSensitive(res, "cpu_s") : NULL;
		r->cpu_s = cJSON_IsNumber(cpu) ? cpu->valuedouble : 0;
		if (!status) {
			/* killed by a limit, or by the candidate, before reporting */
			const char *tail = sr.output;
			size_t len = strlen(tail);
			if (len > 200)
				tail += len - 200;
			set(r, GRADE_FAIL, "the grader was stopped before its verdict (exit %d; a memory or process "
					   "limit, or the solution killed it): %s",
			    sr.exit_status, tail);
		} else if (strcmp(status, "pass") == 0) {
			set(r, GRADE_PASS, "%s", "all tests passed");
		} else if (strcmp(status, "environment") == 0) {
			set(r, GRADE_ENVIRONMENT, "%s", detail ? detail : "the grader cannot run here");
		} else if (strcmp(status, "overloaded") == 0) {
			set(r, GRADE_ENVIRONMENT, "%s", detail ? detail : "the machine is overloaded");
			overloaded = 1;
		} else if (strcmp(status, "timeout") == 0) {
			set(r, GRADE_FAIL, "timeout: %s", detail ? detail : "");
			r->timed_out = true;
		} else {
			set(r, GRADE_FAIL, "%s", detail ? detail : "tests failed");
		}
		cJSON_Delete(res);
	}
	sandbox_result_finish(&sr);
	return overloaded;
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
	int overloaded = run_once(g, t, code, r);
	pthread_rwlock_unlock(&g->lock);
	if (overloaded) {
		/* the machine, not the program: once more with no other grading beside it */
		pthread_rwlock_wrlock(&g->lock);
		r->timed_out = false;
		r->cpu_s = 0;
		run_once(g, t, code, r);
		pthread_rwlock_unlock(&g->lock);
		r->reran_alone = true;
	}
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
