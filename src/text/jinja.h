/* jinja — a Jinja2-subset interpreter for chat templates.
 *
 * Renders the templates models ship (Hugging Face tokenizer_config.json, GGUF
 * tokenizer.chat_template, .jinja files) byte-for-byte as Python's jinja2 does
 * under Hugging Face's apply_chat_template settings: trim_blocks, lstrip_blocks,
 * no trailing newline kept, no autoescape, loop controls (break/continue),
 * {% generation %} rendered as its body, tojson as json.dumps(ensure_ascii=False),
 * raise_exception() and strftime_now() as globals, the immutable sandbox's refusal
 * to call list/dict mutators.
 *
 * Not supported (a clear error, never a wrong render): include/extends/import,
 * recursive for loops, the `do` statement, *args and **kwargs in calls, format specs
 * inside str.format, integers beyond 64 bits. Case mapping covers ASCII only.
 *
 * Ownership: arguments are borrowed; a template owns its memory until
 * jinja_destroy; render output is appended to the caller's buffer. */
#ifndef SIXI_EVAL_JINJA_H
#define SIXI_EVAL_JINJA_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

struct jinja_template;

/* Parses n bytes of template source (UTF-8). On a syntax error returns NULL and
 * writes "line L:C: what" into err; errno is EINVAL (ENOMEM when out of memory). */
struct jinja_template *jinja_parse(const char *src, size_t n, char *err, size_t errlen);
void jinja_destroy(struct jinja_template *t);

/* Renders with the variables of the JSON object `context` (messages, tools,
 * add_generation_prompt, bos_token, eos_token, enable_thinking, ...). As
 * apply_chat_template does, `tools` and `documents` are none and
 * `add_generation_prompt` is false when the context lacks them. Every string in
 * the context must be valid UTF-8. strftime_now() reads the local clock.
 * Appends the text to out; on error out is left as it was and err says what
 * failed (raise_exception's message, an undefined attribute, a type error).
 * Returns 0, -EINVAL (bad input or a render error) or -ENOMEM. */
__attribute__((warn_unused_result)) int jinja_render_chat(const struct jinja_template *t, const cJSON *context,
							 struct buf *out, char *err, size_t errlen);
/* As jinja_render_chat, with strftime_now() rendering the instant now_s
 * (seconds since the epoch) in UTC: reproducible output for tests. */
__attribute__((warn_unused_result)) int jinja_render_chat_at(const struct jinja_template *t, const cJSON *context,
							    int64_t now_s, struct buf *out, char *err,
							    size_t errlen);

/* Template source from a file: a .jinja text file, or a Hugging Face
 * tokenizer_config.json (chat_template as a string, or a list of
 * {"name", "template"} from which "default" is taken). Returns a malloc'd
 * NUL-terminated string (length in *n) or NULL with err set. When the file is a
 * tokenizer_config.json and special is non-NULL, its *_token entries (bos_token,
 * eos_token, ...; a string or {"content": ...}) are added to *special as strings
 * (created when NULL, caller frees with cJSON_Delete). */
char *jinja_source_load(const char *path, size_t *n, cJSON **special, char *err, size_t errlen);
/* The chat template inside a parsed tokenizer_config.json; NULL with err set. */
char *jinja_source_from_hf_config(const cJSON *config, size_t *n, char *err, size_t errlen);
#endif
