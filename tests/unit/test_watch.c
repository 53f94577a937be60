/*
 * test_watch: the consumer loop of lib/spool/watch.h in one process. Files come
 * out in step, rank, name order within a step range; with follow, a file
 * published while the loop waits (in a known or a new step directory) is
 * handed out, through inotify events, through the overflow rescan alone
 * (the test hook), or by polling; a signal stops the loop after the file
 * in hand with nothing claimed (SIGTERM or SIGINT). The periodic rescan
 * alone finds a file no event announces; only the newest WATCH_STEPS steps
 * are watched, however many the queue keeps; a queue on a remote file system
 * (the GRPO_FSYS_REMOTE hook) is polled without being asked; claims in
 * hand, detached or waited over are renewed every lease/3, also while
 * watch_next waits, and a renewal that fails fails watch_next. A file the
 * consumer released waits for the next rescan; files that arrive together
 * come out in order; a new rank of a known step is followed; a real
 * overflow of the kernel's event queue makes a rescan; a scan whose file
 * system calls fail, each in turn, fails or hands out the first file,
 * never skips one; a claim left in hand is released by the next call;
 * watch_close gives the signal actions back. alarm() turns a hang into a
 * failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spool/claim.h"
#include "base/fsys.h"
#include "spool/spool.h"
#include "spool/watch.h"
#include "../tap.h"
#include "../spool_util.h"

static char top[256];

/* A file whose text is its name. */
static int publish(const char *queue, int64_t step, int rank, const char *name)
{
	return spool_put(queue, step, rank, name, name);
}

/* Take and retire the next file; "step/rank/name" into got, or "" at the end. */
static int next(struct watch *w, char *got, size_t size)
{
	struct claim *c;
	struct err e;
	got[0] = '\0';
	int r = watch_next(w, &c, &e);
	if (r < 0)
		diag("watch_next: %s", e.msg);
	if (r <= 0)
		return r;
	snprintf(got, size, "%lld/%d/%s", (long long)c->step, c->rank, c->name);
	return claim_retire(c, &e) < 0 ? -1 : 1;
}

static void test_order(void)
{
	char q[512], all[512] = "", got[300];
	struct err e;
	snprintf(q, sizeof q, "%s/order", top);
	publish(q, 10, 0, "a.zst");
	publish(q, 9, 2, "b.zst");
	publish(q, 9, 10, "c.zst");
	publish(q, 9, 2, "a.zst");
	publish(q, 2, 0, "z.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.from = 9;
	struct watch *w = watch_open(q, &o, &e);
	while (w && next(w, got, sizeof got) > 0)
		snprintf(all + strlen(all), sizeof all - strlen(all), "%s ", got);
	watch_close(w);
	is_int(strcmp(all, "9/2/a.zst 9/2/b.zst 9/10/c.zst 10/0/a.zst "), 0,
	       "step, then rank numerically, then name; steps before --from left alone (%s)", all);
	o.from = -1;
	o.to = 2;
	w = watch_open(q, &o, &e);
	next(w, got, sizeof got);
	ok(!strcmp(got, "2/0/z.zst") && next(w, got, sizeof got) == 0, "--to: only the earlier step");
	watch_close(w);

	/* a released file is not handed straight back to the same loop */
	publish(q, 11, 0, "r.zst");
	o.to = -1;
	w = watch_open(q, &o, &e);
	struct claim *c;
	int r = watch_next(w, &c, &e);
	ok(r == 1 && !strcmp(c->name, "r.zst") && claim_release(c, &e) == 0, "take and release a file");
	is_int(watch_next(w, &c, &e), 0, "the same pass does not hand it out again");
	watch_close(w);
	w = watch_open(q, &o, &e);
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "11/0/r.zst"), "a later run does");
	watch_close(w);
}

/* mode 0: inotify; 1: inotify, every event handled as an overflow; 2: polling */
static void test_follow(int mode)
{
	static const char *names[] = { "inotify", "overflow hook", "poll" };
	char q[512], got[300];
	struct err e;
	snprintf(q, sizeof q, "%s/follow%d", top, mode);
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.signals = 1;
	o.rescan = 3600; /* no periodic rescan can help: events, the overflow or polling must */
	if (mode == 2)
		o.poll = 0.02;
	struct sigaction before[2];
	sigaction(SIGINT, NULL, &before[0]);
	sigaction(SIGTERM, NULL, &before[1]);
	struct watch *w = watch_open(q, &o, &e);
	if (!w) {
		ok(0, "[%s] watch_open: %s", names[mode], e.msg);
		return;
	}
	if (mode == 1)
		watch_test_overflow(w);
	publish(q, 1, 0, "first.zst");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "1/0/first.zst"), "[%s] a waiting file", names[mode]);
	publish(q, 1, 0, "second.zst");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "1/0/second.zst"),
	   "[%s] a file published into a known directory while waiting", names[mode]);
	publish(q, 4, 7, "new.zst");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "4/7/new.zst"),
	   "[%s] a file in a step_N/rank_X made while waiting", names[mode]);
	/* a claim released elsewhere (IN_DELETE in .claimed) wakes the loop */
	struct claim other;
	publish(q, 4, 7, "back.zst");
	int r = claim_take(&other, q, 4, 7, "back.zst", 0, &e);
	char dir[600];
	snprintf(dir, sizeof dir, "%s/step_4/rank_7/.claimed/back.zst", q);
	struct stat st;
	ok(r == 0 && stat(dir, &st) == 0 && claim_release(&other, &e) == 0, "[%s] a claim taken and released by another", names[mode]);
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "4/7/back.zst"),
	   "[%s] the released file is handed out", names[mode]);
	struct watch_stats s;
	watch_stats(w, &s);
	if (mode == 1)
		ok(s.overflows > 0 && s.scans > 1, "[%s] found by overflow rescans (%ld overflows, %ld scans)",
		   names[mode], s.overflows, s.scans);
	else if (mode == 2)
		ok(s.polling && s.scans > 1, "[%s] found by polling (%ld scans)", names[mode], s.scans);
	else
		ok(!s.polling && s.overflows == 0 && s.events > 0 && s.scans == 1,
		   "[%s] found by events alone (%ld events, one scan)", names[mode], s.events);

	/* A signal while a file is in hand: the loop stops at its next call. */
	int sig = mode == 1 ? SIGINT : SIGTERM;
	const char *sn = sig == SIGINT ? "SIGINT" : "SIGTERM";
	publish(q, 5, 0, "last.zst");
	publish(q, 5, 0, "never.zst");
	struct claim *c;
	r = watch_next(w, &c, &e);
	ok(r == 1 && !strcmp(c->name, "last.zst"), "[%s] a file in hand", names[mode]);
	raise(sig); /* blocked by the loop: pending until it asks */
	ok(claim_retire(c, &e) == 0, "[%s] it is finished after %s", names[mode], sn);
	is_int(watch_next(w, &c, &e), 0, "[%s] and the loop stops", names[mode]);
	is_int(watch_stopped(w), sig, "[%s] saying why (%s)", names[mode], sn);
	watch_close(w);
	struct sigaction after[2];
	sigset_t blocked;
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	sigaction(SIGINT, NULL, &after[0]);
	sigaction(SIGTERM, NULL, &after[1]);
	ok(after[0].sa_handler == before[0].sa_handler && after[1].sa_handler == before[1].sa_handler &&
	   !sigismember(&blocked, SIGINT) && !sigismember(&blocked, SIGTERM),
	   "[%s] watch_close gives SIGINT and SIGTERM back the actions they had before, unblocked",
	   names[mode]);
	snprintf(dir, sizeof dir, "%s/step_5/rank_0/.claimed", q);
	char **v;
	size_t n;
	fsys_list_dir(dir, FSYS_FILES, &v, &n, NULL);
	is_int((long)n, 0, "[%s] nothing is left claimed", names[mode]);
	fsys_free_names(v, n);
}

/* With follow, a file the consumer released (its command failed) is not
 * handed straight back when the removal of its claim is notified, only
 * after the next rescan; files that arrive together while the loop waits
 * (notified in one read, or one notified and others listed in a new step)
 * come out in step, rank, name order, not in the order they came. */
static void test_turns(void)
{
	char q[512], got[300];
	struct err e;
	struct claim *c;
	snprintf(q, sizeof q, "%s/turns", top);
	publish(q, 0, 0, "0.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 3600; /* no rescan gives a.zst back: the events alone */
	struct watch *w = watch_open(q, &o, &e);
	/* a first file, so that rank_0/.claimed exists and is watched */
	ok(w && next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/0.zst"), "[turns] a first file (%s)", got);
	if (!w)
		return;
	publish(q, 0, 0, "a.zst");
	int r = watch_next(w, &c, &e);
	ok(r == 1 && !strcmp(c->name, "a.zst") && claim_release(c, &e) == 0, "[turns] a file taken and released");
	publish(q, 0, 0, "b.zst");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/b.zst"),
	   "[turns] the next file is a later one, not the one released (%s)", got);
	publish(q, 0, 0, "z.zst");
	publish(q, 2, 0, "d.zst");
	publish(q, 2, 0, "c.zst");
	publish(q, 0, 0, "y.zst");
	char all[512] = "";
	for (int i = 0; i < 4 && next(w, got, sizeof got) == 1; i++)
		snprintf(all + strlen(all), sizeof all - strlen(all), "%s ", got);
	is_int(strcmp(all, "0/0/y.zst 0/0/z.zst 2/0/c.zst 2/0/d.zst "), 0,
	       "[turns] four files that came together, in order (%s)", all);
	publish(q, 0, 3, "r.zst");
	watch_deadline(w, 10);
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "0/3/r.zst"),
	   "[turns] a file in a new rank of a step already watched, by its events (%s)", got);
	watch_close(w);

	/* the released file's turn comes at the next rescan */
	o.rescan = 0.2;
	w = watch_open(q, &o, &e);
	r = w ? watch_next(w, &c, &e) : -1;
	ok(r == 1 && !strcmp(c->name, "a.zst") && claim_release(c, &e) == 0, "[turns] taken and released again");
	watch_deadline(w, 20);
	r = watch_next(w, &c, &e);
	ok(r == 1 && !strcmp(c->name, "a.zst") && claim_release(c, &e) == 0,
	   "[turns] handed out again after a rescan, and released again");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/a.zst"),
	   "[turns] and again after a later rescan, every 0.2 s as asked (%s)", got);
	watch_close(w);
}

/* A scan whose file system calls fail (EIO, a bad disk), each in turn:
 * watch_next fails saying so, or hands out the first file; it never ends
 * the pass as though the queue were empty, nor skips a file by handing out
 * a later one. follow 0: the first scan of one pass; 1: the listing of a
 * new step, made while watch_next waits, that an event brings. */
static void test_scan_fails(int follow)
{
	char q[512], got[300];
	struct err e;
	struct claim *c;
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = follow;
	o.rescan = 3600; /* the events alone */
	const char *why = NULL;
	long n = -1, k;
	for (k = 0; !why && (n < 0 || k <= n); k++) {
		snprintf(q, sizeof q, "%s/fails%d/%ld", top, follow, k);
		publish(q, 0, 0, "a.zst");
		publish(q, 0, 1, "b.zst");
		struct watch *w = watch_open(q, &o, &e);
		if (w && follow && (next(w, got, sizeof got) != 1 || next(w, got, sizeof got) != 1)) {
			why = "the files waiting before the step";
			break;
		}
		if (follow) {
			publish(q, 1, 0, "a.zst");
			publish(q, 1, 1, "b.zst");
			watch_deadline(w, 10);
		}
		fsys_test_fail_at(k, EIO); /* k = 0: none fails, and the calls are counted */
		int r = w ? watch_next(w, &c, &e) : -1;
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		if (r == 0)
			why = "watch_next returned 0, as though there were no more files";
		else if (r == 1 && strcmp(c->name, "a.zst") != 0)
			why = "a later file was handed out";
		else if (r < 0 && !strstr(e.msg, strerror(EIO)))
			why = e.msg;
		watch_close(w);
	}
	ok(n > 5 && !why, "[fails] %s with each of its %ld calls failing: said, or the first file%s%s",
	   follow ? "a new step's listing" : "the first scan", n, why ? ": " : "", why ? why : "");
	if (why)
		diag("at call %ld", k - 1);
}

/* A claim still in hand when watch_next is called again (the caller went
 * on without retiring or releasing it) is released, waiting for a later
 * pass, and the next file handed out; a claim whose renewal fails makes
 * watch_next fail, saying so, rather than consume on while it lapses. */
static void test_in_hand(void)
{
	char q[512], rec[700];
	struct err e;
	struct claim *c, kept;
	struct stat st;
	snprintf(q, sizeof q, "%s/inhand", top);
	publish(q, 0, 0, "a.zst");
	publish(q, 0, 0, "b.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.lease = 1; /* renewed every third of a second */
	struct watch *w = watch_open(q, &o, &e);
	int r = w ? watch_next(w, &c, &e) : -1;
	ok(r == 1 && !strcmp(c->name, "a.zst"), "[in hand] a file handed out");
	r = w ? watch_next(w, &c, &e) : -1;
	snprintf(rec, sizeof rec, "%s/step_0/rank_0/.claimed/a.zst", q);
	ok(r == 1 && !strcmp(c->name, "b.zst") && stat(rec, &st) != 0,
	   "[in hand] called again without retiring it: the next file, the first one no longer claimed");
	if (r != 1) {
		watch_close(w);
		return;
	}
	watch_detach(w, &kept);
	usleep(400000); /* a renewal is due */
	fsys_test_fail_at(1, EIO);
	r = watch_next(w, &c, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && strstr(e.msg, strerror(EIO)), "[in hand] a renewal that fails: watch_next fails, saying so (%d)", r);
	claim_release(&kept, NULL);
	watch_close(w);
	o.lease = 3000;
	w = watch_open(q, &o, &e);
	double in = w ? watch_renew_in(w) : -1;
	ok(in > 750 && in <= 1000, "[in hand] with a lease of 3000 s, the first renewal is due in a third of it (%g s)", in);
	watch_close(w);
}

/* The kernel's event queue overflowing (more events unread than
 * fs.inotify.max_queued_events) loses the events of files published
 * meanwhile: the overflow makes a rescan, which finds them. The burst is of
 * hidden directories made and removed in a watched rank, which the loop
 * passes over. */
static void test_overflow(void)
{
	char q[512], got[300], d[700];
	struct err e;
	long max = 0;
	FILE *f = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
	if (!f || fscanf(f, "%ld", &max) != 1 || max <= 0 || max > 1000000) {
		if (f)
			fclose(f);
		skip("no fs.inotify.max_queued_events to overflow");
		return;
	}
	fclose(f);
	snprintf(q, sizeof q, "%s/overflow", top);
	publish(q, 0, 0, "a.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 3600; /* no periodic rescan can help: the overflow must */
	struct watch *w = watch_open(q, &o, &e);
	ok(w && next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/a.zst"), "[overflow] a first file");
	if (!w)
		return;
	int bad = 0;
	for (long i = 0; i <= max && !bad; i++) { /* each its own name: alike events would be merged */
		snprintf(d, sizeof d, "%s/step_0/rank_0/.burst%ld", q, i);
		bad = mkdir(d, 0700) != 0 || rmdir(d) != 0;
	}
	publish(q, 0, 0, "lost.zst");
	watch_deadline(w, 10);
	struct watch_stats s;
	int r = next(w, got, sizeof got);
	watch_stats(w, &s);
	ok(!bad && r == 1 && !strcmp(got, "0/0/lost.zst") && s.overflows == 1 && s.scans == 2,
	   "[overflow] %ld events unread: a file whose event was lost, found by the rescan an overflow makes "
	   "(%ld overflows, %ld scans)", max + 1, s.overflows, s.scans);
	watch_close(w);
}

/* A file that becomes waiting again without any event (its done record
 * removed: .done is not watched) is found by the periodic rescan alone. */
static void test_rescan(void)
{
	char q[512], got[300], p[700];
	struct err e;
	snprintf(q, sizeof q, "%s/rescan", top);
	publish(q, 0, 0, "again.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 0.3;
	struct watch *w = watch_open(q, &o, &e);
	ok(w && next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/again.zst"), "[rescan] a file consumed");
	if (!w)
		return;
	snprintf(p, sizeof p, "%s/step_0/rank_0/.done/again.zst", q);
	unlink(p);
	watch_deadline(w, 10);
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/again.zst"),
	   "[rescan] made waiting again behind the watch's back, it is handed out again");
	struct watch_stats s;
	watch_stats(w, &s);
	ok(!s.polling && s.overflows == 0 && s.scans >= 2,
	   "[rescan] by a periodic rescan (%ld scans, no overflow, not polling)", s.scans);
	/* each rescan adds the watches again: the same four directories (the
	 * queue, step_0, rank_0, its .claimed), so still four watches */
	long scans = s.scans;
	while (s.scans < scans + 3) {
		watch_deadline(w, 0.1);
		next(w, got, sizeof got);
		watch_stats(w, &s);
	}
	is_int(s.watches, 4, "[rescan] %ld rescans later, 4 watches", s.scans - scans);
	watch_close(w);
}

/* A queue that keeps every step: only the newest WATCH_STEPS are watched,
 * 3 watches each here (step_N, rank_0, its .claimed) and the queue's, so
 * the watches stay flat as steps come; a file published into an older
 * step is found by the periodic rescan. (A .claimed is watched once the
 * event of its making is read, so at first there may be fewer.) */
static void test_many_steps(void)
{
	enum { STEPS = WATCH_STEPS + 40 };
	char q[512], got[300];
	struct err e;
	snprintf(q, sizeof q, "%s/steps", top);
	for (int s = 0; s < STEPS; s++)
		publish(q, s, 0, "f.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 0.3;
	struct watch *w = watch_open(q, &o, &e);
	int n = 0;
	while (w && n < STEPS && next(w, got, sizeof got) == 1)
		n++;
	struct watch_stats s;
	if (w)
		watch_stats(w, &s);
	ok(w && n == STEPS && s.watches > 0 && s.watches <= 1 + 3 * WATCH_STEPS,
	   "[steps] %d steps consumed, %ld watches held (at most %d)", n, w ? s.watches : -1L, 1 + 3 * WATCH_STEPS);
	if (!w)
		return;
	long scans = s.scans;
	char want[64];
	publish(q, STEPS, 0, "new.zst");
	snprintf(want, sizeof want, "%d/0/new.zst", STEPS);
	ok(next(w, got, sizeof got) == 1 && strcmp(got, want) == 0, "[steps] a new step's file (%s)", got);
	publish(q, STEPS - 1, 0, "late.zst");
	snprintf(want, sizeof want, "%d/0/late.zst", STEPS - 1);
	ok(next(w, got, sizeof got) == 1 && strcmp(got, want) == 0, "[steps] a late file in a recent step (%s)", got);
	watch_stats(w, &s);
	ok(s.watches <= 1 + 3 * WATCH_STEPS && s.scans == scans,
	   "[steps] both by events; still %ld watches, the oldest step left behind", s.watches);
	publish(q, 1, 0, "old.zst");
	watch_deadline(w, 10);
	ok(next(w, got, sizeof got) == 1 && strcmp(got, "1/0/old.zst") == 0, "[steps] a file in an old step (%s)", got);
	watch_stats(w, &s);
	ok(s.scans > scans, "[steps] found by the periodic rescan (%ld scans)", s.scans);
	watch_close(w);
}

/* GRPO_FSYS_REMOTE=1: the queue counts as remote, and --watch polls. */
static void test_remote(void)
{
	char q[512], got[300];
	struct err e;
	snprintf(q, sizeof q, "%s/remote", top);
	publish(q, 0, 0, "r.zst");
	setenv("GRPO_FSYS_REMOTE", "0", 1);
	ok(!fsys_is_remote(q), "[remote] GRPO_FSYS_REMOTE=0: local");
	setenv("GRPO_FSYS_REMOTE", "1", 1);
	ok(fsys_is_remote(q), "[remote] GRPO_FSYS_REMOTE=1: remote");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	struct watch *w = watch_open(q, &o, &e);
	unsetenv("GRPO_FSYS_REMOTE");
	struct watch_stats s;
	if (w)
		watch_stats(w, &s);
	ok(w && s.polling && s.interval == WATCH_POLL_DEFAULT,
	   "[remote] a watch without poll polls, every %g seconds", w ? s.interval : -1.0);
	ok(w && next(w, got, sizeof got) == 1 && !strcmp(got, "0/0/r.zst"), "[remote] and hands out files");
	watch_close(w);
}

static void age_record(const char *path, long seconds)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds;
	t[1] = t[0];
	utimensat(AT_FDCWD, path, t, 0);
}

/* Seconds since the record was written or renewed, as recovery sees it. */
static long long record_age(const char *path)
{
	struct claim_id id;
	long long age = -1;
	struct err e;
	claim_check(path, 0, time(NULL), &id, &age, &e);
	return age;
}

static void test_renew(void)
{
	char q[512];
	struct err e;
	snprintf(q, sizeof q, "%s/renew", top);
	publish(q, 0, 0, "kept.zst");
	publish(q, 0, 0, "held.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 3600;
	o.lease = 1; /* renewed every third of a second */
	struct watch *w = watch_open(q, &o, &e);
	struct claim *c, kept;
	int r = w ? watch_next(w, &c, &e) : -1;
	ok(r == 1 && !strcmp(c->name, "held.zst"), "[renew] a claim handed out");
	if (r != 1) {
		watch_close(w);
		return;
	}
	watch_detach(w, &kept);
	r = watch_next(w, &c, &e);
	ok(r == 1 && !strcmp(c->name, "kept.zst"), "[renew] detached, and another in hand");
	age_record(kept.claim_path, 3600);
	age_record(c->claim_path, 3600);
	usleep(400000);
	is_int(watch_renew(w, &e), 0, "[renew] watch_renew once a renewal is due");
	ok(record_age(kept.claim_path) <= 1 && record_age(c->claim_path) <= 1,
	   "[renew] renews the claim in hand and the detached one (ages %lld, %lld)",
	   record_age(c->claim_path), record_age(kept.claim_path));
	ok(claim_retire(c, &e) == 0, "[renew] the one in hand retired");

	/* While watch_next waits, the detached claim is renewed: a lease of
	 * one second, and waiting three, it never ages past it. */
	age_record(kept.claim_path, 3600);
	watch_deadline(w, 3);
	r = watch_next(w, &c, &e);
	ok(r == 0 && watch_timed_out(w), "[renew] watch_next waits out its deadline");
	long long age = record_age(kept.claim_path);
	ok(age <= 1, "[renew] meanwhile the detached claim was renewed (age %lld)", age);

	/* A record that is no longer the one held is left alone. */
	ok(claim_renew_record(kept.claim_path, kept.dev, kept.ino + 1, &e) == 1,
	   "[renew] claim_renew_record: another record under the name is not renewed");
	ok(claim_retire(&kept, &e) == 0, "[renew] the detached claim retired");
	char done[700];
	snprintf(done, sizeof done, "%s/step_0/rank_0/.done/held.zst", q);
	age_record(done, 3600);
	usleep(400000);
	is_int(watch_renew(w, &e), 0, "[renew] renewing after it was retired");
	struct stat st;
	ok(stat(done, &st) == 0 && time(NULL) - st.st_mtime > 3000,
	   "[renew] does not touch its done record");
	watch_close(w);
}

/* A detached claim is renewed while watch_next waits, not only as it
 * returns: a child process, as another host's recovery would, looks at the
 * record meanwhile and, once it sees it renewed, publishes the file that
 * ends the wait. */
static void test_renew_waiting(void)
{
	char q[512], got[300];
	struct err e;
	struct claim *c, kept;
	snprintf(q, sizeof q, "%s/renewwait", top);
	publish(q, 0, 0, "held.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 3600;
	o.lease = 3; /* renewed every second, first a second after watch_open */
	struct watch *w = watch_open(q, &o, &e);
	int r = w ? watch_next(w, &c, &e) : -1;
	ok(r == 1, "[renew] a claim handed out and detached");
	if (r != 1) {
		watch_close(w);
		return;
	}
	watch_detach(w, &kept);
	age_record(kept.claim_path, 3600);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 1000; i++) { /* 20 s at most */
			struct stat st;
			if (stat(kept.claim_path, &st) == 0 && time(NULL) - st.st_mtime < 100)
				_exit(publish(q, 0, 0, "woken.zst") == 0 ? 0 : 1);
			usleep(20000);
		}
		_exit(1);
	}
	watch_deadline(w, 8);
	r = next(w, got, sizeof got);
	int status = -1;
	waitpid(pid, &status, 0);
	ok(r == 1 && !strcmp(got, "0/0/woken.zst"),
	   "[renew] renewed while watch_next waits: the file published once that was seen is handed out (%s)", got);
	ok(claim_retire(&kept, &e) == 0, "[renew] the detached claim retired");
	watch_close(w);
}

/* A step moved away whole (as gc moves one aside) or removed: the watch of
 * a removed directory, and of the moved step itself, is forgotten, not kept
 * for a directory that is gone (the moved step's rank directories keep
 * theirs until gc removes them), and a step made anew under the same name
 * is watched afresh, its files handed out. */
static void test_gone(void)
{
	char q[512], got[300];
	struct err e;
	struct watch_stats s;
	snprintf(q, sizeof q, "%s/gone", top);
	publish(q, 2, 0, "a.zst");
	publish(q, 3, 0, "b.zst");
	struct watch_opt o = WATCH_OPT_INIT;
	o.follow = 1;
	o.rescan = 3600; /* events alone */
	struct watch *w = watch_open(q, &o, &e);
	ok(w && next(w, got, sizeof got) == 1 && !strcmp(got, "2/0/a.zst") && next(w, got, sizeof got) == 1 &&
	   !strcmp(got, "3/0/b.zst"), "[gone] two steps' files");
	if (!w)
		return;
	watch_stats(w, &s);
	long before = s.watches;
	char cmd[2000];
	snprintf(cmd, sizeof cmd, "mv %s/step_2 %s/moved && rm -rf %s/step_3", q, top, q);
	ok(system(cmd) == 0, "[gone] step_2 moved out of the queue, step_3 removed");
	publish(q, 2, 0, "c.zst");
	watch_deadline(w, 10);
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "2/0/c.zst"), "[gone] a file in step_2 made anew");
	publish(q, 2, 0, "d.zst");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "2/0/d.zst"), "[gone] and a later one in it");
	watch_stats(w, &s);
	/* kept, the 3 gone would make more than before with the new step's */
	ok(s.watches <= before && s.scans == 1 && s.overflows == 0,
	   "[gone] the gone directories' watches forgotten: %ld watches, %ld before, the new step's included",
	   s.watches, before);
	publish(q, 3, 0, "late.zst");
	snprintf(cmd, sizeof cmd, "%s/moved/rank_0/stray.zst", top);
	FILE *f = fopen(cmd, "w");
	ok(f && fclose(f) == 0, "[gone] a file put into the step moved away");
	ok(next(w, got, sizeof got) == 1 && !strcmp(got, "3/0/late.zst"),
	   "[gone] nothing from the directory moved away, only the queue's own files");
	watch_close(w);
}

int main(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(top, sizeof top, "%s/grpo-test-watch.%ld", base, (long)getpid());
	sh("rm -rf %s", top);
	sh("mkdir -p %s", top);
	alarm(60); /* a loop that never returns fails the test rather than hanging it */
	test_order();
	for (int mode = 0; mode < 3; mode++)
		test_follow(mode);
	test_rescan();
	test_turns();
	test_scan_fails(0);
	test_scan_fails(1);
	test_in_hand();
	test_overflow();
	test_gone();
	test_many_steps();
	test_remote();
	test_renew();
	test_renew_waiting();
	sh("rm -rf %s", top);
	return tap_done();
}
