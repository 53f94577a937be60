/*
 * mathans_lex.c: the tokens of a math answer (mathans_impl.h). Spacing,
 * $, \left and \right, \text{...} around its content and degrees are
 * dropped here; a unit (\text{ cm}) ends the answer. \%, % and the word
 * percent are a token of their own, T_PCT, which the parser takes after
 * a number alone.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "score/mathans_impl.h"

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

uint64_t mathans_name_more(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t mathans_name_id(const char *p, size_t n)
{
	return mathans_name_more(0xcbf29ce484222325ull, p, n);
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

size_t mathans_skip_blank(const struct lex *L, size_t j)
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

void mathans_open_brace(struct lex *L, int wrap)
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

/* \overline, \bar or \dot at j, not the start of a longer command: the
 * length of its name, or 0. */
static size_t mark_at(const struct lex *L, size_t j)
{
	static const char *const marks[] = { "\\overline", "\\bar", "\\dot" };
	for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
		size_t m = strlen(marks[k]);
		if (at(L, j, marks[k]) && !(j + m < L->n && isalpha((unsigned char)L->s[j + m])))
			return m;
	}
	return 0;
}

/* The digits under one mark at j (\overline{142857}, \bar 3, \dot{6}; a
 * \dot marks one digit) appended to rep[*n..] while they fit in 60: the
 * end of the mark, or 0. */
static size_t marked(const struct lex *L, size_t j, char *rep, size_t *n)
{
	size_t m = mark_at(L, j);
	if (!m)
		return 0;
	int one = L->s[j + 1] == 'd';
	size_t from = mathans_skip_blank(L, j + m), to;
	int braced = from < L->n && L->s[from] == '{';
	if (!braced && is_digit(L, from)) {
		to = from + 1;
	} else if (braced) {
		to = ++from;
		while (is_digit(L, to))
			to++;
		if (to == from || to >= L->n || L->s[to] != '}' || (one && to - from != 1))
			return 0;
	} else {
		return 0;
	}
	if (*n + (to - from) > 60)
		return 0;
	memcpy(rep + *n, L->s + from, to - from);
	*n += to - from;
	return to + (size_t)braced;
}

/* A block in parentheses at j, right after a decimal's point: 0.(3),
 * 1.(142857). Only digits inside, and only the end or an operator after
 * it (0.(3)x and 0.(3)^2 are not read). Its end, with its digits in
 * rep[0..*n), or 0 when there is none. */
static size_t parenthesised(const struct lex *L, size_t j, char *rep, size_t *n)
{
	static const char *const ops[] = { "cdot", "times", "div", "right", "le", "leq", "ge", "geq", "ne",
					   "neq", "lt", "gt", "pm", "mp" };
	if (j >= L->n || L->s[j] != '(')
		return 0;
	size_t k = j + 1;
	while (is_digit(L, k))
		k++;
	if (k == j + 1 || k - j - 1 > 60 || k >= L->n || L->s[k] != ')')
		return 0;
	size_t after = mathans_skip_blank(L, k + 1);
	int op = after >= L->n || (L->s[after] && strchr("+-*/=<>,;)]}|", L->s[after])) || at(L, after, "\\}");
	if (!op && L->s[after] == '\\') {   /* \cdot, \le, ..., not \left */
		size_t e = after + 1;
		while (e < L->n && isalpha((unsigned char)L->s[e]))
			e++;
		for (size_t m = 0; !op && m < sizeof ops / sizeof ops[0]; m++)
			op = strlen(ops[m]) == e - after - 1 && memcmp(L->s + after + 1, ops[m], e - after - 1) == 0;
	}
	if (!op)
		return 0;
	memcpy(rep, L->s + j + 1, k - j - 1);
	*n = k - j - 1;
	return k + 1;
}

/* The repeating block of a decimal at j, right after its point or its
 * digits: \overline{R} or \bar{R}, dots over R's first and last digits
 * (\dot{3}, \dot{1}4285\dot{7}), the notation of British schools, or (R)
 * right after the point.
 * Its end, with its digits in rep[0..*n), or 0 when there is none. */
static size_t repeating(const struct lex *L, size_t j, char *rep, size_t *n)
{
	*n = 0;
	if (j < L->n && L->s[j] == '(')
		return parenthesised(L, j, rep, n);
	size_t end = marked(L, j, rep, n);
	if (!end || L->s[j + 1] != 'd')
		return end;
	size_t k = end;
	while (is_digit(L, k))
		k++;
	if (k == end && !at(L, k, "\\dot"))   /* \dot{3} alone */
		return end;
	if (*n + (k - end) <= 60) {
		memcpy(rep + *n, L->s + end, k - end);
		*n += k - end;
		if ((end = marked(L, k, rep, n)))
			return end;
	}
	*n = 0;   /* digits that no \dot closes */
	return 0;
}

/* A number, with its repeating block if it has one: 0.1\overline{6} is 1/6. */
static int lex_number(struct lex *L)
{
	char buf[72], rep[64];
	size_t k = 0, j = L->i, nfrac = 0, nrep = 0, end;
	while (is_digit(L, j) && k < 60)
		buf[k++] = L->s[j++];
	if (k <= 3) {
		for (size_t m; (m = thousands_at(L, j)) && k < 60; j += m + 3) {
			memcpy(buf + k, L->s + j + m, 3);
			k += 3;
		}
	}
	L->integer = 1, L->decimal = 0;
	if (j < L->n && L->s[j] == '.' && is_digit(L, j + 1)) {
		L->integer = 0;
		buf[k++] = L->s[j++];
		while (is_digit(L, j) && k < 70)
			buf[k++] = L->s[j++], nfrac++;
		/* 1.234(5) is a product, as latex2sympy reads it, and no
		 * repeating 5 (nor physics' 1.234 +- 0.005) */
		if ((j >= L->n || L->s[j] != '(') && (end = repeating(L, j, rep, &nrep)))
			j = end;
	} else if (j < L->n && L->s[j] == '.' && (end = repeating(L, j + 1, rep, &nrep))) {
		L->integer = 0;
		j = end;
	}
	buf[k] = 0;
	if (j == L->i)   /* a point before no digit and no block */
		return set(L, T_BAD);
	/* more digits than read, a base's subscript (204_5), or a second
	 * repeating block: not a value */
	if (is_digit(L, j) || (j < L->n && L->s[j] == '_') || (nrep && mark_at(L, j)))
		return set(L, T_BAD);
	L->decimal = !L->integer && !nrep;
	L->v = strtod(buf, NULL);
	if (nrep) {   /* 0.1\overline{6} = 0.1 + 6 / (9 * 10) */
		rep[nrep] = 0;
		L->v += strtod(rep, NULL) / ((pow(10, (double)nrep) - 1) * pow(10, (double)nfrac));
	}
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
	L->var = mathans_name_more(mathans_name_more(L->var, "_", 1), L->s + from, to - from);
	L->i = to;
	return 1;
}

/* "percent", "percentage" and "pct", which latex2sympy's normaliser
 * turns into \% before it parses. */
static int percent_word(const char *p, size_t n)
{
	static const char *const words[] = { "percent", "percentage", "pct" };
	for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
		if (strlen(words[k]) == n && memcmp(words[k], p, n) == 0)
			return 1;
	return 0;
}

/* One letter is a variable; a run of three or more is one word (a name,
 * "\text{Evelyn}"), not a product of letters that could be reordered. A
 * lone e is Euler's number, as latex2sympy reads it, so that e^2 is
 * \exp(2) and \ln(e^3) is 3; e_1 is a variable. */
static int lex_letters(struct lex *L)
{
	size_t j = L->i;
	while (j < L->n && isalpha((unsigned char)L->s[j]))
		j++;
	size_t len = j - L->i >= 3 ? j - L->i : 1;
	if (percent_word(L->s + L->i, len)) {
		L->i += len;
		return set(L, T_PCT);
	}
	if (len == 1 && L->s[L->i] == 'e' && !(L->i + 1 < L->n && L->s[L->i + 1] == '_')) {
		L->i++;
		return set(L, T_E);
	}
	L->var = mathans_name_id(L->s + L->i, len);
	L->i += len;
	set(L, T_VAR);
	return subscript(L);
}

/* A \text{...}'s content at '{' j: a unit ("\text{ cm}") ends the answer,
 * " and " and " or " separate a list, anything else is read inside (so
 * "\text{,}" is a comma). 0 to go on lexing, 1 with a token set. */
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
	if ((wn == 3 && memcmp(w, "and", 3) == 0) || (wn == 2 && memcmp(w, "or", 2) == 0)) {
		L->i = close + 1;
		return set(L, T_SEP);
	}
	if (len && (isspace((unsigned char)c[0]) || (len > 1 && c[0] == '\\' && strchr(" ,;:", c[1])))) {
		L->i = L->n;
		return set(L, T_END);
	}
	L->i = j + 1;
	mathans_open_brace(L, 1);
	return 0;
}

/* \begin{pmatrix} or \end{pmatrix}: 1 when a matrix environment. */
static int environment(struct lex *L)
{
	size_t j = mathans_skip_blank(L, L->i);
	if (j >= L->n || L->s[j] != '{')
		return 0;
	size_t close = matching_brace(L, j);
	for (size_t k = 0; close && k < sizeof matrix_envs / sizeof matrix_envs[0]; k++) {
		size_t m = strlen(matrix_envs[k]);
		if (close - j - 1 != m || memcmp(L->s + j + 1, matrix_envs[k], m) != 0)
			continue;
		L->i = close + 1;
		if (strcmp(matrix_envs[k], "array") == 0 && at(L, mathans_skip_blank(L, L->i), "{")) {
			size_t spec = matching_brace(L, mathans_skip_blank(L, L->i));
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
		case '%': return set(L, T_PCT);
		case ',': case ';': case ':': case '!': case ' ': case '>': case '$': return 0;
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
			j = mathans_skip_blank(L, L->i);
			if (j < L->n && L->s[j] == '.')
				L->i = j + 1;
			return 0;
		case K_WRAP: return wrapper(L, mathans_skip_blank(L, L->i));
		case K_BEGIN: return set(L, environment(L) ? T_BEGIN : T_BAD);
		case K_END: return set(L, environment(L) ? T_ENDENV : T_BAD);
		default: return set(L, T_BAD);
		}
	}
	/* \alpha, \theta, ...: a variable of that name */
	L->var = mathans_name_more(0x84222325cbf29ce4ull, name, len);
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
	size_t k = mathans_skip_blank(L, j + 1);
	if (at(L, k, "\\circ"))
		return k + 5 - j;
	if (at(L, k, "{\\circ}"))
		return k + 7 - j;
	return 0;
}

int mathans_lex_next(struct lex *L)
{
	while (L->i < L->n) {
		unsigned char c = (unsigned char)L->s[L->i];
		size_t deg;
		L->start = L->i;
		if (isspace(c) || c == '~' || c == '$') {
			L->i++;
		} else if (c == '%') {
			L->i++;
			return set(L, T_PCT);
		} else if (isdigit(c) || (c == '.' && is_digit(L, L->i + 1))) {
			return lex_number(L);
		} else if (c == '.' && (mark_at(L, L->i + 1) || at(L, L->i + 1, "("))) {   /* .\overline{3}, .(3) */
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
			mathans_open_brace(L, 0);
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
		} else if (c && strchr("+-*/^!()[],|&", c)) {   /* not NUL, which strchr finds */
			L->i++;
			return set_char(L, (char)c);
		} else {
			return set(L, T_BAD);
		}
	}
	L->start = L->n;
	return set(L, T_END);
}
