/* The micro-batch builder (data/mbbuild.h) against hand-worked batches: every
 * array of two sequences and their padding, a sequence without sampler or
 * reference logprobs, truncation (a response cut, a prompt cut), a response
 * from position 0, the dummy, and the capacity. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/check.h"
#include "data/mbbuild.h"
#include "tap.h"

/* A: prompt 11 12, response 13 14 15 (mask 1 0 1), sampler and reference
 * logprobs, two rewards. B: prompt 21, response 22 23, no sampler logprobs,
 * no mask, a string id, no finish reason. */
struct fix {
	int32_t pa[2], ra[3], pb[1], rb[2];
	float lpa[3], refa[3], refb[2], rwa[2], rwb[1];
	uint8_t ma[3];
	char fin[8];
	struct traj a, b;
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof *f);
	f->pa[0] = 11, f->pa[1] = 12, f->ra[0] = 13, f->ra[1] = 14, f->ra[2] = 15;
	f->pb[0] = 21, f->rb[0] = 22, f->rb[1] = 23;
	f->lpa[0] = -0.125f, f->lpa[1] = -0.25f, f->lpa[2] = -0.5f;
	f->refa[0] = -1, f->refa[1] = -2, f->refa[2] = -3, f->refb[0] = -4, f->refb[1] = -5;
	f->ma[0] = 1, f->ma[1] = 0, f->ma[2] = 1;
	f->rwa[0] = 1.0f, f->rwa[1] = 0.5f, f->rwb[0] = 2.0f;
	strcpy(f->fin, "stop");
	struct traj *a = &f->a, *b = &f->b;
	traj_init(a), traj_init(b);
	a->prompt_tokens = f->pa, a->n_prompt = 2, a->response_tokens = f->ra, a->n_response = 3;
	a->logprobs = f->lpa, a->response_mask = f->ma, a->ref_logprobs = f->refa;
	a->rewards = f->rwa, a->n_rewards = 2, a->advantage = 1.5f, a->temperature = 0.75f;
	a->sequence_id = traj_id_num(100), a->group_id = traj_id_num(7), a->policy_version = 3;
	a->finish_reason = f->fin, a->scored = 1;
	b->prompt_tokens = f->pb, b->n_prompt = 1, b->response_tokens = f->rb, b->n_response = 2;
	b->ref_logprobs = f->refb, b->rewards = f->rwb, b->n_rewards = 1, b->advantage = -0.5f, b->temperature = 1.25f;
	traj_id_set_str(&b->sequence_id, "b-0", 3);
	b->group_id = traj_id_num(7), b->policy_version = 2, b->scored = 1;
}

static int same_i32(const int32_t *a, const int32_t *w, uint32_t n)
{
	return a && memcmp(a, w, n * sizeof *a) == 0;
}

static int same_f(const float *a, const float *w, uint32_t n)
{
	return a && memcmp(a, w, n * sizeof *a) == 0;
}

static int same_u32(const uint32_t *a, const uint32_t *w, uint32_t n)
{
	return a && memcmp(a, w, n * sizeof *a) == 0;
}

static void whole_tests(void)
{
	struct fix f;
	struct microbatch mb;
	struct err e = { 0 };
	fix_init(&f);
	const struct traj *seqs[] = { &f.a, &f.b };
	struct mbbuild_opt o = { 10, 5, 4 };
	ok(mb_build(&mb, seqs, NULL, 2, &o, 1, 2, &e) == 0, "two sequences of 5 and 3 tokens, padded to 10: %s", e.msg);
	static const int32_t ids[] = { 11, 12, 13, 14, 15, 21, 22, 23, MB_PAD_ID, MB_PAD_ID };
	static const int32_t pos[] = { 0, 1, 2, 3, 4, 0, 1, 2, 0, 1 };
	static const uint8_t mask[] = { 0, 0, 1, 0, 1, 0, 1, 1, 0, 0 };
	static const float lp[] = { 0, 0, -0.125f, -0.25f, -0.5f, 0, 0, 0, 0, 0 };
	static const float ref[] = { 0, 0, -1, -2, -3, 0, -4, -5, 0, 0 };
	static const float adv[] = { 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, -0.5f, -0.5f, -0.5f, 0, 0 };
	static const float temp[] = { 0.75f, 0.75f, 0.75f, 0.75f, 0.75f, 1.25f, 1.25f, 1.25f, 1, 1 };
	static const uint32_t lens[] = { 5, 3, 2 }, plens[] = { 2, 1 };
	is_int(mb.n_tokens, 10, "n_tokens");
	ok(same_i32(mb.input_ids, ids, 10), "input_ids: A's prompt and response, B's, then padding");
	ok(same_i32(mb.position_ids, pos, 10), "position_ids restart in each sequence and in the padding");
	ok(mb.loss_mask && memcmp(mb.loss_mask, mask, 10) == 0,
	   "loss_mask: A's response where response_mask is 1, all of B's response, never prompt or padding");
	ok(same_f(mb.inference_logprobs, lp, 10), "inference_logprobs: A's on its response, 0 for B (none) and elsewhere");
	ok(same_f(mb.ref_logprobs, ref, 10), "ref_logprobs: both sequences' on their responses, 0 elsewhere");
	ok(same_f(mb.advantages, adv, 10), "advantages: each sequence's on all its tokens, 0 on padding");
	ok(same_f(mb.temperatures, temp, 10), "temperatures: each sequence's on all its tokens, 1 on padding");
	ok(mb.n_seq_lens == 3 && mb.n_seqs == 2 && same_u32(mb.seq_lens, lens, 3), "seq_lens 5 3 and padding 2");
	ok(same_u32(mb.prompt_lens, plens, 2), "prompt_lens 2 1");
	ok(mb.policy_versions && mb.policy_versions[0] == 3 && mb.policy_versions[1] == 2, "policy_versions 3 2");
	ok(mb.rewards && mb.rewards[0] == 1.5f && mb.rewards[1] == 2.0f, "rewards: the sum of each sequence's");
	ok(mb.finish_reasons && mb.finish_reasons[0] && strcmp(mb.finish_reasons[0], "stop") == 0 &&
	   !mb.finish_reasons[1], "finish_reasons: A's stop, B's unknown");
	ok(mb.logprobs_missing && mb.logprobs_missing[0] == 0 && mb.logprobs_missing[1] == 1,
	   "logprobs_missing marks B, which has no sampler logprobs");
	ok(mb.sequence_ids && traj_id_eq(&mb.sequence_ids[0], &f.a.sequence_id) &&
	   traj_id_eq(&mb.sequence_ids[1], &f.b.sequence_id) && traj_id_eq(&mb.group_ids[1], &f.b.group_id),
	   "sequence_ids and group_ids as given");
	ok(mb.step == 4 && mb.rank == 1 && mb.index == 2, "step, rank, index");
	ok(mb_check(&mb, &e) == 0, "and the micro-batch meets check.h: %s", e.msg);
	mb_free(&mb);

	/* B without reference logprobs: none at all; every sampler logprob: no logprobs_missing */
	f.b.ref_logprobs = NULL;
	f.b.logprobs = f.refb;
	o.pad_multiple = 0;
	ok(mb_build(&mb, seqs, NULL, 2, &o, 0, 0, &e) == 0 && mb.n_tokens == 8 && mb.n_seq_lens == 2,
	   "no padding with pad_multiple 0: 8 tokens, 2 spans");
	ok(!mb.ref_logprobs, "ref_logprobs NULL when one sequence has none (a 0 would pass for its logprob)");
	ok(!mb.logprobs_missing, "logprobs_missing NULL when every sequence has sampler logprobs");
	ok(mb.inference_logprobs && mb.inference_logprobs[6] == -4 && mb.inference_logprobs[7] == -5,
	   "B's sampler logprobs on its response");
	ok(mb_check(&mb, &e) == 0, "and it meets check.h: %s", e.msg);
	mb_free(&mb);

	/* one sequence alone keeps its reference logprobs */
	const struct traj *one[] = { &f.a };
	static const float ref1[] = { 0, 0, -1, -2, -3 };
	ok(mb_build(&mb, one, NULL, 1, &o, 0, 0, &e) == 0 && same_f(mb.ref_logprobs, ref1, 5),
	   "a micro-batch of one sequence keeps its ref_logprobs (%s)", e.msg);
	mb_free(&mb);

	/* exactly a multiple of pad_multiple: no padding span */
	o.pad_multiple = 4, o.cap = 8;
	ok(mb_build(&mb, seqs, NULL, 2, &o, 0, 0, &e) == 0 && mb.n_tokens == 8 && mb.n_seq_lens == 2,
	   "8 tokens at pad_multiple 4 and capacity 8: no padding span (%s)", e.msg);
	mb_free(&mb);
	o.cap = 7, o.pad_multiple = 1;
	ok(mb_build(&mb, seqs, NULL, 2, &o, 0, 0, &e) < 0 &&
	   strcmp(e.msg, "micro-batch of 8 tokens exceeds --seq-len 7") == 0, "8 tokens at a capacity of 7 refused: %s",
	   e.msg);
	traj_id_free(&f.b.sequence_id);
}

static void cut_tests(void)
{
	struct fix f;
	struct microbatch mb;
	struct err e = { 0 };
	fix_init(&f);
	const struct traj *seqs[] = { &f.a, &f.b };
	struct mbbuild_opt o = { 8, 1, 0 };
	uint32_t use[] = { 4, 3 };
	ok(mb_build(&mb, seqs, use, 2, &o, 0, 0, &e) == 0 && mb.n_tokens == 7 && mb.seq_lens[0] == 4 &&
	   mb.seq_lens[1] == 3 && mb.n_seq_lens == 2, "A cut to 4 tokens, B whole (3): 7 tokens (%s)", e.msg);
	static const int32_t ids[] = { 11, 12, 13, 14, 21, 22, 23 };
	static const uint8_t mask[] = { 0, 0, 1, 0, 0, 1, 1 };
	ok(same_i32(mb.input_ids, ids, 7) && memcmp(mb.loss_mask, mask, 7) == 0,
	   "A's last response token dropped, B's kept");
	ok(mb.finish_reasons[0] && strcmp(mb.finish_reasons[0], "length") == 0 && !mb.finish_reasons[1],
	   "the cut sequence finished by length, the whole one as it was");
	is_int(mb_trained_tokens(&f.a, 4), 1, "A's first 4 tokens train 1");
	mb_free(&mb);

	use[0] = 1;
	ok(mb_build(&mb, seqs, use, 2, &o, 0, 0, &e) == 0 && mb.seq_lens[0] == 1 && mb.prompt_lens[0] == 1 &&
	   mb.input_ids[0] == 11 && mb.input_ids[1] == 21 && !mb.loss_mask[0],
	   "A cut inside its prompt: one prompt token, nothing trained (%s)", e.msg);
	ok(mb_check(&mb, &e) == 0, "and it meets check.h: %s", e.msg);
	mb_free(&mb);

	use[0] = 9;   /* more than A has: all of it */
	ok(mb_build(&mb, seqs, use, 2, &o, 0, 0, &e) == 0 && mb.seq_lens[0] == 5 &&
	   strcmp(mb.finish_reasons[0], "stop") == 0, "a use beyond the sequence takes it whole, its finish kept");
	mb_free(&mb);

	is_int(mb_trained_tokens(&f.a, 5), 2, "A trains 2 of its 3 response tokens (mask 1 0 1)");
	is_int(mb_trained_tokens(&f.a, 3), 1, "its first 3 tokens train 1");
	is_int(mb_trained_tokens(&f.a, 2), 0, "its prompt trains none");
	is_int(mb_trained_tokens(&f.b, 3), 2, "B, no mask, trains its 2 response tokens");
	is_int(mb_trained_tokens(&f.a, 9), 2, "a use beyond A counts it whole, as mb_build takes it");

	/* a response from position 0: nothing predicts its first token */
	f.b.n_prompt = 0;
	const struct traj *one[] = { &f.b };
	ok(mb_build(&mb, one, NULL, 1, &o, 0, 0, &e) == 0 && mb.n_tokens == 2 && !mb.loss_mask[0] && mb.loss_mask[1],
	   "a sequence with no prompt: its first token untrained, its second trained (%s)", e.msg);
	ok(mb_check(&mb, &e) == 0, "and it meets check.h: %s", e.msg);
	is_int(mb_trained_tokens(&f.b, 2), 1, "and mb_trained_tokens says 1");
	mb_free(&mb);
	traj_id_free(&f.b.sequence_id);
}

static void dummy_tests(void)
{
	struct microbatch mb;
	struct err e = { 0 };
	struct mbbuild_opt o = { 16, 4, 9 };
	ok(mb_build(&mb, NULL, NULL, 0, &o, 3, 1, &e) == 0 && mb.n_tokens == 4 && mb.n_seqs == 0 &&
	   mb.n_seq_lens == 1 && mb.seq_lens[0] == 4 && !mb.ref_logprobs && !mb.logprobs_missing,
	   "no sequence: a dummy of one padding span of pad_multiple tokens (%s)", e.msg);
	int zero = 1;
	for (uint32_t i = 0; i < mb.n_tokens; i++)
		zero &= mb.input_ids[i] == MB_PAD_ID && mb.position_ids[i] == (int32_t)i && !mb.loss_mask[i] &&
			mb.temperatures[i] == 1.0f && mb.advantages[i] == 0;
	ok(zero, "its tokens padding, positions 0..3, masks 0, temperatures 1");
	ok(mb_check(&mb, &e) == 0 && mb.step == 9 && mb.rank == 3 && mb.index == 1, "it meets check.h: %s", e.msg);
	mb_free(&mb);
	o.pad_multiple = 0;
	ok(mb_build(&mb, NULL, NULL, 0, &o, 0, 0, &e) == 0 && mb.n_tokens == 1 && mb.seq_lens[0] == 1,
	   "without padding, a dummy of 1 token");
	mb_free(&mb);
	o.pad_multiple = 4, o.cap = 2;
	ok(mb_build(&mb, NULL, NULL, 0, &o, 0, 0, &e) == 0 && mb.n_tokens == 2 && mb.seq_lens[0] == 2,
	   "a capacity under pad_multiple: the dummy is the capacity");
	mb_free(&mb);
}

int main(void)
{
	whole_tests();
	cut_tests();
	dummy_tests();
	return tap_done();
}
