/*
 * spool.h: publishing files into a spool queue.
 *
 * A queue is a directory (SPOOL/rollouts, SPOOL/scored, ...) holding
 * step_N/rank_X/ directories of published files. A file is written under a
 * unique name in QUEUE/.tmp/, flushed, and renamed into place under its final
 * name, which the caller derives from the input so that a re-run after a
 * crash produces the same name. The rename never replaces: if the name is
 * already published, the new copy is dropped and spool_commit() returns 1.
 * Readers ignore names that begin with '.'.
 *
 *   struct spool_out o;
 *   spool_open(&o, "spool/rollouts", 3, 0, "g17-3af0.zst", &e);
 *   spool_write(&o, bytes, n, &e);          ... as often as needed
 *   spool_commit(&o, &e);                   or spool_abort(&o) on error
 */
#ifndef GRPO_SPOOL_H
#define GRPO_SPOOL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct spool_out {
	int fd;
	int no_fsync;              /* for scratch spools on tmpfs */
	char tmp_path[PATH_MAX];
	char dir[PATH_MAX];        /* QUEUE/step_N/rank_X */
	char final_path[PATH_MAX];
};

/* QUEUE/step_N/rank_X into out; -1 if it does not fit. */
int spool_step_dir(char *out, size_t size, const char *queue, int64_t step, int rank);

int spool_open(struct spool_out *o, const char *queue, int64_t step, int rank,
	       const char *name, struct err *e);
int spool_write(struct spool_out *o, const void *p, size_t n, struct err *e);
/* 0: published; 1: the name existed already (this copy dropped); -1: error (tmp removed). */
int spool_commit(struct spool_out *o, struct err *e);
void spool_abort(struct spool_out *o);

#endif
