// matmul.cu: see matmul.cuh. Each shape's descriptors and algorithm are
// made on its first call and kept (struct matmul_plan).
#include <stdio.h>
#include <string.h>

#include "matmul.cuh"

// 32 MiB: what Hopper's kernels want (4 MiB would do elsewhere).
#define WORKSPACE_BYTES ((size_t)32 << 20)

static void plan_free(struct matmul_plan *p)
{
	if (p->lc)
		cublasLtMatrixLayoutDestroy(p->lc);
	if (p->lb)
		cublasLtMatrixLayoutDestroy(p->lb);
	if (p->la)
		cublasLtMatrixLayoutDestroy(p->la);
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	memset(p, 0, sizeof *p);
}

int matmul_init(struct matmul_ctx *mc, cudaStream_t stream, char *msg, size_t msglen)
{
	memset(mc, 0, sizeof *mc);
	mc->stream = stream;
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
	for (int i = 0; i < mc->nplans; i++)
		plan_free(&mc->plan[i]);
	mc->nplans = 0;
	cudaFree(mc->workspace);
	cublasLtDestroy(mc->lt);
}

// The descriptors of p's shape (its key fields set) and the heuristic's
// algorithm; on failure, the failing call's name in *what.
static cublasStatus_t plan_make(struct matmul_ctx *mc, struct matmul_plan *p, const char **what)
{
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur;
	cublasOperation_t opa = p->transa ? CUBLAS_OP_T : CUBLAS_OP_N, opb = p->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
	int found = 0, m = p->m, n = p->n, k = p->k;
	*what = "cublasLtMatmulDescCreate";
	cublasStatus_t st = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (st == CUBLAS_STATUS_SUCCESS) {
		*what = "cublasLtMatmulDescSetAttribute";
		st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
	if (st == CUBLAS_STATUS_SUCCESS) {
		*what = "cublasLtMatrixLayoutCreate";
		st = cublasLtMatrixLayoutCreate(&p->la, p->tin, p->transa ? k : m, p->transa ? m : k, p->lda);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&p->lb, p->tin, p->transb ? n : k, p->transb ? k : n, p->ldb);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&p->lc, p->tout, m, n, p->ldd);
	if (st == CUBLAS_STATUS_SUCCESS) {
		*what = "cublasLtMatmulPreferenceCreate";
		st = cublasLtMatmulPreferenceCreate(&pref);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
							  &mc->workspace_bytes, sizeof mc->workspace_bytes);
	if (st == CUBLAS_STATUS_SUCCESS) {
		*what = "cublasLtMatmulAlgoGetHeuristic";
		st = cublasLtMatmulAlgoGetHeuristic(mc->lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &heur, &found);
		if (st == CUBLAS_STATUS_SUCCESS && found == 0)
			st = CUBLAS_STATUS_NOT_SUPPORTED;
	}
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (st == CUBLAS_STATUS_SUCCESS)
		p->algo = heur.algo;
	return st;
}

// The plan for a shape: the one kept, or a new one in the oldest's place.
static struct matmul_plan *plan_for(struct matmul_ctx *mc, const struct matmul_plan *key, cublasStatus_t *st,
				    const char **what)
{
	for (int i = 0; i < mc->nplans; i++) {
		struct matmul_plan *p = &mc->plan[i];
		if (p->transa == key->transa && p->transb == key->transb && p->m == key->m && p->n == key->n &&
		    p->k == key->k && p->lda == key->lda && p->ldb == key->ldb && p->ldd == key->ldd &&
		    p->tin == key->tin && p->tout == key->tout)
			return p;
	}
	struct matmul_plan *p;
	if (mc->nplans < MATMUL_PLANS)
		p = &mc->plan[mc->nplans++];
	else {
		p = &mc->plan[mc->oldest];
		mc->oldest = (mc->oldest + 1) % MATMUL_PLANS;
		plan_free(p);
	}
	*p = *key;
	*st = plan_make(mc, p, what);
	if (*st == CUBLAS_STATUS_SUCCESS)
		return p;
	plan_free(p);   // an empty plan matches no shape (m, n, k >= 1)
	return NULL;
}

// D (m, n) = op(A) op(B) + beta C, column-major, as cuBLASLt sees it: A is
// stored (m, k) or, transposed, (k, m) with leading dimension lda; B (k, n)
// or (n, k) with ldb; C, laid out as D (m, n) with ldd, is D itself or
// another array.
static int lt_gemm(struct matmul_ctx *mc, int transa, int transb, int m, int n, int k, const void *A, int lda,
		   const void *B, int ldb, const void *C, void *D, int ldd, cudaDataType_t tin, cudaDataType_t tout,
		   float beta, char *msg, size_t msglen)
{
	struct matmul_plan key;
	memset(&key, 0, sizeof key);
	key.transa = transa, key.transb = transb, key.m = m, key.n = n, key.k = k;
	key.lda = lda, key.ldb = ldb, key.ldd = ldd, key.tin = tin, key.tout = tout;
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
	const char *what = "cublasLtMatmul";
	struct matmul_plan *p = plan_for(mc, &key, &st, &what);
	if (p) {
		float alpha = 1.0f;
		st = cublasLtMatmul(mc->lt, p->op, &alpha, A, p->la, B, p->lb, &beta, C, p->lc, D, p->lc, &p->algo,
				    mc->workspace, mc->workspace_bytes, mc->stream);
	}
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
