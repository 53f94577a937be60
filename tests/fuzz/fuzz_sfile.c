/* libFuzzer target: the spool file reader on arbitrary bytes must return
 * records or a clean error, never crash or read outside its buffers; and
 * every record it accepts must print in the JSON view and read back as the
 * same record (print, parse, print: the same text). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/jsonview.h"
#include "data/sfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfile_reader r;
	struct record rec;
	struct err e;
	if (sfile_reader_open_mem(&r, data, size, "fuzz", &e) < 0)
		return 0;
	while (sfile_read(&r, &rec, &e) > 0) {
		struct buf line = { 0 }, again = { 0 };
		struct record back;
		if (json_print_record(&line, &rec) < 0)
			abort();
		if (json_parse_record((const char *)line.data, line.len, &back, &e) < 0) {
			fprintf(stderr, "fuzz_sfile: the JSON view of a record read does not parse: %s\n  %.*s\n", e.msg,
				(int)line.len, (const char *)line.data);
			abort();
		}
		if (json_print_record(&again, &back) < 0 || again.len != line.len ||
		    memcmp(again.data, line.data, line.len) != 0) {
			fprintf(stderr, "fuzz_sfile: print, parse, print differ:\n  %.*s\n  %.*s\n", (int)line.len,
				(const char *)line.data, (int)again.len, (const char *)again.data);
			abort();
		}
		record_free(&back);
		buf_free(&line), buf_free(&again);
		record_free(&rec);
	}
	sfile_reader_close(&r);
	return 0;
}
