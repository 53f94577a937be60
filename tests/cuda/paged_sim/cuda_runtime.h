// cuda_runtime.h for paged_sim (see sim.cc): the little of CUDA that
// kernels/paged_attention.cu and kernels/device.cuh use, on the CPU. One
// block runs at a time, a std::thread per CUDA thread, so __shared__ arrays
// can be function statics. Memory is host memory; streams and graphs run
// everything at once.
#pragma once
#include "cuda_runtime_api.h"
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
using std::max;
using std::min;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
struct dim3 {
	unsigned x, y, z;
	dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern thread_local dim3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
struct float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { uint32_t x, y; };
struct alignas(16) uint4 { uint32_t x, y, z, w; };
static inline float2 make_float2(float a, float b) { return { a, b }; }
static inline float4 make_float4(float a, float b, float c, float d) { return { a, b, c, d }; }
void __syncthreads();
float __shfl_xor_sync(unsigned mask, float v, int o);
static inline float sim_expf(float x) { return expf(x); }
#define __expf sim_expf   // glibc declares an __expf of its own

typedef struct sim_stream *cudaStream_t;
typedef struct sim_graph *cudaGraph_t;
typedef struct sim_graph *cudaGraphExec_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost };
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal };
#define cudaStreamNonBlocking 1
cudaError_t cudaGetLastError();
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode m);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
