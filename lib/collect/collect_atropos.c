/* collect_atropos.c: Atropos ScoredDataGroup (formats.md section 3).
 *
 * A group holds parallel rows, one per member: tokens (prompt + completion),
 * masks (-100 where no loss, else the token id), inference_logprobs (1.0 at
 * prompt positions) and one score each. A member's prompt is its leading run
 * of -100 masks; later -100 masks (tool output in a multi-turn response)
 * become response_mask 0, with logprob 0 stored there since Atropos keeps
 * only a placeholder at such positions. Also accepted: the single-member
 * ScoredDataItem (flat rows), a JSON array of groups (/scored_data_list) and
 * a {"batch": [...]} reply (GET /batch).
 *
 * Atropos groups arrive scored, so the trajectories are stored scored:
 *   rewards      [score], reward_names ["score"]
 *   advantages   as Atropos' trainer computes it: (score - mean) / max(std,
 *                1e-8) over the group (population std) when it has more than
 *                one member, else the score; a member's per-token
 *                "advantages" row, when given, replaces it (it must be one
 *                value over the trained tokens); overrides[i] or
 *                group_overrides with "set_advantage_to_zero" make it 0
 *   successes    1 when the score is above 0, else 0
 *   ref_logprobs the completion part of "ref_logprobs" when given
 *   temperature  overrides[i].temperature > generation_params.temperature >
 *                group_overrides.temperature > --temperature
 *
 * The rows may be spans (data/jsonpick.h): they are read through jsonpick's
 * functions, never cJSON's.
 */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collect.h"
#include "data/jsonpick.h"
#include "data/jsonview.h"

static int is_true(const cJSON *o, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* Row i of a per-member field: rows[i] (a span's described in *tmp), or
 * the field itself for an item. */
static const cJSON *row(const cJSON *field, int item, uint32_t i, cJSON *tmp)
{
	if (!field || cJSON_IsNull(field))
		return NULL;
	return item ? field : jsonpick_at(field, (int)i, tmp);
}

static int f32_row(const cJSON *r, const char *what, uint32_t i, uint32_t T, float **out, struct err *e)
{
	uint32_t n = 0;
	char name[64];
	snprintf(name, sizeof name, "%s[%u]", what, i);
	if (json_get_f32_array(r, name, out, &n, e) < 0)
		return -1;
	if (n != T)
		return err_set(e, "%s has %u entries, tokens[%u] %u", name, n, i, T);
	return 0;
}

static int member(const cJSON *g, int item, uint32_t i, float adv, struct traj *t, struct err *e)
{
	int32_t *tok = NULL, *mask = NULL;
	float *lp = NULL, *adv_row = NULL, *ref = NULL;
	uint32_t T = 0, nm = 0;
	char name[64];
	cJSON tmp;
	int r = -1;
	snprintf(name, sizeof name, "tokens[%u]", i);
	if (json_get_i32_array(row(cJSON_GetObjectItemCaseSensitive(g, "tokens"), item, i, &tmp), name, &tok, &T, e) < 0)
		goto out;
	snprintf(name, sizeof name, "masks[%u]", i);
	if (json_get_i32_array(row(cJSON_GetObjectItemCaseSensitive(g, "masks"), item, i, &tmp), name, &mask, &nm, e) < 0)
		goto out;
	if (nm != T) {
		err_set(e, "masks[%u] has %u entries, tokens[%u] %u", i, nm, i, T);
		goto out;
	}
	/* without inference_logprobs the trajectory has none (logprobs NULL),
	 * which the collector refuses unless --allow-missing-logprobs */
	const cJSON *ilp = row(cJSON_GetObjectItemCaseSensitive(g, "inference_logprobs"), item, i, &tmp);
	if (ilp && !cJSON_IsNull(ilp) && f32_row(ilp, "inference_logprobs", i, T, &lp, e) < 0)
		goto out;
	const cJSON *ar = row(cJSON_GetObjectItemCaseSensitive(g, "advantages"), item, i, &tmp);
	if (ar && !cJSON_IsNull(ar) && f32_row(ar, "advantages", i, T, &adv_row, e) < 0)
		goto out;
	const cJSON *rr = row(cJSON_GetObjectItemCaseSensitive(g, "ref_logprobs"), item, i, &tmp);
	if (rr && !cJSON_IsNull(rr) && f32_row(rr, "ref_logprobs", i, T, &ref, e) < 0)
		goto out;

	uint32_t p = 0;
	while (p < T && mask[p] == -100)
		p++;
	uint32_t R = T - p, trained = 0;
	t->n_prompt = p;
	t->n_response = R;
	t->prompt_tokens = malloc(p ? p * sizeof(int32_t) : 1);
	t->response_tokens = malloc(R ? R * sizeof(int32_t) : 1);
	t->logprobs = lp ? malloc(R ? R * sizeof(float) : 1) : NULL;
	t->response_mask = malloc(R ? R : 1);
	if (ref)
		t->ref_logprobs = malloc(R ? R * sizeof(float) : 1);
	if (!t->prompt_tokens || !t->response_tokens || (lp && !t->logprobs) || !t->response_mask ||
	    (ref && !t->ref_logprobs)) {
		err_set(e, "out of memory");
		goto out;
	}
	memcpy(t->prompt_tokens, tok, p * sizeof(int32_t));
	memcpy(t->response_tokens, tok + p, R * sizeof(int32_t));
	int have_adv = 0;
	float row_adv = 0;
	for (uint32_t k = 0; k < R; k++) {
		int32_t m = mask[p + k];
		if (m != -100 && m != tok[p + k]) {
			err_set(e, "masks[%u][%u] is %d, neither -100 nor the token id %d", i, p + k, m, tok[p + k]);
			goto out;
		}
		int on = m != -100;
		t->response_mask[k] = (uint8_t)on;
		if (lp)
			t->logprobs[k] = on ? lp[p + k] : 0.0f;
		if (ref) {
			t->ref_logprobs[k] = on ? ref[p + k] : 0.0f;
			if (on && !(isfinite(ref[p + k]) && ref[p + k] <= 0)) {
				err_set(e, "ref_logprobs[%u][%u] is not a finite number <= 0", i, p + k);
				goto out;
			}
		}
		if (on && adv_row) {
			if (have_adv && adv_row[p + k] != row_adv) {
				err_set(e, "advantages[%u] varies over the trained tokens (%g at %u, %g before); "
					   "a trajectory holds one advantage", i, (double)adv_row[p + k], p + k, (double)row_adv);
				goto out;
			}
			if (!isfinite(adv_row[p + k])) {
				err_set(e, "advantages[%u][%u] is not a finite number", i, p + k);
				goto out;
			}
			row_adv = adv_row[p + k];
			have_adv = 1;
		}
		trained += (uint32_t)on;
	}
	if (trained == R) {
		free(t->response_mask);
		t->response_mask = NULL;
	}
	t->advantage = have_adv ? row_adv : adv;
	r = 0;
out:
	free(tok);
	free(mask);
	free(lp);
	free(adv_row);
	free(ref);
	return r;
}

static int one_group(const cJSON *g, struct collect_line *out, struct err *e)
{
	if (!cJSON_IsObject(g))
		return err_set(e, "a ScoredDataGroup must be a JSON object");
	const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(g, "tokens");
	const cJSON *scores = cJSON_GetObjectItemCaseSensitive(g, "scores");
	const cJSON *masks = cJSON_GetObjectItemCaseSensitive(g, "masks");
	cJSON tmp;
	if (!jsonpick_is_array(tokens))
		return err_set(e, "tokens: expected an array");
	/* a ScoredDataItem has flat rows and a scalar score */
	const cJSON *first = jsonpick_at(tokens, 0, &tmp);
	int item = !first || cJSON_IsNumber(first);
	uint32_t n = item ? 1 : (uint32_t)jsonpick_size(tokens);
	if (n == 0)
		return err_set(e, "tokens: a group needs at least one member");
	if (!jsonpick_is_array(masks))
		return err_set(e, "masks: expected an array");
	if (!item && (uint32_t)jsonpick_size(masks) != n)
		return err_set(e, "masks has %d rows, tokens %u", jsonpick_size(masks), n);
	static const char *rows[] = { "inference_logprobs", "advantages", "ref_logprobs", "overrides" };
	for (int k = 0; k < 4 && !item; k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, rows[k]);
		if (v && !cJSON_IsNull(v) && (!jsonpick_is_array(v) || (uint32_t)jsonpick_size(v) != n))
			return err_set(e, "%s: expected %u rows, one per member", rows[k], n);
	}

	/* scores, and the advantages Atropos' trainer derives from them */
	double *s = calloc(n, sizeof *s), mean = 0, var = 0;
	if (!s)
		return err_set(e, "out of memory");
	uint32_t i = 0;
	if (item) {
		if (!cJSON_IsNumber(scores)) {
			free(s);
			return err_set(e, "scores: expected a number");
		}
		s[0] = scores->valuedouble;
	} else {
		const cJSON *v;
		if (!cJSON_IsArray(scores) || (uint32_t)cJSON_GetArraySize(scores) != n) {
			free(s);
			return err_set(e, "scores: expected %u numbers, one per member", n);
		}
		cJSON_ArrayForEach(v, scores) {
			s[i] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
			i++;
		}
	}
	for (i = 0; i < n; i++) {
		if (!isfinite(s[i])) {
			free(s);
			return err_set(e, "scores[%u] is not a finite number", i);
		}
		mean += s[i] / n;
	}
	for (i = 0; i < n; i++)
		var += (s[i] - mean) * (s[i] - mean) / n;
	double sd = sqrt(var) > 1e-8 ? sqrt(var) : 1e-8;

	const cJSON *ov = cJSON_GetObjectItemCaseSensitive(g, "overrides");
	const cJSON *gov = cJSON_GetObjectItemCaseSensitive(g, "group_overrides");
	float t_gen = collect_temperature(cJSON_GetObjectItemCaseSensitive(g, "generation_params"));
	float t_group = collect_temperature(gov);
	struct group *grp = collect_add_group(out, n, e);
	if (!grp) {
		free(s);
		return -1;
	}
	int r = 0;
	for (i = 0; i < n && r == 0; i++) {
		struct traj *t = &grp->trajs[i];
		const cJSON *o = item ? (cJSON_IsObject(ov) ? ov : NULL) : row(ov, 0, i, &tmp);
		float adv = (float)(n > 1 ? (s[i] - mean) / sd : s[i]);
		if ((r = member(g, item, i, adv, t, e)) < 0)
			break;
		if (is_true(o, "set_advantage_to_zero") || is_true(gov, "set_advantage_to_zero"))
			t->advantage = 0.0f;
		float temp = collect_temperature(o);
		t->temperature = !isnan(temp) ? temp : !isnan(t_gen) ? t_gen : t_group;
		t->scored = 1;
		t->n_rewards = 1;
		t->rewards = malloc(sizeof(float));
		t->successes = malloc(sizeof(float));
		t->reward_names = calloc(1, sizeof(char *));
		if (!t->rewards || !t->successes || !t->reward_names || !(t->reward_names[0] = strdup("score"))) {
			r = err_set(e, "out of memory");
			break;
		}
		t->rewards[0] = (float)s[i];
		t->successes[0] = s[i] > 0 ? 1.0f : 0.0f;
	}
	free(s);
	return r;
}

int collect_atropos(const cJSON *v, struct collect_line *out, struct err *e)
{
	const cJSON *batch = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "batch") : NULL;
	const cJSON *list = cJSON_IsArray(v) ? v : cJSON_IsArray(batch) ? batch : NULL;
	if (!list)
		return one_group(v, out, e);
	const cJSON *g;
	uint32_t k = 0;
	cJSON_ArrayForEach(g, list) {
		if (one_group(g, out, e) < 0)
			return err_prefix(e, "%s[%u]", list == v ? "" : "batch", k);
		k++;
	}
	if (k == 0)
		return err_set(e, "no groups");
	return 0;
}
