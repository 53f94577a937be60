/*
 * model.h: the fp32 reference transformer (Llama, Qwen2, Qwen3), forward and
 * backward over packed sequences.
 *
 * This is the specification the CUDA path is tested against, so it is kept
 * plain: flat layer functions in model.c, no tensor class, no autograd, every
 * buffer sized once from the config and a maximum token count, matrix
 * products through a CPU BLAS (gemm.h).
 *
 * Weights and gradients share one layout (struct model_params): one float
 * allocation, a pointer per Hugging Face tensor (per-layer tensors stacked on
 * a leading L axis), NULL for tensors the family lacks. A tied model's
 * lm_head points at embed, in the weights and in the gradients, so the
 * embedding gets both of its gradient contributions. model_tensors() lists
 * every tensor with its Hugging Face name and shape; loading, saving, random
 * initialisation and the tests all go through that one table.
 *
 * Loading copies, on purpose. The checkpoint is mapped read-only
 * (safetensors.h) and each tensor is converted once into the one allocation;
 * no weight is used in place from a MAP_PRIVATE mapping, even an aligned
 * little-endian F32 one, because that cannot keep the invariants above:
 *   - a layer tensor here is one slice of an array stacked on L, while a
 *     checkpoint stores each layer's tensor on its own, in any order and
 *     often in another shard, so no file's layout is this layout;
 *   - a trainer writes the weights in place and keeps gradients and
 *     optimizer state in the same layout, each walked as one flat array
 *     (mem, n); under MAP_PRIVATE every page written becomes a private copy
 *     anyway, so mapping would save nothing once training starts, and weights
 *     spread over mappings could not be walked, saved or freed as one;
 *   - BF16 and F16, how checkpoints usually come, need converting regardless.
 * So a model costs its fp32 weights, once. While loading, the mapped file
 * also sits in the page cache, clean pages the kernel may drop, and it is
 * unmapped as soon as loading ends (model_load).
 *
 * Packing and alignment (DESIGN.md): a pack is T token ids holding several
 * sequences back to back, given by seq_lens. Positions restart at 0 in every
 * sequence and attention is block-causal: a token sees only the earlier
 * tokens of its own sequence. Every per-token array is aligned with the ids:
 *
 *     logprob[i] = log p(ids[i] | ids[start..i-1]) at temperature temps[i],
 *     entropy[i] = entropy of that predicting distribution,
 *
 * i.e. the value at i describes token ids[i], predicted from position i-1.
 * At the first token of each sequence nothing predicts it and both are 0;
 * there the backward ignores dlogprob and dentropy, and temps[i] is unused.
 * Temperature divides the logits (logits / temps[i]) before the softmax.
 *
 * The LM head runs in chunks of MODEL_LM_CHUNK tokens, so the (T, V) logits
 * never exist at once; the backward recomputes each chunk's logits.
 *
 * Attention keeps, per token and head, only the log-sum-exp of the scores;
 * the backward recomputes the probabilities from q, k and it (as flash
 * attention does), so memory grows as T, not as T squared.
 *
 * Threads: matrix products go through gemm.h, which cuts them into tiles of
 * a fixed size and shares the tiles among model_set_threads() threads. The
 * results are deterministic and the same for every thread count; a test
 * checks it.
 */
#ifndef GRPO_MODEL_H
#define GRPO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"
#include "model/model_config.h"
#include "model/safetensors.h"

#define MODEL_LM_CHUNK 64

struct model_params {
	float *embed;    /* (V, C)  model.embed_tokens.weight */
	float *lm_head;  /* (V, C)  lm_head.weight; == embed when tied */
	float *ln1;      /* (L, C)  input_layernorm */
	float *wq;       /* (L, NH*HS, C) */
	float *bq;       /* (L, NH*HS) or NULL */
	float *wk;       /* (L, NKV*HS, C) */
	float *bk;       /* (L, NKV*HS) or NULL */
	float *wv;       /* (L, NKV*HS, C) */
	float *bv;       /* (L, NKV*HS) or NULL */
	float *wo;       /* (L, C, NH*HS) */
	float *bo;       /* (L, C) or NULL */
	float *qnorm;    /* (L, HS) Qwen3 q_norm, or NULL */
	float *knorm;    /* (L, HS) Qwen3 k_norm, or NULL */
	float *ln2;      /* (L, C)  post_attention_layernorm */
	float *wgate;    /* (L, I, C) */
	float *wup;      /* (L, I, C) */
	float *wdown;    /* (L, C, I) */
	float *norm;     /* (C)  model.norm */
	float *mem;      /* the one allocation all of the above point into */
	size_t n;        /* floats in mem */
};

/* One Hugging Face tensor: a slice of model_params (per layer for layer tensors). */
struct model_tensor {
	char name[96];
	int ndim;
	int64_t shape[2];
	float *data;
};

/* Activations kept by the forward for the backward, for up to maxT tokens. */
struct model_acts {
	int maxT;
	float *resid;    /* (L+1, T, C) residual stream into each layer; [L] into the final norm */
	float *ln1;      /* (L, T, C) */
	float *ln1_rstd; /* (L, T) */
	float *qraw;     /* (L, T, NH*HS) q before q-norm (Qwen3 only, else NULL) */
	float *kraw;     /* (L, T, NKV*HS) k before k-norm (Qwen3 only, else NULL) */
	float *qn_rstd;  /* (L, T, NH) (Qwen3 only) */
	float *kn_rstd;  /* (L, T, NKV) (Qwen3 only) */
	float *q;        /* (L, T, NH*HS) after q-norm and RoPE */
	float *k;        /* (L, T, NKV*HS) after k-norm and RoPE */
	float *v;        /* (L, T, NKV*HS) */
	float *att_lse;  /* (L, T, NH) log-sum-exp of each query's scaled scores */
	float *att;      /* (L, T, NH*HS) attention output, input of o_proj */
	float *resid2;   /* (L, T, C) residual after attention */
	float *ln2;      /* (L, T, C) */
	float *ln2_rstd; /* (L, T) */
	float *gate;     /* (L, T, I) */
	float *up;       /* (L, T, I) */
	float *mlp;      /* (L, T, I) silu(gate) * up, input of down_proj */
	float *lnf;      /* (T, C) final norm output, input of the LM head */
	float *lnf_rstd; /* (T) */
	float *lm_lse;   /* (T) log-sum-exp of the tempered logits predicting token i */
	float *ent;      /* (T) entropy of the distribution predicting token i */
	float *temp;     /* (T) temperature used for token i */
	int *ids;        /* (T) */
	int *pos;        /* (T) position within its own sequence */
	int *start;      /* (T) index of the first token of its own sequence */
	float *cos;      /* (maxT, HS/2) RoPE cos by position */
	float *sin;      /* (maxT, HS/2) */
	/* scratch, reused by forward and backward */
	float *logits;   /* (MODEL_LM_CHUNK, V) */
	float *scores;   /* (maxT) one query's attention scores */
	float *tmp;      /* (T, C) */
	float *dres;     /* (T, C) gradient of the residual stream */
	float *dln;      /* (T, C) */
	float *dq;       /* (T, NH*HS) */
	float *dk;       /* (T, NKV*HS) */
	float *dv;       /* (T, NKV*HS) */
	float *datt;     /* (T, NH*HS) */
	float *dqk;      /* (T, NH*HS) scratch for the q/k norm backward */
	float *dgate;    /* (T, I) */
	float *dup;      /* (T, I) */
	float *dmlp;     /* (T, I) */
	void *mem;
	size_t bytes;
	int T;           /* tokens of the last forward */
	int done;        /* a forward has filled these */
};

struct model {
	struct model_config cfg;
	struct model_params w;   /* weights */
	struct model_params g;   /* gradients (mem NULL until model_grads_alloc) */
	struct model_acts a;     /* mem NULL until model_acts_alloc */
};

/* Allocate zeroed weights for cfg (checked). */
int model_create(struct model *m, const struct model_config *cfg, struct err *e);
/* model_create from DIR/config.json, then read every weight from the checkpoint in DIR. */
int model_load(struct model *m, const char *dir, struct err *e);
/* Read every weight of m from an open checkpoint (shapes checked against m->cfg), converting
 * into m's own allocation (see "Loading copies" above). */
int model_load_weights(struct model *m, const struct st_model *st, const char *name, struct err *e);
void model_free(struct model *m);

/* Allocate gradients (zeroed) / zero them. */
int model_grads_alloc(struct model *m, struct err *e);
void model_grads_zero(struct model *m);
/* Allocate activations for packs of up to maxT tokens; bytes in m->a.bytes. */
int model_acts_alloc(struct model *m, int maxT, struct err *e);

/*
 * Every tensor with its HF name and shape, pointing into p (weights or
 * gradients). Returns the count; out may be NULL to count. A tied model has
 * no lm_head.weight entry.
 */
int model_tensors(const struct model_config *c, const struct model_params *p, struct model_tensor *out);

/*
 * Deterministic random weights for a seed, as transformers initialises a new
 * model: matrices and the embedding N(0, init_std), biases 0, norm weights 1.
 * Each tensor draws from its own stream keyed by seed and name. 0, or -1
 * with the message in e (no weight is left half-set for a caller that goes
 * on: the model is all zeros then, which must not be written).
 */
int model_init_random(struct model *m, uint64_t seed, struct err *e);

/*
 * Write DIR/config.json, DIR/generation_config.json and the weights
 * (model.safetensors, or shards with an index above shard_bytes, 0 = never)
 * into an existing directory. dtype: ST_F32 or ST_BF16.
 */
int model_write_dir(const struct model *m, const char *dir, enum st_dtype dtype, size_t shard_bytes,
                    struct err *e);

/*
 * Forward over a pack: ids (T), seq_lens (nseq, summing to T), temps (T) or
 * NULL for 1. Writes logprob (T) and, if not NULL, entropy (T) as described
 * above. Needs model_acts_alloc(m, >= T).
 */
int model_forward(struct model *m, const int *ids, int T, const int *seq_lens, int nseq,
                  const float *temps, float *logprob, float *entropy, struct err *e);

/*
 * The same over a micro-batch (data/traj.h, as data/mbbuild.h builds them):
 * its input_ids, seq_lens (a trailing padding span is a sequence of its
 * own, whose values mean nothing) and temperatures, n_tokens of each.
 * Needs model_acts_alloc(m, >= n_tokens); the backward follows as usual.
 */
int model_forward_mb(struct model *m, const struct microbatch *mb, float *logprob, float *entropy,
                     struct err *e);

/*
 * Backward of the last forward: given dL/dlogprob (T) and dL/dentropy (T, or
 * NULL for none), ADDS dL/dweight into m->g (+=, so micro-batches
 * accumulate). Needs model_grads_alloc().
 */
int model_backward(struct model *m, const float *dlogprob, const float *dentropy, struct err *e);

/*
 * Inference with a key/value cache, for generation. A cache has B slots
 * (sequences), each holding up to maxlen tokens' keys and values for every
 * layer; model_step() appends tokens to slots and returns the logits that
 * predict the token after each one asked for. It runs the same layer
 * functions as model_forward(), so a token's logits are those the packed
 * forward computes at its position (to fp32 rounding).
 */
struct model_kv {
	int B, maxlen, maxT;
	float *k;        /* (L, B, maxlen, NKV*HS) keys after k-norm and RoPE */
	float *v;        /* (L, B, maxlen, NKV*HS) */
	int *len;        /* (B) tokens cached in each slot */
	float *cos;      /* (maxlen, HS/2) */
	float *sin;      /* (maxlen, HS/2) */
	/* scratch for up to maxT tokens a step */
	float *x;        /* (maxT, C) residual stream */
	float *ln;       /* (maxT, C) */
	float *q;        /* (maxT, NH*HS) */
	float *kn;       /* (maxT, NKV*HS) new keys */
	float *vn;       /* (maxT, NKV*HS) new values */
	float *att;      /* (maxT, NH*HS) */
	float *tmp;      /* (maxT, C) */
	float *gate;     /* (maxT, I) */
	float *up;       /* (maxT, I) */
	float *rstd;     /* (maxT * NH) */
	float *scores;   /* (maxlen) */
	int *pos;        /* (maxT) */
	void *mem;
	size_t bytes;
};

int model_kv_alloc(const struct model *m, struct model_kv *kv, int B, int maxlen, int maxT, struct err *e);
void model_kv_free(struct model_kv *kv);

/*
 * Append T tokens (T <= maxT): ids[t] goes into slot slots[t] at the next
 * position of that slot; tokens of one slot must come in order. For each t
 * with want[t] set (want NULL: all), one row of logits (V), raw (not divided
 * by any temperature), predicting the token after ids[t], is written to
 * logits, in order of t.
 */
int model_step(const struct model *m, struct model_kv *kv, const int *ids, const int *slots, int T,
               const unsigned char *want, float *logits, struct err *e);

/* The RoPE table, cos and sin (n, HS/2), of every position below n, as the
 * forward computes it (transformers' fp32 angles, llama3 scaling). */
void model_rope_table(const struct model_config *c, float *cos, float *sin, int n);

/* Threads for the matrix products (n < 1: one per core, the default). */
void model_set_threads(int n);
int model_threads(void);

#endif
