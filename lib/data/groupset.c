/* groupset.c: see groupset.h. */
#include "data/groupset.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "data/jsonview.h"

static uint64_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static struct groupset_ent *slot(struct groupset_ent *v, size_t cap, const char *id)
{
	size_t i = (size_t)hash(id) & (cap - 1);
	while (v[i].id && strcmp(v[i].id, id) != 0)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static int grow(struct groupset *s, struct err *e)
{
	size_t cap = s->cap ? 2 * s->cap : 1024;
	struct groupset_ent *v = calloc(cap, sizeof *v);
	if (!v)
		return err_set(e, "out of memory for %zu group ids", s->n);
	for (size_t i = 0; i < s->cap; i++)
		if (s->v[i].id)
			*slot(v, cap, s->v[i].id) = s->v[i];
	free(s->v);
	s->v = v;
	s->cap = cap;
	return 0;
}

int groupset_add(struct groupset *s, const char *id, uint32_t members, uint64_t input, struct err *e)
{
	/* at most half full, so probes stay short */
	if (2 * (s->n + 1) > s->cap && grow(s, e) < 0)
		return -1;
	struct groupset_ent *x = slot(s->v, s->cap, id);
	if (!x->id) {
		if (!(x->id = strdup(id)))
			return err_set(e, "out of memory");
		s->n++;
		x->input = input;
		x->inputs = 1;
	} else if (x->input != input) {
		x->input = input;
		if (++x->inputs == 2)
			s->split_ids++;
	}
	if (members == 1) {
		x->singles++;
		s->single_records++;
	}
	return 0;
}

int groupset_add_id(struct groupset *s, const struct traj_id *id, uint32_t members, uint64_t input,
		    struct err *e)
{
	char num[24];
	if (!id->str)
		return groupset_add(s, traj_id_text(id, num), members, input, e);
	struct buf key = { 0 };
	int r = json_print_string(&key, id->str) < 0 || buf_put_u8(&key, 0) < 0 ?
			err_set(e, "out of memory") :
			groupset_add(s, (const char *)key.data, members, input, e);
	buf_free(&key);
	return r;
}

/* integers by value, before other text, which sorts bytewise */
static int id_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	char *ea, *eb;
	long long x = strtoll(a, &ea, 10), y = strtoll(b, &eb, 10);
	int na = *a && !*ea, nb = *b && !*eb;
	if (na && nb)
		return (x > y) - (x < y);
	if (na != nb)
		return nb - na;
	return strcmp(a, b);
}

int groupset_ids(const struct groupset *s, enum groupset_which which, const char ***out, size_t *n,
		 struct err *e)
{
	size_t k = 0;
	*out = malloc((s->n ? s->n : 1) * sizeof **out);
	if (!*out)
		return err_set(e, "out of memory");
	for (size_t i = 0; i < s->cap; i++) {
		const struct groupset_ent *x = &s->v[i];
		if (x->id && (which == GROUPSET_SINGLE ? x->singles > 0 : x->inputs > 1))
			(*out)[k++] = x->id;
	}
	qsort(*out, k, sizeof **out, id_cmp);
	*n = k;
	return 0;
}

void groupset_free(struct groupset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->v[i].id);
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* ---- exact repeats ---- */

static uint64_t hash_word(uint64_t h, uint64_t w)
{
	return splitmix64_mix(h + w);
}

/* n bytes at p, 8 at a time, after their count, so that no two arrays of
 * other lengths read alike */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	h = hash_word(h, n);
	for (; n >= 8; n -= 8, b += 8) {
		uint64_t w;
		memcpy(&w, b, 8);
		h = hash_word(h, w);
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, b, n);
		h = hash_word(h, w);
	}
	return h;
}

static uint64_t hash_id(uint64_t h, const struct traj_id *id)
{
	if (id->str)
		return hash_bytes(hash_word(h, 1), id->str, strlen(id->str));
	return hash_word(hash_word(h, 0), (uint64_t)id->num);
}

static uint64_t hash_member(uint64_t h, const struct traj *t)
{
	h = hash_id(h, &t->sequence_id);
	h = hash_bytes(h, t->prompt_tokens, (size_t)t->n_prompt * sizeof *t->prompt_tokens);
	h = hash_bytes(h, t->response_tokens, (size_t)t->n_response * sizeof *t->response_tokens);
	h = hash_word(h, t->logprobs != NULL);
	if (t->logprobs)
		h = hash_bytes(h, t->logprobs, (size_t)t->n_response * sizeof *t->logprobs);
	return h;
}

void recordset_hash(const struct traj_id *gid, const struct traj *t, uint32_t n, uint64_t *id,
		    uint64_t *members)
{
	*id = hash_id(0x243f6a8885a308d3ull, gid);   /* two seeds: pi's digits */
	uint64_t h = hash_word(0x13198a2e03707344ull, n);
	for (uint32_t i = 0; i < n; i++)
		h = hash_member(h, &t[i]);
	*members = h;
}

static size_t *rec_slot(const struct recordset *s, uint64_t id, uint64_t members)
{
	size_t j = (size_t)splitmix64_mix(id ^ members) & (s->cap_ix - 1);
	while (s->ix[j] && (s->v[s->ix[j] - 1].id != id || s->v[s->ix[j] - 1].members != members))
		j = (j + 1) & (s->cap_ix - 1);
	return &s->ix[j];
}

static void rec_reindex(struct recordset *s)
{
	memset(s->ix, 0, s->cap_ix * sizeof *s->ix);
	for (size_t i = 0; i < s->n; i++)
		*rec_slot(s, s->v[i].id, s->v[i].members) = i + 1;
}

static int rec_grow_index(struct recordset *s)
{
	size_t cap = s->cap_ix ? 2 * s->cap_ix : 1024;
	size_t *ix = calloc(cap, sizeof *ix);
	if (!ix)
		return -1;
	free(s->ix);
	s->ix = ix;
	s->cap_ix = cap;
	rec_reindex(s);
	return 0;
}

int recordset_take(struct recordset *s, uint64_t id, uint64_t members, struct recordset_at at,
		   struct recordset_at *first, struct err *e)
{
	if (2 * (s->n + 1) > s->cap_ix && rec_grow_index(s) < 0)
		return err_set(e, "out of memory for %zu records", s->n);
	size_t *x = rec_slot(s, id, members);
	if (*x) {
		*first = s->v[*x - 1].at;
		return 1;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 512;
		void *v = realloc(s->v, cap * sizeof *s->v);
		if (!v)
			return err_set(e, "out of memory for %zu records", s->n);
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n] = (struct recordset_rec){ id, members, at };
	*x = ++s->n;
	return 0;
}

void recordset_keep(struct recordset *s)
{
	s->kept = s->n;
}

void recordset_forget(struct recordset *s)
{
	if (s->n == s->kept)
		return;
	s->n = s->kept;
	rec_reindex(s);   /* in place: a failed input never costs an allocation */
}

void recordset_free(struct recordset *s)
{
	free(s->v);
	free(s->ix);
	memset(s, 0, sizeof *s);
}

static int same_bytes(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

int recordset_same_member(const struct traj *a, const struct traj *b)
{
	return traj_id_eq(&a->sequence_id, &b->sequence_id) && a->n_prompt == b->n_prompt &&
	       a->n_response == b->n_response && !a->logprobs == !b->logprobs &&
	       same_bytes(a->prompt_tokens, b->prompt_tokens, (size_t)a->n_prompt * sizeof *a->prompt_tokens) &&
	       same_bytes(a->response_tokens, b->response_tokens, (size_t)a->n_response * sizeof *a->response_tokens) &&
	       (!a->logprobs || same_bytes(a->logprobs, b->logprobs, (size_t)a->n_response * sizeof *a->logprobs));
}

/* Each member is compared with the members kept, sequence_id first: a
 * group's few hundred members cost nothing beside reading them. */
long recordset_drop_copies(struct group *g, int (*dropped)(void *ctx, const struct traj *copy), void *ctx)
{
	uint32_t kept = 0, i = 0;
	long n = 0;
	int r = 0;
	for (; i < g->n && r == 0; i++) {
		uint32_t j = 0;
		while (j < kept && !recordset_same_member(&g->trajs[j], &g->trajs[i]))
			j++;
		if (j == kept) {
			g->trajs[kept++] = g->trajs[i];   /* a move: the slots from kept on are left behind */
			continue;
		}
		r = dropped ? dropped(ctx, &g->trajs[i]) : 0;
		traj_free(&g->trajs[i]);
		n++;
	}
	for (; i < g->n; i++)
		g->trajs[kept++] = g->trajs[i];
	g->n = kept;
	return r < 0 ? -1 : n;
}
