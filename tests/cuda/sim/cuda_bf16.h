// cuda_bf16.h for the CPU simulations (see cuda_runtime.h): bf16 as the GPU
// stores it, its 16 bits, converted from fp32 by rounding to nearest even.
#pragma once
#include "cuda_runtime.h"
struct __nv_bfloat16 { uint16_t u; };
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
static inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return { (uint16_t)((u >> 16) | 0x40) };   // NaN stays NaN
	u += 0x7fff + ((u >> 16) & 1);
	return { (uint16_t)(u >> 16) };
}
static inline float __bfloat162float(__nv_bfloat16 b)
{
	uint32_t u = (uint32_t)b.u << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static inline uint16_t __bfloat16_as_ushort(__nv_bfloat16 b) { return b.u; }
static inline float2 __bfloat1622float2(__nv_bfloat162 v) { return { __bfloat162float(v.x), __bfloat162float(v.y) }; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return { __float2bfloat16_rn(a), __float2bfloat16_rn(b) }; }
