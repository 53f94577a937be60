/*
 * test_rollout: prompts lines as grpo-collect --model reads them, and groups
 * sampled from a tiny random model: a prompt's samples do not depend on the
 * other prompts of its batch, each response's logprobs are the packed
 * forward's at the sampling temperature (what the trainer recomputes), and
 * ids, finish reasons and policy versions are recorded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/rollout.h"
#include "../tap.h"

enum { V = 32, G = 3, MAXTOK = 6 };

static void tiny(struct model *m)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	model_config_defaults(&c, MODEL_QWEN2);
	c.C = 16, c.I = 24, c.L = 2, c.NH = 4, c.NKV = 2, c.HS = 4, c.V = V, c.tied = 1, c.init_std = 0.5f;
	struct err e;
	if (model_create(m, &c, &e) < 0)
		exit(1);
	if (model_init_random(m, 11, &e) < 0)
		exit(1);
}

static int parse(const char *line, uint64_t row, struct rollout_prompt *p, struct err *e)
{
	return rollout_prompt_parse(line, strlen(line), NULL, NULL, V, row, p, e);
}

static void test_parse(void)
{
	struct rollout_prompt p;
	struct err e = { 0 };
	int r = parse("{\"prompt_tokens\": [3, 1, 4], \"answer\": 7}", 5, &p, &e);
	ok(r == 0 && p.n == 3 && p.tokens[2] == 4 && p.place == 5 && p.answer && !strcmp(p.answer, "7"),
	   "prompt_tokens and a numeric answer are read (%s)", e.msg);
	rollout_prompt_free(&p);
	static const struct {
		const char *line, *want;
	} bad[] = {
		{ "[1, 2]", "not a JSON object" },
		{ "{\"prompt_tokens\": [1]} {\"prompt_tokens\": [2]}", "not valid JSON (text after the value, near byte 24)" },
		{ "{\"prompt_tokens\": [1]} x", "not valid JSON (text after the value, near byte 24)" },
		{ "{\"prompt_tokens\": [1, 32]}", "prompt_tokens[1]: expected a token id in [0, 32)" },
		{ "{\"prompt_tokens\": [1.5]}", "prompt_tokens[0]: expected a token id in [0, 32)" },
		{ "{\"prompt_tokens\": []}", "prompt_tokens: empty" },
		{ "{\"prompt\": \"2+2=\"}", "prompt is text: the model has no tokenizer.json (give --tokenizer, or prompt_tokens)" },
		{ "{\"prompt\": \"x\", \"prompt_tokens\": [1]}", "expected exactly one of prompt, prompt_tokens or messages" },
		{ "{\"prompt_tokens\": [1], \"answer\": [1]}", "answer: expected a string or a number" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		e.msg[0] = 0;
		r = parse(bad[i].line, 0, &p, &e);
		ok(r < 0 && !strcmp(e.msg, bad[i].want), "refused: %s", bad[i].line);
		if (strcmp(e.msg, bad[i].want))
			diag("  got '%s'", e.msg);
	}
}

/* Same tokens and finish reasons, logprobs within tol (0: the same bits). */
static int same_group_tol(const struct group *a, const struct group *b, float tol)
{
	if (a->n != b->n)
		return 0;
	for (uint32_t j = 0; j < a->n; j++) {
		const struct traj *x = &a->trajs[j], *y = &b->trajs[j];
		if (x->n_response != y->n_response || strcmp(x->finish_reason, y->finish_reason) ||
		    memcmp(x->response_tokens, y->response_tokens, x->n_response * sizeof(int32_t)))
			return 0;
		for (uint32_t k = 0; k < x->n_response; k++)
			if (!(fabsf(x->logprobs[k] - y->logprobs[k]) <= tol))
				return 0;
	}
	return 1;
}

static int same_group(const struct group *a, const struct group *b)
{
	return same_group_tol(a, b, 0);
}

static void test_sample(void)
{
	struct model m;
	tiny(&m);
	struct err e = { 0 };
	struct rollout_prompt ps[2];
	parse("{\"prompt_tokens\": [3, 17, 5], \"answer\": \"x\"}", 0, &ps[0], &e);
	parse("{\"prompt_tokens\": [22, 9]}", 1, &ps[1], &e);
	int stop[] = { 0 };
	struct gen_params gp = { .temperature = 0.8f, .top_p = 1, .max_tokens = MAXTOK, .stop_ids = stop,
	                         .n_stop = 1, .seed = 42 };
	struct group both[2], alone[1], again[2];
	int r = rollout_sample(&m, NULL, ps, 2, G, &gp, 7, both, &e);
	ok(r == 0 && both[0].n == G && both[1].n == G, "two prompts, %d samples each (%s)", G, e.msg);
	r = rollout_sample(&m, NULL, &ps[1], 1, G, &gp, 7, alone, &e);
	/* a batch of another size may round the logits differently in the last bit */
	ok(r == 0 && same_group_tol(&both[1], &alone[0], 1e-5f),
	   "a prompt's samples are the same alone as beside another prompt");
	rollout_sample(&m, NULL, ps, 2, G, &gp, 7, again, &e);
	ok(same_group(&both[0], &again[0]) && same_group(&both[1], &again[1]), "same seed, same samples");
	int differ = 0;
	for (int j = 1; j < G; j++)
		differ |= !same_group(&(struct group){ .n = 1, .trajs = &both[0].trajs[0] },
		                      &(struct group){ .n = 1, .trajs = &both[0].trajs[j] });
	ok(differ, "the samples of one prompt differ from each other");

	/* ids, versions, finish reasons */
	int ids_ok = 1, fin_ok = 1;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < G; j++) {
			const struct traj *t = &both[i].trajs[j];
			ids_ok &= !t->group_id.str && t->group_id.num == i && !t->sequence_id.str &&
			          t->sequence_id.num == i * G + j && t->policy_version == 7 &&
			          both[i].group_id.num == i && t->n_prompt == ps[i].n;
			int stopped = t->n_response > 0 && t->response_tokens[t->n_response - 1] == 0;
			fin_ok &= stopped ? !strcmp(t->finish_reason, "stop")
			                  : !strcmp(t->finish_reason, "length") && t->n_response == MAXTOK;
		}
	ok(ids_ok, "group ids are prompt rows, sequence ids row * G + j, policy version recorded");
	ok(fin_ok, "a response ends in the stop token (stop) or at max_tokens (length)");
	ok(both[0].trajs[0].answer && !strcmp(both[0].trajs[0].answer, "x") && !both[1].trajs[0].answer,
	   "the answer is carried into the trajectories");
	is_float(both[0].trajs[0].temperature, 0.8f, 0, "the sampling temperature is recorded");

	/* the sampler's logprobs are the packed forward's at the temperature */
	int ids[256], lens[8], T = 0, nseq = 0;
	float temps[256], lp[256];
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < G; j++) {
			const struct traj *t = &both[i].trajs[j];
			memcpy(ids + T, t->prompt_tokens, t->n_prompt * sizeof(int));
			memcpy(ids + T + t->n_prompt, t->response_tokens, t->n_response * sizeof(int));
			lens[nseq++] = (int)(t->n_prompt + t->n_response);
			T += lens[nseq - 1];
		}
	for (int i = 0; i < T; i++)
		temps[i] = 0.8f;
	model_acts_alloc(&m, T, &e);
	r = model_forward(&m, ids, T, lens, nseq, temps, lp, NULL, &e);
	double worst = r == 0 ? 0 : INFINITY;
	for (int i = 0, off = 0; i < 2; i++)
		for (int j = 0; j < G; j++) {
			const struct traj *t = &both[i].trajs[j];
			for (uint32_t k = 0; k < t->n_response; k++)
				worst = fmax(worst, fabs(lp[off + t->n_prompt + k] - t->logprobs[k]));
			off += (int)(t->n_prompt + t->n_response);
		}
	ok(worst < 1e-4, "sampler logprobs equal the trainer's forward at the temperature (max |diff| %.2g)", worst);

	/* greedy: temperature 0 samples the argmax and records temperature 1 */
	struct group g0[1];
	gp.temperature = 0;
	rollout_sample(&m, NULL, ps, 1, 2, &gp, 0, g0, &e);
	ok(same_group_tol(&(struct group){ .n = 1, .trajs = &g0[0].trajs[0] },
	                  &(struct group){ .n = 1, .trajs = &g0[0].trajs[1] }, 1e-5f) &&
	       g0[0].trajs[0].temperature == 1.0f,
	   "greedy samples agree and record temperature 1");

	for (int i = 0; i < 2; i++) {
		group_free(&both[i]);
		group_free(&again[i]);
		rollout_prompt_free(&ps[i]);
	}
	group_free(&alone[0]);
	group_free(&g0[0]);
	model_free(&m);
}


/* Streams are keyed by place * G + j, not by a prompt's index in its batch:
 * the first sample of the prompt at place 1 with G = 3 draws from stream 3,
 * as the fourth of the same tokens at place 0 with G = 4 does. */
static void test_streams(void)
{
	struct model m;
	tiny(&m);
	struct err e = { 0 };
	struct rollout_prompt at1, at0;
	parse("{\"prompt_tokens\": [3, 17, 5]}", 1, &at1, &e);
	parse("{\"prompt_tokens\": [3, 17, 5]}", 0, &at0, &e);
	int stop[] = { 0 };
	struct gen_params gp = { .temperature = 0.8f, .top_p = 1, .max_tokens = MAXTOK, .stop_ids = stop,
	                         .n_stop = 1, .seed = 42 };
	struct group g3[1], g4[1];
	int r = rollout_sample(&m, NULL, &at1, 1, 3, &gp, 0, g3, &e);
	r |= rollout_sample(&m, NULL, &at0, 1, 4, &gp, 0, g4, &e);
	ok(r == 0 && same_group_tol(&(struct group){ .n = 1, .trajs = &g3[0].trajs[0] },
	                            &(struct group){ .n = 1, .trajs = &g4[0].trajs[3] }, 1e-5f),
	   "place 1, G 3, sample 0 is place 0, G 4, sample 3: both stream 3");
	ok(r == 0 && !same_group_tol(&(struct group){ .n = 1, .trajs = &g3[0].trajs[0] },
	                             &(struct group){ .n = 1, .trajs = &g4[0].trajs[0] }, 1e-5f),
	   "and not place 0's sample 0 (stream 0)");
	group_free(&g3[0]);
	group_free(&g4[0]);
	rollout_prompt_free(&at1);
	rollout_prompt_free(&at0);
	model_free(&m);
}

/* A walk of 5 from place 2 over a file of 3 rows (and a blank line) wraps:
 * rows 2, 0, 1, 2, 0 at places 2..6, each with its line and answer. */
static void test_walk(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/p.jsonl", dir);
	FILE *f = fopen(path, "w");
	fputs("{\"prompt_tokens\": [1], \"answer\": \"a\"}\n{\"prompt_tokens\": [2, 2]}\n\n"
	      "{\"prompt_tokens\": [3, 3, 3], \"answer\": 3}\n", f);
	fclose(f);
	struct rollout_prompt *p = NULL;
	struct err e = { 0 };
	int n = 0;
	uint64_t rows = 0;
	int r = rollout_prompts_load(path, NULL, NULL, V, 0, 2, 5, &p, &n, &rows, &e);
	static const uint32_t want_n[] = { 3, 1, 2, 3, 1 };
	static const uint64_t want_line[] = { 4, 1, 2, 4, 1 };
	static const char *const want_answer[] = { "3", "a", NULL, "3", "a" };
	int good = r == 0 && n == 5 && rows == 3;
	for (int k = 0; good && k < 5; k++)
		good = p[k].place == 2 + (uint64_t)k && p[k].n == want_n[k] && p[k].tokens[0] == (int32_t)want_n[k] &&
		       p[k].line == want_line[k] && (want_answer[k] ? p[k].answer && !strcmp(p[k].answer, want_answer[k])
		                                                    : !p[k].answer);
	ok(good, "a walk of 5 from place 2 over 3 rows: rows 2 0 1 2 0, places 2..6, lines and answers (%s)", e.msg);
	rollout_prompts_free(p, n);

	snprintf(path, sizeof path, "%s/none.jsonl", dir);
	char want[600];
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	r = rollout_prompts_load(path, NULL, NULL, V, 0, 0, 0, &p, &n, &rows, &e);
	if (!ok(r < 0 && !strcmp(e.msg, want) && !p && n == 0, "a missing prompts file is an error naming it"))
		diag("  got '%s'", e.msg);
	r = rollout_prompts_load(dir, NULL, NULL, V, 0, 0, 0, &p, &n, &rows, &e);
	if (!ok(r < 0 && strstr(e.msg, "s a directory") && !p, "a directory is an error, not an empty file"))
		diag("  got '%s'", e.msg);
	/* with KEEP_TEXT and no tokenizer, a text prompt is kept as its text */
	snprintf(path, sizeof path, "%s/text.jsonl", dir);
	shell("echo '{\"prompt\": \"2+2=\", \"answer\": 4}' > %s", path);
	e.msg[0] = 0;
	r = rollout_prompts_load(path, NULL, NULL, V, ROLLOUT_KEEP_TEXT, 0, 0, &p, &n, &rows, &e);
	ok(r == 0 && n == 1 && p[0].text && !strcmp(p[0].text, "2+2=") && !p[0].tokens && !strcmp(p[0].answer, "4"),
	   "with ROLLOUT_KEEP_TEXT and no tokenizer, a text prompt is kept as text (%s)", e.msg);
	rollout_prompts_free(p, n);
	/* a read that fails after some rows (a gzip file cut short) fails the load, not a part of the file */
	snprintf(path, sizeof path, "%s/cut.jsonl.gz", dir);
	shell("for i in 1 2 3 4 5 6 7 8; do echo '{\"prompt_tokens\": [1]}'; done | gzip -c | head -c 30 > %s", path);
	r = rollout_prompts_load(path, NULL, NULL, V, 0, 0, 0, &p, &n, &rows, &e);
	if (!ok(r < 0 && strstr(e.msg, "gzip") && !p, "a prompts file whose gzip stream is cut short is an error"))
		diag("  got %d '%s', %d prompts", r, e.msg, n);
}

/* The newest step_K (by number, in decimal) holding config.json; other names ignored. */
static void test_policy(const char *dir)
{
	if (shell("cd %s && mkdir -p q/step_2 q/step_19 q/last_70 q/step_50 && touch q/step_2/config.json "
	          "q/step_19/config.json q/last_70/config.json", dir) != 0) {
		ok(0, "making a policy queue in %s", dir);
		return;
	}
	char q[512], out[600], want[600];
	struct err e = { 0 };
	int64_t v = -1;
	snprintf(q, sizeof q, "%s/q", dir);
	snprintf(want, sizeof want, "%s/step_19", q);
	int r = rollout_policy_find(q, out, sizeof out, &v, &e);
	if (!ok(r == 0 && v == 19 && !strcmp(out, want), "step_19 is newest: not step_2, not last_70, not step_50 "
	        "(no config.json)"))
		diag("  got %d: %s, version %lld (%s)", r, out, (long long)v, e.msg);
	/* a path that just fits and one a byte too long for out */
	r = rollout_policy_at(want, 19, out, strlen(want) + 1, &e);
	ok(r == 0 && !strcmp(out, want), "rollout_policy_at names a pinned checkpoint that just fits");
	r = rollout_policy_at(want, 19, out, strlen(want), &e);
	ok(r < 0 && strstr(e.msg, "path too long"), "and refuses one a byte too long, not cut short");
}

/* ids of a prompt line through the real Qwen3 tokenizer (vocab: the model's size) equal want (n of them),
 * or, with err, it is refused with that message. */
static void encodes(const struct tokenizer *q, const enum chat_format *chat, uint32_t vocab, const char *line,
                    const int32_t *want, uint32_t n, const char *err, const char *what)
{
	struct rollout_prompt p;
	struct err e = { 0 };
	int r = rollout_prompt_parse(line, strlen(line), q, chat, vocab, 0, &p, &e);
	int good = err ? r < 0 && !strcmp(e.msg, err) : r == 0 && p.n == n && !memcmp(p.tokens, want, n * sizeof *want);
	if (!ok(good, "%s", what))
		diag("  got %d: %s", r, e.msg);
	if (r == 0)
		rollout_prompt_free(&p);
}

/* "prompt" and "messages" through a tokenizer and a chat format, checked
 * against the ids test_chat checks (Hugging Face's for Qwen3). */
static void test_text(void)
{
	const char *shared = getenv("GRPO_SHARED");
	char path[4096];
	struct err e = { 0 };
	snprintf(path, sizeof path, "%s/data/tokenizers/qwen3/tokenizer.json", shared ? shared : "../shared");
	struct tokenizer *q = tok_load(path, &e);
	if (!q) {
		diag("%s", e.msg);
		skip("prompts as text: no real Qwen3 tokenizer (export GRPO_SHARED)");
		return;
	}
	/* <|im_start|> 151644, "user" 872, "\n" 198, "Hello, world!" 9707 11 1879 0, <|im_end|> 151645, "assistant" 77091 */
	static const int32_t turn[] = { 151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151644, 77091, 198 };
	const enum chat_format qwen3 = CHAT_QWEN3;
	const uint32_t nt = sizeof turn / sizeof turn[0], V_Q = 151936;
	encodes(q, &qwen3, V_Q, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello, world!\"}]}", turn, nt, NULL,
	        "messages through the qwen3 format: one user turn, the assistant's opened");
	encodes(q, &qwen3, V_Q, "{\"prompt\": \"Hello, world!\"}", turn, nt, NULL, "a text prompt is that user turn");
	encodes(q, NULL, V_Q, "{\"prompt\": \"Hello, world!\"}", turn + 3, 4, NULL, "and without a format, its text's ids");
	encodes(q, NULL, V_Q, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}", NULL, 0,
	        "messages: needs a chat format (--chat)", "messages without a format are refused");
	encodes(q, &qwen3, 151645, "{\"prompt\": \"Hello, world!\"}", NULL, 0,
	        "the tokenizer gives id 151645, past the model's vocabulary of 151645",
	        "an id the tokenizer gives past the model's vocabulary (<|im_end|>) is refused");
	tok_free(q);
}

int main(void)
{
	test_parse();
	test_sample();
	test_streams();
	test_text();
	char dir[] = "/tmp/test_rollout.XXXXXX";
	if (!mkdtemp(dir))
		return ok(0, "mkdtemp"), tap_done();
	test_walk(dir);
	test_policy(dir);
	shell("rm -rf %s", dir);
	return tap_done();
}
