/* libFuzzer target: a step's DONE manifest and a record of QUEUE/.jobs
 * (data/done.h) from arbitrary bytes, the first byte choosing which. The
 * packer and gc read these from disk to decide what was trained already,
 * so a damaged one must be refused, never crash; one that is accepted
 * writes back as a line that reads again and writes the same line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/done.h"

static void same_line(const struct buf *a, const struct buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		abort();
}

static void manifest(const char *s, size_t n)
{
	struct done_manifest m, back;
	struct err e;
	if (done_parse(s, n, "fuzz", &m, &e) < 0)
		return;
	struct buf once = { 0 }, twice = { 0 };
	if (done_format(&once, &m) == 0) {
		if (done_parse((const char *)once.data, once.len, "written", &back, &e) < 0)
			abort();
		if (done_format(&twice, &back) == 0)
			same_line(&once, &twice);
		done_free(&back);
	}
	buf_free(&once);
	buf_free(&twice);
	done_free(&m);
}

static void jobrec(const char *s, size_t n)
{
	struct done_jobrec r, back;
	struct err e;
	if (done_jobrec_parse(s, n, "fuzz", &r, &e) < 0)
		return;
	struct buf once = { 0 }, twice = { 0 };
	if (done_jobrec_format(&once, &r) == 0) {
		if (done_jobrec_parse((const char *)once.data, once.len, "written", &back, &e) < 0)
			abort();
		if (done_jobrec_format(&twice, &back) == 0)
			same_line(&once, &twice);
		done_jobrecs_free_one(&back);
	}
	buf_free(&once);
	buf_free(&twice);
	done_jobrecs_free_one(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	/* a copy without the selector, of exactly its bytes (no NUL after,
	 * so that AddressSanitizer sees a parser reading past them) */
	char *s = malloc(size > 1 ? size - 1 : 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	if (data[0] & 1)
		jobrec(s, size - 1);
	else
		manifest(s, size - 1);
	free(s);
	return 0;
}
