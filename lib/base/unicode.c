/* unicode.c: see unicode.h. */
#include "base/unicode.h"

#include <stdlib.h>
#include <string.h>

struct uni_range {
	uint32_t lo, hi;
	uint32_t v;
};

struct uni_decomp {
	uint32_t cp;
	uint16_t off, len;
};

struct uni_pair {
	uint32_t a, b, c;
};

#include "base/unicode_tables.inc"

int uni_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	/* The allowed range of the second byte excludes overlong forms (E0, F0),
	 * surrogates (ED) and code points above U+10FFFF (F4). */
	unsigned lo = 0x80, hi = 0xBF;
	int need;
	uint32_t v;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return -1;
	}
	for (int i = 1; i <= need; i++) {
		if ((size_t)i >= n || s[i] < lo || s[i] > hi)
			return -i;
		v = v << 6 | (s[i] & 0x3F);
		lo = 0x80;
		hi = 0xBF;
	}
	*cp = v;
	return need + 1;
}

int uni_utf8_encode(uint32_t cp, unsigned char out[4])
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The length of s's longest prefix of valid UTF-8 whose code points are all
 * below limit (above ASCII: those bytes are passed over undecoded). */
static size_t valid_below(const unsigned char *s, size_t n, uint32_t limit)
{
	size_t i = 0;
	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t cp;
		int k = uni_utf8_decode(s + i, n - i, &cp);
		if (k < 0 || cp >= limit)
			return i;
		i += (size_t)k;
	}
	return n;
}

size_t uni_utf8_check(const unsigned char *s, size_t n)
{
	return valid_below(s, n, 0x110000);
}

int uni_utf8_lossy(struct buf *out, const unsigned char *s, size_t n)
{
	static const unsigned char fffd[3] = { 0xEF, 0xBF, 0xBD };
	size_t start = 0, i = 0;
	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t cp;
		int k = uni_utf8_decode(s + i, n - i, &cp);
		if (k > 0) {
			i += (size_t)k;
			continue;
		}
		if (buf_append(out, s + start, i - start) < 0 || buf_append(out, fffd, 3) < 0)
			return -1;
		i += (size_t)-k;
		start = i;
	}
	return buf_append(out, s + start, n - start);
}

static uint32_t range_lookup(const struct uni_range *r, size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < r[mid].lo)
			hi = mid;
		else if (cp > r[mid].hi)
			lo = mid + 1;
		else
			return r[mid].v;
	}
	return 0;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

unsigned uni_class(uint32_t cp)
{
	if (cp < 0x80) {
		/* The regex scanner asks for every character: ASCII without a search. */
		if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
			return UNI_L | UNI_W;
		if (cp >= '0' && cp <= '9')
			return UNI_N | UNI_W;
		if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D))
			return UNI_S;
		return cp == '_' ? UNI_W : 0;
	}
	return range_lookup(uni_class_ranges, NELEM(uni_class_ranges), cp);
}

unsigned uni_ccc(uint32_t cp)
{
	if (cp < 0x300)
		return 0;
	return range_lookup(uni_ccc_ranges, NELEM(uni_ccc_ranges), cp);
}

/* Hangul syllables decompose and compose by arithmetic (Unicode 3.12). */
enum {
	S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7,
	L_COUNT = 19, V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT,
	S_COUNT = L_COUNT * N_COUNT,
};

/* A growable array of code points. */
struct cps {
	uint32_t *v;
	size_t n, cap;
};

static int cps_push(struct cps *a, uint32_t cp)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		uint32_t *p = realloc(a->v, cap * sizeof *p);
		if (!p)
			return -1;
		a->v = p;
		a->cap = cap;
	}
	a->v[a->n++] = cp;
	return 0;
}

static int decompose(struct cps *a, uint32_t cp)
{
	if (cp >= S_BASE && cp < S_BASE + S_COUNT) {
		uint32_t s = cp - S_BASE;
		if (cps_push(a, L_BASE + s / N_COUNT) < 0 || cps_push(a, V_BASE + s % N_COUNT / T_COUNT) < 0)
			return -1;
		return s % T_COUNT ? cps_push(a, T_BASE + s % T_COUNT) : 0;
	}
	size_t lo = 0, hi = NELEM(uni_decomps);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < uni_decomps[mid].cp) {
			hi = mid;
		} else if (cp > uni_decomps[mid].cp) {
			lo = mid + 1;
		} else {
			for (unsigned k = 0; k < uni_decomps[mid].len; k++)
				if (cps_push(a, uni_decomp_pool[uni_decomps[mid].off + k]) < 0)
					return -1;
			return 0;
		}
	}
	return cps_push(a, cp);
}

/* The primary composite of a + b, or 0 if there is none. */
static uint32_t compose(uint32_t a, uint32_t b)
{
	if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
		return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
	if (a >= S_BASE && a < S_BASE + S_COUNT && (a - S_BASE) % T_COUNT == 0 &&
	    b > T_BASE && b < T_BASE + T_COUNT)
		return a + (b - T_BASE);
	size_t lo = 0, hi = NELEM(uni_comp_pairs);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct uni_pair *p = &uni_comp_pairs[mid];
		if (a < p->a || (a == p->a && b < p->b))
			hi = mid;
		else if (a > p->a || b > p->b)
			lo = mid + 1;
		else
			return p->c;
	}
	return 0;
}

/* Sort a run of non-starters by combining class, stably. Insertion for the
 * usual few; a long run (text of nothing but marks) by counting, since
 * insertion is quadratic there. -1 when memory runs out. */
static int sort_run(uint32_t *v, size_t n)
{
	if (n <= 16) {
		for (size_t j = 1; j < n; j++) {
			uint32_t c = v[j];
			unsigned cc = uni_ccc(c);
			size_t m = j;
			for (; m > 0 && uni_ccc(v[m - 1]) > cc; m--)
				v[m] = v[m - 1];
			v[m] = c;
		}
		return 0;
	}
	uint32_t *tmp = malloc(n * sizeof *tmp);
	if (!tmp)
		return -1;
	size_t at[257] = { 0 };
	for (size_t j = 0; j < n; j++)
		at[uni_ccc(v[j]) + 1]++;
	for (unsigned c = 1; c <= 256; c++)
		at[c] += at[c - 1];
	for (size_t j = 0; j < n; j++)
		tmp[at[uni_ccc(v[j])]++] = v[j];
	memcpy(v, tmp, n * sizeof *tmp);
	free(tmp);
	return 0;
}

int uni_nfc(struct buf *out, const unsigned char *s, size_t n)
{
	/* Quick check: below U+0300 every character is a starter that NFC
	 * leaves as it is, and most text is entirely there. */
	size_t i;
	if (valid_below(s, n, 0x300) == n)
		return buf_append(out, s, n);

	/* 1. Full canonical decomposition. */
	struct cps d = { 0 };
	int rc = -1;
	for (i = 0; i < n;) {
		uint32_t cp;
		int k = uni_utf8_decode(s + i, n - i, &cp);
		if (k < 0) {
			/* Not valid UTF-8 (the caller should have checked): keep the
			 * byte as U+FFFD rather than read past it. */
			cp = 0xFFFD;
			k = -k;
		}
		i += (size_t)k;
		if (decompose(&d, cp) < 0)
			goto done;
	}

	/* 2. Canonical ordering: a stable sort by combining class of every run
	 * of non-starters. */
	for (size_t j = 0; j < d.n;) {
		size_t k = j;
		while (k < d.n && uni_ccc(d.v[k]) != 0)
			k++;
		if (k - j > 1 && sort_run(d.v + j, k - j) < 0)
			goto done;
		j = k + 1;
	}

	/* 3. Canonical composition: each character joins the last starter
	 * unless a character of the same or higher class stands between
	 * them (a starter with nothing between joins a following starter). */
	size_t starter = 0, w = 1;
	unsigned last = d.n ? uni_ccc(d.v[0]) : 0;
	if (last != 0)
		last = 256;         /* no starter to compose with yet */
	for (size_t j = 1; j < d.n; j++) {
		uint32_t c = d.v[j];
		unsigned cc = uni_ccc(c);
		uint32_t comp = compose(d.v[starter], c);
		if (comp && (last < cc || last == 0)) {
			d.v[starter] = comp;
			continue;
		}
		if (cc == 0)
			starter = w;
		last = cc;
		d.v[w++] = c;
	}
	if (d.n)
		d.n = w;

	if (buf_reserve(out, d.n * 4) < 0)
		goto done;
	for (size_t j = 0; j < d.n; j++)
		out->len += (size_t)uni_utf8_encode(d.v[j], out->data + out->len);
	rc = 0;
done:
	free(d.v);
	return rc;
}
