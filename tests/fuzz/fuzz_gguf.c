/* fuzz_gguf — libFuzzer entry point for the GGUF reader: any byte string either
 * opens (and then every getter is walked) or gives an error, never a crash.
 * Built with -DFUZZ_STANDALONE it is its own driver: it writes a seed GGUF with
 * the writer, then opens a bounded number of deterministic mutations of it
 * (byte changes, truncations, length-field bombs). */
#include "gguf/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned fuzz_sink;

static void walk(const struct gguf *g)
{
	for (size_t i = 0; i < gguf_kv_count(g); i++) {
		const char *key = gguf_kv_key(g, i);
		int64_t iv;
		uint64_t uv;
		double dv;
		bool bv;
		fuzz_sink += (unsigned)strlen(key);
		fuzz_sink += gguf_get_i64(g, key, &iv) + gguf_get_u64(g, key, &uv) + gguf_get_f64(g, key, &dv) +
			     gguf_get_bool(g, key, &bv);
		const char *s = gguf_get_str(g, key);
		if (s)
			fuzz_sink += (unsigned)strlen(s);
		if (gguf_kv_type(g, i) != GGUF_TYPE_ARRAY)
			continue;
		size_t n = gguf_kv_array_len(g, i);
		for (size_t j = 0; j < n && j < 64; j++) {
			const char *e = gguf_get_arr_str(g, i, j);
			if (e)
				fuzz_sink += (unsigned)gguf_get_arr_str_len(g, i, j) + (unsigned)strlen(e);
			fuzz_sink += gguf_get_arr_i64(g, i, j, &iv) + gguf_get_arr_f64(g, i, j, &dv);
		}
		const unsigned char *raw = gguf_get_arr_data(g, i);
		if (raw && n)
			fuzz_sink += raw[0];
	}
	for (size_t i = 0; i < gguf_tensor_count(g); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);
		fuzz_sink += (unsigned)strlen(t->name);
		if (t->n_bytes)
			fuzz_sink += ((const unsigned char *)t->data)[0] + ((const unsigned char *)t->data)[t->n_bytes - 1];
		fuzz_sink += gguf_tensor_find(g, t->name) == t;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct gguf *g = gguf_open_memory(data, size, "fuzz", err, sizeof err);
	if (g) {
		walk(g);
		gguf_close(g);
	} else if (strncmp(err, "fuzz: ", 6) != 0) {
		fprintf(stderr, "error message does not name the file: %s\n", err);
		abort();
	}
	return 0;
}

#ifdef FUZZ_STANDALONE
#include <unistd.h>

#include "fuzz_mutate.h"

int main(void)
{
	char path[256], err[256];
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof path, "%s/fuzz_gguf_seed.%d.gguf", base, (int)getpid());
	struct gguf_writer *w = gguf_writer_create();
	const char *toks[] = {"a", "b", "ab", "\xc4\xa0"};
	int32_t types[] = {1, 1, 1, 3};
	float f[64];
	for (int i = 0; i < 64; i++)
		f[i] = (float)i;
	uint64_t ne[2] = {32, 2};
	int rc = gguf_writer_set_str(w, "general.architecture", "fuzz");
	rc |= gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 4);
	rc |= gguf_writer_set_arr_num(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 4);
	rc |= gguf_writer_set_u32(w, "general.alignment", 16);
	rc |= gguf_writer_add_tensor(w, "w", 2, ne, GGUF_TENSOR_F32, f, sizeof f);
	rc |= gguf_writer_add_tensor(w, "q", 1, ne, GGUF_TENSOR_Q8_0, f, 34);
	rc |= gguf_writer_write(w, path, err, sizeof err);
	gguf_writer_destroy(w);
	if (rc) {
		fprintf(stderr, "seed: %s\n", err);
		return 1;
	}
	FILE *fp = fopen(path, "rb");
	unsigned char seed[4096];
	size_t n = fp ? fread(seed, 1, sizeof seed, fp) : 0;
	if (fp)
		fclose(fp);
	unlink(path);
	if (n == 0)
		return 1;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	fuzz_mutate_run(LLVMFuzzerTestOneInput, seed, n, 20000, 0, NULL, &s);
	printf("20000 mutations of a %zu-byte seed: no crash\n", n);
	return 0;
}
#endif
