/* run — see run.h.
 *
 * Threads: `concurrency` workers, each with its own http_client and one request
 * in flight (a request is graded by the worker that made it, so grading never
 * holds up another stream's bytes). Shared: the job queue and the store, each
 * behind a mutex; the grader is thread-safe. The work list is computed from the
 * rows already stored, the same way for a new run and a resumed one, so a
 * killed run loses at most the attempts in flight and never doubles a row
 * (UNIQUE(run, repeat_index, task_id, attempt) would refuse a second one). */
#include "eval/run.h"
#include "core/buf.h"
#include "text/reply.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/progress.h"
#include "grade/grade.h"
#include "eval/prompt.h"
#include "grade/preflight.h"
#include "grade/score.h"
#include "datasets/task.h"
#include "core/err.h"
#include "net/http.h"
#include "net/openai.h"
#include "net/stream.h"
#include "session/session.h"
#include "stats/stats.h"
#include "store/store.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READY_PROMPT "Write hello world."

struct job {
	int64_t repeat;
	const struct eval_task *task;
	int64_t next_attempt;    /* 1-based */
	int64_t last_attempt;    /* the job stops after this attempt */
};

/* api_error attempts are not results: besides the protocol's attempts, a task
 * may use this many more, each `resume` giving it up to `attempts` of them.
 * Recorded in the frozen configuration ("api_error_retries"). */
#define EVAL_API_ERROR_RETRIES 3

/* One server behind the condition: a condition's endpoint may list replicas of one
 * model ("http://a:8080,http://b:8080"), each greeted by its own session. */
#define EVAL_MAX_REPLICAS 16
struct replica {
	char base[1100];         /* base URL */
	char api[1200];          /* base URL + the API path */
	struct session *session; /* readiness, warm-up, fingerprint of this replica */
	int outstanding;         /* requests in flight now (q_lock) */
	int64_t sent;            /* requests sent so far (q_lock) */
	bool dead;               /* refused a connection: gets no more requests (q_lock) */
};

struct runner {
	const struct eval_protocol *p;
	const struct eval_condition *cond;
	const struct eval_run_opts *o;
	struct store *store;
	pthread_mutex_t store_lock;
	struct grader *grader;
	struct replica rep[EVAL_MAX_REPLICAS]; /* [0] is the condition's server; more when it lists replicas */
	int n_rep;
	struct eval_dataset *ds[EVAL_MAX_DATASETS];
	int n_ds;
	cJSON *excluded;         /* array of ids (borrowed from the frozen config) */
	int64_t api_error_retries; /* see EVAL_API_ERROR_RETRIES */
	int64_t run_id;
	enum openai_api api;
	struct job *jobs;
	size_t n_jobs, next_job;
	pthread_mutex_t q_lock;
	struct progress prog;
	struct eval_prompt *tmpl; /* the model's chat template, or NULL (chat, raw) */
	char tmpl_sha[65];       /* sha256 of the template source, "" when none */
	_Atomic int fatal;       /* a store error or a dead server: stop taking jobs (read without the locks) */
	char fatal_msg[512];
	int connect_streak;      /* connection failures in a row, all workers together (q_lock) */
	struct eval_shard shard; /* the slice of (task, repeat) pairs this process runs (n 0: all) */
};

/* This many connection failures in a row (requests and health probes of every
 * worker together, no success between them) mean the server is down: the run
 * stops instead of waiting out a health probe per task. */
#define DEAD_SERVER_STREAK 3

/* ---- small helpers --------------------------------------------------------- */

static bool is_excluded(const cJSON *excluded, const char *id)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, excluded)
		if (cJSON_IsString(e) && strcmp(e->valuestring, id) == 0)
			return true;
	return false;
}

/* ---- one request ----------------------------------------------------------- */

struct attempt {
	struct oai_stream s;
	bool done;
	struct score_loop *loop;
	double loop_stop;
	struct buf chunks;       /* "[r,c]," cumulative bytes of reasoning and content per token event */
	int64_t r_bytes, c_bytes;
	bool loop_stopped;
};

static void attempt_done(struct oai_stream *s, void *ud)
{
	(void)s;
	((struct attempt *)ud)->done = true;
}

static int attempt_token(struct oai_stream *s, const struct openai_chunk *c, void *ud)
{
	(void)s;
	struct attempt *a = ud;
	if (c->reasoning && c->reasoning_len) {
		a->r_bytes += (int64_t)c->reasoning_len;
		if (score_loop_feed(a->loop, c->reasoning, c->reasoning_len))
			return 0;
	}
	if (c->content && c->content_len) {
		a->c_bytes += (int64_t)c->content_len;
		if (score_loop_feed(a->loop, c->content, c->content_len))
			return 0;
	}
	if (buf_printf(&a->chunks, "%s[%lld,%lld]", a->chunks.len ? "," : "", (long long)a->r_bytes,
		       (long long)a->c_bytes)) {
	}
	if (a->loop_stop > 0 && score_loop_ratio(a->loop) >= a->loop_stop) {
		a->loop_stopped = true;
		return 1; /* closes the stream */
	}
	return 0;
}

/* The text sent for a user message: the model's own template rendered here,
 * or the message itself. Caller frees. */
static char *render_prompt(const struct runner *R, const char *user, char *err, size_t errlen)
{
	return R->tmpl ? eval_prompt_render(R->tmpl, user, err, errlen) : strdup(user);
}

/* The seed an attempt sends when the protocol sets sampling.seed: FNV-1a-64 of
 * "SEED/TASK/REPEAT/ATTEMPT", cut to 53 bits (exact as a JSON number); -1 when unset. */
static int64_t attempt_seed(const struct runner *R, const char *task, int64_t repeat, int64_t attempt)
{
	if (R->p->sample_seed < 0)
		return -1;
	char key[1200];
	int n = snprintf(key, sizeof key, "%lld/%s/%lld/%lld", (long long)R->p->sample_seed, task, (long long)repeat,
			 (long long)attempt);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof key ? (size_t)n : sizeof key - 1;
	return (int64_t)(hash_fnv1a64(key, len) & ((1ull << 53) - 1));
}

/* The body of one generation with the protocol's sampling and stops. prompt: the
 * user message, rendered here when the condition has a template; seed: -1 for none.
 * 0 or -errno. */
static int request_body(struct runner *R, const char *prompt, int64_t max_tokens, int64_t seed, struct buf *body)
{
	const char *stops[EVAL_MAX_STOPS + 1];
	for (int i = 0; i < R->p->n_stop; i++)
		stops[i] = R->p->stop[i];
	stops[R->p->n_stop] = NULL;
	char rerr[256];
	char *text = render_prompt(R, prompt, rerr, sizeof rerr);
	if (!text) {
		log_error("rendering the chat template failed: %s", rerr);
		return -EINVAL;
	}
	struct openai_request rq = {
		.api = R->api,
		.model = R->cond->model,
		.prompt = text,
		.max_tokens = max_tokens,
		.temperature = R->p->temperature,
		.top_p = R->p->top_p,
		.top_k = R->p->top_k,
		.seed = seed,
		.stream = true,
		.include_usage = true,
		.stop = R->p->n_stop ? stops : NULL,
	};
	int rc = openai_request_body(&rq, body);
	free(text);
	return rc;
}

/* The session's requests (readiness, warm-up): the readiness prompt as a task's. */
static int greet_body(void *ud, const char *phase, int64_t seq, int64_t max_tokens, char **body, size_t *len)
{
	(void)phase;
	(void)seq;
	struct buf b;
	buf_init(&b);
	int rc = request_body(ud, READY_PROMPT, max_tokens, -1, &b);
	if (rc) {
		buf_finish(&b);
		return rc;
	}
	*len = b.len;
	*body = buf_steal(&b);
	return *body ? 0 : -ENOMEM;
}

/* Sends one generation and waits for it. prompt: the user message. Returns 0 (the
 * outcome is in a), or -errno when it could not even be started. */
static int request_run(struct runner *R, struct http_client *c, const char *url, const char *prompt,
		       int64_t max_tokens, int64_t seed, double timeout_s, struct attempt *a)
{
	memset(a, 0, sizeof *a);
	buf_init(&a->chunks);
	a->loop = score_loop_create();
	a->loop_stop = R->p->loop_stop;
	if (!a->loop)
		return -ENOMEM;
	struct buf body;
	buf_init(&body);
	int rc = request_body(R, prompt, max_tokens, seed, &body);
	if (rc) {
		buf_finish(&body);
		return rc;
	}
	int64_t timeout_ms = (int64_t)(timeout_s * 1000);
	int64_t stall_ms = (int64_t)(R->p->stall_s * 1000);
	struct oai_stream_opts so = {
		.url = url,
		.body = body.data,
		.body_len = body.len,
		.stream = true,
		.keep_text = true,
		.connect_timeout_ms = 10000,
		.first_byte_timeout_ms = timeout_ms,
		.stall_timeout_ms = stall_ms < timeout_ms ? stall_ms : timeout_ms,
		.total_timeout_ms = timeout_ms,
		.on_token = attempt_token,
		.on_done = attempt_done,
		.ud = a,
	};
	rc = oai_stream_start(c, &a->s, &so);
	if (rc == 0)
		while (!a->done)
			http_client_run(c, 50000000LL);
	buf_finish(&body);
	return rc;
}

static void attempt_finish(struct attempt *a)
{
	oai_stream_finish(&a->s);
	score_loop_destroy(a->loop);
	buf_finish(&a->chunks);
}

/* ---- storing --------------------------------------------------------------- */

static void set_fatal(struct runner *R, const char *what)
{
	if (!R->fatal) {
		R->fatal = 1;
		snprintf(R->fatal_msg, sizeof R->fatal_msg, "%s: %s", what, store_errmsg(R->store));
	}
}

/* Stores the raw texts of an attempt; hex strings are "" when there was nothing. */
static int raw_put(struct runner *R, const struct attempt *a, char content_hex[65], char reasoning_hex[65],
		   char chunks_hex[65])
{
	content_hex[0] = reasoning_hex[0] = chunks_hex[0] = 0;
	int rc = 0;
	pthread_mutex_lock(&R->store_lock);
	/* content is stored even when empty: an empty reply is a fact worth keeping */
	rc = store_raw_put(R->store, a->s.content.data ? a->s.content.data : "", a->s.content.len, content_hex);
	if (!rc && a->s.reasoning.len)
		rc = store_raw_put(R->store, a->s.reasoning.data, a->s.reasoning.len, reasoning_hex);
	if (!rc && a->chunks.len) {
		struct buf j;
		buf_init(&j);
		if (buf_printf(&j, "[%s]", a->chunks.data) == 0)
			rc = store_raw_put(R->store, j.data, j.len, chunks_hex);
		buf_finish(&j);
	}
	if (rc)
		set_fatal(R, "storing raw text failed");
	pthread_mutex_unlock(&R->store_lock);
	return rc;
}

/* ---- health ---------------------------------------------------------------- */

/* A real generation that must return tokens (a health probe of replica i during the
 * run; not stored). */
static bool generation_ok(struct runner *R, struct http_client *c, int i, int64_t max_tokens, double timeout_s,
			  struct attempt *a)
{
	int rc = request_run(R, c, R->rep[i].api, READY_PROMPT, max_tokens, -1, timeout_s, a);
	return rc == 0 && !a->s.error &&
	       (a->s.completion_tokens > 0 || a->s.content.len > 0 || a->s.reasoning.len > 0);
}

static bool is_connect_error(const struct attempt *a)
{
	return a->s.error && strcmp(a->s.error, "connect") == 0;
}

/* The live replica with the fewest requests in flight (ties: the fewest sent, then
 * the first), counted as one more in flight; -1 when every replica is dead. */
static int replica_take(struct runner *R)
{
	pthread_mutex_lock(&R->q_lock);
	int best = -1;
	for (int i = 0; i < R->n_rep; i++) {
		const struct replica *p = &R->rep[i];
		if (p->dead)
			continue;
		if (best < 0 || p->outstanding < R->rep[best].outstanding ||
		    (p->outstanding == R->rep[best].outstanding && p->sent < R->rep[best].sent))
			best = i;
	}
	if (best >= 0) {
		R->rep[best].outstanding++;
		R->rep[best].sent++;
	}
	pthread_mutex_unlock(&R->q_lock);
	return best;
}

static void replica_put(struct runner *R, int i)
{
	pthread_mutex_lock(&R->q_lock);
	R->rep[i].outstanding--;
	pthread_mutex_unlock(&R->q_lock);
}

/* Counts a request's outcome on replica i toward the dead-server rule; true once
 * the run has been stopped (by this failure or by another worker's). One server:
 * DEAD_SERVER_STREAK connection failures in a row (every worker's requests and
 * probes) stop the run. Replicas: a refused connection marks that replica dead (its
 * attempts are api_error rows and are retried on the others); the run stops when
 * every replica is dead. */
static bool note_connect(struct runner *R, int i, const struct attempt *a)
{
	bool failed = is_connect_error(a);
	pthread_mutex_lock(&R->q_lock);
	R->connect_streak = failed ? R->connect_streak + 1 : 0;
	if (failed && R->n_rep > 1 && !R->rep[i].dead) {
		R->rep[i].dead = true;
		log_warn("replica %s refused a connection (%s): it gets no more requests; its attempts are retried on "
			 "the other replicas", R->rep[i].base, a->s.error_detail);
	}
	int live = 0;
	for (int k = 0; k < R->n_rep; k++)
		live += !R->rep[k].dead;
	bool gone = R->n_rep > 1 ? live == 0 : failed && R->connect_streak >= DEAD_SERVER_STREAK;
	if (gone && !R->fatal) {
		snprintf(R->fatal_msg, sizeof R->fatal_msg,
			 "the server at %s is not running: %d connections in a row failed (%s); the failed "
			 "requests are stored as api_error rows, never as model failures, and the tasks not run yet "
			 "have no rows: start the server again",
			 R->cond->endpoint, R->connect_streak, a->s.error_detail);
		R->fatal = 1;
	}
	bool stop = R->fatal;
	pthread_mutex_unlock(&R->q_lock);
	return stop;
}

/* After a connection failure on replica i: probe (bounded, as health_probe) until
 * it generates again. true when the run has stopped. Replicas get one probe: the
 * others carry the work while one is down. */
static bool server_gone(struct runner *R, struct http_client *c, int i, const struct attempt *failed)
{
	if (note_connect(R, i, failed))
		return true;
	double timeout = R->p->timeout_s < 30 ? R->p->timeout_s : 30;
	int probes = R->n_rep > 1 ? 1 : 4;
	for (int k = 0; k < probes && !R->rep[i].dead; k++) {
		struct attempt a;
		bool ok = generation_ok(R, c, i, 8, timeout, &a);
		bool stop = note_connect(R, i, &a);
		attempt_finish(&a);
		if (stop)
			return true;
		if (ok || R->n_rep > 1)
			return false;
		clock_sleep_ns((int64_t)(1 << k) * 1000000000LL);
	}
	return R->fatal;
}

/* After an API error on replica i: wait (bounded) until it generates again (one
 * probe when there are replicas: a refused one is marked dead). */
static void health_probe(struct runner *R, struct http_client *c, int i)
{
	double timeout = R->p->timeout_s < 30 ? R->p->timeout_s : 30;
	int probes = R->n_rep > 1 ? 1 : 4;
	for (int k = 0; k < probes && !R->fatal && !R->rep[i].dead; k++) {
		struct attempt a;
		bool ok = generation_ok(R, c, i, 8, timeout, &a);
		bool stop = note_connect(R, i, &a); /* a server that died mid-stream refuses the probe */
		if (stop || ok || R->n_rep > 1) {
			attempt_finish(&a);
			return;
		}
		log_warn("health probe %d: the server does not generate (%s); waiting %d s", k + 1,
			 a.s.error ? a.s.error : "no tokens", 1 << k);
		attempt_finish(&a);
		clock_sleep_ns((int64_t)(1 << k) * 1000000000LL);
	}
}

/* ---- one job ---------------------------------------------------------------- */

static char *detail_json(const struct attempt *a, const struct eval_task *t, const struct grade_result *g,
			 const char *chunks_hex, int64_t max_tokens, const char *replica)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if (replica) /* which replica served the attempt (a condition with several) */
		cJSON_AddStringToObject(o, "replica", replica);
	if (g) {
		cJSON_AddStringToObject(o, "grade", grade_status_name(g->status));
		cJSON_AddStringToObject(o, "detail", g->detail);
		/* extracted answers feed the majority vote; code has none to vote on */
		if (g->answer[0] && (t->grader == EVAL_GRADER_NUMERIC || t->grader == EVAL_GRADER_CHOICE))
			cJSON_AddStringToObject(o, "answer", g->answer);
		cJSON_AddBoolToObject(o, "timed_out", g->timed_out);
		cJSON_AddBoolToObject(o, "reran_alone", g->reran_alone);
		cJSON_AddNumberToObject(o, "grade_seconds", g->seconds);
	}
	if (a->s.error) {
		cJSON_AddStringToObject(o, "api_error_detail", a->s.error_detail);
		cJSON_AddNumberToObject(o, "http_status", a->s.http_status);
	}
	cJSON_AddNumberToObject(o, "max_tokens", (double)max_tokens);
	cJSON_AddNumberToObject(o, "sse_events", (double)a->s.sse_events);
	cJSON_AddNumberToObject(o, "token_events", (double)a->s.token_events);
	cJSON_AddNumberToObject(o, "content_bytes", (double)a->s.content.len);
	cJSON_AddNumberToObject(o, "reasoning_bytes", (double)a->s.reasoning.len);
	if (chunks_hex && *chunks_hex)
		cJSON_AddStringToObject(o, "chunks_sha256", chunks_hex);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* Returns how many attempts ended in an API error. */
static int job_run(struct runner *R, struct http_client *c, const struct job *j)
{
	int api_errors = 0;
	const struct eval_task *t = j->task;
	int64_t max_tokens = eval_protocol_max_tokens(R->p, t->reasoning);
	for (int64_t attempt = j->next_attempt; attempt <= j->last_attempt && !R->fatal; attempt++) {
		struct attempt a;
		int ri = replica_take(R);
		if (ri < 0)
			break; /* every replica is dead: the run has stopped (note_connect) */
		int rc = request_run(R, c, R->rep[ri].api, t->prompt, max_tokens, attempt_seed(R, t->id, j->repeat, attempt),
				     R->p->timeout_s, &a);
		replica_put(R, ri);
		if (rc) {
			a.s.error = "client";
			snprintf(a.s.error_detail, sizeof a.s.error_detail, "could not start the request: %s",
				 strerror(-rc));
		}
		/* A failed connection is probed at once: when the server is gone the run
		 * stops after this row (an api_error) instead of probing per task. */
		bool probed = false;
		if (is_connect_error(&a)) {
			(void)server_gone(R, c, ri, &a);
			probed = true;
		} else if (rc == 0) {
			(void)note_connect(R, ri, &a);
		}
		char chex[65], rhex[65], khex[65];
		if (raw_put(R, &a, chex, rhex, khex) != 0) {
			attempt_finish(&a);
			return api_errors;
		}
		double seconds = a.s.t_done > a.s.t_send ? (double)(a.s.t_done - a.s.t_send) / 1e9 : 0;
		double loop_pct = score_loop_final(a.loop);
		struct store_eval_row w = {
			.run_id = R->run_id,
			.repeat = j->repeat,
			.attempt = attempt,
			.task_id = t->id,
			.prompt_tokens = a.s.prompt_tokens,
			.completion_tokens = a.s.completion_tokens,
			.seconds = seconds,
			.loop_pct = loop_pct,
			.finish_reason = a.s.finish_reason,
			.raw_sha = chex,
			.reasoning_sha = rhex,
		};
		struct grade_result g;
		bool graded = false;
		if (a.s.error) {
			w.api_error = a.s.error;
			w.failure_class = "api_error";
		} else {
			/* the raw text is stored; now grade it */
			const char *text = a.s.content.data ? a.s.content.data : "";
			if (grade_completion(R->grader, t, text, &g) != 0) {
				memset(&g, 0, sizeof g);
				g.status = GRADE_ENVIRONMENT;
				snprintf(g.detail, sizeof g.detail, "out of memory while grading");
			}
			graded = true;
			w.truncated = strcmp(a.s.finish_reason, "length") == 0;
			w.has_code = g.has_code;
			w.early_stop = a.loop_stopped ? "loop" : NULL;
			struct score_facts f = {
				.passed = g.status == GRADE_PASS,
				.environment = g.status == GRADE_ENVIRONMENT,
				.early_stop_loop = a.loop_stopped,
				.truncated = w.truncated,
				.loop_pct = loop_pct,
				/* the guard off still classes a reply that looped: 50% as the essay found */
				.loop_threshold = R->p->loop_stop > 0 ? R->p->loop_stop : 50,
			};
			enum score_class cls = score_classify(&f);
			w.pass = cls == SCORE_PASS;
			w.failure_class = score_class_name(cls);
		}
		char *dj = detail_json(&a, t, graded ? &g : NULL, khex, max_tokens, R->n_rep > 1 ? R->rep[ri].base : NULL);
		w.detail_json = dj;
		pthread_mutex_lock(&R->store_lock);
		/* the store is shared by the workers: one insert at a time */
		if (store_eval_insert(R->store, &w) != 0)
			set_fatal(R, "storing a row failed");
		pthread_mutex_unlock(&R->store_lock);
		free(dj);
		bool api_error = a.s.error != NULL;
		api_errors += api_error;
		if (api_error)
			log_info("%s repeat %lld attempt %lld: api_error %s (%s)", t->id, (long long)j->repeat,
				 (long long)attempt, a.s.error, a.s.error_detail);
		attempt_finish(&a);
		if (!api_error)
			break;
		if (attempt < j->last_attempt && !probed)
			health_probe(R, c, ri);
	}
	return api_errors;
}

static void *worker_main(void *arg)
{
	struct runner *R = arg;
	struct http_client *c = http_client_create();
	if (!c) {
		pthread_mutex_lock(&R->q_lock);
		R->fatal = 1;
		snprintf(R->fatal_msg, sizeof R->fatal_msg, "cannot create an HTTP client");
		pthread_mutex_unlock(&R->q_lock);
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&R->q_lock);
		const struct job *j = !R->fatal && R->next_job < R->n_jobs ? &R->jobs[R->next_job++] : NULL;
		pthread_mutex_unlock(&R->q_lock);
		if (!j)
			break;
		int api_errors = job_run(R, c, j);
		pthread_mutex_lock(&R->q_lock);
		progress_step(&R->prog, 1, api_errors);
		pthread_mutex_unlock(&R->q_lock);
	}
	http_client_destroy(c);
	return NULL;
}

/* ---- work list -------------------------------------------------------------- */

/* Jobs for every (repeat, task) without a final row, in the frozen order. */
static int build_jobs(struct runner *R, size_t *already_done)
{
	size_t n_tasks = 0;
	for (int i = 0; i < R->n_ds; i++)
		n_tasks += eval_dataset_count(R->ds[i]);
	const struct eval_task **order = calloc(n_tasks ? n_tasks : 1, sizeof *order);
	R->jobs = calloc(n_tasks * (size_t)R->p->repeats + 1, sizeof *R->jobs);
	if (!order || !R->jobs) {
		free(order);
		return -ENOMEM;
	}
	size_t k = 0;
	for (int i = 0; i < R->n_ds; i++)
		for (size_t t = 0; t < eval_dataset_count(R->ds[i]); t++)
			if (!is_excluded(R->excluded, eval_dataset_task(R->ds[i], t)->id))
				order[k++] = eval_dataset_task(R->ds[i], t);
	n_tasks = k;
	*already_done = 0;
	for (int64_t r = 0; r < R->p->repeats; r++) {
		eval_tasks_shuffle(order, n_tasks, R->p->shuffle_seed, r);
		for (size_t i = 0; i < n_tasks; i++) {
			int64_t max_attempt = 0, finals = 0;
			if (!eval_shard_has(&R->shard, order[i]->id, r))
				continue;
			if (store_eval_task_progress(R->store, R->run_id, r, order[i]->id, &max_attempt, &finals) != 0) {
				free(order);
				return -EIO;
			}
			/* a task whose attempts all ended in api_error has no result yet: a resume
			 * retries it, up to attempts + api_error_retries in all */
			int64_t cap = R->p->attempts + R->api_error_retries;
			if (finals > 0 || max_attempt >= cap) {
				(*already_done)++;
				continue;
			}
			int64_t last = max_attempt < R->p->attempts ? R->p->attempts : max_attempt + R->p->attempts;
			R->jobs[R->n_jobs++] = (struct job){r, order[i], max_attempt + 1, last < cap ? last : cap};
		}
	}
	free(order);
	return 0;
}

/* ---- run setup ---------------------------------------------------------------- */

/* The server's fingerprint now (session_fingerprint; its model list must answer),
 * borrowed from the first replica's session. Every other replica's must name the
 * same model (session_fingerprint_model_diff): otherwise NULL with *refused set and
 * err naming the replica and the field. */
static const char *server_fingerprint(struct runner *R, bool *refused, char *err, size_t errlen)
{
	*refused = false;
	for (int i = 0; i < R->n_rep; i++) {
		int rc = session_fingerprint(R->rep[i].session, NULL, err, errlen);
		if (rc == -ENOMEM)
			err_set(err, errlen, "out of memory while taking the server's fingerprint");
		if (rc)
			return NULL;
		if (i == 0)
			continue;
		char field[256];
		int d = session_fingerprint_model_diff(session_fingerprint_json(R->rep[0].session),
						       session_fingerprint_json(R->rep[i].session), field, sizeof field);
		if (d == -ENOMEM) {
			err_set(err, errlen, "out of memory while comparing the replicas' fingerprints");
			return NULL;
		}
		if (d != 0) {
			*refused = true;
			err_fail(err, errlen,
				 "replica %d (%s) does not serve what replica 1 (%s) serves: their fingerprints differ in %s; "
				 "the replicas behind one condition must serve one model with one configuration (check the "
				 "model file and server options, or run them as separate conditions)",
				 i + 1, R->rep[i].base, R->rep[0].base, d == 1 ? field : "their form (not JSON objects)");
			return NULL;
		}
	}
	return session_fingerprint_json(R->rep[0].session);
}

/* Splits the condition's endpoint ("URL" or "URL,URL,...": replicas of one model)
 * into R->rep and greets each with its own session. */
static int replicas_init(struct runner *R, char *err, size_t errlen)
{
	const char *e = R->cond->endpoint;
	for (;;) {
		const char *comma = strchr(e, ',');
		size_t len = comma ? (size_t)(comma - e) : strlen(e);
		if (R->n_rep == EVAL_MAX_REPLICAS)
			return err_fail(err, errlen, "--url lists more than %d replicas", EVAL_MAX_REPLICAS);
		struct replica *p = &R->rep[R->n_rep];
		while (len > 8 && e[len - 1] == '/')
			len--;
		const char *path = openai_api_path(R->api);
		if (len == 0 || len + strlen(path) >= sizeof p->base ||
		    (strncmp(e, "http://", 7) != 0 && strncmp(e, "https://", 8) != 0))
			return err_fail(err, errlen,
					"condition \"%s\": replica %d of \"%s\" is not a URL; give replicas as "
					"http://HOST:PORT,http://HOST:PORT with no spaces",
					R->cond->name, R->n_rep + 1, R->cond->endpoint);
		memcpy(p->base, e, len);
		p->base[len] = 0;
		memcpy(p->api, e, len);
		memcpy(p->api + len, path, strlen(path) + 1);
		for (int k = 0; k < R->n_rep; k++)
			if (strcmp(R->rep[k].base, p->base) == 0)
				return err_fail(err, errlen, "condition \"%s\": replica %s is listed twice", R->cond->name,
						p->base);
		struct session_opts so = { .url = p->base, .api = R->api, .stream = true,
					   .stall_timeout_ms = (int64_t)(R->p->stall_s * 1000), .tag = "eval",
					   .body = greet_body, .ud = R };
		p->session = session_create(&so);
		if (!p->session)
			return err_fail(err, errlen, "out of memory");
		R->n_rep++;
		if (!comma)
			break;
		e = comma + 1;
	}
	if (R->n_rep == 0)
		return err_fail(err, errlen, "condition \"%s\" has no endpoint", R->cond->name);
	return 0;
}

/* Attaches every replica's session to the run (their greetings are stored). */
static int replicas_attach(struct runner *R, char *err, size_t errlen)
{
	int rc = 0;
	for (int i = 0; i < R->n_rep && rc == 0; i++)
		rc = session_attach(R->rep[i].session, R->store, R->run_id, err, errlen);
	return rc;
}

static int open_datasets(struct runner *R, char *err, size_t errlen)
{
	for (int i = 0; i < R->p->n_datasets; i++) {
		R->ds[i] = eval_dataset_load(R->p->datasets[i], err, errlen);
		if (!R->ds[i])
			return -EINVAL;
		R->n_ds = i + 1;
		for (int k = 0; k < i; k++)
			for (size_t t = 0; t < eval_dataset_count(R->ds[i]); t++)
				if (eval_dataset_find(R->ds[k], eval_dataset_task(R->ds[i], t)->id))
					return err_fail(err, errlen, "task id \"%s\" is in both %s and %s; ids must be unique across a run's datasets",
						    eval_dataset_task(R->ds[i], t)->id, R->p->datasets[k], R->p->datasets[i]);
	}
	return 0;
}

static int runner_init(struct runner *R, const struct eval_protocol *p, int cond, const struct eval_run_opts *o,
		       char *err, size_t errlen)
{
	memset(R, 0, sizeof *R);
	R->p = p;
	R->cond = &p->conditions[cond];
	R->o = o;
	R->api_error_retries = EVAL_API_ERROR_RETRIES;
	R->shard = o->shard;
	pthread_mutex_init(&R->store_lock, NULL);
	pthread_mutex_init(&R->q_lock, NULL);
	const char *src = R->cond->template_source;
	if (strcmp(src, "chat") == 0) {
		R->api = OPENAI_CHAT;
	} else if (strcmp(src, "raw") == 0) {
		R->api = OPENAI_COMPLETIONS;
	} else {
		R->api = OPENAI_COMPLETIONS;
		char perr[768];
		R->tmpl = eval_prompt_load(src, R->cond->template_path, perr, sizeof perr);
		if (!R->tmpl)
			return err_fail(err, errlen, "condition \"%s\": %s", R->cond->name, perr);
		snprintf(R->tmpl_sha, sizeof R->tmpl_sha, "%s", eval_prompt_sha256(R->tmpl));
		if (eval_prompt_starts_with_bos(R->tmpl))
			log_warn("condition \"%s\": the rendered prompt starts with the BOS token; a server that adds BOS "
				 "itself doubles it (compare prompt_tokens with the template's token count)",
				 R->cond->name);
	}
	int rc = replicas_init(R, err, errlen);
	if (rc)
		return rc;
	rc = open_datasets(R, err, errlen);
	if (rc)
		return rc;
	R->store = store_open(o->db_path ? o->db_path : STORE_DEFAULT_PATH, err, errlen);
	if (!R->store)
		return -EIO;
	R->grader = grader_create(o->harness_dir, NULL);
	if (!R->grader)
		return err_fail(err, errlen, "out of memory");
	if (grader_sandbox_problem(R->grader))
		log_warn("%s: code tasks will be graded as environment failures", grader_sandbox_problem(R->grader));
	return 0;
}

static void runner_finish(struct runner *R)
{
	for (int i = 0; i < R->n_rep; i++)
		session_destroy(R->rep[i].session);
	eval_prompt_destroy(R->tmpl);
	store_close(R->store);
	grader_destroy(R->grader);
	for (int i = 0; i < R->n_ds; i++)
		eval_dataset_destroy(R->ds[i]);
	free(R->jobs);
	pthread_mutex_destroy(&R->store_lock);
	pthread_mutex_destroy(&R->q_lock);
}

static void print_audit(struct runner *R, FILE *out)
{
	if (!out)
		return;
	const struct eval_protocol *p = R->p;
	fprintf(out, "run %lld: condition %s, model %s at %s\n", (long long)R->run_id, R->cond->name, R->cond->model,
		R->rep[0].api);
	if (R->n_rep > 1) {
		fprintf(out, "  replicas:");
		for (int i = 0; i < R->n_rep; i++)
			fprintf(out, " %s", R->rep[i].base);
		fprintf(out, " (least outstanding requests; fingerprints checked equal)\n");
	}
	fprintf(out, "  template: %s%s%s (%s%s%s)\n", R->cond->template_source, R->cond->template_path ? " " : "",
		R->cond->template_path ? R->cond->template_path : "",
		R->api == OPENAI_CHAT ? "the server applies its own chat template"
		: R->tmpl	      ? "rendered here, sent raw to /v1/completions, sha256 "
				      : "prompt sent as is",
		R->tmpl ? R->tmpl_sha : "", "");
	fprintf(out, "  sampling: temperature %g, top_p %g, top_k %lld; max_tokens %lld (reasoning tasks %lld)\n",
		p->temperature, p->top_p, (long long)p->top_k, (long long)p->max_tokens,
		(long long)p->reasoning_max_tokens);
	if (p->sample_seed >= 0)
		fprintf(out, "  seeded sampling: each attempt's seed from %lld, task, repeat and attempt\n",
			(long long)p->sample_seed);
	fprintf(out, "  stop:");
	for (int i = 0; i < p->n_stop; i++)
		fprintf(out, " \"%s\"", p->stop[i]);
	fprintf(out, "%s; tools: none\n", p->n_stop ? "" : " none");
	fprintf(out, "  repeats %lld, concurrency %lld, attempts %lld, timeout %g s, stall %g s, seed %lld, loop stop %g%%\n",
		(long long)p->repeats, (long long)p->concurrency, (long long)p->attempts, p->timeout_s, p->stall_s,
		(long long)p->shuffle_seed, p->loop_stop);
}

/* The audit as stored in runs.summary_json: what decides whether a score can be
 * trusted (essay: grep a harness for template, max_tokens, stop= and tools). */
static void store_audit(struct runner *R)
{
	const struct eval_protocol *p = R->p;
	cJSON *o = cJSON_CreateObject();
	cJSON *a = cJSON_AddObjectToObject(o, "audit");
	cJSON_AddStringToObject(a, "api", openai_api_path(R->api));
	cJSON_AddStringToObject(a, "template_source", R->cond->template_source);
	if (R->tmpl)
		cJSON_AddStringToObject(a, "template_sha256", R->tmpl_sha);
	cJSON_AddNumberToObject(a, "max_tokens", (double)p->max_tokens);
	cJSON_AddNumberToObject(a, "reasoning_max_tokens", (double)p->reasoning_max_tokens);
	cJSON *st = cJSON_AddArrayToObject(a, "stop");
	for (int i = 0; i < p->n_stop; i++)
		cJSON_AddItemToArray(st, cJSON_CreateString(p->stop[i]));
	cJSON_AddArrayToObject(a, "tools");
	cJSON_AddNumberToObject(a, "temperature", p->temperature);
	cJSON_AddNumberToObject(a, "top_p", p->top_p);
	cJSON_AddNumberToObject(a, "top_k", (double)p->top_k);
	cJSON_AddBoolToObject(a, "greedy", p->temperature == 0);
	const char *sb = grader_sandbox_problem(R->grader);
	cJSON_AddStringToObject(a, "sandbox", sb ? sb : "bubblewrap");
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	pthread_mutex_lock(&R->store_lock);
	if (text && store_run_set_summary(R->store, R->run_id, text) != 0)
		log_warn("could not store the audit: %s", store_errmsg(R->store));
	pthread_mutex_unlock(&R->store_lock);
	free(text);
}

/* The shard spec stored with a sharded run (summary_json.shard: {k, n}), so that
 * a resume keeps the slice and a merge knows N. Not part of the configuration. */
static int store_shard(struct runner *R, char *err, size_t errlen)
{
	if (R->shard.n <= 0)
		return 0;
	char text[96];
	snprintf(text, sizeof text, "{\"shard\":{\"k\":%lld,\"n\":%lld}}", (long long)R->shard.k,
		 (long long)R->shard.n);
	int rc;
	pthread_mutex_lock(&R->store_lock);
	rc = store_run_set_summary(R->store, R->run_id, text);
	pthread_mutex_unlock(&R->store_lock);
	return rc ? err_fail(err, errlen, "could not store the shard of run %lld: %s", (long long)R->run_id,
			     store_errmsg(R->store))
		  : 0;
}

/* Host facts stored with the run (session/'s, as sixi-bench's) and what grading
 * depends on. Caller frees. */
static char *host_facts(struct runner *R, char *memwarn, size_t memwarnlen)
{
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "grader_python", grader_python(R->grader));
	const char *sb = grader_sandbox_problem(R->grader);
	cJSON_AddStringToObject(extra, "sandbox", sb ? sb : "bubblewrap");
	char *s = extra ? session_host_facts(R->rep[0].session, extra, memwarn, memwarnlen) : NULL;
	cJSON_Delete(extra);
	return s;
}

/* Readiness (real generation) and two warm-ups, through the session (as sixi-bench). */
static int warm_up(struct runner *R, char *err, size_t errlen)
{
	double ready_s = R->o->ready_timeout_s > 0 ? R->o->ready_timeout_s : 300;
	struct session_ready r = {
		.deadline_ms = (int64_t)(ready_s * 1000),
		.max_tokens = 40,
		.attempt_timeout_ms = (int64_t)(R->p->timeout_s * 1000),
		.hint = "check it, then resume the run (the readiness requests are stored apart, phase 'ready')",
	};
	int rc = 0;
	for (int i = 0; i < R->n_rep && rc == 0; i++) {
		rc = session_wait_ready(R->rep[i].session, &r, err, errlen);
		if (rc == 0)
			rc = session_warmup(R->rep[i].session, 2, 40, (int64_t)(R->p->timeout_s * 1000));
		if (rc && rc != -ETIMEDOUT)
			err_set(err, errlen, "%s: the readiness or warm-up request could not be sent: %s", R->rep[i].api,
				strerror(-rc));
	}
	return rc;
}

/* Sends one prompt through the chat endpoint and through raw /v1/completions;
 * warns when chat content is empty while tokens were generated. */
static void parser_probe(struct runner *R, struct http_client *c)
{
	if (R->api != OPENAI_CHAT)
		return;
	const char *prompt = "What is 2 + 3? Reply with the number.";
	int64_t max_tokens = R->p->max_tokens < 1024 ? R->p->max_tokens : 1024;
	struct attempt chat, raw;
	char raw_url[1200];
	int rc1 = request_run(R, c, R->rep[0].api, prompt, max_tokens, -1, R->p->timeout_s, &chat);
	R->api = OPENAI_COMPLETIONS;
	snprintf(raw_url, sizeof raw_url, "%s%s", R->rep[0].base, openai_api_path(R->api));
	int rc2 = request_run(R, c, raw_url, prompt, max_tokens, -1, R->p->timeout_s, &raw);
	R->api = OPENAI_CHAT;
	cJSON *o = cJSON_CreateObject();
	cJSON *pr = cJSON_AddObjectToObject(o, "parser_probe");
	bool empty = rc1 == 0 && !chat.s.error && chat.s.content.len == 0 &&
		     (chat.s.completion_tokens > 0 || chat.s.reasoning.len > 0);
	cJSON_AddNumberToObject(pr, "chat_content_bytes", (double)chat.s.content.len);
	cJSON_AddNumberToObject(pr, "chat_reasoning_bytes", (double)chat.s.reasoning.len);
	cJSON_AddNumberToObject(pr, "chat_completion_tokens", (double)chat.s.completion_tokens);
	cJSON_AddStringToObject(pr, "chat_finish_reason", chat.s.finish_reason);
	cJSON_AddNumberToObject(pr, "raw_text_bytes", rc2 == 0 ? (double)raw.s.content.len : -1);
	const char *after = rc2 == 0 && raw.s.content.data ? text_after_reasoning(raw.s.content.data) : "";
	cJSON_AddNumberToObject(pr, "raw_answer_bytes", (double)strlen(after));
	cJSON_AddBoolToObject(pr, "chat_content_empty", empty);
	if (chat.s.error)
		cJSON_AddStringToObject(pr, "chat_error", chat.s.error);
	if (raw.s.error)
		cJSON_AddStringToObject(pr, "raw_error", raw.s.error);
	if (empty) {
		log_warn("parser-bypass probe: the chat endpoint returned empty content while generating %lld tokens "
			 "(%zu bytes of reasoning)%s; its reasoning parser may be eating the answer. Use a template "
			 "source (raw /v1/completions) for this server.",
			 (long long)chat.s.completion_tokens, chat.s.reasoning.len,
			 *after ? ", while raw /v1/completions returned an answer" : "");
		if (R->o->out)
			fprintf(R->o->out, "WARNING: parser-bypass probe: chat content is empty while %lld tokens were "
				"generated\n", (long long)chat.s.completion_tokens);
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	pthread_mutex_lock(&R->store_lock);
	if (s && store_run_set_summary(R->store, R->run_id, s) != 0)
		log_warn("could not store the probe result: %s", store_errmsg(R->store));
	pthread_mutex_unlock(&R->store_lock);
	free(s);
	attempt_finish(&chat);
	attempt_finish(&raw);
}

/* Everything after the run row exists: warm-up, probe, jobs, summary. */
/* The work list from the stored rows; 0 or an error in err. */
static int runner_plan(struct runner *R, char *err, size_t errlen)
{
	size_t done = 0;
	if (build_jobs(R, &done) != 0)
		return err_fail(err, errlen, "reading the stored rows failed: %s", store_errmsg(R->store));
	if (R->o->out && done)
		fprintf(R->o->out, "%zu task runs already complete, %zu to do\n", done, R->n_jobs);
	return 0;
}

/* After runner_plan: warm-up, probe, the jobs, and the run marked done. */
static int runner_execute(struct runner *R, bool probe, char *err, size_t errlen)
{
	int rc = 0;
	if (R->n_jobs) {
		struct http_client *c = http_client_create();
		if (!c)
			return err_fail(err, errlen, "cannot create an HTTP client");
		rc = warm_up(R, err, errlen);
		if (rc == 0 && probe)
			parser_probe(R, c);
		http_client_destroy(c);
		if (rc)
			return rc;
	}
	progress_init(&R->prog, R->o->out ? R->o->out : stderr, "eval", (int64_t)R->n_jobs);
	int64_t nthreads = R->p->concurrency;
	pthread_t th[1024];
	int64_t started = 0;
	for (; started < nthreads; started++)
		if (pthread_create(&th[started], NULL, worker_main, R) != 0)
			break;
	if (started == 0)
		return err_fail(err, errlen, "cannot start worker threads");
	for (int64_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (R->o->out)
		progress_finish(&R->prog);
	if (R->fatal)
		return err_fail(err, errlen, "%s; the run can be resumed with `sixi-eval resume %lld`", R->fatal_msg,
			    (long long)R->run_id);
	if (store_run_finish(R->store, R->run_id, "done") != 0)
		return err_fail(err, errlen, "could not mark the run done: %s", store_errmsg(R->store));
	return 0;
}

static cJSON *frozen_config(struct runner *R, int cond, const char *fingerprint, const cJSON *excluded)
{
	char *canon = eval_protocol_canonical(R->p, cond);
	cJSON *o = cJSON_CreateObject();
	cJSON *proto = canon ? cJSON_Parse(canon) : NULL;
	free(canon);
	if (!o || !proto) {
		cJSON_Delete(o);
		cJSON_Delete(proto);
		return NULL;
	}
	cJSON_AddItemToObject(o, "protocol", proto);
	cJSON_AddStringToObject(o, "condition", R->cond->name);
	cJSON *ds = cJSON_AddArrayToObject(o, "datasets");
	for (int i = 0; i < R->n_ds; i++) {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "path", eval_dataset_path(R->ds[i]));
		cJSON_AddStringToObject(d, "sha256", eval_dataset_sha256(R->ds[i]));
		cJSON_AddItemToArray(ds, d);
	}
	cJSON_AddItemToObject(o, "excluded", cJSON_Duplicate(excluded, 1));
	cJSON_AddNumberToObject(o, "api_error_retries", (double)R->api_error_retries);
	/* the grader's CPU limits, scaled from the references preflight measured */
	cJSON *limits = grader_limits_json(R->grader);
	if (!limits) {
		cJSON_Delete(o);
		return NULL; /* a run is not stored without its limits */
	}
	cJSON_AddItemToObject(o, "grader_limits", limits);
	cJSON *fp = cJSON_Parse(fingerprint);
	cJSON_AddItemToObject(o, "server_fingerprint", fp ? fp : cJSON_CreateNull());
	cJSON_AddStringToObject(o, "api", openai_api_path(R->api));
	if (R->tmpl_sha[0])
		cJSON_AddStringToObject(o, "template_sha256", R->tmpl_sha);
	else
		cJSON_AddNullToObject(o, "template_sha256");
	cJSON_AddStringToObject(o, "order", "tasks sorted by id, Fisher-Yates with splitmix64 from shuffle_seed and repeat");
	/* the order itself, so that a report can show it was not id order */
	size_t n = 0;
	for (int i = 0; i < R->n_ds; i++)
		n += eval_dataset_count(R->ds[i]);
	const struct eval_task **t = calloc(n ? n : 1, sizeof *t);
	cJSON *orders = cJSON_AddArrayToObject(o, "task_order");
	if (t) {
		size_t k = 0;
		for (int i = 0; i < R->n_ds; i++)
			for (size_t j = 0; j < eval_dataset_count(R->ds[i]); j++)
				if (!is_excluded(excluded, eval_dataset_task(R->ds[i], j)->id))
					t[k++] = eval_dataset_task(R->ds[i], j);
		for (int64_t r = 0; r < R->p->repeats; r++) {
			eval_tasks_shuffle(t, k, R->p->shuffle_seed, r);
			cJSON *one = cJSON_CreateArray();
			for (size_t j = 0; j < k; j++)
				cJSON_AddItemToArray(one, cJSON_CreateString(t[j]->id));
			cJSON_AddItemToArray(orders, one);
		}
		free(t);
	}
	return o;
}

int eval_power_plan(const struct eval_protocol *p, size_t n_tasks, double gap, double baseline,
		    struct eval_power_plan *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (baseline <= 0)
		baseline = 0.5 - gap / 2; /* centred on 50 %: the largest variance, the most attempts */
	double p2 = baseline + gap;
	if (!(gap > 0 && gap < 1) || !(baseline > 0 && baseline < 1) || !(p2 > 0 && p2 < 1))
		return err_fail(err, errlen,
			    "a gap of %g points from a pass rate of %g %% is out of range: both pass rates must lie "
			    "strictly between 0 and 100 %%",
			    gap * 100, baseline * 100);
	out->gap = gap;
	out->baseline = baseline;
	out->alpha = p->alpha > 0 && p->alpha < 1 ? p->alpha : 0.05;
	out->power = 0.8;
	out->two_sided = !p->alternative || strcmp(p->alternative, "two-sided") == 0;
	struct stats_power pw;
	if (stats_power_two_prop(baseline, p2, out->alpha, out->power, out->two_sided, &pw) != 0)
		return err_fail(err, errlen, "the power calculation failed for a gap of %g", gap);
	out->needed = (int64_t)ceil(pw.n_per_group);
	out->planned = (int64_t)n_tasks * p->repeats;
	out->underpowered = out->planned < out->needed;
	return 0;
}

int eval_run_new(const struct eval_protocol *p, int cond, const struct eval_run_opts *o, int64_t *run_id, char *err,
		 size_t errlen)
{
	struct runner R;
	int rc = runner_init(&R, p, cond, o, err, errlen);
	const char *fp = NULL;
	char *text = NULL;
	cJSON *excluded = cJSON_CreateArray(), *frozen = NULL;
	if (rc)
		goto out;
	char warn[1024];
	if (eval_protocol_warnings(p, warn, sizeof warn) && o->out)
		fprintf(o->out, "warning: %s", warn);
	/* preflight: references must pass and empty answers fail, else the task is left out */
	if (!o->skip_preflight && grader_sandbox_problem(R.grader)) {
		/* every code reference would fail as environment: leaving all of them out would hide that */
		log_warn("preflight skipped: the sandbox is unusable, so code tasks are graded as environment failures");
	} else if (!o->skip_preflight) {
		for (int i = 0; i < R.n_ds; i++) {
			struct preflight_report rep;
			if ((rc = preflight_run(R.grader, R.ds[i], false, NULL, &rep)) != 0) {
				err_fail(err, errlen, "preflight of %s could not run", R.p->datasets[i]);
				goto out;
			}
			for (int k = 0; k < rep.n_excluded; k++) {
				cJSON_AddItemToArray(excluded, cJSON_CreateString(rep.excluded[k]));
				log_warn("preflight: task %s is left out (run `sixi-eval preflight %s` for the reason)",
					 rep.excluded[k], R.p->datasets[i]);
			}
			preflight_finish(&rep);
		}
	}
	R.excluded = excluded;
	struct eval_power_plan plan;
	if (o->detect_gap > 0) {
		size_t n_tasks = 0;
		for (int i = 0; i < R.n_ds; i++)
			for (size_t t = 0; t < eval_dataset_count(R.ds[i]); t++)
				n_tasks += !is_excluded(excluded, eval_dataset_task(R.ds[i], t)->id);
		if ((rc = eval_power_plan(p, n_tasks, o->detect_gap, o->gap_baseline, &plan, err, errlen)) != 0)
			goto out;
		char line[768];
		snprintf(line, sizeof line,
			 "power plan: detecting a difference of %.3g points from a pass rate of %.3g %% with %.0f %% power "
			 "at alpha %g (%s) needs %lld attempts per condition; this run plans %zu tasks x %lld repeats = "
			 "%lld (every attempt counted as independent, the most optimistic count)",
			 plan.gap * 100, plan.baseline * 100, plan.power * 100, plan.alpha,
			 plan.two_sided ? "two-sided" : "one-sided", (long long)plan.needed, n_tasks,
			 (long long)p->repeats, (long long)plan.planned);
		if (plan.underpowered && !o->allow_underpowered) {
			rc = err_fail(err, errlen,
				  "%s: too few to detect that difference; add tasks or repeats (--repeats %lld would do), "
				  "state a larger gap, or pass --allow-underpowered to run anyway (recorded with the run)",
				  line, (long long)((plan.needed + (int64_t)n_tasks - 1) / (int64_t)(n_tasks ? n_tasks : 1)));
			goto out;
		}
		if (plan.underpowered)
			log_warn("%s: the run is underpowered for that gap (recorded with the run)", line);
		if (o->out)
			fprintf(o->out, "%s%s\n", plan.underpowered ? "WARNING: underpowered: " : "", line);
	}
	bool refused;
	if (!(fp = server_fingerprint(&R, &refused, err, errlen))) {
		rc = refused ? -EINVAL : -ECONNREFUSED; /* refused: nothing is stored */
		goto out;
	}
	frozen = frozen_config(&R, cond, fp, excluded);
	if (frozen && o->detect_gap > 0) {
		cJSON *pp = cJSON_AddObjectToObject(frozen, "power_plan");
		cJSON_AddNumberToObject(pp, "detect_gap", plan.gap);
		cJSON_AddNumberToObject(pp, "baseline", plan.baseline);
		cJSON_AddNumberToObject(pp, "alpha", plan.alpha);
		cJSON_AddNumberToObject(pp, "power", plan.power);
		cJSON_AddBoolToObject(pp, "two_sided", plan.two_sided);
		cJSON_AddNumberToObject(pp, "needed_per_condition", (double)plan.needed);
		cJSON_AddNumberToObject(pp, "planned", (double)plan.planned);
		cJSON_AddBoolToObject(pp, "underpowered", plan.underpowered);
	}
	text = frozen ? cJSON_PrintUnformatted(frozen) : NULL;
	if (!text) {
		rc = err_fail(err, errlen, "out of memory");
		goto out;
	}
	char memwarn[1024];
	char *facts = host_facts(&R, memwarn, sizeof memwarn);
	if (memwarn[0]) {
		log_warn("%s", memwarn);
		if (o->out && o->out != stderr)
			fprintf(o->out, "WARNING: %s (recorded with the run)\n", memwarn);
	}
	struct store_run sr = {
		.kind = "eval",
		.workload = "eval",
		.protocol_json = text,
		.endpoint = R.cond->endpoint,
		.model = R.cond->model,
		.fingerprint = fp,
		.host_facts = facts,
	};
	/* stored (and hashed) before the first request */
	rc = store_run_begin(R.store, &sr, &R.run_id);
	free(facts);
	if (rc != 0) {
		err_fail(err, errlen, "could not store the run: %s", store_errmsg(R.store));
		goto out;
	}
	*run_id = R.run_id;
	if ((rc = replicas_attach(&R, err, errlen)) != 0)
		goto out;
	char hex[65];
	sha256_hex(text, strlen(text), hex);
	print_audit(&R, o->out);
	store_audit(&R);
	if ((rc = store_shard(&R, err, errlen)) != 0)
		goto out;
	if (o->out)
		fprintf(o->out, "  config sha256 %s; %d task(s) left out by preflight\n", hex, cJSON_GetArraySize(excluded));
	rc = runner_plan(&R, err, errlen);
	if (rc == 0)
		rc = runner_execute(&R, true, err, errlen);
	if (rc == 0)
		rc = eval_run_summary(o->db_path, R.run_id, o->json, o->json ? o->json_out : o->out, err, errlen);
out:
	cJSON_Delete(frozen);
	cJSON_Delete(excluded);
	free(text);
	runner_finish(&R);
	return rc;
}

/* Names the fields of two canonical protocols that differ, "key: old -> new"
 * for numbers (concurrency, repeats, ...), the key alone otherwise. */
static void config_diff(const char *given, const char *stored, char *out, size_t cap)
{
	cJSON *g = given ? cJSON_Parse(given) : NULL, *s = stored ? cJSON_Parse(stored) : NULL;
	size_t n = 0;
	out[0] = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, s)
	{
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(g, it->string);
		if (o && cJSON_Compare(it, o, true))
			continue;
		int w;
		if (cJSON_IsNumber(it) && cJSON_IsNumber(o))
			w = snprintf(out + n, cap - n, "%s%s: %g -> %g", n ? ", " : "", it->string, it->valuedouble,
				     o->valuedouble);
		else
			w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", it->string);
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
	if (!n)
		snprintf(out, cap, "the configurations differ");
	cJSON_Delete(g);
	cJSON_Delete(s);
}

int eval_run_resume(int64_t run_id, const char *protocol_path, const struct eval_run_opts *o, char *err,
		    size_t errlen)
{
	const char *db = o->db_path ? o->db_path : STORE_DEFAULT_PATH;
	struct store *s = store_open(db, err, errlen);
	if (!s)
		return -EIO;
	char *stored = NULL, *stored_fp = NULL;
	struct eval_shard stored_shard = {0, 0};
	struct store_run_info info;
	if (store_run_get(s, run_id, &info, NULL, 0) == 0) {
		if (info.kind && strcmp(info.kind, "eval") == 0 && info.protocol_json) {
			stored = strdup(info.protocol_json);
			stored_fp = strdup(info.fingerprint ? info.fingerprint : "[]");
		}
		cJSON *sum = info.summary_json ? cJSON_Parse(info.summary_json) : NULL;
		(void)json_get_i64(sum, "shard.k", &stored_shard.k);
		(void)json_get_i64(sum, "shard.n", &stored_shard.n);
		cJSON_Delete(sum);
		store_run_info_finish(&info);
	}
	store_close(s);
	if (!stored) {
		free(stored_fp);
		return err_fail(err, errlen, "%s has no eval run %lld; `sixi-eval export` lists runs' rows", db,
			    (long long)run_id);
	}
	int rc = 0;
	struct eval_protocol *p = NULL, *given = NULL;
	cJSON *frozen = cJSON_Parse(stored);
	const cJSON *proto = frozen ? cJSON_GetObjectItem(frozen, "protocol") : NULL;
	char perr[512];
	if (!proto || !(p = eval_protocol_parse(proto, NULL, perr, sizeof perr))) {
		rc = err_fail(err, errlen, "run %lld: its stored configuration cannot be read", (long long)run_id);
		goto out;
	}
	if (protocol_path) {
		given = eval_protocol_load(protocol_path, err, errlen);
		if (!given) {
			rc = -EINVAL;
			goto out;
		}
		int ci = -1;
		for (int i = 0; i < given->n_conditions; i++)
			if (strcmp(given->conditions[i].name, p->conditions[0].name) == 0)
				ci = i;
		char *a = ci >= 0 ? eval_protocol_canonical(given, ci) : NULL;
		char *b = eval_protocol_canonical(p, 0);
		bool same = a && b && strcmp(a, b) == 0;
		char what[512] = "";
		if (!same)
			config_diff(a, b, what, sizeof what);
		free(a);
		free(b);
		if (!same) {
			rc = err_fail(err, errlen,
				  "%s differs from the configuration run %lld was started with (%s); a run's "
				  "configuration is frozen: resume without --protocol, or start a new run",
				  protocol_path, (long long)run_id, ci < 0 ? "its condition is missing" : what);
			goto out;
		}
	}
	/* a shard resumes its own slice: the stored one unless --shard says the same */
	if (o->shard.n > 0 && (o->shard.n != stored_shard.n || o->shard.k != stored_shard.k)) {
		if (stored_shard.n > 0)
			rc = err_fail(err, errlen, "run %lld is shard %lld/%lld, not %lld/%lld; resume it with --shard %lld/%lld or "
					  "without --shard", (long long)run_id, (long long)stored_shard.k, (long long)stored_shard.n,
				      (long long)o->shard.k, (long long)o->shard.n, (long long)stored_shard.k,
				      (long long)stored_shard.n);
		else
			rc = err_fail(err, errlen, "run %lld was not sharded; resume it without --shard", (long long)run_id);
		goto out;
	}
	struct runner R;
	rc = runner_init(&R, p, 0, o, err, errlen);
	if (stored_shard.n > 0)
		R.shard = stored_shard;
	if (rc == 0) {
		/* the same data */
		const cJSON *d;
		int i = 0;
		cJSON_ArrayForEach(d, cJSON_GetObjectItem(frozen, "datasets"))
		{
			const char *sha = json_get_str(d, "sha256");
			if (i >= R.n_ds || !sha || strcmp(sha, eval_dataset_sha256(R.ds[i])) != 0) {
				rc = err_fail(err, errlen,
					  "%s changed since run %lld started (sha256 differs); a run's data is frozen: "
					  "start a new run",
					  i < R.n_ds ? eval_dataset_path(R.ds[i]) : "a dataset", (long long)run_id);
				break;
			}
			i++;
		}
	}
	if (rc == 0) {
		/* the same template */
		const char *sha = json_get_str(frozen, "template_sha256");
		if ((sha || R.tmpl_sha[0]) && (!sha || strcmp(sha, R.tmpl_sha) != 0))
			rc = err_fail(err, errlen, "the chat template %s changed since run %lld started; a run's configuration is frozen",
				  R.cond->template_path ? R.cond->template_path : "", (long long)run_id);
	}
	if (rc == 0) {
		R.run_id = run_id;
		R.excluded = cJSON_GetObjectItem(frozen, "excluded");
		const cJSON *retries = cJSON_GetObjectItem(frozen, "api_error_retries");
		/* runs recorded before the key existed retried nothing beyond their attempts */
		R.api_error_retries = cJSON_IsNumber(retries) ? (int64_t)retries->valuedouble : 0;
		const cJSON *limits = cJSON_GetObjectItem(frozen, "grader_limits");
		if (limits && grader_limits_load(R.grader, limits) != 0)
			rc = err_fail(err, errlen, "out of memory");
	}
	if (rc == 0) {
		rc = runner_plan(&R, err, errlen);
	}
	if (rc == 0)
		rc = replicas_attach(&R, err, errlen);
	if (rc == 0 && R.n_jobs) {
		/* the same server (only asked when there is work left); replicas: the same model */
		bool refused;
		const char *fp = server_fingerprint(&R, &refused, err, errlen);
		if (!fp) {
			rc = refused ? -EINVAL : -ECONNREFUSED;
		} else if (R.n_rep == 1 ? !session_fingerprint_same(stored_fp, fp)
					: session_fingerprint_model_diff(stored_fp, fp, NULL, 0) != 0) {
			rc = err_fail(err, errlen,
				  "the server at %s now reports %s, but run %lld was started against %s; a run's "
				  "configuration is frozen",
				  R.rep[0].base, fp, (long long)run_id, stored_fp);
		}
	}
	if (rc == 0) {
		print_audit(&R, o->out);
		rc = runner_execute(&R, false, err, errlen);
	}
	runner_finish(&R);
	if (rc == 0)
		rc = eval_run_summary(o->db_path, run_id, o->json, o->json ? o->json_out : o->out, err, errlen);
out:
	eval_protocol_destroy(p);
	eval_protocol_destroy(given);
	cJSON_Delete(frozen);
	free(stored);
	free(stored_fp);
	return rc;
}
