/*
 * watch.h: the consumer loop every tool that reads a spool queue shares,
 * so that each tool's --watch and --poll behave the same.
 *
 *   struct watch_opt o = WATCH_OPT_INIT;     o.follow = 1 for --watch
 *   struct watch *w = watch_open("spool/scored", &o, &e);
 *   struct claim *c;
 *   while ((r = watch_next(w, &c, &e)) > 0) {
 *           if (consume(c->path, &e) == 0 && claim_retire(c, &e) >= 0)
 *                   continue;                   output published, input retired
 *           warn(e); claim_release(c, NULL);    waiting again for a later pass
 *   }
 *   watch_close(w);                             r: 0 finished or stopped, -1 error
 *
 * Order: waiting files are handed out by step (numerically), then rank,
 * then name (strcmp), among the files known at the time; files that arrive
 * later join in that order. A file is handed out claimed (claim.h): any
 * number of processes may run this loop over one queue and each file goes
 * to one of them.
 *
 * Without follow, watch_next hands out what one scan found waiting and then
 * returns 0. With follow it then waits:
 *  - inotify: a watch on the queue, on each step_N and rank_X directory
 *    (for IN_MOVED_TO and IN_CREATE: rename- and link-published files, new
 *    directories) and on each rank_X/.claimed (IN_DELETE: a released or
 *    recovered claim), of the newest WATCH_STEPS steps only: as a newer
 *    step appears, the watches of the step it leaves behind are removed,
 *    so that a queue that keeps every step (no gc) does not pile up
 *    watches, 1 + 2 x ranks a step, until the limit turns the loop to
 *    polling. A directory is watched before it is listed, so a file
 *    published meanwhile shows up in the listing or as an event.
 *    IN_Q_OVERFLOW, and every `rescan` seconds anyway, the whole queue is
 *    listed again, watches re-added; a file that comes into an older step
 *    is found by that listing.
 *  - polling: the queue is listed every `poll` seconds. Chosen when asked
 *    for, when the queue is on a remote file system (fsys_is_remote: NFS,
 *    SMB, Lustre, ...; inotify sees no other client's changes there), when
 *    inotify is unavailable, or when the watch limit
 *    (fs.inotify.max_user_watches) is reached.
 * A file released by this process (claim_release) is not handed out again
 * until the next periodic rescan; without follow, not in this run.
 *
 * Leases: the loop renews the claims it hands out, the one in hand and
 * every one taken with watch_detach until its holder retires or releases
 * it, every lease/3 seconds (o.lease, or CLAIM_LEASE_DEFAULT): whenever
 * watch_next is called and while it waits, waking for it if need be. A
 * tool that holds claims for longer than that outside watch_next (running
 * a command, packing a step) calls watch_renew at least that often there;
 * it does nothing until a renewal is due, so calling it often is cheap.
 * Otherwise recovery on another host, which judges claims by their lease,
 * returns the files while they are being consumed (claim.h).
 *
 * With o.signals, SIGINT and SIGTERM are blocked except while watch_next
 * waits, and either makes watch_next return 0 at its next call, so the file
 * in hand is finished first and nothing is left claimed. watch_stopped()
 * says which signal it was. watch_close() releases a claim still held and
 * restores the signal mask and handlers.
 *
 * Test hook: GRPO_WATCH_TEST_OVERFLOW=1 in the environment (or
 * watch_test_overflow()) discards every inotify event read and handles it
 * as IN_Q_OVERFLOW, so only the overflow rescan can find new files.
 */
#ifndef GRPO_WATCH_H
#define GRPO_WATCH_H

#include <stdint.h>

#include "spool/claim.h"
#include "base/buf.h"
#include "base/err.h"

#define WATCH_RESCAN_DEFAULT 300.0  /* seconds between full rescans with inotify */
#define WATCH_POLL_DEFAULT 5.0      /* seconds between scans when polling is chosen for us */
#define WATCH_STEPS 64              /* the newest steps watched with inotify */

struct watch_opt {
	int64_t from, to;   /* steps to consume; -1: unbounded */
	int follow;         /* 0: what is waiting now, then stop; 1: wait for more */
	double poll;        /* > 0: poll every this many seconds instead of inotify */
	double rescan;      /* > 0: full rescan interval with inotify */
	long lease;         /* lease recorded in claims; <= 0: CLAIM_LEASE_DEFAULT */
	int signals;        /* stop cleanly on SIGINT and SIGTERM */
};
#define WATCH_OPT_INIT { -1, -1, 0, 0.0, 0.0, 0, 0 }

struct watch_stats {
	long scans;        /* full listings of the queue */
	long overflows;    /* IN_Q_OVERFLOW (or the test hook) */
	long events;       /* inotify events handled */
	long claimed;      /* files handed out */
	long watches;      /* inotify watches held now */
	int polling;       /* 1 when polling rather than inotify */
	double interval;   /* the poll or rescan interval in effect, seconds */
};

struct watch;

struct watch *watch_open(const char *queue, const struct watch_opt *o, struct err *e);
/* 1: *c is claimed (valid until the next watch_next or watch_close);
 * 0: nothing more (without follow) or stopped by a signal; -1: error. */
int watch_next(struct watch *w, struct claim **c, struct err *e);
int watch_stopped(const struct watch *w);    /* the signal that stopped it, or 0 */
/* With follow: make watch_next return 0 once `seconds` from now pass with
 * nothing handed out (<= 0: no deadline); watch_timed_out() then says so.
 * Each call sets a new deadline. */
void watch_deadline(struct watch *w, double seconds);
int watch_timed_out(const struct watch *w);
/* Take the claim watch_next just handed out into *c, to hold past the next
 * watch_next (a consumer that publishes one output from several inputs);
 * the caller retires or releases it. The watch keeps renewing it (by its
 * record's path and identity, so *c may move) until it is given up. */
void watch_detach(struct watch *w, struct claim *c);
/* Renew, if a renewal is due, the claim in hand and every detached one
 * still held: 0, or -1 when one could not be renewed (the others are
 * renewed at the next due time). */
int watch_renew(struct watch *w, struct err *e);
/* Seconds until the next renewal is due (0: now); for a caller's timer. */
double watch_renew_in(const struct watch *w);
void watch_stats(const struct watch *w, struct watch_stats *s);
/* The statistics as a consumer's -v line tells them, appended to out: "3
 * files, 1 scan, 2 events, 0 overflows, inotify, rescan every 5s" (follow)
 * or "..., one pass", and ", stopped by signal" where one stopped it. */
int watch_summary(const struct watch *w, int follow, struct buf *out);
void watch_test_overflow(struct watch *w);   /* handle every event read as an overflow */
void watch_close(struct watch *w);

#endif
