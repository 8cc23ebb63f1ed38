/* build — see build.h. */
#include "report/build.h"
#include "core/err.h"
#include "report/bench.h"
#include "report/doc.h"
#include "report/eval.h"
#include "core/buf.h"
#include "core/json.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int report_build(const char *command, int argc, char **argv, struct report_doc **out, char *err, size_t errlen)
{
	*out = NULL;
	struct report_compare_opts co;
	struct report_bench_opts bo;
	struct report_doc *d = NULL;
	int rc;
	if (strcmp(command, "compare") == 0) {
		rc = report_compare_args(argc, argv, &co, err, errlen);
		if (rc == 0 && !(d = report_doc_create("Comparison of two eval runs")))
			rc = -ENOMEM;
		if (rc == 0)
			rc = report_compare_build(&co, d, err, errlen);
	} else if (strcmp(command, "bench") == 0) {
		rc = report_bench_args(argc, argv, &bo, err, errlen);
		if (rc == 0 && !(d = report_doc_create("Serving benchmark")))
			rc = -ENOMEM;
		if (rc == 0)
			rc = report_bench_build(&bo, d, err, errlen);
	} else {
		err_set(err, errlen, "unknown report '%s' (compare or bench)", command);
		return -EINVAL;
	}
	if (rc == -ENOMEM && !err[0])
		err_set(err, errlen, "out of memory");
	if (rc == 0) {
		report_doc_source(d, command, argc, argv);
		rc = report_doc_error(d);
	}
	if (rc) {
		report_doc_destroy(d);
		return rc;
	}
	*out = d;
	return 0;
}

static void sidecar_path(const char *report, char *out, size_t n)
{
	size_t l = strlen(report);
	if (l > 10 && strcmp(report + l - 10, ".sixi.json") == 0) {
		snprintf(out, n, "%s", report);
		return;
	}
	const char *dot = strrchr(report, '.'), *slash = strrchr(report, '/');
	if (dot && (!slash || dot > slash) && (strcmp(dot, ".md") == 0 || strcmp(dot, ".html") == 0))
		snprintf(out, n, "%.*s.sixi.json", (int)(dot - report), report);
	else
		snprintf(out, n, "%s.sixi.json", report);
}

/* The Markdown beside the sidecar, split into lines (NULL when absent). */
static char **md_lines(const char *sidecar, size_t *n, char **data)
{
	char path[4096];
	size_t l = strlen(sidecar) - strlen(".sixi.json");
	snprintf(path, sizeof path, "%.*s.md", (int)l, sidecar);
	*n = 0;
	*data = NULL;
	struct buf b;
	buf_init(&b);
	int rc = buf_read_file(&b, path); /* unreadable or empty: NULL, as absent */
	size_t count = 1;
	for (size_t i = 0; i < b.len; i++)
		count += b.data[i] == '\n';
	char **lines = rc || !b.len ? NULL : calloc(count + 1, sizeof *lines);
	if (!lines) {
		buf_finish(&b);
		return NULL;
	}
	lines[(*n)++] = b.data;
	for (size_t i = 0; i < b.len; i++)
		if (b.data[i] == '\n') {
			b.data[i] = 0;
			lines[(*n)++] = b.data + i + 1;
		}
	*data = buf_steal(&b);
	return lines;
}

int report_check(const char *report, const char *db, FILE *out, size_t *changed, size_t *total, char *err,
		 size_t errlen)
{
	char path[4096];
	*changed = *total = 0;
	sidecar_path(report, path, sizeof path);
	char jerr[512];
	cJSON *sc = json_parse_file(path, jerr, sizeof jerr);
	if (!sc) {
		err_set(err, errlen, "%s: cannot read the report's sidecar (%s); check needs the .sixi.json written "
			 "beside the report", path, jerr);
		return -EINVAL;
	}
	const char *command = json_get_str(sc, "command");
	cJSON *jargv = cJSON_GetObjectItemCaseSensitive(sc, "argv");
	cJSON *nums = cJSON_GetObjectItemCaseSensitive(sc, "numbers");
	int argc = cJSON_GetArraySize(jargv);
	char **argv = calloc((size_t)argc + 1, sizeof *argv);
	int rc = 0;
	if (!command || !cJSON_IsArray(jargv) || !cJSON_IsArray(nums)) {
		err_set(err, errlen, "%s: not a sixi report sidecar (command, argv or numbers missing)", path);
		rc = -EINVAL;
	} else if (!argv) {
		rc = -ENOMEM;
	}
	for (int i = 0; rc == 0 && i < argc; i++) {
		cJSON *a = cJSON_GetArrayItem(jargv, i);
		argv[i] = cJSON_IsString(a) ? a->valuestring : (char *)"";
		if (db && i > 0 && strcmp(argv[i - 1], "--db") == 0)
			argv[i] = (char *)db;
	}
	struct report_doc *d = NULL;
	size_t nlines = 0;
	char *md = NULL, **lines = md_lines(path, &nlines, &md);
	if (rc == 0)
		rc = report_build(command, argc, argv, &d, err, errlen);
	if (rc == 0) {
		/* match by id: a number that disappeared or appeared counts as changed too */
		size_t n = report_doc_num_count(d);
		char *seen = calloc(n + 1, 1);
		if (!seen)
			rc = -ENOMEM;
		cJSON *num;
		cJSON_ArrayForEach(num, nums)
		{
			if (rc)
				break;
			const char *id = json_get_str(num, "id"), *was = json_get_str(num, "value");
			const char *where = json_get_str(num, "md");
			if (!id || !was)
				continue;
			(*total)++;
			const char *now = NULL, *nid, *nval, *nq;
			for (size_t i = 0; i < n && !now; i++) {
				report_doc_num_get(d, i, &nid, &nval, &nq);
				if (!seen[i] && strcmp(nid, id) == 0) {
					now = nval;
					seen[i] = 1;
				}
			}
			if (!now || strcmp(now, was) != 0) {
				(*changed)++;
				fprintf(out, "%s  %s: was %s, now %s (query %s)\n", where ? where : "?", id, was,
					now ? now : "(gone)", json_get_str(num, "query") ? json_get_str(num, "query") : "?");
				continue;
			}
			/* the page itself must still show the recorded value (not edited by hand) */
			const char *colon = where ? strrchr(where, ':') : NULL;
			long line = colon ? strtol(colon + 1, NULL, 10) : 0;
			char cell[160];
			snprintf(cell, sizeof cell, "| %s |", was);
			if (lines && line > 0 && (size_t)line <= nlines && !strstr(lines[line - 1], cell)) {
				(*changed)++;
				fprintf(out, "%s  %s: the page no longer shows %s (edited after rendering?)\n", where, id, was);
			}
		}
		for (size_t i = 0; rc == 0 && i < n; i++) {
			if (seen[i])
				continue;
			const char *nid, *nval, *nq;
			report_doc_num_get(d, i, &nid, &nval, &nq);
			(*changed)++;
			fprintf(out, "(new)  %s: now %s (query %s), not in the rendered report\n", nid, nval, nq);
		}
		free(seen);
	}
	if (rc == -ENOMEM)
		err_set(err, errlen, "out of memory");
	report_doc_destroy(d);
	free(lines);
	free(md);
	free(argv);
	cJSON_Delete(sc);
	return rc ? rc : *changed ? 1 : 0;
}
