/* dataset_cmd — see dataset_cmd.h. */
#include "datasets/dataset_cmd.h"
#include "core/args.h"
#include "core/buf.h"
#include "core/hash.h"
#include "core/json.h"
#include "datasets/import.h"
#include "datasets/task.h"
#include "datasets/toolcall.h"
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
	"usage: sixi-eval dataset check PATH [--json]\n"
	"  PATH: a tasks .jsonl file, a folder with tasks.jsonl, or a folder of tool-call sets\n"
	"  checks the schema, unique ids, that every task has tests and its Python parses, and the\n"
	"  LICENSE line of the folder's README.md; prints the size and the licence (exit 0 valid, 1 not)\n";

struct report {
	struct buf problems; /* one per line */
	int n_problems;
	cJSON *json;
};

__attribute__((format(printf, 2, 3))) static void problem(struct report *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (buf_vprintf(&r->problems, fmt, ap) == 0 && buf_puts(&r->problems, "\n")) {
		/* out of memory: the message is shorter, never wrong */
	}
	va_end(ap);
	r->n_problems++;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* sha256 and size of a file; -errno when unreadable. */
static int file_digest(const char *path, char hex[65], long *bytes)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	struct sha256 s;
	sha256_init(&s);
	unsigned char chunk[65536], out[32];
	size_t n;
	*bytes = 0;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		sha256_update(&s, chunk, n);
		*bytes += (long)n;
	}
	fclose(f);
	sha256_final(&s, out);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	return 0;
}

/* The first tool-call-looking line decides: {"tools": ..., "expect": ...}. */
static bool looks_like_toolcalls(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char *line = NULL;
	size_t cap = 0;
	bool yes = false;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) >= 0) {
		if (len <= 1)
			continue;
		char err[64];
		cJSON *o = json_parse_n(line, (size_t)len, err, sizeof err);
		yes = o && cJSON_GetObjectItemCaseSensitive(o, "expect") && cJSON_GetObjectItemCaseSensitive(o, "tools");
		cJSON_Delete(o);
		break;
	}
	free(line);
	fclose(f);
	return yes;
}

/* "LICENSE: ..." in README.md of dir (case-insensitive key, "Licence" too). */
static bool licence_line(const char *dir, char *out, size_t outlen)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/README.md", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncasecmp(line, "LICENSE:", 8) == 0 || strncasecmp(line, "LICENCE:", 8) == 0) {
			const char *v = line + 8;
			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, outlen, "%.500s", v);
			size_t n = strlen(out);
			while (n && isspace((unsigned char)out[n - 1]))
				out[--n] = 0;
			found = n > 0;
		}
	}
	fclose(f);
	return found;
}

static void check_mutants(const char *dir, const struct eval_dataset *d, struct report *r)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/mutants.jsonl", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, n = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len <= 1)
			continue;
		char err[128];
		cJSON *o = json_parse_n(line, (size_t)len, err, sizeof err);
		const char *task = o ? json_get_str(o, "task") : NULL, *sol = o ? json_get_str(o, "solution") : NULL;
		if (!task || !sol)
			problem(r, "%s:%d: a mutant needs string \"task\" and \"solution\"", path, lineno);
		else if (!eval_dataset_find(d, task))
			problem(r, "%s:%d: mutant of \"%s\", which is not a task of the set", path, lineno, task);
		else
			n++;
		cJSON_Delete(o);
	}
	free(line);
	fclose(f);
	printf("  mutants: %d in mutants.jsonl\n", n);
	if (r->json)
		cJSON_AddNumberToObject(r->json, "mutants", n);
}

static void check_tasks(const char *file, struct report *r)
{
	char err[16384];
	struct eval_dataset *d = eval_dataset_load(file, err, sizeof err);
	if (!d) {
		problem(r, "%s", err);
		return;
	}
	size_t n = eval_dataset_count(d);
	int by_grader[5] = {0};
	struct {
		char name[32];
		int n;
	} diff[8];
	int n_diff = 0, unlabelled = 0, no_reference = 0;
	for (size_t i = 0; i < n; i++) {
		const struct eval_task *t = eval_dataset_task(d, i);
		if ((unsigned)t->grader < 5)
			by_grader[t->grader]++;
		if (!t->reference && (t->grader == EVAL_GRADER_STDIO || t->grader == EVAL_GRADER_PYTHON_TESTS))
			no_reference++;
	}
	/* difficulty labels live in metadata; read them from the file's lines */
	FILE *f = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while (f && (len = getline(&line, &cap, f)) >= 0) {
		if (len <= 1)
			continue;
		char jerr[64];
		cJSON *o = json_parse_n(line, (size_t)len, jerr, sizeof jerr);
		const char *lab = o ? json_get_str(o, "metadata.difficulty") : NULL;
		if (!lab) {
			unlabelled++;
		} else {
			int k = 0;
			while (k < n_diff && strcmp(diff[k].name, lab) != 0)
				k++;
			if (k == n_diff && n_diff < 8) {
				snprintf(diff[n_diff].name, sizeof diff[n_diff].name, "%s", lab);
				diff[n_diff++].n = 0;
			}
			if (k < n_diff)
				diff[k].n++;
		}
		cJSON_Delete(o);
	}
	free(line);
	if (f)
		fclose(f);
	if (eval_import_python_check(file, file, err, sizeof err) != 0)
		problem(r, "%s", err);
	char hex[65];
	long bytes = 0;
	(void)file_digest(file, hex, &bytes);
	printf("  tasks: %zu (", n);
	bool first = true;
	for (int g = 0; g < 5; g++)
		if (by_grader[g]) {
			printf("%s%s %d", first ? "" : ", ", eval_grader_name((enum eval_grader)g), by_grader[g]);
			first = false;
		}
	printf(")\n");
	if (n_diff) {
		printf("  difficulty:");
		for (int k = 0; k < n_diff; k++)
			printf("%s %s %d", k ? "," : "", diff[k].name, diff[k].n);
		if (unlabelled)
			printf(", unlabelled %d", unlabelled);
		printf("\n");
	}
	if (no_reference)
		printf("  note: %d code tasks have no reference; preflight cannot check them\n", no_reference);
	printf("  file: %s, %ld bytes, sha256 %s\n", file, bytes, eval_dataset_sha256(d));
	if (r->json) {
		cJSON_AddNumberToObject(r->json, "tasks", (double)n);
		cJSON *g = cJSON_AddObjectToObject(r->json, "graders");
		for (int k = 0; k < 5; k++)
			if (by_grader[k])
				cJSON_AddNumberToObject(g, eval_grader_name((enum eval_grader)k), by_grader[k]);
		cJSON *dj = cJSON_AddObjectToObject(r->json, "difficulty");
		for (int k = 0; k < n_diff; k++)
			cJSON_AddNumberToObject(dj, diff[k].name, diff[k].n);
		cJSON_AddNumberToObject(r->json, "bytes", (double)bytes);
		cJSON_AddStringToObject(r->json, "sha256", eval_dataset_sha256(d));
	}
	char dir[1100];
	snprintf(dir, sizeof dir, "%s", file);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		check_mutants(dir, d, r);
	}
	eval_dataset_destroy(d);
}

static void check_toolcalls(const char *file, struct report *r)
{
	char err[16384];
	struct toolcall_set *s = toolcall_set_load(file, err, sizeof err);
	if (!s) {
		problem(r, "%s", err);
		return;
	}
	char hex[65];
	long bytes = 0;
	(void)file_digest(file, hex, &bytes);
	printf("  tool-call cases: %zu in %s, %ld bytes, sha256 %s\n", toolcall_set_count(s), file, bytes, hex);
	if (r->json) {
		cJSON *a = cJSON_GetObjectItemCaseSensitive(r->json, "tool_call_sets");
		if (!a)
			a = cJSON_AddArrayToObject(r->json, "tool_call_sets");
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "file", file);
		cJSON_AddNumberToObject(o, "cases", (double)toolcall_set_count(s));
		cJSON_AddStringToObject(o, "sha256", hex);
		cJSON_AddItemToArray(a, o);
	}
	toolcall_set_destroy(s);
}

static void check_file(const char *file, struct report *r)
{
	if (looks_like_toolcalls(file))
		check_toolcalls(file, r);
	else
		check_tasks(file, r);
}

static int cmd_check(const char *path, bool json)
{
	struct report r = {.json = json ? cJSON_CreateObject() : NULL};
	buf_init(&r.problems);
	char dir[1100];
	printf("%s\n", path);
	if (is_dir(path)) {
		snprintf(dir, sizeof dir, "%s", path);
		char tasks[1200];
		snprintf(tasks, sizeof tasks, "%s/tasks.jsonl", path);
		struct stat st;
		if (stat(tasks, &st) == 0) {
			check_file(tasks, &r);
		} else {
			/* a folder of sets (datasets/gates): every .jsonl in it, in name order */
			struct dirent **names = NULL;
			int n = scandir(path, &names, NULL, alphasort), found = 0;
			for (int i = 0; i < n; i++) {
				if (ends_with(names[i]->d_name, ".jsonl") && names[i]->d_name[0] != '.') {
					char f[1400];
					snprintf(f, sizeof f, "%s/%s", path, names[i]->d_name);
					check_file(f, &r);
					found++;
				}
				free(names[i]);
			}
			free(names);
			if (n < 0)
				problem(&r, "%s: cannot list the folder: %s", path, strerror(errno));
			else if (!found)
				problem(&r, "%s: no tasks.jsonl and no other .jsonl file; a dataset folder holds tasks.jsonl",
					path);
		}
	} else if (access(path, R_OK) == 0) {
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
		else
			snprintf(dir, sizeof dir, ".");
		check_file(path, &r);
	} else {
		problem(&r, "%s: %s; give a tasks .jsonl file or a dataset folder", path, strerror(errno));
		dir[0] = 0;
	}
	char lic[512];
	if (dir[0] && licence_line(dir, lic, sizeof lic)) {
		printf("  licence: %s\n", lic);
		if (r.json)
			cJSON_AddStringToObject(r.json, "licence", lic);
	} else if (dir[0]) {
		problem(&r, "%s/README.md: no licence line; add one starting \"LICENSE:\" (e.g. \"LICENSE: Apache-2.0\", "
			    "or the licence of the source you imported)", dir);
	}
	int rc = 0;
	if (r.n_problems) {
		fprintf(stderr, "%s", r.problems.data);
		printf("%s: INVALID (%d problem%s)\n", path, r.n_problems, r.n_problems == 1 ? "" : "s");
		rc = 1;
	} else {
		printf("%s: valid\n", path);
	}
	if (r.json) {
		cJSON_AddStringToObject(r.json, "path", path);
		cJSON_AddBoolToObject(r.json, "valid", rc == 0);
		cJSON_AddNumberToObject(r.json, "problems", r.n_problems);
		char *s = cJSON_PrintUnformatted(r.json);
		printf("%s\n", s ? s : "{}");
		free(s);
		cJSON_Delete(r.json);
	}
	buf_finish(&r.problems);
	return rc;
}

struct check_opts {
	bool json;
};
static const struct args_opt check_options[] = {
	ARGS_FLAG_OPT("--json", struct check_opts, json, true, 0, "the result as JSON"),
	ARGS_TABLE_END,
};

int dataset_cmd_main(int argc, char **argv)
{
	static const struct args_spec spec = { .prog = "sixi-eval dataset check", .usage = usage, .opts = check_options,
					       .max_pos = 1 };
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		args_help(&spec, 0, stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "check") != 0) {
		fprintf(stderr, "sixi-eval dataset: give a subcommand\n%s", usage);
		return 2;
	}
	const char *path = NULL;
	struct check_opts o = { 0 };
	int rc = args_cli(&spec, 0, argc - 2, argv + 2, &o, &path, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	if (!path) {
		fprintf(stderr, "sixi-eval dataset check: give a PATH\n%s", usage);
		return 2;
	}
	return cmd_check(path, o.json);
}
