/*
 * trajhash.h: knowing the same trajectories again, by hash.
 *
 * A copy of a file (under another name, in another step, restored from an
 * archive, collected twice with one seed) must not be trained twice, nor
 * sent to a paid judge twice. The tools know one by 64-bit FNV-1a hashes
 * of what it holds, which go into manifests and marker files
 * (grpo-spool(5)), so they must stay the same from build to build:
 *
 *   trajhash_file_add  a file's trajectories with their group and sequence
 *                      ids, less their advantages: the same for a copy,
 *                      scored again or not, and another for trajectories
 *                      sampled apart with the same tokens (their ids
 *                      differ); grpo-pack's queue-file hash, and
 *                      grpo-score's record of the inputs it scored
 *   trajhash_job_add   trajectories without ids, with their advantages:
 *                      grpo-pack's job of plain inputs is its data
 *
 * Both take trajectory x of group g, the group's size going in before its
 * first, over the fields that make a sample: token counts and tokens,
 * sampler logprobs, policy version, temperature and run. Rewards and
 * reference logprobs are not: they are what scoring adds.
 */
#ifndef GRPO_TRAJHASH_H
#define GRPO_TRAJHASH_H

#include <stddef.h>
#include <stdint.h>

#include "data/traj.h"

#define TRAJHASH_INIT 0xcbf29ce484222325ULL   /* FNV-1a's offset basis */

/* FNV-1a, 64 bits, over n more bytes. */
uint64_t trajhash_bytes(uint64_t h, const void *p, size_t n);
uint64_t trajhash_file_add(uint64_t h, const struct group *g, uint32_t x);
uint64_t trajhash_job_add(uint64_t h, const struct group *g, uint32_t x);
/* trajhash_file_add over every trajectory of n groups, from TRAJHASH_INIT. */
uint64_t trajhash_file(const struct group *gs, uint32_t n);

#endif
