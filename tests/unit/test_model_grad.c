/*
 * test_model_grad: the backward against finite differences on tiny random
 * models of each family (biases, q/k norm, llama3 RoPE, tied and untied
 * heads), for a loss mixing logprobs and entropies at per-token temperatures
 * other than 1; plus packing (logprobs and gradients), accumulation and
 * thread-count properties.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "../tap.h"

#define XORSHIFT_SEED 88172645463325252ull
#include "../xorshift.h"

static void tiny(struct model *m, enum model_family f, int tied)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, f);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.V = 40, c.tied = tied, c.init_std = 0.3f;
	c.HS = f == MODEL_QWEN3 ? 6 : 4;   /* Qwen3: head_dim != hidden / heads */
	c.eps = 1e-5f;
	if (f == MODEL_LLAMA) {
		c.rope_theta = 10000, c.rope_llama3 = 1, c.rope_factor = 4, c.rope_low_freq = 1, c.rope_high_freq = 2;
		c.rope_orig_max = 8;
		c.qkv_bias = c.o_bias = 1;   /* attention_bias: true */
	}
	struct err e;
	if (model_create(m, &c, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
	model_init_random(m, 7, NULL);
	/* norms and biases away from 1 and 0, so their gradients are exercised */
	int n = model_tensors(&m->cfg, &m->w, NULL);
	struct model_tensor *ts = calloc((size_t)n, sizeof *ts);
	model_tensors(&m->cfg, &m->w, ts);
	for (int i = 0; i < n; i++)
		if (ts[i].ndim == 1)
			for (int j = 0; j < ts[i].shape[0]; j++)
				ts[i].data[j] += (float)(0.6 * urand() - 0.3);
	free(ts);
}

enum { T = 16 };
static const int seq_lens[] = { 5, 1, 7, 3 };
static int ids[T];
static float temps[T], a_lp[T], a_ent[T];

static double loss(struct model *m)
{
	float lp[T], ent[T];
	struct err e;
	if (model_forward(m, ids, T, seq_lens, 4, temps, lp, ent, &e) < 0) {
		diag("%s", e.msg);
		exit(1);
	}
	double L = 0;
	for (int i = 0; i < T; i++)
		L += (double)a_lp[i] * lp[i] + (double)a_ent[i] * ent[i];
	return L;
}

/*
 * For every tensor, the derivative along a random unit direction d: the
 * fourth-order central difference
 *   (8 (L(w + h d) - L(w - h d)) - (L(w + 2h d) - L(w - 2h d))) / 12h
 * against sum(grad * d). A whole tensor per check keeps fp32 rounding well
 * below the tolerance; a wrong gradient is off by far more.
 */
static void check_fd(struct model *m, const char *what)
{
	struct err e;
	model_grads_alloc(m, &e);
	model_grads_zero(m);
	loss(m);
	model_backward(m, a_lp, a_ent, &e);
	int n = model_tensors(&m->cfg, &m->w, NULL);
	struct model_tensor *w = calloc((size_t)n, sizeof *w), *g = calloc((size_t)n, sizeof *g);
	model_tensors(&m->cfg, &m->w, w);
	model_tensors(&m->cfg, &m->g, g);
	int bad = 0;
	double worst = 0;
	for (int i = 0; i < n; i++) {
		size_t cnt = (size_t)w[i].shape[0] * (size_t)(w[i].ndim == 2 ? w[i].shape[1] : 1);
		float *d = malloc(cnt * sizeof *d), *save = malloc(cnt * sizeof *save);
		memcpy(save, w[i].data, cnt * sizeof *save);
		double ana = 0;
		for (size_t j = 0; j < cnt; j++) {
			d[j] = (float)((urand() < 0.5 ? -1.0 : 1.0) / sqrt((double)cnt));
			ana += (double)g[i].data[j] * d[j];
		}
		const double h = 1e-2;
		double L[4];
		const double steps[4] = { h, -h, 2 * h, -2 * h };
		for (int s = 0; s < 4; s++) {
			for (size_t j = 0; j < cnt; j++)
				w[i].data[j] = save[j] + (float)steps[s] * d[j];
			L[s] = loss(m);
		}
		double num = (8 * (L[0] - L[1]) - (L[2] - L[3])) / (12 * h);
		memcpy(w[i].data, save, cnt * sizeof *save);
		double rel = fabs(num - ana) / fmax(fabs(ana), 0.1);
		if (!(rel <= 1e-2)) {
			diag("  %s %s: finite difference %.6g, backward %.6g", what, w[i].name, num, ana);
			bad++;
		}
		worst = fmax(worst, rel);
		free(d);
		free(save);
	}
	ok(bad == 0, "%s: backward agrees with finite differences for all %d tensors (worst relative %.2g)", what, n,
	   worst);
	free(w);
	free(g);
}

static void fill_loss(int use_lp, int use_ent)
{
	for (int i = 0; i < T; i++) {
		a_lp[i] = use_lp ? (float)(2 * urand() - 1) : 0;
		a_ent[i] = use_ent ? (float)(2 * urand() - 1) : 0;
	}
}

/* Largest over tensors of |a - b| / |b| (2-norms); 0 when both are 0. */
static double worst_rel_norm(const struct model *m, const float *a, const float *b)
{
	int n = model_tensors(&m->cfg, &m->g, NULL);
	struct model_tensor *ts = calloc((size_t)n, sizeof *ts);
	model_tensors(&m->cfg, &m->g, ts);
	double worst = 0;
	for (int i = 0; i < n; i++) {
		size_t off = (size_t)(ts[i].data - m->g.mem);
		size_t cnt = (size_t)ts[i].shape[0] * (size_t)(ts[i].ndim == 2 ? ts[i].shape[1] : 1);
		double dd = 0, bb = 0;
		for (size_t j = off; j < off + cnt; j++) {
			dd += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
			bb += (double)b[j] * b[j];
		}
		if (dd > 0)
			worst = fmax(worst, sqrt(dd / fmax(bb, 1e-300)));
	}
	free(ts);
	return worst;
}

/*
 * Packing changes nothing for gradients either: each sequence's gradient
 * computed alone equals its contribution inside the pack (the pack's
 * gradient with the loss coefficients of every other sequence zeroed), and
 * the pack's gradient is the sum of the sequences' own.
 */
static void check_pack_grads(enum model_family f, int tied, const char *name)
{
	struct model m;
	struct err e;
	tiny(&m, f, tied);
	model_acts_alloc(&m, T, &e);
	model_grads_alloc(&m, &e);
	fill_loss(1, 1);
	float lp[T], ent[T], zl[T], ze[T];
	float *alone = malloc(m.g.n * sizeof *alone), *sum = calloc(m.g.n, sizeof *sum);
	double worst = 0;
	for (int s = 0, start = 0; s < 4; start += seq_lens[s], s++) {
		int len = seq_lens[s];
		model_grads_zero(&m);
		model_forward(&m, ids + start, len, &len, 1, temps + start, lp, ent, &e);
		model_backward(&m, a_lp + start, a_ent + start, &e);
		memcpy(alone, m.g.mem, m.g.n * sizeof *alone);
		for (size_t j = 0; j < m.g.n; j++)
			sum[j] += alone[j];
		for (int i = 0; i < T; i++) {
			int mine = i >= start && i < start + len;
			zl[i] = mine ? a_lp[i] : 0;
			ze[i] = mine ? a_ent[i] : 0;
		}
		model_grads_zero(&m);
		model_forward(&m, ids, T, seq_lens, 4, temps, lp, ent, &e);
		model_backward(&m, zl, ze, &e);
		worst = fmax(worst, worst_rel_norm(&m, m.g.mem, alone));
	}
	ok(worst < 1e-5, "%s: each sequence's gradient alone equals its part of the pack's (worst relative %.2g)", name,
	   worst);
	model_grads_zero(&m);
	model_forward(&m, ids, T, seq_lens, 4, temps, lp, ent, &e);
	model_backward(&m, a_lp, a_ent, &e);
	double w2 = worst_rel_norm(&m, m.g.mem, sum);
	ok(w2 < 1e-5, "%s: the pack's gradient is the sum of the sequences' (worst relative %.2g)", name, w2);
	free(alone);
	free(sum);
	model_free(&m);
}

int main(void)
{
	for (int i = 0; i < T; i++) {
		ids[i] = (int)(urand() * 40);
		temps[i] = (float)(0.6 + 0.8 * urand());
	}
	const struct { enum model_family f; int tied; const char *name; } fams[] = {
		{ MODEL_QWEN2, 1, "qwen2 tied" }, { MODEL_QWEN3, 0, "qwen3 untied" }, { MODEL_LLAMA, 0, "llama3 rope, biases" },
	};
	struct err e;
	for (int k = 0; k < 3; k++) {
		struct model m;
		tiny(&m, fams[k].f, fams[k].tied);
		model_acts_alloc(&m, T, &e);
		char what[128];
		fill_loss(1, 0);
		snprintf(what, sizeof what, "%s, logprob loss", fams[k].name);
		check_fd(&m, what);
		fill_loss(0, 1);
		snprintf(what, sizeof what, "%s, entropy loss", fams[k].name);
		check_fd(&m, what);
		model_free(&m);
	}

	for (int k = 0; k < 3; k++)
		check_pack_grads(fams[k].f, fams[k].tied, fams[k].name);

	/* backward accumulates: twice the same backward doubles the gradient */
	struct model m;
	tiny(&m, MODEL_QWEN2, 1);
	model_acts_alloc(&m, T, &e);
	model_grads_alloc(&m, &e);
	fill_loss(1, 1);
	loss(&m);
	model_backward(&m, a_lp, a_ent, &e);
	float *once = malloc(m.g.n * sizeof *once);
	memcpy(once, m.g.mem, m.g.n * sizeof *once);
	model_backward(&m, a_lp, a_ent, &e);
	double dd = 0, nn = 0;
	for (size_t i = 0; i < m.g.n; i++) {
		dd += ((double)m.g.mem[i] - 2.0 * once[i]) * ((double)m.g.mem[i] - 2.0 * once[i]);
		nn += 4.0 * once[i] * once[i];
	}
	ok(sqrt(dd / nn) < 1e-6, "backward adds into the gradients (+=)");
	free(once);

	/* alignment: the first token of each sequence has no prediction */
	float lp[T], ent[T];
	model_forward(&m, ids, T, seq_lens, 4, temps, lp, ent, &e);
	ok(lp[0] == 0 && lp[5] == 0 && lp[6] == 0 && lp[13] == 0 && ent[5] == 0,
	   "sequence starts (0, 5, 6, 13) get logprob and entropy 0");
	int neg = 1;
	for (int i = 0; i < T; i++)
		if (i != 0 && i != 5 && i != 6 && i != 13)
			neg &= lp[i] < 0 && ent[i] > 0;
	ok(neg, "every other token gets a negative logprob and a positive entropy");

	/* errors a caller can make */
	const int bad_lens[] = { 5, 1, 7, 2 };
	ok(model_forward(&m, ids, T, bad_lens, 4, NULL, lp, NULL, &e) < 0 && strstr(e.msg, "sum to 15"),
	   "seq_lens that do not cover the pack: %s", e.msg);
	int bad_ids[T];
	memcpy(bad_ids, ids, sizeof ids);
	bad_ids[3] = 40;
	ok(model_forward(&m, bad_ids, T, seq_lens, 4, NULL, lp, NULL, &e) < 0 && strstr(e.msg, "token 3"),
	   "an id outside the vocabulary: %s", e.msg);
	ok(model_forward(&m, ids, T + 1, seq_lens, 4, NULL, lp, NULL, &e) < 0, "a pack longer than the activations: %s",
	   e.msg);
	float t0[T];
	memcpy(t0, temps, sizeof t0);
	t0[5] = 0;   /* a sequence start: nothing is predicted with it */
	ok(model_forward(&m, ids, T, seq_lens, 4, t0, lp, NULL, &e) == 0, "temperature 0 at a sequence start is unused");
	t0[7] = 0;
	ok(model_forward(&m, ids, T, seq_lens, 4, t0, lp, NULL, &e) < 0 && strstr(e.msg, "token 7"),
	   "temperature 0 where a token is predicted: %s", e.msg);
	model_free(&m);

	/* results do not depend on the thread count (a model big enough for OpenBLAS to thread) */
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN2);
	c.C = 192, c.I = 384, c.L = 1, c.NH = 6, c.NKV = 2, c.HS = 32, c.V = 1024, c.tied = 1;
	model_create(&m, &c, &e);
	model_init_random(&m, 3, NULL);
	enum { BT = 192 };
	model_acts_alloc(&m, BT, &e);
	model_grads_alloc(&m, &e);
	int bids[BT], blens[2] = { 100, 92 };
	float blp[2][BT], dl[BT];
	for (int i = 0; i < BT; i++) {
		bids[i] = (int)(urand() * 1024);
		dl[i] = (float)urand();
	}
	float *g1 = malloc(m.g.n * sizeof *g1);
	for (int r = 0; r < 2; r++) {
		model_set_threads(r ? 2 : 1);
		model_grads_zero(&m);
		model_forward(&m, bids, BT, blens, 2, NULL, blp[r], NULL, &e);
		model_backward(&m, dl, NULL, &e);
		if (r == 0)
			memcpy(g1, m.g.mem, m.g.n * sizeof *g1);
	}
	ok(memcmp(blp[0], blp[1], sizeof blp[0]) == 0 && memcmp(g1, m.g.mem, m.g.n * sizeof *g1) == 0,
	   "logprobs and gradients are bit-identical with 1 and 2 threads");
	free(g1);
	model_free(&m);
	return tap_done();
}
