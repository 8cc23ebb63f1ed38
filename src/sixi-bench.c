/* sixi-bench — load generator for OpenAI-compatible endpoints.
 * Parses arguments and wires src/bench together; the work is in the modules. */
#include "bench/arrival.h"
#include "bench/bench.h"
#include "bench/dist.h"
#include "bench/emitter.h"
#include "bench/slo.h"
#include "bench/source.h"
#include "bench/selftest.h"
#include "bench/workloads.h"
#include "core/args.h"
#include "core/clock.h"
#include "core/log.h"
#include "net/http.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "plan/plan_cmd.h"

static const char usage_text[] =
	"usage: sixi-bench COMMAND [options]\n"
	"\n"
	"commands:\n"
	"  sweep     closed-loop concurrency sweep   --concurrency 1,4,16,32\n"
	"  prefill   TTFT and prefill rate per prompt length, cache-cold   --prompt-tokens 1000,4000,16000\n"
	"  agents    long unique documents with follow-ups   --agents 16 --doc-tokens 17800 --followups 2 [--stagger S]\n"
	"  rate      open-loop arrivals   --rps R --duration S [--arrival poisson|constant|gamma:B] [--ramp linear:FROM,S]\n"
	"            or a recorded trace   --trace FILE (Mooncake JSONL, BurstGPT CSV) [--trace-speed X]\n"
	"  replay    multi-turn conversations, each turn with the history and the model's replies\n"
	"            --prompts FILE [--conversations C] [--max-turns K] [--think-time S] [--max-conversations N]\n"
	"  prefix    G groups sharing an L-token prefix, cached_tokens reported\n"
	"            --groups G --prefix-tokens L [--requests R] [--question-tokens Q]\n"
	"  search    the highest load whose SLO attainment (Wilson lower bound) meets a target\n"
	"            --slo SPEC --lo X --hi Y [--mode rate|concurrency] [--target 0.9] [--repeats N]\n"
	"            [--requests N] [--tolerance 0.05] [--arrival ...]\n"
	"  selftest  this client's ceiling against a built-in emitter   [--streams 1,64,1000] [--url EMITTER]\n"
	"  emitter   run the built-in emitter alone   --port N [--port-file F] [--events 256]\n"
	"  plan      size KV cache and state pools   --model CONFIG_OR_GGUF --context N --sequences S\n"
	"\n"
	"endpoint and request options:\n"
	"  --url URL               server base URL (http://127.0.0.1:8080); a trailing /v1 is accepted\n"
	"  --model NAME            model name sent in requests\n"
	"  --chat                  use /v1/chat/completions (default /v1/completions)\n"
	"  --max-tokens N          tokens to generate per request (default 128)\n"
	"  --prompt-tokens N       prompt length in tokens, calibrated from the server's usage (default 32)\n"
	"  --temperature T         sampling temperature (default 0.7)\n"
	"  --no-ignore-eos         do not send ignore_eos\n"
	"  --extra JSON            object merged into every request body\n"
	"  --allow-cached          do not invalidate points whose prompts hit a prefix cache\n"
	"  --prompts FILE|DIR      prompts from ShareGPT JSON, JSONL (prompt or messages records) or an eval\n"
	"                          dataset folder (implies --allow-cached: such prompts may share prefixes)\n"
	"  --input-len DIST        synthetic prompt lengths: fixed:N, uniform:LO,HI, normal:MEAN,SD,\n"
	"                          lognormal:MEDIAN,SIGMA (tokens; seeded by --seed)\n"
	"  --output-len DIST       max_tokens per request, the same forms\n"
	"  --slo SPEC              ttft=500ms,tpot=..,itl=50ms,e2e=10s per request; NAME_pP=V (ttft_p99=2s)\n"
	"                          over the level; units us, ms, s: goodput and attainment per level\n"
	"  --metrics               sweep, rate: scrape the server's /metrics (vllm:, sglang:, llamacpp:, sixi_)\n"
	"                          before and after each level; deltas and speculative acceptance stored\n"
	"  --repeats N             sweep: run every level N times (mean, t interval, CV across runs);\n"
	"                          search: runs per probe; prefill: requests per length\n"
	"\n"
	"run options:\n"
	"  --rounds N              requests per stream at each level (default 2)\n"
	"  --warmup N              warm-up requests, stored but excluded (default 2)\n"
	"  --threads N             client threads (default: cores)\n"
	"  --seed N                prompt seed\n"
	"  --ready-timeout S       seconds to wait for a generation that returns tokens (default 120)\n"
	"  --connect-timeout S     (default 10)   --first-byte-timeout S (default 600)\n"
	"  --stall-timeout S       a stream with no byte for S seconds ends as 'stall' (default 60)\n"
	"  --request-timeout S     total per request (default none)\n"
	"  --run-timeout S         bound on each level (default 3600)\n"
	"  --db PATH               results database (default results/sixi.db)\n"
	"  --plot-dir DIR          where plots go (default: plots/ beside the database)\n"
	"  --http native|curl      HTTP engine for http:// URLs (default native; https:// always uses curl)\n"
	"  --no-plots  --json  --quiet  --log-level error|warn|info|debug\n";

struct opts {
	struct bench_cfg cfg;
	const char *concurrency;
	const char *prompt_list;
	int64_t repeats;
	struct agents_params agents;
	double rps, duration;
	const char *streams;
	int64_t events, tokens_per_event;
	int port;
	const char *port_file;
	double lifetime;
	const char *http_engine; /* --http, over SIXI_HTTP */
	const char *prompts, *input_len, *output_len, *slo, *arrival, *ramp, *trace, *mode;
	double trace_speed;
	bool metrics;
	struct replay_params replay;
	struct prefix_params prefix;
	struct search_params search;
};

static int fail_usage(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "sixi-bench: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n(see sixi-bench --help)\n");
	return 2;
}

static int secs_ms(const char *flag, const char *v, int64_t *out, char *err, size_t n)
{
	double s;
	int rc = args_double(flag, v, 0.001, 1e7, &s, err, n);
	if (!rc)
		*out = (int64_t)(s * 1000.0);
	return rc;
}

/* Parses argv[2..]; returns 0, or an exit code after printing the message. */
static int parse(int argc, char **argv, const char *cmd, struct opts *o)
{
	char err[512];
	for (int i = 2; i < argc; i++) {
		char *a = argv[i];
		char *val = NULL;
		char flag[64];
		snprintf(flag, sizeof flag, "%s", a);
		char *eq = strchr(flag, '=');
		if (eq) {
			*eq = 0;
			val = a + (eq - flag) + 1;
		}
#define FLAG(name) (strcmp(flag, name) == 0)
#define NEED_VAL()                                                                              \
	do {                                                                                    \
		if (!val) {                                                                     \
			if (i + 1 >= argc)                                                      \
				return fail_usage("%s needs a value%s", flag, "");              \
			val = argv[++i];                                                        \
		}                                                                               \
	} while (0)
#define CHECKED(expr)                                        \
	do {                                                 \
		if ((expr) != 0) {                           \
			fprintf(stderr, "sixi-bench: %s\n", err); \
			return 2;                            \
		}                                            \
	} while (0)
		if (FLAG("--help") || FLAG("-h")) {
			fputs(usage_text, stdout);
			exit(0);
		} else if (FLAG("--json")) {
			o->cfg.json = true;
		} else if (FLAG("--quiet")) {
			o->cfg.quiet = true;
		} else if (FLAG("--no-plots")) {
			o->cfg.no_plots = true;
		} else if (FLAG("--chat")) {
			o->cfg.api = OPENAI_CHAT;
		} else if (FLAG("--no-ignore-eos")) {
			o->cfg.ignore_eos = false;
		} else if (FLAG("--allow-cached")) {
			o->cfg.unique_prompts = false;
		} else if (FLAG("--url")) {
			NEED_VAL();
			o->cfg.url = val;
		} else if (FLAG("--model")) {
			NEED_VAL();
			o->cfg.model = val;
		} else if (FLAG("--db")) {
			NEED_VAL();
			o->cfg.db_path = val;
		} else if (FLAG("--plot-dir")) {
			NEED_VAL();
			o->cfg.plot_dir = val;
		} else if (FLAG("--extra")) {
			NEED_VAL();
			cJSON *j = cJSON_Parse(val);
			bool ok = cJSON_IsObject(j);
			cJSON_Delete(j);
			if (!ok)
				return fail_usage("--extra: '%s' is not a JSON object%s", val, "");
			o->cfg.extra_json = val;
		} else if (FLAG("--http")) {
			NEED_VAL();
			if (http_set_engine(val) != 0)
				return fail_usage("--http: '%s' is not one of native, curl%s", val, "");
			o->http_engine = val;
		} else if (FLAG("--log-level")) {
			NEED_VAL();
			enum log_level l;
			if (log_level_parse(val, &l))
				return fail_usage("--log-level: '%s' is not one of error, warn, info, debug%s", val, "");
			log_set_level(l);
		} else if (FLAG("--max-tokens")) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 10000000, &o->cfg.max_tokens, err, sizeof err));
		} else if (FLAG("--prompt-tokens")) {
			NEED_VAL();
			if (strcmp(cmd, "prefill") == 0)
				o->prompt_list = val;
			else
				CHECKED(args_i64(flag, val, 1, 10000000, &o->cfg.prompt_tokens, err, sizeof err));
		} else if (FLAG("--temperature")) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0, 10, &o->cfg.temperature, err, sizeof err));
		} else if (FLAG("--rounds")) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000000, &o->cfg.rounds, err, sizeof err));
		} else if (FLAG("--warmup")) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 0, 1000, &o->cfg.warmup, err, sizeof err));
		} else if (FLAG("--threads")) {
			NEED_VAL();
			int64_t t;
			CHECKED(args_i64(flag, val, 1, 1024, &t, err, sizeof err));
			o->cfg.threads = (int)t;
		} else if (FLAG("--seed")) {
			NEED_VAL();
			int64_t s;
			CHECKED(args_i64(flag, val, 0, INT64_MAX, &s, err, sizeof err));
			o->cfg.seed = (uint64_t)s;
		} else if (FLAG("--ready-timeout")) {
			NEED_VAL();
			CHECKED(secs_ms(flag, val, &o->cfg.ready_timeout_ms, err, sizeof err));
		} else if (FLAG("--connect-timeout")) {
			NEED_VAL();
			CHECKED(secs_ms(flag, val, &o->cfg.connect_timeout_ms, err, sizeof err));
		} else if (FLAG("--first-byte-timeout")) {
			NEED_VAL();
			CHECKED(secs_ms(flag, val, &o->cfg.first_byte_timeout_ms, err, sizeof err));
		} else if (FLAG("--stall-timeout")) {
			NEED_VAL();
			CHECKED(secs_ms(flag, val, &o->cfg.stall_timeout_ms, err, sizeof err));
		} else if (FLAG("--request-timeout")) {
			NEED_VAL();
			CHECKED(secs_ms(flag, val, &o->cfg.total_timeout_ms, err, sizeof err));
		} else if (FLAG("--run-timeout")) {
			NEED_VAL();
			CHECKED(secs_ms(flag, val, &o->cfg.run_timeout_ms, err, sizeof err));
		} else if (FLAG("--concurrency") && strcmp(cmd, "sweep") == 0) {
			NEED_VAL();
			o->concurrency = val;
		} else if (FLAG("--repeats") && (strcmp(cmd, "prefill") == 0 || strcmp(cmd, "sweep") == 0 ||
						 strcmp(cmd, "search") == 0)) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000, &o->repeats, err, sizeof err));
		} else if (FLAG("--prompts") && strcmp(cmd, "prefill") != 0 && strcmp(cmd, "agents") != 0 &&
			   strcmp(cmd, "prefix") != 0) {
			NEED_VAL();
			o->prompts = val;
		} else if (FLAG("--input-len") && (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "rate") == 0 ||
						   strcmp(cmd, "search") == 0)) {
			NEED_VAL();
			o->input_len = val;
		} else if (FLAG("--output-len") && (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "rate") == 0 ||
						    strcmp(cmd, "search") == 0 || strcmp(cmd, "replay") == 0)) {
			NEED_VAL();
			o->output_len = val;
		} else if (FLAG("--slo") && (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "rate") == 0 ||
					     strcmp(cmd, "search") == 0 || strcmp(cmd, "replay") == 0)) {
			NEED_VAL();
			o->slo = val;
		} else if (FLAG("--metrics") && (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "rate") == 0)) {
			o->metrics = true;
		} else if (FLAG("--arrival") && (strcmp(cmd, "rate") == 0 || strcmp(cmd, "search") == 0)) {
			NEED_VAL();
			o->arrival = val;
		} else if (FLAG("--ramp") && strcmp(cmd, "rate") == 0) {
			NEED_VAL();
			o->ramp = val;
		} else if (FLAG("--trace") && strcmp(cmd, "rate") == 0) {
			NEED_VAL();
			o->trace = val;
		} else if (FLAG("--trace-speed") && strcmp(cmd, "rate") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 1e6, &o->trace_speed, err, sizeof err));
		} else if (FLAG("--conversations") && strcmp(cmd, "replay") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 4096, &o->replay.conversations, err, sizeof err));
		} else if (FLAG("--max-conversations") && strcmp(cmd, "replay") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000000, &o->replay.limit, err, sizeof err));
		} else if (FLAG("--max-turns") && strcmp(cmd, "replay") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000, &o->replay.max_turns, err, sizeof err));
		} else if (FLAG("--think-time") && strcmp(cmd, "replay") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0, 3600, &o->replay.think_s, err, sizeof err));
		} else if (FLAG("--groups") && strcmp(cmd, "prefix") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 4096, &o->prefix.groups, err, sizeof err));
		} else if (FLAG("--prefix-tokens") && strcmp(cmd, "prefix") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 10000000, &o->prefix.prefix_tokens, err, sizeof err));
		} else if (FLAG("--requests") && (strcmp(cmd, "prefix") == 0 || strcmp(cmd, "search") == 0)) {
			NEED_VAL();
			int64_t v;
			CHECKED(args_i64(flag, val, 1, 100000, &v, err, sizeof err));
			o->prefix.requests = o->search.requests = v;
		} else if (FLAG("--question-tokens") && strcmp(cmd, "prefix") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 10000000, &o->prefix.question_tokens, err, sizeof err));
		} else if (FLAG("--mode") && strcmp(cmd, "search") == 0) {
			NEED_VAL();
			if (strcmp(val, "rate") && strcmp(val, "concurrency"))
				return fail_usage("--mode: '%s' is not one of rate, concurrency%s", val, "");
			o->search.concurrency = strcmp(val, "concurrency") == 0;
		} else if (FLAG("--lo") && strcmp(cmd, "search") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 1e6, &o->search.lo, err, sizeof err));
		} else if (FLAG("--hi") && strcmp(cmd, "search") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 1e6, &o->search.hi, err, sizeof err));
		} else if (FLAG("--target") && strcmp(cmd, "search") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 0.9999, &o->search.target, err, sizeof err));
		} else if (FLAG("--tolerance") && strcmp(cmd, "search") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 1, &o->search.tolerance, err, sizeof err));
		} else if (FLAG("--max-probes") && strcmp(cmd, "search") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 3, 64, &o->search.max_probes, err, sizeof err));
		} else if (FLAG("--agents") && strcmp(cmd, "agents") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 4096, &o->agents.agents, err, sizeof err));
		} else if (FLAG("--doc-tokens") && strcmp(cmd, "agents") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 10000000, &o->agents.doc_tokens, err, sizeof err));
		} else if (FLAG("--followups") && strcmp(cmd, "agents") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 100, &o->agents.followups, err, sizeof err));
		} else if (FLAG("--followup-tokens") && strcmp(cmd, "agents") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 10000000, &o->agents.followup_tokens, err, sizeof err));
		} else if (FLAG("--stagger") && strcmp(cmd, "agents") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0, 3600, &o->agents.stagger_s, err, sizeof err));
		} else if (FLAG("--answer-tokens") && strcmp(cmd, "agents") == 0) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000000, &o->agents.answer_tokens, err, sizeof err));
		} else if (FLAG("--rps") && strcmp(cmd, "rate") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 100000, &o->rps, err, sizeof err));
		} else if (FLAG("--duration") && strcmp(cmd, "rate") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.001, 86400, &o->duration, err, sizeof err));
		} else if (FLAG("--streams") && strcmp(cmd, "selftest") == 0) {
			NEED_VAL();
			o->streams = val;
		} else if (FLAG("--events") && (strcmp(cmd, "selftest") == 0 || strcmp(cmd, "emitter") == 0)) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000000, &o->events, err, sizeof err));
		} else if (FLAG("--tokens-per-event") && (strcmp(cmd, "selftest") == 0 || strcmp(cmd, "emitter") == 0)) {
			NEED_VAL();
			CHECKED(args_i64(flag, val, 1, 1000, &o->tokens_per_event, err, sizeof err));
		} else if (FLAG("--port") && strcmp(cmd, "emitter") == 0) {
			NEED_VAL();
			int64_t p;
			CHECKED(args_i64(flag, val, 0, 65535, &p, err, sizeof err));
			o->port = (int)p;
		} else if (FLAG("--port-file") && strcmp(cmd, "emitter") == 0) {
			NEED_VAL();
			o->port_file = val;
		} else if (FLAG("--lifetime") && strcmp(cmd, "emitter") == 0) {
			NEED_VAL();
			CHECKED(args_double(flag, val, 0.1, 86400, &o->lifetime, err, sizeof err));
		} else if (a[0] == '-') {
			fprintf(stderr, "sixi-bench: unknown option '%s' for '%s' (see sixi-bench --help)\n", a, cmd);
			return 2;
		} else {
			fprintf(stderr, "sixi-bench: unexpected argument '%s' for '%s' (see sixi-bench --help)\n", a, cmd);
			return 2;
		}
	}
	return 0;
}

/* Normalises the base URL: no trailing slash, no trailing /v1. */
static int check_url(struct bench_cfg *c, char *store, size_t n)
{
	if (!c->url) {
		fprintf(stderr, "sixi-bench: --url is required (e.g. --url http://127.0.0.1:8080)\n");
		return 2;
	}
	if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0) {
		fprintf(stderr, "sixi-bench: --url '%s' must start with http:// or https://\n", c->url);
		return 2;
	}
	snprintf(store, n, "%s", c->url);
	size_t len = strlen(store);
	while (len && store[len - 1] == '/')
		store[--len] = 0;
	if (len >= 3 && strcmp(store + len - 3, "/v1") == 0)
		store[len - 3] = 0;
	c->url = store;
	return 0;
}

static volatile sig_atomic_t stop_emitter;
static void on_signal(int sig) { (void)sig; stop_emitter = 1; }

static int cmd_emitter(struct opts *o)
{
	char err[256];
	struct emitter *e = emitter_start(o->port, o->events, o->tokens_per_event, err, sizeof err);
	if (!e) {
		fprintf(stderr, "sixi-bench: %s\n", err);
		return 1;
	}
	if (o->port_file) {
		char tmp[1100];
		snprintf(tmp, sizeof tmp, "%s.tmp", o->port_file);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "%d\n", emitter_port(e)) < 0 || fclose(f) != 0 || rename(tmp, o->port_file) != 0) {
			fprintf(stderr, "sixi-bench: cannot write --port-file %s\n", o->port_file);
			emitter_stop(e);
			return 1;
		}
	}
	fprintf(stderr, "emitter listening on 127.0.0.1:%d (%lld events x %lld tokens per response)\n", emitter_port(e),
		(long long)o->events, (long long)o->tokens_per_event);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	int64_t end = clock_now_ns() + (int64_t)(o->lifetime * 1e9);
	while (!stop_emitter && clock_now_ns() < end)
		clock_sleep_ns(50000000LL);
	fprintf(stderr, "emitter: %llu responses served\n", (unsigned long long)emitter_requests(e));
	emitter_stop(e);
	return 0;
}

static void raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int main(int argc, char **argv)
{
	log_set_program("sixi-bench");
	/* One malloc arena for all threads. A load thread keeps every request's event
	 * gaps until its level ends (hundreds of KiB per second); a thread arena grows
	 * one page per mprotect call, the main arena in 128 KiB steps, which took about
	 * 1,300 system calls off a 2,560-request selftest. The few allocations per
	 * request are far too rare for the shared lock to matter. */
	mallopt(M_ARENA_MAX, 1);
	gsl_set_error_handler_off();
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "plan") == 0) {
		return plan_cmd_main(argc - 1, argv + 1);
	}
	static const char *known[] = { "sweep", "prefill", "agents", "rate", "selftest", "emitter", "replay", "prefix",
				       "search" };
	bool ok = false;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		ok |= strcmp(cmd, known[i]) == 0;
	if (!ok) {
		fprintf(stderr, "sixi-bench: unknown command '%s' (sweep, prefill, agents, rate, replay, prefix, search, "
				"selftest, emitter, plan)\n",
			cmd);
		return 2;
	}
	struct opts o;
	memset(&o, 0, sizeof o);
	bench_cfg_defaults(&o.cfg);
	o.agents = (struct agents_params){ .agents = 16, .doc_tokens = 17800, .followups = 2, .followup_tokens = 64,
					   .answer_tokens = 16 };
	o.events = 256;
	o.tokens_per_event = 1;
	o.lifetime = 3600;
	o.repeats = 1;
	o.trace_speed = 1;
	o.replay = (struct replay_params){ .conversations = 4, .limit = 1000000, .max_turns = 1000 };
	o.prefix = (struct prefix_params){ .groups = 4, .prefix_tokens = 1000, .requests = 4, .question_tokens = 32 };
	o.search = (struct search_params){ .target = 0.9, .tolerance = 0.05, .requests = 100, .max_probes = 12 };
	int rc = parse(argc, argv, cmd, &o);
	if (rc)
		return rc;
	raise_fd_limit();
	signal(SIGPIPE, SIG_IGN);
	if (http_global_init() != 0) {
		fprintf(stderr, "sixi-bench: the HTTP client failed to initialise\n");
		return 1;
	}
	if (o.http_engine && http_set_engine(o.http_engine) != 0)
		return 2;
	if (strcmp(cmd, "emitter") == 0) {
		rc = cmd_emitter(&o);
		http_global_cleanup();
		return rc;
	}
	char err[1024] = "";
	int64_t list[64];
	size_t n_list = 0;
	if (strcmp(cmd, "selftest") == 0) {
		if (args_i64_list("--streams", o.streams ? o.streams : "1,64,1000", 1, 100000, list, 64, &n_list, err,
				  sizeof err))
			return fprintf(stderr, "sixi-bench: %s\n", err), 2;
		struct selftest_params sp = { .streams = list, .n_streams = n_list, .events = o.events,
					      .tokens_per_event = o.tokens_per_event };
		char url[1024];
		if (o.cfg.url) {
			if ((rc = check_url(&o.cfg, url, sizeof url)) != 0)
				return rc;
			sp.url = o.cfg.url;
		}
		rc = selftest_run(&o.cfg, &sp, stdout, err, sizeof err);
		if (rc)
			fprintf(stderr, "sixi-bench: selftest failed: %s\n", err);
		http_global_cleanup();
		return rc ? 1 : 0;
	}
	char url[1024];
	if ((rc = check_url(&o.cfg, url, sizeof url)) != 0)
		return rc;
	/* every input is read and checked before the run is recorded or a request sent */
	struct dist in_len, out_len;
	struct slo slo;
	struct arrival arrival = { .kind = ARRIVAL_POISSON, .burstiness = 1 };
	struct arrival_trace trace = { 0 };
	struct source *src = NULL;
	struct workload_inputs in = { 0 };
	if ((o.input_len && dist_parse("--input-len", o.input_len, &in_len, err, sizeof err)) ||
	    (o.output_len && dist_parse("--output-len", o.output_len, &out_len, err, sizeof err)) ||
	    (o.slo && slo_parse(o.slo, &slo, err, sizeof err)) ||
	    (o.arrival && arrival_parse(o.arrival, &arrival, err, sizeof err)) ||
	    (o.ramp && arrival_parse_ramp(o.ramp, &arrival, err, sizeof err)))
		return fprintf(stderr, "sixi-bench: %s\n", err), 2;
	in.input_len = o.input_len ? &in_len : NULL;
	in.output_len = o.output_len ? &out_len : NULL;
	in.slo = o.slo ? &slo : NULL;
	in.metrics = o.metrics;
	if (strcmp(cmd, "replay") == 0 && !o.prompts)
		return fail_usage("replay needs --prompts FILE (ShareGPT JSON or JSONL of conversations)%s%s", "", "");
	if (strcmp(cmd, "search") == 0) {
		if (!o.slo)
			return fail_usage("search needs --slo SPEC (e.g. --slo ttft=500ms,e2e=10s)%s%s", "", "");
		if (o.search.lo <= 0 || o.search.hi <= o.search.lo)
			return fail_usage("search needs --lo X and --hi Y with 0 < X < Y%s%s", "", "");
		if (o.search.concurrency && (o.search.lo != floor(o.search.lo) || o.search.hi != floor(o.search.hi)))
			return fail_usage("--mode concurrency: --lo and --hi are whole numbers of streams%s%s", "", "");
	}
	if (o.prompts) {
		src = source_load(o.prompts, err, sizeof err);
		if (!src)
			return fprintf(stderr, "sixi-bench: %s\n", err), 2;
		if (src->skipped)
			log_warn("%s: %zu record(s) without a user turn skipped", src->path, src->skipped);
		in.src = src;
		o.cfg.unique_prompts = false; /* a prompt set may share prefixes: cached tokens are reported, not invalid */
	}
	if (strcmp(cmd, "replay") == 0 || strcmp(cmd, "prefix") == 0)
		o.cfg.unique_prompts = false; /* reuse of the history or prefix is what is measured */
	if (o.trace && arrival_trace_load(o.trace, o.trace_speed, 1000000, &trace, err, sizeof err) != 0) {
		source_destroy(src);
		return fprintf(stderr, "sixi-bench: %s\n", err), 2;
	}
	cJSON *proto = cJSON_CreateObject();
	cJSON_AddStringToObject(proto, "workload", cmd);
	cJSON_AddStringToObject(proto, "url", o.cfg.url);
	if (o.cfg.model)
		cJSON_AddStringToObject(proto, "model", o.cfg.model);
	cJSON_AddStringToObject(proto, "api", o.cfg.api == OPENAI_CHAT ? "chat" : "completions");
	cJSON_AddNumberToObject(proto, "max_tokens", (double)o.cfg.max_tokens);
	cJSON_AddNumberToObject(proto, "prompt_tokens", (double)o.cfg.prompt_tokens);
	cJSON_AddNumberToObject(proto, "temperature", o.cfg.temperature);
	cJSON_AddBoolToObject(proto, "ignore_eos", o.cfg.ignore_eos);
	cJSON_AddNumberToObject(proto, "rounds", (double)o.cfg.rounds);
	cJSON_AddNumberToObject(proto, "warmup", (double)o.cfg.warmup);
	cJSON_AddNumberToObject(proto, "threads", o.cfg.threads);
	cJSON_AddNumberToObject(proto, "seed", (double)o.cfg.seed);
	cJSON_AddNumberToObject(proto, "stall_timeout_ms", (double)o.cfg.stall_timeout_ms);
	if (strcmp(cmd, "sweep") == 0) {
		if (args_i64_list("--concurrency", o.concurrency ? o.concurrency : "1,4,16,32", 1, 100000, list, 64,
				  &n_list, err, sizeof err))
			return cJSON_Delete(proto), fprintf(stderr, "sixi-bench: %s\n", err), 2;
		cJSON_AddStringToObject(proto, "concurrency", o.concurrency ? o.concurrency : "1,4,16,32");
	} else if (strcmp(cmd, "prefill") == 0) {
		if (args_i64_list("--prompt-tokens", o.prompt_list ? o.prompt_list : "1000,4000,16000", 1, 10000000, list,
				  64, &n_list, err, sizeof err))
			return cJSON_Delete(proto), fprintf(stderr, "sixi-bench: %s\n", err), 2;
		cJSON_AddStringToObject(proto, "prompt_lengths", o.prompt_list ? o.prompt_list : "1000,4000,16000");
	} else if (strcmp(cmd, "agents") == 0) {
		cJSON_AddNumberToObject(proto, "agents", (double)o.agents.agents);
		cJSON_AddNumberToObject(proto, "doc_tokens", (double)o.agents.doc_tokens);
		cJSON_AddNumberToObject(proto, "followups", (double)o.agents.followups);
		cJSON_AddNumberToObject(proto, "followup_tokens", (double)o.agents.followup_tokens);
		cJSON_AddNumberToObject(proto, "stagger_s", o.agents.stagger_s);
	} else if (strcmp(cmd, "rate") == 0) {
		if (!o.trace && (o.rps <= 0 || o.duration <= 0)) {
			source_destroy(src);
			return cJSON_Delete(proto), fail_usage("rate needs --rps R and --duration S (or --trace FILE)%s%s", "", "");
		}
		cJSON_AddNumberToObject(proto, "rps", o.rps);
		cJSON_AddNumberToObject(proto, "duration_s", o.duration);
		cJSON_AddStringToObject(proto, "arrival", o.arrival ? o.arrival : "poisson");
		if (o.ramp)
			cJSON_AddStringToObject(proto, "ramp", o.ramp);
		if (o.trace) {
			cJSON_AddStringToObject(proto, "trace", o.trace);
			cJSON_AddNumberToObject(proto, "trace_speed", o.trace_speed);
		}
	} else if (strcmp(cmd, "replay") == 0) {
		cJSON_AddNumberToObject(proto, "conversations", (double)o.replay.conversations);
		cJSON_AddNumberToObject(proto, "max_conversations", (double)o.replay.limit);
		cJSON_AddNumberToObject(proto, "max_turns", (double)o.replay.max_turns);
		cJSON_AddNumberToObject(proto, "think_time_s", o.replay.think_s);
	} else if (strcmp(cmd, "prefix") == 0) {
		cJSON_AddNumberToObject(proto, "groups", (double)o.prefix.groups);
		cJSON_AddNumberToObject(proto, "prefix_tokens", (double)o.prefix.prefix_tokens);
		cJSON_AddNumberToObject(proto, "requests_per_group", (double)o.prefix.requests);
		cJSON_AddNumberToObject(proto, "question_tokens", (double)o.prefix.question_tokens);
	} else if (strcmp(cmd, "search") == 0) {
		cJSON_AddStringToObject(proto, "mode", o.search.concurrency ? "concurrency" : "rate");
		cJSON_AddNumberToObject(proto, "lo", o.search.lo);
		cJSON_AddNumberToObject(proto, "hi", o.search.hi);
		cJSON_AddNumberToObject(proto, "target", o.search.target);
		cJSON_AddNumberToObject(proto, "tolerance", o.search.tolerance);
		cJSON_AddNumberToObject(proto, "requests", (double)o.search.requests);
		cJSON_AddNumberToObject(proto, "search_repeats", (double)o.repeats);
		cJSON_AddStringToObject(proto, "arrival", o.arrival ? o.arrival : "poisson");
	}
	if (o.prompts)
		cJSON_AddStringToObject(proto, "prompts", o.prompts);
	if (o.input_len)
		cJSON_AddStringToObject(proto, "input_len", o.input_len);
	if (o.output_len)
		cJSON_AddStringToObject(proto, "output_len", o.output_len);
	if (o.slo)
		cJSON_AddStringToObject(proto, "slo", o.slo);
	if (strcmp(cmd, "sweep") == 0)
		cJSON_AddNumberToObject(proto, "repeats", (double)o.repeats);
	cJSON_AddBoolToObject(proto, "scrape_metrics", o.metrics);
	cJSON_AddBoolToObject(proto, "unique_prompts", o.cfg.unique_prompts);
	char *proto_s = cJSON_PrintUnformatted(proto);
	cJSON_Delete(proto);
	struct bench *b = bench_create(&o.cfg, cmd, proto_s, err, sizeof err);
	free(proto_s);
	if (!b) {
		fprintf(stderr, "sixi-bench: %s\n", err);
		source_destroy(src);
		arrival_trace_finish(&trace);
		http_global_cleanup();
		return 1;
	}
	if (strcmp(cmd, "sweep") == 0) {
		struct sweep_params p = { list, n_list, o.repeats, &in };
		rc = workload_sweep(b, &p, stdout, err, sizeof err);
	} else if (strcmp(cmd, "replay") == 0) {
		o.replay.in = &in;
		rc = workload_replay(b, &o.replay, stdout, err, sizeof err);
	} else if (strcmp(cmd, "prefix") == 0) {
		o.prefix.in = &in;
		rc = workload_prefix(b, &o.prefix, stdout, err, sizeof err);
	} else if (strcmp(cmd, "search") == 0) {
		o.search.in = &in;
		o.search.repeats = o.repeats;
		o.search.arrival = arrival;
		rc = workload_search(b, &o.search, stdout, err, sizeof err);
	} else if (strcmp(cmd, "prefill") == 0) {
		struct prefill_params p = { list, n_list, o.repeats };
		rc = workload_prefill(b, &p, stdout, err, sizeof err);
	} else if (strcmp(cmd, "agents") == 0) {
		rc = workload_agents(b, &o.agents, stdout, err, sizeof err);
	} else {
		struct rate_params p = { o.rps, o.duration, arrival, o.trace ? &trace : NULL, &in };
		rc = workload_rate(b, &p, stdout, err, sizeof err);
	}
	source_destroy(src);
	arrival_trace_finish(&trace);
	int64_t run = bench_run_id(b);
	if (rc == 0 && bench_store_errors(b)) {
		rc = -EIO;
		snprintf(err, sizeof err, "%d measured row(s) could not be stored: the run is incomplete",
			 bench_store_errors(b));
	}
	bench_destroy(b, rc ? "failed" : "done");
	if (rc)
		fprintf(stderr, "sixi-bench: %s (run %lld; rows measured so far are kept in %s)\n",
			err[0] ? err : strerror(-rc), (long long)run, o.cfg.db_path);
	http_global_cleanup();
	return rc ? 1 : 0;
}
