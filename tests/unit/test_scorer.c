/*
 * test_scorer: scorer_run over small inputs whose rewards need no
 * tokenizer (length, and exact against an empty response), checked
 * against values worked by hand: each trajectory's rewards, names,
 * successes and advantage, the groups dropped for zero std, and the
 * stats grpo-score prints (scorer_metrics). Then scorer_run_each, whose
 * per-group stats sum to scorer_run's; a failure between groups, after
 * which no trajectory is marked scored; a reward program (one copy, and
 * two) with weights by name and a NaN, and asked a group at a time;
 * kimi-length and cosine from another reward's verdict; texts through
 * Qwen3's tokenizer: the responses and prompts decoded for the built-ins
 * and the program, a think block the prompt opened; scorer_metrics_has;
 * scorer_stats_add; the metrics line of no sequences, and of groups of 2;
 * --ref (tests/data/hf/qwen2): reference logprobs for the groups kept only,
 * as reflp gives each alone, their tokens and time in the stats, and a
 * reference failure that leaves nothing scored.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "score/scorer.h"
#include "tap.h"

/* Group id with n members: sequence ids id*10 + j, response lengths
 * len[j], answers ans[j] (NULL: none); a response of 12 tokens or more
 * was cut at the length limit. */
static void make_group(struct group *g, int64_t id, uint32_t n, const uint32_t *len, const char *const *ans)
{
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_num(id);
	g->n = n;
	g->trajs = calloc(n, sizeof *g->trajs);
	for (uint32_t j = 0; j < n; j++) {
		struct traj *t = &g->trajs[j];
		traj_init(t);
		t->group_id = traj_id_num(id);
		t->sequence_id = traj_id_num(id * 10 + j);
		t->policy_version = 0;
		t->n_prompt = 1;
		t->prompt_tokens = calloc(1, sizeof(int32_t));
		t->n_response = len[j];
		t->response_tokens = calloc(len[j] ? len[j] : 1, sizeof(int32_t));
		t->answer = ans && ans[j] ? strdup(ans[j]) : NULL;
		traj_set_finish(t, len[j] >= 12 ? "length" : "stop");
	}
}

static void free_groups(struct group *gs, uint32_t n)
{
	for (uint32_t g = 0; g < n; g++)
		group_free(&gs[g]);
}

/*
 * The three groups of most cases, scored with length (Lmax 10, buffer 4:
 * 0 up to 6 tokens, -0.5 at 8, -1 past 10) and exact (1 for an empty
 * answer, the response's text being empty without a tokenizer) weighing 2:
 *   group 1: 4, 8, 12 tokens, answers "", "x", "": x = 2, -0.5, 1
 *   group 2: one member of 5 tokens, answer "": a singleton
 *   group 3: two of 6 tokens, answers "y": both 0, zero std
 */
static void three_groups(struct group *gs)
{
	static const uint32_t l1[] = { 4, 8, 12 }, l2[] = { 5 }, l3[] = { 6, 6 };
	static const char *const a1[] = { "", "x", "" }, *const a2[] = { "" }, *const a3[] = { "y", "y" };
	make_group(&gs[0], 1, 3, l1, a1);
	make_group(&gs[1], 2, 1, l2, a2);
	make_group(&gs[2], 3, 2, l3, a3);
}

static struct reward_spec rewards[2] = {
	{ REWARD_LENGTH, "length", 1 },
	{ REWARD_EXACT, "exact", 2 },
};

static struct scorer_opt base_opt(void)
{
	struct scorer_opt o = { 0 };
	o.rewards = rewards;
	o.n_rewards = 2;
	o.ropt.max_len = 10;
	o.ropt.overlong_buffer = 4;
	o.adv = (struct adv_opt)ADV_OPT_INIT;
	o.adv.kind = ADV_DR_GRPO;   /* x - mean: exact by hand */
	o.success_threshold = 1;
	return o;
}

/* The metrics line of st without its times, which vary. */
static void metrics_of(const struct scorer_stats *st, char *out, size_t size)
{
	struct scorer_stats s = *st;
	s.t_decode = s.t_reward = s.t_ref = 0;
	struct buf b = { 0 };
	scorer_metrics(&b, "in", &s);
	snprintf(out, size, "%.*s", b.data ? (int)b.len : 0, b.data ? (char *)b.data : "");
	buf_free(&b);
}

static int traj_is(const struct traj *t, float len_r, float exact_r, float succ_exact, float adv)
{
	return t->scored && t->n_rewards == 2 && t->rewards[0] == len_r && t->rewards[1] == exact_r &&
	       strcmp(t->reward_names[0], "length") == 0 && strcmp(t->reward_names[1], "exact") == 0 &&
	       t->successes[0] == 0 && t->successes[1] == succ_exact && fabsf(t->advantage - adv) < 1e-6f;
}

static void built_ins(void)
{
	struct group gs[3];
	three_groups(gs);
	struct scorer_opt o = base_opt();
	o.drop_zero_std = 1;
	uint8_t keep[3] = { 9, 9, 9 };
	struct scorer_stats st;
	struct err e = { 0 };
	int r = scorer_run(&o, gs, 3, keep, &st, &e);
	ok(r == 0, "three groups scored (%s)", e.msg);
	double mean = 2.5 / 3;
	ok(traj_is(&gs[0].trajs[0], 0, 1, 1, (float)(2 - mean)) &&
	   traj_is(&gs[0].trajs[1], -0.5f, 0, 0, (float)(-0.5 - mean)) &&
	   traj_is(&gs[0].trajs[2], -1, 1, 1, (float)(1 - mean)),
	   "group 1: rewards unweighted and named, exact's successes, advantages x - mean of the weighted sums");
	ok(traj_is(&gs[1].trajs[0], 0, 1, 1, 0), "the singleton: its rewards, advantage 0");
	ok(traj_is(&gs[2].trajs[0], 0, 0, 0, 0) && traj_is(&gs[2].trajs[1], 0, 0, 0, 0), "the flat group: advantage 0");
	ok(keep[0] == 1 && keep[1] == 0 && keep[2] == 0,
	   "--drop-zero-std: the singleton and the flat group dropped (%d %d %d)", keep[0], keep[1], keep[2]);
	ok(st.groups == 3 && st.seqs == 6 && st.zero_std == 2 && st.dropped == 2 && st.singletons == 1 &&
	   st.min_size == 1 && st.max_size == 3 && st.K == 2 && st.nonfinite == 0,
	   "counts: groups, sequences, zero std, dropped, singletons, sizes");
	ok(st.resp_len_sum == 41 && st.resp_len_max == 12 && st.truncated == 1, "response lengths and the truncated one");
	char line[2048];
	metrics_of(&st, line, sizeof line);
	const char *want =
		"{\"input\":\"in\",\"groups\":3,\"sequences\":6,\"dropped_groups\":2,\"zero_std_groups\":2,"
		"\"singleton_groups\":1,\"nonfinite_rewards\":0,\"zero_std_fraction\":0.6666667,\"rewards\":{"
		"\"length\":{\"mean\":-0.25,\"std\":0.3818813,\"success_rate\":0,"
		"\"pass_at\":{\"1\":0,\"2\":0,\"3\":0}},"
		"\"exact\":{\"mean\":0.5,\"std\":0.5,\"success_rate\":0.5,"
		"\"pass_at\":{\"1\":0.5555556,\"2\":0.5,\"3\":1}}},"
		"\"response_len_mean\":6.8333335,\"response_len_max\":12,\"truncated_fraction\":0.16666667,"
		"\"decode_s\":0,\"reward_s\":0,\"ref_s\":0,\"ref_tokens\":0,\"ref_tokens_per_s\":0}\n";
	ok(strcmp(line, want) == 0, "the metrics line");
	if (strcmp(line, want) != 0)
		diag("got  %s# want %s", line, want);
	free_groups(gs, 3);

	/* without --drop-zero-std every group is kept; a threshold of 0 makes
	 * length's 0 a success */
	three_groups(gs);
	o.drop_zero_std = 0;
	o.success_threshold = 0;
	r = scorer_run(&o, gs, 3, keep, &st, &e);
	ok(r == 0 && keep[0] && keep[1] && keep[2] && st.dropped == 0 && st.zero_std == 2,
	   "without --drop-zero-std all kept, zero std still counted");
	ok(gs[0].trajs[0].successes[0] == 1 && gs[0].trajs[1].successes[0] == 0 && gs[0].trajs[1].successes[1] == 1 &&
	   st.succ[0] == 4 && st.succ[1] == 6, "--success-threshold 0: a reward of 0 succeeds, -0.5 not");
	/* length solved by 1 of 3, 1 of 1, 2 of 2 */
	ok(fabs(st.pass_sum[0][0] - (1.0 / 3 + 2)) < 1e-12 && fabs(st.pass_sum[0][1] - (2.0 / 3 + 1)) < 1e-12 &&
	   st.pass_groups[0] == 3 && st.pass_groups[1] == 2 && st.pass_groups[2] == 0 && st.pass_top == 3 &&
	   st.pass_top_groups == 1 && st.pass_top_sum[0] == 1,
	   "pass@1, pass@2 and pass@3 of the first reward summed over the groups large enough");
	free_groups(gs, 3);
}

/* scorer_run_each counts each group as if scored alone: summed, the
 * stats are scorer_run's; the advantages are the same. */
static void each(void)
{
	struct group a[3], b[3];
	three_groups(a);
	three_groups(b);
	struct scorer_opt o = base_opt();
	o.drop_zero_std = 1;
	uint8_t ka[3], kb[3];
	struct scorer_stats whole, parts[3], sum = { 0 };
	struct err e = { 0 };
	int r = scorer_run(&o, a, 3, ka, &whole, &e);
	r |= scorer_run_each(&o, b, 3, kb, parts, &e);
	for (int g = 0; g < 3; g++)
		scorer_stats_add(&sum, &parts[g]);
	char lw[2048], ls[2048];
	metrics_of(&whole, lw, sizeof lw);
	metrics_of(&sum, ls, sizeof ls);
	ok(r == 0 && strcmp(lw, ls) == 0, "scorer_run_each: the sum of its stats is scorer_run's");
	ok(parts[0].groups == 1 && parts[1].groups == 1 && parts[1].min_size == 1 && parts[1].max_size == 1 &&
	   parts[2].min_size == 2 && parts[2].zero_std == 1 && parts[0].seqs == 3 && parts[0].pass_top == 3,
	   "each group's own stats");
	int same = 1;
	for (int g = 0; g < 3; g++)
		for (uint32_t j = 0; j < a[g].n; j++)
			same &= a[g].trajs[j].advantage == b[g].trajs[j].advantage;
	ok(same, "the same advantages");
	free_groups(a, 3);
	free_groups(b, 3);
}

static int calls;
static int fail_second(void *ctx, struct err *e)
{
	(void)ctx;
	return ++calls == 2 ? err_set(e, "lease lost") : 0;
}

/* A failure between groups fails the run, and no trajectory is scored. */
static void between_fails(void)
{
	struct group gs[3];
	three_groups(gs);
	struct scorer_opt o = base_opt();
	o.between = fail_second;
	uint8_t keep[3];
	struct scorer_stats st;
	struct err e = { 0 };
	int r = scorer_run(&o, gs, 3, keep, &st, &e);
	int scored = 0;
	for (int g = 0; g < 3; g++)
		for (uint32_t j = 0; j < gs[g].n; j++)
			scored += gs[g].trajs[j].scored;
	ok(r < 0 && strstr(e.msg, "lease lost") && scored == 0, "between fails: the run fails, nothing scored (%s)", e.msg);
	free_groups(gs, 3);
}

/* A reward program answering p = the sequence id (NaN for sequence 11,
 * and 1e39, past a float's range, for sequence 20) and q = 0.5, after the two built-ins, p weighing 2 by name:
 *   group 1: x = len + 2 exact + 2 p + q = 22.5, (excluded), 25.5
 *   group 3: 60.5, 62.5
 * with one copy (asked as each is decoded) and two (the batch at once). */
#define PROGRAM "sed -u -e 's/^{\"sequence_id\": 11,.*/{\"rewards\": {\"p\": NaN, \"q\": 0.5}}/;t' " \
	"-e 's/^{\"sequence_id\": 20,.*/{\"rewards\": {\"p\": 1e39, \"q\": 0.5}}/;t' " \
	"-e 's/^{\"sequence_id\": \\([0-9]*\\),.*/{\"rewards\": {\"p\": \\1, \"q\": 0.5}}/'"

static void program(uint32_t jobs)
{
	struct rewardpool pool;
	struct err e = { 0 };
	if (rewardpool_start(&pool, PROGRAM, jobs, 30, &e) < 0) {
		ok(0, "copies %u: the program started (%s)", jobs, e.msg);
		return;
	}
	struct group gs[3];
	three_groups(gs);
	struct scorer_opt o = base_opt();
	o.cmd = &pool;
	struct reward_spec w[1] = { { REWARD_EXACT, "p", 2 } };
	o.cmd_weights = w;
	o.n_cmd_weights = 1;
	uint8_t keep[3];
	struct scorer_stats st;
	int r = scorer_run(&o, gs, 3, keep, &st, &e);
	ok(r == 0 && st.K == 4 && strcmp(st.names[2], "p") == 0 && strcmp(st.names[3], "q") == 0,
	   "copies %u: the program's rewards after the built-ins (%s)", jobs, e.msg);
	const struct traj *t0 = &gs[0].trajs[0], *t1 = &gs[0].trajs[1], *t2 = &gs[0].trajs[2];
	ok(r == 0 && t0->n_rewards == 4 && t0->rewards[2] == 10 && t0->rewards[3] == 0.5f && t2->rewards[2] == 12 &&
	   gs[2].trajs[1].rewards[2] == 31 && strcmp(t0->reward_names[3], "q") == 0 && t0->successes[2] == 1 &&
	   t0->successes[3] == 0, "copies %u: each sequence's own answer, stored unweighted", jobs);
	ok(r == 0 && t1->rewards[2] == 0 && t1->successes[2] == 0 && t1->advantage == 0 && st.nonfinite == 2 &&
	   gs[1].trajs[0].rewards[2] == 0 && strcmp(st.first_nonfinite, "group 1, sequence 11, reward p = nan") == 0,
	   "copies %u: the NaN and 1e39 stored as 0, no success, advantage 0, counted, the first described (%s)",
	   jobs, st.first_nonfinite);
	ok(r == 0 && t0->advantage == -1.5f && t2->advantage == 1.5f && gs[1].trajs[0].advantage == 0 &&
	   gs[2].trajs[0].advantage == -1 && gs[2].trajs[1].advantage == 1,
	   "copies %u: advantages of the weighted sums, the NaN's member left out (%g %g, %g %g)", jobs, t0->advantage,
	   t2->advantage, gs[2].trajs[0].advantage, gs[2].trajs[1].advantage);
	free_groups(gs, 3);

	/* a weight for a name the program does not answer */
	three_groups(gs);
	struct reward_spec bad[1] = { { REWARD_EXACT, "zz", 2 } };
	o.cmd_weights = bad;
	r = scorer_run(&o, gs, 3, keep, &st, &e);
	ok(r < 0 && strstr(e.msg, "--reward zz: the reward program") && strstr(e.msg, "(its rewards: p, q)") &&
	   !gs[0].trajs[0].scored && !gs[2].trajs[1].scored,
	   "copies %u: a weight named for no reward of the program fails, nothing scored (%s)", jobs, e.msg);
	free_groups(gs, 3);
	rewardpool_stop(&pool, &e);
}

/* kimi-length and cosine from exact's verdict (--correct-by exact, named
 * after kimi-length and before cosine): in
 * group 1 (4, 8, 12 tokens; right, wrong, right) kimi's lambda is 0.5,
 * 0, -0.5, and a wrong answer's min(0, lambda). */
static void verdicts(void)
{
	struct reward_spec rs[3] = { { REWARD_KIMI_LENGTH, "kimi-length", 1 }, { REWARD_EXACT, "exact", 1 },
				     { REWARD_COSINE, "cosine", 1 } };
	struct scorer_opt o = base_opt();
	o.rewards = rs;
	o.n_rewards = 3;
	o.correct_by = "exact";
	o.ropt.cosine[0] = 1, o.ropt.cosine[1] = 0.5, o.ropt.cosine[2] = -1, o.ropt.cosine[3] = -0.5;
	struct group gs[3];
	three_groups(gs);
	uint8_t keep[3];
	struct scorer_stats st;
	struct err e = { 0 };
	int r = scorer_run(&o, gs, 3, keep, &st, &e);
	const struct traj *t = gs[0].trajs;
	ok(r == 0 && t[0].rewards[0] == 0.5f && t[1].rewards[0] == 0 && t[2].rewards[0] == -0.5f &&
	   gs[1].trajs[0].rewards[0] == 0 && gs[2].trajs[0].rewards[0] == 0 && t[0].rewards[1] == 1,
	   "kimi-length: lambda for the right, min(0, lambda) for the wrong, 0 where all lengths are equal (%s)",
	   e.msg);
	ok(r == 0 && t[0].rewards[2] == (float)reward_cosine(&o.ropt, 1, 4) &&
	   t[1].rewards[2] == (float)reward_cosine(&o.ropt, 0, 8) &&
	   gs[2].trajs[1].rewards[2] == (float)reward_cosine(&o.ropt, 0, 6) && t[0].rewards[2] > 0.8f &&
	   t[1].rewards[2] < 0, "cosine: by the verdict and the length");
	free_groups(gs, 3);

	three_groups(gs);
	o.correct_by = "zz";
	r = scorer_run(&o, gs, 3, keep, &st, &e);
	ok(r < 0 && strstr(e.msg, "--correct-by zz") && !gs[0].trajs[0].scored,
	   "--correct-by naming no reward fails, nothing scored (%s)", e.msg);
	free_groups(gs, 3);
}

/* scorer_metrics_has: an input's line found by its head, not another's */
static void metrics_has(void)
{
	char path[] = "/tmp/test_scorer.XXXXXX";
	int fd = mkstemp(path);
	const char *text = "{\"input\":\"a.zst\",\"groups\":1}\n{\"input\":\"b\",\"groups\":2}\n";
	int wrote = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	struct err e = { 0 };
	ok(wrote && scorer_metrics_has(path, "b", &e) == 1 && scorer_metrics_has(path, "a.zst", &e) == 1 &&
	   scorer_metrics_has(path, "a", &e) == 0 && scorer_metrics_has(path, "c", &e) == 0,
	   "a metrics file: the lines of b and a.zst found, none of a or c");
	unlink(path);
	ok(scorer_metrics_has(path, "b", &e) == 0, "no metrics file: none");
	ok(scorer_metrics_has("/", "b", &e) < 0 && e.msg[0], "a directory: an error (%s)", e.msg);
	if (fd >= 0)
		close(fd);
}

/* The group form (--reward-groups): one request a group, p answered for
 * each member in order; the rewards and advantages are those of the same
 * p asked one sequence at a time; either way the claim's lease is renewed
 * (between) once a group. */
#define PROGRAM_SEQ "sed -u -e 's/^{\"sequence_id\": \\([0-9]*\\),.*/{\"rewards\": {\"p\": \\1}}/'"
#define PROGRAM_GROUPS "sed -u -E -e 's/^[{]\"group_id\": [0-9]+, \"responses\": [[]//' " \
	"-e 's/[{]\"sequence_id\": ([0-9]+), [^}]*[}]/\\1/g' -e 's/[]][}]$//' " \
	"-e 's/.*/{\"rewards\": {\"p\": [&]}}/'"

/* p = the sequence id, and for sequence 31, the input's last, two answers
 * in one write (so that both are there when the scorer looks) */
#define PROGRAM_TWICE "sed -u -e 's/^{\"sequence_id\": 31,.*/{\"rewards\": {\"p\": 31}}\\n{\"rewards\": {\"p\": 31}}/;t' " \
	"-e 's/^{\"sequence_id\": \\([0-9]*\\),.*/{\"rewards\": {\"p\": \\1}}/'"

static int count_calls(void *ctx, struct err *e)
{
	(void)e;
	++*(int *)ctx;
	return 0;
}

/* Scored with the program, *between counting the calls between groups. */
static int score_with(const char *cmd, uint32_t jobs, int groups, struct group *gs, int *between, struct err *e)
{
	struct rewardpool pool;
	if (rewardpool_start(&pool, cmd, jobs, 30, e) < 0)
		return -1;
	struct scorer_opt o = base_opt();
	o.cmd = &pool;
	o.cmd_groups = groups;
	o.between = count_calls;
	o.ctx = between;
	uint8_t keep[3];
	struct scorer_stats st;
	int r = scorer_run(&o, gs, 3, keep, &st, e);
	struct err e2 = { 0 };
	if (rewardpool_stop(&pool, &e2) < 0 && r == 0)
		r = err_set(e, "%s", e2.msg);
	return r;
}

static void program_groups(void)
{
	struct group a[3], b[3];
	three_groups(a);
	three_groups(b);
	struct err e = { 0 };
	int na = 0, nb = 0;
	int r = score_with(PROGRAM_SEQ, 1, 0, a, &na, &e);
	r = r < 0 ? r : score_with(PROGRAM_GROUPS, 2, 1, b, &nb, &e);
	int same = r == 0;
	for (int g = 0; g < 3 && same; g++)
		for (uint32_t j = 0; j < a[g].n; j++)
			same &= b[g].trajs[j].n_rewards == 3 && b[g].trajs[j].rewards[2] == (float)(g + 1) * 10 + j &&
				a[g].trajs[j].rewards[2] == b[g].trajs[j].rewards[2] &&
				a[g].trajs[j].advantage == b[g].trajs[j].advantage;
	ok(same && b[0].trajs[2].advantage != 0, "the group form: each member's answer, the same advantages (%s)", e.msg);
	/* p weighs 1, not being named: x = 12, 10.5, 13 in group 1 */
	ok(r == 0 && fabsf(a[0].trajs[0].advantage - (float)(12 - 35.5 / 3)) < 1e-5f,
	   "a reward of the program without a weight weighs 1 (%g)", a[0].trajs[0].advantage);
	ok(na == 3 && nb == 3, "called between groups once a group, asked a sequence or a group at a time (%d, %d)", na,
	   nb);
	free_groups(b, 3);
	three_groups(b);
	int n1 = 0;
	r = score_with(PROGRAM_GROUPS, 1, 1, b, &n1, &e);
	ok(r == 0 && b[0].trajs[1].rewards[2] == 11 && b[2].trajs[1].rewards[2] == 31,
	   "the group form with one copy: asked a group at a time (%s)", e.msg);
	free_groups(b, 3);
	three_groups(b);
	r = score_with(PROGRAM_TWICE, 1, 0, b, &n1, &e);
	ok(r < 0 && strstr(e.msg, "sequence 31") && !b[0].trajs[0].scored,
	   "a second answer to the last request fails the input, nothing scored (%s)", e.msg);
	free_groups(a, 3);
	free_groups(b, 3);
}

/* Texts through a real tokenizer (Qwen3's, from GRPO_SHARED): t's prompt
 * and response set to the tokens of the two texts. */
static int set_texts(const struct tokenizer *tok, struct traj *t, const char *prompt, const char *response)
{
	struct tok_ids p = { 0 }, r = { 0 };
	struct err e = { 0 };
	int bad = tok_encode(tok, prompt, strlen(prompt), &p, &e) < 0 ||
		  tok_encode(tok, response, strlen(response), &r, &e) < 0;
	free(t->prompt_tokens);
	free(t->response_tokens);
	t->prompt_tokens = p.v, t->n_prompt = (uint32_t)p.n;
	t->response_tokens = r.v, t->n_response = (uint32_t)r.n;
	return bad ? -1 : 0;
}

/* Two groups: "What is 6*7?" answered "41", "42" (not first, so that the
 * batch's second text is read where it lies), then a response that
 * opens a think block; and "<think>\n" ending the prompt (as R1's chat
 * template leaves it), its response holding only the rest, then "42" to
 * another prompt. */
static const char *const PROMPTS[2] = { "What is 6*7?", "Say.<think>\n" };   /* both 12 bytes */
static const char *const RESPONSES[2][3] = {
	{ "41", "42", "<think>\nhm\n</think>\n<answer>\n42\n</answer>" },
	{ "hm\n</think>\n<answer>\n42\n</answer>", "42", "" },
};

static int text_groups(const struct tokenizer *tok, struct group *gs)
{
	static const uint32_t len[3] = { 1, 1, 1 };
	static const char *const ans[3] = { "42", "42", "42" };
	make_group(&gs[0], 1, 3, len, ans);
	make_group(&gs[1], 2, 2, len, ans);
	int bad = 0;
	for (int g = 0; g < 2; g++)
		for (uint32_t j = 0; j < gs[g].n; j++)
			bad |= set_texts(tok, &gs[g].trajs[j], PROMPTS[g], RESPONSES[g][j]);
	return bad ? -1 : 0;
}

/* The program's p: 1 when its request holds group 1's id, this prompt and
 * response as the scorer decoded them, else 0. */
#define PROGRAM_TEXT "sed -u -e 's/.*\"group_id\": 1, \"prompt\": \"What is 6\\*7?\", \"response\": \"42\",.*/{\"rewards\": {\"p\": 1}}/;t' " \
	"-e 's/.*/{\"rewards\": {\"p\": 0}}/'"

static void texts(void)
{
	const char *shared = getenv("GRPO_SHARED");
	char path[1024];
	snprintf(path, sizeof path, "%s/data/tokenizers/qwen3/tokenizer.json", shared ? shared : "../shared");
	struct err e = { 0 };
	struct tokenizer *tok = tok_load(path, &e);
	if (!tok) {
		skip("no Qwen3 tokenizer (GRPO_SHARED)");
		return;
	}
	struct reward_spec rs[2] = { { REWARD_EXACT, "exact", 1 }, { REWARD_FORMAT, "format", 1 } };
	for (uint32_t jobs = 1; jobs <= 2; jobs++) {
		struct rewardpool pool;
		struct group gs[2];
		int r = text_groups(tok, gs);
		r = r < 0 ? r : rewardpool_start(&pool, PROGRAM_TEXT, jobs, 30, &e);
		struct scorer_opt o = base_opt();
		o.rewards = rs;
		o.tok = tok;
		o.cmd = r == 0 ? &pool : NULL;
		uint8_t keep[2];
		struct scorer_stats st;
		r = r < 0 ? r : scorer_run(&o, gs, 2, keep, &st, &e);
		if (o.cmd)
			rewardpool_stop(&pool, &e);
		const struct traj *a = gs[0].trajs, *b = gs[1].trajs;
		ok(r == 0 && a[0].rewards[0] == 0 && a[1].rewards[0] == 1 && a[2].rewards[0] == 0,
		   "copies %u: the responses decoded: exact \"41\" 0, \"42\" 1 (%s)", jobs, e.msg);
		ok(r == 0 && a[0].rewards[2] == 0 && a[1].rewards[2] == 1 && b[0].rewards[2] == 0 && b[1].rewards[2] == 0,
		   "copies %u: the program asked with each prompt and response as text (%g %g %g)", jobs,
		   r == 0 ? a[0].rewards[2] : -1, r == 0 ? a[1].rewards[2] : -1, r == 0 ? b[1].rewards[2] : -1);
		ok(r == 0 && a[2].rewards[1] == 1 && a[0].rewards[1] == 0 && b[0].rewards[1] == 1 && b[1].rewards[1] == 0,
		   "copies %u: format: the response's own think block, and one the prompt opened", jobs);
		free_groups(gs, 2);
	}

	/* a token the tokenizer does not have, in a prompt format reads */
	struct group gs[2];
	int r = text_groups(tok, gs);
	gs[1].trajs[1].prompt_tokens[gs[1].trajs[1].n_prompt - 1] = 9999999;
	struct scorer_opt o = base_opt();
	o.rewards = rs;
	o.tok = tok;
	uint8_t keep[2];
	struct scorer_stats st;
	e.msg[0] = '\0';
	r = r < 0 ? r : scorer_run(&o, gs, 2, keep, &st, &e);
	ok(r < 0 && strncmp(e.msg, "group 2, sequence 21: prompt: ", 30) == 0 && !gs[0].trajs[0].scored,
	   "a prompt that cannot be decoded fails, naming it, nothing scored (%s)", e.msg);
	free_groups(gs, 2);
	tok_free(tok);
}

/* scorer_stats_add: the smallest group and the first non-finite reward
 * come from whichever part has them, the first part included. */
static void stats_add(void)
{
	struct scorer_stats a = { 0 }, b = { 0 }, sum = { 0 };
	a.groups = 1, a.min_size = a.max_size = 3, a.nonfinite = 1;
	snprintf(a.first_nonfinite, sizeof a.first_nonfinite, "group 1, sequence 11, reward p = nan");
	b.groups = 2, b.min_size = 2, b.max_size = 4, b.nonfinite = 1;
	snprintf(b.first_nonfinite, sizeof b.first_nonfinite, "group 5, sequence 50, reward p = inf");
	scorer_stats_add(&sum, &a);
	scorer_stats_add(&sum, &b);
	ok(sum.groups == 3 && sum.min_size == 2 && sum.max_size == 4 && sum.nonfinite == 2 &&
	   strcmp(sum.first_nonfinite, "group 1, sequence 11, reward p = nan") == 0,
	   "two parts added: sizes 2 to 4, the first part's non-finite reward described (%u..%u, %s)", sum.min_size,
	   sum.max_size, sum.first_nonfinite);
	struct scorer_stats sum2 = { 0 };
	scorer_stats_add(&sum2, &b);
	scorer_stats_add(&sum2, &a);
	ok(sum2.min_size == 2 && sum2.max_size == 4, "the other order: the same sizes");

	/* pass@n of the largest groups only: a part with larger groups replaces the sum */
	struct scorer_stats c = { 0 }, d = { 0 }, sum3 = { 0 };
	c.groups = 1, c.K = 1, c.pass_top = 2, c.pass_top_groups = 1, c.pass_top_sum[0] = 0.5;
	d.groups = 1, d.K = 1, d.pass_top = 4, d.pass_top_groups = 1, d.pass_top_sum[0] = 0.25;
	scorer_stats_add(&sum3, &c);
	scorer_stats_add(&sum3, &d);
	ok(sum3.pass_top == 4 && sum3.pass_top_groups == 1 && sum3.pass_top_sum[0] == 0.25,
	   "pass@4 of the part with groups of 4, not summed with the pass@2 before it (%g)", sum3.pass_top_sum[0]);
}

/* The metrics line of an input with no sequences (no division by 0), and
 * of groups of 2, whose largest size is a power of two already listed. */
static void metrics_edges(void)
{
	struct scorer_stats st = { 0 };
	char line[2048];
	metrics_of(&st, line, sizeof line);
	const char *want =
		"{\"input\":\"in\",\"groups\":0,\"sequences\":0,\"dropped_groups\":0,\"zero_std_groups\":0,"
		"\"singleton_groups\":0,\"nonfinite_rewards\":0,\"zero_std_fraction\":0,\"rewards\":{},"
		"\"response_len_mean\":0,\"response_len_max\":0,\"truncated_fraction\":0,"
		"\"decode_s\":0,\"reward_s\":0,\"ref_s\":0,\"ref_tokens\":0,\"ref_tokens_per_s\":0}\n";
	ok(strcmp(line, want) == 0, "no sequences: zeros");
	if (strcmp(line, want) != 0)
		diag("got  %s# want %s", line, want);

	static const uint32_t l[] = { 4, 8 };
	static const char *const a[] = { "", "x" };
	struct group g;
	make_group(&g, 1, 2, l, a);
	struct scorer_opt o = base_opt();
	o.n_rewards = 1;
	uint8_t keep;
	struct err e = { 0 };
	int r = scorer_run(&o, &g, 1, &keep, &st, &e);
	metrics_of(&st, line, sizeof line);
	if (!ok(r == 0 && strstr(line, "\"pass_at\":{\"1\":0,\"2\":0}}"), "groups of 2: pass@1 and pass@2, once each"))
		diag("got %s", line);
	group_free(&g);
}

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The reference model of --ref: tests/data/hf/qwen2 (token 0, of every
 * prompt and response here, is in its vocabulary). 0 when absent. */
static int open_ref(struct reflp *r)
{
	const char *top = getenv("GRPO_TOP");
	char dir[4096], cfg[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/hf/qwen2", top ? top : ".");
	snprintf(cfg, sizeof cfg, "%s/config.json", dir);
	if (access(cfg, F_OK) != 0)
		return 0;
	struct err e = { 0 };
	if (!ok(reflp_open(r, dir, 64, &e) == 0, "reference model opened (%s)", e.msg))
		return 0;
	return 1;
}

/* 1 when the ref_logprobs of scored, group g of three_groups, are those
 * reflp_group gives that group alone. */
static int ref_alone(struct reflp *r, const struct group *scored, uint32_t g)
{
	struct group copy[3];
	three_groups(copy);
	struct err e = { 0 };
	int same = reflp_group(r, &copy[g], &e) == 0;
	for (uint32_t j = 0; same && j < copy[g].n; j++) {
		const struct traj *t = &scored->trajs[j];
		same = t->ref_logprobs &&
		       memcmp(t->ref_logprobs, copy[g].trajs[j].ref_logprobs, t->n_response * sizeof(float)) == 0;
	}
	free_groups(copy, 3);
	return same;
}

/*
 * --ref: the groups kept get the reference logprobs of reflp_group run on
 * each alone, the groups dropped none; the tokens and the time go to the
 * stats and the metrics line. A token outside the reference model's
 * vocabulary fails the input, nothing scored, the message naming it.
 */
static void reference(void)
{
	struct reflp r;
	if (!open_ref(&r)) {
		skip("tests/data/hf/qwen2 absent: --ref not run");
		return;
	}
	struct group gs[3];
	three_groups(gs);
	struct scorer_opt o = base_opt();
	o.drop_zero_std = 1;
	o.ref = &r;
	uint8_t keep[3];
	struct scorer_stats st;
	struct err e = { 0 };
	double t0 = seconds();
	int rc = scorer_run(&o, gs, 3, keep, &st, &e);
	double run_s = seconds() - t0;
	ok(rc == 0 && keep[0] && !keep[1] && !keep[2], "--ref --drop-zero-std: scored, group 1 kept (%s)", e.msg);
	ok(ref_alone(&r, &gs[0], 0), "group 1: the reference logprobs of reflp_group on it alone");
	ok(!gs[1].trajs[0].ref_logprobs && !gs[2].trajs[0].ref_logprobs && !gs[2].trajs[1].ref_logprobs,
	   "the groups dropped: none");
	ok(st.ref_tokens == 5 + 9 + 13 && st.t_ref > 0 && st.t_ref <= run_s + 1e-9,
	   "stats: the 27 tokens of group 1 through the reference model, and its time, within the run's "
	   "(%llu, %g of %g s)", (unsigned long long)st.ref_tokens, st.t_ref, run_s);
	struct buf b = { 0 };
	scorer_metrics(&b, "in", &st);
	const char *line = b.data ? (char *)b.data : "";
	if (!ok(strstr(line, ",\"ref_tokens\":27,\"ref_tokens_per_s\":") && !strstr(line, "\"ref_s\":0,") &&
		!strstr(line, "\"ref_tokens_per_s\":0}"), "the metrics line: ref_s, ref_tokens 27 and its rate, not 0"))
		diag("%s", line);
	buf_free(&b);
	free_groups(gs, 3);

	/* without --drop-zero-std every group is kept */
	three_groups(gs);
	o.drop_zero_std = 0;
	rc = scorer_run(&o, gs, 3, keep, &st, &e);
	ok(rc == 0 && ref_alone(&r, &gs[0], 0) && ref_alone(&r, &gs[1], 1) && ref_alone(&r, &gs[2], 2) &&
	   st.ref_tokens == 27 + 6 + 14, "every group kept: each its own reference logprobs, 47 tokens (%llu)",
	   (unsigned long long)st.ref_tokens);
	free_groups(gs, 3);

	/* a response token outside the vocabulary: no trajectory scored */
	three_groups(gs);
	gs[2].trajs[1].response_tokens[3] = r.m.cfg.V;
	rc = scorer_run(&o, gs, 3, keep, &st, &e);
	int scored = 0;
	for (uint32_t g = 0; g < 3; g++)
		for (uint32_t j = 0; j < gs[g].n; j++)
			scored += gs[g].trajs[j].scored;
	char want[96];
	snprintf(want, sizeof want, "group 3, sequence 31: response token 3 is id %d, outside", r.m.cfg.V);
	ok(rc < 0 && scored == 0 && strstr(e.msg, want),
	   "a reference failure: nothing scored, the token named (%s)", e.msg);
	free_groups(gs, 3);
	reflp_close(&r);
}

int main(void)
{
	built_ins();
	each();
	between_fails();
	program(1);
	program(2);
	program_groups();
	verdicts();
	texts();
	metrics_has();
	stats_add();
	metrics_edges();
	reference();
	return tap_done();
}
