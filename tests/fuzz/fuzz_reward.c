/* libFuzzer target: every built-in reward over arbitrary bytes, with and
 * without after_think (the text may hold NUL bytes; the answer is what
 * follows the first 0xff byte, as a C string). Each reward must be finite
 * and within its range. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "score/reward.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t n = sep ? (size_t)(sep - data) : size;
	char *answer = NULL;
	if (sep) {
		answer = strndup((const char *)sep + 1, size - n - 1);
		if (!answer)
			return 0;
	}
	struct reward_opt o = { .max_len = 100, .overlong_buffer = (uint32_t)(size % 101), .ngram = (uint32_t)(size % 5),
				.after_think = (int)(size % 2) };
	for (int k = REWARD_GSM8K; k <= REWARD_THINK; k++) {
		double r = reward_eval((enum reward_kind)k, &o, (const char *)data, n, answer, (uint32_t)size);
		if (!isfinite(r) || r < -1 || r > 1)
			abort();
	}
	double v;
	if (reward_gsm8k_extract((const char *)data, n, &v) && !isfinite(v))
		abort();
	size_t at, len;
	if (reward_last_boxed((const char *)data, n, &at, &len) && at + len > n)
		abort();
	if (reward_think_opened((const char *)data, n) > n)   /* the opening is the text's end */
		abort();
	if (answer)
		reward_gsm8k_answer(answer, &v);
	free(answer);
	return 0;
}
