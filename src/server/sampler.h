/* sampler — picks the next token from one row of logits: temperature, top-k,
 * top-p, min-p, seeded random numbers. Arguments are borrowed.
 * Temperature 0 is greedy (lowest id wins ties), so it is deterministic
 * whatever the batch a row was computed in. */
#ifndef SIXI_SERVER_SAMPLER_H
#define SIXI_SERVER_SAMPLER_H
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

/* Scratch for sampler_pick: two arrays of n_vocab entries, reused across calls. */
struct sampler_scratch {
	void *cand;        /* (n_vocab) candidates: id + probability */
	size_t cap;        /* entries allocated */
};
void sampler_scratch_finish(struct sampler_scratch *sc);

/* Returns the chosen token id, or -ENOMEM. logits: (n_vocab) floats, not modified. */
__attribute__((warn_unused_result)) int32_t sampler_pick(const struct sampler_params *p, struct sampler_rng *rng,
							   const float *logits, size_t n_vocab,
							   struct sampler_scratch *sc);
#endif
