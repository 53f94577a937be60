/*
 * test_loss: the GRPO loss of lib/train/loss.c against values worked out by
 * hand (in the comments), its gradient against finite differences in every
 * mode, padding and dummy micro-batches contributing exactly zero, and the
 * same sequences packed differently giving the same loss and gradients.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/loss.h"
#include "../tap.h"

/*
 * The pack of the hand-worked cases, T = 10 in spans 4, 4, 2 (padding):
 *   sequence 1, tokens 0..3, loss on 1..3, A = +0.5, ratios 1.1 1.3 0.7
 *   sequence 2, tokens 4..7, loss on 6..7, A = −1,   ratios 0.7 1.5
 *   padding, tokens 8..9
 * ℓ_old = −1 everywhere, ℓ = ℓ_old + log r.
 */
enum { T = 10 };
static const uint32_t lens[] = { 4, 4, 2 };
static const uint8_t mask[T] = { 0, 1, 1, 1, 0, 0, 1, 1, 0, 0 };
static const double ratio[T] = { 1, 1.1, 1.3, 0.7, 1, 1, 0.7, 1.5, 1, 1 };
static float adv[T], old[T], lp[T], ent[T], ref[T], behav[T];

static void setup(void)
{
	for (int t = 0; t < T; t++) {
		adv[t] = t < 4 ? 0.5f : t < 8 ? -1.0f : 0.0f;
		old[t] = -1.0f;
		lp[t] = (float)(-1.0 + log(ratio[t]));
		ent[t] = 0.5f + 0.1f * (float)t;
		ref[t] = lp[t] - 0.5f;           /* Δ = ℓ − ℓ_ref = 0.5 */
		behav[t] = old[t] - 0.25f;       /* exp(ℓ_old − ℓ_behav) = e^0.25 = 1.284 */
	}
}

static struct loss_input input(void)
{
	struct loss_input in = { T, 3, lens, mask, adv, old, NULL, NULL };
	return in;
}

static const struct loss_totals tot = { 2, 5, 1 };

/* The loss of one micro-batch (all of the step here); gradients into d, dh. */
static double run(const struct loss_opts *o, const struct loss_totals *tt, const struct loss_input *in,
                  const float *l, const float *h, float *d, float *dh, struct loss_stats *st)
{
	struct err e = { 0 };
	loss_stats_init(st);
	if (loss_mb(o, tt, in, l, h, d, dh, st, &e) < 0) {
		diag("%s", e.msg);
		return NAN;
	}
	return st->loss;
}

static void hand_ppo(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	struct loss_input in = input();
	float d[T];
	struct loss_stats st;

	/*
	 * PPO clip 0.2: sequence 1 (A = 0.5): r 1.1 → −0.55; r 1.3 → clip 1.2 → −0.6;
	 * r 0.7 → min(0.35, 0.4) = 0.35 → −0.35; mean −0.5. Sequence 2 (A = −1):
	 * r 0.7 → min(−0.7, −0.8) → 0.8; r 1.5 → min(−1.5, −1.2) → 1.5; mean 1.15.
	 * grpo: (−0.5 + 1.15) / 2 = 0.325.
	 */
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325, 1e-6, "grpo PPO loss by hand");
	is_float(st.policy, 0.325, 1e-6, "policy part is the whole loss at beta 0");
	/* dℓ = w·(−A)·r unclipped, 0 clipped; w = 1/6 in sequence 1, 1/4 in sequence 2 */
	is_float(d[1], -0.5 * 1.1 / 6, 1e-6, "gradient, unclipped token");
	is_float(d[2], 0, 0, "gradient, token clipped high");
	is_float(d[3], -0.5 * 0.7 / 6, 1e-6, "gradient, r < 1-eps but A > 0 is not clipped");
	is_float(d[6], 0, 0, "gradient, token clipped low with A < 0");
	is_float(d[7], 1.5 / 4, 1e-6, "gradient, r > 1+eps with A < 0 is not clipped");
	int zero = 1;
	for (int t = 0; t < T; t++)
		zero &= mask[t] || d[t] == 0;
	ok(zero, "tokens off the loss mask get gradient 0");
	is_float(st.clip_low, 1, 0, "one token clipped low");
	is_float(st.clip_high, 1, 0, "one token clipped high");
	is_float(st.tokens, 5, 0, "5 loss tokens");
	is_float(st.seqs, 2, 0, "2 sequences");
	is_float(st.ratio_sum / st.tokens, (1.1 + 1.3 + 0.7 + 0.7 + 1.5) / 5, 1e-6, "ratio mean");
	is_float(st.ratio_min, 0.7, 1e-6, "ratio min");
	is_float(st.ratio_max, 1.5, 1e-6, "ratio max");

	/* Σ p = −0.55 − 0.6 − 0.35 + 0.8 + 1.5 = 0.8 */
	o.agg = LOSS_AGG_DAPO;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.8 / 5, 1e-6, "dapo: token mean over the step");
	is_float(d[1], -0.5 * 1.1 / 5, 1e-6, "dapo gradient weight 1/N");
	struct loss_totals big = { 2, 20, 1 };
	is_float(run(&o, &big, &in, lp, NULL, d, NULL, &st), 0.8 / 20, 1e-6,
	         "dapo divides by the step's tokens, not the micro-batch's");
	o.agg = LOSS_AGG_DR_GRPO;
	o.max_len = 4;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.8 / 8, 1e-6, "dr_grpo: sum / (B max_len)");
	o.agg = LOSS_AGG_BNPO;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.8 / 5, 1e-6, "bnpo: micro-batch token mean");
	struct loss_totals two = { 2, 5, 2 };
	is_float(run(&o, &two, &in, lp, NULL, d, NULL, &st), 0.8 / 10, 1e-6, "bnpo: averaged over M micro-batches");

	/* clip-higher 0.4: r 1.3 is no longer clipped: sequence 1 mean (−0.55 − 0.65 − 0.35)/3 */
	loss_opts_default(&o);
	o.clip_high = 0.4f;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), ((-0.55 - 0.65 - 0.35) / 3 + 1.15) / 2, 1e-6,
	         "clip-high 0.4");
	is_float(st.clip_high, 0, 0, "nothing clipped high at 0.4");
	/* clip-low 0.35: r 0.7 with A = −1 unclipped: min(−0.7, −0.7) → 0.7 */
	o.clip_high = 0.2f;
	o.clip_low = 0.35f;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), (-0.5 + (0.7 + 1.5) / 2) / 2, 1e-6, "clip-low 0.35");
}

static void hand_dual_cispo(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	struct loss_input in = input();
	float d[T];
	struct loss_stats st;

	/* dual clip c = 1.4: sequence 2's r 1.5 token (p 1.5, A = −1) is capped at −c·A = 1.4 */
	o.dual_clip = 1.4f;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), (-0.5 + (0.8 + 1.4) / 2) / 2, 1e-6, "dual clip 1.4");
	is_float(d[7], 0, 0, "dual-clipped token has gradient 0");
	is_float(st.dual_clipped, 1, 0, "one token dual-clipped");
	o.dual_clip = 0.5f;
	struct err e = { 0 };
	ok(loss_mb(&o, &tot, &in, lp, NULL, d, NULL, &st, &e) < 0 && strstr(e.msg, "dual"),
	   "dual clip <= 1 is refused: %s", e.msg);

	/*
	 * CISPO: p = −sg(clip(r, 0.8, 1.2))·A·ℓ, ℓ = −1 + log r.
	 * sequence 1 weights 1.1 1.2 0.8, sequence 2 weights 0.8 1.2.
	 */
	loss_opts_default(&o);
	o.cispo = 1;
	double s1 = 0, s2 = 0, w1[] = { 1.1, 1.2, 0.8 }, r1[] = { 1.1, 1.3, 0.7 };
	for (int i = 0; i < 3; i++)
		s1 += -w1[i] * 0.5 * (-1 + log(r1[i]));
	s2 = -0.8 * -1 * (-1 + log(0.7)) - 1.2 * -1 * (-1 + log(1.5));
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), (s1 / 3 + s2 / 2) / 2, 1e-6, "CISPO loss by hand");
	is_float(d[2], -1.2 * 0.5 / 6, 1e-6, "CISPO: a clipped token still has gradient −w·A");
	is_float(d[7], 1.2 / 4, 1e-6, "CISPO gradient, sequence 2");
}

static void hand_kl_entropy_tis_gspo(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	struct loss_input in = input();
	float d[T], dh[T];
	struct loss_stats st;
	struct err e = { 0 };

	/* β 0.1 with Δ = 0.5 on every token; the KL mean over sequences is the estimator itself */
	o.beta = 0.1f;
	ok(loss_mb(&o, &tot, &in, lp, NULL, d, NULL, &st, &e) < 0 && strstr(e.msg, "reference"),
	   "beta > 0 without reference logprobs is refused: %s", e.msg);
	in.ref = ref;
	double k3 = exp(-0.5) + 0.5 - 1, k[3] = { 0.5, 0.125, k3 }, dk[3] = { 1, 0.5, 1 - exp(-0.5) };
	enum loss_kl kinds[3] = { LOSS_KL_K1, LOSS_KL_K2, LOSS_KL_K3 };
	for (int i = 0; i < 3; i++) {
		o.kl = kinds[i];
		is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325 + 0.1 * k[i], 1e-6, "KL k%d: loss + beta k", i + 1);
		is_float(st.kl, k[i], 1e-6, "KL k%d part", i + 1);
		is_float(d[2], 0.1 * dk[i] / 6, 1e-6, "KL k%d gradient on a clipped token", i + 1);
	}
	/* k1+ and k3+: the values of k1 and k3, the gradient of k2 (Δ = 0.5) */
	o.kl = LOSS_KL_K1P;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325 + 0.1 * 0.5, 1e-6, "KL k1+: k1's value");
	is_float(d[2], 0.1 * 0.5 / 6, 1e-6, "KL k1+: k2's gradient, where k1's is 1");
	o.kl = LOSS_KL_K3P;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325 + 0.1 * k3, 1e-6, "KL k3+: k3's value");
	is_float(d[2], 0.1 * 0.5 / 6, 1e-6, "KL k3+: k2's gradient, where k3's is 1 - e^-0.5");
	/* --kl-clamp 0.1: k1 0.5, k2 0.125 and k3 0.1065 are all 0.1, with no gradient but the "+" ones' */
	o.kl_clamp = 0.1f;
	enum loss_kl all[5] = { LOSS_KL_K1, LOSS_KL_K2, LOSS_KL_K3, LOSS_KL_K1P, LOSS_KL_K3P };
	for (int i = 0; i < 5; i++) {
		o.kl = all[i];
		double want = i < 3 ? 0 : 0.1 * 0.5 / 6;
		is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325 + 0.1 * (double)0.1f, 1e-6,
			 "--kl-clamp 0.1, %s: the estimate held at 0.1", loss_kl_names[all[i]]);
		is_float(d[2], want, 1e-9, "--kl-clamp 0.1, %s: KL gradient %g", loss_kl_names[all[i]], want);
	}
	o.kl = LOSS_KL_K3, o.kl_clamp = 1;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325 + 0.1 * k3, 1e-6, "--kl-clamp 1: k3 within it");
	is_float(d[2], 0.1 * dk[2] / 6, 1e-6, "--kl-clamp 1: k3's gradient within it");
	/* β 0.1, a token the policy finds e^750 times less likely than the
	 * reference does: k3 and its gradient are infinite, which the step
	 * refuses; held at 10, or with k3+'s gradient, it trains */
	{
		float lp2[T], old2[T], ref2[T];
		memcpy(lp2, lp, sizeof lp2), memcpy(old2, old, sizeof old2), memcpy(ref2, ref, sizeof ref2);
		lp2[1] = old2[1] = -750.5f, ref2[1] = -0.5f;
		struct loss_input far = in;
		far.old = old2, far.ref = ref2;
		o.kl = LOSS_KL_K3, o.kl_clamp = 0;
		run(&o, &tot, &far, lp2, NULL, d, NULL, &st);
		ok(isinf(d[1]), "k3 at Δ = -750: an infinite gradient (%g)", d[1]);
		o.kl_clamp = 10;
		double got = run(&o, &tot, &far, lp2, NULL, d, NULL, &st);
		/* the token's policy gradient is left: r = 1, A = 0.5, w = 1/6 */
		ok(isfinite(got) && fabs(d[1] - -0.5 / 6) < 1e-7,
		   "--kl-clamp 10: the token's KL held at 10 (loss %g), its gradient the policy's alone (%g)", got, d[1]);
		o.kl = LOSS_KL_K3P, o.kl_clamp = 0;
		run(&o, &tot, &far, lp2, NULL, d, NULL, &st);
		is_float(d[1], -0.5 / 6 + 0.1 * -750.0 / 6, 1e-3, "k3+: the policy's gradient and k2's, beta Δ w (%g)",
			 d[1]);
		o.kl_clamp = 0;
	}
	o.kl = LOSS_KL_K3;
	/* β 0 with reference logprobs: the KL is measured, and only measured */
	o.beta = 0;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.325, 1e-6, "beta 0: the loss has no KL in it");
	is_float(st.kl_sum / st.tokens, k3, 1e-6, "beta 0: the KL (k3) is still measured for the metrics");
	is_float(d[2], 0, 0, "beta 0: no KL gradient on a clipped token");
	/* β 0, a token the policy finds far less likely than the reference does
	 * (Δ = −750, so exp(−Δ) overflows and k3 is inf): a metric must not
	 * reach the loss or the gradient, which are the policy's alone */
	{
		float lp2[T], old2[T], ref2[T], d0[T];
		memcpy(lp2, lp, sizeof lp2), memcpy(old2, old, sizeof old2), memcpy(ref2, ref, sizeof ref2);
		lp2[1] = old2[1] = -750.5f, ref2[1] = -0.5f;
		struct loss_input far = in;
		far.old = old2, far.ref = NULL;
		double want = run(&o, &tot, &far, lp2, NULL, d0, NULL, &st);
		far.ref = ref2;
		double got = run(&o, &tot, &far, lp2, NULL, d, NULL, &st);
		int same = 1;
		for (int t = 0; t < T; t++)
			same &= d[t] == d0[t];
		ok(got == want && same, "beta 0, k3 overflowing on a token: loss %g and gradient as without a reference "
		   "(loss %g)", got, want);
		ok(isinf(st.kl_sum), "and the KL measured says so (%g)", st.kl_sum);
	}

	/* entropy bonus 0.01: grpo mean of H: sequence 1 (0.6+0.7+0.8)/3 = 0.7, sequence 2 (1.1+1.2)/2 = 1.15 */
	loss_opts_default(&o);
	in.ref = NULL;
	o.entropy_coef = 0.01f;
	is_float(run(&o, &tot, &in, lp, ent, d, dh, &st), 0.325 - 0.01 * 0.925, 1e-6, "entropy bonus");
	is_float(st.entropy, 0.925, 1e-6, "entropy part");
	is_float(dh[1], -0.01 / 6, 1e-9, "dL/dH = −c w");
	is_float(dh[8], 0, 0, "dL/dH = 0 on padding");

	/* TIS cap 1.2: ρ = e^0.25 = 1.284 capped to 1.2, multiplies the policy term */
	loss_opts_default(&o);
	o.tis_cap = 1.2f;
	in.behav = behav;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 1.2 * 0.325, 1e-6, "TIS capped weight");
	is_float(st.tis_capped, 5, 0, "every token capped");
	is_float(d[1], 1.2 * -0.5 * 1.1 / 6, 1e-6, "TIS scales the gradient");
	o.tis_cap = 2;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), exp(0.25) * 0.325, 1e-5, "TIS under the cap");
	is_float(st.diff_sum / st.tokens, (log(1.1 * 1.3 * 0.7 * 0.7 * 1.5) + 5 * 0.25) / 5, 1e-5,
	         "alignment: mean of trainer minus sampler logprob");

	/*
	 * GSPO: s_1 = (1.1·1.3·0.7)^(1/3) = 1.001^(1/3), inside the clip, A = 0.5 → −0.5 s_1;
	 * s_2 = (0.7·1.5)^(1/2) = 1.05^(1/2) = 1.0247, A = −1 → 1.0247. grpo: mean of the two.
	 */
	loss_opts_default(&o);
	in.behav = NULL;
	o.ratio = LOSS_RATIO_SEQUENCE;
	double s1 = cbrt(1.001), s2 = sqrt(1.05);
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), (-0.5 * s1 + s2) / 2, 1e-6, "GSPO loss by hand");
	/* dL/dℓ_t = (1/B)·(−A)·s/n for each token of the sequence */
	is_float(d[1], -0.5 * s1 / 3 / 2, 1e-6, "GSPO gradient spreads over the sequence");
	is_float(d[7], s2 / 2 / 2, 1e-6, "GSPO gradient, sequence 2");
}

/* A pack of random sequences for the finite differences and packing tests. */
struct pack {
	int T, ns;
	uint32_t lens[8];
	uint8_t mask[64];
	float adv[64], old[64], lp[64], ent[64], ref[64], behav[64];
};

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#include "../xorshift.h"

/* Ratios kept 0.05 away from the clip edges 0.8 and 1.2 (and 3 for the dual clip). */
static double pick_ratio(void)
{
	static const double lo[] = { 0.6, 0.85, 1.25, 3.2 }, hi[] = { 0.75, 1.15, 1.6, 3.5 };
	int i = (int)(urand() * 4);
	return lo[i] + (hi[i] - lo[i]) * urand();
}

static void random_pack(struct pack *p, int ns)
{
	memset(p, 0, sizeof *p);
	p->ns = ns;
	for (int s = 0; s < ns; s++) {
		int len = 3 + (int)(urand() * 5), start = p->T;
		int prompt = 1 + (int)(urand() * 2);
		double A = urand() * 2 - 1;
		p->lens[s] = (uint32_t)len;
		for (int t = start; t < start + len; t++) {
			p->mask[t] = t - start >= prompt;
			p->adv[t] = (float)A;
			p->old[t] = (float)(-0.5 - 2 * urand());
			p->lp[t] = (float)(p->old[t] + log(pick_ratio()));
			p->ent[t] = (float)(2 * urand());
			p->ref[t] = (float)(p->lp[t] + urand() - 0.5);
			p->behav[t] = (float)(p->old[t] + 0.3 * urand() - 0.15);
		}
		p->T += len;
	}
}

static struct loss_input pack_input(const struct pack *p)
{
	struct loss_input in = { p->T, p->ns, p->lens, p->mask, p->adv, p->old, p->behav, p->ref };
	return in;
}

static void fd_mode(const char *name, const struct loss_opts *o)
{
	struct pack p;
	random_pack(&p, 4);
	struct loss_input in = pack_input(&p);
	struct loss_totals tt = { 4, 0, 1 };
	for (int t = 0; t < p.T; t++)
		tt.tokens += p.mask[t];
	float d[64], dh[64], d2[64], dh2[64];
	struct loss_stats st;
	run(o, &tt, &in, p.lp, p.ent, d, dh, &st);
	double worst = 0;
	for (int t = 0; t < p.T; t++) {
		for (int which = 0; which < 2; which++) {
			/* CISPO's weight is detached: move ℓ_old with ℓ so that it stays put */
			float *x = which ? p.ent : p.lp, keep = x[t], keep_old = p.old[t];
			int shift = !which && o->cispo;
			float h = 1e-3f;
			x[t] = keep + h;
			float xp = x[t];
			if (shift)
				p.old[t] = keep_old + (xp - keep);
			double up = run(o, &tt, &in, p.lp, p.ent, d2, dh2, &st);
			x[t] = keep - h;
			float xm = x[t];
			if (shift)
				p.old[t] = keep_old + (xm - keep);
			double down = run(o, &tt, &in, p.lp, p.ent, d2, dh2, &st);
			x[t] = keep;
			p.old[t] = keep_old;
			double fd = (up - down) / ((double)xp - xm), an = which ? dh[t] : d[t];
			double err = fabs(fd - an) / (fabs(fd) + fabs(an) + 1e-3);
			if (err > worst)
				worst = err;
		}
	}
	ok(worst < 1e-3, "finite differences, %s (worst relative error %.2g)", name, worst);
}

static void finite_differences(void)
{
	static const struct {
		const char *name;
		enum loss_ratio ratio;
		int cispo;
		float dual, beta, ent, tis;
		enum loss_kl kl;
		enum loss_agg agg;
	} modes[] = {
		{ "grpo ppo", LOSS_RATIO_TOKEN, 0, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "dapo ppo", LOSS_RATIO_TOKEN, 0, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_DAPO },
		{ "dr_grpo ppo", LOSS_RATIO_TOKEN, 0, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_DR_GRPO },
		{ "bnpo ppo", LOSS_RATIO_TOKEN, 0, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_BNPO },
		{ "dual clip 3", LOSS_RATIO_TOKEN, 0, 3, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "cispo", LOSS_RATIO_TOKEN, 1, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_DAPO },
		{ "k1 beta 0.1", LOSS_RATIO_TOKEN, 0, 0, 0.1f, 0, 0, LOSS_KL_K1, LOSS_AGG_GRPO },
		{ "k2 beta 0.1", LOSS_RATIO_TOKEN, 0, 0, 0.1f, 0, 0, LOSS_KL_K2, LOSS_AGG_DAPO },
		{ "k3 beta 0.1", LOSS_RATIO_TOKEN, 0, 0, 0.1f, 0, 0, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "entropy 0.05", LOSS_RATIO_TOKEN, 0, 0, 0, 0.05f, 0, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "tis 1.05", LOSS_RATIO_TOKEN, 0, 0, 0, 0, 1.05f, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "gspo", LOSS_RATIO_SEQUENCE, 0, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "gspo dapo k3 entropy tis", LOSS_RATIO_SEQUENCE, 0, 0, 0.1f, 0.05f, 1.05f, LOSS_KL_K3, LOSS_AGG_DAPO },
		{ "gspo cispo", LOSS_RATIO_SEQUENCE, 1, 0, 0, 0, 0, LOSS_KL_K3, LOSS_AGG_GRPO },
		{ "everything token", LOSS_RATIO_TOKEN, 0, 3, 0.2f, 0.05f, 1.05f, LOSS_KL_K2, LOSS_AGG_DR_GRPO },
	};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		struct loss_opts o;
		loss_opts_default(&o);
		o.ratio = modes[i].ratio, o.cispo = modes[i].cispo, o.dual_clip = modes[i].dual;
		o.beta = modes[i].beta, o.entropy_coef = modes[i].ent, o.tis_cap = modes[i].tis;
		o.kl = modes[i].kl, o.agg = modes[i].agg, o.max_len = 8;
		fd_mode(modes[i].name, &o);
	}
}

static void padding_and_dummy(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	o.beta = 0.1f, o.entropy_coef = 0.1f;
	/* a dummy micro-batch: no loss token, NaN logprobs and no reference: nothing, not NaN */
	float l[6], h[6], d[6], dh[6], a[6] = { 0 }, z[6] = { 0 };
	uint8_t m[6] = { 0 };
	uint32_t sl[1] = { 6 };
	for (int t = 0; t < 6; t++)
		l[t] = NAN, h[t] = NAN, d[t] = 7, dh[t] = 7;
	struct loss_input in = { 6, 1, sl, m, a, z, NULL, NULL };
	struct loss_totals empty = { 0, 0, 0 };
	struct loss_stats st;
	double v = run(&o, &empty, &in, l, h, d, dh, &st);
	int zero = 1;
	for (int t = 0; t < 6; t++)
		zero &= d[t] == 0 && dh[t] == 0;
	ok(v == 0 && st.tokens == 0 && st.seqs == 0 && zero, "a dummy micro-batch gives exactly 0, not NaN");

	/* padding beside real sequences: NaN at padding positions does not leak */
	setup();
	lp[8] = lp[9] = NAN;
	struct loss_input in2 = input();
	float d2[T];
	loss_opts_default(&o);
	ok(run(&o, &tot, &in2, lp, NULL, d2, NULL, &st) == run(&o, &tot, &in2, lp, NULL, d2, NULL, &st) &&
	   fabs(st.loss - 0.325) < 1e-6 && d2[8] == 0 && d2[9] == 0, "NaN on padding changes nothing");
	setup();
}

/* Two sequences per micro-batch vs one pack holding all: same loss, same gradients. */
static void repacking(void)
{
	enum loss_agg aggs[] = { LOSS_AGG_GRPO, LOSS_AGG_DAPO, LOSS_AGG_DR_GRPO };
	struct pack all;
	random_pack(&all, 6);
	for (int ai = 0; ai < 3; ai++) {
		struct loss_opts o;
		loss_opts_default(&o);
		o.agg = aggs[ai], o.max_len = 8, o.beta = 0.05f;
		struct loss_totals tt = { 6, 0, 0 };
		for (int t = 0; t < all.T; t++)
			tt.tokens += all.mask[t];
		tt.mbs = 1;
		struct loss_input in = pack_input(&all);
		float d[64], dsplit[64];
		struct loss_stats st, sum, part;
		run(&o, &tt, &in, all.lp, NULL, d, NULL, &st);

		/* the same sequences as three micro-batches of two, in reverse order */
		loss_stats_init(&sum);
		tt.mbs = 3;
		int off[7] = { 0 };
		for (int s = 0; s < 6; s++)
			off[s + 1] = off[s] + (int)all.lens[s];
		for (int b = 2; b >= 0; b--) {
			int a0 = off[2 * b], n = off[2 * b + 2] - a0;
			struct loss_input sub = { n, 2, all.lens + 2 * b, all.mask + a0, all.adv + a0, all.old + a0,
			                          all.behav + a0, all.ref + a0 };
			struct err e = { 0 };
			loss_stats_init(&part);
			if (loss_mb(&o, &tt, &sub, all.lp + a0, NULL, dsplit + a0, NULL, &part, &e) < 0)
				diag("%s", e.msg);
			loss_stats_add(&sum, &part);
		}
		double worst = 0;
		for (int t = 0; t < all.T; t++)
			worst = fmax(worst, fabs(d[t] - dsplit[t]));
		ok(fabs(sum.loss - st.loss) < 1e-12 && worst == 0 && sum.tokens == st.tokens,
		   "%s: packed as 1 or 3 micro-batches, same loss (%.9g, %.9g) and gradients",
		   loss_agg_name(aggs[ai]), st.loss, sum.loss);
	}
}

static void microbatch_view(void)
{
	int32_t ids[T] = { 0 };
	struct microbatch mb;
	memset(&mb, 0, sizeof mb);
	mb.n_tokens = T, mb.input_ids = ids, mb.loss_mask = (uint8_t *)mask, mb.advantages = adv;
	mb.inference_logprobs = old, mb.n_seq_lens = 3, mb.seq_lens = (uint32_t *)lens, mb.n_seqs = 2;
	struct loss_totals tt = { 0, 0, 0 };
	loss_totals_add_mb(&tt, &mb);
	ok(tt.seqs == 2 && tt.tokens == 5 && tt.mbs == 1, "totals of a micro-batch: 2 sequences, 5 tokens, 1");
	struct loss_input in;
	loss_input_from_mb(&in, &mb);
	struct loss_opts o;
	loss_opts_default(&o);
	float d[T];
	struct loss_stats st;
	is_float(run(&o, &tt, &in, lp, NULL, d, NULL, &st), 0.325, 1e-6, "loss through the micro-batch view");

	/* a dummy micro-batch (no sequence, no loss token) is no micro-batch of bnpo's M */
	uint8_t none[T] = { 0 };
	mb.loss_mask = none, mb.n_seqs = 0;
	loss_totals_add_mb(&tt, &mb);
	ok(tt.seqs == 2 && tt.tokens == 5 && tt.mbs == 1, "a dummy micro-batch adds nothing to the totals");

	/* grpo-step reads --loss-agg, --kl and --ratio as the index of the word in these lists */
	ok(strcmp(loss_agg_names[LOSS_AGG_DR_GRPO], "dr_grpo") == 0 && strcmp(loss_agg_names[LOSS_AGG_BNPO], "bnpo") == 0 &&
	   !loss_agg_names[4] && strcmp(loss_agg_name(LOSS_AGG_BNPO), "bnpo") == 0, "aggregation names, in the enum's order");
	ok(strcmp(loss_kl_names[LOSS_KL_K2], "k2") == 0 && strcmp(loss_ratio_names[LOSS_RATIO_SEQUENCE], "sequence") == 0,
	   "KL and ratio names");
}

/* loss_mb's error for o and tt over the hand pack, "" when it takes them. */
static const char *refusal(const struct loss_opts *o, const struct loss_totals *tt)
{
	static struct err e;
	struct loss_input in = input();
	float d[T];
	struct loss_stats st;
	loss_stats_init(&st);
	e.msg[0] = 0;
	return loss_mb(o, tt, &in, lp, NULL, d, NULL, &st, &e) < 0 ? e.msg : "";
}

/* Each bound of the options and totals alone, and the values on its edge that are allowed. */
static void refusals(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	o.clip_low = -0.1f;
	ok(strstr(refusal(&o, &tot), "clip") != NULL, "a negative clip-low alone is refused");
	loss_opts_default(&o);
	o.clip_high = -0.1f;
	ok(strstr(refusal(&o, &tot), "clip") != NULL, "a negative clip-high alone is refused");
	o.clip_low = o.clip_high = 0;
	ok(!*refusal(&o, &tot), "clip ranges of 0 are taken");
	loss_opts_default(&o);
	o.dual_clip = 1;
	ok(strstr(refusal(&o, &tot), "dual") != NULL, "a dual clip of 1 is refused (it must be > 1)");
	loss_opts_default(&o);
	o.agg = LOSS_AGG_DR_GRPO;
	ok(strstr(refusal(&o, &tot), "max length") != NULL, "dr_grpo without a max length is refused");
	o.max_len = 1;
	float d[T];
	struct loss_stats st;
	struct loss_input in = input();
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), 0.8 / 2, 1e-6,
	         "dr_grpo at max length 1 (verl's seq-mean-token-sum): sum / B");

	/* totals that cannot hold this micro-batch's 2 sequences and 5 loss tokens */
	loss_opts_default(&o);
	struct loss_totals noseq = { 0, 5, 1 }, notok = { 2, 0, 1 }, nomb = { 2, 5, 0 };
	ok(strstr(refusal(&o, &noseq), "totals") != NULL, "totals of 0 sequences are refused");
	ok(strstr(refusal(&o, &notok), "totals") != NULL, "totals of 0 loss tokens are refused");
	o.agg = LOSS_AGG_BNPO;
	ok(strstr(refusal(&o, &nomb), "totals") != NULL, "bnpo: totals of 0 micro-batches are refused");
}

/*
 * The smallest steps: one sequence of one loss token (prompt, answer), r 1.1,
 * A 0.5: the loss is −r·A = −0.55 and dL/dℓ = −r·A. GSPO over one sequence
 * of two loss tokens, r 1.1 and 0.95, A −1: s = (1.1·0.95)^½ inside the
 * clip, loss s, and dL/dℓ_t = −A·s/n = s/2 for each token.
 */
static void smallest_steps(void)
{
	uint32_t l2[] = { 2 }, l3[] = { 3 };
	uint8_t m[] = { 0, 1, 1 };
	float a[] = { 0.5f, 0.5f, 0.5f }, o3[] = { -1, -1, -1 }, d[3];
	float l[] = { -1, (float)(-1 + log(1.1)), (float)(-1 + log(0.95)) };
	struct loss_input in = { 2, 1, l2, m, a, o3, NULL, NULL };
	struct loss_totals one = { 1, 1, 1 };
	struct loss_opts o;
	loss_opts_default(&o);
	struct loss_stats st;
	is_float(run(&o, &one, &in, l, NULL, d, NULL, &st), -0.55, 1e-6, "one loss token: loss -r A");
	is_float(d[1], -0.55, 1e-6, "one loss token: it is trained (dL/dl = -r A)");
	struct loss_totals none = { 0, 1, 1 };
	struct err e = { 0 };
	ok(loss_mb(&o, &none, &in, l, NULL, d, NULL, &st, &e) < 0 && strstr(e.msg, "totals"),
	   "one loss token, totals of 0 sequences: refused as for more");

	float an[] = { -1, -1, -1 };
	struct loss_input seq = { 3, 1, l3, m, an, o3, NULL, NULL };
	struct loss_totals two = { 1, 2, 1 };
	o.ratio = LOSS_RATIO_SEQUENCE;
	double s = sqrt(1.1 * 0.95);
	is_float(run(&o, &two, &seq, l, NULL, d, NULL, &st), s, 1e-6, "GSPO, one sequence, A -1: loss s");
	is_float(d[1], s / 2, 1e-6, "GSPO, one sequence, A -1: dL/dl = s/n on each token");
	is_float(d[2], s / 2, 1e-6, "and on the other");
}

/*
 * The clip counts are of tokens the clip moved: none at clip ranges 0 when
 * every token is on-policy (r = 1), and none with advantage 0 (a flat
 * group's tokens), however far their ratio.
 */
static void clip_counts(void)
{
	float on[T], far[T], zero[T] = { 0 };
	for (int t = 0; t < T; t++)
		on[t] = old[t], far[t] = (float)(old[t] + log(t % 2 ? 1.5 : 0.5));
	struct loss_input in = input();
	struct loss_opts o;
	loss_opts_default(&o);
	o.clip_low = o.clip_high = 0;
	float d[T];
	struct loss_stats st;
	run(&o, &tot, &in, on, NULL, d, NULL, &st);
	ok(st.clip_low == 0 && st.clip_high == 0, "clip 0, r = 1: nothing counted as clipped (low %g, high %g)",
	   st.clip_low, st.clip_high);
	loss_opts_default(&o);
	in.adv = zero;
	run(&o, &tot, &in, far, NULL, d, NULL, &st);
	ok(st.clip_low == 0 && st.clip_high == 0, "A = 0, r 0.5 and 1.5: nothing counted as clipped (low %g, high %g)",
	   st.clip_low, st.clip_high);
}

/* TIS at a cap of 1 with the sampler above ℓ_old: ρ = e^−0.25 < 1 weighs the policy term. */
static void tis_under_one(void)
{
	float up[T];
	for (int t = 0; t < T; t++)
		up[t] = old[t] + 0.25f;
	struct loss_input in = input();
	in.behav = up;
	struct loss_opts o;
	loss_opts_default(&o);
	o.tis_cap = 1;
	float d[T];
	struct loss_stats st;
	is_float(run(&o, &tot, &in, lp, NULL, d, NULL, &st), exp(-0.25) * 0.325, 1e-6, "TIS cap 1, weight e^-0.25");
	is_float(st.tis_capped, 0, 0, "nothing capped");
}

/* loss_token_weights: the hand pack's weights 1/6 and 1/4, and nothing written past T. */
static void token_weights(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	struct loss_input in = input();
	double w[T + 1];
	w[T] = 42;
	struct err e = { 0 };
	ok(loss_token_weights(&o, &tot, &in, w, &e) == 0, "token weights");
	is_float(w[1], 1.0 / 6, 1e-12, "weight of sequence 1: 1/(B n)");
	is_float(w[7], 1.0 / 4, 1e-12, "weight of sequence 2");
	ok(w[0] == 0 && w[4] == 0 && w[8] == 0 && w[9] == 0, "weight 0 off the mask");
	ok(w[T] == 42, "nothing written past the T weights");
}

int main(void)
{
	setup();
	hand_ppo();
	hand_dual_cispo();
	hand_kl_entropy_tis_gspo();
	finite_differences();
	padding_and_dummy();
	repacking();
	microbatch_view();
	refusals();
	smallest_steps();
	clip_counts();
	tis_under_one();
	token_weights();
	return tap_done();
}
