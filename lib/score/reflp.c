/* reflp.c: see reflp.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "score/reflp.h"
#include "score/scored.h"

static int is_file(const char *dir, const char *name)
{
	char p[4200];
	struct stat sb;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

int reflp_open(struct reflp *r, const char *path, int max_tokens, struct err *e)
{
	memset(r, 0, sizeof *r);
	if (is_file(path, "config.json"))
		snprintf(r->dir, sizeof r->dir, "%s", path);
	else if (snprintf(r->dir, sizeof r->dir, "%s/step_0", path), is_file(r->dir, "config.json"))
		;
	else
		return err_set(e, "%s: neither a model directory (no config.json) nor a policy queue with step_0/",
			       path);
	if (model_load(&r->m, r->dir, e) < 0)
		return -1;
	r->max_tokens = max_tokens;
	return 0;
}

void reflp_init(struct reflp *r, struct model *m, const char *name, int max_tokens)
{
	memset(r, 0, sizeof *r);
	r->m = *m;
	memset(m, 0, sizeof *m);
	snprintf(r->dir, sizeof r->dir, "%s", name);
	r->max_tokens = max_tokens;
}

int reflp_use_gpu(struct reflp *r, int bf16, struct err *e)
{
	model_gpu_close(r->gpu);
	r->gpu = NULL;
	r->gpu_T = 0;
	if (model_gpu_open(&r->gpu, &r->m, r->max_tokens, bf16, e) < 0)
		return err_prefix(e, "reference model %s", r->dir);
	r->gpu_T = r->max_tokens;
	r->gpu_bf16 = bf16;
	return 0;
}

void reflp_close(struct reflp *r)
{
	model_gpu_close(r->gpu);
	model_free(&r->m);
	free(r->ids);
	free(r->lens);
	free(r->temps);
	free(r->lp);
	memset(r, 0, sizeof *r);
}

/* *p made an array of n elements of sz bytes: 0, or -1 with *p kept. */
static int resize(void **p, size_t n, size_t sz)
{
	void *q = realloc(*p, n * sz);
	if (!q)
		return -1;
	*p = q;
	return 0;
}

static int grow(struct reflp *r, int T, struct err *e)
{
	if (T > r->cap) {
		size_t n = (size_t)T;
		void *ids = r->ids, *lens = r->lens, *temps = r->temps, *lp = r->lp;
		int bad = resize(&ids, n, sizeof *r->ids) | resize(&lens, n, sizeof *r->lens) |
			  resize(&temps, n, sizeof *r->temps) | resize(&lp, n, sizeof *r->lp);
		r->ids = ids, r->lens = lens, r->temps = temps, r->lp = lp;
		if (bad)
			return err_set(e, "out of memory for a reference pass of %d tokens", T);
		r->cap = T;
	}
	int want = T > r->max_tokens ? T : r->max_tokens;
	if (r->gpu && T > r->gpu_T) {
		/* a sequence longer than a pass: a GPU model of its size, once */
		model_gpu_close(r->gpu);
		r->gpu = NULL;
		if (model_gpu_open(&r->gpu, &r->m, want, r->gpu_bf16, e) < 0)
			return err_prefix(e, "reference model %s", r->dir);
		r->gpu_T = want;
	} else if (!r->gpu && T > r->acts_T) {
		if (model_acts_alloc(&r->m, want, e) < 0)
			return err_prefix(e, "reference model %s", r->dir);
		r->acts_T = want;
	}
	return 0;
}

static int check(const struct reflp *r, const struct group *g, const struct traj *t, struct err *e)
{
	char id[64], gid[64];
	scored_seq_text(t, id, sizeof id);
	scored_group_text(g, gid, sizeof gid);
	if (t->n_prompt == 0 && t->n_response > 0)
		return err_set(e, "group %s, sequence %s: no prompt tokens, so nothing predicts the first response "
			       "token (no reference logprob)", gid, id);
	if (!(t->temperature > 0))
		return err_set(e, "group %s, sequence %s: temperature %g; reference logprobs need a positive one",
			       gid, id, t->temperature);
	if ((uint64_t)t->n_prompt + t->n_response > (uint64_t)1 << 30)
		return err_set(e, "group %s, sequence %s: too long", gid, id);
	for (uint32_t j = 0; j < t->n_prompt + t->n_response; j++) {
		int32_t v = j < t->n_prompt ? t->prompt_tokens[j] : t->response_tokens[j - t->n_prompt];
		if (v < 0 || v >= r->m.cfg.V)
			return err_set(e, "group %s, sequence %s: %s token %u is id %d, outside the reference model's "
				       "vocabulary (%d ids, %s)", gid, id, j < t->n_prompt ? "prompt" : "response",
				       j < t->n_prompt ? j : j - t->n_prompt, v, r->m.cfg.V, r->dir);
	}
	return 0;
}

/* Run trajectories [a, b) of g as one pack; their results go to out[a..b). */
static int run_pass(struct reflp *r, const struct group *g, uint32_t a, uint32_t b, float **out, struct err *e)
{
	int T = 0;
	for (uint32_t i = a; i < b; i++)
		T += (int)(g->trajs[i].n_prompt + g->trajs[i].n_response);
	if (grow(r, T, e) < 0)
		return -1;
	int at = 0, ns = 0;
	for (uint32_t i = a; i < b; i++) {
		const struct traj *t = &g->trajs[i];
		int n = (int)(t->n_prompt + t->n_response);
		if (n == 0)
			continue;   /* nothing to predict, and the model refuses a sequence of no token */
		for (uint32_t j = 0; j < t->n_prompt; j++)
			r->ids[at + j] = t->prompt_tokens[j];
		for (uint32_t j = 0; j < t->n_response; j++)
			r->ids[at + t->n_prompt + j] = t->response_tokens[j];
		for (int j = 0; j < n; j++)
			r->temps[at + j] = t->temperature;
		r->lens[ns++] = n;
		at += n;
	}
	int rc = 0;
	if (T > 0 && r->gpu)
		rc = model_gpu_forward(r->gpu, r->ids, T, r->lens, ns, r->temps, r->lp, NULL, e);
	else if (T > 0)
		rc = model_forward(&r->m, r->ids, T, r->lens, ns, r->temps, r->lp, NULL, e);
	if (rc < 0)
		return err_prefix(e, "reference model %s", r->dir);
	at = 0;
	for (uint32_t i = a; i < b; i++) {
		const struct traj *t = &g->trajs[i];
		if (t->n_response)
			memcpy(out[i], r->lp + at + t->n_prompt, t->n_response * sizeof(float));
		at += (int)(t->n_prompt + t->n_response);
	}
	r->tokens += (uint64_t)T;
	return 0;
}

int reflp_group(struct reflp *r, struct group *g, struct err *e)
{
	float **out = calloc(g->n + 1, sizeof *out);
	int rc = out ? 0 : err_set(e, "out of memory");
	for (uint32_t i = 0; i < g->n && rc == 0; i++) {
		if ((rc = check(r, g, &g->trajs[i], e)) < 0)
			break;
		if (!(out[i] = malloc((g->trajs[i].n_response + 1) * sizeof(float))))
			rc = err_set(e, "out of memory");
	}
	/* passes: as many whole sequences as fit in max_tokens, in order */
	for (uint32_t a = 0; a < g->n && rc == 0;) {
		uint32_t b = a;
		uint64_t T = 0;
		while (b < g->n) {
			uint64_t n = (uint64_t)g->trajs[b].n_prompt + g->trajs[b].n_response;
			if (b > a && T + n > (uint64_t)r->max_tokens)
				break;
			T += n;
			b++;
		}
		rc = run_pass(r, g, a, b, out, e);
		a = b;
	}
	for (uint32_t i = 0; i < g->n && out; i++) {
		if (rc == 0) {
			free(g->trajs[i].ref_logprobs);
			g->trajs[i].ref_logprobs = out[i];
		} else {
			free(out[i]);
		}
	}
	free(out);
	return rc;
}
