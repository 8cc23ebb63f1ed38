/* perf_matmul — GFLOP/s of kern_matmul on the ~100M model's matrix shapes, one thread.
 *
 *   perf_matmul [--isa auto|avx512|avx2|portable]... [--rows N]... [--reps N] [--small-pages] [--type T]
 *
 * For each kernel path and row count (default: auto and avx2; 1 and 32 rows) it times
 * kern_matmul over a set of F32 matrices of the 100M model's shapes (768->2816, 2816->768,
 * 768->1024, 512->768), 12 copies of each (about 260 MB, far more than the caches, so the
 * weights stream from memory as in a forward pass). The weights sit in memory advised for
 * 2 MiB pages, as the model keeps them (--small-pages: 4 KiB pages, as a file mapping).
 * Time is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), best of --reps runs,
 * so that other processes on a shared machine disturb it less than wall time; GFLOP/s =
 * 2 x rows x weights / time. With one thread the pool runs every tile on the caller.
 * The peak of one core is 2 FMA pipes x 8 floats x 2 flops x clock (AVX2). --type T (a block
 * type: q4_k, q6_k, q8_0, ...) stores the same weights in that type (sixi's quantiser): the
 * fused kernels then run on int8 activations (a flop is then a multiply-add of the int8
 * products, counted the same way). For Q4_K and Q6_K each line is timed twice in the same
 * repetitions, on the plain rows and on a copy in groups of 8 rows (kern_mat_group), and the
 * ratio of the two is printed; the grouped kernels use 256-bit AVX-512 VNNI where the CPU has
 * it unless --isa avx2 (kernels.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "gguf/gguf.h"
#include "model/kernels.h"
#include "model/quant.h"
#include <strings.h>

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *isas[8];
	int rows[8], n_isa = 0, n_rows = 0, reps = 3, small = 0;
	uint32_t type = GGUF_TENSOR_F32;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc && n_isa < 8)
			isas[n_isa++] = argv[++i];
		else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc && n_rows < 8)
			rows[n_rows++] = atoi(argv[++i]);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--small-pages") == 0)
			small = 1;
		else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
			const char *t = argv[++i];
			for (uint32_t k = 0; k < 40; k++)
				if (quant_type_is_block(k) && strcasecmp(t, gguf_type_name(k)) == 0)
					type = k;
			if (type == GGUF_TENSOR_F32 && strcasecmp(t, "f32") != 0) {
				fprintf(stderr, "perf_matmul: --type must be f32 or a block type (q4_k, q6_k, q8_0, ...)\n");
				return 2;
			}
		}
		else {
			fprintf(stderr, "usage: perf_matmul [--isa auto|avx512|avx2|portable]... [--rows N]... [--reps N] "
					"[--small-pages] [--type T]\n");
			return 2;
		}
	}
	if (!n_isa)
		isas[n_isa++] = "auto", isas[n_isa++] = "avx2";
	if (!n_rows)
		rows[n_rows++] = 1, rows[n_rows++] = 32;
	for (int i = 0; i < n_rows; i++)
		if (rows[i] < 1 || rows[i] > 512) {
			fprintf(stderr, "perf_matmul: --rows must be 1..512\n");
			return 2;
		}
	if (reps < 1)
		reps = 1;
	enum { N_SHAPES = 4, COPIES = 12 };
	const int shape[N_SHAPES][2] = { { 768, 2816 }, { 2816, 768 }, { 768, 1024 }, { 512, 768 } };
	size_t per[N_SHAPES], total = 0;
	for (int s = 0; s < N_SHAPES; s++) {
		per[s] = (size_t)shape[s][0] * shape[s][1];
		total += per[s] * COPIES;
	}
	size_t huge = 2u << 20, len = total * 4 + huge;
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		perror("perf_matmul: mmap");
		return 1;
	}
	float *w = (float *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(w, total * 4, small ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
	uint32_t seed = 1;
	for (size_t i = 0; i < total; i++) {
		seed = seed * 1664525u + 1013904223u;
		w[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
	}
	/* the same weights in the block type, in place of the F32 ones (rows pack tighter) */
	size_t qtotal = total * 4;
	if (type != GGUF_TENSOR_F32) {
		uint8_t *q = (uint8_t *)w;
		const float *src = w;
		qtotal = 0;
		for (int s = 0; s < N_SHAPES; s++)
			for (int c = 0; c < COPIES; c++)
				for (int r = 0; r < shape[s][1]; r++, src += shape[s][0]) {
					size_t rb = (size_t)gguf_type_row_bytes(type, (uint64_t)shape[s][0]);
					float row[2816];
					memcpy(row, src, sizeof(float) * (size_t)shape[s][0]);
					quant_row_quantize(type, row, q + qtotal, shape[s][0]);
					qtotal += rb;
				}
	}
	float *x = malloc(sizeof(float) * 512 * 2816), *y = malloc(sizeof(float) * 512 * 2816);
	if (!x || !y) {
		fprintf(stderr, "perf_matmul: out of memory\n");
		return 1;
	}
	for (int i = 0; i < 512 * 2816; i++)
		x[i] = (float)(i % 97) / 97.0f - 0.5f;
	printf("weights: %s, %.0f MB in %s pages; best of %d; GFLOP/s of one core (thread CPU time)\n",
	       gguf_type_name(type), qtotal / 1e6, small ? "4 KiB" : "2 MiB", reps);
	/* Q4_K and Q6_K: the same weights again in groups of 8 rows (kern_mat_group), timed
	 * against the plain rows in the same repetition */
	enum { N_MATS = N_SHAPES * COPIES };
	struct kern_mat mats[2][N_MATS];
	const uint8_t *ws = (const uint8_t *)w;
	size_t gtotal = 0;
	for (int s = 0; s < N_SHAPES; s++) {
		size_t rb = (size_t)gguf_type_row_bytes(type, (uint64_t)shape[s][0]);
		for (int c = 0; c < COPIES; c++, ws += rb * shape[s][1]) {
			mats[0][s * COPIES + c] = (struct kern_mat){ .data = ws, .type = type, .n_in = shape[s][0],
								    .n_out = shape[s][1], .row_bytes = rb };
			mats[1][s * COPIES + c] = mats[0][s * COPIES + c];
			gtotal += kern_mat_group_bytes(&mats[0][s * COPIES + c]);
		}
	}
	int n_layout = gtotal ? 2 : 1;
	void *gmap = NULL;
	size_t glen = gtotal + huge;
	if (gtotal) {
		gmap = mmap(NULL, glen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (gmap == MAP_FAILED) {
			perror("perf_matmul: mmap");
			return 1;
		}
		uint8_t *g = (uint8_t *)(((uintptr_t)gmap + huge - 1) & ~(uintptr_t)(huge - 1));
		madvise(g, gtotal, small ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
		for (int i = 0; i < N_MATS; i++) {
			size_t b = kern_mat_group_bytes(&mats[1][i]);
			kern_mat_group(&mats[1][i], g);
			g += b;
		}
		printf("grouped copy (8 rows a group): %.0f MB; each line: plain rows, grouped, grouped/plain\n",
		       gtotal / 1e6);
	}
	for (int a = 0; a < n_isa; a++) {
		struct kern_pool *p = kern_pool_create(1, isas[a]);
		if (!p) {
			fprintf(stderr, "perf_matmul: cannot create a pool for '%s'\n", isas[a]);
			return 1;
		}
		printf("--isa %s: %s tiles\n", isas[a], kern_pool_isa(p));
		for (int ri = 0; ri < n_rows; ri++) {
			int nr = rows[ri];
			double all_flops = 0, all_s[2] = { 0, 0 };
			char line[2][512];
			int ln[2] = { 0, 0 };
			for (int l = 0; l < n_layout; l++)
				ln[l] = snprintf(line[l], sizeof(line[l]), "%-8s %-7s %3d rows:", isas[a],
						  l ? "grouped" : "rows", nr);
			for (int s = 0; s < N_SHAPES; s++) {
				double best[2] = { 1e30, 1e30 };
				for (int r = 0; r < reps; r++)
					for (int l = 0; l < n_layout; l++) {
						double t0 = thread_cpu_s();
						for (int c = 0; c < COPIES; c++)
							kern_matmul(p, &mats[l][s * COPIES + c], x, shape[s][0], nr, y, shape[s][1]);
						double t = thread_cpu_s() - t0;
						best[l] = t < best[l] ? t : best[l];
					}
				double flops = 2.0 * (double)per[s] * COPIES * nr;
				all_flops += flops;
				for (int l = 0; l < n_layout; l++) {
					all_s[l] += best[l];
					ln[l] += snprintf(line[l] + ln[l], sizeof(line[l]) - (size_t)ln[l], "  %d->%d %6.1f",
							   shape[s][0], shape[s][1], flops / best[l] / 1e9);
				}
			}
			for (int l = 0; l < n_layout; l++)
				printf("%s  | all %6.1f GFLOP/s (%.1f GB/s of weights)\n", line[l], all_flops / all_s[l] / 1e9,
				       (double)(l ? gtotal : qtotal) / all_s[l] / 1e9);
			if (n_layout == 2)
				printf("%-8s ratio   %3d rows: grouped/plain %.2fx\n", isas[a], nr, all_s[0] / all_s[1]);
		}
		kern_pool_destroy(p);
	}
	if (gmap)
		munmap(gmap, glen);
	free(x);
	free(y);
	munmap(map, len);
	return 0;
}
