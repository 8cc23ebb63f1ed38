/* jschema — a small subset of JSON Schema, enough for tool-call arguments:
 * type (object, array, string, integer, number, boolean, null, or a list of
 * them), properties, required, additionalProperties (false or a schema), enum,
 * const, minimum/maximum, exclusiveMinimum/exclusiveMaximum (numbers),
 * minLength/maxLength, pattern (POSIX extended regex, unanchored as JSON
 * Schema says), items, minItems/maxItems, anyOf. Keywords it does not know
 * (description, title, default, ...) are ignored, as validators do; $ref,
 * oneOf/allOf, formats and dependencies are not supported: jschema_check
 * refuses a schema that uses them, so nothing passes by being skipped.
 * Arguments are borrowed. */
#ifndef SIXI_EVAL_JSCHEMA_H
#define SIXI_EVAL_JSCHEMA_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* 0 when schema uses only the supported subset and is well formed; else
 * -EINVAL with why ("properties.city.minLength: not a non-negative integer"). */
int jschema_check(const cJSON *schema, char *why, size_t whylen);
/* true when value validates against schema; else false with why naming the
 * path of the first violation ("$.unit: not one of the enum values"). */
bool jschema_validate(const cJSON *schema, const cJSON *value, char *why, size_t whylen);
#endif
