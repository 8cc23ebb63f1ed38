/* runner — see runner.h. Streams are dealt round-robin to threads; each thread
 * loops: start every stream whose next request is due, then let curl work until
 * the next due time or 50 ms, whichever is first. */
#include "bench/runner.h"
#include "core/clock.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	struct runner_stream *st;
	size_t next;             /* index of the next request to send */
	bool busy;
	struct oai_stream s;
	struct worker *w;
};

struct worker {
	const struct runner_opts *o;
	pthread_mutex_t *sink_lock;
	struct slot *slots;
	size_t n_slots;
	size_t in_flight;
	size_t remaining;        /* requests not yet ended */
	int rc;
};

static void deliver(struct worker *w, const struct runner_req *rq, const struct oai_stream *s)
{
	pthread_mutex_lock(w->sink_lock);
	w->o->sink(w->o->ud, rq, s);
	pthread_mutex_unlock(w->sink_lock);
}

static void on_done(struct oai_stream *s, void *ud)
{
	struct slot *sl = ud;
	struct worker *w = sl->w;
	const struct runner_req *rq = &sl->st->reqs[sl->next];
	deliver(w, rq, s);
	oai_stream_finish(s);
	sl->busy = false;
	sl->next++;
	w->in_flight--;
	w->remaining--;
}

static void skip_request(struct worker *w, struct slot *sl, const char *why, const char *detail)
{
	struct oai_stream s;
	memset(&s, 0, sizeof s);
	s.prompt_tokens = s.cached_tokens = s.completion_tokens = -1;
	s.error = why;
	snprintf(s.error_detail, sizeof s.error_detail, "%s", detail);
	deliver(w, &sl->st->reqs[sl->next], &s);
	sl->next++;
	w->remaining--;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct runner_opts *o = w->o;
	struct http_client *c = http_client_create();
	if (!c) {
		w->rc = -ENOMEM;
		return NULL;
	}
	while (w->remaining > 0) {
		if (o->stop && atomic_load(o->stop))
			break;
		int64_t now = clock_now_ns();
		int64_t next_due = now + 50000000LL;
		for (size_t i = 0; i < w->n_slots; i++) {
			struct slot *sl = &w->slots[i];
			while (!sl->busy && sl->next < sl->st->n) {
				struct runner_req *rq = &sl->st->reqs[sl->next];
				if (o->deadline_ns && now >= o->deadline_ns) {
					skip_request(w, sl, "deadline", "not sent: the run's time limit was reached");
					continue;
				}
				if (!rq->body && o->build && o->build(o->ud, rq, now) != 0) {
					skip_request(w, sl, "client", "could not build the request (out of memory?)");
					continue;
				}
				if (rq->t_intended_ns > now) {
					if (rq->t_intended_ns < next_due)
						next_due = rq->t_intended_ns;
					break;
				}
				struct oai_stream_opts so = {
					.url = o->url,
					.body = rq->body,
					.body_len = rq->body_len,
					.stream = o->stream,
					.keep_text = o->keep_text,
					.keep_event_times = o->keep_event_times,
					.connect_timeout_ms = o->connect_timeout_ms,
					.first_byte_timeout_ms = o->first_byte_timeout_ms,
					.stall_timeout_ms = o->stall_timeout_ms,
					.total_timeout_ms = o->total_timeout_ms,
					.on_done = on_done,
					.ud = sl,
				};
				if (oai_stream_start(c, &sl->s, &so) != 0) {
					skip_request(w, sl, "client", "could not start the transfer (out of memory?)");
					continue;
				}
				sl->busy = true;
				w->in_flight++;
			}
		}
		if (w->remaining == 0)
			break;
		int64_t wait = next_due - clock_now_ns();
		if (w->in_flight)
			http_client_run(c, wait > 0 ? wait : 0);
		else if (wait > 0)
			clock_sleep_ns(wait < 50000000LL ? wait : 50000000LL);
		if (o->deadline_ns && clock_now_ns() > o->deadline_ns + 5000000000LL && w->in_flight)
			break; /* in-flight transfers past the grace period end below as "client" errors */
	}
	http_client_destroy(c); /* ends anything still running through on_done */
	/* requests never started after a forced stop */
	bool stopped = o->stop && atomic_load(o->stop);
	for (size_t i = 0; i < w->n_slots; i++)
		while (w->slots[i].next < w->slots[i].st->n)
			skip_request(w, &w->slots[i], stopped ? "stopped" : "deadline",
				     stopped ? "not sent: the level was stopped early (over-saturated)"
					     : "not sent: the run's time limit was reached");
	return NULL;
}

int runner_run(const struct runner_opts *o, struct runner_stream *streams, size_t n_streams)
{
	int threads = o->threads > 0 ? o->threads : 1;
	if ((size_t)threads > n_streams)
		threads = n_streams ? (int)n_streams : 1;
	struct worker *ws = calloc((size_t)threads, sizeof *ws);
	struct slot *slots = calloc(n_streams ? n_streams : 1, sizeof *slots);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int rc = 0;
	if (!ws || !slots || !tids) {
		rc = -ENOMEM;
		goto out;
	}
	/* deal streams round-robin; each worker's slots are contiguous */
	size_t pos = 0;
	for (int t = 0; t < threads; t++) {
		ws[t].o = o;
		ws[t].sink_lock = &lock;
		ws[t].slots = slots + pos;
		for (size_t i = (size_t)t; i < n_streams; i += (size_t)threads) {
			slots[pos].st = &streams[i];
			slots[pos].w = &ws[t];
			ws[t].remaining += streams[i].n;
			pos++;
			ws[t].n_slots++;
		}
	}
	int started = 0;
	for (int t = 0; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, work, &ws[t]) != 0) {
			rc = -EAGAIN;
			break;
		}
		started++;
	}
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	for (int t = 0; t < started && !rc; t++)
		if (ws[t].rc)
			rc = ws[t].rc;
out:
	free(ws);
	free(slots);
	free(tids);
	return rc;
}
