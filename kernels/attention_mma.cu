// attention_mma.cu: the bf16 attention forward on tensor cores, in the
// manner of FlashAttention-2, for head sizes 64 and 128 (see layers.cuh for
// the contract, which it shares with the CUDA-core kernel in layers.cu, its
// reference in tests/cuda/test_cuda_model.c).
//
// A block of 4 warps serves one tile of 64 queries of one sequence for one
// q head; each warp owns 16 query rows. Q stays in registers as mma A
// fragments. Keys and values come in tiles of 64 through shared memory
// (rows padded by 8 elements, so that the fragment loads below hit 32
// different banks); S = Q K^T and O += P V are mma.sync.m16n8k16 with bf16
// inputs and fp32 accumulators; the online softmax (scale folded into
// exp2) runs on S's fragments in registers, and P becomes the A fragment of
// the next product without leaving them. The thread layout of fragments is
// PTX's: lane = 4 * gid + tig, a thread holds rows gid and gid + 8 and
// columns 2 tig, 2 tig + 1 (+ 8 for the second half of k). With lse not
// NULL it also writes each query's log-sum-exp of its scaled scores, natural
// log, as the CUDA-core kernel does: what the backward (attention_bwd_mma.cu)
// recomputes the probabilities from.
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "layers.cuh"
#include "mma.cuh"

#define MMA_BR 64   // queries per block (== ATT_TILE_Q)
#define MMA_BC 64   // keys per tile
static_assert(MMA_BR == ATT_TILE_Q, "a block serves one tile of the host's tile list");

template <int HS>
__global__ void __launch_bounds__(128)
attention_mma_kernel(bf16 *out, float *lse, const bf16 *qkv, const struct att_tile *tiles, int NH, int NKV,
		     float sl2)
{
	constexpr int LD = HS + 8, KS = HS / 16, NT = HS / 8, SN = MMA_BC / 8;
	__shared__ __align__(16) bf16 ks[MMA_BC * LD], vs[MMA_BC * LD];
	struct att_tile tile = tiles[blockIdx.x];
	int h = blockIdx.y, kh = h / (NH / NKV);
	size_t stride = (size_t)(NH + 2 * NKV) * HS;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane >> 2, tig = lane & 3;
	int nq = min(MMA_BR, tile.len - tile.q0);
	int r0 = warp * 16 + gid, r1 = r0 + 8;   // this thread's two rows in the tile
	// rows past the sequence's end repeat its last query and are not written
	int p0 = tile.q0 + min(r0, nq - 1), p1 = tile.q0 + min(r1, nq - 1);
	const bf16 *q0 = qkv + (size_t)(tile.start + p0) * stride + (size_t)h * HS;
	const bf16 *q1 = qkv + (size_t)(tile.start + p1) * stride + (size_t)h * HS;

	uint32_t qf[KS][4];
#pragma unroll
	for (int kk = 0; kk < KS; kk++) {
		qf[kk][0] = ld32(q0 + kk * 16 + tig * 2);
		qf[kk][1] = ld32(q1 + kk * 16 + tig * 2);
		qf[kk][2] = ld32(q0 + kk * 16 + 8 + tig * 2);
		qf[kk][3] = ld32(q1 + kk * 16 + 8 + tig * 2);
	}
	float o[NT][4];
#pragma unroll
	for (int d = 0; d < NT; d++)
		o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
	float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

	int kend = tile.q0 + nq;   // keys 0 .. kend-1 are seen by some row here
	for (int k0 = 0; k0 < kend; k0 += MMA_BC) {
		__syncthreads();   // the previous tile is no longer read
		for (int c = threadIdx.x; c < MMA_BC * HS / 8; c += blockDim.x) {
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

		// S = Q K^T for this warp's 16 rows and the tile's 64 keys
		float s[SN][4];
#pragma unroll
		for (int n = 0; n < SN; n++) {
			s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
			const bf16 *krow = ks + (n * 8 + gid) * LD + tig * 2;
#pragma unroll
			for (int kk = 0; kk < KS; kk++)
				mma16816(s[n], qf[kk], ld32(krow + kk * 16), ld32(krow + kk * 16 + 8));
		}
		// causal mask (keys past the sequence's end are past every row too), row maxima
		float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
		for (int n = 0; n < SN; n++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				int key = k0 + n * 8 + tig * 2 + e;
				if (key > p0)
					s[n][e] = -INFINITY;
				if (key > p1)
					s[n][2 + e] = -INFINITY;
				mx0 = fmaxf(mx0, s[n][e]);
				mx1 = fmaxf(mx1, s[n][2 + e]);
			}
		// every row sees key 0 in the first tile, so the running max is finite from then on
		float mn0 = fmaxf(m0, quad_max(mx0)), mn1 = fmaxf(m1, quad_max(mx1));
		float c0 = exp2f((m0 - mn0) * sl2), c1 = exp2f((m1 - mn1) * sl2);
		m0 = mn0;
		m1 = mn1;
		l0 *= c0;
		l1 *= c1;
#pragma unroll
		for (int d = 0; d < NT; d++) {
			o[d][0] *= c0;
			o[d][1] *= c0;
			o[d][2] *= c1;
			o[d][3] *= c1;
		}
		// P = exp(S - m) as the A fragments of P V: key tiles 2j and 2j+1 make k-step j
		uint32_t pf[MMA_BC / 16][4];
		float b0 = m0 * sl2, b1 = m1 * sl2;
#pragma unroll
		for (int n = 0; n < SN; n++) {
			float x0 = exp2f(s[n][0] * sl2 - b0), x1 = exp2f(s[n][1] * sl2 - b0);
			float x2 = exp2f(s[n][2] * sl2 - b1), x3 = exp2f(s[n][3] * sl2 - b1);
			l0 += x0 + x1;
			l1 += x2 + x3;
			pf[n / 2][(n % 2) * 2] = pack2f(x0, x1);
			pf[n / 2][(n % 2) * 2 + 1] = pack2f(x2, x3);
		}
		// O += P V
#pragma unroll
		for (int j = 0; j < MMA_BC / 16; j++) {
			const bf16 *v0 = vs + (j * 16 + tig * 2) * LD + gid;
#pragma unroll
			for (int d = 0; d < NT; d++) {
				const bf16 *v = v0 + d * 8;
				mma16816(o[d], pf[j], pack2(v[0], v[LD]), pack2(v[8 * LD], v[9 * LD]));
			}
		}
	}

	float L0 = quad_sum(l0), L1 = quad_sum(l1), i0 = 1.0f / L0, i1 = 1.0f / L1;
	if (lse && tig == 0) {   // m is the unscaled max: lse = m scale + log(sum exp((s - m) scale))
		float scale = sl2 * 0.6931471805599453f;
		if (r0 < nq)
			lse[(size_t)(tile.start + tile.q0 + r0) * NH + h] = m0 * scale + logf(L0);
		if (r1 < nq)
			lse[(size_t)(tile.start + tile.q0 + r1) * NH + h] = m1 * scale + logf(L1);
	}
	bf16 *out0 = out + (size_t)(tile.start + tile.q0 + r0) * NH * HS + (size_t)h * HS + tig * 2;
	bf16 *out1 = out0 + (size_t)8 * NH * HS;
#pragma unroll
	for (int d = 0; d < NT; d++) {
		if (r0 < nq)
			*(uint32_t *)(out0 + d * 8) = pack2f(o[d][0] * i0, o[d][1] * i0);
		if (r1 < nq)
			*(uint32_t *)(out1 + d * 8) = pack2f(o[d][2] * i1, o[d][3] * i1);
	}
}

int attention_mma_head_size_ok(int HS)
{
	return HS == 64 || HS == 128;
}

cudaError_t launch_attention_mma(void *out, float *lse, const void *qkv, const struct att_tile *tiles, int ntiles,
				 int NH, int NKV, int HS, cudaStream_t s)
{
	if (ntiles == 0)
		return cudaSuccess;
	if (NKV <= 0 || NH % NKV)
		return cudaErrorInvalidValue;
	dim3 grid(ntiles, NH);
	float sl2 = 1.0f / sqrtf((float)HS) * 1.4426950408889634f;
	switch (HS) {
	case 64:
		attention_mma_kernel<64><<<grid, 128, 0, s>>>((bf16 *)out, lse, (const bf16 *)qkv, tiles, NH, NKV, sl2);
		break;
	case 128:
		attention_mma_kernel<128><<<grid, 128, 0, s>>>((bf16 *)out, lse, (const bf16 *)qkv, tiles, NH, NKV, sl2);
		break;
	default:
		return cudaErrorInvalidValue;
	}
	return cudaGetLastError();
}
