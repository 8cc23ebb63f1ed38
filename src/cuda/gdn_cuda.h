/* gdn_cuda — the Gated DeltaNet recurrent update on an NVIDIA GPU (sm_90), for verify passes
 * with rollback by log: one kernel runs, per (sequence, V-head), the kept log rows on the
 * base state (replay) and then the new rows, all in registers, writing the new rows' outputs;
 * the base is written back only when asked (the fold, or a plain decode). A snapshot variant
 * writes the state after every new row to a ring, as peers do, for comparison.
 *
 * Layouts (fp32, d_k = 32, 64 or 128, d_v a multiple of 16; NS = sequences x GDN layers, each
 * an independent state):
 *   state [NS][H_v][d_v][d_k]           (the CPU pool's layout, gdn.h)
 *   log   k [NS][L][H_k][d_k], v [NS][L][H_v][d_v], g and beta [NS][L][H_v]
 *         rows 0..kept are replayed, rows kept..kept+T are the new rows
 *   q     [NS][T][H_k][d_k] (new rows only), o [NS][T][H_v][d_v]
 *   ring  [T][NS][H_v][d_v][d_k] (snapshot variant)
 * A forward pass over sequences of different lengths (the CUDA engine) sets the optional
 * fields: `seq` maps launch index ns to the state and log it owns, `row0`/`rows` give each its
 * first new row and count in q, o and the new-row inputs nk, nv, ng, nbeta (rows of a pass,
 * strided: the new rows then need not be in the log), and `wb` says per ns whether to write back.
 * V-head h uses K-head h mod H_k (tiled order). The log here holds the normalised key, not the
 * pre-convolution row the CPU log keeps: the convolution is not part of these kernels.
 * Math per row (gdn.h): u = beta (v - e^g S k); S = e^g S + k u^T; o = scale S^T q.
 * Steps with many new rows may run in chunked form on tensor cores instead (gdn_chunk.cuh:
 * split TF32, outputs within ~1e-6 of the row form relative to the largest; `chunk` below).
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
	int lanes;                     /* lanes per value column (d_k 128 only): 0 (the default, 16), 4, 8 or 32 */
	/* Optional (0 / NULL: the layouts above) */
	int d_k;                       /* 0: 128 */
	const int *seq;                /* [NS] state and log index of ns */
	const int *row0, *rows;        /* [NS] first new row of ns in q, o, nk..; its new rows */
	const float *nk, *nv, *ng, *nbeta; /* new rows' inputs instead of log rows kept.. */
	int q_stride, v_stride, gb_stride, o_stride; /* floats between rows of q and nk, nv, ng and nbeta, o */
	const int *wb;                 /* [NS] write back (instead of write_back) */
	int pdl;                       /* launched with programmatic dependent launch (sm_90): the
					* kernel may start while the previous kernel drains; it waits
					* for it before touching memory */
	int cols;                      /* d_k 128, 16 lanes a column: value columns a lane group holds,
					* 0 (the default, 4) or 1 (4 times the blocks: more of the
					* device busy when few rows and heads make a small grid) */
	/* The chunked form (gdn_chunk.cuh, tensor cores; d_k = d_v = 128, not with ring): */
	int chunk;                     /* used when the new rows (T, or max_rows with rows) are at
					* least this; 0: SIXI_CUDA_GDN_CHUNK (unset or 0: never); -1: never */
	int max_rows;                  /* with rows: the largest rows[ns] (0: unknown, not chunked) */
	/* (the switch is read once; per launch the kernel is one or the other for every ns) */
	int chunk_rows;                /* rows per chunk: 0 (32), 16 or 64 */
	int chunk_tf32;                /* 0: split TF32 throughout; 1: plain TF32 for the products
					* with the state (10-30 % faster, ~6e-4 relative error) */
};

/* Launches on `stream` (a cudaStream_t, 0 for the default). */
int gdn_cuda_rows(const struct gdn_cuda_args *a, void *stream);

#ifdef __cplusplus
}
#endif
#endif
