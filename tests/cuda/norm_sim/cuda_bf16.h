// norm_sim's stand-in for the little of cuda_bf16.h that device.cuh uses:
// bf16 as its 16 bits, rounded to nearest even from fp32
#pragma once
#include <cstdint>
#include <cstring>
struct __nv_bfloat16 { uint16_t x; };
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
static inline float __bfloat162float(__nv_bfloat16 b) { uint32_t u = (uint32_t)b.x << 16; float f; memcpy(&f, &u, 4); return f; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); __nv_bfloat16 b; b.x = (uint16_t)(u >> 16); return b; }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{ __bfloat162float(h.x), __bfloat162float(h.y) }; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{ __float2bfloat16_rn(a), __float2bfloat16_rn(b) }; }
