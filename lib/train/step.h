/*
 * step.h: one optimizer step of grpo-step over the micro-batches of a step.
 *
 * step_read reads every micro-batch of BATCHES/step_N, rank by rank, each
 * rank's files in name order (micro-step order). step_train runs them
 * through the model: per epoch, for every micro-batch holding a loss token,
 * forward (logprob and entropy at the tokens' temperatures), loss_mb
 * (loss.h) and backward, the gradients accumulating in m->g; then one
 * optimizer step (optim.h). Micro-batches without a loss token (dummies)
 * are skipped: they contribute exactly zero.
 *
 * One process trains on the micro-batches of every rank of the step, which
 * is the update data parallelism over those ranks makes: the loss weights
 * come from the step's totals over all ranks (loss_totals), so the summed
 * gradient is the step's, however the sequences were packed.
 *
 * The ratio's ℓ_old: the sampler's inference_logprobs; with a TIS cap, the
 * policy's own logprobs at the step's start (from the first epoch's
 * forward, detached), and the sampler's become ℓ_behav of the TIS weight.
 * With several epochs ℓ_old stays what it was at the step's start.
 */
#ifndef GRPO_STEP_H
#define GRPO_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/progress.h"
#include "data/traj.h"
#include "model/model.h"
#include "train/loss.h"
#include "train/optim.h"

/* All micro-batches of QUEUE/step_N (*mbs malloc'ed, free with step_free_batches). */
int step_read(const char *queue, int64_t step, struct microbatch **mbs, size_t *n, struct err *e);
void step_free_batches(struct microbatch *mbs, size_t n);

/* What a step did, for the metrics line. */
struct step_result {
	struct loss_stats first;       /* the first epoch's loss parts and statistics (at the step's start) */
	struct loss_stats last;        /* the last epoch's */
	struct optim_result opt;       /* the last optimizer step's */
	struct loss_totals totals;
	double tokens;                 /* tokens forwarded (padding included), all epochs */
	double fwd_s, bwd_s, opt_s;    /* seconds */
	int epochs;
};

/*
 * Train: epochs optimizer steps over mbs (n). Needs m's gradients and
 * activations allocated for the largest micro-batch (step_prepare).
 * Fails, with m's weights unchanged since the last completed optimizer
 * step, on a loss error (β > 0 without reference logprobs) or a gradient
 * that is not finite.
 */
int step_prepare(struct model *m, const struct microbatch *mbs, size_t n, struct err *e);

/* mb, when not NULL, is called in the first epoch after each micro-batch's
 * forward, with the trainer's logprobs (T) at the step's start; -1 (e
 * filled) stops the step. progress, when not NULL, is shown after each
 * micro-batch of every epoch (progress.h). */
struct step_observer {
	int (*mb)(void *ctx, const struct microbatch *mb, const float *logprob, struct err *e);
	void *ctx;
	struct progress *progress;
};

/* obs may be NULL. */
int step_train(struct model *m, struct optim *op, const struct loss_opts *lo, int epochs,
               const struct microbatch *mbs, size_t n, const struct step_observer *obs,
               struct step_result *r, struct err *e);

#endif
