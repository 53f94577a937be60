/* scored.c: see scored.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/scored.h"

#include "base/buf.h"
#include "data/jsonview.h"

/* An id as JSON (a quoted string or a number), cut to size, for messages and reward requests. */
static void id_text(const struct traj_id *id, char *out, size_t size)
{
	struct buf b = { 0 };
	if (json_print_id(&b, id) < 0 || buf_put_u8(&b, 0) < 0)
		snprintf(out, size, "?");
	else
		snprintf(out, size, "%s", (const char *)b.data);
	buf_free(&b);
}

void scored_seq_text(const struct traj *t, char *out, size_t size)
{
	id_text(&t->sequence_id, out, size);
}

void scored_group_text(const struct group *g, char *out, size_t size)
{
	id_text(&g->group_id, out, size);
}

int scored_same_group(const struct group *a, const struct group *b)
{
	return traj_id_eq(&a->group_id, &b->group_id);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* An integer id mixes itself, a string id its bytes (FNV-1a): 64-bit keys, equal only by a rare accident. */
static uint64_t id_key(const struct traj_id *id)
{
	if (!id->str)
		return mix((uint64_t)id->num);
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *c = (const unsigned char *)id->str; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return mix(h);
}

uint64_t scored_group_key(const struct group *g)
{
	return id_key(&g->group_id);
}

uint64_t scored_seq_key(const struct traj *t)
{
	return id_key(&t->sequence_id);
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
	/* an earlier scoring's rewards may have come without names */
	for (uint32_t k = 0; t->reward_names && k < t->n_rewards; k++)
		free(t->reward_names[k]);
	free(t->reward_names);
	free(t->rewards);
	t->rewards = r;
	t->reward_names = n;
	t->n_rewards = K;
	float *sc = malloc((K ? K : 1) * sizeof *sc);
	if (!sc)
		return -1;
	for (uint32_t k = 0; k < K; k++)
		sc[k] = successes[k] ? 1.0f : 0.0f;
	free(t->successes);
	t->successes = sc;
	t->advantage = advantage;
	t->scored = 1;
	return 0;
}
