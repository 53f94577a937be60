/* scoreio.c: see scoreio.h. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/scored.h"
#include "score/scoreio.h"
#include "score/scorer.h"
#include "spool/spool.h"

int scoreio_read(int fd, const char *name, struct group **out, uint32_t *out_n, struct err *e)
{
	struct sfile_reader rd;
	struct group *gs = NULL;
	uint32_t n = 0, cap = 0;
	struct record rec;
	int r;
	if (sfile_reader_open_fd(&rd, fd, name, e) < 0)
		return -1;
	while ((r = sfile_read(&rd, &rec, e)) > 0) {
		if (rec.kind != REC_GROUP) {
			record_free(&rec);
			r = err_set(e, "%s: record %llu is not a rollout group", name, (unsigned long long)rd.record_no);
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct group *t = realloc(gs, cap * sizeof *t);
			if (!t) {
				record_free(&rec);
				r = err_set(e, "out of memory");
				break;
			}
			gs = t;
		}
		gs[n++] = rec.group;
	}
	sfile_reader_close(&rd);
	if (r == 0)
		r = scorer_merge(gs, &n, e);
	if (r < 0) {
		for (uint32_t g = 0; g < n; g++)
			group_free(&gs[g]);
		free(gs);
		return -1;
	}
	*out = gs;
	*out_n = n;
	return 0;
}

void scoreio_place(const char *path, const struct group *gs, uint32_t n, int64_t *step, int *rank, char *name,
		   size_t size)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", path ? path : "");
	char *base = strrchr(buf, '/');
	*step = n && gs[0].n && gs[0].trajs[0].policy_version >= 0 ? gs[0].trajs[0].policy_version : 0;
	*rank = 0;
	if (base) {
		*base = '\0';
		char *rk = strrchr(buf, '/');
		int64_t st;
		int r;
		if (rk && spool_parse_rank(rk + 1, &r) == 0) {
			*rk = '\0';
			char *sp = strrchr(buf, '/');
			if (spool_parse_step(sp ? sp + 1 : buf, &st) == 0)
				*step = st, *rank = r;
		}
		base++;
	} else {
		base = buf;
	}
	if (path && *base && *base != '.') {
		snprintf(name, size, "%s", path + (base - buf));
		return;
	}
	uint64_t h = 1469598103934665603ull;   /* FNV-1a over the ids and lengths */
	for (uint32_t g = 0; g < n; g++)
		for (uint32_t j = 0; j < gs[g].n; j++) {
			h = (h ^ scored_group_key(&gs[g])) * 1099511628211ull;
			h = (h ^ scored_seq_key(&gs[g].trajs[j])) * 1099511628211ull;
			h = (h ^ gs[g].trajs[j].n_response) * 1099511628211ull;
		}
	snprintf(name, size, "stdin-%016" PRIx64 ".zst", h);
}

int scoreio_write(struct sfile_writer *w, const struct group *gs, uint32_t n, const uint8_t *keep, struct err *e)
{
	for (uint32_t g = 0; g < n; g++)
		if (keep[g] && sfile_write_group(w, &gs[g], e) < 0)
			return -1;
	return 0;
}

static int sink_spool(void *ctx, const void *p, size_t n, struct err *e)
{
	return spool_write(ctx, p, n, e);
}

int scoreio_publish(const char *queue, int64_t step, int rank, const char *name, const struct group *gs,
		    uint32_t n, const uint8_t *keep, struct err *e)
{
	struct spool_out so;
	struct sfile_writer w;
	if (spool_open(&so, queue, step, rank, name, e) < 0)
		return -1;
	if (sfile_writer_init(&w, sink_spool, &so, 3, e) < 0) {
		spool_abort(&so);
		return -1;
	}
	int r = scoreio_write(&w, gs, n, keep, e);
	r = r < 0 ? r : sfile_writer_finish(&w, e);
	sfile_writer_free(&w);
	r = r < 0 ? r : spool_finish_write(&so, e);
	if (r < 0) {
		spool_abort(&so);
		return -1;
	}
	return spool_commit(&so, e);
}

static int seen_grow(struct scoreio_seen *s)
{
	size_t cap = s->cap ? s->cap * 2 : 256;
	uint64_t *t = calloc(cap, sizeof *t);
	if (!t)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->key[i])
			for (size_t j = s->key[i] & (cap - 1);; j = (j + 1) & (cap - 1))
				if (!t[j]) {
					t[j] = s->key[i];
					break;
				}
	free(s->key);
	s->key = t;
	s->cap = cap;
	return 0;
}

int scoreio_seen_add(struct scoreio_seen *s, const struct group *g)
{
	if ((s->n + 1) * 2 > s->cap && seen_grow(s) < 0)
		return -1;
	uint64_t k = scored_group_key(g) | 1;   /* never 0, the empty mark */
	size_t j = k & (s->cap - 1);
	while (s->key[j] && s->key[j] != k)
		j = (j + 1) & (s->cap - 1);
	if (s->key[j])
		return 1;
	s->key[j] = k;
	s->n++;
	return 0;
}

void scoreio_seen_free(struct scoreio_seen *s)
{
	free(s->key);
	memset(s, 0, sizeof *s);
}
