// layers.cuh: the model's device kernels other than the matrix products,
// as host launchers for gpu_model.cu. Each mirrors a function of
// lib/model/model.c, named the same way, and is tested through the whole
// model against it (tests/cuda/test_cuda_model.c).
//
// Activations are stored as `act` (fp32 or bf16, enum gpu_dtype) and read
// into fp32 for every computation; the residual stream, the norms' weights
// and the biases are fp32 always. Each launcher returns cudaGetLastError().
#ifndef GRPO_KERNELS_LAYERS_CUH
#define GRPO_KERNELS_LAYERS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

// resid (T, C) fp32 = embed[ids[t]] (embed: (V, C) act)
cudaError_t launch_embed(float *resid, const void *embed, const int32_t *ids, int T, int C, int bf16,
			 cudaStream_t s);

// out (N, C) act = w * (in * rstd), rstd = 1/sqrt(mean(in^2) + eps), in fp32
cudaError_t launch_rmsnorm(void *out, const float *in, const float *w, int N, int C, float eps, int bf16,
			   cudaStream_t s);

// In place on qkv (T, (NH + 2 NKV) HS) act, laid out q | k | v per token:
// biases (may be NULL), then Qwen3's per-head RMSNorm of q and k (qnorm,
// knorm NULL: none), then RoPE of q and k at pos[t] from cos/sin (., HS/2).
cudaError_t launch_qkv_prep(void *qkv, const float *bq, const float *bk, const float *bv, const float *qnorm,
			    const float *knorm, const float *cos, const float *sin, const int32_t *pos, int T,
			    int NH, int NKV, int HS, float eps, int bf16, cudaStream_t s);

// x (T, n) fp32 += b (n)
cudaError_t launch_add_bias(float *x, const float *b, int T, int n, cudaStream_t s);

// out (T, I) act = silu(gate) * up, gu (T, 2I) act laid out gate | up per token
cudaError_t launch_swiglu(void *out, const void *gu, int T, int I, int bf16, cudaStream_t s);

// One tile of attention work: 64 queries of one sequence.
struct att_tile {
	int start;   // the sequence's first token in the pack
	int len;     // its length
	int q0;      // the tile's first query, within the sequence
	int pad;
};
#define ATT_TILE_Q 64

// out (T, NH HS) act = block-causal grouped-query attention over qkv, one
// block per (tile, head), for the head sizes below.
#define ATT_HEAD_SIZES "16, 24, 32, 48, 64, 80, 96 or 128"
// lse (T, NH), when not NULL, gets each query's log-sum-exp of its scaled
// scores, from which the backward recomputes the probabilities.
int attention_head_size_ok(int HS);
cudaError_t launch_attention(void *out, float *lse, const void *qkv, const struct att_tile *tiles, int ntiles,
			     int NH, int NKV, int HS, int bf16, cudaStream_t s);

// The same in bf16 on tensor cores (attention_mma.cu), for head sizes 64 and
// 128, lse included (when not NULL).
int attention_mma_head_size_ok(int HS);
cudaError_t launch_attention_mma(void *out, float *lse, const void *qkv, const struct att_tile *tiles, int ntiles,
				 int NH, int NKV, int HS, cudaStream_t s);

// The backward of launch_attention (attention_bwd.cu), deterministic and
// without atomics: dqkv (T, (NH + 2 NKV) HS) act, laid out as qkv, gets dq,
// dk and dv (dk and dv summed over the query heads of their group) from
// dout (T, NH HS), the forward's out and lse, and D (T, NH) fp32 scratch.
cudaError_t launch_attention_backward(void *dqkv, const void *dout, const void *out, const void *qkv,
				      const float *lse, float *D, const struct att_tile *tiles, int ntiles, int T,
				      int NH, int NKV, int HS, int bf16, cudaStream_t s);

// The same in bf16 on tensor cores (attention_bwd_mma.cu), for head sizes 64
// and 128: the backward of launch_attention_mma.
cudaError_t launch_attention_backward_mma(void *dqkv, const void *dout, const void *out, const void *qkv,
					  const float *lse, float *D, const struct att_tile *tiles, int ntiles, int T,
					  int NH, int NKV, int HS, cudaStream_t s);

#endif
