/*
 * bench_model: tokens per second of the fp32 reference transformer on the
 * CPU: forward (logprobs and entropies) and forward + backward, over packs of
 * several sequences, and generation (a batch of prompts sampled with the
 * key/value cache), for a small model and optionally the Qwen2.5-0.5B shape.
 *
 *   bench_model [-s preset] [-T tokens] [-n seqs] [-r repeats] [-t threads]
 *               [-b batch] [-g generated tokens per sequence]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#include "model/generate.h"
#include "model/model.h"

int main(int argc, char **argv)
{
	const char *name = "small";
	int T = 512, nseq = 4, reps = 3, threads = 0, batch = 8, gen_tokens = 64, o;
	while ((o = getopt(argc, argv, "s:T:n:r:t:b:g:h")) != -1) {
		switch (o) {
		case 's': name = optarg; break;
		case 'T': T = atoi(optarg); break;
		case 'n': nseq = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 'g': gen_tokens = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_model [-s %s] [-T tokens] [-n seqs] [-r repeats] [-t threads] "
			        "[-b batch] [-g tokens]\n", MODEL_PRESETS);
			return o == 'h' ? 0 : 2;
		}
	}
	struct model_config c;
	if (model_config_preset(name, &c) < 0 || T < nseq || nseq < 1 || reps < 1 || batch < 1 || gen_tokens < 1) {
		fprintf(stderr, "bench_model: bad arguments\n");
		return 2;
	}
	if (threads > 0)
		model_set_threads(threads);
	struct model m;
	struct err e;
	if (model_create(&m, &c, &e) < 0 || model_acts_alloc(&m, T, &e) < 0 || model_grads_alloc(&m, &e) < 0) {
		fprintf(stderr, "bench_model: %s\n", e.msg);
		return 1;
	}
	model_init_random(&m, 1, NULL);
	int *ids = malloc((size_t)T * sizeof *ids), *lens = malloc((size_t)nseq * sizeof *lens);
	float *lp = malloc((size_t)T * sizeof *lp), *ent = malloc((size_t)T * sizeof *ent);
	float *dl = malloc((size_t)T * sizeof *dl), *de = malloc((size_t)T * sizeof *de);
	uint64_t s = 1;
	for (int i = 0; i < T; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		ids[i] = (int)((s >> 33) % (uint64_t)c.V);
		dl[i] = 1.0f / T;
		de[i] = 0.01f / T;
	}
	for (int i = 0; i < nseq; i++)
		lens[i] = T / nseq + (i < T % nseq);

	double fwd = 1e30, both = 1e30;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		if (model_forward(&m, ids, T, lens, nseq, NULL, lp, ent, &e) < 0) {
			fprintf(stderr, "bench_model: %s\n", e.msg);
			return 1;
		}
		double t1 = now();
		model_backward(&m, dl, de, &e);
		double t2 = now();
		fwd = t1 - t0 < fwd ? t1 - t0 : fwd;
		both = t2 - t0 < both ? t2 - t0 : both;
	}
	/* generation: batch prompts of 32 tokens, gen_tokens sampled each (no stop tokens) */
	int plen = 32, **prompts = malloc((size_t)batch * sizeof *prompts), *plens = malloc((size_t)batch * sizeof *plens);
	for (int b = 0; b < batch; b++) {
		prompts[b] = ids + (b * plen) % (T - plen > 0 ? T - plen : 1);
		plens[b] = plen < T ? plen : T;
	}
	struct gen_seq *gs = malloc((size_t)batch * sizeof *gs);
	struct gen_params gp = { .temperature = 1.0f, .top_p = 0.95f, .max_tokens = gen_tokens, .seed = 1 };
	double gen = 1e30;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		if (gen_run(&m, (const int *const *)prompts, plens, batch, &gp, gs, &e) < 0) {
			fprintf(stderr, "bench_model: %s\n", e.msg);
			return 1;
		}
		double t1 = now();
		gen = t1 - t0 < gen ? t1 - t0 : gen;
		for (int b = 0; b < batch; b++)
			gen_seq_free(&gs[b]);
	}

	printf("model %s: hidden %d, layers %d, heads %d/%d, intermediate %d, vocab %d, %.1fM parameters\n", name, c.C,
	       c.L, c.NH, c.NKV, c.I, c.V, m.w.n / 1e6);
	printf("pack: %d tokens in %d sequences; activations %.1f MiB; BLAS threads %d; best of %d\n", T, nseq,
	       m.a.bytes / 1048576.0, threads > 0 ? threads : model_threads(), reps);
	printf("%-22s %12s %12s\n", "pass", "seconds", "tokens/s");
	printf("%-22s %12.4f %12.1f\n", "forward", fwd, T / fwd);
	printf("%-22s %12.4f %12.1f\n", "forward + backward", both, T / both);
	printf("%-22s %12.4f %12.1f   (%d sequences x %d tokens after %d-token prompts, top-p 0.95)\n", "generation", gen,
	       (double)batch * gen_tokens / gen, batch, gen_tokens, plens[0]);
	free(prompts), free(plens), free(gs);
	free(ids), free(lens), free(lp), free(ent), free(dl), free(de);
	model_free(&m);
	return 0;
}
