/*
 * gpu_paged.h: the paged key/value cache's kernels (kernels/paged.cuh)
 * alone, callable from C, for tests/cuda/test_cuda_paged.c.
 * This header is plain C; the library is built by nvcc with C linkage.
 */
#ifndef GRPO_KERNELS_GPU_PAGED_H
#define GRPO_KERNELS_GPU_PAGED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One decode step over a paged cache, from host fp32 arrays (rounded to
 * bf16 on the way in when bf16 is set; the output comes back as fp32):
 * qkv (B, (NH + 2 NKV) HS) the new tokens' q | k | v; kctx and vctx (B,
 * max_ctx, NKV, HS) every row's earlier positions' k and v (a row's
 * positions 0 .. ctx_lens[b] - 2 are read; its last one is the new token,
 * taken from qkv). It lays the rows' cache blocks out over a physical order
 * shuffled by seed (unused table entries point at a block of NaNs), writes
 * the earlier positions with launch_kv_write (padding rows between them),
 * then the new tokens' k and v and launch_paged_attention, captured into a
 * CUDA graph and replayed when graph is set; out (B, NH HS) starts as NaNs.
 * ctx_lens[b] is 0 (a padding row) to max_ctx. Returns 0, or -1 with a
 * message in msg.
 */
int gpu_paged_attention_test(const float *qkv, const float *kctx, const float *vctx, const int32_t *ctx_lens, int B,
			     int max_ctx, int NH, int NKV, int HS, int bf16, uint64_t seed, int graph, float *out,
			     char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif

#endif
