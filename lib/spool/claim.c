/* claim.c: see claim.h. */
#include "spool/claim.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/path.h"
#include "spool/spool.h"

/* Field 22 of /proc/PID/stat: start time in clock ticks since boot; 0 if unknown. */
static unsigned long long proc_start(long pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = '\0';
	char *p = strrchr(line, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	unsigned long long v = 0;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field == 22)
		v = strtoull(p, NULL, 10);
	return v;
}

void claim_self(struct claim_id *id, long lease)
{
	memset(id, 0, sizeof *id);
	const char *h = getenv("GRPO_CLAIM_HOST");
	if (h && *h)
		snprintf(id->host, sizeof id->host, "%s", h);
	else if (gethostname(id->host, sizeof id->host - 1) < 0 || !id->host[0])
		strcpy(id->host, "localhost");
	for (char *p = id->host; *p; p++)
		if (isspace((unsigned char)*p))
			*p = '_';
	id->pid = (long)getpid();
	id->pstart = proc_start(id->pid);
	id->since = (long long)time(NULL);
	id->lease = lease > 0 ? lease : CLAIM_LEASE_DEFAULT;
}

int claim_format_id(const struct claim_id *id, char *out, size_t size)
{
	if (!id->host[0])
		return -1;
	for (const char *p = id->host; *p; p++)
		if (isspace((unsigned char)*p))
			return -1;
	int n = snprintf(out, size, "host=%s pid=%ld pstart=%llu time=%lld lease=%ld\n", id->host, id->pid,
			 id->pstart, id->since, id->lease);
	return n < 0 || (size_t)n >= size ? -1 : n;
}

int claim_parse_id(const char *text, struct claim_id *id)
{
	memset(id, 0, sizeof *id);
	int n = 0;
	if (sscanf(text, "host=%255s pid=%ld pstart=%llu time=%lld lease=%ld%n", id->host, &id->pid,
		   &id->pstart, &id->since, &id->lease, &n) != 5 || n == 0 || id->pid <= 0) {
		memset(id, 0, sizeof *id);
		return -1;
	}
	return 0;
}

static int set_paths(struct claim *c, const char *queue, int64_t step, int rank, const char *name,
		     struct err *e)
{
	char dir[PATH_MAX];
	memset(c, 0, sizeof *c);
	c->fd = -1;
	c->step = step;
	c->rank = rank;
	if (!name[0] || name[0] == '.' || strchr(name, '/') || strlen(name) >= sizeof c->name)
		return err_set(e, "%s: not a spool file name", name);
	strcpy(c->name, name);
	char claimed[PATH_MAX];
	if (spool_step_dir(dir, sizeof dir, queue, step, rank, e) < 0 ||
	    path_join(c->path, sizeof c->path, dir, name, e) < 0 ||
	    path_join(claimed, sizeof claimed, dir, ".claimed", e) < 0 ||
	    path_join(c->claim_path, sizeof c->claim_path, claimed, name, e) < 0)
		return -1;
	c->queue_len = strlen(queue);
	c->dir_len = strlen(dir);
	return 0;
}

/* QUEUE/step_N/rank_X/.done/NAME, and QUEUE/.tmp: no longer than claim_path,
 * so they fit where it did. */
static void done_path(const struct claim *c, char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%.*s/.done/%s", (int)c->dir_len, c->path, c->name);
}

static void tmp_dir(const struct claim *c, char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%.*s/.tmp", (int)c->queue_len, c->path);
}

/* The directory part of path (up to the last '/') into out. */
static void dir_of(const char *path, char *out, size_t size)
{
	snprintf(out, size, "%s", path);
	char *s = strrchr(out, '/');
	if (s)
		*s = '\0';
}

/*
 * Rename from -> to without replacing, making to's directory (one level;
 * its parent must exist) when it is missing. 0 moved, 1 to exists, 2 the
 * parent is gone too (the step was removed), -1 error.
 */
static int move_into(const char *from, const char *to, struct err *e)
{
	int r = fsys_rename_noreplace(from, to, e);
	if (r >= 0 || errno != ENOENT)
		return r;
	char dir[PATH_MAX];
	dir_of(to, dir, sizeof dir);
	if (fsys_mkdir(dir, e) < 0)
		return errno == ENOENT ? 2 : -1;
	return fsys_rename_noreplace(from, to, e);
}

/* Remove a claim record without an IN_DELETE in .claimed (claim.h). */
static int discard(const struct claim *c, struct err *e)
{
	char uniq[160], p[PATH_MAX + 200], tdir[PATH_MAX];
	tmp_dir(c, tdir);
	spool_unique_name(uniq, sizeof uniq);
	snprintf(p, sizeof p, "%s/discard.%s", tdir, uniq);
	if (fsys_rename(c->claim_path, p, e) < 0)
		return -1;
	return fsys_unlink(p, e);
}

int claim_take(struct claim *c, const char *queue, int64_t step, int rank, const char *name,
	       long lease, struct err *e)
{
	char tmp[PATH_MAX + 200], uniq[160], text[512], done[PATH_MAX], tdir[PATH_MAX];
	struct stat st;
	if (set_paths(c, queue, step, rank, name, e) < 0)
		return -1;
	done_path(c, done);
	tmp_dir(c, tdir);
	int r = fsys_stat(c->path, &st, e);
	if (r != 0)
		return r;
	/* Most candidates that are done already are turned away here, cheaply. */
	if ((r = fsys_stat(done, &st, e)) <= 0)
		return r < 0 ? -1 : 1;
	spool_unique_name(uniq, sizeof uniq);
	snprintf(tmp, sizeof tmp, "%s/claim.%s", tdir, uniq);
	if (fsys_mkdirs(tdir, e) < 0)
		return -1;

	struct claim_id id;
	claim_self(&id, lease);
	int n = claim_format_id(&id, text, sizeof text);
	if (n < 0)
		return err_set(e, "%s: host name %s does not make a claim record", c->path, id.host);
	int fd = fsys_create_locked(tmp, e);
	if (fd < 0)
		return -1;
	if (fsys_write_all(fd, text, (size_t)n, tmp, e) < 0 || fsys_fstat(fd, &st, tmp, e) < 0)
		goto fail;
	c->dev = (unsigned long long)st.st_dev;
	c->ino = (unsigned long long)st.st_ino;
	r = move_into(tmp, c->claim_path, e);
	if (r < 0)
		goto fail;
	if (r > 0) {
		fsys_unlink(tmp, NULL);
		close(fd);
		return 1;
	}
	/* The previous holder, if any, moved its record to .done before ours
	 * could land in .claimed, so this check cannot miss a retirement. */
	r = fsys_stat(done, &st, e);
	if (r <= 0) {
		if (discard(c, r < 0 ? NULL : e) < 0)
			r = -1;
		close(fd);
		return r < 0 ? -1 : 1;
	}
	c->fd = fd;
	c->state = CLAIM_HELD;
	return 0;
fail:
	fsys_unlink(tmp, NULL);
	close(fd);
	return -1;
}

int claim_held_by(const char *path, int fd)
{
	char queue[PATH_MAX], file[PATH_MAX], record[PATH_MAX];
	struct stat held, st;
	if (fd < 0 || !spool_locate(path, queue, sizeof queue, file, sizeof file))
		return 0;
	const char *name = strrchr(file, '/') + 1;   /* spool_locate: at least step_N/rank_X/NAME */
	if (snprintf(record, sizeof record, "%.*s/.claimed/%s", (int)(name - 1 - file), file, name) >=
	    (int)sizeof record)
		return 0;
	/* a plain stat: a question, not a step of the spool's protocol (no crash hook) */
	return fstat(fd, &held) == 0 && stat(record, &st) == 0 && held.st_dev == st.st_dev &&
	       held.st_ino == st.st_ino;
}

/* 1 if the record at c->claim_path is still the one c holds (not recovered and retaken). */
static int still_ours(struct claim *c, struct err *e)
{
	struct stat st;
	int r = fsys_stat(c->claim_path, &st, e);
	if (r < 0)
		return -1;
	return r == 0 && (unsigned long long)st.st_dev == c->dev &&
	       (unsigned long long)st.st_ino == c->ino;
}

static void drop(struct claim *c, int state)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = state;
}

int claim_retire(struct claim *c, struct err *e)
{
	if (c->state != CLAIM_HELD)
		return err_set(e, "%s: not claimed", c->path);
	int r = still_ours(c, e);
	if (r < 0)
		return -1;
	if (r == 0) {
		drop(c, CLAIM_RETIRED);
		return 1;
	}
	char done[PATH_MAX];
	done_path(c, done);
	r = move_into(c->claim_path, done, e);
	if (r < 0)
		return -1;
	if (r == 1 && discard(c, e) < 0)
		return -1; /* retired already by a holder that took it over; ours is surplus */
	drop(c, CLAIM_RETIRED);
	return 0;
}

int claim_flush_done(const struct claim *c, struct err *e)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%.*s/.done", (int)c->dir_len, c->path);
	return fsys_fsync_dir(dir, e);
}

int claim_same_rank(const struct claim *a, const struct claim *b)
{
	return a->dir_len == b->dir_len && memcmp(a->path, b->path, a->dir_len) == 0;
}

int claim_release(struct claim *c, struct err *e)
{
	if (c->state != CLAIM_HELD)
		return 0;
	int r = still_ours(c, e);
	if (r < 0)
		return -1;
	if (r == 1 && fsys_unlink(c->claim_path, e) < 0)
		return -1;
	drop(c, CLAIM_RELEASED);
	return 0;
}

int claim_let_go(struct claim *c, struct err *e)
{
	if (claim_release(c, e) == 0)
		return 0;
	drop(c, CLAIM_NONE);
	return -1;
}

int claim_renew(struct claim *c, struct err *e)
{
	if (c->state != CLAIM_HELD)
		return err_set(e, "%s: not claimed", c->path);
	return fsys_touch(c->fd, c->claim_path, e);
}

int claim_renew_record(const char *claim_path, unsigned long long dev, unsigned long long ino,
		       struct err *e)
{
	/* Renewed through a descriptor checked to be the record, so that a
	 * record recovered and retaken meanwhile is never renewed by mistake. */
	int fd = fsys_open_read(claim_path, e);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	struct stat st;
	int r = fsys_fstat(fd, &st, claim_path, e);
	if (r == 0 && ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino))
		r = 1;
	if (r == 0)
		r = fsys_touch(fd, claim_path, e);
	close(fd);
	return r;
}

int claim_check(const char *path, long lease, time_t now, struct claim_id *id, long long *age,
		struct err *e)
{
	char text[512];
	struct stat st;
	memset(id, 0, sizeof *id);
	*age = 0;
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return errno == ENOENT ? 2 : -1;
	ssize_t n = fsys_read(fd, text, sizeof text - 1, path, e);
	int r = n < 0 ? -1 : fsys_fstat(fd, &st, path, e);
	close(fd);
	if (r < 0)
		return -1;
	text[n] = '\0';
	*age = (long long)now - (long long)st.st_mtime;
	int parsed = claim_parse_id(text, id) == 0;

	struct claim_id self;
	claim_self(&self, 0);
	if (parsed && strcmp(id->host, self.host) == 0) {
		r = fsys_try_lock(path, 0, &fd, e);
		if (r == 0) {
			close(fd);
			return 1; /* nobody holds the lock: the holder has died */
		}
		if (r == 1 || r == 2)
			return r == 1 ? 0 : 2;
		if (errno != ENOLCK && errno != EOPNOTSUPP)
			return -1;
		/* No flock here (ENOLCK): fall back to the process table. */
		if (kill((pid_t)id->pid, 0) < 0 && errno == ESRCH)
			return 1;
		unsigned long long ps = proc_start(id->pid);
		return id->pstart && ps && ps != id->pstart;
	}
	long l = lease > 0 ? lease : parsed && id->lease > 0 ? id->lease : CLAIM_LEASE_DEFAULT;
	return *age > l;
}
