/* check.c: see check.h. */
#include "data/check.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/unicode.h"

static const char *nonfinite_name(float f)
{
	return isnan(f) ? "NaN" : f > 0 ? "Infinity" : "-Infinity";
}

/* a (n values, or a scalar) must be finite, and with `logprob` also <= 0. */
static int check_floats(const float *a, uint32_t n, int scalar, int logprob, const char *field, struct err *e)
{
	for (uint32_t k = 0; a && k < n; k++) {
		char at[16] = "";
		if (!scalar)
			snprintf(at, sizeof at, "[%u]", k);
		if (!isfinite(a[k]))
			return err_set(e, "%s%s is %s, not a finite number", field, at, nonfinite_name(a[k]));
		if (logprob && a[k] > 0)
			return err_set(e, "%s%s is %.9g, but a logprob is at most 0", field, at, a[k]);
	}
	return 0;
}

static int check_temperature(float t, const char *field, struct err *e)
{
	if (!isfinite(t))
		return err_set(e, "%s is %s, not a finite number", field, nonfinite_name(t));
	if (!(t > 0))
		return err_set(e, "%s is %.9g, not above 0", field, t);
	return 0;
}

static int check_tokens(const int32_t *a, uint32_t n, const char *field, struct err *e)
{
	for (uint32_t k = 0; a && k < n; k++)
		if (a[k] < 0)
			return err_set(e, "%s[%u] is %" PRId32 ", but a token id is at least 0", field, k, a[k]);
	return 0;
}

static int check_bits(const uint8_t *a, uint32_t n, const char *field, struct err *e)
{
	for (uint32_t k = 0; a && k < n; k++)
		if (a[k] > 1)
			return err_set(e, "%s[%u] is %u, not 0 or 1", field, k, a[k]);
	return 0;
}

static int check_exact(int64_t v, const char *field, struct err *e)
{
	if (v > TRAJ_INT_MAX)
		return err_set(e, "%s is %" PRId64 ", past 2^53 - 1, the largest integer JSON numbers hold exactly",
			       field, v);
	return 0;
}

/* A policy version or a step: -1 (none) or a count from 0 that JSON holds exactly. */
static int check_version(int64_t v, const char *field, struct err *e)
{
	if (v < -1)
		return err_set(e, "%s is %" PRId64 ", but a version is at least 0 (or -1 for none)", field, v);
	return check_exact(v, field, e);
}

/* A string field (NULL: absent) must be UTF-8, as the JSON view's strings
 * are: printed raw, other bytes would make its lines no JSON. */
static int check_text(const char *s, const char *field, struct err *e)
{
	size_t n = s ? strlen(s) : 0, bad = s ? uni_utf8_check((const unsigned char *)s, n) : 0;
	if (bad < n)
		return err_set(e, "%s is not UTF-8 (its byte %zu, 0x%02x, begins no valid character)", field, bad + 1,
			       (unsigned char)s[bad]);
	return 0;
}

static int check_texts(char *const *s, uint32_t n, const char *field, struct err *e)
{
	for (uint32_t k = 0; s && k < n; k++) {
		char f[48];
		snprintf(f, sizeof f, "%s[%u]", field, k);
		if (check_text(s[k], f, e) < 0)
			return -1;
	}
	return 0;
}

static int check_id(const struct traj_id *id, const char *field, struct err *e)
{
	if (id->str)
		return check_text(id->str, field, e);
	if (id->num < -1)
		return err_set(e, "%s is %" PRId64 ", but an integer id is at least 0, or -1 for none", field, id->num);
	return check_exact(id->num, field, e);
}

int traj_check(const struct traj *t, struct err *e)
{
	if (check_tokens(t->prompt_tokens, t->n_prompt, "prompt_tokens", e) < 0 ||
	    check_tokens(t->response_tokens, t->n_response, "response_tokens", e) < 0 ||
	    check_floats(t->logprobs, t->n_response, 0, 1, "logprobs", e) < 0 ||
	    check_bits(t->response_mask, t->n_response, "response_mask", e) < 0 ||
	    check_temperature(t->temperature, "temperature", e) < 0 ||
	    check_id(&t->sequence_id, "sequence_id", e) < 0 || check_id(&t->group_id, "group_id", e) < 0 ||
	    check_version(t->policy_version, "policy_version", e) < 0 ||
	    check_text(t->answer, "answer", e) < 0 || check_text(t->run, "run", e) < 0 ||
	    check_text(t->finish_reason, "finish_reason", e) < 0)
		return -1;
	if (t->scored && (check_floats(t->ref_logprobs, t->n_response, 0, 1, "ref_logprobs", e) < 0 ||
			  check_texts(t->reward_names, t->n_rewards, "reward_names", e) < 0 ||
			  check_floats(t->rewards, t->n_rewards, 0, 0, "rewards", e) < 0 ||
			  check_floats(&t->advantage, 1, 1, 0, "advantages", e) < 0 ||
			  check_floats(t->successes, t->n_rewards, 0, 0, "successes", e) < 0))
		return -1;
	return 0;
}

int group_check(const struct group *g, struct err *e)
{
	if (check_id(&g->group_id, "group_id", e) < 0)
		return -1;
	for (uint32_t i = 0; i < g->n; i++)
		if (traj_check(&g->trajs[i], e) < 0)
			return err_prefix(e, "trajectory %u", i);
	return 0;
}

/* The spans of seq_lens: positions count up from 0 in each; a span's first
 * token, its prompt and padding are never trained. */
static int check_spans(const struct microbatch *mb, struct err *e)
{
	uint32_t at = 0;
	for (uint32_t j = 0; j < mb->n_seq_lens; j++) {
		uint32_t len = mb->seq_lens[j];
		int pad = j >= mb->n_seqs;
		uint32_t np = !pad && mb->prompt_lens ? mb->prompt_lens[j] : 0;
		if (len == 0)
			return err_set(e, "seq_lens[%u] is 0", j);
		if (np > len)
			return err_set(e, "prompt_lens[%u] is %u, more than seq_lens[%u] %u", j, np, j, len);
		for (uint32_t x = 0; x < len; x++) {
			uint32_t i = at + x;
			if (mb->position_ids[i] != (int32_t)x)
				return err_set(e, "position_ids[%u] is %" PRId32 ", expected %u (%s %u starts at %u)", i,
					       mb->position_ids[i], x, pad ? "padding span" : "sequence", j, at);
			if (mb->loss_mask[i] && (x == 0 || pad || x < np))
				return err_set(e, "loss_mask[%u] is 1 on %s of %s %u", i,
					       x == 0 ? "the first token" : pad ? "padding" : "a prompt token",
					       pad ? "padding span" : "sequence", j);
		}
		at += len;
	}
	return 0;
}

int mb_check(const struct microbatch *mb, struct err *e)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < mb->n_seq_lens; i++)
		sum += mb->seq_lens[i];
	if (sum != mb->n_tokens)
		return err_set(e, "seq_lens sum to %llu, micro-batch has %u tokens", (unsigned long long)sum, mb->n_tokens);
	if (mb->n_seqs > mb->n_seq_lens)
		return err_set(e, "%u sequence_ids for %u seq_lens", mb->n_seqs, mb->n_seq_lens);
	if (mb->n_seq_lens - mb->n_seqs > 1)
		return err_set(e, "%u seq_lens for %u sequences: only one padding span may follow them",
			       mb->n_seq_lens, mb->n_seqs);
	uint32_t T = mb->n_tokens;
	if (check_floats(mb->advantages, T, 0, 0, "advantages", e) < 0 ||
	    check_floats(mb->inference_logprobs, T, 0, 1, "inference_logprobs", e) < 0 ||
	    check_floats(mb->ref_logprobs, T, 0, 1, "ref_logprobs", e) < 0 ||
	    check_floats(mb->rewards, mb->n_seqs, 0, 0, "rewards", e) < 0 ||
	    check_tokens(mb->input_ids, T, "input_ids", e) < 0 ||
	    check_bits(mb->loss_mask, T, "loss_mask", e) < 0 ||
	    check_bits(mb->logprobs_missing, mb->n_seqs, "logprobs_missing", e) < 0)
		return -1;
	for (uint32_t i = 0; mb->temperatures && i < T; i++) {
		char f[32];
		snprintf(f, sizeof f, "temperatures[%u]", i);
		if (check_temperature(mb->temperatures[i], f, e) < 0)
			return -1;
	}
	if (check_version(mb->step, "step", e) < 0 || check_text(mb->run, "run", e) < 0 ||
	    check_texts(mb->finish_reasons, mb->n_seqs, "finish_reasons", e) < 0)
		return -1;
	for (uint32_t j = 0; j < mb->n_seqs; j++) {
		char f[32];
		snprintf(f, sizeof f, "sequence_ids[%u]", j);
		if (mb->sequence_ids && check_id(&mb->sequence_ids[j], f, e) < 0)
			return -1;
		snprintf(f, sizeof f, "group_ids[%u]", j);
		if (mb->group_ids && check_id(&mb->group_ids[j], f, e) < 0)
			return -1;
		snprintf(f, sizeof f, "policy_versions[%u]", j);
		if (mb->policy_versions && check_version(mb->policy_versions[j], f, e) < 0)
			return -1;
	}
	if (mb->position_ids && mb->loss_mask)
		return check_spans(mb, e);
	return 0;
}
