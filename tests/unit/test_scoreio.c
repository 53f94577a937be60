/*
 * test_scoreio: where an input's output goes (scoreio_place), the run's
 * set of group ids over a thousand groups, and records of one group merged
 * (scorer_merge) in order.
 */
#include <stdlib.h>
#include <string.h>

#include "score/scoreio.h"
#include "score/scorer.h"
#include "tap.h"

static void one_group(struct group *g, int64_t id, uint32_t n, int64_t seq0)
{
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_num(id);
	g->n = n;
	g->trajs = calloc(n, sizeof *g->trajs);
	for (uint32_t i = 0; i < n; i++) {
		traj_init(&g->trajs[i]);
		g->trajs[i].group_id = traj_id_num(id);
		g->trajs[i].sequence_id = traj_id_num(seq0 + i);
		g->trajs[i].policy_version = 7;
	}
}

int main(void)
{
	struct group gs[4];
	one_group(&gs[0], 1, 2, 10);
	one_group(&gs[1], 2, 1, 20);
	int64_t step;
	int rank;
	char name[256], name2[256];
	scoreio_place("sp/rollouts/step_3/rank_1/x.zst", gs, 2, &step, &rank, name, sizeof name);
	ok(step == 3 && rank == 1 && strcmp(name, "x.zst") == 0, "a spool path keeps its step, rank and name");
	scoreio_place("dir/x.zst", gs, 2, &step, &rank, name, sizeof name);
	ok(step == 7 && rank == 0 && strcmp(name, "x.zst") == 0, "another path: policy_version, rank 0, base name");
	scoreio_place("step_4/rank_2/y.zst", gs, 2, &step, &rank, name, sizeof name);
	ok(step == 4 && rank == 2 && strcmp(name, "y.zst") == 0, "a relative step_N/rank_X path");
	scoreio_place(NULL, gs, 2, &step, &rank, name, sizeof name);
	scoreio_place(NULL, gs, 2, &step, &rank, name2, sizeof name2);
	ok(strncmp(name, "stdin-", 6) == 0 && strcmp(name, name2) == 0, "standard input: a stable name (%s)", name);
	gs[1].trajs[0].sequence_id = traj_id_num(21);
	scoreio_place(NULL, gs, 2, &step, &rank, name2, sizeof name2);
	ok(strcmp(name, name2) != 0, "other ids, another name");

	struct scoreio_seen seen = { 0 };
	int fresh = 0, again = 0;
	struct group g = { 0 };
	for (int k = 0; k < 2; k++)
		for (int64_t id = 0; id < 1000; id++) {
			g.group_id = traj_id_num(id * 7919);
			int r = scoreio_seen_add(&seen, &g);
			fresh += r == 0;
			again += r == 1;
		}
	ok(fresh == 1000 && again == 1000, "1000 group ids: each new once, then seen (%d, %d)", fresh, again);
	scoreio_seen_free(&seen);

	one_group(&gs[2], 1, 3, 30);
	one_group(&gs[3], 3, 1, 40);
	uint32_t n = 4;
	struct err e;
	ok(scorer_merge(gs, &n, &e) == 0 && n == 3, "merge: 4 records, 3 groups");
	ok(gs[0].group_id.num == 1 && gs[0].n == 5 && gs[0].trajs[2].sequence_id.num == 30 && gs[0].trajs[4].sequence_id.num == 32,
	   "the later record's members follow the first's");
	ok(gs[1].group_id.num == 2 && gs[2].group_id.num == 3, "the order of first appearance");
	for (uint32_t i = 0; i < n; i++)
		group_free(&gs[i]);
	return tap_done();
}
