/* calc — the `sixi-report stats <test> ...` calculator: one statistical test from
 * numbers typed on the command line, printed as text or as JSON.
 *
 * It only parses the test's own arguments and formats src/stats results; it never
 * touches the DB. JSON keys are a stable contract (DESIGN.md): fisher gives
 * p_two_sided, p_less, p_greater, odds_ratio; mcnemar p_two_sided, p_one_sided;
 * wilson low, high. Non-finite numbers are written as JSON null.
 * Arguments are borrowed. */
#ifndef SIXI_REPORT_CALC_H
#define SIXI_REPORT_CALC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* argv[0] is the test name (fisher, mcnemar, binom, wilson, welch, sign, passk,
 * power, holm, union). On success writes to out and returns 0; on bad input
 * writes nothing to out, puts one message naming the problem into err and
 * returns -EINVAL. */
__attribute__((warn_unused_result)) int report_calc(int argc, char **argv, bool json, FILE *out, char *err,
						    size_t errlen);
/* The calculator's --help, printed from its option table. */
void report_calc_help(FILE *f);
/* `sixi-report stats` as typed: the options may stand before the test's name;
 * --help (anywhere) prints report_calc_help to out and returns ARGS_HELP. Else as
 * report_calc (--json in the words selects JSON). */
__attribute__((warn_unused_result)) int report_calc_cli(int argc, char **argv, FILE *out, char *err,
							size_t errlen);
#endif
