/* path.c: see path.h. */
#include "base/path.h"

#include <stdio.h>

int path_join(char *out, size_t size, const char *dir, const char *name, struct err *e)
{
	int n = snprintf(out, size, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size) {
		if (size)
			out[0] = '\0';
		return err_set(e, "%.200s.../%s: path too long (%d bytes, at most %zu)", dir, name, n,
			       size ? size - 1 : 0);
	}
	return 0;
}
