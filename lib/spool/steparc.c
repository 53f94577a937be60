/* steparc.c: see steparc.h. */
#include "spool/steparc.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/fsys.h"
#include "base/lineio.h"
#include "base/tempfile.h"
#include "spool/spool.h"

/* One file of the step or one member of an archive. */
struct item {
	char *path;       /* on disk (a step's file) or NULL (an archive's member) */
	char *member;     /* NAME/step_N/... */
	long long size;
};

struct items {
	struct item *v;
	size_t n, cap;
};

static void items_free(struct items *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].member);
	}
	free(s->v);
	memset(s, 0, sizeof *s);
}

static int items_add(struct items *s, const char *path, const char *member, long long size, struct err *e)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? 2 * s->cap : 16;
		struct item *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return err_set(e, "%s: out of memory", member);
		s->v = nv;
		s->cap = nc;
	}
	struct item *it = &s->v[s->n];
	it->path = path ? strdup(path) : NULL;
	it->member = strdup(member);
	it->size = size;
	if (!it->member || (path && !it->path)) {
		free(it->path);
		free(it->member);
		return err_set(e, "%s: out of memory", member);
	}
	s->n++;
	return 0;
}

static int items_has(const struct items *s, const char *member, long long size)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].size == size && strcmp(s->v[i].member, member) == 0)
			return 1;
	return 0;
}

const char *steparc_queue_name(const char *queue, char *buf, size_t size)
{
	snprintf(buf, size, "%s", queue);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	char *s = strrchr(buf, '/');
	return s ? s + 1 : buf;
}

/* DIR/NAME-step_N.tar.zst for k = 1, DIR/NAME-step_N.K.tar.zst after. */
static int arc_path(char *out, size_t size, const char *dir, const char *qname, int64_t step, int k,
		    struct err *e)
{
	int n = k == 1 ? snprintf(out, size, "%s/%s-step_%lld.tar.zst", dir, qname, (long long)step)
		       : snprintf(out, size, "%s/%s-step_%lld.%d.tar.zst", dir, qname, (long long)step, k);
	return n < 0 || (size_t)n >= size ? err_set(e, "%s: path too long", dir) : 0;
}

/*
 * An archive of steparc's at path opened for reading, and in *ent an entry
 * of our own for its headers (archive_read_next_header2; archive_read_new's
 * own goes unchecked, lineio.c says why); *ar the open's status, a's error
 * to report unless ARCHIVE_OK. NULL, said, when memory ran out.
 */
static struct archive *open_reader(const char *path, struct archive_entry **ent, int *ar, struct err *e)
{
	struct archive *a = archive_read_new();
	*ent = archive_entry_new();
	if (!a || !*ent) {
		archive_read_free(a);
		archive_entry_free(*ent);
		err_set(e, "%s: out of memory", path);
		return NULL;
	}
	*ar = archive_read_support_filter_all(a);
	if (*ar == ARCHIVE_OK)
		*ar = archive_read_support_format_tar(a);   /* what steparc writes (pax) */
	if (*ar == ARCHIVE_OK)
		*ar = archive_read_open_filename(a, path, 1 << 16);
	return a;
}

static void close_reader(struct archive *a, struct archive_entry *ent)
{
	archive_read_free(a);
	archive_entry_free(ent);
}

/* The members of the step's existing archives into seen; *next: the first free number. */
static int read_existing(const char *dir, const char *qname, int64_t step, struct items *seen, int *next,
			 struct err *e)
{
	char p[PATH_MAX];
	for (int k = 1;; k++) {
		struct stat st;
		if (arc_path(p, sizeof p, dir, qname, step, k, e) < 0)
			return -1;
		int r = fsys_stat(p, &st, e);
		if (r < 0)
			return -1;
		if (r == 1) {
			*next = k;
			return 0;
		}
		struct archive_entry *ent;
		int ar;
		struct archive *a = open_reader(p, &ent, &ar, e);
		if (!a)
			return -1;
		while (ar == ARCHIVE_OK && (ar = archive_read_next_header2(a, ent)) == ARCHIVE_OK) {
			const char *member = archive_entry_pathname(ent);   /* NULL: its conversion ran out of memory */
			if ((member ? items_add(seen, NULL, member, archive_entry_size(ent), e)
				    : err_set(e, "%s: out of memory", p)) < 0) {
				close_reader(a, ent);
				return -1;
			}
		}
		if (ar != ARCHIVE_EOF) {
			/* never write beside an archive we cannot read: what it holds is unknown */
			lineio_archive_err(e, p, a);
			close_reader(a, ent);
			return err_prefix(e, "an earlier archive of step %lld is unreadable; move it aside",
					  (long long)step);
		}
		close_reader(a, ent);
	}
}

/* 1, said, when dir holds a directory (not a dot name; rank_X where ranks) that no archive would hold; 0, or -1. */
static int no_other_dirs(const char *dir, int ranks, struct err *e)
{
	char **v;
	size_t n;
	int rank, r = 0;
	if (fsys_list_dir(dir, FSYS_DIRS, &v, &n, e) < 0)
		return -1;
	for (size_t k = 0; k < n && r == 0; k++)
		if (v[k][0] != '.' && (!ranks || spool_parse_rank(v[k], &rank) < 0)) {
			err_set(e, "%s/%s: a directory%s; not archived, so the step is kept", dir, v[k],
				ranks ? " that is not a rank's" : " in a rank");
			r = 1;
		}
	fsys_free_names(v, n);
	return r;
}

/*
 * The files of the step itself (DONE, and a checkpoint's files in policy,
 * which has no rank directories), with their member names; *extra counts
 * those but DONE. A directory other than rank_X would be removed unarchived:
 * refused (no_other_dirs: 1), as is one in a rank directory. 0, 1 or -1.
 */
static int list_step_top(const char *queue, const char *qname, int64_t step, struct items *out, long *extra,
			 struct err *e)
{
	char sdir[PATH_MAX], p[PATH_MAX + 300], m[PATH_MAX + 300], **v;
	size_t n;
	struct stat st;
	int r = 0;
	snprintf(sdir, sizeof sdir, "%s/step_%lld", queue, (long long)step);
	if ((r = no_other_dirs(sdir, 1, e)) != 0)
		return r;
	if (fsys_list_dir(sdir, FSYS_FILES, &v, &n, e) < 0)
		return -1;
	for (size_t k = 0; k < n && r == 0; k++) {
		if (v[k][0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", sdir, v[k]);
		snprintf(m, sizeof m, "%s/step_%lld/%s", qname, (long long)step, v[k]);
		int gone = fsys_stat(p, &st, e);
		if (gone < 0 || (gone == 0 && items_add(out, p, m, st.st_size, e) < 0))
			r = -1;
		else if (gone == 0 && strcmp(v[k], "DONE") != 0)
			(*extra)++;
	}
	fsys_free_names(v, n);
	return r;
}

/* The step's own files (list_step_top) and its published files, with their member names: 0, 1 or -1 as list_step_top. */
static int list_step(const char *queue, const char *qname, int64_t step, struct items *out, long *extra,
		     struct err *e)
{
	char p[PATH_MAX + 300], m[PATH_MAX + 300], dir[PATH_MAX], **v;
	int *ranks;
	size_t nr, n;
	struct stat st;
	int r;
	if ((r = list_step_top(queue, qname, step, out, extra, e)) != 0)
		return r;
	if (spool_list_ranks(queue, step, &ranks, &nr, e) < 0)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		if (spool_step_dir(dir, sizeof dir, queue, step, ranks[i], e) < 0 || (r = no_other_dirs(dir, 0, e)) != 0) {
			free(ranks);
			return r ? r : -1;
		}
		if (fsys_list_dir(dir, FSYS_FILES, &v, &n, e) < 0) {
			free(ranks);
			return -1;
		}
		for (size_t k = 0; k < n; k++) {
			if (v[k][0] == '.')
				continue;
			snprintf(p, sizeof p, "%s/%s", dir, v[k]);
			snprintf(m, sizeof m, "%s/step_%lld/rank_%d/%s", qname, (long long)step, ranks[i], v[k]);
			r = fsys_stat(p, &st, e);
			if (r < 0 || (r == 0 && items_add(out, p, m, st.st_size, e) < 0)) {
				fsys_free_names(v, n);
				free(ranks);
				return -1;
			}
		}
		fsys_free_names(v, n);
	}
	free(ranks);
	return 0;
}

static int add_member(struct archive *a, const char *path, const char *member, struct err *e)
{
	struct stat st;
	unsigned char chunk[65536];
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return -1;
	if (fsys_fstat(fd, &st, path, e) < 0) {
		close(fd);
		return -1;
	}
	struct archive_entry *ent = archive_entry_new();
	if (!ent) {
		close(fd);
		return err_set(e, "%s: out of memory", member);
	}
	archive_entry_set_pathname(ent, member);
	archive_entry_set_size(ent, st.st_size);
	archive_entry_set_filetype(ent, AE_IFREG);
	archive_entry_set_perm(ent, 0644);
	archive_entry_set_mtime(ent, st.st_mtime, 0);
	int ok = archive_write_header(a, ent) == ARCHIVE_OK;
	archive_entry_free(ent);
	if (!ok) {
		close(fd);
		return lineio_archive_err(e, member, a);
	}
	long long left = st.st_size;
	while (left > 0) {
		ssize_t n = fsys_read(fd, chunk, sizeof chunk, path, e);
		if (n < 0) {
			close(fd);
			return -1;
		}
		if (n == 0) {
			close(fd);
			return err_set(e, "%s: shrank while being archived", path);
		}
		if (archive_write_data(a, chunk, (size_t)n) < 0) {
			close(fd);
			return lineio_archive_err(e, member, a);
		}
		left -= n;
	}
	close(fd);
	return 0;
}

/* n bytes of fd into p, however many reads that takes: 0, 1 when the file ends first, or -1. */
static int read_full(int fd, unsigned char *p, size_t n, const char *path, struct err *e)
{
	while (n > 0) {
		ssize_t k = fsys_read(fd, p, n, path, e);
		if (k <= 0)
			return k < 0 ? -1 : 1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* 0 when member's data in a, read to its end, is the file at path byte for byte; else -1, said. */
static int same_data(struct archive *a, const char *member, const char *path, struct err *e)
{
	unsigned char mine[65536], theirs[65536];
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return -1;
	int r = 0;
	la_ssize_t n;
	while (r == 0 && (n = archive_read_data(a, mine, sizeof mine)) > 0)
		if ((r = read_full(fd, theirs, (size_t)n, path, e)) == 1 || (r == 0 && memcmp(mine, theirs, (size_t)n)))
			r = err_set(e, "%s: differs from %s", member, path);
	if (r == 0 && n < 0)
		r = lineio_archive_err(e, member, a);
	ssize_t more = r == 0 ? fsys_read(fd, theirs, 1, path, e) : 0;
	if (more != 0)
		r = more < 0 ? -1 : err_set(e, "%s: shorter than %s", member, path);
	close(fd);
	return r;
}

/*
 * Read the archive at path back and hold it to what was meant to go in:
 * the members of step not in seen, each once, in that order, each the same
 * bytes as its file. libarchive's writer can report success for an archive
 * it damaged (a header it ran out of memory writing), and gc removes the
 * step once its archive is published: what goes unchecked here is lost.
 */
static int check_archive(const char *path, const struct items *step, const struct items *seen, struct err *e)
{
	struct archive_entry *ent;
	int ar, r = 0;
	struct archive *a = open_reader(path, &ent, &ar, e);
	if (!a)
		return -1;
	for (size_t i = 0; r == 0 && i < step->n; i++) {
		const struct item *it = &step->v[i];
		if (items_has(seen, it->member, it->size))
			continue;
		if (ar == ARCHIVE_OK)
			ar = archive_read_next_header2(a, ent);
		if (ar != ARCHIVE_OK)
			r = ar == ARCHIVE_EOF ? err_set(e, "%s: ends before %s", path, it->member)
					      : lineio_archive_err(e, path, a);
		else if (!archive_entry_pathname(ent))   /* its conversion ran out of memory */
			r = err_set(e, "%s: out of memory", path);
		else if (strcmp(archive_entry_pathname(ent), it->member) != 0 || archive_entry_size(ent) != it->size)
			r = err_set(e, "%s: holds %s (%lld bytes) where %s (%lld bytes) was written", path,
				    archive_entry_pathname(ent), (long long)archive_entry_size(ent), it->member, it->size);
		else
			r = same_data(a, it->member, it->path, e);
	}
	if (r == 0 && (ar = archive_read_next_header2(a, ent)) != ARCHIVE_EOF)
		r = ar == ARCHIVE_OK ? err_set(e, "%s: holds more than was written (%s)", path,
					       archive_entry_pathname(ent))
				     : lineio_archive_err(e, path, a);
	close_reader(a, ent);
	return r < 0 ? err_prefix(e, "the archive written is not what was meant (nothing removed)") : 0;
}

/*
 * The archive's bytes, compressed here with libzstd into one frame with its
 * checksum (as zstd -t checks), not by libarchive's zstd filter, which dies
 * of SIGSEGV when an allocation of its own fails.
 */
struct zout {
	ZSTD_CCtx *z;
	int fd;
	const char *path;
	unsigned char buf[1 << 16];
};

/* in[0..n) through z with op (ZSTD_e_end: to the end of the frame), what comes out written */
static int zout_feed(struct zout *o, const void *in, size_t n, ZSTD_EndDirective op, struct err *e)
{
	ZSTD_inBuffer ib = { in, n, 0 };
	size_t left;
	do {
		ZSTD_outBuffer ob = { o->buf, sizeof o->buf, 0 };
		left = ZSTD_compressStream2(o->z, &ob, &ib, op);
		if (ZSTD_isError(left))
			return err_set(e, "%s: zstd: %s", o->path, ZSTD_getErrorName(left));
		if (fsys_write_all(o->fd, o->buf, ob.pos, o->path, e) < 0)
			return -1;
	} while (op == ZSTD_e_end ? left != 0 : ib.pos < ib.size);
	return 0;
}

/* libarchive's write callback: a failure is kept as a's error, which its caller reports */
static la_ssize_t zout_write(struct archive *a, void *p, const void *data, size_t n)
{
	struct err e;
	if (zout_feed(p, data, n, ZSTD_e_continue, &e) == 0)
		return (la_ssize_t)n;
	archive_set_error(a, e.errnum ? e.errnum : EIO, "%s", e.msg);
	return -1;
}

static void zout_free(struct zout *o)
{
	if (o)
		ZSTD_freeCCtx(o->z);
	free(o);
}

/* Write the items not in seen into a new archive at path. */
static int write_archive(const char *path, const struct items *step, const struct items *seen, long *written,
			 struct err *e)
{
	struct tempfile *t = tempfile_create(path, NULL, e);
	if (!t)
		return -1;
	struct archive *a = archive_write_new();
	struct zout *zo = calloc(1, sizeof *zo);
	if (!a || !zo || !(zo->z = ZSTD_createCCtx()) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(zo->z, ZSTD_c_checksumFlag, 1))) {
		err_set(e, "%s: out of memory", tempfile_path(t));
		goto fail;
	}
	zo->fd = tempfile_fd(t);
	zo->path = tempfile_path(t);
	/* no close callback: libarchive ignores what it returns, so the frame is ended below */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open(a, zo, NULL, zout_write, NULL) != ARCHIVE_OK) {
		lineio_archive_err(e, tempfile_path(t), a);
		goto fail;
	}
	for (size_t i = 0; i < step->n; i++) {
		const struct item *it = &step->v[i];
		if (items_has(seen, it->member, it->size))
			continue;
		if (add_member(a, it->path, it->member, e) < 0)
			goto fail;
		(*written)++;
	}
	if (archive_write_close(a) != ARCHIVE_OK) {
		lineio_archive_err(e, tempfile_path(t), a);
		goto fail;
	}
	archive_write_free(a);
	a = NULL;
	if (zout_feed(zo, NULL, 0, ZSTD_e_end, e) < 0)
		goto fail;
	zout_free(zo);
	zo = NULL;
	if (check_archive(tempfile_path(t), step, seen, e) < 0)
		goto fail;
	int r = tempfile_commit(t, 0, e);
	if (r == 1)
		return err_set(e, "%s: appeared while being written (two gc at once?); not replaced", path);
	return r;
fail:
	if (a)
		archive_write_free(a);
	zout_free(zo);
	tempfile_delete(t);
	return -1;
}

int steparc_write(const char *queue, int64_t step, const char *dir, long *files, long *written,
		  struct err *e)
{
	char qbuf[PATH_MAX], path[PATH_MAX];
	const char *qname = steparc_queue_name(queue, qbuf, sizeof qbuf);
	struct items seen = { 0 }, cur = { 0 };
	int next = 1, rc = -1;
	long extra = 0;
	*files = *written = 0;
	if (fsys_mkdirs(dir, e) < 0 || read_existing(dir, qname, step, &seen, &next, e) < 0 ||
	    (rc = list_step(queue, qname, step, &cur, &extra, e)) != 0)
		goto out;
	size_t fresh = 0;
	for (size_t i = 0; i < cur.n; i++)
		fresh += !items_has(&seen, cur.v[i].member, cur.v[i].size);
	*files = (long)cur.n - extra;
	rc = 0;
	if (fresh > 0 && (arc_path(path, sizeof path, dir, qname, step, next, e) < 0 ||
			  write_archive(path, &cur, &seen, written, e) < 0))
		rc = -1;
out:
	items_free(&seen);
	items_free(&cur);
	return rc;
}

int steparc_clean_tmp(const char *queue, const char *dir, struct err *e)
{
	char qbuf[PATH_MAX], prefix[PATH_MAX + 8], p[PATH_MAX + 300], **v;
	size_t n;
	snprintf(prefix, sizeof prefix, ".%s-step_", steparc_queue_name(queue, qbuf, sizeof qbuf));
	int r = fsys_list_dir(dir, FSYS_FILES, &v, &n, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(v[i], prefix, strlen(prefix)) || !strstr(v[i], ".tar.zst."))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, v[i]);
		if (fsys_unlink(p, e) < 0) {
			fsys_free_names(v, n);
			return -1;
		}
	}
	fsys_free_names(v, n);
	return 0;
}
