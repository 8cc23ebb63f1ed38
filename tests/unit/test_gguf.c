/* Unit tests for src/gguf/gguf: write/read round trip of every metadata type and the
 * tensor types the project uses; every truncation and many single-byte corruptions of
 * a written file give an error, never a crash; hand-built nested arrays and bad
 * headers; the vocabulary files in ../shared/data/vocab when present. */
#include "test.h"
#include "gguf/gguf.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
	static char buf[512];
	snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
	return buf;
}


/* ---- round trip ---- */

static const uint64_t shape_q4k[2] = {256, 3};
static const uint64_t shape_q8[3] = {64, 2, 2};
static const uint64_t shape_f32[1] = {5};
static const uint64_t shape_f16[2] = {3, 7};

static int write_sample(const char *path, uint32_t alignment)
{
	struct gguf_writer *w = gguf_writer_create();
	char err[256] = "";
	int rc = 0;
	uint8_t u8 = 200;
	int8_t i8 = -100;
	uint16_t u16 = 60000;
	int16_t i16 = -30000;
	int64_t i64 = -5000000000LL;
	double f64 = 3.25e100;
	rc |= gguf_writer_set_str(w, "general.architecture", "test");
	if (alignment)
		rc |= gguf_writer_set_u32(w, "general.alignment", alignment);
	rc |= gguf_writer_set_num(w, "t.u8", GGUF_TYPE_UINT8, &u8);
	rc |= gguf_writer_set_num(w, "t.i8", GGUF_TYPE_INT8, &i8);
	rc |= gguf_writer_set_num(w, "t.u16", GGUF_TYPE_UINT16, &u16);
	rc |= gguf_writer_set_num(w, "t.i16", GGUF_TYPE_INT16, &i16);
	rc |= gguf_writer_set_u32(w, "t.u32", 4000000000u);
	rc |= gguf_writer_set_i32(w, "t.i32", -2000000000);
	rc |= gguf_writer_set_f32(w, "t.f32", 1.5f);
	rc |= gguf_writer_set_bool(w, "t.bool", true);
	rc |= gguf_writer_set_str(w, "t.str", "h\xc3\xa9llo");
	rc |= gguf_writer_set_u64(w, "t.u64", UINT64_MAX);
	rc |= gguf_writer_set_num(w, "t.i64", GGUF_TYPE_INT64, &i64);
	rc |= gguf_writer_set_num(w, "t.f64", GGUF_TYPE_FLOAT64, &f64);
	rc |= gguf_writer_set_i32(w, "t.replaced", 1);
	rc |= gguf_writer_set_i32(w, "t.replaced", 2);
	const char *strs[] = {"a", "", "\xe2\x96\x81token", "<0x0A>"};
	rc |= gguf_writer_set_arr_str(w, "t.arr_str", strs, 4);
	int32_t ai[] = {-1, 0, 7, INT32_MAX};
	rc |= gguf_writer_set_arr_num(w, "t.arr_i32", GGUF_TYPE_INT32, ai, 4);
	float af[] = {0.5f, -2.0f};
	rc |= gguf_writer_set_arr_num(w, "t.arr_f32", GGUF_TYPE_FLOAT32, af, 2);
	uint8_t ab[] = {1, 0, 1};
	rc |= gguf_writer_set_arr_num(w, "t.arr_bool", GGUF_TYPE_BOOL, ab, 3);
	uint64_t au[] = {UINT64_MAX, 3};
	rc |= gguf_writer_set_arr_num(w, "t.arr_u64", GGUF_TYPE_UINT64, au, 2);
	double ad[] = {1e-300};
	rc |= gguf_writer_set_arr_num(w, "t.arr_f64", GGUF_TYPE_FLOAT64, ad, 1);
	int16_t as[] = {-3};
	rc |= gguf_writer_set_arr_num(w, "t.arr_i16", GGUF_TYPE_INT16, as, 1);
	rc |= gguf_writer_set_arr_num(w, "t.arr_empty", GGUF_TYPE_UINT8, NULL, 0);

	float f32[5] = {1, 2, 3, 4, 5};
	uint16_t f16[21], bf16[4] = {0x3f80, 0x4000, 0xc040, 0};
	for (int i = 0; i < 21; i++)
		f16[i] = (uint16_t)(0x3c00 + i);
	unsigned char q8[4 * 2 * 34], q4k[3 * 144], q40[18 * 2];
	for (size_t i = 0; i < sizeof q8; i++)
		q8[i] = (unsigned char)(i * 7);
	for (size_t i = 0; i < sizeof q4k; i++)
		q4k[i] = (unsigned char)(i * 13 + 1);
	for (size_t i = 0; i < sizeof q40; i++)
		q40[i] = (unsigned char)(255 - i);
	uint64_t shape_bf16[2] = {2, 2}, shape_q40[1] = {64};
	rc |= gguf_writer_add_tensor(w, "f32", 1, shape_f32, GGUF_TENSOR_F32, f32, sizeof f32);
	rc |= gguf_writer_add_tensor(w, "f16", 2, shape_f16, GGUF_TENSOR_F16, f16, sizeof f16);
	rc |= gguf_writer_add_tensor(w, "bf16", 2, shape_bf16, GGUF_TENSOR_BF16, bf16, sizeof bf16);
	rc |= gguf_writer_add_tensor(w, "q8_0", 3, shape_q8, GGUF_TENSOR_Q8_0, q8, sizeof q8);
	rc |= gguf_writer_add_tensor(w, "q4_0", 1, shape_q40, GGUF_TENSOR_Q4_0, q40, sizeof q40);
	rc |= gguf_writer_add_tensor_ref(w, "q4_k", 2, shape_q4k, GGUF_TENSOR_Q4_K, q4k, sizeof q4k);
	/* wrong byte count, bad block multiple, duplicate name: refused */
	CHECK(gguf_writer_add_tensor(w, "bad", 1, shape_f32, GGUF_TENSOR_F32, f32, 16) < 0);
	CHECK(gguf_writer_add_tensor(w, "bad", 1, shape_f32, GGUF_TENSOR_Q8_0, q8, 34) < 0);
	CHECK(gguf_writer_add_tensor(w, "f32", 1, shape_f32, GGUF_TENSOR_F32, f32, sizeof f32) < 0);
	CHECK(gguf_writer_add_tensor_ref(w, "q4_k", 2, shape_q4k, GGUF_TENSOR_Q4_K, q4k, sizeof q4k) == -EEXIST);
	CHECK_EQ_INT(rc, 0);
	rc = gguf_writer_write(w, path, err, sizeof err);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		fprintf(stderr, "write: %s\n", err);
	gguf_writer_destroy(w);
	return rc;
}

static void check_sample(const struct gguf *g, uint32_t alignment)
{
	int64_t i;
	uint64_t u;
	double d;
	bool b;
	CHECK_EQ_INT(gguf_version(g), 3);
	CHECK_EQ_INT(gguf_kv_count(g), alignment ? 23 : 22);
	CHECK_EQ_STR(gguf_kv_key(g, 0), "general.architecture");
	CHECK_EQ_STR(gguf_get_str(g, "general.architecture"), "test");
	CHECK_EQ_INT(gguf_alignment(g), alignment ? alignment : 32);
	CHECK(gguf_get_u64(g, "t.u8", &u) && u == 200);
	CHECK(gguf_get_i64(g, "t.i8", &i) && i == -100);
	CHECK(!gguf_get_u64(g, "t.i8", &u));
	CHECK(gguf_get_u64(g, "t.u16", &u) && u == 60000);
	CHECK(gguf_get_i64(g, "t.i16", &i) && i == -30000);
	CHECK(gguf_get_u64(g, "t.u32", &u) && u == 4000000000u);
	CHECK(gguf_get_i64(g, "t.i32", &i) && i == -2000000000);
	CHECK(gguf_get_f64(g, "t.f32", &d) && d == 1.5);
	CHECK(gguf_get_bool(g, "t.bool", &b) && b);
	CHECK(!gguf_get_bool(g, "t.u8", &b));
	CHECK_EQ_STR(gguf_get_str(g, "t.str"), "h\xc3\xa9llo");
	CHECK(gguf_get_str(g, "t.u8") == NULL);
	CHECK(gguf_get_u64(g, "t.u64", &u) && u == UINT64_MAX);
	CHECK(!gguf_get_i64(g, "t.u64", &i));
	CHECK(gguf_get_i64(g, "t.i64", &i) && i == -5000000000LL);
	CHECK(gguf_get_f64(g, "t.f64", &d) && d == 3.25e100);
	CHECK(gguf_get_i64(g, "t.replaced", &i) && i == 2);
	CHECK(!gguf_get_i64(g, "t.absent", &i));
	CHECK_EQ_INT(gguf_find_key(g, "t.absent"), -1);

	long k = gguf_find_key(g, "t.arr_str");
	CHECK(k >= 0);
	CHECK_EQ_INT(gguf_kv_type(g, (size_t)k), GGUF_TYPE_ARRAY);
	CHECK_EQ_INT(gguf_kv_array_type(g, (size_t)k), GGUF_TYPE_STRING);
	CHECK_EQ_INT(gguf_kv_array_len(g, (size_t)k), 4);
	CHECK_EQ_STR(gguf_get_arr_str(g, (size_t)k, 0), "a");
	CHECK_EQ_STR(gguf_get_arr_str(g, (size_t)k, 1), "");
	CHECK_EQ_STR(gguf_get_arr_str(g, (size_t)k, 2), "\xe2\x96\x81token");
	CHECK_EQ_INT(gguf_get_arr_str_len(g, (size_t)k, 2), 8);
	CHECK_EQ_INT(gguf_get_arr_str_len(g, (size_t)k, 3), 6);
	CHECK(gguf_get_arr_str(g, (size_t)k, 4) == NULL);
	k = gguf_find_key(g, "t.arr_i32");
	CHECK(gguf_get_arr_i64(g, (size_t)k, 0, &i) && i == -1);
	CHECK(gguf_get_arr_i64(g, (size_t)k, 3, &i) && i == INT32_MAX);
	CHECK(!gguf_get_arr_i64(g, (size_t)k, 4, &i));
	const int32_t *raw = gguf_get_arr_data(g, (size_t)k);
	CHECK(raw && raw[2] == 7 && ((uintptr_t)raw & 3) == 0);
	k = gguf_find_key(g, "t.arr_f32");
	CHECK(gguf_get_arr_f64(g, (size_t)k, 1, &d) && d == -2.0);
	k = gguf_find_key(g, "t.arr_bool");
	CHECK(gguf_get_arr_i64(g, (size_t)k, 1, &i) && i == 0);
	CHECK(gguf_get_arr_i64(g, (size_t)k, 2, &i) && i == 1);
	k = gguf_find_key(g, "t.arr_u64");
	CHECK(!gguf_get_arr_i64(g, (size_t)k, 0, &i));
	CHECK(gguf_get_arr_i64(g, (size_t)k, 1, &i) && i == 3);
	k = gguf_find_key(g, "t.arr_f64");
	CHECK(gguf_get_arr_f64(g, (size_t)k, 0, &d) && d == 1e-300);
	k = gguf_find_key(g, "t.arr_i16");
	CHECK(gguf_get_arr_i64(g, (size_t)k, 0, &i) && i == -3);
	k = gguf_find_key(g, "t.arr_empty");
	CHECK_EQ_INT(gguf_kv_array_len(g, (size_t)k), 0);
	CHECK_EQ_INT(gguf_kv_array_type(g, (size_t)k), GGUF_TYPE_UINT8);

	CHECK_EQ_INT(gguf_tensor_count(g), 6);
	const struct gguf_tensor *t = gguf_tensor_find(g, "f32");
	CHECK(t && t->n_dims == 1 && t->ne[0] == 5 && t->ne[1] == 1 && t->n_bytes == 20);
	CHECK(t && ((const float *)t->data)[4] == 5.0f);
	t = gguf_tensor_find(g, "f16");
	CHECK(t && t->ne[0] == 3 && t->ne[1] == 7 && t->n_bytes == 42 && t->type == GGUF_TENSOR_F16);
	CHECK(t && ((const uint16_t *)t->data)[20] == 0x3c00 + 20);
	t = gguf_tensor_find(g, "bf16");
	CHECK(t && t->n_bytes == 8 && ((const uint16_t *)t->data)[2] == 0xc040);
	t = gguf_tensor_find(g, "q8_0");
	CHECK(t && t->n_dims == 3 && t->ne[2] == 2 && t->n_bytes == 4 * 2 * 34);
	CHECK(t && ((const unsigned char *)t->data)[100] == (unsigned char)700);
	t = gguf_tensor_find(g, "q4_0");
	CHECK(t && t->n_bytes == 36 && ((const unsigned char *)t->data)[35] == 255 - 35);
	t = gguf_tensor_find(g, "q4_k");
	CHECK(t && t->n_bytes == 3 * 144 && ((const unsigned char *)t->data)[431] == (unsigned char)(431 * 13 + 1));
	for (size_t j = 0; j < gguf_tensor_count(g); j++) {
		t = gguf_tensor_at(g, j);
		CHECK(t->offset % gguf_alignment(g) == 0);
		CHECK((gguf_data_offset(g) + t->offset) % gguf_alignment(g) == 0);
	}
	CHECK(gguf_tensor_find(g, "nope") == NULL);
	CHECK(gguf_tensor_at(g, 6) == NULL);
	CHECK_EQ_INT(gguf_type_row_bytes(GGUF_TENSOR_Q4_K, 512), 288);
	CHECK_EQ_INT(gguf_type_row_bytes(GGUF_TENSOR_Q8_0, 33), 0);
	CHECK_EQ_INT(gguf_type_row_bytes(99, 32), 0);
	CHECK_EQ_STR(gguf_type_name(GGUF_TENSOR_BF16), "BF16");
}

static void test_round_trip(void)
{
	char err[256] = "";
	for (int pass = 0; pass < 2; pass++) {
		uint32_t alignment = pass ? 64 : 0;
		const char *path = tmp_path("sample.gguf");
		if (write_sample(path, alignment))
			return;
		struct gguf *g = gguf_open(path, err, sizeof err);
		CHECK(g != NULL);
		if (!g) {
			fprintf(stderr, "open: %s\n", err);
			return;
		}
		check_sample(g, alignment);
		gguf_close(g);
		unlink(path);
	}
}

/* Every prefix shorter than the end of the last tensor's data fails with a message; the full file opens. */
static void test_truncation_and_corruption(void)
{
	char err[256];
	const char *path = tmp_path("trunc.gguf");
	if (write_sample(path, 0))
		return;
	size_t n;
	unsigned char *img = (unsigned char *)test_slurp(path, &n);
	CHECK(img != NULL);
	if (!img)
		return;
	struct gguf *g = gguf_open_memory(img, n, "trunc.gguf", err, sizeof err);
	CHECK(g != NULL);
	uint64_t end = 0;
	for (size_t j = 0; g && j < gguf_tensor_count(g); j++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, j);
		if (gguf_data_offset(g) + t->offset + t->n_bytes > end)
			end = gguf_data_offset(g) + t->offset + t->n_bytes;
	}
	gguf_close(g);
	int bad = 0;
	for (size_t len = 0; len < n; len++) {
		unsigned char *copy = malloc(len ? len : 1); /* exact size, so ASan sees any over-read */
		memcpy(copy, img, len);
		err[0] = 0;
		g = gguf_open_memory(copy, len, "trunc.gguf", err, sizeof err);
		if ((len < end) != (g == NULL) || (!g && strncmp(err, "trunc.gguf: ", 12) != 0)) {
			if (bad++ < 3)
				fprintf(stderr, "prefix %zu of %zu (end %llu): %s\n", len, n, (unsigned long long)end,
					g ? "opened" : err);
		}
		gguf_close(g);
		free(copy);
	}
	CHECK_EQ_INT(bad, 0);
	/* Single-byte corruption in the header and metadata: error or a parse, never a crash. */
	size_t meta_end = (size_t)(end < n ? end : n);
	int opened = 0, failed = 0;
	static const unsigned char vals[] = {0x00, 0xff, 0x7f, 0x80, 0x09, 0x0c};
	for (size_t pos = 0; pos < meta_end && pos < 2048; pos++) {
		for (size_t v = 0; v < sizeof vals; v++) {
			unsigned char *copy = malloc(n);
			memcpy(copy, img, n);
			copy[pos] = vals[v];
			g = gguf_open_memory(copy, n, "corrupt.gguf", err, sizeof err);
			if (g) {
				opened++;
				/* walk everything a caller could touch */
				for (size_t j = 0; j < gguf_tensor_count(g); j++) {
					const struct gguf_tensor *t = gguf_tensor_at(g, j);
					if (t->n_bytes)
						opened += ((const unsigned char *)t->data)[t->n_bytes - 1] == 0x12;
				}
			} else {
				failed++;
			}
			gguf_close(g);
			free(copy);
		}
	}
	CHECK(failed > 0);
	CHECK(opened > 0);
	free(img);
	unlink(path);
}

/* ---- hand-built images ---- */

struct img {
	unsigned char b[1024];
	size_t n;
};

static void put(struct img *m, const void *p, size_t k) { memcpy(m->b + m->n, p, k); m->n += k; }
static void put_u32(struct img *m, uint32_t v) { put(m, &v, 4); }
static void put_u64(struct img *m, uint64_t v) { put(m, &v, 8); }
static void put_str(struct img *m, const char *s) { put_u64(m, strlen(s)); put(m, s, strlen(s)); }

static void header(struct img *m, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	m->n = 0;
	put(m, "GGUF", 4);
	put_u32(m, version);
	put_u64(m, n_tensors);
	put_u64(m, n_kv);
}

static void expect_error(struct img *m, const char *substring)
{
	char err[256] = "";
	struct gguf *g = gguf_open_memory(m->b, m->n, "img.gguf", err, sizeof err);
	CHECK(g == NULL);
	if (!strstr(err, substring)) {
		fprintf(stderr, "expected error containing '%s', got '%s'\n", substring, err);
		CHECK(0);
	}
	gguf_close(g);
}

static void test_handmade(void)
{
	struct img m;
	char err[256];
	/* nested array: [[1,2],[3]] of int32 followed by a scalar */
	header(&m, 3, 0, 2);
	put_str(&m, "nested");
	put_u32(&m, GGUF_TYPE_ARRAY);
	put_u32(&m, GGUF_TYPE_ARRAY);
	put_u64(&m, 2);
	put_u32(&m, GGUF_TYPE_INT32);
	put_u64(&m, 2);
	put_u32(&m, 1);
	put_u32(&m, 2);
	put_u32(&m, GGUF_TYPE_STRING);
	put_u64(&m, 1);
	put_str(&m, "x");
	put_str(&m, "after");
	put_u32(&m, GGUF_TYPE_UINT16);
	uint16_t v16 = 77;
	put(&m, &v16, 2);
	struct gguf *g = gguf_open_memory(m.b, m.n, "img.gguf", err, sizeof err);
	CHECK(g != NULL);
	if (g) {
		uint64_t u;
		CHECK_EQ_INT(gguf_kv_array_type(g, 0), GGUF_TYPE_ARRAY);
		CHECK_EQ_INT(gguf_kv_array_len(g, 0), 2);
		CHECK(gguf_get_arr_data(g, 0) == NULL);
		CHECK(gguf_get_u64(g, "after", &u) && u == 77);
		CHECK_EQ_INT(gguf_version(g), 3);
		gguf_close(g);
	}

	header(&m, 3, 0, 0);
	m.b[0] = 'X';
	expect_error(&m, "not a GGUF file");
	header(&m, 1, 0, 0);
	expect_error(&m, "version 1 is not supported");
	header(&m, 3, 0, 1000000);
	expect_error(&m, "header claims");
	header(&m, 3, 0, 1);
	put_str(&m, "k");
	put_u32(&m, 13);
	expect_error(&m, "key 'k': unknown value type 13");
	header(&m, 3, 0, 2);
	put_str(&m, "k");
	put_u32(&m, GGUF_TYPE_UINT8);
	put(&m, "a", 1);
	put_str(&m, "k");
	put_u32(&m, GGUF_TYPE_UINT8);
	put(&m, "b", 1);
	expect_error(&m, "duplicate key 'k'");
	header(&m, 3, 0, 1);
	put_str(&m, "general.alignment");
	put_u32(&m, GGUF_TYPE_UINT32);
	put_u32(&m, 48);
	expect_error(&m, "power of two");
	header(&m, 3, 0, 1);
	put_str(&m, "s");
	put_u32(&m, GGUF_TYPE_ARRAY);
	put_u32(&m, GGUF_TYPE_STRING);
	put_u64(&m, UINT64_MAX);
	expect_error(&m, "string array");
	/* nesting bomb */
	header(&m, 3, 0, 1);
	put_str(&m, "deep");
	put_u32(&m, GGUF_TYPE_ARRAY);
	for (int d = 0; d < 20; d++) {
		put_u32(&m, GGUF_TYPE_ARRAY);
		put_u64(&m, 1);
	}
	put_u32(&m, GGUF_TYPE_UINT8);
	put_u64(&m, 0);
	expect_error(&m, "nested deeper");
	/* tensors: unknown type, misaligned offset, past the end, bad dims */
	header(&m, 3, 1, 0);
	put_str(&m, "w");
	put_u32(&m, 1);
	put_u64(&m, 4);
	put_u32(&m, 99);
	put_u64(&m, 0);
	expect_error(&m, "tensor 'w': unsupported type 99");
	header(&m, 3, 1, 0);
	put_str(&m, "w");
	put_u32(&m, 1);
	put_u64(&m, 4);
	put_u32(&m, GGUF_TENSOR_F32);
	put_u64(&m, 8);
	expect_error(&m, "not a multiple of the alignment");
	header(&m, 3, 1, 0);
	put_str(&m, "w");
	put_u32(&m, 2);
	put_u64(&m, 1024);
	put_u64(&m, 1024);
	put_u32(&m, GGUF_TENSOR_F32);
	put_u64(&m, 0);
	expect_error(&m, "tensor 'w' (4194304 bytes at data offset 0) extends past the end");
	header(&m, 3, 1, 0);
	put_str(&m, "w");
	put_u32(&m, 5);
	for (int d = 0; d < 6; d++)
		put_u64(&m, 1);
	expect_error(&m, "tensor 'w': 5 dimensions");
	header(&m, 3, 1, 0);
	put_str(&m, "w");
	put_u32(&m, 1);
	put_u64(&m, 31);
	put_u32(&m, GGUF_TENSOR_Q8_0);
	put_u64(&m, 0);
	expect_error(&m, "multiple of the block size");
	header(&m, 3, 1, 0);
	put_str(&m, "w");
	put_u32(&m, 2);
	put_u64(&m, (uint64_t)1 << 62);
	put_u64(&m, 16);
	put_u32(&m, GGUF_TENSOR_F32);
	put_u64(&m, 0);
	expect_error(&m, "overflow");

	CHECK(gguf_open("/nonexistent/x.gguf", err, sizeof err) == NULL);
	CHECK(strstr(err, "/nonexistent/x.gguf: cannot open") != NULL);
}

/* ---- real vocabulary files ---- */

static int test_vocab_files(void)
{
	const char *names[] = {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf"};
	const char *models[] = {"gpt2", "llama"};
	int found = 0;
	for (int i = 0; i < 2; i++) {
		char rel[256], err[512];
		snprintf(rel, sizeof rel, "../shared/data/vocab/%s", names[i]);
		const char *path = test_src_path(rel);
		if (access(path, R_OK) != 0)
			continue;
		found++;
		struct gguf *g = gguf_open(path, err, sizeof err);
		CHECK(g != NULL);
		if (!g) {
			fprintf(stderr, "%s\n", err);
			continue;
		}
		CHECK_EQ_STR(gguf_get_str(g, "tokenizer.ggml.model"), models[i]);
		long k = gguf_find_key(g, "tokenizer.ggml.tokens");
		CHECK(k >= 0 && gguf_kv_array_len(g, (size_t)k) > 1000);
		long tt = gguf_find_key(g, "tokenizer.ggml.token_type");
		CHECK(tt >= 0 && gguf_kv_array_len(g, (size_t)tt) == gguf_kv_array_len(g, (size_t)k));
		gguf_close(g);
	}
	return found;
}

int main(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(tmpdir, sizeof tmpdir, "%s/test_gguf.XXXXXX", base);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trip();
	test_truncation_and_corruption();
	test_handmade();
	if (!test_vocab_files())
		printf("note: ../shared/data/vocab absent; real vocabulary files not read\n");
	rmdir(tmpdir);
	return test_done();
}
