/* gguf — GGUF v3 reader (mmap, validated) and in-memory writer.
 *
 * The reader parses the whole header, every key/value and every tensor info once
 * at open, checking each length, count and offset against the bytes that remain
 * before it reads, so a truncated or hostile file yields an error message and never
 * an out-of-bounds read. Strings are copied and NUL-terminated; numeric arrays are
 * copied into 8-byte-aligned memory (metadata on disk is unaligned). Tensor data
 * stays in the read-only mapping.
 *
 * It does not: convert byte order (hosts are little-endian, as GGUF is), verify
 * tensor contents, or keep nested arrays' elements (they are validated and
 * skipped; their outer type and length are reported).
 *
 * Workload: opened once per model file; a vocabulary of 150k tokens is a few
 * hundred thousand small copies, done once. */
#include "core/err.h"
#include "gguf/gguf.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NESTING 8

/* ---- tensor type table ---- */

struct type_info {
	uint32_t type;
	const char *name;
	uint32_t block_elems; /* elements per block */
	uint32_t block_bytes; /* bytes per block */
};

static const struct type_info type_table[] = {
	{0, "F32", 1, 4},     {1, "F16", 1, 2},      {2, "Q4_0", 32, 18},  {3, "Q4_1", 32, 20},
	{6, "Q5_0", 32, 22},  {7, "Q5_1", 32, 24},   {8, "Q8_0", 32, 34},  {9, "Q8_1", 32, 36},
	{10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
	{14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {20, "IQ4_NL", 32, 18}, {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},   {25, "I16", 1, 2},
	{26, "I32", 1, 4},    {27, "I64", 1, 8},     {28, "F64", 1, 8},    {30, "BF16", 1, 2},
};

static const struct type_info *type_lookup(uint32_t type)
{
	for (size_t i = 0; i < sizeof type_table / sizeof type_table[0]; i++)
		if (type_table[i].type == type)
			return &type_table[i];
	return NULL;
}

uint64_t gguf_type_row_bytes(uint32_t type, uint64_t ne0)
{
	const struct type_info *t = type_lookup(type);
	if (!t || ne0 % t->block_elems != 0)
		return 0;
	uint64_t blocks = ne0 / t->block_elems;
	if (blocks > UINT64_MAX / t->block_bytes)
		return 0;
	return blocks * t->block_bytes;
}

const char *gguf_type_name(uint32_t type)
{
	const struct type_info *t = type_lookup(type);
	return t ? t->name : "unknown";
}

/* Bytes of a whole tensor; false on unknown type, ne0 not a multiple of the block, or overflow. */
static bool tensor_bytes(uint32_t type, uint32_t n_dims, const uint64_t *ne, uint64_t *out)
{
	const struct type_info *t = type_lookup(type);
	if (!t || ne[0] % t->block_elems != 0)
		return false;
	uint64_t total = gguf_type_row_bytes(type, ne[0]);
	if (ne[0] != 0 && total == 0)
		return false;
	for (uint32_t d = 1; d < n_dims; d++) {
		if (ne[d] != 0 && total > UINT64_MAX / ne[d])
			return false;
		total *= ne[d];
	}
	*out = total;
	return true;
}

static size_t scalar_size(uint32_t type)
{
	switch (type) {
	case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
	case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
	case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
	case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
	default: return 0;
	}
}

static const char *kv_type_name(uint32_t type)
{
	static const char *names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
				      "bool", "string", "array", "uint64", "int64", "float64"};
	return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

/* ---- reader ---- */

struct gguf_kv {
	char *key;
	enum gguf_type type;
	enum gguf_type arr_type; /* arrays only */
	size_t arr_len;          /* arrays only */
	union {
		uint64_t u;
		int64_t i;
		double f;
	} num;                   /* numeric and bool scalars, widened */
	char *str;               /* GGUF_TYPE_STRING */
	char **strs;             /* string arrays: arr_len pointers into strs_data */
	char *strs_data;
	void *arr;               /* numeric arrays: arr_len * scalar_size bytes, aligned copy */
};

struct gguf {
	char *name;          /* file name used in messages */
	const uint8_t *base; /* file bytes */
	size_t size;         /* bytes */
	void *map;           /* mapping to munmap, or NULL for memory the caller owns */
	uint32_t version;
	size_t n_kv;
	struct gguf_kv *kv;  /* n_kv entries */
	size_t n_tensors;
	struct gguf_tensor *tensors; /* n_tensors entries */
	char **tensor_names;         /* owned copies */
	uint64_t alignment;
	uint64_t data_offset;        /* bytes from file start to the data section */
};

struct reader {
	const uint8_t *p;
	size_t size;
	size_t pos;
	const char *name;
	char *err;
	size_t errlen;
};


static int rd_fail(struct reader *r, const char *what, size_t need)
{
	err_set(r->err, r->errlen, "%s: truncated or corrupt: %s needs %zu bytes at offset %zu but the file has %zu",
		r->name, what, need, r->pos, r->size);
	return -EINVAL;
}

static int rd_bytes(struct reader *r, void *out, size_t n, const char *what)
{
	if (n > r->size - r->pos)
		return rd_fail(r, what, n);
	memcpy(out, r->p + r->pos, n);
	r->pos += n;
	return 0;
}

static int rd_u32(struct reader *r, uint32_t *v, const char *what) { return rd_bytes(r, v, 4, what); }
static int rd_u64(struct reader *r, uint64_t *v, const char *what) { return rd_bytes(r, v, 8, what); }

/* Reads a GGUF string (u64 length + bytes). With out != NULL, returns a malloc'd NUL-terminated copy. */
static int rd_str(struct reader *r, char **out, const char *what)
{
	uint64_t len;
	int rc = rd_u64(r, &len, what);
	if (rc)
		return rc;
	if (len > r->size - r->pos)
		return rd_fail(r, what, len > SIZE_MAX ? SIZE_MAX : (size_t)len);
	if (out) {
		char *s = malloc((size_t)len + 1);
		if (!s) {
			err_set(r->err, r->errlen, "%s: out of memory reading %s", r->name, what);
			return -ENOMEM;
		}
		memcpy(s, r->p + r->pos, (size_t)len);
		s[len] = 0;
		*out = s;
	}
	r->pos += (size_t)len;
	return 0;
}

static void widen_scalar(uint32_t type, const uint8_t *src, struct gguf_kv *kv)
{
	switch (type) {
	case GGUF_TYPE_UINT8: kv->num.u = src[0]; break;
	case GGUF_TYPE_BOOL: kv->num.u = src[0] != 0; break;
	case GGUF_TYPE_INT8: { int8_t v; memcpy(&v, src, 1); kv->num.i = v; break; }
	case GGUF_TYPE_UINT16: { uint16_t v; memcpy(&v, src, 2); kv->num.u = v; break; }
	case GGUF_TYPE_INT16: { int16_t v; memcpy(&v, src, 2); kv->num.i = v; break; }
	case GGUF_TYPE_UINT32: { uint32_t v; memcpy(&v, src, 4); kv->num.u = v; break; }
	case GGUF_TYPE_INT32: { int32_t v; memcpy(&v, src, 4); kv->num.i = v; break; }
	case GGUF_TYPE_UINT64: memcpy(&kv->num.u, src, 8); break;
	case GGUF_TYPE_INT64: memcpy(&kv->num.i, src, 8); break;
	case GGUF_TYPE_FLOAT32: { float v; memcpy(&v, src, 4); kv->num.f = v; break; }
	case GGUF_TYPE_FLOAT64: memcpy(&kv->num.f, src, 8); break;
	default: break;
	}
}

/* Validates (and skips) an array's elements without keeping them: used for nested arrays. */
static int skip_array(struct reader *r, const char *key, int depth)
{
	uint32_t et;
	uint64_t n;
	int rc;
	if (depth > GGUF_MAX_NESTING) {
		err_set(r->err, r->errlen, "%s: key '%s': arrays nested deeper than %d", r->name, key, GGUF_MAX_NESTING);
		return -EINVAL;
	}
	if ((rc = rd_u32(r, &et, "array element type")) || (rc = rd_u64(r, &n, "array length")))
		return rc;
	if (et == GGUF_TYPE_STRING) {
		for (uint64_t j = 0; j < n; j++)
			if ((rc = rd_str(r, NULL, "array string")))
				return rc;
	} else if (et == GGUF_TYPE_ARRAY) {
		if (n > (r->size - r->pos) / 12)
			return rd_fail(r, "nested array", 12);
		for (uint64_t j = 0; j < n; j++)
			if ((rc = skip_array(r, key, depth + 1)))
				return rc;
	} else {
		size_t es = scalar_size(et);
		if (!es) {
			err_set(r->err, r->errlen, "%s: key '%s': unknown array element type %u", r->name, key, et);
			return -EINVAL;
		}
		if (n > (r->size - r->pos) / es)
			return rd_fail(r, "array data", es);
		r->pos += (size_t)n * es;
	}
	return 0;
}

static int read_array(struct reader *r, struct gguf_kv *kv)
{
	uint32_t et;
	uint64_t n;
	int rc;
	if ((rc = rd_u32(r, &et, "array element type")) || (rc = rd_u64(r, &n, "array length")))
		return rc;
	kv->arr_type = et;
	if (et == GGUF_TYPE_STRING) {
		/* Each element takes at least its 8-byte length. */
		if (n > (r->size - r->pos) / 8)
			return rd_fail(r, "string array", 8);
		size_t start = r->pos, total = 0;
		for (uint64_t j = 0; j < n; j++) {
			uint64_t len;
			if ((rc = rd_u64(r, &len, "array string length")))
				return rc;
			if (len > r->size - r->pos)
				return rd_fail(r, "array string", (size_t)(len > SIZE_MAX ? SIZE_MAX : len));
			r->pos += (size_t)len;
			total += (size_t)len + 1;
		}
		kv->strs = malloc((n ? (size_t)n : 1) * sizeof *kv->strs);
		kv->strs_data = malloc(total ? total : 1);
		if (!kv->strs || !kv->strs_data) {
			err_set(r->err, r->errlen, "%s: out of memory reading key '%s'", r->name, kv->key);
			return -ENOMEM;
		}
		size_t pos = start, out = 0;
		for (uint64_t j = 0; j < n; j++) {
			uint64_t len;
			memcpy(&len, r->p + pos, 8);
			pos += 8;
			memcpy(kv->strs_data + out, r->p + pos, (size_t)len);
			kv->strs[j] = kv->strs_data + out;
			out += (size_t)len;
			kv->strs_data[out++] = 0;
			pos += (size_t)len;
		}
	} else if (et == GGUF_TYPE_ARRAY) {
		if (n > (r->size - r->pos) / 12)
			return rd_fail(r, "nested array", 12);
		for (uint64_t j = 0; j < n; j++)
			if ((rc = skip_array(r, kv->key, 2)))
				return rc;
	} else {
		size_t es = scalar_size(et);
		if (!es) {
			err_set(r->err, r->errlen, "%s: key '%s': unknown array element type %u", r->name, kv->key, et);
			return -EINVAL;
		}
		if (n > (r->size - r->pos) / es)
			return rd_fail(r, "array data", es);
		size_t bytes = (size_t)n * es;
		kv->arr = malloc(bytes ? bytes : 1);
		if (!kv->arr) {
			err_set(r->err, r->errlen, "%s: out of memory reading key '%s'", r->name, kv->key);
			return -ENOMEM;
		}
		memcpy(kv->arr, r->p + r->pos, bytes);
		r->pos += bytes;
	}
	kv->arr_len = (size_t)n;
	return 0;
}

static int read_kv(struct reader *r, struct gguf_kv *kv)
{
	uint32_t type;
	int rc;
	if ((rc = rd_str(r, &kv->key, "key")))
		return rc;
	if ((rc = rd_u32(r, &type, "value type")))
		return rc;
	kv->type = type;
	if (type == GGUF_TYPE_STRING)
		return rd_str(r, &kv->str, "string value");
	if (type == GGUF_TYPE_ARRAY)
		return read_array(r, kv);
	size_t es = scalar_size(type);
	if (!es) {
		err_set(r->err, r->errlen, "%s: key '%s': unknown value type %u", r->name, kv->key, type);
		return -EINVAL;
	}
	uint8_t tmp[8];
	if ((rc = rd_bytes(r, tmp, es, "scalar value")))
		return rc;
	widen_scalar(type, tmp, kv);
	return 0;
}

static int read_tensor_info(struct reader *r, struct gguf *g, size_t i)
{
	struct gguf_tensor *t = &g->tensors[i];
	int rc;
	if ((rc = rd_str(r, &g->tensor_names[i], "tensor name")))
		return rc;
	t->name = g->tensor_names[i];
	if ((rc = rd_u32(r, &t->n_dims, "tensor dimension count")))
		return rc;
	if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
		err_set(r->err, r->errlen, "%s: tensor '%s': %u dimensions (supported: 1 to %d)", r->name, t->name,
			t->n_dims, GGUF_MAX_DIMS);
		return -EINVAL;
	}
	for (int d = 0; d < GGUF_MAX_DIMS; d++)
		t->ne[d] = 1;
	for (uint32_t d = 0; d < t->n_dims; d++) {
		if ((rc = rd_u64(r, &t->ne[d], "tensor shape")))
			return rc;
		if (t->ne[d] > (uint64_t)INT64_MAX) {
			err_set(r->err, r->errlen, "%s: tensor '%s': dimension %u is %llu (too large)", r->name, t->name, d,
				(unsigned long long)t->ne[d]);
			return -EINVAL;
		}
	}
	if ((rc = rd_u32(r, &t->type, "tensor type")) || (rc = rd_u64(r, &t->offset, "tensor offset")))
		return rc;
	if (!type_lookup(t->type)) {
		err_set(r->err, r->errlen,
			"%s: tensor '%s': unsupported type %u (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K and other "
			"ggml block types up to Q8_K)", r->name, t->name, t->type);
		return -EINVAL;
	}
	if (!tensor_bytes(t->type, t->n_dims, t->ne, &t->n_bytes)) {
		err_set(r->err, r->errlen, "%s: tensor '%s': shape [%llu x %llu x %llu x %llu] does not fit type %s "
			"(ne0 must be a multiple of the block size; size must not overflow)", r->name, t->name,
			(unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
			(unsigned long long)t->ne[3], gguf_type_name(t->type));
		return -EINVAL;
	}
	return 0;
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Finds a duplicate among n strings (sorts s in place); returns it or NULL. */
static const char *find_duplicate(const char **s, size_t n)
{
	if (n < 2)
		return NULL;
	qsort(s, n, sizeof *s, cmp_str_ptr);
	for (size_t i = 1; i < n; i++)
		if (strcmp(s[i - 1], s[i]) == 0)
			return s[i];
	return NULL;
}

/* Rejects duplicate keys and tensor names (lookups would be ambiguous). */
static int check_duplicates(struct gguf *g, char *err, size_t errlen)
{
	size_t n = g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors;
	const char **s = malloc((n ? n : 1) * sizeof *s);
	if (!s) {
		err_set(err, errlen, "%s: out of memory", g->name);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < g->n_kv; i++)
		s[i] = g->kv[i].key;
	const char *dup = find_duplicate(s, g->n_kv);
	if (dup) {
		err_set(err, errlen, "%s: duplicate key '%s'", g->name, dup);
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < g->n_tensors; i++)
		s[i] = g->tensors[i].name;
	dup = find_duplicate(s, g->n_tensors);
	if (dup) {
		err_set(err, errlen, "%s: duplicate tensor '%s'", g->name, dup);
		rc = -EINVAL;
	}
out:
	free(s);
	return rc;
}

static int parse(struct gguf *g, char *err, size_t errlen)
{
	struct reader r = {.p = g->base, .size = g->size, .pos = 0, .name = g->name, .err = err, .errlen = errlen};
	char magic[4];
	uint64_t n_tensors, n_kv;
	int rc;
	if ((rc = rd_bytes(&r, magic, 4, "magic")))
		return rc;
	if (memcmp(magic, GGUF_MAGIC, 4) != 0) {
		err_set(err, errlen, "%s: not a GGUF file (magic is not \"GGUF\")", g->name);
		return -EINVAL;
	}
	if ((rc = rd_u32(&r, &g->version, "version")))
		return rc;
	if (g->version != 2 && g->version != 3) {
		err_set(err, errlen, "%s: GGUF version %u is not supported (supported: 2 and 3)", g->name, g->version);
		return -EINVAL;
	}
	if ((rc = rd_u64(&r, &n_tensors, "tensor count")) || (rc = rd_u64(&r, &n_kv, "key/value count")))
		return rc;
	/* A key/value takes at least 12 bytes and a tensor info at least 28: bound the counts first. */
	if (n_kv > (r.size - r.pos) / 12 || n_tensors > (r.size - r.pos) / 28) {
		err_set(err, errlen, "%s: truncated or corrupt: header claims %llu keys and %llu tensors but only %zu bytes follow",
			g->name, (unsigned long long)n_kv, (unsigned long long)n_tensors, r.size - r.pos);
		return -EINVAL;
	}
	g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
	g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
	g->tensor_names = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensor_names);
	if (!g->kv || !g->tensors || !g->tensor_names) {
		err_set(err, errlen, "%s: out of memory", g->name);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_kv; i++) {
		g->n_kv = i + 1; /* so close frees what this entry allocated */
		if ((rc = read_kv(&r, &g->kv[i])))
			return rc;
	}
	g->n_kv = (size_t)n_kv;
	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	long ai = gguf_find_key(g, "general.alignment");
	if (ai >= 0) {
		const struct gguf_kv *kv = &g->kv[ai];
		if (kv->type != GGUF_TYPE_UINT32 || kv->num.u == 0 || (kv->num.u & (kv->num.u - 1)) != 0) {
			err_set(err, errlen, "%s: key 'general.alignment' must be a uint32 power of two (it is a %s)",
				g->name, kv_type_name(kv->type));
			return -EINVAL;
		}
		g->alignment = kv->num.u;
	}
	for (size_t i = 0; i < n_tensors; i++) {
		g->n_tensors = i + 1;
		if ((rc = read_tensor_info(&r, g, i)))
			return rc;
	}
	g->n_tensors = (size_t)n_tensors;
	if ((rc = check_duplicates(g, err, errlen)))
		return rc;
	uint64_t pad = (g->alignment - r.pos % g->alignment) % g->alignment;
	g->data_offset = r.pos + pad;
	for (size_t i = 0; i < g->n_tensors; i++) {
		struct gguf_tensor *t = &g->tensors[i];
		if (t->offset % g->alignment != 0) {
			err_set(err, errlen, "%s: tensor '%s': data offset %llu is not a multiple of the alignment %llu",
				g->name, t->name, (unsigned long long)t->offset, (unsigned long long)g->alignment);
			return -EINVAL;
		}
		if (g->data_offset > g->size || t->offset > g->size - g->data_offset ||
		    t->n_bytes > g->size - g->data_offset - t->offset) {
			err_set(err, errlen, "%s: truncated or corrupt: tensor '%s' (%llu bytes at data offset %llu) "
				"extends past the end of the file (%zu bytes); the file is incomplete: copy, download or "
				"convert it again", g->name, t->name,
				(unsigned long long)t->n_bytes, (unsigned long long)t->offset, g->size);
			return -EINVAL;
		}
		t->data = g->base + g->data_offset + t->offset;
	}
	return 0;
}

void gguf_close(struct gguf *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_kv; i++) {
		free(g->kv[i].key);
		free(g->kv[i].str);
		free(g->kv[i].strs);
		free(g->kv[i].strs_data);
		free(g->kv[i].arr);
	}
	free(g->kv);
	for (size_t i = 0; i < g->n_tensors; i++)
		free(g->tensor_names[i]);
	free(g->tensor_names);
	free(g->tensors);
	if (g->map)
		munmap(g->map, g->size);
	free(g->name);
	free(g);
}

struct gguf *gguf_open_memory(const void *data, size_t size, const char *name, char *err, size_t errlen)
{
	struct gguf *g = calloc(1, sizeof *g);
	if (!g || !(g->name = strdup(name ? name : "(memory)"))) {
		free(g);
		err_set(err, errlen, "%s: out of memory", name ? name : "(memory)");
		return NULL;
	}
	g->base = data;
	g->size = size;
	if (parse(g, err, errlen) != 0) {
		gguf_close(g);
		return NULL;
	}
	return g;
}

struct gguf *gguf_open(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		err_set(err, errlen, "%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if (st.st_size < 24) {
		err_set(err, errlen, "%s: truncated: %lld bytes is shorter than a GGUF header (24 bytes)", path,
			(long long)st.st_size);
		close(fd);
		return NULL;
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		err_set(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		return NULL;
	}
	struct gguf *g = gguf_open_memory(map, (size_t)st.st_size, path, err, errlen);
	if (!g) {
		munmap(map, (size_t)st.st_size);
		return NULL;
	}
	g->map = map;
	return g;
}

/* ---- getters ---- */

uint32_t gguf_version(const struct gguf *g) { return g->version; }
size_t gguf_kv_count(const struct gguf *g) { return g->n_kv; }
const char *gguf_kv_key(const struct gguf *g, size_t i) { return i < g->n_kv ? g->kv[i].key : NULL; }
enum gguf_type gguf_kv_type(const struct gguf *g, size_t i)
{
	assert(i < g->n_kv);
	return g->kv[i].type;
}

enum gguf_type gguf_kv_array_type(const struct gguf *g, size_t i)
{
	assert(i < g->n_kv);
	return g->kv[i].arr_type;
}

size_t gguf_kv_array_len(const struct gguf *g, size_t i)
{
	return i < g->n_kv && g->kv[i].type == GGUF_TYPE_ARRAY ? g->kv[i].arr_len : 0;
}

long gguf_find_key(const struct gguf *g, const char *key)
{
	for (size_t i = 0; i < g->n_kv; i++)
		if (strcmp(g->kv[i].key, key) == 0)
			return (long)i;
	return -1;
}

static bool is_signed_int(uint32_t t)
{
	return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

static bool is_unsigned_int(uint32_t t)
{
	return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64;
}

static bool is_float(uint32_t t) { return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64; }

static const struct gguf_kv *kv_get(const struct gguf *g, const char *key)
{
	long i = gguf_find_key(g, key);
	return i < 0 ? NULL : &g->kv[i];
}

bool gguf_get_i64(const struct gguf *g, const char *key, int64_t *out)
{
	const struct gguf_kv *kv = kv_get(g, key);
	if (!kv)
		return false;
	if (is_signed_int(kv->type)) {
		*out = kv->num.i;
		return true;
	}
	if (is_unsigned_int(kv->type) && kv->num.u <= (uint64_t)INT64_MAX) {
		*out = (int64_t)kv->num.u;
		return true;
	}
	return false;
}

bool gguf_get_u64(const struct gguf *g, const char *key, uint64_t *out)
{
	const struct gguf_kv *kv = kv_get(g, key);
	if (!kv)
		return false;
	if (is_unsigned_int(kv->type)) {
		*out = kv->num.u;
		return true;
	}
	if (is_signed_int(kv->type) && kv->num.i >= 0) {
		*out = (uint64_t)kv->num.i;
		return true;
	}
	return false;
}

bool gguf_get_f64(const struct gguf *g, const char *key, double *out)
{
	const struct gguf_kv *kv = kv_get(g, key);
	if (!kv)
		return false;
	if (is_float(kv->type))
		*out = kv->num.f;
	else if (is_signed_int(kv->type))
		*out = (double)kv->num.i;
	else if (is_unsigned_int(kv->type))
		*out = (double)kv->num.u;
	else
		return false;
	return true;
}

bool gguf_get_bool(const struct gguf *g, const char *key, bool *out)
{
	const struct gguf_kv *kv = kv_get(g, key);
	if (!kv || kv->type != GGUF_TYPE_BOOL)
		return false;
	*out = kv->num.u != 0;
	return true;
}

const char *gguf_get_str(const struct gguf *g, const char *key)
{
	const struct gguf_kv *kv = kv_get(g, key);
	return kv && kv->type == GGUF_TYPE_STRING ? kv->str : NULL;
}

const char *gguf_get_arr_str(const struct gguf *g, size_t i, size_t j)
{
	if (i >= g->n_kv)
		return NULL;
	const struct gguf_kv *kv = &g->kv[i];
	if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING || j >= kv->arr_len)
		return NULL;
	return kv->strs[j];
}

size_t gguf_get_arr_str_len(const struct gguf *g, size_t i, size_t j)
{
	const char *s = gguf_get_arr_str(g, i, j);
	if (!s)
		return 0;
	const struct gguf_kv *kv = &g->kv[i];
	/* Elements are stored back to back, each followed by its terminator. */
	const char *next = j + 1 < kv->arr_len ? kv->strs[j + 1] : NULL;
	return next ? (size_t)(next - s) - 1 : strlen(s);
}

/* Reads element j of a numeric array as its widened value; false if not numeric or out of range. */
static bool arr_elem(const struct gguf *g, size_t i, size_t j, struct gguf_kv *val)
{
	if (i >= g->n_kv)
		return false;
	const struct gguf_kv *kv = &g->kv[i];
	if (kv->type != GGUF_TYPE_ARRAY || !kv->arr || j >= kv->arr_len)
		return false;
	size_t es = scalar_size(kv->arr_type);
	widen_scalar(kv->arr_type, (const uint8_t *)kv->arr + j * es, val);
	val->type = kv->arr_type;
	return true;
}

bool gguf_get_arr_i64(const struct gguf *g, size_t i, size_t j, int64_t *out)
{
	struct gguf_kv v = {0};
	if (!arr_elem(g, i, j, &v))
		return false;
	if (is_signed_int(v.type))
		*out = v.num.i;
	else if ((is_unsigned_int(v.type) || v.type == GGUF_TYPE_BOOL) && v.num.u <= (uint64_t)INT64_MAX)
		*out = (int64_t)v.num.u;
	else
		return false;
	return true;
}

bool gguf_get_arr_f64(const struct gguf *g, size_t i, size_t j, double *out)
{
	struct gguf_kv v = {0};
	if (!arr_elem(g, i, j, &v))
		return false;
	if (is_float(v.type))
		*out = v.num.f;
	else if (is_signed_int(v.type))
		*out = (double)v.num.i;
	else if (is_unsigned_int(v.type) || v.type == GGUF_TYPE_BOOL)
		*out = (double)v.num.u;
	else
		return false;
	return true;
}

const void *gguf_get_arr_data(const struct gguf *g, size_t i)
{
	if (i >= g->n_kv || g->kv[i].type != GGUF_TYPE_ARRAY)
		return NULL;
	return g->kv[i].arr;
}

size_t gguf_tensor_count(const struct gguf *g) { return g->n_tensors; }

const struct gguf_tensor *gguf_tensor_at(const struct gguf *g, size_t i)
{
	return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const struct gguf_tensor *gguf_tensor_find(const struct gguf *g, const char *name)
{
	for (size_t i = 0; i < g->n_tensors; i++)
		if (strcmp(g->tensors[i].name, name) == 0)
			return &g->tensors[i];
	return NULL;
}

uint64_t gguf_alignment(const struct gguf *g) { return g->alignment; }
uint64_t gguf_data_offset(const struct gguf *g) { return g->data_offset; }

/* ---- writer ---- */

struct wkv {
	char *key;
	uint8_t *val; /* serialized: u32 type, then the value as on disk */
	size_t len;   /* bytes in val */
};

struct wtensor {
	char *name;
	uint32_t n_dims;
	uint64_t ne[GGUF_MAX_DIMS];
	uint32_t type;
	const void *data; /* n_bytes: an owned copy, or the caller's memory when !owned */
	uint64_t n_bytes;
	bool owned;
};

struct gguf_writer {
	struct wkv *kv;
	size_t n_kv, cap_kv;
	struct wtensor *t;
	size_t n_t, cap_t;
};

struct gguf_writer *gguf_writer_create(void)
{
	return calloc(1, sizeof(struct gguf_writer));
}

void gguf_writer_destroy(struct gguf_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_kv; i++) {
		free(w->kv[i].key);
		free(w->kv[i].val);
	}
	for (size_t i = 0; i < w->n_t; i++) {
		free(w->t[i].name);
		if (w->t[i].owned)
			free((void *)w->t[i].data);
	}
	free(w->kv);
	free(w->t);
	free(w);
}

/* A small growable byte buffer for serializing values. */
struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void wb_put(struct wbuf *b, const void *src, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void wb_u32(struct wbuf *b, uint32_t v) { wb_put(b, &v, 4); }
static void wb_u64(struct wbuf *b, uint64_t v) { wb_put(b, &v, 8); }

static void wb_str(struct wbuf *b, const char *s)
{
	size_t n = strlen(s);
	wb_u64(b, n);
	wb_put(b, s, n);
}

/* Takes ownership of b's bytes; replaces the value when the key already exists. */
static int writer_put(struct gguf_writer *w, const char *key, struct wbuf *b)
{
	if (b->err) {
		free(b->p);
		return b->err;
	}
	for (size_t i = 0; i < w->n_kv; i++) {
		if (strcmp(w->kv[i].key, key) == 0) {
			free(w->kv[i].val);
			w->kv[i].val = b->p;
			w->kv[i].len = b->len;
			return 0;
		}
	}
	if (w->n_kv == w->cap_kv) {
		size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
		struct wkv *nk = realloc(w->kv, cap * sizeof *nk);
		if (!nk) {
			free(b->p);
			return -ENOMEM;
		}
		w->kv = nk;
		w->cap_kv = cap;
	}
	char *k = strdup(key);
	if (!k) {
		free(b->p);
		return -ENOMEM;
	}
	w->kv[w->n_kv++] = (struct wkv){.key = k, .val = b->p, .len = b->len};
	return 0;
}

int gguf_writer_set_num(struct gguf_writer *w, const char *key, enum gguf_type type, const void *v)
{
	size_t es = scalar_size(type);
	if (!es)
		return -EINVAL;
	struct wbuf b = {0};
	wb_u32(&b, type);
	wb_put(&b, v, es);
	return writer_put(w, key, &b);
}

int gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v)
{
	return gguf_writer_set_num(w, key, GGUF_TYPE_UINT32, &v);
}

int gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v)
{
	return gguf_writer_set_num(w, key, GGUF_TYPE_INT32, &v);
}

int gguf_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t v)
{
	return gguf_writer_set_num(w, key, GGUF_TYPE_UINT64, &v);
}

int gguf_writer_set_f32(struct gguf_writer *w, const char *key, float v)
{
	return gguf_writer_set_num(w, key, GGUF_TYPE_FLOAT32, &v);
}

int gguf_writer_set_bool(struct gguf_writer *w, const char *key, bool v)
{
	uint8_t b = v ? 1 : 0;
	return gguf_writer_set_num(w, key, GGUF_TYPE_BOOL, &b);
}

int gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *v)
{
	struct wbuf b = {0};
	wb_u32(&b, GGUF_TYPE_STRING);
	wb_str(&b, v);
	return writer_put(w, key, &b);
}

int gguf_writer_set_arr_str(struct gguf_writer *w, const char *key, const char *const *v, size_t n)
{
	struct wbuf b = {0};
	wb_u32(&b, GGUF_TYPE_ARRAY);
	wb_u32(&b, GGUF_TYPE_STRING);
	wb_u64(&b, n);
	for (size_t i = 0; i < n; i++)
		wb_str(&b, v[i]);
	return writer_put(w, key, &b);
}

int gguf_writer_set_arr_num(struct gguf_writer *w, const char *key, enum gguf_type elem_type, const void *v, size_t n)
{
	size_t es = scalar_size(elem_type);
	if (!es || (n && n > SIZE_MAX / es))
		return -EINVAL;
	struct wbuf b = {0};
	wb_u32(&b, GGUF_TYPE_ARRAY);
	wb_u32(&b, elem_type);
	wb_u64(&b, n);
	if (n)
		wb_put(&b, v, n * es);
	return writer_put(w, key, &b);
}

static int add_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
		      const void *data, uint64_t n_bytes, bool copy)
{
	uint64_t shape[GGUF_MAX_DIMS] = {1, 1, 1, 1}, want;
	if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
		return -EINVAL;
	for (uint32_t d = 0; d < n_dims; d++)
		shape[d] = ne[d];
	if (!tensor_bytes(type, n_dims, shape, &want) || want != n_bytes || n_bytes > SIZE_MAX)
		return -EINVAL;
	for (size_t i = 0; i < w->n_t; i++)
		if (strcmp(w->t[i].name, name) == 0)
			return -EEXIST;
	if (w->n_t == w->cap_t) {
		size_t cap = w->cap_t ? 2 * w->cap_t : 16;
		struct wtensor *nt = realloc(w->t, cap * sizeof *nt);
		if (!nt)
			return -ENOMEM;
		w->t = nt;
		w->cap_t = cap;
	}
	struct wtensor *t = &w->t[w->n_t];
	memset(t, 0, sizeof *t);
	t->name = strdup(name);
	void *owned = copy ? malloc(n_bytes ? (size_t)n_bytes : 1) : NULL;
	if (!t->name || (copy && !owned)) {
		free(t->name);
		free(owned);
		return -ENOMEM;
	}
	if (copy && n_bytes)
		memcpy(owned, data, (size_t)n_bytes);
	t->data = copy ? owned : data;
	t->owned = copy;
	t->n_dims = n_dims;
	memcpy(t->ne, shape, sizeof shape);
	t->type = type;
	t->n_bytes = n_bytes;
	w->n_t++;
	return 0;
}

int gguf_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
			   uint32_t type, const void *data, uint64_t n_bytes)
{
	return add_tensor(w, name, n_dims, ne, type, data, n_bytes, true);
}

int gguf_writer_add_tensor_ref(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
			       uint32_t type, const void *data, uint64_t n_bytes)
{
	return add_tensor(w, name, n_dims, ne, type, data, n_bytes, false);
}

static uint64_t writer_alignment(const struct gguf_writer *w)
{
	for (size_t i = 0; i < w->n_kv; i++) {
		if (strcmp(w->kv[i].key, "general.alignment") == 0 && w->kv[i].len == 8) {
			uint32_t type, v;
			memcpy(&type, w->kv[i].val, 4);
			memcpy(&v, w->kv[i].val + 4, 4);
			if (type == GGUF_TYPE_UINT32 && v && (v & (v - 1)) == 0)
				return v;
		}
	}
	return GGUF_DEFAULT_ALIGNMENT;
}

static int write_all(FILE *f, const void *p, size_t n)
{
	return n == 0 || fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

static int write_zeros(FILE *f, uint64_t n)
{
	static const uint8_t zeros[64];
	while (n) {
		size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
		if (write_all(f, zeros, k))
			return -EIO;
		n -= k;
	}
	return 0;
}

int gguf_writer_write(struct gguf_writer *w, const char *path, char *err, size_t errlen)
{
	uint64_t align = writer_alignment(w);
	struct wbuf head = {0};
	wb_put(&head, GGUF_MAGIC, 4);
	wb_u32(&head, 3);
	wb_u64(&head, w->n_t);
	wb_u64(&head, w->n_kv);
	for (size_t i = 0; i < w->n_kv; i++) {
		wb_str(&head, w->kv[i].key);
		wb_put(&head, w->kv[i].val, w->kv[i].len);
	}
	uint64_t off = 0;
	for (size_t i = 0; i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];
		wb_str(&head, t->name);
		wb_u32(&head, t->n_dims);
		for (uint32_t d = 0; d < t->n_dims; d++)
			wb_u64(&head, t->ne[d]);
		wb_u32(&head, t->type);
		wb_u64(&head, off);
		off += t->n_bytes;
		off += (align - off % align) % align;
	}
	if (head.err) {
		err_set(err, errlen, "%s: out of memory building the GGUF header", path);
		free(head.p);
		return head.err;
	}
	/* Write to a temporary file next to the target and rename, so a failure leaves nothing half-written. */
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	if (!tmp) {
		free(head.p);
		err_set(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
	int rc = 0;
	int fd = mkstemp(tmp);
	FILE *f = NULL;
	if (fd < 0 || !(f = fdopen(fd, "wb"))) {
		rc = -errno;
		err_set(err, errlen, "%s: cannot create: %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		goto out;
	}
	(void)fchmod(fd, 0644);
	rc = write_all(f, head.p, head.len);
	if (!rc)
		rc = write_zeros(f, (align - head.len % align) % align);
	for (size_t i = 0; i < w->n_t && !rc; i++) {
		rc = write_all(f, w->t[i].data, (size_t)w->t[i].n_bytes);
		if (!rc)
			rc = write_zeros(f, (align - w->t[i].n_bytes % align) % align);
	}
	if (fflush(f) != 0 || ferror(f))
		rc = -EIO;
	if (fclose(f) != 0)
		rc = -EIO;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		err_set(err, errlen, "%s: write failed: %s", path, strerror(-rc));
		unlink(tmp);
	}
out:
	free(tmp);
	free(head.p);
	return rc;
}
