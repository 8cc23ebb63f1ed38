/* plan_cmd — `sixi-bench plan`: argument parsing, the report (text or JSON) and the
 * server settings derived from a struct plan_breakdown.
 *
 * Server flags it prints, and why:
 *   vLLM      --kv-cache-memory-bytes = KV (with headroom) + recurrent state (slots,
 *             conv windows, per-draft-token states), because vLLM keeps hybrid models'
 *             Mamba/GDN state in the same KV pool;
 *             --max-num-seqs = sequences; a --gpu-memory-utilization only for the
 *             start-up check (it compares free memory with that fraction even when
 *             given a byte budget).
 *   SGLang    --max-running-requests = sequences, --max-mamba-cache-size = sequences x
 *             slots per request (it clamps running requests to pool / slots; a draft
 *             model takes 5), --mamba-ssm-dtype from --state-dtype, --max-total-tokens.
 *   llama.cpp -c = context x sequences (the context is shared by the -np slots).
 * The report is assembled in memory and written at the end, so an error never leaves
 * half a report on stdout. */
#include "plan/plan_cmd.h"
#include "core/err.h"
#include "plan/plan.h"
#include "core/args.h"
#include "core/buf.h"
#include "core/log.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_FITS 0
#define EXIT_NO_FIT 1
#define EXIT_USAGE 2

/* The largest fraction the reference notes found safe on a unified-memory machine. */
#define UNIFIED_SAFE_FRACTION 0.85

static const char usage[] =
	"usage: sixi-bench plan --model CONFIG_OR_GGUF --context N --sequences S [options]\n";
static const char epilog[] = "\nexit: 0 fits (or no --memory), 1 does not fit --memory, 2 bad arguments or model\n";

struct opts {
	const char *model;
	int64_t context, sequences;      /* 0: not given (both are required) */
	struct plan_workload w;
	uint64_t memory_bytes, weights_bytes;
	double fraction;                 /* 0: not given (then 0.9, vLLM's default) */
	bool json, have_fraction;
};

/* ---- arguments: one table, each row naming the field it sets ---- */

static int dtype(const char *flag, const char *v, bool allow_fp8, void *field, char *err, size_t errlen)
{
	enum plan_dtype t;
	if (plan_dtype_parse(v, &t) || (!allow_fp8 && t == PLAN_DTYPE_FP8)) {
		err_set(err, errlen, "%s: '%s' is not a supported type (use %s)", flag, v,
			 allow_fp8 ? "bf16, fp16, fp8 or fp32" : "fp32, bf16 or fp16");
		return -EINVAL;
	}
	*(enum plan_dtype *)field = t;
	return 0;
}

static int kv_dtype(const char *flag, const char *v, void *field, char *err, size_t errlen)
{
	return dtype(flag, v, true, field, err, errlen);
}

static int state_dtype(const char *flag, const char *v, void *field, char *err, size_t errlen)
{
	return dtype(flag, v, false, field, err, errlen);
}

/* A size of more than 0 bytes. */
static int size_above_zero(const char *flag, const char *v, void *field, char *err, size_t errlen)
{
	uint64_t b;
	int rc = args_bytes(flag, v, &b, err, errlen);
	if (!rc && b == 0) {
		err_set(err, errlen, "%s: must be more than 0 bytes (e.g. 128GiB)", flag);
		rc = -EINVAL;
	}
	if (!rc)
		*(uint64_t *)field = b;
	return rc;
}

#define O struct opts
static const struct args_opt options[] = {
	ARGS_STRING_OPT("--model", "PATH", O, model, 0, "config.json, a model directory, or a .gguf file"),
	ARGS_INT_OPT("--context", "N", O, context, 1, 1099511627776.0, 0, "tokens per sequence"),
	ARGS_INT_OPT("--sequences", "S", O, sequences, 1, 1073741824.0, 0, "concurrent sequences (requests)"),
	ARGS_DOUBLE_OPT("--headroom", "F", O, w.headroom, 1.0, 100.0, 0, "KV cache factor, >= 1 (default 1.25)"),
	ARGS_CALL_OPT("--kv-dtype", "T", kv_dtype, O, w.kv_dtype, 0, "bf16 | fp16 | fp8 | fp32 (default bf16)"),
	ARGS_CALL_OPT("--state-dtype", "T", state_dtype, O, w.state_dtype, 0, "recurrent state: fp32 | bf16 | fp16 (default fp32)"),
	ARGS_CALL_OPT("--conv-dtype", "T", state_dtype, O, w.conv_dtype, 0, "conv windows: bf16 | fp16 | fp32 (default bf16)"),
	ARGS_INT_OPT("--spec-slots", "N", O, w.spec_slots, 1, 64, 0, "state slots per request; 5 with a draft model (default 1)"),
	ARGS_INT_OPT("--draft-tokens", "N", O, w.draft_tokens, 0, 256, 0,
		     "draft width, for SGLang's intermediate state cache (default 0)"),
	ARGS_CALL_OPT("--memory", "SIZE", size_above_zero, O, memory_bytes, 0,
		      "memory budget, e.g. 128GiB: check the fit and what fits"),
	ARGS_DOUBLE_OPT("--gpu-memory-utilization", "F", O, fraction, 0.01, 1.0, 0,
			"the fraction your server is given (vLLM default 0.9), to check"),
	ARGS_CALL_OPT("--weights", "SIZE", size_above_zero, O, weights_bytes, 0,
		      "weight bytes, overriding the files or the estimate"),
	ARGS_FLAG_OPT("--json", O, json, true, 0, "machine-readable output"),
	ARGS_TABLE_END,
};
#undef O
static const struct args_spec spec = { .prog = "sixi-bench plan", .usage = usage, .epilog = epilog, .opts = options };

static int parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	plan_workload_init(&o->w, 0, 0);
	int rc = args_parse(&spec, 0, argc - 1, argv + 1, o, NULL, NULL, err, errlen);
	if (rc)
		return rc;
	o->have_fraction = o->fraction > 0;
	if (!o->have_fraction)
		o->fraction = 0.9;
	if (!o->model || !o->context || !o->sequences) {
		err_set(err, errlen, "missing %s%s%s (see --help)", o->model ? "" : "--model ",
			 o->context ? "" : "--context ", o->sequences ? "" : "--sequences");
		return -EINVAL;
	}
	o->w.context_tokens = o->context;
	o->w.sequences = o->sequences;
	return 0;
}

/* ---- formatting helpers ---- */

static const char *commas(uint64_t v, char *buf, size_t len)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
	size_t j = 0;
	for (int i = 0; i < n && j + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = tmp[i];
	}
	buf[j] = 0;
	return buf;
}

static double gib(uint64_t b) { return (double)b / 1073741824.0; }

/* Smallest fraction, in steps of 0.05, that covers need bytes of memory. */
static double fraction_for(uint64_t need, uint64_t memory)
{
	double f = ceil((double)need / (double)memory * 20.0 - 1e-9) / 20.0;
	return f < 0.05 ? 0.05 : f;
}

static const char *sglang_dtype(enum plan_dtype t)
{
	return t == PLAN_DTYPE_FP32 ? "float32" : t == PLAN_DTYPE_BF16 ? "bfloat16" : "float16";
}

struct report {
	struct plan_model m;
	struct plan_breakdown b;
	const struct opts *o;
	bool hybrid, fits;
	int64_t fit_context, fit_sequences, context_cap;
	int64_t fit_context_one;   /* largest context for a single sequence */
	uint64_t sglang_pool, sglang_slots, vllm_kv_bytes, llama_ctx;
	struct buf warnings; /* one warning per line */
};

static void warn(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct report *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = buf_vprintf(&r->warnings, fmt, ap);
	va_end(ap);
	rc = rc ? rc : buf_puts(&r->warnings, "\n");
	(void)rc;
}

static void analyse(struct report *r)
{
	const struct opts *o = r->o;
	r->hybrid = r->m.n_gdn || r->m.n_mamba;
	r->sglang_slots = r->b.state_slots;
	r->sglang_pool = r->hybrid ? plan_sglang_mamba_pool_bytes(&r->m, r->sglang_slots, o->w.spec_slots,
								   o->w.draft_tokens, o->w.state_dtype,
								   o->w.conv_dtype) : 0;
	r->vllm_kv_bytes = r->b.kv_bytes + r->b.ssm_bytes + r->b.conv_bytes + r->b.draft_state_bytes;
	r->llama_ctx = (uint64_t)o->context * (uint64_t)o->sequences;
	r->context_cap = r->m.max_context_tokens ? (int64_t)r->m.max_context_tokens : INT64_C(1) << 31;
	r->fits = true;
	if (o->w.spec_slots > 1 && !r->hybrid)
		warn(r, "--spec-slots %u only matters for models with recurrent state; this model has none",
		     o->w.spec_slots);
	if (o->w.draft_tokens && r->hybrid && o->w.spec_slots < 5)
		warn(r, "with a draft model SGLang needs 5 state slots per request (it clamps running requests "
		     "to the pool divided by 5); add --spec-slots 5");
	if (r->m.max_context_tokens && (uint64_t)o->context > r->m.max_context_tokens)
		warn(r, "--context %" PRId64 " is beyond the model's max_position_embeddings (%" PRIu64 ")",
		     o->context, r->m.max_context_tokens);
	if (!r->b.weights_bytes)
		warn(r, "weight bytes unknown (no checkpoint beside the config and no estimate); pass --weights");
	if (!o->memory_bytes)
		return;
	r->fits = r->b.total_bytes <= o->memory_bytes;
	r->fit_context = plan_fit_context(&r->m, &o->w, o->memory_bytes, r->context_cap);
	r->fit_sequences = plan_fit_sequences(&r->m, &o->w, o->memory_bytes, INT64_C(1) << 30);
	struct plan_workload one = o->w;
	one.sequences = 1;
	r->fit_context_one = plan_fit_context(&r->m, &one, o->memory_bytes, r->context_cap);

	/* what a memory fraction does on a machine whose GPU memory is the system's RAM */
	uint64_t reserved = (uint64_t)(o->fraction * (double)o->memory_bytes);
	double need_f = fraction_for(r->b.total_bytes, o->memory_bytes);
	if (reserved > r->b.total_bytes && reserved - r->b.total_bytes > o->memory_bytes / 10)
		warn(r, "a memory fraction of %.2f reserves %.1f GiB of %.1f GiB before the first request; this "
		     "workload needs %.1f GiB. On unified memory (DGX Spark/GB10, Jetson, Apple) the rest is the "
		     "operating system's RAM: give vLLM --kv-cache-memory-bytes %" PRIu64 " and a fraction of "
		     "%.2f, SGLang --mem-fraction-static %.2f", o->fraction, gib(reserved), gib(o->memory_bytes),
		     gib(r->b.total_bytes), r->vllm_kv_bytes, need_f, need_f);
	if (o->fraction > UNIFIED_SAFE_FRACTION)
		warn(r, "a memory fraction of %.2f leaves %.1f GiB to the operating system on unified memory; "
		     "machines have been seen wedged during weight load above %.2f", o->fraction,
		     gib(o->memory_bytes - reserved), UNIFIED_SAFE_FRACTION);
	double used = (double)r->b.total_bytes / (double)o->memory_bytes;
	if (r->fits && used > UNIFIED_SAFE_FRACTION)
		warn(r, "this workload needs %.1f%% of the memory; on unified memory keep under %.0f%% (fewer "
		     "sequences, a shorter context%s)", used * 100, UNIFIED_SAFE_FRACTION * 100,
		     o->w.kv_dtype == PLAN_DTYPE_FP8 ? "" : " or --kv-dtype fp8");
}

/* ---- text report ---- */

static int text_report(struct report *r, struct buf *out)
{
	const struct opts *o = r->o;
	const struct plan_model *m = &r->m;
	const struct plan_breakdown *b = &r->b;
	char c1[32], c2[32], h[32];
	int rc = 0;
#define P(...) (rc = rc ? rc : buf_printf(out, __VA_ARGS__))
	const char *sep = "";
	P("model: %s (%s, %u layers:", m->name, m->arch[0] ? m->arch : "?", m->n_layers);
	if (m->n_attn)
		P("%s %u full attention", sep, m->n_attn), sep = ",";
	if (m->n_swa)
		P("%s %u sliding window (%u tokens)", sep, m->n_swa, m->swa_window_tokens), sep = ",";
	if (m->n_gdn)
		P("%s %u Gated DeltaNet", sep, m->n_gdn), sep = ",";
	if (m->n_mamba)
		P("%s %u Mamba", sep, m->n_mamba);
	P(")\n");
	P("weights:          %16s B  %12s  (%s)\n", commas(b->weights_bytes, c1, sizeof c1),
	  plan_format_bytes(b->weights_bytes, h, sizeof h), m->weight_source);
	if (m->n_attn || m->n_swa) {
		if (m->mla_kv_elems)
			P("KV per token:     %16s B  (%u layers x %u latent elements x %u B %s)\n",
			  commas(b->kv_per_token_bytes, c1, sizeof c1), m->n_attn + m->n_swa, m->mla_kv_elems,
			  plan_dtype_bytes(o->w.kv_dtype), plan_dtype_name(o->w.kv_dtype));
		else
			P("KV per token:     %16s B  (2 x %u layers x %u KV heads x %u head dim x %u B %s)\n",
			  commas(b->kv_per_token_bytes, c1, sizeof c1), m->n_attn + m->n_swa, m->n_kv_heads,
			  m->head_dim_k, plan_dtype_bytes(o->w.kv_dtype), plan_dtype_name(o->w.kv_dtype));
		P("KV cache:         %16s B  %12s  (%" PRId64 " tokens x %" PRId64 " sequences x %.2f headroom)\n",
		  commas(b->kv_bytes, c1, sizeof c1), plan_format_bytes(b->kv_bytes, h, sizeof h), o->context,
		  o->sequences, o->w.headroom);
	}
	if (r->hybrid) {
		P("state per slot:   %16s B  %12s  (%s; conv windows %s B more)\n",
		  commas(b->ssm_per_slot_bytes, c1, sizeof c1), plan_format_bytes(b->ssm_per_slot_bytes, h, sizeof h),
		  plan_dtype_name(o->w.state_dtype), commas(b->conv_per_slot_bytes, c2, sizeof c2));
		P("recurrent state:  %16s B  %12s  (%" PRIu64 " slots = %" PRId64 " sequences x %u per request)\n",
		  commas(b->ssm_bytes, c1, sizeof c1), plan_format_bytes(b->ssm_bytes, h, sizeof h), b->state_slots,
		  o->sequences, o->w.spec_slots);
		P("conv windows:     %16s B  %12s  (%s)\n", commas(b->conv_bytes, c1, sizeof c1),
		  plan_format_bytes(b->conv_bytes, h, sizeof h), plan_dtype_name(o->w.conv_dtype));
		if (b->draft_state_bytes)
			P("draft states:     %16s B  %12s  (a state per drafted token: %" PRId64 " sequences x %u)\n",
			  commas(b->draft_state_bytes, c1, sizeof c1),
			  plan_format_bytes(b->draft_state_bytes, h, sizeof h), o->sequences, o->w.draft_tokens);
	}
	P("activations:      %16s B  %12s  (estimate: one %u-row pass, fp32)\n",
	  commas(b->activation_bytes, c1, sizeof c1), plan_format_bytes(b->activation_bytes, h, sizeof h),
	  o->w.batch_rows);
	P("total:            %16s B  %12s\n", commas(b->total_bytes, c1, sizeof c1),
	  plan_format_bytes(b->total_bytes, h, sizeof h));
	if (o->memory_bytes) {
		P("\nmemory %s: %s", plan_format_bytes(o->memory_bytes, h, sizeof h),
		  r->fits ? "fits" : "DOES NOT FIT");
		P(" (%.1f%% used)\n", 100.0 * (double)b->total_bytes / (double)o->memory_bytes);
		P("  largest context for %" PRId64 " sequences: %" PRId64 " tokens%s\n", o->sequences, r->fit_context,
		  m->max_context_tokens && r->fit_context == r->context_cap ? " (the model's maximum)" : "");
		P("  most sequences at %" PRId64 " tokens: %" PRId64 "\n", o->context, r->fit_sequences);
	}
	if (r->fits)
		P("\nsettings for this workload:\n");
	else
		P("\nsettings for the workload as asked (it does not fit; change --context or --sequences "
		  "as above):\n");
	P("  vLLM:      --max-model-len %" PRId64 " --max-num-seqs %" PRId64 " --kv-cache-memory-bytes %" PRIu64,
	  o->context, o->sequences, r->vllm_kv_bytes);
	if (o->w.kv_dtype == PLAN_DTYPE_FP8)
		P(" --kv-cache-dtype fp8");
	if (o->memory_bytes && r->fits)
		P(" --gpu-memory-utilization %.2f", fraction_for(b->total_bytes, o->memory_bytes));
	P("\n  SGLang:    --context-length %" PRId64 " --max-running-requests %" PRId64 " --max-total-tokens %.0f",
	  o->context, o->sequences, ceil((double)o->context * (double)o->sequences * o->w.headroom));
	if (o->w.kv_dtype == PLAN_DTYPE_FP8)
		P(" --kv-cache-dtype fp8_e4m3");
	if (r->hybrid)
		P(" --max-mamba-cache-size %" PRIu64 " --mamba-ssm-dtype %s", r->sglang_slots,
		  sglang_dtype(o->w.state_dtype));
	if (r->hybrid)
		P("\n             (Mamba pool %s: %" PRIu64 " slots + 1 padding%s)",
		  plan_format_bytes(r->sglang_pool, h, sizeof h), r->sglang_slots,
		  o->w.draft_tokens ? ", with the draft's intermediate states" : "");
	P("\n  llama.cpp: -c %" PRIu64 " -np %" PRId64 "%s\n", r->llama_ctx, o->sequences,
	  o->w.kv_dtype == PLAN_DTYPE_FP8 ? " -fa on -ctk q8_0 -ctv q8_0 (q8_0: 34 B per 32 values, not fp8)"
	  : o->w.kv_dtype == PLAN_DTYPE_FP32 ? " -ctk f32 -ctv f32" : "");
	if (r->warnings.len) {
		P("\n");
		const char *p = r->warnings.data;
		while (*p) {
			const char *nl = strchr(p, '\n');
			P("warning: %.*s\n", (int)(nl - p), p);
			p = nl + 1;
		}
	}
#undef P
	return rc;
}

/* ---- JSON report ---- */

static int json_report(struct report *r, struct buf *out)
{
	const struct opts *o = r->o;
	const struct plan_model *m = &r->m;
	const struct plan_breakdown *b = &r->b;
	cJSON *root = cJSON_CreateObject(), *x;
	if (!root)
		return -ENOMEM;
	x = cJSON_AddObjectToObject(root, "model");
	cJSON_AddStringToObject(x, "name", m->name);
	cJSON_AddStringToObject(x, "arch", m->arch);
	cJSON_AddNumberToObject(x, "layers", m->n_layers);
	cJSON_AddNumberToObject(x, "attention_layers", m->n_attn);
	cJSON_AddNumberToObject(x, "sliding_layers", m->n_swa);
	cJSON_AddNumberToObject(x, "gdn_layers", m->n_gdn);
	cJSON_AddNumberToObject(x, "mamba_layers", m->n_mamba);
	cJSON_AddNumberToObject(x, "kv_heads", m->n_kv_heads);
	cJSON_AddNumberToObject(x, "head_dim", m->head_dim_k);
	cJSON_AddStringToObject(x, "weights_source", m->weight_source);
	x = cJSON_AddObjectToObject(root, "workload");
	cJSON_AddNumberToObject(x, "context_tokens", (double)o->context);
	cJSON_AddNumberToObject(x, "sequences", (double)o->sequences);
	cJSON_AddNumberToObject(x, "headroom", o->w.headroom);
	cJSON_AddStringToObject(x, "kv_dtype", plan_dtype_name(o->w.kv_dtype));
	cJSON_AddStringToObject(x, "state_dtype", plan_dtype_name(o->w.state_dtype));
	cJSON_AddStringToObject(x, "conv_dtype", plan_dtype_name(o->w.conv_dtype));
	cJSON_AddNumberToObject(x, "spec_slots", o->w.spec_slots);
	cJSON_AddNumberToObject(x, "draft_tokens", o->w.draft_tokens);
	x = cJSON_AddObjectToObject(root, "bytes");
	cJSON_AddNumberToObject(x, "weights", (double)b->weights_bytes);
	cJSON_AddNumberToObject(x, "kv_per_token", (double)b->kv_per_token_bytes);
	cJSON_AddNumberToObject(x, "kv", (double)b->kv_bytes);
	cJSON_AddNumberToObject(x, "state_per_slot", (double)b->ssm_per_slot_bytes);
	cJSON_AddNumberToObject(x, "conv_per_slot", (double)b->conv_per_slot_bytes);
	cJSON_AddNumberToObject(x, "state", (double)b->ssm_bytes);
	cJSON_AddNumberToObject(x, "conv", (double)b->conv_bytes);
	cJSON_AddNumberToObject(x, "draft_states", (double)b->draft_state_bytes);
	cJSON_AddNumberToObject(x, "activations", (double)b->activation_bytes);
	cJSON_AddNumberToObject(x, "total", (double)b->total_bytes);
	cJSON_AddNumberToObject(root, "state_slots", (double)b->state_slots);
	if (o->memory_bytes) {
		x = cJSON_AddObjectToObject(root, "memory");
		cJSON_AddNumberToObject(x, "budget_bytes", (double)o->memory_bytes);
		cJSON_AddBoolToObject(x, "fits", r->fits);
		cJSON_AddNumberToObject(x, "max_context_tokens", (double)r->fit_context);
		cJSON_AddNumberToObject(x, "max_sequences", (double)r->fit_sequences);
		cJSON_AddNumberToObject(x, "fraction_needed", fraction_for(b->total_bytes, o->memory_bytes));
	}
	cJSON *s = cJSON_AddObjectToObject(root, "settings");
	x = cJSON_AddObjectToObject(s, "vllm");
	cJSON_AddNumberToObject(x, "kv_cache_memory_bytes", (double)r->vllm_kv_bytes);
	cJSON_AddNumberToObject(x, "max_num_seqs", (double)o->sequences);
	cJSON_AddNumberToObject(x, "max_model_len", (double)o->context);
	x = cJSON_AddObjectToObject(s, "sglang");
	cJSON_AddNumberToObject(x, "max_running_requests", (double)o->sequences);
	cJSON_AddNumberToObject(x, "max_total_tokens", ceil((double)o->context * (double)o->sequences * o->w.headroom));
	if (r->hybrid) {
		cJSON_AddNumberToObject(x, "max_mamba_cache_size", (double)r->sglang_slots);
		cJSON_AddStringToObject(x, "mamba_ssm_dtype", sglang_dtype(o->w.state_dtype));
		cJSON_AddNumberToObject(x, "mamba_pool_bytes", (double)r->sglang_pool);
	}
	x = cJSON_AddObjectToObject(s, "llamacpp");
	cJSON_AddNumberToObject(x, "c", (double)r->llama_ctx);
	cJSON_AddNumberToObject(x, "np", (double)o->sequences);
	x = cJSON_AddArrayToObject(root, "warnings");
	for (const char *p = r->warnings.data; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = strndup(p, (size_t)(nl - p));
		if (line)
			cJSON_AddItemToArray(x, cJSON_CreateString(line));
		free(line);
		p = nl + 1;
	}
	char *txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return -ENOMEM;
	int rc = buf_puts(out, txt);
	rc = rc ? rc : buf_puts(out, "\n");
	free(txt);
	return rc;
}

/* ---- entry ---- */

int plan_cmd_main(int argc, char **argv)
{
	struct opts o;
	char err[1024];
	int rc = parse_args(argc, argv, &o, err, sizeof err);
	if (rc == ARGS_HELP) {
		args_help(&spec, 0, stdout);
		return EXIT_FITS;
	}
	if (rc) {
		log_error("plan: %s", err);
		return EXIT_USAGE;
	}
	struct report r = { .o = &o };
	rc = plan_model_load(o.model, &r.m, err, sizeof err);
	if (rc) {
		log_error("plan: %s", err);
		return EXIT_USAGE;
	}
	if (o.weights_bytes) {
		r.m.weight_bytes = o.weights_bytes;
		r.m.weight_source = "--weights";
	}
	rc = plan_compute(&r.m, &o.w, &r.b, err, sizeof err);
	if (rc) {
		log_error("plan: %s", err);
		return EXIT_USAGE;
	}
	buf_init(&r.warnings);
	analyse(&r);
	struct buf out;
	buf_init(&out);
	rc = o.json ? json_report(&r, &out) : text_report(&r, &out);
	int code = r.fits ? EXIT_FITS : EXIT_NO_FIT;
	if (rc) {
		log_error("plan: out of memory writing the report");
		code = EXIT_USAGE;
	} else {
		fputs(out.data, stdout);
		fflush(stdout);
	}
	if (!rc && !r.fits) {
		char need[32], have[32], wts[32];
		plan_format_bytes(r.b.total_bytes, need, sizeof need);
		plan_format_bytes(o.memory_bytes, have, sizeof have);
		if (r.fit_context_one == 0)
			log_error("plan: %s needs %s for %" PRId64 " x %" PRId64 " tokens and %s is not enough for even "
				  "one sequence of one token (weights alone: %s); use a smaller or quantised model or "
				  "more memory", r.m.name, need, o.sequences, o.context, have,
				  plan_format_bytes(r.b.weights_bytes, wts, sizeof wts));
		else if (r.fit_context && r.fit_sequences)
			log_error("plan: the workload needs %s, more than --memory %s; fits: --context %" PRId64
				  " at %" PRId64 " sequences, or --sequences %" PRId64 " at %" PRId64 " tokens",
				  need, have, r.fit_context, o.sequences, r.fit_sequences, o.context);
		else if (r.fit_sequences)
			log_error("plan: the workload needs %s, more than --memory %s; fits: --sequences %" PRId64
				  " at %" PRId64 " tokens (no context fits %" PRId64 " sequences)", need, have,
				  r.fit_sequences, o.context, o.sequences);
		else if (r.fit_context)
			log_error("plan: the workload needs %s, more than --memory %s; fits: --context %" PRId64
				  " at %" PRId64 " sequences (not one sequence of %" PRId64 " tokens fits)", need, have,
				  r.fit_context, o.sequences, o.context);
		else
			log_error("plan: the workload needs %s, more than --memory %s; neither the context nor the "
				  "sequences alone can be cut enough: one sequence fits up to --context %" PRId64, need,
				  have, r.fit_context_one);
	}
	buf_finish(&out);
	buf_finish(&r.warnings);
	return code;
}
