/* engine — what the scheduler needs from a model: tokenise, detokenise, run one
 * forward pass over a batch of rows from many sequences, and manage the pool of
 * per-sequence state slots. Three backends implement it: the simulated device
 * (sim.h, a cost model with deterministic tokens), the real model on the CPU
 * (real.h) and the same model on a GPU (cuda/engine_cuda.h).
 *
 * Ownership: an engine is created by its backend and freed by engine_destroy.
 * Threads: forward, slot_alloc and slot_free are called from the scheduler's
 * executor thread only; tokenize and detokenize may be called from any thread
 * and must not touch per-slot state. Fields of struct engine are read-only
 * after creation, except state_copies, which the backend counts. */
#ifndef SIXI_SERVER_ENGINE_H
#define SIXI_SERVER_ENGINE_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct engine;

/* One row of a pass: feed token at position pos of the sequence in slot. */
struct engine_row {
	int32_t slot;
	int32_t token;
	int32_t pos;
	bool want_logits; /* the last prompt row and every decode row */
};

/* A draft request (engine_ops.draft): up to k tokens after hist (greedy unless pick is set). */
struct engine_draft {
	int32_t slot;
	const int32_t *hist; /* (n_hist) ids so far, the last not yet verified */
	int32_t n_hist;
	int32_t k;
	int32_t *out;        /* (k) */
	int32_t n_out;       /* set by the engine */
	/* Optional: draft j from the draft's logits row instead of its argmax (spec_draft.h). */
	int32_t (*pick)(void *arg, int j, const float *logits, int n_vocab);
	void *pick_arg;
};

struct engine_ops {
	/* UTF-8 text -> ids. Writes at most cap ids; *n gets the full count (may exceed cap). 0 or -errno. */
	int (*tokenize)(struct engine *e, const char *text, size_t len, int32_t *ids, size_t cap, size_t *n);
	/* Appends the bytes of one token to out. 0 or -errno. */
	int (*detokenize)(struct engine *e, int32_t id, struct buf *out);
	/* End of generation (EOS, EOT, a turn end)? NULL: only id == eos. */
	bool (*is_eog)(struct engine *e, int32_t id);
	/* Runs rows[0..n) as one pass. logits gets one row of n_logits floats per
	 * row with want_logits, in row order: (n_want, n_logits). 0 or -errno. */
	int (*forward)(struct engine *e, const struct engine_row *rows, size_t n, float *logits);
	/* A free state slot (reset to position 0), or -ENOSPC. */
	int (*slot_alloc)(struct engine *e);
	void (*slot_free)(struct engine *e, int slot);
	/* Optional (NULL: no grouped samples): dst becomes an exact copy of src's state (recurrent
	 * state, conv window, KV rows, rollback log, position). 0 or -errno. */
	int (*slot_copy)(struct engine *e, int dst, int src);
	/* Optional (NULL: no speculative decoding). forward_keep is forward with keep[n]: a slot
	 * whose first row has keep set keeps its rows revocable; rollback drops a slot's last n
	 * kept rows. 0 or -errno. */
	int (*forward_keep)(struct engine *e, const struct engine_row *rows, size_t n, const uint8_t *keep,
			    float *logits);
	int (*rollback)(struct engine *e, int slot, int n);
	/* Optional: drafts by a draft model for n sequences at once (NULL: the scheduler drafts by
	 * prompt lookup). 0 or -errno. */
	int (*draft)(struct engine *e, struct engine_draft *d, size_t n);
	/* Optional (NULL: malloc and free): memory for forward's logits. A GPU engine gives
	 * page-locked memory, into which the device copies at full speed (a pass of 32 rows of a
	 * 248320-token vocabulary moves 32 MB). logits_alloc returns NULL when out of memory;
	 * logits_free accepts NULL. */
	float *(*logits_alloc)(struct engine *e, size_t n_floats);
	void (*logits_free)(struct engine *e, float *p);
	/* Host work per sampled row that the backend simulates (ns, already
	 * time-scaled); 0 for real backends, whose host work is real. */
	int64_t (*host_row_ns)(struct engine *e);
	void (*destroy)(struct engine *e);
};

struct engine {
	const struct engine_ops *ops;
	const char *name;     /* model name for /v1/models */
	int32_t n_vocab;      /* ids accepted in prompts: [0, n_vocab) */
	int32_t n_logits;     /* logits per row (the row stride of forward's output) */
	int32_t n_sample;     /* ids [0, n_sample) can be sampled (<= n_logits; a model may pad its rows) */
	int32_t eos;          /* end-of-sequence id, -1 if none */
	int32_t n_ctx;        /* positions per slot */
	int32_t n_slots;      /* sequences that can be resident at once */
	double time_scale;    /* simulated time runs this many times faster; 1 for real engines */
	const char *chat_template; /* Jinja source the model ships, or NULL (ChatML is used) */
	const char *bos_text;      /* text of the BOS token for templates, or NULL */
	const char *eos_text;      /* text of the EOS token for templates, or NULL */
	/* a prior for the scheduler's pass-cost model (prefill.h), device ns; 0: none given */
	double cost_base_ns, cost_decode_row_ns, cost_prompt_row_ns;
	_Atomic int64_t state_copies; /* recurrent-state copies made by forward passes: must stay 0 */
	/* bytes of the state pool by part (0 where the backend has none): attention KV cache, GDN
	 * states, conv windows, the rollback log (or ring), and a snapshot ring of the same depth */
	int64_t mem_kv, mem_gdn_state, mem_conv, mem_rollback, mem_snapshot_ring;
};

static inline void engine_destroy(struct engine *e)
{
	if (e)
		e->ops->destroy(e);
}
#endif
