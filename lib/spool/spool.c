/* spool.c: see spool.h. */
#include "spool/spool.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/path.h"
#include "base/tempfile.h"

int spool_step_dir(char *out, size_t size, const char *queue, int64_t step, int rank, struct err *e)
{
	char name[64];
	snprintf(name, sizeof name, "step_%lld/rank_%d", (long long)step, rank);
	return path_join(out, size, queue, name, e);
}

void spool_unique_name(char *out, size_t size)
{
	tempfile_unique_name(out, size);
}

/* QUEUE/step_N/rank_X/NAME into fin (PATH_MAX bytes), name checked: 0 or -1. */
static int final_path(char *fin, const char *queue, int64_t step, int rank, const char *name, struct err *e)
{
	char dir[PATH_MAX];
	if (strchr(name, '/') || name[0] == '.' || name[0] == '\0' || strlen(name) > NAME_MAX)
		return err_set(e, "%s: not a valid spool file name", name);
	return spool_step_dir(dir, sizeof dir, queue, step, rank, e) < 0 ? -1 : path_join(fin, PATH_MAX, dir, name, e);
}

static void set_place(struct spool_out *o, const char *queue, int64_t step, int rank, const char *name)
{
	o->queue = queue;
	o->step = step;
	o->rank = rank;
	snprintf(o->name, sizeof o->name, "%s", name);
}

const char *spool_out_path(const struct spool_out *o, char *out, size_t size)
{
	char dir[PATH_MAX];
	if (spool_step_dir(dir, sizeof dir, o->queue, o->step, o->rank, NULL) < 0)
		snprintf(dir, sizeof dir, "%s", o->queue);
	snprintf(out, size, "%s/%s", dir, o->name);
	return out;
}

int spool_open(struct spool_out *o, const char *queue, int64_t step, int rank,
	       const char *name, struct err *e)
{
	char tmpdir[PATH_MAX], fin[PATH_MAX];
	memset(o, 0, sizeof *o);
	if (final_path(fin, queue, step, rank, name, e) < 0)
		return -1;
	if (snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue) >= (int)sizeof tmpdir)
		return err_set(e, "%s: path too long", queue);
	set_place(o, queue, step, rank, name);
	o->tmp = tempfile_create(fin, tmpdir, e);
	return o->tmp ? 0 : -1;
}

int spool_rename(struct spool_out *o, const char *queue, int64_t step, int rank, const char *name,
		 struct err *e)
{
	char fin[PATH_MAX];
	if (!o->tmp)
		return err_set(e, "%s: renamed after commit or abort", o->name);
	if (final_path(fin, queue, step, rank, name, e) < 0 || tempfile_retarget(o->tmp, fin, e) < 0)
		return -1;
	set_place(o, queue, step, rank, name);
	return 0;
}

int spool_write(struct spool_out *o, const void *p, size_t n, struct err *e)
{
	if (!o->tmp)
		return err_set(e, "%s: written after commit or abort", o->name);
	return fsys_write_all(tempfile_fd(o->tmp), p, n, tempfile_path(o->tmp), e);
}

int spool_finish_write(struct spool_out *o, struct err *e)
{
	if (!o->tmp)
		return err_set(e, "%s: finished after commit or abort", o->name);
	if (tempfile_close(o->tmp, o->no_fsync ? TEMPFILE_NO_FSYNC : 0, e) < 0) {
		spool_abort(o);
		return -1;
	}
	return 0;
}

int spool_commit(struct spool_out *o, struct err *e)
{
	char dir[PATH_MAX];
	if (spool_finish_write(o, e) < 0)
		return -1;
	/* never too long: spool_open checked it fits */
	int r = spool_step_dir(dir, sizeof dir, o->queue, o->step, o->rank, e) < 0 ? -1 : fsys_mkdirs(dir, e);
	if (r < 0) {
		spool_abort(o);
		return -1;
	}
	struct tempfile *t = o->tmp;
	o->tmp = NULL;
	return tempfile_commit(t, o->no_fsync ? TEMPFILE_NO_FSYNC : 0, e);
}

/* Read up to n bytes, looping until n or the end: count, or -1. */
static ssize_t read_full(int fd, uint8_t *p, size_t n, const char *path, struct err *e)
{
	size_t at = 0;
	while (at < n) {
		ssize_t k = fsys_read(fd, p + at, n - at, path, e);
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		at += (size_t)k;
	}
	return (ssize_t)at;
}

int spool_same_file(const char *a, const char *b, struct err *e)
{
	struct stat sb;
	int r = fsys_stat(b, &sb, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	int fa = fsys_open_read(a, e);
	if (fa < 0)
		return -1;
	int fb = fsys_open_read(b, e);
	if (fb < 0) {
		close(fa);
		return -1;
	}
	uint8_t ba[16384], bb[16384];
	int same = -1;
	for (;;) {
		ssize_t ka = read_full(fa, ba, sizeof ba, a, e), kb;
		if (ka < 0 || (kb = read_full(fb, bb, sizeof bb, b, e)) < 0)
			break;
		if (ka != kb || memcmp(ba, bb, (size_t)ka) != 0) {
			same = 0;
			break;
		}
		if (ka == 0) {
			same = 1;
			break;
		}
	}
	close(fa);
	close(fb);
	return same;
}

void spool_abort(struct spool_out *o)
{
	tempfile_delete(o->tmp);
	o->tmp = NULL;   /* a second abort removes nothing */
}

static int parse_num(const char *s, int64_t max, int64_t *out)
{
	if (s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1] != '\0'))
		return -1;
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (max - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

int spool_parse_step(const char *name, int64_t *step)
{
	return strncmp(name, "step_", 5) ? -1 : parse_num(name + 5, INT64_MAX, step);
}

int spool_parse_rank(const char *name, int *rank)
{
	int64_t v;
	if (strncmp(name, "rank_", 5) || parse_num(name + 5, INT_MAX, &v) < 0)
		return -1;
	*rank = (int)v;
	return 0;
}

/* Cut the last path component off buf: it, or NULL when buf has no '/'. */
static char *cut_last(char *buf)
{
	char *s = strrchr(buf, '/');
	if (!s)
		return NULL;
	*s = 0;
	return s + 1;
}

int spool_queue_of(const char *path, char *queue, size_t size)
{
	char buf[PATH_MAX];
	int64_t step;
	int rank;
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return 0;
	const char *name = cut_last(buf), *r = name ? cut_last(buf) : NULL;
	if (!r || !*name || spool_parse_rank(r, &rank) < 0)
		return 0;
	const char *st = cut_last(buf), *q = buf;
	if (!st) {   /* step_N/rank_X/NAME: the queue is "." */
		st = buf;
		q = ".";
	} else if (!*buf) {
		q = "/";
	}
	if (spool_parse_step(st, &step) < 0)
		return 0;
	/* a dot name is no queue (QUEUE/.quarantine, QUEUE/.tmp): "." and ".." are directories given relatively */
	const char *base = strrchr(q, '/') ? strrchr(q, '/') + 1 : q;
	if (base[0] == '.' && strcmp(base, ".") != 0 && strcmp(base, "..") != 0)
		return 0;
	return snprintf(queue, size, "%s", q) < (int)size;
}

/* path with its directory's real path: 0 with it in full, -1 when that
 * directory does not exist (and so holds no published file). */
static int real_dir_path(const char *path, char *full, size_t size)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	if (!*name || snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
			       slash ? path : ".") >= (int)sizeof dir)
		return -1;
	if (!realpath(*dir ? dir : "/", real) ||
	    snprintf(full, size, "%s/%s", strcmp(real, "/") ? real : "", name) >= (int)size)
		return -1;
	return 0;
}

int spool_locate(const char *path, char *queue, size_t qsize, char *file, size_t fsize)
{
	char full[PATH_MAX];
	if (spool_queue_of(path, queue, qsize))
		return snprintf(file, fsize, "%s", path) < (int)fsize;
	return real_dir_path(path, full, sizeof full) == 0 && spool_queue_of(full, queue, qsize) &&
	       snprintf(file, fsize, "%s", full) < (int)fsize;
}

int spool_queue_of_real(const char *path, char *queue, size_t size)
{
	char file[PATH_MAX];
	return spool_locate(path, queue, size, file, sizeof file);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int spool_list_steps(const char *queue, int64_t from, int64_t to, int64_t **steps, size_t *n,
		     struct err *e)
{
	char **names;
	size_t nn, k = 0;
	*steps = NULL;
	*n = 0;
	if (fsys_list_dir(queue, FSYS_DIRS, &names, &nn, e) < 0)
		return -1;
	int64_t *v = malloc((nn ? nn : 1) * sizeof *v);
	if (!v) {
		fsys_free_names(names, nn);
		return err_set(e, "%s: out of memory", queue);
	}
	for (size_t i = 0; i < nn; i++) {
		int64_t s;
		if (spool_parse_step(names[i], &s) == 0 && (from < 0 || s >= from) && (to < 0 || s <= to))
			v[k++] = s;
	}
	fsys_free_names(names, nn);
	qsort(v, k, sizeof *v, cmp_i64);
	*steps = v;
	*n = k;
	return 0;
}

int spool_list_ranks(const char *queue, int64_t step, int **ranks, size_t *n, struct err *e)
{
	char dir[PATH_MAX], **names;
	size_t nn, k = 0;
	*ranks = NULL;
	*n = 0;
	if (snprintf(dir, sizeof dir, "%s/step_%lld", queue, (long long)step) >= (int)sizeof dir)
		return err_set(e, "%s: path too long", queue);
	if (fsys_list_dir(dir, FSYS_DIRS, &names, &nn, e) < 0)
		return -1;
	int *v = malloc((nn ? nn : 1) * sizeof *v);
	if (!v) {
		fsys_free_names(names, nn);
		return err_set(e, "%s: out of memory", dir);
	}
	for (size_t i = 0; i < nn; i++)
		if (spool_parse_rank(names[i], &v[k]) == 0)
			k++;
	fsys_free_names(names, nn);
	qsort(v, k, sizeof *v, cmp_int);
	*ranks = v;
	*n = k;
	return 0;
}

/* Append "dir/name" (or name when dir is NULL) to *v: 0 or -1. */
static int add_path(char ***v, size_t *n, const char *dir, const char *name, struct err *e)
{
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return err_set(e, "out of memory");
	*v = nv;
	size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
	if (!(nv[*n] = malloc(len)))
		return err_set(e, "out of memory");
	snprintf(nv[(*n)++], len, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
	return 0;
}

int spool_misnamed(const char *queue, char ***paths, size_t *n, struct err *e)
{
	char **steps = NULL, **ranks = NULL, dir[PATH_MAX];
	size_t ns = 0, nr = 0;
	int64_t step;
	int rank, rc = 0;
	*paths = NULL;
	*n = 0;
	if (fsys_list_dir(queue, FSYS_DIRS, &steps, &ns, e) < 0)
		return -1;
	for (size_t i = 0; rc == 0 && i < ns; i++) {
		if (strncmp(steps[i], "step_", 5) != 0)
			continue;
		if (spool_parse_step(steps[i], &step) < 0) {
			rc = add_path(paths, n, NULL, steps[i], e);
			continue;
		}
		if (snprintf(dir, sizeof dir, "%s/%s", queue, steps[i]) >= (int)sizeof dir) {
			rc = err_set(e, "%s: path too long", queue);
			break;
		}
		rc = fsys_list_dir(dir, FSYS_DIRS, &ranks, &nr, e) < 0 ? -1 : 0;
		for (size_t j = 0; rc == 0 && j < nr; j++)
			if (strncmp(ranks[j], "rank_", 5) == 0 && spool_parse_rank(ranks[j], &rank) < 0)
				rc = add_path(paths, n, steps[i], ranks[j], e);
		fsys_free_names(ranks, nr);
		ranks = NULL;
		nr = 0;
	}
	fsys_free_names(steps, ns);
	if (rc < 0) {
		fsys_free_names(*paths, *n);
		*paths = NULL;
		*n = 0;
	}
	return rc;
}

static int in_sorted(char **v, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v[mid], name);
		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int spool_rank_state(const char *queue, int64_t step, int rank, struct spool_rank_state *s,
		     struct err *e)
{
	char dir[PATH_MAX], sub[PATH_MAX + 16];
	memset(s, 0, sizeof *s);
	if (spool_step_dir(dir, sizeof dir, queue, step, rank, e) < 0)
		return -1;
	/* A record moves from .claimed to .done when its file is retired;
	 * listing .claimed before .done sees a record that moves between the
	 * two lists at least once (both: a retire, counted as done below),
	 * never not at all, which would make a finished file look waiting. */
	snprintf(sub, sizeof sub, "%s/.claimed", dir);
	if (fsys_list_dir(sub, FSYS_FILES, &s->claimed, &s->nclaimed, e) < 0)
		goto fail;
	snprintf(sub, sizeof sub, "%s/.done", dir);
	if (fsys_list_dir(sub, FSYS_FILES, &s->done, &s->ndone, e) < 0)
		goto fail;
	if (fsys_list_dir(dir, FSYS_FILES, &s->waiting, &s->nwaiting, e) < 0)
		goto fail;
	fsys_drop_hidden(s->done, &s->ndone);
	fsys_drop_hidden(s->claimed, &s->nclaimed);
	fsys_drop_hidden(s->waiting, &s->nwaiting);
	size_t k = 0;
	for (size_t i = 0; i < s->nwaiting; i++) {
		char *nm = s->waiting[i];
		if (in_sorted(s->done, s->ndone, nm) || in_sorted(s->claimed, s->nclaimed, nm))
			free(nm);
		else
			s->waiting[k++] = nm;
	}
	s->nwaiting = k;
	/* A name both claimed and done is a retire caught between the two lists. */
	k = 0;
	for (size_t i = 0; i < s->nclaimed; i++) {
		char *nm = s->claimed[i];
		if (in_sorted(s->done, s->ndone, nm))
			free(nm);
		else
			s->claimed[k++] = nm;
	}
	s->nclaimed = k;
	return 0;
fail:
	spool_rank_state_free(s);
	return -1;
}

void spool_rank_state_free(struct spool_rank_state *s)
{
	fsys_free_names(s->waiting, s->nwaiting);
	fsys_free_names(s->claimed, s->nclaimed);
	fsys_free_names(s->done, s->ndone);
	memset(s, 0, sizeof *s);
}
