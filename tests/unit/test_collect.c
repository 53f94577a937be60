/* grpo-collect's library: NaN/Infinity rewriting, format detection, the
 * traps of formats.md (token ids over text, echo, the -9999 sentinel, n > 1,
 * Atropos masks), validation messages, deterministic ids and grouping; and
 * the importers reading lines through data/jsonpick against the same
 * importers over cJSON's whole tree, on every input of tests/data/collect. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/collect.h"
#include "data/jsonview.h"
#include "data/sfile.h"
#include "tap.h"

static int parse(const char *s, enum collect_format f, struct collect_line *L, struct err *e)
{
	return collect_parse_line(s, strlen(s), f, L, e);
}

static void test_nonfinite(void)
{
	char *out = NULL;
	size_t n = 0;
	const char *s = "{\"a\":[NaN,Infinity,-Infinity],\"s\":\"NaN \\\" Infinity\",\"NaN\":1}";
	ok(json_fix_nonfinite(s, strlen(s), &out, &n) == 1 &&
		   strcmp(out, "{\"a\":[null,1e999,-1e999],\"s\":\"NaN \\\" Infinity\",\"NaN\":1}") == 0,
	   "NaN and Infinity are rewritten outside strings only: %s", out ? out : "(none)");
	free(out);
	s = "{\"s\":\"NaN\"}";
	ok(json_fix_nonfinite(s, strlen(s), &out, &n) == 0, "a line with NaN only inside a string is left alone");
	s = "[1,2]";
	ok(json_fix_nonfinite(s, strlen(s), &out, &n) == 0, "a plain line takes the fast path");
}

static void test_vllm(void)
{
	struct collect_line L;
	struct err e = { 0 };
	/* n = 2 over two prompts (a batched request): two groups */
	const char *two =
		"{\"id\":\"c\",\"choices\":[{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:5\"]},"
		"\"prompt_token_ids\":[1,2]},{\"logprobs\":{\"token_logprobs\":[-2],\"tokens\":[\"token_id:6\"]},"
		"\"prompt_token_ids\":[1,2]},{\"logprobs\":{\"token_logprobs\":[-3],\"tokens\":[\"token_id:7\"]},"
		"\"prompt_token_ids\":[3]}]}";
	ok(parse(two, COLLECT_AUTO, &L, &e) == 0 && L.format == COLLECT_VLLM && L.n_groups == 2 &&
		   L.groups[0].n == 2 && L.groups[1].n == 1 && L.groups[0].trajs[1].response_tokens[0] == 6 &&
		   strcmp(L.id, "c") == 0,
	   "choices of one prompt form one group; a second prompt starts another (%s)", e.msg);
	collect_line_free(&L);

	/* text tokens without token_ids cannot be trusted */
	const char *text = "{\"choices\":[{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\" 4\"]},"
			   "\"prompt_token_ids\":[1]}]}";
	ok(parse(text, COLLECT_AUTO, &L, &e) < 0 && strstr(e.msg, "choices[0]: no token ids: the logprob tokens are text"),
	   "text tokens without token_ids are refused: %s", e.msg);

	const char *disagree = "{\"choices\":[{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:9\"]},"
			       "\"token_ids\":[8],\"prompt_token_ids\":[1]}]}";
	ok(parse(disagree, COLLECT_AUTO, &L, &e) < 0 &&
		   strstr(e.msg, "logprobs token 0 is token_id:9, but token_ids[0] is 8"),
	   "token strings and token_ids must agree: %s", e.msg);

	const char *noprompt = "{\"choices\":[{\"logprobs\":{\"content\":[{\"token\":\"token_id:3\",\"logprob\":-1}]}}]}";
	ok(parse(noprompt, COLLECT_AUTO, &L, &e) < 0 && strstr(e.msg, "no prompt token ids"),
	   "a response without prompt ids says how to get them: %s", e.msg);

	/* chat: a content entry without logprob is vLLM's default -9999 */
	const char *missing = "{\"prompt_token_ids\":[1],\"choices\":[{\"logprobs\":{\"content\":[{\"token\":\"token_id:3\"}]}}]}";
	ok(parse(missing, COLLECT_AUTO, &L, &e) == 0 && L.groups[0].trajs[0].logprobs[0] == -9999.0f,
	   "a missing chat logprob reads as the -9999 sentinel");
	ok(collect_check_group(&L.groups[0], 0, &e) < 0 && strstr(e.msg, "sentinel"),
	   "which validation refuses: %s", e.msg);
	collect_line_free(&L);
}

/* A batched request's prompts are paired with the answers by position, n
 * each: an answer holding another number of samples than the request's n
 * asked for cannot be paired, and is refused rather than have a sample
 * stored under the next prompt's ids. Both wrappers below ask two prompts
 * for n = 2 and hold two samples, both of the first prompt. */
static void test_batch_pairing(void)
{
	struct collect_line L;
	struct err e = { 0 };
	const char *vllm =
		"{\"request\":{\"prompt\":[[1,2,3],[4,5,6]],\"n\":2,\"logprobs\":0},\"response\":{\"id\":\"c\","
		"\"choices\":[{\"logprobs\":{\"token_logprobs\":[-0.5],\"tokens\":[\"token_id:7\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-0.25],\"tokens\":[\"token_id:8\"]}}]}}";
	ok(parse(vllm, COLLECT_AUTO, &L, &e) < 0 &&
		   strstr(e.msg, "request prompt: 2 prompts with n = 2 each, but 2 choices: which prompt a choice "
				 "answers is unknown"),
	   "vllm: 2 choices for 2 prompts asked n = 2 each are refused, not one given to each prompt: %s", e.msg);
	collect_line_free(&L);
	const char *sglang =
		"{\"request\":{\"input_ids\":[[1,2,3],[4,5,6]],\"sampling_params\":{\"n\":2}},\"response\":["
		"{\"meta_info\":{\"id\":\"a\",\"output_token_logprobs\":[[-0.5,7,null]]}},"
		"{\"meta_info\":{\"id\":\"b\",\"output_token_logprobs\":[[-0.25,8,null]]}}]}";
	ok(parse(sglang, COLLECT_AUTO, &L, &e) < 0 &&
		   strstr(e.msg, "request input_ids: 2 prompts with sampling_params.n = 2 each, but 2 members"),
	   "sglang: likewise for 2 members: %s", e.msg);
	collect_line_free(&L);
	/* as many as asked: paired prompt by prompt */
	const char *four =
		"{\"request\":{\"input_ids\":[[1,2,3],[4,5,6]],\"sampling_params\":{\"n\":2}},\"response\":["
		"{\"meta_info\":{\"id\":\"a\",\"output_token_logprobs\":[[-0.5,7,null]]}},"
		"{\"meta_info\":{\"id\":\"b\",\"output_token_logprobs\":[[-0.25,8,null]]}},"
		"{\"meta_info\":{\"id\":\"c\",\"output_token_logprobs\":[[-0.5,9,null]]}},"
		"{\"meta_info\":{\"id\":\"d\",\"output_token_logprobs\":[[-0.25,10,null]]}}]}";
	ok(parse(four, COLLECT_AUTO, &L, &e) == 0 && L.n_groups == 2 && L.groups[0].n == 2 &&
		   L.groups[0].trajs[1].prompt_tokens[0] == 1 && L.groups[1].trajs[0].prompt_tokens[0] == 4 &&
		   L.groups[1].trajs[0].response_tokens[0] == 9,
	   "and 4 members for 2 prompts at n = 2 are two groups of 2 (%s)", e.msg);
	collect_line_free(&L);
}

/* A batched request that does not say n: its choices are split evenly among
 * its prompts, and a count that does not split is refused, saying so. */
static void test_batch_without_n(void)
{
	struct collect_line L;
	struct err e = { 0 };
	const char *four =
		"{\"request\":{\"prompt\":[[1,2],[3,4]],\"logprobs\":0},\"response\":{\"id\":\"c\",\"choices\":["
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:5\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:6\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:7\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:8\"]}}]}}";
	ok(parse(four, COLLECT_AUTO, &L, &e) == 0 && L.n_groups == 2 && L.groups[0].n == 2 && L.groups[1].n == 2 &&
		   L.groups[0].trajs[1].prompt_tokens[0] == 1 && L.groups[1].trajs[0].prompt_tokens[0] == 3 &&
		   L.groups[1].trajs[0].response_tokens[0] == 7,
	   "4 choices for 2 prompts without n: two groups of 2, prompt by prompt (%s)", e.msg);
	collect_line_free(&L);
	const char *three =
		"{\"request\":{\"prompt\":[[1,2],[3,4]],\"logprobs\":0},\"response\":{\"id\":\"c\",\"choices\":["
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:5\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:6\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:7\"]}}]}}";
	ok(parse(three, COLLECT_AUTO, &L, &e) < 0 &&
		   strcmp(e.msg, "choices[0]: request prompt: 2 prompts for 3 choices, not n choices each") == 0,
	   "3 choices for 2 prompts without n are refused: %s", e.msg);
}

/* A native group's id: its own, else its first member's that has one; a
 * member naming another group is refused, saying which. */
static void test_native_group_id(void)
{
	struct collect_line L;
	struct err e = { 0 };
	const char *from_member =
		"{\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1]},"
		"{\"prompt_tokens\":[1],\"response_tokens\":[3],\"logprobs\":[-1],\"group_id\":8}]}";
	ok(parse(from_member, COLLECT_AUTO, &L, &e) == 0 && L.n_groups == 1 && L.groups[0].group_id.num == 8,
	   "a group without group_id takes its member's, 8 (%s)", e.msg);
	collect_line_free(&L);
	const char *other =
		"{\"group_id\":7,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1]},"
		"{\"prompt_tokens\":[1],\"response_tokens\":[3],\"logprobs\":[-1],\"group_id\":8}]}";
	ok(parse(other, COLLECT_AUTO, &L, &e) < 0 &&
		   strcmp(e.msg, "trajectories[1]: group_id 8, but the group's is 7") == 0,
	   "a member of another group is refused: %s", e.msg);
	ok(parse("[{\"x\":1}]", COLLECT_AUTO, &L, &e) < 0 && strncmp(e.msg, "not a rollout in any known format", 33) == 0,
	   "a list of objects of no known format is detected as none: %s", e.msg);
	const char *longer =
		"{\"request\":{\"prompt\":[1],\"max_tokens\":1},\"response\":{\"id\":\"c\",\"choices\":["
		"{\"logprobs\":{\"token_logprobs\":[-1,-1],\"tokens\":[\"token_id:5\",\"token_id:6\"]}},"
		"{\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"token_id:7\"]}}]}}";
	ok(parse(longer, COLLECT_AUTO, &L, &e) < 0 &&
		   strcmp(e.msg, "group c, trajectory 0: 2 response tokens, more than the request's max_tokens, 1") == 0,
	   "a first choice longer than max_tokens is refused: %s", e.msg);
}

/* Load text as an --answers file (at path): the load's result, e.msg set. */
static int load_answers(struct collect_answers *a, const char *path, const char *text, struct err *e)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		return err_set(e, "cannot write %s", path);
	return collect_answers_load(a, path, e);
}

/* --answers: a line keyed by its index, else its id, else its own 0-based
 * number; blank lines skipped; a line that keys nothing or holds no answer,
 * and a key given twice, refused with the file and line. */
static void test_answers_file(void)
{
	char dir[] = "/tmp/test_collect.XXXXXX", path[64], text[8192];
	struct collect_answers a;
	struct err e = { 0 };
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof path, "%s/answers.jsonl", dir);
	int r = load_answers(&a, path, "{\"answer\":\"zero\"}\n\n{\"answer\":2}\n{\"index\":123456789,\"answer\":\"big\"}\n"
			     "{\"id\":\"q\",\"answer\":\"by id\"}\n", &e);
	ok(r == 0 && a.n == 4, "four answers, a blank line skipped (%s)", e.msg);
	const char *i0 = r == 0 ? collect_answers_index(&a, 0) : NULL, *i2 = r == 0 ? collect_answers_index(&a, 2) : NULL;
	const char *big = r == 0 ? collect_answers_index(&a, 123456789) : NULL;
	const char *q = r == 0 ? collect_answers_id(&a, "q") : NULL;
	ok(i0 && strcmp(i0, "zero") == 0 && i2 && strcmp(i2, "2") == 0 && !collect_answers_index(&a, 1) && big &&
		   strcmp(big, "big") == 0 && q && strcmp(q, "by id") == 0,
	   "keyed by line number from 0 (a blank line counts), a 9-digit index and an id");
	if (r == 0)
		collect_answers_free(&a);
	/* a data set's worth: 200 lines, keyed by their numbers */
	size_t len = 0;
	for (int i = 0; i < 200; i++)
		len += (size_t)snprintf(text + len, sizeof text - len, "{\"answer\":\"a%d\"}\n", i);
	r = load_answers(&a, path, text, &e);
	const char *last = r == 0 ? collect_answers_index(&a, 199) : NULL;
	ok(r == 0 && a.n == 200 && last && strcmp(last, "a199") == 0, "200 answers, the last as a199 (%s)", e.msg);
	if (r == 0)
		collect_answers_free(&a);
	char want[200];
	snprintf(want, sizeof want, "%s:2: \"answer\": expected a string or a number", path);
	ok(load_answers(&a, path, "{\"answer\":\"x\"}\n{\"index\":1}\n", &e) < 0 && strcmp(e.msg, want) == 0,
	   "a line without an answer: %s", e.msg);
	snprintf(want, sizeof want, "%s:2: expected a JSON object", path);
	ok(load_answers(&a, path, "{\"answer\":\"x\"}\n[1]\n", &e) < 0 && strcmp(e.msg, want) == 0,
	   "a line that is no object: %s", e.msg);
	snprintf(want, sizeof want, "%s:1: \"id\": expected a string or a number", path);
	ok(load_answers(&a, path, "{\"id\":[1],\"answer\":\"x\"}\n", &e) < 0 && strcmp(e.msg, want) == 0,
	   "an id that is no string or number: %s", e.msg);
	snprintf(want, sizeof want, "%s: two answers for index 0", path);
	ok(load_answers(&a, path, "{\"index\":0,\"answer\":\"x\"}\n{\"index\":0,\"answer\":\"y\"}\n", &e) < 0 &&
		   strcmp(e.msg, want) == 0,
	   "two answers for one index: %s", e.msg);
	shell("rm -rf %s", dir);
}

static void test_atropos(void)
{
	struct collect_line L;
	struct err e = { 0 };
	const char *g = "{\"tokens\":[[1,2,3,4],[1,2,5,6]],\"masks\":[[-100,-100,3,4],[-100,-100,5,6]],"
			"\"scores\":[2,0],\"inference_logprobs\":[[NaN,Infinity,-0.5,-0.25],[1,1,-1,-2]],"
			"\"overrides\":[{\"temperature\":0.5},null],\"generation_params\":{\"temperature\":0.9}}";
	int r = parse(g, COLLECT_AUTO, &L, &e);
	ok(r == 0 && L.format == COLLECT_ATROPOS && L.n_groups == 1 && L.groups[0].n == 2, "an Atropos group: %s", e.msg);
	if (r == 0) {
		struct traj *a = &L.groups[0].trajs[0], *b = &L.groups[0].trajs[1];
		is_int(a->n_prompt, 2, "the prompt is the leading -100 run");
		ok(a->logprobs[0] == -0.5f && a->logprobs[1] == -0.25f, "NaN and Infinity at prompt positions are dropped");
		is_float(a->advantage, 1.0, 1e-6, "advantage (score - mean) / std");
		is_float(b->advantage, -1.0, 1e-6, "advantage of the other member");
		is_float(a->temperature, 0.5, 0, "overrides[i].temperature wins");
		is_float(b->temperature, 0.9, 1e-7, "else generation_params.temperature");
		ok(a->scored && a->n_rewards == 1 && a->rewards[0] == 2.0f && a->successes[0] == 1.0f && b->successes[0] == 0.0f,
		   "scores become rewards and successes");
	}
	collect_line_free(&L);
	const char *bad = "{\"tokens\":[[1,2]],\"masks\":[[-100,7]],\"scores\":[1],\"inference_logprobs\":[[1,-1]]}";
	ok(parse(bad, COLLECT_AUTO, &L, &e) < 0 && strstr(e.msg, "masks[0][1] is 7, neither -100 nor the token id 2"),
	   "a mask that is neither -100 nor the token: %s", e.msg);
	const char *nolp = "{\"tokens\":[[1,2]],\"masks\":[[-100,2]],\"scores\":[1]}";
	ok(parse(nolp, COLLECT_AUTO, &L, &e) == 0 && L.groups[0].trajs[0].logprobs == NULL,
	   "a group without inference_logprobs parses as having none (NULL, not zeros)");
	collect_line_free(&L);
	const char *nan = "{\"tokens\":[[1,2]],\"masks\":[[-100,2]],\"scores\":[NaN],\"inference_logprobs\":[[1,-1]]}";
	ok(parse(nan, COLLECT_AUTO, &L, &e) < 0 && strstr(e.msg, "scores[0] is not a finite number"),
	   "a NaN score: %s", e.msg);
}

static void test_wrapper(void)
{
	struct collect_line L;
	struct err e = { 0 };
	/* Python's json.dumps escapes non-ASCII, astral characters as surrogate pairs */
	const char *w = "{\"id\":17,\"answer\":\"\\ud83d\\ude00 72\",\"request\":{\"token_ids\":[5,6],"
			"\"sampling_params\":{\"temperature\":0.25}},\"response\":{\"request_id\":\"g\",\"choices\":"
			"[{\"token_ids\":[7],\"logprobs\":{\"content\":[{\"token\":\"token_id:7\",\"logprob\":-1}]}}]}}";
	int r = parse(w, COLLECT_AUTO, &L, &e);
	ok(r == 0 && strcmp(L.answer, "\xf0\x9f\x98\x80 72") == 0 && strcmp(L.id, "17") == 0,
	   "a wrapper's answer (a surrogate pair decoded to UTF-8) and id (%s)", e.msg);
	ok(r == 0 && L.groups[0].trajs[0].n_prompt == 2 && L.groups[0].trajs[0].temperature == 0.25f,
	   "the generate endpoint's prompt ids and temperature come from the request");
	if (r == 0)
		collect_line_free(&L);

	/* A server that conditioned on other prompt ids than the request's (a BOS
	 * added): the trajectory holds the server's, whose logprobs they are,
	 * for vLLM and SGLang alike. */
	const char *sg = "{\"request\":{\"input_ids\":[5,6]},\"response\":{\"meta_info\":{\"id\":\"s\","
			 "\"prompt_tokens\":3,\"input_token_logprobs\":[[null,1,null],[-1,5,null],[-1,6,null]],"
			 "\"output_token_logprobs\":[[-1,7,null]]}}}";
	r = parse(sg, COLLECT_AUTO, &L, &e);
	ok(r == 0 && L.groups[0].trajs[0].n_prompt == 3 && L.groups[0].trajs[0].prompt_tokens[0] == 1 &&
		   L.prompt_differs == 1,
	   "sglang: the response's prompt ids are stored, not the request's, and counted (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	const char *vl = "{\"request\":{\"prompt\":[5,6]},\"response\":{\"id\":\"v\",\"choices\":[{\"token_ids\":[7],"
			 "\"prompt_token_ids\":[1,5,6],\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"x\"]}}]}}";
	r = parse(vl, COLLECT_AUTO, &L, &e);
	ok(r == 0 && L.groups[0].trajs[0].n_prompt == 3 && L.groups[0].trajs[0].prompt_tokens[0] == 1 &&
		   L.prompt_differs == 1,
	   "vllm: the response's prompt ids are stored, not the request's, and counted (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	const char *trl = "{\"request\":{\"prompts\":[[5,6]]},\"response\":{\"prompt_ids\":[[1,5,6]],"
			  "\"completion_ids\":[[7],[8]],\"logprobs\":[[-1],[-1]]}}";
	r = parse(trl, COLLECT_AUTO, &L, &e);
	ok(r == 0 && L.groups[0].trajs[1].n_prompt == 3 && L.prompt_differs == 2,
	   "trl: likewise, each completion counted (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	const char *same = "{\"request\":{\"prompt\":[1,5,6]},\"response\":{\"id\":\"v\",\"choices\":[{\"token_ids\":[7],"
			   "\"prompt_token_ids\":[1,5,6],\"logprobs\":{\"token_logprobs\":[-1],\"tokens\":[\"x\"]}}]}}";
	r = parse(same, COLLECT_AUTO, &L, &e);
	ok(r == 0 && L.prompt_differs == 0, "the same ids in request and response: nothing counted (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
}

static void test_detect(void)
{
	struct collect_line L;
	struct err e = { 0 };
	ok(parse("{\"x\":1}", COLLECT_AUTO, &L, &e) < 0 && strstr(e.msg, "not a rollout in any known format"),
	   "an unknown object: %s", e.msg);
	ok(parse("{\"a\":1} x", COLLECT_AUTO, &L, &e) < 0 &&
		   strcmp(e.msg, "not valid JSON (text after the value, near byte 9)") == 0,
	   "trailing garbage, its byte named: %s", e.msg);
	ok(parse("{\"choices\":[]}", COLLECT_SGLANG, &L, &e) < 0 && strstr(e.msg, "no meta_info"),
	   "a forced format is not second-guessed: %s", e.msg);
	const char *sg = "{\"meta_info\":{\"output_token_logprobs\":[[-1,5,null]],\"prompt_tokens\":1,"
			 "\"input_token_logprobs\":[[null,4,null]],\"weight_version\":\"7\"}}";
	ok(parse(sg, COLLECT_AUTO, &L, &e) == 0 && L.format == COLLECT_SGLANG && L.groups[0].trajs[0].prompt_tokens[0] == 4 &&
		   L.groups[0].trajs[0].policy_version == 7,
	   "SGLang: prompt ids from input_token_logprobs, policy_version from weight_version (%s)", e.msg);
	collect_line_free(&L);
	ok(parse("{\"input_ids\":[1],\"position_ids\":[0]}", COLLECT_AUTO, &L, &e) < 0 && strstr(e.msg, "micro-batch"),
	   "a micro-batch is refused: %s", e.msg);
}

struct sink {
	int64_t gids[16];
	uint32_t sizes[16];
	int n;
};

static int keep(void *ctx, struct group *g, struct err *e)
{
	struct sink *s = ctx;
	if (s->n < 16) {
		s->gids[s->n] = g->group_id.num;
		s->sizes[s->n++] = g->n;
	}
	return 0;
}

/* Every group a collector emits, printed as grpo-cat --json prints it, and
 * each refused line's message: what a run of these lines gives. */
struct transcript {
	struct buf b;
};

static int print_group(void *ctx, struct group *g, struct err *e)
{
	(void)e;
	return json_print_group(&((struct transcript *)ctx)->b, g);
}

static const char *run_lines(struct transcript *t, const struct collect_opts *o, const char *const *lines, int n)
{
	struct collect c;
	struct err e = { 0 };
	buf_free(&t->b);
	collect_init(&c, o, print_group, t);
	for (int i = 0; i < n; i++)
		if (collect_feed(&c, lines[i], strlen(lines[i]), &e) != 0)
			buf_printf(&t->b, "line %d: %s\n", i + 1, e.msg);
	if (collect_end_input(&c, &e) < 0)
		buf_printf(&t->b, "end: %s\n", e.msg);
	collect_free(&c);
	buf_put_u8(&t->b, 0);
	return (const char *)t->b.data;
}

static void test_collector(void)
{
	struct collect_opts o = { .format = COLLECT_AUTO, .step = 5, .temperature = 1.0f, .vocab_size = 100 };
	struct sink s = { 0 };
	struct collect c;
	struct err e = { 0 };
	collect_init(&c, &o, keep, &s);
	const char *l1 = "{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"group_id\":9}\n";
	const char *l2 = "{\"prompt_tokens\":[1],\"response_tokens\":[3],\"logprobs\":[-1]}";
	const char *l3 = "{\"prompt_tokens\":[1],\"response_tokens\":[4],\"logprobs\":[-2],\"group_id\":9}";
	const char *big = "{\"prompt_tokens\":[1],\"response_tokens\":[100],\"logprobs\":[-2]}";
	ok(collect_feed(&c, l1, strlen(l1), &e) == 0 && collect_feed(&c, l2, strlen(l2), &e) == 0 &&
		   collect_feed(&c, l3, strlen(l3), &e) == 0 && collect_feed(&c, "  \n", 3, &e) == 0,
	   "lone trajectories are taken");
	ok(collect_feed(&c, big, strlen(big), &e) == -1 &&
		   strcmp(e.msg, "trajectory 0: response_tokens[0] is 100, not below --vocab-size 100") == 0,
	   "--vocab-size bounds token ids: %s", e.msg);
	is_int(s.n, 0, "lone trajectories wait for the end of the input");
	ok(collect_end_input(&c, &e) == 0, "end of input");
	ok(s.n == 2 && s.gids[0] == 9 && s.sizes[0] == 2 && s.sizes[1] == 1 && s.gids[1] >= 0 && s.gids[1] < (1ll << 52),
	   "group_id 9 gathers two, the other is a group of one with a 52-bit id");
	int64_t first = s.gids[1];
	collect_free(&c);
	s.n = 0;
	collect_init(&c, &o, keep, &s);
	collect_feed(&c, l2, strlen(l2), &e);
	collect_end_input(&c, &e);
	ok(s.n == 1 && s.gids[0] == first, "ids are derived from the line: the same line, the same id");
	collect_free(&c);
}

struct count {
	uint64_t groups, trajs;
	int bad;
};

static int count(void *ctx, struct group *g, struct err *e)
{
	struct count *k = ctx;
	k->bad |= g->n != 2 || g->group_id.num != (int64_t)k->groups;
	k->groups++;
	k->trajs += g->n;
	return 0;
}

/* Lone trajectories of 100,000 groups, members apart (a server's
 * completion order): every line looked through all the groups of the input
 * so far for its own, some 10^10 comparisons; they take seconds now. */
static void test_many_lone(void)
{
	enum { N = 100000 };
	struct collect_opts o = { .format = COLLECT_AUTO, .temperature = 1.0f };
	struct count k = { 0 };
	struct collect c;
	struct err e = { 0 };
	char line[160];
	int r = 0;
	clock_t t0 = clock();
	collect_init(&c, &o, count, &k);
	for (int pass = 0; pass < 2 && r == 0; pass++)
		for (int g = 0; g < N && r == 0; g++) {
			snprintf(line, sizeof line, "{\"prompt_tokens\":[1],\"response_tokens\":[%d],\"logprobs\":[-1],"
				 "\"group_id\":%d}", pass + 2, g);
			r = collect_feed(&c, line, strlen(line), &e);
		}
	r = r == 0 ? collect_end_input(&c, &e) : r;
	double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
	collect_free(&c);
	ok(r == 0 && k.groups == N && k.trajs == 2 * N && !k.bad, "%d groups of two lone trajectories gathered (%s)", N,
	   e.msg);
	/* said, not asserted (a time bound fails on a slow machine) */
	diag("gathered in %.2f s of CPU", sec);
}

/* What an importer made of a line, printed: its result, message and groups. */
static char *describe(const char *s, size_t n, enum collect_format f, int ref)
{
	struct collect_line L;
	struct err e = { 0 };
	struct buf b = { 0 };
	int r = ref ? collect_parse_line_ref(s, n, f, &L, &e) : collect_parse_line(s, n, f, &L, &e);
	if (r < 0)
		buf_printf(&b, "refused: %s", e.msg);
	else {
		buf_printf(&b, "format %d, lone %d, id %s, answer %s\n", (int)L.format, L.lone, L.id ? L.id : "-",
			   L.answer ? L.answer : "-");
		for (uint32_t k = 0; k < L.n_groups; k++)
			json_print_group(&b, &L.groups[k]);
		collect_line_free(&L);
	}
	buf_put_u8(&b, 0);
	return (char *)b.data;
}

/* 0 when both readers make the same of a line; else prints how they differ. */
static int same_import(const char *s, size_t n, enum collect_format f, int quiet)
{
	char *a = describe(s, n, f, 1), *b = describe(s, n, f, 0);
	int differ = strcmp(a, b) != 0;
	if (differ && !quiet)
		printf("# %.*s (format %d)\n#   reference %.300s\n#   jsonpick  %.300s\n", (int)(n > 200 ? 200 : n), s,
		       (int)f, a, b);
	free(a);
	free(b);
	return differ;
}

static void test_reference(void)
{
	const char *top = getenv("GRPO_TOP");
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/collect", top ? top : ".");
	DIR *d = opendir(dir);
	struct dirent *de;
	long lines = 0, cases = 0, bad = 0;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "SOURCES") == 0 || strstr(de->d_name, ".expected"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "r");
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		while (f && (len = getline(&line, &cap, f)) > 0) {
			size_t n = (size_t)len;
			while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				n--;
			lines++;
			/* every format, forced or detected, and the line cut short */
			for (int fmt = COLLECT_AUTO; fmt <= COLLECT_ATROPOS; fmt++, cases++)
				bad += same_import(line, n, (enum collect_format)fmt, bad > 3);
			for (size_t k = 1; k < n; k += 7, cases++)
				bad += same_import(line, k, COLLECT_AUTO, bad > 3);
			/* and corrupted: a number made a string, null or another number, a list cut */
			char *m = malloc(n);
			for (size_t i = 0; i < n; i++)
				for (const char *c = "\"]}n0-x"; *c; c++, cases++) {
					memcpy(m, line, n);
					m[i] = *c;
					bad += same_import(m, n, COLLECT_AUTO, bad > 3);
				}
			free(m);
		}
		free(line);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	ok(lines > 30 && bad == 0, "%ld lines of tests/data/collect, %ld cases (whole, cut short, corrupted): the importers make the same groups "
	   "and messages through jsonpick as through cJSON's whole tree (%ld differ)", lines, cases, bad);
}


/* A whole file's bytes as a string (malloc'd), or NULL. */
static char *slurp(const char *path)
{
	struct buf b = { 0 };
	struct err e = { 0 };
	return buf_read_file(&b, path, &e) < 0 ? NULL : (char *)b.data;   /* NUL-terminated */
}

/* collect.t's exact imports, in-process: each server format's fixture run
 * through a collector as grpo-collect --step 3 runs it gives exactly its
 * .expected (every id, token, logprob and finish reason as grpo-cat --json
 * prints them). A unit test as well as collect.t's, so that a mutation
 * sweep, which leaves out collect.t for its time, still reads each format
 * back whole. */
static void test_fixtures_exact(void)
{
	static const char *const names[] = { "vllm-completions", "vllm-chat", "vllm-generate", "vllm-demo",
					      "vllm-trl", "vllm-ids", "sglang", "atropos", "atropos-overrides" };
	const char *top = getenv("GRPO_TOP");
	struct collect_opts o = { .format = COLLECT_AUTO, .step = 3, .temperature = 1.0f };
	struct transcript t = { 0 };
	char path[4200];
	for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
		snprintf(path, sizeof path, "%s/tests/data/collect/%s.jsonl", top ? top : ".", names[k]);
		char *in = slurp(path);
		snprintf(path, sizeof path, "%s/tests/data/collect/%s.expected", top ? top : ".", names[k]);
		char *want = slurp(path);
		const char *lines[64];
		int n = 0;
		for (char *s = in ? strtok(in, "\n") : NULL; s && n < 64; s = strtok(NULL, "\n"))
			lines[n++] = s;
		const char *got = in && want ? run_lines(&t, &o, lines, n) : "(no fixture)";
		ok(want && strcmp(got, want) == 0, "%s: the groups are exactly %s.expected", names[k], names[k]);
		if (!want || strcmp(got, want) != 0)
			diag("got %.600s", got);
		free(in);
		free(want);
	}
	buf_free(&t.b);
}

/* parse, the error cleared first: a message shown beside a passing check is
 * its own line's, never an earlier one's. */
static int parse_fresh(const char *s, struct collect_line *L, struct err *e)
{
	*e = (struct err){ 0 };
	return parse(s, COLLECT_AUTO, L, e);
}

/* What the importers' tests above leave open, each found by a mutant that
 * survived them (tools/mutants.md, ## import). */
static void test_import_edges(void)
{
	struct collect_line L;
	struct err e = { 0 };
	/* a batch of one prompt, [[5,6]], n = 2: both choices get its ids */
	const char *one =
		"{\"request\":{\"prompt\":[[5,6]],\"n\":2,\"logprobs\":0},\"response\":{\"id\":\"b\",\"choices\":["
		"{\"token_ids\":[7],\"logprobs\":{\"token_logprobs\":[-1]}},"
		"{\"token_ids\":[8],\"logprobs\":{\"token_logprobs\":[-2]}}]}}";
	int r = parse_fresh(one, &L, &e);
	ok(r == 0 && L.n_groups == 1 && L.groups[0].n == 2 && L.groups[0].trajs[1].n_prompt == 2 &&
		   L.groups[0].trajs[1].prompt_tokens[0] == 5 && L.groups[0].trajs[1].prompt_tokens[1] == 6,
	   "vllm: a batch of one prompt ([[5,6]]) gives its ids to each choice (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	/* the demo server's logprob at fault is named by its own index */
	const char *demo = "{\"prompt_token_ids\":[1],\"token_ids\":[[7,8]],\"logprobs\":[[[{\"7\":-1}],[{\"8\":\"x\"}]]]}";
	ok(parse_fresh(demo, &L, &e) < 0 && strcmp(e.msg, "logprobs[0][1]: expected a number") == 0,
	   "vllm demo: a logprob that is no number, named by its index: %s", e.msg);
	/* TRL: a completion of max_tokens 1 stopped at the limit */
	const char *trl1 = "{\"request\":{\"prompts\":[[1]],\"max_tokens\":1},\"response\":{\"prompt_ids\":[[1]],"
			   "\"completion_ids\":[[7]],\"logprobs\":[[-1]]}}";
	r = parse_fresh(trl1, &L, &e);
	ok(r == 0 && L.groups[0].trajs[0].finish_reason && strcmp(L.groups[0].trajs[0].finish_reason, "length") == 0,
	   "trl: one token at max_tokens 1 is \"length\" (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	/* TRL: logprob_token_ids null is none; a count other than the completions' is refused */
	const char *lpnull = "{\"prompt_ids\":[[1]],\"completion_ids\":[[7],[8]],\"logprobs\":[[-1],[-2]],"
			     "\"logprob_token_ids\":null}";
	r = parse_fresh(lpnull, &L, &e);
	ok(r == 0 && L.groups[0].n == 2 && L.groups[0].trajs[1].logprobs[0] == -2.0f,
	   "trl: \"logprob_token_ids\": null is taken as none (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	const char *lpone = "{\"prompt_ids\":[[1]],\"completion_ids\":[[7],[8]],\"logprobs\":[[-1],[-2]],"
			    "\"logprob_token_ids\":[[[7]]]}";
	ok(parse_fresh(lpone, &L, &e) < 0 &&
		   strcmp(e.msg, "logprob_token_ids: expected 2 lists, one per completion") == 0,
	   "trl: one logprob_token_ids list for two completions is refused: %s", e.msg);
	/* TRL: a request of other prompts than the response's (two sent, one
	 * answered) cannot be paired with them: nothing counted as differing */
	const char *other = "{\"request\":{\"prompts\":[[5,6],[9]]},\"response\":{\"prompt_ids\":[[1,5,6]],"
			    "\"completion_ids\":[[7]],\"logprobs\":[[-1]]}}";
	r = parse_fresh(other, &L, &e);
	ok(r == 0 && L.groups[0].trajs[0].n_prompt == 3 && L.prompt_differs == 0,
	   "trl: a request of 2 prompts for a response of 1 is not compared with it (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);

	/* sglang: a batch without sampling_params.n splits its members evenly;
	 * each group is named after its first member's id */
	const char *even =
		"{\"request\":{\"input_ids\":[[1,2],[4]]},\"response\":["
		"{\"meta_info\":{\"id\":\"a\",\"output_token_logprobs\":[[-0.5,7,null]]}},"
		"{\"meta_info\":{\"id\":\"b\",\"output_token_logprobs\":[[-0.25,8,null]]}},"
		"{\"meta_info\":{\"id\":\"c\",\"output_token_logprobs\":[[-0.5,9,null]]}},"
		"{\"meta_info\":{\"id\":\"d\",\"output_token_logprobs\":[[-0.25,10,null]]}}]}";
	r = parse_fresh(even, &L, &e);
	ok(r == 0 && L.n_groups == 2 && L.groups[0].n == 2 && L.groups[1].n == 2 &&
		   L.groups[1].trajs[0].prompt_tokens[0] == 4 && L.groups[1].trajs[1].response_tokens[0] == 10,
	   "sglang: 4 members for 2 prompts without n: two groups of 2, prompt by prompt (%s)", e.msg);
	ok(r == 0 && L.groups[0].group_id.str && strcmp(L.groups[0].group_id.str, "a") == 0 &&
		   L.groups[1].group_id.str && strcmp(L.groups[1].group_id.str, "c") == 0,
	   "sglang: each group is named after its first member's id (a, c)");
	if (r == 0)
		collect_line_free(&L);
	/* sglang: input_token_logprobs short of the whole prompt (logprob_start_len
	 * > 0) are not the prompt; the request's ids are */
	const char *part = "{\"request\":{\"input_ids\":[5,6,7]},\"response\":{\"meta_info\":{\"id\":\"p\","
			   "\"prompt_tokens\":3,\"input_token_logprobs\":[[-1,6,null],[-1,7,null]],"
			   "\"output_token_logprobs\":[[-1,8,null]]}}}";
	r = parse_fresh(part, &L, &e);
	ok(r == 0 && L.groups[0].trajs[0].n_prompt == 3 && L.groups[0].trajs[0].prompt_tokens[0] == 5 &&
		   L.prompt_differs == 0,
	   "sglang: input_token_logprobs over part of the prompt leave the request's ids (%s)", e.msg);
	if (r == 0)
		collect_line_free(&L);
	const char *badreq = "{\"request\":{\"input_ids\":[5,\"x\"]},\"response\":{\"meta_info\":{\"id\":\"q\","
			     "\"output_token_logprobs\":[[-1,8,null]]}}}";
	ok(parse_fresh(badreq, &L, &e) < 0 && strstr(e.msg, "request input_ids"),
	   "sglang: a request's input_ids that are not ids are refused: %s", e.msg);
	/* sglang: weight_version in decimal */
	const char *wv = "{\"request\":{\"input_ids\":[5]},\"response\":{\"meta_info\":{\"id\":\"w\","
			 "\"weight_version\":\"19\",\"output_token_logprobs\":[[-1,8,null]]}}}";
	r = parse_fresh(wv, &L, &e);
	ok(r == 0 && L.groups[0].trajs[0].policy_version == 19, "sglang: weight_version \"19\" is policy_version 19 (%s)",
	   e.msg);
	if (r == 0)
		collect_line_free(&L);

	/* atropos: a member without prompt (no leading -100); a multi-turn
	 * response whose tool output (-100 inside it) is untrained with logprob
	 * 0; ref_logprobs and a per-token advantages row read at the response's
	 * positions (the prompt's entries are placeholders) */
	const char *turns = "{\"tokens\":[[5,6],[1,2,3,4]],\"masks\":[[5,6],[-100,2,-100,4]],\"scores\":[1,0],"
			    "\"inference_logprobs\":[[-0.5,-0.25],[1,-1,1,-2]],\"ref_logprobs\":[[-0.75,-0.125],[1,-3,1,-4]],"
			    "\"advantages\":[[0.5,0.5],[9,0.25,7,0.25]]}";
	r = parse_fresh(turns, &L, &e);
	ok(r == 0 && L.groups[0].n == 2, "atropos: a group of a prompt-less member and a multi-turn one (%s)", e.msg);
	if (r == 0) {
		struct traj *a = &L.groups[0].trajs[0], *b = &L.groups[0].trajs[1];
		ok(a->n_prompt == 0 && a->n_response == 2 && a->response_tokens[0] == 5 && a->response_mask == NULL &&
			   a->logprobs[0] == -0.5f && a->ref_logprobs[1] == -0.125f && a->advantage == 0.5f,
		   "atropos: a member without -100 masks has an empty prompt and all its tokens trained");
		ok(b->n_prompt == 1 && b->n_response == 3 && b->response_tokens[0] == 2 && b->response_tokens[2] == 4 &&
			   b->response_mask && b->response_mask[0] == 1 && b->response_mask[1] == 0 && b->response_mask[2] == 1,
		   "atropos: a -100 mask inside the response is an untrained token");
		ok(b->logprobs[0] == -1.0f && b->logprobs[1] == 0.0f && b->logprobs[2] == -2.0f &&
			   b->ref_logprobs[0] == -3.0f && b->ref_logprobs[1] == 0.0f && b->ref_logprobs[2] == -4.0f &&
			   b->advantage == 0.25f,
		   "atropos: logprobs and ref_logprobs at the response's positions, 0 where untrained; the advantages "
		   "row's value over the trained tokens");
		collect_line_free(&L);
	}
	const char *varies = "{\"tokens\":[[1,2,3]],\"masks\":[[-100,2,3]],\"scores\":[1],"
			     "\"advantages\":[[0,0.5,0.75]]}";
	ok(parse_fresh(varies, &L, &e) < 0 &&
		   strcmp(e.msg, "advantages[0] varies over the trained tokens (0.75 at 2, 0.5 before); a trajectory "
				 "holds one advantage") == 0,
	   "atropos: an advantages row that varies over the trained tokens is refused: %s", e.msg);
	const char *rows = "{\"tokens\":[[1,2],[1,3]],\"masks\":[[-100,2]],\"scores\":[1,0]}";
	ok(parse_fresh(rows, &L, &e) < 0 && strcmp(e.msg, "masks has 1 rows, tokens 2") == 0,
	   "atropos: a masks row short is refused: %s", e.msg);
	const char *badmask = "{\"tokens\":[[1,2],[1,3]],\"masks\":[[-100,2],[-100,\"x\"]],\"scores\":[1,0]}";
	ok(parse_fresh(badmask, &L, &e) < 0 && strncmp(e.msg, "masks[1][1]: ", 13) == 0,
	   "atropos: a mask that is no integer, named by member and position: %s", e.msg);
	const char *shortmask = "{\"tokens\":[[1,2]],\"masks\":[[-100]],\"scores\":[1]}";
	ok(parse_fresh(shortmask, &L, &e) < 0 && strcmp(e.msg, "masks[0] has 1 entries, tokens[0] 2") == 0,
	   "atropos: a masks row shorter than its tokens row is refused, saying so: %s", e.msg);
}

/* Sampler logprobs are needed where there is a response to have them: an
 * empty response (a server that stopped at once) is taken without. */
static void test_missing_logprobs(void)
{
	struct collect_opts o = { .format = COLLECT_AUTO, .temperature = 1.0f };
	struct transcript t = { 0 };
	const char *lines[] = {
		"{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[]}]}",
		"{\"group_id\":2,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[],\"logprobs\":[]},"
		"{\"prompt_tokens\":[1],\"response_tokens\":[2]}]}",
		"{\"prompt_tokens\":[1],\"response_tokens\":[3],\"group_id\":3}",
	};
	const char *got = run_lines(&t, &o, lines, 3);
	ok(strncmp(got, "{\"group_id\":1,", 14) == 0 && strstr(got, "\"group_id\":2,") == NULL &&
		   strstr(got, "\nline 2: trajectory 1: no sampler logprobs (Atropos: no inference_logprobs); "
			  "--allow-missing-logprobs takes rollouts without them\n") &&
		   strstr(got, "\"group_id\":3,") == NULL &&
		   strstr(got, "\nline 3: trajectory 0: no sampler logprobs (Atropos: no inference_logprobs); "
			  "--allow-missing-logprobs takes rollouts without them\n"),
	   "an empty response without logprobs is taken, a response of one token refused, in a group or alone");
	buf_free(&t.b);
}

static void test_collector_defaults(void)
{
	struct collect_answer keyed[] = { { "#1", "A1" }, { "#2", "A2" }, { "#3", "A3" }, { "#5", "A5" },
					       { "#7", "A7" }, { "=12", "A12" }, { "=c", "AC" } };
	struct collect_answers answers = { keyed, 7 };
	struct collect_opts o = { .format = COLLECT_AUTO, .step = 5, .temperature = 0.75f, .vocab_size = 100,
				  .answers = &answers };
	struct transcript t = { 0 };
	const char *lines[] = {
		"{\"group_id\":\"g\",\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		"\"answer\":\"own\"},{\"prompt_tokens\":[1],\"response_tokens\":[3],\"logprobs\":[-1],\"policy_version\":2,"
		"\"temperature\":0.5,\"sequence_id\":11}]}",
		"{\"prompt_tokens\":[4],\"response_tokens\":[5],\"logprobs\":[-1],\"group_id\":\"L\"}",
		"{\"prompt_tokens\":[6],\"response_tokens\":[7],\"logprobs\":[-1],\"temperature\":-1,\"group_id\":\"M\"}",
		"{\"prompt_tokens\":[8],\"response_tokens\":[9],\"logprobs\":[-1]}",
		"[{\"tokens\":[[1,2]],\"masks\":[[-100,2]],\"scores\":[1],\"inference_logprobs\":[[1,-1]]},"
		"{\"tokens\":[[3,400]],\"masks\":[[-100,400]],\"scores\":[1],\"inference_logprobs\":[[1,-1]]}]",
		"{\"prompt_tokens\":[4],\"response_tokens\":[10],\"logprobs\":[-2],\"group_id\":\"L\"}",
		"{\"prompt_tokens\":[6],\"response_tokens\":[11],\"logprobs\":[-1],\"group_id\":\"M\"}",
		"[{\"tokens\":[[1,2]],\"masks\":[[-100,2]],\"scores\":[1],\"inference_logprobs\":[[1,-1]]},"
		"{\"tokens\":[[3,4]],\"masks\":[[-100,4]],\"scores\":[0],\"inference_logprobs\":[[1,-1]]}]",
		"{\"answer\":\"W\",\"request\":{\"prompt\":[1]},\"response\":{\"id\":\"c\",\"choices\":[{\"logprobs\":"
		"{\"token_logprobs\":[-1],\"tokens\":[\"token_id:5\"]}}]}}",
		"{\"answer\":\"W\",\"request\":{\"prompt\":[1]},\"response\":{\"id\":\"d\",\"choices\":[{\"logprobs\":"
		"{\"token_logprobs\":[-1],\"tokens\":[\"token_id:5\"]}}]}}",
		"{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1]}]}",
		NULL,
	};
	lines[11] = lines[0];   /* a repeat, dropped */
	/* ids by hand (FNV-1a of the line and the group's index, top 52 bits;
	 * members by splitmix64 of the group's id and place); prompt indexes
	 * 0 g, 1 L, 2 M (kept by its refused first line), 3 the lone line
	 * without group_id, 4 and 5 the refused pair, 6 and 7 the good pair;
	 * --answers by id before index, a native group's id its group_id */
	const char *want =
		"{\"group_id\":\"g\",\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],"
		"\"logprobs\":[-1],\"answer\":\"own\",\"sequence_id\":\"g-0\",\"group_id\":\"g\","
		"\"policy_version\":5,\"temperature\":0.75},{\"prompt_tokens\":[1],\"response_tokens\":[3],"
		"\"logprobs\":[-1],\"sequence_id\":11,\"group_id\":\"g\",\"policy_version\":2,"
		"\"temperature\":0.5}]}\n"
		"line 3: trajectory 0: temperature -1 is not positive and finite\n"
		"line 5: group 1: trajectory 0: response_tokens[0] is 400, not below --vocab-size 100\n"
		"{\"group_id\":1608149059680977,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],"
		"\"logprobs\":[-1],\"sequence_id\":257597111306916,\"group_id\":1608149059680977,"
		"\"policy_version\":5,\"temperature\":0.75,\"rewards\":[1],\"reward_names\":[\"score\"],"
		"\"advantages\":1,\"successes\":[1]}]}\n"
		"{\"group_id\":4422532689567277,\"trajectories\":[{\"prompt_tokens\":[3],\"response_tokens\":[4],"
		"\"logprobs\":[-1],\"answer\":\"A7\",\"sequence_id\":3910760364463681,"
		"\"group_id\":4422532689567277,\"policy_version\":5,\"temperature\":0.75,\"rewards\":[0],"
		"\"reward_names\":[\"score\"],\"advantages\":0,\"successes\":[0]}]}\n"
		"{\"group_id\":\"c\",\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[5],"
		"\"logprobs\":[-1],\"answer\":\"AC\",\"sequence_id\":\"c-0\",\"group_id\":\"c\","
		"\"policy_version\":5,\"temperature\":0.75}]}\n"
		"{\"group_id\":\"d\",\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[5],"
		"\"logprobs\":[-1],\"answer\":\"W\",\"sequence_id\":\"d-0\",\"group_id\":\"d\","
		"\"policy_version\":5,\"temperature\":0.75}]}\n"
		"{\"group_id\":12,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],"
		"\"answer\":\"A12\",\"sequence_id\":3427394337658301,\"group_id\":12,\"policy_version\":5,"
		"\"temperature\":0.75}]}\n"
		"{\"group_id\":\"L\",\"trajectories\":[{\"prompt_tokens\":[4],\"response_tokens\":[5],"
		"\"logprobs\":[-1],\"answer\":\"A1\",\"sequence_id\":\"L-0\",\"group_id\":\"L\","
		"\"policy_version\":5,\"temperature\":0.75},{\"prompt_tokens\":[4],\"response_tokens\":[10],"
		"\"logprobs\":[-2],\"answer\":\"A1\",\"sequence_id\":\"L-1\",\"group_id\":\"L\","
		"\"policy_version\":5,\"temperature\":0.75}]}\n"
		"{\"group_id\":\"M\",\"trajectories\":[{\"prompt_tokens\":[6],\"response_tokens\":[11],"
		"\"logprobs\":[-1],\"answer\":\"A2\",\"sequence_id\":\"M-0\",\"group_id\":\"M\","
		"\"policy_version\":5,\"temperature\":0.75}]}\n"
		"{\"group_id\":677278956217309,\"trajectories\":[{\"prompt_tokens\":[8],\"response_tokens\":[9],"
		"\"logprobs\":[-1],\"answer\":\"A3\",\"sequence_id\":824849144811014,\"group_id\":677278956217309,"
		"\"policy_version\":5,\"temperature\":0.75}]}\n";
	const char *got = run_lines(&t, &o, lines, (int)(sizeof lines / sizeof *lines));
	if (!ok(strcmp(got, want) == 0, "a run's groups exactly: ids, policy versions, temperatures and answers "
	   "assigned, lone lines gathered, a bad line refused whole and named, a repeat dropped"))
		for (const char *l = got; *l;) {
			size_t k = strcspn(l, "\n");
			diag("got %.*s", (int)k, l);
			l += k + (l[k] != 0);
		}
	buf_free(&t.b);
}

static int refuse(void *ctx, struct group *g, struct err *e)
{
	(void)ctx;
	return err_set(e, "disk full at group %lld", (long long)g->group_id.num);
}

/* What -v reports (lines, groups, trajectories, tokens, formats), and an
 * emit function that fails: -2 with its message. */
static void test_counts(void)
{
	struct collect_opts o = { .format = COLLECT_AUTO, .temperature = 1.0f };
	struct sink s = { 0 };
	struct collect c;
	struct err e = { 0 };
	const char *lines[] = {
		"{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[2,3],\"logprobs\":[-1,-1]},"
		"{\"prompt_tokens\":[1],\"response_tokens\":[4,5,6],\"logprobs\":[-1,-1,-1]}]}",
		"{\"prompt_tokens\":[1],\"response_tokens\":[7],\"logprobs\":[-1],\"group_id\":2}",
		"{\"prompt_tokens\":[1],\"response_tokens\":[8,9,10,11],\"logprobs\":[-1,-1,-1,-1],\"group_id\":2}",
		"{\"tokens\":[[1,2]],\"masks\":[[-100,2]],\"scores\":[1],\"inference_logprobs\":[[1,-1]]}",
	};
	int r = 0;
	collect_init(&c, &o, keep, &s);
	for (int i = 0; i < 4 && r == 0; i++)
		r = collect_feed(&c, lines[i], strlen(lines[i]), &e);
	r = r == 0 ? collect_end_input(&c, &e) : r;
	ok(r == 0 && c.lines == 4 && c.groups == 3 && c.trajs == 5 && c.tokens == 11 &&
		   c.formats == (1u << COLLECT_NATIVE | 1u << COLLECT_ATROPOS),
	   "4 lines, 3 groups, 5 trajectories, 11 tokens, native and atropos (%llu, %llu, %llu, %llu, %#x)",
	   (unsigned long long)c.lines, (unsigned long long)c.groups, (unsigned long long)c.trajs,
	   (unsigned long long)c.tokens, c.formats);
	collect_free(&c);
	collect_init(&c, &o, refuse, NULL);
	r = collect_feed(&c, lines[0], strlen(lines[0]), &e);
	ok(r == -2 && strcmp(e.msg, "disk full at group 1") == 0, "an emit that fails: -2, its message (%d, %s)", r,
	   e.msg);
	collect_free(&c);
}

int main(void)
{
	test_reference();
	test_nonfinite();
	test_vllm();
	test_batch_pairing();
	test_batch_without_n();
	test_native_group_id();
	test_answers_file();
	test_atropos();
	test_wrapper();
	test_detect();
	test_collector();
	test_many_lone();
	test_collector_defaults();
	test_fixtures_exact();
	test_import_edges();
	test_missing_logprobs();
	test_counts();
	return tap_done();
}
