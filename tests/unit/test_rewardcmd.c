/* One reward program (rewardcmd.h) spoken to directly: the request line it
 * is given, its replies read by the first reply's names, every bad reply,
 * early exit, partial line and timeout an error naming the program and the
 * sequence (the group), and no child or zombie left behind. Each program
 * here replies from a file of lines, one per request, so a test says what
 * the program answers without timing anything; a timeout test uses a
 * program that sleeps far longer than its timeout. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "score/rewardcmd.h"
#include "score/rewardpool.h"
#include "tap.h"

static char dir[64];
static char prog[512];   /* replies with the lines of dir/replies, one per request */

static const struct rewardcmd_req seq7 = { .seq_id = "7", .group_id = "1", .prompt = "", .response = "x",
					   .response_n = 1 };

static void write_file(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Whether process pid is gone or a zombie that is not ours (reparented):
 * waits for a SIGKILL already sent to land, at most 30 s. */
static int gone(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 3000; i++) {
		const char *s = file_text(path);
		const char *p = strrchr(s, ')');
		if (!strcmp(s, "(absent)") || (p && p[1] == ' ' && p[2] == 'Z'))
			return 1;
		usleep(10000);
	}
	return 0;
}

static void is_text(const char *got, const char *want, const char *name)
{
	ok(!strcmp(got, want), "%s: got %s", name, got);
}

/* A child of ours that was reaped: waitpid knows it no more. */
static int reaped(pid_t pid)
{
	return pid > 0 && waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD;
}

/* Start the replying program on these lines and ask it n times: the
 * status of the last ask (the first that failed), its rewards in out. */
static int replies(struct rewardcmd *c, const char *lines, int n, double *out, struct err *e)
{
	write_file("replies", lines);
	if (rewardcmd_start(c, prog, 30, e) < 0)
		return -2;
	int r = 0;
	for (int i = 0; i < n && r == 0; i++)
		r = rewardcmd_ask(c, &seq7, out, e);
	return r;
}

/* The second reply of a program whose first named a and b: its error, or
 * "" when it was read. */
static const char *second_reply(const char *second, struct err *e)
{
	char lines[512];
	snprintf(lines, sizeof lines, "{\"rewards\": {\"a\": 1, \"b\": 2}}\n%s\n", second);
	struct rewardcmd c;
	double out[REWARDCMD_MAX];
	e->msg[0] = 0;
	if (replies(&c, lines, 2, out, e) == 0)
		e->msg[0] = 0;
	struct err se;
	rewardcmd_stop(&c, &se);
	return e->msg;
}

static void test_replies(void)
{
	struct rewardcmd c;
	struct err e;
	double out[REWARDCMD_MAX];
	int r = replies(&c, "{\"rewards\": {\"b\": 2, \"a\": 1}}\n{\"rewards\": {\"a\": 3, \"b\": 4}}\n", 1, out, &e);
	ok(r == 0 && c.n_names == 2 && !strcmp(c.names[0], "b") && !strcmp(c.names[1], "a") && out[0] == 2 && out[1] == 1,
	   "the first reply names the rewards in its order: %d, %u names, %g %g", r, c.n_names, out[0], out[1]);
	r = rewardcmd_ask(&c, &seq7, out, &e);
	ok(r == 0 && out[0] == 4 && out[1] == 3, "a later reply's values in the first's order: %d, %g %g", r, out[0],
	   out[1]);
	pid_t pid = c.pid;
	is_int(rewardcmd_stop(&c, &e), 0, "a program that exits 0 at the end of its input stops with 0");
	ok(reaped(pid), "and is reaped");

	r = replies(&c, "{\"rewards\": {\"a\": NaN, \"b\": -Infinity, \"c\": Infinity}}\n", 1, out, &e);
	ok(r == 0 && isnan(out[0]) && out[1] == -INFINITY && out[2] == INFINITY,
	   "NaN, -Infinity and Infinity read as those values: %d, %g %g %g", r, out[0], out[1], out[2]);
	rewardcmd_stop(&c, &e);

	static const struct {
		const char *reply, *want;
	} bad[] = {
		{ "{\"rewards\": {\"a\": 1, \"c\": 2}}", "answered '{\"rewards\": {\"a\": 1, \"c\": 2}}': no 'b', which its first answer named for sequence 7 of group 1 (" },
		{ "{\"rewards\": {\"a\": 1, \"b\": 2, \"c\": 3}}", ": 3 rewards, where its first answer named 2 for sequence 7" },
		{ "{\"rewards\": {\"b\": 2}}", ": 1 rewards, where its first answer named 2 for sequence 7" },
		{ "{\"rewards\": {\"a\": \"1\", \"b\": 2}}", ": not {\"rewards\": {NAME: number, ...}} for sequence 7" },
		{ "{\"rewards\": {\"a\": 1, \"b\": null}}", ": not {\"rewards\": {NAME: number, ...}} for sequence 7" },
		{ "{\"rewards\": {\"a\": 1, \"b\": [2]}}", ": not {\"rewards\": {NAME: number, ...}} for sequence 7" },
		{ "{\"rewards\": {}}", ": not {\"rewards\": {NAME: number, ...}} for sequence 7" },
		{ "{\"rewards\": [1, 2]}", ": not {\"rewards\": {NAME: number, ...}} for sequence 7" },
		{ "{\"a\": 1, \"b\": 2}", ": not {\"rewards\": {NAME: number, ...}} for sequence 7" },
		{ "{\"rewards\": {\"a\": 1, \"b\": 2}} {\"rewards\": {\"a\": 1, \"b\": 2}}", "for sequence 7 of group 1" },
		{ "{\"rewards\": {\"a\": 05, \"b\": 2}}", "for sequence 7 of group 1" },
		{ "", "answered '': " },
		{ "{\"rewards\": {\"a\": 1, \"b\\tc\": 2}}", ": a name holding a control character" },
		{ "{\"rewards\": {\"a\": 1, \"b\\u007f\": 2}}", ": a name holding a control character" },
		/* 81 bytes: shown to its 80th, then "..." */
		{ "{\"rewards\": {\"a\": 1, \"b\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}",
		  "answered '{\"rewards\": {\"a\": 1, \"b\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}...': not" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *msg = second_reply(bad[i].reply, &e);
		char want[512];
		snprintf(want, sizeof want, "reward program '%s' ", prog);
		ok(!strncmp(msg, want, strlen(want)) && strstr(msg, bad[i].want), "refused '%s': %s", bad[i].reply, msg);
	}
	ok(!second_reply("{\"rewards\": {\"b\": 3, \"a\": 4}}", &e)[0], "the same names in another order: read");
}

static void test_after_error(void)
{
	struct rewardcmd c;
	struct err e;
	double out[REWARDCMD_MAX];
	write_file("replies", "{\"rewards\": {\"a\": 1}}\nhello\n{\"rewards\": {\"a\": 1}}\n");
	if (rewardcmd_start(&c, prog, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	pid_t pid = c.pid;
	int r = rewardcmd_ask(&c, &seq7, out, &e);
	r = r < 0 ? r : rewardcmd_ask(&c, &seq7, out, &e);
	ok(r < 0 && strstr(e.msg, "answered 'hello': not valid JSON"), "a line that is not JSON: %s", e.msg);
	ok(c.pid == 0 && c.to_fd < 0 && c.from_fd < 0, "the program stopped: pid %d, fds %d %d", (int)c.pid, c.to_fd,
	   c.from_fd);
	r = rewardcmd_ask(&c, &seq7, out, &e);
	ok(r < 0 && strstr(e.msg, "is not running (sequence 7 of group 1)"), "asking again fails: %s", e.msg);
	is_int(rewardcmd_stop(&c, &e), 0, "stop after an error has nothing to wait for");
	ok(reaped(pid), "the program reaped when it failed");
}

/* prog_text asked once: the error, and whether the program was reaped. */
static const char *ask_once(const char *prog_text, double timeout, struct err *e, int *was_reaped)
{
	struct rewardcmd c;
	double out[REWARDCMD_MAX];
	if (rewardcmd_start(&c, prog_text, timeout, e) < 0)
		return e->msg;
	pid_t pid = c.pid;
	e->errnum = 0;
	if (rewardcmd_ask(&c, &seq7, out, e) == 0)
		snprintf(e->msg, sizeof e->msg, "answered %g", out[0]);
	*was_reaped = reaped(pid);
	struct err se;
	rewardcmd_stop(&c, &se);
	return e->msg;
}

static void test_ends(void)
{
	struct err e;
	int rp;
	const char *m = ask_once("read l; exit 3", 30, &e, &rp);
	ok(!strcmp(m, "reward program 'read l; exit 3' ended without answering for sequence 7 of group 1 (exited with "
		      "status 3)"),
	   "exiting before it answers: %s", m);
	ok(rp && e.errnum != EAGAIN, "reaped, and not a temporary failure (errnum %d)", e.errnum);
	m = ask_once("read l; exit 75", 30, &e, &rp);
	ok(strstr(m, "ended without answering for sequence 7 of group 1 (exited with status 75)") && e.errnum == EAGAIN,
	   "exit status 75 is temporary, EAGAIN: %d, %s", e.errnum, m);
	m = ask_once("read l; printf '{\"rewards\": {\"a\": 1}}'", 30, &e, &rp);
	ok(strstr(m, "ended without answering for sequence 7 of group 1 (exited with status 0)") != NULL,
	   "a partial line, then exit 0: %s", m);
	m = ask_once("read l; kill -9 $$", 30, &e, &rp);
	ok(strstr(m, "ended without answering for sequence 7 of group 1 (killed by signal 9)") && rp,
	   "killed by a signal, and reaped: %s", m);
	m = ask_once("read l; exec >&-; sleep 600", 30, &e, &rp);
	ok(strstr(m, "ended without answering for sequence 7 of group 1 (killed after 1s without exiting)") && rp,
	   "closing its output without exiting: killed, and reaped: %s", m);
	m = ask_once("read l; head -c 2000000 /dev/zero | tr '\\0' x; sleep 600", 30, &e, &rp);
	ok(strstr(m, "answered a line of over 1 MiB for sequence 7 of group 1") && rp, "a line of over 1 MiB: %s", m);

	/* a timeout kills the program's whole group: its background child too */
	char text[256];
	snprintf(text, sizeof text, "sleep 600 & echo $! > %s/bg; read l; sleep 600", dir);
	m = ask_once(text, 3, &e, &rp);   /* 3 s: time enough to note its child's pid, even on a loaded machine */
	char want[400];
	snprintf(want, sizeof want, "reward program '%s' did not answer within --reward-timeout 3s for sequence 7 of "
				    "group 1 (killed after 1s without exiting)", text);
	ok(!strcmp(m, want) && rp, "no answer within the timeout: %s", m);
	char path[128];
	snprintf(path, sizeof path, "%s/bg", dir);
	pid_t bg = (pid_t)atoi(file_text(path));
	ok(bg > 0 && gone(bg), "its background child killed with it (pid %d)", (int)bg);
}

static void test_stop(void)
{
	struct rewardcmd c;
	struct err e;
	char text[256];
	snprintf(text, sizeof text, "sleep 600 & echo $! > %s/bg2; while read l; do :; done", dir);
	if (rewardcmd_start(&c, text, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	pid_t pid = c.pid;
	ok(rewardcmd_stop(&c, &e) == 0 && reaped(pid), "exiting 0 at the end of its input: 0, reaped");
	char path[128];
	snprintf(path, sizeof path, "%s/bg2", dir);
	pid_t bg = (pid_t)atoi(file_text(path));
	ok(bg > 0 && gone(bg), "what it left running in its group is killed (pid %d)", (int)bg);

	/* the timeout is the grace stop gives: long for those that end by
	 * themselves, however loaded the machine, short for the one killed */
	static const struct {
		const char *prog, *want;
		double timeout;
	} ends[] = {
		{ "while read l; do :; done; exit 5", "reward program 'while read l; do :; done; exit 5' exited with status 5",
		  30 },
		{ "kill -9 $$", "reward program 'kill -9 $$' killed by signal 9", 30 },
		{ "exec 0<&-; sleep 600", "reward program 'exec 0<&-; sleep 600' killed after 0.5s without exiting", 0.5 },
	};
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
		if (rewardcmd_start(&c, ends[i].prog, ends[i].timeout, &e) < 0) {
			ok(0, "started: %s", e.msg);
			continue;
		}
		pid = c.pid;
		int r = rewardcmd_stop(&c, &e);
		ok(r < 0 && !strcmp(e.msg, ends[i].want) && reaped(pid), "stop: %d, %s", r, r < 0 ? e.msg : "");
	}
}

/* A program that closed its input, still running: the request fails at
 * once (EPIPE), never waited on. It says when it has closed it, so the
 * request cannot go before (into the socket, to wait for an answer). */
static void test_closed_input(void)
{
	struct rewardcmd c;
	struct err e;
	double out[REWARDCMD_MAX];
	char text[256], path[128];
	snprintf(path, sizeof path, "%s/closed", dir);
	snprintf(text, sizeof text, "exec 0<&-; : > %s; sleep 600", path);
	if (rewardcmd_start(&c, text, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	for (int i = 0; i < 3000 && !strcmp(file_text(path), "(absent)"); i++)
		usleep(10000);
	pid_t pid = c.pid;
	int r = rewardcmd_ask(&c, &seq7, out, &e);
	ok(r < 0 && strstr(e.msg, "stopped reading requests") && strstr(e.msg, "sequence 7 of group 1") && reaped(pid),
	   "its input closed: the request fails at once, the program reaped: %s", e.msg);
	rewardcmd_stop(&c, &e);
}

static void test_unasked(void)
{
	struct rewardcmd c;
	struct err e;
	double out[REWARDCMD_MAX];
	/* a second line to one request */
	write_file("two", "{\"rewards\": {\"a\": 1}}\n{\"rewards\": {\"a\": 2}}\n");
	char text[256];
	snprintf(text, sizeof text, "read l; cat %s/two; read l; sleep 600", dir);
	if (rewardcmd_start(&c, text, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	int r = rewardcmd_ask(&c, &seq7, out, &e);
	ok(r == 0 && out[0] == 1, "the first line answers: %d %g", r, out[0]);
	/* the second line is written with the first, in one write: there by now */
	r = rewardcmd_check(&c, &seq7, &e);
	ok(r < 0 && strstr(e.msg, "wrote '{\"rewards\": {\"a\": 2}}' before it was asked (one line per request) for "
				  "sequence 7 of group 1"),
	   "the second, found by rewardcmd_check: %s", e.msg);
	rewardcmd_stop(&c, &e);

	/* the second line written apart, after the answer was read: rewardcmd_check reads it */
	snprintf(text, sizeof text, "read l; echo '{\"rewards\": {\"a\": 1}}'; while [ ! -e %s/go ]; do sleep 0.01; "
				    "done; echo '{\"rewards\": {\"a\": 3}}'; sleep 600", dir);
	if (rewardcmd_start(&c, text, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	r = rewardcmd_ask(&c, &seq7, out, &e);
	write_file("go", "");
	struct pollfd pf = { c.from_fd, POLLIN, 0 };
	poll(&pf, 1, 30000);   /* the second line is there */
	r = r < 0 ? r : rewardcmd_check(&c, &seq7, &e);
	ok(r < 0 && strstr(e.msg, "wrote '{\"rewards\": {\"a\": 3}}' before it was asked"), "a later second line: %s",
	   e.msg);
	rewardcmd_stop(&c, &e);

	static const char *unasked[] = {
		"{\"rewards\": {\"a\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}",    /* 79 bytes */
		"{\"rewards\": {\"a\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}",   /* 80 */
	};
	for (size_t i = 0; i < 2; i++) {
		char want[256];
		snprintf(want, sizeof want, "wrote '%s' before it was asked", unasked[i]);
		char text[256];
		snprintf(text, sizeof text, "read l; printf '%%s\\n' '{\"rewards\": {\"a\": 1}}' '%s'; sleep 600",
			 unasked[i]);
		/* both lines in one write: there when the answer is read */
		if (rewardcmd_start(&c, text, 30, &e) < 0) {
			ok(0, "started: %s", e.msg);
			return;
		}
		r = rewardcmd_ask(&c, &seq7, out, &e);
		r = r < 0 ? r : rewardcmd_check(&c, &seq7, &e);
		ok(r < 0 && strstr(e.msg, want), "an unasked line of %zu bytes shown whole: %s", strlen(unasked[i]), e.msg);
		rewardcmd_stop(&c, &e);
	}
}

/* A request longer than the socket's buffer: written in parts, as the
 * program reads. */
static void test_long_request(void)
{
	struct rewardcmd c;
	struct err e;
	double out[REWARDCMD_MAX];
	size_t n = 4 << 20;
	char *text = malloc(n);
	if (!text || rewardcmd_start(&c, "while IFS= read -r l; do echo \"{\\\"rewards\\\": {\\\"n\\\": ${#l}}}\"; done",
				     30, &e) < 0) {
		ok(0, "started");
		free(text);
		return;
	}
	memset(text, 'y', n);
	struct rewardcmd_req q = seq7;
	q.response = text;
	q.response_n = n;
	int r = rewardcmd_ask(&c, &q, out, &e);
	double want = (double)n + strlen("{\"sequence_id\": 7, \"group_id\": 1, \"prompt\": \"\", \"response\": \"\", "
				       "\"answer\": null, \"finish_reason\": null}");
	ok(r == 0 && out[0] == want, "a request of 4 MiB sent whole: %d, the program read %g bytes of %g%s%s", r, out[0],
	   want, r < 0 ? ": " : "", r < 0 ? e.msg : "");
	rewardcmd_stop(&c, &e);
	free(text);
}

static void test_request(void)
{
	struct rewardcmd c;
	struct err e;
	double out[REWARDCMD_MAX];
	char text[256];
	snprintf(text, sizeof text, "while IFS= read -r l; do printf '%%s\\n' \"$l\" >> %s/req; echo "
				    "'{\"rewards\": {\"a\": [1, 2]}}'; done", dir);
	if (rewardcmd_start(&c, text, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	struct rewardcmd_req m[2] = {
		{ .seq_id = "3", .group_id = "9", .prompt = "p\"q", .prompt_n = 3, .response = "r\nxTAIL",
		  .response_n = 3, .answer = "42", .finish_reason = "stop" },
		{ .seq_id = "\"s4\"", .group_id = "9", .prompt = NULL, .response = "", .response_n = 0 },
	};
	for (uint32_t k = 0; k < REWARDCMD_MAX; k++)
		out[k] = -1;
	struct rewardcmd_req g = { .group_id = "5", .members = m, .n_members = 2, .stride = 3 };
	int r = rewardcmd_ask(&c, &g, out, &e);
	ok(r == 0 && out[0] == 1 && out[3] == 2 && out[1] == -1 && out[2] == -1,
	   "a group's values at out + m * stride: %d, %g %g, between %g %g", r, out[0], out[3], out[1], out[2]);
	rewardcmd_stop(&c, &e);
	char path[128];
	snprintf(path, sizeof path, "%s/req", dir);
	is_text(file_text(path),
	       "{\"group_id\": 5, \"responses\": [{\"sequence_id\": 3, \"prompt\": \"p\\\"q\", \"response\": \"r\\nx\", "
	       "\"answer\": \"42\", \"finish_reason\": \"stop\"}, {\"sequence_id\": \"s4\", \"prompt\": \"\", "
	       "\"response\": \"\", \"answer\": null, \"finish_reason\": null}]}\n",
	       "the group's request line");
	remove(path);
	if (rewardcmd_start(&c, text, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	m[0].group_id = "8";
	r = rewardcmd_ask(&c, &m[0], out, &e);
	rewardcmd_stop(&c, &e);
	is_text(file_text(path),
	       "{\"sequence_id\": 3, \"group_id\": 8, \"prompt\": \"p\\\"q\", \"response\": \"r\\nx\", \"answer\": \"42\", "
	       "\"finish_reason\": \"stop\"}\n",
	       "one sequence's request line");
}

static void test_groups(void)
{
	struct rewardcmd_req m[2] = { seq7, seq7 };
	struct rewardcmd_req g = { .group_id = "5", .members = m, .n_members = 2, .stride = 1 };
	static const struct {
		const char *reply, *want;
	} bad[] = {
		{ "{\"rewards\": {\"a\": [1]}}", "'a' has 1 values for a group of 2 for group 5 (" },
		{ "{\"rewards\": {\"a\": [1, 2, 3]}}", "'a' has 3 values for a group of 2 for group 5 (" },
		{ "{\"rewards\": {\"a\": 1}}", "'a' is not an array for group 5 (" },
		{ "{\"rewards\": {\"a\": [1, \"2\"]}}", "'a' holds a value that is not a number for group 5 (" },
		{ "{\"rewards\": {\"a\": [1, 2], \"b\": [1]}}", "'b' has 1 values for a group of 2 for group 5 (" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct rewardcmd c;
		struct err e;
		double out[2 * REWARDCMD_MAX];
		char lines[256];
		snprintf(lines, sizeof lines, "%s\n", bad[i].reply);
		write_file("replies", lines);
		if (rewardcmd_start(&c, prog, 30, &e) < 0) {
			ok(0, "started: %s", e.msg);
			continue;
		}
		int r = rewardcmd_ask(&c, &g, out, &e);
		ok(r < 0 && strstr(e.msg, bad[i].want), "group form, refused '%s': %s", bad[i].reply, e.msg);
		rewardcmd_stop(&c, &e);
	}
}

/* Several copies: a copy's later answer is checked against the names of
 * another's first; a timeout of one names it; after an error every copy is
 * stopped and reaped. */
static void test_pool(void)
{
	struct rewardpool p;
	struct err e;
	struct rewardcmd_req q[4];
	char ids[4][8];
	double out[4 * 2];
	for (uint32_t i = 0; i < 4; i++) {
		snprintf(ids[i], sizeof ids[i], "%u", i);
		q[i] = (struct rewardcmd_req){ .seq_id = ids[i], .group_id = "2", .response = "x", .response_n = 1 };
	}
	ok(rewardpool_start(&p, "cat", 0, 30, &e) < 0 && strstr(e.msg, "0 copies (1 to 256)"), "0 copies: %s", e.msg);
	ok(rewardpool_start(&p, "cat", 257, 30, &e) < 0 && strstr(e.msg, "257 copies (1 to 256)"), "257 copies: %s",
	   e.msg);

	/* copy 1 answers sequence 0 at once; copy 2 waits for a file that
	 * copy 1 writes after its answer, then names other rewards */
	char text[512];
	snprintf(text, sizeof text,
		 "while IFS= read -r l; do case $l in *'\"sequence_id\": 0,'*) echo '{\"rewards\": {\"a\": 1, \"b\": 2}}'; "
		 ": > %s/first ;; *) while [ ! -e %s/first ]; do sleep 0.01; done; "
		 "echo '{\"rewards\": {\"a\": 1, \"c\": 2}}' ;; esac; done",
		 dir, dir);
	if (rewardpool_start(&p, text, 2, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	pid_t pids[2] = { p.c[0].pid, p.c[1].pid };
	int r = rewardpool_run(&p, q, 2, out, 2, NULL, NULL, &e);
	ok(r < 0 && strstr(e.msg, "(copy 2 of 2) answered '{\"rewards\": {\"a\": 1, \"c\": 2}}': no 'b', which the "
				  "program's first answer named for sequence 1 of group 2"),
	   "a copy's answer checked against another's names: %s", e.msg);
	ok(reaped(pids[0]) && reaped(pids[1]) && p.c[0].pid == 0 && p.c[1].pid == 0, "both copies stopped and reaped");
	rewardpool_stop(&p, &e);

	/* one copy never answers: a timeout naming it, the others stopped */
	if (rewardpool_start(&p, "while read -r l; do case $l in *'\"sequence_id\": 2,'*) sleep 600 ;; esac; "
				 "echo '{\"rewards\": {\"a\": 1}}'; done",
			     3, 3, &e) < 0) {   /* 3 s: the other copies answer well within it */
		ok(0, "started: %s", e.msg);
		return;
	}
	pid_t tp[3] = { p.c[0].pid, p.c[1].pid, p.c[2].pid };
	r = rewardpool_run(&p, q, 4, out, 2, NULL, NULL, &e);
	ok(r < 0 && strstr(e.msg, "(copy 3 of 3) did not answer within --reward-timeout 3s for sequence 2 of group 2"),
	   "a copy's timeout, naming it: %s", e.msg);
	ok(reaped(tp[0]) && reaped(tp[1]) && reaped(tp[2]), "every copy stopped and reaped");
	rewardpool_stop(&p, &e);

	r = rewardpool_start(&p, "exec cat > /dev/null", REWARDPOOL_MAX, 30, &e);
	ok(r == 0 && p.jobs == REWARDPOOL_MAX, "%d copies: %d%s%s", REWARDPOOL_MAX, r, r < 0 ? ": " : "",
	   r < 0 ? e.msg : "");
	if (r == 0)
		is_int(rewardpool_stop(&p, &e), 0, "all stopped");

	/* one copy answers its last request twice (one write: both lines
	 * there when its answer is read): that request is named */
	if (rewardpool_start(&p, "read l; echo '{\"rewards\": {\"a\": 1}}'; read l; "
				 "printf '%s\\n' '{\"rewards\": {\"a\": 1}}' '{\"rewards\": {\"a\": 2}}'; sleep 600",
			     1, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	r = rewardpool_run(&p, q, 2, out, 2, NULL, NULL, &e);
	ok(r < 0 && strstr(e.msg, "before it was asked (one line per request) for sequence 1 of group 2"),
	   "a second line to the last request, naming it: %s", e.msg);
	rewardpool_stop(&p, &e);

	/* stop: one copy of two exits with status 5 */
	if (rewardpool_start(&p, "while read l; do echo '{\"rewards\": {\"a\": 1}}'; exit 5; done", 2, 30, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return;
	}
	r = rewardpool_run(&p, q, 1, out, 2, NULL, NULL, &e);
	r = r < 0 ? r : rewardpool_stop(&p, &e);
	ok(r < 0 && !strcmp(e.msg, "reward program 'while read l; do echo '{\"rewards\": {\"a\": 1}}'; exit 5; done' "
				   "(copy 1 of 2) exited with status 5"),
	   "one copy's status at stop, alone: %s", e.msg);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_rewardcmd.%d", (int)getpid());
	if (shell("rm -rf %s && mkdir -p %s", dir, dir) != 0)
		skip_all("no temporary directory");
	snprintf(prog, sizeof prog, "exec 3< %s/replies; while IFS= read -r l; do IFS= read -r a <&3 || exit 0; "
				    "printf '%%s\\n' \"$a\"; done", dir);
	test_replies();
	test_after_error();
	test_ends();
	test_stop();
	test_closed_input();
	test_unasked();
	test_long_request();
	test_request();
	test_groups();
	test_pool();
	shell("rm -rf %s", dir);
	return tap_done();
}
