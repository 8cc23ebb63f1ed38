/* plan — the sizing arithmetic (see plan.h for the formulas). Reading configs lives in
 * plan_config.c and plan_gguf.c, the command in plan_cmd.c.
 *
 * Every size is an exact uint64 product; a product that would pass 2^64 is reported
 * as -EOVERFLOW rather than wrapped. The only floating-point step is the headroom
 * factor, applied once to an exact integer and rounded up. */
#include "plan/plan.h"
#include "core/err.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- dtypes ---- */

static const struct {
	const char *name;
	enum plan_dtype t;
} dtype_names[] = {
	{ "fp32", PLAN_DTYPE_FP32 }, { "float32", PLAN_DTYPE_FP32 }, { "f32", PLAN_DTYPE_FP32 },
	{ "bf16", PLAN_DTYPE_BF16 }, { "bfloat16", PLAN_DTYPE_BF16 },
	{ "fp16", PLAN_DTYPE_FP16 }, { "float16", PLAN_DTYPE_FP16 }, { "f16", PLAN_DTYPE_FP16 },
	{ "half", PLAN_DTYPE_FP16 },
	{ "fp8", PLAN_DTYPE_FP8 }, { "fp8_e4m3", PLAN_DTYPE_FP8 }, { "fp8_e5m2", PLAN_DTYPE_FP8 },
};

int plan_dtype_parse(const char *s, enum plan_dtype *out)
{
	for (size_t i = 0; s && i < sizeof dtype_names / sizeof dtype_names[0]; i++)
		if (strcasecmp(s, dtype_names[i].name) == 0) {
			*out = dtype_names[i].t;
			return 0;
		}
	return -EINVAL;
}

uint32_t plan_dtype_bytes(enum plan_dtype t)
{
	switch (t) {
	case PLAN_DTYPE_FP32: return 4;
	case PLAN_DTYPE_BF16:
	case PLAN_DTYPE_FP16: return 2;
	case PLAN_DTYPE_FP8: return 1;
	}
	return 4;
}

const char *plan_dtype_name(enum plan_dtype t)
{
	switch (t) {
	case PLAN_DTYPE_FP32: return "fp32";
	case PLAN_DTYPE_BF16: return "bf16";
	case PLAN_DTYPE_FP16: return "fp16";
	case PLAN_DTYPE_FP8: return "fp8";
	}
	return "?";
}

/* ---- model ---- */

void plan_model_init(struct plan_model *m)
{
	memset(m, 0, sizeof *m);
	m->weight_dtype = PLAN_DTYPE_BF16;
	m->weight_source = "unknown";
}

int plan_model_check(const struct plan_model *m, char *err, size_t errlen)
{
	const char *name = m->name[0] ? m->name : "model";
	if (m->n_attn + m->n_swa + m->n_gdn + m->n_mamba == 0) {
		err_set(err, errlen, "%s: no attention, Gated DeltaNet or Mamba layers; nothing to size", name);
		return -EINVAL;
	}
	if ((m->n_attn || m->n_swa) && !m->mla_kv_elems &&
	    (!m->n_kv_heads || !m->head_dim_k || !m->head_dim_v)) {
		err_set(err, errlen, "%s: attention layers need KV heads and head dimensions (got %u heads, "
			 "%u/%u dims)", name, m->n_kv_heads, m->head_dim_k, m->head_dim_v);
		return -EINVAL;
	}
	if (m->n_swa && !m->swa_window_tokens) {
		err_set(err, errlen, "%s: sliding-window layers need a window size", name);
		return -EINVAL;
	}
	if (m->n_gdn && (!m->gdn_k_heads || !m->gdn_v_heads || !m->gdn_k_dim || !m->gdn_v_dim ||
			 !m->gdn_conv_kernel)) {
		err_set(err, errlen, "%s: Gated DeltaNet layers need key/value heads, head dims and the conv "
			 "kernel (got %u/%u heads, %u/%u dims, kernel %u)", name, m->gdn_k_heads, m->gdn_v_heads,
			 m->gdn_k_dim, m->gdn_v_dim, m->gdn_conv_kernel);
		return -EINVAL;
	}
	if (m->n_mamba && (!m->mamba_d_inner || !m->mamba_d_state || !m->mamba_conv_kernel)) {
		err_set(err, errlen, "%s: Mamba layers need d_inner, d_state and the conv kernel (got %u, %u, %u)",
			 name, m->mamba_d_inner, m->mamba_d_state, m->mamba_conv_kernel);
		return -EINVAL;
	}
	return 0;
}

/* ---- per-unit sizes (small products of 32-bit fields: no overflow in 64 bits) ---- */

static uint64_t kv_elems_per_layer(const struct plan_model *m)
{
	if (m->mla_kv_elems)
		return m->mla_kv_elems;
	return (uint64_t)m->n_kv_heads * ((uint64_t)m->head_dim_k + m->head_dim_v);
}

uint64_t plan_kv_bytes_per_token(const struct plan_model *m, enum plan_dtype kv)
{
	return ((uint64_t)m->n_attn + m->n_swa) * kv_elems_per_layer(m) * plan_dtype_bytes(kv);
}

uint64_t plan_ssm_bytes_per_slot(const struct plan_model *m, enum plan_dtype state)
{
	uint64_t gdn = (uint64_t)m->n_gdn * m->gdn_v_heads * m->gdn_k_dim * m->gdn_v_dim;
	uint64_t mamba = (uint64_t)m->n_mamba * m->mamba_d_inner * m->mamba_d_state;
	return (gdn + mamba) * plan_dtype_bytes(state);
}

/* Channels of the depthwise conv: it runs over q, k and v (GDN) or x, B and C (Mamba-2). */
static uint64_t gdn_conv_channels(const struct plan_model *m)
{
	return 2ull * m->gdn_k_heads * m->gdn_k_dim + (uint64_t)m->gdn_v_heads * m->gdn_v_dim;
}

static uint64_t mamba_conv_channels(const struct plan_model *m)
{
	return (uint64_t)m->mamba_d_inner + 2ull * m->mamba_n_groups * m->mamba_d_state;
}

uint64_t plan_conv_row_bytes(const struct plan_model *m, enum plan_dtype conv)
{
	return ((uint64_t)m->n_gdn * gdn_conv_channels(m) + (uint64_t)m->n_mamba * mamba_conv_channels(m)) *
	       plan_dtype_bytes(conv);
}

uint64_t plan_conv_bytes_per_slot(const struct plan_model *m, enum plan_dtype conv)
{
	/* the window keeps the last kernel - 1 pre-conv rows */
	uint64_t gdn = m->gdn_conv_kernel ? (uint64_t)m->n_gdn * (m->gdn_conv_kernel - 1) * gdn_conv_channels(m) : 0;
	uint64_t mamba = m->mamba_conv_kernel
				 ? (uint64_t)m->n_mamba * (m->mamba_conv_kernel - 1) * mamba_conv_channels(m) : 0;
	return (gdn + mamba) * plan_dtype_bytes(conv);
}

uint64_t plan_log_row_bytes(const struct plan_model *m, enum plan_dtype state)
{
	/* normalised key, value, gate and beta of one row, per V-head */
	return (uint64_t)m->n_gdn * m->gdn_v_heads * ((uint64_t)m->gdn_k_dim + m->gdn_v_dim + 2) *
	       plan_dtype_bytes(state);
}

/* ---- workloads ---- */

void plan_workload_init(struct plan_workload *w, int64_t context_tokens, int64_t sequences)
{
	memset(w, 0, sizeof *w);
	w->context_tokens = context_tokens;
	w->sequences = sequences;
	w->headroom = 1.25;
	w->kv_dtype = PLAN_DTYPE_BF16;
	w->state_dtype = PLAN_DTYPE_FP32;
	w->conv_dtype = PLAN_DTYPE_BF16;
	w->spec_slots = 1;
	w->batch_rows = 2048;
}

void plan_workload_server(struct plan_workload *w, int64_t context_tokens, int64_t sequences,
			  uint32_t log_rows, uint32_t batch_rows)
{
	plan_workload_init(w, context_tokens, sequences);
	w->headroom = 1.0;
	w->kv_dtype = PLAN_DTYPE_FP32;
	w->state_dtype = PLAN_DTYPE_FP32;
	w->conv_dtype = PLAN_DTYPE_FP32;
	w->log_rows = log_rows;
	w->batch_rows = batch_rows;
}

static int mul(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -EOVERFLOW : 0;
}

static int add(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -EOVERFLOW : 0;
}

/* fp32 working buffers of one pass: residual, normed input, attention/mixer output and a
 * temporary per row (4 x hidden), gate, up and product of the MLP (3 x ffn), and logits
 * for every row that samples (sequences x slots). Attention scores are assumed not to
 * be materialised (flash-style attention). */
static int activation_bytes(const struct plan_model *m, const struct plan_workload *w, uint64_t *out)
{
	uint64_t per_row = 4ull * m->hidden_size + 3ull * m->ffn_size, rows_logits, a, b;
	int rc = mul((uint64_t)w->sequences, w->spec_slots ? w->spec_slots : 1, &rows_logits);
	rc = rc ? rc : mul(per_row, w->batch_rows, &a);
	rc = rc ? rc : mul(rows_logits, m->vocab_size, &b);
	rc = rc ? rc : add(a, b, &a);
	rc = rc ? rc : mul(a, 4, out);
	return rc;
}

int plan_compute(const struct plan_model *m, const struct plan_workload *w, struct plan_breakdown *out,
		 char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int rc = plan_model_check(m, err, errlen);
	if (rc)
		return rc;
	if (w->context_tokens <= 0 || w->sequences <= 0) {
		err_set(err, errlen, "context (%" PRId64 " tokens) and sequences (%" PRId64 ") must be positive",
			 w->context_tokens, w->sequences);
		return -EINVAL;
	}
	if (!(w->headroom >= 1.0) || !isfinite(w->headroom)) {
		err_set(err, errlen, "headroom %g must be a finite factor of at least 1 (1.25 = 25%% extra)",
			 w->headroom);
		return -EINVAL;
	}
	if (w->spec_slots == 0) {
		err_set(err, errlen, "speculative slots per request must be at least 1");
		return -EINVAL;
	}
	uint64_t ctx = (uint64_t)w->context_tokens, seqs = (uint64_t)w->sequences;
	uint64_t per_layer = kv_elems_per_layer(m) * plan_dtype_bytes(w->kv_dtype);
	uint64_t full_pt = (uint64_t)m->n_attn * per_layer, swa_pt = (uint64_t)m->n_swa * per_layer;
	uint64_t swa_ctx = m->n_swa && m->swa_window_tokens < ctx ? m->swa_window_tokens : ctx;
	uint64_t t1, t2, kv_all;
	out->kv_per_token_bytes = full_pt + swa_pt;
	rc = mul(full_pt, ctx, &t1);
	rc = rc ? rc : mul(swa_pt, swa_ctx, &t2);
	rc = rc ? rc : add(t1, t2, &out->kv_per_sequence_bytes);
	rc = rc ? rc : mul(out->kv_per_sequence_bytes, seqs, &kv_all);
	if (!rc) {
		long double kv = ceill((long double)kv_all * (long double)w->headroom);
		if (kv >= 18446744073709551615.0L)
			rc = -EOVERFLOW;
		else
			out->kv_bytes = (uint64_t)kv;
	}

	out->ssm_per_slot_bytes = plan_ssm_bytes_per_slot(m, w->state_dtype);
	out->conv_per_slot_bytes = plan_conv_bytes_per_slot(m, w->conv_dtype);
	out->log_row_bytes = plan_log_row_bytes(m, w->state_dtype);
	rc = rc ? rc : mul(seqs, w->spec_slots, &out->state_slots);
	rc = rc ? rc : mul(out->state_slots, out->ssm_per_slot_bytes, &out->ssm_bytes);
	rc = rc ? rc : mul(out->state_slots, out->conv_per_slot_bytes, &out->conv_bytes);
	if (!rc && w->log_rows && m->n_gdn) {
		uint64_t rows, conv_extra;
		rc = mul(seqs, w->log_rows, &rows);
		rc = rc ? rc : mul(rows, out->log_row_bytes, &out->log_bytes);
		rc = rc ? rc : mul(rows, plan_conv_row_bytes(m, w->conv_dtype), &conv_extra);
		rc = rc ? rc : add(out->conv_bytes, conv_extra, &out->conv_bytes);
	}
	if (!rc && w->draft_tokens && (m->n_gdn || m->n_mamba)) {
		uint32_t kernel = m->n_gdn ? m->gdn_conv_kernel : m->mamba_conv_kernel;
		uint64_t per_seq, conv_rows = (uint64_t)w->draft_tokens + (kernel >= 2 ? kernel - 2 : 0);
		rc = mul(w->draft_tokens, out->ssm_per_slot_bytes, &per_seq);
		rc = rc ? rc : mul(conv_rows, plan_conv_row_bytes(m, w->conv_dtype), &t1);
		rc = rc ? rc : add(per_seq, t1, &per_seq);
		rc = rc ? rc : mul(per_seq, seqs, &out->draft_state_bytes);
	}
	rc = rc ? rc : activation_bytes(m, w, &out->activation_bytes);
	out->weights_bytes = m->weight_bytes;
	uint64_t total = out->weights_bytes;
	rc = rc ? rc : add(total, out->kv_bytes, &total);
	rc = rc ? rc : add(total, out->ssm_bytes, &total);
	rc = rc ? rc : add(total, out->conv_bytes, &total);
	rc = rc ? rc : add(total, out->draft_state_bytes, &total);
	rc = rc ? rc : add(total, out->log_bytes, &total);
	rc = rc ? rc : add(total, out->activation_bytes, &total);
	if (rc) {
		err_set(err, errlen, "%s: %" PRId64 " tokens x %" PRId64 " sequences needs more than 2^64 bytes; "
			 "use a smaller context or fewer sequences", m->name[0] ? m->name : "model",
			 w->context_tokens, w->sequences);
		return rc;
	}
	out->total_bytes = total;
	return 0;
}

int plan_server_breakdown(const struct plan_model *m, int64_t context_tokens, int64_t sequences,
			  uint32_t log_rows, uint32_t batch_rows, struct plan_breakdown *out, char *err,
			  size_t errlen)
{
	struct plan_workload w;
	plan_workload_server(&w, context_tokens, sequences, log_rows, batch_rows);
	return plan_compute(m, &w, out, err, errlen);
}

/* ---- what fits: totals grow with context and with sequences, so bisect ---- */

static bool fits(const struct plan_model *m, const struct plan_workload *w, uint64_t memory_bytes)
{
	struct plan_breakdown b;
	char err[8];
	return plan_compute(m, w, &b, err, sizeof err) == 0 && b.total_bytes <= memory_bytes;
}

static int64_t bisect(const struct plan_model *m, const struct plan_workload *w0, uint64_t memory_bytes,
		      int64_t max, bool vary_context)
{
	struct plan_workload w = *w0;
	int64_t lo = 0, hi = max; /* invariant: lo fits (or is 0), anything above hi does not */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;
		*(vary_context ? &w.context_tokens : &w.sequences) = mid;
		if (fits(m, &w, memory_bytes))
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

int64_t plan_fit_context(const struct plan_model *m, const struct plan_workload *w, uint64_t memory_bytes,
			 int64_t max_tokens)
{
	return max_tokens > 0 ? bisect(m, w, memory_bytes, max_tokens, true) : 0;
}

int64_t plan_fit_sequences(const struct plan_model *m, const struct plan_workload *w, uint64_t memory_bytes,
			   int64_t max_sequences)
{
	return max_sequences > 0 ? bisect(m, w, memory_bytes, max_sequences, false) : 0;
}

/* ---- SGLang's pool ---- */

uint64_t plan_sglang_mamba_pool_bytes(const struct plan_model *m, uint64_t slots, uint32_t spec_slots,
				      uint32_t draft_tokens, enum plan_dtype state, enum plan_dtype conv)
{
	uint64_t ssm = plan_ssm_bytes_per_slot(m, state), conv_slot = plan_conv_bytes_per_slot(m, conv);
	uint64_t total = (slots + 1) * (ssm + conv_slot);
	if (draft_tokens) {
		uint64_t running = slots / (spec_slots ? spec_slots : 1);
		uint32_t kernel = m->n_gdn ? m->gdn_conv_kernel : m->mamba_conv_kernel;
		uint64_t conv_rows = (uint64_t)draft_tokens + (kernel >= 2 ? kernel - 2 : 0);
		total += (running + 1) * draft_tokens * ssm;
		total += (running + 1) * conv_rows * plan_conv_row_bytes(m, conv);
	}
	return total;
}

const char *plan_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}
