// sample.cu: the sampling step (see sample.cuh for the rules it follows).
//
// One block of 1024 threads per row. The row is read several times: its
// maximum, its log-sum-exp, then with top-k or top-p three radix passes
// per threshold (11, 11 and 10 bits of p's float bits, whose order is p's:
// p >= 0), then the draw. p_j is recomputed at each pass from z_j and the
// lse, in double as the CPU does, so the same float every time, and
// nothing of V elements is kept anywhere. A set "the m most probable" is
// {key > K} plus the ties key == K of id < J: K from a radix pass, J found
// only when the ties at K are split.
//
// Masses in the radix passes are sums of p_j in 2^-62 fixed point: integer
// atomics, so the histograms are the same whatever the threads' order, and
// exact, so the passes agree with each other.
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "gpu_sample.h"
#include "sample.cuh"

#define THREADS 1024
#define WARPS (THREADS / 32)
#define NBINS 2048   // an 11-bit digit's bins
#define FULL 0xffffffffu

typedef unsigned long long u64;

static_assert(WARPS == 32, "block_scan scans the warps' sums with one warp");
static_assert(NBINS == 2 * THREADS, "each thread owns two bins");

namespace {   // the types below are this file's own (no clash with another file's row or add_op)

struct row {
	const float *z;
	int V;
	double inv, lse;   // 1 / temperature; the log-sum-exp of z * inv
};

struct smem {
	unsigned cnt[NBINS];   // a radix pass's histograms: tokens, mass
	u64 mass[NBINS];
	float buf[THREADS];    // one thread's chunk of p, for a walk by thread 0
	u64 above_n, above_m, at_n;
	u64 base;
	double pre;
	int owner, result;
};

// p_j as the CPU rounds it: (float)exp(z_j * inv - lse), the product and
// difference rounded apart (no fma), as x86 computes them. Not inlined:
// one compiled copy, so every pass gets the same bits for p_j.
static __device__ __noinline__ float prob_at(const float *z, int j, double inv, double lse)
{
	return __double2float_rn(exp(__dsub_rn(__dmul_rn((double)z[j], inv), lse)));
}

static __device__ __forceinline__ float prob(const struct row &r, int j)
{
	return prob_at(r.z, j, r.inv, r.lse);
}

static __device__ __forceinline__ unsigned key_of(float p)
{
	return __float_as_uint(p);
}

// p in 2^-62 fixed point (p <= 1 and the row's mass about 1: no overflow);
// what is lost below 2^-62 totals less than V 2^-62.
static __device__ __forceinline__ u64 weight(unsigned key)
{
	return __double2ull_rz((double)__uint_as_float(key) * 0x1p62);
}

// generate.c's uniform() after n earlier calls from state s: splitmix64
// adds the golden gamma to its state at each call.
static __device__ double uniform_at(u64 s, int n)
{
	u64 z = s + ((u64)n + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

struct add_op {
	template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct max_op {
	template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
struct min_op {
	template <typename T> __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};

// op over the block, in a fixed order (the same rounding every run); every
// thread gets it. Safe to call again at once: part[] is rewritten only
// after the barrier that follows every thread's reads.
template <typename T, typename Op> static __device__ T block_reduce(T v, Op op)
{
	__shared__ T part[WARPS];
	for (int o = 16; o > 0; o >>= 1)
		v = op(v, __shfl_xor_sync(FULL, v, o));
	__syncthreads();
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = v;
	__syncthreads();
	v = part[0];
	for (int w = 1; w < WARPS; w++)
		v = op(v, part[w]);
	return v;
}

// The exclusive prefix sum of v in thread order, in a fixed order; *total
// gets the whole sum. Safe to call again at once, as block_reduce.
template <typename T> static __device__ T block_scan(T v, T *total)
{
	__shared__ T off[WARPS];
	__shared__ T all;
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	for (int o = 1; o < 32; o <<= 1) {
		T y = __shfl_up_sync(FULL, v, o);
		if (lane >= o)
			v = y + v;
	}
	T ex = __shfl_up_sync(FULL, v, 1);   // v is now the inclusive sum within the warp
	if (lane == 0)
		ex = 0;
	__syncthreads();
	if (lane == 31)
		off[warp] = v;
	__syncthreads();
	if (warp == 0) {
		T w = off[lane];
		for (int o = 1; o < 32; o <<= 1) {
			T y = __shfl_up_sync(FULL, w, o);
			if (lane >= o)
				w = y + w;
		}
		T wex = __shfl_up_sync(FULL, w, 1);
		off[lane] = lane == 0 ? 0 : wex;   // each lane rewrites only what it read
		if (lane == 31)
			all = w;
	}
	__syncthreads();
	*total = all;
	return off[warp] + ex;
}

// The lowest id of the row's largest logit, generate.c's argmax.
static __device__ int block_argmax(const float *z, int V)
{
	__shared__ float pv[WARPS];
	__shared__ int pi[WARPS];
	float best = -INFINITY;
	int arg = INT_MAX;   // none yet: loses to any entry, even -inf
	for (int j = threadIdx.x; j < V; j += THREADS)
		if (arg == INT_MAX || z[j] > best)
			best = z[j], arg = j;
	for (int o = 16; o > 0; o >>= 1) {
		float b = __shfl_xor_sync(FULL, best, o);
		int a = __shfl_xor_sync(FULL, arg, o);
		if (b > best || (b == best && a < arg))
			best = b, arg = a;
	}
	if (threadIdx.x % 32 == 0)
		pv[threadIdx.x / 32] = best, pi[threadIdx.x / 32] = arg;
	__syncthreads();
	best = pv[0], arg = pi[0];
	for (int w = 1; w < WARPS; w++)
		if (pv[w] > best || (pv[w] == best && pi[w] < arg))
			best = pv[w], arg = pi[w];
	return arg;
}

// Thread t's chunk of ids [*lo, *hi): contiguous, in thread order, so a
// scan over the threads follows id order.
static __device__ void chunk(int V, int t, int *lo, int *hi)
{
	long long c = V / THREADS + (V % THREADS != 0);
	*lo = (int)min((long long)t * c, (long long)V);
	*hi = (int)min(*lo + c, (long long)V);
}

// Thread 0 calls f(j, p_j) over thread t's chunk in id order until it
// returns true; the block computes the p's, a piece at a time.
template <typename F> static __device__ void walk_chunk(const struct row &r, int t, struct smem *sm, F &f)
{
	int lo, hi, stop = 0;
	chunk(r.V, t, &lo, &hi);
	for (int base = lo; base < hi; base += THREADS) {
		int n = min(THREADS, hi - base);
		if ((int)threadIdx.x < n)
			sm->buf[threadIdx.x] = prob(r, base + threadIdx.x);
		__syncthreads();
		for (int i = 0; threadIdx.x == 0 && !stop && i < n; i++)
			stop = f(base + i, sm->buf[i]);
		__syncthreads();   // buf is rewritten next
	}
}

// Where a radix search stopped: the threshold K, and the tokens above it.
struct pick {
	int found;
	unsigned key;
	u64 gt_n, gt_mass;   // tokens with key > K, and their mass
	u64 at_n;            // tokens with key == K
	u64 goal;
};

// The largest key K with W(key >= K) >= goal, W the count of tokens
// (by_mass 0) or their mass. goal 0 with by_mass: ceil(top_p times the
// row's whole mass), known after the first pass. cutkey: *ncut gets the
// tokens with key >= cutkey (the CPU's prefilter), from the first pass.
static __device__ struct pick radix_search(const struct row &r, int by_mass, u64 goal, float top_p,
					   unsigned cutkey, int *ncut, struct smem *sm)
{
	struct pick pk = { 0, 0, 0, 0, 0, goal };
	unsigned prefix = 0;   // the digits chosen so far
	u64 above_n = 0, above_m = 0, at_n = 0;
	for (int pass = 0; pass < 3; pass++) {
		int shift = pass == 0 ? 21 : pass == 1 ? 10 : 0, width = pass == 2 ? 10 : 11;
		for (int b = threadIdx.x; b < NBINS; b += THREADS)
			sm->cnt[b] = 0, sm->mass[b] = 0;
		__syncthreads();
		int nc = 0;
		for (int j = threadIdx.x; j < r.V; j += THREADS) {
			unsigned key = key_of(prob(r, j));
			nc += key >= cutkey;
			if ((unsigned)((u64)key >> (shift + width)) != prefix)   // 64 bits: the first pass shifts by 32
				continue;
			unsigned d = (key >> shift) & ((1u << width) - 1);
			atomicAdd(&sm->cnt[d], 1u);
			atomicAdd(&sm->mass[d], weight(key));
		}
		if (pass == 0)
			*ncut = block_reduce(nc, add_op());
		__syncthreads();

		// W from each bin up: what the bins above mine hold, plus mine
		int b0 = 2 * threadIdx.x;
		u64 c0 = sm->cnt[b0], c1 = sm->cnt[b0 + 1], m0 = sm->mass[b0], m1 = sm->mass[b0 + 1], tn, tm;
		u64 wn0 = block_scan(c0 + c1, &tn), wm0 = block_scan(m0 + m1, &tm);
		wn0 = tn - wn0, wm0 = tm - wm0;   // from bin b0 up
		u64 wn1 = wn0 - c0, wm1 = wm0 - m0;   // from bin b0 + 1 up
		if (pass == 0 && by_mass && goal == 0) {
			double g = ceil((double)top_p * (double)tm);
			goal = g >= 1 ? (u64)g : 1;
			pk.goal = goal;
		}
		int d = -1;
		if ((by_mass ? above_m + wm1 : above_n + wn1) >= goal)
			d = b0 + 1;
		else if ((by_mass ? above_m + wm0 : above_n + wn0) >= goal)
			d = b0;
		d = block_reduce(d, max_op());
		if (d < 0)
			return pk;   // first pass: the whole row holds less than goal
		if ((int)threadIdx.x == d / 2) {
			int hi = d == b0 + 1;
			sm->above_n = above_n + (hi ? wn1 - c1 : wn1);
			sm->above_m = above_m + (hi ? wm1 - m1 : wm1);
			sm->at_n = hi ? c1 : c0;
		}
		__syncthreads();
		above_n = sm->above_n, above_m = sm->above_m, at_n = sm->at_n;
		prefix = prefix << width | (unsigned)d;
	}
	pk.found = 1;
	pk.key = prefix;
	pk.gt_n = above_n;
	pk.gt_mass = above_m;
	pk.at_n = at_n;
	return pk;
}

// 1 + the id of the need-th token (1-based, in id order) with key == K.
static __device__ int tie_cut(const struct row &r, unsigned K, u64 need, struct smem *sm)
{
	int lo, hi;
	chunk(r.V, threadIdx.x, &lo, &hi);
	u64 c = 0, total;
	for (int j = lo; j < hi; j++)
		c += key_of(prob(r, j)) == K;
	if (threadIdx.x == 0)
		sm->owner = -1;
	u64 ex = block_scan(c, &total);   // its barriers order owner's two writes
	if (ex < need && need <= ex + c)
		sm->owner = threadIdx.x, sm->base = ex;
	__syncthreads();
	int t = sm->owner;
	if (t < 0)
		return r.V;
	u64 left = need - sm->base;
	int J = r.V;
	auto f = [&](int j, float p) {
		if (key_of(p) == K && --left == 0) {
			J = j + 1;
			return 1;
		}
		return 0;
	};
	walk_chunk(r, t, sm, f);
	if (threadIdx.x == 0)
		sm->result = J;
	__syncthreads();
	return sm->result;
}

// Draw from the tokens with key > K, or key == K and id < J, in proportion
// to p, at uniform uni: walking them in id order, the first whose running
// sum passes u = uni * total. Each thread sums its chunk; a scan gives the
// sum before each chunk; the first chunk whose end passes u is walked.
static __device__ int draw(const struct row &r, unsigned K, int J, double uni, struct smem *sm)
{
	int lo, hi, last = -1;
	chunk(r.V, threadIdx.x, &lo, &hi);
	double s = 0, total;
	for (int j = lo; j < hi; j++) {
		float p = prob(r, j);
		unsigned k = key_of(p);
		if (k > K || (k == K && j < J)) {
			s += (double)p;
			if (p > 0)
				last = j;
		}
	}
	double pre = block_scan(s, &total), u = __dmul_rn(uni, total);
	// the walk below reaches pre + s, bit for bit, at the chunk's last p > 0
	int t = block_reduce(s > 0 && u < pre + s ? (int)threadIdx.x : INT_MAX, min_op());
	last = block_reduce(last, max_op());
	if (t == INT_MAX)
		return last;   // u rounded past the end: the last token that can be drawn
	if ((int)threadIdx.x == t)
		sm->pre = pre;
	__syncthreads();
	double base = sm->pre, acc = 0;
	int tok = last;
	auto f = [&](int j, float p) {
		unsigned k = key_of(p);
		if (!(k > K || (k == K && j < J)))
			return 0;
		acc += (double)p;
		if (p > 0 && u < base + acc) {
			tok = j;
			return 1;
		}
		return 0;
	};
	walk_chunk(r, t, sm, f);
	if (threadIdx.x == 0)
		sm->result = tok;
	__syncthreads();
	return sm->result;
}

// The kept set's (K, J) for top-k and top-p; (0, V) keeps everything.
static __device__ void kept_set(const struct row &r, float top_p, int top_k, unsigned *K, int *J, struct smem *sm)
{
	int V = r.V, topk = top_k > 0 && top_k < V, ncut;
	u64 m = (u64)V, need = 0, ties = 0, kept = 0;   // kept: the set's m most probable, need of its ties at K
	*K = 0, *J = V;
	if (!topk && !(top_p < 1))
		return;
	if (topk) {
		struct pick a = radix_search(r, 0, (u64)top_k, top_p, UINT_MAX, &ncut, sm);
		m = (u64)top_k, *K = a.key, need = m - a.gt_n, ties = a.at_n;
		kept = a.gt_mass + need * weight(a.key);
	}
	if (top_p < 1) {
		u64 goal = 0;
		if (topk) {
			double g = ceil((double)top_p * (double)kept);
			goal = g >= 1 ? (u64)g : 1;
		}
		unsigned cutkey = UINT_MAX;   // none: no p has these bits
		if (!topk && V > 1)
			cutkey = key_of(__fdiv_rn(__fsub_rn(1.0f, top_p), (float)(V - 1)));
		struct pick q = radix_search(r, 1, goal, top_p, cutkey, &ncut, sm);
		if (ncut > 0 && (u64)ncut < m)   // the prefilter's set: key >= cutkey
			m = (u64)ncut, *K = cutkey - 1, need = 0, ties = 0;
		if (q.found) {
			// the fewest ties at K that bring the mass above K to goal
			u64 w = weight(q.key), n = w ? (q.goal - q.gt_mass + w - 1) / w : q.at_n;
			n = n < 1 ? 1 : n > q.at_n ? q.at_n : n;
			if (q.gt_n + n < m)
				m = q.gt_n + n, *K = q.key, need = n, ties = q.at_n;
		}
	}
	*J = need == 0 ? 0 : need >= ties ? V : tie_cut(r, *K, need, sm);
}

}   // namespace

__global__ void __launch_bounds__(THREADS)
	sample_kernel(int32_t *tokens, float *logprobs, const float *__restrict__ logits, int V, float temperature,
		      float top_p, int top_k, const uint64_t *__restrict__ state, const int32_t *__restrict__ draws)
{
	__shared__ struct smem sm;
	int b = blockIdx.x, n = draws[b];
	if (n < 0)
		return;   // padding (the whole block)
	struct row r;
	r.z = logits + (size_t)b * V;
	r.V = V;
	r.inv = temperature > 0 ? 1.0 / (double)temperature : 1.0;
	int arg = block_argmax(r.z, V);
	double mx = __dmul_rn((double)r.z[arg], r.inv), s = 0;
	for (int j = threadIdx.x; j < V; j += THREADS)
		s += exp(__dsub_rn(__dmul_rn((double)r.z[j], r.inv), mx));
	s = block_reduce(s, add_op());
	r.lse = __dadd_rn(mx, log(s));
	int tok = arg;
	if (temperature > 0) {
		unsigned K;
		int J;
		kept_set(r, top_p, top_k, &K, &J, &sm);
		tok = draw(r, K, J, uniform_at(state[b], n), &sm);
		if (tok < 0)
			tok = arg;   // no p > 0 at all: only NaN logits do that
	}
	if (threadIdx.x == 0) {
		tokens[b] = tok;
		logprobs[b] = __double2float_rn(__dsub_rn(__dmul_rn((double)r.z[tok], r.inv), r.lse));
	}
}

cudaError_t launch_sample(int32_t *tokens, float *logprobs, const float *logits, int B, int V, float temperature,
			  float top_p, int top_k, const uint64_t *stream_state, const int32_t *draws, cudaStream_t s)
{
	if (B <= 0 || V <= 0)
		return B < 0 || V < 0 ? cudaErrorInvalidValue : cudaSuccess;
	sample_kernel<<<B, THREADS, 0, s>>>(tokens, logprobs, logits, V, temperature, top_p, top_k, stream_state,
					    draws);
	return cudaGetLastError();
}

extern "C" int gpu_sample_test(const float *logits, int B, int V, float temperature, float top_p, int top_k,
			       const uint64_t *stream_state, const int32_t *draws, int32_t *tokens, float *logprobs,
			       char *msg, size_t msglen)
{
	float *dz = NULL, *dlp = NULL;
	int32_t *dtok = NULL, *ddraws = NULL;
	uint64_t *dstate = NULL;
	size_t nz = (size_t)(B > 0 ? B : 0) * (V > 0 ? V : 0), nb = B > 0 ? (size_t)B : 0;
	cudaError_t err;
	const char *what = "cudaMalloc";
	if ((err = cudaMalloc((void **)&dz, nz * 4 + 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&dlp, nb * 4 + 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&dtok, nb * 4 + 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&ddraws, nb * 4 + 4)) != cudaSuccess ||
	    (err = cudaMalloc((void **)&dstate, nb * 8 + 8)) != cudaSuccess)
		goto out;
	what = "cudaMemcpy";
	// tokens and logprobs go in too: the rows the kernel skips keep them
	if ((err = cudaMemcpy(dz, logits, nz * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(dlp, logprobs, nb * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(dtok, tokens, nb * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(ddraws, draws, nb * 4, cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (err = cudaMemcpy(dstate, stream_state, nb * 8, cudaMemcpyHostToDevice)) != cudaSuccess)
		goto out;
	what = "launch_sample";
	if ((err = launch_sample(dtok, dlp, dz, B, V, temperature, top_p, top_k, dstate, ddraws, 0)) != cudaSuccess)
		goto out;
	what = "the sampling kernel";
	if ((err = cudaDeviceSynchronize()) != cudaSuccess)
		goto out;
	what = "cudaMemcpy";
	if ((err = cudaMemcpy(tokens, dtok, nb * 4, cudaMemcpyDeviceToHost)) != cudaSuccess ||
	    (err = cudaMemcpy(logprobs, dlp, nb * 4, cudaMemcpyDeviceToHost)) != cudaSuccess)
		goto out;
out:
	if (err != cudaSuccess)
		snprintf(msg, msglen, "%s: %s", what, cudaGetErrorString(err));
	cudaFree(dz);
	cudaFree(dlp);
	cudaFree(dtok);
	cudaFree(ddraws);
	cudaFree(dstate);
	return err == cudaSuccess ? 0 : -1;
}
