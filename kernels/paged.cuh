// paged.cuh: a paged key/value cache for a batched decoder (GPU generation,
// in the manner of vLLM's PagedAttention), as host launchers
// (paged_attention.cu). The decoder builds on this layout:
//
//   - The cache is made of blocks of KV_BLOCK tokens. A token's slot is
//     block * KV_BLOCK + offset.
//   - One layer's cache is two arrays, K and V, each
//     [nblocks][NKV][KV_BLOCK][HS] in the activation type (fp32, or bf16
//     with the bf16 flag): one block's tokens of one kv head are contiguous.
//   - qkv rows are laid out q | k | v per token, (NH + 2 NKV) HS elements:
//     q heads at [0, NH HS), k at [NH HS, (NH + NKV) HS), v after; they are
//     read after bias, norm and RoPE (launch_qkv_prep).
//   - Row b's position p lives in block block_table[b * table_stride +
//     p / KV_BLOCK], at offset p % KV_BLOCK.
//
// Each launcher returns cudaGetLastError() and can be captured in a CUDA
// graph: no host sync, no allocation, and grids that depend on the
// arguments alone, never on device data.
#ifndef GRPO_KERNELS_PAGED_CUH
#define GRPO_KERNELS_PAGED_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#define KV_BLOCK 16

// Token t's k and v (qkv row t) into the caches kc and vc at slot slots[t];
// slots[t] < 0 skips the row (padding). HS a multiple of 4.
cudaError_t launch_kv_write(void *kc, void *vc, const void *qkv, const int32_t *slots, int T, int NH, int NKV,
			    int HS, int bf16, cudaStream_t s);

// Decoding attention: row b's NH query heads (qkv row b) attend over
// positions 0 .. ctx_lens[b] - 1 of its sequence, the row's own token
// included (written by launch_kv_write first); query head h reads kv head
// h / (NH / NKV); scale 1/sqrt(HS); softmax in fp32. out (B, NH HS) act.
// ctx_lens[b] == 0 is a padding row: zeros. Every ctx_lens[b] must be at
// most max_ctx; a row past it gets NaNs, not a silently shortened context.
// Head sizes: those of attention_head_size_ok (layers.cuh).
//
// Positions are cut into partitions of PAGED_PART (flash-decoding): one
// thread block per (row, kv head, partition) serves the kv head's query
// heads (up to 8 at once), which share every K and V load. A row longer
// than one partition leaves each partition's fp32 partial results in work,
// and a second pass combines them in a fixed order. The arithmetic depends
// on a row's own context alone (not on B, max_ctx or where its blocks are),
// so the same inputs give the same bits.
// The grid has ceil(max_ctx / PAGED_PART) partitions per row, and the blocks
// of a partition past a row's context exit at once: a tight max_ctx (a
// bucket of the batch's longest context, say) saves launching them.
#define PAGED_PART 512
// work's bytes (16-byte aligned, as cudaMalloc's are): 0, and work may be
// NULL, when max_ctx <= PAGED_PART.
size_t paged_attention_workspace_bytes(int B, int NH, int HS, int max_ctx);
cudaError_t launch_paged_attention(void *out, const void *qkv, const void *kc, const void *vc,
				   const int32_t *block_table, int table_stride, const int32_t *ctx_lens, int B,
				   int max_ctx, float *work, int NH, int NKV, int HS, int bf16, cudaStream_t s);

#endif
