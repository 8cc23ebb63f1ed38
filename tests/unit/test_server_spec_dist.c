/* test_server_spec_dist — speculative decoding leaves a sampled request's output distribution
 * unchanged, on the tiny model through the scheduler. For a fixed prompt and N seeds, the
 * first generated tokens are sampled with speculation off and on (prompt lookup on a
 * repetitive prompt with a logit bias towards its words, so that drafts happen; the model
 * drafting for itself, its drafts sampled from q == p and so always kept; and the same with a
 * logit bias that only the target sees, so q != p and drafts are kept or rejected by
 * min(1, p/q)),
 * and the empirical distributions of the tokens at positions 1-3 (position 0 comes from the
 * prompt's row, before any draft) are compared by a chi-square test of homogeneity: every
 * p-value must exceed 1e-3. Seeds are fixed, so the outcome is reproducible, not flaky. Also
 * checks that drafts were both kept and rejected, and that a seed repeats its tokens.
 * Power: a rejection step that drew from p without removing a deterministic draft gives
 * p < 1e-4 at position 1 of the prompt-lookup arm; one that drew from p instead of
 * normalize(max(0, p - q)) gives p < 1e-4 at positions 1-3 of the biased arm (and the
 * analytic test in test_server_spec_sample fails for both). */
#include "test.h"
#include "server/engine.h"
#include "server/metrics.h"
#include "server/real.h"
#include "server/scheduler.h"
#include "model/tiny.h"

#include <gsl/gsl_cdf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_SEQ 1000
#define N_TOK 4

static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
static unsigned long wakes;

static void on_output(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wake_lock);
	wakes++;
	pthread_cond_signal(&wake_cv);
	pthread_mutex_unlock(&wake_lock);
}

struct arm {
	int32_t tok[N_SEQ][N_TOK];
	int64_t drafted, accepted;
};

static const int32_t *bias_ids;
static const float *bias;
static size_t n_bias;

static int run(struct engine *e, int draft_max, const int32_t *prompt, size_t n_prompt,
	       const struct sampler_params *sp, uint64_t seed0, struct arm *out)
{
	clock_t t0 = clock();
	struct sched_config c;
	sched_config_default(&c);
	c.spec_draft_max = draft_max;
	c.straggler_wait = false;
	struct metrics m;
	metrics_init(&m);
	struct sched *s = sched_create(e, &c, &m, on_output, NULL);
	if (!s)
		return -1;
	static struct sched_seq *q[N_SEQ];
	int rc = 0;
	for (int i = 0; i < N_SEQ && rc == 0; i++) {
		struct sched_seq_params p = { .prompt = prompt, .n_prompt = n_prompt, .max_tokens = N_TOK,
					      .sampling = *sp, .seed = seed0 + (uint64_t)i, .ignore_eos = true,
					      .bias_ids = bias_ids, .bias = bias, .n_bias = n_bias };
		q[i] = sched_submit(s, &p);
		if (!q[i])
			rc = -1;
	}
	out->drafted = out->accepted = 0;
	for (int i = 0; i < N_SEQ && rc == 0; i++) {
		struct sched_status st;
		for (int waits = 0;; waits++) {
			pthread_mutex_lock(&wake_lock);
			unsigned long seen = wakes;
			pthread_mutex_unlock(&wake_lock);
			if (sched_seq_take(s, q[i], NULL, &st) != 0 || waits > 100000) {
				rc = -1;
				break;
			}
			if (st.finish != SCHED_RUNNING)
				break;
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += 50000000;
			if (dl.tv_nsec >= 1000000000) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000;
			}
			pthread_mutex_lock(&wake_lock);
			while (wakes == seen && pthread_cond_timedwait(&wake_cv, &wake_lock, &dl) == 0)
				;
			pthread_mutex_unlock(&wake_lock);
		}
		if (rc == 0 && (st.finish != SCHED_LENGTH || sched_seq_tokens(s, q[i], out->tok[i], N_TOK) != N_TOK))
			rc = -1;
		out->drafted += st.spec_drafted;
		out->accepted += st.spec_accepted;
	}
	for (int i = 0; i < N_SEQ; i++)
		if (q[i])
			sched_seq_release(s, q[i]);
	sched_destroy(s);
	metrics_finish(&m);
	printf("run: draft_max %d, %d sequences, %.2f s\n", draft_max, N_SEQ, (double)(clock() - t0) / CLOCKS_PER_SEC);
	return rc;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* Chi-square homogeneity of position pos between two arms; categories with fewer than 10
 * observations in both arms together are pooled. Returns the p-value. */
static double chi2_p(const struct arm *a, const struct arm *b, int pos, int *df_out)
{
	static int32_t all[2 * N_SEQ];
	for (int i = 0; i < N_SEQ; i++) {
		all[i] = a->tok[i][pos];
		all[N_SEQ + i] = b->tok[i][pos];
	}
	qsort(all, 2 * N_SEQ, sizeof all[0], cmp_i32);
	double chi = 0, pa = 0, pb = 0;
	int df = -1;
	for (int i = 0; i < 2 * N_SEQ;) {
		int j = i;
		while (j < 2 * N_SEQ && all[j] == all[i])
			j++;
		double ca = 0, cb = 0;
		for (int k = 0; k < N_SEQ; k++) {
			ca += a->tok[k][pos] == all[i];
			cb += b->tok[k][pos] == all[i];
		}
		if (ca + cb >= 10) {
			chi += (ca - cb) * (ca - cb) / (ca + cb); /* equal arm sizes */
			df++;
		} else {
			pa += ca;
			pb += cb;
		}
		i = j;
	}
	if (pa + pb > 0) {
		chi += (pa - pb) * (pa - pb) / (pa + pb);
		df++;
	}
	*df_out = df;
	return df > 0 ? gsl_cdf_chisq_Q(chi, df) : 1.0;
}

/* rejections: whether drafts must be rejected sometimes (a draft distribution equal to the
 * target's is always kept) */
static void compare(const char *name, const struct arm *plain, const struct arm *spec, bool rejections)
{
	for (int pos = 1; pos < N_TOK; pos++) {
		int df;
		double p = chi2_p(plain, spec, pos, &df);
		printf("%s: position %d: chi-square p = %.4f (%d degrees of freedom)\n", name, pos, p, df);
		CHECK(df > 3);
		CHECK(p > 1e-3);
	}
	printf("%s: drafted %lld, kept %lld\n", name, (long long)spec->drafted, (long long)spec->accepted);
	CHECK(spec->accepted > 0);
	CHECK(rejections ? spec->drafted - spec->accepted > 0 : spec->drafted == spec->accepted);
	int differ = 0;
	for (int i = 0; i < N_SEQ; i++)
		differ += memcmp(plain->tok[i], spec->tok[i], sizeof plain->tok[i]) != 0;
	CHECK(differ > 0); /* the arms are not the same draws (another use of the random numbers) */
}

int main(void)
{
	char dir[] = "/tmp/sixi-spec-dist-XXXXXX", path[128], err[512];
	if (!mkdtemp(dir))
		return test_skip("no temporary directory");
	snprintf(path, sizeof path, "%s/tiny.gguf", dir);
	if (!CHECK(model_write_tiny(path, err, sizeof err) == 0)) {
		fprintf(stderr, "%s\n", err);
		rmdir(dir);
		return test_done();
	}
	static struct arm plain, spec, again;
	struct engine *e = real_engine_open(path, 32, 64, 1, err, sizeof err);
	size_t rb = 0;
	if (!CHECK(e && real_engine_set_rollback(e, 1, 5, &rb, err, sizeof err) == 0)) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	/* Prompt lookup drafts only after a token seen before: the prompt cycles through four
	 * words, and a logit bias of +6 on them (the same in both arms) makes the generated tokens
	 * often one of them, so the lookup drafts the cycle's next word, which is kept sometimes. */
	static const char text[] = " one two three four";
	int32_t words[16], prompt[64];
	size_t n_words = 0, n_prompt = 0;
	CHECK(e->ops->tokenize(e, text, sizeof text - 1, words, 16, &n_words) == 0 && n_words >= 2 && n_words <= 8);
	for (int r = 0; r < 3; r++)
		for (size_t i = 0; i < n_words; i++)
			prompt[n_prompt++] = words[i];
	float up[16];
	for (size_t i = 0; i < n_words; i++)
		up[i] = 6.0f;
	bias_ids = words;
	bias = up;
	n_bias = n_words;
	struct sampler_params t1 = { .temperature = 1.0, .top_p = 1 };
	CHECK(run(e, 0, prompt, n_prompt, &t1, 1000, &plain) == 0);
	CHECK(run(e, 4, prompt, n_prompt, &t1, 1000, &spec) == 0);
	compare("n-gram, T 1, bias +6 on the prompt's words", &plain, &spec, true);
	n_bias = 0;

	/* Draft models sample their drafts from q under the same transforms. The model drafting
	 * for itself has q == p, so every draft is kept (min(1, p/q) = 1). */
	static const char text2[] = "In the beginning the model wrote";
	CHECK(e->ops->tokenize(e, text2, sizeof text2 - 1, prompt, 64, &n_prompt) == 0 && n_prompt < 40);
	struct sampler_params mix = { .temperature = 0.7, .top_p = 0.95, .top_k = 40, .min_p = 0.02 };
	CHECK(run(e, 0, prompt, n_prompt, &mix, 5000, &plain) == 0);
	if (!CHECK(real_engine_set_draft(e, path, 4, 1, err, sizeof err) == 0)) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	CHECK(run(e, 4, prompt, n_prompt, &mix, 5000, &spec) == 0);
	compare("self-draft, T 0.7 top-k 40 top-p 0.95 min-p 0.02", &plain, &spec, false);

	/* The same draft with a logit bias of +1.5 on every even id: the target's p has the bias,
	 * the draft's q has not, so q != p and drafts are kept and rejected by min(1, p/q). */
	static int32_t even[65536];
	static float plus[65536];
	n_bias = 0;
	for (int32_t id = 0; id < e->n_sample && n_bias < 65536; id += 2) {
		even[n_bias] = id;
		plus[n_bias++] = 1.5f;
	}
	bias_ids = even;
	bias = plus;
	struct sampler_params t12 = { .temperature = 1.2, .top_p = 1, .top_k = 4 };
	CHECK(run(e, 0, prompt, n_prompt, &t12, 9000, &plain) == 0);
	CHECK(run(e, 4, prompt, n_prompt, &t12, 9000, &spec) == 0);
	compare("self-draft, +1.5 on even ids in p only, T 1.2 top-k 4", &plain, &spec, true);
	CHECK(run(e, 4, prompt, n_prompt, &t12, 9000, &again) == 0);
	CHECK(memcmp(spec.tok, again.tok, sizeof spec.tok) == 0); /* seeds repeat with sampled drafts */
out:
	engine_destroy(e);
	unlink(path);
	rmdir(dir);
	return test_done();
}
