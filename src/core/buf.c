/* buf — see buf.h. Growth doubles capacity so appends are amortised O(1). */
#include "core/buf.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b) { b->data = NULL; b->len = 0; b->cap = 0; }

void buf_finish(struct buf *b)
{
	if (!b)
		return;
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = 0;
}

int buf_reserve(struct buf *b, size_t extra)
{
	if (extra > ((size_t)-1) / 2 - b->len)
		return -ENOMEM;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int buf_puts(struct buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	int rc = buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = 0;
}

char *buf_steal(struct buf *b)
{
	if (!b->data && buf_reserve(b, 0))
		return NULL;
	char *p = b->data;
	buf_init(b);
	return p;
}

int buf_read_file(struct buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	size_t had = b->len;
	int rc = buf_reserve(b, 0);
	while (rc == 0) {
		if ((rc = buf_reserve(b, 65536)))
			break;
		size_t got = fread(b->data + b->len, 1, b->cap - b->len - 1, f);
		b->len += got;
		if (got == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc)
		b->len = had;
	if (b->data)
		b->data[b->len] = 0;
	return rc;
}

char *buf_load_file(const char *path, size_t *n)
{
	struct buf b;
	buf_init(&b);
	int rc = buf_read_file(&b, path);
	if (rc) {
		buf_finish(&b);
		errno = -rc;
		return NULL;
	}
	if (n)
		*n = b.len;
	return buf_steal(&b);
}

struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
};

void arena_init(struct arena *a, size_t block_bytes)
{
	a->head = NULL;
	a->block_bytes = block_bytes ? block_bytes : 64 * 1024;
}

void arena_finish(struct arena *a)
{
	if (!a)
		return;
	struct arena_block *blk = a->head;
	while (blk) {
		struct arena_block *next = blk->next;
		free(blk);
		blk = next;
	}
	a->head = NULL;
}

void *arena_alloc(struct arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct arena_block *blk = a->head;
	if (!blk || blk->cap - blk->used < n) {
		size_t cap = n > a->block_bytes ? n : a->block_bytes;
		blk = malloc(sizeof *blk + cap);
		if (!blk)
			return NULL;
		blk->used = 0;
		blk->cap = cap;
		blk->next = a->head;
		a->head = blk;
	}
	void *p = blk->mem + blk->used;
	blk->used += n;
	memset(p, 0, n);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (p)
		memcpy(p, s, n);
	return p;
}

char *arena_strdup(struct arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }
