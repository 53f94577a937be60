/*
 * test_queue: retention and recovery of whole queues. gc removes only
 * finished steps beyond the newest K, its archives read back byte for byte,
 * and a crash at any spool system call of gc --archive, followed by gc
 * again, ends with every old step archived whole and removed and nothing
 * else touched; a call that fails instead (EIO, ENOSPC) is said, and gc
 * again finishes. Likewise a crash (or a failure) at any call of recover,
 * followed by recover again, loses nothing: stale claims returned, live
 * ones and done files kept, old temporaries and gc leftovers dealt with. A
 * spool's status (what grpo-spool status prints) counts every step of
 * every queue.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spool/claim.h"
#include "base/fsys.h"
#include "spool/queue.h"
#include "spool/spool.h"
#include "../tap.h"
#include "../spool_util.h"

static char top[256];

/* Publish and consume: a finished file. */
static int done_file(const char *queue, int64_t step, int rank, const char *name, const char *text)
{
	struct claim c;
	if (spool_put(queue, step, rank, name, text) != 0 || claim_take(&c, queue, step, rank, name, 0, NULL) != 0)
		return -1;
	return claim_retire(&c, NULL);
}

static int exists(const char *fmt, const char *a)
{
	char p[1024];
	struct stat st;
	snprintf(p, sizeof p, fmt, a);
	return stat(p, &st) == 0;
}

static long entries(const char *dir)
{
	char **v;
	size_t n;
	if (fsys_list_dir(dir, FSYS_ANY, &v, &n, NULL) != 0)
		return -1;
	fsys_free_names(v, n);
	return (long)n;
}

/* "member=content;" for every member of a tar.zst, in archive order; -1 on a read error. */
static int read_archive(const char *path, char *out, size_t size)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ent;
	char data[256];
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	out[0] = '\0';
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
		archive_read_free(a);
		return -1;
	}
	int r;
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		la_ssize_t n = archive_read_data(a, data, sizeof data - 1);
		if (n < 0)
			break;
		data[n] = '\0';
		size_t used = strlen(out);
		snprintf(out + used, size - used, "%s=%s;", archive_entry_pathname(ent), data);
	}
	archive_read_free(a);
	return r == ARCHIVE_EOF ? 0 : -1;
}

static void make_spool(const char *spool)
{
	char q[600];
	snprintf(q, sizeof q, "%s/rollouts", spool);
	int bad = 0;
	for (int s = 1; s <= 2; s++)
		for (int r = 0; r < 2; r++) {
			char name[32], text[32];
			snprintf(name, sizeof name, "f%d.zst", r);
			snprintf(text, sizeof text, "g %d %d", s, r);
			bad |= done_file(q, s, r, name, text) != 0;
		}
	if (bad) {
		printf("Bail out! cannot build %s\n", spool);
		exit(1);
	}
}

static int do_gc(const char *spool, const char *arch, struct err *e)
{
	char q[600];
	struct queue_gc_stats st = { 0, 0, 0 };
	snprintf(q, sizeof q, "%s/rollouts", spool);
	return queue_gc(q, 1, arch, &st, e);
}

/* 1 unless make_spool's spool was gc'd with one step kept: step 1 archived whole (its
 * members in got) and removed, step 2 kept, no temporaries. */
static int gc_not_done(const char *spool, const char *arch, char *got, size_t size)
{
	char ap[700], q[700];
	snprintf(ap, sizeof ap, "%s/rollouts-step_1.tar.zst", arch);
	snprintf(q, sizeof q, "%s/rollouts/.tmp", spool);
	int bad = exists("%s/rollouts/step_1", spool);
	bad |= !exists("%s/rollouts/step_2/rank_1/f1.zst", spool) ||
	       !exists("%s/rollouts/step_2/rank_1/.done/f1.zst", spool);
	bad |= entries(q) != 0 || entries(arch) != 1;
	bad |= read_archive(ap, got, size) < 0 ||
	       strcmp(got, "rollouts/step_1/rank_0/f0.zst=g 1 0;rollouts/step_1/rank_1/f1.zst=g 1 1;");
	return bad;
}

/*
 * gc --archive with each of its spool system calls failing in turn, EIO
 * (a bad disk) or ENOSPC (a full one): either it fails saying why, or it
 * succeeds and has done all of its work; then gc again, with the disk
 * well, does it all.
 */
static void test_gc_fault(int errnum)
{
	char spool[600], arch[600], got[1024];
	struct err e;
	long n;
	snprintf(spool, sizeof spool, "%s/gcf/%d/count", top, errnum);
	snprintf(arch, sizeof arch, "%s/gcf/%d/arch.count", top, errnum);
	make_spool(spool);
	fsys_test_fail_at(0, 0);
	do_gc(spool, arch, &e);
	n = fsys_calls_made();
	const char *bad_at = NULL;
	long k;
	for (k = 1; k <= n && !bad_at; k++) {
		snprintf(spool, sizeof spool, "%s/gcf/%d/%ld", top, errnum, k);
		snprintf(arch, sizeof arch, "%s/gcf/%d/arch%ld", top, errnum, k);
		make_spool(spool);
		fsys_test_fail_at(k, errnum);
		int r = do_gc(spool, arch, &e);
		fsys_test_fail_at(0, 0);
		if (r > 0)
			bad_at = "it returned neither 0 nor -1";
		else if (r < 0 && !strstr(e.msg, strerror(errnum)))
			bad_at = e.msg;
		else if (r == 0 && gc_not_done(spool, arch, got, sizeof got))
			bad_at = "it succeeded with its work undone";
		else if (r < 0 && (do_gc(spool, arch, &e) < 0 || gc_not_done(spool, arch, got, sizeof got)))
			bad_at = "gc again did not finish the work";
	}
	ok(n > 10 && !bad_at, "gc --archive with each of its %ld calls failing with %s: said, or done; then "
	   "gc again finishes%s%s", n, strerror(errnum), bad_at ? ": " : "", bad_at ? bad_at : "");
	if (bad_at)
		diag("at call %ld", k - 1);
}

static void test_gc_crash(void)
{
	char spool[600], arch[600];
	struct err e;
	long n = -1, checked = 0;
	int failed = 0;
	for (long k = 0; k <= n || n < 0; k++) {
		snprintf(spool, sizeof spool, "%s/gcc/%ld", top, k);
		snprintf(arch, sizeof arch, "%s/gcc/arch%ld", top, k);
		make_spool(spool);
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			fsys_test_crash_at(k);
			int r = do_gc(spool, arch, &e);
			_exit(r < 0 ? 255 : k == 0 ? (int)fsys_calls_made() : 0);
		}
		int st;
		waitpid(p, &st, 0);
		if (k == 0) {
			n = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			ok(n > 10 && n < 255, "gc --archive of one step makes %ld spool system calls", n);
			if (n <= 10 || n >= 255)
				return;
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != GRPO_FSYS_CRASH_STATUS) {
			ok(0, "gc crashes at call %ld", k);
			failed = 1;
			continue;
		}
		int bad = do_gc(spool, arch, &e) < 0;
		if (bad)
			diag("gc after crash at %ld: %s", k, e.msg);
		char got[1024];
		bad |= gc_not_done(spool, arch, got, sizeof got);
		if (bad) {
			ok(0, "after a crash at call %ld and gc again: step 1 archived whole and removed, "
			   "step 2 kept, no temporaries (archive: %s)", k, got);
			return;
		}
		checked++;
	}
	ok(!failed && checked == n, "a crash at each of them (%ld of %ld checked), then gc again: the old step "
	   "archived whole and removed, the newest kept, no temporaries", checked, n);
}

static void test_gc_rules(void)
{
	char q[600], b[600], arch[600], got[1024], ap[700];
	struct err e;
	struct queue_gc_stats st = { 0, 0, 0 };
	snprintf(q, sizeof q, "%s/rules/rollouts", top);
	snprintf(b, sizeof b, "%s/rules/batches", top);
	snprintf(arch, sizeof arch, "%s/rules/arch", top);
	int bad = 0;
	for (int s = 0; s < 4; s++)
		bad |= done_file(q, s, 0, "a.zst", "A") != 0;
	bad |= spool_put(q, 1, 3, "late.zst", "L") != 0;       /* step 1 unfinished */
	struct claim c;
	bad |= spool_put(q, 2, 0, "held.zst", "H") != 0 || claim_take(&c, q, 2, 0, "held.zst", 0, &e) != 0;
	ok(!bad, "a queue of 4 steps, step 1 with a waiting file, step 2 with a claimed one");
	is_int(queue_gc(q, 1, arch, &st, &e), 0, "gc --keep-last 1");
	ok(st.removed == 1 && st.archived == 1 && st.unfinished == 2, "one step removed and archived, "
	   "two unfinished kept (%ld %ld %ld)", st.removed, st.archived, st.unfinished);
	ok(!exists("%s/step_0", q) && exists("%s/step_1/rank_3/late.zst", q) &&
	   exists("%s/step_2/rank_0/.claimed/held.zst", q) && exists("%s/step_3", q),
	   "step 0 gone; the waiting, claimed and newest steps kept");
	snprintf(ap, sizeof ap, "%s/rollouts-step_0.tar.zst", arch);
	ok(read_archive(ap, got, sizeof got) == 0 && !strcmp(got, "rollouts/step_0/rank_0/a.zst=A;"),
	   "its archive holds its record (%s)", got);
	claim_retire(&c, NULL);

	/* A queue with markers: only steps with DONE are finished, and the
	 * newest of those stays (its producer reads it back). */
	for (int s = 0; s < 4; s++)
		bad |= done_file(b, s, 0, "m.zst", "M") != 0;
	char mk[700];
	for (int s = 1; s <= 2; s++) {
		snprintf(mk, sizeof mk, "%s/step_%d/DONE", b, s);
		FILE *f = fopen(mk, "w");
		fputs("{\"files\":1}\n", f);
		fclose(f);
	}
	memset(&st, 0, sizeof st);
	is_int(queue_gc(b, 1, arch, &st, &e), 0, "gc of a queue with markers");
	ok(exists("%s/step_0", b) && !exists("%s/step_1", b), "a step without DONE is kept, one with it removed");
	ok(exists("%s/step_2", b) && exists("%s/step_3", b), "the newest with DONE is kept beyond --keep-last 1");
	snprintf(ap, sizeof ap, "%s/batches-step_1.tar.zst", arch);
	ok(read_archive(ap, got, sizeof got) == 0 &&
	   !strcmp(got, "batches/step_1/DONE={\"files\":1}\n;batches/step_1/rank_0/m.zst=M;"),
	   "the marker is archived with the step");
}

/* What an interrupted gc leaves in .tmp is finished by recover. */
static void test_leftover(void)
{
	char q[600], from[700], to[700];
	struct err e;
	snprintf(q, sizeof q, "%s/left/rollouts", top);
	int bad = done_file(q, 5, 0, "x.zst", "X") || done_file(q, 6, 0, "y.zst", "Y") ||
		  spool_put(q, 6, 1, "z.zst", "Z") || done_file(q, 7, 0, "w.zst", "W");
	/* step 5 finished and step 6 unfinished, moved aside as gc does; a half-deleted del.* */
	for (int s = 5; s <= 6; s++) {
		snprintf(to, sizeof to, "%s/.tmp/gc.crashed%d", q, s);
		bad |= mkdir(to, 0755) != 0;
		snprintf(from, sizeof from, "%s/step_%d", q, s);
		snprintf(to, sizeof to, "%s/.tmp/gc.crashed%d/step_%d", q, s, s);
		bad |= rename(from, to) != 0;
	}
	snprintf(to, sizeof to, "%s/.tmp/del.crashed", q);
	snprintf(from, sizeof from, "%s/step_7", q);
	bad |= rename(from, to) != 0;
	snprintf(from, sizeof from, "%s/.tmp/del.crashed/rank_0/.done/w.zst", q);
	bad |= unlink(from) != 0; /* its record already deleted: the file looks waiting */
	/* a producer made step 6 anew while gc had it aside: ranks 0 and 2 */
	bad |= spool_put(q, 6, 0, "v.zst", "V") || spool_put(q, 6, 2, "u.zst", "U");
	ok(!bad, "leftovers of an interrupted gc set up");
	struct queue_recover_stats st = { 0, 0, 0, 0 };
	is_int(queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &st, &e), 0, "recover");
	is_int(st.gc_finished, 3, "three leftovers dealt with");
	ok(!exists("%s/step_5", q) && !exists("%s/step_7", q), "the finished step and the half-deleted one are gone");
	ok(exists("%s/step_6/rank_1/z.zst", q) && exists("%s/step_6/rank_0/.done/y.zst", q),
	   "the unfinished step is back whole, its waiting file still waiting");
	ok(exists("%s/step_6/rank_0/v.zst", q) && exists("%s/step_6/rank_2/u.zst", q) &&
	   !exists("%s/step_6/rank_0/.done/v.zst", q),
	   "merged with what a producer published to step 6 meanwhile, nothing of either lost");
	snprintf(to, sizeof to, "%s/.tmp", q);
	is_int(entries(to), 0, "nothing is left in .tmp");
}

/* A consumer that claims QUEUE/step_S/rank_R/NAME and dies holding it, as
 * a killed process leaves its claim: 0 once it has. */
static int dead_claim(const char *q, int64_t step, int rank, const char *name)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct claim c;
		_exit(claim_take(&c, q, step, rank, name, 0, NULL) == 0 ? 0 : 1);
	}
	int st;
	return waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/*
 * A queue for recover: step 1 holds done.zst (done), stale.zst (claimed by
 * a process that died), wait.zst (waiting) and live.zst (claimed by us,
 * in *live); .tmp an old and a new temporary; an interrupted gc left
 * finished step 5 and unfinished step 6 in .tmp/gc.*.
 */
static int make_recover_queue(const char *q, struct claim *live)
{
	char p[700], to[700];
	int bad = done_file(q, 1, 0, "done.zst", "D") || spool_put(q, 1, 0, "stale.zst", "S") ||
		  spool_put(q, 1, 0, "wait.zst", "W") || spool_put(q, 1, 0, "live.zst", "L") ||
		  done_file(q, 5, 0, "five.zst", "5") || spool_put(q, 6, 0, "six.zst", "6");
	bad |= dead_claim(q, 1, 0, "stale.zst");
	bad |= claim_take(live, q, 1, 0, "live.zst", 0, NULL) != 0;
	for (int s = 5; s <= 6; s++) {
		snprintf(to, sizeof to, "%s/.tmp/gc.crashed%d", q, s);
		bad |= mkdir(to, 0755) != 0;
		snprintf(p, sizeof p, "%s/step_%d", q, s);
		snprintf(to, sizeof to, "%s/.tmp/gc.crashed%d/step_%d", q, s, s);
		bad |= rename(p, to) != 0;
	}
	const char *tmps[] = { "old.1.2.3", "new.1.2.4" };
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof p, "%s/.tmp/%s", q, tmps[i]);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		bad |= fd < 0;
		if (fd >= 0)
			close(fd);
	}
	struct timespec old[2] = { { time(NULL) - 3 * 86400, 0 }, { time(NULL) - 3 * 86400, 0 } };
	snprintf(p, sizeof p, "%s/.tmp/old.1.2.3", q);
	bad |= utimensat(AT_FDCWD, p, old, 0) != 0;
	return bad ? -1 : 0;
}

/* What recover must leave, whatever happened before; a description of what is wrong, or NULL. */
static const char *recovered(const char *q)
{
	char p[700];
	static const char *files[] = { "done", "stale", "wait", "live" };
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/step_1/rank_0/%s.zst", q, files[i]);
		if (!exists("%s", p))
			return "a published file is gone";
	}
	if (!exists("%s/step_1/rank_0/.done/done.zst", q) || exists("%s/step_1/rank_0/.claimed/done.zst", q))
		return "the done file is not done";
	if (exists("%s/step_1/rank_0/.claimed/stale.zst", q) || exists("%s/step_1/rank_0/.done/stale.zst", q))
		return "the stale claim was not returned";
	if (exists("%s/step_1/rank_0/.claimed/wait.zst", q) || exists("%s/step_1/rank_0/.done/wait.zst", q))
		return "the waiting file is not waiting";
	if (!exists("%s/step_1/rank_0/.claimed/live.zst", q))
		return "the live claim was returned";
	if (exists("%s/step_5", q))
		return "the finished step left by gc is back";
	if (!exists("%s/step_6/rank_0/six.zst", q) || exists("%s/step_6/rank_0/.done/six.zst", q))
		return "the unfinished step left by gc is not back, waiting";
	snprintf(p, sizeof p, "%s/.tmp", q);
	if (exists("%s/.tmp/old.1.2.3", q) || !exists("%s/.tmp/new.1.2.4", q) || entries(p) != 1)
		return ".tmp does not hold exactly the recent temporary";
	return NULL;
}

static void test_recover_crash(void)
{
	char q[600];
	struct err e;
	struct queue_recover_stats rs;
	long n = -1, checked = 0;
	for (long k = 0; k <= n || n < 0; k++) {
		struct claim live;
		snprintf(q, sizeof q, "%s/recc/%ld/rollouts", top, k);
		if (make_recover_queue(q, &live) < 0) {
			ok(0, "a queue to recover (crash at %ld)", k);
			return;
		}
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			memset(&rs, 0, sizeof rs);
			fsys_test_crash_at(k);
			int r = queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &rs, &e);
			_exit(r < 0 ? 255 : k == 0 ? (int)fsys_calls_made() : 0);
		}
		int st;
		waitpid(p, &st, 0);
		const char *why = NULL;
		if (k == 0) {
			n = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			ok(n > 10 && n < 255, "recover makes %ld spool system calls", n);
			if (n <= 10 || n >= 255)
				return;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != GRPO_FSYS_CRASH_STATUS) {
			why = "it did not crash there";
		}
		memset(&rs, 0, sizeof rs);
		if (!why && queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &rs, &e) < 0)
			why = e.msg;
		if (!why)
			why = recovered(q);
		claim_release(&live, NULL);
		if (why) {
			ok(0, "a crash at recover's call %ld, then recover again: %s", k, why);
			return;
		}
		if (k > 0)
			checked++;
	}
	ok(checked == n, "a crash at each of them (%ld of %ld checked), then recover again: the stale claim "
	   "returned, the live one and the done file kept, the old temporary and gc's leftovers dealt with",
	   checked, n);
}

/*
 * recover with each of its spool system calls failing in turn (EIO, or
 * ENOSPC): either it fails saying why, or it succeeds having done all of
 * its work; then recover again, the disk well, does it all.
 */
static void test_recover_fault(int errnum)
{
	char q[600];
	struct err e;
	struct queue_recover_stats rs;
	struct claim live;
	snprintf(q, sizeof q, "%s/recf/%d/count/rollouts", top, errnum);
	if (make_recover_queue(q, &live) < 0) {
		ok(0, "a queue to recover");
		return;
	}
	fsys_test_fail_at(0, 0);
	queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &rs, &e);
	long n = fsys_calls_made(), k;
	claim_release(&live, NULL);
	const char *why = NULL;
	for (k = 1; k <= n && !why; k++) {
		snprintf(q, sizeof q, "%s/recf/%d/%ld/rollouts", top, errnum, k);
		if (make_recover_queue(q, &live) < 0) {
			ok(0, "a queue to recover (failing at %ld)", k);
			return;
		}
		memset(&rs, 0, sizeof rs);
		fsys_test_fail_at(k, errnum);
		int r = queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &rs, &e);
		fsys_test_fail_at(0, 0);
		if (r > 0)
			why = "it returned neither 0 nor -1";
		else if (r < 0 && !strstr(e.msg, strerror(errnum)))
			why = e.msg;
		else if (r == 0 && recovered(q))
			why = "it succeeded with its work undone";
		else if (r < 0 && (queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &rs, &e) < 0 ||
				   recovered(q)))
			why = "recover again did not finish the work";
		claim_release(&live, NULL);
	}
	ok(n > 10 && !why, "recover with each of its %ld calls failing with %s: said, or done; then recover "
	   "again finishes%s%s", n, strerror(errnum), why ? ": " : "", why ? why : "");
	if (why)
		diag("at call %ld", k - 1);
}

/*
 * A file published late into a step gc already archived and removed makes
 * the step anew; gc then archives it again. The first archive is never
 * replaced: the late file goes into rollouts-step_0.2.tar.zst, alone.
 */
static void test_gc_late(void)
{
	char q[600], arch[600], got[1024], a1[700], a2[700];
	struct err e;
	struct queue_gc_stats st = { 0, 0, 0 };
	snprintf(q, sizeof q, "%s/late/rollouts", top);
	snprintf(arch, sizeof arch, "%s/late/arch", top);
	snprintf(a1, sizeof a1, "%s/rollouts-step_0.tar.zst", arch);
	snprintf(a2, sizeof a2, "%s/rollouts-step_0.2.tar.zst", arch);
	int bad = done_file(q, 0, 0, "a.zst", "A") != 0 || done_file(q, 0, 1, "b.zst", "B") != 0 ||
		  done_file(q, 1, 0, "c.zst", "C") != 0;
	bad |= queue_gc(q, 1, arch, &st, &e) != 0;
	ok(!bad && !exists("%s/step_0", q) && exists("%s", a1), "step 0 archived and removed");
	bad = done_file(q, 0, 0, "late.zst", "L") != 0 || queue_gc(q, 1, arch, &st, &e) != 0;
	ok(!bad && !exists("%s/step_0", q), "a late file makes step 0 anew; gc archives and removes it again");
	got[0] = 0;
	read_archive(a1, got, sizeof got);
	is_int(strcmp(got, "rollouts/step_0/rank_0/a.zst=A;rollouts/step_0/rank_1/b.zst=B;"), 0,
	       "the first archive is kept as it was: %s", got);
	got[0] = 0;
	read_archive(a2, got, sizeof got);
	is_int(strcmp(got, "rollouts/step_0/rank_0/late.zst=L;"), 0,
	       "the late file is in rollouts-step_0.2.tar.zst, alone: %s", got);
	is_int(entries(arch), 2, "two archives, no temporary");

	/* the step made anew holds a.zst again (a re-run): only what differs is archived */
	bad = done_file(q, 0, 0, "a.zst", "A") != 0 || done_file(q, 0, 0, "d.zst", "D") != 0 ||
	      queue_gc(q, 1, arch, &st, &e) != 0;
	snprintf(a2, sizeof a2, "%s/rollouts-step_0.3.tar.zst", arch);
	got[0] = 0;
	read_archive(a2, got, sizeof got);
	is_int(bad ? -1 : strcmp(got, "rollouts/step_0/rank_0/d.zst=D;"), 0,
	       "a file archived before under the same name and size is not archived twice: %s", got);
	bad = done_file(q, 0, 0, "a.zst", "A") != 0 || queue_gc(q, 1, arch, &st, &e) != 0;
	ok(!bad && entries(arch) == 3 && !exists("%s/step_0", q),
	   "a step holding only what is archived already gets no new archive, and is removed");
}

/*
 * Quarantine while a consumer holds the file: a live claim (this process's,
 * its lock held) keeps the file where it is; the claim of a consumer that
 * died is returned first, as recover would, and the file moved.
 */
static void test_quarantine(void)
{
	char q[600], f[700], dest[800], qf[800];
	struct err e;
	struct claim c;
	snprintf(q, sizeof q, "%s/quar/scored", top);
	snprintf(f, sizeof f, "%s/step_2/rank_1/x.zst", q);
	snprintf(qf, sizeof qf, "%s/.quarantine/step_2/rank_1/x.zst", q);
	int bad = spool_put(q, 2, 1, "x.zst", "X") != 0 || claim_take(&c, q, 2, 1, "x.zst", 0, &e) != 0;
	ok(!bad, "a file claimed by a live consumer");
	struct claim_id id;
	is_int(queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e), 1,
	       "quarantine says a live consumer holds it");
	ok(id.pid == (long)getpid() && exists("%s", f) && !exists("%s", qf), "naming it, and moving nothing");
	claim_release(&c, NULL);

	ok(dead_claim(q, 2, 1, "x.zst") == 0, "a consumer claims it and dies");
	is_int(queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e), 0,
	       "quarantine returns the stale claim and moves the file");
	char claimed[800];
	snprintf(claimed, sizeof claimed, "%s/step_2/rank_1/.claimed/x.zst", q);
	ok(strcmp(dest, qf) == 0 && exists("%s", qf) && !exists("%s", f) && !exists("%s", claimed),
	   "to QUEUE/.quarantine/step_2/rank_1/x.zst, no claim record left");
	bad = spool_put(q, 2, 1, "x.zst", "Y") != 0;
	ok(!bad && exists("%s", f), "the name is free again: a good copy can be published");
	is_int(queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e), -1,
	       "a second quarantine of the same name is refused: %s", e.msg);

	snprintf(f, sizeof f, "%s/step_2/rank_1/d.zst", q);
	bad = done_file(q, 2, 1, "d.zst", "D") != 0;
	ok(!bad && queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e) == -1 &&
	   strstr(e.msg, "d.zst: consumed already (") && exists("%s", f),
	   "a consumed file is left where it is: %s", e.msg);
	snprintf(f, sizeof f, "%s/step_2/rank_1/.h.zst", q);
	FILE *h = fopen(f, "w");
	bad = !h || fclose(h) != 0;
	ok(!bad && queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e) == -1 &&
	   strstr(e.msg, ".h.zst: not a published spool file") && exists("%s", f),
	   "so is a dot-name in a rank directory, which no consumer reads: %s", e.msg);
}

/* QUEUE/step_2/rank_1/x.zst published, claimed by a consumer that died when claimed is set; 0 or -1. */
static int quarantine_queue(const char *q, int claimed)
{
	return spool_put(q, 2, 1, "x.zst", "X") != 0 || (claimed && dead_claim(q, 2, 1, "x.zst") != 0) ? -1 : 0;
}

/* 1 unless x.zst is in quarantine and gone from the queue. */
static int not_quarantined(const char *q)
{
	return exists("%s/step_2/rank_1/x.zst", q) || !exists("%s/.quarantine/step_2/rank_1/x.zst", q);
}

/* 1 when x.zst's claim record is held by a live process (this one). */
static int claim_live(const char *q)
{
	char p[800];
	struct claim_id id;
	long long age;
	snprintf(p, sizeof p, "%s/step_2/rank_1/.claimed/x.zst", q);
	return claim_check(p, 0, time(NULL), &id, &age, NULL) == 0;
}

/*
 * Quarantine with each of its spool calls failing in turn (on a waiting
 * file, and on one a dead consumer holds, whose claim is returned first):
 * it fails saying why, never "moved" or "a live consumer holds it" (but
 * where only the removal of a claim's temporary failed, which is left in
 * QUEUE/.tmp for recover), and holds no claim once it returns (a record
 * it could not remove is left stale, for recover); run again it finishes,
 * saying "moved already" (2) where the first call had moved the file.
 */
static void test_quarantine_fault(int errnum, int claimed)
{
	char q[600], f[700], dest[800], tmp[700];
	struct claim_id id;
	struct err e;
	snprintf(q, sizeof q, "%s/quarf/%d/%d/count/scored", top, errnum, claimed);
	snprintf(f, sizeof f, "%s/step_2/rank_1/x.zst", q);
	if (quarantine_queue(q, claimed) < 0) {
		ok(0, "a file to quarantine");
		return;
	}
	fsys_test_fail_at(0, 0);
	int r = queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e);
	long n = fsys_calls_made(), k;
	const char *why = r != 0 || not_quarantined(q) ? "it fails with no fault" : NULL;
	for (k = 1; k <= n && !why; k++) {
		snprintf(q, sizeof q, "%s/quarf/%d/%d/%ld/scored", top, errnum, claimed, k);
		snprintf(f, sizeof f, "%s/step_2/rank_1/x.zst", q);
		if (quarantine_queue(q, claimed) < 0) {
			ok(0, "a file to quarantine (failing at %ld)", k);
			return;
		}
		fsys_test_fail_at(k, errnum);
		r = queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e);
		fsys_test_fail_at(0, 0);
		int moved = !exists("%s", f);
		snprintf(tmp, sizeof tmp, "%s/.tmp", q);
		if (r == 0 && (not_quarantined(q) || entries(tmp) == 0))
			why = "a failure not said, or said moved with the file not moved";
		else if (r > 0)
			why = "a failure said as a live consumer";
		else if (r == 0)
			continue;   /* the losing claim's temporary not removed: left to recover, rightly */
		else if (!strstr(e.msg, strerror(errnum)))
			why = e.msg;
		else if (claim_live(q))
			why = "its claim held on after it returned (recover cannot return it while we live)";
		else if (queue_quarantine(f, 0, time(NULL), dest, sizeof dest, &id, &e) != (moved ? 2 : 0) ||
			 not_quarantined(q))
			why = moved ? "run again it did not say moved already" : "run again it did not finish";
	}
	ok(n > 5 && !why, "quarantine of a %s file with each of its %ld calls failing with %s: said (or only "
	   "a temporary left); run again, done%s%s", claimed ? "dead consumer's" : "waiting", n, strerror(errnum), why ? ": " : "",
	   why ? why : "");
	if (why)
		diag("at call %ld", k - 1);
}

static void test_status(void)
{
	char spool[600], q[700], pol[700];
	struct err e;
	struct claim c;
	struct queue_status st;
	snprintf(spool, sizeof spool, "%s/status", top);
	is_int(queue_status(spool, 60, time(NULL), &st, &e), 1, "status of no spool: 1");
	queue_status_free(&st);
	snprintf(q, sizeof q, "%s/rollouts", spool);
	int bad = spool_put(q, 0, 0, "a.zst", "A") != 0 || done_file(q, 1, 0, "b.zst", "B") != 0 ||
		  spool_put(q, 1, 1, "c.zst", "C") != 0;
	snprintf(q, sizeof q, "%s/scored", spool);
	bad |= spool_put(q, 1, 0, "d.zst", "D") != 0 || claim_take(&c, q, 1, 0, "d.zst", 0, &e) != 0;
	snprintf(pol, sizeof pol, "%s/policy/step_3", spool);
	sh("mkdir -p %s", pol);
	ok(!bad, "a spool: rollouts steps 0 and 1, scored step 1 with a claim, policy step 3");
	is_int(queue_status(spool, 60, time(NULL), &st, &e), 0, "status of it");
	ok(st.n_queues == 2 && strcmp(st.queues[0].name, "rollouts") == 0 &&
	   strcmp(st.queues[1].name, "scored") == 0, "two queues, sorted, policy left out");
	const struct queue_step *r = st.n_queues == 2 ? st.queues[0].steps : NULL;
	ok(r && st.queues[0].n_steps == 2 && r[0].step == 0 && r[0].waiting == 1 && r[0].done == 0 &&
	   r[1].step == 1 && r[1].ranks == 2 && r[1].waiting == 1 && r[1].done == 1 && r[1].claimed == 0,
	   "rollouts: step 0 one waiting; step 1 two ranks, one waiting, one done");
	const struct queue_step *d = st.n_queues == 2 ? st.queues[1].steps : NULL;
	ok(d && st.queues[1].n_steps == 1 && d[0].claimed == 1 && d[0].claims[0].rank == 0 &&
	   strcmp(d[0].claims[0].name, "d.zst") == 0 && d[0].claims[0].id.pid == (long)getpid() &&
	   !d[0].claims[0].stale, "scored: step 1's claim, its holder and not stale");
	ok(st.policy_step == 3 && st.collect_step == 1 && st.n_errors == 0,
	   "policy step 3, collecting step 1, nothing unreadable");
	queue_status_free(&st);
	claim_release(&c, NULL);
}

/*
 * queue_retire_step, as grpo-step calls it once a batch step is trained:
 * every waiting file of every rank is retired, a stale claim is returned
 * and its file retired, a live consumer's claim is left to it, done files
 * stay done and other steps are not touched; a second call retires nothing.
 */
static void test_retire_step(void)
{
	char q[600];
	struct err e;
	struct claim live;
	long n = -1;
	snprintf(q, sizeof q, "%s/retire/batches", top);
	int bad = spool_put(q, 4, 0, "a.zst", "A") || spool_put(q, 4, 0, "stale.zst", "S") ||
		  spool_put(q, 4, 0, "live.zst", "L") || done_file(q, 4, 0, "done.zst", "D") ||
		  spool_put(q, 4, 2, "b.zst", "B") || spool_put(q, 5, 0, "next.zst", "N");
	bad |= dead_claim(q, 4, 0, "stale.zst");
	bad |= claim_take(&live, q, 4, 0, "live.zst", 0, NULL) != 0;
	ok(!bad, "step 4: rank 0 waiting, stale-claimed, live-claimed and done files, rank 2 a waiting one");
	is_int(queue_retire_step(q, 4, &n, &e), 0, "retire step 4");
	is_int(n, 3, "three files retired: both waiting ones and the stale claim's");
	ok(exists("%s/step_4/rank_0/.done/a.zst", q) && exists("%s/step_4/rank_2/.done/b.zst", q) &&
	   exists("%s/step_4/rank_0/.done/stale.zst", q) && !exists("%s/step_4/rank_0/.claimed/stale.zst", q),
	   "each rank's waiting files and the stale claim's are done");
	ok(exists("%s/step_4/rank_0/.claimed/live.zst", q) && !exists("%s/step_4/rank_0/.done/live.zst", q),
	   "the live consumer keeps its claim");
	ok(!exists("%s/step_5/rank_0/.done/next.zst", q), "the next step is not touched");
	struct queue_step s;
	bad = queue_step_state(q, 4, 0, 0, time(NULL), &s, &e) != 0;
	ok(!bad && s.waiting == 0 && s.claimed == 1 && s.done == 4, "step 4: none waiting, one claimed, "
	   "four done (%ld %ld %ld)", s.waiting, s.claimed, s.done);
	n = -1;
	bad = queue_retire_step(q, 4, &n, &e) != 0;
	ok(!bad && n == 0, "a second call retires nothing (%ld)", n);
	bad = claim_retire(&live, &e) != 0;
	ok(!bad && queue_retire_step(q, 4, NULL, &e) == 0, "nor a third, once the consumer is done");
}

/*
 * A queue whose only DONE marker is on its oldest step still uses markers:
 * gc keeps that step (its producer reads it back) and removes no step
 * without DONE, however consumed (its producer may still be writing it).
 */
static void test_gc_oldest_marker(void)
{
	char q[600], mk[700];
	struct err e;
	struct queue_gc_stats st = { 0, 0, 0 };
	snprintf(q, sizeof q, "%s/oldmark/batches", top);
	int bad = 0;
	for (int s = 1; s <= 3; s++)
		bad |= done_file(q, s, 0, "m.zst", "M") != 0;
	snprintf(mk, sizeof mk, "%s/step_1/DONE", q);
	FILE *f = fopen(mk, "w");
	bad |= !f || fputs("{\"files\":1}\n", f) < 0;
	if (f)
		fclose(f);
	ok(!bad && queue_uses_markers(q, &e) == 1, "steps 1 to 3 consumed, DONE on step 1 only: a marked queue");
	is_int(queue_gc(q, 0, NULL, &st, &e), 0, "gc --keep-last 0");
	ok(st.removed == 0 && exists("%s/step_1/DONE", q) && exists("%s/step_2", q) && exists("%s/step_3", q),
	   "nothing removed: step 1 is the newest with DONE, steps 2 and 3 have none (%ld removed)", st.removed);
}

/* status: a dead holder's claim is shown stale; step 0 is a step; a step
 * that cannot be read is an error, not a step with nothing in it. */
static void test_status_more(void)
{
	char spool[600], q[700], pol[700];
	struct err e;
	struct queue_status st;
	snprintf(spool, sizeof spool, "%s/status0", top);
	snprintf(q, sizeof q, "%s/rollouts", spool);
	snprintf(pol, sizeof pol, "%s/policy/step_0", spool);
	sh("mkdir -p %s", pol);
	int bad = spool_put(q, 0, 0, "a.zst", "A") != 0 || dead_claim(q, 0, 0, "a.zst");
	ok(!bad, "a spool at step 0: policy step 0, a rollout claimed by a consumer that died");
	is_int(queue_status(spool, 60, time(NULL), &st, &e), 0, "status of it");
	const struct queue_step *r = st.n_queues == 1 && st.queues[0].n_steps == 1 ? st.queues[0].steps : NULL;
	ok(r && r[0].claimed == 1 && r[0].claims[0].stale == 1, "its claim is shown stale");
	ok(st.policy_step == 0 && st.collect_step == 0, "policy and collection at step 0 (%lld %lld)",
	   (long long)st.policy_step, (long long)st.collect_step);
	queue_status_free(&st);
	struct queue_step s;
	fsys_test_fail_at(1, EIO);
	int rc = queue_step_state(q, 0, 1, 60, time(NULL), &s, &e);
	fsys_test_fail_at(0, 0);
	ok(rc == -1 && strstr(e.msg, strerror(EIO)), "a step whose first look fails: -1, said (%d)", rc);
	if (rc == 0)
		free(s.claims);
}

/*
 * recover in step 0, the first step of every run: a dead consumer's claim
 * there is returned as anywhere else; and a directory in .tmp that is not
 * gc's (another writer's temporary, holding step_N of its own) is left
 * where it is, not merged into the queue as an interrupted gc's step.
 */
static void test_recover_step0(void)
{
	char q[600], other[700];
	struct err e;
	snprintf(q, sizeof q, "%s/rec0/rollouts", top);
	int bad = spool_put(q, 0, 0, "a.zst", "A") != 0 || spool_put(q, 9, 0, "keep.zst", "K") != 0 ||
		  dead_claim(q, 0, 0, "a.zst");
	snprintf(other, sizeof other, "%s/.tmp/writer.1.2.3/step_9/rank_0", q);
	sh("mkdir -p %s", other);
	snprintf(other, sizeof other, "%s/.tmp/writer.1.2.3/step_9/rank_0/other.zst", q);
	FILE *f = fopen(other, "w");
	bad |= !f;
	if (f)
		fclose(f);
	ok(!bad, "step 0 claimed by a consumer that died; .tmp/writer.1.2.3/step_9 of another writer");
	struct queue_recover_stats rs = { 0, 0, 0, 0 };
	is_int(queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, time(NULL), &rs, &e), 0, "recover");
	ok(rs.returned == 1 && !exists("%s/step_0/rank_0/.claimed/a.zst", q), "the claim in step 0 is returned");
	ok(exists("%s/.tmp/writer.1.2.3/step_9/rank_0/other.zst", q) && !exists("%s/step_9/rank_0/other.zst", q) &&
	   rs.gc_finished == 0, "the other writer's directory is left in .tmp, nothing of it in the queue");
}

/*
 * gc without --archive removes a finished step whatever number of files it
 * holds; and before it removes a marked step whose DONE records a job of
 * plain inputs, it keeps that job in QUEUE/.jobs, or grpo-pack would pack
 * those inputs again (and the trainer train them twice).
 */
static void test_gc_plain_jobs(void)
{
	char q[600], mk[700], jobs[700], text[512];
	struct err e;
	struct queue_gc_stats st = { 0, 0, 0 };
	snprintf(q, sizeof q, "%s/gcjobs/batches", top);
	int bad = done_file(q, 1, 0, "a.zst", "A") || done_file(q, 1, 1, "b.zst", "B") ||
		  done_file(q, 1, 1, "c.zst", "C") || done_file(q, 2, 0, "d.zst", "D");
	for (int s = 1; s <= 2; s++) {
		snprintf(mk, sizeof mk, "%s/step_%d/DONE", q, s);
		FILE *f = fopen(mk, "w");
		bad |= !f || fprintf(f, "{\"step\":%d,\"runs\":[],\"job\":{\"id\":\"00000000000000ab\",\"first_step\":1,"
				     "\"sequences\":3,\"finished\":%s,\"done\":[]}}\n", s, s == 1 ? "false" : "true") < 0;
		if (f)
			fclose(f);
	}
	ok(!bad, "two marked steps, step 1 of three files over two ranks, each DONE with the job of plain inputs");
	is_int(queue_gc(q, 1, NULL, &st, &e), 0, "gc --keep-last 1, no archive");
	ok(st.removed == 1 && !exists("%s/step_1", q) && exists("%s/step_2/DONE", q),
	   "step 1 removed whole (%ld removed, %ld unfinished)", st.removed, st.unfinished);
	snprintf(jobs, sizeof jobs, "%s/.jobs", q);
	FILE *f = fopen(jobs, "r");
	size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = '\0';
	ok(strstr(text, "{\"step\":1,\"job\":{\"id\":\"00000000000000ab\",\"first_step\":1,") != NULL,
	   "its job is kept in QUEUE/.jobs: %s", n ? text : "(none)");
}

int main(void)
{
	/* tmpfs where there is one: the crash loops fsync hundreds of times */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(top, sizeof top, "%s/grpo-test-queue.%ld", base, (long)getpid());
	sh("rm -rf %s", top);
	sh("mkdir -p %s", top);
	test_gc_rules();
	test_gc_crash();
	test_gc_fault(EIO);
	test_gc_fault(ENOSPC);
	test_gc_late();
	test_quarantine();
	test_quarantine_fault(EIO, 0);
	test_quarantine_fault(ENOSPC, 0);
	test_quarantine_fault(EIO, 1);
	test_quarantine_fault(ENOSPC, 1);
	test_status();
	test_retire_step();
	test_status_more();
	test_gc_oldest_marker();
	test_recover_step0();
	test_gc_plain_jobs();
	test_leftover();
	test_recover_crash();
	test_recover_fault(EIO);
	test_recover_fault(ENOSPC);
	sh("rm -rf %s", top);
	return tap_done();
}
