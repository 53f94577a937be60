// backward.cuh: the backward kernels of backward.cu, as host launchers for
// gpu_model.cu's backward. Gradients flow in fp32 except where they feed a
// matrix product, which takes the activation type; weight gradients are
// fp32 and accumulate (+=), so micro-batches add up.
#ifndef GRPO_KERNELS_BACKWARD_CUH
#define GRPO_KERNELS_BACKWARD_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

// Rows per block of the RMSNorm backward: partial holds ceil(T / RMS_ROWS) x C floats.
#define RMS_ROWS 16

// out (N) += column sums of in (R, N), fp32 or bf16, summed in a fixed
// order (chunks of rows, then the chunks' sums) through scratch, which
// holds colsum_scratch_floats(R, N) floats
cudaError_t launch_colsum(float *out, const void *in, int in_bf16, int R, int N, float *scratch, cudaStream_t s);
size_t colsum_scratch_floats(size_t R, size_t N);

// dx (T, C) += RMSNorm's input gradient from dy, and dx_act (T, C), unless
// NULL, = the new dx in the activation type (bf16 or fp32); dw (C) += its
// weight gradient, through partial (ceil(T / RMS_ROWS) x C floats) and
// colsum's scratch for ceil(T / RMS_ROWS) rows of C
cudaError_t launch_rmsnorm_backward(float *dx, void *dx_act, int bf16, float *dw, float *partial, float *scratch,
				    const float *dy, const float *x, const float *w, int T, int C, float eps,
				    cudaStream_t s);

// dgu (T, 2I) act, gate | up, from dact (T, I) fp32 and the forward's gu;
// and, where act is not NULL, act (T, I) = the forward's output again
cudaError_t launch_swiglu_backward(void *dgu, void *act, const float *dact, const void *gu, int T, int I, int bf16,
				   cudaStream_t s);

// In place on dqkv (T, (NH + 2 NKV) HS) act: from the gradient after RoPE
// to the gradient of the q/k/v projections' output (RoPE transposed, then
// q/k norm's backward from raw, the projections' output before bias). nq
// (T NH, HS) and nk (T NKV, HS) get the norms' per-row weight gradients,
// for colsum; NULL when there is no q/k norm.
cudaError_t launch_qkv_prep_backward(void *dqkv, float *nq, float *nk, const void *raw, const float *bq,
				     const float *bk, const float *qnorm, const float *knorm, const float *cos,
				     const float *sin, const int32_t *pos, int T, int NH, int NKV, int HS, float eps,
				     int bf16, cudaStream_t s);

// dz (n, V) act: the gradient of the logits z (n, V) fp32, per row from
// dlp and dent (the loss's gradients of the predicted token's logprob and
// of the entropy), the row's target, temperature, lse and entropy.
cudaError_t launch_lmhead_backward(void *dz, const float *z, const int32_t *targets, const float *temps,
				   const float *dlp, const float *dent, const float *lse, const float *ent, int n, int V,
				   int bf16, cudaStream_t s);

// dembed[seg_id[u]] += sum of dres rows order[seg[u] .. seg[u+1]-1], for u < nseg
cudaError_t launch_embed_backward(float *dembed, const float *dres, const int32_t *order, const int32_t *seg,
				  const int32_t *seg_id, int nseg, int C, cudaStream_t s);

#endif
