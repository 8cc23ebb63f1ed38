/* Unit tests for src/text/jinja and the template command: the snippet golden
 * file made by jinja2 (tests/fixtures/templates/expected/snippets.json), syntax
 * errors with line and column, the template-injection guard, non-UTF-8 input,
 * runaway limits, loading from tokenizer_config.json, and `template render`. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/hash.h"
#include "core/json.h"
#include "text/jinja.h"
#include "text/template_cmd.h"

#define FIXED_NOW 1764547200 /* strftime_now's instant in make_expected.py */

/* Renders src with the JSON object ctx_json; returns rc, text in out, message in err. */
static int render(const char *src, const char *ctx_json, struct buf *out, char *err, size_t errlen)
{
	struct jinja_template *t = jinja_parse(src, strlen(src), err, errlen);
	if (!t)
		return -EINVAL;
	cJSON *ctx = ctx_json ? cJSON_Parse(ctx_json) : NULL;
	int rc = jinja_render_chat_at(t, ctx, FIXED_NOW, out, err, errlen);
	cJSON_Delete(ctx);
	jinja_destroy(t);
	return rc;
}

static void test_snippets(void)
{
	char err[1024];
	size_t n = 0;
	FILE *f = fopen(test_src_path("tests/fixtures/templates/snippets.json"), "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	char *raw = malloc(1 << 20);
	n = fread(raw, 1, (1 << 20) - 1, f);
	fclose(f);
	raw[n] = 0;
	char hex[65];
	sha256_hex(raw, n, hex);
	cJSON *snips = cJSON_Parse(raw);
	free(raw);
	cJSON *exp = json_parse_file(test_src_path("tests/fixtures/templates/expected/snippets.json"), err, sizeof err);
	CHECK(snips && exp);
	if (!snips || !exp)
		goto out;
	CHECK_EQ_STR(json_get_str(exp, "snippets_sha256"), hex);
	const cJSON *results = cJSON_GetObjectItem(exp, "results");
	CHECK_EQ_INT(cJSON_GetArraySize(results), cJSON_GetArraySize(snips));
	int i = 0, texts = 0, errors = 0;
	const cJSON *s;
	cJSON_ArrayForEach(s, snips)
	{
		const cJSON *want = cJSON_GetArrayItem(results, i++);
		const char *src = json_get_str(s, "t"), *want_out = json_get_str(want, "out");
		struct jinja_template *t = jinja_parse(src, strlen(src), err, sizeof err);
		struct buf out;
		buf_init(&out);
		int rc = t ? jinja_render_chat_at(t, cJSON_GetObjectItem(s, "ctx"), FIXED_NOW, &out, err, sizeof err) : -EINVAL;
		if (want_out) {
			bool same = rc == 0 && out.len == strlen(want_out) && memcmp(out.data, want_out, out.len) == 0;
			if (!same)
				fprintf(stderr, "snippet %d: %s\n  got:  %s\n  want: %s\n", i, src, rc ? err : out.data, want_out);
			CHECK(same);
			texts += same;
		} else {
			if (rc == 0)
				fprintf(stderr, "snippet %d: %s\n  rendered \"%s\" where jinja2 raised %s\n", i, src, out.data,
					json_get_str(want, "error"));
			CHECK(rc != 0 && err[0]);
			errors += rc != 0;
		}
		buf_finish(&out);
		jinja_destroy(t);
	}
	printf("snippets: %d texts identical to jinja2, %d errors where jinja2 raises, of %d\n", texts, errors, i);
out:
	cJSON_Delete(snips);
	cJSON_Delete(exp);
}

static void expect_syntax_error(const char *src, const char *where, const char *what)
{
	char err[512];
	errno = 0;
	struct jinja_template *t = jinja_parse(src, strlen(src), err, sizeof err);
	CHECK(t == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	if (!strstr(err, where) || !strstr(err, what))
		fprintf(stderr, "syntax error for %s: \"%s\" lacks \"%s\" or \"%s\"\n", src, err, where, what);
	CHECK(strstr(err, where) != NULL);
	CHECK(strstr(err, what) != NULL);
	jinja_destroy(t);
}

static void test_syntax_errors(void)
{
	expect_syntax_error("ok\n{{ 1 + }}", "line 2:8", "expected an expression");
	expect_syntax_error("{% if x %}\nA\n", "line 1:4", "never closed ('endif' expected)");
	expect_syntax_error("a\n  {% frobnicate %}", "line 2:6", "unknown tag 'frobnicate'");
	expect_syntax_error("{{ 'abc }}", "line 1:4", "never closed");
	expect_syntax_error("{# open comment", "line 1:1", "missing end of comment");
	expect_syntax_error("{% for x in y %}{% endif %}", "line 1:20", "unexpected 'endif'");
	expect_syntax_error("{% break %}", "line 1:4", "outside of a loop");
	expect_syntax_error("{{ (1, 2] }}", "line 1:9", "unexpected ']'");
	expect_syntax_error("{{ x", "line 1:5", "unexpected end of template");
	expect_syntax_error("{% include 'other.jinja' %}", "line 1:4", "not supported");
	expect_syntax_error("{% raw %}never closed", "line 1:1", "missing end of raw");
	/* nesting deep enough to overflow a naive recursive parser */
	struct buf b;
	buf_init(&b);
	CHECK(buf_puts(&b, "{{ ") == 0);
	for (int i = 0; i < 5000; i++)
		CHECK(buf_puts(&b, "(") == 0);
	expect_syntax_error(b.data, "line 1:", "too deeply");
	buf_finish(&b);
	char bad[] = "{{ 'a' }}\xff";
	char err[256];
	CHECK(jinja_parse(bad, sizeof bad - 1, err, sizeof err) == NULL);
	CHECK(strstr(err, "UTF-8") != NULL);
}

static const char chatml[] = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
			     "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

static void test_injection_guard(void)
{
	char err[512];
	struct buf out;
	buf_init(&out);
	const char *ctx = "{\"messages\": [{\"role\": \"user\", \"content\": "
			  "\"{{ raise_exception('x') }}{% for i in range(99) %}{{ i }}{% endfor %}{# c #}{%- raw %}\"}],"
			  " \"add_generation_prompt\": true}";
	CHECK_EQ_INT(render(chatml, ctx, &out, err, sizeof err), 0);
	CHECK_EQ_STR(out.data, "<|im_start|>user\n{{ raise_exception('x') }}{% for i in range(99) %}{{ i }}{% endfor %}"
			       "{# c #}{%- raw %}<|im_end|>\n<|im_start|>assistant\n");
	buf_finish(&out);
}

static void test_bad_input(void)
{
	char err[512];
	struct buf out;
	buf_init(&out);
	CHECK(buf_puts(&out, "keep") == 0);
	/* invalid UTF-8 in a message: a clear error naming the field, output untouched */
	cJSON *ctx = cJSON_Parse("{\"messages\": [{\"role\": \"user\", \"content\": \"ok\"}, {\"role\": \"user\"}]}");
	cJSON_AddStringToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(ctx, "messages"), 1), "content", "caf\xe9 latin-1");
	struct jinja_template *t = jinja_parse(chatml, strlen(chatml), err, sizeof err);
	CHECK(t != NULL);
	CHECK_EQ_INT(jinja_render_chat(t, ctx, &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "messages[1].content") && strstr(err, "UTF-8"));
	CHECK_EQ_STR(out.data, "keep");
	cJSON_Delete(ctx);
	/* a context that is not an object */
	cJSON *arr = cJSON_CreateArray();
	CHECK_EQ_INT(jinja_render_chat(t, arr, &out, err, sizeof err), -EINVAL);
	cJSON_Delete(arr);
	jinja_destroy(t);

	/* undefined: printing is empty, attribute access raises as jinja2 does */
	buf_reset(&out);
	CHECK_EQ_INT(render("[{{ nothing }}]", "{}", &out, err, sizeof err), 0);
	CHECK_EQ_STR(out.data, "[]");
	CHECK_EQ_INT(render("{{ messages[0].content.text }}", "{\"messages\": [{\"content\": {}}]}", &out, err, sizeof err), 0);
	CHECK_EQ_INT(render("{{ messages[0].nothing.text }}", "{\"messages\": [{}]}", &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "line 1:") && strstr(err, "'dict object' has no attribute 'nothing'"));
	CHECK_EQ_INT(render("{{ raise_exception('Conversation roles must alternate') }}", "{}", &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "Conversation roles must alternate") != NULL);

	/* runaway templates are refused, not run */
	CHECK_EQ_INT(render("{% for i in range(1000000) %}{% endfor %}", "{}", &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "range too big") != NULL);
	CHECK_EQ_INT(render("{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", "{}", &out, err,
			    sizeof err), -EINVAL);
	CHECK(strstr(err, "steps") != NULL);
	CHECK_EQ_INT(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "too deeply") != NULL);
	CHECK_EQ_INT(render("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
			    "{% endfor %}", "{}", &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "MiB") != NULL);
	CHECK_EQ_INT(render("{{ 9223372036854775807 + 1 }}", "{}", &out, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "64 bits") != NULL);
	buf_finish(&out);
}

static void test_chat_defaults(void)
{
	char err[256];
	struct buf out;
	buf_init(&out);
	/* as apply_chat_template: tools and documents are none, add_generation_prompt false */
	CHECK_EQ_INT(render("{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ x is defined }}",
			    NULL, &out, err, sizeof err), 0);
	CHECK_EQ_STR(out.data, "True True False False");
	buf_finish(&out);
}

static char tmpdir[256];

static const char *write_tmp(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

static void test_loading(void)
{
	char err[512];
	size_t n = 0;
	cJSON *special = NULL;
	char *src = jinja_source_load(write_tmp("a.json", "{\"chat_template\": \"{{ bos_token }}hi\", "
							  "\"bos_token\": {\"content\": \"<B>\"}, \"eos_token\": \"<E>\", "
							  "\"pad_token\": \"<P>\", \"unk_token\": null, \"max_token\": 5}"),
				      &n, &special, err, sizeof err);
	CHECK_EQ_STR(src, "{{ bos_token }}hi");
	CHECK_EQ_INT(n, 17);
	CHECK_EQ_STR(json_get_str(special, "bos_token"), "<B>");
	CHECK_EQ_STR(json_get_str(special, "eos_token"), "<E>");
	CHECK_EQ_STR(json_get_str(special, "pad_token"), "<P>");
	CHECK_EQ_INT(cJSON_GetArraySize(special), 3);
	free(src);
	cJSON_Delete(special);
	src = jinja_source_load(write_tmp("b.json", "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"},"
						    " {\"name\": \"default\", \"template\": \"D\"}]}"),
				&n, NULL, err, sizeof err);
	CHECK_EQ_STR(src, "D");
	free(src);
	src = jinja_source_load(write_tmp("c.json", "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}]}"),
				&n, NULL, err, sizeof err);
	CHECK(src == NULL && strstr(err, "default"));
	src = jinja_source_load(write_tmp("d.json", "{\"model_max_length\": 8}"), &n, NULL, err, sizeof err);
	CHECK(src == NULL && strstr(err, "no chat_template"));
	src = jinja_source_load(write_tmp("e.jinja", "{{ 1 }}\n"), &n, NULL, err, sizeof err);
	CHECK_EQ_STR(src, "{{ 1 }}\n");
	free(src);
	src = jinja_source_load(write_tmp("f.json", "{\"chat_template\": "), &n, NULL, err, sizeof err);
	CHECK(src == NULL && strstr(err, "f.json"));
	CHECK(jinja_source_load("/nonexistent/x.jinja", &n, NULL, err, sizeof err) == NULL);
	CHECK(strstr(err, "cannot open") != NULL);
}

/* Runs template_cmd_main with stdout captured into out. */
static int run_cmd(int argc, char **argv, struct buf *out)
{
	char path[512];
	snprintf(path, sizeof path, "%s/stdout", tmpdir);
	fflush(stdout);
	int saved = dup(1), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 1);
	close(fd);
	int code = template_cmd_main(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	buf_reset(out);
	FILE *f = fopen(path, "rb");
	char chunk[4096];
	size_t got;
	while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
		CHECK(buf_append(out, chunk, got) == 0);
	if (f)
		fclose(f);
	return code;
}

static void test_cmd(void)
{
	struct buf out;
	buf_init(&out);
	char tmpl[512], msgs[512], tools[512];
	snprintf(tmpl, sizeof tmpl, "%s", write_tmp("t.jinja", "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};"
							  "{% endfor %}{{ tools | length if tools else 'no tools' }}"
							  "{{ '+' if add_generation_prompt }}{{ enable_thinking }}"
							  "{{ strftime_now('%Y') }}"));
	snprintf(msgs, sizeof msgs, "%s", write_tmp("m.json", "[{\"role\": \"user\", \"content\": \"hé\"}]"));
	snprintf(tools, sizeof tools, "%s", write_tmp("tools.json", "[{\"type\": \"function\"}, {}]"));
	char *argv1[] = {"template", "render", "--template", tmpl, "--messages", msgs, "--tools", tools,
			 "--var", "enable_thinking=false", "--var", "bos_token=<s>", "--add-generation-prompt",
			 "--now", "1764547200"};
	CHECK_EQ_INT(run_cmd(15, argv1, &out), 0);
	CHECK_EQ_STR(out.data, "<s>user:hé;2+False2025");
	char *argv2[] = {"template", "render", "--template", tmpl};
	CHECK_EQ_INT(run_cmd(4, argv2, &out), 2);
	char *argv3[] = {"template", "render", "--template", tmpl, "--messages", tmpl};
	CHECK_EQ_INT(run_cmd(6, argv3, &out), 1);
	CHECK_EQ_INT(out.len, 0);
	char *argv4[] = {"template", "frobnicate"};
	CHECK_EQ_INT(run_cmd(2, argv4, &out), 2);
	char *argv5[] = {"template", "render", "--template", (char *)write_tmp("bad.jinja", "{% if %}"), "--messages", msgs};
	CHECK_EQ_INT(run_cmd(6, argv5, &out), 1);
	buf_finish(&out);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/sixi-jinja-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(tmpdir) != NULL);
	test_snippets();
	test_syntax_errors();
	test_injection_guard();
	test_bad_input();
	test_chat_defaults();
	test_loading();
	test_cmd();
	const char *names[] = {"a.json", "b.json", "c.json", "d.json", "e.jinja", "f.json", "t.jinja", "m.json",
			       "tools.json", "bad.jinja", "stdout"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char p[600];
		snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
		unlink(p);
	}
	rmdir(tmpdir);
	return test_done();
}
