/* collect.c: see collect.h. Line dispatch, the native format, defaults,
 * validation, answers and grouping; the server formats live in
 * collect_vllm.c, collect_sglang.c and collect_atropos.c. */
#include "collect/collect.h"

#include <errno.h>
#include <cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/rng.h"
#include "data/jsonpick.h"
#include "data/jsonview.h"
#include "data/sfile.h"

const char *const collect_format_names[] = {
	[COLLECT_AUTO] = "auto", [COLLECT_NATIVE] = "native", [COLLECT_VLLM] = "vllm", [COLLECT_SGLANG] = "sglang",
	[COLLECT_ATROPOS] = "atropos", NULL
};

const char *collect_format_name(enum collect_format f)
{
	return (unsigned)f < sizeof collect_format_names / sizeof *collect_format_names - 1 ? collect_format_names[f] : "?";
}

uint64_t collect_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ---- small helpers shared by the format parsers ---- */

const char *collect_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

float collect_temperature(const cJSON *params)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "temperature");
	return cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
}

struct group *collect_add_group(struct collect_line *out, uint32_t n, struct err *e)
{
	void *gs = out->groups;
	if (buf_grow_array(&gs, out->n_groups, sizeof *out->groups) < 0) {
		err_set(e, "out of memory");
		return NULL;
	}
	out->groups = gs;
	struct group *g = &out->groups[out->n_groups];
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_none();
	g->trajs = calloc(n ? n : 1, sizeof *g->trajs);
	if (!g->trajs) {
		err_set(e, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		traj_init(&g->trajs[i]);
		g->trajs[i].temperature = NAN;
	}
	g->n = n;
	out->n_groups++;
	return g;
}

static int same_prompt(const struct traj *a, const struct traj *b)
{
	return a->n_prompt == b->n_prompt &&
	       (a->n_prompt == 0 || memcmp(a->prompt_tokens, b->prompt_tokens, a->n_prompt * sizeof(int32_t)) == 0);
}

int collect_prompt_differs(const cJSON *req_ids, const struct traj *t)
{
	struct err e;
	int32_t *ids = NULL;
	uint32_t n = 0;
	if (!jsonpick_is_array(req_ids) || json_get_i32_array(req_ids, "request prompt", &ids, &n, &e) < 0) {
		free(ids);
		return 0;
	}
	struct traj sent = { .prompt_tokens = ids, .n_prompt = n };
	int differs = !same_prompt(&sent, t);
	free(ids);
	return differs;
}

const cJSON *collect_request_row(const cJSON *rows, uint32_t i, uint32_t n, int64_t per, cJSON *tmp)
{
	uint32_t np = (uint32_t)jsonpick_size(rows);
	if (np == 0 || i >= n || (per > 0 ? (uint64_t)n != (uint64_t)np * (uint64_t)per : n % np != 0))
		return NULL;
	return jsonpick_at(rows, (int)(i / (n / np)), tmp);
}

int collect_request_row_err(struct err *e, const char *field, int np, const char *per_name, int64_t per,
			    uint32_t n, const char *member)
{
	if (per > 0)
		return err_set(e, "%s: %d prompts with %s = %lld each, but %u %ss: which prompt a %s answers is unknown",
			       field, np, per_name, (long long)per, n, member, member);
	return err_set(e, "%s: %d prompts for %u %ss, not n %ss each", field, np, n, member, member);
}

struct traj *collect_trajs_new(uint32_t n, float temp)
{
	struct traj *t = calloc(n, sizeof *t);
	for (uint32_t i = 0; t && i < n; i++) {
		traj_init(&t[i]);
		t[i].temperature = temp;
	}
	return t;
}

void collect_trajs_free(struct traj *t, uint32_t n)
{
	for (uint32_t i = 0; t && i < n; i++)
		traj_free(&t[i]);
	free(t);
}

int collect_group_runs(struct collect_line *out, struct traj *t, uint32_t n, struct err *e)
{
	uint32_t i = 0;
	int r = 0;
	while (i < n && r == 0) {
		uint32_t j = i + 1;
		while (j < n && same_prompt(&t[i], &t[j]))
			j++;
		struct group *g = collect_add_group(out, j - i, e);
		if (!g) {
			r = -1;
			break;
		}
		for (uint32_t k = i; k < j; k++) {
			g->trajs[k - i] = t[k];
			traj_init(&t[k]);
		}
		i = j;
	}
	for (uint32_t k = 0; k < n; k++)
		traj_free(&t[k]);
	free(t);
	return r;
}

int collect_name_group(struct group *g, const char *id, int several, uint32_t k, struct err *e)
{
	if (!id || !*id || traj_id_given(&g->group_id))
		return 0;
	size_t n = strlen(id) + 16;
	char *s = malloc(n);
	if (!s)
		return err_set(e, "out of memory");
	snprintf(s, n, several ? "%s-%u" : "%s", id, k);
	int r = traj_id_set_str(&g->group_id, s, strlen(s));
	free(s);
	return r < 0 ? err_set(e, "out of memory") : 0;
}

void collect_line_free(struct collect_line *l)
{
	for (uint32_t i = 0; i < l->n_groups; i++)
		group_free(&l->groups[i]);
	free(l->groups);
	free(l->id);
	free(l->answer);
	memset(l, 0, sizeof *l);
}

/* ---- the native format ---- */

static int native_traj(const cJSON *o, struct traj *t, struct err *e)
{
	if (json_parse_traj(o, t, e) < 0)
		return -1;
	/* absent means "not given", so --temperature and --step apply */
	if (!cJSON_GetObjectItemCaseSensitive(o, "temperature"))
		t->temperature = NAN;
	return 0;
}

int collect_native(const cJSON *v, struct collect_line *out, struct err *e)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(v, "trajectories"), *it;
	if (!cJSON_IsObject(v))
		return err_set(e, "a native line must be a JSON object");
	if (cJSON_GetObjectItemCaseSensitive(v, "input_ids") && !arr)
		return err_set(e, "a micro-batch, not a rollout: grpo-collect imports groups and trajectories");
	if (!arr) {
		struct group *g = collect_add_group(out, 1, e);
		if (!g || native_traj(v, &g->trajs[0], e) < 0)
			return -1;
		if (traj_id_copy(&g->group_id, &g->trajs[0].group_id) < 0)
			return err_set(e, "out of memory");
		out->lone = 1;
		return 0;
	}
	if (!cJSON_IsArray(arr))
		return err_set(e, "trajectories: expected an array");
	uint32_t n = (uint32_t)cJSON_GetArraySize(arr);
	if (n == 0)
		return err_set(e, "trajectories: a group needs at least one");
	struct group *g = collect_add_group(out, n, e);
	if (!g)
		return -1;
	/* the group's id, else its first member's that has one */
	struct traj_id *gid = &g->group_id;
	if ((it = cJSON_GetObjectItemCaseSensitive(v, "group_id")) && !cJSON_IsNull(it) &&
	    json_get_id(it, "group_id", gid, e) < 0)
		return -1;
	uint32_t i = 0;
	char b1[24], b2[24];
	cJSON_ArrayForEach(it, arr) {
		struct traj *t = &g->trajs[i];
		if (native_traj(it, t, e) < 0)
			return err_prefix(e, "trajectories[%u]", i);
		if (traj_id_given(gid) && traj_id_given(&t->group_id) && !traj_id_eq(&t->group_id, gid))
			return err_set(e, "trajectories[%u]: group_id %s, but the group's is %s", i,
				       traj_id_text(&t->group_id, b1), traj_id_text(gid, b2));
		if (!traj_id_given(gid) && traj_id_given(&t->group_id) && traj_id_copy(gid, &t->group_id) < 0)
			return err_set(e, "out of memory");
		i++;
	}
	if (traj_id_given(gid))
		for (i = 0; i < n; i++)
			if (traj_id_given(&g->trajs[i].group_id) && !traj_id_eq(&g->trajs[i].group_id, gid))
				return err_set(e, "trajectories[%u]: group_id %s differs from trajectories[0]'s %s",
					       i, traj_id_text(&g->trajs[i].group_id, b1), traj_id_text(gid, b2));
	return 0;
}

/* ---- one line ---- */

/* An answer or a request id, a string or a number, as text. A number as
 * cJSON prints it, the fewest digits that read back as the same double,
 * as a prompt's answer is kept by --model and --server (model/rollout.c):
 * 0.3 as written, not as "0.29999999999999999". */
static char *answer_text(const cJSON *v)
{
	return cJSON_IsString(v) ? strdup(v->valuestring) : cJSON_PrintUnformatted(v);
}

static enum collect_format detect(const cJSON *v)
{
	if (cJSON_IsArray(v)) {
		const cJSON *first = v->child;
		if (cJSON_IsObject(first) && cJSON_GetObjectItemCaseSensitive(first, "meta_info"))
			return COLLECT_SGLANG;
		if (cJSON_IsObject(first) && cJSON_GetObjectItemCaseSensitive(first, "tokens"))
			return COLLECT_ATROPOS;
		return COLLECT_AUTO;
	}
	if (!cJSON_IsObject(v))
		return COLLECT_AUTO;
#define HAS(k) (cJSON_GetObjectItemCaseSensitive(v, k) != NULL)
	if (HAS("trajectories") || HAS("response_tokens"))
		return COLLECT_NATIVE;
	if ((HAS("tokens") && HAS("masks")) || cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "batch")))
		return COLLECT_ATROPOS;
	if (HAS("meta_info"))
		return COLLECT_SGLANG;
	if (HAS("choices") || (HAS("token_ids") && HAS("prompt_token_ids")) || HAS("completion_ids"))
		return COLLECT_VLLM;
	if (HAS("input_ids"))
		return COLLECT_NATIVE;   /* a micro-batch: collect_native says why not */
#undef HAS
	return COLLECT_AUTO;
}

/* The most tokens a wrapper's request let the server generate per response,
 * and the key that says so: "max_completion_tokens" (OpenAI's chat, which
 * vLLM takes over "max_tokens"), "max_tokens", or in "sampling_params"
 * SGLang's "max_new_tokens" or vLLM's generate endpoint's "max_tokens";
 * -1 when the request sets none. */
static int64_t request_max_tokens(const cJSON *req, const char **key)
{
	static const char *const keys[] = { "max_completion_tokens", "max_tokens", "max_new_tokens" };
	const cJSON *params[] = { req, cJSON_GetObjectItemCaseSensitive(req, "sampling_params") };
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 3; k++) {
			const cJSON *m = cJSON_IsObject(params[p]) ? cJSON_GetObjectItemCaseSensitive(params[p], keys[k]) : NULL;
			if (cJSON_IsNumber(m) && m->valuedouble >= 0) {
				*key = keys[k];
				return m->valuedouble < 1e18 ? (int64_t)m->valuedouble : INT64_MAX;
			}
		}
	return -1;
}

/* A response longer than its request allowed is refused: the server did not
 * sample what was asked for, and the trainer and the length accounting
 * would take a sequence past the limit the user set. */
static int check_max_tokens(const cJSON *req, const struct collect_line *out, struct err *e)
{
	const char *key = NULL;
	int64_t max = request_max_tokens(req, &key);
	char idbuf[24];
	for (uint32_t k = 0; max >= 0 && k < out->n_groups; k++)
		for (uint32_t i = 0; i < out->groups[k].n; i++) {
			const struct traj *t = &out->groups[k].trajs[i];
			if ((int64_t)t->n_response <= max)
				continue;
			/* the group's id where the answer gives one, else its place */
			const struct traj_id *gid = traj_id_given(&out->groups[k].group_id) ? &out->groups[k].group_id
							  : traj_id_given(&t->group_id) ? &t->group_id : NULL;
			const char *group = idbuf;
			if (gid)
				group = traj_id_text(gid, idbuf);
			else
				snprintf(idbuf, sizeof idbuf, "%u", k);
			return err_set(e, "group %s, trajectory %u: %u response tokens, more than the request's %s, %lld",
				       group, i, t->n_response, key, (long long)max);
		}
	return 0;
}

static int parse_value(const cJSON *v, enum collect_format fmt, struct collect_line *out, struct err *e)
{
	const cJSON *resp = v, *req = NULL;
	const cJSON *wrapped = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "response") : NULL;
	if (wrapped && (cJSON_IsObject(wrapped) || cJSON_IsArray(wrapped))) {
		resp = wrapped;
		req = cJSON_GetObjectItemCaseSensitive(v, "request");
		if (req && !cJSON_IsObject(req) && !cJSON_IsArray(req))
			return err_set(e, "request: expected an object");
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "answer");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
		if ((cJSON_IsString(a) || cJSON_IsNumber(a)) && !(out->answer = answer_text(a)))
			return err_set(e, "out of memory");
		if ((cJSON_IsString(id) || cJSON_IsNumber(id)) && !(out->id = answer_text(id)))
			return err_set(e, "out of memory");
	}
	if (fmt == COLLECT_AUTO) {
		fmt = detect(resp);
		if (fmt == COLLECT_AUTO)
			return err_set(e, "not a rollout in any known format (no \"choices\", \"meta_info\", "
				       "\"tokens\" and \"masks\", \"trajectories\" or \"response_tokens\")");
	}
	out->format = fmt;
	switch (fmt) {
	case COLLECT_NATIVE:
		if (req)
			return err_set(e, "a native line is never wrapped in a request/response pair");
		return collect_native(resp, out, e);
	case COLLECT_VLLM:
		return collect_vllm(resp, req, out, e) < 0 ? -1 : check_max_tokens(req, out, e);
	case COLLECT_SGLANG:
		return collect_sglang(resp, req, out, e) < 0 ? -1 : check_max_tokens(req, out, e);
	case COLLECT_ATROPOS:
		return collect_atropos(resp, out, e);
	default:
		return err_set(e, "no such format");
	}
}

/*
 * What the importers read, for jsonpick (data/jsonpick.h): every other
 * member, at any depth, is left out of the tree, but for those keyed by a
 * token id (the Atropos demo server's logprobs), so a key an importer reads
 * must be here or it reads as absent (tests/unit/test_collect.c checks the
 * importers against the reference path on every input of tests/data/collect).
 */
static const char *const keep_keys[] = {
	"advantages", "answer", "batch", "choices", "completion_ids", "content", "delta", "echo",
	"finish_reason", "finish_reasons", "generation_kwargs", "generation_params", "group_id",
	"group_overrides", "id", "inference_logprobs", "input_ids", "input_token_logprobs", "logprob",
	"logprob_token_ids", "logprobs", "masks", "max_completion_tokens", "max_new_tokens", "max_tokens",
	"meta_info", "n", "object", "output_token_logprobs", "overrides", "policy_version", "prompt",
	"prompt_ids", "prompt_token_ids", "prompt_tokens", "prompts", "ref_logprobs", "request", "request_id",
	"response", "response_mask", "response_tokens", "reward_names", "rewards", "run", "sampling_params",
	"scores", "sequence_id", "set_advantage_to_zero", "stream", "successes", "temperature", "token",
	"token_ids", "token_logprobs", "tokens", "trajectories", "type", "usage", "weight_version",
};
/* The arrays the importers read through jsonpick's functions and the
 * json_get_*_array getters (never by cJSON's): kept as their text. */
static const char *const span_keys[] = {
	"advantages", "completion_ids", "inference_logprobs", "input_ids", "input_token_logprobs", "logprobs",
	"masks", "output_token_logprobs", "prompt", "prompt_ids", "prompt_token_ids", "prompt_tokens", "prompts",
	"ref_logprobs", "response_mask", "response_tokens", "token_ids", "token_logprobs", "tokens",
};
static const struct jsonpick_keys pick = {
	keep_keys, sizeof keep_keys / sizeof *keep_keys, 1, span_keys, sizeof span_keys / sizeof *span_keys,
};

/* One line into a tree, Python's NaN and Infinity rewritten first (into
 * *fixed, which the tree's spans point into): through jsonpick, or (ref)
 * through cJSON alone, a node per value. A line that either would change
 * silently (json_check_text: a \u0000 in a string, bytes not UTF-8, a
 * number JSON forbids such as a token id "05" read as 5) is refused. NULL
 * with e filled. */
static cJSON *parse_json(const char *text, size_t n, int ref, char **fixed, struct err *e)
{
	const char *end = NULL;
	size_t at = 0, fixed_n = 0;
	cJSON *v;
	if (json_check_text(text, n, e) < 0)
		return NULL;
	int r = json_fix_nonfinite(text, n, fixed, &fixed_n);
	if (r < 0) {
		err_set(e, "out of memory");
		return NULL;
	}
	if (r == 1) {
		text = *fixed;
		n = fixed_n;
	}
	if (!ref)
		v = jsonpick_parse(text, n, &pick, &end, &at);
	else if (!(v = json_parse_n(text, n, &end)))
		at = errno == ENOMEM ? 0 : (end && end >= text ? (size_t)(end - text) : 0) + 1;
	if (!v) {
		if (at)
			err_set(e, "not valid JSON (near byte %zu)", at);
		else
			err_set(e, "out of memory");
		return NULL;
	}
	/* the parser stops at the end of the first value; anything after it but
	 * blanks means two values on one line or garbage */
	for (const char *p = end; p < text + n; p++)
		if (!isspace((unsigned char)*p)) {
			err_set(e, "not valid JSON (text after the value, near byte %zu)", (size_t)(p - text) + 1);
			cJSON_Delete(v);
			return NULL;
		}
	return v;
}

static int parse_line(const char *text, size_t n, enum collect_format fmt, int ref, struct collect_line *out,
		      struct err *e)
{
	char *fixed = NULL;
	memset(out, 0, sizeof *out);
	if (n >= 5 && memcmp(text, "data:", 5) == 0)
		return err_set(e, "a server-sent event (\"data: ...\"), a piece of a streamed response, not a "
			       "whole one: grpo-collect reads whole responses; ask with \"stream\": false");
	cJSON *v = parse_json(text, n, ref, &fixed, e);
	int r = v ? parse_value(v, fmt, out, e) : -1;
	cJSON_Delete(v);
	free(fixed);
	if (r < 0) {
		collect_line_free(out);
		return -1;
	}
	return 0;
}

int collect_parse_line(const char *text, size_t n, enum collect_format fmt,
		       struct collect_line *out, struct err *e)
{
	return parse_line(text, n, fmt, 0, out, e);
}

int collect_parse_line_ref(const char *text, size_t n, enum collect_format fmt,
			   struct collect_line *out, struct err *e)
{
	return parse_line(text, n, fmt, 1, out, e);
}

/* ---- validation ---- */

static const char *describe(float f, char s[48])
{
	if (isnan(f))
		return "NaN or null";
	if (isinf(f))
		return f > 0 ? "Infinity" : "-Infinity";
	snprintf(s, 48, "%.9g", (double)f);
	return s;
}

static int check_ids(const int32_t *a, uint32_t n, int64_t vocab, uint32_t i, const char *what, struct err *e)
{
	for (uint32_t k = 0; k < n; k++) {
		if (a[k] < 0)
			return err_set(e, "trajectory %u: %s[%u] is %d, a negative token id", i, what, k, a[k]);
		if (vocab > 0 && a[k] >= vocab)
			return err_set(e, "trajectory %u: %s[%u] is %d, not below --vocab-size %lld", i, what, k, a[k],
				       (long long)vocab);
	}
	return 0;
}

/* Missing sampler logprobs are taken only when asked for: marked as none,
 * never filled with invented values. */
static int check_logprobs(const struct collect *c, const struct group *g, struct err *e)
{
	for (uint32_t i = 0; i < g->n && !c->o.allow_missing_logprobs; i++)
		if (!g->trajs[i].logprobs && g->trajs[i].n_response > 0)
			return err_set(e, "trajectory %u: no sampler logprobs (Atropos: no inference_logprobs); "
				       "--allow-missing-logprobs takes rollouts without them", i);
	return 0;
}

int collect_check_group(const struct group *g, int64_t vocab_size, struct err *e)
{
	char s[48];
	for (uint32_t i = 0; i < g->n; i++) {
		const struct traj *t = &g->trajs[i];
		if (check_ids(t->prompt_tokens, t->n_prompt, vocab_size, i, "prompt_tokens", e) < 0 ||
		    check_ids(t->response_tokens, t->n_response, vocab_size, i, "response_tokens", e) < 0)
			return -1;
		for (uint32_t k = 0; t->logprobs && k < t->n_response; k++) {
			float lp = t->logprobs[k];
			if (!isfinite(lp))
				return err_set(e, "trajectory %u: logprobs[%u] is %s, not a finite number", i, k,
					       describe(lp, s));
			if (lp > 0.0f)
				return err_set(e, "trajectory %u: logprobs[%u] is %s, above 0", i, k, describe(lp, s));
			if (lp <= -9999.0f)
				return err_set(e, "trajectory %u: logprobs[%u] is %s, a server's sentinel for "
					       "\"no logprob\" (vLLM writes -9999, SGLang -999999999)", i, k,
					       describe(lp, s));
		}
		if (!(t->temperature > 0.0f) || !isfinite(t->temperature))
			return err_set(e, "trajectory %u: temperature %s is not positive and finite", i,
				       describe(t->temperature, s));
	}
	/* every other field as the spool writer will check it, so that a bad
	 * advantage, reward or ref_logprob fails (or is skipped) at its line
	 * rather than at the write of the whole output */
	return group_check(g, e);
}

/* ---- answers ---- */

static int answer_cmp(const void *a, const void *b)
{
	return strcmp(((const struct collect_answer *)a)->key, ((const struct collect_answer *)b)->key);
}

/* Keys: "#N" for a prompt index, "=ID" for a request id, so the two never meet. */

int collect_answers_load(struct collect_answers *a, const char *path, struct err *e)
{
	memset(a, 0, sizeof *a);
	FILE *f = fopen(path, "r");
	if (!f)
		return err_sys(e, "%s", path);
	char *line = NULL;
	size_t cap = 0, n_cap = 0;
	ssize_t len;
	uint64_t lineno = 0;
	int r = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		size_t n = (size_t)len;
		while (n && isspace((unsigned char)line[n - 1]))
			n--;
		if (n == 0)
			continue;
		if (json_check_text(line, n, e) < 0) {
			r = err_prefix(e, "%s:%llu", path, (unsigned long long)lineno);
			break;
		}
		cJSON *o = json_parse_one(line, n, e);   /* a second answer on the line is refused, not dropped */
		if (!o) {
			r = err_prefix(e, "%s:%llu", path, (unsigned long long)lineno);
			break;
		}
		const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
		const cJSON *idx = cJSON_GetObjectItemCaseSensitive(o, "index");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
		char key[64 + 8], *kp = key;
		int64_t ix = (int64_t)lineno - 1;
		if (!cJSON_IsObject(o))
			r = err_set(e, "%s:%llu: expected a JSON object", path, (unsigned long long)lineno);
		else if (!cJSON_IsString(ans) && !cJSON_IsNumber(ans))
			r = err_set(e, "%s:%llu: \"answer\": expected a string or a number", path,
				    (unsigned long long)lineno);
		else if (idx && json_get_i64(idx, "index", &ix, e) < 0)
			r = err_prefix(e, "%s:%llu", path, (unsigned long long)lineno);
		else if (id && !idx && !cJSON_IsString(id) && !cJSON_IsNumber(id))
			r = err_set(e, "%s:%llu: \"id\": expected a string or a number", path,
				    (unsigned long long)lineno);
		if (r == 0) {
			if (id && !idx) {
				char *s = answer_text(id);
				kp = s ? malloc(strlen(s) + 2) : NULL;
				if (kp)
					sprintf(kp, "=%s", s);
				free(s);
			} else {
				snprintf(key, sizeof key, "#%lld", (long long)ix);
				kp = strdup(key);
			}
			char *at = answer_text(ans);
			if (a->n == n_cap) {
				n_cap = n_cap ? 2 * n_cap : 64;
				void *v = realloc(a->v, n_cap * sizeof *a->v);
				if (v)
					a->v = v;
				else
					n_cap = a->n;
			}
			if (!kp || !at || a->n == n_cap) {
				free(kp);
				free(at);
				r = err_set(e, "out of memory");
			} else {
				a->v[a->n].key = kp;
				a->v[a->n++].answer = at;
			}
		}
		cJSON_Delete(o);
		if (r < 0)
			break;
	}
	if (r == 0 && !feof(f))   /* getline failing for memory sets no error flag */
		r = err_sys(e, "%s", path);
	free(line);
	fclose(f);
	if (r < 0) {
		collect_answers_free(a);
		return -1;
	}
	qsort(a->v, a->n, sizeof *a->v, answer_cmp);
	for (size_t i = 1; i < a->n; i++)
		if (strcmp(a->v[i - 1].key, a->v[i].key) == 0) {
			err_set(e, "%s: two answers for %s %s", path, a->v[i].key[0] == '#' ? "index" : "id",
				a->v[i].key + 1);
			collect_answers_free(a);
			return -1;
		}
	return 0;
}

static const char *answer_find(const struct collect_answers *a, const char *key)
{
	if (!a || a->n == 0)
		return NULL;
	struct collect_answer k = { (char *)key, NULL };
	const struct collect_answer *f = bsearch(&k, a->v, a->n, sizeof *a->v, answer_cmp);
	return f ? f->answer : NULL;
}

const char *collect_answers_index(const struct collect_answers *a, uint64_t index)
{
	char key[32];
	snprintf(key, sizeof key, "#%llu", (unsigned long long)index);
	return answer_find(a, key);
}

const char *collect_answers_id(const struct collect_answers *a, const char *id)
{
	if (!id || !a)
		return NULL;
	char *key = malloc(strlen(id) + 2);
	if (!key)
		return NULL;
	sprintf(key, "=%s", id);
	const char *r = answer_find(a, key);
	free(key);
	return r;
}

void collect_answers_free(struct collect_answers *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].key);
		free(a->v[i].answer);
	}
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* ---- the collector ---- */

void collect_init(struct collect *c, const struct collect_opts *o, collect_emit emit, void *ctx)
{
	memset(c, 0, sizeof *c);
	c->o = *o;
	c->emit = emit;
	c->ctx = ctx;
}

static int set_answer(struct traj *t, const char *a, struct err *e)
{
	char *s = strdup(a);
	if (!s)
		return err_set(e, "out of memory");
	free(t->answer);
	t->answer = s;
	return 0;
}

/* Defaults for trajectory t, member `pos` of group gid. A missing
 * sequence_id is derived from the group's: a number from a number, and
 * "GID-POS" from a string id, which stays traceable to where it came from. */
static int fill(struct collect *c, struct traj *t, const struct traj_id *gid, uint32_t pos, const char *answer,
		int from_answers, struct err *e)
{
	struct traj_id g;
	if (traj_id_copy(&g, gid) < 0)
		return err_set(e, "out of memory");
	traj_id_free(&t->group_id);
	t->group_id = g;
	if (!traj_id_given(&t->sequence_id)) {
		if (gid->str) {
			size_t n = strlen(gid->str) + 12;
			char *s = malloc(n);
			if (!s)
				return err_set(e, "out of memory");
			snprintf(s, n, "%s-%u", gid->str, pos);
			t->sequence_id.str = s;
		} else
			t->sequence_id.num =
				(int64_t)(splitmix64_mix((uint64_t)gid->num * 0x9e3779b97f4a7c15ull + pos) >> 12);
	}
	if (t->policy_version < 0)
		t->policy_version = c->o.step;
	if (isnan(t->temperature))
		t->temperature = c->o.temperature;
	if (answer && (from_answers || !t->answer)) {
		if (set_answer(t, answer, e) < 0)
			return -1;
		c->answered += from_answers;
	}
	return 0;
}

/* The answer of a group: --answers by id, then by index, then the line's own. */
static const char *find_answer(struct collect *c, const char *id, uint64_t index, int *from_answers)
{
	const char *a = collect_answers_id(c->o.answers, id);
	if (!a)
		a = collect_answers_index(c->o.answers, index);
	*from_answers = a != NULL;
	return a;
}

static int64_t line_gid(const char *text, size_t n, uint32_t k)
{
	unsigned char kb[4] = { (unsigned char)k, (unsigned char)(k >> 8), (unsigned char)(k >> 16),
				(unsigned char)(k >> 24) };
	uint64_t h = collect_hash(collect_hash(COLLECT_HASH_INIT, text, n), kb, 4);
	return (int64_t)(h >> 12);
}

static uint64_t id_hash(const struct traj_id *id)
{
	return id->str ? collect_hash(COLLECT_HASH_INIT, id->str, strlen(id->str)) : splitmix64_mix((uint64_t)id->num);
}

/* ---- exact repeats (collect.h) ---- */

static int put_id(struct buf *b, const char *name, const struct traj_id *id)
{
	char num[24];
	if (buf_printf(b, "%s", name) < 0)
		return -1;
	return id->str ? json_print_string(b, id->str) : buf_printf(b, "%s", traj_id_text(id, num));
}

/* Count a record dropped, and keep what names it for the caller: the group,
 * and the member when sid is not NULL. 0, or -1 out of memory. */
static int note_repeat(struct collect *c, const struct traj_id *gid, const struct traj_id *sid,
		       struct recordset_at first, struct err *e)
{
	void *v = c->line_repeats;
	if (buf_grow_array(&v, c->n_line_repeats, sizeof *c->line_repeats) < 0)
		return err_set(e, "out of memory");
	c->line_repeats = v;
	struct collect_repeat *x = &c->line_repeats[c->n_line_repeats];
	struct buf b = { 0 };
	int r = put_id(&b, "group_id ", gid) < 0 || (sid && put_id(&b, ", sequence_id ", sid) < 0) ||
		buf_put_u8(&b, 0) < 0;
	if (!r)
		snprintf(x->what, sizeof x->what, "%s", (const char *)b.data);
	buf_free(&b);
	if (r)
		return err_set(e, "out of memory");
	x->first = first;
	c->n_line_repeats++;
	c->repeats++;
	return 0;
}

struct copy_ctx {
	struct collect *c;
	const struct traj_id *gid;
	struct err *e;
};

static int copy_dropped(void *ctx, const struct traj *copy)
{
	struct copy_ctx *x = ctx;
	return note_repeat(x->c, x->gid, &copy->sequence_id, x->c->at, x->e);
}

/* A member that repeats one before it in its group is dropped as a record
 * repeated. 0, or -1 out of memory. */
static int drop_copies(struct collect *c, struct group *g, struct err *e)
{
	struct copy_ctx x = { c, &g->group_id, e };
	return recordset_drop_copies(g, copy_dropped, &x) < 0 ? -1 : 0;
}

/* Take the record of group_id gid and members t[0..n) (sid: the one
 * member's id to name, for a lone line): 0 taken, 1 an exact repeat,
 * dropped, -1 out of memory. */
static int take_record(struct collect *c, const struct traj_id *gid, const struct traj *t, uint32_t n,
		       const struct traj_id *sid, struct err *e)
{
	uint64_t id, members;
	struct recordset_at first;
	recordset_hash(gid, t, n, &id, &members);
	int r = recordset_take(&c->taken, id, members, c->at, &first, e);
	if (r == 1 && note_repeat(c, gid, sid, first, e) < 0)
		return -1;
	return r;
}

/* Put pending[i] in the index by its group_id, in place of an older one of
 * the same id, so that a lookup finds the newest, as a scan from the end
 * did. An input of 80,000 groups of lone trajectories scanned them all for
 * every line. 0, or -1 out of memory. */
static int pending_index(struct collect *c, size_t i)
{
	if (2 * c->n_pending > c->cap_ix) {
		size_t cap = c->cap_ix ? 2 * c->cap_ix : 64;
		size_t *t = calloc(cap, sizeof *t);
		if (!t)
			return -1;
		free(c->pending_ix);
		c->pending_ix = t;
		c->cap_ix = cap;
		for (size_t k = 0; k < c->n_pending; k++)
			if (k != i && pending_index(c, k) < 0)
				return -1;
	}
	size_t j = id_hash(&c->pending[i].g.group_id) & (c->cap_ix - 1);
	while (c->pending_ix[j] && !traj_id_eq(&c->pending[c->pending_ix[j] - 1].g.group_id, &c->pending[i].g.group_id))
		j = (j + 1) & (c->cap_ix - 1);
	c->pending_ix[j] = i + 1;
	return 0;
}

static struct collect_pending *pending_find(struct collect *c, const struct traj_id *gid)
{
	if (!c->cap_ix)
		return NULL;
	size_t j = id_hash(gid) & (c->cap_ix - 1);
	for (; c->pending_ix[j]; j = (j + 1) & (c->cap_ix - 1))
		if (traj_id_eq(&c->pending[c->pending_ix[j] - 1].g.group_id, gid))
			return &c->pending[c->pending_ix[j] - 1];
	return NULL;
}

/* A new pending group, empty, with the next prompt index; NULL out of memory. */
static struct collect_pending *pending_new(struct collect *c)
{
	if (c->n_pending == c->cap_pending) {
		size_t cap = c->cap_pending ? 2 * c->cap_pending : 16;
		void *v = realloc(c->pending, cap * sizeof *c->pending);
		if (!v)
			return NULL;
		c->pending = v;
		c->cap_pending = cap;
	}
	struct collect_pending *p = &c->pending[c->n_pending++];
	memset(p, 0, sizeof *p);
	p->index = c->next_index++;
	return p;
}

/* 0 taken, 1 an exact repeat, dropped, -1 out of memory. */
static int add_lone(struct collect *c, struct collect_line *L, const char *text, size_t n, struct err *e)
{
	struct traj *t = &L->groups[0].trajs[0];
	int explicit_gid = traj_id_given(&t->group_id);
	struct traj_id gid = traj_id_num(line_gid(text, n, 0));
	if (explicit_gid && traj_id_copy(&gid, &t->group_id) < 0)
		return err_set(e, "out of memory");
	struct collect_pending *p = explicit_gid ? pending_find(c, &gid) : NULL;
	if (!p) {
		if (!(p = pending_new(c))) {
			traj_id_free(&gid);
			return err_set(e, "out of memory");
		}
		p->g.group_id = gid;   /* the pending group takes it over */
		if (pending_index(c, (size_t)(p - c->pending)) < 0)
			return err_set(e, "out of memory");
	} else
		traj_id_free(&gid);
	void *grown = p->g.trajs;
	if (buf_grow_array(&grown, p->g.n, sizeof *p->g.trajs) < 0)
		return err_set(e, "out of memory");
	struct traj *ts = p->g.trajs = grown;
	char idbuf[24];
	int from_answers;
	const char *a = find_answer(c, explicit_gid ? traj_id_text(&p->g.group_id, idbuf) : NULL, p->index,
				    &from_answers);
	if (fill(c, t, &p->g.group_id, p->g.n, a, from_answers, e) < 0)
		return -1;
	int r = take_record(c, &p->g.group_id, t, 1, &t->sequence_id, e);
	if (r != 0)
		return r;   /* a repeat leaves its group as it was, empty if new */
	/* move, not copy: the line's group gives up its only trajectory */
	ts[p->g.n++] = *t;
	traj_init(t);
	return 0;
}

/*
 * A lone trajectory line refused (-e skip goes on): its group's prompt index
 * stays what it would have been, so that the groups after it keep theirs
 * (and their --answers). Without a group_id it was a group of its own: one
 * index. With one already pending, none. With a new one, the index is taken
 * by an empty pending group, which the group's later lines join and which
 * is dropped at the end of the input if none does. 0, or -1 out of memory.
 */
static int skip_lone(struct collect *c, const struct traj_id *gid)
{
	if (!traj_id_given(gid)) {
		c->next_index++;
		return 0;
	}
	if (pending_find(c, gid))
		return 0;
	struct collect_pending *p = pending_new(c);
	if (!p || traj_id_copy(&p->g.group_id, gid) < 0)
		return -1;
	return pending_index(c, (size_t)(p - c->pending));
}

int collect_feed(struct collect *c, const char *text, size_t n, struct err *e)
{
	while (n && isspace((unsigned char)text[n - 1]))
		n--;
	size_t lead = 0;
	while (lead < n && isspace((unsigned char)text[lead]))
		lead++;
	if (lead == n)
		return 0;
	c->lines++;
	c->n_line_repeats = 0;
	struct collect_line L;
	if (collect_parse_line(text, n, c->o.format, &L, e) < 0) {
		c->next_index++;   /* a line that could not be read counts as one prompt */
		return -1;
	}
	c->formats |= 1u << L.format;
	uint64_t base = c->next_index;
	int r = 0;
	for (uint32_t k = 0; k < L.n_groups && r == 0; k++) {
		struct group *g = &L.groups[k];
		if (L.lone) {
			struct traj *t = &g->trajs[0];
			/* checked alone, with stand-in defaults, before it joins its group */
			if (isnan(t->temperature))
				t->temperature = c->o.temperature;
			r = collect_check_group(g, c->o.vocab_size, e);
			if (r == 0)
				r = check_logprobs(c, g, e);
			continue;
		}
		int explicit_gid = traj_id_given(&g->group_id);
		if (!explicit_gid)
			g->group_id = traj_id_num(line_gid(text, n, k));
		char idbuf[24];
		const char *id = L.id;
		if (!id && explicit_gid && L.format == COLLECT_NATIVE)
			id = traj_id_text(&g->group_id, idbuf);
		int from_answers;
		const char *a = find_answer(c, id, base + k, &from_answers);
		if (!a)
			a = L.answer;
		for (uint32_t i = 0; i < g->n && r == 0; i++)
			r = fill(c, &g->trajs[i], &g->group_id, i, a, from_answers, e);
		if (r == 0 && ((r = collect_check_group(g, c->o.vocab_size, e)) < 0 || (r = check_logprobs(c, g, e)) < 0) &&
		    L.n_groups > 1)
			err_prefix(e, "group %u", k);
	}
	if (r < 0) {
		int kept = 0;
		if (L.lone)
			kept = skip_lone(c, &L.groups[0].trajs[0].group_id);
		else
			c->next_index += L.n_groups;
		collect_line_free(&L);
		if (kept < 0) {
			err_set(e, "out of memory");
			return -2;
		}
		return -1;
	}
	if (L.lone) {
		r = add_lone(c, &L, text, n, e);
		c->trajs += r == 0;
		collect_line_free(&L);
		return r < 0 ? -2 : 0;
	}
	c->next_index += L.n_groups;
	uint64_t repeats0 = c->repeats;
	for (uint32_t k = 0; k < L.n_groups && r == 0; k++) {
		struct group *g = &L.groups[k];
		if ((r = drop_copies(c, g, e)) < 0 || (r = take_record(c, &g->group_id, g->trajs, g->n, NULL, e)) < 0)
			break;
		if (r == 1) {
			r = 0;
			continue;
		}
		c->groups++;
		c->trajs += g->n;
		for (uint32_t i = 0; i < g->n; i++)
			c->tokens += g->trajs[i].n_response;
		r = c->emit(c->ctx, g, e);
	}
	if (c->repeats == repeats0)   /* a copy's prompt ids were warned of with the line it repeats */
		c->prompt_differs += L.prompt_differs;
	collect_line_free(&L);
	return r < 0 ? -2 : 0;
}

static void drop_pending(struct collect *c);

int collect_end_input(struct collect *c, struct err *e)
{
	int r = 0;
	for (size_t i = 0; i < c->n_pending && r == 0; i++) {
		struct group *g = &c->pending[i].g;
		if (g->n == 0)
			continue;   /* an index kept for lines that were all skipped */
		c->groups++;
		for (uint32_t k = 0; k < g->n; k++)
			c->tokens += g->trajs[k].n_response;
		r = c->emit(c->ctx, g, e);
	}
	drop_pending(c);
	if (r == 0)
		recordset_keep(&c->taken);
	return r;
}

void collect_drop_input(struct collect *c)
{
	drop_pending(c);
	recordset_forget(&c->taken);
}

static void drop_pending(struct collect *c)
{
	for (size_t i = 0; i < c->n_pending; i++)
		group_free(&c->pending[i].g);
	c->n_pending = 0;
	/* made again for the next input: clearing it whole for each of many
	 * small inputs after a big one would cost more */
	free(c->pending_ix);
	c->pending_ix = NULL;
	c->cap_ix = 0;
}

void collect_free(struct collect *c)
{
	collect_drop_input(c);
	recordset_free(&c->taken);
	free(c->line_repeats);
	c->line_repeats = NULL;
	c->n_line_repeats = 0;
	free(c->pending);
	c->pending = NULL;
	c->cap_pending = 0;
}
