/* fuzz_protocol — libFuzzer target for the evaluation protocol parser
 * (src/eval/protocol.c): arbitrary bytes read as JSON, then validated into
 * struct eval_protocol. Beyond "no crash": a refusal has a message; an accepted
 * protocol is within the limits the runner relies on, its canonical JSON (as a
 * whole and per condition) is valid JSON, and parsing that canonical JSON again
 * gives the same canonical JSON (the frozen configuration is stable). */
#include "eval/protocol.h"
#include "core/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_protocol"
#include "fuzz_check.h"
#define CHECK(ok, why) FUZZ_CHECK_ON(ok, why, data, size)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1 << 16))
		return 0;
	char err[1024] = "";
	cJSON *root = json_parse_n((const char *)data, size, err, sizeof err);
	if (!root)
		return 0;
	struct eval_protocol *p = eval_protocol_parse(root, "protocols", err, sizeof err);
	cJSON_Delete(root);
	if (!p) {
		CHECK(err[0], "refused without a message");
		return 0;
	}
	CHECK(p->n_conditions >= 1 && p->n_conditions <= EVAL_MAX_CONDITIONS, "conditions out of range");
	CHECK(p->n_datasets >= 0 && p->n_datasets <= EVAL_MAX_DATASETS && p->n_stop <= EVAL_MAX_STOPS,
	      "lists out of range");
	CHECK(p->repeats >= 1 && p->concurrency >= 1 && p->attempts >= 1, "counts out of range");
	CHECK(p->stall_s <= p->timeout_s, "stall longer than the timeout");
	CHECK(eval_protocol_max_tokens(p, false) >= 1 && eval_protocol_max_tokens(p, true) >= 1,
	      "max_tokens out of range");
	for (int i = 0; i < p->n_conditions; i++)
		CHECK(p->conditions[i].name && p->conditions[i].endpoint && p->conditions[i].template_source,
		      "a condition without name, endpoint or template");
	char warn[2048];
	(void)eval_protocol_warnings(p, warn, sizeof warn);
	char *canon = eval_protocol_canonical(p, -1);
	CHECK(canon != NULL, "no canonical form");
	for (int i = 0; i < p->n_conditions; i++) {
		char *c = eval_protocol_canonical(p, i);
		cJSON *cj = c ? json_parse_n(c, strlen(c), err, sizeof err) : NULL;
		CHECK(cj != NULL, "a condition's canonical form is not JSON");
		cJSON_Delete(cj);
		free(c);
	}
	cJSON *again = json_parse_n(canon, strlen(canon), err, sizeof err);
	CHECK(again != NULL, "the canonical form is not JSON");
	struct eval_protocol *p2 = eval_protocol_parse(again, NULL, err, sizeof err);
	cJSON_Delete(again);
	CHECK(p2 != NULL, "the canonical form is refused when parsed again");
	{
		char *canon2 = eval_protocol_canonical(p2, -1);
		CHECK(canon2 && strcmp(canon, canon2) == 0, "the canonical form changes when parsed again");
		free(canon2);
		eval_protocol_destroy(p2);
	}
	free(canon);
	eval_protocol_destroy(p);
	return 0;
}
