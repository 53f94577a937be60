/* libFuzzer target: bytes on a pipe as grpo-collect reads an input, plain
 * text or compressed (gzip through zlib, member after member; the other
 * filters through libarchive). Lines or an error that says why, never a
 * crash; a line holds one newline at most, at its end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/lineio.h"

enum { MAX_INPUT = 60000 };   /* written whole into a pipe before reading: within its 64 KiB */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int p[2];
	if (size > MAX_INPUT || pipe(p) < 0)
		return 0;
	if (write(p[1], data, size) != (ssize_t)size)
		abort();
	close(p[1]);
	struct lineio li;
	struct err e = { 0 };
	if (lineio_open(&li, p[0], "-", &e) == 0) {
		const char *line;
		size_t n;
		int r;
		while ((r = lineio_next(&li, &line, &n, &e)) > 0)
			/* one newline, at the end of the line if anywhere */
			if (n == 0 || memchr(line, '\n', n - 1))
				abort();
		if (r < 0 && !e.msg[0])
			abort();   /* an error always says why */
		lineio_close(&li);
	}
	close(p[0]);
	return 0;
}
