/* log — see log.h. Writes are one fprintf per line; stdio locks the stream,
 * so lines from several threads do not interleave mid-line. */
#include "core/log.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum log_level current = LOG_LEVEL_INFO;
static const char *program = "sixi";

void log_set_level(enum log_level level) { current = level; }
void log_set_program(const char *name) { program = name ? name : "sixi"; }
enum log_level log_get_level(void) { return current; }

int log_level_parse(const char *s, enum log_level *out)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *tags[] = { "error", "warning", "info", "debug" };
	if (level > current)
		return;
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s: %s\n", program, tags[level], line);
}
