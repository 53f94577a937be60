// shim.h for norm_sim (see sim.cc): the little of CUDA the kernels use, on
// the CPU: a std::thread per CUDA thread, a block at a time, a barrier for
// __syncthreads, shuffles through a warp's slots, __shared__ as static,
// float2/float4/uint4 and the launch as a function call.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#include <cstdio>
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
static inline float2 make_float2(float a, float b) { return float2{ a, b }; }
static inline float4 make_float4(float a, float b, float c, float d) { return float4{ a, b, c, d }; }
struct dim3s { unsigned x, y, z; };
thread_local dim3s threadIdx;
dim3s blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __forceinline__ inline
#define __restrict__
static std::barrier<> *bbar;
static std::barrier<> *wbar[32];
static uint64_t wslot[32][32];
static void __syncthreads() { bbar->arrive_and_wait(); }
template <typename T> static T __shfl_xor_sync(unsigned, T v, int o)
{
	int w = threadIdx.x / 32, l = threadIdx.x % 32;
	memcpy(&wslot[w][l], &v, sizeof v);
	wbar[w]->arrive_and_wait();
	T r;
	memcpy(&r, &wslot[w][l ^ o], sizeof r);
	wbar[w]->arrive_and_wait();
	return r;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static int min(int a, int b) { return a < b ? a : b; }
#include "cuda_bf16.h"
// run fn(args) over grid (gx, gy) of bx threads, a block at a time
template <typename F> static void launch(unsigned gx, unsigned gy, unsigned bx, F fn)
{
	gridDim = { gx, gy, 1 };
	blockDim = { bx, 1, 1 };
	for (unsigned y = 0; y < gy; y++)
		for (unsigned x = 0; x < gx; x++) {
			blockIdx = { x, y, 0 };
			std::barrier<> bb(bx);
			bbar = &bb;
			std::vector<std::unique_ptr<std::barrier<>>> wb;
			for (unsigned w = 0; w < (bx + 31) / 32; w++)
				wb.emplace_back(new std::barrier<>(32)), wbar[w] = wb.back().get();
			std::vector<std::thread> th;
			for (unsigned t = 0; t < bx; t++)
				th.emplace_back([=] { threadIdx = { t, 0, 0 }; fn(); });
			for (auto &x : th) x.join();
		}
}
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
typedef int cudaError_t;
typedef void *cudaStream_t;
#define cudaSuccess 0
#define cudaErrorInvalidValue 1
static cudaError_t cudaGetLastError() { return 0; }
template <typename F> static void launch(dim3 g, dim3 b, F fn) { launch(g.x, g.y, b.x, fn); }
