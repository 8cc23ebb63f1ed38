/* import — see import.h. One input line becomes one task line; the prompts say
 * how to answer (one fenced code block, or a final "#### N" line) because the
 * graders read exactly that. */
#include "eval/import.h"
#include "core/buf.h"
#include "core/json.h"
#include "eval/task.h"
#include "eval/errmsg.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *need(const cJSON *o, const char *key) { return json_get_str(o, key); }

/* A task object from one input object; NULL with err naming the missing key. */
static cJSON *convert(const char *format, const cJSON *in, long lineno, char *why, size_t whylen)
{
	cJSON *t = cJSON_CreateObject();
	char id[256];
	struct buf b;
	buf_init(&b);
	if (strcmp(format, "humaneval") == 0) {
		const char *tid = need(in, "task_id"), *prompt = need(in, "prompt"), *sol = need(in, "canonical_solution"),
			   *test = need(in, "test"), *entry = need(in, "entry_point");
		if (!tid || !prompt || !sol || !test || !entry) {
			snprintf(why, whylen, "needs string task_id, prompt, canonical_solution, test and entry_point");
			goto bad;
		}
		snprintf(id, sizeof id, "%s", tid);
		if (buf_printf(&b, "Complete this Python function. Reply with the whole function (and its imports) in "
				   "one ```python code block.\n\n```python\n%s```\n", prompt))
			goto bad;
		cJSON_AddStringToObject(t, "id", id);
		cJSON_AddStringToObject(t, "prompt", b.data);
		cJSON_AddStringToObject(t, "grader", "python_tests");
		cJSON_AddStringToObject(t, "entry_point", entry);
		cJSON_AddStringToObject(t, "tests", test);
		buf_reset(&b);
		if (buf_printf(&b, "%s%s", prompt, sol))
			goto bad;
		cJSON_AddStringToObject(t, "reference", b.data);
	} else if (strcmp(format, "mbpp") == 0) {
		const char *text = need(in, "text") ? need(in, "text") : need(in, "prompt"), *code = need(in, "code");
		const cJSON *tl = cJSON_GetObjectItem(in, "test_list");
		int64_t num;
		if (!text || !code || !cJSON_IsArray(tl) || cJSON_GetArraySize(tl) == 0 || !json_get_i64(in, "task_id", &num)) {
			snprintf(why, whylen, "needs task_id (number), text, code and a non-empty test_list");
			goto bad;
		}
		snprintf(id, sizeof id, "mbpp/%lld", (long long)num);
		if (buf_printf(&b, "%s\nYour code should pass this test:\n%s\nReply with the code in one ```python code block.",
			       text, cJSON_GetArrayItem(tl, 0)->valuestring ? cJSON_GetArrayItem(tl, 0)->valuestring : ""))
			goto bad;
		cJSON_AddStringToObject(t, "id", id);
		cJSON_AddStringToObject(t, "prompt", b.data);
		cJSON_AddStringToObject(t, "grader", "python_tests");
		buf_reset(&b);
		const char *setup = need(in, "test_setup_code");
		if (setup && *setup && buf_printf(&b, "%s\n", setup))
			goto bad;
		const cJSON *e;
		cJSON_ArrayForEach(e, tl)
			if (cJSON_IsString(e) && buf_printf(&b, "%s\n", e->valuestring))
				goto bad;
		cJSON_AddStringToObject(t, "tests", b.data ? b.data : "");
		cJSON_AddStringToObject(t, "reference", code);
	} else if (strcmp(format, "gsm8k") == 0) {
		const char *q = need(in, "question"), *a = need(in, "answer");
		const char *h = a ? strstr(a, "####") : NULL;
		char *end;
		double v = h ? strtod(h + 4, &end) : 0;
		if (!q || !h || end == h + 4) {
			snprintf(why, whylen, "needs question and an answer ending in \"#### N\"");
			goto bad;
		}
		/* GSM8K writes thousands with commas: "#### 1,000" */
		char num[64];
		size_t k = 0;
		for (const char *p = h + 4; *p && k + 1 < sizeof num; p++)
			if (*p != ',' && *p != ' ')
				num[k++] = *p;
		num[k] = 0;
		v = strtod(num, &end);
		snprintf(id, sizeof id, "gsm8k/%ld", lineno);
		if (buf_printf(&b, "%s\nSolve it step by step, then end your reply with a line '#### N' where N is the "
				   "final number.", q))
			goto bad;
		cJSON_AddStringToObject(t, "id", id);
		cJSON_AddStringToObject(t, "prompt", b.data);
		cJSON_AddStringToObject(t, "grader", "numeric");
		cJSON_AddNumberToObject(t, "answer", v);
		cJSON_AddStringToObject(t, "reference", a);
	} else {
		snprintf(why, whylen, "unknown format");
		goto bad;
	}
	buf_finish(&b);
	return t;
bad:
	buf_finish(&b);
	cJSON_Delete(t);
	return NULL;
}

int eval_import(const char *format, const char *path, const char *name, bool force, char *out_path, size_t out_len,
		size_t *n_tasks, char *err, size_t errlen)
{
	if (strcmp(format, "humaneval") != 0 && strcmp(format, "mbpp") != 0 && strcmp(format, "gsm8k") != 0)
		return eval_errorf(err, errlen, "--format \"%s\" is unknown; use humaneval, mbpp or gsm8k", format);
	char base[256];
	if (name) {
		snprintf(base, sizeof base, "%s", name);
	} else {
		const char *slash = strrchr(path, '/');
		snprintf(base, sizeof base, "%s", slash ? slash + 1 : path);
		char *dot = strchr(base, '.');
		if (dot)
			*dot = 0;
	}
	if (!base[0] || strchr(base, '/') || base[0] == '.')
		return eval_errorf(err, errlen, "dataset name \"%s\" is not a plain folder name; give --name", base);
	FILE *in = fopen(path, "r");
	if (!in)
		return eval_errorf(err, errlen, "%s: %s", path, strerror(errno));
	char dir[600], tmp[700];
	snprintf(dir, sizeof dir, "datasets/%s", base);
	snprintf(out_path, out_len, "%s/tasks.jsonl", dir);
	struct stat st;
	if (!force && stat(out_path, &st) == 0) {
		fclose(in);
		return eval_errorf(err, errlen, "%s exists; give --force to replace it", out_path);
	}
	mkdir("datasets", 0755);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		int e = errno;
		fclose(in);
		return eval_errorf(err, errlen, "cannot create %s: %s", dir, strerror(e));
	}
	snprintf(tmp, sizeof tmp, "%s/.tasks.jsonl.%d", dir, (int)getpid());
	FILE *out = fopen(tmp, "w");
	if (!out) {
		int e = errno;
		fclose(in);
		return eval_errorf(err, errlen, "cannot write %s: %s", tmp, strerror(e));
	}
	int rc = 0;
	long lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	*n_tasks = 0;
	while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
		lineno++;
		if (len <= 1)
			continue;
		char jerr[128], why[200];
		cJSON *o = json_parse_n(line, (size_t)len, jerr, sizeof jerr);
		cJSON *t = o ? convert(format, o, lineno, why, sizeof why) : NULL;
		if (!t) {
			rc = eval_errorf(err, errlen, "%s:%ld: %s", path, lineno, o ? why : "not valid JSON");
		} else {
			char *s = cJSON_PrintUnformatted(t);
			if (!s || fprintf(out, "%s\n", s) < 0)
				rc = eval_errorf(err, errlen, "writing %s failed", tmp);
			free(s);
			(*n_tasks)++;
		}
		cJSON_Delete(t);
		cJSON_Delete(o);
	}
	free(line);
	fclose(in);
	if (fclose(out) != 0 && rc == 0)
		rc = eval_errorf(err, errlen, "writing %s failed", tmp);
	if (rc == 0) {
		char lerr[2048];
		struct eval_dataset *d = eval_dataset_load(tmp, lerr, sizeof lerr);
		if (!d)
			rc = eval_errorf(err, errlen, "the converted file does not load (%s)", lerr);
		eval_dataset_destroy(d);
	}
	if (rc == 0 && rename(tmp, out_path) != 0)
		rc = eval_errorf(err, errlen, "cannot create %s: %s", out_path, strerror(errno));
	if (rc)
		unlink(tmp);
	return rc;
}
