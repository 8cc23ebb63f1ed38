/* vote — see vote.h. Work is linear in the text (rules 1-3 scan it once each) and quadratic
 * in the number of samples for the tally (n <= 16). */
#include "server/vote.h"
#include "core/buf.h"

#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The number starting at t[i] (t[i] is '-' or a digit), appended normalised; *end gets the
 * index after it. */
static int number_at(const char *t, size_t len, size_t i, struct buf *out, size_t *end)
{
	char tmp[128];
	size_t n = 0;
	if (t[i] == '-')
		tmp[n++] = t[i++];
	while (i < len && n < sizeof tmp - 2) {
		if (is_digit(t[i]))
			tmp[n++] = t[i++];
		else if (t[i] == ',' && i + 1 < len && is_digit(t[i + 1]) && n > 0 && is_digit(tmp[n - 1]))
			i++;
		else
			break;
	}
	if (i + 1 < len && t[i] == '.' && is_digit(t[i + 1])) {
		size_t dot = n;
		tmp[n++] = t[i++];
		while (i < len && is_digit(t[i]) && n < sizeof tmp - 1)
			tmp[n++] = t[i++];
		while (n > dot + 1 && tmp[n - 1] == '0')
			n--;
		if (n == dot + 1)
			n = dot;
	}
	while (i < len && is_digit(t[i])) /* digits beyond what tmp holds */
		i++;
	*end = i;
	return buf_append(out, tmp, n);
}

/* Start of the last number in t[0..len), or len when there is none. */
static size_t last_number(const char *t, size_t len)
{
	size_t found = len;
	for (size_t i = 0; i < len; i++) {
		bool minus = t[i] == '-' && i + 1 < len && is_digit(t[i + 1]) && (i == 0 || !is_digit(t[i - 1]));
		if (!is_digit(t[i]) && !minus)
			continue;
		found = i;
		size_t end;
		struct buf skip;
		buf_init(&skip);
		if (number_at(t, len, i, &skip, &end) != 0)
			end = i + 1;
		buf_finish(&skip);
		i = end - 1;
	}
	return found;
}

static void trim(const char **p, size_t *n)
{
	while (*n > 0 && is_space(**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && is_space((*p)[*n - 1]))
		(*n)--;
}

/* Appends s[0..n) trimmed, as a normalised number when it is exactly one number. */
static int append_value(const char *s, size_t n, struct buf *out)
{
	trim(&s, &n);
	if (n > 0 && (is_digit(s[0]) || (s[0] == '-' && n > 1 && is_digit(s[1])))) {
		size_t end;
		size_t mark = out->len;
		int rc = number_at(s, n, 0, out, &end);
		if (rc != 0 || end == n)
			return rc;
		out->len = mark; /* more than a number: keep the text */
		out->data[mark] = 0;
	}
	return buf_append(out, s, n);
}

int vote_answer(const char *text, size_t len, struct buf *out)
{
	static const char boxed[] = "\\boxed{";
	const size_t bl = sizeof boxed - 1;
	const char *best = NULL;
	size_t best_n = 0;
	for (size_t i = 0; i + bl <= len; i++) {
		if (memcmp(text + i, boxed, bl) != 0)
			continue;
		int depth = 1;
		size_t j = i + bl;
		for (; j < len && depth > 0; j++)
			depth += text[j] == '{' ? 1 : text[j] == '}' ? -1 : 0;
		if (depth == 0) {
			best = text + i + bl;
			best_n = j - 1 - (i + bl);
		}
	}
	if (best)
		return append_value(best, best_n, out);
	size_t at = last_number(text, len);
	if (at < len) {
		size_t end;
		return number_at(text, len, at, out, &end);
	}
	size_t e = len;
	while (e > 0) {
		size_t b = e;
		while (b > 0 && text[b - 1] != '\n')
			b--;
		const char *line = text + b;
		size_t n = e - b;
		trim(&line, &n);
		if (n > 0)
			return buf_append(out, line, n);
		e = b > 0 ? b - 1 : 0;
	}
	return 0;
}

void vote_tally(const char *const *answers, int n, struct vote_tally *t)
{
	*t = (struct vote_tally){ .leader = -1 };
	int lead_first = -1;
	for (int i = 0; i < n; i++) {
		if (!answers[i] || !answers[i][0])
			continue;
		t->n_answers++;
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = answers[j] && strcmp(answers[j], answers[i]) == 0;
		if (seen)
			continue;
		int c = 0;
		for (int j = i; j < n; j++)
			c += answers[j] && strcmp(answers[j], answers[i]) == 0;
		if (c > t->lead_count) {
			t->runner_up = t->lead_count;
			t->lead_count = c;
			lead_first = i;
		} else if (c > t->runner_up) {
			t->runner_up = c;
		}
	}
	t->leader = lead_first;
}

bool vote_decided(const struct vote_tally *t, int running)
{
	return t->leader >= 0 && t->lead_count > t->runner_up + running;
}
