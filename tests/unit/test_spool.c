/*
 * test_spool: publishing into a queue as grpo-spool(5) says, checked by
 * what a reader of the queue sees: the published file's bytes, a re-run's
 * copy dropped (commit 1) leaving the first, nothing visible after an
 * abort or a failed commit, refused names named in the message; the step
 * and rank names read back and their listings in numeric order with dot
 * and misnamed directories left out; which queue a path lies in; the
 * state of a rank directory; whether two files hold the same bytes (no
 * descriptor left open when one of its calls fails).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "spool/spool.h"
#include "../tap.h"

static char top[256];

/* The names in dir, ' '-separated in strcmp order, into a static buffer. */
static const char *ls(const char *dir)
{
	static char out[4096];
	char **v;
	size_t n;
	out[0] = 0;
	if (fsys_list_dir(dir, FSYS_ANY, &v, &n, NULL) < 0)
		return "(error)";
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "", v[i]);
	fsys_free_names(v, n);
	return out;
}

/* The descriptor the next open gets: it moves up when a call leaves one open. */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		close(fd);
	return fd;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

/* Open, write text, commit: commit's result, or -1 from open or write. */
static int publish(const char *queue, int64_t step, int rank, const char *name, const char *text,
		   struct err *e)
{
	struct spool_out o;
	if (spool_open(&o, queue, step, rank, name, e) < 0)
		return -1;
	if (spool_write(&o, text, strlen(text), e) < 0) {
		spool_abort(&o);
		return -1;
	}
	return spool_commit(&o, e);
}

static void test_publish(void)
{
	char q[512], p[600], tmp[600];
	struct err e = { 0 };
	snprintf(q, sizeof q, "%s/pub", top);
	snprintf(tmp, sizeof tmp, "%s/.tmp", q);
	snprintf(p, sizeof p, "%s/step_3/rank_1/g.zst", q);
	is_int(publish(q, 3, 1, "g.zst", "first copy", &e), 0, "a new name is published: %s", e.msg);
	is_int(strcmp(file_text(p), "first copy"), 0, "with the bytes written: '%s'", file_text(p));
	is_int(strcmp(ls(tmp), ""), 0, "and no temporary left: '%s'", ls(tmp));
	is_int(publish(q, 3, 1, "g.zst", "a re-run's copy", &e), 1, "a re-run's copy under the same name: 1");
	is_int(strcmp(file_text(p), "first copy"), 0, "the first copy kept, not replaced: '%s'", file_text(p));
	is_int(strcmp(ls(tmp), ""), 0, "the re-run's copy dropped: '%s'", ls(tmp));
	is_int(publish(q, 3, 1, "h.zst", "", &e), 0, "an empty file is published");
	snprintf(p, sizeof p, "%s/step_3/rank_1", q);
	is_int(strcmp(ls(p), "g.zst h.zst"), 0, "the rank directory holds the two: '%s'", ls(p));
	is_int(strcmp(ls(q), ".tmp step_3"), 0, "the queue, the step and .tmp: '%s'", ls(q));

	/* several writes, and a file finished before its commit */
	struct spool_out o;
	ok(spool_open(&o, q, 0, 0, "multi", &e) == 0 && spool_write(&o, "ab", 2, &e) == 0 &&
	   spool_write(&o, "cd", 2, &e) == 0 && spool_finish_write(&o, &e) == 0, "opened, written twice, finished");
	snprintf(p, sizeof p, "%s/step_0/rank_0/multi", q);
	is_int(strcmp(file_text(p), "(absent)"), 0, "nothing visible before the commit");
	is_int(spool_commit(&o, &e), 0, "then committed");
	is_int(strcmp(file_text(p), "abcd"), 0, "step 0, rank 0, the writes in order: '%s'", file_text(p));
	is_int(spool_write(&o, "x", 1, &e), -1, "a write after the commit is refused");
	ok(strstr(e.msg, "multi") && strstr(e.msg, "after commit"), "naming the file: %s", e.msg);
	is_int(spool_finish_write(&o, &e), -1, "so is a finish");
	ok(strstr(e.msg, "multi") != NULL, "naming the file: %s", e.msg);
	is_int(spool_commit(&o, &e), -1, "and a second commit");
	is_int(spool_rename(&o, q, 1, 1, "other", &e), -1, "and a rename");
	ok(strstr(e.msg, "multi") && strstr(e.msg, "renamed"), "naming the file: %s", e.msg);

	/* abort: nothing visible, no temporary; a second abort is harmless */
	ok(spool_open(&o, q, 5, 2, "gone", &e) == 0 && spool_write(&o, "x", 1, &e) == 0, "another opened");
	spool_abort(&o);
	spool_abort(&o);
	snprintf(p, sizeof p, "%s/step_5", q);
	ok(access(p, F_OK) != 0 && !strcmp(ls(tmp), ""), "aborted: no step_5, no temporary: '%s'", ls(tmp));
	is_int(spool_commit(&o, &e), -1, "a commit after the abort is refused");
}

static void test_names(void)
{
	char q[512], p[600], long_name[NAME_MAX + 2];
	struct err e = { 0 };
	struct spool_out o;
	snprintf(q, sizeof q, "%s/names", top);
	const char *bad[] = { "", ".hidden", "a/b", "/abs" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		e.msg[0] = 0;
		is_int(spool_open(&o, q, 1, 0, bad[i], &e), -1, "the name '%s' is refused", bad[i]);
		ok(strstr(e.msg, "not a valid spool file name") && !strncmp(e.msg, bad[i], strlen(bad[i])),
		   "saying which: %s", e.msg);
	}
	memset(long_name, 'n', NAME_MAX + 1);
	long_name[NAME_MAX + 1] = 0;
	is_int(spool_open(&o, q, 1, 0, long_name, &e), -1, "a name of NAME_MAX + 1 bytes is refused");
	long_name[NAME_MAX] = 0;
	is_int(publish(q, 1, 0, long_name, "long", &e), 0, "one of NAME_MAX bytes is published: %s", e.msg);
	is_int(publish(q, 1, 0, "x", "one letter", &e), 0, "so is one of a single letter");
	snprintf(p, sizeof p, "%s/step_1/rank_0/x", q);
	is_int(strcmp(file_text(p), "one letter"), 0, "under its name");
	snprintf(p, sizeof p, "%s/step_1", q);
	is_int(strcmp(ls(p), "rank_0"), 0, "nothing else made: '%s'", ls(p));

	/* spool_out_path, and a rename before the commit */
	char want[700], got[PATH_MAX];
	ok(spool_open(&o, q, 12, 3, "a.zst", &e) == 0, "opened as step 12, rank 3");
	snprintf(want, sizeof want, "%s/step_12/rank_3/a.zst", q);
	is_int(strcmp(spool_out_path(&o, got, sizeof got), want), 0, "its path: %s", got);
	is_int(spool_rename(&o, q, 4, 7, ".bad", &e), -1, "a rename to a dot name is refused");
	is_int(strcmp(spool_out_path(&o, got, sizeof got), want), 0, "leaving its place: %s", got);
	ok(spool_write(&o, "moved", 5, &e) == 0 && spool_rename(&o, q, 4, 7, "b.zst", &e) == 0,
	   "renamed to step 4, rank 7, b.zst");
	snprintf(want, sizeof want, "%s/step_4/rank_7/b.zst", q);
	is_int(strcmp(spool_out_path(&o, got, sizeof got), want), 0, "its path: %s", got);
	is_int(spool_commit(&o, &e), 0, "committed");
	ok(!strcmp(file_text(want), "moved") && !strcmp(ls(q), ".tmp step_1 step_4"),
	   "published there only: %s", ls(q));

	char dir[PATH_MAX];
	is_int(spool_step_dir(dir, sizeof dir, "Q", 9223372036854775807LL, 2147483647, &e), 0, "the largest step dir");
	is_int(strcmp(dir, "Q/step_9223372036854775807/rank_2147483647"), 0, "%s", dir);
	is_int(spool_step_dir(dir, 12, "QUEUE", 1, 0, &e), -1, "one that does not fit: -1");

	/* a queue whose step directory would not fit PATH_MAX, though its .tmp
	 * would: refused as too long, nothing made; and a struct that held
	 * other bytes before a failed open is safe to abort */
	static char long_q[PATH_MAX];
	memset(long_q, 'q', PATH_MAX - 12);
	long_q[0] = '/';
	long_q[PATH_MAX - 12] = 0;
	memset(&o, 0xa5, sizeof o);
	e.msg[0] = 0;
	is_int(spool_open(&o, long_q, 1, 0, "f.zst", &e), -1, "a queue path that leaves no room for step_1/rank_0: -1");
	ok(strstr(e.msg, "too long") != NULL, "saying the path is too long: ...%s",
	   e.msg + (strlen(e.msg) > 60 ? strlen(e.msg) - 60 : 0));
	spool_abort(&o);   /* would free what the bytes pointed to, had the open not cleared them */
	is_int(spool_commit(&o, &e), -1, "a failed open, then abort: a commit is refused");
	snprintf(p, sizeof p, "%s/file-queue", top);
	put(p, "a file where the queue should be");
	is_int(spool_open(&o, p, 1, 0, "f.zst", &e), -1, "a queue that is a file: -1 (%s)", e.msg);
	spool_abort(&o);

	char u1[256], u2[256];
	spool_unique_name(u1, sizeof u1);
	spool_unique_name(u2, sizeof u2);
	ok(u1[0] && u1[0] != '.' && strcmp(u1, u2) != 0 && !strchr(u1, '/'), "unique names: %s %s", u1, u2);
}

/*
 * A commit into a new queue whose calls fail one by one as on a full disk
 * (fsys's fault hook): each says which path and what failed, leaves no
 * temporary, and publishes nothing unless it came after the rename. The
 * walk shows what a crash could lose: the file must be flushed before its
 * rename, and each new directory entry (step, rank, the file) flushed in
 * its parent. With no_fsync (a scratch spool on tmpfs) the file and its
 * entry are not (the directories made still are: fsys_mkdirs).
 */
static void commit_walk(int no_fsync, char *calls, size_t size)
{
	char q[512], p[600], tmp[600];
	struct err e = { 0 };
	snprintf(q, sizeof q, "%s/full", top);
	snprintf(tmp, sizeof tmp, "%s/.tmp", q);
	snprintf(p, sizeof p, "%s/step_2/rank_0/f", q);
	calls[0] = 0;
	int r = -1;
	for (long k = 1; k < 40 && r < 0; k++) {
		struct spool_out o;
		struct err eo = { 0 };
		shell("rm -rf %s", q);
		ok(spool_open(&o, q, 2, 0, "f", &eo) == 0 && spool_write(&o, "data", 4, &eo) == 0, "opened");
		o.no_fsync = no_fsync;
		fsys_test_fail_at(k, ENOSPC);
		r = spool_commit(&o, &e);
		fsys_test_fail_at(0, 0);
		if (r == 0)
			break;
		ok(r == -1 && strstr(e.msg, strerror(ENOSPC)) && strstr(e.msg, q), "call %ld failing: %s", k, e.msg);
		is_int(strcmp(ls(tmp), ""), 0, "no temporary left: '%s'", ls(tmp));
		/* what failed, and where: the file's temporary as "tmp", the queue as "Q" */
		const char *what = strstr(e.msg, "fsync") ? "fsync" : strstr(e.msg, "close") ? "close" :
				   strstr(e.msg, "directory") ? "mkdir" : strstr(e.msg, "rename") ? "rename" : "?";
		const char *where = strstr(e.msg, "/.tmp/") ? "tmp" : e.msg + strlen(q);
		int after_rename = strstr(calls, "rename") != NULL;
		snprintf(calls + strlen(calls), size - strlen(calls), "%s%s %.*s", calls[0] ? ", " : "", what,
			 where[0] == ':' ? 1 : (int)strcspn(where, ":"), where[0] == ':' ? "Q" : where);
		int published = !strcmp(file_text(p), "data");
		ok(published == after_rename, "published (%d) only when it failed after the rename: %s",
		   published, calls);
	}
	is_int(r, 0, "published once no call fails");
	is_int(strcmp(file_text(p), "data"), 0, "with its bytes");
}

static void test_full_disk(void)
{
	char calls[1024];
	commit_walk(0, calls, sizeof calls);
	is_int(strcmp(calls, "fsync tmp, close tmp, mkdir /step_2, fsync Q, mkdir /step_2/rank_0, fsync /step_2, "
		       "rename tmp, fsync /step_2/rank_0"), 0, "a commit's calls: %s", calls);
	commit_walk(1, calls, sizeof calls);
	is_int(strcmp(calls, "close tmp, mkdir /step_2, fsync Q, mkdir /step_2/rank_0, fsync /step_2, rename tmp"), 0,
	       "without fsync: %s", calls);
}

static void test_same_file(void)
{
	char a[600], b[600], c[600];
	struct err e = { 0 };
	snprintf(a, sizeof a, "%s/same_a", top);
	snprintf(b, sizeof b, "%s/same_b", top);
	snprintf(c, sizeof c, "%s/same_absent", top);
	put(a, "abc");
	put(b, "abc");
	is_int(spool_same_file(a, b, &e), 1, "the same bytes: 1");
	put(b, "abd");
	is_int(spool_same_file(a, b, &e), 0, "one byte differs: 0");
	put(b, "abcd");
	is_int(spool_same_file(a, b, &e), 0, "a longer b: 0");
	is_int(spool_same_file(b, a, &e), 0, "a shorter b: 0");
	is_int(spool_same_file(a, c, &e), 0, "b absent: 0");
	is_int(spool_same_file(c, a, &e), -1, "a absent: -1");
	ok(strstr(e.msg, c) != NULL, "naming it: %s", e.msg);
	put(a, "");
	put(b, "");
	is_int(spool_same_file(a, b, &e), 1, "two empty files: 1");

	/* each call failing in turn (stat, opens, reads): -1 saying so, never an answer */
	put(a, "abc");
	put(b, "abc");
	int r = -1, fd0 = lowest_free_fd();
	long k;
	for (k = 1; k < 20 && r < 0; k++) {
		fsys_test_fail_at(k, EIO);
		r = spool_same_file(a, b, &e);
		fsys_test_fail_at(0, 0);
		if (r < 0)
			ok(r == -1 && strstr(e.msg, strerror(EIO)) && strstr(e.msg, top), "call %ld failing: %s", k,
			   e.msg);
		is_int(lowest_free_fd(), fd0, "call %ld failing: no descriptor left open", k);
	}
	ok(r == 1 && k > 5, "the same once no call fails (after %ld)", k - 1);

	/* larger than one read, differing only in the last byte of the second */
	enum { N = 40000 };
	static char big[N + 1];
	memset(big, 'z', N);
	put(a, big);
	put(b, big);
	is_int(spool_same_file(a, b, &e), 1, "two files of %d equal bytes: 1", N);
	big[N - 1] = 'y';
	put(b, big);
	is_int(spool_same_file(a, b, &e), 0, "differing in the last of %d bytes: 0", N);
	big[N - 1] = 'z';
	big[20000] = 'y';
	put(b, big);
	is_int(spool_same_file(a, b, &e), 0, "differing in byte 20000: 0");
}

static void test_parse(void)
{
	int64_t s = -5;
	int r = -5;
	ok(spool_parse_step("step_0", &s) == 0 && s == 0, "step_0: 0");
	ok(spool_parse_step("step_17", &s) == 0 && s == 17, "step_17: 17");
	ok(spool_parse_step("step_9223372036854775807", &s) == 0 && s == INT64_MAX, "the largest step");
	const char *bad_steps[] = { "step_", "step_01", "step_00", "step_1x", "step_-1", "step_+1", "Step_1",
				    "rank_1", "step_9223372036854775808", "step_99999999999999999999", "step_ 1",
				    "step_/", "step_:" };
	for (size_t i = 0; i < sizeof bad_steps / sizeof *bad_steps; i++) {
		s = -5;
		ok(spool_parse_step(bad_steps[i], &s) == -1 && s == -5, "'%s' is no step", bad_steps[i]);
	}
	ok(spool_parse_rank("rank_0", &r) == 0 && r == 0, "rank_0: 0");
	ok(spool_parse_rank("rank_90", &r) == 0 && r == 90, "rank_90: 90");
	ok(spool_parse_rank("rank_2147483647", &r) == 0 && r == INT_MAX, "the largest rank");
	const char *bad_ranks[] = { "rank_", "rank_01", "rank_2147483648", "rank_4294967296", "rank_1.", "step_1" };
	for (size_t i = 0; i < sizeof bad_ranks / sizeof *bad_ranks; i++) {
		r = -5;
		ok(spool_parse_rank(bad_ranks[i], &r) == -1 && r == -5, "'%s' is no rank", bad_ranks[i]);
	}
}

static void test_queue_of(void)
{
	char q[PATH_MAX], f[PATH_MAX];
	struct { const char *path, *queue; } yes[] = {
		{ "spool/rollouts/step_3/rank_0/g.zst", "spool/rollouts" },
		{ "step_3/rank_0/g.zst", "." },
		{ "/step_3/rank_0/g.zst", "/" },
		{ "../step_0/rank_12/x", ".." },
		{ "./step_0/rank_1/x", "." },
		{ "/a/q/step_10/rank_2/.hidden", "/a/q" },
	};
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		q[0] = 0;
		ok(spool_queue_of(yes[i].path, q, sizeof q) == 1 && !strcmp(q, yes[i].queue),
		   "%s is in queue '%s': '%s'", yes[i].path, yes[i].queue, q);
	}
	const char *no[] = { "q/step_3/rank_0/", "q/step_3/g.zst", "q/rank_0/g.zst", "q/step_03/rank_0/g",
			     "q/step_3/rank_00/g", "rank_0/g", "g.zst", "q/.quarantine/step_3/rank_0/g",
			     "q/.tmp/step_3/rank_0/g", ".x/step_1/rank_0/g" };
	for (size_t i = 0; i < sizeof no / sizeof *no; i++)
		is_int(spool_queue_of(no[i], q, sizeof q), 0, "%s is in no queue", no[i]);
	static char too_long[PATH_MAX + 40];
	memset(too_long, 'a', sizeof too_long - 1);
	memcpy(too_long + PATH_MAX - 20, "/step_3/rank_0/g", 16);
	too_long[sizeof too_long - 1] = 0;
	is_int(spool_queue_of(too_long, q, sizeof q), 0, "a path longer than PATH_MAX is in no queue");
	is_int(spool_queue_of("spool/rollouts/step_3/rank_0/g", q, 14), 0, "a queue that does not fit: 0");
	is_int(spool_queue_of("spool/rollouts/step_3/rank_0/g", q, 15), 1, "one that just fits: 1");

	/* a path through a link, or relative from inside, judged by its real directory */
	char dir[600], link[600], path[700], real[PATH_MAX], want[PATH_MAX + 40];
	snprintf(dir, sizeof dir, "%s/rq/step_4/rank_2", top);
	shell("mkdir -p %s", dir);
	snprintf(link, sizeof link, "%s/alias", top);
	ok(symlink(dir, link) == 0, "a link to a rank directory");
	snprintf(path, sizeof path, "%s/g.zst", link);
	is_int(spool_queue_of(path, q, sizeof q), 0, "the link's path names no rank directory");
	ok(realpath(top, real) != NULL, "the real top");
	snprintf(want, sizeof want, "%s/rq", real);
	ok(spool_queue_of_real(path, q, sizeof q) == 1 && !strcmp(q, want), "its real queue: '%s'", q);
	ok(spool_locate(path, q, sizeof q, f, sizeof f) == 1, "located");
	snprintf(want, sizeof want, "%s/rq/step_4/rank_2/g.zst", real);
	is_int(strcmp(f, want), 0, "as its real path: '%s'", f);
	snprintf(path, sizeof path, "%s/rq/step_4/rank_2/g.zst", top);
	ok(spool_locate(path, q, sizeof q, f, sizeof f) == 1 && !strcmp(f, path), "a plain path as written: %s", f);
	snprintf(path, sizeof path, "%s/nowhere/g.zst", top);
	is_int(spool_queue_of_real(path, q, sizeof q), 0, "a missing directory: no queue");
	snprintf(path, sizeof path, "%s/g.zst", top);
	is_int(spool_queue_of_real(path, q, sizeof q), 0, "a plain directory: no queue");
	char cwd[PATH_MAX];
	ok(getcwd(cwd, sizeof cwd) && chdir(dir) == 0, "inside the rank directory");
	snprintf(want, sizeof want, "%s/rq", real);
	ok(spool_queue_of_real("g.zst", q, sizeof q) == 1 && !strcmp(q, want), "g.zst is in '%s'", q);
	ok(spool_queue_of_real("g.zst/", q, sizeof q) == 0, "a name ending in / is not");
	ok(chdir("/") == 0, "at /");
	ok(spool_queue_of_real("/g.zst", q, sizeof q) == 0, "/g.zst is in no queue");
	ok(chdir(cwd) == 0, "back");
}

/* The listed numbers, ' '-separated, into a static buffer. */
static const char *join_steps(const int64_t *v, size_t n)
{
	static char out[256];
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%lld", i ? " " : "", (long long)v[i]);
	return out;
}

static const char *join_ranks(const int *v, size_t n)
{
	static char out[256];
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%d", i ? " " : "", v[i]);
	return out;
}

static void test_lists(void)
{
	char q[512], p[700];
	struct err e = { 0 };
	int64_t *steps;
	int *ranks;
	size_t n;
	snprintf(q, sizeof q, "%s/lq", top);
	const char *dirs[] = { "step_10", "step_2", "step_0", "step_9", "step_01", "step_x", ".tmp",
			       ".step_3", "other", "step_2/rank_10", "step_2/rank_9", "step_2/rank_0",
			       "step_2/rank_01", "step_2/.rank_5", "step_2/rank_x", "step_1x", "step_9/rank_x9" };
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
		shell("mkdir -p %s/%s", q, dirs[i]);
	snprintf(p, sizeof p, "%s/step_7", q);
	put(p, "a file, not a step");
	snprintf(p, sizeof p, "%s/step_2/rank_4", q);
	put(p, "a file, not a rank");

	const char *got;
	ok(spool_list_steps(q, -1, -1, &steps, &n, &e) == 0, "steps listed");
	got = join_steps(steps, n);
	is_int(strcmp(got, "0 2 9 10"), 0, "in numeric order, misnamed, dot names and files left out: '%s'", got);
	free(steps);
	ok(spool_list_steps(q, 2, 9, &steps, &n, &e) == 0, "steps 2 to 9");
	got = join_steps(steps, n);
	is_int(strcmp(got, "2 9"), 0, "both ends in: '%s'", got);
	free(steps);
	ok(spool_list_steps(q, 1, -1, &steps, &n, &e) == 0, "from 1");
	got = join_steps(steps, n);
	is_int(strcmp(got, "2 9 10"), 0, "'%s'", got);
	free(steps);
	ok(spool_list_steps(q, -1, 0, &steps, &n, &e) == 0, "to 0");
	got = join_steps(steps, n);
	is_int(strcmp(got, "0"), 0, "'%s'", got);
	free(steps);
	ok(spool_list_steps(q, 3, 8, &steps, &n, &e) == 0 && n == 0 && steps, "none from 3 to 8");
	free(steps);
	snprintf(p, sizeof p, "%s/none", top);
	ok(spool_list_steps(p, -1, -1, &steps, &n, &e) == 0 && n == 0, "a missing queue has none");
	free(steps);

	ok(spool_list_ranks(q, 2, &ranks, &n, &e) == 0, "ranks of step 2 listed");
	got = join_ranks(ranks, n);
	is_int(strcmp(got, "0 9 10"), 0, "in numeric order, misnamed, dot names and files left out: '%s'", got);
	free(ranks);
	ok(spool_list_ranks(q, 0, &ranks, &n, &e) == 0 && n == 0, "step 0 has none");
	free(ranks);
	ok(spool_list_ranks(q, 5, &ranks, &n, &e) == 0 && n == 0, "a missing step has none");
	free(ranks);

	char **v;
	ok(spool_misnamed(q, &v, &n, &e) == 0, "misnamed listed");
	char names[256] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " " : "", v[i]);
	/* step_9's one rank directory is misnamed: the first of a listing counts too */
	is_int(strcmp(names, "step_01 step_1x step_2/rank_01 step_2/rank_x step_9/rank_x9 step_x"), 0, "'%s'", names);
	fsys_free_names(v, n);
	snprintf(p, sizeof p, "%s/none", top);
	ok(spool_misnamed(p, &v, &n, &e) == 0 && n == 0 && !v, "a missing queue has none");
	fsys_test_fail_at(1, EIO);
	int r = spool_list_steps(q, -1, -1, &steps, &n, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && !steps && n == 0 && strstr(e.msg, q) && strstr(e.msg, strerror(EIO)),
	   "a listing that fails: -1, nothing, saying so: %s", e.msg);
	fsys_test_fail_at(1, EIO);
	r = spool_list_ranks(q, 2, &ranks, &n, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && !ranks && n == 0 && strstr(e.msg, "step_2") && strstr(e.msg, strerror(EIO)),
	   "the same for ranks: %s", e.msg);
	fsys_test_fail_at(2, EIO);
	r = spool_misnamed(q, &v, &n, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && !v && n == 0 && strstr(e.msg, strerror(EIO)), "and for misnamed, listing a step: %s", e.msg);
	fsys_test_fail_at(1, EIO);
	r = spool_misnamed(q, &v, &n, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && !v && n == 0 && strstr(e.msg, q) && strstr(e.msg, strerror(EIO)),
	   "and listing the queue itself: %s", e.msg);
}

static void test_rank_state(void)
{
	char q[512], d[700];
	struct err e = { 0 };
	struct spool_rank_state s;
	snprintf(q, sizeof q, "%s/sq", top);
	snprintf(d, sizeof d, "%s/step_1/rank_0", q);
	shell("mkdir -p %s/.claimed %s/.done && cd %s && touch a b c d e .tmpx .claimed/b .claimed/c .claimed/.x "
	      ".done/c .done/d .done/.y", d, d, d);
	ok(spool_rank_state(q, 1, 0, &s, &e) == 0, "state read: %s", e.msg);
	char got[256] = "";
	for (size_t i = 0; i < s.nwaiting; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "w:%s ", s.waiting[i]);
	for (size_t i = 0; i < s.nclaimed; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "c:%s ", s.claimed[i]);
	for (size_t i = 0; i < s.ndone; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "d:%s ", s.done[i]);
	is_int(strcmp(got, "w:a w:e c:b d:c d:d "), 0, "waiting, claimed, done (both: done): '%s'", got);
	spool_rank_state_free(&s);
	ok(!s.waiting && !s.nwaiting && !s.claimed && !s.done, "freed to zero");
	ok(spool_rank_state(q, 2, 0, &s, &e) == 0 && !s.nwaiting && !s.nclaimed && !s.ndone,
	   "a missing rank directory: nothing");
	spool_rank_state_free(&s);
	const char *lists[] = { ".claimed", ".done", "rank_0:" };
	for (long k = 1; k <= 3; k++) {
		fsys_test_fail_at(k, EIO);
		int r = spool_rank_state(q, 1, 0, &s, &e);
		fsys_test_fail_at(0, 0);
		ok(r == -1 && !s.waiting && !s.claimed && !s.done && !s.nwaiting && !s.nclaimed && !s.ndone &&
		   strstr(e.msg, lists[k - 1]) && strstr(e.msg, strerror(EIO)),
		   "listing %s failing: -1, nothing: %s", lists[k - 1], e.msg);
	}
	char big[PATH_MAX];
	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = 0;
	ok(spool_rank_state(big, 1, 0, &s, &e) == -1 && strstr(e.msg, "too long"), "a queue path too long: %.40s",
	   e.msg);
}

int main(void)
{
	snprintf(top, sizeof top, "/tmp/test_spool.%d", (int)getpid());
	shell("rm -rf %s && mkdir -p %s", top, top);
	test_publish();
	test_names();
	test_full_disk();
	test_same_file();
	test_parse();
	test_queue_of();
	test_lists();
	test_rank_state();
	shell("rm -rf %s", top);
	return tap_done();
}
