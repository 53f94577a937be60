/* spool.c: see spool.h. */
#include "spool.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsys.h"

int spool_step_dir(char *out, size_t size, const char *queue, int64_t step, int rank)
{
	int n = snprintf(out, size, "%s/step_%lld/rank_%d", queue, (long long)step, rank);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* host.pid.nanoseconds.counter: unique across processes and hosts sharing the spool. */
static void unique_name(char *out, size_t size)
{
	static unsigned counter;
	char host[64] = "localhost";
	gethostname(host, sizeof host - 1);
	for (char *p = host; *p; p++)
		if (*p == '/' || *p == '.')
			*p = '_';
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, size, "%s.%ld.%lld%09ld.%u", host, (long)getpid(), (long long)ts.tv_sec,
		 ts.tv_nsec, counter++);
}

int spool_open(struct spool_out *o, const char *queue, int64_t step, int rank,
	       const char *name, struct err *e)
{
	char tmpdir[PATH_MAX], uniq[160];
	memset(o, 0, sizeof *o);
	o->fd = -1;
	if (strchr(name, '/') || name[0] == '.' || name[0] == '\0')
		return err_set(e, "%s: not a valid spool file name", name);
	if (spool_step_dir(o->dir, sizeof o->dir, queue, step, rank) < 0 ||
	    snprintf(o->final_path, sizeof o->final_path, "%s/%s", o->dir, name) >= (int)sizeof o->final_path ||
	    snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue) >= (int)sizeof tmpdir)
		return err_set(e, "%s: path too long", queue);
	if (fsys_mkdirs(tmpdir, e) < 0)
		return -1;
	unique_name(uniq, sizeof uniq);
	if (snprintf(o->tmp_path, sizeof o->tmp_path, "%s/%s", tmpdir, uniq) >= (int)sizeof o->tmp_path)
		return err_set(e, "%s: path too long", tmpdir);
	o->fd = fsys_open_excl(o->tmp_path, e);
	return o->fd < 0 ? -1 : 0;
}

int spool_write(struct spool_out *o, const void *p, size_t n, struct err *e)
{
	return fsys_write_all(o->fd, p, n, o->tmp_path, e);
}

int spool_commit(struct spool_out *o, struct err *e)
{
	if (!o->no_fsync && fsys_fsync(o->fd, o->tmp_path, e) < 0)
		goto fail;
	int fd = o->fd;
	o->fd = -1;
	if (fsys_close(fd, o->tmp_path, e) < 0 || fsys_mkdirs(o->dir, e) < 0)
		goto fail;
	int r = fsys_rename_noreplace(o->tmp_path, o->final_path, e);
	if (r < 0)
		goto fail;
	if (r == 1) {
		fsys_unlink(o->tmp_path, NULL);
		return 1;
	}
	if (!o->no_fsync && fsys_fsync_dir(o->dir, e) < 0)
		return -1; /* renamed, but not known to be durable: report it */
	return 0;
fail:
	spool_abort(o);
	return -1;
}

void spool_abort(struct spool_out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp_path[0])
		unlink(o->tmp_path);
}
