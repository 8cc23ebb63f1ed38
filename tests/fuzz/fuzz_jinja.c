/* libFuzzer target for src/text/jinja: the input is a template, optionally
 * followed by a NUL byte and a JSON object of variables. Parsing and rendering
 * must never crash, leak or run away, whatever the bytes; errors are fine.
 * Build: CC=clang meson setup build-fuzz && ninja -C build-fuzz fuzz_jinja;
 * run:   build-fuzz/tests/fuzz_jinja -max_total_time=60 tests/fixtures/templates.
 * Without libFuzzer, tests/fuzz/replay.c drives it over the templates (fuzz_jinja_replay). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/buf.h"
#include "text/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char default_ctx[] =
	"{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"hi {{ x }}\"},"
	" {\"role\": \"assistant\", \"content\": \"ok\", \"reasoning_content\": \"r\", \"tool_calls\": [{\"type\": "
	"\"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1.5, \"b\": [true, null]}}}]},"
	" {\"role\": \"tool\", \"content\": \"42\"}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
	"\"f\", \"parameters\": {\"type\": \"object\"}}}], \"add_generation_prompt\": true, \"bos_token\": \"<s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *src = (const char *)data;
	const uint8_t *nul = memchr(data, 0, size);
	size_t n = nul ? (size_t)(nul - data) : size;
	char err[512];
	struct jinja_template *t = jinja_parse(src, n, err, sizeof err);
	if (!t)
		return 0;
	cJSON *ctx = NULL;
	if (nul)
		ctx = cJSON_ParseWithLength((const char *)nul + 1, size - n - 1);
	if (!ctx)
		ctx = cJSON_Parse(default_ctx);
	struct buf out;
	buf_init(&out);
	if (jinja_render_chat_at(t, cJSON_IsObject(ctx) ? ctx : NULL, 0, &out, err, sizeof err) != 0)
		err[0] = 0; /* errors are fine; crashes are not */
	buf_finish(&out);
	cJSON_Delete(ctx);
	jinja_destroy(t);
	return 0;
}
