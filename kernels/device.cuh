// device.cuh: small device helpers the kernel files share: fp32/bf16
// conversions, four-element loads, warp sums, and the CUDA-core attention
// kernels' tiling (layers.cu's forward, attention_bwd.cu's backward).
#ifndef GRPO_KERNELS_DEVICE_CUH
#define GRPO_KERNELS_DEVICE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

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

#endif
