// shim.h for sample_sim (see sim.cc): the little of CUDA that
// kernels/sample.cu uses, on the CPU: a std::thread per CUDA thread, a
// barrier for __syncthreads, shuffles through a warp's slots between two
// warp barriers, __shared__ as static (one block at a time), and the
// intrinsics as the plain operations they round like (built with
// -ffp-contract=off).
#include <atomic>
#include <barrier>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#include <cstdio>
struct dim3s { unsigned x, y, z; };
thread_local dim3s threadIdx;
dim3s blockIdx;
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(x)
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
template <typename T> static T __shfl_up_sync(unsigned, T v, int d)
{
	int w = threadIdx.x / 32, l = threadIdx.x % 32, s = l - d < 0 ? l : l - d;
	memcpy(&wslot[w][l], &v, sizeof v);
	wbar[w]->arrive_and_wait();
	T r;
	memcpy(&r, &wslot[w][s], sizeof r);
	wbar[w]->arrive_and_wait();
	return r;
}
static unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static double __dmul_rn(double a, double b) { return a * b; }
static double __dsub_rn(double a, double b) { return a - b; }
static double __dadd_rn(double a, double b) { return a + b; }
static float __fsub_rn(float a, float b) { return a - b; }
static float __fdiv_rn(float a, float b) { return a / b; }
static float __double2float_rn(double x) { return (float)x; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned long long __double2ull_rz(double x) { return (unsigned long long)x; }
static long long min(long long a, long long b) { return a < b ? a : b; }
static int min(int a, int b) { return a < b ? a : b; }
