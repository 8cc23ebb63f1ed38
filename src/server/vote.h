/* vote — the rules of server-side voting (a request with "vote": true and n samples): how a
 * sample's final answer is read from its text, and when the majority is decided.
 *
 * The answer of a text, first rule that applies:
 *  1. the content of the last balanced \boxed{...}, trimmed (a number in it is normalised
 *     as in rule 2);
 *  2. the last number: an optional minus sign, digits with optional thousands commas
 *     (a comma counts only between digits), an optional fraction; normalised by dropping
 *     the commas and the fraction's trailing zeros (so "1,000.50" reads "1000.5" and "42.0"
 *     reads "42");
 *  3. the last non-empty line, trimmed of spaces and tabs.
 * A text with none of these (empty or blank) has no answer and casts no vote.
 *
 * Decided: the leading answer's count exceeds the runner-up's plus the samples still
 * running, so no outcome of those can change the leader. Once every sample is done, there
 * is a majority when the leader's count exceeds the runner-up's; otherwise it is a tie.
 * Does not: compare answers beyond the normalisation above (no algebra, no units, no case
 * folding). Arguments are borrowed. */
#ifndef SIXI_SERVER_VOTE_H
#define SIXI_SERVER_VOTE_H
#include <stdbool.h>
#include <stddef.h>

struct buf;

/* Appends the answer of text[0..len) to out (nothing when it has none). 0 or -ENOMEM. */
__attribute__((warn_unused_result)) int vote_answer(const char *text, size_t len, struct buf *out);

struct vote_tally {
	int leader;     /* index of the first answer with the highest count; -1 when no answers */
	int lead_count; /* its count */
	int runner_up;  /* the highest count of any other answer (0 when none) */
	int n_answers;  /* samples that cast a vote */
};
/* answers[i]: sample i's answer, NULL or "" when it has none (still running, cancelled,
 * failed, or a blank text). */
void vote_tally(const char *const *answers, int n, struct vote_tally *t);
/* True when the leader can no longer be overtaken or tied by the `running` samples left. */
bool vote_decided(const struct vote_tally *t, int running);
#endif
