/* collect_vllm.c: vLLM responses (formats.md section 1).
 *
 *   /v1/completions        choices[i].logprobs = {token_logprobs, tokens, ...},
 *                          prompt ids per choice in choices[i].prompt_token_ids
 *   /v1/chat/completions   choices[i].logprobs.content[k] = {token, logprob},
 *                          prompt ids at the top level
 *   /inference/v1/generate choices as in chat, no prompt ids in the response:
 *                          they come from a wrapper's request ("token_ids")
 *   Atropos' patched /generate demo server: {"token_ids": [[...]],
 *                          "prompt_token_ids", "logprobs": [[[{"id": lp}]]],
 *                          "finish_reasons"}
 *   TRL's `trl vllm-serve` /generate/: {"prompt_ids": [[...]] one per prompt,
 *                          "completion_ids": [[...]] n per prompt in order,
 *                          "logprobs": [[lp, ...]] one per completion}
 *
 * Token ids come from choices[i].token_ids (return_token_ids) or else from
 * "token_id:N" token strings (return_tokens_as_token_ids); never from text,
 * which drops special tokens such as the final EOS. With both present they
 * must agree. With echo the logprob arrays cover prompt and completion; the
 * completion is their last len(token_ids) entries. Prompt ids come from the
 * response where it gives them (what the server conditioned on), else from
 * a wrapper's request; where both are given and differ, the response's are
 * kept and the trajectory counted (collect_line.prompt_differs).
 *
 * The arrays of token ids, logprobs and token strings may be spans
 * (data/jsonpick.h): they are read through jsonpick's functions, never
 * cJSON's.
 */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collect.h"
#include "data/jsonpick.h"
#include "data/jsonview.h"

/* s as a 32-bit integer written as JSON writes one (no '+', blank or
 * leading zero, which strtol would take): 1 with *out, else 0. */
static int json_int(const char *s, int32_t *out)
{
	const char *d = s + (*s == '-');
	if (*d < '0' || *d > '9' || (*d == '0' && d[1]))
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*end || errno || v < INT32_MIN || v > INT32_MAX)
		return 0;
	*out = (int32_t)v;
	return 1;
}

/* "token_id:N" -> N (1); 0 when s is not in that form; -1 when it is but N
 * is not an integer as JSON writes one ("+5", " 5", "05", "5.0"): a token
 * id read leniently might not be the one the server meant. */
static int token_id_str(const char *s, int32_t *out)
{
	if (!s || strncmp(s, "token_id:", 9) != 0)
		return 0;
	return json_int(s + 9, out) ? 1 : -1;
}

static float lp_value(const cJSON *v, int *ok)
{
	if (cJSON_IsNumber(v))
		return (float)v->valuedouble;
	if (cJSON_IsNull(v))
		return NAN;
	*ok = 0;
	return NAN;
}


/* A list of lists (one per prompt of a batch). */
static int nested(const cJSON *v, cJSON *tmp)
{
	return jsonpick_is_array(v) && jsonpick_is_array(jsonpick_at(v, 0, tmp));
}

static int64_t req_int(const cJSON *req, const char *key, int64_t dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

/* Choice i's prompt ids from the request: "token_ids" (generate), "prompt"
 * as a list of ids or as one list per prompt of a batch (completions, whose
 * choices come prompt by prompt, the request's "n" each), or
 * "prompt_token_ids". A row of a span is described in *tmp. */
static const cJSON *request_prompt(const cJSON *req, uint32_t i, uint32_t n, cJSON *tmp)
{
	static const char *keys[] = { "token_ids", "prompt", "prompt_token_ids" };
	for (int k = 0; k < 3; k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, keys[k]);
		const cJSON *first = jsonpick_at(v, 0, tmp);
		if (jsonpick_is_array(v) && (!first || cJSON_IsNumber(first)))
			return v;
		if (jsonpick_is_array(v) && jsonpick_is_array(first))
			return collect_request_row(v, i, n, req_int(req, "n", 0), tmp);
	}
	return NULL;
}

static float request_temperature(const cJSON *req)
{
	float t = collect_temperature(req);
	if (isnan(t))
		t = collect_temperature(cJSON_GetObjectItemCaseSensitive(req, "sampling_params"));
	return t;
}

/* The sampled tokens' logprobs of one choice, and their token ids where the
 * token strings are "token_id:N" (has_id[k] = 0 where not). */
struct lps {
	float *lp;      /* (n) */
	int32_t *tid;   /* (n) */
	uint8_t *has_id;/* (n) */
	uint32_t n;
};

static void lps_free(struct lps *l)
{
	free(l->lp);
	free(l->tid);
	free(l->has_id);
}

static int lps_alloc(struct lps *l, uint32_t n, struct err *e)
{
	l->n = n;
	l->lp = calloc(n ? n : 1, sizeof *l->lp);
	l->tid = calloc(n ? n : 1, sizeof *l->tid);
	l->has_id = calloc(n ? n : 1, 1);
	return l->lp && l->tid && l->has_id ? 0 : err_set(e, "out of memory");
}

static int read_lps(const cJSON *lpobj, struct lps *l, struct err *e)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(lpobj, "content");
	const cJSON *tlp = cJSON_GetObjectItemCaseSensitive(lpobj, "token_logprobs");
	const cJSON *toks = cJSON_GetObjectItemCaseSensitive(lpobj, "tokens");
	const cJSON *v;
	struct jsonpick_iter it;
	uint32_t k = 0;
	int ok = 1, r = 0;
	if (cJSON_IsArray(content)) {
		/* chat shape: a missing logprob is vLLM's default -9999, kept so
		 * that validation names it */
		if (lps_alloc(l, (uint32_t)cJSON_GetArraySize(content), e) < 0)
			return -1;
		cJSON_ArrayForEach(v, content) {
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, "logprob");
			if (!cJSON_IsObject(v))
				return err_set(e, "logprobs.content[%u]: expected an object", k);
			l->lp[k] = x ? lp_value(x, &ok) : -9999.0f;
			if (!ok)
				return err_set(e, "logprobs.content[%u].logprob: expected a number", k);
			int id = token_id_str(collect_str(v, "token"), &l->tid[k]);
			if (id < 0)
				return err_set(e, "logprobs.content[%u].token: \"%.40s\" is not token_id:N with N an integer", k,
					       collect_str(v, "token"));
			l->has_id[k] = (uint8_t)id;
			k++;
		}
		return 0;
	}
	if (!jsonpick_is_array(tlp))
		return err_set(e, "logprobs: neither \"content\" (chat) nor \"token_logprobs\" (completions)");
	if (lps_alloc(l, (uint32_t)jsonpick_size(tlp), e) < 0)
		return -1;
	for (v = jsonpick_iter_start(&it, tlp); v && r == 0; v = jsonpick_iter_next(&it)) {
		l->lp[k] = lp_value(v, &ok);
		if (!ok)
			r = err_set(e, "logprobs.token_logprobs[%u]: expected a number", k);
		k++;
	}
	jsonpick_iter_end(&it);
	if (r == 0 && jsonpick_is_array(toks)) {
		if ((uint32_t)jsonpick_size(toks) != l->n)
			return err_set(e, "logprobs: %d tokens for %u token_logprobs", jsonpick_size(toks), l->n);
		k = 0;
		for (v = jsonpick_iter_start(&it, toks); v && r == 0; v = jsonpick_iter_next(&it)) {
			int id = token_id_str(cJSON_IsString(v) ? v->valuestring : NULL, &l->tid[k]);
			if (id < 0)
				r = err_set(e, "logprobs.tokens[%u]: \"%.40s\" is not token_id:N with N an integer", k,
					    v->valuestring);
			l->has_id[k] = (uint8_t)(id > 0);
			k++;
		}
		jsonpick_iter_end(&it);
	}
	return r;
}

static const char no_prompt[] =
	"no prompt token ids: ask vLLM with \"return_token_ids\": true, or wrap the line as "
	"{\"request\": ..., \"response\": ...} with the request's prompt as token ids";

static int copy_ids(int32_t **out, uint32_t *n, const int32_t *src, uint32_t k, struct err *e)
{
	*out = malloc(k ? k * sizeof(int32_t) : 1);
	if (!*out)
		return err_set(e, "out of memory");
	memcpy(*out, src, k * sizeof(int32_t));
	*n = k;
	return 0;
}

/*
 * Choice i of n. The logprob entries cover the completion, or with echo the
 * prompt and then the completion; with echo and max_tokens 0 (prompt
 * scoring) only the prompt, and then the trajectory has an empty response.
 * Echo is known from the request, or from the counts: entries = prompt +
 * completion (or = prompt alone) where the completion's ids are given apart.
 */
static int parse_choice(const cJSON *ch, const cJSON *resp, const cJSON *req, uint32_t i, uint32_t n,
			struct traj *t, uint32_t *differs, struct err *e)
{
	struct lps l = { 0 };
	cJSON row, tmp;
	int r = -1;
	if (!cJSON_IsObject(ch))
		return err_set(e, "expected an object");
	const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(ch, "prompt_token_ids");
	if (!jsonpick_is_array(prompt))
		prompt = cJSON_GetObjectItemCaseSensitive(resp, "prompt_token_ids");
	int from_resp = jsonpick_is_array(prompt);
	if (!from_resp)
		prompt = request_prompt(req, i, n, &row);
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(ch, "token_ids");
	int echo = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "echo"));
	int score_only = echo && req_int(req, "max_tokens", -1) == 0;
	if (!jsonpick_is_array(prompt) && !(echo && !jsonpick_is_array(ids))) {
		const cJSON *rp = cJSON_GetObjectItemCaseSensitive(req, "prompt");
		if (nested(rp, &tmp))
			return collect_request_row_err(e, "request prompt", jsonpick_size(rp), "n", req_int(req, "n", 0),
						       n, "choice");
		return err_set(e, "%s", no_prompt);
	}
	if (jsonpick_is_array(prompt) &&
	    json_get_i32_array(prompt, "prompt_token_ids", &t->prompt_tokens, &t->n_prompt, e) < 0)
		goto out;
	if (from_resp)
		*differs += (uint32_t)collect_prompt_differs(request_prompt(req, i, n, &row), t);
	const cJSON *lpobj = cJSON_GetObjectItemCaseSensitive(ch, "logprobs");
	if (!cJSON_IsObject(lpobj)) {
		err_set(e, "no logprobs: ask vLLM with \"logprobs\" (0 for completions, true for chat)");
		goto out;
	}
	if (read_lps(lpobj, &l, e) < 0)
		goto out;
	uint32_t off = 0;   /* entries before the completion's */
	if (jsonpick_is_array(ids)) {
		if (json_get_i32_array(ids, "token_ids", &t->response_tokens, &t->n_response, e) < 0)
			goto out;
		/* echo with max_tokens 0: vLLM returns the one token it had to
		 * generate in token_ids, but logprobs of the prompt only, the
		 * first of them null; unwrapped, that signature tells it */
		if (score_only || (t->n_response == 1 && l.n > 1 && l.n == t->n_prompt && isnan(l.lp[0]))) {
			t->n_response = 0;
			off = l.n;
		} else if (l.n < t->n_response) {
			err_set(e, "%u logprobs for %u token_ids", l.n, t->n_response);
			goto out;
		} else
			off = l.n - t->n_response;
	} else {
		/* ids from "token_id:N" strings; with echo the prompt's come first */
		for (uint32_t k = 0; k < l.n; k++)
			if (!l.has_id[k]) {
				err_set(e, "no token ids: the logprob tokens are text; ask vLLM with "
					   "\"return_token_ids\" or \"return_tokens_as_token_ids\"");
				goto out;
			}
		if (echo) {
			if (!t->prompt_tokens) {
				/* the echoed entries are the prompt: how many, the usage says
				 * (one prompt) or max_tokens 0 says (all of them) */
				const cJSON *u = cJSON_GetObjectItemCaseSensitive(resp, "usage");
				int64_t np = score_only ? (int64_t)l.n : req_int(u, "prompt_tokens", -1);
				const cJSON *rp = cJSON_GetObjectItemCaseSensitive(req, "prompt");
				if (np < 0 || np > (int64_t)l.n || (jsonpick_is_array(rp) && !score_only)) {
					err_set(e, "echo: the logprobs cover prompt and completion, and nothing says where "
						   "the completion starts: ask vLLM with \"return_token_ids\": true");
					goto out;
				}
				if (copy_ids(&t->prompt_tokens, &t->n_prompt, l.tid, (uint32_t)np, e) < 0)
					goto out;
			}
			off = t->n_prompt;
			if (l.n < off || (score_only && l.n != off)) {
				err_set(e, "echo: %u logprobs for a prompt of %u tokens", l.n, off);
				goto out;
			}
		}
		if (copy_ids(&t->response_tokens, &t->n_response, l.tid + off, l.n - off, e) < 0)
			goto out;
	}
	/* echoed entries must be the prompt, where they name their ids */
	if (off && t->prompt_tokens && off != t->n_prompt) {
		err_set(e, "echo: %u logprob entries before the completion, but %u prompt ids", off, t->n_prompt);
		goto out;
	}
	for (uint32_t k = 0; k < off && k < t->n_prompt; k++)
		if (l.has_id[k] && l.tid[k] != t->prompt_tokens[k]) {
			err_set(e, "echo: logprobs token %u is token_id:%d, but prompt_token_ids[%u] is %d", k, l.tid[k],
				k, t->prompt_tokens[k]);
			goto out;
		}
	for (uint32_t k = 0; k < t->n_response; k++)
		if (l.has_id[off + k] && l.tid[off + k] != t->response_tokens[k]) {
			err_set(e, "logprobs token %u is token_id:%d, but token_ids[%u] is %d", off + k, l.tid[off + k],
				k, t->response_tokens[k]);
			goto out;
		}
	t->logprobs = malloc(t->n_response ? t->n_response * sizeof(float) : 1);
	if (!t->logprobs) {
		err_set(e, "out of memory");
		goto out;
	}
	memcpy(t->logprobs, l.lp + off, t->n_response * sizeof(float));
	if (traj_set_finish(t, collect_str(ch, "finish_reason")) < 0) {
		err_set(e, "out of memory");
		goto out;
	}
	r = 0;
out:
	lps_free(&l);
	return r;
}

/* Atropos' patched demo server: one list entry per choice. */
static int parse_demo(const cJSON *resp, struct traj *ts, uint32_t n, struct err *e)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(resp, "token_ids");
	const cJSON *lps = cJSON_GetObjectItemCaseSensitive(resp, "logprobs");
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(resp, "finish_reasons");
	const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(resp, "prompt_token_ids");
	if (!jsonpick_is_array(lps) || (uint32_t)jsonpick_size(lps) != n)
		return err_set(e, "logprobs: expected one list per token_ids entry (%u)", n);
	for (uint32_t c = 0; c < n; c++) {
		struct traj *t = &ts[c];
		cJSON rtmp, itmp;
		const cJSON *row = jsonpick_at(lps, (int)c, &rtmp);
		if (json_get_i32_array(prompt, "prompt_token_ids", &t->prompt_tokens, &t->n_prompt, e) < 0 ||
		    json_get_i32_array(jsonpick_at(ids, (int)c, &itmp), "token_ids", &t->response_tokens,
				       &t->n_response, e) < 0)
			return err_prefix(e, "choice %u", c);
		if (!jsonpick_is_array(row) || (uint32_t)jsonpick_size(row) != t->n_response)
			return err_set(e, "logprobs[%u]: expected %u entries, one per token id", c, t->n_response);
		t->logprobs = malloc(t->n_response ? t->n_response * sizeof(float) : 1);
		if (!t->logprobs)
			return err_set(e, "out of memory");
		uint32_t k = 0;
		int r = 0;
		struct jsonpick_iter it;
		for (const cJSON *pos = jsonpick_iter_start(&it, row); pos && r == 0; pos = jsonpick_iter_next(&it)) {
			/* [{"<id>": lp}, ...]: the sampled token comes first */
			const cJSON *d = cJSON_IsArray(pos) ? pos->child : pos;
			const cJSON *kv = cJSON_IsObject(d) ? d->child : NULL;
			int ok = 1;
			int32_t id;
			if (!kv || !kv->string || !json_int(kv->string, &id) || id != t->response_tokens[k]) {
				r = err_set(e, "logprobs[%u][%u]: expected [{\"%d\": logprob}]", c, k,
					    t->response_tokens[k]);
				break;
			}
			t->logprobs[k++] = lp_value(kv, &ok);
			if (!ok)
				r = err_set(e, "logprobs[%u][%u]: expected a number", c, k - 1);
		}
		jsonpick_iter_end(&it);
		if (r < 0)
			return -1;
		const cJSON *f = cJSON_GetArrayItem(fin, (int)c);
		if (traj_set_finish(t, cJSON_IsString(f) ? f->valuestring : NULL) < 0)
			return err_set(e, "out of memory");
	}
	return 0;
}

/* TRL 0.29 and later: one list per position, sorted by rank, with the ids
 * beside it; the sampled token's logprob is the entry whose id is the
 * completion's token there (vLLM always includes it; NaN came as null). */
static int trl_ranked(const cJSON *rows, const cJSON *idrows, uint32_t i, struct traj *t, struct err *e)
{
	const cJSON *pos = rows->child, *ids = idrows ? idrows->child : NULL;
	if (!ids)
		return err_set(e, "logprobs[%u]: lists per position need logprob_token_ids (TRL 0.29 and later)", i);
	t->logprobs = malloc(t->n_response ? t->n_response * sizeof(float) : 1);
	if (!t->logprobs)
		return err_set(e, "out of memory");
	for (uint32_t k = 0; k < t->n_response; k++, pos = pos->next, ids = ids->next) {
		const cJSON *lp = pos->child, *id = ids ? ids->child : NULL;
		int found = 0;
		if (!ids || !cJSON_IsArray(pos) || !cJSON_IsArray(ids) || cJSON_GetArraySize(pos) != cJSON_GetArraySize(ids))
			return err_set(e, "logprobs[%u][%u]: expected as many logprobs as logprob_token_ids[%u][%u]", i, k,
				       i, k);
		for (; lp && id && !found; lp = lp->next, id = id->next)
			if (cJSON_IsNumber(id) && id->valuedouble == (double)t->response_tokens[k]) {
				int ok = 1;
				t->logprobs[k] = lp_value(lp, &ok);
				if (!ok)
					return err_set(e, "logprobs[%u][%u]: expected numbers or null", i, k);
				found = 1;
			}
		if (!found)
			return err_set(e, "logprob_token_ids[%u][%u]: the sampled token %d is not among them", i, k,
				       t->response_tokens[k]);
	}
	return 0;
}

/* The request's prompts as token id lists ({"prompts": [[...], ...]}), or NULL. */
static const cJSON *trl_request_prompts(const cJSON *req)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(req, "prompts");
	cJSON tmp;
	return nested(p, &tmp) ? p : NULL;
}

/* The max_tokens vllm-serve's /generate/ sampled with, from the request it
 * answered: generation_kwargs' (TRL 0.24 on: it overrides the rest), else
 * the request's own, else its GenerateRequest's default, 16. -1 when there
 * is no request or the limit is not a positive whole number (null in
 * generation_kwargs: no limit but the model's length, which is not known). */
static long trl_max_tokens(const cJSON *req)
{
	if (!cJSON_IsObject(req))
		return -1;
	const cJSON *kw = cJSON_GetObjectItemCaseSensitive(req, "generation_kwargs");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(kw, "max_tokens");
	if (!m)
		m = cJSON_GetObjectItemCaseSensitive(req, "max_tokens");
	if (!m)
		return 16;
	if (!cJSON_IsNumber(m) || m->valuedouble < 1 || m->valuedouble > 1e9 || m->valuedouble != floor(m->valuedouble))
		return -1;
	return (long)m->valuedouble;
}

/* TRL's flattened form: completion i answers prompt i / (completions / prompts).
 * It gives no finish reason; where the request is known, a completion of
 * max_tokens tokens stopped at the limit ("length"), a shorter one at a
 * stop token ("stop"), as vLLM says them (grpo-collect(1)). */
static int parse_trl(const cJSON *resp, const cJSON *req, struct traj *ts, uint32_t n, uint32_t *differs,
		     struct err *e)
{
	const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(resp, "prompt_ids");
	const cJSON *sent = jsonpick_is_array(prompts) ? trl_request_prompts(req) : NULL;
	const cJSON *comps = cJSON_GetObjectItemCaseSensitive(resp, "completion_ids");
	const cJSON *lps = cJSON_GetObjectItemCaseSensitive(resp, "logprobs");
	const cJSON *lp_ids = cJSON_GetObjectItemCaseSensitive(resp, "logprob_token_ids");
	if (!jsonpick_is_array(prompts) && !(prompts = trl_request_prompts(req)))
		return err_set(e, "no prompt_ids: TRL 0.23 and earlier return none from vllm-serve's /generate/; "
			       "use TRL 0.24 or later, or wrap the line as {\"request\": {\"prompts\": [[ids...]], "
			       "...}, \"response\": ...} with the prompts sent as token ids");
	uint32_t np = (uint32_t)jsonpick_size(prompts);
	if (np == 0 || n % np)
		return err_set(e, "prompt_ids: %u prompts for %u completion_ids", np, n);
	if (cJSON_IsNull(lps) || !lps)
		return err_set(e, "no logprobs: ask vllm-serve's /generate/ with \"logprobs\": 0");
	if (!jsonpick_is_array(lps) || (uint32_t)jsonpick_size(lps) != n)
		return err_set(e, "logprobs: expected %u lists, one per completion", n);
	if (lp_ids && !cJSON_IsNull(lp_ids) && (!cJSON_IsArray(lp_ids) || (uint32_t)cJSON_GetArraySize(lp_ids) != n))
		return err_set(e, "logprob_token_ids: expected %u lists, one per completion", n);
	struct jsonpick_iter ic, il, ip;
	const cJSON *c = jsonpick_iter_start(&ic, comps), *l = jsonpick_iter_start(&il, lps);
	const cJSON *p = jsonpick_iter_start(&ip, prompts);
	const cJSON *li = cJSON_IsArray(lp_ids) ? lp_ids->child : NULL;
	int r = 0;
	for (uint32_t i = 0; i < n && r == 0; i++, c = jsonpick_iter_next(&ic), l = jsonpick_iter_next(&il),
	     li = li ? li->next : NULL) {
		struct traj *t = &ts[i];
		uint32_t k = 0;
		char what[48];
		cJSON tmp;
		if (i && i % (n / np) == 0)
			p = jsonpick_iter_next(&ip);
		snprintf(what, sizeof what, "prompt_ids[%u]", i / (n / np));
		if ((r = json_get_i32_array(p, what, &t->prompt_tokens, &t->n_prompt, e)) < 0)
			break;
		if (sent && (uint32_t)jsonpick_size(sent) == np)
			*differs += (uint32_t)collect_prompt_differs(jsonpick_at(sent, (int)(i / (n / np)), &tmp), t);
		snprintf(what, sizeof what, "completion_ids[%u]", i);
		if ((r = json_get_i32_array(c, what, &t->response_tokens, &t->n_response, e)) < 0)
			break;
		if (jsonpick_is_array(l) && (uint32_t)jsonpick_size(l) != t->n_response)
			r = err_set(e, "logprobs[%u]: %d logprobs for %u completion_ids", i, jsonpick_size(l),
				    t->n_response);
		else if (nested(l, &tmp)) {   /* a ranked list per position: never a span's row */
			if (!li || (uint32_t)cJSON_GetArraySize(li) != t->n_response)
				r = err_set(e, "logprob_token_ids[%u]: expected %u lists, one per position", i,
					    t->n_response);
			else
				r = trl_ranked(l, li, i, t, e);
		} else {
			snprintf(what, sizeof what, "logprobs[%u]", i);
			r = json_get_f32_array(l, what, &t->logprobs, &k, e);
		}
	}
	jsonpick_iter_end(&ic);
	jsonpick_iter_end(&il);
	jsonpick_iter_end(&ip);
	long max = trl_max_tokens(req);
	for (uint32_t i = 0; i < n && r == 0 && max > 0; i++)
		if (traj_set_finish(&ts[i], ts[i].n_response >= (uint32_t)max ? "length" : "stop") < 0)
			r = err_set(e, "out of memory");
	return r;
}

/* A streamed response arrives as chunks, each a few tokens of one choice
 * (and SSE "data:" lines around them): never a rollout on its own. */
static int stream_chunk(const cJSON *resp, const cJSON *req, struct err *e)
{
	static const char how[] = "grpo-collect reads whole responses: ask with \"stream\": false";
	const char *obj = collect_str(resp, "object");
	const cJSON *ch;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stream")))
		return err_set(e, "a streamed response (the request has \"stream\": true): %s", how);
	if (obj && strlen(obj) > 6 && strcmp(obj + strlen(obj) - 6, ".chunk") == 0)
		return err_set(e, "a stream chunk (\"object\": \"%s\"), not a whole response: %s", obj, how);
	cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(resp, "choices")) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(ch, "finish_reason");
		if (cJSON_GetObjectItemCaseSensitive(ch, "delta"))
			return err_set(e, "a stream chunk (choices hold \"delta\"), not a whole response: %s", how);
		if (f && cJSON_IsNull(f))
			return err_set(e, "a stream chunk (\"finish_reason\": null: the sequence goes on in later "
				       "chunks), not a whole response: %s", how);
	}
	if (obj && strcmp(obj, "text_completion") == 0 && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(resp, "usage")))
		return err_set(e, "a stream chunk (\"usage\": null; a whole response counts its tokens), "
			       "not a whole response: %s", how);
	return 0;
}

int collect_vllm(const cJSON *resp, const cJSON *req, struct collect_line *out, struct err *e)
{
	if (!cJSON_IsObject(resp))
		return err_set(e, "a vLLM response must be a JSON object");
	const cJSON *trl_ids = cJSON_GetObjectItemCaseSensitive(resp, "completion_ids");
	if (jsonpick_is_array(trl_ids)) {
		uint32_t n = (uint32_t)jsonpick_size(trl_ids);
		if (n == 0)
			return err_set(e, "completion_ids: empty");
		struct traj *ts = collect_trajs_new(n, request_temperature(req));
		if (!ts)
			return err_set(e, "out of memory");
		if (parse_trl(resp, req, ts, n, &out->prompt_differs, e) < 0) {
			collect_trajs_free(ts, n);
			return -1;
		}
		return collect_group_runs(out, ts, n, e);
	}
	if (stream_chunk(resp, req, e) < 0)
		return -1;
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(resp, "choices");
	const cJSON *demo_ids = cJSON_GetObjectItemCaseSensitive(resp, "token_ids");
	int demo = !choices && jsonpick_is_array(demo_ids);
	if (!demo && !cJSON_IsArray(choices))
		return err_set(e, "choices: expected an array");
	uint32_t n = (uint32_t)jsonpick_size(demo ? demo_ids : choices);
	if (n == 0)
		return err_set(e, "%s: empty", demo ? "token_ids" : "choices");
	if (!out->id) {
		const char *id = collect_str(resp, "id");
		if (!id)
			id = collect_str(resp, "request_id");
		if (id && !(out->id = strdup(id)))
			return err_set(e, "out of memory");
	}
	struct traj *ts = collect_trajs_new(n, request_temperature(req));
	if (!ts)
		return err_set(e, "out of memory");
	int r = 0;
	if (demo)
		r = parse_demo(resp, ts, n, e);
	else {
		const cJSON *ch;
		uint32_t i = 0;
		cJSON_ArrayForEach(ch, choices) {
			if ((r = parse_choice(ch, resp, req, i, n, &ts[i], &out->prompt_differs, e)) < 0) {
				err_prefix(e, "choices[%u]", i);
				break;
			}
			i++;
		}
	}
	if (r < 0) {
		collect_trajs_free(ts, n);
		return -1;
	}
	uint32_t first = out->n_groups;
	if (collect_group_runs(out, ts, n, e) < 0)
		return -1;
	const char *id = collect_str(resp, "id");
	if (!id)
		id = collect_str(resp, "request_id");
	for (uint32_t k = first; k < out->n_groups; k++)
		if (collect_name_group(&out->groups[k], id, out->n_groups - first > 1, k - first, e) < 0)
			return -1;
	return 0;
}
