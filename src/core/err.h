/* err — the one way modules write a user-facing error message into a caller's
 * buffer (char *err, size_t errlen): printf-style, always terminated, and a no-op
 * when the caller passed no buffer. Header-only, so that fuzz targets compiled
 * from a module's sources alone need nothing else. */
#ifndef SIXI_CORE_ERR_H
#define SIXI_CORE_ERR_H
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
#endif
