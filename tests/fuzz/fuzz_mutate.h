/* fuzz_mutate — the bounded, deterministic mutation loop that the standalone fuzz
 * drivers share (replay.c, and the targets that make their own seeds: gguf, model,
 * tokenizer), so that every compiler, ASan and valgrind run the targets without
 * libFuzzer. A seed is run as is, then mutated a fixed number of times; each
 * mutation makes 1 to 4 edits of one of six kinds and is run from a buffer of
 * exactly its size, so that sanitizers see any read past the end.
 * Header-only (as fuzz_check.h): a target's standalone build needs no other file. */
#ifndef SIXI_FUZZ_MUTATE_H
#define SIXI_FUZZ_MUTATE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64: the state must start non-zero. */
static inline uint64_t fuzz_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Edits buf[0, len) in place (room for cap bytes) and returns the new length.
 * Positions fall in the first `hot` bytes (where headers and lengths live); dict
 * (NUL-terminated, may be NULL) holds bytes that mean something to the parser. */
static inline size_t fuzz_mutate(uint8_t *buf, size_t len, size_t cap, size_t hot, const char *dict, uint64_t *s)
{
	size_t nd = dict ? strlen(dict) : 0;
	int edits = 1 + (int)(fuzz_next(s) % 4);
	for (int e = 0; e < edits && len; e++) {
		size_t lim = hot && hot < len ? hot : len;
		size_t pos = (size_t)(fuzz_next(s) % lim);
		uint64_t r = fuzz_next(s);
		switch (r % 6) {
		case 0: buf[pos] = (uint8_t)(r >> 24); break;
		case 1: buf[pos] ^= (uint8_t)(1u << (r >> 24) % 8); break;
		case 2: buf[pos] = nd ? (uint8_t)dict[(r >> 24) % nd] : (uint8_t[]){0, 1, 0x7f, 0x80, 0xff}[(r >> 24) % 5]; break;
		case 3: /* a byte inserted */
			if (len < cap) {
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = nd ? (uint8_t)dict[(r >> 24) % nd] : (uint8_t)(r >> 24);
				len++;
			}
			break;
		case 4: len = pos; break; /* truncated */
		default: /* a little-endian length or count set huge, or to a plausible size */
			if (pos + 8 <= len) {
				uint64_t v = (r >> 8) % 2 ? UINT64_MAX - (r >> 16) % 16 : (r >> 16) % 70000;
				for (int b = 0; b < 8; b++)
					buf[pos + (size_t)b] = (uint8_t)(v >> (8 * b));
			}
		}
	}
	return len;
}

/* Runs target on the seed, then on `rounds` mutations of it; returns the number of runs. */
static inline long fuzz_mutate_run(int (*target)(const uint8_t *, size_t), const uint8_t *seed, size_t n, int rounds,
				   size_t hot, const char *dict, uint64_t *s)
{
	size_t cap = n + 64;
	uint8_t *buf = malloc(cap);
	if (!buf)
		abort();
	target(seed, n);
	long runs = 1;
	for (int k = 0; k < rounds && n; k++, runs++) {
		memcpy(buf, seed, n);
		size_t len = fuzz_mutate(buf, n, cap, hot, dict, s);
		uint8_t *exact = malloc(len ? len : 1);
		if (!exact)
			abort();
		memcpy(exact, buf, len);
		target(exact, len);
		free(exact);
	}
	free(buf);
	return runs;
}

/* fuzz_mutate_run over each of n NUL-terminated seeds, rounds mutations of each. */
static inline long fuzz_mutate_seeds(int (*target)(const uint8_t *, size_t), const char *const *seeds, size_t n,
				     int rounds, const char *dict, uint64_t *s)
{
	long runs = 0;
	for (size_t k = 0; k < n; k++)
		runs += fuzz_mutate_run(target, (const uint8_t *)seeds[k], strlen(seeds[k]), rounds, 0, dict, s);
	return runs;
}

/* A whole file, malloc'd, its size in *n; NULL when it cannot be read. */
static inline uint8_t *fuzz_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	long len = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	uint8_t *b = len >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)len + 1) : NULL;
	if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	if (f)
		fclose(f);
	*n = b ? (size_t)len : 0;
	return b;
}
#endif
