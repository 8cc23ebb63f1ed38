/* score — turning one completion into the facts a row records: the loop ratio
 * (computed incrementally while the stream arrives), the code block to grade,
 * the extracted numeric or multiple-choice answer, the failure class, and the
 * majority vote over repeats (pass@k is stats_pass_at_k, stats/stats.h: one
 * definition for the live summary and the report).
 *
 * It does not run anything and knows nothing of the network or the database.
 * Loop ratio follows the essay's definition exactly: split after '.', '?' or
 * '!' followed by whitespace, strip, keep pieces longer than 40 characters
 * (code points), 0 when fewer than 5 remain, else 100 * (1 - unique/total).
 * Arguments are borrowed; returned strings are the caller's to free. */
#ifndef SIXI_EVAL_SCORE_H
#define SIXI_EVAL_SCORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- loop ratio ------------------------------------------------------ */
struct score_loop;
struct score_loop *score_loop_create(void);
void score_loop_destroy(struct score_loop *l);
/* Feeds the next n bytes of the stream. Returns 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int score_loop_feed(struct score_loop *l, const char *p, size_t n);
/* Ratio (percent) over the sentences completed so far; the unfinished tail is
 * left out, so the value never jumps back when the tail completes. */
double score_loop_ratio(const struct score_loop *l);
/* Ratio over everything fed, the tail counted as the last sentence (the essay's
 * value for a finished text). */
double score_loop_final(const struct score_loop *l);
/* One-shot: score_loop_final over a whole text; -1 on allocation failure. */
double score_loop_text(const char *text, size_t n);

/* ---- extraction -------------------------------------------------------- */
/* The code to grade for a language ("python", "cpp", ...): the last closed
 * fenced block tagged with that language (or its aliases) or untagged; else the
 * last closed block of any tag; else the body of an unclosed fence (the reply
 * was cut off); else the whole answer when its lines look like code. Reasoning
 * before "</think>" is ignored. *has_code says whether anything was found; the
 * returned string is "" then. NULL only on allocation failure. */
char *score_extract_code(const char *text, const char *language, bool *has_code);
/* GSM8K-style final number: after the last "####", else inside the last
 * \boxed{}, else the last number in the answer. Commas in digit groups and a
 * trailing '.' are dropped. Returns false when there is none. */
bool score_extract_number(const char *text, double *out);
/* Multiple-choice letter among the first n_choices letters (A..): "Answer: X"
 * (last one), else \boxed{X}, else "(X)", else a lone final letter. '\0' when none. */
char score_extract_choice(const char *text, int n_choices);

/* ---- classification ---------------------------------------------------- */
enum score_class {
	SCORE_PASS = 0,
	SCORE_TRUNCATED,
	SCORE_LOOP,
	SCORE_ENVIRONMENT,
	SCORE_API_ERROR,
	SCORE_WRONG,
};
const char *score_class_name(enum score_class c);
/* -EINVAL for an unknown name. */
int score_class_parse(const char *name, enum score_class *out);

struct score_facts {
	bool passed;           /* the grader accepted the answer */
	bool api_error;        /* the request failed (timeout, reset, 5xx, stall) */
	bool environment;      /* the grader could not run */
	bool early_stop_loop;  /* the loop guard closed the stream */
	bool truncated;        /* finish_reason == "length" or cut at a budget */
	double loop_pct;       /* final loop ratio, percent */
	double loop_threshold; /* percent; <= 0 disables classifying by ratio */
};
/* Precedence: api_error, environment (neither is about the model), then pass,
 * loop (guard fired, or ratio >= threshold), truncated, wrong. */
enum score_class score_classify(const struct score_facts *f);

/* ---- aggregates -------------------------------------------------------- */
/* Majority vote over answers (strings, NULL = no answer): index of the most
 * frequent non-NULL answer, ties broken by first appearance; -1 when none. */
int score_majority(const char *const *answers, int n);
#endif
