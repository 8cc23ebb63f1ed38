/* plan_cli — a stand-alone runner of the plan command for the build tree's tests
 * (`plan_cli plan --model ...` behaves as `sixi-bench plan ...`). Not installed; the
 * program users run is sixi-bench. */
#include "core/log.h"
#include "plan/plan_cmd.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	log_set_program("sixi-bench");
	if (argc < 2 || strcmp(argv[1], "plan") != 0) {
		fprintf(stderr, "usage: %s plan --model CONFIG_OR_GGUF --context N --sequences S [options]\n", argv[0]);
		return 2;
	}
	return plan_cmd_main(argc - 1, argv + 1);
}
