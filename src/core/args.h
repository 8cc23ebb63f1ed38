/* args — parsing of flag values shared by every program: integers with range
 * checks, comma lists, byte sizes ("128GiB"). Each returns 0 or -EINVAL and, on
 * error, writes a message naming the flag and the value into err. */
#ifndef SIXI_CORE_ARGS_H
#define SIXI_CORE_ARGS_H
#include <stddef.h>
#include <stdint.h>

int args_i64(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen);
int args_double(const char *flag, const char *s, double min, double max, double *out, char *err, size_t errlen);
/* "1,4,16" -> values; at most cap entries; each within [min, max]. */
int args_i64_list(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out, size_t cap,
		  size_t *n, char *err, size_t errlen);
/* "24GiB", "1.5GB", "4096" (bytes) -> bytes. */
int args_bytes(const char *flag, const char *s, uint64_t *out, char *err, size_t errlen);
#endif
