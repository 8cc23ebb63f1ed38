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
#include "fuzz_mutate.h"

int main(void)
{
	const char *root = getenv("SIXI_SOURCE_ROOT");
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/model/qwen35-tiny/model.safetensors", root ? root : ".");
	size_t n_st = 0, n_gg = 0;
	uint8_t *st = fuzz_read_file(path, &n_st);
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
	uint8_t *gg = fuzz_read_file(tmp, &n_gg);
	unlink(tmp);
	LLVMFuzzerTestOneInput(st, n_st); /* the seeds themselves load */
	LLVMFuzzerTestOneInput(gg, n_gg);
	if (fuzz_st_ok != 1 || fuzz_model_ok != 1) {
		printf("fuzz_model: a seed does not load (safetensors %d, model %d)\n", fuzz_st_ok, fuzz_model_ok);
		return 1;
	}
	/* mutations concentrate on the first bytes, where headers and lengths live */
	uint64_t rng = 0x243f6a8885a308d3ull;
	long runs = 2 + fuzz_mutate_run(LLVMFuzzerTestOneInput, st, n_st, 400, 6000, NULL, &rng) +
		    fuzz_mutate_run(LLVMFuzzerTestOneInput, gg, n_gg, 150, 200000, NULL, &rng);
	printf("fuzz_model: %ld inputs: %d parsed as safetensors, %d loaded as a model, %d error messages "
	       "without the input's name\n", runs, fuzz_st_ok, fuzz_model_ok, fuzz_bad_message);
	free(st);
	free(gg);
	return fuzz_bad_message ? 1 : 0;
}
#endif
