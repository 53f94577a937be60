/*
 * test_claim: the spool protocol end to end in one process tree:
 * claims are exclusive, done files are never handed out again, concurrent
 * consumers take each file once, and a crash between any two spool system
 * calls of a publish or of a consume cycle loses nothing and duplicates
 * nothing once recovery has run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spool/claim.h"
#include "base/fsys.h"
#include "spool/queue.h"
#include "spool/spool.h"
#include "spool/watch.h"
#include "../tap.h"
#include "../spool_util.h"

static char top[256];

static int slurp(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	fclose(f);
	return (int)n;
}

/* Files directly in dir whose names do not begin with '.'; -1 if dir is absent. */
static long count_files(const char *dir)
{
	char **v;
	size_t n;
	long k = 0;
	if (fsys_list_dir(dir, FSYS_FILES, &v, &n, NULL) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		k += v[i][0] != '.';
	fsys_free_names(v, n);
	return k;
}

/*
 * One consume cycle as a real tool does it: claim the next input of `in`,
 * publish "out:" + its content to `out` under the same step, rank and name,
 * retire the input. Returns 1 after a file, 0 when none is waiting, -1 on error.
 */
static int consume_one(const char *in, const char *out, const char *logpath)
{
	struct err e;
	struct watch_opt o = WATCH_OPT_INIT;
	struct claim *c;
	char text[256], res[300];
	struct watch *w = watch_open(in, &o, &e);
	if (!w)
		return -1;
	int r = watch_next(w, &c, &e);
	if (r > 0) {
		if (slurp(c->path, text, sizeof text) < 0) {
			r = -1;
		} else {
			if (logpath) {
				int fd = open(logpath, O_WRONLY | O_APPEND | O_CREAT, 0644);
				char line[300];
				int n = snprintf(line, sizeof line, "%s\n", c->name);
				if (fd < 0 || write(fd, line, (size_t)n) != n)
					r = -1;
				if (fd >= 0)
					close(fd);
			}
			snprintf(res, sizeof res, "out:%s", text);
			if (r > 0 && (spool_put(out, c->step, c->rank, c->name, res) < 0 ||
				      claim_retire(c, &e) < 0))
				r = -1;
		}
	}
	watch_close(w);
	return r;
}

static void test_claim_basics(void)
{
	char q[512], other[512];
	struct claim a, b;
	struct err e;
	snprintf(q, sizeof q, "%s/basic/rollouts", top);
	is_int(spool_put(q, 3, 1, "g1.zst", "one"), 0, "a file is published");
	is_int(claim_take(&a, q, 3, 1, "g1.zst", 0, &e), 0, "the first claim wins");
	is_int(claim_take(&b, q, 3, 1, "g1.zst", 0, &e), 1, "a second claim on the same file loses");
	struct spool_rank_state s;
	spool_rank_state(q, 3, 1, &s, &e);
	ok(s.nwaiting == 0 && s.nclaimed == 1 && s.ndone == 0, "a claimed file is not waiting");
	spool_rank_state_free(&s);
	is_int(claim_release(&a, &e), 0, "release");
	is_int(claim_take(&b, q, 3, 1, "g1.zst", 0, &e), 0, "a released file can be claimed again");
	is_int(claim_retire(&b, &e), 0, "retire");
	is_int(claim_take(&a, q, 3, 1, "g1.zst", 0, &e), 1, "a retired file is never handed out again");
	is_int(spool_put(q, 3, 1, "g1.zst", "one again"), 1,
	       "publishing the name again after it was consumed is dropped");
	spool_rank_state(q, 3, 1, &s, &e);
	ok(s.nwaiting == 0 && s.nclaimed == 0 && s.ndone == 1, "one file, done");
	spool_rank_state_free(&s);
	is_int(claim_take(&a, q, 3, 1, "absent.zst", 0, &e), 1, "an absent file is not available");
	is_int(claim_take(&a, q, 9, 1, "absent.zst", 0, &e), 1, "nor one in an absent step");
	snprintf(other, sizeof other, "%s/basic/rollouts/step_9", top);
	struct stat st;
	ok(stat(other, &st) < 0, "a failed claim creates no step directory");

	/* A claim recorded by another host is judged by its lease. */
	is_int(spool_put(q, 4, 0, "g2.zst", "two"), 0, "publish another");
	char cp[1024];
	snprintf(cp, sizeof cp, "%s/step_4/rank_0/.claimed", q);
	mkdir(cp, 0755);
	snprintf(cp, sizeof cp, "%s/step_4/rank_0/.claimed/g2.zst", q);
	FILE *f = fopen(cp, "w");
	fprintf(f, "host=elsewhere.example pid=4242 pstart=1 time=%lld lease=60\n", (long long)time(NULL));
	fclose(f);
	struct claim_id id;
	long long age;
	/* "now" is the record's own mtime: file times may run ahead of time(2) */
	struct stat rst;
	stat(cp, &rst);
	time_t now = rst.st_mtime;
	is_int(claim_check(cp, 0, now, &id, &age, &e), 0, "a fresh claim from another host is live");
	ok(!strcmp(id.host, "elsewhere.example") && id.pid == 4242 && id.lease == 60, "its record is read back");
	is_int(claim_check(cp, 0, now + 61, &id, &age, &e), 1, "it is stale once its lease has passed");
	is_int(claim_check(cp, 3600, now + 61, &id, &age, &e), 0, "--lease overrides the record's lease");
	is_int(claim_check(cp, 0, now + 30, &id, &age, &e), 0, "without --lease, half its own lease on, it is live");
	is_int(claim_check(cp, 1, now + 30, &id, &age, &e), 1, "--lease 1 makes it stale a second on");
	struct queue_recover_stats rs = { 0, 0, 0, 0 };
	is_int(queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, now, &rs, &e), 0, "recover now");
	ok(rs.returned == 0 && rs.live == 1, "recover leaves the live foreign claim (%ld, %ld)", rs.returned, rs.live);
	memset(&rs, 0, sizeof rs);
	queue_recover(q, 0, QUEUE_TMP_AGE_DEFAULT, now + 61, &rs, &e);
	ok(rs.returned == 1, "and returns it after the lease");
	is_int(claim_take(&a, q, 4, 0, "g2.zst", 0, &e), 0, "the returned file can be claimed");
	is_int(claim_renew(&a, &e), 0, "a lease can be renewed");
	claim_release(&a, NULL);
}

/* N processes consume M files, each exactly once. */
static void test_concurrent(void)
{
	enum { N = 4, M = 240 };
	char in[512], out[512], logp[512], name[64];
	snprintf(in, sizeof in, "%s/conc/rollouts", top);
	snprintf(out, sizeof out, "%s/conc/scored", top);
	snprintf(logp, sizeof logp, "%s/conc/log", top);
	int bad = 0;
	for (int i = 0; i < M; i++) {
		snprintf(name, sizeof name, "g%03d.zst", i);
		bad |= spool_put(in, i % 3, i % 2, name, name) != 0;
	}
	ok(!bad, "%d files published", M);
	pid_t kids[N];
	for (int k = 0; k < N; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			int r;
			while ((r = consume_one(in, out, logp)) > 0)
				;
			_exit(r < 0);
		}
	}
	int failed = 0;
	for (int k = 0; k < N; k++) {
		int st;
		waitpid(kids[k], &st, 0);
		failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	ok(!failed, "%d consumers finished cleanly", N);
	static int seen[M];
	char line[128];
	FILE *f = fopen(logp, "r");
	long lines = 0;
	while (f && fgets(line, sizeof line, f)) {
		int i;
		if (sscanf(line, "g%d.zst", &i) == 1 && i >= 0 && i < M)
			seen[i]++;
		lines++;
	}
	if (f)
		fclose(f);
	int once = 1;
	for (int i = 0; i < M; i++)
		once &= seen[i] == 1;
	is_int(lines, M, "%d files processed in all", M);
	ok(once, "each file was processed exactly once");
	long outs = 0;
	struct err e;
	for (int s = 0; s < 3; s++)
		for (int r = 0; r < 2; r++) {
			struct queue_step qs;
			char d[600];
			snprintf(d, sizeof d, "%s/step_%d/rank_%d", out, s, r);
			outs += count_files(d);
			queue_step_state(in, s, 0, 0, time(NULL), &qs, &e);
			if (qs.waiting || qs.claimed)
				bad = 1;
		}
	is_int(outs, M, "every output published once");
	ok(!bad, "nothing left waiting or claimed");
}

/* Run fn in a child that crashes at fsys call k (0: never); the child's exit status. */
static int in_child(int (*fn)(void *), void *arg, long k)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		fsys_test_crash_at(k);
		_exit(fn(arg) < 0 ? 1 : 0);
	}
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct cyc {
	char in[512], out[512];
};

static int do_publish(void *a)
{
	struct cyc *c = a;
	return spool_put(c->in, 2, 0, "p.zst", "payload");
}

static int do_consume(void *a)
{
	struct cyc *c = a;
	return consume_one(c->in, c->out, NULL);
}

static int calls_of(int (*fn)(void *), void *arg)
{
	/* The child reports its call count through its exit status. */
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		fsys_test_crash_at(0);
		int r = fn(arg);
		_exit(r < 0 ? 255 : (int)fsys_calls_made());
	}
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int recover_queue(const char *q)
{
	struct err e;
	struct queue_recover_stats rs = { 0, 0, 0, 0 };
	if (queue_recover(q, 0, 0, time(NULL), &rs, &e) < 0) {
		diag("recover: %s", e.msg);
		return -1;
	}
	return (int)rs.returned;
}

static void test_crash_publish(void)
{
	struct cyc c;
	snprintf(c.in, sizeof c.in, "%s/crashpub", top);
	mkdir(c.in, 0755); /* so that every run below creates the same directories */
	snprintf(c.in, sizeof c.in, "%s/crashpub/0/q", top);
	int n = calls_of(do_publish, &c);
	ok(n > 3 && n < 200, "a publish makes %d spool system calls", n);
	int lost = 0, dup = 0, crashed = 0, wrong = 0;
	for (int k = 1; k <= n; k++) {
		char dir[600], path[700], text[64];
		snprintf(c.in, sizeof c.in, "%s/crashpub/%d/q", top, k);
		int st = in_child(do_publish, &c, k);
		crashed += st == GRPO_FSYS_CRASH_STATUS;
		if (recover_queue(c.in) < 0)
			lost++;
		/* the producer runs again after the crash */
		if (in_child(do_publish, &c, 0) != 0)
			lost++;
		snprintf(dir, sizeof dir, "%s/step_2/rank_0", c.in);
		snprintf(path, sizeof path, "%s/p.zst", dir);
		long files = count_files(dir);
		lost += files < 1;
		dup += files > 1;
		wrong += slurp(path, text, sizeof text) < 0 || strcmp(text, "payload") != 0;
		snprintf(dir, sizeof dir, "%s/.tmp", c.in);
		dup += count_files(dir) > 0;
	}
	is_int(crashed, n, "a crash at each of the %d calls happened", n);
	ok(!lost && !dup && !wrong, "after each crash and a re-run: one complete file, no temporaries "
	   "(lost %d, duplicated %d, wrong %d)", lost, dup, wrong);
}

static void test_crash_consume(void)
{
	struct cyc c;
	snprintf(c.in, sizeof c.in, "%s/crashcon/0/rollouts", top);
	snprintf(c.out, sizeof c.out, "%s/crashcon/0/scored", top);
	spool_put(c.in, 2, 0, "p.zst", "payload");
	int n = calls_of(do_consume, &c);
	ok(n > 10 && n < 250, "a consume cycle (claim, read, publish, retire) makes %d spool calls", n);
	int lost = 0, dup = 0, crashed = 0, wrong = 0, stuck = 0, returned = 0, twice = 0;
	for (int k = 1; k <= n; k++) {
		char dir[600], path[700], text[64];
		struct err e;
		snprintf(c.in, sizeof c.in, "%s/crashcon/%d/rollouts", top, k);
		snprintf(c.out, sizeof c.out, "%s/crashcon/%d/scored", top, k);
		if (spool_put(c.in, 2, 0, "p.zst", "payload") != 0)
			lost++;
		int st = in_child(do_consume, &c, k);
		crashed += st == GRPO_FSYS_CRASH_STATUS;
		int r = recover_queue(c.in);
		if (r < 0 || recover_queue(c.out) < 0)
			lost++;
		returned += r > 0;
		/* the consumer runs again: the file is handed out if and only if it was not retired */
		int again = in_child(do_consume, &c, 0);
		stuck += again != 0;
		/* and a third run finds nothing left */
		struct watch_opt o = WATCH_OPT_INIT;
		struct watch *w = watch_open(c.in, &o, &e);
		struct claim *cl;
		twice += w && watch_next(w, &cl, &e) != 0;
		watch_close(w);

		snprintf(dir, sizeof dir, "%s/step_2/rank_0", c.out);
		snprintf(path, sizeof path, "%s/p.zst", dir);
		long files = count_files(dir);
		lost += files < 1;
		dup += files > 1;
		wrong += slurp(path, text, sizeof text) < 0 || strcmp(text, "out:payload") != 0;
		struct queue_step qs;
		queue_step_state(c.in, 2, 0, 0, time(NULL), &qs, &e);
		lost += qs.done != 1;
		dup += qs.waiting != 0 || qs.claimed != 0;
		snprintf(dir, sizeof dir, "%s/.tmp", c.in);
		dup += count_files(dir) > 0;
		snprintf(dir, sizeof dir, "%s/.tmp", c.out);
		dup += count_files(dir) > 0;
	}
	is_int(crashed, n, "a crash at each of the %d calls happened", n);
	ok(returned > 0, "some crashes left a claim that recovery returned (%d)", returned);
	ok(!stuck && !twice, "the re-run always succeeds and nothing is handed out a third time");
	ok(!lost && !dup && !wrong, "after each crash, recovery and a re-run: the input done once, one "
	   "correct output, no claims or temporaries (lost %d, duplicated %d, wrong %d)", lost, dup, wrong);
}

/* A crash after the output was published, before the input was retired. */
static void test_publish_then_crash(void)
{
	char in[512], out[512];
	struct err e;
	struct claim c;
	snprintf(in, sizeof in, "%s/pubcrash/rollouts", top);
	snprintf(out, sizeof out, "%s/pubcrash/scored", top);
	spool_put(in, 0, 0, "x.zst", "x");
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		struct claim k;
		if (claim_take(&k, in, 0, 0, "x.zst", 0, NULL) != 0 || spool_put(out, 0, 0, "x.zst", "out:x") != 0)
			_exit(1);
		_exit(GRPO_FSYS_CRASH_STATUS); /* dies holding the claim */
	}
	int st;
	waitpid(p, &st, 0);
	is_int(WEXITSTATUS(st), GRPO_FSYS_CRASH_STATUS, "consumer died after publishing, before retiring");
	is_int(recover_queue(in), 1, "recover returns its claim");
	is_int(claim_take(&c, in, 0, 0, "x.zst", 0, &e), 0, "the input is claimed again");
	is_int(spool_put(out, 0, 0, "x.zst", "out:x"), 1, "publishing its output again is dropped");
	is_int(claim_retire(&c, &e), 0, "and the input is retired");
	char d[600];
	snprintf(d, sizeof d, "%s/step_0/rank_0", out);
	is_int(count_files(d), 1, "one output");
}

/* Claim records: written and read back the same; a host name the reader
 * would split is refused at writing; the struct stays small. */
static void test_records(void)
{
	struct claim_id a = { "node-7.example", 4242, 123456789ull, 1700000000ll, 60 }, b;
	char text[512];
	int n = claim_format_id(&a, text, sizeof text);
	ok(n > 0 && strcmp(text, "host=node-7.example pid=4242 pstart=123456789 time=1700000000 lease=60\n") == 0 &&
	   claim_parse_id(text, &b) == 0 && memcmp(&a, &b, sizeof a) == 0, "a claim record reads back as written");
	strcpy(a.host, "two\twords");
	ok(claim_format_id(&a, text, sizeof text) < 0, "a host name with white space makes no record");
	a.host[0] = '\0';
	ok(claim_format_id(&a, text, sizeof text) < 0, "nor does an empty one");
	strcpy(a.host, "h");
	ok(claim_format_id(&a, text, 20) < 0, "nor a record that does not fit its buffer");
	ok(claim_parse_id("host=h pid=0 pstart=1 time=1 lease=1", &b) < 0 && claim_parse_id("pid=1", &b) < 0,
	   "pid 0 and a record without its fields are not records");
	ok(claim_parse_id("host=h pid=1 pstart=1 time=1 lease=1", &b) == 0 && b.pid == 1,
	   "pid 1 is a holder (a consumer that is a container's first process)");
	ok(sizeof(struct claim) <= 2 * PATH_MAX + 512, "struct claim holds two paths, not four (%zu bytes)",
	   sizeof(struct claim));
}

/* Field 22 of /proc/self/stat (process start, clock ticks), read here apart from claim.c. */
static unsigned long long self_start(void)
{
	char line[1024];
	unsigned long long v = 0;
	if (slurp("/proc/self/stat", line, sizeof line) <= 0 || !strrchr(line, ')'))
		return 0;
	char *p = strrchr(line, ')') + 2;   /* field 3, the state */
	for (int field = 3; field < 22 && p; field++)
		if ((p = strchr(p, ' ')))
			p++;
	return p && sscanf(p, "%llu", &v) == 1 ? v : 0;
}

/*
 * What a claim records of its holder: recovery on a host without flock
 * tells a dead holder from a live one by pid and process start time, so a
 * wrong or missing start time would keep a dead consumer's file claimed
 * (or return a live one's) once the pid is reused.
 */
static void test_self(void)
{
	struct claim_id id;
	unsigned long long want = self_start();
	time_t t0 = time(NULL);
	claim_self(&id, 0);
	ok(want > 0 && id.pstart == want, "a claim records this process's start time (%llu, /proc says %llu)",
	   id.pstart, want);
	ok(id.pid == (long)getpid() && id.since >= (long long)t0 && id.since <= (long long)time(NULL) &&
	   id.lease == CLAIM_LEASE_DEFAULT, "its pid, the time and the default lease (%ld)", id.lease);
	char host[256] = "";
	ok(gethostname(host, sizeof host - 1) == 0 && host[0] && !strcmp(id.host, host),
	   "and this host's name (%s), which tells recovery on another host to judge it by its lease",
	   id.host);
	claim_self(&id, 60);
	is_int(id.lease, 60, "a lease given is recorded");
	setenv("GRPO_CLAIM_HOST", "node 7", 1);
	claim_self(&id, 0);
	unsetenv("GRPO_CLAIM_HOST");
	ok(!strcmp(id.host, "node_7"), "GRPO_CLAIM_HOST names the host, white space made '_' (%s)", id.host);
}

/* Publish and consume one file: done. */
static int retire_one(const char *queue, int64_t step, int rank, const char *name)
{
	struct claim c;
	if (spool_put(queue, step, rank, name, name) != 0 || claim_take(&c, queue, step, rank, name, 0, NULL) != 0)
		return -1;
	return claim_retire(&c, NULL);
}

/* Only a spool file's own name can be claimed: not a hidden name (.claimed,
 * .done are the protocol's own directories), not a path, not nothing; a
 * name of one letter is a name. */
static void test_names(void)
{
	char q[512], hidden[600];
	struct claim c;
	struct err e;
	snprintf(q, sizeof q, "%s/names/rollouts", top);
	int bad = spool_put(q, 1, 0, "x", "one letter") != 0 || retire_one(q, 1, 0, "d.zst") != 0;
	snprintf(hidden, sizeof hidden, "%s/step_1/rank_0/.secret", q);
	FILE *f = fopen(hidden, "w");
	bad |= !f;
	if (f)
		fclose(f);
	ok(!bad, "a rank holding x, a done file (so .claimed and .done exist) and .secret");
	is_int(claim_take(&c, q, 1, 0, "x", 0, &e), 0, "a file named x is claimed");
	claim_release(&c, NULL);
	const char *refused[] = { "", ".claimed", ".done", ".secret", "rank_0/x", "../rank_0/x" };
	int took = 0;
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		int r = claim_take(&c, q, 1, 0, refused[i], 0, &e);
		if (r != -1 || !strstr(e.msg, "not a spool file name")) {
			diag("claim_take(\"%s\") gave %d", refused[i], r);
			took++;
		}
		if (r == 0)
			claim_release(&c, NULL);
	}
	is_int(took, 0, "no empty, hidden or slashed name is claimed, each refused as not a spool file name");
}

/*
 * claim_held_by, which lets the command grpo-spool consume runs read the
 * file whose claim it inherited (and no other claimed file): true only for
 * the record of that file's claim, held through that descriptor.
 */
static void test_held_by(void)
{
	char q[512], f[700], g[700], outside[700];
	struct claim a, b;
	struct err e;
	snprintf(q, sizeof q, "%s/held/rollouts", top);
	int bad = spool_put(q, 2, 1, "f.zst", "F") != 0 || spool_put(q, 2, 1, "g.zst", "G") != 0 ||
		  claim_take(&a, q, 2, 1, "f.zst", 0, &e) != 0 || claim_take(&b, q, 2, 1, "g.zst", 0, &e) != 0;
	snprintf(f, sizeof f, "%s/step_2/rank_1/f.zst", q);
	snprintf(g, sizeof g, "%s/step_2/rank_1/g.zst", q);
	snprintf(outside, sizeof outside, "%s/held/f.zst", top);
	ok(!bad, "two files of a rank, each claimed");
	ok(claim_held_by(f, a.fd) == 1 && claim_held_by(g, b.fd) == 1, "each claim's record holds its own file");
	ok(claim_held_by(f, b.fd) == 0 && claim_held_by(g, a.fd) == 0, "and not the other's");
	int other = open(f, O_RDONLY);
	ok(claim_held_by(f, other) == 0 && claim_held_by(f, -1) == 0,
	   "the file's own descriptor, or none, holds no claim");
	if (other >= 0)
		close(other);
	ok(claim_held_by(outside, a.fd) == 0, "nor does a record hold a path outside the spool");
	int kept = dup(a.fd);
	bad = claim_release(&a, &e) != 0;
	ok(!bad && claim_held_by(f, kept) == 0, "once released, the record no longer holds the file");
	if (kept >= 0)
		close(kept);
	claim_release(&b, NULL);
}

/* Publish step_1/rank_0/f.zst, and remove QUEUE/.tmp, which the claim then makes. */
static int put_without_tmp(const char *q)
{
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s/.tmp", q);
	return spool_put(q, 1, 0, "f.zst", "F") != 0 || rmdir(tmp) != 0 ? -1 : 0;
}

/*
 * claim_take with each of its spool system calls failing in turn (EIO, or
 * ENOSPC): it fails saying why, or it claims the file; a failure is never
 * passed off as "not available" (a consumer would go on without the file)
 * nor as a claim without its record; and after recover the file is claimed.
 */
static void test_take_fault(int errnum)
{
	char q[512];
	struct claim c;
	struct err e;
	snprintf(q, sizeof q, "%s/takef/%d/0", top, errnum);
	if (put_without_tmp(q) != 0) {
		ok(0, "a file to claim");
		return;
	}
	fsys_test_fail_at(0, 0);
	int r = claim_take(&c, q, 1, 0, "f.zst", 0, &e);
	long n = fsys_calls_made(), k;
	claim_release(&c, NULL);
	const char *why = r == 0 ? NULL : "it does not claim with no failure";
	for (k = 1; k <= n && !why; k++) {
		snprintf(q, sizeof q, "%s/takef/%d/%ld", top, errnum, k);
		if (put_without_tmp(q) != 0) {
			ok(0, "a file to claim (failing at %ld)", k);
			return;
		}
		char rec[700];
		struct stat st;
		snprintf(rec, sizeof rec, "%s/step_1/rank_0/.claimed/f.zst", q);
		fsys_test_fail_at(k, errnum);
		r = claim_take(&c, q, 1, 0, "f.zst", 0, &e);
		fsys_test_fail_at(0, 0);
		if (r == 1)
			why = "a failure was taken for a file not available";
		else if (r < 0 && !strstr(e.msg, strerror(errnum)))
			why = e.msg;
		else if (r == 0 && (c.state != CLAIM_HELD || stat(rec, &st) != 0))
			why = "claimed without a claim record";
		if (r == 0)
			claim_release(&c, NULL);
		if (!why && (recover_queue(q) < 0 || claim_take(&c, q, 1, 0, "f.zst", 0, &e) != 0))
			why = "the file cannot be claimed after recover";
		claim_release(&c, NULL);
	}
	ok(n > 5 && !why, "claim_take with each of its %ld calls failing with %s: said, or claimed; then the file "
	   "is claimed%s%s", n, strerror(errnum), why ? ": " : "", why ? why : "");
	if (why)
		diag("at call %ld", k - 1);
}

/*
 * A holder whose claim was returned as stale (recover judged it dead: a
 * paused process, another host's lost lease) and taken by another consumer
 * meanwhile must not end the new holder's claim: releasing it leaves the
 * new claim (the file is not handed out a third time), retiring it says 1
 * and leaves the file to the new holder. A holder that finds the file
 * retired already by whoever took it over drops its own record, and the
 * done record stays the one there was.
 */
static void test_taken_over(void)
{
	char q[512], rec[700], done[700], text[256];
	struct claim a, b, c;
	struct err e;
	struct stat st;
	snprintf(q, sizeof q, "%s/over/rollouts", top);
	snprintf(rec, sizeof rec, "%s/step_1/rank_0/.claimed/f.zst", q);
	snprintf(done, sizeof done, "%s/step_1/rank_0/.done/f.zst", q);
	int bad = spool_put(q, 1, 0, "f.zst", "F") != 0 || claim_take(&a, q, 1, 0, "f.zst", 0, &e) != 0;
	bad |= unlink(rec) != 0;   /* returned as recover does */
	bad |= claim_take(&b, q, 1, 0, "f.zst", 0, &e) != 0;
	ok(!bad, "a claim returned as stale, the file taken by another");
	is_int(claim_release(&a, &e), 0, "the first holder releases");
	ok(stat(rec, &st) == 0 && claim_held_by(b.path, b.fd) == 1, "the new holder's claim stays");
	is_int(claim_take(&c, q, 1, 0, "f.zst", 0, &e), 1, "so the file is not handed out again");
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s/.tmp", q);
	is_int(count_files(tmp), 0, "and the losing claim leaves no temporary in .tmp");
	bad = unlink(rec) != 0 || claim_take(&a, q, 1, 0, "f.zst", 0, &e) != 0;   /* b's returned in turn */
	ok(!bad, "the new holder's claim returned, the first holder takes the file again");
	int bfd = b.fd;
	is_int(claim_retire(&b, &e), 1, "a holder whose claim was taken over retires: 1, nothing done");
	ok(b.state == CLAIM_RETIRED && b.fd == -1 && fcntl(bfd, F_GETFD) < 0, "and its record is closed");
	ok(stat(rec, &st) == 0 && claim_held_by(a.path, a.fd) == 1 && stat(done, &st) != 0,
	   "the file stays claimed by its holder, not done");

	/* a done record there already: retired by a holder that took it over */
	char dir[700];
	snprintf(dir, sizeof dir, "%s/step_1/rank_0/.done", q);
	mkdir(dir, 0755);
	FILE *f = fopen(done, "w");
	bad = !f || fputs("host=other pid=7 pstart=1 time=1 lease=60\n", f) < 0;
	if (f)
		fclose(f);
	ok(!bad, "the file retired meanwhile by a holder that took it over");
	is_int(claim_retire(&a, &e), 0, "it retires: 0");
	ok(stat(rec, &st) != 0 && slurp(done, text, sizeof text) > 0 && !strncmp(text, "host=other ", 11),
	   "our record is gone, the done record is the one there was");
}

/* Set a record's modification time s seconds back; 0 or -1. */
static int age_record(const char *path, long s)
{
	struct timespec t[2] = { { time(NULL) - s, 0 }, { time(NULL) - s, 0 } };
	return utimensat(AT_FDCWD, path, t, 0);
}

static long long record_age(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)time(NULL) - (long long)st.st_mtime : -1;
}

/*
 * Renewing a lease moves the record's time on, so that recovery on another
 * host does not return a file still being consumed; a holder that keeps
 * only the record's path and identity (watch.h) renews its own record and
 * no other, and learns when its claim is gone.
 */
static void test_renew(void)
{
	char q[512];
	struct claim a;
	struct err e;
	snprintf(q, sizeof q, "%s/renew/rollouts", top);
	int bad = spool_put(q, 1, 0, "f.zst", "F") != 0 || claim_take(&a, q, 1, 0, "f.zst", 0, &e) != 0 ||
		  age_record(a.claim_path, 1000) != 0;
	ok(!bad && record_age(a.claim_path) >= 1000, "a claim last renewed 1000 s ago");
	bad = claim_renew(&a, &e) != 0;
	ok(!bad && record_age(a.claim_path) < 100, "claim_renew makes it recent");
	bad = age_record(a.claim_path, 1000) != 0;
	ok(!bad && claim_renew_record(a.claim_path, a.dev, a.ino, &e) == 0 && record_age(a.claim_path) < 100,
	   "claim_renew_record renews it by its path and identity");
	bad = age_record(a.claim_path, 1000) != 0;
	ok(!bad && claim_renew_record(a.claim_path, a.dev, a.ino + 1, &e) == 1 && record_age(a.claim_path) >= 1000,
	   "another record under the name: 1, not renewed");
	fsys_test_fail_at(1, EIO);
	int r = claim_renew_record(a.claim_path, a.dev, a.ino, &e);
	fsys_test_fail_at(0, 0);
	ok(r == -1 && strstr(e.msg, strerror(EIO)), "a record that cannot be opened: -1, said (%d)", r);
	bad = unlink(a.claim_path) != 0;
	ok(!bad && claim_renew_record(a.claim_path, a.dev, a.ino, &e) == 1, "a record returned meanwhile: 1");
	claim_release(&a, NULL);
}

/*
 * claim_retire and claim_release with each of their spool system calls
 * failing in turn: either done, or -1 said with the claim still held, so
 * that the same call again finishes; never the claim given up quietly.
 */
static void test_end_fault(int retire)
{
	char q[512], rec[700], done[700];
	struct claim c;
	struct err e;
	struct stat st;
	long n = -1, k;
	const char *why = NULL;
	for (k = 0; (n < 0 || k <= n) && !why; k++) {
		snprintf(q, sizeof q, "%s/endf/%d/%ld", top, retire, k);
		if (spool_put(q, 1, 0, "f.zst", "F") != 0 || claim_take(&c, q, 1, 0, "f.zst", 0, &e) != 0) {
			ok(0, "a claimed file (failing at %ld)", k);
			return;
		}
		snprintf(rec, sizeof rec, "%s/step_1/rank_0/.claimed/f.zst", q);
		snprintf(done, sizeof done, "%s/step_1/rank_0/.done/f.zst", q);
		fsys_test_fail_at(k, EIO);
		int r = retire ? claim_retire(&c, &e) : claim_release(&c, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		if (r < 0 && (!strstr(e.msg, strerror(EIO)) || c.state != CLAIM_HELD))
			why = "a failure not said, or the claim dropped";
		else if (r < 0 && (retire ? claim_retire(&c, &e) : claim_release(&c, &e)) != 0)
			why = "the call again does not finish";
		else if (r > 0)
			why = "a failure taken for a claim taken away";
		else if (retire ? stat(done, &st) != 0 || stat(rec, &st) == 0 : stat(rec, &st) == 0)
			why = retire ? "not retired" : "not released";
		claim_release(&c, NULL);
	}
	ok(n > 1 && !why, "%s with each of its %ld calls failing: done, or said and done by a second call%s%s",
	   retire ? "claim_retire" : "claim_release", n, why ? ": " : "", why ? why : "");
	if (why)
		diag("at call %ld", k - 1);
}

/*
 * claim_let_go with each of claim_release's calls failing in turn: released
 * (0, no record), or said and the lock given up all the same: the descriptor
 * closed, the record left behind judged stale (its holder's lock is free),
 * so recovery returns the file and it can be claimed again.
 */
static void test_let_go_fault(void)
{
	char q[512], rec[700];
	struct claim c, again;
	struct claim_id id;
	struct err e = { 0 };
	struct stat st;
	long long age;
	long n = -1, k, left = 0;
	const char *why = NULL;
	for (k = 0; (n < 0 || k <= n) && !why; k++) {
		snprintf(q, sizeof q, "%s/letgo/%ld", top, k);
		if (spool_put(q, 1, 0, "f.zst", "F") != 0 || claim_take(&c, q, 1, 0, "f.zst", 0, &e) != 0) {
			ok(0, "a claimed file (failing at %ld)", k);
			return;
		}
		snprintf(rec, sizeof rec, "%s/step_1/rank_0/.claimed/f.zst", q);
		int fd = c.fd;
		fsys_test_fail_at(k, EIO);
		int r = claim_let_go(&c, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		if (c.state == CLAIM_HELD || c.fd != -1 || fcntl(fd, F_GETFD) != -1)
			why = "the claim or its descriptor kept";
		else if (r == 0 && stat(rec, &st) == 0)
			why = "released, but the record is there";
		else if (r < 0 && !strstr(e.msg, strerror(EIO)))
			why = "the failure not said";
		else if (r < 0 && claim_check(rec, 0, time(NULL), &id, &age, &e) != 1)
			why = "the record left is not stale";
		else if (r < 0 && (unlink(rec) != 0 || claim_take(&again, q, 1, 0, "f.zst", 0, &e) != 0))
			why = "the file, recovered, cannot be claimed again";
		else if (r != 0 && r != -1)
			why = "neither 0 nor -1";
		left += r < 0;
		if (r < 0 && !why)
			claim_release(&again, NULL);
	}
	ok(n > 0 && left > 0 && !why, "claim_let_go with each of its %ld calls failing: released, or said with the "
	   "lock given up and the record (%ld times) left stale%s%s", n, left, why ? ": " : "", why ? why : "");
	if (why)
		diag("at call %ld", k - 1);
}

/*
 * claim_check's other answers: a record that is gone (retired or released
 * while recover or status looked, even just before its lock) is gone, not
 * stale, nor an error, with no holder; an unreadable record is judged by
 * its age against the default lease (or the one given), with no holder.
 */
static void test_check(void)
{
	char q[512], p[600];
	struct claim a;
	struct claim_id id;
	long long age = -1;
	struct err e;
	snprintf(q, sizeof q, "%s/check/rollouts", top);
	snprintf(p, sizeof p, "%s/step_1/rank_0/.claimed/gone.zst", q);
	int bad = spool_put(q, 1, 0, "f.zst", "F") != 0 || claim_take(&a, q, 1, 0, "f.zst", 0, &e) != 0;
	ok(!bad && claim_check(p, 0, time(NULL), &id, &age, &e) == 2 && !id.host[0] && !id.pid && age == 0,
	   "a record that is not there: gone (2), no holder");
	fsys_test_fail_at(0, 0);
	int r = claim_check(a.claim_path, 0, time(NULL), &id, &age, &e);
	long n = fsys_calls_made();
	fsys_test_fail_at(n, ENOENT);   /* the last: opening it to lock */
	int gone = claim_check(a.claim_path, 0, time(NULL), &id, &age, &e);
	fsys_test_fail_at(0, 0);
	ok(r == 0 && n > 1 && gone == 2, "our own claim is live (%d); one retired just before its lock is "
	   "gone (%d)", r, gone);
	claim_release(&a, NULL);

	FILE *f = fopen(p, "w");
	bad = !f || fputs("not a claim record\n", f) < 0;
	if (f)
		fclose(f);
	struct timespec t[2] = { { time(NULL) - 1000, 0 }, { time(NULL) - 1000, 0 } };
	bad |= utimensat(AT_FDCWD, p, t, 0) != 0;
	time_t now = time(NULL);
	ok(!bad && claim_check(p, 0, now, &id, &age, &e) == 0 && !id.host[0] && age >= 1000,
	   "an unreadable record 1000 s old: live under the default lease, no holder");
	ok(claim_check(p, 0, now + CLAIM_LEASE_DEFAULT, &id, &age, &e) == 1, "stale once the default lease is over");
	ok(claim_check(p, 600, now, &id, &age, &e) == 1, "or when a lease given is shorter than its age");
}

/* A claim record at path naming holder; 0 or -1. */
static int put_record(const char *path, const struct claim_id *holder)
{
	char text[512];
	FILE *f = fopen(path, "w");
	int bad = !f || claim_format_id(holder, text, sizeof text) < 0 || fputs(text, f) < 0;
	return (f && fclose(f) != 0) || bad ? -1 : 0;
}

/* claim_check as on a file system without flock: its lock, its last spool
 * call, fails with errnum (the hook fails the lock's open rather than the
 * flock after it; claim_check sees the same -1 and errno). */
static int check_without_flock(const char *path, int errnum, struct claim_id *id, struct err *e)
{
	long long age;
	fsys_test_fail_at(0, 0);
	claim_check(path, 0, time(NULL), id, &age, e);
	fsys_test_fail_at(fsys_calls_made(), errnum);
	int r = claim_check(path, 0, time(NULL), id, &age, e);
	fsys_test_fail_at(0, 0);
	return r;
}

/*
 * Where flock fails with ENOLCK (NFS mounted nolock) or EOPNOTSUPP, a
 * holder on this host is judged by the process table: a live one, its pid
 * there with the start time it recorded, keeps its claim (and is not
 * disturbed by the look); a dead one (no such pid) or a pid reused by
 * another process (another start time) has a stale claim, which recover
 * returns. A record without a start time is judged by its pid alone. Any
 * other failure of the lock is an error.
 */
static void test_check_without_flock(void)
{
	char dir[512], p[600];
	int up[2], hold[2];
	struct claim_id holder, id, self;
	struct err e = { 0 };
	snprintf(dir, sizeof dir, "%s/nolock", top);
	snprintf(p, sizeof p, "%s/rec", dir);
	if (mkdir(dir, 0777) != 0 || pipe(up) != 0 || pipe(hold) != 0) {
		ok(0, "a directory and two pipes");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {   /* the holder: says who it is, lives until hold is closed */
		char c;
		claim_self(&holder, 0);
		close(hold[1]);
		ssize_t w = write(up[1], &holder, sizeof holder);
		_exit(w == (ssize_t)sizeof holder && read(hold[0], &c, 1) == 0 ? 0 : 1);
	}
	close(up[1]);
	close(hold[0]);
	int bad = pid < 0 || read(up[0], &holder, sizeof holder) != (ssize_t)sizeof holder ||
		  put_record(p, &holder) != 0;
	close(up[0]);
	ok(!bad && holder.pid == (long)pid && holder.pstart > 0, "a live holder's record (pid %ld)", holder.pid);
	is_int(check_without_flock(p, ENOLCK, &id, &e), 0, "no flock (ENOLCK): its pid there, its start time: live");
	ok(id.pid == (long)pid, "naming it");
	is_int(check_without_flock(p, EOPNOTSUPP, &id, &e), 0, "EOPNOTSUPP: the same");
	int status = -1;
	ok(pid > 0 && waitpid(pid, &status, WNOHANG) == 0, "the holder is not disturbed by the looks");
	close(hold[1]);
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "it exits");
	is_int(check_without_flock(p, ENOLCK, &id, &e), 1, "dead (its pid gone): stale");
	is_int(check_without_flock(p, EOPNOTSUPP, &id, &e), 1, "and with EOPNOTSUPP");

	claim_self(&self, 0);
	self.pstart++;
	bad = put_record(p, &self) != 0;
	is_int(bad ? -9 : check_without_flock(p, ENOLCK, &id, &e), 1,
	       "a pid reused (this process's, another start time): stale");
	self.pstart = 0;
	bad = put_record(p, &self) != 0;
	is_int(bad ? -9 : check_without_flock(p, ENOLCK, &id, &e), 0, "a record without a start time, its pid there: live");
	ok(check_without_flock(p, EIO, &id, &e) == -1 && strstr(e.msg, strerror(EIO)),
	   "a lock failing otherwise (EIO): an error, said (%s)", e.msg);
}

/* Each claim's record is closed when the claim ends, retired or released:
 * a consumer of many files keeps no descriptor per file (it would run out
 * of them), and no lock of a claim that ended. */
static void test_closed(void)
{
	char q[512];
	struct claim a, b;
	struct err e;
	snprintf(q, sizeof q, "%s/closed/rollouts", top);
	int bad = spool_put(q, 1, 0, "f.zst", "F") != 0 || spool_put(q, 1, 0, "g.zst", "G") != 0 ||
		  claim_take(&a, q, 1, 0, "f.zst", 0, &e) != 0 || claim_take(&b, q, 1, 0, "g.zst", 0, &e) != 0;
	int afd = a.fd, bfd = b.fd;
	ok(!bad && afd >= 0 && bfd >= 0 && fcntl(afd, F_GETFD) >= 0, "two claims, each holding its record open");
	bad = claim_retire(&a, &e) != 0 || claim_release(&b, &e) != 0;
	ok(!bad && a.state == CLAIM_RETIRED && b.state == CLAIM_RELEASED && a.fd == -1 && b.fd == -1,
	   "one retired, one released");
	ok(fcntl(afd, F_GETFD) < 0 && fcntl(bfd, F_GETFD) < 0, "both records closed");
}

int main(void)
{
	/* tmpfs where there is one: the crash loops fsync hundreds of times */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(top, sizeof top, "%s/grpo-test-claim.%ld", base, (long)getpid());
	sh("rm -rf %s", top);
	sh("mkdir -p %s", top);
	test_records();
	test_self();
	test_claim_basics();
	test_names();
	test_held_by();
	test_taken_over();
	test_closed();
	test_take_fault(EIO);
	test_take_fault(ENOSPC);
	test_renew();
	test_check();
	test_check_without_flock();
	test_end_fault(1);
	test_end_fault(0);
	test_let_go_fault();
	test_concurrent();
	test_publish_then_crash();
	test_crash_publish();
	test_crash_consume();
	sh("rm -rf %s", top);
	return tap_done();
}
