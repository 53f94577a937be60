/*
 * gpu_model.h: the transformer's forward and backward on one CUDA GPU,
 * callable from C.
 *
 * The same architecture as lib/model/model.h (Llama, Qwen2, Qwen3 over
 * packed sequences, positions restarting in every sequence, block-causal
 * grouped-query attention), which is its reference: with GPU_FP32 every
 * product and sum is done in fp32 and the logprobs match the C model to
 * about 1e-5; with GPU_BF16 the weights and activations are bf16 (the
 * residual stream, the norms' statistics, every accumulation and the
 * logits stay fp32), as a bf16 trainer or sampler computes them.
 *
 * The caller hands the weights over once, as host fp32 arrays in the C
 * model's layout (struct model_params): this library copies them into one
 * device allocation, q/k/v fused into one matrix per layer and gate/up into
 * another, so that a layer's input goes through two matrix products, not
 * five. The activations are a second allocation sized for packs of up to
 * maxT tokens; the LM head works on chunks of tokens with fp32 logits, so
 * the (T, V) logits never exist whole.
 *
 * Every function returns 0, or -1 with a message in msg (msglen bytes),
 * which names what failed (the CUDA or cuBLAS call and its error).
 * This header is plain C; the library is built by nvcc with C linkage.
 */
#ifndef GRPO_KERNELS_GPU_MODEL_H
#define GRPO_KERNELS_GPU_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gpu_dtype { GPU_FP32 = 0, GPU_BF16 = 1 };

struct gpu_model_shape {
	int V, C, L, NH, NKV, HS, I;   /* vocabulary, hidden, layers, heads, kv heads, head size, MLP */
	float eps;                     /* RMSNorm epsilon */
};

/* Host fp32 arrays in lib/model's layout; NULL where the family has none.
 * lm_head may equal embed (tied). cos and sin (max_pos, HS/2) are the RoPE
 * table, indexed by position within a sequence. */
struct gpu_model_weights {
	const float *embed, *lm_head, *ln1, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo;
	const float *qnorm, *knorm, *ln2, *wgate, *wup, *wdown, *norm;
	const float *cos, *sin;
	int max_pos;
};

struct gpu_model;

/* CUDA devices present: 0 where there is no driver or no GPU (why in msg). */
int gpu_count(char *msg, size_t msglen);

/*
 * What a model is made for. GPU_TRAIN keeps every layer's activations for
 * gpu_model_backward (the forward then keeps attention's log-sum-exp too)
 * and holds fp32 gradients. GPU_TRAIN_RECOMPUTE keeps only each layer's
 * input (the fp32 residual stream) and makes the layer's activations again
 * just before its backward, in one layer's buffers that every layer
 * shares: the activations of L - 1 layers less, for about one more forward
 * of the layers per backward, with the same gradients to the bit.
 */
enum gpu_mode { GPU_INFER = 0, GPU_TRAIN = 1, GPU_TRAIN_RECOMPUTE = 2 };

/* Copy the weights to device 0 and size the activations for maxT tokens. */
int gpu_model_create(struct gpu_model **out, const struct gpu_model_shape *shape,
		     const struct gpu_model_weights *w, int maxT, enum gpu_dtype dtype, enum gpu_mode mode,
		     char *msg, size_t msglen);

/*
 * Forward over a pack of T tokens (host arrays): ids (T), seq_lens (nseq,
 * summing to T), temps (T) or NULL for 1. Writes logprob (T) and, if not
 * NULL, entropy (T), aligned with the ids as in model.h: the value at i
 * describes ids[i] predicted from position i-1, 0 at a sequence's first
 * token.
 */
int gpu_model_forward(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
		      const float *temps, float *logprob, float *entropy, char *msg, size_t msglen);

/*
 * A training forward with the LM head's backward fused in (a model created
 * for training; grpo-step's default, GRPO_CUDA_FUSED_HEAD=0 turns it off):
 * for each chunk of rows, after the logits' statistics, the loss's per-token
 * gradient is formed on the device by lib/train/loss_token.h's maths (the
 * one the host's loss uses), then dlogits, the final norm's input gradient
 * and the LM head's weight gradient (ADDED, as the backward adds), while the
 * chunk's logits are at hand: gpu_model_backward then starts at the final
 * norm, and no logit is made twice. The token ratio only (GSPO's needs the
 * whole sequence's logprobs first). loss's arrays are host arrays aligned
 * with ids (T); a token's ℓ_old, or ℓ_behav, may be this very forward's ℓ
 * (GPU_LOSS_OLD_OWN, GPU_LOSS_BEHAV_OWN: the first epoch's old logprobs, and
 * a sequence without sampler logprobs), exactly as the host then reads it
 * from logprob. Writes logprob and entropy as gpu_model_forward does.
 */
struct loss_opts;                 /* lib/train/loss_token.h */
#define GPU_LOSS_TOKEN 1          /* a loss token */
#define GPU_LOSS_OLD_OWN 2        /* its ℓ_old is this forward's ℓ */
#define GPU_LOSS_BEHAV_OWN 4      /* its ℓ_behav is this forward's ℓ */
struct gpu_loss {
	const struct loss_opts *opts;
	const uint8_t *flags;         /* (T) GPU_LOSS_* */
	const float *adv, *old;       /* (T) */
	const float *behav, *ref;     /* (T), or NULL where there are none */
	const double *w;              /* (T) the aggregation's weights (lib/train's loss_token_weights) */
};
int gpu_model_forward_train(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
			    const float *temps, const struct gpu_loss *loss, float *logprob, float *entropy, char *msg,
			    size_t msglen);

/*
 * Backward of the last forward (a model created for training): given the
 * loss's gradients dlogprob (T) and dentropy (T, or NULL) aligned as the
 * forward's outputs, ADDS the weights' gradients into the model's fp32
 * gradients (so micro-batches accumulate), as lib/model's model_backward.
 * After gpu_model_forward_train the LM head's part is done: dlogprob and
 * dentropy are then only compared, where not NULL, with the gradients the
 * device formed (a debug check): a difference beyond float rounding in a
 * token some row predicts fails, naming it.
 */
int gpu_model_backward(struct gpu_model *g, const float *dlogprob, const float *dentropy, char *msg,
		       size_t msglen);

/* Zero the gradients. */
int gpu_model_grads_zero(struct gpu_model *g, char *msg, size_t msglen);

/*
 * Host fp32 arrays in lib/model's layout (the same fields as struct
 * gpu_model_weights; NULL where absent or not wanted; a tied model's head
 * is in embed), for the gradients and the optimizer's state alike.
 */
struct gpu_host_params {
	float *embed, *lm_head, *ln1, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo;
	float *qnorm, *knorm, *ln2, *wgate, *wup, *wdown, *norm;
};

/*
 * The optimizer on the GPU (gpu_optim.cu). gpu_model_optim_alloc gives a
 * model created for training fp32 master weights and AdamW's two moments,
 * zeroed, in the gradients' layout; the caller then puts the master weights
 * (and the moments when resuming) with gpu_model_state_put. Each state is
 * copied to and from host arrays in lib/model's layout, as the gradients
 * are (GPU_STATE_GRAD: put them back after summing them on the host).
 */
enum gpu_state { GPU_STATE_GRAD, GPU_STATE_MASTER, GPU_STATE_ADAM_M, GPU_STATE_ADAM_V };
int gpu_model_optim_alloc(struct gpu_model *g, char *msg, size_t msglen);
int gpu_model_state_get(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *out, char *msg,
			size_t msglen);
int gpu_model_state_put(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *in, char *msg,
			size_t msglen);
/*
 * Page-lock the host memory [p, p + bytes) until gpu_model_free, which
 * unregisters it: the state copies above then go between the device and
 * those arrays by DMA at the link's bandwidth, where pageable memory goes
 * through the driver's staging buffers and a host memcpy (about 10 GB/s).
 * It costs about 0.1 s a GiB, once: pin what is copied every step, and keep
 * it allocated (the same array) until gpu_model_free. A child forked
 * meanwhile does not have the array's whole pages (MADV_DONTFORK, so that a
 * fork does not copy them): fork to exec. Returns 0 when pinned (now, or
 * already), 1 when it stays pageable, why in msg (GRPO_CUDA_PIN=0 in the
 * environment, an overlap with memory pinned before, or the driver
 * refusing): the copies work either way, with the same bytes.
 */
int gpu_model_host_pin(struct gpu_model *g, void *p, size_t bytes, char *msg, size_t msglen);
/* The L2 norm of every gradient (a tied head counted once), summed in double in a fixed order. */
int gpu_model_grad_norm(struct gpu_model *g, double *norm, char *msg, size_t msglen);

/* One AdamW step's scalars, as lib/train/optim.c computes them. */
struct gpu_adamw {
	double clip;        /* the gradient's scale (global-norm clipping) */
	double beta1, beta2, eps;
	double step_size;   /* lr_t / (1 - beta1^t) */
	double sqrt_bc2;    /* sqrt(1 - beta2^t) */
	double decay;       /* 1 - lr_t * weight_decay */
	int decay_vectors;  /* 1: the 1-D tensors (norms, biases) decay too; 0: only the matrices do */
};
/* AdamW on the master weights from the gradients, then the working weights
 * (bf16 or fp32) made from the master copy. */
int gpu_model_adamw(struct gpu_model *g, const struct gpu_adamw *p, char *msg, size_t msglen);
/* The working weights made from the master copy (after a state put). */
int gpu_model_weights_from_master(struct gpu_model *g, char *msg, size_t msglen);

/* Device bytes this model holds (weights, activations, workspaces). */
size_t gpu_model_bytes(const struct gpu_model *g);
/* The device's name and the bytes in use on it now (all processes). */
void gpu_model_device(const struct gpu_model *g, char *name, size_t namelen, size_t *used);

void gpu_model_free(struct gpu_model *g);

/* Which attention kernel the model runs: "tensor cores" (bf16, head size 64
 * or 128, unless GRPO_CUDA_ATTENTION=simple) or "CUDA cores". */
const char *gpu_model_attention(const struct gpu_model *g);

/*
 * The attention kernels alone, for tests: qkv (T, (NH + 2 NKV) HS), laid
 * out q | k | v per token, sequences by seq_lens; writes out (T, NH HS).
 * With dout (T, NH HS) not NULL, the backward too, writing dqkv laid out
 * as qkv; lse (T, NH), when not NULL, gets the forward's log-sum-exp of each
 * query's scaled scores. Host fp32 arrays, rounded to bf16 on the way in
 * when bf16 is set (the kernels' outputs come back as fp32). mma: the
 * tensor-core kernels (bf16, head sizes 64 and 128), else the CUDA-core ones.
 */
int gpu_attention_test(const float *qkv, const float *dout, int T, const uint32_t *seq_lens, int nseq, int NH,
		       int NKV, int HS, int bf16, int mma, float *out, float *lse, float *dqkv, char *msg,
		       size_t msglen);

#ifdef __cplusplus
}
#endif

#endif
