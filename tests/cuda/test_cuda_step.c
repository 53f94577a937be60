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
 *  - bf16: the same steps within bf16 noise (loss and gradient norm to a
 *    percent, the weights' update in the same direction);
 *  - with the layers' activations recomputed (model_gpu_open_train's
 *    recompute), fp32 and bf16: the same weights, moments, losses and
 *    gradient norms, byte for byte;
 *  - a step refused for a NaN gradient moves nothing on the GPU;
 *  - the master weights and moments copied between the GPU and page-locked
 *    host arrays (model_gpu_pin) and pageable ones, each way: the same
 *    bytes, so that a checkpoint does not depend on which.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "model/model_gpu.h"
#include "train/step.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (rng >> 11) * (1.0 / 9007199254740992.0);
}

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
 * bf16 (1), recomputing the layers' activations or not. */
static int train(struct run *x, const char *dir, int gpu, int recompute, const struct microbatch *mbs, size_t n,
		 int maxT)
{
	struct err e = { "" };
	memset(x, 0, sizeof *x);
	struct optim_opts oo;
	optim_opts_default(&oo);
	oo.lr = 2e-3, oo.weight_decay = 0.01, oo.max_grad_norm = 0.5;
	struct loss_opts lo;
	loss_opts_default(&lo);
	lo.beta = 0.05f;
	struct model_gpu *g = NULL;
	if (model_load(&x->m, dir, &e) < 0 || optim_init(&x->op, &oo, x->m.w.n, &e) < 0 ||
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
	struct err e = { "" };
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
	if (ok(train(&bf, dir, 1, 0, mbs, 4, maxT) == 0, "%s: two GPU bf16 steps", fam)) {
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
	struct err e = { "" };
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
	struct err e2 = { "" };
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
	struct err e = { "" }, em = { "" }, ev = { "" };
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
	struct err e = { "" };
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
	return tap_done();
}
