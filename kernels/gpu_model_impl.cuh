// gpu_model_impl.cuh: the GPU model's state, shared by gpu_model.cu (set-up
// and forward) and gpu_train.cu (backward and gradients); not an interface.
#ifndef GRPO_KERNELS_GPU_MODEL_IMPL_CUH
#define GRPO_KERNELS_GPU_MODEL_IMPL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_model.h"
#include "gpu_prof.cuh"
#include "layers.cuh"
#include "matmul.cuh"

// The LM head's fp32 logits for a chunk of rows stay under this.
#define LOGITS_BYTES ((size_t)1 << 30)
#define LOGITS_MAX_ROWS 4096

// Host arrays one model may hold page-locked (gpu_model_host_pin): the
// master weights, the two moments and the gradients, with room to spare.
#define GPU_PINS 8

struct gpu_model {
	struct gpu_model_shape s;
	int bf16, train, tied, maxT, chunk;
	int recompute;       // training keeps only the layers' inputs (GPU_TRAIN_RECOMPUTE)
	int held;            // recompute: the layer whose activations the shared buffers hold (-1: none)
	int max_pos;         // positions the RoPE table holds (>= maxT; more for decoding)
	int attention_mma;   // bf16 attention on tensor cores, forward and backward (else the CUDA-core kernels)
	size_t esize;        // bytes of one weight or activation element
	cudaStream_t stream;
	struct matmul_ctx mm;

	void *wmem;
	size_t wbytes;
	void *embed, *lm_head;          // (V, C) act; lm_head == embed when tied
	void *wqkv, *wo, *wgu, *wdown;  // (L, QKV, C), (L, C, QD), (L, 2I, C), (L, C, I) act
	float *ln1, *ln2, *norm, *qnorm, *knorm, *bq, *bk, *bv, *bo, *cos, *sin;

	// Activations. Training keeps each layer's (the stride is maxT rows, and
	// resid holds L + 1 layers' inputs); inference reuses one of each, and so
	// does training with recompute, for all but resid.
	void *amem;
	size_t abytes;
	float *resid, *resid2;          // (maxT, C) fp32: input of each layer; after its attention
	void *ln, *qkv_raw, *qkv, *att, *gu, *act;   // q/k/v before and after bias, norm and RoPE
	float *att_lse;                 // (maxT, NH) training only
	float *logits;                  // (chunk, V)
	float *lp, *ent, *lse, *temps;  // (maxT) by predicting row
	int32_t *ids, *pos, *targets;   // (maxT)
	struct att_tile *tiles;         // (maxT) at most one tile per token
	int T, ntiles, forward_done;    // the last forward's
	int head_done;                  // the last forward took the LM head's backward too (fused)

	// host mirrors of the per-token arrays
	int32_t *h_pos, *h_start, *h_targets, *h_ids;   // h_ids: the last forward's, for the backward
	float *h_temps, *h_lp, *h_ent;
	struct att_tile *h_tiles;

	// training: gradient scratch (gpu_train.cu) and the fp32 weight
	// gradients, in the weights' fused layout
	void *gmem;
	size_t gbytes;
	float *dres, *dln, *dact, *dsum, *nq, *nk, *partial, *dlp, *dent;
	float *colsum_tmp;              // launch_colsum's levels of partial sums
	void *dres_act, *dgu, *datt, *dqkv, *dz;
	int32_t *order, *seg, *seg_id;  // the embedding's rows by token id
	float *g_embed, *g_lm_head, *g_wqkv, *g_wo, *g_wgu, *g_wdown, *g_ln1, *g_ln2, *g_norm;
	float *g_qnorm, *g_knorm, *g_bqkv, *g_bo;
	size_t grad_bytes;              // the gradients, first in gmem
	float *h_dlp, *h_dent;
	int32_t *h_order, *h_seg, *h_seg_id;
	// the fused forward's loss inputs by predicting row (loss.cuh), and their host mirrors
	float *l_adv, *l_old, *l_behav, *l_ref;
	double *l_w;
	uint8_t *l_flags;
	float *h_ladv;                  // (4 maxT): adv, old, behav, ref
	double *h_lw;
	uint8_t *h_lflags;

	// the optimizer (gpu_optim.cu): master weights and moments in the
	// gradients' layout, and the norm's per-block sums
	void *omem;
	size_t obytes;
	float *master, *adam_m, *adam_v;
	double *norm_partial;

	// the caller's host arrays page-locked for this model's life
	// (gpu_model_host_pin), unregistered by gpu_model_free
	struct { void *p; size_t bytes; } pins[GPU_PINS];
	int npins;

	struct gpu_prof *prof;          // GRPO_CUDA_PROFILE's phase timings, or NULL
	double att_pairs;               // the last pack's (query, key) pairs attended, for the attention's FLOPs
};

// Buffers laid out in one allocation, 256-byte aligned: a first pass with
// base NULL counts the bytes, a second carves them.
struct carve { char *base; size_t off; };

static inline void *carve(struct carve *c, size_t bytes)
{
	size_t at = (c->off + 255) & ~(size_t)255;
	c->off = at + bytes;
	return c->base ? c->base + at : NULL;
}

// Layer l's slice of a saved activation (the one buffer when not training,
// or when recomputing).
static inline size_t layer_off(const struct gpu_model *g, int l, size_t per_token)
{
	return g->train && !g->recompute ? (size_t)l * g->maxT * per_token : 0;
}

// Layer l's input in resid: training keeps all L + 1 (the backward, and the
// recompute, start from them); inference works in place.
static inline size_t resid_off(const struct gpu_model *g, int l)
{
	return g->train ? (size_t)l * g->maxT * g->s.C : 0;
}

int gpu_fail(char *msg, size_t msglen, const char *fmt, ...);

// Host fp32 to a device buffer of the activation type (bf16: rounded to
// nearest), and back: for uploads and the kernels' test entries.
cudaError_t act_put(void *dst, const float *src, size_t n, int bf16);
cudaError_t act_get(float *dst, const void *src, size_t n, int bf16);

#define CUDA_TRY(call)                                                                              \
	do {                                                                                        \
		cudaError_t err_ = (call);                                                          \
		if (err_ != cudaSuccess)                                                            \
			return gpu_fail(msg, msglen, "%s: %s", #call, cudaGetErrorString(err_));     \
	} while (0)

// A kernel launch inside a pass; l is the layer (-1: outside the layers).
#define LAUNCH(call)                                                                                \
	do {                                                                                        \
		cudaError_t err_ = (call);                                                          \
		if (err_ != cudaSuccess && l >= 0)                                                  \
			return gpu_fail(msg, msglen, "layer %d: %s: %s", l, #call, cudaGetErrorString(err_)); \
		if (err_ != cudaSuccess)                                                            \
			return gpu_fail(msg, msglen, "%s: %s", #call, cudaGetErrorString(err_));     \
	} while (0)

// Where a pass's keys and values go (gpu_decode.cu's prefill and decode
// steps): layer l's paged caches are kc and vc plus l * layer_elems
// elements, token t's slot slots[t] (paged.cuh); with paged, row b attends
// over positions [0, ctx[b]) of its sequence's blocks, table row b, with
// ctx[b] <= max_ctx and work paged_attention_workspace_bytes() of scratch.
struct kv_pass {
	void *kc, *vc;
	size_t layer_elems;
	const int32_t *slots;
	int paged;
	const int32_t *table, *ctx;
	int table_stride, max_ctx;
	float *work;
};

// gpu_model.cu: embedding, layers and final norm over g->ids at g->pos,
// into g->ln; kv NULL for a pass without a cache.
int gpu_forward_layers(struct gpu_model *g, int T, int ntiles, const struct kv_pass *kv, char *msg, size_t msglen);
// Layer l of that pass, from resid at l to resid at l + 1; for_backward
// (the recompute) stops at gate|up, the last activation the backward reads.
int gpu_forward_layer(struct gpu_model *g, int l, int T, int ntiles, const struct kv_pass *kv, int for_backward,
		      char *msg, size_t msglen);

// gpu_model.cu: the LM head's fp32 logits of rows [r0, r0 + n) into g->logits.
int gpu_lmhead_logits(struct gpu_model *g, int r0, int n, char *msg, size_t msglen);
// gpu_train.cu: the LM head's backward of those rows from the logits and the
// loss's gradients in g->dlp and g->dent: their rows of g->dln, and the head's
// weight gradient added to.
int gpu_lmhead_backward_rows(struct gpu_model *g, int r0, int n, char *msg, size_t msglen);

// gpu_train.cu: the training buffers' bytes, and their carving (with the
// host arrays the backward needs; 0, or -1 when out of host memory)
size_t gpu_train_bytes(struct gpu_model *g);
int gpu_train_layout(struct gpu_model *g, char *base);

// gpu_optim.cu: the host arrays gpu_model_host_pin pinned, unregistered
void gpu_unpin_all(struct gpu_model *g);

#endif
