/*
 * bench_step: one grpo-step optimizer step on the CPU (loss, forward,
 * backward over every micro-batch, AdamW), in tokens per second and peak
 * memory, for a small model and optionally the Qwen2.5-0.5B shape
 * (-s qwen2.5-0.5b). The ratio to forward + backward alone is the overhead
 * of the loss and the optimizer.
 *
 *   bench_step [-s preset] [-T tokens per micro-batch] [-m micro-batches]
 *              [-n sequences per micro-batch] [-r repeats] [-t threads]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"

#include "train/step.h"

/* A micro-batch of nseq sequences filling T tokens, prompts a quarter of each. */
static struct microbatch make_mb(int T, int nseq, int V, uint64_t *s)
{
	struct microbatch mb;
	memset(&mb, 0, sizeof mb);
	mb.n_tokens = (uint32_t)T;
	mb.input_ids = calloc((size_t)T, 4);
	mb.position_ids = calloc((size_t)T, 4);
	mb.loss_mask = calloc((size_t)T, 1);
	mb.advantages = calloc((size_t)T, 4);
	mb.inference_logprobs = calloc((size_t)T, 4);
	mb.temperatures = calloc((size_t)T, 4);
	mb.seq_lens = calloc((size_t)nseq, 4);
	mb.sequence_ids = calloc((size_t)nseq, 8);
	mb.group_ids = calloc((size_t)nseq, 8);
	int at = 0;
	for (int j = 0; j < nseq; j++) {
		int len = T / nseq + (j < T % nseq);
		float adv = j % 2 ? 1.0f : -1.0f;
		for (int t = 0; t < len; t++, at++) {
			*s = *s * 6364136223846793005ull + 1442695040888963407ull;
			mb.input_ids[at] = (int32_t)((*s >> 33) % (uint64_t)V);
			mb.position_ids[at] = t;
			mb.loss_mask[at] = t >= len / 4;
			mb.advantages[at] = adv;
			mb.inference_logprobs[at] = mb.loss_mask[at] ? -9.0f : 0;
			mb.temperatures[at] = 1;
		}
		mb.seq_lens[j] = (uint32_t)len;
	}
	mb.n_seq_lens = mb.n_seqs = (uint32_t)nseq;
	return mb;
}

int main(int argc, char **argv)
{
	const char *name = "small";
	int T = 512, nmb = 4, nseq = 4, reps = 2, threads = 0, o;
	while ((o = getopt(argc, argv, "s:T:m:n:r:t:h")) != -1) {
		switch (o) {
		case 's': name = optarg; break;
		case 'T': T = atoi(optarg); break;
		case 'm': nmb = atoi(optarg); break;
		case 'n': nseq = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_step [-s %s] [-T tokens] [-m micro-batches] [-n seqs] [-r repeats] "
			        "[-t threads]\n", MODEL_PRESETS);
			return o == 'h' ? 0 : 2;
		}
	}
	struct model_config c;
	if (model_config_preset(name, &c) < 0 || T < nseq || nseq < 1 || nmb < 1 || reps < 1) {
		fprintf(stderr, "bench_step: bad arguments\n");
		return 2;
	}
	if (threads > 0)
		model_set_threads(threads);
	struct model m;
	struct err e;
	if (model_create(&m, &c, &e) < 0) {
		fprintf(stderr, "bench_step: %s\n", e.msg);
		return 1;
	}
	model_init_random(&m, 1, NULL);
	uint64_t s = 1;
	struct microbatch *mbs = calloc((size_t)nmb, sizeof *mbs);
	for (int i = 0; i < nmb; i++)
		mbs[i] = make_mb(T, nseq, c.V, &s);
	struct loss_opts lo;
	loss_opts_default(&lo);
	struct optim_opts oo;
	optim_opts_default(&oo);
	struct optim op;
	if (optim_init(&op, &oo, m.w.n, &e) < 0 || step_prepare(&m, mbs, (size_t)nmb, &e) < 0) {
		fprintf(stderr, "bench_step: %s\n", e.msg);
		return 1;
	}

	/* forward + backward alone, the same micro-batches */
	float *lp = malloc((size_t)T * 4), *ent = malloc((size_t)T * 4), *dl = calloc((size_t)T, 4);
	double fb = 1e30, best = 1e30;
	struct step_result r, br;
	memset(&br, 0, sizeof br);
	for (int k = 0; k < reps; k++) {
		double t0 = now();
		for (int i = 0; i < nmb; i++) {
			model_forward(&m, (const int *)mbs[i].input_ids, T, (const int *)mbs[i].seq_lens, nseq,
			              mbs[i].temperatures, lp, ent, &e);
			model_backward(&m, dl, NULL, &e);
		}
		double t1 = now();
		fb = t1 - t0 < fb ? t1 - t0 : fb;
		struct loss_totals tot = { 0, 0, 0 };
		step_count(mbs, (size_t)nmb, &tot);
		if (step_train(&m, NULL, &op, &lo, &tot, 1, mbs, (size_t)nmb, NULL, NULL, &r, &e) < 0) {
			fprintf(stderr, "bench_step: %s\n", e.msg);
			return 1;
		}
		double t2 = now();
		if (t2 - t1 < best)
			best = t2 - t1, br = r;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double tok = (double)T * nmb;
	printf("model %s: %.1fM parameters; step of %d micro-batches x %d tokens (%d sequences each); "
	       "BLAS threads %d; best of %d\n", name, m.w.n / 1e6, nmb, T, nseq,
	       threads > 0 ? threads : model_threads(), reps);
	printf("memory: weights+grads+moments %.1f MiB, activations %.1f MiB, peak RSS %.1f MiB\n",
	       4.0 * 4 * m.w.n / 1048576.0, m.a.bytes / 1048576.0, ru.ru_maxrss / 1024.0);
	printf("%-28s %12s %12s\n", "pass", "seconds", "tokens/s");
	printf("%-28s %12.4f %12.1f\n", "forward + backward", fb, tok / fb);
	printf("%-28s %12.4f %12.1f   (forward %.3fs, backward %.3fs, optimizer %.3fs)\n", "grpo step (loss, AdamW)",
	       best, tok / best, br.fwd_s, br.bwd_s, br.opt_s);
	printf("ratio step / forward+backward time: %.3f\n", best / fb);
	for (int i = 0; i < nmb; i++)
		mb_free(&mbs[i]);
	free(mbs);
	free(lp), free(ent), free(dl);
	optim_free(&op);
	model_free(&m);
	return 0;
}
