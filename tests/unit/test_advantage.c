/*
 * test_advantage: each estimator against values computed by hand, the edge
 * cases of advantage.h (groups of one, unequal sizes, NaN and infinite
 * rewards, overflow), and a property: never a NaN advantage over random
 * batches with non-finite rewards mixed in.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "score/advantage.h"
#include "tap.h"

enum { MAXN = 64 };
static float adv[MAXN];
static uint8_t zs[MAXN], ex[MAXN];

static int run(struct adv_opt o, uint32_t G, const uint32_t *size, uint32_t K, const double *r, const double *w)
{
	struct adv_batch b = { G, size, K, r, w };
	struct err e;
	int rc = adv_compute(&o, &b, adv, zs, ex, &e);
	if (rc < 0)
		diag("%s", e.msg);
	return rc;
}

static const double w1[] = { 1 };

int main(void)
{
	struct adv_opt o = ADV_OPT_INIT;
	uint32_t s4[] = { 4 };
	double r4[] = { 1, 0, 0, 1 };

	/* grpo, unbiased: mean 0.5, std sqrt(1/3) */
	ok(run(o, 1, s4, 1, r4, w1) == 0, "grpo runs");
	is_float(adv[0], 0.8658754297607016, 1e-6, "grpo unbiased: +");
	is_float(adv[1], -0.8658754297607016, 1e-6, "grpo unbiased: -");
	ok(!zs[0] && !ex[0], "not flat, not excluded");
	o.std_biased = 1;   /* std 0.5 */
	run(o, 1, s4, 1, r4, w1);
	is_float(adv[0], 0.9998000399920016, 1e-6, "grpo biased");
	o.std_biased = 0;
	o.std_eps = 0;
	run(o, 1, s4, 1, r4, w1);
	is_float(adv[3], 0.5 / sqrt(1.0 / 3), 1e-6, "grpo, --std-eps 0");
	o = (struct adv_opt)ADV_OPT_INIT;

	o.kind = ADV_DR_GRPO;
	run(o, 1, s4, 1, r4, w1);
	is_float(adv[0], 0.5, 1e-7, "dr_grpo: r - mean");
	is_float(adv[2], -0.5, 1e-7, "dr_grpo: r - mean, -");

	o.kind = ADV_RLOO;
	run(o, 1, s4, 1, r4, w1);
	is_float(adv[0], 1 - 1.0 / 3, 1e-7, "rloo: 1 - (0+0+1)/3");
	is_float(adv[1], 0 - 2.0 / 3, 1e-7, "rloo: 0 - (1+0+1)/3");

	/* batch: groups [1,0] and [2,2]; std over all four values (unbiased) */
	o.kind = ADV_BATCH;
	uint32_t s22[] = { 2, 2 };
	double rb[] = { 1, 0, 2, 2 };
	run(o, 2, s22, 1, rb, w1);
	is_float(adv[0], 0.52217842810904, 1e-6, "batch: group mean, batch std");
	is_float(adv[1], -0.52217842810904, 1e-6, "batch: -");
	ok(!zs[0] && zs[1] && adv[2] == 0 && adv[3] == 0, "batch: the flat group is zero");

	/* one-member group, unequal sizes */
	o = (struct adv_opt)ADV_OPT_INIT;
	uint32_t s13[] = { 1, 3 };
	double ru[] = { 5, 1, 2, 3 };
	run(o, 2, s13, 1, ru, w1);
	ok(zs[0] && adv[0] == 0, "a group of one: zero std, advantage 0");
	is_float(adv[1], -1 / (1 + 1e-4), 1e-6, "unequal sizes: the group of 3 alone (std 1)");
	is_float(adv[3], 1 / (1 + 1e-4), 1e-6, "unequal sizes: +");
	is_float(adv[2], 0, 0, "unequal sizes: the mean member");
	for (int k = 0; k < 4; k++) {
		o.kind = (enum adv_kind)k;
		run(o, 2, s13, 1, ru, w1);
		ok(zs[0] && adv[0] == 0, "estimator %d: a group of one gets 0", k);
	}
	o = (struct adv_opt)ADV_OPT_INIT;

	/* all equal */
	double req[] = { 0.3, 0.3, 0.3, 0.3 };
	run(o, 1, s4, 1, req, w1);
	ok(zs[0] && adv[0] == 0 && adv[3] == 0, "all equal: zero std, zero advantages");

	/* NaN and inf: left out of the statistics, advantage 0 */
	uint32_t s3[] = { 3 };
	double rn[] = { 1, NAN, 0 };
	run(o, 1, s3, 1, rn, w1);
	ok(ex[1] && adv[1] == 0 && !ex[0], "NaN reward: excluded, advantage 0");
	is_float(adv[0], 0.7070067953266834, 1e-6, "NaN reward: the others use their own std");
	double ri[] = { INFINITY, 1, 0 };
	run(o, 1, s3, 1, ri, w1);
	ok(ex[0] && adv[0] == 0 && fabsf(adv[1] - 0.7070068f) < 1e-6, "inf reward: excluded");
	double rnn[] = { NAN, -INFINITY, 2 };
	run(o, 1, s3, 1, rnn, w1);
	ok(zs[0] && adv[0] == 0 && adv[1] == 0 && adv[2] == 0, "one valid member left: zero std");

	/* several functions */
	uint32_t s3b[] = { 3 };
	double r2[] = { 1, 0, 0, 1, 0, 0 };   /* rows (1,0) (0,1) (0,0) */
	double w2[] = { 1, 0.5 };
	run(o, 1, s3b, 2, r2, w2);   /* sums 1, 0.5, 0: mean .5, std .5 */
	is_float(adv[0], 0.5 / 0.5001, 1e-6, "sum-then-normalize: +");
	is_float(adv[1], 0, 1e-7, "sum-then-normalize: mean");
	is_float(adv[2], -0.5 / 0.5001, 1e-6, "sum-then-normalize: -");
	o.combine = ADV_NORMALIZE_THEN_SUM;
	run(o, 1, s3b, 2, r2, w2);
	/* each function: [1,0,0] -> (2/3, -1/3, -1/3) / (sqrt(1/3) + 1e-4) */
	double a = 1.1545005730142688, b = 0.5772502865071344;
	is_float(adv[0], a - 0.5 * b, 1e-6, "normalize-then-sum: 1st");
	is_float(adv[1], -b + 0.5 * a, 1e-6, "normalize-then-sum: 2nd");
	is_float(adv[2], -b - 0.5 * b, 1e-6, "normalize-then-sum: 3rd");
	double r2f[] = { 1, 0, 1, 1, 1, 2 };   /* the first function flat, the second not */
	run(o, 1, s3b, 2, r2f, w2);
	ok(!zs[0] && adv[0] < 0 && adv[2] > 0, "normalize-then-sum: one flat function contributes 0");
	o = (struct adv_opt)ADV_OPT_INIT;

	/* overflow is an error, not an inf */
	uint32_t s2[] = { 2 };
	double rbig[] = { 3e38, -3e38 };
	o.kind = ADV_RLOO;
	struct adv_batch bb = { 1, s2, 1, rbig, w1 };
	struct err e;
	ok(adv_compute(&o, &bb, adv, zs, ex, &e) < 0 && strstr(e.msg, "group 0, member 0"), "overflow: %s", e.msg);

	/* a weight so large that the weighted rewards' squares overflow a double:
	 * grpo is scale-free, so the advantages are those of weight 1 (eps aside) */
	static const double whuge[] = { 1e200 };
	o = (struct adv_opt)ADV_OPT_INIT;
	o.std_eps = 0;
	ok(run(o, 1, s4, 1, r4, whuge) == 0 && !zs[0], "grpo, weight 1e200: runs, group not flat");
	is_float(adv[0], 0.5 / sqrt(1.0 / 3), 1e-6, "grpo, weight 1e200: + as with weight 1");
	is_float(adv[1], -0.5 / sqrt(1.0 / 3), 1e-6, "grpo, weight 1e200: -");
	o.kind = ADV_BATCH;
	run(o, 1, s4, 1, r4, whuge);
	is_float(adv[0], 0.5 / sqrt(1.0 / 3), 1e-6, "batch, weight 1e200: the batch std too");
	o = (struct adv_opt)ADV_OPT_INIT;

	/* weighted rewards whose sum overflows a double (weight 1e308): the
	 * mean taken as the sum of value / m, and the advantages those of
	 * weight 1, group by group: [1,1,0] (mean 2/3, std sqrt(1/3)), [1,0] */
	static const double wmax[] = { 1e308 };
	uint32_t s32[] = { 3, 2 };
	double r32[] = { 1, 1, 0, 1, 0 };
	o.std_eps = 0;
	ok(run(o, 2, s32, 1, r32, wmax) == 0, "grpo, weight 1e308: runs");
	is_float(adv[0], (1 / 3.0) / sqrt(1 / 3.0), 1e-6, "weight 1e308, a sum past a double's range: +");
	is_float(adv[2], (-2 / 3.0) / sqrt(1 / 3.0), 1e-6, "weight 1e308: -, the mean of this group alone");
	is_float(adv[3], 0.5 / sqrt(0.5), 1e-6, "weight 1e308: the second group");
	o = (struct adv_opt)ADV_OPT_INIT;

	/* a NaN in a later group: left out of that group's statistics */
	double rn2[] = { 1, 0, 2, NAN, 1, 0 };
	run(o, 2, (uint32_t[]){ 3, 3 }, 1, rn2, w1);
	ok(ex[3] && adv[3] == 0, "NaN in the second group: excluded, advantage 0");
	is_float(adv[4], 0.5 / (sqrt(0.5) + 1e-4), 1e-6, "NaN in the second group: its others use their own std");
	/* a group with no valid reward at all has zero std (--drop-zero-std drops it) */
	double rall[] = { 1, 0, NAN, INFINITY };
	zs[1] = 0;
	run(o, 2, s22, 1, rall, w1);
	ok(!zs[0] && zs[1] && adv[2] == 0 && adv[3] == 0, "a group of only non-finite rewards: zero std");
	/* normalize-then-sum: every function flat in the group */
	double rflat[] = { 1, 2, 1, 2, 1, 2 };
	o.combine = ADV_NORMALIZE_THEN_SUM;
	zs[0] = 0;
	run(o, 1, s3b, 2, rflat, w2);
	ok(zs[0] && adv[0] == 0 && adv[2] == 0, "normalize-then-sum, every function flat: zero std");
	o = (struct adv_opt)ADV_OPT_INIT;

	/* overflow in a later group names that group and its own member */
	double rbig2[] = { 1, 0, 3e38, -3e38 };
	o.kind = ADV_RLOO;
	struct adv_batch bb2 = { 2, s22, 1, rbig2, w1 };
	ok(adv_compute(&o, &bb2, adv, zs, ex, &e) < 0 && strstr(e.msg, "group 1, member 0"), "overflow: %s", e.msg);
	o = (struct adv_opt)ADV_OPT_INIT;

	/* N advantages and flags and n_groups zero-std flags written, nothing past them */
	{
		float a5[6];
		uint8_t z3[3], x6[6];
		a5[5] = 42, z3[2] = 42, x6[5] = 42;
		for (int k = 0; k < 2; k++) {
			o.combine = (enum adv_combine)k;
			struct adv_batch b5 = { 2, s32, 1, r32, w1 };
			ok(adv_compute(&o, &b5, a5, z3, x6, &e) == 0 && a5[5] == 42 && z3[2] == 42 && x6[5] == 42,
			   "%s: nothing written past the batch", adv_combine_names[k]);
		}
		o = (struct adv_opt)ADV_OPT_INIT;
		struct adv_batch none = { 0, s32, 1, r32, w1 };
		ok(adv_compute(&o, &none, a5, z3, x6, &e) == 0, "a batch of no group: nothing to do, no error");
	}

	/* property: never NaN, whatever the rewards */
	srand(7);
	int nan_seen = 0;
	for (int it = 0; it < 500; it++) {
		uint32_t G = 1 + rand() % 4, sz[4], n = 0, K = 1 + rand() % 3;
		double r[MAXN], w[3] = { 1, -0.5, 2 };
		for (uint32_t g = 0; g < G; g++)
			n += sz[g] = 1 + rand() % 5;
		for (uint32_t i = 0; i < n * K; i++) {
			int c = rand() % 10;
			r[i] = c == 0 ? NAN : c == 1 ? INFINITY : c < 5 ? (double)(rand() % 3) : rand() / (double)RAND_MAX;
		}
		struct adv_opt po = { (enum adv_kind)(rand() % 4), rand() % 2, rand() % 2 ? 0 : 1e-4,
				      (enum adv_combine)(rand() % 2) };
		struct adv_batch pb = { G, sz, K, r, w };
		if (adv_compute(&po, &pb, adv, zs, ex, &e) < 0)
			nan_seen++;
		for (uint32_t i = 0; i < n; i++)
			nan_seen += !isfinite(adv[i]);
	}
	is_int(nan_seen, 0, "500 random batches with NaN and inf rewards: every advantage finite");
	ok(strcmp(adv_kind_names[ADV_RLOO], "rloo") == 0 && strcmp(adv_kind_names[ADV_BATCH], "batch") == 0 &&
	   !adv_kind_names[4], "--advantage words, in the enum's order");
	ok(strcmp(adv_combine_names[ADV_NORMALIZE_THEN_SUM], "normalize-then-sum") == 0, "--combine words");
	return tap_done();
}
