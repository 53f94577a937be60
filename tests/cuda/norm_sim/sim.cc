// norm_sim: kernels/'s RMSNorm forward and backward, column sums, SwiGLU
// forward and backward and the LM head's dlogits, their code and launchers
// unchanged (extract.py), run on the CPU (tests/cuda/sim) and compared with
// double-precision sums: C from 64 to 8192 (one to eight groups of four columns a thread,
// blocks of one warp to 256 threads), column sums of one to three passes,
// V 777 (one logit a thread) and multiples of 8, fp32 and bf16. Run by
// run.sh beside it.
#include "kern.inc"
#include <algorithm>
#include <random>
static std::mt19937 gen(7);
static int fails;
static float rnd() { return std::normal_distribution<float>(0, 1)(gen); }
static float bfr(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
static void expect(const char *what, double got, double want, double tol, int *bad)
{
	if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
		if ((*bad)++ < 3) printf("  %s: got %.9g want %.9g\n", what, got, want);
	}
}
static void report(const char *name, int bad) { printf("%s %s\n", bad ? "FAIL" : "ok  ", name); fails += bad != 0; }

static void norm_case(int N, int C, int bf)
{
	std::vector<float> x(N * C), w(C), dy(N * C), dx(N * C), dw(C), dx0, dw0;
	for (auto &v : x) v = rnd() * 3; for (auto &v : w) v = 1 + 0.1f * rnd(); for (auto &v : dy) v = rnd();
	for (auto &v : dx) v = rnd(); for (auto &v : dw) v = rnd();
	dx0 = dx, dw0 = dw;
	float eps = 1e-6f;
	// forward
	std::vector<float> yf(N * C, 42); std::vector<bf16> yb(N * C);
	launch_rmsnorm(bf ? (void *)yb.data() : (void *)yf.data(), x.data(), w.data(), N, C, eps, bf, 0);
	int bad = 0;
	std::vector<double> r(N);
	for (int t = 0; t < N; t++) {
		double ss = 0; for (int c = 0; c < C; c++) ss += (double)x[t * C + c] * x[t * C + c];
		r[t] = 1 / sqrt(ss / C + eps);
		for (int c = 0; c < C; c++) {
			double want = w[c] * x[t * C + c] * r[t];
			double got = bf ? __bfloat162float(yb[t * C + c]) : yf[t * C + c];
			expect("rmsnorm y", got, want, bf ? 8e-3 : 2e-6, &bad);
		}
	}
	char name[100]; snprintf(name, 100, "rmsnorm forward N %d C %d %s", N, C, bf ? "bf16" : "fp32"); report(name, bad);
	if (bf) return;
	// backward
	int blocks = (N + RMS_ROWS - 1) / RMS_ROWS;
	std::vector<float> partial((size_t)blocks * C, 42), scratch(colsum_scratch_floats(blocks, C) + 1, 42);
	// the new dx also in bf16 (C not a multiple of 128), in fp32 (the others), or not at all (C 448)
	std::vector<bf16> dxb(N * C); std::vector<float> dxf(N * C, 42);
	int act_bf = C % 128 != 0, act_none = C == 448;
	void *dxa = act_none ? NULL : act_bf ? (void *)dxb.data() : (void *)dxf.data();
	int rc = launch_rmsnorm_backward(dx.data(), dxa, act_bf, dw.data(), partial.data(), scratch.data(), dy.data(),
					 x.data(), w.data(), N, C, eps, 0);
	bad = rc != 0;
	for (int i = 0; i < N * C && !act_none; i++)
		if (act_bf ? memcmp(&dxb[i], &(const bf16 &)__float2bfloat16_rn(dx[i]), 2) != 0 : dxf[i] != dx[i]) {
			printf("  dx in the activation type differs at %d\n", i);
			bad++;
			break;
		}
	std::vector<double> dwr(C, 0);
	for (int t = 0; t < N; t++) {
		double dot = 0; for (int c = 0; c < C; c++) dot += (double)dy[t * C + c] * w[c] * x[t * C + c];
		for (int c = 0; c < C; c++) {
			double want = dx0[t * C + c] + dy[t * C + c] * w[c] * r[t] - x[t * C + c] * r[t] * r[t] * r[t] * dot / C;
			expect("rmsnorm dx", dx[t * C + c], want, 2e-5, &bad);
			dwr[c] += (double)dy[t * C + c] * x[t * C + c] * r[t];
		}
	}
	for (int c = 0; c < C; c++) expect("rmsnorm dw", dw[c], dw0[c] + dwr[c], 2e-5, &bad);
	snprintf(name, 100, "rmsnorm backward T %d C %d", N, C); report(name, bad);
}

static void colsum_case(int R, int N, int bf)
{
	std::vector<float> in((size_t)R * N), out(N), out0; std::vector<bf16> inb((size_t)R * N);
	for (size_t i = 0; i < in.size(); i++) { in[i] = rnd(); inb[i] = __float2bfloat16_rn(in[i]); if (bf) in[i] = __bfloat162float(inb[i]); }
	for (auto &v : out) v = rnd(); out0 = out;
	std::vector<float> scratch(colsum_scratch_floats(R, N) + 1, 42);
	launch_colsum(out.data(), bf ? (const void *)inb.data() : (const void *)in.data(), bf, R, N, scratch.data(), 0);
	int bad = 0;
	for (int c = 0; c < N; c++) {
		double s = out0[c]; for (int r = 0; r < R; r++) s += in[(size_t)r * N + c];
		expect("colsum", out[c], s, 1e-5 * sqrt((double)R), &bad);
	}
	char name[100]; snprintf(name, 100, "colsum R %d N %d %s (scratch %zu)", R, N, bf ? "bf16" : "fp32", colsum_scratch_floats(R, N)); report(name, bad);
}

template <typename T> static float tf(T v);
template <> float tf<float>(float v) { return v; }
template <> float tf<bf16>(bf16 v) { return __bfloat162float(v); }
template <typename T> static T ft(float v);
template <> float ft<float>(float v) { return v; }
template <> bf16 ft<bf16>(float v) { return __float2bfloat16_rn(v); }

template <typename T> static void swiglu_case(int T_, int I)
{
	int bf = sizeof(T) == 2;
	std::vector<T> gu((size_t)T_ * 2 * I), act((size_t)T_ * I), dgu((size_t)T_ * 2 * I);
	std::vector<float> dact((size_t)T_ * I);
	for (auto &v : gu) v = ft<T>(rnd() * 2); for (auto &v : dact) v = rnd();
	launch_swiglu(act.data(), gu.data(), T_, I, bf, 0);
	std::vector<T> act2((size_t)T_ * I);
	launch_swiglu_backward(dgu.data(), act2.data(), dact.data(), gu.data(), T_, I, bf, 0);
	int same = memcmp(act.data(), act2.data(), act.size() * sizeof(T)) == 0;
	int bad = 0; double tol = bf ? 8e-3 : 2e-6;
	for (int t = 0; t < T_; t++)
		for (int i = 0; i < I; i++) {
			double g = tf(gu[(size_t)t * 2 * I + i]), u = tf(gu[(size_t)t * 2 * I + I + i]), d = dact[(size_t)t * I + i];
			double sg = 1 / (1 + exp(-g));
			expect("swiglu", tf(act[(size_t)t * I + i]), g * sg * u, tol, &bad);
			expect("swiglu dup", tf(dgu[(size_t)t * 2 * I + I + i]), d * g * sg, tol, &bad);
			expect("swiglu dgate", tf(dgu[(size_t)t * 2 * I + i]), d * u * sg * (1 + g * (1 - sg)), tol, &bad);
		}
	if (!same) printf("  the backward's output differs from the forward's\n"), bad++;
	char name[100]; snprintf(name, 100, "swiglu T %d I %d %s", T_, I, bf ? "bf16" : "fp32"); report(name, bad);
}

// dlogits of n rows: row 0 predicts nothing (g = e = 0), the others a target
template <typename T> static void lmhead_case(int n, int V)
{
	int bf = sizeof(T) == 2;
	std::vector<float> z((size_t)n * V), temps(n), dlp(n), dent(n), lse(n), ent(n);
	std::vector<int32_t> y(n);
	std::vector<T> dz((size_t)n * V, ft<T>(42));
	for (int r = 0; r < n; r++) {
		temps[r] = r % 2 ? 0.7f : 1.3f;
		dlp[r] = r ? rnd() : 0, dent[r] = r ? 0.1f * rnd() : 0;
		y[r] = (int)(gen() % V);
		double m = -1e30, s = 0, h = 0;
		for (int j = 0; j < V; j++) z[(size_t)r * V + j] = 3 * rnd(), m = std::max(m, (double)z[(size_t)r * V + j] / temps[r]);
		for (int j = 0; j < V; j++) s += exp(z[(size_t)r * V + j] / temps[r] - m);
		lse[r] = (float)(m + log(s));
		for (int j = 0; j < V; j++) { double lp = z[(size_t)r * V + j] / temps[r] - lse[r]; h -= exp(lp) * lp; }
		ent[r] = (float)h;
	}
	launch_lmhead_backward(dz.data(), z.data(), y.data(), temps.data(), dlp.data(), dent.data(), lse.data(), ent.data(), n, V, bf, 0);
	int bad = 0;
	for (int r = 0; r < n; r++)
		for (int j = 0; j < V; j++) {
			double lp = z[(size_t)r * V + j] / temps[r] - lse[r], p = exp(lp);
			double d = (dlp[r] * ((j == y[r]) - p) - dent[r] * p * (lp + ent[r])) / temps[r];
			expect("dlogits", tf(dz[(size_t)r * V + j]), d, bf ? 8e-3 : 1e-5, &bad);
		}
	char name[100]; snprintf(name, 100, "LM head dlogits n %d V %d %s", n, V, bf ? "bf16" : "fp32"); report(name, bad);
}

int main()
{
	int shapes[][2] = { { 37, 64 }, { 20, 96 }, { 33, 896 }, { 17, 1536 }, { 9, 2052 }, { 5, 4096 }, { 3, 8192 }, { 1, 448 } };
	for (auto &s : shapes) { norm_case(s[0], s[1], 0); norm_case(s[0], s[1], 1); }
	int cs[][2] = { { 1, 5 }, { 64, 896 }, { 65, 33 }, { 5000, 96 }, { 4097, 1152 }, { 300000, 4 } };
	for (auto &s : cs) { colsum_case(s[0], s[1], 0); colsum_case(s[0], s[1], 1); }
	swiglu_case<float>(3, 8); swiglu_case<bf16>(3, 8); swiglu_case<float>(5, 4864); swiglu_case<bf16>(7, 4864);
	swiglu_case<bf16>(2000, 136);
	lmhead_case<float>(3, 777); lmhead_case<bf16>(3, 777); lmhead_case<float>(4, 3000); lmhead_case<bf16>(3, 151936);
	printf("%s\n", fails ? "FAILED" : "all passed");
	return fails != 0;
}
