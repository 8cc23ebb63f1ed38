/* test_server_real — sixi-server on the real model: the tiny Qwen3.5-text
 * fixture (tests/fixtures/model/qwen35-tiny, random weights) converted to GGUF
 * with the project's tiny BPE vocabulary trained to the fixture's 320 tokens.
 * Checks: 32 concurrent streams finish with correct usage; a temperature-0
 * request gives the same text alone and inside a batch of 32; state copies
 * stay 0; text prompts, chat and token-id prompts all work. */
#include "test.h"
#include "server_harness.h"
#include "model/gguf.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"

#include <pthread.h>

static struct harness_srv srv;

static int make_model(const char *path)
{
	char err[512];
	const char *dir = test_src_path("tests/fixtures/model/qwen35-tiny");
	struct hf_model *h = hf_model_import(dir, err, sizeof err);
	if (!h) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	struct gguf_writer *w = gguf_writer_create();
	int rc = w ? 0 : -1;
	if (rc == 0)
		rc = tok_train_tiny_bpe(tok_tiny_corpus, strlen(tok_tiny_corpus),
					(size_t)hf_model_config(h)->n_vocab, w, err, sizeof err);
	if (rc == 0)
		rc = hf_model_write_gguf(h, w, GGUF_TENSOR_F32, path, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "writing %s: %s\n", path, err);
	gguf_writer_destroy(w);
	hf_model_free(h);
	return rc;
}

struct job {
	char body[512];
	struct harness_gen g;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	harness_generate(srv.port, "/v1/completions", j->body, &j->g, 60000);
	return NULL;
}

int main(void)
{
	harness_raise_fd_limit();
	signal(SIGPIPE, SIG_IGN);
	if (access(harness_server_path(), X_OK) != 0)
		return test_skip("sixi-server not built (SIXI_BUILD_ROOT unset?)");
	if (access(test_src_path("tests/fixtures/model/qwen35-tiny/model.safetensors"), R_OK) != 0)
		return test_skip("the tiny model fixture is absent");
	char dir[] = "/tmp/sixi-real-XXXXXX";
	if (!mkdtemp(dir))
		return test_skip("no temporary directory");
	char model[128];
	snprintf(model, sizeof model, "%s/tiny.gguf", dir);
	if (!CHECK(make_model(model) == 0))
		return test_done();
	const char *args[] = { "--model", model, "--parallel", "32", "--context", "512", "--threads", "2", NULL };
	if (!CHECK(harness_start(&srv, args) == 0)) {
		harness_cleanup(&srv, true);
		unlink(model);
		rmdir(dir);
		return test_done();
	}
	/* Alone, greedy. */
	const char *greedy = "{\"prompt\":\"The cat sat on the\",\"max_tokens\":24,\"temperature\":0,\"ignore_eos\":true}";
	struct harness_gen alone;
	CHECK(harness_generate(srv.port, "/v1/completions", greedy, &alone, 30000) == 0 && alone.ok);
	CHECK_EQ_INT(alone.completion_tokens, 24);
	CHECK(alone.prompt_tokens > 0 && alone.prompt_tokens < 19);
	printf("alone: %lld prompt tokens -> \"%s\"\n", (long long)alone.prompt_tokens, alone.text.data ? alone.text.data : "");

	/* 32 at once: the greedy one among 31 sampled streams, token-id prompts of different lengths. */
	struct job jobs[32];
	pthread_t th[32];
	for (int i = 0; i < 32; i++) {
		if (i == 13) {
			snprintf(jobs[i].body, sizeof jobs[i].body, "%s", greedy);
		} else {
			int n = snprintf(jobs[i].body, sizeof jobs[i].body, "{\"prompt\":[");
			for (int k = 0; k < 3 + i; k++)
				n += snprintf(jobs[i].body + n, sizeof jobs[i].body - (size_t)n, "%s%d", k ? "," : "",
					      (i * 37 + k * 11) % 300 + 3);
			snprintf(jobs[i].body + n, sizeof jobs[i].body - (size_t)n,
				 "],\"max_tokens\":%d,\"temperature\":0.8,\"seed\":%d,\"ignore_eos\":true,\"stream\":true,"
				 "\"stream_options\":{\"include_usage\":true}}", 16 + i, i);
		}
		pthread_create(&th[i], NULL, job_main, &jobs[i]);
	}
	int good = 0;
	for (int i = 0; i < 32; i++) {
		pthread_join(th[i], NULL);
		int64_t want_prompt = i == 13 ? alone.prompt_tokens : 3 + i;
		int64_t want_completion = i == 13 ? 24 : 16 + i;
		bool ok = jobs[i].g.ok && jobs[i].g.prompt_tokens == want_prompt &&
			  jobs[i].g.completion_tokens == want_completion && strcmp(jobs[i].g.finish, "length") == 0;
		if (!ok)
			fprintf(stderr, "stream %d: ok %d usage %lld/%lld finish %s\n", i, jobs[i].g.ok,
				(long long)jobs[i].g.prompt_tokens, (long long)jobs[i].g.completion_tokens, jobs[i].g.finish);
		good += ok;
	}
	CHECK_EQ_INT(good, 32);
	CHECK_EQ_STR(jobs[13].g.text.data, alone.text.data);
	for (int i = 0; i < 32; i++)
		harness_gen_finish(&jobs[i].g);
	harness_gen_finish(&alone);
	double rows = harness_metric(srv.port, "sixi_rows_per_pass_sum");
	double passes = harness_metric(srv.port, "sixi_passes_total");
	printf("rows per pass: %.1f over %.0f passes; state copies %.0f\n", rows / passes, passes,
	       harness_metric(srv.port, "sixi_state_copies_total"));
	CHECK(rows / passes > 4);
	CHECK_EQ_INT((int)harness_metric(srv.port, "sixi_state_copies_total"), 0);

	/* Chat through the built-in ChatML rendering. */
	struct harness_gen chat;
	CHECK(harness_generate(srv.port, "/v1/chat/completions",
			       "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}],\"max_tokens\":8}", &chat,
			       30000) == 0);
	CHECK(chat.ok && chat.completion_tokens >= 1 && chat.completion_tokens <= 8);
	harness_gen_finish(&chat);
	/* A token id beyond the vocabulary is refused. */
	struct harness_gen bad;
	CHECK(harness_generate(srv.port, "/v1/completions", "{\"prompt\":[1,2,320]}", &bad, 10000) == 0);
	CHECK_EQ_INT(bad.status, 400);
	harness_gen_finish(&bad);
	CHECK_EQ_INT(harness_stop(&srv, SIGTERM), 0);
	harness_cleanup(&srv, test_failures > 0);
	unlink(model);
	rmdir(dir);
	return test_done();
}
