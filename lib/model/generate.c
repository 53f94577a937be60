/* generate.c: see generate.h. */
#include "model/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* Most tokens one model_step takes while filling the cache with prompts. */
#define GEN_PREFILL_CHUNK 256

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

/* Uniform in [0, 1). */
static double uniform(uint64_t *s)
{
	return (splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * Pick the next token from one row of raw logits z (V); returns it and its
 * logprob at the temperature. cand: scratch (V).
 */
static int sample(const float *z, int V, const struct gen_params *p, uint64_t *rng, struct cand *cand, float *logprob)
{
	double inv = p->temperature > 0 ? 1.0 / p->temperature : 1.0, mx = -INFINITY;
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
	if (p->temperature > 0) {
		int n = V;
		double all = 0;
		for (int j = 0; j < V; j++) {
			cand[j] = (struct cand){ (float)exp(z[j] * inv - lse), j };
			all += cand[j].p;
		}
		int topk = p->top_k > 0 && p->top_k < V;
		if (topk || p->top_p < 1) {
			/*
			 * Without top-k, a token with p < (1 - top_p) / (V - 1) can never be in the
			 * nucleus (the tokens at or below it could not hold the missing 1 - top_p),
			 * so only the others need sorting (llama2.c's trick).
			 */
			if (!topk && V > 1) {
				float cut = (float)((1 - p->top_p) / (V - 1));
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
				n = p->top_k;
				kept = 0;
				for (int j = 0; j < n; j++)
					kept += cand[j].p;
			}
			if (p->top_p < 1) {
				double mass = 0;
				int m = 0;
				while (m < n && mass < p->top_p * kept)
					mass += cand[m++].p;
				n = m > 0 ? m : 1;
			}
		}
		double total = 0;
		for (int j = 0; j < n; j++)
			total += cand[j].p;
		double u = uniform(rng) * total, acc = 0;
		tok = cand[n - 1].id;   /* if rounding leaves u past the end */
		for (int j = 0; j < n; j++) {
			acc += cand[j].p;
			if (u < acc) {
				tok = cand[j].id;
				break;
			}
		}
	}
	*logprob = (float)(z[tok] * inv - lse);
	return tok;
}

uint64_t gen_stream_state(uint64_t seed, uint64_t stream)
{
	uint64_t s = splitmix64(&stream) ^ seed;
	return splitmix64(&s);
}

void gen_seq_free(struct gen_seq *s)
{
	free(s->tokens);
	free(s->logprobs);
	memset(s, 0, sizeof *s);
}

static int is_stop(const struct gen_params *p, int tok)
{
	for (int i = 0; i < p->n_stop; i++)
		if (p->stop_ids[i] == tok)
			return 1;
	return 0;
}

/* Record token tok for sequence b; returns 1 when b is finished. */
static int push(struct gen_seq *s, const struct gen_params *p, int tok, float lp)
{
	s->tokens[s->n] = tok;
	s->logprobs[s->n] = lp;
	s->n++;
	if (is_stop(p, tok) || (p->stop_after && p->stop_after(p->stop_ctx, s->tokens, s->n))) {
		s->finish = GEN_STOP;
		return 1;
	}
	if (s->n >= p->max_tokens) {
		s->finish = GEN_LENGTH;
		return 1;
	}
	return 0;
}

int gen_start(const int *prompt_lens, int B, const struct gen_params *p, struct gen_seq *out, uint64_t *states,
              struct err *e)
{
	if (B < 1 || p->max_tokens < 1)
		return err_set(e, "need at least one prompt and max_tokens >= 1");
	if (!(p->temperature >= 0) || !(p->top_p > 0 && p->top_p <= 1) || p->top_k < 0)
		return err_set(e, "temperature must be >= 0, top_p in (0, 1], top_k >= 0");
	for (int b = 0; b < B; b++)
		if (prompt_lens[b] < 1)
			return err_set(e, "prompt %d is empty", b);
	memset(out, 0, (size_t)B * sizeof *out);
	for (int b = 0; b < B; b++) {
		out[b].tokens = malloc((size_t)p->max_tokens * sizeof *out[b].tokens);
		out[b].logprobs = malloc((size_t)p->max_tokens * sizeof *out[b].logprobs);
		if (!out[b].tokens || !out[b].logprobs) {
			for (int k = 0; k <= b; k++)
				gen_seq_free(&out[k]);
			return err_set(e, "out of memory");
		}
		/*
		 * Each stream starts at a hash of (seed, stream). Starting at seed ^ golden * (b + 1),
		 * as this once did, made stream b at draw k the stream b + 1 at draw k - 1 (splitmix
		 * adds golden each draw): neighbouring samples drew the same numbers, one token apart.
		 */
		states[b] = gen_stream_state(p->seed, p->streams ? p->streams[b] : (uint64_t)b);
	}
	return 0;
}

int gen_run(const struct model *m, const int *const *prompts, const int *prompt_lens, int B,
            const struct gen_params *p, struct gen_seq *out, struct err *e)
{
	int V = m->cfg.V;
	uint64_t *rng = malloc((size_t)(B > 0 ? B : 1) * sizeof *rng);
	if (!rng)
		return err_set(e, "out of memory");
	if (gen_start(prompt_lens, B, p, out, rng, e) < 0) {
		free(rng);
		return -1;
	}
	int maxlen = 0;
	for (int b = 0; b < B; b++)
		if (prompt_lens[b] > maxlen)
			maxlen = prompt_lens[b];
	maxlen += p->max_tokens;
	int maxT = B > GEN_PREFILL_CHUNK ? B : GEN_PREFILL_CHUNK;

	struct model_kv kv;
	if (model_kv_alloc(m, &kv, B, maxlen, maxT, e) < 0) {
		for (int b = 0; b < B; b++)
			gen_seq_free(&out[b]);
		free(rng);
		return -1;
	}
	float *logits = malloc((size_t)maxT * V * sizeof *logits);
	struct cand *cand = malloc((size_t)V * sizeof *cand);
	int *ids = malloc((size_t)maxT * sizeof *ids), *slots = malloc((size_t)maxT * sizeof *slots);
	unsigned char *want = malloc((size_t)maxT);
	unsigned char *done = calloc((size_t)B, 1);
	int r = 0;
	if (!logits || !cand || !ids || !slots || !want || !done) {
		r = err_set(e, "out of memory");
		goto out;
	}

	/* prefill: the prompts' tokens in chunks; each prompt's last token gives its first sample */
	int b = 0, j = 0;
	while (b < B) {
		int T = 0;
		while (T < maxT && b < B) {
			ids[T] = prompts[b][j];
			slots[T] = b;
			want[T] = j == prompt_lens[b] - 1;
			T++;
			if (++j == prompt_lens[b])
				b++, j = 0;
		}
		if ((r = model_step(m, &kv, ids, slots, T, want, logits, e)) < 0)
			goto out;
		for (int t = 0, row = 0; t < T; t++) {
			if (!want[t])
				continue;
			float lp;
			int tok = sample(logits + (size_t)row++ * V, V, p, &rng[slots[t]], cand, &lp);
			done[slots[t]] = (unsigned char)push(&out[slots[t]], p, tok, lp);
		}
	}

	/* decode: every unfinished sequence advances one token per step */
	for (;;) {
		int T = 0;
		for (int s = 0; s < B; s++)
			if (!done[s]) {
				ids[T] = out[s].tokens[out[s].n - 1];
				slots[T++] = s;
			}
		if (T == 0)
			break;
		if ((r = model_step(m, &kv, ids, slots, T, NULL, logits, e)) < 0)
			goto out;
		for (int t = 0; t < T; t++) {
			float lp;
			int tok = sample(logits + (size_t)t * V, V, p, &rng[slots[t]], cand, &lp);
			done[slots[t]] = (unsigned char)push(&out[slots[t]], p, tok, lp);
		}
	}
out:
	if (r < 0)
		for (int s = 0; s < B; s++)
			gen_seq_free(&out[s]);
	model_kv_free(&kv);
	free(logits);
	free(cand);
	free(ids);
	free(slots);
	free(want);
	free(rng);
	free(done);
	return r;
}
