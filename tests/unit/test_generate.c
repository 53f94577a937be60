/*
 * test_generate: generation with the key/value cache against the packed
 * forward pass, on tiny random models of each family: greedy tokens are the
 * argmax of the forward pass, returned logprobs are the forward's logprobs at
 * the temperature, and stop tokens, max_tokens, top-k and seeds behave; over
 * thousands of draws, top-p and top-k sample only from the nucleus and the k
 * most probable tokens, each in proportion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/generate.h"
#include "model/model.h"
#include "../tap.h"

enum { V = 40, B = 3, MAXTOK = 8 };
static const int p0[] = { 3, 17, 5, 9, 1 }, p1[] = { 22 }, p2[] = { 7, 7, 30, 2, 11, 4, 8, 19, 25 };
static const int *const prompts[B] = { p0, p1, p2 };
static const int plens[B] = { 5, 1, 9 };

static void tiny(struct model *m, enum model_family f)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, f);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.V = V, c.tied = f != MODEL_LLAMA;
	c.HS = f == MODEL_QWEN3 ? 6 : 4;
	c.init_std = 0.5f;   /* peaked distributions, so argmax and sampling differ */
	if (f == MODEL_LLAMA) {
		c.rope_theta = 10000, c.rope_llama3 = 1, c.rope_factor = 4, c.rope_low_freq = 1, c.rope_high_freq = 2;
		c.rope_orig_max = 8, c.qkv_bias = c.o_bias = 1;
	}
	struct err e;
	model_create(m, &c, &e);
	model_init_random(m, 5, NULL);
	/* biases away from 0 so the cached path must carry them too */
	int n = model_tensors(&m->cfg, &m->w, NULL);
	struct model_tensor *ts = calloc((size_t)n, sizeof *ts);
	model_tensors(&m->cfg, &m->w, ts);
	for (int i = 0; i < n; i++)
		if (strstr(ts[i].name, "bias"))
			for (int j = 0; j < ts[i].shape[0]; j++)
				ts[i].data[j] = 0.1f * (float)((j * 7 + i) % 5 - 2);
	free(ts);
}

/* Forward logprobs (at temperature temp) of prompt + generated for each sequence, packed. */
static void forward_lp(struct model *m, const struct gen_seq *g, float temp, float lp[B][32])
{
	int ids[128], lens[B], T = 0;
	float temps[128], out[128];
	for (int b = 0; b < B; b++) {
		memcpy(ids + T, prompts[b], (size_t)plens[b] * sizeof(int));
		memcpy(ids + T + plens[b], g[b].tokens, (size_t)g[b].n * sizeof(int));
		lens[b] = plens[b] + g[b].n;
		T += lens[b];
	}
	for (int i = 0; i < T; i++)
		temps[i] = temp;
	struct err e;
	model_acts_alloc(m, 128 * V, &e);
	model_forward(m, ids, T, lens, B, temps, out, NULL, &e);
	for (int b = 0, off = 0; b < B; off += lens[b], b++)
		for (int j = 0; j < g[b].n; j++)
			lp[b][j] = out[off + plens[b] + j];
}

/*
 * The forward pass's argmax after prompt + generated[0..j): one pack of V
 * sequences, each ending in a different candidate; the candidate with the
 * highest logprob wins (lowest id on ties).
 */
static int forward_argmax(struct model *m, int b, const int *gen, int j)
{
	static int ids[V * 32];
	static float lp[V * 32];
	int lens[V], n = plens[b] + j + 1;
	for (int v = 0; v < V; v++) {
		memcpy(ids + v * n, prompts[b], (size_t)plens[b] * sizeof(int));
		memcpy(ids + v * n + plens[b], gen, (size_t)j * sizeof(int));
		ids[v * n + n - 1] = v;
		lens[v] = n;
	}
	struct err e;
	model_forward(m, ids, V * n, lens, V, NULL, lp, NULL, &e);
	int best = 0;
	for (int v = 1; v < V; v++)
		if (lp[v * n + n - 1] > lp[best * n + n - 1])
			best = v;
	return best;
}

/* Two tokens in a row that sum to a multiple of 5 end a sequence: a
 * stop_after that reads more than the last token, as stop strings do. */
static int pair_stop(void *ctx, const int32_t *t, int n)
{
	(void)ctx;
	return n >= 2 && (t[n - 1] + t[n - 2]) % 5 == 0;
}

static void check_family(enum model_family f)
{
	const char *fam = model_family_name(f);
	struct model m;
	tiny(&m, f);
	struct err e = { 0 };
	struct gen_seq g[B], g2[B];
	float lp[B][32];

	/* greedy */
	struct gen_params gp = { .temperature = 0, .top_p = 1, .max_tokens = MAXTOK, .seed = 1 };
	if (!ok(gen_run(&m, prompts, plens, B, &gp, g, &e) == 0, "%s: greedy generation of %d sequences", fam, B))
		diag("%s", e.msg);
	int argmax_ok = 1, len_ok = 1;
	model_acts_alloc(&m, V * 32, &e);
	for (int b = 0; b < B; b++) {
		len_ok &= g[b].n == MAXTOK && g[b].finish == GEN_LENGTH;
		for (int j = 0; j < g[b].n; j++)
			argmax_ok &= g[b].tokens[j] == forward_argmax(&m, b, g[b].tokens, j);
	}
	ok(len_ok, "%s: without stop tokens every sequence runs to max_tokens (finish: length)", fam);
	ok(argmax_ok, "%s: every greedy token is the argmax of the packed forward pass", fam);
	forward_lp(&m, g, 1.0f, lp);
	double worst = 0;
	for (int b = 0; b < B; b++)
		for (int j = 0; j < g[b].n; j++)
			worst = fmax(worst, fabs(lp[b][j] - g[b].logprobs[j]));
	ok(worst < 1e-4, "%s: greedy logprobs equal the forward's at temperature 1 (largest difference %.2g)", fam, worst);
	for (int b = 0; b < B; b++)
		gen_seq_free(&g[b]);

	/* sampling at temperature 0.7 with top-p and top-k: logprobs at the temperature */
	gp = (struct gen_params){ .temperature = 0.7f, .top_p = 0.9f, .top_k = 20, .max_tokens = MAXTOK, .seed = 42 };
	ok(gen_run(&m, prompts, plens, B, &gp, g, &e) == 0, "%s: sampling at temperature 0.7, top-p 0.9, top-k 20", fam);
	forward_lp(&m, g, 0.7f, lp);
	worst = 0;
	for (int b = 0; b < B; b++)
		for (int j = 0; j < g[b].n; j++)
			worst = fmax(worst, fabs(lp[b][j] - g[b].logprobs[j]));
	ok(worst < 1e-4, "%s: sampled logprobs equal the forward's at temperature 0.7 (largest difference %.2g)", fam,
	   worst);
	ok(gen_run(&m, prompts, plens, B, &gp, g2, &e) == 0 && g2[1].n == g[1].n &&
	   memcmp(g2[1].tokens, g[1].tokens, (size_t)g[1].n * sizeof(int)) == 0, "%s: same seed, same tokens", fam);
	for (int b = 0; b < B; b++)
		gen_seq_free(&g2[b]);
	ok(gen_run(&m, prompts, plens, 1, &gp, g2, &e) == 0 && g2[0].n == g[0].n &&
	   memcmp(g2[0].tokens, g[0].tokens, (size_t)g[0].n * sizeof(int)) == 0,
	   "%s: sequence 0 alone samples what it sampled in the batch", fam);
	gen_seq_free(&g2[0]);
	for (int b = 0; b < B; b++)
		gen_seq_free(&g[b]);

	/* top-k 1 is greedy */
	gp = (struct gen_params){ .temperature = 1.3f, .top_p = 1, .top_k = 1, .max_tokens = MAXTOK, .seed = 3 };
	struct gen_params greedy = { .temperature = 0, .top_p = 1, .max_tokens = MAXTOK };
	gen_run(&m, prompts, plens, B, &gp, g, &e);
	gen_run(&m, prompts, plens, B, &greedy, g2, &e);
	int same = 1;
	for (int b = 0; b < B; b++) {
		same &= memcmp(g[b].tokens, g2[b].tokens, MAXTOK * sizeof(int)) == 0;
		gen_seq_free(&g[b]);
		gen_seq_free(&g2[b]);
	}
	ok(same, "%s: top-k 1 picks the greedy tokens", fam);

	/* stop tokens end a sequence and are kept as its last token */
	int stops[10];
	for (int i = 0; i < 10; i++)
		stops[i] = 4 * i;
	gp = (struct gen_params){ .temperature = 1, .top_p = 1, .max_tokens = 20, .stop_ids = stops, .n_stop = 10, .seed = 9 };
	gen_run(&m, prompts, plens, B, &gp, g, &e);
	int stop_ok = 1, stopped = 0;
	for (int b = 0; b < B; b++) {
		for (int j = 0; j < g[b].n - 1; j++)
			stop_ok &= g[b].tokens[j] % 4 != 0;
		if (g[b].finish == GEN_STOP)
			stop_ok &= g[b].tokens[g[b].n - 1] % 4 == 0, stopped++;
		else
			stop_ok &= g[b].n == 20 && g[b].tokens[19] % 4 != 0;
		gen_seq_free(&g[b]);
	}
	ok(stop_ok && stopped > 0, "%s: %d of %d sequences end at a stop token, none runs past one", fam, stopped, B);

	/* stop_after (stop strings) ends a sequence at the first token it
	 * accepts; the draws are those of the run without it, cut there */
	struct gen_seq plain[B];
	gp.n_stop = 0;
	gen_run(&m, prompts, plens, B, &gp, plain, &e);
	gp.stop_after = pair_stop;
	gen_run(&m, prompts, plens, B, &gp, g, &e);
	int after_ok = 1, cut = 0;
	for (int b = 0; b < B; b++) {
		int want = plain[b].n;
		for (int j = 2; j <= plain[b].n && want == plain[b].n; j++)
			if (pair_stop(NULL, plain[b].tokens, j))
				want = j;
		after_ok &= g[b].n == want && memcmp(g[b].tokens, plain[b].tokens, (size_t)want * sizeof(int)) == 0 &&
			    memcmp(g[b].logprobs, plain[b].logprobs, (size_t)want * sizeof(float)) == 0 &&
			    g[b].finish == (want < plain[b].n || pair_stop(NULL, plain[b].tokens, want) ? GEN_STOP : GEN_LENGTH);
		cut += want < plain[b].n;
		gen_seq_free(&g[b]);
		gen_seq_free(&plain[b]);
	}
	ok(after_ok && cut > 0, "%s: stop_after cuts %d of %d sequences at the first token it accepts, tokens and logprobs "
	   "those of the run without it", fam, cut, B);
	model_free(&m);
}

static int by_p_desc(const void *a, const void *b, void *ctx)
{
	const double *p = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	return p[x] < p[y] ? 1 : p[x] > p[y] ? -1 : x - y;
}

/*
 * Draw n first tokens after prompt p0 (n copies of it, one stream each) and
 * check them against the distribution the model gives there: every draw is
 * one of the `keep` most probable tokens, and each of those comes up about as
 * often as its probability renormalised over them (within 4.5 standard
 * deviations, over a fixed seed).
 */
static void check_draws(struct model *m, const struct gen_params *gp, const int *order, const double *p, int keep,
                        const char *what)
{
	enum { N = 3000 };
	static const int *ps[N];
	static int lens[N];
	static struct gen_seq g[N];
	struct err e = { 0 };
	for (int i = 0; i < N; i++)
		ps[i] = p0, lens[i] = plens[0];
	if (!ok(gen_run(m, ps, lens, N, gp, g, &e) == 0, "%s: %d draws", what, N))
		diag("%s", e.msg);
	int count[V] = { 0 }, outside = 0;
	for (int i = 0; i < N; i++) {
		count[g[i].tokens[0]]++;
		gen_seq_free(&g[i]);
	}
	double mass = 0, worst = 0;
	for (int j = 0; j < keep; j++)
		mass += p[order[j]];
	for (int v = 0; v < V; v++) {
		int rank = 0;
		while (order[rank] != v)
			rank++;
		if (rank >= keep) {
			outside += count[v];
			continue;
		}
		double q = p[v] / mass, sd = sqrt(q * (1 - q) / N);
		worst = fmax(worst, fabs((double)count[v] / N - q) / sd);
	}
	ok(outside == 0, "%s: every draw is among the %d most probable tokens (%d outside)", what, keep, outside);
	ok(worst < 4.5, "%s: each of them as often as its renormalised probability (worst %.2f sd)", what, worst);
}

/* top-p keeps the nucleus, top-k the k most probable, statistically. */
static void check_truncation(void)
{
	struct model m;
	tiny(&m, MODEL_QWEN2);
	struct err e = { 0 };
	struct model_kv kv;
	static float z[V];
	int slots[8] = { 0 };
	unsigned char want[5] = { 0, 0, 0, 0, 1 };
	model_kv_alloc(&m, &kv, 1, 16, 16, &e);
	model_step(&m, &kv, p0, slots, plens[0], want, z, &e);
	model_kv_free(&kv);
	const float temp = 1.5f;   /* flat enough that the tail is drawn often without truncation */
	double p[V], mx = -INFINITY, sum = 0, cum[V];
	int order[V];
	for (int v = 0; v < V; v++)
		mx = fmax(mx, z[v] / temp);
	for (int v = 0; v < V; v++)
		sum += p[v] = exp(z[v] / temp - mx);
	for (int v = 0; v < V; v++)
		p[v] /= sum, order[v] = v;
	qsort_r(order, V, sizeof order[0], by_p_desc, p);
	for (int j = 0; j < V; j++)
		cum[j] = (j ? cum[j - 1] : 0) + p[order[j]];
	diag("the 6 most probable tokens at temperature %.1f: %.3f %.3f %.3f %.3f %.3f %.3f", temp, p[order[0]],
	     p[order[1]], p[order[2]], p[order[3]], p[order[4]], p[order[5]]);
	ok(cum[3] < 0.9, "the distribution is spread out (the 4 most probable hold %.3f)", cum[3]);

	/* top_p halfway between the mass of the 3 and of the 4 most probable: the nucleus is 4 tokens */
	struct gen_params gp = { .temperature = temp, .top_p = (float)((cum[2] + cum[3]) / 2), .max_tokens = 1,
	                         .seed = 2024 };
	check_draws(&m, &gp, order, p, 4, "top-p");
	gp = (struct gen_params){ .temperature = temp, .top_p = 1, .top_k = 5, .max_tokens = 1, .seed = 77 };
	check_draws(&m, &gp, order, p, 5, "top-k 5");
	/* both: top-k 6 first, then the nucleus of what it kept (mass over the 6, renormalised) */
	gp = (struct gen_params){ .temperature = temp, .top_p = (float)((cum[1] + cum[2]) / 2 / cum[5]), .top_k = 6,
	                          .max_tokens = 1, .seed = 5 };
	check_draws(&m, &gp, order, p, 3, "top-k 6 then top-p");
	gp = (struct gen_params){ .temperature = temp, .top_p = 1, .max_tokens = 1, .seed = 9 };
	check_draws(&m, &gp, order, p, V, "no truncation");
	model_free(&m);
}

int main(void)
{
	check_truncation();
	check_family(MODEL_QWEN2);
	check_family(MODEL_QWEN3);
	check_family(MODEL_LLAMA);

	struct model m;
	tiny(&m, MODEL_QWEN2);
	struct err e = { 0 };
	struct gen_seq g[1];
	struct gen_params gp = { .temperature = 1, .top_p = 1.5f, .max_tokens = 4 };
	ok(gen_run(&m, prompts, plens, 1, &gp, g, &e) < 0 && strstr(e.msg, "top_p"), "top_p above 1: %s", e.msg);
	gp.top_p = 1;
	const int empty_len[1] = { 0 };
	ok(gen_run(&m, prompts, empty_len, 1, &gp, g, &e) < 0 && strstr(e.msg, "empty"), "an empty prompt: %s", e.msg);
	model_free(&m);
	return tap_done();
}
