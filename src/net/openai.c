/* openai — see openai.h. cJSON does the parsing; this file only knows which
 * fields matter. Chat and completions chunks share one interpretation: text is
 * choices[0].text (completions) or choices[0].delta.content / message.content (chat). */
#include "net/openai.h"
#include "core/json.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *openai_api_path(enum openai_api api)
{
	return api == OPENAI_CHAT ? "/v1/chat/completions" : "/v1/completions";
}

int openai_request_body(const struct openai_request *req, struct buf *out)
{
	int rc = -ENOMEM;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	if (req->model)
		cJSON_AddStringToObject(o, "model", req->model);
	if (req->api == OPENAI_CHAT) {
		cJSON *msgs = NULL;
		if (req->messages_json) {
			msgs = cJSON_Parse(req->messages_json);
			if (!cJSON_IsArray(msgs)) {
				cJSON_Delete(msgs);
				rc = -EINVAL;
				goto out;
			}
		} else {
			msgs = cJSON_CreateArray();
			cJSON *m = cJSON_CreateObject();
			cJSON_AddStringToObject(m, "role", "user");
			cJSON_AddStringToObject(m, "content", req->prompt ? req->prompt : "");
			cJSON_AddItemToArray(msgs, m);
		}
		cJSON_AddItemToObject(o, "messages", msgs);
	} else if (req->prompt_ids) {
		cJSON *arr = cJSON_CreateArray();
		for (size_t i = 0; i < req->n_prompt_ids; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(req->prompt_ids[i]));
		cJSON_AddItemToObject(o, "prompt", arr);
	} else {
		cJSON_AddStringToObject(o, "prompt", req->prompt ? req->prompt : "");
	}
	if (req->max_tokens > 0)
		cJSON_AddNumberToObject(o, "max_tokens", (double)req->max_tokens);
	if (req->temperature >= 0)
		cJSON_AddNumberToObject(o, "temperature", req->temperature);
	if (req->top_p >= 0)
		cJSON_AddNumberToObject(o, "top_p", req->top_p);
	if (req->top_k >= 0)
		cJSON_AddNumberToObject(o, "top_k", (double)req->top_k);
	if (req->seed >= 0)
		cJSON_AddNumberToObject(o, "seed", (double)req->seed);
	if (req->ignore_eos)
		cJSON_AddTrueToObject(o, "ignore_eos");
	if (req->stop) {
		cJSON *arr = cJSON_CreateArray();
		for (const char *const *s = req->stop; *s; s++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(*s));
		cJSON_AddItemToObject(o, "stop", arr);
	}
	cJSON_AddBoolToObject(o, "stream", req->stream);
	if (req->stream && req->include_usage) {
		cJSON *so = cJSON_CreateObject();
		cJSON_AddTrueToObject(so, "include_usage");
		cJSON_AddItemToObject(o, "stream_options", so);
	}
	if (req->extra_json) {
		cJSON *extra = cJSON_Parse(req->extra_json);
		if (!cJSON_IsObject(extra)) {
			cJSON_Delete(extra);
			rc = -EINVAL;
			goto out;
		}
		cJSON *it = extra->child;
		while (it) {
			cJSON *next = it->next;
			cJSON_DetachItemViaPointer(extra, it);
			cJSON_DeleteItemFromObjectCaseSensitive(o, it->string);
			cJSON_AddItemToObject(o, it->string, it);
			it = next;
		}
		cJSON_Delete(extra);
	}
	char *s = cJSON_PrintUnformatted(o);
	if (!s)
		goto out;
	rc = buf_puts(out, s);
	cJSON_free(s);
out:
	cJSON_Delete(o);
	return rc;
}

static void text_field(const cJSON *obj, const char *key, const char **s, size_t *n)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsString(it) && it->valuestring[0]) {
		*s = it->valuestring;
		*n = strlen(it->valuestring);
	}
}

int openai_chunk_parse(struct openai_chunk *c, const char *json, size_t n)
{
	memset(c, 0, sizeof *c);
	c->prompt_tokens = c->completion_tokens = c->cached_tokens = -1;
	cJSON *root = cJSON_ParseWithLength(json, n);
	c->tree_ = root;
	if (!cJSON_IsObject(root)) {
		snprintf(c->error_message, sizeof c->error_message, "chunk is not a JSON object: %.80s", json);
		return -EBADMSG;
	}
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (err && !cJSON_IsNull(err)) {
		c->is_error = true;
		const char *msg = cJSON_IsString(err) ? err->valuestring : json_get_str(err, "message");
		snprintf(c->error_message, sizeof c->error_message, "%s", msg ? msg : "server sent an error object");
	}
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	const cJSON *ch = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
	if (cJSON_IsObject(ch)) {
		text_field(ch, "text", &c->content, &c->content_len);
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
		if (!cJSON_IsObject(delta))
			delta = cJSON_GetObjectItemCaseSensitive(ch, "message");
		if (cJSON_IsObject(delta)) {
			text_field(delta, "content", &c->content, &c->content_len);
			text_field(delta, "reasoning_content", &c->reasoning, &c->reasoning_len);
			if (!c->reasoning)
				text_field(delta, "reasoning", &c->reasoning, &c->reasoning_len);
			const cJSON *tc = cJSON_GetObjectItemCaseSensitive(delta, "tool_calls");
			c->has_tool_call = cJSON_IsArray(tc) && cJSON_GetArraySize(tc) > 0;
		}
		const char *fr = json_get_str(ch, "finish_reason");
		if (fr)
			snprintf(c->finish_reason, sizeof c->finish_reason, "%s", fr);
	}
	c->has_content = c->content != NULL;
	c->has_reasoning = c->reasoning != NULL;
	c->has_token = c->has_content || c->has_reasoning || c->has_tool_call;
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	if (cJSON_IsObject(usage)) {
		int64_t v;
		if (json_get_i64(usage, "completion_tokens", &v)) {
			c->has_usage = true;
			c->completion_tokens = v;
		}
		if (json_get_i64(usage, "prompt_tokens", &v))
			c->prompt_tokens = v;
		if (json_get_i64(usage, "prompt_tokens_details.cached_tokens", &v))
			c->cached_tokens = v;
	}
	return 0;
}

void openai_chunk_finish(struct openai_chunk *c)
{
	if (!c)
		return;
	cJSON_Delete(c->tree_);
	c->tree_ = NULL;
}
