/* collect_sglang.c: SGLang's native /generate response (formats.md section 2).
 *
 * One response object, or a JSON array of them (a batched request or n > 1).
 * Token ids and logprobs come from meta_info.output_token_logprobs, triples
 * [logprob, token_id, text|null], which hold the matched EOS that "text" (and
 * on older versions "output_ids") leave out. The response carries the prompt
 * ids only as meta_info.input_token_logprobs, and only when it covers the
 * whole prompt (the request's logprob_start_len was 0); those are the ids the
 * server conditioned on, and are kept over the request's (counted where they
 * differ); otherwise they come from a wrapper's request "input_ids" (one list
 * for all members, or one list per prompt of a batch).
 *
 * The triples and the request's ids may be spans (data/jsonpick.h): they
 * are read through jsonpick's functions, never cJSON's.
 */
#include <cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collect.h"
#include "data/jsonpick.h"
#include "data/jsonview.h"

/* The finish reason as SGLang gives it, a string or {"type": ...}; kept
 * whatever it is (stop, length, abort, ...). */
static const char *finish_of(const cJSON *meta)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(meta, "finish_reason");
	return cJSON_IsString(f) ? f->valuestring : collect_str(f, "type");
}

/* The token ids (and, if lp is not NULL, the logprobs) of a list of triples. */
static int triples(const cJSON *arr, const char *what, int32_t **ids, float **lp, uint32_t *n, struct err *e)
{
	uint32_t m = (uint32_t)jsonpick_size(arr), k = 0;
	const cJSON *v;
	struct jsonpick_iter it;
	int r = 0;
	*ids = malloc(m ? m * sizeof(int32_t) : 1);
	if (lp)
		*lp = malloc(m ? m * sizeof(float) : 1);
	if (!*ids || (lp && !*lp))
		return err_set(e, "out of memory");
	for (v = jsonpick_iter_start(&it, arr); v && r == 0; v = jsonpick_iter_next(&it), k++) {
		/* the triple's first two, the first copied before the second takes its place */
		struct jsonpick_iter t;
		const cJSON *first = jsonpick_iter_start(&t, v), *x = NULL, *id = NULL;
		cJSON x0;
		if (first) {
			x0 = *first;
			x = &x0;
			id = jsonpick_iter_next(&t);
		}
		double d = cJSON_IsNumber(id) ? id->valuedouble : NAN;
		jsonpick_iter_end(&t);
		if (!jsonpick_is_array(v) || !(d == floor(d) && d >= INT32_MIN && d <= INT32_MAX))
			r = err_set(e, "%s[%u]: expected [logprob, token_id, text]", what, k);
		else if (lp && !cJSON_IsNumber(x) && !cJSON_IsNull(x))
			r = err_set(e, "%s[%u][0]: expected a number", what, k);
		else {
			(*ids)[k] = (int32_t)d;
			if (lp)
				(*lp)[k] = cJSON_IsNumber(x) ? (float)x->valuedouble : NAN;
		}
	}
	jsonpick_iter_end(&it);
	*n = m;
	return r;
}

/* Samples per prompt that the request asked for: sampling_params.n (of its
 * first entry, for a list), 0 where it does not say. */
static int64_t request_n(const cJSON *req)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(req, "sampling_params");
	if (cJSON_IsArray(params))
		params = params->child;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "n");
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* The request's "input_ids" when they are one list per prompt of a batch, else NULL. */
static const cJSON *request_batch(const cJSON *req, cJSON *tmp)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "input_ids");
	return jsonpick_is_array(ids) && jsonpick_is_array(jsonpick_at(ids, 0, tmp)) ? ids : NULL;
}

/* Member k's prompt from the request: "input_ids" as one list, or as one list
 * per prompt with the members coming prompt by prompt, sampling_params.n
 * each (a row of a span is described in *tmp). */
static const cJSON *request_prompt(const cJSON *req, uint32_t k, uint32_t n, cJSON *tmp)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "input_ids");
	if (!jsonpick_is_array(ids))
		return NULL;
	if (request_batch(req, tmp))
		return collect_request_row(ids, k, n, request_n(req), tmp);
	return ids;
}

static int parse_member(const cJSON *m, const cJSON *req, uint32_t k, uint32_t n, struct traj *t,
			uint32_t *differs, struct err *e)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m, "meta_info");
	if (!cJSON_IsObject(meta))
		return err_set(e, "no meta_info: not an SGLang /generate response");
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(meta, "output_token_logprobs");
	cJSON tmp;
	if (!jsonpick_is_array(out))
		return err_set(e, "no meta_info.output_token_logprobs: ask SGLang with \"return_logprob\": true");
	if (triples(out, "meta_info.output_token_logprobs", &t->response_tokens, &t->logprobs, &t->n_response, e) < 0)
		return -1;
	const cJSON *prompt = request_prompt(req, k, n, &tmp);
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(meta, "input_token_logprobs");
	const cJSON *np = cJSON_GetObjectItemCaseSensitive(meta, "prompt_tokens");
	if (jsonpick_is_array(in) && cJSON_IsNumber(np) && (double)jsonpick_size(in) == np->valuedouble) {
		if (triples(in, "meta_info.input_token_logprobs", &t->prompt_tokens, NULL, &t->n_prompt, e) < 0)
			return -1;
		*differs += (uint32_t)collect_prompt_differs(prompt, t);
	} else if (prompt) {
		if (json_get_i32_array(prompt, "request input_ids", &t->prompt_tokens, &t->n_prompt, e) < 0)
			return -1;
	} else if (request_batch(req, &tmp))
		return collect_request_row_err(e, "request input_ids", jsonpick_size(request_batch(req, &tmp)),
					       "sampling_params.n", request_n(req), n, "member");
	else
		return err_set(e, "no prompt token ids: SGLang returns them only with \"logprob_start_len\": 0; "
			       "or wrap the line as {\"request\": ..., \"response\": ...}");
	if (traj_set_finish(t, finish_of(meta)) < 0)
		return err_set(e, "out of memory");
	/* weight_version is "default" unless the server was told a version */
	const char *wv = collect_str(meta, "weight_version");
	if (wv && *wv && strspn(wv, "0123456789") == strlen(wv) && strlen(wv) < 16)
		t->policy_version = strtoll(wv, NULL, 10);
	return 0;
}

int collect_sglang(const cJSON *resp, const cJSON *req, struct collect_line *out, struct err *e)
{
	int arr = cJSON_IsArray(resp);
	if (!arr && !cJSON_IsObject(resp))
		return err_set(e, "an SGLang response must be an object or an array of them");
	uint32_t n = arr ? (uint32_t)cJSON_GetArraySize(resp) : 1;
	if (n == 0)
		return err_set(e, "an empty array");
	const cJSON *first = arr ? resp->child : resp;
	if (!out->id) {
		const char *id = collect_str(cJSON_GetObjectItemCaseSensitive(first, "meta_info"), "id");
		if (id && !(out->id = strdup(id)))
			return err_set(e, "out of memory");
	}
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(req, "sampling_params");
	if (cJSON_IsArray(params))
		params = params->child;
	struct traj *ts = collect_trajs_new(n, collect_temperature(params));
	if (!ts)
		return err_set(e, "out of memory");
	int r = 0;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		const cJSON *m = arr ? cJSON_GetArrayItem(resp, (int)i) : resp;
		if (!cJSON_IsObject(m))
			r = err_set(e, "expected an object");
		else
			r = parse_member(m, req, i, n, &ts[i], &out->prompt_differs, e);
		if (r < 0 && arr)
			err_prefix(e, "[%u]", i);
	}
	if (r < 0) {
		collect_trajs_free(ts, n);
		return -1;
	}
	uint32_t g0 = out->n_groups;
	if (collect_group_runs(out, ts, n, e) < 0)
		return -1;
	/* each group after the id of its first member (SGLang gives every sample its own) */
	for (uint32_t k = g0, at = 0; k < out->n_groups; at += out->groups[k].n, k++) {
		const cJSON *m = arr ? cJSON_GetArrayItem(resp, (int)at) : resp;
		const char *id = collect_str(cJSON_GetObjectItemCaseSensitive(m, "meta_info"), "id");
		if (collect_name_group(&out->groups[k], id, 0, 0, e) < 0)
			return -1;
	}
	return 0;
}
