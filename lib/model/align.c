/* align.c: see align.h. */
#include "model/align.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/mbbuild.h"

void align_traj_free(struct align_traj *a)
{
	free(a->model_logprobs);
	free(a->model_entropy);
	memset(a, 0, sizeof *a);
}

/* Every id in [0, V), or where the first is not: the model would say only
 * its place in the pack, which names no trajectory or field. */
static int check_ids(const struct traj *t, int V, struct err *e)
{
	const int32_t *ids[2] = { t->prompt_tokens, t->response_tokens };
	const uint32_t n[2] = { t->n_prompt, t->n_response };
	for (int f = 0; f < 2; f++)
		for (uint32_t k = 0; k < n[f]; k++)
			if (ids[f][k] < 0 || ids[f][k] >= V)
				return err_set(e, "%s[%u] is %d, outside the model's vocabulary of %d",
					       f ? "response_tokens" : "prompt_tokens", k, ids[f][k], V);
	return 0;
}

/* One forward over trajectories [first, last) packed into a micro-batch. */
static int align_pack(struct model *m, const struct group *g, uint32_t first, uint32_t last,
		      struct align_traj *out, struct err *e)
{
	uint32_t nseq = 0, L = 0;
	const struct traj **seqs = malloc((last - first) * sizeof *seqs);
	struct microbatch mb = { 0 };
	float *lp = NULL, *ent = NULL;
	int rc = -1;
	if (!seqs) {
		err_set(e, "out of memory");
		goto done;
	}
	for (uint32_t i = first; i < last; i++) {
		const struct traj *t = &g->trajs[i];
		if (check_ids(t, m->cfg.V, e) < 0) {
			err_prefix(e, "trajectory %u", i);
			goto done;
		}
		if (t->n_prompt + t->n_response == 0)
			continue;   /* nothing to run, and the model refuses a sequence of no token */
		seqs[nseq++] = t;
		L += t->n_prompt + t->n_response;
	}
	if (nseq > 0) {
		struct mbbuild_opt mo = { L, 0, 0 };   /* exactly the sequences: no padding */
		if (mb_build(&mb, seqs, NULL, nseq, &mo, 0, 0, e) < 0)
			goto done;
		int T = (int)mb.n_tokens;
		lp = malloc((size_t)T * sizeof *lp);
		ent = malloc((size_t)T * sizeof *ent);
		if (!lp || !ent) {
			err_set(e, "out of memory");
			goto done;
		}
		if (m->a.maxT < T && model_acts_alloc(m, T, e) < 0)
			goto done;
		if (model_forward_mb(m, &mb, lp, ent, e) < 0)
			goto done;
	}
	uint32_t at = 0;   /* mb_build puts the sequences whole, back to back */
	for (uint32_t i = first; i < last; i++) {
		const struct traj *t = &g->trajs[i];
		struct align_traj *a = &out[i];
		size_t n = t->n_response ? t->n_response : 1;
		a->model_logprobs = malloc(n * sizeof(float));
		a->model_entropy = malloc(n * sizeof(float));
		if (!a->model_logprobs || !a->model_entropy) {
			err_set(e, "out of memory");
			goto done;
		}
		/* the value at a response token's own index describes it (model.h) */
		if (t->n_response) {
			memcpy(a->model_logprobs, lp + at + t->n_prompt, t->n_response * sizeof(float));
			memcpy(a->model_entropy, ent + at + t->n_prompt, t->n_response * sizeof(float));
		}
		double sum = 0, abs_sum = 0, max = 0;
		uint32_t n_on = 0;
		for (uint32_t k = 0; t->logprobs && k < t->n_response; k++) {
			if (t->response_mask && !t->response_mask[k])
				continue;
			/* without a prompt nothing predicts the first token: the packer never trains it */
			if (k == 0 && t->n_prompt == 0)
				continue;
			double d = (double)a->model_logprobs[k] - (double)t->logprobs[k];
			sum += d;
			abs_sum += fabs(d);
			max = fabs(d) > max ? fabs(d) : max;
			n_on++;
		}
		a->n_trained = n_on;
		a->diff_mean = n_on ? sum / n_on : 0.0;
		a->abs_diff_mean = n_on ? abs_sum / n_on : 0.0;
		a->abs_diff_max = max;
		at += t->n_prompt + t->n_response;
	}
	rc = 0;
done:
	free(seqs);
	mb_free(&mb);
	free(lp);
	free(ent);
	return rc;
}

int align_group(struct model *m, const struct group *g, struct align_traj *out, struct err *e)
{
	memset(out, 0, g->n * sizeof *out);
	uint32_t first = 0;
	while (first < g->n) {
		uint32_t last = first;
		size_t T = 0;
		do {
			T += g->trajs[last].n_prompt + g->trajs[last].n_response;
			last++;
		} while (last < g->n &&
			 T + g->trajs[last].n_prompt + g->trajs[last].n_response <= ALIGN_MAX_PACK);
		if (T > (size_t)1 << 30 || align_pack(m, g, first, last, out, e) < 0) {
			for (uint32_t i = 0; i < g->n; i++)
				align_traj_free(&out[i]);
			return T > (size_t)1 << 30 ? err_set(e, "sequence too long") : -1;
		}
		first = last;
	}
	return 0;
}
