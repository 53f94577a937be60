/* libFuzzer target: arbitrary bytes as the *content* of a spool file. The
 * input is compressed into a valid zstd frame first, so the fuzzer explores
 * the header and record decoder rather than zstd's checksum. Every record
 * the reader accepts makes two round trips, as zstd's fuzzers do: written
 * again and read back (decode, encode, decode), and through the JSON view
 * (print, parse, print); each must give the same record, compared by its
 * JSON view. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "data/jsonview.h"
#include "data/sfile.h"

/* A failed round trip: say which, with the two JSON views when there are. */
static void fail(const char *why, const struct buf *a, const struct buf *b)
{
	fprintf(stderr, "fuzz_records: %s\n", why);
	if (a)
		fprintf(stderr, "  first:  %.*s\n", (int)a->len, a->data ? (const char *)a->data : "");
	if (b)
		fprintf(stderr, "  second: %.*s\n", (int)b->len, b->data ? (const char *)b->data : "");
	abort();
}

static int same(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* rec written into a spool file of its own and read back: its JSON view into out. */
static void through_file(const struct record *rec, struct buf *out)
{
	struct sfile_writer w;
	struct sfile_reader r;
	struct buf file = { 0 };
	struct record back;
	struct err e;
	if (sfile_writer_init(&w, sfile_sink_buf, &file, 1, &e) < 0)
		fail(e.msg, NULL, NULL);
	if (sfile_write_record(&w, rec, &e) < 0 || sfile_writer_finish(&w, &e) < 0)
		fail(e.msg, NULL, NULL);   /* the reader accepted a record the writer refuses */
	sfile_writer_free(&w);
	if (sfile_reader_open_mem(&r, file.data, file.len, "again", &e) < 0 || sfile_read(&r, &back, &e) != 1)
		fail(e.msg, NULL, NULL);   /* a record written does not read back */
	if (json_print_record(out, &back) < 0)
		fail("out of memory", NULL, NULL);
	record_free(&back);
	struct record extra;
	if (sfile_read(&r, &extra, &e) != 0)
		fail("one record written, not one read", NULL, NULL);
	sfile_reader_close(&r);
	buf_free(&file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap = ZSTD_compressBound(size);
	void *z = malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	size_t n = ZSTD_compress2(c, z, cap, data, size);
	ZSTD_freeCCtx(c);
	if (!ZSTD_isError(n)) {
		struct sfile_reader r;
		struct record rec;
		struct err e;
		if (sfile_reader_open_mem(&r, z, n, "fuzz", &e) == 0) {
			while (sfile_read(&r, &rec, &e) > 0) {
				struct buf line = { 0 }, again = { 0 }, json2 = { 0 };
				if (json_print_record(&line, &rec) < 0)
					fail("out of memory", NULL, NULL);
				through_file(&rec, &again);
				if (!same(&line, &again))
					fail("decode, encode, decode: not the same record", &line, &again);
				struct record back;
				if (json_parse_record((const char *)line.data, line.len, &back, &e) < 0)
					fail(e.msg, &line, NULL);   /* the JSON view of a valid record does not read back */
				if (json_print_record(&json2, &back) < 0 || !same(&line, &json2))
					fail("print, parse, print: not the same record", &line, &json2);
				record_free(&back);
				buf_free(&line), buf_free(&again), buf_free(&json2);
				record_free(&rec);
			}
			sfile_reader_close(&r);
		}
	}
	free(z);
	return 0;
}
