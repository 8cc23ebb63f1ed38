/* test_spec — speculative decoding on the tiny model: greedy text over 512 tokens with n-gram
 * prompt lookup (log and snapshot rollback) and with a draft model of the same vocabulary
 * (another random model) equals plain one-token-at-a-time greedy decoding, token for token;
 * the counters add up. The n-gram drafter finds the latest earlier continuation. Refused:
 * a draft width over the log's capacity, a draft model with another vocabulary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/model.h"
#include "model/spec.h"
#include "model/tiny.h"
#include "greedy.h"
#include "test.h"

#define N_GEN 512

/* Tensors of a GGUF, with the vocabulary cut by one row (another vocabulary's size). */
static const struct model_tensor *find_cut(void *ctx, const char *name)
{
	static struct model_tensor t;
	const struct gguf_tensor *g = gguf_tensor_find(ctx, name);
	if (!g)
		return NULL;
	t = (struct model_tensor){ g->name, g->n_dims, { g->ne[0], g->ne[1], g->ne[2], g->ne[3] }, g->type, g->data,
				   g->n_bytes };
	if (!strcmp(name, "token_embd.weight") || !strcmp(name, "output.weight")) {
		t.n_bytes -= g->n_bytes / g->ne[1];
		t.ne[1]--;
	}
	return &t;
}

static int same(const int32_t *a, const int32_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i]) {
			printf("first difference at token %d: %d vs %d\n", i, a[i], b[i]);
			return 0;
		}
	return 1;
}

int main(void)
{
	/* n-gram lookup */
	int32_t h[] = { 5, 6, 7, 8, 1, 5, 6, 9, 2, 5, 6 }, d[8];
	CHECK_EQ_INT(spec_ngram_draft(h, 11, 1, 3, 4, d), 4); /* "2 5 6" is new; "5 6" last at 5: 9 2 5 6 */
	CHECK(d[0] == 9 && d[1] == 2 && d[2] == 5 && d[3] == 6);
	CHECK_EQ_INT(spec_ngram_draft(h, 11, 1, 3, 2, d), 2);
	int32_t h2[] = { 1, 2, 3, 4 };
	CHECK_EQ_INT(spec_ngram_draft(h2, 4, 1, 3, 4, d), 0);
	int32_t h3[] = { 4, 4 };
	CHECK_EQ_INT(spec_ngram_draft(h3, 2, 1, 3, 4, d), 1);

	char dir[] = "/tmp/sixi-test-spec-XXXXXX", p1[128], p2[128], err[512];
	if (!mkdtemp(dir))
		return test_skip("cannot make a temporary directory");
	snprintf(p1, sizeof(p1), "%s/target.gguf", dir);
	snprintf(p2, sizeof(p2), "%s/draft.gguf", dir);
	if (!CHECK_EQ_INT(model_write_tiny(p1, err, sizeof(err)), 0))
		return test_done();
	struct model *t = model_load(p1, 2, err, sizeof(err));
	if (!CHECK(t != NULL))
		return test_done();
	struct model_config dc = *model_get_config(t);
	dc.n_layer = 2;
	dc.full_attn_interval = 2;
	CHECK_EQ_INT(model_write_random(p2, &dc, GGUF_TENSOR_F32, 4242, err, sizeof(err)), 0);
	struct model *dm = model_load(p2, 2, err, sizeof(err));
	CHECK(dm != NULL);
	struct model *self = model_load(p1, 2, err, sizeof(err)); /* the target as its own draft */
	CHECK(self != NULL);

	int V = model_get_config(t)->n_vocab;
	int32_t prompt[24];
	for (int i = 0; i < 24; i++)
		prompt[i] = (int32_t)((i * 37 + 11) % V);
	int32_t ref[N_GEN], got[N_GEN];
	CHECK_EQ_INT(greedy_reference(t, prompt, 24, N_GEN, ref), 0);

	struct {
		const char *name;
		struct model *draft;
		enum model_rollback rb;
		int width, log_rows;
	} runs[] = {
		{ "ngram, log, width 4", NULL, MODEL_ROLLBACK_LOG, 4, 0 },
		{ "ngram, log, width 8, log 12", NULL, MODEL_ROLLBACK_LOG, 8, 12 },
		{ "ngram, snapshot, width 4", NULL, MODEL_ROLLBACK_SNAPSHOT, 4, 0 },
		{ "draft model, log, width 3", dm, MODEL_ROLLBACK_LOG, 3, 8 },
		{ "draft model, snapshot, width 5", dm, MODEL_ROLLBACK_SNAPSHOT, 5, 0 },
		{ "self-draft, log, width 6", self, MODEL_ROLLBACK_LOG, 6, 0 },
	};
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		if (runs[r].draft == NULL && r >= 3)
			continue;
		struct spec_opts o = { .draft_max = runs[r].width, .log_rows = runs[r].log_rows, .rollback = runs[r].rb };
		struct spec *sp = spec_create(t, runs[r].draft, &o, err, sizeof(err));
		if (!CHECK(sp != NULL)) {
			printf("%s\n", err);
			continue;
		}
		struct spec_stats st = { 0 };
		memset(got, 0xff, sizeof(got));
		CHECK_EQ_INT(spec_generate(sp, prompt, 24, N_GEN, got, &st), 0);
		CHECK(same(got, ref, N_GEN));
		CHECK_EQ_INT(st.generated, N_GEN);
		CHECK(st.accepted <= st.drafted && st.steps == st.generated - st.accepted);
		printf("%-32s steps %ld drafted %ld accepted %ld accept_len %.2f accept_rate %.2f\n", runs[r].name,
		       st.steps, st.drafted, st.accepted, spec_accept_len(&st), spec_accept_rate(&st));
		if (runs[r].draft == NULL)
			CHECK(st.accepted > 0); /* greedy text of a random model repeats: lookup must hit */
		if (runs[r].draft == self)
			CHECK(st.accepted == st.drafted && st.steps < N_GEN / 6 + 2); /* every draft is right */
		spec_free(sp);
	}

	/* refusals */
	struct spec_opts wide = { .draft_max = 8, .log_rows = 6 };
	err[0] = 0;
	CHECK(spec_create(t, NULL, &wide, err, sizeof(err)) == NULL);
	printf("refused: %s\n", err);
	CHECK(strstr(err, "draft width 8") && strstr(err, "holds 6"));
	struct spec_opts zero = { .draft_max = 0 };
	CHECK(spec_create(t, NULL, &zero, err, sizeof(err)) == NULL);
	struct gguf *g = gguf_open(p1, err, sizeof(err));
	CHECK(g != NULL);
	struct model_config cut = *model_get_config(t);
	cut.n_vocab--;
	struct model *other = g ? model_create(&cut, find_cut, g, "cut", 1, err, sizeof(err)) : NULL;
	if (CHECK(other != NULL)) {
		struct spec_opts ok = { .draft_max = 4 };
		err[0] = 0;
		CHECK(spec_create(t, other, &ok, err, sizeof(err)) == NULL);
		printf("refused: %s\n", err);
		CHECK(strstr(err, "vocabulary") != NULL);
		model_free(other);
	} else {
		printf("%s\n", err);
	}
	gguf_close(g);
	model_free(dm);
	model_free(self);
	model_free(t);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	return test_done();
}
