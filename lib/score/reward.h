/*
 * reward.h: the built-in reward functions of grpo-score, each a pure
 * function of a decoded response, the reference answer and the response's
 * length in tokens.
 *
 * Each function gives one float; a trajectory stores one per function in
 * `rewards`, named in `reward_names`, unweighted (the weights belong to the
 * advantage, advantage.h). The logic follows the reference implementations
 * (formats.md §6, grpo-algorithms.md §1.6):
 *
 *   gsm8k   1 when the response's answer equals the reference answer as a
 *           number, else 0. The response's answer is the number after the
 *           last "####" (not one of a markdown heading, "#### Step 2: ..."),
 *           else in the last \boxed{}, else after the last "The answer is"
 *           (any case), else the last number of the response.
 *           The reference answer is the number after "####" in the answer,
 *           or the answer itself when it is a bare number. Numbers are read
 *           after dropping thousands separators ("1,000", and LaTeX's
 *           "1{,}000" and "1\,000"), a leading "$", a trailing "%" or "."
 *           and any words after the number, so "18.00", "$18" and "18
 *           dollars" all equal 18; an exponent is the number's ("1.5e3" and
 *           "1.5 \times 10^{3}" are 1500); digits are ASCII ("１８" is no
 *           number); compared as values (relative tolerance 1e-9). After "####", in \boxed{} and after "The answer is", a
 *           fraction is its value ("\frac{18}{4}", "18/4" and "4\frac{1}{2}"
 *           are 4.5) and an answer written as an equation is its result
 *           ("9 * 2 = 18" is 18; a word or a sentence's end after the first
 *           number ends the answer there). An answer with no number scores
 *           0. Checked against tests/data/gsm8k-labelled.jsonl
 *           (test_gsm8k_labelled), a stand-in for labels by people.
 *   boxed   1 when the content of the response's last \boxed{} (braces
 *           matched) equals the answer's (its last \boxed{} if it has one,
 *           else the whole answer) in hendrycks MATH's normal form: no
 *           whitespace, "$", "\$", "\left", "\right", "\!", "\,", "\;", "\:",
 *           thousands separators or final '.'; "\dfrac" and "\tfrac" are
 *           "\frac", "\text{X}" is X.
 *   math    as boxed, but the response's answer is its last \boxed{}, else
 *           (DAPO's format) what follows its last "Answer:" (any case) on
 *           that line; the answer's is its last \boxed{}, else what
 *           follows its last "####" (GSM8K's), else the whole answer.
 *           1 when the two are equal in boxed's normal form or
 *           are the same mathematical object (score/mathans.h): "0.5" is
 *           "\frac{1}{2}", "x^2+2x+1" is "(x+1)^2", "1 \pm \sqrt{2}" is
 *           "\{1-\sqrt{2}, 1+\sqrt{2}\}", "0.\overline{3}" and "0.(3)"
 *           are "\frac{1}{3}", as is "0.333333" (math_verify's rounding
 *           to six decimals; "0.33" is not), "x = 5" is 5,
 *           "f(x) = 2x + 1" and "\phi(x) = 2x + 1" are "2x + 1".
 *   format  1 when the response has open-r1's layout
 *           ^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$ (re.DOTALL |
 *           re.MULTILINE, anchored at the start as re.match), else 0.
 *   think   TRL's think_format_reward: 1 when the response starts with
 *           "<think>", holds no other "<think>" and a "</think>" after it
 *           (^<think>(?!.*<think>)(.*?)</think>.*$, re.DOTALL), else 0.
 *   tags    open-r1's tag_count_reward ("xmlcount"): 0.25 for each of
 *           "<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>" that
 *           occurs exactly once.
 *   length  DAPO's soft overlong punishment over L response tokens, with
 *           Lmax = max_len and C = overlong_buffer: 0 when L <= Lmax - C,
 *           (Lmax - C - L) / C when L <= Lmax, -1 beyond (C = 0: 0 or -1).
 *   exact   1 when response and answer are equal after trimming leading
 *           and trailing whitespace.
 *   repetition
 *           open-r1's repetition penalty: -(1 - distinct / total) over the
 *           response's word n-grams (n = ngram, 3 by default), its words
 *           split at whitespace (Python's str.isspace: Unicode White_Space
 *           and U+001C..U+001F) and compared with ASCII letters folded to
 *           lower case (Python's lower() folds every script); 0 for fewer
 *           than n words. From 0 (no n-gram twice) towards -1.
 *   steps   open-r1's reasoning-steps reward: min(1, count / 3), count
 *           being the matches, left to right and not overlapping, of
 *           "Step N:", "N." at the very start, "\n-", "\n*", "First,",
 *           "Second,", "Next," and "Finally," (N: ASCII digits; Python's
 *           \d also takes other scripts' digits).
 *
 * Two rewards weigh the length L of a response in tokens by whether it is
 * right, the verdict of another reward (the scorer's correctness reward:
 * a success of it), and are computed after all the others:
 *
 *   cosine  open-r1's and TRL's cosine-scaled reward: with p = min(1,
 *           L / max_len), long + (short - long) * (1 + cos(pi p)) / 2,
 *           where short and long are the rewards at L = 0 and at max_len,
 *           for a right response (1 and 0.5 by default) or a wrong one (-1
 *           and -0.5): a right answer is worth more when short, a wrong one
 *           costs less when long. TRL counts tokens and clamps p as here;
 *           open-r1 counts characters.
 *   kimi-length
 *           Kimi k1.5's length reward over the responses to one prompt:
 *           lambda = 0.5 - (L - shortest) / (longest - shortest), the
 *           reward lambda when right and min(0, lambda) when wrong, 0 for
 *           all when every length is equal. Per group, as the paper has it
 *           (open-r1 takes the shortest and longest of its whole batch).
 *
 * A missing answer (NULL) scores 0 for gsm8k, boxed, math and exact. With
 * reward_opt.after_think these four read only the text after the
 * response's last "</think>", and give 0 without one (open-r1's and TRL's
 * reasoning_accuracy_reward): a response cut off while thinking answered
 * nothing, whatever number it last wrote.
 *
 * format, think and tags read the response's opening "<think>". Where the
 * prompt's text already opened the think block (it ends with "<think>"
 * and only white space after it, as the DeepSeek-R1 distills' chat
 * template writes it), the response holds none, and the three would give
 * 0 to every response; the scorer then gives them the prompt's opening
 * (reward_think_opened) followed by the response.
 */
#ifndef GRPO_REWARD_H
#define GRPO_REWARD_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum reward_kind {
	REWARD_GSM8K, REWARD_BOXED, REWARD_FORMAT, REWARD_TAGS, REWARD_LENGTH, REWARD_EXACT, REWARD_MATH,
	REWARD_REPETITION, REWARD_STEPS, REWARD_COSINE, REWARD_KIMI_LENGTH, REWARD_THINK,
};

/* The built-ins' names, for messages. */
#define REWARD_BUILTINS \
	"gsm8k, boxed, math, format, think, tags, length, exact, repetition, steps, cosine, kimi-length"

/* The longest reward name, in bytes, a built-in's or a reward program's:
 * names are stored whole, never cut to another's prefix. */
#define REWARD_NAME_MAX 63

/* One reward function as given on the command line: NAME or NAME=WEIGHT. */
struct reward_spec {
	enum reward_kind kind;
	char name[REWARD_NAME_MAX + 1];
	double weight;            /* default 1; |weight| <= REWARD_WEIGHT_MAX */
};

/* The largest weight: about a float's range, the rewards' own, so that
 * every weighted sum of rewards (at most 3.4e38 each) stays far inside a
 * double's; a weighted sum past 1.8e308 became inf and could make a group
 * look flat, every advantage 0, without a word. */
#define REWARD_WEIGHT_MAX 1e38

struct reward_opt {
	uint32_t max_len;         /* length: Lmax in tokens; 0 = not given */
	uint32_t overlong_buffer; /* length: C in tokens */
	uint32_t ngram;           /* repetition: n; 0 = 3 */
	double cosine[4];         /* cosine: right short, right long, wrong short, wrong long */
	int after_think;          /* gsm8k, boxed, math, exact: the answer follows the last </think> */
};

/* open-r1's and TRL's values of reward_opt.cosine */
#define REWARD_COSINE_DEFAULT { 1, 0.5, -1, -0.5 }

/* Parse "NAME[=WEIGHT]" (a built-in name, a weight of -1e38 to 1e38). */
int reward_parse(const char *arg, struct reward_spec *r, struct err *e);
/* 1 when the NAME of NAME[=WEIGHT] is a built-in's. */
int reward_is_builtin(const char *arg);
/* NAME[=WEIGHT] of a reward program's reward, NAME being one its answers
 * give (rewardcmd.h): name and weight only, kind unused. */
int reward_parse_program(const char *arg, struct reward_spec *r, struct err *e);

/* 1 for the rewards that compare the response's answer with the reference
 * answer: gsm8k, boxed, math, exact. */
int reward_reads_answer(enum reward_kind k);
/* 1 for those that read the response's opening "<think>": format, think, tags. */
int reward_reads_think(enum reward_kind k);
/* The length of the opening of a think block that the end of a prompt's
 * text (its last n bytes) leaves open, the response to continue it: its
 * last "<think>" and the white space after it, when nothing else follows;
 * else 0. */
size_t reward_think_opened(const char *tail, size_t n);
/* 1 when the function reads the decoded text (all but length, cosine and
 * kimi-length). */
int reward_needs_text(enum reward_kind k);
/* 1 for cosine and kimi-length: computed from another reward's verdict
 * (reward_cosine, reward_kimi_length), not by reward_eval. */
int reward_needs_verdict(enum reward_kind k);

/* The reward of one response: text (n bytes, may hold NUL), answer NUL-
 * terminated or NULL, n_tokens the response's length in tokens. Finite,
 * or NaN when memory ran out (math, repetition): no reward at all; 0 for
 * the rewards that need a verdict. */
double reward_eval(enum reward_kind k, const struct reward_opt *o, const char *text, size_t n,
		   const char *answer, uint32_t n_tokens);

/* cosine of a response of n_tokens, right or not; max_len > 0. */
double reward_cosine(const struct reward_opt *o, int right, uint32_t n_tokens);
/* kimi-length of a response of n_tokens, right or not, in a group whose
 * responses are shortest to longest tokens long. */
double reward_kimi_length(int right, uint32_t n_tokens, uint32_t shortest, uint32_t longest);

/* The pieces, for tests and for other callers. */

/* The gsm8k extraction of a response: 1 and *v when a number was found. */
int reward_gsm8k_extract(const char *text, size_t n, double *v);
/* The reference number of a GSM8K answer ("... #### 72" or "72"). */
int reward_gsm8k_answer(const char *answer, double *v);
/* The content of the last \boxed{...} (or \fbox{...}): 1 with [*at, *at + *len). */
int reward_last_boxed(const char *text, size_t n, size_t *at, size_t *len);

#endif
