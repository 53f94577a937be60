/*
 * mbbuild.h: one packed micro-batch from scored trajectories: the packer's
 * output (pack/packstep.h), and the model's input wherever sequences are
 * run packed (model/align.h), so there is one packer.
 *
 * input_ids is [P1 R1 P2 R2 ... pad]: each sequence's prompt then response
 * tokens, then padding up to a multiple of pad_multiple. Under the alignment
 * convention of traj.h (the value at i describes input_ids[i]):
 *
 *   position_ids        0, 1, ... restarting in every sequence and in the
 *                       padding span
 *   loss_mask[i]        1 when input_ids[i] is a response token that
 *                       response_mask trains, never at a sequence's first
 *                       token (nothing predicts it); 0 on prompt and padding
 *   inference_logprobs  the sampler's logprob of a response token, 0 on
 *                       prompt tokens and padding, and 0 on a sequence whose
 *                       sampler gave none, which logprobs_missing marks
 *   ref_logprobs        likewise from the scorer, 0 on prompt and padding;
 *                       NULL unless every sequence has them (a 0 for one
 *                       never taken would pass for the reference's logprob)
 *   advantages          the sequence's scalar advantage on every one of its
 *                       tokens (prompt included: the loss reads it only where
 *                       loss_mask is 1, and any token then tells the
 *                       sequence's advantage), 0 on padding
 *   temperatures        the sequence's sampling temperature on all its
 *                       tokens, 1 on padding
 *   seq_lens            one entry per sequence, plus one for a trailing
 *                       padding span; sequence_ids / group_ids one per real
 *                       sequence, in seq_lens order, as are prompt_lens
 *                       (prompt tokens kept), policy_versions, rewards (the
 *                       sum of the sequence's rewards), finish_reasons;
 *                       logprobs_missing only when some sequence has no
 *                       sampler logprobs
 *
 * A sequence may be used shortened (truncation to the capacity): use[j] < its
 * length keeps that prefix, and its finish reason is then "length". With no sequence the result is a dummy: one
 * padding span of pad_multiple tokens (1 without), every mask 0.
 */
#ifndef GRPO_MBBUILD_H
#define GRPO_MBBUILD_H

#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"

#define MB_PAD_ID 0   /* token id of padding; never trained, never attended by a sequence */

struct mbbuild_opt {
	uint32_t cap;            /* T, a multiple of pad_multiple */
	uint32_t pad_multiple;   /* 0 or 1: no padding */
	int64_t step;
};

/* Build mb (zeroed first; free with mb_free) from n sequences, using the
 * first use[j] tokens of seqs[j] (use NULL: all). -1 if the tokens exceed
 * cap or memory runs out. */
int mb_build(struct microbatch *mb, const struct traj *const *seqs, const uint32_t *use, uint32_t n,
	     const struct mbbuild_opt *o, int32_t rank, int32_t index, struct err *e);

/* Trained tokens of the sequence's first `use` tokens (0 after truncation
 * of every response token: worth reporting). */
uint32_t mb_trained_tokens(const struct traj *t, uint32_t use);

#endif
