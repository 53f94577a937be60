/*
 * gpu_decode.h: sampling from a GPU model (gpu_model.h) with a paged
 * key/value cache, callable from C.
 *
 * gpu_generate() takes B sequences to sample, each a prompt and a random
 * stream. Consecutive sequences with the same prompt form a group (the G
 * samples of one prompt): the group's prompt is run once (the prefill, a
 * packed pass like the training forward's, several groups a pass) and its
 * whole blocks of the cache are shared by its samples. Then every unfinished
 * sequence advances one token per decode step: one row each of a batch,
 * attending over its own blocks (paged.cuh), the LM head and the sampler on
 * the GPU, so only the chosen tokens and their logprobs come back. A group
 * joins the batch as soon as there are rows and cache blocks for it, and a
 * finished sequence gives its blocks back at once (continuous batching).
 * Blocks are taken as sequences grow; when none is left, the sequence that
 * joined last is taken out and started again later from its prompt and the
 * tokens it has (a prefill), so the oldest always finish. Each decode step
 * is one CUDA graph launch, captured once per batch size.
 *
 * Sampling is generate.h's: temperature, top-k, top-p, logprobs at the
 * temperature before top-k and top-p (greedy: argmax at temperature 1), and
 * the draw of a sequence's n-th token a function of its stream state and n
 * only (sample.cuh), so a sequence's tokens do not depend on the batch it
 * shares or on when the others finish.
 *
 * The model must be made with maxT >= the longest prompt plus max_tokens
 * (a pass that starts a sequence again takes its tokens so far) and a RoPE
 * table (max_pos) as long; at most maxT sequences decode at once. Returns
 * 0, or -1 with the reason in msg.
 */
#ifndef GRPO_KERNELS_GPU_DECODE_H
#define GRPO_KERNELS_GPU_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_model.h"

/* the most sequences the decoder keeps in flight (its per-row buffers) */
#define GPU_DECODE_MAX_BATCH 1024

#ifdef __cplusplus
extern "C" {
#endif

struct gpu_gen_params {
	float temperature;        /* 0: greedy */
	float top_p;              /* (0, 1] */
	int top_k;                /* 0: all */
	int max_tokens;           /* >= 1 */
	const int32_t *stop_ids;  /* a stop token ends a sequence and is kept */
	int n_stop;
	/* asked on the host after each token that is not a stop token: nonzero
	 * ends the sequence there as a stop token would (stop strings); NULL: never */
	int (*stop_after)(void *ctx, const int32_t *tokens, int n);
	void *stop_ctx;
	int max_batch;            /* most sequences decoding at once; 0: GPU_DECODE_MAX_BATCH */
	size_t cache_bytes;       /* the KV cache; 0: what all B need, within 90% of the free memory */
	int no_graphs;            /* launch each step kernel by kernel (for comparison) */
};

/* One sequence's output: the caller gives arrays of max_tokens. */
struct gpu_gen_seq {
	int32_t *tokens;
	float *logprobs;
	int n;
	int stopped;              /* 1: ended by a stop token or stop_after; 0: by max_tokens */
};

struct gpu_gen_stats {
	long long prefill_tokens, decode_steps, generated;
	int peak_batch, groups, graphs;   /* graphs: CUDA graphs captured (0: none used) */
	int restarts;                     /* sequences taken out for want of blocks, started again */
	long long blocks, peak_blocks;    /* cache blocks, and the most in use at once */
	size_t cache_bytes;
	size_t device_used;               /* bytes in use on the device while decoding (all processes) */
};

/* states[b]: sequence b's random stream (generate.h's gen_stream_state). */
int gpu_generate(struct gpu_model *g, const int32_t *const *prompts, const int *lens, int B, const uint64_t *states,
		 const struct gpu_gen_params *p, struct gpu_gen_seq *out, struct gpu_gen_stats *stats, char *msg,
		 size_t msglen);

#ifdef __cplusplus
}
#endif

#endif
