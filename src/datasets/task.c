/* task — see task.h.
 *
 * Each line is parsed on its own so that a bad line is reported with its
 * number and the rest of the file is still checked. The whole file is read into
 * memory: bundled and imported sets are a few MB at most. */
#include "datasets/task.h"
#include "core/err.h"
#include "core/buf.h"
#include "core/hash.h"
#include "core/json.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Messages are best effort: on allocation failure the text is shorter, never wrong. */
#define bprintf(...) do { if (buf_printf(__VA_ARGS__)) {} } while (0)

#define MAX_REPORTED 20

struct eval_dataset {
	struct eval_task *tasks;
	size_t n, cap;
	cJSON **objs;          /* one parsed line per task; owns the strings tasks point into */
	const char **req_pool; /* requires arrays, one allocation per task */
	char path[1024];
	char sha[65];
};

static const char *const grader_names[] = {"python_tests", "stdio", "brute_force", "numeric", "choice"};

const char *eval_grader_name(enum eval_grader g)
{
	return (unsigned)g < sizeof grader_names / sizeof grader_names[0] ? grader_names[g] : "?";
}

static const char *const known_keys[] = {"id",     "prompt",   "grader",    "language",  "reasoning",
					 "tests",  "entry_point", "generator", "brute",   "random_inputs",
					 "seed",   "answer",   "tolerance", "choices",   "reference",
					 "requires", "timeout_s", "memory_mb", "metadata", NULL};

struct problems {
	struct buf msg;
	int count;
	const char *file;
};

__attribute__((format(printf, 3, 4))) static void problem(struct problems *p, int line, const char *fmt, ...)
{
	p->count++;
	if (p->count > MAX_REPORTED)
		return;
	va_list ap;
	va_start(ap, fmt);
	int rc = buf_printf(&p->msg, "%s%s:%d: ", p->msg.len ? "\n" : "", p->file, line);
	rc |= buf_vprintf(&p->msg, fmt, ap);
	va_end(ap);
	(void)rc;
}

static const char *str_field(const cJSON *o, const char *key, bool required, struct problems *pr, int line,
			     bool *ok)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v) {
		if (required) {
			problem(pr, line, "missing \"%s\" (a string)", key);
			*ok = false;
		}
		return NULL;
	}
	if (!cJSON_IsString(v)) {
		problem(pr, line, "\"%s\" must be a string", key);
		*ok = false;
		return NULL;
	}
	return v->valuestring;
}

static bool num_field(const cJSON *o, const char *key, double min, double max, double *out, struct problems *pr,
		      int line)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return true;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min || v->valuedouble > max) {
		problem(pr, line, "\"%s\" must be a number from %g to %g", key, min, max);
		return false;
	}
	*out = v->valuedouble;
	return true;
}

static bool valid_id(const char *s)
{
	if (!*s || strlen(s) > 200)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.' || c == '/'))
			return false;
	}
	return true;
}

static bool blank(const char *s)
{
	if (!s)
		return true;
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

/* Fills t from o; false (with problems recorded) when the line is unusable. */
static bool task_from_json(struct eval_dataset *d, struct eval_task *t, const cJSON *o, struct problems *pr,
			   int line)
{
	bool ok = true;
	memset(t, 0, sizeof *t);
	t->file = d->path;
	t->line = line;
	t->language = "python";
	t->n_random = 40;
	t->seed = 1;
	t->tolerance = 1e-6;
	t->timeout_s = 10;
	t->memory_mb = 1024;
	for (const cJSON *k = o->child; k; k = k->next) {
		bool known = false;
		for (const char *const *q = known_keys; *q && !known; q++)
			known = strcmp(*q, k->string) == 0;
		if (!known) {
			problem(pr, line, "unknown key \"%s\"; the keys are listed in datasets/README.md", k->string);
			ok = false;
		}
	}
	t->id = str_field(o, "id", true, pr, line, &ok);
	if (t->id && !valid_id(t->id)) {
		problem(pr, line, "id \"%.60s\" must be 1-200 characters from A-Z a-z 0-9 _ - . /", t->id);
		ok = false;
	}
	t->prompt = str_field(o, "prompt", true, pr, line, &ok);
	if (t->prompt && blank(t->prompt)) {
		problem(pr, line, "\"prompt\" is empty");
		ok = false;
	}
	const char *g = str_field(o, "grader", true, pr, line, &ok);
	bool have_grader = false;
	if (g) {
		for (size_t i = 0; i < sizeof grader_names / sizeof grader_names[0]; i++) {
			if (strcmp(g, grader_names[i]) == 0) {
				t->grader = (enum eval_grader)i;
				have_grader = true;
			}
		}
		if (!have_grader) {
			problem(pr, line,
				"unknown grader \"%s\"; use python_tests, stdio, brute_force, numeric or choice", g);
			ok = false;
		}
	}
	const char *lang = str_field(o, "language", false, pr, line, &ok);
	if (lang)
		t->language = lang;
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "reasoning");
	if (r && !cJSON_IsBool(r)) {
		problem(pr, line, "\"reasoning\" must be true or false");
		ok = false;
	}
	t->reasoning = cJSON_IsTrue(r);
	t->reference = str_field(o, "reference", false, pr, line, &ok);
	ok &= num_field(o, "timeout_s", 0.1, 3600, &t->timeout_s, pr, line);
	double mem = (double)t->memory_mb;
	ok &= num_field(o, "memory_mb", 64, 65536, &mem, pr, line);
	t->memory_mb = (int64_t)mem;

	const cJSON *req = cJSON_GetObjectItemCaseSensitive(o, "requires");
	if (req) {
		int n = cJSON_IsArray(req) ? cJSON_GetArraySize(req) : -1;
		const char **arr = n > 0 ? calloc((size_t)n, sizeof *arr) : NULL;
		if (n < 0) {
			problem(pr, line, "\"requires\" must be an array of Python module names");
			ok = false;
		} else if (n > 0 && !arr) {
			problem(pr, line, "out of memory");
			ok = false;
		} else {
			int i = 0;
			t->requires = arr;
			for (const cJSON *e = req->child; e; e = e->next) {
				if (!cJSON_IsString(e) || !valid_id(e->valuestring)) {
					problem(pr, line, "\"requires\" entries must be module names");
					ok = false;
					break;
				}
				arr[i++] = e->valuestring;
			}
			t->n_requires = i;
		}
	}
	if (!have_grader)
		return false;

	switch (t->grader) {
	case EVAL_GRADER_PYTHON_TESTS:
		t->tests = str_field(o, "tests", false, pr, line, &ok);
		t->entry_point = str_field(o, "entry_point", false, pr, line, &ok);
		if (blank(t->tests)) {
			problem(pr, line, "task \"%s\" has no tests: python_tests needs \"tests\" (Python assertions)",
				t->id ? t->id : "?");
			ok = false;
		}
		if (!t->reference) {
			problem(pr, line, "python_tests needs a \"reference\" solution (preflight checks it passes)");
			ok = false;
		}
		break;
	case EVAL_GRADER_STDIO: {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "tests");
		if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) == 0) {
			problem(pr, line,
				"task \"%s\" has no tests: stdio needs \"tests\": [{\"input\": ..., \"output\": ...}]",
				t->id ? t->id : "?");
			ok = false;
		} else {
			int i = 0;
			for (const cJSON *e = c->child; e; e = e->next, i++) {
				if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "input")) ||
				    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "output"))) {
					problem(pr, line, "tests[%d] needs string \"input\" and \"output\"", i);
					ok = false;
				}
			}
		}
		t->cases = c;
		if (!t->reference) {
			problem(pr, line, "stdio needs a \"reference\" solution (preflight checks it passes)");
			ok = false;
		}
		break;
	}
	case EVAL_GRADER_BRUTE_FORCE: {
		t->generator = str_field(o, "generator", false, pr, line, &ok);
		t->brute = str_field(o, "brute", false, pr, line, &ok);
		if (blank(t->generator) || blank(t->brute)) {
			problem(pr, line,
				"task \"%s\" has no tests: brute_force needs \"generator\" (defines gen(rng)) and "
				"\"brute\" (the slow trusted program)",
				t->id ? t->id : "?");
			ok = false;
		}
		double n = 40, seed = 1;
		ok &= num_field(o, "random_inputs", 1, 10000, &n, pr, line);
		ok &= num_field(o, "seed", 0, 4294967295.0, &seed, pr, line);
		t->n_random = (int64_t)n;
		t->seed = (int64_t)seed;
		break;
	}
	case EVAL_GRADER_NUMERIC: {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "answer");
		if (!cJSON_IsNumber(a) || !isfinite(a->valuedouble)) {
			problem(pr, line, "task \"%s\" has no tests: numeric needs \"answer\" (a number)",
				t->id ? t->id : "?");
			ok = false;
		} else {
			t->answer = a->valuedouble;
		}
		ok &= num_field(o, "tolerance", 0, 1e300, &t->tolerance, pr, line);
		break;
	}
	case EVAL_GRADER_CHOICE: {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "choices");
		const char *a = str_field(o, "answer", false, pr, line, &ok);
		int n = cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0;
		if (n < 2 || n > 26) {
			problem(pr, line, "choice needs \"choices\": an array of 2 to 26 strings");
			ok = false;
		}
		if (!a || strlen(a) != 1 || a[0] < 'A' || a[0] >= 'A' + (n ? n : 26)) {
			problem(pr, line, "task \"%s\" has no tests: choice needs \"answer\": one letter A.. within the choices",
				t->id ? t->id : "?");
			ok = false;
		} else {
			t->answer_letter = a[0];
		}
		t->n_choices = n;
		break;
	}
	}
	return ok;
}

static char *read_all(const char *path, size_t *n, char *err, size_t errlen)
{
	char *data = buf_load_file(path, n);
	if (!data && errno == ENOMEM)
		err_set(err, errlen, "%s: out of memory", path);
	else if (!data)
		err_set(err, errlen, "%s: %s; give a .jsonl file or a folder with tasks.jsonl", path, strerror(errno));
	return data;
}

static struct eval_dataset *dataset_parse(struct eval_dataset *d, char *data, size_t n, char *err, size_t errlen);

struct eval_dataset *eval_dataset_load(const char *path, char *err, size_t errlen)
{
	struct eval_dataset *d = calloc(1, sizeof *d);
	if (!d) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(d->path, sizeof d->path, "%s/tasks.jsonl", path);
	else
		snprintf(d->path, sizeof d->path, "%s", path);
	size_t n;
	char *data = read_all(d->path, &n, err, errlen);
	if (!data) {
		free(d);
		return NULL;
	}
	return dataset_parse(d, data, n, err, errlen);
}

struct eval_dataset *eval_dataset_parse(const char *bytes, size_t n, const char *name, char *err, size_t errlen)
{
	struct eval_dataset *d = calloc(1, sizeof *d);
	char *data = d ? malloc(n + 1) : NULL;
	if (!data) {
		free(d);
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	if (n)
		memcpy(data, bytes, n);
	data[n] = 0;
	snprintf(d->path, sizeof d->path, "%s", name);
	return dataset_parse(d, data, n, err, errlen);
}

/* Parses data[0..n) (owned, freed here) into d (freed on error). */
static struct eval_dataset *dataset_parse(struct eval_dataset *d, char *data, size_t n, char *err, size_t errlen)
{
	sha256_hex(data, n, d->sha);
	struct problems pr = {.file = d->path};
	buf_init(&pr.msg);
	int line = 0;
	for (char *p = data; p < data + n;) {
		char *eol = memchr(p, '\n', (size_t)(data + n - p));
		size_t len = eol ? (size_t)(eol - p) : (size_t)(data + n - p);
		line++;
		char *next = eol ? eol + 1 : data + n;
		if (blank(len ? (p[len] = 0, p) : "")) {
			p = next;
			continue;
		}
		char jerr[128];
		cJSON *o = json_parse_n(p, len, jerr, sizeof jerr);
		p = next;
		if (!o) {
			problem(&pr, line, "not valid JSON (%s); each line must be one JSON object", jerr);
			continue;
		}
		if (!cJSON_IsObject(o)) {
			problem(&pr, line, "not a JSON object; each line must be one task object");
			cJSON_Delete(o);
			continue;
		}
		if (d->n == d->cap) {
			size_t ncap = d->cap ? d->cap * 2 : 64;
			struct eval_task *nt = realloc(d->tasks, ncap * sizeof *nt);
			cJSON **no = nt ? realloc(d->objs, ncap * sizeof *no) : NULL;
			if (nt)
				d->tasks = nt;
			if (!no) {
				cJSON_Delete(o);
				problem(&pr, line, "out of memory");
				break;
			}
			d->objs = no;
			d->cap = ncap;
		}
		d->objs[d->n] = o;
		struct eval_task *t = &d->tasks[d->n];
		bool ok = task_from_json(d, t, o, &pr, line);
		d->n++;
		if (ok && t->id) {
			for (size_t i = 0; i + 1 < d->n; i++) {
				if (d->tasks[i].id && strcmp(d->tasks[i].id, t->id) == 0) {
					problem(&pr, line, "duplicate task id \"%s\" (first on line %d); ids must be unique",
						t->id, d->tasks[i].line);
					break;
				}
			}
		}
	}
	free(data);
	if (!pr.count && d->n == 0)
		problem(&pr, line, "no tasks; the file needs one JSON object per line");
	if (pr.count) {
		if (pr.count > MAX_REPORTED)
			bprintf(&pr.msg, "\n(%d more problems not shown)", pr.count - MAX_REPORTED);
		err_set(err, errlen, "%s", pr.msg.data ? pr.msg.data : "invalid dataset");
		buf_finish(&pr.msg);
		eval_dataset_destroy(d);
		return NULL;
	}
	buf_finish(&pr.msg);
	return d;
}

void eval_dataset_destroy(struct eval_dataset *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free((void *)d->tasks[i].requires);
		cJSON_Delete(d->objs[i]);
	}
	free(d->tasks);
	free(d->objs);
	free(d);
}

size_t eval_dataset_count(const struct eval_dataset *d) { return d->n; }
const struct eval_task *eval_dataset_task(const struct eval_dataset *d, size_t i) { return i < d->n ? &d->tasks[i] : NULL; }
const char *eval_dataset_sha256(const struct eval_dataset *d) { return d->sha; }
const char *eval_dataset_path(const struct eval_dataset *d) { return d->path; }

const struct eval_task *eval_dataset_find(const struct eval_dataset *d, const char *id)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->tasks[i].id, id) == 0)
			return &d->tasks[i];
	return NULL;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int cmp_task_id(const void *a, const void *b)
{
	const struct eval_task *const *x = a, *const *y = b;
	return strcmp((*x)->id, (*y)->id);
}

void eval_tasks_shuffle(const struct eval_task **t, size_t n, int64_t seed, int64_t repeat)
{
	qsort(t, n, sizeof *t, cmp_task_id);
	uint64_t state = (uint64_t)seed * 0x100000001B3ull ^ (uint64_t)(repeat + 1);
	for (size_t i = n; i > 1; i--) {
		/* modulo bias is below 1e-17 for any realistic n */
		size_t j = (size_t)(splitmix64(&state) % i);
		const struct eval_task *tmp = t[i - 1];
		t[i - 1] = t[j];
		t[j] = tmp;
	}
}
