/* libFuzzer target: an input that may hold spool files or a tar archive of
 * them (any compression libarchive reads), read as grpo-cat reads it: every
 * member a clean record or a clean error, never a crash or a use of freed
 * memory, whether the archive is whole, truncated or corrupted. The corpus
 * holds archives cut at several points, one corrupted, and a consumed
 * spool's tar with its .done/ and .claimed/ records. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/sfile.h"
#include "data/spoolin.h"

static void read_all(struct sfile_reader *r)
{
	struct record rec;
	struct err e;
	while (sfile_read(r, &rec, &e) > 0)
		record_free(&rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	struct spoolin in;
	struct err e;
	if (spoolin_open(&in, fd, "fuzz", &e) == 0) {
		if (in.kind == SPOOLIN_STREAM) {
			struct sfile_reader r;
			if (spoolin_reader(&in, &r, &e) == 0) {
				read_all(&r);
				sfile_reader_close(&r);
			}
		} else {
			struct buf b = { 0 };
			const char *member;
			char label[4200];
			while (spoolin_next(&in, &b, &member, &e) > 0) {
				struct sfile_reader r;
				snprintf(label, sizeof label, "fuzz:%s", member);
				if (sfile_reader_open_mem(&r, b.data, b.len, label, &e) == 0) {
					read_all(&r);
					sfile_reader_close(&r);
				}
			}
			buf_free(&b);
		}
		spoolin_close(&in);
	}
	close(fd);
	return 0;
}
