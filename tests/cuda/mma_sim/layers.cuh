// layers.cuh for mma_sim (see sim.cc): the little of CUDA and of
// kernels/layers.cuh that the tensor-core attention kernels use, on the CPU.
// One block runs at a time, a std::thread per CUDA thread, so __shared__
// arrays can be function statics.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <memory>
using std::min; using std::max;
typedef int cudaError_t;
typedef void *cudaStream_t;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct dim3s { unsigned x, y, z; };
extern thread_local dim3s threadIdx, blockIdx;
extern dim3s blockDim;
struct uint4 { uint32_t x, y, z, w; };
static inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return { a, b, c, d }; }
struct float2 { float x, y; };
struct __nv_bfloat16 { uint16_t u; };
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
static inline __nv_bfloat16 f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return { (uint16_t)(u >> 16) }; }
static inline float bf2f(__nv_bfloat16 b) { uint32_t u = (uint32_t)b.u << 16; float f; memcpy(&f, &u, 4); return f; }
static inline uint16_t __bfloat16_as_ushort(__nv_bfloat16 b) { return b.u; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return { f2bf(a), f2bf(b) }; }
static inline float2 __bfloat1622float2(__nv_bfloat162 v) { return { bf2f(v.x), bf2f(v.y) }; }
void __syncthreads();
float __shfl_xor_sync(unsigned, float v, int o);
struct att_tile { int start, len, q0, pad; };
#define ATT_TILE_Q 64
int attention_mma_head_size_ok(int HS);
extern unsigned char g_smem[];
