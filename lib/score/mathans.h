/*
 * mathans.h: whether two math answers, the LaTeX inside a \boxed{}, are
 * the same mathematical object, for the math reward of grpo-score.
 *
 * Comparing the text, even normalised as hendrycks MATH does (the boxed
 * reward), calls "0.5" wrong against "\frac{1}{2}", "\{-2, 1\}" against
 * "1,-2" and "(x+1)^2" against "x^2+2x+1". Here both answers are parsed
 * into one of:
 *
 *   an expression    numbers (with thousands separators), letters and
 *                    Greek letters as variables (x_1 and x_2 differ), \pi,
 *                    e (Euler's number, as latex2sympy reads a lone e; e_1
 *                    is a variable), \infty, + - * / ^ !, \cdot \times \div, implicit
 *                    products (2x, 2\sqrt{3}), \frac \dfrac \tfrac \cfrac
 *                    (and \frac12), mixed numbers (3\frac{1}{2} is 3.5),
 *                    \sqrt{} \sqrt[n]{} \binom{}{}, |x|, \sin \cos \tan
 *                    \sec \csc \cot, their inverses, \ln \log \log_b \exp,
 *                    repeating decimals: 0.1\overline{6}, 0.1\bar{6} and
 *                    0.1\dot{6} are 1/6, .\overline{3} is 1/3, and
 *                    0.\dot{1}4285\dot{7} (dots over the first and last
 *                    digits of the block) is 1/7; an \overline anywhere
 *                    else is a variable times what it covers, as any
 *                    command this does not know (\overline{AB}); 0.(3)
 *                    is 1/3 and 1.(142857) 8/7 when the parenthesis holds
 *                    digits alone, right after the decimal's point, with
 *                    the end or an operator (+ - * / , ) ] } | = < >
 *                    \cdot \times \div \le ... \pm) after it
 *                    (latex2sympy reads 0.(3) as 0); after a decimal's
 *                    digits a parenthesis is a product, as latex2sympy
 *                    reads it: 1.234(5) is 6.17 (not 1.234555..., nor
 *                    physics' 1.234 +- 0.005), 0.1(6) is 0.6, 2(3) is 6;
 *                    a number's percent, 28\%, 28% or 28 percent, is
 *                    28 * 1/100 as latex2sympy reads it (Mul(28, 1/100),
 *                    the hundredth a Rational): 0.28 and \frac{7}{25},
 *                    not 28, however a GSM8K reference of 28 for a
 *                    question about percents is written; 12.5\% is
 *                    12.5 * 0.01 in binary floating point, a decimal in
 *                    arithmetic below, so that 70.0\% is not 7/10. A
 *                    percent after anything else (x\%, (28)\%) is not
 *                    read, as latex2sympy's grammar has none
 *   a relation       a = b, a < b, \le, \ge, \ne and chains of them
 *   a tuple          (a, b) [a, b) ... (intervals are tuples: the brackets
 *                    count)
 *   a set            \{a, b\}, a bare list a, b, \emptyset, and a \pm b
 *                    (the set of a + b and a - b)
 *   a union          of intervals and sets, \cup
 *   a matrix         pmatrix, bmatrix, matrix, smallmatrix, array
 *
 * after dropping what does not change the value: $, \left and \right,
 * spacing, \displaystyle, degrees (^\circ), \text{X} and \mathrm{X}
 * around X, and units: a \text{ ...} that starts with a space ends the
 * answer, as hendrycks MATH's normaliser cuts one ("15\text{ cm}^2" is
 * 15); "\text{ and }" and "\text{ or }" separate a list.
 *
 * Then:
 *   - an equation whose left side is variables alone, multiplied or
 *     divided ("x = 5", "ab = 5", "x = y"), is its right side against an
 *     answer that is no relation, as math_verify's assignments are; "5 =
 *     x" and "2x = 10" are not 5. Against relations it is a relation, so
 *     that "a = 2, b = 3" is not "a = 3, b = 2"; a chain "x = 2 + 3 = 5"
 *     is its last side; "x \in [0, 1)" is the interval;
 *   - likewise a function's definition "f(x) = 2x + 1" is 2x + 1, and
 *     "f(x) = x" is x: f one letter or a Greek letter (\phi(x),
 *     \varphi(t)), with a subscript (g_1(x)), primes (f'(x)) or ^{-1}
 *     (the inverse), applied to lone variables (h(x, y)), left of '='
 *     ("2x + 1 = f(x)" is no definition). Its f(x) is the product f*x it
 *     is without the '=', so that against a relation the names count:
 *     "f(x) = x^2" is neither "g(x) = x^2" nor "y = x^2";
 *   - expressions are equal when their values agree to a relative 1e-8 at
 *     eight points, each variable taking the same pseudo-random value in
 *     both (six points in [0.4, 1.9], two in [-1.9, -0.4]); a point where
 *     both are undefined (a square root of a negative) is skipped, one
 *     where only one is fails, and at least one point must count;
 *   - but a decimal number (digits with a point, signed or not: 0.333333,
 *     -2.5; not 0.\overline{3}) against a constant expression (one
 *     without variables) is equal only when the two, rounded half to
 *     even at the sixth decimal, agree: math_verify's verify() with its
 *     default float_rounding=6 (sympy_numeric_eq in its grader.py). So
 *     0.333333 and 0.3333333 are 1/3 and 1.414214 is \sqrt{2}, while
 *     0.33, 0.333334 and the cut 0.666666 (for 2/3) are not, and
 *     1000000.4999 is not 1000000.5 however close. A decimal is rounded
 *     from its digits as written, every one of them (sympy's Float
 *     keeps them all, 15 at least), not from a double: 0.12345650000000001
 *     is 0.123457 and 12345678901234567.5 is not 12345678901234567.4.
 *     sympy's rounded Floats are equal only at one precision too: the
 *     number's own digits when rounded to a whole number, so 0.9999995
 *     (15 digits) is 1.000000 but 0.99999950000000000001 (20) is not;
 *     mag + 6 otherwise, mag the digits before the point, so 0.0999999996
 *     (rounded to 0.10000, mag -1) is not 0.1 nor 1/10; where the
 *     rounding fails, equal values are (simplify(a - b) is 0: 1.0 and
 *     1.0000000000000000), as binary Floats of their precisions, so
 *     1.0000005 is not 1.00000050000000000. Against an exact
 *     whole number (2, \sqrt{4}) sympy's round keeps an Integer, which
 *     no Float equals since sympy 1.13, and math_verify falls back to an
 *     exact comparison: 2.0 is 2, 2.0000004, 2.0000000000000001 and
 *     4.9999999 are not 2 and 5, 0.0000004 is not 0. Two equations of
 *     one variable, "x = 0.333333" and "1/3 = x", compare their values
 *     so (math_verify solves both for x);
 *   - where neither side is a lone decimal, an expression holding one
 *     (2 \cdot 0.5, 0.1 + 0.2, 0.5x) is sympy's binary floating point:
 *     against a whole number or a fraction of two as written (3, -1/3,
 *     \frac{3}{10}: a sympy Integer or Rational) equal only when the
 *     double is the same, so 0.5^2 is 1/4 and 1.5/3 is 1/2 but 0.1 + 0.2
 *     (0.30000000000000004) is not 3/10, though it is 0.3 (rounded, a
 *     lone decimal); against anything else within a relative 1e-12 at
 *     the points, 1e-14 when both are constants, for math_verify's evalf
 *     to 15 digits and simplify: 0.5x is x/2, 0.333333x and
 *     0.3333333333x are not x/3, 0.3333333333333 \cdot 3 is not 1 + 0,
 *     and so for the sides of an inequality. Two limits: a coefficient of
 *     13 or more digits is not told from its neighbour at the points
 *     (0.3333333333333x is x/3 here, not there), where doubles' own
 *     rounding would blur equal expansions; and, deliberately, two
 *     expressions an ulp or so apart are equal, where sympy's verdict
 *     turns on the order of its Float operations: math_verify calls 0.7
 *     \cdot 3 not 21/10 + 0 but 0.7 \cdot 3000 2100 + 0, and 34(x -
 *     0.9)^2 not 34x^2 - 61.2x + 27.54 (most such expansions: 253 of 400
 *     in one sample), which no trainer would want;
 *   - two relations of two sides are equal when their sides' differences
 *     are proportional (x^2/4 + y^2/3 = 1 is x^2/16 + y^2/12 = 1/4; x < 1
 *     is -x > -1, 1 > x and 2x < 2, with a positive factor for an
 *     inequality); longer chains side by side. math_verify means this
 *     too (it solves both), but for one variable or an inequality its
 *     code reads solve()'s result in a form sympy does not return, and
 *     the exception it swallows makes x < 1 and 2x < 2, x = 3 and 2x =
 *     6, x \ne 3 and 3 \ne x different: this follows the intent (and
 *     sympy's verdict in tests/data/mathans-sympy.jsonl);
 *   - tuples element by element, with the same brackets; sets and unions
 *     as multisets (in any order); matrices entry by entry; a set of one
 *     element is that element.
 *
 * math_verify's verify(gold, pred) is not symmetric, and this is: there a
 * predicted equation is its right side against a reference that is none
 * ("2x + 1 = 3" gets 3, "3 = x" is x), and a predicted interval meets a
 * reference inequality ("x < 2" and (-\infty, 2)); here neither.
 *
 * A "1,000" is a thousand (a comma before exactly three digits after a
 * group of one to three), so the pair (1,000) is read as 1000 too.
 *
 * Limits: 4096 bytes an answer, 512 parse nodes, nesting 64 deep, eight
 * \pm: beyond them, or on text that is not one of the above (a base
 * subscript 204_5, a ratio 1:2, \begin{cases}), the answer is unparsed
 * and only the text comparison of the reward can match it. Words are
 * read, as variables: a run of three or more letters is one.
 */
#ifndef GRPO_MATHANS_H
#define GRPO_MATHANS_H

#include <stddef.h>

enum mathans_result {
	MATHANS_NO_MEMORY = -2, MATHANS_UNPARSED = -1, MATHANS_DIFFERENT = 0, MATHANS_EQUAL = 1,
};

/* Compares a[0..na) with b[0..nb): MATHANS_EQUAL, MATHANS_DIFFERENT,
 * MATHANS_UNPARSED when either is not an answer this module reads, or
 * MATHANS_NO_MEMORY, no verdict, when memory ran out. The order of a and b
 * does not matter. */
enum mathans_result mathans_compare(const char *a, size_t na, const char *b, size_t nb);

#endif
