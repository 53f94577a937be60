// sample.cuh: the decoder's sampling step on the GPU: for each row of raw
// fp32 logits z (B, V), the next token and its logprob, by the rules of
// lib/model/generate.c's sample(), which is its reference:
//
//  - temperature 0: the argmax, lowest id on ties; logprob at temperature 1;
//  - else p = softmax(z / T), its log-sum-exp summed in double over all V
//    and each p_j rounded to float as the CPU rounds it; top-k keeps the k
//    most probable (lower id first on ties) when 0 < top_k < V; top-p keeps
//    the smallest set of the most probable of those whose mass reaches
//    top_p times the mass top-k kept (without top-k, also only the tokens
//    with p >= (1 - top_p) / (V - 1), the CPU's prefilter, which can bind
//    by rounding); a token is drawn in proportion to p among what is left;
//  - logprob: z[tok] / T - lse, before top-k and top-p, as a float.
//
// Randomness: row b's uniform is generate.c's uniform() after draws[b]
// earlier calls on the stream state stream_state[b] (its rng[b] once
// initialised). splitmix64 is counter-based, so that is a pure function of
// (state, draws): a GPU draw needs no state carried between steps.
//
// Without top-k and top-p the tokens are walked in id order, accumulating
// p until u * total < acc, as on the CPU: the same token from the same
// logits and state, but for rounding at a boundary (the kernel sums in a
// different order). With them, the kept set is the CPU's (found by radix
// select over the float bits of p, not by sorting), but the draw walks it
// in id order where the CPU walks it most probable first: another token for
// the same u, from the same distribution.
//
// Rounding: p_j is the CPU's float but where CUDA's exp (within 1 ulp) or
// the lse's summation order moves exp(.) across a float's rounding point
// (about 1e-9 of the tokens, by one ulp). Top-p's masses are summed exactly
// here (2^-62 fixed point), in double in sorted order there, so a top-p
// boundary within about 1e-13 of the target may fall the other way.
//
// Deterministic: no floating-point atomics, fixed-order reductions, so the
// same inputs give the same tokens and bits on every run. One block per
// row, no allocation and no host sync (graph-capturable); rows with
// draws[b] < 0 are padding, left untouched. All pointers are device ones.
#ifndef GRPO_KERNELS_SAMPLE_CUH
#define GRPO_KERNELS_SAMPLE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

cudaError_t launch_sample(int32_t *tokens, float *logprobs, const float *logits, int B, int V, float temperature,
			  float top_p, int top_k, const uint64_t *stream_state, const int32_t *draws, cudaStream_t s);

#endif
