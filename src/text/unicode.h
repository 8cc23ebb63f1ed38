/* unicode — what the tokenizers need of Unicode: UTF-8 decoding and encoding, the
 * major general category of a code point and the White_Space property, and the
 * generated tables unicode_norm.c normalizes with (tables generated from Debian's
 * unicode-data by src/text/unicode_gen.py).
 *
 * It does not case-fold or segment; normalization itself is in unicode_norm.h. The
 * Unicode version is the one of the unicode-data package the tables were generated
 * from (unicode_data_version, "15.0.0"). */
#ifndef SIXI_MODEL_UNICODE_H
#define SIXI_MODEL_UNICODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum unicode_cat {
	UCAT_OTHER = 0, /* C*: control, format, private use, surrogate, unassigned */
	UCAT_LETTER,    /* L* */
	UCAT_MARK,      /* M* */
	UCAT_NUMBER,    /* N* */
	UCAT_PUNCT,     /* P* */
	UCAT_SYMBOL,    /* S* */
	UCAT_SEPARATOR, /* Z* */
};

/* Letter subcategories (for the GPT-4o split, which tells cases apart). */
enum unicode_letter { ULET_NONE = 0, ULET_LU, ULET_LL, ULET_LT, ULET_LM, ULET_LO };

struct unicode_range {
	uint32_t first, last; /* inclusive code points */
	uint8_t cat;          /* enum unicode_cat; the combining class in unicode_ccc_ranges */
};

/* One level of a decomposition mapping: unicode_decomp_pool[off .. off + len). */
struct unicode_decomp {
	uint32_t cp;
	uint16_t off;
	uint8_t len;    /* 1..18 code points */
	uint8_t compat; /* 1: compatibility mapping (<tag> in UnicodeData.txt), 0: canonical */
};

/* A primary composite: first + second -> composite (canonical, not excluded). */
struct unicode_comp {
	uint32_t first, second, composite;
};

/* Lowercase of cp: up to 3 code points, unused ones 0. */
struct unicode_lower {
	uint32_t cp;
	uint32_t lower[3];
};

/* Generated tables (unicode_data.c), each sorted by code point (unicode_comps by pair). */
extern const char unicode_data_version[];
extern const struct unicode_range unicode_letter_ranges[]; /* .cat holds an enum unicode_letter */
extern const size_t unicode_letter_ranges_count;
extern const struct unicode_range unicode_ccc_ranges[]; /* .cat holds the combining class */
extern const size_t unicode_ccc_ranges_count;
extern const uint32_t unicode_decomp_pool[];
extern const struct unicode_decomp unicode_decomps[];
extern const size_t unicode_decomps_count;
extern const struct unicode_comp unicode_comps[];
extern const size_t unicode_comps_count;
extern const uint32_t unicode_comp_min_second; /* no composite has a smaller second code point */
extern const struct unicode_lower unicode_lowers[];
extern const size_t unicode_lowers_count;
extern const struct unicode_range unicode_cat_ranges[];
extern const size_t unicode_cat_ranges_count;
extern const struct unicode_range unicode_space_ranges[];
extern const size_t unicode_space_ranges_count;

enum unicode_cat unicode_category(uint32_t cp);
bool unicode_is_space(uint32_t cp);
/* Letter subcategory of cp, ULET_NONE when it is not a letter. */
enum unicode_letter unicode_letter_kind(uint32_t cp);
/* Canonical combining class (0 for starters and unassigned code points). */
unsigned unicode_ccc(uint32_t cp);

/* Decodes one UTF-8 sequence at s[0..n): returns its length (1-4) and sets *cp, or 0 when
 * the bytes are not well-formed UTF-8 (overlong, surrogate, > U+10FFFF, truncated). */
size_t unicode_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Writes cp as UTF-8 into out (4 bytes room); returns the length, 0 for invalid code points. */
size_t unicode_utf8_encode(uint32_t cp, char *out);
/* Length of the longest valid UTF-8 prefix of s[0..n) (== n when all of it is valid). */
size_t unicode_utf8_valid_prefix(const char *s, size_t n);
/* Length a UTF-8 sequence starting with lead byte b claims (1 for invalid leads). */
size_t unicode_utf8_seq_len(unsigned char b);
#endif
