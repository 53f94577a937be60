// gpu_model.cu: see gpu_model.h. The host side: device allocations
// (weights, activations, and for training gpu_train.cu's) carved into
// buffers, the weights' upload with q/k/v and gate/up fused, and the
// forward, which reads as lib/model/model.c's forward() does.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_model_impl.cuh"
#include "lmhead.h"
#include "loss.cuh"
#include "paged.cuh"

int gpu_fail(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return -1;
}

int gpu_count(char *msg, size_t msglen)
{
	int n = 0;
	cudaError_t err = cudaGetDeviceCount(&n);
	if (err == cudaErrorInsufficientDriver && access("/proc/driver/nvidia/version", F_OK) != 0) {
		snprintf(msg, msglen, "no NVIDIA driver loaded");   // what the runtime's own message means here
		return 0;
	}
	if (err != cudaSuccess) {
		snprintf(msg, msglen, "%s", cudaGetErrorString(err));
		return 0;
	}
	if (n == 0)
		snprintf(msg, msglen, "no CUDA device found");
	return n;
}

// ---- allocation: lay buffers out in one block, 256-byte aligned ----

static void layout_weights(struct gpu_model *g, struct carve *c, int tied)
{
	const struct gpu_model_shape *s = &g->s;
	size_t C = s->C, L = s->L, I = s->I, QD = (size_t)s->NH * s->HS, KD = (size_t)s->NKV * s->HS;
	size_t QKV = QD + 2 * KD, es = g->esize;
	g->embed = carve(c, (size_t)s->V * C * es);
	g->lm_head = tied ? g->embed : carve(c, (size_t)s->V * C * es);
	g->wqkv = carve(c, L * QKV * C * es);
	g->wo = carve(c, L * C * QD * es);
	g->wgu = carve(c, L * 2 * I * C * es);
	g->wdown = carve(c, L * C * I * es);
	g->ln1 = (float *)carve(c, L * C * 4);
	g->ln2 = (float *)carve(c, L * C * 4);
	g->norm = (float *)carve(c, C * 4);
	g->qnorm = (float *)carve(c, L * s->HS * 4);
	g->knorm = (float *)carve(c, L * s->HS * 4);
	g->bq = (float *)carve(c, L * QD * 4);
	g->bk = (float *)carve(c, L * KD * 4);
	g->bv = (float *)carve(c, L * KD * 4);
	g->bo = (float *)carve(c, L * C * 4);
	g->cos = (float *)carve(c, (size_t)g->max_pos * (s->HS / 2) * 4);
	g->sin = (float *)carve(c, (size_t)g->max_pos * (s->HS / 2) * 4);
}

static void layout_acts(struct gpu_model *g, struct carve *c)
{
	const struct gpu_model_shape *s = &g->s;
	size_t T = g->maxT, C = s->C, I = s->I, QD = (size_t)s->NH * s->HS, KD = (size_t)s->NKV * s->HS;
	// L: the layers whose activations are kept; the residual stream keeps
	// every layer's input when training, recomputing or not
	size_t es = g->esize, QKV = QD + 2 * KD, L = g->train && !g->recompute ? s->L : 1;
	g->resid = (float *)carve(c, (g->train ? s->L + 1 : 1) * T * C * 4);
	g->resid2 = g->train ? (float *)carve(c, L * T * C * 4) : g->resid;
	g->ln = carve(c, T * C * es);
	g->qkv = carve(c, L * T * QKV * es);
	g->qkv_raw = g->train ? carve(c, L * T * QKV * es) : g->qkv;
	g->att = carve(c, L * T * QD * es);
	g->att_lse = g->train ? (float *)carve(c, L * T * s->NH * 4) : NULL;
	g->gu = carve(c, L * T * 2 * I * es);
	g->act = carve(c, T * I * es);
	g->logits = (float *)carve(c, (size_t)g->chunk * s->V * 4);
	g->lp = (float *)carve(c, T * 4);
	g->ent = (float *)carve(c, T * 4);
	g->lse = (float *)carve(c, T * 4);
	g->temps = (float *)carve(c, T * 4);
	g->ids = (int32_t *)carve(c, T * 4);
	g->pos = (int32_t *)carve(c, T * 4);
	g->targets = (int32_t *)carve(c, T * 4);
	g->tiles = (struct att_tile *)carve(c, T * sizeof(struct att_tile));
}

// ---- upload: fp32 host arrays into the device's element type ----

#define STAGE_ELEMS ((size_t)1 << 20)

// n values from host fp32 into a device buffer of the element type, through
// a staging buffer of STAGE_ELEMS for bf16
cudaError_t act_put(void *dst, const float *src, size_t n, int bf16)
{
	if (!bf16)
		return cudaMemcpy(dst, src, n * 4, cudaMemcpyHostToDevice);
	static __nv_bfloat16 stage[STAGE_ELEMS];
	for (size_t i = 0; i < n; i += STAGE_ELEMS) {
		size_t k = n - i < STAGE_ELEMS ? n - i : STAGE_ELEMS;
		for (size_t j = 0; j < k; j++)
			stage[j] = __float2bfloat16_rn(src[i + j]);
		cudaError_t err = cudaMemcpy((char *)dst + i * 2, stage, k * 2, cudaMemcpyHostToDevice);
		if (err != cudaSuccess)
			return err;
	}
	return cudaSuccess;
}

static int upload(struct gpu_model *g, void *dst, const float *src, size_t n, char *msg, size_t msglen)
{
	CUDA_TRY(act_put(dst, src, n, g->bf16));
	return 0;
}

static int upload_f32(float *dst, const float *src, size_t n, char *msg, size_t msglen)
{
	if (src)
		CUDA_TRY(cudaMemcpy(dst, src, n * 4, cudaMemcpyHostToDevice));
	else
		CUDA_TRY(cudaMemset(dst, 0, n * 4));
	return 0;
}

static int upload_weights(struct gpu_model *g, const struct gpu_model_weights *w, char *msg, size_t msglen)
{
	const struct gpu_model_shape *s = &g->s;
	size_t C = s->C, I = s->I, QD = (size_t)s->NH * s->HS, KD = (size_t)s->NKV * s->HS, QKV = QD + 2 * KD;
	size_t es = g->esize;
	char *qkv = (char *)g->wqkv, *gu = (char *)g->wgu;
	if (upload(g, g->embed, w->embed, (size_t)s->V * C, msg, msglen) < 0)
		return -1;
	if (g->lm_head != g->embed && upload(g, g->lm_head, w->lm_head, (size_t)s->V * C, msg, msglen) < 0)
		return -1;
	for (int l = 0; l < s->L; l++) {
		char *q = qkv + l * QKV * C * es, *x = gu + l * 2 * I * C * es;
		if (upload(g, q, w->wq + l * QD * C, QD * C, msg, msglen) < 0 ||
		    upload(g, q + QD * C * es, w->wk + l * KD * C, KD * C, msg, msglen) < 0 ||
		    upload(g, q + (QD + KD) * C * es, w->wv + l * KD * C, KD * C, msg, msglen) < 0 ||
		    upload(g, x, w->wgate + l * I * C, I * C, msg, msglen) < 0 ||
		    upload(g, x + I * C * es, w->wup + l * I * C, I * C, msg, msglen) < 0)
			return -1;
	}
	size_t L = s->L;
	if (upload(g, g->wo, w->wo, L * C * QD, msg, msglen) < 0 ||
	    upload(g, g->wdown, w->wdown, L * C * I, msg, msglen) < 0 ||
	    upload_f32(g->ln1, w->ln1, L * C, msg, msglen) < 0 || upload_f32(g->ln2, w->ln2, L * C, msg, msglen) < 0 ||
	    upload_f32(g->norm, w->norm, C, msg, msglen) < 0 ||
	    upload_f32(g->qnorm, w->qnorm, L * s->HS, msg, msglen) < 0 ||
	    upload_f32(g->knorm, w->knorm, L * s->HS, msg, msglen) < 0 ||
	    upload_f32(g->bq, w->bq, L * QD, msg, msglen) < 0 || upload_f32(g->bk, w->bk, L * KD, msg, msglen) < 0 ||
	    upload_f32(g->bv, w->bv, L * KD, msg, msglen) < 0 || upload_f32(g->bo, w->bo, L * C, msg, msglen) < 0 ||
	    upload_f32(g->cos, w->cos, (size_t)g->max_pos * (s->HS / 2), msg, msglen) < 0 ||
	    upload_f32(g->sin, w->sin, (size_t)g->max_pos * (s->HS / 2), msg, msglen) < 0)
		return -1;
	return 0;
}

int gpu_model_create(struct gpu_model **out, const struct gpu_model_shape *shape,
		     const struct gpu_model_weights *w, int maxT, enum gpu_dtype dtype, enum gpu_mode mode,
		     char *msg, size_t msglen)
{
	*out = NULL;
	const struct gpu_model_shape *s = shape;
	if (s->V <= 0 || s->C <= 0 || s->L <= 0 || s->NH <= 0 || s->NKV <= 0 || s->I <= 0 || s->NH % s->NKV)
		return gpu_fail(msg, msglen, "unsupported shape (V %d, C %d, L %d, heads %d/%d, I %d)", s->V, s->C, s->L,
			    s->NH, s->NKV, s->I);
	if (s->I % 8)   // the SwiGLU kernels take eight elements at a time
		return gpu_fail(msg, msglen, "intermediate size %d: the CUDA path takes a multiple of 8", s->I);
	if (s->C % 4 || s->C > 8192)   // the norms take four columns at a time, the backward's up to 8 a thread
		return gpu_fail(msg, msglen, "hidden size %d: the CUDA path takes a multiple of 4 up to 8192", s->C);
	if (!attention_head_size_ok(s->HS))
		return gpu_fail(msg, msglen, "head size %d: the CUDA attention takes %s", s->HS, ATT_HEAD_SIZES);
	if (maxT <= 0 || w->max_pos < maxT)
		return gpu_fail(msg, msglen, "packs of %d tokens need a RoPE table of as many positions (have %d)", maxT,
			    w->max_pos);
	if (mode != GPU_INFER && mode != GPU_TRAIN && mode != GPU_TRAIN_RECOMPUTE)
		return gpu_fail(msg, msglen, "unknown mode %d", (int)mode);
	if ((w->bq == NULL) != (w->bk == NULL) || (w->bq == NULL) != (w->bv == NULL) ||
	    (w->qnorm == NULL) != (w->knorm == NULL))
		return gpu_fail(msg, msglen, "q, k and v must all have biases or none, and q and k norms both or neither");

	struct gpu_model *g = (struct gpu_model *)calloc(1, sizeof *g);
	if (!g)
		return gpu_fail(msg, msglen, "out of host memory");
	g->s = *s;
	g->bf16 = dtype == GPU_BF16;
	g->train = mode != GPU_INFER;
	g->recompute = mode == GPU_TRAIN_RECOMPUTE;
	g->held = -1;
	g->prof = prof_new();
	g->tied = w->lm_head == w->embed;
	// GRPO_CUDA_ATTENTION=simple keeps the CUDA-core kernels, forward and
	// backward, to compare the two
	const char *att = getenv("GRPO_CUDA_ATTENTION");
	g->attention_mma = g->bf16 && attention_mma_head_size_ok(s->HS) &&
			   !(att && strcmp(att, "simple") == 0);
	g->esize = g->bf16 ? 2 : 4;
	g->maxT = maxT;
	g->max_pos = w->max_pos;
	size_t rows = LOGITS_BYTES / ((size_t)s->V * 4);
	g->chunk = (int)(rows < 1 ? 1 : rows > LOGITS_MAX_ROWS ? LOGITS_MAX_ROWS : rows);
	if (g->chunk > maxT)
		g->chunk = maxT;
	g->h_pos = (int32_t *)malloc((size_t)maxT * 4 * sizeof(int32_t));
	g->h_temps = (float *)malloc((size_t)maxT * 3 * sizeof(float));
	g->h_tiles = (struct att_tile *)malloc((size_t)maxT * sizeof(struct att_tile));
	if (!g->h_pos || !g->h_temps || !g->h_tiles) {
		gpu_model_free(g);
		return gpu_fail(msg, msglen, "out of host memory");
	}
	g->h_start = g->h_pos + maxT;
	g->h_targets = g->h_start + maxT;
	g->h_ids = g->h_targets + maxT;
	g->h_lp = g->h_temps + maxT;
	g->h_ent = g->h_lp + maxT;

	int rc = -1;
	cudaError_t err;
	struct carve cw = { NULL, 0 }, ca = { NULL, 0 };
	layout_weights(g, &cw, w->lm_head == w->embed);
	layout_acts(g, &ca);
	g->wbytes = cw.off;
	g->abytes = ca.off;
	g->gbytes = g->train ? gpu_train_bytes(g) : 0;
	if ((err = cudaStreamCreate(&g->stream)) != cudaSuccess) {
		gpu_fail(msg, msglen, "cudaStreamCreate: %s", cudaGetErrorString(err));
		g->stream = NULL;
		goto out;
	}
	if ((err = cudaMalloc(&g->wmem, g->wbytes)) != cudaSuccess) {
		gpu_fail(msg, msglen, "cudaMalloc of %.1f MiB of weights: %s", g->wbytes / 1048576.0, cudaGetErrorString(err));
		g->wmem = NULL;
		goto out;
	}
	if ((err = cudaMalloc(&g->amem, g->abytes)) != cudaSuccess) {
		gpu_fail(msg, msglen, "cudaMalloc of %.1f MiB of activations for %d tokens: %s", g->abytes / 1048576.0,
		     maxT, cudaGetErrorString(err));
		g->amem = NULL;
		goto out;
	}
	if (g->train && (err = cudaMalloc(&g->gmem, g->gbytes)) != cudaSuccess) {
		gpu_fail(msg, msglen, "cudaMalloc of %.1f MiB of gradients and their scratch: %s", g->gbytes / 1048576.0,
		     cudaGetErrorString(err));
		g->gmem = NULL;
		goto out;
	}
	if (g->train) {
		if (gpu_train_layout(g, (char *)g->gmem) < 0) {
			gpu_fail(msg, msglen, "out of host memory");
			goto out;
		}
		if ((err = cudaMemset(g->gmem, 0, g->gbytes)) != cudaSuccess) {
			gpu_fail(msg, msglen, "cudaMemset: %s", cudaGetErrorString(err));
			goto out;
		}
	}
	cw.base = (char *)g->wmem;
	cw.off = 0;
	ca.base = (char *)g->amem;
	ca.off = 0;
	layout_weights(g, &cw, w->lm_head == w->embed);
	layout_acts(g, &ca);
	if (matmul_init(&g->mm, g->stream, msg, msglen) < 0) {
		g->mm.lt = NULL;
		goto out;
	}
	if (upload_weights(g, w, msg, msglen) < 0)
		goto out;
	if (!w->bq)
		g->bq = g->bk = g->bv = NULL;
	if (!w->bo)
		g->bo = NULL;
	if (!w->qnorm)
		g->qnorm = g->knorm = NULL;
	rc = 0;
out:
	if (rc < 0) {
		gpu_model_free(g);
		return -1;
	}
	*out = g;
	return 0;
}

void gpu_model_free(struct gpu_model *g)
{
	if (!g)
		return;
	gpu_unpin_all(g);
	if (g->prof && g->stream) {   // what the last pass marked and nobody collected (the decoder's)
		cudaStreamSynchronize(g->stream);
		prof_collect(g);
	}
	prof_free(g->prof);
	if (g->mm.lt)
		matmul_free(&g->mm);
	cudaFree(g->amem);
	cudaFree(g->wmem);
	cudaFree(g->gmem);
	cudaFree(g->omem);
	free(g->h_dlp);
	free(g->h_order);
	free(g->h_ladv);
	free(g->h_lw);
	free(g->h_lflags);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	free(g->h_pos);
	free(g->h_temps);
	free(g->h_tiles);
	free(g);
}

size_t gpu_model_bytes(const struct gpu_model *g)
{
	return g->wbytes + g->abytes + g->gbytes + g->obytes + g->mm.workspace_bytes;
}

void gpu_model_device(const struct gpu_model *g, char *name, size_t namelen, size_t *used)
{
	struct cudaDeviceProp prop;
	size_t freeb = 0, total = 0;
	int dev = 0;
	(void)g;   // the model lives on the current device
	cudaGetDevice(&dev);
	if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
		snprintf(name, namelen, "%s", prop.name);
	else
		snprintf(name, namelen, "CUDA device %d", dev);
	*used = cudaMemGetInfo(&freeb, &total) == cudaSuccess ? total - freeb : 0;
}

const char *gpu_model_attention(const struct gpu_model *g)
{
	return g->attention_mma ? "tensor cores" : "CUDA cores";
}

// ---- the forward ----

// The attention's tiles of one sequence of len tokens from token start:
// ATT_TILE_Q queries each. Returns how many it wrote to out.
static int sequence_tiles(int start, int len, struct att_tile *out)
{
	int n = 0;
	for (int q0 = 0; q0 < len; q0 += ATT_TILE_Q) {
		struct att_tile tile = { start, len, q0, 0 };
		out[n++] = tile;
	}
	return n;
}

// Positions, tiles, and for every row t the token it predicts (t+1 when in
// the same sequence) with that token's temperature.
static int lay_out(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
		   const float *temps, int *ntiles, char *msg, size_t msglen)
{
	int t = 0, nt = 0;
	g->att_pairs = 0;
	for (int q = 0; q < nseq; q++) {
		long long len = seq_lens[q];
		if (len <= 0 || len > T - t)
			return gpu_fail(msg, msglen, "seq_lens[%d] = %lld does not fit a pack of %d tokens", q, len, T);
		g->att_pairs += (double)len * (len + 1) / 2;
		nt += sequence_tiles(t, (int)len, g->h_tiles + nt);
		for (int j = 0; j < len; j++, t++) {
			g->h_pos[t] = j;
			g->h_start[t] = t - j;
		}
	}
	if (t != T)
		return gpu_fail(msg, msglen, "seq_lens sum to %d, but the pack has %d tokens", t, T);
	for (t = 0; t < T; t++) {
		if (ids[t] < 0 || ids[t] >= g->s.V)
			return gpu_fail(msg, msglen, "token %d: id %d outside the vocabulary of %d", t, ids[t], g->s.V);
		int predicts = t + 1 < T && g->h_start[t + 1] == g->h_start[t];
		float tau = predicts && temps ? temps[t + 1] : 1.0f;
		if (!(tau > 0) || !isfinite(tau))
			return gpu_fail(msg, msglen, "token %d: temperature %g must be positive", t + 1, tau);
		g->h_targets[t] = predicts ? ids[t + 1] : 0;
		g->h_ids[t] = ids[t];
		g->h_temps[t] = tau;
	}
	*ntiles = nt;
	return 0;
}

// Layer l's forward over T tokens (gpu_forward_layers), from its input in
// resid to its output there, the next layer's input. The backward's
// recompute (gpu_train.cu) calls it too, so that the activations it makes
// are the forward's own: the same kernels on the same inputs in the same
// order. for_backward stops it after gate|up: the backward makes SwiGLU's
// product itself, and the layer's output is kept.
int gpu_forward_layer(struct gpu_model *g, int l, int T, int ntiles, const struct kv_pass *kv, int for_backward,
		      char *msg, size_t msglen)
{
	const struct gpu_model_shape *s = &g->s;
	int C = s->C, I = s->I, QD = s->NH * s->HS, KD = s->NKV * s->HS, QKV = QD + 2 * KD;
	int bf = g->bf16;
	size_t es = g->esize;
	cudaStream_t st = g->stream;
	const char *wqkv = (const char *)g->wqkv + (size_t)l * QKV * C * es;
	const char *wo = (const char *)g->wo + (size_t)l * C * QD * es;
	const char *wgu = (const char *)g->wgu + (size_t)l * 2 * I * C * es;
	const char *wdown = (const char *)g->wdown + (size_t)l * C * I * es;
	size_t lq = (size_t)l * QD, lk = (size_t)l * KD, lh = (size_t)l * s->HS;
	// this layer's activations: its own when training (inputs always, the
	// rest unless recomputing), else the one set
	float *x = g->resid + resid_off(g, l), *r2 = g->resid2 + layer_off(g, l, C);
	float *xout = g->resid + resid_off(g, l + 1);
	char *raw = (char *)g->qkv_raw + layer_off(g, l, QKV) * es, *qkv = (char *)g->qkv + layer_off(g, l, QKV) * es;
	char *att = (char *)g->att + layer_off(g, l, QD) * es, *gu = (char *)g->gu + layer_off(g, l, 2 * I) * es;
	float *att_lse = g->att_lse ? g->att_lse + layer_off(g, l, s->NH) : NULL;
	double TT = T;

	// attention block: x -> RMSNorm -> qkv (bias, q/k norm, RoPE) -> attention -> r2 = x + o_proj
	LAUNCH(launch_rmsnorm(g->ln, x, g->ln1 + (size_t)l * C, T, C, s->eps, bf, st));
	prof_mark(g, "rmsnorm", 0);
	if (matmul(&g->mm, raw, 0, g->ln, wqkv, bf, T, QKV, C, 0.0f, msg, msglen) < 0)
		return -1;
	prof_mark(g, "q/k/v matmul", 2 * TT * QKV * C);
	if (raw != qkv) {   // training keeps the projections' output for the backward
		CUDA_TRY(cudaMemcpyAsync(qkv, raw, (size_t)T * QKV * es, cudaMemcpyDeviceToDevice, st));
		prof_mark(g, "activation copies", 0);
	}
	LAUNCH(launch_qkv_prep(qkv, g->bq ? g->bq + lq : NULL, g->bk ? g->bk + lk : NULL, g->bv ? g->bv + lk : NULL,
			       g->qnorm ? g->qnorm + lh : NULL, g->knorm ? g->knorm + lh : NULL, g->cos, g->sin,
			       g->pos, T, s->NH, s->NKV, s->HS, s->eps, bf, st));
	prof_mark(g, "q/k/v bias, norm, RoPE", 0);
	char *kc = NULL, *vc = NULL;
	if (kv) {   // decoding: this pass's keys and values join the cache
		kc = (char *)kv->kc + (size_t)l * kv->layer_elems * es;
		vc = (char *)kv->vc + (size_t)l * kv->layer_elems * es;
		LAUNCH(launch_kv_write(kc, vc, qkv, kv->slots, T, s->NH, s->NKV, s->HS, bf, st));
	}
	if (kv && kv->paged)
		LAUNCH(launch_paged_attention(att, qkv, kc, vc, kv->table, kv->table_stride, kv->ctx, T, kv->max_ctx,
					      kv->work, s->NH, s->NKV, s->HS, bf, st));
	else if (g->attention_mma)
		LAUNCH(launch_attention_mma(att, att_lse, qkv, g->tiles, ntiles, s->NH, s->NKV, s->HS, st));
	else
		LAUNCH(launch_attention(att, att_lse, qkv, g->tiles, ntiles, s->NH, s->NKV, s->HS, bf, st));
	// (query, key) pairs times two products of HS per query head
	prof_mark(g, "attention", kv ? 0 : 4 * g->att_pairs * QD);
	if (matmul_residual(&g->mm, r2, x, att, wo, bf, T, C, QD, msg, msglen) < 0)   // training keeps x apart
		return -1;
	prof_mark(g, "o_proj matmul", 2 * TT * C * QD);
	if (g->bo) {
		LAUNCH(launch_add_bias(r2, g->bo + (size_t)l * C, T, C, st));
		prof_mark(g, "bias add", 0);
	}

	// MLP block: RMSNorm -> gate|up -> SwiGLU -> xout = r2 + down_proj
	LAUNCH(launch_rmsnorm(g->ln, r2, g->ln2 + (size_t)l * C, T, C, s->eps, bf, st));
	prof_mark(g, "rmsnorm", 0);
	if (matmul(&g->mm, gu, 0, g->ln, wgu, bf, T, 2 * I, C, 0.0f, msg, msglen) < 0)
		return -1;
	prof_mark(g, "gate|up matmul", 2 * TT * 2 * I * C);
	if (for_backward)
		return 0;
	LAUNCH(launch_swiglu(g->act, gu, T, I, bf, st));
	prof_mark(g, "SwiGLU", 0);
	if (matmul_residual(&g->mm, xout, r2, g->act, wdown, bf, T, C, I, msg, msglen) < 0)
		return -1;
	prof_mark(g, "down matmul", 2 * TT * C * I);
	return 0;
}

// The embedding, every layer and the final norm over the T tokens of
// g->ids at positions g->pos (device arrays the caller filled), leaving the
// normed last hidden states in g->ln. With kv (gpu_decode.cu), every
// layer's keys and values also go to the paged cache, and with kv->paged
// each row attends over its sequence's cache instead of the pack's tiles.
int gpu_forward_layers(struct gpu_model *g, int T, int ntiles, const struct kv_pass *kv, char *msg, size_t msglen)
{
	const struct gpu_model_shape *s = &g->s;
	int l = -1;
	g->held = -1;
	LAUNCH(launch_embed(g->resid, g->embed, g->ids, T, s->C, g->bf16, g->stream));
	prof_mark(g, "embedding", 0);
	for (l = 0; l < s->L; l++)
		if (gpu_forward_layer(g, l, T, ntiles, kv, 0, msg, msglen) < 0)
			return -1;
	g->held = s->L - 1;   // what a recomputing backward starts from as it is
	l = -1;
	LAUNCH(launch_rmsnorm(g->ln, g->resid + resid_off(g, s->L), g->norm, T, s->C, s->eps, g->bf16, g->stream));
	prof_mark(g, "rmsnorm", 0);
	return 0;
}

int gpu_lmhead_logits(struct gpu_model *g, int r0, int n, char *msg, size_t msglen)
{
	const char *x = (const char *)g->ln + (size_t)r0 * g->s.C * g->esize;
	return matmul(&g->mm, g->logits, 1, x, g->lm_head, g->bf16, n, g->s.V, g->s.C, 0.0f, msg, msglen);
}

// The fused forward's loss inputs moved to the rows that predict their
// tokens (row t: token t + 1; flags 0 where a row predicts nothing), onto
// the device; the rows as loss.cu reads them.
static int loss_rows(struct gpu_model *g, int T, const struct gpu_loss *loss, struct loss_rows *rows, char *msg,
		     size_t msglen)
{
	float *adv = g->h_ladv, *old = adv + T, *behav = old + T, *ref = behav + T;
	for (int t = 0; t < T; t++) {
		int u = t + 1, predicts = u < T && g->h_start[u] == g->h_start[t];
		g->h_lflags[t] = predicts && (loss->flags[u] & GPU_LOSS_TOKEN) ? loss->flags[u] : 0;
		adv[t] = predicts ? loss->adv[u] : 0;
		old[t] = predicts ? loss->old[u] : 0;
		behav[t] = predicts && loss->behav ? loss->behav[u] : 0;
		ref[t] = predicts && loss->ref ? loss->ref[u] : 0;
		g->h_lw[t] = predicts ? loss->w[u] : 0;
	}
	cudaStream_t st = g->stream;
	CUDA_TRY(cudaMemcpyAsync(g->l_flags, g->h_lflags, (size_t)T, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->l_adv, adv, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->l_old, old, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->l_behav, behav, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->l_ref, ref, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->l_w, g->h_lw, (size_t)T * 8, cudaMemcpyHostToDevice, st));
	struct loss_rows r = { g->l_flags, g->l_adv, g->l_old, loss->behav ? g->l_behav : NULL,
			       loss->ref ? g->l_ref : NULL, g->l_w };
	*rows = r;
	return 0;
}

// The LM head over the T-1 rows that may predict a token, chunk by chunk:
// the logits' statistics, and with loss (fused) the loss's gradients, then
// the head's backward of the chunk, while its logits are at hand.
static int lmhead(struct gpu_model *g, int T, const struct gpu_loss *loss, char *msg, size_t msglen)
{
	cudaStream_t st = g->stream;
	int l = -1;
	struct loss_rows rows = { NULL, NULL, NULL, NULL, NULL, NULL };
	if (loss) {
		if (loss_rows(g, T, loss, &rows, msg, msglen) < 0)
			return -1;
		CUDA_TRY(cudaMemsetAsync(g->dln, 0, (size_t)T * g->s.C * 4, st));   // the last row predicts nothing
	}
	for (int r0 = 0; r0 < T - 1; r0 += g->chunk) {
		int n = T - 1 - r0 < g->chunk ? T - 1 - r0 : g->chunk;
		if (gpu_lmhead_logits(g, r0, n, msg, msglen) < 0)
			return -1;
		prof_mark(g, "LM head matmul", 2.0 * n * g->s.V * g->s.C);
		int err = grpo_cuda_lmhead_stats(g->logits, g->targets + r0, g->temps + r0, n, g->s.V, g->lp + r0,
						 g->ent + r0, g->lse + r0, st);
		if (err)
			return gpu_fail(msg, msglen, "LM head statistics: %s", grpo_cuda_strerror(err));
		prof_mark(g, "LM head softmax statistics", 0);
		if (!loss)
			continue;
		struct loss_rows at = { rows.flags + r0, rows.adv + r0, rows.old + r0,
					rows.behav ? rows.behav + r0 : NULL, rows.ref ? rows.ref + r0 : NULL,
					rows.w + r0 };
		LAUNCH(launch_loss_rows(g->dlp + r0, g->dent + r0, g->lp + r0, at, *loss->opts, n, st));
		prof_mark(g, "LM head loss gradient", 0);
		if (gpu_lmhead_backward_rows(g, r0, n, msg, msglen) < 0)
			return -1;
	}
	return 0;
}

// gpu_model_forward, and with loss gpu_model_forward_train.
static int forward(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
		   const float *temps, const struct gpu_loss *loss, float *logprob, float *entropy, char *msg,
		   size_t msglen)
{
	int ntiles = 0;
	cudaStream_t st = g->stream;
	g->forward_done = g->head_done = 0;   // from here on the host arrays describe this pack, not the last
	if (T <= 0 || T > g->maxT)
		return gpu_fail(msg, msglen, "pack of %d tokens, but the GPU model is sized for 1 to %d", T, g->maxT);
	if (lay_out(g, ids, T, seq_lens, nseq, temps, &ntiles, msg, msglen) < 0)
		return -1;
	prof_start(g);
	CUDA_TRY(cudaMemcpyAsync(g->ids, ids, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->pos, g->h_pos, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->targets, g->h_targets, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->temps, g->h_temps, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->tiles, g->h_tiles, (size_t)ntiles * sizeof(struct att_tile),
				 cudaMemcpyHostToDevice, st));
	prof_mark(g, "copies in", 0);

	if (gpu_forward_layers(g, T, ntiles, NULL, msg, msglen) < 0 || lmhead(g, T, loss, msg, msglen) < 0)
		return -1;
	if (T > 1) {
		CUDA_TRY(cudaMemcpyAsync(g->h_lp, g->lp, (size_t)(T - 1) * 4, cudaMemcpyDeviceToHost, st));
		CUDA_TRY(cudaMemcpyAsync(g->h_ent, g->ent, (size_t)(T - 1) * 4, cudaMemcpyDeviceToHost, st));
		prof_mark(g, "copies out", 0);
	}
	CUDA_TRY(cudaStreamSynchronize(st));
	prof_collect(g);

	for (int t = 0; t < T; t++) {
		int predicted = t > 0 && g->h_start[t] == g->h_start[t - 1];
		logprob[t] = predicted ? g->h_lp[t - 1] : 0.0f;
		if (entropy)
			entropy[t] = predicted ? g->h_ent[t - 1] : 0.0f;
	}
	g->T = T;
	g->ntiles = ntiles;
	g->forward_done = 1;
	g->head_done = loss != NULL;
	return 0;
}

int gpu_model_forward(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
		      const float *temps, float *logprob, float *entropy, char *msg, size_t msglen)
{
	return forward(g, ids, T, seq_lens, nseq, temps, NULL, logprob, entropy, msg, msglen);
}

int gpu_model_forward_train(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
			    const float *temps, const struct gpu_loss *loss, float *logprob, float *entropy, char *msg,
			    size_t msglen)
{
	if (!g->train)
		return gpu_fail(msg, msglen, "a training forward on a GPU model made for inference");
	if (loss->opts->ratio != LOSS_RATIO_TOKEN)
		return gpu_fail(msg, msglen, "the fused LM head takes the token ratio only (the sequence's needs all its "
				"logprobs first)");
	return forward(g, ids, T, seq_lens, nseq, temps, loss, logprob, entropy, msg, msglen);
}

// ---- the attention kernels alone ----

// n values from a device buffer of the element type back to host fp32
cudaError_t act_get(float *dst, const void *src, size_t n, int bf16)
{
	if (!bf16)
		return cudaMemcpy(dst, src, n * 4, cudaMemcpyDeviceToHost);
	__nv_bfloat16 *tmp = (__nv_bfloat16 *)malloc(n * 2);
	if (!tmp)
		return cudaErrorMemoryAllocation;
	cudaError_t err = cudaMemcpy(tmp, src, n * 2, cudaMemcpyDeviceToHost);
	for (size_t i = 0; i < n && err == cudaSuccess; i++)
		dst[i] = __bfloat162float(tmp[i]);
	free(tmp);
	return err;
}

int gpu_attention_test(const float *qkv, const float *dout, int T, const uint32_t *seq_lens, int nseq, int NH,
		       int NKV, int HS, int bf16, int mma, float *out, float *lse_out, float *dqkv, char *msg,
		       size_t msglen)
{
	if (mma && (!bf16 || !attention_mma_head_size_ok(HS)))
		return gpu_fail(msg, msglen, "the tensor-core kernels are bf16, for head sizes 64 and 128");
	if (!mma && !attention_head_size_ok(HS))
		return gpu_fail(msg, msglen, "head size %d: the CUDA attention takes %s", HS, ATT_HEAD_SIZES);
	size_t es = bf16 ? 2 : 4, nin = (size_t)T * (NH + 2 * NKV) * HS, nout = (size_t)T * NH * HS;
	struct att_tile *tiles = (struct att_tile *)malloc((size_t)T * sizeof *tiles);
	void *din = NULL, *dres = NULL, *dg = NULL, *dgrad = NULL, *dtiles = NULL;
	float *lse = NULL, *D = NULL;
	int nt = 0, t = 0, rc = -1;
	cudaError_t err = cudaSuccess;
	if (!tiles) {
		gpu_fail(msg, msglen, "out of host memory");
		goto out;
	}
	for (int q = 0; q < nseq; t += (int)seq_lens[q++])
		nt += sequence_tiles(t, (int)seq_lens[q], tiles + nt);
	// unwritten outputs read NaN (0xff bytes), so a row a kernel skips shows
	if ((err = cudaMalloc(&din, nin * es)) != cudaSuccess || (err = cudaMalloc(&dres, nout * es)) != cudaSuccess ||
	    (err = cudaMalloc(&dtiles, (size_t)nt * sizeof *tiles)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&lse, (size_t)T * NH * 4)) != cudaSuccess ||
	    (err = act_put(din, qkv, nin, bf16)) != cudaSuccess || (err = cudaMemset(dres, 0xff, nout * es)) != cudaSuccess ||
	    (err = cudaMemcpy(dtiles, tiles, (size_t)nt * sizeof *tiles, cudaMemcpyHostToDevice)) != cudaSuccess)
		goto cuda_failed;
	err = mma ? launch_attention_mma(dres, lse, din, (struct att_tile *)dtiles, nt, NH, NKV, HS, 0)
		  : launch_attention(dres, lse, din, (struct att_tile *)dtiles, nt, NH, NKV, HS, bf16, 0);
	if (err != cudaSuccess || (err = act_get(out, dres, nout, bf16)) != cudaSuccess ||
	    (lse_out && (err = cudaMemcpy(lse_out, lse, (size_t)T * NH * 4, cudaMemcpyDeviceToHost)) != cudaSuccess))
		goto cuda_failed;
	if (dout) {
		if ((err = cudaMalloc(&dg, nout * es)) != cudaSuccess || (err = cudaMalloc(&dgrad, nin * es)) != cudaSuccess ||
		    (err = cudaMalloc((void **)&D, (size_t)T * NH * 4)) != cudaSuccess ||
		    (err = act_put(dg, dout, nout, bf16)) != cudaSuccess ||
		    (err = cudaMemset(dgrad, 0xff, nin * es)) != cudaSuccess)
			goto cuda_failed;
		err = mma ? launch_attention_backward_mma(dgrad, dg, dres, din, lse, D, (struct att_tile *)dtiles, nt, T,
							  NH, NKV, HS, 0)
			  : launch_attention_backward(dgrad, dg, dres, din, lse, D, (struct att_tile *)dtiles, nt, T, NH,
						      NKV, HS, bf16, 0);
		if (err != cudaSuccess || (err = act_get(dqkv, dgrad, nin, bf16)) != cudaSuccess)
			goto cuda_failed;
	}
	rc = 0;
	goto out;
cuda_failed:
	gpu_fail(msg, msglen, "attention kernels: %s", cudaGetErrorString(err));
out:
	cudaFree(din);
	cudaFree(dres);
	cudaFree(dg);
	cudaFree(dgrad);
	cudaFree(dtiles);
	cudaFree(lse);
	cudaFree(D);
	free(tiles);
	return rc;
}
