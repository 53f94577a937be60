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
 * carried into every trajectory of the prompt for the scorer. "id", a string
 * or an integer, names the prompt; without it the prompt is named by its
 * row, counted from 0 over the whole file.
 *
 * Sampling: the G samples of prompt row r draw from random streams keyed by
 * (seed, r * G + j), so a prompt's samples are the same whichever other
 * prompts share its batch and wherever a round-robin cursor starts (the same
 * tokens; a batch of another size may round a logprob differently in its
 * last bit). Same seed, model and prompts in the same batches: same bytes.
 *
 * Each trajectory records the sampled tokens with their logprobs at the
 * sampling temperature (generate.h; a greedy run samples at temperature 0
 * and records logprobs and a temperature of 1), how it finished, and the
 * policy version it was sampled from. Group ids are the prompt's row, and
 * sequence ids row * G + j.
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
#include "model/tokenizer.h"

struct rollout_prompt {
	int32_t *tokens;       /* (n) */
	uint32_t n;
	char *answer;          /* NULL when the line has none */
	uint64_t row;          /* line of the prompts file, from 0, counting only prompts */
};

/*
 * Parse one JSON line (line[0..n)) into p, encoding text with tok (NULL when
 * the prompts must be token ids) through the chat format *chat (NULL for
 * raw text). Ids must be below vocab. Errors name the field; the caller adds
 * the file and line.
 */
int rollout_prompt_parse(const char *line, size_t n, const struct tokenizer *tok, const enum chat_format *chat,
                         uint32_t vocab, uint64_t row, struct rollout_prompt *p, struct err *e);
void rollout_prompt_free(struct rollout_prompt *p);

/*
 * Sample G responses for each of the n prompts, as one batch, into groups
 * out[0..n) (zeroed first; free each with group_free). gp->streams is set
 * here (see above); gp's other fields as generate.h.
 */
int rollout_sample(const struct model *m, const struct rollout_prompt *prompts, int n, int G,
                   const struct gen_params *gp, int64_t policy_version, struct group *out, struct err *e);

#endif
