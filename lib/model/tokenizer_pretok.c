/* tokenizer_pretok.c: the pre_tokenizer: Oniguruma helpers, the hand-written Qwen/Llama 3
 * scanner, and the generic steps (Split, ByteLevel, Digits, behaviors). See tokenizer.h,
 * and tokenizer_impl.h for how the modules divide the work. */
#include "model/tokenizer_impl.h"

#include <oniguruma.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Oniguruma ---- */


/* Oniguruma, as tokenizers' onig crate sets it up: UTF-8, its default
 * syntax (Oniguruma's own), no options. onig_new is not safe to call from
 * several threads at once (the crate locks around it too); searching a
 * compiled regex is. */
static pthread_mutex_t onig_lock = PTHREAD_MUTEX_INITIALIZER;
static int onig_ready;

/* Compile pat[0..n) into *re, or -1 with Oniguruma's message after path. */
int tok_regex_compile(regex_t **re, const char *pat, size_t n, const char *path, struct err *e)
{
	OnigErrorInfo info = { 0 };
	OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
	OnigEncoding enc[] = { ONIG_ENCODING_UTF8 };
	int rc = ONIG_NORMAL;
	*re = NULL;
	pthread_mutex_lock(&onig_lock);
	/* (tried again while it fails: its memory may have run out) */
	if (!onig_ready && (rc = onig_initialize(enc, 1)) == ONIG_NORMAL)
		onig_ready = 1;
	if (onig_ready)
		rc = onig_new(re, (const OnigUChar *)pat, (const OnigUChar *)pat + n, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
			      ONIG_SYNTAX_DEFAULT, &info);
	pthread_mutex_unlock(&onig_lock);
	if (rc == ONIG_NORMAL)
		return 0;
	*re = NULL;
	if (!onig_ready) {
		onig_error_code_to_str(msg, rc);
		return err_set(e, "%s: Oniguruma failed to start: %s", path, (const char *)msg);
	}
	onig_error_code_to_str(msg, rc, &info);
	if (rc == ONIGERR_MEMORY)
		return err_set(e, "%s: out of memory compiling the regex (Oniguruma: %s)", path, (const char *)msg);
	return err_set(e, "%s: \"%.120s\" does not compile: %s (Oniguruma)", path, pat, (const char *)msg);
}

/* A Split's {"String": s}, as tokenizers compiles it: regex::escape(s),
 * then Oniguruma. */
int tok_regex_literal(regex_t **re, const char *s, const char *path, struct err *e)
{
	size_t n = strlen(s);
	char *q = malloc(2 * n + 1), *w = q;
	if (!q)
		return err_set(e, "out of memory");
	for (; *s; s++) {
		if (strchr("\\.+*?()|[]{}^$#&-~", *s))
			*w++ = '\\';
		*w++ = *s;
	}
	int rc = tok_regex_compile(re, q, (size_t)(w - q), path, e);
	free(q);
	return rc;
}


static int span_push(struct plevel *l, size_t a, size_t b, int m)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct span *q = realloc(l->sp, cap * sizeof *q);
		if (!q)
			return -1;
		l->sp = q;
		l->cap = cap;
	}
	l->sp[l->n++] = (struct span){ a, b, m };
	return 0;
}

/* The matches of re in s[0..n), and what lies between them, into l, as
 * tokenizers' tok_find_matches has them (none for n = 0): as the onig crate's
 * find_iter finds them, each search from where the last match ended, an
 * empty match there skipped by one character. -4 with Oniguruma's code in
 * *rc when a search fails, -1 when memory runs out. */
static int regex_find(regex_t *re, const unsigned char *s, size_t n, OnigRegion *region, struct plevel *l, int *rc)
{
	size_t prev = 0, from = 0, last = 0;
	int any = 0;
	l->n = 0;
	if (n == 0)
		return span_push(l, 0, 0, 0);
	while (from <= n) {
		int r = onig_search(re, s, s + n, s + from, s + n, region, ONIG_OPTION_NONE);
		if (r == ONIG_MISMATCH)
			break;
		if (r < 0) {
			*rc = r;
			return -4;
		}
		size_t a = (size_t)region->beg[0], b = (size_t)region->end[0];
		if (a == b && any && last == b) {
			uint32_t c;
			from += from < n ? cp_at(s, n, from, &c) : 1;
			continue;
		}
		from = last = b;
		any = 1;
		if ((prev != a && span_push(l, prev, a, 0) < 0) || span_push(l, a, b, 1) < 0)
			return -1;
		prev = b;
	}
	return prev != n ? span_push(l, prev, n, 0) : 0;
}

/* Replace's regex: s[0..n) appended to out with each match of re (an
 * empty one too) as with[0..nw), as NormalizedString::replace and the
 * Replace decoder do. -4 (Oniguruma's code in *rc) or -1 as regex_find. */
int tok_regex_replace(regex_t *re, const unsigned char *s, size_t n, const char *with, size_t nw,
		      struct buf *out, int *rc)
{
	struct plevel l = { 0 };
	OnigRegion *region = onig_region_new();
	int r = region ? regex_find(re, s, n, region, &l, rc) : -1;
	for (size_t i = 0; i < l.n && r == 0; i++)
		r = l.sp[i].m ? buf_append(out, with, nw) : buf_append(out, s + l.sp[i].a, l.sp[i].b - l.sp[i].a);
	free(l.sp);
	if (region)
		onig_region_free(region, 1);
	return r < 0 ? r : 0;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) after the quote at s[i-1]: the end, or 0.
 * Case-insensitive as Oniguruma folds: U+017F LONG S folds to s. */
static size_t contraction(const unsigned char *s, size_t n, size_t i)
{
	uint32_t c, d;
	size_t l = cp_at(s, n, i, &c);
	c = c == 0x17F ? 's' : (c < 0x80 ? (c | 0x20) : c);
	if (c == 's' || c == 't' || c == 'm' || c == 'd')
		return i + l;
	if ((c != 'r' && c != 'v' && c != 'l') || i + l >= n)
		return 0;
	size_t l2 = cp_at(s, n, i + l, &d);
	d = d < 0x80 ? (d | 0x20) : d;
	if ((c == 'l' && d == 'l') || (c != 'l' && d == 'e'))
		return i + l + l2;
	return 0;
}

/* End of the pre-tokenizer's match at s[i..n), i < n, by the alternatives of
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} (or \p{N}{1,3})
 *   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * tried left to right, each greedy with backtracking, as Oniguruma does.
 * Some alternative matches at every character, so the matches tile s. */
static size_t pre_match(const unsigned char *s, size_t n, size_t i, int digits3)
{
	uint32_t c0, c;
	size_t l0 = cp_at(s, n, i, &c0), j, l;
	unsigned k0 = uni_class(c0);

	if (c0 == '\'' && i + 1 < n) {
		size_t end = contraction(s, n, i + 1);
		if (end)
			return end;
	}

	/* [^\r\n\p{L}\p{N}]?\p{L}+ */
	j = n + 1;
	if (k0 & UNI_L) {
		j = i;
	} else if (c0 != '\r' && c0 != '\n' && !(k0 & UNI_N) && i + l0 < n) {
		cp_at(s, n, i + l0, &c);
		if (uni_class(c) & UNI_L)
			j = i + l0;
	}
	if (j <= n) {
		while (j < n && (l = cp_at(s, n, j, &c)) && (uni_class(c) & UNI_L))
			j += l;
		return j;
	}

	/* \p{N} or \p{N}{1,3} */
	if (k0 & UNI_N) {
		j = i + l0;
		for (int k = 1; digits3 && k < 3 && j < n && (l = cp_at(s, n, j, &c)) && (uni_class(c) & UNI_N); k++)
			j += l;
		return j;
	}

	/*  ?[^\s\p{L}\p{N}]+[\r\n]* : the optional space is tried first; without
	 * it the match would start at the space, which the class excludes. */
	j = c0 == ' ' ? i + 1 : i;
	if (j < n) {
		size_t start = j;
		while (j < n && (l = cp_at(s, n, j, &c)) && !(uni_class(c) & (UNI_S | UNI_L | UNI_N)))
			j += l;
		if (j > start) {
			while (j < n && (s[j] == '\r' || s[j] == '\n'))
				j++;
			return j;
		}
	}

	/* c0 is white space. \s*[\r\n]+ ends after the run's last \r or \n;
	 * failing that, \s+(?!\S) takes the run but its last character when a
	 * non-space follows; failing that, \s+. */
	size_t last_nl = 0, last_start = i;
	for (j = i; j < n && (l = cp_at(s, n, j, &c)) && (uni_class(c) & UNI_S); j += l) {
		last_start = j;
		if (c == '\r' || c == '\n')
			last_nl = j + 1;
	}
	if (last_nl)
		return last_nl;
	if (j == n || last_start == i)
		return j;
	return last_start;
}

/* ---- the pre_tokenizer's steps (all but the scanner's two) ---- */

/* The byte-level character of byte b (GPT-2's bytes_to_unicode; tok_cp_byte
 * undoes it). */
static uint32_t byte_cp(unsigned b)
{
	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	if (b <= 0x20)
		return 0x100 + b;
	return b == 0xAD ? 0x143 : 0x100 + 33 + (b - 0x7F);
}

/* tokenizers' tok_find_matches: s[0..n), n > 0, tiled by the matches of st's
 * pattern and what lies between them, each marked a match or not (Digits:
 * each character char::is_numeric takes, \p{N}, is a match). -4 when
 * Oniguruma fails. */
int tok_find_matches(const struct pstep *st, const unsigned char *s, size_t n, struct plevel *l,
		     struct scratch *sc)
{
	if (st->kind != P_DIGITS)
		return regex_find(st->re, s, n, sc->region, l, &sc->onig_rc);
	size_t prev = 0;
	l->n = 0;
	for (size_t i = 0, k; i < n; i += k) {
		uint32_t c;
		k = cp_at(s, n, i, &c);
		if (!(uni_class(c) & UNI_N))
			continue;
		if ((prev < i && span_push(l, prev, i, 0) < 0) || span_push(l, i, i + k, 1) < 0)
			return -1;
		prev = i + k;
	}
	return prev != n ? span_push(l, prev, n, 0) : 0;
}

/* NormalizedString::split's behaviors over l's spans: those left with m
 * unset are the pieces (some may be empty, which tokenizers drops). */
static void apply_behavior(struct plevel *l, int behavior, int invert)
{
	struct span *v = l->sp;
	size_t n = l->n, k = 0;
	int prev = 0;
	if (invert)
		for (size_t i = 0; i < n; i++)
			v[i].m = !v[i].m;
	switch (behavior) {
	case B_REMOVED:
		break;
	case B_ISOLATED:
		for (size_t i = 0; i < n; i++)
			v[i].m = 0;
		break;
	case B_CONTIGUOUS:
	case B_MERGED_PREV:
		for (size_t i = 0; i < n; i++) {
			struct span x = v[i];
			if (k && (behavior == B_CONTIGUOUS ? x.m == prev : x.m && !prev))
				v[k - 1].b = x.b;
			else
				v[k++] = (struct span){ x.a, x.b, 0 };
			prev = x.m;
		}
		l->n = k;
		break;
	case B_MERGED_NEXT:
		/* from the end, as tokenizers folds the reversed list */
		k = n;
		for (size_t i = n; i-- > 0;) {
			struct span x = v[i];
			if (k < n && x.m && !prev)
				v[k].a = x.a;
			else
				v[--k] = (struct span){ x.a, x.b, 0 };
			prev = x.m;
		}
		memmove(v, v + k, (n - k) * sizeof *v);
		l->n = n - k;
		break;
	}
}


/* Steps k.. of the pre_tokenizer over the piece s[0..n), n > 0, each piece
 * that comes out of the last to f as its bytes. mapped: s is ByteLevel's
 * characters (a step after ByteLevel sees those, as in tokenizers). */
int tok_pre_run(const struct tokenizer *t, size_t k, const unsigned char *s, size_t n, int mapped,
		struct scratch *sc, piece_fn f, void *arg)
{
	struct plevel *l = &sc->lv[k];
	if (k == t->n_psteps) {
		if (!mapped)
			return f(t, s, n, sc, arg);
		buf_reset(&l->text);
		if (buf_reserve(&l->text, n) < 0)
			return -1;
		long bl = tok_token_bytes_n((const char *)s, n, l->text.data);
		return f(t, l->text.data, bl < 0 ? 0 : (size_t)bl, sc, arg);  /* (bl < 0: unreachable) */
	}
	const struct pstep *st = &t->psteps[k];
	int rc;
	if (st->kind == P_BYTE_LEVEL && st->prefix_space && s[0] != ' ') {
		buf_reset(&l->text);
		if (buf_put_u8(&l->text, ' ') < 0 || buf_append(&l->text, s, n) < 0)
			return -1;
		s = l->text.data;
		n = l->text.len;
	}
	if (st->kind == P_BYTE_LEVEL && !st->re) {
		l->n = 0;
		rc = span_push(l, 0, n, 0);
	} else {
		rc = tok_find_matches(st, s, n, l, sc);
		apply_behavior(l, st->kind == P_SPLIT ? st->behavior : st->kind == P_BYTE_LEVEL ? B_ISOLATED :
			       st->individual ? B_ISOLATED : B_CONTIGUOUS, st->kind == P_SPLIT && st->invert);
	}
	for (size_t i = 0; i < l->n && rc == 0; i++) {
		const struct span x = l->sp[i];
		if (x.m || x.b == x.a)
			continue;
		if (!st->map) {
			rc = tok_pre_run(t, k + 1, s + x.a, x.b - x.a, mapped, sc, f, arg);
			continue;
		}
		buf_reset(&l->map);
		for (size_t j = x.a; j < x.b && rc == 0; j++) {
			unsigned char u[4];
			rc = buf_append(&l->map, u, (size_t)uni_utf8_encode(byte_cp(s[j]), u));
		}
		if (rc == 0)
			rc = tok_pre_run(t, k + 1, l->map.data, l->map.len, 1, sc, f, arg);
	}
	return rc;
}

static int scratch_levels(const struct tokenizer *t, struct scratch *sc)
{
	if (sc->lv)
		return 0;
	if (!(sc->lv = calloc(t->n_psteps + 1, sizeof *sc->lv)) || !(sc->region = onig_region_new()))
		return -1;
	return 0;
}

/* The pre_tokenizer's pieces of s[0..n), n > 0, each to f. */
int tok_pre_pieces(const struct tokenizer *t, const unsigned char *s, size_t n, int scanner, struct scratch *sc,
		   piece_fn f, void *arg)
{
	if (scanner) {
		for (size_t i = 0; i < n;) {
			size_t end = pre_match(s, n, i, t->digits3);
			int rc = f(t, s + i, end - i, sc, arg);
			if (rc < 0)
				return rc;
			i = end;
		}
		return 0;
	}
	return scratch_levels(t, sc) < 0 ? -1 : tok_pre_run(t, 0, s, n, 0, sc, f, arg);
}


/* Oniguruma's message for what a search returned. */
int tok_onig_err(struct err *e, int rc)
{
	OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
	onig_error_code_to_str(msg, rc);
	if (rc == ONIGERR_MEMORY)
		return err_set(e, "out of memory in Oniguruma's search (%s)", (const char *)msg);
	return err_set(e, "Oniguruma failed to search the text: %s", (const char *)msg);
}
