/* test_eval_kl — sixi-eval kl on the tiny models (real GGUFs written by sixi's own writer, a
 * real SQLite file, the report reading it back):
 *  - F32 against itself: every KL exactly 0, top-1 agreement 1, perplexity ratio exactly 1;
 *  - Q8_0 against F32 (dense and MoE): mean KL small and > 0; Q4_0 further than Q8_0;
 *  - the rows: one per position 0..n-2, windows of --ctx change nothing about which positions
 *    are scored; the report's figures (computed from the rows) equal the live summary's;
 *  - bad input: a missing text, a text of one token, text that is not UTF-8, a bad --ctx, a
 *    missing model: one message each, and no run stored;
 *  - stats/kl's figures on a hand-made set (mean, nearest-rank p99, perplexities). */
#include <cjson/cJSON.h>
#include <math.h>
#include "test_sql.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/kl.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/tiny.h"
#include "report/kl.h"
#include "stats/kl.h"
#include "store/store.h"
#include "test.h"

static char dir[] = "/tmp/sixi-test-kl-XXXXXX";

static const char *path(const char *name)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static long long count(const char *db, const char *sql) { return (long long)test_sql_i64(db, sql); }

static int run(struct store *s, const char *ref, const char *cand, const char *text, int ctx, struct kl_result *r,
	       char *err, size_t errlen)
{
	struct kl_opts o = { .reference = ref, .candidate = cand, .text = text, .ctx = ctx, .threads = 2 };
	memset(r, 0, sizeof(*r));
	err[0] = 0;
	return kl_run(&o, s, r, err, errlen);
}

static void check_figures(void)
{
	struct kl_point p[200];
	for (int i = 0; i < 200; i++)
		p[i] = (struct kl_point){ .kl = i + 1, .top1_same = i % 4 != 0, .logp_ref = -1.0, .logp_cand = -2.0 };
	struct kl_figures f;
	CHECK_EQ_INT(kl_figures_compute(p, 200, &f), 0);
	CHECK_NEAR(f.kl_mean, 100.5, 1e-12);
	CHECK_NEAR(f.kl_p99, 198, 1e-12); /* ceil(0.99 * 200) = 198th smallest */
	CHECK_NEAR(f.kl_max, 200, 1e-12);
	CHECK_NEAR(f.top1, 0.75, 1e-12);
	CHECK_NEAR(f.ppl_ref, exp(1.0), 1e-12);
	CHECK_NEAR(f.ppl_ratio, exp(1.0), 1e-12);
	CHECK_EQ_INT(kl_figures_compute(p, 0, &f), -EINVAL);
	p[3].kl = NAN;
	CHECK_EQ_INT(kl_figures_compute(p, 200, &f), -EINVAL);
}

static bool same(double a, double b)
{
	return fabs(a - b) <= 1e-14 * fmax(fabs(a), fabs(b));
}

/* The report's JSON for one run: its kl_mean, p99, top1 (from the rows) against the live ones. */
static void check_report(struct store *s, const struct kl_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char err[1024] = "";
	int64_t id = r->run_id;
	CHECK_EQ_INT(report_kl(s, &(struct report_kl_opts){ .runs = &id, .n_runs = 1, .json = true }, f, err, sizeof(err)), 0);
	fclose(f);
	cJSON *j = cJSON_Parse(buf ? buf : "");
	const cJSON *o = cJSON_GetArrayItem(j, 0);
	if (CHECK(o != NULL)) {
		/* cJSON prints 15 significant digits when they read back within DBL_EPSILON
		 * (relative), so the JSON is equal to the live figure to ~1e-15, not bit for bit */
		CHECK(same(cJSON_GetObjectItem(o, "kl_mean")->valuedouble, r->fig.kl_mean));
		CHECK(same(cJSON_GetObjectItem(o, "kl_p99")->valuedouble, r->fig.kl_p99));
		CHECK(same(cJSON_GetObjectItem(o, "top1")->valuedouble, r->fig.top1));
		CHECK(same(cJSON_GetObjectItem(o, "ppl_ratio")->valuedouble, r->fig.ppl_ratio));
		CHECK_EQ_INT(cJSON_GetObjectItem(o, "positions")->valueint, r->fig.n);
	}
	cJSON_Delete(j);
	free(buf);
}

static void write_text(const char *name, const char *text)
{
	FILE *f = fopen(path(name), "wb");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

int main(void)
{
	check_figures();
	if (!mkdtemp(dir))
		return test_skip("cannot make a temporary directory");
	char err[2048];
	/* dense: the tiny model in F32 and, with the same weights, in Q8_0 */
	CHECK_EQ_INT(model_write_tiny(path("d32.gguf"), err, sizeof(err)), 0);
	struct model *m = model_load(path("d32.gguf"), 1, err, sizeof(err));
	if (!CHECK(m != NULL))
		return test_done();
	struct model_config dc = *model_get_config(m);
	model_free(m);
	CHECK_EQ_INT(model_write_random(path("d8.gguf"), &dc, GGUF_TENSOR_Q8_0, 0x51c51c51ull, err, sizeof(err)), 0);
	CHECK_EQ_INT(model_write_random(path("d32b.gguf"), &dc, GGUF_TENSOR_F32, 0x51c51c51ull, err, sizeof(err)), 0);
	/* MoE in F32, Q8_0 and Q4_0 */
	CHECK_EQ_INT(model_write_tiny_moe(path("m32.gguf"), GGUF_TENSOR_F32, err, sizeof(err)), 0);
	CHECK_EQ_INT(model_write_tiny_moe(path("m8.gguf"), GGUF_TENSOR_Q8_0, err, sizeof(err)), 0);
	CHECK_EQ_INT(model_write_tiny_moe(path("m4.gguf"), GGUF_TENSOR_Q4_0, err, sizeof(err)), 0);
	char *readme = test_slurp(test_src_path("README.md"), NULL);
	if (!CHECK(readme != NULL))
		return test_done();
	readme[3000] = 0; /* about 700 tokens; cut at a byte that may split a character: keep ASCII-safe */
	for (int i = 2999; i > 0 && (unsigned char)readme[i] >= 0x80; i--)
		readme[i] = 0;
	write_text("text.txt", readme);
	free(readme);

	struct store *s = store_open(path("kl.db"), err, sizeof(err));
	if (!CHECK(s != NULL))
		return test_done();
	struct kl_result self, d8, m8, m4, win;
	CHECK_EQ_INT(run(s, path("d32.gguf"), path("d32b.gguf"), path("text.txt"), 512, &self, err, sizeof(err)), 0);
	printf("F32 vs F32: %lld positions, mean KL %g, max %g, top1 %g, ppl ratio %.17g\n", (long long)self.fig.n,
	       self.fig.kl_mean, self.fig.kl_max, self.fig.top1, self.fig.ppl_ratio);
	CHECK(self.fig.n > 300);
	CHECK(self.fig.kl_max == 0 && self.fig.kl_mean == 0 && self.fig.top1 == 1 && self.fig.ppl_ratio == 1);
	CHECK_EQ_INT(run(s, path("d32.gguf"), path("d8.gguf"), path("text.txt"), 512, &d8, err, sizeof(err)), 0);
	CHECK_EQ_INT(run(s, path("m32.gguf"), path("m8.gguf"), path("text.txt"), 512, &m8, err, sizeof(err)), 0);
	CHECK_EQ_INT(run(s, path("m32.gguf"), path("m4.gguf"), path("text.txt"), 512, &m4, err, sizeof(err)), 0);
	printf("dense Q8_0 vs F32: mean KL %.3g, p99 %.3g, top1 %.4f, ppl ratio %.6f\n", d8.fig.kl_mean, d8.fig.kl_p99,
	       d8.fig.top1, d8.fig.ppl_ratio);
	printf("MoE Q8_0 vs F32: mean KL %.3g, p99 %.3g, top1 %.4f; Q4_0: mean KL %.3g, p99 %.3g, top1 %.4f\n",
	       m8.fig.kl_mean, m8.fig.kl_p99, m8.fig.top1, m4.fig.kl_mean, m4.fig.kl_p99, m4.fig.top1);
	CHECK(d8.fig.kl_mean > 0 && d8.fig.kl_mean < 1e-2);
	CHECK(m8.fig.kl_mean > 0 && m8.fig.kl_mean < 1e-2);
	CHECK(m4.fig.kl_mean > 2 * m8.fig.kl_mean);
	CHECK(d8.fig.top1 > 0.9 && d8.fig.top1 < 1);
	/* the rows: positions 0..n-2 once each, whatever the window */
	CHECK_EQ_INT(run(s, path("m32.gguf"), path("m8.gguf"), path("text.txt"), 16, &win, err, sizeof(err)), 0);
	CHECK_EQ_INT(win.fig.n, m8.fig.n);
	char q[256];
	snprintf(q, sizeof(q), "SELECT count(*) = max(position) + 1 AND min(position) = 0 FROM kl_rows WHERE run = %lld",
		 (long long)win.run_id);
	CHECK_EQ_INT(count(path("kl.db"), q), 1);
	snprintf(q, sizeof(q), "SELECT count(*) FROM kl_rows WHERE run = %lld", (long long)m8.run_id);
	CHECK_EQ_INT(count(path("kl.db"), q), m8.fig.n);
	snprintf(q, sizeof(q), "SELECT status = 'done' AND workload = 'kl' AND json_extract(summary_json, '$.kl.kl_mean') > 0"
		 " FROM runs WHERE id = %lld", (long long)m8.run_id);
	CHECK_EQ_INT(count(path("kl.db"), q), 1);
	check_report(s, &m8);
	check_report(s, &self);

	/* bad input: a message each, nothing stored */
	long long runs_before = count(path("kl.db"), "SELECT count(*) FROM runs");
	struct kl_result r;
	write_text("one.txt", "a");
	write_text("bad.txt", "caf\xc3 au lait");
	struct {
		const char *ref, *cand, *text;
		int ctx;
		const char *want;
	} bad[] = {
		{ "m32.gguf", "m8.gguf", "missing.txt", 512, "missing.txt: cannot read the text" },
		{ "m32.gguf", "m8.gguf", "one.txt", 512, "the text needs at least 2" },
		{ "m32.gguf", "m8.gguf", "bad.txt", 512, "not UTF-8 (first bad byte at offset 3)" },
		{ "m32.gguf", "m8.gguf", "text.txt", 1, "--ctx 1" },
		{ "m32.gguf", "nothere.gguf", "text.txt", 512, "nothere.gguf" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char t[256];
		snprintf(t, sizeof(t), "%s", path(bad[i].text));
		int rc = run(s, path(bad[i].ref), path(bad[i].cand), t, bad[i].ctx, &r, err, sizeof(err));
		printf("refused: %s\n", err);
		CHECK(rc != 0);
		if (!CHECK(strstr(err, bad[i].want) != NULL))
			fprintf(stderr, "expected '%s' in the message\n", bad[i].want);
	}
	CHECK_EQ_INT(count(path("kl.db"), "SELECT count(*) FROM runs"), runs_before);
	/* the report refuses a run that does not exist */
	int64_t none = 9999;
	FILE *devnull = fopen("/dev/null", "w");
	CHECK_EQ_INT(report_kl(s, &(struct report_kl_opts){ .runs = &none, .n_runs = 1 }, devnull, err, sizeof(err)), -ENOENT);
	fclose(devnull);
	store_close(s);
	const char *files[] = { "d32.gguf", "d32b.gguf", "d8.gguf", "m32.gguf", "m8.gguf", "m4.gguf", "text.txt",
				"one.txt", "bad.txt", "kl.db", "kl.db-wal", "kl.db-shm" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(path(files[i]));
	rmdir(dir);
	return test_done();
}
