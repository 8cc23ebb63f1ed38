/* args — see args.h. */
#include "core/args.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int args_i64(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long long v = s ? strtoll(s, &end, 10) : 0;
	if (!s || !*s || *end || errno) {
		snprintf(err, errlen, "%s: '%s' is not an integer", flag, s ? s : "");
		return -EINVAL;
	}
	if (v < min || v > max) {
		snprintf(err, errlen, "%s: %lld is out of range (%lld to %lld)", flag, v, (long long)min,
			 (long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int args_double(const char *flag, const char *s, double min, double max, double *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double v = s ? strtod(s, &end) : 0;
	if (!s || !*s || *end || errno || !isfinite(v)) {
		snprintf(err, errlen, "%s: '%s' is not a number", flag, s ? s : "");
		return -EINVAL;
	}
	if (v < min || v > max) {
		snprintf(err, errlen, "%s: %g is out of range (%g to %g)", flag, v, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int args_i64_list(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out, size_t cap,
		  size_t *n, char *err, size_t errlen)
{
	*n = 0;
	if (!s || !*s) {
		snprintf(err, errlen, "%s: empty list", flag);
		return -EINVAL;
	}
	char tmp[64];
	const char *p = s;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len >= sizeof tmp) {
			snprintf(err, errlen, "%s: malformed list '%s' (expected e.g. 1,4,16)", flag, s);
			return -EINVAL;
		}
		if (*n >= cap) {
			snprintf(err, errlen, "%s: more than %zu values", flag, cap);
			return -EINVAL;
		}
		memcpy(tmp, p, len);
		tmp[len] = 0;
		int rc = args_i64(flag, tmp, min, max, &out[*n], err, errlen);
		if (rc)
			return rc;
		(*n)++;
		p += len;
		if (*p == ',')
			p++;
		if (comma && !*p) {
			snprintf(err, errlen, "%s: malformed list '%s' (trailing comma)", flag, s);
			return -EINVAL;
		}
	}
	return 0;
}

int args_bytes(const char *flag, const char *s, uint64_t *out, char *err, size_t errlen)
{
	static const struct { const char *suffix; double mul; } units[] = {
		{ "", 1 }, { "B", 1 }, { "K", 1e3 }, { "KB", 1e3 }, { "KiB", 1024.0 }, { "M", 1e6 },
		{ "MB", 1e6 }, { "MiB", 1048576.0 }, { "G", 1e9 }, { "GB", 1e9 }, { "GiB", 1073741824.0 },
		{ "T", 1e12 }, { "TB", 1e12 }, { "TiB", 1099511627776.0 },
	};
	char *end;
	errno = 0;
	double v = s ? strtod(s, &end) : 0;
	if (!s || end == s || errno || !isfinite(v) || v < 0) {
		snprintf(err, errlen, "%s: '%s' is not a size (e.g. 24GiB, 1.5GB, 4096)", flag, s ? s : "");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcasecmp(end, units[i].suffix) == 0 && strcmp(end, units[i].suffix) == 0) {
			double b = v * units[i].mul;
			if (b >= 1.8e19) {
				snprintf(err, errlen, "%s: '%s' is too large", flag, s);
				return -EINVAL;
			}
			*out = (uint64_t)llround(b);
			return 0;
		}
	snprintf(err, errlen, "%s: unknown unit in '%s' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", flag, s);
	return -EINVAL;
}
