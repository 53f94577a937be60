/*
 * test_softmax_stats: the LM head's row statistics (model/softmax_stats.h),
 * the definition the C model and the CUDA kernel's test share. Entries of
 * -inf are tokens of probability 0: they change nothing, as the kernel
 * (tests/cuda/lmhead_sim) has them.
 */
#include <math.h>

#include "../tap.h"
#include "model/softmax_stats.h"

int main(void)
{
	float z[4] = { 1.0f, 2.0f, 0.5f, -1.0f }, lp, h, lse;
	double p[4], s = 0, want_h = 0;
	for (int j = 0; j < 4; j++)
		s += p[j] = exp(z[j] / 0.7);
	for (int j = 0; j < 4; j++)
		want_h -= p[j] / s * log(p[j] / s);
	softmax_stats(z, 4, 1, 0.7, &lp, &h, &lse);
	is_float(lse, log(s), 1e-6, "lse of a row at temperature 0.7");
	is_float(lp, log(p[1] / s), 1e-6, "the target's logprob");
	is_float(h, want_h, 1e-6, "the entropy, -sum p log p");

	float zi[6] = { 1.0f, -INFINITY, 2.0f, 0.5f, -INFINITY, -1.0f }, lpi, hi, lsei;
	softmax_stats(zi, 6, 2, 0.7, &lpi, &hi, &lsei);
	ok(lpi == lp && hi == h && lsei == lse, "entries of -inf change nothing (entropy %g, not NaN)", hi);
	softmax_stats(zi, 6, 1, 0.7, &lpi, &hi, &lsei);
	ok(lpi == -INFINITY, "a target of -inf has logprob -inf");

	float one[3] = { -INFINITY, 3.0f, -INFINITY };
	softmax_stats(one, 3, 1, 1.0, &lpi, &hi, &lsei);
	ok(lpi == 0 && hi == 0 && lsei == 3.0f, "one finite entry: probability 1, entropy 0");
	float flat[5] = { 2, 2, 2, 2, 2 };
	softmax_stats(flat, 5, 0, 1.3, &lpi, &hi, &lsei);
	is_float(hi, log(5.0), 1e-6, "a flat row: entropy log V");
	return tap_done();
}
