// gpu_train.cu: the GPU model's backward and its gradients (gpu_model.h),
// reading as lib/model/model.c's model_backward() does, layer by layer in
// reverse. The forward of a model created for training kept each layer's
// input and post-attention residual (fp32), q/k/v before and after their
// preparation, the attention output and log-sum-exp, and gate|up; the
// RMSNorm outputs and SwiGLU's product, cheap to make again, are
// recomputed here. A model made with GPU_TRAIN_RECOMPUTE kept only each
// layer's input: the layer's forward runs again from it just before its
// backward (gpu_forward_layer, the forward's own code, so the same bits and
// the same gradients). Gradients of the residual stream are fp32; where one
// feeds a matrix product it is converted to the activation type first.
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backward.cuh"
#include "gpu_model_impl.cuh"

static void layout(struct gpu_model *g, struct carve *c)
{
	const struct gpu_model_shape *s = &g->s;
	size_t T = g->maxT, C = s->C, I = s->I, V = s->V, L = s->L, HS = s->HS, es = g->esize;
	size_t QD = (size_t)s->NH * HS, KD = (size_t)s->NKV * HS, QKV = QD + 2 * KD;
	// the gradients first, so that one memset zeroes them
	g->g_embed = (float *)carve(c, V * C * 4);
	g->g_lm_head = g->tied ? g->g_embed : (float *)carve(c, V * C * 4);
	g->g_wqkv = (float *)carve(c, L * QKV * C * 4);
	g->g_wo = (float *)carve(c, L * C * QD * 4);
	g->g_wgu = (float *)carve(c, L * 2 * I * C * 4);
	g->g_wdown = (float *)carve(c, L * C * I * 4);
	g->g_ln1 = (float *)carve(c, L * C * 4);
	g->g_ln2 = (float *)carve(c, L * C * 4);
	g->g_norm = (float *)carve(c, C * 4);
	g->g_qnorm = (float *)carve(c, L * HS * 4);
	g->g_knorm = (float *)carve(c, L * HS * 4);
	g->g_bqkv = (float *)carve(c, L * QKV * 4);
	g->g_bo = (float *)carve(c, L * C * 4);
	g->grad_bytes = c->off;
	g->dres = (float *)carve(c, T * C * 4);
	g->dln = (float *)carve(c, T * C * 4);
	g->dact = (float *)carve(c, T * I * 4);
	g->dsum = (float *)carve(c, T * s->NH * 4);
	g->nq = (float *)carve(c, T * QD * 4);
	g->nk = (float *)carve(c, T * KD * 4);
	g->partial = (float *)carve(c, (T + RMS_ROWS - 1) / RMS_ROWS * C * 4);
	size_t sums[] = { colsum_scratch_floats(T, QKV), colsum_scratch_floats(T, C),
			  colsum_scratch_floats(T * s->NH, HS), colsum_scratch_floats(T * s->NKV, HS),
			  colsum_scratch_floats((T + RMS_ROWS - 1) / RMS_ROWS, C) }, most = 0;
	for (size_t k = 0; k < sizeof sums / sizeof *sums; k++)
		most = sums[k] > most ? sums[k] : most;
	g->colsum_tmp = (float *)carve(c, most * 4);
	g->dlp = (float *)carve(c, T * 4);
	g->dent = (float *)carve(c, T * 4);
	g->dres_act = carve(c, T * C * es);
	g->dgu = carve(c, T * 2 * I * es);
	g->datt = carve(c, T * QD * es);
	g->dqkv = carve(c, T * QKV * es);
	g->dz = carve(c, (size_t)g->chunk * V * es);
	g->l_adv = (float *)carve(c, T * 4);
	g->l_old = (float *)carve(c, T * 4);
	g->l_behav = (float *)carve(c, T * 4);
	g->l_ref = (float *)carve(c, T * 4);
	g->l_w = (double *)carve(c, T * 8);
	g->l_flags = (uint8_t *)carve(c, T);
	g->order = (int32_t *)carve(c, (T + 1) * 4);
	g->seg = (int32_t *)carve(c, (T + 1) * 4);
	g->seg_id = (int32_t *)carve(c, (T + 1) * 4);
}

size_t gpu_train_bytes(struct gpu_model *g)
{
	struct carve c = { NULL, 0 };
	layout(g, &c);
	return c.off;
}

int gpu_train_layout(struct gpu_model *g, char *base)
{
	struct carve c = { base, 0 };
	layout(g, &c);
	size_t T = g->maxT;
	g->h_dlp = (float *)malloc(2 * T * sizeof(float));
	g->h_order = (int32_t *)malloc(3 * (T + 1) * sizeof(int32_t));
	g->h_ladv = (float *)malloc(4 * T * sizeof(float));
	g->h_lw = (double *)malloc(T * sizeof(double));
	g->h_lflags = (uint8_t *)malloc(T);
	if (!g->h_dlp || !g->h_order || !g->h_ladv || !g->h_lw || !g->h_lflags)
		return -1;
	g->h_dent = g->h_dlp + T;
	g->h_seg = g->h_order + T + 1;
	g->h_seg_id = g->h_seg + T + 1;
	return 0;
}

int gpu_model_grads_zero(struct gpu_model *g, char *msg, size_t msglen)
{
	if (!g->train)
		return gpu_fail(msg, msglen, "a GPU model made for inference has no gradients");
	CUDA_TRY(cudaMemsetAsync(g->gmem, 0, g->grad_bytes, g->stream));
	CUDA_TRY(cudaStreamSynchronize(g->stream));
	return 0;
}

// ---- the embedding's rows, grouped by token id in position order ----

static int by_id(const void *a, const void *b, void *arg)
{
	const int32_t *ids = (const int32_t *)arg;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	if (ids[x] != ids[y])
		return ids[x] < ids[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int group_ids(struct gpu_model *g, int32_t *ids, int T)
{
	for (int t = 0; t < T; t++)
		g->h_order[t] = t;
	qsort_r(g->h_order, (size_t)T, sizeof *g->h_order, by_id, ids);
	int n = 0;
	for (int k = 0; k < T; k++)
		if (k == 0 || ids[g->h_order[k]] != ids[g->h_order[k - 1]]) {
			g->h_seg[n] = k;
			g->h_seg_id[n++] = ids[g->h_order[k]];
		}
	g->h_seg[n] = T;
	return n;
}

// ---- the backward ----

// ---- the LM head ----

int gpu_lmhead_backward_rows(struct gpu_model *g, int r0, int n, char *msg, size_t msglen)
{
	int C = g->s.C, V = g->s.V, l = -1;
	const char *x = (const char *)g->ln + (size_t)r0 * g->esize * C;
	double VnC = 2.0 * n * V * C;
	LAUNCH(launch_lmhead_backward(g->dz, g->logits, g->targets + r0, g->temps + r0, g->dlp + r0, g->dent + r0,
				      g->lse + r0, g->ent + r0, n, V, g->bf16, g->stream));
	prof_mark(g, "LM head dlogits", 0);
	if (matmul_dx(&g->mm, g->dln + (size_t)r0 * C, 1, g->dz, g->lm_head, g->bf16, n, V, C, 0.0f, msg, msglen) < 0)
		return -1;
	prof_mark(g, "LM head dx matmul", VnC);
	if (matmul_dw(&g->mm, g->g_lm_head, g->dz, x, g->bf16, n, V, C, msg, msglen) < 0)
		return -1;
	prof_mark(g, "LM head dW matmul", VnC);
	return 0;
}

// Each predicting row t gets the loss's gradients of the token t+1 it
// predicts (0 where it predicts none), in g->h_dlp and g->h_dent.
static void host_rows(struct gpu_model *g, const float *dlogprob, const float *dentropy)
{
	for (int t = 0; t < g->T; t++) {
		int predicts = t + 1 < g->T && g->h_start[t + 1] == g->h_start[t];
		g->h_dlp[t] = predicts ? dlogprob[t + 1] : 0.0f;
		g->h_dent[t] = predicts && dentropy ? dentropy[t + 1] : 0.0f;
	}
}

// A fused forward's gradients against the host's (GRPO_CUDA_FUSED_CHECK):
// both are one double rounded once to float, differing at most where the
// device's exp() rounds its last bit otherwise.
static int check_fused(struct gpu_model *g, const float *dlogprob, const float *dentropy, char *msg, size_t msglen)
{
	int T = g->T;
	float *dev = g->h_ladv, *dev_ent = g->h_ladv + T;   // the loss inputs' host mirror, free after the forward
	host_rows(g, dlogprob, dentropy);
	CUDA_TRY(cudaMemcpyAsync(dev, g->dlp, (size_t)T * 4, cudaMemcpyDeviceToHost, g->stream));
	CUDA_TRY(cudaMemcpyAsync(dev_ent, g->dent, (size_t)T * 4, cudaMemcpyDeviceToHost, g->stream));
	CUDA_TRY(cudaStreamSynchronize(g->stream));
	for (int t = 0; t + 1 < T; t++) {
		float a[2] = { dev[t], dev_ent[t] }, b[2] = { g->h_dlp[t], g->h_dent[t] };
		for (int k = 0; k < 2; k++)
			if (!(fabsf(a[k] - b[k]) <= 1e-6f * fabsf(b[k]) + 1e-30f))
				return gpu_fail(msg, msglen, "the fused LM head's d%s of token %d is %.9g, the host loss's %.9g",
						k ? "entropy" : "logprob", t + 1, a[k], b[k]);
	}
	return 0;
}

int gpu_model_backward(struct gpu_model *g, const float *dlogprob, const float *dentropy, char *msg, size_t msglen)
{
	const struct gpu_model_shape *s = &g->s;
	int C = s->C, I = s->I, NH = s->NH, NKV = s->NKV, HS = s->HS, T = g->T, l = -1;
	int QD = NH * HS, KD = NKV * HS, QKV = QD + 2 * KD, bf = g->bf16;
	size_t es = g->esize, TC = (size_t)T * C;
	cudaStream_t st = g->stream;
	if (!g->train)
		return gpu_fail(msg, msglen, "backward on a GPU model made for inference");
	if (!g->forward_done)
		return gpu_fail(msg, msglen, "backward without a forward");
	if (g->head_done && dlogprob && check_fused(g, dlogprob, dentropy, msg, msglen) < 0)
		return -1;

	int nseg = group_ids(g, g->h_ids, T);
	double TT = T;
	prof_start(g);
	CUDA_TRY(cudaMemcpyAsync(g->order, g->h_order, (size_t)T * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->seg, g->h_seg, (size_t)(nseg + 1) * 4, cudaMemcpyHostToDevice, st));
	CUDA_TRY(cudaMemcpyAsync(g->seg_id, g->h_seg_id, (size_t)nseg * 4, cudaMemcpyHostToDevice, st));
	prof_mark(g, "bwd: copies in", 0);

	// LM head, unless the forward took it: recompute each chunk's logits,
	// turn them into dlogits, then dlnf = dz W and dW += dz^T lnf (dlnf's
	// last row, predicting nothing, stays 0)
	const float *xL = g->resid + resid_off(g, s->L);
	if (!g->head_done) {
		host_rows(g, dlogprob, dentropy);
		CUDA_TRY(cudaMemcpyAsync(g->dlp, g->h_dlp, (size_t)T * 4, cudaMemcpyHostToDevice, st));
		CUDA_TRY(cudaMemcpyAsync(g->dent, g->h_dent, (size_t)T * 4, cudaMemcpyHostToDevice, st));
		LAUNCH(launch_rmsnorm(g->ln, xL, g->norm, T, C, s->eps, bf, st));
		CUDA_TRY(cudaMemsetAsync(g->dln, 0, TC * 4, st));
		prof_mark(g, "bwd: rmsnorm (again)", 0);
		for (int r0 = 0; r0 < T - 1; r0 += g->chunk) {
			int n = T - 1 - r0 < g->chunk ? T - 1 - r0 : g->chunk;
			if (gpu_lmhead_logits(g, r0, n, msg, msglen) < 0)
				return -1;
			prof_mark(g, "bwd: LM head matmul (again)", 2.0 * n * s->V * C);
			if (gpu_lmhead_backward_rows(g, r0, n, msg, msglen) < 0)
				return -1;
		}
	}
	CUDA_TRY(cudaMemsetAsync(g->dres, 0, TC * 4, st));
	LAUNCH(launch_rmsnorm_backward(g->dres, g->dres_act, bf, g->g_norm, g->partial, g->colsum_tmp, g->dln, xL,
				       g->norm, T, C, s->eps, st));
	prof_mark(g, "bwd: rmsnorm", 0);

	for (l = s->L - 1; l >= 0; l--) {
		const char *wqkv = (const char *)g->wqkv + (size_t)l * QKV * C * es;
		const char *wo = (const char *)g->wo + (size_t)l * C * QD * es;
		const char *wgu = (const char *)g->wgu + (size_t)l * 2 * I * C * es;
		const char *wdown = (const char *)g->wdown + (size_t)l * C * I * es;
		// recompute: the shared buffers get this layer's activations (the
		// last layer's are there still after the forward)
		if (g->recompute && g->held != l) {
			g->held = -1;
			prof_tag(g, "recompute");
			int rc = gpu_forward_layer(g, l, T, g->ntiles, NULL, 1, msg, msglen);
			prof_tag(g, NULL);
			if (rc < 0)
				return -1;
			g->held = l;
		}
		const float *x = g->resid + resid_off(g, l), *r2 = g->resid2 + layer_off(g, l, C);
		const char *raw = (const char *)g->qkv_raw + layer_off(g, l, QKV) * es;
		const char *qkv = (const char *)g->qkv + layer_off(g, l, QKV) * es;
		const char *att = (const char *)g->att + layer_off(g, l, QD) * es;
		const char *gu = (const char *)g->gu + layer_off(g, l, 2 * I) * es;
		const float *att_lse = g->att_lse + layer_off(g, l, NH);
		size_t lq = (size_t)l * QD, lk = (size_t)l * KD, lh = (size_t)l * HS;

		// MLP: dres flows into down_proj, SwiGLU, gate|up and the second
		// norm; SwiGLU's backward makes its forward's output again for
		// down_proj's weight gradient, which therefore comes after it
		if (matmul_dx(&g->mm, g->dact, 1, g->dres_act, wdown, bf, T, C, I, 0.0f, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: down dx matmul", 2 * TT * C * I);
		LAUNCH(launch_swiglu_backward(g->dgu, g->act, g->dact, gu, T, I, bf, st));
		prof_mark(g, "bwd: SwiGLU", 0);
		if (matmul_dw(&g->mm, g->g_wdown + (size_t)l * C * I, g->dres_act, g->act, bf, T, C, I, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: down dW matmul", 2 * TT * C * I);
		LAUNCH(launch_rmsnorm(g->ln, r2, g->ln2 + (size_t)l * C, T, C, s->eps, bf, st));
		prof_mark(g, "bwd: rmsnorm (again)", 0);
		if (matmul_dw(&g->mm, g->g_wgu + (size_t)l * 2 * I * C, g->dgu, g->ln, bf, T, 2 * I, C, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: gate|up dW matmul", 2 * TT * 2 * I * C);
		if (matmul_dx(&g->mm, g->dln, 1, g->dgu, wgu, bf, T, 2 * I, C, 0.0f, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: gate|up dx matmul", 2 * TT * 2 * I * C);
		LAUNCH(launch_rmsnorm_backward(g->dres, g->dres_act, bf, g->g_ln2 + (size_t)l * C, g->partial,
					       g->colsum_tmp, g->dln, r2,
					       g->ln2 + (size_t)l * C, T, C, s->eps, st));
		prof_mark(g, "bwd: rmsnorm", 0);

		// attention: o_proj, attention, the q/k/v preparation, their projection, the first norm
		if (matmul_dw(&g->mm, g->g_wo + (size_t)l * C * QD, g->dres_act, att, bf, T, C, QD, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: o_proj dW matmul", 2 * TT * C * QD);
		if (matmul_dx(&g->mm, g->datt, 0, g->dres_act, wo, bf, T, C, QD, 0.0f, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: o_proj dx matmul", 2 * TT * C * QD);
		if (g->bo) {
			LAUNCH(launch_colsum(g->g_bo + (size_t)l * C, g->dres, 0, T, C, g->colsum_tmp, st));
			prof_mark(g, "bwd: bias gradients", 0);
		}
		if (g->attention_mma)
			LAUNCH(launch_attention_backward_mma(g->dqkv, g->datt, att, qkv, att_lse, g->dsum, g->tiles,
							     g->ntiles, T, NH, NKV, HS, st));
		else
			LAUNCH(launch_attention_backward(g->dqkv, g->datt, att, qkv, att_lse, g->dsum, g->tiles, g->ntiles,
							 T, NH, NKV, HS, bf, st));
		// five products of HS per (query, key) pair and query head (FlashAttention-2's backward)
		prof_mark(g, "bwd: attention", 10 * g->att_pairs * QD);
		LAUNCH(launch_qkv_prep_backward(g->dqkv, g->nq, g->nk, raw, g->bq ? g->bq + lq : NULL,
						g->bk ? g->bk + lk : NULL, g->qnorm ? g->qnorm + lh : NULL,
						g->knorm ? g->knorm + lh : NULL, g->cos, g->sin, g->pos, T, NH, NKV, HS,
						s->eps, bf, st));
		prof_mark(g, "bwd: q/k/v bias, norm, RoPE", 0);
		if (g->bq)
			LAUNCH(launch_colsum(g->g_bqkv + (size_t)l * QKV, g->dqkv, bf, T, QKV, g->colsum_tmp, st));
		if (g->qnorm) {
			LAUNCH(launch_colsum(g->g_qnorm + lh, g->nq, 0, T * NH, HS, g->colsum_tmp, st));
			LAUNCH(launch_colsum(g->g_knorm + lh, g->nk, 0, T * NKV, HS, g->colsum_tmp, st));
		}
		if (g->bq || g->qnorm)
			prof_mark(g, "bwd: bias gradients", 0);
		LAUNCH(launch_rmsnorm(g->ln, x, g->ln1 + (size_t)l * C, T, C, s->eps, bf, st));
		prof_mark(g, "bwd: rmsnorm (again)", 0);
		if (matmul_dw(&g->mm, g->g_wqkv + (size_t)l * QKV * C, g->dqkv, g->ln, bf, T, QKV, C, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: q/k/v dW matmul", 2 * TT * QKV * C);
		if (matmul_dx(&g->mm, g->dln, 1, g->dqkv, wqkv, bf, T, QKV, C, 0.0f, msg, msglen) < 0)
			return -1;
		prof_mark(g, "bwd: q/k/v dx matmul", 2 * TT * QKV * C);
		// (layer 0's dx goes to the embedding alone, in fp32)
		LAUNCH(launch_rmsnorm_backward(g->dres, l ? g->dres_act : NULL, bf, g->g_ln1 + (size_t)l * C, g->partial,
					       g->colsum_tmp, g->dln, x,
					       g->ln1 + (size_t)l * C, T, C, s->eps, st));
		prof_mark(g, "bwd: rmsnorm", 0);
	}
	l = -1;

	// the embedding: each token's row of dres into its id's row
	LAUNCH(launch_embed_backward(g->g_embed, g->dres, g->order, g->seg, g->seg_id, nseg, C, st));
	prof_mark(g, "bwd: embedding", 0);
	CUDA_TRY(cudaStreamSynchronize(st));
	prof_collect(g);
	return 0;
}
