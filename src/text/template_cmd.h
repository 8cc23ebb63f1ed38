/* template_cmd — the `sixi-eval template` subcommand: renders a chat template
 * with a conversation and prints the prompt. It only parses arguments and wires
 * src/text/jinja to files; it prints to stdout and reports errors on stderr. */
#ifndef SIXI_EVAL_TEMPLATE_CMD_H
#define SIXI_EVAL_TEMPLATE_CMD_H

/* argv[0] is "template". Returns the process exit code: 0 rendered,
 * 1 the template or the input failed (message on stderr), 2 usage error. */
int template_cmd_main(int argc, char **argv);
#endif
