// sample_sim: kernels/sample.cu's kernel, its code unchanged, run on the
// CPU (tests/cuda/sim) and compared row by row with sample_twin.h, the
// algorithm on the host, which test_cuda_sample checks against generate.c's
// rules: the same token and logprob, at V 1, 7, 999 to 2500 (chunks of one to
// three ids, threads without any), 151936 and, with an argument, 1.1M
// (chunks longer than the block), greedy and sampling, top-k, top-p and
// ties split at either, padding rows; with the argument "race", four cases
// of three rows (for ThreadSanitizer). It checks the kernel's indexing,
// barriers and reductions; nothing of timing or the GPU's exp. Run by
// run.sh beside it (a minute; no GPU).
#include "kern.inc"
extern "C" {
#include "sample_twin.h"
}
#include <random>

static void run_kernel(int32_t *tok, float *lp, const float *z, int B, int V, float T, float top_p, int top_k,
		       const uint64_t *S, const int32_t *n)
{
	launch(dim3(B), dim3(THREADS), [&] { sample_kernel(tok, lp, z, V, T, top_p, top_k, S, n); });
}

static std::mt19937_64 gen(42);
static int fails, cases;

static void check(const char *name, int V, int B, int kind, float spread, float T, float top_p, int top_k)
{
	std::vector<float> z((size_t)B * V), lp(B, 42.0f), lp2(B, 42.0f);
	std::vector<int32_t> tok(B, -7), tok2(B, -7), n(B);
	std::vector<uint64_t> S(B);
	std::normal_distribution<float> g(0, spread);
	for (int b = 0; b < B; b++) {
		for (int j = 0; j < V; j++)
			z[(size_t)b * V + j] = kind == 0 ? g(gen) : kind == 1 ? 0.4f * ((j + b) * 7 % 10) : (j % 3 == 0 ? 2.5f : -1.0f);
		if (kind == 0 && b % 2 && V > 2) {   // a tie for the maximum in odd rows
			float *r = &z[(size_t)b * V];
			int a = (int)(gen() % V), c = (int)(gen() % V);
			r[a] = r[c] = 50.0f;
		}
		S[b] = gen();
		n[b] = b == 1 ? -1 : (int)(gen() % 1000);   // row 1: padding
	}
	run_kernel(tok.data(), lp.data(), z.data(), B, V, T, top_p, top_k, S.data(), n.data());
	char msg[10];
	gpu_sample_test(z.data(), B, V, T, top_p, top_k, S.data(), n.data(), tok2.data(), lp2.data(), msg, 10);
	int bad = 0;
	for (int b = 0; b < B; b++)
		if (tok[b] != tok2[b] || fabsf(lp[b] - lp2[b]) > 1e-6f) {
			bad++;
			printf("   %s row %d: kernel %d %.9g, twin %d %.9g\n", name, b, tok[b], lp[b], tok2[b], lp2[b]);
		}
	cases++;
	fails += bad > 0;
	printf("%s %s: V %d, %d rows, T %g top_p %g top_k %d (tokens %d %d %d ...)\n", bad ? "FAIL" : "ok  ", name, V, B, T,
	       top_p, top_k, tok[0], tok[B / 2], tok[B - 1]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int big = argc > 1 && strcmp(argv[1], "race") != 0;
	if (argc > 1 && !big) {   // for ThreadSanitizer: each path of the kernel once, on three rows
		check("greedy ties", 999, 3, 2, 0, 0, 0.5f, 3);
		check("top-k 3", 7, 3, 0, 2, 1, 1, 3);
		check("levels top-k 250 top-p 0.5", 1000, 3, 1, 0, 1, 0.5f, 250);
		check("top-p 0.9", 1025, 3, 0, 2, 1, 0.9f, 0);
		printf("%d of %d cases failed\n", fails, cases);
		return fails != 0;
	}
	check("greedy", 7, 6, 0, 2, 0, 1, 0);
	check("greedy ties", 999, 4, 2, 0, 0, 0.5f, 3);
	check("plain", 7, 8, 0, 2, 1, 1, 0);
	check("top-k 3", 7, 8, 0, 2, 1, 1, 3);
	check("top-p 0.8", 7, 8, 0, 2, 0.7f, 0.8f, 0);
	check("both", 7, 8, 0, 2, 1.3f, 0.7f, 5);
	check("top-k V", 7, 4, 0, 2, 1, 1, 7);
	check("V 1", 1, 4, 0, 2, 1, 0.5f, 0);
	check("plain", 1000, 6, 0, 2.5f, 0.7f, 1, 0);
	check("levels top-k 150", 1000, 6, 1, 0, 1, 1, 150);
	check("levels top-p 0.45", 1000, 6, 1, 0, 1, 0.45f, 0);
	check("levels top-k 250 top-p 0.5", 1000, 6, 1, 0, 1, 0.5f, 250);
	check("thirds top-k 500", 999, 4, 2, 0, 1, 1, 500);
	check("thirds top-p 0.3", 999, 4, 2, 0, 1, 0.3f, 0);
	check("plain", 2500, 6, 0, 2, 1, 1, 0);
	check("levels top-k 777", 2500, 6, 1, 0, 1, 1, 777);
	check("levels top-p 0.6", 2500, 6, 1, 0, 1, 0.6f, 0);
	check("top-p 0.9", 1025, 6, 0, 2, 1, 0.9f, 0);
	check("top-p 0.999", 1025, 6, 0, 0.5f, 1, 0.999f, 0);
	if (getenv("SAMPLE_SIM_SMALL")) { printf("%d of %d cases failed\n", fails, cases); return fails != 0; }
	check("greedy", 151936, 3, 0, 2, 0, 1, 0);
	check("plain", 151936, 3, 0, 2, 1, 1, 0);
	check("top-k 40 top-p 0.6", 151936, 3, 0, 3, 1, 0.6f, 40);
	check("top-p 0.3", 151936, 3, 0, 3, 0.6f, 0.3f, 0);
	check("levels top-k 20000", 151936, 3, 1, 0, 1, 1, 20000);
	check("levels top-p 0.5", 151936, 3, 1, 0, 1, 0.5f, 0);
	if (big) {
		check("plain (chunks over 1024)", 1100000, 3, 0, 2, 1, 1, 0);
		check("levels top-p 0.5 (chunks over 1024)", 1100000, 3, 1, 0, 1, 0.5f, 0);
	}
	printf("%d of %d cases failed\n", fails, cases);
	return fails != 0;
}
