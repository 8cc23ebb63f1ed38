/* import — see import.h. Sections: reading the input (plain, gzip, JSONL or a
 * JSON array), the converters (one per format), the Python compile check,
 * writing the folder, the command.
 *
 * The prompts say how to answer (one fenced code block, or a final "#### N"
 * line) because the graders read exactly that. Generated test code names its
 * helpers _sx_* so that they cannot collide with a model's own names. */
#include "datasets/import.h"
#include "core/args.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/err.h"
#include "datasets/task.h"
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ---- reading the input ------------------------------------------------------ */

struct rec {
	cJSON *o;
	long line; /* line in the file (JSONL) or entry number (JSON array), from 1 */
};

struct input {
	struct rec *recs;
	size_t n, cap;
	bool array; /* a JSON array: records are "entry N" */
};

static void input_finish(struct input *in)
{
	for (size_t i = 0; i < in->n; i++)
		cJSON_Delete(in->recs[i].o);
	free(in->recs);
	memset(in, 0, sizeof *in);
}

static int input_add(struct input *in, cJSON *o, long line)
{
	if (in->n == in->cap) {
		size_t nc = in->cap ? 2 * in->cap : 256;
		struct rec *r = realloc(in->recs, nc * sizeof *r);
		if (!r)
			return -ENOMEM;
		in->recs = r;
		in->cap = nc;
	}
	in->recs[in->n++] = (struct rec){o, line};
	return 0;
}

/* Reads the whole file through zlib (which passes plain files through). */
static int read_file(const char *path, struct buf *out, char *err, size_t errlen)
{
	gzFile gz = gzopen(path, "rb");
	if (!gz)
		return err_fail(err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot open");
	char chunk[65536];
	int n, rc = 0;
	while ((n = gzread(gz, chunk, sizeof chunk)) > 0)
		if (buf_append(out, chunk, (size_t)n)) {
			rc = err_fail(err, errlen, "%s: out of memory", path);
			break;
		}
	int zerr = Z_OK;
	const char *zmsg = gzerror(gz, &zerr);
	if (!rc && (n < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)))
		rc = err_fail(err, errlen,
				 "%s: the gzip data is damaged or truncated (zlib: %s); nothing was imported — "
				 "download the file again", path, zmsg && *zmsg ? zmsg : "read error");
	gzclose(gz);
	return rc;
}

static int read_input(const char *path, struct input *in, char *err, size_t errlen)
{
	struct buf b;
	buf_init(&b);
	int rc = read_file(path, &b, err, errlen);
	if (rc)
		goto out;
	if (b.len && memchr(b.data, 0, b.len)) {
		rc = err_fail(err, errlen, "%s: holds NUL bytes: not a JSON or JSONL text file (a compressed file "
					      "other than gzip?)", path);
		goto out;
	}
	size_t i = 0;
	while (i < b.len && isspace((unsigned char)b.data[i]))
		i++;
	char jerr[256];
	if (i < b.len && b.data[i] == '[') {
		/* one JSON array of records (sanitized MBPP's .json) */
		in->array = true;
		cJSON *a = json_parse_n(b.data, b.len, jerr, sizeof jerr);
		if (!a) {
			rc = err_fail(err, errlen, "%s: not valid JSON (%s)", path, jerr);
			goto out;
		}
		long k = 0;
		while (a->child) {
			cJSON *e = cJSON_DetachItemViaPointer(a, a->child);
			if (!cJSON_IsObject(e)) {
				cJSON_Delete(e);
				cJSON_Delete(a);
				rc = err_fail(err, errlen, "%s: entry %ld of the array is not a JSON object", path, k + 1);
				goto out;
			}
			if ((rc = input_add(in, e, ++k))) {
				cJSON_Delete(e);
				cJSON_Delete(a);
				goto out;
			}
		}
		cJSON_Delete(a);
		goto out;
	}
	long line = 0;
	for (size_t p = 0; p < b.len;) {
		char *nl = memchr(b.data + p, '\n', b.len - p);
		size_t len = nl ? (size_t)(nl - (b.data + p)) : b.len - p;
		line++;
		size_t q = 0;
		while (q < len && isspace((unsigned char)b.data[p + q]))
			q++;
		if (q < len) {
			cJSON *o = json_parse_n(b.data + p, len, jerr, sizeof jerr);
			if (!cJSON_IsObject(o)) {
				cJSON_Delete(o);
				rc = err_fail(err, errlen, "%s:%ld: not a JSON object (%s); a JSONL file has one JSON "
							      "object per line", path, line, o ? "another JSON value" : jerr);
				goto out;
			}
			if ((rc = input_add(in, o, line))) {
				cJSON_Delete(o);
				goto out;
			}
		}
		p += len + 1;
	}
out:
	buf_finish(&b);
	if (rc == -ENOMEM)
		err_fail(err, errlen, "%s: out of memory", path);
	return rc;
}

/* ---- helpers for the converters --------------------------------------------- */

struct conv {
	const char *path;   /* as the user gave it */
	const char *format;
	struct buf why;     /* why a record was refused */
};

__attribute__((format(printf, 2, 3))) static int refuse(struct conv *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_reset(&c->why);
	if (buf_vprintf(&c->why, fmt, ap)) {
	}
	va_end(ap);
	return -EINVAL;
}

/* A string field, or NULL. */
static const char *str(const cJSON *o, const char *key) { return json_get_str(o, key); }

/* A Python string literal holding s (JSON string syntax is a subset Python reads the same way). */
static char *py_literal(const char *s)
{
	cJSON *x = cJSON_CreateString(s);
	char *lit = x ? cJSON_PrintUnformatted(x) : NULL;
	cJSON_Delete(x);
	return lit;
}

/* Ids are kept when valid: A-Z a-z 0-9 _ - . / and at most 200 characters; anything else becomes '-'. */
static void clean_id(char *id)
{
	for (char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-./", *p))
			*p = '-';
	if (strlen(id) > 200)
		id[200] = 0;
}

static int set_str(cJSON *t, const char *key, const char *v)
{
	return cJSON_AddStringToObject(t, key, v) ? 0 : -ENOMEM;
}

static const char code_reply[] = "Reply with the whole solution in one ```python code block.";

/* ---- HumanEval --------------------------------------------------------------- */

static int conv_humaneval(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	const char *tid = str(in, "task_id"), *prompt = str(in, "prompt"), *sol = str(in, "canonical_solution"),
		   *test = str(in, "test"), *entry = str(in, "entry_point");
	(void)line;
	if (!tid || !prompt || !sol || !entry)
		return refuse(c, "needs string task_id, prompt, canonical_solution and entry_point");
	if (!test || !*test)
		return refuse(c, "task %s has no tests (\"test\" is missing or empty)", tid);
	struct buf b;
	buf_init(&b);
	int rc = buf_printf(&b, "Complete this Python function. Reply with the whole function (and its imports) in "
				"one ```python code block.\n\n```python\n%s```\n", prompt);
	char id[256];
	snprintf(id, sizeof id, "%s", tid);
	clean_id(id);
	rc = rc ? rc : set_str(t, "id", id);
	rc = rc ? rc : set_str(t, "prompt", b.data);
	rc = rc ? rc : set_str(t, "grader", "python_tests");
	rc = rc ? rc : set_str(t, "entry_point", entry);
	rc = rc ? rc : set_str(t, "tests", test);
	buf_reset(&b);
	rc = rc ? rc : buf_printf(&b, "%s%s", prompt, sol);
	rc = rc ? rc : set_str(t, "reference", b.data);
	buf_finish(&b);
	return rc;
}

/* ---- HumanEval+ (EvalPlus) ---------------------------------------------------- */

static const char plus_tests[] =
	"import copy as _sx_copy\n"
	"import json as _sx_json\n"
	"import math as _sx_math\n"
	"_sx_ref_ns = {}\n"
	"exec(compile(%s, 'reference.py', 'exec'), _sx_ref_ns)\n"
	"_sx_inputs = _sx_json.loads(%s)\n"
	"_sx_atol = %.17g\n"
	"\n"
	"\n"
	"def _sx_same(a, b):\n"
	"    if isinstance(a, float) or isinstance(b, float):\n"
	"        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):\n"
	"            if _sx_math.isnan(a) and _sx_math.isnan(b):\n"
	"                return True\n"
	"            return _sx_math.isclose(a, b, rel_tol=1e-9, abs_tol=max(_sx_atol, 1e-12))\n"
	"        return False\n"
	"    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):\n"
	"        return len(a) == len(b) and all(_sx_same(x, y) for x, y in zip(a, b))\n"
	"    return a == b\n"
	"\n"
	"\n"
	"def check(candidate):\n"
	"    ref = _sx_ref_ns[%s]\n"
	"    for i, args in enumerate(_sx_inputs):\n"
	"        want = ref(*_sx_copy.deepcopy(args))\n"
	"        got = candidate(*_sx_copy.deepcopy(args))\n"
	"        assert _sx_same(got, want), 'input %%d %%.200r: expected %%.200r, got %%.200r' %% (i, args, want, got)\n";

static int conv_humanevalplus(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	(void)line;
	const char *tid = str(in, "task_id"), *prompt = str(in, "prompt"), *sol = str(in, "canonical_solution"),
		   *entry = str(in, "entry_point");
	const cJSON *base = cJSON_GetObjectItemCaseSensitive(in, "base_input"),
		    *plus = cJSON_GetObjectItemCaseSensitive(in, "plus_input");
	if (!tid || !prompt || !sol || !entry)
		return refuse(c, "needs string task_id, prompt, canonical_solution and entry_point");
	if (!cJSON_IsArray(base) || !cJSON_IsArray(plus))
		return refuse(c, "task %s: base_input and plus_input must be arrays of argument lists", tid);
	if (cJSON_GetArraySize(base) + cJSON_GetArraySize(plus) == 0)
		return refuse(c, "task %s has no tests (base_input and plus_input are empty)", tid);
	cJSON *all = cJSON_CreateArray();
	const cJSON *e;
	int k = 0;
	for (int pass = 0; pass < 2; pass++) {
		const cJSON *list = pass ? plus : base;
		cJSON_ArrayForEach(e, list) {
			if (!cJSON_IsArray(e)) {
				cJSON_Delete(all);
				return refuse(c, "task %s: %s[%d] is not an argument list", tid,
					      pass ? "plus_input" : "base_input", k);
			}
			cJSON_AddItemToArray(all, cJSON_Duplicate(e, true));
			k++;
		}
	}
	double atol = 0;
	(void)json_get_double(in, "atol", &atol);
	struct buf ref, tests;
	buf_init(&ref);
	buf_init(&tests);
	char *inputs = cJSON_PrintUnformatted(all), *ref_lit = NULL, *inputs_lit = NULL, *entry_lit = py_literal(entry);
	int rc = inputs && entry_lit ? 0 : -ENOMEM;
	rc = rc ? rc : buf_printf(&ref, "%s%s", prompt, sol);
	if (!rc) {
		ref_lit = py_literal(ref.data);
		inputs_lit = py_literal(inputs);
		rc = ref_lit && inputs_lit ? 0 : -ENOMEM;
	}
	rc = rc ? rc : buf_printf(&tests, plus_tests, ref_lit, inputs_lit, atol, entry_lit);
	if (!rc) {
		char id[256];
		snprintf(id, sizeof id, "%s", tid);
		clean_id(id);
		struct buf p;
		buf_init(&p);
		rc = buf_printf(&p, "Complete this Python function. Reply with the whole function (and its imports) "
				    "in one ```python code block.\n\n```python\n%s```\n", prompt);
		rc = rc ? rc : set_str(t, "id", id);
		rc = rc ? rc : set_str(t, "prompt", p.data);
		rc = rc ? rc : set_str(t, "grader", "python_tests");
		rc = rc ? rc : set_str(t, "entry_point", entry);
		rc = rc ? rc : set_str(t, "tests", tests.data);
		rc = rc ? rc : set_str(t, "reference", ref.data);
		if (!rc && !cJSON_AddNumberToObject(t, "timeout_s", 60))
			rc = -ENOMEM;
		buf_finish(&p);
	}
	free(inputs);
	free(ref_lit);
	free(inputs_lit);
	free(entry_lit);
	cJSON_Delete(all);
	buf_finish(&ref);
	buf_finish(&tests);
	return rc;
}

/* ---- MBPP and sanitized MBPP --------------------------------------------------- */

static int conv_mbpp(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	const char *text = str(in, "text") ? str(in, "text") : str(in, "prompt"), *code = str(in, "code");
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(in, "test_list");
	const cJSON *imports = cJSON_GetObjectItemCaseSensitive(in, "test_imports");
	int64_t num;
	(void)line;
	if (!text || !code || !json_get_i64(in, "task_id", &num))
		return refuse(c, "needs task_id (a number), text (or prompt) and code");
	if (!cJSON_IsArray(tl) || cJSON_GetArraySize(tl) == 0)
		return refuse(c, "task %lld has no tests (test_list is missing or empty)", (long long)num);
	struct buf tests, shown, p;
	buf_init(&tests);
	buf_init(&shown);
	buf_init(&p);
	int rc = 0;
	const char *setup = str(in, "test_setup_code");
	if (setup && *setup)
		rc = buf_printf(&tests, "%s\n", setup);
	const cJSON *e;
	cJSON_ArrayForEach(e, imports) {
		if (!cJSON_IsString(e)) {
			rc = refuse(c, "task %lld: test_imports must be strings", (long long)num);
			goto out;
		}
		rc = rc ? rc : buf_printf(&tests, "%s\n", e->valuestring);
	}
	cJSON_ArrayForEach(e, tl) {
		if (!cJSON_IsString(e)) {
			rc = refuse(c, "task %lld: every entry of test_list must be a string of Python", (long long)num);
			goto out;
		}
		rc = rc ? rc : buf_printf(&tests, "%s\n", e->valuestring);
		rc = rc ? rc : buf_printf(&shown, "%s\n", e->valuestring);
	}
	rc = rc ? rc : buf_printf(&p, "%s\nYour code should pass these tests:\n\n%s\n%s", text, shown.data, code_reply);
	char id[64];
	snprintf(id, sizeof id, "mbpp/%lld", (long long)num);
	rc = rc ? rc : set_str(t, "id", id);
	rc = rc ? rc : set_str(t, "prompt", p.data);
	rc = rc ? rc : set_str(t, "grader", "python_tests");
	rc = rc ? rc : set_str(t, "tests", tests.data);
	rc = rc ? rc : set_str(t, "reference", code);
out:
	buf_finish(&tests);
	buf_finish(&shown);
	buf_finish(&p);
	return rc;
}

/* ---- GSM8K ------------------------------------------------------------------ */

/* The number after "####" with GSM8K's thousands commas removed; false when there is none. */
static bool hash_answer(const char *a, double *v)
{
	const char *h = a ? strstr(a, "####") : NULL;
	if (!h)
		return false;
	char num[64];
	size_t k = 0;
	for (const char *p = h + 4; *p && k + 1 < sizeof num; p++)
		if (*p != ',' && !isspace((unsigned char)*p))
			num[k++] = *p;
	num[k] = 0;
	char *end;
	*v = strtod(num, &end);
	return k > 0 && *end == 0;
}

static int conv_gsm8k(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	const char *q = str(in, "question"), *a = str(in, "answer");
	double v;
	if (!q || !a)
		return refuse(c, "needs string question and answer");
	if (!hash_answer(a, &v))
		return refuse(c, "the answer does not end in \"#### N\" with a number N");
	struct buf p;
	buf_init(&p);
	int rc = buf_printf(&p, "%s\nSolve it step by step, then end your reply with a line '#### N' where N is the "
				"final number.", q);
	char id[64];
	snprintf(id, sizeof id, "gsm8k/%ld", line);
	rc = rc ? rc : set_str(t, "id", id);
	rc = rc ? rc : set_str(t, "prompt", p.data);
	rc = rc ? rc : set_str(t, "grader", "numeric");
	if (!rc && !cJSON_AddNumberToObject(t, "answer", v))
		rc = -ENOMEM;
	rc = rc ? rc : set_str(t, "reference", a);
	buf_finish(&p);
	return rc;
}

/* ---- AIME-style integer answers ---------------------------------------------- */

static const char *first_str(const cJSON *in, const char *const *keys)
{
	for (; *keys; keys++)
		if (str(in, *keys))
			return str(in, *keys);
	return NULL;
}

static int conv_aime(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	static const char *const pkeys[] = {"problem", "Problem", "question", "Question", NULL};
	static const char *const skeys[] = {"solution", "Solution", NULL};
	static const char *const akeys[] = {"answer", "Answer", NULL};
	const char *problem = first_str(in, pkeys), *solution = first_str(in, skeys);
	const cJSON *a = NULL;
	for (const char *const *k = akeys; *k && !a; k++)
		a = cJSON_GetObjectItemCaseSensitive(in, *k);
	if (!problem || !a)
		return refuse(c, "needs a problem (or question) and an answer");
	long long v;
	if (cJSON_IsNumber(a)) {
		if (a->valuedouble != (double)(long long)a->valuedouble)
			return refuse(c, "the answer %g is not a whole number", a->valuedouble);
		v = (long long)a->valuedouble;
	} else if (cJSON_IsString(a)) {
		char *end;
		const char *s = a->valuestring;
		while (isspace((unsigned char)*s))
			s++;
		v = strtoll(s, &end, 10);
		while (isspace((unsigned char)*end))
			end++;
		if (end == s || *end)
			return refuse(c, "the answer \"%.40s\" is not a whole number", a->valuestring);
	} else {
		return refuse(c, "the answer must be a whole number or a string holding one");
	}
	char id[256];
	const cJSON *idv = cJSON_GetObjectItemCaseSensitive(in, "id");
	if (!idv)
		idv = cJSON_GetObjectItemCaseSensitive(in, "ID");
	if (!idv)
		idv = cJSON_GetObjectItemCaseSensitive(in, "problem_id");
	if (cJSON_IsString(idv))
		snprintf(id, sizeof id, "aime/%s", idv->valuestring);
	else if (cJSON_IsNumber(idv))
		snprintf(id, sizeof id, "aime/%lld", (long long)idv->valuedouble);
	else
		snprintf(id, sizeof id, "aime/%ld", line);
	clean_id(id);
	struct buf p, r;
	buf_init(&p);
	buf_init(&r);
	int rc = buf_printf(&p, "%s\n\nSolve the problem, then end your reply with a line '#### N' where N is the "
				"integer answer.", problem);
	rc = rc ? rc : buf_printf(&r, "%s%s#### %lld", solution ? solution : "", solution ? "\n" : "", v);
	rc = rc ? rc : set_str(t, "id", id);
	rc = rc ? rc : set_str(t, "prompt", p.data);
	rc = rc ? rc : set_str(t, "grader", "numeric");
	if (!rc && (!cJSON_AddNumberToObject(t, "answer", (double)v) || !cJSON_AddNumberToObject(t, "tolerance", 0) ||
		    !cJSON_AddTrueToObject(t, "reasoning")))
		rc = -ENOMEM;
	rc = rc ? rc : set_str(t, "reference", r.data);
	buf_finish(&p);
	buf_finish(&r);
	return rc;
}

/* ---- LiveCodeBench ------------------------------------------------------------ */

static int b64_value(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	return ch == '+' || ch == '-' ? 62 : ch == '/' || ch == '_' ? 63 : -1;
}

static int b64_decode(const char *s, struct buf *out)
{
	uint32_t acc = 0;
	int bits = 0;
	for (; *s; s++) {
		if (*s == '=' || isspace((unsigned char)*s))
			continue;
		int v = b64_value((unsigned char)*s);
		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			char ch = (char)((acc >> bits) & 0xFF);
			if (buf_append(out, &ch, 1))
				return -ENOMEM;
		}
	}
	return 0;
}

static int inflate_all(const unsigned char *p, size_t n, struct buf *out)
{
	z_stream z = {0};
	if (inflateInit(&z) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)p;
	z.avail_in = (uInt)n;
	unsigned char chunk[65536];
	int zr;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof chunk;
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			inflateEnd(&z);
			return -EINVAL;
		}
		if (buf_append(out, chunk, sizeof chunk - z.avail_out)) {
			inflateEnd(&z);
			return -ENOMEM;
		}
	} while (zr != Z_STREAM_END && (z.avail_in > 0 || z.avail_out == 0));
	inflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EINVAL;
}

/* The one string of a pickle that holds a single str (protocol 2-5):
 * PROTO, FRAME, then SHORT_BINUNICODE / BINUNICODE / BINUNICODE8. */
static int unpickle_str(const unsigned char *p, size_t n, const unsigned char **s, size_t *len)
{
	size_t i = 0;
	if (i + 1 < n && p[i] == 0x80)
		i += 2;
	if (i < n && p[i] == 0x95)
		i += 9;
	if (i >= n)
		return -EINVAL;
	uint64_t l = 0;
	unsigned op = p[i++];
	int width = op == 0x8c ? 1 : op == 'X' ? 4 : op == 0x8d ? 8 : 0;
	if (!width || i + (size_t)width > n)
		return -EINVAL;
	for (int k = width - 1; k >= 0; k--)
		l = (l << 8) | p[i + (size_t)k];
	i += (size_t)width;
	if (l > n - i)
		return -EINVAL;
	*s = p + i;
	*len = (size_t)l;
	return 0;
}

/* Test cases as a JSON array: plain JSON text, or base64 of zlib of a pickled str of it. */
static cJSON *lcb_tests(const char *s, char *why, size_t whylen)
{
	const char *q = s;
	while (isspace((unsigned char)*q))
		q++;
	char jerr[200];
	if (*q == '[') {
		cJSON *a = json_parse_n(q, strlen(q), jerr, sizeof jerr);
		if (!cJSON_IsArray(a))
			snprintf(why, whylen, "is not a JSON array (%.150s)", a ? "another JSON value" : jerr);
		if (!cJSON_IsArray(a)) {
			cJSON_Delete(a);
			return NULL;
		}
		return a;
	}
	struct buf raw, plain;
	buf_init(&raw);
	buf_init(&plain);
	cJSON *a = NULL;
	const unsigned char *str_p;
	size_t str_n;
	if (b64_decode(q, &raw) != 0 || raw.len == 0) {
		snprintf(why, whylen, "is neither a JSON array nor base64 text");
	} else if (inflate_all((const unsigned char *)raw.data, raw.len, &plain) != 0) {
		snprintf(why, whylen, "is base64 but not zlib-compressed data");
	} else if (unpickle_str((const unsigned char *)plain.data, plain.len, &str_p, &str_n) != 0) {
		snprintf(why, whylen, "decompresses to something other than a pickled string");
	} else if (!(a = json_parse_n((const char *)str_p, str_n, jerr, sizeof jerr)) || !cJSON_IsArray(a)) {
		snprintf(why, whylen, "decompresses to text that is not a JSON array (%.120s)", a ? "another value" : jerr);
		cJSON_Delete(a);
		a = NULL;
	}
	buf_finish(&raw);
	buf_finish(&plain);
	return a;
}

static const char lcb_stdio_reference[] =
	"# LiveCodeBench ships no solutions: this reference replays the expected outputs of the\n"
	"# tests, so preflight checks that the tests are well formed, not that the task is solvable.\n"
	"import json\n"
	"import sys\n"
	"data = sys.stdin.read()\n"
	"for i, o in json.loads(%s):\n"
	"    if i.strip() == data.strip():\n"
	"        sys.stdout.write(o)\n"
	"        break\n"
	"else:\n"
	"    sys.exit('input not among the tests')\n";

static const char lcb_func_tests[] =
	"import json as _sx_json\n"
	"_sx_cases = _sx_json.loads(%s)\n"
	"_sx_f = getattr(Solution(), %s)\n"
	"for _sx_i, (_sx_in, _sx_out) in enumerate(_sx_cases):\n"
	"    _sx_args = [_sx_json.loads(a) for a in _sx_in.split('\\n') if a.strip()]\n"
	"    _sx_want = _sx_json.loads(_sx_out)\n"
	"    _sx_got = _sx_f(*_sx_args)\n"
	"    assert _sx_got == _sx_want, 'test %%d: expected %%.200r, got %%.200r' %% (_sx_i, _sx_want, _sx_got)\n";

static const char lcb_func_reference[] =
	"# LiveCodeBench ships no solutions: this reference replays the expected outputs of the\n"
	"# tests, so preflight checks that the tests are well formed, not that the task is solvable.\n"
	"import json as _sx_json\n"
	"_sx_table = {}\n"
	"for _sx_in, _sx_out in _sx_json.loads(%s):\n"
	"    _sx_key = _sx_json.dumps([_sx_json.loads(a) for a in _sx_in.split('\\n') if a.strip()])\n"
	"    _sx_table[_sx_key] = _sx_json.loads(_sx_out)\n"
	"\n"
	"\n"
	"class Solution:\n"
	"    def %s(self, *args):\n"
	"        return _sx_table[_sx_json.dumps(list(args))]\n";

static bool py_identifier(const char *s)
{
	if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static int conv_livecodebench(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	const char *content = str(in, "question_content"), *qid = str(in, "question_id");
	const char *title = str(in, "question_title"), *starter = str(in, "starter_code");
	const char *pub = str(in, "public_test_cases"), *priv = str(in, "private_test_cases");
	char why[200];
	if (!content || !pub)
		return refuse(c, "needs string question_content and public_test_cases");
	cJSON *cases = cJSON_CreateArray(), *pairs = cJSON_CreateArray(), *meta = NULL;
	int rc = 0, n_func = 0, n_stdin = 0;
	struct buf p, tests, ref;
	buf_init(&p);
	buf_init(&tests);
	buf_init(&ref);
	char *pairs_json = NULL, *lit = NULL, *fn_lit = NULL;
	for (int pass = 0; pass < 2; pass++) {
		const char *s = pass ? priv : pub;
		if (!s || (pass && !*s))
			continue;
		cJSON *a = lcb_tests(s, why, sizeof why);
		if (!a) {
			rc = refuse(c, "the tests cannot be read: %s %s", pass ? "private_test_cases" : "public_test_cases",
				    why);
			goto out;
		}
		const cJSON *e;
		cJSON_ArrayForEach(e, a) {
			const char *i = str(e, "input"), *o = str(e, "output"), *ty = str(e, "testtype");
			if (!i || !o) {
				cJSON_Delete(a);
				rc = refuse(c, "a test case lacks string input and output");
				goto out;
			}
			bool func = ty && strcmp(ty, "functional") == 0;
			n_func += func;
			n_stdin += !func;
			cJSON *pr = cJSON_CreateArray();
			cJSON_AddItemToArray(pr, cJSON_CreateString(i));
			cJSON_AddItemToArray(pr, cJSON_CreateString(o));
			cJSON_AddItemToArray(pairs, pr);
			cJSON *cs = cJSON_CreateObject();
			cJSON_AddStringToObject(cs, "input", i);
			cJSON_AddStringToObject(cs, "output", o);
			cJSON_AddItemToArray(cases, cs);
		}
		cJSON_Delete(a);
	}
	if (n_func + n_stdin == 0) {
		rc = refuse(c, "question %s has no tests", qid ? qid : "?");
		goto out;
	}
	if (n_func && n_stdin) {
		rc = refuse(c, "question %s mixes functional and stdin tests", qid ? qid : "?");
		goto out;
	}
	pairs_json = cJSON_PrintUnformatted(pairs);
	lit = pairs_json ? py_literal(pairs_json) : NULL;
	if (!lit) {
		rc = -ENOMEM;
		goto out;
	}
	char id[256];
	snprintf(id, sizeof id, "lcb/%s", qid ? qid : "");
	if (!qid)
		snprintf(id, sizeof id, "lcb/%ld", line);
	clean_id(id);
	rc = buf_printf(&p, "%s%s%s", title ? title : "", title ? "\n\n" : "", content);
	if (n_stdin) {
		rc = rc ? rc : buf_printf(&p, "\n\nRead the input from standard input and print the answer to standard "
					      "output. %s", code_reply);
		rc = rc ? rc : buf_printf(&ref, lcb_stdio_reference, lit);
		rc = rc ? rc : set_str(t, "id", id);
		rc = rc ? rc : set_str(t, "prompt", p.data);
		rc = rc ? rc : set_str(t, "grader", "stdio");
		if (!rc) {
			cJSON_AddItemToObject(t, "tests", cases);
			cases = NULL;
		}
	} else {
		const char *mj = str(in, "metadata");
		char jerr[128];
		meta = mj ? json_parse_n(mj, strlen(mj), jerr, sizeof jerr) : NULL;
		const char *fn = meta ? str(meta, "func_name") : NULL;
		if (!py_identifier(fn)) {
			rc = refuse(c, "question %s has functional tests but metadata gives no func_name", qid ? qid : "?");
			goto out;
		}
		fn_lit = py_literal(fn);
		rc = fn_lit ? 0 : -ENOMEM;
		rc = rc ? rc : buf_printf(&p, "\n\nComplete this Python code:\n\n```python\n%s\n```\n\nInclude every "
					  "import your code needs (such as from typing import List). %s",
					  starter ? starter : "", code_reply);
		rc = rc ? rc : buf_printf(&tests, lcb_func_tests, lit, fn_lit);
		rc = rc ? rc : buf_printf(&ref, lcb_func_reference, lit, fn);
		rc = rc ? rc : set_str(t, "id", id);
		rc = rc ? rc : set_str(t, "prompt", p.data);
		rc = rc ? rc : set_str(t, "grader", "python_tests");
		rc = rc ? rc : set_str(t, "tests", tests.data);
	}
	rc = rc ? rc : set_str(t, "reference", ref.data);
out:
	cJSON_Delete(cases);
	cJSON_Delete(pairs);
	cJSON_Delete(meta);
	free(pairs_json);
	free(lit);
	free(fn_lit);
	buf_finish(&p);
	buf_finish(&tests);
	buf_finish(&ref);
	return rc;
}

/* ---- BigCodeBench ------------------------------------------------------------- */

static const char bcb_runner[] =
	"\n\nimport io as _sx_io\n"
	"import unittest as _sx_unittest\n"
	"_sx_result = _sx_unittest.TextTestRunner(stream=_sx_io.StringIO(), verbosity=0).run(\n"
	"    _sx_unittest.defaultTestLoader.loadTestsFromTestCase(TestCases))\n"
	"_sx_bad = _sx_result.failures + _sx_result.errors\n"
	"assert _sx_result.wasSuccessful() and _sx_result.testsRun > 0, '%d of %d tests failed: %s' % (\n"
	"    len(_sx_bad), _sx_result.testsRun,\n"
	"    '; '.join((x[1].strip().splitlines() or ['?'])[-1][:200] for x in _sx_bad[:3]))\n";

/* libs: a JSON array of names, or the Python list text the public files hold ("['numpy', 're']"). */
static int bcb_requires(const cJSON *libs, cJSON *t)
{
	cJSON *req = cJSON_CreateArray();
	if (!req)
		return -ENOMEM;
	if (cJSON_IsArray(libs)) {
		const cJSON *e;
		cJSON_ArrayForEach(e, libs) if (cJSON_IsString(e) && py_identifier(e->valuestring))
			cJSON_AddItemToArray(req, cJSON_CreateString(e->valuestring));
	} else if (cJSON_IsString(libs)) {
		for (const char *p = libs->valuestring; *p; p++) {
			if (*p != '\'' && *p != '"')
				continue;
			const char *q = strchr(p + 1, *p);
			if (!q)
				break;
			char name[128];
			snprintf(name, sizeof name, "%.*s", (int)(q - p - 1), p + 1);
			if (py_identifier(name))
				cJSON_AddItemToArray(req, cJSON_CreateString(name));
			p = q;
		}
	}
	cJSON_AddItemToObject(t, "requires", req);
	return 0;
}

static int conv_bigcodebench(struct conv *c, const cJSON *in, long line, cJSON *t)
{
	const char *tid = str(in, "task_id"), *complete = str(in, "complete_prompt"), *instruct = str(in, "instruct_prompt"),
		   *sol = str(in, "canonical_solution"), *test = str(in, "test"), *entry = str(in, "entry_point");
	(void)line;
	if (!tid || !complete || !sol || !entry)
		return refuse(c, "needs string task_id, complete_prompt, canonical_solution and entry_point");
	if (!test || !*test)
		return refuse(c, "task %s has no tests (\"test\" is missing or empty)", tid);
	if (!strstr(test, "class TestCases"))
		return refuse(c, "task %s: the tests define no unittest class TestCases", tid);
	struct buf p, tests, ref;
	buf_init(&p);
	buf_init(&tests);
	buf_init(&ref);
	int rc;
	if (instruct && *instruct)
		rc = buf_printf(&p, "%s\n\n%s", instruct, code_reply);
	else
		rc = buf_printf(&p, "Complete this Python function. Reply with the whole function (and its imports) "
				    "in one ```python code block.\n\n```python\n%s```\n", complete);
	rc = rc ? rc : buf_printf(&tests, "%s%s", test, bcb_runner);
	rc = rc ? rc : buf_printf(&ref, "%s%s", complete, sol);
	char id[256];
	snprintf(id, sizeof id, "%s", tid);
	clean_id(id);
	rc = rc ? rc : set_str(t, "id", id);
	rc = rc ? rc : set_str(t, "prompt", p.data);
	rc = rc ? rc : set_str(t, "grader", "python_tests");
	rc = rc ? rc : set_str(t, "tests", tests.data);
	rc = rc ? rc : set_str(t, "reference", ref.data);
	rc = rc ? rc : bcb_requires(cJSON_GetObjectItemCaseSensitive(in, "libs"), t);
	if (!rc && (!cJSON_AddNumberToObject(t, "timeout_s", 60) || !cJSON_AddNumberToObject(t, "memory_mb", 4096)))
		rc = -ENOMEM;
	buf_finish(&p);
	buf_finish(&tests);
	buf_finish(&ref);
	return rc;
}

/* ---- the format table ------------------------------------------------------------ */

struct format {
	const char *name;
	const char *alias;
	int (*conv)(struct conv *c, const cJSON *in, long line, cJSON *t);
	const char *const keys[6]; /* what a record of this format has (for "it looks like") */
	const char *title;
};

static const struct format formats[] = {
	{"humaneval", NULL, conv_humaneval, {"task_id", "prompt", "canonical_solution", "test", "entry_point"},
	 "HumanEval"},
	{"humaneval+", "humanevalplus", conv_humanevalplus,
	 {"task_id", "prompt", "canonical_solution", "entry_point", "base_input", "plus_input"}, "HumanEval+"},
	{"mbpp", NULL, conv_mbpp, {"task_id", "text", "code", "test_list"}, "MBPP"},
	{"mbpp-sanitized", "sanitized-mbpp", conv_mbpp, {"task_id", "prompt", "code", "test_list"}, "sanitized MBPP"},
	{"gsm8k", NULL, conv_gsm8k, {"question", "answer"}, "GSM8K"},
	{"livecodebench", "lcb", conv_livecodebench, {"question_content", "public_test_cases"}, "LiveCodeBench"},
	{"bigcodebench", "bcb", conv_bigcodebench,
	 {"task_id", "complete_prompt", "canonical_solution", "test", "entry_point"}, "BigCodeBench"},
	{"aime", NULL, conv_aime, {"answer"}, "AIME-style"},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

const char *eval_import_formats(void)
{
	return "humaneval, humaneval+, mbpp, mbpp-sanitized, gsm8k, livecodebench, bigcodebench, aime";
}

static bool has_keys(const struct format *f, const cJSON *o)
{
	for (int i = 0; i < 6 && f->keys[i]; i++)
		if (!cJSON_GetObjectItemCaseSensitive(o, f->keys[i]))
			return false;
	if (f->conv == conv_aime)
		return cJSON_GetObjectItemCaseSensitive(o, "problem") || cJSON_GetObjectItemCaseSensitive(o, "Problem") ||
		       cJSON_GetObjectItemCaseSensitive(o, "question");
	return true;
}

/* The record's shape against the format's: "it looks like X" when another format fits better. */
static int wrong_format(const struct format *f, const cJSON *o, const char *where, char *err, size_t errlen)
{
	struct buf b;
	buf_init(&b);
	int n = 0;
	for (const cJSON *k = o->child; k && n < 8; k = k->next, n++)
		if (buf_printf(&b, "%s%s", n ? ", " : "", k->string)) {
		}
	const char *guess = NULL;
	/* the most specific fitting format: the one with most keys */
	int best = 0;
	for (size_t i = 0; i < N_FORMATS; i++) {
		int nk = 0;
		while (nk < 6 && formats[i].keys[nk])
			nk++;
		if (&formats[i] != f && has_keys(&formats[i], o) && nk > best) {
			best = nk;
			guess = formats[i].name;
		}
	}
	err_fail(err, errlen, "%s: this is not a file in the %s format (%s has keys: %s)%s%s%s", where, f->title, "its first record",
		    b.data ? b.data : "none", guess ? "; it looks like " : "", guess ? guess : "",
		    guess ? ": give --format " : "");
	if (guess) {
		size_t l = strlen(err);
		snprintf(err + l, errlen > l ? errlen - l : 0, "%s", guess);
	}
	buf_finish(&b);
	return -EINVAL;
}

/* ---- the Python compile check ----------------------------------------------------- */

static const char compile_script[] =
	"import json, sys, warnings\n"
	"warnings.simplefilter('ignore')\n"
	"bad = 0\n"
	"for n, line in enumerate(open(sys.argv[1], encoding='utf-8'), 1):\n"
	"    if not line.strip():\n"
	"        continue\n"
	"    t = json.loads(line)\n"
	"    if t.get('language', 'python') != 'python' or t.get('grader') not in ('python_tests', 'stdio', 'brute_force'):\n"
	"        continue\n"
	"    where = (t.get('metadata') or {}).get('source_line', n) if isinstance(t.get('metadata'), dict) else n\n"
	"    for k in ('tests', 'reference', 'generator', 'brute'):\n"
	"        v = t.get(k)\n"
	"        if not isinstance(v, str):\n"
	"            continue\n"
	"        try:\n"
	"            compile(v, k, 'exec')\n"
	"        except (SyntaxError, ValueError) as e:\n"
	"            bad += 1\n"
	"            if bad <= 20:\n"
	"                msg = e.msg if isinstance(e, SyntaxError) else str(e)\n"
	"                print('%s:%s: task %s: its %s do not parse as Python: %s (line %s of them)' % (\n"
	"                    sys.argv[2], where, t.get('id'), 'tests' if k == 'tests' else k, msg, getattr(e, 'lineno', '?')))\n"
	"if bad > 20:\n"
	"    print('... and %d more' % (bad - 20))\n"
	"sys.exit(1 if bad else 0)\n";

int eval_import_python_check(const char *tasks_path, const char *shown_as, char *err, size_t errlen)
{
	int fd[2];
	if (pipe(fd) != 0)
		return err_fail(err, errlen, "cannot check the Python sources: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return err_fail(err, errlen, "cannot check the Python sources: %s", strerror(errno));
	}
	if (pid == 0) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		close(fd[0]);
		close(fd[1]);
		execl("/usr/bin/python3", "python3", "-I", "-S", "-c", compile_script, tasks_path, shown_as, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	struct buf out;
	buf_init(&out);
	char chunk[4096];
	ssize_t n;
	while ((n = read(fd[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && out.len < (64u << 10) && buf_append(&out, chunk, (size_t)n)) {
		}
	close(fd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	int rc = 0;
	while (out.len && isspace((unsigned char)out.data[out.len - 1]))
		out.data[--out.len] = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		rc = -ENOENT, err_fail(err, errlen, "cannot start /usr/bin/python3 to check that the Python sources "
						       "parse; install python3");
	else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		rc = err_fail(err, errlen, "%s", out.len ? out.data : "the Python check failed");
	buf_finish(&out);
	return rc;
}

/* ---- writing the folder ------------------------------------------------------------ */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static int write_readme(const char *dir, const char *name, const struct format *f, const char *src, size_t n)
{
	char path[1400];
	snprintf(path, sizeof path, "%s/README.md", dir);
	FILE *o = fopen(path, "w");
	if (!o)
		return -errno;
	const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
	time_t now = time(NULL);
	struct tm tm;
	char day[32];
	strftime(day, sizeof day, "%Y-%m-%d", gmtime_r(&now, &tm));
	fprintf(o, "# %s\n\n%zu tasks imported on %s from %s by `sixi-eval import --format %s`.\n"
		   "The conversion is described in sixi's datasets/FORMATS.md.\n\n"
		   "LICENSE: that of the source file %s (see where it was downloaded); not covered by sixi's licence\n",
		name, n, day, base, f->name, base);
	return fclose(o) == 0 ? 0 : -EIO;
}

int eval_import_to(const char *format, const char *path, const char *name, const char *out_dir, bool force,
		   char *out_path, size_t out_len, size_t *n_tasks, char *err, size_t errlen)
{
	*n_tasks = 0;
	const struct format *f = NULL;
	for (size_t i = 0; i < N_FORMATS; i++)
		if (strcmp(format, formats[i].name) == 0 || (formats[i].alias && strcmp(format, formats[i].alias) == 0))
			f = &formats[i];
	if (!f)
		return err_fail(err, errlen, "--format \"%s\" is unknown; use one of: %s", format, eval_import_formats());
	if (!out_dir)
		out_dir = "datasets";
	char base[256];
	if (name) {
		snprintf(base, sizeof base, "%s", name);
	} else {
		const char *slash = strrchr(path, '/');
		snprintf(base, sizeof base, "%s", slash ? slash + 1 : path);
		char *dot = strchr(base, '.');
		if (dot)
			*dot = 0;
	}
	if (!base[0] || strchr(base, '/') || base[0] == '.')
		return err_fail(err, errlen, "dataset name \"%s\" is not a plain folder name; give --name", base);
	char dir[1200], tmp[1300], old[1300], tasks[1400];
	snprintf(dir, sizeof dir, "%s/%s", out_dir, base);
	snprintf(out_path, out_len, "%s/tasks.jsonl", dir);
	struct stat st;
	if (!force && stat(dir, &st) == 0)
		return err_fail(err, errlen, "%s exists; give --force to replace it (or --name for another name)", dir);

	struct input in = {0};
	int rc = read_input(path, &in, err, errlen);
	if (rc) {
		input_finish(&in);
		return rc;
	}
	if (in.n == 0) {
		input_finish(&in);
		return err_fail(err, errlen, "%s: no records; a %s file has one JSON object per line", path, f->title);
	}
	char where[1300];
	snprintf(where, sizeof where, in.array ? "%s: entry %ld" : "%s:%ld", path, in.recs[0].line);
	if (!has_keys(f, in.recs[0].o)) {
		rc = wrong_format(f, in.recs[0].o, where, err, errlen);
		input_finish(&in);
		return rc;
	}
	if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
		rc = err_fail(err, errlen, "cannot create %s: %s", out_dir, strerror(errno));
		input_finish(&in);
		return rc;
	}
	snprintf(tmp, sizeof tmp, "%s/.%s.import-%d", out_dir, base, (int)getpid());
	snprintf(tasks, sizeof tasks, "%s/tasks.jsonl", tmp);
	rm_tree(tmp);
	if (mkdir(tmp, 0755) != 0) {
		rc = err_fail(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		input_finish(&in);
		return rc;
	}
	FILE *o = fopen(tasks, "w");
	if (!o) {
		rc = err_fail(err, errlen, "cannot write %s: %s", tasks, strerror(errno));
		goto fail;
	}
	struct conv c = {.path = path, .format = f->name};
	buf_init(&c.why);
	const char *src_base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	for (size_t i = 0; i < in.n && !rc; i++) {
		snprintf(where, sizeof where, in.array ? "%s: entry %ld" : "%s:%ld", path, in.recs[i].line);
		cJSON *t = cJSON_CreateObject();
		int cr = t ? f->conv(&c, in.recs[i].o, in.recs[i].line, t) : -ENOMEM;
		if (cr == -EINVAL) {
			rc = err_fail(err, errlen, "%s: %s; nothing was imported", where, c.why.data ? c.why.data : "");
		} else if (cr) {
			rc = err_fail(err, errlen, "%s: out of memory", where);
		} else {
			cJSON *m = cJSON_CreateObject();
			cJSON_AddStringToObject(m, "source", src_base);
			cJSON_AddStringToObject(m, "format", f->name);
			cJSON_AddNumberToObject(m, "source_line", (double)in.recs[i].line);
			static const char *const keep[] = {"difficulty", "platform", "contest_date", "contest_id", "year",
							   "source_file", NULL};
			for (const char *const *k = keep; *k; k++) {
				const cJSON *v = cJSON_GetObjectItemCaseSensitive(in.recs[i].o, *k);
				if (cJSON_IsString(v) || cJSON_IsNumber(v))
					cJSON_AddItemToObject(m, *k, cJSON_Duplicate(v, false));
			}
			cJSON_AddItemToObject(t, "metadata", m);
			char *s = cJSON_PrintUnformatted(t);
			if (!s || fprintf(o, "%s\n", s) < 0)
				rc = err_fail(err, errlen, "writing %s failed", tasks);
			free(s);
			(*n_tasks)++;
		}
		cJSON_Delete(t);
	}
	buf_finish(&c.why);
	if (fclose(o) != 0 && !rc)
		rc = err_fail(err, errlen, "writing %s failed", tasks);
	if (rc)
		goto fail;
	char lerr[8192];
	struct eval_dataset *d = eval_dataset_load(tasks, lerr, sizeof lerr);
	if (!d) {
		rc = err_fail(err, errlen, "the converted tasks do not load (%s); nothing was imported", lerr);
		goto fail;
	}
	eval_dataset_destroy(d);
	if ((rc = eval_import_python_check(tasks, path, lerr, sizeof lerr)) != 0) {
		rc = err_fail(err, errlen, "%s\nnothing was imported", lerr);
		goto fail;
	}
	if ((rc = write_readme(tmp, base, f, path, *n_tasks)) != 0) {
		rc = err_fail(err, errlen, "cannot write %s/README.md: %s", tmp, strerror(-rc));
		goto fail;
	}
	/* into place: an existing folder (--force) is moved aside first and removed after */
	snprintf(old, sizeof old, "%s/.%s.old-%d", out_dir, base, (int)getpid());
	bool had_old = stat(dir, &st) == 0;
	if (had_old && rename(dir, old) != 0) {
		rc = err_fail(err, errlen, "cannot move the old %s aside: %s", dir, strerror(errno));
		goto fail;
	}
	if (rename(tmp, dir) != 0) {
		rc = err_fail(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		if (had_old && rename(old, dir)) {
		}
		goto fail;
	}
	if (had_old)
		rm_tree(old);
	input_finish(&in);
	return 0;
fail:
	rm_tree(tmp);
	input_finish(&in);
	*n_tasks = 0;
	return rc ? rc : -EIO;
}

int eval_import(const char *format, const char *path, const char *name, bool force, char *out_path, size_t out_len,
		size_t *n_tasks, char *err, size_t errlen)
{
	return eval_import_to(format, path, name, NULL, force, out_path, out_len, n_tasks, err, errlen);
}

/* ---- the command -------------------------------------------------------------------- */

/* sixi-eval import's options: one table, each row naming the field it sets. */
struct import_cli {
	const char *format, *name, *out_dir;
	bool force;
};
#define O struct import_cli
static const struct args_opt import_options[] = {
	ARGS_STRING_OPT("--format", "F", O, format, 0, "the benchmark's format (below)"),
	ARGS_STRING_OPT("--name", "NAME", O, name, 0, "the dataset's name (default: from the format)"),
	ARGS_STRING_OPT("--out", "DIR", O, out_dir, 0, "the folder NAME/ is written into (default datasets)"),
	ARGS_FLAG_OPT("--force", O, force, true, 0, "replace an existing dataset"),
	ARGS_TABLE_END,
};
#undef O

int import_cmd_main(int argc, char **argv)
{
	struct import_cli o = { 0 };
	char epilog[512];
	snprintf(epilog, sizeof epilog, "  F: %s (datasets/FORMATS.md)\n", eval_import_formats());
	struct args_spec spec = { .prog = "sixi-eval import",
				  .usage = "usage: sixi-eval import --format F FILE [--name NAME] [--out DIR] [--force]\n",
				  .epilog = epilog, .opts = import_options, .max_pos = 1 };
	const char *file = NULL;
	int rc = args_cli(&spec, 0, argc - 1, argv + 1, &o, &file, NULL);
	if (rc != ARGS_CONTINUE)
		return rc;
	const char *format = o.format, *name = o.name, *out_dir = o.out_dir;
	bool force = o.force;
	if (!format || !file) {
		args_help(&spec, 0, stderr);
		return 2;
	}
	char err[8192], out[1500];
	size_t n = 0;
	if (eval_import_to(format, file, name, out_dir, force, out, sizeof out, &n, err, sizeof err) != 0) {
		fprintf(stderr, "sixi-eval import: %s\n", err);
		return 1;
	}
	printf("%zu tasks written to %s; check them with `sixi-eval dataset check %s` and `sixi-eval preflight %s`\n",
	       n, out, out, out);
	return 0;
}
