/* tok_cmd — `--tokenize FILE TEXT [--no-special] [--parse-special] [--pieces]` and
 * `--detokenize FILE ID...`. Loads the tokenizer, prints ids space-separated on one
 * line (or "id<TAB>piece" lines with --pieces), or the decoded text. TEXT "-" reads the
 * text from standard input (for texts longer than a command line holds). */
#include "text/tok_cmd.h"
#include "core/err.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "text/tokenizer.h"

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
	const char *file = NULL, *text = NULL;
	bool add_special = false, parse_special = false, pieces = false;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--add-special") == 0)
			add_special = true;
		else if (strcmp(argv[i], "--parse-special") == 0)
			parse_special = true;
		else if (strcmp(argv[i], "--pieces") == 0)
			pieces = true;
		else if (!file)
			file = argv[i];
		else if (!text)
			text = argv[i];
		else {
			usage(prog);
			return 2;
		}
	}
	if (!file || !text) {
		usage(prog);
		return 2;
	}
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
	const char *file = NULL;
	bool special = false;
	int32_t *ids = calloc((size_t)argc + 1, sizeof *ids);
	size_t n = 0;
	int rc = 0;
	if (!ids)
		return 1;
	for (int i = 0; i < argc && !rc; i++) {
		char *end;
		if (strcmp(argv[i], "--special") == 0) {
			special = true;
		} else if (!file) {
			file = argv[i];
		} else {
			long v = strtol(argv[i], &end, 10);
			if (*end || end == argv[i] || v < 0 || v > INT32_MAX) {
				fprintf(stderr, "error: '%s' is not a token id\n", argv[i]);
				rc = 1;
			}
			ids[n++] = (int32_t)v;
		}
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
