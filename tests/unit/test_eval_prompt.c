/* Unit tests for src/eval/prompt: the model's own chat template from a .jinja
 * file, a tokenizer_config.json and a GGUF's metadata, rendered for one user
 * message with the generation prompt; hashes; BOS detection; refusals. */
#include "test.h"
#include "core/hash.h"
#include "eval/prompt.h"
#include "gguf/gguf.h"
#include <unistd.h>

#define TEMPLATE "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}" \
		 "{% if add_generation_prompt %}<|assistant|>{% endif %}"

static void test_jinja_file(void)
{
	char err[512];
	struct eval_prompt *p = eval_prompt_load("jinja", test_src_path("tests/fixtures/templates/sixi-plain.jinja"), err,
						 sizeof err);
	if (!CHECK(p != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	char *s = eval_prompt_render(p, "What is 2 + 3?", err, sizeof err);
	CHECK_EQ_STR(s, "### User:\nWhat is 2 + 3?\n\n### Assistant:\n");
	free(s);
	CHECK(strlen(eval_prompt_sha256(p)) == 64);
	CHECK(!eval_prompt_starts_with_bos(p));
	eval_prompt_destroy(p);
}

static void test_tokenizer_config(const char *dir)
{
	char path[300], err[512];
	snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "{\"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\"}, \"chat_template\": \"%s\"}",
		"{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
		"{% if add_generation_prompt %}<|assistant|>{% endif %}");
	fclose(f);
	struct eval_prompt *p = eval_prompt_load("tokenizer_config", path, err, sizeof err);
	if (CHECK(p != NULL)) {
		char *s = eval_prompt_render(p, "hi", err, sizeof err);
		CHECK_EQ_STR(s, "<s><|user|>hi</s><|assistant|>");
		free(s);
		CHECK(eval_prompt_starts_with_bos(p));
	} else {
		fprintf(stderr, "%s\n", err);
	}
	eval_prompt_destroy(p);
	unlink(path);
}

static void test_gguf(const char *dir)
{
	char path[300], err[512];
	snprintf(path, sizeof path, "%s/model.gguf", dir);
	struct gguf_writer *w = gguf_writer_create();
	const char *tokens[] = {"<unk>", "<|bos|>", "<|eos|>", "a"};
	CHECK(gguf_writer_set_str(w, "general.architecture", "test") == 0);
	CHECK(gguf_writer_set_str(w, "tokenizer.chat_template", TEMPLATE) == 0);
	CHECK(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", tokens, 4) == 0);
	CHECK(gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1) == 0);
	CHECK(gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2) == 0);
	CHECK(gguf_writer_write(w, path, err, sizeof err) == 0);
	gguf_writer_destroy(w);
	struct eval_prompt *p = eval_prompt_load("gguf", path, err, sizeof err);
	if (CHECK(p != NULL)) {
		char *s = eval_prompt_render(p, "hi", err, sizeof err);
		CHECK_EQ_STR(s, "<|bos|><|user|>hi<|end|><|assistant|>");
		free(s);
		char hex[65];
		sha256_hex(TEMPLATE, strlen(TEMPLATE), hex);
		CHECK_EQ_STR(eval_prompt_sha256(p), hex);
		CHECK(eval_prompt_starts_with_bos(p));
	} else {
		fprintf(stderr, "%s\n", err);
	}
	eval_prompt_destroy(p);
	/* a GGUF without a chat template is refused, naming the key */
	w = gguf_writer_create();
	CHECK(gguf_writer_set_str(w, "general.architecture", "test") == 0);
	CHECK(gguf_writer_write(w, path, err, sizeof err) == 0);
	gguf_writer_destroy(w);
	CHECK(eval_prompt_load("gguf", path, err, sizeof err) == NULL);
	CHECK(strstr(err, "tokenizer.chat_template") != NULL);
	unlink(path);
}

static void test_refusals(const char *dir)
{
	char path[300], err[512];
	CHECK(eval_prompt_load("jinja", "/nonexistent/t.jinja", err, sizeof err) == NULL);
	snprintf(path, sizeof path, "%s/bad.jinja", dir);
	FILE *f = fopen(path, "w");
	fputs("{% for m in messages %}{{ m['content'] }", f); /* unclosed */
	fclose(f);
	CHECK(eval_prompt_load("jinja", path, err, sizeof err) == NULL && strstr(err, "bad.jinja"));
	f = fopen(path, "w");
	fputs("{{ raise_exception('system message required') }}", f); /* parses, never renders */
	fclose(f);
	CHECK(eval_prompt_load("jinja", path, err, sizeof err) == NULL && strstr(err, "does not render"));
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/sixi_test_prompt_XXXXXX";
	if (!mkdtemp(dir))
		return test_skip("cannot create a temporary folder");
	test_jinja_file();
	test_tokenizer_config(dir);
	test_gguf(dir);
	test_refusals(dir);
	rmdir(dir);
	return test_done();
}
