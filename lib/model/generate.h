/*
 * generate.h: batched sampling from the reference transformer.
 *
 * gen_run() takes B prompts, fills a key/value cache with them (model_step,
 * several prompts per step), then decodes all unfinished sequences together,
 * one token each per step, until each meets a stop token, a stop string
 * (stop_after) or max_tokens.
 *
 * Sampling: the logits are divided by the temperature, then top-k keeps the
 * k most probable tokens, then top-p keeps the smallest set of those whose
 * probability (renormalised after top-k) reaches top_p, and a token is drawn
 * from what is left, renormalised. Temperature 0 is greedy (argmax, lowest id
 * on ties).
 *
 * Logprobs: each sampled token's logprob under softmax(logits / temperature),
 * before top-k and top-p, which is what the reference model and the trainer
 * recompute (DESIGN.md: logprobs at the sampling temperature). When greedy,
 * at temperature 1.
 *
 * Randomness: sequence b draws from its own stream keyed by (seed, b), or by
 * (seed, streams[b]) when the caller names the streams, so a sequence's
 * tokens do not depend on the other sequences of the batch or on when they
 * finish; naming them keeps a sequence's tokens the same whichever batch, and
 * whichever place in it, the sequence is sampled in.
 */
#ifndef GRPO_GENERATE_H
#define GRPO_GENERATE_H

#include <stdint.h>

#include "base/err.h"
#include "model/model.h"

struct gen_params {
	float temperature;     /* 0: greedy */
	float top_p;           /* (0, 1]; 1 keeps everything */
	int top_k;             /* 0 keeps everything */
	int max_tokens;        /* most tokens to generate per sequence (>= 1) */
	const int *stop_ids;   /* tokens that end a sequence (kept as its last token) */
	int n_stop;
	/* asked after each token that is not a stop token: nonzero ends the
	 * sequence there as a stop token would (stopstr.h's stop strings); NULL: never */
	int (*stop_after)(void *ctx, const int32_t *tokens, int n);
	void *stop_ctx;
	uint64_t seed;
	const uint64_t *streams;   /* (B) or NULL: the random stream of each sequence, see above */
};

enum gen_finish { GEN_STOP, GEN_LENGTH };

struct gen_seq {
	int *tokens;           /* (n) generated ids */
	float *logprobs;       /* (n) their logprobs, as described above */
	int n;
	enum gen_finish finish;   /* GEN_STOP: ended by a stop token or string; GEN_LENGTH: by max_tokens */
};

/*
 * Generate for B prompts (prompts[b] of prompt_lens[b] >= 1 tokens) into
 * out[0..B), whose arrays gen_run allocates (free with gen_seq_free).
 */
int gen_run(const struct model *m, const int *const *prompts, const int *prompt_lens, int B,
            const struct gen_params *p, struct gen_seq *out, struct err *e);
void gen_seq_free(struct gen_seq *s);

/*
 * What every sampler (gen_run, the GPU's model_gpu_generate) does first:
 * check p and the prompts' lengths, give out[0..B) room for p->max_tokens
 * each, and put each sequence's stream state in states (B). -1 with e set
 * (out holding nothing) when they are bad or memory runs out.
 */
int gen_start(const int *prompt_lens, int B, const struct gen_params *p, struct gen_seq *out, uint64_t *states,
              struct err *e);

/*
 * The state stream `stream` of a run seeded `seed` starts from; its n-th
 * draw (from 0) is splitmix64's output at state + (n + 1) * 0x9e3779b97f4a7c15,
 * which is how the GPU sampler takes draw n without the n before it.
 */
uint64_t gen_stream_state(uint64_t seed, uint64_t stream);

#endif
