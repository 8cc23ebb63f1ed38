/* prompt — see prompt.h. Words are 2–8 lowercase letters from a splitmix64
 * stream: varied enough that BPE tokenizers give a stable tokens-per-word ratio
 * (about 1.5–2.5), cheap enough to build a 100k-token prompt in a millisecond. */
#include "bench/prompt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

char *prompt_make(uint64_t seed, int64_t stream, int64_t seq, int64_t n_words)
{
	if (n_words < 1)
		n_words = 1;
	size_t cap = (size_t)n_words * 10 + 64;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	/* the unique head: letters only, so it is one "word" to any pre-tokenizer */
	uint64_t st = seed ^ ((uint64_t)stream * 0x100000001b3ULL) ^ ((uint64_t)seq << 40);
	uint64_t id = splitmix64(&st);
	size_t len = 0;
	for (int i = 0; i < 10; i++) {
		out[len++] = (char)('a' + id % 26);
		id /= 26;
	}
	for (int64_t w = 1; w < n_words; w++) {
		uint64_t r = splitmix64(&st);
		int wl = 2 + (int)(r % 7);
		r >>= 8;
		out[len++] = ' ';
		for (int i = 0; i < wl; i++) {
			out[len++] = (char)('a' + r % 26);
			r /= 26;
		}
	}
	out[len] = 0;
	return out;
}

int64_t prompt_words_for(int64_t target_tokens, double tokens_per_word)
{
	if (tokens_per_word <= 0)
		tokens_per_word = 1.0;
	int64_t w = (int64_t)((double)target_tokens / tokens_per_word + 0.5);
	return w < 1 ? 1 : w;
}
