/* tokenizer_norm — the "normalizer" of a Hugging Face tokenizer.json, applied as the
 * tokenizers library applies it: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace (String
 * pattern), Prepend, and Sequence of these (nested sequences run in order); null means
 * none. tok_encode runs it on each piece of text between added tokens that are not
 * "normalized" (special tokens are never normalized), before the pre-tokenizer.
 *
 * Semantics kept from huggingface/tokenizers (tokenizers/src/normalizers): Lowercase maps each
 * character on its own (char::to_lowercase: no final-sigma rule); Strip removes
 * White_Space characters (char::is_whitespace); Replace replaces every non-overlapping
 * occurrence, leftmost first; Prepend adds its text only to a non-empty string.
 *
 * It does not: support Replace with a Regex pattern, BertNormalizer, StripAccents,
 * Precompiled or NMT (an unknown or unsupported type is an error naming it, never a
 * skip), or keep offsets. GGUF vocabularies have no normalizer (llama.cpp applies none).
 *
 * Ownership: arguments are borrowed; tok_norm_apply's *out is malloc'd (NUL-terminated)
 * and the caller's to free. A struct tok_norm is immutable after loading (thread-safe). */
#ifndef SIXI_MODEL_TOKENIZER_NORM_H
#define SIXI_MODEL_TOKENIZER_NORM_H
#include <stddef.h>

struct cJSON;
struct tok_norm;

/* From the value of tokenizer.json's "normalizer" (NULL or JSON null: *out = NULL, no
 * normalizer). On a type that is not supported, or a step missing its fields, returns
 * -EINVAL with "normalizer...: what is wrong" in err; -ENOMEM. */
__attribute__((warn_unused_result))
int tok_norm_from_json(const struct cJSON *node, struct tok_norm **out, char *err, size_t errlen);
void tok_norm_destroy(struct tok_norm *nm);

/* Runs every step over s[0..n) into *out (*out_len bytes). nm may be NULL (a copy).
 * -EILSEQ for invalid UTF-8, -ENOMEM. */
__attribute__((warn_unused_result))
int tok_norm_apply(const struct tok_norm *nm, const char *s, size_t n, char **out, size_t *out_len);

/* Number of steps (a Sequence counts its members), 0 for NULL. */
size_t tok_norm_steps(const struct tok_norm *nm);
#endif
