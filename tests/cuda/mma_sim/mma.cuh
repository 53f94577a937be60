// mma.cuh for mma_sim (see sim.cc): kernels/mma.cuh's helpers, with
// mma.sync emulated across a warp's threads in sim.cc, and the dynamic
// shared memory that run.sh points the backward's smem[] at.
#pragma once
#include <cuda_bf16.h>
typedef __nv_bfloat16 bf16;
void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
extern unsigned char g_smem[];
static inline uint32_t ld32(const bf16 *p) { uint32_t u; memcpy(&u, p, 4); return u; }
static inline uint32_t pack2(bf16 lo, bf16 hi) { return (uint32_t)lo.u | (uint32_t)hi.u << 16; }
static inline uint32_t pack2f(float lo, float hi) { __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); uint32_t u; memcpy(&u, &v, 4); return u; }
static inline float quad_max(float v) { v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1)); return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2)); }
static inline float quad_sum(float v) { v += __shfl_xor_sync(0xffffffffu, v, 1); return v + __shfl_xor_sync(0xffffffffu, v, 2); }
