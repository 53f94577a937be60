// matmul.cu: see matmul.cuh. The descriptors are made per call and the
// heuristic asked each time, as llm.c does; a forward makes about a hundred
// calls, so this costs well under a millisecond a pass.
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

int matmul(struct matmul_ctx *mc, void *out, int out_f32, const void *x, const void *w, int in_bf16, int T,
	   int N, int K, float beta, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	cudaDataType_t tin = in_bf16 ? CUDA_R_16BF : CUDA_R_32F;
	cudaDataType_t tout = out_f32 ? CUDA_R_32F : tin;
	cublasLtMatmulDesc_t op = NULL;
	cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur;
	cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
	int found = 0;
	const char *what = "cublasLtMatmulDescCreate";
	cublasStatus_t st = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatmulDescSetAttribute";
		st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN);
	if (st == CUBLAS_STATUS_SUCCESS) {
		what = "cublasLtMatrixLayoutCreate";
		st = cublasLtMatrixLayoutCreate(&la, tin, K, N, K);   // w: column-major (K, N)
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&lb, tin, K, T, K);   // x: column-major (K, T)
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&lc, tout, N, T, N);  // out: column-major (N, T)
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
		st = cublasLtMatmul(mc->lt, op, &alpha, w, la, x, lb, &beta, out, lc, out, lc, &heur.algo,
				    mc->workspace, mc->workspace_bytes, mc->stream);
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
		snprintf(msg, msglen, "%s (%s x %s -> %s, T %d, N %d, K %d): %s", what, in_bf16 ? "bf16" : "fp32",
			 in_bf16 ? "bf16" : "fp32", out_f32 ? "fp32" : in_bf16 ? "bf16" : "fp32", T, N, K,
			 cublasLtGetStatusName(st));
		return -1;
	}
	return 0;
}
