// matmul.cuh: the model's matrix products through cuBLASLt.
//
// Every product has the shape of a linear layer over rows of tokens,
//
//     out (T, N) = beta * out + x (T, K) @ w (N, K)^T
//
// with x and w row-major in the activation type (fp32 or bf16) and out
// either that type or fp32, accumulated in fp32 (CUBLAS_COMPUTE_32F, so no
// TF32 in fp32 mode). beta = 1 adds the product into out, which is how the
// residual stream takes o_proj and down_proj without a separate add.
// Row-major (T, N) is cuBLAS's column-major (N, T), so cuBLASLt computes
// out^T = op(w) x^T with w transposed, and the backward's products the same
// way (matmul.cu's comments give each in column-major terms).
#ifndef GRPO_KERNELS_MATMUL_CUH
#define GRPO_KERNELS_MATMUL_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stddef.h>

struct matmul_ctx {
	cublasLtHandle_t lt;
	void *workspace;     // device
	size_t workspace_bytes;
	cudaStream_t stream;
};

// 0, or -1 with the failing call in msg.
int matmul_init(struct matmul_ctx *mc, cudaStream_t stream, char *msg, size_t msglen);
void matmul_free(struct matmul_ctx *mc);

// in_bf16: x and w are bf16 (else fp32); out_f32: out is fp32 (else as x).
int matmul(struct matmul_ctx *mc, void *out, int out_f32, const void *x, const void *w, int in_bf16, int T,
	   int N, int K, float beta, char *msg, size_t msglen);

// out (T, N) fp32 = in (T, N) fp32 + x (T, K) @ w (N, K)^T: a residual add
// without copying the stream first (in may be out).
int matmul_residual(struct matmul_ctx *mc, float *out, const float *in, const void *x, const void *w, int in_bf16,
		    int T, int N, int K, char *msg, size_t msglen);

// The backward of matmul: dx (T, K) = beta dx + dy (T, N) @ w (N, K), and
// dw (N, K) fp32 += dy (T, N)^T @ x (T, K), dy and x in the input type.
int matmul_dx(struct matmul_ctx *mc, void *dx, int out_f32, const void *dy, const void *w, int in_bf16, int T,
	      int N, int K, float beta, char *msg, size_t msglen);
int matmul_dw(struct matmul_ctx *mc, float *dw, const void *dy, const void *x, int in_bf16, int T, int N, int K,
	      char *msg, size_t msglen);

#endif
