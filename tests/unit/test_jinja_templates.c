/* Chat templates against jinja2: every template with an expected-output file in
 * tests/fixtures/templates/expected is rendered with every conversation of
 * tests/fixtures/templates/conversations.json and compared byte for byte (or,
 * where jinja2 raised, required to fail too). Templates come from
 * tests/fixtures/templates (always) and ../shared/data/chat-templates (skipped
 * with a message when that directory is absent). */
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>

#include "core/buf.h"
#include "core/hash.h"
#include "core/json.h"
#include "text/jinja.h"

/* strftime_now's instant in make_expected.py */
#define FIXED_NOW 1764547200

/* Templates known not to match, with the reason (also in README.md). */
static const char *const unsupported[] = {NULL};

static bool is_unsupported(const char *name)
{
	for (int i = 0; unsupported[i]; i++)
		if (!strcmp(unsupported[i], name))
			return true;
	return false;
}

static int verbose;
static int texts_identical, errors_reproduced; /* cases by kind of expected result */
static int templates_six_texts; /* templates with every case right and >= 6 rendered texts */

/* Returns the number of cases that matched; *cases gets the count tried. */
static int check_template(const char *dir, const char *file, const cJSON *convs, int *cases, int *missing)
{
	char path[8192], epath[4096], name[512], err[1024];
	snprintf(path, sizeof path, "%.4000s/%.255s", dir, file);
	snprintf(name, sizeof name, "%.*s", (int)(strlen(file) - 6), file);
	snprintf(epath, sizeof epath, "%s", test_src_path("tests/fixtures/templates/expected/"));
	strncat(epath, name, sizeof epath - strlen(epath) - 6);
	strcat(epath, ".json");
	cJSON *exp = json_parse_file(epath, err, sizeof err);
	if (!exp) {
		(*missing)++;
		printf("note: no expected outputs for %s\n", file);
		return 0;
	}
	size_t n = 0;
	char *src = jinja_source_load(path, &n, NULL, err, sizeof err);
	char hex[65];
	sha256_hex(src ? src : "", n, hex);
	const char *want_hex = json_get_str(exp, "template_sha256");
	int ok = 0;
	if (!src || !want_hex || strcmp(hex, want_hex) != 0) {
		printf("FAIL %s: template differs from the one the expected outputs were made from; rerun "
		       "tests/fixtures/templates/make_expected.py (command in its header)\n", file);
		CHECK(0);
		goto out;
	}
	struct jinja_template *t = jinja_parse(src, n, err, sizeof err);
	const cJSON *c;
	cJSON_ArrayForEach(c, convs)
	{
		const char *cname = json_get_str(c, "name");
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(exp, "cases"), cname);
		if (!want)
			continue;
		(*cases)++;
		const char *want_out = json_get_str(want, "out");
		cJSON *ctx = cJSON_CreateObject();
		cJSON_AddItemToObject(ctx, "messages", cJSON_Duplicate(cJSON_GetObjectItem(c, "messages"), true));
		const cJSON *tools = cJSON_GetObjectItem(c, "tools");
		if (tools)
			cJSON_AddItemToObject(ctx, "tools", cJSON_Duplicate(tools, true));
		cJSON_AddBoolToObject(ctx, "add_generation_prompt", cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")));
		cJSON_AddStringToObject(ctx, "bos_token", "<s>");
		cJSON_AddStringToObject(ctx, "eos_token", "</s>");
		const cJSON *v;
		cJSON_ArrayForEach(v, cJSON_GetObjectItem(c, "vars"))
			cJSON_AddItemToObject(ctx, v->string, cJSON_Duplicate(v, true));
		struct buf out;
		buf_init(&out);
		int rc = t ? jinja_render_chat_at(t, ctx, FIXED_NOW, &out, err, sizeof err) : -EINVAL;
		bool good;
		if (want_out)
			good = rc == 0 && out.len == strlen(want_out) && memcmp(out.data, want_out, out.len) == 0;
		else
			good = rc != 0;
		if (good) {
			ok++;
			if (want_out)
				texts_identical++;
			else
				errors_reproduced++;
		} else if (!is_unsupported(name) || verbose) {
			printf("FAIL %s / %s: %s\n", name, cname,
			       rc ? err : want_out ? "output differs" : "jinja2 raised an error, this render did not");
			if (verbose && rc == 0 && want_out) {
				size_t k = 0;
				while (k < out.len && want_out[k] == out.data[k])
					k++;
				printf("  first difference at byte %zu:\n  got:  %.80s\n  want: %.80s\n", k, out.data + k,
				       want_out + k);
			}
		}
		buf_finish(&out);
		cJSON_Delete(ctx);
	}
	jinja_destroy(t);
out:
	free(src);
	cJSON_Delete(exp);
	return ok;
}

static int check_dir(const char *dir, const cJSON *convs, int *templates_ok, int *templates, int *cases_ok,
		     int *cases)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	char names[256][256];
	int nn = 0;
	while ((e = readdir(d)) && nn < 256) {
		size_t l = strlen(e->d_name);
		if (l > 6 && !strcmp(e->d_name + l - 6, ".jinja") && l < 256)
			snprintf(names[nn++], 256, "%s", e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof names[0], (int (*)(const void *, const void *))strcmp);
	for (int i = 0; i < nn; i++) {
		int tried = 0, missing = 0, texts_before = texts_identical;
		int ok = check_template(dir, names[i], convs, &tried, &missing);
		if (ok == tried && texts_identical - texts_before >= 6)
			templates_six_texts++;
		if (missing)
			continue;
		char stem[256];
		snprintf(stem, sizeof stem, "%.*s", (int)(strlen(names[i]) - 6), names[i]);
		(*templates)++;
		*cases += tried;
		*cases_ok += ok;
		if (ok == tried && tried > 0)
			(*templates_ok)++;
		else if (!is_unsupported(stem))
			CHECK(ok == tried && tried > 0);
	}
	return 0;
}

int main(void)
{
	char err[512];
	verbose = getenv("JINJA_VERBOSE") != NULL;
	cJSON *convs = json_parse_file(test_src_path("tests/fixtures/templates/conversations.json"), err, sizeof err);
	CHECK(convs != NULL);
	if (!convs)
		return test_done();
	int tok = 0, tn = 0, cok = 0, cn = 0;
	char pdir[4096]; /* test_src_path's buffer is reused below */
	snprintf(pdir, sizeof pdir, "%s", test_src_path("tests/fixtures/templates"));
	CHECK(check_dir(pdir, convs, &tok, &tn, &cok, &cn) == 0);
	printf("project templates: %d/%d templates, %d/%d cases as jinja2 (%d texts byte-identical, %d errors "
	       "raised where jinja2 raises)\n", tok, tn, cok, cn, texts_identical, errors_reproduced);
	texts_identical = errors_reproduced = templates_six_texts = 0;
	CHECK(tn >= 3);
	int sok = 0, sn = 0, scok = 0, scn = 0;
	const char *shared = getenv("SIXI_CHAT_TEMPLATES");
	char sdir[4096];
	snprintf(sdir, sizeof sdir, "%s", shared ? shared : test_src_path("../shared/data/chat-templates"));
	if (check_dir(sdir, convs, &sok, &sn, &scok, &scn) != 0) {
		printf("SKIP part: %s is absent, the shared chat templates were not checked\n", sdir);
	} else {
		printf("shared templates: %d/%d templates, %d/%d cases as jinja2 (%d texts byte-identical, %d errors "
		       "raised where jinja2 raises)\n", sok, sn, scok, scn, texts_identical, errors_reproduced);
		printf("shared templates with every case right and at least 6 byte-identical texts: %d\n",
		       templates_six_texts);
		CHECK(templates_six_texts >= 20);
	}
	cJSON_Delete(convs);
	return test_done();
}
