/* log — leveled messages on stderr.
 * The level is process-wide and set once by main (log_set_level); modules only
 * call log_msg through the macros. Messages are single lines prefixed by the
 * program name so that interleaved output of several programs stays readable. */
#ifndef SIXI_CORE_LOG_H
#define SIXI_CORE_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_set_level(enum log_level level);
void log_set_program(const char *name); /* borrowed; must outlive all logging */
enum log_level log_get_level(void);
/* Parses "error|warn|info|debug"; returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#endif
