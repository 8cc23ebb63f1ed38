/* moe_cuda — the qwen35moe MLP on the GPU (included by cuda_model.cu after its product kernels).
 * Same math as model.c's layer_moe: router logits W_r h, a softmax over all experts, the
 * n_expert_used most probable (ties: the lower index), their probabilities divided by their sum
 * (at least 2^-14); y = sigmoid(w_s . h) * shared(h) + the chosen experts' SwiGLU outputs times
 * those weights, added in expert order.
 *
 * A pass of N rows, all on the device (a decode pass is captured as a CUDA graph like the dense
 * one): the shared expert and the router through matmul_n; moe_route_kernel (a block a row);
 * moe_group_kernel (one block: count the (row, choice) pairs per expert, prefix sums, the list of
 * experts chosen, each pair's place in the grouped order); moe_gather_kernel copies each pair's
 * row of h to its place; moe_mm runs the expert products over (output, chosen expert) blocks:
 * each block reads its expert's rows of the gathered input, so each chosen expert's matrices are
 * read once a pass (SwiGLU of gate and up in the same kernel); moe_combine_kernel adds them to
 * the row (and does the add_norm that follows, but after the last layer). Expert products are
 * the warp-per-output form of mm_small over dot_rows (every weight type the dense products
 * read), its warps per output fixed by the layer's shape, so a row's floats do not depend on the
 * pass's other rows. Q8_0 experts meet their gathered inputs
 * quantised by act_q8_kernel, as matmul_n does.
 * Each expert's matrices are their own dmat (a slice of the 3-D tensor, uploaded by get_mat),
 * with device arrays of the dmats per layer. Passes of tc_rows rows or more with BF16 or Q8_0
 * experts take mm_tc's block instead (moe_mm_tc: gate and up apart, then silu_mul_kernel);
 * otherwise wide passes reread an expert's weights every 8 rows (from the caches). */

#define MOE_MAX_USED 64    /* most experts a row (n_expert_used) */
#define MOE_MAX_EXPERTS 4096

struct moe_layer {
	struct dmat router;               /* n_embd -> n_expert (ffn_gate_inp) */
	struct dmat shexp_gate;           /* n_embd -> 1 (ffn_gate_inp_shexp) */
	struct dmat *gate, *up, *down;    /* device arrays [n_expert]: expert e's matrices */
	int gate_type, down_type;         /* GGUF types of the expert tensors */
	int kw_gu, kw_down;               /* moe_mm's warps per output */
};

/* Pass buffers of the expert layers, for up to `cap` rows (K = n_expert_used pairs a row). */
struct moe_bufs {
	int cap;
	int no_renorm;  /* a test hook (SIXI_CUDA_MOE_FAULT=renorm): the router's weights not renormalised,
			 * so that the agreement test shows it would catch a wrong router */
	float *logit;   /* [cap][n_expert] router logits */
	float *sgate;   /* [cap] shared expert gate logits */
	int *chosen;    /* [cap * K] experts of pair r * K + j, most probable first */
	float *wt;      /* [cap * K] their weights */
	int *at;        /* [cap * K] each pair's place in the grouped order */
	int *grp;       /* [cap * K] the pair at each place */
	int *off;       /* [n_expert + 1] the first place of each expert */
	int *act;       /* [n_expert + 1] the chosen experts, ascending; their number at act[n_expert] */
	float *xg;      /* [cap * K][n_embd] rows of h in grouped order */
	float *mg;      /* [cap * K][n_ff_exp] silu(gate) * up */
	float *mu;      /* [cap * K][n_ff_exp] up, where the tensor-core product computes gate and up apart */
	float *mo;      /* [cap * K][n_embd] expert outputs */
	int8_t *xq;     /* [cap * K][n_in] Q8_0 quants of xg or mg (n_in: n_embd or n_ff_exp) */
	float *xd;      /* [cap * K][n_in / 32] their scales */
};

/* ---- loading ---- */

struct slice_find {
	struct model_tensor t;
};

static const struct model_tensor *slice_lookup(void *ctx, const char *name)
{
	(void)name;
	return &((struct slice_find *)ctx)->t;
}

/* The warps per output of an expert product: as matmul_n for a launch of K experts (one row's),
 * fixed per layer so that a row's sums are the same in any pass. */
static int moe_kw(const struct cuda_model *m, int outs, int n_in, int type)
{
	int kw = 1, q8 = type == GGUF_TENSOR_Q8_0;
	long acc = (long)outs * m->cfg.n_expert_used;
	while (kw < 8 && acc * kw < 64L * m->n_sm && n_in >= (q8 ? 2048 : 512) * kw)
		kw *= 2;
	return kw;
}

/* Expert matrices of a 3-D tensor [n_in, n_total, n_expert]: rows [first, first + n_out) of each
 * expert (a merged gate_up tensor holds gate rows then up rows), one dmat each, into a device
 * array *out. */
static int moe_get_experts(struct cuda_model *m, struct loader *ld, struct dmat **out, int *type, const char *name,
			   int n_in, int n_total, int first, int n_out)
{
	const struct model_config *c = &m->cfg;
	const struct model_tensor *t = ld->find(ld->ctx, name);
	if (!t) {
		err_set(ld->err, ld->errlen, "%s: missing tensor '%s'", ld->source, name);
		return -EINVAL;
	}
	uint64_t rb = row_bytes(t->type, (uint64_t)n_in);
	if (rb == 0) {
		err_set(ld->err, ld->errlen, "%s: tensor '%s' has type %s; the CUDA engine reads F32, F16, BF16, Q8_0",
			ld->source, name, gguf_type_name(t->type));
		return -EINVAL;
	}
	uint64_t X = (uint64_t)c->n_expert;
	if (t->n_dims != 3 || t->ne[0] != (uint64_t)n_in || t->ne[1] != (uint64_t)n_total || t->ne[2] != X ||
	    t->n_bytes != rb * (uint64_t)n_total * X || !t->data) {
		err_set(ld->err, ld->errlen, "%s: tensor '%s' has shape [%llu, %llu, %llu] or size unlike the expected "
			"[%d, %d, %d] (qwen35moe.expert_count %d, expert_feed_forward_length %d, embedding_length %d)",
			ld->source, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
			(unsigned long long)(t->n_dims > 2 ? t->ne[2] : 1), n_in, n_total, c->n_expert, c->n_expert,
			c->n_ff_exp, c->n_embd);
		return -EINVAL;
	}
	struct dmat *host = (struct dmat *)calloc((size_t)c->n_expert, sizeof *host);
	if (!host) {
		err_set(ld->err, ld->errlen, "out of memory");
		return -ENOMEM;
	}
	struct slice_find sf;
	struct loader sl = { slice_lookup, &sf, ld->source, ld->err, ld->errlen };
	int rc = 0;
	for (int e = 0; e < c->n_expert && !rc; e++) {
		sf.t = *t;
		sf.t.n_dims = 2;
		sf.t.ne[1] = (uint64_t)n_out;
		sf.t.ne[2] = 1;
		sf.t.data = (const uint8_t *)t->data + rb * ((uint64_t)e * n_total + first);
		sf.t.n_bytes = rb * (uint64_t)n_out;
		rc = get_mat(m, &sl, &host[e], name, n_in, n_out);
	}
	if (!rc) {
		*out = (struct dmat *)upload(m, host, sizeof *host * (size_t)c->n_expert, ld->err, ld->errlen);
		rc = *out ? 0 : -ENOMEM;
		*type = host[0].type;
	}
	free(host);
	return rc;
}

/* The expert tensors of layer il (the shared expert is the dense MLP's dmats, from *_shexp). */
static int moe_load(struct cuda_model *m, struct loader *ld, int il)
{
	const struct model_config *c = &m->cfg;
	struct dlayer *l = &m->layers[il];
	int E = c->n_embd, F = c->n_ff_exp, rc;
	char n[96];
	l->moe = (struct moe_layer *)calloc(1, sizeof *l->moe);
	if (!l->moe) {
		err_set(ld->err, ld->errlen, "out of memory");
		return -ENOMEM;
	}
	struct moe_layer *q = l->moe;
#define NAME(s) (snprintf(n, sizeof(n), "blk.%d.%s", il, s), n)
	if ((rc = get_mat(m, ld, &q->router, NAME("ffn_gate_inp.weight"), E, c->n_expert)) ||
	    (rc = get_mat(m, ld, &q->shexp_gate, NAME("ffn_gate_inp_shexp.weight"), E, 1)) ||
	    (rc = moe_get_experts(m, ld, &q->down, &q->down_type, NAME("ffn_down_exps.weight"), F, E, 0, E)))
		return rc;
	int gt = 0;
	if (ld->find(ld->ctx, NAME("ffn_gate_up_exps.weight"))) { /* merged: gate rows first */
		if ((rc = moe_get_experts(m, ld, &q->gate, &q->gate_type, n, E, 2 * F, 0, F)) ||
		    (rc = moe_get_experts(m, ld, &q->up, &gt, n, E, 2 * F, F, F)))
			return rc;
	} else if ((rc = moe_get_experts(m, ld, &q->gate, &q->gate_type, NAME("ffn_gate_exps.weight"), E, F, 0, F)) ||
		   (rc = moe_get_experts(m, ld, &q->up, &gt, NAME("ffn_up_exps.weight"), E, F, 0, F))) {
		return rc;
	}
#undef NAME
	if (gt != q->gate_type) {
		err_set(ld->err, ld->errlen, "%s: layer %d: the experts' gate and up matrices have different types (%s, %s); "
			"the CUDA engine needs one", ld->source, il, gguf_type_name((uint32_t)q->gate_type),
			gguf_type_name((uint32_t)gt));
		return -EINVAL;
	}
	q->kw_gu = moe_kw(m, F, E, q->gate_type);
	q->kw_down = moe_kw(m, E, F, q->down_type);
	return 0;
}

static void moe_free_layer(struct dlayer *l)
{
	free(l->moe); /* its device arrays are tracked allocations */
	l->moe = NULL;
}

static void moe_free_bufs(struct cuda_model *m)
{
	struct moe_bufs *b = m->moe;
	if (!b)
		return;
	void *p[] = { b->logit, b->sgate, b->chosen, b->wt, b->at, b->grp, b->off, b->act, b->xg, b->mg, b->mu, b->mo,
		      b->xq, b->xd };
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		cudaFree(p[i]);
	memset(b, 0, sizeof *b);
}

/* The buffers for passes of up to cap rows (ensure_rows calls it; graphs are dropped there). */
static int moe_ensure(struct cuda_model *m, int cap)
{
	const struct model_config *c = &m->cfg;
	if (c->n_expert <= 0)
		return 0;
	if (!m->moe) {
		if (!(m->moe = (struct moe_bufs *)calloc(1, sizeof *m->moe)))
			return cuda_fail(m, cudaErrorMemoryAllocation, "expert buffers");
		const char *f = getenv("SIXI_CUDA_MOE_FAULT");
		m->moe->no_renorm = f && strcmp(f, "renorm") == 0;
	}
	struct moe_bufs *b = m->moe;
	if (cap <= b->cap)
		return 0;
	int no_renorm = b->no_renorm;
	moe_free_bufs(m);
	b->no_renorm = no_renorm;
	size_t R = (size_t)cap, K = (size_t)c->n_expert_used, X = (size_t)c->n_expert, E = (size_t)c->n_embd;
	size_t F = (size_t)c->n_ff_exp;
	size_t nq = ((size_t)imax(c->n_embd, c->n_ff_exp) + 31) & ~(size_t)31;
	struct {
		void **p;
		size_t bytes;
	} want[] = {
		{ (void **)&b->logit, 4 * R * X },   { (void **)&b->sgate, 4 * R },      { (void **)&b->chosen, 4 * R * K },
		{ (void **)&b->wt, 4 * R * K },      { (void **)&b->at, 4 * R * K },     { (void **)&b->grp, 4 * R * K },
		{ (void **)&b->off, 4 * (X + 1) },   { (void **)&b->act, 4 * (X + 1) },  { (void **)&b->xg, 4 * R * K * E },
		{ (void **)&b->mg, 4 * R * K * F },  { (void **)&b->mo, 4 * R * K * E }, { (void **)&b->xq, R * K * nq },
		{ (void **)&b->xd, 4 * R * K * (nq / 32) }, { (void **)&b->mu, 4 * R * K * F },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		cudaError_t e = cudaMalloc(want[i].p, want[i].bytes);
		if (e != cudaSuccess) {
			moe_free_bufs(m);
			return cuda_fail(m, e, "expert buffers");
		}
	}
	b->cap = cap;
	return 0;
}

/* ---- kernels ---- */

/* Block reductions for 256-thread blocks. (v, i) pairs: the larger v, then the lower i. */
__device__ __forceinline__ void moe_best(float &v, int &i, float v2, int i2)
{
	if (v2 > v || (v2 == v && i2 < i))
		v = v2, i = i2;
}

/* Routing of row blockIdx.x (model.c's moe_route): softmax of the logits (max subtracted, the
 * sum in double), then K rounds of an argmax over the experts not yet taken, ties to the lower
 * index; weights divided by their sum (at least 2^-14; renorm 0: left as they are, the test
 * hook), most probable first. Threads: 256. */
__global__ void __launch_bounds__(256) moe_route_kernel(const float *logit, int X, int K, int renorm, int *chosen,
							float *wt)
{
	pdl_enter();
	__shared__ float p[MOE_MAX_EXPERTS];
	__shared__ float sv[8];
	__shared__ int si[8];
	__shared__ double sd[8];
	__shared__ float w[MOE_MAX_USED];
	__shared__ int ch[MOE_MAX_USED];
	const int r = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const float *l = logit + (size_t)r * X;
	float mx = -INFINITY;
	for (int e = tid; e < X; e += 256) {
		p[e] = l[e];
		mx = fmaxf(mx, p[e]);
	}
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
	if (lane == 0)
		sv[warp] = mx;
	__syncthreads();
	mx = sv[0];
	for (int i = 1; i < 8; i++)
		mx = fmaxf(mx, sv[i]);
	double s = 0;
	for (int e = tid; e < X; e += 256) {
		p[e] = expf(p[e] - mx);
		s += p[e];
	}
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, off);
	if (lane == 0)
		sd[warp] = s;
	__syncthreads();
	s = 0;
	for (int i = 0; i < 8; i++)
		s += sd[i];
	float inv = (float)(1.0 / s);
	for (int e = tid; e < X; e += 256)
		p[e] *= inv;
	__syncthreads();
	for (int j = 0; j < K; j++) {
		float bv = -1.f;
		int bi = X;
		for (int e = tid; e < X; e += 256)
			moe_best(bv, bi, p[e], e); /* taken experts hold -1, below every probability */
#pragma unroll
		for (int off = 16; off > 0; off >>= 1) {
			float v2 = __shfl_xor_sync(0xffffffffu, bv, off);
			int i2 = __shfl_xor_sync(0xffffffffu, bi, off);
			moe_best(bv, bi, v2, i2);
		}
		if (lane == 0)
			sv[warp] = bv, si[warp] = bi;
		__syncthreads();
		if (tid == 0) {
			for (int i = 1; i < 8; i++)
				moe_best(bv, bi, sv[i], si[i]);
			if (bi >= X) /* NaN logits: a valid index all the same (the row's output is NaN anyway) */
				bi = j % X;
			ch[j] = bi;
			w[j] = p[bi];
			p[bi] = -1.f;
		}
		__syncthreads();
	}
	if (tid == 0) {
		float sum = 0.f;
		for (int j = 0; j < K; j++)
			sum += w[j];
		if (sum < 6.103515625e-5f || !renorm)
			sum = renorm ? 6.103515625e-5f : 1.f;
		for (int j = 0; j < K; j++) {
			chosen[(size_t)r * K + j] = ch[j];
			wt[(size_t)r * K + j] = w[j] / sum;
		}
	}
}

/* The pairs grouped by expert (one block of 1024 threads; X <= 4096): per expert the count, its
 * first place (off, exclusive prefix sum), the chosen experts in ascending order (act, their
 * number at act[X]); then every pair takes a place in its expert's range (at, and grp back). The
 * order inside an expert's range is the atomics' and does not matter: every row is computed on
 * its own. */
__global__ void __launch_bounds__(1024) moe_group_kernel(const int *chosen, int NK, int X, int *off, int *act, int *at,
							 int *grp)
{
	pdl_enter();
	__shared__ int cnt[MOE_MAX_EXPERTS];
	__shared__ int ws1[32], ws2[32];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	for (int e = tid; e < X; e += 1024)
		cnt[e] = 0;
	__syncthreads();
	for (int i = tid; i < NK; i += 1024)
		atomicAdd(&cnt[chosen[i]], 1);
	__syncthreads();
	/* each thread a run of C experts: its sums, scanned over the block */
	const int C = (X + 1023) / 1024, e0 = tid * C;
	int s1 = 0, s2 = 0;
	for (int e = e0; e < e0 + C && e < X; e++)
		s1 += cnt[e], s2 += cnt[e] > 0;
	int i1 = s1, i2 = s2; /* inclusive scans over the warp */
#pragma unroll
	for (int d = 1; d < 32; d <<= 1) {
		int a = __shfl_up_sync(0xffffffffu, i1, d), b = __shfl_up_sync(0xffffffffu, i2, d);
		if (lane >= d)
			i1 += a, i2 += b;
	}
	if (lane == 31)
		ws1[warp] = i1, ws2[warp] = i2;
	__syncthreads();
	int b1 = 0, b2 = 0;
	for (int w = 0; w < warp; w++)
		b1 += ws1[w], b2 += ws2[w];
	b1 += i1 - s1, b2 += i2 - s2; /* exclusive */
	__syncthreads();
	for (int e = e0; e < e0 + C && e < X; e++) {
		int c = cnt[e];
		off[e] = b1;
		if (c > 0)
			act[b2++] = e;
		cnt[e] = b1; /* the cursor of the scatter below */
		b1 += c;
	}
	if (tid == 1023) {
		off[X] = b1;
		act[X] = b2;
	}
	__syncthreads();
	for (int i = tid; i < NK; i += 1024) {
		int pl = atomicAdd(&cnt[chosen[i]], 1);
		at[i] = pl;
		grp[pl] = i;
	}
}

/* xg[i] = h[grp[i] / K]: the rows in grouped order. Grid: N * K blocks. */
__global__ void moe_gather_kernel(const float *h, int E, int K, const int *grp, float *xg)
{
	pdl_enter();
	const int i = blockIdx.x, r = grp[i] / K;
	const float4 *src = reinterpret_cast<const float4 *>(h + (size_t)r * E);
	float4 *dst = reinterpret_cast<float4 *>(xg + (size_t)i * E);
	for (int t = threadIdx.x; t < E / 4; t += blockDim.x)
		dst[t] = src[t];
}

/* Expert products: block (x, j) computes outputs of the j-th chosen expert (act[j]; blocks past
 * the number chosen return) for the rows grouped to it, kw warps an output (mm_small's form and
 * sums; P = 2: gate and up, stored as silu(gate) * up). x: rows of the gathered input (xs apart;
 * Q8_0: xq/xd quantised, nq apart), y: the same places, ys apart. */
template <int R, int U, int P>
__global__ void __launch_bounds__(256) moe_mm(const struct dmat *w0s, const struct dmat *w1s, const int *act,
					      const int *off, int X, const float *x, int xs, const int8_t *xq,
					      const float *xd, int nq, float *y, int ys, int n_out, int kw)
{
	pdl_enter();
	const int j = blockIdx.y;
	if (j >= act[X])
		return; /* uniform per block */
	const int e = act[j], r0 = off[e], n = off[e + 1] - r0;
	struct dmat w[P];
	w[0] = w0s[e];
	if (P == 2)
		w[P - 1] = w1s[e];
	struct mm_args a; /* the fields dot_rows reads */
	a.x = x + (size_t)r0 * xs;
	a.xs = xs;
	a.N = n;
	a.xq = xq ? xq + (size_t)r0 * nq : NULL;
	a.xd = xd ? xd + (size_t)r0 * (nq / 32) : NULL;
	a.nq = nq;
	__shared__ float part[P][8][R];
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int o = (blockIdx.x * 8 + warp) / kw, q = warp % kw;
	const bool live = o < n_out;
	float *yb = y + (size_t)r0 * ys;
	for (int rr = 0; rr < n; rr += R) {
		float acc[P][R];
#pragma unroll
		for (int p = 0; p < P; p++)
#pragma unroll
			for (int r = 0; r < R; r++)
				acc[p][r] = 0.f;
		if (live)
#pragma unroll
			for (int p = 0; p < P; p++)
				dot_rows<R, U>(w[p], o, a, rr, (q * 32 + lane) * 8, 256 * kw, acc[p]);
#pragma unroll
		for (int p = 0; p < P; p++)
#pragma unroll
			for (int r = 0; r < R; r++)
				acc[p][r] = warp_sum(acc[p][r]);
		if (kw == 1) {
#pragma unroll
			for (int r = 0; r < R; r++)
				if (live && lane == 0 && rr + r < n)
					yb[(size_t)(rr + r) * ys + o] = P == 2 ? silu(acc[0][r]) * acc[P - 1][r] : acc[0][r];
			continue;
		}
		if (lane == 0)
#pragma unroll
			for (int p = 0; p < P; p++)
#pragma unroll
				for (int r = 0; r < R; r++)
					part[p][warp][r] = acc[p][r];
		__syncthreads();
		if (live && q == 0 && lane < R && rr + lane < n) {
			float t[P];
#pragma unroll
			for (int p = 0; p < P; p++) {
				t[p] = 0.f;
				for (int i = 0; i < kw; i++)
					t[p] += part[p][warp + i][lane];
			}
			yb[(size_t)(rr + lane) * ys + o] = P == 2 ? silu(t[0]) * t[P - 1] : t[0];
		}
		__syncthreads();
	}
}

/* The tensor-core form (passes of tc_rows rows or more, BF16 or Q8_0 experts): block (x, y, j)
 * is mm_tc's block (x, y) over the rows grouped to the j-th chosen expert (blocks past its rows
 * or past the number chosen return). P = 2: gate into y0 and up into y1 (tiles of 16 outputs
 * each), then silu_mul_kernel. A row's floats are mm_tc's at any width. */
template <int NT, int P>
__global__ void __launch_bounds__(256) moe_mm_tc(const struct dmat *w0s, const struct dmat *w1s, const int *act,
						 const int *off, int X, const float *x, int xs, const int8_t *xq,
						 const float *xd, float *y0, float *y1, int ys, int tiles)
{
	pdl_enter();
	const int j = blockIdx.z;
	if (j >= act[X])
		return;
	const int e = act[j], r0 = off[e], n = off[e + 1] - r0;
	if ((int)blockIdx.x * 8 * NT >= n)
		return;
	const int k = P == 2 && (int)blockIdx.y >= tiles; /* gate or up: one matrix a block */
	struct mm_args a; /* the fields mm_tc_block reads */
	a.n_mat = 1;
	a.w[0] = k ? w1s[e] : w0s[e];
	a.y[0] = (k ? y1 : y0) + (size_t)r0 * ys;
	a.ys[0] = ys;
	a.end[0] = tiles;
	a.x = x + (size_t)r0 * xs;
	a.xs = xs;
	a.N = n;
	a.xq = xq ? xq + (size_t)r0 * xs : NULL;
	a.xd = xd ? xd + (size_t)r0 * (xs / 32) : NULL;
	a.nq = xs;
	mm_tc_block<1, NT>(a, blockIdx.x, blockIdx.y - k * tiles);
}

/* y[r] = sigmoid(sgate[r]) * y[r] + sum over the row's experts, in expert order, of weight x
 * output (model.c's order); then, with nw, the add_norm that follows (x[r] += y[r], h[r] =
 * rmsnorm(x[r]) * nw: add_norm_kernel's floats) in the same block. Grid: N blocks of 256. */
__global__ void __launch_bounds__(256) moe_combine_kernel(float *y, int E, const float *sgate, const int *chosen,
							  const float *wt, const int *at, const float *mo, int K, float *x,
							  const float *nw, float *h, float eps)
{
	pdl_enter();
	__shared__ int pl[MOE_MAX_USED];
	__shared__ float pw[MOE_MAX_USED];
	const int r = blockIdx.x;
	if (threadIdx.x == 0) { /* the row's pairs by expert index (insertion sort of K) */
		int ex[MOE_MAX_USED];
		for (int j = 0; j < K; j++) {
			int p = r * K + j, e = chosen[p], i = j;
			for (; i > 0 && ex[i - 1] > e; i--)
				ex[i] = ex[i - 1], pl[i] = pl[i - 1], pw[i] = pw[i - 1];
			ex[i] = e, pl[i] = at[p], pw[i] = wt[p];
		}
	}
	__syncthreads();
	const float g = 1.0f / (1.0f + expf(-sgate[r]));
	float *yr = y + (size_t)r * E;
	for (int t = threadIdx.x; t < E; t += blockDim.x) {
		float v = yr[t] * g;
		for (int j = 0; j < K; j++)
			v += pw[j] * mo[(size_t)pl[j] * E + t];
		yr[t] = v;
	}
	if (nw) {
		__shared__ float sh[32];
		__syncthreads(); /* the block's writes of y are visible to it */
		add_norm_row(x, y, nw, h, E, eps, 1, NULL, r, sh);
	}
}

/* ---- the layer ---- */

/* The Q8_0 input of an expert product (as matmul_n quantises a Q8_0 product's input): NK rows of
 * n_in at x (n_in apart) into the buffers' xq/xd, rows n_in apart; other types read x as it is. */
static void moe_quant(struct cuda_model *m, int type, const float *x, int n_in, int NK, const int8_t **xq,
		      const float **xd)
{
	struct moe_bufs *b = m->moe;
	*xq = NULL, *xd = NULL;
	if (type != GGUF_TENSOR_Q8_0)
		return;
	for (int r0 = 0; r0 < NK; r0 += 65535) { /* the grid's y is a row: at most 65535 a launch */
		int n = NK - r0 < 65535 ? NK - r0 : 65535;
		launch(m, act_q8_kernel, dim3((unsigned)((n_in / 32 + 7) / 8), (unsigned)n), 256, x + (size_t)r0 * n_in,
		       n_in, n_in, b->xq + (size_t)r0 * n_in, b->xd + (size_t)r0 * (n_in / 32));
	}
	*xq = b->xq, *xd = b->xd;
}

/* Whether the expert products of an N-row pass take the tensor-core form: as use_tc for the
 * dense products (N >= tc_rows, BF16 or Q8_0, inputs a multiple of 32), but only where tc_rows is
 * set (SIXI_CUDA_TC_ROWS): the default thresholds were measured on dense products, where every row
 * meets every matrix; an expert meets about N k / n_expert rows. */
static int moe_use_tc(const struct cuda_model *m, const struct moe_layer *q, int N)
{
	const struct model_config *c = &m->cfg;
	int ok = 1;
	for (int t : { q->gate_type, q->down_type })
		ok &= t == GGUF_TENSOR_BF16 || t == GGUF_TENSOR_Q8_0;
	return ok && m->tc_rows > 0 && N >= m->tc_rows && c->n_embd % 32 == 0 && c->n_ff_exp % 32 == 0;
}

/* moe_mm_tc over tiles of 8 NT rows: NT from the rows an expert gets on average. */
template <int P>
static void moe_launch_tc(struct cuda_model *m, const struct dmat *w0, const struct dmat *w1, const float *x, int xs,
			  const int8_t *xq, const float *xd, float *y0, float *y1, int ys, int n_out, int N)
{
	const struct model_config *c = &m->cfg;
	struct moe_bufs *b = m->moe;
	int NK = N * c->n_expert_used, experts = NK < c->n_expert ? NK : c->n_expert, avg = (NK + experts - 1) / experts;
	int nt = avg <= 8 ? 1 : avg <= 16 ? 2 : avg <= 32 ? 4 : 8, tiles = (n_out + 15) / 16;
	dim3 grid((unsigned)((N + 8 * nt - 1) / (8 * nt)), (unsigned)(P * tiles), (unsigned)experts);
	const int *act = b->act, *off = b->off;
	int X = c->n_expert;
	switch (nt) {
	case 1: launch(m, moe_mm_tc<1, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, y0, y1, ys, tiles); break;
	case 2: launch(m, moe_mm_tc<2, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, y0, y1, ys, tiles); break;
	case 4: launch(m, moe_mm_tc<4, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, y0, y1, ys, tiles); break;
	default: launch(m, moe_mm_tc<8, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, y0, y1, ys, tiles); break;
	}
}

template <int P>
static void moe_launch_mm(struct cuda_model *m, const struct dmat *w0, const struct dmat *w1, const float *x, int xs,
			  const int8_t *xq, const float *xd, float *y, int ys, int n_out, int kw, int N)
{
	const struct model_config *c = &m->cfg;
	struct moe_bufs *b = m->moe;
	int NK = N * c->n_expert_used, blocks_y = NK < c->n_expert ? NK : c->n_expert;
	dim3 grid((unsigned)(((long)n_out * kw + 7) / 8), (unsigned)blocks_y);
	bool f = (m->fused & CUDA_FUSE_LOADS) != 0;
	const int *act = b->act, *off = b->off;
	int X = c->n_expert, nq = xs; /* the quantised rows are as long as the input's */
	/* rows an expert may get: up to N (every row chose it) */
	if (N == 1)
		launch(m, f ? moe_mm<1, 4, P> : moe_mm<1, 1, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, nq, y, ys,
		       n_out, kw);
	else if (N == 2)
		launch(m, f ? moe_mm<2, 4, P> : moe_mm<2, 1, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, nq, y, ys,
		       n_out, kw);
	else if (N <= 4)
		launch(m, f ? moe_mm<4, 2, P> : moe_mm<4, 1, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, nq, y, ys,
		       n_out, kw);
	else
		launch(m, f ? moe_mm<8, 2, P> : moe_mm<8, 1, P>, grid, 256, w0, w1, act, off, X, x, xs, xq, xd, nq, y, ys,
		       n_out, kw);
}

/* The MoE MLP of layer l from h into y, then nn (the next add_norm) as the dense path does. */
static void moe_ffn(struct cuda_model *m, const struct dlayer *l, int N, const struct norm_next *nn)
{
	const struct model_config *c = &m->cfg;
	const struct moe_layer *q = l->moe;
	struct moe_bufs *b = m->moe;
	int E = c->n_embd, X = c->n_expert, K = c->n_expert_used, F = c->n_ff_exp, NK = N * K;
	/* the shared expert into y, the router's and the shared gate's logits */
	matmul_swiglu(m, l, N);
	matmul(m, &l->ffn_down, m->a1, m->w1, N, m->y, E, NULL);
	{
		const struct dmat *w[2] = { &q->router, &q->shexp_gate };
		float *y[2] = { b->logit, b->sgate };
		int ys[2] = { X, 1 };
		matmul_n(m, 2, w, m->h, E, N, y, ys, 0, NULL);
	}
	launch(m, moe_route_kernel, dim3((unsigned)N), 256, (const float *)b->logit, X, K, !b->no_renorm, b->chosen,
	       b->wt);
	launch(m, moe_group_kernel, dim3(1), 1024, (const int *)b->chosen, NK, X, b->off, b->act, b->at, b->grp);
	launch(m, moe_gather_kernel, dim3((unsigned)NK), 128, (const float *)m->h, E, K, (const int *)b->grp, b->xg);
	const int8_t *xq;
	const float *xd;
	const struct dmat *gw = q->gate, *uw = q->up, *dw = q->down;
	moe_quant(m, q->gate_type, b->xg, E, NK, &xq, &xd);
	if (moe_use_tc(m, q, N)) {
		moe_launch_tc<2>(m, gw, uw, b->xg, E, xq, xd, b->mg, b->mu, F, F, N);
		size_t cnt = (size_t)NK * F;
		launch(m, silu_mul_kernel, dim3((unsigned)((cnt + 255) / 256)), 256, b->mg, F, (const float *)b->mu, F, F, NK);
		moe_quant(m, q->down_type, b->mg, F, NK, &xq, &xd);
		moe_launch_tc<1>(m, dw, dw, b->mg, F, xq, xd, b->mo, b->mo, E, E, N);
	} else {
		moe_launch_mm<2>(m, gw, uw, b->xg, E, xq, xd, b->mg, F, F, q->kw_gu, N);
		moe_quant(m, q->down_type, b->mg, F, NK, &xq, &xd);
		moe_launch_mm<1>(m, dw, dw, b->mg, F, xq, xd, b->mo, E, E, q->kw_down, N);
	}
	/* the add_norm in the same kernel where it covers every row of the pass (all layers but the last) */
	int inside = nn && !nn->map && nn->rows == N;
	launch(m, moe_combine_kernel, dim3((unsigned)N), 256, m->y, E, (const float *)b->sgate, (const int *)b->chosen,
	       (const float *)b->wt, (const int *)b->at, (const float *)b->mo, K, m->x, inside ? nn->w : (const float *)NULL,
	       m->h, c->norm_eps);
	if (nn && !inside)
		launch(m, add_norm_kernel, dim3((unsigned)nn->rows), 256, m->x, (const float *)m->y, nn->w, m->h, E,
		       c->norm_eps, 1, nn->map);
}
