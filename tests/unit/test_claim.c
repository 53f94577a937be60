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
	ok(sizeof(struct claim) <= 2 * PATH_MAX + 512, "struct claim holds two paths, not four (%zu bytes)",
	   sizeof(struct claim));
}

int main(void)
{
	/* tmpfs where there is one: the crash loops fsync hundreds of times */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(top, sizeof top, "%s/grpo-test-claim.%ld", base, (long)getpid());
	sh("rm -rf %s", top);
	sh("mkdir -p %s", top);
	test_records();
	test_claim_basics();
	test_concurrent();
	test_publish_then_crash();
	test_crash_publish();
	test_crash_consume();
	sh("rm -rf %s", top);
	return tap_done();
}
