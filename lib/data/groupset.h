/*
 * groupset.h: group integrity over a run's inputs.
 *
 * GRPO scores a group's members against each other, so two things quietly
 * spoil a group: a group of one member (its advantage is always 0) and a
 * group_id that arrives in group records of more than one input (split
 * across inputs: each part is scored alone, against fewer members than were
 * sampled).
 * grpo-collect and grpo-cat --stats feed every group record they publish or
 * read to a groupset, and report both: counts, and with -v the ids.
 *
 * Ids are keyed by their text (an integer id by its decimal form), so the
 * set does not depend on how a trajectory stores its id. The set holds every
 * id it was given: memory grows with the number of distinct groups.
 */
#ifndef GRPO_GROUPSET_H
#define GRPO_GROUPSET_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"

struct groupset {
	struct groupset_ent { char *id; uint64_t input; uint32_t inputs, singles; } *v;   /* (cap) open addressing */
	size_t n, cap;
	uint64_t single_records;   /* group records of one member */
	uint64_t split_ids;        /* ids held by group records of more than one input */
};

/* One group record of input number `input` (inputs are fed in order): its
 * id's text and its member count. */
int groupset_add(struct groupset *s, const char *id, uint32_t members, uint64_t input, struct err *e);
/* The same for a group record's id as given: an integer by its decimal
 * form, a string as a JSON string ("cmpl-7", quoted), so that the string
 * "42" and the integer 42 stay two ids and a list of ids prints as JSON. */
int groupset_add_id(struct groupset *s, const struct traj_id *id, uint32_t members, uint64_t input,
		    struct err *e);

/* The ids of groups of one member (which == GROUPSET_SINGLE) or of split ids
 * (GROUPSET_SPLIT), sorted (numbers by value, then text): *out is an array
 * the caller frees, its strings owned by the set. */
enum groupset_which { GROUPSET_SINGLE, GROUPSET_SPLIT };
int groupset_ids(const struct groupset *s, enum groupset_which which, const char ***out, size_t *n,
		 struct err *e);

void groupset_free(struct groupset *s);

#endif
