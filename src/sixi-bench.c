/* sixi-bench — load generator for OpenAI-compatible endpoints.
 * The option table below names the field of struct bench_args (bench/config.h)
 * that each option sets; main wires src/bench together, the work is in the modules. */
#include "bench/arrival.h"
#include "core/err.h"
#include "bench/bench.h"
#include "bench/config.h"
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
	"  plan      size KV cache and state pools   --model CONFIG_OR_GGUF --context N --sequences S\n";


/* ---- the option table: one row per option, naming the field it sets ---- */

enum {
	SWEEP = 1u << 0, PREFILL = 1u << 1, AGENTS = 1u << 2, RATE = 1u << 3, REPLAY = 1u << 4, PREFIX = 1u << 5,
	SEARCH = 1u << 6, SELFTEST = 1u << 7, EMITTER = 1u << 8,
	ANY = 0, /* every command */
};
static const struct { const char *name; unsigned bit; } commands[] = {
	{ "sweep", SWEEP }, { "prefill", PREFILL }, { "agents", AGENTS }, { "rate", RATE }, { "replay", REPLAY },
	{ "prefix", PREFIX }, { "search", SEARCH }, { "selftest", SELFTEST }, { "emitter", EMITTER },
};

/* --extra: a JSON object merged into every request body. */
static int extra_json(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	cJSON *j = cJSON_Parse(v);
	bool ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	if (!ok) {
		err_set(err, errlen, "%s: '%s' is not a JSON object (e.g. '{\"top_k\": 20}')", opt, v);
		return -EINVAL;
	}
	*(const char **)field = v;
	return 0;
}

#define A struct bench_args
#define NOT_PREFILL (SWEEP | AGENTS | RATE | REPLAY | PREFIX | SEARCH | SELFTEST | EMITTER)
static const struct args_opt options[] = {
	ARGS_HEADING("endpoint and request options:"),
	ARGS_STRING_OPT("--url", "URL", A, cfg.url, ANY, "server base URL (http://127.0.0.1:8080); a trailing /v1 is accepted"),
	ARGS_STRING_OPT("--model", "NAME", A, cfg.model, ANY, "model name sent in requests"),
	ARGS_FLAG_OPT("--chat", A, cfg.api, OPENAI_CHAT, ANY, "use /v1/chat/completions (default /v1/completions)"),
	ARGS_INT_OPT("--max-tokens", "N", A, cfg.max_tokens, 1, 10000000, ANY, "tokens to generate per request (default 128)"),
	ARGS_INT_OPT("--prompt-tokens", "N", A, cfg.prompt_tokens, 1, 10000000, NOT_PREFILL,
		     "prompt length in tokens, calibrated from the server's usage (default 32)"),
	ARGS_DOUBLE_OPT("--temperature", "T", A, cfg.temperature, 0, 10, ANY, "sampling temperature (default 0.7)"),
	ARGS_FLAG_OPT("--no-ignore-eos", A, cfg.ignore_eos, false, ANY, "do not send ignore_eos"),
	ARGS_CALL_OPT("--extra", "JSON", extra_json, A, cfg.extra_json, ANY, "object merged into every request body"),
	ARGS_FLAG_OPT("--allow-cached", A, cfg.unique_prompts, false, ANY,
		      "do not invalidate points whose prompts hit a prefix cache"),
	ARGS_STRING_OPT("--prompts", "FILE|DIR", A, prompts, SWEEP | RATE | REPLAY | SEARCH | SELFTEST | EMITTER,
			"prompts from ShareGPT JSON, JSONL (prompt or messages records) or an eval\n"
			"dataset folder (implies --allow-cached: such prompts may share prefixes)"),
	ARGS_STRING_OPT("--input-len", "DIST", A, input_len, SWEEP | RATE | SEARCH,
			"synthetic prompt lengths: fixed:N, uniform:LO,HI, normal:MEAN,SD,\n"
			"lognormal:MEDIAN,SIGMA (tokens; seeded by --seed)"),
	ARGS_STRING_OPT("--output-len", "DIST", A, output_len, SWEEP | RATE | SEARCH | REPLAY,
			"max_tokens per request, the same forms"),
	ARGS_STRING_OPT("--slo", "SPEC", A, slo, SWEEP | RATE | SEARCH | REPLAY,
			"ttft=500ms,tpot=..,itl=50ms,e2e=10s per request; NAME_pP=V (ttft_p99=2s)\n"
			"over the level; units us, ms, s: goodput and attainment per level"),
	ARGS_FLAG_OPT("--metrics", A, metrics, true, SWEEP | RATE,
		      "sweep, rate: scrape the server's /metrics (vllm:, sglang:, llamacpp:, sixi_)\n"
		      "before and after each level; deltas and speculative acceptance stored"),
	ARGS_INT_OPT("--repeats", "N", A, repeats, 1, 1000, SWEEP | PREFILL | SEARCH,
		     "sweep: run every level N times (mean, t interval, CV across runs);\n"
		     "search: runs per probe; prefill: requests per length"),

	ARGS_HEADING("run options:"),
	ARGS_INT_OPT("--rounds", "N", A, cfg.rounds, 1, 1000000, ANY, "requests per stream at each level (default 2)"),
	ARGS_INT_OPT("--warmup", "N", A, cfg.warmup, 0, 1000, ANY, "warm-up requests, stored but excluded (default 2)"),
	ARGS_INT_OPT("--threads", "N", A, cfg.threads, 1, 1024, ANY, "client threads (default: cores)"),
	ARGS_INT_OPT("--seed", "N", A, cfg.seed, 0, 9.3e18, ANY, "prompt seed"),
	ARGS_TIME_OPT("--ready-timeout", "S", A, cfg.ready_timeout_ms, 0.001, 1e7, 1000, ANY,
		      "seconds to wait for a generation that returns tokens (default 120)"),
	ARGS_TIME_OPT("--connect-timeout", "S", A, cfg.connect_timeout_ms, 0.001, 1e7, 1000, ANY, "(default 10)"),
	ARGS_TIME_OPT("--first-byte-timeout", "S", A, cfg.first_byte_timeout_ms, 0.001, 1e7, 1000, ANY, "(default 600)"),
	ARGS_TIME_OPT("--stall-timeout", "S", A, cfg.stall_timeout_ms, 0.001, 1e7, 1000, ANY,
		      "a stream with no byte for S seconds ends as 'stall' (default 60)"),
	ARGS_TIME_OPT("--request-timeout", "S", A, cfg.total_timeout_ms, 0.001, 1e7, 1000, ANY,
		      "total per request (default none)"),
	ARGS_TIME_OPT("--run-timeout", "S", A, cfg.run_timeout_ms, 0.001, 1e7, 1000, ANY,
		      "bound on each level (default 3600)"),
	ARGS_STRING_OPT("--db", "PATH", A, cfg.db_path, ANY, "results database (default results/sixi.db)"),
	ARGS_STRING_OPT("--plot-dir", "DIR", A, cfg.plot_dir, ANY, "where plots go (default: plots/ beside the database)"),
	ARGS_ENUM_OPT("--http", "native|curl", NULL, A, http_engine, ANY,
		      "HTTP engine for http:// URLs (default native; https:// always uses curl)"),
	ARGS_FLAG_OPT("--no-plots", A, cfg.no_plots, true, ANY, "write no plots"),
	ARGS_FLAG_OPT("--json", A, cfg.json, true, ANY, "print the summary as JSON"),
	ARGS_FLAG_OPT("--quiet", A, cfg.quiet, true, ANY, "no progress lines"),
	ARGS_ENUM_OPT("--log-level", "error|warn|info|debug", NULL, A, log_level, ANY, "(default info)"),

	ARGS_HEADING("sweep:"),
	ARGS_LIST_OPT("--concurrency", "LIST", A, concurrency, 1, 100000, SWEEP, "streams per level (default 1,4,16,32)"),
	ARGS_HEADING("prefill:"),
	ARGS_LIST_OPT("--prompt-tokens", "LIST", A, prompt_lengths, 1, 10000000, PREFILL,
		      "prompt lengths, one level each (default 1000,4000,16000)"),
	ARGS_HEADING("agents:"),
	ARGS_INT_OPT("--agents", "N", A, agents.agents, 1, 4096, AGENTS, "agents (default 16)"),
	ARGS_INT_OPT("--doc-tokens", "N", A, agents.doc_tokens, 1, 10000000, AGENTS, "tokens of each document (default 17800)"),
	ARGS_INT_OPT("--followups", "N", A, agents.followups, 1, 100, AGENTS, "follow-up questions per agent (default 2)"),
	ARGS_INT_OPT("--followup-tokens", "N", A, agents.followup_tokens, 1, 10000000, AGENTS,
		     "tokens of each follow-up (default 64)"),
	ARGS_INT_OPT("--answer-tokens", "N", A, agents.answer_tokens, 1, 1000000, AGENTS,
		     "tokens generated per answer (default 16)"),
	ARGS_DOUBLE_OPT("--stagger", "S", A, agents.stagger_s, 0, 3600, AGENTS, "seconds between agent starts (default 0)"),
	ARGS_HEADING("rate:"),
	ARGS_DOUBLE_OPT("--rps", "R", A, rps, 0.001, 100000, RATE, "requests per second"),
	ARGS_DOUBLE_OPT("--duration", "S", A, duration_s, 0.001, 86400, RATE, "seconds of arrivals"),
	ARGS_STRING_OPT("--arrival", "KIND", A, arrival, RATE | SEARCH, "poisson (default), constant or gamma:B"),
	ARGS_STRING_OPT("--ramp", "SPEC", A, ramp, RATE, "linear:FROM,S or exp:FROM,S: the rate rises from FROM"),
	ARGS_STRING_OPT("--trace", "FILE", A, trace, RATE, "arrivals and lengths from a Mooncake JSONL or BurstGPT CSV"),
	ARGS_DOUBLE_OPT("--trace-speed", "X", A, trace_speed, 0.001, 1e6, RATE, "replay the trace X times faster (default 1)"),
	ARGS_HEADING("replay:"),
	ARGS_INT_OPT("--conversations", "C", A, replay.conversations, 1, 4096, REPLAY,
		     "conversations in flight (default 4)"),
	ARGS_INT_OPT("--max-conversations", "N", A, replay.limit, 1, 1000000, REPLAY, "conversations in all"),
	ARGS_INT_OPT("--max-turns", "K", A, replay.max_turns, 1, 1000, REPLAY, "turns per conversation (default 1000)"),
	ARGS_DOUBLE_OPT("--think-time", "S", A, replay.think_s, 0, 3600, REPLAY, "wait after a reply (default 0)"),
	ARGS_HEADING("prefix:"),
	ARGS_INT_OPT("--groups", "G", A, prefix.groups, 1, 4096, PREFIX, "groups, one shared prefix each (default 4)"),
	ARGS_INT_OPT("--prefix-tokens", "L", A, prefix.prefix_tokens, 1, 10000000, PREFIX, "tokens of each prefix (default 1000)"),
	ARGS_INT_OPT("--requests", "R", A, prefix.requests, 1, 100000, PREFIX, "requests per group (default 4)"),
	ARGS_INT_OPT("--question-tokens", "Q", A, prefix.question_tokens, 1, 10000000, PREFIX,
		     "tokens of each unique question (default 32)"),
	ARGS_HEADING("search:"),
	ARGS_ENUM_OPT("--mode", "rate|concurrency", NULL, A, search.concurrency, SEARCH, "what is searched (default rate)"),
	ARGS_DOUBLE_OPT("--lo", "X", A, search.lo, 0.001, 1e6, SEARCH, "bottom of the bracket"),
	ARGS_DOUBLE_OPT("--hi", "Y", A, search.hi, 0.001, 1e6, SEARCH, "top of the bracket (probed first)"),
	ARGS_DOUBLE_OPT("--target", "A", A, search.target, 0.001, 0.9999, SEARCH, "attainment to reach (default 0.9)"),
	ARGS_DOUBLE_OPT("--tolerance", "T", A, search.tolerance, 0.001, 1, SEARCH, "relative bracket width to stop at (default 0.05)"),
	ARGS_INT_OPT("--max-probes", "N", A, search.max_probes, 3, 64, SEARCH, "probes at most (default 12)"),
	ARGS_INT_OPT("--requests", "N", A, search.requests, 1, 100000, SEARCH, "requests per open-loop run (default 100)"),
	ARGS_HEADING("selftest and emitter:"),
	ARGS_LIST_OPT("--streams", "LIST", A, streams, 1, 100000, SELFTEST, "stream counts (default 1,64,1000)"),
	ARGS_INT_OPT("--events", "N", A, events, 1, 1000000, SELFTEST | EMITTER, "events per response (default 256)"),
	ARGS_INT_OPT("--tokens-per-event", "N", A, tokens_per_event, 1, 1000, SELFTEST | EMITTER,
		     "tokens in each event (default 1)"),
	ARGS_INT_OPT("--port", "N", A, port, 0, 65535, EMITTER, "emitter port, 0 picks a free one"),
	ARGS_STRING_OPT("--port-file", "F", A, port_file, EMITTER, "write the bound port to F"),
	ARGS_DOUBLE_OPT("--lifetime", "S", A, lifetime_s, 0.1, 86400, EMITTER, "seconds until it stops (default 3600)"),
	ARGS_TABLE_END,
};
#undef A
#undef NOT_PREFILL

static const struct args_spec spec = { .prog = "sixi-bench", .usage = usage_text, .opts = options };

static volatile sig_atomic_t stop_emitter;
static void on_signal(int sig) { (void)sig; stop_emitter = 1; }

static int cmd_emitter(const struct bench_args *o)
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
	int64_t end = clock_now_ns() + (int64_t)(o->lifetime_s * 1e9);
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

/* What the workload reads besides the options: prompt lengths, SLO, arrivals, a
 * prompt set, a trace. */
struct inputs {
	struct dist in_len, out_len;
	struct slo slo;
	struct arrival arrival;
	struct arrival_trace trace;
	struct source *src;
	struct workload_inputs in; /* points into the fields above */
};

static void inputs_finish(struct inputs *in)
{
	source_destroy(in->src);
	arrival_trace_finish(&in->trace);
}

/* Parses and loads every input the options name; 0, or -EINVAL with one message
 * (nothing is kept then). */
static int load_inputs(const struct bench_args *o, struct inputs *in, char *err, size_t errlen)
{
	memset(in, 0, sizeof *in);
	in->arrival = (struct arrival){ .kind = ARRIVAL_POISSON, .burstiness = 1 };
	if ((o->input_len && dist_parse("--input-len", o->input_len, &in->in_len, err, errlen)) ||
	    (o->output_len && dist_parse("--output-len", o->output_len, &in->out_len, err, errlen)) ||
	    (o->slo && slo_parse(o->slo, &in->slo, err, errlen)) ||
	    (o->arrival && arrival_parse(o->arrival, &in->arrival, err, errlen)) ||
	    (o->ramp && arrival_parse_ramp(o->ramp, &in->arrival, err, errlen)))
		return -EINVAL;
	in->in.input_len = o->input_len ? &in->in_len : NULL;
	in->in.output_len = o->output_len ? &in->out_len : NULL;
	in->in.slo = o->slo ? &in->slo : NULL;
	in->in.metrics = o->metrics;
	if (o->prompts) {
		in->src = source_load(o->prompts, err, errlen);
		if (!in->src)
			return -EINVAL;
		if (in->src->skipped)
			log_warn("%s: %zu record(s) without a user turn skipped", in->src->path, in->src->skipped);
		in->in.src = in->src;
	}
	if (o->trace && arrival_trace_load(o->trace, o->trace_speed, 1000000, &in->trace, err, errlen) != 0) {
		inputs_finish(in);
		return -EINVAL;
	}
	return 0;
}

static int run_workload(struct bench *b, unsigned bit, struct bench_args *o, struct inputs *in, char *err,
			size_t errlen)
{
	switch (bit) {
	case SWEEP: {
		struct sweep_params p = { o->concurrency.v, o->concurrency.n, o->repeats, &in->in };
		return workload_sweep(b, &p, stdout, err, errlen);
	}
	case PREFILL: {
		struct prefill_params p = { o->prompt_lengths.v, o->prompt_lengths.n, o->repeats };
		return workload_prefill(b, &p, stdout, err, errlen);
	}
	case AGENTS:
		return workload_agents(b, &o->agents, stdout, err, errlen);
	case REPLAY:
		o->replay.in = &in->in;
		return workload_replay(b, &o->replay, stdout, err, errlen);
	case PREFIX:
		o->prefix.in = &in->in;
		return workload_prefix(b, &o->prefix, stdout, err, errlen);
	case SEARCH:
		o->search.in = &in->in;
		o->search.repeats = o->repeats;
		o->search.arrival = in->arrival;
		return workload_search(b, &o->search, stdout, err, errlen);
	default: {
		struct rate_params p = { o->rps, o->duration_s, in->arrival, o->trace ? &in->trace : NULL, &in->in };
		return workload_rate(b, &p, stdout, err, errlen);
	}
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
		args_help(&spec, 0, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "plan") == 0)
		return plan_cmd_main(argc - 1, argv + 1);
	unsigned bit = 0;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(cmd, commands[i].name) == 0)
			bit = commands[i].bit;
	if (!bit) {
		fprintf(stderr, "sixi-bench: unknown command '%s' (sweep, prefill, agents, rate, replay, prefix, search, "
				"selftest, emitter, plan)\n",
			cmd);
		return 2;
	}
	struct bench_args o;
	bench_args_defaults(&o, cmd);
	struct args_spec cmd_spec = spec;
	cmd_spec.cmd = cmd;
	int rc = args_cli(&cmd_spec, bit, argc - 2, argv + 2, &o, NULL, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	if (o.log_level >= 0)
		log_set_level((enum log_level)o.log_level);
	char err[1024] = "";
	if (bench_args_check(&o, err, sizeof err) != 0)
		return fprintf(stderr, "sixi-bench: %s\n", err), 2;
	raise_fd_limit();
	signal(SIGPIPE, SIG_IGN);
	if (http_global_init() != 0) {
		fprintf(stderr, "sixi-bench: the HTTP client failed to initialise\n");
		return 1;
	}
	if (o.http_engine >= 0 && http_set_engine(o.http_engine ? "curl" : "native") != 0)
		return 2;
	if (bit == EMITTER) {
		rc = cmd_emitter(&o);
		http_global_cleanup();
		return rc;
	}
	if (bit == SELFTEST) {
		struct selftest_params sp = { .streams = o.streams.v, .n_streams = o.streams.n, .events = o.events,
					      .tokens_per_event = o.tokens_per_event, .url = o.cfg.url };
		rc = selftest_run(&o.cfg, &sp, stdout, err, sizeof err);
		if (rc)
			fprintf(stderr, "sixi-bench: selftest failed: %s\n", err);
		http_global_cleanup();
		return rc ? 1 : 0;
	}
	/* every input is read and checked before the run is recorded or a request sent */
	struct inputs in;
	if (load_inputs(&o, &in, err, sizeof err) != 0)
		return fprintf(stderr, "sixi-bench: %s\n", err), 2;
	char *frozen = bench_cfg_json(&o);
	struct bench *b = frozen ? bench_create(&o.cfg, cmd, frozen, err, sizeof err) : NULL;
	if (!frozen)
		err_set(err, sizeof err, "out of memory");
	free(frozen);
	if (!b) {
		fprintf(stderr, "sixi-bench: %s\n", err);
		inputs_finish(&in);
		http_global_cleanup();
		return 1;
	}
	rc = run_workload(b, bit, &o, &in, err, sizeof err);
	inputs_finish(&in);
	int64_t run = bench_run_id(b);
	if (rc == 0 && bench_store_errors(b)) {
		rc = -EIO;
		err_set(err, sizeof err, "%d measured row(s) could not be stored: the run is incomplete",
			 bench_store_errors(b));
	}
	bench_destroy(b, rc ? "failed" : "done");
	if (rc)
		fprintf(stderr, "sixi-bench: %s (run %lld; rows measured so far are kept in %s)\n",
			err[0] ? err : strerror(-rc), (long long)run, o.cfg.db_path);
	http_global_cleanup();
	return rc ? 1 : 0;
}
