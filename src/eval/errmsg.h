/* errmsg — how src/eval reports a user-facing error: one formatted line (what
 * was wrong and what to do) into the caller's buffer, and -EINVAL to return.
 * err may be NULL (nothing is written). */
#ifndef SIXI_EVAL_ERRMSG_H
#define SIXI_EVAL_ERRMSG_H
#include <stddef.h>

__attribute__((format(printf, 3, 4))) int eval_errorf(char *err, size_t errlen, const char *fmt, ...);
#endif
