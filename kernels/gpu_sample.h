/*
 * gpu_sample.h: the sampling kernel (kernels/sample.cuh: launch_sample,
 * generate.c's sample() rules on the GPU) from C, for tests.
 *
 * Host arrays: logits (B, V); stream_state (B) and draws (B), the stream
 * state of each row and the draws already taken from it (< 0: a padding
 * row, skipped). tokens and logprobs (B) are copied in and out, so a row
 * the kernel skips keeps what the caller put there. Returns 0, or -1 with
 * the failing CUDA call in msg (msglen bytes).
 */
#ifndef GRPO_KERNELS_GPU_SAMPLE_H
#define GRPO_KERNELS_GPU_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int gpu_sample_test(const float *logits, int B, int V, float temperature, float top_p, int top_k,
		    const uint64_t *stream_state, const int32_t *draws, int32_t *tokens, float *logprobs, char *msg,
		    size_t msglen);

#ifdef __cplusplus
}
#endif

#endif
