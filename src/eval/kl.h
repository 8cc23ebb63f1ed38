/* kl — `sixi-eval kl`: how far a quantised model's next-token distributions are from a
 * reference file of the same model (F32/F16/BF16), teacher-forced over a text.
 *
 * Both GGUFs are loaded with the CPU forward pass (model/), the text is tokenized with the
 * reference's tokenizer (the candidate's must give the same ids), and the text is scored in
 * windows of `ctx` tokens, each from a fresh state: window w predicts its tokens 1..L-1, and
 * the next window starts at the last token of this one, so every token after the first is
 * predicted exactly once. Per position: KL(reference || candidate) of the full distributions,
 * top-1 agreement, and the log-probability of the actual next token under each (for the
 * perplexity ratio); the figures are stats/kl.h's.
 * Stored as one run (kind 'eval', workload 'kl') with one kl_rows row per position, all in one
 * transaction after every position is known: a failure leaves nothing in the DB.
 *
 * The API form (kl_run_api) asks two endpoints instead: the text, in chunks of about chunk_chars
 * bytes cut at line ends, goes to each as a /v1/completions prompt with vLLM's
 * "prompt_logprobs": top (sixi-server and vLLM answer it), and each position's distribution
 * is the ids both sides listed. KL is computed over their union plus one bucket for the rest
 * of the vocabulary, an id one side did not list taking that side's top-th log-probability (an
 * upper bound): exact when top covers the vocabulary, an estimate otherwise (a coarser view of
 * both distributions, so it tends to read low). Both endpoints must return the same
 * prompt_token_ids (the same tokenizer); a chunk's first token is not scored.
 * Does not: read datasets (a text file only).
 * Precision: logits fp32 (the forward pass), log-softmax and KL in double.
 * Ownership: arguments are borrowed. */
#ifndef SIXI_EVAL_KL_H
#define SIXI_EVAL_KL_H
#include <stddef.h>
#include <stdint.h>

#include "stats/kl.h"

struct store;

struct kl_opts {
	const char *reference;  /* GGUF: the model in F32/F16/BF16 */
	const char *candidate;  /* GGUF: the same model quantised */
	const char *text;       /* text file, UTF-8 */
	int ctx;                /* tokens a window holds (2..65536) */
	int max_positions;      /* 0: the whole text */
	int threads;            /* <= 0: all CPUs */
};

struct kl_api_opts {
	const char *reference_url, *candidate_url; /* base URLs, e.g. http://127.0.0.1:8080 */
	const char *reference_model, *candidate_model; /* the "model" sent; NULL: "default" */
	const char *text;
	int top;                /* prompt_logprobs asked for, >= 1 */
	int chunk_chars;        /* bytes of text per request (cut at a line end when one is near) */
	int max_positions;      /* 0: the whole text */
	int timeout_s;          /* per request */
};

struct kl_result {
	int64_t run_id;
	struct kl_figures fig;
};

/* Runs the comparison and stores it. 0, or a negative errno with one message in err naming
 * what was wrong (a file, the text, a vocabulary mismatch, the DB) and what to do. */
__attribute__((warn_unused_result)) int kl_run(const struct kl_opts *o, struct store *st, struct kl_result *res,
					       char *err, size_t errlen);

/* The API form (see the top): the same figures and rows from two endpoints. */
__attribute__((warn_unused_result)) int kl_run_api(const struct kl_api_opts *o, struct store *st,
						   struct kl_result *res, char *err, size_t errlen);

/* `sixi-eval kl ...` (argv[0] is "kl"): parses its flags, runs, prints the figures. Exit code. */
int kl_cmd_main(int argc, char **argv);
#endif
