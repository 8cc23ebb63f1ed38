/* tok_cmd — the tokenizer's command-line entry: `--tokenize FILE TEXT` prints the ids of
 * TEXT under the tokenizer of FILE (a GGUF, or a Hugging Face tokenizer.json), and
 * `--detokenize FILE ID...` prints the text of ids. A program's main() forwards its
 * arguments here; this module owns no other state. */
#ifndef SIXI_MODEL_TOK_CMD_H
#define SIXI_MODEL_TOK_CMD_H
/* argv[0] is the program name; argv[1] "--tokenize" or "--detokenize". Returns the exit code
 * (0 ok, 1 bad input, 2 usage). Output on stdout, errors on stderr. */
int tok_cmd_main(int argc, char **argv);
#endif
