/*
 * loss_token.h: the GRPO loss of one loss token (the formulas of loss.h),
 * for loss.c and for the CUDA LM head that fuses the loss's per-token
 * gradient into its forward (kernels/loss.cu), so that the maths exists
 * once. Static inline, in double; __host__ __device__ under nvcc. Plain
 * arithmetic in a fixed order: loss.c's results are these, to the bit, and
 * the GPU's differ only where its exp() rounds differently (kernels/loss.cu
 * is built without fused multiply-adds for that).
 *
 * Options and enums live here, not in loss.h, so that the kernel sees them
 * without the rest of lib/.
 */
#ifndef GRPO_LOSS_TOKEN_H
#define GRPO_LOSS_TOKEN_H

#include <math.h>

#ifdef __CUDACC__
#define LOSS_TOKEN_FN static inline __host__ __device__
#else
#define LOSS_TOKEN_FN static inline
#endif

enum loss_ratio { LOSS_RATIO_TOKEN, LOSS_RATIO_SEQUENCE };
/* k1+ and k3+: the value of k1 or k3, the gradient of k2 (straight-through) */
enum loss_kl { LOSS_KL_K1, LOSS_KL_K2, LOSS_KL_K3, LOSS_KL_K1P, LOSS_KL_K3P };
enum loss_agg { LOSS_AGG_GRPO, LOSS_AGG_DAPO, LOSS_AGG_DR_GRPO, LOSS_AGG_BNPO };

struct loss_opts {
	enum loss_ratio ratio;
	float clip_low, clip_high;  /* ε_low, ε_high */
	float dual_clip;            /* c > 1, or 0 for none */
	int cispo;                  /* CISPO's detached clipped weight instead of PPO's clip */
	enum loss_kl kl;
	float kl_clamp;             /* the estimate kept within ±kl_clamp (no gradient past it), 0 for none */
	float beta;                 /* KL coefficient; > 0 needs ref logprobs */
	float entropy_coef;         /* c_H; the entropy bonus is −c_H·H */
	float tis_cap;              /* truncated importance sampling cap, 0 for none */
	enum loss_agg agg;
	int max_len;                /* dr_grpo's constant length */
};

#define LOSS_LOGR_MAX 20.0

/* exp of a log-ratio clamped to ±LOSS_LOGR_MAX; *live = 0 where clamped (no gradient). */
LOSS_TOKEN_FN double loss_ratio_exp(double lr, int *live)
{
	*live = lr > -LOSS_LOGR_MAX && lr < LOSS_LOGR_MAX;
	if (lr > LOSS_LOGR_MAX)
		lr = LOSS_LOGR_MAX;
	if (lr < -LOSS_LOGR_MAX)
		lr = -LOSS_LOGR_MAX;
	return exp(lr);
}

LOSS_TOKEN_FN double loss_clampd(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/*
 * The policy term of one token at ratio r and advantage A: its value, its
 * derivative in r (PPO) and in ℓ directly (CISPO), and what clipped.
 */
struct loss_pterm {
	double p, dp_dr, dp_dl;
	int dual;
};

LOSS_TOKEN_FN struct loss_pterm loss_policy_term(const struct loss_opts *o, double r, double A, double l)
{
	struct loss_pterm t = { 0, 0, 0, 0 };
	double lo = 1.0 - o->clip_low, hi = 1.0 + o->clip_high;
	double rc = loss_clampd(r, lo, hi);
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

/*
 * The KL estimator at Δ = ℓ − ℓ_ref, and its derivative in ℓ. With clamp
 * > 0 the estimate is kept within ±clamp and its derivative is 0 past it
 * (verl and OpenRLHF keep theirs within ±10). k1+ and k3+ take k2's
 * derivative, Δ, clamped or not: over the policy's own samples its mean is
 * the gradient of KL(π‖π_ref), where k3's is that of KL(π_ref‖π) and k1's
 * is 0.
 */
LOSS_TOKEN_FN double loss_kl_term(enum loss_kl kl, double clamp, double d, double *dk)
{
	double k;
	switch (kl) {
	case LOSS_KL_K1:
	case LOSS_KL_K1P:
		k = d, *dk = 1;
		break;
	case LOSS_KL_K2:
		k = 0.5 * d * d, *dk = d;
		break;
	default: {   /* k3, k3+ */
		double x = exp(-d);
		*dk = 1 - x;
		k = x + d - 1;
	}
	}
	if (clamp > 0 && (k > clamp || k < -clamp)) {
		k = k > clamp ? clamp : -clamp;
		*dk = 0;
	}
	if (kl == LOSS_KL_K1P || kl == LOSS_KL_K3P)
		*dk = d;
	return k;
}

/* The truncated importance weight min(exp(ℓ_old − ℓ_behav), cap); *capped where the cap applied. */
LOSS_TOKEN_FN double loss_tis_weight(double old, double behav, double cap, int *capped)
{
	int unused;
	double rho = loss_ratio_exp(old - behav, &unused);
	*capped = rho > cap;
	return *capped ? cap : rho;
}

/* One loss token's inputs: ℓ, ℓ_old, A, its aggregation weight w, and
 * ℓ_behav and ℓ_ref where has_behav and has_ref say there are. */
struct loss_token_in {
	double l, old, A, w;
	double behav, ref;
	int has_behav, has_ref;
};

/* What one token adds: its parts, and its gradients in ℓ and in H. */
struct loss_token {
	double r;                   /* the ratio it was given */
	struct loss_pterm pt;
	double rho;                 /* the TIS weight (1 without) */
	int capped;                 /* the TIS weight hit the cap */
	double k;                   /* the KL estimate (0 without ℓ_ref) */
	double dlogprob, dentropy;  /* dL/dℓ (for --ratio sequence, less the ratio's share) and dL/dH */
	double dL_dr;               /* w·ρ·dp/dr: what --ratio sequence sums into dL/ds */
};

/* The ratio of --ratio token: exp(ℓ − ℓ_old), clamped. */
LOSS_TOKEN_FN double loss_token_ratio(const struct loss_token_in *t, int *live)
{
	return loss_ratio_exp(t->l - t->old, live);
}

/*
 * Token t at ratio r (live: r's gradient flows; both from loss_token_ratio
 * for --ratio token, the sequence's for --ratio sequence).
 */
LOSS_TOKEN_FN struct loss_token loss_token_eval(const struct loss_opts *o, const struct loss_token_in *t, double r,
                                                int live)
{
	struct loss_token k;
	k.r = r;
	k.pt = loss_policy_term(o, r, t->A, t->l);
	k.rho = 1;
	k.capped = 0;
	if (o->tis_cap > 0 && t->has_behav)
		k.rho = loss_tis_weight(t->old, t->behav, o->tis_cap, &k.capped);
	double g = t->w * k.rho * k.pt.dp_dl;
	k.dL_dr = t->w * k.rho * k.pt.dp_dr;
	if (o->ratio != LOSS_RATIO_SEQUENCE && live)
		g += k.dL_dr * r;
	/* measured whenever there are reference logprobs, so that the
	 * metrics show the drift at β = 0 too; only measured there, as
	 * 0·inf (k3 past exp's range) would be NaN in the gradient */
	k.k = 0;
	if (t->has_ref) {
		double dk;
		k.k = loss_kl_term(o->kl, o->kl_clamp, t->l - t->ref, &dk);
		if (o->beta != 0)
			g += t->w * o->beta * dk;
	}
	k.dlogprob = g;
	k.dentropy = -t->w * o->entropy_coef;
	return k;
}

#endif
