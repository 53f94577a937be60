/* The CUDA LM-head statistics (kernels/lmhead.cu) against the C loop of
 * lib/model/model.c's lm_head_forward, restated here in double as the reference:
 * rows of several vocabulary sizes (up to Qwen's 151936), temperatures,
 * spreads, a peaked row (entropy ~1e-11) and a row of ties. Skips, saying
 * why, where no GPU is present. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "lmhead.h"
#include "model/softmax_stats.h"
#include "tap.h"

#define cudaCheck(x) cuda_check((x), #x, __FILE__, __LINE__)
static void cuda_check(cudaError_t err, const char *what, const char *file, int line)
{
	if (err != cudaSuccess) {
		printf("Bail out! %s:%d: %s: %s\n", file, line, what, cudaGetErrorString(err));
		exit(1);
	}
}

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#include "../xorshift.h"
static float gauss(void)
{
	double u = urand() + 1e-300, v = urand();
	return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

/* 1e-5 relative; the floor covers values near 0, where the reference's own
 * rounding (its entropy is the difference of two lse-sized doubles) is
 * about 1e-14. */
static int close_to(float got, float want)
{
	return fabsf(got - want) <= 1e-5f * fabsf(want) + 1e-7f;
}

struct rowset { const char *name; int n, V; float spread; int kind; };
enum { PLAIN, PEAKED, TIES };

static void run(const struct rowset *s)
{
	size_t nv = (size_t)s->n * s->V;
	float *z = malloc(nv * sizeof *z), *temps = malloc(s->n * sizeof *temps);
	int32_t *tg = malloc(s->n * sizeof *tg);
	float *out = malloc(3 * s->n * sizeof *out);
	for (int r = 0; r < s->n; r++) {
		float *row = z + (size_t)r * s->V;
		for (int j = 0; j < s->V; j++)
			row[j] = s->kind == TIES ? (j % 3 == 0 ? 2.5f : -1.0f) : s->spread * gauss() - 3.0f;
		tg[r] = (int32_t)(urand() * s->V);
		if (s->kind == PEAKED) {
			row[tg[r]] = 40.0f;   /* every other logit ~N(-3, 1): entropy ~1e-11 */
			if (r % 2)
				tg[r] = (tg[r] + 1) % s->V;
		}
		static const float T[] = { 1.0f, 0.7f, 1.3f, 0.25f };
		temps[r] = T[r % 4];
	}
	float *dz, *dt, *dout;
	int32_t *dtg;
	cudaCheck(cudaMalloc((void **)&dz, nv * sizeof *dz));
	cudaCheck(cudaMalloc((void **)&dt, s->n * sizeof *dt));
	cudaCheck(cudaMalloc((void **)&dtg, s->n * sizeof *dtg));
	cudaCheck(cudaMalloc((void **)&dout, 3 * s->n * sizeof *dout));
	cudaCheck(cudaMemcpy(dz, z, nv * sizeof *dz, cudaMemcpyHostToDevice));
	cudaCheck(cudaMemcpy(dt, temps, s->n * sizeof *dt, cudaMemcpyHostToDevice));
	cudaCheck(cudaMemcpy(dtg, tg, s->n * sizeof *dtg, cudaMemcpyHostToDevice));
	int err = grpo_cuda_lmhead_stats(dz, dtg, dt, s->n, s->V, dout, dout + s->n, dout + 2 * s->n, NULL);
	ok(err == 0, "%s: kernel launched%s%s", s->name, err ? ": " : "", err ? grpo_cuda_strerror(err) : "");
	cudaCheck(cudaDeviceSynchronize());
	cudaCheck(cudaMemcpy(out, dout, 3 * s->n * sizeof *out, cudaMemcpyDeviceToHost));

	int bad[3] = { 0, 0, 0 };
	for (int r = 0; r < s->n; r++) {
		float want[3];
		softmax_stats(z + (size_t)r * s->V, s->V, tg[r], temps[r], &want[0], &want[1], &want[2]);
		for (int k = 0; k < 3; k++)
			if (!close_to(out[k * s->n + r], want[k]) && bad[k]++ == 0)
				diag("  %s row %d %s: got %.9g, want %.9g", s->name, r,
				     k == 0 ? "logprob" : k == 1 ? "entropy" : "lse", out[k * s->n + r], want[k]);
	}
	ok(!bad[0], "%s: logprob of the target (%d rows, V %d), 1e-5 relative", s->name, s->n, s->V);
	ok(!bad[1], "%s: entropy", s->name);
	ok(!bad[2], "%s: log-sum-exp", s->name);
	cudaFree(dz);
	cudaFree(dt);
	cudaFree(dtg);
	cudaFree(dout);
	free(z);
	free(temps);
	free(tg);
	free(out);
}

int main(void)
{
	skip_without_gpu();
	static const struct rowset sets[] = {
		{ "one-entry vocabulary", 4, 1, 1.0f, PLAIN },
		{ "small vocabulary", 64, 7, 2.0f, PLAIN },
		{ "a chunk of V 1000", 64, 1000, 3.0f, PLAIN },
		{ "Qwen-sized rows", 16, 151936, 2.0f, PLAIN },
		{ "wide logits", 8, 32000, 12.0f, PLAIN },
		{ "peaked rows", 8, 151936, 1.0f, PEAKED },
		{ "tied maxima", 4, 999, 0.0f, TIES },
	};
	for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
		run(&sets[i]);

	/* a queued launch with nothing to do, and a bad shape */
	ok(grpo_cuda_lmhead_stats(NULL, NULL, NULL, 0, 10, NULL, NULL, NULL, NULL) == 0, "n = 0 is a no-op");
	ok(grpo_cuda_lmhead_stats(NULL, NULL, NULL, -1, 10, NULL, NULL, NULL, NULL) != 0, "n < 0 is refused");
	return tap_done();
}
