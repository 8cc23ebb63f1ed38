/* scrape — see scrape.h. Format: Prometheus text exposition 0.0.4 ("# TYPE name
 * kind" lines, then "name{labels} value [timestamp]"). Metric names of the peers
 * are from their documentation: vLLM spec_decode_num_draft_tokens_total and
 * spec_decode_num_accepted_tokens_total, prefix_cache_queries_total and
 * prefix_cache_hits_total; llama.cpp's server (server-task.cpp) the same two
 * speculative counters under llamacpp: and prompt_tokens_cached_total. */
#include "bench/scrape.h"
#include "core/buf.h"
#include "net/http.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const families[] = { "vllm:", "sglang:", "llamacpp:", "sixi_" };

static bool wanted(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
		size_t fl = strlen(families[i]);
		if (n >= fl && strncmp(name, families[i], fl) == 0)
			return true;
	}
	return false;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && strncmp(s + n - k, suf, k) == 0;
}

void scrape_finish(struct scrape *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof *s);
}

int scrape_parse(const char *text, size_t len, struct scrape *out)
{
	char counters[64][128]; /* names declared "# TYPE name counter" (or histogram/summary) */
	int n_counters = 0;
	for (size_t i = 0; i < len;) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		const char *l = text + i;
		size_t ll = e - i;
		i = e + 1;
		if (ll && l[ll - 1] == '\r')
			ll--;
		if (ll > 7 && strncmp(l, "# TYPE ", 7) == 0) {
			const char *nm = l + 7, *sp = memchr(nm, ' ', ll - 7);
			if (sp && n_counters < 64 && (size_t)(sp - nm) < 128) {
				const char *kind = sp + 1;
				size_t kl = ll - (size_t)(kind - l);
				if ((kl == 7 && !strncmp(kind, "counter", 7)) || (kl == 9 && !strncmp(kind, "histogram", 9)) ||
				    (kl == 7 && !strncmp(kind, "summary", 7))) {
					memcpy(counters[n_counters], nm, (size_t)(sp - nm));
					counters[n_counters++][sp - nm] = 0;
				}
			}
			continue;
		}
		if (!ll || l[0] == '#')
			continue;
		size_t name_len = strcspn(l, "{ \t");
		if (name_len > ll)
			name_len = ll;
		if (!wanted(l, name_len) || ends_with(l, name_len, "_bucket"))
			continue;
		const char *vs = l + name_len;
		if (vs < l + ll && *vs == '{') {
			const char *close = memchr(vs, '}', ll - name_len);
			if (!close)
				continue;
			vs = close + 1;
		}
		size_t key_len = (size_t)(vs - l);
		char num[64];
		size_t rest = ll - key_len;
		while (rest && (*vs == ' ' || *vs == '\t'))
			vs++, rest--;
		size_t nl = strcspn(vs, " \t\r\n");
		if (nl > rest)
			nl = rest;
		if (!nl || nl >= sizeof num || key_len >= sizeof out->v[0].key)
			continue;
		memcpy(num, vs, nl);
		num[nl] = 0;
		char *end;
		double v = strtod(num, &end);
		if (*end)
			continue;
		if (out->n == out->cap) {
			size_t c = out->cap ? out->cap * 2 : 64;
			struct scrape_sample *p = realloc(out->v, c * sizeof *p);
			if (!p)
				return -ENOMEM;
			out->v = p;
			out->cap = c;
		}
		struct scrape_sample *s = &out->v[out->n++];
		memcpy(s->key, l, key_len);
		s->key[key_len] = 0;
		s->value = v;
		s->counter = ends_with(l, name_len, "_total");
		for (int k = 0; k < n_counters && !s->counter; k++) {
			size_t cl = strlen(counters[k]);
			s->counter = !strncmp(l, counters[k], cl) &&
				     (name_len == cl || (name_len == cl + 4 && ends_with(l, name_len, "_sum")) ||
				      (name_len == cl + 6 && ends_with(l, name_len, "_count")) ||
				      (name_len == cl + 6 && ends_with(l, name_len, "_total")));
		}
	}
	return 0;
}

int scrape_fetch(const char *base_url, struct scrape *out)
{
	memset(out, 0, sizeof *out);
	char url[1100], err[256];
	snprintf(url, sizeof url, "%s/metrics", base_url);
	struct buf b;
	buf_init(&b);
	int status = 0, rc = 0;
	if (http_fetch(url, NULL, 5000, &b, &status, err, sizeof err) == 0 && status == 200 && b.len) {
		rc = scrape_parse(b.data, b.len, out);
		out->ok = rc == 0;
	}
	buf_finish(&b);
	return rc;
}

static const struct scrape_sample *find(const struct scrape *s, const char *key)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (strcmp(s->v[i].key, key) == 0)
			return &s->v[i];
	return NULL;
}

static double delta_of(const struct scrape *b, const struct scrape *a, const char *key)
{
	const struct scrape_sample *x = find(a, key), *y = find(b, key);
	if (!x)
		return NAN;
	return x->value - (y ? y->value : 0);
}

static void ratio(cJSON *o, const char *name, const struct scrape *b, const struct scrape *a, const char *num,
		  const char *den)
{
	double n = delta_of(b, a, num), d = delta_of(b, a, den);
	if (isfinite(n) && isfinite(d) && d > 0)
		cJSON_AddNumberToObject(o, name, n / d);
}

cJSON *scrape_delta(const struct scrape *before, const struct scrape *after)
{
	if (!after || !after->ok || after->n == 0)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	cJSON *c = cJSON_AddObjectToObject(o, "counters"), *g = cJSON_AddObjectToObject(o, "gauges");
	for (size_t i = 0; i < after->n; i++) {
		const struct scrape_sample *x = &after->v[i];
		if (x->counter)
			cJSON_AddNumberToObject(c, x->key, delta_of(before, after, x->key));
		else
			cJSON_AddNumberToObject(g, x->key, x->value);
	}
	/* acceptance of drafted tokens under speculative decoding, per level */
	ratio(o, "spec_acceptance", before, after, "sixi_spec_accepted_total", "sixi_spec_drafted_total");
	ratio(o, "spec_acceptance", before, after, "vllm:spec_decode_num_accepted_tokens_total",
	      "vllm:spec_decode_num_draft_tokens_total");
	ratio(o, "spec_acceptance", before, after, "llamacpp:spec_decode_num_accepted_tokens_total",
	      "llamacpp:spec_decode_num_draft_tokens_total");
	ratio(o, "prefix_cache_hit_rate", before, after, "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total");
	ratio(o, "prefix_cache_hit_rate", before, after, "llamacpp:prompt_tokens_cached_total", "llamacpp:prompt_tokens_total");
	ratio(o, "prefix_cache_hit_rate", before, after, "sixi_cached_tokens_total", "sixi_prompt_tokens_total");
	return o;
}
