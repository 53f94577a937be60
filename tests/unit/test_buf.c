/* test_buf: buf_grow_array, the doubling growth of arrays without a capacity field; TSV cells. */
#include <stdlib.h>

#include "../tap.h"
#include "base/buf.h"

int main(void)
{
	int *a = NULL, moved = 0, bad = 0;
	size_t n;
	for (n = 0; n < 5000; n++) {
		void *p = a;
		if (buf_grow_array(&p, n, sizeof *a) < 0)
			break;
		if (p != a && n && (n & (n - 1)))
			moved++;   /* reallocated below its implied capacity */
		a = p;
		a[n] = (int)n * 7;
	}
	for (size_t i = 0; i < n; i++)
		bad += a[i] != (int)i * 7;
	ok(n == 5000 && bad == 0, "5000 elements appended one at a time keep their values");
	ok(moved == 0, "the array is reallocated only at sizes 0, 1, 2, 4, 8, ...");
	void *p = a;
	ok(buf_grow_array(&p, (size_t)1 << 40, (size_t)1 << 30) < 0 && p == a,
	   "a size that overflows is refused, and the array kept");
	free(a);

	struct buf b = { 0 };
	static const char text[] = "a\tb\nc\r\\d\x01\x7f\xc3\xa9 e";
	const char *want = "a\\tb\\nc\\r\\\\d\\x01\\x7f\xc3\xa9 e";
	ok(buf_put_tsv_cell(&b, text, sizeof text - 1) == 0 && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0,
	   "a TSV cell: tab, line breaks, backslash and control bytes escaped, UTF-8 and spaces kept");
	buf_reset(&b);
	ok(buf_put_tsv_cell(&b, "x\0y", 3) == 0 && b.len == 6 && memcmp(b.data, "x\\x00y", 6) == 0,
	   "a NUL within the n bytes is a control byte too");
	buf_free(&b);
	return tap_done();
}
