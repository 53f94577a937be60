// lmhead.cu: the LM head's softmax statistics (see lmhead.h for the maths).
// One block per row; two passes over the row (its maximum, then the sums),
// which stay in L2 for any vocabulary size in use (150k floats: 600 KB).
#include <cuda_runtime.h>
#include <math.h>

#include "lmhead.h"

#define THREADS 256
#define WARPS (THREADS / 32)

static __device__ float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

static __device__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// Kahan step: s + e with the lost low bits carried in comp.
static __device__ void kahan(float *s, float *comp, float e)
{
	float y = e - *comp, t = *s + y;
	*comp = (t - *s) - y;
	*s = t;
}

__global__ void lmhead_stats_kernel(const float *__restrict__ logits, const int32_t *__restrict__ targets,
				    const float *__restrict__ temps, int V, float *logprob, float *entropy,
				    float *lse)
{
	__shared__ float sh[3][WARPS];
	const float *z = logits + (size_t)blockIdx.x * V;
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

	// pass 1: the row's largest logit (temperature > 0 keeps the argmax)
	float zmax = -INFINITY;
	for (int j = threadIdx.x; j < V; j += THREADS)
		zmax = fmaxf(zmax, z[j]);
	zmax = warp_max(zmax);
	if (lane == 0)
		sh[0][warp] = zmax;
	__syncthreads();
	zmax = sh[0][0];
	for (int w = 1; w < WARPS; w++)
		zmax = fmaxf(zmax, sh[0][w]);
	__syncthreads();

	// pass 2: c = #{x_j == m}, r = sum e_j and u = sum e_j d_j over the rest
	float inv = 1.0f / temps[blockIdx.x];
	float c = 0, r = 0, rc = 0, u = 0, uc = 0;
	for (int j = threadIdx.x; j < V; j += THREADS) {
		float zj = z[j];
		if (zj == zmax) {
			c += 1.0f;
			continue;
		}
		float d = (zmax - zj) * inv, e = expf(-d);
		kahan(&r, &rc, e);
		kahan(&u, &uc, e * d);
	}
	c = warp_sum(c);
	r = warp_sum(r - rc);
	u = warp_sum(u - uc);
	if (lane == 0) {
		sh[0][warp] = c;
		sh[1][warp] = r;
		sh[2][warp] = u;
	}
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	c = r = u = 0;
	for (int w = 0; w < WARPS; w++) {
		c += sh[0][w];
		r += sh[1][w];
		u += sh[2][w];
	}
	float logs = logf(c) + log1pf(r / c);   // log of s = c + r, exact near s = 1
	float m = zmax * inv;
	int t = targets[blockIdx.x];
	lse[blockIdx.x] = m + logs;
	entropy[blockIdx.x] = logs + u / (c + r);
	if (t < 0 || t >= V)
		logprob[blockIdx.x] = NAN;
	else
		logprob[blockIdx.x] = -(zmax - z[t]) * inv - logs;
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
