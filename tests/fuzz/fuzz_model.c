/* fuzz_model — libFuzzer entry point for the model's file readers: any byte string is read
 * both as a safetensors file (st_parse, then every tensor's bytes touched) and as a GGUF to
 * load a model from (model_load_gguf: metadata, tensor names, shapes, types, sizes). Each
 * either succeeds or gives an error naming the input, never a crash.
 * Built with -DFUZZ_STANDALONE it is its own bounded driver: it mutates two seeds — the
 * committed reference safetensors file and the embedded tiny GGUF written on the spot —
 * with byte changes, truncations and length-field bombs, deterministically. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/tiny.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned fuzz_sink;
static int fuzz_bad_message, fuzz_st_ok, fuzz_model_ok;

static void check_message(const char *err, const char *name)
{
	if (strncmp(err, name, strlen(name)) != 0) {
		fprintf(stderr, "error message does not name the input: %s\n", err);
		fuzz_bad_message++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct st_file *f = st_parse(data, size, "fuzz.safetensors", err, sizeof(err));
	if (f) {
		for (size_t i = 0; i < st_count(f); i++) {
			const struct st_tensor *t = st_at(f, i);
			fuzz_sink += (unsigned)strlen(t->name) + (st_find(f, t->name) != NULL);
			if (t->n_bytes)
				fuzz_sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->n_bytes - 1];
		}
		st_close(f);
		fuzz_st_ok++;
	} else {
		check_message(err, "fuzz.safetensors");
	}
	struct gguf *g = gguf_open_memory(data, size, "fuzz.gguf", err, sizeof(err));
	if (g) {
		struct model *m = model_load_gguf(g, "fuzz.gguf", 1, err, sizeof(err));
		if (m) {
			fuzz_sink += (unsigned)model_get_config(m)->n_vocab;
			fuzz_model_ok++;
		}
		else
			check_message(err, "fuzz.gguf");
		model_free(m);
	}
	return 0;
}

#ifdef FUZZ_STANDALONE
static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void *slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	long len = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	void *b = len > 0 ? malloc((size_t)len) : NULL;
	*n = b ? fread(b, 1, (size_t)len, fp) : 0;
	fclose(fp);
	return b;
}

/* Mutations concentrate on the first `hot` bytes, where headers and lengths live. */
static void mutate_and_run(const uint8_t *seed, size_t n, size_t hot, int rounds)
{
	uint8_t *buf = malloc(n);
	for (int k = 0; k < rounds; k++) {
		memcpy(buf, seed, n);
		size_t len = n, lim = hot < n ? hot : n;
		switch (next() % 4) {
		case 0: /* a few flipped bytes */
			for (int j = 0; j < 1 + (int)(next() % 4); j++)
				buf[next() % lim] ^= (uint8_t)(1 + next() % 255);
			break;
		case 1: /* truncation */
			len = (size_t)(next() % n);
			break;
		case 2: { /* a length or count field set huge or off by a little */
			size_t at = (size_t)(next() % (lim > 8 ? lim - 8 : 1));
			uint64_t v = next() % 2 ? UINT64_MAX - next() % 16 : (uint64_t)(next() % 70000);
			memcpy(buf + at, &v, 8);
			break;
		}
		default: /* one byte set to a boundary value */
			buf[next() % lim] = (uint8_t[]){ 0, 1, 0x7f, 0x80, 0xff }[next() % 5];
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	free(buf);
}

int main(void)
{
	const char *root = getenv("SIXI_SOURCE_ROOT");
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/model/qwen35-tiny/model.safetensors", root ? root : ".");
	size_t n_st = 0, n_gg = 0;
	uint8_t *st = slurp(path, &n_st);
	char tmp[] = "/tmp/sixi-fuzz-model-XXXXXX", err[512];
	int fd = mkstemp(tmp);
	if (fd >= 0)
		close(fd);
	if (!st || fd < 0 || model_write_tiny(tmp, err, sizeof(err)) != 0) {
		printf("SKIP: seeds not available (%s)\n", st ? err : path);
		free(st);
		unlink(tmp);
		return 77;
	}
	uint8_t *gg = slurp(tmp, &n_gg);
	unlink(tmp);
	LLVMFuzzerTestOneInput(st, n_st); /* the seeds themselves load */
	LLVMFuzzerTestOneInput(gg, n_gg);
	if (fuzz_st_ok != 1 || fuzz_model_ok != 1) {
		printf("fuzz_model: a seed does not load (safetensors %d, model %d)\n", fuzz_st_ok, fuzz_model_ok);
		return 1;
	}
	mutate_and_run(st, n_st, 6000, 400);
	mutate_and_run(gg, n_gg, 200000, 150);
	printf("fuzz_model: 552 inputs: %d parsed as safetensors, %d loaded as a model, %d error messages "
	       "without the input's name\n", fuzz_st_ok, fuzz_model_ok, fuzz_bad_message);
	free(st);
	free(gg);
	return fuzz_bad_message ? 1 : 0;
}
#endif
