/* traj.c: see traj.h. */
#include "data/traj.h"

#include <stdlib.h>
#include <string.h>

void traj_init(struct traj *t)
{
	memset(t, 0, sizeof *t);
	t->temperature = 1.0f;
	t->sequence_id = -1;
	t->group_id = -1;
	t->policy_version = -1;
}

void traj_free(struct traj *t)
{
	free(t->prompt_tokens);
	free(t->response_tokens);
	free(t->logprobs);
	free(t->response_mask);
	free(t->answer);
	free(t->run);
	free(t->ref_logprobs);
	free(t->rewards);
	for (uint32_t i = 0; i < t->n_rewards && t->reward_names; i++)
		free(t->reward_names[i]);
	free(t->reward_names);
	memset(t, 0, sizeof *t);
}

void group_free(struct group *g)
{
	for (uint32_t i = 0; i < g->n; i++)
		traj_free(&g->trajs[i]);
	free(g->trajs);
	memset(g, 0, sizeof *g);
}

void mb_free(struct microbatch *mb)
{
	free(mb->input_ids);
	free(mb->position_ids);
	free(mb->loss_mask);
	free(mb->advantages);
	free(mb->inference_logprobs);
	free(mb->ref_logprobs);
	free(mb->temperatures);
	free(mb->seq_lens);
	free(mb->sequence_ids);
	free(mb->group_ids);
	free(mb->run);
	memset(mb, 0, sizeof *mb);
}

static void *dup_bytes(const void *p, size_t n, int *fail)
{
	if (!p)
		return NULL;
	void *q = malloc(n ? n : 1);
	if (!q) {
		*fail = 1;
		return NULL;
	}
	memcpy(q, p, n);
	return q;
}

static char *dup_str(const char *s, int *fail)
{
	return s ? dup_bytes(s, strlen(s) + 1, fail) : NULL;
}

int traj_copy(struct traj *dst, const struct traj *src)
{
	int fail = 0;
	*dst = *src;
	dst->prompt_tokens = dup_bytes(src->prompt_tokens, src->n_prompt * sizeof(int32_t), &fail);
	dst->response_tokens = dup_bytes(src->response_tokens, src->n_response * sizeof(int32_t), &fail);
	dst->logprobs = dup_bytes(src->logprobs, src->n_response * sizeof(float), &fail);
	dst->response_mask = dup_bytes(src->response_mask, src->n_response, &fail);
	dst->ref_logprobs = dup_bytes(src->ref_logprobs, src->n_response * sizeof(float), &fail);
	dst->answer = dup_str(src->answer, &fail);
	dst->run = dup_str(src->run, &fail);
	dst->rewards = dup_bytes(src->rewards, src->n_rewards * sizeof(float), &fail);
	dst->reward_names = NULL;
	if (src->reward_names) {
		dst->reward_names = calloc(src->n_rewards ? src->n_rewards : 1, sizeof(char *));
		if (!dst->reward_names)
			fail = 1;
		for (uint32_t i = 0; dst->reward_names && i < src->n_rewards; i++)
			dst->reward_names[i] = dup_str(src->reward_names[i], &fail);
	}
	if (fail) {
		traj_free(dst);
		return -1;
	}
	return 0;
}
