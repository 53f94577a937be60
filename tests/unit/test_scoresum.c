/*
 * test_scoresum: pass@k against the binomial ratio counted exactly, and the
 * summary of scored groups (means, solve rates, pass@k over groups of
 * several sizes, groups of one reward, finish reasons) on hand-worked
 * groups.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "data/scoresum.h"

/* C(n, k) exactly, n <= 60 */
static double binom(unsigned n, unsigned k)
{
	unsigned long long r = 1;
	if (k > n)
		return 0;
	for (unsigned i = 1; i <= k; i++)
		r = r * (n - k + i) / i;
	return (double)r;
}

/* A trajectory scored by gsm8k (reward r, solved when r is 1) and, when
 * fmt >= 0, by format too (reward fmt, no success flag). */
static void scored(struct traj *t, float r, float fmt, const char *finish, uint32_t len)
{
	static char *names[] = { "gsm8k", "format" };
	traj_init(t);
	t->n_response = len;
	t->scored = 1;
	t->n_rewards = fmt >= 0 ? 2 : 1;
	t->rewards = calloc(2, sizeof *t->rewards);
	t->successes = calloc(2, sizeof *t->successes);
	t->rewards[0] = r, t->successes[0] = r == 1;
	t->rewards[1] = fmt;
	t->reward_names = names;
	if (finish)
		traj_set_finish(t, finish);
}

static void release(struct group *g)
{
	for (uint32_t i = 0; i < g->n; i++) {
		free(g->trajs[i].rewards);
		free(g->trajs[i].successes);
		free(g->trajs[i].finish_reason);
	}
	free(g->trajs);
}

int main(void)
{
	/* pass@k = 1 - C(n-c, k) / C(n, k), for every n <= 24 */
	double worst = 0;
	for (unsigned n = 1; n <= 24; n++)
		for (unsigned c = 0; c <= n; c++)
			for (unsigned k = 1; k <= n; k++) {
				double want = 1 - binom(n - c, k) / binom(n, k), d = fabs(pass_at_k(n, c, k) - want);
				worst = d > worst ? d : worst;
			}
	ok(worst < 1e-12, "pass@k is 1 - C(n-c,k)/C(n,k) for every c <= n <= 24 and k <= n (worst %.2g)", worst);
	is_float(pass_at_k(4, 1, 2), 0.5, 1e-15, "one of 4 solved, 2 drawn: half the draws hold it");
	is_float(pass_at_k(1000, 1, 250), 0.25, 1e-12, "one of 1000 solved, 250 drawn: a quarter (no overflow at n 1000)");
	is_float(pass_at_k(8, 0, 8), 0, 0, "none solved: 0");
	/* larger groups, against 1 - C(n-c,k)/C(n,k) in exact fractions (Python's
	 * fractions and math.comb) */
	static const struct { unsigned n, c, k; double want; } big[] = {
		{ 64, 3, 16, 0.5848694316436251 },     { 200, 7, 50, 0.8712245647066278 },
		{ 1000, 10, 100, 0.653072285207994 }, { 5000, 2, 2500, 0.7500500100020004 },
		{ 4096, 1, 4096, 1.0 },
	};
	for (size_t i = 0; i < sizeof big / sizeof *big; i++)
		is_float(pass_at_k(big[i].n, big[i].c, big[i].k), big[i].want, 1e-12, "pass@%u with %u of %u solved",
			 big[i].k, big[i].c, big[i].n);
	is_float(pass_at_k(8, 5, 4), 1, 0, "5 of 8 solved: any 4 drawn hold one");

	/* group A: 4 members, 1 solved; group B: 2 members, both solved; group
	 * C: 3 members, none solved, one not scored; group D: one member */
	struct scoresum s = { 0 };
	struct err e;
	struct group a = { .n = 4, .trajs = calloc(4, sizeof(struct traj)) };
	scored(&a.trajs[0], 1, 0.5f, "stop", 10);
	scored(&a.trajs[1], 0, 0.5f, "length", 30);
	scored(&a.trajs[2], 0, 0, "stop", 5);
	scored(&a.trajs[3], 0, 0.5f, "tool_calls", 7);
	struct group b = { .n = 2, .trajs = calloc(2, sizeof(struct traj)) };
	scored(&b.trajs[0], 1, -1, "stop", 3);
	scored(&b.trajs[1], 1, -1, NULL, 4);
	struct group c = { .n = 3, .trajs = calloc(3, sizeof(struct traj)) };
	scored(&c.trajs[0], 0, -1, "stop", 1);
	scored(&c.trajs[1], 0, -1, "stop", 2);
	traj_init(&c.trajs[2]);
	c.trajs[2].n_response = 40;
	struct group d = { .n = 1, .trajs = calloc(1, sizeof(struct traj)) };
	scored(&d.trajs[0], 0, -1, "stop", 6);
	ok(scoresum_add(&s, &a, &e) == 0 && scoresum_add(&s, &b, &e) == 0 && scoresum_add(&s, &c, &e) == 0 &&
	   scoresum_add(&s, &d, &e) == 0, "four groups added");

	is_int(s.seqs, 10, "10 sequences");
	is_int(s.scored, 9, "9 of them scored");
	is_int(s.resp_tokens, 108, "108 response tokens");
	is_int(s.resp_max, 40, "the longest response, unscored, 40");
	ok(s.stop == 6 && s.length == 1 && s.other_finish == 1 && s.no_finish == 2,
	   "finish reasons: stop 6, length 1, other 1 (tool_calls), none 2 (%llu %llu %llu %llu)",
	   (unsigned long long)s.stop, (unsigned long long)s.length, (unsigned long long)s.other_finish,
	   (unsigned long long)s.no_finish);
	is_float(s.reward_sum, 4.5, 1e-6, "combined rewards sum to 4.5 (1.5 + 0.5 + 0 + 0.5, 1 + 1)");
	ok(s.scored_groups == 2 && s.equal_groups == 1,
	   "groups of 2 or more all scored: A and B; B alone is all of one reward (%llu, %llu)",
	   (unsigned long long)s.scored_groups, (unsigned long long)s.equal_groups);

	ok(s.nfn == 2 && strcmp(s.fn[0].name, "gsm8k") == 0 && strcmp(s.fn[1].name, "format") == 0,
	   "two reward functions, in the order met");
	const struct scoresum_fn *g = &s.fn[0], *f = &s.fn[1];
	ok(g->seqs == 9 && g->flagged == 9 && g->solved == 3, "gsm8k: 9 scored, 9 flagged, 3 solved");
	is_float(g->sum, 3, 0, "gsm8k's rewards sum to 3");
	ok(f->seqs == 4 && f->flagged == 4 && f->solved == 0 && fabs(f->sum - 1.5) < 1e-6,
	   "format: only group A's 4, none solved, sum 1.5");
	uint32_t ks[34];
	int nk = scoresum_ks(&s, ks);
	ok(nk == 3 && ks[0] == 1 && ks[1] == 2 && ks[2] == 4, "largest group 4: pass@1, @2, @4");
	size_t groups;
	/* pass@1 by group: A 1/4, B 1, C 0 (2 flagged), D 0 */
	is_float(scoresum_pass_at(g, 1, &groups), (0.25 + 1 + 0 + 0) / 4, 1e-12, "gsm8k pass@1: the groups' solve rates averaged");
	is_int(groups, 4, "over all 4 groups");
	/* pass@2: A 1 - C(3,2)/C(4,2) = 0.5, B 1, C 0 */
	is_float(scoresum_pass_at(g, 2, &groups), (0.5 + 1 + 0) / 3, 1e-12, "gsm8k pass@2 over A, B and C");
	is_int(groups, 3, "D, of one member, sits it out");
	is_float(scoresum_pass_at(g, 4, &groups), 1, 1e-12, "gsm8k pass@4: A alone, solved");
	is_int(groups, 1, "one group of 4");
	ok(isnan(scoresum_pass_at(g, 8, &groups)) && groups == 0, "pass@8: no group that large");
	/* the second reward function's groups too: format flags A's 4, none solved */
	is_float(scoresum_pass_at(f, 1, &groups), 0, 0, "format pass@1: 0");
	is_int(groups, 1, "format's one group, A, counted after gsm8k's");
	/* sums of squares, for the std: gsm8k 3 ones, format 3 halves */
	is_float(g->sumsq, 3, 0, "gsm8k's squared rewards sum to 3");
	is_float(f->sumsq, 0.75, 0, "format's squared rewards sum to 0.75");

	/* groups of 6 and of 1: ks 1, 2, 4, 6 */
	struct scoresum t = { 0 };
	struct group six = { .n = 6, .trajs = calloc(6, sizeof(struct traj)) };
	for (int i = 0; i < 6; i++)
		scored(&six.trajs[i], i < 2, -1, "stop", 1);
	scoresum_add(&t, &six, &e);
	nk = scoresum_ks(&t, ks);
	ok(nk == 4 && ks[2] == 4 && ks[3] == 6, "largest group 6: pass@1, @2, @4 and @6");
	is_float(scoresum_pass_at(&t.fn[0], 4, &groups), 1 - binom(4, 4) / binom(6, 4), 1e-12,
		 "2 of 6 solved, pass@4 = 1 - 1/15");

	/* unscored groups: finish reasons and lengths, no rewards */
	struct scoresum u = { 0 };
	scoresum_add(&u, &c, &e);
	ok(u.seqs == 3 && u.scored == 2 && u.scored_groups == 0, "a group with an unscored member is no scored group");

	/* rewards without names or success flags: reward_0, reward_1, and no pass@k */
	struct scoresum w = { 0 };
	struct group nameless = { .n = 2, .trajs = calloc(2, sizeof(struct traj)) };
	for (int i = 0; i < 2; i++) {
		scored(&nameless.trajs[i], (float)i, 0.25f, "stop", 1);
		nameless.trajs[i].reward_names = NULL;
		free(nameless.trajs[i].successes);
		nameless.trajs[i].successes = NULL;
	}
	scoresum_add(&w, &nameless, &e);
	ok(w.nfn == 2 && strcmp(w.fn[0].name, "reward_0") == 0 && strcmp(w.fn[1].name, "reward_1") == 0,
	   "unnamed reward functions: reward_0 and reward_1, by place");
	ok(w.fn[0].seqs == 2 && w.fn[0].flagged == 0 && w.fn[0].groups == 0, "no flags: counted in the mean only");
	ks[0] = 7;
	is_int(scoresum_ks(&w, ks), 0, "no flagged member anywhere: no pass@k to report");
	release(&nameless);
	scoresum_free(&w);

	/* groups of one member only: pass@1 alone */
	struct scoresum one = { 0 };
	scoresum_add(&one, &d, &e);
	nk = scoresum_ks(&one, ks);
	ok(nk == 1 && ks[0] == 1, "the largest group of one member: pass@1 alone (%d ks)", nk);
	scoresum_free(&one);

	/* a reward function only the first member of a group was scored by */
	struct scoresum x = { 0 };
	struct group mixed = { .n = 3, .trajs = calloc(3, sizeof(struct traj)) };
	scored(&mixed.trajs[0], 1, 1, "stop", 1);
	mixed.trajs[0].successes[1] = 1;
	scored(&mixed.trajs[1], 0, -1, "stop", 1);
	scored(&mixed.trajs[2], 1, -1, "stop", 1);
	scoresum_add(&x, &mixed, &e);
	ok(x.nfn == 2 && x.fn[1].seqs == 1 && x.fn[1].groups == 1 && x.fn[1].group_n[0] == 1 &&
	   x.fn[1].group_c[0] == 1 && x.fn[0].groups == 1 && x.fn[0].group_n[0] == 3 && x.fn[0].group_c[0] == 2,
	   "format, met in the first member alone: its group of 1 solved; gsm8k's 2 of 3");
	release(&mixed);
	scoresum_free(&x);

	release(&a), release(&b), release(&c), release(&d), release(&six);
	scoresum_free(&s);
	scoresum_free(&t);
	scoresum_free(&u);
	ok(s.nfn == 0 && s.fn == NULL, "scoresum_free leaves an empty summary");
	return tap_done();
}
