/* prompt — see prompt.h. */
#include "eval/prompt.h"
#include "core/buf.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/err.h"
#include "text/jinja.h"
#include "gguf/gguf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct eval_prompt {
	struct jinja_template *tmpl;
	cJSON *special;        /* bos_token / eos_token variables, or NULL */
	char sha[65];
	bool bos_first;
};

/* tokenizer.chat_template and the special tokens of a GGUF. Caller frees. */
static char *gguf_template(const char *path, cJSON **special, char *err, size_t errlen)
{
	struct gguf *g = gguf_open(path, err, errlen);
	if (!g)
		return NULL;
	const char *t = gguf_get_str(g, "tokenizer.chat_template");
	char *text = t ? strdup(t) : NULL;
	if (!t)
		err_fail(err, errlen, "%s has no tokenizer.chat_template", path);
	long toks = gguf_find_key(g, "tokenizer.ggml.tokens");
	static const char *const ids[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token"},
					     {"tokenizer.ggml.eos_token_id", "eos_token"}};
	*special = cJSON_CreateObject();
	for (int i = 0; i < 2 && text && toks >= 0 && *special; i++) {
		int64_t id;
		const char *tok = gguf_get_i64(g, ids[i][0], &id) && id >= 0 &&
						  (size_t)id < gguf_kv_array_len(g, (size_t)toks)
					  ? gguf_get_arr_str(g, (size_t)toks, (size_t)id)
					  : NULL;
		if (tok)
			cJSON_AddStringToObject(*special, ids[i][1], tok);
	}
	gguf_close(g);
	return text;
}

struct eval_prompt *eval_prompt_load(const char *source, const char *path, char *err, size_t errlen)
{
	struct eval_prompt *p = calloc(1, sizeof *p);
	if (!p) {
		err_fail(err, errlen, "out of memory");
		return NULL;
	}
	char lerr[512] = "";
	size_t n = 0;
	char *text = NULL;
	if (strcmp(source, "gguf") == 0)
		text = gguf_template(path, &p->special, lerr, sizeof lerr);
	else if (strcmp(source, "jinja") == 0 || strcmp(source, "tokenizer_config") == 0)
		text = jinja_source_load(path, &n, strcmp(source, "tokenizer_config") == 0 ? &p->special : NULL, lerr,
					 sizeof lerr);
	else
		snprintf(lerr, sizeof lerr, "template source \"%s\" is not a file source", source);
	if (!text) {
		err_fail(err, errlen, "cannot read the chat template: %s", lerr);
		goto fail;
	}
	if (!n)
		n = strlen(text);
	sha256_hex(text, n, p->sha);
	p->tmpl = jinja_parse(text, n, lerr, sizeof lerr);
	free(text);
	if (!p->tmpl) {
		err_fail(err, errlen, "%s: %s", path, lerr);
		goto fail;
	}
	char *probe = eval_prompt_render(p, "hello", lerr, sizeof lerr);
	if (!probe) {
		err_fail(err, errlen, "%s does not render a user message: %s", path, lerr);
		goto fail;
	}
	const char *bos = p->special ? json_get_str(p->special, "bos_token") : NULL;
	p->bos_first = bos && *bos && strncmp(probe, bos, strlen(bos)) == 0;
	free(probe);
	return p;
fail:
	eval_prompt_destroy(p);
	return NULL;
}

void eval_prompt_destroy(struct eval_prompt *p)
{
	if (!p)
		return;
	jinja_destroy(p->tmpl);
	cJSON_Delete(p->special);
	free(p);
}

char *eval_prompt_render(const struct eval_prompt *p, const char *user, char *err, size_t errlen)
{
	cJSON *ctx = p->special ? cJSON_Duplicate(p->special, 1) : cJSON_CreateObject();
	cJSON *msgs = ctx ? cJSON_AddArrayToObject(ctx, "messages") : NULL;
	cJSON *m = cJSON_CreateObject();
	if (!msgs || !m) {
		cJSON_Delete(ctx);
		cJSON_Delete(m);
		err_fail(err, errlen, "out of memory");
		return NULL;
	}
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", user);
	cJSON_AddItemToArray(msgs, m);
	cJSON_AddBoolToObject(ctx, "add_generation_prompt", 1);
	struct buf out;
	buf_init(&out);
	int rc = jinja_render_chat(p->tmpl, ctx, &out, err, errlen);
	cJSON_Delete(ctx);
	if (rc == 0 && !out.data)
		rc = buf_reserve(&out, 1);
	if (rc) {
		buf_finish(&out);
		return NULL;
	}
	return buf_steal(&out);
}

const char *eval_prompt_sha256(const struct eval_prompt *p) { return p->sha; }
bool eval_prompt_starts_with_bos(const struct eval_prompt *p) { return p->bos_first; }
