/* sixi-eval — pass/fail evaluation runs: argument parsing and wiring only.
 * The work is in src/eval/ (datasets, protocols, scoring, grading, runs). */
#include "core/log.h"
#include "grade/grade.h"
#include "datasets/import.h"
#include "eval/kl.h"
#include "grade/offline.h"
#include "grade/preflight.h"
#include "eval/protocol.h"
#include "eval/run.h"
#include "datasets/task.h"
#include "text/template_cmd.h"
#include "eval/gate.h"
#include "datasets/dataset_cmd.h"
#include "core/args.h"
#include "net/http.h"
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
	"  run --url URL --model NAME --dataset DATASET [--chat|--raw|--template FILE]\n"
	"      [--repeats N] [--concurrency N] [--attempts N] [--max-tokens N] [--reasoning-max-tokens N]\n"
	"      [--temperature T] [--top-p P] [--top-k K] [--timeout S] [--stall S] [--seed N]\n"
	"      [--loop-stop PCT] [--name NAME]    a quick run without a protocol file (same checks)\n"
	"  run ... --detect-gap PTS [--gap-baseline PCT] [--allow-underpowered]\n"
	"                                         power plan: refuse a run too small to detect a difference of PTS\n"
	"                                         percentage points with 80 percent power (from PCT, default around 50)\n"
	"  resume RUN [--protocol FILE]           complete the missing rows of a run (configuration frozen)\n"
	"  summary RUN [--json]                   pass rate, classes, tokens, pass@k, majority vote\n"
	"  export RUN --csv|--jsonl               one line per attempt with the raw text\n"
	"  regrade RUN --max-tokens N,N,...       cut stored replies at smaller budgets and regrade\n"
	"  kl --reference REF.gguf --model CAND.gguf --text FILE [--ctx N] [--positions N] [--threads N]\n"
	"                                         KL divergence of a quantised file to its reference (sixi-eval kl --help)\n"
	"Common: --db PATH (default results/sixi.db), --json (summary as JSON on stdout), --no-preflight,\n"
	"        --ready-timeout S.\n"
	"DATASET is a .jsonl file or a folder with tasks.jsonl (format: datasets/README.md).\n";

struct common {
	const char *db;
	bool json, no_preflight;
	double ready_timeout_s;
};

/* Takes --db, --json, --no-preflight, --ready-timeout; returns how many argv slots it used (0 if none). */
static int common_flag(int argc, char **argv, int i, struct common *c)
{
	if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
		c->db = argv[i + 1];
		return 2;
	}
	if (strcmp(argv[i], "--json") == 0) {
		c->json = true;
		return 1;
	}
	if (strcmp(argv[i], "--no-preflight") == 0) {
		c->no_preflight = true;
		return 1;
	}
	if (strcmp(argv[i], "--ready-timeout") == 0 && i + 1 < argc) {
		c->ready_timeout_s = atof(argv[i + 1]);
		return 2;
	}
	return 0;
}

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

/* Flags of a quick run, turned into a protocol object so that it is checked and
 * hashed exactly like a protocol file. */
static const char *const quick_num[][2] = {
	{"--repeats", "repeats"}, {"--concurrency", "concurrency"}, {"--attempts", "attempts"},
	{"--timeout", "timeout_s"}, {"--stall", "stall_s"}, {"--seed", "shuffle_seed"}, {"--loop-stop", "loop_stop"},
};
static const char *const quick_samp[][2] = {
	{"--max-tokens", "max_tokens"}, {"--reasoning-max-tokens", "reasoning_max_tokens"},
	{"--temperature", "temperature"}, {"--top-p", "top_p"}, {"--top-k", "top_k"},
};

/* A flag of a quick run that sets part of the frozen configuration. */
static bool quick_flag(const char *a)
{
	for (size_t k = 0; k < sizeof quick_num / sizeof quick_num[0]; k++)
		if (strcmp(a, quick_num[k][0]) == 0)
			return true;
	for (size_t k = 0; k < sizeof quick_samp / sizeof quick_samp[0]; k++)
		if (strcmp(a, quick_samp[k][0]) == 0)
			return true;
	return false;
}

static int set_number(cJSON *o, const char *key, const char *flag, const char *v)
{
	char *end;
	double d = strtod(v, &end);
	if (!*v || *end) {
		fprintf(stderr, "sixi-eval run: %s needs a number, got '%s'\n", flag, v);
		return -1;
	}
	cJSON_AddNumberToObject(o, key, d);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct common c = {0};
	const char *proto_path = NULL, *cond_name = NULL, *url = NULL, *model = NULL, *dataset = NULL;
	const char *source = "chat", *name = "quick", *template_path = NULL;
	cJSON *q = cJSON_CreateObject(), *samp = cJSON_CreateObject();
	double detect_gap = 0, gap_baseline = 0;
	bool allow_underpowered = false;
	int rc = 2;
	for (int i = 1; i < argc; i++) {
		int used = common_flag(argc, argv, i, &c);
		if (used) {
			i += used - 1;
			continue;
		}
		bool matched = false;
		for (size_t k = 0; k < sizeof quick_num / sizeof quick_num[0] && !matched; k++) {
			if (strcmp(argv[i], quick_num[k][0]) == 0 && i + 1 < argc) {
				if (set_number(q, quick_num[k][1], argv[i], argv[i + 1]))
					goto out;
				matched = true;
			}
		}
		for (size_t k = 0; k < sizeof quick_samp / sizeof quick_samp[0] && !matched; k++) {
			if (strcmp(argv[i], quick_samp[k][0]) == 0 && i + 1 < argc) {
				if (set_number(samp, quick_samp[k][1], argv[i], argv[i + 1]))
					goto out;
				matched = true;
			}
		}
		if (matched) {
			i++;
		} else if ((strcmp(argv[i], "--detect-gap") == 0 || strcmp(argv[i], "--gap-baseline") == 0) &&
			   i + 1 < argc) {
			char *end;
			double v = strtod(argv[i + 1], &end);
			if (!argv[i + 1][0] || *end || !(v > 0 && v < 100)) {
				fprintf(stderr, "sixi-eval run: %s needs percentage points in (0, 100), e.g. 10, got '%s'\n",
					argv[i], argv[i + 1]);
				goto out;
			}
			*(strcmp(argv[i], "--detect-gap") == 0 ? &detect_gap : &gap_baseline) = v / 100;
			i++;
		} else if (strcmp(argv[i], "--allow-underpowered") == 0) {
			allow_underpowered = true;
		} else if (strcmp(argv[i], "--condition") == 0 && i + 1 < argc) {
			cond_name = argv[++i];
		} else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) {
			url = argv[++i];
		} else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
			model = argv[++i];
		} else if (strcmp(argv[i], "--dataset") == 0 && i + 1 < argc) {
			dataset = argv[++i];
		} else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
			name = argv[++i];
		} else if (strcmp(argv[i], "--chat") == 0) {
			source = "chat";
		} else if (strcmp(argv[i], "--raw") == 0) {
			source = "raw";
		} else if (strcmp(argv[i], "--template") == 0 && i + 1 < argc) {
			template_path = argv[++i];
		} else if (argv[i][0] != '-' && !proto_path) {
			proto_path = argv[i];
		} else {
			fprintf(stderr, "sixi-eval run: unknown or incomplete argument '%s'\n%s", argv[i], usage);
			goto out;
		}
	}
	char err[8192];
	struct eval_protocol *p = NULL;
	if (proto_path) {
		if (url || model || dataset || q->child || samp->child) {
			fprintf(stderr, "sixi-eval run: give either a PROTOCOL file or quick-run flags, not both\n");
			goto out;
		}
		p = eval_protocol_load(proto_path, err, sizeof err);
	} else {
		if (!url || !model || !dataset) {
			fprintf(stderr, "sixi-eval run: give a PROTOCOL file, or --url, --model and --dataset\n%s", usage);
			goto out;
		}
		cJSON_AddStringToObject(q, "name", name);
		cJSON *conds = cJSON_AddArrayToObject(q, "conditions");
		cJSON *cd = cJSON_CreateObject();
		cJSON_AddStringToObject(cd, "name", model);
		cJSON_AddStringToObject(cd, "endpoint", url);
		cJSON_AddStringToObject(cd, "model", model);
		cJSON *tp = cJSON_AddObjectToObject(cd, "template");
		if (template_path) {
			/* the file decides the source: a GGUF, a tokenizer_config.json, or a .jinja file */
			size_t tl = strlen(template_path);
			source = tl > 5 && strcmp(template_path + tl - 5, ".gguf") == 0   ? "gguf"
				 : tl > 5 && strcmp(template_path + tl - 5, ".json") == 0 ? "tokenizer_config"
											 : "jinja";
			cJSON_AddStringToObject(tp, "path", template_path);
		}
		cJSON_AddStringToObject(tp, "source", source);
		cJSON_AddItemToArray(conds, cd);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(q, "datasets"), cJSON_CreateString(dataset));
		if (samp->child) {
			cJSON_AddItemToObject(q, "sampling", samp);
			samp = NULL;
		}
		p = eval_protocol_parse(q, NULL, err, sizeof err);
	}
	rc = 1;
	if (!p) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		goto out;
	}
	/* with --json stdout carries only the summary object; the rest goes to stderr */
	struct eval_run_opts o = {.db_path = c.db, .out = c.json ? stderr : stdout, .json = c.json, .json_out = stdout,
				  .skip_preflight = c.no_preflight,
				  .ready_timeout_s = c.ready_timeout_s, .detect_gap = detect_gap,
				  .gap_baseline = gap_baseline, .allow_underpowered = allow_underpowered};
	rc = 0;
	bool any = false;
	for (int i = 0; i < p->n_conditions && rc == 0; i++) {
		if (cond_name && strcmp(cond_name, p->conditions[i].name) != 0)
			continue;
		any = true;
		int64_t run_id = 0;
		if (eval_run_new(p, i, &o, &run_id, err, sizeof err) != 0) {
			fprintf(stderr, "sixi-eval: %s\n", err);
			rc = 1;
		}
	}
	if (!any) {
		fprintf(stderr, "sixi-eval run: the protocol has no condition named '%s'\n", cond_name);
		rc = 1;
	}
	eval_protocol_destroy(p);
out:
	cJSON_Delete(q);
	cJSON_Delete(samp);
	return rc;
}

static int cmd_resume(int argc, char **argv)
{
	struct common c = {0};
	const char *id_s = NULL, *proto = NULL;
	for (int i = 1; i < argc; i++) {
		int used = common_flag(argc, argv, i, &c);
		if (used)
			i += used - 1;
		else if (strcmp(argv[i], "--protocol") == 0 && i + 1 < argc)
			proto = argv[++i];
		else if (quick_flag(argv[i])) {
			fprintf(stderr,
				"sixi-eval resume: %s cannot change on a resume: a run's configuration (workers, repeats, "
				"sampling, time-outs) is frozen when it starts and a resume uses it; resume without %s, or "
				"start a new run\n",
				argv[i], argv[i]);
			return 2;
		} else if (argv[i][0] != '-' && !id_s)
			id_s = argv[i];
		else {
			fprintf(stderr, "sixi-eval resume: unknown argument '%s'\n%s", argv[i], usage);
			return 2;
		}
	}
	int64_t id;
	if (parse_run_id("resume", id_s, &id))
		return 2;
	char err[4096];
	struct eval_run_opts o = {.db_path = c.db, .out = c.json ? stderr : stdout, .json = c.json, .json_out = stdout,
				  .ready_timeout_s = c.ready_timeout_s};
	if (eval_run_resume(id, proto, &o, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_rows(const char *cmd, int argc, char **argv)
{
	struct common c = {0};
	const char *id_s = NULL, *format = NULL, *budgets_s = NULL;
	for (int i = 1; i < argc; i++) {
		int used = common_flag(argc, argv, i, &c);
		if (used)
			i += used - 1;
		else if (strcmp(argv[i], "--csv") == 0)
			format = "csv";
		else if (strcmp(argv[i], "--jsonl") == 0)
			format = "jsonl";
		else if (strcmp(argv[i], "--max-tokens") == 0 && i + 1 < argc)
			budgets_s = argv[++i];
		else if (argv[i][0] != '-' && !id_s)
			id_s = argv[i];
		else {
			fprintf(stderr, "sixi-eval %s: unknown argument '%s'\n%s", cmd, argv[i], usage);
			return 2;
		}
	}
	int64_t id;
	if (parse_run_id(cmd, id_s, &id))
		return 2;
	char err[4096];
	int rc;
	if (strcmp(cmd, "export") == 0) {
		if (!format) {
			fprintf(stderr, "sixi-eval export: give --csv or --jsonl\n");
			return 2;
		}
		rc = eval_run_export(c.db, id, format, stdout, err, sizeof err);
	} else if (strcmp(cmd, "regrade") == 0) {
		int64_t budgets[32];
		size_t n = 0;
		if (!budgets_s || args_i64_list("--max-tokens", budgets_s, 1, INT64_MAX / 2, budgets, 32, &n, err,
						sizeof err) != 0) {
			fprintf(stderr, "sixi-eval regrade: %s\n", budgets_s ? err : "give --max-tokens N,N,...");
			return 2;
		}
		rc = eval_run_regrade(c.db, id, budgets, n, c.json, stdout, NULL, err, sizeof err);
	} else {
		rc = eval_run_summary(c.db, id, c.json, stdout, err, sizeof err);
	}
	if (rc) {
		fprintf(stderr, "sixi-eval: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_preflight(int argc, char **argv)
{
	const char *dataset = NULL;
	bool canaries = true;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-canaries") == 0)
			canaries = false;
		else if (argv[i][0] != '-' && !dataset)
			dataset = argv[i];
		else {
			fprintf(stderr, "sixi-eval preflight: unknown argument '%s'\n%s", argv[i], usage);
			return 2;
		}
	}
	if (!dataset) {
		fprintf(stderr, "sixi-eval preflight: give a DATASET\n%s", usage);
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
	int rc = preflight_run(g, d, canaries, stdout, &rep);
	int failed = rep.failed;
	preflight_finish(&rep);
	grader_destroy(g);
	eval_dataset_destroy(d);
	return rc || failed ? 1 : 0;
}

static int cmd_grade(int argc, char **argv)
{
	const char *dataset = NULL, *completions = NULL;
	double loop_threshold = 50;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--completions") == 0 && i + 1 < argc)
			completions = argv[++i];
		else if (strcmp(argv[i], "--loop-threshold") == 0 && i + 1 < argc)
			loop_threshold = atof(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] != '-' && !dataset)
			dataset = argv[i];
		else {
			fprintf(stderr, "sixi-eval grade: unknown argument '%s'\n%s", argv[i], usage);
			return 2;
		}
	}
	if (!dataset || !completions) {
		fprintf(stderr, "sixi-eval grade: give a DATASET and --completions FILE.jsonl\n%s", usage);
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
	int rc = g ? offline_grade(g, d, completions, loop_threshold, json, stdout, err, sizeof err) : -1;
	if (rc)
		fprintf(stderr, "sixi-eval: %s\n", g ? err : "out of memory");
	grader_destroy(g);
	eval_dataset_destroy(d);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	log_set_program("sixi-eval");
	gsl_set_error_handler_off();
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "template") == 0)
		return template_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "gate") == 0) /* datasets, importers, gates: src/eval/gate.h, dataset_cmd.h */
		return gate_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "dataset") == 0)
		return dataset_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "preflight") == 0)
		return cmd_preflight(argc - 1, argv + 1);
	if (strcmp(cmd, "grade") == 0)
		return cmd_grade(argc - 1, argv + 1);
	if (strcmp(cmd, "import") == 0)
		return import_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "kl") == 0)
		return kl_cmd_main(argc - 1, argv + 1);
	if (strcmp(cmd, "export") == 0 || strcmp(cmd, "regrade") == 0 || strcmp(cmd, "summary") == 0)
		return cmd_rows(cmd, argc - 1, argv + 1);
	if (strcmp(cmd, "run") == 0 || strcmp(cmd, "resume") == 0) {
		if (http_global_init() != 0) {
			fprintf(stderr, "sixi-eval: cannot initialise libcurl\n");
			return 1;
		}
		int rc = strcmp(cmd, "run") == 0 ? cmd_run(argc - 1, argv + 1) : cmd_resume(argc - 1, argv + 1);
		http_global_cleanup();
		return rc;
	}
	fprintf(stderr, "sixi-eval: unknown command '%s'\n%s", cmd, usage);
	return 2;
}
