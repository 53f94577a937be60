// layers.cu: see layers.cuh. Plain kernels first, written for clarity over
// the last percent: one block per row for the norms, one warp per head for
// the q/k preparation, and attention on CUDA cores in the manner of
// FlashAttention (tiles of keys in shared memory, an online softmax in
// fp32), which never holds a (T, T) matrix.
#include <cuda_bf16.h>
#include <math.h>

#include "device.cuh"
#include "layers.cuh"

// ---- embedding ----

template <typename T>
__global__ void embed_kernel(float *resid, const T *embed, const int32_t *ids, int C)
{
	const T *row = embed + (size_t)ids[blockIdx.x] * C;
	float *out = resid + (size_t)blockIdx.x * C;
	for (int i = threadIdx.x; i < C; i += blockDim.x)
		out[i] = to_f(row[i]);
}

cudaError_t launch_embed(float *resid, const void *embed, const int32_t *ids, int T, int C, int bf16flag,
			 cudaStream_t s)
{
	if (T == 0)
		return cudaSuccess;
	if (bf16flag)
		embed_kernel<bf16><<<T, 256, 0, s>>>(resid, (const bf16 *)embed, ids, C);
	else
		embed_kernel<float><<<T, 256, 0, s>>>(resid, (const float *)embed, ids, C);
	return cudaGetLastError();
}

// ---- RMSNorm: one warp per row, four columns a lane at a time ----
//
// (C a multiple of 4, which gpu_model_create asks.) A warp's shuffles sum
// the row, where a block per row waited on two barriers for a few values a
// thread; the second read of the row comes from L1.

#define NORM_WARPS 8

template <typename T>
__global__ void rmsnorm_kernel(T *out, const float *in, const float *w, int N, int C, float eps)
{
	int row = blockIdx.x * NORM_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	if (row >= N)
		return;
	const float *x = in + (size_t)row * C;
	T *y = out + (size_t)row * C;
	float ss = 0;
	for (int c = 4 * lane; c < C; c += 128) {
		float4 v = load4(x + c);
		ss += dot4(v, v);
	}
	float r = rsqrtf(warp_sum(ss) / C + eps);
	for (int c = 4 * lane; c < C; c += 128) {
		float4 v = load4(x + c), g = load4(w + c);
		store4(y + c, make_float4(g.x * (v.x * r), g.y * (v.y * r), g.z * (v.z * r), g.w * (v.w * r)));
	}
}

cudaError_t launch_rmsnorm(void *out, const float *in, const float *w, int N, int C, float eps, int bf16flag,
			   cudaStream_t s)
{
	if (N == 0)
		return cudaSuccess;
	int blocks = (N + NORM_WARPS - 1) / NORM_WARPS;
	if (bf16flag)
		rmsnorm_kernel<bf16><<<blocks, 32 * NORM_WARPS, 0, s>>>((bf16 *)out, in, w, N, C, eps);
	else
		rmsnorm_kernel<float><<<blocks, 32 * NORM_WARPS, 0, s>>>((float *)out, in, w, N, C, eps);
	return cudaGetLastError();
}

// ---- q/k/v: bias, q/k norm, RoPE; one warp per head of one token ----

#define PREP_WARPS 4
#define PREP_MAX_HS 256

template <typename T>
__global__ void qkv_prep_kernel(T *qkv, const float *bq, const float *bk, const float *bv, const float *qnorm,
				const float *knorm, const float *cos, const float *sin, const int32_t *pos, int NH,
				int NKV, int HS, float eps)
{
	__shared__ float buf[PREP_WARPS][PREP_MAX_HS];
	int t = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32, h2 = HS / 2;
	int nheads = NH + 2 * NKV;
	T *row = qkv + (size_t)t * nheads * HS;
	const float *c = cos + (size_t)pos[t] * h2, *sn = sin + (size_t)pos[t] * h2;
	float *v = buf[warp];
	for (int h = warp; h < nheads; h += PREP_WARPS) {
		int isq = h < NH, isk = !isq && h < NH + NKV;
		const float *bias = isq ? bq : isk ? bk : bv;
		int hb = isq ? h : isk ? h - NH : h - NH - NKV;   // head index within q, k or v
		T *x = row + (size_t)h * HS;
		for (int i = lane; i < HS; i += 32)
			v[i] = to_f(x[i]) + (bias ? bias[hb * HS + i] : 0.0f);
		__syncwarp();
		const float *nw = isq ? qnorm : isk ? knorm : NULL;
		if (nw) {
			float ss = 0;
			for (int i = lane; i < HS; i += 32)
				ss += v[i] * v[i];
			float r = rsqrtf(warp_sum(ss) / HS + eps);
			__syncwarp();
			for (int i = lane; i < HS; i += 32)
				v[i] = nw[i] * (v[i] * r);
			__syncwarp();
		}
		if (isq || isk) {
			for (int i = lane; i < h2; i += 32) {
				float a = v[i], b = v[i + h2];
				x[i] = from_f<T>(a * c[i] - b * sn[i]);
				x[i + h2] = from_f<T>(b * c[i] + a * sn[i]);
			}
		} else {
			for (int i = lane; i < HS; i += 32)
				x[i] = from_f<T>(v[i]);
		}
		__syncwarp();   // v is rewritten by the next head
	}
}

cudaError_t launch_qkv_prep(void *qkv, const float *bq, const float *bk, const float *bv, const float *qnorm,
			    const float *knorm, const float *cos, const float *sin, const int32_t *pos, int T,
			    int NH, int NKV, int HS, float eps, int bf16flag, cudaStream_t s)
{
	if (HS > PREP_MAX_HS || HS % 2)
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (bf16flag)
		qkv_prep_kernel<bf16><<<T, 32 * PREP_WARPS, 0, s>>>((bf16 *)qkv, bq, bk, bv, qnorm, knorm, cos, sin,
								     pos, NH, NKV, HS, eps);
	else
		qkv_prep_kernel<float><<<T, 32 * PREP_WARPS, 0, s>>>((float *)qkv, bq, bk, bv, qnorm, knorm, cos, sin,
								      pos, NH, NKV, HS, eps);
	return cudaGetLastError();
}

// ---- bias over rows, SwiGLU ----

__global__ void add_bias_kernel(float *x, const float *b, size_t total, int n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
		x[i] += b[i % n];
}

cudaError_t launch_add_bias(float *x, const float *b, int T, int n, cudaStream_t s)
{
	size_t total = (size_t)T * n;
	if (total == 0)
		return cudaSuccess;
	int blocks = (int)((total + 255) / 256 < 65536 ? (total + 255) / 256 : 65536);
	add_bias_kernel<<<blocks, 256, 0, s>>>(x, b, total, n);
	return cudaGetLastError();
}

// Eight elements a thread (I a multiple of 8, which gpu_model_create
// asks), over the whole (T, I) output: one 16-byte load of gate and of up
// where a block per row with scalar loads left two thirds of the memory's
// speed unused.
template <typename T>
__global__ void swiglu_kernel(T *out, const T *gu, int I, size_t n8)
{
	size_t step = (size_t)gridDim.x * blockDim.x;
	for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n8; e += step) {
		size_t t = e / (I / 8), i = e % (I / 8) * 8;
		float g[8], u[8];
		load8(gu + t * 2 * I + i, g);
		load8(gu + t * 2 * I + I + i, u);
#pragma unroll
		for (int k = 0; k < 8; k++)
			g[k] = g[k] / (1.0f + expf(-g[k])) * u[k];
		store8(out + t * I + i, g);
	}
}

cudaError_t launch_swiglu(void *out, const void *gu, int T, int I, int bf16flag, cudaStream_t s)
{
	if (T == 0)
		return cudaSuccess;
	size_t n8 = (size_t)T * I / 8;
	if (bf16flag)
		swiglu_kernel<bf16><<<elementwise_blocks(n8), 256, 0, s>>>((bf16 *)out, (const bf16 *)gu, I, n8);
	else
		swiglu_kernel<float><<<elementwise_blocks(n8), 256, 0, s>>>((float *)out, (const float *)gu, I, n8);
	return cudaGetLastError();
}

// ---- attention ----
//
// A block serves ATT_TILE_Q queries of one sequence and one q head. Each
// query has TPQ threads, each holding DPT of its HS dimensions (q and the
// output accumulator in registers), interleaved by 4 so that the threads of
// one query read neighbouring words of shared memory. Keys and values come
// in tiles of BK into shared memory, converted to fp32; a tile's scores go
// into registers, then one rescale of the running (max, sum, output) per
// tile. Every query sees the sequence's first key, so the running max is
// finite after the first tile and no exp(-inf - -inf) arises. Threads past
// the tile's last query repeat that query and write nothing, so all lanes
// take part in the shuffles.

template <int HS, typename T>
__global__ void __launch_bounds__(ATT_TILE_Q * att_tpq(HS))
attention_kernel(T *out, float *lse, const T *qkv, const struct att_tile *tiles, int NH, int NKV, float scale)
{
	constexpr int TPQ = att_tpq(HS), DPT = HS / TPQ, C4 = DPT / 4;
	__shared__ float4 ks[ATT_BK][HS / 4], vs[ATT_BK][HS / 4];
	struct att_tile tile = tiles[blockIdx.x];
	int h = blockIdx.y, kh = h / (NH / NKV);
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	int qi = threadIdx.x / TPQ, part = threadIdx.x % TPQ;
	int nq = min(ATT_TILE_Q, tile.len - tile.q0);
	int qpos = tile.q0 + min(qi, nq - 1);
	const T *qrow = qkv + (size_t)(tile.start + qpos) * stride + (size_t)h * HS;

	float4 q[C4], acc[C4];
#pragma unroll
	for (int c = 0; c < C4; c++) {
		float4 x = load4(qrow + (c * TPQ + part) * 4);
		q[c] = make_float4(x.x * scale, x.y * scale, x.z * scale, x.w * scale);
		acc[c] = make_float4(0, 0, 0, 0);
	}
	float m = -INFINITY, l = 0;
	int kend = tile.q0 + nq;   // keys 0 .. kend-1 of the sequence are seen by some query here
	for (int k0 = 0; k0 < kend; k0 += ATT_BK) {
		__syncthreads();   // the previous tile is no longer read
		load_kv_tile<HS>(ks, vs, qkv, stride, tile.start, k0, kend, NH, NKV, kh);
		__syncthreads();

		float s[ATT_BK], mt = -INFINITY;
#pragma unroll
		for (int j = 0; j < ATT_BK; j++) {
			float dot = 0;
#pragma unroll
			for (int c = 0; c < C4; c++)
				dot += dot4(q[c], ks[j][c * TPQ + part]);
			dot = row_sum<TPQ>(dot);
			s[j] = k0 + j <= qpos ? dot : -INFINITY;
			mt = fmaxf(mt, s[j]);
		}
		float mn = fmaxf(m, mt), corr = __expf(m - mn);
		l *= corr;
#pragma unroll
		for (int c = 0; c < C4; c++) {
			acc[c].x *= corr;
			acc[c].y *= corr;
			acc[c].z *= corr;
			acc[c].w *= corr;
		}
#pragma unroll
		for (int j = 0; j < ATT_BK; j++) {
			float p = __expf(s[j] - mn);
			l += p;
#pragma unroll
			for (int c = 0; c < C4; c++) {
				float4 v = vs[j][c * TPQ + part];
				acc[c].x += p * v.x;
				acc[c].y += p * v.y;
				acc[c].z += p * v.z;
				acc[c].w += p * v.w;
			}
		}
		m = mn;
	}
	if (qi >= nq)
		return;
	if (lse && part == 0)   // of the scaled scores, natural log: what the backward recomputes P from
		lse[(size_t)(tile.start + qpos) * NH + h] = m + logf(l);
	float inv = 1.0f / l;
	T *o = out + (size_t)(tile.start + qpos) * NH * HS + (size_t)h * HS;
#pragma unroll
	for (int c = 0; c < C4; c++) {
		int d = (c * TPQ + part) * 4;
		o[d] = from_f<T>(acc[c].x * inv);
		o[d + 1] = from_f<T>(acc[c].y * inv);
		o[d + 2] = from_f<T>(acc[c].z * inv);
		o[d + 3] = from_f<T>(acc[c].w * inv);
	}
}

template <int HS>
static void attention_hs(void *out, float *lse, const void *qkv, const struct att_tile *tiles, int ntiles, int NH,
			 int NKV, int bf16flag, cudaStream_t s)
{
	dim3 grid(ntiles, NH);
	int threads = ATT_TILE_Q * att_tpq(HS);
	float scale = 1.0f / sqrtf((float)HS);
	if (bf16flag)
		attention_kernel<HS, bf16><<<grid, threads, 0, s>>>((bf16 *)out, lse, (const bf16 *)qkv, tiles, NH,
								   NKV, scale);
	else
		attention_kernel<HS, float><<<grid, threads, 0, s>>>((float *)out, lse, (const float *)qkv, tiles, NH,
								    NKV, scale);
}

int attention_head_size_ok(int HS)
{
	return HS == 16 || HS == 24 || HS == 32 || HS == 48 || HS == 64 || HS == 80 || HS == 96 || HS == 128;
}

cudaError_t launch_attention(void *out, float *lse, const void *qkv, const struct att_tile *tiles, int ntiles,
			     int NH, int NKV, int HS, int bf16flag, cudaStream_t s)
{
	if (ntiles == 0)
		return cudaSuccess;
	if (NKV <= 0 || NH % NKV)
		return cudaErrorInvalidValue;
	switch (HS) {
	case 16: attention_hs<16>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 24: attention_hs<24>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 32: attention_hs<32>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 48: attention_hs<48>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 64: attention_hs<64>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 80: attention_hs<80>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 96: attention_hs<96>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	case 128: attention_hs<128>(out, lse, qkv, tiles, ntiles, NH, NKV, bf16flag, s); break;
	default: return cudaErrorInvalidValue;
	}
	return cudaGetLastError();
}
