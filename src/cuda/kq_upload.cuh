/* kq_upload — the block types other than Q8_0 on the GPU: which ones, their sizes, and their
 * layout after upload (included by cuda_model.cu before the weights section uses it).
 *
 * Types: Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (blocks of 32) and Q4_K, Q5_K, Q6_K, IQ4_XS (blocks of 256),
 * the matrices of llama-quantize's Q4_0 .. Q6_K presets and their fallbacks. The bits are kept
 * as stored (no widening); blocks whose size is not a multiple of 16 bytes are split into
 * aligned arrays so that the kernels load 16-byte words:
 *  - Q4_0, IQ4_NL: w = the 16 bytes of nibbles of each block, d = its fp16 scale.
 *  - Q4_1: w as Q4_0, d = two halves a block (d, m).
 *  - Q5_0, Q5_1: w as Q4_0, d as Q4_0 / Q4_1, qh = the block's 32 fifth bits.
 *  - Q4_K (144 bytes), Q5_K (176): the blocks as stored (16-byte multiples), d unused.
 *  - Q6_K: w = the first 208 bytes of each block (ql, qh, scales), d = its fp16 scale.
 *  - IQ4_XS: w = the 128 bytes of nibbles, d = its fp16 scale, qh = two words a block: the
 *    scales' high bits (16 bits), then their low nibbles (4 bytes).
 * Every array is [n_out][blocks of a row][...], so block b of row o is at o * (n_in / be) + b. */

/* Elements of a block of a type the kq kernels read, or 0. */
static int kq_block_elems(int type)
{
	switch (type) {
	case GGUF_TENSOR_Q4_0: case GGUF_TENSOR_Q4_1: case GGUF_TENSOR_Q5_0: case GGUF_TENSOR_Q5_1:
	case GGUF_TENSOR_IQ4_NL:
		return 32;
	case GGUF_TENSOR_Q4_K: case GGUF_TENSOR_Q5_K: case GGUF_TENSOR_Q6_K: case GGUF_TENSOR_IQ4_XS:
		return 256;
	default:
		return 0;
	}
}

/* Bytes of a stored block (ggml-common.h's structs). */
static int kq_block_bytes(int type)
{
	switch (type) {
	case GGUF_TENSOR_Q4_0: case GGUF_TENSOR_IQ4_NL: return 18;
	case GGUF_TENSOR_Q4_1: return 20;
	case GGUF_TENSOR_Q5_0: return 22;
	case GGUF_TENSOR_Q5_1: return 24;
	case GGUF_TENSOR_Q4_K: return 144;
	case GGUF_TENSOR_Q5_K: return 176;
	case GGUF_TENSOR_Q6_K: return 210;
	case GGUF_TENSOR_IQ4_XS: return 136;
	default: return 0;
	}
}

/* Bytes of a row of n elements, 0 where n is not a multiple of the block (or the type is not one
 * of these). */
static uint64_t kq_row_bytes(int type, uint64_t n)
{
	int be = kq_block_elems(type);
	return be && n % (uint64_t)be == 0 ? n / (uint64_t)be * (uint64_t)kq_block_bytes(type) : 0;
}

/* The activation format a type's products take, as the CPU engine (quant_act_type). */
enum { KQ_ACT_Q8_0 = 0, KQ_ACT_Q8_1 = 1, KQ_ACT_Q8_K = 2 };

__host__ __device__ static inline int kq_act(int type)
{
	return type == GGUF_TENSOR_Q4_1 || type == GGUF_TENSOR_Q5_1 ? KQ_ACT_Q8_1
	       : type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q5_K || type == GGUF_TENSOR_Q6_K ||
			 type == GGUF_TENSOR_IQ4_XS
		 ? KQ_ACT_Q8_K
		 : KQ_ACT_Q8_0;
}

/* Uploads matrix t (n_in x n_out of a kq type, shape already checked) in the layout above. */
static int kq_upload(struct cuda_model *m, struct loader *ld, struct dmat *d, const struct model_tensor *t)
{
	const int type = (int)t->type, be = kq_block_elems(type), bb = kq_block_bytes(type);
	const uint8_t *src = (const uint8_t *)t->data;
	size_t nb = (size_t)d->n_in / (size_t)be * (size_t)d->n_out;
	if (type == GGUF_TENSOR_Q4_K || type == GGUF_TENSOR_Q5_K) {
		d->w = upload(m, src, t->n_bytes, ld->err, ld->errlen);
		return d->w ? 0 : -ENOMEM;
	}
	/* where each part of a block lies: the quants (q_len bytes at q_off), n_half fp16 scales at
	 * 0 (Q6_K: 208), the fifth bits at qh_off (-1: none) */
	int q_off = 2, q_len = 16, n_half = 1, d_off = 0, qh_off = -1, qh_words = 1;
	switch (type) {
	case GGUF_TENSOR_Q4_1: q_off = 4, n_half = 2; break;
	case GGUF_TENSOR_Q5_0: q_off = 6, qh_off = 2; break;
	case GGUF_TENSOR_Q5_1: q_off = 8, n_half = 2, qh_off = 4; break;
	case GGUF_TENSOR_Q6_K: q_off = 0, q_len = 208, d_off = 208; break;
	case GGUF_TENSOR_IQ4_XS: q_off = 8, q_len = 128, qh_off = 2, qh_words = 2; break;
	default: break; /* Q4_0, IQ4_NL */
	}
	uint8_t *qs = (uint8_t *)malloc(nb * (size_t)q_len);
	uint16_t *sc = (uint16_t *)malloc(nb * 2 * (size_t)n_half);
	uint32_t *qh = qh_off >= 0 ? (uint32_t *)calloc(nb * (size_t)qh_words, 4) : NULL;
	int rc = -ENOMEM;
	if (qs && sc && (qh_off < 0 || qh)) {
		for (size_t b = 0; b < nb; b++) {
			const uint8_t *p = src + b * (size_t)bb;
			memcpy(qs + b * (size_t)q_len, p + q_off, (size_t)q_len);
			memcpy(sc + b * (size_t)n_half, p + d_off, 2 * (size_t)n_half);
			if (qh && qh_words == 2) { /* IQ4_XS: scales_h (2 bytes), scales_l (4) */
				memcpy(&qh[2 * b], p + qh_off, 2);
				memcpy(&qh[2 * b + 1], p + qh_off + 2, 4);
			} else if (qh) {
				memcpy(&qh[b], p + qh_off, 4);
			}
		}
		d->w = upload(m, qs, nb * (size_t)q_len, ld->err, ld->errlen);
		d->d = d->w ? (const __half *)upload(m, sc, nb * 2 * (size_t)n_half, ld->err, ld->errlen) : NULL;
		d->qh = d->d && qh ? (const uint32_t *)upload(m, qh, nb * 4 * (size_t)qh_words, ld->err, ld->errlen) : NULL;
		rc = d->w && d->d && (!qh || d->qh) ? 0 : -ENOMEM;
	} else {
		err_set(ld->err, ld->errlen, "out of memory");
	}
	free(qs);
	free(sc);
	free(qh);
	return rc;
}
