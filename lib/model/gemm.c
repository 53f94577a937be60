/*
 * gemm.c: see gemm.h. Tiles are shared out with OpenMP where the compiler
 * has it; without it (the fuzzing build) they run one after another, with
 * the same results.
 */
#include "model/gemm.h"

#include <cblas.h>
#include <pthread.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Tile size: big enough that OpenBLAS's packing is paid rarely, small enough
 * that a 0.5B model's (512, 896) products still give every core a tile. */
enum { TILE_M = 128, TILE_N = 256 };

static int nthreads;   /* 0 until first use or gemm_set_threads */

static void blas_single(void)
{
	openblas_set_num_threads(1);   /* every tile is one single-threaded call */
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

void gemm_set_threads(int n)
{
	if (n < 1) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (int)c : 1;
	}
	nthreads = n;
}

int gemm_threads(void)
{
	if (!nthreads)
		gemm_set_threads(0);
	return nthreads;
}

void gemm(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc)
{
	pthread_once(&blas_once, blas_single);
	int tm = (M + TILE_M - 1) / TILE_M, tn = (N + TILE_N - 1) / TILE_N, tiles = tm * tn;
	int threads = gemm_threads() < tiles ? gemm_threads() : tiles;
	(void)threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
#endif
	for (int k = 0; k < tiles; k++) {
		int i0 = k / tn * TILE_M, j0 = k % tn * TILE_N;
		int m = M - i0 < TILE_M ? M - i0 : TILE_M, n = N - j0 < TILE_N ? N - j0 : TILE_N;
		const float *a = transA ? A + i0 : A + (size_t)i0 * lda;   /* A is (K, M) or (M, K) */
		const float *b = transB ? B + (size_t)j0 * ldb : B + j0;   /* B is (N, K) or (K, N) */
		cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
		            m, n, K, 1.0f, a, lda, b, ldb, beta, C + (size_t)i0 * ldc + j0, ldc);
	}
}
