/* Unit tests for src/core: buffers, arena, sha256 (FIPS 180-4 vectors), args, json. */
#include "test.h"
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
	test_json();
	CHECK(clock_now_ns() >= t0);
	return test_done();
}
