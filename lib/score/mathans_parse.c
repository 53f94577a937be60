/*
 * mathans_parse.c: a math answer parsed by recursive descent into
 * expression nodes and collection objects (mathans_impl.h).
 */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "score/mathans_impl.h"

static struct val fail(struct parse *P)
{
	P->bad = 1;
	P->L.t = T_END;   /* every loop ends */
	P->L.i = P->L.n;
	return NONE;
}

static void next(struct parse *P)
{
	if (!P->bad)
		mathans_lex_next(&P->L);
}

static int is_char(const struct parse *P, char c)
{
	return P->L.t == T_CHAR && P->L.c == c;
}

static struct val node(struct parse *P, enum op op, int a, int b)
{
	if (P->bad || P->nn == MAX_NODES)
		return fail(P);
	struct node *d = &P->nodes[P->nn];
	memset(d, 0, sizeof *d);
	d->op = (uint8_t)op, d->a = a, d->b = b;
	return (struct val){ -1, P->nn++ };
}

static struct val number(struct parse *P, double v, int integer)
{
	struct val r = node(P, N_NUM, -1, -1);
	if (scalar(r))
		P->nodes[r.node].v = v, P->nodes[r.node].integer = (uint8_t)integer;
	return r;
}

static struct val binary(struct parse *P, enum op op, struct val a, struct val b)
{
	if (!scalar(a) || !scalar(b))
		return fail(P);
	return node(P, op, a.node, b.node);
}

static struct val unary_fn(struct parse *P, enum fn fn, struct val a)
{
	struct val r = binary(P, N_FN, a, a);
	if (scalar(r))
		P->nodes[r.node].fn = (uint8_t)fn;
	return r;
}

static struct val plus_minus(struct parse *P, struct val a, struct val b, int sign)
{
	if (P->npm == MAX_PM)
		return fail(P);
	struct val r = binary(P, N_PM, a, b);
	if (scalar(r))
		P->nodes[r.node].pm = (int8_t)P->npm++, P->nodes[r.node].sign = (int8_t)sign;
	return r;
}

/* Which signs (bits of the sign vector) an expression's \pm use. */
unsigned mathans_pm_mask(const struct parse *P, int k)
{
	const struct node *d = &P->nodes[k];
	switch (d->op) {
	case N_NUM: case N_VAR: return 0;
	case N_NEG: case N_FN: case N_FACT: return mathans_pm_mask(P, d->a);
	case N_PM: return 1u << d->pm | mathans_pm_mask(P, d->a) | mathans_pm_mask(P, d->b);
	default: return mathans_pm_mask(P, d->a) | mathans_pm_mask(P, d->b);
	}
}

static struct val collection(struct parse *P, enum kind kind, const struct val *items, int n)
{
	if (P->bad || P->no == MAX_OBJS || P->nk + n > MAX_KIDS)
		return fail(P);
	/* a \pm inside a tuple, relation or matrix has no one meaning here */
	for (int i = 0; kind != O_SET && kind != O_UNION && i < n; i++)
		if (scalar(items[i]) && mathans_pm_mask(P, items[i].node))
			return fail(P);
	struct obj *o = &P->objs[P->no];
	memset(o, 0, sizeof *o);
	o->kind = (uint8_t)kind, o->first = P->nk, o->n = n;
	if (n)   /* \emptyset has no items */
		memcpy(P->kids + P->nk, items, (size_t)n * sizeof *items);
	P->nk += n;
	return (struct val){ P->no++, -1 };
}

static struct val sum(struct parse *P);
static struct val power(struct parse *P);
static int items(struct parse *P, struct val *out);

/* After a token whose argument follows it directly (\frac, ^, \sqrt): a
 * {group}, or one digit or letter (\frac12, x^2), or one command (\sqrt\pi).
 * The lexer is left just after the argument, with no token read. */
static struct val raw_arg(struct parse *P)
{
	struct lex *L = &P->L;
	size_t j = mathans_skip_blank(L, L->i);
	if (j >= L->n)
		return fail(P);
	char c = L->s[j];
	if (c == '{') {
		L->i = j + 1;
		mathans_open_brace(L, 0);
		next(P);
		struct val v = sum(P);
		if (!is_char(P, '}'))
			return fail(P);
		return v;
	}
	if (isdigit((unsigned char)c)) {
		L->i = j + 1;
		return number(P, c - '0', 1);
	}
	if (c == 'e') {   /* Euler's number, as lex_letters reads it */
		L->i = j + 1;
		return number(P, EULER, 0);
	}
	if (isalpha((unsigned char)c)) {
		L->i = j + 1;
		struct val v = node(P, N_VAR, -1, -1);
		if (scalar(v))
			P->nodes[v.node].var = mathans_name_id(&L->s[j], 1);
		return v;
	}
	if (c == '\\') {
		L->i = j;
		next(P);
		if (L->t == T_PI)
			return number(P, PI, 0);
		if (L->t == T_VAR) {
			struct val v = node(P, N_VAR, -1, -1);
			if (scalar(v))
				P->nodes[v.node].var = L->var;
			return v;
		}
	}
	return fail(P);
}

/* ( [ after the bracket: a group, or a tuple or interval of two or more. */
static struct val bracketed(struct parse *P, char open)
{
	struct val v[MAX_ITEMS];
	next(P);
	int n = items(P, v);
	if (!is_char(P, ')') && !is_char(P, ']'))
		return fail(P);
	char close = P->L.c;
	next(P);
	if (n == 1 && (open == '(') == (close == ')'))
		return v[0];
	if (n == 1)
		return fail(P);
	struct val r = collection(P, O_TUPLE, v, n);
	if (r.obj >= 0)
		P->objs[r.obj].open = open, P->objs[r.obj].close = close;
	return r;
}

/* \begin{pmatrix} a & b \\ c & d \end{pmatrix}, after \begin. */
static struct val matrix(struct parse *P)
{
	struct val cell[MAX_ITEMS];
	int n = 0, rows = 0, cols = -1, in_row = 0;
	next(P);
	while (!P->bad && P->L.t != T_ENDENV) {
		if (n == MAX_ITEMS)
			return fail(P);
		cell[n++] = sum(P);
		in_row++;
		if (is_char(P, '&')) {
			next(P);
			continue;
		}
		if (P->L.t != T_ROWSEP && P->L.t != T_ENDENV)
			return fail(P);
		if (cols >= 0 && in_row != cols)
			return fail(P);
		cols = in_row, in_row = 0, rows++;
		if (P->L.t == T_ROWSEP)
			next(P);
	}
	if (P->bad || rows == 0)
		return fail(P);
	next(P);
	struct val r = collection(P, O_MATRIX, cell, n);
	if (r.obj >= 0)
		P->objs[r.obj].rows = rows, P->objs[r.obj].cols = cols;
	return r;
}

/* A function's argument: (group), else what binds as a power (\sin 2 is sin(2)). */
static struct val function(struct parse *P)
{
	struct lex *L = &P->L;
	enum fn fn = (enum fn)L->sub;
	struct val exponent = NONE, base = NONE;
	size_t j = mathans_skip_blank(L, L->i);
	if (fn == F_LOG && j < L->n && L->s[j] == '_') {
		L->i = j + 1;
		base = raw_arg(P);
		j = mathans_skip_blank(L, L->i);
	}
	if (j < L->n && L->s[j] == '^') {
		L->i = j + 1;
		exponent = raw_arg(P);
	}
	next(P);
	struct val x = power(P);
	struct val r = base.node >= 0 ? binary(P, N_LOGB, x, base) : unary_fn(P, fn, x);
	return exponent.node >= 0 ? binary(P, N_POW, r, exponent) : r;
}

/* 28\% is 28 * 1/100, latex2sympy's Mul(28, 1/100): a number's percent
 * and nothing else's (its grammar has no (28)\% nor x\%, which are not
 * read). The hundredth, a sympy Rational, is no decimal, so 28\% is
 * 7/25 against 0.28 and \frac{7}{25} alike and not 28; 12.5\% is 12.5 *
 * 0.01 in binary floating point, as sympy's Float times a Rational. */
static struct val percent(struct parse *P, struct val v)
{
	next(P);
	return binary(P, N_MUL, v, number(P, 0.01, 0));
}

static struct val primary(struct parse *P)
{
	struct lex *L = &P->L;
	struct val v, w;
	if (++P->depth > MAX_DEPTH)
		return fail(P);
	switch (L->t) {
	case T_NUM:
		v = number(P, L->v, L->integer);
		if (P->bad)
			return v;
		P->nodes[v.node].decimal = (uint8_t)L->decimal;
		P->nodes[v.node].at = (uint16_t)L->start;
		P->nodes[v.node].len = (uint16_t)(L->i - L->start);
		next(P);
		if (L->t == T_PCT) {
			v = percent(P, v);
			break;
		}
		/* 3\frac{1}{2} is a mixed number when both parts are digits alone */
		if (L->t == T_FRAC && P->nodes[v.node].integer) {
			w = primary(P);
			if (P->bad)
				return w;
			const struct node *f = &P->nodes[w.node];
			int mixed = f->op == N_DIV && P->nodes[f->a].op == N_NUM && P->nodes[f->a].integer &&
				    P->nodes[f->b].op == N_NUM && P->nodes[f->b].integer;
			v = binary(P, mixed ? N_ADD : N_MUL, v, w);
		}
		break;
	case T_VAR:
		v = node(P, N_VAR, -1, -1);
		if (scalar(v))
			P->nodes[v.node].var = L->var;
		next(P);
		break;
	case T_PI: v = number(P, PI, 0), next(P); break;
	case T_E: v = number(P, EULER, 0), next(P); break;
	case T_INF:   /* latex2sympy's \infty\% is \infty */
		v = number(P, INFINITY, 0), next(P);
		if (L->t == T_PCT)
			next(P);
		break;
	case T_FRAC:
	case T_BINOM: {   /* two arguments */
		enum op op = L->t == T_FRAC ? N_DIV : N_BINOM;
		v = raw_arg(P);
		w = raw_arg(P);
		next(P);
		v = binary(P, op, v, w);
		break;
	}
	case T_SQRT: {
		size_t j = mathans_skip_blank(L, L->i);
		w = NONE;
		if (j < L->n && L->s[j] == '[') {
			L->i = j + 1;
			next(P);
			w = sum(P);
			if (!is_char(P, ']'))
				return fail(P);
		}
		v = raw_arg(P);
		next(P);
		v = w.node >= 0 ? binary(P, N_ROOT, v, w) : unary_fn(P, F_SQRT, v);
		break;
	}
	case T_FUNC: v = function(P); break;
	case T_LV:
		next(P);
		v = sum(P);
		if (L->t != T_RV)
			return fail(P);
		next(P);
		v = unary_fn(P, F_ABS, v);
		break;
	case T_LSET: {
		struct val e[MAX_ITEMS];
		int n = 0;
		next(P);
		if (L->t != T_RSET)
			n = items(P, e);
		if (L->t != T_RSET)
			return fail(P);
		next(P);
		v = collection(P, O_SET, e, n);
		break;
	}
	case T_EMPTY: next(P), v = collection(P, O_SET, NULL, 0); break;
	case T_BEGIN: v = matrix(P); break;
	case T_CHAR:
		if (L->c == '(' || L->c == '[') {
			v = bracketed(P, L->c);
		} else if (L->c == '{') {
			struct val e[MAX_ITEMS];
			next(P);
			int n = items(P, e);
			if (!is_char(P, '}'))
				return fail(P);
			next(P);
			v = n == 1 ? e[0] : collection(P, O_SET, e, n);
		} else if (L->c == '|') {
			next(P);
			v = sum(P);
			if (!is_char(P, '|'))
				return fail(P);
			next(P);
			v = unary_fn(P, F_ABS, v);
		} else {
			return fail(P);
		}
		break;
	default:
		return fail(P);
	}
	while (!P->bad && is_char(P, '!')) {
		next(P);
		v = binary(P, N_FACT, v, v);
	}
	P->depth--;
	return v;
}

static struct val power(struct parse *P)
{
	struct val v = primary(P);
	if (!P->bad && is_char(P, '^')) {
		struct val e = raw_arg(P);
		next(P);
		v = binary(P, N_POW, v, e);
	}
	return v;
}

static struct val factor(struct parse *P)
{
	if (is_char(P, '-')) {
		if (++P->depth > MAX_DEPTH)
			return fail(P);
		next(P);
		struct val v = factor(P);
		P->depth--;
		return binary(P, N_NEG, v, v);
	}
	if (is_char(P, '+'))
		next(P);
	return power(P);
}

/* Tokens that start a factor written right after another: 2x, x(y+1). */
static int starts_product(const struct parse *P)
{
	switch (P->L.t) {
	case T_NUM: case T_VAR: case T_PI: case T_E: case T_INF: case T_FRAC: case T_SQRT: case T_BINOM: case T_FUNC:
	case T_LV:
		return 1;
	case T_CHAR: return P->L.c == '(' || P->L.c == '{' || P->L.c == '[';
	default: return 0;
	}
}

static struct val term(struct parse *P)
{
	struct val v = factor(P);
	while (!P->bad) {
		if (is_char(P, '*') || is_char(P, '/')) {
			enum op op = P->L.c == '*' ? N_MUL : N_DIV;
			next(P);
			v = binary(P, op, v, factor(P));
		} else if (starts_product(P)) {
			v = binary(P, N_MUL, v, power(P));
		} else {
			break;
		}
	}
	return v;
}

static struct val sum(struct parse *P)
{
	struct val v;
	if (P->L.t == T_PM || P->L.t == T_MP) {   /* a leading \pm: 0 \pm ... */
		int sign = P->L.t == T_PM ? 1 : -1;
		next(P);
		v = plus_minus(P, number(P, 0, 1), term(P), sign);
	} else {
		v = term(P);
	}
	while (!P->bad) {
		if (is_char(P, '+') || is_char(P, '-')) {
			enum op op = P->L.c == '+' ? N_ADD : N_SUB;
			next(P);
			v = binary(P, op, v, term(P));
		} else if (P->L.t == T_PM || P->L.t == T_MP) {
			int sign = P->L.t == T_PM ? 1 : -1;
			next(P);
			v = plus_minus(P, v, term(P), sign);
		} else {
			break;
		}
	}
	return v;
}

int mathans_lone_variable(const struct parse *P, struct val v)
{
	return scalar(v) && P->nodes[v.node].op == N_VAR;
}

static int is_tok_char(const struct lex *L, char c)
{
	return L->t == T_CHAR && L->c == c;
}

#define MAX_ARGS 8

/* The f(x) of a definition "f(x) = 2x + 1" at the current token: one
 * letter, with a subscript, primes (f'(x)) or ^{-1} (the inverse), applied
 * to variables (h(x, y)), followed by '='. Its value is the product f*x,
 * the names counting (f'(x) is not f(x)); NONE, with nothing read, when it
 * is none. */
static struct val head(struct parse *P)
{
	struct lex c = P->L;
	uint64_t args[MAX_ARGS];
	int n = 0, inverse = 0;
	/* one letter, or a command read as a variable (\phi, \varphi): not a word */
	if (c.t != T_VAR || !(c.s[c.start] == '\\' || (isalpha((unsigned char)c.s[c.start]) &&
					 !(c.start + 1 < c.n && isalpha((unsigned char)c.s[c.start + 1])))))
		return NONE;
	uint64_t name = c.var;
	while (c.i < c.n && c.s[c.i] == '\'') {   /* f' is another name than f */
		name = mathans_name_more(name, "'", 1);
		c.i++;
	}
	if (c.i + 5 <= c.n && memcmp(c.s + c.i, "^{-1}", 5) == 0)
		c.i += 5, inverse = 1;
	else if (c.i + 3 <= c.n && memcmp(c.s + c.i, "^-1", 3) == 0)
		c.i += 3, inverse = 1;
	mathans_lex_next(&c);
	if (!is_tok_char(&c, '('))
		return NONE;
	do {
		mathans_lex_next(&c);
		if (c.t != T_VAR || n == MAX_ARGS)
			return NONE;
		args[n++] = c.var;
		mathans_lex_next(&c);
	} while (is_tok_char(&c, ','));
	if (!is_tok_char(&c, ')'))
		return NONE;
	mathans_lex_next(&c);
	if (c.t != T_REL || c.sub != R_EQ)
		return NONE;
	P->L = c;
	struct val v = node(P, N_VAR, -1, -1);
	if (scalar(v))
		P->nodes[v.node].var = name;
	if (inverse)
		v = binary(P, N_POW, v, number(P, -1, 1));
	for (int i = 0; i < n; i++) {
		struct val x = node(P, N_VAR, -1, -1);
		if (scalar(x))
			P->nodes[x.node].var = args[i];
		v = binary(P, N_MUL, v, x);
	}
	return v;
}

/* a = b < c ...: a chain of '=' is its last side ("x = 2 + 3 = 5" is 5). */
static struct val relation(struct parse *P)
{
	struct val side[5];
	uint8_t ops[4];
	int k = 0;
	struct val h = head(P);
	side[0] = scalar(h) ? h : sum(P);
	if (P->L.t == T_IN) {   /* x \in [0, 1) */
		if (!mathans_lone_variable(P, side[0]))
			return fail(P);
		next(P);
		return relation(P);
	}
	while (!P->bad && P->L.t == T_REL) {
		if (k == 4)
			return fail(P);
		ops[k++] = (uint8_t)P->L.sub;
		next(P);
		side[k] = sum(P);
	}
	if (k == 0 || P->bad)
		return side[0];
	int all_eq = 1;
	for (int i = 0; i < k; i++)
		all_eq &= ops[i] == R_EQ;
	if (all_eq && k >= 2)
		return side[k];
	for (int i = 0; i <= k; i++)
		if (!scalar(side[i]))
			return fail(P);
	struct val r = collection(P, O_REL, side, k + 1);
	if (r.obj >= 0)
		memcpy(P->objs[r.obj].ops, ops, (size_t)k);
	return r;
}

/* [a, b) \cup (c, d] \cup \{e\} */
static struct val union_of(struct parse *P)
{
	struct val part[MAX_ITEMS];
	int n = 0;
	part[n++] = relation(P);
	while (!P->bad && P->L.t == T_CUP) {
		if (n == MAX_ITEMS)
			return fail(P);
		next(P);
		part[n++] = relation(P);
	}
	if (n == 1)
		return part[0];
	for (int i = 0; i < n; i++)
		if (scalar(part[i]))
			return fail(P);
	return collection(P, O_UNION, part, n);
}

/* Elements separated by ',' or \text{ and }: how many, into out[MAX_ITEMS]. */
static int items(struct parse *P, struct val *out)
{
	int n = 0;
	do {
		if (n > 0)
			next(P);
		if (n == MAX_ITEMS) {
			fail(P);
			return n;
		}
		out[n++] = union_of(P);
	} while (!P->bad && (is_char(P, ',') || P->L.t == T_SEP));
	return n;
}

void mathans_parse(struct parse *P, const char *s, size_t n)
{
	while (n && (isspace((unsigned char)s[n - 1]) || s[n - 1] == '.' || s[n - 1] == '$'))
		n--;
	P->L.s = s, P->L.n = n;
	if (n > MAX_BYTES) {
		fail(P);
		return;
	}
	struct val v[MAX_ITEMS];
	next(P);
	int k = items(P, v);
	if (P->L.t != T_END || P->L.depth)
		fail(P);
	if (P->bad)
		return;
	P->top = k == 1 ? v[0] : collection(P, O_SET, v, k);
}
