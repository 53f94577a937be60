// cuda_runtime.h for the CPU simulations of the kernels (tests/cuda/*_sim):
// the part of CUDA that kernels/ uses, on the CPU, so that a kernel's code
// compiles unchanged as C++ (g++ -I tests/cuda/sim, which also stands in for
// cuda_bf16.h).
//
// launch() runs a grid's blocks one after another, each with a std::thread
// per CUDA thread, so a __shared__ array can be a function static.
// __syncthreads is a barrier of the block's threads, a shuffle two barriers
// of its warp's, and a thread that returns leaves both, as on the GPU. The
// threads at a barrier must all have reached it from the same line (below).
// Intrinsics are the plain operations they round like (build with
// -ffp-contract=off); memory is host memory.
//
// Built with -fsanitize=thread (each run.sh's SIM_TSAN=1), ThreadSanitizer
// sees these barriers as the only order between a block's threads, so it
// reports two threads touching the same memory with no barrier between them:
// the shared-memory hazards compute-sanitizer's racecheck looks for. Blocks
// run one at a time here, so races between blocks go unseen, as do races
// between the lanes of a warp across a shuffle, which orders them here as a
// __syncwarp would. What a race between blocks does, a block reading what
// another block of the same launch writes, shows as other results when the
// blocks run in another order: SIM_BLOCK_ORDER=reverse or shuffle (below).
#pragma once
#include "cuda_runtime_api.h"
#include <algorithm>
#include <barrier>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
using std::max;
using std::min;

#if defined(__SANITIZE_THREAD__)   // gcc's way of saying so
#define SIM_TSAN 1
#elif defined(__has_feature)       // clang's
#if __has_feature(thread_sanitizer)
#define SIM_TSAN 1
#endif
#endif
#ifndef SIM_TSAN
#define SIM_TSAN 0
#endif

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
	unsigned x, y, z;
	constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

struct float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { uint32_t x, y; };
struct alignas(16) uint4 { uint32_t x, y, z, w; };
static inline float2 make_float2(float a, float b) { return { a, b }; }
static inline float4 make_float4(float a, float b, float c, float d) { return { a, b, c, d }; }
static inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return { a, b, c, d }; }

// ---- a block's threads ----

// Each thread notes where it waits (file:line) before it arrives at a
// barrier; when a barrier's phase completes, every thread of it that has not
// returned must wait at the same place, as compute-sanitizer's synccheck
// asks ("divergent threads"): two threads at different __syncthreads (or a
// __syncwarp and a shuffle) would each count as the other's arrival here,
// silently, where on the GPU the result is undefined.
#define SIM_STR2(x) #x
#define SIM_STR(x) SIM_STR2(x)
#define SIM_SITE (__FILE__ ":" SIM_STR(__LINE__))

namespace sim {
inline const char *site[1024];   // [thread]: the barrier it waits at, null once it returned
struct same_site {                // a barrier's completion: threads [first, first + n) agree
	unsigned first, n;
	void operator()() noexcept
	{
		const char *at = nullptr;
		unsigned who = 0;
		for (unsigned t = first; t < first + n; t++) {
			if (!site[t])
				continue;
			if (at && strcmp(site[t], at) != 0) {
				fprintf(stderr, "sim: block %u: thread %u waits at %s, thread %u at %s\n", blockIdx.x, who,
					at, t, site[t]);
				abort();
			}
			at = site[t], who = t;
		}
	}
};
typedef std::barrier<same_site> barrier;
inline barrier *block_barrier;
inline barrier *warp_barrier[32];
inline uint64_t lanes[32][32];   // [warp][lane]: a value crossing a shuffle

static inline void no_barrier(const char *what)
{
	fprintf(stderr, "sim: %s in a kernel launched by launch_serial\n", what);
	abort();
}
// A launcher of its own (model_sim's, which runs a block's threads as
// fibers on one thread) sets this: a thread's wait at a barrier, 0 of its
// block's, 1 of its warp's, once it has noted where it waits.
inline void (*wait_hook)(int warp);

static inline void block_wait(const char *at)
{
	if (wait_hook) {
		site[threadIdx.x] = at;
		return wait_hook(0);
	}
	if (!block_barrier)
		no_barrier("__syncthreads");
	site[threadIdx.x] = at;
	block_barrier->arrive_and_wait();
}
static inline void warp_wait(const char *at)
{
	if (wait_hook) {
		site[threadIdx.x] = at;
		return wait_hook(1);
	}
	if (!block_barrier)
		no_barrier("__syncwarp or a shuffle");
	site[threadIdx.x] = at;
	warp_barrier[threadIdx.x / 32]->arrive_and_wait();
}

// v from lane `from` of this thread's warp: every lane posts its own, then reads
template <typename T> static inline T shuffle(const char *at, T v, unsigned from)
{
	static_assert(sizeof(T) <= sizeof(uint64_t));
	unsigned w = threadIdx.x / 32, l = threadIdx.x % 32;
	memcpy(&lanes[w][l], &v, sizeof v);
	warp_wait(at);
	T r;
	memcpy(&r, &lanes[w][from % 32], sizeof r);
	warp_wait(at);
	return r;
}
template <typename T> static inline T shfl_xor(const char *at, unsigned, T v, int o)
{
	return shuffle(at, v, threadIdx.x % 32 ^ o);
}
template <typename T> static inline T shfl(const char *at, unsigned, T v, int src) { return shuffle(at, v, (unsigned)src); }
template <typename T> static inline T shfl_up(const char *at, unsigned, T v, unsigned d)
{
	unsigned l = threadIdx.x % 32;
	return shuffle(at, v, l < d ? l : l - d);
}
template <typename T> static inline T shfl_down(const char *at, unsigned, T v, unsigned d)
{
	unsigned l = threadIdx.x % 32;
	return shuffle(at, v, l + d < 32 ? l + d : l);
}
} // namespace sim

#define __syncthreads() sim::block_wait(SIM_SITE)
#define __syncwarp(...) sim::warp_wait(SIM_SITE)
#define __shfl_xor_sync(...) sim::shfl_xor(SIM_SITE, __VA_ARGS__)
#define __shfl_sync(...) sim::shfl(SIM_SITE, __VA_ARGS__)
#define __shfl_up_sync(...) sim::shfl_up(SIM_SITE, __VA_ARGS__)
#define __shfl_down_sync(...) sim::shfl_down(SIM_SITE, __VA_ARGS__)

// A grid's blocks past this many are not run (0: all run): ThreadSanitizer's
// races lie within a block, and some grids are fixed at thousands of blocks.
inline unsigned sim_block_limit;

// The order the blocks that run run in, from the environment's
// SIM_BLOCK_ORDER: forward (unset), reverse, or shuffle (a permutation of
// its own for each launch, the same in every run). The GPU promises no
// order, and kernels/'s reductions have no atomics, so a kernel gives the
// same bits in any order unless its blocks depend on each other.
static inline std::vector<unsigned> sim_block_order(unsigned blocks)
{
	static const char *how = getenv("SIM_BLOCK_ORDER");
	static uint64_t launches;
	std::vector<unsigned> order(blocks);
	for (unsigned k = 0; k < blocks; k++)
		order[k] = k;
	if (!how || !*how || strcmp(how, "forward") == 0)
		return order;
	if (strcmp(how, "reverse") == 0) {
		std::reverse(order.begin(), order.end());
		return order;
	}
	if (strcmp(how, "shuffle") != 0) {
		fprintf(stderr, "sim: SIM_BLOCK_ORDER=%s: not forward, reverse or shuffle\n", how);
		exit(2);
	}
	uint64_t z = ++launches * 0x9e3779b97f4a7c15ull;   // splitmix64, for Fisher-Yates
	for (unsigned k = blocks; k > 1; k--) {
		z += 0x9e3779b97f4a7c15ull;
		uint64_t r = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
		std::swap(order[k - 1], order[(r ^ (r >> 31)) % k]);
	}
	return order;
}

static inline unsigned sim_grid(dim3 grid, dim3 block)
{
	if (block.y != 1 || block.z != 1 || block.x == 0 || block.x > 1024) {
		fprintf(stderr, "sim: launch of a %ux%ux%u block\n", block.x, block.y, block.z);
		abort();
	}
	gridDim = grid;
	blockDim = block;
	unsigned blocks = grid.x * grid.y * grid.z;
	return sim_block_limit && blocks > sim_block_limit ? sim_block_limit : blocks;
}
static inline void sim_enter(unsigned t, unsigned k)
{
	threadIdx = dim3(t, 0, 0);
	blockIdx = dim3(k % gridDim.x, k / gridDim.x % gridDim.y, k / gridDim.x / gridDim.y);
}

// body() as every thread of every block of the grid (blocks of one
// dimension, at most 1024 threads). The block's barriers are made anew for
// each block, once all its threads are done with the last one's.
template <class F> static void launch(dim3 grid, dim3 block, F body)
{
	unsigned blocks = sim_grid(grid, block), n = block.x, warps = (n + 31) / 32;
	std::vector<unsigned> order = sim_block_order(blocks);
	std::unique_ptr<sim::barrier> bar, warp[32];
	auto fresh = [&]() noexcept {
		bar.reset(new sim::barrier(n, sim::same_site{ 0, n }));
		sim::block_barrier = bar.get();
		for (unsigned w = 0; w < warps; w++) {
			unsigned lanes = std::min(32u, n - 32 * w);
			warp[w].reset(new sim::barrier(lanes, sim::same_site{ 32 * w, lanes }));
			sim::warp_barrier[w] = warp[w].get();
		}
	};
	fresh();
	std::barrier<decltype(fresh)> done(n, fresh);
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < n; t++)
		threads.emplace_back([&, t] {
			for (unsigned k = 0; k < blocks; k++) {
				sim_enter(t, order[k]);
				body();
				sim::site[t] = nullptr;   // returned: it leaves the barriers
				bar->arrive_and_drop();
				warp[t / 32]->arrive_and_drop();
				done.arrive_and_wait();
			}
		});
	for (auto &th : threads)
		th.join();
	sim::block_barrier = nullptr;
}

// The same for a kernel that never synchronises its threads: here they run
// one after another on this thread (much faster; a barrier or shuffle
// aborts), but as launch() under ThreadSanitizer, which is to see them.
template <class F> static void launch_serial(dim3 grid, dim3 block, F body)
{
#if SIM_TSAN
	launch(grid, block, body);
#else
	unsigned blocks = sim_grid(grid, block);
	sim::block_barrier = nullptr;
	for (unsigned k : sim_block_order(blocks))
		for (unsigned t = 0; t < block.x; t++) {
			sim_enter(t, k);
			body();
		}
#endif
}

// ---- intrinsics, as the operations they round like ----

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float sim_expf(float x) { return expf(x); }
#define __expf sim_expf   // glibc declares an __expf of its own
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __double2float_rn(double x) { return (float)x; }
static inline unsigned long long __double2ull_rz(double x) { return (unsigned long long)x; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
template <typename T> static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }

// ---- the runtime: host memory, one stream, graphs that run at once ----
//
// Each sim defines the functions it uses (paged_sim/sim.cc the few it
// needs; model_sim/runtime.cc all of those declared here, with streams,
// graph capture and replay, events and device properties).

typedef struct sim_stream *cudaStream_t;
typedef struct sim_graph *cudaGraph_t;
typedef struct sim_graph *cudaGraphExec_t;
typedef struct sim_event *cudaEvent_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive, cudaStreamCaptureStatusInvalidated };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
#define cudaStreamNonBlocking 1
#define cudaHostAllocDefault 0
#define cudaHostRegisterDefault 0
// What a launch that the GPU would refuse leaves for cudaGetLastError (model_sim's launches set it).
inline cudaError_t sim_last_error = cudaSuccess;
static inline cudaError_t cudaGetLastError() { cudaError_t e = sim_last_error; sim_last_error = cudaSuccess; return e; }
static inline cudaError_t cudaPeekAtLastError() { return sim_last_error; }
struct cudaDeviceProp {
	char name[256];
	size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin;
	int warpSize, maxThreadsPerBlock, multiProcessorCount, major, minor;
};
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st = 0);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st = 0);
cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch, size_t width, size_t height,
			      cudaMemcpyKind k, cudaStream_t st = 0);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *st);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t sim_func_set_attribute(const void *f, cudaFuncAttribute a, int v);
template <class F> static inline cudaError_t cudaFuncSetAttribute(F *f, cudaFuncAttribute a, int v)
{
	return sim_func_set_attribute((const void *)f, a, v);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode m);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
