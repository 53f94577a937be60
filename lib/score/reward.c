/*
 * reward.c: the built-in rewards (reward.h). Plain scanning over byte
 * ranges, no regular expressions: every pattern here is a fixed string or a
 * number, and the text may hold NUL bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "score/mathans.h"
#include "score/reward.h"

static const struct {
	const char *name;
	enum reward_kind kind;
} reward_names[] = {
	{ "gsm8k", REWARD_GSM8K }, { "boxed", REWARD_BOXED }, { "format", REWARD_FORMAT },
	{ "tags", REWARD_TAGS },   { "length", REWARD_LENGTH }, { "exact", REWARD_EXACT },
	{ "math", REWARD_MATH },   { "repetition", REWARD_REPETITION }, { "steps", REWARD_STEPS },
	{ "cosine", REWARD_COSINE }, { "kimi-length", REWARD_KIMI_LENGTH }, { "think", REWARD_THINK },
};

/* The weight after '=' (1 when none): 0, or -1. */
static int parse_weight(const char *eq, struct reward_spec *r, struct err *e)
{
	r->weight = 1;
	if (!eq)
		return 0;
	const char *w = eq + 1;
	char *end;
	errno = 0;
	r->weight = strtod(w, &end);
	/* base 10 and nothing around it, as the tools' option values */
	if (end == w || *end || !isfinite(r->weight) || isspace((unsigned char)*w) || strpbrk(w, "xX"))
		return err_set(e, "reward %s: weight '%s' is not a finite number", r->name, w);
	if (r->weight == 0 && errno == ERANGE)
		return err_set(e, "reward %s: weight '%s' is so small that it would be 0", r->name, w);
	if (fabs(r->weight) > REWARD_WEIGHT_MAX)
		return err_set(e, "reward %s: weight '%s' is beyond %g (at most a float's range, as rewards)", r->name,
			       w, REWARD_WEIGHT_MAX);
	return 0;
}

int reward_is_builtin(const char *arg)
{
	size_t n = strchr(arg, '=') ? (size_t)(strchr(arg, '=') - arg) : strlen(arg);
	for (size_t i = 0; i < sizeof reward_names / sizeof reward_names[0]; i++)
		if (strlen(reward_names[i].name) == n && memcmp(reward_names[i].name, arg, n) == 0)
			return 1;
	return 0;
}

int reward_parse(const char *arg, struct reward_spec *r, struct err *e)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < sizeof reward_names / sizeof reward_names[0]; i++) {
		if (strlen(reward_names[i].name) != n || memcmp(reward_names[i].name, arg, n) != 0)
			continue;
		r->kind = reward_names[i].kind;
		memcpy(r->name, arg, n);
		return parse_weight(eq, r, e);
	}
	return err_set(e, "unknown reward '%.*s' (built in: " REWARD_BUILTINS ")", (int)n, arg);
}

int reward_parse_program(const char *arg, struct reward_spec *r, struct err *e)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	memset(r, 0, sizeof *r);
	if (n == 0 || n >= sizeof r->name)
		return err_set(e, "reward '%.*s': a name of 1 to %zu bytes", (int)n, arg, sizeof r->name - 1);
	memcpy(r->name, arg, n);
	return parse_weight(eq, r, e);
}

int reward_needs_text(enum reward_kind k)
{
	return k != REWARD_LENGTH && !reward_needs_verdict(k);
}

int reward_needs_verdict(enum reward_kind k)
{
	return k == REWARD_COSINE || k == REWARD_KIMI_LENGTH;
}

double reward_cosine(const struct reward_opt *o, int right, uint32_t n_tokens)
{
	double p = (double)n_tokens / o->max_len, at0 = o->cosine[right ? 0 : 2], at1 = o->cosine[right ? 1 : 3];
	if (p > 1)
		p = 1;
	return at1 + (at0 - at1) * 0.5 * (1 + cos(M_PI * p));
}

double reward_kimi_length(int right, uint32_t n_tokens, uint32_t shortest, uint32_t longest)
{
	if (longest == shortest)
		return 0;
	double lambda = 0.5 - (double)(n_tokens - shortest) / (longest - shortest);
	return right || lambda < 0 ? lambda : 0;
}

/* ---- byte ranges ---- */

static const char *find(const char *s, size_t n, size_t from, const char *pat)
{
	size_t m = strlen(pat);
	if (from > n || n - from < m)
		return NULL;
	return memmem(s + from, n - from, pat, m);
}

static const char *rfind(const char *s, size_t n, const char *pat)
{
	const char *last = NULL, *p;
	size_t from = 0;
	while ((p = find(s, n, from, pat))) {
		last = p;
		from = (size_t)(p - s) + 1;
	}
	return last;
}

static size_t count(const char *s, size_t n, const char *pat)
{
	size_t c = 0, from = 0, m = strlen(pat);
	const char *p;
	while ((p = find(s, n, from, pat))) {
		c++;
		from = (size_t)(p - s) + m;   /* non-overlapping, as str.count */
	}
	return c;
}

static int dig(const char *s, size_t n, size_t i)
{
	return i < n && s[i] >= '0' && s[i] <= '9';
}

/* The length of a thousands separator at s[j] followed by exactly three
 * digits, 0 when none: "," (1,000), LaTeX's "{,}" (1{,}000) and thin space
 * "\," (1\,000), and the spaces that SI style and French write between
 * groups of digits, U+00A0, U+2009 and U+202F (1\u202f000). A plain space
 * is none: "3 100-page books" are 3 and 100. */
static size_t sep_at(const char *s, size_t n, size_t j)
{
	static const char *const seps[] = { ",", "{,}", "\\,", "\xc2\xa0", "\xe2\x80\x89", "\xe2\x80\xaf" };
	size_t m = 0;
	for (size_t k = 0; k < sizeof seps / sizeof seps[0] && !m; k++)
		if (j + strlen(seps[k]) <= n && memcmp(s + j, seps[k], strlen(seps[k])) == 0)
			m = strlen(seps[k]);
	if (m && dig(s, n, j + m) && dig(s, n, j + m + 1) && dig(s, n, j + m + 2) && !dig(s, n, j + m + 3))
		return m;
	return 0;
}

/* The length of a minus sign at s[j], '-' or U+2212 (which models write
 * too), where no letter or digit precedes it, so "16-3" is 16 and 3; else 0. */
static size_t minus_at(const char *s, size_t n, size_t j)
{
	if (j > 0 && isalnum((unsigned char)s[j - 1]))
		return 0;
	if (j < n && s[j] == '-')
		return 1;
	if (j + 3 <= n && memcmp(s + j, "\xe2\x88\x92", 3) == 0)
		return 3;
	return 0;
}

/* Exponents beyond this are as good as infinite: a double ends near 1e308. */
#define EXPONENT_MAX 100000L

/* Digits at s[j] as a decimal exponent, at most EXPONENT_MAX: their length. */
static size_t exponent_digits(const char *s, size_t n, size_t j, long *x)
{
	size_t m = 0;
	for (*x = 0; dig(s, n, j + m); m++)
		*x = *x >= EXPONENT_MAX ? EXPONENT_MAX : *x * 10 + (s[j + m] - '0');
	return m;
}

/* The length of an exponent "e3", "E+3", "e-3" at s[j], not followed by a
 * letter ("5e3x" is no number of ours), with *x; else 0. */
static size_t exponent_at(const char *s, size_t n, size_t j, long *x)
{
	if (j >= n || (s[j] != 'e' && s[j] != 'E'))
		return 0;
	size_t m = 1 + (j + 1 < n && (s[j + 1] == '+' || s[j + 1] == '-'));
	long e;
	size_t d = exponent_digits(s, n, j + m, &e);
	if (!d || (j + m + d < n && isalpha((unsigned char)s[j + m + d])))
		return 0;
	*x = s[j + 1] == '-' ? -e : e;
	return m + d;
}

/*
 * A number starting at s[i]: an optional minus sign (minus_at), then a
 * currency sign ("-$5", "-\$5"), digits with thousands separators
 * (sep_at), an optional decimal part and an exponent ("1.5e3" is 1500,
 * not 1.5 and then 3). 1 with *v and *end; 0 when none starts at i.
 */
#define NUM_DIGITS 78   /* the characters of a number kept; whole digits past them are factors of 10 */
static int num_at(const char *s, size_t n, size_t i, double *v, size_t *end)
{
	char b[NUM_DIGITS + 24];
	size_t k = 0, j = i, m, lost = 0;   /* lost: whole digits past b, each a factor of 10 */
	long x = 0;
	if ((m = minus_at(s, n, j))) {
		b[k++] = '-';
		j += m;
		if (j < n && s[j] == '$')
			j++;
		else if (j + 1 < n && s[j] == '\\' && s[j + 1] == '$')
			j += 2;
	}
	if (!dig(s, n, j) && !(j < n && s[j] == '.' && dig(s, n, j + 1)))
		return 0;
	for (;;) {
		if (dig(s, n, j)) {
			if (k < NUM_DIGITS)
				b[k++] = s[j];
			else
				lost++;
			j++;
		} else if (j > i && dig(s, n, j - 1) && (m = sep_at(s, n, j))) {
			j += m;
		} else {
			break;
		}
	}
	if (j < n && s[j] == '.' && dig(s, n, j + 1)) {
		/* without room for the point, its digits are below what b holds */
		int point = !lost && k < NUM_DIGITS;
		if (point)
			b[k++] = '.';
		for (j++; dig(s, n, j); j++)
			if (point && k < NUM_DIGITS + 1)
				b[k++] = s[j];
	}
	j += exponent_at(s, n, j, &x);
	snprintf(b + k, sizeof b - k, "e%ld", x + (long)(lost < EXPONENT_MAX ? lost : EXPONENT_MAX));
	*v = strtod(b, NULL);
	/* past a double's range the largest double, so that the number still
	 * ends where it is written rather than a scan finding its last digits */
	if (isinf(*v))
		*v = copysign(DBL_MAX, *v);
	*end = j;
	return 1;
}

static size_t skip_blank(const char *s, size_t n, size_t j)
{
	while (j < n && (s[j] == ' ' || s[j] == '\t'))
		j++;
	return j;
}

/* The length of "\frac{", "\dfrac{" or "\tfrac{" at s[j], else 0. */
static size_t frac_at(const char *s, size_t n, size_t j)
{
	static const char *const f[] = { "\\frac{", "\\dfrac{", "\\tfrac{" };
	for (size_t k = 0; k < 3; k++) {
		size_t m = strlen(f[k]);
		if (j + m <= n && memcmp(s + j, f[k], m) == 0)
			return m;
	}
	return 0;
}

/* \frac{A}{B} at s[i] (or \dfrac, \tfrac) with numbers A and B: A / B. */
static int latex_frac_at(const char *s, size_t n, size_t i, double *v, size_t *end)
{
	size_t j = i + frac_at(s, n, i), e;
	double a, b;
	if (j == i || !num_at(s, n, skip_blank(s, n, j), &a, &e))
		return 0;
	j = skip_blank(s, n, e);
	if (j + 1 >= n || s[j] != '}' || s[j + 1] != '{' || !num_at(s, n, skip_blank(s, n, j + 2), &b, &e))
		return 0;
	j = skip_blank(s, n, e);
	if (j >= n || s[j] != '}' || b == 0)
		return 0;
	*v = a / b;
	*end = j + 1;
	return 1;
}

/* The length of " \times 10^{3}" (or "× 10^3", "\cdot 10^{-3}", "x 10^3",
 * "* 10^3") at s[j], with its exponent *x; else 0. */
static size_t times_ten_at(const char *s, size_t n, size_t j, long *x)
{
	static const char *const times[] = { "\\times", "\\cdot", "\xc3\x97" /* × */, "\xc2\xb7" /* · */,
					     "\xe2\x8b\x85" /* ⋅ */, "x", "*" };
	size_t i = skip_blank(s, n, j), m = 0;
	for (size_t k = 0; k < sizeof times / sizeof times[0] && !m; k++)
		if (i + strlen(times[k]) <= n && memcmp(s + i, times[k], strlen(times[k])) == 0)
			m = strlen(times[k]);
	i = skip_blank(s, n, i + m);
	if (!m || i + 3 > n || memcmp(s + i, "10^", 3) != 0)
		return 0;
	i += 3;
	int brace = i < n && s[i] == '{';
	size_t neg = minus_at(s, n, i + brace), d = exponent_digits(s, n, i + brace + neg, x);
	i += brace + neg + d;
	if (!d || (brace && (i >= n || s[i++] != '}')))
		return 0;
	if (neg)
		*x = -*x;
	return i - j;
}

/*
 * A value starting at s[i], as an answer is written: a number, a fraction
 * "A/B" or "\frac{A}{B}", or a mixed number "4\frac{1}{2}". An answer of
 * 18 that is written "\frac{18}{4}" is 4.5, not 18.
 */
static int value_at(const char *s, size_t n, size_t i, double *v, size_t *end)
{
	double a, b;
	size_t e, j, m = minus_at(s, n, i);
	if (latex_frac_at(s, n, i + m, v, end)) {   /* "-\frac{1}{2}" is -0.5 */
		*v = m ? -*v : *v;
		return 1;
	}
	if (!num_at(s, n, i, &a, &e))
		return 0;
	*v = a;
	*end = e;
	long x;
	size_t t = times_ten_at(s, n, e, &x);
	if (t) {   /* "1.5 \times 10^3" is 1500 */
		*v = copysign(fmin(fabs(a) * pow(10, (double)x), DBL_MAX), a);
		*end = e + t;
		return 1;
	}
	j = skip_blank(s, n, e);
	if (latex_frac_at(s, n, j, &b, &j) && a == floor(a) && b >= 0) {   /* a whole part, of any size */
		*v = a < 0 || (a == 0 && m) ? a - b : a + b;
		*end = j;
	} else if (j < n && s[j] == '/' && dig(s, n, skip_blank(s, n, j + 1)) &&
		   num_at(s, n, skip_blank(s, n, j + 1), &b, &j) && b != 0) {
		*v = a / b;
		*end = j;
	}
	return isfinite(*v);
}

/* What may stand between the numbers of an expression. */
enum gap { GAP_NONE, GAP_BLANK, GAP_OP, GAP_OPEN };

/* The gap at s[j] and its length: blanks, "$", "%", closing brackets and
 * LaTeX's \left, \right, \$ and \% (GAP_BLANK); an arithmetic operator ("+",
 * "*", "x", "\times", "×", "−", ...: GAP_OP); an opening bracket (GAP_OPEN). */
static enum gap gap_at(const char *s, size_t n, size_t j, size_t *len)
{
	static const char *const ops[] = { "\\times", "\\cdot", "\\div", "\xc3\x97" /* × */,
					   "\xc3\xb7" /* ÷ */, "\xc2\xb7" /* · */, "\xe2\x88\x92" /* − */,
					   "\xe2\x8b\x85" /* ⋅ */ };
	static const char *const blanks[] = { "\\left", "\\right", "\\$", "\\%" };
	*len = 1;
	if (j >= n || s[j] == '\0')
		return GAP_NONE;
	if (strchr(" \t$%)]}", s[j]))
		return GAP_BLANK;
	if (strchr("+-*/x^", s[j]))
		return GAP_OP;
	if (strchr("([{", s[j]))
		return GAP_OPEN;
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
		if (j + (*len = strlen(ops[k])) <= n && memcmp(s + j, ops[k], *len) == 0)
			return GAP_OP;
	for (size_t k = 0; k < sizeof blanks / sizeof blanks[0]; k++)
		if (j + (*len = strlen(blanks[k])) <= n && memcmp(s + j, blanks[k], *len) == 0)
			return GAP_BLANK;
	return GAP_NONE;
}

/*
 * The answer written at or after s[from]: the first value, or, when that
 * value begins an expression that equals something ("9 * 2 = 18",
 * "12/20 x 100% = 60%", "2 * (3 + 4) = 14"), the value after its last '='.
 * The expression ends at anything else: so "The answer is 9 * 2 = 18." is
 * 18, while "The answer is 18. Check: 9 * 2 = 18" stops at the sentence's
 * end, "18 (since 9 = 9)" at the word, and "18 (= 9 * 2)" at the bracket,
 * which opens an aside rather than a term when no operator precedes it.
 */
static int answer_at(const char *s, size_t n, size_t from, double *v)
{
	size_t end;
	for (size_t i = from; i < n; i++) {
		if (!value_at(s, n, i, v, &end))
			continue;
		for (;;) {
			size_t j = end, m;
			double w;
			int op = 0;
			for (;;) {
				enum gap g = gap_at(s, n, j, &m);
				if (g == GAP_OPEN && !op)
					break;
				if (g != GAP_NONE) {
					op |= g == GAP_OP;
					j += m;
				} else if (value_at(s, n, j, &w, &m)) {
					op = 0;
					j = m;
				} else {
					break;
				}
			}
			if (j >= n || s[j] != '=')
				return 1;
			j = skip_blank(s, n, j + 1);
			while (j < n && (s[j] == '$' || s[j] == '\\') && !frac_at(s, n, j))
				j += s[j] == '\\' && j + 1 < n && s[j + 1] == '$' ? 2 : 1;
			if (!value_at(s, n, j, &w, &end))
				return 1;
			*v = w;
		}
	}
	return 0;
}

static int num_last(const char *s, size_t n, double *v)
{
	int found = 0;
	double x;
	size_t end;
	for (size_t i = 0; i < n;) {
		if (num_at(s, n, i, &x, &end)) {
			*v = x;
			found = 1;
			i = end;
		} else {
			i++;
		}
	}
	return found;
}

/* Case-insensitive rfind of an ASCII phrase. */
static const char *rfind_ci(const char *s, size_t n, const char *pat)
{
	size_t m = strlen(pat);
	for (size_t i = n >= m ? n - m + 1 : 0; i-- > 0;)
		if (strncasecmp(s + i, pat, m) == 0)
			return s + i;
	return NULL;
}

int reward_last_boxed(const char *text, size_t n, size_t *at, size_t *len)
{
	const char *p = rfind(text, n, "\\boxed");
	size_t skip = 6;
	if (!p) {
		p = rfind(text, n, "\\fbox");
		skip = 5;
	}
	if (!p)
		return 0;
	size_t i = (size_t)(p - text) + skip;
	if (i < n && text[i] == ' ') {
		/* "\boxed 5$": the answer runs to the next '$' (hendrycks MATH) */
		size_t j = i + 1;
		while (j < n && text[j] != '$')
			j++;
		*at = i + 1;
		*len = j - (i + 1);
		return 1;
	}
	if (i >= n || text[i] != '{')
		return 0;
	int depth = 0;
	for (size_t j = i; j < n; j++) {
		if (text[j] == '{')
			depth++;
		else if (text[j] == '}' && --depth == 0) {
			*at = i + 1;
			*len = j - (i + 1);
			return 1;
		}
	}
	return 0;
}

/*
 * The start of the last "####" of s that is not a markdown heading, a run
 * of '#' then a word ("#### Step 2: ..."), whose number is no answer; or
 * NULL. Backwards, each '#' looked at once.
 */
static const char *last_hashes(const char *s, size_t n)
{
	for (size_t end = n; end >= 4;) {
		if (memcmp(s + end - 4, "####", 4) != 0) {
			end--;
			continue;
		}
		size_t at = end - 4, j = end;
		while (at > 0 && s[at - 1] == '#')
			at--;
		while (j < n && s[j] && strchr(" \t*_", s[j]))
			j++;
		if (j == n || !isalpha((unsigned char)s[j]))
			return s + end - 4;
		end = at;
	}
	return NULL;
}

int reward_gsm8k_extract(const char *text, size_t n, double *v)
{
	const char *p = last_hashes(text, n);
	if (p && answer_at(text, n, (size_t)(p - text) + 4, v))
		return 1;
	size_t at, len;
	if (reward_last_boxed(text, n, &at, &len) && answer_at(text, at + len, at, v))
		return 1;
	p = rfind_ci(text, n, "the answer is");
	if (p && answer_at(text, n, (size_t)(p - text) + 13, v))
		return 1;
	return num_last(text, n, v);
}

int reward_gsm8k_answer(const char *answer, double *v)
{
	size_t n = strlen(answer), i = 0, end;
	const char *p = strstr(answer, "####");
	if (p)
		return answer_at(answer, n, (size_t)(p - answer) + 4, v);
	while (i < n && isspace((unsigned char)answer[i]))
		i++;
	if (i < n && answer[i] == '$')
		i++;
	if (!num_at(answer, n, i, v, &end))
		return 0;
	if (end < n && (answer[end] == '%' || answer[end] == '.'))
		end++;
	while (end < n && isspace((unsigned char)answer[end]))
		end++;
	return end == n;
}

static int same_number(double a, double b)
{
	double m = fmax(1.0, fmax(fabs(a), fabs(b)));
	return fabs(a - b) <= 1e-9 * m;
}

/*
 * The boxed reward's normal form of a LaTeX answer, a byte at a time, as
 * hendrycks MATH normalises one (formats.md §6): no whitespace, "$",
 * "\$", "\left", "\right" or spacing ("\!", "\,", "\;", "\:"), "\dfrac"
 * and "\tfrac" as "\frac", "\text{X}" as X, no thousands separators, no
 * '.' at the end. Without it "\dfrac{1}{2}" was not "\frac{1}{2}" nor
 * "\text{18}" 18.
 */
struct norm {
	const char *s;
	size_t n, i;
	unsigned depth;     /* braces open */
	uint64_t text;      /* which of the first 64 are a \text{'s, dropped at their close */
};

static void norm_init(struct norm *z, const char *s, size_t n)
{
	while (n && (isspace((unsigned char)s[n - 1]) || s[n - 1] == '.' || s[n - 1] == '$'))
		n--;
	*z = (struct norm){ s, n, 0, 0, 0 };
}

static size_t starts(const struct norm *z, const char *pat)
{
	size_t m = strlen(pat);
	return z->i + m <= z->n && memcmp(z->s + z->i, pat, m) == 0 ? m : 0;
}

/* The next byte of the normal form, or -1 at its end. */
static int norm_next(struct norm *z)
{
	static const char *const gone[] = { "\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\$", "$" };
	while (z->i < z->n) {
		size_t m = 0, i = z->i;
		for (size_t k = 0; k < sizeof gone / sizeof gone[0] && !m; k++)
			m = starts(z, gone[k]);
		if (!m && i > 0 && dig(z->s, z->n, i - 1))
			m = sep_at(z->s, z->n, i);
		if (m || isspace((unsigned char)z->s[i])) {
			z->i += m ? m : 1;
			continue;
		}
		if (starts(z, "\\dfrac") || starts(z, "\\tfrac")) {
			z->i += 2;   /* on at "frac" */
			return '\\';
		}
		int text = starts(z, "\\text{") != 0;
		char c = z->s[text ? i + 5 : i];
		z->i += text ? 6 : 1;
		if (c == '{') {
			if (z->depth < 64)
				z->text = text ? z->text | (uint64_t)1 << z->depth : z->text & ~((uint64_t)1 << z->depth);
			z->depth++;
			if (text)
				continue;
		} else if (c == '}' && z->depth) {
			z->depth--;
			if (z->depth < 64 && (z->text >> z->depth & 1))
				continue;
		}
		return (unsigned char)c;
	}
	return -1;
}

/* Equal in the normal form above. */
static int same_latex(const char *a, size_t na, const char *b, size_t nb)
{
	struct norm x, y;
	norm_init(&x, a, na);
	norm_init(&y, b, nb);
	for (;;) {
		int c = norm_next(&x);
		if (c != norm_next(&y))
			return 0;
		if (c < 0)
			return 1;
	}
}

/* DAPO's final line: the text after the last "Answer:" (any case, blanks
 * allowed before the ':') to the end of its line. */
static int answer_line(const char *s, size_t n, size_t *at, size_t *len)
{
	for (size_t end = n;;) {
		const char *p = rfind_ci(s, end, "answer");
		if (!p)
			return 0;
		size_t j = (size_t)(p - s) + 6;
		while (j < n && (s[j] == ' ' || s[j] == '\t'))
			j++;
		if (j < n && s[j] == ':') {
			size_t e = ++j;
			while (e < n && s[e] != '\n')
				e++;
			*at = j, *len = e - j;
			return 1;
		}
		end = (size_t)(p - s) + 5;   /* before this one */
	}
}

/* ---- repetition ---- */

/* Python's str.isspace for the character at s[i]: its length, or 0. */
static size_t space_at(const char *s, size_t n, size_t i)
{
	unsigned char c = (unsigned char)s[i];
	if (c < 0x80)
		return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
	uint32_t cp;
	int len = uni_utf8_decode((const unsigned char *)s + i, n - i, &cp);
	return len > 0 && (uni_class(cp) & UNI_S) ? (size_t)len : 0;
}

struct word {
	size_t at, len;
};

static int same_word(const char *s, struct word a, struct word b)
{
	if (a.len != b.len)
		return 0;
	for (size_t i = 0; i < a.len; i++)
		if (tolower((unsigned char)s[a.at + i]) != tolower((unsigned char)s[b.at + i]))
			return 0;
	return 1;
}

static uint64_t ngram_hash(const char *s, const struct word *w, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t k = 0; k < n; k++) {
		for (size_t i = 0; i < w[k].len; i++)
			h = (h ^ (unsigned char)tolower((unsigned char)s[w[k].at + i])) * 0x100000001b3ull;
		h = (h ^ 0x20) * 0x100000001b3ull;   /* the gap: "ab c" is not "a bc" */
	}
	return h;
}

/* -(1 - distinct n-grams / n-grams); NaN when memory runs out. */
static double repetition(const char *s, size_t n, uint32_t ngram)
{
	size_t nw = 0, cap = 0;
	struct word *w = NULL;
	for (size_t i = 0; i < n;) {
		size_t sp = space_at(s, n, i);
		if (sp) {
			i += sp;
			continue;
		}
		size_t j = i;
		while (j < n && !space_at(s, n, j))
			j++;
		if (nw == cap) {
			struct word *g = realloc(w, (cap = cap ? 2 * cap : 64) * sizeof *w);
			if (!g) {
				free(w);
				return NAN;
			}
			w = g;
		}
		w[nw++] = (struct word){ i, j - i };
		i = j;
	}
	double r = 0;
	if (nw >= ngram) {
		size_t total = nw - ngram + 1, size = 16, distinct = 0;
		while (size < 2 * total)
			size *= 2;
		size_t *slot = malloc(size * sizeof *slot);   /* an n-gram's first word + 1, 0 empty */
		r = NAN;
		if (slot) {
			memset(slot, 0, size * sizeof *slot);
			for (size_t g = 0; g < total; g++) {
				size_t h = (size_t)ngram_hash(s, w + g, ngram) & (size - 1);
				for (;; h = (h + 1) & (size - 1)) {
					if (!slot[h]) {
						slot[h] = g + 1;
						distinct++;
						break;
					}
					uint32_t k = 0;
					while (k < ngram && same_word(s, w[slot[h] - 1 + k], w[g + k]))
						k++;
					if (k == ngram)
						break;
				}
			}
			free(slot);
			r = (double)distinct / (double)total - 1;
		}
	}
	free(w);
	return r;
}

/* ---- steps ---- */

static size_t digits_at(const char *s, size_t n, size_t i)
{
	size_t j = i;
	while (j < n && isdigit((unsigned char)s[j]))
		j++;
	return j - i;
}

/* The length of one of open-r1's step markers at s[i], or 0. */
static size_t step_at(const char *s, size_t n, size_t i)
{
	static const char *const fixed[] = { "\n-", "\n*", "First,", "Second,", "Next,", "Finally," };
	size_t d;
	if (n - i >= 5 && memcmp(s + i, "Step ", 5) == 0 && (d = digits_at(s, n, i + 5)) && i + 5 + d < n &&
	    s[i + 5 + d] == ':')
		return 5 + d + 1;
	if (i == 0 && (d = digits_at(s, n, 0)) && d < n && s[d] == '.')
		return d + 1;
	for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
		size_t m = strlen(fixed[k]);
		if (n - i >= m && memcmp(s + i, fixed[k], m) == 0)
			return m;
	}
	return 0;
}

static double steps(const char *s, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n && count < 3;) {
		size_t m = step_at(s, n, i);
		count += m > 0;
		i += m ? m : 1;
	}
	return count / 3.0;
}

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s))
		(*s)++, (*n)--;
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

/* open-r1's format regex, re.match with DOTALL | MULTILINE. Each .*? may
 * hold anything, so it matches when some tail ends at the text's or a
 * line's end after the first mid: later mids only narrow the tails (a loop
 * over every mid and tail took a minute over a 1 MB response repeating
 * its answer block). */
static int format_ok(const char *s, size_t n)
{
	static const char mid[] = "\n</think>\n<answer>\n", tail[] = "\n</answer>";
	if (n < 8 || memcmp(s, "<think>\n", 8) != 0)
		return 0;
	const char *p = find(s, n, 8, mid);
	if (!p)
		return 0;
	size_t q = (size_t)(p - s) + sizeof mid - 1;
	for (const char *r = find(s, n, q, tail); r; r = find(s, n, (size_t)(r - s) + 1, tail)) {
		size_t e = (size_t)(r - s) + sizeof tail - 1;
		if (e == n || s[e] == '\n')
			return 1;
	}
	return 0;
}

/* TRL's think_format_reward, ^<think>(?!.*<think>)(.*?)</think>.*$ with
 * DOTALL: one <think> at the start, none after it, a </think> after it. */
static int think_ok(const char *s, size_t n)
{
	return n >= 7 && memcmp(s, "<think>", 7) == 0 && !find(s, n, 7, "<think>") && find(s, n, 7, "</think>");
}

int reward_reads_answer(enum reward_kind k)
{
	return k == REWARD_GSM8K || k == REWARD_BOXED || k == REWARD_MATH || k == REWARD_EXACT;
}

int reward_reads_think(enum reward_kind k)
{
	return k == REWARD_FORMAT || k == REWARD_THINK || k == REWARD_TAGS;
}

size_t reward_think_opened(const char *tail, size_t n)
{
	const char *open = rfind(tail, n, "<think>");
	if (!open)
		return 0;
	for (const char *p = open + 7; p < tail + n; p++)
		if (!isspace((unsigned char)*p))
			return 0;
	return (size_t)(tail + n - open);
}

double reward_eval(enum reward_kind k, const struct reward_opt *o, const char *text, size_t n,
		   const char *answer, uint32_t n_tokens)
{
	double a, b;
	size_t at, len;
	if (o->after_think && reward_reads_answer(k)) {
		const char *end = rfind(text, n, "</think>");
		if (!end)
			return 0;   /* still thinking: no answer given */
		n -= (size_t)(end + 8 - text);
		text = end + 8;
	}
	switch (k) {
	case REWARD_GSM8K:
		return answer && reward_gsm8k_answer(answer, &b) && reward_gsm8k_extract(text, n, &a) &&
		       same_number(a, b);
	case REWARD_BOXED:
	case REWARD_MATH: {
		int found = reward_last_boxed(text, n, &at, &len) || (k == REWARD_MATH && answer_line(text, n, &at, &len));
		if (!answer || !found)
			return 0;
		/* the answer's own last \boxed{}, else (math) what follows GSM8K's
		 * "####", else the whole answer */
		const char *g = answer, *h;
		size_t gn = strlen(answer), gat, glen;
		if (reward_last_boxed(answer, gn, &gat, &glen))
			g = answer + gat, gn = glen;
		else if (k == REWARD_MATH && (h = last_hashes(answer, gn)))
			gn -= (size_t)(h + 4 - answer), g = h + 4;
		int same = same_latex(text + at, len, g, gn);
		if (same || k == REWARD_BOXED)
			return same;
		enum mathans_result r = mathans_compare(text + at, len, g, gn);
		return r == MATHANS_NO_MEMORY ? NAN : r == MATHANS_EQUAL;
	}
	case REWARD_FORMAT:
		return format_ok(text, n);
	case REWARD_THINK:
		return think_ok(text, n);
	case REWARD_TAGS:
		return 0.25 * ((count(text, n, "<think>\n") == 1) + (count(text, n, "\n</think>\n") == 1) +
			       (count(text, n, "\n<answer>\n") == 1) + (count(text, n, "\n</answer>") == 1));
	case REWARD_LENGTH: {
		double L = n_tokens, lmax = o->max_len, c = o->overlong_buffer;
		if (c > lmax)
			c = lmax;
		if (L <= lmax - c)
			return 0;
		if (L <= lmax)
			return (lmax - c - L) / c;
		return -1;
	}
	case REWARD_REPETITION:
		return repetition(text, n, o->ngram ? o->ngram : 3);
	case REWARD_STEPS:
		return steps(text, n);
	case REWARD_COSINE:
	case REWARD_KIMI_LENGTH:
		return 0;   /* the scorer's, once the verdicts are known */
	case REWARD_EXACT: {
		if (!answer)
			return 0;
		const char *s = text, *t = answer;
		size_t sn = n, tn = strlen(answer);
		trim(&s, &sn);
		trim(&t, &tn);
		return sn == tn && memcmp(s, t, sn) == 0;
	}
	}
	return 0;
}
