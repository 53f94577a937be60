/*
 * fsys.h: the one way in for every file system call the spool makes.
 *
 * Publishing, claiming and recovery call these wrappers rather than the
 * system directly (SQLite's OS layer), for two reasons: every failure comes
 * back as a message naming the path, and a test can stop the process between
 * any two calls. With GRPO_FSYS_CRASH_AT=N in the environment, the Nth call
 * (counting from 1) calls _exit(GRPO_FSYS_CRASH_STATUS) before doing
 * anything, as a power cut or kill -9 would (with GRPO_FSYS_CRASH_SIGNAL=S
 * as well, it raises signal S there instead, as kill -S would, so a test can
 * see what a process's handlers leave behind; with SIGSTOP the process is
 * held there and goes on, doing the call, once continued, so a test can run
 * another process at that point); GRPO_FSYS_TRACE=1 prints each
 * call's number and name on standard error, so a test can count them.
 * fsys_test_crash_at() does the same from inside a test process (after a
 * fork, say), restarting the count.
 * With GRPO_FSYS_FAIL_AT=N[:ENOSPC|:EIO], the Nth call does nothing and
 * fails with that errno (ENOSPC when not named), as a full disk or a bad
 * disk would fail it, and every other call runs: so a test can walk a
 * tool's error paths one call at a time, then run it again as an operator
 * would once space is freed. fsys_test_fail_at() is its in-process twin.
 * The count is the process's, kept atomically, so threads may call the
 * wrappers at once; which call is the Nth then depends on their timing, so
 * a tool run with GRPO_FSYS_CRASH_AT or GRPO_FSYS_TRACE set does its file
 * system calls from one thread (grpo-pack's publishing does).
 *
 * Deliberately outside fsys, because a crash before or after them leaves
 * the same spool, or because they change nothing on disk:
 *  - the unlink(2) and close(2) of a temporary abandoned on an error path
 *    (spool_abort, a failed claim or archive), and close(2) of descriptors
 *    that were only read or locked: the temporary lies in QUEUE/.tmp (or is
 *    a dot-name in the archive directory), where no reader looks, and a
 *    crash that skips its removal leaves it to recover (or the next gc);
 *  - libarchive's writes into an archive temporary (archive_write_*): the
 *    file is published only by the fsys_fsync, fsys_close and fsys_rename
 *    that follow, so a crash inside libarchive is a crash before those,
 *    which the tests cover;
 *  - inotify (init, add and remove watches, read events): nothing on disk,
 *    and watch.h takes events as hints, listing the directories for the
 *    truth;
 *  - statfs(2) in fsys_is_remote, /proc/PID/stat for a process's start
 *    time, and the fcntl(2) by which grpo-spool consume lets its command
 *    inherit a claim's lock: reads, or state of this process only.
 * Within one wrapper, fsys_rename_noreplace's link(2) + unlink(2) fallback
 * counts as one call: a crash between them leaves the temporary under its
 * old name too, which recover removes by age.
 *
 * Return conventions: -1 is an error with the message in e and errno kept;
 * where "absent" or "exists" is an expected outcome rather than an error
 * (a consumer lost a race, a directory was removed by gc), the wrapper
 * returns 1 for it, as documented beside each.
 */
#ifndef GRPO_FSYS_H
#define GRPO_FSYS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/err.h"

#define GRPO_FSYS_CRASH_STATUS 86

int fsys_open_excl(const char *path, struct err *e);             /* new file, 0666 less the umask; fd or -1 */
int fsys_open_read(const char *path, struct err *e);             /* fd or -1 */
int fsys_write_all(int fd, const void *p, size_t n, const char *path, struct err *e);
int fsys_fsync(int fd, const char *path, struct err *e);
int fsys_close(int fd, const char *path, struct err *e);
int fsys_fsync_dir(const char *dir, struct err *e);
/* A new file at path holding p[0..n), written whole and fsynced. */
int fsys_write_new(const char *path, const void *p, size_t n, struct err *e);
/* mkdir -p; each directory it creates is made durable in its parent. */
int fsys_mkdirs(const char *dir, struct err *e);
/* rename that never replaces: 0 done, 1 `to` already exists (nothing moved), -1 error. */
int fsys_rename_noreplace(const char *from, const char *to, struct err *e);
int fsys_rename(const char *from, const char *to, struct err *e); /* may replace */
int fsys_unlink(const char *path, struct err *e);

int fsys_rmdir(const char *path, struct err *e);
/* One directory, parent must exist: 0 made, 1 already there, -1 error (errno ENOENT: no parent). */
int fsys_mkdir(const char *path, struct err *e);
/* stat(2): 0 found, 1 absent, -1 error. */
int fsys_stat(const char *path, struct stat *st, struct err *e);
int fsys_fstat(int fd, struct stat *st, const char *path, struct err *e);
/* read(2) once, retrying EINTR: bytes read (0 at end), or -1. */
ssize_t fsys_read(int fd, void *p, size_t n, const char *path, struct err *e);
/* Set the file's times to now (renews a claim's lease). */
int fsys_touch(int fd, const char *path, struct err *e);

/*
 * Directory listings. Names come back sorted by strcmp, without "." and
 * "..", filtered by kind; the caller frees them with fsys_free_names.
 * Returns 0, 1 when the directory does not exist (n = 0), or -1.
 */
enum { FSYS_ANY, FSYS_FILES, FSYS_DIRS };
int fsys_list_dir(const char *dir, int kind, char ***names, size_t *n, struct err *e);
void fsys_free_names(char **names, size_t n);
/* Drop (and free) the names that begin with '.', keeping the others' order. */
void fsys_drop_hidden(char **names, size_t *n);

/*
 * Locks, flock(2) style: the kernel drops them when the holder dies, which
 * is how a claim's holder is known to be alive on this host.
 * fsys_create_locked: new file (O_EXCL), read-write, locked where the file
 * system has locks (ENOLCK: left unlocked); fd or -1.
 * fsys_try_lock: lock an existing file without waiting (creating it when
 * create is set): 0 locked (fd in *fd), 1 someone holds it, 2 absent, -1 error.
 * fsys_lock_wait: lock the file (created when absent), waiting for its
 * holder: 0 locked, 1 left unlocked because the file system has no locks
 * (ENOLCK), -1 error; the lock goes with close(*fd).
 */
int fsys_create_locked(const char *path, struct err *e);
int fsys_try_lock(const char *path, int create, int *fd, struct err *e);
int fsys_lock_wait(const char *path, int *fd, struct err *e);

/*
 * 1 when dir is on a file system whose changes inotify may not see: NFS,
 * SMB/CIFS, Lustre, GPFS, CephFS, 9p, AFS (other hosts' changes never reach
 * this kernel) and FUSE (changes made behind the kernel's back). Test hook:
 * GRPO_FSYS_REMOTE=1 in the environment makes every directory remote, =0
 * none.
 */
int fsys_is_remote(const char *dir);

/* The crash-injection point every wrapper passes through; exported for tests. */
void fsys_step(const char *what);
/* Crash at call n (0: never) counting from now; for tests that fork. */
void fsys_test_crash_at(long n);
/* Fail call n (0: never) with errnum, counting from now; for tests. */
void fsys_test_fail_at(long n, int errnum);
/* Calls made so far (since start or the last fsys_test_crash_at). */
long fsys_calls_made(void);

#endif
