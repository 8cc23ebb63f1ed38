/* Unit tests for src/grade/score: loop ratio and pass@k against values computed by
 * Python (tests/fixtures/eval/score_vectors.json), code/number/choice extraction,
 * failure classes and majority vote. */
#include "test.h"
#include "core/json.h"
#include "grade/score.h"
#include "stats/stats.h"
#include <errno.h>
#include <stdint.h>

/* pass@k as the summaries compute it (stats/stats.h), -1 for impossible counts */
static double pass_at_k(int n, int c, int k)
{
	double v;
	return stats_pass_at_k(n, c, k, &v) == 0 ? v : -1;
}

static void test_loop_vectors(void)
{
	char err[256];
	cJSON *root = json_parse_file(test_src_path("tests/fixtures/eval/score_vectors.json"), err, sizeof err);
	if (!CHECK(root != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	const cJSON *loop = cJSON_GetObjectItem(root, "loop");
	int n = 0;
	for (const cJSON *c = loop->child; c; c = c->next, n++) {
		const char *text = json_get_str(c, "text");
		double want;
		CHECK(json_get_double(c, "ratio", &want));
		CHECK_NEAR(score_loop_text(text, strlen(text)), want, 1e-12);
		/* streamed in uneven chunks: the same final value, and the running value
		 * never exceeds what the completed sentences justify */
		struct score_loop *l = score_loop_create();
		size_t len = strlen(text), at = 0, step = 1;
		while (at < len) {
			size_t k = step < len - at ? step : len - at;
			CHECK(score_loop_feed(l, text + at, k) == 0);
			at += k;
			step = step * 3 % 17 + 1;
			double r = score_loop_ratio(l);
			CHECK(r >= 0 && r <= 100);
		}
		CHECK_NEAR(score_loop_final(l), want, 1e-12);
		score_loop_destroy(l);
	}
	CHECK(n >= 10);
	const cJSON *pk = cJSON_GetObjectItem(root, "pass_at_k");
	for (const cJSON *c = pk->child; c; c = c->next) {
		int64_t nn, cc, kk;
		double want;
		CHECK(json_get_i64(c, "n", &nn) && json_get_i64(c, "c", &cc) && json_get_i64(c, "k", &kk));
		CHECK(json_get_double(c, "value", &want));
		CHECK_NEAR(pass_at_k((int)nn, (int)cc, (int)kk), want, 1e-12);
	}
	CHECK(pass_at_k(3, 1, 4) < 0);
	CHECK(pass_at_k(3, 4, 1) < 0);
	cJSON_Delete(root);
}

static void test_loop_guard_threshold(void)
{
	/* the running ratio crosses 50% as a sentence keeps repeating */
	struct score_loop *l = score_loop_create();
	const char *s = "This sentence is definitely longer than forty characters in total. ";
	double prev = 0;
	int crossed_at = -1;
	for (int i = 0; i < 20; i++) {
		CHECK(score_loop_feed(l, s, strlen(s)) == 0);
		double r = score_loop_ratio(l);
		CHECK(r >= prev);
		prev = r;
		if (crossed_at < 0 && r >= 50)
			crossed_at = i;
	}
	/* 5 sentences, 1 unique: 80% at the 5th (index 4); below 5 it stays 0 */
	CHECK_EQ_INT(crossed_at, 4);
	score_loop_destroy(l);
}

static void check_code(const char *text, const char *lang, const char *want, int want_has)
{
	bool has;
	char *code = score_extract_code(text, lang, &has);
	CHECK_EQ_STR(code, want);
	CHECK_EQ_INT(has, want_has);
	free(code);
}

static void test_extract_code(void)
{
	check_code("Here:\n```python\ndef f():\n    return 1\n```\nDone.", "python", "def f():\n    return 1", 1);
	/* the last block wins */
	check_code("```python\nx = 1\n```\ntext\n```py\nx = 2\n```\n", "python", "x = 2", 1);
	/* a later block in another language loses to an earlier python one */
	check_code("```python\nx = 1\n```\n```bash\nls\n```\n", "python", "x = 1", 1);
	/* only a foreign block: taken as a fallback */
	check_code("```js\nlet x;\n```\n", "python", "let x;", 1);
	/* untagged block matches */
	check_code("```\nprint(3)\n```", "python", "print(3)", 1);
	/* reasoning before </think> is ignored */
	check_code("<think>```python\nbad()\n```</think>\nAnswer:\n```python\ngood()\n```", "python", "good()", 1);
	/* truncated inside a block: the open block's body */
	check_code("Sure.\n```python\ndef f(x):\n    return x +", "python", "def f(x):\n    return x +", 1);
	/* no fences but code-looking lines */
	check_code("def g(a):\n    return a*2\n", "python", "def g(a):\n    return a*2", 1);
	/* prose only */
	check_code("I think the answer is to use a heap.", "python", "", 0);
	check_code("", "python", "", 0);
	/* longer fences and tildes; inner ``` inside a ```` block stays */
	check_code("````python\na = '```'\n```\nb = 1\n````\n", "python", "a = '```'\n```\nb = 1", 1);
	check_code("~~~python\nz = 0\n~~~\n", "python", "z = 0", 1);
	check_code("```c++\nint main(){}\n```\n", "cpp", "int main(){}", 1);
}

static void test_extract_answers(void)
{
	double v;
	CHECK(score_extract_number("So she has 3 + 4 = 7 apples.\n#### 7", &v) && v == 7);
	CHECK(score_extract_number("The total is $1,234.50.", &v) && v == 1234.5);
	CHECK(score_extract_number("answer \\boxed{-12} and then 5 more words 9", &v) && v == -12);
	CHECK(score_extract_number("<think>maybe 99</think> It is 42.", &v) && v == 42);
	CHECK(score_extract_number("the value is 3, not x2", &v) && v == 3);
	CHECK(!score_extract_number("no digits at all", &v));
	CHECK_EQ_INT(score_extract_choice("Answer: C", 4), 'C');
	CHECK_EQ_INT(score_extract_choice("I first thought (A) but the answer is B.", 4), 'B');
	CHECK_EQ_INT(score_extract_choice("The option is (D).", 4), 'D');
	CHECK_EQ_INT(score_extract_choice("\\boxed{b}", 4), 'B');
	CHECK_EQ_INT(score_extract_choice("Answer: E", 4), 0);
	CHECK_EQ_INT(score_extract_choice("Nothing to see", 4), 0);
	CHECK_EQ_INT(score_extract_choice("final: A", 4), 'A');
}

static void test_classify(void)
{
	struct score_facts f = {.loop_threshold = 50};
	CHECK_EQ_INT(score_classify(&f), SCORE_WRONG);
	f.truncated = true;
	CHECK_EQ_INT(score_classify(&f), SCORE_TRUNCATED);
	f.loop_pct = 60;
	CHECK_EQ_INT(score_classify(&f), SCORE_LOOP);
	f.passed = true;
	CHECK_EQ_INT(score_classify(&f), SCORE_PASS);
	f.environment = true;
	CHECK_EQ_INT(score_classify(&f), SCORE_ENVIRONMENT);
	f.api_error = true;
	CHECK_EQ_INT(score_classify(&f), SCORE_API_ERROR);
	struct score_facts g = {.early_stop_loop = true};
	CHECK_EQ_INT(score_classify(&g), SCORE_LOOP);
	for (int c = SCORE_PASS; c <= SCORE_WRONG; c++) {
		enum score_class back;
		CHECK(score_class_parse(score_class_name((enum score_class)c), &back) == 0 && (int)back == c);
	}
	enum score_class x;
	CHECK(score_class_parse("failed", &x) == -EINVAL);
}

static void test_majority(void)
{
	const char *a[] = {"7", NULL, "8", "8", "7", "9"};
	CHECK_EQ_INT(score_majority(a, 6), 0); /* 7 and 8 tie at two: first seen wins */
	const char *b[] = {NULL, "3", "4", "4"};
	CHECK_EQ_INT(score_majority(b, 4), 2);
	const char *c[] = {NULL, NULL};
	CHECK_EQ_INT(score_majority(c, 2), -1);
}

int main(void)
{
	test_loop_vectors();
	test_loop_guard_threshold();
	test_extract_code();
	test_extract_answers();
	test_classify();
	test_majority();
	return test_done();
}
