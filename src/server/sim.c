/* sim — see sim.h. The presets' numbers:
 * thor: 15.8 GB of 4-bit weights over ~186 GB/s of usable bandwidth = 85 ms per
 *   pass; 1.2 ms per extra decode row (so 16 streams take ~104 ms per pass, as
 *   measured); 0.75 ms per prefill row (~1,300 prompt tokens/s, so a 17.8k-token
 *   document takes ~14 s); 0.5 ms of host time per sampled row; 128 GB of
 *   memory; the 27B hybrid's 64 KiB of KV per token and ~170 MiB of recurrent
 *   state, conv state and an 8-row rollback log per sequence.
 * gb10: the same model at 273 GB/s (58 ms per pass), rows a little cheaper.
 * What it does not model: compute-bound prefill curves, speculative decoding,
 * memory bandwidth shared with the host.
 * Scripted texts (sim.h) make a vote's samples produce known answers of known lengths; the
 * fork of a slot only copies its script position (there is no real state). */
#include "server/sim.h"
#include "core/err.h"
#include "server/engine.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_BYTE_TOKENS 256 /* ids that can be generated: one per byte */

static const struct sim_config presets[] = {
	{ .name = "sim-thor", .weight_bytes = 15.8e9, .bandwidth_bytes_per_s = 186e9, .decode_row_ns = 1.2e6,
	  .prefill_row_ns = 0.75e6, .host_row_ns = 0.5e6, .n_ctx = 32768, .n_slots = 32, .time_scale = 1,
	  .mem_bytes = 128e9, .kv_bytes_per_token = 65536, .state_bytes_per_seq = 170.0 * 1048576,
	  .activation_bytes = 1.5e9 },
	{ .name = "sim-gb10", .weight_bytes = 15.8e9, .bandwidth_bytes_per_s = 273e9, .decode_row_ns = 0.9e6,
	  .prefill_row_ns = 0.5e6, .host_row_ns = 0.4e6, .n_ctx = 32768, .n_slots = 32, .time_scale = 1,
	  .mem_bytes = 128e9, .kv_bytes_per_token = 65536, .state_bytes_per_seq = 170.0 * 1048576,
	  .activation_bytes = 1.5e9 },
};

const char *sim_preset_names(void) { return "thor, gb10"; }

void sim_config_finish(struct sim_config *c)
{
	for (int i = 0; i < c->n_script; i++)
		free(c->script[i]);
	c->n_script = 0;
}

/* "script": 1..SIM_SCRIPT_MAX non-empty strings. 0 or -EINVAL with err set. */
static int load_script(const char *path, const cJSON *v, struct sim_config *out, char *err, size_t errlen)
{
	int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
	if (n < 1 || n > SIM_SCRIPT_MAX) {
		err_set(err, errlen, "%s: \"script\" must be an array of 1 to %d strings (the texts samples produce)",
			 path, SIM_SCRIPT_MAX);
		return -EINVAL;
	}
	for (const cJSON *it = v->child; it; it = it->next) {
		if (!cJSON_IsString(it) || !it->valuestring[0]) {
			err_set(err, errlen, "%s: \"script\"[%d] must be a non-empty string", path, out->n_script);
			sim_config_finish(out);
			return -EINVAL;
		}
		out->script[out->n_script] = strdup(it->valuestring);
		if (!out->script[out->n_script]) {
			err_set(err, errlen, "out of memory");
			sim_config_finish(out);
			return -ENOMEM;
		}
		out->n_script++;
	}
	return 0;
}

int sim_config_preset(const char *name, struct sim_config *out)
{
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
		if (strcmp(name, presets[i].name + 4) == 0) {
			*out = presets[i];
			return 0;
		}
	return -ENOENT;
}

int sim_config_load(const char *path, struct sim_config *out, char *err, size_t errlen)
{
	cJSON *root = json_parse_file(path, err, errlen);
	if (!root)
		return -EINVAL;
	int rc = -EINVAL;
	if (!cJSON_IsObject(root)) {
		err_set(err, errlen, "%s: expected a JSON object of simulator fields", path);
		goto out;
	}
	const char *base = json_get_str(root, "base");
	if (sim_config_preset(base ? base : "thor", out) != 0) {
		err_set(err, errlen, "%s: base \"%s\" is not a preset (%s)", path, base, sim_preset_names());
		goto out;
	}
	const char *slash = strrchr(path, '/');
	snprintf(out->name, sizeof out->name, "sim-%s", slash ? slash + 1 : path);
	static const struct {
		const char *key;
		size_t off;
		double scale; /* file unit -> struct unit */
		double min, max;
	} fields[] = {
		{ "weight_gb", offsetof(struct sim_config, weight_bytes), 1e9, 0, 1e4 },
		{ "bandwidth_gbps", offsetof(struct sim_config, bandwidth_bytes_per_s), 1e9, 1e-3, 1e5 },
		{ "decode_row_ms", offsetof(struct sim_config, decode_row_ns), 1e6, 0, 1e4 },
		{ "prefill_row_ms", offsetof(struct sim_config, prefill_row_ns), 1e6, 0, 1e4 },
		{ "host_row_ms", offsetof(struct sim_config, host_row_ns), 1e6, 0, 1e4 },
		{ "memory_gb", offsetof(struct sim_config, mem_bytes), 1e9, 0, 1e6 },
		{ "kv_kib_per_token", offsetof(struct sim_config, kv_bytes_per_token), 1024, 0, 1e6 },
		{ "state_mib_per_seq", offsetof(struct sim_config, state_bytes_per_seq), 1048576, 0, 1e6 },
		{ "activation_gb", offsetof(struct sim_config, activation_bytes), 1e9, 0, 1e4 },
	};
	for (const cJSON *it = root->child; it; it = it->next) {
		bool known = strcmp(it->string, "base") == 0;
		if (strcmp(it->string, "script") == 0) {
			if (out->n_script > 0 || load_script(path, it, out, err, errlen) != 0)
				goto out;
			continue;
		}
		for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !known; i++) {
			if (strcmp(it->string, fields[i].key) != 0)
				continue;
			known = true;
			if (!cJSON_IsNumber(it) || it->valuedouble < fields[i].min || it->valuedouble > fields[i].max) {
				err_set(err, errlen, "%s: \"%s\" must be a number in [%g, %g]", path, it->string,
					 fields[i].min, fields[i].max);
				goto out;
			}
			*(double *)((char *)out + fields[i].off) = it->valuedouble * fields[i].scale;
		}
		if (!known && (strcmp(it->string, "context") == 0 || strcmp(it->string, "slots") == 0)) {
			known = true;
			if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 1 << 22) {
				err_set(err, errlen, "%s: \"%s\" must be an integer in [1, 4194304]", path, it->string);
				goto out;
			}
			if (it->string[0] == 'c')
				out->n_ctx = (int32_t)it->valuedouble;
			else
				out->n_slots = (int32_t)it->valuedouble;
		}
		if (!known) {
			err_set(err, errlen,
				 "%s: unknown field \"%s\" (known: base, weight_gb, bandwidth_gbps, decode_row_ms, "
				 "prefill_row_ms, host_row_ms, context, slots, memory_gb, kv_kib_per_token, "
				 "state_mib_per_seq, activation_gb, script)",
				 path, it->string);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc != 0)
		sim_config_finish(out);
	cJSON_Delete(root);
	return rc;
}

double sim_pass_ns(const struct sim_config *c, size_t decode_rows, size_t prefill_rows)
{
	return c->weight_bytes / c->bandwidth_bytes_per_s * 1e9 + (double)decode_rows * c->decode_row_ns +
	       (double)prefill_rows * c->prefill_row_ns;
}

/* ---- sizing ---- */

struct sim_size sim_size_of(const struct sim_config *c, int64_t n_slots, int64_t n_ctx)
{
	struct sim_size s = { .weights = c->weight_bytes,
			      .kv = (double)n_slots * (double)n_ctx * c->kv_bytes_per_token,
			      .state = (double)n_slots * c->state_bytes_per_seq,
			      .activations = c->activation_bytes };
	s.total = s.weights + s.kv + s.state + s.activations;
	return s;
}

int sim_fit_check(const struct sim_config *c, double mem_limit_bytes, char *msg, size_t msglen)
{
	struct sim_size s = sim_size_of(c, c->n_slots, c->n_ctx);
	if (s.total <= mem_limit_bytes)
		return 0;
	double fixed = s.weights + s.activations;
	double per_slot_state = c->state_bytes_per_seq;
	/* Largest context for the requested slots, and most slots for the requested context. */
	double left = mem_limit_bytes - fixed - (double)c->n_slots * per_slot_state;
	int64_t ctx_fit = left > 0 && c->kv_bytes_per_token > 0
				  ? (int64_t)(left / ((double)c->n_slots * c->kv_bytes_per_token))
				  : 0;
	double per_slot = per_slot_state + (double)c->n_ctx * c->kv_bytes_per_token;
	int64_t slots_fit = mem_limit_bytes > fixed ? (int64_t)((mem_limit_bytes - fixed) / per_slot) : 0;
	ctx_fit = ctx_fit / 256 * 256; /* round down to a tidy multiple */
	char a[96], b[96];
	if (ctx_fit > 0)
		snprintf(a, sizeof a, "--parallel %d --context %lld", c->n_slots, (long long)ctx_fit);
	else
		snprintf(a, sizeof a, "no context fits %d sequences", c->n_slots);
	if (slots_fit > 0)
		snprintf(b, sizeof b, "--parallel %lld --context %d", (long long)slots_fit, c->n_ctx);
	else
		snprintf(b, sizeof b, "no sequence of context %d fits", c->n_ctx);
	snprintf(msg, msglen,
		 "%d sequences x %d context need %.2f GB (weights %.2f, KV %.2f, state %.2f, activations %.2f) "
		 "but the limit is %.2f GB; configurations that fit: %s, or %s",
		 c->n_slots, c->n_ctx, s.total / 1e9, s.weights / 1e9, s.kv / 1e9, s.state / 1e9,
		 s.activations / 1e9, mem_limit_bytes / 1e9, a, b);
	return -ENOMEM;
}

/* ---- the engine ---- */

struct sim_engine {
	struct engine base;
	struct sim_config cfg;
	unsigned char *used; /* (n_slots) 1 = allocated */
	int32_t *script_of;  /* (n_slots) script text of the slot */
	int32_t *n_out;      /* (n_slots) rows with logits since allocation */
	int32_t *n_forks;    /* (n_slots) slots forked from this one */
	size_t *script_len;  /* (cfg.n_script) */
};

static int sim_tokenize(struct engine *e, const char *text, size_t len, int32_t *ids, size_t cap, size_t *n)
{
	for (size_t i = 0; i < len && i < cap; i++)
		ids[i] = (unsigned char)text[i];
	*n = len;
	return 0;
}

static int sim_detokenize(struct engine *e, int32_t id, struct buf *out)
{
	if (id >= 0 && id < SIM_BYTE_TOKENS) {
		char ch = (char)id;
		return buf_append(out, &ch, 1);
	}
	return buf_printf(out, "<%d>", id);
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static int sim_forward(struct engine *e, const struct engine_row *rows, size_t n, float *logits)
{
	struct sim_engine *s = (struct sim_engine *)e;
	int64_t start = clock_now_ns();
	size_t n_dec = 0, n_pre = 0;
	for (size_t i = 0; i < n; i++) {
		const struct engine_row *r = &rows[i];
		if (r->slot < 0 || r->slot >= e->n_slots || !s->used[r->slot] || r->pos < 0 || r->pos >= e->n_ctx ||
		    r->token < 0 || r->token >= e->n_vocab)
			return -EINVAL;
		if (!r->want_logits) {
			n_pre++;
			continue;
		}
		float *l = logits + n_dec * SIM_BYTE_TOKENS;
		if (s->cfg.n_script > 0) {
			int t = s->script_of[r->slot] % s->cfg.n_script;
			int32_t k = s->n_out[r->slot]++;
			int next = (size_t)k < s->script_len[t] ? (unsigned char)s->cfg.script[t][k] : 0;
			for (int j = 0; j < SIM_BYTE_TOKENS; j++)
				l[j] = j == next ? 0.0f : -1e30f;
			n_dec++;
			continue;
		}
		/* Printable ASCII only, so generated text is valid UTF-8 and JSON-safe. */
		uint64_t h = mix64((uint64_t)r->token * 0x9E3779B97F4A7C15ULL ^ (uint64_t)r->pos * 0xD6E8FEB86659FD93ULL);
		for (int j = 0; j < SIM_BYTE_TOKENS; j++) {
			if (j < 32 || j > 126) {
				l[j] = -1e30f;
				continue;
			}
			l[j] = (float)(mix64(h + (uint64_t)j) >> 40) * (4.0f / 16777216.0f);
		}
		l[' '] += 1.5f; /* word-like output */
		n_dec++;
	}
	double ns = sim_pass_ns(&s->cfg, n_dec, n_pre) / s->cfg.time_scale;
	int64_t left = (int64_t)ns - (clock_now_ns() - start);
	if (left > 0)
		clock_sleep_ns(left);
	return 0;
}

static int sim_slot_alloc(struct engine *e)
{
	struct sim_engine *s = (struct sim_engine *)e;
	for (int i = 0; i < e->n_slots; i++)
		if (!s->used[i]) {
			s->used[i] = 1;
			s->script_of[i] = 0;
			s->n_out[i] = 0;
			s->n_forks[i] = 0;
			return i;
		}
	return -ENOSPC;
}

static int sim_slot_copy(struct engine *e, int dst, int src)
{
	struct sim_engine *s = (struct sim_engine *)e;
	if (dst < 0 || dst >= e->n_slots || src < 0 || src >= e->n_slots || !s->used[dst] || !s->used[src])
		return -EINVAL;
	s->script_of[dst] = s->script_of[src] + ++s->n_forks[src];
	s->n_out[dst] = s->n_out[src];
	s->n_forks[dst] = 0;
	return 0;
}

static void sim_slot_free(struct engine *e, int slot)
{
	struct sim_engine *s = (struct sim_engine *)e;
	if (slot >= 0 && slot < e->n_slots)
		s->used[slot] = 0;
}

static int64_t sim_host_row_ns(struct engine *e)
{
	struct sim_engine *s = (struct sim_engine *)e;
	return (int64_t)(s->cfg.host_row_ns / s->cfg.time_scale);
}

static void sim_destroy(struct engine *e)
{
	struct sim_engine *s = (struct sim_engine *)e;
	free(s->used);
	free(s->script_of);
	free(s->n_out);
	free(s->n_forks);
	free(s->script_len);
	sim_config_finish(&s->cfg);
	free(s);
}

static const struct engine_ops sim_ops = {
	.tokenize = sim_tokenize,
	.detokenize = sim_detokenize,
	.forward = sim_forward,
	.slot_alloc = sim_slot_alloc,
	.slot_free = sim_slot_free,
	.slot_copy = sim_slot_copy,
	.host_row_ns = sim_host_row_ns,
	.destroy = sim_destroy,
};

struct engine *sim_engine_create(const struct sim_config *c)
{
	if (c->n_slots < 1 || c->n_ctx < 2 || c->time_scale <= 0) {
		errno = EINVAL;
		return NULL;
	}
	struct sim_engine *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->cfg = *c;
	s->cfg.n_script = 0;
	s->used = calloc((size_t)c->n_slots, 1);
	s->script_of = calloc((size_t)c->n_slots, sizeof(int32_t));
	s->n_out = calloc((size_t)c->n_slots, sizeof(int32_t));
	s->n_forks = calloc((size_t)c->n_slots, sizeof(int32_t));
	s->script_len = calloc(SIM_SCRIPT_MAX, sizeof(size_t));
	bool ok = s->used && s->script_of && s->n_out && s->n_forks && s->script_len;
	for (int i = 0; ok && i < c->n_script; i++) {
		s->cfg.script[i] = strdup(c->script[i]);
		ok = s->cfg.script[i] != NULL;
		if (ok) {
			s->cfg.n_script = i + 1;
			s->script_len[i] = strlen(c->script[i]);
		}
	}
	if (!ok) {
		sim_destroy(&s->base);
		errno = ENOMEM;
		return NULL;
	}
	s->base.ops = &sim_ops;
	s->base.name = s->cfg.name;
	s->base.n_vocab = 262144; /* any id a real vocabulary uses is accepted in prompts */
	s->base.n_logits = SIM_BYTE_TOKENS;
	s->base.n_sample = SIM_BYTE_TOKENS;
	s->base.eos = s->cfg.n_script > 0 ? 0 : -1;
	s->base.n_ctx = c->n_ctx;
	s->base.n_slots = c->n_slots;
	s->base.time_scale = c->time_scale;
	s->base.cost_base_ns = sim_pass_ns(c, 0, 0); /* the cost model is linear: the fit can be exact */
	s->base.cost_decode_row_ns = c->decode_row_ns;
	s->base.cost_prompt_row_ns = c->prefill_row_ns;
	atomic_init(&s->base.state_copies, 0);
	return &s->base;
}
