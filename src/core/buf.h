/* buf — growable byte buffers and a bump arena.
 * struct buf is embedded by callers; read its fields, change them only through
 * the API. buf_* never leave data unterminated: data[len] == 0 whenever data != NULL.
 * struct arena hands out memory freed all at once by arena_finish (per-request data). */
#ifndef SIXI_CORE_BUF_H
#define SIXI_CORE_BUF_H
#include <stddef.h>
#include <stdarg.h>

struct buf {
	char *data;  /* NUL-terminated, owned */
	size_t len;  /* bytes used, excluding the terminator */
	size_t cap;  /* bytes allocated */
};

void buf_init(struct buf *b);
void buf_finish(struct buf *b);               /* frees; b is reusable after buf_init */
void buf_reset(struct buf *b);                /* len = 0, keeps memory */
__attribute__((warn_unused_result)) int buf_reserve(struct buf *b, size_t extra);
__attribute__((warn_unused_result)) int buf_append(struct buf *b, const void *p, size_t n);
__attribute__((warn_unused_result)) int buf_puts(struct buf *b, const char *s);
__attribute__((warn_unused_result, format(printf, 2, 3))) int buf_printf(struct buf *b, const char *fmt, ...);
__attribute__((warn_unused_result)) int buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Drops the first n bytes (memmove). */
void buf_consume(struct buf *b, size_t n);
/* Transfers ownership of the data to the caller; b becomes empty. Never NULL on success. */
char *buf_steal(struct buf *b);
/* Appends the whole file at path (of any size). Returns 0; the errno of fopen,
 * negated, when the file cannot be opened; -EIO on a read error; -ENOMEM. On an
 * error b holds what it held before; on success b->data is set even for an empty file. */
__attribute__((warn_unused_result)) int buf_read_file(struct buf *b, const char *path);
/* The whole file at path as a malloc'd NUL-terminated string, its length in *n
 * (n may be NULL); NULL with errno set as buf_read_file returns it. */
char *buf_load_file(const char *path, size_t *n);

struct arena_block;
struct arena {
	struct arena_block *head; /* newest block first */
	size_t block_bytes;       /* default size of new blocks */
};
void arena_init(struct arena *a, size_t block_bytes);
void arena_finish(struct arena *a);
/* 16-byte aligned, zeroed memory valid until arena_finish; NULL on OOM. */
void *arena_alloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
#endif
