/*
 * scoreio.h: grpo-score's inputs and outputs, so the tool keeps only its
 * options and loops.
 *
 *   scoreio_read      every group of a spool stream, records of one group
 *                     merged (scorer_merge); anything but a group is an error
 *   scoreio_place     where an input's output goes: the input's own
 *                     step_N/rank_X/NAME when its path has that shape, else
 *                     the step of its first trajectory's policy_version,
 *                     rank 0 and its base name; standard input (path NULL)
 *                     a name made from the ids it holds, "stdin-HASH.zst",
 *                     the same for the same input, so a re-run's copy is
 *                     dropped
 *   scoreio_publish   the groups kept, as one spool file, published whole
 *                     (spool.h): 0 published, 1 the name existed (a re-run)
 *   scoreio_seen_add  remember a run's group ids: 1 when seen before (a
 *                     group split across inputs)
 */
#ifndef GRPO_SCOREIO_H
#define GRPO_SCOREIO_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/sfile.h"
#include "data/traj.h"

int scoreio_read(int fd, const char *name, struct group **gs, uint32_t *n, struct err *e);
void scoreio_place(const char *path, const struct group *gs, uint32_t n, int64_t *step, int *rank, char *name,
		   size_t size);
int scoreio_write(struct sfile_writer *w, const struct group *gs, uint32_t n, const uint8_t *keep, struct err *e);
int scoreio_publish(const char *queue, int64_t step, int rank, const char *name, const struct group *gs,
		    uint32_t n, const uint8_t *keep, struct err *e);

struct scoreio_seen {
	uint64_t *key;    /* (cap) open addressing, 0 = empty */
	size_t n, cap;
};
/* 1: seen before; 0: added; -1: out of memory (not added). */
int scoreio_seen_add(struct scoreio_seen *s, const struct group *g);
void scoreio_seen_free(struct scoreio_seen *s);

#endif
