/* sampler — see sampler.h. Order of the filters, as in the common servers:
 * temperature scales the logits, top-k keeps the k largest, softmax, min-p
 * drops tokens below min_p x the largest probability, top-p keeps the smallest
 * prefix (by descending probability) whose mass reaches top_p, then one draw.
 * Work per call: O(V) for the greedy path and the softmax; with top-k, min-p or top-p also a
 * sort of the candidates that survive a cheap pre-cut (tokens more than 40 nats below the
 * maximum after temperature carry less than 1e-17 of the mass and are dropped
 * before sorting).
 * sampler_probs and sampler_pick_draft build the same candidates (candidates()), so the p of
 * a speculative verification is exactly the distribution sampler_pick draws from; with a
 * deterministic draft the verification works on the candidates alone (O(candidates) extra),
 * with a draft distribution q on dense arrays of n_vocab doubles. */
#include "server/sampler.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct cand {
	int32_t id;
	float p; /* logit, then probability */
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

void sampler_rng_seed(struct sampler_rng *r, uint64_t seed)
{
	r->s[0] = splitmix64(&seed);
	r->s[1] = splitmix64(&seed);
	if (!r->s[0] && !r->s[1])
		r->s[1] = 1;
}

double sampler_rng_uniform(struct sampler_rng *r)
{
	uint64_t s1 = r->s[0];
	const uint64_t s0 = r->s[1];
	r->s[0] = s0;
	s1 ^= s1 << 23;
	r->s[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
	return (double)((r->s[1] + s0) >> 11) * (1.0 / 9007199254740992.0);
}

void sampler_scratch_finish(struct sampler_scratch *sc)
{
	if (!sc)
		return;
	free(sc->cand);
	free(sc->pd);
	sc->cand = NULL;
	sc->pd = NULL;
	sc->cap = 0;
	sc->pd_cap = 0;
}

static int by_p_desc(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static size_t argmax(const float *logits, size_t n_vocab)
{
	size_t best = 0;
	for (size_t i = 1; i < n_vocab; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

/* The candidates a sampled (temperature > 0) row draws from: sc->cand[0..*n) with their
 * probabilities before the last renormalisation; *mass gets their sum (the draw is u * mass).
 * 0 or -ENOMEM. */
static int candidates(const struct sampler_params *p, const float *logits, size_t n_vocab, size_t best,
		      struct sampler_scratch *sc, size_t *n_out, double *mass_out)
{
	if (sc->cap < n_vocab) {
		void *c = realloc(sc->cand, n_vocab * sizeof(struct cand));
		if (!c)
			return -ENOMEM;
		sc->cand = c;
		sc->cap = n_vocab;
	}
	struct cand *cand = sc->cand;
	float inv_t = (float)(1.0 / p->temperature);
	float maxl = logits[best] * inv_t;
	size_t n = 0;
	for (size_t i = 0; i < n_vocab; i++) {
		float l = logits[i] * inv_t;
		if (l >= maxl - 40.0f) /* the pre-cut: see the file-top comment */
			cand[n++] = (struct cand){ (int32_t)i, l };
	}
	/* Only the filters need the candidates in order; without them the draw walks them by id
	 * (the same distribution), and a row costs O(V) instead of a sort of nearly all of a large
	 * vocabulary (a random or trained model's logits rarely spread over 40 nats). */
	bool topk = p->top_k > 0 && (size_t)p->top_k < n;
	if (topk || p->min_p > 0 || p->top_p < 1.0)
		qsort(cand, n, sizeof *cand, by_p_desc);
	if (topk)
		n = (size_t)p->top_k;
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		cand[i].p = expf(cand[i].p - maxl);
		sum += cand[i].p;
	}
	for (size_t i = 0; i < n; i++)
		cand[i].p = (float)(cand[i].p / sum);
	if (p->min_p > 0) {
		float cut = (float)(p->min_p * cand[0].p);
		size_t k = 1;
		while (k < n && cand[k].p >= cut)
			k++;
		n = k;
	}
	if (p->top_p < 1.0) {
		double acc = 0;
		size_t k = 0;
		while (k < n) {
			acc += cand[k].p;
			k++;
			if (acc >= p->top_p)
				break;
		}
		n = k;
	}
	double mass = 0;
	for (size_t i = 0; i < n; i++)
		mass += cand[i].p;
	*n_out = n;
	*mass_out = mass;
	return 0;
}

static bool greedy(const struct sampler_params *p)
{
	return p->temperature <= 0 || p->top_k == 1;
}

int32_t sampler_pick(const struct sampler_params *p, struct sampler_rng *rng, const float *logits, size_t n_vocab,
		     struct sampler_scratch *sc)
{
	size_t best = argmax(logits, n_vocab);
	if (greedy(p))
		return (int32_t)best;
	size_t n;
	double mass;
	if (candidates(p, logits, n_vocab, best, sc, &n, &mass) != 0)
		return -ENOMEM;
	const struct cand *cand = sc->cand;
	double u = sampler_rng_uniform(rng) * mass;
	double acc = 0;
	for (size_t i = 0; i < n; i++) {
		acc += cand[i].p;
		if (u < acc)
			return cand[i].id;
	}
	return cand[n - 1].id;
}

int sampler_probs(const struct sampler_params *p, const float *logits, size_t n_vocab, struct sampler_scratch *sc,
		  double *probs)
{
	size_t best = argmax(logits, n_vocab);
	for (size_t i = 0; i < n_vocab; i++)
		probs[i] = 0;
	if (greedy(p)) {
		probs[best] = 1;
		return 0;
	}
	size_t n;
	double mass;
	if (candidates(p, logits, n_vocab, best, sc, &n, &mass) != 0)
		return -ENOMEM;
	const struct cand *cand = sc->cand;
	for (size_t i = 0; i < n; i++)
		probs[cand[i].id] = cand[i].p / mass;
	return 0;
}

double sampler_spec_residual(const double *p, const double *q, size_t n, long x, double *residual)
{
	double accept, total = 0;
	if (!q) {
		double px = x >= 0 ? p[x] : 0;
		accept = px;
		for (size_t i = 0; i < n; i++) {
			residual[i] = (long)i == x ? 0 : p[i];
			total += residual[i];
		}
	} else {
		accept = q[x] > 0 ? (p[x] >= q[x] ? 1.0 : p[x] / q[x]) : (p[x] > 0 ? 1.0 : 0.0);
		for (size_t i = 0; i < n; i++) {
			residual[i] = p[i] > q[i] ? p[i] - q[i] : 0;
			total += residual[i];
		}
	}
	if (total <= 0) {
		for (size_t i = 0; i < n; i++)
			total += residual[i] = p[i];
	}
	for (size_t i = 0; i < n; i++)
		residual[i] /= total;
	return accept;
}

long sampler_spec_choose(double accept, const double *residual, size_t n, long x, double u1, double u2)
{
	if (x >= 0 && u1 < accept)
		return x;
	double acc = 0;
	long last = -1;
	for (size_t i = 0; i < n; i++) {
		if (residual[i] <= 0)
			continue;
		acc += residual[i];
		last = (long)i;
		if (u2 < acc)
			return (long)i;
	}
	return last; /* u2 beyond the rounded total: the last outcome with mass */
}

/* Grows sc->pd to n doubles. */
static int pd_reserve(struct sampler_scratch *sc, size_t n)
{
	if (sc->pd_cap >= n)
		return 0;
	double *d = realloc(sc->pd, n * sizeof *d);
	if (!d)
		return -ENOMEM;
	sc->pd = d;
	sc->pd_cap = n;
	return 0;
}

int32_t sampler_pick_draft(const struct sampler_params *p, struct sampler_rng *rng, const float *logits,
			   size_t n_vocab, struct sampler_scratch *sc, int32_t x, const double *q, bool *accepted)
{
	size_t best = argmax(logits, n_vocab);
	if (greedy(p)) {
		*accepted = (size_t)x == best;
		return (int32_t)best;
	}
	size_t n;
	double mass;
	if (candidates(p, logits, n_vocab, best, sc, &n, &mass) != 0)
		return -ENOMEM;
	const struct cand *cand = sc->cand;
	long pick;
	if (!q) {
		/* Deterministic draft: over the candidates only (the ids p gives mass to). */
		if (pd_reserve(sc, 2 * n) != 0)
			return -ENOMEM;
		double *pc = sc->pd, *res = sc->pd + n;
		long xi = -1;
		for (size_t i = 0; i < n; i++) {
			pc[i] = cand[i].p / mass;
			if (cand[i].id == x)
				xi = (long)i;
		}
		double a = sampler_spec_residual(pc, NULL, n, xi, res);
		double u1 = sampler_rng_uniform(rng);
		double u2 = xi >= 0 && u1 < a ? 0 : sampler_rng_uniform(rng);
		pick = sampler_spec_choose(a, res, n, xi, u1, u2);
		*accepted = pick == xi;
		return cand[pick].id;
	}
	if (pd_reserve(sc, 2 * n_vocab) != 0)
		return -ENOMEM;
	double *pv = sc->pd, *res = sc->pd + n_vocab;
	for (size_t i = 0; i < n_vocab; i++)
		pv[i] = 0;
	for (size_t i = 0; i < n; i++)
		pv[cand[i].id] = cand[i].p / mass;
	double a = sampler_spec_residual(pv, q, n_vocab, x, res);
	double u1 = sampler_rng_uniform(rng);
	double u2 = u1 < a ? 0 : sampler_rng_uniform(rng);
	pick = sampler_spec_choose(a, res, n_vocab, x, u1, u2);
	*accepted = pick == x;
	return (int32_t)pick;
}
