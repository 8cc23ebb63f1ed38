/* test_spec_draft — the server's draft model re-synchronises with each sequence's history by
 * itself: over many steps where a random number of its drafts is kept and a random token
 * follows (as a verification would), its drafts always equal greedy decoding of the draft
 * model from scratch on the same history, for two slots drafted in the same calls, including
 * a history that diverges further back than the kept rows (start over), and a request over
 * the draft width is refused. A prompt fed beforehand in chunks (spec_draft_feed, as the target
 * runs it) gives the same drafts; rows that do not continue a slot, or are kept, are skipped. (A draft of another vocabulary: test_spec.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/model.h"
#include "model/tiny.h"
#include "server/spec_draft.h"
#include "greedy.h"
#include "test.h"

#define K 4
#define STEPS 30

static uint64_t rs = 7;
static int rnd(int n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (int)((rs >> 11) % (uint64_t)n);
}

int main(void)
{
	char dir[] = "/tmp/sixi-test-draft-XXXXXX", p1[128], p2[128], err[512];
	if (!mkdtemp(dir))
		return test_skip("cannot make a temporary directory");
	snprintf(p1, sizeof(p1), "%s/target.gguf", dir);
	snprintf(p2, sizeof(p2), "%s/draft.gguf", dir);
	CHECK_EQ_INT(model_write_tiny(p1, err, sizeof(err)), 0);
	struct model *t = model_load(p1, 1, err, sizeof(err));
	if (!CHECK(t != NULL))
		return test_done();
	struct model_config c = *model_get_config(t);
	c.n_layer = 2;
	c.full_attn_interval = 2;
	CHECK_EQ_INT(model_write_random(p2, &c, GGUF_TENSOR_F32, 99, err, sizeof(err)), 0);
	struct model *ref = model_load(p2, 1, err, sizeof(err));
	struct spec_draft *d = spec_draft_open(p2, t, 3, 400, K, 1, err, sizeof(err));
	if (!CHECK(d != NULL && ref != NULL)) {
		printf("%s\n", err);
		return test_done();
	}
	int V = c.n_vocab;
	int32_t hist[2][400], out[2][K], want[K];
	int n[2] = { 9, 14 };
	for (int q = 0; q < 2; q++)
		for (int i = 0; i < n[q]; i++)
			hist[q][i] = rnd(V);
	int bad = 0, restarts = 0;
	for (int step = 0; step < STEPS; step++) {
		struct spec_draft_req r[2];
		for (int q = 0; q < 2; q++)
			r[q] = (struct spec_draft_req){ .slot = q == 0 ? 0 : 2, .hist = hist[q], .n_hist = n[q],
							.k = 1 + rnd(K), .out = out[q] };
		CHECK_EQ_INT(spec_draft_run(d, r, 2), 0);
		for (int q = 0; q < 2; q++) {
			CHECK_EQ_INT(r[q].n_out, r[q].k);
			CHECK(greedy_reference(ref, hist[q], n[q], r[q].k, want) == 0);
			if (memcmp(want, out[q], sizeof(int32_t) * (size_t)r[q].k) != 0)
				bad++;
			/* keep a random prefix of the drafts, then a token of "the target's" */
			int a = rnd(r[q].k + 1);
			memcpy(hist[q] + n[q], out[q], sizeof(int32_t) * (size_t)a);
			n[q] += a;
			hist[q][n[q]++] = rnd(V);
		}
		if (step == STEPS / 2) { /* the history changes further back than the kept rows */
			hist[0][3] = (hist[0][3] + 1) % V;
			restarts++;
		}
	}
	printf("%d steps, two slots, drafts equal to greedy from scratch: %s (histories %d and %d ids)\n", STEPS,
	       bad ? "NO" : "yes", n[0], n[1]);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(restarts, 1);
	/* a prompt fed in chunks beside the target, as real.c does: slot 1, which is fresh */
	{
		int32_t pr[40], tk[40], sl[40], ps[40];
		uint8_t kp[40] = { 0 };
		for (int i = 0; i < 40; i++)
			pr[i] = rnd(V);
		for (int i = 0; i < 40; i++) {
			tk[i] = pr[i];
			sl[i] = 1;
			ps[i] = i;
		}
		CHECK_EQ_INT(spec_draft_feed(d, tk, sl, ps, NULL, 25), 0);
		CHECK_EQ_INT(spec_draft_feed(d, tk + 30, sl, ps + 30, NULL, 5), 0); /* a gap: skipped */
		kp[25] = 1;
		CHECK_EQ_INT(spec_draft_feed(d, tk + 25, sl, ps + 25, kp + 25, 5), 0); /* kept: skipped */
		CHECK_EQ_INT(spec_draft_feed(d, tk + 25, sl, ps + 25, NULL, 14), 0);
		struct spec_draft_req r1 = { .slot = 1, .hist = pr, .n_hist = 40, .k = K, .out = out[0] };
		CHECK_EQ_INT(spec_draft_run(d, &r1, 1), 0);
		CHECK_EQ_INT(r1.n_out, K);
		CHECK(greedy_reference(ref, pr, 40, K, want) == 0);
		CHECK(memcmp(want, out[0], sizeof(int32_t) * K) == 0);
		printf("a prompt fed in chunks beforehand: drafts equal to greedy from scratch: %s\n",
		       memcmp(want, out[0], sizeof(int32_t) * K) == 0 ? "yes" : "NO");
	}
	/* bad requests */
	struct spec_draft_req big = { .slot = 0, .hist = hist[0], .n_hist = n[0], .k = K + 1, .out = out[0] };
	CHECK_EQ_INT(spec_draft_run(d, &big, 1), -EINVAL);
	spec_draft_free(d);

	model_free(ref);
	model_free(t);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	return test_done();
}
