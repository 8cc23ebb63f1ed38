/* sixi-server — the bundled OpenAI-compatible server. main() parses arguments,
 * sizes the configuration, builds an engine (the simulated device for now) and
 * runs the server until SIGINT or SIGTERM. */
#include "core/args.h"
#include "core/log.h"
#include "server/engine.h"
#include "server/server.h"
#include "server/sim.h"

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
		"\n"
		"Engine:\n"
		"  --simulate PRESET|FILE  simulated device: presets %s, or a JSON file of fields\n"
		"                          (base, weight_gb, bandwidth_gbps, decode_row_ms, prefill_row_ms,\n"
		"                          host_row_ms, context, slots, memory_gb, kv_kib_per_token,\n"
		"                          state_mib_per_seq, activation_gb)\n"
		"  --time-scale X          run simulated time X times faster (default 1)\n"
		"  --model FILE.gguf       the real model\n"
		"  --parallel N            sequences resident at once (default: the engine's)\n"
		"  --context N             positions per sequence (default: the engine's)\n"
		"  --mem-limit BYTES       refuse configurations needing more (default: device memory - 5%%)\n"
		"  --threads N             CPU threads for the real model\n"
		"Scheduler:\n"
		"  --straggler-wait on|off wait for sequences still being sampled before a pass (default on)\n"
		"  --straggler-frac F      wait this fraction of the last pass time (default 0.2)\n"
		"  --straggler-min-ms MS   clamp (default 4)\n"
		"  --straggler-max-ms MS   clamp (default 40)\n"
		"  --prefill-chunk N       prompt rows per pass (default 512)\n"
		"  --no-interleave         the old way, for comparison: prompts prefilled one at a time in\n"
		"                          arrival order (a new request waits for every prompt ahead of it),\n"
		"                          prompt chunks and decode rows in separate passes\n"
		"  --prefix-cache          reuse a finished sequence's state for a prompt that extends it\n"
		"HTTP:\n"
		"  --host ADDR             bind address (default 127.0.0.1)\n"
		"  --port N                port, 0 picks a free one (default 8080)\n"
		"  --port-file FILE        write the bound port to FILE\n"
		"  --pid-file FILE         write the process id to FILE (removed at exit)\n"
		"  --max-body BYTES        largest request body (default 8MiB)\n"
		"  --header-timeout S      seconds for a request's header block (default 10)\n"
		"  --idle-timeout S        seconds an idle keep-alive connection is kept (default 120)\n"
		"  --max-conns N           open connections (default 4096)\n"
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

int main(int argc, char **argv)
{
	log_set_program("sixi-server");
	struct server_config cfg;
	server_config_default(&cfg);
	const char *simulate = NULL, *model = NULL, *port_file = NULL, *pid_file = NULL;
	double time_scale = 1, strag_min_ms = 4, strag_max_ms = 40;
	int64_t parallel = 0, context = 0, threads = 0;
	uint64_t mem_limit = 0;
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
		} else if (strcmp(a, "--no-interleave") == 0) {
			cfg.sched.interleave = false;
		} else if (strcmp(a, "--prefix-cache") == 0) {
			cfg.sched.prefix_cache = true;
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
	if (model) {
		fprintf(stderr, "sixi-server: --model %s: this build has no real-model engine yet; use --simulate thor\n",
			model);
		return 2;
	}
	(void)threads;

	/* ---- the simulated device, sized before anything is allocated ---- */
	struct sim_config sc;
	if (sim_config_preset(simulate, &sc) != 0) {
		if (access(simulate, R_OK) != 0) {
			fprintf(stderr, "sixi-server: --simulate %s: neither a preset (%s) nor a readable file\n", simulate,
				sim_preset_names());
			return 2;
		}
		if (sim_config_load(simulate, &sc, err, sizeof err) != 0) {
			fprintf(stderr, "sixi-server: --simulate: %s\n", err);
			return 2;
		}
	}
	sc.time_scale = time_scale;
	if (parallel)
		sc.n_slots = (int32_t)parallel;
	if (context)
		sc.n_ctx = (int32_t)context;
	double limit = mem_limit ? (double)mem_limit : sc.mem_bytes * 0.95;
	struct sim_size sz = sim_size_of(&sc, sc.n_slots, sc.n_ctx);
	fprintf(stderr,
		"sixi-server: %s: %d sequences x %d context: weights %.2f GB + KV %.2f GB + state %.2f GB + "
		"activations %.2f GB = %.2f GB of %.2f GB allowed\n",
		sc.name, sc.n_slots, sc.n_ctx, sz.weights / 1e9, sz.kv / 1e9, sz.state / 1e9, sz.activations / 1e9,
		sz.total / 1e9, limit / 1e9);
	if (sim_fit_check(&sc, limit, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-server: refusing to start: %s\n", err);
		return 3;
	}

	/* Signals become events on the loop: block them in every thread first. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "sixi-server: signalfd: %s\n", strerror(errno));
		return 1;
	}
	raise_fd_limit();

	struct engine *e = sim_engine_create(&sc);
	struct server *srv = NULL;
	bool wrote_pid = false;
	if (!e) {
		fprintf(stderr, "sixi-server: cannot create the simulated engine: %s\n", strerror(errno));
		goto out;
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
	close(sfd);
	return rc;
}
