/* libFuzzer target for src/text/jinja: the input is a template, optionally
 * followed by a NUL byte and a JSON object of variables. Parsing and rendering
 * must never crash, leak or run away, whatever the bytes; errors are fine.
 * Build: CC=clang meson setup build-fuzz && ninja -C build-fuzz fuzz_jinja;
 * run:   build-fuzz/tests/fuzz_jinja -max_total_time=60 tests/fixtures/templates */
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

#ifdef FUZZ_STANDALONE
#include <stdio.h>
#include <stdlib.h>

/* Bounded driver: each template file named on the command line, then seeded
 * mutations of it (byte changes, truncations, Jinja punctuation inserted). */
int main(int argc, char **argv)
{
	static const char punct[] = "{}%#-+~|.()[]'\"=<>!, \n";
	uint64_t s = 0x7e3a;
	long runs = 0;
	for (int a = 1; a < argc; a++) {
		FILE *f = fopen(argv[a], "rb");
		if (!f) {
			fprintf(stderr, "fuzz_jinja: cannot read %s\n", argv[a]);
			return 1;
		}
		static char src[1 << 16], buf[1 << 16];
		size_t n = fread(src, 1, sizeof src - 1, f);
		fclose(f);
		LLVMFuzzerTestOneInput((const uint8_t *)src, n);
		for (int it = 0; it < 400 && n; it++, runs++) {
			memcpy(buf, src, n);
			size_t m = n;
			for (int k = 0; k < 1 + it % 3; k++) {
				s = s * 6364136223846793005ULL + 1442695040888963407ULL;
				size_t pos = (s >> 33) % m;
				switch ((s >> 16) % 3) {
				case 0: buf[pos] = punct[(s >> 40) % (sizeof punct - 1)]; break;
				case 1: m = pos ? pos : 1; break;
				default: buf[pos] = (char)(s >> 24); break;
				}
			}
			LLVMFuzzerTestOneInput((const uint8_t *)buf, m);
		}
	}
	printf("fuzz_jinja: %ld mutated templates, no crash\n", runs);
	return 0;
}
#endif
