/*
 * test_cuda_attention: both attention kernels (the tensor-core one in bf16
 * for head sizes 64 and 128, the CUDA-core one for every head size) alone,
 * against block-causal grouped-query attention computed here in double
 * from the same bf16 inputs. Packs hold sequences of 1, 63, 64, 65 and a
 * thousand tokens (the edges of the 64-query and 32/64-key tiles) and
 * query groups of 1, 2, 7 and 8. The kernels' outputs are bf16, so the
 * bound is bf16's rounding of the output plus, for the tensor-core kernel,
 * of the probabilities: 0.02 + 1% of the value. Any row the kernel failed
 * to write reads NaN and fails.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "gpu_model.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
	return sqrt(-2 * log(uniform() + 1e-300)) * cos(6.283185307179586 * uniform());
}

static uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);   /* round to nearest even; no NaNs here */
	return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* out (T, NH*HS) in double, from qkv as the kernels see it */
static void reference(const uint16_t *qkv, int T, const uint32_t *lens, int nseq, int NH, int NKV, int HS,
		      double *out)
{
	int stride = (NH + 2 * NKV) * HS, group = NH / NKV;
	double *w = malloc((size_t)T * sizeof *w);
	for (int s = 0, start = 0; s < nseq; start += (int)lens[s++])
		for (int t = start; t < start + (int)lens[s]; t++)
			for (int h = 0; h < NH; h++) {
				const uint16_t *q = qkv + (size_t)t * stride + h * HS;
				int kh = h / group;
				double mx = -INFINITY, sum = 0;
				for (int j = start; j <= t; j++) {
					const uint16_t *k = qkv + (size_t)j * stride + (NH + kh) * HS;
					double d = 0;
					for (int i = 0; i < HS; i++)
						d += (double)from_bf16(q[i]) * from_bf16(k[i]);
					w[j] = d / sqrt((double)HS);
					mx = w[j] > mx ? w[j] : mx;
				}
				for (int j = start; j <= t; j++)
					sum += w[j] = exp(w[j] - mx);
				double *o = out + (size_t)t * NH * HS + h * HS;
				for (int i = 0; i < HS; i++)
					o[i] = 0;
				for (int j = start; j <= t; j++) {
					const uint16_t *v = qkv + (size_t)j * stride + (NH + NKV + kh) * HS;
					for (int i = 0; i < HS; i++)
						o[i] += w[j] / sum * from_bf16(v[i]);
				}
			}
	free(w);
}

static void run(int NH, int NKV, int HS)
{
	static const uint32_t lens[] = { 65, 1, 1000, 64, 63, 2, 129 };
	int nseq = sizeof lens / sizeof lens[0], T = 0;
	for (int s = 0; s < nseq; s++)
		T += (int)lens[s];
	size_t nin = (size_t)T * (NH + 2 * NKV) * HS, nout = (size_t)T * NH * HS;
	uint16_t *qkv = malloc(nin * sizeof *qkv);
	double *want = malloc(nout * sizeof *want);
	float *got = malloc(nout * sizeof *got), *first = malloc(nout * sizeof *first);
	/* q scaled by 3: scores of a few units, so softmaxes are far from flat */
	for (size_t i = 0; i < nin; i++)
		qkv[i] = to_bf16((float)(gauss() * ((i % ((NH + 2 * NKV) * HS)) < (size_t)NH * HS ? 3 : 1)));
	reference(qkv, T, lens, nseq, NH, NKV, HS, want);
	char msg[256] = "";
	for (int mma = 1; mma >= 0; mma--) {
		if (mma && HS != 64 && HS != 128)
			continue;
		const char *name = mma ? "tensor cores" : "CUDA cores";
		int r = gpu_attention_run(qkv, T, lens, nseq, NH, NKV, HS, mma, got, msg, sizeof msg);
		if (!ok(r == 0, "%s, %d/%d heads of %d: ran on %d tokens", name, NH, NKV, HS, T)) {
			diag("%s", msg);
			continue;
		}
		double worst = 0, mean = 0;
		size_t bad = 0;
		for (size_t i = 0; i < nout; i++) {
			double d = fabs(got[i] - want[i]);
			if (!(d <= 0.02 + 0.01 * fabs(want[i])) && bad++ == 0)
				diag("  first miss at token %zu, head %zu, dim %zu: got %g, want %g", i / (NH * HS),
				     i % (NH * HS) / HS, i % HS, got[i], want[i]);
			worst = d > worst || isnan(d) ? d : worst;
			mean += d;
		}
		ok(bad == 0, "%s, %d/%d heads of %d: within 0.02 + 1%% of double (worst %.3g, mean %.2g)", name, NH,
		   NKV, HS, worst, mean / nout);
		if (mma)
			memcpy(first, got, nout * sizeof *got);
		else if (HS == 64 || HS == 128) {
			double dm = 0;
			for (size_t i = 0; i < nout; i++)
				dm += fabs(first[i] - got[i]);
			diag("  tensor cores against CUDA cores: mean |diff| %.2g", dm / nout);
		}
	}
	free(qkv);
	free(want);
	free(got);
	free(first);
}

int main(void)
{
	skip_without_gpu();
	run(14, 2, 64);    /* Qwen2.5-0.5B: 7 q heads per kv head */
	run(16, 8, 128);   /* Qwen3-0.6B */
	run(4, 4, 64);
	run(12, 2, 128);   /* Qwen2.5-1.5B */
	run(4, 2, 24);     /* the CUDA-core kernel's other sizes */
	run(2, 1, 16);
	run(3, 3, 32);
	run(2, 2, 48);
	run(2, 1, 80);
	run(2, 2, 96);
	char msg[256] = "";
	uint16_t x[3 * 64] = { 0 };
	uint32_t one = 1;
	float o[64];
	ok(gpu_attention_run(x, 1, &one, 1, 1, 1, 64, 1, o, msg, sizeof msg) == 0 && o[0] == 0,
	   "one token of zeros: zeros");
	ok(gpu_attention_run(x, 1, &one, 1, 1, 1, 40, 0, o, msg, sizeof msg) < 0, "head size 40 refused: %s", msg);
	return tap_done();
}
