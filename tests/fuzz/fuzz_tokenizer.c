/* fuzz_tokenizer — libFuzzer entry point for the tokenizers. The first input byte picks
 * the case: even: the rest is text for the project's tiny byte-level BPE (encode with
 * and without special-token parsing; valid UTF-8 must encode, decode back to itself and
 * stream-decode to itself; invalid UTF-8 must give -EILSEQ); odd: the rest replaces the
 * tail of the tiny vocabulary's GGUF image from a chosen offset, and a tokenizer that
 * still loads must encode and decode without crashing. Even inputs also go through the
 * Unicode normal forms, which must keep the identities UAX #15 states: NFC and NFKD are
 * idempotent, NFD(NFC(x)) == NFD(x), NFKC(NFKD(x)) == NFKC(x); invalid UTF-8 gives -EILSEQ.
 * Built with -DFUZZ_STANDALONE it drives itself with a bounded number of deterministic
 * inputs. */
#include "gguf/gguf.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/unicode_norm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tokenizer *tiny;
static unsigned char *image;  /* the tiny vocabulary's GGUF bytes */
static size_t image_len;

static void setup(void)
{
	char path[256], err[256];
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof path, "%s/fuzz_tok.%d.gguf", base, (int)getpid());
	struct gguf_writer *w = gguf_writer_create();
	if (tok_write_tiny_vocab(w, err, sizeof err) || gguf_writer_write(w, path, err, sizeof err)) {
		fprintf(stderr, "setup: %s\n", err);
		abort();
	}
	gguf_writer_destroy(w);
	FILE *f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	image_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	image = malloc(image_len);
	if (fread(image, 1, image_len, f) != image_len)
		abort();
	fclose(f);
	unlink(path);
	struct gguf *g = gguf_open_memory(image, image_len, "tiny", err, sizeof err);
	tiny = g ? tok_load_gguf(g, err, sizeof err) : NULL;
	gguf_close(g);
	if (!tiny)
		abort();
}

static bool same(const char *a, size_t na, const char *b, size_t nb) { return na == nb && memcmp(a, b, na) == 0; }

static void fuzz_forms(const char *text, size_t n, bool valid)
{
	char *c, *d, *kd, *c2, *dc, *kd2, *kc, *kckd;
	size_t nc, nd, nkd, nc2, ndc, nkd2, nkc, nkckd;
	if (!valid) {
		if (unicode_normalize(UNICODE_NFC, text, n, &c, &nc) != -EILSEQ || c)
			abort();
		return;
	}
	if (unicode_normalize(UNICODE_NFC, text, n, &c, &nc) || unicode_normalize(UNICODE_NFD, text, n, &d, &nd) ||
	    unicode_normalize(UNICODE_NFKD, text, n, &kd, &nkd) || unicode_normalize(UNICODE_NFKC, text, n, &kc, &nkc) ||
	    unicode_normalize(UNICODE_NFC, c, nc, &c2, &nc2) || unicode_normalize(UNICODE_NFD, c, nc, &dc, &ndc) ||
	    unicode_normalize(UNICODE_NFKD, kd, nkd, &kd2, &nkd2) ||
	    unicode_normalize(UNICODE_NFKC, kd, nkd, &kckd, &nkckd))
		abort(); /* valid text always normalizes (no allocation fails here) */
	if (!same(c, nc, c2, nc2) || !same(d, nd, dc, ndc) || !same(kd, nkd, kd2, nkd2) || !same(kc, nkc, kckd, nkckd))
		abort();
	free(c), free(d), free(kd), free(c2), free(dc), free(kd2), free(kc), free(kckd);
}

static void fuzz_text(const char *text, size_t n)
{
	bool valid = unicode_utf8_valid_prefix(text, n) == n;
	fuzz_forms(text, n, valid);
	for (int parse = 0; parse < 2; parse++) {
		int32_t *ids;
		size_t n_ids;
		int rc = tok_encode(tiny, text, n, parse, parse, &ids, &n_ids);
		if (!valid) {
			if (rc != -EILSEQ)
				abort();
			continue;
		}
		if (rc)
			abort(); /* every byte has a token: valid text always encodes */
		size_t skip = parse && tok_add_bos(tiny) ? 1 : 0;
		char *back;
		size_t bl;
		if (tok_decode(tiny, ids + skip, n_ids - skip, true, &back, &bl) || bl != n || memcmp(back, text, n))
			abort();
		free(back);
		struct tok_stream s;
		tok_stream_init(&s, tiny, true);
		char *out = malloc(n + 64), chunk[256];
		size_t o = 0;
		for (size_t i = skip; i < n_ids; i++) {
			int k = tok_stream_feed(&s, ids[i], chunk, sizeof chunk);
			if (k < 0 || o + (size_t)k > n)
				abort();
			memcpy(out + o, chunk, (size_t)k);
			o += (size_t)k;
		}
		if (tok_stream_flush(&s, chunk, sizeof chunk) != 0 || o != n || memcmp(out, text, n))
			abort();
		free(out);
		free(ids);
	}
}

static void fuzz_vocab(const uint8_t *data, size_t size)
{
	char err[512];
	if (size < 2)
		return;
	size_t at = ((size_t)data[0] << 8 | data[1]) % image_len;
	data += 2;
	size -= 2;
	size_t len = at + size;
	unsigned char *img = malloc(len ? len : 1);
	memcpy(img, image, at);
	memcpy(img + at, data, size);
	struct gguf *g = gguf_open_memory(img, len, "fuzz", err, sizeof err);
	struct tokenizer *t = g ? tok_load_gguf(g, err, sizeof err) : NULL;
	gguf_close(g);
	if (t) {
		static const char text[] = "<|im_start|>The keeper's 3 notebooks \xc3\xa9t\xc3\xa9 \xf0\x9f\xa6\x99<|im_end|>";
		int32_t *ids;
		size_t n;
		if (tok_encode(t, text, sizeof text - 1, true, true, &ids, &n) == 0) {
			char *back;
			size_t bl;
			if (tok_decode(t, ids, n, true, &back, &bl) == 0)
				free(back);
			free(ids);
		}
		tok_destroy(t);
	}
	free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!tiny)
		setup();
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_vocab(data + 1, size - 1);
	else
		fuzz_text((const char *)data + 1, size - 1);
	return 0;
}

#ifdef FUZZ_STANDALONE
#include "fuzz_mutate.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng_next(void) { return fuzz_next(&rng_state); }

int main(void)
{
	static const char *const atoms[] = {"a", "The ", " ", "\n", "\r\n", "\t", "'s", "'LL", "7", "123", ".", "!?",
					    "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\xa6\x99", "\xcc\x81", "<|im_start|>",
					    "<|im_end|>", "<|endoftext|>", "<|im_", "\xff", "\xc3", "\x80", "\xe2\x96\x81",
					    "\xcc\xa3", "\xcd\x85", "\xe1\x84\x92", "\xe1\x85\xa1", "\xe1\x86\xab",
					    "\xed\x95\x9c", "\xe0\xa5\x98", "\xef\xac\x81", "\xe2\x84\xab", "\xef\xb7\xba",
					    "\xe0\xbd\xb1", "\xe0\xbd\xb2"};
	unsigned char buf[512];
	int texts = 0, vocabs = 0;
	setup();
	for (int iter = 0; iter < 3000; iter++) {
		size_t n = 1;
		buf[0] = 0;
		int parts = (int)(rng_next() % 24);
		for (int p = 0; p < parts; p++) {
			const char *a = atoms[rng_next() % (sizeof atoms / sizeof atoms[0])];
			size_t l = strlen(a);
			if (n + l < sizeof buf) {
				memcpy(buf + n, a, l);
				n += l;
			}
		}
		LLVMFuzzerTestOneInput(buf, n);
		texts++;
	}
	for (int iter = 0; iter < 1500; iter++) {
		size_t n = 4 + (size_t)(rng_next() % 64);
		buf[0] = 1;
		for (size_t i = 1; i < n; i++)
			buf[i] = (unsigned char)rng_next();
		/* mostly keep the original bytes after the cut, changed in a few places */
		size_t at = ((size_t)buf[1] << 8 | buf[2]) % image_len;
		if (rng_next() % 4) {
			for (size_t i = 3; i < n; i++)
				buf[i] = at + i - 3 < image_len ? image[at + i - 3] : buf[i];
			buf[3 + rng_next() % (n - 3)] ^= (unsigned char)(1u << (rng_next() % 8));
			if (at + (n - 3) < image_len) { /* keep the rest of the file too */
				size_t total = 1 + 2 + (image_len - at);
				unsigned char *big = malloc(total);
				memcpy(big, buf, n);
				memcpy(big + n, image + at + (n - 3), image_len - at - (n - 3));
				LLVMFuzzerTestOneInput(big, total);
				free(big);
				vocabs++;
				continue;
			}
		}
		LLVMFuzzerTestOneInput(buf, n);
		vocabs++;
	}
	printf("%d texts and %d vocabulary mutations: no crash, every valid text round-trips\n", texts, vocabs);
	tok_destroy(tiny);
	free(image);
	return 0;
}
#endif
