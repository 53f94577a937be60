/*
 * mathans.c: math answers parsed and compared by value (mathans.h).
 *
 * A lexer that drops what does not change the value, a recursive-descent
 * parser into a small array of expression nodes and collection objects,
 * and a comparison that evaluates expressions at fixed points. Nothing is
 * simplified symbolically: two expressions that agree at eight points
 * chosen independently of them are taken to be one.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "score/mathans.h"

#define MAX_BYTES 4096
#define MAX_NODES 512
#define MAX_OBJS  128
#define MAX_KIDS  512
#define MAX_ITEMS 64      /* elements of one list */
#define MAX_ELEMS 256     /* elements of a set once each \pm is expanded */
#define MAX_DEPTH 100     /* brackets, commands and signs within each other */
#define MAX_PM    8
#define N_POINTS  8
#define REL_TOL   1e-8
#define ABS_TOL   1e-12   /* rounding left by sin(pi) and the like */
#define PI        3.14159265358979323846

/* ---- lexer ---- */

enum tok {
	T_END, T_BAD, T_NUM, T_VAR, T_PI, T_INF, T_CHAR, T_FRAC, T_SQRT, T_BINOM, T_FUNC, T_PM, T_MP,
	T_CUP, T_LSET, T_RSET, T_REL, T_IN, T_SEP, T_LV, T_RV, T_EMPTY, T_BEGIN, T_ENDENV, T_ROWSEP,
};
enum rel { R_EQ, R_NE, R_LT, R_LE, R_GT, R_GE };
enum fn {
	F_SQRT, F_ABS, F_SIN, F_COS, F_TAN, F_SEC, F_CSC, F_COT, F_ASIN, F_ACOS, F_ATAN,
	F_SINH, F_COSH, F_TANH, F_LN, F_LOG, F_EXP,
};

struct lex {
	const char *s;
	size_t n, i;
	unsigned depth;   /* braces open */
	uint64_t wrap;    /* which of the first 64 opened a \text{...}: their '}' is dropped */
	enum tok t;       /* the current token, and what it carries: */
	char c;           /* T_CHAR */
	int sub;          /* T_REL: enum rel; T_FUNC: enum fn */
	int integer;      /* T_NUM: digits only */
	double v;         /* T_NUM */
	uint64_t var;     /* T_VAR */
};

enum cmd_kind { K_TOK, K_CHAR, K_SKIP, K_SKIPDOT, K_WRAP, K_BEGIN, K_END, K_BAD };

static const struct cmd {
	const char *name;
	uint8_t kind, t;
	int8_t sub;
} cmds[] = {
	{ "frac", K_TOK, T_FRAC, 0 },       { "dfrac", K_TOK, T_FRAC, 0 },     { "tfrac", K_TOK, T_FRAC, 0 },
	{ "cfrac", K_TOK, T_FRAC, 0 },      { "sqrt", K_TOK, T_SQRT, 0 },      { "binom", K_TOK, T_BINOM, 0 },
	{ "dbinom", K_TOK, T_BINOM, 0 },    { "tbinom", K_TOK, T_BINOM, 0 },   { "pi", K_TOK, T_PI, 0 },
	{ "infty", K_TOK, T_INF, 0 },       { "pm", K_TOK, T_PM, 0 },          { "mp", K_TOK, T_MP, 0 },
	{ "cup", K_TOK, T_CUP, 0 },         { "in", K_TOK, T_IN, 0 },          { "lvert", K_TOK, T_LV, 0 },
	{ "rvert", K_TOK, T_RV, 0 },        { "emptyset", K_TOK, T_EMPTY, 0 }, { "varnothing", K_TOK, T_EMPTY, 0 },
	{ "le", K_TOK, T_REL, R_LE },       { "leq", K_TOK, T_REL, R_LE },     { "leqslant", K_TOK, T_REL, R_LE },
	{ "ge", K_TOK, T_REL, R_GE },       { "geq", K_TOK, T_REL, R_GE },     { "geqslant", K_TOK, T_REL, R_GE },
	{ "ne", K_TOK, T_REL, R_NE },       { "neq", K_TOK, T_REL, R_NE },     { "lt", K_TOK, T_REL, R_LT },
	{ "gt", K_TOK, T_REL, R_GT },       { "approx", K_TOK, T_REL, R_EQ },  { "sin", K_TOK, T_FUNC, F_SIN },
	{ "cos", K_TOK, T_FUNC, F_COS },    { "tan", K_TOK, T_FUNC, F_TAN },   { "sec", K_TOK, T_FUNC, F_SEC },
	{ "csc", K_TOK, T_FUNC, F_CSC },    { "cot", K_TOK, T_FUNC, F_COT },   { "arcsin", K_TOK, T_FUNC, F_ASIN },
	{ "arccos", K_TOK, T_FUNC, F_ACOS }, { "arctan", K_TOK, T_FUNC, F_ATAN }, { "sinh", K_TOK, T_FUNC, F_SINH },
	{ "cosh", K_TOK, T_FUNC, F_COSH },  { "tanh", K_TOK, T_FUNC, F_TANH }, { "ln", K_TOK, T_FUNC, F_LN },
	{ "log", K_TOK, T_FUNC, F_LOG },    { "exp", K_TOK, T_FUNC, F_EXP },   { "cdot", K_CHAR, '*', 0 },
	{ "times", K_CHAR, '*', 0 },        { "ast", K_CHAR, '*', 0 },         { "div", K_CHAR, '/', 0 },
	{ "vert", K_CHAR, '|', 0 },         { "begin", K_BEGIN, 0, 0 },        { "end", K_END, 0, 0 },
	{ "text", K_WRAP, 0, 0 },           { "textbf", K_WRAP, 0, 0 },        { "textit", K_WRAP, 0, 0 },
	{ "textrm", K_WRAP, 0, 0 },         { "textsf", K_WRAP, 0, 0 },        { "texttt", K_WRAP, 0, 0 },
	{ "textnormal", K_WRAP, 0, 0 },     { "mbox", K_WRAP, 0, 0 },          { "hbox", K_WRAP, 0, 0 },
	{ "mathrm", K_WRAP, 0, 0 },         { "mathbf", K_WRAP, 0, 0 },        { "mathit", K_WRAP, 0, 0 },
	{ "mathsf", K_WRAP, 0, 0 },         { "operatorname", K_WRAP, 0, 0 },  { "boldsymbol", K_WRAP, 0, 0 },
	{ "bm", K_WRAP, 0, 0 },             { "left", K_SKIPDOT, 0, 0 },       { "right", K_SKIPDOT, 0, 0 },
	{ "big", K_SKIP, 0, 0 },            { "Big", K_SKIP, 0, 0 },           { "bigg", K_SKIP, 0, 0 },
	{ "Bigg", K_SKIP, 0, 0 },           { "bigl", K_SKIP, 0, 0 },          { "bigr", K_SKIP, 0, 0 },
	{ "Bigl", K_SKIP, 0, 0 },           { "Bigr", K_SKIP, 0, 0 },          { "biggl", K_SKIP, 0, 0 },
	{ "biggr", K_SKIP, 0, 0 },          { "quad", K_SKIP, 0, 0 },          { "qquad", K_SKIP, 0, 0 },
	{ "displaystyle", K_SKIP, 0, 0 },   { "textstyle", K_SKIP, 0, 0 },     { "circ", K_SKIP, 0, 0 },
	{ "degree", K_SKIP, 0, 0 },         { "dots", K_BAD, 0, 0 },           { "cdots", K_BAD, 0, 0 },
	{ "ldots", K_BAD, 0, 0 },           { "vdots", K_BAD, 0, 0 },
};

/* The matrix environments; "array" has a column spec to skip. */
static const char *const matrix_envs[] = { "pmatrix", "bmatrix", "Bmatrix", "matrix", "smallmatrix", "array" };

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int is_digit(const struct lex *L, size_t j)
{
	return j < L->n && isdigit((unsigned char)L->s[j]);
}

static int at(const struct lex *L, size_t j, const char *pat)
{
	size_t m = strlen(pat);
	return j + m <= L->n && memcmp(L->s + j, pat, m) == 0;
}

static size_t skip_blank(const struct lex *L, size_t j)
{
	while (j < L->n && isspace((unsigned char)L->s[j]))
		j++;
	return j;
}

/* The index of the '}' closing the '{' at j, or 0. */
static size_t matching_brace(const struct lex *L, size_t j)
{
	unsigned d = 0;
	for (; j < L->n; j++) {
		if (L->s[j] == '\\') {
			j++;
		} else if (L->s[j] == '{') {
			d++;
		} else if (L->s[j] == '}' && --d == 0) {
			return j;
		}
	}
	return 0;
}

static void open_brace(struct lex *L, int wrap)
{
	if (L->depth < 64)
		L->wrap = wrap ? L->wrap | (uint64_t)1 << L->depth : L->wrap & ~((uint64_t)1 << L->depth);
	L->depth++;
}

/* The token found: 1, for the lexers' "return set(...)". */
static int set(struct lex *L, enum tok t)
{
	L->t = t;
	return 1;
}

static int set_char(struct lex *L, char c)
{
	L->t = T_CHAR, L->c = c;
	return 1;
}

/* A thousands separator before three digits at j: its length, or 0. */
static size_t thousands_at(const struct lex *L, size_t j)
{
	static const char *const seps[] = { "{,}", ",\\!", "\\,", "," };
	for (size_t k = 0; k < sizeof seps / sizeof seps[0]; k++) {
		size_t m = strlen(seps[k]);
		if (at(L, j, seps[k]) && is_digit(L, j + m) && is_digit(L, j + m + 1) && is_digit(L, j + m + 2) &&
		    !is_digit(L, j + m + 3))
			return m;
	}
	return 0;
}

static int lex_number(struct lex *L)
{
	char buf[72];
	size_t k = 0, j = L->i;
	while (is_digit(L, j) && k < 60)
		buf[k++] = L->s[j++];
	if (k <= 3) {
		for (size_t m; (m = thousands_at(L, j)) && k < 60; j += m + 3) {
			memcpy(buf + k, L->s + j + m, 3);
			k += 3;
		}
	}
	L->integer = 1;
	if (j < L->n && L->s[j] == '.' && is_digit(L, j + 1)) {
		L->integer = 0;
		buf[k++] = L->s[j++];
		while (is_digit(L, j) && k < 70)
			buf[k++] = L->s[j++];
	}
	buf[k] = 0;
	/* more digits than read, or a base's subscript (204_5): not a value */
	if (is_digit(L, j) || (j < L->n && L->s[j] == '_'))
		return set(L, T_BAD);
	L->v = strtod(buf, NULL);
	L->i = j;
	return set(L, T_NUM);
}

/* x_1, x_{n+1}, \alpha_2: the subscript's text joins the variable's name. */
static int subscript(struct lex *L)
{
	size_t j = L->i;
	if (j >= L->n || L->s[j] != '_')
		return 1;
	j++;
	size_t from = j, to;
	if (j < L->n && L->s[j] == '{') {
		to = matching_brace(L, j);
		if (!to)
			return set(L, T_BAD);
		to++;
	} else if (j < L->n && isalnum((unsigned char)L->s[j])) {
		to = j + 1;
	} else {
		return set(L, T_BAD);
	}
	L->var = fnv(fnv(L->var, "_", 1), L->s + from, to - from);
	L->i = to;
	return 1;
}

/* One letter is a variable; a run of three or more is one word (a name,
 * "\text{Evelyn}"), not a product of letters that could be reordered. */
static int lex_letters(struct lex *L)
{
	size_t j = L->i;
	while (j < L->n && isalpha((unsigned char)L->s[j]))
		j++;
	size_t len = j - L->i >= 3 ? j - L->i : 1;
	L->var = fnv(0xcbf29ce484222325ull, L->s + L->i, len);
	L->i += len;
	set(L, T_VAR);
	return subscript(L);
}

/* A \text{...}'s content at '{' j: a unit ("\text{ cm}") ends the answer,
 * " and " and " or " separate a list, anything else is read inside. 0 to
 * go on lexing, 1 with a token set. */
static int wrapper(struct lex *L, size_t j)
{
	if (j >= L->n || L->s[j] != '{')
		return 0;
	size_t close = matching_brace(L, j);
	if (!close)
		return set(L, T_BAD);
	const char *c = L->s + j + 1, *w = c;
	size_t len = close - j - 1, wn = len;
	while (wn && isspace((unsigned char)*w))
		w++, wn--;
	while (wn && isspace((unsigned char)w[wn - 1]))
		wn--;
	if ((wn == 3 && memcmp(w, "and", 3) == 0) || (wn == 2 && memcmp(w, "or", 2) == 0) ||
	    (wn == 1 && w[0] == ',')) {
		L->i = close + 1;
		return set(L, T_SEP);
	}
	if (len && (isspace((unsigned char)c[0]) || (len > 1 && c[0] == '\\' && strchr(" ,;:", c[1])))) {
		L->i = L->n;
		return set(L, T_END);
	}
	L->i = j + 1;
	open_brace(L, 1);
	return 0;
}

/* \begin{pmatrix} or \end{pmatrix}: 1 when a matrix environment. */
static int environment(struct lex *L)
{
	size_t j = skip_blank(L, L->i);
	if (j >= L->n || L->s[j] != '{')
		return 0;
	size_t close = matching_brace(L, j);
	for (size_t k = 0; close && k < sizeof matrix_envs / sizeof matrix_envs[0]; k++) {
		size_t m = strlen(matrix_envs[k]);
		if (close - j - 1 != m || memcmp(L->s + j + 1, matrix_envs[k], m) != 0)
			continue;
		L->i = close + 1;
		if (strcmp(matrix_envs[k], "array") == 0 && at(L, skip_blank(L, L->i), "{")) {
			size_t spec = matching_brace(L, skip_blank(L, L->i));
			if (!spec)
				return 0;
			L->i = spec + 1;
		}
		return 1;
	}
	return 0;
}

/* The command after a backslash: 0 to go on lexing (spacing), 1 with a token set. */
static int lex_command(struct lex *L)
{
	size_t j = ++L->i;
	if (j >= L->n)
		return set(L, T_BAD);
	if (!isalpha((unsigned char)L->s[j])) {
		L->i = j + 1;
		switch (L->s[j]) {
		case '{': return set(L, T_LSET);
		case '}': return set(L, T_RSET);
		case '\\': return set(L, T_ROWSEP);
		case '|': return set_char(L, '|');
		case ',': case ';': case ':': case '!': case ' ': case '>': case '%': case '$': return 0;
		default: return set(L, T_BAD);
		}
	}
	while (j < L->n && isalpha((unsigned char)L->s[j]))
		j++;
	const char *name = L->s + L->i;
	size_t len = j - L->i;
	L->i = j;
	for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
		const struct cmd *c = &cmds[k];
		if (strlen(c->name) != len || memcmp(c->name, name, len) != 0)
			continue;
		switch (c->kind) {
		case K_TOK: L->sub = c->sub; return set(L, (enum tok)c->t);
		case K_CHAR: return set_char(L, (char)c->t);
		case K_SKIP: return 0;
		case K_SKIPDOT:
			j = skip_blank(L, L->i);
			if (j < L->n && L->s[j] == '.')
				L->i = j + 1;
			return 0;
		case K_WRAP: return wrapper(L, skip_blank(L, L->i));
		case K_BEGIN: return set(L, environment(L) ? T_BEGIN : T_BAD);
		case K_END: return set(L, environment(L) ? T_ENDENV : T_BAD);
		default: return set(L, T_BAD);
		}
	}
	/* \alpha, \theta, ...: a variable of that name */
	L->var = fnv(0x84222325cbf29ce4ull, name, len);
	set(L, T_VAR);
	return subscript(L);
}

/* The few non-ASCII signs models write. 1 with a token set, 0 to skip. */
static int lex_utf8(struct lex *L)
{
	static const struct {
		const char *s;
		uint8_t t;
		char c;
		int8_t sub;
	} signs[] = {
		{ "\xe2\x88\x92", T_CHAR, '-', 0 },  { "\xc3\x97", T_CHAR, '*', 0 },     { "\xc2\xb7", T_CHAR, '*', 0 },
		{ "\xc3\xb7", T_CHAR, '/', 0 },      { "\xcf\x80", T_PI, 0, 0 },         { "\xe2\x88\x9e", T_INF, 0, 0 },
		{ "\xe2\x89\xa4", T_REL, 0, R_LE },  { "\xe2\x89\xa5", T_REL, 0, R_GE }, { "\xe2\x89\xa0", T_REL, 0, R_NE },
		{ "\xe2\x88\x9a", T_SQRT, 0, 0 },    { "\xc2\xb1", T_PM, 0, 0 },         { "\xc2\xb0", T_END, 0, 0 },
	};
	for (size_t k = 0; k < sizeof signs / sizeof signs[0]; k++) {
		if (!at(L, L->i, signs[k].s))
			continue;
		L->i += strlen(signs[k].s);
		if (signs[k].t == T_END)   /* a degree sign */
			return 0;
		L->c = signs[k].c, L->sub = signs[k].sub;
		return set(L, (enum tok)signs[k].t);
	}
	return set(L, T_BAD);
}

/* ^\circ and ^{\circ} after an angle: at the '^' at j, their length or 0. */
static size_t degrees_at(const struct lex *L, size_t j)
{
	size_t k = skip_blank(L, j + 1);
	if (at(L, k, "\\circ"))
		return k + 5 - j;
	if (at(L, k, "{\\circ}"))
		return k + 7 - j;
	return 0;
}

static int lex_next(struct lex *L)
{
	while (L->i < L->n) {
		unsigned char c = (unsigned char)L->s[L->i];
		size_t deg;
		if (isspace(c) || c == '~' || c == '$' || c == '%') {
			L->i++;
		} else if (isdigit(c) || (c == '.' && is_digit(L, L->i + 1))) {
			return lex_number(L);
		} else if (isalpha(c)) {
			return lex_letters(L);
		} else if (c == '\\') {
			if (lex_command(L))
				return 1;
		} else if (c >= 0x80) {
			if (lex_utf8(L))
				return 1;
		} else if (c == '^' && (deg = degrees_at(L, L->i))) {
			L->i += deg;
		} else if (c == '{') {
			L->i++;
			open_brace(L, 0);
			return set_char(L, '{');
		} else if (c == '}') {
			L->i++;
			if (!L->depth)
				return set(L, T_BAD);
			L->depth--;
			if (L->depth >= 64 || !(L->wrap >> L->depth & 1))
				return set_char(L, '}');
		} else if (c == '<' || c == '>' || c == '=' || (c == '!' && at(L, L->i + 1, "="))) {
			int eq = at(L, L->i + 1, "=");
			L->i += 1 + (eq && c != '=');
			if (c == '=' && eq)   /* == */
				L->i++;
			L->sub = c == '=' ? R_EQ : c == '!' ? R_NE : c == '<' ? (eq ? R_LE : R_LT) : (eq ? R_GE : R_GT);
			return set(L, T_REL);
		} else if (strchr("+-*/^!()[],|&", c)) {
			L->i++;
			return set_char(L, (char)c);
		} else {
			return set(L, T_BAD);
		}
	}
	return set(L, T_END);
}

/* ---- parser ---- */

enum op { N_NUM, N_VAR, N_ADD, N_SUB, N_MUL, N_DIV, N_POW, N_NEG, N_FN, N_FACT, N_PM, N_ROOT, N_BINOM, N_LOGB };

struct node {
	uint8_t op, fn;
	int8_t pm;        /* N_PM: which sign of the sign vector */
	int8_t sign;      /* N_PM: +1 for \pm, -1 for \mp */
	uint8_t integer;  /* N_NUM written as digits alone */
	int32_t a, b;
	double v;
	uint64_t var;
};

enum kind { O_REL, O_TUPLE, O_SET, O_UNION, O_MATRIX };

/* A parsed value: an expression (node >= 0) or a collection (obj >= 0). */
struct val {
	int obj, node;
};

struct obj {
	uint8_t kind;
	char open, close;      /* O_TUPLE */
	uint8_t ops[4];        /* O_REL: enum rel between its sides */
	int first, n;          /* its elements in kids (O_REL: its sides) */
	int rows, cols;        /* O_MATRIX */
};

struct parse {
	struct lex L;
	struct node nodes[MAX_NODES];
	struct obj objs[MAX_OBJS];
	struct val kids[MAX_KIDS];
	int nn, no, nk, npm, depth, bad;
	struct val top;
};

static const struct val NONE = { -1, -1 };

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
		lex_next(&P->L);
}

static int is_char(const struct parse *P, char c)
{
	return P->L.t == T_CHAR && P->L.c == c;
}

static int scalar(struct val v)
{
	return v.node >= 0;
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
static unsigned pm_mask(const struct parse *P, int k)
{
	const struct node *d = &P->nodes[k];
	switch (d->op) {
	case N_NUM: case N_VAR: return 0;
	case N_NEG: case N_FN: case N_FACT: return pm_mask(P, d->a);
	case N_PM: return 1u << d->pm | pm_mask(P, d->a) | pm_mask(P, d->b);
	default: return pm_mask(P, d->a) | pm_mask(P, d->b);
	}
}

static struct val collection(struct parse *P, enum kind kind, const struct val *items, int n)
{
	if (P->bad || P->no == MAX_OBJS || P->nk + n > MAX_KIDS)
		return fail(P);
	/* a \pm inside a tuple, relation or matrix has no one meaning here */
	for (int i = 0; kind != O_SET && kind != O_UNION && i < n; i++)
		if (scalar(items[i]) && pm_mask(P, items[i].node))
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
	size_t j = skip_blank(L, L->i);
	if (j >= L->n)
		return fail(P);
	char c = L->s[j];
	if (c == '{') {
		L->i = j + 1;
		open_brace(L, 0);
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
	if (isalpha((unsigned char)c)) {
		L->i = j + 1;
		struct val v = node(P, N_VAR, -1, -1);
		if (scalar(v))
			P->nodes[v.node].var = fnv(0xcbf29ce484222325ull, &L->s[j], 1);
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
	size_t j = skip_blank(L, L->i);
	if (fn == F_LOG && j < L->n && L->s[j] == '_') {
		L->i = j + 1;
		base = raw_arg(P);
		j = skip_blank(L, L->i);
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
		next(P);
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
	case T_INF: v = number(P, INFINITY, 0), next(P); break;
	case T_FRAC:
		v = raw_arg(P);
		w = raw_arg(P);
		next(P);
		v = binary(P, N_DIV, v, w);
		break;
	case T_BINOM:
		v = raw_arg(P);
		w = raw_arg(P);
		next(P);
		v = binary(P, N_BINOM, v, w);
		break;
	case T_SQRT: {
		size_t j = skip_blank(L, L->i);
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
	case T_NUM: case T_VAR: case T_PI: case T_INF: case T_FRAC: case T_SQRT: case T_BINOM: case T_FUNC:
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

static int lone_variable(const struct parse *P, struct val v)
{
	return scalar(v) && P->nodes[v.node].op == N_VAR;
}

/* a = b < c ...: a chain of '=' is its last side ("x = 2 + 3 = 5" is 5). */
static struct val relation(struct parse *P)
{
	struct val side[5];
	uint8_t ops[4];
	int k = 0;
	side[0] = sum(P);
	if (P->L.t == T_IN) {   /* x \in [0, 1) */
		if (!lone_variable(P, side[0]))
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

static void parse_answer(struct parse *P, const char *s, size_t n)
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

/* ---- values ---- */

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

static int close_to(double a, double b)
{
	if (isinf(a) || isinf(b))
		return a == b;
	return fabs(a - b) <= REL_TOL * fmax(fabs(a), fabs(b)) + ABS_TOL;
}

/* An expression's values at the points; a value is NaN where undefined. */
static void values(const struct parse *P, int k, unsigned signs, double *out)
{
	for (int pt = 0; pt < N_POINTS; pt++)
		out[pt] = eval(P, k, signs, pt);
}

static int same_values(const double *a, const double *b)
{
	int counted = 0;
	for (int pt = 0; pt < N_POINTS; pt++) {
		if (isnan(a[pt]) && isnan(b[pt]))
			continue;
		if (isnan(a[pt]) || isnan(b[pt]) || !close_to(a[pt], b[pt]))
			return 0;
		counted++;
	}
	return counted > 0;
}

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

static int elem_equal(const struct elem *x, const struct elem *y);

/* The i-th elements of two tuples, matrices or chains. */
static int kids_equal(const struct parse *PA, const struct obj *a, const struct parse *PB, const struct obj *b)
{
	for (int i = 0; i < a->n; i++) {
		struct elem x = element(PA, PA->kids[a->first + i], 0), y = element(PB, PB->kids[b->first + i], 0);
		if (!elem_equal(&x, &y))
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

/* Two relations of two sides: the same kind, with differences f and g
 * where g = c f (c > 0 for an inequality). */
static int relation_equal(const struct parse *PA, const struct obj *a, const struct parse *PB, const struct obj *b)
{
	if (a->n != b->n)
		return 0;
	if (a->n > 2) {
		return memcmp(a->ops, b->ops, (size_t)a->n - 1) == 0 && kids_equal(PA, a, PB, b);
	}
	double f[N_POINTS], g[N_POINTS];
	if (difference(PA, a, f) != difference(PB, b, g))
		return 0;
	double c = NAN;
	int counted = 0;
	for (int pt = 0; pt < N_POINTS; pt++) {
		if (isnan(f[pt]) && isnan(g[pt]))
			continue;
		if (!isfinite(f[pt]) || !isfinite(g[pt]))
			return 0;
		if (isnan(c) && fabs(f[pt]) > 1e-9)
			c = g[pt] / f[pt];
		counted++;
	}
	if (!counted)
		return 0;
	if (isnan(c))   /* f is 0 wherever defined: so must g be */
		c = 0;
	else if (fabs(c) < 1e-12 || ((a->ops[0] != R_EQ && a->ops[0] != R_NE) && c < 0))
		return 0;
	for (int pt = 0; pt < N_POINTS; pt++)
		if (!isnan(f[pt]) && !close_to(g[pt], c * f[pt]))
			return 0;
	return 1;
}

/* The elements of a list, each expression once per sign vector of its \pm. */
static int expand(const struct parse *P, const struct val *v, int n, struct elem *out)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		unsigned mask = scalar(v[i]) ? pm_mask(P, v[i].node) : 0;
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
static int multiset_equal(const struct elem *a, int na, const struct elem *b, int nb)
{
	unsigned char used[MAX_ELEMS] = { 0 };
	if (na != nb || na < 0)
		return 0;
	for (int i = 0; i < na; i++) {
		int j = 0;
		while (j < nb && (used[j] || !elem_equal(&a[i], &b[j])))
			j++;
		if (j == nb)
			return 0;
		used[j] = 1;
	}
	return 1;
}

static int list_equal(const struct parse *PA, const struct obj *a, const struct parse *PB, const struct obj *b)
{
	struct elem *x = malloc(2 * MAX_ELEMS * sizeof *x);
	if (!x)
		return 0;
	struct elem *y = x + MAX_ELEMS;
	int nx = expand(PA, PA->kids + a->first, a->n, x), ny = expand(PB, PB->kids + b->first, b->n, y);
	int r = multiset_equal(x, nx, y, ny);
	free(x);
	return r;
}

/* What "x = 5" and "5 = x" give x: the side that is not a lone variable,
 * or NONE when the relation is no such assignment. */
static struct val assigned(const struct parse *P, struct val v)
{
	const struct obj *o = v.obj >= 0 ? &P->objs[v.obj] : NULL;
	if (!o || o->kind != O_REL || o->n != 2 || o->ops[0] != R_EQ)
		return NONE;
	struct val l = P->kids[o->first], r = P->kids[o->first + 1];
	if (lone_variable(P, l) == lone_variable(P, r))
		return NONE;
	return lone_variable(P, l) ? r : l;
}

static int is_relation(const struct parse *P, struct val v)
{
	return v.obj >= 0 && P->objs[v.obj].kind == O_REL;
}

static int elem_equal(const struct elem *x, const struct elem *y)
{
	/* "x = 5" against 5 is its value; against "y = 5" a relation, so that
	 * in "a = 2, b = 3" the names count */
	if (is_relation(x->P, x->v) != is_relation(y->P, y->v)) {
		struct val ax = assigned(x->P, x->v), ay = assigned(y->P, y->v);
		if (ax.obj >= 0 || ax.node >= 0) {
			struct elem e = element(x->P, ax, 0);
			return elem_equal(&e, y);
		}
		if (ay.obj >= 0 || ay.node >= 0) {
			struct elem e = element(y->P, ay, 0);
			return elem_equal(x, &e);
		}
	}
	if (scalar(x->v) || scalar(y->v))
		return scalar(x->v) && scalar(y->v) && same_values(x->at, y->at);
	const struct obj *a = &x->P->objs[x->v.obj], *b = &y->P->objs[y->v.obj];
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case O_REL: return relation_equal(x->P, a, y->P, b);
	case O_SET: case O_UNION: return list_equal(x->P, a, y->P, b);
	case O_TUPLE: case O_MATRIX:
		return a->n == b->n && a->open == b->open && a->close == b->close && a->rows == b->rows &&
		       kids_equal(x->P, a, y->P, b);
	}
	return 0;
}

/* The answers: a set (a bare list too) of one element is that element,
 * and an expression with \pm is the set of its values. */
static int answers_equal(const struct parse *A, const struct parse *B)
{
	const struct parse *P[2] = { A, B };
	struct elem *e[2];
	int n[2];
	if (!(e[0] = malloc(2 * MAX_ELEMS * sizeof *e[0])))
		return 0;
	e[1] = e[0] + MAX_ELEMS;
	for (int i = 0; i < 2; i++) {
		struct val top = P[i]->top;
		if (top.obj >= 0 && P[i]->objs[top.obj].kind == O_SET)
			n[i] = expand(P[i], P[i]->kids + P[i]->objs[top.obj].first, P[i]->objs[top.obj].n, e[i]);
		else
			n[i] = expand(P[i], &top, 1, e[i]);
	}
	int r = n[0] == 1 && n[1] == 1 ? elem_equal(&e[0][0], &e[1][0]) : multiset_equal(e[0], n[0], e[1], n[1]);
	free(e[0]);
	return r;
}

enum mathans_result mathans_compare(const char *a, size_t na, const char *b, size_t nb)
{
	struct parse *p = calloc(2, sizeof *p);
	if (!p)
		return MATHANS_UNPARSED;
	parse_answer(&p[0], a, na);
	parse_answer(&p[1], b, nb);
	enum mathans_result r = MATHANS_UNPARSED;
	if (!p[0].bad && !p[1].bad)   /* both ways: the tolerances need not be symmetric */
		r = answers_equal(&p[0], &p[1]) && answers_equal(&p[1], &p[0]) ? MATHANS_EQUAL : MATHANS_DIFFERENT;
	free(p);
	return r;
}
