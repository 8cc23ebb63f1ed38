/* prompt — the model's own chat template, loaded from a .jinja file, a Hugging
 * Face tokenizer_config.json or a GGUF's metadata (tokenizer.chat_template, with
 * bos/eos tokens from tokenizer.ggml.*_token_id), and rendered for one user
 * message with add_generation_prompt, as apply_chat_template would, for raw
 * /v1/completions. Rendering is src/text/jinja's; this module only finds the
 * template, hashes it (sha256 of the source, frozen with a run) and builds the
 * context. A template that cannot render a plain user message is refused at load.
 * Arguments are borrowed; rendered strings are the caller's to free. */
#ifndef SIXI_EVAL_PROMPT_H
#define SIXI_EVAL_PROMPT_H
#include <stdbool.h>
#include <stddef.h>

struct eval_prompt;
/* source: "jinja", "tokenizer_config" or "gguf". NULL with err set on failure. */
struct eval_prompt *eval_prompt_load(const char *source, const char *path, char *err, size_t errlen);
void eval_prompt_destroy(struct eval_prompt *p);
/* NULL with err set when rendering fails. */
char *eval_prompt_render(const struct eval_prompt *p, const char *user, char *err, size_t errlen);
const char *eval_prompt_sha256(const struct eval_prompt *p);
/* True when the rendered prompt starts with the template's BOS token: a server
 * that adds BOS itself would double it. */
bool eval_prompt_starts_with_bos(const struct eval_prompt *p);
#endif
