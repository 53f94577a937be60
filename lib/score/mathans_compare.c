/*
 * mathans_compare.c: two parsed math answers compared by value
 * (mathans.h): expressions at fixed points, relations by proportional
 * differences, collections element by element. Nothing is simplified
 * symbolically: two expressions that agree at eight points chosen
 * independently of them are taken to be one.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/mathans.h"
#include "score/mathans_impl.h"

/* The value of variable `var` at point pt: the same in both answers. */
static double var_value(uint64_t var, int pt)
{
	uint64_t z = var + (uint64_t)(pt + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	double v = 0.4 + 1.5 * ((double)(z >> 11) * 0x1p-53);
	return pt < 6 ? v : -v;
}

static double binomial(double n, double k)
{
	if (n != floor(n) || k != floor(k) || n < 0 || n > 1e6)
		return NAN;
	if (k < 0 || k > n)
		return 0;
	if (k > n - k)
		k = n - k;
	double r = 1;
	for (double i = 1; i <= k; i++)
		r = r * (n - k + i) / i;
	return round(r);
}

static double apply(enum fn fn, double x)
{
	switch (fn) {
	case F_SQRT: return sqrt(x);
	case F_ABS: return fabs(x);
	case F_SIN: return sin(x);
	case F_COS: return cos(x);
	case F_TAN: return tan(x);
	case F_SEC: return 1 / cos(x);
	case F_CSC: return 1 / sin(x);
	case F_COT: return 1 / tan(x);
	case F_ASIN: return asin(x);
	case F_ACOS: return acos(x);
	case F_ATAN: return atan(x);
	case F_SINH: return sinh(x);
	case F_COSH: return cosh(x);
	case F_TANH: return tanh(x);
	case F_LN: case F_LOG: return log(x);
	case F_EXP: return exp(x);
	}
	return NAN;
}

static double eval(const struct parse *P, int k, unsigned signs, int pt);

static double eval_op(const struct node *d, double a, double b, unsigned signs, int pt)
{
	switch (d->op) {
	case N_NUM: return d->v;
	case N_VAR: return var_value(d->var, pt);
	case N_ADD: return a + b;
	case N_SUB: return a - b;
	case N_MUL: return a * b;
	case N_DIV: return a / b;
	case N_POW: return pow(a, b);
	case N_NEG: return -a;
	case N_FN: return apply((enum fn)d->fn, a);
	case N_FACT: return a < 0 && a == floor(a) ? NAN : tgamma(a + 1);
	case N_PM: return a + (signs >> d->pm & 1 ? -1 : 1) * d->sign * b;
	case N_ROOT:   /* an odd root of a negative is real */
		if (a < 0 && b == floor(b) && fmod(b, 2) != 0)
			return -pow(-a, 1 / b);
		return pow(a, 1 / b);
	case N_BINOM: return binomial(a, b);
	case N_LOGB: return log(a) / log(b);
	}
	return NAN;
}

/* The value at point pt. One past a double's range that no \infty made
 * (10^{400}, 1/0) is no value, so that two such are not equal. */
static double eval(const struct parse *P, int k, unsigned signs, int pt)
{
	const struct node *d = &P->nodes[k];
	int leaf = d->op == N_NUM || d->op == N_VAR;
	double a = leaf ? 0 : eval(P, d->a, signs, pt);
	double b = leaf || d->b == d->a ? 0 : eval(P, d->b, signs, pt);
	double r = eval_op(d, a, b, signs, pt);
	if (isinf(r) && !leaf && !isinf(a) && !isinf(b))
		return NAN;
	return r;
}

/* a and b agree to a relative tol: REL_TOL, or FLOAT_TOL where decimals
 * take part; near 0 to an absolute ABS_TOL, or tol where that is less
 * (0.3333333333333 \cdot 3 is not 1 + 0: sympy's evalf sees the 1e-13). */
static int close_to(double a, double b, double tol)
{
	if (isinf(a) || isinf(b))
		return a == b;
	return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) + fmin(tol, ABS_TOL);
}

/* An expression's values at the points; a value is NaN where undefined. */
static void values(const struct parse *P, int k, unsigned signs, double *out)
{
	for (int pt = 0; pt < N_POINTS; pt++)
		out[pt] = eval(P, k, signs, pt);
}

static int same_values(const double *a, const double *b, double tol)
{
	int counted = 0;
	for (int pt = 0; pt < N_POINTS; pt++) {
		if (isnan(a[pt]) && isnan(b[pt]))
			continue;
		if (isnan(a[pt]) || isnan(b[pt]) || !close_to(a[pt], b[pt], tol))
			return 0;
		counted++;
	}
	return counted > 0;
}

/* A comparison's state: whether memory ran out on the way, which makes
 * its verdict no verdict. */
struct cmp {
	int nomem;
};

/* One element of a comparison: an answer's value, with the signs its \pm
 * take, and an expression's values at the points, computed once: a set
 * of 256 elements compares each with each. */
struct elem {
	const struct parse *P;
	struct val v;
	unsigned signs;
	double at[N_POINTS];
};

static struct elem element(const struct parse *P, struct val v, unsigned signs)
{
	struct elem e = { P, v, signs, { 0 } };
	if (scalar(v))
		values(P, v.node, signs, e.at);
	return e;
}

/* A number written with a decimal point, signed or not: what sympy reads
 * as a Float, to which math_verify's float_rounding applies. */
static int decimal(const struct parse *P, int k)
{
	while (P->nodes[k].op == N_NEG)
		k = P->nodes[k].a;
	return P->nodes[k].op == N_NUM && P->nodes[k].decimal;
}

/* Whether expression k has no variable: one value, the same at every point. */
static int constant(const struct parse *P, int k)
{
	const struct node *d = &P->nodes[k];
	if (d->op == N_VAR)
		return 0;
	if (d->op == N_NUM)
		return 1;
	return constant(P, d->a) && (d->b == d->a || constant(P, d->b));
}

/* Whether expression k holds a decimal anywhere: 2 \cdot 0.5, 0.5x. */
static int with_decimal(const struct parse *P, int k)
{
	const struct node *d = &P->nodes[k];
	if (d->op == N_NUM)
		return d->decimal;
	if (d->op == N_VAR)
		return 0;
	return with_decimal(P, d->a) || (d->b != d->a && with_decimal(P, d->b));
}

/* A whole number written as digits, signed or not. */
static int whole(const struct parse *P, int k)
{
	while (P->nodes[k].op == N_NEG)
		k = P->nodes[k].a;
	return P->nodes[k].op == N_NUM && P->nodes[k].integer;
}

/* A whole number, or one over another (-3, 1/3, -\frac{3}{10}): what
 * latex2sympy reads as a sympy Integer or Rational rather than as an
 * expression. */
static int exact_literal(const struct parse *P, int k)
{
	while (P->nodes[k].op == N_NEG)
		k = P->nodes[k].a;
	const struct node *d = &P->nodes[k];
	return whole(P, k) || (d->op == N_DIV && whole(P, d->a) && whole(P, d->b));
}

/*
 * A number rounded as sympy's Expr.round(6) rounds it, half to even at
 * the sixth decimal, into a Float whose precision counts in the equality
 * math_verify tests (Float == Float is Basic's, precision and all):
 * round's result keeps the number's own digits (15 at least) when it is
 * whole, and mag + 6 digits otherwise, mag the digits before the point
 * (-1 for 0.0999...). So 0.9999996 is 1.000000 but not
 * 1.0000000000000000 (17 digits), and 0.0999999996 (rounded to 0.10000,
 * five digits) is not 0.1 (0.100000).
 */
struct rounded {
	char micro[80];   /* its millionths: digits, no leading zero, "0" for zero */
	int neg;
	int digits;       /* the precision of the rounded Float */
	int dps;          /* the number's own: the digits written, 15 at least */
};

/* Adds one to the digits of r->micro[0..n): their new length. */
static size_t add_one(struct rounded *r, size_t n)
{
	size_t i = n;
	while (i > 0 && r->micro[i - 1] == '9')
		r->micro[--i] = '0';
	if (i > 0) {
		r->micro[i - 1]++;
		return n;
	}
	memmove(r->micro + 1, r->micro, n);
	r->micro[0] = '1';
	return n + 1;
}

/* round's precision for a number of magnitude mag (10^(mag-1) <= |x| <
 * 10^mag) written to dps digits, rounded to r->micro with its sign. */
static void round_digits(struct rounded *r, int mag, int dps)
{
	size_t n = strlen(r->micro);
	int whole = strcmp(r->micro, "0") == 0 || (n > 6 && strspn(r->micro + n - 6, "0") == 6);
	int allow = mag + 6 < dps ? mag + 6 : dps;
	/* 0.0000006 (allow 0) rounded up to 0.000001 gets one digit, as
	 * round's "rv > self" adds; -0.0000006 rounded down to -0.000001 none */
	r->digits = whole ? dps : allow + (allow == 0 && !r->neg);
}

/* A lone decimal rounded from its text, not its double: sympy's Float
 * keeps every digit written (15 at least, its dps), so
 * 0.12345650000000001 rounds up, 0.1234574999999999999 down, and
 * 12345678901234567.5 is not 12345678901234567.4, where a double holds
 * neither. */
static struct rounded decimal_rounded(const struct parse *P, int k)
{
	struct rounded r = { { 0 }, 0, 0, 15 };
	while (P->nodes[k].op == N_NEG)
		r.neg = !r.neg, k = P->nodes[k].a;
	const char *s = P->L.s + P->nodes[k].at;
	size_t n = 0, len = P->nodes[k].len;
	int point = 0, decimals = 0, lead = 0, sig = 0, mag = 0;
	int past = 0;   /* the digits past the sixth decimal: 0 none or below half, 1 half, 2 above */
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.')
			point = 1;
		if (!isdigit((unsigned char)s[i]))   /* the point, a thousands separator */
			continue;
		if (sig || s[i] != '0')
			sig++;
		else if (point)
			lead++;   /* zeros after the point before any other digit */
		if (!point && sig)
			mag++;
		if (!point || decimals < 6) {
			if (n < sizeof r.micro - 8)   /* the lexer reads 62 digits at most */
				r.micro[n++] = s[i];
			decimals += point;
		} else if (decimals++ == 6) {
			past = s[i] < '5' ? 0 : s[i] == '5' ? 1 : 2;
		} else if (past == 1 && s[i] != '0') {
			past = 2;
		}
	}
	for (; decimals < 6; decimals++)
		r.micro[n++] = '0';
	if (past == 2 || (past == 1 && (r.micro[n - 1] - '0') % 2))
		n = add_one(&r, n);
	size_t zeros = strspn(r.micro, "0");
	if (zeros == n)   /* -0.0000001 is 0 */
		zeros = n - 1, r.neg = 0;
	memmove(r.micro, r.micro + zeros, n - zeros + 1);
	r.dps = sig > 15 ? sig : 15;
	round_digits(&r, mag ? mag : -lead, r.dps);
	return r;
}

/* x * 10^6 rounded half to even, as sympy's Expr.round(6) does with the
 * decimal digits: a tie is one within a double's rounding of .5, so that
 * 0.1234565 (stored a hair below) is a tie. */
static double micro_units(double x)
{
	double y = x * 1e6, f = floor(y), d = y - f;
	if (fabs(d - 0.5) <= 64 * 0x1p-52 * fmax(1, fabs(y)))
		return fmod(f, 2) == 0 ? f : f + 1;
	return d < 0.5 ? f : f + 1;
}

/* A constant's double rounded: sympy evaluates an exact one to as many
 * digits as rounding needs (dps 15 at least), one with Floats to 15. */
static struct rounded double_rounded(double v, int floats)
{
	struct rounded r = { { 0 }, v < 0, 0, 15 };
	double m = micro_units(v);
	snprintf(r.micro, sizeof r.micro, "%.0f", fabs(m));
	if (m == 0)
		r.neg = 0;
	int mag = v == 0 ? 0 : (int)floor(log10(fabs(v))) + 1;
	round_digits(&r, mag, floats || mag + 6 < 15 ? 15 : mag + 6);
	return r;
}

static int same_rounded(const struct rounded *a, const struct rounded *b)
{
	return a->neg == b->neg && a->digits == b->digits && strcmp(a->micro, b->micro) == 0;
}

/* An exact expression's value that is a whole number, as sympy would
 * evaluate it to an Integer: \sqrt{4}, \frac{6}{3}, 1+1; within the few
 * ulps of doubles' rounding, so that \frac{1000000001}{10000000} is not. */
static int integral(const struct parse *P, int k, double v)
{
	return !with_decimal(P, k) && isfinite(v) && fabs(v - nearbyint(v)) <= 64 * 0x1p-52 * fmax(1, fabs(v));
}

/* A decimal's exact value, as written, is a whole number. */
static int whole_decimal(const struct parse *P, int k)
{
	while (P->nodes[k].op == N_NEG)
		k = P->nodes[k].a;
	const char *s = P->L.s + P->nodes[k].at, *end = s + P->nodes[k].len;
	const char *p = memchr(s, '.', P->nodes[k].len);
	while (p && ++p < end)
		if (*p != '0')
			return 0;
	return 1;
}

/* A decimal's exact value as text: its sign, then its digits without
 * leading zeros and the point, no trailing zero after the point. */
static void decimal_text(const struct parse *P, int k, char *out, size_t cap)
{
	int neg = 0;
	while (P->nodes[k].op == N_NEG)
		neg = !neg, k = P->nodes[k].a;
	const char *s = P->L.s + P->nodes[k].at;
	size_t n = 0, point = 0, len = P->nodes[k].len;
	out[n++] = neg ? '-' : '+';
	for (size_t i = 0; i < len && n + 1 < cap; i++) {
		if (s[i] == '.')
			point = n, out[n++] = '.';
		else if (isdigit((unsigned char)s[i]) && (n > 1 || s[i] != '0'))
			out[n++] = s[i];
	}
	while (n > point + 1 && out[n - 1] == '0')
		n--;
	if (n == 2 && point == 1)   /* 0.0 and -0.0 are 0 */
		out[0] = '+';
	out[n] = 0;
}

/* Whether v >= 0 is exactly the digits t of decimal_text, past its sign. */
static int exactly(double v, const char *t)
{
	char d[400];
	snprintf(d, sizeof d, "%.80f", v);
	size_t n = strlen(d);
	while (d[n - 1] == '0')
		n--;
	d[n] = 0;
	return strcmp(d + (d[0] == '0'), t) == 0;   /* 0.5 is .5 there */
}

/* Two decimals for which simplify(a - b) is 0: sympy subtracts their
 * binary Floats, each as precise as its digits, so one value written to
 * two precisions is 0 only where binary holds it exactly: 1.50 and
 * 1.5000000000000000 are, 1.0000005 and 1.00000050000000000 not. */
static int same_decimal(const struct parse *PA, int ka, const struct rounded *ra, const struct parse *PB, int kb,
			const struct rounded *rb)
{
	char a[96], b[96];
	decimal_text(PA, ka, a, sizeof a);
	decimal_text(PB, kb, b, sizeof b);
	if (strcmp(a, b) != 0)
		return 0;
	while (PA->nodes[ka].op == N_NEG)
		ka = PA->nodes[ka].a;
	return ra->dps == rb->dps || exactly(PA->nodes[ka].v, a + 1);
}

/* math_verify's verify(..., float_rounding=6) (src/math_verify/grader.py,
 * sympy_numeric_eq): when one side is a decimal number and the other a
 * constant, both are rounded to six decimals (struct rounded) and equal
 * when those agree, a.round(6) == b.round(6): 0.333333 is 1/3, 0.33 and
 * 0.333334 are not; else when simplify(a - b) is 0, the exact value.
 * Against an exact whole number sympy's round keeps an Integer, which no
 * Float equals, and only the exact value counts: 2.0 is 2, 2.0000004 and
 * 2.0000000000000001 are not. -1 when the rule does not apply. */
static int rounded_equal(const struct elem *x, const struct elem *y)
{
	if (!decimal(x->P, x->v.node)) {
		const struct elem *t = x;
		x = y, y = t;
	}
	int kx = x->v.node, ky = y->v.node;
	if (!decimal(x->P, kx) || !constant(y->P, ky))
		return -1;
	double a = x->at[0], b = y->at[0];
	if (!isfinite(b))
		return 0;
	struct rounded ra = decimal_rounded(x->P, kx), rb;
	if (decimal(y->P, ky)) {
		rb = decimal_rounded(y->P, ky);
		return same_rounded(&ra, &rb) || same_decimal(x->P, kx, &ra, y->P, ky, &rb);
	}
	if (integral(y->P, ky, b))
		return whole_decimal(x->P, kx) && a == nearbyint(b);
	rb = double_rounded(b, with_decimal(y->P, ky));
	return same_rounded(&ra, &rb) || a == b;
}

/* Two expressions, either with a decimal that rounded_equal leaves (2 \cdot
 * 0.5, 0.1 + 0.2, 0.5x), as math_verify compares them: against a literal
 * Integer or Rational sympy evaluates the decimals in binary floating point
 * and keeps only an exact match (0.5^2 is 1/4, 0.1 + 0.2 is not 3/10);
 * otherwise it evaluates the difference to 15 digits or simplifies it, so
 * that 0.5x is x/2 and 0.3333333333x is not x/3: within FLOAT_TOL at the
 * points, CONST_TOL for two constants (0.3333333333333 \cdot 3 is not 1 +
 * 0). Not mirrored: where the two are an ulp or so apart sympy's verdict
 * turns on the order of its Float operations (0.7 \cdot 3 is not 21/10 +
 * 0, 0.7 \cdot 3000 is 2100 + 0; 34(x - 0.9)^2 is not 34x^2 - 61.2x +
 * 27.54), and these are equal. -1 when neither has a decimal. */
static int decimal_arithmetic(const struct elem *x, const struct elem *y)
{
	int kx = x->v.node, ky = y->v.node;
	if (!with_decimal(x->P, kx) && !with_decimal(y->P, ky))
		return -1;
	if ((exact_literal(x->P, kx) && constant(y->P, ky)) || (exact_literal(y->P, ky) && constant(x->P, kx)))
		return x->at[0] == y->at[0];
	int constants = constant(x->P, kx) && constant(y->P, ky);
	return same_values(x->at, y->at, constants ? CONST_TOL : FLOAT_TOL);
}

/* Two expressions: a decimal against a constant rounded, decimals in
 * arithmetic nearly exact, others at the points. */
static int scalars_equal(const struct elem *x, const struct elem *y)
{
	int r = rounded_equal(x, y);
	if (r < 0)
		r = decimal_arithmetic(x, y);
	return r >= 0 ? r : same_values(x->at, y->at, REL_TOL);
}

static int elem_equal(struct cmp *c, const struct elem *x, const struct elem *y);

/* The i-th elements of two tuples, matrices or chains. */
static int kids_equal(struct cmp *c, const struct parse *PA, const struct obj *a, const struct parse *PB,
		      const struct obj *b)
{
	for (int i = 0; i < a->n; i++) {
		struct elem x = element(PA, PA->kids[a->first + i], 0), y = element(PB, PB->kids[b->first + i], 0);
		if (!elem_equal(c, &x, &y))
			return 0;
	}
	return 1;
}

/* lhs - rhs, turned so that the relation reads "> 0", ">= 0", "= 0" or "!= 0". */
static enum rel difference(const struct parse *P, const struct obj *o, double *f)
{
	double l[N_POINTS], r[N_POINTS];
	values(P, P->kids[o->first].node, 0, l);
	values(P, P->kids[o->first + 1].node, 0, r);
	int flip = o->ops[0] == R_LT || o->ops[0] == R_LE;
	for (int pt = 0; pt < N_POINTS; pt++)
		f[pt] = flip ? r[pt] - l[pt] : l[pt] - r[pt];
	return o->ops[0] == R_LT ? R_GT : o->ops[0] == R_LE ? R_GE : (enum rel)o->ops[0];
}

/* Whether a decimal takes part in relation o. */
static int relation_with_decimal(const struct parse *P, const struct obj *o)
{
	for (int i = 0; i < o->n; i++)
		if (with_decimal(P, P->kids[o->first + i].node))
			return 1;
	return 0;
}

/* Two relations of two sides: the same kind, with differences f and g
 * where g = c f (c > 0 for an inequality). math_verify means the same: it
 * solves two relations that are not one another turned round, but for one
 * variable or an inequality its code then reads the solution in a form
 * sympy does not return, and the exception it swallows says "different"
 * to x < 3 against 2x < 6 and x = 3 against 2x = 6. */
static int relation_equal(struct cmp *c, const struct parse *PA, const struct obj *a, const struct parse *PB,
			  const struct obj *b)
{
	if (a->n != b->n)
		return 0;
	if (a->n > 2)
		return memcmp(a->ops, b->ops, (size_t)a->n - 1) == 0 && kids_equal(c, PA, a, PB, b);
	double f[N_POINTS], g[N_POINTS];
	if (difference(PA, a, f) != difference(PB, b, g))
		return 0;
	double factor = NAN;
	int counted = 0;
	for (int pt = 0; pt < N_POINTS; pt++) {
		if (isnan(f[pt]) && isnan(g[pt]))
			continue;
		if (!isfinite(f[pt]) || !isfinite(g[pt]))
			return 0;
		if (isnan(factor) && fabs(f[pt]) > 1e-9)
			factor = g[pt] / f[pt];
		counted++;
	}
	if (!counted)
		return 0;
	if (isnan(factor))   /* f is 0 wherever defined: so must g be */
		factor = 0;
	else if (fabs(factor) < 1e-12 || ((a->ops[0] != R_EQ && a->ops[0] != R_NE) && factor < 0))
		return 0;
	/* an inequality's differences are compared as expressions, decimals
	 * and all; equations are solved, sympy making their decimals fractions */
	double tol = a->ops[0] != R_EQ && (relation_with_decimal(PA, a) || relation_with_decimal(PB, b)) ?
			     FLOAT_TOL : REL_TOL;
	for (int pt = 0; pt < N_POINTS; pt++)
		if (!isnan(f[pt]) && !close_to(g[pt], factor * f[pt], tol))
			return 0;
	return 1;
}

/* The elements of a list, each expression once per sign vector of its \pm. */
static int expand(const struct parse *P, const struct val *v, int n, struct elem *out)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		unsigned mask = scalar(v[i]) ? mathans_pm_mask(P, v[i].node) : 0;
		for (unsigned s = mask;; s = (s - 1) & mask) {   /* every subset of mask */
			if (k == MAX_ELEMS)
				return -1;
			out[k++] = element(P, v[i], s);
			if (s == 0)
				break;
		}
	}
	return k;
}

/* Equal as multisets: each of a matched to its own equal in b. */
static int multiset_equal(struct cmp *c, const struct elem *a, int na, const struct elem *b, int nb)
{
	unsigned char used[MAX_ELEMS] = { 0 };
	if (na != nb || na < 0)
		return 0;
	for (int i = 0; i < na; i++) {
		int j = 0;
		while (j < nb && (used[j] || !elem_equal(c, &a[i], &b[j])))
			j++;
		if (j == nb)
			return 0;
		used[j] = 1;
	}
	return 1;
}

/* na values of A against nb of B, each expanded (expand), as multisets. */
static int values_equal(struct cmp *c, const struct parse *A, const struct val *a, int na, const struct parse *B,
			const struct val *b, int nb)
{
	struct elem *x = malloc(2 * MAX_ELEMS * sizeof *x);
	if (!x)
		return c->nomem = 1, 0;
	struct elem *y = x + MAX_ELEMS;
	int r = multiset_equal(c, x, expand(A, a, na, x), y, expand(B, b, nb, y));
	free(x);
	return r;
}

static int list_equal(struct cmp *c, const struct parse *PA, const struct obj *a, const struct parse *PB,
		      const struct obj *b)
{
	return values_equal(c, PA, PA->kids + a->first, a->n, PB, PB->kids + b->first, b->n);
}

/* Whether expression k is made of variables alone, multiplied or
 * divided (x, ab, a/b, f(x) and f^{-1}(x) as the products they are read
 * as): latex2sympy's is_expr_of_only_symbols. */
static int symbols_only(const struct parse *P, int k)
{
	const struct node *d = &P->nodes[k];
	switch (d->op) {
	case N_VAR: return 1;
	case N_MUL: case N_DIV: return symbols_only(P, d->a) && symbols_only(P, d->b);
	case N_POW: return symbols_only(P, d->a) && P->nodes[d->b].op == N_NUM && P->nodes[d->b].v == -1;
	default: return 0;
	}
}

/* What "x = 5" and "f(x) = 5" give an answer that is no relation: the
 * right side of an equation whose left is made of variables alone, as
 * math_verify's is_assignment_relation; NONE for any other relation, so
 * that "5 = x" and "2x = 6" are not 5 and 3. */
static struct val assigned(const struct parse *P, struct val v)
{
	const struct obj *o = v.obj >= 0 ? &P->objs[v.obj] : NULL;
	if (!o || o->kind != O_REL || o->n != 2 || o->ops[0] != R_EQ)
		return NONE;
	struct val l = P->kids[o->first];
	return symbols_only(P, l.node) ? P->kids[o->first + 1] : NONE;
}

static int is_relation(const struct parse *P, struct val v)
{
	return v.obj >= 0 && P->objs[v.obj].kind == O_REL;
}

/* What "x = 5" and "5 = x" give x when solved for it: the side that is
 * not the lone variable, its name in *var; NONE for other relations. */
static struct val solved(const struct parse *P, struct val v, uint64_t *var)
{
	const struct obj *o = v.obj >= 0 ? &P->objs[v.obj] : NULL;
	if (!o || o->kind != O_REL || o->n != 2 || o->ops[0] != R_EQ)
		return NONE;
	struct val l = P->kids[o->first], r = P->kids[o->first + 1];
	if (mathans_lone_variable(P, l) == mathans_lone_variable(P, r))
		return NONE;
	struct val x = mathans_lone_variable(P, l) ? l : r;
	*var = P->nodes[x.node].var;
	return x.node == l.node ? r : l;
}

/* "x = 0.333333" against "x = 1/3" or "1/3 = x": math_verify solves both
 * for x and compares the values (sympy_solve_and_compare), so two
 * equations of one variable alone whose values fall under rounded_equal
 * compare by it; -1 for any other pair of relations. */
static int assignments_rounded(const struct elem *x, const struct elem *y)
{
	uint64_t vx = 0, vy = 0;
	struct val ax = solved(x->P, x->v, &vx), ay = solved(y->P, y->v, &vy);
	if (!scalar(ax) || !scalar(ay) || vx != vy)
		return -1;
	struct elem ex = element(x->P, ax, 0), ey = element(y->P, ay, 0);
	return rounded_equal(&ex, &ey);
}

static int elem_equal(struct cmp *c, const struct elem *x, const struct elem *y)
{
	/* "x = 5" against 5 is its value; against "y = 5" a relation, so that
	 * in "a = 2, b = 3" the names count */
	if (is_relation(x->P, x->v) != is_relation(y->P, y->v)) {
		struct val ax = assigned(x->P, x->v), ay = assigned(y->P, y->v);
		if (scalar(ax)) {
			struct elem e = element(x->P, ax, 0);
			return elem_equal(c, &e, y);
		}
		if (scalar(ay)) {
			struct elem e = element(y->P, ay, 0);
			return elem_equal(c, x, &e);
		}
	}
	if (scalar(x->v) || scalar(y->v)) {
		if (!scalar(x->v) || !scalar(y->v))
			return 0;
		return scalars_equal(x, y);
	}
	const struct obj *a = &x->P->objs[x->v.obj], *b = &y->P->objs[y->v.obj];
	if (a->kind != b->kind)
		return 0;
	int r;
	switch (a->kind) {
	case O_REL:
		r = assignments_rounded(x, y);
		return r >= 0 ? r : relation_equal(c, x->P, a, y->P, b);
	case O_SET: case O_UNION: return list_equal(c, x->P, a, y->P, b);
	case O_TUPLE: case O_MATRIX:
		return a->n == b->n && a->open == b->open && a->close == b->close && a->rows == b->rows &&
		       kids_equal(c, x->P, a, y->P, b);
	}
	return 0;
}

/* An answer's values: a set's (a bare list's) members, else the answer. */
static const struct val *top_values(const struct parse *P, int *n)
{
	const struct obj *o = P->top.obj >= 0 ? &P->objs[P->top.obj] : NULL;
	if (o && o->kind == O_SET)
		return *n = o->n, P->kids + o->first;
	return *n = 1, &P->top;
}

/* The answers: a set (a bare list too) of one element is that element,
 * and an expression with \pm is the set of its values. */
static int answers_equal(struct cmp *c, const struct parse *A, const struct parse *B)
{
	int na, nb;
	const struct val *a = top_values(A, &na), *b = top_values(B, &nb);
	return values_equal(c, A, a, na, B, b, nb);
}

enum mathans_result mathans_compare(const char *a, size_t na, const char *b, size_t nb)
{
	struct parse *p = calloc(2, sizeof *p);
	if (!p)
		return MATHANS_NO_MEMORY;
	mathans_parse(&p[0], a, na);
	mathans_parse(&p[1], b, nb);
	enum mathans_result r = MATHANS_UNPARSED;
	if (!p[0].bad && !p[1].bad) {
		struct cmp c = { 0 };
		/* both ways: the tolerances need not be symmetric */
		int same = answers_equal(&c, &p[0], &p[1]) && answers_equal(&c, &p[1], &p[0]);
		r = c.nomem ? MATHANS_NO_MEMORY : same ? MATHANS_EQUAL : MATHANS_DIFFERENT;
	}
	free(p);
	return r;
}
