/* clock — the one clock every timestamp in sixi comes from.
 * CLOCK_MONOTONIC in nanoseconds: never jumps with wall-clock changes, so
 * differences are durations. Wall-clock time is only for labels (clock_wall_iso). */
#ifndef SIXI_CORE_CLOCK_H
#define SIXI_CORE_CLOCK_H
#include <stdint.h>
#include <stddef.h>

int64_t clock_now_ns(void);
/* Sleep for ns nanoseconds (restarts on EINTR). */
void clock_sleep_ns(int64_t ns);
/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ" into out (>= 21 bytes). */
void clock_wall_iso(char *out, size_t n);
#endif
