/* unicode_norm — normalization forms and lowercase over the generated tables (see
 * unicode_norm.h). Each call decodes the text into code points, transforms them in a
 * growing array and encodes the result; lookups are binary searches (about 5700
 * decompositions, 940 composites, 1400 lowercase mappings). */
#include "text/unicode_norm.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "text/unicode.h"

/* Hangul syllable arithmetic (The Unicode Standard, section 3.12). */
enum {
	HANGUL_S = 0xAC00, HANGUL_L = 0x1100, HANGUL_V = 0x1161, HANGUL_T = 0x11A7,
	HANGUL_LN = 19, HANGUL_VN = 21, HANGUL_TN = 28, HANGUL_NN = HANGUL_VN * HANGUL_TN,
	HANGUL_SN = HANGUL_LN * HANGUL_NN,
};

struct cpbuf {
	uint32_t *v; /* code points */
	size_t n, cap;
};

static int cpbuf_push(struct cpbuf *b, uint32_t cp)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		uint32_t *nv = realloc(b->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = cap;
	}
	b->v[b->n++] = cp;
	return 0;
}

/* bsearch order for the tables whose entries start with their code point. */
static int cmp_cp(const void *key, const void *entry)
{
	uint32_t k = *(const uint32_t *)key, e = *(const uint32_t *)entry;
	return (k > e) - (k < e);
}

static const struct unicode_decomp *decomp_find(uint32_t cp)
{
	if (cp < 0xA0) /* U+00A0 is the first code point with a mapping */
		return NULL;
	return bsearch(&cp, unicode_decomps, unicode_decomps_count, sizeof unicode_decomps[0], cmp_cp);
}

/* Appends the full decomposition of cp (the mappings' recursion is a few levels deep). */
static int decompose_cp(uint32_t cp, bool compat, struct cpbuf *out)
{
	if (cp >= HANGUL_S && cp < HANGUL_S + HANGUL_SN) {
		uint32_t s = cp - HANGUL_S, t = s % HANGUL_TN;
		int rc = cpbuf_push(out, HANGUL_L + s / HANGUL_NN);
		if (!rc)
			rc = cpbuf_push(out, HANGUL_V + (s % HANGUL_NN) / HANGUL_TN);
		if (!rc && t)
			rc = cpbuf_push(out, HANGUL_T + t);
		return rc;
	}
	const struct unicode_decomp *d = decomp_find(cp);
	if (!d || (d->compat && !compat))
		return cpbuf_push(out, cp);
	for (unsigned i = 0; i < d->len; i++) {
		int rc = decompose_cp(unicode_decomp_pool[d->off + i], compat, out);
		if (rc)
			return rc;
	}
	return 0;
}

/* Canonical ordering: a stable insertion sort of each run of non-starters by class. */
static void canonical_order(struct cpbuf *b)
{
	for (size_t i = 1; i < b->n; i++) {
		uint32_t cp = b->v[i];
		unsigned c = unicode_ccc(cp);
		if (!c)
			continue;
		size_t j = i;
		while (j > 0 && unicode_ccc(b->v[j - 1]) > c) {
			b->v[j] = b->v[j - 1];
			j--;
		}
		b->v[j] = cp;
	}
}

/* The primary composite of a + b, or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b)
{
	if (a >= HANGUL_L && a < HANGUL_L + HANGUL_LN && b >= HANGUL_V && b < HANGUL_V + HANGUL_VN)
		return HANGUL_S + ((a - HANGUL_L) * HANGUL_VN + (b - HANGUL_V)) * HANGUL_TN;
	if (a >= HANGUL_S && a < HANGUL_S + HANGUL_SN && (a - HANGUL_S) % HANGUL_TN == 0 && b > HANGUL_T &&
	    b < HANGUL_T + HANGUL_TN)
		return a + (b - HANGUL_T);
	if (b < unicode_comp_min_second)
		return 0;
	size_t lo = 0, hi = unicode_comps_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct unicode_comp *c = &unicode_comps[mid];
		if (a < c->first || (a == c->first && b < c->second))
			hi = mid;
		else if (a > c->first || b > c->second)
			lo = mid + 1;
		else
			return c->composite;
	}
	return 0;
}

/* Canonical composition in place. A character is blocked from the last starter when a
 * character between them has class 0 or a class >= its own; after canonical ordering the
 * last kept one between them has the largest class, so one comparison decides. */
static void compose(struct cpbuf *b)
{
	size_t starter = SIZE_MAX, o = 0;
	unsigned last_ccc = 0; /* class of the last kept character after the starter */
	bool between = false;  /* a kept character lies between the starter and here */
	for (size_t i = 0; i < b->n; i++) {
		uint32_t cp = b->v[i];
		unsigned c = unicode_ccc(cp);
		if (starter != SIZE_MAX && (!between || last_ccc < c)) {
			uint32_t comp = compose_pair(b->v[starter], cp);
			if (comp) {
				b->v[starter] = comp;
				continue;
			}
		}
		if (c == 0) {
			starter = o;
			between = false;
		} else {
			last_ccc = c;
			between = starter != SIZE_MAX;
		}
		b->v[o++] = cp;
	}
	b->n = o;
}

static int decode(const char *s, size_t n, struct cpbuf *b)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = unicode_utf8_decode(s + i, n - i, &cp);
		if (!k)
			return -EILSEQ;
		int rc = cpbuf_push(b, cp);
		if (rc)
			return rc;
		i += k;
	}
	return 0;
}

static int encode(const struct cpbuf *b, char **out, size_t *out_len)
{
	char *o = malloc(4 * b->n + 1);
	if (!o)
		return -ENOMEM;
	size_t len = 0;
	for (size_t i = 0; i < b->n; i++)
		len += unicode_utf8_encode(b->v[i], o + len);
	o[len] = 0;
	*out = o;
	*out_len = len;
	return 0;
}

static bool all_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

static int copy_out(const char *s, size_t n, char **out, size_t *out_len)
{
	char *o = malloc(n + 1);
	if (!o)
		return -ENOMEM;
	memcpy(o, s, n);
	o[n] = 0;
	*out = o;
	*out_len = n;
	return 0;
}

int unicode_normalize(enum unicode_form form, const char *s, size_t n, char **out, size_t *out_len)
{
	struct cpbuf in = {0}, d = {0};
	bool compat = form == UNICODE_NFKC || form == UNICODE_NFKD;
	int rc;
	*out = NULL;
	*out_len = 0;
	if (all_ascii(s, n))
		return copy_out(s, n, out, out_len);
	rc = decode(s, n, &in);
	for (size_t i = 0; i < in.n && !rc; i++)
		rc = decompose_cp(in.v[i], compat, &d);
	if (!rc) {
		canonical_order(&d);
		if (form == UNICODE_NFC || form == UNICODE_NFKC)
			compose(&d);
		rc = encode(&d, out, out_len);
	}
	free(in.v);
	free(d.v);
	return rc;
}

static const struct unicode_lower *lower_find(uint32_t cp)
{
	return bsearch(&cp, unicode_lowers, unicode_lowers_count, sizeof unicode_lowers[0], cmp_cp);
}

int unicode_lowercase(const char *s, size_t n, char **out, size_t *out_len)
{
	struct cpbuf in = {0}, o = {0};
	int rc;
	*out = NULL;
	*out_len = 0;
	if (all_ascii(s, n)) {
		rc = copy_out(s, n, out, out_len);
		for (size_t i = 0; !rc && i < n; i++)
			if ((*out)[i] >= 'A' && (*out)[i] <= 'Z')
				(*out)[i] = (char)((*out)[i] | 0x20);
		return rc;
	}
	rc = decode(s, n, &in);
	for (size_t i = 0; i < in.n && !rc; i++) {
		const struct unicode_lower *l = lower_find(in.v[i]);
		if (!l) {
			rc = cpbuf_push(&o, in.v[i]);
			continue;
		}
		for (unsigned k = 0; k < 3 && l->lower[k] && !rc; k++)
			rc = cpbuf_push(&o, l->lower[k]);
	}
	if (!rc)
		rc = encode(&o, out, out_len);
	free(in.v);
	free(o.v);
	return rc;
}
