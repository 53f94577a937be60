/*
 * test_step: training steps on a tiny model. The same sequences packed
 * differently (one micro-batch, several in another order with a dummy,
 * one per sequence: other --seq-len and rank counts) give the same loss and
 * gradient for grpo, dapo and dr_grpo; a resumed run (from policy/step_1's
 * optimizer state, the weights saved in bf16) is bit-identical to one that
 * never stopped; a float32 checkpoint loads back with the same tensors; the
 * tokenizer files travel; a step with beta > 0 and no reference fails and
 * leaves the weights as they were; --mask-truncated and DONE's totals against
 * hand counts, and a masked step equal to the step without those sequences.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/ckpt.h"
#include "train/step.h"
#include "../tap.h"

#define XORSHIFT_SEED 0x853c49e6748fea9bull
#include "../xorshift.h"

static void tiny(struct model *m)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN2);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.HS = 4, c.V = 40, c.tied = 1, c.init_std = 0.3f;
	c.eps = 1e-5f;
	struct err e = { "" };
	if (model_create(m, &c, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
	model_init_random(m, 11, NULL);
}

/* One step over every rank of mbs, the totals counted from them (as DONE counts them). */
static int train_step(struct model *m, struct optim *op, const struct loss_opts *lo, int epochs,
                      const struct microbatch *mbs, size_t n, struct step_result *r, struct err *e)
{
	struct loss_totals tot = { 0, 0, 0 };
	step_count(mbs, n, &tot);
	return step_train(m, NULL, op, lo, &tot, epochs, mbs, n, NULL, NULL, r, e);
}

/* One sequence: prompt p tokens, then r response tokens. */
struct seq {
	int p, r;
	int ids[16];
	float adv, temp;
	float lp[16], ref[16];   /* per token, aligned with ids */
};

enum { NS = 6 };
static struct seq seqs[NS];

static void make_seqs(void)
{
	for (int s = 0; s < NS; s++) {
		struct seq *q = &seqs[s];
		q->p = 2 + s % 2, q->r = 3 + (s * 5) % 6;
		q->adv = (float)(urand() * 2 - 1);
		q->temp = s % 3 ? 1.0f : 0.7f;
		for (int t = 0; t < q->p + q->r; t++) {
			q->ids[t] = (int)(urand() * 40);
			q->lp[t] = (float)(-3.7 + 0.4 * (urand() - 0.5));
			q->ref[t] = (float)(-3.7 + 0.4 * (urand() - 0.5));
		}
	}
}

/* A micro-batch of the sequences idx (k of them) in capacity T (padding after), rank/index as given. */
static struct microbatch make_mb(const int *idx, int k, int T, int with_ref)
{
	struct microbatch mb;
	memset(&mb, 0, sizeof mb);
	mb.n_tokens = (uint32_t)T;
	mb.input_ids = calloc((size_t)T, 4);
	mb.position_ids = calloc((size_t)T, 4);
	mb.loss_mask = calloc((size_t)T, 1);
	mb.advantages = calloc((size_t)T, 4);
	mb.inference_logprobs = calloc((size_t)T, 4);
	mb.ref_logprobs = with_ref ? calloc((size_t)T, 4) : NULL;
	mb.temperatures = calloc((size_t)T, 4);
	mb.seq_lens = calloc((size_t)k + 1, 4);
	mb.sequence_ids = calloc((size_t)k + 1, sizeof *mb.sequence_ids);
	mb.group_ids = calloc((size_t)k + 1, sizeof *mb.group_ids);
	int at = 0;
	for (int j = 0; j < k; j++) {
		const struct seq *q = &seqs[idx[j]];
		int len = q->p + q->r;
		for (int t = 0; t < len; t++, at++) {
			mb.input_ids[at] = q->ids[t];
			mb.position_ids[at] = t;
			mb.loss_mask[at] = t >= q->p;
			mb.advantages[at] = q->adv;
			mb.inference_logprobs[at] = t >= q->p ? q->lp[t] : 0;
			if (with_ref)
				mb.ref_logprobs[at] = t >= q->p ? q->ref[t] : 0;
			mb.temperatures[at] = q->temp;
		}
		mb.seq_lens[j] = (uint32_t)len;
		mb.sequence_ids[j] = traj_id_num(idx[j]);
	}
	mb.n_seqs = (uint32_t)k;
	mb.n_seq_lens = (uint32_t)k;
	if (at < T) {
		mb.seq_lens[k] = (uint32_t)(T - at);
		mb.n_seq_lens++;
		for (int t = at; t < T; t++)
			mb.temperatures[t] = 1;
	}
	return mb;
}

/* Train one step of mbs on a fresh tiny model; its loss and gradient come back. */
static double train(const struct loss_opts *lo, struct microbatch *mbs, size_t n, float *grad, size_t *ng,
                    double *gnorm)
{
	struct model m;
	tiny(&m);
	struct optim_opts oo;
	optim_opts_default(&oo);
	oo.lr = 1e-3;
	struct optim op;
	struct err e = { "" };
	struct step_result r;
	optim_init(&op, &oo, m.w.n, &e);
	double loss = NAN;
	if (train_step(&m, &op, lo, 1, mbs, n, &r, &e) < 0)
		diag("%s", e.msg);
	else
		loss = r.first.loss;
	memcpy(grad, m.g.mem, m.g.n * sizeof *grad);
	*ng = m.g.n;
	*gnorm = r.opt.grad_norm;
	optim_free(&op);
	model_free(&m);
	return loss;
}

static void repacking(void)
{
	enum loss_agg aggs[] = { LOSS_AGG_GRPO, LOSS_AGG_DAPO, LOSS_AGG_DR_GRPO };
	struct model probe;
	tiny(&probe);
	size_t n = probe.w.n;
	model_free(&probe);
	float *g1 = malloc(n * 4), *g2 = malloc(n * 4), *g3 = malloc(n * 4);

	int all[NS] = { 0, 1, 2, 3, 4, 5 };
	struct microbatch one[1] = { make_mb(all, NS, 72, 1) };
	/* two ranks of two micro-batches each, in another order, one of them a dummy */
	int a[] = { 5, 2 }, b[] = { 0 }, c[] = { 4, 1, 3 };
	struct microbatch four[4] = { make_mb(a, 2, 24, 1), make_mb(b, 1, 24, 1), make_mb(c, 3, 32, 1),
	                              make_mb(NULL, 0, 32, 1) };
	struct microbatch six[NS];
	for (int s = 0; s < NS; s++)
		six[s] = make_mb(&all[NS - 1 - s], 1, 16, 1);

	for (int i = 0; i < 3; i++) {
		struct loss_opts lo;
		loss_opts_default(&lo);
		lo.agg = aggs[i], lo.max_len = 12, lo.beta = 0.05f, lo.entropy_coef = 0.01f;
		size_t ng;
		double n1, n2, n3;
		double l1 = train(&lo, one, 1, g1, &ng, &n1);
		double l2 = train(&lo, four, 4, g2, &ng, &n2);
		double l3 = train(&lo, six, NS, g3, &ng, &n3);
		double gmax = 0, d2 = 0, d3 = 0;
		for (size_t j = 0; j < ng; j++) {
			gmax = fmax(gmax, fabs(g1[j]));
			d2 = fmax(d2, fabs(g1[j] - g2[j]));
			d3 = fmax(d3, fabs(g1[j] - g3[j]));
		}
		ok(isfinite(l1) && fabs(l1 - l2) <= 1e-6 * fabs(l1) + 1e-9 && fabs(l1 - l3) <= 1e-6 * fabs(l1) + 1e-9,
		   "%s: same loss packed 3 ways (%.9g %.9g %.9g)", loss_agg_name(aggs[i]), l1, l2, l3);
		ok(gmax > 0 && d2 <= 1e-5 * gmax && d3 <= 1e-5 * gmax,
		   "%s: same gradient within fp32 tolerance (max |g| %.3g, diffs %.2g %.2g)", loss_agg_name(aggs[i]),
		   gmax, d2, d3);
		ok(fabs(n1 - n2) <= 1e-5 * n1 && fabs(n1 - n3) <= 1e-5 * n1, "%s: same grad norm", loss_agg_name(aggs[i]));
	}
	mb_free(&one[0]);
	for (int i = 0; i < 4; i++)
		mb_free(&four[i]);
	for (int i = 0; i < NS; i++)
		mb_free(&six[i]);
	free(g1);
	free(g2);
	free(g3);
}

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void checkpoints(void)
{
	const char *tmp = getenv("TMPDIR");
	char root[512], src[600], queue[600], p[700];
	snprintf(root, sizeof root, "%s/test_step.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(src, sizeof src, "%s/model", root);
	snprintf(queue, sizeof queue, "%s/policy", root);
	struct err e = { "" };
	struct model m0;
	tiny(&m0);
	mkdir(src, 0755);
	ok(model_write_dir(&m0, src, ST_F32, 0, &e) == 0, "input model written");
	snprintf(p, sizeof p, "%s/tokenizer.json", src);
	write_text(p, "{\"model\":{}}\n");
	model_free(&m0);

	ok(ckpt_publish_initial(queue, src, &e) == 0, "step_0 published: %s", e.msg);
	ok(ckpt_publish_initial(queue, src, &e) == 1, "step_0 is published once");
	snprintf(p, sizeof p, "%s/step_0/model.safetensors", queue);
	struct stat st;
	ok(stat(p, &st) == 0 && st.st_nlink == 2, "step_0 hard-links the input model's files");

	int all[NS] = { 0, 1, 2, 3, 4, 5 }, x[] = { 0, 2, 4 }, y[] = { 1, 3, 5 };
	struct microbatch s1[2] = { make_mb(x, 3, 40, 0), make_mb(y, 3, 40, 0) };
	struct microbatch s2[1] = { make_mb(all, NS, 72, 0) };
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.agg = LOSS_AGG_DAPO;
	struct optim_opts oo;
	optim_opts_default(&oo);
	oo.lr = 1e-2, oo.weight_decay = 0.01, oo.schedule = LR_COSINE, oo.total_steps = 5, oo.warmup_steps = 1;

	/* run A: step 0 → 1 → publish (bf16) → 2, never stopping */
	struct model a, b;
	struct optim oa, ob;
	struct step_result r;
	int resumed = -1;
	ok(ckpt_load(&a, &oa, &oo, queue, 0, &resumed, &e) == 0 && resumed == 0, "step_0 loads, with no optimizer state");
	ok(train_step(&a, &oa, &lo, 2, s1, 2, &r, &e) == 0 && r.epochs == 2, "step 1, two epochs: %s", e.msg);
	ok(r.first.tokens > 0 && r.opt.grad_norm > 0 && oa.step == 2, "it trained (%g tokens, |g| %g)",
	   r.first.tokens, r.opt.grad_norm);
	float *w1 = malloc(a.w.n * 4);
	memcpy(w1, a.w.mem, a.w.n * 4);
	ok(ckpt_publish(queue, 1, &a, &oa, 1, ST_BF16, 0, src, &e) == 0, "step_1 published in bf16: %s", e.msg);
	ok(ckpt_publish(queue, 1, &a, &oa, 1, ST_BF16, 0, src, &e) == 1, "an existing step is not replaced");
	snprintf(p, sizeof p, "%s/step_1/tokenizer.json", queue);
	ok(access(p, F_OK) == 0, "the tokenizer travels into step_1");
	int64_t latest = -1;
	ok(ckpt_latest(queue, 100, &latest, &e) == 0 && latest == 1, "newest step is 1");
	ok(train_step(&a, &oa, &lo, 1, s2, 1, &r, &e) == 0, "step 2 in the same process");

	/* run B: resumes from policy/step_1 */
	ok(ckpt_load(&b, &ob, &oo, queue, 1, &resumed, &e) == 0 && resumed == 1, "step_1 resumes with its optimizer state");
	ok(memcmp(b.w.mem, w1, a.w.n * 4) == 0, "the fp32 master weights come back exactly, though saved in bf16");
	ok(train_step(&b, &ob, &lo, 1, s2, 1, &r, &e) == 0, "step 2 after resuming");
	ok(memcmp(a.w.mem, b.w.mem, a.w.n * 4) == 0 && memcmp(oa.m, ob.m, a.w.n * 4) == 0 &&
	   memcmp(oa.v, ob.v, a.w.n * 4) == 0 && oa.step == ob.step, "resuming is bit-identical");

	/* the safetensors alone: bf16 rounding of step 1; a float32 checkpoint is exact */
	struct model c;
	char d1[160];
	snprintf(d1, sizeof d1, "%s/step_1", queue);
	ok(model_load(&c, d1, &e) == 0, "step_1 loads as a model directory");
	int same = 1;
	for (size_t i = 0; i < c.w.n; i++)
		same &= c.w.mem[i] == st_bf16_to_f32(st_f32_to_bf16(w1[i]));
	ok(same, "step_1's safetensors hold the bf16 rounding of the weights");
	model_free(&c);
	ok(ckpt_publish(queue, 2, &a, &oa, 1, ST_F32, 2000, NULL, &e) == 0, "step_2 published in float32, sharded");
	snprintf(d1, sizeof d1, "%s/step_2", queue);
	ok(model_load(&c, d1, &e) == 0 && c.w.n == a.w.n && memcmp(c.w.mem, a.w.mem, a.w.n * 4) == 0,
	   "a float32 checkpoint loads back with the same tensors");
	snprintf(p, sizeof p, "%s/step_2/model.safetensors.index.json", queue);
	ok(access(p, F_OK) == 0, "sharded with an index");
	model_free(&c);

	/* --keep 1: step_1 goes, step_2 (the newest) and step_0 stay */
	int removed = -1;
	ok(ckpt_prune(queue, 1, &removed, &e) == 0 && removed == 1, "prune keeping 1 removes one: %s", e.msg);
	snprintf(p, sizeof p, "%s/step_1", queue);
	ok(access(p, F_OK) != 0 && ckpt_exists(queue, 0, &e) == 1 && ckpt_exists(queue, 2, &e) == 1,
	   "step_1 is gone; step_0 and step_2 stay");
	ok(ckpt_prune(queue, 1, &removed, &e) == 0 && removed == 0, "pruning again removes nothing");

	/* beta > 0 without reference logprobs: refused, weights untouched */
	memcpy(w1, b.w.mem, b.w.n * 4);
	lo.beta = 0.1f;
	ok(train_step(&b, &ob, &lo, 1, s2, 1, &r, &e) < 0 && strstr(e.msg, "reference"), "beta without ref: %s", e.msg);
	ok(memcmp(w1, b.w.mem, b.w.n * 4) == 0, "a failed step leaves the weights");

	for (int i = 0; i < 2; i++)
		mb_free(&s1[i]);
	mb_free(&s2[0]);
	free(w1);
	optim_free(&oa);
	optim_free(&ob);
	model_free(&a);
	model_free(&b);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("could not remove %s", root);
}

/* --mask-truncated and the totals from DONE, against counts made by hand from make_seqs:
 * response lengths 3, 8, 7, 6, 5, 4 (33 loss tokens); sequences 1 and 5 finish by length. */
static void truncated_totals(void)
{
	int a[] = { 0, 1, 2 }, b[] = { 3, 4, 5 };
	struct microbatch mbs[2] = { make_mb(a, 3, 32, 1), make_mb(b, 3, 32, 1) };
	mbs[1].rank = 1;
	const char *why[2][3] = { { "stop", "length", NULL }, { "stop", NULL, "length" } };
	for (int i = 0; i < 2; i++) {
		mbs[i].finish_reasons = calloc(3, sizeof(char *));
		for (int j = 0; j < 3; j++)
			mbs[i].finish_reasons[j] = why[i][j] ? strdup(why[i][j]) : NULL;
	}
	struct loss_totals counted = { 0, 0, 0 }, cut = { 0, 0, 0 }, tot;
	step_count(mbs, 2, &counted);
	ok(counted.seqs == 6 && counted.tokens == 33 && counted.mbs == 2, "counted: 6 sequences, 33 loss tokens, 2");
	size_t unknown = step_mask_truncated(mbs, 2, &cut);
	ok(cut.seqs == 2 && cut.tokens == 8 + 4 && cut.mbs == 0, "masked: 2 sequences and their 8 + 4 tokens");
	is_int((long)unknown, 2, "the 2 sequences with no finish_reason counted, left whole");
	int left = 0, inside = 0;
	for (int i = 0; i < 2; i++)
		for (uint32_t t = 0; t < mbs[i].n_tokens; t++)
			left += mbs[i].loss_mask[t];
	for (int t = 5; t < 16; t++)   /* sequence 1: tokens 5..15 of the first micro-batch */
		inside += mbs[0].loss_mask[t];
	ok(left == 21 && inside == 0, "21 loss tokens left, none in sequence 1");

	struct done_manifest d;
	memset(&d, 0, sizeof d);
	d.step = 1, d.ranks = 2, d.micro_batches_per_rank = 1, d.sequences = 6, d.loss_tokens = 33;
	struct err e = { "" };
	ok(step_totals(&d, &cut, &tot, &e) == 0 && tot.seqs == 4 && tot.tokens == 21 && tot.mbs == 2,
	   "totals from DONE less the masked: B 4, N 21, M 2");
	ok(step_check("DONE", &d, &counted, &e) == 0, "DONE agrees with the micro-batches");
	d.loss_tokens = 34;
	ok(step_check("DONE", &d, &counted, &e) < 0 && strstr(e.msg, "says 34 loss tokens") &&
	   strstr(e.msg, "hold 33"), "and a DONE that does not is refused: %s", e.msg);
	d.loss_tokens = 33, d.dummies = 1;
	ok(step_check("DONE", &d, &counted, &e) < 0 && strstr(e.msg, "micro-batches"), "dummies too: %s", e.msg);
	d.loss_tokens = -1;
	ok(step_totals(&d, NULL, &tot, &e) < 0 && strstr(e.msg, "no loss_tokens"), "an older DONE: %s", e.msg);

	/* the masked step trains as the step without the two sequences (grpo: B and n_i; dapo: N) */
	int a2[] = { 0, 2 }, b2[] = { 3, 4 };
	struct microbatch kept[2] = { make_mb(a2, 2, 32, 1), make_mb(b2, 2, 32, 1) };
	kept[1].rank = 1;
	enum loss_agg aggs[] = { LOSS_AGG_GRPO, LOSS_AGG_DAPO };
	for (int k = 0; k < 2; k++) {
		struct loss_opts lo;
		loss_opts_default(&lo);
		lo.agg = aggs[k];
		lo.beta = 0.05f;
		struct step_result r1, r2;
		struct model m1, m2;
		struct optim o1, o2;
		struct optim_opts oo;
		optim_opts_default(&oo);
		tiny(&m1), tiny(&m2);
		optim_init(&o1, &oo, m1.w.n, &e), optim_init(&o2, &oo, m2.w.n, &e);
		struct loss_totals tk = { 0, 0, 0 };
		step_count(kept, 2, &tk);
		int rc = step_train(&m1, NULL, &o1, &lo, &tot, 1, mbs, 2, NULL, NULL, &r1, &e);
		rc |= step_train(&m2, NULL, &o2, &lo, &tk, 1, kept, 2, NULL, NULL, &r2, &e);
		double worst = 0;
		for (size_t i = 0; i < m1.g.n; i++)
			worst = fmax(worst, fabs((double)m1.g.mem[i] - m2.g.mem[i]));
		ok(rc == 0 && fabs(r1.first.loss - r2.first.loss) < 1e-7 && worst < 1e-6,
		   "%s: masked step = step without them (loss %.9g, %.9g; worst gradient difference %g)",
		   loss_agg_name(aggs[k]), r1.first.loss, r2.first.loss, worst);
		optim_free(&o1), optim_free(&o2), model_free(&m1), model_free(&m2);
	}
	for (int i = 0; i < 2; i++)
		mb_free(&mbs[i]), mb_free(&kept[i]);
}

/* The observer's copy of the trainer's logprobs at the step's start. */
static float start_lp[64];
static int keep_lp(void *ctx, const struct microbatch *mb, const float *logprob, struct err *e)
{
	memcpy(start_lp, logprob, mb->n_tokens * sizeof *logprob);
	return 0;
}

/* Sequences whose sampler gave no logprobs (logprobs_missing, their
 * inference_logprobs 0): the ratio is taken against the policy's own
 * logprobs at the step's start, never against the zeros, so the step equals
 * one whose sampler logprobs were the trainer's; counted in the result. */
static void missing_logprobs(void)
{
	int a[] = { 0, 1, 2 };
	for (int tis = 0; tis < 2; tis++) {
		struct microbatch miss = make_mb(a, 3, 48, 1), same = make_mb(a, 3, 48, 1);
		miss.logprobs_missing = calloc(3, 1);
		miss.logprobs_missing[1] = 1;
		uint32_t s1 = miss.seq_lens[0], e1 = s1 + miss.seq_lens[1];
		for (uint32_t t = s1; t < e1; t++)
			miss.inference_logprobs[t] = 0;
		struct loss_opts lo;
		loss_opts_default(&lo);
		lo.tis_cap = tis ? 2.0f : 0.0f;
		struct step_observer obs = { keep_lp, NULL, NULL };
		struct step_result r1, r2;
		struct model m1, m2;
		struct optim o1, o2;
		struct optim_opts oo;
		optim_opts_default(&oo);
		struct err e = { "" };
		struct loss_totals tot = { 0, 0, 0 };
		step_count(&miss, 1, &tot);
		tiny(&m1), tiny(&m2);
		optim_init(&o1, &oo, m1.w.n, &e), optim_init(&o2, &oo, m2.w.n, &e);
		int rc = step_train(&m1, NULL, &o1, &lo, &tot, 2, &miss, 1, &obs, NULL, &r1, &e);
		for (uint32_t t = s1; t < e1; t++)
			same.inference_logprobs[t] = same.loss_mask[t] ? start_lp[t] : 0;
		rc |= step_train(&m2, NULL, &o2, &lo, &tot, 2, &same, 1, NULL, NULL, &r2, &e);
		double worst = 0;
		for (size_t i = 0; i < m1.g.n; i++)
			worst = fmax(worst, fabs((double)m1.g.mem[i] - m2.g.mem[i]));
		ok(rc == 0 && r1.first.loss == r2.first.loss && r1.last.loss == r2.last.loss && worst == 0 &&
		   r1.first.ratio_min == r2.first.ratio_min && r1.first.ratio_max == r2.first.ratio_max,
		   "%s: a sequence without sampler logprobs trains as if the sampler were the policy at the "
		   "step's start (loss %.9g, %.9g; worst gradient difference %g)%s%s",
		   tis ? "TIS" : "no TIS", r1.first.loss, r2.first.loss, worst, rc ? ": " : "", rc ? e.msg : "");
		is_int(r1.no_sampler_seqs, 1, "%s: the step counts it", tis ? "TIS" : "no TIS");
		optim_free(&o1), optim_free(&o2), model_free(&m1), model_free(&m2);
		mb_free(&miss), mb_free(&same);
	}
}

int main(void)
{
	model_set_threads(1);
	make_seqs();
	repacking();
	checkpoints();
	truncated_totals();
	missing_logprobs();
	return tap_done();
}
