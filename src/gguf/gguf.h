/* gguf — reader and writer of GGUF files (format version 3, as llama.cpp's
 * ggml/docs/gguf.md specifies): header, typed metadata key/values (every type,
 * arrays included), tensor infos, alignment (general.alignment, default 32),
 * tensor data mmapped read-only.
 *
 * Ownership: struct gguf is opaque; everything a getter returns points into the
 * gguf and stays valid until gguf_close(). Strings in GGUF are not NUL-terminated
 * on disk; the reader copies them and terminates them, so getters return C strings.
 * Errors: gguf_open returns NULL and writes "FILE: what is wrong (key or tensor)"
 * into err; it validates every offset and size against the file length first, so a
 * truncated or hostile file is an error, never a crash. */
#ifndef SIXI_MODEL_GGUF_H
#define SIXI_MODEL_GGUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gguf_type {
	GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
	GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
	GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
	GGUF_TYPE_FLOAT64 = 12,
};

/* ggml tensor types the project reads (numbers as in ggml.h). */
enum gguf_tensor_type {
	GGUF_TENSOR_F32 = 0, GGUF_TENSOR_F16 = 1, GGUF_TENSOR_Q4_0 = 2, GGUF_TENSOR_Q4_1 = 3,
	GGUF_TENSOR_Q5_0 = 6, GGUF_TENSOR_Q5_1 = 7, GGUF_TENSOR_Q8_0 = 8, GGUF_TENSOR_Q8_1 = 9,
	GGUF_TENSOR_Q2_K = 10, GGUF_TENSOR_Q3_K = 11, GGUF_TENSOR_Q4_K = 12, GGUF_TENSOR_Q5_K = 13,
	GGUF_TENSOR_Q6_K = 14, GGUF_TENSOR_Q8_K = 15, GGUF_TENSOR_IQ4_NL = 20, GGUF_TENSOR_IQ4_XS = 23,
	GGUF_TENSOR_BF16 = 30,
};

struct gguf;

struct gguf_tensor {
	const char *name;
	uint32_t n_dims;
	uint64_t ne[4];          /* ne[0] is the fastest-moving dimension (ggml order); unused = 1 */
	uint32_t type;           /* enum gguf_tensor_type */
	uint64_t offset;         /* relative to the data section */
	uint64_t n_bytes;        /* computed from type and shape */
	const void *data;        /* mmapped, read-only */
};

struct gguf *gguf_open(const char *path, char *err, size_t errlen);
/* Parses a GGUF image already in memory (borrowed: it must outlive the gguf); name is used in messages. */
struct gguf *gguf_open_memory(const void *data, size_t size, const char *name, char *err, size_t errlen);
void gguf_close(struct gguf *g);

uint32_t gguf_version(const struct gguf *g);
size_t gguf_kv_count(const struct gguf *g);
const char *gguf_kv_key(const struct gguf *g, size_t i);
/* Index of key, or -1 when absent. */
long gguf_find_key(const struct gguf *g, const char *key);
enum gguf_type gguf_kv_type(const struct gguf *g, size_t i);
/* For arrays: element type and count. */
enum gguf_type gguf_kv_array_type(const struct gguf *g, size_t i);
size_t gguf_kv_array_len(const struct gguf *g, size_t i);
/* Scalars, converted: any integer type to int64/uint64, float32/64 to double. Return false when
 * the key is absent or not of a compatible type. */
bool gguf_get_i64(const struct gguf *g, const char *key, int64_t *out);
bool gguf_get_u64(const struct gguf *g, const char *key, uint64_t *out);
bool gguf_get_f64(const struct gguf *g, const char *key, double *out);
bool gguf_get_bool(const struct gguf *g, const char *key, bool *out);
const char *gguf_get_str(const struct gguf *g, const char *key);
/* Array access: element j of an array key (strings return C strings; numbers converted). */
const char *gguf_get_arr_str(const struct gguf *g, size_t i, size_t j);
bool gguf_get_arr_i64(const struct gguf *g, size_t i, size_t j, int64_t *out);
bool gguf_get_arr_f64(const struct gguf *g, size_t i, size_t j, double *out);
/* Byte length of string element j (strings may hold NUL bytes); 0 when absent. */
size_t gguf_get_arr_str_len(const struct gguf *g, size_t i, size_t j);
/* Raw pointer to a numeric array's elements (little-endian, as on disk), or NULL. */
const void *gguf_get_arr_data(const struct gguf *g, size_t i);

size_t gguf_tensor_count(const struct gguf *g);
const struct gguf_tensor *gguf_tensor_at(const struct gguf *g, size_t i);
const struct gguf_tensor *gguf_tensor_find(const struct gguf *g, const char *name);
/* Bytes of one row of ne0 elements of a tensor type; 0 for unknown types / bad ne0. */
uint64_t gguf_type_row_bytes(uint32_t type, uint64_t ne0);
const char *gguf_type_name(uint32_t type);
/* Alignment of tensor data (general.alignment or 32) and the data section's offset in the file. */
uint64_t gguf_alignment(const struct gguf *g);
uint64_t gguf_data_offset(const struct gguf *g);

/* Writer: build in memory, then write once. Keys and tensors keep insertion order. */
struct gguf_writer;
struct gguf_writer *gguf_writer_create(void);
void gguf_writer_destroy(struct gguf_writer *w);
int gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v);
int gguf_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_set_f32(struct gguf_writer *w, const char *key, float v);
int gguf_writer_set_bool(struct gguf_writer *w, const char *key, bool v);
/* Any numeric scalar type (UINT8..FLOAT64, BOOL as one byte); v points to a value of that type. */
int gguf_writer_set_num(struct gguf_writer *w, const char *key, enum gguf_type type, const void *v);
int gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *v);
/* Arrays: elements copied. */
int gguf_writer_set_arr_str(struct gguf_writer *w, const char *key, const char *const *v, size_t n);
int gguf_writer_set_arr_num(struct gguf_writer *w, const char *key, enum gguf_type elem_type, const void *v, size_t n);
/* Tensor data copied (n_bytes must equal what type and shape imply). */
int gguf_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
			   uint32_t type, const void *data, uint64_t n_bytes);
/* The same without a copy: data is borrowed and must stay valid until the writer is destroyed
 * (for large weights already in memory, e.g. mmapped safetensors). */
int gguf_writer_add_tensor_ref(struct gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
			       uint32_t type, const void *data, uint64_t n_bytes);
int gguf_writer_write(struct gguf_writer *w, const char *path, char *err, size_t errlen);
#endif
