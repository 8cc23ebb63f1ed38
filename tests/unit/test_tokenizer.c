/* Unit tests for src/text/tokenizer (no shared data needed):
 * - pre-tokenizer splits (gpt2, qwen2, qwen35, default) against tests/fixtures/tokenizer/
 *   splits.jsonl, produced by Python's re engine over the same regexes (gen_splits.py);
 * - the project's tiny byte-level BPE: deterministic training, GGUF round trip, encode/
 *   decode identity, special tokens, streaming decode of split UTF-8, tokenizer.json load;
 * - a hand-built SentencePiece vocabulary: score-ordered merges, byte fallback, BOS,
 *   space prefix, decode;
 * - bad input: invalid UTF-8, vocabularies with missing or broken merges, bad ids;
 * - the --tokenize command. */
#include "test.h"
#include "gguf/gguf.h"
#include "text/tok_cmd.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
	static char buf[2][512];
	static int k;
	k ^= 1;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}


static struct tokenizer *load_gguf_file(const char *path, char *err, size_t errlen)
{
	struct gguf *g = gguf_open(path, err, errlen);
	if (!g)
		return NULL;
	struct tokenizer *t = tok_load_gguf(g, err, errlen);
	gguf_close(g);
	return t;
}

/* ---- splits ---- */

/* Compares tok_pre_split with every line {"pre", "text", "pieces"} of a JSONL buffer; returns the line count. */
static int compare_splits(char *all)
{
	int lines = 0, bad = 0;
	for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		const char *pre_name = cJSON_GetObjectItem(j, "pre")->valuestring;
		const char *text = cJSON_GetObjectItem(j, "text")->valuestring;
		const cJSON *pieces = cJSON_GetObjectItem(j, "pieces");
		enum tok_pre pre = strcmp(pre_name, "gpt2") == 0 ? TOK_PRE_GPT2
				   : strcmp(pre_name, "qwen2") == 0 ? TOK_PRE_QWEN2
				   : strcmp(pre_name, "qwen35") == 0 ? TOK_PRE_QWEN35
				   : strcmp(pre_name, "llama3") == 0 ? TOK_PRE_LLAMA3
				   : strcmp(pre_name, "gpt-4o") == 0 ? TOK_PRE_GPT4O
				   : strcmp(pre_name, "deepseek-v3") == 0 ? TOK_PRE_DEEPSEEK3 : TOK_PRE_DEFAULT;
		size_t *ends = NULL, np = 0;
		int rc = tok_pre_split(pre, text, strlen(text), &ends, &np);
		CHECK_EQ_INT(rc, 0);
		int ok = rc == 0 && np == (size_t)cJSON_GetArraySize(pieces);
		size_t start = 0;
		for (size_t i = 0; ok && i < np; i++) {
			const char *want = cJSON_GetArrayItem(pieces, (int)i)->valuestring;
			ok = strlen(want) == ends[i] - start && memcmp(want, text + start, ends[i] - start) == 0;
			start = ends[i];
		}
		if (!ok && bad++ < 5) {
			fprintf(stderr, "split %s of \"%s\": got", pre_name, text);
			start = 0;
			for (size_t i = 0; i < np; i++) {
				fprintf(stderr, " [%.*s]", (int)(ends[i] - start), text + start);
				start = ends[i];
			}
			fprintf(stderr, "\n");
		}
		free(ends);
		cJSON_Delete(j);
		lines++;
	}
	CHECK_EQ_INT(bad, 0);
	return lines;
}

/* GPT-2's byte alphabet: a bijection onto printable code points, known anchors. */
static void test_byte_alphabet(void)
{
	unsigned char seen[0x200] = {0};
	int dup = 0;
	for (unsigned b = 0; b < 256; b++) {
		uint32_t cp = tok_byte_char((unsigned char)b);
		CHECK(cp < 0x200);
		if (cp < 0x200)
			dup += seen[cp]++;
		CHECK(unicode_category(cp) != UCAT_OTHER && !unicode_is_space(cp));
	}
	CHECK_EQ_INT(dup, 0);
	CHECK_EQ_INT(tok_byte_char(' '), 0x120);  /* Ġ */
	CHECK_EQ_INT(tok_byte_char('\n'), 0x10a); /* Ċ */
	CHECK_EQ_INT(tok_byte_char('A'), 'A');
	CHECK_EQ_INT(tok_byte_char(0x7f), 0x121);
	CHECK_EQ_INT(tok_byte_char(0xad), 0x143);
	CHECK_EQ_INT(tok_byte_char(0xe9), 0xe9);
}

static void test_splits(void)
{
	size_t n;
	char *all = test_slurp(test_src_path("tests/fixtures/tokenizer/splits.jsonl"), &n);
	CHECK(all != NULL);
	if (all)
		CHECK(compare_splits(all) >= 100);
	free(all);
}

/* The inputs of llama.cpp's vocabulary tests (qwen35's included, whose vocabulary is not
 * in ../shared) split by Python's re with the same regexes, run now, against ours. */
static void test_splits_shared(void)
{
	static const char *const names[] = {"qwen35", "gpt-2", "llama-spm"};
	char cmd[8192], rel[128];
	int len = snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' --inp",
			   test_src_path("tests/fixtures/tokenizer/gen_splits.py"));
	for (int i = 0; i < 3; i++) {
		snprintf(rel, sizeof rel, "../shared/data/vocab/ggml-vocab-%s.gguf.inp", names[i]);
		if (access(test_src_path(rel), R_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
			printf("note: ../shared/data/vocab or /usr/bin/python3 absent: splits of the shared inputs not checked\n");
			return;
		}
		len += snprintf(cmd + len, sizeof cmd - (size_t)len, " '%s'", test_src_path(rel));
	}
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return;
	size_t cap = 1 << 20, n = 0;
	char *all = malloc(cap);
	size_t k;
	while (all && (k = fread(all + n, 1, cap - 1 - n, p)) > 0)
		n += k;
	int status = pclose(p);
	CHECK_EQ_INT(status, 0);
	if (all && status == 0) {
		all[n] = 0;
		int lines = compare_splits(all);
		CHECK(lines >= 5 * 140);
		printf("splits of the shared vocabulary inputs: %d (pre-tokenizer, input) pairs compared\n", lines);
	}
	free(all);
}

/* ---- the tiny vocabulary ---- */

static const char *write_tiny(const char *name)
{
	char err[256];
	const char *path = tmp_path(name);
	struct gguf_writer *w = gguf_writer_create();
	int rc = tok_write_tiny_vocab(w, err, sizeof err);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		fprintf(stderr, "%s\n", err);
	if (!rc)
		CHECK_EQ_INT(gguf_writer_write(w, path, err, sizeof err), 0);
	gguf_writer_destroy(w);
	return path;
}

static void check_round_trip(const struct tokenizer *t, const char *text, bool parse_special)
{
	int32_t *ids;
	size_t n;
	char *back;
	size_t bl;
	int rc = tok_encode(t, text, strlen(text), false, parse_special, &ids, &n);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		return;
	CHECK_EQ_INT(tok_decode(t, ids, n, true, &back, &bl), 0);
	CHECK_EQ_STR(back, text);
	free(back);
	free(ids);
}

static void test_stream(const struct tokenizer *t)
{
	const char *text = "h\xc3\xa9llo \xf0\x9f\xa6\x99 w\xc3\xb6rld \xe4\xb8\xad";
	int32_t *ids;
	size_t n;
	CHECK_EQ_INT(tok_encode(t, text, strlen(text), false, false, &ids, &n), 0);
	struct tok_stream s;
	tok_stream_init(&s, t, false);
	char out[256], chunk[64];
	size_t o = 0;
	int held = 0;
	for (size_t i = 0; i < n; i++) {
		int k = tok_stream_feed(&s, ids[i], chunk, sizeof chunk);
		CHECK(k >= 0);
		if (k < 0)
			break;
		held += k == 0;
		CHECK_EQ_INT(unicode_utf8_valid_prefix(chunk, (size_t)k), k); /* only whole characters come out */
		memcpy(out + o, chunk, (size_t)k);
		o += (size_t)k;
	}
	CHECK_EQ_INT(tok_stream_flush(&s, chunk, sizeof chunk), 0);
	out[o] = 0;
	CHECK_EQ_STR(out, text);
	CHECK(held >= 3); /* the emoji's 4 bytes are 4 byte tokens in this ASCII-trained vocabulary */
	/* an incomplete character at the end is flushed as U+FFFD; a stray continuation byte too */
	tok_stream_init(&s, t, false);
	int32_t e0 = tok_find(t, "\xc3\xa3"), c3 = -1; /* byte 0xE3 is written U+00E3 */
	char key[8];
	key[unicode_utf8_encode(tok_byte_char(0xe3), key)] = 0;
	e0 = tok_find(t, key);
	key[unicode_utf8_encode(tok_byte_char(0x80), key)] = 0;
	c3 = tok_find(t, key);
	CHECK(e0 >= 0 && c3 >= 0);
	CHECK_EQ_INT(tok_stream_feed(&s, e0, chunk, sizeof chunk), 0);
	CHECK_EQ_INT(tok_stream_flush(&s, chunk, sizeof chunk), 3);
	CHECK(memcmp(chunk, "\xef\xbf\xbd", 3) == 0);
	int k = tok_stream_feed(&s, c3, chunk, sizeof chunk);
	CHECK_EQ_INT(k, 3);
	CHECK_EQ_INT(tok_stream_feed(&s, e0, chunk, 2), 0); /* held, nothing written */
	CHECK_EQ_INT(tok_stream_feed(&s, tok_find(t, "a"), chunk, 2), -ENOSPC);
	CHECK_EQ_INT(tok_stream_feed(&s, 100000, chunk, sizeof chunk), -EINVAL);
	free(ids);
}

/* Writes tokenizer.json (+ tokenizer_config.json) for the tiny vocabulary, as Hugging Face lays it out,
 * with the normalizer given as JSON (NULL: none). */
static void write_hf_json(const struct tokenizer *t, const struct gguf *g, const char *dir, const char *normalizer)
{
	cJSON *root = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
	cJSON *merges = cJSON_CreateArray(), *added = cJSON_CreateArray();
	for (size_t i = 0; i < tok_vocab_size(t); i++) {
		if (tok_token_type(t, (int32_t)i) == TOK_TYPE_CONTROL) {
			cJSON *a = cJSON_CreateObject();
			cJSON_AddNumberToObject(a, "id", (double)i);
			cJSON_AddStringToObject(a, "content", tok_piece(t, (int32_t)i));
			cJSON_AddBoolToObject(a, "special", 1);
			cJSON_AddItemToArray(added, a);
		} else {
			cJSON_AddNumberToObject(vocab, tok_piece(t, (int32_t)i), (double)i);
		}
	}
	long mi = gguf_find_key(g, "tokenizer.ggml.merges");
	for (size_t i = 0; i < gguf_kv_array_len(g, (size_t)mi); i++) {
		/* half as "a b", half as ["a", "b"]: both forms occur in the wild */
		const char *m = gguf_get_arr_str(g, (size_t)mi, i);
		if (i % 2) {
			cJSON_AddItemToArray(merges, cJSON_CreateString(m));
		} else {
			const char *sp = strchr(m + 1, ' ');
			char left[64];
			snprintf(left, sizeof left, "%.*s", (int)(sp - m), m);
			cJSON *pair = cJSON_CreateArray();
			cJSON_AddItemToArray(pair, cJSON_CreateString(left));
			cJSON_AddItemToArray(pair, cJSON_CreateString(sp + 1));
			cJSON_AddItemToArray(merges, pair);
		}
	}
	cJSON_AddStringToObject(model, "type", "BPE");
	cJSON_AddItemToObject(model, "vocab", vocab);
	cJSON_AddItemToObject(model, "merges", merges);
	cJSON_AddItemToObject(root, "model", model);
	cJSON_AddItemToObject(root, "added_tokens", added);
	cJSON *pt = cJSON_CreateObject(), *seq = cJSON_CreateArray(), *split = cJSON_CreateObject(),
	      *pat = cJSON_CreateObject(), *bl = cJSON_CreateObject();
	cJSON_AddStringToObject(pt, "type", "Sequence");
	cJSON_AddStringToObject(split, "type", "Split");
	cJSON_AddStringToObject(pat, "Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
					      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
	cJSON_AddItemToObject(split, "pattern", pat);
	cJSON_AddStringToObject(bl, "type", "ByteLevel");
	cJSON_AddBoolToObject(bl, "use_regex", 0);
	cJSON_AddItemToArray(seq, split);
	cJSON_AddItemToArray(seq, bl);
	cJSON_AddItemToObject(pt, "pretokenizers", seq);
	cJSON_AddItemToObject(root, "pre_tokenizer", pt);
	if (normalizer)
		cJSON_AddItemToObject(root, "normalizer", cJSON_Parse(normalizer));
	char path[600];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	char *s = cJSON_Print(root);
	FILE *f = fopen(path, "w");
	fputs(s, f);
	fclose(f);
	free(s);
	cJSON_Delete(root);
	snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	f = fopen(path, "w");
	fputs("{\"bos_token\": null, \"eos_token\": {\"content\": \"<|im_end|>\"}, \"add_bos_token\": false}", f);
	fclose(f);
}

static void test_tiny(void)
{
	char err[512];
	const char *p1 = write_tiny("tiny1.gguf");
	const char *p2 = write_tiny("tiny2.gguf");
	size_t n1, n2;
	char *b1 = test_slurp(p1, &n1), *b2 = test_slurp(p2, &n2);
	CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0); /* deterministic */
	free(b1);
	free(b2);
	struct gguf *g = gguf_open(p1, err, sizeof err);
	CHECK(g != NULL);
	if (!g)
		return;
	struct tokenizer *t = tok_load_gguf(g, err, sizeof err);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s\n", err);
		gguf_close(g);
		return;
	}
	CHECK_EQ_INT(tok_vocab_size(t), 512);
	CHECK_EQ_INT(tok_model_kind(t), TOK_MODEL_BPE);
	CHECK_EQ_INT(tok_pre_kind(t), TOK_PRE_QWEN2);
	int32_t ims = tok_find(t, "<|im_start|>"), ime = tok_find(t, "<|im_end|>"), eot = tok_find(t, "<|endoftext|>");
	CHECK_EQ_INT(eot, 509);
	CHECK_EQ_INT(ims, 510);
	CHECK_EQ_INT(ime, 511);
	CHECK_EQ_INT(tok_token_type(t, ims), TOK_TYPE_CONTROL);
	CHECK_EQ_INT(tok_eos(t), ime);
	CHECK_EQ_INT(tok_bos(t), eot);
	CHECK(!tok_add_bos(t));
	CHECK(tok_is_eog(t, ime) && tok_is_eog(t, eot) && !tok_is_eog(t, ims) && !tok_is_eog(t, 65));
	CHECK_EQ_INT(gguf_kv_array_len(g, (size_t)gguf_find_key(g, "tokenizer.ggml.merges")), 512 - 259);
	CHECK(tok_find(t, "\xc4\xa0the") >= 256); /* " the" is among the learnt tokens */

	/* the corpus compresses and round-trips */
	int32_t *ids;
	size_t n;
	CHECK_EQ_INT(tok_encode(t, tok_tiny_corpus, strlen(tok_tiny_corpus), false, false, &ids, &n), 0);
	CHECK(n > 0 && n * 2 < strlen(tok_tiny_corpus));
	char *back;
	size_t bl;
	CHECK_EQ_INT(tok_decode(t, ids, n, false, &back, &bl), 0);
	CHECK_EQ_INT(bl, strlen(tok_tiny_corpus));
	CHECK(memcmp(back, tok_tiny_corpus, bl) == 0);
	free(back);
	free(ids);
	check_round_trip(t, "Unseen words: quizzical zephyrs, 12345, \xc3\xa9t\xc3\xa9 \xf0\x9f\xa6\x99\r\n\tend", false);
	check_round_trip(t, "", false);

	/* special tokens: parsed only when asked; decoded only when asked */
	const char *chat = "<|im_start|>user\nHi there<|im_end|>\n";
	CHECK_EQ_INT(tok_encode(t, chat, strlen(chat), true, true, &ids, &n), 0);
	CHECK(n >= 4 && ids[0] == ims && ids[n - 2] == ime);
	CHECK_EQ_INT(tok_decode(t, ids, n, false, &back, &bl), 0);
	CHECK_EQ_STR(back, "user\nHi there\n");
	free(back);
	CHECK_EQ_INT(tok_decode(t, ids, n, true, &back, &bl), 0);
	CHECK_EQ_STR(back, chat);
	free(back);
	free(ids);
	CHECK_EQ_INT(tok_encode(t, chat, strlen(chat), false, false, &ids, &n), 0);
	for (size_t i = 0; i < n; i++)
		CHECK(ids[i] != ims && ids[i] != ime);
	free(ids);
	check_round_trip(t, chat, false);
	check_round_trip(t, "<|im_start|><|im_start|>x<|im_end|", true);

	test_stream(t);

	/* bad input */
	const char bad[] = "ok \xc3\x28 then";
	CHECK_EQ_INT(tok_encode(t, bad, sizeof bad - 1, false, false, &ids, &n), -EILSEQ);
	CHECK_EQ_INT(tok_utf8_error_offset(bad, sizeof bad - 1), 3);
	int32_t oob = 512;
	CHECK_EQ_INT(tok_decode(t, &oob, 1, false, &back, &bl), -EINVAL);

	/* the same vocabulary from a Hugging Face tokenizer.json gives the same ids */
	char dir[300];
	snprintf(dir, sizeof dir, "%s", tmpdir);
	write_hf_json(t, g, dir, NULL);
	char jpath[600];
	snprintf(jpath, sizeof jpath, "%s/tokenizer.json", dir);
	struct tokenizer *h = tok_load_hf_json(jpath, err, sizeof err);
	CHECK(h != NULL);
	if (h) {
		CHECK_EQ_INT(tok_vocab_size(h), 512);
		CHECK_EQ_INT(tok_eos(h), ime);
		CHECK_EQ_INT(tok_bos(h), -1);
		const char *texts[] = {tok_tiny_corpus, chat, "Unseen: quizzical zephyrs 12345 \xc3\xa9t\xc3\xa9"};
		for (int k = 0; k < 3; k++) {
			int32_t *a, *b;
			size_t na, nb;
			CHECK_EQ_INT(tok_encode(t, texts[k], strlen(texts[k]), false, true, &a, &na), 0);
			CHECK_EQ_INT(tok_encode(h, texts[k], strlen(texts[k]), false, true, &b, &nb), 0);
			CHECK(na == nb && memcmp(a, b, na * sizeof *a) == 0);
			free(a);
			free(b);
		}
		tok_destroy(h);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	/* A GGUF vocabulary has no normalizer (llama.cpp applies none): a decomposed accent gives
	 * other ids than the composed one. The same vocabulary as a tokenizer.json with Qwen3's NFC
	 * normalizer gives the composed spelling's ids for both. */
	write_hf_json(t, g, dir, "{\"type\": \"NFC\"}");
	h = tok_load_hf_json(jpath, err, sizeof err);
	if (CHECK(h != NULL)) {
		static const char composed[] = "caf\xc3\xa9 \xe2\x84\xab", decomposed[] = "cafe\xcc\x81 A\xcc\x8a";
		int32_t *gc, *gd, *hc, *hd;
		size_t ngc, ngd, nhc, nhd;
		CHECK_EQ_INT(tok_encode(t, composed, strlen(composed), false, true, &gc, &ngc), 0);
		CHECK_EQ_INT(tok_encode(t, decomposed, strlen(decomposed), false, true, &gd, &ngd), 0);
		CHECK_EQ_INT(tok_encode(h, composed, strlen(composed), false, true, &hc, &nhc), 0);
		CHECK_EQ_INT(tok_encode(h, decomposed, strlen(decomposed), false, true, &hd, &nhd), 0);
		CHECK(!(ngc == ngd && memcmp(gc, gd, ngc * sizeof *gc) == 0)); /* GGUF: as written */
		CHECK(nhc == nhd && memcmp(hc, hd, nhc * sizeof *hc) == 0);     /* NFC: the same */
		/* U+212B ANGSTROM SIGN is NFC U+00C5, which the GGUF gets only from the composed letter */
		static const char nfc[] = "caf\xc3\xa9 \xc3\x85";
		int32_t *gn;
		size_t ngn;
		CHECK_EQ_INT(tok_encode(t, nfc, strlen(nfc), false, true, &gn, &ngn), 0);
		CHECK(ngn == nhc && memcmp(gn, hc, ngn * sizeof *gn) == 0);
		free(gc);
		free(gd);
		free(hc);
		free(hd);
		free(gn);
		tok_destroy(h);
	}
	FILE *f = fopen(jpath, "w");
	fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}", f);
	fclose(f);
	CHECK(tok_load_hf_json(jpath, err, sizeof err) == NULL);
	CHECK(strstr(err, "model.merges: missing") != NULL);
	f = fopen(jpath, "w");
	fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 900000000}, \"merges\": []}, "
	      "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}", f);
	fclose(f);
	CHECK(tok_load_hf_json(jpath, err, sizeof err) == NULL);
	CHECK(strstr(err, "ids reach 900000000 but there are only 2 tokens") != NULL);
	f = fopen(jpath, "w");
	fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	      "\"pre_tokenizer\": {\"type\": \"Metaspace\"}}", f);
	fclose(f);
	CHECK(tok_load_hf_json(jpath, err, sizeof err) == NULL);
	CHECK(strstr(err, "a Metaspace that splits words is not supported") != NULL);
	f = fopen(jpath, "w");
	fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
	      "\"pre_tokenizer\": {\"type\": \"Whitespace\"}}", f);
	fclose(f);
	CHECK(tok_load_hf_json(jpath, err, sizeof err) == NULL);
	CHECK(strstr(err, "pre_tokenizer: not a byte-level split") != NULL);
	f = fopen(jpath, "w");
	fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []", f);
	fclose(f);
	CHECK(tok_load_hf_json(jpath, err, sizeof err) == NULL);
	CHECK(strstr(err, "tokenizer.json") != NULL);

	tok_destroy(t);
	gguf_close(g);
}

/* ---- a hand-built SentencePiece vocabulary ---- */

enum { SPM_HELLO = 268 };

static struct tokenizer *make_spm(char *err, size_t errlen)
{
	const char *extra[] = {"\xe2\x96\x81", "h", "e", "l", "o", "\xe2\x96\x81h", "\xe2\x96\x81he", "ll", "llo",
			       "\xe2\x96\x81hello", "he"};
	float extra_score[] = {-10, -10, -10, -10, -10, -1, -3, -2, -4, -5, -0.5f};
	size_t n = 3 + 256 + 11;
	const char **toks = calloc(n, sizeof *toks);
	char (*bytes)[8] = calloc(256, sizeof *bytes);
	float *scores = calloc(n, sizeof *scores);
	int32_t *types = calloc(n, sizeof *types);
	toks[0] = "<unk>", types[0] = TOK_TYPE_UNKNOWN;
	toks[1] = "<s>", types[1] = TOK_TYPE_CONTROL;
	toks[2] = "</s>", types[2] = TOK_TYPE_CONTROL;
	for (int b = 0; b < 256; b++) {
		snprintf(bytes[b], 8, "<0x%02X>", b);
		toks[3 + b] = bytes[b];
		types[3 + b] = TOK_TYPE_BYTE;
	}
	for (int i = 0; i < 11; i++) {
		toks[259 + i] = extra[i];
		scores[259 + i] = extra_score[i];
		types[259 + i] = TOK_TYPE_NORMAL;
	}
	struct gguf_writer *w = gguf_writer_create();
	int rc = gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
	rc |= gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, n);
	rc |= gguf_writer_set_arr_num(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, n);
	rc |= gguf_writer_set_arr_num(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, n);
	const char *path = tmp_path("spm.gguf");
	rc |= gguf_writer_write(w, path, err, errlen);
	CHECK_EQ_INT(rc, 0);
	gguf_writer_destroy(w);
	free(toks);
	free(bytes);
	free(scores);
	free(types);
	return load_gguf_file(path, err, errlen);
}

static void check_ids(const struct tokenizer *t, const char *text, bool add_special, bool parse_special,
		      const int32_t *want, size_t n_want)
{
	int32_t *ids;
	size_t n;
	int rc = tok_encode(t, text, strlen(text), add_special, parse_special, &ids, &n);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		return;
	int ok = n == n_want && memcmp(ids, want, n * sizeof *ids) == 0;
	CHECK(ok);
	if (!ok) {
		fprintf(stderr, "\"%s\": got", text);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %d", (int)ids[i]);
		fprintf(stderr, "\n");
	}
	free(ids);
}

static void test_spm(void)
{
	char err[512];
	struct tokenizer *t = make_spm(err, sizeof err);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	CHECK_EQ_INT(tok_model_kind(t), TOK_MODEL_SPM);
	CHECK_EQ_INT(tok_bos(t), 1);
	CHECK_EQ_INT(tok_eos(t), 2);
	CHECK(tok_add_bos(t));
	/* "he" (-0.5) merges first, then "ll", "▁he", "llo", "▁hello" */
	check_ids(t, "hello", false, false, (const int32_t[]){SPM_HELLO}, 1);
	check_ids(t, "hello", true, false, (const int32_t[]){1, SPM_HELLO}, 2);
	/* "▁hi": "▁h" then i has no token: byte fallback <0x69> */
	check_ids(t, "hello hi", false, false, (const int32_t[]){SPM_HELLO, 264, 3 + 0x69}, 3);
	/* a special token in the text: parsed, and the text after it gets the space prefix */
	check_ids(t, "<s>hello", false, true, (const int32_t[]){1, SPM_HELLO}, 2);
	check_ids(t, "<s>hello", false, false, (const int32_t[]){259, 3 + '<', 3 + 's', 3 + '>', 269, 267}, 6);
	check_ids(t, "\xc3\xa9", false, false, (const int32_t[]){259, 3 + 0xc3, 3 + 0xa9}, 3);
	check_ids(t, "", true, false, (const int32_t[]){1}, 1);
	const char *texts[] = {"hello hi", " leading", "\xc3\xa9t\xc3\xa9\n\ttabs", "<s>x", ""};
	for (int i = 0; i < 5; i++)
		check_round_trip(t, texts[i], false);
	char *back;
	size_t bl;
	int32_t with_bos[] = {1, SPM_HELLO, 2};
	CHECK_EQ_INT(tok_decode(t, with_bos, 3, false, &back, &bl), 0);
	CHECK_EQ_STR(back, " hello"); /* the first token (BOS) takes the space strip, as llama.cpp */
	free(back);
	CHECK_EQ_INT(tok_decode(t, with_bos, 3, true, &back, &bl), 0);
	CHECK_EQ_STR(back, "<s> hello</s>");
	free(back);
	struct tok_stream s;
	char chunk[32];
	tok_stream_init(&s, t, false);
	CHECK_EQ_INT(tok_stream_feed(&s, SPM_HELLO, chunk, sizeof chunk), 5);
	CHECK(memcmp(chunk, "hello", 5) == 0);
	CHECK_EQ_INT(tok_stream_feed(&s, 259, chunk, sizeof chunk), 1);
	CHECK_EQ_INT(tok_stream_feed(&s, 3 + 0xc3, chunk, sizeof chunk), 0);
	CHECK_EQ_INT(tok_stream_feed(&s, 3 + 0xa9, chunk, sizeof chunk), 2);
	CHECK(memcmp(chunk, "\xc3\xa9", 2) == 0);

	/* the same vocabulary as a SentencePiece-style tokenizer.json: merges by rank (listed in the
	 * score order above), Metaspace with prepend_scheme "always" or "first" */
	static const char *const schemes[] = {"always", "first"};
	for (int k = 0; k < 2; k++) {
		cJSON *root = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
		cJSON *added = cJSON_CreateArray();
		for (size_t i = 0; i < tok_vocab_size(t); i++) {
			cJSON_AddNumberToObject(vocab, tok_piece(t, (int32_t)i), (double)i);
			if (i == 1 || i == 2) {
				cJSON *a = cJSON_CreateObject();
				cJSON_AddNumberToObject(a, "id", (double)i);
				cJSON_AddStringToObject(a, "content", tok_piece(t, (int32_t)i));
				cJSON_AddBoolToObject(a, "special", 1);
				cJSON_AddItemToArray(added, a);
			}
		}
		cJSON_AddStringToObject(model, "type", "BPE");
		cJSON_AddBoolToObject(model, "byte_fallback", 1);
		cJSON_AddStringToObject(model, "unk_token", "<unk>");
		cJSON_AddItemToObject(model, "vocab", vocab);
		cJSON_AddItemToObject(model, "merges", cJSON_Parse("[\"h e\", \"\u2581 h\", \"l l\", \"\u2581h e\", "
								   "\"\u2581 he\", \"ll o\", \"\u2581he llo\"]"));
		cJSON_AddItemToObject(root, "model", model);
		cJSON_AddItemToObject(root, "added_tokens", added);
		cJSON *pt = cJSON_CreateObject();
		cJSON_AddStringToObject(pt, "type", "Metaspace");
		cJSON_AddStringToObject(pt, "prepend_scheme", schemes[k]);
		cJSON_AddBoolToObject(pt, "split", 0);
		cJSON_AddItemToObject(root, "pre_tokenizer", pt);
		char jpath[600];
		snprintf(jpath, sizeof jpath, "%s", tmp_path("tokenizer.json"));
		char *js = cJSON_Print(root);
		FILE *f = fopen(jpath, "w");
		fputs(js, f);
		fclose(f);
		free(js);
		cJSON_Delete(root);
		struct tokenizer *h = tok_load_hf_json(jpath, err, sizeof err);
		CHECK(h != NULL);
		if (!h) {
			fprintf(stderr, "%s\n", err);
			continue;
		}
		CHECK_EQ_INT(tok_model_kind(h), TOK_MODEL_SPM);
		check_ids(h, "hello hi", false, false, (const int32_t[]){SPM_HELLO, 264, 3 + 0x69}, 3);
		check_ids(h, "\xc3\xa9", false, false, (const int32_t[]){259, 3 + 0xc3, 3 + 0xa9}, 3);
		if (k == 0)
			check_ids(h, "<s>hello", false, true, (const int32_t[]){1, SPM_HELLO}, 2);
		else /* "first": no space prefix after a special token */
			check_ids(h, "<s>hello", false, true, (const int32_t[]){1, 269, 267}, 3);
		check_round_trip(h, "hello hi \xc3\xa9", false);
		tok_destroy(h);
	}
	tok_destroy(t);
}

/* ---- broken vocabularies ---- */

static void expect_load_error(struct gguf_writer *w, const char *name, const char *substring)
{
	char err[512] = "";
	const char *path = tmp_path(name);
	CHECK_EQ_INT(gguf_writer_write(w, path, err, sizeof err), 0);
	struct tokenizer *t = load_gguf_file(path, err, sizeof err);
	CHECK(t == NULL);
	if (!strstr(err, substring)) {
		fprintf(stderr, "%s: expected error containing '%s', got '%s'\n", name, substring, err);
		CHECK(0);
	}
	tok_destroy(t);
}

static void test_bad_vocab(void)
{
	const char *toks[] = {"a", "b", "ab"};
	const char *merges_bad[] = {"ab"};
	int32_t types_bad[] = {1, 1, 9};
	struct gguf_writer *w = gguf_writer_create();
	expect_load_error(w, "none.gguf", "tokenizer.ggml.model: missing");
	CHECK_EQ_INT(gguf_writer_set_str(w, "tokenizer.ggml.model", "bert"), 0);
	expect_load_error(w, "bert.gguf", "'bert' is not supported");
	CHECK_EQ_INT(gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"), 0);
	expect_load_error(w, "notoks.gguf", "tokenizer.ggml.tokens: missing");
	CHECK_EQ_INT(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3), 0);
	expect_load_error(w, "nomerges.gguf", "tokenizer.ggml.merges: missing");
	CHECK_EQ_INT(gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges_bad, 1), 0);
	expect_load_error(w, "badmerge.gguf", "tokenizer.ggml.merges[0]: 'ab' is not two tokens");
	const char *merges_ok[] = {"a b"};
	CHECK_EQ_INT(gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges_ok, 1), 0);
	CHECK_EQ_INT(gguf_writer_set_arr_num(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types_bad, 3), 0);
	expect_load_error(w, "badtype.gguf", "tokenizer.ggml.token_type[2]");
	CHECK_EQ_INT(gguf_writer_set_arr_num(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types_bad, 2), 0);
	expect_load_error(w, "shorttype.gguf", "tokenizer.ggml.token_type: must be an array of 3");
	int32_t types_ok[] = {1, 1, 1};
	CHECK_EQ_INT(gguf_writer_set_arr_num(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types_ok, 3), 0);
	CHECK_EQ_INT(gguf_writer_set_str(w, "tokenizer.ggml.pre", "klingon"), 0);
	expect_load_error(w, "badpre.gguf", "tokenizer.ggml.pre: 'klingon' is not supported");
	CHECK_EQ_INT(gguf_writer_set_str(w, "tokenizer.ggml.pre", "qwen2"), 0);
	CHECK_EQ_INT(gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 7), 0);
	expect_load_error(w, "badeos.gguf", "tokenizer.ggml.eos_token_id: id 7 is outside the vocabulary (3 tokens)");
	CHECK_EQ_INT(gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2), 0);
	CHECK_EQ_INT(gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true), 0);
	expect_load_error(w, "nobos.gguf", "add_bos_token: true but the vocabulary has no BOS");
	CHECK_EQ_INT(gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false), 0);

	/* llama3 takes a piece whole when it is a token (ignore_merges); qwen2 merges it */
	{
		const char *tk[] = {"a", "b", "c", "ab", "abc"};
		const char *mg[] = {"a b"};
		char e2[512];
		struct gguf_writer *w2 = gguf_writer_create();
		int rc = gguf_writer_set_str(w2, "tokenizer.ggml.model", "gpt2");
		rc |= gguf_writer_set_arr_str(w2, "tokenizer.ggml.tokens", tk, 5);
		rc |= gguf_writer_set_arr_str(w2, "tokenizer.ggml.merges", mg, 1);
		rc |= gguf_writer_set_u32(w2, "tokenizer.ggml.bos_token_id", 0);
		for (int k = 0; k < 2; k++) {
			rc |= gguf_writer_set_str(w2, "tokenizer.ggml.pre", k ? "llama3" : "qwen2");
			const char *p2 = tmp_path("whole.gguf");
			rc |= gguf_writer_write(w2, p2, e2, sizeof e2);
			struct tokenizer *t2 = load_gguf_file(p2, e2, sizeof e2);
			CHECK(t2 != NULL);
			if (!t2)
				continue;
			if (k) {
				CHECK(tok_add_bos(t2)); /* llama3's default */
				check_ids(t2, "abc", false, false, (const int32_t[]){4}, 1);
			} else {
				CHECK(!tok_add_bos(t2));
				check_ids(t2, "abc", false, false, (const int32_t[]){3, 2}, 2);
			}
			tok_destroy(t2);
		}
		CHECK_EQ_INT(rc, 0);
		gguf_writer_destroy(w2);
	}

	/* a vocabulary lacking byte tokens: encoding text it cannot spell is an error, not a crash */
	char err[512];
	const char *path = tmp_path("ab.gguf");
	CHECK_EQ_INT(gguf_writer_write(w, path, err, sizeof err), 0);
	struct tokenizer *t = load_gguf_file(path, err, sizeof err);
	CHECK(t != NULL);
	if (t) {
		check_ids(t, "abab", false, false, (const int32_t[]){2, 2}, 2);
		int32_t *ids;
		size_t n;
		CHECK_EQ_INT(tok_encode(t, "abc", 3, false, false, &ids, &n), -ENOENT);
		tok_destroy(t);
	}
	gguf_writer_destroy(w);
}

/* ---- the command ---- */

static int run_cmd(char **argv, int argc, char *out, size_t cap)
{
	fflush(stdout);
	int saved = dup(1);
	const char *path = tmp_path("cmd.out");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 1);
	close(fd);
	int rc = tok_cmd_main(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	size_t n;
	char *s = test_slurp(path, &n);
	snprintf(out, cap, "%s", s ? s : "");
	free(s);
	return rc;
}

static void test_cmd(void)
{
	char out[4096], gguf[600];
	snprintf(gguf, sizeof gguf, "%s", write_tiny("cmd.gguf"));
	char *a1[] = {"sixi-server", "--tokenize", (char *)gguf, "<|im_start|>hi", "--parse-special"};
	CHECK_EQ_INT(run_cmd(a1, 5, out, sizeof out), 0);
	CHECK(strncmp(out, "510 ", 4) == 0);
	char *a2[] = {"sixi-server", "--tokenize", (char *)gguf, "bad \xff"};
	CHECK_EQ_INT(run_cmd(a2, 4, out, sizeof out), 1);
	CHECK_EQ_STR(out, "");
	char *a3[] = {"sixi-server", "--tokenize", (char *)gguf};
	CHECK_EQ_INT(run_cmd(a3, 3, out, sizeof out), 2);
	char *a4[] = {"sixi-server", "--tokenize", "/nonexistent.gguf", "x"};
	CHECK_EQ_INT(run_cmd(a4, 4, out, sizeof out), 1);
	char *a5[] = {"sixi-server", "--detokenize", (char *)gguf, "510", "72", "105", "--special"};
	CHECK_EQ_INT(run_cmd(a5, 7, out, sizeof out), 0);
	CHECK_EQ_STR(out, "<|im_start|>Hi\n");
	/* TEXT "-": the text from standard input, the same ids as on the command line */
	char want[4096];
	CHECK_EQ_INT(run_cmd(a1, 5, want, sizeof want), 0);
	const char *in = tmp_path("cmd.in");
	FILE *f = fopen(in, "w");
	fputs("<|im_start|>hi", f);
	fclose(f);
	fflush(stdin);
	int saved = dup(0), fd = open(in, O_RDONLY);
	dup2(fd, 0);
	close(fd);
	clearerr(stdin);
	char *a6[] = {"sixi-server", "--tokenize", (char *)gguf, "-", "--parse-special"};
	CHECK_EQ_INT(run_cmd(a6, 5, out, sizeof out), 0);
	dup2(saved, 0);
	close(saved);
	clearerr(stdin);
	CHECK_EQ_STR(out, want);
}

int main(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(tmpdir, sizeof tmpdir, "%s/test_tokenizer.XXXXXX", base);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_byte_alphabet();
	test_splits();
	test_splits_shared();
	test_tiny();
	test_spm();
	test_bad_vocab();
	test_cmd();
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return test_done();
}
