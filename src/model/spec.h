/* spec — speculative decoding on the CPU model: drafting (n-gram prompt lookup, or a draft
 * model of the same vocabulary) and verification of all drafted rows in one target pass,
 * with the target's recurrent state rolled back by the model's log (or snapshot ring).
 *
 * A step: draft up to draft_max tokens after the last token, run [last, d1..dk] through the
 * target in one model_forward_spec pass, keep the drafts up to the first one the target would
 * not have produced, add the target's own next token, roll the rejected rows back (target and
 * draft). Greedy (temperature 0) only: the text equals plain one-token-at-a-time decoding.
 * Counters: accept_len = tokens produced per verification step (accepted drafts + the
 * target's token), accept_rate = accepted drafts / drafted tokens.
 *
 * Does not: sample at temperature > 0, batch several sequences, tokenize.
 * Ownership: the models are borrowed and must outlive the spec object. */
#ifndef SIXI_MODEL_SPEC_H
#define SIXI_MODEL_SPEC_H
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

struct spec_opts {
	int draft_max;                 /* drafted tokens per step, 1..64 */
	int log_rows;                  /* rows the target keeps (0: draft_max + 1, the least a step needs) */
	enum model_rollback rollback;  /* MODEL_ROLLBACK_LOG (or 0) or MODEL_ROLLBACK_SNAPSHOT */
	int ngram_min, ngram_max;      /* prompt lookup n-gram lengths (0: 1 and 3) */
};

struct spec_stats {
	long steps;     /* verification passes */
	long drafted;   /* tokens drafted */
	long accepted;  /* drafted tokens kept */
	long generated; /* tokens produced */
};
double spec_accept_len(const struct spec_stats *st);
double spec_accept_rate(const struct spec_stats *st);

/* Prompt lookup: find the latest earlier occurrence of the last n tokens of hist (n from
 * ngram_max down to ngram_min) and copy up to max_draft tokens that followed it into out.
 * Returns the count (0 when nothing matches). */
int spec_ngram_draft(const int32_t *hist, int n_hist, int ngram_min, int ngram_max, int max_draft, int32_t *out);

/* 0 when draft can draft for target (same vocabulary: size, and token texts where both come
 * from GGUF files); -EINVAL with a message naming both sizes otherwise. */
int spec_check_draft(const struct model *target, const struct model *draft, char *err, size_t errlen);

struct spec;
/* draft NULL: n-gram prompt lookup. NULL with a message when the options or the draft are
 * refused (e.g. a draft width over the log's capacity). */
struct spec *spec_create(struct model *target, struct model *draft, const struct spec_opts *o, char *err,
			 size_t errlen);
void spec_free(struct spec *sp);
/* Greedy generation of n_gen tokens after prompt (n_prompt >= 1) into out; stats are added to
 * *st when st is not NULL. 0 or a negative errno. */
int spec_generate(struct spec *sp, const int32_t *prompt, int n_prompt, int n_gen, int32_t *out,
		  struct spec_stats *st);
#endif
