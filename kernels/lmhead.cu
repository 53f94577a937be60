// lmhead.cu: the LM head's softmax statistics (see lmhead.h for the maths).
// One block per row and one pass over it: a row is read once, since the
// rows in flight (V 151936: 600 KB each) far exceed L2 and a second pass
// would go to HBM again. Each thread keeps an online-softmax state over its
// share of the row, rescaled when its maximum grows; the block then merges
// the states in a fixed order, so results are deterministic.
// tests/cuda/lmhead_sim runs the kernel on the CPU (the code from THREADS to
// the launcher, which it leaves out).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "lmhead.h"

#define THREADS 256
#define WARPS (THREADS / 32)

// The sums over the entries seen so far, relative to their maximum m (raw
// logits): c entries equal m, r = sum e_j = sum exp(-d_j) and u = sum e_j d_j
// over the others, d_j = (m - z_j) / T > 0. rc and uc: Kahan compensations.
struct lm_state {
	float m, c, r, rc, u, uc;
};

// Kahan step: s + e with the lost low bits carried in comp.
static __device__ void kahan(float *s, float *comp, float e)
{
	float y = e - *comp, t = *s + y;
	*comp = (t - *s) - y;
	*s = t;
}

// A maximum larger by delta = (m' - m) / T: every term's e_j becomes
// e^-delta e_j and its d_j becomes d_j + delta, and the c ties at m join the
// terms with d = delta. An empty state, or one of -inf logits, has delta
// inf; capping d's factor at 128 (e^-128 is 0 in fp32) keeps 0 * inf from
// making a NaN. The same cap stands below for entries of -inf.
static __device__ void lower(float delta, float c, float *r, float *u)
{
	float s = expf(-delta), n = *r + c;
	*u = s * (*u + fminf(delta, 128.0f) * n);
	*r = s * n;
}

static __device__ void push(struct lm_state *a, float zj, float inv)
{
	if (zj > a->m) {
		float r = a->r - a->rc, u = a->u - a->uc;
		lower((zj - a->m) * inv, a->c, &r, &u);
		*a = { zj, 1.0f, r, 0.0f, u, 0.0f };
	} else if (zj == a->m) {
		a->c += 1.0f;
	} else {   // also a NaN logit, which makes the sums NaN
		float d = (a->m - zj) * inv, e = expf(-d);
		kahan(&a->r, &a->rc, e);
		kahan(&a->u, &a->uc, e * fminf(d, 128.0f));
	}
}

// Two states' merge (compensations folded in): the larger maximum stays, the
// other state's terms are lowered to it. Symmetric bit for bit, so both
// lanes of a shuffle hold the same result.
static __device__ void merge(float *m, float *c, float *r, float *u, float m2, float c2, float r2, float u2,
			     float inv)
{
	if (m2 > *m) {
		float t;
		t = *m, *m = m2, m2 = t;
		t = *c, *c = c2, c2 = t;
		t = *r, *r = r2, r2 = t;
		t = *u, *u = u2, u2 = t;
	}
	if (m2 < *m) {
		lower((*m - m2) * inv, c2, &r2, &u2);
		c2 = 0;
	}
	*c += c2;
	*r += r2;
	*u += u2;
}

__global__ void lmhead_stats_kernel(const float *__restrict__ logits, const int32_t *__restrict__ targets,
				    const float *__restrict__ temps, int V, float *logprob, float *entropy,
				    float *lse)
{
	__shared__ float sh[4][WARPS];
	const float *z = logits + (size_t)blockIdx.x * V;
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	float inv = 1.0f / temps[blockIdx.x];

	// this thread's share: 16-byte loads where every row is 16-byte aligned,
	// two in flight at a time (a single pass lives on memory parallelism)
	struct lm_state a = { -INFINITY, 0, 0, 0, 0, 0 };
	if (V % 4 == 0 && (uintptr_t)logits % 16 == 0) {
		const float4 *z4 = (const float4 *)z;
		int j = threadIdx.x, n4 = V / 4;
		for (; j + THREADS < n4; j += 2 * THREADS) {
			float4 p = z4[j], q = z4[j + THREADS];
			push(&a, p.x, inv);
			push(&a, p.y, inv);
			push(&a, p.z, inv);
			push(&a, p.w, inv);
			push(&a, q.x, inv);
			push(&a, q.y, inv);
			push(&a, q.z, inv);
			push(&a, q.w, inv);
		}
		if (j < n4) {
			float4 p = z4[j];
			push(&a, p.x, inv);
			push(&a, p.y, inv);
			push(&a, p.z, inv);
			push(&a, p.w, inv);
		}
	} else {
		for (int j = threadIdx.x; j < V; j += THREADS)
			push(&a, z[j], inv);
	}

	// the block's: across the warp, then warp 0's lane 0 over the warps in order
	float m = a.m, c = a.c, r = a.r - a.rc, u = a.u - a.uc;
	for (int o = 16; o > 0; o >>= 1)
		merge(&m, &c, &r, &u, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, c, o),
		      __shfl_xor_sync(0xffffffffu, r, o), __shfl_xor_sync(0xffffffffu, u, o), inv);
	if (lane == 0) {
		sh[0][warp] = m;
		sh[1][warp] = c;
		sh[2][warp] = r;
		sh[3][warp] = u;
	}
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	for (int w = 1; w < WARPS; w++)
		merge(&m, &c, &r, &u, sh[0][w], sh[1][w], sh[2][w], sh[3][w], inv);
	float logs = logf(c) + log1pf(r / c);   // log of s = c + r, exact near s = 1
	int t = targets[blockIdx.x];
	lse[blockIdx.x] = m * inv + logs;
	entropy[blockIdx.x] = logs + u / (c + r);
	if (t < 0 || t >= V)
		logprob[blockIdx.x] = NAN;
	else
		logprob[blockIdx.x] = -(m - z[t]) * inv - logs;
}

extern "C" int grpo_cuda_lmhead_stats(const float *logits, const int32_t *targets, const float *temps, int n,
				      int V, float *logprob, float *entropy, float *lse, void *stream)
{
	if (n <= 0 || V <= 0)
		return n < 0 || V < 0 ? (int)cudaErrorInvalidValue : 0;
	lmhead_stats_kernel<<<n, THREADS, 0, (cudaStream_t)stream>>>(logits, targets, temps, V, logprob, entropy,
								       lse);
	return (int)cudaGetLastError();
}

extern "C" const char *grpo_cuda_strerror(int err)
{
	return cudaGetErrorString((cudaError_t)err);
}
