// attention_bwd.cu: the backward of the CUDA-core attention (layers.cu), in
// fp32 arithmetic over fp32 or bf16 storage: the reference the tensor-core
// backward will be tested against, as the CUDA-core forward is for the
// tensor-core forward.
//
// FlashAttention's backward, deterministic and without atomics, in three
// kernels (cuda.md 1.7): D = rowsum(dO * O) per query and head; dQ per tile
// of 64 queries and q head, walking the keys it sees; dK and dV per tile of
// 64 keys and kv head, walking the group's q heads and the queries that see
// those keys. Each recomputes the probabilities from q, k and the forward's
// log-sum-exp, P = exp(q.k scale - lse), so no (T, T) matrix exists:
//
//     dV = P^T dO    dP = dO V^T    dS = P * (dP - D)    dQ = scale dS K    dK = scale dS^T Q
#include <math.h>

#include "device.cuh"
#include "layers.cuh"

#define BWD_BQ 32   // queries per shared-memory tile in the dK/dV kernel

// D (T NH) = rowsum(dout * out), one warp per (token, head)
template <typename T>
__global__ void attention_bwd_dot_kernel(float *D, const T *dout, const T *out, int rows, int HS)
{
	int w = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
	if (w >= rows)   // the same for every lane of a warp
		return;
	const T *a = dout + (size_t)w * HS, *b = out + (size_t)w * HS;
	float s = 0;
	for (int i = lane; i < HS; i += 32)
		s += to_f(a[i]) * to_f(b[i]);
	s = warp_sum(s);
	if (lane == 0)
		D[w] = s;
}

// dQ: a block per (tile of queries, q head), laid out as the forward kernel
template <int HS, typename T>
__global__ void __launch_bounds__(ATT_TILE_Q * att_tpq(HS))
attention_bwd_dq_kernel(T *dqkv, const T *qkv, const T *dout, const float *lse, const float *D,
			const struct att_tile *tiles, int NH, int NKV, float scale)
{
	constexpr int TPQ = att_tpq(HS), DPT = HS / TPQ, C4 = DPT / 4;
	__shared__ float4 ks[ATT_BK][HS / 4], vs[ATT_BK][HS / 4];
	struct att_tile tile = tiles[blockIdx.x];
	int h = blockIdx.y, kh = h / (NH / NKV);
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	int qi = threadIdx.x / TPQ, part = threadIdx.x % TPQ;
	int nq = min(ATT_TILE_Q, tile.len - tile.q0);
	int qpos = tile.q0 + min(qi, nq - 1);   // rows past the end repeat the last and write nothing
	size_t row = (size_t)tile.start + qpos;
	const T *qrow = qkv + row * stride + (size_t)h * HS, *grow = dout + (row * NH + h) * HS;
	float4 q[C4], g[C4], dq[C4];
#pragma unroll
	for (int c = 0; c < C4; c++) {
		q[c] = load4(qrow + (c * TPQ + part) * 4);
		g[c] = load4(grow + (c * TPQ + part) * 4);
		dq[c] = make_float4(0, 0, 0, 0);
	}
	float L = lse[row * NH + h], Dq = D[row * NH + h];
	int kend = tile.q0 + nq;
	for (int k0 = 0; k0 < kend; k0 += ATT_BK) {
		__syncthreads();
		load_kv_tile<HS>(ks, vs, qkv, stride, tile.start, k0, kend, NH, NKV, kh);
		__syncthreads();
		for (int j = 0; j < ATT_BK; j++) {
			float sk = 0, gv = 0;
#pragma unroll
			for (int c = 0; c < C4; c++) {
				sk += dot4(q[c], ks[j][c * TPQ + part]);
				gv += dot4(g[c], vs[j][c * TPQ + part]);
			}
			sk = row_sum<TPQ>(sk);
			gv = row_sum<TPQ>(gv);
			float p = k0 + j <= qpos ? expf(sk * scale - L) : 0.0f;
			float ds = p * (gv - Dq);
#pragma unroll
			for (int c = 0; c < C4; c++)
				axpy4(&dq[c], ds, ks[j][c * TPQ + part]);
		}
	}
	if (qi >= nq)
		return;
	T *out = dqkv + row * stride + (size_t)h * HS;
#pragma unroll
	for (int c = 0; c < C4; c++)
		store4(out + (c * TPQ + part) * 4,
		       make_float4(dq[c].x * scale, dq[c].y * scale, dq[c].z * scale, dq[c].w * scale));
}

// dK, dV: a block per (tile of 64 keys, kv head); tile.q0 is the first key.
// Threads hold a key's k, v and their gradients; queries come in tiles of
// BWD_BQ with their dO, lse and D, for each q head of the group in turn.
template <int HS, typename T>
__global__ void __launch_bounds__(ATT_TILE_Q * att_tpq(HS))
attention_bwd_dkdv_kernel(T *dqkv, const T *qkv, const T *dout, const float *lse, const float *D,
			  const struct att_tile *tiles, int NH, int NKV, float scale)
{
	constexpr int TPQ = att_tpq(HS), DPT = HS / TPQ, C4 = DPT / 4;
	__shared__ float4 qs[BWD_BQ][HS / 4], gs[BWD_BQ][HS / 4];
	__shared__ float ls[BWD_BQ], dsum[BWD_BQ];
	struct att_tile tile = tiles[blockIdx.x];
	int kh = blockIdx.y, group = NH / NKV;
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	int ki = threadIdx.x / TPQ, part = threadIdx.x % TPQ;
	int nk = min(ATT_TILE_Q, tile.len - tile.q0);
	int kpos = tile.q0 + min(ki, nk - 1);   // keys past the end repeat the last and write nothing
	size_t krow = (size_t)tile.start + kpos;
	const T *kp = qkv + krow * stride + (size_t)(NH + kh) * HS, *vp = kp + (size_t)NKV * HS;
	float4 k[C4], v[C4], dk[C4], dv[C4];
#pragma unroll
	for (int c = 0; c < C4; c++) {
		k[c] = load4(kp + (c * TPQ + part) * 4);
		v[c] = load4(vp + (c * TPQ + part) * 4);
		dk[c] = dv[c] = make_float4(0, 0, 0, 0);
	}
	for (int h = kh * group; h < (kh + 1) * group; h++)
		for (int i0 = tile.q0; i0 < tile.len; i0 += BWD_BQ) {   // queries at or after the tile's first key
			__syncthreads();
			for (int e = threadIdx.x; e < BWD_BQ * (HS / 4); e += blockDim.x) {
				int j = e / (HS / 4), d4 = e % (HS / 4);
				float4 qx = make_float4(0, 0, 0, 0), gx = qx;
				if (i0 + j < tile.len) {
					size_t r = (size_t)tile.start + i0 + j;
					qx = load4(qkv + r * stride + (size_t)h * HS + d4 * 4);
					gx = load4(dout + (r * NH + h) * HS + d4 * 4);
				}
				qs[j][d4] = qx;
				gs[j][d4] = gx;
			}
			for (int j = threadIdx.x; j < BWD_BQ; j += blockDim.x) {
				size_t r = (size_t)tile.start + i0 + j;
				ls[j] = i0 + j < tile.len ? lse[r * NH + h] : 0.0f;
				dsum[j] = i0 + j < tile.len ? D[r * NH + h] : 0.0f;
			}
			__syncthreads();
			for (int j = 0; j < BWD_BQ; j++) {
				float sq = 0, gv = 0;
#pragma unroll
				for (int c = 0; c < C4; c++) {
					sq += dot4(qs[j][c * TPQ + part], k[c]);
					gv += dot4(gs[j][c * TPQ + part], v[c]);
				}
				sq = row_sum<TPQ>(sq);
				gv = row_sum<TPQ>(gv);
				int i = i0 + j;
				float p = i >= kpos && i < tile.len ? expf(sq * scale - ls[j]) : 0.0f;
				float ds = p * (gv - dsum[j]);
#pragma unroll
				for (int c = 0; c < C4; c++) {
					axpy4(&dv[c], p, gs[j][c * TPQ + part]);
					axpy4(&dk[c], ds, qs[j][c * TPQ + part]);
				}
			}
		}
	if (ki >= nk)
		return;
	T *dkp = dqkv + krow * stride + (size_t)(NH + kh) * HS, *dvp = dkp + (size_t)NKV * HS;
#pragma unroll
	for (int c = 0; c < C4; c++) {
		store4(dkp + (c * TPQ + part) * 4,
		       make_float4(dk[c].x * scale, dk[c].y * scale, dk[c].z * scale, dk[c].w * scale));
		store4(dvp + (c * TPQ + part) * 4, dv[c]);
	}
}

template <int HS, typename T>
static cudaError_t backward_hs(void *dqkv, const void *dout, const void *qkv, const float *lse, const float *D,
			       const struct att_tile *tiles, int ntiles, int NH, int NKV, cudaStream_t s)
{
	int threads = ATT_TILE_Q * att_tpq(HS);
	float scale = 1.0f / sqrtf((float)HS);
	attention_bwd_dq_kernel<HS, T><<<dim3(ntiles, NH), threads, 0, s>>>((T *)dqkv, (const T *)qkv,
									      (const T *)dout, lse, D, tiles, NH, NKV,
									      scale);
	attention_bwd_dkdv_kernel<HS, T><<<dim3(ntiles, NKV), threads, 0, s>>>((T *)dqkv, (const T *)qkv,
										 (const T *)dout, lse, D, tiles, NH,
										 NKV, scale);
	return cudaGetLastError();
}

template <typename T>
static cudaError_t backward_t(void *dqkv, const void *dout, const void *out, const void *qkv, const float *lse,
			      float *D, const struct att_tile *tiles, int ntiles, int T_, int NH, int NKV, int HS,
			      cudaStream_t s)
{
	int rows = T_ * NH;
	attention_bwd_dot_kernel<T><<<(rows + 7) / 8, 256, 0, s>>>(D, (const T *)dout, (const T *)out, rows, HS);
	switch (HS) {
	case 16: return backward_hs<16, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 24: return backward_hs<24, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 32: return backward_hs<32, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 48: return backward_hs<48, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 64: return backward_hs<64, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 80: return backward_hs<80, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 96: return backward_hs<96, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	case 128: return backward_hs<128, T>(dqkv, dout, qkv, lse, D, tiles, ntiles, NH, NKV, s);
	default: return cudaErrorInvalidValue;
	}
}

cudaError_t launch_attention_backward(void *dqkv, const void *dout, const void *out, const void *qkv,
				      const float *lse, float *D, const struct att_tile *tiles, int ntiles, int T,
				      int NH, int NKV, int HS, int bf16flag, cudaStream_t s)
{
	if (ntiles == 0 || T == 0)
		return cudaSuccess;
	if (NKV <= 0 || NH % NKV || !attention_head_size_ok(HS))
		return cudaErrorInvalidValue;
	return bf16flag ? backward_t<bf16>(dqkv, dout, out, qkv, lse, D, tiles, ntiles, T, NH, NKV, HS, s)
			: backward_t<float>(dqkv, dout, out, qkv, lse, D, tiles, ntiles, T, NH, NKV, HS, s);
}
