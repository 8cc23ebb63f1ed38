/* json — small helpers over cJSON for reading typed fields with clear errors.
 * Arguments are borrowed; returned cJSON trees and strings are the caller's to
 * free (cJSON_Delete / free) unless noted. Lookups never allocate. */
#ifndef SIXI_CORE_JSON_H
#define SIXI_CORE_JSON_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a whole file; on error returns NULL and writes "FILE:LINE:COL: why" into err. */
cJSON *json_parse_file(const char *path, char *err, size_t errlen);
/* Parses a buffer of n bytes (need not be NUL-terminated); NULL on error with err set. */
cJSON *json_parse_n(const char *s, size_t n, char *err, size_t errlen);
/* Dotted path lookup ("usage.prompt_tokens_details.cached_tokens"); NULL when absent. */
const cJSON *json_path(const cJSON *root, const char *dotted);
/* Typed getters: return true and set *out when the field exists with that type. */
bool json_get_i64(const cJSON *obj, const char *dotted, int64_t *out);
bool json_get_double(const cJSON *obj, const char *dotted, double *out);
bool json_get_bool(const cJSON *obj, const char *dotted, bool *out);
const char *json_get_str(const cJSON *obj, const char *dotted); /* borrowed */
/* o must be an object whose keys all stand in the NULL-terminated list keys.
 * Returns 0, or -EINVAL with err "WHERE must be a JSON object" or "WHERE: unknown
 * key "K" (allowed: a, b, ...; see DOC)", doc naming where the keys are described. */
__attribute__((warn_unused_result)) int json_check_keys(const cJSON *o, const char *where, const char *const *keys,
							const char *doc, char *err, size_t errlen);
/* Walks two JSON values and calls fn once per differing leaf with its nested key
 * ("protocol.sampling.max_tokens", "datasets[0].sha256") and both values (NULL
 * where absent). Objects are walked key by key (a's keys, then those only in b),
 * arrays of one length item by item; anything else, and a key for which whole
 * (may be NULL) says true, is compared whole. A top-level difference has key "". */
void json_diff(const cJSON *a, const cJSON *b, bool (*whole)(void *ctx, const char *key),
	       void (*fn)(void *ctx, const char *key, const cJSON *a, const cJSON *b), void *ctx);
/* Compact serialisation; caller frees. */
char *json_print(const cJSON *item);
#endif
