/* metrics — see metrics.h. Names follow Prometheus conventions: a sixi_ prefix,
 * _total for counters, base units (seconds), histograms as _bucket/_sum/_count. */
#include "server/metrics.h"
#include "core/buf.h"

#include <errno.h>
#include <string.h>

static const double rows_bounds[] = { 1, 2, 4, 8, 16, 24, 32, 48, 64, 128, 256, 512, 1024, 2048 };
static const double pass_bounds[] = { 0.001, 0.005, 0.01, 0.02, 0.05, 0.085, 0.1, 0.15, 0.2, 0.5, 1, 2, 5 };
static const double queue_bounds[] = { 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300 };
static const double first_bounds[] = { 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60, 120, 300 };
static const double wait_bounds[] = { 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.024, 0.032, 0.04 };

static void hist_init(struct metrics_hist *h, const double *b, int n)
{
	memset(h, 0, sizeof *h);
	h->bounds = b;
	h->n_bounds = n;
}

void metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof *m);
	pthread_mutex_init(&m->lock, NULL);
#define N(a) (int)(sizeof a / sizeof a[0])
	hist_init(&m->rows_per_pass, rows_bounds, N(rows_bounds));
	hist_init(&m->pass_seconds, pass_bounds, N(pass_bounds));
	hist_init(&m->queue_seconds, queue_bounds, N(queue_bounds));
	hist_init(&m->straggler_wait_seconds, wait_bounds, N(wait_bounds));
	hist_init(&m->prefill_wait_short, first_bounds, N(first_bounds));
	hist_init(&m->prefill_wait_long, first_bounds, N(first_bounds));
	hist_init(&m->prefill_chunk_rows, rows_bounds, N(rows_bounds));
	hist_init(&m->pass_prompt_rows, rows_bounds, N(rows_bounds));
#undef N
}

void metrics_finish(struct metrics *m)
{
	if (m)
		pthread_mutex_destroy(&m->lock);
}

void metrics_observe(struct metrics *m, struct metrics_hist *h, double v)
{
	pthread_mutex_lock(&m->lock);
	int i = 0;
	while (i < h->n_bounds && v > h->bounds[i])
		i++;
	h->counts[i]++;
	h->sum += v;
	h->count++;
	pthread_mutex_unlock(&m->lock);
}

static int counter(struct buf *out, const char *name, const char *help, uint64_t v)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
			  (unsigned long long)v);
}

static int gauge(struct buf *out, const char *name, const char *help, int64_t v)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, (long long)v);
}

/* The series of one histogram; label is "" or `key="value",`. */
static int hist_series(struct buf *out, const char *name, const char *label, const struct metrics_hist *h)
{
	int rc = 0;
	uint64_t cum = 0;
	for (int i = 0; i <= h->n_bounds && rc == 0; i++) {
		cum += h->counts[i];
		if (i < h->n_bounds)
			rc = buf_printf(out, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, h->bounds[i],
					(unsigned long long)cum);
		else
			rc = buf_printf(out, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)cum);
	}
	size_t n = strlen(label);
	if (rc == 0 && n == 0)
		rc = buf_printf(out, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
	else if (rc == 0) /* the label without its trailing comma */
		rc = buf_printf(out, "%s_sum{%.*s} %.9g\n%s_count{%.*s} %llu\n", name, (int)n - 1, label, h->sum, name,
				(int)n - 1, label, (unsigned long long)h->count);
	return rc;
}

static int hist(struct buf *out, const char *name, const char *help, const struct metrics_hist *h)
{
	int rc = buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	return rc ? rc : hist_series(out, name, "", h);
}

static int seconds(struct buf *out, const char *name, const char *help, int64_t ns)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %.9g\n", name, help, name, name, (double)ns / 1e9);
}

#define LOAD(f) atomic_load_explicit(&m->f, memory_order_relaxed)

int metrics_render(struct metrics *m, const struct metrics_gauges *g, struct buf *out)
{
	int rc = 0;
	rc |= counter(out, "sixi_requests_total", "Generation requests accepted.", LOAD(requests));
	rc |= counter(out, "sixi_requests_rejected_total", "Requests answered with a 4xx error.",
		      LOAD(requests_rejected));
	rc |= counter(out, "sixi_requests_cancelled_total", "Generations cancelled (client gone, shutdown, or a decided vote).",
		      LOAD(requests_cancelled));
	rc |= counter(out, "sixi_prompt_tokens_total", "Prompt tokens of accepted requests.", LOAD(prompt_tokens));
	rc |= counter(out, "sixi_cached_tokens_total", "Prompt tokens served from the prefix cache.",
		      LOAD(cached_tokens));
	rc |= counter(out, "sixi_completion_tokens_total", "Tokens generated.", LOAD(completion_tokens));
	rc |= counter(out, "sixi_passes_total", "Forward passes.", LOAD(passes));
	rc |= counter(out, "sixi_rows_total", "Rows over all passes.", LOAD(rows));
	rc |= counter(out, "sixi_decode_rows_total", "Rows that produced logits.", LOAD(decode_rows));
	rc |= counter(out, "sixi_prefill_rows_total", "Prompt rows that produced no logits.", LOAD(prefill_rows));
	rc |= counter(out, "sixi_prefill_chunks_total", "Prompt chunks (one sequence's prompt rows in one pass).",
		      LOAD(prefill_chunks));
	rc |= counter(out, "sixi_straggler_waits_total", "Passes delayed to wait for sequences still being sampled.",
		      LOAD(straggler_waits));
	rc |= counter(out, "sixi_split_passes_total",
		      "Passes that started while a decoding sequence was not ready (it ran in a later pass).",
		      LOAD(split_passes));
	rc |= counter(out, "sixi_unknown_fields_total", "Unknown request fields ignored.", LOAD(unknown_fields));
	rc |= counter(out, "sixi_pass_errors_total", "Forward passes that failed.", LOAD(pass_errors));
	uint64_t sp = LOAD(spec_steps), sd = LOAD(spec_drafted), sa = LOAD(spec_accepted);
	rc |= counter(out, "sixi_spec_steps_total", "Speculative verification steps (one sequence each).", sp);
	rc |= counter(out, "sixi_spec_drafted_total", "Drafted tokens verified.", sd);
	rc |= counter(out, "sixi_spec_accepted_total", "Drafted tokens accepted.", sa);
	rc |= buf_printf(out,
			 "# HELP sixi_spec_accept_len Tokens per speculative step (accepted drafts + 1), since start.\n"
			 "# TYPE sixi_spec_accept_len gauge\nsixi_spec_accept_len %.4f\n"
			 "# HELP sixi_spec_accept_rate Accepted / drafted tokens, since start.\n"
			 "# TYPE sixi_spec_accept_rate gauge\nsixi_spec_accept_rate %.4f\n",
			 sp ? (double)(sa + sp) / (double)sp : 0.0, sd ? (double)sa / (double)sd : 0.0);
	rc |= counter(out, "sixi_state_forks_total",
		      "Prompt states copied into the other samples of a vote (once per sample, not per pass).",
		      LOAD(state_forks));
	rc |= counter(out, "sixi_votes_total", "Vote requests accepted.", LOAD(votes));
	rc |= counter(out, "sixi_vote_ties_total", "Votes that ended without a majority.", LOAD(vote_ties));
	rc |= counter(out, "sixi_vote_samples_cancelled_total", "Vote samples stopped once the majority was decided.",
		      LOAD(vote_samples_cancelled));
	rc |= counter(out, "sixi_vote_tokens_saved_total",
		      "max_tokens budget left unspent by vote samples stopped early.", LOAD(vote_tokens_saved));
	rc |= counter(out, "sixi_state_copies_total", "Recurrent-state copies made by passes (stays 0).",
		      (uint64_t)g->state_copies);
	rc |= gauge(out, "sixi_active_sequences", "Sequences holding a state slot.", g->active_sequences);
	rc |= gauge(out, "sixi_waiting_requests", "Sequences waiting for a slot.", g->waiting_requests);
	rc |= gauge(out, "sixi_connections", "Open HTTP connections.", g->connections);
	rc |= gauge(out, "sixi_ready", "1 once a warm-up generation has succeeded.", g->ready);
	rc |= gauge(out, "sixi_kv_cache_bytes", "Attention KV cache of all slots.", g->mem_kv);
	rc |= gauge(out, "sixi_gdn_state_bytes", "Recurrent GDN states of all slots.", g->mem_gdn_state);
	rc |= gauge(out, "sixi_conv_state_bytes", "GDN conv windows of all slots.", g->mem_conv);
	rc |= gauge(out, "sixi_rollback_bytes", "Speculative rollback log (or snapshot ring) of all slots.",
		    g->mem_rollback);
	rc |= gauge(out, "sixi_snapshot_ring_bytes",
		    "What a snapshot ring of the same depth takes (the rollback's baseline; 0 without speculation).",
		    g->mem_snapshot_ring);
	rc |= seconds(out, "sixi_prefill_budget_seconds",
		      "Device time a pass may take while a short prompt or a new turn waits (8x with decoding streams only).",
		      LOAD(prefill_budget_ns));
	rc |= seconds(out, "sixi_pass_cost_base_seconds", "Fitted pass cost: per pass.", LOAD(cost_base_ns));
	rc |= seconds(out, "sixi_pass_cost_decode_row_seconds", "Fitted pass cost: per row with logits.",
		      LOAD(cost_decode_row_ns));
	rc |= seconds(out, "sixi_pass_cost_prompt_row_seconds", "Fitted pass cost: per prompt row.",
		      LOAD(cost_prompt_row_ns));
	pthread_mutex_lock(&m->lock);
	rc |= hist(out, "sixi_rows_per_pass", "Rows per forward pass.", &m->rows_per_pass);
	rc |= hist(out, "sixi_pass_seconds", "Forward pass time.", &m->pass_seconds);
	rc |= hist(out, "sixi_queue_seconds", "Time from arrival to a state slot.", &m->queue_seconds);
	rc |= hist(out, "sixi_straggler_wait_seconds", "Length of each straggler wait.", &m->straggler_wait_seconds);
	rc |= buf_printf(out, "# HELP sixi_prefill_wait_seconds Time from arrival to the first token, by kind: short "
			 "(at most 256 prompt rows to prefill) or long.\n# TYPE sixi_prefill_wait_seconds histogram\n");
	rc |= hist_series(out, "sixi_prefill_wait_seconds", "kind=\"short\",", &m->prefill_wait_short);
	rc |= hist_series(out, "sixi_prefill_wait_seconds", "kind=\"long\",", &m->prefill_wait_long);
	rc |= hist(out, "sixi_prefill_chunk_rows", "Prompt rows of one sequence in one pass.", &m->prefill_chunk_rows);
	rc |= hist(out, "sixi_pass_prompt_rows", "Prompt rows of each pass (passes with none included).",
		   &m->pass_prompt_rows);
	pthread_mutex_unlock(&m->lock);
	return rc ? -ENOMEM : 0;
}
