/*
 * rollout.h: rollout groups sampled from a model, for grpo-collect --model.
 *
 * A prompts file is JSON lines, one prompt a line:
 *
 *   {"prompt": "3+4=", "answer": "7"}
 *   {"prompt_tokens": [18, 10, 19, 28], "answer": "7"}
 *   {"messages": [{"role": "user", "content": "..."}], "answer": "..."}
 *
 * "prompt" is text, encoded with the tokenizer (through a chat format when
 * one is given: the text becomes one user turn and the assistant's turn is
 * opened); "messages" is a conversation and needs a chat format;
 * "prompt_tokens" are ids used as they are. "answer" is optional and is
 * carried into every trajectory of the prompt for the scorer.
 *
 * A walk over the file (rollout_prompts_load) takes its rows round-robin;
 * the k-th prompt of a walk from offset o has place r = o + k, which names
 * it: it is the group id, and a second pass over the file gets new places,
 * so new samples and new ids.
 *
 * Sampling: the G samples of the prompt at place r draw from streams keyed by
 * (seed, r * G + j), so a prompt's samples are the same whichever other
 * prompts share its batch and wherever a round-robin cursor starts (the same
 * tokens; a batch of another size may round a logprob differently in its
 * last bit). Same seed, model and prompts in the same batches: same bytes.
 *
 * Each trajectory records the sampled tokens with their logprobs at the
 * sampling temperature (generate.h; a greedy run samples at temperature 0
 * and records logprobs and a temperature of 1), how it finished, and the
 * policy version it was sampled from. Group ids are the prompt's place r,
 * and sequence ids r * G + j.
 */
#ifndef GRPO_ROLLOUT_H
#define GRPO_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/traj.h"
#include "model/chat.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/model_gpu.h"
#include "model/tokenizer.h"

struct rollout_prompt {
	int32_t *tokens;       /* (n); NULL when the prompt is kept as text */
	uint32_t n;
	char *text;            /* "prompt" as text, with ROLLOUT_KEEP_TEXT and no tokenizer; else NULL */
	uint64_t line;         /* its line in the prompts file (1-based), for messages */
	char *answer;          /* NULL when the line has none */
	uint64_t place;        /* place in the walk over the prompts file (see rollout_prompts_load) */
};

/*
 * Parse one JSON line (line[0..n)) into p, encoding text with tok (NULL when
 * the prompts must be token ids) through the chat format *chat (NULL for
 * raw text). Ids must be below vocab. Errors name the field; the caller adds
 * the file and line.
 */
int rollout_prompt_parse(const char *line, size_t n, const struct tokenizer *tok, const enum chat_format *chat,
                         uint32_t vocab, uint64_t place, struct rollout_prompt *p, struct err *e);
void rollout_prompt_free(struct rollout_prompt *p);

/* Flags of rollout_prompts_load. KEEP_TEXT: with no tokenizer, a "prompt"
 * text is kept as text (for a server that tokenizes it) rather than refused. */
#define ROLLOUT_KEEP_TEXT 1u

/*
 * Load count prompts of the prompts file at path, starting at row offset
 * (mod the file's rows) and wrapping round at the end (count 0: every row
 * once), so that calls with a moving offset walk a data set round-robin;
 * prompt k gets place offset + k. Blank lines are not rows. *rows gets the
 * file's number of rows. Errors name the file and line.
 * Free the prompts with rollout_prompts_free.
 */
int rollout_prompts_load(const char *path, const struct tokenizer *tok, const enum chat_format *chat,
                         uint32_t vocab, unsigned flags, uint64_t offset, uint64_t count,
                         struct rollout_prompt **out, int *n, uint64_t *rows, struct err *e);
void rollout_prompts_free(struct rollout_prompt *p, int n);

/*
 * The model directory to sample from: dir itself when it holds config.json
 * (version K when it is named step_K, a checkpoint pinned, else 0), else the
 * newest step_K of the policy queue dir whose config.json exists (version
 * K). out gets the directory's path.
 */
int rollout_policy_find(const char *dir, char *out, size_t outsz, int64_t *version, struct err *e);

/*
 * The checkpoint of policy version K under dir, as rollout_policy_find would
 * have found it: dir itself when it holds config.json (K must be its
 * version), else
 * dir/step_K. 0 with out set, 1 when dir/step_K holds no config.json (gone,
 * or never there; out names it), -1 error.
 */
int rollout_policy_at(const char *dir, int64_t version, char *out, size_t outsz, struct err *e);

/*
 * Sample G responses for each of the n prompts, as one batch, into groups
 * out[0..n) (zeroed first; free each with group_free). gp->streams is set
 * here (see above); gp's other fields as generate.h. With gpu (m opened by
 * model_gpu_open_gen) the GPU samples, else the C model.
 */
int rollout_sample(const struct model *m, struct model_gpu *gpu, const struct rollout_prompt *prompts, int n, int G,
                   const struct gen_params *gp, int64_t policy_version, struct group *out, struct err *e);

#endif
