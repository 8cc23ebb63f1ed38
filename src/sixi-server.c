/* sixi-server — the bundled OpenAI-compatible server. main() parses arguments,
 * sizes the configuration before anything is allocated (src/plan for a model,
 * the simulator's own memory model for --simulate), builds an engine (the real
 * model or the simulated device) and runs the server until SIGINT or SIGTERM. */
#include "core/args.h"
#include "core/err.h"
#include "core/log.h"
#include <cjson/cJSON.h>
#include "server/engine.h"
#include "server/server.h"
#include "server/real.h"
#include "server/sim.h"
#ifdef SIXI_HAVE_CUDA
#include "cuda/engine_cuda.h"
#endif
#include "gguf/gguf.h"
#include "model/kernels.h"
#include "model/tiny.h"
#include "text/tok_cmd.h"
#include "plan/plan.h"
#include "plan/plan_gguf.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* ---- the option table: one row per option, naming the field it sets ---- */

struct server_opts {
	struct server_config cfg;
	const char *simulate, *model, *port_file, *pid_file, *device, *draft;
	double time_scale;
	int64_t parallel, context, threads, draft_max; /* 0: the engine's default */
	uint64_t mem_limit;                            /* 0: the default limit */
	bool json;
	int spec;                                      /* -1: not given; else an index into "ngram|off" */
	int rollback;                                  /* an index into "log|snapshot" */
	int log_level;                                 /* -1: unchanged */
};
static const char *const rollback_names[] = { "log", "snapshot" };

#define O struct server_opts
static const struct args_opt options[] = {
	ARGS_HEADING("Engine:"),
	ARGS_STRING_OPT("--simulate", "PRESET|FILE", O, simulate, 0,
			"simulated device: a preset (sixi-server --help lists them), or a JSON file of fields\n"
			"(base, weight_gb, bandwidth_gbps, decode_row_ms, prefill_row_ms,\n"
			"host_row_ms, context, slots, memory_gb, kv_kib_per_token,\n"
			"state_mib_per_seq, activation_gb, script: texts the samples\n"
			"produce, sample i of a vote following script[i])"),
	ARGS_DOUBLE_OPT("--time-scale", "X", O, time_scale, 0.001, 1e6, 0, "run simulated time X times faster (default 1)"),
	ARGS_STRING_OPT("--model", "FILE.gguf", O, model, 0, "the real model"),
	ARGS_INT_OPT("--parallel", "N", O, parallel, 1, 4096, 0, "sequences resident at once (default: 32 simulated, 8 real)"),
	ARGS_INT_OPT("--context", "N", O, context, 16, 1 << 22, 0,
		     "positions per sequence (default: 32768 simulated; real: the\nmodel's, at most 4096)"),
	ARGS_BYTES_OPT("--mem-limit", "BYTES", O, mem_limit, 0,
		       "refuse configurations needing more (default: simulated device\n"
		       "memory - 5%; real: available memory - 10%)"),
	ARGS_INT_OPT("--threads", "N", O, threads, 1, 1024, 0, "CPU threads for the real model"),
	ARGS_STRING_OPT("--device", "cpu|cuda[:N]", O, device, 0,
			"where the real model runs (default cpu); cuda: GPU N (default 0),\n"
			"sized against its free memory; rollback by log, no --draft"),
	ARGS_STRING_OPT("--chat-template", "FILE", O, cfg.chat_template_path, 0,
			"Jinja chat template (.jinja or tokenizer_config.json) instead of\n"
			"the model's (default: the GGUF's tokenizer.chat_template, else ChatML)"),
	ARGS_HEADING("Scheduler:"),
	ARGS_ENUM_OPT("--straggler-wait", "off|on", NULL, O, cfg.sched.straggler_wait, 0,
		      "wait for sequences still being sampled before a pass (default on)"),
	ARGS_DOUBLE_OPT("--straggler-frac", "F", O, cfg.sched.straggler_frac, 0, 10, 0,
			"wait this fraction of the last pass time (default 0.2)"),
	ARGS_TIME_OPT("--straggler-min-ms", "MS", O, cfg.sched.straggler_min_ns, 0, 10000, 1e6, 0, "clamp (default 4)"),
	ARGS_TIME_OPT("--straggler-max-ms", "MS", O, cfg.sched.straggler_max_ns, 0, 10000, 1e6, 0, "clamp (default 40)"),
	ARGS_INT_OPT("--prefill-chunk", "N", O, cfg.sched.prefill_chunk, 1, 1 << 20, 0,
		     "most prompt rows of a pass, taken while nothing else waits\n(default 512)"),
	ARGS_TIME_OPT("--prefill-budget-ms", "MS", O, cfg.sched.prefill_budget_ns, 0, 600000, 1e6, 0,
		      "device time of a pass while a short prompt or a new turn waits,\n"
		      "8x while only decoding streams do (default 0: six predicted\n"
		      "decode steps, from the measured pass costs)"),
	ARGS_FLAG_OPT("--no-interleave", O, cfg.sched.interleave, false, 0,
		      "the old way, for comparison: prompts prefilled one at a time in\n"
		      "arrival order (a new request waits for every prompt ahead of it),\n"
		      "prompt chunks and decode rows in separate passes"),
	ARGS_FLAG_OPT("--prefix-cache", O, cfg.sched.prefix_cache, true, 0,
		      "reuse a finished sequence's state for a prompt that extends it"),
	ARGS_HEADING("Speculative decoding (real model; sampled requests verify by exact speculative sampling):"),
	ARGS_ENUM_OPT("--spec", "ngram|off", "drafter", O, spec, 0,
		      "ngram: draft by prompt lookup (n-gram of the sequence's own history)"),
	ARGS_INT_OPT("--draft-max", "N", O, draft_max, 1, SCHED_SPEC_MAX, 0, "drafted tokens per step, 1..32 (default 8)"),
	ARGS_ENUM_OPT("--rollback", "log|snapshot", NULL, O, rollback, 0,
		      "how rejected rows are undone (default log; snapshot keeps a full\n"
		      "state copy per row, the baseline)"),
	ARGS_STRING_OPT("--draft", "FILE.gguf", O, draft, 0,
			"draft with this model (same vocabulary as --model) instead of\n"
			"prompt lookup; implies --spec"),
	ARGS_HEADING("HTTP:"),
	ARGS_STRING_OPT("--host", "ADDR", O, cfg.http.host, 0, "bind address (default 127.0.0.1)"),
	ARGS_INT_OPT("--port", "N", O, cfg.http.port, 0, 65535, 0, "port, 0 picks a free one (default 8080)"),
	ARGS_STRING_OPT("--port-file", "FILE", O, port_file, 0, "write the bound port to FILE"),
	ARGS_STRING_OPT("--pid-file", "FILE", O, pid_file, 0, "write the process id to FILE (removed at exit)"),
	ARGS_BYTES_OPT("--max-body", "BYTES", O, cfg.http.max_body_bytes, 0, "largest request body (default 8MiB)"),
	ARGS_TIME_OPT("--header-timeout", "S", O, cfg.http.header_timeout_ns, 0.01, 3600, 1e9, 0,
		      "seconds for a request's header block (default 10)"),
	ARGS_TIME_OPT("--idle-timeout", "S", O, cfg.http.idle_timeout_ns, 0.01, 86400, 1e9, 0,
		      "seconds an idle keep-alive connection is kept (default 120)"),
	ARGS_INT_OPT("--max-conns", "N", O, cfg.http.max_conns, 1, 1000000, 0, "open connections (default 4096)"),
	ARGS_FLAG_OPT("--json", O, json, true, 0,
		      "print one JSON line on stdout once listening (port, pid, model,\nparallel, context)"),
	ARGS_ENUM_OPT("--log-level", "error|warn|info|debug", NULL, O, log_level, 0, "(default info)"),
	ARGS_TABLE_END,
};
#undef O

static const char usage_text[] =
	"usage: sixi-server --simulate PRESET|FILE.json [options]\n"
	"       sixi-server --model FILE.gguf [options]\n"
	"       sixi-server --write-tiny PATH   (writes the embedded tiny model as GGUF)\n"
	"       sixi-server --write-tiny PATH --moe [--type TYPE]   (its qwen35moe variant, matrices as TYPE)\n"
	"       sixi-server --write-tiny PATH --from DIR [--type TYPE]   (the trained model in DIR, e.g.\n"
	"                          src/model/trained/sixi-small, as GGUF; matrices BF16 by default)\n"
	"       sixi-server --tokenize FILE TEXT | --detokenize FILE ID...\n";
static const struct args_spec spec = { .prog = "sixi-server", .usage = usage_text, .opts = options };

/* --write-tiny PATH [--moe [--type TYPE]] */
struct tiny_opts {
	bool moe;
	uint32_t type; /* UINT32_MAX: not given */
	const char *from;
};

static int weight_type(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	for (uint32_t t = 0; t < 64; t++)
		if (kern_type_supported(t) && strcmp(gguf_type_name(t), v) == 0) {
			*(uint32_t *)field = t;
			return 0;
		}
	err_set(err, errlen, "%s: unknown weight type '%s' (use F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, "
		 "Q5_K, Q6_K, IQ4_NL or IQ4_XS)", opt, v);
	return -EINVAL;
}

static const struct args_opt tiny_options[] = {
	ARGS_FLAG_OPT("--moe", struct tiny_opts, moe, true, 0, "the qwen35moe variant"),
	ARGS_CALL_OPT("--type", "TYPE", weight_type, struct tiny_opts, type, 0,
		      "its matrices as TYPE (default F32; with --from BF16)"),
	ARGS_STRING_OPT("--from", "DIR", struct tiny_opts, from, 0,
			"the trained model in DIR (config.json + model.safetensors), e.g. src/model/trained/sixi-small"),
	ARGS_TABLE_END,
};
static const struct args_spec tiny_spec = { .prog = "sixi-server --write-tiny",
					    .usage = "usage: sixi-server --write-tiny PATH [--moe [--type TYPE] | --from DIR [--type TYPE]]\n",
					    .opts = tiny_options, .max_pos = 1 };

static int write_tiny(int argc, char **argv)
{
	struct tiny_opts t = { .type = UINT32_MAX };
	const char *path[1];
	int n = 0, rc = args_cli(&tiny_spec, 0, argc, argv, &t, path, &n);
	if (rc != ARGS_CONTINUE)
		return rc;
	if (n != 1 || (t.type != UINT32_MAX && !t.moe && !t.from) || (t.moe && t.from)) {
		fprintf(stderr, "sixi-server: usage: sixi-server --write-tiny PATH [--moe [--type TYPE] | --from DIR "
			"[--type TYPE]]\n");
		return 2;
	}
	char err[1024];
	if (t.from) {
		uint32_t type = t.type != UINT32_MAX ? t.type : GGUF_TENSOR_BF16;
		if (type != GGUF_TENSOR_F32 && type != GGUF_TENSOR_F16 && type != GGUF_TENSOR_BF16 && type != GGUF_TENSOR_Q8_0) {
			fprintf(stderr, "sixi-server: --write-tiny --from: --type %s: the import writes F32, F16, BF16 or Q8_0\n",
				gguf_type_name(type));
			return 2;
		}
		if (model_write_trained(t.from, path[0], type, err, sizeof err) != 0) {
			fprintf(stderr, "sixi-server: --write-tiny --from: %s\n", err);
			return 1;
		}
		fprintf(stderr, "sixi-server: wrote the trained model of %s to %s\n", t.from, path[0]);
		return 0;
	}
	if ((t.moe ? model_write_tiny_moe(path[0], t.type != UINT32_MAX ? t.type : GGUF_TENSOR_F32, err, sizeof err) : model_write_tiny(path[0], err, sizeof err)) != 0) {
		fprintf(stderr, "sixi-server: --write-tiny: %s\n", err);
		return 1;
	}
	fprintf(stderr, "sixi-server: wrote the tiny %smodel to %s\n", t.moe ? "qwen35moe " : "", path[0]);
	return 0;
}

static int write_file_atomic(const char *path, const char *text)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	int ok = fputs(text, f) >= 0;
	ok &= fclose(f) == 0;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- sizing, before anything is allocated ---- */

/* Reads a preset or file into sim_cfg, applies the flags, prints the breakdown;
 * -ENOMEM (refused, with what fits) or -EINVAL. */
static int open_sim(const char *what, double time_scale, int64_t parallel, int64_t context, uint64_t mem_limit,
		    struct sim_config *out)
{
	struct sim_config sim_cfg;
	char err[1024];
	if (sim_config_preset(what, &sim_cfg) != 0) {
		if (access(what, R_OK) != 0) {
			fprintf(stderr, "sixi-server: --simulate %s: neither a preset (%s) nor a readable file\n", what,
				sim_preset_names());
			return -EINVAL;
		}
		if (sim_config_load(what, &sim_cfg, err, sizeof err) != 0) {
			fprintf(stderr, "sixi-server: --simulate: %s\n", err);
			return -EINVAL;
		}
	}
	sim_cfg.time_scale = time_scale;
	if (parallel)
		sim_cfg.n_slots = (int32_t)parallel;
	if (context)
		sim_cfg.n_ctx = (int32_t)context;
	double limit = mem_limit ? (double)mem_limit : sim_cfg.mem_bytes * 0.95;
	struct sim_size sz = sim_size_of(&sim_cfg, sim_cfg.n_slots, sim_cfg.n_ctx);
	fprintf(stderr,
		"sixi-server: %s: %d sequences x %d context: weights %.2f GB + KV %.2f GB + state %.2f GB + "
		"activations %.2f GB = %.2f GB of %.2f GB allowed\n",
		sim_cfg.name, sim_cfg.n_slots, sim_cfg.n_ctx, sz.weights / 1e9, sz.kv / 1e9, sz.state / 1e9,
		sz.activations / 1e9, sz.total / 1e9, limit / 1e9);
	if (sim_fit_check(&sim_cfg, limit, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: refusing to start: %s\n", err);
		sim_config_finish(&sim_cfg);
		return -ENOMEM;
	}
	*out = sim_cfg;
	return 0;
}

/* MemAvailable from /proc/meminfo in bytes, 0 if unknown. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb * 1024;
}

/* Sizes a model configuration with src/plan; fills defaults for parallel and context.
 * Speculative decoding keeps log_rows rows per sequence (log) or snapshot_rows states (ring). */
static int size_model(const char *path, int64_t *parallel, int64_t *context, uint64_t mem_limit, int32_t chunk,
		      uint32_t log_rows, uint32_t snapshot_rows)
{
	char err[1024];
	struct plan_model pm;
	plan_model_init(&pm);
	if (plan_model_from_gguf_file(path, &pm, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: --model %s: %s\n", path, err);
		return -EINVAL;
	}
	if (!*parallel)
		*parallel = 8;
	if (!*context)
		*context = pm.max_context_tokens && pm.max_context_tokens < 4096 ? (int64_t)pm.max_context_tokens : 4096;
	uint64_t limit = mem_limit ? mem_limit : mem_available() / 10 * 9;
	struct plan_breakdown b;
	uint32_t rows = (uint32_t)chunk + (uint32_t)*parallel;
	struct plan_workload sw;
	plan_workload_server(&sw, *context, *parallel, log_rows, rows);
	sw.draft_tokens = snapshot_rows;
	if (plan_compute(&pm, &sw, &b, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: sizing %s: %s\n", path, err);
		return -EINVAL;
	}
	char t[8][32];
	fprintf(stderr,
		"sixi-server: %s: %lld sequences x %lld context: weights %s + KV %s + state %s + conv %s + "
		"activations %s%s%s = %s of %s allowed\n",
		path, (long long)*parallel, (long long)*context, plan_format_bytes(b.weights_bytes, t[0], 32),
		plan_format_bytes(b.kv_bytes, t[1], 32), plan_format_bytes(b.ssm_bytes, t[2], 32),
		plan_format_bytes(b.conv_bytes, t[3], 32), plan_format_bytes(b.activation_bytes, t[4], 32),
		log_rows || snapshot_rows ? " + rollback " : "",
		log_rows || snapshot_rows ? plan_format_bytes(b.log_bytes + b.draft_state_bytes, t[6], 32) : "",
		plan_format_bytes(b.total_bytes, t[5], 32), limit ? plan_format_bytes(limit, t[7], 32) : "(unknown)");
	if (limit && b.total_bytes > limit) {
		int64_t ctx_fit = plan_fit_context(&pm, &sw, limit, *context);
		int64_t seq_fit = plan_fit_sequences(&pm, &sw, limit, *parallel);
		fprintf(stderr,
			"sixi-server: refusing to start: %lld sequences x %lld context need %s but the limit is %s; "
			"configurations that fit: --parallel %lld --context %lld, or --parallel %lld --context %lld\n",
			(long long)*parallel, (long long)*context, t[5], plan_format_bytes(limit, t[1], 32),
			(long long)*parallel, (long long)ctx_fit, (long long)seq_fit, (long long)*context);
		return -ENOMEM;
	}
	return 0;
}

/* --device: "cpu" leaves *dev at -1; "cuda[:N]" checks that this build and machine have the GPU,
 * sets *dev, and makes the device's free memory the sizing limit unless --mem-limit gave one.
 * 0, or -EINVAL after one message. */
static int open_device(const char *device, const char *model, const char *draft, int rb_mode, int *dev,
		       uint64_t *mem_limit)
{
	if (strcmp(device, "cpu") == 0)
		return 0;
	if (strncmp(device, "cuda", 4) != 0 || (device[4] != 0 && device[4] != ':')) {
		fprintf(stderr, "sixi-server: --device %s: use cpu, cuda or cuda:N\n", device);
		return -EINVAL;
	}
	char *end = NULL;
	long n = device[4] == ':' ? strtol(device + 5, &end, 10) : 0;
	if (device[4] == ':' && (end == device + 5 || *end || n < 0 || n > 1023)) {
		fprintf(stderr, "sixi-server: --device %s: N in cuda:N is a device number (0, 1, ...)\n", device);
		return -EINVAL;
	}
	if (!model) {
		fprintf(stderr, "sixi-server: --device %s needs --model (the simulated device runs on no GPU)\n", device);
		return -EINVAL;
	}
	if (draft || rb_mode == 2) {
		fprintf(stderr, "sixi-server: --device %s: the CUDA engine rolls back by log and drafts by n-gram only; "
			"drop %s\n", device, draft ? "--draft" : "--rollback snapshot");
		return -EINVAL;
	}
#ifdef SIXI_HAVE_CUDA
	char name[256], err[512];
	size_t free_b = 0, total_b = 0;
	if (cuda_engine_device((int)n, name, sizeof name, &free_b, &total_b, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: --device %s: %s; use --device cpu\n", device, err);
		return -EINVAL;
	}
	log_info("device cuda:%ld: %s, %.1f of %.1f GiB free", n, name, (double)free_b / 1073741824.0,
		 (double)total_b / 1073741824.0);
	if (!*mem_limit)
		*mem_limit = free_b / 10 * 9;
	*dev = (int)n;
	return 0;
#else
	(void)mem_limit;
	(void)dev;
	fprintf(stderr, "sixi-server: --device %s: this build has no CUDA engine (nvcc was not found when it was "
		"configured, or -Dcuda=disabled); install the CUDA toolkit, `meson setup --reconfigure -Dcuda=enabled`, "
		"rebuild, or use --device cpu\n", device);
	return -EINVAL;
#endif
}

/* ---- from the options to a running server ---- */

/* What needs several options together; the rollback mode (0 none, 1 log, 2 snapshot),
 * or -1 after one message. */
static int check_opts(struct server_opts *o)
{
	const char *why = !o->simulate && !o->model ? "say what to serve: --simulate thor (no model needed) or --model FILE.gguf"
			  : o->simulate && o->model ? "--simulate and --model exclude each other; pick one"
			  : o->draft && o->spec == 1 ? "--draft and --spec off exclude each other"
			  : (o->spec == 0 || o->draft) && !o->model
				  ? "--spec needs --model (the simulated device keeps no state to roll back)"
				  : NULL;
	if (why) {
		fprintf(stderr, "sixi-server: %s\n", why);
		return -1;
	}
	if (o->spec != 0 && !o->draft)
		return 0;
	o->cfg.sched.spec_draft_max = (int32_t)o->draft_max;
	return o->rollback + 1;
}

/* The engine the options ask for, sized to parallel x context; NULL after a message.
 * sim_cfg (the simulated device, --simulate) is finished here. */
static struct engine *open_engine(const struct server_opts *o, int rb_mode, int cuda_dev, int64_t parallel,
				  int64_t context, struct sim_config *sim_cfg)
{
	char err[1024];
	struct engine *e = NULL;
	int draft_max = (int)o->draft_max;
	if (o->model && cuda_dev >= 0) {
#ifdef SIXI_HAVE_CUDA
		e = cuda_engine_open(o->model, cuda_dev, (int)parallel, (int)context, rb_mode ? draft_max + 1 : 0, err,
				     sizeof err);
		if (!e) {
			fprintf(stderr, "sixi-server: --device cuda:%d: %s\n", cuda_dev, err);
			return NULL;
		}
		if (rb_mode)
			log_info("speculative decoding: n-gram drafts of up to %d tokens, rollback by log on the GPU: %.1f KiB "
				 "for %d slots",
				 draft_max, (double)e->mem_rollback / 1024.0, (int)parallel);
		log_info("GPU state memory: KV cache %.1f MiB, GDN state %.1f MiB, conv windows %.1f MiB, rollback %.1f MiB",
			 (double)e->mem_kv / 1048576.0, (double)e->mem_gdn_state / 1048576.0, (double)e->mem_conv / 1048576.0,
			 (double)e->mem_rollback / 1048576.0);
#endif
		return e;
	}
	if (!o->model) {
		e = sim_engine_create(sim_cfg);
		sim_config_finish(sim_cfg);
		if (!e)
			fprintf(stderr, "sixi-server: cannot create the simulated engine: %s\n", strerror(errno));
		return e;
	}
	e = real_engine_open(o->model, (int)parallel, (int)context, (int)o->threads, err, sizeof err);
	if (!e) {
		fprintf(stderr, "sixi-server: %s\n", err);
		return NULL;
	}
	size_t rb_bytes = 0;
	/* a step verifies the last token and its drafts: draft_max + 1 rows */
	if (rb_mode && real_engine_set_rollback(e, rb_mode, draft_max + 1, &rb_bytes, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: --spec: %s\n", err);
		engine_destroy(e);
		return NULL;
	}
	if (o->draft && real_engine_set_draft(e, o->draft, draft_max, (int)o->threads, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: --draft %s\n", err);
		engine_destroy(e);
		return NULL;
	}
	if (rb_mode)
		log_info("speculative decoding: %s drafts of up to %d tokens, rollback by %s: %.1f KiB for %d slots",
			 o->draft ? "draft-model" : "n-gram", draft_max, rollback_names[o->rollback],
			 (double)rb_bytes / 1024.0, (int)parallel);
	log_info("state memory: KV cache %.1f MiB, GDN state %.1f MiB, conv windows %.1f MiB, rollback %.1f MiB "
		 "(a snapshot ring of the same depth: %.1f MiB)",
		 (double)e->mem_kv / 1048576.0, (double)e->mem_gdn_state / 1048576.0, (double)e->mem_conv / 1048576.0,
		 (double)e->mem_rollback / 1048576.0, (double)e->mem_snapshot_ring / 1048576.0);
	return e;
}

/* Writes --pid-file (*wrote_pid) and --port-file, says where it listens, and with
 * --json prints the line a harness reads. 0, or -1 after a message. */
static int announce(const struct server_opts *o, struct server *srv, const struct engine *e, bool *wrote_pid)
{
	char line[64];
	if (o->pid_file) {
		snprintf(line, sizeof line, "%ld\n", (long)getpid());
		if (write_file_atomic(o->pid_file, line) != 0) {
			fprintf(stderr, "sixi-server: cannot write --pid-file %s\n", o->pid_file);
			return -1;
		}
		*wrote_pid = true;
	}
	if (o->port_file) {
		snprintf(line, sizeof line, "%d\n", server_port(srv));
		if (write_file_atomic(o->port_file, line) != 0) {
			fprintf(stderr, "sixi-server: cannot write --port-file %s\n", o->port_file);
			return -1;
		}
	}
	fprintf(stderr, "listening on %s:%d\n", o->cfg.http.host, server_port(srv));
	if (o->json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "host", o->cfg.http.host);
		cJSON_AddNumberToObject(j, "port", server_port(srv));
		cJSON_AddNumberToObject(j, "pid", (double)getpid());
		cJSON_AddStringToObject(j, "model", e->name);
		cJSON_AddNumberToObject(j, "parallel", e->n_slots);
		cJSON_AddNumberToObject(j, "context", e->n_ctx);
		char *text = cJSON_PrintUnformatted(j);
		if (text)
			printf("%s\n", text);
		fflush(stdout);
		free(text);
		cJSON_Delete(j);
	}
	return 0;
}

int main(int argc, char **argv)
{
	log_set_program("sixi-server");
	if (argc > 1 && (strcmp(argv[1], "--tokenize") == 0 || strcmp(argv[1], "--detokenize") == 0))
		return tok_cmd_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--write-tiny") == 0)
		return write_tiny(argc - 2, argv + 2);
	struct server_opts o = { .device = "cpu", .time_scale = 1, .draft_max = 8, .spec = -1, .log_level = -1 };
	server_config_default(&o.cfg);
	char presets[512];
	snprintf(presets, sizeof presets, "\nPresets of --simulate: %s\n", sim_preset_names());
	struct args_spec s = spec;
	s.epilog = presets;
	int rc = args_cli(&s, 0, argc - 1, argv + 1, &o, NULL, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	if (o.log_level >= 0)
		log_set_level((enum log_level)o.log_level);
	int rb_mode = check_opts(&o);
	if (rb_mode < 0)
		return 2;
	/* Signals become events on the loop: block them in every thread first, before the CUDA
	 * runtime (open_device) starts threads of its own. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	int cuda_dev = -1;
	uint64_t mem_limit = o.mem_limit;
	if (open_device(o.device, o.model, o.draft, rb_mode, &cuda_dev, &mem_limit) != 0)
		return 2;
	/* sizing, before anything is allocated */
	int64_t parallel = o.parallel, context = o.context;
	struct sim_config sim_cfg = { .n_script = 0 };
	uint32_t spec_rows = rb_mode ? (uint32_t)o.draft_max + 1 : 0;
	int sized = o.model ? size_model(o.model, &parallel, &context, mem_limit, o.cfg.sched.prefill_chunk,
					 rb_mode == 1 ? spec_rows : 0, rb_mode == 2 ? spec_rows : 0)
			    : open_sim(o.simulate, o.time_scale, parallel, context, mem_limit, &sim_cfg);
	if (sized != 0)
		return sized == -ENOMEM ? 3 : 2;
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "sixi-server: signalfd: %s\n", strerror(errno));
		sim_config_finish(&sim_cfg);
		return 1;
	}
	raise_fd_limit();
	char err[1024];
	bool wrote_pid = false;
	struct server *srv = NULL;
	struct engine *e = open_engine(&o, rb_mode, cuda_dev, parallel, context, &sim_cfg);
	rc = 1;
	if (e && !(srv = server_create(e, &o.cfg, err, sizeof err)))
		fprintf(stderr, "sixi-server: %s\n", err);
	if (srv && announce(&o, srv, e, &wrote_pid) == 0) {
		int r = server_run(srv, sfd);
		if (r != 0)
			fprintf(stderr, "sixi-server: event loop failed: %s\n", strerror(-r));
		else
			log_info("stopped cleanly");
		rc = r != 0;
	}
	server_destroy(srv);
	engine_destroy(e);
	if (wrote_pid)
		unlink(o.pid_file);
	close(sfd);
	return rc;
}
