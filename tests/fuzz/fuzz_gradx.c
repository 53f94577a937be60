/* libFuzzer target: bytes as a gradient file of grpo-step --rank
 * (train/gradx.h), read as the header says it is (rank, step, epoch,
 * options, up to 4096 elements). A file that is accepted encodes back to the same bytes,
 * save the gradient's NaNs, which the reader's sum may quiet: then it
 * decodes again to the same values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train/gradx.h"

enum { MAX_N = 4096 };

static uint64_t le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static float g[MAX_N], again[MAX_N];
	struct gradx_head h = { 0, 0, 0, 0, 0 };
	if (size >= GRADX_HEAD) {
		h.rank = (int)le(data + 12, 4), h.step = (int64_t)le(data + 16, 8), h.epoch = (int)le(data + 24, 4);
		h.n = le(data + 32, 8), h.opts = le(data + 40, 8);
	}
	if (h.n > MAX_N)
		h.n = MAX_N;   /* refused as a wrong count */
	for (uint64_t k = 0; k < h.n; k++)
		g[k] = -0.0f;
	struct loss_totals c, c2;
	struct loss_stats st, st2;
	struct err e;
	if (gradx_decode(data, size, "f", &h, &c, &st, g, &e) < 0)
		return 0;
	struct buf b = { 0 };
	if (gradx_encode(&b, &h, &c, &st, g) < 0)
		abort();
	int nan = 0;
	for (uint64_t k = 0; k < h.n; k++)
		nan |= isnan(g[k]);
	if (!nan && (b.len != size || memcmp(b.data, data, size) != 0))
		abort();
	for (uint64_t k = 0; k < h.n; k++)
		again[k] = -0.0f;
	if (gradx_decode(b.data, b.len, "f", &h, &c2, &st2, again, &e) < 0 || memcmp(&c, &c2, sizeof c) != 0 ||
	    memcmp(&st, &st2, sizeof st) != 0)
		abort();
	for (uint64_t k = 0; k < h.n; k++)
		if (memcmp(&g[k], &again[k], 4) != 0 && !(isnan(g[k]) && isnan(again[k])))
			abort();
	buf_free(&b);
	return 0;
}
