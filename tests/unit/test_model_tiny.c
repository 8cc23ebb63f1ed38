/* test_model_tiny — the embedded default model: written deterministically (same bytes twice),
 * a few MB, loads as qwen35 with the expected config, carries the project's tokenizer and a
 * ChatML template, and runs: a ChatML prompt encodes, prefills, and greedy decoding one row at
 * a time gives the same tokens as re-running the whole sequence each step. A path that
 * cannot be written fails with a message and leaves no file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/model.h"
#include "model/tiny.h"
#include "text/tokenizer.h"
#include "greedy.h"
#include "test.h"


/* The tiny vocabulary padded to a real model's width, padding of pad_type: every learnt id, bos
 * and eos as in the tiny model, then "<|unused_N|>" tokens up to n_vocab rows of the embedding
 * and the output matrix, each decoding to pad_text (UNUSED: nothing; NORMAL, the benchmark
 * files: its name); text naming one still encodes to the tiny vocabulary's ids (no merge makes
 * one), and the model runs. */
static void check_padded_vocab(const char *dir, const struct model_config *tiny_c, const struct tokenizer *tiny_tk,
			       int pad_type, const char *pad_text)
{
	char p[160], err[512] = "";
	snprintf(p, sizeof(p), "%s/padded.gguf", dir);
	struct model_config c = *tiny_c;
	if (!CHECK_EQ_INT(model_write_random_vocab(p, &c, GGUF_TENSOR_BF16, 5, 1500, pad_type, err, sizeof(err)), 0)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	struct model *m = model_load(p, 2, err, sizeof(err));
	if (!CHECK(m != NULL)) {
		fprintf(stderr, "%s\n", err);
		unlink(p);
		return;
	}
	CHECK_EQ_INT(model_get_config(m)->n_vocab, 1500);
	const struct gguf *g = model_gguf(m);
	CHECK_EQ_INT((long)gguf_tensor_find(g, "output.weight")->ne[1], 1500);
	struct tokenizer *tk = tok_load_gguf(g, err, sizeof(err));
	if (CHECK(tk != NULL)) {
		size_t tiny_n = tok_vocab_size(tiny_tk);
		CHECK_EQ_INT((long)tok_vocab_size(tk), 1500);
		CHECK_EQ_INT(tok_eos(tk), tok_eos(tiny_tk));
		CHECK_EQ_STR(tok_piece(tk, (int32_t)tiny_n - 1), tok_piece(tiny_tk, (int32_t)tiny_n - 1));
		CHECK_EQ_STR(tok_piece(tk, 1499), "<|unused_987|>");
		CHECK_EQ_INT(tok_token_type(tk, 1499), pad_type);
		char *txt = NULL;
		size_t tl = 99, wl = strlen(pad_text);
		int32_t pad_id = 1499;
		CHECK(tok_decode(tk, &pad_id, 1, true, &txt, &tl) == 0 && tl == wl && memcmp(txt, pad_text, wl) == 0);
		free(txt);
		int32_t *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;
		const char *text = "Hello, how are you? <|unused_3|>";
		CHECK_EQ_INT(tok_encode(tk, text, strlen(text), false, true, &a, &na), 0);
		CHECK_EQ_INT(tok_encode(tiny_tk, text, strlen(text), false, true, &b, &nb), 0);
		CHECK(na == nb && na > 0 && memcmp(a, b, na * sizeof(int32_t)) == 0);
		free(a);
		free(b);
		struct model_state *s = model_state_create(m, 1, 16);
		int32_t tok[2] = { 5, 1400 }, sl[2] = { 0, 0 };
		uint8_t want[2] = { 0, 1 };
		float *lg = malloc(sizeof(float) * 1500);
		struct model_batch bt = { 2, tok, sl, NULL, want };
		CHECK(s && lg && model_forward(m, s, &bt, lg) == 0 && isfinite(lg[1499]));
		free(lg);
		model_state_destroy(s);
		tok_destroy(tk);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	model_free(m);
	unlink(p);
}

/* Padding of another type is refused, naming the two that work, before any file is written. */
static void check_pad_type_refused(const char *dir, const struct model_config *tiny_c)
{
	char p[160], err[512] = "";
	snprintf(p, sizeof(p), "%s/control.gguf", dir);
	struct model_config c = *tiny_c;
	CHECK_EQ_INT(model_write_random_vocab(p, &c, GGUF_TENSOR_BF16, 5, 1500, TOK_TYPE_CONTROL, err, sizeof(err)),
		     -EINVAL);
	CHECK(strstr(err, "UNUSED or NORMAL") != NULL);
	CHECK(access(p, F_OK) != 0);
}

int main(void)
{
	char dir[] = "/tmp/sixi-test-tiny-XXXXXX", p1[128], p2[128], err[512];
	if (!mkdtemp(dir))
		return test_skip("cannot make a temporary directory");
	snprintf(p1, sizeof(p1), "%s/a.gguf", dir);
	snprintf(p2, sizeof(p2), "%s/b.gguf", dir);
	CHECK_EQ_INT(model_write_tiny(p1, err, sizeof(err)), 0);
	CHECK_EQ_INT(model_write_tiny(p2, err, sizeof(err)), 0);
	size_t n1 = 0, n2 = 0;
	char *b1 = test_slurp(p1, &n1), *b2 = test_slurp(p2, &n2);
	CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
	printf("tiny model: %zu bytes\n", n1);
	CHECK(n1 > 500000 && n1 < 8u << 20);
	free(b1);
	free(b2);

	struct model *m = model_load(p1, 2, err, sizeof(err));
	if (!CHECK(m != NULL)) {
		fprintf(stderr, "%s\n", err);
		return test_done();
	}
	const struct model_config *c = model_get_config(m);
	CHECK_EQ_INT(c->n_layer, 4);
	CHECK_EQ_INT(c->n_embd, 128);
	CHECK(model_layer_is_attention(m, 3) && !model_layer_is_attention(m, 0));
	const struct gguf *g = model_gguf(m);
	CHECK_EQ_STR(gguf_get_str(g, "tokenizer.chat_template"), model_tiny_chat_template);
	struct tokenizer *tk = tok_load_gguf(g, err, sizeof(err));
	if (!CHECK(tk != NULL)) {
		fprintf(stderr, "%s\n", err);
		model_free(m);
		return test_done();
	}
	CHECK_EQ_INT((long)tok_vocab_size(tk), c->n_vocab);
	const char *prompt = "<|im_start|>user\nHello, how are you?<|im_end|>\n<|im_start|>assistant\n";
	int32_t *ids = NULL;
	size_t n_ids = 0;
	CHECK_EQ_INT(tok_encode(tk, prompt, strlen(prompt), false, true, &ids, &n_ids), 0);
	CHECK(n_ids > 5 && n_ids < 60);
	CHECK_EQ_INT(ids[0], tok_find(tk, "<|im_start|>"));
	check_padded_vocab(dir, c, tk, TOK_TYPE_UNUSED, "");
	check_padded_vocab(dir, c, tk, TOK_TYPE_NORMAL, "<|unused_987|>");
	check_pad_type_refused(dir, c);

	/* Greedy: incremental decode vs recomputing the whole prefix each step (fresh slot). */
	int steps = 8, V = c->n_vocab;
	struct model_state *s = model_state_create(m, 2, 128);
	int32_t seq[128], slots[128] = { 0 };
	memcpy(seq, ids, n_ids * sizeof(int32_t));
	int len = (int)n_ids;
	float *lg = malloc(sizeof(float) * V * 128);
	uint8_t want[128] = { 0 };
	want[len - 1] = 1;
	struct model_batch b = { len, seq, slots, NULL, want };
	CHECK_EQ_INT(model_forward(m, s, &b, lg), 0);
	int ok = 1;
	for (int i = 0; i < steps; i++) {
		int next = greedy_argmax(lg, V);
		seq[len++] = next;
		/* recompute from scratch in slot 1 */
		model_state_slot_reset(s, 1);
		int32_t sl1[128];
		for (int k = 0; k < len; k++)
			sl1[k] = 1;
		float *full = malloc(sizeof(float) * V);
		uint8_t w2[128] = { 0 };
		w2[len - 1] = 1;
		struct model_batch fb = { len, seq, sl1, NULL, w2 };
		CHECK_EQ_INT(model_forward(m, s, &fb, full), 0);
		int32_t sl0 = 0;
		struct model_batch one = { 1, &seq[len - 1], &sl0, NULL, NULL };
		CHECK_EQ_INT(model_forward(m, s, &one, lg), 0);
		ok &= greedy_argmax(full, V) == greedy_argmax(lg, V);
		free(full);
	}
	CHECK(ok);
	char *text = NULL;
	size_t tl = 0;
	CHECK_EQ_INT(tok_decode(tk, seq + n_ids, (size_t)steps, false, &text, &tl), 0);
	printf("greedy continuation: \"%s\"\n", text ? text : "");
	free(text);
	free(lg);
	free(ids);
	model_state_destroy(s);
	tok_destroy(tk);
	model_free(m);

	/* An unwritable path: an error naming it, and nothing left behind. */
	char bad[160];
	snprintf(bad, sizeof(bad), "%s/no-such-dir/x.gguf", dir);
	CHECK(model_write_tiny(bad, err, sizeof(err)) < 0);
	CHECK(strstr(err, "no-such-dir") != NULL);
	struct stat st;
	CHECK(stat(bad, &st) != 0);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	return test_done();
}
