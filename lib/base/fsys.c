/* fsys.c: see fsys.h. */
#include "base/fsys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/*
 * Files and directories are created as cp and mkdir create them, with all
 * the permissions the umask leaves: with umask 002 a group shares a spool
 * (another member's consumer claims by rename in its directories and takes
 * its locks), with 077 it is private.
 */
#define NEW_FILE_MODE 0666
#define NEW_DIR_MODE 0777

/*
 * The count is shared by every thread of the process (grpo-pack publishes
 * from several), so it is atomic, and the environment is read once.
 */
static atomic_long fsys_calls;
static atomic_long crash_at;
static atomic_long fail_at;
static atomic_int fail_errno;
static atomic_int trace;
static atomic_int crash_signal;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
	const char *s = getenv("GRPO_FSYS_CRASH_AT");
	atomic_store(&crash_at, s ? atol(s) : 0);
	s = getenv("GRPO_FSYS_TRACE");
	atomic_store(&trace, s && *s && *s != '0');
	s = getenv("GRPO_FSYS_CRASH_SIGNAL");
	atomic_store(&crash_signal, s ? atoi(s) : 0);
	s = getenv("GRPO_FSYS_FAIL_AT");
	atomic_store(&fail_at, s ? atol(s) : 0);
	const char *colon = s ? strchr(s, ':') : NULL;
	atomic_store(&fail_errno, colon && strcmp(colon + 1, "EIO") == 0 ? EIO : ENOSPC);
}

void fsys_test_crash_at(long n)
{
	pthread_once(&env_once, read_env);
	atomic_store(&crash_at, n);
	atomic_store(&fsys_calls, 0);
}

long fsys_calls_made(void)
{
	return atomic_load(&fsys_calls);
}

void fsys_test_fail_at(long n, int errnum)
{
	pthread_once(&env_once, read_env);
	atomic_store(&fail_at, n);
	atomic_store(&fail_errno, errnum);
	atomic_store(&fsys_calls, 0);
}

/* The call's number: where the crash hook stops the process. */
static long count_call(const char *what)
{
	pthread_once(&env_once, read_env);
	if (!what)
		return 0;
	long n = atomic_fetch_add(&fsys_calls, 1) + 1;
	if (atomic_load(&trace))
		fprintf(stderr, "fsys %ld %s\n", n, what);
	long at = atomic_load(&crash_at);
	if (at > 0 && n == at) {
		int sig = atomic_load(&crash_signal);
		if (sig > 0)
			raise(sig);   /* as a kill(1) would; exits if it kills */
		if (sig == SIGSTOP)
			return n;   /* held here until SIGCONT, then on as if never stopped */
		_exit(GRPO_FSYS_CRASH_STATUS);
	}
	return n;
}

void fsys_step(const char *what)
{
	count_call(what);
}

/*
 * Every wrapper begins here: -1 with errno set when the fault hook fails
 * this call, so the wrapper takes its own error path as if the system had.
 */
static int step(const char *what)
{
	long n = count_call(what);
	if (n > 0 && n == atomic_load(&fail_at)) {
		errno = atomic_load(&fail_errno);
		return -1;
	}
	return 0;
}

int fsys_open_excl(const char *path, struct err *e)
{
	int fd = step("open_excl") < 0 ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, NEW_FILE_MODE);
	if (fd < 0)
		return err_sys(e, "%s: cannot create", path);
	return fd;
}

int fsys_open_read(const char *path, struct err *e)
{
	int fd = step("open_read") < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, "%s", path);
	return fd;
}

int fsys_write_all(int fd, const void *p, size_t n, const char *path, struct err *e)
{
	if (step("write") < 0)
		return err_sys(e, "%s: write failed", path);
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
	/* EINVAL: the file is a pipe or a special file, which cannot be synced. */
	if ((step("fsync") < 0 || fsync(fd) < 0) && errno != EINVAL)
		return err_sys(e, "%s: fsync failed", path);
	return 0;
}

int fsys_close(int fd, const char *path, struct err *e)
{
	/* NFS reports write errors at close, so its result matters; the
	 * descriptor is released whatever close(2) says. */
	int injected = step("close") < 0 ? errno : 0;
	if (close(fd) < 0 || injected) {
		if (injected)
			errno = injected;
		return err_sys(e, "%s: close failed", path);
	}
	return 0;
}

int fsys_write_new(const char *path, const void *p, size_t n, struct err *e)
{
	int fd = fsys_open_excl(path, e);
	if (fd < 0)
		return -1;
	if (fsys_write_all(fd, p, n, path, e) < 0 || fsys_fsync(fd, path, e) < 0) {
		fsys_close(fd, path, NULL);
		return -1;
	}
	return fsys_close(fd, path, e);
}

int fsys_fsync_dir(const char *dir, struct err *e)
{
	int injected = step("fsync_dir") < 0 ? errno : 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, "%s: cannot open directory", dir);
	int r = injected ? (errno = injected, -1) : fsync(fd);
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
	/* Another process may remove the parent, empty, between its making
	 * here and the mkdir below (grpo-step's rank 0 removes .grad after a
	 * step while rank 1 makes .grad/step_N for the next): make it again,
	 * as mkdir -p does, a few times before giving up. */
	for (int tries = 1;; tries++) {
		if (slash && slash != path) {
			*slash = '\0';
			if (fsys_mkdirs(path, e) < 0)
				return -1;
			*slash = '/';
		}
		if ((step("mkdir") == 0 && mkdir(dir, NEW_DIR_MODE) == 0) || errno == EEXIST)
			break;
		if (errno != ENOENT || tries == 8)
			return err_sys(e, "%s: cannot create directory", dir);
	}
	if (slash && slash != path) {
		*slash = '\0';
		return fsys_fsync_dir(path, e);
	}
	return fsys_fsync_dir(".", e);
}

int fsys_rename_noreplace(const char *from, const char *to, struct err *e)
{
	if (step("rename_noreplace") < 0)
		return err_sys(e, "%s: cannot rename to %s", from, to);
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
	if (step("rename") < 0 || rename(from, to) < 0)
		return err_sys(e, "%s: cannot rename to %s", from, to);
	return 0;
}

int fsys_unlink(const char *path, struct err *e)
{
	if ((step("unlink") < 0 || unlink(path) < 0) && errno != ENOENT)
		return err_sys(e, "%s: cannot remove", path);
	return 0;
}

int fsys_rmdir(const char *path, struct err *e)
{
	if ((step("rmdir") < 0 || rmdir(path) < 0) && errno != ENOENT)
		return err_sys(e, "%s: cannot remove directory", path);
	return 0;
}

int fsys_mkdir(const char *path, struct err *e)
{
	if (step("mkdir") == 0 && mkdir(path, NEW_DIR_MODE) == 0)
		return 0;
	if (errno == EEXIST)
		return 1;
	return err_sys(e, "%s: cannot create directory", path);
}

int fsys_stat(const char *path, struct stat *st, struct err *e)
{
	if (step("stat") == 0 && stat(path, st) == 0)
		return 0;
	if (errno == ENOENT || errno == ENOTDIR)
		return 1;
	return err_sys(e, "%s", path);
}

int fsys_fstat(int fd, struct stat *st, const char *path, struct err *e)
{
	if (step("fstat") < 0 || fstat(fd, st) < 0)
		return err_sys(e, "%s", path);
	return 0;
}

ssize_t fsys_read(int fd, void *p, size_t n, const char *path, struct err *e)
{
	if (step("read") < 0)
		return err_sys(e, "%s: read failed", path);
	for (;;) {
		ssize_t r = read(fd, p, n);
		if (r >= 0)
			return r;
		if (errno != EINTR)
			return err_sys(e, "%s: read failed", path);
	}
}

int fsys_touch(int fd, const char *path, struct err *e)
{
	if (step("touch") < 0 || futimens(fd, NULL) < 0)
		return err_sys(e, "%s: cannot set times", path);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void fsys_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void fsys_drop_hidden(char **names, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		if (names[i][0] == '.')
			free(names[i]);
		else
			names[k++] = names[i];
	}
	*n = k;
}

int fsys_list_dir(const char *dir, int kind, char ***names, size_t *n, struct err *e)
{
	*names = NULL;
	*n = 0;
	DIR *d = step("list_dir") < 0 ? NULL : opendir(dir);
	if (!d) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 1;
		return err_sys(e, "%s: cannot open directory", dir);
	}
	char **v = NULL;
	size_t len = 0, cap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		const char *nm = de->d_name;
		if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0')))
			continue;
		if (kind != FSYS_ANY) {
			int isdir;
			if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK) {
				isdir = de->d_type == DT_DIR;
			} else {
				struct stat st;
				if (fstatat(dirfd(d), nm, &st, 0) < 0)
					continue; /* gone meanwhile */
				isdir = S_ISDIR(st.st_mode);
			}
			if (isdir != (kind == FSYS_DIRS))
				continue;
		}
		if (len == cap) {
			size_t nc = cap ? 2 * cap : 16;
			char **nv = realloc(v, nc * sizeof *nv);
			if (!nv)
				goto nomem;
			v = nv;
			cap = nc;
		}
		if (!(v[len] = strdup(nm)))
			goto nomem;
		len++;
		errno = 0;
	}
	if (errno) {
		err_sys(e, "%s: cannot read directory", dir);
		closedir(d);
		fsys_free_names(v, len);
		return -1;
	}
	closedir(d);
	if (len > 1)
		qsort(v, len, sizeof *v, cmp_names);
	*names = v;
	*n = len;
	return 0;
nomem:
	closedir(d);
	fsys_free_names(v, len);
	return err_set(e, "%s: out of memory listing directory", dir);
}

int fsys_create_locked(const char *path, struct err *e)
{
	int fd = step("create_locked") < 0 ? -1 : open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, NEW_FILE_MODE);
	if (fd < 0)
		return err_sys(e, "%s: cannot create", path);
	/* No locks on this file system (NFS mounted nolock): the file stays
	 * unlocked, and its holder's liveness is judged otherwise. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno != ENOLCK && errno != EOPNOTSUPP) {
		err_sys(e, "%s: cannot lock", path);
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

int fsys_try_lock(const char *path, int create, int *fd, struct err *e)
{
	*fd = step("try_lock") < 0 ? -1 : open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), NEW_FILE_MODE);
	if (*fd < 0) {
		if (errno == ENOENT && !create)
			return 2;
		return err_sys(e, "%s: cannot open", path);
	}
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	int saved = errno;
	close(*fd);
	*fd = -1;
	errno = saved;
	if (errno == EWOULDBLOCK)
		return 1;
	return err_sys(e, "%s: cannot lock", path);
}

int fsys_lock_wait(const char *path, int *fd, struct err *e)
{
	*fd = step("lock_wait") < 0 ? -1 : open(path, O_RDWR | O_CLOEXEC | O_CREAT, NEW_FILE_MODE);
	if (*fd < 0)
		return err_sys(e, "%s: cannot open", path);
	int r;
	while ((r = flock(*fd, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return 0;
	if (errno == ENOLCK || errno == EOPNOTSUPP)
		return 1;
	err_sys(e, "%s: cannot lock", path);
	close(*fd);
	*fd = -1;
	return -1;
}

int fsys_is_remote(const char *dir)
{
	const char *t = getenv("GRPO_FSYS_REMOTE");
	if (t && *t)
		return *t != '0';
	struct statfs sf;
	if (statfs(dir, &sf) < 0)
		return 0;
	/* Network and cluster file systems, where other hosts' changes never
	 * reach this kernel's inotify, and FUSE, whose changes may be made
	 * behind the kernel's back (sshfs, s3fs, gcsfuse). */
	switch ((unsigned long)sf.f_type) {
	case 0x6969UL:      /* NFS_SUPER_MAGIC */
	case 0xFF534D42UL:  /* CIFS_MAGIC_NUMBER */
	case 0xFE534D42UL:  /* SMB2_MAGIC_NUMBER */
	case 0x517BUL:      /* SMB_SUPER_MAGIC */
	case 0x0BD00BD0UL:  /* LL_SUPER_MAGIC: Lustre */
	case 0x47504653UL:  /* GPFS_SUPER_MAGIC: IBM Spectrum Scale */
	case 0x00C36400UL:  /* CEPH_SUPER_MAGIC */
	case 0x65735546UL:  /* FUSE_SUPER_MAGIC */
	case 0x01021997UL:  /* V9FS_MAGIC: 9p (virtio shares, WSL) */
	case 0x5346414FUL:  /* AFS_SUPER_MAGIC: OpenAFS */
	case 0x6B414653UL:  /* AFS_FS_MAGIC: kAFS */
		return 1;
	}
	return 0;
}
