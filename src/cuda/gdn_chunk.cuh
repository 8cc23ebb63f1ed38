/* gdn_chunk — the gated delta rule of gdn_cuda.h in chunked (WY / UT) form on tensor cores,
 * for d_k = d_v = 128. Included by gdn_cuda.cu; gdn_cuda_rows() picks it (see there).
 *
 * Algorithm: the chunkwise parallel form of DeltaNet / Gated DeltaNet (Yang et al., "Parallelizing
 * Linear Transformers with the Delta Rule over Sequence Length", 2024, and "Gated Delta Networks:
 * Improving Mamba2 with Delta Rule", 2025), in the notation of gdn.c's chunk_step, which it
 * follows line by line. Per row (gdn.h): S' = e^g S; u = beta (v - S'^T k); S = S' + k u^T;
 * o = scale S^T q. For a chunk of m rows with G_i = g_0 + .. + g_i:
 *   A[i][j] = beta_i e^{G_i - G_j} k_i.k_j (j < i),  (I + A) U = beta v,  (I + A) W = beta e^G k
 *   u = U - W S0                      (S0: the state at the chunk's start)
 *   o_i = scale (e^{G_i} S0^T q_i + sum_{j <= i} e^{G_i - G_j} (q_i.k_j) u_j)
 *   S_m = e^{G_{m-1}} S0 + sum_j e^{G_{m-1} - G_j} k_j u_j^T.
 * Every exponent is <= 0 (g <= 0). The two triangular systems are solved by forward substitution,
 * one thread per column.
 *
 * One block of 8 warps per (sequence, V-head). The state is read once into registers: warp w
 * holds value columns [16w, 16w + 16) as 16 m16n8 accumulator tiles (St rows c, columns x), which
 * serve both as the A operand of W S0 and Q S0 (the k index of a tile is then read in the order
 * 0, 2, 4, 6, 1, 3, 5, 7, which the B operand follows) and as the accumulator of the state
 * update. Rows are taken in chunks of at most CH (balanced: 33 rows at CH 32 are 17 + 16).
 *
 * Precision: every product runs as split TF32 (3xTF32: hi*hi + hi*lo + lo*hi, fp32 accumulate):
 * outputs and state within ~2e-6 of the CPU recurrence relative to the largest magnitude, as
 * the row kernel (test_gdn_chunk, H100). chunk_tf32 = 1 runs the products with the state in
 * plain TF32: ~6e-4 there, and 10-30 % faster from 8 rows. The substitution is fp32 on
 * CUDA cores.
 *
 * Speed (H100, 27B shape, reports/perf/spec-chunk-h100.txt): latency-bound, not memory-bound.
 * The state in registers (64 a thread) allows 2 blocks (16 warps) an SM, and the phases of a
 * chunk (loads, A and M, substitution, W S0, outputs, state update) run one after another, so
 * a log step of width 16 (33 rows, two chunks) takes 13.2 ms against 15.2 ms row by row and a
 * 1.6 ms floor (8.3x); from 6 new rows it beats the row kernel by 1.05-1.4x. Leaving out one
 * phase at a time (width 16) saved: W S0 and Q S0 4.9 ms, substitution 2.2, A and M 1.9,
 * outputs 0.9, state update 0.6; with all left out 3.0 ms remain. */

namespace gdn_chunk {

constexpr int D = 128;      /* d_k = d_v */
constexpr int P = D + 8;    /* smem row stride: the B fragments' float2 reads hit every bank once */
constexpr int NT = 256;     /* threads: 8 warps x 16 value columns */

__device__ __forceinline__ unsigned tf32(float x)
{
	unsigned r;
	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
	return r;
}

/* x = hi + lo, both TF32 */
__device__ __forceinline__ void split(float x, unsigned &hi, unsigned &lo)
{
	hi = tf32(x);
	lo = tf32(x - __uint_as_float(hi));
}

__device__ __forceinline__ void mma(float *d, const unsigned *a, const unsigned *b)
{
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
		     "{%0,%1,%2,%3};"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* d += a b in 3xTF32 from fp32 fragments (a: 4 values, b: 2); the two correction products go
 * to e, a chain of their own */
__device__ __forceinline__ void mma3(float *d, float *e, const float *a, const float *b)
{
	unsigned ah[4], al[4], bh[2], bl[2];
#pragma unroll
	for (int i = 0; i < 4; i++)
		split(a[i], ah[i], al[i]);
	split(b[0], bh[0], bl[0]);
	split(b[1], bh[1], bl[1]);
	mma(e, al, bh);
	mma(e, ah, bl);
	mma(d, ah, bh);
}

/* d += a b from a pre-split a: 3xTF32 as above (SPLIT), else TF32 (hi parts only) */
template <bool SPLIT> __device__ __forceinline__ void mma_s(float *d, float *e, const unsigned *ah, const unsigned *al, const float *b)
{
	unsigned bh[2], bl[2];
	if (!SPLIT) {
		bh[0] = tf32(b[0]), bh[1] = tf32(b[1]);
		mma(d, ah, bh);
		return;
	}
	split(b[0], bh[0], bl[0]);
	split(b[1], bh[1], bl[1]);
	mma(e, al, bh);
	mma(e, ah, bl);
	mma(d, ah, bh);
}

/* the same into one accumulator (the state update: 16 independent tiles give the overlap) */
__device__ __forceinline__ void mma3s(float *d, const unsigned *ah, const unsigned *al, const float *b)
{
	unsigned bh[2], bl[2];
	split(b[0], bh[0], bl[0]);
	split(b[1], bh[1], bl[1]);
	mma(d, al, bh);
	mma(d, ah, bl);
	mma(d, ah, bh);
}

template <int CH> struct smem {
	static constexpr size_t floats = (size_t)4 * CH * P + (size_t)CH * CH + (size_t)CH * (CH + 4) + 4 * CH;
	static constexpr size_t bytes = floats * sizeof(float);
};

} /* namespace gdn_chunk */

template <int CH, bool SPLIT>
__global__ void __launch_bounds__(gdn_chunk::NT, CH <= 32 ? 2 : 1) gdn_chunk_kernel(struct gdn_cuda_args a)
{
	using namespace gdn_chunk;
	static_assert(CH % 16 == 0 && CH <= 64, "chunks of 16, 32 or 64 rows");
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
	constexpr int MS = CH + 4; /* Ms row stride: M's B fragments hit distinct banks */
	extern __shared__ float4 smem_raw[];
	float *Ks = reinterpret_cast<float *>(smem_raw); /* [CH][P] keys */
	float *Qs = Ks + CH * P;                         /* [CH][P] queries of the output rows */
	float *Us = Qs + CH * P;                         /* [CH][P] v, then U, then u */
	float *Ws = Us + CH * P;                         /* [CH][P] W */
	float *As = Ws + CH * P;                         /* [CH][CH] A (strict lower) */
	float *Ms = As + CH * CH;                        /* [CH][MS] e^{G_i-G_j} q_i.k_j, output rows */
	float *gs = Ms + CH * MS, *bs = gs + CH, *Gs = bs + CH, *eG = Gs + CH;

	const int h = blockIdx.x, ns = blockIdx.y, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int gq = lane >> 2, tq = lane & 3; /* fragment row group and thread in group */
	const int kh = h % a.H_k;
	const int sq = a.seq ? a.seq[ns] : ns;
	const int T = a.rows ? a.rows[ns] : a.T;
	const int kept = a.kept[ns], n = kept + T;
	const size_t r0 = a.row0 ? (size_t)a.row0[ns] : (size_t)ns * a.T;
	const size_t qs = a.q_stride ? (size_t)a.q_stride : (size_t)a.H_k * D;
	const size_t vs = a.v_stride ? (size_t)a.v_stride : (size_t)a.H_v * D;
	const size_t gst = a.gb_stride ? (size_t)a.gb_stride : (size_t)a.H_v;
	const size_t os = a.o_stride ? (size_t)a.o_stride : (size_t)a.H_v * D;
	const bool wb = a.wb ? a.wb[ns] != 0 : a.write_back != 0;
	if (n == 0)
		return;
	float *__restrict__ st = a.state + ((size_t)sq * a.H_v + h) * (size_t)D * D;

	/* the state: s[nb] is the tile of columns c = 16 warp + gq (+8), x = 8 nb + 2 tq (+1) */
	const int c0 = 16 * warp;
	float s[16][4];
#pragma unroll
	for (int nb = 0; nb < 16; nb++) {
		float2 lo = *reinterpret_cast<const float2 *>(st + (size_t)(c0 + gq) * D + 8 * nb + 2 * tq);
		float2 hi = *reinterpret_cast<const float2 *>(st + (size_t)(c0 + gq + 8) * D + 8 * nb + 2 * tq);
		s[nb][0] = lo.x, s[nb][1] = lo.y, s[nb][2] = hi.x, s[nb][3] = hi.y;
	}

	const int nch = (n + CH - 1) / CH;
	for (int ci = 0; ci < nch; ci++) {
		const int t0 = (int)((long long)ci * n / nch), m = (int)((long long)(ci + 1) * n / nch) - t0;
		/* output rows: chunk rows i >= io (rows t >= kept), mo of them */
		const int io = kept > t0 ? (kept - t0 < m ? kept - t0 : m) : 0;
		const int mo = a.o ? m - io : 0;
		const bool last = ci == nch - 1;

		/* ---- load the chunk's rows ---- */
		for (int e = tid; e < m * (D / 4); e += NT) {
			const int i = e / (D / 4), x4 = e % (D / 4), t = t0 + i;
			const float *kp, *vp;
			if (t >= kept && a.nk != nullptr) {
				const size_t r = r0 + (size_t)(t - kept);
				kp = a.nk + r * qs + (size_t)kh * D;
				vp = a.nv + r * vs + (size_t)h * D;
				if (x4 == 0)
					gs[i] = __ldg(a.ng + r * gst + h), bs[i] = __ldg(a.nbeta + r * gst + h);
			} else {
				const size_t row = (size_t)sq * a.L + t;
				kp = a.k + (row * a.H_k + kh) * D;
				vp = a.v + (row * a.H_v + h) * D;
				if (x4 == 0)
					gs[i] = __ldg(a.g + row * a.H_v + h), bs[i] = __ldg(a.beta + row * a.H_v + h);
			}
			reinterpret_cast<float4 *>(Ks + i * P)[x4] = __ldg(reinterpret_cast<const float4 *>(kp) + x4);
			reinterpret_cast<float4 *>(Us + i * P)[x4] = __ldg(reinterpret_cast<const float4 *>(vp) + x4);
			if (i >= io && mo > 0) {
				const size_t r = r0 + (size_t)(t - kept);
				reinterpret_cast<float4 *>(Qs + (i - io) * P)[x4] =
					__ldg(reinterpret_cast<const float4 *>(a.q + r * qs + (size_t)kh * D) + x4);
			}
		}
		__syncthreads();
		if (warp == 0) { /* G: inclusive prefix sums of g, rows lane and lane + 32 */
			float x0 = lane < m ? gs[lane] : 0.f, x1 = lane + 32 < m ? gs[lane + 32] : 0.f;
#pragma unroll
			for (int o = 1; o < 32; o <<= 1) {
				float y0 = __shfl_up_sync(0xffffffffu, x0, o), y1 = __shfl_up_sync(0xffffffffu, x1, o);
				if (lane >= o)
					x0 += y0, x1 += y1;
			}
			x1 += __shfl_sync(0xffffffffu, x0, 31);
			if (lane < m)
				Gs[lane] = x0, eG[lane] = expf(x0);
			if (lane + 32 < m)
				Gs[lane + 32] = x1, eG[lane + 32] = expf(x1);
		}
		__syncthreads();

		/* ---- A and M: [K; Q] K^T, tiles of 16 x 8 spread over the warps ---- */
		{
			const int rk = (m + 15) / 16, rq = (mo + 15) / 16, cn = (m + 7) / 8;
			int idx = 0; /* the tiles below the diagonal only, dealt round the warps */
			for (int task = 0; task < (rk + rq) * cn; task++) {
				const int rt = task / cn, ct = task % cn;
				const bool isq = rt >= rk;
				const int last_row = isq ? io + (rt - rk) * 16 + 15 : rt * 16 + 15; /* j <= i (q), j < i (k) */
				if (8 * ct > last_row || idx++ % (NT / 32) != warp)
					continue;
				const float *X = isq ? Qs + (rt - rk) * 16 * P : Ks + rt * 16 * P;
				const float *Y = Ks + ct * 8 * P;
				float d[4] = { 0.f, 0.f, 0.f, 0.f }, e[4] = { 0.f, 0.f, 0.f, 0.f };
#pragma unroll 4
				for (int kb = 0; kb < D / 8; kb++) {
					const int x = 8 * kb + tq;
					float af[4] = { X[gq * P + x], X[(gq + 8) * P + x], X[gq * P + x + 4], X[(gq + 8) * P + x + 4] };
					float bf[2] = { Y[gq * P + x], Y[gq * P + x + 4] };
					mma3(d, e, af, bf);
				}
#pragma unroll
				for (int r = 0; r < 4; r++)
					d[r] += e[r];
#pragma unroll
				for (int r = 0; r < 4; r++) {
					const int i = (isq ? rt - rk : rt) * 16 + gq + (r >> 1) * 8, j = ct * 8 + 2 * tq + (r & 1);
					if (j >= m)
						continue;
					if (!isq) {
						if (i < m)
							As[i * CH + j] = j < i ? bs[i] * expf(Gs[i] - Gs[j]) * d[r] : 0.f;
					} else if (i < mo) {
						const int ii = io + i;
						Ms[i * MS + j] = j <= ii ? expf(Gs[ii] - Gs[j]) * d[r] : 0.f;
					}
				}
			}
		}
		__syncthreads();

		/* ---- forward substitution, one column a thread: U (threads 0..127), W (128..255) ---- */
		{
			const int c = tid & (D - 1);
			float *X = tid < D ? Us : Ws;
			const bool isw = tid >= D;
			for (int i = 0; i < m; i++) {
				float acc[4] = { isw ? bs[i] * eG[i] * Ks[i * P + c] : bs[i] * Us[i * P + c], 0.f, 0.f, 0.f };
				const float *ai = As + i * CH;
				int j = 0;
				for (; j + 3 < i; j += 4) { /* four chains, loads ahead of the products */
					const float4 av = *reinterpret_cast<const float4 *>(ai + j);
					const float x0 = X[j * P + c], x1 = X[(j + 1) * P + c], x2 = X[(j + 2) * P + c], x3 = X[(j + 3) * P + c];
					acc[0] = fmaf(-av.x, x0, acc[0]);
					acc[1] = fmaf(-av.y, x1, acc[1]);
					acc[2] = fmaf(-av.z, x2, acc[2]);
					acc[3] = fmaf(-av.w, x3, acc[3]);
				}
				for (; j < i; j++)
					acc[0] = fmaf(-ai[j], X[j * P + c], acc[0]);
				X[i * P + c] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
			}
		}
		__syncthreads();

		/* ---- u = U - W S0 (rows of W, this warp's columns), then the outputs (rows of Q) ---- */
#pragma unroll 1
		for (int phase = 0; phase < 2; phase++) {
			const int rows = phase == 0 ? m : mo;
			const float *X = phase == 0 ? Ws : Qs;
			constexpr int GT = SPLIT ? 2 : 4; /* tiles a pass: 16 accumulators */
#pragma unroll 1
			for (int nt0 = 0; nt0 < (rows + 7) / 8; nt0 += GT) {
				float d[GT][4], e[GT][4];
#pragma unroll
				for (int u = 0; u < GT; u++)
#pragma unroll
					for (int r = 0; r < 4; r++)
						d[u][r] = e[u][r] = 0.f;
#pragma unroll
				for (int kb = 0; kb < 16; kb++) {
					unsigned ah[4], al[4];
					split(s[kb][0], ah[0], al[0]); /* row gq, k tq     = x 2tq     */
					split(s[kb][2], ah[1], al[1]); /* row gq+8, k tq                */
					split(s[kb][1], ah[2], al[2]); /* row gq, k tq+4   = x 2tq + 1 */
					split(s[kb][3], ah[3], al[3]);
#pragma unroll
					for (int u = 0; u < GT; u++) {
						if (nt0 + u < (rows + 7) / 8) {
							float2 b = *reinterpret_cast<const float2 *>(X + ((nt0 + u) * 8 + gq) * P + 8 * kb + 2 * tq);
							float bf[2] = { b.x, b.y };
							mma_s<SPLIT>(d[u], e[u], ah, al, bf);
						}
					}
				}
#pragma unroll
				for (int u = 0; u < GT; u++)
#pragma unroll
					for (int r = 0; r < 4; r++)
						d[u][r] += e[u][r];
				if (phase == 0) {
#pragma unroll
					for (int u = 0; u < GT; u++)
#pragma unroll
						for (int r = 0; r < 4; r++) {
							const int c = c0 + gq + (r >> 1) * 8, i = (nt0 + u) * 8 + 2 * tq + (r & 1);
							if (i < rows)
								Us[i * P + c] -= d[u][r];
						}
					continue;
				}
				/* outputs: o_i = scale (e^{G_i} S0^T q_i + sum_{j <= i} M_ij u_j), the sum as
				 * u^T M^T on the tensor cores (A: this warp's columns of u, B: M) */
#pragma unroll
				for (int u = 0; u < GT; u++)
#pragma unroll
					for (int r = 0; r < 4; r++) {
						const int i = (nt0 + u) * 8 + 2 * tq + (r & 1);
						d[u][r] *= i < rows ? eG[io + i] : 0.f;
						e[u][r] = 0.f;
					}
				const int last_i = io + min(rows, (nt0 + GT) * 8) - 1, jbn = min(last_i / 8 + 1, (m + 7) / 8);
#pragma unroll 1
				for (int jb = 0; jb < jbn; jb++) {
					const int j0 = 8 * jb + tq, j1 = j0 + 4;
					float af[4] = { j0 < m ? Us[j0 * P + c0 + gq] : 0.f, j0 < m ? Us[j0 * P + c0 + gq + 8] : 0.f,
							j1 < m ? Us[j1 * P + c0 + gq] : 0.f, j1 < m ? Us[j1 * P + c0 + gq + 8] : 0.f };
					unsigned ah[4], al[4];
#pragma unroll
					for (int q = 0; q < 4; q++) {
						if (SPLIT)
							split(af[q], ah[q], al[q]);
						else
							ah[q] = tf32(af[q]);
					}
#pragma unroll
					for (int u = 0; u < GT; u++) {
						if (nt0 + u < (rows + 7) / 8) {
							/* B: (j, output row rr) = M[rr][j], for j <= io + rr only: the A and M
							 * phase leaves the tiles above the diagonal unwritten */
							const int rr = (nt0 + u) * 8 + gq, jm = min(m - 1, io + rr);
							float bf[2] = { j0 <= jm ? Ms[rr * MS + j0] : 0.f, j1 <= jm ? Ms[rr * MS + j1] : 0.f };
							mma_s<SPLIT>(d[u], e[u], ah, al, bf);
						}
					}
				}
#pragma unroll
				for (int u = 0; u < GT; u++)
#pragma unroll
					for (int r = 0; r < 4; r++) {
						const int c = c0 + gq + (r >> 1) * 8, i = (nt0 + u) * 8 + 2 * tq + (r & 1);
						if (i < rows)
							a.o[(r0 + (size_t)(t0 + io + i - kept)) * os + (size_t)h * D + c] = a.scale * (d[u][r] + e[u][r]);
					}
			}
			__syncwarp(); /* phase 1 and the state update read the u this warp wrote */
		}

		/* ---- the state at the chunk's end: e^{G_last} S0 + sum_j u_j (e^{G_last - G_j} k_j)^T ---- */
		if (!last || wb) {
			const float el = eG[m - 1], Gl = Gs[m - 1];
#pragma unroll
			for (int nb = 0; nb < 16; nb++)
#pragma unroll
				for (int r = 0; r < 4; r++)
					s[nb][r] *= el;
#pragma unroll 1
			for (int jb = 0; jb < (m + 7) / 8; jb++) {
				const int j0 = 8 * jb + tq, j1 = j0 + 4;
				const float f0 = j0 < m ? expf(Gl - Gs[j0]) : 0.f, f1 = j1 < m ? expf(Gl - Gs[j1]) : 0.f;
				/* A: (c, j) = u_j[c] decayed; rows gq, gq + 8, k tq, tq + 4 */
				float af[4] = { j0 < m ? f0 * Us[j0 * P + c0 + gq] : 0.f, j0 < m ? f0 * Us[j0 * P + c0 + gq + 8] : 0.f,
						j1 < m ? f1 * Us[j1 * P + c0 + gq] : 0.f, j1 < m ? f1 * Us[j1 * P + c0 + gq + 8] : 0.f };
				unsigned ah[4], al[4];
#pragma unroll
				for (int i = 0; i < 4; i++)
					split(af[i], ah[i], al[i]);
#pragma unroll
				for (int nb = 0; nb < 16; nb++) {
					/* B: (j, x) = k_j[x], k tq, tq + 4, n gq */
					float bf[2] = { j0 < m ? Ks[j0 * P + 8 * nb + gq] : 0.f, j1 < m ? Ks[j1 * P + 8 * nb + gq] : 0.f };
					if (SPLIT)
						mma3s(s[nb], ah, al, bf);
					else
						mma_s<false>(s[nb], nullptr, ah, al, bf);
				}
			}
		}
		__syncthreads(); /* the next chunk overwrites every buffer */
	}
	if (wb) {
#pragma unroll
		for (int nb = 0; nb < 16; nb++) {
			*reinterpret_cast<float2 *>(st + (size_t)(c0 + gq) * D + 8 * nb + 2 * tq) = make_float2(s[nb][0], s[nb][1]);
			*reinterpret_cast<float2 *>(st + (size_t)(c0 + gq + 8) * D + 8 * nb + 2 * tq) = make_float2(s[nb][2], s[nb][3]);
		}
	}
}

template <int CH, bool SPLIT> static int launch_chunk(const struct gdn_cuda_args *a, cudaStream_t stream)
{
	const size_t sm = gdn_chunk::smem<CH>::bytes;
	/* every launch: the attribute belongs to the current device (not a stream operation) */
	cudaError_t e = cudaFuncSetAttribute(gdn_chunk_kernel<CH, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
	if (e != cudaSuccess)
		return (int)e;
	cudaLaunchAttribute at = {};
	at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at.val.programmaticStreamSerializationAllowed = 1;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3((unsigned)a->H_v, (unsigned)a->ns);
	cfg.blockDim = dim3(gdn_chunk::NT);
	cfg.dynamicSmemBytes = sm;
	cfg.stream = stream;
	cfg.attrs = &at;
	cfg.numAttrs = a->pdl ? 1 : 0;
	return (int)cudaLaunchKernelEx(&cfg, gdn_chunk_kernel<CH, SPLIT>, *a);
}
