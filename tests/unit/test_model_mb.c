/*
 * test_model_mb: the forward over a micro-batch as the packer builds it
 * (data/mbbuild.h) is the forward over the same pack given as ids and
 * lengths, bit for bit, its padding span included; each sequence's values
 * are those of the sequence alone (to fp32 rounding); the backward follows
 * it; and a micro-batch that does not fit the activations is refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/mbbuild.h"
#include "model/model.h"
#include "../tap.h"

static void traj_of(struct traj *t, const int32_t *p, uint32_t np, const int32_t *r, uint32_t nr, float temp)
{
	traj_init(t);
	t->prompt_tokens = (int32_t *)p, t->n_prompt = np;
	t->response_tokens = (int32_t *)r, t->n_response = nr;
	t->temperature = temp;
}

int main(void)
{
	struct model_config c;
	struct model m;
	struct err e = { 0 };
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN3);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.HS = 6, c.V = 40, c.init_std = 0.3f, c.eps = 1e-5f;
	if (!ok(model_create(&m, &c, &e) == 0 && model_init_random(&m, 5, &e) == 0, "a small Qwen3 model (%s)", e.msg))
		return tap_done();

	static const int32_t p1[] = { 1, 2, 3 }, r1[] = { 4, 5, 6, 7 }, p2[] = { 8, 9 }, r2[] = { 10, 11, 12 };
	struct traj t[2];
	traj_of(&t[0], p1, 3, r1, 4, 0.7f);
	traj_of(&t[1], p2, 2, r2, 3, 1.0f);
	const struct traj *seqs[] = { &t[0], &t[1] };
	struct microbatch mb;
	struct mbbuild_opt mo = { 16, 8, 0 };
	ok(mb_build(&mb, seqs, NULL, 2, &mo, 0, 0, &e) == 0 && mb.n_tokens == 16 && mb.n_seq_lens == 3 &&
	   mb.seq_lens[2] == 4, "a micro-batch of 7 + 5 tokens and a padding span of 4 (%s)", e.msg);

	int ids[16], lens[3];
	for (int i = 0; i < 16; i++)
		ids[i] = mb.input_ids[i];
	for (int s = 0; s < 3; s++)
		lens[s] = (int)mb.seq_lens[s];
	float lp[16], ent[16], lp2[16], ent2[16];
	model_acts_alloc(&m, 16, &e);
	ok(model_forward_mb(&m, &mb, lp, ent, &e) == 0, "model_forward_mb runs (%s)", e.msg);
	ok(model_forward(&m, ids, 16, lens, 3, mb.temperatures, lp2, ent2, &e) == 0 &&
	   memcmp(lp, lp2, sizeof lp) == 0 && memcmp(ent, ent2, sizeof ent) == 0,
	   "the same values as model_forward over the same pack, bit for bit");

	/* each sequence alone, at its own temperature */
	float worst = 0;
	int at = 0;
	for (int s = 0; s < 2; s++) {
		float one[16], eone[16];
		model_forward(&m, ids + at, lens[s], &lens[s], 1, mb.temperatures + at, one, eone, &e);
		for (int k = 0; k < lens[s]; k++) {
			float d = fabsf(one[k] - lp[at + k]) + fabsf(eone[k] - ent[at + k]);
			worst = d > worst ? d : worst;
		}
		at += lens[s];
	}
	ok(worst < 1e-5f, "each sequence as alone (largest difference %g)", worst);
	ok(lp[0] == 0 && lp[7] == 0 && lp[3] < 0 && lp[8] < 0, "nothing predicts a sequence's first token: 0 there");

	float dlp[16];
	for (int i = 0; i < 16; i++)
		dlp[i] = mb.loss_mask[i] ? -1.0f : 0.0f;
	ok(model_grads_alloc(&m, &e) == 0 && model_forward_mb(&m, &mb, lp, NULL, &e) == 0 &&
	   model_backward(&m, dlp, NULL, &e) == 0, "the backward follows it (%s)", e.msg);
	double g = 0;
	for (size_t i = 0; i < m.g.n; i++)
		g += fabs(m.g.mem[i]);
	ok(g > 0, "and gives gradients (sum |g| %g)", g);

	struct model small;
	model_create(&small, &c, &e);
	model_acts_alloc(&small, 8, &e);
	ok(model_forward_mb(&small, &mb, lp, NULL, &e) < 0 && strstr(e.msg, "pack of 16 tokens, but activations are sized for 8"),
	   "too long for the activations: %s", e.msg);
	model_free(&small);
	mb_free(&mb);
	model_free(&m);
	return tap_done();
}
