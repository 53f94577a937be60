/* libFuzzer target: one input line through grpo-collect's parser in auto
 * mode, then validation and the JSON view of whatever it produced. The
 * parser must never crash, leak or read outside the line, whatever it holds. */
#include <stddef.h>
#include <stdint.h>

#include "collect/collect.h"
#include "data/jsonview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct collect_line L;
	struct err e;
	if (collect_parse_line((const char *)data, size, COLLECT_AUTO, &L, &e) < 0)
		return 0;
	struct buf out = { 0 };
	for (uint32_t i = 0; i < L.n_groups; i++) {
		collect_check_group(&L.groups[i], 151936, &e);
		json_print_group(&out, &L.groups[i]);
	}
	buf_free(&out);
	collect_line_free(&L);
	return 0;
}
