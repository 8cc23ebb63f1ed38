/* db — see db.h. */
#include "report/db.h"
#include "core/err.h"
#include "store/store.h"
#include "stats/level.h"
#include <cjson/cJSON.h>
#include "core/json.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct store *report_db_open(const char *path, char *err, size_t errlen)
{
	if (!path || !*path) {
		err_set(err, errlen, "--db DB is required (the results database, e.g. %s)", STORE_DEFAULT_PATH);
		return NULL;
	}
	if (access(path, R_OK) != 0) {
		err_set(err, errlen, "%s: cannot read the database (%s); pass --db with the file sixi-eval or "
			 "sixi-bench wrote", path, strerror(errno));
		return NULL;
	}
	struct store *s = store_open(path, err, errlen);
	if (!s)
		return NULL;
	int64_t n = 0;
	if (store_run_count(s, &n, err, errlen) != 0) {
		store_close(s);
		return NULL;
	}
	if (n == 0) {
		err_set(err, errlen, "%s: the database holds no runs; record one with sixi-eval or sixi-bench first",
			 path);
		store_close(s);
		return NULL;
	}
	return s;
}

int report_db_run(struct store *s, int64_t id, const char *kind, struct report_run *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	struct store_run_info info;
	int rc = store_run_get(s, id, &info, err, errlen);
	if (rc == 0) {
		out->id = id;
		snprintf(out->kind, sizeof out->kind, "%s", info.kind ? info.kind : "");
		snprintf(out->workload, sizeof out->workload, "%s", info.workload ? info.workload : "");
		snprintf(out->model, sizeof out->model, "%s", info.model ? info.model : "");
		snprintf(out->status, sizeof out->status, "%s", info.status ? info.status : "");
		snprintf(out->started, sizeof out->started, "%s", info.started ? info.started : "");
		snprintf(out->config_hash, sizeof out->config_hash, "%s", info.config_hash ? info.config_hash : "");
		out->protocol_json = strdup(info.protocol_json ? info.protocol_json : "{}");
		cJSON *facts = info.host_facts ? cJSON_Parse(info.host_facts) : NULL;
		const char *mw = json_get_str(cJSON_GetObjectItemCaseSensitive(facts, "memory"), "warning");
		snprintf(out->memory_warning, sizeof out->memory_warning, "%s", mw ? mw : "");
		cJSON_Delete(facts);
		store_run_info_finish(&info);
		if (!out->protocol_json) {
			err_set(err, errlen, "out of memory reading run %lld", (long long)id);
			rc = -ENOMEM;
		} else if (strcmp(out->kind, kind) != 0) {
			err_set(err, errlen, "run %lld is a %s run, not an %s run", (long long)id, out->kind, kind);
			rc = -EINVAL;
		}
	} else if (rc == -ENOENT) {
		/* say which runs of that kind exist, so the user can pick one */
		char list[256] = "";
		int64_t *ids = NULL;
		size_t n = 0;
		if (store_run_list(s, kind, NULL, true, 10, &ids, &n, NULL, 0) == 0)
			for (size_t i = 0; i < n; i++) {
				size_t len = strlen(list);
				snprintf(list + len, sizeof list - len, "%s%lld", len ? ", " : "", (long long)ids[i]);
			}
		free(ids);
		err_set(err, errlen, "run %lld is not in the database (%s runs there: %s)", (long long)id, kind,
			 list[0] ? list : "none");
	}
	if (rc)
		report_run_finish(out);
	return rc;
}

void report_run_finish(struct report_run *r)
{
	if (!r)
		return;
	free(r->protocol_json);
	r->protocol_json = NULL;
}

static const char *error_class(const char *e)
{
	static const char *const known[] = { "connect", "http", "stall", "reset", "parse", "server", "usage", "timeout" };
	if (!e)
		return NULL;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strcmp(e, known[i]) == 0)
			return known[i];
	return "other";
}

struct level_request report_level_request(const struct store_bench_read *x)
{
	return (struct level_request){
		.stream = x->stream, .prompt_tokens = x->prompt_tokens, .cached_tokens = x->cached_tokens,
		.completion_tokens = x->completion_tokens, .requested_tokens = x->requested_tokens,
		.sse_events = x->sse_events, .token_events = x->content_events, .t_intended = x->t_intended,
		.t_send = x->t_send, .t_first_token = x->t_first_token, .t_last = x->t_last, .t_done = x->t_done,
		.error = error_class(x->error), .followup = strcmp(x->tag, "followup") == 0,
	};
}

bool report_run_unique_prompts(const char *workload, const char *protocol_json)
{
	cJSON *p = protocol_json ? cJSON_Parse(protocol_json) : NULL;
	cJSON *u = cJSON_GetObjectItemCaseSensitive(p, "unique_prompts");
	const char *w = workload ? workload : "";
	bool v = cJSON_IsBool(u) ? cJSON_IsTrue(u)
				 : strcmp(w, "sweep") == 0 || strcmp(w, "prefill") == 0 || strcmp(w, "rate") == 0;
	cJSON_Delete(p);
	return v;
}
