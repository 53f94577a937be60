/*
 * rewardpool.c: see rewardpool.h. One thread: requests are written to the
 * free copies, then poll() waits on the busy copies' output with the
 * earliest deadline; each copy's bytes are read as they come, and a copy
 * whose deadline passed without a whole line is a timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "score/rewardpool.h"

int rewardpool_start(struct rewardpool *p, const char *cmd, uint32_t jobs, double timeout, struct err *e)
{
	memset(p, 0, sizeof *p);
	if (jobs < 1 || jobs > REWARDPOOL_MAX)
		return err_set(e, "reward program '%s': %u copies (1 to %d)", cmd, jobs, REWARDPOOL_MAX);
	p->cmd = cmd;
	p->c = calloc(jobs, sizeof *p->c);
	p->busy = calloc(jobs, sizeof *p->busy);
	p->last = calloc(jobs, sizeof *p->last);
	p->pfd = calloc(jobs, sizeof *p->pfd);
	if (!p->c || !p->busy || !p->last || !p->pfd) {
		rewardpool_stop(p, NULL);
		return err_set(e, "out of memory");
	}
	for (uint32_t i = 0; i < jobs; i++) {
		if (rewardcmd_start(&p->c[i], cmd, timeout, e) < 0) {
			for (uint32_t j = 0; j < i; j++)
				rewardcmd_kill(&p->c[j]);
			p->jobs = i;
			rewardpool_stop(p, NULL);
			return -1;
		}
		p->jobs = i + 1;
		if (jobs > 1) {
			snprintf(p->c[i].copy, sizeof p->c[i].copy, " (copy %u of %u)", i + 1, jobs);
			p->c[i].lead = i ? &p->c[0] : NULL;
		}
	}
	return 0;
}

/* After an error: every copy stopped, so that no answer to a request of
 * this run is read as one of the next. */
static int kill_all(struct rewardpool *p)
{
	for (uint32_t i = 0; i < p->jobs; i++) {
		rewardcmd_kill(&p->c[i]);
		p->busy[i] = 0;
	}
	return -1;
}

int rewardpool_run(struct rewardpool *p, const struct rewardcmd_req *q, uint32_t n, double *out, size_t stride,
		   int (*done)(void *ctx, uint32_t i, struct err *e), void *ctx, struct err *e)
{
	uint32_t next = 0, nbusy = 0, quit = 0;
	struct err de;   /* a program's error while waiting after done failed */
	memset(p->busy, 0, p->jobs * sizeof *p->busy);
	memset(p->last, 0, p->jobs * sizeof *p->last);
	while ((next < n && !quit) || nbusy) {
		for (uint32_t i = 0; i < p->jobs && next < n && !quit; i++) {
			if (p->busy[i])
				continue;
			if (rewardcmd_send(&p->c[i], &q[next], e) < 0)
				return kill_all(p);
			p->busy[i] = p->last[i] = ++next;
			nbusy++;
		}
		/* wait for the busy copies, until the earliest deadline */
		double first = 0;
		uint32_t np = 0;
		for (uint32_t i = 0; i < p->jobs; i++) {
			if (!p->busy[i])
				continue;
			if (!np || p->c[i].deadline < first)
				first = p->c[i].deadline;
			p->pfd[np++] = (struct pollfd){ p->c[i].from_fd, POLLIN, 0 };
		}
		double left = first - rewardcmd_now();
		int r = poll(p->pfd, np, left <= 0 ? 0 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR) {
			err_sys(e, "reward program '%s': poll", p->cmd);
			return kill_all(p);
		}
		double t = rewardcmd_now();
		for (uint32_t i = 0, k = 0; i < p->jobs; i++) {
			if (!p->busy[i])
				continue;
			short ev = r > 0 ? p->pfd[k].revents : 0;
			k++;
			if (!ev && t < p->c[i].deadline)
				continue;
			uint32_t j = p->busy[i] - 1;
			size_t at = q[j].members ? q[j].row : j;   /* a group's rows are its members' */
			int got = rewardcmd_recv(&p->c[i], &q[j], out + at * stride, quit ? &de : e);
			if (got < 0)
				return kill_all(p);
			if (got == 0)
				continue;
			p->busy[i] = 0;
			nbusy--;
			if (!quit && done && done(ctx, j, e) < 0)
				quit = 1;   /* the answers sent for still come, not to be read as the next run's */
		}
	}
	if (quit)
		return -1;
	/* a second line to a copy's last request: no later request finds it */
	for (uint32_t i = 0; i < p->jobs; i++)
		if (p->last[i] && rewardcmd_check(&p->c[i], &q[p->last[i] - 1], e) < 0)
			return kill_all(p);
	return 0;
}

int rewardpool_stop(struct rewardpool *p, struct err *e)
{
	/* every input closed first, so that the copies end together */
	for (uint32_t i = 0; i < p->jobs; i++) {
		if (p->c[i].to_fd >= 0)
			close(p->c[i].to_fd);
		p->c[i].to_fd = -1;
	}
	struct err ce, first;
	uint32_t failed = 0;
	/* the lead last, as it keeps the names; the lowest copy's message kept */
	for (uint32_t i = p->jobs; i-- > 0;)
		if (rewardcmd_stop(&p->c[i], &ce) < 0 && ++failed)
			first = ce;
	if (failed == 1)
		err_set(e, "%s", first.msg);
	else if (failed)
		err_set(e, "%s; %u other copies did not exit with status 0 either", first.msg, failed - 1);
	free(p->c);
	free(p->busy);
	free(p->last);
	free(p->pfd);
	memset(p, 0, sizeof *p);
	return failed ? -1 : 0;
}
