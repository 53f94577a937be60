/*
 * ckpt.h: the policy queue, QUEUE/step_N/ checkpoint directories.
 *
 * policy/step_N is the model after optimizer step N; step_0 is the input
 * model, published on the first run. A checkpoint directory holds
 * config.json (step_0's, its dtype the weights'), generation_config.json
 * (the input model's when it has one),
 * model.safetensors (or shards with an index), the input model's tokenizer
 * files when it has them, and, for
 * N > 0, optim.bin: the optimizer state with the fp32 master weights
 * (optim.h), from which a resumed run takes its weights, so a bf16
 * checkpoint loses nothing for the next step. A step saved without weights
 * (grpo-step --save-every) holds optim.bin alone: it is a resume point,
 * and has no config.json, which is how samplers looking for the newest
 * policy pass over it (model/rollout.h).
 *
 * Publishing is atomic: everything is written (and fsynced) into a
 * temporary directory QUEUE/.tmp/step_N.HOST.PID.TIME.K (tempfile.h's
 * unique name), which is renamed to QUEUE/step_N without replacing; a
 * reader sees the whole directory or none. A crash leaves at most a
 * temporary under .tmp, which no reader looks at, and the previous steps
 * untouched; a re-run writes the step again, and ckpt_sweep removes what
 * the crashed process left.
 */
#ifndef GRPO_CKPT_H
#define GRPO_CKPT_H

#include <stdint.h>

#include "base/err.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "train/optim.h"

#define CKPT_OPTIM_FILE "optim.bin"

/*
 * Publish QUEUE/step_0 from the model directory src: every regular file of
 * it, hard-linked where the file system allows, else copied. Returns 0 when
 * published, 1 when step_0 already exists (nothing done), -1 on error, and
 * CKPT_UNFLUSHED as ckpt_publish does.
 */
int ckpt_publish_initial(const char *queue, const char *src, struct err *e);

/*
 * Whether the model directory src is evidently not QUEUE/step_0, for a run
 * given an initial model when the queue has its own: 1 with why saying
 * which file differs, 0 when every file ckpt_publish_initial would take is
 * step_0's (the same inode, or the same size, first and last MiB), -1 on error.
 */
int ckpt_initial_differs(const char *queue, const char *src, char *why, size_t size, struct err *e);

/*
 * The newest step K of QUEUE (step_K directories) at most `below`. Returns 0
 * with *step = K, 1 when there is none, -1 on error.
 */
int ckpt_latest(const char *queue, int64_t below, int64_t *step, struct err *e);

/* 1 if QUEUE/step_N exists, 0 if not, -1 on error. */
int ckpt_exists(const char *queue, int64_t step, struct err *e);

/* 1 if QUEUE/step_N holds weights (its config.json), 0 if not (or no such step). */
int ckpt_has_weights(const char *queue, int64_t step);

/*
 * Load QUEUE/step_N into m (model_load) and make op an optimizer with
 * options o for its weights, told which are matrices (step_decay_matrices,
 * for --weight-decay-on); when the step has optim.bin, its master
 * weights replace m's and its moments and step count are op's; a step
 * without weights takes its shapes from step_0 and needs optim.bin. *resumed
 * says which (0: a fresh optimizer over the checkpoint's weights, as for
 * step_0). On failure neither needs freeing.
 */
int ckpt_load(struct model *m, struct optim *op, const struct optim_opts *o, const char *queue, int64_t step,
              int *resumed, struct err *e);

/*
 * Publish QUEUE/step_N: when weights is set, m's weights in dtype (ST_F32
 * or ST_BF16), sharded above shard_bytes (0: never), tok_dir's tokenizer
 * files when present, and its config.json (with dtype and torch_dtype set to
 * dtype) and generation_config.json in place of those written from m's
 * config (tok_dir NULL: none of these); always op's state with
 * m's fp32 weights. Returns 0, 1 when step_N already exists (nothing
 * published), -1 on error, and CKPT_UNFLUSHED when step_N was published
 * (renamed into place: readers see it, a re-run finds it) but the flush of
 * QUEUE that makes the rename last failed, with why in e.
 */
#define CKPT_UNFLUSHED 2
int ckpt_publish(const char *queue, int64_t step, const struct model *m, const struct optim *op, int weights,
                 enum st_dtype dtype, size_t shard_bytes, const char *tok_dir, struct err *e);

/*
 * Before publishing: -1 naming the first weight of m, or of op's AdamW
 * moments (op may be NULL), that is infinite or NaN, by its tensor's Hugging
 * Face name; 0 when all are finite. One pass over the arrays.
 */
int ckpt_check_finite(const struct model *m, const struct optim *op, struct err *e);

/*
 * --keep K: keep the newest K checkpoints that hold weights and every step
 * after the oldest of them (so the newest weights and the resume point
 * stay), and remove the steps before it (step_0 never), each first renamed
 * into QUEUE/.tmp (so it disappears whole) and then deleted. *removed
 * counts them. A crash leaves at most a directory in .tmp.
 */
int ckpt_prune(const char *queue, int keep, int *removed, struct err *e);

/*
 * Remove the temporaries of QUEUE/.tmp that a process of this host left
 * when it died (a kill -9 during publish or prune): those whose name's host
 * is this one and whose pid is not running. Another host's are left alone.
 * *removed counts them.
 */
int ckpt_sweep(const char *queue, int *removed, struct err *e);

/* The dtype to save src's weights in: ST_BF16 when its config.json says
 * bfloat16, else ST_F32 (float16 too: there is no F16 writer). -1 when
 * config.json cannot be read or is not a JSON object, or memory runs out. */
int ckpt_model_dtype(const char *src, enum st_dtype *d, struct err *e);

#endif
