/* test_server_sim — the simulated device: preset costs, JSON files, sizing and
 * its suggestions, deterministic logits independent of the batch, pass timing. */
#include "test.h"
#include "core/buf.h"
#include "core/clock.h"
#include "server/engine.h"
#include "server/sim.h"

#include <errno.h>
#include <unistd.h>

static int write_tmp(char *path, size_t n, const char *text)
{
	snprintf(path, n, "/tmp/test_server_sim_XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, text, strlen(text));
	close(fd);
	return w == (ssize_t)strlen(text) ? 0 : -1;
}

int main(void)
{
	struct sim_config c;
	CHECK_EQ_INT(sim_config_preset("thor", &c), 0);
	/* 15.8 GB at 186 GB/s: ~85 ms per pass; 16 rows add 19 ms. */
	CHECK_NEAR(sim_pass_ns(&c, 0, 0) / 1e6, 84.9, 0.01);
	CHECK_NEAR(sim_pass_ns(&c, 16, 0) / 1e6, 104.1, 0.01);
	CHECK_NEAR(sim_pass_ns(&c, 0, 512) / 1e6, 84.9 + 384, 0.01);
	struct sim_config g;
	CHECK_EQ_INT(sim_config_preset("gb10", &g), 0);
	CHECK_NEAR(sim_pass_ns(&g, 0, 0) / 1e6, 15.8e9 / 273e9 * 1e3, 1e-9);
	CHECK_EQ_INT(sim_config_preset("h100", &g), -ENOENT);

	/* JSON files: fields override the base; unknown fields and bad values are errors. */
	char path[64], err[512];
	struct sim_config f;
	if (CHECK(write_tmp(path, sizeof path, "{\"base\":\"gb10\",\"bandwidth_gbps\":100,\"slots\":8,\"context\":4096}") == 0)) {
		CHECK_EQ_INT(sim_config_load(path, &f, err, sizeof err), 0);
		CHECK_NEAR(f.bandwidth_bytes_per_s, 100e9, 1e-12);
		CHECK_EQ_INT(f.n_slots, 8);
		CHECK_EQ_INT(f.n_ctx, 4096);
		CHECK_NEAR(f.decode_row_ns, 0.9e6, 1e-12); /* from gb10 */
		unlink(path);
	}
	if (CHECK(write_tmp(path, sizeof path, "{\"bandwith_gbps\":100}") == 0)) {
		CHECK_EQ_INT(sim_config_load(path, &f, err, sizeof err), -EINVAL);
		CHECK(strstr(err, "unknown field \"bandwith_gbps\"") != NULL);
		unlink(path);
	}
	if (CHECK(write_tmp(path, sizeof path, "{\"decode_row_ms\":\"fast\"}") == 0)) {
		CHECK_EQ_INT(sim_config_load(path, &f, err, sizeof err), -EINVAL);
		CHECK(strstr(err, "decode_row_ms") != NULL);
		unlink(path);
	}
	CHECK_EQ_INT(sim_config_load("/nonexistent/x.json", &f, err, sizeof err), -EINVAL);

	/* Sizing: the default fits Thor; 64 x 262144 does not, and the suggestions fit exactly. */
	CHECK_EQ_INT(sim_fit_check(&c, c.mem_bytes * 0.95, err, sizeof err), 0);
	struct sim_config big = c;
	big.n_slots = 64;
	big.n_ctx = 262144;
	double limit = 100e9;
	CHECK_EQ_INT(sim_fit_check(&big, limit, err, sizeof err), -ENOMEM);
	long long ctx = 0, slots = 0;
	const char *p1 = strstr(err, "--parallel 64 --context ");
	const char *p2 = strstr(err, "or --parallel ");
	CHECK(p1 && sscanf(p1, "--parallel 64 --context %lld", &ctx) == 1);
	CHECK(p2 && sscanf(p2, "or --parallel %lld --context 262144", &slots) == 1);
	CHECK(ctx > 0 && sim_size_of(&c, 64, ctx).total <= limit && sim_size_of(&c, 64, ctx + 256).total > limit);
	CHECK(slots > 0 && sim_size_of(&c, slots, 262144).total <= limit &&
	      sim_size_of(&c, slots + 1, 262144).total > limit);

	/* The engine. */
	c.time_scale = 100;
	c.n_slots = 4;
	struct engine *e = sim_engine_create(&c);
	if (!CHECK(e != NULL))
		return test_done();
	int32_t ids[8];
	size_t n = 0;
	CHECK_EQ_INT(e->ops->tokenize(e, "Hi!", 3, ids, 8, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(ids[2], '!');
	struct buf b;
	buf_init(&b);
	CHECK_EQ_INT(e->ops->detokenize(e, 'x', &b), 0);
	CHECK_EQ_STR(b.data, "x");
	buf_finish(&b);
	int s0 = e->ops->slot_alloc(e), s1 = e->ops->slot_alloc(e);
	CHECK(s0 >= 0 && s1 >= 0 && s0 != s1);
	CHECK(e->ops->slot_alloc(e) >= 0 && e->ops->slot_alloc(e) >= 0);
	CHECK_EQ_INT(e->ops->slot_alloc(e), -ENOSPC);
	float *la = malloc(sizeof(float) * 256 * 3), *lb = malloc(sizeof(float) * 256);
	struct engine_row rows[3] = { { s0, 5, 0, false }, { s0, 77, 1, true }, { s1, 1234, 9, true } };
	int64_t t0 = clock_now_ns();
	CHECK_EQ_INT(e->ops->forward(e, rows, 3, la), 0);
	double ms = (double)(clock_now_ns() - t0) / 1e6;
	CHECK(ms >= sim_pass_ns(&c, 2, 1) / 1e6 / 100 * 0.99);
	/* The same row alone gives the same logits; only printable bytes can win. */
	struct engine_row alone = { s1, 1234, 9, true };
	CHECK_EQ_INT(e->ops->forward(e, &alone, 1, lb), 0);
	CHECK(memcmp(la + 256, lb, 256 * sizeof(float)) == 0);
	CHECK(memcmp(la, la + 256, 256 * sizeof(float)) != 0);
	CHECK(lb[10] < -1e29f && lb['a'] > -1);
	struct engine_row bad = { s0, 5, 1 << 30, true };
	CHECK_EQ_INT(e->ops->forward(e, &bad, 1, lb), -EINVAL);
	e->ops->slot_free(e, s1);
	bad = (struct engine_row){ s1, 5, 0, true };
	CHECK_EQ_INT(e->ops->forward(e, &bad, 1, lb), -EINVAL); /* a freed slot */
	CHECK_EQ_INT(e->ops->slot_alloc(e), s1);
	CHECK_EQ_INT(e->ops->host_row_ns(e), (int64_t)(0.5e6 / 100));
	CHECK_EQ_INT(atomic_load(&e->state_copies), 0);
	free(la);
	free(lb);
	engine_destroy(e);
	return test_done();
}
