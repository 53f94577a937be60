// lmhead_sim: kernels/lmhead.cu's kernel, its code unchanged, run on the CPU
// (tests/cuda/sim) and compared with the statistics computed in double, two passes,
// in the same cancellation-free form (lse = m/T + log c + log1p(r/c),
// entropy = log s + sum e_j d_j / s), so the reference's own error (~1e-15)
// stays far below the kernel's. Rows: V 1 to 151936, temperatures 0.3, 1
// and 1.7, logits of scale 1 and 30, rows of ties, peaked rows, -inf
// entries, rising and falling rows (a new maximum at every entry), a base
// that is not 16-byte aligned, targets outside [0, V). It checks the
// kernel's indexing, rescaling, merges and barriers; not the GPU's expf
// (2 ulp; here glibc's) nor timing. Run by run.sh beside it (a minute).
#include "kern.inc"
#include <random>
#include <string>

static void run_kernel(const float *z, const int32_t *tg, const float *temps, int n, int V, float *lp, float *ent,
		       float *lse)
{
	launch(dim3(n), dim3(THREADS), [&] { lmhead_stats_kernel(z, tg, temps, V, lp, ent, lse); });
}

// the reference: entries of -inf add nothing (exp(-inf) = 0, and 0 * inf is taken as 0)
static void reference(const float *z, int V, int t, float T, double out[3])
{
	double inv = 1.0 / T, m = -INFINITY, c = 0, r = 0, u = 0;
	for (int j = 0; j < V; j++)
		m = z[j] > m ? z[j] : m;
	for (int j = 0; j < V; j++) {
		if (z[j] == m) {
			c++;
		} else if (z[j] != -INFINITY) {
			double d = (m - z[j]) * inv, e = exp(-d);
			r += e;
			u += e * d;
		}
	}
	double logs = log(c) + log1p(r / c);
	out[0] = t < 0 || t >= V ? NAN : -(m - z[t]) * inv - logs;
	out[1] = logs + u / (c + r);
	out[2] = m * inv + logs;
}

static std::mt19937_64 gen(42);
static int fails, cases;
static double worst[3][3];   // {logprob, entropy, lse} x {abs, rel, rel where |want| >= 1e-6}
static const char *what[3] = { "logprob", "entropy", "lse" };
static const double tol[3] = { 2e-6, 1e-5, 2e-6 };   // relative; see check()

enum kind { GAUSS, EQUAL, PEAKED, TIES, NEGINF, RISING, FALLING };

// n rows of V logits of one kind; offset 1 shifts the base off 16 bytes
static void check(const char *name, int V, int n, kind k, float scale, float T, int offset = 0)
{
	std::vector<float> buf((size_t)n * V + 4), temps(n, T), out(3 * n, 42.0f);
	std::vector<int32_t> tg(n);
	float *z = buf.data() + offset;
	std::normal_distribution<float> g(0, 1);
	for (int b = 0; b < n; b++) {
		float *row = z + (size_t)b * V;
		for (int j = 0; j < V; j++) {
			float x = scale * g(gen);
			row[j] = k == EQUAL ? 1.25f * scale : k == PEAKED ? x - 3 : k == TIES ? roundf(x) :
				 k == RISING ? scale * j / V : k == FALLING ? -scale * j / V : x;
			if (k == NEGINF && (j < 300 || gen() % 3 == 0))   // whole first float4s of -inf too
				row[j] = -INFINITY;
		}
		tg[b] = (int32_t)(gen() % V);
		if (k == PEAKED) {   // one entry far above the rest, the target on it or beside it
			row[tg[b]] = 40.0f;
			if (b % 2)
				tg[b] = (tg[b] + 1) % V;
		}
		if (k == TIES)   // the maximum several times, in one thread and in several
			for (int i = 0; i < 5; i++)
				row[(tg[b] + i * (i < 3 ? 1 : 256 * 4 + 3)) % V] = 6.0f * scale;
		if (k == NEGINF && b == n - 1)   // all -inf but one
			for (int j = 0; j < V; j++)
				row[j] = j == V / 2 ? 0.5f : -INFINITY;
		if (b % 5 == 3)
			tg[b] = b % 2 ? -1 : V;
	}
	run_kernel(z, tg.data(), temps.data(), n, V, out.data(), out.data() + n, out.data() + 2 * n);
	int bad = 0;
	double w[3] = { 0, 0, 0 };
	for (int b = 0; b < n; b++) {
		double want[3];
		reference(z + (size_t)b * V, V, tg[b], T, want);
		for (int q = 0; q < 3; q++) {
			// below 1e-30 taken as 0: fp32 has no room for 1e-50 (a peaked row's entropy at T 0.3)
			double got = out[q * n + b], ae = fabs(got - want[q]), re = ae / fmax(fabs(want[q]), 1e-30);
			// a tiny logprob or entropy is ~e^-d: d = (m - z_j) / T's rounding in fp32 (an ulp:
			// 6e-8 d) is a relative error of 6e-8 d in it, with d ~ -ln|want| (41 for 1e-18)
			double lim = tol[q] + (q < 2 ? 1e-7 * fabs(log(fmax(fabs(want[q]), 1e-30))) : 0);
			int ok = std::isnan(want[q]) ? std::isnan(got) : std::isinf(want[q]) ? got == want[q] : re <= lim;
			if (!std::isnan(want[q]) && !std::isinf(want[q]) && !std::isnan(got)) {
				w[q] = fmax(w[q], re);
				worst[q][0] = fmax(worst[q][0], ae);
				worst[q][1] = fmax(worst[q][1], re);
				if (fabs(want[q]) >= 1e-6)
					worst[q][2] = fmax(worst[q][2], re);
			}
			if (std::isnan(got) && !std::isnan(want[q]))
				w[q] = INFINITY;   // shown as inf
			if (!ok && bad++ < 4)
				printf("   %s row %d %s: kernel %.9g, reference %.12g (rel %.2g)\n", name, b, what[q], got,
				       want[q], re);
		}
	}
	cases++;
	fails += bad > 0;
	printf("%s %-29s V %6d, %2d rows, T %.1f, scale %4.1f, %s: rel err logprob %.2g, entropy %.2g, lse %.2g\n",
	       bad ? "FAIL" : "ok  ", name, V, n, T, scale, V % 4 == 0 && (uintptr_t)z % 16 == 0 ? "float4" : "scalar",
	       w[0], w[1], w[2]);
	fflush(stdout);
}

int main()
{
	static const int Vs[] = { 1, 3, 777, 1000, 3000, 151936 };
	static const float Ts[] = { 0.3f, 1.0f, 1.7f };
	for (int V : Vs)
		for (float T : Ts)
			for (float s : { 1.0f, 30.0f })
				check("gaussian", V, V > 5000 ? 3 : 10, GAUSS, s, T);
	check("gaussian, unaligned base", 1000, 10, GAUSS, 1, 1, 1);
	check("gaussian, unaligned base", 151936, 2, GAUSS, 30, 1.7f, 1);
	for (int V : { 1, 777, 1000, 151936 })
		check("all equal", V, 4, EQUAL, 1, 0.3f);
	check("all equal", 3000, 4, EQUAL, 30, 1.7f);
	for (int V : { 3000, 151936 })
		for (float T : { 0.3f, 1.0f })
			check("one huge entry", V, 4, PEAKED, 1, T);
	for (int V : { 777, 3000, 151936 })
		check("ties at the max", V, 6, TIES, 1, 1.7f);
	check("ties at the max", 1000, 6, TIES, 30, 0.3f);
	for (int V : { 777, 1000, 151936 })
		check("-inf entries", V, 6, NEGINF, 1, 1);
	check("-inf entries", 3000, 6, NEGINF, 30, 0.3f);
	for (int V : { 1000, 151936 }) {
		check("rising (a new max each entry)", V, 2, RISING, 30, 0.3f);
		check("falling", V, 2, FALLING, 30, 0.3f);
	}
	printf("worst: ");
	for (int q = 0; q < 3; q++)
		printf("%s abs %.2g rel %.2g (%.2g where |want| >= 1e-6)%s", what[q], worst[q][0], worst[q][1],
		       worst[q][2], q < 2 ? ", " : "\n");
	printf("%d of %d cases failed\n", fails, cases);
	return fails != 0;
}
