/*
 * test_reflp: reference logprobs of a group equal transformers' values
 * (tests/data/hf, five sequences at temperatures 0.7 to 1.3) and the model
 * core's for each sequence alone, however the group is split into passes
 * (--ref-tokens); a policy queue means its step_0; bad ids, a missing
 * prompt and a zero temperature are errors naming the group, the sequence
 * and the token. Then the passes themselves: as many whole sequences as
 * fit, in order (the last pass is left in struct reflp), and the tokens
 * counted; reflp_init over a model in memory; a group of empty
 * trajectories; a config.json that is a directory or no model's.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "../model_ref.h"
#include "score/reflp.h"

/* The expected.json sequences as a group (sequence_id = index). */
static void make_group(const cJSON *seqs, struct group *g)
{
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_num(7);
	g->n = (uint32_t)cJSON_GetArraySize(seqs);
	g->trajs = calloc(g->n, sizeof *g->trajs);
	for (uint32_t i = 0; i < g->n; i++) {
		struct traj *t = &g->trajs[i];
		traj_init(t);
		const cJSON *s = cJSON_GetArrayItem(seqs, (int)i), *x;
		const cJSON *pr = cJSON_GetObjectItem(s, "prompt_tokens"), *re = cJSON_GetObjectItem(s, "response_tokens");
		t->prompt_tokens = malloc(sizeof(int32_t) * (size_t)cJSON_GetArraySize(pr));   /* exact: ASan sees a read past it */
		t->response_tokens = malloc(sizeof(int32_t) * (size_t)(cJSON_GetArraySize(re) + 1));
		cJSON_ArrayForEach(x, pr) t->prompt_tokens[t->n_prompt++] = x->valueint;
		cJSON_ArrayForEach(x, re) t->response_tokens[t->n_response++] = x->valueint;
		t->temperature = (float)cJSON_GetObjectItem(s, "temperature")->valuedouble;
		t->sequence_id = traj_id_num(i);
		t->group_id = traj_id_num(7);
	}
}

static double worst_vs_hf(const struct group *g, const cJSON *want)
{
	double worst = 0;
	for (uint32_t i = 0; i < g->n; i++)
		for (uint32_t j = 0; j < g->trajs[i].n_response; j++) {
			double w = cJSON_GetArrayItem(cJSON_GetArrayItem(want, (int)i), (int)j)->valuedouble;
			double d = fabs(g->trajs[i].ref_logprobs[j] - w) / fmax(fabs(w), 1e-3);
			if (!(d <= worst))
				worst = d;
		}
	return worst;
}

/* Each sequence alone through model_forward. */
static double worst_vs_alone(struct reflp *r, const struct group *g)
{
	double worst = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		const struct traj *t = &g->trajs[i];
		int T = (int)(t->n_prompt + t->n_response), ids[REF_MAX_TOKENS];
		float temps[REF_MAX_TOKENS], lp[REF_MAX_TOKENS];
		for (int j = 0; j < T; j++) {
			ids[j] = j < (int)t->n_prompt ? t->prompt_tokens[j] : t->response_tokens[j - (int)t->n_prompt];
			temps[j] = t->temperature;
		}
		struct err e;
		if (model_forward(&r->m, ids, T, &T, 1, temps, lp, NULL, &e) < 0)
			return INFINITY;
		for (uint32_t j = 0; j < t->n_response; j++) {
			double d = fabs(t->ref_logprobs[j] - lp[t->n_prompt + j]);
			if (!(d <= worst))
				worst = d;
		}
	}
	return worst;
}

static void check(const char *dir, const char *fam)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s/expected.json", dir, fam);
	char *text = ref_slurp(path);
	cJSON *x = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!ok(x != NULL, "%s: expected.json readable", fam))
		return;
	struct group g;
	make_group(cJSON_GetObjectItem(x, "sequences"), &g);
	snprintf(path, sizeof path, "%s/%s", dir, fam);
	struct reflp r;
	struct err e = { 0 };
	int tokens[] = { 4096, 30, 1 };   /* one pass; several; one sequence per pass */
	for (int k = 0; k < 3; k++) {
		if (!ok(reflp_open(&r, path, tokens[k], &e) == 0, "%s: open", fam)) {
			diag("%s", e.msg);
			break;
		}
		int rc = reflp_group(&r, &g, &e);
		if (!ok(rc == 0, "%s, --ref-tokens %d: group of %u scored", fam, tokens[k], g.n))
			diag("%s", e.msg);
		double wh = rc ? INFINITY : worst_vs_hf(&g, cJSON_GetObjectItem(x, "logprobs"));
		ok(wh <= 1e-4, "%s, --ref-tokens %d: equal to transformers within 1e-4 relative (worst %.2g)", fam,
		   tokens[k], wh);
		double wa = rc ? INFINITY : worst_vs_alone(&r, &g);
		ok(wa <= 1e-5, "%s, --ref-tokens %d: equal to each sequence alone (worst %.2g)", fam, tokens[k], wa);
		/* the same passes on a GPU in fp32, where there is one (a pass of 1 token
		 * makes every sequence resize the GPU model) */
		enum model_device d;
		if (model_device_resolve(MODEL_DEVICE_AUTO, &d, &e) < 0 || d != MODEL_DEVICE_CUDA) {
			skip("no GPU: reference passes on the GPU not run");
		} else {
			rc = reflp_use_gpu(&r, 0, &e);
			if (rc == 0)
				rc = reflp_group(&r, &g, &e);
			if (rc)
				diag("%s", e.msg);
			wh = rc ? INFINITY : worst_vs_hf(&g, cJSON_GetObjectItem(x, "logprobs"));
			ok(wh <= 1e-4, "%s, --ref-tokens %d on the GPU in fp32: equal to transformers within 1e-4 relative "
			   "(worst %.2g)", fam, tokens[k], wh);
		}
		reflp_close(&r);
	}
	group_free(&g);
	cJSON_Delete(x);
}

/* 1 when r's last pass held exactly sequences [a, b) of g, in order
 * (struct reflp's ids and lens are the last pass's). */
static int last_pass_is(const struct reflp *r, const struct group *g, uint32_t a, uint32_t b)
{
	int at = 0;
	for (uint32_t i = a; i < b; i++) {
		const struct traj *t = &g->trajs[i];
		if (r->lens[i - a] != (int)(t->n_prompt + t->n_response))
			return 0;
		for (uint32_t j = 0; j < t->n_prompt; j++)
			if (r->ids[at++] != t->prompt_tokens[j])
				return 0;
		for (uint32_t j = 0; j < t->n_response; j++)
			if (r->ids[at++] != t->response_tokens[j])
				return 0;
	}
	return 1;
}

/* Passes hold as many whole sequences as fit in max_tokens, in order (the
 * qwen2 group's are 10, 13, 13, 6 and 45 tokens long), and r->tokens
 * counts what went through the model. r starts as garbage: open sets it all. */
static void passes(const char *dir, struct group *g)
{
	char model[4200];
	snprintf(model, sizeof model, "%s/qwen2", dir);
	struct reflp r;
	struct err e = { 0 };
	memset(&r, 0x5a, sizeof r);
	if (!ok(reflp_open(&r, model, 87, &e) == 0, "open over garbage (%s)", e.msg))
		return;
	int rc = reflp_group(&r, g, &e);
	ok(rc == 0 && last_pass_is(&r, g, 0, 5) && r.tokens == 87,
	   "--ref-tokens 87, the group's size: one pass of all five, in order (%llu tokens)",
	   (unsigned long long)r.tokens);
	reflp_close(&r);
	if (!ok(reflp_open(&r, model, 30, &e) == 0, "open (%s)", e.msg))
		return;
	rc = reflp_group(&r, g, &e);
	ok(rc == 0 && last_pass_is(&r, g, 4, 5) && r.tokens == 87,
	   "--ref-tokens 30: the sequence of 45 has a pass of its own, not one with those before it");
	g->n = 4;
	rc = reflp_group(&r, g, &e);
	g->n = 5;
	ok(rc == 0 && last_pass_is(&r, g, 2, 4) && r.tokens == 87 + 42,
	   "--ref-tokens 30, the first four: 10+13 then 13+6 (13 more would not fit), tokens counted (%llu)",
	   (unsigned long long)r.tokens);
	reflp_close(&r);
}

/* reflp_init takes a model in memory over (the caller's is zeroed) and
 * scores as reflp_open's does; r starts as garbage. */
static void init_over_model(const char *dir, struct group *g)
{
	char model[4200];
	snprintf(model, sizeof model, "%s/qwen2", dir);
	struct model m, zero;
	struct err e = { 0 };
	if (!ok(model_load(&m, model, &e) == 0, "load (%s)", e.msg))
		return;
	struct reflp r;
	memset(&r, 0x5a, sizeof r);
	memset(&zero, 0, sizeof zero);
	reflp_init(&r, &m, "tiny", 64);
	ok(memcmp(&m, &zero, sizeof m) == 0 && strcmp(r.dir, "tiny") == 0 && r.max_tokens == 64 && !r.gpu &&
	   r.tokens == 0 && r.cap == 0 && r.acts_T == 0, "reflp_init: the model taken over, the rest set");
	float *open_lp = g->trajs[4].ref_logprobs;   /* from reflp_open's */
	g->trajs[4].ref_logprobs = NULL;
	int rc = reflp_group(&r, g, &e);
	ok(rc == 0 && memcmp(g->trajs[4].ref_logprobs, open_lp, g->trajs[4].n_response * sizeof(float)) == 0 &&
	   r.tokens == 87, "reflp_init: the same values as reflp_open's (%s)", rc ? e.msg : "ok");
	free(open_lp);
	reflp_close(&r);
}

/* A group of trajectories of no token: nothing through the model, each
 * given its (empty) ref_logprobs. */
static void empty_group(const char *dir)
{
	char model[4200];
	snprintf(model, sizeof model, "%s/qwen2", dir);
	struct reflp r;
	struct err e = { 0 };
	if (!ok(reflp_open(&r, model, 64, &e) == 0, "open (%s)", e.msg))
		return;
	struct group g = { 0 };
	g.n = 2;
	g.trajs = calloc(2, sizeof *g.trajs);
	for (uint32_t i = 0; i < 2; i++) {
		traj_init(&g.trajs[i]);
		g.trajs[i].temperature = 1;
	}
	int rc = reflp_group(&r, &g, &e);
	ok(rc == 0 && r.tokens == 0 && g.trajs[0].ref_logprobs && g.trajs[1].ref_logprobs,
	   "a group of empty trajectories: nothing to run (%s)", rc ? e.msg : "ok");
	group_free(&g);
	reflp_close(&r);
}

/* A directory whose config.json is not a file is no model; one whose
 * config.json is not a model's fails to open. */
static void bad_dirs(void)
{
	char d[] = "/tmp/test_reflp.XXXXXX", p[4200];
	if (!ok(mkdtemp(d) != NULL, "temporary directory"))
		return;
	struct reflp r;
	struct err e = { 0 };
	snprintf(p, sizeof p, "%s/config.json", d);
	ok(mkdir(p, 0700) == 0, "config.json a directory");
	ok(reflp_open(&r, d, 64, &e) < 0 && strstr(e.msg, "neither a model directory"), "then no model: %s", e.msg);
	rmdir(p);
	FILE *f = fopen(p, "w");
	ok(f && fputs("{}\n", f) >= 0 && fclose(f) == 0, "config.json of {}");
	e.msg[0] = 0;
	ok(reflp_open(&r, d, 64, &e) < 0 && e.msg[0], "then the model does not load: %s", e.msg);
	shell("rm -rf %s", d);
}

/* The qwen2 group through passes, reflp_init, then the empty and bad cases. */
static void more(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/qwen2/expected.json", dir);
	char *text = ref_slurp(path);
	cJSON *x = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!ok(x != NULL, "qwen2: expected.json readable for the passes"))
		return;
	struct group g;
	make_group(cJSON_GetObjectItem(x, "sequences"), &g);
	cJSON_Delete(x);
	passes(dir, &g);
	if (g.trajs[4].ref_logprobs)
		init_over_model(dir, &g);
	group_free(&g);
	empty_group(dir);
	bad_dirs();
}

static void errors(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/qwen2/expected.json", dir);
	char *text = ref_slurp(path);
	cJSON *x = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!ok(x != NULL, "qwen2: expected.json readable for the error cases"))
		return;
	struct group g;
	make_group(cJSON_GetObjectItem(x, "sequences"), &g);
	cJSON_Delete(x);

	/* a policy queue: step_0 */
	char q[] = "/tmp/test_reflp.XXXXXX", link[4300], model[4200];
	ok(mkdtemp(q) != NULL, "temporary queue");
	snprintf(model, sizeof model, "%s/qwen2", dir);
	if (model[0] != '/') {
		char cwd[2048];
		snprintf(model, sizeof model, "%s/%s/qwen2", getcwd(cwd, sizeof cwd) ? cwd : ".", dir);
	}
	snprintf(link, sizeof link, "%s/step_0", q);
	ok(symlink(model, link) == 0, "SPOOL/policy/step_0 -> the model");
	struct reflp r;
	struct err e = { 0 };
	int opened = reflp_open(&r, q, 64, &e) == 0;
	if (!ok(opened && strstr(r.dir, "/step_0"), "a policy queue means its step_0: %s", opened ? r.dir : e.msg)) {
		if (opened)
			reflp_close(&r);
		unlink(link);
		rmdir(q);
		group_free(&g);
		return;
	}
	ok(reflp_group(&r, &g, &e) == 0, "scores from step_0");

	struct traj *t = &g.trajs[2];
	int32_t keep = t->response_tokens[1];
	float before = g.trajs[0].ref_logprobs[0];
	g.trajs[0].ref_logprobs[0] = 123;
	t->response_tokens[1] = r.m.cfg.V;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "sequence 2: response token 1 is id") &&
	   strstr(e.msg, "outside the reference model's vocabulary"), "id out of vocab: %s", e.msg);
	ok(g.trajs[0].ref_logprobs[0] == 123, "on error no trajectory changed");
	t->response_tokens[1] = -1;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "id -1"), "negative id: %s", e.msg);
	t->response_tokens[1] = keep;
	t->temperature = 0;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "sequence 2: temperature 0"), "zero temperature: %s", e.msg);
	t->temperature = 1;
	uint32_t np = t->n_prompt;
	t->n_prompt = 0;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "no prompt tokens"), "no prompt: %s", e.msg);
	t->n_prompt = np;
	/* the message names the group too, and each token's place exactly */
	int32_t keep0 = t->response_tokens[0], p0 = t->prompt_tokens[0];
	char want[128];
	snprintf(want, sizeof want, "group 7, sequence 2: response token 1 is id %d,", r.m.cfg.V);
	t->response_tokens[1] = r.m.cfg.V;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, want), "the group named: %s", e.msg);
	t->response_tokens[1] = keep;
	t->response_tokens[0] = r.m.cfg.V;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "sequence 2: response token 0 is id"),
	   "the first response token: %s", e.msg);
	t->response_tokens[0] = keep0;
	t->prompt_tokens[0] = -5;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "sequence 2: prompt token 0 is id -5"),
	   "the first prompt token: %s", e.msg);
	/* ids 0 and V - 1 are the vocabulary's first and last */
	t->prompt_tokens[0] = 0;
	t->response_tokens[0] = r.m.cfg.V - 1;
	int rc = reflp_group(&r, &g, &e);
	ok(rc == 0, "ids 0 and V - 1 are in the vocabulary (%s)", rc ? e.msg : "ok");
	t->prompt_tokens[0] = p0;
	t->response_tokens[0] = keep0;
	/* no prompt and one response token: still nothing predicts it */
	uint32_t nr = t->n_response;
	t->n_prompt = 0, t->n_response = 1;
	ok(reflp_group(&r, &g, &e) < 0 && strstr(e.msg, "sequence 2: no prompt tokens"), "no prompt, one response token: %s",
	   e.msg);
	t->n_prompt = np, t->n_response = nr;
	ok(reflp_group(&r, &g, &e) == 0 && fabsf(g.trajs[0].ref_logprobs[0] - before) < 1e-6, "fixed, scores again");
	/* a trajectory of no token at all (the file checks take it, grpo-pack drops it) beside the
	 * others: nothing to predict, and the rest scored as before */
	float last = t->ref_logprobs[t->n_response - 1];
	struct traj *z = &g.trajs[1];
	uint32_t zp = z->n_prompt, zr = z->n_response;
	z->n_prompt = z->n_response = 0;
	rc = reflp_group(&r, &g, &e);
	if (!ok(rc == 0 && fabsf(g.trajs[0].ref_logprobs[0] - before) < 1e-6 &&
		fabsf(t->ref_logprobs[t->n_response - 1] - last) < 1e-6,
		"a trajectory of no token beside others: they are scored as before"))
		diag("%s", rc < 0 ? e.msg : "other values");
	z->n_prompt = zp, z->n_response = zr;
	reflp_close(&r);
	unlink(link);
	rmdir(q);
	ok(reflp_open(&r, q, 64, &e) < 0 && strstr(e.msg, "neither a model directory"), "bad path: %s", e.msg);
	group_free(&g);
}

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/data/hf", top ? top : ".");
	model_set_threads(2);
	const char *fams[] = { "qwen2", "qwen3", "llama" };
	for (int i = 0; i < 3; i++)
		check(dir, fams[i]);
	errors(dir);
	more(dir);
	return tap_done();
}
