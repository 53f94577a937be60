/*
 * gemm.h: the model's matrix products, on every core, with results that do
 * not depend on how many cores there are.
 *
 * OpenBLAS's own threading splits a product differently for different
 * thread counts, and on some CPUs (AVX-512 Zen, for one) that changes the
 * low bits of the result. Here the output is cut into tiles whose size is
 * fixed, each tile is one single-threaded sgemm call, and the tiles are
 * shared out among threads. A tile's value then depends only on its inputs,
 * never on which thread computed it or how many there were, so a test can
 * demand bit-identical results for 1 and N threads.
 *
 * Row-major, as cblas: C (M, N) = op(A) (M, K) @ op(B) (K, N) + beta * C,
 * with op(X) = X^T when its trans flag is set. beta 0 writes C, beta 1
 * accumulates into it.
 */
#ifndef GRPO_GEMM_H
#define GRPO_GEMM_H

void gemm(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc);

/* Threads for gemm (n < 1: one per core); gemm_threads() reports it. */
void gemm_set_threads(int n);
int gemm_threads(void);

#endif
