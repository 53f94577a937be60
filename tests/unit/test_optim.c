/*
 * test_optim: AdamW steps against AdamW's formula written out here, the
 * learning-rate schedules at hand-computed points, global-norm clipping, a
 * NaN gradient refused without a change, the state file round trip
 * (bit-identical) with its corruption checks, and weight decay on the
 * spans the caller names or on every weight.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/optim.h"
#include "../tap.h"

enum { N = 257 };

#define XORSHIFT_SEED 0x2545f4914f6cdd1dull
#include "../xorshift.h"

static void schedules(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	is_float(o.lr, 1e-6, 0, "default lr 1e-6");
	is_float(optim_lr(&o, 1), 1e-6, 0, "constant");
	is_float(optim_lr(&o, 1000), 1e-6, 0, "constant, late");
	o.lr = 1;
	o.warmup_steps = 4;
	is_float(optim_lr(&o, 1), 0.25, 1e-15, "warmup step 1 of 4");
	is_float(optim_lr(&o, 4), 1, 1e-15, "warmup step 4 of 4 is the full rate");
	o.schedule = LR_LINEAR;
	o.total_steps = 14;
	is_float(optim_lr(&o, 5), 1, 1e-15, "linear: first step after warmup at the full rate");
	is_float(optim_lr(&o, 10), 0.5, 1e-15, "linear: halfway (p = 5/10)");
	is_float(optim_lr(&o, 15), 0, 1e-15, "linear: 0 after the last step");
	is_float(optim_lr(&o, 99), 0, 1e-15, "linear: stays 0");
	o.schedule = LR_COSINE;
	is_float(optim_lr(&o, 10), 0.5, 1e-15, "cosine: halfway");
	is_float(optim_lr(&o, 7), 0.5 * (1 + cos(M_PI * 0.2)), 1e-15, "cosine: p = 0.2");
	struct err e = { 0 };
	o.total_steps = 3;
	ok(optim_opts_check(&o, &e) < 0 && strstr(e.msg, "total steps"), "cosine without total steps: %s", e.msg);
	ok(strcmp(lr_schedule_names[LR_LINEAR], "linear") == 0 && strcmp(lr_schedule_name(LR_COSINE), "cosine") == 0 &&
	   strcmp(lr_schedule_name(LR_LINEAR), "linear") == 0 &&
	   !lr_schedule_names[3], "schedule names, in the enum's order");
}

/* AdamW, as optim.h writes it, in double, independently of optim.c. */
static void reference_step(double *w, double *m, double *v, const float *g, int t, double lr, double wd,
                           double b1, double b2, double eps, double clip)
{
	for (int i = 0; i < N; i++) {
		double gi = g[i] * clip;
		w[i] *= 1 - lr * wd;
		m[i] = b1 * m[i] + (1 - b1) * gi;
		v[i] = b2 * v[i] + (1 - b2) * gi * gi;
		double mh = m[i] / (1 - pow(b1, t)), vh = v[i] / (1 - pow(b2, t));
		w[i] -= lr * mh / (sqrt(vh) + eps);
	}
}

static void adamw(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	o.lr = 1e-2, o.weight_decay = 0.1, o.beta1 = 0.8, o.beta2 = 0.95, o.eps = 1e-6, o.max_grad_norm = 0;
	o.wd_on = WD_ON_ALL;
	struct optim op;
	struct err e = { 0 };
	if (optim_init(&op, &o, N, &e) < 0)
		diag("%s", e.msg);
	float w[N], g[N];
	double rw[N], rm[N] = { 0 }, rv[N] = { 0 };
	for (int i = 0; i < N; i++)
		rw[i] = w[i] = (float)(urand() * 2 - 1);
	for (int t = 1; t <= 3; t++) {
		double ss = 0;
		for (int i = 0; i < N; i++) {
			g[i] = (float)((urand() * 2 - 1) * (i % 7 == 0 ? 1e-4 : 1));
			ss += (double)g[i] * g[i];
		}
		struct optim_result r;
		ok(optim_step(&op, w, g, &r, &e) == 0, "step %d", t);
		reference_step(rw, rm, rv, g, t, 1e-2, 0.1, 0.8, 0.95, 1e-6, 1);
		double worst = 0;
		for (int i = 0; i < N; i++)
			worst = fmax(worst, fabs(w[i] - rw[i]));
		ok(worst < 1e-6, "AdamW step %d moves every weight as the formula says (worst %.2g)", t, worst);
		is_float(r.grad_norm, sqrt(ss), 1e-9, "grad norm reported, step %d", t);
		is_float(r.clip, 1, 0, "no clipping at max_grad_norm 0");
	}
	ok(op.step == 3, "three steps counted");

	/* the first step moves each weight by about lr·sign(g) (m̂/sqrt(v̂) = ±1) */
	optim_free(&op);
	o.weight_decay = 0;
	optim_init(&op, &o, N, &e);
	float w0[N];
	for (int i = 0; i < N; i++)
		w0[i] = w[i], g[i] = i % 2 ? 0.5f : -2.0f;
	optim_step(&op, w, g, NULL, &e);
	ok(fabsf(w[1] - (w0[1] - 1e-2f)) < 1e-6 && fabsf(w[2] - (w0[2] + 1e-2f)) < 1e-6, "first step is lr·sign(g)");
	optim_free(&op);
}

static void clipping_and_nan(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	o.lr = 1e-3, o.max_grad_norm = 1;
	struct optim op;
	struct err e = { 0 };
	optim_init(&op, &o, N, &e);
	float w[N], g[N];
	double rw[N], rm[N] = { 0 }, rv[N] = { 0 };
	for (int i = 0; i < N; i++) {
		rw[i] = w[i] = (float)urand();
		g[i] = 0.5f;   /* ‖g‖ = 0.5·sqrt(257) */
	}
	struct optim_result r;
	optim_step(&op, w, g, &r, &e);
	double norm = 0.5 * sqrt(N);
	is_float(r.grad_norm, norm, 1e-9, "norm before clipping");
	is_float(r.clip, 1 / (norm + 1e-6), 1e-12, "clip factor max/(norm + 1e-6)");
	/* moments of the clipped gradient: the second step shows it (the first is lr·sign(g) either way) */
	reference_step(rw, rm, rv, g, 1, 1e-3, 0, 0.9, 0.999, 1e-8, r.clip);
	for (int i = 0; i < N; i++)
		g[i] = i % 3 ? 0.01f : -0.02f;
	optim_step(&op, w, g, &r, &e);
	ok(r.clip == 1, "a small gradient is not clipped");
	reference_step(rw, rm, rv, g, 2, 1e-3, 0, 0.9, 0.999, 1e-8, 1);
	double worst = 0;
	for (int i = 0; i < N; i++)
		worst = fmax(worst, fabs(w[i] - rw[i]));
	ok(worst < 1e-6, "clipping feeds the moments the scaled gradient (worst %.2g)", worst);

	float keep[N], km[N];
	memcpy(keep, w, sizeof w);
	memcpy(km, op.m, sizeof km);
	g[5] = NAN;
	ok(optim_step(&op, w, g, &r, &e) < 0 && strstr(e.msg, "not taken"), "NaN gradient refused: %s", e.msg);
	ok(memcmp(keep, w, sizeof w) == 0 && memcmp(km, op.m, sizeof km) == 0 && op.step == 2,
	   "a refused step changes nothing");
	optim_free(&op);
}

/*
 * The clip factor is min(1, max/(norm + 1e-6)) for every norm, as optim.h,
 * grpo-step(1) and torch.nn.utils.clip_grad_norm_ have it: a gradient whose
 * norm is max_grad_norm itself is scaled by max/(max + 1e-6), not left alone.
 */
static void clip_at_the_bound(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	o.max_grad_norm = 1;
	struct optim op;
	struct err e = { 0 };
	optim_init(&op, &o, N, &e);
	float w[N] = { 0 }, g[N] = { 0 };
	g[3] = 1;   /* norm exactly 1 */
	struct optim_result r;
	optim_step(&op, w, g, &r, &e);
	is_float(r.grad_norm, 1, 0, "a gradient of norm max_grad_norm");
	is_float(r.clip, 1 / (1 + 1e-6), 1e-15, "is scaled by max/(norm + 1e-6), as torch's clip_grad_norm_ (got %.17g)",
	         r.clip);
	optim_free(&op);
}

static void state_file(void)
{
	char dir[] = "/tmp/test_optim.XXXXXX", path[64], bad[80];
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/optim.bin", dir);
	snprintf(bad, sizeof bad, "%s/bad.bin", dir);
	struct optim_opts o;
	optim_opts_default(&o);
	o.lr = 1e-3;
	struct optim a, b;
	struct err e = { 0 };
	optim_init(&a, &o, N, &e);
	optim_init(&b, &o, N, &e);
	float w[N], g[N], w2[N], wb[N];
	for (int i = 0; i < N; i++)
		w[i] = (float)urand(), g[i] = (float)(urand() - 0.5);
	optim_step(&a, w, g, NULL, &e);
	optim_step(&a, w, g, NULL, &e);
	ok(optim_save(&a, w, path, &e) == 0, "save");
	ok(optim_save(&a, w, path, &e) < 0, "save refuses to replace a file");
	ok(optim_load(&b, w2, N, path, &e) == 0, "load: %s", e.msg);
	ok(memcmp(w, w2, sizeof w) == 0 && memcmp(a.m, b.m, N * 4) == 0 && memcmp(a.v, b.v, N * 4) == 0 &&
	   b.step == 2, "weights, moments and step come back bit for bit");
	/* resume: the next step from the loaded state equals the next step of the one that never stopped */
	optim_step(&a, w, g, NULL, &e);
	optim_step(&b, w2, g, NULL, &e);
	ok(memcmp(w, w2, sizeof w) == 0, "a step after loading is bit-identical");

	struct optim c;
	optim_init(&c, &o, N - 1, &e);
	ok(optim_load(&c, wb, N - 1, path, &e) < 0 && strstr(e.msg, "weights"), "wrong size refused: %s", e.msg);
	optim_free(&c);

	/* one flipped byte in the moments */
	FILE *f = fopen(path, "rb"), *out = fopen(bad, "wb");
	int ch, i = 0;
	while ((ch = fgetc(f)) != EOF)
		fputc(i++ == 32 + 4 * N + 9 ? ch ^ 1 : ch, out);
	fclose(f);
	fclose(out);
	ok(optim_load(&b, wb, N, bad, &e) < 0 && strstr(e.msg, "checksum"), "corrupt byte: %s", e.msg);
	ok(truncate(bad, 100) == 0 && optim_load(&b, wb, N, bad, &e) < 0 && strstr(e.msg, "truncated"),
	   "truncated file: %s", e.msg);
	/* the layout of optim.h: a 32-byte header, weights, m, v (n floats each), an 8-byte checksum */
	struct stat sb;
	ok(stat(path, &sb) == 0 && sb.st_size == 32 + 3 * 4 * N + 8, "the file is 32 + 12n + 8 bytes (%lld)",
	   (long long)sb.st_size);
	static const struct {
		long at;
		int mask;
		const char *says, *what;
	} flips[] = {
		{ 32, 1, "checksum", "the first byte of the weights" },
		{ 7, '1' ^ '2', "magic", "the magic's last byte (GRPOOPT2)" },
		{ 12, 1, "kind 1", "the kind (1, not AdamW's 0)" },
	};
	for (size_t k = 0; k < sizeof flips / sizeof flips[0]; k++) {
		FILE *src = fopen(path, "rb"), *dst = fopen(bad, "wb");
		int c;
		long at = 0;
		while ((c = fgetc(src)) != EOF)
			fputc(at++ == flips[k].at ? c ^ flips[k].mask : c, dst);
		fclose(src);
		fclose(dst);
		ok(optim_load(&b, wb, N, bad, &e) < 0 && strstr(e.msg, flips[k].says), "%s changed: %s", flips[k].what, e.msg);
		unlink(bad);
	}
	ok(optim_load(&b, wb, N, bad, &e) < 0 && strstr(e.msg, "bad.bin"), "a missing file: %s", e.msg);
	{
		FILE *src = fopen(path, "rb"), *dst = fopen(bad, "wb");
		int c;
		while ((c = fgetc(src)) != EOF)
			fputc(c, dst);
		fputc(0, dst);
		fclose(src);
		fclose(dst);
		ok(optim_load(&b, wb, N, bad, &e) < 0 && strstr(e.msg, "trailing"), "a byte after the checksum: %s", e.msg);
		unlink(bad);
	}
	unlink(path);
	unlink(bad);
	rmdir(dir);
	optim_free(&a);
	optim_free(&b);
}

/* Each bound of optim_opts_check alone, and the values on its edge that are allowed. */
static void option_bounds(void)
{
	static const struct {
		const char *name;
		double lr, beta1, beta2, eps;
		int warmup, total, refused;
	} cases[] = {
		{ "lr 0", 0, 0.9, 0.999, 1e-8, 0, 0, 0 },
		{ "lr -1e-6", -1e-6, 0.9, 0.999, 1e-8, 0, 0, 1 },
		{ "beta1 0", 1e-6, 0, 0.999, 1e-8, 0, 0, 0 },
		{ "beta1 1", 1e-6, 1, 0.999, 1e-8, 0, 0, 1 },
		{ "beta1 -0.1", 1e-6, -0.1, 0.999, 1e-8, 0, 0, 1 },
		{ "beta2 0", 1e-6, 0.9, 0, 1e-8, 0, 0, 0 },
		{ "beta2 1", 1e-6, 0.9, 1, 1e-8, 0, 0, 1 },
		{ "beta2 -0.1", 1e-6, 0.9, -0.1, 1e-8, 0, 0, 1 },
		{ "eps 0", 1e-6, 0.9, 0.999, 0, 0, 0, 1 },
		{ "cosine, total steps = warmup", 1e-6, 0.9, 0.999, 1e-8, 4, 4, 1 },
		{ "cosine, total steps = warmup + 1", 1e-6, 0.9, 0.999, 1e-8, 4, 5, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct optim_opts o;
		optim_opts_default(&o);
		o.lr = cases[i].lr, o.beta1 = cases[i].beta1, o.beta2 = cases[i].beta2, o.eps = cases[i].eps;
		o.warmup_steps = cases[i].warmup, o.total_steps = cases[i].total;
		if (cases[i].total)
			o.schedule = LR_COSINE;
		struct err e = { 0 };
		int rc = optim_opts_check(&o, &e);
		ok(cases[i].refused ? rc < 0 : rc == 0, "%s: %s%s", cases[i].name, cases[i].refused ? "refused: " : "taken",
		   e.msg);
	}
}

/*
 * The schedule at its joints: warmup ends at the peak lr (t = warmup_steps),
 * and past total_steps the linear schedule stays at 0, never below.
 */
static void schedule_joints(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	o.lr = 1, o.warmup_steps = 4, o.total_steps = 14, o.schedule = LR_COSINE;
	is_float(optim_lr(&o, 4), 1, 0, "cosine: the last warmup step is at the peak lr");
	is_float(optim_lr(&o, 5), 1, 0, "cosine: the first step after warmup too (p = 0)");
	o.schedule = LR_LINEAR;
	is_float(optim_lr(&o, 14), 0.1, 1e-15, "linear: p = 0.9 at the last step");
	is_float(optim_lr(&o, 20), 0, 0, "linear: 0 past total steps, not negative");
	o.schedule = LR_COSINE;
	is_float(optim_lr(&o, 20), 0, 1e-15, "cosine: 0 past total steps");
	/* grpo-step's default clips the global gradient norm at 1 */
	optim_opts_default(&o);
	struct optim op;
	struct err e = { 0 };
	optim_init(&op, &o, N, &e);
	float w[N] = { 0 }, g[N] = { 0 };
	g[0] = 3, g[1] = 4;
	struct optim_result r;
	optim_step(&op, w, g, &r, &e);
	is_float(r.clip, 1 / (5 + 1e-6), 1e-15, "default max grad norm 1: a norm of 5 is scaled by 1/5");
	optim_free(&op);
}

/* The n weights read and written, nothing past them; a refusal at the first step names step 1. */
static void bounds_and_names(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	struct optim op;
	struct err e = { 0 };
	optim_init(&op, &o, N, &e);
	float w[N + 1], g[N + 1];
	for (int i = 0; i < N; i++)
		w[i] = 0.5f, g[i] = 0.01f;
	w[N] = 42, g[N] = NAN;
	struct optim_result r;
	ok(optim_step(&op, w, g, &r, &e) == 0 && w[N] == 42, "a step reads n gradients and writes n weights: %s",
	   e.msg);
	g[0] = NAN;
	optim_free(&op);
	optim_init(&op, &o, N, &e);
	ok(optim_step(&op, w, g, &r, &e) < 0 && strstr(e.msg, "step 1 not taken"), "NaN at the first step: %s", e.msg);
	optim_free(&op);
}

/* Three steps of o over the same weights and gradients, with the decayed spans s (ns; s NULL: none given). */
static int decay_run(struct optim_opts o, const struct optim_span *s, size_t ns, float *w, float *m, float *v,
                     struct err *e)
{
	struct optim op;
	if (optim_init(&op, &o, N, e) < 0 || (s && optim_set_decayed(&op, s, ns, e) < 0))
		return -1;
	uint64_t keep = rng;
	rng = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < N; i++)
		w[i] = (float)(urand() * 2 - 1);
	int rc = 0;
	for (int t = 1; t <= 3 && rc == 0; t++) {
		float g[N];
		for (int i = 0; i < N; i++)
			g[i] = (float)(urand() * 2 - 1);
		rc = optim_step(&op, w, g, NULL, e);
	}
	memcpy(m, op.m, sizeof(float) * N);
	memcpy(v, op.v, sizeof(float) * N);
	rng = keep;
	optim_free(&op);
	return rc;
}

/* Weight decay on the spans the caller names (--weight-decay-on matrices)
 * or on every weight (all): the others step as with no decay, to the bit. */
static void decay_spans(void)
{
	struct optim_opts o;
	optim_opts_default(&o);
	o.lr = 1e-2, o.weight_decay = 0.5, o.max_grad_norm = 0;
	/* the first weight, one inside, and the last: the edges of the array too */
	static const struct optim_span sp[] = { { 0, 10 }, { 100, 57 }, { N - 7, 7 } };
	float w0[N], m0[N], v0[N], wm[N], mm[N], vm[N], wa[N], ma[N], va[N], wn[N], mn[N], vn[N];
	struct err e = { 0 };
	struct optim_opts none = o, all = o;
	none.weight_decay = 0;
	all.wd_on = WD_ON_ALL;
	int rc = decay_run(none, NULL, 0, w0, m0, v0, &e) | decay_run(o, sp, 3, wm, mm, vm, &e) |
	         decay_run(all, NULL, 0, wa, ma, va, &e) | decay_run(o, sp, 0, wn, mn, vn, &e);
	if (!ok(rc == 0, "three steps with no decay, on spans, on all, on no span: %s", e.msg))
		return;
	int in[N] = { 0 }, wrong = 0, alldiff = 0;
	for (size_t k = 0; k < 3; k++)
		for (size_t i = sp[k].off; i < sp[k].off + sp[k].n; i++)
			in[i] = 1;
	for (int i = 0; i < N; i++) {
		/* in a span as under all, else as with no decay; moments as ever */
		if (memcmp(&wm[i], in[i] ? &wa[i] : &w0[i], 4) != 0 || (in[i] && wm[i] == w0[i]))
			wrong++;
		alldiff += wa[i] != w0[i];
	}
	ok(wrong == 0, "on spans: the %d decayed weights as under all, the others as with no decay (%d wrong)", 74, wrong);
	ok(alldiff == N, "on all: every weight decayed (%d of %d)", alldiff, N);
	ok(memcmp(mm, m0, sizeof mm) == 0 && memcmp(vm, v0, sizeof vm) == 0 && memcmp(ma, m0, sizeof ma) == 0 &&
	   memcmp(va, v0, sizeof va) == 0, "decay leaves the moments alone");
	ok(memcmp(wn, w0, sizeof wn) == 0, "no span: nothing decays");

	/* not told: refused, nothing moved */
	struct optim op;
	float w[N], g[N];
	for (int i = 0; i < N; i++)
		w[i] = 1, g[i] = 0.5f;
	optim_init(&op, &o, N, &e);
	ok(optim_step(&op, w, g, NULL, &e) < 0 && strstr(e.msg, "matrices") && strstr(e.msg, "step 1 not taken") &&
	   w[0] == 1 && op.step == 0 && op.m[0] == 0, "decay on matrices never named: refused, nothing moved: %s", e.msg);
	struct optim_opts zero = o;
	zero.weight_decay = 0;
	op.o = zero;
	ok(optim_step(&op, w, g, NULL, &e) == 0, "without weight decay no spans are needed");
	op.o = all;
	ok(optim_step(&op, w, g, NULL, &e) == 0, "nor on all");
	static const struct optim_span overlap[] = { { 0, 10 }, { 9, 2 } }, past[] = { { N - 1, 2 } },
	                                 back[] = { { 20, 1 }, { 10, 1 } }, huge[] = { { 1, SIZE_MAX } };
	ok(optim_set_decayed(&op, overlap, 2, &e) < 0 && strstr(e.msg, "span 1"), "overlapping spans: %s", e.msg);
	ok(optim_set_decayed(&op, past, 1, &e) < 0 && strstr(e.msg, "span 0"), "a span past the end: %s", e.msg);
	ok(optim_set_decayed(&op, back, 2, &e) < 0, "spans out of order: %s", e.msg);
	ok(optim_set_decayed(&op, huge, 1, &e) < 0, "a span whose end overflows: %s", e.msg);
	ok(op.decayed_set == 0, "a refused set leaves the optimizer untold");
	static const struct optim_span whole[] = { { 0, N } };
	ok(optim_set_decayed(&op, whole, 1, &e) == 0 && op.ndecayed == 1, "the whole array is one span");
	optim_free(&op);

	ok(strcmp(wd_on_names[WD_ON_MATRICES], "matrices") == 0 && strcmp(wd_on_name(WD_ON_ALL), "all") == 0 &&
	   !wd_on_names[2] && strcmp(wd_on_name((enum wd_on)7), "?") == 0, "--weight-decay-on's words, in the enum's order");
	o.wd_on = (enum wd_on)2;
	ok(optim_opts_check(&o, &e) < 0 && strstr(e.msg, "weight decay on"), "an unknown choice: %s", e.msg);
	struct optim_opts d;
	optim_opts_default(&d);
	ok(d.wd_on == WD_ON_MATRICES, "matrices by default");
}

int main(void)
{
	schedules();
	adamw();
	clipping_and_nan();
	clip_at_the_bound();
	state_file();
	option_bounds();
	schedule_joints();
	bounds_and_names();
	decay_spans();
	return tap_done();
}
