/*
 * loss.c: the GRPO loss and its gradient (see loss.h for the formulas).
 *
 * Each span of the pack (one sequence, or padding) is walked to count its
 * loss tokens (n_i) and, for the sequence ratio, to form log s_i; then once
 * more to write each token's value and gradient, by loss_token.h's maths,
 * which the GPU's fused LM head shares. Arithmetic is in double and rounded
 * once into the float gradients.
 */
#include <math.h>
#include <string.h>

#include "train/loss.h"

void loss_opts_default(struct loss_opts *o)
{
	memset(o, 0, sizeof *o);
	o->ratio = LOSS_RATIO_TOKEN;
	o->clip_low = 0.2f;
	o->clip_high = 0.2f;
	o->kl = LOSS_KL_K3;
	o->agg = LOSS_AGG_GRPO;
}

const char *const loss_agg_names[] = {
	[LOSS_AGG_GRPO] = "grpo", [LOSS_AGG_DAPO] = "dapo", [LOSS_AGG_DR_GRPO] = "dr_grpo", [LOSS_AGG_BNPO] = "bnpo", NULL
};
const char *const loss_kl_names[] = {
	[LOSS_KL_K1] = "k1", [LOSS_KL_K2] = "k2", [LOSS_KL_K3] = "k3", [LOSS_KL_K1P] = "k1+", [LOSS_KL_K3P] = "k3+", NULL
};
const char *const loss_ratio_names[] = { [LOSS_RATIO_TOKEN] = "token", [LOSS_RATIO_SEQUENCE] = "sequence", NULL };

const char *loss_agg_name(enum loss_agg a)
{
	return (unsigned)a < 4 ? loss_agg_names[a] : "?";
}

void loss_stats_init(struct loss_stats *s)
{
	memset(s, 0, sizeof *s);
	s->ratio_min = INFINITY;
	s->ratio_max = -INFINITY;
}

void loss_stats_add(struct loss_stats *a, const struct loss_stats *b)
{
	a->loss += b->loss, a->policy += b->policy, a->kl += b->kl, a->entropy += b->entropy;
	a->tokens += b->tokens, a->seqs += b->seqs;
	a->kl_sum += b->kl_sum, a->ent_sum += b->ent_sum;
	a->ratio_sum += b->ratio_sum;
	a->ratio_min = fmin(a->ratio_min, b->ratio_min);
	a->ratio_max = fmax(a->ratio_max, b->ratio_max);
	a->clip_low += b->clip_low, a->clip_high += b->clip_high;
	a->dual_clipped += b->dual_clipped, a->tis_capped += b->tis_capped;
	a->diff_sum += b->diff_sum, a->diff_abs_sum += b->diff_abs_sum;
}

/* The options and the spans checked; has_entropy: the entropies an entropy coefficient needs are there. */
static int check(const struct loss_opts *o, const struct loss_input *in, int has_entropy, struct err *e)
{
	if (o->clip_low < 0 || o->clip_high < 0)
		return err_set(e, "loss: clip ranges must be >= 0 (got %g, %g)", o->clip_low, o->clip_high);
	if (o->dual_clip != 0 && !(o->dual_clip > 1))
		return err_set(e, "loss: dual clip must be > 1 (got %g)", o->dual_clip);
	if (o->tis_cap < 0)
		return err_set(e, "loss: TIS cap must be > 0 (got %g)", o->tis_cap);
	if (o->agg == LOSS_AGG_DR_GRPO && o->max_len <= 0)
		return err_set(e, "loss: dr_grpo needs a max length > 0");
	if (o->entropy_coef != 0 && !has_entropy)
		return err_set(e, "loss: an entropy coefficient needs the entropies");
	long sum = 0;
	for (int s = 0; s < in->nspans; s++)
		sum += in->seq_lens[s];
	if (sum != in->T)
		return err_set(e, "loss: seq_lens sum to %ld, not the pack's %d tokens", sum, in->T);
	return 0;
}

/*
 * What loss_mb and loss_token_weights start with: the micro-batch's loss
 * tokens in *n_mb (0: nothing to add), and the inputs and totals checked
 * where there are some.
 */
static int start(const struct loss_opts *o, const struct loss_totals *tot, const struct loss_input *in,
                 long *n_mb, struct err *e)
{
	*n_mb = 0;
	for (int t = 0; t < in->T; t++)
		*n_mb += in->mask[t] != 0;
	if (*n_mb == 0)
		return 0;   /* padding or dummy micro-batch: exactly zero */
	if (o->beta != 0 && !in->ref)
		return err_set(e, "loss: --beta %g needs reference logprobs, and this micro-batch has none",
		               o->beta);
	if (tot->seqs <= 0 || tot->tokens <= 0 || (o->agg == LOSS_AGG_BNPO && tot->mbs <= 0))
		return err_set(e, "loss: the step's totals (%g sequences, %g tokens, %g micro-batches) "
		               "leave out this micro-batch's %ld loss tokens", tot->seqs, tot->tokens,
		               tot->mbs, *n_mb);
	return 0;
}

/* The aggregation's weight of a token whose sequence has n loss tokens, in a micro-batch of n_mb. */
static double agg_weight(const struct loss_opts *o, const struct loss_totals *tot, long n, long n_mb)
{
	switch (o->agg) {
	case LOSS_AGG_DAPO: return 1.0 / tot->tokens;
	case LOSS_AGG_DR_GRPO: return 1.0 / (tot->seqs * o->max_len);
	case LOSS_AGG_BNPO: return 1.0 / (tot->mbs * (double)n_mb);
	case LOSS_AGG_GRPO:
	default: return 1.0 / (tot->seqs * (double)n);
	}
}

/* The loss tokens of the span [start, start + len). */
static long span_tokens(const struct loss_input *in, int start, int len)
{
	long n = 0;
	for (int t = start; t < start + len; t++)
		n += in->mask[t] != 0;
	return n;
}

int loss_token_weights(const struct loss_opts *o, const struct loss_totals *tot, const struct loss_input *in,
                       double *w, struct err *e)
{
	long n_mb;
	if (check(o, in, 1, e) < 0 || start(o, tot, in, &n_mb, e) < 0)
		return -1;
	int at = 0;
	for (int s = 0; s < in->nspans; at += (int)in->seq_lens[s], s++) {
		int len = (int)in->seq_lens[s];
		double ws = agg_weight(o, tot, span_tokens(in, at, len), n_mb);
		for (int t = at; t < at + len; t++)
			w[t] = in->mask[t] ? ws : 0;
	}
	return 0;
}

/* Token t's inputs for loss_token.h, at weight w. */
static struct loss_token_in token_in(const struct loss_input *in, int t, double l, double w)
{
	struct loss_token_in k = { l, in->old[t], in->adv[t], w, 0, 0, in->behav != NULL, in->ref != NULL };
	if (in->behav)
		k.behav = in->behav[t];
	if (in->ref)
		k.ref = in->ref[t];
	return k;
}

/* Token k's parts, weighted by w, into st; H its entropy, A its advantage, d its drift from the sampler. */
static void add_token(struct loss_stats *st, const struct loss_opts *o, const struct loss_token *k, double w,
                      double H, double A, double d)
{
	double p = k->rho * k->pt.p, r = k->r;
	st->tis_capped += k->capped;
	st->policy += w * p;
	st->kl += w * k->k;
	st->entropy += w * H;
	st->loss += w * (p + (o->beta != 0 ? o->beta * k->k : 0) - o->entropy_coef * H);   /* as loss_token_eval */
	st->tokens += 1;
	st->kl_sum += k->k;
	st->ent_sum += H;
	st->ratio_sum += r;
	st->ratio_min = fmin(st->ratio_min, r);
	st->ratio_max = fmax(st->ratio_max, r);
	st->clip_low += r < 1.0 - o->clip_low && A < 0;
	st->clip_high += r > 1.0 + o->clip_high && A > 0;
	st->dual_clipped += k->pt.dual;
	st->diff_sum += d;
	st->diff_abs_sum += fabs(d);
}

int loss_mb(const struct loss_opts *o, const struct loss_totals *tot, const struct loss_input *in,
            const float *logprob, const float *entropy, float *dlogprob, float *dentropy,
            struct loss_stats *st, struct err *e)
{
	if (check(o, in, entropy != NULL, e) < 0)
		return -1;
	int T = in->T;
	memset(dlogprob, 0, (size_t)T * sizeof *dlogprob);
	if (dentropy)
		memset(dentropy, 0, (size_t)T * sizeof *dentropy);
	long n_mb;
	if (start(o, tot, in, &n_mb, e) < 0 || n_mb == 0)
		return n_mb == 0 ? 0 : -1;

	int at = 0;
	for (int s = 0; s < in->nspans; at += (int)in->seq_lens[s], s++) {
		int len = (int)in->seq_lens[s];
		long n = span_tokens(in, at, len);
		if (n == 0)
			continue;
		st->seqs += 1;
		double w = agg_weight(o, tot, n, n_mb);

		/* GSPO: one ratio for the sequence, s = exp(mean log-ratio) */
		double logs = 0;
		for (int t = at; t < at + len; t++)
			if (in->mask[t])
				logs += (double)logprob[t] - in->old[t];
		int slive = 0;
		double sratio = loss_ratio_exp(logs / (double)n, &slive);
		double dL_ds = 0;   /* Σ_t w ρ dp/ds over the sequence */

		for (int t = at; t < at + len; t++) {
			if (!in->mask[t])
				continue;
			struct loss_token_in ti = token_in(in, t, logprob[t], w);
			int live = slive;
			double r = o->ratio == LOSS_RATIO_SEQUENCE ? sratio : loss_token_ratio(&ti, &live);
			struct loss_token k = loss_token_eval(o, &ti, r, live);
			if (o->ratio == LOSS_RATIO_SEQUENCE)
				dL_ds += k.dL_dr;
			if (dentropy)
				dentropy[t] = (float)k.dentropy;
			dlogprob[t] = (float)k.dlogprob;
			double H = entropy ? entropy[t] : 0;
			add_token(st, o, &k, w, H, ti.A, ti.l - (in->behav ? in->behav[t] : in->old[t]));
		}
		/* d s / d ℓ_t = s / n for each loss token of the sequence */
		if (o->ratio == LOSS_RATIO_SEQUENCE && slive && dL_ds != 0) {
			double gs = dL_ds * sratio / (double)n;
			for (int t = at; t < at + len; t++)
				if (in->mask[t])
					dlogprob[t] = (float)((double)dlogprob[t] + gs);
		}
	}
	return 0;
}

void loss_input_from_mb(struct loss_input *in, const struct microbatch *mb)
{
	memset(in, 0, sizeof *in);
	in->T = (int)mb->n_tokens;
	in->nspans = (int)mb->n_seq_lens;
	in->seq_lens = mb->seq_lens;
	in->mask = mb->loss_mask;
	in->adv = mb->advantages;
	in->old = mb->inference_logprobs;
	in->ref = mb->ref_logprobs;
}

void loss_totals_add_mb(struct loss_totals *t, const struct microbatch *mb)
{
	long n = 0;
	for (uint32_t i = 0; i < mb->n_tokens; i++)
		n += mb->loss_mask[i] != 0;
	/* as the packer counts them in DONE: every real sequence, every micro-batch that is not a dummy */
	t->seqs += mb->n_seqs;
	t->tokens += (double)n;
	t->mbs += mb->n_seqs > 0;
}
