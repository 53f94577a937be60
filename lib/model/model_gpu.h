/*
 * model_gpu.h: a model's forward on a CUDA GPU (kernels/gpu_model.h), and
 * the --device choice every tool that runs a model offers.
 *
 * The GPU model is opened from a loaded C model (model.h), whose fp32
 * weights it copies to the device once, in fp32 or bf16; the C model stays
 * the reference it is tested against (tests/cuda/test_cuda_model.c). Its
 * forward takes the same packs and gives the same per-token logprobs and
 * entropies, aligned the same way, as model_forward() and
 * model_forward_mb().
 *
 * A library built without CUDA (no nvcc or cuBLAS at build time, or a
 * sanitizer build) keeps this interface: --device auto then means the CPU,
 * and asking for cuda is an error that says why.
 */
#ifndef GRPO_MODEL_GPU_H
#define GRPO_MODEL_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"
#include "model/generate.h"
#include "model/model.h"

enum model_device { MODEL_DEVICE_AUTO, MODEL_DEVICE_CPU, MODEL_DEVICE_CUDA };

/* "auto", "cpu" or "cuda"; -1 for anything else. */
int model_device_parse(const char *s, enum model_device *out);
extern const char *const model_device_names[];   /* by enum, NULL-terminated */
const char *model_device_name(enum model_device d);

/*
 * What a tool asked for, made concrete: auto becomes cuda where the
 * library has CUDA and a GPU is present, else cpu; cuda where either is
 * missing is -1 with the reason in e. auto on a machine whose driver sees
 * a GPU that the run cannot use (libgrpo-cuda.so missing or broken, the
 * CUDA runtime failing) becomes cpu too, but returns 1 with a warning in e
 * for the tool to print: running on the CPU beside an idle GPU is rarely
 * what was meant.
 */
int model_device_resolve(enum model_device want, enum model_device *got, struct err *e);

struct model_gpu;

/* Copy m's weights to the GPU, with activations for packs of up to maxT tokens. */
int model_gpu_open(struct model_gpu **out, const struct model *m, int maxT, int bf16, struct err *e);
/*
 * The same, keeping what the backward needs and fp32 gradients on the GPU.
 * recompute: keep only each layer's input and make the layer's activations
 * again just before its backward (kernels/gpu_model.h, GPU_TRAIN_RECOMPUTE):
 * the activations of all layers but one less, for about one more forward of
 * the layers per backward; the same gradients, to the bit.
 */
int model_gpu_open_train(struct model_gpu **out, const struct model *m, int maxT, int bf16, int recompute,
			 struct err *e);

/*
 * The LM head fused with the loss's per-token gradient (kernels/gpu_model.h,
 * gpu_model_forward_train), for a model opened for training: the forward of
 * mb also forms, chunk by chunk, the loss's gradient of each token's
 * logprob and entropy on the GPU (lib/train/loss_token.h's maths, the
 * host loss's own) and the LM head's backward, so that the next
 * model_gpu_backward starts at the final norm and never makes the logits
 * again. Writes logprob and entropy as model_gpu_forward_mb does (the
 * host's loss still reads them, for its statistics). The token ratio only.
 * loss: per-token host arrays aligned with mb's tokens; w the aggregation's
 * weights (lib/train's loss_token_weights); a token's ℓ_old or ℓ_behav may
 * be this forward's own ℓ (the flags), exactly. opts is a struct loss_opts
 * (lib/train/loss_token.h), which only the kernels read.
 *
 * Used where model_gpu_fused_head() says: by default, unless
 * GRPO_CUDA_FUSED_HEAD=0 in the environment asks for the two phases
 * (measured on an H200: 4.6% faster a step). With GRPO_CUDA_FUSED_CHECK=1
 * the next model_gpu_backward compares the host loss's dlogprob and
 * dentropy with the GPU's and fails on a difference beyond float rounding.
 */
struct loss_opts;
#define MODEL_GPU_LOSS_TOKEN 1       /* a loss token */
#define MODEL_GPU_LOSS_OLD_OWN 2     /* its ℓ_old is this forward's ℓ */
#define MODEL_GPU_LOSS_BEHAV_OWN 4   /* its ℓ_behav is this forward's ℓ */
struct model_gpu_loss {
	const struct loss_opts *opts;
	const uint8_t *flags;            /* (T) MODEL_GPU_LOSS_* */
	const float *adv, *old;          /* (T) */
	const float *behav, *ref;        /* (T), or NULL where there are none */
	const double *w;                 /* (T) */
};
int model_gpu_forward_train(struct model_gpu *g, const struct microbatch *mb, const struct model_gpu_loss *loss,
			    float *logprob, float *entropy, struct err *e);
/* 1 unless GRPO_CUDA_FUSED_HEAD=0 turns model_gpu_forward_train off. */
int model_gpu_fused_head(void);

/* As model_backward(): ADD the last forward's weight gradients into the
 * GPU's; zero them; copy them into grads (lib/model's layout, as
 * model_grads_alloc() lays m->g out), overwriting. */
int model_gpu_backward(struct model_gpu *g, const float *dlogprob, const float *dentropy, struct err *e);
int model_gpu_grads_zero(struct model_gpu *g, struct err *e);
int model_gpu_grads_get(struct model_gpu *g, struct model_params *grads, struct err *e);
/* The other way: grads (summed over ranks on the host) become the GPU's. */
int model_gpu_grads_put(struct model_gpu *g, const struct model_params *grads, struct err *e);
void model_gpu_close(struct model_gpu *g);

/*
 * Page-lock the host array host (n floats) until model_gpu_close, so that
 * the copies of the weights, moments or gradients into and out of it go by
 * DMA at the link's bandwidth, not through the driver's pageable staging
 * and a host memcpy (about 10 GB/s). It costs about 0.1 s a GiB, once per
 * GPU model: for arrays copied every step, which must stay allocated until
 * model_gpu_close (a child forked meanwhile lacks them: fork only to exec,
 * as grpo-step's --on-publish does). Returns 0 when pinned (now or before),
 * 1 when the array stays pageable (GRPO_CUDA_PIN=0, no CUDA, or the driver
 * refused; why in e, which may be NULL): the copies work either way, with
 * the same bytes.
 */
int model_gpu_pin(struct model_gpu *g, const float *host, size_t n, struct err *e);

/*
 * The optimizer on the GPU (grpo-step --device cuda), for a model opened
 * for training: model_gpu_optim_put gives it fp32 master weights (m's) and
 * AdamW's moments (adam_m, adam_v: flat arrays in m->w's layout, as struct
 * optim holds them) and makes the working weights from the master copy;
 * model_gpu_optim_get copies all three back, for a checkpoint. The put pins
 * m->w.mem, adam_m and adam_v (model_gpu_pin), so that the copies back after
 * every step go at the link's bandwidth: they must stay allocated until
 * model_gpu_close.
 * model_gpu_adamw takes one step with the scalars lib/train/optim.c
 * computes, on every weight at once (the 1-D tensors with no decay unless
 * decay_vectors), then remakes the working weights.
 */
struct model_gpu_adamw {
	double clip, beta1, beta2, eps;
	double step_size;   /* lr_t / (1 - beta1^t) */
	double sqrt_bc2;    /* sqrt(1 - beta2^t) */
	double decay;       /* 1 - lr_t * weight_decay */
	int decay_vectors;  /* 1: the 1-D tensors (norms, biases) decay too; 0: only the matrices do */
};
int model_gpu_optim_put(struct model_gpu *g, const struct model *m, const float *adam_m, const float *adam_v,
			struct err *e);
int model_gpu_optim_get(struct model_gpu *g, struct model *m, float *adam_m, float *adam_v, struct err *e);
/* The gradients' global L2 norm (a tied head counted once). */
int model_gpu_grad_norm(struct model_gpu *g, double *norm, struct err *e);
int model_gpu_adamw(struct model_gpu *g, const struct model_gpu_adamw *p, struct err *e);

/* The most tokens a pack may hold; the device bytes the model holds. */
int model_gpu_max_tokens(const struct model_gpu *g);
size_t model_gpu_bytes(const struct model_gpu *g);

/* As model_forward() and model_forward_mb() (model.h). */
int model_gpu_forward(struct model_gpu *g, const int *ids, int T, const int *seq_lens, int nseq,
		      const float *temps, float *logprob, float *entropy, struct err *e);
int model_gpu_forward_mb(struct model_gpu *g, const struct microbatch *mb, float *logprob, float *entropy,
			 struct err *e);

/*
 * Sampling on the GPU (kernels/gpu_decode.h): gen_run()'s contract
 * (generate.h: the same sampling rules, streams and outputs; the numbers
 * are the GPU's, so the tokens are the C model's only up to rounding), for
 * a model opened for prompts of up to max_prompt tokens and max_new more.
 * Samples of one prompt that are neighbours in prompts[] share its cache.
 * It takes its knobs from the environment (model_gpu_gen_knobs), and
 * fails, naming the variable, where one is malformed.
 */
#define GEN_GPU_PACK 4096   /* tokens a prefill pass takes at most (more when a prompt and its response are longer) */

/*
 * The GPU sampler's knobs (grpo-collect(1), ENVIRONMENT), each 0 where its
 * variable is unset or empty, for the default: GRPO_CUDA_MAX_BATCH, the
 * most sequences decoded at once (1 to the decoder's bound, 1024); GRPO_CUDA_KV_MIB,
 * the key/value cache's MiB (1 to 2^24); GRPO_CUDA_GRAPHS, 0 to launch each
 * decode step kernel by kernel, or 1. -1 with the variable, its value and
 * what it takes in e where one is anything else; a tool asks at start, so
 * that a typo fails before any work.
 */
struct model_gpu_gen_knobs {
	int max_batch;
	long long cache_mib;
	int no_graphs;
};
int model_gpu_gen_knobs(struct model_gpu_gen_knobs *k, struct err *e);

int model_gpu_open_gen(struct model_gpu **out, const struct model *m, int max_prompt, int max_new, int bf16,
		       struct err *e);
int model_gpu_generate(struct model_gpu *mg, const int *const *prompts, const int *prompt_lens, int B,
		       const struct gen_params *p, struct gen_seq *out, struct err *e);
/* The last model_gpu_generate's prefill, decode steps, batch and cache, for -v. */
void model_gpu_gen_describe(const struct model_gpu *mg, char *buf, size_t n);

/* "NAME, N MiB on the device" for -v. */
void model_gpu_describe(const struct model_gpu *g, char *buf, size_t n);
/* The attention kernel in use: "tensor cores" or "CUDA cores". */
const char *model_gpu_attention(const struct model_gpu *g);

#endif
