/* Unit tests for src/core: buffers, arena, sha256 (FIPS 180-4 vectors), args, json. */
#include "test.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/args.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/json.h"

#include <unistd.h>

static void test_buf(void)
{
	struct buf b;
	buf_init(&b);
	CHECK(buf_puts(&b, "hello") == 0);
	CHECK(buf_printf(&b, " %d", 42) == 0);
	CHECK_EQ_STR(b.data, "hello 42");
	buf_consume(&b, 6);
	CHECK_EQ_STR(b.data, "42");
	for (int i = 0; i < 10000; i++)
		CHECK(buf_append(&b, "x", 1) == 0);
	CHECK_EQ_INT(b.len, 10002);
	char *s = buf_steal(&b);
	CHECK(s && strlen(s) == 10002);
	free(s);
	CHECK(b.data == NULL);
	buf_finish(&b);
	buf_finish(NULL);

	struct arena a;
	arena_init(&a, 128);
	char *p = arena_strdup(&a, "abc");
	void *big = arena_alloc(&a, 1000);
	CHECK_EQ_STR(p, "abc");
	CHECK(big && ((unsigned char *)big)[999] == 0);
	CHECK(((uintptr_t)big & 15) == 0);
	arena_finish(&a);
}

/* buf_read_file and buf_load_file: empty, larger than one read, missing */
static void test_read_file(void)
{
	char dir[256];
	snprintf(dir, sizeof dir, "%s/sixi-test-core-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : P_tmpdir);
	CHECK(mkdtemp(dir) != NULL);
	char path[300];
	snprintf(path, sizeof path, "%s/f", dir);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	fclose(f);
	size_t n = 99;
	char *s = buf_load_file(path, &n);
	CHECK(s && n == 0 && s[0] == 0);
	free(s);

	f = fopen(path, "wb");
	for (int i = 0; i < 200000; i++)
		fputc('a' + i % 26, f);
	fclose(f);
	struct buf b;
	buf_init(&b);
	CHECK(buf_puts(&b, "head:") == 0);
	CHECK(buf_read_file(&b, path) == 0);
	CHECK_EQ_INT(b.len, 200005);
	CHECK(strncmp(b.data, "head:abc", 8) == 0 && b.data[200004] == 'a' + 199999 % 26 && b.data[200005] == 0);

	char missing[300];
	snprintf(missing, sizeof missing, "%s/none", dir);
	CHECK_EQ_INT(buf_read_file(&b, missing), -ENOENT);
	CHECK_EQ_INT(b.len, 200005); /* left as it was */
	CHECK(buf_read_file(&b, dir) < 0); /* a folder reads as an error, not as empty */
	CHECK_EQ_INT(b.len, 200005);
	buf_finish(&b);
	errno = 0;
	CHECK(buf_load_file(missing, NULL) == NULL && errno == ENOENT);
	remove(path);
	rmdir(dir);
}

static void test_sha256(void)
{
	char hex[65];
	sha256_hex("", 0, hex);
	CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_hex("abc", 3, hex);
	CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_hex(two, strlen(two), hex);
	CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* streaming in odd pieces equals one shot */
	struct sha256 s;
	unsigned char d1[32];
	sha256_init(&s);
	for (size_t i = 0; i < strlen(two); i += 7)
		sha256_update(&s, two + i, strlen(two) - i < 7 ? strlen(two) - i : 7);
	sha256_final(&s, d1);
	CHECK(d1[0] == 0x24 && d1[31] == 0xc1);
}

static void test_args(void)
{
	char err[256];
	int64_t v[8];
	size_t n;
	CHECK(args_i64_list("--concurrency", "1,4,16,32", 1, 100000, v, 8, &n, err, sizeof err) == 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(v[3], 32);
	CHECK(args_i64_list("--concurrency", "0,4", 1, 100000, v, 8, &n, err, sizeof err) < 0);
	CHECK(strstr(err, "out of range") != NULL);
	CHECK(args_i64_list("--concurrency", "-3", 1, 100000, v, 8, &n, err, sizeof err) < 0);
	CHECK(args_i64_list("--concurrency", "4,", 1, 100000, v, 8, &n, err, sizeof err) < 0);
	CHECK(args_i64_list("--concurrency", "a", 1, 100000, v, 8, &n, err, sizeof err) < 0);
	CHECK(strstr(err, "not an integer") != NULL);
	uint64_t b;
	CHECK(args_bytes("--memory", "128GiB", &b, err, sizeof err) == 0);
	CHECK(b == 128ULL << 30);
	CHECK(args_bytes("--memory", "1.5GB", &b, err, sizeof err) == 0);
	CHECK(b == 1500000000ULL);
	CHECK(args_bytes("--memory", "12 parsecs", &b, err, sizeof err) < 0);
	double d;
	CHECK(args_double("--headroom", "1.25", 1, 10, &d, err, sizeof err) == 0 && d == 1.25);
	CHECK(args_double("--headroom", "nan", 1, 10, &d, err, sizeof err) < 0);
}

/* ---- the table-driven parser ---- */

struct topts {
	int64_t n;
	int threads;
	double t;
	int64_t wait_ms;
	uint64_t mem;
	const char *name;
	bool flag;
	int mode;
	struct args_list levels;
	const char *json;
};

static int upper_only(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	for (const char *p = v; *p; p++)
		if (*p < 'A' || *p > 'Z') {
			snprintf(err, errlen, "%s: '%s' is not upper case", opt, v);
			return -EINVAL;
		}
	*(const char **)field = v;
	return 0;
}

enum { CMD_A = 1, CMD_B = 2 };
#define T struct topts
static const struct args_opt topts_table[] = {
	ARGS_HEADING("general:"),
	ARGS_INT_OPT("--n", "N", T, n, 1, 100, 0, "a count"),
	ARGS_INT_OPT("--threads", "N", T, threads, 1, 64, CMD_A, "only for a"),
	ARGS_DOUBLE_OPT("--t", "T", T, t, 0, 2, 0, "a number"),
	ARGS_TIME_OPT("--wait", "S", T, wait_ms, 0.001, 60, 1000, 0, "seconds, kept as ms"),
	ARGS_BYTES_OPT("--mem", "BYTES", T, mem, 0, "a size"),
	ARGS_STRING_OPT("--name", "NAME", T, name, 0, "a name"),
	ARGS_FLAG_OPT("--flag", T, flag, true, 0, "a flag"),
	ARGS_ENUM_OPT("--mode", "fast|slow|exact", "mode", T, mode, 0, "an enum"),
	ARGS_HEADING("b only:"),
	ARGS_LIST_OPT("--levels", "LIST", T, levels, 1, 1000, CMD_B, "a list; repeats append"),
	ARGS_CALL_OPT("--shout", "TEXT", upper_only, T, json, CMD_B, "a handler"),
	ARGS_INT_OPT("--hidden", "N", T, n, 1, 2, CMD_B, NULL),
	ARGS_TABLE_END,
};
#undef T

static int tparse(unsigned cmd, const char *line, struct topts *o, const char **pos, int *np, char *err)
{
	static char buf[512]; /* the parsed strings point into it: it outlives the call */
	char *argv[32];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", line);
	for (char *save, *w = strtok_r(buf, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	static const struct args_spec spec = { .prog = "prog", .cmd = "b", .usage = "usage: prog\n", .opts = topts_table,
					      .max_pos = 2 };
	memset(o, 0, sizeof *o);
	o->mode = -1;
	err[0] = 0;
	return args_parse(&spec, cmd, argc, argv, o, pos, np, err, 256);
}

static void test_args_table(void)
{
	struct topts o;
	const char *pos[2];
	int np = 0;
	char err[256];
	CHECK(tparse(CMD_A, "--n 5 --threads=8 --t 1.5 --wait 2.5 --mem 8MiB --name x --flag --mode slow p1", &o, pos, &np,
		     err) == 0);
	CHECK(o.n == 5 && o.threads == 8 && o.t == 1.5 && o.wait_ms == 2500 && o.mem == 8u << 20);
	CHECK(o.name && strcmp(o.name, "x") == 0 && o.flag && o.mode == 1 && np == 1 && strcmp(pos[0], "p1") == 0);
	/* a list appends when repeated; its text is kept */
	CHECK(tparse(CMD_B, "--levels 1,4 --levels=16 --shout ABC", &o, pos, &np, err) == 0);
	CHECK(o.levels.n == 3 && o.levels.v[2] == 16 && strcmp(o.levels.text, "1,4,16") == 0);
	CHECK(strcmp(o.json, "ABC") == 0);
	/* a value is the next word even when it starts with '-' */
	CHECK(tparse(CMD_A, "--n -4", &o, pos, &np, err) < 0 && strstr(err, "--n: -4 is out of range (1 to 100)"));
	/* the same wording everywhere: the option, what was wrong, what is accepted */
	CHECK(tparse(CMD_A, "--n", &o, pos, &np, err) < 0 && strcmp(err, "--n needs a value (N)") == 0);
	CHECK(tparse(CMD_A, "--t x", &o, pos, &np, err) < 0 && strstr(err, "--t: 'x' is not a number"));
	CHECK(tparse(CMD_A, "--mode quick", &o, pos, &np, err) < 0 &&
	      strcmp(err, "--mode: unknown mode 'quick' (use fast, slow or exact)") == 0);
	CHECK(tparse(CMD_A, "--mem 3parsecs", &o, pos, &np, err) < 0 && strstr(err, "unknown unit"));
	CHECK(tparse(CMD_A, "--flag=1", &o, pos, &np, err) < 0 && strstr(err, "--flag takes no value"));
	CHECK(tparse(CMD_B, "--shout abc", &o, pos, &np, err) < 0 && strcmp(err, "--shout: 'abc' is not upper case") == 0);
	CHECK(tparse(CMD_B, "--frob", &o, pos, &np, err) < 0 &&
	      strcmp(err, "unknown option '--frob' for 'b' (see prog --help)") == 0);
	/* an option of another command is unknown to this one */
	CHECK(tparse(CMD_B, "--threads 2", &o, pos, &np, err) < 0 && strstr(err, "unknown option '--threads'"));
	CHECK(tparse(CMD_A, "a b c", &o, pos, &np, err) < 0 && strstr(err, "unexpected argument 'c'"));
	/* after --, words are positional; --help stops parsing after what came before it */
	CHECK(tparse(CMD_A, "-- --n", &o, pos, &np, err) == 0 && np == 1 && strcmp(pos[0], "--n") == 0);
	CHECK(tparse(CMD_A, "--n 3 --help --bogus", &o, pos, &np, err) == ARGS_HELP && o.n == 3);
	CHECK(tparse(CMD_A, "--bogus --help", &o, pos, &np, err) < 0);
	/* --help comes from the table: headings, rows of the command, hidden rows left out */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	static const struct args_spec spec = { .prog = "prog", .usage = "usage: prog\n", .opts = topts_table };
	args_help(&spec, CMD_A, f);
	fclose(f);
	CHECK(strstr(text, "usage: prog\n\ngeneral:\n  --n N                   a count\n") != NULL);
	CHECK(strstr(text, "  --mode fast|slow|exact  an enum\n") != NULL);
	CHECK(strstr(text, "--threads") && !strstr(text, "b only:") && !strstr(text, "--levels"));
	free(text);
	f = open_memstream(&text, &len);
	args_help(&spec, CMD_B, f);
	fclose(f);
	CHECK(strstr(text, "b only:\n  --levels LIST") && !strstr(text, "--threads") && !strstr(text, "--hidden"));
	free(text);
}

static void test_json(void)
{
	char err[256];
	const char *s = "{\"usage\":{\"prompt_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":3}},\"x\":\"y\"}";
	cJSON *j = json_parse_n(s, strlen(s), err, sizeof err);
	CHECK(j != NULL);
	int64_t v = 0;
	CHECK(json_get_i64(j, "usage.prompt_tokens_details.cached_tokens", &v) && v == 3);
	CHECK(!json_get_i64(j, "usage.missing", &v));
	CHECK_EQ_STR(json_get_str(j, "x"), "y");
	cJSON_Delete(j);
	const char *bad = "{\n  \"a\": 1,\n  oops\n}";
	CHECK(json_parse_n(bad, strlen(bad), err, sizeof err) == NULL);
	CHECK(strstr(err, "line 3") != NULL);
}

int main(void)
{
	int64_t t0 = clock_now_ns();
	test_buf();
	test_read_file();
	test_sha256();
	test_args();
	test_args_table();
	test_json();
	CHECK(clock_now_ns() >= t0);
	return test_done();
}
