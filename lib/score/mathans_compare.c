/*
 * mathans_compare.c: two parsed math answers compared by value
 * (mathans.h): expressions at fixed points, relations by proportional
 * differences, collections element by element. Nothing is simplified
 * symbolically: two expressions that agree at eight points chosen
 * independently of them are taken to be one.
 */
#include <math.h>
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
 * take part. */
static int close_to(double a, double b, double tol)
{
	if (isinf(a) || isinf(b))
		return a == b;
	return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) + ABS_TOL;
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

/* An exact expression's value that is a whole number, as sympy would
 * evaluate it to an Integer: \sqrt{4}, \frac{6}{3}, 1+1. */
static int integral(const struct parse *P, int k, double v)
{
	return !with_decimal(P, k) && isfinite(v) && fabs(v - nearbyint(v)) <= REL_TOL * fmax(1, fabs(v));
}

/* math_verify's verify(..., float_rounding=6) (src/math_verify/grader.py,
 * sympy_numeric_eq): when one side is a decimal number and the other a
 * constant, both are rounded to six decimals and equal only when those
 * agree, a.round(6) == b.round(6): 0.333333 is 1/3, 0.33 and 0.333334
 * are not. Against an exact whole number sympy's round keeps an Integer,
 * which no Float equals since sympy 1.13, and math_verify falls back to
 * simplify(a - b) == 0: 2.0 is 2, 2.0000004 is not. -1 when the rule does
 * not apply. */
static int rounded_equal(const struct elem *x, const struct elem *y)
{
	int kx = x->v.node, ky = y->v.node;
	if (!(decimal(x->P, kx) && constant(y->P, ky)) && !(decimal(y->P, ky) && constant(x->P, kx)))
		return -1;
	double a = x->at[0], b = y->at[0];
	if (!isfinite(a) || !isfinite(b))
		return 0;
	if (integral(x->P, kx, a))
		return b == nearbyint(a);
	if (integral(y->P, ky, b))
		return a == nearbyint(b);
	return micro_units(a) == micro_units(b);
}

/* Two expressions, either with a decimal that rounded_equal leaves (2 \cdot
 * 0.5, 0.1 + 0.2, 0.5x), as math_verify compares them: against a literal
 * Integer or Rational sympy evaluates the decimals in binary floating point
 * and keeps only an exact match (0.5^2 is 1/4, 0.1 + 0.2 is not 3/10);
 * otherwise it evaluates the difference to 15 digits or simplifies it, so
 * that 0.5x is x/2 and 0.3333333333x is not x/3. -1 when neither has a
 * decimal. */
static int decimal_arithmetic(const struct elem *x, const struct elem *y)
{
	int kx = x->v.node, ky = y->v.node;
	if (!with_decimal(x->P, kx) && !with_decimal(y->P, ky))
		return -1;
	if ((exact_literal(x->P, kx) && constant(y->P, ky)) || (exact_literal(y->P, ky) && constant(x->P, kx)))
		return x->at[0] == y->at[0];
	return same_values(x->at, y->at, FLOAT_TOL);
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
