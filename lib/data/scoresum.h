/*
 * scoresum.h: what a set of rollout groups says of the policy that sampled
 * them, for `grpo-cat --stats`: how its responses ended and how long they
 * were, and, where they are scored, each reward function's mean, standard
 * deviation, solve rate and pass@k, and how many groups gave all their
 * members the same reward (no advantage, nothing learned).
 *
 * pass@k is the chance that at least one of k responses drawn from a
 * group's n is solved, c of them being solved: 1 - C(n-c, k) / C(n, k),
 * the unbiased estimator of Chen et al. (2021), averaged over the groups of
 * at least k members. It is reported for k = 1 (the solve rate, averaged
 * by group rather than by response) and each power of two up to the
 * largest group, and for the largest group's size itself. A sequence whose
 * reward function gave no success flag counts in its mean but in neither
 * its solve rate nor its pass@k.
 *
 * Reward functions are told apart by name (a trajectory without names:
 * reward_0, reward_1, ... by place), in the order first met.
 */
#ifndef GRPO_SCORESUM_H
#define GRPO_SCORESUM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"

struct scoresum_fn {
	char *name;
	uint64_t seqs;                 /* sequences it scored */
	double sum, sumsq;             /* of their rewards */
	uint64_t flagged, solved;      /* sequences with a success flag, and those solved */
	uint32_t *group_n, *group_c;   /* (groups) each group's flagged and solved members */
	size_t groups;
};

struct scoresum {
	uint64_t seqs, scored;         /* sequences, and those scored */
	uint64_t resp_tokens;
	uint32_t resp_max;
	uint64_t stop, length, other_finish, no_finish;   /* finish_reason: stop, length, another, none */
	uint64_t scored_groups, equal_groups;   /* groups of 2 or more, all scored; those of one combined reward */
	double reward_sum;             /* combined rewards (traj_reward) of the scored sequences */
	uint32_t largest;              /* the most members any reward function flagged in one group */
	struct scoresum_fn *fn;
	size_t nfn;
};

/* Count group g in s (zeroed at first). -1 when memory runs out. */
int scoresum_add(struct scoresum *s, const struct group *g, struct err *e);
void scoresum_free(struct scoresum *s);

/* The k of the pass@k that s reports, ascending, into ks (room for 34);
 * returns how many (0 when no group has a flagged member). */
int scoresum_ks(const struct scoresum *s, uint32_t *ks);

/* fn's pass@k over its groups of at least k flagged members, and how
 * many groups those are (*groups; 0: NAN returned). */
double scoresum_pass_at(const struct scoresum_fn *fn, uint32_t k, size_t *groups);

/* 1 - C(n - c, k) / C(n, k) for c of n solved, 1 <= k <= n. */
double pass_at_k(uint32_t n, uint32_t c, uint32_t k);

#endif
