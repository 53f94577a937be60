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
 *
 * A third thing spoils a group quietly: a record read twice (a retried
 * request logged again, a log appended to twice), whose copy would be scored
 * and trained as a sample of its own. A recordset knows the records taken in
 * a run by their content (recordset_hash) and finds an exact repeat of one.
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

/*
 * Exact repeats. A record is what one input line holds: a group, or a lone
 * trajectory that joins one. It is known by two 64-bit hashes, of its
 * group_id and of its members in order (sequence_id, prompt and response
 * tokens, logprobs bitwise, whether it has them): an exact repeat has the
 * same two. Only the hashes are kept, not the records, so the set costs 32
 * bytes a record taken. Why the hashes suffice: two records that share a
 * group_id (a vLLM request's choices as lines of their own, a group split)
 * are told apart by the members' hash alone, so with k records under one
 * id the chance that two of them meet is about k^2 / 2^65 (1 in 10^11 for
 * k = 1,000); records under other ids must meet on both hashes, about
 * n^2 / 2^129 over a run of n records. Copies inside one group are compared
 * whole (recordset_same_member), as both are at hand.
 *
 * Where a record came from (an input's number and a line's) is kept with it,
 * so that a message can name the record a repeat repeats. Records are taken
 * provisionally: recordset_forget drops every record taken since the last
 * recordset_keep, for an input that failed and published nothing.
 */
struct recordset_at {
	uint64_t input, line;
};
struct recordset {
	struct recordset_rec { uint64_t id, members; struct recordset_at at; } *v;   /* (n) in the order taken */
	size_t n, cap, kept;
	size_t *ix, cap_ix;   /* open addressing over v: position + 1, 0 empty */
};

/* The hashes of the record made of group_id gid and the n members t[0..n):
 * a group, or (n = 1) one trajectory line. */
void recordset_hash(const struct traj_id *gid, const struct traj *t, uint32_t n, uint64_t *id,
		    uint64_t *members);
/* Take the record: 0 taken, 1 an exact repeat of one taken before (*first:
 * where that one came from; this one is not taken), -1 out of memory. */
int recordset_take(struct recordset *s, uint64_t id, uint64_t members, struct recordset_at at,
		   struct recordset_at *first, struct err *e);
void recordset_keep(struct recordset *s);
void recordset_forget(struct recordset *s);
void recordset_free(struct recordset *s);

/* Whether a and b are the same sample: the same sequence_id, prompt and
 * response tokens, and logprobs bitwise (or neither has any). */
int recordset_same_member(const struct traj *a, const struct traj *b);
/* Drop each member of g that is the same sample as one before it in g, in
 * place, the others kept in order; each copy is shown to dropped (unless
 * NULL) before it is freed. The number dropped, or -1 when dropped returned
 * -1 (g then holds the members kept and those not yet compared). */
long recordset_drop_copies(struct group *g, int (*dropped)(void *ctx, const struct traj *copy), void *ctx);

#endif
