/* Unit tests for src/report: compare and bench over rows written here with SQL,
 * rendering (Markdown, HTML, CSV, sidecar, gnuplot plots or the note without
 * gnuplot), the staleness check after a row changes, and every refusal. */
#include "test.h"
#include "report/build.h"
#include "report/doc.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/sixi-test-report-XXXXXX";

static const char proto[] = "{\"name\":\"essay\",\"sampling\":{\"temperature\":0.7},\"repeats\":4,"
			    "\"analysis\":{\"tests\":[\"fisher\",\"sign\",\"welch\"],\"alternative\":\"greater\","
			    "\"alpha\":0.05}}";

static int64_t add_run(struct store *s, const char *kind, const char *workload, const char *protocol)
{
	int64_t id = 0;
	struct store_run r = { .kind = kind, .workload = workload, .protocol_json = protocol, .model = "m" };
	CHECK(store_run_begin(s, &r, &id) == 0);
	return id;
}

static void exec(struct store *s, const char *sql)
{
	if (!CHECK(store_exec(s, sql) == 0))
		fprintf(stderr, "%s: %s\n", sql, store_errmsg(s));
}

static void eval_row(struct store *s, int64_t run, int rep, const char *task, int attempt, const char *cls,
		     int tokens)
{
	char sql[512];
	snprintf(sql, sizeof sql,
		 "INSERT INTO eval_rows(run, repeat_index, task_id, attempt, pass, completion_tokens, failure_class)"
		 " VALUES (%lld, %d, '%s', %d, %d, %d, '%s')",
		 (long long)run, rep, task, attempt, strcmp(cls, "pass") == 0, tokens, cls);
	exec(s, sql);
}

/* Fills a tasks x 4 pass matrix whose rows sum to per_task and whose columns sum
 * to per_rep (greedy Gale-Ryser: each task takes the repeats with most left). */
static void fill(int ntasks, const int *per_task, const int per_rep[4], int m[][4])
{
	int left[4] = { per_rep[0], per_rep[1], per_rep[2], per_rep[3] };
	int order[64];
	for (int i = 0; i < ntasks; i++)
		order[i] = i;
	for (int i = 0; i < ntasks; i++) /* tasks with more passes first */
		for (int j = i + 1; j < ntasks; j++)
			if (per_task[order[j]] > per_task[order[i]]) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	for (int oi = 0; oi < ntasks; oi++) {
		int t = order[oi];
		memset(m[t], 0, sizeof m[t]);
		for (int k = 0; k < per_task[t]; k++) {
			int best = -1;
			for (int r = 0; r < 4; r++)
				if (!m[t][r] && (best < 0 || left[r] > left[best]))
					best = r;
			m[t][best] = 1;
			left[best]--;
		}
	}
	for (int r = 0; r < 4; r++)
		CHECK_EQ_INT(left[r], 0);
}

/* The essay's 50 tasks x 4 repeats: A passes 14, 16, 11, 15, B 7, 10, 10, 9; per task
 * A has more passes on 13 tasks, B on 3, 34 tied. */
static void essay_runs(struct store *s, int64_t *ra, int64_t *rb)
{
	int a[50], b[50], ma[50][4], mb[50][4];
	for (int i = 0; i < 50; i++) {
		if (i < 10)
			a[i] = 3, b[i] = 1;
		else if (i < 13)
			a[i] = 2, b[i] = 1;
		else if (i < 16)
			a[i] = 1, b[i] = 2;
		else if (i < 33)
			a[i] = 1, b[i] = 1;
		else
			a[i] = 0, b[i] = 0;
	}
	static const int ra_rep[4] = { 14, 16, 11, 15 }, rb_rep[4] = { 7, 10, 10, 9 };
	fill(50, a, ra_rep, ma);
	fill(50, b, rb_rep, mb);
	*ra = add_run(s, "eval", "eval", proto);
	*rb = add_run(s, "eval", "eval", proto);
	exec(s, "BEGIN");
	for (int i = 0; i < 50; i++) {
		char task[16];
		snprintf(task, sizeof task, "t%02d", i);
		for (int r = 0; r < 4; r++) {
			/* a retried attempt first: only the last attempt of a repeat counts */
			if (i == 5 && r == 0)
				eval_row(s, *ra, r, task, 0, "api_error", 0);
			eval_row(s, *ra, r, task, i == 5 && r == 0 ? 1 : 0, ma[i][r] ? "pass" : "wrong", 100 + i);
			eval_row(s, *rb, r, task, 0, mb[i][r] ? "pass" : (i % 7 == 0 ? "truncated" : "wrong"), 200);
		}
	}
	exec(s, "COMMIT");
}

static const char *num(struct report_doc *d, const char *id)
{
	for (size_t i = 0; i < report_doc_num_count(d); i++) {
		const char *nid, *v, *q;
		report_doc_num_get(d, i, &nid, &v, &q);
		if (strcmp(nid, id) == 0)
			return v;
	}
	fprintf(stderr, "no number %s\n", id);
	return "(missing)";
}

static struct report_doc *build(const char *cmd, const char *db, const char *a, const char *b, const char *extra,
				char *err, size_t errlen)
{
	char *argv[8] = { "--db", (char *)db, (char *)a, (char *)b, (char *)extra };
	int argc = b ? 4 : 3;
	if (extra)
		argv[argc++] = (char *)extra;
	struct report_doc *d = NULL;
	err[0] = 0;
	int rc = report_build(cmd, argc, argv, &d, err, errlen);
	CHECK((rc == 0) == (d != NULL));
	return d;
}

static off_t file_size(const char *base, const char *suffix)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof p, "%s%s", base, suffix);
	return stat(p, &st) == 0 ? st.st_size : -1;
}


static void compare(void)
{
	char db[256], err[1024], base[300], ids[2][24];
	snprintf(db, sizeof db, "%s/eval.db", dir);
	struct store *s = store_open(db, err, sizeof err);
	if (!CHECK(s != NULL))
		return;
	int64_t ra, rb;
	essay_runs(s, &ra, &rb);
	snprintf(ids[0], sizeof ids[0], "%lld", (long long)ra);
	snprintf(ids[1], sizeof ids[1], "%lld", (long long)rb);
	struct report_doc *d = build("compare", db, ids[0], ids[1], NULL, err, sizeof err);
	if (!CHECK(d != NULL)) {
		fprintf(stderr, "%s\n", err);
		store_close(s);
		return;
	}
	/* the essay's figures, now computed from rows */
	CHECK_EQ_STR(num(d, "pooled/A (run 1)/passes"), "56");
	CHECK_EQ_STR(num(d, "pooled/B (run 2)/attempts"), "200");
	CHECK_EQ_STR(num(d, "pooled/A (run 1)/rate %"), "28.0");
	CHECK_EQ_STR(num(d, "fisher/Fisher/p two-sided"), "0.02366");
	CHECK_EQ_STR(num(d, "sign/sign/A more passes"), "13");
	CHECK_EQ_STR(num(d, "sign/sign/B more passes"), "3");
	CHECK_EQ_STR(num(d, "sign/sign/tied"), "34");
	CHECK_EQ_STR(num(d, "sign/sign/p two-sided"), "0.02127");
	CHECK_EQ_STR(num(d, "welch/Welch/t"), "3.87");
	CHECK_EQ_STR(num(d, "repeats/mean/A rate %"), "28.0");
	CHECK_EQ_STR(num(d, "repeats/sd/A rate %"), "4.3");
	CHECK_EQ_STR(num(d, "repeats/sd/B rate %"), "2.8");
	CHECK_EQ_STR(num(d, "classes/api_error/A"), "0"); /* retried: the last attempt counts */
	CHECK_EQ_STR(num(d, "runs/A (run 1)/attempts (rows)"), "201");
	CHECK_EQ_STR(num(d, "classes/truncated/B"), "26");
	CHECK_EQ_STR(num(d, "tokens/per attempt/B"), "200");
	/* Holm over fisher, sign, welch: 3 x 0.01098, 2 x 0.02127, then max(0.02366, 0.04254) */
	CHECK_EQ_STR(num(d, "holm/fisher/Holm-adjusted p"), "0.04254");
	const char *lo = num(d, "bootstrap/bootstrap/percentile low"), *hi = num(d, "bootstrap/bootstrap/percentile high");
	CHECK(atof(lo) > 0 && atof(lo) < 10 && atof(hi) > 10 && atof(hi) < 20);

	/* render with plots (when gnuplot is here) and check the files */
	snprintf(base, sizeof base, "%s/out/cmp", dir);
	mkdir(strrchr(strcpy(err, base), '/') ? (*strrchr(err, '/') = 0, err) : err, 0755);
	char note[512];
	int rc = report_doc_render(d, base, REPORT_MD | REPORT_HTML | REPORT_CSV, true, note, sizeof note, err, sizeof err);
	if (!CHECK(rc == 0))
		fprintf(stderr, "%s\n", err);
	CHECK(file_size(base, ".md") > 500);
	CHECK(file_size(base, ".html") > 1000);
	CHECK(file_size(base, "-fisher.csv") > 20);
	CHECK(file_size(base, ".sixi.json") > 500);
	CHECK(file_size(base, "-repeats.gp") > 100);
	CHECK(file_size(base, "-repeats.dat") > 10);
	CHECK(file_size(base, ".md.tmp") < 0);
	char path[400];
	snprintf(path, sizeof path, "%s.md", base);
	char *md = test_slurp(path, NULL);
	CHECK(strstr(md, "| Fisher | 56 | 144 | 36 | 164 |") != NULL);
	CHECK(strstr(md, "## Pre-registered tests") < strstr(md, "## Exploratory (not pre-registered)"));
	CHECK(strstr(md, "in this order (alternative greater, alpha 0.05).") != NULL);
	CHECK(strstr(md, "### Fisher") < strstr(md, "## Exploratory"));
	CHECK(strstr(md, "### Exact McNemar") > strstr(md, "## Exploratory"));
	free(md);
	if (system("command -v gnuplot > /dev/null 2>&1") == 0) {
		CHECK(file_size(base, "-repeats.svg") > 1000);
		CHECK(file_size(base, "-repeats.png") > 1000);
		snprintf(path, sizeof path, "%s.html", base);
		char *html = test_slurp(path, NULL);
		CHECK(strstr(html, "<svg") != NULL);
		CHECK(strstr(html, "<?xml") == NULL);
		free(html);
	} else {
		printf("gnuplot not installed: plot files not checked\n");
	}
	/* the CSV of a table */
	snprintf(path, sizeof path, "%s-pooled.csv", base);
	char *csv = test_slurp(path, NULL);
	CHECK(strncmp(csv, "condition,passes,attempts,rate %,", 33) == 0);
	CHECK(strstr(csv, "A (run 1),56,200,28.0,") != NULL);
	free(csv);

	/* staleness: nothing changed, then one failing outcome of A becomes a pass */
	size_t changed = 0, total = 0;
	snprintf(path, sizeof path, "%s.md", base);
	FILE *out = tmpfile();
	rc = report_check(path, NULL, out, &changed, &total, err, sizeof err);
	if (!CHECK(rc == 0))
		fprintf(stderr, "check: %d %s\n", rc, err);
	CHECK(total == report_doc_num_count(d) && total > 50);
	CHECK_EQ_INT(changed, 0);
	char sql[256];
	snprintf(sql, sizeof sql, "UPDATE eval_rows SET pass = 1, failure_class = 'pass' WHERE run = %lld AND "
		 "task_id = 't49' AND repeat_index = 2", (long long)ra);
	exec(s, sql);
	rewind(out);
	rc = report_check(path, NULL, out, &changed, &total, err, sizeof err);
	CHECK_EQ_INT(rc, 1);
	CHECK(changed >= 5);
	fflush(out);
	rewind(out);
	char line[1024], all[16384] = "";
	while (fgets(line, sizeof line, out))
		strncat(all, line, sizeof all - strlen(all) - 1);
	fclose(out);
	CHECK(strstr(all, "cmp.md:") != NULL);
	CHECK(strstr(all, "pooled/A (run 1)/passes: was 56, now 57") != NULL);
	CHECK(strstr(all, "repeats/2/A rate %: was 22.0, now 24.0") != NULL);
	/* a number typed over by hand in the page is caught even when the DB agrees */
	snprintf(sql, sizeof sql, "UPDATE eval_rows SET pass = 0, failure_class = 'wrong' WHERE run = %lld AND "
		 "task_id = 't49' AND repeat_index = 2", (long long)ra);
	exec(s, sql);
	md = test_slurp(path, NULL);
	char *hit = strstr(md, "| Fisher | 56 | 144 |");
	if (CHECK(hit != NULL)) {
		memcpy(hit, "| Fisher | 58 | 142 |", 21);
		FILE *w = fopen(path, "w");
		fputs(md, w);
		fclose(w);
	}
	free(md);
	out = tmpfile();
	rc = report_check(path, NULL, out, &changed, &total, err, sizeof err);
	CHECK_EQ_INT(rc, 1);
	CHECK_EQ_INT(changed, 2);
	rewind(out);
	all[0] = 0;
	while (fgets(line, sizeof line, out))
		strncat(all, line, sizeof all - strlen(all) - 1);
	fclose(out);
	CHECK(strstr(all, "cmp.md:20  fisher/Fisher/A pass: the page no longer shows 56") != NULL);
	report_doc_destroy(d);

	/* without gnuplot: tables render, the page says how to get plots */
	setenv("SIXI_GNUPLOT", "", 1);
	d = build("compare", db, ids[0], ids[1], NULL, err, sizeof err);
	snprintf(base, sizeof base, "%s/out/nogp", dir);
	rc = d ? report_doc_render(d, base, REPORT_MD | REPORT_HTML, true, note, sizeof note, err, sizeof err) : -1;
	CHECK(rc == 0);
	CHECK(strstr(note, "gnuplot") != NULL && strstr(note, "install") != NULL);
	CHECK(file_size(base, ".md") > 500);
	CHECK(file_size(base, "-repeats.svg") < 0);
	CHECK(file_size(base, "-repeats.gp") > 0); /* the script is still written for later */
	/* a gnuplot that fails: the report is still written, without plots, and says so */
	setenv("SIXI_GNUPLOT", "/bin/false", 1);
	snprintf(base, sizeof base, "%s/out/gpfail", dir);
	rc = d ? report_doc_render(d, base, REPORT_MD | REPORT_HTML, true, note, sizeof note, err, sizeof err) : -1;
	CHECK(rc == 0);
	CHECK(strstr(note, "gnuplot failed on gpfail-repeats.gp") != NULL);
	CHECK(file_size(base, ".html") > 500);
	CHECK(file_size(base, "-repeats.svg") < 0 && file_size(base, "-repeats.svg.tmp") < 0);
	unsetenv("SIXI_GNUPLOT");
	/* an output folder that does not exist: an error and no file */
	snprintf(base, sizeof base, "%s/missing/x", dir);
	CHECK(d && report_doc_render(d, base, REPORT_MD, false, note, sizeof note, err, sizeof err) != 0);
	CHECK(strstr(err, "nothing was written") != NULL);
	report_doc_destroy(d);

	/* refusals, one clear message each */
	d = build("compare", db, ids[0], "99", NULL, err, sizeof err);
	CHECK(!d && strstr(err, "run 99 is not in the database") != NULL);
	d = build("compare", db, ids[0], ids[0], NULL, err, sizeof err);
	CHECK(!d && strstr(err, "two different runs") != NULL);
	/* a third run on a different task set, then one with no task in common */
	int64_t rc3 = add_run(s, "eval", "eval", proto), rc4 = add_run(s, "eval", "eval", proto);
	for (int i = 0; i < 60; i++) {
		char task[16];
		snprintf(task, sizeof task, "t%02d", i);
		eval_row(s, rc3, 0, task, 0, i % 2 ? "pass" : "wrong", 10);
		snprintf(task, sizeof task, "other%02d", i);
		eval_row(s, rc4, 0, task, 0, "pass", 10);
	}
	char id3[24], id4[24];
	snprintf(id3, sizeof id3, "%lld", (long long)rc3);
	snprintf(id4, sizeof id4, "%lld", (long long)rc4);
	d = build("compare", db, ids[0], id3, NULL, err, sizeof err);
	CHECK(!d && strstr(err, "different task sets") != NULL && strstr(err, "--intersect") != NULL);
	d = build("compare", db, ids[0], id3, "--intersect", err, sizeof err);
	CHECK(d != NULL);
	if (d)
		CHECK_EQ_STR(num(d, "runs/A (run 1)/tasks compared"), "50");
	report_doc_destroy(d);
	d = build("compare", db, ids[0], id4, "--intersect", err, sizeof err);
	CHECK(!d && strstr(err, "no task in common") != NULL);
	/* another sampling is another condition: compared */
	int64_t r5 = add_run(s, "eval", "eval", "{\"name\":\"essay\",\"sampling\":{\"temperature\":0},\"repeats\":4}");
	eval_row(s, r5, 0, "t00", 0, "pass", 1);
	char id5[24];
	snprintf(id5, sizeof id5, "%lld", (long long)r5);
	d = build("compare", db, ids[0], id5, "--intersect", err, sizeof err);
	CHECK(d != NULL);
	report_doc_destroy(d);
	/* another analysis (a nested key of the frozen protocol) is refused, named */
	int64_t r_an = add_run(s, "eval", "eval", "{\"name\":\"essay\",\"sampling\":{\"temperature\":0.7},\"repeats\":4,"
					      "\"analysis\":{\"tests\":[\"fisher\",\"sign\",\"welch\"],\"alternative\":"
					      "\"greater\",\"alpha\":0.05},\"protocol\":{\"analysis\":{\"alpha\":0.01}}}");
	eval_row(s, r_an, 0, "t00", 0, "pass", 1);
	char id_an[24];
	snprintf(id_an, sizeof id_an, "%lld", (long long)r_an);
	d = build("compare", db, ids[0], id_an, "--intersect", err, sizeof err);
	CHECK(!d && strstr(err, "different frozen configurations") != NULL && strstr(err, "protocol.analysis.alpha") != NULL);
	report_doc_destroy(d);
	/* NaN in a column (stored as text) */
	snprintf(sql, sizeof sql, "UPDATE eval_rows SET completion_tokens = 'nan' WHERE run = %lld AND task_id = 't03'",
		 (long long)rc3);
	exec(s, sql);
	d = build("compare", db, ids[0], id3, "--intersect", err, sizeof err);
	CHECK(!d && strstr(err, "completion_tokens holds 'nan', not a number") != NULL);
	/* a bench run is not an eval run */
	int64_t rb6 = add_run(s, "bench", "sweep", "{}");
	char id6[24];
	snprintf(id6, sizeof id6, "%lld", (long long)rb6);
	d = build("compare", db, ids[0], id6, NULL, err, sizeof err);
	CHECK(!d && strstr(err, "is a bench run") != NULL);
	store_close(s);

	/* an empty DB and a missing file */
	snprintf(db, sizeof db, "%s/empty.db", dir);
	s = store_open(db, err, sizeof err);
	store_close(s);
	d = build("compare", db, "1", "2", NULL, err, sizeof err);
	CHECK(!d && strstr(err, "holds no runs") != NULL);
	snprintf(db, sizeof db, "%s/nope.db", dir);
	d = build("compare", db, "1", "2", NULL, err, sizeof err);
	CHECK(!d && strstr(err, "cannot read the database") != NULL);
	CHECK(access(db, F_OK) != 0); /* not created by reading */
}

static void bench_row(struct store *s, int64_t run, const char *phase, int level, int stream, int64_t cached,
		      int64_t tokens, int64_t t_send, int64_t ttft_ns, int64_t dur_ns, const char *error, const char *tag)
{
	struct store_bench_row r = { .run_id = run, .phase = phase, .level = level, .stream = stream,
				     .prompt_tokens = 1000, .cached_tokens = cached, .completion_tokens = tokens,
				     .sse_events = tokens > 0 ? tokens + 2 : 0, .t_send = t_send,
				     .t_first_token = t_send + ttft_ns, .t_last = t_send + dur_ns, .t_done = t_send + dur_ns,
				     .error = error,
				     .fingerprint_hash = "abcdef0123456789", .tag = tag };
	CHECK(store_bench_insert(s, &r) == 0);
}

static void bench(void)
{
	char db[256], err[1024];
	snprintf(db, sizeof db, "%s/bench.db", dir);
	struct store *s = store_open(db, err, sizeof err);
	if (!CHECK(s != NULL))
		return;
	int64_t run = add_run(s, "bench", "sweep", "{}");
	const int64_t S = 1000000000;
	/* warm-up: huge and slow, must not count */
	bench_row(s, run, "warmup", 1, 0, 0, 100000, 0, 9 * S, 10 * S, NULL, NULL);
	/* level 1: one stream, 2 requests of 100 tokens over 2 s in all; TTFT 100 and 300 ms */
	bench_row(s, run, "measure", 1, 0, 0, 100, 10 * S, S / 10, S, NULL, NULL);
	bench_row(s, run, "measure", 1, 0, 0, 100, 11 * S, 3 * S / 10, S, NULL, NULL);
	/* level 2: two streams of 200 tokens over 4 s (1 s apart) */
	bench_row(s, run, "measure", 2, 0, 0, 200, 20 * S, S / 5, 3 * S, NULL, NULL);
	bench_row(s, run, "measure", 2, 1, 0, 200, 21 * S, S / 5, 3 * S, NULL, NULL);
	/* level 4: one request served from cache although prompts are unique -> invalid */
	bench_row(s, run, "measure", 4, 0, 0, 100, 30 * S, S / 5, S, NULL, NULL);
	bench_row(s, run, "measure", 4, 1, 512, 100, 30 * S, S / 5, S, NULL, NULL);
	/* level 8: one request without usage -> invalid */
	bench_row(s, run, "measure", 8, 0, 0, -1, 40 * S, S / 5, S, "usage", NULL);
	char id[24];
	snprintf(id, sizeof id, "%lld", (long long)run);
	struct report_doc *d = build("bench", db, id, NULL, NULL, err, sizeof err);
	if (!CHECK(d != NULL)) {
		fprintf(stderr, "%s\n", err);
		store_close(s);
		return;
	}
	CHECK_EQ_STR(num(d, "bench_1/1/requests"), "2");
	CHECK_EQ_STR(num(d, "bench_1/1/tok/s aggregate"), "100.0");
	CHECK_EQ_STR(num(d, "bench_1/1/TTFT p50 ms"), "200.0");
	CHECK_EQ_STR(num(d, "bench_1/1/TTFT p90 ms"), "280.0");
	CHECK_EQ_STR(num(d, "bench_1/1/prefill tok/s p50"), "6667");
	CHECK_EQ_STR(num(d, "bench_1/2/tok/s aggregate"), "100.0");
	/* per stream, as sixi-bench defines it (stats/level.h): (200 - 1) tokens over t_last - t_first_token = 2.8 s */
	CHECK_EQ_STR(num(d, "bench_1/2/tok/s per stream"), "71.1");
	CHECK_EQ_STR(num(d, "bench_1/2/SSE events per token"), "1.01");
	CHECK_EQ_STR(num(d, "bench_1/4/requests"), "2");
	CHECK_EQ_STR(num(d, "bench_1/4/tok/s aggregate"), "(missing)"); /* invalid: shown as text, not a number */
	CHECK_EQ_STR(num(d, "bench_1/8/tok/s aggregate"), "(missing)");
	char base[300], note[512];
	snprintf(base, sizeof base, "%s/out/bench", dir);
	CHECK(report_doc_render(d, base, REPORT_MD | REPORT_HTML | REPORT_CSV, true, note, sizeof note, err,
				sizeof err) == 0);
	CHECK(file_size(base, "-bench_1.csv") > 100);
	if (system("command -v gnuplot > /dev/null 2>&1") == 0) {
		static const char *const plots[] = { "-throughput.svg", "-per-stream.svg", "-ttft.svg", "-prefill.png" };
		for (int i = 0; i < 4; i++)
			CHECK(file_size(base, plots[i]) > 1000);
	}
	cJSON *j = report_doc_json(d);
	char *js = cJSON_PrintUnformatted(j);
	CHECK(strstr(js, "\"status\":\"invalid: 1 unique prompts reported cached_tokens > 0") != NULL);
	CHECK(strstr(js, "\"status\":\"invalid: no request succeeded\"") != NULL);
	free(js);
	cJSON_Delete(j);
	report_doc_destroy(d);
	/* text in a numeric column is refused, naming the row */
	exec(s, "UPDATE bench_requests SET t_done = 'NaN' WHERE level = 2 AND stream = 1");
	d = build("bench", db, id, NULL, NULL, err, sizeof err);
	CHECK(!d && strstr(err, "bench_requests id") && strstr(err, "level 2): t_done holds 'NaN', not a number"));
	d = build("bench", db, "77", NULL, NULL, err, sizeof err);
	CHECK(!d && strstr(err, "run 77 is not in the database") != NULL);
	/* a run with only warm-up rows */
	int64_t empty = add_run(s, "bench", "sweep", "{}");
	bench_row(s, empty, "warmup", 1, 0, 0, 10, S, S / 10, S, NULL, NULL);
	snprintf(id, sizeof id, "%lld", (long long)empty);
	d = build("bench", db, id, NULL, NULL, err, sizeof err);
	CHECK(!d && strstr(err, "no measured requests") != NULL);
	store_close(s);
}

int main(void)
{
	gsl_set_error_handler_off();
	if (!mkdtemp(dir))
		return test_skip("cannot create a temporary folder");
	compare();
	bench();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (test_failures == 0 && !getenv("SIXI_KEEP") && system(cmd) != 0)
		printf("could not remove %s\n", dir);
	return test_done();
}
