/* libFuzzer target: arbitrary bytes as the *content* of a spool file. The
 * input is compressed into a valid zstd frame first, so the fuzzer explores
 * the header and record decoder rather than zstd's checksum. */
#include <stdint.h>
#include <stdlib.h>
#include <zstd.h>

#include "data/jsonview.h"
#include "data/sfile.h"

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
				struct buf line = { 0 };
				json_print_record(&line, &rec);
				buf_free(&line);
				record_free(&rec);
			}
			sfile_reader_close(&r);
		}
	}
	free(z);
	return 0;
}
