/* score — see score.h.
 *
 * The loop tracker keeps a hash set of the (64-bit FNV-1a, length) keys of the
 * long sentences seen so far plus the unfinished tail, so each byte of the
 * stream is scanned once and memory grows with the number of distinct long
 * sentences, not with the text. A 64-bit collision between two different
 * sentences is possible in principle and ignored (it would undercount by one). */
#include "grade/score.h"
#include "core/buf.h"
#include "text/reply.h"
#include "core/hash.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- loop ratio ---------------------------------------------------------- */

struct score_loop {
	struct buf tail;      /* text since the last sentence boundary */
	uint64_t *keys;       /* open addressing, 0 = empty slot */
	size_t cap, used;     /* slots, distinct long sentences */
	size_t total;         /* long sentences completed */
	bool skipping_ws;     /* inside the whitespace run after a boundary */
};

static bool is_ws(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

struct score_loop *score_loop_create(void)
{
	struct score_loop *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	buf_init(&l->tail);
	l->cap = 64;
	l->keys = calloc(l->cap, sizeof *l->keys);
	if (!l->keys) {
		free(l);
		return NULL;
	}
	return l;
}

void score_loop_destroy(struct score_loop *l)
{
	if (!l)
		return;
	buf_finish(&l->tail);
	free(l->keys);
	free(l);
}

/* Strips whitespace; returns the key of a piece longer than 40 code points, 0 otherwise. */
static uint64_t piece_key(const char *p, size_t n)
{
	while (n && is_ws((unsigned char)*p))
		p++, n--;
	while (n && is_ws((unsigned char)p[n - 1]))
		n--;
	size_t cps = 0;
	for (size_t i = 0; i < n; i++)
		cps += ((unsigned char)p[i] & 0xC0) != 0x80;
	if (cps <= 40)
		return 0;
	uint64_t k = hash_fnv1a64(p, n) ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull);
	return k ? k : 1;
}

/* Inserts into a table of cap slots; returns true when the key was new. */
static bool table_put(uint64_t *keys, size_t cap, uint64_t k)
{
	size_t i = (size_t)(k % cap);
	while (keys[i]) {
		if (keys[i] == k)
			return false;
		i = (i + 1) % cap;
	}
	keys[i] = k;
	return true;
}

static int loop_add(struct score_loop *l, uint64_t k)
{
	if (!k)
		return 0;
	if ((l->used + 1) * 2 > l->cap) {
		size_t ncap = l->cap * 2;
		uint64_t *nk = calloc(ncap, sizeof *nk);
		if (!nk)
			return -ENOMEM;
		for (size_t i = 0; i < l->cap; i++)
			if (l->keys[i])
				table_put(nk, ncap, l->keys[i]);
		free(l->keys);
		l->keys = nk;
		l->cap = ncap;
	}
	l->total++;
	if (table_put(l->keys, l->cap, k))
		l->used++;
	return 0;
}

int score_loop_feed(struct score_loop *l, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (l->skipping_ws) {
			if (is_ws(c))
				continue;
			l->skipping_ws = false;
		}
		/* A boundary is whitespace right after . ? or ! : the piece ends before it. */
		if (is_ws(c) && l->tail.len) {
			char last = l->tail.data[l->tail.len - 1];
			if (last == '.' || last == '?' || last == '!') {
				int rc = loop_add(l, piece_key(l->tail.data, l->tail.len));
				if (rc)
					return rc;
				buf_reset(&l->tail);
				l->skipping_ws = true;
				continue;
			}
		}
		if (buf_append(&l->tail, &p[i], 1))
			return -ENOMEM;
	}
	return 0;
}

static double ratio(size_t total, size_t unique)
{
	return total < 5 ? 0.0 : 100.0 * (1.0 - (double)unique / (double)total);
}

double score_loop_ratio(const struct score_loop *l) { return ratio(l->total, l->used); }

double score_loop_final(const struct score_loop *l)
{
	uint64_t k = piece_key(l->tail.data ? l->tail.data : "", l->tail.len);
	if (!k)
		return ratio(l->total, l->used);
	/* Is the tail a repeat? Probe without inserting. */
	size_t i = (size_t)(k % l->cap);
	bool seen = false;
	while (l->keys[i]) {
		if (l->keys[i] == k) {
			seen = true;
			break;
		}
		i = (i + 1) % l->cap;
	}
	return ratio(l->total + 1, l->used + (seen ? 0 : 1));
}

double score_loop_text(const char *text, size_t n)
{
	struct score_loop *l = score_loop_create();
	if (!l || score_loop_feed(l, text, n)) {
		score_loop_destroy(l);
		return -1;
	}
	double r = score_loop_final(l);
	score_loop_destroy(l);
	return r;
}

/* ---- extraction ---------------------------------------------------------- */

struct fence {
	const char *body;     /* first byte after the opening line */
	size_t body_len;
	char lang[32];        /* lower-cased tag, "" when untagged */
	bool closed;
};

/* A fence line: up to 3 spaces, then ``` or ~~~ ; returns the marker length or 0. */
static size_t fence_at(const char *line, char *ch)
{
	size_t i = 0;
	while (i < 3 && line[i] == ' ')
		i++;
	if ((line[i] == '`' || line[i] == '~') && line[i + 1] == line[i] && line[i + 2] == line[i]) {
		*ch = line[i];
		size_t j = i;
		while (line[j] == *ch)
			j++;
		return j;
	}
	return 0;
}

static bool lang_matches(const char *tag, const char *want)
{
	if (!*tag)
		return true;
	if (!want || !*want)
		return true;
	if (strcmp(tag, want) == 0)
		return true;
	static const char *const py[] = {"python", "py", "python3", "py3", NULL};
	static const char *const cpp[] = {"cpp", "c++", "cxx", "cc", NULL};
	const char *const *groups[] = {py, cpp};
	for (size_t g = 0; g < 2; g++) {
		bool a = false, b = false;
		for (const char *const *q = groups[g]; *q; q++) {
			a |= strcmp(*q, tag) == 0;
			b |= strcmp(*q, want) == 0;
		}
		if (a && b)
			return true;
	}
	return false;
}

static bool looks_like_code(const char *s)
{
	static const char *const starts[] = {"def ", "import ", "from ", "class ", "#include", "print(", "for ",
					     "while ", "if __name__", NULL};
	const char *line = s;
	while (line && *line) {
		while (*line == ' ' || *line == '\t')
			line++;
		for (const char *const *k = starts; *k; k++)
			if (strncmp(line, *k, strlen(*k)) == 0)
				return true;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

static char *dup_n(const char *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

char *score_extract_code(const char *text, const char *language, bool *has_code)
{
	const char *s = text_after_reasoning(text ? text : "");
	struct fence last_match = {0}, last_any = {0}, open = {0};
	bool have_match = false, have_any = false, in_block = false;
	char open_ch = 0;
	size_t open_len = 0;
	for (const char *line = s; line && *line;) {
		const char *eol = strchr(line, '\n');
		const char *next = eol ? eol + 1 : NULL;
		char ch = 0;
		size_t mlen = fence_at(line, &ch);
		if (!in_block && mlen) {
			in_block = true;
			open_ch = ch;
			open_len = mlen;
			memset(&open, 0, sizeof open);
			const char *t = line + mlen;
			while (*t == ' ')
				t++;
			size_t k = 0;
			while (t[k] && !is_ws((unsigned char)t[k]) && t[k] != '{' && k + 1 < sizeof open.lang) {
				open.lang[k] = (char)tolower((unsigned char)t[k]);
				k++;
			}
			open.body = next ? next : line + strlen(line);
		} else if (in_block && mlen >= open_len && ch == open_ch) {
			/* closing fence: nothing but the marker (and spaces) on the line */
			const char *t = line;
			while (*t == ' ')
				t++;
			t += mlen;
			while (*t == ' ' || *t == '\t' || *t == '\r')
				t++;
			if (*t == '\n' || *t == 0) {
				in_block = false;
				open.closed = true;
				open.body_len = (size_t)(line - open.body);
				last_any = open;
				have_any = true;
				if (lang_matches(open.lang, language)) {
					last_match = open;
					have_match = true;
				}
			}
		}
		line = next;
	}
	const char *p = NULL;
	size_t n = 0;
	if (have_match) {
		p = last_match.body, n = last_match.body_len;
	} else if (have_any) {
		p = last_any.body, n = last_any.body_len;
	} else if (in_block) {
		p = open.body, n = strlen(open.body);
	} else if (looks_like_code(s)) {
		p = s, n = strlen(s);
	}
	*has_code = p != NULL;
	if (!p)
		return dup_n("", 0);
	/* drop the newline before a closing fence */
	if (n && p[n - 1] == '\n')
		n--;
	if (n && p[n - 1] == '\r')
		n--;
	*has_code = n > 0;
	return dup_n(p, n);
}

/* Parses a number at p (digits with optional comma groups, sign, decimals). */
static bool number_at(const char *p, const char **end, double *out)
{
	char tmp[64];
	size_t k = 0;
	const char *q = p;
	if (*q == '-' || *q == '+')
		tmp[k++] = *q++;
	if (*q == '$')
		q++;
	if (!isdigit((unsigned char)*q) && !(*q == '.' && isdigit((unsigned char)q[1])))
		return false;
	while (k + 1 < sizeof tmp) {
		if (isdigit((unsigned char)*q)) {
			tmp[k++] = *q++;
		} else if (*q == ',' && isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2]) &&
			   isdigit((unsigned char)q[3])) {
			q++;
		} else if (*q == '.' && isdigit((unsigned char)q[1])) {
			tmp[k++] = *q++;
		} else {
			break;
		}
	}
	tmp[k] = 0;
	char *e;
	double v = strtod(tmp, &e);
	if (e == tmp || *e)
		return false;
	*out = v;
	*end = q;
	return true;
}

/* ---- fractions (datasets/sixi-math) ----------------------------------------
 * An exact answer may be a fraction: "7/3" reads as 7 divided by 3 when both
 * sides are whole numbers and the denominator is not 0; otherwise the two
 * sides stay separate numbers. */
static bool fraction_at(const char *p, const char **end, double *out)
{
	if (!number_at(p, end, out))
		return false;
	const char *q = *end, *e2;
	double den;
	if (*q == '/' && isdigit((unsigned char)q[1]) && number_at(q + 1, &e2, &den) && den != 0 &&
	    floor(den) == den && floor(*out) == *out) {
		*out /= den;
		*end = e2;
	}
	return true;
}

static bool last_number(const char *s, const char *stop, double *out)
{
	bool found = false;
	for (const char *p = s; *p && (!stop || p < stop);) {
		const char *end;
		double v;
		/* a number starts after a non-word character: "x2" and "3.5.1"'s tail are not numbers */
		bool starts = p == s || (!isalnum((unsigned char)p[-1]) && p[-1] != '.' && p[-1] != '_');
		if (starts && fraction_at(p, &end, &v)) {
			*out = v;
			found = true;
			p = end;
		} else {
			p++;
		}
	}
	return found;
}

static const char *last_strstr(const char *s, const char *needle)
{
	const char *at = NULL, *p = s;
	while ((p = strstr(p, needle))) {
		at = p;
		p += strlen(needle);
	}
	return at;
}

bool score_extract_number(const char *text, double *out)
{
	const char *s = text_after_reasoning(text ? text : "");
	const char *h = last_strstr(s, "####");
	if (h && last_number(h + 4, NULL, out))
		return true;
	const char *b = last_strstr(s, "\\boxed{");
	if (b) {
		const char *close = strchr(b, '}');
		if (last_number(b + 7, close, out))
			return true;
	}
	return last_number(s, NULL, out);
}

static char letter_at(const char *p, int n_choices)
{
	char c = (char)toupper((unsigned char)*p);
	return c >= 'A' && c < 'A' + n_choices ? c : 0;
}

char score_extract_choice(const char *text, int n_choices)
{
	const char *s = text_after_reasoning(text ? text : "");
	char found = 0;
	/* "Answer: X" / "answer is X", case-insensitive, last one wins */
	for (const char *p = s; *p; p++) {
		if (strncasecmp(p, "answer", 6) != 0)
			continue;
		const char *q = p + 6;
		while (*q == ' ' || *q == ':' || *q == '*')
			q++;
		if (strncasecmp(q, "is ", 3) == 0)
			q += 3;
		while (*q == ' ' || *q == '(' || *q == '*')
			q++;
		char c = letter_at(q, n_choices);
		if (c && !isalnum((unsigned char)q[1]))
			found = c;
	}
	if (found)
		return found;
	const char *b = last_strstr(s, "\\boxed{");
	if (b && letter_at(b + 7, n_choices) && b[8] == '}')
		return letter_at(b + 7, n_choices);
	for (const char *p = s; *p; p++)
		if (*p == '(' && letter_at(p + 1, n_choices) && p[2] == ')')
			found = letter_at(p + 1, n_choices);
	if (found)
		return found;
	/* a lone letter as the last word */
	size_t n = strlen(s);
	while (n && (is_ws((unsigned char)s[n - 1]) || s[n - 1] == '.'))
		n--;
	if (n && letter_at(&s[n - 1], n_choices) && (n == 1 || !isalnum((unsigned char)s[n - 2])))
		return letter_at(&s[n - 1], n_choices);
	return 0;
}

/* ---- classification ------------------------------------------------------ */

static const char *const class_names[] = {"pass", "truncated", "loop", "environment", "api_error", "wrong"};

const char *score_class_name(enum score_class c)
{
	return (unsigned)c < sizeof class_names / sizeof class_names[0] ? class_names[c] : "?";
}

int score_class_parse(const char *name, enum score_class *out)
{
	for (size_t i = 0; i < sizeof class_names / sizeof class_names[0]; i++) {
		if (name && strcmp(name, class_names[i]) == 0) {
			*out = (enum score_class)i;
			return 0;
		}
	}
	return -EINVAL;
}

enum score_class score_classify(const struct score_facts *f)
{
	if (f->api_error)
		return SCORE_API_ERROR;
	if (f->environment)
		return SCORE_ENVIRONMENT;
	if (f->passed)
		return SCORE_PASS;
	if (f->early_stop_loop || (f->loop_threshold > 0 && f->loop_pct >= f->loop_threshold))
		return SCORE_LOOP;
	if (f->truncated)
		return SCORE_TRUNCATED;
	return SCORE_WRONG;
}

/* ---- aggregates ---------------------------------------------------------- */

int score_majority(const char *const *answers, int n)
{
	int best = -1, best_count = 0;
	for (int i = 0; i < n; i++) {
		if (!answers[i])
			continue;
		bool earlier = false;
		for (int j = 0; j < i && !earlier; j++)
			earlier = answers[j] && strcmp(answers[j], answers[i]) == 0;
		if (earlier)
			continue;
		int count = 0;
		for (int j = i; j < n; j++)
			count += answers[j] && strcmp(answers[j], answers[i]) == 0;
		if (count > best_count) {
			best = i;
			best_count = count;
		}
	}
	return best;
}
