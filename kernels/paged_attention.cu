// paged_attention.cu: see paged.cuh. A cache write is a copy, one block per
// token. Decoding attention is cut over partitions of positions (in the
// manner of flash-decoding): a block scores its partition for all the query
// heads of one kv head, takes each head's softmax, sums the values, and
// writes the row's output, or, for a row longer than one partition, partial
// results that a second pass combines. Every sum runs in a fixed order, so
// the same inputs give the same bits. The kernels come first, then their
// launchers (tests/cuda/paged_sim runs the kernels on the CPU without them),
// then the test entry of gpu_paged.h.
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.cuh"
#include "gpu_model_impl.cuh"
#include "gpu_paged.h"
#include "layers.cuh"
#include "paged.cuh"

// ---- cache writes: one block per token ----

// Four elements copied as they are: 16 bytes of fp32, 8 of bf16.
static __device__ __forceinline__ void copy4(float *d, const float *s) { *(float4 *)d = *(const float4 *)s; }
static __device__ __forceinline__ void copy4(bf16 *d, const bf16 *s) { *(uint2 *)d = *(const uint2 *)s; }

template <typename T>
__global__ void kv_write_kernel(T *kc, T *vc, const T *qkv, const int32_t *slots, int NH, int NKV, int HS)
{
	int slot = slots[blockIdx.x];
	if (slot < 0)
		return;   // a padding row
	const T *k = qkv + (size_t)blockIdx.x * (NH + 2 * NKV) * HS + (size_t)NH * HS, *v = k + (size_t)NKV * HS;
	size_t block = slot / KV_BLOCK, off = slot % KV_BLOCK;
	for (int e = threadIdx.x; e < NKV * HS / 4; e += blockDim.x) {
		int kh = e / (HS / 4), d = e % (HS / 4) * 4;
		size_t at = ((block * NKV + kh) * KV_BLOCK + off) * HS + d;
		copy4(kc + at, k + (size_t)kh * HS + d);
		copy4(vc + at, v + (size_t)kh * HS + d);
	}
}

// ---- attention ----
//
// A block of PAGED_WARPS warps serves one row (blockIdx.x), PAGED_QMAX or
// fewer query heads of one kv head (blockIdx.y: a larger group is cut into
// chunks) and one partition of PAGED_PART positions (blockIdx.z), whose
// cache blocks its warps take in turn. Three phases, between barriers:
//   1. scores. The queries, scaled, sit in shared memory. Two neighbouring
//      lanes read a key, interleaved by four dimensions, so that each load
//      of the pair is one 16- or 32-byte piece of the key; one shuffle adds
//      their halves of a dot product. Every head's scores go to shared
//      memory, -inf past the context.
//   2. softmax. A warp per head takes the max and the sum of exps over the
//      partition, and leaves the exps in place of the scores.
//   3. values. HS/4 lanes hold four dimensions each of a value row, 32 /
//      (HS/4) rows at once (the lanes past that idle, where HS/4 does not
//      divide 32), and sum p * v for every head in registers; then the
//      row groups' and warps' partial sums meet in shared memory and are
//      added in a fixed order.
// A row within one partition is then written, normalised; a longer row
// leaves each partition's sums, max and sum of exps per head in work, which
// paged_combine_kernel merges. A partition's last cache block may hold, past
// the context, whatever was there before (NaN, say): those scores are set,
// not computed, to -inf, and those values read as zeros, as 0 * NaN is NaN.
#define PAGED_WARPS 4
#define PAGED_QMAX 8

// work holds the sums (B, NH, S, HS) fp32, then (max, sum of exps) (B, NH,
// S, 2), S = gridDim.z partitions per row.
static __device__ __forceinline__ size_t paged_ml_offset(int B, int NH, int S, int HS)
{
	return (size_t)B * NH * S * HS;
}

static __device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

static __device__ __forceinline__ float4 add4(float4 a, float4 b)
{
	return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

template <int HS, typename T>
__global__ void __launch_bounds__(32 * PAGED_WARPS)
paged_attention_kernel(T *out, float *work, const T *qkv, const T *kc, const T *vc, const int32_t *table,
		       int table_stride, const int32_t *ctx_lens, int max_ctx, int NH, int NKV, int chunks,
		       float scale)
{
	constexpr int C2 = HS / 8;                      // a lane's four-value pieces of a key
	constexpr int LPR = HS / 4, RPW = 32 / LPR;     // lanes per value row, value rows per warp
	constexpr int NR = (KV_BLOCK + RPW - 1) / RPW;  // value rows per lane in a cache block
	constexpr int SCORES = PAGED_QMAX * PAGED_PART, PARTIALS = PAGED_WARPS * RPW * PAGED_QMAX * HS;
	__shared__ float4 qs[PAGED_QMAX][HS / 4];
	__shared__ float4 buf[(SCORES > PARTIALS ? SCORES : PARTIALS) / 4];   // the scores, then the partial sums
	__shared__ float hmax[PAGED_QMAX], hsum[PAGED_QMAX];
	int b = blockIdx.x, part = blockIdx.z, G = NH / NKV;
	int kh = blockIdx.y / chunks, h0 = kh * G + blockIdx.y % chunks * PAGED_QMAX;
	int nh = min(PAGED_QMAX, (kh + 1) * G - h0);   // heads h0 .. h0 + nh - 1
	int ctx = ctx_lens[b], p0 = part * PAGED_PART;
	T *o = out + ((size_t)b * NH + h0) * HS;
	if (ctx == 0 || ctx > max_ctx) {   // padding: zeros; a context the launch was not sized for: NaNs
		if (part == 0)
			for (int e = threadIdx.x; e < nh * HS; e += blockDim.x)
				o[e] = from_f<T>(ctx ? NAN : 0.0f);
		return;
	}
	if (p0 >= ctx)
		return;
	int n = min(ctx - p0, PAGED_PART), nb = (n + KV_BLOCK - 1) / KV_BLOCK;   // positions, cache blocks
	const int32_t *bt = table + (size_t)b * table_stride + p0 / KV_BLOCK;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

	const T *q = qkv + (size_t)b * (NH + 2 * NKV) * HS + (size_t)h0 * HS;
	for (int e = threadIdx.x; e < nh * (HS / 4); e += blockDim.x) {
		float4 x = load4(q + e * 4);
		qs[e / (HS / 4)][e % (HS / 4)] = make_float4(x.x * scale, x.y * scale, x.z * scale, x.w * scale);
	}
	__syncthreads();

	// 1. scores: s[g * PAGED_PART + position in the partition]
	float *s = (float *)buf;
	int j = lane / 2, half = lane % 2;   // this lane's key in a cache block, and its half of it
	for (int i = warp; i < nb; i += PAGED_WARPS) {
		const T *k = kc + (((size_t)bt[i] * NKV + kh) * KV_BLOCK + j) * HS;
		float4 kr[C2];
#pragma unroll
		for (int c = 0; c < C2; c++)
			kr[c] = load4(k + (c * 2 + half) * 4);
		int pos = i * KV_BLOCK + j;
#pragma unroll
		for (int g = 0; g < PAGED_QMAX; g++) {
			if (g == nh)
				break;
			float d = 0;
#pragma unroll
			for (int c = 0; c < C2; c++)
				d += dot4(qs[g][c * 2 + half], kr[c]);
			d += __shfl_xor_sync(0xffffffffu, d, 1);
			if (half == 0)
				s[g * PAGED_PART + pos] = pos < n ? d : -INFINITY;
		}
	}
	__syncthreads();

	// 2. softmax per head; exp(-inf) = 0 past the context
	for (int g = warp; g < nh; g += PAGED_WARPS) {
		float *sg = s + g * PAGED_PART;
		float m = -INFINITY, l = 0;
		for (int i = lane; i < nb * KV_BLOCK; i += 32)
			m = fmaxf(m, sg[i]);
		m = warp_max(m);
		for (int i = lane; i < nb * KV_BLOCK; i += 32) {
			float p = __expf(sg[i] - m);
			sg[i] = p;
			l += p;
		}
		l = warp_sum(l);
		if (lane == 0) {
			hmax[g] = m;
			hsum[g] = l;
		}
	}
	__syncthreads();

	// 3. values, this lane's dimensions d4 * 4 .. d4 * 4 + 3 of rows r0, r0 + RPW, ...
	int r0 = lane / LPR, d4 = lane % LPR;
	bool active = r0 < RPW;
	float4 acc[PAGED_QMAX];
#pragma unroll
	for (int g = 0; g < PAGED_QMAX; g++)
		acc[g] = make_float4(0, 0, 0, 0);
	for (int i = warp; i < nb; i += PAGED_WARPS) {
		const T *v = vc + ((size_t)bt[i] * NKV + kh) * KV_BLOCK * HS + d4 * 4;
		float4 vr[NR];
#pragma unroll
		for (int r = 0; r < NR; r++) {
			int row = r0 + r * RPW;
			vr[r] = make_float4(0, 0, 0, 0);
			if (active && row < KV_BLOCK && i * KV_BLOCK + row < n)
				vr[r] = load4(v + row * HS);
		}
#pragma unroll
		for (int r = 0; r < NR; r++) {
			// a row past the block reads a finite p of the block's last row, times zeros
			int pos = i * KV_BLOCK + min(r0 + r * RPW, KV_BLOCK - 1);
#pragma unroll
			for (int g = 0; g < PAGED_QMAX; g++)
				if (g < nh)
					axpy4(&acc[g], s[g * PAGED_PART + pos], vr[r]);
		}
	}
	__syncthreads();   // the exps are read: buf takes the partial sums, [warp][row group][head][HS/4]

	float4 *partial = buf;
	if (active)
#pragma unroll
		for (int g = 0; g < PAGED_QMAX; g++)
			if (g < nh)
				partial[((warp * RPW + r0) * PAGED_QMAX + g) * (HS / 4) + d4] = acc[g];
	__syncthreads();

	for (int e = threadIdx.x; e < nh * (HS / 4); e += blockDim.x) {
		int g = e / (HS / 4), d = e % (HS / 4);
		float4 x = partial[g * (HS / 4) + d];
		for (int w = 1; w < PAGED_WARPS * RPW; w++)
			x = add4(x, partial[(w * PAGED_QMAX + g) * (HS / 4) + d]);
		if (ctx <= PAGED_PART) {   // the row's only partition
			float inv = 1.0f / hsum[g];
			store4(o + e * 4, make_float4(x.x * inv, x.y * inv, x.z * inv, x.w * inv));
			continue;
		}
		int S = gridDim.z;
		size_t at = ((size_t)b * NH + h0 + g) * S + part;
		*(float4 *)(work + at * HS + d * 4) = x;
		if (d == 0) {
			float *ml = work + paged_ml_offset(gridDim.x, NH, S, HS) + at * 2;
			ml[0] = hmax[g];
			ml[1] = hsum[g];
		}
	}
}

// Row blockIdx.x, head blockIdx.y of a row longer than one partition: its
// partitions' results merged in order, by a warp whose lanes hold four
// dimensions each.
template <typename T>
__global__ void paged_combine_kernel(T *out, const float *work, const int32_t *ctx_lens, int max_ctx, int NH,
				     int HS, int S)
{
	int b = blockIdx.x, h = blockIdx.y, d4 = threadIdx.x, ctx = ctx_lens[b];
	if (ctx <= PAGED_PART || ctx > max_ctx || d4 >= HS / 4)
		return;   // written by the first pass
	int np = (ctx + PAGED_PART - 1) / PAGED_PART;
	size_t row = ((size_t)b * NH + h) * S;
	const float *sums = work + row * HS + d4 * 4, *ml = work + paged_ml_offset(gridDim.x, NH, S, HS) + row * 2;
	float m = -INFINITY, l = 0;
	for (int p = 0; p < np; p++)
		m = fmaxf(m, ml[p * 2]);
	float4 x = make_float4(0, 0, 0, 0);
	for (int p = 0; p < np; p++) {
		float w = __expf(ml[p * 2] - m);
		l += w * ml[p * 2 + 1];
		axpy4(&x, w, *(const float4 *)(sums + (size_t)p * HS));
	}
	float inv = 1.0f / l;
	store4(out + ((size_t)b * NH + h) * HS + d4 * 4, make_float4(x.x * inv, x.y * inv, x.z * inv, x.w * inv));
}

// ---- sizes ----

// Partitions per row for contexts of up to max_ctx positions.
static int paged_splits(int max_ctx)
{
	return max_ctx > PAGED_PART ? (max_ctx + PAGED_PART - 1) / PAGED_PART : 1;
}

size_t paged_attention_workspace_bytes(int B, int NH, int HS, int max_ctx)
{
	int S = paged_splits(max_ctx);
	return S > 1 ? (size_t)B * NH * S * (HS + 2) * sizeof(float) : 0;
}

// ---- launchers ----

cudaError_t launch_kv_write(void *kc, void *vc, const void *qkv, const int32_t *slots, int T, int NH, int NKV,
			    int HS, int bf16flag, cudaStream_t s)
{
	if (HS <= 0 || HS % 4 || NH < 0 || NKV <= 0)
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (bf16flag)
		kv_write_kernel<bf16><<<T, 128, 0, s>>>((bf16 *)kc, (bf16 *)vc, (const bf16 *)qkv, slots, NH, NKV, HS);
	else
		kv_write_kernel<float><<<T, 128, 0, s>>>((float *)kc, (float *)vc, (const float *)qkv, slots, NH, NKV,
							 HS);
	return cudaGetLastError();
}

// launch_paged_attention's arguments, passed on to the head sizes' instances
struct paged_args {
	void *out;
	const void *qkv, *kc, *vc;
	const int32_t *table, *ctx_lens;
	int table_stride, B, max_ctx, NH, NKV, bf16;
	float *work;
};

template <int HS>
static void paged_attention_hs(const struct paged_args *a, cudaStream_t s)
{
	int chunks = (a->NH / a->NKV + PAGED_QMAX - 1) / PAGED_QMAX;
	dim3 grid(a->B, a->NKV * chunks, paged_splits(a->max_ctx));
	float scale = 1.0f / sqrtf((float)HS);
	if (a->bf16)
		paged_attention_kernel<HS, bf16><<<grid, 32 * PAGED_WARPS, 0, s>>>(
			(bf16 *)a->out, a->work, (const bf16 *)a->qkv, (const bf16 *)a->kc, (const bf16 *)a->vc, a->table,
			a->table_stride, a->ctx_lens, a->max_ctx, a->NH, a->NKV, chunks, scale);
	else
		paged_attention_kernel<HS, float><<<grid, 32 * PAGED_WARPS, 0, s>>>(
			(float *)a->out, a->work, (const float *)a->qkv, (const float *)a->kc, (const float *)a->vc,
			a->table, a->table_stride, a->ctx_lens, a->max_ctx, a->NH, a->NKV, chunks, scale);
}

cudaError_t launch_paged_attention(void *out, const void *qkv, const void *kc, const void *vc,
				   const int32_t *block_table, int table_stride, const int32_t *ctx_lens, int B,
				   int max_ctx, float *work, int NH, int NKV, int HS, int bf16flag, cudaStream_t s)
{
	if (NKV <= 0 || NH % NKV || max_ctx < 0 || (NH / NKV + PAGED_QMAX - 1) / PAGED_QMAX * NKV > 65535)
		return cudaErrorInvalidValue;
	int S = paged_splits(max_ctx);
	if (S > 65535 || (S > 1 && !work))
		return cudaErrorInvalidValue;
	if (B == 0)
		return cudaSuccess;
	struct paged_args a = { out, qkv, kc, vc, block_table, ctx_lens, table_stride, B, max_ctx, NH, NKV, bf16flag,
				work };
	switch (HS) {
	case 16: paged_attention_hs<16>(&a, s); break;
	case 24: paged_attention_hs<24>(&a, s); break;
	case 32: paged_attention_hs<32>(&a, s); break;
	case 48: paged_attention_hs<48>(&a, s); break;
	case 64: paged_attention_hs<64>(&a, s); break;
	case 80: paged_attention_hs<80>(&a, s); break;
	case 96: paged_attention_hs<96>(&a, s); break;
	case 128: paged_attention_hs<128>(&a, s); break;
	default: return cudaErrorInvalidValue;
	}
	cudaError_t err = cudaGetLastError();
	if (err != cudaSuccess || S == 1)
		return err;
	dim3 grid(B, NH);
	if (bf16flag)
		paged_combine_kernel<bf16><<<grid, 32, 0, s>>>((bf16 *)out, work, ctx_lens, max_ctx, NH, HS, S);
	else
		paged_combine_kernel<float><<<grid, 32, 0, s>>>((float *)out, work, ctx_lens, max_ctx, NH, HS, S);
	return cudaGetLastError();
}

// ---- the kernels alone, for tests ----

// Host arrays of the test: the block table, the slots of the earlier
// positions and of the new tokens, and the earlier positions' k and v as
// rows laid out k | v (launch_kv_write with NH = 0), each row's followed by
// a padding row of NaNs (slot -1).
struct paged_host {
	int nblocks, tstride, nctx;
	int32_t *table, *ctx_slots, *new_slots;
	float *ctx_rows;
};

// Spare physical blocks that no position uses, all NaN: the table's unused
// entries point at one, so a kernel reading past a row's blocks shows.
#define PAGED_SPARE 2

static int paged_layout(struct paged_host *h, const float *kctx, const float *vctx, const int32_t *ctx_lens, int B,
			int max_ctx, int NKV, int HS, uint64_t seed)
{
	size_t kv = (size_t)NKV * HS;
	int used = 0;
	h->nctx = 0;
	for (int b = 0; b < B; b++) {
		used += (ctx_lens[b] + KV_BLOCK - 1) / KV_BLOCK;
		h->nctx += (ctx_lens[b] > 1 ? ctx_lens[b] - 1 : 0) + 1;
	}
	h->nblocks = used + PAGED_SPARE;
	h->tstride = max_ctx > 0 ? (max_ctx + KV_BLOCK - 1) / KV_BLOCK : 1;
	int32_t *perm = (int32_t *)malloc((size_t)h->nblocks * sizeof *perm);
	h->table = (int32_t *)malloc((size_t)B * h->tstride * sizeof *h->table);
	h->ctx_slots = (int32_t *)malloc((size_t)h->nctx * sizeof *h->ctx_slots);
	h->new_slots = (int32_t *)malloc((size_t)B * sizeof *h->new_slots);
	h->ctx_rows = (float *)malloc((size_t)h->nctx * 2 * kv * sizeof *h->ctx_rows);
	if (!perm || !h->table || !h->ctx_slots || !h->new_slots || !h->ctx_rows) {
		free(perm);
		return -1;
	}
	// the physical blocks in a shuffled order (xorshift64, Fisher-Yates)
	uint64_t x = seed ^ 0x9e3779b97f4a7c15ull;
	x = x ? x : 1;
	for (int i = 0; i < h->nblocks; i++)
		perm[i] = i;
	for (int i = h->nblocks - 1; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int r = (int)(x % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[r];
		perm[r] = t;
	}
	for (int b = 0, next = 0, r = 0; b < B; b++) {
		int ctx = ctx_lens[b], nb = (ctx + KV_BLOCK - 1) / KV_BLOCK;
		int32_t *bt = h->table + (size_t)b * h->tstride;
		for (int i = 0; i < h->tstride; i++)
			bt[i] = i < nb ? perm[next++] : perm[h->nblocks - 1];
		for (int p = 0; p < ctx - 1; p++, r++) {
			h->ctx_slots[r] = bt[p / KV_BLOCK] * KV_BLOCK + p % KV_BLOCK;
			memcpy(h->ctx_rows + (size_t)r * 2 * kv, kctx + ((size_t)b * max_ctx + p) * kv, kv * sizeof(float));
			memcpy(h->ctx_rows + (size_t)r * 2 * kv + kv, vctx + ((size_t)b * max_ctx + p) * kv,
			       kv * sizeof(float));
		}
		h->ctx_slots[r] = -1;
		for (size_t i = 0; i < 2 * kv; i++)
			h->ctx_rows[(size_t)r * 2 * kv + i] = NAN;
		r++;
		h->new_slots[b] = ctx ? bt[(ctx - 1) / KV_BLOCK] * KV_BLOCK + (ctx - 1) % KV_BLOCK : -1;
	}
	free(perm);
	return 0;
}

int gpu_paged_attention_test(const float *qkv, const float *kctx, const float *vctx, const int32_t *ctx_lens, int B,
			     int max_ctx, int NH, int NKV, int HS, int bf16flag, uint64_t seed, int graph, float *out,
			     char *msg, size_t msglen)
{
	if (!attention_head_size_ok(HS))
		return gpu_fail(msg, msglen, "head size %d: paged attention takes %s", HS, ATT_HEAD_SIZES);
	if (B <= 0 || NKV <= 0 || NH % NKV || max_ctx < 0)
		return gpu_fail(msg, msglen, "bad shape: %d rows, %d/%d heads, max context %d", B, NH, NKV, max_ctx);
	for (int b = 0; b < B; b++)
		if (ctx_lens[b] < 0 || ctx_lens[b] > max_ctx)
			return gpu_fail(msg, msglen, "row %d: context %d outside 0 .. %d", b, ctx_lens[b], max_ctx);
	struct paged_host h = { 0, 0, 0, NULL, NULL, NULL, NULL };
	size_t es = bf16flag ? 2 : 4, kv = (size_t)NKV * HS, nout = (size_t)B * NH * HS;
	size_t nqkv = (size_t)B * (NH + 2 * NKV) * HS, ncache = 0, wbytes = 0;
	void *kc = NULL, *vc = NULL, *drows = NULL, *dqkv = NULL, *dout = NULL, *work = NULL;
	int32_t *dtable = NULL, *dctx_slots = NULL, *dnew_slots = NULL, *dlens = NULL;
	cudaStream_t st = NULL;
	cudaGraph_t gr = NULL;
	cudaGraphExec_t ge = NULL;
	cudaError_t err = cudaSuccess;
	int rc = -1;
	if (paged_layout(&h, kctx, vctx, ctx_lens, B, max_ctx, NKV, HS, seed) < 0) {
		gpu_fail(msg, msglen, "out of host memory");
		goto out;
	}
	ncache = (size_t)h.nblocks * KV_BLOCK * kv;
	wbytes = paged_attention_workspace_bytes(B, NH, HS, max_ctx);
	// every slot not written, and every output, reads NaN (0xff bytes) until a kernel writes it
	if ((err = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) != cudaSuccess ||
	    (err = cudaMalloc(&kc, ncache * es)) != cudaSuccess || (err = cudaMalloc(&vc, ncache * es)) != cudaSuccess ||
	    (err = cudaMalloc(&drows, (size_t)h.nctx * 2 * kv * es)) != cudaSuccess ||
	    (err = cudaMalloc(&dqkv, nqkv * es)) != cudaSuccess || (err = cudaMalloc(&dout, nout * es)) != cudaSuccess ||
	    (wbytes && (err = cudaMalloc(&work, wbytes)) != cudaSuccess) ||
	    (err = cudaMalloc((void **)&dtable, (size_t)B * h.tstride * 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&dctx_slots, (size_t)h.nctx * 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&dnew_slots, (size_t)B * 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&dlens, (size_t)B * 4)) != cudaSuccess)
		goto cuda_failed;
	if ((err = cudaMemset(kc, 0xff, ncache * es)) != cudaSuccess ||
	    (err = cudaMemset(vc, 0xff, ncache * es)) != cudaSuccess ||
	    (err = cudaMemset(dout, 0xff, nout * es)) != cudaSuccess ||
	    (err = act_put(drows, h.ctx_rows, (size_t)h.nctx * 2 * kv, bf16flag)) != cudaSuccess ||
	    (err = act_put(dqkv, qkv, nqkv, bf16flag)) != cudaSuccess ||
	    (err = cudaMemcpy(dtable, h.table, (size_t)B * h.tstride * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(dctx_slots, h.ctx_slots, (size_t)h.nctx * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(dnew_slots, h.new_slots, (size_t)B * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(dlens, ctx_lens, (size_t)B * 4, cudaMemcpyHostToDevice)) != cudaSuccess)
		goto cuda_failed;
	if ((err = launch_kv_write(kc, vc, drows, dctx_slots, h.nctx, 0, NKV, HS, bf16flag, st)) != cudaSuccess)
		goto cuda_failed;
	// a decode step: the new tokens' k and v into the cache, then attention;
	// with graph, both captured into a CUDA graph and replayed
	if (graph && (err = cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal)) != cudaSuccess)
		goto cuda_failed;
	err = launch_kv_write(kc, vc, dqkv, dnew_slots, B, NH, NKV, HS, bf16flag, st);
	if (err == cudaSuccess)
		err = launch_paged_attention(dout, dqkv, kc, vc, dtable, h.tstride, dlens, B, max_ctx, (float *)work, NH,
					     NKV, HS, bf16flag, st);
	if (graph) {
		cudaError_t end = cudaStreamEndCapture(st, &gr);   // ends the capture even after a failed launch
		if (err == cudaSuccess && (err = end) == cudaSuccess &&
		    (err = cudaGraphInstantiateWithFlags(&ge, gr, 0)) == cudaSuccess)
			err = cudaGraphLaunch(ge, st);
	}
	if (err != cudaSuccess || (err = cudaStreamSynchronize(st)) != cudaSuccess ||
	    (err = act_get(out, dout, nout, bf16flag)) != cudaSuccess)
		goto cuda_failed;
	rc = 0;
	goto out;
cuda_failed:
	gpu_fail(msg, msglen, "paged attention kernels: %s", cudaGetErrorString(err));
out:
	if (ge)
		cudaGraphExecDestroy(ge);
	if (gr)
		cudaGraphDestroy(gr);
	if (st)
		cudaStreamDestroy(st);
	cudaFree(kc);
	cudaFree(vc);
	cudaFree(drows);
	cudaFree(dqkv);
	cudaFree(dout);
	cudaFree(work);
	cudaFree(dtable);
	cudaFree(dctx_slots);
	cudaFree(dnew_slots);
	cudaFree(dlens);
	free(h.table);
	free(h.ctx_slots);
	free(h.new_slots);
	free(h.ctx_rows);
	return rc;
}
