/*
 * test_mathans: math answers compared as mathematical objects. A table of
 * pairs, each with the verdict a grader of math answers should give (most
 * are the forms models and the MATH solutions write: fractions against
 * decimals, radicals, \pm, intervals, matrices, units), every pair checked
 * both ways and every parsed answer against itself; then the limits, which
 * must end in MATHANS_UNPARSED and not in a crash or a wrong verdict.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "score/mathans.h"

#define EQ  MATHANS_EQUAL
#define NE  MATHANS_DIFFERENT
#define UNP MATHANS_UNPARSED

static const struct {
	const char *a, *b;
	enum mathans_result want;
} cases[] = {
	/* numbers */
	{ "5", "5", EQ },
	{ "5", "-5", NE },
	{ "0.5", "\\frac{1}{2}", EQ },
	{ ".5", "0.5", EQ },
	{ "1/2", "\\dfrac{1}{2}", EQ },
	{ "\\frac12", "0.5", EQ },
	{ "\\frac 1 2", "0.5", EQ },
	{ "\\tfrac{3}{4}", "0.75", EQ },
	{ "\\cfrac{1}{3}", "1/3", EQ },
	{ "0.333", "\\frac{1}{3}", NE },
	/* math_verify's float_rounding=6: a decimal number against a constant
	 * are both rounded half to even at the sixth decimal (grader.py lines
	 * 152-159, sympy_numeric_eq, in huggingface/Math-Verify) */
	{ "0.333333", "\\frac{1}{3}", EQ },
	{ "0.3333333", "\\frac{1}{3}", EQ },
	{ "0.666667", "\\frac{2}{3}", EQ },
	{ "-0.333333", "-\\frac13", EQ },
	{ "1.414214", "\\sqrt{2}", EQ },
	{ "3.141593", "\\pi", EQ },
	{ "0.3333331", "0.3333334", EQ },          /* both decimals: both rounded */
	/* but against an exact whole number sympy's round(6) keeps an Integer,
	 * which no Float equals since sympy 1.13, and simplify(a - b) decides */
	{ "2", "2.0000004", NE },
	{ "0", "0.0000004", NE },
	{ "2.0000001", "\\sqrt{4}", NE },
	{ "4.9999999", "5", NE },
	{ "2.0", "2", EQ },
	{ "5.00", "\\sqrt{25}", EQ },
	{ "2.0", "2.0000004", EQ },                /* both decimals: both rounded */
	{ "2 \\cdot 1.0", "2.0000004", EQ },       /* a decimal in the other: a Float */
	{ "0.1234565", "0.123456", EQ },           /* a tie goes to the even digit */
	{ "0.1234575", "0.123458", EQ },
	{ "0.0", "\\frac{1}{2000000}", EQ },
	{ "x = 0.333333", "\\frac13", EQ },
	{ "x = 0.333333", "x = \\frac13", EQ },   /* solved for x, then rounded */
	{ "\\frac13 = x", "x = 0.333333", EQ },
	{ "x = 0.333333", "y = \\frac13", NE },
	{ "x = 0.33", "x = \\frac13", NE },
	{ "x = 0.333333 y", "x = \\frac{y}{3}", NE },
	{ "(0.333333, 0.5)", "(\\frac13, \\frac12)", EQ },
	{ "\\{0.333333, 2\\}", "2, \\frac13", EQ },
	{ "0.(3)", "0.333333", EQ },
	{ "0.33", "\\frac{1}{3}", NE },
	{ "0.3333", "\\frac{1}{3}", NE },
	{ "0.333334", "\\frac{1}{3}", NE },
	{ "0.666666", "\\frac{2}{3}", NE },       /* cut off, not rounded */
	{ "1.414213", "\\sqrt{2}", NE },
	{ "3.14", "\\pi", NE },
	{ "0.1234565", "0.123457", NE },
	{ "2", "2.000001", NE },
	{ "1000000.5", "1000000.4999", NE },       /* the sixth decimal counts, however large */
	/* sympy's Float keeps every digit written (dps 15 at least) and round(6)
	 * rounds those, not a double's; its result keeps the input's precision
	 * when whole, mag + 6 digits otherwise, and math_verify's a.round(6) ==
	 * b.round(6) is Basic's equality, precision and all; failing it,
	 * simplify(a - b) == 0 (grader.py, sympy_numeric_eq then
	 * sympy_symbolic_eq). Each verdict is sympy 1.14's on those calls. */
	{ "0.12345650000000001", "0.123457", EQ },       /* past the tie: up */
	{ "0.1234574999999999999", "0.123457", EQ },     /* short of it: down */
	{ "0.1234567890123", "0.1234567890124", EQ },
	{ "3.14159265358979", "\\pi", EQ },
	{ "-0.0000001", "0.0", EQ },
	{ "1.0000000000000000", "1.0", EQ },             /* 17 digits and 15: simplify */
	{ "0.99999990000000000", "\\frac{9999999}{10000000}", EQ },
	{ "99.9999996", "\\frac{1000000001}{10000000}", EQ },   /* not a whole number */
	{ "0.12345650000000001", "0.123456", NE },
	{ "0.1234574999999999999", "0.123458", NE },
	{ "0.50000050000000001", "\\frac12", NE },
	{ "1234567890123.5", "1234567890123.4", NE },
	{ "12345678901234567.5", "12345678901234567.4", NE },   /* one double */
	{ "99999999999999999.5", "100000000000000000", NE },
	{ "2.0000000000000001", "2", NE },
	{ "0.99999950000000000001", "1.000000", NE },   /* 1 of 20 digits, 1 of 15 */
	{ "0.0999999996", "0.1", NE },                  /* 0.10000 (mag -1), 0.100000 */
	{ "0.0999999996", "\\frac{1}{10}", NE },
	{ "0.0999999996", "0.09999999996", EQ },
	{ "0.0000006", "0.000001", EQ },
	{ "1.0000005", "1.00000050000000000", NE },   /* one value, two binary Floats */
	{ "-1.50", "-1.5000000000000000", EQ },        /* which binary holds exactly */
	{ "-0.0000006", "-0.000001", NE },             /* round's rv > self, not for a negative */
	{ "0.333333x", "\\frac{x}{3}", NE },      /* inside an expression no rounding */
	{ "0.333333 + x", "\\frac13 + x", NE },
	{ "0.333333", "\\frac{1}{3} + x", NE },
	/* a decimal in arithmetic, no lone decimal on either side: sympy computes
	 * it in binary floating point; against an Integer or Rational as written
	 * (3, 1/3, \frac{3}{10}) only an exact match counts, against any other
	 * expression 15 digits (evalf) or simplify */
	{ "2 \\cdot 0.5", "1", EQ },
	{ "0.5 \\times 4", "2", EQ },
	{ "1.5/3", "\\frac12", EQ },
	{ "0.5^2", "\\frac{1}{4}", EQ },
	{ "\\sqrt{0.25}", "1/2", EQ },
	{ "0.1+0.2", "\\frac{1}{10}+\\frac{2}{10}", EQ },
	{ "0.5\\pi", "\\frac{\\pi}{2}", EQ },
	{ "0.5x", "\\frac{x}{2}", EQ },
	{ "0.3(x-1)", "0.3x-0.3", EQ },           /* an ulp apart in doubles, equal to simplify */
	{ "0.1+0.2", "\\frac{3}{10}", NE },       /* 0.30000000000000004 */
	{ "0.1 \\cdot 3", "3/10", NE },
	{ "2 \\cdot 0.333333", "\\frac23", NE },
	{ "2 \\cdot 0.3333333333", "\\frac23 + 0", NE },
	{ "0.3333333333333 \\cdot 3", "1 + 0", NE },   /* evalf's 15 digits see the 1e-13 */
	{ "3 \\cdot 0.1234567890123", "0.3703703670369 + 0", EQ },
	{ "3 \\cdot 0.1234567890123", "0.3703703670368 + 0", NE },
	/* deliberately not math_verify's: an ulp or so apart, its verdict turns
	 * on the order of sympy's Float operations (it calls 0.7 \cdot 3 not
	 * 21/10 + 0 but 0.7 \cdot 3000 2100 + 0, and 34(x - 0.9)^2 not its
	 * expansion); here they are equal */
	{ "0.7 \\cdot 3", "\\frac{21}{10}+0", EQ },
	{ "34(x-0.9)^2", "34x^2-61.2x+27.54", EQ },
	{ "2 \\cdot 1.414214", "2\\sqrt{2}", NE },
	{ "0.3333333333x", "\\frac{x}{3}", NE },
	{ "x > 0.3333333333", "x > \\frac13", NE },
	{ "y = 0.3333333333x", "y = \\frac{x}{3}", EQ },   /* solved for x: 3.0y, 3y */
	/* against a lone decimal the rounding: 0.3 is a Float */
	{ "0.1+0.2", "0.3", EQ },
	{ "3 \\cdot 0.1", "0.3", EQ },
	{ "0.5^2", "0.2500001", EQ },
	{ "1.414214 \\cdot 2", "2.828427", NE },   /* 2.828428 rounded */
	{ "0.5^2", "0.250001", NE },
	{ "0.3333333333333333", "\\frac13", EQ },
	{ "\\frac{1}{12}", "0.0833333333333333", EQ },
	{ "18.90", "18.9", EQ },
	{ "\\$18.90", "18.9", EQ },
	{ "1,000", "1000", EQ },
	{ "7,425,000", "7425000", EQ },
	{ "1{,}000", "1000", EQ },
	{ "1,\\!000", "1000", EQ },
	{ "14{,}916", "14916", EQ },
	{ "10{,}000.5", "10000.5", EQ },
	{ "1,22", "1.22", NE },          /* a list of 1 and 22, not a decimal comma */
	{ "2\\frac{1}{2}", "2.5", EQ },   /* a mixed number */
	{ "-2\\frac{1}{2}", "-2.5", EQ },
	{ "2\\frac{x}{3}", "\\frac{2x}{3}", EQ },   /* a product, not a mixed number */
	/* a percent is a hundredth: latex2sympy reads 28\% as Mul(28, 1/100)
	 * (PERCENT_NUMBER in its PS.g4) and math_verify compares that value,
	 * with no rule taking 28 for 28\% (grader.py, is_atomic_or_pct_atomic) */
	{ "28\\%", "0.28", EQ },
	{ "28\\%", "\\frac{7}{25}", EQ },
	{ "28%", "0.28", EQ },
	{ "28 \\%", "28\\%", EQ },
	{ "28 percent", "0.28", EQ },             /* its normaliser's \% for the word */
	{ "28\\text{percent}", "0.28", EQ },
	{ "100\\%", "1", EQ },
	{ "50\\%", "\\frac12", EQ },
	{ "3 \\cdot 28\\%", "0.84", EQ },
	{ "-28\\%", "-0.28", EQ },
	{ "12.5\\%", "\\frac18", EQ },          /* 12.5 * 0.01 in binary, exactly 0.125 */
	{ "33.3333\\%", "0.333333", EQ },        /* against a lone decimal: rounded */
	{ "28\\%", "28", NE },
	{ "28\\%", "2800\\%", NE },
	{ "33.3333\\%", "\\frac13", NE },       /* a Float, not a lone one: no rounding */
	{ "70.0\\%", "\\frac{7}{10}", NE },     /* 70.0 * 0.01 is 0.7000000000000001 */
	{ "28.5\\%", "\\frac{57}{200}", NE },
	{ "x\\%", "x", UNP },                   /* a number's percent alone */
	{ "(28)\\%", "28", UNP },
	{ "\\frac{1}{2}\\%", "0.005", UNP },
	{ "90^\\circ", "90", EQ },
	{ "90^{\\circ}", "90", EQ },
	{ "90\xc2\xb0", "90", EQ },
	{ "\xe2\x88\x92" "3", "-3", EQ },
	{ "3\\times 10^{2}", "300", EQ },
	{ "3 \\cdot 10^2", "300", EQ },
	{ "2^{10}", "1024", EQ },
	{ "x^23", "3x^2", EQ },         /* ^ takes one character */
	{ "5!", "120", EQ },
	{ "\\binom{6}{2}", "15", EQ },
	{ "\\dbinom{6}{2}", "\\frac{6!}{2!4!}", EQ },
	{ "\\pi", "3.14159", NE },
	{ "2\\pi", "\\pi\\cdot 2", EQ },
	{ "\\frac{9}{4}\\pi", "\\frac94\\pi", EQ },
	{ "\\frac{\\pi}{2}", "\\frac12\\pi", EQ },
	{ "\xcf\x80", "\\pi", EQ },
	/* radicals */
	{ "3\\sqrt{13}", "\\sqrt{117}", EQ },
	{ "\\sqrt3", "\\sqrt{3}", EQ },
	{ "\\sqrt 2+\\sqrt 5", "\\sqrt{2}+\\sqrt{5}", EQ },
	{ "\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", EQ },
	{ "\\sqrt[3]{27}", "3", EQ },
	{ "\\sqrt[3]{-8}", "-2", EQ },
	{ "2\\sqrt{2}", "2^{3/2}", EQ },
	{ "\\sqrt{2}", "1.414", NE },
	{ "\xe2\x88\x9a" "2", "\\sqrt{2}", EQ },
	/* expressions with variables */
	{ "(x+1)^2", "x^2+2x+1", EQ },
	{ "(x+1)^2", "x^2+2x", NE },
	{ "\\frac{x+2}{7}", "\\frac{x}{7}+\\frac{2}{7}", EQ },
	{ "2-2p", "-2p+2", EQ },
	{ "2-2p", "2p-2", NE },
	{ "\\frac{\\pi r}{h+r}", "\\frac{r\\pi}{r+h}", EQ },
	{ "2 \\sin b \\cos a", "2\\cos a\\sin b", EQ },
	{ "2 \\sin b \\cos a", "2\\sin a\\cos b", NE },
	{ "\\tan^2(y)+1", "\\sec^2(y)", EQ },
	{ "\\sin^2 x + \\cos^2 x", "1", EQ },
	{ "x_1+x_2", "x_2+x_1", EQ },
	{ "x_1", "x_2", NE },
	{ "a_{n+1}", "a_{n+1}", EQ },
	{ "\\alpha+\\beta", "\\beta+\\alpha", EQ },
	{ "\\alpha", "\\beta", NE },
	{ "|x|", "x", NE },               /* the negative points tell them apart */
	{ "|x|", "\\sqrt{x^2}", EQ },
	{ "\\left|x\\right|", "|x|", EQ },
	{ "\\lvert x \\rvert", "|x|", EQ },
	{ "\\log_2 8", "3", EQ },
	{ "\\log_{10} 1000", "3", EQ },
	{ "\\ln(x^2)", "2\\ln x", NE },   /* equal only where x > 0 */
	{ "\\ln(x^3)", "3\\ln(x)", EQ },
	{ "e^{2}", "e^2", EQ },
	/* e is Euler's number; e_1 a variable */
	{ "e^2", "\\exp(2)", EQ },
	{ "\\ln(e^3)", "3", EQ },
	{ "e^{\\ln 2}", "2", EQ },
	{ "\\frac{1}{e}", "e^{-1}", EQ },
	{ "e", "2.718281828459045", EQ },
	{ "2e", "e+e", EQ },
	{ "\\frac e2", "\\frac{e}{2}", EQ },
	{ "e^x", "\\exp(x)", EQ },
	{ "e^2", "7.389", NE },
	{ "e", "x", NE },
	{ "e", "3", NE },
	{ "e_1 + e_2", "e_2+e_1", EQ },
	{ "e_1", "e_2", NE },
	{ "e_1", "e", NE },
	{ "x \\cdot y", "xy", EQ },
	{ "x \\times y", "yx", EQ },
	{ "6/2", "3", EQ },
	{ "\\frac{6}{2}", "3/1", EQ },
	{ "a/b/c", "\\frac{a}{bc}", EQ },
	{ "\\sqrt{x}", "\\sqrt{-x}", NE },
	/* equations and inequalities */
	{ "x=5", "5", EQ },
	{ "5=x", "5", NE },               /* an equation, no assignment */
	{ "ab = 6", "6", EQ },            /* variables alone on the left */
	{ "\\frac{a}{b} = 2", "2", EQ },
	{ "x = y", "y", EQ },
	{ "x = y", "x", NE },
	{ "2x = 6", "3", NE },
	{ "x = 2+3 = 5", "5", EQ },
	{ "x = 5", "5 = x", EQ },
	{ "x = 5", "y = 5", NE },
	{ "a=2, b=3", "b=3, a=2", EQ },
	{ "a=2, b=3", "a=3, b=2", NE },   /* the names count */
	{ "a=2, b=3", "2, 3", EQ },
	{ "(x, y) = (1, 2)", "(1,2)", UNP },
	{ "k=\\frac{1}{3}", "1/3", EQ },
	{ "y=2x+3", "2x+3", EQ },
	{ "y=2x+3", "3+2x=y", EQ },
	{ "2x+4y-3=0", "4y = 3 - 2x", EQ },
	{ "x^2/4 + y^2/3 = 1", "x^2/16 + y^2/12 = 1/4", EQ },
	{ "x+y=1", "x-y=1", NE },
	{ "x < 1", "-x > -1", EQ },
	{ "x<1", "1>x", EQ },
	{ "x \\le 2", "x <= 2", EQ },
	{ "x \\geq 5", "5 \\leq x", EQ },
	{ "x>5", "x<5", NE },
	{ "x \\ge 5", "x \\le 5", NE },
	{ "x<1", "x>-1", NE },
	{ "x<1", "x \\le 1", NE },
	{ "x \\neq 3", "x != 3", EQ },
	{ "x<3", "2x<6", EQ },
	{ "x<3", "-2x<-6", NE },
	{ "1 < x < 3", "1<x<3", EQ },
	{ "1<x<3", "1<x\\le 3", NE },
	/* function definitions: f(x) = E is E against an answer that is no
	 * relation, as x = 5 is 5; against a relation it stays one, whose
	 * left side is the product f*x it always was, so the names count */
	{ "f(x) = 2x + 1", "2x+1", EQ },
	{ "f(x)=2x+1", "1+2x", EQ },
	{ "f(x) = 2x + 1", "2x", NE },
	{ "f(x) = x", "x", EQ },                /* f(x), not x, is the name */
	{ "g(t) = t^2 - 1", "(t-1)(t+1)", EQ },
	{ "f_1(x) = 3x", "3x", EQ },
	{ "h(x, y) = x + y", "y + x", EQ },     /* a list of arguments */
	{ "f'(x) = 2x", "2x", EQ },
	{ "f''(x) = 2", "2", EQ },
	{ "f^{-1}(x) = \\frac{x-1}{2}", "\\frac{x}{2}-\\frac{1}{2}", EQ },
	{ "f^-1(x) = 2x", "2x", EQ },
	{ "2x+1 = f(x)", "2x+1", NE },          /* the name on the right: no assignment */
	{ "P(A) = 0.5", "\\frac12", EQ },
	{ "f(x) = 2x+1, g(x) = 3x", "2x+1, 3x", EQ },
	{ "f(x) = 2x+1", "f(x) = 1+2x", EQ },
	{ "f(x) = 2x+1", "2x+1 = f(x)", EQ },
	{ "f(x)=x^2", "g(x)=x^2", NE },         /* both relations: the names count */
	{ "f(x)=x^2", "y=x^2", NE },
	{ "f^{-1}(x) = 2x", "f(x) = 2x", NE },
	{ "f'(x) = 2x", "f(x) = 2x", NE },
	{ "f(x) = 2x + 1", "fx = 2x + 1", EQ },  /* as relations, what they were */
	{ "f(x)", "fx", EQ },                   /* without '=', still a product */
	{ "f(x) < 3", "fx < 3", EQ },
	{ "f(2x) = 4x", "4x", NE },             /* an argument that is no variable */
	{ "x = a(b)", "ab", EQ },               /* x = ... first */
	{ "y = \\frac{x}{2} + 1", "\\frac{x+2}{2}", EQ },
	{ "f'(x)", "1", UNP },
	/* a Greek letter's definition is its right side, as f(x) = ... is */
	{ "\\phi(x) = x^2 + 1", "x^2+1", EQ },
	{ "\\varphi(t) = 2t - 1", "2t-1", EQ },
	{ "\\phi_1(x) = 3x", "3x", EQ },
	{ "g_1(x) = x^3", "x^3", EQ },
	{ "\\psi'(x) = 2x", "2x", EQ },
	{ "\\phi(x) = x^2 + 1", "x^2", NE },
	{ "\\phi(x) = x^2", "\\psi(x) = x^2", NE },  /* both relations: the names count */
	{ "\\phi(x) = x^2", "f(x) = x^2", NE },
	{ "\\phi(x) = x^2", "\\phi x = x^2", EQ },
	{ "\\phi(x)", "\\phi x", EQ },                /* without '=', still a product */
	{ "x = \\phi(t)", "x = \\phi t", EQ },
	{ "\\phi(2x) = 4x", "4x", NE },              /* an argument that is no variable */
	/* tuples and intervals */
	{ "(3, \\frac{\\pi}{2})", "\\left( 3, \\frac{\\pi}{2} \\right)", EQ },
	{ "(1,\\frac{9}{2})", "(1,4.5)", EQ },
	{ "(6,31,-1)", "(6, 31, -1)", EQ },
	{ "(6,31,-1)", "(31,6,-1)", NE },
	{ "[0,1)", "[0,1)", EQ },
	{ "[0,1)", "[0,1]", NE },
	{ "(0,9)", "[0,9)", NE },
	{ "(-\\infty, 3]", "(-\\infty,3]", EQ },
	{ "(-\\infty,-\\frac12)", "(-\\infty,-0.5)", EQ },
	{ "(-\\infty,-\\frac12)", "(\\infty,-0.5)", NE },
	{ "[-1, -\\frac{1}{2}) \\cup (-\\frac{1}{2}, 0) \\cup (0, 1) \\cup (1, \\infty)",
	  "[-1, -\\tfrac12) \\cup (-\\tfrac12, 0) \\cup (0, 1) \\cup (1, \\infty)", EQ },
	{ "(0,1)\\cup(2,3)", "(2,3)\\cup(0,1)", EQ },
	{ "(0,1)\\cup(2,3)", "(0,1)\\cup(2,4)", NE },
	{ "x \\in [2,5)", "[2,5)", EQ },
	{ "\\{-1\\} \\cup [0,7)", "[0,7) \\cup \\{-1\\}", EQ },
	{ "(1,2)", "\\{1,2\\}", NE },
	/* sets, lists and \pm */
	{ "-2,1", "1,-2", EQ },
	{ "\\{-2,1\\}", "-2, 1", EQ },
	{ "\\{1,2,3\\}", "\\{3,2,1\\}", EQ },
	{ "\\{1,2\\}", "\\{1,2,3\\}", NE },
	{ "\\{5\\}", "5", EQ },
	{ "1 \\pm \\sqrt{19}", "1+\\sqrt{19}, 1-\\sqrt{19}", EQ },
	{ "3 \\pm 2 \\sqrt{2}", "3+2\\sqrt2,3-2\\sqrt2", EQ },
	{ "\\{1\\pm\\sqrt{5},-2\\}", "-2, 1+\\sqrt5, 1-\\sqrt5", EQ },
	{ "1\\pm\\sqrt{5}", "1+\\sqrt{5}", NE },
	{ "\\pm 2", "2,-2", EQ },
	{ "2 \\mp 1", "1, 3", EQ },
	{ "12\\text{ and }13", "13, 12", EQ },
	{ "12\\text{ and }13", "12", NE },
	{ "\\emptyset", "\\varnothing", EQ },
	{ "\\emptyset", "\\{\\}", EQ },
	{ "\\emptyset", "0", NE },
	/* repeating decimals: \overline{R}, \bar{R}, \dot{R} after a decimal point */
	{ "0.\\overline{3}", "\\frac{1}{3}", EQ },
	{ "0.1\\overline{6}", "\\frac16", EQ },
	{ "1.\\overline{142857}", "\\frac{8}{7}", EQ },
	{ "0.\\overline{9}", "1", EQ },
	{ ".\\overline{3}", "1/3", EQ },
	{ "2.4\\overline{12}", "\\frac{398}{165}", EQ },
	{ "-0.\\overline{6}", "-\\frac23", EQ },
	{ "0.\\overline{16}", "\\frac{16}{99}", EQ },
	{ "0.\\overline3", "1/3", EQ },
	{ "0.\\bar{3}", "1/3", EQ },
	{ "0.\\bar 3", "1/3", EQ },
	{ "0.\\dot{3}", "1/3", EQ },
	{ "0.1\\dot{6}", "1/6", EQ },
	{ "0.\\dot{1}4285\\dot{7}", "1/7", EQ },   /* dots over the block's first and last digits */
	{ "0.\\dot{1}\\dot{2}", "\\frac{4}{33}", EQ },
	{ "1,000.\\overline{3}", "\\frac{3001}{3}", EQ },
	{ "\\frac{0.\\overline{3}}{2}", "\\frac16", EQ },
	{ "0.\\overline{3}, 0.\\overline{6}", "\\frac23, \\frac13", EQ },
	{ "0.\\overline{3}", "0.3", NE },
	{ "0.\\overline{3}", "0.33", NE },
	{ "0.1\\overline{6}", "0.\\overline{16}", NE },
	{ "0.\\overline{12}", "0.\\overline{21}", NE },
	{ "\\overline{3}", "\\frac13", NE },       /* no decimal point: a product, as before */
	{ "\\overline{AB}", "AB", NE },              /* a segment: a product, as before */
	{ "\\overline{AB}", "\\overline{AC}", NE },
	{ "0.\\overline{x}", "1", UNP },
	{ "0.\\overline{3}4", "1", UNP },            /* digits after the block */
	{ "0.\\overline{3}\\overline{4}", "1", UNP },
	{ "0.\\dot{1}4", "1", UNP },                 /* a \dot that no \dot closes */
	/* the block in parentheses right after a decimal's point, with the
	 * end or an operator after it; after its digits a product, as
	 * latex2sympy reads it (physics' 1.234(5), 1.234 +- 0.005, is neither) */
	{ "0.(3)", "\\frac13", EQ },
	{ "0.1(6)", "\\frac16", NE },
	{ "0.1(6)", "0.6", EQ },
	{ "1.234(5)", "6.17", EQ },
	{ "1.234(5)", "1.234\\overline{5}", NE },
	{ "1.(142857)", "\\frac87", EQ },
	{ ".(3)", "1/3", EQ },
	{ "-0.(6)", "-\\frac23", EQ },
	{ "0.(3) + 0.(6)", "1", EQ },
	{ "0.(3)\\cdot 3", "1", EQ },
	{ "0.(3), 0.(6)", "\\frac23, \\frac13", EQ },
	{ "(0.(3), 1)", "(\\frac13, 1)", EQ },
	{ "\\frac{0.(3)}{2}", "\\frac16", EQ },
	{ "x = 0.(3)", "\\frac13", EQ },
	{ "2.5(4)", "\\frac{229}{90}", NE },
	{ "0.(3)", "0.3", NE },
	{ "0.(12)", "0.(21)", NE },
	{ "2.5(4)", "10", EQ },
	{ "2.5(4)x", "10x", EQ },                  /* a letter after it: the product */
	{ "2.5(4)^2", "40", EQ },
	{ "2.5(4)(2)", "20", EQ },
	{ "2.5 (4)", "10", EQ },                   /* not right after the digits */
	{ "2.5(4+1)", "12.5", EQ },
	{ "2.5(x)", "2.5x", EQ },
	{ "2(3)", "6", EQ },                       /* no decimal point */
	{ "0.1(3)4", "1.2", EQ },
	{ "0.(3)x", "1", UNP },                    /* "0." is no number */
	{ "0.()", "1", UNP },
	{ "0.(3)(6)", "1", UNP },
	/* matrices and vectors */
	{ "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1 & 2 \\\\ 3 & 4\\end{bmatrix}", EQ },
	{ "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\left[\\begin{array}{cc}1 & 2 \\\\3 & 4\\end{array}\\right]", EQ },
	{ "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}", NE },
	{ "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2&3&4\\end{pmatrix}", NE },
	{ "\\begin{pmatrix}\\frac{1}{2}\\\\-3\\end{pmatrix}", "\\begin{pmatrix}0.5\\\\-3\\end{pmatrix}", EQ },
	{ "\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}", "\\begin{pmatrix}1&0\\\\0&1\\\\\\end{pmatrix}", EQ },
	/* text and units */
	{ "15\\mbox{ cm}^2", "15", EQ },
	{ "125\\textnormal{ miles}", "125", EQ },
	{ "18\\text{ cm}", "18", EQ },
	{ "\\text{Evelyn}", "\\text{Evelyn}", EQ },
	{ "\\text{Evelyn}", "\\text{Evenly}", NE },   /* a word, not a product of letters */
	{ "\\text{(B)}", "B", EQ },
	{ "(A)", "(B)", NE },
	{ "\\$1,000.99", "1000.99", EQ },
	{ "\\displaystyle\\frac{1}{2}", "0.5", EQ },
	{ "\\left(\\frac{1}{3}\\right)", "\\frac13", EQ },
	{ "\\frac{1}{2}.", "0.5", EQ },
	{ "$\\frac{1}{2}$", "0.5", EQ },
	/* each read path once more (mutation testing found these untested) */
	{ "100,000", "100000", EQ },        /* a first group of three */
	{ "\\text{Ann}", "\\text{nAn}", NE },   /* three letters are a word */
	{ "\\mathrm e", "e", EQ },          /* a wrapper without braces */
	{ "1\\text{ or }2", "2, 1", EQ },
	{ "1\\text{,}2", "2, 1", EQ },
	{ "\\text{2}+{3}", "5", EQ },           /* a wrapper's brace mark cleared at its close */
	{ "6\\div 2", "3", EQ },
	{ "\\vert x \\vert", "|x|", EQ },
	{ "5\\text{\\,cm}", "5", EQ },        /* a unit after a thin space */
	{ "30^\\circ+60^\\circ", "90", EQ },
	{ "30^{\\circ}+60^{\\circ}", "90", EQ },
	{ "2.5\\frac{1}{2}", "1.25", EQ },      /* a decimal is no mixed number's whole part */
	{ "\\left.5\\right.", "5", EQ },
	{ "x == 5", "5", EQ },
	{ "3\\frac12", "3.5", EQ },
	{ "x^y", "x^{y}", EQ },
	{ "\\frac ab", "a/b", EQ },
	{ "\\frac ab", "\\frac ba", NE },
	{ "\\frac\\alpha2", "\\alpha/2", EQ },
	{ "x^\\alpha", "x^{\\alpha}", EQ },
	{ "1,1,2", "1,2,2", NE },               /* multisets */
	{ "(1,2)", "3", NE },
	/* what is not read */
	{ "5\\#", "5", UNP },
	{ "5\xe2\x82\xac", "5", UNP },         /* a sign this does not know */
	{ "\\begin{pmatrix}\\end{pmatrix}", "1", UNP },
	{ "\\begin{pmatrix}1&2\\\\3\\end{pmatrix}", "1", UNP },   /* rows of two lengths */
	{ "1<2<3<4<5<6", "1", UNP },            /* five relations in a chain */
	{ "(1,2) < 3", "1", UNP },
	{ "\\begin{foo}1\\end{foo}", "1", UNP },
	{ "204_5", "204_5", UNP },
	{ "\\begin{cases}x\\end{cases}", "1", UNP },
	{ "1,2,\\dots", "1,2", UNP },
	{ "x'", "x", UNP },
	{ "", "5", UNP },
	{ "\\frac{1}{2", "0.5", UNP },
	{ "5)", "5", UNP },
	{ "[5)", "5", UNP },
	{ "(1\\pm 2, 3)", "(3, 3)", UNP },
};

static void table(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *a = cases[i].a, *b = cases[i].b;
		enum mathans_result ab = mathans_compare(a, strlen(a), b, strlen(b));
		enum mathans_result ba = mathans_compare(b, strlen(b), a, strlen(a));
		is_int(ab, cases[i].want, "%s against %s", a, b);
		is_int(ba, ab, "  and the other way");
		if (ab != UNP) {
			is_int(mathans_compare(a, strlen(a), a, strlen(a)), EQ, "  %s against itself", a);
			is_int(mathans_compare(b, strlen(b), b, strlen(b)), EQ, "  %s against itself", b);
		}
	}
}

static char *repeat(const char *s, int n, const char *tail)
{
	size_t m = strlen(s), t = strlen(tail);
	char *r = malloc(m * (size_t)n + t + 1);
	for (int i = 0; i < n; i++)
		memcpy(r + m * (size_t)i, s, m);
	memcpy(r + m * (size_t)n, tail, t + 1);
	return r;
}

static void limits(void)
{
	/* nesting: 60 deep is read, 200 deep is not */
	char *deep = repeat("(", 60, "1"), *d2 = repeat(")", 60, "");
	char *ok60 = malloc(strlen(deep) + strlen(d2) + 1);
	strcpy(ok60, deep), strcat(ok60, d2);
	is_int(mathans_compare(ok60, strlen(ok60), "1", 1), EQ, "60 parentheses deep");
	free(deep), free(d2), free(ok60);
	deep = repeat("(", 200, "1");
	d2 = repeat(")", 200, "");
	char *big = malloc(strlen(deep) + strlen(d2) + 1);
	strcpy(big, deep), strcat(big, d2);
	is_int(mathans_compare(big, strlen(big), "1", 1), UNP, "200 deep is unparsed");
	free(deep), free(d2), free(big);
	/* length */
	char *longs = repeat("1+", 1000, "1");
	is_int(mathans_compare(longs, strlen(longs), "1001", 4), UNP, "over 4096 bytes is unparsed");
	free(longs);
	char *sum = repeat("1+", 200, "1");
	is_int(mathans_compare(sum, strlen(sum), "201", 3), EQ, "200 terms (401 nodes) are read");
	free(sum);
	sum = repeat("1+", 300, "1");
	is_int(mathans_compare(sum, strlen(sum), "301", 3), UNP, "600 nodes are over the 512");
	free(sum);
	/* depth is nesting, not length: 150 negated terms side by side */
	char *negs = repeat("(-1)+", 149, "(-1)");
	is_int(mathans_compare(negs, strlen(negs), "-150", 4), EQ, "150 (-1) in a row");
	free(negs);
	/* 60 digits are read, 61 are not */
	char *d60 = repeat("1", 60, ""), *d61 = repeat("1", 61, "");
	is_int(mathans_compare(d60, 60, d60, 60), EQ, "60 digits");
	is_int(mathans_compare(d61, 61, d61, 61), UNP, "61 digits");
	free(d60), free(d61);
	/* a repeating block of 60 digits is read, one of 61 is not */
	char *r60 = repeat("3", 60, "}"), *r61 = repeat("3", 61, "}");
	char *o60 = malloc(strlen(r60) + 13), *o61 = malloc(strlen(r61) + 13);
	strcpy(o60, "0.\\overline{"), strcat(o60, r60);
	strcpy(o61, "0.\\overline{"), strcat(o61, r61);
	is_int(mathans_compare(o60, strlen(o60), "1/3", 3), EQ, "a repeating block of 60 digits");
	is_int(mathans_compare(o61, strlen(o61), o61, strlen(o61)), UNP, "a repeating block of 61 digits");
	free(o60), free(o61);
	/* and so in parentheses: 0.(333...) */
	o60 = malloc(strlen(r60) + 4), o61 = malloc(strlen(r61) + 4);
	strcpy(o60, "0.("), strcat(o60, r60), o60[strlen(o60) - 1] = ')';
	strcpy(o61, "0.("), strcat(o61, r61), o61[strlen(o61) - 1] = ')';
	is_int(mathans_compare(o60, strlen(o60), "1/3", 3), EQ, "a block of 60 digits in parentheses");
	is_int(mathans_compare(o61, strlen(o61), o61, strlen(o61)), UNP, "a block of 61 digits in parentheses");
	free(r60), free(r61), free(o60), free(o61);
	/* \pm: eight are 256 values, nine are too many */
	char *pm8 = repeat("\\pm 1", 8, ""), *pm9 = repeat("\\pm 1", 9, "");
	is_int(mathans_compare(pm8, strlen(pm8), pm8, strlen(pm8)), EQ, "eight \\pm");
	is_int(mathans_compare(pm9, strlen(pm9), pm9, strlen(pm9)), UNP, "nine \\pm");
	free(pm8), free(pm9);
	/* 256 values each, in another order: every value matched to its own */
	const char *pm = "a \\pm b \\pm c \\pm d \\pm f \\pm g \\pm h \\pm k";
	const char *mp = "a \\mp b \\mp c \\mp d \\mp f \\mp g \\mp h \\mp k";
	const char *mp_plus = "a \\mp b \\mp c \\mp d \\mp f \\mp g \\mp h + k";
	is_int(mathans_compare(pm, strlen(pm), mp, strlen(mp)), EQ, "eight \\pm and eight \\mp");
	is_int(mathans_compare(pm, strlen(pm), mp_plus, strlen(mp_plus)), NE, "seven \\mp and a +");
	/* a list of 65 */
	char *list = repeat("1,", 64, "1");
	is_int(mathans_compare(list, strlen(list), "1", 1), UNP, "65 elements");
	free(list);
	/* bytes that end inside a construct */
	static const char *const cut[] = { "\\", "\\frac", "\\frac{1}", "\\sqrt[", "x_", "x_{1", "\\text{a",
					   "\\begin{pmatrix}1", "\\left(", "2^", "\\{1,2", "|x", "\xe2\x88",
					   "0.\\overline", "0.\\overline{", "0.\\overline{3", ".\\overline{3",
					   "0.1\\overline{6", "0.\\bar", "0.\\dot{1}4285", "0.\\dot{1}4285\\dot",
					   "0.\\dot{1}4285\\dot{", "f(x", "f(x)=", "f(x) = 2x+", "f'", "f'(x",
					   "f^{-1}(x)=", "f^{-1", "h(x,", "h(x, y) =", "0.(", "0.(3", "0.1(6",
					   ".(3", "0.(3)+", "\\phi(x", "\\phi(x)=", "\\varphi_", "\\phi_1(x) =",
					   "g_1(x) =" };
	for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++)
		is_int(mathans_compare(cut[i], strlen(cut[i]), "1", 1), UNP, "cut short: %s", cut[i]);
	/* past a double's range is no value: not even equal to itself (the
	 * reward's comparison of the text matches that) */
	is_int(mathans_compare("10^{400}", 8, "10^{500}", 8), NE, "10^{400} is not 10^{500}");
	is_int(mathans_compare("10^{400}", 8, "10^{400}", 8), NE, "nor itself");
	is_int(mathans_compare("\\frac{1}{0}", 11, "\\infty", 6), NE, "1/0 is not infinity");
	is_int(mathans_compare("\\binom{-2}{2}", 13, "0", 1), NE, "a binomial of a negative has no value");
	const char *nowhere1 = "\\sqrt{-1-x^2} < 1", *nowhere2 = "\\sqrt{-2-x^2} < 1";
	is_int(mathans_compare(nowhere1, strlen(nowhere1), nowhere2, strlen(nowhere2)), NE,
	       "relations defined at no point are not equal");
	/* a NUL inside is a byte like another, not an end */
	is_int(mathans_compare("5\0" "6", 3, "5", 1), UNP, "NUL inside");
}

int main(void)
{
	table();
	limits();
	return tap_done();
}
