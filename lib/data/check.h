/*
 * check.h: the data model's invariants, one check run by every writer and
 * every reader (grpo-spool(5), issue 9).
 *
 * The spool writer applies it before it encodes a record and the reader
 * after it decodes one, and the JSON view after it parses one, so whatever
 * reads a spool can trust what it holds:
 *
 *   trajectory  token ids >= 0; logprobs and ref_logprobs finite and <= 0
 *               where present; temperature finite and > 0; response_mask
 *               only 0 or 1; rewards, successes and advantages finite; an
 *               integer sequence_id or group_id >= 0 (or -1: none)
 *   strings     every string UTF-8: answer, run, finish_reason, string
 *               ids, reward_names; a micro-batch's run, finish_reasons
 *               and string ids (the JSON view prints them as they are,
 *               and JSON text is UTF-8)
 *   micro-batch seq_lens positive and summing to its tokens, at most one
 *               padding span, after the sequences; input_ids >= 0;
 *               position_ids 0, 1, ... restarting at every span;
 *               loss_mask only 0 or 1, 0 at every span's first token, on
 *               prompt tokens and on padding; inference_logprobs and
 *               ref_logprobs finite and <= 0; temperatures finite and > 0;
 *               advantages finite; the per-sequence fields one per
 *               sequence (prompt_lens within seq_lens, rewards finite,
 *               logprobs_missing 0 or 1)
 *
 * Lengths that a struct cannot get wrong (one n_response for all response
 * arrays) are the decoders' to check, since only they see the stored counts.
 * Importers keep only policy of their own (the vocabulary bound, a server's
 * sentinels). Messages name the trajectory or position and the field:
 * "trajectory 2: temperature is -2, not above 0"; the caller adds the file
 * and record.
 */
#ifndef GRPO_CHECK_H
#define GRPO_CHECK_H

#include "base/err.h"
#include "data/traj.h"

int group_check(const struct group *g, struct err *e);
int traj_check(const struct traj *t, struct err *e);   /* messages without the "trajectory N: " prefix */
int mb_check(const struct microbatch *mb, struct err *e);

#endif
