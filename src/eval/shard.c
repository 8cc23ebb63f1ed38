/* shard — see shard.h. */
#include "eval/shard.h"
#include "core/err.h"
#include <errno.h>
#include <string.h>

static int parse_part(const char *s, size_t len, int64_t *v)
{
	if (len == 0 || len > 6)
		return -1;
	int64_t x = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 0;
}

int eval_shard_parse(const char *s, struct eval_shard *out, char *err, size_t errlen)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	int64_t k, n;
	if (!slash || parse_part(s, (size_t)(slash - s), &k) || parse_part(slash + 1, strlen(slash + 1), &n))
		return err_fail(err, errlen,
				"--shard needs K/N with whole numbers, K from 0 to N-1 (e.g. 0/4), got '%s'", s ? s : "");
	if (n < 1 || n > EVAL_SHARD_MAX)
		return err_fail(err, errlen, "--shard %s: N must be from 1 to %d", s, EVAL_SHARD_MAX);
	if (k >= n)
		return err_fail(err, errlen, "--shard %s: K counts from 0, so it must be below N (0 to %lld)", s,
				(long long)(n - 1));
	out->k = k;
	out->n = n;
	return 0;
}

/* FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the
 * task id, a 0 byte and the repeat as 8 little-endian bytes. */
static uint64_t fnv_step(uint64_t h, unsigned char b)
{
	return (h ^ b) * 0x100000001b3ull;
}

int64_t eval_shard_of(const char *task_id, int64_t repeat, int64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *c = (const unsigned char *)task_id; *c; c++)
		h = fnv_step(h, *c);
	h = fnv_step(h, 0);
	for (int i = 0; i < 8; i++)
		h = fnv_step(h, (unsigned char)((uint64_t)repeat >> (8 * i)));
	return (int64_t)(h % (uint64_t)n);
}

bool eval_shard_has(const struct eval_shard *s, const char *task_id, int64_t repeat)
{
	if (!s || s->n <= 1)
		return true;
	return eval_shard_of(task_id, repeat, s->n) == s->k;
}
