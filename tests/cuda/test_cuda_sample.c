/*
 * test_cuda_sample: the GPU's sampling step (kernels/sample.cu, through
 * gpu_sample_test) against lib/model/generate.c's sample(), restated here
 * as the reference, at V 7, 1000 and 151936:
 *
 *  - greedy: the CPU's argmax, ties to the lowest id, wherever the tied
 *    ids lie in the kernel's threads;
 *  - no top-k or top-p: the CPU's token for each (row, stream state, draw)
 *    triple, but where u lies within 1e-12 of a boundary of the CPU's walk
 *    (counted and skipped: the kernel sums in another order);
 *  - every logprob within 1e-5 of the CPU's;
 *  - top-k, top-p and both, ties split at the threshold among them:
 *    thousands of draws of one row (draws 0, 1, ... of one stream), every
 *    one in the CPU's kept set, their counts in proportion to p (Pearson's
 *    chi-square, failing at p < 1e-6: fixed seeds, so the same verdict on
 *    every run);
 *  - padding rows (draws < 0) left as they were; the same bits twice.
 * GRPO_TEST_SMALL=1 draws at most 1000 times from each distribution.
 *
 * Skips, saying why, where no GPU is present. With -DGRPO_SAMPLE_TWIN it
 * runs against sample_twin.h, the kernel's algorithm on the host, instead.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef GRPO_SAMPLE_TWIN
#include "sample_twin.h"
#include "tap.h"
#define skip_without_gpu() ((void)0)
#else
#include "cuda_skip.h"
#include "gpu_sample.h"
#endif

/* ---- the reference: generate.c's sample(), with what the checks need ---- */

struct cand {
	float p;
	int id;
};

static int by_prob_desc(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->id - y->id;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
	return (splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* generate.c's stream state for (seed, stream), once initialised */
static uint64_t stream_state(uint64_t seed, uint64_t stream)
{
	uint64_t s = splitmix64(&stream) ^ seed;
	s = splitmix64(&s);
	return s;
}

struct params {
	float T, top_p;
	int top_k;
};

struct ref {
	int tok;
	float lp;
	int n;              /* the kept set: cand[0..n), most probable first */
	struct cand *cand;  /* (V) */
	double total;       /* its mass */
	double inv, lse;    /* 1 / T (1 when greedy), the log-sum-exp of z inv: any token's logprob */
	double u_margin;    /* u's distance to the nearest boundary of the walk */
	double set_margin;  /* top-p's target's distance to the nearest prefix mass */
};

/* sample() from stream state S after n draws; cand: (V) scratch */
static void ref_sample(const float *z, int V, const struct params *pp, uint64_t S, int n_draws, struct ref *o)
{
	uint64_t rng = S;
	for (int i = 0; i < n_draws; i++)
		splitmix64(&rng);
	struct cand *cand = o->cand;
	double inv = pp->T > 0 ? 1.0 / pp->T : 1.0, mx = -INFINITY;
	int arg = 0;
	for (int j = 0; j < V; j++)
		if (z[j] > z[arg])
			arg = j;
	mx = z[arg] * inv;
	double sum = 0;
	for (int j = 0; j < V; j++)
		sum += exp(z[j] * inv - mx);
	double lse = mx + log(sum);
	int tok = arg;
	o->n = 0, o->total = 0, o->u_margin = o->set_margin = INFINITY;
	if (pp->T > 0) {
		int n = V;
		double all = 0;
		for (int j = 0; j < V; j++) {
			cand[j] = (struct cand){ (float)exp(z[j] * inv - lse), j };
			all += cand[j].p;
		}
		int topk = pp->top_k > 0 && pp->top_k < V;
		if (topk || pp->top_p < 1) {
			if (!topk && V > 1) {
				float cut = (float)((1 - pp->top_p) / (V - 1));
				int k = 0;
				for (int j = 0; j < V; j++)
					if (cand[j].p >= cut)
						cand[k++] = cand[j];
				n = k > 0 ? k : V;
				if (k == 0)
					for (int j = 0; j < V; j++)
						cand[j] = (struct cand){ (float)exp(z[j] * inv - lse), j };
			}
			qsort(cand, (size_t)n, sizeof *cand, by_prob_desc);
			double kept = all;
			if (topk) {
				n = pp->top_k;
				kept = 0;
				for (int j = 0; j < n; j++)
					kept += cand[j].p;
			}
			if (pp->top_p < 1) {
				double mass = 0, prev = 0, target = pp->top_p * kept;
				int m = 0;
				while (m < n && mass < target) {
					prev = mass;
					mass += cand[m++].p;
				}
				n = m > 0 ? m : 1;
				if (m > 0 && mass >= target)
					o->set_margin = fmin(target - prev, mass - target);
			}
		}
		double total = 0;
		for (int j = 0; j < n; j++)
			total += cand[j].p;
		double u = uniform(&rng) * total, acc = 0;
		tok = cand[n - 1].id;
		o->u_margin = 0;   /* u past the end: at a boundary */
		for (int j = 0; j < n; j++) {
			double prev = acc;
			acc += cand[j].p;
			if (u < acc) {
				tok = cand[j].id;
				o->u_margin = fmin(u - prev, acc - u);
				break;
			}
		}
		o->n = n, o->total = total;
	}
	o->tok = tok;
	o->lp = (float)(z[tok] * inv - lse);
	o->inv = inv, o->lse = lse;
}

/* ---- inputs ---- */

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (rs >> 11) * (1.0 / 9007199254740992.0);
}
static float gauss(void)
{
	double u = urand() + 1e-300, v = urand();
	return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

static void gauss_row(float *z, int V, float spread)
{
	for (int j = 0; j < V; j++)
		z[j] = spread * gauss();
}

static void gpu(const float *z, int B, int V, const struct params *pp, const uint64_t *S, const int32_t *n,
		int32_t *tok, float *lp)
{
	char msg[300] = "";
	if (gpu_sample_test(z, B, V, pp->T, pp->top_p, pp->top_k, S, n, tok, lp, msg, sizeof msg) < 0) {
		printf("Bail out! gpu_sample_test: %s\n", msg);
		exit(1);
	}
}

static int lp_close(float got, float want)
{
	return fabsf(got - want) <= 1e-5f;
}

/* ---- greedy ---- */

static void greedy(int V, int nrows, const int (*ties)[2], int nties)
{
	int B = nrows + nties;
	float *z = malloc((size_t)B * V * sizeof *z), *lp = malloc(B * sizeof *lp);
	int32_t *tok = malloc(B * sizeof *tok), *n = calloc(B, sizeof *n);
	uint64_t *S = calloc(B, sizeof *S);
	struct cand *cand = malloc((size_t)V * sizeof *cand);
	for (int b = 0; b < nrows; b++)
		gauss_row(z + (size_t)b * V, V, 2.0f);
	for (int i = 0; i < nties; i++) {
		float *row = z + (size_t)(nrows + i) * V;
		gauss_row(row, V, 1.0f);
		row[ties[i][0]] = row[ties[i][1]] = 9.0f;
	}
	struct params pp = { 0.0f, 0.5f, 5 };   /* top-k and top-p play no part */
	gpu(z, B, V, &pp, S, n, tok, lp);
	int bad = 0, badlp = 0;
	for (int b = 0; b < B; b++) {
		struct ref o = { .cand = cand };
		ref_sample(z + (size_t)b * V, V, &pp, 0, 0, &o);
		if (tok[b] != o.tok && bad++ < 3)
			diag("  row %d: token %d, want %d", b, tok[b], o.tok);
		if (!lp_close(lp[b], o.lp) && badlp++ < 3)
			diag("  row %d: logprob %.9g, want %.9g", b, lp[b], o.lp);
	}
	ok(!bad, "greedy, V %d: the CPU's argmax in %d rows, %d of them with a tie for the lowest id", V, B, nties);
	ok(!badlp, "greedy, V %d: logprob at temperature 1 within 1e-5", V);
	free(z), free(lp), free(tok), free(n), free(S), free(cand);
}

/* ---- no top-k, no top-p: the CPU's walk ---- */

static void exact(int V, int nrows, int calls, const struct params *pp, float spread)
{
	float *z = malloc((size_t)nrows * V * sizeof *z), *lp = malloc(nrows * sizeof *lp);
	int32_t *tok = malloc(nrows * sizeof *tok), *n = malloc(nrows * sizeof *n);
	uint64_t *S = malloc(nrows * sizeof *S);
	struct cand *cand = malloc((size_t)V * sizeof *cand);
	for (int b = 0; b < nrows; b++)
		gauss_row(z + (size_t)b * V, V, spread);
	int bad = 0, badlp = 0, edge = 0, total = 0;
	for (int c = 0; c < calls; c++) {
		for (int b = 0; b < nrows; b++) {
			S[b] = stream_state(1234 + c, (uint64_t)b);
			n[b] = (int32_t)(urand() * 500);
		}
		gpu(z, nrows, V, pp, S, n, tok, lp);
		for (int b = 0; b < nrows; b++, total++) {
			struct ref o = { .cand = cand };
			ref_sample(z + (size_t)b * V, V, pp, S[b], n[b], &o);
			if (!lp_close(lp[b], o.lp) && badlp++ < 3)
				diag("  row %d: logprob %.9g, want %.9g", b, lp[b], o.lp);
			if (o.u_margin < 1e-12) {
				edge++;
				continue;
			}
			if (tok[b] != o.tok && bad++ < 3)
				diag("  row %d, state %016llx, draw %d: token %d, want %d (u %.3g from a boundary)", b,
				     (unsigned long long)S[b], n[b], tok[b], o.tok, o.u_margin);
		}
	}
	ok(!bad, "T %g, top-k %d, V %d: the CPU's token in %d (row, state, draw) triples (%d within 1e-12 of a "
	   "boundary, skipped)", pp->T, pp->top_k, V, total - edge, edge);
	ok(!badlp, "T %g, V %d: logprob within 1e-5", pp->T, V);
	free(z), free(lp), free(tok), free(n), free(S), free(cand);
}

/* ---- top-k and top-p: the kept set and the frequencies ---- */

/* The chi-square value that Pearson's statistic with df degrees of freedom
 * exceeds with probability 1e-6 (Wilson and Hilferty's approximation, which
 * errs high at small df: a smaller chance of a false failure). */
static double chi2_crit(int df)
{
	double z = 4.753424, a = 2.0 / (9.0 * df), c = 1 - a + z * sqrt(a);
	return df * c * c * c;
}

/* Pearson's statistic of count (V) against N p / total over the kept set,
 * tokens expected fewer than 5 times pooled (into the last cell when the
 * pool itself is under 5); *df its degrees of freedom. */
static double chi_square(const struct ref *o, const int *count, int N, int *df)
{
	double stat = 0, pe = 0, po = 0, le = 0, lo = 0;
	int cells = 0;
	for (int i = 0; i < o->n; i++) {
		double e = N * (o->cand[i].p / o->total), c = count[o->cand[i].id];
		if (e < 5) {
			pe += e, po += c;
			continue;
		}
		if (cells++ > 0)
			stat += (lo - le) * (lo - le) / le;
		le = e, lo = c;   /* the last big cell, held back for the pool */
	}
	if (pe >= 5 || cells == 0) {
		if (cells > 0)
			stat += (lo - le) * (lo - le) / le;
		if (pe > 0)
			stat += (po - pe) * (po - pe) / pe, cells++;
	} else {
		le += pe, lo += po;
		stat += (lo - le) * (lo - le) / le;
	}
	*df = cells - 1;
	return stat;
}

enum { GAUSS, FIXED, LEVELS };

struct dist {
	const char *name;
	int V, kind;
	float spread;
	const float *fixed;
	struct params pp;
	int N;
};

static void distribution(const struct dist *d)
{
	/* GRPO_TEST_SMALL=1: at most 1000 draws, for compute-sanitizer's slow
	 * tools; the kernel's paths depend on V and the parameters, not on the
	 * number of rows, and the chi-square test pools its small cells */
	int N = getenv("GRPO_TEST_SMALL") && d->N > 1000 ? 1000 : d->N;
	int V = d->V, rows = (1 << 24) / V;
	rows = rows < 1 ? 1 : rows > N ? N : rows;
	float *z = malloc((size_t)rows * V * sizeof *z), *lp = malloc(rows * sizeof *lp);
	int32_t *tok = malloc(rows * sizeof *tok), *n = malloc(rows * sizeof *n);
	uint64_t *S = malloc(rows * sizeof *S);
	int *count = calloc(V, sizeof *count);
	char *in = calloc(V, 1);
	struct cand *cand = malloc((size_t)V * sizeof *cand);
	for (int j = 0; j < V; j++)
		z[j] = d->kind == GAUSS ? d->spread * gauss() : d->kind == FIXED ? d->fixed[j] : 0.4f * (j * 7 % 10);
	for (int b = 1; b < rows; b++)
		memcpy(z + (size_t)b * V, z, V * sizeof *z);
	struct ref o = { .cand = cand };
	ref_sample(z, V, &d->pp, 0, 0, &o);
	for (int i = 0; i < o.n; i++)
		in[o.cand[i].id] = 1;
	uint64_t state = stream_state(99, (uint64_t)V);
	int out = 0, badlp = 0;
	for (int done = 0; done < N; done += rows) {
		int B = N - done < rows ? N - done : rows;
		for (int b = 0; b < B; b++)
			S[b] = state, n[b] = done + b;
		gpu(z, B, V, &d->pp, S, n, tok, lp);
		for (int b = 0; b < B; b++) {
			if (tok[b] < 0 || tok[b] >= V || !in[tok[b]]) {
				if (out++ < 3)
					diag("  draw %d: token %d, outside the CPU's kept set", done + b, tok[b]);
				continue;
			}
			count[tok[b]]++;
			if (!lp_close(lp[b], (float)(z[tok[b]] * o.inv - o.lse)) && badlp++ < 3)
				diag("  draw %d: logprob %.9g, want %.9g", done + b, lp[b],
				     (float)(z[tok[b]] * o.inv - o.lse));
		}
	}
	int df;
	double stat = chi_square(&o, count, N, &df), crit = df > 0 ? chi2_crit(df) : 0;
	/* the kernel's masses are summed in another order: a top-p boundary within 1e-12 may fall either way */
	ok(!out || o.set_margin < 1e-12, "%s: %d draws, all in the CPU's kept set of %d%s", d->name, N, o.n,
	   o.set_margin < 1e-12 ? " (its top-p boundary within 1e-12: not checked)" : "");
	ok(!badlp, "%s: logprob within 1e-5", d->name);
	if (!ok(stat <= crit, "%s: counts in proportion, chi-square %.1f on %d df (p < 1e-6 fails above %.1f)",
		d->name, stat, df, crit))
		for (int i = 0; i < o.n && i < 10; i++)
			diag("  token %d: %d draws, %.1f expected", o.cand[i].id, count[o.cand[i].id],
			     N * o.cand[i].p / o.total);
	free(z), free(lp), free(tok), free(n), free(S), free(count), free(in), free(cand);
}

/* ---- padding, and the same bits twice ---- */

static void padding(void)
{
	enum { V = 1000, B = 8 };
	static const int32_t n[B] = { 0, -1, 3, -1, -5, 7, -1, 2 };
	float *z = malloc((size_t)B * V * sizeof *z), lp[B];
	int32_t tok[B];
	uint64_t S[B];
	struct cand *cand = malloc(V * sizeof *cand);
	struct params pp = { 1.0f, 1.0f, 0 };
	for (int b = 0; b < B; b++) {
		gauss_row(z + (size_t)b * V, V, 2.0f);
		S[b] = stream_state(5, (uint64_t)b), tok[b] = -7, lp[b] = 42.0f;
	}
	gpu(z, B, V, &pp, S, n, tok, lp);
	int kept = 1, drawn = 1;
	for (int b = 0; b < B; b++) {
		if (n[b] < 0) {
			kept &= tok[b] == -7 && lp[b] == 42.0f;
			continue;
		}
		struct ref o = { .cand = cand };
		ref_sample(z + (size_t)b * V, V, &pp, S[b], n[b], &o);
		drawn &= (tok[b] == o.tok || o.u_margin < 1e-12) && lp_close(lp[b], o.lp);
	}
	ok(kept, "padding rows (draws < 0) keep their token and logprob");
	ok(drawn, "the rows between them get the CPU's tokens");
	free(z), free(cand);
}

static void twice(const char *name, int V, int B, int kind, const struct params *pp)
{
	float *z = malloc((size_t)B * V * sizeof *z), *lp = malloc(2 * B * sizeof *lp);
	int32_t *tok = malloc(2 * B * sizeof *tok), *n = malloc(B * sizeof *n);
	uint64_t *S = malloc(B * sizeof *S);
	for (int b = 0; b < B; b++) {
		float *row = z + (size_t)b * V;
		for (int j = 0; j < V; j++)
			row[j] = kind == LEVELS ? 0.4f * ((j + b) * 7 % 10) : 3.0f * gauss();
		S[b] = stream_state(77, (uint64_t)b), n[b] = b;
	}
	memset(tok, 0, 2 * B * sizeof *tok), memset(lp, 0, 2 * B * sizeof *lp);
	gpu(z, B, V, pp, S, n, tok, lp);
	gpu(z, B, V, pp, S, n, tok + B, lp + B);
	ok(!memcmp(tok, tok + B, B * sizeof *tok) && !memcmp(lp, lp + B, B * sizeof *lp),
	   "%s: the same tokens and logprob bits twice (%d rows)", name, B);
	free(z), free(lp), free(tok), free(n), free(S);
}

int main(void)
{
	skip_without_gpu();

	static const int t7[][2] = { { 2, 5 } }, t1k[][2] = { { 1, 999 }, { 600, 24 } };
	static const int tbig[][2] = { { 1, 1025 }, { 5000, 300 }, { 151934, 151935 }, { 70000, 150000 }, { 0, 151935 } };
	greedy(7, 32, t7, 1);
	greedy(1000, 32, t1k, 2);
	greedy(151936, 8, tbig, 5);

	exact(7, 64, 32, &(struct params){ 1.0f, 1.0f, 0 }, 2.0f);
	exact(7, 64, 8, &(struct params){ 0.7f, 1.0f, 7 }, 2.0f);   /* top-k V keeps everything */
	exact(1000, 64, 16, &(struct params){ 0.7f, 1.0f, 0 }, 2.5f);
	exact(151936, 16, 16, &(struct params){ 1.0f, 1.0f, 0 }, 2.0f);
	exact(151936, 16, 8, &(struct params){ 1.3f, 1.0f, 0 }, 4.0f);

	static const float tie_k[7] = { 1, 2, 2, 0.5f, 2, 2, -1 }, tie_p[7] = { 3, 3, 3, 3, 0, 0, 0 };
	static const float tie_f[7] = { 1e-8f, 3e-8f, -5, -5, -5, -5, -5 };   /* p_0 == p_1 as floats */
	static const struct dist dists[] = {
		{ "V 7, top-k 3", 7, GAUSS, 1.5f, NULL, { 1.0f, 1.0f, 3 }, 20000 },
		{ "V 7, top-p 0.8", 7, GAUSS, 1.5f, NULL, { 0.7f, 0.8f, 0 }, 20000 },
		{ "V 7, top-k 5 and top-p 0.7", 7, GAUSS, 1.5f, NULL, { 1.3f, 0.7f, 5 }, 20000 },
		{ "V 7, top-k 2 in a tie of four", 7, FIXED, 0, tie_k, { 1.0f, 1.0f, 2 }, 20000 },
		{ "V 7, top-p 0.5 in a tie of four", 7, FIXED, 0, tie_p, { 1.0f, 0.5f, 0 }, 20000 },
		{ "V 7, top-k 1 of two logits whose p are one float: the lower id", 7, FIXED, 0, tie_f,
		  { 1.0f, 1.0f, 1 }, 2000 },
		{ "V 1000, top-k 20", 1000, GAUSS, 2.5f, NULL, { 1.0f, 1.0f, 20 }, 10000 },
		{ "V 1000, top-p 0.5", 1000, GAUSS, 2.5f, NULL, { 0.8f, 0.5f, 0 }, 10000 },
		{ "V 1000, top-k 100 and top-p 0.9", 1000, GAUSS, 2.5f, NULL, { 1.0f, 0.9f, 100 }, 10000 },
		{ "V 1000 in ten levels, top-k 150 in the second", 1000, LEVELS, 0, NULL, { 1.0f, 1.0f, 150 }, 10000 },
		{ "V 1000 in ten levels, top-p 0.45 in the second", 1000, LEVELS, 0, NULL, { 1.0f, 0.45f, 0 }, 10000 },
		{ "V 1000 in ten levels, top-k 250, top-p 0.5 in the first", 1000, LEVELS, 0, NULL,
		  { 1.0f, 0.5f, 250 }, 10000 },
		{ "V 151936, top-k 8", 151936, GAUSS, 3.0f, NULL, { 1.0f, 1.0f, 8 }, 512 },
		{ "V 151936, top-p 0.3", 151936, GAUSS, 3.0f, NULL, { 0.6f, 0.3f, 0 }, 512 },
		{ "V 151936, top-k 40 and top-p 0.6", 151936, GAUSS, 3.0f, NULL, { 1.0f, 0.6f, 40 }, 512 },
	};
	for (size_t i = 0; i < sizeof dists / sizeof *dists; i++)
		distribution(&dists[i]);

	padding();
	twice("V 151936, top-k 40 and top-p 0.6", 151936, 32, GAUSS, &(struct params){ 1.0f, 0.6f, 40 });
	twice("V 151936, no top-k or top-p", 151936, 32, GAUSS, &(struct params){ 0.8f, 1.0f, 0 });
	twice("V 1000 in levels, top-p 0.45", 1000, 64, LEVELS, &(struct params){ 1.0f, 0.45f, 0 });
	return tap_done();
}
