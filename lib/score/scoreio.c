/* scoreio.c: see scoreio.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/path.h"
#include "base/tempfile.h"
#include "data/groupset.h"
#include "data/trajhash.h"
#include "score/scored.h"
#include "score/scoreio.h"
#include "score/scorer.h"
#include "spool/spool.h"

int scoreio_read(int fd, const char *name, struct group **out, uint32_t *out_n, uint64_t *copies, struct err *e)
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
	*copies = 0;
	for (uint32_t g = 0; g < n && r == 0; g++)
		*copies += (uint64_t)recordset_drop_copies(&gs[g], NULL, NULL);
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
	int queued = 0;
	if (base) {
		*base = '\0';
		char *rk = strrchr(buf, '/');
		int64_t st;
		int r;
		if (rk && spool_parse_rank(rk + 1, &r) == 0) {
			*rk = '\0';
			char *sp = strrchr(buf, '/');
			if (spool_parse_step(sp ? sp + 1 : buf, &st) == 0)
				*step = st, *rank = r, queued = 1;
		}
		base++;
	} else {
		base = buf;
	}
	if (queued && *base && *base != '.') {   /* a queue's names are unique there already */
		snprintf(name, size, "%s", path + (base - buf));
		return;
	}
	/* Elsewhere a name says little (day1/rollouts.zst, day2/rollouts.zst):
	 * what the input holds tells a re-run from another input. */
	uint64_t h = SCOREIO_HASH_INIT;
	for (uint32_t g = 0; g < n; g++)
		h = scoreio_hash(h, &gs[g]);
	const char *stem = path && *base && *base != '.' ? path + (base - buf) : "stdin";
	int len = (int)strlen(stem);
	if (len > 4 && strcmp(stem + len - 4, ".zst") == 0)
		len -= 4;
	snprintf(name, size, "%.*s-%016" PRIx64 ".zst", len, stem, h);
}

static uint64_t hash_tokens(uint64_t h, const int32_t *tok, uint32_t n)
{
	h = (h ^ n) * 1099511628211ull;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ (uint32_t)tok[i]) * 1099511628211ull;
	return h;
}

uint64_t scoreio_hash(uint64_t h, const struct group *g)
{
	for (uint32_t j = 0; j < g->n; j++) {
		const struct traj *t = &g->trajs[j];
		h = (h ^ scored_group_key(g)) * 1099511628211ull;
		h = (h ^ scored_seq_key(t)) * 1099511628211ull;
		h = hash_tokens(h, t->prompt_tokens, t->n_prompt);
		h = hash_tokens(h, t->response_tokens, t->n_response);
	}
	return h;
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

int scoreio_stream_open(struct scoreio_stream *s, int fd, const char *name, struct err *e)
{
	memset(s, 0, sizeof *s);
	return sfile_reader_open_fd(&s->rd, fd, name, e);
}

/* scoreio_stream_next, or, when wait is 0, 2 as soon as the next record
 * would have to be waited for (what was read is kept for the next call). */
static int stream_next(struct scoreio_stream *s, struct group *g, int wait, struct err *e)
{
	for (;;) {
		struct record rec;
		if (!wait && !s->at_end && !sfile_reader_ready(&s->rd))
			return 2;
		int r = s->at_end ? 0 : sfile_read(&s->rd, &rec, e);
		if (r < 0)
			return -1;
		if (r == 0) {
			s->at_end = 1;
			if (!s->has_next)
				return 0;
			*g = s->next;
			s->has_next = 0;
			s->copies += (uint64_t)recordset_drop_copies(g, NULL, NULL);
			return 1;
		}
		s->records++;
		if (rec.kind != REC_GROUP) {
			record_free(&rec);
			return err_set(e, "%s: record %llu is not a rollout group", s->rd.name,
				       (unsigned long long)s->rd.record_no);
		}
		if (!s->has_next) {
			s->next = rec.group;
			s->has_next = 1;
			continue;
		}
		if (!scored_same_group(&s->next, &rec.group)) {
			*g = s->next;
			s->next = rec.group;
			s->copies += (uint64_t)recordset_drop_copies(g, NULL, NULL);
			return 1;
		}
		struct group two[2] = { s->next, rec.group };
		uint32_t n = 2;
		if (scorer_merge(two, &n, e) < 0) {
			group_free(&rec.group);
			return -1;
		}
		s->next = two[0];
	}
}

int scoreio_stream_next(struct scoreio_stream *s, struct group *g, struct err *e)
{
	return stream_next(s, g, 1, e);
}

int scoreio_stream_ready_next(struct scoreio_stream *s, struct group *g, struct err *e)
{
	return stream_next(s, g, 0, e);
}

void scoreio_stream_close(struct scoreio_stream *s)
{
	if (s->has_next)
		group_free(&s->next);
	sfile_reader_close(&s->rd);
	memset(s, 0, sizeof *s);
}

int scoreio_pub_open(struct scoreio_pub *p, const char *queue, struct err *e)
{
	memset(p, 0, sizeof *p);
	p->queue = queue;
	p->hash = SCOREIO_HASH_INIT;
	p->samples = TRAJHASH_INIT;
	/* named at the end, from what was written */
	if (spool_open(&p->so, queue, 0, 0, "stdin", e) < 0)
		return -1;
	if (sfile_writer_init(&p->w, sink_spool, &p->so, 3, e) < 0) {
		spool_abort(&p->so);
		return -1;
	}
	p->writer_open = 1;
	return 0;
}

int scoreio_pub_group(struct scoreio_pub *p, const struct group *g, int keep, struct err *e)
{
	if (p->groups++ == 0 && g->n && g->trajs[0].policy_version >= 0)
		p->step = g->trajs[0].policy_version;
	p->hash = scoreio_hash(p->hash, g);
	for (uint32_t x = 0; x < g->n; x++)
		p->samples = trajhash_file_add(p->samples, g, x);
	return keep ? sfile_write_group(&p->w, g, e) : 0;
}

const char *scoreio_pub_name(struct scoreio_pub *p)
{
	snprintf(p->name, sizeof p->name, "stdin-%016" PRIx64 ".zst", p->hash);
	return p->name;
}

int scoreio_pub_commit(struct scoreio_pub *p, char *name, size_t size, struct err *e)
{
	snprintf(name, size, "%s", scoreio_pub_name(p));
	int r = sfile_writer_finish(&p->w, e);
	sfile_writer_free(&p->w);
	p->writer_open = 0;
	if (r < 0 || spool_rename(&p->so, p->queue, p->step, 0, name, e) < 0 || spool_finish_write(&p->so, e) < 0) {
		spool_abort(&p->so);
		return -1;
	}
	return spool_commit(&p->so, e);
}

void scoreio_pub_abort(struct scoreio_pub *p)
{
	if (p->writer_open)
		sfile_writer_free(&p->w);
	p->writer_open = 0;
	spool_abort(&p->so);
}

int scoreio_record_path(char *path, size_t size, const char *queue, uint64_t hash, struct err *e)
{
	char name[32];
	snprintf(name, sizeof name, ".scored/%016" PRIx64, hash);
	return path_join(path, size, queue, name, e);
}

int scoreio_known(const char *queue, uint64_t hash, char *file, size_t size, struct err *e)
{
	char path[PATH_MAX];
	if (scoreio_record_path(path, sizeof path, queue, hash, e) < 0)
		return -1;
	struct buf text = { 0 };
	if (buf_read_file(&text, path, e) < 0)
		return e->errnum == ENOENT ? 0 : -1;
	/* one line of a name: anything else was not written here */
	size_t len = text.len;
	int r = 1;
	if (len < 2 || text.data[len - 1] != '\n' || memchr(text.data, '\n', len - 1) || memchr(text.data, '\0', len))
		r = err_set(e, "%s: not a record of a scored file (one line naming it); remove it to score its input "
			    "again", path);
	else if (len > size)
		r = err_set(e, "%s: the name it holds is too long", path);
	else
		memcpy(file, text.data, len - 1), file[len - 1] = '\0';
	buf_free(&text);
	return r;
}

int scoreio_remember(const char *queue, uint64_t hash, const char *file, struct err *e)
{
	char path[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX];
	if (scoreio_record_path(path, sizeof path, queue, hash, e) < 0 ||
	    path_join(dir, sizeof dir, queue, ".scored", e) < 0 || path_join(tmp, sizeof tmp, queue, ".tmp", e) < 0)
		return -1;
	struct buf line = { 0 };
	if (buf_printf(&line, "%s\n", file) < 0)
		return err_set(e, "out of memory");
	int r = fsys_mkdirs(dir, e) < 0 ? -1 : tempfile_write(path, tmp, line.data, line.len, 0, e);
	buf_free(&line);
	return r < 0 ? -1 : 0;   /* 1: a record was there already, and stays */
}

/* QUEUE/.scored/HASH.lock into path */
static int lock_path(char *path, size_t size, const char *queue, uint64_t hash, struct err *e)
{
	char name[40];
	snprintf(name, sizeof name, ".scored/%016" PRIx64 ".lock", hash);
	return path_join(path, size, queue, name, e);
}

int scoreio_judging(const char *queue, uint64_t hash, int wait, struct err *e)
{
	char path[PATH_MAX], dir[PATH_MAX];
	int fd;
	if (lock_path(path, sizeof path, queue, hash, e) < 0 || path_join(dir, sizeof dir, queue, ".scored", e) < 0 ||
	    fsys_mkdirs(dir, e) < 0)
		return -1;
	int r = fsys_try_lock(path, 1, &fd, e);
	if (r == 1 && !wait)
		return -2;   /* another scorer judges a copy */
	/* -1: the wait says what failed, or goes on where the file system has
	 * no locks (its 1, fd open) */
	if (r != 0)
		r = fsys_lock_wait(path, &fd, e);
	return r < 0 ? -1 : fd;
}

void scoreio_judged(const char *queue, uint64_t hash, int fd, int recorded)
{
	char path[PATH_MAX];
	struct err e;
	if (recorded && lock_path(path, sizeof path, queue, hash, &e) == 0)
		unlink(path);   /* while held; a stale file only costs a name */
	close(fd);
}

/* The key of a group: its id with the policy version of its first
 * trajectory, as a prompts walk gives a prompt the same group id in every
 * pass, and the groups of other rounds are other groups. Never 0. */
static uint64_t seen_key(const struct group *g)
{
	uint64_t k = scored_group_key(g);
	if (g->n)
		k ^= (uint64_t)g->trajs[0].policy_version * 0x9e3779b97f4a7c15ull;
	return k | 1;
}

static size_t seen_window(const struct scoreio_seen *s)
{
	return s->window ? s->window : SCOREIO_SEEN_WINDOW;
}

/* Where key k sits in the index, or the empty entry that ends its probe. */
static size_t seen_find(const struct scoreio_seen *s, uint64_t k)
{
	size_t mask = s->cap - 1, j = (size_t)(k >> 1) & mask;
	while (s->slot[j] && s->ring[s->slot[j] - 1] != k)
		j = (j + 1) & mask;
	return j;
}

/* Empty index entry j, moving later entries of its probe run back into
 * the gap (linear probing's deletion, which needs no tombstones). */
static void seen_unlink(struct scoreio_seen *s, size_t j)
{
	size_t mask = s->cap - 1;
	for (size_t i = (j + 1) & mask; s->slot[i]; i = (i + 1) & mask) {
		size_t home = (size_t)(s->ring[s->slot[i] - 1] >> 1) & mask;
		/* entry i may move to j when its home is not in (j, i], cyclically */
		if (((i - home) & mask) >= ((i - j) & mask)) {
			s->slot[j] = s->slot[i];
			j = i;
		}
	}
	s->slot[j] = 0;
	s->n--;
}

/* Room for one more key: the ring grows (doubling, up to the window)
 * until it wraps, the index so that it stays at most half full. */
static int seen_reserve(struct scoreio_seen *s)
{
	size_t w = seen_window(s);
	if (s->added < w && s->added == s->ring_cap) {
		size_t rc = s->ring_cap ? s->ring_cap * 2 : 256;
		uint64_t *r = realloc(s->ring, (rc < w ? rc : w) * sizeof *r);
		if (!r)
			return -1;
		s->ring = r;
		s->ring_cap = rc < w ? rc : w;
	}
	if ((s->n + 1) * 2 <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 512;
	uint32_t *t = calloc(cap, sizeof *t), *old = s->slot;
	if (!t)
		return -1;
	size_t oldcap = s->cap;
	s->slot = t;
	s->cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			s->slot[seen_find(s, s->ring[old[i] - 1])] = old[i];
	free(old);
	return 0;
}

int scoreio_seen_add(struct scoreio_seen *s, const struct group *g)
{
	uint64_t k = seen_key(g);
	size_t w = seen_window(s), at = (size_t)(s->added % w), j;
	int seen = s->cap && s->slot[seen_find(s, k)] != 0;
	/* the oldest of the window makes room, unless it came again since */
	if (s->added >= w && s->slot[j = seen_find(s, s->ring[at])] == at + 1)
		seen_unlink(s, j);
	if (seen_reserve(s) < 0)
		return -1;
	s->ring[at] = k;
	if (!s->slot[j = seen_find(s, k)])
		s->n++;
	s->slot[j] = (uint32_t)at + 1;
	s->added++;
	return seen;
}

void scoreio_seen_free(struct scoreio_seen *s)
{
	free(s->ring);
	free(s->slot);
	memset(s, 0, sizeof *s);
}
