/*
 * test_tempfile: temporaries are published by rename or removed, never left
 * behind: at commit, delete, exit, and when SIGTERM, SIGINT or SIGHUP kills
 * the process; an ignored signal stays ignored; a forked child does not
 * remove its parent's temporaries; a set is published all together; a
 * commit that a full disk fails (fsys's fault hook) leaves no temporary.
 * Tens of thousands held at once take little memory each.
 */
#include <dirent.h>
#include <errno.h>
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

/* Names in dir, ' '-separated and sorted, into out. */
static const char *ls(const char *dir)
{
	static char out[4096];
	struct dirent **v;
	out[0] = 0;
	int n = scandir(dir, &v, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "",
				 v[i]->d_name);
		free(v[i]);
	}
	if (n >= 0)
		free(v);
	return out;
}

static const char *slurp(const char *path)
{
	static char b[256];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
	b[n] = 0;
	if (f)
		fclose(f);
	return f ? b : "(absent)";
}

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
	ok(made == 2 * N && strlen(ls(dir)) == 0, "%d temporaries made and removed, twice", N);
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
	ok(ready && strchr(ls(dir), ' ') != NULL,
	   "%s: the child made its temporaries: %s", name, ls(dir));
	kill(pid, sig);
	int st;
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == sig, "%s: the child still dies of the signal", name);
	is_int(strcmp(ls(dir), ".tmp"), 0, "%s: nothing is left but the empty .tmp: '%s'", name, ls(dir));
	char q[600];
	snprintf(q, sizeof q, "%s/.tmp", dir);
	is_int(strlen(ls(q)), 0, "%s: .tmp is empty", name);
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
		   strstr(e.msg, strerror(ENOSPC)),
		   "commit's call %ld failing with ENOSPC: -1 with the file and the failure: %s", k, e.msg);
		is_int(strcmp(ls(dir), k < 4 ? "" : "x.zst"), 0,
		       "no temporary left; published only when it failed after the rename: '%s'", ls(dir));
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
	path(t2, "b.zst");
	path(t3, "c.zst");
	path(q, "q/.tmp");

	/* commit, never replacing unless asked */
	struct tempfile *t = file_with(t1, NULL, "one");
	ok(tempfile_path(t)[strlen(top) + 1] == '.', "a temporary beside its target has a dot name: %s",
	   tempfile_path(t));
	is_int(tempfile_commit(t, 0, &e), 0, "commit publishes");
	is_int(strcmp(slurp(t1), "one"), 0, "the target holds what was written");
	is_int(strcmp(ls(top), "a.zst"), 0, "and the temporary is gone: %s", ls(top));
	t = file_with(t1, NULL, "two");
	is_int(tempfile_commit(t, 0, &e), 1, "commit onto an existing target says so");
	is_int(strcmp(slurp(t1), "one") | strcmp(ls(top), "a.zst"), 0, "keeps the target and removes the copy");
	t = file_with(t1, NULL, "three");
	is_int(tempfile_commit(t, TEMPFILE_REPLACE, &e), 0, "TEMPFILE_REPLACE replaces");
	is_int(strcmp(slurp(t1), "three"), 0, "with the new contents");

	/* in a temporary directory, deleted */
	t = file_with(t2, q, "x");
	ok(strncmp(tempfile_path(t), q, strlen(q)) == 0, "a temporary goes into the tmpdir given");
	tempfile_delete(t);
	is_int(strlen(ls(q)) + (access(t2, F_OK) == 0), 0, "delete removes it and publishes nothing");

	/* a directory */
	char d[512], f[600];
	path(d, "model");
	t = tempfile_mkdir(d, NULL, &e);
	ok(t != NULL, "mkdir makes a temporary directory");
	snprintf(f, sizeof f, "%s/config.json", tempfile_path(t));
	FILE *fp = fopen(f, "w");
	fputs("{}", fp);
	fclose(fp);
	is_int(tempfile_commit(t, 0, &e), 0, "commit publishes the directory");
	snprintf(f, sizeof f, "%s/config.json", d);
	is_int(strcmp(slurp(f), "{}"), 0, "with its files");
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
	is_int(strcmp(slurp(m), "{\"n\":1}\n"), 0, "with its bytes");

	/* a set, one of whose targets exists */
	struct tempfile *set[3] = { file_with(t1, q, "s1"), file_with(t2, q, "s2"), file_with(t3, q, "s3") };
	size_t existed;
	is_int(tempfile_commit_set(set, 3, 0, &existed, &e), 1, "a set with an existing target says so");
	is_int(existed, 1, "one existed");
	is_int(strcmp(slurp(t1), "three") | strcmp(slurp(t2), "s2") | strcmp(slurp(t3), "s3"), 0,
	       "the others are published, the existing one kept");
	is_int(strlen(ls(q)), 0, "no temporary is left");

	/* signals and exit, in children */
	signal_case(SIGTERM, "SIGTERM");
	signal_case(SIGINT, "SIGINT");
	signal_case(SIGHUP, "SIGHUP");

	char dir[512];
	path(dir, "ignored");
	mkdir(dir, 0755);
	int ready, wst;
	pid_t pid = child_with_temporaries(dir, 1, &ready);
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
	is_int(strlen(ls(dir)), 0, "exit(3) removes what is still registered: '%s'", ls(dir));

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

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
	return tap_done();
}
