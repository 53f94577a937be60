/* mbbuild.c: see mbbuild.h. */
#include "data/mbbuild.h"

#include <stdlib.h>
#include <string.h>

uint32_t mb_trained_tokens(const struct traj *t, uint32_t use)
{
	uint32_t n = 0;
	for (uint32_t j = 0; j < t->n_response; j++) {
		uint32_t pos = t->n_prompt + j;
		if (pos >= use)
			break;
		if (pos > 0 && (!t->response_mask || t->response_mask[j]))
			n++;
	}
	return n;
}

int mb_build(struct microbatch *mb, const struct traj *const *seqs, const uint32_t *use, uint32_t n,
	     const struct mbbuild_opt *o, int32_t rank, int32_t index, struct err *e)
{
	memset(mb, 0, sizeof *mb);
	uint32_t P = o->pad_multiple > 1 ? o->pad_multiple : 1;
	uint64_t L = 0;
	/* reference logprobs only where every sequence has them: a 0 standing
	 * for one that was never taken would pass for the reference's own
	 * logprob in the KL (grpo-step --beta refuses a micro-batch without) */
	int all_ref = n > 0, any_missing = 0;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t full = seqs[j]->n_prompt + seqs[j]->n_response;
		L += use && use[j] < full ? use[j] : full;
		all_ref &= seqs[j]->ref_logprobs != NULL;
		any_missing |= seqs[j]->logprobs == NULL;
	}
	if (L > o->cap)
		return err_set(e, "micro-batch of %llu tokens exceeds --seq-len %u", (unsigned long long)L,
			       o->cap);
	uint64_t T = n == 0 ? P : (L + P - 1) / P * P;
	if (T > o->cap)
		T = o->cap;   /* a dummy when cap < P; the caller keeps cap a multiple of P otherwise */
	uint32_t pad = (uint32_t)(T - L);

	mb->n_tokens = (uint32_t)T;
	mb->input_ids = malloc(T * sizeof(int32_t));
	mb->position_ids = malloc(T * sizeof(int32_t));
	mb->loss_mask = calloc(T, 1);
	mb->advantages = calloc(T, sizeof(float));
	mb->inference_logprobs = calloc(T, sizeof(float));
	mb->ref_logprobs = all_ref ? calloc(T, sizeof(float)) : NULL;
	mb->temperatures = malloc(T * sizeof(float));
	mb->n_seqs = n;
	mb->n_seq_lens = n + (pad > 0);
	mb->seq_lens = malloc((mb->n_seq_lens ? mb->n_seq_lens : 1) * sizeof(uint32_t));
	mb->sequence_ids = calloc(n ? n : 1, sizeof(struct traj_id));
	mb->group_ids = calloc(n ? n : 1, sizeof(struct traj_id));
	mb->prompt_lens = malloc((n ? n : 1) * sizeof(uint32_t));
	mb->policy_versions = malloc((n ? n : 1) * sizeof(int64_t));
	mb->rewards = malloc((n ? n : 1) * sizeof(float));
	mb->finish_reasons = calloc(n ? n : 1, sizeof(char *));
	mb->logprobs_missing = any_missing ? calloc(n, 1) : NULL;
	if (!mb->input_ids || !mb->position_ids || !mb->loss_mask || !mb->advantages ||
	    !mb->inference_logprobs || (all_ref && !mb->ref_logprobs) || !mb->temperatures ||
	    !mb->seq_lens || !mb->sequence_ids || !mb->group_ids || !mb->prompt_lens ||
	    !mb->policy_versions || !mb->rewards || !mb->finish_reasons || (any_missing && !mb->logprobs_missing)) {
		mb_free(mb);
		return err_set(e, "micro-batch: out of memory");
	}
	mb->step = o->step;
	mb->rank = rank;
	mb->index = index;

	uint32_t at = 0;
	for (uint32_t j = 0; j < n; j++) {
		const struct traj *t = seqs[j];
		uint32_t full = t->n_prompt + t->n_response;
		uint32_t len = use && use[j] < full ? use[j] : full;
		uint32_t np = t->n_prompt < len ? t->n_prompt : len, nr = len - np;
		memcpy(mb->input_ids + at, t->prompt_tokens, np * sizeof(int32_t));
		memcpy(mb->input_ids + at + np, t->response_tokens, nr * sizeof(int32_t));
		for (uint32_t x = 0; x < len; x++) {
			mb->position_ids[at + x] = (int32_t)x;
			mb->advantages[at + x] = t->advantage;
			mb->temperatures[at + x] = t->temperature;
		}
		for (uint32_t x = 0; x < nr; x++) {
			uint32_t i = at + np + x;
			if (t->logprobs)
				mb->inference_logprobs[i] = t->logprobs[x];
			if (all_ref)
				mb->ref_logprobs[i] = t->ref_logprobs[x];
			mb->loss_mask[i] = (np + x > 0) && (!t->response_mask || t->response_mask[x]);
		}
		mb->seq_lens[j] = len;
		mb->prompt_lens[j] = np;
		mb->policy_versions[j] = t->policy_version;
		mb->rewards[j] = traj_reward(t);
		if (!t->logprobs)
			mb->logprobs_missing[j] = 1;
		/* a cut took the response's end (its EOS): it did not finish, as
		 * if the sampler had stopped at the length limit */
		const char *fin = len < full ? "length" : t->finish_reason;
		if (fin && !(mb->finish_reasons[j] = strdup(fin))) {
			mb_free(mb);
			return err_set(e, "micro-batch: out of memory");
		}
		if (traj_id_copy(&mb->sequence_ids[j], &t->sequence_id) < 0 ||
		    traj_id_copy(&mb->group_ids[j], &t->group_id) < 0) {
			mb_free(mb);
			return err_set(e, "micro-batch: out of memory");
		}
		at += len;
	}
	for (uint32_t x = 0; x < pad; x++) {
		mb->input_ids[at + x] = MB_PAD_ID;
		mb->position_ids[at + x] = (int32_t)x;
		mb->temperatures[at + x] = 1.0f;
	}
	if (pad > 0)
		mb->seq_lens[n] = pad;
	return 0;
}
