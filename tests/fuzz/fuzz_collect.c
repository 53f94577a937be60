/* libFuzzer target: one input line through grpo-collect's parser in auto
 * mode, then validation and the JSON view of whatever it produced. The
 * parser must never crash, leak or read outside the line, whatever it holds,
 * and must make of it exactly what the reference path (cJSON's whole tree)
 * makes: the same groups, or the same message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collect.h"
#include "data/jsonview.h"

/* The line's result as text: the message, or the groups in the JSON view. */
static void describe(const uint8_t *data, size_t size, int ref, struct buf *out)
{
	struct collect_line L;
	struct err e;
	int r = ref ? collect_parse_line_ref((const char *)data, size, COLLECT_AUTO, &L, &e)
		    : collect_parse_line((const char *)data, size, COLLECT_AUTO, &L, &e);
	if (r < 0) {
		buf_printf(out, "refused: %s", e.msg);
		return;
	}
	buf_printf(out, "%d %d %s %s\n", (int)L.format, L.lone, L.id ? L.id : "-", L.answer ? L.answer : "-");
	for (uint32_t i = 0; i < L.n_groups; i++) {
		collect_check_group(&L.groups[i], 151936, &e);
		json_print_group(out, &L.groups[i]);
	}
	collect_line_free(&L);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf a = { 0 }, b = { 0 };
	describe(data, size, 0, &a);
	describe(data, size, 1, &b);
	if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
		abort();
	buf_free(&a);
	buf_free(&b);
	return 0;
}
