/* selftest — see selftest.h. The emitter runs in this process on its own
 * thread; the client threads are the configured --threads. */
#include "bench/selftest.h"
#include "core/err.h"
#include "bench/emitter.h"
#include "core/log.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static long proc_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

int selftest_run(const struct bench_cfg *cfg_in, const struct selftest_params *p, FILE *out, char *err, size_t errlen)
{
	struct emitter *em = NULL;
	char url[1024];
	if (p->url) {
		snprintf(url, sizeof url, "%s", p->url);
	} else {
		em = emitter_start(0, p->events, p->tokens_per_event, err, errlen);
		if (!em)
			return -EIO;
		snprintf(url, sizeof url, "http://127.0.0.1:%d", emitter_port(em));
	}
	struct bench_cfg cfg = *cfg_in;
	cfg.url = url;
	cfg.model = "emitter";
	cfg.max_tokens = p->events * p->tokens_per_event;
	cfg.rounds = cfg_in->rounds;
	char proto[256];
	snprintf(proto, sizeof proto, "{\"workload\":\"selftest\",\"events\":%lld,\"tokens_per_event\":%lld,\"threads\":%d}",
		 (long long)p->events, (long long)p->tokens_per_event, cfg.threads);
	struct bench *b = bench_create(&cfg, "selftest", proto, err, errlen);
	if (!b) {
		emitter_stop(em);
		return -EIO;
	}
	if (!cfg.json && !cfg.quiet)
		fprintf(out, "client ceiling against %s (%lld events x %lld tokens per response, %d client threads)\n"
			     "%8s %8s %6s %12s %12s %10s %14s\n",
			p->url ? p->url : "the built-in emitter", (long long)p->events, (long long)p->tokens_per_event,
			cfg.threads, "streams", "requests", "errors",
			"events/s", "tokens/s", "wall s", "KiB/stream");
	cJSON *levels = cJSON_CreateArray();
	double best_ev = 0, best_tok = 0, kib_per_stream = 0;
	int64_t max_streams_ok = 0;
	int rc = 0;
	for (size_t li = 0; li < p->n_streams && !rc; li++) {
		int64_t S = p->streams[li];
		struct runner_stream *st = calloc((size_t)S, sizeof *st);
		struct runner_req *rq = calloc((size_t)(S * cfg.rounds), sizeof *rq);
		if (!st || !rq) {
			free(st);
			free(rq);
			rc = -ENOMEM;
			break;
		}
		for (int64_t s = 0, k = 0; s < S && !rc; s++) {
			st[s].reqs = &rq[k];
			st[s].n = (size_t)cfg.rounds;
			for (int64_t r = 0; r < cfg.rounds && !rc; r++, k++) {
				rq[k].level = S;
				rq[k].stream = s;
				rq[k].seq = r;
				rq[k].requested_tokens = cfg.max_tokens;
				rq[k].phase = "measure";
				rc = bench_body(b, s, r, 8, cfg.max_tokens, &rq[k].body, &rq[k].body_len);
			}
		}
		long rss0 = proc_kib("VmRSS");
		struct bench_sample *samples = NULL;
		size_t n = 0;
		if (!rc)
			rc = bench_run_streams(b, st, (size_t)S, &samples, &n);
		long hwm = proc_kib("VmHWM");
		for (int64_t k = 0; k < S * cfg.rounds; k++)
			free(rq[k].body);
		free(rq);
		free(st);
		if (rc) {
			bench_samples_free(samples, n);
			break;
		}
		struct bench_level L;
		rc = bench_level_summarise(b, samples, n, S, &L);
		if (rc) {
			bench_samples_free(samples, n);
			break;
		}
		bench_level_store(b, &L);
		bench_samples_free(samples, n);
		double tok_s = L.agg_tok_s;
		double kib = S > 0 && hwm > rss0 ? (double)(hwm - rss0) / (double)S : 0;
		if (L.events_per_s > best_ev)
			best_ev = L.events_per_s;
		if (tok_s > best_tok)
			best_tok = tok_s;
		if (L.errors == 0 && S > max_streams_ok)
			max_streams_ok = S;
		if (S == p->streams[p->n_streams - 1])
			kib_per_stream = kib;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "streams", (double)S);
		cJSON_AddNumberToObject(o, "requests", (double)L.requests);
		cJSON_AddNumberToObject(o, "errors", (double)L.errors);
		cJSON_AddStringToObject(o, "error_classes", L.error_classes);
		cJSON_AddNumberToObject(o, "events_per_s", L.events_per_s);
		cJSON_AddNumberToObject(o, "tokens_per_s", tok_s);
		cJSON_AddNumberToObject(o, "wall_s", L.wall_s);
		cJSON_AddNumberToObject(o, "kib_per_stream", kib);
		cJSON_AddItemToArray(levels, o);
		if (!cfg.json && !cfg.quiet)
			fprintf(out, "%8lld %8lld %6lld %12.0f %12.0f %10.3f %14.1f\n", (long long)S, (long long)L.requests,
				(long long)L.errors, L.events_per_s, tok_s, L.wall_s, kib);
		if (L.errors && !cfg.json && !cfg.quiet)
			fprintf(out, "  errors at %lld streams: %s\n", (long long)S, L.error_classes);
	}
	cJSON *sum = cJSON_CreateObject();
	cJSON_AddNumberToObject(sum, "events_per_s", best_ev);
	cJSON_AddNumberToObject(sum, "tokens_per_s", best_tok);
	cJSON_AddNumberToObject(sum, "max_streams_without_error", (double)max_streams_ok);
	cJSON_AddNumberToObject(sum, "kib_per_stream", kib_per_stream);
	cJSON_AddNumberToObject(sum, "threads", cfg.threads);
	char *s = cJSON_PrintUnformatted(sum);
	if (store_run_set_summary(bench_store(b), bench_run_id(b), s) != 0)
		log_warn("could not store the selftest summary");
	free(s);
	if (cfg.json) {
		cJSON_AddNumberToObject(sum, "run", (double)bench_run_id(b));
		cJSON_AddItemToObject(sum, "levels", levels);
		char *js = cJSON_Print(sum);
		fprintf(out, "%s\n", js);
		free(js);
	} else {
		cJSON_Delete(levels);
		if (!cfg.quiet)
			fprintf(out, "ceiling: %.0f events/s, %.0f tokens/s; %lld streams without error; %.1f KiB per stream (run %lld)\n",
			best_ev, best_tok, (long long)max_streams_ok, kib_per_stream, (long long)bench_run_id(b));
	}
	cJSON_Delete(sum);
	if (rc == 0 && bench_store_errors(b))
		rc = -EIO;
	if (rc)
		err_set(err, errlen, "run %lld failed: %s", (long long)bench_run_id(b), strerror(-rc));
	bench_destroy(b, rc ? "failed" : "done");
	emitter_stop(em);
	return rc;
}
