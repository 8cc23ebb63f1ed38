/* Unit tests for src/eval/merge: shard files written directly into fresh databases
 * (4 shards of 10 tasks x 3 repeats, some pairs retried after an api_error, each shard
 * against its own endpoint and server pid) merge into one run whose rows do not depend
 * on the order of the inputs or on how often they are merged; a missing shard is
 * reported by number and the run marked incomplete until it comes; mixed
 * configurations, other models and conflicting outcomes are refused with nothing
 * written. No server. */
#include "test.h"
#include "core/buf.h"
#include "eval/merge.h"
#include "eval/shard.h"
#include "store/store.h"
#include <unistd.h>

#define TASKS 10
#define REPEATS 3
#define SHARDS 4
#define BP(...) CHECK(buf_printf(__VA_ARGS__) == 0)

static char dir[64];

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

/* The frozen configuration: max_tokens and the model vary by test; the endpoint
 * and the fingerprint's pid vary by shard, as replicas on several machines. */
static void config(struct buf *b, int k, int max_tokens, const char *model)
{
	BP(b, "{\"protocol\":{\"name\":\"t\",\"conditions\":[{\"name\":\"c\",\"endpoint\":\"http://node%d:8080\","
		      "\"model\":\"%s\"}],\"sampling\":{\"max_tokens\":%d},\"repeats\":%d},\"condition\":\"c\","
		      "\"task_order\":[",
		   k, model, max_tokens, REPEATS);
	for (int r = 0; r < REPEATS; r++) {
		BP(b, "%s[", r ? "," : "");
		for (int t = 0; t < TASKS; t++)
			BP(b, "%s\"task/%d\"", t ? "," : "", (t * 7 + r * 3) % TASKS);
		BP(b, "]");
	}
	BP(b, "],\"server_fingerprint\":null}");
}

static void fingerprint(struct buf *b, int k, const char *model)
{
	BP(b, "{\"/v1/models\":{\"object\":\"list\",\"data\":[{\"id\":\"%s\"}]},\"/props\":{\"pid\":%d}}", model,
		   1000 + k);
}

/* Writes shard k of n (n 0: the whole run) into name. flip: the pass of the
 * shard's first pair is the other way round (another outcome of the same attempt). */
static void make_shard(const char *name, int k, int n, int max_tokens, const char *model, bool flip)
{
	char path[128], err[512];
	path_of(path, sizeof path, name);
	unlink(path);
	struct store *s = store_open(path, err, sizeof err);
	if (!CHECK(s != NULL))
		return;
	struct buf cfg, fp;
	buf_init(&cfg);
	buf_init(&fp);
	config(&cfg, k, max_tokens, model);
	fingerprint(&fp, k, model);
	struct store_run r = { .kind = "eval", .workload = "eval", .protocol_json = cfg.data, .model = model,
			       .fingerprint = fp.data, .host_facts = "{\"hostname\":\"node\"}" };
	char ep[64];
	snprintf(ep, sizeof ep, "http://node%d:8080", k);
	r.endpoint = ep;
	int64_t run = 0;
	CHECK(store_run_begin(s, &r, &run) == 0);
	if (n > 0) {
		char shard[96];
		snprintf(shard, sizeof shard, "{\"shard\":{\"k\":%d,\"n\":%d}}", k, n);
		CHECK(store_run_set_summary(s, run, shard) == 0);
	}
	struct eval_shard sh = { k, n };
	bool flipped = false;
	for (int rep = 0; rep < REPEATS; rep++)
		for (int t = 0; t < TASKS; t++) {
			char id[32], text[96], hex[65], rhex[65];
			snprintf(id, sizeof id, "task/%d", t);
			if (!eval_shard_has(&sh, id, rep))
				continue;
			int attempt = 1;
			if ((t + rep) % 4 == 0) { /* an api_error, then a fresh attempt */
				CHECK(store_raw_put(s, "", 0, hex) == 0);
				struct store_eval_row w = { .run_id = run, .repeat = rep, .attempt = attempt++, .task_id = id,
							    .prompt_tokens = -1, .completion_tokens = -1, .seconds = 1.5,
							    .api_error = "reset", .failure_class = "api_error", .raw_sha = hex };
				CHECK(store_eval_insert(s, &w) == 0);
			}
			bool pass = (t * 3 + rep) % 5 != 0;
			if (flip && !flipped) {
				pass = !pass;
				flipped = true;
			}
			snprintf(text, sizeof text, "reply to %s in repeat %d: %s", id, rep, pass ? "right" : "wrong");
			CHECK(store_raw_put(s, text, strlen(text), hex) == 0);
			snprintf(text, sizeof text, "thinking about %s", id);
			CHECK(store_raw_put(s, text, strlen(text), rhex) == 0);
			struct store_eval_row w = { .run_id = run, .repeat = rep, .attempt = attempt, .task_id = id, .pass = pass,
						    .prompt_tokens = 20, .completion_tokens = 10 + t, .seconds = 0.25 * t,
						    .failure_class = pass ? "pass" : "wrong", .finish_reason = "stop",
						    .raw_sha = hex, .reasoning_sha = rhex, .detail_json = "{\"grade\":\"x\"}" };
			CHECK(store_eval_insert(s, &w) == 0);
		}
	CHECK(store_run_finish(s, run, "done") == 0);
	store_close(s);
	buf_finish(&cfg);
	buf_finish(&fp);
}

static int dump_row(void *ctx, const struct store_cell *cells)
{
	struct buf *b = ctx;
	for (size_t i = 0; store_eval_export_cols[i]; i++)
		BP(b, "%s|", cells[i].type == STORE_CELL_NULL ? "NULL" : cells[i].text);
	BP(b, "\n");
	return 0;
}

/* Every column of every row of the file's only run, with the raw texts; "" when it has none. */
static char *dump(const char *name, char *status, size_t status_len)
{
	char path[128], err[512];
	path_of(path, sizeof path, name);
	if (status_len)
		status[0] = 0;
	if (access(path, F_OK) != 0)
		return strdup("");
	struct store *s = store_open(path, err, sizeof err);
	struct buf b;
	buf_init(&b);
	int64_t n = 0;
	if (s && store_run_count(s, &n, err, sizeof err) == 0 && n == 1) {
		CHECK(store_eval_export_each(s, 1, dump_row, &b, err, sizeof err) == 0);
		struct store_run_info info;
		if (store_run_get(s, 1, &info, err, sizeof err) == 0) {
			snprintf(status, status_len, "%s", info.status ? info.status : "");
			store_run_info_finish(&info);
		}
	} else {
		BP(&b, "runs: %lld", (long long)n);
	}
	store_close(s);
	char *out = buf_steal(&b);
	return out ? out : strdup("");
}

static int merge(const char *out, const char *a, const char *b, const char *c, const char *d, char *err, size_t n)
{
	char po[128], p[4][128];
	const char *in[4];
	const char *names[4] = { a, b, c, d };
	size_t k = 0;
	path_of(po, sizeof po, out);
	for (int i = 0; i < 4; i++)
		if (names[i]) {
			path_of(p[k], sizeof p[k], names[i]);
			in[k] = p[k];
			k++;
		}
	err[0] = 0;
	return eval_merge(po, in, k, NULL, false, err, n);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/sixi_test_merge_XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char err[4096], st[32];
	for (int k = 0; k < SHARDS; k++) {
		char name[32];
		snprintf(name, sizeof name, "s%d.db", k);
		make_shard(name, k, SHARDS, 512, "m", false);
	}
	make_shard("whole.db", 0, 0, 512, "m", false);
	make_shard("other-budget.db", 1, SHARDS, 256, "m", false);
	make_shard("other-model.db", 1, SHARDS, 512, "m2", false);
	make_shard("flipped.db", 0, SHARDS, 512, "m", true);

	/* the whole run, and the 4 shards merged in one go: the same rows */
	CHECK_EQ_INT(merge("w.db", "whole.db", NULL, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ_INT(merge("a.db", "s0.db", "s1.db", "s2.db", "s3.db", err, sizeof err), 0);
	char *whole = dump("w.db", st, sizeof st), *a = dump("a.db", st, sizeof st);
	CHECK_EQ_STR(st, "done");
	CHECK(strlen(a) > 0 && strcmp(a, whole) == 0);
	/* another order, in three calls: the same rows */
	CHECK_EQ_INT(merge("b.db", "s3.db", NULL, NULL, NULL, err, sizeof err), 1);
	CHECK(strstr(err, "shard(s) 0, 1, 2 of 4") != NULL);
	CHECK_EQ_INT(merge("b.db", "s1.db", "s0.db", NULL, NULL, err, sizeof err), 1);
	CHECK(strstr(err, "shard(s) 2 of 4") != NULL);
	char *b = dump("b.db", st, sizeof st);
	CHECK_EQ_STR(st, "incomplete");
	free(b);
	CHECK_EQ_INT(merge("b.db", "s2.db", NULL, NULL, NULL, err, sizeof err), 0);
	b = dump("b.db", st, sizeof st);
	CHECK_EQ_STR(st, "done");
	CHECK_EQ_STR(b, a);
	/* idempotent: all of it again, and overlapping shards, change nothing */
	CHECK_EQ_INT(merge("a.db", "s2.db", "s0.db", "s3.db", "s1.db", err, sizeof err), 0);
	CHECK_EQ_INT(merge("a.db", "s0.db", "s0.db", "s1.db", NULL, err, sizeof err), 0);
	CHECK_EQ_INT(merge("a.db", "whole.db", NULL, NULL, NULL, err, sizeof err), 0);
	char *again = dump("a.db", st, sizeof st);
	CHECK_EQ_STR(again, a);
	CHECK_EQ_STR(st, "done");
	free(again);

	/* mixed configurations: refused, naming the key; nothing written */
	CHECK_EQ_INT(merge("c.db", "s0.db", "other-budget.db", NULL, NULL, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "protocol.sampling.max_tokens") != NULL);
	CHECK(strstr(err, "endpoint") == NULL);
	char cpath[128];
	path_of(cpath, sizeof cpath, "c.db");
	CHECK(access(cpath, F_OK) != 0);
	CHECK_EQ_INT(merge("a.db", "other-budget.db", "s1.db", NULL, NULL, err, sizeof err), -EINVAL);
	/* another model: refused, naming the fingerprint field */
	CHECK_EQ_INT(merge("a.db", "s0.db", "other-model.db", NULL, NULL, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "model") != NULL);
	/* the same attempt with another outcome: refused, and the transaction leaves a.db as it was */
	CHECK_EQ_INT(merge("a.db", "s1.db", "flipped.db", NULL, NULL, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "with another outcome") != NULL && strstr(err, "flipped.db") != NULL);
	again = dump("a.db", st, sizeof st);
	CHECK_EQ_STR(again, a);
	free(again);
	/* bad input */
	CHECK_EQ_INT(merge("a.db", "no-such.db", NULL, NULL, NULL, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "no-such.db") != NULL);

	free(whole);
	free(a);
	free(b);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
