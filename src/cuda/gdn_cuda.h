/* gdn_cuda — the Gated DeltaNet recurrent update on an NVIDIA GPU (sm_90), for verify passes
 * with rollback by log: one kernel runs, per (sequence, V-head), the kept log rows on the
 * base state (replay) and then the new rows, all in registers, writing the new rows' outputs;
 * the base is written back only when asked (the fold, or a plain decode). A snapshot variant
 * writes the state after every new row to a ring, as peers do, for comparison.
 *
 * Layouts (fp32, d_k = 128, d_v a multiple of 16; NS = sequences x GDN layers, each an
 * independent state):
 *   state [NS][H_v][d_v][d_k]           (the CPU pool's layout, gdn.h)
 *   log   k [NS][L][H_k][d_k], v [NS][L][H_v][d_v], g and beta [NS][L][H_v]
 *         rows 0..kept are replayed, rows kept..kept+T are the new rows
 *   q     [NS][T][H_k][d_k] (new rows only), o [NS][T][H_v][d_v]
 *   ring  [T][NS][H_v][d_v][d_k] (snapshot variant)
 * V-head h uses K-head h mod H_k (tiled order). The log here holds the normalised key, not the
 * pre-convolution row the CPU log keeps: the convolution is not part of these kernels.
 * Math per row (gdn.h): u = beta (v - e^g S k); S = e^g S + k u^T; o = scale S^T q.
 * Does not: project, convolve, normalise. Host functions return 0 or a cudaError_t value. */
#ifndef SIXI_CUDA_GDN_CUDA_H
#define SIXI_CUDA_GDN_CUDA_H
#ifdef __cplusplus
extern "C" {
#endif

struct gdn_cuda_args {
	float *state;
	const float *k, *v, *g, *beta; /* the log */
	const float *q;
	float *o;                      /* NULL: no outputs (a fold) */
	float *ring;                   /* NULL: log mode */
	const int *kept;               /* [NS] rows replayed before the new ones (device memory) */
	int ns, T, L, H_k, H_v, d_v;
	float scale;
	int write_back;                /* store the state after the last row */
	int lanes;                     /* lanes per value column: 0 (the default, 16), 4, 8 or 32 */
};

/* Launches on `stream` (a cudaStream_t, 0 for the default). d_k must be 128. */
int gdn_cuda_rows(const struct gdn_cuda_args *a, void *stream);

#ifdef __cplusplus
}
#endif
#endif
