/*
 * mathans_impl.h: what the three files of score/mathans share, and only
 * they (tests/cli/layers.t checks): mathans_lex.c turns an answer's bytes
 * into tokens, dropping what does not change its value; mathans_parse.c
 * builds expression nodes and collection objects from them;
 * mathans_compare.c evaluates and compares two parsed answers.
 */
#ifndef GRPO_MATHANS_IMPL_H
#define GRPO_MATHANS_IMPL_H

#include <stddef.h>
#include <stdint.h>

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
#define FLOAT_TOL 1e-12   /* math_verify's 15 digits, less what doubles lose at the points */
#define CONST_TOL 1e-14   /* the same for a constant, which no point's cancellation blurs */
#define ABS_TOL   1e-12   /* rounding left by sin(pi) and the like */
#define PI        3.14159265358979323846
#define EULER     2.71828182845904523536

/* ---- tokens (mathans_lex.c) ---- */

enum tok {
	T_END, T_BAD, T_NUM, T_VAR, T_PI, T_E, T_INF, T_CHAR, T_FRAC, T_SQRT, T_BINOM, T_FUNC, T_PM, T_MP,
	T_CUP, T_LSET, T_RSET, T_REL, T_IN, T_SEP, T_LV, T_RV, T_EMPTY, T_BEGIN, T_ENDENV, T_ROWSEP, T_PCT,
};
enum rel { R_EQ, R_NE, R_LT, R_LE, R_GT, R_GE };
enum fn {
	F_SQRT, F_ABS, F_SIN, F_COS, F_TAN, F_SEC, F_CSC, F_COT, F_ASIN, F_ACOS, F_ATAN,
	F_SINH, F_COSH, F_TANH, F_LN, F_LOG, F_EXP,
};

struct lex {
	const char *s;
	size_t n, i;
	size_t start;     /* where the current token begins */
	unsigned depth;   /* braces open */
	uint64_t wrap;    /* which of the first 64 opened a \text{...}: their '}' is dropped */
	enum tok t;       /* the current token, and what it carries: */
	char c;           /* T_CHAR */
	int sub;          /* T_REL: enum rel; T_FUNC: enum fn */
	int integer;      /* T_NUM: digits only */
	int decimal;      /* T_NUM: digits with a point, no repeating block */
	double v;         /* T_NUM */
	uint64_t var;     /* T_VAR */
};

/* Reads the token after L->i into L: 1 (always). */
int mathans_lex_next(struct lex *L);
/* A '{' opened at L->depth; wrap: a \text{...}'s, whose '}' is dropped. */
void mathans_open_brace(struct lex *L, int wrap);
/* The first byte at or after j that is no whitespace. */
size_t mathans_skip_blank(const struct lex *L, size_t j);
/* A letter's or a word's variable id: the same in both answers. */
uint64_t mathans_name_id(const char *p, size_t n);
/* The id h of a name with p[0..n) appended (a subscript, a prime). */
uint64_t mathans_name_more(uint64_t h, const char *p, size_t n);

/* ---- parsed answers (mathans_parse.c) ---- */

enum op { N_NUM, N_VAR, N_ADD, N_SUB, N_MUL, N_DIV, N_POW, N_NEG, N_FN, N_FACT, N_PM, N_ROOT, N_BINOM, N_LOGB };

struct node {
	uint8_t op, fn;
	int8_t pm;        /* N_PM: which sign of the sign vector */
	int8_t sign;      /* N_PM: +1 for \pm, -1 for \mp */
	uint8_t integer;  /* N_NUM written as digits alone */
	uint8_t decimal;  /* N_NUM written with a point (0.5, not 0.\overline{3}) */
	uint16_t at, len; /* a decimal's text, L.s[at..at+len), its exact value */
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

static inline int scalar(struct val v)
{
	return v.node >= 0;
}

/* Parses s[0..n) into P (zeroed); P->bad when it is not an answer this reads. */
void mathans_parse(struct parse *P, const char *s, size_t n);
/* Which signs (bits of the sign vector) the \pm of expression node k use. */
unsigned mathans_pm_mask(const struct parse *P, int k);
/* An expression that is one variable, x or x_1. */
int mathans_lone_variable(const struct parse *P, struct val v);

#endif
