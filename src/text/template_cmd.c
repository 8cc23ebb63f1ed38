/* template_cmd — `sixi-eval template render`: argument parsing and file I/O
 * around src/text/jinja. Does no rendering of its own. */
#include "text/template_cmd.h"
#include "core/err.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/buf.h"
#include "core/json.h"
#include "text/jinja.h"

static const char usage_text[] =
	"usage: sixi-eval template render --template FILE --messages FILE.json [--tools FILE.json]\n"
	"                                 [--var NAME=VALUE ...] [--add-generation-prompt] [--now SECONDS]\n";
static const char epilog[] = "\nPrints the rendered prompt on stdout, byte for byte, with no newline added.\n";

static int set_var(cJSON *ctx, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) {
		err_set(err, errlen, "--var %s: expected NAME=VALUE", kv);
		return -EINVAL;
	}
	char name[256];
	size_t nl = (size_t)(eq - kv);
	if (nl >= sizeof name) {
		err_set(err, errlen, "--var: name longer than %zu bytes", sizeof name - 1);
		return -EINVAL;
	}
	memcpy(name, kv, nl);
	name[nl] = 0;
	char jerr[128];
	cJSON *v = json_parse_n(eq + 1, strlen(eq + 1), jerr, sizeof jerr);
	if (!v)
		v = cJSON_CreateString(eq + 1);
	if (!v) {
		err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(ctx, name);
	cJSON_AddItemToObject(ctx, name, v);
	return 0;
}

/* --var: one more variable, into the object the field points to; repeats add more. */
static int var_opt(const char *opt, const char *v, void *field, char *err, size_t errlen)
{
	(void)opt;
	return set_var(*(cJSON **)field, v, err, errlen);
}

/* template render's options: one table, each row naming the field it sets. */
struct render_opts {
	const char *tmpl_path, *msgs_path, *tools_path;
	cJSON *vars;
	bool agp;
	int64_t now_s; /* < 0: the local clock */
};
#define O struct render_opts
static const struct args_opt render_options[] = {
	ARGS_STRING_OPT("--template", "FILE", O, tmpl_path, 0,
			"a .jinja file or a Hugging Face tokenizer_config.json (its chat_template,\n"
			"the one named \"default\" when it lists several; its bos/eos tokens become variables)"),
	ARGS_STRING_OPT("--messages", "FILE.json", O, msgs_path, 0,
			"a JSON array of messages, or an object whose keys are all variables\n(messages, tools, ...)"),
	ARGS_STRING_OPT("--tools", "FILE.json", O, tools_path, 0, "a JSON array of tool definitions"),
	ARGS_CALL_OPT("--var", "NAME=VALUE", var_opt, O, vars, 0,
		      "one more variable; VALUE is read as JSON when it parses (true, 3, \"x\"),\n"
		      "else as a string (--var enable_thinking=false --var bos_token=<s>)"),
	ARGS_FLAG_OPT("--add-generation-prompt", O, agp, true, 0, "end with the assistant turn's opening"),
	ARGS_INT_OPT("--now", "SECONDS", O, now_s, 0, 253402300799.0, 0,
		     "render strftime_now() at this Unix time in UTC (default: the local clock)"),
	ARGS_TABLE_END,
};
#undef O
static const struct args_spec render_spec = { .prog = "sixi-eval template render", .usage = usage_text,
					      .epilog = epilog, .opts = render_options };

static int cmd_render(int argc, char **argv)
{
	char err[1024] = "";
	int code = 1;
	cJSON *ctx = cJSON_CreateObject(), *vars = cJSON_CreateObject(), *special = NULL;
	char *src = NULL;
	struct jinja_template *t = NULL;
	struct buf out;
	buf_init(&out);
	if (!ctx || !vars) {
		fprintf(stderr, "sixi-eval template: out of memory\n");
		goto out;
	}
	struct render_opts o = { .vars = vars, .now_s = -1 };
	code = args_cli(&render_spec, 0, argc - 1, argv + 1, &o, NULL, NULL);
	if (code != ARGS_CONTINUE)
		goto out;
	code = 1;
	const char *tmpl_path = o.tmpl_path, *msgs_path = o.msgs_path, *tools_path = o.tools_path;
	bool agp = o.agp, have_now = o.now_s >= 0;
	int64_t now_s = o.now_s;
	if (!tmpl_path || !msgs_path) {
		fprintf(stderr, "sixi-eval template render: --template and --messages are required\n");
		args_help(&render_spec, 0, stderr);
		code = 2;
		goto out;
	}
	size_t n = 0;
	src = jinja_source_load(tmpl_path, &n, &special, err, sizeof err);
	if (!src) {
		fprintf(stderr, "sixi-eval template: %s\n", err);
		goto out;
	}
	t = jinja_parse(src, n, err, sizeof err);
	if (!t) {
		fprintf(stderr, "sixi-eval template: %s: %s\n", tmpl_path, err);
		goto out;
	}
	cJSON *msgs = json_parse_file(msgs_path, err, sizeof err);
	if (!msgs) {
		fprintf(stderr, "sixi-eval template: %s\n", err);
		goto out;
	}
	if (cJSON_IsArray(msgs)) {
		cJSON_AddItemToObject(ctx, "messages", msgs);
	} else if (cJSON_IsObject(msgs)) {
		cJSON_Delete(ctx);
		ctx = msgs;
	} else {
		cJSON_Delete(msgs);
		fprintf(stderr, "sixi-eval template: %s: expected a JSON array of messages or an object of variables\n",
			msgs_path);
		goto out;
	}
	if (tools_path) {
		cJSON *tools = json_parse_file(tools_path, err, sizeof err);
		if (!tools) {
			fprintf(stderr, "sixi-eval template: %s\n", err);
			goto out;
		}
		if (!cJSON_IsArray(tools)) {
			cJSON_Delete(tools);
			fprintf(stderr, "sixi-eval template: %s: expected a JSON array of tool definitions\n", tools_path);
			goto out;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(ctx, "tools");
		cJSON_AddItemToObject(ctx, "tools", tools);
	}
	if (agp) {
		cJSON_DeleteItemFromObjectCaseSensitive(ctx, "add_generation_prompt");
		cJSON_AddTrueToObject(ctx, "add_generation_prompt");
	}
	/* bos/eos from a tokenizer_config.json fill in; --var values override anything */
	for (cJSON *c = special ? special->child : NULL; c; c = c->next)
		if (!cJSON_GetObjectItemCaseSensitive(ctx, c->string))
			cJSON_AddItemToObject(ctx, c->string, cJSON_Duplicate(c, true));
	for (cJSON *c = vars->child; c; c = c->next) {
		cJSON_DeleteItemFromObjectCaseSensitive(ctx, c->string);
		cJSON_AddItemToObject(ctx, c->string, cJSON_Duplicate(c, true));
	}
	int rc = have_now ? jinja_render_chat_at(t, ctx, now_s, &out, err, sizeof err)
			  : jinja_render_chat(t, ctx, &out, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "sixi-eval template: %s: %s\n", tmpl_path, err);
		goto out;
	}
	if (out.len && fwrite(out.data, 1, out.len, stdout) != out.len) {
		fprintf(stderr, "sixi-eval template: writing the output failed\n");
		goto out;
	}
	code = fflush(stdout) == 0 ? 0 : 1;
out:
	buf_finish(&out);
	jinja_destroy(t);
	free(src);
	cJSON_Delete(ctx);
	cJSON_Delete(vars);
	cJSON_Delete(special);
	return code;
}

int template_cmd_main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		args_help(&render_spec, 0, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "render"))
		return cmd_render(argc - 1, argv + 1);
	fprintf(stderr, "sixi-eval template: unknown action '%s' (expected: render)\n", argv[1]);
	return 2;
}
