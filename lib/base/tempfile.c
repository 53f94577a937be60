/* tempfile.c: see tempfile.h. */
#include "base/tempfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"

/*
 * An entry's life: FREE (recyclable) -> BUSY (one thread fills or empties
 * it) -> ACTIVE (registered: the cleanup may remove it) -> BUSY -> FREE.
 * The cleanup takes an ACTIVE entry by moving it to REMOVING, so a thread
 * and a signal handler never both own one.
 */
enum { TF_FREE, TF_BUSY, TF_ACTIVE, TF_REMOVING };

struct tempfile {
	atomic_int state;
	pid_t owner;
	int fd;
	int is_dir;
	/* allocated while the entry is BUSY, freed when it goes back FREE: the
	 * cleanup reads path only of ACTIVE entries, and never target. Not
	 * arrays of PATH_MAX: a writer of 20,000 files at once (grpo-collect
	 * -m 1) held 160 MB of them. */
	char *path;
	char *target;
	struct tempfile *next;      /* the registry; entries are never unlinked */
};

static _Atomic(struct tempfile *) registry;
/* Hints that keep entry_get from walking the whole registry, which holds
 * every temporary alive at once (a grpo-pack step of 30,000 micro-batches):
 * how many entries may be FREE (never fewer than are), and where the last
 * search stopped. A stale hint costs a longer walk, never a wrong result. */
static atomic_long n_free;
static _Atomic(struct tempfile *) search_from;
static atomic_uint counter;
static atomic_int installed;

static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };

/* The entries of a directory, then the directory; async-signal-safe. */
static void remove_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		/* unlinking while reading can make getdents skip names: read
		 * again from the start until a pass removes nothing */
		for (int pass = 0, removed = 1; removed && pass < 64; pass++) {
			char buf[4096] __attribute__((aligned(8)));
			long n;
			removed = 0;
			lseek(fd, 0, SEEK_SET);
			while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
				for (long off = 0; off < n;) {
					/* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
					unsigned short reclen;
					memcpy(&reclen, buf + off + 16, sizeof reclen);
					const char *nm = buf + off + 19;
					if (!(nm[0] == '.' && (nm[1] == 0 || (nm[1] == '.' && nm[2] == 0))) &&
					    (unlinkat(fd, nm, 0) == 0 || unlinkat(fd, nm, AT_REMOVEDIR) == 0))
						removed = 1;
					off += reclen;
				}
			}
		}
		close(fd);
	}
	rmdir(path);
}

/* Remove one entry the caller has taken (BUSY or REMOVING). */
static void remove_entry(struct tempfile *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->is_dir)
		remove_dir(t->path);
	else
		unlink(t->path);
}

void tempfile_remove_all(void)
{
	pid_t me = getpid();
	for (struct tempfile *t = atomic_load(&registry); t; t = t->next) {
		int want = TF_ACTIVE;
		if (t->owner == me && atomic_compare_exchange_strong(&t->state, &want, TF_REMOVING))
			remove_entry(t);
	}
}

static void on_signal(int sig)
{
	int saved = errno;
	tempfile_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);   /* delivered with the default action once this handler returns */
	errno = saved;
}

static void on_exit_(void)
{
	tempfile_remove_all();
}

static void install(void)
{
	int was = 0;
	if (!atomic_compare_exchange_strong(&installed, &was, 1))
		return;
	atexit(on_exit_);
	for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
		struct sigaction old, sa;
		if (sigaction(signals[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;   /* ignored, or the program's own: leave it */
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t j = 0; j < sizeof signals / sizeof signals[0]; j++)
			sigaddset(&sa.sa_mask, signals[j]);
		sigaction(signals[i], &sa, NULL);
	}
}

/* A FREE entry taken as BUSY, recycled or new; NULL when out of memory. */
static struct tempfile *entry_get(void)
{
	install();
	/* from where the last search stopped to the end, then from the head */
	struct tempfile *from = atomic_load(&search_from);
	for (int pass = 0; pass < 2 && atomic_load(&n_free) > 0; pass++)
		for (struct tempfile *t = pass ? atomic_load(&registry) : from; t && (pass == 0 || t != from);
		     t = t->next) {
			int want = TF_FREE;
			if (atomic_compare_exchange_strong(&t->state, &want, TF_BUSY)) {
				atomic_fetch_sub(&n_free, 1);
				atomic_store(&search_from, t->next);
				return t;
			}
		}
	struct tempfile *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	atomic_init(&t->state, TF_BUSY);
	t->fd = -1;
	struct tempfile *old = atomic_load(&registry);
	do
		t->next = old;
	while (!atomic_compare_exchange_weak(&registry, &old, t));
	return t;
}

/* Take an ACTIVE entry back from the registry: 0, or -1 when the cleanup has it (the process is dying). */
static int entry_take(struct tempfile *t)
{
	int want = TF_ACTIVE;
	return atomic_compare_exchange_strong(&t->state, &want, TF_BUSY) ? 0 : -1;
}

static void entry_put(struct tempfile *t)
{
	t->fd = -1;
	free(t->path);
	free(t->target);
	t->path = t->target = NULL;
	atomic_fetch_add(&n_free, 1);   /* before: the count is never below the FREE entries */
	atomic_store(&t->state, TF_FREE);
}

/* dir of path ("." when none) into out. */
static void dir_of(const char *path, char *out, size_t size)
{
	snprintf(out, size, "%s", path);
	char *s = strrchr(out, '/');
	if (!s)
		snprintf(out, size, ".");
	else if (s == out)
		s[1] = 0;
	else
		*s = 0;
}

/* This host's name, with '/' and '.' (which would split a file name) as '_'. */
static void host_name(char host[64])
{
	strcpy(host, "localhost");
	gethostname(host, 63);
	host[63] = 0;
	for (char *p = host; *p; p++)
		if (*p == '/' || *p == '.')
			*p = '_';
}

void tempfile_unique_name(char *out, size_t size)
{
	char host[64];
	struct timespec ts;
	host_name(host);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, size, "%s.%ld.%lld%09ld.%u", host, (long)getpid(), (long long)ts.tv_sec, ts.tv_nsec,
		 atomic_fetch_add(&counter, 1));
}

/* path of the next candidate temporary for target (t BUSY). */
static int tmp_name(struct tempfile *t, const char *target, const char *tmpdir, struct err *e)
{
	char path[PATH_MAX];
	int n;
	if (tmpdir) {
		char uniq[128];
		tempfile_unique_name(uniq, sizeof uniq);
		n = snprintf(path, sizeof path, "%s/%s", tmpdir, uniq);
	} else {
		char dir[PATH_MAX], host[64];
		const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
		host_name(host);
		dir_of(target, dir, sizeof dir);
		n = snprintf(path, sizeof path, "%s/.%s.tmp.%s.%ld.%u", dir, base, host, (long)getpid(),
			     atomic_fetch_add(&counter, 1));
	}
	if (n < 0 || (size_t)n >= sizeof path)
		return err_set(e, "%s: path too long for a temporary", target);
	free(t->path);
	if (!(t->path = strdup(path)))
		return err_set(e, "%s: out of memory", target);
	return 0;
}

static struct tempfile *make(const char *target, const char *tmpdir, int is_dir, struct err *e)
{
	if (!target[0] || strlen(target) >= PATH_MAX || (target[strlen(target) - 1] == '/')) {
		err_set(e, "%s: not a file name to publish", target);
		return NULL;
	}
	if (tmpdir && fsys_mkdirs(tmpdir, e) < 0)
		return NULL;
	struct tempfile *t = entry_get();
	if (!t) {
		err_set(e, "%s: out of memory", target);
		return NULL;
	}
	if (!(t->target = strdup(target))) {
		err_set(e, "%s: out of memory", target);
		goto fail;
	}
	t->owner = getpid();
	t->is_dir = is_dir;
	t->fd = -1;
	for (int tries = 0; tries < 100; tries++) {
		if (tmp_name(t, target, tmpdir, e) < 0)
			goto fail;
		/* registered before it exists, so that no signal finds it created and unlisted */
		atomic_store(&t->state, TF_ACTIVE);
		int r;
		if (is_dir) {
			r = fsys_mkdir(t->path, e);
		} else {
			t->fd = fsys_open_excl(t->path, e);
			r = t->fd >= 0 ? 0 : errno == EEXIST ? 1 : -1;
		}
		if (r == 0)
			return t;
		if (entry_take(t) < 0)
			return NULL;
		if (r < 0)
			goto fail;
	}
	err_set(e, "%s: no unique temporary name", target);
fail:
	entry_put(t);
	return NULL;
}

struct tempfile *tempfile_create(const char *target, const char *tmpdir, struct err *e)
{
	return make(target, tmpdir, 0, e);
}

struct tempfile *tempfile_mkdir(const char *target, const char *tmpdir, struct err *e)
{
	return make(target, tmpdir, 1, e);
}

int tempfile_retarget(struct tempfile *t, const char *target, struct err *e)
{
	if (!target[0] || strlen(target) >= PATH_MAX || target[strlen(target) - 1] == '/')
		return err_set(e, "%s: not a file name to publish", target);
	char *nt = strdup(target);
	if (!nt)
		return err_set(e, "%s: out of memory", target);
	free(t->target);   /* the cleanup never reads target */
	t->target = nt;
	return 0;
}

int tempfile_fd(const struct tempfile *t)
{
	return t->fd;
}

const char *tempfile_path(const struct tempfile *t)
{
	return t->path;
}

int tempfile_close(struct tempfile *t, int flags, struct err *e)
{
	int sync = !(flags & TEMPFILE_NO_FSYNC);
	if (t->is_dir)
		return sync ? fsys_fsync_dir(t->path, e) : 0;
	if (t->fd < 0)
		return 0;
	if (sync && fsys_fsync(t->fd, t->path, e) < 0)
		return -1;
	int fd = t->fd;
	t->fd = -1;
	return fsys_close(fd, t->path, e);
}

void tempfile_delete(struct tempfile *t)
{
	if (!t || entry_take(t) < 0)
		return;
	remove_entry(t);
	entry_put(t);
}

/* Rename a closed temporary to its target; as tempfile_commit, without the fsync of the directory. */
static int rename_one(struct tempfile *t, int flags, struct err *e)
{
	int r = (flags & TEMPFILE_REPLACE) && !t->is_dir ? fsys_rename(t->path, t->target, e)
							  : fsys_rename_noreplace(t->path, t->target, e);
	if (r != 0) {
		tempfile_delete(t);
		return r;
	}
	if (entry_take(t) == 0)
		entry_put(t);
	return 0;
}

static int same_dir(const char *a, const char *b)
{
	char da[PATH_MAX], db[PATH_MAX];
	dir_of(a, da, sizeof da);
	dir_of(b, db, sizeof db);
	return strcmp(da, db) == 0;
}

static int sync_target_dir(const char *target, int flags, struct err *e)
{
	char dir[PATH_MAX];
	if (flags & TEMPFILE_NO_FSYNC)
		return 0;
	dir_of(target, dir, sizeof dir);
	return fsys_fsync_dir(dir, e);
}

int tempfile_commit(struct tempfile *t, int flags, struct err *e)
{
	char target[PATH_MAX];
	if (tempfile_close(t, flags, e) < 0) {
		tempfile_delete(t);
		return -1;
	}
	snprintf(target, sizeof target, "%s", t->target);
	int r = rename_one(t, flags, e);
	if (r != 0)
		return r;
	return sync_target_dir(target, flags, e);   /* renamed; an error says it may not be durable */
}

int tempfile_commit_set(struct tempfile **t, size_t n, int flags, size_t *existed, struct err *e)
{
	size_t had = 0;
	int rc = 0;
	if (existed)
		*existed = 0;
	for (size_t i = 0; i < n; i++)
		if (tempfile_close(t[i], flags, e) < 0) {
			for (size_t j = 0; j < n; j++)
				tempfile_delete(t[j]);
			return -1;
		}
	int pending = 0, sync_failed = 0;
	for (size_t i = 0; i < n; i++) {
		char target[PATH_MAX];
		snprintf(target, sizeof target, "%s", t[i]->target);
		int last_in_dir = i + 1 == n || !same_dir(target, t[i + 1]->target);
		if (rc < 0) {
			tempfile_delete(t[i]);
			continue;
		}
		int r = rename_one(t[i], flags, e);
		if (r < 0)
			rc = -1;
		had += r == 1;
		pending |= r == 0;
		/* each directory made durable once, after its last rename of the set */
		if (pending && last_in_dir) {
			pending = 0;
			if (!sync_failed && sync_target_dir(target, flags, e) < 0)
				sync_failed = 1;
		}
	}
	if (sync_failed)
		rc = -1;
	if (existed)
		*existed = had;
	return rc < 0 ? -1 : had ? 1 : 0;
}

int tempfile_write(const char *target, const char *tmpdir, const void *p, size_t n, int flags,
		   struct err *e)
{
	struct tempfile *t = tempfile_create(target, tmpdir, e);
	if (!t)
		return -1;
	if (fsys_write_all(t->fd, p, n, t->path, e) < 0) {
		tempfile_delete(t);
		return -1;
	}
	return tempfile_commit(t, flags, e);
}
