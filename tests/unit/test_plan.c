/* Unit tests for src/plan: the published sizing arithmetic reproduced from public config
 * fields (tests/fixtures/plan), layer-kind detection for hybrids, "what fits", the
 * command's output and its refusals of bad input. */
#include "test.h"
#include "plan/plan.h"
#include "plan/plan_cmd.h"
#include "core/json.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#ifdef SIXI_PLAN_GGUF
#include "gguf/gguf.h"
#include "plan/plan_gguf.h"
#endif

#define GiB (1024.0 * 1024.0 * 1024.0)
#define MiB (1024ull * 1024ull)

static int load_fixture(const char *name, struct plan_model *m)
{
	char rel[256], err[512];
	snprintf(rel, sizeof rel, "tests/fixtures/plan/%s", name);
	int rc = plan_model_load(test_src_path(rel), m, err, sizeof err);
	if (rc)
		fprintf(stderr, "load %s: %s\n", name, err);
	return rc;
}

static int from_string(const char *json, struct plan_model *m, char *err, size_t errlen)
{
	cJSON *root = cJSON_Parse(json);
	if (!root) {
		snprintf(err, errlen, "test JSON does not parse");
		return -EINVAL;
	}
	int rc = plan_model_from_json(root, "inline", m, err, errlen);
	cJSON_Delete(root);
	return rc;
}

/* ---- the essay's numbers ---- */

static void test_qwen3_8b(void)
{
	struct plan_model m;
	struct plan_workload w;
	struct plan_breakdown b;
	char err[512];
	CHECK(load_fixture("qwen3-8b.json", &m) == 0);
	CHECK_EQ_INT(m.n_attn, 36);
	CHECK_EQ_INT(m.n_kv_heads, 8);
	CHECK_EQ_INT(m.head_dim_k, 128);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 147456);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_FP8), 73728);
	plan_workload_init(&w, 32768, 4);
	CHECK(w.headroom == 1.25);
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == 0);
	CHECK_EQ_INT(b.kv_bytes, 24159191040LL);
	CHECK_NEAR(b.kv_bytes / GiB, 22.5, 1e-12);
	CHECK_EQ_INT(b.ssm_bytes + b.conv_bytes + b.log_bytes, 0);
	/* weights: no checkpoint beside the fixture, so parameters from the shapes x 2 B.
	 * vLLM reported 15.27 GiB loaded for Qwen3-8B in BF16 (8.19e9 parameters). */
	CHECK_EQ_INT(m.n_params, 8190735360LL);
	CHECK_NEAR(m.weight_bytes / GiB, 15.27, 0.002);
	CHECK(strstr(m.weight_source, "estimate") != NULL);
	CHECK(b.total_bytes == b.weights_bytes + b.kv_bytes + b.activation_bytes);
}

static void test_qwen3_30b_a3b(void)
{
	struct plan_model m;
	struct plan_workload w;
	struct plan_breakdown b;
	char err[512];
	CHECK(load_fixture("qwen3-30b-a3b.json", &m) == 0);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 98304);
	plan_workload_init(&w, 32768, 4);
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == 0);
	CHECK_NEAR(b.kv_bytes / GiB, 15.0, 1e-12);
	/* a third less than the 8B, though it has almost four times the parameters */
	CHECK_NEAR(m.n_params / 1e9, 30.5, 0.01);
	CHECK_EQ_INT(b.kv_bytes * 3, 24159191040LL * 2);
}

static void test_hybrid_27b(void)
{
	struct plan_model m;
	struct plan_workload w;
	struct plan_breakdown b;
	char err[512];
	CHECK(load_fixture("hybrid-27b.json", &m) == 0);
	/* the language model sits in text_config; layer_types gives 48 GDN + 16 full */
	CHECK_EQ_STR(m.arch, "qwen3_5_text");
	CHECK_EQ_INT(m.n_layers, 64);
	CHECK_EQ_INT(m.n_gdn, 48);
	CHECK_EQ_INT(m.n_attn, 16);
	CHECK_EQ_INT(m.gdn_v_heads, 48);
	/* 48 GDN layers x 48 V-heads x 128 x 128 x 4 B = 144 MiB per sequence */
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_FP32), 144 * MiB);
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_BF16), 72 * MiB);
	/* conv: 48 x (4 - 1) x (2 x 16 x 128 + 48 x 128) x 4 B = 5.625 MiB */
	CHECK_EQ_INT(plan_conv_bytes_per_slot(&m, PLAN_DTYPE_FP32), 5898240);
	/* full attention: 16 layers x 4 KV heads x 256 x 2 x 2 B = 64 KiB per token */
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 65536);
	/* one log row: 48 layers x 48 V-heads x (128 + 128 + 2) x 4 B = 2.27 MiB */
	CHECK_EQ_INT(plan_log_row_bytes(&m, PLAN_DTYPE_FP32), 2377728);

	/* five slots per request with a draft model: 16 requests -> 80 slots */
	plan_workload_init(&w, 32768, 16);
	w.spec_slots = 5;
	w.state_dtype = PLAN_DTYPE_BF16;
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == 0);
	CHECK_EQ_INT(b.state_slots, 80);
	CHECK_EQ_INT(b.ssm_bytes, 80 * 72 * MiB);
	CHECK_EQ_INT(b.draft_state_bytes, 0);
	/* snapshot-style drafting keeps a state per drafted token and sequence */
	uint64_t before = b.total_bytes;
	w.draft_tokens = 8;
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == 0);
	CHECK_EQ_INT(plan_conv_row_bytes(&m, PLAN_DTYPE_BF16), 48ull * 10240 * 2);
	CHECK_EQ_INT(b.draft_state_bytes, 16ull * (8 * 72 * MiB + 10 * 48ull * 10240 * 2));
	CHECK_EQ_INT(b.total_bytes, before + b.draft_state_bytes);

	/* SGLang's pool at 80 slots, bf16 state, draft of 8: 5.70 GiB SSM + 9.56 GiB
	 * intermediate + 0.38 GiB conv = 15.6 GiB; float32 state about doubles it (30.9). */
	uint64_t base = plan_sglang_mamba_pool_bytes(&m, 80, 5, 0, PLAN_DTYPE_BF16, PLAN_DTYPE_BF16);
	uint64_t pool = plan_sglang_mamba_pool_bytes(&m, 80, 5, 8, PLAN_DTYPE_BF16, PLAN_DTYPE_BF16);
	CHECK_NEAR(81.0 * 72 * MiB / GiB, 5.70, 0.001);
	CHECK(fabs(pool / GiB - 15.6) < 0.05);
	CHECK(fabs((pool - base) / GiB - (9.56 + 0.38 - 0.22)) < 0.01);
	uint64_t pool32 = plan_sglang_mamba_pool_bytes(&m, 80, 5, 8, PLAN_DTYPE_FP32, PLAN_DTYPE_BF16);
	CHECK(fabs(pool32 / GiB - 30.9) < 0.1);
	/* and the 64-slot row: 12.2 GiB */
	uint64_t pool64 = plan_sglang_mamba_pool_bytes(&m, 64, 5, 8, PLAN_DTYPE_BF16, PLAN_DTYPE_BF16);
	CHECK(fabs(pool64 / GiB - 12.2) < 0.05);

	/* sixi-server's start-up breakdown: fp32 everything, one slot, an 8-row log */
	CHECK(plan_server_breakdown(&m, 4096, 16, 8, 256, &b, err, sizeof err) == 0);
	CHECK_EQ_INT(b.state_slots, 16);
	CHECK_EQ_INT(b.ssm_bytes, 16 * 144 * MiB);
	CHECK_EQ_INT(b.log_bytes, 16ull * 8 * 2377728);
	CHECK_EQ_INT(b.conv_bytes, 16ull * (5898240 + 8 * plan_conv_row_bytes(&m, PLAN_DTYPE_FP32)));
	CHECK_EQ_INT(b.kv_bytes, 16ull * 4096 * 131072);
	CHECK(b.activation_bytes > 0);
	CHECK(b.total_bytes == b.weights_bytes + b.kv_bytes + b.ssm_bytes + b.conv_bytes + b.log_bytes +
				       b.activation_bytes);
	/* the notes' comparison: base + 8-row log for 16 sequences vs base + 5 snapshots */
	CHECK(fabs((16.0 * (144 * MiB + 8 * 2377728.0)) / GiB - 2.53) < 0.01);
}

static void test_qwen3_next(void)
{
	struct plan_model m;
	CHECK(load_fixture("qwen3-next-80b-a3b.json", &m) == 0);
	/* no layer_types: full_attention_interval 4 -> 36 GDN + 12 full */
	CHECK_EQ_INT(m.n_gdn, 36);
	CHECK_EQ_INT(m.n_attn, 12);
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_FP32), 72 * MiB);
	CHECK_EQ_INT(plan_conv_bytes_per_slot(&m, PLAN_DTYPE_FP32), 3538944); /* 3.375 MiB */
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 24576);
	CHECK_NEAR(m.n_params / 1e9, 80.0, 0.02);
}

static void test_mamba_hybrids(void)
{
	struct plan_model m;
	char err[512];
	CHECK(load_fixture("jamba-v0.1.json", &m) == 0);
	CHECK_EQ_INT(m.n_attn, 4);
	CHECK_EQ_INT(m.n_mamba, 28);
	CHECK_EQ_INT(m.mamba_d_inner, 8192);
	CHECK_EQ_INT(m.mamba_n_groups, 0);
	/* Jamba's 4 attention layers: 16 KiB per token, 4 GiB for a 256K context at 16 bits */
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 16384);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16) * 262144, 4ull << 30);
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_FP32), 28ull * 8192 * 16 * 4);
	CHECK_EQ_INT(plan_conv_bytes_per_slot(&m, PLAN_DTYPE_BF16), 28ull * 3 * 8192 * 2);

	/* Nemotron-H style pattern, Mamba-2 fields */
	CHECK(from_string("{\"model_type\":\"nemotron_h\",\"num_hidden_layers\":6,"
			  "\"hybrid_override_pattern\":\"M-M*-E\",\"num_attention_heads\":8,"
			  "\"num_key_value_heads\":2,\"head_dim\":64,\"mamba_num_heads\":16,"
			  "\"mamba_head_dim\":32,\"ssm_state_size\":64,\"n_groups\":4,\"conv_kernel\":4}",
			  &m, err, sizeof err) == 0);
	CHECK_EQ_INT(m.n_mamba, 2);
	CHECK_EQ_INT(m.n_attn, 1);
	CHECK_EQ_INT(m.mamba_d_inner, 512);
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_FP32), 2ull * 512 * 64 * 4);
	CHECK_EQ_INT(plan_conv_bytes_per_slot(&m, PLAN_DTYPE_FP32), 2ull * 3 * (512 + 2 * 4 * 64) * 4);

	/* Granite-4.0-H style layer_types with mamba */
	CHECK(from_string("{\"num_hidden_layers\":4,\"layer_types\":[\"mamba\",\"mamba\",\"mamba\",\"attention\"],"
			  "\"num_attention_heads\":8,\"num_key_value_heads\":8,\"hidden_size\":512,"
			  "\"mamba_n_heads\":8,\"mamba_d_head\":64,\"mamba_d_state\":128,\"mamba_n_groups\":1,"
			  "\"mamba_d_conv\":4}", &m, err, sizeof err) == 0);
	CHECK_EQ_INT(m.n_mamba, 3);
	CHECK_EQ_INT(m.head_dim_k, 64); /* hidden / heads */
	CHECK_EQ_INT(m.mamba_n_groups, 1);

	/* sliding window layers are capped at their window */
	struct plan_workload w;
	struct plan_breakdown b;
	CHECK(from_string("{\"num_hidden_layers\":4,\"layer_types\":[\"sliding_attention\",\"full_attention\","
			  "\"sliding_attention\",\"full_attention\"],\"sliding_window\":128,"
			  "\"num_attention_heads\":8,\"num_key_value_heads\":1,\"head_dim\":64}",
			  &m, err, sizeof err) == 0);
	plan_workload_init(&w, 1000, 1);
	w.headroom = 1.0;
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == 0);
	CHECK_EQ_INT(b.kv_bytes, 2ull * 1000 * 256 + 2ull * 128 * 256);

	/* MLA: latent + rope dims once per layer */
	CHECK(from_string("{\"num_hidden_layers\":61,\"kv_lora_rank\":512,\"qk_rope_head_dim\":64,"
			  "\"num_attention_heads\":128}", &m, err, sizeof err) == 0);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 61ull * 576 * 2);
}

/* ---- weights from the checkpoint beside config.json ---- */

static int write_file(const char *dir, const char *name, const char *text, off_t size)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	int rc = text ? (write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1) : ftruncate(fd, size);
	close(fd);
	return rc;
}

static void remove_file(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
}

static void test_weights_beside(void)
{
	char dir[] = "/tmp/sixi-plan-dirXXXXXX", err[512];
	struct plan_model m;
	CHECK(mkdtemp(dir) != NULL);
	const char *cfg = "{\"num_hidden_layers\":2,\"num_key_value_heads\":2,\"head_dim\":64,"
			  "\"hidden_size\":256,\"num_attention_heads\":4,\"vocab_size\":1000,"
			  "\"intermediate_size\":512}";
	CHECK(write_file(dir, "config.json", cfg, 0) == 0);
	/* no checkpoint: parameters x 2 B */
	CHECK(plan_model_load(dir, &m, err, sizeof err) == 0);
	CHECK(m.n_params > 0 && m.weight_bytes == m.n_params * 2);
	/* shards: their sizes */
	CHECK(write_file(dir, "model-00001-of-00002.safetensors", NULL, 3000) == 0);
	CHECK(write_file(dir, "model-00002-of-00002.safetensors", NULL, 1234) == 0);
	CHECK(plan_model_load(dir, &m, err, sizeof err) == 0);
	CHECK_EQ_INT(m.weight_bytes, 4234);
	CHECK(strstr(m.weight_source, "safetensors") != NULL);
	/* an index: its total_size wins */
	CHECK(write_file(dir, "model.safetensors.index.json", "{\"metadata\":{\"total_size\":16381470720}}", 0) == 0);
	char cfg_path[4096];
	snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
	CHECK(plan_model_load(cfg_path, &m, err, sizeof err) == 0);
	CHECK_EQ_INT(m.weight_bytes, 16381470720LL);
	/* a config that is not JSON */
	CHECK(write_file(dir, "config.json", "{\"num_hidden_layers\": 2,", 0) == 0);
	CHECK(plan_model_load(dir, &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "config.json") && strstr(err, "line 1"));
	remove_file(dir, "model.safetensors.index.json");
	remove_file(dir, "model-00001-of-00002.safetensors");
	remove_file(dir, "model-00002-of-00002.safetensors");
	remove_file(dir, "config.json");
	rmdir(dir);
}

/* ---- what fits ---- */

static void test_fit(void)
{
	/* vLLM on the essay's machine turned 86.89 GiB into KV cache: 632,720 tokens, room
	 * for 19.31 sequences of 32,768 tokens. A model with no weights or activations
	 * isolates the KV arithmetic. */
	struct plan_model m;
	struct plan_workload w;
	plan_model_init(&m);
	m.n_layers = m.n_attn = 36;
	m.n_kv_heads = 8;
	m.head_dim_k = m.head_dim_v = 128;
	plan_workload_init(&w, 32768, 1);
	w.headroom = 1.0;
	uint64_t mem = (uint64_t)(86.89 * GiB);
	int64_t ctx = plan_fit_context(&m, &w, mem, INT64_C(1) << 31);
	CHECK(ctx >= 632700 && ctx <= 632740);
	CHECK_EQ_INT(ctx, (int64_t)(mem / 147456));
	CHECK_EQ_INT(plan_fit_sequences(&m, &w, mem, 1000), 19);
	/* capped by the caller's maximum */
	CHECK_EQ_INT(plan_fit_context(&m, &w, mem, 40960), 40960);

	/* with weights: the answers fit and one more does not */
	struct plan_model q;
	struct plan_breakdown b;
	char err[256];
	CHECK(load_fixture("qwen3-8b.json", &q) == 0);
	plan_workload_init(&w, 32768, 4);
	uint64_t budget = 40ull << 30;
	int64_t c = plan_fit_context(&q, &w, budget, INT64_C(1) << 31);
	int64_t s = plan_fit_sequences(&q, &w, budget, 100000);
	CHECK(c > 0 && s > 0);
	w.context_tokens = c;
	CHECK(plan_compute(&q, &w, &b, err, sizeof err) == 0 && b.total_bytes <= budget);
	w.context_tokens = c + 1;
	CHECK(plan_compute(&q, &w, &b, err, sizeof err) == 0 && b.total_bytes > budget);
	w.context_tokens = 32768;
	w.sequences = s;
	CHECK(plan_compute(&q, &w, &b, err, sizeof err) == 0 && b.total_bytes <= budget);
	w.sequences = s + 1;
	CHECK(plan_compute(&q, &w, &b, err, sizeof err) == 0 && b.total_bytes > budget);
	/* less memory than the weights: nothing fits */
	CHECK_EQ_INT(plan_fit_context(&q, &w, 8ull << 30, INT64_C(1) << 31), 0);
	CHECK_EQ_INT(plan_fit_sequences(&q, &w, 8ull << 30, 1000), 0);
}

/* ---- bad input ---- */

static void test_bad_config(void)
{
	struct plan_model m;
	struct plan_workload w;
	struct plan_breakdown b;
	char err[512];
	CHECK(from_string("{\"num_hidden_layers\":36}", &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "num_key_value_heads") && strstr(err, "head_dim"));
	CHECK(from_string("{\"num_attention_heads\":32,\"head_dim\":128}", &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "missing num_hidden_layers") != NULL);
	CHECK(from_string("{\"num_hidden_layers\":-4,\"num_key_value_heads\":8,\"head_dim\":128}", &m, err,
			  sizeof err) == -EINVAL);
	CHECK(strstr(err, "num_hidden_layers is -4") != NULL);
	CHECK(from_string("{\"num_hidden_layers\":4,\"num_key_value_heads\":0,\"head_dim\":128}", &m, err,
			  sizeof err) == -EINVAL);
	CHECK(strstr(err, "num_key_value_heads is 0") != NULL);
	CHECK(from_string("{\"num_hidden_layers\":8,\"full_attention_interval\":4,\"num_key_value_heads\":2,"
			  "\"head_dim\":256,\"linear_num_key_heads\":16,\"linear_num_value_heads\":32,"
			  "\"linear_key_head_dim\":128}", &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "linear_value_head_dim") && strstr(err, "linear_conv_kernel_dim"));
	CHECK(strstr(err, "linear_key_head_dim") == NULL);
	CHECK(from_string("{\"num_hidden_layers\":2,\"layer_types\":[\"full_attention\",\"conv\"],"
			  "\"num_key_value_heads\":2,\"head_dim\":64}", &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "layer_types[1] is conv") != NULL);
	CHECK(from_string("{\"num_hidden_layers\":3,\"layer_types\":[\"full_attention\"],"
			  "\"num_key_value_heads\":2,\"head_dim\":64}", &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "1 entries") != NULL);
	CHECK(from_string("[1,2]", &m, err, sizeof err) == -EINVAL);

	/* zero or negative workload sizes */
	CHECK(load_fixture("qwen3-8b.json", &m) == 0);
	plan_workload_init(&w, 0, 4);
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == -EINVAL && strstr(err, "positive"));
	plan_workload_init(&w, 4096, -1);
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == -EINVAL);
	plan_workload_init(&w, 4096, 1);
	w.headroom = 0.5;
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == -EINVAL && strstr(err, "headroom"));
	plan_workload_init(&w, INT64_C(1) << 40, INT64_C(1) << 30);
	CHECK(plan_compute(&m, &w, &b, err, sizeof err) == -EOVERFLOW);
}

/* ---- the command ---- */

struct captured {
	char out[65536], err[8192];
	int code;
};

static void read_all(int fd, char *buf, size_t cap)
{
	lseek(fd, 0, SEEK_SET);
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = 0;
}

/* Runs plan_cmd_main with stdout and stderr captured into files. */
static void run_cmd(struct captured *c, char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	char out_path[] = "/tmp/sixi-plan-outXXXXXX", err_path[] = "/tmp/sixi-plan-errXXXXXX";
	int fo = mkstemp(out_path), fe = mkstemp(err_path);
	unlink(out_path);
	unlink(err_path);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(fo, 1);
	dup2(fe, 2);
	c->code = plan_cmd_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	read_all(fo, c->out, sizeof c->out);
	read_all(fe, c->err, sizeof c->err);
	close(fo);
	close(fe);
}

static double json_num(const cJSON *root, const char *path)
{
	double v = -1;
	json_get_double(root, path, &v);
	return v;
}

static void test_cmd(void)
{
	static struct captured c;
	char model8[4096], hybrid[4096];
	snprintf(model8, sizeof model8, "%s", test_src_path("tests/fixtures/plan/qwen3-8b.json"));
	snprintf(hybrid, sizeof hybrid, "%s", test_src_path("tests/fixtures/plan/hybrid-27b.json"));

	/* the essay's workload, text */
	run_cmd(&c, (char *[]){ "plan", "--model", model8, "--context", "32768", "--sequences", "4", NULL });
	CHECK_EQ_INT(c.code, 0);
	CHECK(strstr(c.out, "147,456 B") != NULL);
	CHECK(strstr(c.out, "24,159,191,040 B") != NULL);
	CHECK(strstr(c.out, "--kv-cache-memory-bytes 24159191040") != NULL);
	CHECK(strstr(c.out, "--max-num-seqs 4") != NULL);
	CHECK(strstr(c.out, "-c 131072 -np 4") != NULL);

	/* JSON, with the DGX Spark's 121.7 GiB and vLLM's default fraction */
	run_cmd(&c, (char *[]){ "plan", "--model", model8, "--context", "32768", "--sequences", "4", "--memory",
				"121.7GiB", "--json", NULL });
	CHECK_EQ_INT(c.code, 0);
	cJSON *root = cJSON_Parse(c.out);
	CHECK(root != NULL);
	CHECK_NEAR(json_num(root, "bytes.kv"), 24159191040.0, 0);
	CHECK_NEAR(json_num(root, "bytes.kv_per_token"), 147456, 0);
	CHECK_NEAR(json_num(root, "settings.vllm.kv_cache_memory_bytes"), 24159191040.0, 0);
	CHECK_NEAR(json_num(root, "settings.llamacpp.c"), 131072, 0);
	CHECK(json_num(root, "memory.max_sequences") >= 4);
	CHECK(json_num(root, "memory.max_context_tokens") >= 32768);
	bool fits = false;
	CHECK(json_get_bool(root, "memory.fits", &fits) && fits);
	const cJSON *warnings = json_path(root, "warnings");
	CHECK(cJSON_GetArraySize(warnings) >= 2);
	CHECK(strstr(c.out, "reserves") && strstr(c.out, "wedged"));
	cJSON_Delete(root);

	/* the hybrid with a draft model: 16 requests -> 80 slots, bf16 SSM state */
	run_cmd(&c, (char *[]){ "plan", "--model", hybrid, "--context", "32768", "--sequences", "16",
				"--spec-slots", "5", "--state-dtype", "bf16", "--kv-dtype", "fp8", "--draft-tokens",
				"8", "--json", NULL });
	CHECK_EQ_INT(c.code, 0);
	root = cJSON_Parse(c.out);
	CHECK(root != NULL);
	CHECK_NEAR(json_num(root, "state_slots"), 80, 0);
	CHECK_NEAR(json_num(root, "settings.sglang.max_mamba_cache_size"), 80, 0);
	CHECK_NEAR(json_num(root, "settings.sglang.max_running_requests"), 16, 0);
	CHECK_NEAR(json_num(root, "bytes.state_per_slot"), 72.0 * MiB, 0);
	CHECK_NEAR(json_num(root, "bytes.kv_per_token"), 32768, 0);
	CHECK(fabs(json_num(root, "settings.sglang.mamba_pool_bytes") / GiB - 15.6) < 0.05);
	CHECK_EQ_STR(json_get_str(root, "settings.sglang.mamba_ssm_dtype"), "bfloat16");
	cJSON_Delete(root);

	/* a draft without five slots per request is warned about */
	run_cmd(&c, (char *[]){ "plan", "--model", hybrid, "--context", "4096", "--sequences", "4",
				"--draft-tokens", "8", NULL });
	CHECK_EQ_INT(c.code, 0);
	CHECK(strstr(c.out, "warning: with a draft model") != NULL);

	/* does not fit: exit 1 with what would */
	run_cmd(&c, (char *[]){ "plan", "--model", model8, "--context", "32768", "--sequences", "4", "--memory",
				"24GiB", NULL });
	CHECK_EQ_INT(c.code, 1);
	CHECK(strstr(c.out, "DOES NOT FIT") != NULL);
	CHECK(strstr(c.err, "more than --memory") && strstr(c.err, "--sequences"));
	/* nothing fits at all */
	run_cmd(&c, (char *[]){ "plan", "--model", model8, "--context", "32768", "--sequences", "4", "--memory",
				"4GiB", NULL });
	CHECK_EQ_INT(c.code, 1);
	CHECK(strstr(c.err, "not enough for even one sequence") != NULL);

	/* bad arguments: exit 2, one message naming the problem, nothing on stdout */
	struct {
		char *argv[12];
		const char *expect;
	} bad[] = {
		{ { "plan", "--model", model8, "--context", "0", "--sequences", "4", NULL }, "--context" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "-2", NULL }, "--sequences" },
		{ { "plan", "--model", model8, "--context", "4096", NULL }, "missing --sequences" },
		{ { "plan", "--context", "4096", "--sequences", "1", NULL }, "missing --model" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "1", "--kv-dtype", "fp7", NULL },
		  "fp7" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "1", "--state-dtype", "fp8", NULL },
		  "--state-dtype" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "1", "--headroom", "0.8", NULL },
		  "--headroom" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "1", "--memory", "0", NULL },
		  "--memory" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "1", "--weights", "0", NULL },
		  "--weights" },
		{ { "plan", "--model", model8, "--context", "1099511627776", "--sequences", "1073741824", NULL },
		  "2^64" },
		{ { "plan", "--model", "/nonexistent/config.json", "--context", "4096", "--sequences", "1", NULL },
		  "nonexistent" },
		{ { "plan", "--model", model8, "--context", "4096", "--sequences", "1", "--frobnicate", NULL },
		  "--frobnicate" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		run_cmd(&c, bad[i].argv);
		if (!CHECK_EQ_INT(c.code, 2) || !CHECK(strstr(c.err, bad[i].expect) != NULL))
			fprintf(stderr, "  case %zu: stderr: %s\n", i, c.err);
		CHECK_EQ_STR(c.out, "");
	}

	/* a config without the needed fields, through the command */
	char path[] = "/tmp/sixi-plan-cfgXXXXXX";
	int fd = mkstemp(path);
	const char *cfg = "{\"num_hidden_layers\": 4, \"num_attention_heads\": 8}";
	CHECK(write(fd, cfg, strlen(cfg)) == (ssize_t)strlen(cfg));
	close(fd);
	run_cmd(&c, (char *[]){ "plan", "--model", path, "--context", "4096", "--sequences", "1", NULL });
	unlink(path);
	CHECK_EQ_INT(c.code, 2);
	CHECK(strstr(c.err, "head_dim") != NULL);
	CHECK_EQ_STR(c.out, "");
}

#ifdef SIXI_PLAN_GGUF
static void test_gguf(void)
{
	/* a qwen35 GGUF holding only metadata and one tensor, with llama.cpp's keys */
	char path[] = "/tmp/sixi-plan-ggufXXXXXX", err[512];
	int fd = mkstemp(path);
	close(fd);
	struct gguf_writer *w = gguf_writer_create();
	CHECK(w != NULL);
	int rc = gguf_writer_set_str(w, "general.architecture", "qwen35");
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.block_count", 64);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.full_attention_interval", 4);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.embedding_length", 5120);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.attention.head_count", 24);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.attention.head_count_kv", 4);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.attention.key_length", 256);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.attention.value_length", 256);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.ssm.conv_kernel", 4);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.ssm.state_size", 128);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.ssm.group_count", 16);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.ssm.time_step_rank", 48);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.ssm.inner_size", 6144);
	float data[64] = { 0 };
	uint64_t ne[2] = { 16, 4 };
	rc = rc ? rc : gguf_writer_add_tensor(w, "token_embd.weight", 2, ne, GGUF_TENSOR_F32, data, sizeof data);
	rc = rc ? rc : gguf_writer_write(w, path, err, sizeof err);
	gguf_writer_destroy(w);
	CHECK(rc == 0);
	struct plan_model m;
	CHECK(plan_model_load(path, &m, err, sizeof err) == 0);
	CHECK_EQ_INT(m.n_gdn, 48);
	CHECK_EQ_INT(m.n_attn, 16);
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_FP32), 144 * MiB);
	CHECK_EQ_INT(plan_conv_bytes_per_slot(&m, PLAN_DTYPE_FP32), 5898240);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 65536);
	CHECK_EQ_INT(m.weight_bytes, sizeof data);
	CHECK_EQ_INT(m.n_params, 64);

	/* the command reads the GGUF too; weights come from its tensor table */
	static struct captured c;
	run_cmd(&c, (char *[]){ "plan", "--model", path, "--context", "4096", "--sequences", "2", "--json", NULL });
	CHECK_EQ_INT(c.code, 0);
	cJSON *root = cJSON_Parse(c.out);
	CHECK(root != NULL);
	CHECK_NEAR(json_num(root, "bytes.weights"), sizeof data, 0);
	CHECK_NEAR(json_num(root, "bytes.state_per_slot"), 144.0 * MiB, 0);
	CHECK_EQ_STR(json_get_str(root, "model.weights_source"), "GGUF tensor bytes");
	cJSON_Delete(root);

	/* a Mamba hybrid: head_count_kv per layer, 0 marks a Mamba layer */
	w = gguf_writer_create();
	uint32_t kv[8] = { 0, 0, 0, 8, 0, 0, 0, 8 };
	rc = gguf_writer_set_str(w, "general.architecture", "jamba");
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.block_count", 8);
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.embedding_length", 4096);
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.attention.head_count", 32);
	rc = rc ? rc : gguf_writer_set_arr_num(w, "jamba.attention.head_count_kv", GGUF_TYPE_UINT32, kv, 8);
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.ssm.inner_size", 8192);
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.ssm.state_size", 16);
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.ssm.conv_kernel", 4);
	rc = rc ? rc : gguf_writer_write(w, path, err, sizeof err);
	gguf_writer_destroy(w);
	CHECK(rc == 0);
	CHECK(plan_model_load(path, &m, err, sizeof err) == 0);
	CHECK_EQ_INT(m.n_attn, 2);
	CHECK_EQ_INT(m.n_mamba, 6);
	CHECK_EQ_INT(m.n_kv_heads, 8);
	CHECK_EQ_INT(m.head_dim_k, 128);
	CHECK_EQ_INT(plan_kv_bytes_per_token(&m, PLAN_DTYPE_BF16), 2ull * 2 * 8 * 128 * 2);
	CHECK_EQ_INT(plan_ssm_bytes_per_slot(&m, PLAN_DTYPE_FP32), 6ull * 8192 * 16 * 4);
	CHECK_EQ_INT(plan_conv_bytes_per_slot(&m, PLAN_DTYPE_FP32), 6ull * 3 * 8192 * 4);

	/* per-layer KV heads that differ between attention layers are refused, by name */
	w = gguf_writer_create();
	uint32_t uneven[4] = { 0, 8, 0, 4 };
	rc = gguf_writer_set_str(w, "general.architecture", "jamba");
	rc = rc ? rc : gguf_writer_set_u32(w, "jamba.block_count", 4);
	rc = rc ? rc : gguf_writer_set_arr_num(w, "jamba.attention.head_count_kv", GGUF_TYPE_UINT32, uneven, 4);
	rc = rc ? rc : gguf_writer_write(w, path, err, sizeof err);
	gguf_writer_destroy(w);
	CHECK(rc == 0);
	CHECK(plan_model_load(path, &m, err, sizeof err) == -ENOTSUP);
	CHECK(strstr(err, "jamba.attention.head_count_kv differs") != NULL);

	/* missing SSM metadata is named */
	w = gguf_writer_create();
	rc = gguf_writer_set_str(w, "general.architecture", "qwen35");
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.block_count", 8);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.attention.head_count", 8);
	rc = rc ? rc : gguf_writer_set_u32(w, "qwen35.attention.key_length", 64);
	rc = rc ? rc : gguf_writer_write(w, path, err, sizeof err);
	gguf_writer_destroy(w);
	CHECK(rc == 0);
	CHECK(plan_model_load(path, &m, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "qwen35.ssm.time_step_rank") != NULL);
	/* a truncated GGUF is an error naming the file, not a crash */
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite("GGUF\3\0\0\0\1", 1, 9, f) == 9);
	if (f)
		fclose(f);
	err[0] = 0;
	CHECK(plan_model_load(path, &m, err, sizeof err) < 0);
	CHECK(strstr(err, path) != NULL);
	unlink(path);
}
#endif

int main(void)
{
	test_qwen3_8b();
	test_qwen3_30b_a3b();
	test_hybrid_27b();
	test_qwen3_next();
	test_mamba_hybrids();
	test_weights_beside();
	test_fit();
	test_bad_config();
	test_cmd();
#ifdef SIXI_PLAN_GGUF
	test_gguf();
#else
	printf("GGUF input not built (no GGUF reader in this tree): GGUF cases not run\n");
#endif
	return test_done();
}
