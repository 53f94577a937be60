/* libFuzzer target: the spool file reader on arbitrary bytes must return
 * records or a clean error, never crash or read outside its buffers; and
 * every record it accepts must print in the JSON view and read back. */
#include <stddef.h>
#include <stdint.h>

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
		struct buf line = { 0 };
		struct record back;
		if (json_print_record(&line, &rec) == 0 &&
		    json_parse_record((const char *)line.data, line.len, &back, &e) == 0)
			record_free(&back);
		buf_free(&line);
		record_free(&rec);
	}
	sfile_reader_close(&r);
	return 0;
}
