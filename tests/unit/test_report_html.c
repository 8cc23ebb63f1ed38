/* Integration test: a rendered compare report opens in headless Chromium without
 * errors, and its inline plot is present and non-empty. Skips (77) when no
 * Chromium is installed, or gnuplot is missing (the plots are part of what is
 * checked). Rows are written here with SQL; nothing outside a temp folder is touched. */
#include "test.h"
#include "report/build.h"
#include "report/doc.h"
#include "store/store.h"
#include <gsl/gsl_errno.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

static bool on_path(const char *name, char *out, size_t n)
{
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
	char *save;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, n, "%s/%s", d, name);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

int main(void)
{
	gsl_set_error_handler_off();
	static const char *const names[] = { "chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
					     "chrome-headless-shell" };
	char chromium[4200], gnuplot[4200];
	bool found = false;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !found; i++)
		found = on_path(names[i], chromium, sizeof chromium);
	if (!found)
		return test_skip("Chromium is not installed (looked for chromium, chromium-browser, google-chrome on PATH)");
	if (!on_path("gnuplot", gnuplot, sizeof gnuplot))
		return test_skip("gnuplot is not installed, so the report has no plots to check");
	char dir[] = "/tmp/sixi-test-html-XXXXXX";
	if (!mkdtemp(dir))
		return test_skip("cannot create a temporary folder");
	char db[256], err[1024], base[300], note[512];
	snprintf(db, sizeof db, "%s/e.db", dir);
	struct store *s = store_open(db, err, sizeof err);
	if (!CHECK(s != NULL))
		return test_done();
	int64_t ra = 0, rb = 0;
	struct store_run r = { .kind = "eval", .workload = "eval", .protocol_json = "{}" };
	CHECK(store_run_begin(s, &r, &ra) == 0);
	CHECK(store_run_begin(s, &r, &rb) == 0);
	char sql[256];
	for (int rep = 0; rep < 3; rep++)
		for (int t = 0; t < 20; t++) {
			int pa = (t + rep) % 3 != 0, pb = (t + 2 * rep) % 4 == 0;
			snprintf(sql, sizeof sql, "INSERT INTO eval_rows(run, repeat_index, task_id, attempt, pass, failure_class) "
				 "VALUES (%lld, %d, 'task%d', 0, %d, '%s'), (%lld, %d, 'task%d', 0, %d, '%s')",
				 (long long)ra, rep, t, pa, pa ? "pass" : "wrong", (long long)rb, rep, t, pb, pb ? "pass" : "wrong");
			CHECK(store_exec(s, sql) == 0);
		}
	store_close(s);
	char ida[24], idb[24];
	snprintf(ida, sizeof ida, "%lld", (long long)ra);
	snprintf(idb, sizeof idb, "%lld", (long long)rb);
	char *argv[] = { "--db", db, ida, idb };
	struct report_doc *d = NULL;
	CHECK(report_build("compare", 4, argv, &d, err, sizeof err) == 0);
	snprintf(base, sizeof base, "%s/r", dir);
	CHECK(d && report_doc_render(d, base, REPORT_HTML, true, note, sizeof note, err, sizeof err) == 0);
	report_doc_destroy(d);
	char cmd[9000];
	snprintf(cmd, sizeof cmd,
		 "'%s' --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --dump-dom "
		 "'file://%s.html' > '%s/dom.txt' 2> '%s/log.txt'",
		 chromium, base, dir, dir);
	int rc = system(cmd);
	CHECK(rc == 0);
	char path[400];
	snprintf(path, sizeof path, "%s/dom.txt", dir);
	FILE *f = fopen(path, "r");
	static char dom[1 << 20];
	size_t n = f ? fread(dom, 1, sizeof dom - 1, f) : 0;
	dom[n] = 0;
	if (f)
		fclose(f);
	CHECK(strstr(dom, "<table") != NULL);
	const char *svg = strstr(dom, "<svg");
	CHECK(svg != NULL);
	CHECK(svg && strstr(svg, "<path") != NULL); /* the plot has drawn lines */
	snprintf(path, sizeof path, "%s/log.txt", dir);
	f = fopen(path, "r");
	static char log[1 << 16];
	n = f ? fread(log, 1, sizeof log - 1, f) : 0;
	log[n] = 0;
	if (f)
		fclose(f);
	CHECK(strstr(log, "Uncaught") == NULL && strstr(log, "CONSOLE") == NULL);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (test_failures == 0 && system(cmd) != 0)
		printf("could not remove %s\n", dir);
	return test_done();
}
