/* libFuzzer target: the packer's invariants on arbitrary items, and the
 * config.json reader of --cost flops on arbitrary text.
 *
 * Input starting with '{': config.json text for pack_cost_from_config.
 * Otherwise: byte 0 picks W (1..64), bytes 1-2 T (1..65536), byte 3 the
 * separate-runs flag (the other bits the fill target); then 3 bytes per
 * item, a 16-bit length (taken modulo T, plus 1) and a class (bit 2 also
 * starts a new unit for pack_fill_cut). Any violated invariant aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pack/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e;
	if (size > 0 && data[0] == '{') {
		struct pack_cost c;
		if (pack_cost_from_config((const char *)data, size, "fuzz", &c, &e) == 0 &&
		    (!(c.a > 0) || !(c.b > 0)))
			abort();
		return 0;
	}
	if (size < 4)
		return 0;
	uint32_t W = 1 + data[0] % 64, T = 1 + (data[1] | (uint32_t)data[2] << 8);
	int separate = data[3] & 1;
	uint32_t n = (uint32_t)((size - 4) / 3);
	if (n > 1024)
		n = 1024;
	struct pack_item *it = malloc((n ? n : 1) * sizeof *it);
	uint32_t *len = malloc((n ? n : 1) * sizeof *len);
	uint8_t *seen = calloc(n ? n : 1, 1);
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = data + 4 + 3 * i;
		len[i] = 1 + (p[0] | (uint32_t)p[1] << 8) % T;
		it[i] = (struct pack_item){ len[i], p[2] % 4, (double)len[i] + 1e-3 * len[i] * len[i] };
	}
	struct pack_opt o = { T, W, separate, 1 };
	struct pack_result r;
	if (pack_items(it, n, &o, &r, &e) < 0)
		abort();
	if (r.k == 0 || r.k % W || r.per_rank * W != r.k || r.bin_start[r.k] != n)
		abort();
	uint32_t empty = 0;
	for (uint32_t b = 0; b < r.k; b++) {
		uint64_t sum = 0;
		empty += r.bin_start[b] == r.bin_start[b + 1];
		for (uint32_t x = r.bin_start[b]; x < r.bin_start[b + 1]; x++) {
			uint32_t i = r.items[x];
			if (i >= n || seen[i]++ || (separate && it[i].cls != it[r.items[r.bin_start[b]]].cls))
				abort();
			sum += len[i];
		}
		if (sum > T || sum != r.bin_len[b])
			abort();
	}
	if (empty != r.dummies || (!separate && n >= r.k && r.dummies))
		abort();
	uint32_t ffd = pack_ffd_bins(len, n, T, NULL);
	if (!separate && n && r.k > (ffd + W - 1) / W * W)
		abort();
	uint32_t kall = r.k;
	pack_result_free(&r);

	/* --fill-target: units of one to four items; the count kept matches
	 * keep[], something is kept, and what is kept packs into no more bins
	 * than everything did. */
	uint32_t *unit_of = malloc((n ? n : 1) * sizeof *unit_of), nu = 0;
	uint8_t *keep = malloc(n ? n : 1);
	for (uint32_t i = 0; i < n; i++) {
		if (i == 0 || (data[4 + 3 * i + 2] & 4))
			nu++;
		unit_of[i] = nu - 1;
	}
	double F = 0.5 + (data[3] >> 1) / 254.0;
	int kept = pack_fill_cut(it, n, unit_of, nu, &o, F, keep, &e);
	uint32_t count = 0, ns = 0;
	for (uint32_t u = 0; u < nu; u++)
		count += keep[u];
	if (kept < 0 || (uint32_t)kept != count || (nu && !kept))
		abort();
	for (uint32_t i = 0; i < n; i++)
		if (keep[unit_of[i]])
			it[ns++] = it[i];
	struct pack_result rk;
	if (pack_items(it, ns, &o, &rk, &e) < 0 || rk.k > kall)
		abort();
	pack_result_free(&rk);
	free(unit_of), free(keep);
	free(it), free(len), free(seen);
	return 0;
}
