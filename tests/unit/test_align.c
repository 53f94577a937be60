/*
 * test_align: align_group, grpo-cat --model's check of the sampler's
 * logprobs, against the model run on each sequence alone through the
 * key/value cache (model_step), the logprob and entropy taken here from the
 * full softmax of its raw logits at the trajectory's temperature. Every
 * response token's model_logprobs and model_entropy, and the trajectory's
 * n_trained and mean, mean absolute and largest difference from sampler
 * logprobs set to the reference's minus known offsets; at several
 * temperatures; with masked tokens, no prompt, no response, no sampler
 * logprobs, no token at all; token ids at both ends of the vocabulary and
 * outside it; and groups of more than ALIGN_MAX_PACK tokens, which go
 * through several packs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/align.h"
#include "../tap.h"
#define XORSHIFT_SEED 0xa119u
#include "../xorshift.h"

enum { V = 40 };
#define TOL 1e-4

static struct model M;

/* The reference values of one trajectory's response tokens. */
struct ref {
	double *lp, *ent;
};

static struct traj *new_traj(struct group *g, uint32_t np, uint32_t nr, float temp)
{
	g->trajs = realloc(g->trajs, (g->n + 1) * sizeof *g->trajs);
	struct traj *t = &g->trajs[g->n++];
	traj_init(t);
	t->prompt_tokens = malloc((np + 1) * sizeof(int32_t));
	t->response_tokens = malloc((nr + 2) * sizeof(int32_t));   /* room for one more (grow_response) */
	for (uint32_t k = 0; k < np; k++)
		t->prompt_tokens[k] = (int32_t)(xorshift32() % V);
	for (uint32_t k = 0; k < nr; k++)
		t->response_tokens[k] = (int32_t)(xorshift32() % V);
	t->n_prompt = np, t->n_response = nr, t->temperature = temp;
	return t;
}

/* The model on t alone: logprob and entropy of each response token at t's
 * temperature; 0 for a first token, which nothing predicts (model.h). */
static void reference(const struct traj *t, struct ref *r)
{
	uint32_t np = t->n_prompt, nr = t->n_response, n = np + nr;
	r->lp = calloc(nr + 1, sizeof *r->lp);
	r->ent = calloc(nr + 1, sizeof *r->ent);
	if (!nr)
		return;
	int *ids = malloc(n * sizeof *ids), *slots = calloc(n, sizeof *slots);
	float *z = malloc((size_t)n * V * sizeof *z);
	struct model_kv kv;
	struct err e = { 0 };
	for (uint32_t j = 0; j < n; j++)
		ids[j] = j < np ? t->prompt_tokens[j] : t->response_tokens[j - np];
	if (model_kv_alloc(&M, &kv, 1, (int)n, (int)n, &e) < 0 || model_step(&M, &kv, ids, slots, (int)n, NULL, z, &e) < 0) {
		diag("the reference fails: %s", e.msg);
		exit(1);
	}
	model_kv_free(&kv);
	double tau = t->temperature;
	for (uint32_t k = 0; k < nr; k++) {
		uint32_t j = np + k;
		if (j == 0)
			continue;
		const float *row = z + (size_t)(j - 1) * V;   /* the logits after token j-1 predict token j */
		double mx = -INFINITY, s = 0, sz = 0;
		for (int v = 0; v < V; v++)
			mx = fmax(mx, row[v] / tau);
		for (int v = 0; v < V; v++) {
			double p = exp(row[v] / tau - mx);
			s += p;
			sz += p * (row[v] / tau);
		}
		double lse = mx + log(s);
		r->lp[k] = row[ids[j]] / tau - lse;
		r->ent[k] = lse - sz / s;
	}
	free(ids);
	free(slots);
	free(z);
}

/* Offsets of the sampler from the model, of both signs, not centred on 0,
 * all below 1 in size; different for every trajectory and token. */
static double offset(uint32_t i, uint32_t k)
{
	return 0.03 + 0.05 * (double)((k * 7 + i * 3) % 9) - 0.2;
}

/* Sampler logprobs for t: the reference's minus offset(i, k), 0 where the
 * mask leaves a token out (as tool output is stored). */
static void set_sampler(struct traj *t, uint32_t i, const struct ref *r)
{
	free(t->logprobs);
	t->logprobs = malloc((t->n_response + 1) * sizeof(float));
	for (uint32_t k = 0; k < t->n_response; k++)
		t->logprobs[k] = t->response_mask && !t->response_mask[k] ? 0.0f : (float)(r->lp[k] - offset(i, k));
}

static void worse(double *w, double d)
{
	if (!(d <= *w))
		*w = isnan(d) ? INFINITY : d;
}

/* align_group on g, every value against the references: out is left for
 * the caller to look at and free (free_out). */
static struct align_traj *check_group(const char *what, const struct group *g, const struct ref *r)
{
	struct align_traj *a = calloc(g->n, sizeof *a);
	struct err e = { 0 };
	if (!ok(align_group(&M, g, a, &e) == 0, "%s: align_group runs (%s)", what, e.msg))
		exit(1);
	double wlp = 0, went = 0, wstat = 0, top_ent = 0;
	uint32_t tokens = 0, bad_n = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		const struct traj *t = &g->trajs[i];
		double sum = 0, abs_sum = 0, max = 0;
		uint32_t n = 0;
		for (uint32_t k = 0; k < t->n_response; k++, tokens++) {
			worse(&wlp, fabs(a[i].model_logprobs[k] - r[i].lp[k]));
			worse(&went, fabs(a[i].model_entropy[k] - r[i].ent[k]));
			top_ent = fmax(top_ent, r[i].ent[k]);
			if (!t->logprobs || (t->response_mask && !t->response_mask[k]) || (k == 0 && t->n_prompt == 0))
				continue;
			double d = r[i].lp[k] - t->logprobs[k];
			sum += d, abs_sum += fabs(d), max = fmax(max, fabs(d)), n++;
		}
		if (a[i].n_trained != n) {
			if (bad_n++ == 0)
				diag("  trajectory %u: n_trained %u, want %u", i, a[i].n_trained, n);
		}
		worse(&wstat, fabs(a[i].diff_mean - (n ? sum / n : 0)));
		worse(&wstat, fabs(a[i].abs_diff_mean - (n ? abs_sum / n : 0)));
		worse(&wstat, fabs(a[i].abs_diff_max - max));
	}
	ok(wlp < TOL, "%s: model_logprobs of all %u response tokens are each sequence's alone (worst |diff| %.3g)",
	   what, tokens, wlp);
	ok(went < TOL && (tokens == 0 || top_ent > 0.5), "%s: and so are model_entropy's, the full softmax's (worst |diff| %.3g, "
	   "largest entropy %.3g)", what, went, top_ent);
	ok(bad_n == 0, "%s: n_trained counts the trained tokens with sampler logprobs (%u of %u trajectories wrong)",
	   what, bad_n, g->n);
	ok(wstat < TOL, "%s: diff_mean, abs_diff_mean and abs_diff_max are theirs (worst |diff| %.3g)", what, wstat);
	return a;
}

static void free_out(struct align_traj *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		align_traj_free(&a[i]);
	free(a);
}

static void free_refs(struct ref *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(r[i].lp), free(r[i].ent);
	free(r);
}

/* References for every trajectory of g at its temperature, and sampler
 * logprobs from them where the trajectory has some. */
static struct ref *prepare(struct group *g)
{
	struct ref *r = calloc(g->n, sizeof *r);
	for (uint32_t i = 0; i < g->n; i++) {
		reference(&g->trajs[i], &r[i]);
		if (g->trajs[i].logprobs)
			set_sampler(&g->trajs[i], i, &r[i]);
	}
	return r;
}

/* Eight trajectories, one of each kind, at one temperature each. */
static void test_kinds(void)
{
	static const float temps[][6] = {
		{ 1, 1, 1, 1, 1, 1 }, { 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f }, { 2, 2, 2, 2, 2, 2 },
		{ 0.7f, 1.3f, 1, 0.5f, 2, 0.9f },
	};
	static const uint8_t mask[] = { 1, 1, 0, 1, 0, 1, 1 };
	for (size_t s = 0; s < sizeof temps / sizeof temps[0]; s++) {
		struct group g = { .n = 0 };
		struct traj *t;
		new_traj(&g, 3, 6, temps[s][0])->logprobs = calloc(1, sizeof(float));
		new_traj(&g, 0, 5, temps[s][1])->logprobs = calloc(1, sizeof(float));   /* no prompt */
		new_traj(&g, 4, 0, temps[s][2])->logprobs = calloc(1, sizeof(float));   /* no response */
		t = new_traj(&g, 2, 7, temps[s][3]);   /* tool output: two tokens masked */
		t->logprobs = calloc(1, sizeof(float));
		t->response_mask = malloc(sizeof mask);
		memcpy(t->response_mask, mask, sizeof mask);
		new_traj(&g, 3, 4, temps[s][4]);       /* no sampler logprobs */
		t = new_traj(&g, 2, 4, temps[s][5]);   /* the vocabulary's first and last ids */
		t->logprobs = calloc(1, sizeof(float));
		t->prompt_tokens[0] = 0, t->prompt_tokens[1] = V - 1;
		t->response_tokens[0] = V - 1, t->response_tokens[1] = 0, t->response_tokens[2] = 0;
		t->response_tokens[3] = V - 1;
		new_traj(&g, 0, 0, temps[s][0])->logprobs = calloc(1, sizeof(float));   /* no token at all */
		new_traj(&g, 20, 2, temps[s][1])->logprobs = calloc(1, sizeof(float));  /* more prompt than response */
		struct ref *r = prepare(&g);
		g.trajs[1].logprobs[0] = -7;   /* a sampler's value for a token that is not compared */
		char what[64];
		snprintf(what, sizeof what, "temperatures %g..%g", temps[s][0], temps[s][4]);
		struct align_traj *a = check_group(what, &g, r);
		is_int(a[0].n_trained * 10000000 + a[1].n_trained * 1000000 + a[2].n_trained * 100000 +
		       a[3].n_trained * 10000 + a[4].n_trained * 1000 + a[5].n_trained * 100 + a[6].n_trained * 10 +
		       a[7].n_trained, 64050402,
		       "%s: n_trained 6, 4 (no prompt: not the first), 0 (no response), 5 (2 masked), 0 (no sampler "
		       "logprobs), 4, 0 (no token), 2", what);
		ok(a[1].model_logprobs[0] == 0 && a[1].model_entropy[0] == 0 && a[1].model_logprobs[1] < 0,
		   "%s: without a prompt the first response token's logprob and entropy are 0, the next's are not", what);
		ok(a[2].diff_mean == 0 && a[2].abs_diff_mean == 0 && a[2].abs_diff_max == 0 && a[4].diff_mean == 0 &&
		   a[4].abs_diff_mean == 0 && a[4].abs_diff_max == 0 && a[6].diff_mean == 0 &&
		   a[6].abs_diff_mean == 0 && a[6].abs_diff_max == 0,
		   "%s: no response token, no sampler logprobs, no token: the differences are 0 (%g %g %g, %g %g %g, "
		   "%g %g %g)", what, a[2].diff_mean, a[2].abs_diff_mean, a[2].abs_diff_max, a[4].diff_mean,
		   a[4].abs_diff_mean, a[4].abs_diff_max, a[6].diff_mean, a[6].abs_diff_mean, a[6].abs_diff_max);
		/* offsets 0.03 + 0.05 * {0, 7, 5, 3, 1, 8} - 0.2 for trajectory 0 */
		is_float(a[0].diff_mean, 0.03 + 0.05 * 24 / 6 - 0.2, TOL, "%s: the signed mean difference, by hand", what);
		is_float(a[0].abs_diff_max, 0.23, TOL, "%s: the largest difference, by hand", what);
		free_out(a, g.n);
		free_refs(r, g.n);
		group_free(&g);
	}
}

/* A group whose token (id, then where) is replaced is refused, naming where;
 * out, whatever it held, is left with nothing to free. */
static void refuse(struct group *g, uint32_t i, int resp, uint32_t k, int32_t id, const char *want)
{
	struct traj *t = &g->trajs[i];
	int32_t *at = resp ? &t->response_tokens[k] : &t->prompt_tokens[k], was = *at;
	*at = id;
	struct align_traj *a = malloc(g->n * sizeof *a);
	struct err e = { 0 };
	memset(a, 0xa5, g->n * sizeof *a);   /* out may hold anything before: align_group fills it */
	int rc = align_group(&M, g, a, &e);
	uint32_t left = 0;
	for (uint32_t j = 0; j < g->n; j++)
		left += a[j].model_logprobs != NULL || a[j].model_entropy != NULL;
	ok(rc < 0 && strstr(e.msg, want), "token id %d in trajectory %u of %u is refused: %s", id, i, g->n, e.msg);
	if (rc < 0 && !strstr(e.msg, want))
		diag("  want \"%s\" in it", want);
	ok(left == 0, "and no trajectory is left with values (%u are)", left);
	free_out(a, g->n);
	*at = was;
}

/* Groups past ALIGN_MAX_PACK tokens, in several packs. */
static void test_packs(void)
{
	struct err e = { 0 };
	struct group g = { .n = 0 };
	uint32_t sum = 0, b;
	/* sequences of 0 to 90 tokens, up to a last one that fills the first pack to ALIGN_MAX_PACK exactly */
	for (;;) {
		uint32_t np = xorshift32() % 4 == 0 ? 0 : xorshift32() % 12, nr = xorshift32() % 80;
		if (g.n % 40 == 17)
			np = nr = 0;   /* a few with no token at all */
		if (sum + np + nr > ALIGN_MAX_PACK - 100)
			break;
		struct traj *t = new_traj(&g, np, nr, 0.6f + 0.1f * (float)(g.n % 9));
		if (g.n % 7 != 3)
			t->logprobs = calloc(1, sizeof(float));
		if (g.n % 5 == 1 && nr > 0) {
			t->response_mask = malloc(nr);
			for (uint32_t k = 0; k < nr; k++)
				t->response_mask[k] = k % 3 != 1;
		}
		sum += np + nr;
	}
	b = g.n;
	new_traj(&g, 5, ALIGN_MAX_PACK - sum - 5, 1.1f)->logprobs = calloc(1, sizeof(float));
	uint32_t first_pack = g.n;
	for (uint32_t more = 0; more < 2500;) {   /* and the next pack */
		uint32_t np = xorshift32() % 12, nr = 1 + xorshift32() % 80;
		new_traj(&g, np, nr, 1.4f)->logprobs = calloc(1, sizeof(float));
		more += np + nr;
	}
	diag("%u trajectories, the first %u filling the first pack (the last of them %u tokens)", g.n, first_pack,
	     g.trajs[b].n_prompt + g.trajs[b].n_response);
	struct ref *r = prepare(&g);
	model_acts_alloc(&M, 1, &e);
	struct align_traj *a = check_group("two packs", &g, r);
	is_int(M.a.maxT, ALIGN_MAX_PACK, "a first pack of exactly ALIGN_MAX_PACK tokens is one pack: the "
	       "activations grow to it");
	free_out(a, g.n);

	/* a bad token in the second pack: the first pack's values are freed too */
	char want[96];
	snprintf(want, sizeof want, "trajectory %u: response_tokens[0] is %d", g.n - 1, V);
	refuse(&g, g.n - 1, 1, 0, V, want);
	free_refs(r, g.n);

	/* one token more in the sequence that filled it: it opens the next pack */
	struct traj *t = &g.trajs[b];
	t->response_tokens[t->n_response] = 3;
	t->logprobs = realloc(t->logprobs, (t->n_response + 1) * sizeof(float));
	t->n_response++;
	for (uint32_t i = first_pack; i < g.n; i++)
		traj_free(&g.trajs[i]);
	g.n = first_pack;
	r = prepare(&g);
	model_acts_alloc(&M, 1, &e);
	a = check_group("one token past the pack", &g, r);
	is_int(M.a.maxT, t->n_prompt + t->n_response > sum ? t->n_prompt + t->n_response : sum,
	       "no pack is past ALIGN_MAX_PACK tokens: the activations grow to the larger of its two packs");
	free_out(a, g.n);
	free_refs(r, g.n);
	group_free(&g);

	/* one sequence longer than a pack goes alone, between two short ones */
	g = (struct group){ .n = 0 };
	new_traj(&g, 3, 40, 0.8f)->logprobs = calloc(1, sizeof(float));
	new_traj(&g, 10, ALIGN_MAX_PACK + 100, 0.8f)->logprobs = calloc(1, sizeof(float));
	new_traj(&g, 0, 30, 0.8f)->logprobs = calloc(1, sizeof(float));
	r = prepare(&g);
	model_acts_alloc(&M, 1, &e);
	a = check_group("a sequence longer than a pack", &g, r);
	is_int(M.a.maxT, ALIGN_MAX_PACK + 110, "it goes alone: the activations grow to it alone");
	free_out(a, g.n);
	free_refs(r, g.n);
	group_free(&g);
}

/* Trajectories without a token have nothing to run: the model is not asked
 * (it refuses a sequence of no token, and a model without activations a
 * pack of none). */
static void test_empty(void)
{
	struct group g = { .n = 0 };
	new_traj(&g, 0, 0, 1)->logprobs = calloc(1, sizeof(float));
	new_traj(&g, 0, 0, 0.5f);
	struct ref *r = prepare(&g);
	struct align_traj *a = check_group("a group of trajectories without a token", &g, r);
	ok(a[0].model_logprobs && a[0].model_entropy && a[1].model_logprobs && a[1].model_entropy,
	   "and each gets its (empty) arrays to free");
	free_out(a, g.n);
	free_refs(r, g.n);
	group_free(&g);
}

static void test_refused(void)
{
	struct group g = { .n = 0 };
	for (uint32_t i = 0; i < 3; i++)
		new_traj(&g, 3, 4, 1)->logprobs = calloc(4, sizeof(float));
	char want[96];
	snprintf(want, sizeof want, "trajectory 1: response_tokens[2] is %d", V);
	refuse(&g, 1, 1, 2, V, want);
	refuse(&g, 2, 0, 0, -1, "trajectory 2: prompt_tokens[0] is -1");
	refuse(&g, 0, 1, 3, -1, "trajectory 0: response_tokens[3] is -1");
	snprintf(want, sizeof want, "prompt_tokens[2] is %d, outside the model's vocabulary of %d", V + 5, V);
	refuse(&g, 0, 0, 2, V + 5, want);
	group_free(&g);
}

int main(void)
{
	struct model_config c;
	struct err e = { 0 };
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN3);
	c.C = 16, c.I = 24, c.L = 1, c.NH = 2, c.NKV = 1, c.HS = 8, c.V = V, c.init_std = 0.4f, c.eps = 1e-5f;
	if (!ok(model_create(&M, &c, &e) == 0 && model_init_random(&M, 7, &e) == 0, "a small Qwen3 model (%s)", e.msg))
		return tap_done();
	test_empty();   /* first, while the model has no activations: an empty pack must not ask for them */
	test_kinds();
	test_refused();
	test_packs();
	model_free(&M);
	return tap_done();
}
