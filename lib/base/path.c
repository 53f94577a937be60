/* path.c: see path.h. */
#include "base/path.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

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

int64_t path_step(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t at = n;
	while (at > 0 && path[at - 1] != '/')
		at--;
	const char *s = path + at;
	size_t len = n - at, digits = len > 5 ? len - 5 : 0;
	if (len < 6 || strncmp(s, "step_", 5) != 0 || digits > 15 || (digits > 1 && s[5] == '0'))
		return -1;
	int64_t k = 0;
	for (size_t i = 5; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		k = k * 10 + (s[i] - '0');
	}
	return k;
}
