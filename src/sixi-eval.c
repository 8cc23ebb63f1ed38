/* sixi-eval — pass/fail evaluation runs: the option table and wiring only.
 * Each row of the table names the field of struct eval_opts it sets (a quick run
 * fills struct eval_quick, eval/quick.h); the work is in src/eval/, datasets/, grade/. */
#include "core/log.h"
#include "core/err.h"
#include "grade/grade.h"
#include "datasets/import.h"
#include "eval/kl.h"
#include "grade/offline.h"
#include "grade/preflight.h"
#include "eval/protocol.h"
#include "eval/quick.h"
#include "eval/run.h"
#include "eval/merge.h"
#include "datasets/task.h"
#include "text/template_cmd.h"
#include "eval/gate.h"
#include "datasets/dataset_cmd.h"
#include "core/args.h"
#include "net/http.h"
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: sixi-eval COMMAND ...\n"
	"  template render ...                    render a chat template (sixi-eval template --help)\n"
	"  preflight DATASET [--no-canaries]      reference passes, empty fails, sandbox canaries contained\n"
	"  import --format F FILE [--name NAME] [--out DIR] [--force]\n"
	"                                         write datasets/NAME/ from a public benchmark file; F is humaneval,\n"
	"                                         humaneval+, mbpp, mbpp-sanitized, gsm8k, livecodebench, bigcodebench,\n"
	"                                         aime (datasets/FORMATS.md)\n"
	"  dataset check DIR                      schema, unique ids, tests present; size and licence\n"
	"  gate PROTOCOL.json [--url URL] [--model NAME]  release gates (math, code, tool calls, needle): PASS/FAIL\n"
	"  grade DATASET --completions FILE.jsonl [--loop-threshold PCT] [--json]\n"
	"                                         grade given completions offline\n"
	"  run PROTOCOL.json [--condition NAME]   a run per condition of the protocol (protocols/schema.json)\n"
	"  run --url URL[,URL...] --model NAME --dataset DATASET [--chat|--raw|--template FILE]\n"
	"      [--repeats N] [--concurrency N] [--attempts N] [--max-tokens N] [--reasoning-max-tokens N]\n"
	"      [--temperature T] [--top-p P] [--top-k K] [--sample-seed N] [--timeout S] [--stall S] [--seed N]\n"
	"      [--loop-stop PCT] [--name NAME]    a quick run without a protocol file (same checks)\n"
	"  run ... --detect-gap PTS [--gap-baseline PCT] [--allow-underpowered]\n"
	"                                         power plan: refuse a run too small to detect a difference of PTS\n"
	"                                         percentage points with 80 percent power (from PCT, default around 50)\n"
	"  resume RUN [--protocol FILE]           complete the missing rows of a run (configuration frozen)\n"
	"  merge OUT.db IN.db...                  the shard files of one run (run --shard K/N) into one; idempotent,\n"
	"                                         refuses mixed configurations, reports missing shards\n"
	"  summary RUN [--json]                   pass rate, classes, tokens, pass@k, majority vote\n"
	"  export RUN --csv|--jsonl               one line per attempt with the raw text\n"
	"  regrade RUN --max-tokens N,N,...       cut stored replies at smaller budgets and regrade\n"
	"  kl --reference REF.gguf --model CAND.gguf --text FILE [--ctx N] [--positions N] [--threads N]\n"
	"                                         KL divergence of a quantised file to its reference (sixi-eval kl --help)\n"
	"DATASET is a .jsonl file or a folder with tasks.jsonl (format: datasets/README.md).\n";

/* ---- the option table: one row per option, naming the field it sets ---- */

enum {
	RUN = 1u << 0, RESUME = 1u << 1, SUMMARY = 1u << 2, EXPORT = 1u << 3, REGRADE = 1u << 4, PREFLIGHT = 1u << 5,
	GRADE = 1u << 6, MERGE = 1u << 7,
	ROWS = SUMMARY | EXPORT | REGRADE,
};

struct eval_opts {
	const char *db;              /* NULL: results/sixi.db */
	bool json, no_preflight;
	double ready_timeout_s;      /* 0: the default */
	struct eval_quick quick;     /* run without a protocol file */
	const char *condition;       /* run: only this condition of the protocol */
	double detect_gap, gap_baseline; /* run: fractions (the options take percentage points) */
	bool allow_underpowered;
	struct eval_shard shard;     /* run, resume: --shard K/N */
	const char *protocol;        /* resume */
	int format;                  /* export: -1 not given, 0 csv, 1 jsonl */
	struct args_list budgets;    /* regrade */
	bool no_canaries;            /* preflight */
	const char *completions;     /* grade */
	double loop_threshold;
};

/* --detect-gap, --gap-baseline: percentage points in (0, 100), stored as a fraction. */
static int percent_points(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	char *end;
	double d = strtod(v, &end);
	if (!v[0] || *end || !(d > 0 && d < 100)) {
		err_set(err, errlen, "%s needs percentage points in (0, 100), e.g. 10, got '%s'", opt, v);
		return -EINVAL;
	}
	*(double *)field = d / 100;
	return 0;
}

/* --shard K/N */
static int shard_opt(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	(void)opt;
	return eval_shard_parse(v, field, err, errlen);
}

/* A quick-run option on a resume: the configuration is frozen when the run starts. */
static int frozen(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	(void)v;
	(void)field;
	err_set(err, errlen,
		 "%s cannot change on a resume: a run's configuration (workers, repeats, sampling, time-outs) is frozen "
		 "when it starts and a resume uses it; resume without %s, or start a new run",
		 opt, opt);
	return -EINVAL;
}

#define O struct eval_opts
#define NUM(name, meta, field, help)                                                         \
	ARGS_DOUBLE_OPT(name, meta, O, quick.field, -1e15, 1e15, RUN, help),                 \
		ARGS_CALL_OPT(name, meta, frozen, O, quick.field, RESUME, NULL)
static const struct args_opt options[] = {
	ARGS_HEADING("common options (run, resume, summary, export, regrade):"),
	ARGS_STRING_OPT("--db", "PATH", O, db, RUN | RESUME | ROWS, "results database (default results/sixi.db)"),
	ARGS_FLAG_OPT("--json", O, json, true, RUN | RESUME | ROWS | GRADE | MERGE, "the summary as JSON on stdout"),
	ARGS_FLAG_OPT("--no-preflight", O, no_preflight, true, RUN | RESUME | ROWS, "skip the dataset's preflight"),
	ARGS_DOUBLE_OPT("--ready-timeout", "S", O, ready_timeout_s, 0, 1e7, RUN | RESUME | ROWS,
			"seconds to wait for a generation that returns tokens"),
	ARGS_CALL_OPT("--shard", "K/N", shard_opt, O, shard, RUN | RESUME,
		      "only slice K (0..N-1) of the (task, repeat) pairs; merge the shards with `merge`"),
	ARGS_HEADING("run:"),
	ARGS_STRING_OPT("--condition", "NAME", O, condition, RUN, "only this condition of the protocol"),
	ARGS_STRING_OPT("--url", "URL[,URL...]", O, quick.url, RUN,
			"quick run: the server, or replicas of one model (least outstanding requests)"),
	ARGS_STRING_OPT("--model", "NAME", O, quick.model, RUN, "quick run: the model name sent"),
	ARGS_STRING_OPT("--dataset", "DATASET", O, quick.dataset, RUN, "quick run: the dataset"),
	ARGS_STRING_OPT("--name", "NAME", O, quick.name, RUN, "quick run: the protocol's name (default quick)"),
	ARGS_FLAG_OPT("--chat", O, quick.raw, false, RUN, "the server applies its chat template (default)"),
	ARGS_FLAG_OPT("--raw", O, quick.raw, true, RUN, "the prompt is sent as it is"),
	ARGS_STRING_OPT("--template", "FILE", O, quick.template_path, RUN,
			"render with this template (.gguf, tokenizer_config.json or .jinja)"),
	NUM("--repeats", "N", repeats, "samples per task"),
	NUM("--concurrency", "N", concurrency, "requests in flight"),
	NUM("--attempts", "N", attempts, "tries per sample on transport errors"),
	NUM("--timeout", "S", timeout_s, "seconds per request"),
	NUM("--stall", "S", stall_s, "a stream with no byte for S seconds fails"),
	NUM("--seed", "N", shuffle_seed, "task order seed"),
	NUM("--loop-stop", "PCT", loop_stop, "stop a reply that repeats itself this much"),
	NUM("--max-tokens", "N", max_tokens, "sampling.max_tokens"),
	NUM("--reasoning-max-tokens", "N", reasoning_max_tokens, "sampling.reasoning_max_tokens"),
	NUM("--temperature", "T", temperature, "sampling.temperature"),
	NUM("--top-p", "P", top_p, "sampling.top_p"),
	NUM("--top-k", "K", top_k, "sampling.top_k"),
	NUM("--sample-seed", "N", sample_seed, "sampling.seed: each attempt sends a seed from N, task, repeat, attempt"),
	ARGS_CALL_OPT("--detect-gap", "PTS", percent_points, O, detect_gap, RUN,
		      "refuse a run too small to detect a difference of PTS points"),
	ARGS_CALL_OPT("--gap-baseline", "PCT", percent_points, O, gap_baseline, RUN,
		      "the pass rate the power plan starts from (default around 50)"),
	ARGS_FLAG_OPT("--allow-underpowered", O, allow_underpowered, true, RUN, "run even when the power plan says too small"),
	ARGS_HEADING("resume:"),
	ARGS_STRING_OPT("--protocol", "FILE", O, protocol, RESUME, "the protocol file, when it moved"),
	ARGS_HEADING("export, regrade:"),
	ARGS_FLAG_OPT("--csv", O, format, 0, EXPORT, "one CSV line per attempt"),
	ARGS_FLAG_OPT("--jsonl", O, format, 1, EXPORT, "one JSON line per attempt"),
	ARGS_LIST_OPT("--max-tokens", "N,N,...", O, budgets, 1, 4.6e18, REGRADE, "budgets to cut the stored replies at"),
	ARGS_HEADING("preflight, grade:"),
	ARGS_FLAG_OPT("--no-canaries", O, no_canaries, true, PREFLIGHT, "skip the sandbox canaries"),
	ARGS_STRING_OPT("--completions", "FILE.jsonl", O, completions, GRADE, "the completions to grade"),
	ARGS_DOUBLE_OPT("--loop-threshold", "PCT", O, loop_threshold, 0, 100, GRADE,
			"a reply repeating itself this much counts as a loop (default 50)"),
	ARGS_TABLE_END,
};
#undef NUM
#undef O

static const struct { const char *name; unsigned bit; } commands[] = {
	{ "run", RUN }, { "resume", RESUME }, { "summary", SUMMARY }, { "export", EXPORT }, { "regrade", REGRADE },
	{ "preflight", PREFLIGHT }, { "grade", GRADE }, { "merge", MERGE },
};

static int parse_run_id(const char *cmd, const char *s, int64_t *id)
{
	char err[256];
	if (!s || args_i64("RUN", s, 1, INT64_MAX, id, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-eval %s: give the run id (a number, as `sixi-eval run` printed it)%s%s\n", cmd,
			s ? ": " : "", s ? err : "");
		return -1;
	}
	return 0;
}

static int cmd_run(struct eval_opts *c, const char *proto_path)
{
	char err[8192];
	struct eval_protocol *p = NULL;
	if (proto_path) {
		if (eval_quick_any(&c->quick)) {
			fprintf(stderr, "sixi-eval run: give either a PROTOCOL file or quick-run flags, not both\n");
			return 2;
		}
		p = eval_protocol_load(proto_path, err, sizeof err);
	} else {
		if (!c->quick.url || !c->quick.model || !c->quick.dataset) {
			fprintf(stderr, "sixi-eval run: give a PROTOCOL file, or --url, --model and --dataset "
					"(see sixi-eval --help)\n");
			return 2;
		}
		cJSON *q = eval_quick_protocol(&c->quick);
		p = q ? eval_protocol_parse(q, NULL, err, sizeof err) : NULL;
		if (!q)
			err_set(err, sizeof err, "out of memory");
		cJSON_Delete(q);
	}
	if (!p) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	/* with --json stdout carries only the summary object; the rest goes to stderr */
	struct eval_run_opts o = {.db_path = c->db, .out = c->json ? stderr : stdout, .json = c->json, .json_out = stdout,
				  .skip_preflight = c->no_preflight,
				  .ready_timeout_s = c->ready_timeout_s, .detect_gap = c->detect_gap,
				  .gap_baseline = c->gap_baseline, .allow_underpowered = c->allow_underpowered,
				  .shard = c->shard};
	int rc = 0;
	bool any = false;
	for (int i = 0; i < p->n_conditions && rc == 0; i++) {
		if (c->condition && strcmp(c->condition, p->conditions[i].name) != 0)
			continue;
		any = true;
		int64_t run_id = 0;
		int r = eval_run_new(p, i, &o, &run_id, err, sizeof err);
		if (r != 0) {
			fprintf(stderr, "sixi-eval: %s\n", err);
			/* refused before the run was stored (bad input: replicas of other models, a
			 * plan too small, ...): 2, as for bad usage */
			rc = r == -EINVAL && run_id == 0 ? 2 : 1;
		}
	}
	if (!any) {
		fprintf(stderr, "sixi-eval run: the protocol has no condition named '%s'\n", c->condition);
		rc = 1;
	}
	eval_protocol_destroy(p);
	return rc;
}

static int cmd_resume(struct eval_opts *c, const char *id_s)
{
	int64_t id;
	if (parse_run_id("resume", id_s, &id))
		return 2;
	char err[4096];
	struct eval_run_opts o = {.db_path = c->db, .out = c->json ? stderr : stdout, .json = c->json, .json_out = stdout,
				  .ready_timeout_s = c->ready_timeout_s, .shard = c->shard};
	if (eval_run_resume(id, c->protocol, &o, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_rows(const char *cmd, struct eval_opts *c, const char *id_s)
{
	int64_t id;
	if (parse_run_id(cmd, id_s, &id))
		return 2;
	char err[4096];
	int rc;
	if (strcmp(cmd, "export") == 0) {
		if (c->format < 0) {
			fprintf(stderr, "sixi-eval export: give --csv or --jsonl\n");
			return 2;
		}
		rc = eval_run_export(c->db, id, c->format ? "jsonl" : "csv", stdout, err, sizeof err);
	} else if (strcmp(cmd, "regrade") == 0) {
		if (!c->budgets.n) {
			fprintf(stderr, "sixi-eval regrade: give --max-tokens N,N,...\n");
			return 2;
		}
		rc = eval_run_regrade(c->db, id, c->budgets.v, c->budgets.n, c->json, stdout, NULL, err, sizeof err);
	} else {
		rc = eval_run_summary(c->db, id, c->json, stdout, err, sizeof err);
	}
	if (rc) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_preflight(struct eval_opts *c, const char *dataset)
{
	if (!dataset) {
		fprintf(stderr, "sixi-eval preflight: give a DATASET (see sixi-eval --help)\n");
		return 2;
	}
	char err[8192];
	struct eval_dataset *d = eval_dataset_load(dataset, err, sizeof err);
	if (!d) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	struct grader *g = grader_create(NULL, NULL);
	if (!g) {
		eval_dataset_destroy(d);
		fprintf(stderr, "sixi-eval: out of memory\n");
		return 1;
	}
	if (grader_sandbox_problem(g))
		fprintf(stdout, "sandbox unusable: %s\n", grader_sandbox_problem(g));
	struct preflight_report rep;
	int rc = preflight_run(g, d, !c->no_canaries, stdout, &rep);
	int failed = rep.failed;
	preflight_finish(&rep);
	grader_destroy(g);
	eval_dataset_destroy(d);
	return rc || failed ? 1 : 0;
}

static int cmd_grade(struct eval_opts *c, const char *dataset)
{
	if (!dataset || !c->completions) {
		fprintf(stderr, "sixi-eval grade: give a DATASET and --completions FILE.jsonl (see sixi-eval --help)\n");
		return 2;
	}
	char err[8192];
	struct eval_dataset *d = eval_dataset_load(dataset, err, sizeof err);
	if (!d) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	struct grader *g = grader_create(NULL, NULL);
	if (g && grader_sandbox_problem(g))
		fprintf(stderr, "sixi-eval: warning: %s; code tasks are graded as environment failures\n",
			grader_sandbox_problem(g));
	int rc = g ? offline_grade(g, d, c->completions, c->loop_threshold, c->json, stdout, err, sizeof err) : -1;
	if (rc)
		fprintf(stderr, "sixi-eval: %s\n", g ? err : "out of memory");
	grader_destroy(g);
	eval_dataset_destroy(d);
	return rc ? 1 : 0;
}

static int cmd_merge(struct eval_opts *c, const char **pos, int n_pos)
{
	if (n_pos < 2) {
		fprintf(stderr, "sixi-eval merge: give OUT.db and the shard files IN.db... (see sixi-eval --help)\n");
		return 2;
	}
	char err[4096];
	/* with --json stdout carries only the summaries; the merge lines go to stderr */
	int rc = eval_merge(pos[0], pos + 1, (size_t)(n_pos - 1), c->json ? stderr : stdout, c->json, err, sizeof err);
	if (rc)
		fprintf(stderr, "sixi-eval merge: %s\n", err);
	return rc == 0 ? 0 : rc == -EINVAL ? 2 : 1;
}

/* The commands whose options are in the table above. */
static int table_cmd(const char *cmd, unsigned bit, int argc, char **argv)
{
	struct eval_opts o = { .format = -1, .loop_threshold = 50 };
	eval_quick_defaults(&o.quick);
	char prog[64];
	snprintf(prog, sizeof prog, "sixi-eval %s", cmd);
	/* merge takes any number of files; the others one positional word */
	int max_pos = bit == MERGE ? argc + 1 : 1;
	struct args_spec s = { .prog = prog, .usage = usage, .opts = options, .max_pos = max_pos };
	const char **pos = calloc((size_t)max_pos, sizeof *pos);
	int n_pos = 0;
	if (!pos) {
		fprintf(stderr, "sixi-eval: out of memory\n");
		return 1;
	}
	int rc = args_cli(&s, bit, argc, argv, &o, pos, &n_pos);
	if (rc == ARGS_CONTINUE && bit == MERGE)
		rc = cmd_merge(&o, pos, n_pos);
	if (rc != ARGS_CONTINUE || bit == MERGE) {
		free(pos);
		return rc;
	}
	const char *pos0 = pos[0];
	free(pos);
	if (bit == PREFLIGHT)
		return cmd_preflight(&o, pos0);
	if (bit == GRADE)
		return cmd_grade(&o, pos0);
	if (bit & ROWS)
		return cmd_rows(cmd, &o, pos0);
	if (http_global_init() != 0) {
		fprintf(stderr, "sixi-eval: cannot initialise libcurl\n");
		return 1;
	}
	rc = bit == RUN ? cmd_run(&o, pos0) : cmd_resume(&o, pos0);
	http_global_cleanup();
	return rc;
}

int main(int argc, char **argv)
{
	log_set_program("sixi-eval");
	gsl_set_error_handler_off();
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		struct args_spec s = { .prog = "sixi-eval", .usage = usage, .opts = options };
		args_help(&s, 0, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return table_cmd(cmd, commands[i].bit, argc - 2, argv + 2);
	/* commands of the areas that own them: text/, datasets/, eval/gate, eval/kl */
	if (strcmp(cmd, "template") == 0)
		return template_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "gate") == 0)
		return gate_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "dataset") == 0)
		return dataset_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "import") == 0)
		return import_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "kl") == 0)
		return kl_cmd_main(argc - 1, argv + 1);
	fprintf(stderr, "sixi-eval: unknown command '%s' (see sixi-eval --help)\n", cmd);
	return 2;
}
