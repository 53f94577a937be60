/*
 * loss_old.h: lib/train/loss.c's loss_mb as it was before its per-token
 * maths moved into loss_token.h (commit 747cefd), kept frozen, renamed
 * old_*, so that test_loss_token can show the move changed no bit.
 * Do not edit: it is the reference, not a second implementation.
 */
#ifndef GRPO_TESTS_LOSS_OLD_H
#define GRPO_TESTS_LOSS_OLD_H

#include <math.h>
#include <string.h>

#include "train/loss.h"

#define OLD_LOGR_MAX 20.0

/* exp of a log-ratio clamped to ±OLD_LOGR_MAX; *live = 0 where clamped (no gradient). */
static double old_ratio_exp(double lr, int *live)
{
	*live = lr > -OLD_LOGR_MAX && lr < OLD_LOGR_MAX;
	if (lr > OLD_LOGR_MAX)
		lr = OLD_LOGR_MAX;
	if (lr < -OLD_LOGR_MAX)
		lr = -OLD_LOGR_MAX;
	return exp(lr);
}

static double old_clampd(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/*
 * The policy term of one token at ratio r and advantage A: its value, its
 * derivative in r (PPO) and in ℓ directly (CISPO), and what clipped.
 */
struct old_pterm {
	double p, dp_dr, dp_dl;
	int dual;
};

static struct old_pterm old_policy_term(const struct loss_opts *o, double r, double A, double l)
{
	struct old_pterm t = { 0, 0, 0, 0 };
	double lo = 1.0 - o->clip_low, hi = 1.0 + o->clip_high;
	double rc = old_clampd(r, lo, hi);
	if (o->cispo) {
		t.p = -rc * A * l;
		t.dp_dl = -rc * A;
		return t;
	}
	double un = r * A, cl = rc * A;
	if (un <= cl) {
		t.p = -un;
		t.dp_dr = -A;
	} else {
		t.p = -cl;    /* clipped: flat in r */
	}
	if (o->dual_clip > 0 && A < 0 && -o->dual_clip * A < t.p) {
		t.p = -o->dual_clip * A;
		t.dp_dr = 0;
		t.dual = 1;
	}
	return t;
}

/* The KL estimator at Δ = ℓ − ℓ_ref, and its derivative in ℓ. */
static double old_kl_term(enum loss_kl kl, double d, double *dk)
{
	switch (kl) {
	case LOSS_KL_K1:
		*dk = 1;
		return d;
	case LOSS_KL_K2:
		*dk = d;
		return 0.5 * d * d;
	case LOSS_KL_K3:
	default: {
		double x = exp(-d);
		*dk = 1 - x;
		return x + d - 1;
	}
	}
}

static int old_check(const struct loss_opts *o, const struct loss_input *in, const float *entropy,
                 struct err *e)
{
	if (o->clip_low < 0 || o->clip_high < 0)
		return err_set(e, "loss: clip ranges must be >= 0 (got %g, %g)", o->clip_low, o->clip_high);
	if (o->dual_clip != 0 && !(o->dual_clip > 1))
		return err_set(e, "loss: dual clip must be > 1 (got %g)", o->dual_clip);
	if (o->tis_cap < 0)
		return err_set(e, "loss: TIS cap must be > 0 (got %g)", o->tis_cap);
	if (o->agg == LOSS_AGG_DR_GRPO && o->max_len <= 0)
		return err_set(e, "loss: dr_grpo needs a max length > 0");
	if (o->entropy_coef != 0 && !entropy)
		return err_set(e, "loss: an entropy coefficient needs the entropies");
	long sum = 0;
	for (int s = 0; s < in->nspans; s++)
		sum += in->seq_lens[s];
	if (sum != in->T)
		return err_set(e, "loss: seq_lens sum to %ld, not the pack's %d tokens", sum, in->T);
	return 0;
}

static int old_loss_mb(const struct loss_opts *o, const struct loss_totals *tot, const struct loss_input *in,
                       const float *logprob, const float *entropy, float *dlogprob, float *dentropy,
                       struct loss_stats *st, struct err *e)
{
	if (old_check(o, in, entropy, e) < 0)
		return -1;
	int T = in->T;
	memset(dlogprob, 0, (size_t)T * sizeof *dlogprob);
	if (dentropy)
		memset(dentropy, 0, (size_t)T * sizeof *dentropy);

	long n_mb = 0;
	for (int t = 0; t < T; t++)
		n_mb += in->mask[t] != 0;
	if (n_mb == 0)
		return 0;   /* padding or dummy micro-batch: exactly zero */
	if (o->beta != 0 && !in->ref)
		return err_set(e, "loss: --beta %g needs reference logprobs, and this micro-batch has none",
		               o->beta);
	if (tot->seqs <= 0 || tot->tokens <= 0 || (o->agg == LOSS_AGG_BNPO && tot->mbs <= 0))
		return err_set(e, "loss: the step's totals (%g sequences, %g tokens, %g micro-batches) "
		               "leave out this micro-batch's %ld loss tokens", tot->seqs, tot->tokens,
		               tot->mbs, n_mb);

	int start = 0;
	for (int s = 0; s < in->nspans; start += (int)in->seq_lens[s], s++) {
		int len = (int)in->seq_lens[s];
		long n = 0;
		double logs = 0;
		for (int t = start; t < start + len; t++)
			if (in->mask[t]) {
				n++;
				logs += (double)logprob[t] - in->old[t];
			}
		if (n == 0)
			continue;
		st->seqs += 1;

		double w;
		switch (o->agg) {
		case LOSS_AGG_DAPO: w = 1.0 / tot->tokens; break;
		case LOSS_AGG_DR_GRPO: w = 1.0 / (tot->seqs * o->max_len); break;
		case LOSS_AGG_BNPO: w = 1.0 / (tot->mbs * (double)n_mb); break;
		case LOSS_AGG_GRPO:
		default: w = 1.0 / (tot->seqs * (double)n); break;
		}

		/* GSPO: one ratio for the sequence, s = exp(mean log-ratio) */
		int slive = 0;
		double sratio = old_ratio_exp(logs / (double)n, &slive);
		double dL_ds = 0;   /* Σ_t w ρ dp/ds over the sequence */

		for (int t = start; t < start + len; t++) {
			if (!in->mask[t])
				continue;
			double l = logprob[t], A = in->adv[t];
			int live;
			double r;
			if (o->ratio == LOSS_RATIO_SEQUENCE)
				r = sratio, live = slive;
			else
				r = old_ratio_exp(l - in->old[t], &live);

			struct old_pterm pt = old_policy_term(o, r, A, l);
			double rho = 1;
			if (o->tis_cap > 0 && in->behav) {
				int unused;
				rho = old_ratio_exp((double)in->old[t] - in->behav[t], &unused);
				if (rho > o->tis_cap) {
					rho = o->tis_cap;
					st->tis_capped += 1;
				}
			}
			double g = w * rho * pt.dp_dl;
			if (o->ratio == LOSS_RATIO_SEQUENCE)
				dL_ds += w * rho * pt.dp_dr;
			else if (live)
				g += w * rho * pt.dp_dr * r;

			/* measured whenever there are reference logprobs, so that
			 * the metrics show the drift at β = 0 too */
			double k = 0;
			if (in->ref) {
				double dk;
				k = old_kl_term(o->kl, l - in->ref[t], &dk);
				g += w * o->beta * dk;
			}
			double H = entropy ? entropy[t] : 0;
			if (dentropy)
				dentropy[t] = (float)(-w * o->entropy_coef);
			dlogprob[t] = (float)g;

			double p = rho * pt.p;
			st->policy += w * p;
			st->kl += w * k;
			st->entropy += w * H;
			st->loss += w * (p + o->beta * k - o->entropy_coef * H);
			st->tokens += 1;
			st->kl_sum += k;
			st->ent_sum += H;
			st->ratio_sum += r;
			st->ratio_min = fmin(st->ratio_min, r);
			st->ratio_max = fmax(st->ratio_max, r);
			st->clip_low += r < 1.0 - o->clip_low && A < 0;
			st->clip_high += r > 1.0 + o->clip_high && A > 0;
			st->dual_clipped += pt.dual;
			double d = l - (in->behav ? in->behav[t] : in->old[t]);
			st->diff_sum += d;
			st->diff_abs_sum += fabs(d);
		}
		/* d s / d ℓ_t = s / n for each loss token of the sequence */
		if (o->ratio == LOSS_RATIO_SEQUENCE && slive && dL_ds != 0) {
			double gs = dL_ds * sratio / (double)n;
			for (int t = start; t < start + len; t++)
				if (in->mask[t])
					dlogprob[t] = (float)((double)dlogprob[t] + gs);
		}
	}
	return 0;
}

#endif
