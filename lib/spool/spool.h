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
 * Layout of a queue (grpo-spool(5), PUBLISHING and CLAIMS):
 *   QUEUE/.tmp/                       temporaries (files being written, claim records)
 *   QUEUE/step_N/                     N decimal, no zero padding; sorted numerically
 *   QUEUE/step_N/DONE                 optional completion marker, written last
 *   QUEUE/step_N/rank_X/NAME          published files; NAME never begins with '.'
 *   QUEUE/step_N/rank_X/.claimed/NAME claim record of NAME while a consumer has it
 *   QUEUE/step_N/rank_X/.done/NAME    the same record, moved here once retired
 *   QUEUE/.quarantine/step_N/rank_X/NAME  a file no consumer could read, moved aside (queue.h)
 * A published file stays where it is until gc removes its step, so its name
 * stays taken and a re-run that publishes it again is dropped (commit
 * returns 1) even after a consumer has taken it. A file is "waiting" when
 * it has neither a claim nor a done record.
 *
 *   struct spool_out o;
 *   spool_open(&o, "spool/rollouts", 3, 0, "g17-3af0.zst", &e);
 *   spool_write(&o, bytes, n, &e);          ... as often as needed
 *   spool_commit(&o, &e);                   or spool_abort(&o) on error
 *
 * To publish several files all or (short of a crash) nothing, write them all
 * first, ending each with spool_finish_write(), which flushes and closes the
 * temporary so no descriptor is held per file; then spool_commit() each.
 * Writing is where a full disk or an I/O error shows, so it then fails
 * before anything is visible.
 *
 * The temporary is a tempfile (base/tempfile.h): an exit or a SIGINT,
 * SIGTERM or SIGHUP before the commit removes it; only a kill -9 or a crash
 * leaves it in QUEUE/.tmp for recover.
 */
#ifndef GRPO_SPOOL_H
#define GRPO_SPOOL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct tempfile;

/* Where it goes is kept as its parts, not as paths of PATH_MAX: a writer
 * of a set holds one a file (grpo-collect -m 1: 20,000 of them). */
struct spool_out {
	struct tempfile *tmp;      /* in QUEUE/.tmp, registered (tempfile.h); NULL once done */
	int no_fsync;              /* for scratch spools on tmpfs */
	const char *queue;         /* the caller's, which outlives o */
	int64_t step;
	int rank;
	char name[NAME_MAX + 1];
};

/* QUEUE/step_N/rank_X/NAME, where o publishes (or published), into out
 * (size bytes, PATH_MAX is ample: spool_open checked it fits); returns out. */
const char *spool_out_path(const struct spool_out *o, char *out, size_t size);

/* QUEUE/step_N/rank_X into out; -1 with "QUEUE.../step_N/rank_X: path too
 * long" in e (which may be NULL) if it does not fit. */
int spool_step_dir(char *out, size_t size, const char *queue, int64_t step, int rank, struct err *e);

int spool_open(struct spool_out *o, const char *queue, int64_t step, int rank,
	       const char *name, struct err *e);
/* Publish o, before its commit, as QUEUE/step_N/rank_X/NAME instead: for
 * a writer whose name comes from what it wrote. 0 or -1 (o unchanged). */
int spool_rename(struct spool_out *o, const char *queue, int64_t step, int rank, const char *name,
		 struct err *e);
int spool_write(struct spool_out *o, const void *p, size_t n, struct err *e);
/* Flush and close the temporary (spool_commit does it when not done): 0, or -1 (tmp removed). */
int spool_finish_write(struct spool_out *o, struct err *e);
/* 0: published; 1: the name existed already (this copy dropped); -1: error (tmp removed). */
int spool_commit(struct spool_out *o, struct err *e);
void spool_abort(struct spool_out *o);

/* 1 when the files at a and b hold the same bytes, 0 when not (or b is
 * absent), -1 on error: whether a copy about to be published matches the
 * one already under its name. */
int spool_same_file(const char *a, const char *b, struct err *e);

/* host.pid.nanoseconds.counter: unique across the hosts and processes of a spool. */
void spool_unique_name(char *out, size_t size);

/*
 * 1 when path names a file in a rank directory, QUEUE/step_N/rank_X/NAME,
 * with QUEUE (its path as written, "." when none) in queue; 0 otherwise,
 * and when QUEUE's last component is a dot name (QUEUE/.quarantine/...).
 * A writer publishing there keeps its temporary in QUEUE/.tmp.
 */
int spool_queue_of(const char *path, char *queue, size_t size);

/*
 * spool_queue_of, and when the path as written names no rank directory
 * ("g.zst" given inside QUEUE/step_N/rank_X, or a link to one), the same
 * test on its directory's real path, with QUEUE then absolute. For a writer
 * that must not replace a published file however its path was spelled.
 */
int spool_queue_of_real(const char *path, char *queue, size_t size);

/* spool_queue_of_real, with file the path that was judged: path as
 * written, or its directory's real path and its name. */
int spool_locate(const char *path, char *queue, size_t qsize, char *file, size_t fsize);

/* "step_N" / "rank_X" with N, X decimal without leading zeros: 0 and the number, or -1. */
int spool_parse_step(const char *name, int64_t *step);
int spool_parse_rank(const char *name, int *rank);

/*
 * The steps of a queue within [from, to] (either -1: unbounded), ascending;
 * the ranks of one step, ascending. Free with free(). A missing queue or
 * step is empty, not an error.
 */
int spool_list_steps(const char *queue, int64_t from, int64_t to, int64_t **steps, size_t *n,
		     struct err *e);
int spool_list_ranks(const char *queue, int64_t step, int **ranks, size_t *n, struct err *e);

/*
 * The directories of queue named like a step or a rank but not as the
 * spool names them (step_01, step_1/rank_00, step_1x): no reader lists
 * them, so their files would wait unseen for ever. Paths relative to
 * queue ("step_01", "step_1/rank_00"), sorted by strcmp; the caller frees
 * them with fsys_free_names. 0 (none when queue does not exist), or -1.
 */
int spool_misnamed(const char *queue, char ***paths, size_t *n, struct err *e);

/* What one rank directory holds; every list sorted by strcmp. */
struct spool_rank_state {
	char **waiting;   /* published, neither claimed nor done */
	size_t nwaiting;
	char **claimed;   /* names with a claim record in .claimed/ */
	size_t nclaimed;
	char **done;      /* names with a done record in .done/ */
	size_t ndone;
};
int spool_rank_state(const char *queue, int64_t step, int rank, struct spool_rank_state *s,
		     struct err *e);
void spool_rank_state_free(struct spool_rank_state *s);

#endif
