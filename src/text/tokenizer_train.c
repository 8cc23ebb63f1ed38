/* tokenizer_train — a deterministic byte-level BPE trainer for the project's own tiny
 * vocabulary (the embedded default model). Words come from the qwen2 pre-tokenizer;
 * each round counts adjacent symbol pairs over all words (weighted by word frequency)
 * and merges the most frequent one. Ties break on the merged text's bytes, then on the
 * left id, so the result depends only on the corpus.
 *
 * It does not: scale to large corpora (each round rescans every word: fine for a few
 * kB), learn a SentencePiece model, or normalize text. */
#include "text/tokenizer.h"
#include "core/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "text/unicode.h"

#define N_SPECIAL 3
static const char *const specials[N_SPECIAL] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

struct word {
	const char *s;  /* bytes in the corpus */
	size_t len;
	long count;     /* occurrences */
	int32_t *sym;   /* current symbol ids */
	size_t n_sym;
};

struct vocab_text {
	char *s;        /* byte-level text, NUL-terminated */
	size_t len;
};

static int cmp_word(const void *a, const void *b)
{
	const struct word *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Pair counts: open addressing on (a, b). */
struct pair_count {
	int32_t a, b;   /* a < 0: empty */
	long count;
};

static size_t pair_slot(const struct pair_count *t, size_t cap, int32_t a, int32_t b)
{
	uint64_t h = ((uint64_t)(uint32_t)a * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(uint32_t)b * 0xc2b2ae3d27d4eb4fULL);
	size_t i = (size_t)(h ^ (h >> 31)) & (cap - 1);
	while (t[i].a >= 0 && (t[i].a != a || t[i].b != b))
		i = (i + 1) & (cap - 1);
	return i;
}

/* Is the text of merging (a1, b1) ordered before that of (a2, b2)? */
static bool text_before(const struct vocab_text *v, int32_t a1, int32_t b1, int32_t a2, int32_t b2)
{
	size_t l1 = v[a1].len + v[b1].len, l2 = v[a2].len + v[b2].len;
	for (size_t i = 0; i < l1 && i < l2; i++) {
		unsigned char c1 = (unsigned char)(i < v[a1].len ? v[a1].s[i] : v[b1].s[i - v[a1].len]);
		unsigned char c2 = (unsigned char)(i < v[a2].len ? v[a2].s[i] : v[b2].s[i - v[a2].len]);
		if (c1 != c2)
			return c1 < c2;
	}
	if (l1 != l2)
		return l1 < l2;
	return a1 < a2;
}

/* The vocabulary's keys; n_pad tokens "<|unused_N|>" of pad_type follow the specials (the same
 * ids for every learnt token, bos and eos). */
static int write_keys(struct gguf_writer *w, const struct vocab_text *v, size_t n_vocab, size_t n_pad, int pad_type,
		      char **merges, size_t n_merges)
{
	size_t n_all = n_vocab + n_pad;
	const char **toks = malloc(n_all * sizeof *toks);
	int32_t *types = malloc(n_all * sizeof *types);
	char *pad = malloc(n_pad * 24 + 1);
	int rc = -ENOMEM;
	if (!toks || !types || !pad)
		goto out;
	for (size_t i = 0; i < n_vocab; i++) {
		toks[i] = v[i].s;
		types[i] = i + N_SPECIAL >= n_vocab ? TOK_TYPE_CONTROL : TOK_TYPE_NORMAL;
	}
	for (size_t i = 0; i < n_pad; i++) {
		snprintf(pad + 24 * i, 24, "<|unused_%u|>", (unsigned)(i & 0xffffffu)); /* n_pad < 2^24 */
		toks[n_vocab + i] = pad + 24 * i;
		types[n_vocab + i] = pad_type;
	}
	uint32_t eot = (uint32_t)(n_vocab - N_SPECIAL), im_end = (uint32_t)(n_vocab - 1);
	rc = gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
	if (!rc) rc = gguf_writer_set_str(w, "tokenizer.ggml.pre", "qwen2");
	if (!rc) rc = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, n_all);
	if (!rc) rc = gguf_writer_set_arr_num(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, n_all);
	if (!rc) rc = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges, n_merges);
	if (!rc) rc = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", eot);
	if (!rc) rc = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", im_end);
	if (!rc) rc = gguf_writer_set_u32(w, "tokenizer.ggml.eot_token_id", im_end);
	if (!rc) rc = gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", eot);
	if (!rc) rc = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
out:
	free(toks);
	free(types);
	free(pad);
	return rc;
}

/* tok_train_tiny_bpe, the list padded to n_total tokens (0 or fewer than learnt: none). */
static int train_bpe(const char *corpus, size_t n, size_t vocab_size, size_t n_total, int pad_type,
		     struct gguf_writer *w, char *err, size_t errlen)
{
	size_t *ends = NULL, n_pieces = 0, n_words = 0, n_vocab = 256, n_merges = 0;
	struct word *words = NULL;
	struct vocab_text *v = NULL;
	char **merges = NULL;
	struct pair_count *pc = NULL;
	int rc;
	if (vocab_size < 256 + N_SPECIAL || vocab_size > 65536) {
		err_set(err, errlen, "tiny BPE: vocabulary size %zu is outside 259..65536", vocab_size);
		return -EINVAL;
	}
	rc = tok_pre_split(TOK_PRE_QWEN2, corpus, n, &ends, &n_pieces);
	if (rc) {
		err_set(err, errlen, "tiny BPE: the corpus is not valid UTF-8 (byte %zu)", unicode_utf8_valid_prefix(corpus, n));
		return rc;
	}
	size_t merges_max = vocab_size - 256 - N_SPECIAL;
	words = calloc(n_pieces + 1, sizeof *words);
	v = calloc(vocab_size, sizeof *v);
	merges = calloc(merges_max + 1, sizeof *merges);
	rc = -ENOMEM;
	if (!words || !v || !merges)
		goto out;
	/* unique words with counts */
	for (size_t i = 0, start = 0; i < n_pieces; start = ends[i++])
		words[i] = (struct word){.s = corpus + start, .len = ends[i] - start, .count = 1};
	qsort(words, n_pieces, sizeof *words, cmp_word);
	for (size_t i = 0; i < n_pieces; i++) {
		if (n_words && cmp_word(&words[n_words - 1], &words[i]) == 0)
			words[n_words - 1].count++;
		else
			words[n_words++] = words[i];
	}
	size_t total_sym = 0;
	for (size_t i = 0; i < n_words; i++) {
		words[i].sym = malloc(words[i].len * sizeof *words[i].sym);
		if (!words[i].sym)
			goto out;
		for (size_t j = 0; j < words[i].len; j++)
			words[i].sym[j] = (unsigned char)words[i].s[j];
		words[i].n_sym = words[i].len;
		total_sym += words[i].len;
	}
	for (unsigned b = 0; b < 256; b++) {
		v[b].s = malloc(5);
		if (!v[b].s)
			goto out;
		v[b].len = unicode_utf8_encode(tok_byte_char((unsigned char)b), v[b].s);
		v[b].s[v[b].len] = 0;
	}
	size_t cap = 16;
	while (cap < 2 * total_sym + 16)
		cap *= 2;
	pc = malloc(cap * sizeof *pc);
	if (!pc)
		goto out;
	while (n_merges < merges_max) {
		for (size_t i = 0; i < cap; i++)
			pc[i].a = -1;
		int32_t best_a = -1, best_b = -1;
		long best = 1; /* a pair must occur at least twice */
		for (size_t i = 0; i < n_words; i++) {
			for (size_t j = 0; j + 1 < words[i].n_sym; j++) {
				int32_t a = words[i].sym[j], b = words[i].sym[j + 1];
				size_t s = pair_slot(pc, cap, a, b);
				if (pc[s].a < 0)
					pc[s] = (struct pair_count){.a = a, .b = b, .count = 0};
				pc[s].count += words[i].count;
			}
		}
		for (size_t i = 0; i < cap; i++) {
			if (pc[i].a < 0)
				continue;
			if (pc[i].count > best ||
			    (pc[i].count == best && best_a >= 0 && text_before(v, pc[i].a, pc[i].b, best_a, best_b))) {
				best = pc[i].count;
				best_a = pc[i].a;
				best_b = pc[i].b;
			}
		}
		if (best_a < 0)
			break;
		int32_t id = (int32_t)n_vocab;
		size_t la = v[best_a].len, lb = v[best_b].len;
		v[id].s = malloc(la + lb + 1);
		merges[n_merges] = malloc(la + lb + 2);
		if (!v[id].s || !merges[n_merges])
			goto out;
		memcpy(v[id].s, v[best_a].s, la);
		memcpy(v[id].s + la, v[best_b].s, lb);
		v[id].s[la + lb] = 0;
		v[id].len = la + lb;
		snprintf(merges[n_merges], la + lb + 2, "%s %s", v[best_a].s, v[best_b].s);
		n_merges++;
		n_vocab++;
		for (size_t i = 0; i < n_words; i++) { /* replace (a, b) left to right */
			size_t o = 0;
			for (size_t j = 0; j < words[i].n_sym; j++) {
				if (j + 1 < words[i].n_sym && words[i].sym[j] == best_a && words[i].sym[j + 1] == best_b) {
					words[i].sym[o++] = id;
					j++;
				} else {
					words[i].sym[o++] = words[i].sym[j];
				}
			}
			words[i].n_sym = o;
		}
	}
	for (size_t i = 0; i < N_SPECIAL; i++) {
		v[n_vocab].s = strdup(specials[i]);
		if (!v[n_vocab].s)
			goto out;
		v[n_vocab++].len = strlen(specials[i]);
	}
	rc = write_keys(w, v, n_vocab, n_total > n_vocab ? n_total - n_vocab : 0, pad_type, merges, n_merges);
	if (rc)
		err_set(err, errlen, "tiny BPE: cannot store the vocabulary in the GGUF writer: %s", strerror(-rc));
out:
	if (rc == -ENOMEM)
		err_set(err, errlen, "tiny BPE: out of memory");
	for (size_t i = 0; words && i < n_words; i++)
		free(words[i].sym);
	for (size_t i = 0; v && i < vocab_size; i++)
		free(v[i].s);
	for (size_t i = 0; merges && i < n_merges; i++)
		free(merges[i]);
	free(words);
	free(v);
	free(merges);
	free(pc);
	free(ends);
	return rc;
}

int tok_train_tiny_bpe(const char *corpus, size_t n, size_t vocab_size, struct gguf_writer *w, char *err,
		       size_t errlen)
{
	return train_bpe(corpus, n, vocab_size, 0, TOK_TYPE_UNUSED, w, err, errlen);
}

int tok_write_tiny_vocab(struct gguf_writer *w, char *err, size_t errlen)
{
	return tok_train_tiny_bpe(tok_tiny_corpus, strlen(tok_tiny_corpus), 512, w, err, errlen);
}

int tok_write_tiny_vocab_padded(struct gguf_writer *w, size_t n_total, int pad_type, char *err, size_t errlen)
{
	if (n_total < 512 || n_total > (1u << 24)) {
		err_set(err, errlen, "tiny BPE: a padded vocabulary of %zu tokens is outside 512..16777216", n_total);
		return -EINVAL;
	}
	if (pad_type != TOK_TYPE_UNUSED && pad_type != TOK_TYPE_NORMAL) {
		err_set(err, errlen, "tiny BPE: padding tokens are UNUSED or NORMAL, not type %d", pad_type);
		return -EINVAL;
	}
	return train_bpe(tok_tiny_corpus, strlen(tok_tiny_corpus), 512, n_total, pad_type, w, err, errlen);
}
