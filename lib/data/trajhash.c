/*
 * trajhash.c: see trajhash.h. What is hashed, and in what order, is part
 * of the spool format: a change makes every recorded hash a stranger.
 */
#include "data/trajhash.h"

#include <string.h>

uint64_t trajhash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

/* with_advantage 0: the sample alone, as the sampler made it */
static uint64_t sample_hash(uint64_t h, const struct traj *t, int with_advantage)
{
	h = trajhash_bytes(h, &t->n_prompt, sizeof t->n_prompt);
	h = trajhash_bytes(h, &t->n_response, sizeof t->n_response);
	h = trajhash_bytes(h, t->prompt_tokens, t->n_prompt * sizeof *t->prompt_tokens);
	h = trajhash_bytes(h, t->response_tokens, t->n_response * sizeof *t->response_tokens);
	if (t->logprobs)
		h = trajhash_bytes(h, t->logprobs, t->n_response * sizeof *t->logprobs);
	if (with_advantage)
		h = trajhash_bytes(h, &t->advantage, sizeof t->advantage);
	h = trajhash_bytes(h, &t->policy_version, sizeof t->policy_version);
	h = trajhash_bytes(h, &t->temperature, sizeof t->temperature);
	return t->run ? trajhash_bytes(h, t->run, strlen(t->run) + 1) : h;
}

static uint64_t id_hash(uint64_t h, const struct traj_id *id)
{
	h = trajhash_bytes(h, &id->num, sizeof id->num);
	return id->str ? trajhash_bytes(h, id->str, strlen(id->str) + 1) : trajhash_bytes(h, "", 0);
}

uint64_t trajhash_job_add(uint64_t h, const struct group *g, uint32_t x)
{
	return sample_hash(x ? h : trajhash_bytes(h, &g->n, sizeof g->n), &g->trajs[x], 1);
}

uint64_t trajhash_file_add(uint64_t h, const struct group *g, uint32_t x)
{
	if (x == 0)
		h = trajhash_bytes(id_hash(h, &g->group_id), &g->n, sizeof g->n);
	h = sample_hash(h, &g->trajs[x], 0);
	return id_hash(h, &g->trajs[x].sequence_id);
}

uint64_t trajhash_file(const struct group *gs, uint32_t n)
{
	uint64_t h = TRAJHASH_INIT;
	for (uint32_t g = 0; g < n; g++)
		for (uint32_t x = 0; x < gs[g].n; x++)
			h = trajhash_file_add(h, &gs[g], x);
	return h;
}
