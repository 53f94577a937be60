/*
 * test_cuda_generate: sampling on the GPU (kernels/gpu_decode.h through
 * model_gpu_generate) against gen_run, the C sampler, its specification.
 *
 *  - greedy decoding gives the C model's tokens, in fp32, on the committed
 *    transformers fixtures and a random model with sharp distributions
 *    (where a sequence in ten may part at a draw within rounding of a
 *    boundary: parted_ok), prompts of 1 to 40 tokens (KV blocks of 16:
 *    their edges), samples of one prompt sharing its blocks;
 *  - sampling in fp32 with no top-k or top-p draws the C sampler's tokens
 *    (the same streams, the same walk over the vocabulary);
 *  - each token's logprob is the one the trainer's forward gives for it at
 *    the sampling temperature: the GPU forward in the same precision and,
 *    in fp32, the C model; in bf16 the mean |diff| is under 0.01 on the
 *    fixtures and within twice bf16's own noise (bf16 forward against fp32)
 *    everywhere;
 *  - a batch where sequences stop at very different times, joining as
 *    others finish (max_batch smaller than the batch), gives each
 *    sequence's tokens decoded alone; the same call twice gives the same
 *    bits; a step through CUDA graphs the same as kernel by kernel; top-k 1
 *    is greedy; a KV cache too small for the batch takes sequences out and
 *    starts them again, and they give the same tokens.
 *
 * GRPO_TEST_MODELS, a list of qwen2, qwen3, llama and random, runs those
 * models alone (unset: all four), for slow hosts such as model_sim's CPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "model/generate.h"
#include "model/model_gpu.h"

#define XORSHIFT_SEED 0x2545f4914f6cdd1dull
#include "../xorshift.h"

#define NP 8            /* prompts */
#define MAXLEN 40

struct prompts {
	int *ids[NP * 8];
	int lens[NP * 8];
	uint64_t streams[NP * 8];
	int B;
	int store[NP][MAXLEN];
};

/* NP prompts of lengths around the 16-token blocks, G samples each. */
static void make_prompts(struct prompts *p, int V, int G)
{
	static const int lens[NP] = { 1, 15, 16, 17, 33, 5, 40, 2 };
	p->B = 0;
	for (int i = 0; i < NP; i++) {
		for (int t = 0; t < lens[i]; t++)
			p->store[i][t] = (int)(xorshift32() % (uint32_t)V);
		for (int j = 0; j < G; j++) {
			p->ids[p->B] = p->store[i];
			p->lens[p->B] = lens[i];
			p->streams[p->B] = (uint64_t)i * 1000 + j;
			p->B++;
		}
	}
}

static void free_seqs(struct gen_seq *s, int B)
{
	for (int b = 0; b < B; b++)
		gen_seq_free(&s[b]);
}

/* Sequences whose tokens differ, and the first such, by index; -1 if none. */
static int first_differing(const struct gen_seq *a, const struct gen_seq *b, int B, int *count)
{
	int first = -1;
	*count = 0;
	for (int s = 0; s < B; s++)
		if (a[s].n != b[s].n || memcmp(a[s].tokens, b[s].tokens, (size_t)a[s].n * sizeof(int)) != 0 ||
		    a[s].finish != b[s].finish) {
			if (first < 0)
				first = s;
			++*count;
		}
	return first;
}

static void report_difference(const struct gen_seq *a, const struct gen_seq *b, int s)
{
	int n = a[s].n < b[s].n ? a[s].n : b[s].n, t = 0;
	while (t < n && a[s].tokens[t] == b[s].tokens[t])
		t++;
	diag("sequence %d: %d and %d tokens, first difference at %d (%d, logprob %.6f vs %d, %.6f)", s, a[s].n,
	     b[s].n, t, t < a[s].n ? a[s].tokens[t] : -1, t < a[s].n ? a[s].logprobs[t] : 0,
	     t < b[s].n ? b[s].tokens[t] : -1, t < b[s].n ? b[s].logprobs[t] : 0);
}

static int gpu_sample(const struct model *m, int bf16, struct prompts *p, const struct gen_params *gp,
		      struct gen_seq *out, int max_batch_env)
{
	struct model_gpu *g = NULL;
	struct err e = { 0 };
	char mb[16];
	snprintf(mb, sizeof mb, "%d", max_batch_env);
	if (max_batch_env > 0)
		setenv("GRPO_CUDA_MAX_BATCH", mb, 1);
	int r = model_gpu_open_gen(&g, m, MAXLEN, gp->max_tokens, bf16, &e);
	if (r == 0)
		r = model_gpu_generate(g, (const int *const *)p->ids, p->lens, p->B, gp, out, &e);
	if (r < 0)
		diag("GPU sampler: %s", e.msg);
	model_gpu_close(g);
	unsetenv("GRPO_CUDA_MAX_BATCH");
	return r;
}

/*
 * Every sampled token's logprob against the GPU forward of prompt +
 * response at the temperature (in the same precision): returns the mean
 * |diff|, the worst in *worst. In fp32 also against the C model (*other);
 * in bf16, *other is bf16's own noise there: the mean |diff| between the
 * bf16 and the fp32 forward on the same tokens.
 */
static double logprob_gap(const struct model *m, int bf16, struct prompts *p, const struct gen_seq *s, float temp,
			  double *worst, double *other)
{
	int T = 0;
	for (int b = 0; b < p->B; b++)
		T += p->lens[b] + s[b].n;
	int *ids = malloc((size_t)T * sizeof *ids), *lens = malloc((size_t)p->B * sizeof *lens);
	float *temps = malloc((size_t)T * sizeof *temps), *lp = malloc((size_t)T * sizeof *lp);
	float *cpu = malloc((size_t)T * sizeof *cpu);
	for (int b = 0, t = 0; b < p->B; b++) {
		lens[b] = p->lens[b] + s[b].n;
		for (int j = 0; j < p->lens[b]; j++, t++)
			ids[t] = p->ids[b][j], temps[t] = temp;
		for (int j = 0; j < s[b].n; j++, t++)
			ids[t] = s[b].tokens[j], temps[t] = temp;
	}
	struct model_gpu *g = NULL, *g32 = NULL;
	struct err e = { 0 };
	double sum = 0, csum = 0;
	int n = 0, have_other = 0;
	*worst = INFINITY;
	*other = -1;
	if (model_gpu_open(&g, m, T, bf16, &e) < 0 || model_gpu_forward(g, ids, T, lens, p->B, temps, lp, NULL, &e) < 0) {
		diag("GPU forward: %s", e.msg);
		goto out;
	}
	if (bf16)   /* the fp32 forward, for bf16's noise */
		have_other = model_gpu_open(&g32, m, T, 0, &e) == 0 &&
			     model_gpu_forward(g32, ids, T, lens, p->B, temps, cpu, NULL, &e) == 0;
	else
		have_other = model_acts_alloc((struct model *)m, T, &e) == 0 &&
			     model_forward((struct model *)m, ids, T, lens, p->B, temps, cpu, NULL, &e) == 0;
	if (!have_other)
		diag("%s forward: %s", bf16 ? "GPU fp32" : "C", e.msg);
	*worst = 0;
	for (int b = 0, t = 0; b < p->B; b++) {
		t += p->lens[b];
		for (int j = 0; j < s[b].n; j++, t++) {
			double x = fabs((double)lp[t] - s[b].logprobs[j]);
			*worst = x > *worst || isnan(x) ? x : *worst;
			sum += x;
			if (have_other)
				csum += fabs((double)cpu[t] - (bf16 ? lp[t] : s[b].logprobs[j]));
			n++;
		}
	}
	if (have_other)
		*other = csum / n;
out:
	model_gpu_close(g);
	model_gpu_close(g32);
	free(ids), free(lens), free(temps), free(lp), free(cpu);
	return n ? sum / n : INFINITY;
}

/*
 * Tokens drawn through two numeric paths (the GPU's against the C model's,
 * a restart's prefill against decode steps) agree but where a draw falls
 * within rounding of the boundary between two tokens. On the fixtures
 * (logits of a few units) that never happens in these batches; on the sharp
 * random model (logits of tens) a sequence in ten may part that way, and
 * from there on, differ. A broken cache or sampler parts nearly all of them.
 */
static int parted_ok(int diffs, int B, int sharp)
{
	return sharp ? diffs * 10 <= B : diffs == 0;
}

/* A stop_after that reads more than the last token, as stop strings do: two
 * tokens in a row that sum to a multiple of 5 end a sequence. */
static int pair_stop(void *ctx, const int32_t *t, int n)
{
	(void)ctx;
	return n >= 2 && (t[n - 1] + t[n - 2]) % 5 == 0;
}

static void check_model(const struct model *m, const char *name, int sharp)
{
	struct prompts p;
	struct gen_seq cpu[NP * 8], gpu[NP * 8], again[NP * 8], alone[NP * 8];
	struct err e = { 0 };
	int stop = (int)(xorshift32() % (uint32_t)m->cfg.V), diffs = 0, stops[3] = { 0, 0, 0 };
	double scale = sharp ? 10 : 1;   /* the sharp model's logits are ten times the fixtures' */
	make_prompts(&p, m->cfg.V, 3);

	/* greedy, fp32: the C model's tokens */
	struct gen_params gp = { .temperature = 0, .top_p = 1, .top_k = 0, .max_tokens = 24, .stop_ids = &stop,
				 .n_stop = 1, .seed = 5, .streams = p.streams };
	if (!ok(gen_run(m, (const int *const *)p.ids, p.lens, p.B, &gp, cpu, &e) == 0, "%s: C greedy", name))
		diag("%s", e.msg);
	if (ok(gpu_sample(m, 0, &p, &gp, gpu, 0) == 0, "%s: GPU greedy, fp32", name)) {
		int first = first_differing(cpu, gpu, p.B, &diffs);
		if (!ok(parted_ok(diffs, p.B, sharp), "%s: greedy fp32 tokens equal the C model's (%d of %d differ)", name,
			diffs, p.B))
			report_difference(cpu, gpu, first);
		free_seqs(gpu, p.B);
	}
	/* top-k 1 is greedy too */
	struct gen_params k1 = gp;
	k1.temperature = 1, k1.top_k = 1;
	if (ok(gpu_sample(m, 0, &p, &k1, gpu, 0) == 0, "%s: GPU top-k 1", name)) {
		int first = first_differing(cpu, gpu, p.B, &diffs);
		if (!ok(parted_ok(diffs, p.B, sharp), "%s: top-k 1 draws the greedy tokens (%d of %d differ)", name, diffs,
			p.B))
			report_difference(cpu, gpu, first);
		free_seqs(gpu, p.B);
	}
	free_seqs(cpu, p.B);

	/* sampling at 0.8, fp32: the C sampler's draws, and the trainer's logprobs */
	struct gen_params sp = gp;
	sp.temperature = 0.8f, sp.max_tokens = 32;
	if (gen_run(m, (const int *const *)p.ids, p.lens, p.B, &sp, cpu, &e) == 0 &&
	    ok(gpu_sample(m, 0, &p, &sp, gpu, 0) == 0, "%s: GPU sampling, fp32", name)) {
		int first = first_differing(cpu, gpu, p.B, &diffs);
		if (!ok(parted_ok(diffs, p.B, sharp),
			"%s: fp32 samples equal the C sampler's from the same streams (%d of %d differ)", name, diffs, p.B))
			report_difference(cpu, gpu, first);
		double worst, cmean, mean = logprob_gap(m, 0, &p, gpu, sp.temperature, &worst, &cmean);
		ok(mean < 1e-5 * scale && worst < 1e-4 * scale,
		   "%s: fp32 sampled logprobs = GPU forward's (mean %.2g, worst %.2g)", name, mean, worst);
		ok(cmean >= 0 && cmean < 1e-5 * scale, "%s: fp32 sampled logprobs = the C model's (mean %.2g)", name,
		   cmean);
		/* stop tokens that sequences meet early, midway and late */
		const struct gen_seq *early = &gpu[0], *mid = &gpu[p.B / 2], *late = &gpu[p.B - 1];
		stops[0] = early->tokens[early->n > 2 ? 2 : early->n - 1];
		stops[1] = mid->tokens[mid->n > 12 ? 12 : mid->n - 1];
		stops[2] = late->tokens[late->n > 26 ? 26 : late->n - 1];
		free_seqs(gpu, p.B);
		free_seqs(cpu, p.B);
	}
	/* stop_after, asked on the host as the tokens come back: the C sampler's ends */
	struct gen_params ap = sp;
	ap.stop_after = pair_stop;
	if (gen_run(m, (const int *const *)p.ids, p.lens, p.B, &ap, cpu, &e) == 0 &&
	    ok(gpu_sample(m, 0, &p, &ap, gpu, 0) == 0, "%s: GPU sampling with stop_after, fp32", name)) {
		int first = first_differing(cpu, gpu, p.B, &diffs), ended = 0, early = 0;
		for (int b = 0; b < p.B; b++) {
			ended += gpu[b].finish == GEN_STOP;
			for (int j = 2; j < gpu[b].n; j++)
				early += pair_stop(NULL, gpu[b].tokens, j);
		}
		if (!ok(parted_ok(diffs, p.B, sharp) && ended > 0 && early == 0,
			"%s: stop_after ends %d of %d sequences where the C sampler does (%d differ), none later", name,
			ended, p.B, diffs))
			report_difference(cpu, gpu, first);
		free_seqs(gpu, p.B);
		free_seqs(cpu, p.B);
	}

	/* bf16: logprobs within bf16 noise of the bf16 forward; same bits twice; graphs or not */
	if (ok(gpu_sample(m, 1, &p, &sp, gpu, 0) == 0, "%s: GPU sampling, bf16", name)) {
		double worst, noise, mean = logprob_gap(m, 1, &p, gpu, sp.temperature, &worst, &noise);
		ok(noise >= 0 && mean <= 2 * noise + 1e-3 && (sharp || mean < 0.01),
		   "%s: bf16 sampled logprobs against the bf16 forward: mean |diff| %.4f (worst %.3f), bf16's own noise "
		   "%.4f", name, mean, worst, noise);
		if (ok(gpu_sample(m, 1, &p, &sp, again, 0) == 0, "%s: again", name)) {
			int same = first_differing(gpu, again, p.B, &diffs) < 0;
			for (int b = 0; same && b < p.B; b++)
				same = memcmp(gpu[b].logprobs, again[b].logprobs, (size_t)gpu[b].n * sizeof(float)) == 0;
			ok(same, "%s: the same call twice gives the same tokens and logprob bits", name);
			free_seqs(again, p.B);
		}
		setenv("GRPO_CUDA_GRAPHS", "0", 1);
		if (ok(gpu_sample(m, 1, &p, &sp, again, 0) == 0, "%s: without CUDA graphs", name)) {
			int first = first_differing(gpu, again, p.B, &diffs);
			if (!ok(diffs == 0, "%s: kernel by kernel gives the graphs' tokens (%d differ)", name, diffs))
				report_difference(gpu, again, first);
			free_seqs(again, p.B);
		}
		unsetenv("GRPO_CUDA_GRAPHS");
		free_seqs(gpu, p.B);
	}
	if (!sharp)
		return;

	/* continuous batching: 4 rows for 24 sequences that stop at different
	 * times, against each prompt's samples alone */
	struct gen_params cp = sp;
	cp.max_tokens = 48;
	cp.stop_ids = stops, cp.n_stop = 3;
	if (!ok(gpu_sample(m, 0, &p, &cp, gpu, 4) == 0, "%s: GPU sampling, 4 rows at a time", name))
		return;
	int shortest = cp.max_tokens, longest = 0, parted = 0;
	for (int i = 0; i < NP; i++) {
		struct prompts one = p;
		one.B = 3;
		memcpy(one.ids, p.ids + 3 * i, 3 * sizeof *one.ids);
		memcpy(one.lens, p.lens + 3 * i, 3 * sizeof *one.lens);
		memcpy(one.streams, p.streams + 3 * i, 3 * sizeof *one.streams);
		struct gen_params op = cp;
		op.streams = one.streams;
		if (gpu_sample(m, 0, &one, &op, alone, 0) < 0) {
			parted = p.B;
			break;
		}
		int first = first_differing(gpu + 3 * i, alone, 3, &diffs);
		if (diffs)
			report_difference(gpu + 3 * i, alone, first);
		parted += diffs;
		free_seqs(alone, 3);
	}
	for (int b = 0; b < p.B; b++) {
		shortest = gpu[b].n < shortest ? gpu[b].n : shortest;
		longest = gpu[b].n > longest ? gpu[b].n : longest;
	}
	ok(parted_ok(parted, p.B, sharp), "%s: each prompt's samples as when decoded alone (%d of %d differ)", name,
	   parted, p.B);
	ok(longest - shortest >= 8, "%s: the sequences did finish at different times (%d to %d tokens)", name, shortest,
	   longest);

	/* a cache of 1 MiB (64 fp32 blocks here) for what wants about 100: sequences are
	 * taken out and started again, and give the same tokens */
	setenv("GRPO_CUDA_KV_MIB", "1", 1);
	struct model_gpu *g = NULL;
	char how[512] = "";
	int r = model_gpu_open_gen(&g, m, MAXLEN, cp.max_tokens, 0, &e);
	if (r == 0)
		r = model_gpu_generate(g, (const int *const *)p.ids, p.lens, p.B, &cp, again, &e);
	if (r == 0)
		model_gpu_gen_describe(g, how, sizeof how);
	model_gpu_close(g);
	unsetenv("GRPO_CUDA_KV_MIB");
	if (ok(r == 0, "%s: a small KV cache: %s", name, r == 0 ? how : e.msg)) {
		const char *at = strstr(how, " started again");
		int restarts = 0;
		while (at && at > how && at[-1] >= '0' && at[-1] <= '9')
			at--;
		if (at)
			restarts = atoi(at);
		ok(restarts > 0, "%s: sequences were taken out and started again (%d)", name, restarts);
		int first = first_differing(gpu, again, p.B, &diffs);
		if (!ok(parted_ok(diffs, p.B, sharp), "%s: and their tokens are the same (%d of %d differ)", name, diffs,
			p.B))
			report_difference(gpu, again, first);
		free_seqs(again, p.B);
	}
	free_seqs(gpu, p.B);
}

static int random_model(struct model *m)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN2);
	c.C = 448, c.I = 512, c.L = 2, c.NH = 7, c.NKV = 1, c.HS = 64, c.V = 2048, c.tied = 1;
	struct err e = { 0 };
	if (model_create(m, &c, &e) < 0 || model_init_random(m, 9, &e) < 0) {
		diag("%s", e.msg);
		return -1;
	}
	for (size_t i = 0; i < m->w.n; i++)   /* sharp distributions, far from uniform */
		m->w.mem[i] *= 3.0f;
	return 0;
}

/* Whether GRPO_TEST_MODELS (unset: every model) names this one; if not, says so. */
static int wanted(const char *name)
{
	const char *list = getenv("GRPO_TEST_MODELS");
	if (!list)
		return 1;
	size_t n = strlen(name);
	for (const char *at = strstr(list, name); at; at = strstr(at + n, name))
		if ((at == list || strchr(" ,", at[-1])) && strchr(" ,", at[n]))   /* a whole word (at[n] may be '\0') */
			return 1;
	char why[300];
	snprintf(why, sizeof why, "%s: not in GRPO_TEST_MODELS (%s)", name, list);
	skip(why);
	return 0;
}

int main(void)
{
	skip_without_gpu();
	const char *top = getenv("GRPO_TOP");
	const char *fams[] = { "qwen2", "qwen3", "llama" };
	for (int i = 0; i < 3; i++) {
		if (!wanted(fams[i]))
			continue;
		char path[4200];
		snprintf(path, sizeof path, "%s/tests/data/hf/%s", top ? top : ".", fams[i]);
		struct model m;
		struct err e = { 0 };
		if (!ok(model_load(&m, path, &e) == 0, "%s: load %s", fams[i], path)) {
			diag("%s", e.msg);
			continue;
		}
		check_model(&m, fams[i], 0);
		model_free(&m);
	}
	struct model m;
	if (wanted("random") && ok(random_model(&m) == 0, "random qwen2 model, HS 64, 7 query heads per kv head")) {
		check_model(&m, "random qwen2", 1);
		model_free(&m);
	}
	return tap_done();
}
