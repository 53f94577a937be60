/*
 * test_unicode_nfc: uni_nfc's canonical ordering, on short runs of combining
 * marks and on one long run, which must take time in proportion to its
 * length (a run of combining marks is text anyone can send to the
 * tokenizer; its time is said, not asserted: a sort gone quadratic again
 * shows as this test taking minutes). Expected forms are Python's unicodedata.normalize("NFC", s).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tap.h"
#include "base/unicode.h"

/* NFC of the code points in[0..n) equals want[0..m). */
static int nfc_is(const uint32_t *in, size_t n, const uint32_t *want, size_t m)
{
	struct buf s = { 0 }, out = { 0 };
	unsigned char u[4];
	for (size_t i = 0; i < n; i++)
		buf_append(&s, u, (size_t)uni_utf8_encode(in[i], u));
	int good = uni_nfc(&out, s.data, s.len) == 0;
	size_t k = 0, i = 0;
	while (good && i < out.len && k < m) {
		uint32_t cp;
		int l = uni_utf8_decode(out.data + i, out.len - i, &cp);
		good = l > 0 && cp == want[k];
		i += l > 0 ? (size_t)l : 1;
		k++;
	}
	good = good && i == out.len && k == m;
	buf_free(&s);
	buf_free(&out);
	return good;
}

int main(void)
{
	/* classes 220 sorted before 230, each class in its order; then composed */
	static const uint32_t a1[] = { 'a', 0x316, 0x301, 0x300, 0x317 }, w1[] = { 0xE1, 0x316, 0x317, 0x300 };
	ok(nfc_is(a1, 5, w1, 4), "a + marks of classes 220 and 230: stable order, a + U+0301 composed");
	static const uint32_t a2[] = { 0x301, 0x316, 'a' }, w2[] = { 0x316, 0x301, 'a' };
	ok(nfc_is(a2, 3, w2, 3), "marks before any starter are ordered and left uncomposed");
	static const uint32_t a3[] = { 'e', 0x323, 0x302, 0x301, 0x316, 0x301, 0x316, 0x301, 0x316, 0x301 };
	static const uint32_t w3[] = { 0x1EC7, 0x316, 0x316, 0x316, 0x301, 0x301, 0x301, 0x301 };
	ok(nfc_is(a3, 10, w3, 8), "e + dot below + circumflex compose past the sorted run");

	/* 'a' then 100000 pairs U+0301 U+0316: 200000 non-starters in one run.
	 * Sorted by insertion this took minutes (the whole run moved for each
	 * U+0316); Hugging Face normalizes it in a fraction of a second. */
	enum { PAIRS = 100000 };
	size_t n = 1 + 2 * PAIRS;
	uint32_t *in = malloc(n * sizeof *in), *want = malloc(n * sizeof *want);
	in[0] = 'a';
	want[0] = 0xE1;
	for (size_t i = 0; i < PAIRS; i++) {
		in[1 + 2 * i] = 0x301;
		in[2 + 2 * i] = 0x316;
		want[1 + i] = 0x316;
		if (i + 1 < PAIRS)
			want[1 + PAIRS + i] = 0x301;
	}
	clock_t t0 = clock();
	int good = nfc_is(in, n, want, n - 1);
	double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
	ok(good, "a run of 200000 marks: all U+0316 first, the first U+0301 composed with a");
	diag("in %.2f s of CPU", s);   /* said, not asserted: a bound fails on a slow machine */
	free(in);
	free(want);
	return tap_done();
}
