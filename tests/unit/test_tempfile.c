/*
 * test_tempfile: temporaries are published by rename or removed, never left
 * behind: at commit, delete, exit, and when SIGTERM, SIGINT or SIGHUP kills
 * the process; an ignored signal stays ignored; a forked child does not
 * remove its parent's temporaries; a set is published all together; a
 * commit that a full disk fails (fsys's fault hook) leaves no temporary.
 * Tens of thousands held at once take little memory each. Every file
 * system call of a commit (with and without fsync), of tempfile_write and
 * of a set across two directories fails in turn: -1 with ENOSPC kept and
 * the path named, no temporary left, only what was renamed before
 * published. Entries are recycled; odd names, retarget, too-long paths.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <malloc.h>

#include "base/fsys.h"
#include "base/tempfile.h"
#include "spool/spool.h"
#include "../tap.h"

static char top[256];

static double user_seconds(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6;
}

/* Bytes allocated (glibc's heap and its mmap'ed blocks); 0 where malloc
 * is not glibc's (a sanitizer's). */
static size_t heap_used(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

/* 30,000 temporaries alive at once (the micro-batches of a big step, or
 * the parts of a big import, all written before any is published), twice:
 * each new one looked at every registered entry for a free one, 10^9
 * steps over memory 8 KiB apart; they take seconds now. User time only:
 * what the file system takes to make the files is not the point. */
static void many(const char *dir)
{
	enum { N = 30000 };
	static struct tempfile *t[N];
	struct err e;
	char target[600];
	int made = 0;
	size_t heap0 = heap_used(), held = 0;
	double t0 = user_seconds();
	for (int round = 0; round < 2; round++) {
		int n = 0;
		for (; n < N; n++) {
			snprintf(target, sizeof target, "%s/f%d", dir, n);
			if (!(t[n] = tempfile_create(target, dir, &e)) || tempfile_close(t[n], TEMPFILE_NO_FSYNC, &e) < 0)
				break;
		}
		if (round == 0)
			held = heap_used() - heap0;
		made += n;
		for (int i = 0; i < n; i++)
			tempfile_delete(t[i]);
	}
	double sec = user_seconds() - t0;
	ok(made == 2 * N && strlen(dir_names(dir)) == 0, "%d temporaries made and removed, twice", N);
	/* each held two paths of PATH_MAX: 30,000 took 240 MB */
	if (!heap0)
		skip("no glibc heap to count (a sanitizer's allocator)");
	else
		ok(held < (size_t)N * 512, "%d held at once take %zu bytes of heap, %zu each", N, held, held / N);
	/* said, not asserted (a time bound fails on a slow machine) */
	diag("in %.2f s of user CPU", sec);
}

/* A set of 20,000 spool files written before any is published (grpo-collect
 * -m 1): each spool_out and its temporary held 4 paths of PATH_MAX, 18 KB a
 * file, 340 MB for the set. */
static void spool_set(const char *queue)
{
	enum { N = 20000 };
	size_t heap0 = heap_used(), held = 0;
	struct spool_out *so = calloc(N, sizeof *so);
	struct err e;
	int n = 0, published = 0;
	for (; so && n < N; n++) {
		char name[32];
		snprintf(name, sizeof name, "part-%05d.zst", n);
		if (spool_open(&so[n], queue, 3, 1, name, &e) < 0)
			break;
		so[n].no_fsync = 1;
		if (spool_write(&so[n], name, strlen(name), &e) < 0 || spool_finish_write(&so[n], &e) < 0)
			break;
	}
	held = heap_used() - heap0;
	for (int i = 0; i < n; i++)
		published += spool_commit(&so[i], &e) == 0;
	char last[PATH_MAX], want[PATH_MAX];
	snprintf(want, sizeof want, "%s/step_3/rank_1/part-%05d.zst", queue, N - 1);
	ok(n == N && published == N && !strcmp(so ? spool_out_path(&so[N - 1], last, sizeof last) : "", want),
	   "%d spool files written, then published (the last %s)", published, so ? last : "");
	if (!heap0)
		skip("no glibc heap to count (a sanitizer's allocator)");
	else
		ok(held < (size_t)N * 1024, "a set of %d held %zu bytes of heap, %zu a file", N, held, held / N);
	free(so);
}

static void path(char *out, const char *name)
{
	snprintf(out, 512, "%s/%s", top, name);
}

static struct tempfile *file_with(const char *target, const char *tmpdir, const char *text)
{
	struct err e;
	struct tempfile *t = tempfile_create(target, tmpdir, &e);
	if (!t || write(tempfile_fd(t), text, strlen(text)) != (ssize_t)strlen(text)) {
		printf("Bail out! %s: %s\n", target, t ? "write" : e.msg);
		exit(1);
	}
	return t;
}

/* A child that registers temporaries of every kind, then waits for a signal. */
static pid_t child_with_temporaries(const char *dir, int ignore_hup, int *ready)
{
	int p[2];
	if (pipe(p) < 0)
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		char t[512], d[512], q[512], f[600];
		struct err e;
		if (ignore_hup)
			signal(SIGHUP, SIG_IGN);
		snprintf(t, sizeof t, "%s/out.zst", dir);
		snprintf(d, sizeof d, "%s/model", dir);
		snprintf(q, sizeof q, "%s/.tmp", dir);
		file_with(t, NULL, "partial");
		file_with(t, q, "partial");
		struct tempfile *m = tempfile_mkdir(d, NULL, &e);
		for (int i = 0; m && i < 3; i++) {
			snprintf(f, sizeof f, "%s/part%d", tempfile_path(m), i);
			FILE *fp = fopen(f, "w");
			if (fp)
				fclose(fp);
		}
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	*ready = read(p[0], &c, 1) == 1;
	close(p[0]);
	return pid;
}

static void signal_case(int sig, const char *name)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/sig%d", top, sig);
	mkdir(dir, 0755);
	int ready;
	pid_t pid = child_with_temporaries(dir, 0, &ready);
	ok(ready && strchr(dir_names(dir), ' ') != NULL,
	   "%s: the child made its temporaries: %s", name, dir_names(dir));
	kill(pid, sig);
	int st;
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == sig, "%s: the child still dies of the signal", name);
	is_int(strcmp(dir_names(dir), ".tmp"), 0, "%s: nothing is left but the empty .tmp: '%s'", name, dir_names(dir));
	char q[600];
	snprintf(q, sizeof q, "%s/.tmp", dir);
	is_int(strlen(dir_names(q)), 0, "%s: .tmp is empty", name);
}

/*
 * A temporary directory removed whatever its entries are called: dot names
 * that look like "." or ".." but are not ("..a", "..\001"), an empty
 * subdirectory, and more names than one getdents(2) read returns.
 */
static void odd_names(void)
{
	char d[512], f[900];
	struct err e;
	path(d, "odd");
	struct tempfile *t = tempfile_mkdir(d, NULL, &e);
	if (!t) {
		printf("Bail out! %s\n", e.msg);
		exit(1);
	}
	const char *names[] = { "..a", "..\001", ".b", "c" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		shell("touch '%s/%s'", tempfile_path(t), names[i]);
	snprintf(f, sizeof f, "%s/sub", tempfile_path(t));
	mkdir(f, 0755);
	for (int i = 0; i < 300; i++)
		shell("touch '%s/a-name-long-enough-that-300-fill-several-reads-of-the-directory-%03d'",
		      tempfile_path(t), i);
	tempfile_delete(t);
	ok(strstr(dir_names(top), ".odd") == NULL, "a directory of dot names, a subdirectory and 300 files is removed: '%s'",
	   dir_names(top));
}

/* The file system calls of a commit, in order: the fault hook fails each in
 * turn; with TEMPFILE_NO_FSYNC neither the file nor its directory is flushed. */
static void commit_calls(void)
{
	char dir[512], target[600];
	struct err e = { 0 };
	path(dir, "calls");
	mkdir(dir, 0755);
	snprintf(target, sizeof target, "%s/x", dir);
	struct tempfile *t = file_with(target, NULL, "x");
	fsys_test_fail_at(0, 0);
	is_int(tempfile_commit(t, 0, &e), 0, "a commit publishes");
	is_int(fsys_calls_made(), 4, "with four calls: fsync, close, rename, fsync of the directory");
	unlink(target);
	t = file_with(target, NULL, "x");
	fsys_test_fail_at(0, 0);
	is_int(tempfile_commit(t, TEMPFILE_NO_FSYNC, &e), 0, "a commit without fsync publishes");
	is_int(fsys_calls_made(), 2, "with two calls: close, rename");
	unlink(target);
	const char *fails[] = { "close failed", "cannot rename to" };
	for (long k = 1; k <= 2; k++) {
		t = file_with(target, NULL, "x");
		fsys_test_fail_at(k, ENOSPC);
		int r = tempfile_commit(t, TEMPFILE_NO_FSYNC, &e);
		fsys_test_fail_at(0, 0);
		ok(r == -1 && strstr(e.msg, fails[k - 1]) && strstr(e.msg, dir) && e.errnum == ENOSPC,
		   "without fsync, call %ld failing: -1, ENOSPC kept: %s", k, e.msg);
		is_int(strcmp(dir_names(dir), ""), 0, "nothing published, no temporary: '%s'", dir_names(dir));
	}
}

/* tempfile_write: each of its calls failing in turn (create, write, fsync,
 * close, rename, fsync of the directory). */
static void write_calls(void)
{
	char dir[512], target[600];
	struct err e = { 0 };
	path(dir, "wcalls");
	mkdir(dir, 0755);
	snprintf(target, sizeof target, "%s/DONE", dir);
	const char *fails[] = { "cannot create", "write failed", "fsync failed", "close failed", "cannot rename to",
				"fsync failed" };
	for (long k = 1; k <= 6; k++) {
		fsys_test_fail_at(k, ENOSPC);
		int r = tempfile_write(target, NULL, "done\n", 5, 0, &e);
		fsys_test_fail_at(0, 0);
		ok(r == -1 && strstr(e.msg, fails[k - 1]) && strstr(e.msg, dir) && e.errnum == ENOSPC,
		   "tempfile_write's call %ld failing: -1, the path, ENOSPC kept: %s", k, e.msg);
		is_int(strcmp(dir_names(dir), k < 6 ? "" : "DONE"), 0,
		       "no temporary; published only when it failed after the rename: '%s'", dir_names(dir));
		unlink(target);
	}
	fsys_test_fail_at(0, 0);
	is_int(tempfile_write(target, NULL, "done\n", 5, 0, &e), 0, "tempfile_write publishes");
	is_int(fsys_calls_made(), 6, "in six calls");
	is_int(strcmp(file_text(target), "done\n"), 0, "the bytes given");
	is_int(tempfile_write(target, NULL, "again", 5, 0, &e), 1, "never over an existing file");
	is_int(strcmp(file_text(target), "done\n") | strcmp(dir_names(dir), "DONE"), 0, "which it keeps, with no temporary");
	is_int(tempfile_write(target, NULL, "again", 5, TEMPFILE_REPLACE, &e), 0, "unless asked to replace");
	is_int(strcmp(file_text(target), "again"), 0, "with the new bytes");
}

/*
 * A set in two directories: all closed first (fsync, close each), then
 * renamed, each directory flushed once after its last rename. Each call
 * failing in turn: -1 with ENOSPC, no temporary anywhere, and published
 * only what was renamed before the failure (a failed flush of the first
 * directory still lets the rest be renamed).
 */
static void set_calls(void)
{
	char a[512], b[512], q[512], ta[600], tb[600], tc[600];
	struct err e = { 0 };
	path(a, "seta");
	path(b, "setb");
	path(q, "setq");
	mkdir(a, 0755);
	mkdir(b, 0755);
	snprintf(ta, sizeof ta, "%s/x", a);
	snprintf(tb, sizeof tb, "%s/y", a);
	snprintf(tc, sizeof tc, "%s/z", b);
	/* what seta and setb hold after call k failed */
	const char *want[] = { "", "", "", "", "", "", "", "", "x|", "x y|z", "x y|", "x y|z" };
	for (long k = 0; k <= 11; k++) {
		struct tempfile *set[3] = { file_with(ta, q, "1"), file_with(tb, q, "2"), file_with(tc, q, "3") };
		size_t existed = 9;
		fsys_test_fail_at(k, ENOSPC);
		int r = tempfile_commit_set(set, 3, 0, &existed, &e);
		long calls = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		char got[256];
		snprintf(got, sizeof got, "%s", dir_names(a));
		snprintf(got + strlen(got), sizeof got - strlen(got), "|%s", dir_names(b));
		if (k == 0) {
			ok(r == 0 && existed == 0 && calls == 11 && !strcmp(got, "x y|z"),
			   "a set in two directories: published in 11 calls (%ld): %s", calls, got);
		} else {
			/* a close names the temporary; a rename or a flush, the target's directory */
			ok(r == -1 && e.errnum == ENOSPC && existed == 0 &&
			   strstr(e.msg, k <= 6 ? q : k == 10 || k == 11 ? b : a),
			   "the set's call %ld failing: -1, the path, ENOSPC kept: %s", k, e.msg);
			is_int(strcmp(got, k >= 8 ? want[k] : "|"), 0, "published after call %ld failed: '%s'", k,
			       got);
		}
		is_int(strlen(dir_names(q)), 0, "no temporary left (call %ld)", k);
		shell("rm -f '%s'/* '%s'/*", a, b);
	}
	struct tempfile *set[2] = { file_with(ta, q, "1"), file_with(tc, q, "3") };
	fsys_test_fail_at(0, 0);
	is_int(tempfile_commit_set(set, 2, TEMPFILE_NO_FSYNC, NULL, &e), 0, "a set without fsync");
	is_int(fsys_calls_made(), 4, "closes and renames, no fsync");
	/* a directory where the set renamed nothing is not flushed */
	set[0] = file_with(ta, q, "again");
	size_t existed = 0;
	fsys_test_fail_at(0, 0);
	is_int(tempfile_commit_set(set, 1, 0, &existed, &e), 1, "a set whose one target exists says so");
	ok(existed == 1 && fsys_calls_made() == 3 && !strcmp(file_text(ta), "1"),
	   "keeps the file, in 3 calls (%ld): fsync, close, rename; no flush of its directory", fsys_calls_made());
}

/* Where a temporary goes, and names that cannot be published. */
static void names(void)
{
	char q[512], t1[600], t2[600];
	struct err e = { 0 };
	path(q, "rq");
	snprintf(t1, sizeof t1, "%s/first", top);
	snprintf(t2, sizeof t2, "%s/second", top);
	struct tempfile *t = file_with(t1, q, "r");
	is_int(tempfile_retarget(t, "z", &e), 0, "retarget to a one-letter name");
	is_int(tempfile_retarget(t, t2, &e), 0, "retarget to another name");
	is_int(tempfile_retarget(t, "", &e), -1, "not to an empty name");
	ok(tempfile_retarget(t, "dir/", &e) == -1 && strstr(e.msg, "dir/: not a file name"),
	   "nor to a directory's name: %s", e.msg);
	is_int(tempfile_commit(t, 0, &e), 0, "commit after retarget");
	ok(access(t1, F_OK) != 0 && !strcmp(file_text(t2), "r") && strlen(dir_names(q)) == 0,
	   "publishes at the new name only, the tmpdir left empty");
	unlink(t2);
	ok(tempfile_create("", NULL, &e) == NULL && strstr(e.msg, "not a file name"), "no temporary for an empty name");
	ok(tempfile_create("d/", q, &e) == NULL && strstr(e.msg, "d/: not a file name"),
	   "nor for a name that ends in '/': %s", e.msg);
	char nodir[600];
	snprintf(nodir, sizeof nodir, "%s/no/such/dir", top);
	ok(tempfile_create(nodir, NULL, &e) == NULL && strstr(e.msg, "cannot create") && e.errnum == ENOENT,
	   "a temporary in a directory that does not exist: NULL, ENOENT: %s", e.msg);
	/* a target that fits in PATH_MAX whose temporary beside it would not,
	 * whatever the host's name and the process's pid: the longest that
	 * fits, its name a few f's, to which a temporary's name adds more
	 * (".", ".tmp.", the host, the pid and a count, at least 10 bytes) */
	static char longest[PATH_MAX];
	snprintf(longest, sizeof longest, "%s/", top);
	while (strlen(longest) < PATH_MAX - 10)
		strcat(longest, "d/");
	while (strlen(longest) < PATH_MAX - 1)
		strcat(longest, "f");
	ok(tempfile_create(longest, NULL, &e) == NULL && strstr(e.msg, "path too long for a temporary"),
	   "a temporary whose name would not fit is refused: ...%s", e.msg + (strlen(e.msg) > 40 ? strlen(e.msg) - 40 : 0));
	t = file_with(t1, NULL, "r");
	ok(tempfile_fd(t) >= 0 && tempfile_close(t, 0, &e) == 0 && tempfile_fd(t) == -1,
	   "close gives up the descriptor");
	is_int(tempfile_close(t, 0, &e), 0, "closing again does nothing");
	is_int(tempfile_commit(t, 0, &e), 0, "and commit publishes the closed file");
	is_int(strcmp(file_text(t1), "r"), 0, "whole");
	unlink(t1);
}

/*
 * A commit whose every call in turn fails as on a full disk (fsys's fault
 * hook): it says which file and what failed, leaves no temporary, and
 * publishes nothing unless the failure came after the rename.
 */
static void full_disk(void)
{
	char dir[512], target[600];
	struct err e;
	path(dir, "full");
	mkdir(dir, 0755);
	snprintf(target, sizeof target, "%s/x.zst", dir);
	const char *fails[] = { "fsync failed", "close failed", "cannot rename to", "fsync failed" };
	for (long k = 1; k <= 4; k++) {
		struct tempfile *t = file_with(target, NULL, "x");
		fsys_test_fail_at(k, ENOSPC);
		int r = tempfile_commit(t, 0, &e);
		fsys_test_fail_at(0, 0);
		ok(r == -1 && strstr(e.msg, fails[k - 1]) && strstr(e.msg, dir) &&
		   strstr(e.msg, strerror(ENOSPC)) && e.errnum == ENOSPC,
		   "commit's call %ld failing with ENOSPC: -1 with the file and the failure: %s", k, e.msg);
		is_int(strcmp(dir_names(dir), k < 4 ? "" : "x.zst"), 0,
		       "no temporary left; published only when it failed after the rename: '%s'", dir_names(dir));
		unlink(target);
	}
}

int main(void)
{
	char t1[512], t2[512], t3[512], q[512];
	struct err e;
	/* the signals under test start at their defaults, whatever this was
	 * started with: a shell's background job ignores SIGINT and SIGQUIT,
	 * and an ignored signal stays ignored, so the children would never die */
	int tested[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };
	for (size_t i = 0; i < sizeof tested / sizeof *tested; i++)
		signal(tested[i], SIG_DFL);
	snprintf(top, sizeof top, "%s/test_tempfile.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(top)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	path(t1, "a.zst");
	/* first, in a process that has made no temporary before: its very first one is
	 * already removed at exit */
	char first[512];
	path(first, "first");
	mkdir(first, 0755);
	pid_t pid = fork();
	if (pid == 0) {
		char x[600];
		snprintf(x, sizeof x, "%s/x", first);
		file_with(x, NULL, "partial");
		exit(0);
	}
	int wst;
	waitpid(pid, &wst, 0);
	is_int(strlen(dir_names(first)), 0, "a process's first temporary is removed at its exit: '%s'", dir_names(first));
	rmdir(first);
	/* and in another such process, whose registry holds one entry: a create
	 * that fails gives the entry it took back */
	pid = fork();
	if (pid == 0) {
		struct tempfile *a = file_with(t1, NULL, "a"), *b;
		tempfile_delete(a);
		snprintf(t2, sizeof t2, "%s/no/such/dir", top);
		b = tempfile_create(t2, NULL, &e);
		if (b == NULL) {
			b = file_with(t1, NULL, "b");
			tempfile_delete(b);
		}
		if (b != a)
			_exit(3);
		/* and so does a commit */
		a = file_with(t1, NULL, "a");
		if (tempfile_commit(a, TEMPFILE_NO_FSYNC, &e) != 0)
			_exit(4);
		b = file_with(t1, NULL, "b");
		tempfile_delete(b);
		unlink(t1);
		_exit(b == a ? 0 : 5);
	}
	waitpid(pid, &wst, 0);
	ok(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "a failed create, and a commit, give their entry back to be taken again (%d)", WEXITSTATUS(wst));

	path(t1, "a.zst");
	path(t2, "b.zst");
	path(t3, "c.zst");
	path(q, "q/.tmp");

	/* commit, never replacing unless asked */
	struct tempfile *t = file_with(t1, NULL, "one");
	ok(tempfile_path(t)[strlen(top) + 1] == '.', "a temporary beside its target has a dot name: %s",
	   tempfile_path(t));
	is_int(tempfile_commit(t, 0, &e), 0, "commit publishes");
	is_int(strcmp(file_text(t1), "one"), 0, "the target holds what was written");
	is_int(strcmp(dir_names(top), "a.zst"), 0, "and the temporary is gone: %s", dir_names(top));
	t = file_with(t1, NULL, "two");
	is_int(tempfile_commit(t, 0, &e), 1, "commit onto an existing target says so");
	is_int(strcmp(file_text(t1), "one") | strcmp(dir_names(top), "a.zst"), 0, "keeps the target and removes the copy");
	t = file_with(t1, NULL, "three");
	is_int(tempfile_commit(t, TEMPFILE_REPLACE, &e), 0, "TEMPFILE_REPLACE replaces");
	is_int(strcmp(file_text(t1), "three"), 0, "with the new contents");

	/* in a temporary directory, deleted */
	t = file_with(t2, q, "x");
	ok(strncmp(tempfile_path(t), q, strlen(q)) == 0, "a temporary goes into the tmpdir given");
	int fd = tempfile_fd(t);
	tempfile_delete(t);
	is_int(strlen(dir_names(q)) + (access(t2, F_OK) == 0), 0, "delete removes it and publishes nothing");
	ok(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "and closes its descriptor");
	struct tempfile *again = file_with(t2, q, "y");
	ok(again == t, "the entry deleted is the one the next temporary takes (entries are recycled)");
	tempfile_delete(again);

	/* a directory */
	char d[512], f[600];
	path(d, "model");
	t = tempfile_mkdir(d, NULL, &e);
	ok(t != NULL && tempfile_fd(t) == -1, "mkdir makes a temporary directory, with no descriptor");
	snprintf(f, sizeof f, "%s/config.json", tempfile_path(t));
	FILE *fp = fopen(f, "w");
	fputs("{}", fp);
	fclose(fp);
	is_int(tempfile_commit(t, 0, &e), 0, "commit publishes the directory");
	snprintf(f, sizeof f, "%s/config.json", d);
	is_int(strcmp(file_text(f), "{}"), 0, "with its files");
	struct stat st;
	stat(d, &st);
	mode_t mask = umask(0);
	umask(mask);
	is_int(st.st_mode & 0777, 0777 & ~mask, "mode 0777 less the umask");
	t = tempfile_mkdir(d, NULL, &e);
	is_int(tempfile_commit(t, TEMPFILE_REPLACE, &e), 1, "a directory never replaces one");

	/* a marker */
	char m[512];
	path(m, "DONE");
	is_int(tempfile_write(m, NULL, "{\"n\":1}\n", 8, 0, &e), 0, "tempfile_write publishes a marker");
	is_int(strcmp(file_text(m), "{\"n\":1}\n"), 0, "with its bytes");

	/* a set, one of whose targets exists */
	struct tempfile *set[3] = { file_with(t1, q, "s1"), file_with(t2, q, "s2"), file_with(t3, q, "s3") };
	size_t existed;
	is_int(tempfile_commit_set(set, 3, 0, &existed, &e), 1, "a set with an existing target says so");
	is_int(existed, 1, "one existed");
	is_int(strcmp(file_text(t1), "three") | strcmp(file_text(t2), "s2") | strcmp(file_text(t3), "s3"), 0,
	       "the others are published, the existing one kept");
	is_int(strlen(dir_names(q)), 0, "no temporary is left");

	/* signals and exit, in children */
	signal_case(SIGTERM, "SIGTERM");
	signal_case(SIGINT, "SIGINT");
	signal_case(SIGHUP, "SIGHUP");

	char dir[512];
	path(dir, "ignored");
	mkdir(dir, 0755);
	int ready;
	pid = child_with_temporaries(dir, 1, &ready);
	kill(pid, SIGHUP);
	kill(pid, SIGTERM);
	waitpid(pid, &wst, 0);
	ok(ready && WIFSIGNALED(wst) && WTERMSIG(wst) == SIGTERM,
	   "an ignored SIGHUP stays ignored: the child died of the SIGTERM after it");

	path(dir, "exit");
	mkdir(dir, 0755);
	pid = fork();
	if (pid == 0) {
		char x[600];
		snprintf(x, sizeof x, "%s/x", dir);
		file_with(x, NULL, "partial");
		exit(0);
	}
	waitpid(pid, &wst, 0);
	is_int(strlen(dir_names(dir)), 0, "exit(3) removes what is still registered: '%s'", dir_names(dir));

	t = file_with(t3, NULL, "parent's");
	pid = fork();
	if (pid == 0)
		exit(0);
	waitpid(pid, &wst, 0);
	is_int(access(tempfile_path(t), F_OK), 0, "a forked child's exit leaves its parent's temporary");
	tempfile_delete(t);

	path(q, "many");
	many(q);
	path(q, "queue");
	spool_set(q);

	full_disk();
	odd_names();
	commit_calls();
	write_calls();
	set_calls();
	names();

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
	return tap_done();
}
