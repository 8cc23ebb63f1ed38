/* test_datasets_gate — the gate's parts without a server: the JSON-schema
 * subset (jschema), tool-call sets and their grading (toolcall), the needle
 * generator, the gate protocol loader, and exact fractions in the numeric
 * grader (datasets/sixi-math). */
#include "core/json.h"
#include "eval/gate.h"
#include "grade/grade.h"
#include "datasets/jschema.h"
#include "datasets/needle.h"
#include "datasets/task.h"
#include "datasets/toolcall.h"
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cJSON *J(const char *s)
{
	char err[128];
	cJSON *o = json_parse_n(s, strlen(s), err, sizeof err);
	if (!o)
		fprintf(stderr, "bad JSON in the test: %s (%s)\n", s, err);
	return o;
}

static bool validates(const char *schema, const char *value, char *why, size_t whylen)
{
	cJSON *s = J(schema), *v = J(value);
	bool ok = s && v && jschema_validate(s, v, why, whylen);
	cJSON_Delete(s);
	cJSON_Delete(v);
	return ok;
}

static void test_jschema(void)
{
	char why[256];
	const char *obj = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"minLength\":2},"
			  "\"unit\":{\"enum\":[\"c\",\"f\"]},\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9},"
			  "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2},"
			  "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}$\"}},"
			  "\"required\":[\"city\"],\"additionalProperties\":false}";
	CHECK(validates(obj, "{\"city\":\"Oslo\"}", why, sizeof why));
	CHECK(validates(obj, "{\"city\":\"Oslo\",\"unit\":\"c\",\"n\":9,\"tags\":[\"a\"],\"code\":\"EUR\"}", why,
			sizeof why));
	CHECK(!validates(obj, "{}", why, sizeof why) && strstr(why, "required property \"city\""));
	CHECK(!validates(obj, "{\"city\":\"O\"}", why, sizeof why) && strstr(why, "$.city"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"unit\":\"k\"}", why, sizeof why) && strstr(why, "enum"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"n\":2.5}", why, sizeof why) && strstr(why, "integer"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"n\":10}", why, sizeof why) && strstr(why, "maximum"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"n\":0}", why, sizeof why) && strstr(why, "minimum"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"tags\":[\"a\",\"b\",\"c\"]}", why, sizeof why));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"tags\":[1]}", why, sizeof why) && strstr(why, "$.tags[0]"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"code\":\"eur\"}", why, sizeof why) && strstr(why, "pattern"));
	CHECK(!validates(obj, "{\"city\":\"Oslo\",\"extra\":1}", why, sizeof why) && strstr(why, "additionalProperties"));
	CHECK(!validates(obj, "[1]", why, sizeof why) && strstr(why, "object"));
	/* minLength counts code points, not bytes */
	CHECK(!validates("{\"maxLength\":2}", "\"\xc3\xa9t\xc3\xa9\"", why, sizeof why));
	CHECK(validates("{\"maxLength\":3}", "\"\xc3\xa9t\xc3\xa9\"", why, sizeof why));
	CHECK(validates("{\"type\":[\"string\",\"null\"]}", "null", why, sizeof why));
	CHECK(validates("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "3", why, sizeof why));
	CHECK(!validates("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "3.5", why, sizeof why));
	CHECK(validates("{\"exclusiveMinimum\":0}", "0.5", why, sizeof why));
	CHECK(!validates("{\"exclusiveMinimum\":0}", "0", why, sizeof why));
	CHECK(validates("{\"const\":\"x\"}", "\"x\"", why, sizeof why) && !validates("{\"const\":\"x\"}", "\"y\"", why, sizeof why));
	/* schemas outside the subset are refused, not half-checked */
	const char *bad[] = {"{\"$ref\":\"#/x\"}", "{\"oneOf\":[]}", "{\"type\":\"float\"}", "{\"minLength\":-1}",
			     "{\"pattern\":\"(\"}", "{\"properties\":{\"a\":{\"format\":\"email\"}}}", "[]"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cJSON *s = J(bad[i]);
		if (!CHECK(s && jschema_check(s, why, sizeof why) != 0))
			fprintf(stderr, "accepted: %s\n", bad[i]);
		cJSON_Delete(s);
	}
	cJSON *s = J(obj);
	CHECK_EQ_INT(jschema_check(s, why, sizeof why), 0);
	cJSON_Delete(s);
}

static void test_toolcalls(void)
{
	char err[8192], why[512];
	struct toolcall_set *s = toolcall_set_load(test_src_path("datasets/gates/tool-calls.jsonl"), err, sizeof err);
	if (!CHECK(s != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	CHECK(toolcall_set_count(s) >= 20);
	const struct toolcall_case *c = NULL;
	for (size_t i = 0; i < toolcall_set_count(s); i++)
		if (strcmp(toolcall_set_case(s, i)->id, "tool-calls/currency-eur-jpy") == 0)
			c = toolcall_set_case(s, i);
	if (CHECK(c != NULL)) {
		CHECK(toolcall_grade(c, "convert_currency", "{\"amount\": 250, \"from\": \"EUR\", \"to\": \"JPY\"}", why,
				     sizeof why));
		CHECK(toolcall_grade(c, "convert_currency", "{\"amount\": 250.0, \"from\": \"EUR\", \"to\": \"JPY\"}", why,
				     sizeof why));
		CHECK(!toolcall_grade(c, "lookup_stock", "{\"ticker\": \"EUR\"}", why, sizeof why) &&
		      strstr(why, "expected convert_currency"));
		CHECK(!toolcall_grade(c, "convert_currency", "{\"amount\": 250, \"from\": \"eur\", \"to\": \"JPY\"}", why,
				      sizeof why) && strstr(why, "pattern"));
		CHECK(!toolcall_grade(c, "convert_currency", "{\"amount\": 205, \"from\": \"EUR\", \"to\": \"JPY\"}", why,
				      sizeof why) && strstr(why, "argument amount"));
		CHECK(!toolcall_grade(c, "convert_currency", "{\"amount\": 250, \"from\": \"EUR\"", why, sizeof why) &&
		      strstr(why, "not a JSON object"));
		CHECK(!toolcall_grade(c, NULL, NULL, why, sizeof why) && strstr(why, "no tool call"));
	}
	toolcall_set_destroy(s);

	char *name, *args;
	CHECK(toolcall_from_text("<think>maybe {\"name\": \"x\", \"arguments\": {}}</think>"
				 "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
				 &name, &args));
	CHECK_EQ_STR(name, "get_weather");
	CHECK(args && strstr(args, "Oslo"));
	free(name);
	free(args);
	CHECK(toolcall_from_text("```json\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}\n```", &name, &args));
	CHECK_EQ_STR(args, "{\"a\": 1}");
	free(name);
	free(args);
	CHECK(!toolcall_from_text("I would call the weather tool for Oslo.", &name, &args) && !name && !args);

	/* a broken set: every problem named with its line */
	char path[] = "/tmp/sixi-tc-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"id\": \"a\", \"prompt\": \"p\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", "
		   "\"parameters\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}}}], "
		   "\"expect\": {\"name\": \"g\", \"arguments\": {}}}\n");
	fprintf(f, "not json\n");
	fprintf(f, "{\"id\": \"b\", \"prompt\": \"p\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", "
		   "\"parameters\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}}}], "
		   "\"expect\": {\"name\": \"f\", \"arguments\": {\"n\": \"seven\"}}}\n");
	fprintf(f, "{\"id\": \"c\", \"prompt\": \"p\", \"tools\": [], \"expect\": {}, \"colour\": 1}\n");
	fclose(f);
	s = toolcall_set_load(path, err, sizeof err);
	CHECK(s == NULL);
	CHECK(strstr(err, ":1: the expected tool \"g\" is not among the offered tools") != NULL);
	CHECK(strstr(err, ":2: not a JSON object") != NULL);
	CHECK(strstr(err, ":3: the expected arguments do not validate") != NULL);
	CHECK(strstr(err, ":4: unknown key \"colour\"") != NULL);
	toolcall_set_destroy(s);
	unlink(path);
}

static void test_needle(void)
{
	struct needle_case a, b, c;
	struct needle_spec sp = {.context_tokens = 2000, .depth = 0.25, .seed = 11};
	CHECK_EQ_INT(needle_make(&sp, &a), 0);
	CHECK_EQ_INT(needle_make(&sp, &b), 0);
	CHECK_EQ_STR(a.prompt, b.prompt); /* the seed decides everything */
	sp.seed = 12;
	CHECK_EQ_INT(needle_make(&sp, &c), 0);
	/* another seed differs from the first note on: no shared prefix beyond the fixed heading */
	size_t same = 0;
	while (a.prompt[same] && a.prompt[same] == c.prompt[same])
		same++;
	CHECK(same < 160);
	/* about 4 bytes per token, the needle near the requested depth, asked about at the end */
	CHECK(a.prompt_bytes >= 2000 * 4 && a.prompt_bytes < 2000 * 4 + 600);
	CHECK(a.depth_actual > 0.2 && a.depth_actual < 0.3);
	CHECK(strlen(a.answer) == 7);
	CHECK(strstr(a.prompt + a.needle_at_bytes, a.answer) == a.prompt + a.needle_at_bytes + strlen("Note: the access code for ") + strlen(a.key) + 4);
	/* the code occurs once, the words "access code" only in the needle and the question */
	const char *first = strstr(a.prompt, a.answer);
	CHECK(first && !strstr(first + 1, a.answer));
	int n_access = 0;
	for (const char *p = strstr(a.prompt, "access code"); p; p = strstr(p + 1, "access code"))
		n_access++;
	CHECK_EQ_INT(n_access, 3); /* heading, needle, question */
	/* every filler sentence differs */
	int dup = 0;
	for (const char *p = strstr(a.prompt, "Note "); p; p = strstr(p + 1, "Note ")) {
		const char *end = strchr(p, '.');
		if (end && end - p > 10) {
			char sent[256];
			snprintf(sent, sizeof sent, "%.*s", (int)(end - p), p);
			const char *again = strstr(end, sent);
			dup += again != NULL;
		}
	}
	CHECK_EQ_INT(dup, 0);
	/* depth 0 and 1: first and last */
	struct needle_case d0, d1;
	sp.depth = 0;
	CHECK_EQ_INT(needle_make(&sp, &d0), 0);
	sp.depth = 1;
	CHECK_EQ_INT(needle_make(&sp, &d1), 0);
	CHECK(d0.depth_actual == 0 && d1.depth_actual == 1);
	CHECK(strstr(d1.prompt + d1.needle_at_bytes, "\n\nQuestion:") != NULL);
	/* checking replies */
	char reply[128];
	snprintf(reply, sizeof reply, "The code is %s.", a.answer);
	CHECK(needle_check(&a, reply));
	snprintf(reply, sizeof reply, "%s", a.answer);
	CHECK(needle_check(&a, reply));
	snprintf(reply, sizeof reply, "%s9", a.answer);
	CHECK(!needle_check(&a, reply));
	snprintf(reply, sizeof reply, "<think>%s</think>I do not know", a.answer);
	CHECK(!needle_check(&a, reply));
	CHECK(!needle_check(&a, ""));
	/* out of range */
	struct needle_case e;
	struct needle_spec badsp = {.context_tokens = 10, .depth = 0.5, .seed = 1};
	CHECK_EQ_INT(needle_make(&badsp, &e), -EINVAL);
	badsp = (struct needle_spec){.context_tokens = 1000, .depth = 1.5, .seed = 1};
	CHECK_EQ_INT(needle_make(&badsp, &e), -EINVAL);
	needle_case_finish(&a);
	needle_case_finish(&b);
	needle_case_finish(&c);
	needle_case_finish(&d0);
	needle_case_finish(&d1);
}

static char *write_tmp(const char *dir, const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

static void test_protocol(void)
{
	char err[8192];
	struct gate_protocol *p = gate_protocol_load(test_src_path("protocols/gate.json"), err, sizeof err);
	if (!CHECK(p != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	CHECK_EQ_INT(gate_protocol_count(p), 4);
	CHECK_EQ_STR(gate_protocol_gate_name(p, 0), "math");
	CHECK_EQ_STR(gate_protocol_gate_name(p, 3), "needle");
	gate_protocol_destroy(p);

	char dir[] = "/tmp/sixi-gate-XXXXXX";
	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	char setp[4096];
	if (!realpath(test_src_path("datasets/sixi-math"), setp))
		snprintf(setp, sizeof setp, "%s", test_src_path("datasets/sixi-math"));
	struct {
		const char *json, *want;
	} bad[] = {
		{"{\"gates\": []}", "1 to 16 gates"},
		{"{\"gates\": [{\"name\": \"n\", \"kind\": \"needle\", \"context_tokens\": [1000], \"depths\": [0.5]}]}",
		 "exactly one threshold"},
		{"{\"gates\": [{\"name\": \"n\", \"kind\": \"needle\", \"context_tokens\": [1000], \"depths\": [1.5], "
		 "\"min_rate\": 1}]}", "depths"},
		{"{\"gates\": [{\"name\": \"n\", \"kind\": \"needle\", \"context_tokens\": [1000], \"depths\": [0.5], "
		 "\"min_passed\": 2}]}", "from 0 to 1"},
		{"{\"gates\": [{\"name\": \"n\", \"kind\": \"haystack\", \"min_rate\": 1}]}", "\"kind\" must be"},
		{"{\"gates\": [{\"name\": \"m\", \"kind\": \"dataset\", \"dataset\": \"nowhere\", \"min_rate\": 1}]}",
		 "does not load"},
		{"{\"gates\": [], \"temprature\": 1}", "unknown key \"temprature\""},
		{"{\"gates\": [{\"name\": \"a b\", \"kind\": \"needle\"}]}", "short word"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *path = write_tmp(dir, "g.json", bad[i].json);
		p = gate_protocol_load(path, err, sizeof err);
		if (!CHECK(p == NULL && strstr(err, bad[i].want)))
			fprintf(stderr, "protocol %s: got \"%s\", want \"%s\"\n", bad[i].json, p ? "(accepted)" : err,
				bad[i].want);
		gate_protocol_destroy(p);
	}
	/* a dataset gate asking for more tasks than the set holds */
	char text[5000];
	snprintf(text, sizeof text, "{\"gates\": [{\"name\": \"m\", \"kind\": \"dataset\", \"dataset\": \"%s\", "
				    "\"tasks\": 500, \"min_passed\": 1}]}", setp);
	p = gate_protocol_load(write_tmp(dir, "g.json", text), err, sizeof err);
	if (!CHECK(p == NULL && strstr(err, "\"tasks\" is 500")))
		fprintf(stderr, "got: %s\n", p ? "(accepted)" : err);
	gate_protocol_destroy(p);
	unlink(write_tmp(dir, "g.json", ""));
	rmdir(dir);
}

static void test_fractions(void)
{
	char err[4096];
	struct eval_dataset *d = eval_dataset_load(test_src_path("datasets/sixi-math"), err, sizeof err);
	if (!CHECK(d != NULL))
		return;
	const struct eval_task *t = eval_dataset_find(d, "sixi-math/work-rate"); /* 36/7 */
	struct grader *g = grader_create(NULL, NULL);
	struct grade_result r;
	if (CHECK(t && g)) {
		CHECK(grade_completion(g, t, "So it takes 36/7 hours.\n#### 36/7", &r) == 0 && r.status == GRADE_PASS);
		CHECK(grade_completion(g, t, "#### 5.142857", &r) == 0 && r.status == GRADE_FAIL);
		CHECK(grade_completion(g, t, "#### 36", &r) == 0 && r.status == GRADE_FAIL);
		CHECK(grade_completion(g, t, "#### 7/36", &r) == 0 && r.status == GRADE_FAIL);
	}
	t = eval_dataset_find(d, "sixi-math/train-distance"); /* 255 */
	if (CHECK(t && g)) {
		CHECK(grade_completion(g, t, "#### 255", &r) == 0 && r.status == GRADE_PASS);
		CHECK(grade_completion(g, t, "#### 510/2", &r) == 0 && r.status == GRADE_PASS);
		CHECK(grade_completion(g, t, "#### 255.0", &r) == 0 && r.status == GRADE_PASS);
		CHECK(grade_completion(g, t, "#### 255/1.5", &r) == 0 && r.status == GRADE_FAIL); /* not a fraction: 1.5 is last */
		CHECK(grade_completion(g, t, "#### 254", &r) == 0 && r.status == GRADE_FAIL);
	}
	t = eval_dataset_find(d, "sixi-math/recipe-scale"); /* 15/8 = 1.875 */
	if (CHECK(t && g))
		CHECK(grade_completion(g, t, "\\boxed{1.875}", &r) == 0 && r.status == GRADE_PASS);
	grader_destroy(g);
	eval_dataset_destroy(d);
}

int main(void)
{
	test_jschema();
	test_toolcalls();
	test_needle();
	test_protocol();
	test_fractions();
	return test_done();
}
