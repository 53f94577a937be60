/*
 * optim.h: the optimizer of grpo-step, behind one small interface.
 *
 * An optimizer updates n fp32 weights in place from their gradients. The
 * weights it is handed ARE the master copy (the model's own fp32
 * allocation): checkpoints may be saved in bf16, but the optimizer state
 * file (optim_save) holds the fp32 weights beside the moments, and a resumed
 * run takes its weights from there, so saving in a narrower type loses
 * nothing for the next step.
 *
 * AdamW (PyTorch's torch.optim.AdamW), at optimizer step t = 1, 2, ...:
 *
 *   g  ← g · min(1, max_norm / (‖g‖ + 1e-6))     global-norm clipping (max_norm > 0)
 *   w  ← w · (1 − lr_t·wd)                       decoupled weight decay, on the decayed weights
 *   m  ← β1·m + (1−β1)·g
 *   v  ← β2·v + (1−β2)·g²
 *   w  ← w − lr_t/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
 *
 * Which weights decay (wd_on): with WD_ON_MATRICES (the default, as Hugging
 * Face's Trainer, OpenRLHF and llm.c) the tensors of two dimensions
 * (embeddings, projections, the LM head), and not the 1-D ones (RMSNorm
 * gains, biases), which decay pulls toward 0; those step as with wd = 0, to
 * the bit. With WD_ON_ALL (verl) every weight. The optimizer knows nothing
 * of the model: the caller names the decayed spans of the flat array
 * (optim_set_decayed; step_decay_matrices does it from a model).
 *
 * Learning rate at step t, with W warmup steps and S total steps:
 *
 *   t ≤ W       lr·t/W
 *   constant    lr
 *   linear      lr·max(0, 1 − p)              p = (t − 1 − W) / (S − W), at most 1
 *   cosine      lr·½(1 + cos(π·p))
 *
 * so the first step after warmup runs at the full rate and the schedule
 * reaches 0 at S + 1.
 *
 * Nothing in an optimizer step is random, so the state holds no RNG.
 * Another optimizer (8-bit AdamW, Adafactor) joins as another enum optim_kind
 * with its own state in struct optim and its own branch in optim_step,
 * optim_save and optim_load; the callers do not change.
 */
#ifndef GRPO_OPTIM_H
#define GRPO_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "model/model_gpu.h"

enum optim_kind { OPTIM_ADAMW };
enum lr_schedule { LR_CONSTANT, LR_COSINE, LR_LINEAR };
enum wd_on { WD_ON_MATRICES, WD_ON_ALL };

struct optim_opts {
	enum optim_kind kind;
	double lr;
	int warmup_steps;
	enum lr_schedule schedule;
	int total_steps;          /* S, needed by cosine and linear */
	double weight_decay;
	enum wd_on wd_on;         /* which weights weight_decay applies to */
	double beta1, beta2, eps;
	double max_grad_norm;     /* 0: no clipping */
};

/* The defaults of grpo-step(1): lr 1e-6, constant, betas 0.9/0.999, eps 1e-8, clip 1. */
void optim_opts_default(struct optim_opts *o);
extern const char *const lr_schedule_names[];   /* by enum, NULL-terminated: --lr-schedule's words (cli_word) */
const char *lr_schedule_name(enum lr_schedule s);
extern const char *const wd_on_names[];         /* by enum, NULL-terminated: --weight-decay-on's words */
const char *wd_on_name(enum wd_on w);
/* Options in range (schedules that need S have it); -1 with a message if not. */
int optim_opts_check(const struct optim_opts *o, struct err *e);

/* The learning rate of optimizer step t (1-based). */
double optim_lr(const struct optim_opts *o, int64_t t);

/* Weights [off, off + n) of the flat array. */
struct optim_span {
	size_t off, n;
};

struct optim {
	struct optim_opts o;
	size_t n;        /* weights */
	int64_t step;    /* optimizer steps taken */
	float *m;        /* (n) first moments */
	float *v;        /* (n) second moments */
	struct optim_span *decayed;   /* (ndecayed) the weights WD_ON_MATRICES decays */
	size_t ndecayed;
	int decayed_set;              /* optim_set_decayed was called */
};

/* Zeroed state for n weights (step 0). */
int optim_init(struct optim *op, const struct optim_opts *o, size_t n, struct err *e);
void optim_free(struct optim *op);
/*
 * The weights that decay under WD_ON_MATRICES: ns spans in ascending order,
 * not overlapping, within n (copied; -1 with a message if not). Until it is
 * called, a CPU step with weight decay on matrices is refused: decaying
 * nothing, or everything, silently would be the wrong optimizer. WD_ON_ALL
 * and wd = 0 need no spans. The GPU step knows its own layout.
 */
int optim_set_decayed(struct optim *op, const struct optim_span *s, size_t ns, struct err *e);

struct optim_result {
	double grad_norm;  /* ‖g‖ before clipping */
	double clip;       /* the factor g was scaled by (1 if not clipped) */
	double lr;         /* lr_t */
};

/*
 * One step: w (n) moves by the gradient g (n), which is read, never
 * written. A gradient whose norm is not finite is refused (-1) and
 * nothing changes: w, the moments and the step count stay as they were.
 */
int optim_step(struct optim *op, float *w, const float *g, struct optim_result *r, struct err *e);

/*
 * The same step on the GPU (grpo-step --device cuda), on the master
 * weights, moments and gradients g holds (model_gpu_optim_put), with the
 * same scalars and the same per-weight arithmetic. op->m and op->v are
 * stale until model_gpu_optim_get copies the moments back. A refused step
 * changes nothing, as above; a GPU error may leave g's weights half moved.
 */
int optim_step_gpu(struct optim *op, struct model_gpu *g, struct optim_result *r, struct err *e);

/*
 * The state file: magic "GRPOOPT1", version, kind, n, step, then the
 * master weights w, m and v (n fp32 each, little-endian), then a 64-bit
 * FNV-1a checksum of everything before it. optim_save creates path (which
 * must not exist; the caller publishes it); optim_load checks everything
 * against n and fills op (its options are the caller's: op->o is kept) and w.
 */
int optim_save(const struct optim *op, const float *w, const char *path, struct err *e);
int optim_load(struct optim *op, float *w, size_t n, const char *path, struct err *e);

#endif
