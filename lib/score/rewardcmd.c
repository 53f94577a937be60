/*
 * rewardcmd.c: see rewardcmd.h. The program's standard input is one end
 * of a socket pair, so a request written after it died fails with EPIPE
 * (MSG_NOSIGNAL) instead of raising SIGPIPE in the caller; its standard
 * output is a pipe. Both ends here are non-blocking and every wait goes
 * through poll() with the request's deadline, so a program that stops
 * reading or stops writing is caught alike.
 */
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "data/jsonview.h"
#include "score/rewardcmd.h"

#define LINE_MAX_BYTES (1 << 20)

double rewardcmd_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int rewardcmd_start(struct rewardcmd *c, const char *cmd, double timeout, struct err *e)
{
	memset(c, 0, sizeof *c);
	c->cmd = cmd;
	c->timeout = timeout;
	c->to_fd = c->from_fd = -1;
	int sv[2], pv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_sys(e, "reward program '%s': socketpair", cmd);
	if (pipe2(pv, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		return err_sys(e, "reward program '%s': pipe", cmd);
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]), close(sv[1]), close(pv[0]), close(pv[1]);
		return err_sys(e, "reward program '%s': fork", cmd);
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(sv[1], 0) < 0 || dup2(pv[1], 1) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);   /* also here, so a kill right after start reaches the group */
	close(sv[1]);
	close(pv[1]);
	c->pid = pid;
	c->to_fd = sv[0];
	c->from_fd = pv[0];
	fcntl(c->to_fd, F_SETFL, fcntl(c->to_fd, F_GETFL) | O_NONBLOCK);
	fcntl(c->from_fd, F_SETFL, fcntl(c->from_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static void free_names(struct rewardcmd *c)
{
	for (uint32_t k = 0; k < c->n_names; k++)
		free(c->names[k]);
	free(c->names);
	c->names = NULL;
	c->n_names = 0;
}

/* How the program ended, once it has (waits at most `wait` seconds, then
 * kills): its exit status, or -1 when it did not exit. */
static int reap(struct rewardcmd *c, double wait, char *how, size_t size)
{
	int st = 0;
	double end = rewardcmd_now() + wait;
	pid_t r;
	while ((r = waitpid(c->pid, &st, WNOHANG)) == 0 && rewardcmd_now() < end)
		usleep(10000);
	if (r == 0) {
		kill(-c->pid, SIGKILL);
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &st, 0);
		snprintf(how, size, "killed after %gs without exiting", wait);
	} else if (r < 0) {
		snprintf(how, size, "lost (%s)", strerror(errno));
	} else if (WIFEXITED(st)) {
		snprintf(how, size, "exited with status %d", WEXITSTATUS(st));
	} else {
		snprintf(how, size, "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	}
	kill(-c->pid, SIGKILL);   /* whatever it left behind in its group */
	c->pid = 0;
	return r > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void shut(struct rewardcmd *c)
{
	if (c->to_fd >= 0)
		close(c->to_fd);
	if (c->from_fd >= 0)
		close(c->from_fd);
	c->to_fd = c->from_fd = -1;
}

/* "sequence S of group G", or "group G" for a request of the group form. */
static const char *whom(const struct rewardcmd_req *q, char *s, size_t size)
{
	if (q->members)
		snprintf(s, size, "group %s", q->group_id);
	else
		snprintf(s, size, "sequence %s of group %s", q->seq_id, q->group_id);
	return s;
}

/* The program failed us: stop it and say how, naming the sequence. One
 * that exited 75 (EX_TEMPFAIL: the judge it asks is down, say) said
 * "later": errnum EAGAIN, which the tools take as temporary. */
static int fail(struct rewardcmd *c, const struct rewardcmd_req *q, struct err *e, const char *what)
{
	char how[128] = "not running", who[300];
	int status = -1;
	shut(c);
	if (c->pid > 0)
		status = reap(c, 1.0, how, sizeof how);
	err_set(e, "reward program '%s'%s %s for %s (%s)", c->cmd, c->copy, what, whom(q, who, sizeof who), how);
	if (status == REWARDCMD_LATER)
		err_later(e);
	return -1;
}

static int wait_fd(int fd, short ev, double deadline)
{
	for (;;) {
		double left = deadline - rewardcmd_now();
		if (left <= 0)
			return 0;
		struct pollfd p = { fd, ev, 0 };
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* Is x a reward: a number, or null where the line's NaN was (fixed)? */
#define WHY_MAX 160
static int reward_value(const cJSON *x, int fixed, double *v)
{
	if (cJSON_IsNumber(x))
		*v = x->valuedouble;
	else if (fixed && cJSON_IsNull(x))
		*v = NAN;
	else
		return 0;
	return 1;
}

/* Is x a reward of the group form: an array of one reward per member? */
static int reward_array(const cJSON *x, int fixed, uint32_t members, char *why)
{
	const char *name = x->string ? x->string : "";
	if (!cJSON_IsArray(x)) {
		snprintf(why, WHY_MAX, "'%.*s' is not an array", REWARD_NAME_MAX, name);
		return 0;
	}
	int n = cJSON_GetArraySize(x);
	if ((uint32_t)n != members) {
		snprintf(why, WHY_MAX, "'%.*s' has %d values for a group of %u", REWARD_NAME_MAX, name, n, members);
		return 0;
	}
	const cJSON *v;
	double d;
	cJSON_ArrayForEach(v, x) if (!reward_value(v, fixed, &d)) {
		snprintf(why, WHY_MAX, "'%.*s' holds a value that is not a number", REWARD_NAME_MAX, name);
		return 0;
	}
	return 1;
}

/* Whether s holds a control byte (a line break, a tab, an escape). */
static int control_byte(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* A reply line: its rewards into out, in the order of the names (in the
 * group form, member m's at out + m * q->stride). NaN, Infinity and
 * -Infinity, which Python's json writes, are read as those values, for the
 * scorer to store as 0 (grpo-score(1)). On a bad line, why (of size
 * WHY_MAX) says what is wrong with it. */
static int parse_reply(struct rewardcmd *c, const struct rewardcmd_req *q, const char *line, size_t n, double *out,
		       char *why)
{
	const char *whose = c->copy[0] ? "the program's" : "its";   /* several copies: perhaps another's */
	if (c->lead)
		c = c->lead;   /* the names are the first answer's, whichever copy gave it */
	struct err pe;
	if (json_check_numbers(line, n, &pe) < 0) {   /* 05 or 5.: what the program meant is unknown */
		snprintf(why, WHY_MAX, "%s", pe.msg);
		return -1;
	}
	char *fixed = NULL;
	size_t fixed_n;
	int f = json_fix_nonfinite(line, n, &fixed, &fixed_n);
	if (f < 0)
		return -2;
	/* one value alone: a second object on the line would be dropped silently;
	 * a key twice would be read as cJSON reads it, not as Python's json */
	cJSON *j = f == 1 ? json_parse_one(fixed, fixed_n, &pe) : json_parse_one(line, n, &pe);
	int nomem = !j && errno == ENOMEM;
	free(fixed);
	if (!j) {
		snprintf(why, WHY_MAX, "%s", pe.msg);
		return nomem ? -2 : -1;
	}
	int group = q->members != NULL;
	uint32_t M = q->n_members;
	snprintf(why, WHY_MAX, "not {\"rewards\": {NAME: %s, ...}}", group ? "[number, ...]" : "number");
	cJSON *rw = cJSON_GetObjectItemCaseSensitive(j, "rewards"), *x;
	double v;
	int ok = cJSON_IsObject(rw) && cJSON_GetArraySize(rw) > 0 && cJSON_GetArraySize(rw) <= REWARDCMD_MAX;
	cJSON_ArrayForEach(x, rw) ok = ok && x->string &&
				       (group ? reward_array(x, f == 1, M, why) : reward_value(x, f == 1, &v));
	cJSON_ArrayForEach(x, rw) if (ok && strlen(x->string) > REWARD_NAME_MAX) {
		/* a longer name would be stored cut, perhaps to another's */
		snprintf(why, WHY_MAX, "a name of over %d bytes", REWARD_NAME_MAX);
		ok = 0;
	}
	cJSON_ArrayForEach(x, rw) if (ok && control_byte(x->string)) {
		/* names go into tables, plots and terminals, one line each */
		snprintf(why, WHY_MAX, "a name holding a control character (a line break, a tab)");
		ok = 0;
	}
	if (ok && !c->names) {
		uint32_t K = (uint32_t)cJSON_GetArraySize(rw);
		c->names = calloc(K, sizeof *c->names);
		uint32_t k = 0;
		cJSON_ArrayForEach(x, rw) if (c->names && !(c->names[k++] = strdup(x->string))) ok = 0;
		c->n_names = c->names ? K : 0;
		if (!ok || !c->names) {
			free_names(c);
			cJSON_Delete(j);
			return -2;
		}
	}
	if (ok && (uint32_t)cJSON_GetArraySize(rw) != c->n_names) {
		snprintf(why, WHY_MAX, "%d rewards, where %s first answer named %u", cJSON_GetArraySize(rw), whose,
				 c->n_names);
		ok = 0;
	}
	for (uint32_t k = 0; ok && k < c->n_names; k++) {
		x = cJSON_GetObjectItemCaseSensitive(rw, c->names[k]);
		if (!x)
			snprintf(why, WHY_MAX, "no '%s', which %s first answer named", c->names[k], whose);
		if (!x || !group) {
			ok = x != NULL && reward_value(x, f == 1, &out[k]);
			continue;
		}
		uint32_t m = 0;
		const cJSON *y;
		cJSON_ArrayForEach(y, x) reward_value(y, f == 1, &out[m++ * q->stride + k]);   /* checked above */
	}
	cJSON_Delete(j);
	return ok ? 0 : -1;
}

/* Output before the request is an answer to no request: the program
 * answers some requests with more than one line, and each later line
 * would be taken as the next sequence's answer. */
int rewardcmd_check(struct rewardcmd *c, const struct rewardcmd_req *q, struct err *e)
{
	if (!c->in.len && buf_reserve(&c->in, 65536) == 0) {
		ssize_t n = read(c->from_fd, c->in.data, 65536);
		c->in.len = n > 0 ? (size_t)n : 0;
	}
	if (c->in.len) {
		char *nl = memchr(c->in.data, '\n', c->in.len);
		size_t n = nl ? (size_t)(nl - (char *)c->in.data) : c->in.len;
		char what[300];
		snprintf(what, sizeof what, "wrote '%.*s%s' before it was asked (one line per request)",
			 (int)(n < 80 ? n : 80), (const char *)c->in.data, n > 80 ? "..." : "");
		return fail(c, q, e, what);
	}
	return 0;
}

/* One response's request object, after sep; group_id NULL: without it (the group form). */
static int print_response(struct buf *b, const struct rewardcmd_req *q, const char *group_id, const char *sep)
{
	int r = buf_printf(b, "%s{\"sequence_id\": %s, ", sep, q->seq_id);
	r = r < 0 || !group_id ? r : buf_printf(b, "\"group_id\": %s, ", group_id);
	r = r < 0 ? r : buf_printf(b, "\"prompt\": ");
	r = r < 0 ? r : json_print_string_n(b, q->prompt ? q->prompt : "", q->prompt_n);
	r = r < 0 ? r : buf_printf(b, ", \"response\": ");
	r = r < 0 ? r : json_print_string_n(b, q->response, q->response_n);
	r = r < 0 ? r : buf_printf(b, ", \"answer\": ");
	r = r < 0 ? r : q->answer ? json_print_string(b, q->answer) : buf_printf(b, "null");
	r = r < 0 ? r : buf_printf(b, ", \"finish_reason\": ");
	r = r < 0 ? r : q->finish_reason ? json_print_string(b, q->finish_reason) : buf_printf(b, "null");
	return r < 0 ? r : buf_printf(b, "}");
}

int rewardcmd_send(struct rewardcmd *c, const struct rewardcmd_req *q, struct err *e)
{
	char who[300];
	if (c->pid <= 0)
		return err_set(e, "reward program '%s'%s is not running (%s)", c->cmd, c->copy,
			       whom(q, who, sizeof who));
	struct buf *b = &c->req;
	buf_reset(b);
	int r = 0;
	if (q->members) {
		r = buf_printf(b, "{\"group_id\": %s, \"responses\": [", q->group_id);
		for (uint32_t m = 0; m < q->n_members && r >= 0; m++)
			r = print_response(b, &q->members[m], NULL, m ? ", " : "");
		r = r < 0 ? r : buf_printf(b, "]}\n");
	} else {
		r = print_response(b, q, q->group_id, "");
		r = r < 0 ? r : buf_printf(b, "\n");
	}
	if (r < 0)
		return err_set(e, "out of memory");
	c->deadline = rewardcmd_now() + c->timeout;
	if (rewardcmd_check(c, q, e) < 0)
		return -1;

	for (size_t at = 0; at < b->len;) {
		ssize_t w = send(c->to_fd, b->data + at, b->len - at, MSG_NOSIGNAL);
		if (w > 0) {
			at += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int p = wait_fd(c->to_fd, POLLOUT, c->deadline);
			if (p > 0)
				continue;
			if (p == 0)
				return fail(c, q, e, "did not read its request within --reward-timeout");
		}
		return fail(c, q, e, "stopped reading requests");
	}
	return 0;
}

int rewardcmd_recv(struct rewardcmd *c, const struct rewardcmd_req *q, double *out, struct err *e)
{
	for (;;) {
		char *nl = c->in.len ? memchr(c->in.data, '\n', c->in.len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - (char *)c->in.data);
			char why[WHY_MAX];
			int rc = parse_reply(c, q, (const char *)c->in.data, n, out, why);
			char shown[100];
			snprintf(shown, sizeof shown, "%.*s", (int)(n < 80 ? n : 80), (const char *)c->in.data);
			memmove(c->in.data, nl + 1, c->in.len - n - 1);
			c->in.len -= n + 1;
			if (rc == 0)
				return 1;
			if (rc == -2)
				return err_set(e, "out of memory");
			char what[400];
			snprintf(what, sizeof what, "answered '%s%s': %s", shown, n > 80 ? "..." : "", why);
			return fail(c, q, e, what);
		}
		if (c->in.len > LINE_MAX_BYTES)
			return fail(c, q, e, "answered a line of over 1 MiB");
		if (buf_reserve(&c->in, 65536) < 0)
			return err_set(e, "out of memory");
		ssize_t n = read(c->from_fd, (char *)c->in.data + c->in.len, 65536);
		if (n > 0) {
			c->in.len += (size_t)n;
			continue;
		}
		if (n == 0)
			return fail(c, q, e, "ended without answering");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return fail(c, q, e, "could not be read from");
		if (rewardcmd_now() < c->deadline)
			return 0;
		char what[96];
		snprintf(what, sizeof what, "did not answer within --reward-timeout %gs", c->timeout);
		return fail(c, q, e, what);
	}
}

int rewardcmd_ask(struct rewardcmd *c, const struct rewardcmd_req *q, double *out, struct err *e)
{
	if (rewardcmd_send(c, q, e) < 0)
		return -1;
	for (;;) {
		int r = rewardcmd_recv(c, q, out, e);
		if (r != 0)
			return r < 0 ? -1 : 0;
		/* 0: the deadline, and recv reads once more before it says so */
		if (wait_fd(c->from_fd, POLLIN, c->deadline) < 0)
			return fail(c, q, e, "could not be waited for");
	}
}

void rewardcmd_kill(struct rewardcmd *c)
{
	shut(c);
	if (c->pid > 0) {
		kill(-c->pid, SIGKILL);
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
		c->pid = 0;
	}
}

int rewardcmd_stop(struct rewardcmd *c, struct err *e)
{
	int r = 0;
	shut(c);
	if (c->pid > 0) {
		char how[128];
		reap(c, c->timeout, how, sizeof how);
		if (strcmp(how, "exited with status 0") != 0)
			r = err_set(e, "reward program '%s'%s %s", c->cmd, c->copy, how);
	}
	free_names(c);
	buf_free(&c->in);
	buf_free(&c->req);
	return r;
}
