/* tokenizer — byte-level BPE and SentencePiece-style tokenizers with llama.cpp's
 * behaviour (see tokenizer.h for the contract).
 *
 * Pipeline of tok_encode: validate UTF-8; cut the text at special/added tokens
 * (longest first, leftmost occurrences); for a tokenizer.json with a normalizer,
 * normalize each raw fragment (tokenizer_norm.h) and cut it again at the added tokens
 * marked "normalized", as Hugging Face's added vocabulary does; then per raw fragment either
 *   BPE: pre-split (hand-written matchers of llama.cpp's regexes over Unicode
 *        categories), map each piece's bytes to GPT-2's printable alphabet, merge
 *        adjacent symbols by lowest merge rank (ties: leftmost), look up ids; or
 *   SPM: prefix a space (first fragment and after a special), spaces -> U+2581
 *        (GGUF and Metaspace; when a tokenizer.json's normalizer does it, as
 *        Replace(" ", U+2581) and Prepend(U+2581), the text is taken as it is),
 *        merge adjacent symbols whose concatenation is a token, highest score first
 *        (ties: leftmost), unknown symbols -> <0xXX> byte tokens.
 * Both merge loops use a binary heap with lazy deletion: O(n log n) per piece.
 *
 * For the llama3 split, a piece that is a token as a whole is taken whole (ignore_merges).
 *
 * GGUF vocabularies get no normalizer: llama.cpp applies none (tokenizer.ggml.* has no key
 * for one), so a GGUF and the tokenizer.json it came from differ on text that is not
 * normalized the way the normalizer would leave it (decomposed accents for an NFC one).
 *
 * It does not: clean up
 * spaces on decode (so decode(encode(x)) == x), or support WordPiece/Unigram/RWKV
 * vocabularies. Workload: a vocabulary of up to ~250k tokens loaded once; encode runs
 * per request on prompts up to a few hundred kB. */
#include "core/err.h"
#include "text/tokenizer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "gguf/gguf.h"
#include "text/tokenizer_norm.h"
#include "text/unicode.h"

/* ---- string -> int32 hash map (keys borrowed, open addressing) ---- */

struct strmap_slot {
	const char *key; /* NULL = empty */
	uint32_t len;
	int32_t val;
};

struct strmap {
	struct strmap_slot *slots;
	size_t cap; /* power of two */
	size_t count;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

static int strmap_init(struct strmap *m, size_t expected)
{
	size_t cap = 16;
	while (cap < expected * 2)
		cap *= 2;
	m->slots = calloc(cap, sizeof *m->slots);
	m->cap = cap;
	m->count = 0;
	return m->slots ? 0 : -ENOMEM;
}

static void strmap_finish(struct strmap *m)
{
	free(m->slots);
	m->slots = NULL;
}

static struct strmap_slot *strmap_slot(const struct strmap *m, const char *key, size_t len)
{
	size_t i = (size_t)hash_bytes(key, len) & (m->cap - 1);
	for (;;) {
		struct strmap_slot *s = &m->slots[i];
		if (!s->key || (s->len == len && memcmp(s->key, key, len) == 0))
			return s;
		i = (i + 1) & (m->cap - 1);
	}
}

/* Inserts unless present (first writer wins, as the vocabulary's first occurrence of a text). */
static void strmap_put(struct strmap *m, const char *key, size_t len, int32_t val)
{
	struct strmap_slot *s = strmap_slot(m, key, len);
	if (!s->key) {
		s->key = key;
		s->len = (uint32_t)len;
		s->val = val;
		m->count++;
	}
}

static int32_t strmap_get(const struct strmap *m, const char *key, size_t len)
{
	const struct strmap_slot *s = strmap_slot(m, key, len);
	return s->key ? s->val : -1;
}

/* ---- the tokenizer ---- */

struct tok_entry {
	uint32_t off, len;         /* vocabulary text in text_pool */
	uint32_t piece_off, piece_len; /* decoded bytes in piece_pool */
	float score;
	uint8_t type;              /* enum tok_type */
	bool normalized;           /* tokenizer.json added token matched in normalized text */
};

/* An added/special token as matched in text: its vocabulary text, or for a "normalized"
 * token of a tokenizer.json, that text normalized. */
struct tok_match {
	int32_t id;
	uint32_t len;
	const char *text;          /* text_pool or match_pool */
};

struct tokenizer {
	enum tok_model model;
	enum tok_pre pre;
	size_t n_vocab;
	struct tok_entry *tok;     /* n_vocab */
	char *text_pool;           /* vocabulary texts, each NUL-terminated */
	char *piece_pool;          /* decoded pieces */
	char *merge_pool;          /* merge keys "left\xffright" */
	struct strmap by_text;     /* text -> id */
	struct strmap merges;      /* "left\xffright" -> rank */
	struct tok_match *raw_match;  /* matched in the raw text, longest first */
	size_t n_raw_match;
	struct tok_match *norm_match; /* matched in normalized text (tokenizer.json), longest first */
	size_t n_norm_match;
	char *match_pool;          /* normalized texts of norm_match */
	struct tok_norm *norm;     /* tokenizer.json normalizer, NULL for none (always for GGUF) */
	int32_t byte_tok[256];     /* BPE: id of each byte's printable char; SPM: <0xXX>; -1 absent */
	int32_t bos, eos, eot, eom, unk, pad;
	bool add_bos, add_eos, add_space_prefix;
	bool spm_spaces;           /* SPM: encode maps ' ' to U+2581 and adds the prefix (else the normalizer did) */
	bool prefix_first_only;    /* SPM: space prefix only at the start of the text, not after specials */
	bool rank_merges;          /* merges by rank (BPE; SentencePiece-style from tokenizer.json), else by score */
	bool ignore_merges;        /* BPE: a piece that is a token as a whole is taken whole (llama3) */
	size_t max_piece;
};

/* GPT-2's map from bytes to printable code points: printable Latin-1 bytes map to
 * themselves, the other 68 to U+0100.. in byte order: 0x00-0x20 -> U+0100-U+0120,
 * 0x7F-0xA0 -> U+0121-U+0142, 0xAD -> U+0143. */
static uint32_t byte_to_cp(unsigned b)
{
	if (b <= 0x20)
		return 0x100 + b;
	if (b >= 0x7f && b <= 0xa0)
		return 0x121 + (b - 0x7f);
	if (b == 0xad)
		return 0x143;
	return b;
}

uint32_t tok_byte_char(unsigned char b) { return byte_to_cp(b); }

static int cp_to_byte(uint32_t cp)
{
	if (cp >= 0x100 && cp <= 0x120)
		return (int)(cp - 0x100);
	if (cp >= 0x121 && cp <= 0x142)
		return (int)(cp - 0x121 + 0x7f);
	if (cp == 0x143)
		return 0xad;
	if (cp < 0x100 && byte_to_cp(cp) == cp)
		return (int)cp;
	return -1;
}


void tok_destroy(struct tokenizer *t)
{
	if (!t)
		return;
	strmap_finish(&t->by_text);
	strmap_finish(&t->merges);
	free(t->tok);
	free(t->text_pool);
	free(t->piece_pool);
	free(t->merge_pool);
	free(t->raw_match);
	free(t->norm_match);
	free(t->match_pool);
	tok_norm_destroy(t->norm);
	free(t);
}

/* ---- accessors ---- */

size_t tok_vocab_size(const struct tokenizer *t) { return t->n_vocab; }
enum tok_model tok_model_kind(const struct tokenizer *t) { return t->model; }
enum tok_pre tok_pre_kind(const struct tokenizer *t) { return t->pre; }
int32_t tok_bos(const struct tokenizer *t) { return t->bos; }
int32_t tok_eos(const struct tokenizer *t) { return t->eos; }
int32_t tok_eot(const struct tokenizer *t) { return t->eot; }
bool tok_add_bos(const struct tokenizer *t) { return t->add_bos; }
bool tok_add_eos(const struct tokenizer *t) { return t->add_eos; }
size_t tok_max_piece_bytes(const struct tokenizer *t) { return t->max_piece; }

const char *tok_piece(const struct tokenizer *t, int32_t id)
{
	return id >= 0 && (size_t)id < t->n_vocab ? t->text_pool + t->tok[id].off : NULL;
}

enum tok_type tok_token_type(const struct tokenizer *t, int32_t id)
{
	return id >= 0 && (size_t)id < t->n_vocab ? (enum tok_type)t->tok[id].type : TOK_TYPE_UNDEFINED;
}

int32_t tok_find(const struct tokenizer *t, const char *s)
{
	return strmap_get(&t->by_text, s, strlen(s));
}

bool tok_is_eog(const struct tokenizer *t, int32_t id)
{
	static const char *const turn_ends[] = {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|endoftext|>", "<|end|>",
						"<end_of_turn>", "<|return|>", "<|call|>"};
	if (id < 0 || (size_t)id >= t->n_vocab)
		return false;
	if (id == t->eos || id == t->eot || id == t->eom)
		return true;
	if (t->tok[id].type != TOK_TYPE_CONTROL)
		return false;
	const char *s = t->text_pool + t->tok[id].off;
	for (size_t i = 0; i < sizeof turn_ends / sizeof turn_ends[0]; i++)
		if (strcmp(s, turn_ends[i]) == 0)
			return true;
	return false;
}

size_t tok_utf8_error_offset(const char *text, size_t n)
{
	return unicode_utf8_valid_prefix(text, n);
}

/* ---- building a tokenizer from texts, types, scores and merges ---- */

/* What a loader collects before tok_build (texts borrowed from the source). */
struct tok_src {
	size_t n_vocab;
	const char **text;   /* n_vocab */
	size_t *len;         /* n_vocab */
	uint8_t *type;       /* n_vocab */
	float *score;        /* n_vocab, or NULL */
	size_t n_merges;
	const char **merge_l, **merge_r; /* n_merges each */
	size_t *merge_ll, *merge_rl;
	bool *normalized;    /* n_vocab, or NULL: tokenizer.json added tokens marked "normalized" */
};

static int cmp_match(const void *a, const void *b)
{
	const struct tok_match *x = a, *y = b;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Decoded bytes of a token's text into out (room for len bytes); returns the length. */
static size_t decode_piece(const struct tokenizer *t, const char *s, size_t len, uint8_t type, char *out)
{
	size_t o = 0;
	if (type == TOK_TYPE_BYTE) {
		unsigned v;
		if (len == 6 && sscanf(s, "<0x%2x>", &v) == 1) {
			out[0] = (char)v;
			return 1;
		}
	}
	if (type == TOK_TYPE_NORMAL || type == TOK_TYPE_BYTE) {
		if (t->model == TOK_MODEL_BPE) {
			size_t i = 0;
			while (i < len) {
				uint32_t cp;
				size_t k = unicode_utf8_decode(s + i, len - i, &cp);
				int b = k ? cp_to_byte(cp) : -1;
				if (b < 0) { /* not in the byte alphabet: keep as written */
					size_t kk = k ? k : 1;
					memcpy(out + o, s + i, kk);
					o += kk;
					i += kk;
					continue;
				}
				out[o++] = (char)b;
				i += k;
			}
			return o;
		}
		for (size_t i = 0; i < len;) { /* SentencePiece: U+2581 -> space */
			if (i + 3 <= len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
				out[o++] = ' ';
				i += 3;
			} else {
				out[o++] = s[i++];
			}
		}
		return o;
	}
	/* control, unknown, user-defined: the text itself (control only shown on request) */
	if (type == TOK_TYPE_CONTROL || type == TOK_TYPE_UNKNOWN || type == TOK_TYPE_USER_DEFINED) {
		memcpy(out, s, len);
		return len;
	}
	return 0; /* undefined / unused: nothing, as llama.cpp */
}

/* Takes what a loader collected and builds the lookup structures. */
static struct tokenizer *tok_build(struct tokenizer *t, const struct tok_src *src, const char *where, char *err,
				   size_t errlen)
{
	size_t text_bytes = 0;
	for (size_t i = 0; i < src->n_vocab; i++)
		text_bytes += src->len[i] + 1;
	t->n_vocab = src->n_vocab;
	t->tok = calloc(src->n_vocab ? src->n_vocab : 1, sizeof *t->tok);
	t->text_pool = malloc(text_bytes ? text_bytes : 1);
	t->piece_pool = malloc(text_bytes + 1); /* a decoded piece is never longer than its text */
	if (!t->tok || !t->text_pool || !t->piece_pool || strmap_init(&t->by_text, src->n_vocab))
		goto oom;
	size_t off = 0, poff = 0;
	for (size_t i = 0; i < src->n_vocab; i++) {
		struct tok_entry *e = &t->tok[i];
		if (src->len[i] > UINT32_MAX / 8) {
			err_set(err, errlen, "%s: token %zu is too long", where, i);
			goto fail;
		}
		memcpy(t->text_pool + off, src->text[i], src->len[i]);
		t->text_pool[off + src->len[i]] = 0;
		e->off = (uint32_t)off;
		e->len = (uint32_t)src->len[i];
		e->type = src->type ? src->type[i] : TOK_TYPE_NORMAL;
		e->score = src->score ? src->score[i] : 0.0f;
		off += src->len[i] + 1;
		e->piece_off = (uint32_t)poff;
		e->piece_len = (uint32_t)decode_piece(t, src->text[i], src->len[i], e->type, t->piece_pool + poff);
		poff += e->piece_len;
		if (e->piece_len > t->max_piece)
			t->max_piece = e->piece_len;
	}
	for (size_t i = 0; i < src->n_vocab; i++)
		strmap_put(&t->by_text, t->text_pool + t->tok[i].off, t->tok[i].len, (int32_t)i);

	if (src->normalized)
		for (size_t i = 0; i < src->n_vocab; i++)
			t->tok[i].normalized = src->normalized[i];

	/* byte tokens */
	for (unsigned b = 0; b < 256; b++) {
		char key[8];
		size_t kl;
		if (t->model == TOK_MODEL_BPE) {
			kl = unicode_utf8_encode(byte_to_cp(b), key);
		} else {
			snprintf(key, sizeof key, "<0x%02X>", b);
			kl = 6;
		}
		t->byte_tok[b] = strmap_get(&t->by_text, key, kl);
		if (t->byte_tok[b] < 0 && t->model == TOK_MODEL_SPM) {
			key[0] = (char)b; /* llama.cpp's fallback: the byte itself as a token */
			t->byte_tok[b] = strmap_get(&t->by_text, key, 1);
		}
	}

	/* merges: key "left" 0xFF "right" (0xFF never occurs in UTF-8) -> rank */
	if (t->rank_merges) {
		size_t mbytes = 0;
		for (size_t i = 0; i < src->n_merges; i++)
			mbytes += src->merge_ll[i] + src->merge_rl[i] + 1;
		t->merge_pool = malloc(mbytes ? mbytes : 1);
		if (!t->merge_pool || strmap_init(&t->merges, src->n_merges))
			goto oom;
		size_t mo = 0;
		for (size_t i = 0; i < src->n_merges; i++) {
			char *k = t->merge_pool + mo;
			memcpy(k, src->merge_l[i], src->merge_ll[i]);
			k[src->merge_ll[i]] = (char)0xff;
			memcpy(k + src->merge_ll[i] + 1, src->merge_r[i], src->merge_rl[i]);
			size_t kl = src->merge_ll[i] + src->merge_rl[i] + 1;
			strmap_put(&t->merges, k, kl, (int32_t)i);
			mo += kl;
		}
	}
	return t;
oom:
	err_set(err, errlen, "%s: out of memory building the tokenizer", where);
fail:
	tok_destroy(t);
	return NULL;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem);

static bool is_matched_type(uint8_t ty)
{
	return ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN;
}

/* The special and added tokens (control, user-defined, unknown) as tok_encode matches
 * them, longest first: in the raw text, or, for tokenizer.json tokens marked "normalized"
 * when there is a normalizer, in the normalized text with their own text normalized
 * (Hugging Face normalizes those contents the same way). Call once t->norm is set. */
static int build_matches(struct tokenizer *t)
{
	size_t n_raw = 0, n_norm = 0, pool_len = 0, pool_cap = 0;
	int rc = 0;
	for (size_t i = 0; i < t->n_vocab; i++) {
		if (!is_matched_type(t->tok[i].type) || !t->tok[i].len)
			continue;
		if (t->norm && t->tok[i].normalized)
			n_norm++;
		else
			n_raw++;
	}
	t->raw_match = malloc((n_raw ? n_raw : 1) * sizeof *t->raw_match);
	t->norm_match = malloc((n_norm ? n_norm : 1) * sizeof *t->norm_match);
	if (!t->raw_match || !t->norm_match)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_vocab && !rc; i++) {
		const struct tok_entry *e = &t->tok[i];
		if (!is_matched_type(e->type) || !e->len)
			continue;
		const char *text = t->text_pool + e->off;
		if (!(t->norm && e->normalized)) {
			t->raw_match[t->n_raw_match++] = (struct tok_match){.id = (int32_t)i, .len = e->len, .text = text};
			continue;
		}
		char *nt;
		size_t nl;
		if ((rc = tok_norm_apply(t->norm, text, e->len, &nt, &nl)))
			break;
		if (nl && !(rc = grow((void **)&t->match_pool, &pool_cap, pool_len + nl, 1))) {
			memcpy(t->match_pool + pool_len, nt, nl);
			/* .text holds the pool offset until the pool stops moving */
			t->norm_match[t->n_norm_match++] = (struct tok_match){.id = (int32_t)i, .len = (uint32_t)nl,
									  .text = (const char *)(uintptr_t)pool_len};
			pool_len += nl;
		}
		free(nt);
	}
	for (size_t i = 0; i < t->n_norm_match; i++)
		t->norm_match[i].text = t->match_pool + (uintptr_t)t->norm_match[i].text;
	qsort(t->raw_match, t->n_raw_match, sizeof *t->raw_match, cmp_match);
	qsort(t->norm_match, t->n_norm_match, sizeof *t->norm_match, cmp_match);
	return rc;
}

/* ---- pre-tokenizer splits ----
 * Each splitter works on code points cp[lo..hi) and appends piece ends (code point
 * indices) to a list. Positions outside [lo, hi) read as "no character", so a
 * fragment's end behaves like the end of the text, as in llama.cpp. */

struct cps {
	uint32_t *cp;   /* code points */
	uint8_t *cat;   /* enum unicode_cat per code point */
	uint8_t *space; /* White_Space per code point */
	size_t *boff;   /* byte offset of each code point; boff[n] = byte length */
	size_t n;
};

struct ends {
	size_t *v;
	size_t n, cap;
	int err;
};

static void ends_push(struct ends *e, size_t end)
{
	if (e->err)
		return;
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		size_t *nv = realloc(e->v, cap * sizeof *nv);
		if (!nv) {
			e->err = -ENOMEM;
			return;
		}
		e->v = nv;
		e->cap = cap;
	}
	e->v[e->n++] = end;
}

static int cps_from_utf8(struct cps *c, const char *text, size_t n)
{
	c->cp = malloc((n + 1) * sizeof *c->cp);
	c->cat = malloc(n + 1);
	c->space = malloc(n + 1);
	c->boff = malloc((n + 1) * sizeof *c->boff);
	c->n = 0;
	if (!c->cp || !c->cat || !c->space || !c->boff)
		return -ENOMEM;
	size_t i = 0;
	while (i < n) {
		uint32_t cp;
		size_t k = unicode_utf8_decode(text + i, n - i, &cp);
		if (!k)
			return -EILSEQ;
		c->boff[c->n] = i;
		c->cp[c->n] = cp;
		c->cat[c->n] = (uint8_t)unicode_category(cp);
		c->space[c->n] = unicode_is_space(cp);
		c->n++;
		i += k;
	}
	c->boff[c->n] = n;
	return 0;
}

static void cps_finish(struct cps *c)
{
	free(c->cp);
	free(c->cat);
	free(c->space);
	free(c->boff);
}

/* Character classes used by the regexes. */
enum cls { C_NONE, C_L, C_N, C_M, C_SPACE, C_OTHER };

static bool is_l(const struct cps *c, size_t i, size_t hi) { return i < hi && c->cat[i] == UCAT_LETTER; }
static bool is_n(const struct cps *c, size_t i, size_t hi) { return i < hi && c->cat[i] == UCAT_NUMBER; }
static bool is_m(const struct cps *c, size_t i, size_t hi) { return i < hi && c->cat[i] == UCAT_MARK; }
static bool is_s(const struct cps *c, size_t i, size_t hi) { return i < hi && c->space[i]; }
static bool is_crlf(const struct cps *c, size_t i, size_t hi) { return i < hi && (c->cp[i] == '\r' || c->cp[i] == '\n'); }
static uint32_t cp_at(const struct cps *c, size_t i, size_t hi) { return i < hi ? c->cp[i] : 0xffffffffu; }

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void split_gpt2(const struct cps *c, size_t lo, size_t hi, struct ends *out)
{
	size_t pos = lo;
	while (pos < hi) {
		uint32_t ch = c->cp[pos];
		if (ch == '\'' && pos + 1 < hi) {
			uint32_t n1 = c->cp[pos + 1], n2 = cp_at(c, pos + 2, hi);
			if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
				pos += 2;
				ends_push(out, pos);
				continue;
			}
			if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
				pos += 3;
				ends_push(out, pos);
				continue;
			}
		}
		size_t p = pos + (ch == ' ' ? 1 : 0); /* the optional leading space */
		if (is_l(c, p, hi)) {
			while (is_l(c, p, hi))
				p++;
		} else if (is_n(c, p, hi)) {
			while (is_n(c, p, hi))
				p++;
		} else if (p < hi && !is_s(c, p, hi) && !is_l(c, p, hi) && !is_n(c, p, hi)) {
			while (p < hi && !is_s(c, p, hi) && !is_l(c, p, hi) && !is_n(c, p, hi))
				p++;
		} else {
			size_t e = pos;
			while (is_s(c, e, hi))
				e++;
			if (e - pos > 1 && e < hi)
				p = e - 1; /* \s+(?!\S): leave the last space to the next word */
			else if (e > pos)
				p = e;
			else
				p = pos + 1;
		}
		pos = p;
		ends_push(out, pos);
	}
}

/* The whitespace alternatives the splits end with, \s*[\r\n]+|\s+(?!\S)|\s+, at pos: the
 * match's end, or pos when pos is not whitespace. */
static size_t space_end(const struct cps *c, size_t pos, size_t hi)
{
	size_t e = pos, last_nl = SIZE_MAX;
	while (is_s(c, e, hi)) {
		if (is_crlf(c, e, hi))
			last_nl = e;
		e++;
	}
	if (last_nl != SIZE_MAX)
		return last_nl + 1; /* \s*[\r\n]+ */
	if (e == hi)
		return e;           /* \s+(?!\S) at the end */
	if (e - pos > 1)
		return e - 1;       /* \s+(?!\S): the last space goes to the next piece */
	return e;               /* \s+ */
}

/* qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * qwen35: the same with [\p{L}\p{M}]+ for the word and \p{M} excluded from the punctuation run.
 * llama3: qwen2's with \p{N}{1,3} (max_digits 3). */
static void split_qwen(const struct cps *c, size_t lo, size_t hi, bool marks, size_t max_digits, struct ends *out)
{
	size_t pos = lo;
	while (pos < hi) {
		uint32_t ch = c->cp[pos];
		size_t p = pos;
		/* contractions, case-insensitive */
		if (ch == '\'' && pos + 1 < hi) {
			uint32_t n1 = c->cp[pos + 1] | 0x20, n2 = cp_at(c, pos + 2, hi) | 0x20;
			if (c->cp[pos + 1] < 0x80 && (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd')) {
				pos += 2;
				ends_push(out, pos);
				continue;
			}
			if (c->cp[pos + 1] < 0x80 && pos + 2 < hi && c->cp[pos + 2] < 0x80 &&
			    ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l'))) {
				pos += 3;
				ends_push(out, pos);
				continue;
			}
		}
#define WORD(i) (is_l(c, (i), hi) || (marks && is_m(c, (i), hi)))
		/* [^\r\n\p{L}\p{N}]?WORD+ */
		bool pre_ok = !is_crlf(c, pos, hi) && !is_l(c, pos, hi) && !is_n(c, pos, hi);
		if (pre_ok && WORD(pos + 1)) {
			p = pos + 1;
			while (WORD(p))
				p++;
		} else if (WORD(pos)) {
			p = pos;
			while (WORD(p))
				p++;
		} else if (is_n(c, pos, hi)) {
			p = pos + 1;
			while (p - pos < max_digits && is_n(c, p, hi))
				p++;
		} else {
			/*  ?[^\s\p{L}(\p{M})\p{N}]+[\r\n]* */
#define PUNCT(i) ((i) < hi && !is_s(c, (i), hi) && !is_l(c, (i), hi) && !is_n(c, (i), hi) && !(marks && is_m(c, (i), hi)))
			size_t q = pos + (ch == ' ' && PUNCT(pos + 1) ? 1 : 0);
			if (PUNCT(q)) {
				while (PUNCT(q))
					q++;
				while (is_crlf(c, q, hi))
					q++;
				p = q;
			} else {
				p = space_end(c, pos, hi);
				if (p == pos)
					p = pos + 1; /* unreachable: every code point is in some class */
			}
#undef PUNCT
		}
#undef WORD
		pos = p;
		ends_push(out, pos);
	}
}

/* gpt-4o (o200k), the regex's alternatives in order:
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 *   \p{N}{1,3} |  ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * "upper" is {Lu, Lt, Lm, Lo, M}, "lower" {Ll, Lm, Lo, M}; they share Lm, Lo and M, which is
 * where the first alternative backtracks. */
static bool is_upper(const struct cps *c, size_t i, size_t hi)
{
	if (i >= hi)
		return false;
	if (c->cat[i] == UCAT_MARK)
		return true;
	enum unicode_letter k = c->cat[i] == UCAT_LETTER ? unicode_letter_kind(c->cp[i]) : ULET_NONE;
	return k == ULET_LU || k == ULET_LT || k == ULET_LM || k == ULET_LO;
}

static bool is_lower(const struct cps *c, size_t i, size_t hi)
{
	if (i >= hi)
		return false;
	if (c->cat[i] == UCAT_MARK)
		return true;
	enum unicode_letter k = c->cat[i] == UCAT_LETTER ? unicode_letter_kind(c->cp[i]) : ULET_NONE;
	return k == ULET_LL || k == ULET_LM || k == ULET_LO;
}

/* End of (?i:'s|'t|'re|'ve|'m|'ll|'d)? at p (p itself when there is none). */
static size_t contraction_end(const struct cps *c, size_t p, size_t hi)
{
	if (cp_at(c, p, hi) != '\'' || p + 1 >= hi || c->cp[p + 1] >= 0x80)
		return p;
	uint32_t n1 = c->cp[p + 1] | 0x20, n2 = cp_at(c, p + 2, hi) < 0x80 ? cp_at(c, p + 2, hi) | 0x20 : 0;
	if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd')
		return p + 2;
	if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l'))
		return p + 3;
	return p;
}

/* upper* lower+ from s, as a backtracking engine matches it: the end, or 0 for no match. */
static size_t o200k_word1(const struct cps *c, size_t s, size_t hi)
{
	size_t q = s;
	while (is_upper(c, q, hi))
		q++;
	if (is_lower(c, q, hi)) {
		while (is_lower(c, q, hi))
			q++;
		return q;
	}
	for (size_t k = q; k > s; k--) /* upper* gives back its last characters until one is lower */
		if (is_lower(c, k - 1, hi))
			return k;
	return 0;
}

static void split_o200k(const struct cps *c, size_t lo, size_t hi, struct ends *out)
{
	size_t pos = lo;
	while (pos < hi) {
		size_t p = 0;
		bool pre_ok = !is_crlf(c, pos, hi) && !is_l(c, pos, hi) && !is_n(c, pos, hi);
		/* the two word alternatives in order, each with its optional prefix tried first */
		if (pre_ok)
			p = o200k_word1(c, pos + 1, hi);
		if (!p)
			p = o200k_word1(c, pos, hi);
		if (!p) { /* upper+ lower* */
			size_t s = pre_ok && is_upper(c, pos + 1, hi) ? pos + 1 : is_upper(c, pos, hi) ? pos : SIZE_MAX;
			if (s != SIZE_MAX) {
				p = s;
				while (is_upper(c, p, hi))
					p++;
				while (is_lower(c, p, hi))
					p++;
			}
		}
		if (p) {
			p = contraction_end(c, p, hi);
		} else if (is_n(c, pos, hi)) {
			p = pos + 1;
			while (p - pos < 3 && is_n(c, p, hi))
				p++;
		} else {
#define PUNCT(i) ((i) < hi && !is_s(c, (i), hi) && !is_l(c, (i), hi) && !is_n(c, (i), hi))
			size_t q = pos + (c->cp[pos] == ' ' && PUNCT(pos + 1) ? 1 : 0);
			if (PUNCT(q)) {
				while (PUNCT(q))
					q++;
				while (is_crlf(c, q, hi) || cp_at(c, q, hi) == '/')
					q++;
				p = q;
			} else {
				p = space_end(c, pos, hi);
				if (p == pos)
					p = pos + 1; /* unreachable: every code point is in some class */
			}
#undef PUNCT
		}
		pos = p;
		ends_push(out, pos);
	}
}

/* Splits [lo, hi) into maximal runs matching or not matching a class (regex split keeping the gaps). */
static void split_runs(const struct cps *c, size_t lo, size_t hi, bool (*in)(const struct cps *, size_t), struct ends *out)
{
	size_t pos = lo;
	while (pos < hi) {
		bool m = in(c, pos);
		size_t p = pos + 1;
		while (p < hi && in(c, p) == m)
			p++;
		pos = p;
		ends_push(out, pos);
	}
}

static bool in_default_punct(const struct cps *c, size_t i)
{
	uint32_t ch = c->cp[i];
	return c->cat[i] == UCAT_PUNCT || ch == '$' || ch == '+' || ch == '<' || ch == '=' || ch == '>' || ch == '^' ||
	       ch == '~' || ch == '|';
}

static bool in_number(const struct cps *c, size_t i) { return c->cat[i] == UCAT_NUMBER; }

/* [0-9][0-9][0-9]: runs of three ASCII digits are pieces, the rest gaps. */
static void split_digits3(const struct cps *c, size_t lo, size_t hi, struct ends *out)
{
	size_t pos = lo, gap = lo;
	while (pos + 3 <= hi) {
		bool d = true;
		for (size_t k = 0; k < 3; k++)
			d = d && c->cp[pos + k] >= '0' && c->cp[pos + k] <= '9';
		if (!d) {
			pos++;
			continue;
		}
		if (pos > gap)
			ends_push(out, pos);
		pos += 3;
		ends_push(out, pos);
		gap = pos;
	}
	if (hi > gap)
		ends_push(out, hi);
}

/* ---- deepseek-v3: three regex splits in turn, each keeping its matches and the gaps ----
 *   \p{N}{1,3}
 *   [\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+
 *   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
 *     ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */

/* \p{N}{1,3}: runs of numbers in pieces of up to three, the rest gaps. */
static void split_numbers3(const struct cps *c, size_t lo, size_t hi, struct ends *out)
{
	size_t pos = lo, gap = lo;
	while (pos < hi) {
		if (!is_n(c, pos, hi)) {
			pos++;
			continue;
		}
		if (pos > gap)
			ends_push(out, pos);
		size_t e = pos + 1;
		while (e - pos < 3 && is_n(c, e, hi))
			e++;
		ends_push(out, e);
		pos = gap = e;
	}
	if (hi > gap)
		ends_push(out, hi);
}

static bool in_cjk_kana(const struct cps *c, size_t i)
{
	uint32_t ch = c->cp[i];
	return (ch >= 0x4e00 && ch <= 0x9fa5) || (ch >= 0x3040 && ch <= 0x30ff);
}

static bool is_ascii_punct(uint32_t ch)
{
	return (ch >= 0x21 && ch <= 0x2f) || (ch >= 0x3a && ch <= 0x40) || (ch >= 0x5b && ch <= 0x60) ||
	       (ch >= 0x7b && ch <= 0x7e);
}

static bool is_ascii_letter(uint32_t ch) { return (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z'; }

static bool is_ps(const struct cps *c, size_t i, size_t hi)
{
	return i < hi && (c->cat[i] == UCAT_PUNCT || c->cat[i] == UCAT_SYMBOL);
}

/* The third regex at pos: the match's end, or pos when none starts there. */
static size_t deepseek_match(const struct cps *c, size_t pos, size_t hi)
{
#define LM(i) (is_l(c, (i), hi) || is_m(c, (i), hi))
	size_t p = pos;
	if (is_ascii_punct(c->cp[pos]) && pos + 1 < hi && is_ascii_letter(c->cp[pos + 1])) {
		p = pos + 1;
		while (p < hi && is_ascii_letter(c->cp[p]))
			p++;
		return p;
	}
	bool pre_ok = !is_crlf(c, pos, hi) && !is_l(c, pos, hi) && !is_ps(c, pos, hi);
	if ((pre_ok && LM(pos + 1)) || LM(pos)) {
		p = pre_ok && LM(pos + 1) ? pos + 1 : pos;
		while (LM(p))
			p++;
		return p;
	}
#undef LM
	size_t q = pos + (c->cp[pos] == ' ' && is_ps(c, pos + 1, hi) ? 1 : 0);
	if (is_ps(c, q, hi)) {
		while (is_ps(c, q, hi))
			q++;
		while (is_crlf(c, q, hi))
			q++;
		return q;
	}
	return space_end(c, pos, hi); /* pos: no match */
}

static void split_deepseek(const struct cps *c, size_t lo, size_t hi, struct ends *out)
{
	size_t pos = lo, gap = lo;
	while (pos < hi) {
		size_t e = deepseek_match(c, pos, hi);
		if (e == pos) {
			pos++;
			continue;
		}
		if (pos > gap)
			ends_push(out, pos);
		ends_push(out, e);
		pos = gap = e;
	}
	if (hi > gap)
		ends_push(out, hi);
}

/* Applies one split stage to every piece of in (ends), producing out. */
static void stage(const struct cps *c, size_t lo, const struct ends *in, struct ends *out, int which)
{
	size_t start = lo;
	for (size_t i = 0; i < in->n; i++) {
		size_t end = in->v[i];
		switch (which) {
		case 0: split_runs(c, start, end, in_default_punct, out); break;
		case 1: split_gpt2(c, start, end, out); break;
		case 2: split_runs(c, start, end, in_number, out); break;
		case 3: split_digits3(c, start, end, out); break;
		case 4: split_numbers3(c, start, end, out); break;
		case 5: split_runs(c, start, end, in_cjk_kana, out); break;
		default: split_deepseek(c, start, end, out); break;
		}
		start = end;
	}
}

/* Piece ends (code point indices) of cp[lo..hi) under a pre-tokenizer. */
static int pre_split(enum tok_pre pre, const struct cps *c, size_t lo, size_t hi, struct ends *out)
{
	out->n = 0;
	switch (pre) {
	case TOK_PRE_GPT2:
		split_gpt2(c, lo, hi, out);
		break;
	case TOK_PRE_GPT4O:
		split_o200k(c, lo, hi, out);
		break;
	case TOK_PRE_QWEN2:
	case TOK_PRE_QWEN35:
	case TOK_PRE_LLAMA3:
		split_qwen(c, lo, hi, pre == TOK_PRE_QWEN35, pre == TOK_PRE_LLAMA3 ? 3 : 1, out);
		break;
	case TOK_PRE_DEFAULT:
	case TOK_PRE_DEEPSEEK3: {
		/* successive regex splits: llama.cpp's default BPE pre-tokenizer (four), deepseek-v3 (three) */
		static const int default_stages[] = {0, 1, 2, 3}, deepseek_stages[] = {4, 5, 6};
		const int *stages = pre == TOK_PRE_DEFAULT ? default_stages : deepseek_stages;
		int n_stages = pre == TOK_PRE_DEFAULT ? 4 : 3;
		struct ends a = {0}, b = {0};
		ends_push(&a, hi);
		for (int s = 0; s < n_stages; s++) {
			b.n = 0;
			stage(c, lo, &a, &b, stages[s]);
			struct ends tmp = a;
			a = b;
			b = tmp;
		}
		int err = a.err | b.err;
		for (size_t i = 0; i < a.n; i++)
			ends_push(out, a.v[i]);
		free(a.v);
		free(b.v);
		if (err)
			return err;
		break;
	}
	default:
		if (hi > lo)
			ends_push(out, hi);
	}
	return out->err;
}

int tok_pre_split(enum tok_pre pre, const char *text, size_t n, size_t **ends, size_t *n_pieces)
{
	struct cps c = {0};
	struct ends e = {0};
	int rc = cps_from_utf8(&c, text, n);
	if (!rc)
		rc = pre_split(pre, &c, 0, c.n, &e);
	if (!rc) {
		for (size_t i = 0; i < e.n; i++)
			e.v[i] = c.boff[e.v[i]];
		*ends = e.v ? e.v : malloc(1);
		*n_pieces = e.n;
		if (!*ends)
			rc = -ENOMEM;
	} else {
		free(e.v);
	}
	cps_finish(&c);
	return rc;
}

/* ---- merging: a binary heap of candidate pairs ---- */

struct sym {
	size_t start, len; /* bytes in the piece */
	long prev, next;   /* neighbours, -1 at the ends */
};

struct pair {
	float key;         /* BPE: rank (exact below 2^24); SPM: -score (smaller first) */
	int32_t left, right;
	uint32_t size;     /* bytes of left + right when pushed */
};

struct heap {
	struct pair *v;
	size_t n, cap;
};

static bool pair_before(const struct pair *a, const struct pair *b)
{
	return a->key < b->key || (a->key == b->key && a->left < b->left);
}

static int heap_push(struct heap *h, struct pair p)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct pair *nv = realloc(h->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		h->v = nv;
		h->cap = cap;
	}
	size_t i = h->n++;
	h->v[i] = p;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!pair_before(&h->v[i], &h->v[parent]))
			break;
		struct pair tmp = h->v[i];
		h->v[i] = h->v[parent];
		h->v[parent] = tmp;
		i = parent;
	}
	return 0;
}

static struct pair heap_pop(struct heap *h)
{
	struct pair top = h->v[0];
	h->v[0] = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && pair_before(&h->v[l], &h->v[m]))
			m = l;
		if (r < h->n && pair_before(&h->v[r], &h->v[m]))
			m = r;
		if (m == i)
			break;
		struct pair tmp = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = tmp;
		i = m;
	}
	return top;
}

/* Scratch memory reused across the pieces of one tok_encode call. */
struct scratch {
	struct sym *sym;
	size_t sym_cap;
	struct heap heap;
	char *key;
	size_t key_cap;
	char *word;
	size_t word_cap;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t cap2 = *cap ? *cap : 64;
	while (cap2 < need)
		cap2 *= 2;
	void *np = realloc(*p, cap2 * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = cap2;
	return 0;
}

struct ids {
	int32_t *v;
	size_t n, cap;
};

static int ids_push(struct ids *o, int32_t id)
{
	if (grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
		return -ENOMEM;
	o->v[o->n++] = id;
	return 0;
}

/* Candidate value of merging symbols l and r of word w: 0 and *key set when it exists. */
static int pair_value(const struct tokenizer *t, struct scratch *s, const char *w, long l, long r, float *key)
{
	const struct sym *a = &s->sym[l], *b = &s->sym[r];
	if (t->rank_merges) {
		size_t kl = a->len + b->len + 1;
		if (grow((void **)&s->key, &s->key_cap, kl, 1))
			return -ENOMEM;
		memcpy(s->key, w + a->start, a->len);
		s->key[a->len] = (char)0xff;
		memcpy(s->key + a->len + 1, w + b->start, b->len);
		int32_t rank = strmap_get(&t->merges, s->key, kl);
		if (rank < 0)
			return 1;
		*key = (float)rank;
		return 0;
	}
	/* SPM: the concatenation (contiguous in w) must be a token; higher score first */
	int32_t id = strmap_get(&t->by_text, w + a->start, a->len + b->len);
	if (id < 0)
		return 1;
	*key = -t->tok[id].score;
	return 0;
}

static int try_pair(const struct tokenizer *t, struct scratch *s, const char *w, long l, long r)
{
	if (l < 0 || r < 0)
		return 0;
	float key;
	int rc = pair_value(t, s, w, l, r, &key);
	if (rc)
		return rc < 0 ? rc : 0;
	return heap_push(&s->heap, (struct pair){.key = key, .left = (int32_t)l, .right = (int32_t)r,
					    .size = (uint32_t)(s->sym[l].len + s->sym[r].len)});
}

/* Merges the symbols of word w[0..n) and appends the resulting ids. */
static int merge_word(const struct tokenizer *t, struct scratch *s, const char *w, size_t n, struct ids *out)
{
	size_t count = 0;
	if (grow((void **)&s->sym, &s->sym_cap, n + 1, sizeof *s->sym))
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t k = unicode_utf8_seq_len((unsigned char)w[i]);
		if (k > n - i)
			k = n - i;
		s->sym[count] = (struct sym){.start = i, .len = k, .prev = (long)count - 1, .next = (long)count + 1};
		count++;
		i += k;
	}
	if (!count)
		return 0;
	s->sym[count - 1].next = -1;
	s->heap.n = 0;
	int rc = 0;
	for (size_t i = 1; i < count && !rc; i++)
		rc = try_pair(t, s, w, (long)i - 1, (long)i);
	while (!rc && s->heap.n) {
		struct pair p = heap_pop(&s->heap);
		struct sym *a = &s->sym[p.left], *b = &s->sym[p.right];
		if (a->len == 0 || b->len == 0 || a->next != p.right || a->len + b->len != p.size)
			continue; /* stale: one side was merged since */
		a->len += b->len;
		b->len = 0;
		a->next = b->next;
		if (b->next >= 0)
			s->sym[b->next].prev = p.left;
		rc = try_pair(t, s, w, a->prev, p.left);
		if (!rc)
			rc = try_pair(t, s, w, p.left, a->next);
	}
	for (long i = 0; i >= 0 && !rc; i = s->sym[i].next) {
		const struct sym *y = &s->sym[i];
		int32_t id = strmap_get(&t->by_text, w + y->start, y->len);
		if (id >= 0) {
			rc = ids_push(out, id);
			continue;
		}
		/* no token: bytes (SPM byte fallback; byte-level BPE has a token per byte char) */
		if (t->model == TOK_MODEL_SPM) {
			for (size_t j = 0; j < y->len && !rc; j++) {
				int32_t bid = t->byte_tok[(unsigned char)w[y->start + j]];
				rc = bid < 0 ? -ENOENT : ids_push(out, bid);
			}
		} else {
			rc = -ENOENT;
		}
	}
	return rc;
}

/* ---- encoding ---- */

struct frag {
	size_t start, len; /* bytes of raw text; len == 0 with id >= 0 for a token */
	int32_t id;        /* -1 for raw text */
};

struct frags {
	struct frag *v;
	size_t n, cap;
};

/* Cuts text[0..n) into fragments at every occurrence of the tokens of m[0..nm), longest first. */
static int partition_special(const struct tokenizer *t, const struct tok_match *m, size_t nm, const char *text,
			     size_t n, bool parse_special, struct frags *f)
{
	if (grow((void **)&f->v, &f->cap, 1, sizeof *f->v))
		return -ENOMEM;
	f->n = 0;
	if (n)
		f->v[f->n++] = (struct frag){.start = 0, .len = n, .id = -1};
	for (size_t si = 0; si < nm && f->n; si++) {
		int32_t id = m[si].id;
		const struct tok_entry *e = &t->tok[id];
		if (!parse_special && (e->type == TOK_TYPE_CONTROL || e->type == TOK_TYPE_UNKNOWN))
			continue;
		const char *tt = m[si].text;
		size_t tl = m[si].len;
		for (size_t fi = 0; fi < f->n; fi++) {
			if (f->v[fi].id >= 0)
				continue;
			size_t start = f->v[fi].start, len = f->v[fi].len;
			const char *hit = memmem(text + start, len, tt, tl);
			if (!hit)
				continue;
			size_t at = (size_t)(hit - text);
			/* replace fragment fi by [left] token [right]; right is scanned on the next iteration */
			size_t left = at - start, right = start + len - (at + tl);
			size_t add = (left ? 1 : 0) + 1 + (right ? 1 : 0) - 1;
			if (grow((void **)&f->v, &f->cap, f->n + add, sizeof *f->v))
				return -ENOMEM;
			memmove(&f->v[fi + 1 + add], &f->v[fi + 1], (f->n - fi - 1) * sizeof *f->v);
			f->n += add;
			size_t k = fi;
			if (left)
				f->v[k++] = (struct frag){.start = start, .len = left, .id = -1};
			f->v[k++] = (struct frag){.start = at, .len = 0, .id = id};
			if (right)
				f->v[k] = (struct frag){.start = at + tl, .len = right, .id = -1};
			fi = k - 1; /* continue with the right remainder */
		}
	}
	return 0;
}

static int encode_bpe_fragment(const struct tokenizer *t, struct scratch *s, const char *text, size_t n,
			       struct ids *out)
{
	struct cps c = {0};
	struct ends e = {0};
	int rc = cps_from_utf8(&c, text, n);
	if (!rc)
		rc = pre_split(t->pre, &c, 0, c.n, &e);
	size_t start = 0;
	for (size_t i = 0; i < e.n && !rc; i++) {
		size_t b0 = c.boff[start], b1 = c.boff[e.v[i]];
		start = e.v[i];
		/* map bytes to the printable alphabet: at most 2 bytes each */
		if ((rc = grow((void **)&s->word, &s->word_cap, 2 * (b1 - b0) + 1, 1)))
			break;
		size_t wl = 0;
		for (size_t j = b0; j < b1; j++)
			wl += unicode_utf8_encode(byte_to_cp((unsigned char)text[j]), s->word + wl);
		int32_t whole = t->ignore_merges ? strmap_get(&t->by_text, s->word, wl) : -1;
		rc = whole >= 0 ? ids_push(out, whole) : merge_word(t, s, s->word, wl, out);
	}
	free(e.v);
	cps_finish(&c);
	return rc;
}

static int encode_spm_fragment(const struct tokenizer *t, struct scratch *s, const char *text, size_t n,
			       bool prefix_space, struct ids *out)
{
	if (!t->spm_spaces) /* the normalizer wrote U+2581 and the prefix already */
		return merge_word(t, s, text, n, out);
	size_t spaces = prefix_space ? 1 : 0;
	for (size_t i = 0; i < n; i++)
		spaces += text[i] == ' ';
	if (grow((void **)&s->word, &s->word_cap, n + 2 * spaces + 4, 1))
		return -ENOMEM;
	size_t wl = 0;
	if (prefix_space) {
		memcpy(s->word, "\xe2\x96\x81", 3);
		wl = 3;
	}
	for (size_t i = 0; i < n; i++) {
		if (text[i] == ' ') {
			memcpy(s->word + wl, "\xe2\x96\x81", 3);
			wl += 3;
		} else {
			s->word[wl++] = text[i];
		}
	}
	return merge_word(t, s, s->word, wl, out);
}

/* Where tok_encode is in the text: the SPM prefix goes on the first fragment and after specials. */
struct enc_pos {
	bool prev_special;
};

/* Encodes the fragments of f over text; first: text starts the caller's text. */
static int encode_frags(const struct tokenizer *t, struct scratch *s, const char *text, const struct frags *f,
			bool first, struct enc_pos *pos, struct ids *out)
{
	int rc = 0;
	for (size_t i = 0; i < f->n && !rc; i++) {
		const struct frag *fr = &f->v[i];
		if (fr->id >= 0) {
			rc = ids_push(out, fr->id);
			pos->prev_special = true;
		} else if (t->model == TOK_MODEL_BPE) {
			rc = encode_bpe_fragment(t, s, text + fr->start, fr->len, out);
		} else {
			bool at_start = first && fr->start == 0;
			bool prefix = t->add_space_prefix && pos->prev_special && (!t->prefix_first_only || at_start);
			rc = encode_spm_fragment(t, s, text + fr->start, fr->len, prefix, out);
			pos->prev_special = false;
		}
	}
	return rc;
}

/* A raw fragment through the normalizer, cut again at the "normalized" added tokens. */
static int encode_normalized(const struct tokenizer *t, struct scratch *s, const char *text, size_t n, bool first,
			     bool parse_special, struct enc_pos *pos, struct ids *out)
{
	char *norm;
	size_t norm_len;
	struct frags f = {0};
	int rc = tok_norm_apply(t->norm, text, n, &norm, &norm_len);
	if (rc)
		return rc;
	rc = partition_special(t, t->norm_match, t->n_norm_match, norm, norm_len, parse_special, &f);
	if (!rc)
		rc = encode_frags(t, s, norm, &f, first, pos, out);
	free(f.v);
	free(norm);
	return rc;
}

int tok_encode(const struct tokenizer *t, const char *text, size_t n, bool add_special, bool parse_special,
	       int32_t **ids, size_t *n_ids)
{
	struct ids out = {0};
	struct frags f = {0};
	struct scratch s = {0};
	struct enc_pos pos = {.prev_special = true};
	int rc = 0;
	*ids = NULL;
	*n_ids = 0;
	if (n > INT32_MAX / 4) /* symbol indices are 32-bit; byte-level text takes up to 2 bytes a byte */
		return -E2BIG;
	if (unicode_utf8_valid_prefix(text, n) != n)
		return -EILSEQ;
	if (add_special && t->add_bos && t->bos >= 0)
		rc = ids_push(&out, t->bos);
	if (!rc)
		rc = partition_special(t, t->raw_match, t->n_raw_match, text, n, parse_special, &f);
	if (!rc && !t->norm) {
		rc = encode_frags(t, &s, text, &f, true, &pos, &out);
	} else if (!rc) {
		for (size_t i = 0; i < f.n && !rc; i++) {
			const struct frag *fr = &f.v[i];
			if (fr->id >= 0) {
				rc = ids_push(&out, fr->id);
				pos.prev_special = true;
			} else {
				rc = encode_normalized(t, &s, text + fr->start, fr->len, fr->start == 0, parse_special,
						       &pos, &out);
			}
		}
	}
	if (!rc && add_special && t->add_eos && t->eos >= 0)
		rc = ids_push(&out, t->eos);
	if (!rc && !out.v)
		rc = grow((void **)&out.v, &out.cap, 1, sizeof *out.v);
	free(f.v);
	free(s.sym);
	free(s.heap.v);
	free(s.key);
	free(s.word);
	if (rc) {
		free(out.v);
		return rc;
	}
	*ids = out.v;
	*n_ids = out.n;
	return 0;
}

/* ---- decoding ---- */

/* Decoded bytes of id: pointer and length; *lstrip removes one leading space (SPM first token). */
static const char *piece_bytes(const struct tokenizer *t, int32_t id, bool special, bool lstrip, size_t *len)
{
	const struct tok_entry *e = &t->tok[id];
	if (e->type == TOK_TYPE_CONTROL && !special) {
		*len = 0;
		return "";
	}
	const char *p = t->piece_pool + e->piece_off;
	size_t n = e->piece_len;
	if (lstrip && n && p[0] == ' ') {
		p++;
		n--;
	}
	*len = n;
	return p;
}

int tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n, bool special, char **text, size_t *len)
{
	size_t total = 0;
	*text = NULL;
	*len = 0;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || (size_t)ids[i] >= t->n_vocab)
			return -EINVAL;
		total += t->tok[ids[i]].piece_len;
	}
	char *out = malloc(total + 1);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		size_t pl;
		const char *p = piece_bytes(t, ids[i], special, i == 0 && t->add_space_prefix, &pl);
		memcpy(out + o, p, pl);
		o += pl;
	}
	out[o] = 0;
	*text = out;
	*len = o;
	return 0;
}

void tok_stream_init(struct tok_stream *s, const struct tokenizer *t, bool special)
{
	memset(s, 0, sizeof *s);
	s->t = t;
	s->first = true;
	s->special = special;
}

/* Appends bytes to the held ones and writes out every complete character; invalid -> U+FFFD. */
static int stream_bytes(struct tok_stream *s, const char *p, size_t n, char *out, size_t cap, size_t *o)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)p[i];
		if (s->n_pending && (b & 0xc0) != 0x80) {
			/* a new lead byte before the character finished: the held bytes were invalid */
			if (*o + 3 > cap)
				return -ENOSPC;
			memcpy(out + *o, "\xef\xbf\xbd", 3);
			*o += 3;
			s->n_pending = 0;
		}
		s->pending[s->n_pending++] = b;
		size_t need = unicode_utf8_seq_len(s->pending[0]);
		if (s->n_pending < need && (s->pending[0] & 0xc0) == 0xc0 && s->pending[0] < 0xf8)
			continue;
		uint32_t cp;
		size_t k = unicode_utf8_decode((const char *)s->pending, s->n_pending, &cp);
		if (*o + 4 > cap)
			return -ENOSPC;
		if (k == s->n_pending) {
			memcpy(out + *o, s->pending, k);
			*o += k;
		} else {
			memcpy(out + *o, "\xef\xbf\xbd", 3);
			*o += 3;
		}
		s->n_pending = 0;
	}
	return 0;
}

int tok_stream_feed(struct tok_stream *s, int32_t id, char *out, size_t cap)
{
	if (id < 0 || (size_t)id >= s->t->n_vocab)
		return -EINVAL;
	size_t pl, o = 0;
	const char *p = piece_bytes(s->t, id, s->special, s->first && s->t->add_space_prefix, &pl);
	s->first = false;
	int rc = stream_bytes(s, p, pl, out, cap, &o);
	return rc ? rc : (int)o;
}

int tok_stream_flush(struct tok_stream *s, char *out, size_t cap)
{
	if (!s->n_pending)
		return 0;
	if (cap < 3)
		return -ENOSPC;
	memcpy(out, "\xef\xbf\xbd", 3);
	s->n_pending = 0;
	return 3;
}

/* ---- loading ---- */

static bool pre_from_name(const char *name, enum tok_pre *pre)
{
	static const struct {
		const char *name;
		enum tok_pre pre;
	} map[] = {
		{"default", TOK_PRE_DEFAULT}, {"gpt-2", TOK_PRE_GPT2}, {"gpt2", TOK_PRE_GPT2},
		{"phi-2", TOK_PRE_GPT2}, {"roberta-bpe", TOK_PRE_GPT2}, {"qwen2", TOK_PRE_QWEN2},
		{"deepseek-r1-qwen", TOK_PRE_QWEN2}, {"stablelm2", TOK_PRE_QWEN2}, {"megrez", TOK_PRE_QWEN2},
		{"qwen35", TOK_PRE_QWEN35}, {"llama3", TOK_PRE_LLAMA3}, {"llama-v3", TOK_PRE_LLAMA3},
		{"llama-bpe", TOK_PRE_LLAMA3}, {"falcon3", TOK_PRE_LLAMA3}, {"pixtral", TOK_PRE_LLAMA3},
		{"gpt-4o", TOK_PRE_GPT4O}, {"deepseek-v3", TOK_PRE_DEEPSEEK3},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if (strcmp(name, map[i].name) == 0) {
			*pre = map[i].pre;
			return true;
		}
	}
	return false;
}

static struct tokenizer *tok_alloc(void)
{
	struct tokenizer *t = calloc(1, sizeof *t);
	if (t)
		t->bos = t->eos = t->eot = t->eom = t->unk = t->pad = -1;
	return t;
}

/* Checks a special id read from metadata: -1 (absent) or inside the vocabulary. */
static int check_id(const struct tokenizer *t, const char *key, int32_t id, char *err, size_t errlen)
{
	if (id < -1 || (id >= 0 && (size_t)id >= t->n_vocab)) {
		err_set(err, errlen, "%s: id %d is outside the vocabulary (%zu tokens)", key, (int)id, t->n_vocab);
		return -EINVAL;
	}
	return 0;
}

static int finish_specials(struct tokenizer *t, char *err, size_t errlen)
{
	if (check_id(t, "tokenizer.ggml.bos_token_id", t->bos, err, errlen) ||
	    check_id(t, "tokenizer.ggml.eos_token_id", t->eos, err, errlen) ||
	    check_id(t, "tokenizer.ggml.eot_token_id", t->eot, err, errlen) ||
	    check_id(t, "tokenizer.ggml.eom_token_id", t->eom, err, errlen) ||
	    check_id(t, "tokenizer.ggml.unknown_token_id", t->unk, err, errlen) ||
	    check_id(t, "tokenizer.ggml.padding_token_id", t->pad, err, errlen))
		return -EINVAL;
	if (t->add_bos && t->bos < 0) {
		err_set(err, errlen, "tokenizer.ggml.add_bos_token: true but the vocabulary has no BOS token "
			"(set tokenizer.ggml.bos_token_id)");
		return -EINVAL;
	}
	if (t->add_eos && t->eos < 0) {
		err_set(err, errlen, "tokenizer.ggml.add_eos_token: true but the vocabulary has no EOS token "
			"(set tokenizer.ggml.eos_token_id)");
		return -EINVAL;
	}
	return 0;
}

static int32_t gguf_id(const struct gguf *g, const char *key, int32_t dflt)
{
	int64_t v;
	if (!gguf_get_i64(g, key, &v))
		return dflt;
	return v < -1 || v > INT32_MAX ? INT32_MAX : (int32_t)v; /* INT32_MAX fails check_id */
}

static void free_src(struct tok_src *s)
{
	free(s->text);
	free(s->len);
	free(s->type);
	free(s->score);
	free(s->merge_l);
	free(s->merge_r);
	free(s->merge_ll);
	free(s->merge_rl);
	free(s->normalized);
}

static int alloc_src(struct tok_src *s, size_t n_vocab, size_t n_merges, bool scores)
{
	size_t nv = n_vocab ? n_vocab : 1, nm = n_merges ? n_merges : 1;
	s->n_vocab = n_vocab;
	s->n_merges = n_merges;
	s->text = calloc(nv, sizeof *s->text);
	s->len = calloc(nv, sizeof *s->len);
	s->type = malloc(nv);
	s->score = scores ? calloc(nv, sizeof *s->score) : NULL;
	s->merge_l = calloc(nm, sizeof *s->merge_l);
	s->merge_r = calloc(nm, sizeof *s->merge_r);
	s->merge_ll = calloc(nm, sizeof *s->merge_ll);
	s->merge_rl = calloc(nm, sizeof *s->merge_rl);
	if (!s->text || !s->len || !s->type || (scores && !s->score) || !s->merge_l || !s->merge_r || !s->merge_ll ||
	    !s->merge_rl)
		return -ENOMEM;
	memset(s->type, TOK_TYPE_NORMAL, nv);
	return 0;
}

/* "left right": split at the first space after the first byte (a merge may start with a space). */
static bool split_merge(const char *m, size_t len, size_t *ll)
{
	const char *sp = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
	if (!sp || (size_t)(sp - m) + 1 >= len)
		return false;
	*ll = (size_t)(sp - m);
	return true;
}

struct tokenizer *tok_load_gguf(const struct gguf *g, char *err, size_t errlen)
{
	struct tok_src src = {0};
	struct tokenizer *t = tok_alloc();
	if (!t) {
		err_set(err, errlen, "tokenizer: out of memory");
		return NULL;
	}
	const char *model = gguf_get_str(g, "tokenizer.ggml.model");
	if (!model) {
		err_set(err, errlen, "tokenizer.ggml.model: missing (the file carries no tokenizer)");
		goto fail;
	}
	if (strcmp(model, "gpt2") == 0) {
		t->model = TOK_MODEL_BPE;
		t->rank_merges = true;
	} else if (strcmp(model, "llama") == 0) {
		t->model = TOK_MODEL_SPM;
	} else {
		err_set(err, errlen, "tokenizer.ggml.model: '%s' is not supported (supported: gpt2, llama)", model);
		goto fail;
	}
	t->pre = t->model == TOK_MODEL_BPE ? TOK_PRE_DEFAULT : TOK_PRE_NONE;
	const char *pre = gguf_get_str(g, "tokenizer.ggml.pre");
	if (pre && t->model == TOK_MODEL_BPE && !pre_from_name(pre, &t->pre)) {
		err_set(err, errlen, "tokenizer.ggml.pre: '%s' is not supported (supported: default, gpt-2, qwen2, qwen35, llama3, gpt-4o, deepseek-v3 "
			"and their aliases)", pre);
		goto fail;
	}
	long ki = gguf_find_key(g, "tokenizer.ggml.tokens");
	if (ki < 0 || gguf_kv_type(g, (size_t)ki) != GGUF_TYPE_ARRAY ||
	    gguf_kv_array_type(g, (size_t)ki) != GGUF_TYPE_STRING) {
		err_set(err, errlen, "tokenizer.ggml.tokens: %s", ki < 0 ? "missing" : "not an array of strings");
		goto fail;
	}
	size_t n_vocab = gguf_kv_array_len(g, (size_t)ki);
	if (n_vocab == 0 || n_vocab > INT32_MAX) {
		err_set(err, errlen, "tokenizer.ggml.tokens: %zu tokens (need 1 to 2^31-1)", n_vocab);
		goto fail;
	}
	long ti = gguf_find_key(g, "tokenizer.ggml.token_type");
	long si = gguf_find_key(g, "tokenizer.ggml.scores");
	long mi = gguf_find_key(g, "tokenizer.ggml.merges");
	if (ti >= 0 && (gguf_kv_type(g, (size_t)ti) != GGUF_TYPE_ARRAY || gguf_kv_array_len(g, (size_t)ti) != n_vocab)) {
		err_set(err, errlen, "tokenizer.ggml.token_type: must be an array of %zu integers", n_vocab);
		goto fail;
	}
	if (si >= 0 && (gguf_kv_type(g, (size_t)si) != GGUF_TYPE_ARRAY || gguf_kv_array_len(g, (size_t)si) != n_vocab)) {
		err_set(err, errlen, "tokenizer.ggml.scores: must be an array of %zu numbers", n_vocab);
		goto fail;
	}
	size_t n_merges = 0;
	if (t->model == TOK_MODEL_BPE) {
		if (mi < 0) {
			err_set(err, errlen, "tokenizer.ggml.merges: missing (a byte-level BPE vocabulary needs its merge list)");
			goto fail;
		}
		if (gguf_kv_type(g, (size_t)mi) != GGUF_TYPE_ARRAY || gguf_kv_array_type(g, (size_t)mi) != GGUF_TYPE_STRING) {
			err_set(err, errlen, "tokenizer.ggml.merges: not an array of strings");
			goto fail;
		}
		n_merges = gguf_kv_array_len(g, (size_t)mi);
	}
	if (alloc_src(&src, n_vocab, n_merges, si >= 0)) {
		err_set(err, errlen, "tokenizer: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n_vocab; i++) {
		src.text[i] = gguf_get_arr_str(g, (size_t)ki, i);
		src.len[i] = gguf_get_arr_str_len(g, (size_t)ki, i);
		if (ti >= 0) {
			int64_t ty;
			if (!gguf_get_arr_i64(g, (size_t)ti, i, &ty) || ty < 0 || ty > TOK_TYPE_BYTE) {
				err_set(err, errlen, "tokenizer.ggml.token_type[%zu]: not a token type (0 to 6)", i);
				goto fail;
			}
			src.type[i] = (uint8_t)ty;
		}
		if (si >= 0) {
			double sc;
			if (!gguf_get_arr_f64(g, (size_t)si, i, &sc)) {
				err_set(err, errlen, "tokenizer.ggml.scores[%zu]: not a number", i);
				goto fail;
			}
			src.score[i] = (float)sc;
		}
	}
	for (size_t i = 0; i < n_merges; i++) {
		const char *m = gguf_get_arr_str(g, (size_t)mi, i);
		size_t len = gguf_get_arr_str_len(g, (size_t)mi, i), ll;
		if (!split_merge(m, len, &ll)) {
			err_set(err, errlen, "tokenizer.ggml.merges[%zu]: '%.60s' is not two tokens separated by a space", i, m);
			goto fail;
		}
		src.merge_l[i] = m;
		src.merge_ll[i] = ll;
		src.merge_r[i] = m + ll + 1;
		src.merge_rl[i] = len - ll - 1;
	}
	bool spm = t->model == TOK_MODEL_SPM;
	t->ignore_merges = t->pre == TOK_PRE_LLAMA3;
	t->add_bos = spm || t->pre == TOK_PRE_LLAMA3;
	t->add_space_prefix = spm;
	t->spm_spaces = spm;
	gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos);
	gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &t->add_eos);
	gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
	t->n_vocab = n_vocab; /* for check_id */
	t->bos = gguf_id(g, "tokenizer.ggml.bos_token_id", spm && n_vocab > 1 ? 1 : -1);
	t->eos = gguf_id(g, "tokenizer.ggml.eos_token_id", spm && n_vocab > 2 ? 2 : -1);
	t->unk = gguf_id(g, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
	t->pad = gguf_id(g, "tokenizer.ggml.padding_token_id", -1);
	t->eot = gguf_id(g, "tokenizer.ggml.eot_token_id", -1);
	t->eom = gguf_id(g, "tokenizer.ggml.eom_token_id", -1);
	if (finish_specials(t, err, errlen))
		goto fail;
	t = tok_build(t, &src, "tokenizer.ggml", err, errlen);
	if (t && build_matches(t)) {
		err_set(err, errlen, "tokenizer.ggml: out of memory");
		tok_destroy(t);
		t = NULL;
	}
	free_src(&src);
	return t;
fail:
	free_src(&src);
	tok_destroy(t);
	return NULL;
}

/* ---- Hugging Face tokenizer.json ---- */

static const char *const hf_qwen2_regex =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const hf_qwen35_regex =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const hf_llama3_regex =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const hf_gpt4o_regex =
	"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
	"[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
	"\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const hf_deepseek3_regex[3] = {
	"\\p{N}{1,3}",
	"[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
	"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
	"?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
};
static const char *const hf_gpt2_regex =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Finds the pre-tokenizer among a ByteLevel (use_regex) or a Sequence of Split + ByteLevel. */
static int hf_pre(const cJSON *pt, enum tok_pre *pre, bool *byte_level)
{
	const char *type = json_get_str(pt, "type");
	if (!type)
		return -EINVAL;
	if (strcmp(type, "ByteLevel") == 0) {
		bool use_regex = true;
		json_get_bool(pt, "use_regex", &use_regex);
		*byte_level = true;
		if (use_regex)
			*pre = TOK_PRE_GPT2;
		return 0;
	}
	if (strcmp(type, "Split") == 0) {
		const char *re = json_get_str(pt, "pattern.Regex");
		if (!re)
			return -EINVAL;
		if (strcmp(re, hf_qwen2_regex) == 0)
			*pre = TOK_PRE_QWEN2;
		else if (strcmp(re, hf_qwen35_regex) == 0)
			*pre = TOK_PRE_QWEN35;
		else if (strcmp(re, hf_gpt2_regex) == 0)
			*pre = TOK_PRE_GPT2;
		else if (strcmp(re, hf_llama3_regex) == 0)
			*pre = TOK_PRE_LLAMA3;
		else if (strcmp(re, hf_gpt4o_regex) == 0)
			*pre = TOK_PRE_GPT4O;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(type, "Sequence") == 0) {
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
		const cJSON *it;
		bool deepseek = cJSON_GetArraySize(list) == 4;
		for (int i = 0; deepseek && i < 3; i++) {
			const char *re = json_get_str(cJSON_GetArrayItem(list, i), "pattern.Regex");
			deepseek = re && strcmp(re, hf_deepseek3_regex[i]) == 0;
		}
		if (deepseek) { /* three Splits, then the ByteLevel */
			*pre = TOK_PRE_DEEPSEEK3;
			return hf_pre(cJSON_GetArrayItem(list, 3), pre, byte_level) || *pre != TOK_PRE_DEEPSEEK3 ? -EINVAL : 0;
		}
		cJSON_ArrayForEach(it, list) {
			int rc = hf_pre(it, pre, byte_level);
			if (rc)
				return rc;
		}
		return 0;
	}
	return -EINVAL;
}

/* SentencePiece-style text handling: a Metaspace pre-tokenizer (*metaspace: the tokenizer
 * maps spaces itself), or normalizers that replace spaces by U+2581 (and prepend one: then
 * the normalizer does it and *prefix only tells decoding to drop the first space).
 * Returns -EINVAL for a Metaspace that splits words. */
static int hf_metaspace(const cJSON *root, bool *spm, bool *prefix, bool *first_only, bool *metaspace)
{
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
	const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
	const char *type = json_get_str(pt, "type");
	if (type && strcmp(type, "Metaspace") == 0) {
		bool split = true, add_prefix = true;
		const char *scheme = json_get_str(pt, "prepend_scheme");
		json_get_bool(pt, "split", &split);
		json_get_bool(pt, "add_prefix_space", &add_prefix);
		if (split)
			return -EINVAL;
		*spm = true;
		*metaspace = true;
		*prefix = add_prefix && !(scheme && strcmp(scheme, "never") == 0);
		*first_only = scheme && strcmp(scheme, "first") == 0;
		return 0;
	}
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(norm, "normalizers"), *it;
	const cJSON *one[1] = {norm};
	size_t n = cJSON_IsArray(list) ? (size_t)cJSON_GetArraySize(list) : (norm ? 1 : 0);
	for (size_t i = 0; i < n; i++) {
		it = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, (int)i) : one[0];
		const char *nt = json_get_str(it, "type");
		if (nt && strcmp(nt, "Replace") == 0 && json_get_str(it, "content") &&
		    strcmp(json_get_str(it, "content"), "\xe2\x96\x81") == 0)
			*spm = true;
		if (nt && strcmp(nt, "Prepend") == 0 && json_get_str(it, "prepend") &&
		    strcmp(json_get_str(it, "prepend"), "\xe2\x96\x81") == 0)
			*prefix = true;
	}
	return 0;
}

/* A token name from tokenizer_config.json: a string or {"content": ...}. */
static const char *hf_token_name(const cJSON *cfg, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsObject(v))
		return json_get_str(v, "content");
	return NULL;
}

static void hf_config(struct tokenizer *t, const char *json_path)
{
	char *dir = strdup(json_path);
	if (!dir)
		return;
	char *slash = strrchr(dir, '/');
	size_t need = (slash ? (size_t)(slash - dir) : 1) + 32;
	char *cfg_path = malloc(need);
	if (!cfg_path) {
		free(dir);
		return;
	}
	if (slash) {
		*slash = 0;
		snprintf(cfg_path, need, "%s/tokenizer_config.json", dir);
	} else {
		snprintf(cfg_path, need, "tokenizer_config.json");
	}
	char e[256];
	cJSON *cfg = json_parse_file(cfg_path, e, sizeof e);
	if (cfg) {
		const char *b = hf_token_name(cfg, "bos_token"), *s = hf_token_name(cfg, "eos_token");
		if (b)
			t->bos = tok_find(t, b);
		if (s)
			t->eos = tok_find(t, s);
		json_get_bool(cfg, "add_bos_token", &t->add_bos);
		json_get_bool(cfg, "add_eos_token", &t->add_eos);
		cJSON_Delete(cfg);
	}
	free(cfg_path);
	free(dir);
}

struct tokenizer *tok_load_hf_json(const char *path, char *err, size_t errlen)
{
	struct tok_src src = {0};
	struct tokenizer *t = NULL;
	char e[512];
	cJSON *root = json_parse_file(path, e, sizeof e);
	if (!root) {
		err_set(err, errlen, "%s", e);
		return NULL;
	}
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	const char *mtype = json_get_str(root, "model.type");
	const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
	const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
	const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
	const cJSON *it;
	enum tok_pre pre = TOK_PRE_NONE;
	bool byte_level = false, spm = false, prefix = false, first_only = false, byte_fallback = false;
	bool metaspace = false;
	struct tok_norm *norm = NULL;
	const char *unk = json_get_str(root, "model.unk_token");
	json_get_bool(model, "byte_fallback", &byte_fallback);
	if (!mtype || strcmp(mtype, "BPE") != 0) {
		err_set(err, errlen, "%s: model.type is '%s' (supported: BPE)", path, mtype ? mtype : "missing");
		goto out;
	}
	if (!cJSON_IsObject(vocab)) {
		err_set(err, errlen, "%s: model.vocab: missing or not an object", path);
		goto out;
	}
	if (!cJSON_IsArray(merges)) {
		err_set(err, errlen, "%s: model.merges: missing (a BPE vocabulary needs its merge list)", path);
		goto out;
	}
	if (tok_norm_from_json(cJSON_GetObjectItemCaseSensitive(root, "normalizer"), &norm, e, sizeof e)) {
		err_set(err, errlen, "%s: %s", path, e);
		goto out;
	}
	if (tok_norm_steps(norm) == 0) { /* an empty Sequence changes nothing */
		tok_norm_destroy(norm);
		norm = NULL;
	}
	if (hf_metaspace(root, &spm, &prefix, &first_only, &metaspace)) {
		err_set(err, errlen, "%s: pre_tokenizer: a Metaspace that splits words is not supported (only "
			"split: false, as Llama and Mistral tokenizers use)", path);
		goto out;
	}
	spm = spm || byte_fallback;
	if (!spm && (!pt || hf_pre(pt, &pre, &byte_level) || !byte_level || pre == TOK_PRE_NONE)) {
		err_set(err, errlen, "%s: pre_tokenizer: not a byte-level split this tokenizer knows (supported: ByteLevel "
			"with the GPT-2 regex, or Split with the Qwen2, Qwen3.5, Llama 3 or GPT-4o regex or DeepSeek-V3's three followed by "
			"ByteLevel; or "
			"SentencePiece-style BPE with byte_fallback)", path);
		goto out;
	}
	/* vocabulary size: one past the largest id */
	int64_t max_id = -1;
	cJSON_ArrayForEach(it, vocab) {
		if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > INT32_MAX) {
			err_set(err, errlen, "%s: model.vocab['%.60s']: not a token id", path, it->string);
			goto out;
		}
		if ((int64_t)it->valuedouble > max_id)
			max_id = (int64_t)it->valuedouble;
	}
	cJSON_ArrayForEach(it, added) {
		double id;
		if (!json_get_double(it, "id", &id) || id < 0 || id > INT32_MAX || !json_get_str(it, "content")) {
			err_set(err, errlen, "%s: added_tokens: an entry without id or content", path);
			goto out;
		}
		if ((int64_t)id > max_id)
			max_id = (int64_t)id;
	}
	size_t n_vocab = (size_t)(max_id + 1), n_merges = (size_t)cJSON_GetArraySize(merges);
	size_t n_entries = (size_t)cJSON_GetArraySize(vocab) + (size_t)cJSON_GetArraySize(added);
	if (n_vocab > 2 * n_entries + 1) { /* ids with gaps are allowed (GPT-4o's file has some), not mostly gaps */
		err_set(err, errlen, "%s: model.vocab: ids reach %zu but there are only %zu tokens (ids must be "
			"0..N-1 with fewer gaps than tokens)", path, n_vocab - 1, n_entries);
		goto out;
	}
	if (alloc_src(&src, n_vocab, n_merges, false) || !(src.normalized = calloc(n_vocab, 1)) ||
	    !(t = tok_alloc())) {
		err_set(err, errlen, "%s: out of memory", path);
		goto out;
	}
	t->norm = norm;
	norm = NULL;
	t->spm_spaces = metaspace;
	t->model = spm ? TOK_MODEL_SPM : TOK_MODEL_BPE;
	t->pre = pre;
	t->rank_merges = true;
	json_get_bool(model, "ignore_merges", &t->ignore_merges);
	t->add_space_prefix = spm && prefix;
	t->prefix_first_only = first_only;
	t->add_bos = spm || pre == TOK_PRE_LLAMA3; /* tokenizer_config.json may say otherwise */
	cJSON_ArrayForEach(it, vocab) {
		size_t id = (size_t)it->valuedouble;
		unsigned byte;
		char tail;
		src.text[id] = it->string;
		src.len[id] = strlen(it->string);
		if (spm && src.len[id] == 6 && sscanf(it->string, "<0x%2X>%c", &byte, &tail) == 1)
			src.type[id] = TOK_TYPE_BYTE;
		if (unk && strcmp(it->string, unk) == 0)
			src.type[id] = TOK_TYPE_UNKNOWN;
	}
	cJSON_ArrayForEach(it, added) {
		double id;
		bool special = false, normalized;
		json_get_double(it, "id", &id);
		json_get_bool(it, "special", &special);
		normalized = !special; /* the library's default for an added token */
		json_get_bool(it, "normalized", &normalized);
		src.normalized[(size_t)id] = normalized;
		src.text[(size_t)id] = json_get_str(it, "content");
		src.len[(size_t)id] = strlen(src.text[(size_t)id]);
		src.type[(size_t)id] = special ? TOK_TYPE_CONTROL : TOK_TYPE_USER_DEFINED;
	}
	for (size_t i = 0; i < n_vocab; i++) {
		if (!src.text[i]) { /* a gap: an unused id that nothing encodes to and that decodes to nothing */
			src.text[i] = "";
			src.type[i] = TOK_TYPE_UNUSED;
		}
	}
	size_t i = 0;
	cJSON_ArrayForEach(it, merges) {
		if (cJSON_IsString(it)) {
			size_t ll, len = strlen(it->valuestring);
			if (!split_merge(it->valuestring, len, &ll)) {
				err_set(err, errlen, "%s: model.merges[%zu]: '%.60s' is not two tokens separated by a space", path,
					i, it->valuestring);
				goto out;
			}
			src.merge_l[i] = it->valuestring;
			src.merge_ll[i] = ll;
			src.merge_r[i] = it->valuestring + ll + 1;
			src.merge_rl[i] = len - ll - 1;
		} else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
			   cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
			src.merge_l[i] = cJSON_GetArrayItem(it, 0)->valuestring;
			src.merge_r[i] = cJSON_GetArrayItem(it, 1)->valuestring;
			src.merge_ll[i] = strlen(src.merge_l[i]);
			src.merge_rl[i] = strlen(src.merge_r[i]);
		} else {
			err_set(err, errlen, "%s: model.merges[%zu]: neither \"a b\" nor [\"a\", \"b\"]", path, i);
			goto out;
		}
		i++;
	}
	t = tok_build(t, &src, path, err, errlen);
	if (t) {
		if (unk)
			t->unk = tok_find(t, unk);
		hf_config(t, path);
		if (finish_specials(t, err, errlen)) {
			tok_destroy(t);
			t = NULL;
		} else if (build_matches(t)) {
			err_set(err, errlen, "%s: out of memory", path);
			tok_destroy(t);
			t = NULL;
		}
	}
	free_src(&src);
	cJSON_Delete(root);
	return t;
out:
	free_src(&src);
	tok_norm_destroy(norm);
	tok_destroy(t);
	cJSON_Delete(root);
	return NULL;
}
