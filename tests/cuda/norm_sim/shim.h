// shim.h for norm_sim (see sim.cc): sample_sim's CUDA shims (a thread per
// CUDA thread, barriers, shuffles, __shared__ as static), with what these
// kernels use besides: blockDim and gridDim, float2/float4/uint4, rsqrtf,
// bf16 (cuda_bf16.h beside this file), and a launch as a function call
// that runs the grid a block at a time.
#include "sample_sim/shim.h"
#include <barrier>
#include <memory>
#include <thread>
#include <vector>
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
static inline float2 make_float2(float a, float b) { return float2{ a, b }; }
static inline float4 make_float4(float a, float b, float c, float d) { return float4{ a, b, c, d }; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
dim3s blockDim, gridDim;
#include "cuda_bf16.h"

struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
typedef int cudaError_t;
typedef void *cudaStream_t;
#define cudaSuccess 0
#define cudaErrorInvalidValue 1
static cudaError_t cudaGetLastError() { return 0; }

// fn() over grid g of blocks of b.x threads, a block at a time
template <typename F> static void launch(dim3 g, dim3 b, F fn)
{
	gridDim = { g.x, g.y, 1 };
	blockDim = { b.x, 1, 1 };
	for (unsigned y = 0; y < g.y; y++)
		for (unsigned x = 0; x < g.x; x++) {
			blockIdx = { x, y, 0 };
			std::barrier<> bb(b.x);
			bbar = &bb;
			std::vector<std::unique_ptr<std::barrier<>>> wb;
			for (unsigned w = 0; w < (b.x + 31) / 32; w++)
				wb.emplace_back(new std::barrier<>(32)), wbar[w] = wb.back().get();
			std::vector<std::thread> th;
			for (unsigned t = 0; t < b.x; t++)
				th.emplace_back([=] { threadIdx = { t, 0, 0 }; fn(); });
			for (auto &th1 : th)
				th1.join();
		}
}
