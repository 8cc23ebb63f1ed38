/* unicode_norm — Unicode normalization forms NFC, NFD, NFKC and NFKD (UAX #15) and
 * full lowercase mapping, over UTF-8, from the tables unicode_gen.py generates out of
 * Debian's unicode-data (Unicode 15.0.0: unicode_data_version).
 *
 * Decomposition applies the one-level mappings recursively (compatibility ones only for
 * NFKC/NFKD) and Hangul syllables algorithmically; canonical ordering sorts each run of
 * non-starters by combining class (stable); composition joins a starter with each
 * following character that is not blocked, through the primary composites (exclusion
 * table applied) and the Hangul L+V, LV+T rules.
 *
 * It does not case-fold (lowercase is the per-character mapping of UnicodeData plus
 * SpecialCasing's unconditional entries: no Final_Sigma, no language rules, as Rust's
 * char::to_lowercase), check quick-check properties, or keep offsets into the input.
 * Workload: prompts up to a few hundred kB, once per request; all-ASCII text (unchanged
 * by every form) is copied without a table lookup.
 *
 * Ownership: inputs are borrowed; *out is malloc'd, NUL-terminated and the caller's to free.
 * Errors: 0, -EILSEQ for invalid UTF-8 (nothing written), -ENOMEM. */
#ifndef SIXI_MODEL_UNICODE_NORM_H
#define SIXI_MODEL_UNICODE_NORM_H
#include <stddef.h>
#include <stdint.h>

enum unicode_form { UNICODE_NFC, UNICODE_NFD, UNICODE_NFKC, UNICODE_NFKD };

/* s[0..n) in normalization form `form` into *out (*out_len bytes, excluding the NUL). */
__attribute__((warn_unused_result))
int unicode_normalize(enum unicode_form form, const char *s, size_t n, char **out, size_t *out_len);

/* s[0..n) with every code point replaced by its lowercase mapping (U+0130 -> U+0069 U+0307). */
__attribute__((warn_unused_result))
int unicode_lowercase(const char *s, size_t n, char **out, size_t *out_len);
#endif
