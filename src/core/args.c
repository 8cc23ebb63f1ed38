/* args — see args.h. Value parsers first, then the table-driven parser. */
#include "core/args.h"
#include "core/err.h"
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
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
		err_set(err, errlen, "%s: '%s' is not an integer", flag, s ? s : "");
		return -EINVAL;
	}
	if (v < min || v > max) {
		err_set(err, errlen, "%s: %lld is out of range (%lld to %lld)", flag, v, (long long)min,
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
		err_set(err, errlen, "%s: '%s' is not a number", flag, s ? s : "");
		return -EINVAL;
	}
	if (v < min || v > max) {
		err_set(err, errlen, "%s: %g is out of range (%g to %g)", flag, v, min, max);
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
		err_set(err, errlen, "%s: empty list", flag);
		return -EINVAL;
	}
	char tmp[64];
	const char *p = s;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len >= sizeof tmp) {
			err_set(err, errlen, "%s: malformed list '%s' (expected e.g. 1,4,16)", flag, s);
			return -EINVAL;
		}
		if (*n >= cap) {
			err_set(err, errlen, "%s: more than %zu values", flag, cap);
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
			err_set(err, errlen, "%s: malformed list '%s' (trailing comma)", flag, s);
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
		err_set(err, errlen, "%s: '%s' is not a size (e.g. 24GiB, 1.5GB, 4096)", flag, s ? s : "");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcasecmp(end, units[i].suffix) == 0 && strcmp(end, units[i].suffix) == 0) {
			double b = v * units[i].mul;
			if (b >= 1.8e19) {
				err_set(err, errlen, "%s: '%s' is too large", flag, s);
				return -EINVAL;
			}
			*out = (uint64_t)llround(b);
			return 0;
		}
	err_set(err, errlen, "%s: unknown unit in '%s' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", flag, s);
	return -EINVAL;
}

/* ---- option tables ---------------------------------------------------------- */

/* The row of this name that command bit cmd accepts (a name may have one row per
 * command that gives it another meaning); NULL when none does. */
static const struct args_opt *find(const struct args_spec *s, unsigned cmd, const char *name, size_t len)
{
	for (const struct args_opt *o = s->opts; o->kind != ARGS_END; o++)
		if (o->name && strlen(o->name) == len && strncmp(o->name, name, len) == 0 && (!o->cmds || (o->cmds & cmd)))
			return o;
	return NULL;
}

/* A table bound as int64_t; bounds beyond it (INT64_MAX is not a double) are clamped. */
static int64_t bound(double d)
{
	return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
}

/* Stores v into an integer field of size bytes; a table whose range does not fit its
 * field is a programmer error. */
static void store_int(void *field, size_t size, int64_t v)
{
	assert(size == 8 || (v >= -(INT64_C(1) << (size * 8 - 1)) && v < (INT64_C(1) << (size * 8 - 1))));
	switch (size) {
	case 1: {
		int8_t x = (int8_t)v;
		memcpy(field, &x, 1);
		break;
	}
	case 2: {
		int16_t x = (int16_t)v;
		memcpy(field, &x, 2);
		break;
	}
	case 4: {
		int32_t x = (int32_t)v;
		memcpy(field, &x, 4);
		break;
	}
	default:
		assert(size == 8);
		memcpy(field, &v, 8);
	}
}

/* "a|b|c" -> "a, b or c" */
static void choices_text(const char *choices, char *out, size_t n)
{
	size_t bars = 0, k = 0;
	for (const char *p = choices; *p; p++)
		bars += *p == '|';
	out[0] = 0;
	for (const char *p = choices; *p && k + 8 < n; p++) {
		if (*p != '|') {
			out[k++] = *p;
			continue;
		}
		const char *sep = --bars ? ", " : " or ";
		for (; *sep && k + 1 < n; sep++)
			out[k++] = *sep;
	}
	out[k] = 0;
}

static int set_enum(const struct args_opt *o, const char *v, void *field, char *err, size_t errlen)
{
	int64_t idx = 0;
	size_t vlen = strlen(v);
	for (const char *p = o->choices;; idx++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == vlen && strncmp(p, v, len) == 0) {
			store_int(field, o->size, idx);
			return 0;
		}
		if (!bar)
			break;
		p = bar + 1;
	}
	char list[256];
	choices_text(o->choices, list, sizeof list);
	err_set(err, errlen, "%s: unknown %s '%s' (use %s)", o->name, o->what ? o->what : "value", v, list);
	return -EINVAL;
}

static int set_list(const struct args_opt *o, const char *v, struct args_list *l, char *err, size_t errlen)
{
	size_t n = 0;
	int64_t vals[ARGS_LIST_MAX];
	int rc = args_i64_list(o->name, v, bound(o->min), bound(o->max), vals, ARGS_LIST_MAX - l->n, &n, err,
			       errlen);
	if (rc)
		return rc;
	size_t tl = strlen(l->text);
	if (tl + strlen(v) + 2 > sizeof l->text) {
		err_set(err, errlen, "%s: the list is too long (at most %zu characters)", o->name, sizeof l->text - 1);
		return -EINVAL;
	}
	snprintf(l->text + tl, sizeof l->text - tl, "%s%s", l->n ? "," : "", v);
	memcpy(l->v + l->n, vals, n * sizeof *vals);
	l->n += n;
	return 0;
}

/* Stores one option's value (v NULL for a row without a value). */
static int set_value(const struct args_opt *o, const char *v, void *obj, char *err, size_t errlen)
{
	void *field = (char *)obj + o->off;
	int64_t i;
	double d;
	uint64_t b;
	int rc = 0;
	switch (o->kind) {
	case ARGS_FLAG:
		store_int(field, o->size, o->set);
		break;
	case ARGS_INT:
		if ((rc = args_i64(o->name, v, bound(o->min), bound(o->max), &i, err, errlen)) == 0)
			store_int(field, o->size, i);
		break;
	case ARGS_DOUBLE:
		assert(o->size == sizeof(double));
		if ((rc = args_double(o->name, v, o->min, o->max, &d, err, errlen)) == 0)
			memcpy(field, &d, sizeof d);
		break;
	case ARGS_TIME:
		assert(o->size == sizeof(int64_t) && o->scale > 0);
		if ((rc = args_double(o->name, v, o->min, o->max, &d, err, errlen)) == 0) {
			i = (int64_t)(d * o->scale);
			memcpy(field, &i, sizeof i);
		}
		break;
	case ARGS_BYTES:
		assert(o->size == sizeof(uint64_t) || o->size == sizeof(size_t));
		if ((rc = args_bytes(o->name, v, &b, err, errlen)) != 0)
			break;
		if ((o->min || o->max) && ((double)b < o->min || (double)b > o->max)) {
			err_set(err, errlen, "%s: '%s' is out of range (%.0f to %.0f bytes)", o->name, v, o->min, o->max);
			rc = -EINVAL;
		} else if (o->size == sizeof(uint64_t)) {
			memcpy(field, &b, sizeof b);
		} else {
			size_t z = (size_t)b;
			memcpy(field, &z, sizeof z);
		}
		break;
	case ARGS_STRING:
		assert(o->size == sizeof(const char *));
		memcpy(field, &v, sizeof v);
		break;
	case ARGS_LIST:
		assert(o->size == sizeof(struct args_list));
		rc = set_list(o, v, field, err, errlen);
		break;
	case ARGS_ENUM:
		rc = set_enum(o, v, field, err, errlen);
		break;
	case ARGS_CALL:
		rc = o->call(o->name, v, field, err, errlen);
		break;
	default:
		assert(!"not an option row");
	}
	return rc;
}

static bool takes_value(const struct args_opt *o)
{
	return o->kind != ARGS_FLAG && !(o->kind == ARGS_CALL && !o->meta);
}

int args_parse(const struct args_spec *s, unsigned cmd, int argc, char **argv, void *obj, const char **pos,
	       int *n_pos, char *err, size_t errlen)
{
	int np = 0;
	bool only_pos = false;
	if (n_pos)
		*n_pos = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool number = s->numbers && ((a[1] >= '0' && a[1] <= '9') || (a[1] == '.' && a[2] >= '0' && a[2] <= '9'));
		if (only_pos || a[0] != '-' || a[1] == 0 || number) {
			if (np >= s->max_pos) {
				err_set(err, errlen, "unexpected argument '%s'%s%s%s (see %s --help)", a,
					 s->cmd ? " for '" : "", s->cmd ? s->cmd : "", s->cmd ? "'" : "", s->prog);
				return -EINVAL;
			}
			pos[np++] = a;
			if (n_pos)
				*n_pos = np;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return ARGS_HELP;
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		const struct args_opt *o = find(s, cmd, a, len);
		if (!o && s->forward) {
			if (np >= s->max_pos) {
				err_set(err, errlen, "too many arguments (at most %d)", s->max_pos);
				return -EINVAL;
			}
			pos[np++] = a;
			if (n_pos)
				*n_pos = np;
			continue;
		}
		if (!o) {
			err_set(err, errlen, "unknown option '%.*s'%s%s%s (see %s --help)", (int)len, a,
				 s->cmd ? " for '" : "", s->cmd ? s->cmd : "", s->cmd ? "'" : "", s->prog);
			return -EINVAL;
		}
		const char *v = NULL;
		if (takes_value(o)) {
			if (eq)
				v = eq + 1;
			else if (i + 1 < argc)
				v = argv[++i];
			else {
				err_set(err, errlen, "%s needs a value (%s)", o->name, o->meta ? o->meta : o->choices);
				return -EINVAL;
			}
		} else if (eq) {
			err_set(err, errlen, "%s takes no value (give '%s' alone)", o->name, o->name);
			return -EINVAL;
		}
		int rc = set_value(o, v, obj, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

void args_help(const struct args_spec *s, unsigned cmd, FILE *f)
{
	enum { COL = 26 };
	if (s->usage)
		fputs(s->usage, f);
	for (const struct args_opt *o = s->opts; o->kind != ARGS_END; o++) {
		if (o->kind == ARGS_SECTION) {
			/* a heading is printed only when an option under it is */
			const struct args_opt *q = o + 1;
			while (q->kind != ARGS_END && q->kind != ARGS_SECTION &&
			       (!q->help || (q->cmds && cmd && !(q->cmds & cmd))))
				q++;
			if (q->kind != ARGS_END && q->kind != ARGS_SECTION)
				fprintf(f, "\n%s\n", o->help);
			continue;
		}
		if (!o->help || (o->cmds && cmd && !(o->cmds & cmd)))
			continue;
		char head[128];
		int w = snprintf(head, sizeof head, "  %s%s%s", o->name, takes_value(o) ? " " : "",
				 takes_value(o) ? (o->meta ? o->meta : o->choices) : "");
		fputs(head, f);
		const char *h = o->help ? o->help : "";
		if (w + 2 > COL) {
			fputs("  ", f);
		} else {
			for (; w < COL; w++)
				fputc(' ', f);
		}
		for (; *h; h++) {
			fputc(*h, f);
			if (*h == '\n')
				fprintf(f, "%*s", COL, "");
		}
		fputc('\n', f);
	}
	if (s->epilog)
		fputs(s->epilog, f);
}

int args_cli(const struct args_spec *s, unsigned cmd, int argc, char **argv, void *obj, const char **pos,
	     int *n_pos)
{
	char err[1024];
	int rc = args_parse(s, cmd, argc, argv, obj, pos, n_pos, err, sizeof err);
	if (rc == ARGS_HELP) {
		args_help(s, cmd, stdout);
		return 0;
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", s->prog, err);
		return 2;
	}
	return ARGS_CONTINUE;
}
