/*
 * test_step: training steps on a tiny model. The same sequences packed
 * differently (one micro-batch, several in another order with a dummy,
 * one per sequence: other --seq-len and rank counts) give the same loss and
 * gradient for grpo, dapo and dr_grpo; a resumed run (from policy/step_1's
 * optimizer state, the weights saved in bf16) is bit-identical to one that
 * never stopped; a float32 checkpoint loads back with the same tensors; the
 * tokenizer files travel; a step with beta > 0 and no reference fails and
 * leaves the weights as they were; --mask-truncated and DONE's totals against
 * hand counts, and a masked step equal to the step without those sequences;
 * sequences without sampler logprobs; reading a step's spool files (which,
 * in what order, what is refused, every file system call failing); the
 * ranks' gradients summed as --rank processes sum them; failed exchanges,
 * observers and optimizer steps; what a step reports; TIS's ℓ_old and
 * ℓ_behav; the entropy bonus's gradient; weight decay on the matrices
 * alone or on every tensor (--weight-decay-on).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"
#include "data/sfile.h"
#include "train/ckpt.h"
#include "train/step.h"
#include "../tap.h"

#define XORSHIFT_SEED 0x853c49e6748fea9bull
#include "../xorshift.h"

static void tiny_tied(struct model *m, int tied)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN2);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.HS = 4, c.V = 40, c.tied = tied, c.init_std = 0.3f;
	c.eps = 1e-5f;
	struct err e = { 0 };
	if (model_create(m, &c, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
	model_init_random(m, 11, NULL);
}

static void tiny(struct model *m)
{
	tiny_tied(m, 1);
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
			mb.temperatures[t] = 1, mb.position_ids[t] = t - at;
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
	struct err e = { 0 };
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
	struct err e = { 0 };
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
	/* rank by rank, as a --rank process counts the others' */
	size_t unknown = step_mask_truncated(mbs, 1, &cut);
	int rank1 = 0;
	for (uint32_t t = 0; t < mbs[1].n_tokens; t++)
		rank1 += mbs[1].loss_mask[t];
	ok(cut.seqs == 1 && cut.tokens == 8 && unknown == 1 && rank1 == 6 + 5 + 4,
	   "rank 0's micro-batch: its sequence 1 and 8 tokens, 1 sequence unknown; rank 1's 15 tokens untouched");
	unknown += step_mask_truncated(mbs + 1, 1, &cut);
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
	struct err e = { 0 };
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
	/* three micro-batches a rank, one a dummy: M = 2·3 − 1; nothing masked */
	struct loss_totals t2;
	d.loss_tokens = 33, d.micro_batches_per_rank = 3;
	ok(step_totals(&d, NULL, &t2, &e) == 0 && t2.seqs == 6 && t2.tokens == 33 && t2.mbs == 5,
	   "nothing masked: B 6, N 33, M 5 (2 ranks of 3, a dummy)");
	struct loss_totals five = { 6, 33, 5 };
	ok(step_check("DONE", &d, &five, &e) == 0, "and the micro-batches that hold them agree");
	d.loss_tokens = 0;
	ok(step_totals(&d, NULL, &t2, &e) == 0 && t2.tokens == 0, "a DONE of 0 loss tokens is one that counted them");
	ok(step_check("DONE", &d, &five, &e) < 0 && strstr(e.msg, "says 0 loss tokens, and the micro-batches of every "
	   "rank hold 33"), "and micro-batches that hold some disagree: %s", e.msg);
	d.loss_tokens = 1;
	ok(step_check("DONE", &d, &five, &e) < 0 && strstr(e.msg, "says 1 loss token, and"), "one token: %s", e.msg);
	d.loss_tokens = 33, d.sequences = 1;
	ok(step_check("DONE", &d, &five, &e) < 0 && strstr(e.msg, "says 1 sequence, and the micro-batches of every "
	   "rank hold 6"), "one sequence: %s", e.msg);
	d.sequences = 2;
	ok(step_check("DONE", &d, &five, &e) < 0 && strstr(e.msg, "says 2 sequences, and"), "two: %s", e.msg);

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
	for (int k = 0; k < 4; k++) {
		int tis = k % 2, which = k / 2;   /* sequence 1, then the first */
		struct microbatch miss = make_mb(a, 3, 48, 1), same = make_mb(a, 3, 48, 1);
		miss.logprobs_missing = calloc(3, 1);
		miss.logprobs_missing[1 - which] = 1;
		uint32_t s1 = which ? 0 : miss.seq_lens[0], e1 = s1 + miss.seq_lens[1 - which];
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
		struct err e = { 0 };
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
		   "%s: sequence %d, without sampler logprobs, trains as if the sampler were the policy at the "
		   "step's start (loss %.9g, %.9g; worst gradient difference %g)%s%s", tis ? "TIS" : "no TIS",
		   1 - which, r1.first.loss, r2.first.loss, worst, rc ? ": " : "", rc ? e.msg : "");
		is_int(r1.no_sampler_seqs, 1, "%s: the step counts it (sequence %d)", tis ? "TIS" : "no TIS", 1 - which);
		optim_free(&o1), optim_free(&o2), model_free(&m1), model_free(&m2);
		mb_free(&miss), mb_free(&same);
	}
}

/* ---- reading a step's micro-batches ---- */

/* mbs (k of them), then g when not NULL, as the spool file dir/name: 0 or -1. */
static int write_spool(const char *dir, const char *name, const struct microbatch *mbs, int k, const struct group *g)
{
	struct err e = { 0 };
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (fsys_mkdirs(dir, &e) < 0) {
		diag("%s", e.msg);
		return -1;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct sfile_writer w;
	int rc = sfile_writer_init(&w, sfile_sink_fd, (void *)(intptr_t)fd, 1, &e);
	for (int i = 0; i < k && rc == 0; i++)
		rc = sfile_write_mb(&w, &mbs[i], &e);
	if (rc == 0 && g)
		rc = sfile_write_group(&w, g, &e);
	if (rc == 0)
		rc = sfile_writer_finish(&w, &e);
	sfile_writer_free(&w);
	close(fd);
	if (rc < 0)
		diag("%s: %s", path, e.msg);
	return rc;
}

/* One sequence (index % NS) in 16 tokens, as grpo-pack labels it for step and rank. */
static struct microbatch spool_mb(int64_t step, int rank, int index)
{
	int s = index % NS;
	struct microbatch mb = make_mb(&s, 1, 16, 1);
	mb.step = step, mb.rank = rank, mb.index = index;
	return mb;
}

/* Writes k micro-batches of spool_mb(step, rank, from...) as dir/name. */
static int write_mbs(const char *dir, const char *name, int64_t step, int rank, int from, int k)
{
	struct microbatch *v = calloc((size_t)k, sizeof *v);
	for (int i = 0; i < k; i++)
		v[i] = spool_mb(step, rank, from + i);
	int rc = write_spool(dir, name, v, k, NULL);
	for (int i = 0; i < k; i++)
		mb_free(&v[i]);
	free(v);
	return rc;
}

/* mbs hold exactly the (rank, index) pairs of want (n), in that order, each with its sequence's tokens. */
static int read_as(const struct microbatch *mbs, size_t n, const int (*want)[2], size_t nwant)
{
	if (n != nwant)
		return 0;
	for (size_t j = 0; j < n; j++) {
		const struct seq *q = &seqs[want[j][1] % NS];
		if (mbs[j].rank != want[j][0] || mbs[j].index != want[j][1] || mbs[j].n_tokens != 16 ||
		    mbs[j].n_seqs != 1 || mbs[j].seq_lens[0] != (uint32_t)(q->p + q->r))
			return 0;
		for (int t = 0; t < q->p + q->r; t++)
			if (mbs[j].input_ids[t] != q->ids[t] || mbs[j].loss_mask[t] != (t >= q->p))
				return 0;
	}
	return 1;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void one_group(struct group *g)
{
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_num(1);
	g->n = 1;
	g->trajs = calloc(1, sizeof *g->trajs);
	struct traj *t = &g->trajs[0];
	traj_init(t);
	t->n_prompt = 1, t->n_response = 1;
	t->prompt_tokens = malloc(4), t->response_tokens = malloc(4), t->logprobs = malloc(4);
	t->prompt_tokens[0] = 1, t->response_tokens[0] = 2, t->logprobs[0] = -0.5f;
	t->sequence_id = traj_id_num(1), t->group_id = traj_id_num(1);
}

/*
 * step_read: every rank's files, rank by rank and in name order, or one
 * rank's; only the .zst files that are not dot-names; a micro-batch that
 * grpo-pack made for another step or rank refused (one that names no step
 * taken), and a group; every failure leaves nothing read.
 */
/* A queue whose step directory fits in PATH_MAX but whose rank directory does
 * not: the read fails saying so. Made by walking down with chdir, as no one
 * path may name it. */
static void long_queue(const char *root)
{
	char cwd[PATH_MAX], q[PATH_MAX + 64], name[201];
	if (!getcwd(cwd, sizeof cwd) || chdir(root) != 0) {
		ok(0, "into %s", root);
		return;
	}
	memset(name, 'q', 200), name[200] = '\0';
	size_t len = strlen(root);
	snprintf(q, sizeof q, "%s", root);
	int w = 0;
	/* down to a queue of PATH_MAX - 12 bytes: QUEUE/step_1 is 4091, QUEUE/step_1/rank_0 4098 */
	while (!w && len + 1 + 200 <= PATH_MAX - 12) {
		w = mkdir(name, 0755) != 0 || chdir(name) != 0;
		len += 201, strcat(q, "/"), strcat(q, name);
	}
	size_t last = PATH_MAX - 12 - len - 1;
	name[last] = '\0';
	w = w || mkdir(name, 0755) != 0 || chdir(name) != 0 || mkdir("step_1", 0755) != 0 ||
	    mkdir("step_1/rank_0", 0755) != 0;
	strcat(q, "/"), strcat(q, name);
	struct err e = { 0 };
	struct microbatch *mbs;
	size_t n;
	int rc = w ? 0 : step_read(q, 1, -1, &mbs, &n, &e);
	ok(!w && strlen(q) == PATH_MAX - 12 && rc < 0 && n == 0 && strstr(e.msg, "path too long"),
	   "a rank directory's path longer than PATH_MAX: the read fails saying so (...%s)",
	   e.msg + (strlen(e.msg) > 40 ? strlen(e.msg) - 40 : 0));
	if (chdir(cwd) != 0)
		diag("could not go back to %s", cwd);
}

static void reading(void)
{
	const char *tmp = getenv("TMPDIR");
	char root[512], q[600], d[700];
	snprintf(root, sizeof root, "%s/test_step_read.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(q, sizeof q, "%s/batches", root);
	int w = 0;
	/* step 3: rank 0 two files (the second's micro-batch names no step), rank 1 seventeen micro-batches
	 * in one file (past the 16 read before the array grows), rank 2 one; files no reader reads */
	snprintf(d, sizeof d, "%s/step_3/rank_0", q);
	w |= write_mbs(d, "mb_000.zst", 3, 0, 0, 2) | write_mbs(d, "mb_001.zst", 0, 0, 2, 1);
	snprintf(d, sizeof d, "%s/step_3/rank_0/.mb_002.zst", q);
	w |= write_text(d, "a temporary, not yet renamed\n");
	snprintf(d, sizeof d, "%s/step_3/rank_0/mb_002.zst.tmp", q);
	w |= write_text(d, "not a spool file\n");
	snprintf(d, sizeof d, "%s/step_3/rank_0/zst", q);
	w |= write_text(d, "not a spool file\n");
	snprintf(d, sizeof d, "%s/step_3/rank_1", q);
	w |= write_mbs(d, "mb_000.zst", 3, 1, 0, 17);
	snprintf(d, sizeof d, "%s/step_3/rank_2", q);
	w |= write_mbs(d, "mb_000.zst", 3, 2, 0, 1);
	/* refused: another step's micro-batch after one of this step's, another rank's, a group */
	snprintf(d, sizeof d, "%s/step_5/rank_0", q);
	w |= write_mbs(d, "mb_000.zst", 5, 0, 0, 1);
	struct microbatch two[2] = { spool_mb(5, 0, 1), spool_mb(6, 0, 2) };
	w |= write_spool(d, "mb_001.zst", two, 2, NULL);
	snprintf(d, sizeof d, "%s/step_6/rank_0", q);
	w |= write_mbs(d, "mb_000.zst", 6, 1, 0, 1);
	struct group g;
	one_group(&g);
	snprintf(d, sizeof d, "%s/step_7/rank_0", q);
	struct microbatch seven = spool_mb(7, 0, 0);
	w |= write_spool(d, "mb_000.zst", &seven, 1, &g);
	mb_free(&seven);
	snprintf(d, sizeof d, "%s/step_8/rank_0", q);
	w |= fsys_mkdirs(d, &(struct err){ 0 });
	snprintf(d, sizeof d, "%s/step_8/rank_0/mb_000.zst", q);
	w |= write_text(d, "not a spool file\n");
	mb_free(&two[0]), mb_free(&two[1]);
	group_free(&g);
	ok(w == 0, "the spool written");

	int all[21][2] = { { 0, 0 }, { 0, 1 }, { 0, 2 } };
	for (int i = 0; i < 17; i++)
		all[3 + i][0] = 1, all[3 + i][1] = i;
	all[20][0] = 2, all[20][1] = 0;
	struct err e = { 0 };
	struct microbatch *mbs;
	size_t n;
	int fds = open_fds();
	int rc = step_read(q, 3, -1, &mbs, &n, &e);
	ok(rc == 0 && read_as(mbs, n, all, 21), "every rank: 21 micro-batches, rank by rank, each rank's files in "
	   "name order, no other file read (%zu read)%s%s", n, rc ? ": " : "", rc ? e.msg : "");
	step_free_batches(mbs, n);
	ok(fds < 0 || open_fds() == fds, "every file read is closed (%d descriptors, %d before)", open_fds(), fds);
	rc = step_read(q, 3, 1, &mbs, &n, &e);
	ok(rc == 0 && read_as(mbs, n, all + 3, 17), "--rank 1: its 17 micro-batches only (%zu)", n);
	step_free_batches(mbs, n);
	rc = step_read(q, 3, 0, &mbs, &n, &e);
	ok(rc == 0 && read_as(mbs, n, all, 3), "--rank 0: its 3 only (%zu)", n);
	step_free_batches(mbs, n);
	rc = step_read(q, 3, 7, &mbs, &n, &e);
	ok(rc == 0 && n == 0, "a rank the step does not have: none");
	step_free_batches(mbs, n);
	rc = step_read(q, 4, -1, &mbs, &n, &e);
	ok(rc == 0 && n == 0, "a step not there: none");
	step_free_batches(mbs, n);

	/* each file system call failing in turn (as a bad disk would fail it) */
	int calls = 0, clean = 1;
	for (long k = 1; k < 50; k++) {
		fsys_test_fail_at(k, EIO);
		mbs = (struct microbatch *)&calls, n = 99;
		rc = step_read(q, 3, -1, &mbs, &n, &e);
		if (rc == 0) {
			step_free_batches(mbs, n);
			break;
		}
		calls++;
		if (!(rc < 0 && !mbs && n == 0 && strstr(e.msg, q))) {
			diag("call %ld failing: rc %d, %zu micro-batches left: %s", k, rc, n, e.msg);
			clean = 0;
		}
	}
	fsys_test_fail_at(0, EIO);
	ok(calls == 8 && clean, "each of its %d file system calls (list the ranks, each rank, open each of 4 files) "
	   "failing fails the read, naming the path, nothing left read", calls);

	rc = step_read(q, 5, -1, &mbs, &n, &e);
	ok(rc < 0 && !mbs && n == 0 && strstr(e.msg, "mb_001.zst: record 2: a micro-batch that grpo-pack made for "
	   "step 6, rank 0, found in step 5, rank 0"), "another step's micro-batch refused, the step's read before "
	   "it let go: %s", e.msg);
	rc = step_read(q, 6, -1, &mbs, &n, &e);
	ok(rc < 0 && n == 0 && strstr(e.msg, "made for step 6, rank 1, found in step 6, rank 0"),
	   "another rank's refused: %s", e.msg);
	rc = step_read(q, 7, -1, &mbs, &n, &e);
	ok(rc < 0 && n == 0 && strstr(e.msg, "mb_000.zst: record 2: a group of trajectories"), "a group refused: %s",
	   e.msg);
	rc = step_read(q, 8, -1, &mbs, &n, &e);
	ok(rc < 0 && n == 0 && strstr(e.msg, "mb_000.zst"), "a file that is not a spool file: %s", e.msg);
	long_queue(root);

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("could not remove %s", root);
}

/* ---- the ranks' gradients, the exchange, failures, what a step reports ---- */

/* A step_reduce of one process: its gradient is the sum (kept in g), or it fails. */
struct one_rank {
	float *g;
	int fail;
};

static int reduce_one(void *ctx, int epoch, const float *g, float *sum, size_t n, struct loss_stats *st,
                      struct err *e)
{
	struct one_rank *k = ctx;
	(void)epoch, (void)st;
	if (k->fail)
		return err_set(e, "rank 1 did not answer");
	memcpy(k->g, g, n * sizeof *g);
	memcpy(sum, g, n * sizeof *g);
	return 0;
}

static int fail_second(void *ctx, const struct microbatch *mb, const float *logprob, struct err *e)
{
	int *calls = ctx;
	(void)mb, (void)logprob;
	return ++*calls == 2 ? err_set(e, "debug table: disk full") : 0;
}

/*
 * mbs (n, rank by rank) trained in one process: the same bits as each
 * rank's gradient on its own (through an exchange of one process) summed
 * from zeros in rank order, as --rank processes exchange them. *zeros: how
 * many of the sum are exactly 0.
 */
static int summed_as_ranks(const struct microbatch *mbs, size_t n, int tied, const struct loss_opts *lo,
                           size_t *zeros)
{
	struct loss_totals tot = { 0, 0, 0 };
	step_count(mbs, n, &tot);
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct err e = { 0 };
	struct step_result r;
	struct model m, mk;
	struct optim op, ok_;
	tiny_tied(&m, tied);
	optim_init(&op, &oo, m.w.n, &e);
	int rc = step_train(&m, NULL, &op, lo, &tot, 1, mbs, n, NULL, NULL, &r, &e);
	size_t ng = m.g.n;
	float *want = calloc(ng, sizeof *want), *g = malloc(ng * sizeof *g);
	struct one_rank one = { g, 0 };
	struct step_reduce red = { reduce_one, &one };
	for (size_t i = 0, end; i < n; i = end) {
		for (end = i + 1; end < n && mbs[end].rank == mbs[i].rank; end++)
			;
		tiny_tied(&mk, tied);
		optim_init(&ok_, &oo, mk.w.n, &e);
		rc |= step_train(&mk, NULL, &ok_, lo, &tot, 1, mbs + i, end - i, NULL, &red, &r, &e);
		for (size_t j = 0; j < ng; j++)
			want[j] += g[j];
		optim_free(&ok_), model_free(&mk);
	}
	*zeros = 0;
	for (size_t j = 0; j < ng; j++)
		*zeros += want[j] == 0;
	int same = rc == 0 && memcmp(m.g.mem, want, ng * sizeof *want) == 0;
	if (rc)
		diag("%s", e.msg);
	free(want), free(g);
	optim_free(&op), model_free(&m);
	return same;
}

/* The ranks' gradients summed (two layouts: an untied model, whose embedding
 * rows of tokens no sequence holds have a gradient of exactly 0, and a tied
 * one, whose every row has one); the exchange; failures of the exchange, the
 * observer and the optimizer leave the weights. */
static void ranks(void)
{
	int a[] = { 0, 1 }, b[] = { 2, 3 }, c[] = { 4, 5 };
	struct microbatch mbs[3] = { make_mb(a, 2, 16, 1), make_mb(b, 2, 24, 1), make_mb(c, 2, 16, 1) };
	mbs[1].rank = mbs[2].rank = 1, mbs[2].index = 1;
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.beta = 0.05f;
	size_t zeros;
	int same = summed_as_ranks(mbs, 3, 0, &lo, &zeros);
	ok(same && zeros > 0, "rank 0 one micro-batch, rank 1 two, in one process: the same bits as each rank's "
	   "gradient summed in rank order (%zu exactly 0)", zeros);
	mbs[2].rank = 2, mbs[2].index = 0;
	same = summed_as_ranks(mbs, 3, 1, &lo, &zeros);
	ok(same, "three ranks of one micro-batch, a tied model: the same bits (%zu exactly 0)", zeros);

	struct loss_totals tot = { 0, 0, 0 };
	step_count(mbs, 3, &tot);
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct err e = { 0 };
	struct step_result r;
	struct model mk;
	struct optim ok_;
	int rc;
	tiny_tied(&mk, 0);
	size_t ng = mk.w.n;
	model_free(&mk);
	float *kept = malloc(ng * sizeof *kept), *g1 = malloc(ng * sizeof *g1), *w1 = malloc(ng * sizeof *w1);
	float *w0 = malloc(ng * sizeof *w0);
	struct one_rank one = { kept, 0 };
	struct step_reduce red = { reduce_one, &one };

	/* one rank through an exchange of one process, against no exchange */
	tiny_tied(&mk, 0);
	optim_init(&ok_, &oo, mk.w.n, &e);
	rc = step_train(&mk, NULL, &ok_, &lo, &tot, 1, mbs, 1, NULL, &red, &r, &e);
	memcpy(g1, mk.g.mem, ng * sizeof *g1), memcpy(w1, mk.w.mem, ng * sizeof *w1);
	optim_free(&ok_), model_free(&mk);
	tiny_tied(&mk, 0);
	optim_init(&ok_, &oo, mk.w.n, &e);
	rc |= step_train(&mk, NULL, &ok_, &lo, &tot, 1, mbs, 1, NULL, NULL, &r, &e);
	ok(rc == 0 && memcmp(g1, mk.g.mem, ng * sizeof *g1) == 0 && memcmp(w1, mk.w.mem, ng * sizeof *w1) == 0,
	   "a rank's step through the exchange: the same gradient and weights as without");
	optim_free(&ok_), model_free(&mk);

	/* failures: nothing moves, no epoch counted */
	one.fail = 1;
	tiny_tied(&mk, 0);
	optim_init(&ok_, &oo, mk.w.n, &e);
	memcpy(w0, mk.w.mem, ng * sizeof *w0);
	rc = step_train(&mk, NULL, &ok_, &lo, &tot, 2, mbs, 1, NULL, &red, &r, &e);
	ok(rc < 0 && strstr(e.msg, "rank 1 did not answer") && r.epochs == 0 && ok_.step == 0 &&
	   memcmp(w0, mk.w.mem, ng * sizeof *w0) == 0, "a failed exchange fails the step, the weights as they "
	   "were: %s", e.msg);
	int calls = 0;
	struct step_observer obs = { fail_second, &calls, NULL };
	rc = step_train(&mk, NULL, &ok_, &lo, &tot, 2, mbs, 3, &obs, NULL, &r, &e);
	ok(rc < 0 && strstr(e.msg, "disk full") && calls == 2 && r.epochs == 0 && ok_.step == 0 &&
	   memcmp(w0, mk.w.mem, ng * sizeof *w0) == 0, "an observer that fails stops the step at that "
	   "micro-batch, the weights as they were: %s", e.msg);
	/* the largest advantage a float holds, in 64 micro-batches: their gradients' sum overflows */
	for (uint32_t t = 0; t < mbs[0].n_tokens; t++)
		mbs[0].advantages[t] = mbs[0].loss_mask[t] ? FLT_MAX : 0;
	struct microbatch copies[64];
	for (int i = 0; i < 64; i++)
		copies[i] = mbs[0];
	rc = step_train(&mk, NULL, &ok_, &lo, &tot, 2, copies, 64, NULL, NULL, &r, &e);
	ok(rc < 0 && strstr(e.msg, "gradient norm") && r.epochs == 0 && ok_.step == 0 &&
	   memcmp(w0, mk.w.mem, ng * sizeof *w0) == 0, "a gradient that is not finite fails the step, the "
	   "weights as they were: %s", e.msg);
	optim_free(&ok_), model_free(&mk);

	free(kept), free(g1), free(w1), free(w0);
	for (int i = 0; i < 3; i++)
		mb_free(&mbs[i]);
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * What a step reports (grpo-step's metrics line): tokens forwarded, not the
 * dummy's; the totals; the first epoch's statistics and optimizer step, the
 * last's (the second epoch is the step after the first: the same bits as a
 * second step of one epoch); the seconds spent; the progress line.
 */
static void results(void)
{
	int a[] = { 5, 2 }, b[] = { 0 }, c[] = { 4, 1, 3 };
	struct microbatch four[4] = { make_mb(a, 2, 24, 1), make_mb(b, 1, 24, 1), make_mb(c, 3, 32, 1),
	                              make_mb(NULL, 0, 32, 1) };
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.beta = 0.05f;
	struct loss_totals tot = { 0, 0, 0 };
	step_count(four, 4, &tot);
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct err e = { 0 };
	struct step_result r1, r1b, r2;
	struct model m1, m2;
	struct optim o1, o2;
	tiny(&m1), tiny(&m2);
	optim_init(&o1, &oo, m1.w.n, &e), optim_init(&o2, &oo, m2.w.n, &e);
	double t0 = wall();
	int rc = step_train(&m1, NULL, &o1, &lo, &tot, 1, four, 4, NULL, NULL, &r1, &e);
	double t1 = wall();
	rc |= step_train(&m1, NULL, &o1, &lo, &tot, 1, four, 4, NULL, NULL, &r1b, &e);
	int pfd[2];
	char text[4096] = "";
	if (pipe(pfd) < 0)
		pfd[0] = pfd[1] = -1;
	struct progress pg;
	progress_init(&pg, "test_step", pfd[1]);
	pg.on = 1;   /* drawn, as on a terminal */
	struct step_observer obs = { NULL, NULL, &pg };
	rc |= step_train(&m2, NULL, &o2, &lo, &tot, 2, four, 4, &obs, NULL, &r2, &e);
	close(pfd[1]);
	ssize_t got = read(pfd[0], text, sizeof text - 1);
	text[got > 0 ? got : 0] = 0;
	close(pfd[0]);

	ok(rc == 0 && r1.tokens == 24 + 24 + 32 && r2.tokens == 2 * (24 + 24 + 32),
	   "tokens forwarded: the three micro-batches with a sequence, not the dummy (%g, two epochs %g)", r1.tokens,
	   r2.tokens);
	ok(r1.totals.seqs == 6 && r1.totals.tokens == 33 && r1.totals.mbs == 3, "the totals it trained with");
	ok(r1.epochs == 1 && r1.first.tokens == 33 && r1.last.tokens == 33 && r1.first.loss == r1.last.loss,
	   "one epoch: its statistics are the first's and the last's (33 loss tokens)");
	ok(r1.fwd_s > 0 && r1.bwd_s > 0 && r1.opt_s > 0 && r1.fwd_s + r1.bwd_s + r1.opt_s <= t1 - t0,
	   "seconds of forward %.3g, backward %.3g and optimizer %.3g, within the %.3g the step took", r1.fwd_s,
	   r1.bwd_s, r1.opt_s, t1 - t0);
	ok(r2.epochs == 2 && memcmp(&r2.first, &r1.first, sizeof r1.first) == 0 &&
	   memcmp(&r2.first_opt, &r1.opt, sizeof r1.opt) == 0 && memcmp(&r2.last, &r1b.last, sizeof r1.last) == 0 &&
	   memcmp(&r2.opt, &r1b.opt, sizeof r1.opt) == 0 && memcmp(m1.w.mem, m2.w.mem, m1.w.n * 4) == 0,
	   "two epochs: the first's statistics and optimizer step those of a one-epoch step, the last's those of "
	   "a second (loss %.9g, then %.9g)", r2.first.loss, r2.last.loss);
	ok(strstr(text, "test_step: 1 of 8 micro-batches") && strstr(text, "test_step: 8 of 8 micro-batches"),
	   "the progress line counts micro-batches over both epochs, 1 of 8 to 8 of 8");
	is_int(step_max_tokens(four, 4), 32, "the largest micro-batch: 32 tokens");
	is_int(step_max_tokens(NULL, 0), 1, "no micro-batch: sized for 1 token");
	struct microbatch dot = make_mb(NULL, 0, 1, 0);
	is_int(step_max_tokens(&dot, 1), 1, "a micro-batch of 1 token: 1");
	mb_free(&dot);
	optim_free(&o1), optim_free(&o2), model_free(&m1), model_free(&m2);
	for (int i = 0; i < 4; i++)
		mb_free(&four[i]);
}

/*
 * With a TIS cap, ℓ_old is the policy's own logprob at the step's start (so
 * every ratio of the first epoch is 1) and the sampler's is ℓ_behav: the TIS
 * weight min(exp(ℓ_old − ℓ_behav), cap) is capped at cap 1 exactly where the
 * policy's logprob is at least the sampler's, and the align diff is the
 * policy's against the sampler's. Counted from the observer's logprobs.
 */
static void tis(void)
{
	int a[] = { 0, 1, 2 };
	struct microbatch mb = make_mb(a, 3, 48, 1);
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.tis_cap = 1.0f;
	struct loss_totals tot = { 0, 0, 0 };
	step_count(&mb, 1, &tot);
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct err e = { 0 };
	struct step_result r;
	struct model m;
	struct optim op;
	tiny(&m);
	optim_init(&op, &oo, m.w.n, &e);
	struct step_observer obs = { keep_lp, NULL, NULL };
	int rc = step_train(&m, NULL, &op, &lo, &tot, 1, &mb, 1, &obs, NULL, &r, &e);
	int capped = 0;
	double diff = 0;
	for (uint32_t t = 0; t < mb.n_tokens; t++)
		if (mb.loss_mask[t]) {
			capped += start_lp[t] >= mb.inference_logprobs[t];
			diff += (double)start_lp[t] - mb.inference_logprobs[t];
		}
	ok(rc == 0 && r.first.ratio_min == 1 && r.first.ratio_max == 1, "TIS: every ratio of the first epoch is 1 "
	   "(%.9g to %.9g)", r.first.ratio_min, r.first.ratio_max);
	ok(capped > 0 && r.first.tis_capped == capped, "TIS cap 1: capped at the %d tokens where the policy's "
	   "logprob is at least the sampler's (%g)", capped, r.first.tis_capped);
	is_float(r.first.diff_sum, diff, 1e-9, "TIS: the align diff is the policy's against the sampler's");
	optim_free(&op), model_free(&m);
	mb_free(&mb);
}

/* The entropy bonus reaches the gradient, in proportion to its coefficient. */
static void entropy(void)
{
	int all[NS] = { 0, 1, 2, 3, 4, 5 };
	struct microbatch mb = make_mb(all, NS, 72, 1);
	struct model probe;
	tiny(&probe);
	size_t ng = probe.w.n;
	model_free(&probe);
	float *g[3];
	const float coef[3] = { 0, 0.01f, 1 };
	for (int k = 0; k < 3; k++) {
		struct loss_opts lo;
		loss_opts_default(&lo);
		lo.entropy_coef = coef[k];
		double norm;
		g[k] = malloc(ng * sizeof *g[k]);
		train(&lo, &mb, 1, g[k], &ng, &norm);
	}
	double big = 0, worst = 0;
	for (size_t j = 0; j < ng; j++) {
		double d1 = (double)g[1][j] - g[0][j], d2 = (double)g[2][j] - g[0][j];
		big = fmax(big, fabs(d2));
		worst = fmax(worst, fabs(d2 - 100 * d1));
	}
	ok(big > 0 && worst <= 1e-3 * big, "the gradient moves with the entropy coefficient: by %.3g at 1, "
	   "a hundredth of that at 0.01 (off by %.2g)", big, worst);
	for (int k = 0; k < 3; k++)
		free(g[k]);
	mb_free(&mb);
}

/* A tiny model of family f, untied or tied, its biases (when it has any) random, not 0, so that decaying them shows. */
static void tiny_family(struct model *m, enum model_family f, int tied, int biases)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, f);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.HS = 4, c.V = 40, c.tied = tied, c.init_std = 0.3f;
	c.eps = 1e-5f;
	if (biases)
		c.qkv_bias = c.o_bias = 1;
	struct err e = { 0 };
	if (model_create(m, &c, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
	model_init_random(m, 11, NULL);
	float *b[] = { m->w.bq, m->w.bk, m->w.bv, m->w.bo };
	size_t nb[] = { (size_t)c.L * c.NH * c.HS, (size_t)c.L * c.NKV * c.HS, (size_t)c.L * c.NKV * c.HS,
	                (size_t)c.L * c.C };
	uint64_t keep = rng;   /* the same biases every time, whatever was drawn before */
	rng = 0x2545f4914f6cdd1dull;
	for (int k = 0; k < 4; k++)
		for (size_t i = 0; b[k] && i < nb[k]; i++)
			b[k][i] = (float)(0.2 * urand() - 0.1);
	rng = keep;
}

/* One step with weight decay wd on `on` (wd_on < 0: the optimizer never told which weights are matrices). */
static int decay_step(struct model *m, enum model_family f, int tied, int biases, double wd, int wd_on,
                      const struct microbatch *mbs, size_t n, struct err *e)
{
	tiny_family(m, f, tied, biases);
	struct optim_opts oo;
	optim_opts_default(&oo);
	oo.lr = 0.1, oo.weight_decay = wd, oo.wd_on = wd_on < 0 ? WD_ON_MATRICES : (enum wd_on)wd_on;
	struct optim op;
	struct loss_opts lo;
	loss_opts_default(&lo);
	struct step_result r;
	int rc = optim_init(&op, &oo, m->w.n, e);
	if (rc == 0 && wd_on >= 0)
		rc = step_decay_matrices(&op, m, e);
	if (rc == 0)
		rc = train_step(m, &op, &lo, 1, mbs, n, &r, e);
	optim_free(&op);
	return rc;
}

/* --weight-decay-on: by default the matrices decay and the 1-D tensors
 * (norms, biases) step as with no decay, to the bit; with all every tensor
 * decays. One step each, so that the gradients are the same in every run. */
static void decay_on(void)
{
	int all[NS] = { 0, 1, 2, 3, 4, 5 };
	struct microbatch mb[1] = { make_mb(all, NS, 72, 0) };
	static const struct { enum model_family f; int tied, biases; const char *name; } fams[] = {
		{ MODEL_QWEN2, 1, 0, "qwen2 (tied, q/k/v biases)" },
		{ MODEL_QWEN3, 0, 0, "qwen3 (q/k norms, an LM head)" },
		{ MODEL_LLAMA, 0, 1, "llama with attention_bias (an o_proj bias)" },
	};
	for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
		struct model w0, mat, every;
		struct err e = { 0 };
		int rc0 = decay_step(&w0, fams[k].f, fams[k].tied, fams[k].biases, 0, WD_ON_MATRICES, mb, 1, &e);
		int rc1 = decay_step(&mat, fams[k].f, fams[k].tied, fams[k].biases, 0.1, WD_ON_MATRICES, mb, 1, &e);
		int rc2 = decay_step(&every, fams[k].f, fams[k].tied, fams[k].biases, 0.1, WD_ON_ALL, mb, 1, &e);
		if (ok(rc0 == 0 && rc1 == 0 && rc2 == 0, "%s: steps with weight decay 0, on matrices, on all: %s",
		       fams[k].name, e.msg)) {
			int nt = model_tensors(&w0.cfg, &w0.w, NULL), vectors = 0, matrices = 0;
			struct model_tensor *t0 = malloc((size_t)nt * sizeof *t0), *t1 = malloc((size_t)nt * sizeof *t1);
			struct model_tensor *t2 = malloc((size_t)nt * sizeof *t2);
			model_tensors(&w0.cfg, &w0.w, t0);
			model_tensors(&mat.cfg, &mat.w, t1);
			model_tensors(&every.cfg, &every.w, t2);
			int bad_mat = 0, bad_all = 0, biases = 0;
			for (int i = 0; i < nt; i++) {
				size_t bytes = (size_t)t0[i].shape[0] * (t0[i].ndim == 2 ? (size_t)t0[i].shape[1] : 1) * 4;
				int same01 = memcmp(t0[i].data, t1[i].data, bytes) == 0;
				int same02 = memcmp(t0[i].data, t2[i].data, bytes) == 0;
				int same12 = memcmp(t1[i].data, t2[i].data, bytes) == 0;
				if (t0[i].ndim == 1) {
					vectors++;
					biases += strstr(t0[i].name, "bias") != NULL;
					if (!same01 && bad_mat++ == 0)
						diag("  matrices: %s moved otherwise than with no decay", t0[i].name);
					if ((same02 || same12) && bad_all++ == 0)
						diag("  all: %s not decayed", t0[i].name);
				} else {
					matrices++;
					if (same01 && bad_mat++ == 0)
						diag("  matrices: %s not decayed", t0[i].name);
					if ((same02 || !same12) && bad_all++ == 0)
						diag("  all: %s not as under matrices", t0[i].name);
				}
			}
			ok(vectors > 0 && matrices > 0 && (biases > 0) == (fams[k].f != MODEL_QWEN3),
			   "%s: %d 1-D tensors (%d biases), %d matrices", fams[k].name, vectors, biases, matrices);
			ok(bad_mat == 0, "%s: on matrices, every 1-D tensor as with no decay to the bit, every matrix decayed "
			   "(%d wrong)", fams[k].name, bad_mat);
			ok(bad_all == 0, "%s: on all, every tensor decayed, the matrices as on matrices (%d wrong)",
			   fams[k].name, bad_all);
			free(t0), free(t1), free(t2);
		}
		model_free(&w0), model_free(&mat), model_free(&every);
	}

	/* an optimizer never told which weights are matrices takes no step with decay on them */
	struct model m, fresh;
	struct err e = { 0 };
	int rc = decay_step(&m, MODEL_QWEN2, 1, 0, 0.1, -1, mb, 1, &e);
	tiny_family(&fresh, MODEL_QWEN2, 1, 0);
	ok(rc < 0 && strstr(e.msg, "matrices") && memcmp(m.w.mem, fresh.w.mem, m.w.n * 4) == 0,
	   "weight decay on matrices unknown to the optimizer: refused, nothing moved: %s", e.msg);
	model_free(&fresh);
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct optim op;
	optim_init(&op, &oo, m.w.n - 1, &e);
	e.msg[0] = 0;
	ok(step_decay_matrices(&op, &m, &e) < 0 && strstr(e.msg, "weights"), "an optimizer of another size: %s", e.msg);
	optim_free(&op);
	model_free(&m);
	mb_free(&mb[0]);
}

int main(void)
{
	model_set_threads(1);
	make_seqs();
	repacking();
	checkpoints();
	truncated_totals();
	missing_logprobs();
	reading();
	ranks();
	results();
	tis();
	entropy();
	decay_on();
	return tap_done();
}
