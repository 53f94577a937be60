/*
 * chat.h: the chat formats of Qwen, Llama 2 and 3, Mistral, TinyLlama,
 * SmolLM2, Qwen2.5-Math and the DeepSeek-R1 distills, written out in C.
 *
 * A chat model expects its question wrapped in the turns its chat template
 * writes. Rather than run a Jinja engine, each template this project meets is
 * written out here, and what it produces is exactly what Hugging Face's
 * tokenizer.apply_chat_template(messages, add_generation_prompt=True,
 * tokenize=True) gives: the rendered text, then that text encoded with no
 * special tokens added (the template writes its own), so the format's
 * markers, being added tokens, come out as single ids.
 *
 *   CHAT_QWEN    ChatML: <|im_start|>ROLE\nCONTENT<|im_end|>\n per message,
 *                then <|im_start|>assistant\n. Qwen2's and Qwen2.5's
 *                template when the messages begin with a system message.
 *   CHAT_QWEN25  Qwen2.5-Instruct's template: as CHAT_QWEN, with its default
 *                system message ("You are Qwen, created by Alibaba Cloud.
 *                You are a helpful assistant.") when none is given.
 *   CHAT_QWEN3   Qwen3's template: ChatML, and an assistant message's
 *                <think>...</think> reasoning is dropped from the history
 *                (kept only for an assistant turn after the last user turn);
 *                with CHAT_NO_THINKING (enable_thinking=False) the generation
 *                prompt ends in an empty think block <think>\n\n</think>\n\n.
 *   CHAT_LLAMA3  Llama 3 Instruct's template: <|begin_of_text|>, then per
 *                message <|start_header_id|>ROLE<|end_header_id|>\n\n
 *                CONTENT<|eot_id|> with CONTENT stripped of surrounding
 *                white space (Jinja's trim), then the assistant header.
 *   CHAT_LLAMA31 Llama 3.1's and 3.3's template: as CHAT_LLAMA3, after a
 *                system header of "Cutting Knowledge Date: December 2023\n
 *                Today Date: DATE\n\n" and the first message's content
 *                (trimmed) when it is a system message, which then is not
 *                a turn of its own; DATE is the template's date_string,
 *                "26 Jul 2024" unless given.
 *   CHAT_LLAMA32 Llama 3.2's template: as CHAT_LLAMA31, but with today's
 *                date ("%d %b %Y", local time) unless date_string is given,
 *                as transformers' strftime_now gives it.
 *   CHAT_LLAMA2  Llama 2 chat's template (meta-llama/Llama-2-7b-chat-hf):
 *                <s>[INST] USER [/INST] per user turn and " ASSISTANT </s>"
 *                per assistant turn, contents stripped of surrounding white
 *                space; a first system message goes into the first user
 *                turn as <<SYS>>\nSYSTEM\n<</SYS>>\n\n. No generation
 *                prompt: the text ends with the last turn (a lone system
 *                message gives no text at all).
 *   CHAT_MISTRAL Mistral-7B-Instruct-v0.2's template as of May 2024, with
 *                system messages: <s>, then " [INST] USER [/INST]" and
 *                " ASSISTANT</s>", contents as given, a first system message
 *                written before the first user turn's content with "\n\n".
 *                Mistral-7B-Instruct-v0.1's template is not written out:
 *                the copies of it found, of earlier revisions, differ in
 *                the spaces around [INST] and </s> and refuse a system
 *                message, as v0.2's earlier revisions did.
 *   CHAT_ZEPHYR  TinyLlama-1.1B-Chat-v1.0's template (Zephyr's):
 *                <|ROLE|>\nCONTENT</s>\n per message, then <|assistant|>\n.
 *   CHAT_SMOLLM2 SmolLM2-Instruct's template: as CHAT_QWEN25, with SmolLM's
 *                default system message ("You are a helpful AI assistant
 *                named SmolLM, trained by Hugging Face").
 *   CHAT_QWEN25_MATH Qwen2.5-Math's template (1.5B and 7B, base and
 *                Instruct): as CHAT_QWEN25, with the default system message
 *                "Please reason step by step, and put your final answer
 *                within \boxed{}.", the prompt the R1-Zero reproductions
 *                start Qwen2.5-Math from.
 *   CHAT_DEEPSEEK_R1 the DeepSeek-R1 distills' template (Qwen 1.5B to 32B,
 *                Llama 8B and 70B): <｜begin▁of▁sentence｜>, the content of
 *                the last system message wherever it stands, then
 *                <｜User｜>USER and <｜Assistant｜>ANSWER<｜end▁of▁sentence｜>
 *                in order, an answer's reasoning dropped (only what follows
 *                its last </think> is kept), then <｜Assistant｜><think>\n:
 *                the revision of the template that opens the think block.
 *
 * Roles are system, user and assistant, in any order, as the templates
 * take them (a system message after the first is one more turn), except in
 * CHAT_LLAMA2 and CHAT_MISTRAL, whose templates require user and assistant
 * turns to alternate, user first, after an optional first system message;
 * a later system message is an error in CHAT_MISTRAL and, as its template
 * has it, left out of CHAT_LLAMA2's text where it stands in an assistant's
 * place. Tool calls,
 * tool messages, a conversation's list of tools and Qwen3's
 * reasoning_content field are refused, not approximated.
 */
#ifndef GRPO_CHAT_H
#define GRPO_CHAT_H

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/tokenizer.h"

enum chat_format {
	CHAT_QWEN, CHAT_QWEN25, CHAT_QWEN3, CHAT_LLAMA3, CHAT_LLAMA31, CHAT_LLAMA32, CHAT_LLAMA2, CHAT_MISTRAL,
	CHAT_ZEPHYR, CHAT_SMOLLM2, CHAT_DEEPSEEK_R1, CHAT_QWEN25_MATH
};

#define CHAT_FORMATS "qwen, qwen2.5, qwen2.5-math, qwen3, llama3, llama3.1, llama3.2, llama2, mistral, zephyr, " \
	"smollm2, deepseek-r1"
#define CHAT_NO_THINKING 1   /* qwen3: enable_thinking=False */

struct chat_msg {
	const char *role;      /* NUL-terminated */
	const char *content;   /* NUL-terminated UTF-8 */
};

/* A list of messages as parsed from JSON; owns its strings. */
struct chat_msgs {
	struct chat_msg *m;    /* (n) */
	size_t n;
	int flags;             /* CHAT_NO_THINKING when the line said "enable_thinking": false */
	int has_flags;         /* the line set enable_thinking either way */
	const char *date;      /* its "date_string" (Llama 3.1 and later), or NULL */
	void *json;            /* the parsed cJSON, which the strings point into */
};

int chat_format_parse(const char *name, enum chat_format *f);   /* -1 if unknown */
extern const char *const chat_format_names[];   /* by enum, NULL-terminated */
const char *chat_format_name(enum chat_format f);

/* Append the prompt text for messages (with the generation prompt) to out;
 * date is the template's date_string, NULL for its default. */
int chat_render(enum chat_format f, const struct chat_msg *msgs, size_t n, int flags, const char *date,
                struct buf *out, struct err *e);

/*
 * Render and encode: appends the ids to ids and, if text is not NULL, the
 * text to text. Fails if the tokenizer lacks the format's marker tokens
 * (a Llama tokenizer given --chat qwen), naming the token.
 */
int chat_encode(const struct tokenizer *t, enum chat_format f, const struct chat_msg *msgs, size_t n, int flags,
                const char *date, struct tok_ids *ids, struct buf *text, struct err *e);

/*
 * The format whose template a model's own files hold, told from the
 * template's text, so that `--chat auto` writes what the model was tuned on.
 * As transformers loads it, the template is DIR/chat_template.jinja when
 * that file exists, else the "chat_template" of DIR/tokenizer_config.json (a
 * string, or a list of named templates of which "default" is the one), where
 * DIR holds the tokenizer.json at tokenizer_path. Only the templates this
 * build was checked against are known, byte for byte: those of Qwen2.5-
 * Instruct, Qwen3, Llama 3 Instruct (two revisions), Llama 2 chat,
 * Mistral-7B-Instruct-v0.2, TinyLlama Chat, SmolLM2-Instruct and the
 * DeepSeek-R1 distills, as kept in tests/data/chat-templates and ../shared. A missing template, or any
 * other (another revision included), is an error naming the file: the
 * format must then be named; so is a "chat_template" given twice, of which
 * transformers would take the last. *from gets the file the template came
 * from.
 */
int chat_format_of_model(const char *tokenizer_path, enum chat_format *f, char *from, size_t from_size,
                         struct err *e);

/*
 * One JSON value as a conversation: a string is a lone user turn; an object
 * {"messages": [{"role": R, "content": C}, ...]} a list, optionally with
 * "enable_thinking": true|false and "date_string": "26 Jul 2024", as
 * apply_chat_template's keyword arguments; one with "tools" is refused. Messages name
 * the field and index.
 */
int chat_parse_json(const char *json, size_t n, struct chat_msgs *out, struct err *e);
void chat_msgs_free(struct chat_msgs *m);

#endif
