// attention_bwd_mma.cu: the backward of the tensor-core attention
// (attention_mma.cu) on tensor cores, bf16 in and out, fp32 accumulation,
// for head sizes 64 and 128. The same contract and the same three passes as
// the CUDA-core backward (attention_bwd.cu, its reference), deterministic and
// without atomics: D = rowsum(dO * O) per query and head; dQ per tile of 64
// queries and q head, walking the keys it sees; dK and dV per tile of 64 keys
// and kv head, walking the group's q heads in order and, for each, the
// queries that see those keys. P = exp(q.k scale - lse) is recomputed from
// the forward's log-sum-exp:
//
//     dV = P^T dO    dP = dO V^T    dS = P * (dP - D)    dQ = scale dS K    dK = scale dS^T Q
//
// Both kernels are laid out as the forward: 4 warps, each owning 16 rows of
// the block's 64 (queries for dQ, keys for dK and dV), fragments as in
// mma.cuh, the operands that are walked in shared memory with rows padded by
// 8 elements. The products whose k dimension is the tile's (dS K, P^T dO,
// dS^T Q) take their A fragments straight from the C fragments of the one
// before, rounded to bf16, as the forward does with P V. The dQ kernel walks
// keys in tiles of BK, the dK/dV kernel queries in tiles of BQ: 64 for head
// size 64, 32 for 128, which keeps the fp32 accumulators (two of HS/2 per
// thread) and the tile's scores in registers.
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "layers.cuh"
#include "mma.cuh"

#define LOG2E 1.4426950408889634f

// D (T NH) = rowsum(dout * out) in fp32, one warp per (token, head)
__global__ void attention_bwd_mma_dot_kernel(float *D, const bf16 *dout, const bf16 *out, int rows, int HS)
{
	int w = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
	if (w >= rows)   // the same for every lane of a warp
		return;
	const __nv_bfloat162 *a = (const __nv_bfloat162 *)(dout + (size_t)w * HS);
	const __nv_bfloat162 *b = (const __nv_bfloat162 *)(out + (size_t)w * HS);
	float s = 0;
	for (int i = lane; i < HS / 2; i += 32) {
		float2 x = __bfloat1622float2(a[i]), y = __bfloat1622float2(b[i]);
		s += x.x * y.x + x.y * y.y;
	}
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (lane == 0)
		D[w] = s;
}

// dQ: a block per (tile of 64 queries, q head), as the forward kernel.
template <int HS, int BK>
__global__ void __launch_bounds__(128)
attention_bwd_mma_dq_kernel(bf16 *dqkv, const bf16 *qkv, const bf16 *dout, const float *lse, const float *D,
			    const struct att_tile *tiles, int NH, int NKV, float sl2, float scale)
{
	constexpr int LD = HS + 8, KS = HS / 16, NT = HS / 8, SN = BK / 8;
	__shared__ __align__(16) bf16 ks[BK * LD], vs[BK * LD];
	struct att_tile tile = tiles[blockIdx.x];
	int h = blockIdx.y, kh = h / (NH / NKV);
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane >> 2, tig = lane & 3;
	int nq = min(ATT_TILE_Q, tile.len - tile.q0);
	int r0 = warp * 16 + gid, r1 = r0 + 8;   // this thread's two rows in the tile
	// rows past the sequence's end repeat its last query and are not written
	int p0 = tile.q0 + min(r0, nq - 1), p1 = tile.q0 + min(r1, nq - 1);
	size_t t0 = (size_t)tile.start + p0, t1 = (size_t)tile.start + p1;
	const bf16 *q0 = qkv + t0 * stride + (size_t)h * HS, *q1 = qkv + t1 * stride + (size_t)h * HS;
	const bf16 *g0 = dout + (t0 * NH + h) * HS, *g1 = dout + (t1 * NH + h) * HS;

	uint32_t qf[KS][4], gf[KS][4];   // Q and dO as A fragments
#pragma unroll
	for (int kk = 0; kk < KS; kk++) {
		qf[kk][0] = ld32(q0 + kk * 16 + tig * 2);
		qf[kk][1] = ld32(q1 + kk * 16 + tig * 2);
		qf[kk][2] = ld32(q0 + kk * 16 + 8 + tig * 2);
		qf[kk][3] = ld32(q1 + kk * 16 + 8 + tig * 2);
		gf[kk][0] = ld32(g0 + kk * 16 + tig * 2);
		gf[kk][1] = ld32(g1 + kk * 16 + tig * 2);
		gf[kk][2] = ld32(g0 + kk * 16 + 8 + tig * 2);
		gf[kk][3] = ld32(g1 + kk * 16 + 8 + tig * 2);
	}
	float L0 = lse[t0 * NH + h] * LOG2E, L1 = lse[t1 * NH + h] * LOG2E;
	float D0 = D[t0 * NH + h], D1 = D[t1 * NH + h];
	float dq[NT][4];
#pragma unroll
	for (int d = 0; d < NT; d++)
		dq[d][0] = dq[d][1] = dq[d][2] = dq[d][3] = 0.0f;

	int kend = tile.q0 + nq;   // keys 0 .. kend-1 are seen by some row here
	for (int k0 = 0; k0 < kend; k0 += BK) {
		__syncthreads();   // the previous tile is no longer read
		for (int c = threadIdx.x; c < BK * HS / 8; c += blockDim.x) {
			int j = c / (HS / 8), d8 = c % (HS / 8);
			uint4 kx = make_uint4(0, 0, 0, 0), vx = kx;   // zeros past the end: 0 * garbage could be NaN
			if (k0 + j < kend) {
				const bf16 *r = qkv + (size_t)(tile.start + k0 + j) * stride + (size_t)(NH + kh) * HS + d8 * 8;
				kx = *(const uint4 *)r;
				vx = *(const uint4 *)(r + (size_t)NKV * HS);
			}
			*(uint4 *)&ks[j * LD + d8 * 8] = kx;
			*(uint4 *)&vs[j * LD + d8 * 8] = vx;
		}
		__syncthreads();

		// S = Q K^T and dP = dO V^T for this warp's 16 rows and the tile's BK keys
		float s[SN][4], dp[SN][4];
#pragma unroll
		for (int n = 0; n < SN; n++) {
			s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
			dp[n][0] = dp[n][1] = dp[n][2] = dp[n][3] = 0.0f;
			const bf16 *krow = ks + (n * 8 + gid) * LD + tig * 2, *vrow = vs + (n * 8 + gid) * LD + tig * 2;
#pragma unroll
			for (int kk = 0; kk < KS; kk++) {
				mma16816(s[n], qf[kk], ld32(krow + kk * 16), ld32(krow + kk * 16 + 8));
				mma16816(dp[n], gf[kk], ld32(vrow + kk * 16), ld32(vrow + kk * 16 + 8));
			}
		}
		// dS = P (dP - D), P = 0 where the key is after the query (past the end included),
		// as the A fragments of dS K: key tiles 2j and 2j+1 make k-step j
		uint32_t sf[BK / 16][4];
#pragma unroll
		for (int n = 0; n < SN; n++) {
			float x[4];
#pragma unroll
			for (int e = 0; e < 2; e++) {
				int key = k0 + n * 8 + tig * 2 + e;
				float pa = key <= p0 ? exp2f(s[n][e] * sl2 - L0) : 0.0f;
				float pb = key <= p1 ? exp2f(s[n][2 + e] * sl2 - L1) : 0.0f;
				x[e] = pa * (dp[n][e] - D0);
				x[2 + e] = pb * (dp[n][2 + e] - D1);
			}
			sf[n / 2][(n % 2) * 2] = pack2f(x[0], x[1]);
			sf[n / 2][(n % 2) * 2 + 1] = pack2f(x[2], x[3]);
		}
		// dQ += dS K
#pragma unroll
		for (int j = 0; j < BK / 16; j++) {
			const bf16 *k0p = ks + (j * 16 + tig * 2) * LD + gid;
#pragma unroll
			for (int d = 0; d < NT; d++) {
				const bf16 *k = k0p + d * 8;
				mma16816(dq[d], sf[j], pack2(k[0], k[LD]), pack2(k[8 * LD], k[9 * LD]));
			}
		}
	}

	bf16 *out0 = dqkv + ((size_t)tile.start + tile.q0 + r0) * stride + (size_t)h * HS + tig * 2;
	bf16 *out1 = out0 + 8 * stride;
#pragma unroll
	for (int d = 0; d < NT; d++) {
		if (r0 < nq)
			*(uint32_t *)(out0 + d * 8) = pack2f(dq[d][0] * scale, dq[d][1] * scale);
		if (r1 < nq)
			*(uint32_t *)(out1 + d * 8) = pack2f(dq[d][2] * scale, dq[d][3] * scale);
	}
}

// dK, dV: a block per (tile of 64 keys, kv head); tile.q0 is the first key.
// The keys and values stay in shared memory; queries, their dO, lse and D
// come in tiles of BQ, for each q head of the group in turn.
template <int HS, int BQ>
__global__ void __launch_bounds__(128)
attention_bwd_mma_dkdv_kernel(bf16 *dqkv, const bf16 *qkv, const bf16 *dout, const float *lse, const float *D,
			      const struct att_tile *tiles, int NH, int NKV, float sl2, float scale)
{
	constexpr int LD = HS + 8, KS = HS / 16, NT = HS / 8, SN = BQ / 8;
	extern __shared__ __align__(16) unsigned char smem[];
	bf16 *ks = (bf16 *)smem, *vs = ks + ATT_TILE_Q * LD;   // (64, LD) each
	bf16 *qs = vs + ATT_TILE_Q * LD, *gs = qs + BQ * LD;    // (BQ, LD) each
	float *ls = (float *)(gs + BQ * LD), *dsum = ls + BQ;   // (BQ) each: lse log2(e), D
	struct att_tile tile = tiles[blockIdx.x];
	int kh = blockIdx.y, group = NH / NKV;
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane >> 2, tig = lane & 3;
	int nk = min(ATT_TILE_Q, tile.len - tile.q0);
	int r0 = warp * 16 + gid, r1 = r0 + 8;   // this thread's two keys in the tile
	int key0 = tile.q0 + r0, key1 = tile.q0 + r1;

	// the tile's keys and values, zeros past the sequence's end (those rows are not written)
	for (int c = threadIdx.x; c < ATT_TILE_Q * HS / 8; c += blockDim.x) {
		int j = c / (HS / 8), d8 = c % (HS / 8);
		uint4 kx = make_uint4(0, 0, 0, 0), vx = kx;
		if (j < nk) {
			const bf16 *r = qkv + (size_t)(tile.start + tile.q0 + j) * stride + (size_t)(NH + kh) * HS + d8 * 8;
			kx = *(const uint4 *)r;
			vx = *(const uint4 *)(r + (size_t)NKV * HS);
		}
		*(uint4 *)&ks[j * LD + d8 * 8] = kx;
		*(uint4 *)&vs[j * LD + d8 * 8] = vx;
	}
	const bf16 *ka = ks + r0 * LD + tig * 2, *va = vs + r0 * LD + tig * 2;   // K, V as A fragments

	float dk[NT][4], dv[NT][4];
#pragma unroll
	for (int d = 0; d < NT; d++) {
		dk[d][0] = dk[d][1] = dk[d][2] = dk[d][3] = 0.0f;
		dv[d][0] = dv[d][1] = dv[d][2] = dv[d][3] = 0.0f;
	}
	for (int h = kh * group; h < (kh + 1) * group; h++)
		for (int i0 = tile.q0; i0 < tile.len; i0 += BQ) {   // queries at or after the tile's first key
			__syncthreads();   // the previous query tile is no longer read (and K, V are stored)
			for (int c = threadIdx.x; c < BQ * HS / 8; c += blockDim.x) {
				int j = c / (HS / 8), d8 = c % (HS / 8);
				uint4 qx = make_uint4(0, 0, 0, 0), gx = qx;
				if (i0 + j < tile.len) {
					size_t t = (size_t)tile.start + i0 + j;
					qx = *(const uint4 *)(qkv + t * stride + (size_t)h * HS + d8 * 8);
					gx = *(const uint4 *)(dout + (t * NH + h) * HS + d8 * 8);
				}
				*(uint4 *)&qs[j * LD + d8 * 8] = qx;
				*(uint4 *)&gs[j * LD + d8 * 8] = gx;
			}
			for (int j = threadIdx.x; j < BQ; j += blockDim.x) {
				size_t t = (size_t)tile.start + i0 + j;
				ls[j] = i0 + j < tile.len ? lse[t * NH + h] * LOG2E : 0.0f;
				dsum[j] = i0 + j < tile.len ? D[t * NH + h] : 0.0f;
			}
			__syncthreads();

			// S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys and the BQ queries
			float st[SN][4], dpt[SN][4];
#pragma unroll
			for (int n = 0; n < SN; n++) {
				st[n][0] = st[n][1] = st[n][2] = st[n][3] = 0.0f;
				dpt[n][0] = dpt[n][1] = dpt[n][2] = dpt[n][3] = 0.0f;
			}
#pragma unroll
			for (int kk = 0; kk < KS; kk++) {
				uint32_t af[4] = { ld32(ka + kk * 16), ld32(ka + 8 * LD + kk * 16), ld32(ka + kk * 16 + 8),
						   ld32(ka + 8 * LD + kk * 16 + 8) };
				uint32_t bf[4] = { ld32(va + kk * 16), ld32(va + 8 * LD + kk * 16), ld32(va + kk * 16 + 8),
						   ld32(va + 8 * LD + kk * 16 + 8) };
#pragma unroll
				for (int n = 0; n < SN; n++) {
					const bf16 *qrow = qs + (n * 8 + gid) * LD + tig * 2 + kk * 16;
					const bf16 *grow = gs + (n * 8 + gid) * LD + tig * 2 + kk * 16;
					mma16816(st[n], af, ld32(qrow), ld32(qrow + 8));
					mma16816(dpt[n], bf, ld32(grow), ld32(grow + 8));
				}
			}
			// P^T and dS^T = P^T (dP^T - D), 0 where the query is before the key or past the
			// sequence's end, as A fragments: query tiles 2j and 2j+1 make k-step j
			uint32_t pf[BQ / 16][4], sf[BQ / 16][4];
#pragma unroll
			for (int n = 0; n < SN; n++) {
				float p[4], x[4];
#pragma unroll
				for (int e = 0; e < 2; e++) {
					int j = n * 8 + tig * 2 + e, q = i0 + j;
					float L = ls[j], Dq = dsum[j];
					p[e] = q >= key0 && q < tile.len ? exp2f(st[n][e] * sl2 - L) : 0.0f;
					p[2 + e] = q >= key1 && q < tile.len ? exp2f(st[n][2 + e] * sl2 - L) : 0.0f;
					x[e] = p[e] * (dpt[n][e] - Dq);
					x[2 + e] = p[2 + e] * (dpt[n][2 + e] - Dq);
				}
				pf[n / 2][(n % 2) * 2] = pack2f(p[0], p[1]);
				pf[n / 2][(n % 2) * 2 + 1] = pack2f(p[2], p[3]);
				sf[n / 2][(n % 2) * 2] = pack2f(x[0], x[1]);
				sf[n / 2][(n % 2) * 2 + 1] = pack2f(x[2], x[3]);
			}
			// dV += P^T dO, dK += dS^T Q
#pragma unroll
			for (int j = 0; j < BQ / 16; j++) {
				const bf16 *g0 = gs + (j * 16 + tig * 2) * LD + gid, *q0 = qs + (j * 16 + tig * 2) * LD + gid;
#pragma unroll
				for (int d = 0; d < NT; d++) {
					const bf16 *g = g0 + d * 8, *q = q0 + d * 8;
					mma16816(dv[d], pf[j], pack2(g[0], g[LD]), pack2(g[8 * LD], g[9 * LD]));
					mma16816(dk[d], sf[j], pack2(q[0], q[LD]), pack2(q[8 * LD], q[9 * LD]));
				}
			}
		}

	bf16 *dk0 = dqkv + ((size_t)tile.start + key0) * stride + (size_t)(NH + kh) * HS + tig * 2;
	bf16 *dk1 = dk0 + 8 * stride, *dv0 = dk0 + (size_t)NKV * HS, *dv1 = dk1 + (size_t)NKV * HS;
#pragma unroll
	for (int d = 0; d < NT; d++) {
		if (r0 < nk) {
			*(uint32_t *)(dk0 + d * 8) = pack2f(dk[d][0] * scale, dk[d][1] * scale);
			*(uint32_t *)(dv0 + d * 8) = pack2f(dv[d][0], dv[d][1]);
		}
		if (r1 < nk) {
			*(uint32_t *)(dk1 + d * 8) = pack2f(dk[d][2] * scale, dk[d][3] * scale);
			*(uint32_t *)(dv1 + d * 8) = pack2f(dv[d][2], dv[d][3]);
		}
	}
}

template <int HS>
static cudaError_t backward_mma_hs(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse, const float *D,
				   const struct att_tile *tiles, int ntiles, int NH, int NKV, cudaStream_t s)
{
	constexpr int B = HS == 64 ? 64 : 32;   // BK of the dQ kernel, BQ of the dK/dV kernel
	float scale = 1.0f / sqrtf((float)HS), sl2 = scale * LOG2E;
	size_t smem = (size_t)(2 * ATT_TILE_Q + 2 * B) * (HS + 8) * sizeof(bf16) + 2 * B * sizeof(float);
	// over the 48 KB a launch gets without asking for head size 128 (51 KB)
	cudaError_t err = cudaFuncSetAttribute(attention_bwd_mma_dkdv_kernel<HS, B>,
					       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
	if (err != cudaSuccess)
		return err;
	attention_bwd_mma_dq_kernel<HS, B><<<dim3(ntiles, NH), 128, 0, s>>>(dqkv, qkv, dout, lse, D, tiles, NH, NKV,
									       sl2, scale);
	attention_bwd_mma_dkdv_kernel<HS, B><<<dim3(ntiles, NKV), 128, smem, s>>>(dqkv, qkv, dout, lse, D, tiles, NH,
										     NKV, sl2, scale);
	return cudaGetLastError();
}

cudaError_t launch_attention_backward_mma(void *dqkv, const void *dout, const void *out, const void *qkv,
					  const float *lse, float *D, const struct att_tile *tiles, int ntiles, int T,
					  int NH, int NKV, int HS, cudaStream_t s)
{
	if (ntiles == 0 || T == 0)
		return cudaSuccess;
	if (NKV <= 0 || NH % NKV || !attention_mma_head_size_ok(HS))
		return cudaErrorInvalidValue;
	int rows = T * NH;
	attention_bwd_mma_dot_kernel<<<(rows + 7) / 8, 256, 0, s>>>(D, (const bf16 *)dout, (const bf16 *)out, rows,
								     HS);
	if (HS == 64)
		return backward_mma_hs<64>((bf16 *)dqkv, (const bf16 *)dout, (const bf16 *)qkv, lse, D, tiles, ntiles, NH,
					   NKV, s);
	return backward_mma_hs<128>((bf16 *)dqkv, (const bf16 *)dout, (const bf16 *)qkv, lse, D, tiles, ntiles, NH, NKV,
				    s);
}
