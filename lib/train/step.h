/*
 * step.h: one optimizer step of grpo-step over the micro-batches of a step.
 *
 * step_read reads the micro-batches of BATCHES/step_N, rank by rank, each
 * rank's files in name order (micro-step order): every rank's, or one
 * rank's for a trainer of several processes (grpo-step --rank). step_train runs them
 * through the model: per epoch, for every micro-batch holding a loss token,
 * forward (logprob and entropy at the tokens' temperatures), loss_mb
 * (loss.h) and backward, the gradients accumulating in m->g; then one
 * optimizer step (optim.h). Micro-batches without a loss token (dummies)
 * are skipped: they contribute exactly zero.
 *
 * One process trains on the micro-batches of every rank of the step, which
 * is the update data parallelism over those ranks makes: the loss weights
 * come from the step's totals over all ranks (loss_totals), so the summed
 * gradient is the step's, however the sequences were packed. Each rank's
 * gradient is accumulated on its own and the ranks' gradients are then
 * summed in rank order, as the processes of a --rank run sum what they
 * exchange (train/gradx.h, through a step_reduce): both give the same
 * bits.
 *
 * The totals are the step's DONE manifest's (step_totals): its sequences
 * and loss_tokens, and its micro-batches less its dummies; step_check
 * holds them against what the micro-batches count. With --mask-truncated
 * (step_mask_truncated), the sequences that finished by length lose their
 * loss tokens, and they and their tokens leave B and N: they train on
 * nothing and the others are weighted as if they had never been sampled.
 * They stay in M (bnpo): a micro-batch is one whatever it holds.
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
#include "data/done.h"
#include "data/traj.h"
#include "model/model.h"
#include "model/model_gpu.h"
#include "train/loss.h"
#include "train/optim.h"

/* The micro-batches of QUEUE/step_N: of every rank (rank -1) or of one
 * (*mbs malloc'ed, free with step_free_batches). A record that is not a
 * micro-batch is refused, naming its file and number. */
int step_read(const char *queue, int64_t step, int rank, struct microbatch **mbs, size_t *n, struct err *e);
void step_free_batches(struct microbatch *mbs, size_t n);

/* The counts of mbs as DONE counts them (loss_totals_add_mb), added into t. */
void step_count(const struct microbatch *mbs, size_t n, struct loss_totals *t);

/* --mask-truncated: clear the loss mask of every sequence whose finish_reason
 * is "length"; the sequences and the loss tokens taken out are added into cut
 * (cut->mbs stays). Returns the number of sequences with no finish_reason,
 * which cannot be told apart and are left whole. */
size_t step_mask_truncated(struct microbatch *mbs, size_t n, struct loss_totals *cut);

/*
 * The step's totals: DONE's sequences, loss_tokens and micro-batches less
 * dummies, less what --mask-truncated cut over every rank (cut, or NULL).
 * Fails when the manifest has no loss_tokens (written by an older
 * grpo-pack): the caller may count the micro-batches instead.
 */
int step_totals(const struct done_manifest *d, const struct loss_totals *cut, struct loss_totals *tot,
                struct err *e);

/* counted (over every rank's micro-batches, before masking) against DONE:
 * -1 naming what differs when they do not agree. */
int step_check(const char *done_path, const struct done_manifest *d, const struct loss_totals *counted,
               struct err *e);

/* What a step did, for the metrics line. */
struct step_result {
	struct loss_stats first;       /* the first epoch's loss parts and statistics (at the step's start) */
	struct loss_stats last;        /* the last epoch's */
	struct optim_result first_opt; /* the first optimizer step's (the first epoch's) */
	struct optim_result opt;       /* the last optimizer step's */
	struct loss_totals totals;
	double tokens;                 /* tokens forwarded (padding included), all epochs */
	double no_sampler_seqs;        /* sequences trained whose sampler gave no logprobs
	                                  (logprobs_missing): their ℓ_old was the policy's
	                                  own at the step's start */
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
/* The tokens of the largest of mbs (n), at least 1: what a model's
 * activations, on the CPU or the GPU, are sized for. */
int step_max_tokens(const struct microbatch *mbs, size_t n);

/* Tell op, made for m's weights, which of them are matrices (the tensors of
 * two dimensions, model_tensors), the weights --weight-decay-on matrices
 * decays (optim_set_decayed). */
int step_decay_matrices(struct optim *op, const struct model *m, struct err *e);

/* mb, when not NULL, is called in the first epoch after each micro-batch's
 * forward, with the trainer's logprobs (T) at the step's start; -1 (e
 * filled) stops the step. progress, when not NULL, is shown after each
 * micro-batch of every epoch (progress.h). */
struct step_observer {
	int (*mb)(void *ctx, const struct microbatch *mb, const float *logprob, struct err *e);
	void *ctx;
	struct progress *progress;
};

/*
 * The gradient exchange of a trainer of several processes: called once per
 * epoch, before the optimizer step, with this process's gradient g (n) and
 * statistics st; writes into sum (n) the sum over every rank of their
 * gradients, in rank order starting from zeros, and makes st the sum of
 * their statistics, in the same order.
 */
struct step_reduce {
	int (*fn)(void *ctx, int epoch, const float *g, float *sum, size_t n, struct loss_stats *st,
	          struct err *e);
	void *ctx;
};

/*
 * tot: the step's totals over every rank (step_totals). obs and red may be
 * NULL. After the step m->g holds the gradient the optimizer took (summed
 * over the ranks, before clipping).
 *
 * gpu, when not NULL, runs the forward, the backward and AdamW on the GPU
 * (grpo-step --device cuda): a model opened for training with packs of at
 * least the largest micro-batch, holding m's weights and op's moments
 * (model_gpu_optim_put). The loss stays on the host, between the forward's
 * logprobs and the backward's dlogprob. Ranks are summed on the host as
 * above (their gradients copied over and the sum put back, m->g pinned for
 * that until model_gpu_close: model_gpu_pin), so m->g holds the gradient
 * only then. After the step m->w, op->m and op->v are the GPU's again,
 * copied back for the checkpoint.
 */
int step_train(struct model *m, struct model_gpu *gpu, struct optim *op, const struct loss_opts *lo,
               const struct loss_totals *tot, int epochs, const struct microbatch *mbs, size_t n,
               const struct step_observer *obs, const struct step_reduce *red, struct step_result *r,
               struct err *e);

#endif
