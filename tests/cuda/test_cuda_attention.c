/*
 * test_cuda_attention: the attention kernels alone (the tensor-core forward
 * and backward in bf16 for head sizes 64 and 128; the CUDA-core forward and
 * backward for every head size, in fp32 and bf16) against block-causal
 * grouped-query attention and its gradient computed here in double from the
 * same inputs. Packs hold sequences of 1, 63, 64, 65 and hundreds of tokens
 * (the edges of the 64-query and 32-key tiles) and query groups of 1, 2, 6,
 * 7 and 8. In fp32 the bound is 1e-4 of the largest value; in bf16 the
 * outputs are rounded to bf16, and so, on tensor cores, are the
 * probabilities and dS: 0.02 + 1% of the value forward, 3% of the largest
 * gradient backward. The tensor-core forward's log-sum-exp must match the
 * CUDA-core one's within 1e-3 + 1e-4 of the value (both sum fp32 exps of
 * the same bf16 products), and its backward must give the same bits twice.
 * Anything a kernel failed to write reads NaN and fails.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "gpu_model.h"

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#include "../xorshift.h"
#include "kernel_check.h"

/* out (T, NH*HS) and, with dout, dqkv laid out as qkv, in double */
static void reference(const float *qkv, const float *dout, int T, const uint32_t *lens, int nseq, int NH, int NKV,
		      int HS, double *out, double *dqkv)
{
	int stride = (NH + 2 * NKV) * HS, group = NH / NKV;
	double scale = 1 / sqrt((double)HS);
	double *p = malloc((size_t)T * sizeof *p);
	if (dqkv)
		memset(dqkv, 0, (size_t)T * stride * sizeof *dqkv);
	for (int s = 0, start = 0; s < nseq; start += (int)lens[s++])
		for (int t = start; t < start + (int)lens[s]; t++)
			for (int h = 0; h < NH; h++) {
				const float *q = qkv + (size_t)t * stride + h * HS;
				int kh = h / group;
				double mx = -INFINITY, sum = 0;
				for (int j = start; j <= t; j++) {
					const float *k = qkv + (size_t)j * stride + (NH + kh) * HS;
					double d = 0;
					for (int i = 0; i < HS; i++)
						d += (double)q[i] * k[i];
					p[j] = d * scale;
					mx = p[j] > mx ? p[j] : mx;
				}
				for (int j = start; j <= t; j++)
					sum += p[j] = exp(p[j] - mx);
				double *o = out + (size_t)t * NH * HS + h * HS;
				for (int i = 0; i < HS; i++)
					o[i] = 0;
				for (int j = start; j <= t; j++) {
					p[j] /= sum;
					const float *v = qkv + (size_t)j * stride + (NH + NKV + kh) * HS;
					for (int i = 0; i < HS; i++)
						o[i] += p[j] * v[i];
				}
				if (!dqkv)
					continue;
				/* dV += P dO; dS = P (dO.V - D); dQ = scale dS K; dK += scale dS Q */
				const float *g = dout + (size_t)t * NH * HS + h * HS;
				double D = 0;
				for (int i = 0; i < HS; i++)
					D += g[i] * o[i];
				double *dq = dqkv + (size_t)t * stride + h * HS;
				for (int j = start; j <= t; j++) {
					const float *k = qkv + (size_t)j * stride + (NH + kh) * HS, *v = k + NKV * HS;
					double *dk = dqkv + (size_t)j * stride + (NH + kh) * HS, *dv = dk + NKV * HS;
					double gv = 0;
					for (int i = 0; i < HS; i++)
						gv += g[i] * v[i];
					double ds = p[j] * (gv - D);
					for (int i = 0; i < HS; i++) {
						dv[i] += p[j] * g[i];
						dq[i] += scale * ds * k[i];
						dk[i] += scale * ds * q[i];
					}
				}
			}
	free(p);
}

static const uint32_t long_lens[] = { 65, 1, 1000, 64, 63, 2, 129 };
static const uint32_t short_lens[] = { 65, 1, 300, 64, 63, 2, 129 };

static float *random_input(size_t n, int period, int qwidth, int bf16)
{
	float *x = malloc(n * sizeof *x);
	/* q scaled by 3: scores of a few units, so softmaxes are far from flat */
	for (size_t i = 0; i < n; i++) {
		x[i] = (float)(gauss() * (period && (int)(i % period) < qwidth ? 3 : 1));
		if (bf16)
			x[i] = round_bf16(x[i]);
	}
	return x;
}

static void forward(int NH, int NKV, int HS)
{
	const uint32_t *lens = long_lens;
	int nseq = 7, T = 0, stride = (NH + 2 * NKV) * HS;
	for (int s = 0; s < nseq; s++)
		T += (int)lens[s];
	size_t nin = (size_t)T * stride, nout = (size_t)T * NH * HS;
	float *qkv = random_input(nin, stride, NH * HS, 1);
	double *want = malloc(nout * sizeof *want);
	float *got = malloc(nout * sizeof *got), *first = malloc(nout * sizeof *first);
	float *lse = malloc((size_t)T * NH * sizeof *lse), *lse_mma = malloc((size_t)T * NH * sizeof *lse_mma);
	reference(qkv, NULL, T, lens, nseq, NH, NKV, HS, want, NULL);
	char msg[256] = "";
	for (int mma = 1; mma >= 0; mma--) {
		if (mma && HS != 64 && HS != 128)
			continue;
		const char *name = mma ? "tensor cores" : "CUDA cores";
		if (!ok(gpu_attention_test(qkv, NULL, T, lens, nseq, NH, NKV, HS, 1, mma, got, mma ? lse_mma : lse, NULL,
					   msg, sizeof msg) == 0,
			"%s, %d/%d heads of %d: bf16 forward ran on %d tokens", name, NH, NKV, HS, T)) {
			diag("%s", msg);
			continue;
		}
		struct cmp c = compare(got, want, nout, 0.02, 0.01, 0);
		if (c.bad)
			diag("  first miss at token %zu, head %zu, dim %zu: got %g, want %g", c.first / (NH * HS),
			     c.first % (NH * HS) / HS, c.first % HS, got[c.first], want[c.first]);
		ok(c.bad == 0, "%s, %d/%d heads of %d: within 0.02 + 1%% of double (worst %.3g, mean %.2g)", name, NH,
		   NKV, HS, c.worst, c.mean);
		if (mma)
			memcpy(first, got, nout * sizeof *got);
		else if (HS == 64 || HS == 128) {
			double dm = 0;
			for (size_t i = 0; i < nout; i++)
				dm += fabs(first[i] - got[i]) / nout;
			diag("  tensor cores against CUDA cores: mean |diff| %.2g", dm);
			size_t n = (size_t)T * NH, bad = 0, at = 0;
			double worst = 0, mean = 0;
			for (size_t i = 0; i < n; i++) {
				double d = fabs((double)lse_mma[i] - lse[i]);
				if (!(d <= 1e-3 + 1e-4 * fabs(lse[i])) && bad++ == 0)
					at = i;
				worst = d > worst || isnan(d) ? d : worst;
				mean += d / n;
			}
			if (bad)
				diag("  first miss at token %zu, head %zu: got %g, want %g", at / NH, at % NH, lse_mma[at],
				     lse[at]);
			ok(bad == 0, "tensor cores, %d/%d heads of %d: log-sum-exp within 1e-3 + 1e-4 of the CUDA cores' "
			   "(worst %.2g, mean %.2g)", NH, NKV, HS, worst, mean);
		}
	}
	free(qkv);
	free(want);
	free(got);
	free(first);
	free(lse);
	free(lse_mma);
}

/* out and dqkv against the double reference; dq, dk, dv each within tol of its largest value */
static void check_backward(const char *name, int NH, int NKV, int HS, int T, int bf16, const float *got,
			   const float *dgot, const double *want, const double *dwant)
{
	int stride = (NH + 2 * NKV) * HS;
	size_t nout = (size_t)T * NH * HS;
	double tol = bf16 ? 0.03 : 1e-4;
	struct cmp c = compare(got, want, nout, bf16 ? 0.02 : 1e-5, bf16 ? 0.01 : 1e-4, 0);
	ok(c.bad == 0, "%s, %d/%d heads of %d: output (worst %.2g, mean %.2g)", name, NH, NKV, HS, c.worst, c.mean);
	static const char *part[] = { "dq", "dk", "dv" };
	for (int k = 0; k < 3; k++) {
		int from = k == 0 ? 0 : k == 1 ? NH * HS : (NH + NKV) * HS, w = k ? NKV * HS : NH * HS;
		size_t n = (size_t)T * w;
		float *gs = malloc(n * sizeof *gs);
		double *ws = malloc(n * sizeof *ws);
		for (int t = 0; t < T; t++)
			for (int i = 0; i < w; i++) {
				gs[(size_t)t * w + i] = dgot[(size_t)t * stride + from + i];
				ws[(size_t)t * w + i] = dwant[(size_t)t * stride + from + i];
			}
		c = compare(gs, ws, n, 0, tol, 1);
		if (c.bad)
			diag("  first miss at token %zu, column %zu: got %g, want %g", c.first / w, c.first % w, gs[c.first],
			     ws[c.first]);
		ok(c.bad == 0, "%s, %d/%d heads of %d: %s within %g of its largest value %.3g (worst %.2g, mean %.2g)",
		   name, NH, NKV, HS, part[k], tol, c.scale, c.worst, c.mean);
		free(gs);
		free(ws);
	}
}

static void backward(int NH, int NKV, int HS)
{
	const uint32_t *lens = short_lens;
	int nseq = 7, T = 0, stride = (NH + 2 * NKV) * HS;
	for (int s = 0; s < nseq; s++)
		T += (int)lens[s];
	size_t nin = (size_t)T * stride, nout = (size_t)T * NH * HS;
	for (int bf16 = 0; bf16 <= 1; bf16++) {
		float *qkv = random_input(nin, stride, NH * HS, bf16), *dout = random_input(nout, 0, 0, bf16);
		double *want = malloc(nout * sizeof *want), *dwant = malloc(nin * sizeof *dwant);
		float *got = malloc(nout * sizeof *got), *dgot = malloc(nin * sizeof *dgot);
		float *dcore = malloc(nin * sizeof *dcore), *again = malloc(nin * sizeof *again);
		reference(qkv, dout, T, lens, nseq, NH, NKV, HS, want, dwant);
		char msg[256] = "";
		/* the CUDA-core kernels, then (bf16, head sizes 64 and 128) the tensor-core ones */
		for (int mma = 0; mma <= (bf16 && (HS == 64 || HS == 128)); mma++) {
			const char *name = mma ? "bf16 tensor cores" : bf16 ? "bf16" : "fp32";
			int r = gpu_attention_test(qkv, dout, T, lens, nseq, NH, NKV, HS, bf16, mma, got, NULL, dgot, msg,
						   sizeof msg);
			if (!ok(r == 0, "%s, %d/%d heads of %d: forward and backward ran on %d tokens", name, NH, NKV, HS,
				T)) {
				diag("%s", msg);
				continue;
			}
			check_backward(name, NH, NKV, HS, T, bf16, got, dgot, want, dwant);
			if (!mma) {
				memcpy(dcore, dgot, nin * sizeof *dgot);
				continue;
			}
			double dm = 0;
			for (size_t i = 0; i < nin; i++)
				dm += fabs((double)dgot[i] - dcore[i]) / nin;
			diag("  tensor cores against CUDA cores: dqkv mean |diff| %.2g", dm);
			r = gpu_attention_test(qkv, dout, T, lens, nseq, NH, NKV, HS, bf16, mma, got, NULL, again, msg,
					       sizeof msg);
			ok(r == 0 && memcmp(again, dgot, nin * sizeof *dgot) == 0,
			   "%s, %d/%d heads of %d: the same dqkv bits twice", name, NH, NKV, HS);
		}
		free(qkv);
		free(dout);
		free(want);
		free(dwant);
		free(got);
		free(dgot);
		free(dcore);
		free(again);
	}
}

int main(void)
{
	skip_without_gpu();
	/* GRPO_TEST_SMALL=1: only two shapes, for compute-sanitizer's slow tools */
	int small = getenv("GRPO_TEST_SMALL") != NULL;
	static const int shapes[][3] = {
		{ 14, 2, 64 },    /* Qwen2.5-0.5B: 7 q heads per kv head */
		{ 16, 8, 128 },   /* Qwen3-0.6B */
		{ 4, 4, 64 },
		{ 12, 2, 128 },   /* Qwen2.5-1.5B */
		{ 14, 2, 128 },   /* tensor cores: group 7 at 128, groups 1 and 2 at the other size */
		{ 2, 2, 128 },
		{ 4, 2, 64 },
		{ 4, 2, 24 },     /* the CUDA-core kernels' other sizes */
		{ 2, 1, 16 },
		{ 3, 3, 32 },
		{ 2, 2, 48 },
		{ 2, 1, 80 },
		{ 2, 2, 96 },
	};
	for (size_t i = 0; i < (small ? 2 : sizeof shapes / sizeof shapes[0]); i++) {
		if (!small)
			forward(shapes[i][0], shapes[i][1], shapes[i][2]);
		backward(shapes[i][0], shapes[i][1], shapes[i][2]);
	}
	char msg[256] = "";
	float x[3 * 64] = { 0 }, o[64];
	uint32_t one = 1;
	ok(gpu_attention_test(x, NULL, 1, &one, 1, 1, 1, 64, 1, 1, o, NULL, NULL, msg, sizeof msg) == 0 && o[0] == 0,
	   "one token of zeros: zeros");
	ok(gpu_attention_test(x, NULL, 1, &one, 1, 1, 1, 40, 0, 0, o, NULL, NULL, msg, sizeof msg) < 0,
	   "head size 40 refused: %s", msg);
	return tap_done();
}
