/* A pool of reward program copies (rewardpool.h): answers land on their
 * own requests whatever order the copies give them in; when the caller's
 * done callback fails mid-run (grpo-score's lease renewal), the answers
 * already asked for are still read, so that none is taken as an answer of
 * the next run; names are the first answer's, from any copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/rewardpool.h"
#include "tap.h"

/* Answers {"id": SEQUENCE_ID}; sequence 0 after 1 s, so later ones
 * overtake it. */
static const char *prog = "while IFS= read -r l; do id=${l#*'\"sequence_id\": '}; id=${id%%,*}; "
			  "[ \"$id\" = 0 ] && sleep 1; echo \"{\\\"rewards\\\": {\\\"id\\\": $id}}\"; done";

struct calls {
	uint32_t n, fail_at;   /* fail_at: the call that fails (1-based), 0 none */
	uint32_t order[16];
};

static int done(void *ctx, uint32_t i, struct err *e)
{
	struct calls *c = ctx;
	if (c->n < 16)
		c->order[c->n] = i;
	if (++c->n == c->fail_at)
		return err_set(e, "lease lost");
	return 0;
}

static void reqs(struct rewardcmd_req *q, char ids[][8], uint32_t n, uint32_t first)
{
	for (uint32_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "%u", first + i);
		q[i] = (struct rewardcmd_req){ .seq_id = ids[i], .group_id = "1", .prompt = "", .response = "x",
					       .response_n = 1 };
	}
}

int main(void)
{
	struct rewardpool p;
	struct err e;
	struct rewardcmd_req q[6];
	char ids[6][8];
	double out[6];
	if (rewardpool_start(&p, prog, 3, 10, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return tap_done();
	}
	ok(1, "three copies started");

	struct calls c = { 0, 0, { 0 } };
	reqs(q, ids, 6, 0);
	int r = rewardpool_run(&p, q, 6, out, 1, done, &c, &e);
	int right = r == 0;
	for (uint32_t i = 0; i < 6; i++)
		right = right && out[i] == i;
	ok(right, "each answer on its own request: %g %g %g %g %g %g", out[0], out[1], out[2], out[3], out[4], out[5]);
	is_int(c.n, 6, "done called for each");
	ok(c.order[0] != 0, "the slow first request answered after a later one (first done: %u)", c.order[0]);
	is_int(rewardpool_n_names(&p), 1, "one name");
	ok(!strcmp(rewardpool_name(&p, 0), "id"), "the first answer's");

	/* done fails at the first answer: the slow sequence 0 is still out */
	c = (struct calls){ 0, 1, { 0 } };
	r = rewardpool_run(&p, q, 6, out, 1, done, &c, &e);
	ok(r < 0 && !strcmp(e.msg, "lease lost"), "a failing done fails the run with its error: %s", e.msg);
	is_int(c.n, 1, "and is not called again");
	reqs(q, ids, 6, 10);
	c = (struct calls){ 0, 0, { 0 } };
	memset(out, 0, sizeof out);
	r = rewardpool_run(&p, q, 6, out, 1, done, &c, &e);
	right = r == 0;
	for (uint32_t i = 0; i < 6; i++)
		right = right && out[i] == 10 + i;
	ok(right, "the next run gets its own answers, none left from the failed one: %d, %g %g %g %g %g %g%s%s", r,
	   out[0], out[1], out[2], out[3], out[4], out[5], r < 0 ? ": " : "", r < 0 ? e.msg : "");
	is_int(rewardpool_stop(&p, &e), 0, "every copy exits with status 0");

	/* one copy: no copy named in its messages */
	if (rewardpool_start(&p, "read l; exit 3", 1, 10, &e) == 0) {
		reqs(q, ids, 1, 7);
		r = rewardpool_run(&p, q, 1, out, 1, NULL, NULL, &e);
		ok(r < 0 && strstr(e.msg, "reward program 'read l; exit 3' ended without answering for sequence 7 of group 1"),
		   "one program's message, without a copy: %s", e.msg);
		rewardpool_stop(&p, &e);
	} else {
		ok(0, "started: %s", e.msg);
	}

	/* the group form: each group's values on its members' rows (row, stride),
	 * whichever copy answers first; an empty group (which the scorer does not
	 * ask) answers arrays of none and fills nothing */
	if (system("command -v jq > /dev/null 2>&1") != 0) {
		skip("no jq");
		skip("no jq");
		return tap_done();
	}
	if (rewardpool_start(&p, "jq -c --unbuffered '{rewards: {id: [.responses[].sequence_id]}}'", 2, 10, &e) < 0) {
		ok(0, "started: %s", e.msg);
		return tap_done();
	}
	reqs(q, ids, 4, 20);
	double gout[8];
	for (uint32_t i = 0; i < 8; i++)
		gout[i] = -1;
	struct rewardcmd_req g[3] = {
		{ .group_id = "5", .members = q, .n_members = 3, .stride = 2, .row = 0 },
		{ .group_id = "6", .members = q + 3, .n_members = 0, .stride = 2, .row = 3 },
		{ .group_id = "7", .members = q + 3, .n_members = 1, .stride = 2, .row = 3 },
	};
	c = (struct calls){ 0, 0, { 0 } };
	r = rewardpool_run(&p, g, 3, gout, 2, done, &c, &e);
	ok(r == 0 && gout[0] == 20 && gout[2] == 21 && gout[4] == 22 && gout[6] == 23 && gout[1] == -1 &&
		   gout[7] == -1 && c.n == 3,
	   "three group requests, one empty: %d, %g %g %g %g, between them %g, after %g, %u answers%s%s", r, gout[0],
	   gout[2], gout[4], gout[6], gout[1], gout[7], c.n, r < 0 ? ": " : "", r < 0 ? e.msg : "");
	is_int(rewardpool_stop(&p, &e), 0, "both copies exit with status 0");
	return tap_done();
}
