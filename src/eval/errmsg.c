/* errmsg — see errmsg.h. */
#include "eval/errmsg.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int eval_errorf(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}
