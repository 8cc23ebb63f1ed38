/* scheduler (sched_*) — continuous batching over an engine (engine.h).
 *
 * Two threads. The executor builds each pass from one row per ready decoding
 * sequence plus prompt rows sized by time (prefill.h: within a budget of device time
 * whenever something else waits, fewest rows left first), and runs it without holding
 * the scheduler lock. The sampler turns each pass's logits into tokens, one row
 * after another (sampling, detokenising, stop strings), and marks each sequence
 * ready again. Before a pass the executor waits for sequences still being
 * sampled (the straggler wait: a fraction of the last pass time, clamped; only
 * when one is pending), so streams a few ms late share the pass instead of
 * forcing another full weight read. A sequence missing from a pass simply joins
 * the next one: the pass is never split in two.
 *
 * Ownership: sched_submit copies its inputs; the returned sequence is shared by
 * the caller and the scheduler until both let go (sched_seq_release for the
 * caller). All sequences must be released before sched_destroy. */
#ifndef SIXI_SERVER_SCHEDULER_H
#define SIXI_SERVER_SCHEDULER_H
#include "server/sampler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct engine;
struct metrics;
struct sched;
struct sched_seq;

struct sched_config {
	bool straggler_wait;      /* wait for pending sequences before a pass */
	double straggler_frac;    /* of the last pass time (0.2) */
	int64_t straggler_min_ns; /* clamp, in real (unscaled) time: 4 ms */
	int64_t straggler_max_ns; /* 40 ms */
	int32_t prefill_chunk;    /* most prompt rows of a pass (prefill.h: taken when nothing else waits) */
	int64_t prefill_budget_ns; /* device time of a pass while something waits (prefill.h); 0: six
				    * predicted decode steps */
	bool interleave;          /* decode rows of other sequences run between prompt chunks */
	bool prefix_cache;        /* keep finished sequences' slots to reuse their prefix */
	int32_t spec_draft_max;   /* speculative decoding (spec.h): drafts of up to this many tokens
				   * for every sequence (sampled ones by exact speculative sampling,
				   * sampler.h); 0 = off; needs the engine's
				   * forward_keep and rollback, and at most SCHED_SPEC_MAX */
};
#define SCHED_SPEC_MAX 32
void sched_config_default(struct sched_config *c);

enum sched_finish { SCHED_RUNNING = 0, SCHED_STOP, SCHED_LENGTH, SCHED_CANCELLED, SCHED_ERROR };

struct sched_seq_params {
	const int32_t *prompt;     /* (n_prompt) ids, copied */
	size_t n_prompt;           /* >= 1 */
	int64_t max_tokens;        /* >= 1 */
	struct sampler_params sampling;
	uint64_t seed;
	const char *const *stop;   /* (n_stop) strings, copied */
	size_t n_stop;
	bool ignore_eos;
	const int32_t *bias_ids;   /* (n_bias) logit_bias: ids, copied */
	const float *bias;         /* (n_bias) added to those ids' logits */
	size_t n_bias;
	int32_t prompt_logprobs;   /* > 0: score the prompt, keeping at every position the model's
				    * log-probability of the prompt's token and its top this-many
				    * (raw logits, no bias or temperature); the prompt is then computed
				    * whole (no prefix-cache reuse). Not with groups. */
};

struct sched_status {
	enum sched_finish finish;
	int64_t completion_tokens;
	int64_t cached_tokens;     /* prompt tokens reused from the prefix cache */
	int64_t queue_ns;          /* arrival to slot; -1 while waiting */
	int64_t wait_passes;       /* passes started from arrival to the one giving the first
				    * token, that one included (1: the next pass); -1 before */
	int64_t spec_steps;        /* speculative verification passes */
	int64_t spec_drafted;      /* drafted tokens */
	int64_t spec_accepted;     /* drafted tokens kept */
};

/* notify(arg) is called from the scheduler's threads whenever some sequence has
 * new output; it must be cheap and thread-safe (e.g. an eventfd write).
 * NULL with errno set on failure. */
struct sched *sched_create(struct engine *e, const struct sched_config *c, struct metrics *m,
			   void (*notify)(void *arg), void *notify_arg);
/* Stops and joins the scheduler's threads (idempotent): after it, nothing calls
 * the notify hook, so what the hook points at may be freed. */
void sched_stop(struct sched *s);
void sched_destroy(struct sched *s);

/* NULL with errno set (ENOMEM, EINVAL for an empty prompt). */
struct sched_seq *sched_submit(struct sched *s, const struct sched_seq_params *p);
/* k samples of one prompt (k >= 1, at most the engine's slots; k > 1 needs the engine's
 * slot_copy): out[i] samples with seed p->seed + i. The group waits until k slots are free
 * (first in, first out with the other arrivals), the first member prefills all prompt rows
 * but the last, its state is then forked (copied) into the others' slots, and every member
 * feeds the last prompt token itself and samples from there: the prompt is computed once.
 * Each out[i] is released by sched_seq_release. 0, -EINVAL or -ENOMEM. */
int sched_submit_group(struct sched *s, const struct sched_seq_params *p, int k, struct sched_seq **out);
/* Stops q early (it finishes as SCHED_CANCELLED with the tokens it has); the caller keeps
 * its reference and still reads the final status. */
void sched_seq_cancel(struct sched *s, struct sched_seq *q);
/* Appends text produced since the last call to text (may be NULL to discard). */
__attribute__((warn_unused_result)) int sched_seq_take(struct sched *s, struct sched_seq *q, struct buf *text,
							 struct sched_status *st);
/* As sched_seq_take, and appends to ends (size_t offsets into text) where the text of each
 * executor pass ends: one piece per sampled token, or per accepted run of a speculative step.
 * A client that falls behind still gets one piece per pass. */
__attribute__((warn_unused_result)) int sched_seq_take_pieces(struct sched *s, struct sched_seq *q,
								struct buf *text, struct buf *ends,
								struct sched_status *st);
/* The prompt's scores of a sequence submitted with prompt_logprobs = n_top > 0, valid once its
 * first token was sampled and until sched_seq_release: for position p in [1, n_prompt),
 * tok_lp[p] is log P(prompt[p] | prompt[0..p)) and tok_rank[p] its rank (1: the most likely),
 * top_ids[p * n_top + j] and top_lp[...] the j-th most likely ids and their log-probabilities
 * (ties by lower id); position 0 has none. */
struct sched_prompt_scores {
	const int32_t *prompt;
	size_t n_prompt;
	const float *tok_lp;
	const int32_t *tok_rank;
	const int32_t *top_ids;
	const float *top_lp;
	int32_t n_top;
};
/* 0; -EAGAIN before the prompt is scored, -EINVAL when no scores were asked for. */
__attribute__((warn_unused_result)) int sched_seq_prompt_scores(struct sched *s, struct sched_seq *q,
								struct sched_prompt_scores *out);
/* Copies up to cap of the ids sampled so far into ids; returns how many were sampled. */
size_t sched_seq_tokens(struct sched *s, struct sched_seq *q, int32_t *ids, size_t cap);
/* The caller is done with q; a running sequence is cancelled. */
void sched_seq_release(struct sched *s, struct sched_seq *q);
/* Sequences holding a slot / waiting for one. */
void sched_counts(struct sched *s, int64_t *active, int64_t *waiting);
#endif
