/* Tokenizer acceptance against llama.cpp's vocabulary test vectors in
 * ../shared/data/vocab (ggml-vocab-NAME.gguf with .inp/.out): every input encodes to
 * the expected ids (no BOS/EOS, special tokens not parsed, as llama.cpp's
 * test-tokenizer-0 runs) and decodes back to itself, at once and token by token. Skips when the files are absent. */
#include "test.h"
#include "gguf/gguf.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

#include <cjson/cJSON.h>
#include <unistd.h>


static const char sep[] = "\n__ggml_vocab_test__\n";

/* Runs the vectors of vocabulary NAME (path: its .gguf) through t; returns how many, and counts mismatches. */
static int run_vectors(const char *name, const char *path, const struct tokenizer *t, int *n_bad)
{
	char p2[4200];
	size_t ni, no;
	snprintf(p2, sizeof p2, "%s.inp", path);
	char *inp = test_slurp(p2, &ni);
	snprintf(p2, sizeof p2, "%s.out", path);
	char *out = test_slurp(p2, &no);
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
			/* token by token, only whole characters come out, and they add up to the input */
			struct tok_stream st;
			tok_stream_init(&st, t, false);
			char *acc = malloc(len + 1), chunk[512];
			size_t al = 0;
			for (size_t i = 0; i < n; i++) {
				int k = tok_stream_feed(&st, ids[i], chunk, sizeof chunk);
				if (k < 0 || al + (size_t)k > len || unicode_utf8_valid_prefix(chunk, (size_t)k) != (size_t)k) {
					bad++;
					fprintf(stderr, "%s vector %d: stream decode broke at token %zu\n", name, count, i);
					break;
				}
				memcpy(acc + al, chunk, (size_t)k);
				al += (size_t)k;
			}
			if (al != len || memcmp(acc, ip, len) != 0) {
				bad++;
				fprintf(stderr, "%s vector %d: stream decode differs\n", name, count);
			}
			free(acc);
			free(ids);
		}
		count++;
		op = eol ? eol + 1 : op + strlen(op);
		if (!end)
			break;
		ip = end + sizeof sep - 1;
	}
	free(inp);
	free(out);
	*n_bad = bad;
	return count;
}

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
	int bad, count = run_vectors(name, path, t, &bad);
	CHECK_EQ_INT(bad, 0);
	printf("%s: %d vectors, %d mismatches\n", name, count, bad);
	tok_destroy(t);
	return count;
}

/* ---- the llama-spm vocabulary as a Hugging Face tokenizer.json ----
 * Merges are derived the way Hugging Face's converter derives them from a SentencePiece
 * model: every split of a piece into two pieces of the vocabulary, ordered by the merged
 * piece's score (higher first), then by the ids of the two halves. */

struct merge_cand {
	float score;
	int32_t merged, left, right;
};

static int cmp_merge(const void *a, const void *b)
{
	const struct merge_cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->merged != y->merged)
		return x->merged < y->merged ? -1 : 1;
	if (x->left != y->left)
		return x->left < y->left ? -1 : 1;
	return (x->right > y->right) - (x->right < y->right);
}

static int check_spm_as_hf_json(void)
{
	char path[4096], err[512];
	snprintf(path, sizeof path, "%s", test_src_path("../shared/data/vocab/ggml-vocab-llama-spm.gguf"));
	if (access(path, R_OK) != 0)
		return -1;
	struct gguf *g = gguf_open(path, err, sizeof err);
	struct tokenizer *t = g ? tok_load_gguf(g, err, sizeof err) : NULL;
	CHECK(t != NULL);
	if (!t) {
		gguf_close(g);
		return 0;
	}
	long si = gguf_find_key(g, "tokenizer.ggml.scores");
	size_t nv = tok_vocab_size(t), nm = 0, cap = 1 << 16;
	struct merge_cand *m = malloc(cap * sizeof *m);
	cJSON *root = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
	cJSON *merges = cJSON_CreateArray(), *added = cJSON_CreateArray();
	for (size_t i = 0; i < nv; i++) {
		const char *piece = tok_piece(t, (int32_t)i);
		enum tok_type ty = tok_token_type(t, (int32_t)i);
		cJSON_AddNumberToObject(vocab, piece, (double)i);
		if (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_UNKNOWN) {
			cJSON *a = cJSON_CreateObject();
			cJSON_AddNumberToObject(a, "id", (double)i);
			cJSON_AddStringToObject(a, "content", piece);
			cJSON_AddBoolToObject(a, "special", 1);
			cJSON_AddItemToArray(added, a);
		}
		if (ty != TOK_TYPE_NORMAL)
			continue;
		double score = 0;
		gguf_get_arr_f64(g, (size_t)si, i, &score);
		size_t len = strlen(piece);
		for (size_t k = 1; k < len; k++) {
			if (((unsigned char)piece[k] & 0xc0) == 0x80)
				continue; /* split between characters only */
			char left[256];
			snprintf(left, sizeof left, "%.*s", (int)k, piece);
			int32_t l = tok_find(t, left), r = tok_find(t, piece + k);
			if (l < 0 || r < 0 || tok_token_type(t, l) != TOK_TYPE_NORMAL || tok_token_type(t, r) != TOK_TYPE_NORMAL)
				continue;
			if (nm == cap)
				m = realloc(m, (cap *= 2) * sizeof *m);
			m[nm++] = (struct merge_cand){(float)score, (int32_t)i, l, r};
		}
	}
	gguf_close(g);
	qsort(m, nm, sizeof *m, cmp_merge);
	for (size_t i = 0; i < nm; i++) {
		cJSON *pair = cJSON_CreateArray();
		cJSON_AddItemToArray(pair, cJSON_CreateString(tok_piece(t, m[i].left)));
		cJSON_AddItemToArray(pair, cJSON_CreateString(tok_piece(t, m[i].right)));
		cJSON_AddItemToArray(merges, pair);
	}
	free(m);
	cJSON_AddStringToObject(model, "type", "BPE");
	cJSON_AddBoolToObject(model, "byte_fallback", 1);
	cJSON_AddStringToObject(model, "unk_token", "<unk>");
	cJSON_AddItemToObject(model, "vocab", vocab);
	cJSON_AddItemToObject(model, "merges", merges);
	cJSON_AddItemToObject(root, "model", model);
	cJSON_AddItemToObject(root, "added_tokens", added);
	cJSON *norm = cJSON_Parse("{\"type\": \"Sequence\", \"normalizers\": ["
				  "{\"type\": \"Prepend\", \"prepend\": \"\u2581\"},"
				  "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]}");
	cJSON_AddItemToObject(root, "normalizer", norm);
	cJSON_AddNullToObject(root, "pre_tokenizer");
	tok_destroy(t);

	char dir[256], jpath[512];
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(dir, sizeof dir, "%s/test_tok_vocab.XXXXXX", base);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(jpath, sizeof jpath, "%s/tokenizer.json", dir);
	char *text = cJSON_PrintUnformatted(root);
	FILE *f = fopen(jpath, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	cJSON_Delete(root);
	snprintf(jpath, sizeof jpath, "%s/tokenizer_config.json", dir);
	f = fopen(jpath, "w");
	fputs("{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_bos_token\": true}", f);
	fclose(f);
	snprintf(jpath, sizeof jpath, "%s/tokenizer.json", dir);
	struct tokenizer *h = tok_load_hf_json(jpath, err, sizeof err);
	CHECK(h != NULL);
	int count = 0;
	if (h) {
		CHECK_EQ_INT(tok_model_kind(h), TOK_MODEL_SPM);
		CHECK_EQ_INT(tok_bos(h), 1);
		CHECK(tok_add_bos(h));
		int bad;
		count = run_vectors("llama-spm (tokenizer.json)", path, h, &bad);
		CHECK_EQ_INT(bad, 0);
		printf("llama-spm as tokenizer.json (%zu merges): %d vectors, %d mismatches\n", nm, count, bad);
		tok_destroy(h);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	unlink(jpath);
	snprintf(jpath, sizeof jpath, "%s/tokenizer_config.json", dir);
	unlink(jpath);
	rmdir(dir);
	return count;
}

int main(void)
{
	int a = check_vocab("gpt-2"), b = check_vocab("llama-spm"), c = check_spm_as_hf_json();
	if (a < 0 && b < 0)
		return test_skip("../shared/data/vocab is absent: llama.cpp's vocabulary vectors not checked");
	CHECK(a > 40 && b > 40 && c > 40);
	return test_done();
}
