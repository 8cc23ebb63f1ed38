/* calc — see calc.h.
 *
 * Each test is a small function that reads its arguments into numbers, calls
 * src/stats and fills a cJSON object; text and JSON output are both rendered
 * from that object, so the two can never disagree. */
#include "report/calc.h"
#include "core/err.h"
#include "core/args.h"
#include "core/json.h"
#include "stats/stats.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 4096

/* The options of every test; which test takes which is the cmds mask of its row.
 * Values are kept as text: each test checks its own (ranges, lists) and says why. */
struct calc_opts {
	const char *p, *confidence, *a, *b, *n, *c, *k, *p1, *p2, *alpha, *power, *tasks;
	bool one_sided, json;
};

/* Command bits, in the order of tests[] below. */
enum {
	T_FISHER = 1u << 0, T_MCNEMAR = 1u << 1, T_BINOM = 1u << 2, T_WILSON = 1u << 3, T_WELCH = 1u << 4,
	T_SIGN = 1u << 5, T_PASSK = 1u << 6, T_POWER = 1u << 7, T_HOLM = 1u << 8, T_UNION = 1u << 9,
};

#define CO struct calc_opts
static const struct args_opt calc_table[] = {
	ARGS_HEADING("binom, wilson:"),
	ARGS_STRING_OPT("--confidence", "C", CO, confidence, T_WILSON, "wilson: the interval's confidence (default 0.95)"),
	ARGS_STRING_OPT("--p", "P", CO, p, T_BINOM, "binom: the success rate under the null (default 0.5)"),
	ARGS_HEADING("welch:"),
	ARGS_STRING_OPT("--a", "X,...", CO, a, T_WELCH, "welch: the values of group A (e.g. per-run pass rates)"),
	ARGS_STRING_OPT("--b", "Y,...", CO, b, T_WELCH, "welch: the values of group B"),
	ARGS_HEADING("passk, union:"),
	ARGS_STRING_OPT("--c", "C|C1,C2,...", CO, c, T_PASSK | T_UNION,
			"passk: attempts that passed; union: runs that solved each item"),
	ARGS_STRING_OPT("--k", "K[,K...]", CO, k, T_PASSK | T_UNION, "the k of pass@k, or of the union of k runs"),
	ARGS_STRING_OPT("--n", "N", CO, n, T_PASSK | T_UNION, "attempts (passk) or runs (union) in all"),
	ARGS_HEADING("power:"),
	ARGS_STRING_OPT("--alpha", "A", CO, alpha, T_POWER, "the test's level (default 0.05)"),
	ARGS_FLAG_OPT("--one-sided", CO, one_sided, 1, T_POWER, "a one-sided test (default two-sided)"),
	ARGS_STRING_OPT("--p1", "P1", CO, p1, T_POWER, "the pass rate of one condition"),
	ARGS_STRING_OPT("--p2", "P2", CO, p2, T_POWER, "the pass rate of the other"),
	ARGS_STRING_OPT("--power", "P", CO, power, T_POWER, "the chance to detect the gap (default 0.8)"),
	ARGS_STRING_OPT("--tasks", "M", CO, tasks, T_POWER, "tasks per run: also print the runs needed"),
	ARGS_HEADING("every test:"),
	ARGS_FLAG_OPT("--json", CO, json, 1, 0, "print the result as JSON (its keys are a stable contract)"),
	ARGS_TABLE_END,
};

struct calc {
	int argc;
	const char **argv; /* argv[0] is the test name, then the positional words */
	const struct calc_opts *o;
	cJSON *res;        /* result object, keys in output order */
	const char *title; /* one line saying what was computed */
	char *err;
	size_t errlen;
};

static int fail(struct calc *c, const char *fmt, const char *a, const char *b)
{
	snprintf(c->err, c->errlen, fmt, a, b);
	return -EINVAL;
}

static void put_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static int count_arg(struct calc *c, int i, const char *name, int64_t *out)
{
	char flag[64];
	snprintf(flag, sizeof flag, "stats %s %s", c->argv[0], name);
	if (i >= c->argc)
		return fail(c, "%s: missing (see sixi-report stats --help)%s", flag, "");
	if (c->argv[i][0] == '-' && c->argv[i][1] >= '0' && c->argv[i][1] <= '9')
		return fail(c, "%s: '%s' is negative; counts are >= 0", flag, c->argv[i]);
	return args_i64(flag, c->argv[i], 0, INT32_MAX, out, c->err, c->errlen);
}

static int positional(struct calc *c, int want, const char *names)
{
	if (c->argc - 1 != want) {
		char n[16];
		snprintf(n, sizeof n, "%d", want);
		snprintf(c->err, c->errlen, "stats %s: expected %s numbers (%s), got %d", c->argv[0], n, names,
			 c->argc - 1);
		return -EINVAL;
	}
	return 0;
}

/* Exactly n positional counts, named for messages ("A B C D"). */
static int counts(struct calc *c, int n, const char *const *names, const char *usage, int64_t *out)
{
	int rc = positional(c, n, usage);
	for (int i = 0; i < n && rc == 0; i++)
		rc = count_arg(c, i + 1, names[i], &out[i]);
	return rc;
}

/* The value of option name (a row of calc_table); NULL when absent. */
static const char *option(struct calc *c, const char *name)
{
	for (const struct args_opt *r = calc_table; r->kind != ARGS_END; r++)
		if (r->kind == ARGS_STRING && strcmp(r->name, name) == 0)
			return *(const char *const *)((const char *)c->o + r->off);
	return NULL;
}

/* Tests that take options only: no positional word. */
static int options_only(struct calc *c)
{
	if (c->argc > 1)
		return fail(c, "stats %s: unexpected argument '%s' (see sixi-report stats --help)", c->argv[0],
			    c->argv[1]);
	return 0;
}

static int prob_opt(struct calc *c, const char *name, double def, double *out)
{
	const char *v = option(c, name);
	char flag[64];
	snprintf(flag, sizeof flag, "stats %s %s", c->argv[0], name);
	if (!v) {
		if (isnan(def))
			return fail(c, "%s: missing (see sixi-report stats --help)%s", flag, "");
		*out = def;
		return 0;
	}
	int rc = args_double(flag, v, 0, 1, out, c->err, c->errlen);
	if (rc == 0 && (*out <= 0 || *out >= 1))
		return fail(c, "%s: %s must be strictly between 0 and 1", flag, v);
	return rc;
}

static int double_list(struct calc *c, const char *name, double *out, size_t *n)
{
	const char *s = option(c, name);
	*n = 0;
	if (!s)
		return fail(c, "stats %s: %s LIST is required (e.g. 28,32,22,30)", c->argv[0], name);
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		if (end == s || (*end && *end != ',') || !isfinite(v))
			return fail(c, "stats welch %s: not a list of finite numbers: '%s'", name, option(c, name));
		if (*n >= MAX_LIST)
			return fail(c, "stats %s: %s: too many values", c->argv[0], name);
		out[(*n)++] = v;
		s = *end ? end + 1 : end;
	}
	return 0;
}

/* ---- the tests ---- */

static int t_fisher(struct calc *c)
{
	int64_t v[4];
	static const char *const names[] = { "A", "B", "C", "D" };
	int rc = counts(c, 4, names, "A B C D: the table [[A, B], [C, D]], e.g. passes and fails of two runs", v);
	if (rc)
		return rc;
	struct stats_fisher f;
	if (stats_fisher_exact(v[0], v[1], v[2], v[3], &f) != 0)
		return fail(c, "stats fisher: invalid table%s%s", "", "");
	c->title = "Fisher's exact test on [[A, B], [C, D]] (two-sided: tables no more likely than observed)";
	cJSON *t = cJSON_AddArrayToObject(c->res, "table");
	for (int i = 0; i < 2; i++) {
		cJSON *row = cJSON_CreateArray();
		cJSON_AddItemToArray(row, cJSON_CreateNumber((double)v[2 * i]));
		cJSON_AddItemToArray(row, cJSON_CreateNumber((double)v[2 * i + 1]));
		cJSON_AddItemToArray(t, row);
	}
	put_num(c->res, "p_two_sided", f.p_two_sided);
	put_num(c->res, "p_less", f.p_less);
	put_num(c->res, "p_greater", f.p_greater);
	put_num(c->res, "odds_ratio", f.odds_ratio);
	if (v[0] + v[1] > 0 && v[2] + v[3] > 0) {
		cJSON_AddNumberToObject(c->res, "rate_a", (double)v[0] / (double)(v[0] + v[1]));
		cJSON_AddNumberToObject(c->res, "rate_b", (double)v[2] / (double)(v[2] + v[3]));
	}
	return 0;
}

static int t_mcnemar(struct calc *c)
{
	int64_t v[2];
	static const char *const names[] = { "B", "C" };
	int rc = counts(c, 2, names, "B C: tasks only A passed, tasks only B passed", v);
	if (rc)
		return rc;
	int64_t b = v[0], d = v[1];
	struct stats_mcnemar m;
	if (stats_mcnemar_exact(b, d, &m) != 0)
		return fail(c, "stats mcnemar: invalid counts%s%s", "", "");
	c->title = "Exact McNemar test on the discordant pairs (one-sided: A better than B)";
	cJSON_AddNumberToObject(c->res, "b", (double)b);
	cJSON_AddNumberToObject(c->res, "c", (double)d);
	put_num(c->res, "p_two_sided", m.p_two_sided);
	put_num(c->res, "p_one_sided", m.p_one_sided);
	put_num(c->res, "p_mid_two_sided", m.p_mid_two_sided);
	put_num(c->res, "p_mid_one_sided", m.p_mid_one_sided);
	return 0;
}

static int k_of_n(struct calc *c, int64_t *k, int64_t *n)
{
	if (c->argc != 3)
		return fail(c, "stats %s: expected K N (K successes of N)%s", c->argv[0], "");
	int rc = count_arg(c, 1, "K", k);
	if (rc == 0)
		rc = count_arg(c, 2, "N", n);
	if (rc)
		return rc;
	if (*k > *n) {
		snprintf(c->err, c->errlen, "stats %s: K (%s) is larger than its total N (%s)", c->argv[0], c->argv[1],
			 c->argv[2]);
		return -EINVAL;
	}
	if (*n == 0)
		return fail(c, "stats %s: N is 0; there is nothing to test%s", c->argv[0], "");
	return 0;
}

static int t_binom(struct calc *c)
{
	int64_t k, n;
	double p;
	int rc = k_of_n(c, &k, &n);
	if (rc == 0)
		rc = prob_opt(c, "--p", 0.5, &p);
	if (rc)
		return rc;
	struct stats_binom b;
	if (stats_binom_test(k, n, p, &b) != 0)
		return fail(c, "stats binom: invalid input%s%s", "", "");
	c->title = "Exact binomial test of K successes in N trials";
	cJSON_AddNumberToObject(c->res, "k", (double)k);
	cJSON_AddNumberToObject(c->res, "n", (double)n);
	cJSON_AddNumberToObject(c->res, "p", p);
	put_num(c->res, "p_two_sided", b.p_two_sided);
	put_num(c->res, "p_less", b.p_less);
	put_num(c->res, "p_greater", b.p_greater);
	return 0;
}

static int t_wilson(struct calc *c)
{
	int64_t k, n;
	double conf;
	int rc = k_of_n(c, &k, &n);
	if (rc == 0)
		rc = prob_opt(c, "--confidence", 0.95, &conf);
	if (rc)
		return rc;
	double lo, hi;
	if (stats_wilson(k, n, conf, &lo, &hi) != 0)
		return fail(c, "stats wilson: invalid input%s%s", "", "");
	c->title = "Wilson score interval for K of N";
	cJSON_AddNumberToObject(c->res, "k", (double)k);
	cJSON_AddNumberToObject(c->res, "n", (double)n);
	cJSON_AddNumberToObject(c->res, "rate", (double)k / (double)n);
	cJSON_AddNumberToObject(c->res, "confidence", conf);
	put_num(c->res, "low", lo);
	put_num(c->res, "high", hi);
	return 0;
}

static int t_sign(struct calc *c)
{
	int64_t v[2];
	static const char *const names[] = { "POS", "NEG" };
	int rc = counts(c, 2, names, "POS NEG: items where A did better, items where B did better; ties left out", v);
	if (rc)
		return rc;
	int64_t pos = v[0], neg = v[1];
	struct stats_sign s;
	if (stats_sign_counts(pos, neg, &s) != 0)
		return fail(c, "stats sign: invalid counts%s%s", "", "");
	c->title = "Sign test (exact, two-sided, ties dropped)";
	cJSON_AddNumberToObject(c->res, "pos", (double)pos);
	cJSON_AddNumberToObject(c->res, "neg", (double)neg);
	put_num(c->res, "p_two_sided", s.p_two_sided);
	return 0;
}

static int t_welch(struct calc *c)
{
	static double a[MAX_LIST], b[MAX_LIST];
	size_t na, nb;
	int rc = options_only(c);
	if (rc == 0)
		rc = double_list(c, "--a", a, &na);
	if (rc == 0)
		rc = double_list(c, "--b", b, &nb);
	if (rc)
		return rc;
	struct stats_welch w;
	rc = stats_welch(a, na, b, nb, &w);
	if (rc == -EINVAL)
		return fail(c, "stats welch: each group needs at least 2 values%s%s", "", "");
	if (rc)
		return fail(c, "stats welch: both groups have zero spread; t is undefined%s%s", "", "");
	c->title = "Welch's t-test (unequal variances, Welch-Satterthwaite df)";
	cJSON_AddNumberToObject(c->res, "n_a", (double)na);
	cJSON_AddNumberToObject(c->res, "mean_a", w.mean_a);
	cJSON_AddNumberToObject(c->res, "sd_a", w.sd_a);
	cJSON_AddNumberToObject(c->res, "n_b", (double)nb);
	cJSON_AddNumberToObject(c->res, "mean_b", w.mean_b);
	cJSON_AddNumberToObject(c->res, "sd_b", w.sd_b);
	put_num(c->res, "t", w.t);
	put_num(c->res, "df", w.df);
	put_num(c->res, "p_two_sided", w.p_two_sided);
	return 0;
}

static int t_passk(struct calc *c)
{
	int64_t n, k_list[64], cc;
	size_t nk;
	int rc = options_only(c);
	if (rc == 0 && (!option(c, "--n") || !option(c, "--c") || !option(c, "--k")))
		return fail(c, "stats passk: --n N --c C --k K[,K...] are required%s%s", "", "");
	if (rc == 0)
		rc = args_i64("stats passk --n", option(c, "--n"), 1, INT32_MAX, &n, c->err, c->errlen);
	if (rc == 0)
		rc = args_i64("stats passk --c", option(c, "--c"), 0, INT32_MAX, &cc, c->err, c->errlen);
	if (rc == 0)
		rc = args_i64_list("stats passk --k", option(c, "--k"), 1, INT32_MAX, k_list, 64, &nk, c->err,
				   c->errlen);
	if (rc)
		return rc;
	if (cc > n)
		return fail(c, "stats passk: --c %s is larger than --n %s", option(c, "--c"), option(c, "--n"));
	c->title = "Unbiased pass@k: 1 - C(n-c, k) / C(n, k)";
	cJSON_AddNumberToObject(c->res, "n", (double)n);
	cJSON_AddNumberToObject(c->res, "c", (double)cc);
	cJSON *arr = cJSON_AddObjectToObject(c->res, "pass_at_k");
	for (size_t i = 0; i < nk; i++) {
		double v;
		char key[32];
		if (stats_pass_at_k(n, cc, k_list[i], &v) != 0) {
			snprintf(key, sizeof key, "%lld", (long long)k_list[i]);
			return fail(c, "stats passk: k = %s is larger than --n %s", key, option(c, "--n"));
		}
		snprintf(key, sizeof key, "%lld", (long long)k_list[i]);
		cJSON_AddNumberToObject(arr, key, v);
	}
	return 0;
}

static int t_power(struct calc *c)
{
	double p1, p2, alpha, power;
	int64_t tasks = 0;
	int rc = options_only(c);
	if (rc == 0)
		rc = prob_opt(c, "--p1", NAN, &p1);
	if (rc == 0)
		rc = prob_opt(c, "--p2", NAN, &p2);
	if (rc == 0)
		rc = prob_opt(c, "--alpha", 0.05, &alpha);
	if (rc == 0)
		rc = prob_opt(c, "--power", 0.8, &power);
	if (rc == 0 && option(c, "--tasks"))
		rc = args_i64("stats power --tasks", option(c, "--tasks"), 1, INT32_MAX, &tasks, c->err, c->errlen);
	if (rc)
		return rc;
	if (p1 == p2)
		return fail(c, "stats power: --p1 and --p2 are equal; there is no gap to detect%s%s", "", "");
	bool two = !c->o->one_sided;
	struct stats_power pw;
	if (stats_power_two_prop(p1, p2, alpha, power, two, &pw) != 0)
		return fail(c, "stats power: invalid input%s%s", "", "");
	c->title = "Attempts per condition to detect p1 vs p2 (two-proportion z-test, normal approximation; "
		   "Fleiss, with and without continuity correction)";
	cJSON_AddNumberToObject(c->res, "p1", p1);
	cJSON_AddNumberToObject(c->res, "p2", p2);
	cJSON_AddNumberToObject(c->res, "alpha", alpha);
	cJSON_AddNumberToObject(c->res, "power", power);
	cJSON_AddBoolToObject(c->res, "two_sided", two);
	cJSON_AddStringToObject(c->res, "approximation", "two-proportion normal (Fleiss)");
	cJSON_AddNumberToObject(c->res, "n_per_group", ceil(pw.n_per_group));
	cJSON_AddNumberToObject(c->res, "n_per_group_cc", ceil(pw.n_per_group_cc));
	if (tasks > 0) {
		cJSON_AddNumberToObject(c->res, "tasks", (double)tasks);
		cJSON_AddNumberToObject(c->res, "runs", ceil(ceil(pw.n_per_group) / (double)tasks));
		cJSON_AddNumberToObject(c->res, "runs_cc", ceil(ceil(pw.n_per_group_cc) / (double)tasks));
	}
	return 0;
}

static int t_holm(struct calc *c)
{
	static double p[MAX_LIST], adj[MAX_LIST];
	int n = c->argc - 1;
	if (n < 1 || n > MAX_LIST)
		return fail(c, "stats holm: expected P-values, e.g. stats holm 0.01 0.04 0.03%s%s", "", "");
	for (int i = 0; i < n; i++) {
		int rc = args_double("stats holm", c->argv[i + 1], 0, 1, &p[i], c->err, c->errlen);
		if (rc)
			return rc;
	}
	if (stats_holm(p, (size_t)n, adj) != 0)
		return fail(c, "stats holm: out of memory%s%s", "", "");
	c->title = "Holm step-down adjusted p-values (same order as given)";
	cJSON *arr = cJSON_AddArrayToObject(c->res, "adjusted");
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(adj[i]));
	return 0;
}

static int t_union(struct calc *c)
{
	static int64_t cs[MAX_LIST];
	int64_t n, k_list[64];
	size_t nc, nk;
	int rc = options_only(c);
	if (rc == 0 && (!option(c, "--n") || !option(c, "--k") || !option(c, "--c")))
		return fail(c, "stats union: --n RUNS --k K[,K...] --c C1,C2,... (runs solving each item) are required%s%s",
			    "", "");
	if (rc == 0)
		rc = args_i64("stats union --n", option(c, "--n"), 1, INT32_MAX, &n, c->err, c->errlen);
	if (rc == 0)
		rc = args_i64_list("stats union --k", option(c, "--k"), 1, n, k_list, 64, &nk, c->err, c->errlen);
	if (rc == 0)
		rc = args_i64_list("stats union --c", option(c, "--c"), 0, n, cs, MAX_LIST, &nc, c->err, c->errlen);
	if (rc)
		return rc;
	c->title = "Expected number of items solved by the union of k runs drawn from n";
	cJSON_AddNumberToObject(c->res, "n", (double)n);
	cJSON_AddNumberToObject(c->res, "items", (double)nc);
	cJSON *o = cJSON_AddObjectToObject(c->res, "expected_union");
	for (size_t i = 0; i < nk; i++) {
		double v;
		char key[32];
		if (stats_union_expected(cs, nc, n, k_list[i], &v) != 0)
			return fail(c, "stats union: invalid counts%s%s", "", "");
		snprintf(key, sizeof key, "%lld", (long long)k_list[i]);
		cJSON_AddNumberToObject(o, key, v);
	}
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct calc *c);
} tests[] = {
	{ "fisher", t_fisher }, { "mcnemar", t_mcnemar }, { "binom", t_binom }, { "wilson", t_wilson },
	{ "welch", t_welch },   { "sign", t_sign },       { "passk", t_passk }, { "power", t_power },
	{ "holm", t_holm },     { "union", t_union },
};

static const char calc_usage[] =
	"usage: sixi-report stats TEST ... [--json]\n"
	"  fisher A B C D          Fisher's exact test on [[A, B], [C, D]] (passes, fails of A; of B)\n"
	"  mcnemar B C             exact McNemar on discordant counts (B: only A passed, C: only B)\n"
	"  binom K N [--p P]       exact binomial test (P defaults to 0.5)\n"
	"  wilson K N [--confidence C]   Wilson score interval (C defaults to 0.95)\n"
	"  welch --a X,... --b Y,...     Welch's t-test, e.g. per-run pass rates\n"
	"  sign POS NEG            sign test on items where A did better / B did better\n"
	"  passk --n N --c C --k K[,K]   unbiased pass@k\n"
	"  power --p1 P1 --p2 P2 [--alpha 0.05] [--power 0.8] [--tasks M] [--one-sided]\n"
	"                          attempts per condition (and runs of M tasks) to detect P1 vs P2\n"
	"  holm P1 P2 ...          Holm-adjusted p-values\n"
	"  union --n N --k K[,K] --c C1,C2,...  expected items solved by k of n runs\n";

static const struct args_spec calc_spec = {
	.prog = "sixi-report stats",
	.usage = calc_usage,
	.opts = calc_table,
	.numbers = true,
};

void report_calc_help(FILE *f)
{
	args_help(&calc_spec, 0, f);
}

/* Text rendering of the result object: one "key  value" line each. */
static void print_text(FILE *out, const char *title, const cJSON *res, int indent)
{
	if (title)
		fprintf(out, "%s\n", title);
	for (const cJSON *it = res->child; it; it = it->next) {
		if (cJSON_IsObject(it)) {
			fprintf(out, "%*s%s\n", indent + 2, "", it->string);
			print_text(out, NULL, it, indent + 2);
		} else if (cJSON_IsArray(it)) {
			char *s = cJSON_PrintUnformatted(it);
			fprintf(out, "%*s%-16s %s\n", indent + 2, "", it->string, s ? s : "");
			free(s);
		} else if (cJSON_IsNumber(it)) {
			double v = it->valuedouble;
			if (v == floor(v) && fabs(v) < 1e15)
				fprintf(out, "%*s%-16s %.0f\n", indent + 2, "", it->string, v);
			else
				fprintf(out, "%*s%-16s %.6g\n", indent + 2, "", it->string, v);
		} else if (cJSON_IsString(it)) {
			fprintf(out, "%*s%-16s %s\n", indent + 2, "", it->string, it->valuestring);
		} else if (cJSON_IsBool(it)) {
			fprintf(out, "%*s%-16s %s\n", indent + 2, "", it->string, cJSON_IsTrue(it) ? "true" : "false");
		} else {
			fprintf(out, "%*s%-16s undefined\n", indent + 2, "", it->string);
		}
	}
}

int report_calc(int argc, char **argv, bool json, FILE *out, char *err, size_t errlen)
{
	if (argc < 1) {
		err_set(err, errlen, "stats: which test? (fisher, mcnemar, binom, wilson, welch, sign, passk, power, holm, union)");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
		if (strcmp(argv[0], tests[i].name) != 0)
			continue;
		struct calc_opts o = { 0 };
		struct args_spec spec = calc_spec;
		spec.cmd = tests[i].name;
		spec.max_pos = argc;
		const char **pos = calloc((size_t)argc + 1, sizeof *pos);
		int n_pos = 0;
		if (!pos) {
			err_set(err, errlen, "stats: out of memory");
			return -ENOMEM;
		}
		pos[0] = argv[0];
		int prc = args_parse(&spec, 1u << i, argc - 1, argv + 1, &o, pos + 1, &n_pos, err, errlen);
		if (prc == ARGS_HELP) {
			free(pos);
			err_set(err, errlen, "stats %s: --help is printed by sixi-report stats --help", argv[0]);
			return -EINVAL;
		}
		if (prc) {
			char msg[512];
			snprintf(msg, sizeof msg, "%s", err);
			err_set(err, errlen, "stats: %s", msg);
			free(pos);
			return prc;
		}
		json = json || o.json;
		struct calc c = { .argc = 1 + n_pos, .argv = pos, .o = &o, .res = cJSON_CreateObject(), .err = err,
				  .errlen = errlen };
		if (!c.res) {
			free(pos);
			err_set(err, errlen, "stats: out of memory");
			return -ENOMEM;
		}
		cJSON_AddStringToObject(c.res, "test", argv[0]);
		int rc = tests[i].fn(&c);
		if (rc == 0 && json) {
			char *s = cJSON_Print(c.res);
			if (s)
				fprintf(out, "%s\n", s);
			free(s);
		} else if (rc == 0) {
			cJSON_DeleteItemFromObject(c.res, "test");
			print_text(out, c.title, c.res, 0);
		}
		cJSON_Delete(c.res);
		free(pos);
		return rc;
	}
	err_set(err, errlen,
		 "stats: unknown test '%s' (known: fisher, mcnemar, binom, wilson, welch, sign, passk, power, holm, union)",
		 argv[0]);
	return -EINVAL;
}

int report_calc_cli(int argc, char **argv, FILE *out, char *err, size_t errlen)
{
	/* a first pass over every option of every test: --help, and the test's name
	 * (the first positional word, wherever it stands) */
	struct calc_opts o = { 0 };
	struct args_spec spec = calc_spec;
	spec.max_pos = argc;
	const char **pos = calloc((size_t)argc + 1, sizeof *pos);
	char **words = calloc((size_t)argc + 1, sizeof *words);
	int n_pos = 0, rc = -ENOMEM;
	if (!pos || !words) {
		err_set(err, errlen, "stats: out of memory");
		goto out;
	}
	rc = args_parse(&spec, ~0u, argc, argv, &o, pos, &n_pos, err, errlen);
	if (rc == ARGS_HELP) {
		report_calc_help(out);
		goto out;
	}
	if (rc) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", err);
		err_set(err, errlen, "stats: %s", msg);
		goto out;
	}
	int n = 0;
	if (n_pos > 0)
		words[n++] = (char *)pos[0];
	for (int i = 0; i < argc; i++)
		if (n_pos == 0 || argv[i] != pos[0])
			words[n++] = argv[i];
	rc = report_calc(n_pos > 0 ? n : 0, words, false, out, err, errlen);
out:
	free(pos);
	free(words);
	return rc;
}
