/* shard — a deterministic slice of a run's (task, repeat) pairs.
 *
 * Shard K of N holds the pair (task, repeat) when
 * FNV-1a-64(task id, 0x00, repeat as 8 little-endian bytes) mod N == K.
 * The slice depends on nothing but the task id, the repeat and N, so every
 * machine computes the same partition and the N shards together cover every
 * pair exactly once. The shard is not part of the run's configuration: every
 * shard of one run records the same configuration hash. */
#ifndef SIXI_EVAL_SHARD_H
#define SIXI_EVAL_SHARD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVAL_SHARD_MAX 65536

struct eval_shard {
	int64_t k, n; /* n == 0: no shard, every pair */
};

/* Parses "K/N" (0 <= K < N <= EVAL_SHARD_MAX). 0, or -EINVAL with a message. */
int eval_shard_parse(const char *s, struct eval_shard *out, char *err, size_t errlen);
/* Which shard of n the pair falls in. */
int64_t eval_shard_of(const char *task_id, int64_t repeat, int64_t n);
/* Whether the pair belongs to shard s (always, when s is NULL or s->n == 0). */
bool eval_shard_has(const struct eval_shard *s, const char *task_id, int64_t repeat);
#endif
