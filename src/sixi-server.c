/* sixi-server — the bundled OpenAI-compatible server. main() parses arguments,
 * sizes the configuration before anything is allocated (src/plan for a model,
 * the simulator's own memory model for --simulate), builds an engine (the real
 * model or the simulated device) and runs the server until SIGINT or SIGTERM. */
#include "core/args.h"
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sixi-server --simulate PRESET|FILE.json [options]\n"
		"       sixi-server --model FILE.gguf [options]\n"
		"       sixi-server --write-tiny PATH   (writes the embedded tiny model as GGUF)\n"
		"       sixi-server --write-tiny PATH --moe [--type TYPE]   (its qwen35moe variant, matrices as TYPE)\n"
		"       sixi-server --tokenize FILE TEXT | --detokenize FILE ID...\n"
		"\n"
		"Engine:\n"
		"  --simulate PRESET|FILE  simulated device: presets %s, or a JSON file of fields\n"
		"                          (base, weight_gb, bandwidth_gbps, decode_row_ms, prefill_row_ms,\n"
		"                          host_row_ms, context, slots, memory_gb, kv_kib_per_token,\n"
		"                          state_mib_per_seq, activation_gb, script: texts the samples\n"
		"                          produce, sample i of a vote following script[i])\n"
		"  --time-scale X          run simulated time X times faster (default 1)\n"
		"  --model FILE.gguf       the real model\n"
		"  --parallel N            sequences resident at once (default: 32 simulated, 8 real)\n"
		"  --context N             positions per sequence (default: 32768 simulated; real: the\n"
		"                          model's, at most 4096)\n"
		"  --mem-limit BYTES       refuse configurations needing more (default: simulated device\n"
		"                          memory - 5%%; real: available memory - 10%%)\n"
		"  --threads N             CPU threads for the real model\n"
		"  --device cpu|cuda[:N]   where the real model runs (default cpu); cuda: GPU N (default 0),\n"
		"                          sized against its free memory; rollback by log, no --draft\n"
		"  --chat-template FILE    Jinja chat template (.jinja or tokenizer_config.json) instead of\n"
		"                          the model's (default: the GGUF's tokenizer.chat_template, else ChatML)\n"
		"Scheduler:\n"
		"  --straggler-wait on|off wait for sequences still being sampled before a pass (default on)\n"
		"  --straggler-frac F      wait this fraction of the last pass time (default 0.2)\n"
		"  --straggler-min-ms MS   clamp (default 4)\n"
		"  --straggler-max-ms MS   clamp (default 40)\n"
		"  --prefill-chunk N       most prompt rows of a pass, taken while nothing else waits\n"
		"                          (default 512)\n"
		"  --prefill-budget-ms MS  device time of a pass while a short prompt or a new turn waits,\n"
		"                          8x while only decoding streams do (default 0: six predicted\n"
		"                          decode steps, from the measured pass costs)\n"
		"  --no-interleave         the old way, for comparison: prompts prefilled one at a time in\n"
		"                          arrival order (a new request waits for every prompt ahead of it),\n"
		"                          prompt chunks and decode rows in separate passes\n"
		"  --prefix-cache          reuse a finished sequence's state for a prompt that extends it\n"
		"Speculative decoding (real model; sampled requests verify by exact speculative sampling):\n"
		"  --spec ngram            draft by prompt lookup (n-gram of the sequence's own history)\n"
		"  --draft-max N           drafted tokens per step, 1..32 (default 8)\n"
		"  --rollback log|snapshot how rejected rows are undone (default log; snapshot keeps a full\n"
		"                          state copy per row, the baseline)\n"
		"  --draft FILE.gguf       draft with this model (same vocabulary as --model) instead of\n"
		"                          prompt lookup; implies --spec\n"
		"HTTP:\n"
		"  --host ADDR             bind address (default 127.0.0.1)\n"
		"  --port N                port, 0 picks a free one (default 8080)\n"
		"  --port-file FILE        write the bound port to FILE\n"
		"  --pid-file FILE         write the process id to FILE (removed at exit)\n"
		"  --max-body BYTES        largest request body (default 8MiB)\n"
		"  --header-timeout S      seconds for a request's header block (default 10)\n"
		"  --idle-timeout S        seconds an idle keep-alive connection is kept (default 120)\n"
		"  --max-conns N           open connections (default 4096)\n"
		"  --json                  print one JSON line on stdout once listening (port, pid, model,\n"
		"                          parallel, context)\n"
		"  --log-level LEVEL       error|warn|info|debug (default info)\n",
		sim_preset_names());
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

int main(int argc, char **argv)
{
	log_set_program("sixi-server");
	if (argc > 1 && (strcmp(argv[1], "--tokenize") == 0 || strcmp(argv[1], "--detokenize") == 0))
		return tok_cmd_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--write-tiny") == 0) {
		char werr[1024];
		int moe = 0, bad = argc < 3;
		uint32_t type = GGUF_TENSOR_F32;
		for (int i = 3; i < argc && !bad; i++) {
			if (strcmp(argv[i], "--moe") == 0) {
				moe = 1;
			} else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
				const char *tn = argv[++i];
				type = UINT32_MAX;
				for (uint32_t t = 0; t < 64 && type == UINT32_MAX; t++)
					if (kern_type_supported(t) && strcmp(gguf_type_name(t), tn) == 0)
						type = t;
				if (type == UINT32_MAX) {
					fprintf(stderr, "sixi-server: --write-tiny: --type %s is not a weight type sixi writes "
						"(F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)\n", tn);
					return 2;
				}
			} else {
				bad = 1;
			}
		}
		if (bad || (type != GGUF_TENSOR_F32 && !moe)) {
			fprintf(stderr, "sixi-server: usage: sixi-server --write-tiny PATH [--moe [--type TYPE]]\n");
			return 2;
		}
		if ((moe ? model_write_tiny_moe(argv[2], type, werr, sizeof werr) : model_write_tiny(argv[2], werr, sizeof werr)) !=
		    0) {
			fprintf(stderr, "sixi-server: --write-tiny: %s\n", werr);
			return 1;
		}
		fprintf(stderr, "sixi-server: wrote the tiny %smodel to %s\n", moe ? "qwen35moe " : "", argv[2]);
		return 0;
	}
	struct server_config cfg;
	server_config_default(&cfg);
	const char *simulate = NULL, *model = NULL, *port_file = NULL, *pid_file = NULL;
	double time_scale = 1, strag_min_ms = 4, strag_max_ms = 40;
	int64_t parallel = 0, context = 0, threads = 0;
	uint64_t mem_limit = 0;
	bool json = false;
	const char *spec = NULL, *rollback = "log", *draft = NULL, *device = "cpu";
	int64_t draft_max = 8;
	char err[1024];
	int rc = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int64_t iv;
		double dv;
		uint64_t bv;
		int r = 0;
#define NEEDV()                                                                                 \
	do {                                                                                    \
		if (!v) {                                                                       \
			fprintf(stderr, "sixi-server: %s needs a value (see --help)\n", a);   \
			return 2;                                                               \
		}                                                                               \
		i++;                                                                            \
	} while (0)
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--simulate") == 0) {
			NEEDV();
			simulate = v;
		} else if (strcmp(a, "--model") == 0) {
			NEEDV();
			model = v;
		} else if (strcmp(a, "--time-scale") == 0) {
			NEEDV();
			r = args_double(a, v, 0.001, 1e6, &time_scale, err, sizeof err);
		} else if (strcmp(a, "--parallel") == 0) {
			NEEDV();
			r = args_i64(a, v, 1, 4096, &parallel, err, sizeof err);
		} else if (strcmp(a, "--context") == 0) {
			NEEDV();
			r = args_i64(a, v, 16, 1 << 22, &context, err, sizeof err);
		} else if (strcmp(a, "--threads") == 0) {
			NEEDV();
			r = args_i64(a, v, 1, 1024, &threads, err, sizeof err);
		} else if (strcmp(a, "--device") == 0) {
			NEEDV();
			device = v;
		} else if (strcmp(a, "--mem-limit") == 0) {
			NEEDV();
			r = args_bytes(a, v, &mem_limit, err, sizeof err);
		} else if (strcmp(a, "--straggler-wait") == 0) {
			NEEDV();
			if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0)
				cfg.sched.straggler_wait = v[1] == 'n';
			else
				r = (snprintf(err, sizeof err, "--straggler-wait %s: say on or off", v), -EINVAL);
		} else if (strcmp(a, "--straggler-frac") == 0) {
			NEEDV();
			r = args_double(a, v, 0, 10, &cfg.sched.straggler_frac, err, sizeof err);
		} else if (strcmp(a, "--straggler-min-ms") == 0) {
			NEEDV();
			r = args_double(a, v, 0, 10000, &strag_min_ms, err, sizeof err);
		} else if (strcmp(a, "--straggler-max-ms") == 0) {
			NEEDV();
			r = args_double(a, v, 0, 10000, &strag_max_ms, err, sizeof err);
		} else if (strcmp(a, "--prefill-chunk") == 0) {
			NEEDV();
			r = args_i64(a, v, 1, 1 << 20, &iv, err, sizeof err);
			cfg.sched.prefill_chunk = (int32_t)iv;
		} else if (strcmp(a, "--prefill-budget-ms") == 0) {
			NEEDV();
			double ms = 0;
			r = args_double(a, v, 0, 600000, &ms, err, sizeof err);
			cfg.sched.prefill_budget_ns = (int64_t)(ms * 1e6);
		} else if (strcmp(a, "--chat-template") == 0) {
			NEEDV();
			cfg.chat_template_path = v;
		} else if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "--no-interleave") == 0) {
			cfg.sched.interleave = false;
		} else if (strcmp(a, "--prefix-cache") == 0) {
			cfg.sched.prefix_cache = true;
		} else if (strcmp(a, "--spec") == 0) {
			NEEDV();
			spec = v;
		} else if (strcmp(a, "--draft-max") == 0) {
			NEEDV();
			r = args_i64(a, v, 1, SCHED_SPEC_MAX, &draft_max, err, sizeof err);
		} else if (strcmp(a, "--rollback") == 0) {
			NEEDV();
			rollback = v;
		} else if (strcmp(a, "--draft") == 0) {
			NEEDV();
			draft = v;
		} else if (strcmp(a, "--host") == 0) {
			NEEDV();
			cfg.http.host = v;
		} else if (strcmp(a, "--port") == 0) {
			NEEDV();
			r = args_i64(a, v, 0, 65535, &iv, err, sizeof err);
			cfg.http.port = (int)iv;
		} else if (strcmp(a, "--port-file") == 0) {
			NEEDV();
			port_file = v;
		} else if (strcmp(a, "--pid-file") == 0) {
			NEEDV();
			pid_file = v;
		} else if (strcmp(a, "--max-body") == 0) {
			NEEDV();
			r = args_bytes(a, v, &bv, err, sizeof err);
			cfg.http.max_body_bytes = (size_t)bv;
		} else if (strcmp(a, "--header-timeout") == 0) {
			NEEDV();
			r = args_double(a, v, 0.01, 3600, &dv, err, sizeof err);
			cfg.http.header_timeout_ns = (int64_t)(dv * 1e9);
		} else if (strcmp(a, "--idle-timeout") == 0) {
			NEEDV();
			r = args_double(a, v, 0.01, 86400, &dv, err, sizeof err);
			cfg.http.idle_timeout_ns = (int64_t)(dv * 1e9);
		} else if (strcmp(a, "--max-conns") == 0) {
			NEEDV();
			r = args_i64(a, v, 1, 1000000, &iv, err, sizeof err);
			cfg.http.max_conns = (int)iv;
		} else if (strcmp(a, "--log-level") == 0) {
			NEEDV();
			enum log_level lv;
			if (log_level_parse(v, &lv) != 0)
				r = (snprintf(err, sizeof err, "--log-level %s: use error, warn, info or debug", v), -EINVAL);
			else
				log_set_level(lv);
		} else {
			fprintf(stderr, "sixi-server: unknown option %s (see --help)\n", a);
			return 2;
		}
#undef NEEDV
		if (r != 0) {
			fprintf(stderr, "sixi-server: %s\n", err);
			return 2;
		}
	}
	cfg.sched.straggler_min_ns = (int64_t)(strag_min_ms * 1e6);
	cfg.sched.straggler_max_ns = (int64_t)(strag_max_ms * 1e6);
	if (!simulate && !model) {
		fprintf(stderr, "sixi-server: say what to serve: --simulate thor (no model needed) or --model FILE.gguf\n");
		return 2;
	}
	if (simulate && model) {
		fprintf(stderr, "sixi-server: --simulate and --model exclude each other; pick one\n");
		return 2;
	}
	int rb_mode = 0;
	if (spec && strcmp(spec, "ngram") != 0 && strcmp(spec, "off") != 0) {
		fprintf(stderr, "sixi-server: --spec %s: unknown drafter; use --spec ngram (or off)\n", spec);
		return 2;
	}
	if (strcmp(rollback, "log") != 0 && strcmp(rollback, "snapshot") != 0) {
		fprintf(stderr, "sixi-server: --rollback %s: use log or snapshot\n", rollback);
		return 2;
	}
	if (draft && spec && strcmp(spec, "off") == 0) {
		fprintf(stderr, "sixi-server: --draft and --spec off exclude each other\n");
		return 2;
	}
	if ((spec && strcmp(spec, "ngram") == 0) || draft) {
		if (!model) {
			fprintf(stderr, "sixi-server: --spec needs --model (the simulated device keeps no state to roll "
				"back)\n");
			return 2;
		}
		rb_mode = strcmp(rollback, "log") == 0 ? 1 : 2;
		cfg.sched.spec_draft_max = (int32_t)draft_max;
	}
	/* Signals become events on the loop: block them in every thread first, before the CUDA
	 * runtime (open_device) starts threads of its own. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	int cuda_dev = -1;
	if (open_device(device, model, draft, rb_mode, &cuda_dev, &mem_limit) != 0)
		return 2;
	struct engine *e = NULL;
	struct server *srv = NULL;
	bool wrote_pid = false;
	int sfd = -1;
	struct sim_config sim_cfg = { .n_script = 0 };
	uint32_t spec_rows = rb_mode ? (uint32_t)draft_max + 1 : 0;
	int sized = model ? size_model(model, &parallel, &context, mem_limit, cfg.sched.prefill_chunk,
				       rb_mode == 1 ? spec_rows : 0, rb_mode == 2 ? spec_rows : 0)
			  : open_sim(simulate, time_scale, parallel, context, mem_limit, &sim_cfg);
	if (sized != 0)
		return sized == -ENOMEM ? 3 : 2;

	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "sixi-server: signalfd: %s\n", strerror(errno));
		sim_config_finish(&sim_cfg);
		return 1;
	}
	raise_fd_limit();

	if (model && cuda_dev >= 0) {
#ifdef SIXI_HAVE_CUDA
		e = cuda_engine_open(model, cuda_dev, (int)parallel, (int)context, rb_mode ? (int)draft_max + 1 : 0, err,
				     sizeof err);
		if (!e) {
			fprintf(stderr, "sixi-server: --device cuda:%d: %s\n", cuda_dev, err);
			goto out;
		}
		if (rb_mode)
			log_info("speculative decoding: n-gram drafts of up to %d tokens, rollback by log on the GPU: %.1f KiB "
				 "for %d slots",
				 (int)draft_max, (double)e->mem_rollback / 1024.0, (int)parallel);
		log_info("GPU state memory: KV cache %.1f MiB, GDN state %.1f MiB, conv windows %.1f MiB, rollback %.1f MiB",
			 (double)e->mem_kv / 1048576.0, (double)e->mem_gdn_state / 1048576.0, (double)e->mem_conv / 1048576.0,
			 (double)e->mem_rollback / 1048576.0);
#endif
	} else if (model) {
		e = real_engine_open(model, (int)parallel, (int)context, (int)threads, err, sizeof err);
		if (!e) {
			fprintf(stderr, "sixi-server: %s\n", err);
			goto out;
		}
		size_t rb_bytes = 0;
		/* a step verifies the last token and its drafts: draft_max + 1 rows */
		if (rb_mode && real_engine_set_rollback(e, rb_mode, (int)draft_max + 1, &rb_bytes, err, sizeof err) != 0) {
			fprintf(stderr, "sixi-server: --spec: %s\n", err);
			goto out;
		}
		if (draft && real_engine_set_draft(e, draft, (int)draft_max, (int)threads, err, sizeof err) != 0) {
			fprintf(stderr, "sixi-server: --draft %s\n", err);
			goto out;
		}
		if (rb_mode)
			log_info("speculative decoding: %s drafts of up to %d tokens, rollback by %s: %.1f KiB for %d "
				 "slots",
				 draft ? "draft-model" : "n-gram", (int)draft_max, rollback, (double)rb_bytes / 1024.0,
				 (int)parallel);
		log_info("state memory: KV cache %.1f MiB, GDN state %.1f MiB, conv windows %.1f MiB, rollback %.1f MiB "
			 "(a snapshot ring of the same depth: %.1f MiB)",
			 (double)e->mem_kv / 1048576.0, (double)e->mem_gdn_state / 1048576.0, (double)e->mem_conv / 1048576.0,
			 (double)e->mem_rollback / 1048576.0, (double)e->mem_snapshot_ring / 1048576.0);
	} else {
		e = sim_engine_create(&sim_cfg);
		sim_config_finish(&sim_cfg);
		if (!e) {
			fprintf(stderr, "sixi-server: cannot create the simulated engine: %s\n", strerror(errno));
			goto out;
		}
	}
	srv = server_create(e, &cfg, err, sizeof err);
	if (!srv) {
		fprintf(stderr, "sixi-server: %s\n", err);
		goto out;
	}
	char line[64];
	if (pid_file) {
		snprintf(line, sizeof line, "%ld\n", (long)getpid());
		if (write_file_atomic(pid_file, line) != 0) {
			fprintf(stderr, "sixi-server: cannot write --pid-file %s\n", pid_file);
			goto out;
		}
		wrote_pid = true;
	}
	if (port_file) {
		snprintf(line, sizeof line, "%d\n", server_port(srv));
		if (write_file_atomic(port_file, line) != 0) {
			fprintf(stderr, "sixi-server: cannot write --port-file %s\n", port_file);
			goto out;
		}
	}
	fprintf(stderr, "listening on %s:%d\n", cfg.http.host, server_port(srv));
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "host", cfg.http.host);
		cJSON_AddNumberToObject(o, "port", server_port(srv));
		cJSON_AddNumberToObject(o, "pid", (double)getpid());
		cJSON_AddStringToObject(o, "model", e->name);
		cJSON_AddNumberToObject(o, "parallel", e->n_slots);
		cJSON_AddNumberToObject(o, "context", e->n_ctx);
		char *text = cJSON_PrintUnformatted(o);
		if (text)
			printf("%s\n", text);
		fflush(stdout);
		free(text);
		cJSON_Delete(o);
	}
	int r = server_run(srv, sfd);
	if (r != 0) {
		fprintf(stderr, "sixi-server: event loop failed: %s\n", strerror(-r));
		goto out;
	}
	log_info("stopped cleanly");
	rc = 0;
out:
	server_destroy(srv);
	engine_destroy(e);
	if (wrote_pid)
		unlink(pid_file);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
