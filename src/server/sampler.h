/* sampler — picks the next token from one row of logits: temperature, top-k,
 * top-p, min-p, seeded random numbers. Arguments are borrowed.
 * Temperature 0 is greedy (lowest id wins ties), so it is deterministic
 * whatever the batch a row was computed in. */
#ifndef SIXI_SERVER_SAMPLER_H
#define SIXI_SERVER_SAMPLER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sampler_params {
	double temperature; /* 0 = greedy */
	double top_p;       /* 1 = off */
	int64_t top_k;      /* 0 = off */
	double min_p;       /* 0 = off; keep tokens with p >= min_p * p_max */
};

struct sampler_rng {
	uint64_t s[2]; /* xorshift128+ state, never all zero */
};

void sampler_rng_seed(struct sampler_rng *r, uint64_t seed);
/* Uniform in [0, 1). */
double sampler_rng_uniform(struct sampler_rng *r);

/* Scratch for sampler_pick: arrays of up to n_vocab entries, reused across calls. */
struct sampler_scratch {
	void *cand;        /* (cap) candidates: id + probability */
	size_t cap;        /* entries allocated */
	double *pd;        /* (pd_cap) probabilities for speculative verification: p, then the residual */
	size_t pd_cap;
};
void sampler_scratch_finish(struct sampler_scratch *sc);

/* Returns the chosen token id, or -ENOMEM. logits: (n_vocab) floats, not modified. */
__attribute__((warn_unused_result)) int32_t sampler_pick(const struct sampler_params *p, struct sampler_rng *rng,
							   const float *logits, size_t n_vocab,
							   struct sampler_scratch *sc);

/* The distribution sampler_pick draws from, after every transform (temperature, top-k,
 * top-p, min-p): probs (n_vocab) gets each id's probability (0 for ids cut). Temperature 0
 * (or top_k 1) gives 1 at the argmax. 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int sampler_probs(const struct sampler_params *p, const float *logits,
							size_t n_vocab, struct sampler_scratch *sc, double *probs);

/* ---- exact speculative sampling ----
 * A drafted token x, proposed from the draft's distribution q, is accepted with probability
 * min(1, p(x)/q(x)); on rejection the token is drawn from normalize(max(0, p - q)). The token
 * emitted is then distributed exactly as p, whatever q. A deterministic draft (prompt
 * lookup, or a draft model's greedy token) is q one-hot at x: accept with probability p(x),
 * else draw from p with x removed, renormalised. */

/* The core over n outcomes. p: target probabilities; q: the draft's, or NULL for one-hot at
 * x; x: the drafted outcome's index, or -1 when it is none of the n (then p(x) = 0; q must be
 * NULL). Returns the probability of accepting x; residual (n) gets the distribution drawn
 * from on rejection (p itself when p - q has no positive mass, which happens only when x is
 * always accepted). */
double sampler_spec_residual(const double *p, const double *q, size_t n, long x, double *residual);
/* The outcome for uniforms u1 (the accept test: accepted when u1 < accept) and u2 (the draw
 * from residual by cumulative mass). */
long sampler_spec_choose(double accept, const double *residual, size_t n, long x, double u1, double u2);

/* One verification step on a row of target logits: the token to emit for drafted token x
 * (draft distribution q over n_vocab ids after the same transforms, or NULL for a
 * deterministic draft), with the transforms of p applied to the logits exactly as
 * sampler_pick does. *accepted tells whether x was kept. Draws one uniform, and a second
 * on rejection. Temperature 0: the argmax, accepted when it is x. Returns the id or -ENOMEM. */
__attribute__((warn_unused_result)) int32_t sampler_pick_draft(const struct sampler_params *p,
								 struct sampler_rng *rng, const float *logits,
								 size_t n_vocab, struct sampler_scratch *sc,
								 int32_t x, const double *q, bool *accepted);
#endif
