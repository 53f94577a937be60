/*
 * test_cuda_paged: the paged key/value cache (kernels/paged.cuh): the new
 * tokens' and the earlier positions' k and v written into cache blocks laid
 * out in a shuffled physical order, then one decode step's attention,
 * against attention over each row's context computed here in double.
 * Batches mix contexts of 1, 2, 15, 16, 17 (the edges of a 16-token cache
 * block), 100, 300, 512, 513 and 1025 (the edges of the 512-position
 * partitions, combined by a second pass) and padding rows (context 0:
 * zeros); two shapes run contexts of 4097 to 5000. Query groups of 1, 2, 7,
 * 8 and 12 (more than a block's 8 heads), every head size. In fp32 the
 * bound is 1e-4 of the largest value; in bf16 the inputs are rounded to
 * bf16 before the reference and the output is bf16: 0.02 + 1% of the value.
 * A second run, with the blocks shuffled otherwise and the step captured in
 * a CUDA graph, must give the same bits. Outputs start as NaNs, and so do
 * the cache's unwritten slots, so a row or a position a kernel skipped, or
 * one it read past the context, fails.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "gpu_paged.h"

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#include "../xorshift.h"
#include "kernel_check.h"

/* One test batch: B rows, each with its context; every array on the host. */
struct batch {
	int B, max_ctx, NH, NKV, HS;
	const int32_t *lens;
	float *qkv, *kctx, *vctx;   /* (B, (NH + 2 NKV) HS), (B, max_ctx, NKV, HS) twice */
};

/* Random q, k, v (q scaled by 3: scores of a few units, so softmaxes are
 * far from flat); each row's last position is its new token's k and v. */
static int make_batch(struct batch *t, int bf16)
{
	int stride = (t->NH + 2 * t->NKV) * t->HS, kv = t->NKV * t->HS;
	size_t nq = (size_t)t->B * stride, nc = (size_t)t->B * t->max_ctx * kv;
	t->qkv = malloc(nq * sizeof *t->qkv);
	t->kctx = malloc((nc ? nc : 1) * sizeof *t->kctx);
	t->vctx = malloc((nc ? nc : 1) * sizeof *t->vctx);
	if (!t->qkv || !t->kctx || !t->vctx)
		return -1;
	for (size_t i = 0; i < nq; i++)
		t->qkv[i] = (float)(gauss() * ((int)(i % stride) < t->NH * t->HS ? 3 : 1));
	for (size_t i = 0; i < nc; i++) {
		t->kctx[i] = (float)gauss();
		t->vctx[i] = (float)gauss();
	}
	if (bf16)
		for (size_t i = 0; i < (nq > nc ? nq : nc); i++) {
			if (i < nq)
				t->qkv[i] = round_bf16(t->qkv[i]);
			if (i < nc) {
				t->kctx[i] = round_bf16(t->kctx[i]);
				t->vctx[i] = round_bf16(t->vctx[i]);
			}
		}
	for (int b = 0; b < t->B; b++) {
		if (t->lens[b] == 0)
			continue;
		const float *k = t->qkv + (size_t)b * stride + t->NH * t->HS, *v = k + kv;
		size_t at = ((size_t)b * t->max_ctx + t->lens[b] - 1) * kv;
		memcpy(t->kctx + at, k, kv * sizeof *k);
		memcpy(t->vctx + at, v, kv * sizeof *v);
	}
	return 0;
}

static void free_batch(struct batch *t)
{
	free(t->qkv);
	free(t->kctx);
	free(t->vctx);
}

/* out (B, NH*HS): row b's query heads over its positions 0 .. lens[b] - 1, in double */
static void reference(const struct batch *t, double *out)
{
	int stride = (t->NH + 2 * t->NKV) * t->HS, kv = t->NKV * t->HS, group = t->NH / t->NKV, HS = t->HS;
	double scale = 1 / sqrt((double)HS);
	double *p = malloc(((size_t)t->max_ctx + 1) * sizeof *p);
	memset(out, 0, (size_t)t->B * t->NH * HS * sizeof *out);
	for (int b = 0; b < t->B; b++)
		for (int h = 0; h < t->NH; h++) {
			const float *q = t->qkv + (size_t)b * stride + h * HS;
			const float *K = t->kctx + (size_t)b * t->max_ctx * kv + h / group * HS;
			const float *V = t->vctx + (size_t)b * t->max_ctx * kv + h / group * HS;
			double mx = -INFINITY, sum = 0, *o = out + ((size_t)b * t->NH + h) * HS;
			for (int j = 0; j < t->lens[b]; j++) {
				double d = 0;
				for (int i = 0; i < HS; i++)
					d += (double)q[i] * K[(size_t)j * kv + i];
				p[j] = d * scale;
				mx = p[j] > mx ? p[j] : mx;
			}
			for (int j = 0; j < t->lens[b]; j++)
				sum += p[j] = exp(p[j] - mx);
			for (int j = 0; j < t->lens[b]; j++)
				for (int i = 0; i < HS; i++)
					o[i] += p[j] / sum * V[(size_t)j * kv + i];
		}
	free(p);
}

/* The reference itself on cases with known answers: one position gives its
 * v; keys all equal give the mean of the values. */
static void check_reference(void)
{
	static const int32_t lens[] = { 1, 3 };
	struct batch t = { 2, 3, 2, 1, 16, lens, NULL, NULL, NULL };
	double out[2 * 2 * 16];
	if (make_batch(&t, 0) < 0)
		return;
	for (int j = 0; j < 3; j++)   /* row 1: every key as its last */
		memcpy(t.kctx + ((size_t)3 + j) * 16, t.qkv + 4 * 16 + 2 * 16, 16 * sizeof(float));
	reference(&t, out);
	double d0 = 0, d1 = 0;
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < 16; i++) {
			double v0 = t.qkv[3 * 16 + i], mean = 0;   /* row 0's v: after its 2 q heads and 1 k head */
			for (int j = 0; j < 3; j++)
				mean += t.vctx[((size_t)3 + j) * 16 + i] / 3.0;
			d0 = fmax(d0, fabs(out[h * 16 + i] - v0));
			d1 = fmax(d1, fabs(out[(2 + h) * 16 + i] - mean));
		}
	ok(d0 < 1e-12 && d1 < 1e-12, "the reference: one position gives its v (%.2g), equal keys the mean of v (%.2g)",
	   d0, d1);
	free_batch(&t);
}

static void run_batch(int NH, int NKV, int HS, const int32_t *lens, int B, int bf16)
{
	int max_ctx = 0;
	for (int b = 0; b < B; b++)
		max_ctx = lens[b] > max_ctx ? lens[b] : max_ctx;
	struct batch t = { B, max_ctx, NH, NKV, HS, lens, NULL, NULL, NULL };
	size_t nout = (size_t)B * NH * HS;
	double *want = malloc(nout * sizeof *want);
	float *got = malloc(nout * sizeof *got), *again = malloc(nout * sizeof *again);
	const char *name = bf16 ? "bf16" : "fp32";
	char msg[256] = "";
	if (!want || !got || !again || make_batch(&t, bf16) < 0) {
		ok(0, "%s, %d/%d heads of %d: out of host memory", name, NH, NKV, HS);
		goto out;
	}
	reference(&t, want);
	if (!ok(gpu_paged_attention_test(t.qkv, t.kctx, t.vctx, lens, B, max_ctx, NH, NKV, HS, bf16, 1, 0, got, msg,
					 sizeof msg) == 0,
		"%s, %d/%d heads of %d: a step ran on %d rows, contexts up to %d", name, NH, NKV, HS, B, max_ctx)) {
		diag("%s", msg);
		goto out;
	}
	struct cmp c = bf16 ? compare(got, want, nout, 0.02, 0.01, 0) : compare(got, want, nout, 0, 1e-4, 1);
	if (c.bad)
		diag("  first miss at row %zu (context %d), head %zu, dim %zu: got %g, want %g", c.first / (NH * HS),
		     lens[c.first / (NH * HS)], c.first % (NH * HS) / HS, c.first % HS, got[c.first], want[c.first]);
	ok(c.bad == 0, "%s, %d/%d heads of %d: within %s of double (worst %.3g, mean %.2g)", name, NH, NKV, HS,
	   bf16 ? "0.02 + 1%" : "1e-4 of the largest value", c.worst, c.mean);
	size_t nonzero = 0;
	for (int b = 0; b < B; b++)
		for (int i = 0; i < NH * HS && lens[b] == 0; i++)
			nonzero += got[(size_t)b * NH * HS + i] != 0;
	ok(nonzero == 0, "%s, %d/%d heads of %d: padding rows are zeros", name, NH, NKV, HS);
	int r = gpu_paged_attention_test(t.qkv, t.kctx, t.vctx, lens, B, max_ctx, NH, NKV, HS, bf16, 2, 1, again, msg,
					 sizeof msg);
	if (r < 0)
		diag("%s", msg);
	ok(r == 0 && memcmp(got, again, nout * sizeof *got) == 0,
	   "%s, %d/%d heads of %d: the same bits with the blocks shuffled otherwise, in a CUDA graph", name, NH, NKV,
	   HS);
out:
	free_batch(&t);
	free(want);
	free(got);
	free(again);
}

int main(void)
{
	skip_without_gpu();
	/* GRPO_TEST_SMALL=1: only two shapes, for compute-sanitizer's slow tools */
	int small = getenv("GRPO_TEST_SMALL") != NULL;
	static const int shapes[][3] = {
		{ 14, 2, 64 },    /* Qwen2.5-0.5B: 7 q heads per kv head */
		{ 16, 8, 128 },   /* Qwen3-0.6B */
		{ 8, 1, 64 },     /* a group of 8: a block's most */
		{ 12, 1, 128 },   /* a group of 12: blocks of 8 and 4 heads */
		{ 4, 4, 128 },
		{ 2, 1, 16 },     /* the other head sizes */
		{ 4, 2, 24 },
		{ 3, 3, 32 },
		{ 2, 2, 48 },
		{ 2, 1, 80 },
		{ 4, 2, 96 },
	};
	/* contexts past one partition, so combined; and within one, with no workspace */
	static const int32_t mixed[] = { 1, 15, 16, 17, 100, 0, 300, 512, 513, 1025, 2, 0 };
	static const int32_t within[] = { 17, 1, 0, 300, 16, 15 };
	static const int32_t longer[] = { 5000, 1, 4097, 0, 4608 };
	check_reference();
	for (size_t i = 0; i < (small ? 2 : sizeof shapes / sizeof shapes[0]); i++)
		for (int bf16 = 0; bf16 <= 1; bf16++) {
			run_batch(shapes[i][0], shapes[i][1], shapes[i][2], mixed, 12, bf16);
			if (i < 2)
				run_batch(shapes[i][0], shapes[i][1], shapes[i][2], within, 6, bf16);
		}
	for (int bf16 = 0; bf16 <= 1; bf16++) {
		run_batch(14, 2, 64, longer, 5, bf16);
		if (!small)
			run_batch(12, 1, 128, longer, 5, bf16);
	}
	char msg[256] = "";
	float x[3 * 40] = { 0 }, o[40];
	int32_t one = 1;
	ok(gpu_paged_attention_test(x, x, x, &one, 1, 1, 1, 1, 40, 0, 1, 0, o, msg, sizeof msg) < 0,
	   "head size 40 refused: %s", msg);
	return tap_done();
}
