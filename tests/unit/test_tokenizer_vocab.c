/* Tokenizer acceptance against llama.cpp's vocabulary test vectors in
 * ../shared/data/vocab (ggml-vocab-NAME.gguf with .inp/.out): every input encodes to
 * the expected ids (no BOS/EOS, special tokens not parsed, as llama.cpp's
 * test-tokenizer-0 runs) and decodes back to itself. Skips when the files are absent. */
#include "test.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

#include <unistd.h>

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *p = malloc((size_t)len + 1);
	if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
		free(p);
		p = NULL;
	}
	if (p)
		p[len] = 0;
	fclose(f);
	*n = (size_t)len;
	return p;
}

static const char sep[] = "\n__ggml_vocab_test__\n";

/* Returns the number of vectors checked, or -1 when the files are absent. */
static int check_vocab(const char *name)
{
	char rel[256], path[4096], err[512];
	snprintf(rel, sizeof rel, "../shared/data/vocab/ggml-vocab-%s.gguf", name);
	snprintf(path, sizeof path, "%s", test_src_path(rel));
	if (access(path, R_OK) != 0)
		return -1;
	struct gguf *g = gguf_open(path, err, sizeof err);
	CHECK(g != NULL);
	if (!g)
		return 0;
	struct tokenizer *t = tok_load_gguf(g, err, sizeof err);
	gguf_close(g);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s: %s\n", name, err);
		return 0;
	}
	char p2[4200];
	size_t ni, no;
	snprintf(p2, sizeof p2, "%s.inp", path);
	char *inp = slurp(p2, &ni);
	snprintf(p2, sizeof p2, "%s.out", path);
	char *out = slurp(p2, &no);
	CHECK(inp && out);
	int count = 0, bad = 0;
	char *ip = inp, *op = out;
	while (ip && op && *op) {
		char *end = strstr(ip, sep);
		size_t len = end ? (size_t)(end - ip) : strlen(ip);
		if (!end && len >= sizeof sep - 2 && strcmp(ip + len - (sizeof sep - 2), sep + 1) == 0)
			len -= sizeof sep - 2; /* the file ends with the separator line */
		char *eol = strchr(op, '\n');
		if (eol)
			*eol = 0;
		int32_t *ids;
		size_t n;
		int rc = tok_encode(t, ip, len, false, false, &ids, &n);
		CHECK_EQ_INT(rc, 0);
		char got[8192] = "";
		size_t gl = 0;
		for (size_t i = 0; !rc && i < n && gl + 16 < sizeof got; i++)
			gl += (size_t)snprintf(got + gl, sizeof got - gl, " %d", (int)ids[i]);
		const char *want = op;
		if (strcmp(got, want) != 0 && !(gl == 0 && strspn(want, " ") == strlen(want))) {
			bad++;
			fprintf(stderr, "%s vector %d: \"%.*s\"\n  got: %s\n want: %s\n", name, count, (int)len, ip, got, want);
		}
		if (!rc) {
			char *text;
			size_t tl;
			CHECK_EQ_INT(tok_decode(t, ids, n, false, &text, &tl), 0);
			if (tl != len || memcmp(text, ip, len) != 0) {
				bad++;
				fprintf(stderr, "%s vector %d: decode gives \"%s\"\n", name, count, text);
			}
			free(text);
			free(ids);
		}
		count++;
		op = eol ? eol + 1 : op + strlen(op);
		if (!end)
			break;
		ip = end + sizeof sep - 1;
	}
	CHECK_EQ_INT(bad, 0);
	printf("%s: %d vectors, %d mismatches\n", name, count, bad);
	free(inp);
	free(out);
	tok_destroy(t);
	return count;
}

int main(void)
{
	int a = check_vocab("gpt-2"), b = check_vocab("llama-spm");
	if (a < 0 && b < 0)
		return test_skip("../shared/data/vocab is absent: llama.cpp's vocabulary vectors not checked");
	CHECK(a > 40 && b > 40);
	return test_done();
}
