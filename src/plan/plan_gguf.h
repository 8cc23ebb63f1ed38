/* plan_gguf — struct plan_model from GGUF metadata (built when the GGUF reader is in the
 * tree; SIXI_PLAN_GGUF is then defined). Arguments are borrowed. */
#ifndef SIXI_PLAN_PLAN_GGUF_H
#define SIXI_PLAN_PLAN_GGUF_H
#include "plan/plan.h"

struct gguf;

/* From an open GGUF (sixi-server has one at start-up): shape from the metadata, weight
 * bytes and parameters from the tensor table. 0 or -errno with err set. */
__attribute__((warn_unused_result)) int plan_model_from_gguf(const struct gguf *g, const char *name,
							     struct plan_model *m, char *err, size_t errlen);
/* Opens path, reads it as above, closes it. */
__attribute__((warn_unused_result)) int plan_model_from_gguf_file(const char *path, struct plan_model *m,
								  char *err, size_t errlen);
#endif
