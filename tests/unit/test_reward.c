/*
 * test_reward: every built-in reward on hand-made cases, and gsm8k on the
 * GSM8K test set's own solutions (each must score 1 against its answer, and
 * 0 once its final number is changed).
 */
#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "score/reward.h"
#include "tap.h"

static const struct reward_opt no_opt = { 0 };

/*
 * text's n bytes copied to end where a page that may not be read begins: a
 * reward reading past its text faults in any build. The scorer's texts are
 * views into longer lines, so a byte past the end is another field's.
 */
static const char *fenced(const char *text, size_t n)
{
	static char *map;
	static size_t size;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), need = (n + page - 1) / page * page + page;
	if (need > size) {
		if (map)
			munmap(map, size);
		map = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED || mprotect(map + need - page, page, PROT_NONE) != 0) {
			perror("test_reward: the fence page");
			exit(1);
		}
		size = need;
	}
	char *at = map + size - page - n;
	memcpy(at, text, n);
	return at;
}

static double rw(enum reward_kind k, const char *text, const char *answer)
{
	return reward_eval(k, &no_opt, fenced(text, strlen(text)), strlen(text), answer, 0);
}

static int extract(const char *text, size_t n, double *v)
{
	return reward_gsm8k_extract(fenced(text, n), n, v);
}

static void gsm8k_cases(void)
{
	static const struct {
		const char *resp, *answer;
		double want;
	} c[] = {
		{ "So she makes 9 * 2 = 18 dollars.\n#### 18", "#### 18", 1 },
		{ "#### 18.00", "#### 18", 1 },
		{ "#### $18", "#### 18", 1 },
		{ "The total is 18 dollars", "#### 18", 1 },
		{ "#### 1,000", "#### 1000", 1 },
		{ "She pays $1,234.50 in all.", "#### 1234.5", 1 },
		{ "The answer is 25%.", "25", 1 },
		{ "The answer is: **42**. Then 7 more steps.", "#### 42", 1 },
		{ "First 3, then \\boxed{72} and 5 others", "#### 72", 1 },
		{ "\\boxed{\\$1,000}", "#### 1000", 1 },
		{ "#### 17", "#### 18", 0 },
		{ "no digits at all", "#### 18", 0 },
		{ "#### 18", NULL, 0 },
		{ "18", "no number here", 0 },
		{ "The answer is -3", "#### -3", 1 },
		{ "16-3-4=9", "#### 9", 1 },
		{ "16-3-4=9", "#### -4", 0 },
		{ "#### 72\nand later 5", "#### 72", 1 },
		{ "x = .5", "0.5", 1 },
		{ "1,2 and 3", "#### 3", 1 },
		{ "it is 18.", "18.", 1 },
		{ "it is 18 apples", "18 apples", 0 },
		/* separators LaTeX writes, fractions, answers written as equations */
		{ "\\boxed{1{,}000}", "#### 1,000", 1 },
		{ "She has $65\\,960 left.", "#### 65960", 1 },
		/* the spaces SI style and French put between groups of digits; a plain space is none */
		{ "The answer is 1\xc2\xa0" "000.", "#### 1000", 1 },
		{ "The answer is 1\xe2\x80\x89" "000\xe2\x80\x89" "000 dollars", "#### 1000000", 1 },
		{ "The answer is 12\xe2\x80\xaf" "500,75", "#### 12500", 1 },
		{ "The answer is 1\xe2\x80\xaf" "00.", "#### 1", 1 },
		{ "The answer is 1\xe2\x80\xaf" "0000.", "#### 1", 1 },
		{ "I bought 3 100-page books", "#### 3100", 0 },
		{ "I bought 3 100-page books", "#### 100", 1 },
		{ "\\boxed{\\frac{18}{4}}", "#### 18", 0 },
		{ "\\boxed{\\dfrac{36}{2}}", "#### 18", 1 },
		{ "The answer is 9/2.", "#### 9", 0 },
		{ "The answer is 4\\frac{1}{2}.", "#### 4.5", 1 },
		{ "So the answer is 9 * 2 = 18.", "#### 18", 1 },
		{ "So the answer is 9 * 2 = 18.", "#### 9", 0 },
		{ "The answer is $9 \\times \\$2 = \\$18$.", "#### 18", 1 },
		{ "The answer is 12/20 x 100% = 60%.", "#### 60", 1 },
		{ "#### 16-3-4=9", "#### 9", 1 },
		{ "\\boxed{20 - 2 = 18}", "#### 18", 1 },
		{ "The answer is 18. Check: 16 - 3 - 4 = 9.", "#### 18", 1 },
		{ "The answer is 18 (since 9 = 9)", "#### 18", 1 },
		{ "The answer is 18 (= 9 * 2).", "#### 18", 1 },
		{ "The answer is 5 (5 = 2 + 3).", "#### 5", 1 },
		{ "The answer is 2 * (3 + 4) = 14.", "#### 14", 1 },
		{ "The answer is (16 - 3 - 4) * 2 = 18.", "#### 18", 1 },
		{ "The answer is 18 dollars, because 9 x 2 = 18.", "#### 18", 1 },
		{ "The answer is 18 dollars, because 9 x 2 = 18.", "#### 9", 0 },
		{ "The answer is 18\n9 = 9", "#### 18", 1 },
		/* a sign before a dollar sign, a fraction, or written as U+2212 keeps the answer negative */
		{ "The answer is -$5.", "#### -5", 1 },
		{ "The answer is -$5.", "#### 5", 0 },
		{ "She ends at -\\$1,200", "#### -1200", 1 },
		{ "The answer is \xe2\x88\x92" "5.", "#### -5", 1 },
		{ "The answer is \xe2\x88\x92" "5.", "#### 5", 0 },
		{ "#### 7", "#### \xe2\x88\x92" "7", 0 },
		{ "\\boxed{-\\frac{1}{2}}", "#### -0.5", 1 },
		{ "\\boxed{-\\frac{1}{2}}", "#### 0.5", 0 },
		{ "The answer is 10\xe2\x88\x92" "4 = 6", "#### 6", 1 },
		/* scientific notation is one number: 1.5e3 was 1.5 (and then 3 as a last number) */
		{ "The answer is 1.5e3.", "#### 1500", 1 },
		{ "The answer is 1.5e3.", "#### 1.5", 0 },
		{ "It costs 1.5e3 dollars", "#### 3", 0 },
		{ "#### 2.5E-3", "#### 0.0025", 1 },
		{ "#### 5e3x", "#### 5", 1 },
		{ "#### 1e400", "#### 1", 0 },
		{ "The answer is 1.2 \\times 10^{3}.", "#### 1200", 1 },
		{ "The answer is 1.2 \\times 10^{3}.", "#### 1.2", 0 },
		{ "The answer is 3 \xc3\x97 10^-2", "#### 0.03", 1 },
		/* a markdown heading "#### Step 2" is no "#### answer" */
		{ "#### Step 1: Cost\n3 * 2 = 6\n#### Step 2: Total\n6 + 12 = 18\nThe answer is 18.", "#### 18", 1 },
		{ "#### Step 1: Cost\n3 * 2 = 6\n#### Step 2: Total\n6 + 12 = 18\nThe answer is 18.", "#### 2", 0 },
		{ "#### 18\n\n#### Check\n9 * 2 = 18, and 2 more", "#### 18", 1 },
		{ "##### **Step 2**\nSo she has 18", "#### 18", 1 },
		{ "#### **18**", "#### 18", 1 },
		/* fractions, mixed numbers and powers of ten, and what follows them */
		{ "\\boxed{\\frac{10}{1}}", "#### 10", 1 },
		{ "The answer is \\frac{18}{2} = 9.", "#### 9", 1 },
		{ "The answer is \\frac{18}{2}=9.", "#### 9", 1 },
		{ "The answer is 9/2.", "#### 4.5", 1 },
		{ "The answer is 9/1.", "#### 9", 1 },
		{ "The answer is 9 / 2 = 4.5 dollars.", "#### 4.5", 1 },
		{ "The answer is 0\\frac{1}{2}.", "#### 0.5", 1 },
		{ "The answer is -4\\frac{1}{2}.", "#### -4.5", 1 },
		{ "The answer is -0\\frac{1}{2}.", "#### -0.5", 1 },
		{ "The answer is 4\\frac{0}{2} apples.", "#### 4", 1 },
		{ "\\boxed{1.5 \\times 10^{-3}}", "#### 0.0015", 1 },
		{ "\\boxed{1.5 \\times 10^{+3}}", "#### 1500", 0 },
		{ "The answer is 1 \\times 10^{1} + 5 = 15.", "#### 15", 1 },
		{ "The answer is 2 \\cdot 10^2 = 200", "#### 200", 1 },
		{ "The answer is 1.2e+3.", "#### 1200", 1 },
		{ "The answer is 1.2E-1.", "#### 0.12", 1 },
		{ "The answer is 12e", "#### 12", 1 },
		{ "The answer is 12e+", "#### 12", 1 },
		{ "The answer is 1e3x", "#### 1", 1 },
		{ "The answer is \\$12.", "#### 12", 1 },
		{ "The answer is -\\$12.", "#### -12", 1 },
		{ "so 16-3=13", "#### 13", 1 },
		{ "The answer is x-5", "#### 5", 1 },
		{ "The answer is \xe2\x88\x92", "#### 0", 0 },
		{ "####18", "####18", 1 },
		{ "x ##### 18 and 5", "#### 18", 1 },
		{ "##### 18", "#### 18", 1 },
		{ "a-5", "#### 5", 1 },
		{ "The answer is 2e10", "#### 20000000000", 1 },
		{ "\\boxed{\\tfrac{9}{2}}", "#### 4.5", 1 },
		{ "The answer is 2 * \\left(3 + 4\\right) = 14", "#### 14", 1 },
		{ "The answer is 18 (9 = 9).", "#### 18", 1 },
		{ "The answer is 9 * 2 = $18.", "#### 18", 1 },
		{ "The answer is 1,0a5", "#### 1", 1 },
		{ "The", "#### 1", 0 },
		/* the same number: within 1e-9 of the larger, or of 1 below it */
		{ "#### 1.0000000015", "#### 1", 0 },
		{ "#### 0.1000000005", "#### 0.1", 1 },
		{ "#### 1000000.0001", "#### 1000000", 1 },
		{ "#### 1000000.01", "#### 1000000", 0 },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		is_float(rw(REWARD_GSM8K, c[i].resp, c[i].answer), c[i].want, 0, "gsm8k case %zu", i);
	double v;
	ok(extract("a 3 b #### 12 c", 15, &v) && v == 12, "#### wins over the last number");
	ok(extract("\\boxed{7} then 9", 16, &v) && v == 7, "boxed wins over the last number");
	ok(extract("The answer is 4, not 9", 22, &v) && v == 4, "'The answer is' wins over the last");
	ok(extract("1,000,000", 9, &v) && v == 1e6, "two separators");
	/* digits past any buffer still count: 1 and 100 zeros is 1e100, not the
	 * same number as 1 and 80 zeros (a reward for a wrong answer) */
	char big[160], big2[160];
	snprintf(big, sizeof big, "#### 1%0100d", 0);
	snprintf(big2, sizeof big2, "#### 1%080d", 0);
	int got = extract(big, strlen(big), &v);
	ok(got && fabs(v / 1e100 - 1) < 1e-12, "1 and 100 zeros: %g", v);
	is_float(rw(REWARD_GSM8K, big, big2), 0, 0, "1 and 100 zeros is not 1 and 80 zeros");
	snprintf(big, sizeof big, "#### 1%077d.5", 0);
	got = extract(big, strlen(big), &v);
	ok(got && fabs(v / 1e77 - 1) < 1e-12, "78 digits and a decimal part: %g", v);
	char huge[480];
	snprintf(huge, sizeof huge, "#### -1%0400d", 0);
	got = extract(huge, strlen(huge), &v);
	ok(got && v == -DBL_MAX, "past a double: the largest negative double, not its last digits: %g", v);
	ok(!extract("no digits at all", 16, &v), "no number: none extracted");
	/* the reference answer: after "####", or bare with a '$', a '%' or a '.' */
	static const struct {
		const char *answer;
		int ok;
		double v;
	} a[] = { { "18", 1, 18 }, { " $18 ", 1, 18 }, { "18%", 1, 18 }, { "18.", 1, 18 }, { "18 apples", 0, 0 },
		  { "18%%", 0, 0 }, { "x 18", 0, 0 }, { "so #### 1,000", 1, 1000 } };
	int right = 0;
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
		double w = -1;
		int got = reward_gsm8k_answer(a[i].answer, &w);
		if (got == a[i].ok && (!got || w == a[i].v))
			right++;
		else
			diag("answer '%s': %d, %g", a[i].answer, got, w);
	}
	is_int(right, (int)(sizeof a / sizeof a[0]), "reference answers read or refused");
	/* NUL bytes inside the text do not end it */
	ok(extract("a\0b 5", 5, &v) && v == 5, "text with a NUL byte");
}

static void boxed_cases(void)
{
	is_float(rw(REWARD_BOXED, "so \\boxed{x + 1}.", "x+1"), 1, 0, "boxed: whitespace ignored");
	is_float(rw(REWARD_BOXED, "\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"), 1, 0,
		 "boxed: the last, nested braces");
	is_float(rw(REWARD_BOXED, "\\boxed{2}", "The answer is \\boxed{2}."), 1, 0, "boxed: answer's own box");
	is_float(rw(REWARD_BOXED, "\\boxed{3}", "2"), 0, 0, "boxed: different");
	is_float(rw(REWARD_BOXED, "\\boxed{3", "3"), 0, 0, "boxed: unclosed");
	is_float(rw(REWARD_BOXED, "\\boxed 3$ ok", "3"), 1, 0, "boxed with a space runs to $");
	is_float(rw(REWARD_BOXED, "\\fbox{4}", "4"), 1, 0, "fbox");
	is_float(rw(REWARD_BOXED, "4", "4"), 0, 0, "no box");
	/* hendrycks MATH's normal form (formats.md §6): these were all 0 */
	static const struct {
		const char *resp, *answer;
		double want;
	} c[] = {
		{ "so \\boxed{\\dfrac{1}{2}}", "\\frac{1}{2}", 1 },
		{ "\\boxed{\\text{18}}", "18", 1 },
		{ "\\boxed{18\\text{ cm}}", "18cm", 1 },
		{ "\\boxed{\\text{(B)}}", "(B)", 1 },
		{ "\\boxed{18.}", "18", 1 },
		{ "\\boxed{1,000}", "1000", 1 },
		{ "\\boxed{1{,}000}", "1000", 1 },
		{ "\\boxed{1\xe2\x80\xaf" "000}", "1000", 1 },
		{ "\\boxed{1\xc2\xa0" "000}", "1,000", 1 },
		{ "\\boxed{\\$18}", "$18$", 1 },
		{ "\\boxed{\\left( 1, 2 \\right)}", "(1,2)", 1 },
		{ "\\boxed{3\\!\\,\\pi}", "3\\pi", 1 },
		/* and no more: values differ, and a bracket is kept */
		{ "\\boxed{1.5}", "15", 0 },
		{ "\\boxed{(1,2)}", "(1,20)", 0 },
		{ "\\boxed{\\text{18}}", "\\{18\\}", 0 },
		{ "\\boxed{\\dfrac{1}{2}}", "\\frac{1}{3}", 0 },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		is_float(rw(REWARD_BOXED, c[i].resp, c[i].answer), c[i].want, 0, "boxed case %zu: %s vs %s", i, c[i].resp,
			 c[i].answer);
		if (c[i].want)   /* what the text comparison matches, math matches */
			is_float(rw(REWARD_MATH, c[i].resp, c[i].answer), 1, 0, "  and math");
	}
}

/* math: the boxed reward's text comparison, then mathans (test_mathans has its cases) */
static void math_cases(void)
{
	is_float(rw(REWARD_MATH, "so \\boxed{0.5}", "\\frac12"), 1, 0, "math: 0.5 is 1/2");
	is_float(rw(REWARD_BOXED, "so \\boxed{0.5}", "\\frac12"), 0, 0, "  which boxed calls wrong");
	is_float(rw(REWARD_MATH, "\\boxed{\\text{18}}", "\\{18\\}"), 1, 0, "math: a set of one is its element");
	is_float(rw(REWARD_MATH, "\\boxed{2, 1}", "so \\boxed{\\{1,2\\}}."), 1, 0, "math: the answer's own box");
	is_float(rw(REWARD_MATH, "\\boxed{204_5}", "204_5"), 1, 0, "math: unparsed, equal as text");
	is_float(rw(REWARD_MATH, "\\boxed{204_5}", "204_6"), 0, 0, "math: unparsed, different text");
	is_float(rw(REWARD_MATH, "\\boxed{3}", "2"), 0, 0, "math: different");
	is_float(rw(REWARD_MATH, "0.5", "\\frac12"), 0, 0, "math: no box");
	is_float(rw(REWARD_MATH, "So x = 1/2.\nAnswer: $0.5$", "\\frac12"), 1, 0, "math: DAPO's Answer: line");
	is_float(rw(REWARD_BOXED, "So x = 1/2.\nAnswer: 0.5", "0.5"), 0, 0, "  which boxed does not read");
	is_float(rw(REWARD_MATH, "ANSWER : 3\nthe answer is 4", "3"), 1, 0, "math: any case, blanks before ':'");
	is_float(rw(REWARD_MATH, "Answer: 3\nAnswer: 4\n", "4"), 1, 0, "math: the last Answer:");
	is_float(rw(REWARD_MATH, "Answer: 3 apples\n", "3"), 0, 0, "math: words after it are not an answer");
	is_float(rw(REWARD_MATH, "\\boxed{5}\nAnswer: 3", "5"), 1, 0, "math: a box first");
	is_float(rw(REWARD_MATH, "answer is: 3", "3"), 0, 0, "math: no ':' right after the word");
	is_float(rw(REWARD_MATH, "so \\boxed{72}", "She sold 48+24 = 72.\n#### 72"), 1, 0, "math: GSM8K's answer");
	is_float(rw(REWARD_MATH, "so \\boxed{72.0}", "#### 72"), 1, 0, "  as a number");
	is_float(rw(REWARD_MATH, "so \\boxed{7,425}", "#### 7425"), 1, 0, "  with a separator");
	is_float(rw(REWARD_BOXED, "so \\boxed{72}", "#### 72"), 0, 0, "  which boxed compares as text");
	is_float(rw(REWARD_MATH, "so \\boxed{71}", "#### 72"), 0, 0, "math: GSM8K's answer, wrong");
	is_float(rw(REWARD_MATH, "\\boxed{0.5}", NULL), 0, 0, "math: no answer");
}

static double rep(const char *text, uint32_t n)
{
	struct reward_opt o = { .ngram = n };
	return reward_eval(REWARD_REPETITION, &o, text, strlen(text), NULL, 0);
}

/* repetition and steps: each value is what open-r1's Python gives for the text */
static void repetition_cases(void)
{
	static const struct {
		const char *text;
		double want[3];   /* n = 1, 2, 3 */
	} c[] = {
		{ "", { 0, 0, 0 } },
		{ "one two", { 0, 0, 0 } },
		{ "a b c a b c", { -0.5, -0.4, -0.25 } },
		{ "The cat sat. the CAT sat.", { -0.5, -0.4, -0.25 } },
		{ "x x x x x x", { -5.0 / 6, -0.8, -0.75 } },
		{ "a\xc2\xa0" "b c a\xc2\xa0" "b c", { -0.5, -0.4, -0.25 } },   /* U+00A0 splits */
		{ "a\x1c" "b c a b c", { -0.5, -0.4, -0.25 } },                  /* so does U+001C */
		{ "alpha beta gamma delta", { 0, 0, 0 } },
		{ "a b c d a b c d a b c d", { -2.0 / 3, -7.0 / 11, -0.6 } },
		{ "ab c ab c a bc", { -1.0 / 3, -0.2, 0 } },   /* n-grams of words, not of their bytes */
		/* Python folds every script (-0.75, -2/3, -0.5); here ASCII only */
		{ "\xc3\x84rger \xc3\xa4rger \xc3\xa4rger \xc3\xa4rger", { -0.5, -1.0 / 3, 0 } },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		for (uint32_t n = 1; n <= 3; n++)
			is_float(rep(c[i].text, n), c[i].want[n - 1], 1e-12, "repetition, n = %u: %s", n, c[i].text);
	is_float(rep("a b c a b c", 0), -0.25, 1e-12, "repetition: n 0 is the default, 3");
	/* a long response: 5,000 words cycling through 50, so 50 distinct 3-grams */
	char *t = malloc(5000 * 4 + 1), *p = t;
	for (int i = 0; i < 5000; i++)
		p += sprintf(p, "w%02d ", i % 50);
	is_float(rep(t, 3), 50.0 / 4998 - 1, 1e-12, "repetition: 5,000 words, 50 distinct 3-grams");
	free(t);

	static const struct {
		const char *text;
		double want;
	} st[] = {
		{ "Step 1: add. Step 2: carry.", 2.0 / 3 },
		{ "1. first\n2. second", 1.0 / 3 },   /* ^ without MULTILINE: the start only */
		{ "First, x. Second, y. Finally, z.", 1 },
		{ "\n- a\n- b", 2.0 / 3 },
		{ "Step 1:", 1.0 / 3 },
		{ "Step 12a: no", 0 },
		{ "Step :", 0 },
		{ "x 1. y", 0 },
		{ "\n*\n*\n*\n*", 1 },
		{ "Next,Next,", 2.0 / 3 },
		{ "Step 1:Step 2:", 2.0 / 3 },
		{ "Step\xc2\xa0" "1: no", 0 },
	};
	for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
		is_float(rw(REWARD_STEPS, st[i].text, NULL), st[i].want, 1e-12, "steps, case %zu", i);
}

static void format_cases(void)
{
	is_float(rw(REWARD_FORMAT, "<think>\nhm\n</think>\n<answer>\n4\n</answer>", NULL), 1, 0, "format: ok");
	is_float(rw(REWARD_FORMAT, "<think>\nhm\n</think>\n<answer>\n4\n</answer>\n", NULL), 1, 0,
		 "format: final newline ($ before \\n)");
	is_float(rw(REWARD_FORMAT, "<think>\n\n</think>\n<answer>\n\n</answer>", NULL), 1, 0, "format: empty parts");
	is_float(rw(REWARD_FORMAT, "<think>\na\nb\n</think>\n<answer>\n4\n</answer>\nmore", NULL), 1, 0,
		 "format: MULTILINE $ at a line end");
	is_float(rw(REWARD_FORMAT, "<think>\nhm\n</think>\n<answer>\n4\n</answer> x", NULL), 0, 0,
		 "format: text after </answer> on its line");
	is_float(rw(REWARD_FORMAT, "<think>hm</think><answer>4</answer>", NULL), 0, 0, "format: no newlines");
	is_float(rw(REWARD_FORMAT, " <think>\nhm\n</think>\n<answer>\n4\n</answer>", NULL), 0, 0,
		 "format: anchored at the start");
	is_float(rw(REWARD_FORMAT, "<think>\n</think>\n<answer>\n4\n</answer>", NULL), 0, 0,
		 "format: the newline after <think> is not shared");
	is_float(rw(REWARD_FORMAT, "<think>\na\n</think>\n<answer>\n4\n</answer>x\n</think>\n<answer>\n5\n</answer>", NULL),
		 1, 0, "format: a later tail ends the first answer (.*? spans the rest)");
	/* a response repeating its answer block, each ended by a character
	 * that no $ matches: a minute of CPU for 1 MB, all mids times all tails */
	static const char block[] = "\n</think>\n<answer>\n4\n</answer>x";
	size_t n = 1 << 20, m = sizeof block - 1;
	char *big = malloc(n);
	memcpy(big, "<think>\n", 8);
	for (size_t i = 8; i < n; i++)
		big[i] = block[(i - 8) % m];
	clock_t t0 = clock();
	is_float(reward_eval(REWARD_FORMAT, &no_opt, big, n, NULL, 0), 0, 0, "format: 1 MB of answer blocks, none ending a line");
	double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
	diag("in %.2f s of CPU", s);   /* said, not asserted: a bound fails on a slow machine */
	memcpy(big + n - 10, "\n</answer>", 10);
	is_float(reward_eval(REWARD_FORMAT, &no_opt, big, n, NULL, 0), 1, 0, "format: the same, ended by a tail");
	free(big);
}

static void tags_cases(void)
{
	is_float(rw(REWARD_FORMAT, "", NULL) + rw(REWARD_FORMAT, "<think>", NULL) + rw(REWARD_FORMAT, "<think>\n", NULL), 0,
		 0, "format: texts shorter than its layout, read no further than they go");
	is_float(rw(REWARD_TAGS, "<think>\nx\n</think>\n<answer>\n4\n</answer>", NULL), 1, 0, "tags: all four");
	is_float(rw(REWARD_TAGS, "<think>\nx\n</think>\n", NULL), 0.5, 0, "tags: two");
	is_float(rw(REWARD_TAGS, "<think>\n<think>\nx", NULL), 0, 0, "tags: twice counts nothing");
	is_float(rw(REWARD_TAGS, "", NULL), 0, 0, "tags: empty");
}

static void length_cases(void)
{
	struct reward_opt o = { .max_len = 100, .overlong_buffer = 20 };
	is_float(reward_eval(REWARD_LENGTH, &o, "", 0, NULL, 80), 0, 0, "length: at Lmax - C");
	is_float(reward_eval(REWARD_LENGTH, &o, "", 0, NULL, 90), -0.5, 1e-12, "length: half into the buffer");
	is_float(reward_eval(REWARD_LENGTH, &o, "", 0, NULL, 100), -1, 1e-12, "length: at Lmax");
	is_float(reward_eval(REWARD_LENGTH, &o, "", 0, NULL, 101), -1, 0, "length: past Lmax");
	struct reward_opt hard = { .max_len = 100 };
	is_float(reward_eval(REWARD_LENGTH, &hard, "", 0, NULL, 100), 0, 0, "length, no buffer: at Lmax");
	is_float(reward_eval(REWARD_LENGTH, &hard, "", 0, NULL, 101), -1, 0, "length, no buffer: past");
}

/* cosine and kimi-length against open-r1's and TRL's formulas computed in
 * Python (TRL's cosine, which clamps L / max_len at 1). */
static void verdict_cases(void)
{
	static const struct {
		uint32_t L;
		double right, wrong;
	} cos100[] = {
		{ 0, 1.0, -1.0 },
		{ 1, 0.999876640091433, -0.999876640091433 },
		{ 25, 0.9267766952966369, -0.9267766952966369 },
		{ 50, 0.75, -0.75 },
		{ 75, 0.5732233047033631, -0.5732233047033631 },
		{ 99, 0.500123359908567, -0.500123359908567 },
		{ 100, 0.5, -0.5 },
		{ 150, 0.5, -0.5 },
	};
	struct reward_opt o = { .max_len = 100, .cosine = REWARD_COSINE_DEFAULT };
	for (size_t i = 0; i < sizeof cos100 / sizeof cos100[0]; i++) {
		is_float(reward_cosine(&o, 1, cos100[i].L), cos100[i].right, 1e-15, "cosine: right, %u of 100 tokens",
			 cos100[i].L);
		is_float(reward_cosine(&o, 0, cos100[i].L), cos100[i].wrong, 1e-15, "cosine: wrong, %u of 100 tokens",
			 cos100[i].L);
	}
	/* open-r1's script defaults: a wrong answer from 0 (short) to -0.5 (long) */
	struct reward_opt r1 = { .max_len = 100, .cosine = { 1, 0.5, 0, -0.5 } };
	is_float(reward_cosine(&r1, 1, 30), 0.8969463130731183, 1e-15, "cosine: other values, right");
	is_float(reward_cosine(&r1, 0, 30), -0.10305368692688172, 1e-15, "cosine: other values, wrong");
	is_float(reward_eval(REWARD_COSINE, &o, "x", 1, "x", 0), 0, 0, "cosine: nothing from reward_eval");

	static const uint32_t len[] = { 10, 20, 30, 40, 17 };
	static const int right[] = { 1, 0, 1, 0, 0 };
	static const double want[] = { 0.5, 0, -0.16666666666666663, -0.5, 0 };
	for (size_t i = 0; i < 5; i++)
		is_float(reward_kimi_length(right[i], len[i], 10, 40), want[i], 1e-15, "kimi-length: %u tokens, %s",
			 len[i], right[i] ? "right" : "wrong");
	is_float(reward_kimi_length(1, 7, 7, 7) + reward_kimi_length(0, 7, 7, 7), 0, 0,
		 "kimi-length: 0 when every length is equal");
	ok(reward_needs_verdict(REWARD_COSINE) && reward_needs_verdict(REWARD_KIMI_LENGTH) &&
	   !reward_needs_verdict(REWARD_MATH) && !reward_needs_verdict(REWARD_LENGTH) &&
	   !reward_needs_text(REWARD_COSINE) && !reward_needs_text(REWARD_KIMI_LENGTH),
	   "cosine and kimi-length need a verdict, not the text");
}

/* TRL's think_format_reward: the verdicts of Python's re on the same texts */
static void think_cases(void)
{
	static const struct {
		const char *text;
		size_t n;           /* 0: strlen */
		double want;
	} c[] = {
		{ "<think>\nabc\n</think>\nThe answer is 4.", 0, 1 },
		{ "<think></think>", 0, 1 },
		{ "<think>", 0, 0 },
		{ "</think>", 0, 0 },
		{ "x<think>a</think>", 0, 0 },
		{ "<think>a<think>b</think>", 0, 0 },
		{ "<think>a</think><think>", 0, 0 },
		{ "<think>a</think>\n</think>", 0, 1 },
		{ " <think>a</think>", 0, 0 },
		{ "<think>\n\n</think>\n\n", 0, 1 },
		{ "<THINK>a</THINK>", 0, 0 },
		{ "<think>a</think", 0, 0 },
		{ "<think>a\0b</think>", 18, 1 },
		{ "<think>a</think>b\nc", 0, 1 },
		{ "<think><think></think>", 0, 0 },
		{ "<think>a</think>b<think>c</think>", 0, 0 },
		{ "<thinkX</think>", 0, 0 },
		{ "<think </think>", 0, 0 },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		size_t n = c[i].n ? c[i].n : strlen(c[i].text);
		is_float(reward_eval(REWARD_THINK, &no_opt, c[i].text, n, NULL, 0), c[i].want, 0, "think, case %zu", i);
	}
}

/* The end of a prompt that opened the think block, as the DeepSeek-R1
 * distills' template leaves it, and ends that did not. */
static void think_opened_cases(void)
{
	static const struct {
		const char *tail;
		size_t want;
	} c[] = {
		{ "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>\n", 8 },   /* the R1 distills */
		{ "<think>", 7 },
		{ "x<think> \t\n\n", 11 },
		{ "<think>\nOkay, so", 0 },            /* the response would not start the block */
		{ "<think>\n\n</think>\n\n", 0 },     /* Qwen3 without thinking: closed */
		{ "<|im_start|>assistant\n", 0 },       /* Qwen3 with thinking: the response opens it */
		{ "<think>\n</think>\n<think>\n", 8 },  /* the last one counts */
		{ "think>\n", 0 },
		{ "", 0 },
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		is_int((long long)reward_think_opened(c[i].tail, strlen(c[i].tail)), (long long)c[i].want,
		       "think opened by a prompt ending \"%s\"", c[i].tail);
	ok(reward_reads_think(REWARD_THINK) && reward_reads_think(REWARD_FORMAT) && reward_reads_think(REWARD_TAGS) &&
	   !reward_reads_think(REWARD_MATH) && !reward_reads_think(REWARD_LENGTH),
	   "format, think and tags read the opening <think>, no other reward");
}

/* --answer-after-think: the answer rewards read what follows the last
 * </think>, and nothing without one */
static void after_think_cases(void)
{
	static const struct {
		enum reward_kind k;
		const char *text, *answer;
		double whole, after;    /* the reward without and with after_think */
	} c[] = {
		{ REWARD_GSM8K, "<think>So 3 + 4 = 7", "#### 7", 1, 0 },
		{ REWARD_GSM8K, "<think>3 + 4 = 7, no, 8</think>\nThe answer is 7.", "#### 7", 1, 1 },
		{ REWARD_GSM8K, "<think>maybe 7</think>The answer is 8.</think>", "#### 7", 0, 0 },
		{ REWARD_BOXED, "<think>\\boxed{7}</think> so 7", "7", 1, 0 },
		{ REWARD_BOXED, "<think>first</think><think>\\boxed{6}</think>\\boxed{7}", "7", 1, 1 },
		{ REWARD_MATH, "<think>\\boxed{0.5}</think>\\boxed{\\frac{1}{2}}", "\\frac12", 1, 1 },
		{ REWARD_MATH, "<think>Answer: 0.5", "\\frac12", 1, 0 },
		{ REWARD_EXACT, "<think>x</think>\n Paris \n", "Paris", 0, 1 },
		{ REWARD_EXACT, "</think>", "", 0, 1 },
		{ REWARD_FORMAT, "<think>\nx\n</think>\n<answer>\n4\n</answer>", NULL, 1, 1 },
		{ REWARD_THINK, "<think>x</think>4", NULL, 1, 1 },
	};
	struct reward_opt after = { .after_think = 1 };
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		size_t n = strlen(c[i].text);
		is_float(reward_eval(c[i].k, &no_opt, c[i].text, n, c[i].answer, 0), c[i].whole, 0,
			 "after think, case %zu: the whole response", i);
		is_float(reward_eval(c[i].k, &after, c[i].text, n, c[i].answer, 0), c[i].after, 0,
			 "after think, case %zu: after the last </think>", i);
	}
	ok(reward_reads_answer(REWARD_GSM8K) && reward_reads_answer(REWARD_BOXED) && reward_reads_answer(REWARD_MATH) &&
	   reward_reads_answer(REWARD_EXACT) && !reward_reads_answer(REWARD_FORMAT) && !reward_reads_answer(REWARD_THINK),
	   "the answer rewards are gsm8k, boxed, math and exact");
}

static void exact_cases(void)
{
	is_float(rw(REWARD_EXACT, "  Paris\n", "Paris"), 1, 0, "exact: trimmed");
	is_float(rw(REWARD_EXACT, "paris", "Paris"), 0, 0, "exact: case matters");
	is_float(rw(REWARD_EXACT, "Paris", NULL), 0, 0, "exact: no answer");
}

static void parse_cases(void)
{
	struct reward_spec r;
	struct err e;
	ok(reward_parse("gsm8k", &r, &e) == 0 && r.kind == REWARD_GSM8K && r.weight == 1, "parse gsm8k");
	ok(reward_parse("format=0.5", &r, &e) == 0 && r.kind == REWARD_FORMAT && r.weight == 0.5 &&
	   strcmp(r.name, "format") == 0, "parse format=0.5");
	ok(reward_parse("nope", &r, &e) < 0 && strstr(e.msg, "unknown reward 'nope'"), "unknown name: %s", e.msg);
	ok(reward_parse("gsm8k=x", &r, &e) < 0 && strstr(e.msg, "weight 'x'"), "bad weight: %s", e.msg);
	ok(reward_parse("gsm8k=nan", &r, &e) < 0, "NaN weight refused");
	ok(reward_parse("gsm8k=1e-400", &r, &e) < 0 && strstr(e.msg, "would be 0"), "a weight too small for a double: %s",
	   e.msg);
	ok(reward_parse("gsm8k=0e-400", &r, &e) == 0 && r.weight == 0, "a weight of 0 written 0e-400");
	ok(reward_parse("gsm8k=0x10", &r, &e) < 0, "a hexadecimal weight refused");
	ok(reward_parse("gsm8k= 2", &r, &e) < 0, "a weight after a blank refused");
	ok(reward_parse_program("pass=1e-400", &r, &e) < 0, "likewise a program's reward");
	/* beyond 1e38 a weighted sum of rewards could overflow a double */
	ok(reward_parse("gsm8k=1e38", &r, &e) == 0 && r.weight == 1e38, "a weight of 1e38 taken");
	ok(reward_parse("gsm8k=-1e38", &r, &e) == 0 && r.weight == -1e38, "and of -1e38");
	ok(reward_parse("gsm8k=1.0000001e38", &r, &e) < 0 && strstr(e.msg, "beyond 1e+38"),
	   "a weight past 1e38 refused: %s", e.msg);
	ok(reward_parse_program("pass=-1e308", &r, &e) < 0 && strstr(e.msg, "weight '-1e308' is beyond"),
	   "likewise a program's reward, negative: %s", e.msg);
	ok(reward_parse("gsm8k=", &r, &e) < 0 && strstr(e.msg, "weight '' is not a finite number"),
	   "an empty weight refused: %s", e.msg);
	ok(reward_parse("exact=2", &r, &e) == 0 && r.kind == REWARD_EXACT && r.weight == 2 && !strcmp(r.name, "exact"),
	   "the last built-in name, with a weight");
	ok(reward_parse("gsm8", &r, &e) < 0 && reward_parse("gsm8kk", &r, &e) < 0, "a prefix or an extension of a name");

	/* which --reward names a built-in reward rather than a program's */
	static const struct {
		const char *arg;
		int builtin;
	} b[] = { { "gsm8k", 1 }, { "exact", 1 }, { "length=0.5", 1 }, { "gsm8", 0 }, { "gsm8kk", 0 },
		  { "gsm8k2=1", 0 }, { "", 0 }, { "=1", 0 }, { "pass", 0 } };
	int right = 0;
	for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
		right += reward_is_builtin(b[i].arg) == b[i].builtin;
	is_int(right, (int)(sizeof b / sizeof b[0]), "reward_is_builtin on names, prefixes, extensions and weights");

	/* a program's reward: a name of 1 to REWARD_NAME_MAX bytes */
	char name[REWARD_NAME_MAX + 8];
	memset(name, 'n', sizeof name);
	name[REWARD_NAME_MAX] = '\0';
	ok(reward_parse_program(name, &r, &e) == 0 && strlen(r.name) == REWARD_NAME_MAX && r.weight == 1,
	   "a program's reward named with %d bytes", REWARD_NAME_MAX);
	name[REWARD_NAME_MAX] = 'n', name[REWARD_NAME_MAX + 1] = '\0';
	ok(reward_parse_program(name, &r, &e) < 0 && strstr(e.msg, "a name of 1 to 63 bytes"),
	   "%d bytes refused: %.30s...", REWARD_NAME_MAX + 1, e.msg + strlen(e.msg) - 30);
	ok(reward_parse_program("=2", &r, &e) < 0 && strstr(e.msg, "reward '': a name of 1 to 63 bytes"),
	   "no name refused: %s", e.msg);
	ok(reward_parse_program("p=0.25", &r, &e) == 0 && !strcmp(r.name, "p") && r.weight == 0.25,
	   "a one-byte name with a weight");
	ok(!reward_needs_text(REWARD_LENGTH) && reward_needs_text(REWARD_GSM8K) && reward_needs_text(REWARD_EXACT) &&
	   reward_needs_text(REWARD_FORMAT), "only the length reward does without the text");
}

/* The reference solutions of the GSM8K test set score 1; with the final
 * number changed, 0. */
static void gsm8k_dataset(void)
{
	const char *dir = getenv("GRPO_SHARED");
	char path[4096];
	snprintf(path, sizeof path, "%s/data/gsm8k/test.jsonl", dir ? dir : "/work/shared");
	FILE *f = fopen(path, "r");
	if (!f) {
		ok(1, "# SKIP %s not found", path);
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	int rows = 0, right = 0, wrong_caught = 0, sol_extracted = 0;
	while (getline(&line, &cap, f) > 0) {
		cJSON *j = cJSON_Parse(line);
		const char *ans = cJSON_GetStringValue(cJSON_GetObjectItem(j, "answer"));
		if (ans) {
			rows++;
			right += rw(REWARD_GSM8K, ans, ans) == 1;
			/* the solution without its "#### N" line: the last number of the
			 * working must still be read (most solutions end with it) */
			const char *h = strstr(ans, "####");
			double v, want;
			if (h && reward_gsm8k_answer(ans, &want)) {
				char *body = strndup(ans, (size_t)(h - ans));
				char alt[64];
				snprintf(alt, sizeof alt, "#### %.17g", want + 1);
				wrong_caught += rw(REWARD_GSM8K, alt, ans) == 0;
				sol_extracted += extract(body, strlen(body), &v) && v == want;
				free(body);
			}
		}
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	ok(rows == 1319, "GSM8K test rows: %d", rows);
	is_int(right, rows, "every reference solution scores 1 against its answer");
	is_int(wrong_caught, rows, "every changed answer scores 0");
	ok(sol_extracted > rows * 95 / 100, "the working's last number is the answer in %d of %d", sol_extracted,
	   rows);
}

int main(void)
{
	gsm8k_cases();
	boxed_cases();
	math_cases();
	repetition_cases();
	format_cases();
	tags_cases();
	length_cases();
	verdict_cases();
	think_cases();
	think_opened_cases();
	after_think_cases();
	exact_cases();
	parse_cases();
	gsm8k_dataset();
	return tap_done();
}
