/*
 * kernel_check.h: what the attention tests (test_cuda_attention,
 * test_cuda_paged) draw and compare alike. Header-only; included after
 * ../xorshift.h, whose stream gauss() draws from.
 *
 *   gauss()                 a standard normal
 *   round_bf16(x)           x rounded to bf16 (nearest even), as a float
 *   compare(got, want, ...) the worst and mean |got - want| against a double
 *                           reference, and the misses of a tolerance
 */
#ifndef GRPO_TESTS_KERNEL_CHECK_H
#define GRPO_TESTS_KERNEL_CHECK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static double gauss(void)
{
	return sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand());
}

static float round_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);   /* round to nearest even; no NaNs here */
	u &= 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

/*
 * Worst and mean |got - want| over n values; bad counts the misses of
 * abs + rel * (the largest |want| with of_max, else |want|), NaN missing,
 * and first is the first miss.
 */
struct cmp { double worst, mean, scale; size_t bad, first; };
static struct cmp compare(const float *got, const double *want, size_t n, double abs, double rel, int of_max)
{
	struct cmp c = { 0, 0, 0, 0, 0 };
	for (size_t i = 0; i < n; i++)
		c.scale = fabs(want[i]) > c.scale ? fabs(want[i]) : c.scale;
	for (size_t i = 0; i < n; i++) {
		double d = fabs(got[i] - want[i]);
		double bound = of_max ? abs + rel * c.scale : abs + rel * fabs(want[i]);
		if (!(d <= bound) && c.bad++ == 0)
			c.first = i;
		c.worst = d > c.worst || isnan(d) ? d : c.worst;
		c.mean += d / n;
	}
	return c;
}

#endif
