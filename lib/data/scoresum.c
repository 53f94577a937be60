/* scoresum.c: rewards, solve rates, pass@k and finish reasons of rollout groups (see scoresum.h). */
#include "data/scoresum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

double pass_at_k(uint32_t n, uint32_t c, uint32_t k)
{
	if (n - c < k)   /* every draw of k holds a solved one */
		return 1.0;
	/* C(n-c, k) / C(n, k) = prod over i of the n-c+1..n of (1 - k/i): no
	 * binomial that overflows a double at n in the thousands */
	double none = 1.0;
	for (uint32_t i = n - c + 1; i <= n; i++)
		none *= 1.0 - (double)k / i;
	return 1.0 - none;
}

/* The reward function named name, added when new; NULL out of memory. */
static struct scoresum_fn *fn_of(struct scoresum *s, const char *name)
{
	for (size_t i = 0; i < s->nfn; i++)
		if (strcmp(s->fn[i].name, name) == 0)
			return &s->fn[i];
	char *copy = strdup(name);
	if (!copy || buf_grow_array((void **)&s->fn, s->nfn, sizeof *s->fn) < 0) {
		free(copy);
		return NULL;
	}
	struct scoresum_fn *f = &s->fn[s->nfn++];
	memset(f, 0, sizeof *f);
	f->name = copy;
	return f;
}

static void count_finish(struct scoresum *s, const struct traj *t)
{
	if (!t->finish_reason)
		s->no_finish++;
	else if (strcmp(t->finish_reason, "stop") == 0)
		s->stop++;
	else if (traj_truncated(t))
		s->length++;
	else
		s->other_finish++;
}

/* Reward function k of t's name (reward_K where t has none) into name. */
static const char *reward_name(const struct traj *t, uint32_t k, char name[32])
{
	if (t->reward_names)
		return t->reward_names[k];
	snprintf(name, 32, "reward_%u", k);
	return name;
}

/* Append a group's n flagged and c solved members to f's groups. */
static int add_group(struct scoresum_fn *f, uint32_t n, uint32_t c)
{
	if (buf_grow_array((void **)&f->group_n, f->groups, sizeof *f->group_n) < 0 ||
	    buf_grow_array((void **)&f->group_c, f->groups, sizeof *f->group_c) < 0)
		return -1;
	f->group_n[f->groups] = n;
	f->group_c[f->groups++] = c;
	return 0;
}

int scoresum_add(struct scoresum *s, const struct group *g, struct err *e)
{
	char name[32];
	/* every reward function of the group first, so that its counts have a place */
	for (uint32_t i = 0; i < g->n; i++)
		for (uint32_t k = 0; g->trajs[i].scored && k < g->trajs[i].n_rewards; k++)
			if (!fn_of(s, reward_name(&g->trajs[i], k, name)))
				return err_set(e, "out of memory");
	uint32_t *n = calloc(s->nfn ? s->nfn : 1, sizeof *n), *c = calloc(s->nfn ? s->nfn : 1, sizeof *c);
	if (!n || !c) {
		free(n), free(c);
		return err_set(e, "out of memory");
	}
	int all_scored = g->n >= 2, equal = 1;
	float first = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		const struct traj *t = &g->trajs[i];
		s->seqs++;
		s->resp_tokens += t->n_response;
		if (t->n_response > s->resp_max)
			s->resp_max = t->n_response;
		count_finish(s, t);
		if (!t->scored) {
			all_scored = 0;
			continue;
		}
		s->scored++;
		float r = traj_reward(t);
		s->reward_sum += r;
		equal &= i == 0 || r == first;
		first = i == 0 ? r : first;
		for (uint32_t k = 0; k < t->n_rewards; k++) {
			struct scoresum_fn *f = fn_of(s, reward_name(t, k, name));   /* found: added above */
			double v = t->rewards[k];
			f->seqs++;
			f->sum += v;
			f->sumsq += v * v;
			if (t->successes) {
				int solved = t->successes[k] >= 0.5f;
				f->flagged++;
				f->solved += (uint64_t)solved;
				n[f - s->fn]++;
				c[f - s->fn] += (uint32_t)solved;
			}
		}
	}
	int r = 0;
	for (size_t k = 0; k < s->nfn && r == 0; k++)
		if (n[k]) {
			r = add_group(&s->fn[k], n[k], c[k]);
			if (n[k] > s->largest)
				s->largest = n[k];
		}
	free(n);
	free(c);
	if (r < 0)
		return err_set(e, "out of memory");
	if (all_scored) {
		s->scored_groups++;
		s->equal_groups += (uint64_t)equal;
	}
	return 0;
}

void scoresum_free(struct scoresum *s)
{
	for (size_t i = 0; i < s->nfn; i++) {
		free(s->fn[i].name);
		free(s->fn[i].group_n);
		free(s->fn[i].group_c);
	}
	free(s->fn);
	memset(s, 0, sizeof *s);
}

int scoresum_ks(const struct scoresum *s, uint32_t *ks)
{
	int m = 0;
	if (s->largest == 0)
		return 0;
	for (uint64_t k = 1; k <= s->largest; k *= 2)
		ks[m++] = (uint32_t)k;
	if (ks[m - 1] != s->largest)
		ks[m++] = s->largest;
	return m;
}

double scoresum_pass_at(const struct scoresum_fn *fn, uint32_t k, size_t *groups)
{
	double sum = 0;
	*groups = 0;
	for (size_t i = 0; i < fn->groups; i++)
		if (fn->group_n[i] >= k) {
			sum += pass_at_k(fn->group_n[i], fn->group_c[i], k);
			++*groups;
		}
	return *groups ? sum / (double)*groups : NAN;
}
