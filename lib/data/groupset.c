/* groupset.c: see groupset.h. */
#include "data/groupset.h"

#include <stdlib.h>
#include <string.h>

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
