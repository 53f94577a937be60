/*
 * test_loss_token: the per-token loss maths moved into loss_token.h (which
 * the GPU's fused LM head shares) changed nothing: on many random
 * micro-batches, under every option (PPO clip, dual clip, CISPO, TIS, k1,
 * k2, k3, β, the entropy coefficient, every aggregation, both ratios),
 * loss_mb's dlogprob, dentropy and statistics are the bits of the frozen
 * copy of the old code (../loss_old.h); and for the token ratio,
 * loss_token_eval called token by token with loss_token_weights' w gives
 * loss_mb's dlogprob and dentropy exactly, as the fused kernel does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/loss.h"
#include "../loss_old.h"
#include "../tap.h"

#define XORSHIFT_SEED 0x2545f4914f6cdd1dull
#include "../xorshift.h"

enum { MAXT = 96, MAXS = 12 };

/* A random micro-batch: sequences and padding, some all prompt, ratios from
 * near 1 to far past the clamp, some tokens' TIS weights over the cap. */
struct mb {
	int T, ns;
	uint32_t lens[MAXS];
	uint8_t mask[MAXT];
	float adv[MAXT], old[MAXT], behav[MAXT], ref[MAXT], lp[MAXT], ent[MAXT];
};

static void random_mb(struct mb *m)
{
	m->T = 0, m->ns = 0;
	int want = 8 + (int)(urand() * (MAXT - 8));
	while (m->T < want && m->ns < MAXS) {
		int len = 1 + (int)(urand() * 20), pad = urand() < 0.15, prompt = (int)(urand() * len);
		if (len > MAXT - m->T)
			len = MAXT - m->T;
		float A = pad ? 0.0f : (float)(urand() * 4 - 2);
		for (int t = m->T; t < m->T + len; t++) {
			double u = urand(), lr = u < 0.05 ? (urand() - 0.5) * 60 : (urand() - 0.5) * (u < 0.5 ? 0.5 : 3);
			m->mask[t] = !pad && t - m->T >= prompt;
			m->adv[t] = A;
			m->old[t] = (float)(-8 * urand());
			m->lp[t] = (float)(m->old[t] + lr);
			m->behav[t] = (float)(m->old[t] - (urand() - 0.3) * 2);
			m->ref[t] = (float)(m->lp[t] + (urand() - 0.5) * 2);
			m->ent[t] = (float)(3 * urand());
		}
		m->lens[m->ns++] = (uint32_t)len;
		m->T += len;
	}
}

static struct loss_input input_of(const struct mb *m, int behav, int ref)
{
	struct loss_input in = { m->T, m->ns, m->lens, m->mask, m->adv, m->old, behav ? m->behav : NULL,
	                         ref ? m->ref : NULL };
	return in;
}

/* Option set i of n: every combination of the switches, the numbers varied. */
static int opts_of(int i, struct loss_opts *o, int *behav, int *ref)
{
	loss_opts_default(o);
	o->agg = (enum loss_agg)(i % 4);
	o->kl = (enum loss_kl)(i / 4 % 3);
	o->ratio = (enum loss_ratio)(i / 12 % 2);
	int mode = i / 24 % 3;   /* PPO, PPO with dual clip, CISPO */
	o->dual_clip = mode == 1 ? 3.0f : 0;
	o->cispo = mode == 2;
	o->tis_cap = i / 72 % 2 ? 2.0f : 0;
	o->beta = i / 144 % 2 ? 0.04f : 0;
	o->entropy_coef = i / 288 % 2 ? 0.01f : 0;
	o->clip_low = 0.2f, o->clip_high = i % 5 == 0 ? 0.28f : 0.2f;
	o->max_len = 64;
	*behav = o->tis_cap > 0 || i % 7 == 0;   /* behav also present without TIS: only the drift reads it */
	*ref = o->beta != 0 || i % 3 == 0;
	return i < 576;
}

static int same_bits(const void *a, const void *b, size_t n)
{
	return memcmp(a, b, n) == 0;
}

/* loss_mb against the old code, and token by token, over nmb micro-batches per option set. */
static void compare(int nmb)
{
	int sets = 0, bad_old = 0, bad_tok = 0, tok_sets = 0, ntok = 0, failed = 0;
	struct mb m;
	float d0[MAXT], h0[MAXT], d1[MAXT], h1[MAXT];
	double w[MAXT];
	struct loss_opts o;
	int behav, ref;
	for (int i = 0; opts_of(i, &o, &behav, &ref); i++, sets++) {
		for (int k = 0; k < nmb; k++) {
			random_mb(&m);
			struct loss_input in = input_of(&m, behav, ref);
			struct loss_totals tot = { 3 + urand() * 5, 40 + urand() * 200, 1 + (int)(urand() * 4) };
			struct loss_stats s0, s1;
			loss_stats_init(&s0), loss_stats_init(&s1);
			struct err e0 = { 0 }, e1 = { 0 };
			const float *ent = o.entropy_coef != 0 || k % 2 ? m.ent : NULL;
			float *dh0 = ent ? h0 : NULL, *dh1 = ent ? h1 : NULL;
			int r0 = old_loss_mb(&o, &tot, &in, m.lp, ent, d0, dh0, &s0, &e0);
			int r1 = loss_mb(&o, &tot, &in, m.lp, ent, d1, dh1, &s1, &e1);
			size_t nb = (size_t)m.T * sizeof(float);
			if (r0 != r1 || r0 < 0 || !same_bits(d0, d1, nb) || (ent && !same_bits(h0, h1, nb)) ||
			    !same_bits(&s0, &s1, sizeof s0)) {
				if (bad_old++ == 0)
					diag("option set %d, micro-batch %d: rc %d/%d (%s%s)", i, k, r0, r1, e0.msg, e1.msg);
				continue;
			}
			if (o.ratio != LOSS_RATIO_TOKEN)
				continue;
			/* what the fused kernel does: each token alone */
			struct err e = { 0 };
			if (loss_token_weights(&o, &tot, &in, w, &e) < 0) {
				bad_tok++;
				diag("loss_token_weights: %s", e.msg);
				continue;
			}
			for (int t = 0; t < m.T; t++) {
				float g = 0, gh = 0;
				if (m.mask[t]) {
					struct loss_token_in ti = { m.lp[t], m.old[t], m.adv[t], w[t], behav ? m.behav[t] : 0,
					                            ref ? m.ref[t] : 0, behav, ref };
					int live;
					double r = loss_token_ratio(&ti, &live);
					struct loss_token tk = loss_token_eval(&o, &ti, r, live);
					g = (float)tk.dlogprob, gh = (float)tk.dentropy;
					ntok++;
				} else if (w[t] != 0) {
					failed = 1;
				}
				if (!same_bits(&g, &d1[t], sizeof g) || (ent && !same_bits(&gh, &h1[t], sizeof gh))) {
					if (bad_tok++ == 0)
						diag("option set %d, micro-batch %d, token %d: %.9g/%.9g vs loss_mb's %.9g/%.9g",
						     i, k, t, g, gh, d1[t], ent ? h1[t] : 0);
					break;
				}
			}
		}
		tok_sets += o.ratio == LOSS_RATIO_TOKEN;
	}
	ok(sets == 576 && bad_old == 0, "loss_mb: dlogprob, dentropy and statistics are the old code's bits, "
	   "%d option sets x %d micro-batches (%d differ)", sets, nmb, bad_old);
	ok(tok_sets == 288 && bad_tok == 0 && !failed && ntok > 100 * tok_sets,
	   "token by token with loss_token_weights' w: loss_mb's dlogprob and dentropy to the bit, "
	   "%d token-ratio option sets, %d tokens (%d differ)", tok_sets, ntok, bad_tok);
}

/* The comparisons can fail: a changed weight or a changed clamp shows. */
static void can_fail(void)
{
	struct mb m;
	do
		random_mb(&m);
	while (m.T < 40);
	struct loss_opts o;
	loss_opts_default(&o);
	struct loss_input in = input_of(&m, 0, 0);
	struct loss_totals tot = { 4, 100, 2 };
	float d0[MAXT], d1[MAXT];
	struct loss_stats s0, s1;
	loss_stats_init(&s0), loss_stats_init(&s1);
	struct err e = { 0 };
	old_loss_mb(&o, &tot, &in, m.lp, NULL, d0, NULL, &s0, &e);
	struct loss_totals tot2 = { 4, 100 * (1 + 1e-12), 2 };
	o.agg = LOSS_AGG_DAPO;
	loss_mb(&o, &tot2, &in, m.lp, NULL, d1, NULL, &s1, &e);
	old_loss_mb(&o, &tot, &in, m.lp, NULL, d0, NULL, &s0, &e);
	ok(!same_bits(&s0, &s1, sizeof s0), "a total changed by one part in 1e12 changes the statistics' bits");
	double w[MAXT];
	loss_token_weights(&o, &tot, &in, w, &e);
	int t = 0;
	while (!m.mask[t])
		t++;
	struct loss_token_in ti = { m.lp[t], m.old[t], m.adv[t], w[t] * (1 + 1e-6), 0, 0, 0, 0 };
	int live;
	double r = loss_token_ratio(&ti, &live);
	float g = (float)loss_token_eval(&o, &ti, r, live).dlogprob;
	loss_mb(&o, &tot, &in, m.lp, NULL, d1, NULL, &s1, &e);
	ok(d1[t] == 0 || g != d1[t], "a token's weight changed by 1e-6 changes its gradient's bits");
}

/* loss_token_weights: each aggregation's weights by hand, 0 off the mask, and loss_mb's errors. */
static void weights(void)
{
	static const uint32_t lens[] = { 4, 3, 2 };
	static const uint8_t mask[] = { 0, 1, 1, 1, 0, 1, 1, 0, 0 };
	static const float zero[9];
	struct loss_input in = { 9, 3, lens, mask, zero, zero, NULL, NULL };
	struct loss_totals tot = { 4, 20, 2 };
	struct loss_opts o;
	loss_opts_default(&o);
	o.max_len = 10;
	double w[9], want[4][2] = { { 1.0 / 12, 1.0 / 8 }, { 1.0 / 20, 1.0 / 20 }, { 1.0 / 40, 1.0 / 40 },
	                            { 1.0 / 10, 1.0 / 10 } };
	struct err e = { 0 };
	for (int a = 0; a < 4; a++) {
		o.agg = (enum loss_agg)a;
		int rc = loss_token_weights(&o, &tot, &in, w, &e);
		ok(rc == 0 && w[0] == 0 && w[1] == want[a][0] && w[3] == want[a][0] && w[4] == 0 && w[5] == want[a][1] &&
		   w[6] == want[a][1] && w[7] == 0 && w[8] == 0, "loss_token_weights, %s: %g and %g, 0 off the mask",
		   loss_agg_name(o.agg), w[1], w[5]);
	}
	o.beta = 0.1f;
	ok(loss_token_weights(&o, &tot, &in, w, &e) < 0 && strstr(e.msg, "reference logprobs"),
	   "loss_token_weights: --beta without reference logprobs fails as loss_mb does (%s)", e.msg);
}

int main(void)
{
	compare(getenv("GRPO_TEST_SMALL") ? 3 : 12);
	can_fail();
	weights();
	return tap_done();
}
