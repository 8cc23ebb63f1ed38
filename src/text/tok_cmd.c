/* tok_cmd — `--tokenize FILE TEXT [--no-special] [--parse-special] [--pieces]` and
 * `--detokenize FILE ID...`. Loads the tokenizer, prints ids space-separated on one
 * line (or "id<TAB>piece" lines with --pieces), or the decoded text. TEXT "-" reads the
 * text from standard input (for texts longer than a command line holds). */
#include "text/tok_cmd.h"
#include "core/args.h"
#include "core/err.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "text/tokenizer.h"

struct tok_opts {
	bool add_special, parse_special, pieces, special;
};

#define TOK_T struct tok_opts
enum { TOK_ENCODE = 1u << 0, TOK_DECODE = 1u << 1 };
static const struct args_opt tok_table[] = {
	ARGS_FLAG_OPT("--add-special", TOK_T, add_special, 1, TOK_ENCODE,
		      "add the model's BOS/EOS tokens around the text"),
	ARGS_FLAG_OPT("--parse-special", TOK_T, parse_special, 1, TOK_ENCODE,
		      "read special-token text (<|im_start|>) in TEXT as the special token"),
	ARGS_FLAG_OPT("--pieces", TOK_T, pieces, 1, TOK_ENCODE, "print one \"id<TAB>piece\" line per token"),
	ARGS_FLAG_OPT("--special", TOK_T, special, 1, TOK_DECODE, "print special tokens as their text"),
	ARGS_TABLE_END,
};

static struct args_spec tok_spec(const char *prog, unsigned cmd)
{
	return (struct args_spec){
		.prog = prog,
		.cmd = cmd == TOK_ENCODE ? "--tokenize" : "--detokenize",
		.usage = cmd == TOK_ENCODE ? "usage: --tokenize FILE.gguf|tokenizer.json TEXT|- [options]\n"
					     "TEXT \"-\" reads the text from standard input.\n"
					   : "usage: --detokenize FILE.gguf|tokenizer.json ID... [options]\n",
		.opts = tok_table,
		.max_pos = 0,
	};
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s --tokenize FILE.gguf|tokenizer.json TEXT|- [--add-special] [--parse-special] [--pieces]\n"
		"       %s --detokenize FILE.gguf|tokenizer.json ID... [--special]\n", prog, prog);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static struct tokenizer *load(const char *path)
{
	char err[512];
	struct tokenizer *t = NULL;
	if (ends_with(path, ".json")) {
		t = tok_load_hf_json(path, err, sizeof err);
	} else {
		struct gguf *g = gguf_open(path, err, sizeof err);
		if (g) {
			char e2[400];
			t = tok_load_gguf(g, e2, sizeof e2);
			if (!t)
				err_set(err, sizeof err, "%s: %s", path, e2);
			gguf_close(g);
		}
	}
	if (!t)
		fprintf(stderr, "error: %s\n", err);
	return t;
}

/* All of standard input, NUL-terminated; NULL (message printed) when it cannot be read or
 * holds a NUL byte. */
static char *read_stdin(void)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - 1 - n, stdin);
		n += got;
		if (got == 0) {
			if (ferror(stdin)) {
				fprintf(stderr, "error: cannot read TEXT from standard input\n");
				free(buf);
				return NULL;
			}
			buf[n] = 0;
			if (strlen(buf) != n) {
				fprintf(stderr, "error: standard input holds a NUL byte at offset %zu; pass text\n",
					strlen(buf));
				free(buf);
				return NULL;
			}
			return buf;
		}
	}
	free(buf);
	fprintf(stderr, "error: out of memory reading TEXT from standard input\n");
	return NULL;
}

static int cmd_tokenize(const char *prog, int argc, char **argv)
{
	struct tok_opts o = { 0 };
	struct args_spec spec = tok_spec(prog, TOK_ENCODE);
	const char *pos[2];
	int n_pos = 0;
	spec.max_pos = 2;
	int st = args_cli(&spec, TOK_ENCODE, argc, argv, &o, pos, &n_pos);
	if (st != ARGS_CONTINUE)
		return st;
	if (n_pos != 2) {
		usage(prog);
		return 2;
	}
	const char *file = pos[0], *text = pos[1];
	bool add_special = o.add_special, parse_special = o.parse_special, pieces = o.pieces;
	char *owned = NULL;
	if (strcmp(text, "-") == 0) {
		owned = read_stdin();
		if (!owned)
			return 1;
		text = owned;
	}
	struct tokenizer *t = load(file);
	if (!t) {
		free(owned);
		return 1;
	}
	int32_t *ids;
	size_t n;
	int rc = tok_encode(t, text, strlen(text), add_special, parse_special, &ids, &n);
	if (rc == -EILSEQ) {
		fprintf(stderr, "error: TEXT is not valid UTF-8 (first bad byte at offset %zu); pass UTF-8 text\n",
			tok_utf8_error_offset(text, strlen(text)));
	} else if (rc) {
		fprintf(stderr, "error: cannot tokenize TEXT: %s\n",
			rc == -ENOENT ? "a piece has no token in this vocabulary (incomplete vocabulary)" : strerror(-rc));
	} else {
		for (size_t i = 0; i < n; i++) {
			if (pieces)
				printf("%d\t%s\n", (int)ids[i], tok_piece(t, ids[i]));
			else
				printf("%s%d", i ? " " : "", (int)ids[i]);
		}
		if (!pieces)
			printf("\n");
		free(ids);
	}
	tok_destroy(t);
	free(owned);
	return rc ? 1 : 0;
}

static int cmd_detokenize(const char *prog, int argc, char **argv)
{
	struct tok_opts o = { 0 };
	struct args_spec spec = tok_spec(prog, TOK_DECODE);
	const char **pos = calloc((size_t)argc + 1, sizeof *pos);
	int32_t *ids = calloc((size_t)argc + 1, sizeof *ids);
	size_t n = 0;
	int rc = 0, n_pos = 0;
	if (!ids || !pos) {
		free(ids);
		free(pos);
		return 1;
	}
	spec.max_pos = argc;
	int st = args_cli(&spec, TOK_DECODE, argc, argv, &o, pos, &n_pos);
	if (st != ARGS_CONTINUE) {
		free(ids);
		free(pos);
		return st;
	}
	bool special = o.special;
	const char *file = n_pos > 0 ? pos[0] : NULL;
	for (int i = 1; i < n_pos && !rc; i++) {
		char *end;
		long v = strtol(pos[i], &end, 10);
		if (*end || end == pos[i] || v < 0 || v > INT32_MAX) {
			fprintf(stderr, "error: '%s' is not a token id\n", pos[i]);
			rc = 1;
		}
		ids[n++] = (int32_t)v;
	}
	if (!rc && !file) {
		usage(prog);
		rc = 2;
	}
	struct tokenizer *t = rc ? NULL : load(file);
	if (!rc && !t)
		rc = 1;
	if (!rc) {
		char *text;
		size_t len;
		if (tok_decode(t, ids, n, special, &text, &len) != 0) {
			fprintf(stderr, "error: an id is outside the vocabulary (%zu tokens)\n", tok_vocab_size(t));
			rc = 1;
		} else {
			fwrite(text, 1, len, stdout);
			printf("\n");
			free(text);
		}
	}
	tok_destroy(t);
	free(ids);
	free(pos);
	return rc;
}

int tok_cmd_main(int argc, char **argv)
{
	const char *prog = argc > 0 ? argv[0] : "sixi";
	if (argc >= 2 && strcmp(argv[1], "--tokenize") == 0)
		return cmd_tokenize(prog, argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "--detokenize") == 0)
		return cmd_detokenize(prog, argc - 2, argv + 2);
	usage(prog);
	return 2;
}
