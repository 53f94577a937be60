/*
 * loss.h: the GRPO loss of one optimizer step, one micro-batch at a time.
 *
 * One implementation with options (../shared/reference/grpo-algorithms.md,
 * written out in grpo-step(1)). Per loss token t of sequence i, with ℓ the
 * policy's logprob (at the token's temperature), ℓ_old the ratio's
 * denominator, A the advantage:
 *
 *   ratio     r = exp(ℓ − ℓ_old)                              (--ratio token)
 *             r = s_i = exp(Σ_t m(ℓ − ℓ_old) / n_i)           (--ratio sequence, GSPO;
 *                                                              the gradient flows through the mean)
 *   policy    p = −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A)      (PPO clip)
 *             p = min(p, −c·A)  when A < 0                    (dual clip c, if c > 0)
 *             p = −sg(clip(r, 1−ε_low, 1+ε_high))·A·ℓ          (CISPO instead of PPO)
 *             p = p · sg(min(exp(ℓ_old − ℓ_behav), tis_cap))   (truncated IS, if tis_cap > 0)
 *   KL        Δ = ℓ − ℓ_ref;  k1 = Δ,  k2 = ½Δ²,  k3 = exp(−Δ) + Δ − 1
 *   token     L_t = p + β·k − c_H·H_t                          (H_t the entropy)
 *
 * and the step's loss is Σ_t w_t·L_t over every loss token of the step, with
 * the weights of the aggregation (--loss-agg):
 *
 *   grpo      w_t = 1 / (B · n_i)      B sequences in the step, n_i loss tokens of t's
 *                                      sequence (a sequence without one adds 0 to the mean)
 *   dapo      w_t = 1 / N              N loss tokens in the step (all ranks)
 *   dr_grpo   w_t = 1 / (B · max_len)
 *   bnpo      w_t = 1 / (M · n_mb)     n_mb loss tokens of t's micro-batch, M micro-batches
 *                                      of the step that hold a sequence (dummies do not)
 *
 * In verl's names: grpo is seq-mean-token-mean, dapo token-mean, and
 * seq-mean-token-sum is dr_grpo with max_len 1 (verl's seq-mean-token-sum-norm
 * leaves out the 1/B, a factor that is constant within a step).
 *
 * B, N and M are the step's totals over every rank (struct loss_totals),
 * as the step's DONE manifest gives them (sequences, loss_tokens, and the
 * micro-batches less the dummies; train/step.h), known before the first
 * micro-batch, so each micro-batch's contribution is
 * final and the sum over micro-batches is the step's loss however the
 * sequences were packed (for grpo, dapo and dr_grpo; bnpo depends on the
 * packing by definition). A sequence must lie whole in one micro-batch.
 *
 * The log-ratio is clamped to ±20 before exp (verl's guard), so a stray
 * logprob gives a large finite ratio, never inf·0 = NaN; in the clamped
 * region its gradient is 0. Tokens off the loss mask (prompts, padding,
 * dummy micro-batches) are never read beyond the mask and get exactly 0 in
 * dlogprob and dentropy.
 *
 * Arrays are per token, aligned with the pack's input_ids (T entries).
 */
#ifndef GRPO_LOSS_H
#define GRPO_LOSS_H

#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"
#include "train/loss_token.h"   /* the options and enums, and one token's maths */

/* The defaults of grpo-step(1): clip 0.2/0.2, β 0, k3, grpo, token ratio. */
void loss_opts_default(struct loss_opts *o);

/* The words of each enum, in its order, NULL-terminated: grpo-step's option
 * values, whose index in the list is the enum's value (cli_word). */
extern const char *const loss_agg_names[], *const loss_kl_names[], *const loss_ratio_names[];
const char *loss_agg_name(enum loss_agg a);

/* The step's totals over all of its ranks, for the aggregation weights. */
struct loss_totals {
	double seqs;    /* B: real sequences */
	double tokens;  /* N: loss tokens */
	double mbs;     /* M: micro-batches holding a real sequence (not dummies) */
};

/* One micro-batch as the loss sees it: plain arrays (T tokens, S spans). */
struct loss_input {
	int T;
	int nspans;                 /* S: spans in seq_lens, padding spans included */
	const uint32_t *seq_lens;   /* (S) sum = T */
	const uint8_t *mask;        /* (T) 1 = loss token */
	const float *adv;           /* (T) advantage of the token's sequence */
	const float *old;           /* (T) ℓ_old, the ratio's denominator */
	const float *behav;         /* (T) ℓ_behav for TIS (the sampler's), or NULL */
	const float *ref;           /* (T) ℓ_ref, or NULL when none */
};

/*
 * What a step's micro-batches add up to. loss_mb ADDS into it (+=), so zero
 * it (loss_stats_init) at the start of a step. Parts are already weighted:
 * loss = policy + β·kl − c_H·entropy. The token statistics (sums over loss
 * tokens) are plain, for means in the metrics. The KL is measured whenever
 * the micro-batch has reference logprobs, β = 0 included; 0 without them.
 */
struct loss_stats {
	double loss, policy, kl, entropy;   /* weighted by the aggregation */
	double tokens, seqs;                /* loss tokens, sequences with one or more */
	double kl_sum, ent_sum;             /* Σ k, Σ H over loss tokens */
	double ratio_sum, ratio_min, ratio_max;
	double clip_low, clip_high;         /* tokens with r < 1−ε_low and A < 0 / r > 1+ε_high and A > 0 */
	double dual_clipped;                /* tokens where the dual clip bound applied */
	double tis_capped;                  /* tokens whose TIS weight hit the cap */
	double diff_sum, diff_abs_sum;      /* Σ (ℓ − ℓ_old), Σ |ℓ − ℓ_old| */
};

void loss_stats_init(struct loss_stats *s);
/* a += b (b's min/max folded in). */
void loss_stats_add(struct loss_stats *a, const struct loss_stats *b);

/*
 * One micro-batch: given logprob (T) and entropy (T, or NULL when
 * entropy_coef is 0), writes dL/dlogprob (T) and dL/dentropy (T, or NULL
 * when entropy is NULL) and adds the micro-batch's parts into st. Fails (-1)
 * when β > 0 and in->ref is NULL, when an option is out of range, or when
 * seq_lens does not sum to T.
 */
int loss_mb(const struct loss_opts *o, const struct loss_totals *tot, const struct loss_input *in,
            const float *logprob, const float *entropy, float *dlogprob, float *dentropy,
            struct loss_stats *st, struct err *e);

/*
 * Each token's aggregation weight w_t (T; 0 off the mask), as loss_mb weighs
 * it: for a caller that forms the tokens' gradients itself through
 * loss_token.h (the GPU's fused LM head). Fails as loss_mb does on options
 * out of range, seq_lens not summing to T, or totals that leave the
 * micro-batch out.
 */
int loss_token_weights(const struct loss_opts *o, const struct loss_totals *tot, const struct loss_input *in,
                       double *w, struct err *e);

/*
 * The only two places that read struct microbatch (its fields are changing):
 * a loss_input over mb with ℓ_old = mb's inference logprobs (the tool may
 * point old and behav elsewhere afterwards), and mb's contribution to the
 * step's totals.
 */
void loss_input_from_mb(struct loss_input *in, const struct microbatch *mb);
void loss_totals_add_mb(struct loss_totals *t, const struct microbatch *mb);

#endif
