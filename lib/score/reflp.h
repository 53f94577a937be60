/*
 * reflp.h: the reference model's logprob of every response token, through
 * the fp32 model core (model.h), or its forward on a GPU (model_gpu.h).
 *
 * A group's sequences (prompt then response each) are packed back to back
 * into passes of at most max_tokens tokens, in order; a sequence longer
 * than that has a pass of its own (the activations grow to fit it). Every
 * token is taken at its trajectory's sampling temperature, as the
 * sampler's logprobs were, so ref_logprobs and logprobs compare. Packing
 * changes nothing: block-causal attention gives each sequence the values
 * it gets alone (model.h).
 *
 * ref_logprobs[j] = log p(response[j] | prompt, response[0..j-1]). A
 * trajectory without prompt tokens has nothing that predicts its first
 * response token, and is an error, as is a token id outside the model's
 * vocabulary or a temperature that is not positive.
 *
 * On a GPU (reflp_use_gpu) the same passes go through the CUDA forward,
 * in bf16 or fp32; the C model keeps the weights on the host only, to
 * resize the GPU model when a sequence longer than max_tokens arrives.
 *
 * The path given may be a model directory (config.json) or a policy
 * queue (SPOOL/policy), which means its step_0: the initial policy, the
 * reference of the KL term (DESIGN.md).
 */
#ifndef GRPO_REFLP_H
#define GRPO_REFLP_H

#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"
#include "model/model.h"
#include "model/model_gpu.h"

struct reflp {
	struct model m;
	char dir[4096];           /* the model directory loaded */
	int max_tokens;           /* tokens per pass */
	int acts_T;               /* tokens the activations hold */
	struct model_gpu *gpu;    /* NULL: the passes run on the CPU */
	int gpu_T, gpu_bf16;      /* tokens the GPU model holds; its precision */
	int *ids, *lens;          /* (cap) one pass's ids; (cap) its sequence lengths */
	float *temps, *lp;        /* (cap) */
	int cap;
	uint64_t tokens;          /* tokens run through the model so far */
};

int reflp_open(struct reflp *r, const char *path, int max_tokens, struct err *e);
/* The same over a model already in memory (a benchmark's random one): r
 * takes m over (m is zeroed); name is for messages. */
void reflp_init(struct reflp *r, struct model *m, const char *name, int max_tokens);
/* Run the passes on the GPU from now on, in bf16 (else fp32). */
int reflp_use_gpu(struct reflp *r, int bf16, struct err *e);
/* Fill ref_logprobs (allocated here, replacing any) of every trajectory of
 * g; on error no trajectory's ref_logprobs has changed. */
int reflp_group(struct reflp *r, struct group *g, struct err *e);
void reflp_close(struct reflp *r);

#endif
