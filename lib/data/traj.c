/* traj.c: see traj.h. */
#include "data/traj.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct traj_id traj_id_none(void)
{
	return (struct traj_id){ -1, NULL };
}

struct traj_id traj_id_num(int64_t v)
{
	return (struct traj_id){ v, NULL };
}

int traj_id_set_str(struct traj_id *id, const char *s, size_t n)
{
	if (memchr(s, 0, n))
		return -1;
	char *c = malloc(n + 1);
	if (!c)
		return -1;
	memcpy(c, s, n);
	c[n] = '\0';
	free(id->str);
	id->str = c;
	id->num = -1;
	return 0;
}

int traj_id_copy(struct traj_id *dst, const struct traj_id *src)
{
	*dst = *src;
	if (src->str && !(dst->str = strdup(src->str))) {
		*dst = traj_id_none();
		return -1;
	}
	return 0;
}

void traj_id_free(struct traj_id *id)
{
	free(id->str);
	*id = traj_id_none();
}

int traj_id_eq(const struct traj_id *a, const struct traj_id *b)
{
	if (a->str || b->str)
		return a->str && b->str && strcmp(a->str, b->str) == 0;
	return a->num == b->num;
}

int traj_id_given(const struct traj_id *id)
{
	return id->str != NULL || id->num >= 0;
}

const char *traj_id_text(const struct traj_id *id, char buf[24])
{
	if (id->str)
		return id->str;
	snprintf(buf, 24, "%" PRId64, id->num);
	return buf;
}

void traj_init(struct traj *t)
{
	memset(t, 0, sizeof *t);
	t->temperature = 1.0f;
	t->sequence_id = traj_id_none();
	t->group_id = traj_id_none();
	t->policy_version = -1;
}

int traj_set_finish(struct traj *t, const char *s)
{
	char *c = NULL;
	if (s && *s && !(c = strdup(s)))
		return -1;
	free(t->finish_reason);
	t->finish_reason = c;
	return 0;
}

int traj_truncated(const struct traj *t)
{
	return t->finish_reason && strcmp(t->finish_reason, "length") == 0;
}

float traj_reward(const struct traj *t)
{
	float r = 0;
	for (uint32_t i = 0; t->rewards && i < t->n_rewards; i++)
		r += t->rewards[i];
	return r;
}

void traj_free(struct traj *t)
{
	free(t->prompt_tokens);
	free(t->response_tokens);
	free(t->logprobs);
	free(t->response_mask);
	free(t->answer);
	free(t->run);
	free(t->finish_reason);
	free(t->successes);
	traj_id_free(&t->sequence_id);
	traj_id_free(&t->group_id);
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
	traj_id_free(&g->group_id);
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
	for (uint32_t i = 0; i < mb->n_seqs && mb->sequence_ids; i++)
		traj_id_free(&mb->sequence_ids[i]);
	for (uint32_t i = 0; i < mb->n_seqs && mb->group_ids; i++)
		traj_id_free(&mb->group_ids[i]);
	for (uint32_t i = 0; i < mb->n_seqs && mb->finish_reasons; i++)
		free(mb->finish_reasons[i]);
	free(mb->sequence_ids);
	free(mb->group_ids);
	free(mb->prompt_lens);
	free(mb->policy_versions);
	free(mb->rewards);
	free(mb->finish_reasons);
	free(mb->logprobs_missing);
	free(mb->run);
	memset(mb, 0, sizeof *mb);
}
