/*
 * gradx.h: the gradient exchange of a trainer of several processes
 * (grpo-step --rank X), an all-reduce through the file system.
 *
 * Each process trains on its rank's micro-batches of step N and, before
 * every optimizer step (one per epoch E), publishes its gradient with its
 * loss statistics and its counts (for DONE's check) atomically as
 *
 *   POLICY/.grad/step_N/eE.rank_X
 *
 * then waits for every rank's file (the rank count is DONE's), and sums
 * them from zeros in rank order, its own from memory: every process gets
 * the same bits, which are also those of one process training every rank
 * (train/step.h sums that way too), and takes the identical optimizer
 * step. A rank other than 0 then publishes eE.read_X; rank 0, which alone
 * publishes POLICY/step_N, waits for those of the last epoch after
 * publishing and removes the step's directory, and those of earlier steps
 * that a rank 0 killed after publishing left. A re-run of a rank replaces
 * its file (the same bits for the same start).
 *
 * A peer that never publishes (a crash) is waited for timeout seconds, and
 * then the step fails naming the rank; nothing is published.
 *
 * The ranks must train one loss with one optimizer: a rank given another
 * --lr or --loss-agg would add a gradient of another loss to the sum, and
 * then take another optimizer step than rank 0 publishes. So each file
 * carries a hash of the options that shape the gradient and the update
 * (gradx_opts_hash), and a peer's file with another is refused, naming
 * the rank.
 *
 * The file, version 3: every number little-endian whatever the host, so
 * that processes on hosts of either byte order (sharing the file system)
 * can exchange, and a file's bytes say the same to every reader.
 *
 *   offset  size  field
 *        0     8  magic "GRPOGRD1" (the same in every version)
 *        8     4  u32 version, 3
 *       12     4  u32 rank X
 *       16     8  i64 step N
 *       24     4  u32 epoch E
 *       28     4  u32 statistics in the payload, GRADX_NSTAT
 *       32     8  u64 n, the gradient's elements (the model's weights)
 *       40     8  u64 the options' hash, gradx_opts_hash
 *       48     8  u64 64-bit FNV-1a of the payload (every byte after the header)
 *       56        payload: the statistics as IEEE binary64, then the
 *                 gradient as n IEEE binary32
 *
 * The statistics are the counts (sequences, loss tokens, micro-batches
 * that are not dummies) and then struct loss_stats's fields in their
 * declared order. The reader refuses, naming the file and what is wrong,
 * a file with a bad magic, another version, too few or too many bytes,
 * another rank, step, epoch, options hash or count than it waits for, or a
 * payload whose checksum differs; every header field is checked against
 * what is expected and the payload against the checksum, so any one
 * changed byte is refused. Versions 1 and 2 (until this one; 1 in the
 * host's byte order, 2 without the options' hash) had the same magic and
 * version field: they are refused as another version. The files live for
 * one step, so no reader of an old one is kept.
 */
#ifndef GRPO_GRADX_H
#define GRPO_GRADX_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "data/done.h"
#include "train/loss.h"
#include "train/optim.h"

#define GRADX_MAGIC "GRPOGRD1"
#define GRADX_VERSION 3
#define GRADX_HEAD 56                   /* bytes of the header */
#define GRADX_NSTAT 20                  /* 3 counts + the 17 fields of struct loss_stats */

struct gradx {
	const char *queue;                  /* the policy queue */
	int64_t step;
	int rank, ranks;
	double timeout_s;                   /* the longest wait for a peer */
	const volatile sig_atomic_t *stop;  /* set by a signal: stop waiting (may be NULL) */
	struct loss_totals local;           /* this rank's counts, before --mask-truncated */
	const struct done_manifest *done;   /* the sum of the ranks' counts is checked against it (may be NULL) */
	const char *done_path;              /* for messages */
	uint64_t opts;                      /* gradx_opts_hash of this process's options */
};

/* What a gradient file says of itself, and what its reader waits for. */
struct gradx_head {
	int rank, epoch;
	int64_t step;
	uint64_t n;                         /* elements of the gradient */
	uint64_t opts;                      /* gradx_opts_hash */
};

/*
 * A hash of what shapes a rank's gradient and its optimizer step: the loss
 * options (max_len only where dr_grpo reads it), the optimizer's, the
 * epochs and --mask-truncated. Of their text, with enums by name, so that
 * it is the same on every host and build that means the same. 0 when
 * memory ran out writing that text (no text hashes to 0 in practice).
 */
uint64_t gradx_opts_hash(const struct loss_opts *lo, const struct optim_opts *oo, int epochs,
                         int mask_truncated);

/* A step_reduce's function (train/step.h); ctx is a struct gradx. */
int gradx_reduce(void *ctx, int epoch, const float *g, float *sum, size_t n, struct loss_stats *st,
                 struct err *e);

/* Rank 0, once POLICY/step_N is published: wait for the other ranks to have
 * read the last epoch's gradients (epochs in all), then remove
 * POLICY/.grad/step_N, and the directories of earlier steps. */
int gradx_finish(const struct gradx *x, int epochs, struct err *e);

/* The bytes of one gradient file (h, the counts, st and g (h->n)), appended
 * to b; -1 only when memory runs out. */
int gradx_encode(struct buf *b, const struct gradx_head *h, const struct loss_totals *counts,
                 const struct loss_stats *st, const float *g);

/*
 * Check the len bytes of data, read from path (for messages), against want,
 * then fill counts and st and ADD (+=) the gradient into acc (want->n),
 * which is left untouched unless every check passed. -1 naming path and
 * what is wrong.
 */
int gradx_decode(const unsigned char *data, size_t len, const char *path, const struct gradx_head *want,
                 struct loss_totals *counts, struct loss_stats *st, float *acc, struct err *e);

#endif
