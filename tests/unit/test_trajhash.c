/*
 * test_trajhash: the hashes that know a copy of trajectories again are
 * pinned (manifests, .jobs and grpo-score's records keep them across
 * builds: values computed apart, by the definition in trajhash.h, in
 * Python), and each field a sample is made of changes them while what
 * scoring adds (rewards, reference logprobs, the advantage, for the
 * file's hash) does not.
 */
#include <stddef.h>

#include "data/trajhash.h"
#include "tap.h"

static int32_t p0[] = { 1, 2 }, r0[] = { 3, 4, 5 }, p1[] = { 1, 2 }, r1[] = { 6 };
static float lp0[] = { -0.5f, -1.0f, -2.0f }, lp1[] = { -0.25f };
static char sid1[] = "s-71", run1[] = "r1";

/* group 7: sequence 70, then sequence "s-71" of run r1 at temperature 0.5 */
static void example(struct group *g, struct traj t[2])
{
	t[0] = (struct traj){ .prompt_tokens = p0, .response_tokens = r0, .logprobs = lp0, .n_prompt = 2,
			      .n_response = 3, .sequence_id = { 70, NULL }, .policy_version = 3, .temperature = 1.0f,
			      .advantage = 0.25f };
	t[1] = (struct traj){ .prompt_tokens = p1, .response_tokens = r1, .logprobs = lp1, .n_prompt = 2,
			      .n_response = 1, .run = run1, .sequence_id = { -1, sid1 }, .policy_version = 3,
			      .temperature = 0.5f, .advantage = -0.25f };
	*g = (struct group){ .group_id = { 7, NULL }, .n = 2, .trajs = t };
}

static uint64_t job(const struct group *g)
{
	uint64_t h = TRAJHASH_INIT;
	for (uint32_t x = 0; x < g->n; x++)
		h = trajhash_job_add(h, g, x);
	return h;
}

int main(void)
{
	struct group g;
	struct traj t[2];
	example(&g, t);
	uint64_t file = trajhash_file(&g, 1), jb = job(&g);
	ok(file == 0x68e8f0e2a222a9c3ULL, "a file's hash, pinned (%016llx)", (unsigned long long)file);
	ok(jb == 0x7ca467b1343ea25eULL, "a job's hash, pinned (%016llx)", (unsigned long long)jb);
	ok(trajhash_bytes(TRAJHASH_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL, "FNV-1a 64 of \"a\"");

	float rw[] = { 1 }, ref[] = { -0.1f, -0.2f, -0.3f };
	char *names[] = { "judge" };
	t[0].rewards = rw, t[0].n_rewards = 1, t[0].reward_names = names, t[0].ref_logprobs = ref, t[0].scored = 1;
	t[0].advantage = 9;
	ok(trajhash_file(&g, 1) == file, "scored again (rewards, reference logprobs, advantage): the same file");
	ok(job(&g) != jb, "but another job: a job is its data, advantages and all");

	/* each field of a sample, changed in turn: another file, another job
	 * (ids: another file only, as a job of plain inputs is its data) */
	static const char *const field[] = { "a prompt token", "a response token", "a logprob", "no logprobs",
		"the policy version", "the temperature", "the run", "the group's size", "the group id",
		"a sequence id", "an integer id as a string" };
	for (int k = 0; k < (int)(sizeof field / sizeof field[0]); k++) {
		example(&g, t);
		int32_t pp[] = { 1, 9 }, rr[] = { 3, 4, 9 };
		float ll[] = { -0.5f, -1.0f, -2.5f };
		char s70[] = "70";
		switch (k) {
		case 0: t[0].prompt_tokens = pp; break;
		case 1: t[0].response_tokens = rr; break;
		case 2: t[0].logprobs = ll; break;
		case 3: t[0].logprobs = NULL; break;
		case 4: t[1].policy_version = 4; break;
		case 5: t[1].temperature = 0.75f; break;
		case 6: t[1].run = NULL; break;
		case 7: g.n = 1; break;
		case 8: g.group_id.num = 8; break;
		case 9: t[0].sequence_id.num = 71; break;
		case 10: t[0].sequence_id = (struct traj_id){ -1, s70 }; break;
		}
		int ids = k >= 8;
		uint64_t f = trajhash_file(&g, 1);
		ok(f != file && (ids ? job(&g) == jb : job(&g) != jb), "%s changed: another file%s", field[k],
		   ids ? ", the same job" : " and another job");
	}
	return tap_done();
}
