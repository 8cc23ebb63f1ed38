/* gdn_log — the arithmetic of rolling back Gated DeltaNet state: how many floats one log
 * row and one state snapshot take, for a model shape, so the model's state pool, the
 * speculative decoder and the memory report all size the log and the snapshot ring the
 * same way.
 *
 * The log (model.h, MODEL_ROLLBACK_LOG) keeps, per sequence and GDN layer, one base state
 * and for each kept row the pre-convolution row [q | k | v] (conv_dim floats) plus the gate
 * g and β of every V-head (2·H_v floats). The normalised key and the value of a row are
 * re-derived from those exactly (same convolution, same L2 norm), and the same rows roll the
 * conv window back. The snapshot ring (MODEL_ROLLBACK_SNAPSHOT) keeps a whole recurrent state
 * and conv window per row instead.
 *
 * Does not: allocate or touch any state; all results are counts (floats or bytes). */
#ifndef SIXI_MODEL_GDN_LOG_H
#define SIXI_MODEL_GDN_LOG_H
#include <stdint.h>

struct gdn_log_shape {
	int n_gdn_layers; /* GDN layers of the model */
	int H_k, H_v;     /* key heads, value heads */
	int d_k, d_v;     /* head dims */
	int conv_kernel;  /* causal conv width K (the window keeps K-1 rows) */
};

/* Channels of the causal convolution: 2·H_k·d_k + H_v·d_v. */
uint64_t gdn_log_conv_dim(const struct gdn_log_shape *s);
/* Floats of one log row of one layer: conv_dim + 2·H_v. */
uint64_t gdn_log_row_floats(const struct gdn_log_shape *s);
/* Floats of one layer's recurrent state plus conv window: H_v·d_v·d_k + (K-1)·conv_dim. */
uint64_t gdn_log_state_floats(const struct gdn_log_shape *s);
/* Bytes per sequence (all GDN layers, fp32): the live state, a log of `rows` rows, and a
 * snapshot ring of `rows` states (one after each drafted row, as peers keep). */
uint64_t gdn_log_state_bytes(const struct gdn_log_shape *s);
uint64_t gdn_log_bytes(const struct gdn_log_shape *s, int rows);
uint64_t gdn_log_snapshot_bytes(const struct gdn_log_shape *s, int rows);
#endif
