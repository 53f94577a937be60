/*
 * scoreio.h: grpo-score's inputs and outputs, so the tool keeps only its
 * options and loops.
 *
 *   scoreio_read      every group of a spool stream, records of one group
 *                     merged (scorer_merge), then each member that is the
 *                     same sample as one before it in its group dropped
 *                     and counted (a group read twice: its copies would
 *                     be scored as members, data/groupset.h); anything but
 *                     a group is an error
 *   scoreio_place     where an input's output goes: the input's own
 *                     step_N/rank_X/NAME when its path has that shape, else
 *                     the step of its first trajectory's policy_version,
 *                     rank 0 and a name made from its base name (standard
 *                     input, path NULL: "stdin") and a hash of the ids and
 *                     tokens it holds, "BASE-HASH.zst", the same for the
 *                     same input and for it alone, so a re-run's copy is
 *                     dropped and another input of the same name is not
 *   scoreio_publish   the groups kept, as one spool file, published whole
 *                     (spool.h): 0 published, 1 the name existed (a re-run)
 *   scoreio_seen_add  remember the run's recent group ids, each with the
 *                     policy version of its first trajectory: 1 when seen
 *                     among the last SCOREIO_SEEN_WINDOW groups (a group
 *                     split across inputs)
 *
 * Standard input, which may be longer than memory and come from a producer
 * that is still running, is read as a stream instead (unless a score needs
 * the whole input at once, as --advantage batch does):
 *
 *   scoreio_stream_*  one group at a time: the records of a group that
 *                     come one after another are merged into one, and a
 *                     group is handed out when the next record (another
 *                     group's) or the end of the input shows it complete;
 *                     a group whose records come apart is handed out in
 *                     parts, each a group of its own; copies are dropped
 *                     and counted as scoreio_read drops them, within what
 *                     is merged; scoreio_stream_ready_next hands out only
 *                     what the input already holds, so that the groups a
 *                     producer has written are scored together (grpo-score
 *                     --reward-jobs) and one it has not finished is not
 *                     waited for
 *   scoreio_pub_*     the groups kept, written into QUEUE/.tmp as they are
 *                     scored and published at the end as one file, named
 *                     as scoreio_place names standard input (so the same
 *                     input gets the same name as when read whole); on
 *                     error nothing is published
 *
 * Memory then holds one group (and the compressor's window), or the batch
 * read ahead that the caller bounds, whatever the input's length.
 */
#ifndef GRPO_SCOREIO_H
#define GRPO_SCOREIO_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/sfile.h"
#include "data/traj.h"
#include "spool/spool.h"

/* *copies: the members dropped as copies. */
int scoreio_read(int fd, const char *name, struct group **gs, uint32_t *n, uint64_t *copies, struct err *e);
void scoreio_place(const char *path, const struct group *gs, uint32_t n, int64_t *step, int *rank, char *name,
		   size_t size);
int scoreio_write(struct sfile_writer *w, const struct group *gs, uint32_t n, const uint8_t *keep, struct err *e);
int scoreio_publish(const char *queue, int64_t step, int rank, const char *name, const struct group *gs,
		    uint32_t n, const uint8_t *keep, struct err *e);

/* FNV-1a of a group's ids and its sequences' tokens, continuing h: the
 * hash that names standard input's output, so that a re-run of the same
 * input finds its output published, and another input that only shares
 * its ids (a second collector numbering from 0 too) does not. */
uint64_t scoreio_hash(uint64_t h, const struct group *g);
#define SCOREIO_HASH_INIT 1469598103934665603ull

struct scoreio_stream {
	struct sfile_reader rd;
	struct group next;        /* read, not yet handed out */
	int has_next, at_end;
	uint64_t records;         /* read so far */
	uint64_t copies;          /* members dropped as copies so far */
};
int scoreio_stream_open(struct scoreio_stream *s, int fd, const char *name, struct err *e);
/* The next group into *g (the caller frees it): 1, 0 at the end, -1. */
int scoreio_stream_next(struct scoreio_stream *s, struct group *g, struct err *e);
/* The same, but only from what the input already holds (its buffers, or a
 * descriptor poll(2) says is readable): 2, and nothing lost, when the
 * next group would have to be waited for. */
int scoreio_stream_ready_next(struct scoreio_stream *s, struct group *g, struct err *e);
void scoreio_stream_close(struct scoreio_stream *s);

struct scoreio_pub {
	struct spool_out so;
	struct sfile_writer w;
	int writer_open;
	const char *queue;
	uint64_t hash;
	uint64_t samples;         /* trajhash_file of the groups so far */
	int64_t step;             /* of the first group's first trajectory */
	uint64_t groups;
	char name[64];
};
int scoreio_pub_open(struct scoreio_pub *p, const char *queue, struct err *e);
/* One scored group: written when keep, counted in the name either way. */
int scoreio_pub_group(struct scoreio_pub *p, const struct group *g, int keep, struct err *e);
/* The name it gets, once every group is in: stdin-HASH.zst. */
const char *scoreio_pub_name(struct scoreio_pub *p);
/* Publish under QUEUE/step_N/rank_0/NAME (scoreio_pub_name), NAME written
 * into name (size bytes): 0 published, 1 the name existed (a re-run), -1. */
int scoreio_pub_commit(struct scoreio_pub *p, char *name, size_t size, struct err *e);
/* Publish nothing; after an error, or instead of commit. */
void scoreio_pub_abort(struct scoreio_pub *p);

/*
 * What was scored into a queue, so that a copy of an input (under another
 * name or in another step, restored from an archive, collected twice with
 * one seed) is not scored again, which would call a paid judge twice:
 * QUEUE/.scored/HASH, HASH the input's trajhash_file (data/trajhash.h) as
 * 16 hexadecimal digits, holding the name its output was published under,
 * "step_N/rank_X/NAME" in the queue, and a newline. Written once the
 * output is published (a crash between the two leaves the input to be
 * scored again, and its output found published); the first record of a
 * hash stays. gc leaves the records, so a copy of a removed step's input
 * is known too.
 *
 *   scoreio_known     1 and the name in file (size bytes) when the queue
 *                     records hash, 0 when not, -1 on an error or a
 *                     record that is not one line of a name (it is named)
 *   scoreio_remember  record hash as published as file; 0, or -1
 *
 * Two scorers of one queue that take two copies at once would both find
 * no record and both judge. So an input is judged under a lock of its
 * hash, QUEUE/.scored/HASH.lock, taken before scoreio_known and held until
 * its record is written: the second waits, then finds the record.
 *
 *   scoreio_judging   take the lock: fd, or -1; with wait 0, -2 when
 *                     another process holds it, else wait for it
 *   scoreio_judged    let it go; with recorded set (the record written or
 *                     found) its file is removed too. Only then: a lock
 *                     file removed while the hash has no record could let
 *                     two scorers hold it at once, one of them on the
 *                     removed file. A failed judging leaves it for the
 *                     next scorer of the hash.
 */
int scoreio_known(const char *queue, uint64_t hash, char *file, size_t size, struct err *e);
int scoreio_remember(const char *queue, uint64_t hash, const char *file, struct err *e);
int scoreio_judging(const char *queue, uint64_t hash, int wait, struct err *e);
void scoreio_judged(const char *queue, uint64_t hash, int fd, int recorded);
/* Where the record of hash is: QUEUE/.scored/HASH into path (size bytes). */
int scoreio_record_path(char *path, size_t size, const char *queue, uint64_t hash, struct err *e);

/*
 * The group ids of the run's recent groups: the last `window` added, each
 * with the policy version of its first trajectory, in a ring in the order
 * added (a group that comes again takes its new place) with an index of
 * open addressing into it. Memory stays at most 16 bytes a group of the
 * window (16 MiB for the default) however long the run.
 */
#define SCOREIO_SEEN_WINDOW ((size_t)1 << 20)
struct scoreio_seen {
	size_t window;       /* groups remembered; 0: SCOREIO_SEEN_WINDOW; set before the first add */
	uint64_t *ring;      /* (ring_cap) keys, entry added % window the newest */
	uint32_t *slot;      /* (cap) 1 + the ring entry of a key; 0: empty */
	size_t ring_cap, cap;
	size_t n;            /* keys in the index: distinct groups of the window */
	uint64_t added;      /* groups added, ever */
};
/* 1: the group came among the window's groups added before it; 0: it did
 * not (now added); -1: out of memory (not added). */
int scoreio_seen_add(struct scoreio_seen *s, const struct group *g);
void scoreio_seen_free(struct scoreio_seen *s);

#endif
