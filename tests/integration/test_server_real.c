/* test_server_real — sixi-server on the real model: the embedded tiny model
 * (random weights, the project's BPE vocabulary, a ChatML template in the GGUF)
 * written by `sixi-server --write-tiny`. Checks: 32 concurrent streams finish
 * with correct usage; a temperature-0 request gives the same text alone and
 * inside a batch of 32; state copies stay 0; every text is valid UTF-8 (a
 * random model emits stray bytes); chat goes through the GGUF's template;
 * token ids beyond the vocabulary are refused. */
#include "test.h"
#include "server_harness.h"

#include <pthread.h>

static struct harness_srv srv;

/* Strict UTF-8 validity (no overlongs, surrogates or stray bytes). */
static bool utf8_valid(const char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)p[i];
		size_t need = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
		if (!need || i + need > n)
			return false;
		for (size_t k = 1; k < need; k++)
			if (((unsigned char)p[i + k] & 0xC0) != 0x80)
				return false;
		if ((c == 0xE0 && (unsigned char)p[i + 1] < 0xA0) || (c == 0xED && (unsigned char)p[i + 1] >= 0xA0) ||
		    (c == 0xF0 && (unsigned char)p[i + 1] < 0x90) || (c == 0xF4 && (unsigned char)p[i + 1] >= 0x90))
			return false;
		i += need;
	}
	return true;
}

static int make_model(const char *path)
{
	char cmd[4600], out[2048];
	snprintf(cmd, sizeof cmd, "%s --write-tiny %s", harness_server_path(), path);
	harness_run_capture(cmd, out, sizeof out);
	return strstr(out, "exit 0") && access(path, R_OK) == 0 ? 0 : -1;
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
	if (harness_init() != 0)
		return 77;
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
	int valid = 0;
	for (int i = 0; i < 32; i++)
		valid += jobs[i].g.text.data == NULL || utf8_valid(jobs[i].g.text.data, jobs[i].g.text.len);
	CHECK_EQ_INT(valid, 32);
	CHECK_EQ_STR(jobs[13].g.text.data, alone.text.data);
	for (int i = 0; i < 32; i++)
		harness_gen_finish(&jobs[i].g);
	harness_gen_finish(&alone);
	double rows = harness_metric(srv.port, "sixi_rows_per_pass_sum");
	double passes = harness_metric(srv.port, "sixi_passes_total");
	double decode = harness_metric(srv.port, "sixi_decode_rows_total");
	printf("rows per pass: %.1f (%.1f decoding) over %.0f passes; state copies %.0f\n", rows / passes,
	       decode / passes, passes, harness_metric(srv.port, "sixi_state_copies_total"));
	/* Decoding rows per pass: ~1 if streams never shared a pass (prompt rows left out,
	 * they are many per pass either way). 32 streams of 16+ tokens overlap on any
	 * machine; how much depends on when the threads run, so the bound is low. */
	CHECK(decode / passes > 2);
	CHECK_EQ_INT((int)harness_metric(srv.port, "sixi_state_copies_total"), 0);

	/* Chat through the built-in ChatML rendering. */
	struct harness_gen chat;
	CHECK(harness_generate(srv.port, "/v1/chat/completions",
			       "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}],\"max_tokens\":8}", &chat,
			       30000) == 0);
	CHECK(chat.ok && chat.completion_tokens >= 1 && chat.completion_tokens <= 8);
	/* The GGUF's ChatML template with <|im_start|>/<|im_end|> as single tokens: far fewer
	 * tokens than the 54 bytes of the rendered text. */
	CHECK(chat.prompt_tokens > 5 && chat.prompt_tokens < 40);
	printf("chat: %lld prompt tokens\n", (long long)chat.prompt_tokens);
	harness_gen_finish(&chat);
	/* A token id beyond the vocabulary is refused. */
	struct harness_gen bad;
	CHECK(harness_generate(srv.port, "/v1/completions", "{\"prompt\":[1,2,100000]}", &bad, 10000) == 0);
	CHECK_EQ_INT(bad.status, 400);
	harness_gen_finish(&bad);
	CHECK_EQ_INT(harness_stop(&srv, SIGTERM), 0);
	harness_cleanup(&srv, test_failures > 0);
	/* Sized by src/plan before anything is allocated: too much is refused, naming what fits. */
	char cmd[4600], out[4096];
	snprintf(cmd, sizeof cmd, "%s --model %s --parallel 64 --context 65536 --mem-limit 1GiB --port 0",
		 harness_server_path(), model);
	harness_run_capture(cmd, out, sizeof out);
	printf("%s", out);
	CHECK(strstr(out, "refusing to start: 64 sequences x 65536 context need") != NULL);
	CHECK(strstr(out, "configurations that fit: --parallel 64 --context ") != NULL);
	CHECK(strstr(out, "--context 65536\n") != NULL);
	CHECK(strstr(out, "listening") == NULL && strstr(out, "exit 3") != NULL);
	unlink(model);
	rmdir(dir);
	return test_done();
}
