/* test_model_trained — the trained default model (src/model/trained/sixi-small) and its draft:
 *  - written to GGUF by model_write_trained (BF16 matrices, the committed weights exactly),
 *    sixi's CPU forward pass gives transformers' float32 logits on the fixture's three
 *    prompts (tests/fixtures/model/sixi-small, recorded by train.py) to 1e-4 of each row's
 *    largest logit, and the same 48-token greedy continuation (up to <|im_end|>);
 *  - the greedy reply to the demo's add task is the expected Python function (decoded by the
 *    GGUF's own tokenizer), so the model has learnt something;
 *  - speculative decoding with the trained draft: text equal to plain greedy, acceptance
 *    rate >= 0.5 on the fixture's prompts (the draft is a model, not noise);
 *  - a directory whose vocab_size is not the tiny vocabulary's is refused with a message
 *    naming it, and nothing is written. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/spec.h"
#include "model/tiny.h"
#include "text/tokenizer.h"
#include "greedy.h"
#include "test.h"

#define FIX "tests/fixtures/model/sixi-small"
#define BIG "src/model/trained/sixi-small"
#define DRAFT "src/model/trained/sixi-small-draft"
#define MAXP 4
#define MAXT 256

struct ref {
	int n, vocab;
	char name[MAXP][32];
	int len[MAXP], n_greedy[MAXP];
	int32_t tok[MAXP][MAXT], greedy[MAXP][64];
	float *logits[MAXP];
};

static int load_ref(struct ref *r)
{
	char err[256];
	cJSON *j = json_parse_file(test_src_path(FIX "/reference.json"), err, sizeof(err));
	if (!j)
		return -1;
	int64_t v = 0;
	json_get_i64(j, "vocab", &v);
	r->vocab = (int)v;
	const cJSON *ps = cJSON_GetObjectItem(j, "prompts");
	r->n = cJSON_GetArraySize(ps);
	FILE *f = fopen(test_src_path(FIX "/logits.f32"), "rb");
	int rc = f && r->n > 0 && r->n <= MAXP && r->vocab > 0 ? 0 : -1;
	for (int s = 0; !rc && s < r->n; s++) {
		const cJSON *p = cJSON_GetArrayItem(ps, s);
		const cJSON *ids = cJSON_GetObjectItem(p, "ids"), *g = cJSON_GetObjectItem(p, "greedy");
		snprintf(r->name[s], sizeof r->name[s], "%s", cJSON_GetStringValue(cJSON_GetObjectItem(p, "name")));
		r->len[s] = cJSON_GetArraySize(ids);
		r->n_greedy[s] = cJSON_GetArraySize(g);
		if (r->len[s] > MAXT || r->n_greedy[s] > 64) {
			rc = -1;
			break;
		}
		for (int i = 0; i < r->len[s]; i++)
			r->tok[s][i] = cJSON_GetArrayItem(ids, i)->valueint;
		for (int i = 0; i < r->n_greedy[s]; i++)
			r->greedy[s][i] = cJSON_GetArrayItem(g, i)->valueint;
		size_t n = (size_t)r->len[s] * r->vocab;
		r->logits[s] = malloc(sizeof(float) * n);
		if (!r->logits[s] || fread(r->logits[s], sizeof(float), n, f) != n)
			rc = -1;
	}
	if (f)
		fclose(f);
	cJSON_Delete(j);
	return rc;
}

static struct model *load_written(const char *dir, const char *path, uint32_t type)
{
	char err[512];
	if (!CHECK_EQ_INT(model_write_trained(test_src_path(dir), path, type, err, sizeof(err)), 0)) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	struct model *m = model_load(path, 2, err, sizeof(err));
	if (!CHECK(m != NULL))
		fprintf(stderr, "%s\n", err);
	return m;
}

static void check_logits_and_greedy(struct model *m, const struct ref *r)
{
	CHECK_EQ_INT(model_get_config(m)->n_vocab, r->vocab);
	for (int s = 0; s < r->n; s++) {
		struct model_state *st = model_state_create(m, 1, MAXT + 80);
		float *out = malloc(sizeof(float) * r->len[s] * r->vocab);
		int32_t slots[MAXT] = { 0 };
		struct model_batch b = { r->len[s], r->tok[s], slots, NULL, NULL };
		CHECK_EQ_INT(model_forward(m, st, &b, out), 0);
		double e = greedy_rel_err(out, r->logits[s], r->len[s], r->vocab);
		printf("prompt %s (%d tokens): max relative logit error %.3g (bound 1e-4)\n", r->name[s], r->len[s], e);
		CHECK(e < 1e-4);
		free(out);
		model_state_destroy(st);
		int32_t g[64];
		CHECK_EQ_INT(greedy_reference(m, r->tok[s], r->len[s], r->n_greedy[s], g), 0);
		int same = 0;
		while (same < r->n_greedy[s] && g[same] == r->greedy[s][same])
			same++;
		printf("prompt %s: greedy equal to transformers' for %d of %d tokens\n", r->name[s], same, r->n_greedy[s]);
		CHECK_EQ_INT(same, r->n_greedy[s]);
	}
}

static void check_reply_text(struct model *m, const struct ref *r)
{
	char err[256];
	struct tokenizer *t = tok_load_gguf(model_gguf(m), err, sizeof(err));
	if (!CHECK(t != NULL))
		return;
	int32_t g[64];
	CHECK_EQ_INT(greedy_reference(m, r->tok[0], r->len[0], r->n_greedy[0], g), 0);
	char *text = NULL;
	size_t len = 0;
	CHECK_EQ_INT(tok_decode(t, g, (size_t)r->n_greedy[0], false, &text, &len), 0);
	printf("reply to %s: %s\n", r->name[0], text ? text : "(none)");
	CHECK_EQ_STR(text, "```python\ndef add(a, b):\n    return a + b\n```");
	free(text);
	tok_destroy(t);
}

static void check_spec(struct model *big, struct model *draft, const struct ref *r)
{
	char err[256];
	CHECK_EQ_INT(spec_check_draft(big, draft, err, sizeof(err)), 0);
	struct spec_opts o = { .draft_max = 4 };
	struct spec *sp = spec_create(big, draft, &o, err, sizeof(err));
	if (!CHECK(sp != NULL)) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	struct spec_stats st = { 0 };
	for (int s = 0; s < r->n; s++) {
		int n = r->n_greedy[s];
		int32_t out[64], plain[64];
		CHECK_EQ_INT(spec_generate(sp, r->tok[s], r->len[s], n, out, &st), 0);
		CHECK_EQ_INT(greedy_reference(big, r->tok[s], r->len[s], n, plain), 0);
		CHECK(memcmp(out, plain, sizeof(int32_t) * (size_t)n) == 0);
	}
	printf("speculation with the trained draft: %ld drafted, %ld accepted, rate %.3f, %.2f tokens a step\n",
	       st.drafted, st.accepted, spec_accept_rate(&st), spec_accept_len(&st));
	CHECK(spec_accept_rate(&st) >= 0.5);
	spec_free(sp);
}

static void check_refused(void)
{
	char path[] = "/tmp/sixi-test-trained-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	unlink(path);
	char err[512] = "";
	/* the transformers fixture of qwen35-tiny has 320 tokens, not the tiny vocabulary's 512 */
	CHECK(model_write_trained(test_src_path("tests/fixtures/model/qwen35-tiny"), path, GGUF_TENSOR_BF16, err,
				  sizeof(err)) != 0);
	printf("refused: %s\n", err);
	CHECK(strstr(err, "vocab_size is 320") != NULL);
	CHECK(access(path, F_OK) != 0);
	err[0] = 0;
	CHECK(model_write_trained("/nonexistent-dir", path, GGUF_TENSOR_BF16, err, sizeof(err)) != 0);
	CHECK(strstr(err, "/nonexistent-dir") != NULL);
	CHECK(access(path, F_OK) != 0);
}

int main(void)
{
	struct ref r;
	if (!CHECK_EQ_INT(load_ref(&r), 0))
		return test_done();
	char big_path[] = "/tmp/sixi-test-trained-XXXXXX", draft_path[] = "/tmp/sixi-test-trained-d-XXXXXX";
	close(mkstemp(big_path));
	close(mkstemp(draft_path));
	struct model *big = load_written(BIG, big_path, GGUF_TENSOR_BF16);
	struct model *draft = load_written(DRAFT, draft_path, GGUF_TENSOR_BF16);
	if (big) {
		printf("sixi-small: %d layers, hidden %d, vocab %d\n", model_get_config(big)->n_layer,
		       model_get_config(big)->n_embd, model_get_config(big)->n_vocab);
		check_logits_and_greedy(big, &r);
		check_reply_text(big, &r);
	}
	if (big && draft) {
		CHECK(model_get_config(draft)->n_embd < model_get_config(big)->n_embd);
		check_spec(big, draft, &r);
	}
	check_refused();
	model_free(draft);
	model_free(big);
	unlink(big_path);
	unlink(draft_path);
	for (int s = 0; s < r.n; s++)
		free(r.logits[s]);
	return test_done();
}
