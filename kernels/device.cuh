// device.cuh: small device helpers the kernel files share: fp32/bf16
// conversions, four-element loads, warp sums, and the CUDA-core attention
// kernels' tiling (layers.cu's forward, attention_bwd.cu's backward).
#ifndef GRPO_KERNELS_DEVICE_CUH
#define GRPO_KERNELS_DEVICE_CUH

#include <cuda_bf16.h>
#include <stdint.h>
#include <string.h>

typedef __nv_bfloat16 bf16;

static __device__ __forceinline__ float to_f(float x) { return x; }
static __device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
template <typename T> static __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16_rn(x); }

// Four consecutive values as fp32 (p 8- or 16-byte aligned).
static __device__ __forceinline__ float4 load4(const float *p) { return *(const float4 *)p; }
static __device__ __forceinline__ float4 load4(const bf16 *p)
{
	uint2 u = *(const uint2 *)p;
	__nv_bfloat162 a = *(__nv_bfloat162 *)&u.x, b = *(__nv_bfloat162 *)&u.y;
	float2 fa = __bfloat1622float2(a), fb = __bfloat1622float2(b);
	return make_float4(fa.x, fa.y, fb.x, fb.y);
}

// Four values stored from fp32.
template <typename T> static __device__ __forceinline__ void store4(T *p, float4 v)
{
	p[0] = from_f<T>(v.x);
	p[1] = from_f<T>(v.y);
	p[2] = from_f<T>(v.z);
	p[3] = from_f<T>(v.w);
}

// Eight consecutive values as fp32 (p 16-byte aligned), and stored back,
// rounded as from_f rounds each.
static __device__ __forceinline__ void load8(const bf16 *p, float v[8])
{
	uint4 u = *(const uint4 *)p;
	__nv_bfloat162 h[4];
	memcpy(h, &u, sizeof h);   // not a pointer cast: the compiler may assume those never alias
#pragma unroll
	for (int k = 0; k < 4; k++) {
		float2 f = __bfloat1622float2(h[k]);
		v[2 * k] = f.x;
		v[2 * k + 1] = f.y;
	}
}
static __device__ __forceinline__ void load8(const float *p, float v[8])
{
	float4 a = load4(p), b = load4(p + 4);
	v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
static __device__ __forceinline__ void store8(bf16 *p, const float v[8])
{
	__nv_bfloat162 h[4];
#pragma unroll
	for (int k = 0; k < 4; k++)
		h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
	uint4 u;
	memcpy(&u, h, sizeof u);
	*(uint4 *)p = u;
}
static __device__ __forceinline__ void store8(float *p, const float v[8])
{
	*(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
	*(float4 *)(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}

// Blocks of 256 threads for n items of an elementwise kernel that strides
// over the rest: enough to fill the GPU.
static inline unsigned elementwise_blocks(size_t n)
{
	size_t b = (n + 255) / 256;
	return (unsigned)(b < 65536 ? b : 65536);
}

static __device__ __forceinline__ float dot4(float4 a, float4 b)
{
	return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

// a += s * b
static __device__ __forceinline__ void axpy4(float4 *a, float s, float4 b)
{
	a->x += s * b.x;
	a->y += s * b.y;
	a->z += s * b.z;
	a->w += s * b.w;
}

static __device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// The sums of v.x and v.y over the block (blockDim.x a multiple of 32, at
// most 1024); every thread gets them. Safe to call again at once: part[]
// is reused only after every thread has read it.
static __device__ float2 block_sum2(float2 v)
{
	__shared__ float2 part[32];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
	v.x = warp_sum(v.x);
	v.y = warp_sum(v.y);
	__syncthreads();
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = lane < nwarps ? part[lane] : make_float2(0.0f, 0.0f);
	return make_float2(warp_sum(v.x), warp_sum(v.y));
}

// CUDA-core attention: keys (or queries) per shared-memory tile, and threads
// per row: a power of two dividing HS into parts of 32 where that works (64,
// 128), one thread per row otherwise (16 to 96). A row's threads are
// neighbours, so __shfl_xor_sync over TPQ/2 .. 1 sums a dot product.
#define ATT_BK 32
static constexpr __host__ __device__ int att_tpq(int HS) { return HS == 64 || HS == 128 ? HS / 32 : 1; }

template <int TPQ> static __device__ __forceinline__ float row_sum(float v)
{
#pragma unroll
	for (int o = TPQ / 2; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// Keys and values k0 .. k0 + ATT_BK - 1 of a sequence starting at token
// start (kv head kh) into shared memory as fp32, zeros from key kend on:
// 0 * garbage could be NaN. The whole block calls it, between barriers.
template <int HS, typename T>
static __device__ void load_kv_tile(float4 (*ks)[HS / 4], float4 (*vs)[HS / 4], const T *qkv, size_t stride,
				    int start, int k0, int kend, int NH, int NKV, int kh)
{
	for (int e = threadIdx.x; e < ATT_BK * (HS / 4); e += blockDim.x) {
		int j = e / (HS / 4), d4 = e % (HS / 4);
		float4 kx = make_float4(0, 0, 0, 0), vx = kx;
		if (k0 + j < kend) {
			const T *r = qkv + (size_t)(start + k0 + j) * stride + (size_t)(NH + kh) * HS;
			kx = load4(r + d4 * 4);
			vx = load4(r + (size_t)NKV * HS + d4 * 4);
		}
		ks[j][d4] = kx;
		vs[j][d4] = vx;
	}
}

#endif
