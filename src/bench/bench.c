/* bench — see bench.h. */
#include "bench/bench.h"
#include "core/err.h"
#include "bench/prompt.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "net/http.h"
#include "session/session.h"
#include "stats/level.h"
#include "store/store.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bench {
	struct bench_cfg cfg;
	struct store *store;
	int64_t run_id;
	atomic_int store_errors;  /* rows that could not be stored: the run is incomplete */
	double tokens_per_word;
	struct session *session;  /* readiness, warm-up, fingerprint: as sixi-eval greets a server */
	char url_api[1024];
};

void bench_cfg_defaults(struct bench_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->api = OPENAI_COMPLETIONS;
	c->max_tokens = 128;
	c->prompt_tokens = 32;
	c->temperature = 0.7;
	c->ignore_eos = true;
	c->stream = true;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	c->threads = cores > 0 ? (int)cores : 1;
	c->rounds = 2;
	c->warmup = 2;
	c->ready_timeout_ms = 120000;
	c->connect_timeout_ms = 10000;
	c->first_byte_timeout_ms = 600000;
	c->stall_timeout_ms = 60000;
	c->run_timeout_ms = 3600000;
	c->seed = 0x5157;
	c->db_path = STORE_DEFAULT_PATH;
	c->unique_prompts = true;
}

static int greet_body(void *ud, const char *phase, int64_t seq, int64_t max_tokens, char **body, size_t *len);

struct bench *bench_create(const struct bench_cfg *cfg, const char *workload, const char *protocol_json, char *err,
			   size_t errlen)
{
	struct bench *b = calloc(1, sizeof *b);
	if (!b) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	b->cfg = *cfg;
	b->tokens_per_word = 1.0;
	snprintf(b->url_api, sizeof b->url_api, "%s%s", cfg->url ? cfg->url : "", openai_api_path(cfg->api));
	b->store = store_open(cfg->db_path, err, errlen);
	if (!b->store) {
		free(b);
		return NULL;
	}
	/* Each row is still its own transaction, committed the moment it is known; only
	 * the copying of the WAL back into the database (with its fsyncs) runs every
	 * 10,000 pages instead of every 1,000. At 1,000 it doubled the cost of a row
	 * (about 48 against 21 us here), time the load loop's core lost to the writer.
	 * Closing the database checkpoints what is left. A failure only costs speed. */
	if (store_set_checkpoint_pages(b->store, 10000) != 0)
		log_warn("%s: could not set the checkpoint interval", cfg->db_path);
	struct session_opts so = { .url = cfg->url ? cfg->url : "", .api = cfg->api, .stream = cfg->stream,
				   .connect_timeout_ms = cfg->connect_timeout_ms, .stall_timeout_ms = cfg->stall_timeout_ms,
				   .body = greet_body, .ud = b };
	b->session = session_create(&so);
	if (!b->session) {
		err_set(err, errlen, "out of memory");
		store_close(b->store);
		free(b);
		return NULL;
	}
	char memwarn[1024];
	char *facts = session_host_facts(b->session, NULL, memwarn, sizeof memwarn);
	if (memwarn[0])
		log_warn("%s (recorded with the run)", memwarn);
	struct store_run r = { .kind = "bench", .workload = workload, .protocol_json = protocol_json,
			       .endpoint = cfg->url, .model = cfg->model, .host_facts = facts };
	int rc = store_run_begin(b->store, &r, &b->run_id);
	free(facts);
	if (rc == 0)
		rc = session_attach(b->session, b->store, b->run_id, err, errlen);
	else
		err_set(err, errlen, "%s: cannot record the run: %s", cfg->db_path, store_errmsg(b->store));
	if (rc) {
		session_destroy(b->session);
		store_close(b->store);
		free(b);
		return NULL;
	}
	return b;
}

void bench_destroy(struct bench *b, const char *status)
{
	if (!b)
		return;
	if (store_run_finish(b->store, b->run_id, status) != 0)
		log_warn("could not mark run %lld as %s", (long long)b->run_id, status);
	session_destroy(b->session);
	store_close(b->store);
	free(b);
}

int64_t bench_run_id(const struct bench *b) { return b->run_id; }
int bench_store_errors(struct bench *b)
{
	return atomic_load(&b->store_errors) + session_store_errors(b->session);
}
const struct bench_cfg *bench_config(const struct bench *b) { return &b->cfg; }
struct store *bench_store(struct bench *b) { return b->store; }
double bench_tokens_per_word(const struct bench *b) { return b->tokens_per_word; }
const char *bench_fingerprint_hash(const struct bench *b) { return session_fingerprint_hash(b->session); }

/* ---- request bodies ---- */

static int body_msgs(struct bench *b, const char *prompt, const char *messages_json, int64_t max_tokens, char **body,
		     size_t *len)
{
	struct openai_request rq = {
		.api = b->cfg.api, .model = b->cfg.model, .prompt = prompt, .max_tokens = max_tokens,
		.messages_json = messages_json,
		.temperature = b->cfg.temperature, .top_p = -1, .top_k = -1, .seed = -1,
		.stream = b->cfg.stream, .include_usage = b->cfg.stream, .ignore_eos = b->cfg.ignore_eos,
		.extra_json = b->cfg.extra_json,
	};
	struct buf out;
	buf_init(&out);
	int rc = openai_request_body(&rq, &out);
	if (rc) {
		buf_finish(&out);
		return rc;
	}
	*len = out.len;
	*body = buf_steal(&out);
	return *body ? 0 : -ENOMEM;
}

static int body_for(struct bench *b, const char *prompt, int64_t max_tokens, char **body, size_t *len)
{
	return body_msgs(b, prompt, NULL, max_tokens, body, len);
}

int bench_body_text(struct bench *b, const char *prompt, const char *messages_json, int64_t max_tokens, char **body,
		    size_t *len)
{
	return body_msgs(b, prompt ? prompt : "", messages_json, max_tokens, body, len);
}

int bench_body(struct bench *b, int64_t stream, int64_t seq, int64_t prompt_tokens, int64_t max_tokens, char **body,
	       size_t *len)
{
	char *p = prompt_make(b->cfg.seed ^ (uint64_t)b->run_id << 20, stream, seq,
			      prompt_words_for(prompt_tokens, b->tokens_per_word));
	if (!p)
		return -ENOMEM;
	int rc = body_for(b, p, max_tokens, body, len);
	free(p);
	return rc;
}

/* ---- greeting the server (session/) ---- */

/* The bodies of the session's requests: readiness asks a short unique prompt,
 * warm-up a prompt of the measured length. */
static int greet_body(void *ud, const char *phase, int64_t seq, int64_t max_tokens, char **body, size_t *len)
{
	struct bench *b = ud;
	if (strcmp(phase, "warmup") == 0)
		return bench_body(b, -3, seq, b->cfg.prompt_tokens, max_tokens, body, len);
	char *p = prompt_make(b->cfg.seed ^ 0x5eadULL, -1, seq, 8);
	int rc = p ? body_for(b, p, max_tokens, body, len) : -ENOMEM;
	free(p);
	return rc;
}

int bench_wait_ready(struct bench *b, char *err, size_t errlen)
{
	struct session_ready r = { .deadline_ms = b->cfg.ready_timeout_ms, .max_tokens = 4,
				   .hint = "check the URL and model, or raise --ready-timeout" };
	return session_wait_ready(b->session, &r, err, errlen);
}

int bench_fingerprint(struct bench *b, bool *changed, char *err, size_t errlen)
{
	char ferr[512] = "";
	int rc = session_fingerprint(b->session, changed, ferr, sizeof ferr);
	if (rc == -EPROTO) {
		/* a server without /v1/models is still measured; its fingerprint is what else answered */
		log_warn("%s: the fingerprint lacks the model list", ferr);
		rc = 0;
	}
	if (rc)
		err_set(err, errlen, "%s", rc == -ENOMEM ? "out of memory while taking the server's fingerprint" : ferr);
	return rc;
}

int bench_calibrate(struct bench *b, char *err, size_t errlen)
{
	const int64_t words = 200;
	char *p = prompt_make(b->cfg.seed ^ 0xca11b, -2, 0, words);
	char *body;
	size_t len;
	int rc = p ? body_for(b, p, 1, &body, &len) : -ENOMEM;
	free(p);
	if (rc)
		return rc;
	struct oai_stream o;
	rc = session_request(b->session, "calibrate", 0, body, len, 1, b->cfg.ready_timeout_ms, &o);
	free(body);
	if (rc)
		return rc;
	if (o.error) {
		err_set(err, errlen, "cannot calibrate prompt length: %s", o.error_detail);
		oai_stream_finish(&o);
		return -EPROTO;
	}
	if (o.prompt_tokens <= 0) {
		/* no usage: the levels will be invalid anyway, and say why; lengths stay in words */
		log_warn("the server reported no usage.prompt_tokens: prompt lengths are uncalibrated (1 token per word)");
		oai_stream_finish(&o);
		return 0;
	}
	b->tokens_per_word = (double)o.prompt_tokens / (double)words;
	oai_stream_finish(&o);
	return 0;
}

int bench_warmup(struct bench *b, char *err, size_t errlen)
{
	int rc = session_warmup(b->session, b->cfg.warmup, b->cfg.max_tokens < 32 ? b->cfg.max_tokens : 32,
				b->cfg.first_byte_timeout_ms);
	if (rc)
		err_set(err, errlen, "cannot send a warm-up request: %s", strerror(-rc));
	return rc;
}

/* ---- recording ---- */

static void fill_row(struct bench *b, struct store_bench_row *row, const char *phase, int64_t level, int64_t stream,
		     int64_t seq, int64_t requested, const struct oai_stream *s)
{
	memset(row, 0, sizeof *row);
	row->run_id = b->run_id;
	row->phase = phase;
	row->level = level;
	row->stream = stream;
	row->seq = seq;
	row->prompt_tokens = s->prompt_tokens;
	row->cached_tokens = s->cached_tokens;
	row->completion_tokens = s->completion_tokens;
	row->requested_tokens = requested;
	row->sse_events = s->sse_events;
	row->content_events = s->token_events;
	row->t_send = s->t_send;
	row->t_first_byte = s->t_first_byte;
	row->t_first_token = s->t_first_token;
	row->t_last = s->t_last_token;
	row->t_done = s->t_done;
	row->error = s->error;
	row->error_detail = s->error ? s->error_detail : NULL;
	row->http_status = s->http_status;
	row->finish_reason = s->finish_reason[0] ? s->finish_reason : NULL;
	const char *fp = session_fingerprint_hash(b->session);
	row->fingerprint_hash = fp[0] ? fp : NULL;
}

/* Rows reach SQLite through a writer thread, so an insert never runs on an event
 * loop: a slow disk cannot delay the streams being measured. Each row is still its
 * own transaction, written as soon as the writer gets to it. */
struct pending_row {
	struct store_bench_row row;
	char error_detail[256];
	char finish_reason[32];
	char tag[32];
	bool has_tag;
	int64_t *event_t; /* (n_event_t) owned: token-bearing event times, for itl_json */
	size_t n_event_t;
};

struct writer {
	struct bench *b;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pending_row *q;
	size_t head, tail, cap;   /* ring */
	bool closing;
	int store_errors;
	pthread_t thread;
};

/* The gaps between the token-bearing events of a stream, in ns, as the JSON array
 * bench_requests.itl_json keeps (vLLM's per-request ITL list is this list); NULL
 * when there are fewer than two events or no memory (the row is stored without). */
static char *gaps_json(const int64_t *event_t, size_t n_event_t)
{
	if (n_event_t < 2)
		return NULL;
	size_t cap = 3 + (n_event_t - 1) * 21, len = 0;
	char *j = malloc(cap);
	if (!j)
		return NULL;
	j[len++] = '[';
	for (size_t i = 1; i < n_event_t; i++) {
		/* by hand, not snprintf: a 256-event stream would spend most of the writer's time there */
		int64_t g = event_t[i] - event_t[i - 1];
		uint64_t u = g < 0 ? (uint64_t)0 - (uint64_t)g : (uint64_t)g;
		char d[20];
		int k = 0;
		do {
			d[k++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (i > 1)
			j[len++] = ',';
		if (g < 0)
			j[len++] = '-';
		while (k)
			j[len++] = d[--k];
	}
	j[len++] = ']';
	j[len] = 0;
	return j;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->head == w->tail && !w->closing)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->head == w->tail && w->closing)
			break;
		struct pending_row pr = w->q[w->head];
		w->head = (w->head + 1) % w->cap;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		pr.row.error_detail = pr.row.error ? pr.error_detail : NULL;
		pr.row.finish_reason = pr.finish_reason[0] ? pr.finish_reason : NULL;
		pr.row.tag = pr.has_tag ? pr.tag : NULL;
		/* formatted here, off the event loop */
		char *itl = gaps_json(pr.event_t, pr.n_event_t);
		pr.row.itl_json = itl;
		if (store_bench_insert(w->b->store, &pr.row) != 0 && w->store_errors++ == 0 &&
		    atomic_fetch_add(&w->b->store_errors, 1) == 0)
			log_error("%s: could not store a row: %s", w->b->cfg.db_path, store_errmsg(w->b->store));
		free(itl);
		free(pr.event_t);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Queues row with a copy of its stream's event times (none when out of memory:
 * the row is then stored without itl_json). */
static void writer_push(struct writer *w, const struct store_bench_row *row, const struct oai_stream *s)
{
	int64_t *ev = s->n_event_t > 1 ? malloc(s->n_event_t * sizeof *ev) : NULL;
	if (ev)
		memcpy(ev, s->event_t, s->n_event_t * sizeof *ev);
	pthread_mutex_lock(&w->lock);
	while ((w->tail + 1) % w->cap == w->head) /* full: wait for the writer (back-pressure) */
		pthread_cond_wait(&w->cond, &w->lock);
	struct pending_row *pr = &w->q[w->tail];
	pr->row = *row;
	snprintf(pr->error_detail, sizeof pr->error_detail, "%s", row->error_detail ? row->error_detail : "");
	snprintf(pr->finish_reason, sizeof pr->finish_reason, "%s", row->finish_reason ? row->finish_reason : "");
	pr->has_tag = row->tag != NULL;
	snprintf(pr->tag, sizeof pr->tag, "%s", row->tag ? row->tag : "");
	/* row->fingerprint_hash points into the session, which lives as long as the bench */
	pr->row.itl_json = NULL;
	pr->event_t = ev;
	pr->n_event_t = ev ? s->n_event_t : 0;
	w->tail = (w->tail + 1) % w->cap;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct collect {
	const struct bench_hooks *h;
	struct bench *b;
	struct bench_sample *v;
	size_t n, cap;
	struct writer *w;
	bool oom;   /* a sample could not be kept: the level's summary would miss it */
};

static void sink(void *ud, const struct runner_req *rq, const struct oai_stream *s)
{
	struct collect *c = ud;
	struct bench *b = c->b;
	struct store_bench_row row;
	if (c->h && c->h->on_reply)
		c->h->on_reply(c->h->ud, rq, s->error ? NULL : s->content.data, s->error ? 0 : s->content.len);
	fill_row(b, &row, rq->phase ? rq->phase : "measure", rq->level, rq->stream, rq->seq, rq->requested_tokens, s);
	row.t_intended = rq->t_intended_ns;
	row.tag = rq->tag;
	writer_push(c->w, &row, s);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct bench_sample *p = realloc(c->v, cap * sizeof *p);
		if (!p) {
			c->oom = true;
			return;
		}
		c->v = p;
		c->cap = cap;
	}
	struct bench_sample *x = &c->v[c->n++];
	memset(x, 0, sizeof *x);
	x->level = rq->level;
	x->stream = rq->stream;
	x->seq = rq->seq;
	x->phase = rq->phase ? rq->phase : "measure";
	x->tag = rq->tag;
	x->prompt_tokens = s->prompt_tokens;
	x->cached_tokens = s->cached_tokens;
	x->completion_tokens = s->completion_tokens;
	x->requested_tokens = rq->requested_tokens;
	x->sse_events = s->sse_events;
	x->token_events = s->token_events;
	x->t_intended = rq->t_intended_ns;
	x->t_send = s->t_send;
	x->t_first_token = s->t_first_token;
	x->t_last = s->t_last_token;
	x->t_done = s->t_done;
	x->error = s->error;
	x->http_status = s->http_status;
	if (s->n_event_t > 1) {
		x->gaps_ms = malloc((s->n_event_t - 1) * sizeof *x->gaps_ms);
		if (x->gaps_ms) {
			for (size_t i = 1; i < s->n_event_t; i++)
				x->gaps_ms[i - 1] = (double)(s->event_t[i] - s->event_t[i - 1]) / 1e6;
			x->n_gaps = s->n_event_t - 1;
		} else {
			c->oom = true;
		}
	}
	if (c->h && c->h->on_sample)
		c->h->on_sample(c->h->ud, x);
}

int bench_run_streams(struct bench *b, struct runner_stream *streams, size_t n_streams, struct bench_sample **samples,
		      size_t *n)
{
	return bench_run_streams_with(b, streams, n_streams, NULL, samples, n);
}

static int build_tramp(void *ud, struct runner_req *rq, int64_t now_ns)
{
	struct collect *c = ud;
	return c->h->build(c->h->ud, rq, now_ns);
}

int bench_run_streams_with(struct bench *b, struct runner_stream *streams, size_t n_streams,
			   const struct bench_hooks *h, struct bench_sample **samples, size_t *n)
{
	struct writer w = { .b = b, .cap = 4096 };
	w.q = malloc(w.cap * sizeof *w.q);
	if (!w.q)
		return -ENOMEM;
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	if (pthread_create(&w.thread, NULL, writer_main, &w) != 0) {
		free(w.q);
		return -EAGAIN;
	}
	struct collect c = { .h = h, .b = b, .v = *samples, .n = *n, .cap = *n, .w = &w };
	struct runner_opts o = {
		.url = b->url_api,
		.stream = b->cfg.stream,
		.threads = b->cfg.threads,
		.deadline_ns = clock_now_ns() + b->cfg.run_timeout_ms * 1000000LL,
		.connect_timeout_ms = b->cfg.connect_timeout_ms,
		.first_byte_timeout_ms = b->cfg.first_byte_timeout_ms,
		.stall_timeout_ms = b->cfg.stall_timeout_ms,
		.total_timeout_ms = b->cfg.total_timeout_ms,
		.keep_event_times = true,
		.keep_text = h && h->on_reply,
		.sink = sink,
		.ud = &c,
		.build = h && h->build ? build_tramp : NULL,
		.stop = h ? h->stop : NULL,
	};
	int rc = runner_run(&o, streams, n_streams);
	pthread_mutex_lock(&w.lock);
	w.closing = true;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(w.thread, NULL);
	if (rc == 0 && w.store_errors)
		rc = -EIO; /* a measured row was not stored: the run is incomplete, never "done" */
	if (rc == 0 && c.oom)
		rc = -ENOMEM; /* a summary short of a request would be wrong, not just smaller */
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	free(w.q);
	*samples = c.v;
	*n = c.n;
	return rc;
}

void bench_samples_free(struct bench_sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].gaps_ms);
	free(s);
}

/* ---- summaries ---- */

double bench_percentile_sorted(const double *v, size_t n, double pct) { return stats_percentile_sorted(v, n, pct); }
double bench_percentile(double *v, size_t n, double pct) { return stats_percentile(v, n, pct); }

double bench_client_ceiling(struct bench *b)
{
	double v = 0;
	if (store_selftest_events_per_s(b->store, &v) != 0)
		log_warn("could not read the client's ceiling from the selftest runs: %s", store_errmsg(b->store));
	return v;
}

int bench_level_summarise(const struct bench *b, const struct bench_sample *s, size_t n, int64_t level,
			  struct bench_level *L)
{
	memset(L, 0, sizeof *L);
	L->level = level;
	snprintf(L->fingerprint, sizeof L->fingerprint, "%s", session_fingerprint_hash(b->session));
	/* the level's measured requests, as the one definition of the figures (stats/level.h) reads them */
	struct level_request *rq = malloc((n ? n : 1) * sizeof *rq);
	size_t m = 0;
	for (size_t i = 0; rq && i < n; i++) {
		const struct bench_sample *x = &s[i];
		if (x->level != level || strcmp(x->phase, "measure") != 0)
			continue;
		rq[m++] = (struct level_request){
			.stream = x->stream, .prompt_tokens = x->prompt_tokens, .cached_tokens = x->cached_tokens,
			.completion_tokens = x->completion_tokens, .requested_tokens = x->requested_tokens,
			.sse_events = x->sse_events, .token_events = x->token_events, .t_intended = x->t_intended,
			.t_send = x->t_send, .t_first_token = x->t_first_token, .t_last = x->t_last, .t_done = x->t_done,
			.error = x->error, .followup = x->tag && strcmp(x->tag, "followup") == 0,
			.gaps_ms = x->gaps_ms, .n_gaps = x->n_gaps,
		};
	}
	struct level_rules rules = { .unique_prompts = b->cfg.unique_prompts, .ignore_eos = b->cfg.ignore_eos };
	struct level_figures F;
	int rc = rq ? level_figures_compute(rq, m, &rules, &F) : -ENOMEM;
	free(rq);
	if (rc) {
		L->valid = false;
		snprintf(L->invalid_reason, sizeof L->invalid_reason, "out of memory summarising the level");
		return -ENOMEM;
	}
	L->requests = F.requests;
	L->ok = F.ok;
	L->errors = F.errors;
	snprintf(L->error_classes, sizeof L->error_classes, "%s", F.error_classes);
	L->wall_s = F.wall_s;
	L->agg_tok_s = F.agg_tok_s;
	L->stream_tok_s_mean = F.stream_tok_s_mean;
	L->stream_tok_s_p50 = F.stream_tok_s_p50;
	L->ttft_p50_ms = F.ttft_p50_ms;
	L->ttft_p90_ms = F.ttft_p90_ms;
	L->ttft_p99_ms = F.ttft_p99_ms;
	L->tpot_ms_mean = F.tpot_ms_mean;
	L->itl_p50_ms = F.itl_p50_ms;
	L->itl_p99_ms = F.itl_p99_ms;
	L->gap_p50_ms = F.gap_p50_ms;
	L->gap_p99_ms = F.gap_p99_ms;
	L->tokens_per_event = F.tokens_per_event;
	L->prefill_tok_s = F.prefill_tok_s;
	L->prompt_tokens_mean = F.prompt_tokens_mean;
	L->short_streams = F.short_streams;
	L->missing_usage = F.missing_usage;
	L->cached_hits = F.cached_hits;
	L->events_per_s = F.events_per_s;
	L->valid = F.valid;
	snprintf(L->invalid_reason, sizeof L->invalid_reason, "%s", F.invalid_reason);
	double ceiling = bench_client_ceiling((struct bench *)b);
	L->headroom = ceiling > 0 && L->events_per_s > 0 ? ceiling / L->events_per_s : 0;
	return 0;
}

static void add_num(cJSON *o, const char *k, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *bench_level_json(const struct bench_level *L)
{
	cJSON *o = cJSON_CreateObject();
	add_num(o, "level", (double)L->level);
	add_num(o, "requests", (double)L->requests);
	add_num(o, "ok", (double)L->ok);
	add_num(o, "errors", (double)L->errors);
	cJSON_AddStringToObject(o, "error_classes", L->error_classes);
	add_num(o, "wall_s", L->wall_s);
	add_num(o, "aggregate_tok_s", L->agg_tok_s);
	add_num(o, "stream_tok_s_mean", L->stream_tok_s_mean);
	add_num(o, "stream_tok_s_p50", L->stream_tok_s_p50);
	add_num(o, "ttft_p50_ms", L->ttft_p50_ms);
	add_num(o, "ttft_p90_ms", L->ttft_p90_ms);
	add_num(o, "ttft_p99_ms", L->ttft_p99_ms);
	add_num(o, "tpot_ms_mean", L->tpot_ms_mean);
	add_num(o, "itl_p50_ms", L->itl_p50_ms);
	add_num(o, "itl_p99_ms", L->itl_p99_ms);
	add_num(o, "event_gap_p50_ms", L->gap_p50_ms);
	add_num(o, "event_gap_p99_ms", L->gap_p99_ms);
	add_num(o, "tokens_per_event", L->tokens_per_event);
	add_num(o, "prefill_tok_s_p50", L->prefill_tok_s);
	add_num(o, "prompt_tokens_mean", (double)L->prompt_tokens_mean);
	add_num(o, "short_streams", (double)L->short_streams);
	add_num(o, "missing_usage", (double)L->missing_usage);
	add_num(o, "cached_hits", (double)L->cached_hits);
	add_num(o, "events_per_s", L->events_per_s);
	add_num(o, "client_headroom", L->headroom);
	cJSON_AddBoolToObject(o, "valid", L->valid);
	cJSON_AddStringToObject(o, "invalid_reason", L->invalid_reason);
	cJSON_AddStringToObject(o, "fingerprint", L->fingerprint);
	if (L->repeat > 0)
		add_num(o, "repeat", (double)L->repeat);
	if (L->server_metrics)
		cJSON_AddItemToObject(o, "server_metrics", cJSON_Duplicate(L->server_metrics, true));
	if (L->has_slo) {
		cJSON *q = cJSON_AddObjectToObject(o, "slo");
		add_num(q, "scheduled", (double)L->slo_scheduled);
		add_num(q, "good", (double)L->slo_good);
		add_num(q, "attainment", L->slo_attainment);
		add_num(q, "attainment_low", L->slo_low);
		add_num(q, "attainment_high", L->slo_high);
		add_num(q, "goodput_rps", L->goodput_rps);
		cJSON_AddBoolToObject(q, "level_terms_met", L->slo_level_met);
		cJSON_AddStringToObject(q, "failed", L->slo_failed);
	}
	return o;
}

void bench_level_store(struct bench *b, const struct bench_level *L)
{
	cJSON *o = bench_level_json(L);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s || store_run_append_level(b->store, b->run_id, s) != 0)
		log_warn("could not store the level summary: %s", s ? store_errmsg(b->store) : "out of memory");
	free(s);
}
