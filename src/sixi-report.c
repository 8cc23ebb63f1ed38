/* sixi-report — statistics and reports computed from stored rows only.
 * Parses arguments and wires src/report and src/stats together; see README.md. */
#include "core/args.h"
#include "core/err.h"
#include "core/log.h"
#include "core/json.h"
#include "report/build.h"
#include "report/calc.h"
#include "report/db.h"
#include "report/doc.h"
#include "report/export.h"
#include "report/kl.h"
#include "store/store.h"
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: sixi-report COMMAND ...\n"
	"  stats TEST ... [--json]        a test on numbers typed here (sixi-report stats --help)\n"
	"  compare --db DB RUN_A RUN_B    two eval runs: pooled, paired and run-to-run statistics\n"
	"          [--intersect] [--allow-config-diff] [--seed N] [--resamples N]\n"
	"  bench --db DB RUN [RUN...]     serving benchmark runs: throughput, TTFT, prefill per level\n"
	"  check REPORT [--db DB]         re-run a rendered report's queries; list numbers that changed\n"
	"  export RUN [--db DB] [--format vllm|aiperf|guidellm] [--level L] [--repeat K] [--out FILE]\n"
	"                                 a bench run in vLLM's, AIPerf's or GuideLLM's format\n"
	"  kl [RUN...] [--db DB] [--json] sixi-eval kl runs side by side: mean/p99 KL, top-1, perplexity ratio\n"
	"     [--speed KL=BENCH ...]      with each file's bench run: its speed cost and the file the rule picks\n";
static const char exit_text[] = "\nexit status: 0 success; 1 check found changed numbers; 2 bad input or refusal\n";

/* --formats: any of md, html, csv. */
static int parse_formats(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	unsigned out = 0;
	char tmp[128];
	snprintf(tmp, sizeof tmp, "%s", v);
	char *save, *tok = strtok_r(tmp, ",", &save);
	for (; tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "md") == 0)
			out |= REPORT_MD;
		else if (strcmp(tok, "html") == 0)
			out |= REPORT_HTML;
		else if (strcmp(tok, "csv") == 0)
			out |= REPORT_CSV;
		else
			out = 1u << 31;
	}
	if (!out || out == 1u << 31) {
		err_set(err, errlen, "%s: '%s' is not a list of md, html, csv", opt, v);
		return -EINVAL;
	}
	*(unsigned *)field = out;
	return 0;
}

/* compare and bench: the output options; the rest is passed on to report_build, whose
 * modules parse it with their own tables (report/eval.c, report/bench.c). */
struct output_opts {
	const char *out;
	unsigned formats;
	bool no_plots, json;
};
#define O struct output_opts
static const struct args_opt output_options[] = {
	ARGS_HEADING("output options of compare and bench:"),
	ARGS_STRING_OPT("--out", "BASE", O, out, 0,
			"write BASE.md, BASE.html, BASE-<table>.csv, BASE.sixi.json and plots\n(default reports/COMMAND)"),
	ARGS_CALL_OPT("--formats", "LIST", parse_formats, O, formats, 0, "any of md,html,csv (default all three)"),
	ARGS_FLAG_OPT("--no-plots", O, no_plots, true, 0, "skip gnuplot"),
	ARGS_FLAG_OPT("--json", O, json, true, 0, "print the tables as JSON on stdout instead of writing files"),
	ARGS_TABLE_END,
};
#undef O

/* mkdir -p of BASE's folder. */
static int make_parent(const char *base)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", base);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = 0;
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0755);
			*p = '/';
		}
	return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

static int cmd_report(const char *command, int argc, char **argv)
{
	struct output_opts o = { .formats = REPORT_MD | REPORT_HTML | REPORT_CSV };
	char **rest = calloc((size_t)argc + 1, sizeof *rest);
	char dbabs[PATH_MAX];
	int n = 0;
	if (!rest)
		return 2;
	struct args_spec spec = { .prog = "sixi-report", .cmd = command, .usage = usage_text, .epilog = exit_text,
				  .opts = output_options, .max_pos = argc, .forward = true };
	int rc = args_cli(&spec, 0, argc, argv, &o, (const char **)rest, &n);
	if (rc != ARGS_CONTINUE) {
		free(rest);
		return rc;
	}
	/* --db is recorded in the sidecar: absolute, so check works from any folder */
	for (int i = 0; i + 1 < n; i++)
		if (strcmp(rest[i], "--db") == 0 && realpath(rest[i + 1], dbabs))
			rest[++i] = dbabs;
	const char *out = o.out;
	unsigned formats = o.formats;
	bool plots = !o.no_plots, json = o.json;
	char err[PATH_MAX + 1024] = "", note[512] = "", base[PATH_MAX];
	struct report_doc *d = NULL;
	rc = report_build(command, n, rest, &d, err, sizeof err);
	if (rc == 0 && json) {
		cJSON *j = report_doc_json(d);
		char *s = j ? cJSON_Print(j) : NULL;
		if (s)
			printf("%s\n", s);
		else
			rc = -ENOMEM;
		free(s);
		cJSON_Delete(j);
	} else if (rc == 0) {
		snprintf(base, sizeof base, "%s", out ? out : command);
		if (!out)
			snprintf(base, sizeof base, "reports/%s", command);
		rc = make_parent(base);
		if (rc)
			err_set(err, sizeof err, "%s: cannot create its folder: %s", base, strerror(-rc));
		else
			rc = report_doc_render(d, base, formats, plots, note, sizeof note, err, sizeof err);
		if (rc == 0) {
			printf("wrote %s%s%s%s%s%s%s.sixi.json (%zu numbers traced)\n", formats & REPORT_MD ? base : "",
			       formats & REPORT_MD ? ".md, " : "", formats & REPORT_HTML ? base : "",
			       formats & REPORT_HTML ? ".html, " : "", formats & REPORT_CSV ? "CSV per table, " : "",
			       plots ? "plots, " : "", base, report_doc_num_count(d));
			if (note[0])
				printf("%s\n", note);
		}
	}
	if (rc && err[0])
		log_error("%s", err);
	else if (rc)
		log_error("%s", strerror(-rc));
	report_doc_destroy(d);
	free(rest);
	return rc ? 2 : 0;
}

/* ---- check and kl: option tables (compare and bench parse theirs in report/) ---- */

enum { CHECK = 1u << 0, KL = 1u << 1 };
enum { KL_MAX_SPEED = 64 };

struct report_opts {
	const char *db;
	bool json;
	struct report_kl_speed speed[KL_MAX_SPEED];
	size_t n_speed;
	double max_cost_pct;
};

/* --speed KL_RUN=BENCH_RUN, repeatable: appends a pair. */
static int parse_speed(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	struct report_opts *o = (struct report_opts *)((char *)field - offsetof(struct report_opts, speed));
	const char *eq = strchr(v, '=');
	char a[32];
	if (!eq || (size_t)(eq - v) >= sizeof a) {
		err_set(err, errlen, "%s: '%s' is not KL_RUN=BENCH_RUN (e.g. %s 4=2: kl run 4's file was benchmarked "
			"in bench run 2)", opt, v, opt);
		return -EINVAL;
	}
	if (o->n_speed == KL_MAX_SPEED) {
		err_set(err, errlen, "%s: at most %d pairs", opt, KL_MAX_SPEED);
		return -EINVAL;
	}
	snprintf(a, sizeof a, "%.*s", (int)(eq - v), v);
	struct report_kl_speed *p = &o->speed[o->n_speed];
	if (args_i64("--speed KL_RUN", a, 1, INT64_MAX, &p->kl_run, err, errlen) != 0 ||
	    args_i64("--speed BENCH_RUN", eq + 1, 1, INT64_MAX, &p->bench_run, err, errlen) != 0)
		return -EINVAL;
	o->n_speed++;
	return 0;
}

static const struct args_opt options[] = {
	ARGS_STRING_OPT("--db", "DB", struct report_opts, db, CHECK | KL, "the database (check: the one the report names)"),
	ARGS_FLAG_OPT("--json", struct report_opts, json, true, KL, "print the table as JSON"),
	ARGS_DOUBLE_OPT("--max-cost", "PCT", struct report_opts, max_cost_pct, 0.001, 100, KL,
			"with --speed: the share of the speed a better file may cost and still win (default 10)"),
	ARGS_CALL_OPT("--speed", "KL_RUN=BENCH_RUN", parse_speed, struct report_opts, speed, KL,
		      "pair a kl run with the sixi-bench run of its file and apply the rule\n(repeat for every run shown)"),
	ARGS_TABLE_END,
};

static int cmd_check(int argc, char **argv)
{
	struct report_opts o = { 0 };
	const char *report[1] = { NULL };
	struct args_spec s = { .prog = "sixi-report check", .usage = "usage: sixi-report check REPORT [--db DB]\n",
			       .opts = options, .max_pos = 1 };
	int rc = args_cli(&s, CHECK, argc, argv, &o, report, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	if (!report[0]) {
		log_error("check: which report? (usage: sixi-report check REPORT [--db DB])");
		return 2;
	}
	char err[1024] = "";
	size_t changed = 0, total = 0;
	rc = report_check(report[0], o.db, stdout, &changed, &total, err, sizeof err);
	if (rc < 0) {
		log_error("%s", err[0] ? err : strerror(-rc));
		return 2;
	}
	if (rc == 0)
		printf("%s: all %zu numbers match the database\n", report[0], total);
	else
		printf("%s: %zu of %zu numbers changed since the report was rendered\n", report[0], changed, total);
	return rc;
}

/* sixi-report kl [RUN...] [--db DB] [--json] [--speed KL=BENCH ...] [--max-cost PCT] */
static int cmd_kl(int argc, char **argv)
{
	enum { MAX_RUNS = 256 };
	static const char kl_usage[] = "usage: sixi-report kl [RUN...] [--db DB] [--json] [--speed KL_RUN=BENCH_RUN ...] "
				       "[--max-cost PCT]\n";
	struct report_opts o = { .db = STORE_DEFAULT_PATH, .max_cost_pct = 10 };
	const char *pos[MAX_RUNS];
	int n = 0;
	struct args_spec s = { .prog = "sixi-report kl", .usage = kl_usage, .opts = options, .max_pos = MAX_RUNS };
	int rc = args_cli(&s, KL, argc, argv, &o, pos, &n);
	if (rc != ARGS_CONTINUE)
		return rc;
	int64_t runs[MAX_RUNS];
	char err[1024] = "";
	for (int i = 0; i < n; i++)
		if (args_i64("kl RUN", pos[i], 1, INT64_MAX, &runs[i], err, sizeof err) != 0) {
			log_error("%s (%s)", err, kl_usage);
			return 2;
		}
	struct store *st = report_db_open(o.db, err, sizeof err);
	if (!st) {
		log_error("%s", err);
		return 2;
	}
	struct report_kl_opts ko = { .runs = runs, .n_runs = (size_t)n, .speed = o.speed, .n_speed = o.n_speed,
				     .max_cost = o.max_cost_pct / 100, .json = o.json };
	rc = report_kl(st, &ko, stdout, err, sizeof err);
	store_close(st);
	if (rc) {
		log_error("kl: %s", err);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	gsl_set_error_handler_off();
	log_set_program("sixi-report");
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		struct args_spec s = { .prog = "sixi-report", .usage = usage_text, .epilog = exit_text, .opts = output_options };
		args_help(&s, 0, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "stats") == 0) {
		char err[512] = "";
		int rc = report_calc_cli(argc - 2, argv + 2, stdout, err, sizeof err);
		if (rc != 0 && rc != ARGS_HELP) {
			log_error("%s", err);
			return 2;
		}
		return 0;
	}
	if (strcmp(cmd, "compare") == 0 || strcmp(cmd, "bench") == 0)
		return cmd_report(cmd, argc - 2, argv + 2);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (strcmp(cmd, "kl") == 0)
		return cmd_kl(argc - 2, argv + 2);
	if (strcmp(cmd, "export") == 0) {
		char err[1024] = "";
		int rc = report_export_cli(argc - 2, argv + 2, stdout, err, sizeof err);
		if (rc != 0 && rc != ARGS_HELP) {
			log_error("%s", err[0] ? err : strerror(-rc));
			return 2;
		}
		return 0;
	}
	log_error("unknown command '%s' (stats, compare, bench, check, kl, export; see sixi-report --help)", cmd);
	return 2;
}
