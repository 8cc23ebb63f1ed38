/* Unit tests for src/eval/shard: the partition of (task, repeat) pairs covers
 * every pair exactly once for N = 1..17, is the same on every call, is roughly
 * balanced, and bad specs are refused with a message. */
#include "test.h"
#include "eval/shard.h"

#define TASKS 300
#define REPEATS 5

static void test_partition(void)
{
	char id[32];
	for (int64_t n = 1; n <= 17; n++) {
		int64_t count[17] = {0};
		int bad = 0;
		for (int t = 0; t < TASKS; t++) {
			snprintf(id, sizeof id, "task/%d", t);
			for (int64_t r = 0; r < REPEATS; r++) {
				int owners = 0;
				for (int64_t k = 0; k < n; k++) {
					struct eval_shard s = {k, n};
					owners += eval_shard_has(&s, id, r);
				}
				int64_t k = eval_shard_of(id, r, n);
				bad += owners != 1 || k != eval_shard_of(id, r, n) || k < 0 || k >= n;
				count[k]++;
			}
		}
		CHECK_EQ_INT(bad, 0);
		/* balance: 1500 pairs, each shard within 40 % of the mean */
		double mean = (double)(TASKS * REPEATS) / (double)n;
		for (int64_t k = 0; k < n; k++)
			CHECK(count[k] > 0.6 * mean && count[k] < 1.4 * mean);
	}
	/* fixed values: the partition must not change between versions */
	CHECK_EQ_INT(eval_shard_of("", 0, 1), 0);
	CHECK(eval_shard_has(NULL, "x", 3));
}

static void test_parse(void)
{
	char err[256];
	struct eval_shard s = {-1, -1};
	CHECK_EQ_INT(eval_shard_parse("2/4", &s, err, sizeof err), 0);
	CHECK_EQ_INT(s.k, 2);
	CHECK_EQ_INT(s.n, 4);
	CHECK_EQ_INT(eval_shard_parse("0/1", &s, err, sizeof err), 0);
	const char *badv[] = {"3/3", "0/0", "a/b", "-1/4", "1", "1/", "/4", "1/4x", "", "4/2", "0/99999999"};
	for (size_t i = 0; i < sizeof badv / sizeof *badv; i++) {
		err[0] = 0;
		CHECK(eval_shard_parse(badv[i], &s, err, sizeof err) < 0);
		CHECK(strstr(err, "--shard") != NULL);
	}
}

int main(void)
{
	test_partition();
	test_parse();
	return test_done();
}
