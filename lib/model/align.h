/*
 * align.h: seed 004's logprob alignment check, offline.
 *
 * For every response token of a group, the model's logprob and entropy at
 * the trajectory's sampling temperature, next to the sampler's logprob. A
 * trainer that disagrees with its sampler by more than noise (a wrong chat
 * template, a tokenizer mismatch, a stale checkpoint, an off-by-one in the
 * alignment) shows it here before it ruins a run.
 *
 * The group's sequences are packed together, as the packer packs them
 * (data/mbbuild.h), into micro-batches of at most ALIGN_MAX_PACK tokens
 * (one sequence may exceed it and goes alone), each run through
 * model_forward_mb().
 */
#ifndef GRPO_ALIGN_H
#define GRPO_ALIGN_H

#include "base/err.h"
#include "model/model.h"
#include "data/traj.h"

#define ALIGN_MAX_PACK 8192

/* The differences are taken over trained tokens only: a token whose
 * response_mask is 0 (tool output in a multi-turn response) was not sampled
 * and is stored with logprob 0, so comparing it would measure nothing but
 * the model's logprob of the tool's text; and the first response token of a
 * trajectory without prompt tokens is predicted by nothing (its model
 * logprob is 0) and never trained. */
struct align_traj {
	float *model_logprobs;   /* (n_response) */
	float *model_entropy;    /* (n_response) */
	uint32_t n_trained;      /* response tokens compared */
	double diff_mean;        /* mean (model - sampler): its sign says which side is sharper */
	double abs_diff_mean;    /* mean |model - sampler|; both 0 when n_trained is 0,
	                            as when the sampler gave no logprobs (t->logprobs NULL) */
	double abs_diff_max;
};

/* Fill out[0..g->n-1]; free each with align_traj_free. */
int align_group(struct model *m, const struct group *g, struct align_traj *out, struct err *e);
void align_traj_free(struct align_traj *a);

#endif
