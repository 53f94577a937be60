// loss.cu: see loss.cuh. Built without fused multiply-adds (the Makefile's
// --fmad=false for this file), so that each double operation rounds as the
// host's does and the gradients are the host's but where exp() differs in
// its last bit.
#include "gpu_model.h"
#include "loss.cuh"

#define THREADS 256

__global__ void loss_rows_kernel(float *dlp, float *dent, const float *lp, struct loss_rows in, struct loss_opts o,
				 int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int f = in.flags[i];
	float g = 0, e = 0;
	if (f & GPU_LOSS_TOKEN) {
		double l = lp[i];
		struct loss_token_in t;
		t.l = l;
		t.old = f & GPU_LOSS_OLD_OWN ? l : (double)in.old[i];
		t.A = in.adv[i];
		t.w = in.w[i];
		t.has_behav = in.behav != NULL;
		t.behav = f & GPU_LOSS_BEHAV_OWN ? l : t.has_behav ? (double)in.behav[i] : 0.0;
		t.has_ref = in.ref != NULL;
		t.ref = t.has_ref ? (double)in.ref[i] : 0.0;
		int live;
		double r = loss_token_ratio(&t, &live);
		struct loss_token k = loss_token_eval(&o, &t, r, live);
		g = (float)k.dlogprob;
		e = o.entropy_coef != 0 ? (float)k.dentropy : 0.0f;
	}
	dlp[i] = g;
	dent[i] = e;
}

cudaError_t launch_loss_rows(float *dlp, float *dent, const float *lp, struct loss_rows in, struct loss_opts o, int n,
			     cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	loss_rows_kernel<<<(n + THREADS - 1) / THREADS, THREADS, 0, s>>>(dlp, dent, lp, in, o, n);
	return cudaGetLastError();
}
