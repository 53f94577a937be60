/* libFuzzer target: bytes on standard input as grpo-cat reads them, a pipe
 * that may carry a spool stream or an archive of spool files in any format
 * libarchive knows. Sniffing, the archive reader and the spool reader of
 * every member must return records or a clean error, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "data/jsonview.h"
#include "data/spoolin.h"

enum { MAX_INPUT = 60000 };   /* written whole into a pipe before reading: within its 64 KiB */

static void records(struct sfile_reader *r)
{
	struct record rec;
	struct err e;
	while (sfile_read(r, &rec, &e) > 0) {
		struct buf line = { 0 };
		json_print_record(&line, &rec);
		buf_free(&line);
		record_free(&rec);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int p[2];
	if (size > MAX_INPUT || pipe(p) < 0)
		return 0;
	if (write(p[1], data, size) != (ssize_t)size)
		abort();
	close(p[1]);
	struct spoolin in;
	struct err e;
	if (spoolin_open(&in, p[0], "-", &e) == 0) {
		if (in.kind == SPOOLIN_STREAM) {
			struct sfile_reader r;
			if (spoolin_reader(&in, &r, &e) == 0) {
				records(&r);
				sfile_reader_close(&r);
			}
		} else {
			struct buf member = { 0 };
			const char *name;
			while (spoolin_next(&in, &member, &name, &e) > 0) {
				struct sfile_reader r;
				if (sfile_reader_open_mem(&r, member.data, member.len, name, &e) == 0) {
					records(&r);
					sfile_reader_close(&r);
				}
			}
			buf_free(&member);
		}
		spoolin_close(&in);
	}
	close(p[0]);
	return 0;
}
