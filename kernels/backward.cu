// backward.cu: the backward kernels of the model's layers other than the
// matrix products and attention (attention_bwd.cu), each the transpose of
// a forward kernel in layers.cu and mirroring lib/model/model.c's backward.
// Every reduction over tokens (the weight gradients of the norms, the
// biases) sums in a fixed order, so a backward is bitwise repeatable.
#include <math.h>

#include "backward.cuh"
#include "device.cuh"

#define THREADS 256

// ---- column sums: out (N) += the sum of in's R rows ----
//
// In passes, each summing COLSUM_ROWS rows per column in row order, into
// the scratch buffer's next level (ceil(R / COLSUM_ROWS) rows), until one
// row is left; the order is fixed, so the sum is the same bits every run,
// and thousands of blocks share the reads where one thread per column
// walking all R rows left the GPU idle.

#define COLSUM_ROWS 64

// One pass: chunk y of in's rows to row y of part, or, with add, the only
// chunk to out.
template <typename T>
__global__ void colsum_kernel(float *part, const T *in, int R, int N, int add)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= N)
		return;
	for (int y = blockIdx.y; y * COLSUM_ROWS < R; y += gridDim.y) {
		int r1 = min(R, (y + 1) * COLSUM_ROWS);
		float s = 0;
		for (int r = y * COLSUM_ROWS; r < r1; r++)
			s += to_f(in[(size_t)r * N + c]);
		if (add)
			part[c] += s;
		else
			part[(size_t)y * N + c] = s;
	}
}

size_t colsum_scratch_floats(size_t R, size_t N)
{
	size_t n = 0;
	for (; R > COLSUM_ROWS; R = (R + COLSUM_ROWS - 1) / COLSUM_ROWS)
		n += (R + COLSUM_ROWS - 1) / COLSUM_ROWS * N;
	return n;
}

cudaError_t launch_colsum(float *out, const void *in, int in_bf16, int R, int N, float *scratch, cudaStream_t s)
{
	if (R == 0 || N == 0)
		return cudaSuccess;
	int threads = N < THREADS ? (N + 31) / 32 * 32 : THREADS;
	int cols = (N + threads - 1) / threads;
	for (;;) {
		int chunks = (R + COLSUM_ROWS - 1) / COLSUM_ROWS, last = chunks == 1;
		dim3 grid(cols, chunks < 65535 ? chunks : 65535);
		float *to = last ? out : scratch;
		if (in_bf16)
			colsum_kernel<bf16><<<grid, threads, 0, s>>>(to, (const bf16 *)in, R, N, last);
		else
			colsum_kernel<float><<<grid, threads, 0, s>>>(to, (const float *)in, R, N, last);
		cudaError_t err = cudaGetLastError();
		if (err != cudaSuccess || last)
			return err;
		in = scratch;
		in_bf16 = 0;
		scratch += (size_t)chunks * N;
		R = chunks;
	}
}

// ---- RMSNorm backward ----
//
// For each row, with r = 1/sqrt(mean(x^2) + eps) recomputed:
//   dx += dy w r - x r^3 sum(dy w x) / C,   dw += dy x r.
// A block takes RMS_ROWS rows, each thread NV groups of four columns (C a
// multiple of 4, which gpu_model_create asks), so that a row's x and dy
// stay in registers between its two sums and its update, and its share of
// dw too; that share goes to partial[block], which colsum then adds up in
// block order. With dxa, the updated dx also goes there in the activation
// type, for the matrix products that take it next.

template <int NV, typename A>
__global__ void rmsnorm_bwd_kernel(float *dx, A *dxa, float *partial, const float *dy, const float *x, const float *w,
				   int T, int C, float eps)
{
	float4 wv[NV], dw[NV];
	const float4 zero = make_float4(0, 0, 0, 0);
#pragma unroll
	for (int k = 0; k < NV; k++) {
		int c = 4 * (threadIdx.x + k * blockDim.x);
		wv[k] = c < C ? load4(w + c) : zero;
		dw[k] = zero;
	}
	int r0 = blockIdx.x * RMS_ROWS, r1 = min(T, r0 + RMS_ROWS);
	for (int t = r0; t < r1; t++) {
		const float *xr = x + (size_t)t * C, *g = dy + (size_t)t * C;
		float4 xv[NV], gv[NV];
		float2 sums = make_float2(0, 0);   // sum x^2, sum dy w x
#pragma unroll
		for (int k = 0; k < NV; k++) {
			int c = 4 * (threadIdx.x + k * blockDim.x);
			xv[k] = c < C ? load4(xr + c) : zero;
			gv[k] = c < C ? load4(g + c) : zero;
			sums.x += dot4(xv[k], xv[k]);
			sums.y += gv[k].x * wv[k].x * xv[k].x + gv[k].y * wv[k].y * xv[k].y +
				  gv[k].z * wv[k].z * xv[k].z + gv[k].w * wv[k].w * xv[k].w;
		}
		sums = block_sum2(sums);
		float r = rsqrtf(sums.x / C + eps), q = sums.y * r * r * r / C;
		float *out = dx + (size_t)t * C;
#pragma unroll
		for (int k = 0; k < NV; k++) {
			int c = 4 * (threadIdx.x + k * blockDim.x);
			if (c >= C)
				continue;
			float4 o = load4(out + c), a = gv[k], b = xv[k], m = wv[k];
			o.x += a.x * m.x * r - b.x * q;
			o.y += a.y * m.y * r - b.y * q;
			o.z += a.z * m.z * r - b.z * q;
			o.w += a.w * m.w * r - b.w * q;
			*(float4 *)(out + c) = o;
			if (dxa)
				store4(dxa + (size_t)t * C + c, o);
			dw[k].x += a.x * b.x * r;
			dw[k].y += a.y * b.y * r;
			dw[k].z += a.z * b.z * r;
			dw[k].w += a.w * b.w * r;
		}
	}
#pragma unroll
	for (int k = 0; k < NV; k++) {
		int c = 4 * (threadIdx.x + k * blockDim.x);
		if (c < C)
			*(float4 *)(partial + (size_t)blockIdx.x * C + c) = dw[k];
	}
}

template <typename A>
static void rmsnorm_bwd(int nv, int blocks, int threads, cudaStream_t s, float *dx, A *dxa, float *partial,
			const float *dy, const float *x, const float *w, int T, int C, float eps)
{
	switch (nv) {
	case 1: rmsnorm_bwd_kernel<1, A><<<blocks, threads, 0, s>>>(dx, dxa, partial, dy, x, w, T, C, eps); break;
	case 2: rmsnorm_bwd_kernel<2, A><<<blocks, threads, 0, s>>>(dx, dxa, partial, dy, x, w, T, C, eps); break;
	case 4: rmsnorm_bwd_kernel<4, A><<<blocks, threads, 0, s>>>(dx, dxa, partial, dy, x, w, T, C, eps); break;
	default: rmsnorm_bwd_kernel<8, A><<<blocks, threads, 0, s>>>(dx, dxa, partial, dy, x, w, T, C, eps); break;
	}
}

cudaError_t launch_rmsnorm_backward(float *dx, void *dx_act, int bf16flag, float *dw, float *partial, float *scratch,
				    const float *dy, const float *x, const float *w, int T, int C, float eps,
				    cudaStream_t s)
{
	if (T == 0)
		return cudaSuccess;
	int C4 = C / 4, blocks = (T + RMS_ROWS - 1) / RMS_ROWS;
	// groups of four per thread: the fewest that keep a block within 256 threads
	int nv = C4 <= 256 ? 1 : C4 <= 512 ? 2 : C4 <= 1024 ? 4 : 8;
	int threads = ((C4 + nv - 1) / nv + 31) / 32 * 32;
	if (C % 4 || C4 > 8 * 256)
		return cudaErrorInvalidValue;
	if (bf16flag)
		rmsnorm_bwd(nv, blocks, threads, s, dx, (bf16 *)dx_act, partial, dy, x, w, T, C, eps);
	else
		rmsnorm_bwd(nv, blocks, threads, s, dx, (float *)dx_act, partial, dy, x, w, T, C, eps);
	cudaError_t err = cudaGetLastError();
	return err != cudaSuccess ? err : launch_colsum(dw, partial, 0, blocks, C, scratch, s);
}

// ---- SwiGLU backward: dgu (T, 2I) = d/d(gate | up) of silu(gate) * up ----

// Eight elements a thread, as the forward's swiglu_kernel; with act, the
// forward's output again too (its expression, so its bits), for down_proj's
// weight gradient, while gate and up are at hand.
template <typename T>
__global__ void swiglu_bwd_kernel(T *dgu, T *act, const float *dact, const T *gu, int I, size_t n8)
{
	size_t step = (size_t)gridDim.x * blockDim.x;
	for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n8; e += step) {
		size_t t = e / (I / 8), i = e % (I / 8) * 8;
		float g[8], u[8], d[8], dg[8], du[8];
		load8(gu + t * 2 * I + i, g);
		load8(gu + t * 2 * I + I + i, u);
		load8(dact + t * I + i, d);
#pragma unroll
		for (int k = 0; k < 8; k++) {
			float sg = 1.0f / (1.0f + expf(-g[k]));
			du[k] = d[k] * g[k] * sg;
			dg[k] = d[k] * u[k] * sg * (1.0f + g[k] * (1.0f - sg));
		}
		store8(dgu + t * 2 * I + i, dg);
		store8(dgu + t * 2 * I + I + i, du);
		if (act) {
#pragma unroll
			for (int k = 0; k < 8; k++)
				d[k] = g[k] / (1.0f + expf(-g[k])) * u[k];
			store8(act + t * I + i, d);
		}
	}
}

cudaError_t launch_swiglu_backward(void *dgu, void *act, const float *dact, const void *gu, int T, int I,
				   int bf16flag, cudaStream_t s)
{
	if (T == 0)
		return cudaSuccess;
	size_t n8 = (size_t)T * I / 8;
	unsigned blocks = elementwise_blocks(n8);
	if (bf16flag)
		swiglu_bwd_kernel<bf16><<<blocks, THREADS, 0, s>>>((bf16 *)dgu, (bf16 *)act, dact, (const bf16 *)gu, I, n8);
	else
		swiglu_bwd_kernel<float><<<blocks, THREADS, 0, s>>>((float *)dgu, (float *)act, dact, (const float *)gu, I,
								    n8);
	return cudaGetLastError();
}

// ---- q/k/v preparation backward: RoPE transposed, then q/k norm ----

#define PREP_WARPS 4
#define PREP_MAX_HS 256

template <typename T>
__global__ void qkv_prep_bwd_kernel(T *dqkv, float *nq, float *nk, const T *raw, const float *bq, const float *bk,
				    const float *qnorm, const float *knorm, const float *cos, const float *sin,
				    const int32_t *pos, int NH, int NKV, int HS, float eps)
{
	__shared__ float buf[PREP_WARPS][2][PREP_MAX_HS];
	int t = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32, h2 = HS / 2;
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	const float *c = cos + (size_t)pos[t] * h2, *sn = sin + (size_t)pos[t] * h2;
	float *d = buf[warp][0], *x = buf[warp][1];
	for (int h = warp; h < NH + NKV; h += PREP_WARPS) {   // v's heads need nothing: bias is the identity
		int isq = h < NH, hb = isq ? h : h - NH;
		T *g = dqkv + (size_t)t * stride + (size_t)h * HS;
		for (int i = lane; i < h2; i += 32) {   // the transposed rotation
			float a = to_f(g[i]), b = to_f(g[i + h2]);
			d[i] = a * c[i] + b * sn[i];
			d[i + h2] = b * c[i] - a * sn[i];
		}
		__syncwarp();
		const float *nw = isq ? qnorm : knorm;
		if (nw) {
			const float *bias = isq ? bq : bk;
			const T *r = raw + (size_t)t * stride + (size_t)h * HS;
			float ss = 0, dot = 0;
			for (int i = lane; i < HS; i += 32) {
				x[i] = to_f(r[i]) + (bias ? bias[hb * HS + i] : 0.0f);
				ss += x[i] * x[i];
				dot += d[i] * nw[i] * x[i];
			}
			ss = warp_sum(ss);
			dot = warp_sum(dot);
			float rs = rsqrtf(ss / HS + eps), k = dot * rs * rs * rs / HS;
			float *prod = isq ? nq + ((size_t)t * NH + hb) * HS : nk + ((size_t)t * NKV + hb) * HS;
			for (int i = lane; i < HS; i += 32) {
				prod[i] = d[i] * x[i] * rs;
				d[i] = d[i] * nw[i] * rs - x[i] * k;
			}
			__syncwarp();
		}
		for (int i = lane; i < HS; i += 32)
			g[i] = from_f<T>(d[i]);
		__syncwarp();
	}
}

cudaError_t launch_qkv_prep_backward(void *dqkv, float *nq, float *nk, const void *raw, const float *bq,
				     const float *bk, const float *qnorm, const float *knorm, const float *cos,
				     const float *sin, const int32_t *pos, int T, int NH, int NKV, int HS, float eps,
				     int bf16flag, cudaStream_t s)
{
	if (HS > PREP_MAX_HS || HS % 2)
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (bf16flag)
		qkv_prep_bwd_kernel<bf16><<<T, 32 * PREP_WARPS, 0, s>>>((bf16 *)dqkv, nq, nk, (const bf16 *)raw, bq, bk,
									qnorm, knorm, cos, sin, pos, NH, NKV, HS, eps);
	else
		qkv_prep_bwd_kernel<float><<<T, 32 * PREP_WARPS, 0, s>>>((float *)dqkv, nq, nk, (const float *)raw, bq,
									 bk, qnorm, knorm, cos, sin, pos, NH, NKV, HS,
									 eps);
	return cudaGetLastError();
}

// ---- the LM head's rows: dlogits from dlogprob and dentropy ----
//
// With x = z / temp, p = softmax(x), lp_j = x_j - lse, H the entropy:
//   dx_j = g ([j == target] - p_j) - e p_j (lp_j + H),   dz_j = dx_j / temp.

// Eight logits a thread at a time where rows are 32-byte aligned (V a
// multiple of 8, as every real vocabulary is), one otherwise.
template <typename T>
__global__ void lmhead_bwd_kernel(T *dz, const float *z, const int32_t *targets, const float *temps,
				  const float *dlp, const float *dent, const float *lse, const float *ent, int V)
{
	size_t row = blockIdx.x;
	const float *zr = z + row * V;
	T *out = dz + row * V;
	float g = dlp[row], e = dent[row];
	int vec = V % 8 == 0;
	if (g == 0 && e == 0) {   // predicts nothing, or a token the loss ignores
		const float zero[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
		if (vec)
			for (int j = 8 * threadIdx.x; j < V; j += 8 * blockDim.x)
				store8(out + j, zero);
		else
			for (int j = threadIdx.x; j < V; j += blockDim.x)
				out[j] = from_f<T>(0.0f);
		return;
	}
	float inv = 1.0f / temps[row], L = lse[row], H = ent[row];
	int y = targets[row];
	if (vec)
		for (int j = 8 * threadIdx.x; j < V; j += 8 * blockDim.x) {
			float d[8];
			load8(zr + j, d);
#pragma unroll
			for (int k = 0; k < 8; k++) {
				float lp = d[k] * inv - L, p = expf(lp);
				d[k] = (-g * p - e * p * (lp + H) + (j + k == y ? g : 0.0f)) * inv;
			}
			store8(out + j, d);
		}
	else
		for (int j = threadIdx.x; j < V; j += blockDim.x) {
			float lp = zr[j] * inv - L, p = expf(lp);
			float d = -g * p - e * p * (lp + H) + (j == y ? g : 0.0f);
			out[j] = from_f<T>(d * inv);
		}
}

cudaError_t launch_lmhead_backward(void *dz, const float *z, const int32_t *targets, const float *temps,
				   const float *dlp, const float *dent, const float *lse, const float *ent, int n, int V,
				   int bf16flag, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	if (bf16flag)
		lmhead_bwd_kernel<bf16><<<n, THREADS, 0, s>>>((bf16 *)dz, z, targets, temps, dlp, dent, lse, ent, V);
	else
		lmhead_bwd_kernel<float><<<n, THREADS, 0, s>>>((float *)dz, z, targets, temps, dlp, dent, lse, ent, V);
	return cudaGetLastError();
}

// ---- embedding backward: dembed[id] += the rows of its tokens, in order ----

__global__ void embed_bwd_kernel(float *dembed, const float *dres, const int32_t *order, const int32_t *seg,
				 const int32_t *seg_id, int C)
{
	int u = blockIdx.x;
	float *d = dembed + (size_t)seg_id[u] * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) {
		float s = 0;
		for (int k = seg[u]; k < seg[u + 1]; k++)
			s += dres[(size_t)order[k] * C + c];
		d[c] += s;
	}
}

cudaError_t launch_embed_backward(float *dembed, const float *dres, const int32_t *order, const int32_t *seg,
				  const int32_t *seg_id, int nseg, int C, cudaStream_t s)
{
	if (nseg == 0)
		return cudaSuccess;
	embed_bwd_kernel<<<nseg, THREADS, 0, s>>>(dembed, dres, order, seg, seg_id, C);
	return cudaGetLastError();
}
