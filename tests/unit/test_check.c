/* The data invariants (data/check.h) one at a time: each refused with the
 * message that names the field and the position, at the last element of
 * its array (a loop that stops one short would miss it), and the values
 * just inside each bound taken (a logprob of 0, a temperature just above 0,
 * an id or version of -1 or 2^53 - 1, a loss on the token just after the
 * prompt). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/check.h"
#include "tap.h"

/* A scored trajectory of 2 prompt and 3 response tokens, every field set. */
struct tfix {
	int32_t pt[2], rt[3];
	float lp[3], ref[3], rw[2], sc[2];
	uint8_t rm[3];
	char ans[8], run[8], fin[8], nm0[8], nm1[8];
	char *names[2];
	struct traj t;
};

static struct traj *tfix_init(struct tfix *f)
{
	memset(f, 0, sizeof *f);
	f->pt[0] = 0, f->pt[1] = 7;   /* token id 0 is a token */
	f->rt[0] = 3, f->rt[1] = 4, f->rt[2] = 5;
	f->lp[0] = -0.5f, f->lp[1] = -0.25f, f->lp[2] = 0.0f;   /* a logprob of 0: probability 1 */
	f->ref[0] = -1.0f, f->ref[1] = 0.0f, f->ref[2] = -2.0f;
	f->rm[0] = 1, f->rm[1] = 0, f->rm[2] = 1;
	f->rw[0] = 1.0f, f->rw[1] = -3.0f;
	f->sc[0] = 1.0f, f->sc[1] = 0.0f;
	strcpy(f->ans, "72"), strcpy(f->run, "run-a"), strcpy(f->fin, "stop");
	strcpy(f->nm0, "correct"), strcpy(f->nm1, "format");
	f->names[0] = f->nm0, f->names[1] = f->nm1;
	struct traj *t = &f->t;
	t->prompt_tokens = f->pt, t->n_prompt = 2;
	t->response_tokens = f->rt, t->n_response = 3;
	t->logprobs = f->lp;
	t->response_mask = f->rm;
	t->answer = f->ans, t->run = f->run, t->finish_reason = f->fin;
	t->sequence_id = traj_id_num(0);
	t->group_id = traj_id_num(TRAJ_INT_MAX);   /* the largest JSON holds exactly */
	t->policy_version = 0;
	t->temperature = 0.7f;
	t->scored = 1;
	t->ref_logprobs = f->ref;
	t->rewards = f->rw, t->successes = f->sc, t->reward_names = f->names, t->n_rewards = 2;
	t->advantage = -0.5f;
	return t;
}

static void refused(int rc, const struct err *e, const char *want, const char *what)
{
	if (!ok(rc < 0 && strcmp(e->msg, want) == 0, "%s is refused: %s", what, want))
		diag("  got rc %d, \"%s\"", rc, rc < 0 ? e->msg : "");
}

static void taken(int rc, const struct err *e, const char *what)
{
	ok(rc == 0, "%s is taken%s%s", what, rc ? ": " : "", rc ? e->msg : "");
}

static void traj_tests(void)
{
	struct tfix f;
	struct err e = { 0 };
	struct traj *t = tfix_init(&f);
	taken(traj_check(t, &e), &e, "a scored trajectory with a logprob of 0, token id 0, ids 0 and 2^53 - 1");

	t = tfix_init(&f), f.pt[1] = -1;
	refused(traj_check(t, &e), &e, "prompt_tokens[1] is -1, but a token id is at least 0", "a prompt token id of -1");
	t = tfix_init(&f), f.rt[2] = -7;
	refused(traj_check(t, &e), &e, "response_tokens[2] is -7, but a token id is at least 0", "a response token id of -7");
	t = tfix_init(&f), f.pt[0] = -1;
	refused(traj_check(t, &e), &e, "prompt_tokens[0] is -1, but a token id is at least 0",
		"a first prompt token id of -1");

	t = tfix_init(&f), f.lp[2] = NAN;
	refused(traj_check(t, &e), &e, "logprobs[2] is NaN, not a finite number", "a NaN logprob");
	t = tfix_init(&f), f.lp[2] = INFINITY;
	refused(traj_check(t, &e), &e, "logprobs[2] is Infinity, not a finite number", "an infinite logprob");
	t = tfix_init(&f), f.lp[2] = -INFINITY;
	refused(traj_check(t, &e), &e, "logprobs[2] is -Infinity, not a finite number", "a logprob of -Infinity");
	t = tfix_init(&f), f.lp[2] = 0.5f;
	refused(traj_check(t, &e), &e, "logprobs[2] is 0.5, but a logprob is at most 0", "a logprob of 0.5");
	t = tfix_init(&f), f.lp[2] = 1e-30f;
	refused(traj_check(t, &e), &e, "logprobs[2] is 1e-30, but a logprob is at most 0",
		"a logprob just above 0");
	t = tfix_init(&f), t->logprobs = NULL;
	taken(traj_check(t, &e), &e, "a trajectory without logprobs (the sampler gave none)");

	t = tfix_init(&f), f.rm[2] = 2;
	refused(traj_check(t, &e), &e, "response_mask[2] is 2, not 0 or 1", "a response_mask of 2");
	t = tfix_init(&f), f.rm[0] = 255;
	refused(traj_check(t, &e), &e, "response_mask[0] is 255, not 0 or 1", "a first response_mask of 255");

	t = tfix_init(&f), t->temperature = 0.0f;
	refused(traj_check(t, &e), &e, "temperature is 0, not above 0", "a temperature of 0");
	t = tfix_init(&f), t->temperature = -2.0f;
	refused(traj_check(t, &e), &e, "temperature is -2, not above 0", "a temperature of -2");
	t = tfix_init(&f), t->temperature = NAN;
	refused(traj_check(t, &e), &e, "temperature is NaN, not a finite number", "a NaN temperature");
	t = tfix_init(&f), t->temperature = INFINITY;
	refused(traj_check(t, &e), &e, "temperature is Infinity, not a finite number", "an infinite temperature");
	t = tfix_init(&f), t->temperature = 1e-30f;
	taken(traj_check(t, &e), &e, "a temperature of 1e-30");

	t = tfix_init(&f), t->sequence_id = traj_id_num(-2);
	refused(traj_check(t, &e), &e, "sequence_id is -2, but an integer id is at least 0, or -1 for none",
		"a sequence_id of -2");
	t = tfix_init(&f), t->sequence_id = traj_id_none(), t->group_id = traj_id_num(-1), t->policy_version = -1;
	taken(traj_check(t, &e), &e, "ids and a policy_version of -1 (none)");
	t = tfix_init(&f), t->group_id = traj_id_num(TRAJ_INT_MAX + 1);
	refused(traj_check(t, &e), &e,
		"group_id is 9007199254740992, past 2^53 - 1, the largest integer JSON numbers hold exactly",
		"a group_id of 2^53");
	t = tfix_init(&f), t->policy_version = -2;
	refused(traj_check(t, &e), &e, "policy_version is -2, but a version is at least 0 (or -1 for none)",
		"a policy_version of -2");
	t = tfix_init(&f), t->policy_version = TRAJ_INT_MAX + 1;
	refused(traj_check(t, &e), &e,
		"policy_version is 9007199254740992, past 2^53 - 1, the largest integer JSON numbers hold exactly",
		"a policy_version of 2^53");
	t = tfix_init(&f), t->policy_version = TRAJ_INT_MAX;
	taken(traj_check(t, &e), &e, "a policy_version of 2^53 - 1");

	t = tfix_init(&f), f.ans[1] = (char)0xff;
	refused(traj_check(t, &e), &e, "answer is not UTF-8 (its byte 2, 0xff, begins no valid character)",
		"an answer with the byte 0xff");
	t = tfix_init(&f), f.run[4] = (char)0xc3;
	refused(traj_check(t, &e), &e, "run is not UTF-8 (its byte 5, 0xc3, begins no valid character)",
		"a run cut inside a character");
	t = tfix_init(&f), f.fin[0] = (char)0x80;
	refused(traj_check(t, &e), &e, "finish_reason is not UTF-8 (its byte 1, 0x80, begins no valid character)",
		"a finish_reason starting with a continuation byte");

	/* the scored fields */
	t = tfix_init(&f), f.ref[2] = 0.5f;
	refused(traj_check(t, &e), &e, "ref_logprobs[2] is 0.5, but a logprob is at most 0", "a ref_logprob of 0.5");
	t = tfix_init(&f), f.ref[2] = NAN;
	refused(traj_check(t, &e), &e, "ref_logprobs[2] is NaN, not a finite number", "a NaN ref_logprob");
	t = tfix_init(&f), f.nm1[0] = (char)0xfe;
	refused(traj_check(t, &e), &e, "reward_names[1] is not UTF-8 (its byte 1, 0xfe, begins no valid character)",
		"a reward name with the byte 0xfe");
	t = tfix_init(&f), f.rw[1] = -INFINITY;
	refused(traj_check(t, &e), &e, "rewards[1] is -Infinity, not a finite number", "a reward of -Infinity");
	t = tfix_init(&f), f.rw[1] = 5.0f;
	taken(traj_check(t, &e), &e, "a positive reward (not a logprob)");
	t = tfix_init(&f), t->advantage = INFINITY;
	refused(traj_check(t, &e), &e, "advantages is Infinity, not a finite number", "an infinite advantage");
	t = tfix_init(&f), t->advantage = 2.5f;
	taken(traj_check(t, &e), &e, "a positive advantage");
	t = tfix_init(&f), f.sc[1] = NAN;
	refused(traj_check(t, &e), &e, "successes[1] is NaN, not a finite number", "a NaN success");
	/* unscored, the scorer's fields are not read: a collector's record */
	t = tfix_init(&f), t->scored = 0, t->ref_logprobs = NULL, t->rewards = NULL, t->n_rewards = 0;
	taken(traj_check(t, &e), &e, "an unscored trajectory");
}

static void group_tests(void)
{
	struct tfix f[3];
	struct traj ts[3];
	struct err e = { 0 };
	for (int i = 0; i < 3; i++)
		ts[i] = *tfix_init(&f[i]);
	/* the fixtures' arrays are f[i]'s: change them through ts[i]'s pointers */
	struct group g = { traj_id_num(4), 3, ts };
	taken(group_check(&g, &e), &e, "a group of three");
	ts[2].temperature = -1.0f;
	refused(group_check(&g, &e), &e, "trajectory 2: temperature is -1, not above 0",
		"a group whose last trajectory has a temperature of -1");
	ts[2].temperature = 1.0f;
	f[1].lp[0] = 3.5f;
	refused(group_check(&g, &e), &e, "trajectory 1: logprobs[0] is 3.5, but a logprob is at most 0",
		"a group whose trajectory 1 has a logprob of 3.5");
	f[1].lp[0] = -3.5f;
	g.group_id = traj_id_num(-5);
	refused(group_check(&g, &e), &e, "group_id is -5, but an integer id is at least 0, or -1 for none",
		"a group_id of -5");
	g.group_id = traj_id_num(TRAJ_INT_MAX + 1);
	refused(group_check(&g, &e), &e,
		"group_id is 9007199254740992, past 2^53 - 1, the largest integer JSON numbers hold exactly",
		"a group_id of 2^53");
	g.group_id = traj_id_none();
	taken(group_check(&g, &e), &e, "a group without an id");
}

/* Two sequences of 4 tokens (prompts of 2 and 1) and a padding span of 2:
 *   position_ids 0 1 2 3 | 0 1 2 3 | 0 1
 *   loss_mask    0 0 1 1 | 0 1 0 1 | 0 0
 * every field set. */
struct mfix {
	int32_t ids[10], pos[10];
	uint8_t mask[10], missing[2];
	float adv[10], lp[10], ref[10], temp[10], rw[2];
	uint32_t lens[3], plens[2];
	struct traj_id sids[2], gids[2];
	int64_t pv[2];
	char fin0[8], fin1[8], run[8];
	char *fins[2];
	struct microbatch mb;
};

static struct microbatch *mfix_init(struct mfix *f)
{
	static const int32_t pos[10] = { 0, 1, 2, 3, 0, 1, 2, 3, 0, 1 };
	static const uint8_t mask[10] = { 0, 0, 1, 1, 0, 1, 0, 1, 0, 0 };
	memset(f, 0, sizeof *f);
	for (int i = 0; i < 10; i++) {
		f->ids[i] = i < 8 ? 10 + i : 0;
		f->pos[i] = pos[i];
		f->mask[i] = mask[i];
		f->adv[i] = i < 4 ? 1.5f : i < 8 ? -0.5f : 0.0f;
		f->lp[i] = mask[i] ? -0.25f : 0.0f;
		f->ref[i] = mask[i] ? -0.5f : 0.0f;
		f->temp[i] = i < 8 ? 0.7f : 1.0f;
	}
	f->lens[0] = 4, f->lens[1] = 4, f->lens[2] = 2;
	f->plens[0] = 2, f->plens[1] = 1;
	f->sids[0] = traj_id_num(0), f->sids[1] = traj_id_num(TRAJ_INT_MAX);
	f->gids[0] = traj_id_num(3), f->gids[1] = traj_id_none();
	f->pv[0] = 0, f->pv[1] = -1;
	f->rw[0] = 1.0f, f->rw[1] = 2.0f;
	f->missing[0] = 0, f->missing[1] = 1;
	strcpy(f->fin0, "stop"), strcpy(f->fin1, "length"), strcpy(f->run, "run-a");
	f->fins[0] = f->fin0, f->fins[1] = f->fin1;
	struct microbatch *mb = &f->mb;
	mb->n_tokens = 10;
	mb->input_ids = f->ids, mb->position_ids = f->pos, mb->loss_mask = f->mask;
	mb->advantages = f->adv, mb->inference_logprobs = f->lp, mb->ref_logprobs = f->ref, mb->temperatures = f->temp;
	mb->n_seq_lens = 3, mb->seq_lens = f->lens, mb->n_seqs = 2;
	mb->sequence_ids = f->sids, mb->group_ids = f->gids;
	mb->prompt_lens = f->plens, mb->policy_versions = f->pv, mb->rewards = f->rw;
	mb->finish_reasons = f->fins, mb->logprobs_missing = f->missing;
	mb->step = 0;
	mb->run = f->run;
	return mb;
}

static void mb_field_tests(void)
{
	struct mfix f;
	struct err e = { 0 };
	struct microbatch *mb = mfix_init(&f);
	taken(mb_check(mb, &e), &e, "a micro-batch of two sequences and a padding span");

	mb = mfix_init(&f), f.lens[2] = 1;
	refused(mb_check(mb, &e), &e, "seq_lens sum to 9, micro-batch has 10 tokens", "seq_lens one short");
	mb = mfix_init(&f), f.lens[2] = 3;
	refused(mb_check(mb, &e), &e, "seq_lens sum to 11, micro-batch has 10 tokens", "seq_lens one over");
	mb = mfix_init(&f), mb->n_seqs = 4;
	refused(mb_check(mb, &e), &e, "4 sequence_ids for 3 seq_lens", "more sequences than seq_lens");
	mb = mfix_init(&f), mb->n_seqs = 1;
	refused(mb_check(mb, &e), &e, "3 seq_lens for 1 sequences: only one padding span may follow them",
		"two padding spans");
	mb = mfix_init(&f), f.adv[9] = NAN;
	refused(mb_check(mb, &e), &e, "advantages[9] is NaN, not a finite number", "a NaN advantage on padding");
	mb = mfix_init(&f), f.adv[3] = 4.0f;
	taken(mb_check(mb, &e), &e, "an advantage of 4");
	mb = mfix_init(&f), f.lp[9] = 0.5f;
	refused(mb_check(mb, &e), &e, "inference_logprobs[9] is 0.5, but a logprob is at most 0",
		"an inference_logprob of 0.5");
	mb = mfix_init(&f), f.ref[9] = 0.25f;
	refused(mb_check(mb, &e), &e, "ref_logprobs[9] is 0.25, but a logprob is at most 0", "a ref_logprob of 0.25");
	mb = mfix_init(&f), mb->ref_logprobs = NULL;
	taken(mb_check(mb, &e), &e, "a micro-batch without ref_logprobs");
	mb = mfix_init(&f), f.rw[1] = INFINITY;
	refused(mb_check(mb, &e), &e, "rewards[1] is Infinity, not a finite number", "an infinite reward");
	mb = mfix_init(&f), f.ids[9] = -1;
	refused(mb_check(mb, &e), &e, "input_ids[9] is -1, but a token id is at least 0", "an input id of -1");
	mb = mfix_init(&f), f.mask[9] = 2;
	refused(mb_check(mb, &e), &e, "loss_mask[9] is 2, not 0 or 1", "a loss_mask of 2");
	mb = mfix_init(&f), f.missing[1] = 2;
	refused(mb_check(mb, &e), &e, "logprobs_missing[1] is 2, not 0 or 1", "a logprobs_missing of 2");
	mb = mfix_init(&f), f.temp[9] = 0.0f;
	refused(mb_check(mb, &e), &e, "temperatures[9] is 0, not above 0", "a temperature of 0 on padding");
	mb = mfix_init(&f), f.temp[0] = -0.5f;
	refused(mb_check(mb, &e), &e, "temperatures[0] is -0.5, not above 0", "a first temperature of -0.5");
	mb = mfix_init(&f), f.temp[9] = -INFINITY;
	refused(mb_check(mb, &e), &e, "temperatures[9] is -Infinity, not a finite number",
		"a temperature of -Infinity");

	mb = mfix_init(&f), mb->step = -2;
	refused(mb_check(mb, &e), &e, "step is -2, but a version is at least 0 (or -1 for none)", "a step of -2");
	mb = mfix_init(&f), mb->step = TRAJ_INT_MAX + 1;
	refused(mb_check(mb, &e), &e,
		"step is 9007199254740992, past 2^53 - 1, the largest integer JSON numbers hold exactly", "a step of 2^53");
	mb = mfix_init(&f), f.run[0] = (char)0xff;
	refused(mb_check(mb, &e), &e, "run is not UTF-8 (its byte 1, 0xff, begins no valid character)",
		"a run with the byte 0xff");
	mb = mfix_init(&f), f.fin1[2] = (char)0xff;
	refused(mb_check(mb, &e), &e, "finish_reasons[1] is not UTF-8 (its byte 3, 0xff, begins no valid character)",
		"a finish reason with the byte 0xff");
	mb = mfix_init(&f), f.sids[1] = traj_id_num(-2);
	refused(mb_check(mb, &e), &e, "sequence_ids[1] is -2, but an integer id is at least 0, or -1 for none",
		"a sequence_id of -2");
	mb = mfix_init(&f), f.gids[1] = traj_id_num(TRAJ_INT_MAX + 1);
	refused(mb_check(mb, &e), &e,
		"group_ids[1] is 9007199254740992, past 2^53 - 1, the largest integer JSON numbers hold exactly",
		"a group_id of 2^53");
	mb = mfix_init(&f), f.pv[1] = -3;
	refused(mb_check(mb, &e), &e, "policy_versions[1] is -3, but a version is at least 0 (or -1 for none)",
		"a policy_version of -3");
	/* format 1.0: none of the per-sequence fields */
	mb = mfix_init(&f);
	mb->prompt_lens = NULL, mb->policy_versions = NULL, mb->rewards = NULL, mb->finish_reasons = NULL;
	mb->logprobs_missing = NULL, mb->sequence_ids = NULL, mb->group_ids = NULL, mb->run = NULL;
	taken(mb_check(mb, &e), &e, "a micro-batch of format 1.0 (no per-sequence fields)");
}

static void mb_span_tests(void)
{
	struct mfix f;
	struct err e = { 0 };
	struct microbatch *mb;

	mb = mfix_init(&f), f.lens[0] = 0, f.lens[1] = 8;
	refused(mb_check(mb, &e), &e, "seq_lens[0] is 0", "an empty sequence");
	mb = mfix_init(&f), f.plens[1] = 5;
	refused(mb_check(mb, &e), &e, "prompt_lens[1] is 5, more than seq_lens[1] 4", "a prompt longer than its sequence");
	mb = mfix_init(&f), f.plens[0] = 4, f.mask[2] = f.mask[3] = 0;
	taken(mb_check(mb, &e), &e, "a sequence all prompt (truncated), its loss_mask 0");
	mb = mfix_init(&f), f.plens[0] = 3;
	refused(mb_check(mb, &e), &e, "loss_mask[2] is 1 on a prompt token of sequence 0",
		"a loss on the last prompt token");
	mb = mfix_init(&f), f.mask[1] = 1;
	refused(mb_check(mb, &e), &e, "loss_mask[1] is 1 on a prompt token of sequence 0", "a loss on a prompt token");
	mb = mfix_init(&f), f.mask[4] = 1;
	refused(mb_check(mb, &e), &e, "loss_mask[4] is 1 on the first token of sequence 1",
		"a loss on the second sequence's first token");
	mb = mfix_init(&f), f.mask[9] = 1;
	refused(mb_check(mb, &e), &e, "loss_mask[9] is 1 on padding of padding span 2", "a loss on padding");
	mb = mfix_init(&f), mb->prompt_lens = NULL, f.mask[1] = 1;
	taken(mb_check(mb, &e), &e, "without prompt_lens (format 1.0), a loss on token 1");
	mb = mfix_init(&f), mb->prompt_lens = NULL, f.mask[4] = 1;
	refused(mb_check(mb, &e), &e, "loss_mask[4] is 1 on the first token of sequence 1",
		"and without prompt_lens, still not on a sequence's first token");

	mb = mfix_init(&f), f.pos[4] = 4;
	refused(mb_check(mb, &e), &e, "position_ids[4] is 4, expected 0 (sequence 1 starts at 4)",
		"position_ids not restarting at the second sequence");
	mb = mfix_init(&f), f.pos[7] = 4;
	refused(mb_check(mb, &e), &e, "position_ids[7] is 4, expected 3 (sequence 1 starts at 4)",
		"position_ids skipping at a sequence's end");
	mb = mfix_init(&f), f.pos[8] = 8;
	refused(mb_check(mb, &e), &e, "position_ids[8] is 8, expected 0 (padding span 2 starts at 8)",
		"position_ids not restarting in the padding span");
	mb = mfix_init(&f), f.pos[9] = 0;
	refused(mb_check(mb, &e), &e, "position_ids[9] is 0, expected 1 (padding span 2 starts at 8)",
		"position_ids not counting up in the padding span");
	mb = mfix_init(&f), mb->position_ids = NULL;
	taken(mb_check(mb, &e), &e, "a micro-batch without position_ids");
}

int main(void)
{
	traj_tests();
	group_tests();
	mb_field_tests();
	mb_span_tests();
	return tap_done();
}
