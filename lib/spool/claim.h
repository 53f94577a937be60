/*
 * claim.h: the right to consume one published spool file, taken by an
 * atomic rename and given up by retiring or releasing it.
 *
 * A consumer claims QUEUE/step_N/rank_X/NAME by writing a claim record
 * (who: host, pid, process start time, claim time, lease) to a unique name
 * in QUEUE/.tmp/, holding an flock(2) on it, and renaming it, never
 * replacing, to rank_X/.claimed/NAME. Winning that rename is the claim;
 * "exists" means another consumer has the file. The published file itself
 * does not move, so its name stays taken for the producer (see spool.h).
 *
 *   claim_take    published -> claimed   (0 claimed, 1 not available)
 *   claim_retire  claimed -> done        the record moves to rank_X/.done/NAME;
 *                                        call it only after the output made
 *                                        from the file is published
 *   claim_release claimed -> waiting     the record is removed (on error)
 *   claim_let_go                         release; if that fails, let go of the
 *                                        lock all the same: the record left is
 *                                        stale, and recovery returns the file
 *   claim_renew                          refresh the lease (record mtime)
 *   claim_renew_record                   the same, given only the record's
 *                                        path and identity (c->dev, c->ino)
 *
 * The lock lives as long as the claimant: on this host a claim whose lock
 * is free is stale (the holder died, kill -9 included); a record written on
 * another host is stale once its mtime is older than its lease. claim_check
 * makes that decision for recovery (grpo-spool recover), which removes the
 * stale record, so the file is waiting again. A holder renews its lease
 * well within it (watch.h does it every lease/3 for the claims it handed
 * out), or another host's recovery returns the file while it is still
 * being consumed.
 *
 * The lock belongs to the open file description of c->fd (close-on-exec):
 * a holder that runs another program to consume the file may let it
 * inherit the descriptor, and the claim then lives until both have exited,
 * so that recovery never returns a file whose consumer is still running
 * (grpo-spool consume does this).
 *
 * Test hook: GRPO_CLAIM_HOST in the environment replaces the host name that
 * claims record and that claim_check compares, so that a test can judge a
 * claim as another host would (by its lease).
 *
 * Claims and retirements are not fsync'ed: after a power cut a claim or a
 * done record may be missing, and the file is then consumed again; the
 * consumer's output has a deterministic name, so publishing it again is
 * dropped, and nothing is duplicated. A consumer whose output is not named
 * by its input (grpo-pack: a new step) flushes the retirement instead
 * (claim_flush_done) before anything that stops naming the file, its next
 * manifest, is written; grpo-spool consume, which cannot know what its
 * command wrote, flushes each retirement as it makes it. A file is taken at most once at a time, and once
 * done it is never handed out again.
 *
 * Removing a record from .claimed wakes the other consumers' watches
 * (IN_DELETE: the file is waiting again), so a record that must go without
 * making its file wait again (a claim that found the file done already) is
 * first renamed into QUEUE/.tmp and removed there.
 */
#ifndef GRPO_CLAIM_H
#define GRPO_CLAIM_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "base/err.h"

#define CLAIM_LEASE_DEFAULT 3600   /* seconds; longer than a file takes to consume */

struct claim_id {
	char host[256];
	long pid;
	unsigned long long pstart;  /* process start, clock ticks since boot (/proc) */
	long long since;            /* claim time, Unix seconds */
	long lease;                 /* seconds the holder may go without renewing */
};

enum { CLAIM_NONE, CLAIM_HELD, CLAIM_RETIRED, CLAIM_RELEASED };

struct claim {
	int64_t step;
	int rank;
	int state;                   /* CLAIM_* */
	int fd;                      /* the locked claim record while held, else -1 */
	unsigned long long dev, ino; /* the claim record's identity, once taken */
	char name[256];
	char path[PATH_MAX];         /* QUEUE/step_N/rank_X/NAME: the file to read */
	char claim_path[PATH_MAX];   /* QUEUE/step_N/rank_X/.claimed/NAME */
	size_t queue_len, dir_len;   /* path's prefixes QUEUE and QUEUE/step_N/rank_X */
};

/* 0: claimed (c->state CLAIM_HELD); 1: not available (absent, claimed by
 * another, or done); -1: error. lease <= 0 means CLAIM_LEASE_DEFAULT. */
int claim_take(struct claim *c, const char *queue, int64_t step, int rank, const char *name,
	       long lease, struct err *e);
/* 0: retired; 1: the claim had been taken away as stale meanwhile (the new
 * holder will retire it; nothing to do); -1: error, still held. */
int claim_retire(struct claim *c, struct err *e);
/* Make the retirements of c's rank directory durable: its .done directory
 * flushed (once for every file retired there). 0 or -1. */
int claim_flush_done(const struct claim *c, struct err *e);
/* 1 when a and b are claims on files of one rank directory. */
int claim_same_rank(const struct claim *a, const struct claim *b);
/* 0: the file is waiting again (or the claim had been taken away); -1: error, still held. */
int claim_release(struct claim *c, struct err *e);
/* For a caller past reporting (an error path, a close): claim_release, and on
 * failure the descriptor closed and the lock with it, so that a long-running
 * process neither keeps a file it gave up claimed live nor leaks descriptors.
 * 0: released; -1: said, and the record left is stale. */
int claim_let_go(struct claim *c, struct err *e);
int claim_renew(struct claim *c, struct err *e);
/* Renew the claim whose record is at claim_path if that is still the file
 * (dev, ino): 0 renewed, 1 no longer held (retired, released, or returned
 * as stale), -1 error. For a holder that keeps only these (lib/watch). */
int claim_renew_record(const char *claim_path, unsigned long long dev, unsigned long long ino,
		       struct err *e);

/*
 * 1 when fd is the record of the claim on the published file at path
 * (QUEUE/step_N/rank_X/NAME, however spelled), so that whoever holds fd
 * holds that file's claim: a command that grpo-spool consume runs on the
 * file it claimed inherits the record as GRPO_CLAIM_FD. 0 otherwise.
 */
int claim_held_by(const char *path, int fd);

/* This process's identity, as a claim would record it. */
void claim_self(struct claim_id *id, long lease);
/* A record's text, "host=H pid=P pstart=S time=T lease=L\n", into out
 * (NUL-terminated): its length, or -1 when it does not fit or the host is
 * empty or holds white space (the parser would read it otherwise). */
int claim_format_id(const struct claim_id *id, char *out, size_t size);
/* Parse a record's text; -1 if it is not one. */
int claim_parse_id(const char *text, struct claim_id *id);

/*
 * Is the claim record at path stale? lease > 0 overrides the record's own
 * lease for holders on other hosts. Fills id (host[0] == '\0' when the
 * record is unreadable, which is judged by its age) and *age (seconds since
 * the record was last renewed). 0: live; 1: stale; 2: gone; -1: error.
 */
int claim_check(const char *path, long lease, time_t now, struct claim_id *id, long long *age,
		struct err *e);

#endif
