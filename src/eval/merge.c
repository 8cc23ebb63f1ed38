/* merge — see merge.h.
 *
 * Two passes. The first reads every input's eval runs (header only) and refuses
 * what cannot be merged before OUT is touched. The second copies, per
 * configuration, each input run's rows (and the raw texts they name) into OUT's
 * merged run inside one transaction, checks the coverage of the frozen task order
 * and records the shards. Inputs are opened with store_open like any results file;
 * their rows are streamed, never held whole. */
#include "eval/merge.h"
#include "eval/run.h"
#include "eval/shard.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/json.h"
#include "session/session.h"
#include "store/store.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct src_run {
	size_t file;                 /* index into the inputs */
	struct store_run_info info;
	char key[65];                /* eval_merge_key of info.protocol_json */
	struct eval_shard shard;     /* n 0: a whole run */
	int64_t rows;                /* rows it holds (counted while copying) */
};

struct merge {
	const char *const *in;
	size_t n_in;
	struct store **st;           /* one per input */
	struct src_run *runs;
	size_t n_runs;
	struct store *out;
	char *err;
	size_t errlen;
};

/* ---- the merge key ---- */

int eval_merge_key(const char *protocol_json, char hex[65])
{
	cJSON *o = protocol_json ? cJSON_Parse(protocol_json) : NULL;
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return -EINVAL;
	}
	cJSON *c;
	cJSON_ArrayForEach(c, json_path(o, "protocol.conditions"))
		cJSON_DeleteItemFromObjectCaseSensitive(c, "endpoint");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "server_fingerprint");
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return -ENOMEM;
	sha256_hex(text, strlen(text), hex);
	free(text);
	return 0;
}

/* ---- pass 1: what the inputs hold ---- */

static int read_input(struct merge *m, size_t i)
{
	const char *path = m->in[i];
	struct stat sb;
	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
		return err_fail(m->err, m->errlen, "%s: no such results file; give the shard files `sixi-eval run --shard` wrote",
				path);
	m->st[i] = store_open(path, m->err, m->errlen);
	if (!m->st[i])
		return -EIO;
	int64_t *ids = NULL;
	size_t n = 0;
	int rc = store_run_list(m->st[i], "eval", "eval", false, 0, &ids, &n, m->err, m->errlen);
	if (rc)
		return rc;
	if (n == 0)
		rc = err_fail(m->err, m->errlen, "%s holds no eval run; give the files `sixi-eval run` wrote", path);
	struct src_run *grown = rc ? NULL : realloc(m->runs, (m->n_runs + n) * sizeof *m->runs);
	if (!rc && !grown)
		rc = -ENOMEM;
	if (grown)
		m->runs = grown;
	for (size_t k = 0; rc == 0 && k < n; k++) {
		struct src_run *r = &m->runs[m->n_runs];
		memset(r, 0, sizeof *r);
		r->file = i;
		rc = store_run_get(m->st[i], ids[k], &r->info, m->err, m->errlen);
		if (rc)
			break;
		m->n_runs++;
		if (eval_merge_key(r->info.protocol_json, r->key) != 0) {
			rc = err_fail(m->err, m->errlen, "%s run %lld: its stored configuration is not a JSON object", path,
				      (long long)ids[k]);
			break;
		}
		cJSON *sum = r->info.summary_json ? cJSON_Parse(r->info.summary_json) : NULL;
		if (json_get_i64(sum, "shard.n", &r->shard.n))
			(void)json_get_i64(sum, "shard.k", &r->shard.k);
		cJSON_Delete(sum);
	}
	free(ids);
	if (rc == -ENOMEM)
		err_set(m->err, m->errlen, "out of memory reading %s", path);
	return rc;
}

/* Keys of the frozen configuration compared whole and named by their key only (long
 * lists, per-host measurements, the fingerprint: checked apart). */
static bool whole_key(void *ctx, const char *key)
{
	(void)ctx;
	return strcmp(key, "server_fingerprint") == 0 || strcmp(key, "task_order") == 0 ||
	       strcmp(key, "excluded") == 0 || strcmp(key, "grader_limits") == 0 ||
	       (strncmp(key, "protocol.conditions[", 20) == 0 && strstr(key, "].endpoint"));
}

struct key_list {
	char text[1024];
	int n;
};

static void add_key(void *ctx, const char *key, const cJSON *a, const cJSON *b)
{
	(void)a;
	(void)b;
	struct key_list *k = ctx;
	/* the endpoints may differ (replicas); everything else named in the merge key may not */
	if (strncmp(key, "protocol.conditions[", 20) == 0 && strstr(key, "].endpoint"))
		return;
	if (strcmp(key, "server_fingerprint") == 0)
		return;
	size_t l = strlen(k->text);
	if (l + strlen(key) + 8 < sizeof k->text)
		snprintf(k->text + l, sizeof k->text - l, "%s%s", k->n ? ", " : "", key);
	k->n++;
}

/* Refuses two runs of different configurations, naming the nested keys. */
static int refuse_mix(struct merge *m, const struct src_run *a, const struct src_run *b)
{
	cJSON *ja = cJSON_Parse(a->info.protocol_json), *jb = cJSON_Parse(b->info.protocol_json);
	struct key_list k = { "", 0 };
	json_diff(ja, jb, whole_key, add_key, &k);
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	return err_fail(m->err, m->errlen,
			"%s run %lld and %s run %lld are not shards of one run: their frozen configurations differ in %s; "
			"merge only the shards of one `sixi-eval run` (the same arguments, dataset files and preflight)",
			m->in[a->file], (long long)a->info.id, m->in[b->file], (long long)b->info.id,
			k.n ? k.text : "their configuration");
}

static bool input_has(const struct merge *m, size_t file, const char *key)
{
	for (size_t i = 0; i < m->n_runs; i++)
		if (m->runs[i].file == file && strcmp(m->runs[i].key, key) == 0)
			return true;
	return false;
}

/* Every input must hold the same configurations (one, or one per condition of a
 * protocol), and the runs of one configuration must have met one model. */
static int check_inputs(struct merge *m)
{
	for (size_t i = 0; i < m->n_runs; i++)
		for (size_t f = 0; f < m->n_in; f++)
			if (!input_has(m, f, m->runs[i].key)) {
				/* the run of file f closest in order to compare with */
				const struct src_run *other = NULL;
				for (size_t j = 0; j < m->n_runs && !other; j++)
					if (m->runs[j].file == f)
						other = &m->runs[j];
				return refuse_mix(m, &m->runs[i], other);
			}
	for (size_t i = 0; i < m->n_runs; i++)
		for (size_t j = 0; j < i; j++) {
			const struct src_run *a = &m->runs[j], *b = &m->runs[i];
			if (strcmp(a->key, b->key) != 0)
				continue;
			const char *fa = a->info.fingerprint ? a->info.fingerprint : "";
			const char *fb = b->info.fingerprint ? b->info.fingerprint : "";
			char field[256] = "";
			int d = session_fingerprint_model_diff(fa, fb, field, sizeof field);
			if (d == -ENOMEM)
				return err_fail(m->err, m->errlen, "out of memory comparing fingerprints");
			if (d == 1 || (d < 0 && strcmp(fa, fb) != 0))
				return err_fail(m->err, m->errlen,
						"%s run %lld and %s run %lld were run against servers of different models "
						"(the fingerprints differ in %s); shards of one run must meet one model",
						m->in[a->file], (long long)a->info.id, m->in[b->file], (long long)b->info.id,
						d == 1 ? field : "their whole text");
			break;
		}
	return 0;
}

/* ---- pass 2: the rows ---- */

struct copy {
	struct merge *m;
	struct src_run *src;
	int64_t run_id;              /* in OUT */
	int64_t added, present;
};

static int copy_raw(struct copy *c, const char *sha)
{
	if (!sha || !*sha)
		return 0;
	struct merge *m = c->m;
	const char *path = m->in[c->src->file];
	char *bytes = NULL, hex[65];
	size_t n = 0;
	int rc = store_raw_get(m->st[c->src->file], sha, &bytes, &n);
	if (rc == -ENOENT)
		return err_fail(m->err, m->errlen, "%s: raw text %s that a row of run %lld names is missing; the file is damaged",
				path, sha, (long long)c->src->info.id);
	if (rc)
		return err_fail(m->err, m->errlen, "%s: reading raw text %s failed", path, sha);
	rc = store_raw_put(m->out, bytes, n, hex);
	free(bytes);
	if (rc) {
		err_set(m->err, m->errlen, "writing raw text failed: %s", store_errmsg(m->out));
		return -EIO;
	}
	if (strcmp(hex, sha) != 0)
		return err_fail(m->err, m->errlen, "%s: raw text %s does not match its sha256 (%s); the file is damaged", path,
				sha, hex);
	return 0;
}

static int copy_row(void *ctx, const struct store_eval_read *r)
{
	struct copy *c = ctx;
	struct merge *m = c->m;
	c->src->rows++;
	int rc = copy_raw(c, r->raw_sha);
	if (rc == 0)
		rc = copy_raw(c, r->reasoning_sha);
	if (rc == 0 && r->detail_json) {
		cJSON *d = cJSON_Parse(r->detail_json);
		const char *chunks = json_get_str(d, "chunks_sha256");
		rc = copy_raw(c, chunks);
		cJSON_Delete(d);
	}
	if (rc)
		return rc;
	struct store_eval_row w = {
		.run_id = c->run_id,
		.repeat = r->repeat,
		.attempt = r->attempt,
		.task_id = r->task_id,
		.pass = r->pass,
		.truncated = r->truncated,
		.has_code = r->has_code,
		.prompt_tokens = r->prompt_tokens,
		.completion_tokens = r->completion_tokens,
		.seconds = r->seconds,
		.loop_pct = r->loop_pct,
		.early_stop = r->early_stop,
		.api_error = r->api_error,
		.failure_class = r->failure_class,
		.finish_reason = r->finish_reason,
		.raw_sha = r->raw_sha,
		.reasoning_sha = r->reasoning_sha,
		.detail_json = r->detail_json,
	};
	int outcome = 0;
	if (store_eval_put(m->out, &w, &outcome) != 0) {
		err_set(m->err, m->errlen, "writing a row failed: %s", store_errmsg(m->out));
		return -EIO;
	}
	if (outcome < 0)
		return err_fail(m->err, m->errlen,
				"task %s repeat %lld attempt %lld is in %s run %lld with another outcome than the one already "
				"merged (%s): two runs of one attempt are not shards of one run; merge the shard files of "
				"one run only",
				r->task_id, (long long)r->repeat, (long long)r->attempt, m->in[c->src->file],
				(long long)c->src->info.id, r->failure_class);
	if (outcome > 0)
		c->added++;
	else
		c->present++;
	return 0;
}

/* ---- coverage ---- */

struct pairs {
	char **v;
	size_t n, cap;
};

static int pair_add(void *ctx, const struct store_eval_read *r)
{
	struct pairs *p = ctx;
	if (!r->final)
		return 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		char **v = realloc(p->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	size_t len = strlen(r->task_id) + 24;
	char *k = malloc(len);
	if (!k)
		return -ENOMEM;
	snprintf(k, len, "%lld %s", (long long)r->repeat, r->task_id);
	p->v[p->n++] = k;
	return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

struct coverage {
	int64_t n_shards;            /* N the pairs are counted by */
	int64_t pairs, missing;      /* (task, repeat) pairs of the task order, and those without a row */
	int64_t *missing_by_shard;   /* [n_shards] */
};

/* Which pairs of the frozen task order have no row in OUT's run. */
static int coverage(struct merge *m, int64_t run_id, const char *protocol_json, struct coverage *cv)
{
	struct pairs p = { NULL, 0, 0 };
	int rc = store_eval_each(m->out, run_id, STORE_EVAL_BY_REPEAT, pair_add, &p, m->err, m->errlen);
	if (rc == -ENOMEM)
		err_set(m->err, m->errlen, "out of memory checking the merged rows");
	cJSON *frozen = rc ? NULL : cJSON_Parse(protocol_json);
	cv->missing_by_shard = rc ? NULL : calloc((size_t)cv->n_shards, sizeof *cv->missing_by_shard);
	if (!rc && (!frozen || !cv->missing_by_shard))
		rc = err_fail(m->err, m->errlen, "out of memory checking the merged rows");
	if (rc == 0) {
		qsort(p.v, p.n, sizeof *p.v, cmp_str);
		int64_t r = 0;
		const cJSON *order, *t;
		cJSON_ArrayForEach(order, cJSON_GetObjectItemCaseSensitive(frozen, "task_order"))
		{
			cJSON_ArrayForEach(t, order)
			{
				if (!cJSON_IsString(t))
					continue;
				char key[1100];
				snprintf(key, sizeof key, "%lld %s", (long long)r, t->valuestring);
				const char *kp = key;
				cv->pairs++;
				if (!p.n || !bsearch(&kp, p.v, p.n, sizeof *p.v, cmp_str)) {
					cv->missing++;
					cv->missing_by_shard[eval_shard_of(t->valuestring, r, cv->n_shards)]++;
				}
			}
			r++;
		}
	}
	for (size_t i = 0; i < p.n; i++)
		free(p.v[i]);
	free(p.v);
	cJSON_Delete(frozen);
	return rc;
}

/* "1, 3" for the shards with missing pairs. */
static void missing_list(const struct coverage *cv, char *out, size_t cap)
{
	size_t l = 0;
	out[0] = 0;
	for (int64_t k = 0; k < cv->n_shards; k++)
		if (cv->missing_by_shard[k] && l + 24 < cap)
			l += (size_t)snprintf(out + l, cap - l, "%s%lld", l ? ", " : "", (long long)k);
}

/* summary_json.merge of the merged run: the key, N, coverage and one entry per shard. */
static char *merge_record(const struct merge *m, const char *key, const struct coverage *cv, size_t *group,
			  size_t n_group)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *o = cJSON_AddObjectToObject(root, "merge");
	cJSON_AddStringToObject(o, "key", key);
	cJSON_AddNumberToObject(o, "shards", (double)cv->n_shards);
	cJSON_AddBoolToObject(o, "complete", cv->missing == 0);
	cJSON_AddNumberToObject(o, "pairs", (double)cv->pairs);
	cJSON_AddNumberToObject(o, "missing_pairs", (double)cv->missing);
	cJSON *ms = cJSON_AddArrayToObject(o, "missing_shards");
	for (int64_t k = 0; k < cv->n_shards; k++)
		if (cv->missing_by_shard[k])
			cJSON_AddItemToArray(ms, cJSON_CreateNumber((double)k));
	cJSON *from = cJSON_AddObjectToObject(o, "from");
	for (size_t g = 0; g < n_group; g++) {
		const struct src_run *r = &m->runs[group[g]];
		char name[48];
		if (r->shard.n > 0)
			snprintf(name, sizeof name, "%lld/%lld", (long long)r->shard.k, (long long)r->shard.n);
		else
			snprintf(name, sizeof name, "whole");
		cJSON *e = cJSON_CreateObject();
		const char *base = strrchr(m->in[r->file], '/');
		cJSON_AddStringToObject(e, "file", base ? base + 1 : m->in[r->file]);
		cJSON_AddNumberToObject(e, "run", (double)r->info.id);
		cJSON_AddStringToObject(e, "status", r->info.status ? r->info.status : "");
		cJSON_AddStringToObject(e, "started", r->info.started ? r->info.started : "");
		cJSON_AddStringToObject(e, "endpoint", r->info.endpoint ? r->info.endpoint : "");
		cJSON_AddNumberToObject(e, "rows", (double)r->rows);
		cJSON *hf = r->info.host_facts ? cJSON_Parse(r->info.host_facts) : NULL;
		cJSON_AddItemToObject(e, "host_facts", hf ? hf : cJSON_CreateNull());
		if (!cJSON_ReplaceItemInObjectCaseSensitive(from, name, e))
			cJSON_AddItemToObject(from, name, e);
	}
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

/* The run of group (indices into m->runs, one configuration) that stands for it:
 * the smallest configuration text, then the smallest fingerprint, so that the
 * order of the inputs does not choose. */
static const struct src_run *representative(const struct merge *m, const size_t *group, size_t n)
{
	const struct src_run *best = &m->runs[group[0]];
	for (size_t i = 1; i < n; i++) {
		const struct src_run *r = &m->runs[group[i]];
		int c = strcmp(r->info.protocol_json, best->info.protocol_json);
		if (c == 0)
			c = strcmp(r->info.fingerprint ? r->info.fingerprint : "", best->info.fingerprint ? best->info.fingerprint : "");
		if (c < 0)
			best = r;
	}
	return best;
}

/* Merges the runs of one configuration into OUT (inside the caller's transaction). */
static int merge_group(struct merge *m, size_t *group, size_t n_group, int64_t *run_id, struct coverage *cv,
		       int64_t *added, int64_t *present)
{
	const struct src_run *rep = representative(m, group, n_group);
	int rc = store_run_find_merged(m->out, rep->key, run_id, m->err, m->errlen);
	if (rc)
		return rc;
	char *old_status = NULL;
	if (*run_id == 0) {
		struct store_run sr = {
			.kind = "eval",
			.workload = "eval",
			.protocol_json = rep->info.protocol_json,
			.endpoint = rep->info.endpoint,
			.model = rep->info.model,
			.fingerprint = rep->info.fingerprint,
			.host_facts = rep->info.host_facts,
		};
		char keyrec[128];
		snprintf(keyrec, sizeof keyrec, "{\"merge\":{\"key\":\"%s\"}}", rep->key);
		if (store_run_begin(m->out, &sr, run_id) != 0 || store_run_set_summary(m->out, *run_id, keyrec) != 0) {
			err_set(m->err, m->errlen, "writing the merged run failed: %s", store_errmsg(m->out));
			return -EIO;
		}
	} else {
		struct store_run_info info;
		if ((rc = store_run_get(m->out, *run_id, &info, m->err, m->errlen)) != 0)
			return rc;
		old_status = info.status ? strdup(info.status) : NULL;
		store_run_info_finish(&info);
	}
	/* N: the largest recorded with the shards (1 when every input is a whole run) */
	cv->n_shards = 1;
	for (size_t g = 0; g < n_group; g++) {
		struct src_run *r = &m->runs[group[g]];
		if (r->shard.n > cv->n_shards)
			cv->n_shards = r->shard.n;
		struct copy c = { m, r, *run_id, 0, 0 };
		r->rows = 0;
		rc = store_eval_each(m->st[r->file], r->info.id, STORE_EVAL_BY_REPEAT, copy_row, &c, m->err, m->errlen);
		*added += c.added;
		*present += c.present;
		if (rc)
			goto out;
	}
	if ((rc = coverage(m, *run_id, rep->info.protocol_json, cv)) != 0)
		goto out;
	char *rec = merge_record(m, rep->key, cv, group, n_group);
	if (!rec) {
		rc = err_fail(m->err, m->errlen, "out of memory recording the merge");
		goto out;
	}
	const char *status = cv->missing ? "incomplete" : "done";
	if (store_run_set_summary(m->out, *run_id, rec) != 0 ||
	    ((!old_status || strcmp(old_status, status) != 0) && store_run_finish(m->out, *run_id, status) != 0)) {
		err_set(m->err, m->errlen, "writing the merged run failed: %s", store_errmsg(m->out));
		rc = -EIO;
	}
	free(rec);
out:
	free(old_status);
	return rc;
}

static void remove_db(const char *path)
{
	static const char *const suffix[] = { "", "-wal", "-shm", "-journal" };
	for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
		char p[4200];
		snprintf(p, sizeof p, "%s%s", path, suffix[i]);
		(void)unlink(p);
	}
}

struct done_run {
	int64_t id, added, present;
	struct coverage cv;
};

int eval_merge(const char *out_path, const char *const *in, size_t n, FILE *msg, bool json, char *err,
	       size_t errlen)
{
	if (!out_path || !n)
		return err_fail(err, errlen, "give OUT.db and at least one IN.db (sixi-eval merge OUT.db IN.db...)");
	struct merge m = { .in = in, .n_in = n, .err = err, .errlen = errlen };
	struct done_run *done = NULL;
	size_t n_done = 0, *group = NULL;
	bool existed = access(out_path, F_OK) == 0, began = false, committed = false;
	int rc = 0;
	m.st = calloc(n, sizeof *m.st);
	if (!m.st) {
		rc = err_fail(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = read_input(&m, i);
	if (rc == 0)
		rc = check_inputs(&m);
	if (rc)
		goto out;
	group = calloc(m.n_runs, sizeof *group);
	done = calloc(m.n_runs, sizeof *done);
	if (!group || !done) {
		rc = err_fail(err, errlen, "out of memory");
		goto out;
	}
	if (!(m.out = store_open(out_path, err, errlen))) {
		rc = -EIO;
		goto out;
	}
	if (store_begin(m.out) != 0) {
		err_set(err, errlen, "%s: cannot start a transaction: %s", out_path, store_errmsg(m.out));
		rc = -EIO;
		goto out;
	}
	began = true;
	/* one group per configuration, in key order */
	for (;;) {
		const char *next = NULL;
		for (size_t i = 0; i < m.n_runs; i++) {
			bool merged = false;
			for (size_t d = 0; d < n_done && !merged; d++)
				merged = strcmp(m.runs[i].key, m.runs[group[d]].key) == 0;
			if (!merged && (!next || strcmp(m.runs[i].key, next) < 0))
				next = m.runs[i].key;
		}
		if (!next)
			break;
		size_t ng = 0;
		size_t first = n_done;
		for (size_t i = 0; i < m.n_runs; i++)
			if (strcmp(m.runs[i].key, next) == 0)
				group[first + ng++] = i;
		struct done_run *d = &done[n_done];
		/* group[d] is the first run of merged group d (the test above), its other runs follow */
		rc = merge_group(&m, group + first, ng, &d->id, &d->cv, &d->added, &d->present);
		n_done++;
		if (rc)
			goto out;
	}
	if (store_commit(m.out) != 0) {
		err_set(err, errlen, "%s: the merge could not be committed: %s", out_path, store_errmsg(m.out));
		rc = -EIO;
		goto out;
	}
	began = false;
	committed = true;
	store_close(m.out);
	m.out = NULL;
	bool incomplete = false;
	char missing[512] = "", first_err[1024] = "";
	for (size_t d = 0; d < n_done; d++) {
		struct done_run *r = &done[d];
		missing_list(&r->cv, missing, sizeof missing);
		if (msg)
			fprintf(msg, "merged run %lld in %s: %lld row(s) added, %lld already there; %s\n", (long long)r->id,
				out_path, (long long)r->added, (long long)r->present,
				r->cv.missing ? "INCOMPLETE" : "complete");
		if (r->cv.missing && !incomplete && r->cv.n_shards == 1) {
			incomplete = true;
			snprintf(first_err, sizeof first_err,
				 "merged run %lld in %s is incomplete: %lld of its %lld (task, repeat) pairs have no row (the "
				 "runs merged did not finish); resume them (`sixi-eval resume RUN --db FILE`) and merge again",
				 (long long)r->id, out_path, (long long)r->cv.missing, (long long)r->cv.pairs);
		} else if (r->cv.missing && !incomplete) {
			incomplete = true;
			snprintf(first_err, sizeof first_err,
				 "merged run %lld in %s is incomplete: %lld of its %lld (task, repeat) pairs have no row, in "
				 "shard(s) %s of %lld; run or resume those shards (`sixi-eval resume RUN --db SHARD.db`) and "
				 "merge again",
				 (long long)r->id, out_path, (long long)r->cv.missing, (long long)r->cv.pairs, missing,
				 (long long)r->cv.n_shards);
		}
		char serr[1024];
		if (eval_run_summary(out_path, r->id, json, msg, serr, sizeof serr) != 0 && !first_err[0])
			snprintf(first_err, sizeof first_err, "%s", serr);
	}
	if (first_err[0])
		err_set(err, errlen, "%s", first_err);
	rc = incomplete ? 1 : first_err[0] ? -EIO : 0;
out:
	if (began && store_rollback(m.out) != 0 && msg)
		fprintf(msg, "rolling back %s failed: %s\n", out_path, store_errmsg(m.out));
	store_close(m.out);
	if (rc < 0 && !existed && !committed)
		remove_db(out_path); /* nothing of a failed merge is left, not even an empty file */
	for (size_t i = 0; i < m.n_runs; i++)
		store_run_info_finish(&m.runs[i].info);
	for (size_t i = 0; m.st && i < n; i++)
		store_close(m.st[i]);
	for (size_t d = 0; done && d < n_done; d++)
		free(done[d].cv.missing_by_shard);
	free(m.st);
	free(m.runs);
	free(group);
	free(done);
	return rc;
}
