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
 * publishing and removes the step's directory. A re-run of a rank replaces
 * its file (the same bits for the same start).
 *
 * A peer that never publishes (a crash) is waited for timeout seconds, and
 * then the step fails naming the rank; nothing is published.
 *
 * File: "GRPOGRD1", u32 version 1, u32 rank, u64 step, u32 epoch, u32 0,
 * u64 n, the counts (3 doubles: sequences, loss tokens, micro-batches that
 * are not dummies), struct loss_stats as doubles, n floats, then a 64-bit
 * FNV-1a checksum of everything before it; all in the host's byte order,
 * since the processes of one run share one build.
 */
#ifndef GRPO_GRADX_H
#define GRPO_GRADX_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/done.h"
#include "train/loss.h"

struct gradx {
	const char *queue;                  /* the policy queue */
	int64_t step;
	int rank, ranks;
	double timeout_s;                   /* the longest wait for a peer */
	const volatile sig_atomic_t *stop;  /* set by a signal: stop waiting (may be NULL) */
	struct loss_totals local;           /* this rank's counts, before --mask-truncated */
	const struct done_manifest *done;   /* the sum of the ranks' counts is checked against it */
	const char *done_path;              /* for messages */
};

/* A step_reduce's function (train/step.h); ctx is a struct gradx. */
int gradx_reduce(void *ctx, int epoch, const float *g, float *sum, size_t n, struct loss_stats *st,
                 struct err *e);

/* Rank 0, once POLICY/step_N is published: wait for the other ranks to have
 * read the last epoch's gradients (epochs in all), then remove
 * POLICY/.grad/step_N. */
int gradx_finish(const struct gradx *x, int epochs, struct err *e);

#endif
