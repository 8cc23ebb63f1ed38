/* Unit tests for src/net/openai: request bodies and chunk interpretation
 * (first token = content, reasoning or tool call, never the role prelude). */
#include "test.h"
#include "net/openai.h"
#include <cjson/cJSON.h>

static struct openai_chunk parse(const char *s)
{
	struct openai_chunk c;
	int rc = openai_chunk_parse(&c, s, strlen(s));
	CHECK(rc == 0);
	return c;
}

/* The shaped parser must give exactly what the full scan gives, chunk by chunk;
 * expect[i] says whether chunk i should take the shortcut. */
static void same_as_full(const char *const *chunks, const char *expect)
{
	struct openai_shape sh;
	memset(&sh, 0, sizeof sh);
	for (size_t i = 0; chunks[i]; i++) {
		struct openai_chunk a, b;
		size_t n = strlen(chunks[i]);
		uint64_t before = sh.shortcuts;
		int ra = openai_chunk_parse_shaped(&sh, &a, chunks[i], n);
		int rb = openai_chunk_parse(&b, chunks[i], n);
		bool took = sh.shortcuts != before;
		if (!CHECK(took == (expect[i] == 'y')))
			fprintf(stderr, "  chunk %zu %s the shortcut: %s\n", i, took ? "took" : "did not take", chunks[i]);
		CHECK_EQ_INT(ra, rb);
		if (ra == 0 && rb == 0) {
			CHECK(a.has_token == b.has_token && a.has_content == b.has_content &&
			      a.has_reasoning == b.has_reasoning && a.has_tool_call == b.has_tool_call &&
			      a.has_usage == b.has_usage && a.is_error == b.is_error);
			CHECK(a.prompt_tokens == b.prompt_tokens && a.completion_tokens == b.completion_tokens &&
			      a.cached_tokens == b.cached_tokens);
			CHECK_EQ_STR(a.finish_reason, b.finish_reason);
			CHECK_EQ_STR(a.error_message, b.error_message);
			CHECK(a.content_len == b.content_len && a.reasoning_len == b.reasoning_len);
			CHECK((a.content == NULL) == (b.content == NULL) && (a.reasoning == NULL) == (b.reasoning == NULL));
			if (a.content && b.content)
				CHECK(memcmp(a.content, b.content, a.content_len) == 0);
			if (a.reasoning && b.reasoning)
				CHECK(memcmp(a.reasoning, b.reasoning, a.reasoning_len) == 0);
		}
		openai_chunk_finish(&a);
		openai_chunk_finish(&b);
	}
}

static void test_shaped(void)
{
	/* a llama.cpp-like completions stream: text varies, the rest does not */
	static const char *const completions[] = {
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\" The\",\"finish_reason\":null}],\"model\":\"m\"}",
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\" quick\",\"finish_reason\":null}],\"model\":\"m\"}",
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"\xc3\xa9\xe2\x82\xac!\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* an escape: full scan, and the shape stays the old one */
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"a\\nb\",\"finish_reason\":null}],\"model\":\"m\"}",
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* empty text: no token, full scan */
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* a quote where the text would end: a different document, scanned (and refused) in full */
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"a\"b\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* a control character inside the text: refused in full */
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"a\tb\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* the same prefix and suffix around bytes that close the string early */
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"\",\"x\":\"\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* a suffix one byte off: a full scan (it is invalid) */
		"{\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"y\",\"finish_reason\":null}],\"model\":\"m\"",
		/* another id: full scan, and it becomes the shape */
		"{\"id\":\"c2\",\"choices\":[{\"index\":0,\"text\":\"y\",\"finish_reason\":null}],\"model\":\"m\"}",
		"{\"id\":\"c2\",\"choices\":[{\"index\":0,\"text\":\"zz\",\"finish_reason\":null}],\"model\":\"m\"}",
		/* the finish and the usage chunks differ in shape */
		"{\"id\":\"c2\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"model\":\"m\"}",
		"{\"id\":\"c2\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}",
		NULL,
	};
	same_as_full(completions, "nyynynnnnnnynn");
	/* chat: a role prelude, reasoning, then content; a finish reason on a text chunk */
	static const char *const chat[] = {
		"{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
		"{\"choices\":[{\"delta\":{\"reasoning_content\":\"Let\"}}]}",
		"{\"choices\":[{\"delta\":{\"reasoning_content\":\" me\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\" there\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"?\"},\"finish_reason\":\"stop\"}]}",
		/* content and reasoning together never make a shape */
		"{\"choices\":[{\"delta\":{\"content\":\"a\",\"reasoning\":\"b\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"c\",\"reasoning\":\"b\"}}]}",
		/* an error object is never a shape */
		"{\"error\":{\"message\":\"boom\"},\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
		"{\"error\":{\"message\":\"boom\"},\"choices\":[{\"delta\":{\"content\":\"b\"}}]}",
		NULL,
	};
	same_as_full(chat, "nnynynynnnn");
	/* a chunk larger than a shape holds is always scanned in full */
	char big[OPENAI_SHAPE_BYTES + 64];
	int k = snprintf(big, sizeof big, "{\"pad\":\"%0*d\",\"choices\":[{\"text\":\"a\"}]}", OPENAI_SHAPE_BYTES, 0);
	CHECK(k > OPENAI_SHAPE_BYTES && (size_t)k < sizeof big);
	const char *const large[] = { big, big, NULL };
	same_as_full(large, "nn");
}

int main(void)
{
	test_shaped();
	struct buf b;
	buf_init(&b);
	struct openai_request req = { .api = OPENAI_COMPLETIONS, .model = "m", .prompt = "hi", .max_tokens = 16,
				      .temperature = 0.7, .top_p = -1, .top_k = -1, .seed = 3, .stream = true,
				      .include_usage = true, .ignore_eos = true };
	CHECK(openai_request_body(&req, &b) == 0);
	cJSON *j = cJSON_Parse(b.data);
	CHECK(j != NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stream_options"), "include_usage")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "ignore_eos")));
	CHECK(cJSON_GetObjectItem(j, "top_p") == NULL);
	CHECK_EQ_INT(cJSON_GetObjectItem(j, "max_tokens")->valueint, 16);
	cJSON_Delete(j);
	buf_reset(&b);
	req.extra_json = "{\"max_tokens\": 5, \"x\": true}";
	CHECK(openai_request_body(&req, &b) == 0);
	j = cJSON_Parse(b.data);
	CHECK_EQ_INT(cJSON_GetObjectItem(j, "max_tokens")->valueint, 5);
	cJSON_Delete(j);
	buf_reset(&b);
	req.extra_json = "[1]";
	CHECK(openai_request_body(&req, &b) == -EINVAL);
	req.extra_json = NULL;
	int32_t ids[] = { 1, 2, 3 };
	req.prompt_ids = ids;
	req.n_prompt_ids = 3;
	buf_reset(&b);
	CHECK(openai_request_body(&req, &b) == 0);
	CHECK(strstr(b.data, "\"prompt\":[1,2,3]") != NULL);
	struct openai_request chat = { .api = OPENAI_CHAT, .model = "m", .prompt = "q", .temperature = -1,
				       .top_p = -1, .top_k = -1, .seed = -1 };
	buf_reset(&b);
	CHECK(openai_request_body(&chat, &b) == 0);
	CHECK(strstr(b.data, "\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]") != NULL);
	CHECK_EQ_STR(openai_api_path(OPENAI_CHAT), "/v1/chat/completions");
	buf_finish(&b);

	/* role prelude is not a token */
	struct openai_chunk c = parse("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}");
	CHECK(!c.has_token);
	openai_chunk_finish(&c);
	c = parse("{\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}");
	CHECK(c.has_token && c.has_content && c.content_len == 3);
	openai_chunk_finish(&c);
	c = parse("{\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}");
	CHECK(c.has_token && c.has_reasoning && !c.has_content);
	openai_chunk_finish(&c);
	c = parse("{\"choices\":[{\"delta\":{\"reasoning\":\"think\"}}]}");
	CHECK(c.has_token && c.has_reasoning);
	openai_chunk_finish(&c);
	c = parse("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\"}}]}}]}");
	CHECK(c.has_token && c.has_tool_call);
	openai_chunk_finish(&c);
	c = parse("{\"choices\":[{\"text\":\" world\",\"finish_reason\":null}]}");
	CHECK(c.has_content && c.finish_reason[0] == 0);
	openai_chunk_finish(&c);
	/* final usage-only chunk */
	c = parse("{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":64,"
		  "\"prompt_tokens_details\":{\"cached_tokens\":4}}}");
	CHECK(c.has_usage && c.completion_tokens == 64 && c.prompt_tokens == 12 && c.cached_tokens == 4);
	CHECK(!c.has_token);
	openai_chunk_finish(&c);
	/* an exact integer written as a long float still counts (no length limit) */
	c = parse("{\"choices\":[],\"usage\":{\"completion_tokens\":625555555.000000000000000000000000000000000000000000}}");
	CHECK(c.has_usage && c.completion_tokens == 625555555);
	openai_chunk_finish(&c);
	c = parse("{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}");
	CHECK_EQ_STR(c.finish_reason, "length");
	openai_chunk_finish(&c);
	/* error object mid-stream */
	c = parse("{\"error\":{\"message\":\"out of memory\",\"code\":500}}");
	CHECK(c.is_error);
	CHECK_EQ_STR(c.error_message, "out of memory");
	openai_chunk_finish(&c);
	/* malformed */
	struct openai_chunk bad;
	CHECK(openai_chunk_parse(&bad, "{\"choices\":[", 12) == -EBADMSG);
	CHECK(strstr(bad.error_message, "not a JSON object") != NULL);
	openai_chunk_finish(&bad);
	CHECK(openai_chunk_parse(&bad, "[DONE]", 6) == -EBADMSG);
	openai_chunk_finish(&bad);
	/* escapes are unescaped, \u with surrogate pairs become UTF-8 */
	c = parse("{\"choices\":[{\"delta\":{\"content\":\"a\\nb\\\"c\\u00e9\\ud83d\\ude00\\/\"}}]}");
	CHECK(c.has_content && c.content_len == strlen("a\nb\"c\xc3\xa9\xf0\x9f\x98\x80/"));
	CHECK(memcmp(c.content, "a\nb\"c\xc3\xa9\xf0\x9f\x98\x80/", c.content_len) == 0);
	openai_chunk_finish(&c);
	/* only choices[0] counts; other keys and nesting are skipped */
	c = parse(" { \"x\" : [1, {\"text\":\"no\"}, -2.5e3, true, null] , \"choices\" : [ {\"text\":\"\"}, "
		  "{\"text\":\"second\"} ] } ");
	CHECK(!c.has_token);
	openai_chunk_finish(&c);
	c = parse("{\"error\":\"plain string error\"}");
	CHECK(c.is_error);
	CHECK_EQ_STR(c.error_message, "plain string error");
	openai_chunk_finish(&c);
	c = parse("{\"error\":null,\"choices\":[{\"text\":\"ok\"}]}");
	CHECK(!c.is_error && c.has_content);
	openai_chunk_finish(&c);
	/* malformed JSON of many kinds is rejected with a reason, never half-read */
	static const char *bad_inputs[] = {
		"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":[1,]}", "{\"a\":01}", "{\"a\":-}",
		"{\"a\":1.}", "{\"a\":1e}", "{\"a\":\"x}", "{\"a\":\"\\q\"}", "{\"a\":\"\\u12G4\"}",
		"{\"a\":tru}", "{\"a\":1} x", "{\"a\":\"tab\there\"}", "[1]", "\"s\"", "{'a':1}",
	};
	for (size_t i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++) {
		struct openai_chunk x;
		int rc = openai_chunk_parse(&x, bad_inputs[i], strlen(bad_inputs[i]));
		if (!CHECK(rc == -EBADMSG))
			fprintf(stderr, "  accepted: %s\n", bad_inputs[i]);
		openai_chunk_finish(&x);
	}
	/* deep nesting is refused, not a stack overflow */
	char deep[400];
	memset(deep, '[', sizeof deep);
	memcpy(deep, "{\"a\":", 5);
	struct openai_chunk x;
	CHECK(openai_chunk_parse(&x, deep, sizeof deep) == -EBADMSG);
	openai_chunk_finish(&x);
	return test_done();
}
