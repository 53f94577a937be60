/*
 * softmax_stats.h: the statistics of one row of logits that the LM head
 * needs, computed in double. With x = z / temp:
 *
 *   lse     = log sum_j exp(x_j)
 *   logprob = x_target - lse
 *   entropy = lse - sum_j softmax(x)_j x_j
 *
 * The one definition the C model (model.c's LM head) and the CUDA kernel's
 * test (tests/cuda) both use: header-only, so the CUDA test needs nothing
 * else of lib/. Sums run in double because V can be 150k.
 */
#ifndef GRPO_SOFTMAX_STATS_H
#define GRPO_SOFTMAX_STATS_H

#include <math.h>

static inline void softmax_stats(const float *z, int V, int target, double temp, float *logprob,
                                 float *entropy, float *lse)
{
	double inv = 1.0 / temp, mx = -INFINITY;
	for (int j = 0; j < V; j++)
		mx = z[j] * inv > mx ? z[j] * inv : mx;
	double sum = 0, sz = 0;
	for (int j = 0; j < V; j++) {
		double e = exp(z[j] * inv - mx);
		sum += e;
		if (e > 0)   /* a -inf logit: p log p -> 0, not 0 * -inf = NaN */
			sz += e * (z[j] * inv);
	}
	double l = mx + log(sum);
	*logprob = (float)(z[target] * inv - l);
	*lse = (float)l;
	*entropy = (float)(l - sz / sum);   /* H = lse - E_p[x] */
}

#endif
