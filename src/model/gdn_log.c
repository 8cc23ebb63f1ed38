/* gdn_log — see gdn_log.h. Plain products in 64 bits; no state, no allocation. */
#include "model/gdn_log.h"

uint64_t gdn_log_conv_dim(const struct gdn_log_shape *s)
{
	return 2 * (uint64_t)s->H_k * (uint64_t)s->d_k + (uint64_t)s->H_v * (uint64_t)s->d_v;
}

uint64_t gdn_log_row_floats(const struct gdn_log_shape *s)
{
	return gdn_log_conv_dim(s) + 2 * (uint64_t)s->H_v;
}

uint64_t gdn_log_state_floats(const struct gdn_log_shape *s)
{
	uint64_t hist = s->conv_kernel > 1 ? (uint64_t)(s->conv_kernel - 1) : 0;
	return (uint64_t)s->H_v * (uint64_t)s->d_v * (uint64_t)s->d_k + hist * gdn_log_conv_dim(s);
}

uint64_t gdn_log_state_bytes(const struct gdn_log_shape *s)
{
	return 4 * (uint64_t)s->n_gdn_layers * gdn_log_state_floats(s);
}

uint64_t gdn_log_bytes(const struct gdn_log_shape *s, int rows)
{
	return 4 * (uint64_t)s->n_gdn_layers * gdn_log_row_floats(s) * (uint64_t)(rows > 0 ? rows : 0);
}

uint64_t gdn_log_snapshot_bytes(const struct gdn_log_shape *s, int rows)
{
	return gdn_log_state_bytes(s) * (uint64_t)(rows > 0 ? rows : 0);
}
