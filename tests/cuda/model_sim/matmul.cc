// matmul.cc for model_sim (see run.sh): kernels/matmul.cuh's functions on
// the CPU, in place of matmul.cu's cuBLASLt calls: each product's sums in
// double over the inputs as stored (bf16 read as its value), the result
// rounded once to the output's type (fp32, or bf16 to nearest even): more
// closely than a GPU's fp32 accumulation (SIM_MATMUL_F32=1: in fp32, four
// partial sums of products exact in double, nearer a GPU). Each array is read and
// written exactly where cuBLASLt would, by the same leading dimensions, so
// that AddressSanitizer (SIM_ASAN=1) checks the host code's sizes. A
// product on a stream that captures a graph is recorded into it, as
// cuBLASLt's kernels are, and runs when the graph is launched.
#include "matmul.cuh"
#include <cuda_bf16.h>

#define WORKSPACE_BYTES ((size_t)32 << 20)

int matmul_init(struct matmul_ctx *mc, cudaStream_t stream, char *msg, size_t msglen)
{
	mc->stream = stream;
	static int handle;
	mc->lt = (cublasLtHandle_t)&handle;   // not NULL: gpu_model_free calls matmul_free only where it is set
	mc->workspace = nullptr;
	mc->workspace_bytes = WORKSPACE_BYTES;
	cudaError_t ce = cudaMalloc(&mc->workspace, mc->workspace_bytes);
	if (ce != cudaSuccess) {
		snprintf(msg, msglen, "cudaMalloc of the cuBLASLt workspace: %s", cudaGetErrorString(ce));
		return -1;
	}
	return 0;
}

void matmul_free(struct matmul_ctx *mc) { cudaFree(mc->workspace); }

static inline double get(const void *p, size_t i, int bf16)
{
	return bf16 ? (double)__bfloat162float(((const __nv_bfloat16 *)p)[i]) : (double)((const float *)p)[i];
}
static inline void put(void *p, size_t i, int bf16, double v)
{
	if (bf16)
		((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v);
	else
		((float *)p)[i] = (float)v;
}

// D (m, n) = op(A) op(B) + beta C, column-major, as lt_gemm in matmul.cu:
// A stored (m, k), or transposed (k, m), leading dimension lda; B (k, n) or
// (n, k) with ldb; C and D (m, n) with ldd. C is read only where beta != 0,
// as cuBLAS does.
static void gemm_now(int transa, int transb, int m, int n, int k, const void *A, int lda, const void *B, int ldb,
		     const void *C, void *D, int ldd, int in_bf16, int out_bf16, float beta)
{
	std::vector<double> a((size_t)m * k), b((size_t)k * n);   // A row by row (i, kk), B column by column (kk, j)
	for (int i = 0; i < m; i++)
		for (int kk = 0; kk < k; kk++)
			a[(size_t)i * k + kk] = get(A, transa ? (size_t)i * lda + kk : (size_t)kk * lda + i, in_bf16);
	for (int j = 0; j < n; j++)
		for (int kk = 0; kk < k; kk++)
			b[(size_t)j * k + kk] = get(B, transb ? (size_t)kk * ldb + j : (size_t)j * ldb + kk, in_bf16);
	std::vector<double> d((size_t)m * n);
	static const bool f32 = [] { const char *v = getenv("SIM_MATMUL_F32"); return v && strcmp(v, "1") == 0; }();
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			const double *x = &a[(size_t)i * k], *y = &b[(size_t)j * k];
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
			int kk = 0;
			for (; kk + 4 <= k; kk += 4)
				s0 += x[kk] * y[kk], s1 += x[kk + 1] * y[kk + 1], s2 += x[kk + 2] * y[kk + 2],
					s3 += x[kk + 3] * y[kk + 3];
			for (; kk < k; kk++)
				s0 += x[kk] * y[kk];
			if (f32) {   // SIM_MATMUL_F32=1: in fp32, four partial sums, as a GPU's might
				float f0 = 0, f1 = 0, f2 = 0, f3 = 0;
				for (kk = 0; kk + 4 <= k; kk += 4)
					f0 += (float)(x[kk] * y[kk]), f1 += (float)(x[kk + 1] * y[kk + 1]),
						f2 += (float)(x[kk + 2] * y[kk + 2]), f3 += (float)(x[kk + 3] * y[kk + 3]);
				for (; kk < k; kk++)
					f0 += (float)(x[kk] * y[kk]);
				s0 = (f0 + f1) + (f2 + f3), s1 = s2 = s3 = 0;
			}
			d[(size_t)j * m + i] = (s0 + s1) + (s2 + s3);
		}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			size_t at = (size_t)j * ldd + i;
			double v = d[(size_t)j * m + i];
			if (beta != 0.0f)
				v += (double)beta * get(C, at, out_bf16);
			put(D, at, out_bf16, v);
		}
}

// gemm_now on mc's stream: now, or when the graph it captures into runs;
// -1 with the runtime's error in msg where the stream refuses it
static int gemm(struct matmul_ctx *mc, char *msg, size_t msglen, int transa, int transb, int m, int n, int k,
		const void *A, int lda, const void *B, int ldb, const void *C, void *D, int ldd, int in_bf16,
		int out_bf16, float beta)
{
	cudaError_t e = sim_enqueue(mc->stream, [=] {
		gemm_now(transa, transb, m, n, k, A, lda, B, ldb, C, D, ldd, in_bf16, out_bf16, beta);
	});
	if (e)
		snprintf(msg, msglen, "cublasLtMatmul (model_sim's): %s", cudaGetErrorString(e));
	return e ? -1 : 0;
}

int matmul(struct matmul_ctx *mc, void *out, int out_f32, const void *x, const void *w, int in_bf16, int T, int N,
	   int K, float beta, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	return gemm(mc, msg, msglen, 1, 0, N, T, K, w, K, x, K, out, out, N, in_bf16, in_bf16 && !out_f32, beta);
}

int matmul_residual(struct matmul_ctx *mc, float *out, const float *in, const void *x, const void *w, int in_bf16,
		    int T, int N, int K, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	return gemm(mc, msg, msglen, 1, 0, N, T, K, w, K, x, K, in, out, N, in_bf16, 0, 1.0f);
}

int matmul_dx(struct matmul_ctx *mc, void *dx, int out_f32, const void *dy, const void *w, int in_bf16, int T,
	      int N, int K, float beta, char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	return gemm(mc, msg, msglen, 0, 0, K, T, N, w, K, dy, N, dx, dx, K, in_bf16, in_bf16 && !out_f32, beta);
}

int matmul_dw(struct matmul_ctx *mc, float *dw, const void *dy, const void *x, int in_bf16, int T, int N, int K,
	      char *msg, size_t msglen)
{
	if (T == 0)
		return 0;
	return gemm(mc, msg, msglen, 0, 1, K, N, T, x, K, dy, N, dw, dw, K, in_bf16, 0, 1.0f);
}
