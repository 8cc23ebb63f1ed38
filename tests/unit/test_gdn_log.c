/* test_gdn_log — rollback of the model's state by the log and by the snapshot ring, against
 * recomputing from scratch. Two models (the tiny default and a small random config with
 * other head sizes and Q8_0 matrices); for each, a random sequence of verify passes with
 * random accept/reject decisions (reject-all, accept-all and two rollbacks in a row forced
 * in), passes that overflow the log (fold), and two slots in one pass. After every step the
 * logits of every verified row and the GDN states (log mode folded on a copy) must be equal
 * bit for bit in log mode, snapshot mode and a plain pool that recomputes the kept history
 * one row at a time. Also: the memory arithmetic at the 27B shape (log >= 50x smaller than a
 * snapshot ring of the same depth), pool sizes match it, and bad calls are refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gdn_log.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/tiny.h"
#include "test.h"

#define CAP 6
#define PROMPT 11
#define STEPS 40
#define MAXH (PROMPT + STEPS * CAP + 8)

static uint64_t rs = 0x1234567887654321ull;
static int rnd(int n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (int)((rs >> 11) % (uint64_t)n);
}

static int fwd(struct model *m, struct model_state *s, int spec, int slot, const int32_t *tok, int n, float *logits)
{
	int32_t slots[64];
	for (int i = 0; i < n; i++)
		slots[i] = slot;
	struct model_batch b = { .n_rows = n, .tokens = tok, .slots = slots };
	return spec ? model_forward_spec(m, s, &b, logits) : model_forward(m, s, &b, logits);
}

/* Plain pool slot 0 <- prompt prefill then hist one row at a time; logits of the last row. */
static int recompute(struct model *m, struct model_state *ref, const int32_t *prompt, const int32_t *hist, int nh,
		     float *logits)
{
	model_state_slot_reset(ref, 0);
	int rc = fwd(m, ref, 0, 0, prompt, PROMPT, NULL);
	for (int i = 0; !rc && i < nh; i++)
		rc = fwd(m, ref, 0, 0, hist + i, 1, logits);
	return rc;
}

static int states_equal(struct model_state *a, int sa, struct model_state *b, int sb, int n_gdn)
{
	for (int i = 0; i < n_gdn; i++) {
		size_t na = 0, nb = 0;
		const float *x = model_state_slot_gdn(a, sa, i, &na), *y = model_state_slot_gdn(b, sb, i, &nb);
		if (!x || !y || na != nb || memcmp(x, y, na * sizeof(float)) != 0)
			return 0;
	}
	return model_state_slot_pos(a, sa) == model_state_slot_pos(b, sb);
}

static int n_gdn_of(const struct model *m)
{
	int n = 0;
	for (int i = 0; i < model_get_config(m)->n_layer; i++)
		n += !model_layer_is_attention(m, i);
	return n;
}

static void differential(struct model *m, const char *name)
{
	const struct model_config *c = model_get_config(m);
	int V = c->n_vocab, ng = n_gdn_of(m);
	int n_ctx = MAXH + CAP + 2;
	struct model_state *lg = model_state_create(m, 2, n_ctx), *sn = model_state_create(m, 2, n_ctx),
			   *ref = model_state_create(m, 1, n_ctx);
	CHECK(lg && sn && ref);
	CHECK_EQ_INT(model_state_set_rollback(lg, MODEL_ROLLBACK_LOG, CAP), 0);
	CHECK_EQ_INT(model_state_set_rollback(sn, MODEL_ROLLBACK_SNAPSHOT, CAP), 0);
	/* pool sizes follow the arithmetic */
	struct gdn_log_shape sh = { ng, c->ssm_n_k_heads, c->ssm_n_v_heads, c->ssm_head_dim, c->ssm_head_dim,
				    c->ssm_conv_kernel };
	CHECK_EQ_INT(model_state_rollback_bytes(lg), 2 * gdn_log_bytes(&sh, CAP));
	CHECK_EQ_INT(model_state_rollback_bytes(sn), 2 * gdn_log_snapshot_bytes(&sh, CAP + 1));
	struct model_state_memory mm;
	model_state_memory(lg, &mm);
	CHECK_EQ_INT(mm.rollback, 2 * gdn_log_bytes(&sh, CAP));
	CHECK_EQ_INT(mm.snapshot_ring, model_state_rollback_bytes(sn));
	CHECK_EQ_INT(mm.gdn_state + mm.conv, 2 * gdn_log_state_bytes(&sh));
	CHECK_EQ_INT(mm.kv + mm.gdn_state + mm.conv, 2 * model_state_slot_bytes(lg));

	int32_t prompt[PROMPT], hist[MAXH], rows[CAP + 1];
	for (int i = 0; i < PROMPT; i++)
		prompt[i] = rnd(V);
	float *l1 = malloc(sizeof(float) * (size_t)V * (CAP + 1)), *l2 = malloc(sizeof(float) * (size_t)V * (CAP + 1)),
	      *l3 = malloc(sizeof(float) * (size_t)V);
	CHECK_EQ_INT(fwd(m, lg, 0, 0, prompt, PROMPT, NULL), 0);
	CHECK_EQ_INT(fwd(m, sn, 0, 0, prompt, PROMPT, NULL), 0);
	int nh = 0, n_rb2 = 0, n_rej = 0, n_acc = 0, n_fold = 0, bad_logits = 0, bad_state = 0;
	for (int step = 0; step < STEPS; step++) {
		int T = 1 + rnd(CAP);
		for (int i = 0; i < T; i++)
			rows[i] = rnd(V);
		int kept_before = model_state_slot_kept(lg, 0);
		if (kept_before + T > CAP)
			n_fold++;
		CHECK_EQ_INT(fwd(m, lg, 1, 0, rows, T, l1), 0);
		CHECK_EQ_INT(fwd(m, sn, 1, 0, rows, T, l2), 0);
		/* every verified row's logits: log == snapshot == recompute */
		for (int i = 0; i < T; i++) {
			memcpy(hist + nh, rows, sizeof(int32_t) * (size_t)(i + 1));
			CHECK_EQ_INT(recompute(m, ref, prompt, hist, nh + i + 1, l3), 0);
			if (memcmp(l1 + (size_t)i * V, l2 + (size_t)i * V, sizeof(float) * (size_t)V) ||
			    memcmp(l1 + (size_t)i * V, l3, sizeof(float) * (size_t)V))
				bad_logits++;
		}
		int a = step % 5 == 1 ? 0 : step % 5 == 2 ? T : rnd(T + 1);
		n_rej += a == 0;
		n_acc += a == T;
		CHECK_EQ_INT(model_state_slot_rollback(lg, 0, T - a), 0);
		CHECK_EQ_INT(model_state_slot_rollback(sn, 0, T - a), 0);
		nh += a;
		if (step % 4 == 3 && model_state_slot_kept(lg, 0) > 0) { /* a second rollback in a row */
			int kept = model_state_slot_kept(lg, 0);
			CHECK_EQ_INT(model_state_slot_kept(sn, 0), kept);
			int r = 1 + rnd(kept);
			if (r > nh)
				r = nh;
			CHECK_EQ_INT(model_state_slot_rollback(lg, 0, r), 0);
			CHECK_EQ_INT(model_state_slot_rollback(sn, 0, r), 0);
			nh -= r;
			n_rb2++;
		}
		CHECK_EQ_INT(recompute(m, ref, prompt, hist, nh, l3), 0);
		CHECK_EQ_INT(model_state_slot_copy(lg, 1, 0), 0);
		CHECK_EQ_INT(model_commit(m, lg, 1), 0);
		if (!states_equal(lg, 1, ref, 0, ng) || !states_equal(sn, 0, ref, 0, ng))
			bad_state++;
	}
	printf("%s: %d steps, %d reject-all, %d accept-all, %d double rollbacks, %d folds, history %d rows\n", name,
	       STEPS, n_rej, n_acc, n_rb2, n_fold, nh);
	CHECK_EQ_INT(bad_logits, 0);
	CHECK_EQ_INT(bad_state, 0);
	CHECK(n_rej > 0 && n_acc > 0 && n_rb2 > 0 && n_fold > 0);

	/* bad calls: a segment over the capacity, rolling back more than is kept; nothing changes */
	int pos = model_state_slot_pos(lg, 0), kept = model_state_slot_kept(lg, 0);
	int32_t big[CAP + 1] = { 0 };
	CHECK_EQ_INT(fwd(m, lg, 1, 0, big, CAP + 1, NULL), -E2BIG);
	CHECK_EQ_INT(model_state_slot_pos(lg, 0), pos);
	CHECK_EQ_INT(model_state_slot_rollback(lg, 0, kept + 1), -ERANGE);
	CHECK_EQ_INT(model_state_slot_pos(lg, 0), pos);
	CHECK_EQ_INT(fwd(m, ref, 1, 0, big, 1, NULL), -EINVAL); /* no rollback on that pool */
	CHECK_EQ_INT(model_state_set_rollback(lg, MODEL_ROLLBACK_SNAPSHOT, CAP), kept > 0 ? -EBUSY : 0);

	/* two slots in one spec pass == each alone (slot 1 branches off slot 0) */
	struct model_state *two = model_state_create(m, 2, n_ctx);
	CHECK_EQ_INT(model_state_set_rollback(two, MODEL_ROLLBACK_LOG, CAP), 0);
	CHECK_EQ_INT(fwd(m, two, 0, 0, prompt, PROMPT, NULL), 0);
	int32_t r2[4] = { rnd(V), rnd(V), rnd(V), rnd(V) };
	CHECK_EQ_INT(fwd(m, two, 1, 0, r2, 2, NULL), 0);
	CHECK_EQ_INT(model_state_slot_copy(two, 1, 0), 0);
	int32_t bt[5] = { r2[2], r2[3], r2[3], r2[2], r2[0] }, bs[5] = { 0, 0, 1, 1, 1 };
	float *lb = malloc(sizeof(float) * (size_t)V * 5);
	struct model_batch b = { .n_rows = 5, .tokens = bt, .slots = bs };
	CHECK_EQ_INT(model_forward_spec(m, two, &b, lb), 0);
	CHECK_EQ_INT(model_state_slot_rollback(two, 1, 3), 0);
	CHECK_EQ_INT(model_state_slot_rollback(two, 0, 3), 0);
	CHECK_EQ_INT(model_state_slot_rollback(two, 0, 1), 0); /* all of slot 0's kept rows... */
	CHECK_EQ_INT(model_state_slot_rollback(two, 0, 1), -ERANGE); /* ...and no more */
	hist[0] = r2[0], hist[1] = r2[1], hist[2] = r2[2];
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 3, l3), 0);
	CHECK(memcmp(lb, l3, sizeof(float) * (size_t)V) == 0);
	hist[2] = r2[3], hist[3] = r2[2];
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 4, l3), 0);
	CHECK(memcmp(lb + (size_t)3 * V, l3, sizeof(float) * (size_t)V) == 0);
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 2, l3), 0);
	CHECK_EQ_INT(model_commit(m, two, 1), 0);
	CHECK(states_equal(two, 1, ref, 0, ng));
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 0, l3), 0);
	CHECK_EQ_INT(model_commit(m, two, 0), 0);
	CHECK(states_equal(two, 0, ref, 0, ng));
	/* one pass mixing a kept slot and a plain prefill (model_batch.keep) */
	CHECK_EQ_INT(model_state_slot_reset(two, 1), 0);
	int32_t mt[PROMPT + 2], ms[PROMPT + 2];
	uint8_t mk[PROMPT + 2];
	mt[0] = r2[1], mt[1] = r2[0], ms[0] = ms[1] = 0, mk[0] = mk[1] = 1;
	for (int i = 0; i < PROMPT; i++)
		mt[2 + i] = prompt[i], ms[2 + i] = 1, mk[2 + i] = 0;
	float *lm = malloc(sizeof(float) * (size_t)V * (PROMPT + 2));
	struct model_batch mb = { .n_rows = PROMPT + 2, .tokens = mt, .slots = ms };
	CHECK_EQ_INT(model_forward_keep(m, two, &mb, mk, lm), 0);
	CHECK_EQ_INT(model_state_slot_kept(two, 0), 2);
	CHECK_EQ_INT(model_state_slot_kept(two, 1), 0);
	hist[0] = r2[1], hist[1] = r2[0];
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 2, l3), 0);
	CHECK(memcmp(lm + (size_t)V, l3, sizeof(float) * (size_t)V) == 0);
	CHECK_EQ_INT(model_state_slot_rollback(two, 0, 1), 0);
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 1, l3), 0);
	CHECK_EQ_INT(model_commit(m, two, 0), 0);
	CHECK(states_equal(two, 0, ref, 0, ng));
	CHECK_EQ_INT(recompute(m, ref, prompt, hist, 0, l3), 0);
	CHECK(states_equal(two, 1, ref, 0, ng));
	free(lm);
	free(lb);
	model_state_destroy(two);

	free(l1);
	free(l2);
	free(l3);
	model_state_destroy(lg);
	model_state_destroy(sn);
	model_state_destroy(ref);
}

static void arithmetic_27b(void)
{
	/* the 27B hybrid's GDN shape: 48 GDN layers, H_k 16, H_v 48, d_k = d_v = 128, conv 4 */
	struct gdn_log_shape sh = { 48, 16, 48, 128, 128, 4 };
	CHECK_EQ_INT(gdn_log_conv_dim(&sh), 2 * 16 * 128 + 48 * 128);
	CHECK_EQ_INT(gdn_log_row_floats(&sh), 10240 + 96);
	CHECK_EQ_INT(gdn_log_state_floats(&sh), 48 * 128 * 128 + 3 * 10240);
	CHECK_EQ_INT(gdn_log_state_bytes(&sh), 48ull * 4 * (48 * 128 * 128 + 3 * 10240));
	for (int rows = 1; rows <= 17; rows++) {
		double ratio = (double)gdn_log_snapshot_bytes(&sh, rows) / (double)gdn_log_bytes(&sh, rows);
		if (!CHECK(ratio >= 50.0))
			printf("rows %d: ratio %.1f\n", rows, ratio);
	}
	printf("27B shape: state %.1f MiB/seq, log row %.2f MiB/seq, snapshot/log %.1fx\n",
	       gdn_log_state_bytes(&sh) / 1048576.0, gdn_log_bytes(&sh, 1) / 1048576.0,
	       (double)gdn_log_snapshot_bytes(&sh, 1) / (double)gdn_log_bytes(&sh, 1));
}

int main(void)
{
	arithmetic_27b();
	char dir[] = "/tmp/sixi-test-gdnlog-XXXXXX", p1[128], p2[128], err[512];
	if (!mkdtemp(dir))
		return test_skip("cannot make a temporary directory");
	snprintf(p1, sizeof(p1), "%s/tiny.gguf", dir);
	snprintf(p2, sizeof(p2), "%s/small.gguf", dir);
	if (!CHECK_EQ_INT(model_write_tiny(p1, err, sizeof(err)), 0))
		return test_done();
	struct model *m = model_load(p1, 2, err, sizeof(err));
	CHECK(m != NULL);
	if (m) {
		differential(m, "tiny");
		/* a second config: other head sizes, conv width 3, attention every 3rd layer, Q8_0 */
		struct model_config c = *model_get_config(m);
		c.n_layer = 3;
		c.full_attn_interval = 3;
		c.n_embd = 64;
		c.n_ff = 96;
		c.ssm_n_k_heads = 1;
		c.ssm_n_v_heads = 3;
		c.ssm_head_dim = 16;
		c.ssm_conv_kernel = 3;
		c.n_head = 2;
		c.n_head_kv = 1;
		c.head_dim = 32;
		model_free(m);
		if (CHECK_EQ_INT(model_write_random(p2, &c, GGUF_TENSOR_Q8_0, 77, err, sizeof(err)), 0)) {
			m = model_load(p2, 1, err, sizeof(err));
			if (CHECK(m != NULL)) {
				differential(m, "small");
				model_free(m);
			} else {
				fprintf(stderr, "%s\n", err);
			}
		}
	}
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	return test_done();
}
