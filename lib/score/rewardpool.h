/*
 * rewardpool.h: several copies of one reward program (rewardcmd.h), so
 * that slow rewards (running tests, a sandbox, a judge behind HTTP) are
 * worked on at once: grpo-score --reward-jobs.
 *
 * Each copy is started as the one program is, and is given one request at
 * a time; a request goes to whichever copy is free, and its answer is
 * matched to it by the copy, so the rewards are those one program would
 * give, whatever order the answers come in. The copies share nothing: a
 * program that keeps state (a cache) has one per copy.
 *
 * The first answer of any copy names the rewards (kept in copy 0, the
 * lead); every copy's later answers must give the same names. Every error
 * of one program is an error here, naming the copy ("copy 3 of 4") when
 * there are several; after one, every copy is stopped and the pool fails
 * until started again.
 */
#ifndef GRPO_REWARDPOOL_H
#define GRPO_REWARDPOOL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "score/rewardcmd.h"

#define REWARDPOOL_MAX 256

struct rewardpool {
	const char *cmd;           /* not owned */
	uint32_t jobs;             /* copies */
	struct rewardcmd *c;       /* (jobs); c[0] keeps the names */
	uint32_t *busy;            /* (jobs) the request each copy works on + 1, 0: free */
	uint32_t *last;            /* (jobs) the last request of this run each was sent + 1 */
	struct pollfd *pfd;        /* (jobs) */
};

/* Start jobs (1..REWARDPOOL_MAX) copies of cmd. On error none runs. */
int rewardpool_start(struct rewardpool *p, const char *cmd, uint32_t jobs, double timeout, struct err *e);

/* The names of the rewards, once a first answer has come (n 0 before). */
static inline uint32_t rewardpool_n_names(const struct rewardpool *p) { return p->c[0].n_names; }
static inline const char *rewardpool_name(const struct rewardpool *p, uint32_t k) { return p->c[0].names[k]; }

/*
 * Ask q[0..n), spread over the copies: q[i]'s rewards into
 * out + i * stride, in the order of the names (a request of the group
 * form: into out + q[i].row * stride, and its members' rows after, by
 * q[i].stride). done(ctx, i), when not
 * NULL, is called as each answer is in (in the order they come); when it
 * fails, no further request is sent, those sent are waited for, and the
 * run fails with its error (the copies still running). After the last
 * answer, no copy may have written more (a second line to its last
 * request). On a program's error every copy is stopped.
 */
int rewardpool_run(struct rewardpool *p, const struct rewardcmd_req *q, uint32_t n, double *out, size_t stride,
		   int (*done)(void *ctx, uint32_t i, struct err *e), void *ctx, struct err *e);

/* Close every copy's input and wait for each (rewardcmd_stop): 0 when all
 * exited with status 0, else -1 naming the first that did not. Frees all. */
int rewardpool_stop(struct rewardpool *p, struct err *e);

#endif
