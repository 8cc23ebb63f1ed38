/* server — see server.h. Request handling runs on the HTTP loop thread: parse
 * and validate the body, tokenise, submit one sequence per choice, then answer
 * from the wake callback as the scheduler produces text. Validation errors are
 * 400s with an OpenAI-style error object naming the field and what to send
 * instead; unknown fields are ignored, as OpenAI servers do, and logged.
 * Chat prompts are rendered with the model's Jinja chat template (or the one
 * --chat-template names) through src/text/jinja; without one, with a built-in
 * ChatML rendering (<|im_start|>role\n...<|im_end|>). What it does not do:
 * logprobs, tools, images, echo, best_of. logit_bias is applied (values in
 * [-100, 100] are added to the logits, as OpenAI documents). "vote": true with "n": k
 * submits the k samples as one scheduler group (the prompt prefilled once, its state forked),
 * reads each finished sample's answer (vote.h), cancels the samples still running once the
 * majority is decided and answers with a "sixi": {"vote": ...} extension; it does not stream.
 * /health: 503
 * "loading" until the warm-up generation has produced a token, then 200 "ok",
 * and 503 "error" while the latest forward pass failed. */
#include "server/server.h"
#include "core/err.h"
#include "server/engine.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/vote.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "text/jinja.h"
#include "text/unicode.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHOICES REQUEST_MAX_CHOICES

struct choice {
	struct sched_seq *q;
	bool done;
	bool role_sent;
	enum sched_finish finish;
	int64_t completion_tokens;
	int64_t cached_tokens;
	int64_t spec_steps, spec_drafted, spec_accepted;
	struct buf text; /* whole text (non-streaming) */
	bool vote_cancelled; /* stopped because the vote was decided */
	struct buf answer;   /* the sample's answer (vote.h), NUL-terminated once done */
};

struct gen {
	struct server *srv;
	struct http_conn *conn; /* NULL once the client is gone */
	bool stream, chat, include_usage;
	bool vote, vote_decided;
	int64_t max_tokens;
	int n;
	int64_t prompt_tokens;
	int64_t created;
	int32_t prompt_logprobs; /* > 0: the response carries the prompt's scores */
	char id[40];
	struct choice ch[MAX_CHOICES];
	struct gen *prev, *next;
};

struct server {
	struct engine *e;
	struct server_config cfg;
	struct metrics metrics;
	struct http_server *http;
	struct sched *sched;
	struct gen *gens;
	struct sched_seq *warm;
	int64_t warm_start_ns;
	bool ready;
	bool warm_failed;
	uint64_t next_id;
	int stop_fd;
	struct buf scratch; /* response building, loop thread only */
	struct jinja_template *tmpl; /* chat template, or NULL for ChatML */
};

void server_config_default(struct server_config *c)
{
	*c = (struct server_config){
		.http = { .host = "127.0.0.1", .port = 8080, .max_body_bytes = 8u << 20, .max_header_bytes = 16384,
			  .header_timeout_ns = 10000000000LL, .body_timeout_ns = 30000000000LL,
			  .idle_timeout_ns = 120000000000LL, .max_conns = 4096, .max_out_bytes = 64u << 20 },
		.shutdown_drain_ns = 2000000000LL,
	};
	sched_config_default(&c->sched);
}

/* ---- small helpers ---- */

static void respond_json(struct http_conn *c, int status, cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);
	if (!s) {
		http_respond(c, 500, "application/json", "{\"error\":{\"message\":\"out of memory\"}}", 37);
		return;
	}
	http_respond(c, status, "application/json", s, strlen(s));
	free(s);
}

static cJSON *error_obj(const char *msg, const char *type, const char *param)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", type);
	if (param)
		cJSON_AddStringToObject(e, "param", param);
	else
		cJSON_AddNullToObject(e, "param");
	cJSON_AddNullToObject(e, "code");
	return root;
}

static void respond_error(struct server *s, struct http_conn *c, int status, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void respond_error(struct server *s, struct http_conn *c, int status, const char *param, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (status >= 400 && status < 500)
		metrics_add(&s->metrics, requests_rejected, 1);
	log_info("%d: %s", status, msg);
	cJSON *o = error_obj(msg, status >= 500 ? "server_error" : "invalid_request_error", param);
	respond_json(c, status, o);
	cJSON_Delete(o);
}

static const char *finish_name(enum sched_finish f)
{
	return f == SCHED_STOP ? "stop" : f == SCHED_LENGTH ? "length" : "error";
}

/* ---- generations in flight ---- */

static void gen_free(struct gen *g)
{
	struct server *s = g->srv;
	for (int i = 0; i < g->n; i++) {
		sched_seq_release(s->sched, g->ch[i].q);
		buf_finish(&g->ch[i].text);
		buf_finish(&g->ch[i].answer);
	}
	if (g->prev)
		g->prev->next = g->next;
	else
		s->gens = g->next;
	if (g->next)
		g->next->prev = g->prev;
	free(g);
}

static void gen_on_close(void *user)
{
	struct gen *g = user;
	log_info("client went away; cancelling %s", g->id);
	g->conn = NULL;
	gen_free(g);
}

static cJSON *chunk_base(struct gen *g)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", g->id);
	cJSON_AddStringToObject(o, "object", g->chat ? (g->stream ? "chat.completion.chunk" : "chat.completion")
						     : "text_completion");
	cJSON_AddNumberToObject(o, "created", (double)g->created);
	cJSON_AddStringToObject(o, "model", g->srv->e->name);
	return o;
}

/* Extension: speculative decoding counters of the request (all choices), when it used it. */
static void add_spec_stats(struct gen *g, cJSON *u)
{
	int64_t steps = 0, drafted = 0, accepted = 0;
	for (int i = 0; i < g->n; i++) {
		steps += g->ch[i].spec_steps;
		drafted += g->ch[i].spec_drafted;
		accepted += g->ch[i].spec_accepted;
	}
	if (steps == 0)
		return;
	cJSON *sp = cJSON_AddObjectToObject(u, "speculative");
	cJSON_AddNumberToObject(sp, "steps", (double)steps);
	cJSON_AddNumberToObject(sp, "drafted_tokens", (double)drafted);
	cJSON_AddNumberToObject(sp, "accepted_tokens", (double)accepted);
	cJSON_AddNumberToObject(sp, "accept_len", (double)(accepted + steps) / (double)steps);
	cJSON_AddNumberToObject(sp, "accept_rate", drafted ? (double)accepted / (double)drafted : 0.0);
}

static void add_usage(struct gen *g, cJSON *o)
{
	int64_t comp = 0, cached = 0;
	for (int i = 0; i < g->n; i++) {
		comp += g->ch[i].completion_tokens;
		cached = g->ch[i].cached_tokens > cached ? g->ch[i].cached_tokens : cached;
	}
	cJSON *u = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(u, "prompt_tokens", (double)g->prompt_tokens);
	cJSON_AddNumberToObject(u, "completion_tokens", (double)comp);
	cJSON_AddNumberToObject(u, "total_tokens", (double)(g->prompt_tokens + comp));
	cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
	cJSON_AddNumberToObject(d, "cached_tokens", (double)cached);
	add_spec_stats(g, u);
}

static void sse_send(struct gen *g, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return;
	struct buf *b = &g->srv->scratch;
	buf_reset(b);
	if (buf_printf(b, "data: %s\n\n", s) == 0)
		http_stream_write(g->conn, b->data, b->len);
	free(s);
}

/* One streamed chunk for choice i: text and/or finish reason. */
static void send_chunk(struct gen *g, int i, const char *text, size_t len, const char *finish)
{
	cJSON *o = chunk_base(g);
	cJSON *arr = cJSON_AddArrayToObject(o, "choices");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddItemToArray(arr, c);
	cJSON_AddNumberToObject(c, "index", i);
	char *t = strndup(text ? text : "", len);
	if (g->chat) {
		cJSON *d = cJSON_AddObjectToObject(c, "delta");
		if (!g->ch[i].role_sent) {
			cJSON_AddStringToObject(d, "role", "assistant");
			g->ch[i].role_sent = true;
		}
		if (len || !finish)
			cJSON_AddStringToObject(d, "content", t ? t : "");
	} else {
		cJSON_AddStringToObject(c, "text", t ? t : "");
		cJSON_AddNullToObject(c, "logprobs");
	}
	free(t);
	if (finish)
		cJSON_AddStringToObject(c, "finish_reason", finish);
	else
		cJSON_AddNullToObject(c, "finish_reason");
	sse_send(g, o);
}

static void send_error_event(struct gen *g, const char *msg)
{
	cJSON *o = error_obj(msg, "server_error", NULL);
	sse_send(g, o);
}

/* The vote's tally over the samples done so far. answers: (MAX_CHOICES). Returns the samples
 * still running. */
static int vote_count(struct gen *g, const char **answers, struct vote_tally *t)
{
	int running = 0;
	for (int i = 0; i < g->n; i++) {
		struct choice *c = &g->ch[i];
		answers[i] = c->done && c->answer.len ? c->answer.data : NULL;
		running += !c->done && !c->vote_cancelled;
	}
	vote_tally(answers, g->n, t);
	return running;
}

/* Stops the samples still running once the vote is decided. */
static void vote_check(struct gen *g)
{
	const char *answers[MAX_CHOICES];
	struct vote_tally t;
	int running = vote_count(g, answers, &t);
	if (running == 0 || !vote_decided(&t, running))
		return;
	g->vote_decided = true;
	for (int i = 0; i < g->n; i++)
		if (!g->ch[i].done) {
			g->ch[i].vote_cancelled = true;
			sched_seq_cancel(g->srv->sched, g->ch[i].q);
		}
	log_info("%s: vote decided (\"%s\" %d of %d samples, runner-up %d); stopping %d sample(s)", g->id,
		 answers[t.leader], t.lead_count, g->n, t.runner_up, running);
}

static bool choice_vote_cancelled(const struct choice *c)
{
	return c->vote_cancelled && c->finish == SCHED_CANCELLED;
}

/* The extension object of a vote: {"vote": {answer, count, majority, tie, samples...}}. */
static void add_vote(struct gen *g, cJSON *o)
{
	struct metrics *m = &g->srv->metrics;
	const char *answers[MAX_CHOICES];
	struct vote_tally t;
	vote_count(g, answers, &t);
	bool majority = t.leader >= 0 && t.lead_count > t.runner_up;
	int cancelled = 0;
	int64_t saved = 0;
	cJSON *v = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "sixi"), "vote");
	if (majority)
		cJSON_AddStringToObject(v, "answer", answers[t.leader]);
	else
		cJSON_AddNullToObject(v, "answer");
	cJSON_AddNumberToObject(v, "count", majority ? t.lead_count : 0);
	cJSON_AddBoolToObject(v, "majority", majority);
	cJSON_AddBoolToObject(v, "tie", !majority);
	cJSON_AddNumberToObject(v, "runner_up_count", t.runner_up);
	cJSON_AddNumberToObject(v, "n", g->n);
	cJSON_AddNumberToObject(v, "answered", t.n_answers);
	cJSON *arr = cJSON_AddArrayToObject(v, "samples");
	for (int i = 0; i < g->n; i++) {
		const struct choice *c = &g->ch[i];
		bool vc = choice_vote_cancelled(c);
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, e);
		cJSON_AddNumberToObject(e, "index", i);
		if (answers[i])
			cJSON_AddStringToObject(e, "answer", answers[i]);
		else
			cJSON_AddNullToObject(e, "answer");
		cJSON_AddStringToObject(e, "finish_reason", vc ? "cancelled" : finish_name(c->finish));
		cJSON_AddNumberToObject(e, "completion_tokens", (double)c->completion_tokens);
		if (vc) {
			cancelled++;
			saved += g->max_tokens - c->completion_tokens;
		}
	}
	cJSON_AddNumberToObject(v, "cancelled", cancelled);
	cJSON_AddNumberToObject(v, "tokens_saved", (double)saved);
	cJSON_AddStringToObject(v, "rule",
				"answer: last \\boxed{...}, else the last number, else the last non-empty line; "
				"samples stop once the leader's count exceeds the runner-up's plus the samples running");
	metrics_add(m, vote_samples_cancelled, cancelled);
	metrics_add(m, vote_tokens_saved, saved);
	if (!majority)
		metrics_add(m, vote_ties, 1);
}

/* vLLM's prompt_logprobs: null for the first position, then per position an object keyed by
 * token id holding the prompt's token and the top N, each with logprob, rank (1: the most
 * likely) and decoded_token. Returns false when the scores could not be read. */
/* key: s[0..n) with each byte that is not part of well-formed UTF-8 (a byte token's half
 * character) as U+FFFD, so the JSON stays valid. */
static void add_text_valid(cJSON *o, const char *key, const char *s, size_t n)
{
	char *v = malloc(3 * n + 1), *w = v;
	if (!v)
		return;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = unicode_utf8_decode(s + i, n - i, &cp);
		if (k == 0) {
			memcpy(w, "\xEF\xBF\xBD", 3);
			w += 3;
			i++;
		} else {
			memcpy(w, s + i, k);
			w += k;
			i += k;
		}
	}
	*w = 0;
	cJSON_AddStringToObject(o, key, v);
	free(v);
}

static bool add_prompt_logprobs(struct gen *g, cJSON *c)
{
	struct server *s = g->srv;
	struct sched_prompt_scores sc;
	if (sched_seq_prompt_scores(s->sched, g->ch[0].q, &sc) != 0)
		return false;
	cJSON *ids = cJSON_AddArrayToObject(c, "prompt_token_ids");
	for (size_t p = 0; ids && p < sc.n_prompt; p++)
		cJSON_AddItemToArray(ids, cJSON_CreateNumber(sc.prompt[p]));
	cJSON *a = cJSON_AddArrayToObject(c, "prompt_logprobs");
	struct buf t;
	buf_init(&t);
	char key[16];
	bool ok = a != NULL;
	cJSON_AddItemToArray(a, cJSON_CreateNull());
	for (size_t p = 1; ok && p < sc.n_prompt; p++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToArray(a, o);
		bool listed = false;
		for (int32_t j = 0; j <= sc.n_top; j++) {
			/* the top n, then the prompt's own token when it is not among them */
			bool own = j == sc.n_top;
			if (own && listed)
				break;
			int32_t id = own ? sc.prompt[p] : sc.top_ids[p * (size_t)sc.n_top + (size_t)j];
			listed |= id == sc.prompt[p];
			snprintf(key, sizeof key, "%d", (int)id);
			cJSON *e = cJSON_AddObjectToObject(o, key);
			cJSON_AddNumberToObject(e, "logprob", own ? sc.tok_lp[p] : sc.top_lp[p * (size_t)sc.n_top + (size_t)j]);
			cJSON_AddNumberToObject(e, "rank", own ? sc.tok_rank[p] : j + 1);
			buf_reset(&t);
			if (s->e->ops->detokenize(s->e, id, &t) == 0)
				add_text_valid(e, "decoded_token", t.data, t.len);
			ok = e != NULL;
		}
	}
	buf_finish(&t);
	return ok;
}

static void respond_full(struct gen *g)
{
	cJSON *o = chunk_base(g);
	cJSON *arr = cJSON_AddArrayToObject(o, "choices");
	for (int i = 0; i < g->n; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, c);
		cJSON_AddNumberToObject(c, "index", i);
		const char *t = g->ch[i].text.data ? g->ch[i].text.data : "";
		if (g->chat) {
			cJSON *m = cJSON_AddObjectToObject(c, "message");
			cJSON_AddStringToObject(m, "role", "assistant");
			cJSON_AddStringToObject(m, "content", t);
		} else {
			cJSON_AddStringToObject(c, "text", t);
			cJSON_AddNullToObject(c, "logprobs");
			if (g->prompt_logprobs > 0 && i == 0 && !add_prompt_logprobs(g, c)) {
				cJSON_Delete(o);
				respond_error(g->srv, g->conn, 500, NULL, "the prompt's scores could not be read");
				return;
			}
		}
		cJSON_AddStringToObject(c, "finish_reason",
					choice_vote_cancelled(&g->ch[i]) ? "cancelled" : finish_name(g->ch[i].finish));
	}
	add_usage(g, o);
	if (g->vote)
		add_vote(g, o);
	respond_json(g->conn, 200, o);
	cJSON_Delete(o);
}

/* Moves new output to the client; finishes the response when all choices are done. */
static void gen_pump(struct gen *g)
{
	struct server *s = g->srv;
	bool all_done = true, failed = false;
	for (int i = 0; i < g->n; i++) {
		struct choice *c = &g->ch[i];
		if (c->done)
			continue;
		struct sched_status st;
		size_t before = c->text.len;
		struct buf ends; /* streaming: one event per executor pass, however late the client */
		buf_init(&ends);
		if (sched_seq_take_pieces(s->sched, c->q, &c->text, g->stream ? &ends : NULL, &st) != 0)
			st.finish = SCHED_ERROR;
		c->completion_tokens = st.completion_tokens;
		c->cached_tokens = st.cached_tokens;
		c->spec_steps = st.spec_steps;
		c->spec_drafted = st.spec_drafted;
		c->spec_accepted = st.spec_accepted;
		bool fin = st.finish != SCHED_RUNNING;
		if (g->stream) {
			bool ended = fin && (st.finish == SCHED_STOP || st.finish == SCHED_LENGTH);
			/* Pieces [at, e): each pass's cut, then anything past the last cut (none in
			 * practice). The finish reason rides on the last piece, as one token's chunk. */
			size_t n_ends = ends.len / sizeof(size_t), at = before, sent = 0;
			for (size_t k = 0; k <= n_ends; k++) {
				size_t e = c->text.len;
				if (k < n_ends)
					memcpy(&e, ends.data + k * sizeof e, sizeof e);
				if (e > c->text.len)
					e = c->text.len;
				if (e <= at)
					continue;
				bool last = e == c->text.len; /* the pieces tile [before, len) */
				send_chunk(g, i, c->text.data + at, e - at, last && ended ? finish_name(st.finish) : NULL);
				sent++;
				at = e;
			}
			if (!sent && (ended || (g->chat && !c->role_sent)))
				send_chunk(g, i, "", 0, ended ? finish_name(st.finish) : NULL);
			buf_reset(&c->text); /* streamed text need not be kept */
		}
		buf_finish(&ends);
		if (fin) {
			c->done = true;
			c->finish = st.finish;
			if (g->vote && (st.finish == SCHED_STOP || st.finish == SCHED_LENGTH) &&
			    vote_answer(c->text.data ? c->text.data : "", c->text.len, &c->answer) != 0)
				st.finish = c->finish = SCHED_ERROR;
		} else {
			all_done = false;
		}
	}
	if (g->vote && !g->vote_decided) {
		vote_check(g);
		all_done = true;
		for (int i = 0; i < g->n; i++)
			all_done &= g->ch[i].done;
	}
	for (int i = 0; i < g->n; i++)
		failed |= g->ch[i].done && (g->ch[i].finish == SCHED_ERROR ||
					    (g->ch[i].finish == SCHED_CANCELLED && !g->ch[i].vote_cancelled));
	if (!all_done || !g->conn)
		return;
	http_conn_set_user(g->conn, NULL, NULL);
	if (g->stream) {
		if (failed) {
			send_error_event(g, "generation failed on the server; see its log");
		} else if (g->include_usage) {
			cJSON *o = chunk_base(g);
			cJSON_AddArrayToObject(o, "choices");
			add_usage(g, o);
			sse_send(g, o);
		}
		http_stream_write(g->conn, "data: [DONE]\n\n", 14);
		http_stream_end(g->conn);
	} else if (failed) {
		respond_error(s, g->conn, 500, NULL, "generation failed on the server; see its log");
	} else {
		respond_full(g);
	}
	g->conn = NULL;
	gen_free(g);
}

static void on_wake(void *arg)
{
	struct server *s = arg;
	if (s->warm) {
		struct sched_status st;
		if (sched_seq_take(s->sched, s->warm, NULL, &st) == 0 && st.finish != SCHED_RUNNING) {
			if (st.finish != SCHED_ERROR && st.completion_tokens > 0) {
				s->ready = true;
				log_info("ready: warm-up generation of %lld token(s) took %.1f ms",
					 (long long)st.completion_tokens, (double)(clock_now_ns() - s->warm_start_ns) / 1e6);
			} else {
				s->warm_failed = true;
				log_error("warm-up generation failed; /health stays unavailable");
			}
			sched_seq_release(s->sched, s->warm);
			s->warm = NULL;
		}
	}
	struct gen *g = s->gens;
	while (g) {
		struct gen *next = g->next;
		gen_pump(g);
		g = next;
	}
}

/* ---- endpoints ---- */

static void handle_generate(struct server *s, struct http_conn *c, const struct http_request *hr, bool chat)
{
	struct gen_req r;
	char msg[512];
	const char *param = NULL;
	memset(&r, 0, sizeof r);
	struct request_env env = { .e = s->e, .tmpl = s->tmpl, .unknown_fields = &s->metrics.unknown_fields };
	int status = request_parse(&env, hr->body, hr->body_len, chat, &r, msg, sizeof msg, &param);
	if (status) {
		respond_error(s, c, status, param, "%s", msg);
		request_finish(&r);
		return;
	}
	if (!s->ready) {
		respond_error(s, c, 503, NULL, "the server is still warming up; retry when /health says ok");
		request_finish(&r);
		return;
	}
	struct gen *g = calloc(1, sizeof *g);
	if (!g) {
		respond_error(s, c, 500, NULL, "out of memory");
		request_finish(&r);
		return;
	}
	g->srv = s;
	g->conn = c;
	g->stream = r.stream;
	g->chat = chat;
	g->include_usage = r.include_usage;
	g->vote = r.vote;
	g->max_tokens = r.max_tokens;
	g->prompt_tokens = (int64_t)r.n_prompt;
	g->prompt_logprobs = r.prompt_logprobs;
	g->created = (int64_t)time(NULL);
	snprintf(g->id, sizeof g->id, "%s-%llu", chat ? "chatcmpl" : "cmpl", (unsigned long long)++s->next_id);
	uint64_t seed = r.seed_given ? r.seed : (uint64_t)clock_now_ns() ^ (s->next_id * 0x9E3779B97F4A7C15ULL);
	for (int i = 0; i < r.n; i++) {
		buf_init(&g->ch[i].text);
		buf_init(&g->ch[i].answer);
	}
	if (r.vote) {
		/* One prompt state, forked into the samples (scheduler.h). */
		struct sched_seq_params p = { .prompt = r.prompt, .n_prompt = r.n_prompt, .max_tokens = r.max_tokens,
					      .sampling = r.sp, .seed = seed, .stop = r.stop, .n_stop = r.n_stop,
					      .ignore_eos = r.ignore_eos, .bias_ids = r.bias_ids, .bias = r.bias,
					      .n_bias = r.n_bias };
		struct sched_seq *qs[MAX_CHOICES];
		int rc = sched_submit_group(s->sched, &p, r.n, qs);
		if (rc != 0) {
			g->n = r.n;
			for (int i = 0; i < r.n; i++)
				g->ch[i].q = NULL;
			g->conn = NULL;
			gen_free(g);
			respond_error(s, c, 500, NULL, "could not queue the request: %s", strerror(-rc));
			request_finish(&r);
			return;
		}
		for (int i = 0; i < r.n; i++)
			g->ch[i].q = qs[i];
		g->n = r.n;
	}
	for (int i = 0; i < r.n && !r.vote; i++) {
		struct sched_seq_params p = { .prompt = r.prompt, .n_prompt = r.n_prompt, .max_tokens = r.max_tokens,
					      .sampling = r.sp, .seed = seed + (uint64_t)i, .stop = r.stop,
					      .n_stop = r.n_stop, .ignore_eos = r.ignore_eos, .bias_ids = r.bias_ids,
					      .bias = r.bias, .n_bias = r.n_bias, .prompt_logprobs = r.prompt_logprobs };
		g->ch[i].q = sched_submit(s->sched, &p);
		g->n = i + 1;
		if (!g->ch[i].q) {
			g->conn = NULL;
			gen_free(g);
			respond_error(s, c, 500, NULL, "could not queue the request: %s", strerror(errno));
			request_finish(&r);
			return;
		}
	}
	metrics_add(&s->metrics, requests, 1);
	metrics_add(&s->metrics, prompt_tokens, r.n_prompt * (size_t)(r.vote ? 1 : r.n)); /* a vote prefills once */
	if (r.vote)
		metrics_add(&s->metrics, votes, 1);
	request_finish(&r);
	g->next = s->gens;
	if (s->gens)
		s->gens->prev = g;
	s->gens = g;
	http_conn_set_user(c, g, gen_on_close);
	if (g->stream)
		http_stream_begin(c, 200, "text/event-stream");
}

static void handle_metrics(struct server *s, struct http_conn *c)
{
	struct metrics_gauges gg = { .connections = http_server_conn_count(s->http),
				     .state_copies = atomic_load(&s->e->state_copies), .ready = s->ready,
				     .mem_kv = s->e->mem_kv, .mem_gdn_state = s->e->mem_gdn_state,
				     .mem_conv = s->e->mem_conv, .mem_rollback = s->e->mem_rollback,
				     .mem_snapshot_ring = s->e->mem_snapshot_ring };
	sched_counts(s->sched, &gg.active_sequences, &gg.waiting_requests);
	struct buf b;
	buf_init(&b);
	if (metrics_render(&s->metrics, &gg, &b) != 0)
		respond_error(s, c, 500, NULL, "out of memory");
	else
		http_respond(c, 200, "text/plain; version=0.0.4", b.data, b.len);
	buf_finish(&b);
}

static void handle_models(struct server *s, struct http_conn *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "object", "list");
	cJSON *arr = cJSON_AddArrayToObject(o, "data");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddItemToArray(arr, m);
	cJSON_AddStringToObject(m, "id", s->e->name);
	cJSON_AddStringToObject(m, "object", "model");
	cJSON_AddNumberToObject(m, "created", 0);
	cJSON_AddStringToObject(m, "owned_by", "sixi");
	cJSON_AddNumberToObject(m, "context_length", s->e->n_ctx);
	respond_json(c, 200, o);
	cJSON_Delete(o);
}

static void handler(void *ctx, struct http_conn *c, const struct http_request *req)
{
	struct server *s = ctx;
	bool get = strcmp(req->method, "GET") == 0, post = strcmp(req->method, "POST") == 0;
	const char *p = req->path;
	if (strcmp(p, "/v1/completions") == 0 || strcmp(p, "/v1/chat/completions") == 0) {
		if (!post)
			respond_error(s, c, 405, NULL, "%s takes POST", p);
		else
			handle_generate(s, c, req, p[4] == 'c' && p[5] == 'h');
	} else if (strcmp(p, "/health") == 0) {
		if (s->ready && atomic_load(&s->metrics.last_pass_failed))
			http_respond(c, 503, "application/json", "{\"status\":\"error\"}", 18);
		else if (s->ready)
			http_respond(c, 200, "application/json", "{\"status\":\"ok\"}", 15);
		else if (s->warm_failed)
			http_respond(c, 503, "application/json", "{\"status\":\"error\"}", 18);
		else
			http_respond(c, 503, "application/json", "{\"status\":\"loading\"}", 20);
	} else if (strcmp(p, "/metrics") == 0 && get) {
		handle_metrics(s, c);
	} else if (strcmp(p, "/v1/models") == 0 && get) {
		handle_models(s, c);
	} else {
		respond_error(s, c, 404, NULL, "no endpoint %s %s (try POST /v1/completions, POST /v1/chat/completions, "
					       "GET /v1/models, /health, /metrics)", req->method, p);
	}
}

/* ---- lifecycle ---- */

static void notify(void *arg)
{
	http_server_wake(arg);
}

static void on_stop(void *arg)
{
	struct server *s = arg;
	uint64_t junk[16];
	ssize_t r = read(s->stop_fd, junk, sizeof junk); /* drain a signalfd/eventfd */
	(void)r;
	log_info("shutting down: ending in-flight requests");
	while (s->gens) {
		struct gen *g = s->gens;
		if (g->conn) {
			http_conn_set_user(g->conn, NULL, NULL);
			if (g->stream) {
				send_error_event(g, "the server is shutting down; this generation was cut short");
				http_stream_end(g->conn);
			} else {
				respond_error(s, g->conn, 503, NULL, "the server is shutting down");
			}
			g->conn = NULL;
		}
		gen_free(g);
	}
	http_server_shutdown(s->http, s->cfg.shutdown_drain_ns);
}

struct server *server_create(struct engine *e, const struct server_config *c, char *err, size_t errlen)
{
	struct server *s = calloc(1, sizeof *s);
	if (!s) {
		err_set(err, errlen, "out of memory");
		return NULL;
	}
	s->e = e;
	s->cfg = *c;
	s->stop_fd = -1;
	buf_init(&s->scratch);
	metrics_init(&s->metrics);
	const char *src = e->chat_template;
	char *loaded = NULL;
	size_t src_len = src ? strlen(src) : 0;
	if (c->chat_template_path) {
		loaded = jinja_source_load(c->chat_template_path, &src_len, NULL, err, errlen);
		if (!loaded)
			goto fail;
		src = loaded;
	}
	if (src) {
		char terr[256];
		s->tmpl = jinja_parse(src, src_len, terr, sizeof terr);
		if (!s->tmpl)
			err_set(err, errlen, "chat template of %s: %s", c->chat_template_path ? c->chat_template_path : e->name,
				 terr);
	}
	free(loaded);
	if (src && !s->tmpl)
		goto fail;
	s->http = http_server_create(&c->http, handler, s, err, errlen);
	if (!s->http)
		goto fail;
	http_server_set_wake(s->http, on_wake, s);
	s->sched = sched_create(e, &c->sched, &s->metrics, notify, s->http);
	if (!s->sched) {
		err_set(err, errlen, "cannot start the scheduler: %s", strerror(errno));
		goto fail;
	}
	/* The warm-up: a real generation through the whole path before /health says ok. */
	int32_t ids[64];
	size_t n = 0;
	static const char hello[] = "Hello";
	if (e->ops->tokenize(e, hello, sizeof hello - 1, ids, 64, &n) != 0 || n == 0 || n > 64) {
		ids[0] = 0;
		n = 1;
	}
	struct sched_seq_params p = { .prompt = ids, .n_prompt = n, .max_tokens = 1, .sampling = { .top_p = 1 },
				      .ignore_eos = true };
	s->warm_start_ns = clock_now_ns();
	s->warm = sched_submit(s->sched, &p);
	if (!s->warm) {
		err_set(err, errlen, "cannot submit the warm-up generation: %s", strerror(errno));
		goto fail;
	}
	return s;
fail:
	server_destroy(s);
	return NULL;
}

int server_port(const struct server *s) { return http_server_port(s->http); }

int server_run(struct server *s, int stop_fd)
{
	s->stop_fd = stop_fd;
	if (stop_fd >= 0) {
		int rc = http_server_watch_fd(s->http, stop_fd, on_stop, s);
		if (rc != 0)
			return rc;
	}
	return http_server_run(s->http);
}

void server_destroy(struct server *s)
{
	if (!s)
		return;
	while (s->gens) {
		if (s->gens->conn)
			http_conn_set_user(s->gens->conn, NULL, NULL);
		s->gens->conn = NULL;
		gen_free(s->gens);
	}
	if (s->sched && s->warm)
		sched_seq_release(s->sched, s->warm);
	/* The scheduler's threads stop first (the sampler wakes the HTTP loop through
	 * notify), then the connections (their close callbacks may touch gens), then
	 * the scheduler's state. */
	sched_stop(s->sched);
	http_server_destroy(s->http);
	sched_destroy(s->sched);
	metrics_finish(&s->metrics);
	buf_finish(&s->scratch);
	jinja_destroy(s->tmpl);
	free(s);
}
