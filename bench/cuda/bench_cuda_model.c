/*
 * bench_cuda_model: tokens per second of the GPU reference forward
 * (logprobs and entropies, what grpo-score computes) on a batch of
 * sequences given by their lengths, packed into bins as grpo-pack packs
 * them, for a random model of a named shape. bench/cuda/run.sh feeds it the
 * peer's batch and prints the ratios.
 *
 *   bench_cuda_model [-s preset] [-T bin tokens] [-r repeats] [-d fp32|bf16] [-b | -t] [-R] LENGTHS
 *
 * -b times the forward and the backward (the weights' gradients, as a
 * training step takes them; no loss and no optimizer step). -t times
 * grpo-step's whole step on the GPU: the gradients zeroed, the forward and
 * backward of every bin, the gradient norm and AdamW on the master weights
 * (lib/train/optim.h), and the weights and moments copied back to the host
 * for the checkpoint (copy_s, their median, and copy_gbs; pin_s: pinning the
 * three host arrays once, as model_gpu_optim_put does, pinned=how many it
 * could; put_s: the put of all three; GRPO_CUDA_PIN=0 leaves them pageable).
 * -R, with -b or -t, keeps only the layers' inputs and recomputes each
 * layer's activations for its backward (grpo-step --recompute).
 * With -b or -t, grpo-step's fused path (model_gpu_forward_train) is taken
 * unless GRPO_CUDA_FUSED_HEAD=0: the forward forms a token-ratio GRPO loss's
 * gradient (default options, every token a loss token) and the LM head's
 * backward, which the backward then skips (fused=1 in the output).
 *
 * LENGTHS has one sequence a line, "PROMPT RESPONSE" tokens. Prints one
 * line of key=value pairs: tokens, seconds (median), tokens_per_s, MFU (the
 * model's FLOPs; -R's recompute is not counted), the attention kernel
 * (GRPO_CUDA_ATTENTION=simple picks the CUDA-core one), recompute, the
 * device bytes the model holds (gpu_bytes); then the device's name, the
 * MiB the model holds and the MiB in use on the device.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench.h"

#include "model/model.h"
#include "model/model_gpu.h"
#include "train/loss.h"
#include "train/optim.h"

/* dense bf16 peak of an H100 SXM, the usual MFU denominator */
#define PEAK_FLOPS 989e12

static int cmp_desc(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

struct bin { int T, n; int lens[256]; };

/* The fused path's loss over a bin of up to T tokens: A = 1 and ℓ_old = 0, so
 * that every ratio is below 1 and unclipped, and every token has a gradient. */
struct fused_loss {
	struct loss_opts lo;
	struct model_gpu_loss gl;
	uint8_t *flags;
	float *adv, *old;
	double *w;
};

static int fused_loss_init(struct fused_loss *f, int T)
{
	loss_opts_default(&f->lo);
	f->flags = malloc((size_t)T), f->adv = malloc((size_t)T * 4), f->old = calloc((size_t)T, 4);
	f->w = malloc((size_t)T * sizeof *f->w);
	if (!f->flags || !f->adv || !f->old || !f->w)
		return -1;
	for (int t = 0; t < T; t++)
		f->flags[t] = MODEL_GPU_LOSS_TOKEN, f->adv[t] = 1, f->w[t] = 1.0 / T;
	struct model_gpu_loss gl = { &f->lo, f->flags, f->adv, f->old, NULL, NULL, f->w };
	f->gl = gl;
	return 0;
}

static void fused_loss_free(struct fused_loss *f)
{
	free(f->flags), free(f->adv), free(f->old), free(f->w);
}

/* A bin's forward: plain, or with the fused LM head (f not NULL). */
static int bin_forward(struct model_gpu *g, const struct bin *b, int32_t *ids, const struct fused_loss *f, float *lp,
		       float *ent, struct err *e)
{
	if (!f)
		return model_gpu_forward(g, ids, b->T, b->lens, b->n, NULL, lp, ent, e);
	uint32_t lens[256];
	for (int i = 0; i < b->n; i++)
		lens[i] = (uint32_t)b->lens[i];
	struct microbatch mb;
	memset(&mb, 0, sizeof mb);
	mb.input_ids = ids, mb.n_tokens = (uint32_t)b->T, mb.seq_lens = lens, mb.n_seq_lens = (uint32_t)b->n;
	return model_gpu_forward_train(g, &mb, &f->gl, lp, ent, e);
}

int main(int argc, char **argv)
{
	const char *name = "qwen2.5-0.5b", *dtype = "bf16";
	int binT = 16384, reps = 3, backward = 0, step = 0, recompute = 0, o;
	while ((o = getopt(argc, argv, "s:T:r:d:btRh")) != -1) {
		switch (o) {
		case 's': name = optarg; break;
		case 'T': binT = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'd': dtype = optarg; break;
		case 'b': backward = 1; break;
		case 't': backward = step = 1; break;
		case 'R': recompute = 1; break;
		default:
			fprintf(stderr, "usage: bench_cuda_model [-s %s] [-T bin tokens] [-r repeats] [-d fp32|bf16] "
				"[-b | -t] [-R] LENGTHS\n", MODEL_PRESETS);
			return o == 'h' ? 0 : 2;
		}
	}
	struct model_config c;
	if (optind != argc - 1 || model_config_preset(name, &c) < 0 || binT < 1 || reps < 1 ||
	    (recompute && !backward) || (strcmp(dtype, "fp32") && strcmp(dtype, "bf16"))) {
		fprintf(stderr, "bench_cuda_model: bad arguments (-h for usage)\n");
		return 2;
	}
	FILE *f = fopen(argv[optind], "r");
	if (!f) {
		perror(argv[optind]);
		return 1;
	}
	static int lens[65536];
	int nseq = 0, p, r;
	long long tokens = 0;
	double sum_sq = 0;   /* sum over sequences of L(L+1), for the attention FLOPs */
	while (nseq < 65536 && fscanf(f, "%d %d", &p, &r) == 2) {
		lens[nseq] = p + r;
		tokens += p + r;
		sum_sq += (double)(p + r) * (p + r + 1);
		nseq++;
	}
	fclose(f);
	if (nseq == 0) {
		fprintf(stderr, "bench_cuda_model: %s: no lengths\n", argv[optind]);
		return 1;
	}

	/* first fit, longest first, into bins of binT tokens (the peer's packing) */
	qsort(lens, nseq, sizeof *lens, cmp_desc);
	static struct bin bins[4096];
	int nbins = 0;
	for (int i = 0; i < nseq; i++) {
		int b = 0;
		while (b < nbins && (bins[b].T + lens[i] > binT || bins[b].n == 256))
			b++;
		if (b == nbins) {
			if (lens[i] > binT || nbins == 4096) {
				fprintf(stderr, "bench_cuda_model: a sequence of %d tokens does not fit bins of %d\n", lens[i],
					binT);
				return 1;
			}
			memset(&bins[nbins++], 0, sizeof bins[0]);
		}
		bins[b].lens[bins[b].n++] = lens[i];
		bins[b].T += lens[i];
	}

	struct model m;
	struct err e = { 0 };
	double t0 = now();
	if (model_create(&m, &c, &e) < 0 || model_init_random(&m, 1, &e) < 0) {
		fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
		return 1;
	}
	struct model_gpu *g = NULL;
	int bf16 = strcmp(dtype, "bf16") == 0;
	int r_open = backward ? model_gpu_open_train(&g, &m, binT, bf16, recompute, &e)
			      : model_gpu_open(&g, &m, binT, bf16, &e);
	if (r_open < 0) {
		fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
		return 1;
	}
	struct optim op;
	struct optim_opts oo;
	optim_opts_default(&oo);
	memset(&op, 0, sizeof op);
	double pin_s = 0, put_s = 0;
	int pinned = 0;
	if (step) {
		if (optim_init(&op, &oo, m.w.n, &e) < 0) {
			fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
			return 1;
		}
		/* touched, as moments loaded from a checkpoint are: pin_s without the first page faults */
		memset(op.m, 0, m.w.n * sizeof *op.m);
		memset(op.v, 0, m.w.n * sizeof *op.v);
		double tp = now();
		pinned = !model_gpu_pin(g, m.w.mem, m.w.n, NULL) + !model_gpu_pin(g, op.m, m.w.n, NULL) +
			 !model_gpu_pin(g, op.v, m.w.n, NULL);
		pin_s = now() - tp;
		tp = now();
		if (model_gpu_optim_put(g, &m, op.m, op.v, &e) < 0) {
			fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
			return 1;
		}
		put_s = now() - tp;
	}
	fprintf(stderr, "bench_cuda_model: %s, %d sequences, %lld tokens in %d bins of <= %d; set up in %.1f s\n",
		name, nseq, tokens, nbins, binT, now() - t0);

	int32_t *ids = malloc((size_t)binT * sizeof *ids);
	float *lp = malloc((size_t)binT * sizeof *lp), *ent = malloc((size_t)binT * sizeof *ent);
	float *dlp = malloc((size_t)binT * sizeof *dlp);
	for (int t = 0; t < binT; t++)
		dlp[t] = 1.0f / binT;
	uint64_t rng = 88172645463325252ull;
	for (int t = 0; t < binT; t++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		ids[t] = (int32_t)(rng % (uint64_t)c.V);
	}
	struct fused_loss fl;
	memset(&fl, 0, sizeof fl);
	int fused = backward && model_gpu_fused_head();
	if (fused && fused_loss_init(&fl, binT) < 0) {
		fprintf(stderr, "bench_cuda_model: out of memory\n");
		return 1;
	}
	double times[64], copies[64];
	if (reps > 63)
		reps = 63;
	for (int k = 0; k <= reps; k++) {   /* pass 0 warms up */
		double t = now();
		if (step && model_gpu_grads_zero(g, &e) < 0) {
			fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
			return 1;
		}
		for (int b = 0; b < nbins; b++)
			if (bin_forward(g, &bins[b], ids, fused ? &fl : NULL, lp, ent, &e) < 0 ||
			    (backward && model_gpu_backward(g, dlp, NULL, &e) < 0)) {
				fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
				return 1;
			}
		if (step && optim_step_gpu(&op, g, NULL, &e) < 0) {
			fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
			return 1;
		}
		double tc = now();
		if (step && model_gpu_optim_get(g, &m, op.m, op.v, &e) < 0) {
			fprintf(stderr, "bench_cuda_model: %s\n", e.msg);
			return 1;
		}
		copies[k] = now() - tc;
		times[k] = now() - t;
	}
	/* medians of the timed passes */
	for (int i = 1; i <= reps; i++)
		for (int j = i; j > 1 && times[j] < times[j - 1]; j--) {
			double x = times[j];
			times[j] = times[j - 1];
			times[j - 1] = x;
		}
	for (int i = 1; i <= reps; i++)
		for (int j = i; j > 1 && copies[j] < copies[j - 1]; j--) {
			double x = copies[j];
			copies[j] = copies[j - 1];
			copies[j - 1] = x;
		}
	double secs = times[1 + reps / 2], copy_s = step ? copies[1 + reps / 2] : 0;

	/* MFU: 2 N_mm per token (every matrix, the LM head included) plus the causal attention's 2 QD L(L+1) */
	double QD = (double)c.NH * c.HS, KD = (double)c.NKV * c.HS;
	double n_mm = (double)c.L * (c.C * (QD + 2 * KD) + QD * c.C + 3.0 * c.C * c.I) + (double)c.V * c.C;
	double flops = (2 * n_mm * tokens + 2 * c.L * QD * sum_sq) * (backward ? 3 : 1);
	char dev[512];
	model_gpu_describe(g, dev, sizeof dev);
	printf("shape=%s dtype=%s pass=%s sequences=%d tokens=%lld bins=%d seconds=%.4f tokens_per_s=%.0f mfu=%.3f "
	       "attention=%s recompute=%d fused=%d gpu_bytes=%zu copy_s=%.4f", name, dtype,
	       step ? "train-step" : backward ? "forward+backward" : "forward", nseq, tokens, nbins, secs, tokens / secs,
	       flops / secs / PEAK_FLOPS, model_gpu_attention(g), recompute, fused, model_gpu_bytes(g), copy_s);
	if (step)
		printf(" copy_gbs=%.1f pinned=%d pin_s=%.4f put_s=%.4f", 3.0 * m.w.n * sizeof(float) / copy_s / 1e9, pinned,
		       pin_s, put_s);
	printf("\n");
	printf("device: %s\n", dev);
	model_gpu_close(g);
	optim_free(&op);
	model_free(&m);
	free(ids);
	free(lp);
	free(ent);
	free(dlp);
	fused_loss_free(&fl);
	return 0;
}
