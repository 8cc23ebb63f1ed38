/* Unit tests for src/report/calc: the `stats` calculator's JSON keys (a stable
 * contract), its values against src/stats, the text form, and one clear error for
 * each kind of bad input with nothing written to the output. */
#include "test.h"
#include "report/calc.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_errno.h>

static char out_text[16384];

/* Runs the calculator on a space-separated command; returns its rc, output in out_text. */
static int calc(const char *cmd, bool json, char *err, size_t errlen)
{
	char buf[1024], *argv[64];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", cmd);
	for (char *save, *t = strtok_r(buf, " ", &save); t && argc < 64; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	FILE *f = tmpfile();
	err[0] = 0;
	int rc = report_calc(argc, argv, json, f, err, errlen);
	rewind(f);
	size_t n = fread(out_text, 1, sizeof out_text - 1, f);
	out_text[n] = 0;
	fclose(f);
	return rc;
}

static double key(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!CHECK(cJSON_IsNumber(v)))
		fprintf(stderr, "key %s missing\n", k);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static cJSON *json_of(const char *cmd)
{
	char err[512];
	if (!CHECK(calc(cmd, true, err, sizeof err) == 0)) {
		fprintf(stderr, "%s: %s\n", cmd, err);
		return NULL;
	}
	cJSON *j = cJSON_Parse(out_text);
	CHECK(j != NULL);
	return j;
}

static void contracts(void)
{
	cJSON *j = json_of("fisher 11 14 7 18");
	CHECK_NEAR(key(j, "p_two_sided"), 0.3771541776117425, 1e-12);
	CHECK_NEAR(key(j, "p_less"), 0.9301073076793862, 1e-12);
	CHECK_NEAR(key(j, "p_greater"), 0.18857708880587126, 1e-12);
	CHECK_NEAR(key(j, "odds_ratio"), 11.0 * 18 / (14.0 * 7), 1e-12);
	cJSON_Delete(j);
	j = json_of("fisher 5 0 0 5"); /* odds ratio infinite: null, not a bare inf */
	CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "odds_ratio")));
	cJSON_Delete(j);
	j = json_of("mcnemar 6 0");
	CHECK_NEAR(key(j, "p_one_sided"), 0.015625, 1e-12);
	CHECK_NEAR(key(j, "p_two_sided"), 0.03125, 1e-12);
	cJSON_Delete(j);
	j = json_of("wilson 18 20");
	CHECK_NEAR(key(j, "low"), 0.6989663547715128, 1e-12);
	CHECK_NEAR(key(j, "high"), 0.972133518786232, 1e-12);
	cJSON_Delete(j);
	j = json_of("binom 13 16");
	CHECK_NEAR(key(j, "p_two_sided"), 0.021270751953125, 1e-12);
	cJSON_Delete(j);
	j = json_of("binom 9 21 --p 0.48");
	CHECK_NEAR(key(j, "p_two_sided"), 0.6689672431939, 1e-11);
	cJSON_Delete(j);
	j = json_of("welch --a 28,32,22,30 --b 14,20,20,18");
	CHECK_NEAR(key(j, "t"), 3.872983346207417, 1e-12);
	cJSON_Delete(j);
	j = json_of("sign 13 3");
	CHECK_NEAR(key(j, "p_two_sided"), 0.021270751953125, 1e-12);
	cJSON_Delete(j);
	j = json_of("passk --n 10 --c 3 --k 1,5");
	const cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "pass_at_k");
	CHECK_NEAR(key(pk, "1"), 0.3, 1e-12);
	CHECK_NEAR(key(pk, "5"), 1 - 21.0 / 252, 1e-12);
	cJSON_Delete(j);
	j = json_of("power --p1 0.28 --p2 0.18 --alpha 0.05 --power 0.8 --tasks 50");
	CHECK_NEAR(key(j, "n_per_group"), 277, 0);
	CHECK_NEAR(key(j, "runs"), 6, 0);
	cJSON_Delete(j);
	j = json_of("holm 0.01 0.04 0.03");
	const cJSON *adj = cJSON_GetObjectItemCaseSensitive(j, "adjusted");
	CHECK_NEAR(cJSON_GetArrayItem(adj, 0)->valuedouble, 0.03, 1e-12);
	CHECK_NEAR(cJSON_GetArrayItem(adj, 2)->valuedouble, 0.06, 1e-12);
	cJSON_Delete(j);
	j = json_of("union --n 4 --k 2 --c 4,4,4,4,4,4,3,3,3,3,2,2,2,2,1,1");
	CHECK_NEAR(key(cJSON_GetObjectItemCaseSensitive(j, "expected_union"), "2"), 14 + 1.0 / 3, 1e-12);
	cJSON_Delete(j);
	/* text form */
	char err[512];
	CHECK(calc("fisher 11 14 7 18", false, err, sizeof err) == 0);
	CHECK(strstr(out_text, "p_two_sided      0.377154") != NULL);
}

static void bad(const char *cmd, const char *want)
{
	char err[512];
	int rc = calc(cmd, true, err, sizeof err);
	CHECK_EQ_INT(rc, -EINVAL);
	CHECK_EQ_STR(out_text, "");
	if (!CHECK(strstr(err, want) != NULL))
		fprintf(stderr, "%s: message '%s' lacks '%s'\n", cmd, err, want);
}

int main(void)
{
	gsl_set_error_handler_off();
	contracts();
	bad("fisher 1 2 3", "expected 4 numbers");
	bad("fisher -1 2 3 4", "negative");
	bad("fisher nan 2 3 4", "'nan' is not an integer");
	bad("wilson 12 10", "larger than its total N (10)");
	bad("wilson 0 0", "N is 0");
	bad("binom 3 10 --p 1.5", "out of range");
	bad("binom 3 10 --p 1", "strictly between 0 and 1");
	bad("mcnemar 3", "expected 2 numbers");
	bad("welch --a 1,2,nan --b 1,2", "not a list of finite numbers");
	bad("welch --a 1 --b 1,2", "at least 2 values");
	bad("welch --a 2,2 --b 3,3", "zero spread");
	/* options are rows of one table (core/args): an option of another test, or of none,
	 * gets the common wording */
	bad("welch --a 1,2 --b 1,2 --c 3", "unknown option '--c' for 'welch' (see sixi-report stats --help)");
	bad("binom 3 10 --nosuch 1", "unknown option '--nosuch' for 'binom'");
	bad("binom 3 10 --p", "--p needs a value (P)");
	bad("power --p1 0.2 --p2 0.3 --one-sided=yes", "--one-sided takes no value");
	bad("welch --a 1,2 --b 1,2 7", "unexpected argument '7'");
	bad("passk --n 10 --c 11 --k 1", "--c 11 is larger than --n 10");
	bad("passk --n 10 --c 1 --k 11", "k = 11 is larger than --n 10");
	bad("power --p1 0.2 --p2 0.2", "no gap");
	bad("power --p1 0.2", "--p2: missing");
	bad("holm 0.5 2", "out of range");
	bad("union --n 4 --k 5 --c 1,2", "out of range");
	bad("nosuch 1 2", "unknown test 'nosuch'");
	return test_done();
}
