/*
 * test_cuda_step: grpo-step's training step on the GPU (step_train with a
 * model_gpu: forward, backward and AdamW there, the loss on the host)
 * against the same steps on the CPU, its specification, on the committed
 * transformers fixtures (tests/data/hf: Qwen2 tied with q/k/v bias, Qwen3
 * untied with q/k norm and head size 24):
 *
 *  - fp32: two optimizer steps, with weight decay and clipping, over two
 *    ranks of two micro-batches (the ranks summed on the host, the sum put
 *    back) and over one rank (the gradient never leaves the GPU): the loss
 *    and the gradient norm within fp32 rounding of the CPU's, AdamW's
 *    moments to 1e-4, the update's direction to a cosine of 0.99999, and no
 *    weight more than one step away (AdamW's steps are about lr whatever
 *    the gradient's size, so a gradient at rounding level may go either
 *    way: measured 4.5e-5 and 7.4e-5 of the largest weight on an H200);
 *  - fp32, one rank, weight decay large enough to show (lr·wd = 0.01) on
 *    the matrices alone and on every weight: the CPU's update, model.norm's
 *    weights decayed or not as on the CPU;
 *  - bf16: the same steps within bf16 noise (loss and gradient norm to a
 *    percent, the weights' update in the same direction);
 *  - with the layers' activations recomputed (model_gpu_open_train's
 *    recompute), fp32 and bf16: the same weights, moments, losses and
 *    gradient norms, byte for byte;
 *  - a step refused for a NaN gradient moves nothing on the GPU;
 *  - the master weights and moments copied between the GPU and page-locked
 *    host arrays (model_gpu_pin) and pageable ones, each way: the same
 *    bytes, so that a checkpoint does not depend on which;
 *  - the LM head fused with the loss (model_gpu_forward_train,
 *    GRPO_CUDA_FUSED_HEAD=1) against the two phases, fp32 and bf16, with
 *    and without the recompute, under every token-ratio loss option set:
 *    the same logprobs to the bit, the gradients to 1e-6 (fp32) or a
 *    cosine of 0.9999 (bf16), every token's dlogprob and dentropy checked
 *    against the host loss's (GRPO_CUDA_FUSED_CHECK=1); whole steps through
 *    step_train with a TIS cap over two epochs and a sequence without
 *    sampler logprobs (the "own ℓ" flags); GSPO keeping the two phases,
 *    byte for byte.
 * GRPO_TEST_FP32=1 runs the fp32 cases alone: on an H200 with CUDA 13,
 * compute-sanitizer's racecheck stops with an internal error at the first
 * bf16 step, whichever kernel it instruments.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "model/model_gpu.h"
#include "train/loss.h"
#include "train/step.h"

/* every case, or the fp32 ones alone (GRPO_TEST_FP32, for racecheck) */
static int bf16_too(void)
{
	return getenv("GRPO_TEST_FP32") == NULL;
}

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#include "../xorshift.h"

/* A micro-batch of k sequences (prompt p[j], response r[j] tokens) on rank, padded to T. */
static struct microbatch make_mb(int rank, int index, int k, const int *p, const int *r, int T, int V)
{
	struct microbatch mb;
	memset(&mb, 0, sizeof mb);
	mb.rank = rank, mb.index = index;
	mb.n_tokens = (uint32_t)T;
	mb.input_ids = calloc((size_t)T, 4);
	mb.position_ids = calloc((size_t)T, 4);
	mb.loss_mask = calloc((size_t)T, 1);
	mb.advantages = calloc((size_t)T, 4);
	mb.inference_logprobs = calloc((size_t)T, 4);
	mb.ref_logprobs = calloc((size_t)T, 4);
	mb.temperatures = calloc((size_t)T, 4);
	mb.seq_lens = calloc((size_t)k + 1, 4);
	mb.sequence_ids = calloc((size_t)k + 1, sizeof *mb.sequence_ids);
	mb.group_ids = calloc((size_t)k + 1, sizeof *mb.group_ids);
	int at = 0;
	for (int j = 0; j < k; j++) {
		int len = p[j] + r[j];
		float adv = (float)(urand() * 2 - 1), temp = j % 2 ? 0.8f : 1.0f;
		for (int t = 0; t < len; t++, at++) {
			mb.input_ids[at] = (int32_t)(urand() * V);
			mb.position_ids[at] = (uint32_t)t;
			mb.loss_mask[at] = t >= p[j];
			mb.advantages[at] = adv;
			mb.inference_logprobs[at] = t >= p[j] ? (float)(-6 + 0.5 * urand()) : 0;
			mb.ref_logprobs[at] = t >= p[j] ? (float)(-6 + 0.5 * urand()) : 0;
			mb.temperatures[at] = temp;
		}
		mb.seq_lens[j] = (uint32_t)len;
		mb.sequence_ids[j] = traj_id_num(100 * rank + 10 * index + j);
		mb.group_ids[j] = traj_id_num(rank);
	}
	mb.n_seqs = mb.n_seq_lens = (uint32_t)k;
	if (at < T) {
		mb.seq_lens[k] = (uint32_t)(T - at);
		mb.n_seq_lens++;
		for (int t = at; t < T; t++)
			mb.temperatures[t] = 1;
	}
	return mb;
}

/* The worst |a - b| over n, relative to the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
	double worst = 0, big = 1e-30;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);
		worst = d > worst ? d : worst;
		big = fabs(b[i]) > big ? fabs(b[i]) : big;
	}
	return worst / big;
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++)
		worst = fmax(worst, fabs((double)a[i] - b[i]));
	return worst;
}

/* The cosine of the two updates a - w0 and b - w0. */
static double update_cosine(const float *a, const float *b, const float *w0, size_t n)
{
	double ab = 0, aa = 0, bb = 0;
	for (size_t i = 0; i < n; i++) {
		double x = (double)a[i] - w0[i], y = (double)b[i] - w0[i];
		ab += x * y, aa += x * x, bb += y * y;
	}
	return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

struct run {
	struct model m;
	struct optim op;
	double loss[2], gnorm[2];
};

/* Two steps over mbs: on the CPU (gpu < 0), or on the GPU in fp32 (0) or
 * bf16 (1), recomputing the layers' activations or not, with weight decay
 * wd on the weights `on` names. */
static int train_wd(struct run *x, const char *dir, int gpu, int recompute, const struct microbatch *mbs, size_t n,
		    int maxT, double wd, enum wd_on on)
{
	struct err e = { 0 };
	memset(x, 0, sizeof *x);
	struct optim_opts oo;
	optim_opts_default(&oo);
	oo.lr = 2e-3, oo.weight_decay = wd, oo.wd_on = on, oo.max_grad_norm = 0.5;
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.beta = 0.05f;
	struct model_gpu *g = NULL;
	if (model_load(&x->m, dir, &e) < 0 || optim_init(&x->op, &oo, x->m.w.n, &e) < 0 ||
	    step_decay_matrices(&x->op, &x->m, &e) < 0 ||
	    (gpu >= 0 && (model_gpu_open_train(&g, &x->m, maxT, gpu, recompute, &e) < 0 ||
	                  model_gpu_optim_put(g, &x->m, x->op.m, x->op.v, &e) < 0))) {
		diag("%s", e.msg);
		model_gpu_close(g);
		return -1;
	}
	struct loss_totals tot = { 0, 0, 0 };
	step_count(mbs, n, &tot);
	int rc = 0;
	for (int s = 0; s < 2 && rc == 0; s++) {
		struct step_result r;
		rc = step_train(&x->m, g, &x->op, &lo, &tot, 1, mbs, n, NULL, NULL, &r, &e);
		x->loss[s] = r.first.loss, x->gnorm[s] = r.opt.grad_norm;
	}
	if (rc < 0)
		diag("%s", e.msg);
	model_gpu_close(g);
	return rc;
}

static int train(struct run *x, const char *dir, int gpu, int recompute, const struct microbatch *mbs, size_t n,
		 int maxT)
{
	return train_wd(x, dir, gpu, recompute, mbs, n, maxT, 0.01, WD_ON_MATRICES);
}

static void done(struct run *x)
{
	optim_free(&x->op);
	model_free(&x->m);
}

/* b's two steps again, recomputing the layers' activations: the same bytes. */
static void recomputed(const char *fam, const char *what, const struct run *b, const char *dir, int gpu,
		       const struct microbatch *mbs, size_t n, int maxT)
{
	struct run r;
	if (!ok(train(&r, dir, gpu, 1, mbs, n, maxT) == 0, "%s: %s, recomputing the layers", fam, what))
		return;
	size_t k = b->m.w.n * sizeof(float);
	ok(memcmp(r.m.w.mem, b->m.w.mem, k) == 0 && memcmp(r.op.m, b->op.m, k) == 0 &&
	   memcmp(r.op.v, b->op.v, k) == 0 && memcmp(r.loss, b->loss, sizeof r.loss) == 0 &&
	   memcmp(r.gnorm, b->gnorm, sizeof r.gnorm) == 0,
	   "%s: %s: the same weights, moments, losses and gradient norms recomputing the layers", fam, what);
	done(&r);
}

static void family(const char *top, const char *fam)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/hf/%s", top, fam);
	int V = 320;
	static const int p0[] = { 5, 17, 1 }, r0[] = { 40, 9, 30 }, p1[] = { 12, 3 }, r1[] = { 64, 65 };
	static const int p2[] = { 8 }, r2[] = { 120 }, p3[] = { 2, 2, 30 }, r3[] = { 7, 50, 33 };
	struct microbatch mbs[4] = {
		make_mb(0, 0, 3, p0, r0, 112, V), make_mb(0, 1, 2, p1, r1, 160, V),
		make_mb(1, 0, 1, p2, r2, 160, V), make_mb(1, 1, 3, p3, r3, 128, V),
	};
	int maxT = 160;
	struct run cpu, gpu, one, bf;
	struct model w0;
	struct err e = { 0 };
	if (!ok(model_load(&w0, dir, &e) == 0, "%s: load %s", fam, dir)) {
		diag("%s", e.msg);
		goto out;
	}
	if (!ok(train(&cpu, dir, -1, 0, mbs, 4, maxT) == 0, "%s: two CPU steps", fam))
		goto out_w0;
	if (ok(train(&gpu, dir, 0, 0, mbs, 4, maxT) == 0, "%s: two GPU fp32 steps over two ranks", fam)) {
		size_t n = cpu.m.w.n;
		for (int s = 0; s < 2; s++) {
			ok(fabs(gpu.loss[s] - cpu.loss[s]) <= 1e-5 * fabs(cpu.loss[s]) + 1e-7,
			   "%s: step %d loss %.9g on the GPU, %.9g on the CPU", fam, s + 1, gpu.loss[s], cpu.loss[s]);
			ok(fabs(gpu.gnorm[s] - cpu.gnorm[s]) <= 1e-4 * cpu.gnorm[s],
			   "%s: step %d gradient norm %.9g on the GPU, %.9g on the CPU", fam, s + 1, gpu.gnorm[s],
			   cpu.gnorm[s]);
		}
		double dw = rel_diff(gpu.m.w.mem, cpu.m.w.mem, n), dm = rel_diff(gpu.op.m, cpu.op.m, n);
		double dv = rel_diff(gpu.op.v, cpu.op.v, n);
		/* AdamW moves a weight by about lr whatever its gradient's size, so a
		 * gradient at rounding level may move it either way: the worst
		 * weight may differ by a step, the update as a whole may not */
		double dabs = max_abs_diff(gpu.m.w.mem, cpu.m.w.mem, n);
		ok(dabs <= 2e-3, "%s: no weight more than one step (lr 2e-3) from the CPU's (worst %.2g, %.2g of the largest)",
		   fam, dabs, dw);
		ok(dm <= 1e-4 && dv <= 1e-4, "%s: AdamW moments within 1e-4 of the CPU's (m %.2g, v %.2g)", fam, dm, dv);
		ok(gpu.op.step == 2, "%s: the optimizer counted two steps", fam);
		ok(update_cosine(gpu.m.w.mem, cpu.m.w.mem, w0.w.mem, n) > 0.99999, "%s: the same update", fam);
		recomputed(fam, "two GPU fp32 steps over two ranks", &gpu, dir, 0, mbs, 4, maxT);
		done(&gpu);
	}

	/* one rank: the micro-batches renumbered onto rank 0, the gradient staying on the GPU */
	for (int i = 0; i < 4; i++)
		mbs[i].rank = 0;
	struct run cpu1;
	if (ok(train(&cpu1, dir, -1, 0, mbs, 4, maxT) == 0 && train(&one, dir, 0, 0, mbs, 4, maxT) == 0,
	       "%s: one rank, on the CPU and the GPU", fam)) {
		size_t n = cpu1.m.w.n;
		double dabs = max_abs_diff(one.m.w.mem, cpu1.m.w.mem, n);
		ok(dabs <= 2e-3 && update_cosine(one.m.w.mem, cpu1.m.w.mem, w0.w.mem, n) > 0.99999,
		   "%s: one rank: the CPU's update (worst weight %.2g away)", fam, dabs);
		ok(fabs(one.gnorm[0] - cpu1.gnorm[0]) <= 1e-4 * cpu1.gnorm[0], "%s: one rank: gradient norm %.9g vs %.9g",
		   fam, one.gnorm[0], cpu1.gnorm[0]);
		done(&one);
		done(&cpu1);
	}
	/* weight decay large enough to show (lr·wd = 0.01 a step, five times the
	 * tolerance on a norm weight of 1), on the matrices alone and on all */
	for (int on = WD_ON_MATRICES; on <= WD_ON_ALL; on++) {
		struct run c, d;
		if (!ok(train_wd(&c, dir, -1, 0, mbs, 4, maxT, 5, (enum wd_on)on) == 0 &&
		        train_wd(&d, dir, 0, 0, mbs, 4, maxT, 5, (enum wd_on)on) == 0,
		        "%s: weight decay 5 on %s, on the CPU and the GPU", fam, wd_on_name((enum wd_on)on)))
			continue;
		size_t n = c.m.w.n;
		double dabs = max_abs_diff(d.m.w.mem, c.m.w.mem, n);
		ok(dabs <= 2e-3 && update_cosine(d.m.w.mem, c.m.w.mem, w0.w.mem, n) > 0.99999,
		   "%s: weight decay on %s: the CPU's update (worst weight %.2g away)", fam, wd_on_name((enum wd_on)on),
		   dabs);
		/* the final norm's weights: decayed or not, as on the CPU */
		double nd = max_abs_diff(d.m.w.norm, c.m.w.norm, (size_t)c.m.cfg.C);
		double moved = max_abs_diff(c.m.w.norm, w0.w.norm, (size_t)c.m.cfg.C);
		ok(nd <= 2e-3, "%s: weight decay on %s: model.norm as on the CPU (%.2g away; it moved %.2g)", fam,
		   wd_on_name((enum wd_on)on), nd, moved);
		done(&d);
		done(&c);
	}
	if (!bf16_too())
		skip("GRPO_TEST_FP32: no bf16 steps");
	else if (ok(train(&bf, dir, 1, 0, mbs, 4, maxT) == 0, "%s: two GPU bf16 steps", fam)) {
		size_t n = cpu.m.w.n;
		double cosu = update_cosine(bf.m.w.mem, cpu.m.w.mem, w0.w.mem, n);
		diag("%s bf16: loss %.6g / %.6g, grad norm %.6g / %.6g (CPU), update cosine %.5f", fam, bf.loss[0],
		     cpu.loss[0], bf.gnorm[0], cpu.gnorm[0], cosu);
		ok(fabs(bf.loss[0] - cpu.loss[0]) <= 0.01 * fabs(cpu.loss[0]) + 1e-3, "%s: bf16 loss within 1%%", fam);
		ok(fabs(bf.gnorm[0] - cpu.gnorm[0]) <= 0.02 * cpu.gnorm[0], "%s: bf16 gradient norm within 2%%", fam);
		ok(cosu > 0.99, "%s: bf16 update in the CPU's direction (cosine %.4f)", fam, cosu);
		recomputed(fam, "two GPU bf16 steps", &bf, dir, 1, mbs, 4, maxT);
		done(&bf);
	}
	done(&cpu);
out_w0:
	model_free(&w0);
out:
	for (int i = 0; i < 4; i++)
		mb_free(&mbs[i]);
}

/* A gradient that is not finite: refused, and the GPU's weights stay. */
static void refused(const char *top)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/hf/qwen2", top);
	static const int p[] = { 3 }, r[] = { 20 };
	struct microbatch mb = make_mb(0, 0, 1, p, r, 23, 320);
	struct model m;
	struct optim op;
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct loss_opts lo;
	loss_opts_default(&lo);
	struct model_gpu *g = NULL;
	struct err e = { 0 };
	int loaded = model_load(&m, dir, &e) == 0;
	if (loaded)   /* an infinite final-norm weight: NaN logits, a NaN gradient (as on the CPU) */
		m.w.norm[0] = INFINITY;
	if (!loaded || optim_init(&op, &oo, m.w.n, &e) < 0 ||
	    model_gpu_open_train(&g, &m, 23, 0, 0, &e) < 0 || model_gpu_optim_put(g, &m, op.m, op.v, &e) < 0) {
		ok(0, "refused: set-up: %s", e.msg);
		model_gpu_close(g);
		mb_free(&mb);
		return;
	}
	float *before = malloc(m.w.n * sizeof *before);
	memcpy(before, m.w.mem, m.w.n * sizeof *before);
	struct loss_totals tot = { 0, 0, 0 };
	step_count(&mb, 1, &tot);
	struct step_result res;
	int rc = step_train(&m, g, &op, &lo, &tot, 1, &mb, 1, NULL, NULL, &res, &e);
	ok(rc < 0, "a NaN gradient: the step is refused (%s)", e.msg);
	ok(op.step == 0, "refused: no optimizer step counted");
	struct err e2 = { 0 };
	ok(model_gpu_optim_get(g, &m, op.m, op.v, &e2) == 0 && memcmp(before, m.w.mem, m.w.n * sizeof *before) == 0,
	   "refused: the GPU's master weights are the ones put");
	free(before);
	model_gpu_close(g);
	optim_free(&op);
	model_free(&m);
	mb_free(&mb);
}

/* p: like's tensors in another array of its layout. */
static void params_in(struct model_params *p, const struct model_params *like, float *mem)
{
	*p = *like;
	for (float **f = &p->embed; f <= &p->norm; f++)
		if (*f)
			*f = mem + (*f - like->mem);
	p->mem = mem;
}

static int same(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof *a) == 0;
}

/* The checks of copies() on a GPU model holding m's weights and op's
 * moments, with mem (3 n floats) for the pageable arrays. */
static void copies_on(const char *fam, struct model_gpu *g, struct model *m, struct optim *op, float *mem)
{
	size_t n = m->w.n;
	struct err e = { 0 }, em = { 0 }, ev = { 0 };
	/* the first array this GPU model pinned: nothing can overlap it */
	ok(model_gpu_pin(g, m->w.mem, n, &e) == 0, "%s: the master weights are pinned (%s)", fam, e.msg);
	int pm = model_gpu_pin(g, op->m, n, &em), pv = model_gpu_pin(g, op->v, n, &ev);
	diag("%s: moments %s, %s", fam, pm ? em.msg : "pinned", pv ? ev.msg : "pinned");
	float *w2 = mem, *m2m = mem + n, *m2v = mem + 2 * n;
	struct model m2 = *m;
	params_in(&m2.w, &m->w, w2);
	ok(model_gpu_optim_get(g, &m2, m2m, m2v, &e) == 0 && same(w2, m->w.mem, n) && same(m2m, op->m, n) &&
	   same(m2v, op->v, n), "%s: put from pinned arrays, got into pageable ones: the same bytes", fam);

	static const int p[] = { 4, 9 }, r[] = { 30, 21 };
	struct microbatch mb = make_mb(0, 0, 2, p, r, 64, 320);
	struct loss_opts lo;
	loss_opts_default(&lo);
	struct loss_totals tot = { 0, 0, 0 };
	step_count(&mb, 1, &tot);
	struct step_result res;
	int rc = step_train(m, g, op, &lo, &tot, 1, &mb, 1, NULL, NULL, &res, &e);
	mb_free(&mb);
	if (!ok(rc == 0 && op->step == 1, "%s: a step, copied back into the pinned arrays", fam))
		diag("%s", e.msg);
	ok(!same(w2, m->w.mem, n), "%s: the step moved the weights", fam);
	ok(model_gpu_optim_get(g, &m2, m2m, m2v, &e) == 0 && same(w2, m->w.mem, n) && same(m2m, op->m, n) &&
	   same(m2v, op->v, n), "%s: after the step, the same bytes in the pageable arrays", fam);

	/* the other way: put from pageable arrays (GRPO_CUDA_PIN=0 keeps the put from pinning them) */
	for (size_t i = 0; i < n; i++)
		w2[i] += (float)(urand() - 0.5) * 1e-3f, m2m[i] *= -1, m2v[i] *= 2;
	setenv("GRPO_CUDA_PIN", "0", 1);
	ok(model_gpu_pin(g, w2, n, NULL) == 1, "%s: GRPO_CUDA_PIN=0 leaves an array pageable", fam);
	rc = model_gpu_optim_put(g, &m2, m2m, m2v, &e);
	unsetenv("GRPO_CUDA_PIN");
	ok(rc == 0 && model_gpu_optim_get(g, m, op->m, op->v, &e) == 0 && same(m->w.mem, w2, n) &&
	   same(op->m, m2m, n) && same(op->v, m2v, n),
	   "%s: put from pageable arrays, got into pinned ones: the same bytes", fam);
}

/* The optimizer's state through page-locked host arrays (m's, op's, which
 * model_gpu_optim_put pins) and pageable ones, each way, around a step. */
static void copies(const char *top, const char *fam)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/hf/%s", top, fam);
	struct model m;
	struct optim op;
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct model_gpu *g = NULL;
	struct err e = { 0 };
	unsetenv("GRPO_CUDA_PIN");
	if (model_load(&m, dir, &e) < 0) {
		ok(0, "%s copies: load: %s", fam, e.msg);
		return;
	}
	if (optim_init(&op, &oo, m.w.n, &e) < 0) {
		ok(0, "%s copies: %s", fam, e.msg);
		model_free(&m);
		return;
	}
	for (size_t i = 0; i < m.w.n; i++)   /* moments that are not zeros */
		op.m[i] = (float)(urand() - 0.5) * 1e-3f, op.v[i] = (float)urand() * 1e-6f;
	float *mem = malloc(3 * m.w.n * sizeof *mem);
	if (!mem || model_gpu_open_train(&g, &m, 64, 0, 0, &e) < 0 || model_gpu_optim_put(g, &m, op.m, op.v, &e) < 0)
		ok(0, "%s copies: set-up: %s", fam, mem ? e.msg : "out of memory");
	else
		copies_on(fam, g, &m, &op, mem);
	model_gpu_close(g);
	free(mem);
	optim_free(&op);
	model_free(&m);
}

/* The cosine of two gradients. */
static double cosine(const float *a, const float *b, size_t n)
{
	double ab = 0, aa = 0, bb = 0;
	for (size_t i = 0; i < n; i++)
		ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
	return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/* Loss option set k of the fused comparisons (token ratio); its name. */
static const char *fused_opts(int k, struct loss_opts *o)
{
	loss_opts_default(o);
	o->beta = 0.05f;
	switch (k) {
	case 0: return "PPO clip, k3, grpo";
	case 1: o->dual_clip = 3, o->agg = LOSS_AGG_DAPO, o->kl = LOSS_KL_K1; return "dual clip, k1, dapo";
	case 2: o->cispo = 1, o->agg = LOSS_AGG_DR_GRPO, o->max_len = 200, o->kl = LOSS_KL_K2; return "CISPO, k2, dr_grpo";
	case 3: o->entropy_coef = 0.01f, o->agg = LOSS_AGG_BNPO, o->clip_high = 0.28f; return "entropy bonus, bnpo";
	case 4: o->beta = 0, o->tis_cap = 2; return "TIS (the sampler's ℓ as ℓ_behav), beta 0";
	default: return NULL;
	}
}

/*
 * The gradients of mbs summed on g, through the two phases (fused 0) or
 * the fused head (1); the logprobs of every micro-batch into lps (n x T).
 * TIS reads ℓ_behav from the micro-batch's ref_logprobs, perturbed.
 */
static int grads_of(struct model_gpu *g, struct model *m, const struct loss_opts *lo, int fused,
		    const struct microbatch *mbs, size_t n, int T, float *lps, float *grads)
{
	struct err e = { 0 };
	struct loss_totals tot = { 0, 0, 0 };
	step_count(mbs, n, &tot);
	float *ent = malloc(T * sizeof *ent), *dlp = malloc(T * sizeof *dlp), *dent = malloc(T * sizeof *dent);
	double *w = malloc(T * sizeof *w);
	uint8_t *flags = malloc(T);
	int rc = model_gpu_grads_zero(g, &e);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct loss_input in;
		loss_input_from_mb(&in, &mbs[i]);
		in.behav = lo->tis_cap > 0 ? mbs[i].ref_logprobs : NULL;
		float *lp = lps + i * T;
		if (fused) {
			for (uint32_t t = 0; t < mbs[i].n_tokens; t++)
				flags[t] = mbs[i].loss_mask[t] ? MODEL_GPU_LOSS_TOKEN : 0;
			struct model_gpu_loss gl = { lo, flags, in.adv, in.old, in.behav, in.ref, w };
			rc = loss_token_weights(lo, &tot, &in, w, &e) < 0 ||
			     model_gpu_forward_train(g, &mbs[i], &gl, lp, ent, &e) < 0 ? -1 : 0;
		} else {
			rc = model_gpu_forward_mb(g, &mbs[i], lp, ent, &e);
		}
		struct loss_stats st;
		loss_stats_init(&st);
		float *de = lo->entropy_coef != 0 ? dent : NULL;
		if (rc == 0 && (loss_mb(lo, &tot, &in, lp, ent, dlp, de, &st, &e) < 0 ||
				model_gpu_backward(g, dlp, de, &e) < 0))
			rc = -1;
	}
	if (rc == 0)
		rc = model_gpu_grads_get(g, &m->g, &e);
	if (rc == 0)
		memcpy(grads, m->g.mem, m->g.n * sizeof *grads);
	else
		diag("%s", e.msg);
	free(ent), free(dlp), free(dent), free(w), free(flags);
	return rc;
}

/* The fused head against the two phases on one model, precision and mode, under every option set. */
static void fused_grads(const char *fam, const char *dir, int bf16, int recompute, struct microbatch *mbs, size_t n,
			int T)
{
	struct model m;
	struct model_gpu *g = NULL;
	struct err e = { 0 };
	const char *how = bf16 ? (recompute ? "bf16, recompute" : "bf16") : (recompute ? "fp32, recompute" : "fp32");
	if (model_load(&m, dir, &e) < 0 || model_grads_alloc(&m, &e) < 0 ||
	    model_gpu_open_train(&g, &m, T, bf16, recompute, &e) < 0) {
		ok(0, "%s fused, %s: set-up: %s", fam, how, e.msg);
		model_gpu_close(g);
		return;
	}
	size_t ng = m.g.n, nl = n * T;
	float *g0 = malloc(ng * sizeof *g0), *g1 = malloc(ng * sizeof *g1);
	float *lp0 = calloc(nl, sizeof *lp0), *lp1 = calloc(nl, sizeof *lp1);
	struct loss_opts lo;
	const char *name;
	for (int k = 0; (name = fused_opts(k, &lo)); k++) {
		if (!ok(grads_of(g, &m, &lo, 0, mbs, n, T, lp0, g0) == 0 && grads_of(g, &m, &lo, 1, mbs, n, T, lp1, g1) == 0,
			"%s, %s, %s: both paths run (every token's gradient as the host loss's)", fam, how, name))
			continue;
		ok(memcmp(lp0, lp1, nl * sizeof *lp0) == 0, "%s, %s, %s: the same logprobs, bit for bit", fam, how, name);
		double rd = rel_diff(g1, g0, ng), cs = cosine(g1, g0, ng);
		if (bf16)
			ok(cs > 0.9999, "%s, %s, %s: the two phases' gradient (cosine %.7f, worst %.2g)", fam, how, name, cs, rd);
		else
			ok(rd <= 1e-6, "%s, %s, %s: the two phases' gradient within 1e-6 (worst %.2g of the largest)", fam, how,
			   name, rd);
	}
	lo.ratio = LOSS_RATIO_SEQUENCE;
	struct model_gpu_loss gl = { &lo, NULL, NULL, NULL, NULL, NULL, NULL };
	ok(model_gpu_forward_train(g, &mbs[0], &gl, lp1, NULL, &e) < 0 && strstr(e.msg, "token ratio"),
	   "%s, %s: the fused head refuses GSPO's sequence ratio (%s)", fam, how, e.msg);
	free(g0), free(g1), free(lp0), free(lp1);
	model_gpu_close(g);
	model_free(&m);
}

/*
 * Whole steps through step_train with GRPO_CUDA_FUSED_HEAD=1 and without,
 * fp32: a TIS cap over two epochs (ℓ_old the first epoch's own ℓ) and a
 * sequence without sampler logprobs (fill_missing's); GSPO the same bytes.
 */
static void fused_steps(const char *fam, const char *dir, struct microbatch *mbs, size_t n, int T)
{
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.tis_cap = 2, lo.beta = 0.02f, lo.entropy_coef = 0.005f;
	mbs[1].logprobs_missing = calloc(mbs[1].n_seqs, 1);
	mbs[1].logprobs_missing[1] = 1;
	for (int gspo = 0; gspo < 2; gspo++) {
		lo.ratio = gspo ? LOSS_RATIO_SEQUENCE : LOSS_RATIO_TOKEN;
		struct model m[2];
		struct optim op[2];
		struct step_result r[2];
		int rc[2];
		memset(m, 0, sizeof m);
		memset(op, 0, sizeof op);
		for (int f = 0; f < 2; f++) {
			struct optim_opts oo;
			optim_opts_default(&oo);
			oo.lr = 2e-3;
			struct model_gpu *g = NULL;
			struct err e = { 0 };
			struct loss_totals tot = { 0, 0, 0 };
			step_count(mbs, n, &tot);
			setenv("GRPO_CUDA_FUSED_HEAD", f ? "1" : "0", 1);
			rc[f] = model_load(&m[f], dir, &e) < 0 || optim_init(&op[f], &oo, m[f].w.n, &e) < 0 ||
					model_gpu_open_train(&g, &m[f], T, 0, 0, &e) < 0 ||
					model_gpu_optim_put(g, &m[f], op[f].m, op[f].v, &e) < 0 ||
					step_train(&m[f], g, &op[f], &lo, &tot, 2, mbs, n, NULL, NULL, &r[f], &e) < 0
				? -1 : 0;
			if (rc[f] < 0)
				diag("%s", e.msg);
			model_gpu_close(g);
		}
		unsetenv("GRPO_CUDA_FUSED_HEAD");
		const char *what = gspo ? "GSPO, two epochs" : "TIS over two epochs, a sequence without sampler logprobs";
		if (ok(rc[0] == 0 && rc[1] == 0, "%s, %s: steps with the fused head and without", fam, what)) {
			size_t nw = m[0].w.n;
			if (gspo) {
				ok(memcmp(m[0].w.mem, m[1].w.mem, nw * sizeof(float)) == 0 && r[0].last.loss == r[1].last.loss,
				   "%s, GSPO: GRPO_CUDA_FUSED_HEAD=1 keeps the two phases: the same weights and loss", fam);
			} else {
				double dabs = max_abs_diff(m[1].w.mem, m[0].w.mem, nw);
				ok(fabs(r[1].last.loss - r[0].last.loss) <= 1e-6 * fabs(r[0].last.loss) + 1e-9 &&
				   fabs(r[1].opt.grad_norm - r[0].opt.grad_norm) <= 1e-6 * r[0].opt.grad_norm && dabs <= 2e-3,
				   "%s, %s: the same losses (%.9g, %.9g), gradient norms (%.9g, %.9g) and weights (worst %.2g)",
				   fam, what, r[1].last.loss, r[0].last.loss, r[1].opt.grad_norm, r[0].opt.grad_norm, dabs);
				ok(r[1].no_sampler_seqs == r[0].no_sampler_seqs && r[0].no_sampler_seqs > 0,
				   "%s: the sequence without sampler logprobs filled on both paths", fam);
			}
		}
		for (int f = 0; f < 2; f++) {
			optim_free(&op[f]);
			model_free(&m[f]);
		}
	}
	free(mbs[1].logprobs_missing);
	mbs[1].logprobs_missing = NULL;
}

/* The fused LM head on one fixture family (its own micro-batches). */
static void fused(const char *top, const char *fam)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/hf/%s", top, fam);
	static const int p0[] = { 5, 17, 1 }, r0[] = { 40, 9, 30 }, p1[] = { 12, 3 }, r1[] = { 64, 65 };
	struct microbatch mbs[2] = { make_mb(0, 0, 3, p0, r0, 112, 320), make_mb(0, 1, 2, p1, r1, 160, 320) };
	int T = 160;
	setenv("GRPO_CUDA_FUSED_CHECK", "1", 1);
	for (int bf16 = 0; bf16 < 2; bf16++)
		for (int rec = 0; rec < 2; rec++)
			if (bf16 && !bf16_too())
				skip("GRPO_TEST_FP32: no bf16 fused head");
			else
				fused_grads(fam, dir, bf16, rec, mbs, 2, T);
	fused_steps(fam, dir, mbs, 2, T);
	unsetenv("GRPO_CUDA_FUSED_CHECK");
	for (int i = 0; i < 2; i++)
		mb_free(&mbs[i]);
}

int main(void)
{
	skip_without_gpu();
	const char *top = getenv("GRPO_TOP");
	top = top ? top : ".";
	family(top, "qwen2");
	family(top, "qwen3");
	refused(top);
	copies(top, "qwen2");
	copies(top, "qwen3");
	fused(top, "qwen2");
	fused(top, "qwen3");
	return tap_done();
}
