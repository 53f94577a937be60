// mma_sim: the tensor-core attention kernels (kernels/attention_mma.cu,
// kernels/attention_bwd_mma.cu), their code unchanged, run on the CPU
// (tests/cuda/sim), with mma.sync emulated across a warp by the fragment
// layout PTX gives (the one kernels/mma.cuh describes). It checks the
// indexing, masking and fragment layouts of the kernels against attention
// computed in double, on sequences of 1, 2, 63, 64, 65 and more tokens,
// groups 1, 2, 3 and 7, head sizes 64 and 128; the forward, tested on GPUs,
// checks the emulation. It says nothing about timing or the hardware's
// rounding. Run by run.sh beside it (seconds per shape; no GPU needed).
#include "fwd.inc"
#include "bwd.inc"
#include "mma_sync.h"
#include <cstdio>
#include <vector>
#include <random>

alignas(16) unsigned char g_smem[96 * 1024];
int attention_mma_head_size_ok(int HS) { return HS == 64 || HS == 128; }
static __nv_bfloat16 f2bf(float f) { return __float2bfloat16_rn(f); }
static float bf2f(__nv_bfloat16 b) { return __bfloat162float(b); }
// kernels/mma.cuh's mma.sync, emulated across the warp (../sim/mma_sync.h)
void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) { sim::mma16816(c, a, b0, b1); }
static std::mt19937_64 rng(12345);
static float gauss() { std::normal_distribution<double> d; return (float)d(rng); }

template <int HS> static int run(int NH, int NKV, std::vector<int> lens)
{
	int T = 0;
	for (int l : lens) T += l;
	int stride = (NH + 2 * NKV) * HS, group = NH / NKV;
	std::vector<bf16> qkv((size_t)T * stride), dout((size_t)T * NH * HS), out((size_t)T * NH * HS, { 0xffff }),
		dqkv((size_t)T * stride, { 0xffff });
	std::vector<float> qf(qkv.size()), gf(dout.size()), lse((size_t)T * NH, NAN), D((size_t)T * NH, NAN);
	for (size_t i = 0; i < qkv.size(); i++) { qkv[i] = f2bf(gauss() * ((int)(i % stride) < NH * HS ? 3 : 1)); qf[i] = bf2f(qkv[i]); }
	for (size_t i = 0; i < dout.size(); i++) { dout[i] = f2bf(gauss()); gf[i] = bf2f(dout[i]); }
	std::vector<att_tile> tiles;
	for (int s = 0, st = 0; s < (int)lens.size(); st += lens[s++])
		for (int q0 = 0; q0 < lens[s]; q0 += 64) tiles.push_back({ st, lens[s], q0, 0 });
	int nt = tiles.size();
	float scale = 1.0f / sqrtf((float)HS), sl2 = scale * LOG2E;
	constexpr int B = HS == 64 ? 64 : 32;
	launch(dim3(nt, NH), dim3(128), [&] { attention_mma_kernel<HS>(out.data(), lse.data(), qkv.data(), tiles.data(), NH, NKV, sl2); });
	int rows = T * NH;
	launch(dim3((rows + 7) / 8), dim3(256), [&] { attention_bwd_mma_dot_kernel(D.data(), dout.data(), out.data(), rows, HS); });
	launch(dim3(nt, NH), dim3(128), [&] { attention_bwd_mma_dq_kernel<HS, B>(dqkv.data(), qkv.data(), dout.data(), lse.data(), D.data(), tiles.data(), NH, NKV, sl2, scale); });
	launch(dim3(nt, NKV), dim3(128), [&] { attention_bwd_mma_dkdv_kernel<HS, B>(dqkv.data(), qkv.data(), dout.data(), lse.data(), D.data(), tiles.data(), NH, NKV, sl2, scale); });

	// reference in double
	std::vector<double> ro((size_t)T * NH * HS), rl((size_t)T * NH), rd((size_t)T * stride, 0.0), p(T);
	double sc = 1 / sqrt((double)HS);
	for (int s = 0, start = 0; s < (int)lens.size(); start += lens[s++])
		for (int t = start; t < start + lens[s]; t++)
			for (int h = 0; h < NH; h++) {
				const float *q = &qf[(size_t)t * stride + h * HS];
				int kh = h / group;
				double mx = -INFINITY, sum = 0;
				for (int j = start; j <= t; j++) {
					const float *k = &qf[(size_t)j * stride + (NH + kh) * HS];
					double d = 0;
					for (int i = 0; i < HS; i++) d += (double)q[i] * k[i];
					p[j] = d * sc; mx = std::max(mx, p[j]);
				}
				for (int j = start; j <= t; j++) sum += p[j] = exp(p[j] - mx);
				rl[(size_t)t * NH + h] = mx + log(sum);
				double *o = &ro[(size_t)t * NH * HS + h * HS];
				for (int i = 0; i < HS; i++) o[i] = 0;
				for (int j = start; j <= t; j++) {
					p[j] /= sum;
					const float *v = &qf[(size_t)j * stride + (NH + NKV + kh) * HS];
					for (int i = 0; i < HS; i++) o[i] += p[j] * v[i];
				}
				const float *g = &gf[(size_t)t * NH * HS + h * HS];
				double Dd = 0;
				for (int i = 0; i < HS; i++) Dd += g[i] * o[i];
				double *dq = &rd[(size_t)t * stride + h * HS];
				for (int j = start; j <= t; j++) {
					const float *k = &qf[(size_t)j * stride + (NH + kh) * HS], *v = k + NKV * HS;
					double *dk = &rd[(size_t)j * stride + (NH + kh) * HS], *dv = dk + NKV * HS;
					double gv = 0;
					for (int i = 0; i < HS; i++) gv += g[i] * v[i];
					double ds = p[j] * (gv - Dd);
					for (int i = 0; i < HS; i++) { dv[i] += p[j] * g[i]; dq[i] += sc * ds * k[i]; dk[i] += sc * ds * q[i]; }
				}
			}
	int fails = 0;
	{
		double worst = 0, mean = 0; size_t bad = 0;
		for (size_t i = 0; i < ro.size(); i++) { double d = fabs(bf2f(out[i]) - ro[i]); if (!(d <= 0.02 + 0.01 * fabs(ro[i]))) bad++; worst = std::max(worst, std::isnan(d) ? INFINITY : d); mean += d / ro.size(); }
		printf("HS %d NH %d NKV %d: out worst %.3g mean %.2g bad %zu\n", HS, NH, NKV, worst, mean, bad); fails += bad > 0;
		worst = mean = 0; bad = 0;
		for (size_t i = 0; i < rl.size(); i++) { double d = fabs(lse[i] - rl[i]); if (!(d <= 1e-3 + 1e-4 * fabs(rl[i]))) bad++; worst = std::max(worst, std::isnan(d) ? INFINITY : d); mean += d / rl.size(); }
		printf("  lse worst %.3g mean %.2g bad %zu\n", worst, mean, bad); fails += bad > 0;
	}
	const char *names[] = { "dq", "dk", "dv" };
	for (int part = 0; part < 3; part++) {
		int from = part == 0 ? 0 : part == 1 ? NH * HS : (NH + NKV) * HS, w = part ? NKV * HS : NH * HS;
		double mx = 0, worst = 0, mean = 0; size_t bad = 0, first = 0;
		for (int t = 0; t < T; t++) for (int i = 0; i < w; i++) mx = std::max(mx, fabs(rd[(size_t)t * stride + from + i]));
		for (int t = 0; t < T; t++) for (int i = 0; i < w; i++) {
			size_t k = (size_t)t * stride + from + i;
			double d = fabs(bf2f(dqkv[k]) - rd[k]);
			if (!(d <= 0.03 * mx) && bad++ == 0) first = (size_t)t * w + i;
			worst = std::max(worst, std::isnan(d) ? INFINITY : d); mean += d / ((size_t)T * w);
		}
		printf("  %s max %.3g worst %.3g mean %.2g bad %zu", names[part], mx, worst, mean, bad);
		if (bad) printf(" (first token %zu col %zu: got %g want %g)", first / w, first % w, bf2f(dqkv[first / w * stride + from + first % w]), rd[first / w * stride + from + first % w]);
		printf("\n");
		fails += bad > 0;
	}
	return fails;
}

int main(int argc, char **argv)
{
	int which = argc > 1 ? atoi(argv[1]) : 0, f = 0;
	if (which == 0) f += run<64>(4, 2, { 65, 1, 130, 64, 63 });
	if (which == 1) f += run<128>(3, 1, { 1, 65, 63, 100 });
	if (which == 2) f += run<64>(7, 1, { 64, 2, 129 });
	if (which == 3) f += run<128>(2, 2, { 65, 1, 70 });
	printf(f ? "FAIL\n" : "PASS\n");
	return f != 0;
}
