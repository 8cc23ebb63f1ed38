/* Unit tests of the vote rules (server/vote.h): answer extraction and the decision. */
#include "server/vote.h"
#include "core/buf.h"
#include "test.h"

#include <string.h>

static void check_answer(const char *text, const char *want)
{
	struct buf b;
	buf_init(&b);
	CHECK(vote_answer(text, strlen(text), &b) == 0);
	const char *got = b.data ? b.data : "";
	size_t n = b.len;
	if (n != strlen(want) || memcmp(got, want, n) != 0)
		fprintf(stderr, "answer of \"%s\": got \"%.*s\", want \"%s\"\n", text, (int)n, got, want);
	CHECK(n == strlen(want) && memcmp(got, want, n) == 0);
	buf_finish(&b);
}

static void test_answers(void)
{
	check_answer("We add 40 and 2: \\boxed{42}. Check: 40+2 = 42, not 41.", "42");
	check_answer("first \\boxed{7} then \\boxed{\\frac{1}{2}} done 9", "\\frac{1}{2}");
	check_answer("unbalanced \\boxed{3 and then 5", "5");
	check_answer("\\boxed{ 42.50 }", "42.5");
	check_answer("\\boxed{x = 3}", "x = 3");
	check_answer("So the total is 1,000.50 dollars.", "1000.5");
	check_answer("It is 42.0", "42");
	check_answer("from 3 to -17.", "-17");
	check_answer("range 5-3", "3");
	check_answer("the list 1, 2, 3", "3");
	check_answer("no digits here\n  Paris  \n\n", "Paris");
	check_answer("", "");
	check_answer(" \n\t\n", "");
	check_answer("version 12345678901234567890123456789", "12345678901234567890123456789");
}

static void test_tally(void)
{
	const char *a[] = { "42", "41", "42", NULL, "", "42" };
	struct vote_tally t;
	vote_tally(a, 6, &t);
	CHECK(t.leader == 0 && t.lead_count == 3 && t.runner_up == 1 && t.n_answers == 4);
	CHECK(vote_decided(&t, 1));  /* 3 > 1 + 1 */
	CHECK(!vote_decided(&t, 2)); /* 3 > 1 + 2 is false */
	const char *b[] = { "41", "42" };
	vote_tally(b, 2, &t);
	CHECK(t.lead_count == 1 && t.runner_up == 1 && !vote_decided(&t, 0)); /* a tie */
	const char *c[] = { NULL, NULL, NULL };
	vote_tally(c, 3, &t);
	CHECK(t.leader == -1 && t.n_answers == 0 && !vote_decided(&t, 0));
	const char *d[] = { "7", "8", "8", "7", "8" };
	vote_tally(d, 5, &t);
	CHECK(t.leader == 1 && t.lead_count == 3 && t.runner_up == 2 && vote_decided(&t, 0) && !vote_decided(&t, 1));
}

int main(void)
{
	test_answers();
	test_tally();
	return test_done();
}
