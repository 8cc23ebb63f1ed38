/* hash — SHA-256 (FIPS 180-4) for content addresses of raw text and protocol hashes.
 * Not constant-time; nothing here is secret. */
#ifndef SIXI_CORE_HASH_H
#define SIXI_CORE_HASH_H
#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t total_bytes;
	unsigned char block[64];
	size_t fill;
};
void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
void sha256_final(struct sha256 *s, unsigned char out[32]);
/* One-shot: lowercase hex digest (64 chars + NUL) into hex. */
void sha256_hex(const void *p, size_t n, char hex[65]);
/* 64-bit FNV-1a, for hash tables and seeds (not for content addresses). */
uint64_t hash_fnv1a64(const void *p, size_t n);
#endif
