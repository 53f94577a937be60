/*
 * advantage.h: group-relative advantages from per-function rewards.
 *
 * The input is a batch: the groups of one input file, each a run of
 * consecutive sequences, with K rewards per sequence and a weight per
 * reward function. Estimators, over a group's values x of m members:
 *
 *   ADV_GRPO     (x - mean) / (std + eps)      std unbiased (n - 1, seed 000's
 *                                              default) or biased (n)
 *   ADV_DR_GRPO  x - mean                      Dr. GRPO: no std
 *   ADV_RLOO     x - (sum - x) / (m - 1)       leave-one-out baseline
 *   ADV_BATCH    (x - mean) / (std_B + eps)    group mean, std over every
 *                                              valid value of the batch
 *
 * Combining K functions (weights w):
 *   sum-then-normalize   x = sum_k w_k r_k, then the estimator;
 *   normalize-then-sum   the estimator on each function's rewards alone,
 *                        then the advantages summed with the weights.
 *
 * Edge cases, each with one fixed answer so no advantage is ever NaN:
 *   - a sequence with a non-finite reward (NaN, inf, or beyond a float's
 *     range, which a spool file cannot hold) is left out of its group's
 *     statistics and of the batch std, and gets advantage 0
 *     (excluded[i] = 1);
 *   - a group whose values are all equal, or that has fewer than two
 *     valid members (a group of one has no baseline), has zero std:
 *     zero_std[g] = 1 and every advantage 0. Under normalize-then-sum a
 *     group has zero std when every function's values are all equal;
 *   - groups may differ in size: each uses its own m;
 *   - an advantage that overflows a float (rewards near FLT_MAX) is an
 *     error naming the group and member.
 */
#ifndef GRPO_ADVANTAGE_H
#define GRPO_ADVANTAGE_H

#include <stdint.h>

#include "base/err.h"

enum adv_kind { ADV_GRPO, ADV_DR_GRPO, ADV_RLOO, ADV_BATCH };
enum adv_combine { ADV_SUM_THEN_NORMALIZE, ADV_NORMALIZE_THEN_SUM };

struct adv_opt {
	enum adv_kind kind;
	int std_biased;           /* 0: n - 1 (default), 1: n */
	double std_eps;           /* >= 0; default 1e-4 */
	enum adv_combine combine;
};
#define ADV_OPT_INIT { ADV_GRPO, 0, 1e-4, ADV_SUM_THEN_NORMALIZE }

struct adv_batch {
	uint32_t n_groups;
	const uint32_t *size;     /* (n_groups) members of each group, consecutive */
	uint32_t n_rewards;       /* K >= 1 */
	const double *rewards;    /* (N, K) N = sum of sizes, row-major */
	const double *weights;    /* (K) */
};

/* The words of each enum, in its order, NULL-terminated: the tools' option
 * values, whose index in the list is the enum's value (cli_word). */
extern const char *const adv_kind_names[];
extern const char *const adv_combine_names[];

/* adv (N), zero_std (n_groups), excluded (N): written, all of them. */
int adv_compute(const struct adv_opt *o, const struct adv_batch *b, float *adv, uint8_t *zero_std,
		uint8_t *excluded, struct err *e);

#endif
