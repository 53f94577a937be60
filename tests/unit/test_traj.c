/* The trajectory record (data/traj.h): ids kept as given (an integer never
 * equals a string, "42" is not 42, -1 is "none"), printed as given; a new
 * trajectory's documented defaults; finish reasons, the length cut and the
 * combined reward; the frees leaving zeroed structs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/traj.h"
#include "tap.h"

static void test_ids(void)
{
	struct traj_id none = traj_id_none(), zero = traj_id_num(0), n42 = traj_id_num(42), s42 = traj_id_none();
	ok(none.num == -1 && !none.str && !traj_id_given(&none), "traj_id_none is the integer -1, not given");
	ok(traj_id_given(&zero) && zero.num == 0 && !zero.str, "the integer id 0 is given");
	is_int(traj_id_set_str(&s42, "42x", 2), 0, "a string id is set from the first n bytes");
	ok(s42.str && strcmp(s42.str, "42") == 0 && s42.num == -1 && traj_id_given(&s42),
	   "the string \"42\", given, its number -1");
	ok(!traj_id_eq(&n42, &s42) && !traj_id_eq(&s42, &n42), "the integer 42 and the string \"42\" differ, both ways");
	struct traj_id other = traj_id_none();
	traj_id_set_str(&other, "42", 2);
	ok(traj_id_eq(&s42, &other), "two strings \"42\" are the same id");
	traj_id_set_str(&other, "43", 2);
	ok(!traj_id_eq(&s42, &other), "\"42\" and \"43\" differ");
	struct traj_id m1 = traj_id_num(-1);
	ok(traj_id_eq(&none, &m1) && traj_id_eq(&n42, &(struct traj_id){ 42, NULL }) && !traj_id_eq(&n42, &zero),
	   "integers are compared by value");
	ok(traj_id_set_str(&other, "a\0b", 3) < 0 && strcmp(other.str, "43") == 0,
	   "a string holding a NUL byte is refused, the id left as it was");
	is_int(traj_id_set_str(&other, "", 0), 0, "an empty string is an id");
	ok(other.str && other.str[0] == 0 && traj_id_given(&other) && !traj_id_eq(&other, &none),
	   "the empty string: given, not none");

	struct traj_id c;
	is_int(traj_id_copy(&c, &s42), 0, "a string id copies");
	ok(c.str && c.str != s42.str && traj_id_eq(&c, &s42), "into a string of its own, equal");
	traj_id_free(&c);
	ok(!c.str && c.num == -1, "traj_id_free leaves none");
	is_int(traj_id_copy(&c, &n42), 0, "an integer id copies");
	ok(!c.str && c.num == 42, "as the integer");

	char buf[24];
	ok(traj_id_text(&s42, buf) == s42.str, "a string id's text is the string itself");
	ok(strcmp(traj_id_text(&n42, buf), "42") == 0 && strcmp(traj_id_text(&none, buf), "-1") == 0,
	   "an integer's is its decimal digits: 42, -1");
	struct traj_id big = traj_id_num(INT64_MIN);
	ok(strcmp(traj_id_text(&big, buf), "-9223372036854775808") == 0, "the longest integer fits: %s", buf);
	traj_id_free(&s42);
	traj_id_free(&other);
}

static void test_traj(void)
{
	struct traj t;
	memset(&t, 0x5a, sizeof t);
	traj_init(&t);
	ok(t.temperature == 1.0f && t.sequence_id.num == -1 && !t.sequence_id.str && t.group_id.num == -1 &&
	   !t.group_id.str && t.policy_version == -1,
	   "a new trajectory: temperature 1, no ids, no policy version");
	ok(!t.prompt_tokens && !t.response_tokens && !t.logprobs && !t.response_mask && !t.answer && !t.run &&
	   !t.finish_reason && !t.scored && !t.rewards && !t.reward_names && !t.successes && !t.ref_logprobs &&
	   t.n_prompt == 0 && t.n_response == 0 && t.n_rewards == 0 && t.advantage == 0,
	   "and every other field empty, whatever the memory held");

	ok(!traj_truncated(&t), "no finish reason: not cut at the length limit");
	is_int(traj_set_finish(&t, "length"), 0, "finish reason set");
	ok(traj_truncated(&t) && strcmp(t.finish_reason, "length") == 0, "\"length\" is the length limit");
	traj_set_finish(&t, "stop");
	ok(!traj_truncated(&t) && strcmp(t.finish_reason, "stop") == 0, "\"stop\" is not, and replaces it");
	traj_set_finish(&t, "length_cap");
	ok(!traj_truncated(&t), "nor \"length_cap\"");
	traj_set_finish(&t, "");
	ok(!t.finish_reason, "\"\" is unknown");
	traj_set_finish(&t, "abort");
	traj_set_finish(&t, NULL);
	ok(!t.finish_reason, "and so is NULL");

	ok(traj_reward(&t) == 0, "no rewards: a combined reward of 0");
	t.rewards = malloc(3 * sizeof(float));
	t.rewards[0] = 0.5f, t.rewards[1] = 0.25f, t.rewards[2] = -2;
	t.n_rewards = 3;
	ok(traj_reward(&t) == -1.25f, "the combined reward is the sum of all three (%g)", traj_reward(&t));
	t.n_rewards = 1;
	ok(traj_reward(&t) == 0.5f, "of n_rewards of them");

	t.n_rewards = 3;
	t.reward_names = calloc(3, sizeof(char *));
	for (int i = 0; i < 3; i++)
		t.reward_names[i] = strdup("r");
	t.prompt_tokens = calloc(1, 4);
	t.answer = strdup("7");
	traj_id_set_str(&t.sequence_id, "s", 1);
	traj_id_set_str(&t.group_id, "g", 1);
	traj_free(&t);
	struct traj zeroed;
	memset(&zeroed, 0, sizeof zeroed);
	ok(memcmp(&t, &zeroed, sizeof t) == 0, "traj_free leaves the trajectory zeroed");

	struct group g = { traj_id_num(3), 2, calloc(2, sizeof(struct traj)) };
	traj_init(&g.trajs[0]);
	traj_init(&g.trajs[1]);
	g.trajs[1].run = strdup("b");
	traj_id_set_str(&g.group_id, "grp", 3);
	group_free(&g);
	ok(g.n == 0 && !g.trajs && !g.group_id.str && g.group_id.num == 0, "group_free leaves the group zeroed");

	struct microbatch mb;
	memset(&mb, 0, sizeof mb);
	mb.n_seqs = 2;
	mb.sequence_ids = calloc(2, sizeof(struct traj_id));
	mb.group_ids = calloc(2, sizeof(struct traj_id));
	traj_id_set_str(&mb.sequence_ids[1], "x", 1);
	traj_id_set_str(&mb.group_ids[1], "y", 1);
	mb.finish_reasons = calloc(2, sizeof(char *));
	mb.finish_reasons[1] = strdup("stop");
	mb.input_ids = calloc(1, 4);
	mb.run = strdup("r");
	mb_free(&mb);
	struct microbatch mzero;
	memset(&mzero, 0, sizeof mzero);
	ok(memcmp(&mb, &mzero, sizeof mb) == 0, "mb_free leaves the micro-batch zeroed");
}

int main(void)
{
	test_ids();
	test_traj();
	return tap_done();
}
