/* Unit tests for src/bench/source: ShareGPT arrays keep every turn in order,
 * JSONL of messages or prompts and dataset folders load, records without a user
 * turn are skipped and counted, and a malformed record is named by FILE:LINE with
 * what was expected. */
#include "test.h"
#include "bench/source.h"
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static const char *put(const char *name, const char *text)
{
	static char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
	return path;
}

static void test_sharegpt(void)
{
	char err[512];
	const char *p = put("sg.json", "[\n"
				       "  {\"id\": \"a\", \"conversations\": [\n"
				       "    {\"from\": \"system\", \"value\": \"be brief\"},\n"
				       "    {\"from\": \"human\", \"value\": \"q1 [with] {braces} \\\"quoted\\\"\"},\n"
				       "    {\"from\": \"gpt\", \"value\": \"a1\"},\n"
				       "    {\"from\": \"human\", \"value\": \"q2\"}]},\n"
				       "  {\"id\": \"empty\", \"conversations\": []},\n"
				       "  {\"id\": \"b\", \"conversations\": [{\"from\": \"human\", \"value\": \"only\"}]}\n"
				       "]\n");
	struct source *s = source_load(p, err, sizeof err);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ_INT(s->n, 2);
	CHECK_EQ_INT(s->skipped, 1);
	CHECK_EQ_INT(s->c[0].n, 4);
	CHECK_EQ_INT(s->c[0].line, 2);
	CHECK_EQ_INT(s->c[1].line, 8);
	CHECK_EQ_INT(source_user_turns(&s->c[0]), 2);
	CHECK(s->c[0].m[0].role == SOURCE_SYSTEM && s->c[0].m[2].role == SOURCE_ASSISTANT);
	CHECK_EQ_STR(s->c[0].m[1].text, "q1 [with] {braces} \"quoted\"");
	char *fp = source_first_prompt(&s->c[0]);
	CHECK_EQ_STR(fp, "be brief\n\nq1 [with] {braces} \"quoted\"");
	free(fp);
	source_destroy(s);
	/* a malformed record: its first line and what is expected */
	p = put("bad.json", "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"ok\"}]},\n"
			    " {\"conversations\": [\n   {\"from\": \"human\", \"value\": 3}]}\n]\n");
	CHECK(source_load(p, err, sizeof err) == NULL);
	char want[256];
	snprintf(want, sizeof want, "%s:3: conversations[0] has no string \"value\"", p);
	CHECK(strstr(err, want) && strstr(err, "expected {\"conversations\""));
	p = put("role.json", "[{\"conversations\": [{\"from\": \"robot\", \"value\": \"x\"}]}]");
	CHECK(source_load(p, err, sizeof err) == NULL && strstr(err, ":1: conversations[0] has an unknown role \"robot\""));
	p = put("trunc.json", "[{\"conversations\": [{\"from\": \"human\", \"value\": \"x\"}]},\n{\"conv");
	CHECK(source_load(p, err, sizeof err) == NULL && strstr(err, "not closed"));
	p = put("notobj.json", "[{\"prompt\": \"x\"}, 5]");
	CHECK(source_load(p, err, sizeof err) == NULL && strstr(err, ":1: an array element that is not an object"));
}

static void test_jsonl_and_folder(void)
{
	char err[512], want[256];
	const char *p = put("m.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": "
				      "\"assistant\", \"content\": \"yo\"}, {\"role\": \"user\", \"content\": \"more\"}]}\n"
				      "\n{\"prompt\": \"plain\"}\n");
	struct source *s = source_load(p, err, sizeof err);
	CHECK(s && s->n == 2 && source_user_turns(&s->c[0]) == 2 && s->c[1].line == 3);
	if (s)
		CHECK_EQ_STR(s->c[1].m[0].text, "plain");
	source_destroy(s);
	p = put("b.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": 7}\n");
	CHECK(source_load(p, err, sizeof err) == NULL);
	snprintf(want, sizeof want, "%s:2: \"prompt\" is not a string", p);
	CHECK(strstr(err, want) != NULL);
	p = put("c.jsonl", "{\"prompt\": \"a\"}\n{not json\n");
	CHECK(source_load(p, err, sizeof err) == NULL && strstr(err, ":2: not valid JSON"));
	p = put("d.jsonl", "{\"text\": \"a\"}\n");
	CHECK(source_load(p, err, sizeof err) == NULL && strstr(err, ":1: the record has none of"));
	/* an eval dataset folder: DIR/tasks.jsonl, each task's prompt */
	char ds[128];
	snprintf(ds, sizeof ds, "%s/ds", dir);
	CHECK(mkdir(ds, 0700) == 0);
	put("ds/tasks.jsonl", "{\"id\": \"t/1\", \"grader\": \"exact\", \"prompt\": \"What is 2+2?\", \"answer\": \"4\"}\n");
	s = source_load(ds, err, sizeof err);
	CHECK(s && s->n == 1);
	if (s)
		CHECK_EQ_STR(s->c[0].m[0].text, "What is 2+2?");
	source_destroy(s);
	CHECK(source_load("/nonexistent/prompts.json", err, sizeof err) == NULL && strstr(err, "cannot read"));
	p = put("none.jsonl", "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}]}\n");
	CHECK(source_load(p, err, sizeof err) == NULL && strstr(err, "no record with a user turn"));
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/sixi-source-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_sharegpt();
	test_jsonl_and_folder();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
