/*
 * bench_cuda_generate: generated tokens per second of grpo-collect's GPU
 * sampler (model_gpu_generate) on the peer's batch: P prompts of random
 * tokens, G samples each, every sample N new tokens (no stop token, as the
 * peer's min_new_tokens), temperature 1, no top-k or top-p, for a random
 * model of a named shape. bench/cuda/run.sh runs it beside
 * peer_torch_generate.py and prints the ratios.
 *
 *   bench_cuda_generate [-s preset] [-d bf16|fp32] [-P prompts] [-G samples] [-p prompt tokens]
 *                       [-n new tokens] [-r repeats]
 *
 * Prints one line of key=value pairs (the median of the repeats, each a
 * whole call: prefill, decode steps, the cache and graphs made), then the
 * sampler's own account of the last call and the device's memory.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench.h"

#include "model/generate.h"
#include "model/model.h"
#include "model/model_gpu.h"

int main(int argc, char **argv)
{
	const char *name = "qwen2.5-0.5b", *dtype = "bf16";
	int P = 16, G = 8, plen = 256, N = 512, reps = 3, o;
	while ((o = getopt(argc, argv, "s:d:P:G:p:n:r:h")) != -1) {
		switch (o) {
		case 's': name = optarg; break;
		case 'd': dtype = optarg; break;
		case 'P': P = atoi(optarg); break;
		case 'G': G = atoi(optarg); break;
		case 'p': plen = atoi(optarg); break;
		case 'n': N = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_cuda_generate [-s %s] [-d bf16|fp32] [-P prompts] [-G samples] "
				"[-p prompt tokens] [-n new tokens] [-r repeats]\n", MODEL_PRESETS);
			return o == 'h' ? 0 : 2;
		}
	}
	struct model_config c;
	if (optind != argc || model_config_preset(name, &c) < 0 || P < 1 || G < 1 || plen < 1 || N < 1 || reps < 1 ||
	    reps > 15 || (strcmp(dtype, "fp32") && strcmp(dtype, "bf16"))) {
		fprintf(stderr, "bench_cuda_generate: bad arguments (-h for usage)\n");
		return 2;
	}
	struct model m;
	struct err e = { 0 };
	if (model_create(&m, &c, &e) < 0 || model_init_random(&m, 1, &e) < 0) {
		fprintf(stderr, "bench_cuda_generate: %s\n", e.msg);
		return 1;
	}
	int B = P * G;
	int *store = malloc((size_t)P * plen * sizeof *store), *lens = malloc((size_t)B * sizeof *lens);
	const int **prompts = malloc((size_t)B * sizeof *prompts);
	struct gen_seq *out = calloc((size_t)B, sizeof *out);
	if (!store || !lens || !prompts || !out) {
		fprintf(stderr, "bench_cuda_generate: out of memory\n");
		return 1;
	}
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < P * plen; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		store[i] = (int)(x % (uint64_t)c.V);
	}
	for (int b = 0; b < B; b++) {   /* a prompt's G samples side by side: they share its cache */
		prompts[b] = store + (size_t)(b / G) * plen;
		lens[b] = plen;
	}
	struct model_gpu *g = NULL;
	if (model_gpu_open_gen(&g, &m, plen, N, strcmp(dtype, "bf16") == 0, &e) < 0) {
		fprintf(stderr, "bench_cuda_generate: %s\n", e.msg);
		return 1;
	}
	struct gen_params gp = { .temperature = 1, .top_p = 1, .top_k = 0, .max_tokens = N, .seed = 1 };
	double secs[16];
	long long generated = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		if (model_gpu_generate(g, prompts, lens, B, &gp, out, &e) < 0) {
			fprintf(stderr, "bench_cuda_generate: %s\n", e.msg);
			return 1;
		}
		secs[r] = now() - t0;
		generated = 0;
		for (int b = 0; b < B; b++) {
			generated += out[b].n;
			gen_seq_free(&out[b]);
		}
	}
	qsort(secs, (size_t)reps, sizeof *secs, cmp_double);
	double s = secs[reps / 2];
	char dev[512], run[512];
	model_gpu_describe(g, dev, sizeof dev);
	model_gpu_gen_describe(g, run, sizeof run);
	printf("shape=%s dtype=%s sequences=%d prompt=%d new=%d generated=%lld seconds=%.3f tokens_per_s=%.0f\n", name,
	       dtype, B, plen, N, generated, s, generated / s);
	printf("sampler: %s\n", run);
	printf("device: %s\n", dev);
	model_gpu_close(g);
	model_free(&m);
	return 0;
}
