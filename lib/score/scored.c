/* scored.c: see scored.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/scored.h"

void scored_seq_text(const struct traj *t, char *out, size_t size)
{
	snprintf(out, size, "%" PRId64, t->sequence_id);
}

void scored_group_text(const struct group *g, char *out, size_t size)
{
	snprintf(out, size, "%" PRId64, g->group_id);
}

int scored_same_group(const struct group *a, const struct group *b)
{
	return a->group_id == b->group_id;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

uint64_t scored_group_key(const struct group *g)
{
	return mix((uint64_t)g->group_id);
}

uint64_t scored_seq_key(const struct traj *t)
{
	return mix((uint64_t)t->sequence_id);
}

int scored_set(struct traj *t, uint32_t K, const float *rewards, const char *const *names,
	       const uint8_t *successes, float advantage)
{
	float *r = malloc((K ? K : 1) * sizeof *r);
	char **n = calloc(K ? K : 1, sizeof *n);
	int bad = !r || !n;
	for (uint32_t k = 0; k < K && !bad; k++)
		bad = !(n[k] = strdup(names[k]));
	if (bad) {
		for (uint32_t k = 0; n && k < K; k++)
			free(n[k]);
		free(n);
		free(r);
		return -1;
	}
	memcpy(r, rewards, K * sizeof *r);
	for (uint32_t k = 0; k < t->n_rewards; k++)
		free(t->reward_names[k]);
	free(t->reward_names);
	free(t->rewards);
	t->rewards = r;
	t->reward_names = n;
	t->n_rewards = K;
	t->success = K && successes[0] ? 1.0f : 0.0f;
	t->advantage = advantage;
	t->scored = 1;
	return 0;
}
