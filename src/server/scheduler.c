/* sched — see scheduler.h for the design. Details:
 * - One mutex (s->lock) guards every sequence's state and output; the two long
 *   operations, the forward pass and sampling a row, run without it. A
 *   sequence in S_RUNNING belongs to the executor, in S_SAMPLING to the
 *   sampler, so their token arrays and text need no lock while there.
 * - Prompt chunks (interleave on): prefill.h sizes them by time and orders them
 *   (fewest prompt rows left first, so a short follow-up is not stuck behind a
 *   long document; a prompt left out too long gets a few rows); every ready
 *   decoding sequence rides along. The pass-cost model is refitted after every
 *   pass from its measured time.
 *   Interleave off reproduces the old behaviour for comparison: prompts are
 *   prefilled one at a time in arrival order, so a new request waits for every
 *   prompt ahead of it; each chunk is a pass of its own, alternating with
 *   decode passes.
 * - Slots are released only by the executor (engines are single-threaded).
 * - Prefix cache (off by default): a finished sequence's slot is kept with the
 *   ids it has consumed; a new prompt that starts with all of them takes the
 *   slot over and prefills only the rest. Nothing is copied (recurrent state
 *   cannot be truncated, so only whole-history prefixes match).
 * Workload assumption: up to a few hundred sequences; per-pass work outside the
 * engine is O(sequences). */
#include "server/scheduler.h"
#include "server/engine.h"
#include "server/metrics.h"
#include "server/prefill.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "model/spec.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum seq_state {
	S_WAIT,     /* no slot yet */
	S_PREFILL,  /* prompt rows left */
	S_READY,    /* next row known */
	S_RUNNING,  /* in a pass */
	S_SAMPLING, /* pass done, logits with the sampler */
	S_FINISHED, /* output final; slot to be released by the executor */
	S_FORKWAIT, /* a group member holding a slot, waiting for the first member's prompt state */
};

struct sched_seq {
	/* immutable after submit */
	int32_t *toks;            /* (n_prompt + max_tokens) prompt, then sampled ids */
	size_t n_prompt;
	int64_t max_tokens;
	struct sampler_params sp;
	struct sampler_rng rng;
	char **stop;              /* (n_stop) */
	size_t n_stop;
	bool ignore_eos;
	int32_t *bias_ids;        /* (n_bias) */
	float *bias;              /* (n_bias) */
	size_t n_bias;
	int64_t t_arrive_ns;
	uint64_t order;           /* arrival order */
	/* state, under s->lock (or owned as the header says) */
	enum seq_state state;
	int slot;
	size_t n_fed;             /* positions consumed by the engine */
	size_t n_chunk;           /* rows in the current pass */
	int64_t skipped;          /* passes in a row that took none of its prompt rows */
	int64_t n_gen;            /* ids sampled */
	bool cancelled;
	int refs;                 /* caller + scheduler */
	/* sampler-owned text */
	struct buf gen;           /* all generated text */
	size_t emitted;           /* bytes of gen moved to out */
	/* output, under s->lock */
	struct buf out;           /* text not yet taken */
	struct buf out_ends;      /* size_t offsets into out where each pass's text ends */
	enum sched_finish finish;
	int64_t completion_tokens;  /* n_gen as last published */
	int64_t cached_tokens;
	int64_t queue_ns;
	int64_t arrive_pass;      /* passes_started when submitted */
	int64_t first_pass;       /* the pass that gave the first token's logits; -1 before */
	/* speculative decoding: the drafts of the pass in flight, rows the engine must still
	 * drop (set by the sampler, applied by the executor), counters */
	int32_t draft[SCHED_SPEC_MAX];
	int n_draft;
	/* drafts sampled by a draft model (sampled requests): the draft's logits row of each, so
	 * that the sampler can verify against the draft's distribution q; n_q rows are valid */
	float *q_logits;          /* (spec_draft_max, n_logits), allocated on first use */
	int n_q;
	struct sampler_rng draft_rng; /* the draft model's draws, apart from the target's */
	struct sched *sched;      /* owner, for draft_pick */
	int spec_rb;
	int64_t spec_steps, spec_drafted, spec_accepted;
	/* a group's first member (sched_submit_group): the other members, each with a reference
	 * held until they are forked from this one's prompt state */
	struct sched_seq **kids;  /* (n_kids) */
	int n_kids;
	/* prompt scores (sched_seq_params.prompt_logprobs): written by the executor as the
	 * prompt's chunks pass, read by the caller once the first token was sampled */
	int32_t plp_n;            /* top entries per position; 0: not asked */
	float *plp_tok;           /* (n_prompt) */
	int32_t *plp_rank;        /* (n_prompt) */
	int32_t *plp_ids;         /* (n_prompt * plp_n) */
	float *plp_lp;            /* (n_prompt * plp_n) */
	bool plp_done;
};

struct retained {
	int slot;                 /* -1 = empty */
	int32_t *toks;            /* (n) ids the slot's state has consumed */
	size_t n;
	int64_t last_used_ns;
};

struct batch_item {
	struct sched_seq *seq;
	float *logits;            /* (n_logits); the sampler may add the sequence's logit biases */
};

struct batch {
	struct batch *next;
	size_t n_items;
	struct batch_item *items; /* (n_items) */
	float *logits;            /* (n_items, n_logits) */
	size_t n_floats;          /* capacity of logits */
};

#define SPARE_LOGITS 8 /* spare logits buffers kept (passes queued for the sampler return theirs) */

struct sched {
	struct engine *e;
	struct sched_config cfg;
	struct metrics *m;
	void (*notify)(void *);
	void *notify_arg;
	pthread_mutex_t lock;
	pthread_cond_t exec_cv;   /* executor: work or a sampled row arrived */
	pthread_cond_t samp_cv;   /* sampler: a batch arrived */
	pthread_t exec_thread, samp_thread;
	bool threads_started;
	bool stopping;
	struct sched_seq **seqs;  /* (n_seqs) in arrival order, not yet removed */
	size_t n_seqs, cap_seqs;
	uint64_t next_order;
	int n_sampling;           /* sequences in S_SAMPLING */
	struct batch *q_head, *q_tail; /* sampler queue */
	int64_t last_pass_ns;
	int64_t passes_started;   /* passes built so far */
	float *spare_logits[SPARE_LOGITS]; /* (spare_floats) logits buffers the sampler is done with */
	size_t spare_floats[SPARE_LOGITS];
	int n_spare;
	bool last_was_prompt_pass; /* interleave off: alternate prompt chunks and decode passes */
	struct retained *ret;     /* (n_slots) */
	/* executor scratch */
	struct engine_row *rows;  /* (cap_rows) */
	size_t cap_rows;
	uint8_t *keep;            /* (cap_keep) per row: kept for rollback (speculative rows) */
	size_t cap_keep;
	struct sched_seq **members; /* (cap_members) */
	size_t cap_members;
	struct sampler_scratch exec_sc; /* draft sampling on the executor */
	struct prefill_want *wants; /* (cap_wants) prompts in prefill, for prefill_plan */
	size_t cap_wants;
	struct prefill_model cost; /* pass time by rows, device ns (executor) */
	int64_t last_finish_pass;  /* passes_started when a sequence last finished */
};

void sched_config_default(struct sched_config *c)
{
	*c = (struct sched_config){ .straggler_wait = true, .straggler_frac = 0.2, .straggler_min_ns = 4000000,
				    .straggler_max_ns = 40000000, .prefill_chunk = 512, .interleave = true,
				    .prefix_cache = false };
}

static void seq_unref(struct sched_seq *q);

/* Logits buffers from the engine where it has its own kind (page-locked for a GPU), else the heap. */
static float *logits_alloc(struct sched *s, size_t n_floats)
{
	const struct engine_ops *o = s->e->ops;
	return o->logits_alloc ? o->logits_alloc(s->e, n_floats) : malloc(n_floats * sizeof(float));
}

static void logits_free(struct sched *s, float *p)
{
	const struct engine_ops *o = s->e->ops;
	if (o->logits_free)
		o->logits_free(s->e, p);
	else
		free(p);
}

/* A logits buffer of at least *n_floats floats for the next pass (*n_floats gets its size): the
 * smallest spare that fits, else a new one, the spares too small for this pass freed first. Only
 * the executor calls it, with the lock held, between passes: a GPU engine's page-locked memory is
 * allocated and freed where no pass of it is in flight or being captured. NULL when out of memory. */
static float *spare_take(struct sched *s, size_t *n_floats)
{
	int best = -1;
	for (int i = 0; i < s->n_spare; i++)
		if (s->spare_floats[i] >= *n_floats && (best < 0 || s->spare_floats[i] < s->spare_floats[best]))
			best = i;
	if (best >= 0) {
		float *p = s->spare_logits[best];
		*n_floats = s->spare_floats[best];
		s->spare_logits[best] = s->spare_logits[--s->n_spare];
		s->spare_floats[best] = s->spare_floats[s->n_spare];
		return p;
	}
	while (s->n_spare > 0)
		logits_free(s, s->spare_logits[--s->n_spare]);
	return logits_alloc(s, *n_floats);
}
static void seq_finish(struct sched *s, struct sched_seq *q, enum sched_finish why);

/* Drops the references a group's first member holds on the others; those not forked yet
 * end as why (s NULL: only the references, after the fork or at teardown). */
static void kids_drop(struct sched *s, struct sched_seq *q, enum sched_finish why)
{
	for (int i = 0; i < q->n_kids; i++) {
		struct sched_seq *k = q->kids[i];
		if (s && k->state != S_FINISHED)
			seq_finish(s, k, why);
		seq_unref(k);
	}
	free(q->kids);
	q->kids = NULL;
	q->n_kids = 0;
}

static void seq_free(struct sched_seq *q)
{
	kids_drop(NULL, q, SCHED_CANCELLED);
	free(q->q_logits);
	free(q->plp_tok);
	free(q->plp_rank);
	free(q->plp_ids);
	free(q->plp_lp);
	free(q->toks);
	free(q->bias_ids);
	free(q->bias);
	for (size_t i = 0; i < q->n_stop; i++)
		free(q->stop[i]);
	free(q->stop);
	buf_finish(&q->gen);
	buf_finish(&q->out);
	buf_finish(&q->out_ends);
	free(q);
}

/* Under lock. */
static void seq_unref(struct sched_seq *q)
{
	if (--q->refs == 0)
		seq_free(q);
}

static void seq_finish(struct sched *s, struct sched_seq *q, enum sched_finish why)
{
	if (q->finish == SCHED_RUNNING)
		q->finish = why;
	q->state = S_FINISHED;
	s->last_finish_pass = s->passes_started;
	if (why == SCHED_CANCELLED)
		metrics_add(s->m, requests_cancelled, 1);
	if (q->n_kids > 0)
		kids_drop(s, q, why == SCHED_ERROR ? SCHED_ERROR : SCHED_CANCELLED);
}

/* The prompt position where a sequence stops prefilling: a group's first member stops one
 * row short, so that every member feeds the last prompt token itself and samples its first
 * token from its own logits row (nothing but the state is shared). */
static size_t prompt_end(const struct sched_seq *q)
{
	return q->n_kids > 0 ? q->n_prompt - 1 : q->n_prompt;
}

/* Gives each waiting member of q's group a copy of q's prompt state (recurrent state, conv
 * window, KV rows, rollback log) and makes all of them ready. Executor, under lock. */
static void group_fork(struct sched *s, struct sched_seq *q)
{
	for (int i = 0; i < q->n_kids; i++) {
		struct sched_seq *k = q->kids[i];
		if (k->state != S_FORKWAIT)
			continue;
		int rc = 0;
		if (q->n_fed > 0) {
			rc = s->e->ops->slot_copy(s->e, k->slot, q->slot);
			if (rc == 0)
				metrics_add(s->m, state_forks, 1);
		}
		if (rc != 0) {
			log_error("forking a sample's state failed: %s", strerror(-rc));
			seq_finish(s, k, SCHED_ERROR);
			continue;
		}
		k->n_fed = q->n_fed;
		k->cached_tokens = q->cached_tokens;
		k->queue_ns = q->queue_ns;
		k->state = S_READY;
	}
	kids_drop(NULL, q, SCHED_CANCELLED); /* forked: only the references go */
	q->state = S_READY;
}

/* ---- speculative decoding (executor thread, under lock) ---- */

static bool spec_on(const struct sched *s, const struct sched_seq *q)
{
	(void)q; /* every sequence: greedy ones keep drafts equal to their argmax, sampled ones
		  * verify by exact speculative sampling (sampler.h) */
	return s->cfg.spec_draft_max > 0 && s->e->ops->forward_keep && s->e->ops->rollback;
}

/* Drops the rows the sampler rejected; an engine failure ends the sequence. */
static void spec_apply_rollback(struct sched *s, struct sched_seq *q)
{
	if (q->spec_rb > 0 && q->slot >= 0) {
		int rc = s->e->ops->rollback(s->e, q->slot, q->spec_rb);
		if (rc != 0) {
			log_error("speculative rollback failed: %s", strerror(-rc));
			if (q->state != S_FINISHED)
				seq_finish(s, q, SCHED_ERROR);
		}
	}
	q->spec_rb = 0;
}

/* A draft model's pick for a sampled request (spec_draft.h): draws draft j from the draft's
 * distribution q under the request's transforms and keeps the row for the verification.
 * Executor thread. */
static int32_t draft_pick(void *arg, int j, const float *logits, int n_vocab)
{
	struct sched_seq *q = arg;
	struct sched *s = q->sched;
	size_t n = (size_t)s->e->n_sample < (size_t)n_vocab ? (size_t)s->e->n_sample : (size_t)n_vocab;
	memcpy(q->q_logits + (size_t)j * (size_t)s->e->n_logits, logits, n * sizeof(float));
	q->n_q = j + 1;
	return sampler_pick(&q->sp, &q->draft_rng, logits, n, &s->exec_sc);
}

/* Sampled (not greedy) requests verify against the draft's distribution when a draft model
 * drafts for them: room for its rows, or false (then the draft model drafts greedily). */
static bool draft_sampled(struct sched *s, struct sched_seq *q)
{
	if (q->sp.temperature <= 0 || q->sp.top_k == 1)
		return false;
	if (!q->q_logits)
		q->q_logits = malloc((size_t)s->cfg.spec_draft_max * (size_t)s->e->n_logits * sizeof(float));
	return q->q_logits != NULL;
}

/* How many tokens a ready sequence may draft now (after applying its pending rollback). */
static int spec_limit(struct sched *s, struct sched_seq *q)
{
	q->n_draft = 0;
	q->n_q = 0;
	if (!spec_on(s, q))
		return 0;
	spec_apply_rollback(s, q);
	if (q->state == S_FINISHED)
		return 0;
	int64_t k = s->cfg.spec_draft_max;
	int64_t left = q->max_tokens - q->n_gen - 1; /* the pass yields up to k + 1 tokens */
	int64_t room = (int64_t)s->e->n_ctx - (int64_t)q->n_fed - 2;
	k = k < left ? k : left;
	k = k < room ? k : room;
	if (k > SCHED_SPEC_MAX)
		k = SCHED_SPEC_MAX;
	return k > 0 ? (int)k : 0;
}

/* Drafts for every ready sequence that may: by the engine's draft model in one call when it
 * has one, else by prompt lookup (the ids that followed the latest earlier occurrence of the
 * last 3, 2 or 1 ids of the history). A failing draft model only costs the drafts. */
static void spec_draft_all(struct sched *s)
{
	struct engine_draft *dr = NULL;
	struct sched_seq **dq = NULL;
	size_t n = 0;
	if (s->e->ops->draft && s->cfg.spec_draft_max > 0) {
		dr = malloc(s->n_seqs * sizeof *dr);
		dq = malloc(s->n_seqs * sizeof *dq);
	}
	for (size_t i = 0; i < s->n_seqs; i++) {
		struct sched_seq *q = s->seqs[i];
		if (q->state != S_READY)
			continue;
		int k = spec_limit(s, q);
		if (k <= 0 || q->state != S_READY)
			continue;
		if (s->e->ops->draft) {
			if (dr && dq) {
				dr[n] = (struct engine_draft){ .slot = q->slot, .hist = q->toks, .n_hist = (int32_t)(q->n_fed + 1),
							       .k = k, .out = q->draft };
				if (draft_sampled(s, q)) {
					dr[n].pick = draft_pick;
					dr[n].pick_arg = q;
				}
				dq[n++] = q;
			}
		} else {
			q->n_draft = spec_ngram_draft(q->toks, (int)(q->n_fed + 1), 1, 3, k, q->draft);
		}
	}
	if (n > 0) {
		int rc = s->e->ops->draft(s->e, dr, n);
		if (rc != 0)
			log_error("draft model failed: %s (continuing without drafts)", strerror(-rc));
		for (size_t i = 0; i < n; i++) {
			dq[i]->n_draft = rc == 0 ? dr[i].n_out : 0;
			if (dq[i]->n_q != dq[i]->n_draft)
				dq[i]->n_q = 0; /* greedy drafts (or none): verified as one-hot */
		}
	}
	free(dr);
	free(dq);
}

/* ---- slots and the prefix cache (executor thread, under lock) ---- */

static void retained_drop(struct sched *s, struct retained *r)
{
	s->e->ops->slot_free(s->e, r->slot);
	free(r->toks);
	r->toks = NULL;
	r->slot = -1;
	r->n = 0;
}

static int slot_alloc_evict(struct sched *s);

static void slot_release(struct sched *s, struct sched_seq *q)
{
	if (q->slot < 0)
		return;
	spec_apply_rollback(s, q);
	if (s->cfg.prefix_cache && q->finish != SCHED_ERROR && q->n_fed > 0) {
		struct retained *r = &s->ret[q->slot];
		free(r->toks);
		r->toks = malloc(q->n_fed * sizeof(int32_t));
		if (r->toks) {
			memcpy(r->toks, q->toks, q->n_fed * sizeof(int32_t));
			r->n = q->n_fed;
			r->slot = q->slot;
			r->last_used_ns = clock_now_ns();
			q->slot = -1;
			return;
		}
	}
	s->e->ops->slot_free(s->e, q->slot);
	q->slot = -1;
}

static int slot_acquire(struct sched *s, struct sched_seq *q)
{
	if (s->cfg.prefix_cache && q->plp_n == 0) { /* a scored prompt is computed whole */
		struct retained *best = NULL;
		for (int i = 0; i < s->e->n_slots; i++) {
			struct retained *r = &s->ret[i];
			/* At least one prompt row must remain: its logits give the first token. */
			if (r->slot >= 0 && r->n < q->n_prompt && (!best || r->n > best->n) &&
			    memcmp(r->toks, q->toks, r->n * sizeof(int32_t)) == 0)
				best = r;
		}
		if (best) {
			q->slot = best->slot;
			q->n_fed = best->n;
			q->cached_tokens = (int64_t)best->n;
			free(best->toks);
			best->toks = NULL;
			best->slot = -1;
			best->n = 0;
			return 0;
		}
	}
	int slot = slot_alloc_evict(s);
	if (slot < 0)
		return slot;
	q->slot = slot;
	q->n_fed = 0;
	return 0;
}

/* A free slot, evicting the least recently used retained prefix if needed; or -ENOSPC. */
static int slot_alloc_evict(struct sched *s)
{
	int slot = s->e->ops->slot_alloc(s->e);
	if (slot == -ENOSPC && s->cfg.prefix_cache) {
		struct retained *lru = NULL;
		for (int i = 0; i < s->e->n_slots; i++)
			if (s->ret[i].slot >= 0 && (!lru || s->ret[i].last_used_ns < lru->last_used_ns))
				lru = &s->ret[i];
		if (lru) {
			retained_drop(s, lru);
			slot = s->e->ops->slot_alloc(s->e);
		}
	}
	return slot;
}

/* A slot for q and, for a group's first member, one for every other member still waiting:
 * all or none, so a group never holds part of its slots while waiting for the rest. */
static int group_acquire(struct sched *s, struct sched_seq *q)
{
	int rc = slot_acquire(s, q);
	if (rc != 0 || q->n_kids == 0)
		return rc;
	int i = 0;
	for (; i < q->n_kids; i++) {
		struct sched_seq *k = q->kids[i];
		if (k->state != S_FORKWAIT)
			continue;
		int slot = slot_alloc_evict(s);
		if (slot < 0)
			break;
		k->slot = slot;
	}
	if (i == q->n_kids)
		return 0;
	for (int j = 0; j < i; j++)
		if (q->kids[j]->state == S_FORKWAIT && q->kids[j]->slot >= 0) {
			s->e->ops->slot_free(s->e, q->kids[j]->slot);
			q->kids[j]->slot = -1;
		}
	slot_release(s, q);
	q->n_fed = 0;
	q->cached_tokens = 0;
	return -ENOSPC;
}

/* Releases finished and cancelled sequences, admits waiting ones (FIFO). */
static void housekeeping(struct sched *s)
{
	size_t w = 0;
	bool ended = false;
	for (size_t i = 0; i < s->n_seqs; i++) {
		struct sched_seq *q = s->seqs[i];
		if (q->cancelled && (q->state == S_WAIT || q->state == S_PREFILL || q->state == S_READY ||
				     q->state == S_FORKWAIT)) {
			seq_finish(s, q, SCHED_CANCELLED);
			ended = true;
		}
		if (q->state == S_FINISHED) {
			slot_release(s, q);
			seq_unref(q);
			continue;
		}
		s->seqs[w++] = q;
	}
	s->n_seqs = w;
	/* a sequence cancelled between passes ends here, not in the sampler: its reader must be
	 * woken too, or a vote waiting for its cancelled samples never answers (the wake only
	 * writes an eventfd, so it is safe under the lock) */
	if (ended && s->notify)
		s->notify(s->notify_arg);
	for (size_t i = 0; i < s->n_seqs; i++) {
		struct sched_seq *q = s->seqs[i];
		if (q->state != S_WAIT)
			continue;
		if (group_acquire(s, q) != 0)
			break; /* FIFO: later arrivals do not overtake */
		q->state = S_PREFILL;
		q->queue_ns = clock_now_ns() - q->t_arrive_ns;
		metrics_observe(s->m, &s->m->queue_seconds, (double)q->queue_ns / 1e9);
		metrics_add(s->m, cached_tokens, q->cached_tokens);
		if (q->n_kids > 0 && q->n_fed + 1 >= q->n_prompt)
			group_fork(s, q);
	}
}

/* ---- prompt scores ---- */

/* Position pos's logits row predicts the prompt's token at pos + 1: its log-probability and the
 * row's top plp_n (by a partial selection over the sampleable ids, ties by lower id), under the
 * lock (the executor). */
static void plp_score(struct sched *s, struct sched_seq *q, size_t pos, const float *row)
{
	if (pos + 1 >= q->n_prompt)
		return;
	int32_t nv = s->e->n_sample, n = q->plp_n;
	float mx = -INFINITY;
	for (int32_t i = 0; i < nv; i++)
		mx = row[i] > mx ? row[i] : mx;
	double sum = 0;
	for (int32_t i = 0; i < nv; i++)
		sum += exp((double)row[i] - mx);
	double lse = mx + log(sum);
	size_t at = (pos + 1) * (size_t)n;
	int32_t *ids = q->plp_ids + at;
	float *lp = q->plp_lp + at;
	int32_t have = 0;
	for (int32_t i = 0; i < nv; i++) {
		float v = row[i];
		if (have == n && !(v > row[ids[n - 1]]))
			continue;
		int32_t j = have < n ? have++ : n - 1; /* insert, keeping descending order */
		while (j > 0 && v > row[ids[j - 1]]) {
			ids[j] = ids[j - 1];
			j--;
		}
		ids[j] = i;
	}
	for (int32_t j = 0; j < n; j++)
		lp[j] = (float)((double)row[ids[j]] - lse);
	int32_t t = q->toks[pos + 1], above = 0;
	for (int32_t i = 0; t >= 0 && t < nv && i < nv; i++)
		above += row[i] > row[t] || (row[i] == row[t] && i < t);
	q->plp_tok[pos + 1] = t >= 0 && t < nv ? (float)((double)row[t] - lse) : -INFINITY;
	q->plp_rank[pos + 1] = above + 1;
	if (pos + 2 == q->n_prompt)
		q->plp_done = true;
}

int sched_seq_prompt_scores(struct sched *s, struct sched_seq *q, struct sched_prompt_scores *out)
{
	pthread_mutex_lock(&s->lock);
	int rc = q->plp_n == 0 ? -EINVAL : !q->plp_done && q->n_prompt > 1 ? -EAGAIN : 0;
	if (rc == 0)
		*out = (struct sched_prompt_scores){ .prompt = q->toks, .n_prompt = q->n_prompt, .tok_lp = q->plp_tok,
						     .tok_rank = q->plp_rank, .top_ids = q->plp_ids, .top_lp = q->plp_lp,
						     .n_top = q->plp_n };
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---- executor ---- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *np = realloc(*p, n * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

/* Adds the rows of q's next prompt chunk (at most budget rows). */
static size_t add_chunk(struct sched *s, struct sched_seq *q, size_t budget, size_t *n_rows)
{
	size_t k = prompt_end(q) - q->n_fed;
	if (k > budget)
		k = budget;
	if (q->plp_n > 0) {
		/* A scored prompt goes in fixed pieces of the row cap, whatever the pass's budget:
		 * where a chunk ends changes the floating-point order of the sums, and the same
		 * text must score the same every time. */
		size_t g = s->cfg.prefill_chunk > 0 ? (size_t)s->cfg.prefill_chunk : 512;
		k = prompt_end(q) - q->n_fed;
		if (k > g - q->n_fed % g)
			k = g - q->n_fed % g;
	}
	q->n_draft = 0;
	for (size_t j = 0; j < k; j++) {
		size_t pos = q->n_fed + j;
		s->keep[*n_rows] = 0;
		s->rows[(*n_rows)++] = (struct engine_row){ .slot = q->slot, .token = q->toks[pos], .pos = (int32_t)pos,
							    .want_logits = pos + 1 == q->n_prompt || q->plp_n > 0 };
	}
	q->n_chunk = k;
	q->state = S_RUNNING;
	return k;
}

/* Builds the next pass into s->rows / s->members; returns the member count. */
static size_t build_pass(struct sched *s, size_t *n_rows_out)
{
	size_t n_members = 0, n_rows = 0;
	size_t need = s->n_seqs * (1 + (size_t)(s->cfg.spec_draft_max > 0 ? s->cfg.spec_draft_max : 0)) +
		      (size_t)s->cfg.prefill_chunk + PREFILL_SHORT_ROWS + 1;
	for (size_t i = 0; i < s->n_seqs; i++) /* a scored prompt's fixed piece may exceed the plan */
		if (s->seqs[i]->plp_n > 0 && s->seqs[i]->state == S_PREFILL)
			need += (size_t)(s->cfg.prefill_chunk > 0 ? s->cfg.prefill_chunk : 512);
	if (grow((void **)&s->rows, &s->cap_rows, need, sizeof *s->rows) != 0 ||
	    grow((void **)&s->wants, &s->cap_wants, s->n_seqs + 1, sizeof *s->wants) != 0 ||
	    grow((void **)&s->keep, &s->cap_keep, need, 1) != 0 ||
	    grow((void **)&s->members, &s->cap_members, s->n_seqs + 1, sizeof *s->members) != 0)
		return 0;
	struct sched_seq *first_prefill = NULL;
	for (size_t i = 0; i < s->n_seqs; i++)
		if (s->seqs[i]->state == S_PREFILL && !first_prefill)
			first_prefill = s->seqs[i];
	bool any_ready = false;
	for (size_t i = 0; i < s->n_seqs; i++)
		any_ready |= s->seqs[i]->state == S_READY;
	if (!s->cfg.interleave && first_prefill && (s->last_was_prompt_pass == false || !any_ready)) {
		/* The old way: prompts one at a time in arrival order, each chunk in a
		 * pass of its own; decode passes alternate with the chunks. */
		add_chunk(s, first_prefill, (size_t)s->cfg.prefill_chunk, &n_rows);
		s->members[n_members++] = first_prefill;
		metrics_add(s->m, prefill_chunks, 1);
		s->last_was_prompt_pass = true;
		*n_rows_out = n_rows;
		return n_members;
	}
	s->last_was_prompt_pass = false;
	spec_draft_all(s);
	for (size_t i = 0; i < s->n_seqs; i++) {
		struct sched_seq *q = s->seqs[i];
		if (q->state != S_READY)
			continue;
		int k = q->n_draft;
		s->keep[n_rows] = spec_on(s, q);
		s->rows[n_rows++] = (struct engine_row){ .slot = q->slot, .token = q->toks[q->n_fed],
							 .pos = (int32_t)q->n_fed, .want_logits = true };
		for (int j = 0; j < k; j++) {
			s->keep[n_rows] = 1;
			s->rows[n_rows++] = (struct engine_row){ .slot = q->slot, .token = q->draft[j],
								 .pos = (int32_t)(q->n_fed + 1 + (size_t)j), .want_logits = true };
		}
		q->n_chunk = 0;
		q->state = S_RUNNING;
		s->members[n_members++] = q;
	}
	if (!s->cfg.interleave) {
		*n_rows_out = n_rows;
		return n_members; /* the old way: decode passes carry no prompt rows */
	}
	size_t n_decode = n_rows, n_wants = 0;
	int64_t since_finish = s->passes_started - s->last_finish_pass;
	for (size_t i = 0; i < s->n_seqs; i++) {
		struct sched_seq *q = s->seqs[i];
		/* a stream whose token of this pass (or of the one being sampled) is its last by
		 * length: its turn ends now, and its next one should not find a long pass */
		if ((q->state == S_RUNNING || q->state == S_SAMPLING) && q->n_chunk == 0 &&
		    q->n_gen + 2 + q->n_draft >= q->max_tokens)
			since_finish = 0;
		if (q->state == S_PREFILL)
			s->wants[n_wants++] = (struct prefill_want){ .left = prompt_end(q) - q->n_fed, .skipped = q->skipped,
								     .order = q->order, .seq = q };
	}
	size_t cap = (size_t)s->cfg.prefill_chunk, rows = cap;
	double budget = prefill_budget_ns(&s->cost, (double)s->cfg.prefill_budget_ns);
	metrics_set(s->m, prefill_budget_ns, (int64_t)budget);
	int pressure = prefill_pressure(s->wants, n_wants, n_decode + (size_t)s->n_sampling, since_finish);
	if (pressure == PREFILL_DECODING)
		budget *= PREFILL_DECODING_FACTOR;
	if (pressure != PREFILL_IDLE)
		rows = prefill_rows_within(&s->cost, n_decode, budget, PREFILL_MIN_ROWS, cap);
	prefill_plan(s->wants, n_wants, rows);
	for (size_t i = 0; i < n_wants; i++) {
		struct sched_seq *q = s->wants[i].seq;
		if (s->wants[i].grant == 0) {
			q->skipped++;
			continue;
		}
		q->skipped = 0;
		add_chunk(s, q, s->wants[i].grant, &n_rows);
		s->members[n_members++] = q;
		metrics_add(s->m, prefill_chunks, 1);
		metrics_observe(s->m, &s->m->prefill_chunk_rows, (double)s->wants[i].grant);
	}
	*n_rows_out = n_rows;
	return n_members;
}

static bool has_work(struct sched *s)
{
	for (size_t i = 0; i < s->n_seqs; i++)
		if (s->seqs[i]->state == S_READY || s->seqs[i]->state == S_PREFILL)
			return true;
	return false;
}

static void straggler_wait(struct sched *s)
{
	if (!s->cfg.straggler_wait || s->n_sampling == 0)
		return;
	double scale = s->e->time_scale > 0 ? s->e->time_scale : 1;
	int64_t w = (int64_t)(s->cfg.straggler_frac * (double)s->last_pass_ns);
	int64_t lo = (int64_t)((double)s->cfg.straggler_min_ns / scale), hi = (int64_t)((double)s->cfg.straggler_max_ns / scale);
	w = w < lo ? lo : w > hi ? hi : w;
	int64_t t0 = clock_now_ns();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t dl = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + w;
	ts.tv_sec = dl / 1000000000LL;
	ts.tv_nsec = dl % 1000000000LL;
	while (s->n_sampling > 0 && !s->stopping)
		if (pthread_cond_timedwait(&s->exec_cv, &s->lock, &ts) == ETIMEDOUT)
			break;
	metrics_add(s->m, straggler_waits, 1);
	metrics_observe(s->m, &s->m->straggler_wait_seconds, (double)(clock_now_ns() - t0) / 1e9);
}

static void *exec_main(void *arg)
{
	struct sched *s = arg;
	size_t n_logits = (size_t)s->e->n_logits;
	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		housekeeping(s);
		if (!has_work(s)) {
			pthread_cond_wait(&s->exec_cv, &s->lock);
			continue;
		}
		straggler_wait(s);
		housekeeping(s); /* new arrivals during the wait join this pass */
		if (s->stopping)
			break;
		size_t n_rows = 0;
		bool split = s->n_sampling > 0;
		size_t n_members = build_pass(s, &n_rows);
		if (n_members == 0) {
			pthread_cond_wait(&s->exec_cv, &s->lock);
			continue;
		}
		int64_t pass_no = ++s->passes_started;
		size_t n_want = 0;
		for (size_t i = 0; i < n_rows; i++)
			n_want += s->rows[i].want_logits;
		struct batch *b = calloc(1, sizeof *b);
		/* Reuse the buffer of a pass the sampler has finished: with a large vocabulary
		 * a fresh allocation per pass costs thousands of page faults. */
		size_t want_floats = (n_want ? n_want : 1) * n_logits;
		float *logits = b ? spare_take(s, &want_floats) : NULL;
		struct batch_item *items = b ? calloc(n_want ? n_want : 1, sizeof *items) : NULL;
		int rc = (b && logits && items) ? 0 : -ENOMEM;
		pthread_mutex_unlock(&s->lock);
		int64_t t0 = clock_now_ns();
		if (rc == 0 && s->cfg.spec_draft_max > 0 && s->e->ops->forward_keep)
			rc = s->e->ops->forward_keep(s->e, s->rows, n_rows, s->keep, logits);
		else if (rc == 0)
			rc = s->e->ops->forward(s->e, s->rows, n_rows, logits);
		int64_t dt = clock_now_ns() - t0;
		pthread_mutex_lock(&s->lock);
		s->last_pass_ns = dt;
		if (rc == 0) {
			double scale = s->e->time_scale > 0 ? s->e->time_scale : 1;
			prefill_model_observe(&s->cost, n_want, n_rows - n_want, (double)dt * scale);
			metrics_set(s->m, cost_base_ns, (int64_t)s->cost.cost.base_ns);
			metrics_set(s->m, cost_decode_row_ns, (int64_t)s->cost.cost.decode_row_ns);
			metrics_set(s->m, cost_prompt_row_ns, (int64_t)s->cost.cost.prompt_row_ns);
		}
		metrics_observe(s->m, &s->m->pass_prompt_rows, (double)(n_rows - n_want));
		metrics_add(s->m, passes, 1);
		if (rc != 0)
			metrics_add(s->m, pass_errors, 1);
		atomic_store(&s->m->last_pass_failed, rc != 0);
		metrics_add(s->m, rows, n_rows);
		metrics_add(s->m, decode_rows, n_want);
		metrics_add(s->m, prefill_rows, n_rows - n_want);
		if (split)
			metrics_add(s->m, split_passes, 1);
		metrics_observe(s->m, &s->m->rows_per_pass, (double)n_rows);
		metrics_observe(s->m, &s->m->pass_seconds, (double)dt / 1e9);
		size_t k = 0, lrow = 0; /* items, logits rows used */
		for (size_t i = 0; i < n_members; i++) {
			struct sched_seq *q = s->members[i];
			if (rc != 0) {
				log_error("forward pass failed: %s", strerror(-rc));
				seq_finish(s, q, SCHED_ERROR);
				continue;
			}
			bool prompt_done = true;
			if (q->n_chunk > 0 && q->plp_n > 0) {
				/* every row of the chunk gave logits: score the prompt's next tokens; the
				 * last row (when it ends the prompt) is sampled below as usual */
				for (size_t j = 0; j < q->n_chunk; j++)
					plp_score(s, q, q->n_fed + j, logits + (lrow + j) * n_logits);
				lrow += q->n_chunk - 1;
				if (q->n_fed + q->n_chunk < q->n_prompt)
					lrow++; /* no row of this chunk is sampled */
			}
			if (q->n_chunk > 0) {
				q->n_fed += q->n_chunk;
				if (q->n_kids > 0 && q->n_fed == prompt_end(q)) {
					if (q->cancelled)
						seq_finish(s, q, SCHED_CANCELLED);
					else
						group_fork(s, q);
					continue;
				}
				prompt_done = q->n_fed == q->n_prompt;
			} else {
				q->n_fed += 1 + (size_t)q->n_draft;
			}
			if (!prompt_done) {
				q->state = q->cancelled ? (seq_finish(s, q, SCHED_CANCELLED), S_FINISHED) : S_PREFILL;
				continue;
			}
			if (q->first_pass < 0) {
				q->first_pass = pass_no;
				bool shrt = q->n_prompt - (size_t)q->cached_tokens <= PREFILL_SHORT_ROWS;
				metrics_observe(s->m, shrt ? &s->m->prefill_wait_short : &s->m->prefill_wait_long,
						(double)(clock_now_ns() - q->t_arrive_ns) / 1e9);
			}
			items[k] = (struct batch_item){ q, logits + lrow * n_logits };
			k++;
			lrow += 1 + (size_t)(q->n_chunk > 0 ? 0 : q->n_draft);
			q->state = S_SAMPLING;
			s->n_sampling++;
		}
		if (rc != 0 || k == 0) {
			logits_free(s, logits);
			free(items);
			free(b);
			if (s->notify) /* a failure, or a prompt cancelled in this pass, has ended */
				s->notify(s->notify_arg);
			continue;
		}
		b->n_items = k;
		b->items = items;
		b->logits = logits;
		b->n_floats = want_floats;
		if (s->q_tail)
			s->q_tail->next = b;
		else
			s->q_head = b;
		s->q_tail = b;
		pthread_cond_signal(&s->samp_cv);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- sampler ---- */

static bool utf8_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

/* Bytes at the end of p[0..n) that form an incomplete UTF-8 sequence. */
static size_t utf8_incomplete_tail(const char *p, size_t n)
{
	size_t i = n, back = 0;
	while (i > 0 && back < 4 && utf8_cont((unsigned char)p[i - 1])) {
		i--;
		back++;
	}
	if (i == 0)
		return 0;
	unsigned char lead = (unsigned char)p[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	return need > back + 1 ? back + 1 : 0;
}

/* Appends p[0..n) to out with every invalid UTF-8 sequence replaced by U+FFFD, so
 * that clients always receive valid JSON strings (a random or badly sampled model
 * can emit stray continuation bytes). */
static int utf8_append_valid(struct buf *out, const char *p, size_t n)
{
	size_t i = 0, run = 0; /* run: start of the pending valid bytes */
	int rc = 0;
	while (i < n && rc == 0) {
		unsigned char c = (unsigned char)p[i];
		size_t need = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
		bool ok = need > 0 && i + need <= n;
		for (size_t k = 1; ok && k < need; k++)
			ok = utf8_cont((unsigned char)p[i + k]);
		if (ok && need == 3) /* overlongs and surrogates */
			ok = !(c == 0xE0 && (unsigned char)p[i + 1] < 0xA0) && !(c == 0xED && (unsigned char)p[i + 1] >= 0xA0);
		if (ok && need == 4)
			ok = !(c == 0xF0 && (unsigned char)p[i + 1] < 0x90) && !(c == 0xF4 && (unsigned char)p[i + 1] >= 0x90);
		if (ok) {
			i += need;
			continue;
		}
		rc = buf_append(out, p + run, i - run);
		if (rc == 0)
			rc = buf_append(out, "\xEF\xBF\xBD", 3);
		i++;
		run = i;
	}
	if (rc == 0)
		rc = buf_append(out, p + run, n - run);
	return rc;
}

/* Decides what of q->gen can be shown; returns true when a stop string ended it. */
static bool text_advance(struct sched_seq *q, bool final, size_t *safe_end)
{
	const char *g = q->gen.data ? q->gen.data : "";
	size_t len = q->gen.len;
	size_t hit = len;
	for (size_t i = 0; i < q->n_stop; i++) {
		size_t sl = strlen(q->stop[i]);
		if (sl == 0 || len - q->emitted < sl)
			continue;
		const char *f = memmem(g + q->emitted, len - q->emitted, q->stop[i], sl);
		if (f && (size_t)(f - g) < hit)
			hit = (size_t)(f - g);
	}
	if (hit < len) {
		*safe_end = hit;
		return true;
	}
	size_t end = len;
	if (!final) {
		/* Hold back a tail that could still become a stop string. */
		for (size_t i = 0; i < q->n_stop; i++) {
			size_t sl = strlen(q->stop[i]);
			for (size_t k = sl > 1 ? sl - 1 : 0; k > 0; k--)
				if (k <= len - q->emitted && memcmp(g + len - k, q->stop[i], k) == 0) {
					if (len - k < end)
						end = len - k;
					break;
				}
		}
		end -= utf8_incomplete_tail(g, end);
	}
	*safe_end = end < q->emitted ? q->emitted : end;
	return false;
}

/* Samples a sequence's rows of one pass: one row, or for a speculative step the row of the
 * last token and one per draft. Row i verifies draft i with sampler_pick_draft under the
 * request's transforms: a draft model's draft of a sampled request was drawn from the
 * draft's distribution q (its logits row is kept, n_q), so it is kept with probability
 * min(1, p/q), else the token comes from normalize(max(0, p - q)); a prompt-lookup draft is
 * deterministic (q one-hot): kept with probability p(draft), else drawn from p without it;
 * greedy requests keep a draft exactly when it is the argmax. The first token that differs
 * from its draft ends the step; after all drafts are kept, the last row gives one more token
 * by plain sampling. Each emitted token is thus distributed as the non-speculative
 * sampler's, and a seed fixes the output (drafts depend on the history and the sequence's
 * own draft random numbers). Rejected rows are rolled back by the
 * executor before the sequence's next pass (spec_rb). */
static void sample_row(struct sched *s, struct sched_seq *q, float *logits, struct sampler_scratch *sc,
		       double *qbuf)
{
	enum sched_finish fin = SCHED_RUNNING;
	int32_t tok = -1;
	int n_rows = 1 + q->n_draft, accepted = 0;
	int64_t n_new = 0;
	pthread_mutex_lock(&s->lock);
	bool cancelled = q->cancelled; /* set by the caller's thread */
	pthread_mutex_unlock(&s->lock);
	if (cancelled)
		fin = SCHED_CANCELLED;
	size_t safe_end = q->emitted;
	for (int i = 0; fin == SCHED_RUNNING && i < n_rows; i++) {
		float *lg = logits + (size_t)i * (size_t)s->e->n_logits;
		for (size_t j = 0; j < q->n_bias; j++)
			if (q->bias_ids[j] < s->e->n_sample)
				lg[q->bias_ids[j]] += q->bias[j];
		if (i < q->n_draft) { /* a drafted row: keep the draft or emit the corrected token */
			bool kept;
			const double *qv = NULL; /* NULL: a deterministic draft, q one-hot */
			if (i < q->n_q) {
				if (!qbuf || sampler_probs(&q->sp, q->q_logits + (size_t)i * (size_t)s->e->n_logits,
							   (size_t)s->e->n_sample, sc, qbuf) != 0) {
					fin = SCHED_ERROR;
					break;
				}
				qv = qbuf;
			}
			tok = sampler_pick_draft(&q->sp, &q->rng, lg, (size_t)s->e->n_sample, sc, q->draft[i], qv,
						 &kept);
		} else {
			tok = sampler_pick(&q->sp, &q->rng, lg, (size_t)s->e->n_sample, sc);
		}
		if (tok < 0) {
			fin = SCHED_ERROR;
			break;
		}
		q->toks[q->n_prompt + (size_t)q->n_gen] = tok;
		q->n_gen++;
		n_new++;
		bool eos = !q->ignore_eos && (s->e->ops->is_eog ? s->e->ops->is_eog(s->e, tok) : tok == s->e->eos);
		if (!eos && s->e->ops->detokenize(s->e, tok, &q->gen) != 0)
			fin = SCHED_ERROR;
		bool at_limit = q->n_gen >= q->max_tokens || q->n_prompt + (size_t)q->n_gen >= (size_t)s->e->n_ctx;
		if (text_advance(q, eos || at_limit, &safe_end))
			fin = SCHED_STOP;
		else if (eos)
			fin = SCHED_STOP;
		else if (at_limit)
			fin = SCHED_LENGTH;
		if (fin != SCHED_RUNNING || i == q->n_draft || tok != q->draft[i])
			break;
		accepted++;
	}
	pthread_mutex_lock(&s->lock);
	if (safe_end > q->emitted) {
		size_t end = 0;
		if (utf8_append_valid(&q->out, q->gen.data + q->emitted, safe_end - q->emitted) != 0 ||
		    (end = q->out.len, buf_append(&q->out_ends, &end, sizeof end) != 0))
			fin = SCHED_ERROR;
		q->emitted = safe_end;
	}
	if (n_new > 0)
		metrics_add(s->m, completion_tokens, n_new);
	if (q->n_draft > 0) {
		q->spec_rb = q->n_draft - accepted;
		q->n_fed -= (size_t)q->spec_rb;
		q->spec_steps++;
		q->spec_drafted += q->n_draft;
		q->spec_accepted += accepted;
		metrics_add(s->m, spec_steps, 1);
		metrics_add(s->m, spec_drafted, q->n_draft);
		metrics_add(s->m, spec_accepted, accepted);
		q->n_draft = 0;
		q->n_q = 0;
	}
	q->completion_tokens = q->n_gen;
	s->n_sampling--;
	if (fin != SCHED_RUNNING)
		seq_finish(s, q, fin);
	else
		q->state = S_READY;
	pthread_cond_signal(&s->exec_cv);
	pthread_mutex_unlock(&s->lock);
	if (s->notify)
		s->notify(s->notify_arg);
}

static void *samp_main(void *arg)
{
	struct sched *s = arg;
	struct sampler_scratch sc = { 0 };
	/* the draft's distribution for verifying sampled drafts (NULL without speculation) */
	double *qbuf = s->cfg.spec_draft_max > 0 ? malloc((size_t)s->e->n_sample * sizeof(double)) : NULL;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->q_head && !s->stopping)
			pthread_cond_wait(&s->samp_cv, &s->lock);
		if (s->stopping)
			break;
		struct batch *b = s->q_head;
		s->q_head = b->next;
		if (!s->q_head)
			s->q_tail = NULL;
		pthread_mutex_unlock(&s->lock);
		int64_t host_ns = s->e->ops->host_row_ns ? s->e->ops->host_row_ns(s->e) : 0;
		int64_t t0 = clock_now_ns();
		for (size_t i = 0; i < b->n_items; i++) {
			/* The simulated host work per row, against one deadline per row from
			 * the batch start so that sleep overshoot does not accumulate. */
			int64_t left = t0 + (int64_t)(i + 1) * host_ns - clock_now_ns();
			if (host_ns > 0 && left > 0)
				clock_sleep_ns(left);
			sample_row(s, b->items[i].seq, b->items[i].logits, &sc, qbuf);
		}
		free(b->items);
		pthread_mutex_lock(&s->lock);
		if (s->n_spare < SPARE_LOGITS) { /* freed by the executor (spare_take), never here */
			s->spare_logits[s->n_spare] = b->logits;
			s->spare_floats[s->n_spare++] = b->n_floats;
		} else {
			logits_free(s, b->logits); /* more passes queued for the sampler than spares */
		}
		free(b);
	}
	pthread_mutex_unlock(&s->lock);
	sampler_scratch_finish(&sc);
	free(qbuf);
	return NULL;
}

/* ---- public ---- */

struct sched *sched_create(struct engine *e, const struct sched_config *c, struct metrics *m,
			   void (*notify)(void *arg), void *notify_arg)
{
	struct sched *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->e = e;
	s->cfg = *c;
	if (s->cfg.prefill_chunk < 1)
		s->cfg.prefill_chunk = 1;
	s->m = m;
	struct prefill_cost prior = { e->cost_base_ns, e->cost_decode_row_ns, e->cost_prompt_row_ns };
	prefill_model_init(&s->cost, &prior);
	s->last_finish_pass = -(int64_t)PREFILL_AFTER_TURN;
	s->notify = notify;
	s->notify_arg = notify_arg;
	s->ret = calloc((size_t)e->n_slots, sizeof *s->ret);
	if (!s->ret) {
		free(s);
		return NULL;
	}
	for (int i = 0; i < e->n_slots; i++)
		s->ret[i].slot = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->exec_cv, &ca);
	pthread_cond_init(&s->samp_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&s->exec_thread, NULL, exec_main, s) != 0) {
		errno = EAGAIN;
		sched_destroy(s);
		return NULL;
	}
	if (pthread_create(&s->samp_thread, NULL, samp_main, s) != 0) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_broadcast(&s->exec_cv);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->exec_thread, NULL);
		errno = EAGAIN;
		free(s->ret);
		free(s);
		return NULL;
	}
	s->threads_started = true;
	return s;
}

void sched_stop(struct sched *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->exec_cv);
	pthread_cond_broadcast(&s->samp_cv);
	pthread_mutex_unlock(&s->lock);
	if (s->threads_started) {
		pthread_join(s->exec_thread, NULL);
		pthread_join(s->samp_thread, NULL);
		s->threads_started = false;
	}
}

void sched_destroy(struct sched *s)
{
	if (!s)
		return;
	sched_stop(s);
	while (s->q_head) {
		struct batch *b = s->q_head;
		s->q_head = b->next;
		free(b->items);
		logits_free(s, b->logits);
		free(b);
	}
	for (size_t i = 0; i < s->n_seqs; i++) {
		if (s->seqs[i]->slot >= 0)
			s->e->ops->slot_free(s->e, s->seqs[i]->slot);
		seq_unref(s->seqs[i]);
	}
	for (int i = 0; i < s->e->n_slots; i++)
		if (s->ret[i].slot >= 0)
			retained_drop(s, &s->ret[i]);
	free(s->seqs);
	for (int i = 0; i < s->n_spare; i++)
		logits_free(s, s->spare_logits[i]);
	free(s->ret);
	free(s->rows);
	free(s->keep);
	free(s->members);
	free(s->wants);
	sampler_scratch_finish(&s->exec_sc);
	pthread_cond_destroy(&s->exec_cv);
	pthread_cond_destroy(&s->samp_cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* A new sequence from p (not yet queued), or NULL (ENOMEM). */
static struct sched_seq *seq_new(const struct sched_seq_params *p, uint64_t seed)
{
	struct sched_seq *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	buf_init(&q->gen);
	buf_init(&q->out);
	buf_init(&q->out_ends);
	q->toks = malloc((p->n_prompt + (size_t)p->max_tokens) * sizeof(int32_t));
	q->stop = p->n_stop ? calloc(p->n_stop, sizeof(char *)) : NULL;
	if (!q->toks || (p->n_stop && !q->stop))
		goto fail;
	memcpy(q->toks, p->prompt, p->n_prompt * sizeof(int32_t));
	if (p->n_bias) {
		q->bias_ids = malloc(p->n_bias * sizeof(int32_t));
		q->bias = malloc(p->n_bias * sizeof(float));
		if (!q->bias_ids || !q->bias)
			goto fail;
		memcpy(q->bias_ids, p->bias_ids, p->n_bias * sizeof(int32_t));
		memcpy(q->bias, p->bias, p->n_bias * sizeof(float));
		q->n_bias = p->n_bias;
	}
	for (size_t i = 0; i < p->n_stop; i++) {
		q->stop[i] = strdup(p->stop[i]);
		q->n_stop = i + 1;
		if (!q->stop[i])
			goto fail;
	}
	if (p->prompt_logprobs > 0) {
		size_t cells = p->n_prompt * (size_t)p->prompt_logprobs;
		q->plp_n = p->prompt_logprobs;
		q->plp_tok = calloc(p->n_prompt, sizeof(float));
		q->plp_rank = calloc(p->n_prompt, sizeof(int32_t));
		q->plp_ids = calloc(cells, sizeof(int32_t));
		q->plp_lp = calloc(cells, sizeof(float));
		if (!q->plp_tok || !q->plp_rank || !q->plp_ids || !q->plp_lp)
			goto fail;
	}
	q->n_prompt = p->n_prompt;
	q->max_tokens = p->max_tokens;
	q->sp = p->sampling;
	sampler_rng_seed(&q->rng, seed);
	sampler_rng_seed(&q->draft_rng, seed ^ 0xD1B54A32D192ED03ULL);
	q->ignore_eos = p->ignore_eos;
	q->t_arrive_ns = clock_now_ns();
	q->state = S_WAIT;
	q->slot = -1;
	q->refs = 2;
	q->queue_ns = -1;
	q->first_pass = -1;
	return q;
fail:
	seq_free(q);
	return NULL;
}

struct sched_seq *sched_submit(struct sched *s, const struct sched_seq_params *p)
{
	struct sched_seq *q = NULL;
	int rc = sched_submit_group(s, p, 1, &q);
	if (rc != 0) {
		errno = -rc;
		return NULL;
	}
	return q;
}

int sched_submit_group(struct sched *s, const struct sched_seq_params *p, int k, struct sched_seq **out)
{
	if (p->n_prompt == 0 || p->max_tokens < 1 || k < 1 || k > s->e->n_slots || (k > 1 && !s->e->ops->slot_copy) ||
	    p->prompt_logprobs < 0 || p->prompt_logprobs > s->e->n_sample || (k > 1 && p->prompt_logprobs > 0))
		return -EINVAL;
	struct sched_seq **kids = k > 1 ? calloc((size_t)k - 1, sizeof *kids) : NULL;
	if (k > 1 && !kids)
		return -ENOMEM;
	for (int i = 0; i < k; i++) {
		out[i] = seq_new(p, p->seed + (uint64_t)i);
		if (!out[i]) {
			for (int j = 0; j < i; j++)
				seq_free(out[j]);
			free(kids);
			return -ENOMEM;
		}
	}
	for (int i = 1; i < k; i++) {
		out[i]->state = S_FORKWAIT;
		out[i]->refs++; /* held by the first member until the fork */
		kids[i - 1] = out[i];
	}
	out[0]->kids = kids;
	out[0]->n_kids = k - 1;
	pthread_mutex_lock(&s->lock);
	if (grow((void **)&s->seqs, &s->cap_seqs, s->n_seqs + (size_t)k, sizeof *s->seqs) != 0) {
		pthread_mutex_unlock(&s->lock);
		for (int i = 1; i < k; i++)
			out[i]->refs--;
		for (int i = 0; i < k; i++)
			seq_free(out[i]);
		return -ENOMEM;
	}
	for (int i = 0; i < k; i++) {
		out[i]->sched = s;
		out[i]->order = s->next_order++;
		out[i]->arrive_pass = s->passes_started;
		s->seqs[s->n_seqs++] = out[i];
	}
	pthread_cond_signal(&s->exec_cv);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int sched_seq_take(struct sched *s, struct sched_seq *q, struct buf *text, struct sched_status *st)
{
	return sched_seq_take_pieces(s, q, text, NULL, st);
}

int sched_seq_take_pieces(struct sched *s, struct sched_seq *q, struct buf *text, struct buf *ends,
			  struct sched_status *st)
{
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	size_t base = text ? text->len : 0;
	if (q->out.len && text)
		rc = buf_append(text, q->out.data, q->out.len);
	if (rc == 0 && text && ends) {
		size_t n = q->out_ends.len / sizeof(size_t);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			size_t e;
			memcpy(&e, q->out_ends.data + i * sizeof e, sizeof e);
			e += base;
			rc = buf_append(ends, &e, sizeof e);
		}
	}
	buf_reset(&q->out);
	buf_reset(&q->out_ends);
	st->finish = q->finish;
	st->completion_tokens = q->completion_tokens;
	st->cached_tokens = q->cached_tokens;
	st->queue_ns = q->queue_ns;
	st->wait_passes = q->first_pass < 0 ? -1 : q->first_pass - q->arrive_pass;
	st->spec_steps = q->spec_steps;
	st->spec_drafted = q->spec_drafted;
	st->spec_accepted = q->spec_accepted;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

size_t sched_seq_tokens(struct sched *s, struct sched_seq *q, int32_t *ids, size_t cap)
{
	pthread_mutex_lock(&s->lock);
	size_t n = (size_t)q->completion_tokens; /* published: the sampler is done with them */
	memcpy(ids, q->toks + q->n_prompt, (n < cap ? n : cap) * sizeof(int32_t));
	pthread_mutex_unlock(&s->lock);
	return n;
}

void sched_seq_release(struct sched *s, struct sched_seq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&s->lock);
	if (q->finish == SCHED_RUNNING)
		q->cancelled = true;
	pthread_cond_signal(&s->exec_cv);
	seq_unref(q);
	pthread_mutex_unlock(&s->lock);
}

void sched_seq_cancel(struct sched *s, struct sched_seq *q)
{
	pthread_mutex_lock(&s->lock);
	if (q->finish == SCHED_RUNNING)
		q->cancelled = true;
	pthread_cond_signal(&s->exec_cv);
	pthread_mutex_unlock(&s->lock);
}

void sched_counts(struct sched *s, int64_t *active, int64_t *waiting)
{
	int64_t a = 0, w = 0;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n_seqs; i++) {
		if (s->seqs[i]->state == S_WAIT || (s->seqs[i]->state == S_FORKWAIT && s->seqs[i]->slot < 0))
			w++;
		else if (s->seqs[i]->state != S_FINISHED)
			a++;
	}
	pthread_mutex_unlock(&s->lock);
	*active = a;
	*waiting = w;
}
