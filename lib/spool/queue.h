/*
 * queue.h: maintenance of whole spool queues: their state, crash recovery
 * and retention (what grpo-spool status, recover and gc do).
 *
 * A spool is a directory of queues (SPOOL/rollouts, SPOOL/scored, ...);
 * a queue is any subdirectory whose name does not begin with '.'. The
 * layout of a queue is in spool.h, the claim protocol in claim.h.
 *
 * Finished: a step is finished when none of its files is waiting or
 * claimed and, in a queue that uses completion markers (any step of it has
 * step_N/DONE, as grpo-pack writes for batches), when it has its own
 * step_N/DONE. Only finished steps are removed, and never a marked queue's
 * newest marked step, whose manifest its producer reads back.
 *
 * Removing a step is atomic for readers: the step directory is first
 * renamed to QUEUE/.tmp/gc.UNIQUE/step_N, checked again there (a producer
 * may have published into it after the first check), and only then
 * deleted (after a last rename to QUEUE/.tmp/del.UNIQUE, so that a
 * half-deleted step never looks unfinished); an unfinished step found there
 * is moved back. A crash leaves a gc.* or del.* directory in .tmp, which
 * the next gc or recover finishes. Archives are written (tmp, fsync, rename) before the step is moved,
 * so a removed step was always archived first when archiving was asked for (steparc.h).
 *
 * Recovery and gc of one spool are serialised by an flock on SPOOL/.lock
 * (queue_lock_spool); consumers and producers never take it.
 */
#ifndef GRPO_QUEUE_H
#define GRPO_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "spool/claim.h"
#include "base/err.h"

#define QUEUE_TMP_AGE_DEFAULT 129600  /* 36 h, as qmail: must exceed any writer's run time */

/* The queue names in a spool, sorted; free with fsys_free_names. 1: no such spool. */
int queue_list(const char *spool, char ***names, size_t *n, struct err *e);

struct queue_claim {
	int rank;
	char name[256];
	struct claim_id id;    /* id.host[0] == '\0': the record could not be read */
	long long age;         /* seconds since claimed or last renewed */
	int stale;             /* claim_check says the holder is gone */
};

struct queue_step {
	int64_t step;
	int ranks;
	long waiting, claimed, done;
	int marker;                  /* step_N/DONE exists */
	struct queue_claim *claims;  /* claimed of them, when asked for; free() */
};

/* Count one step; with claims != 0 also read every claim record. lease as claim_check. */
int queue_step_state(const char *queue, int64_t step, int claims, long lease, time_t now,
		     struct queue_step *s, struct err *e);
/* 1 if any step of the queue has a DONE marker. */
int queue_uses_markers(const char *queue, struct err *e);

/*
 * A whole spool's state, what grpo-spool status shows: every step of every
 * queue with its claims (SPOOL/policy, checkpoints rather than spool files,
 * left out), and the newest step of SPOOL/policy and of SPOOL/rollouts, how
 * far the collector is behind the trainer. A queue or step that cannot be
 * read is left out and its message kept in errors, so that one bad
 * directory does not hide the rest of the spool.
 */
struct queue_status_queue {
	char *name;
	struct queue_step *steps;    /* (n_steps) ascending, with their claims */
	size_t n_steps;
};
struct queue_status {
	struct queue_status_queue *queues;   /* (n_queues) sorted by name */
	size_t n_queues;
	int64_t policy_step, collect_step;   /* -1: none */
	struct err *errors;                  /* (n_errors) what could not be read */
	size_t n_errors;
};
/* 0 (st filled, errors or not), 1 no such spool, -1 the spool cannot be
 * listed or memory ran out; free st with queue_status_free in every case. */
int queue_status(const char *spool, long lease, time_t now, struct queue_status *st, struct err *e);
void queue_status_free(struct queue_status *st);

struct queue_recover_stats {
	long returned;     /* stale claims removed: their files wait again */
	long live;         /* claims left alone */
	long tmp_removed;  /* temporaries older than tmp_age removed */
	long gc_finished;  /* leftovers of an interrupted gc dealt with */
};
/* Return stale claims; remove temporaries at least tmp_age seconds old (0: all of them). */
int queue_recover(const char *queue, long lease, long tmp_age, time_t now,
		  struct queue_recover_stats *st, struct err *e);

struct queue_gc_stats {
	long removed, archived;
	long unfinished;   /* old steps kept because they are not finished */
};
/*
 * Remove the finished steps of a queue beyond the newest keep; with
 * archive_dir, first archive each (steparc.h: archive_dir/NAME-step_N.tar.zst,
 * or the next NAME-step_N.K.tar.zst for what a step archived before did
 * not hold; an archive is never replaced). A step that cannot be archived
 * whole (steparc_write: 1) is kept and the rest still pruned; -1 then
 * names it (the first of them, and how many).
 */
int queue_gc(const char *queue, long keep, const char *archive_dir, struct queue_gc_stats *st,
	     struct err *e);

/*
 * Retire every waiting file of QUEUE/step_N, each rank's: for a consumer
 * that reads a whole step without claiming its files (grpo-step reads
 * batches/step_N so), once the output made from the step is published, so
 * that status shows them done and gc can remove the step. A file claimed
 * by a live consumer is left to it; a stale claim (the caller killed while
 * retiring, say) is returned and the file retired. *retired (may be NULL)
 * counts the files retired. 0, or -1 (what was retired before the error
 * stays so; a second call finishes).
 */
int queue_retire_step(const char *queue, int64_t step, long *retired, struct err *e);

/*
 * Quarantine: move a published file that no consumer can read (corrupt,
 * truncated by a disk fault) out of the way, to
 * QUEUE/.quarantine/step_N/rank_X/NAME, where no reader looks and gc never
 * goes, so that consumers go on with the rest. path is QUEUE/step_N/rank_X/NAME.
 * The file is claimed first, so no consumer can take it meanwhile; a stale
 * claim (its holder died on the file, say) is returned first, as recover
 * would. The name is then free: a producer may publish a good copy.
 * 0 moved (dest filled); 1 a live consumer holds it (nothing done, try
 * again later; who in *holder); 2 moved already (the file is gone from
 * the queue and dest holds it: a call that failed after the move, on a
 * full disk say, run again); -1 error (a consumed file, say; one that
 * fails after the move says so).
 */
int queue_quarantine(const char *path, long lease, time_t now, char *dest, size_t size,
		     struct claim_id *holder, struct err *e);

/* Lock SPOOL/.lock without waiting: 0 locked (*fd holds it), 1 busy, -1 error. */
int queue_lock_spool(const char *spool, int *fd, struct err *e);

#endif
