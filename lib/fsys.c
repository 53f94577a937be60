/* fsys.c: see fsys.h. */
#include "fsys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long fsys_calls;

void fsys_step(const char *what)
{
	static long crash_at = -1;
	static int trace = -1;
	if (crash_at < 0) {
		const char *s = getenv("GRPO_FSYS_CRASH_AT");
		crash_at = s ? atol(s) : 0;
		s = getenv("GRPO_FSYS_TRACE");
		trace = s && *s && *s != '0';
	}
	fsys_calls++;
	if (trace)
		fprintf(stderr, "fsys %ld %s\n", fsys_calls, what);
	if (crash_at > 0 && fsys_calls == crash_at)
		_exit(GRPO_FSYS_CRASH_STATUS);
}

int fsys_open_excl(const char *path, struct err *e)
{
	fsys_step("open_excl");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, "%s: cannot create", path);
	return fd;
}

int fsys_open_read(const char *path, struct err *e)
{
	fsys_step("open_read");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, "%s", path);
	return fd;
}

int fsys_write_all(int fd, const void *p, size_t n, const char *path, struct err *e)
{
	fsys_step("write");
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return err_sys(e, "%s: write failed", path);
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int fsys_fsync(int fd, const char *path, struct err *e)
{
	fsys_step("fsync");
	/* EINVAL: the file is a pipe or a special file, which cannot be synced. */
	if (fsync(fd) < 0 && errno != EINVAL)
		return err_sys(e, "%s: fsync failed", path);
	return 0;
}

int fsys_close(int fd, const char *path, struct err *e)
{
	fsys_step("close");
	/* NFS reports write errors at close, so its result matters. */
	if (close(fd) < 0)
		return err_sys(e, "%s: close failed", path);
	return 0;
}

int fsys_fsync_dir(const char *dir, struct err *e)
{
	fsys_step("fsync_dir");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, "%s: cannot open directory", dir);
	int r = fsync(fd);
	int saved = errno;
	close(fd);
	errno = saved;
	if (r < 0 && errno != EINVAL)
		return err_sys(e, "%s: fsync failed", dir);
	return 0;
}

int fsys_mkdirs(const char *dir, struct err *e)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
		return err_set(e, "%s: path too long", dir);
	struct stat st;
	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : err_set(e, "%s: not a directory", dir);
	char *slash = strrchr(path, '/');
	while (slash && slash > path && slash[-1] == '/')
		slash--;
	if (slash && slash != path) {
		*slash = '\0';
		if (fsys_mkdirs(path, e) < 0)
			return -1;
		*slash = '/';
	}
	fsys_step("mkdir");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_sys(e, "%s: cannot create directory", dir);
	if (slash && slash != path) {
		*slash = '\0';
		return fsys_fsync_dir(path, e);
	}
	return fsys_fsync_dir(".", e);
}

int fsys_rename_noreplace(const char *from, const char *to, struct err *e)
{
	fsys_step("rename_noreplace");
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST)
		return 1;
	if (errno != EINVAL && errno != ENOSYS)
		return err_sys(e, "%s: cannot rename to %s", from, to);
	/* The file system has no RENAME_NOREPLACE (NFS): link + unlink, as qmail does. */
	if (link(from, to) < 0) {
		if (errno == EEXIST)
			return 1;
		return err_sys(e, "%s: cannot link to %s", from, to);
	}
	if (unlink(from) < 0)
		return err_sys(e, "%s: cannot remove after linking", from);
	return 0;
}

int fsys_rename(const char *from, const char *to, struct err *e)
{
	fsys_step("rename");
	if (rename(from, to) < 0)
		return err_sys(e, "%s: cannot rename to %s", from, to);
	return 0;
}

int fsys_unlink(const char *path, struct err *e)
{
	fsys_step("unlink");
	if (unlink(path) < 0 && errno != ENOENT)
		return err_sys(e, "%s: cannot remove", path);
	return 0;
}
