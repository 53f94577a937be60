// matmul.cu: see matmul.cuh. The descriptors are made per call and the
// heuristic asked each time, as llm.c does; a forward makes about a hundred
// calls, so this costs well under a millisecond a pass. (On an H200 the
// forward's q/k/v and o_proj products run at 100-150 TFLOP/s where the
// backward's of the same sizes run at 400-570; keeping each shape's
// descriptors and algorithm changed nothing, so the time is in the kernel
// the heuristic picks first for them, not on the host: timing its other
// candidates is what is left to try.)
#include <stdio.h>

#include "matmul.cuh"

// 32 MiB: what Hopper's kernels want (4 MiB would do elsewhere).
#define WORKSPACE_BYTES ((size_t)32 << 20)

int matmul_init(struct matmul_ctx *mc, cudaStream_t stream, char *msg, size_t msglen)
{
	mc->stream = stream;
	mc->workspace = NULL;
	mc->workspace_bytes = WORKSPACE_BYTES;
	cublasStatus_t st = cublasLtCreate(&mc->lt);
	if (st != CUBLAS_STATUS_SUCCESS) {
		snprintf(msg, msglen, "cublasLtCreate: %s", cublasLtGetStatusName(st));
		return -1;
	}
	cudaError_t ce = cudaMalloc(&mc->workspace, mc->workspace_bytes);
	if (ce != cudaSuccess) {
		snprintf(msg, msglen, "cudaMalloc of the cuBLASLt workspace: %s", cudaGetErrorString(ce));
		cublasLtDestroy(mc->lt);
		return -1;
	}
	return 0;
}

void matmul_free(struct matmul_ctx *mc)
{
	cudaFree(mc->workspace);
	cublasLtDestroy(mc->lt);
}

// D (m, n) = op(A) op(B) + beta C, column-major, as cuBLASLt sees it: A is
// stored (m, k) or, transposed, (k, m) with leading dimension lda; B (k, n)
// or (n, k) with ldb; C, laid out as D (m, n) with ldd, is D itself or
// another array.
static int lt_gemm(struct matmul_ctx *mc, int transa, int transb, int m, int n, int k, const void *A, int lda,
		   const void *B, int ldb, const void *C, void *D, int ldd, cudaDataType_t tin, cudaDataType_t tout,
		   float beta, char *msg, size_t msglen)
{
	cublasLtMatmulDesc_t op = NULL;
	cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur;
	cublasOperation_t opa = transa ? CUBLAS_OP_T : CUBLAS_OP_N, opb = transb ? CUBLAS_OP_T : CUBLAS_OP_N;
	int found = 0;
	const char *what = "cublasLtMatmulDescCreate";
	cublasStatus_t st = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatmulDescSetAttribute";
		st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatrixLayoutCreate";
		st = cublasLtMatrixLayoutCreate(&la, tin, transa ? k : m, transa ? m : k, lda);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&lb, tin, transb ? n : k, transb ? k : n, ldb);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&lc, tout, m, n, ldd);
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatmulPreferenceCreate";
		st = cublasLtMatmulPreferenceCreate(&pref);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
							  &mc->workspace_bytes, sizeof mc->workspace_bytes);
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatmulAlgoGetHeuristic";
		st = cublasLtMatmulAlgoGetHeuristic(mc->lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
		if (st == CUBLAS_STATUS_SUCCESS && found == 0)
			st = CUBLAS_STATUS_NOT_SUPPORTED;
	}
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatmul";
		float alpha = 1.0f;
		st = cublasLtMatmul(mc->lt, op, &alpha, A, la, B, lb, &beta, C, lc, D, lc, &heur.algo, mc->workspace,
				    mc->workspace_bytes, mc->stream);
	}
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (lc)
		cublasLtMatrixLayoutDestroy(lc);
	if (lb)
		cublasLtMatrixLayoutDestroy(lb);
	if (la)
		cublasLtMatrixLayoutDestroy(la);
	if (op)
		cublasLtMatmulDescDestroy(op);
	if (st != CUBLAS_STATUS_SUCCESS) {
		snprintf(msg, msglen, "%s (%s in, %s out, m %d, n %d, k %d%s%s): %s", what,
			 tin == CUDA_R_16BF ? "bf16" : "fp32", tout == CUDA_R_16BF ? "bf16" : "fp32", m, n, k,
			 transa ? ", A^T" : "", transb ? ", B^T" : "", cublasLtGetStatusName(st));
		return -1;
	}
	return 0;
}

static cudaDataType_t type_in(int in_bf16) { return in_bf16 ? CUDA_R_16BF : CUDA_R_32F; }

// out^T (N, T) = w (stored (K, N): transposed) x^T (K, T)
int matmul(struct matmul_ctx *mc, void *out, int out_f32, const void *x, const void *w, int in_bf16, int T,
	   int N, int K, float beta, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	cudaDataType_t tin = type_in(in_bf16);
	return lt_gemm(mc, 1, 0, N, T, K, w, K, x, K, out, out, N, tin, out_f32 ? CUDA_R_32F : tin, beta, msg, msglen);
}

// out^T (N, T) fp32 = in^T + w^T x^T: matmul with beta 1 from another array
int matmul_residual(struct matmul_ctx *mc, float *out, const float *in, const void *x, const void *w, int in_bf16,
		    int T, int N, int K, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	return lt_gemm(mc, 1, 0, N, T, K, w, K, x, K, in, out, N, type_in(in_bf16), CUDA_R_32F, 1.0f, msg, msglen);
}

// dx^T (K, T) = w^T (stored (K, N) as is) dy^T (N, T)
int matmul_dx(struct matmul_ctx *mc, void *dx, int out_f32, const void *dy, const void *w, int in_bf16, int T,
	      int N, int K, float beta, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	cudaDataType_t tin = type_in(in_bf16);
	return lt_gemm(mc, 0, 0, K, T, N, w, K, dy, N, dx, dx, K, tin, out_f32 ? CUDA_R_32F : tin, beta, msg, msglen);
}

// dw^T (K, N) += x^T (K, T) dy (T, N: dy^T stored (N, T), transposed)
int matmul_dw(struct matmul_ctx *mc, float *dw, const void *dy, const void *x, int in_bf16, int T, int N, int K,
	      char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	return lt_gemm(mc, 0, 1, K, N, T, x, K, dy, N, dw, dw, K, type_in(in_bf16), CUDA_R_32F, 1.0f, msg, msglen);
}
