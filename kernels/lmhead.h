/*
 * lmhead.h: the CUDA LM head's softmax statistics, callable from C.
 *
 * For each row r of a chunk of logits z (n, V), with x = z / temps[r]:
 *
 *   lse[r]     = log sum_j exp(x_j)
 *   logprob[r] = x_{targets[r]} - lse[r]
 *   entropy[r] = lse[r] - sum_j softmax(x)_j x_j
 *
 * exactly what lib/model/softmax_stats.h computes for the C model, so the
 * CUDA training path can take logprobs and entropies without ever holding
 * (T, V) probabilities. The C loop sums in double; the kernel works in fp32
 * but never subtracts two large numbers: in one pass over the row it keeps
 * the maximum m so far and sums e_j = exp(x_j - m) over the entries below m
 * with Kahan compensation, rescaling the sums when m grows (the c entries
 * equal to m contribute 1 each and are counted, not summed),
 * and forms lse = m + log c + log1p(r / c) and entropy = log s + sum e_j d_j / s
 * with d_j = m - x_j >= 0. So a peaked row's tiny entropy and a sure token's
 * logprob near 0 keep their relative accuracy.
 *
 * All pointers are device pointers; stream is a cudaStream_t (NULL: the
 * default stream). A target outside [0, V) gives a NaN logprob; a logit of
 * -inf has probability 0 (and adds 0, not NaN, to the entropy). The call
 * only queues the kernel; it returns 0, or a cudaError_t value that
 * grpo_cuda_strerror() describes. This header is plain C (the library is
 * built by nvcc with C linkage), so C tools and tests include it as is.
 */
#ifndef GRPO_KERNELS_LMHEAD_H
#define GRPO_KERNELS_LMHEAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int grpo_cuda_lmhead_stats(const float *logits,    /* (n, V) device */
			   const int32_t *targets,  /* (n) device */
			   const float *temps,      /* (n) device, > 0 */
			   int n, int V,
			   float *logprob,          /* (n) device, written */
			   float *entropy,          /* (n) device, written */
			   float *lse,              /* (n) device, written */
			   void *stream);

const char *grpo_cuda_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
