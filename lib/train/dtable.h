/*
 * dtable.h: grpo-step's --debug-table, tab-separated rows that `column -t`
 * and spreadsheets read (seed 000's debug tables).
 *
 * One row per sequence of a micro-batch (kind "seq"): its ids, length,
 * trained tokens, advantage and the mean over its trained tokens of the
 * sampler's, the reference's and the trainer's logprobs; with tokens set,
 * one row per token of it (kind "tok"): position, token id, its text (when
 * a tokenizer is given: escaped as \\, \t, \n, \r and \xHH for the other
 * control bytes, so every row stays one line of one cell each), the three
 * logprobs, the ratio exp(trainer − sampler), whether the loss's clip cuts
 * it (as the clip_low/clip_high metrics count: on the ratio to ℓ_old, which
 * is 1 under a TIS cap, and on the sequence's ratio with --ratio sequence)
 * and the loss mask. The trainer's
 * logprobs are those at the step's start. A missing value (no reference, a
 * prompt token, a sequence whose sampler gave no logprobs) is empty; such a
 * sequence's ratio is 1, as the step takes it (step.c).
 */
#ifndef GRPO_DTABLE_H
#define GRPO_DTABLE_H

#include <stdint.h>

#include "base/buf.h"
#include "data/traj.h"
#include "model/tokenizer.h"
#include "train/loss.h"

/* The header line (with '\n'). */
int dtable_header(struct buf *b);

/* The rows of mb at optimizer step `step`, logprob (T) the trainer's; tok
 * (NULL: the text column stays empty) decodes the token rows' text. */
int dtable_mb(struct buf *b, int64_t step, const struct microbatch *mb, const float *logprob,
              const struct loss_opts *o, int tokens, const struct tokenizer *tok);

#endif
