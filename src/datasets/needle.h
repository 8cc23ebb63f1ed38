/* needle — needle-in-a-haystack prompts: one fact (an access code) hidden at
 * a chosen depth in a long filler text, and a question about it at the end.
 *
 * The filler is generated, not read: sentences built from word lists by a
 * seeded generator, each numbered, so no two sentences in a prompt are equal
 * and two seeds give prompts that differ from their first words on: a prefix
 * cache cannot serve one trial from another, and nothing repeats that a model
 * could lean on. Length is asked for in tokens and met approximately (4 bytes
 * per token, the usual rate for English text with BPE vocabularies); the
 * exact byte count is in the case. The filler never contains the words
 * "access code". Strings returned in a case are owned by it. */
#ifndef SIXI_EVAL_NEEDLE_H
#define SIXI_EVAL_NEEDLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NEEDLE_BYTES_PER_TOKEN 4

struct needle_spec {
	int64_t context_tokens; /* haystack length, tokens (approximate); 64 .. 2000000 */
	double depth;           /* where the needle goes: 0 = first sentence, 1 = last, in [0, 1] */
	uint64_t seed;          /* filler, key and code */
};

struct needle_case {
	char *prompt;           /* the whole user message, NUL-terminated; owned */
	size_t prompt_bytes;
	char key[64];           /* what is asked about: "the north vault of Amber Harbour" */
	char answer[16];        /* the code to find: 7 digits */
	size_t needle_at_bytes; /* byte offset of the needle sentence in prompt */
	double depth_actual;    /* needle_at_bytes over the haystack's bytes */
};

/* 0, or -EINVAL (spec out of range, nothing allocated) / -ENOMEM. */
__attribute__((warn_unused_result)) int needle_make(const struct needle_spec *s, struct needle_case *c);
void needle_case_finish(struct needle_case *c);
/* true when the reply (after any reasoning) holds the code as a separate
 * number: "4821906" or "The code is 4821906." pass, "48219061" does not. */
bool needle_check(const struct needle_case *c, const char *reply);
#endif
