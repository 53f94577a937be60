/* libFuzzer target: metrics lines (data/metrics.h) from arbitrary bytes,
 * as grpo-spool plot reads the files the tools append to and a person may
 * edit. A file is refused or read, never a crash; what is read makes a
 * table of one line per step and a header, whatever the names it holds,
 * and a gnuplot script whose datablock ends only where it should: a
 * reward's name is data, and gnuplot would run what followed its end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/metrics.h"

static size_t lines(const struct buf *b, size_t from, size_t to)
{
	size_t n = 0;
	for (size_t i = from; i < to; i++)
		n += b->data[i] == '\n';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;   /* fmemopen refuses a size of 0 on older C libraries */
	struct metrics_table t = METRICS_TABLE_INIT;
	struct err e;
	if (metrics_read_stream(&t, f, "fuzz", &e) == 0) {
		struct buf tsv = { 0 }, plot = { 0 };
		if (metrics_tsv(&t, &tsv) == 0 && lines(&tsv, 0, tsv.len) != t.n + 1)
			abort();
		static const char head[] = "$metrics << EOD\n";
		if (metrics_gnuplot(&t, "out\n.png", &plot) == 0) {
			const char *end = memmem(plot.data, plot.len, "\nEOD\n", 5);
			if (plot.len < sizeof head - 1 || memcmp(plot.data, head, sizeof head - 1) != 0 || !end ||
			    lines(&plot, sizeof head - 1, (size_t)((const unsigned char *)end - plot.data)) != t.n)
				abort();
		}
		buf_free(&tsv);
		buf_free(&plot);
	}
	metrics_free(&t);
	fclose(f);
	return 0;
}
