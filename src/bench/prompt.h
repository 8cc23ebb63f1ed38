/* prompt — prompts that need no tokenizer.
 *
 * A prompt is a sequence of pseudo-words drawn from a seeded generator; its first
 * word is unique to (seed, stream, request), so no two prompts share even their
 * first token and a prefix cache cannot help (DESIGN rule 4). Length is set in
 * words and calibrated to tokens from the server's own usage.prompt_tokens.
 * Returned strings are the caller's to free. */
#ifndef SIXI_BENCH_PROMPT_H
#define SIXI_BENCH_PROMPT_H
#include <stdint.h>
#include <stddef.h>

/* A prompt of n_words words whose first word encodes (seed, stream, seq). */
char *prompt_make(uint64_t seed, int64_t stream, int64_t seq, int64_t n_words);
/* Words needed for target_tokens given a measured tokens-per-word ratio (> 0). */
int64_t prompt_words_for(int64_t target_tokens, double tokens_per_word);
#endif
