/* args — the one command-line parser of every program, and the value parsers it
 * is built on (integers with ranges, comma lists, byte sizes).
 *
 * A program describes its options in one table of struct args_opt rows, each
 * naming the field it sets (offsetof into the program's options struct) or the
 * handler that parses it, beside its help text; args_parse() walks argv against
 * the table, --help is printed from the same table (args_help), and every error
 * is worded the same way: the option, what was wrong, what is accepted.
 * Accepted forms: `--opt value`, `--opt=value`, `-h`/`--help`, `--` (the rest are
 * positional). A value is the next word even when it starts with '-' (so
 * `--concurrency -4` is refused as out of range, not as an unknown option).
 * A repeated option overwrites, except a list, which appends.
 * Not done here: options that exclude or need each other (the program checks
 * those after parsing, where it can say why). Tables and argv are borrowed;
 * string fields point into argv. */
#ifndef SIXI_CORE_ARGS_H
#define SIXI_CORE_ARGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- value parsers: 0 or -EINVAL with a message naming flag and value in err ---- */

int args_i64(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen);
int args_double(const char *flag, const char *s, double min, double max, double *out, char *err, size_t errlen);
/* "1,4,16" -> values; at most cap entries; each within [min, max]. */
int args_i64_list(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out, size_t cap,
		  size_t *n, char *err, size_t errlen);
/* "24GiB", "1.5GB", "4096" (bytes) -> bytes. */
int args_bytes(const char *flag, const char *s, uint64_t *out, char *err, size_t errlen);

/* ---- option tables ---- */

enum args_kind {
	ARGS_END = 0,   /* ends a table */
	ARGS_SECTION,   /* a heading in --help (help is its text); sets nothing */
	ARGS_FLAG,      /* no value: stores .set into the field (bool, int or enum) */
	ARGS_INT,       /* an integer in [min, max] into an integer field of 1, 2, 4 or 8 bytes */
	ARGS_DOUBLE,    /* a finite number in [min, max] into a double */
	ARGS_TIME,      /* a number in [min, max] of the unit the help names (S: seconds), stored
			   into an int64_t as (int64_t)(value * scale): 1000 for ms, 1e9 for ns */
	ARGS_BYTES,     /* a size with an optional unit (24GiB, 8MiB, 4096) into a uint64_t or size_t */
	ARGS_STRING,    /* the text as given, into a const char * */
	ARGS_LIST,      /* comma-separated integers in [min, max] into a struct args_list; appends */
	ARGS_ENUM,      /* one of .choices ("log|snapshot"): its index into an integer field */
	ARGS_CALL,      /* .call parses the value into the field (NULL value: a flag) */
};

#define ARGS_LIST_MAX 64
/* A list option's values and their text as given (repeats joined by commas). */
struct args_list {
	size_t n;
	int64_t v[ARGS_LIST_MAX];
	char text[512];
};

/* Parses value (NULL for a CALL row without .meta) into field; 0, or -EINVAL with a
 * message in err that names opt and says what is accepted. */
typedef int (*args_call_fn)(const char *opt, const char *value, void *field, char *err, size_t errlen);

struct args_opt {
	const char *name;     /* "--max-tokens" */
	enum args_kind kind;
	const char *meta;     /* the value's name in --help ("N", "URL"); NULL: no value */
	size_t off, size;     /* the field set: offset and size in the options struct */
	double min, max;      /* INT, DOUBLE, TIME, LIST; max 0 with min 0: BYTES unbounded */
	double scale;         /* TIME */
	int64_t set;          /* FLAG */
	const char *choices;  /* ENUM: "error|warn|info|debug" */
	const char *what;     /* ENUM: what a value is, for errors ("drafter"); NULL: "value" */
	args_call_fn call;    /* CALL */
	unsigned cmds;        /* commands (bit mask) that accept it; 0: all */
	const char *help;     /* one line; '\n' starts another, indented; NULL: not in --help */
};

struct args_spec {
	const char *prog;     /* for messages: "sixi-bench" */
	const char *cmd;      /* the command being parsed, for messages; NULL when none */
	const char *usage;    /* printed before the options by --help */
	const char *epilog;   /* printed after them; may be NULL */
	const struct args_opt *opts;
	int max_pos;          /* positional words accepted */
	bool numbers;         /* a word like "-1" or "-0.5" is a positional number, not an
			         option (the program then says why a negative one is wrong) */
	bool forward;         /* words the table does not name (options, their values and
			         positionals) go to pos in order, for a module that parses them
			         with its own table */
};

/* The field of a row: ARGS_AT(struct opts, cfg.max_tokens). */
#define ARGS_AT(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)

#define ARGS_HEADING(text) { .name = NULL, .kind = ARGS_SECTION, .help = (text) }
#define ARGS_FLAG_OPT(nm, T, f, value, mask, h) \
	{ .name = (nm), .kind = ARGS_FLAG, ARGS_AT(T, f), .set = (value), .cmds = (mask), .help = (h) }
#define ARGS_INT_OPT(nm, mt, T, f, lo, hi, mask, h) \
	{ .name = (nm), .kind = ARGS_INT, .meta = (mt), ARGS_AT(T, f), .min = (lo), .max = (hi), .cmds = (mask), .help = (h) }
#define ARGS_DOUBLE_OPT(nm, mt, T, f, lo, hi, mask, h) \
	{ .name = (nm), .kind = ARGS_DOUBLE, .meta = (mt), ARGS_AT(T, f), .min = (lo), .max = (hi), .cmds = (mask), .help = (h) }
#define ARGS_TIME_OPT(nm, mt, T, f, lo, hi, sc, mask, h) \
	{ .name = (nm), .kind = ARGS_TIME, .meta = (mt), ARGS_AT(T, f), .min = (lo), .max = (hi), .scale = (sc), \
	  .cmds = (mask), .help = (h) }
#define ARGS_BYTES_OPT(nm, mt, T, f, mask, h) \
	{ .name = (nm), .kind = ARGS_BYTES, .meta = (mt), ARGS_AT(T, f), .cmds = (mask), .help = (h) }
#define ARGS_STRING_OPT(nm, mt, T, f, mask, h) \
	{ .name = (nm), .kind = ARGS_STRING, .meta = (mt), ARGS_AT(T, f), .cmds = (mask), .help = (h) }
#define ARGS_LIST_OPT(nm, mt, T, f, lo, hi, mask, h) \
	{ .name = (nm), .kind = ARGS_LIST, .meta = (mt), ARGS_AT(T, f), .min = (lo), .max = (hi), .cmds = (mask), .help = (h) }
#define ARGS_ENUM_OPT(nm, ch, wh, T, f, mask, h) \
	{ .name = (nm), .kind = ARGS_ENUM, .choices = (ch), .what = (wh), ARGS_AT(T, f), .cmds = (mask), .help = (h) }
#define ARGS_CALL_OPT(nm, mt, fn, T, f, mask, h) \
	{ .name = (nm), .kind = ARGS_CALL, .meta = (mt), .call = (fn), ARGS_AT(T, f), .cmds = (mask), .help = (h) }
#define ARGS_TABLE_END { .name = NULL, .kind = ARGS_END }

enum { ARGS_HELP = 1 };

/* Parses argv[0..argc) (options and positionals, in any order) for command bit cmd
 * (0: the program has no commands) into obj, whose fields the rows name. Positional
 * words go to pos[0..spec->max_pos), their count to *n_pos (pos may be NULL when
 * max_pos is 0). Returns 0; ARGS_HELP when --help or -h came (nothing printed); or
 * -EINVAL with one message in err. Every option before an error or --help is stored. */
int args_parse(const struct args_spec *spec, unsigned cmd, int argc, char **argv, void *obj, const char **pos,
	       int *n_pos, char *err, size_t errlen);

/* Prints spec->usage, the options that command bit cmd accepts (all when cmd is 0)
 * with their section headings, and spec->epilog. */
void args_help(const struct args_spec *spec, unsigned cmd, FILE *f);

#define ARGS_CONTINUE (-1)
/* args_parse for a main: ARGS_CONTINUE to go on; else the exit status after printing:
 * 0 after --help (args_help on stdout), 2 after "PROG[ CMD]: message" on stderr. */
int args_cli(const struct args_spec *spec, unsigned cmd, int argc, char **argv, void *obj, const char **pos,
	     int *n_pos);
#endif
