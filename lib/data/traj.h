/*
 * traj.h: the data model of DESIGN.md in memory.
 *
 * A trajectory is one sampled sequence; a group is the trajectories of one
 * prompt, which are scored together; a micro-batch is one packed forward pass.
 * The field names are those of the JSON view (grpo-cat) and of the seeds.
 *
 * Ownership: every pointer in these structs is owned by the struct and freed
 * by traj_free / group_free / mb_free. Optional arrays are NULL when absent:
 * response_mask (all response tokens trained), ref_logprobs (not scored),
 * answer, run. Counts are uint32_t: a sequence never holds 2^32 tokens.
 *
 * Micro-batch alignment (DESIGN.md): every per-token array has n_tokens
 * entries aligned with input_ids; the value at i describes input_ids[i],
 * which the model predicts from position i-1, so loss_mask[i] is 1 exactly
 * when input_ids[i] is a trained response token, and never at the first
 * token of a sequence.
 */
#ifndef GRPO_TRAJ_H
#define GRPO_TRAJ_H

#include <stdint.h>

enum finish_reason { FINISH_UNKNOWN = 0, FINISH_STOP = 1, FINISH_LENGTH = 2 };

struct traj {
	int32_t *prompt_tokens;     /* (n_prompt) */
	int32_t *response_tokens;   /* (n_response) */
	float *logprobs;            /* (n_response) the sampler's logprob of each response token */
	uint8_t *response_mask;     /* (n_response) 1 = trained; NULL = all trained */
	uint32_t n_prompt, n_response;
	char *answer;               /* reference answer, NULL if none */
	char *run;                  /* run name for multi-run training, NULL = default run */
	int64_t sequence_id, group_id, policy_version;
	float temperature;          /* sampling temperature, default 1 */
	enum finish_reason finish_reason;

	/* scored fields: meaningful when scored != 0 */
	int scored;
	float *ref_logprobs;        /* (n_response) reference model's logprobs, NULL if none */
	float *rewards;             /* (n_rewards) one per reward function */
	char **reward_names;        /* (n_rewards) */
	uint32_t n_rewards;
	float advantage;            /* the sequence's scalar advantage ("advantages" in JSON) */
	float success;              /* "successes": 1 solved, 0 not */
};

struct group {
	int64_t group_id;
	uint32_t n;                 /* number of trajectories */
	struct traj *trajs;         /* (n) */
};

struct microbatch {
	uint32_t n_tokens;          /* T: tokens including padding */
	int32_t *input_ids;         /* (T) */
	int32_t *position_ids;      /* (T) restart at 0 in every sequence */
	uint8_t *loss_mask;         /* (T) */
	float *advantages;          /* (T) */
	float *inference_logprobs;  /* (T) the sampler's logprob of input_ids[i], 0 off-mask */
	float *ref_logprobs;        /* (T) or NULL when the scorer had no reference model */
	float *temperatures;        /* (T) */
	uint32_t n_seq_lens;
	uint32_t *seq_lens;         /* (n_seq_lens) sum = T; a trailing padding span counts as one */
	uint32_t n_seqs;            /* real sequences; n_seq_lens - n_seqs padding spans */
	int64_t *sequence_ids;      /* (n_seqs) in seq_lens order */
	int64_t *group_ids;         /* (n_seqs) */
	int64_t step;               /* optimizer step the micro-batch feeds */
	int32_t rank, index;        /* trainer rank, micro-step within the rank */
	char *run;                  /* NULL unless the packer kept runs separate */
};

void traj_free(struct traj *t);
void group_free(struct group *g);   /* frees the trajectories, then zeroes g */
void mb_free(struct microbatch *mb);

/* Deep copy; -1 when memory runs out (dst is then zeroed). */
int traj_copy(struct traj *dst, const struct traj *src);

/* Fill the documented defaults of a new trajectory (temperature 1, ids -1). */
void traj_init(struct traj *t);

#endif
