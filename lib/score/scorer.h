/*
 * scorer.h: scoring the groups of one input, all or nothing.
 *
 * For a batch of groups (one input file, or the groups of standard input
 * that grpo-score has read so far, as it streams it: scoreio.h): each
 * response is decoded (and each prompt, when a reward program is asked),
 * every reward function is computed, the built-ins (reward.h) then the
 * reward program's (rewardcmd.h; with several copies, rewardpool.h, or
 * asked per group, all the batch's texts decoded first), the advantages
 * over the batch (advantage.h), and the reference logprobs
 * of the groups kept (reflp.h). Only when all of that succeeded are the
 * trajectories marked scored (rewards, successes, advantage set): on error
 * none is, and the caller publishes nothing from the input.
 *
 * Groups of one input that share a group id are merged first (scorer_merge,
 * which scoreio_read calls; scorer_run merges nothing): a group arriving
 * in several records is scored as one. A group split
 * across inputs cannot be (its other part may not exist yet); the tool
 * says so and each part is scored on its own.
 *
 * Rewards are stored unweighted, one per function, named; the weights
 * (the built-ins' from their specs, the reward program's by the names it
 * answers, 1 for those not given) go to the advantages. A weight named for
 * the program that its first answer does not name is an error. A non-finite
 * reward (from a reward program) is stored as 0, its sequence gets
 * advantage 0 and is left out of its group's statistics (advantage.h),
 * and the stats count it and describe the first one. A success is a
 * reward at or above the threshold. The rewards that weigh length by
 * correctness (cosine, kimi-length) are computed last, from the successes
 * of the correctness reward named (a program not answering that name is an
 * error, as for a weight).
 */
#ifndef GRPO_SCORER_H
#define GRPO_SCORER_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/progress.h"
#include "data/traj.h"
#include "model/tokenizer.h"
#include "score/advantage.h"
#include "score/reflp.h"
#include "score/reward.h"
#include "score/rewardcmd.h"
#include "score/rewardpool.h"

#define SCORER_MAX_REWARDS (16 + REWARDCMD_MAX)
/* pass@k is kept for k = 1, 2, 4, ... 2^(SCORER_PASS_POW - 1) */
#define SCORER_PASS_POW 16

struct scorer_opt {
	const struct reward_spec *rewards;   /* (n_rewards) built-ins */
	uint32_t n_rewards;
	struct reward_opt ropt;
	struct rewardpool *cmd;              /* NULL: no reward program; one copy or several
	                                        (--reward-jobs), whose requests of the batch
	                                        are then all in flight together */
	int cmd_groups;                      /* --reward-groups: one request per group, in the
	                                        form of rewardcmd.h, as the batch's are */
	const struct reward_spec *cmd_weights;   /* (n_cmd_weights) by name; the others weigh 1 */
	uint32_t n_cmd_weights;
	struct adv_opt adv;
	double success_threshold;            /* default 1 */
	const char *correct_by;              /* cosine, kimi-length (reward.h): the reward whose
	                                        success makes a response right; NULL without them */
	int drop_zero_std;
	const struct tokenizer *tok;         /* NULL when no reward reads text */
	struct reflp *ref;                   /* NULL: no reference model */
	/* called between groups, NULL for none: a claim holder renews its
	 * lease there (watch_renew); -1 stops the scoring with its error */
	int (*between)(void *ctx, struct err *e);
	void *ctx;
	struct progress *progress;           /* NULL, or groups rewarded, then referenced (progress.h) */
};

struct scorer_stats {
	uint32_t groups, seqs, dropped, zero_std, singletons, nonfinite;
	uint32_t min_size, max_size;
	uint32_t K;                          /* reward functions */
	char names[SCORER_MAX_REWARDS][REWARD_NAME_MAX + 1];
	double r_sum[SCORER_MAX_REWARDS], r_sq[SCORER_MAX_REWARDS];
	uint32_t succ[SCORER_MAX_REWARDS];
	/* pass@k (scoresum.h) summed over the groups of at least k members,
	 * for k = 2^i, and those groups; and for k = pass_top, the largest
	 * group's size, over the groups of that size */
	double pass_sum[SCORER_MAX_REWARDS][SCORER_PASS_POW], pass_top_sum[SCORER_MAX_REWARDS];
	uint32_t pass_groups[SCORER_PASS_POW], pass_top, pass_top_groups;
	uint64_t resp_len_sum;
	uint32_t resp_len_max, truncated;
	double t_decode, t_reward, t_ref;    /* seconds */
	uint64_t ref_tokens;
	char first_nonfinite[256];           /* "group G, sequence S, reward NAME = nan" */
};

/* Merge the groups of gs that share a group id into the first of them
 * (in order); *n shrinks. -1 when memory runs out (gs unchanged). */
int scorer_merge(struct group *gs, uint32_t *n, struct err *e);

/*
 * Score gs[0..n) in place; keep[g] = 0 for a group dropped by
 * drop_zero_std (still scored, not to be published). st is filled.
 */
int scorer_run(const struct scorer_opt *o, struct group *gs, uint32_t n, uint8_t *keep, struct scorer_stats *st,
	       struct err *e);

/*
 * scorer_run, but st (n of them) counts each group as scorer_run of that
 * group alone would, so that their sum (scorer_stats_add, in order) is
 * byte for byte the sum of the groups scored one at a time; the batch's
 * times are all in st[0]. Streamed groups are scored so, several together
 * (the copies of a reward program all at work), never merged.
 */
int scorer_run_each(const struct scorer_opt *o, struct group *gs, uint32_t n, uint8_t *keep,
		    struct scorer_stats *st, struct err *e);

/* Add the stats of a later part of an input (scored by another
 * scorer_run) into sum, which starts zeroed. */
void scorer_stats_add(struct scorer_stats *sum, const struct scorer_stats *st);

/* One JSON line (with its newline) of metrics for an input. */
int scorer_metrics(struct buf *out, const char *input, const struct scorer_stats *st);

/* 1 when the metrics file at path holds a line of scorer_metrics for
 * input (one that begins {"input":INPUT,), 0 when not or when there is no
 * such file, -1 when it cannot be read. A re-run that finds an input's
 * output published asks it, so that the input gets its line once: again
 * if the run that published it died first, not if that run wrote it. */
int scorer_metrics_has(const char *path, const char *input, struct err *e);

#endif
