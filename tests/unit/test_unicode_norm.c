/* test_unicode_norm — Unicode normalization (unicode_norm.h) and tokenizer.json
 * normalizers (tokenizer_norm.h):
 *   - golden triples in tests/fixtures/tokenizer/normalizers.test (normalizer, input,
 *     expected output or the error a refused normalizer must give);
 *   - invalid UTF-8 refused, and a tokenizer.json whose normalizer is unknown refused
 *     with a message naming it.
 * With --lines it is the C side of test_unicode_norm.py: reads lines of space-separated
 * hexadecimal code points on stdin and writes "NFC;NFD;NFKC;NFKD;lowercase;ccc" per line
 * (the same hex form; ccc of the first code point), which Python checks against
 * unicodedata for every code point; --version prints the tables' Unicode version. */
#include "test.h"

#include <cjson/cJSON.h>
#include <unistd.h>

#include "text/tokenizer.h"
#include "text/tokenizer_norm.h"
#include "text/unicode.h"
#include "text/unicode_norm.h"

/* ---- --lines: the Python comparison's C side ---- */

static void put_hex(const char *s, size_t n)
{
	bool first = true;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = unicode_utf8_decode(s + i, n - i, &cp);
		if (!k)
			break;
		printf(first ? "%04X" : " %04X", (unsigned)cp);
		first = false;
		i += k;
	}
}

static int run_lines(void)
{
	static const enum unicode_form forms[] = {UNICODE_NFC, UNICODE_NFD, UNICODE_NFKC, UNICODE_NFKD};
	char line[1024], text[1024];
	while (fgets(line, sizeof line, stdin)) {
		size_t n = 0;
		uint32_t first = 0;
		char *p = line, *end;
		for (unsigned long cp; (cp = strtoul(p, &end, 16)), end != p; p = end) {
			if (!n)
				first = (uint32_t)cp;
			n += unicode_utf8_encode((uint32_t)cp, text + n);
			if (n > sizeof text - 8)
				break;
		}
		for (size_t f = 0; f < 4; f++) {
			char *out;
			size_t len;
			if (unicode_normalize(forms[f], text, n, &out, &len)) {
				fprintf(stderr, "unicode_normalize failed on %s", line);
				return 1;
			}
			put_hex(out, len);
			putchar(';');
			free(out);
		}
		char *out;
		size_t len;
		if (unicode_lowercase(text, n, &out, &len)) {
			fprintf(stderr, "unicode_lowercase failed on %s", line);
			return 1;
		}
		put_hex(out, len);
		free(out);
		printf(";%u\n", unicode_ccc(first));
	}
	return fflush(stdout) ? 1 : 0;
}

/* ---- golden triples ---- */

/* The SUBSTRING of an expected {"error": SUBSTRING}, or NULL for an expected string. */
static const char *json_error(const cJSON *exp)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(exp, "error");
	return cJSON_IsString(e) ? e->valuestring : NULL;
}

static int check_triples(void)
{
	char *all = test_slurp(test_src_path("tests/fixtures/tokenizer/normalizers.test"), NULL);
	CHECK(all != NULL);
	if (!all)
		return 0;
	const char *lines[3], *name = "";
	int have = 0, cases = 0;
	for (char *save = NULL, *l = strtok_r(all, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#') {
			name = l;
			continue;
		}
		lines[have++] = l;
		if (have < 3)
			continue;
		have = 0;
		cases++;
		cJSON *norm = cJSON_Parse(lines[0]), *in = cJSON_Parse(lines[1]), *exp = cJSON_Parse(lines[2]);
		CHECK(norm && cJSON_IsString(in) && exp);
		struct tok_norm *nm = NULL;
		char err[512] = "";
		int rc = norm ? tok_norm_from_json(norm, &nm, err, sizeof err) : -EINVAL;
		const char *want_err = json_error(exp);
		if (want_err) {
			if (!CHECK(rc == -EINVAL && strstr(err, want_err)))
				fprintf(stderr, "  case '%s': error '%s', expected one containing '%s'\n", name, err, want_err);
		} else if (CHECK_EQ_INT(rc, 0) && cJSON_IsString(in) && cJSON_IsString(exp)) {
			char *out = NULL;
			size_t len = 0;
			CHECK_EQ_INT(tok_norm_apply(nm, in->valuestring, strlen(in->valuestring), &out, &len), 0);
			if (!CHECK(out && len == strlen(exp->valuestring) && memcmp(out, exp->valuestring, len) == 0))
				fprintf(stderr, "  case '%s': got \"%s\", expected \"%s\"\n", name, out ? out : "(null)",
					exp->valuestring);
			free(out);
		}
		tok_norm_destroy(nm);
		cJSON_Delete(norm);
		cJSON_Delete(in);
		cJSON_Delete(exp);
	}
	free(all);
	return cases;
}

/* ---- normalizers inside a tokenizer.json ---- */

/* A byte-level tokenizer.json: one token per byte (ids 0..255 = the bytes), no merges, the
 * given normalizer, and two added tokens: id 256 "<e\u0301>" special (never normalized), id 257
 * "\u00e9X" normalized (matched in the normalized text). */
static const char *write_json(const char *normalizer)
{
	static char path[512];
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof path, "%s/test_unicode_norm_%d.json", base, (int)getpid());
	cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
	cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
	cJSON_AddStringToObject(model, "type", "BPE");
	cJSON_AddArrayToObject(model, "merges");
	for (unsigned b = 0; b < 256; b++) {
		char key[8] = {0};
		unicode_utf8_encode(tok_byte_char((unsigned char)b), key);
		cJSON_AddNumberToObject(vocab, key, b);
	}
	cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
	cJSON_AddItemToArray(added, cJSON_Parse("{\"id\": 256, \"content\": \"<e\\u0301>\", \"special\": true, "
						"\"normalized\": false}"));
	cJSON_AddItemToArray(added, cJSON_Parse("{\"id\": 257, \"content\": \"\\u00e9X\", \"special\": false, "
						"\"normalized\": true}"));
	cJSON_AddItemToObject(root, "normalizer", cJSON_Parse(normalizer));
	cJSON_AddItemToObject(root, "pre_tokenizer", cJSON_Parse("{\"type\": \"ByteLevel\", \"use_regex\": true}"));
	char *text = cJSON_PrintUnformatted(root);
	FILE *f = fopen(path, "w");
	CHECK(f && text && fputs(text, f) >= 0);
	if (f)
		fclose(f);
	free(text);
	cJSON_Delete(root);
	return path;
}

/* ids of text as one string of bytes (ids < 256) and <N> for the added tokens. */
static void encode_str(const struct tokenizer *t, const char *text, char *out, size_t cap)
{
	int32_t *ids;
	size_t n, o = 0;
	out[0] = 0;
	if (!CHECK_EQ_INT(tok_encode(t, text, strlen(text), false, true, &ids, &n), 0))
		return;
	for (size_t i = 0; i < n && o + 8 < cap; i++)
		o += (size_t)(ids[i] < 256 ? snprintf(out + o, cap - o, "%c", (char)ids[i]) :
					     snprintf(out + o, cap - o, "<%d>", (int)ids[i]));
	free(ids);
}

static void check_tokenizer_json(void)
{
	char err[512], got[256];
	/* NFC: the decomposed and the composed spelling give the same ids */
	const char *path = write_json("{\"type\": \"NFC\"}");
	struct tokenizer *t = tok_load_hf_json(path, err, sizeof err);
	if (CHECK(t != NULL)) {
		encode_str(t, "caf" "e\xcc\x81", got, sizeof got);
		CHECK_EQ_STR(got, "caf\xc3\xa9");
		/* the special token's decomposed text is matched before normalizing */
		encode_str(t, "a<e\xcc\x81>b", got, sizeof got);
		CHECK_EQ_STR(got, "a<256>b");
		/* the normalized added token is matched in the normalized text: decomposed input finds it */
		encode_str(t, "-e\xcc\x81X-", got, sizeof got);
		CHECK_EQ_STR(got, "-<257>-");
		tok_destroy(t);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	/* no normalizer: bytes as written, and the normalized token only where spelled composed */
	path = write_json("null");
	t = tok_load_hf_json(path, err, sizeof err);
	if (CHECK(t != NULL)) {
		encode_str(t, "caf" "e\xcc\x81", got, sizeof got);
		CHECK_EQ_STR(got, "cafe\xcc\x81");
		encode_str(t, "-e\xcc\x81X-\xc3\xa9X", got, sizeof got);
		CHECK_EQ_STR(got, "-e\xcc\x81X-<257>");
		tok_destroy(t);
	}
	/* Sequence of Lowercase and Strip, per fragment between added tokens */
	path = write_json("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"}, "
			  "{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true}]}");
	t = tok_load_hf_json(path, err, sizeof err);
	if (CHECK(t != NULL)) {
		encode_str(t, " AB <e\xcc\x81> CD ", got, sizeof got);
		CHECK_EQ_STR(got, "ab<256>cd");
		tok_destroy(t);
	}
	/* an unknown normalizer: refused, the message names it and the file */
	path = write_json("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
			  "{\"type\": \"BertNormalizer\"}]}");
	err[0] = 0;
	CHECK(tok_load_hf_json(path, err, sizeof err) == NULL);
	CHECK(strstr(err, "normalizer.normalizers[1]: type 'BertNormalizer' is not supported") != NULL);
	CHECK(strstr(err, path) != NULL);
	unlink(path);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--lines") == 0)
		return run_lines();
	if (argc > 1 && strcmp(argv[1], "--version") == 0)
		return puts(unicode_data_version) < 0;
	int cases = check_triples();
	printf("%d golden triples (Unicode data %s)\n", cases, unicode_data_version);
	CHECK(cases >= 40);
	/* invalid UTF-8 is refused, nothing written */
	char *out = (char *)1;
	size_t len = 7;
	CHECK_EQ_INT(unicode_normalize(UNICODE_NFC, "a\xc3", 2, &out, &len), -EILSEQ);
	CHECK(out == NULL && len == 0);
	CHECK_EQ_INT(tok_norm_apply(NULL, "\xff", 1, &out, &len), -EILSEQ);
	check_tokenizer_json();
	return test_done();
}
