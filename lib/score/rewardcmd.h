/*
 * rewardcmd.h: an external reward program, started once, spoken to in
 * JSON lines, so a reward can be written in any language.
 *
 * The program (run as `sh -c CMD` in its own process group, standard error
 * shared with ours) reads one request per line on standard input and
 * writes one reply per line on standard output, in order:
 *
 *   request  {"sequence_id": 3, "group_id": 1, "prompt": "...",
 *             "response": "...", "answer": "..." or null,
 *             "finish_reason": "stop" | "length" | null}
 *   reply    {"rewards": {"correct": 1.0, "style": 0.25}}
 *
 * The first reply names the program's rewards, in the order they are
 * stored; every later reply must give the same names (in any order), each
 * a JSON number.
 *
 * In the group form (grpo-score --reward-groups) a request is a whole
 * group, and each reward an array of one number per response, in the
 * request's order:
 *
 *   request  {"group_id": 1, "responses": [{"sequence_id": 3, "prompt": ...,
 *             "response": ..., "answer": ..., "finish_reason": ...}, ...]}
 *   reply    {"rewards": {"judge": [1.0, 0.5, 0.0], "style": [...]}}
 *
 * Each request must be answered within `timeout` seconds. A program that
 * exits (or closes its output) before answering, one that does not answer
 * in time (it is then killed, with its process group), and an answer that
 * is not such an object are errors naming the program and the sequence
 * (the group, in the group form); after an error the program is stopped,
 * and rewardcmd_ask fails until rewardcmd_start is called again. A program
 * that exits with status 75 (REWARDCMD_LATER, sysexits.h's EX_TEMPFAIL)
 * rather than answer says the failure is temporary (a judge's service is
 * down): the error's errnum is then EAGAIN.
 *
 * rewardcmd_ask is rewardcmd_send then rewardcmd_recv until the answer is
 * in; a pool of copies (rewardpool.h) calls those two itself, so that it
 * can wait for several copies at once.
 */
#ifndef GRPO_REWARDCMD_H
#define GRPO_REWARDCMD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"
#include "score/reward.h"

#define REWARDCMD_LATER 75   /* a program's exit status for "ask again later" */

struct rewardcmd {
	const char *cmd;          /* not owned */
	double timeout;           /* seconds per answer */
	pid_t pid;                /* 0: not running */
	int to_fd, from_fd;
	struct buf in;            /* bytes read, not yet a whole line */
	struct buf req;           /* the request being sent */
	char **names;             /* (n_names) set by the first reply */
	uint32_t n_names;
	/* one copy of several (rewardpool.h): the names are the lead's, the
	 * copy's own stay unset; and messages name the copy */
	struct rewardcmd *lead;   /* NULL: this one keeps the names */
	char copy[40];            /* " (copy 3 of 4)", or "" */
	double deadline;          /* of the request sent last (CLOCK_MONOTONIC seconds) */
};

struct rewardcmd_req {
	const char *seq_id, *group_id;   /* as JSON (a number or a quoted string) */
	const char *prompt, *response;
	size_t prompt_n, response_n;
	const char *answer;              /* NULL: null */
	const char *finish_reason;       /* NULL: null */
	/* the group form: the group's responses (their group_id unused; this
	 * one's is the group's, the other fields above unused), whose rewards
	 * go to out + m * stride for member m; n_members 0: one response */
	const struct rewardcmd_req *members;
	uint32_t n_members;
	size_t stride;
	size_t row;                      /* rewardpool_run: where in its out, in strides */
};

int rewardcmd_start(struct rewardcmd *c, const char *cmd, double timeout, struct err *e);
/* One sequence's rewards into out (n_names values; on the first call the
 * names are learnt, so size out after a first call, or give REWARDCMD_MAX values);
 * in the group form, each member's at out + m * q->stride. */
#define REWARDCMD_MAX 64
int rewardcmd_ask(struct rewardcmd *c, const struct rewardcmd_req *q, double *out, struct err *e);
/* Write request q (checking first that nothing unasked is waiting) and
 * set its deadline, --reward-timeout from now. */
int rewardcmd_send(struct rewardcmd *c, const struct rewardcmd_req *q, struct err *e);
/* Read what the program has written, without waiting: 1 with q's
 * rewards in out once its line is complete, 0 when it is not yet and the
 * deadline has not passed, -1 on error (the deadline passed, it ended,
 * a bad line; the program is then stopped). */
int rewardcmd_recv(struct rewardcmd *c, const struct rewardcmd_req *q, double *out, struct err *e);
/* Stop it at once (SIGKILL to its group) and reap it; no message: after
 * another copy's error. Frees nothing. */
void rewardcmd_kill(struct rewardcmd *c);
/* Seconds of CLOCK_MONOTONIC, as deadline counts them. */
double rewardcmd_now(void);
/* No output waiting that no request asked for: after the last answer of
 * an input, so that a second line to it fails that input (q: the last
 * request, for the message) rather than the next one, or none. */
int rewardcmd_check(struct rewardcmd *c, const struct rewardcmd_req *q, struct err *e);
/* Close its input and wait for it (killed after the timeout): 0 when it
 * exited with status 0, else -1 with e saying how it ended. Frees all. */
int rewardcmd_stop(struct rewardcmd *c, struct err *e);

#endif
