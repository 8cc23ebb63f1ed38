/* offline — see offline.h. The file is read and checked whole before grading so
 * that a bad line late in the file does not leave half the grades printed. */
#include "grade/offline.h"
#include "core/err.h"
#include "core/buf.h"
#include "core/json.h"
#include "grade/score.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct line_item {
	cJSON *obj;
	const struct eval_task *task;
	const char *completion;
	bool truncated;
};

int offline_grade(struct grader *g, const struct eval_dataset *d, const char *path, double loop_threshold, bool json,
		  FILE *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		err_set(err, errlen, "%s: %s", path, strerror(errno));
		return -EINVAL;
	}
	struct line_item *items = NULL;
	size_t n = 0, cap = 0;
	int rc = 0, lineno = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		bool blank = true;
		for (ssize_t i = 0; i < len && blank; i++)
			blank = line[i] == ' ' || line[i] == '\n' || line[i] == '\t' || line[i] == '\r';
		if (blank)
			continue;
		char jerr[128];
		cJSON *o = json_parse_n(line, (size_t)len, jerr, sizeof jerr);
		const char *id = o ? json_get_str(o, "task_id") : NULL;
		const char *c = o ? json_get_str(o, "completion") : NULL;
		const struct eval_task *t = id ? eval_dataset_find(d, id) : NULL;
		if (!o || !id || !c || !t) {
			err_set(err, errlen, "%s:%d: %s", path, lineno,
				 !o ? "not valid JSON; each line must be {\"task_id\": ..., \"completion\": ...}"
				 : !id ? "missing \"task_id\" (a string)"
				 : !c ? "missing \"completion\" (a string)"
				      : "unknown task_id; it is not in the dataset");
			cJSON_Delete(o);
			rc = -EINVAL;
			break;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct line_item *ni = realloc(items, cap * sizeof *ni);
			if (!ni) {
				cJSON_Delete(o);
				rc = -ENOMEM;
				err_set(err, errlen, "out of memory");
				break;
			}
			items = ni;
		}
		const char *fr = json_get_str(o, "finish_reason");
		items[n++] = (struct line_item){o, t, c, fr && strcmp(fr, "length") == 0};
	}
	free(line);
	fclose(f);
	if (rc == 0 && n == 0) {
		err_set(err, errlen, "%s: no completions", path);
		rc = -EINVAL;
	}
	int counts[SCORE_WRONG + 1] = {0};
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct grade_result r;
		if ((rc = grade_completion(g, items[i].task, items[i].completion, &r)) != 0)
			break;
		double loop = score_loop_text(items[i].completion, strlen(items[i].completion));
		struct score_facts facts = {.passed = r.status == GRADE_PASS,
					    .environment = r.status == GRADE_ENVIRONMENT,
					    .truncated = items[i].truncated,
					    .loop_pct = loop,
					    .loop_threshold = loop_threshold};
		enum score_class cls = score_classify(&facts);
		counts[cls]++;
		if (json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "task_id", items[i].task->id);
			cJSON_AddBoolToObject(o, "pass", cls == SCORE_PASS);
			cJSON_AddStringToObject(o, "failure_class", score_class_name(cls));
			cJSON_AddBoolToObject(o, "has_code", r.has_code);
			cJSON_AddNumberToObject(o, "loop_pct", loop);
			cJSON_AddStringToObject(o, "detail", r.detail);
			char *s = cJSON_PrintUnformatted(o);
			fprintf(out, "%s\n", s ? s : "{}");
			free(s);
			cJSON_Delete(o);
		} else {
			fprintf(out, "%-28s %-11s loop %5.1f%%  %s\n", items[i].task->id, score_class_name(cls), loop,
				r.detail);
		}
	}
	if (rc == 0 && !json) {
		fprintf(out, "%zu graded:", n);
		for (int c = SCORE_PASS; c <= SCORE_WRONG; c++)
			fprintf(out, " %s %d%s", score_class_name((enum score_class)c), counts[c], c < SCORE_WRONG ? "," : "\n");
	}
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(items[i].obj);
	free(items);
	return rc;
}
