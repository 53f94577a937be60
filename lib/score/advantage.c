/*
 * advantage.c: the estimators of advantage.h, in double precision; the
 * result is rounded to float once, at the end.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "score/advantage.h"

const char *const adv_kind_names[] = {
	[ADV_GRPO] = "grpo", [ADV_DR_GRPO] = "dr_grpo", [ADV_RLOO] = "rloo", [ADV_BATCH] = "batch", NULL
};
const char *const adv_combine_names[] = {
	[ADV_SUM_THEN_NORMALIZE] = "sum-then-normalize", [ADV_NORMALIZE_THEN_SUM] = "normalize-then-sum", NULL
};

/* Mean and std of the valid values of x[0..n). */
static void moments(const double *x, const uint8_t *bad, uint32_t n, int biased, uint32_t *m, double *mean,
		    double *sd)
{
	double s = 0, ss = 0;
	uint32_t c = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!bad[i]) {
			s += x[i];
			c++;
		}
	*m = c;
	*mean = c ? s / c : 0;
	if (isinf(*mean)) {   /* a sum past 1e308, of weighted rewards: the sum of the values / c */
		*mean = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!bad[i])
				*mean += x[i] / c;
	}
	/*
	 * Deviations are taken relative to the largest, so that weighted rewards
	 * past 1e154, whose squares overflow, still give their std (an inf std
	 * made every advantage 0). The scale is a power of two: exact.
	 */
	double big = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!bad[i])
			big = fmax(big, fabs(x[i] - *mean));
	int ex;
	frexp(big, &ex);
	double scale = big > 1e150 ? ldexp(1.0, -ex) : 1;
	for (uint32_t i = 0; i < n; i++)
		if (!bad[i])
			ss += (x[i] - *mean) * scale * ((x[i] - *mean) * scale);
	uint32_t d = biased ? c : c - 1;
	*sd = c >= 2 ? sqrt(ss / d) / scale : 0;
}

/*
 * One estimator over one column of values x (N), writing out (N) and
 * setting flat[g] = 1 for groups with zero std (out 0 there).
 */
static void estimate(const struct adv_opt *o, const struct adv_batch *b, const double *x, const uint8_t *bad,
		     double *out, uint8_t *flat)
{
	uint32_t n = 0;
	for (uint32_t g = 0; g < b->n_groups; g++)
		n += b->size[g];
	uint32_t mb;
	double bmean, bsd = 0;
	if (o->kind == ADV_BATCH)
		moments(x, bad, n, o->std_biased, &mb, &bmean, &bsd);
	for (uint32_t g = 0, at = 0; g < b->n_groups; at += b->size[g], g++) {
		const double *v = x + at;
		uint32_t m, sz = b->size[g];
		double mean, sd, lo = INFINITY, hi = -INFINITY, sum = 0;
		moments(v, bad + at, sz, o->std_biased, &m, &mean, &sd);
		for (uint32_t i = 0; i < sz; i++)
			if (!bad[at + i]) {
				lo = fmin(lo, v[i]);
				hi = fmax(hi, v[i]);
				sum += v[i];
			}
		flat[g] = m < 2 || lo == hi;
		for (uint32_t i = 0; i < sz; i++) {
			double a = 0;
			if (!flat[g] && !bad[at + i]) {
				switch (o->kind) {
				case ADV_GRPO: a = (v[i] - mean) / (sd + o->std_eps); break;
				case ADV_DR_GRPO: a = v[i] - mean; break;
				case ADV_RLOO: a = v[i] - (sum - v[i]) / (m - 1); break;
				case ADV_BATCH: a = (v[i] - mean) / (bsd + o->std_eps); break;
				}
			}
			out[at + i] = a;
		}
	}
}

int adv_compute(const struct adv_opt *o, const struct adv_batch *b, float *adv, uint8_t *zero_std,
		uint8_t *excluded, struct err *e)
{
	uint32_t n = 0, K = b->n_rewards;
	for (uint32_t g = 0; g < b->n_groups; g++)
		n += b->size[g];
	double *x = malloc(((size_t)n * 2 + 1) * sizeof *x);
	uint8_t *flat = malloc((size_t)b->n_groups + 1);
	if (!x || !flat) {
		free(x);
		free(flat);
		return err_set(e, "out of memory computing advantages for %u sequences", n);
	}
	double *out = x + n;
	for (uint32_t i = 0; i < n; i++) {
		excluded[i] = 0;
		for (uint32_t k = 0; k < K; k++)
			excluded[i] |= !isfinite((float)b->rewards[(size_t)i * K + k]);
	}
	double *acc = calloc((size_t)n + 1, sizeof *acc);
	if (!acc) {
		free(x);
		free(flat);
		return err_set(e, "out of memory computing advantages for %u sequences", n);
	}
	if (o->combine == ADV_SUM_THEN_NORMALIZE) {
		for (uint32_t i = 0; i < n; i++) {
			x[i] = 0;
			for (uint32_t k = 0; k < K && !excluded[i]; k++)
				x[i] += b->weights[k] * b->rewards[(size_t)i * K + k];
		}
		estimate(o, b, x, excluded, acc, zero_std);
	} else {
		memset(zero_std, 1, b->n_groups);
		for (uint32_t k = 0; k < K; k++) {
			for (uint32_t i = 0; i < n; i++)
				x[i] = excluded[i] ? 0 : b->rewards[(size_t)i * K + k];
			estimate(o, b, x, excluded, out, flat);
			for (uint32_t i = 0; i < n; i++)
				acc[i] += b->weights[k] * out[i];
			for (uint32_t g = 0; g < b->n_groups; g++)
				zero_std[g] &= flat[g];
		}
	}
	int r = 0;
	for (uint32_t g = 0, at = 0; g < b->n_groups && r == 0; at += b->size[g], g++)
		for (uint32_t i = at; i < at + b->size[g]; i++) {
			adv[i] = zero_std[g] ? 0.0f : (float)acc[i];
			if (!isfinite(adv[i])) {
				r = err_set(e, "group %u, member %u: advantage %g does not fit a float (rewards too large)",
					    g, i - at, acc[i]);
				break;
			}
		}
	free(acc);
	free(x);
	free(flat);
	return r;
}
