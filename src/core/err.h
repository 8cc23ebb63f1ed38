/* err — the one way modules write a user-facing error message into a caller's
 * buffer (char *err, size_t errlen): printf-style, always terminated, and a no-op
 * when the caller passed no buffer. err_set only writes; err_fail writes and
 * returns -EINVAL, for `return err_fail(err, errlen, "...")` on bad input.
 * Header-only, so that fuzz targets compiled from a module's sources alone need
 * nothing else. */
#ifndef SIXI_CORE_ERR_H
#define SIXI_CORE_ERR_H
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void err_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void err_set(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static inline int err_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int err_fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}
#endif
