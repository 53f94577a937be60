/*
 * fail-malloc.c: an LD_PRELOAD stand-in for malloc that fails, with
 * ENOMEM, every call for FAIL_MALLOC_SIZE bytes after the first
 * FAIL_MALLOC_AFTER (default 0) of that size; all others go to glibc's.
 * A size no other allocation asks for picks out the one a test means, as
 * tests/cli/collect-oom.t does. glibc only; not under ASan, which must
 * own malloc.
 */
#include <errno.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);

static size_t env_size(const char *name, size_t dflt)
{
	const char *s = getenv(name);
	return s ? (size_t)strtoull(s, NULL, 10) : dflt;
}

void *malloc(size_t n)
{
	static size_t seen;
	if (n == env_size("FAIL_MALLOC_SIZE", (size_t)-1) && seen++ >= env_size("FAIL_MALLOC_AFTER", 0)) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}
