/* spec_draft — a draft model for the server's speculative decoding: per state slot of the
 * target, the draft keeps its own state and the ids it has consumed, and proposes up to k
 * greedy tokens after a sequence's history. Before drafting it re-synchronises with the
 * history by itself: it rolls back the ids that are not a prefix of the history (its own
 * rejected drafts), feeds the new history ids, then drafts one row per pass; all the
 * sequences of one call share those passes.
 *
 * Drafts are greedy unless a request brings a pick function (the scheduler samples the drafts
 * of sampled requests from the draft's distribution, sampler.h).
 * Does not: verify (the target does), touch the target's state.
 * Threads: one call at a time (the scheduler's executor). Ownership: the history arrays are
 * borrowed for the call. */
#ifndef SIXI_SERVER_SPEC_DRAFT_H
#define SIXI_SERVER_SPEC_DRAFT_H
#include <stddef.h>
#include <stdint.h>

struct model;
struct spec_draft;

struct spec_draft_req {
	int slot;
	const int32_t *hist; /* (n_hist) the sequence's ids so far, the last not yet verified */
	int n_hist;
	int k;               /* tokens wanted, 1..k_max */
	int32_t *out;        /* (k) drafts */
	int n_out;           /* set: tokens drafted */
	/* Optional: picks draft j from the draft model's logits row (n_vocab floats) instead of
	 * the argmax, e.g. by sampling (and keeps what the verification needs); NULL: greedy. */
	int32_t (*pick)(void *arg, int j, const float *logits, int n_vocab);
	void *pick_arg;
};

/* Loads the draft GGUF; refuses one whose vocabulary differs from target's. NULL with a
 * message in err. */
struct spec_draft *spec_draft_open(const char *path, const struct model *target, int n_slots, int n_ctx,
				   int k_max, int n_threads, char *err, size_t errlen);
void spec_draft_free(struct spec_draft *d);
/* Forgets what the slot consumed (a new sequence takes it). */
void spec_draft_reset(struct spec_draft *d, int slot);
/* Feeds the draft rows its target consumes anyway (prompt chunks) so that the draft need not
 * catch up on them when it drafts: rows (tokens, slots, pos: n each, a slot's rows consecutive
 * and in order) whose segment has keep set are skipped, and so are a slot's rows unless the
 * first continues what the slot consumed (pos == ids consumed); spec_draft_run's catch-up
 * handles whatever was skipped. No logits. Meant to run on a second thread while the target
 * runs the same rows (one call at a time per draft still). 0 or -errno (nothing consumed). */
int spec_draft_feed(struct spec_draft *d, const int32_t *tokens, const int32_t *slots, const int32_t *pos,
		    const uint8_t *keep, int n);
/* Drafts for n requests (distinct slots). 0 or -errno. */
int spec_draft_run(struct spec_draft *d, struct spec_draft_req *r, size_t n);
/* Bytes of the draft's state pool (all slots), for the memory report. */
size_t spec_draft_state_bytes(const struct spec_draft *d);
#endif
