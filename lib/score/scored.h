/*
 * scored.h: every place grpo-score touches a trajectory's ids or its
 * scored fields, in one module, so that a change of struct traj (ids kept
 * as given, one success per reward function) is made here alone.
 *
 *   scored_seq_text / scored_group_text   the ids as text, for messages and
 *                                         for the reward program's requests
 *   scored_same_group                     do two trajectories share a group
 *   scored_set                            rewards, names, successes and the
 *                                         advantage of a scored trajectory
 */
#ifndef GRPO_SCORED_H
#define GRPO_SCORED_H

#include <stddef.h>
#include <stdint.h>

#include "data/traj.h"

/* The id as JSON (a number today; a string id would come quoted). */
void scored_seq_text(const struct traj *t, char *out, size_t size);
void scored_group_text(const struct group *g, char *out, size_t size);
int scored_same_group(const struct group *a, const struct group *b);
/* Keys for hashes: of a group (groups seen), of a sequence (output names). */
uint64_t scored_group_key(const struct group *g);
uint64_t scored_seq_key(const struct traj *t);

/*
 * Mark t scored: rewards (K, unweighted) named names (K, copied),
 * successes (K, 0 or 1) and the advantage. -1 when memory runs out (t
 * unchanged). Today's struct holds one success: the first function's.
 */
int scored_set(struct traj *t, uint32_t K, const float *rewards, const char *const *names,
	       const uint8_t *successes, float advantage);

#endif
