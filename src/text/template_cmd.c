/* template_cmd — `sixi-eval template render`: argument parsing and file I/O
 * around src/text/jinja. Does no rendering of its own. */
#include "text/template_cmd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/buf.h"
#include "core/json.h"
#include "text/jinja.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sixi-eval template render --template FILE --messages FILE.json [--tools FILE.json]\n"
		"                                 [--var NAME=VALUE ...] [--add-generation-prompt] [--now SECONDS]\n"
		"  --template   a .jinja file or a Hugging Face tokenizer_config.json (its chat_template,\n"
		"               the one named \"default\" when it lists several; its bos/eos tokens become variables)\n"
		"  --messages   a JSON array of messages, or an object whose keys are all variables\n"
		"               (messages, tools, ...)\n"
		"  --tools      a JSON array of tool definitions\n"
		"  --var        one more variable; VALUE is read as JSON when it parses (true, 3, \"x\"),\n"
		"               else as a string (--var enable_thinking=false --var bos_token=<s>)\n"
		"  --add-generation-prompt  end with the assistant turn's opening\n"
		"  --now        render strftime_now() at this Unix time in UTC (default: the local clock)\n"
		"Prints the rendered prompt on stdout, byte for byte, with no newline added.\n");
}

static int set_var(cJSON *ctx, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) {
		snprintf(err, errlen, "--var %s: expected NAME=VALUE", kv);
		return -EINVAL;
	}
	char name[256];
	size_t nl = (size_t)(eq - kv);
	if (nl >= sizeof name) {
		snprintf(err, errlen, "--var: name longer than %zu bytes", sizeof name - 1);
		return -EINVAL;
	}
	memcpy(name, kv, nl);
	name[nl] = 0;
	char jerr[128];
	cJSON *v = json_parse_n(eq + 1, strlen(eq + 1), jerr, sizeof jerr);
	if (!v)
		v = cJSON_CreateString(eq + 1);
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(ctx, name);
	cJSON_AddItemToObject(ctx, name, v);
	return 0;
}

static int cmd_render(int argc, char **argv)
{
	const char *tmpl_path = NULL, *msgs_path = NULL, *tools_path = NULL;
	bool agp = false, have_now = false;
	int64_t now_s = 0;
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
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_val = i + 1 < argc;
		if (!strcmp(a, "--template") && has_val) {
			tmpl_path = argv[++i];
		} else if (!strcmp(a, "--messages") && has_val) {
			msgs_path = argv[++i];
		} else if (!strcmp(a, "--tools") && has_val) {
			tools_path = argv[++i];
		} else if (!strcmp(a, "--var") && has_val) {
			if (set_var(vars, argv[++i], err, sizeof err) != 0) {
				fprintf(stderr, "sixi-eval template: %s\n", err);
				code = 2;
				goto out;
			}
		} else if (!strcmp(a, "--add-generation-prompt")) {
			agp = true;
		} else if (!strcmp(a, "--now") && has_val) {
			if (args_i64("--now", argv[++i], 0, INT64_C(253402300799), &now_s, err, sizeof err) != 0) {
				fprintf(stderr, "sixi-eval template: %s\n", err);
				code = 2;
				goto out;
			}
			have_now = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			code = 0;
			goto out;
		} else {
			fprintf(stderr, "sixi-eval template render: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			code = 2;
			goto out;
		}
	}
	if (!tmpl_path || !msgs_path) {
		fprintf(stderr, "sixi-eval template render: --template and --messages are required\n");
		usage(stderr);
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
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "render"))
		return cmd_render(argc - 1, argv + 1);
	fprintf(stderr, "sixi-eval template: unknown action '%s' (expected: render)\n", argv[1]);
	return 2;
}
