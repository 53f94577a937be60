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
 * Ids are kept as given (DESIGN.md): sequence_id and group_id are a struct
 * traj_id, an integer or a string, compared and printed as they came, so a
 * sequence can be traced back to the server request or data set row that
 * made it. An integer id stays an integer: 42 and "42" are different ids.
 *
 * Micro-batch alignment (DESIGN.md): every per-token array has n_tokens
 * entries aligned with input_ids; the value at i describes input_ids[i],
 * which the model predicts from position i-1, so loss_mask[i] is 1 exactly
 * when input_ids[i] is a trained response token, and never at the first
 * token of a sequence.
 */
#ifndef GRPO_TRAJ_H
#define GRPO_TRAJ_H

#include <stddef.h>
#include <stdint.h>

/*
 * The largest integer of a record (an id, a policy version): 2^53 - 1, the
 * last below which a JSON number (a double) holds every integer. From 2^53
 * on, two integers read as one (9007199254740993 as 9007199254740992), so
 * the JSON view could not give back what a spool file holds, nor tell a
 * changed id from a given one.
 */
#define TRAJ_INT_MAX 9007199254740991ll

/* A sequence or group id as given. str set: a string id (owned, no NUL
 * byte); str NULL: the integer num, where -1 means "none given". */
struct traj_id {
	int64_t num;
	char *str;
};

struct traj {
	int32_t *prompt_tokens;     /* (n_prompt) */
	int32_t *response_tokens;   /* (n_response) */
	float *logprobs;            /* (n_response) the sampler's logprob of each response token;
	                               NULL: the sampler gave none (grpo-collect
	                               --allow-missing-logprobs), never zeros */
	uint8_t *response_mask;     /* (n_response) 1 = trained; NULL = all trained */
	uint32_t n_prompt, n_response;
	char *answer;               /* reference answer, NULL if none */
	char *run;                  /* run name for multi-run training, NULL = default run */
	struct traj_id sequence_id, group_id;
	int64_t policy_version;
	float temperature;          /* sampling temperature, default 1 */
	char *finish_reason;        /* as the server said it: "stop", "length",
	                               "tool_calls", "abort", ...; NULL unknown */

	/* scored fields: meaningful when scored != 0 */
	int scored;
	float *ref_logprobs;        /* (n_response) reference model's logprobs, NULL if none */
	float *rewards;             /* (n_rewards) one per reward function */
	char **reward_names;        /* (n_rewards) or NULL */
	float *successes;           /* (n_rewards) one per reward function, 1 solved,
	                               0 not; NULL when not given */
	uint32_t n_rewards;
	float advantage;            /* the sequence's scalar advantage ("advantages" in JSON) */
};

struct group {
	struct traj_id group_id;
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
	struct traj_id *sequence_ids;   /* (n_seqs) in seq_lens order */
	struct traj_id *group_ids;      /* (n_seqs) */
	/* Per real sequence, in seq_lens order, for the trainer's metrics and
	 * debug tables; each NULL in a file of format 1.0, which lacks them. */
	uint32_t *prompt_lens;      /* (n_seqs) prompt tokens in the micro-batch */
	int64_t *policy_versions;   /* (n_seqs) */
	float *rewards;             /* (n_seqs) combined reward: the sum over reward
	                               functions, as seed 000 combines them */
	char **finish_reasons;      /* (n_seqs) entries NULL when unknown */
	uint8_t *logprobs_missing;  /* (n_seqs) 1: the sampler gave no logprobs, so
	                               the sequence's inference_logprobs are 0 and
	                               mean nothing; NULL: every sequence has them */
	int64_t step;               /* optimizer step the micro-batch feeds */
	int32_t rank, index;        /* trainer rank, micro-step within the rank */
	char *run;                  /* NULL unless the packer kept runs separate */
};

void traj_free(struct traj *t);
void group_free(struct group *g);   /* frees the trajectories, then zeroes g */
void mb_free(struct microbatch *mb);

/* Ids. traj_id_none: no id (-1). _set_str copies s[0..n) (-1 when memory
 * runs out or s holds a NUL byte); _copy deep-copies (-1: out of memory);
 * _free frees the string and leaves "none". _eq compares as given (an
 * integer never equals a string). _given: not "none". _text: the id for a
 * message, the string itself or the number written into buf. */
struct traj_id traj_id_none(void);
struct traj_id traj_id_num(int64_t v);
int traj_id_set_str(struct traj_id *id, const char *s, size_t n);
int traj_id_copy(struct traj_id *dst, const struct traj_id *src);
void traj_id_free(struct traj_id *id);
int traj_id_eq(const struct traj_id *a, const struct traj_id *b);
int traj_id_given(const struct traj_id *id);
const char *traj_id_text(const struct traj_id *id, char buf[24]);

/* Set finish_reason to a copy of s (NULL or "": unknown); -1 out of memory. */
int traj_set_finish(struct traj *t, const char *s);
/* 1 when the finish reason says the response was cut at the length limit. */
int traj_truncated(const struct traj *t);
/* The combined reward of a scored trajectory: the sum of its rewards. */
float traj_reward(const struct traj *t);

/* Fill the documented defaults of a new trajectory (temperature 1, ids -1). */
void traj_init(struct traj *t);

#endif
