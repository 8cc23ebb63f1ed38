/* Unit tests for src/datasets/task (dataset loader) and src/eval/protocol: every
 * refusal the issue lists (file:line errors, duplicate ids, tasks without tests,
 * unknown graders, unknown protocol keys, impossible values), the bundled demo
 * set, and the agreement of the protocol loader with protocols/schema.json. */
#include "test.h"
#include "core/json.h"
#include "eval/protocol.h"
#include "datasets/task.h"
#include <unistd.h>

static char tmp_path[256];

static const char *write_tmp(const char *text)
{
	snprintf(tmp_path, sizeof tmp_path, "/tmp/sixi_test_task_%d.jsonl", (int)getpid());
	FILE *f = fopen(tmp_path, "w");
	fputs(text, f);
	fclose(f);
	return tmp_path;
}

#define GOOD_PY "{\"id\":\"a\",\"prompt\":\"p\",\"grader\":\"python_tests\",\"tests\":\"assert f()==1\",\"reference\":\"def f(): return 1\"}\n"

static void expect_error(const char *text, const char *needle)
{
	char err[4096] = "";
	struct eval_dataset *d = eval_dataset_load(write_tmp(text), err, sizeof err);
	CHECK(d == NULL);
	if (!CHECK(strstr(err, needle) != NULL))
		fprintf(stderr, "  expected \"%s\" in: %s\n", needle, err);
	eval_dataset_destroy(d);
}

static void test_dataset_refusals(void)
{
	char want[512];
	/* malformed line: file and line number */
	write_tmp("");
	snprintf(want, sizeof want, "%s:2: not valid JSON", tmp_path);
	expect_error(GOOD_PY "{\"id\": \n", want);
	expect_error(GOOD_PY "\n" GOOD_PY, "3: duplicate task id \"a\" (first on line 1)");
	expect_error("{\"id\":\"b\",\"prompt\":\"p\",\"grader\":\"python_tests\",\"reference\":\"x=1\"}\n",
		     "1: task \"b\" has no tests");
	expect_error("{\"id\":\"b\",\"prompt\":\"p\",\"grader\":\"stdio\",\"tests\":[],\"reference\":\"x=1\"}\n",
		     "task \"b\" has no tests");
	expect_error("{\"id\":\"b\",\"prompt\":\"p\",\"grader\":\"choice\",\"choices\":[\"x\",\"y\"]}\n",
		     "task \"b\" has no tests");
	expect_error("{\"id\":\"b\",\"prompt\":\"p\",\"grader\":\"fuzzy\"}\n", "unknown grader \"fuzzy\"");
	expect_error("{\"id\":\"b\",\"prompt\":\"p\",\"grader\":\"numeric\",\"answer\":3,\"test\":\"x\"}\n",
		     "unknown key \"test\"");
	expect_error("[1,2]\n", "not a JSON object");
	expect_error("\n\n", "no tasks");
	expect_error("{\"id\":\"has space\",\"prompt\":\"p\",\"grader\":\"numeric\",\"answer\":3}\n", "id \"has space\"");
	/* every problem reported, not only the first */
	char err[4096] = "";
	CHECK(eval_dataset_load(write_tmp("{\n{\"id\":\"x\"}\n"), err, sizeof err) == NULL);
	CHECK(strstr(err, ":1:") && strstr(err, ":2: missing \"prompt\""));
	CHECK(eval_dataset_load("/nonexistent/dir/tasks.jsonl", err, sizeof err) == NULL);
	CHECK(strstr(err, "No such file") != NULL);

	struct eval_dataset *d = eval_dataset_load(
		write_tmp(GOOD_PY "{\"id\":\"n1\",\"prompt\":\"How many?\",\"grader\":\"numeric\",\"answer\":12.5,"
			  "\"reasoning\":true}\n"),
		err, sizeof err);
	if (CHECK(d != NULL)) {
		CHECK_EQ_INT(eval_dataset_count(d), 2);
		const struct eval_task *t = eval_dataset_find(d, "n1");
		CHECK(t && t->grader == EVAL_GRADER_NUMERIC && t->answer == 12.5 && t->reasoning && t->line == 2);
		CHECK(strlen(eval_dataset_sha256(d)) == 64);
	}
	eval_dataset_destroy(d);
	unlink(tmp_path);
}

static void test_bundled_demo(void)
{
	char err[4096];
	struct eval_dataset *d = eval_dataset_load(test_src_path("datasets/demo"), err, sizeof err);
	if (!CHECK(d != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	bool seen[5] = {0};
	for (size_t i = 0; i < eval_dataset_count(d); i++)
		seen[eval_dataset_task(d, i)->grader] = true;
	for (int g = 0; g < 5; g++)
		CHECK(seen[g]); /* the demo set covers every grader */
	eval_dataset_destroy(d);
}

static struct eval_protocol *parse_proto(const char *text, char *err, size_t errlen)
{
	cJSON *root = cJSON_Parse(text);
	struct eval_protocol *p = root ? eval_protocol_parse(root, "/base", err, errlen) : NULL;
	cJSON_Delete(root);
	return p;
}

#define PROTO_HEAD "{\"name\":\"t\",\"conditions\":[{\"name\":\"a\",\"endpoint\":\"http://127.0.0.1:1/\",\"model\":\"m\"}]," \
		   "\"datasets\":[\"d\"]"

static void expect_proto_error(const char *text, const char *needle)
{
	char err[1024] = "";
	struct eval_protocol *p = parse_proto(text, err, sizeof err);
	CHECK(p == NULL);
	if (!CHECK(strstr(err, needle) != NULL))
		fprintf(stderr, "  expected \"%s\" in: %s\n", needle, err);
	eval_protocol_destroy(p);
}

static void test_protocol(void)
{
	char err[1024];
	struct eval_protocol *p = parse_proto(PROTO_HEAD "}", err, sizeof err);
	if (!CHECK(p != NULL))
		fprintf(stderr, "%s\n", err);
	if (p) {
		CHECK(p->temperature == 0.7 && p->repeats == 3 && p->attempts == 3 && p->reasoning_max_tokens >= 64000);
		CHECK_EQ_STR(p->datasets[0], "/base/d");
		CHECK_EQ_STR(p->conditions[0].endpoint, "http://127.0.0.1:1");
		CHECK_EQ_STR(p->conditions[0].template_source, "chat");
		CHECK_EQ_INT(eval_protocol_warnings(p, NULL, 0), 0);
		/* canonical form: same text from a reordered, defaults-spelled-out input */
		struct eval_protocol *q = parse_proto(
			"{\"datasets\":[\"d\"],\"repeats\":3,\"sampling\":{\"temperature\":0.7},\"name\":\"t\","
			"\"conditions\":[{\"model\":\"m\",\"endpoint\":\"http://127.0.0.1:1\",\"name\":\"a\"}]}",
			err, sizeof err);
		char *a = eval_protocol_canonical(p, -1), *b = q ? eval_protocol_canonical(q, -1) : NULL;
		CHECK_EQ_STR(a, b);
		free(a);
		free(b);
		eval_protocol_destroy(q);
	}
	eval_protocol_destroy(p);
	p = parse_proto(PROTO_HEAD ",\"sampling\":{\"temperature\":0}}", err, sizeof err);
	CHECK(p && eval_protocol_warnings(p, err, sizeof err) >= 1 && strstr(err, "greedy"));
	eval_protocol_destroy(p);

	expect_proto_error(PROTO_HEAD ",\"repeat\":3}", "unknown key \"repeat\"");
	expect_proto_error(PROTO_HEAD ",\"sampling\":{\"temprature\":1}}", "sampling: unknown key \"temprature\"");
	expect_proto_error(PROTO_HEAD ",\"sampling\":{\"temperature\":-1}}", "sampling.temperature = -1 is impossible");
	expect_proto_error(PROTO_HEAD ",\"sampling\":{\"max_tokens\":0}}", "sampling.max_tokens = 0 is impossible");
	expect_proto_error(PROTO_HEAD ",\"sampling\":{\"top_p\":1.5}}", "top_p = 1.5 is impossible");
	expect_proto_error(PROTO_HEAD ",\"repeats\":0}", "repeats = 0 is impossible");
	expect_proto_error(PROTO_HEAD ",\"repeats\":2.5}", "whole number");
	expect_proto_error(PROTO_HEAD ",\"concurrency\":\"4\"}", "concurrency must be a number");
	expect_proto_error(PROTO_HEAD ",\"loop_stop\":150}", "loop_stop = 150 is impossible");
	expect_proto_error(PROTO_HEAD ",\"analysis\":{\"tests\":[\"ttest\"]}}", "unknown test \"ttest\"");
	expect_proto_error(PROTO_HEAD ",\"stall_s\":500,\"timeout_s\":100}", "stall_s");
	expect_proto_error("{\"name\":\"t\",\"conditions\":[{\"name\":\"a\",\"endpoint\":\"ftp://x\",\"model\":\"m\"}],"
			   "\"datasets\":[\"d\"]}", "must start with http://");
	expect_proto_error("{\"name\":\"t\",\"conditions\":[{\"name\":\"a\",\"endpoint\":\"http://x\",\"model\":\"m\","
			   "\"template\":{\"source\":\"jinja\"}}],\"datasets\":[\"d\"]}", "needs a \"path\"");
	expect_proto_error("{\"name\":\"t\",\"conditions\":[],\"datasets\":[\"d\"]}", "conditions must be");
	expect_proto_error("{\"name\":\"t\",\"conditions\":[{\"name\":\"a\",\"endpoint\":\"http://x\",\"model\":\"m\"},"
			   "{\"name\":\"a\",\"endpoint\":\"http://y\",\"model\":\"n\"}],\"datasets\":[\"d\"]}", "used twice");
}

/* Every property in protocols/schema.json is accepted by the loader, and the
 * schema forbids additional properties wherever the loader does. */
static void walk_schema(const cJSON *schema, const cJSON *defs, int *checked);
static void walk_schema(const cJSON *schema, const cJSON *defs, int *checked)
{
	if (!cJSON_IsObject(schema))
		return;
	const cJSON *ref = cJSON_GetObjectItem(schema, "$ref");
	if (cJSON_IsString(ref)) {
		const char *name = strrchr(ref->valuestring, '/');
		walk_schema(cJSON_GetObjectItem(defs, name ? name + 1 : ""), defs, checked);
		return;
	}
	const cJSON *props = cJSON_GetObjectItem(schema, "properties");
	if (props) {
		const cJSON *ap = cJSON_GetObjectItem(schema, "additionalProperties");
		CHECK(cJSON_IsFalse(ap));
		(*checked)++;
		for (const cJSON *p = props->child; p; p = p->next)
			walk_schema(p, defs, checked);
	}
	walk_schema(cJSON_GetObjectItem(schema, "items"), defs, checked);
}

static void test_protocol_files(void)
{
	char err[1024];
	cJSON *schema = json_parse_file(test_src_path("protocols/schema.json"), err, sizeof err);
	if (!CHECK(schema != NULL))
		return;
	int checked = 0;
	walk_schema(schema, cJSON_GetObjectItem(schema, "$defs"), &checked);
	CHECK(checked >= 5);
	/* the loader accepts an example that uses every key of the schema */
	struct eval_protocol *p = eval_protocol_load(test_src_path("protocols/demo.json"), err, sizeof err);
	if (!CHECK(p != NULL))
		fprintf(stderr, "%s\n", err);
	eval_protocol_destroy(p);
	cJSON_Delete(schema);
}

static void order_ids(const struct eval_task **t, size_t n, char *out, size_t cap)
{
	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		strncat(out, t[i]->id, cap - strlen(out) - 2);
		strcat(out, " ");
	}
}

static void test_shuffle(void)
{
	static struct eval_task tasks[40];
	static char ids[40][8];
	const struct eval_task *a[40], *b[40];
	for (int i = 0; i < 40; i++) {
		snprintf(ids[i], sizeof ids[i], "t%02d", i);
		tasks[i].id = ids[i];
		a[i] = &tasks[i];
		b[39 - i] = &tasks[i]; /* the same tasks, read in another order */
	}
	char sa[400], sb[400], sorted[400];
	order_ids(a, 40, sorted, sizeof sorted);
	eval_tasks_shuffle(a, 40, 7, 0);
	eval_tasks_shuffle(b, 40, 7, 0);
	order_ids(a, 40, sa, sizeof sa);
	order_ids(b, 40, sb, sizeof sb);
	CHECK_EQ_STR(sa, sb);               /* deterministic, whatever the input order */
	CHECK(strcmp(sa, sorted) != 0);     /* never id order */
	bool seen[40] = {0};
	for (int i = 0; i < 40; i++)
		seen[a[i] - tasks] = true;
	for (int i = 0; i < 40; i++)
		CHECK(seen[i]);                 /* a permutation */
	eval_tasks_shuffle(b, 40, 7, 1);
	order_ids(b, 40, sb, sizeof sb);
	CHECK(strcmp(sa, sb) != 0);         /* each repeat has its own order */
	eval_tasks_shuffle(b, 40, 8, 0);
	order_ids(b, 40, sb, sizeof sb);
	CHECK(strcmp(sa, sb) != 0);         /* the seed matters */
	/* pinned: the order must not change between versions or machines */
	CHECK(strncmp(sa, "t13 t12 t35 t33 t23 t04 t21 t05 t14 t22 ", 40) == 0);
}

int main(void)
{
	test_shuffle();
	test_dataset_refusals();
	test_bundled_demo();
	test_protocol();
	test_protocol_files();
	return test_done();
}
