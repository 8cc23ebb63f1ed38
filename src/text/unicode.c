/* unicode — UTF-8 helpers and category lookups over the generated tables.
 * Lookups are binary searches (about 1500 ranges, 11 steps); ASCII takes a fast path. */
#include "text/unicode.h"

static const struct unicode_range *range_find(const struct unicode_range *r, size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < r[mid].first)
			hi = mid;
		else if (cp > r[mid].last)
			lo = mid + 1;
		else
			return &r[mid];
	}
	return NULL;
}

enum unicode_cat unicode_category(uint32_t cp)
{
	if (cp < 0x80) {
		if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
			return UCAT_LETTER;
		if (cp >= '0' && cp <= '9')
			return UCAT_NUMBER;
	}
	const struct unicode_range *r = range_find(unicode_cat_ranges, unicode_cat_ranges_count, cp);
	return r ? (enum unicode_cat)r->cat : UCAT_OTHER;
}

bool unicode_is_space(uint32_t cp)
{
	if (cp < 0x80)
		return cp == ' ' || (cp >= 0x09 && cp <= 0x0d);
	return range_find(unicode_space_ranges, unicode_space_ranges_count, cp) != NULL;
}

enum unicode_letter unicode_letter_kind(uint32_t cp)
{
	const struct unicode_range *r = range_find(unicode_letter_ranges, unicode_letter_ranges_count, cp);
	return r ? (enum unicode_letter)r->cat : ULET_NONE;
}

unsigned unicode_ccc(uint32_t cp)
{
	if (cp < 0x300) /* the first combining mark */
		return 0;
	const struct unicode_range *r = range_find(unicode_ccc_ranges, unicode_ccc_ranges_count, cp);
	return r ? r->cat : 0;
}

size_t unicode_utf8_seq_len(unsigned char b)
{
	if (b < 0x80)
		return 1;
	if ((b & 0xe0) == 0xc0)
		return 2;
	if ((b & 0xf0) == 0xe0)
		return 3;
	if ((b & 0xf8) == 0xf0)
		return 4;
	return 1;
}

size_t unicode_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	if (n == 0)
		return 0;
	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	size_t len;
	uint32_t c, min;
	if ((u[0] & 0xe0) == 0xc0) {
		len = 2, c = u[0] & 0x1f, min = 0x80;
	} else if ((u[0] & 0xf0) == 0xe0) {
		len = 3, c = u[0] & 0x0f, min = 0x800;
	} else if ((u[0] & 0xf8) == 0xf0) {
		len = 4, c = u[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

size_t unicode_utf8_encode(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp <= 0x10ffff) {
		o[0] = (unsigned char)(0xf0 | (cp >> 18));
		o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[3] = (unsigned char)(0x80 | (cp & 0x3f));
		return 4;
	}
	return 0;
}

size_t unicode_utf8_valid_prefix(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint32_t cp;
		size_t k = unicode_utf8_decode(s + i, n - i, &cp);
		if (!k)
			break;
		i += k;
	}
	return i;
}
